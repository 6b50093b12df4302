//! `auth_basic`, `auth_basic_user_file`, `satisfy` and `auth_delay` against real nginx on
//! the same configuration, with curl's `-u`: a password file made here with `openssl
//! passwd` (`-apr1`, `-1`, `-5`, `-6`), `{PLAIN}`, `{SHA}`, `{SSHA}`, fixed bcrypt, yescrypt
//! and DES lines, a broken one and a comment; right
//! and wrong passwords, unknown users, no credentials, a malformed field, a missing file,
//! `auth_basic off`, a realm with variables, `satisfy any|all` with allow/deny, an
//! `error_page 401`, and a delayed 401. Status, `WWW-Authenticate`, body, and the error
//! log lines of both.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::fill;

fn config(p: u16, dir: &Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    root {DIR}/www;
    add_header X-User "u=$remote_user" always;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        auth_basic "Zone $host";
        auth_basic_user_file {DIR}/htpasswd;

        location / {
        }
        location /open/ {
            auth_basic off;
        }
        location /var/ {
            auth_basic $arg_realm;
            auth_basic_user_file {DIR}/$arg_file;
        }
        location /missing/ {
            auth_basic_user_file {DIR}/nosuch;
        }
        location /any/ {
            satisfy any;
            allow 127.0.0.2;
            deny all;
        }
        location /any-allowed/ {
            satisfy any;
            allow 127.0.0.1;
            deny all;
        }
        # No folder for it: the access phase answers before the index module's 404.
        location /any-missing/ {
            satisfy any;
            deny all;
            auth_basic_user_file {DIR}/nosuch;
        }
        location /all-denied/ {
            deny all;
        }
        location /err/ {
            error_page 401 /page;
        }
        location = /page {
            auth_basic off;
            return 200 "page\n";
        }
        location /lmt/ {
            auth_basic off;
            limit_except GET {
                auth_basic "Writers";
                auth_basic_user_file {DIR}/other;
            }
        }
        location /delay/ {
            auth_delay 400ms;
        }
    }
}
"#,
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

fn openssl_passwd(flag: &str, pass: &str) -> String {
    let out = Command::new("openssl")
        .args(["passwd", flag, pass])
        .output()
        .expect("openssl passwd");
    assert!(out.status.success(), "openssl passwd {flag}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `{SHA}` of "sha-pw" (base64 of its SHA-1, as `htpasswd -s` writes it).
const SHA_LINE: &str = "sha:{SHA}O/MvdjOwOQpt8I9HBSVZugThPMw=";

fn password_file(dir: &Path) {
    let lines = [
        "# comment:{PLAIN}x".to_string(),
        format!("apr:{}", openssl_passwd("-apr1", "apr-pw")),
        format!("md5:{}", openssl_passwd("-1", "md5-pw")),
        format!("s256:{}", openssl_passwd("-5", "s256-pw")),
        format!("s512:{}:trailing comment", openssl_passwd("-6", "s512-pw")),
        "plain:{PLAIN}plain-pw".to_string(),
        SHA_LINE.to_string(),
        // crypt(3) formats openssl does not write (made with libxcrypt, fixed salts).
        "bc:$2y$05$abcdefghijklmnopqrstuuXX16jnBFt0mBFOhVlILzTkdRDIrdO/K".to_string(),
        "ye:$y$j9T$abcdefghijklmnop$4fzNaJZk1hg9ahChuYyiVmqSu5yc9o2mC7HHyZ/q2KB".to_string(),
        "des:abHmYwzWPQJxg".to_string(),
        "broken:!!x".to_string(),
        // `{SSHA}` of "ssha-pw" with the salt "NaCl".
        "ssha:{SSHA}YTXWgydU2KqN5tqyS03GDvPxBFxOYUNs".to_string(),
        String::new(),
    ];
    std::fs::write(dir.join("htpasswd"), lines.join("\n")).unwrap();
    std::fs::write(dir.join("other"), "o:{PLAIN}o-pw\r\n").unwrap();
    for name in [
        "",
        "open",
        "var",
        "missing",
        "any",
        "any-allowed",
        "all-denied",
        "err",
        "lmt",
        "delay",
    ] {
        let folder = dir.join("www").join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("index.html"), format!("index {name}\n")).unwrap();
    }
}

/// curl's answer: status, `WWW-Authenticate`, body.
fn curl(port: u16, path: &str, user: Option<&str>, extra: &[&str]) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", "--max-time", "10", "-H", "Host: localhost"]);
    if let Some(u) = user {
        cmd.args(["-u", u]);
    }
    cmd.args(extra)
        .arg(format!("http://127.0.0.1:{port}{path}"));
    let out = cmd.output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    let www: Vec<&str> = head
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("www-authenticate:") || l.starts_with("x-user:")
        })
        .collect();
    // An error page's title (its signature names the server).
    let body = match body.split_once("<title>") {
        Some((_, t)) => t.split("</title>").next().unwrap_or(t),
        None => body.trim_end(),
    };
    format!("{status} {www:?} {body}")
}

const CASES: &[(&str, Option<&str>)] = &[
    ("/", Some("apr:apr-pw")),
    ("/", Some("apr:wrong")),
    ("/", Some("md5:md5-pw")),
    ("/", Some("md5:md5-px")),
    ("/", Some("s256:s256-pw")),
    ("/", Some("s512:s512-pw")),
    ("/", Some("s512:s512")),
    ("/", Some("plain:plain-pw")),
    ("/", Some("plain:plain")),
    ("/", Some("sha:sha-pw")),
    ("/", Some("sha:sha-px")),
    ("/", Some("bc:bc-pw")),
    ("/", Some("bc:bc-px")),
    ("/", Some("ye:ye-pw")),
    ("/", Some("ye:ye-px")),
    ("/", Some("des:des-pw")),
    ("/", Some("des:des-px")),
    ("/", Some("broken:x")),
    ("/", Some("ssha:ssha-pw")),
    ("/", Some("ssha:ssha-px")),
    ("/", Some("nobody:x")),
    ("/", Some("ap:apr-pw")),
    ("/", Some("# comment:{PLAIN}x")),
    ("/", None),
    ("/open/", None),
    ("/var/?realm=R1&file=other", Some("o:o-pw")),
    ("/var/?realm=R1&file=other", Some("o:bad")),
    ("/var/?realm=off&file=other", None),
    ("/var/?realm=R2&file=htpasswd", None),
    ("/missing/", Some("apr:apr-pw")),
    ("/missing/", None),
    ("/any/", None),
    ("/any/", Some("plain:plain-pw")),
    ("/any/", Some("plain:x")),
    ("/any-allowed/", None),
    ("/all-denied/", Some("plain:plain-pw")),
    ("/any-missing/", Some("plain:plain-pw")),
    ("/any-missing/", None),
    ("/err/", None),
    ("/err/", Some("plain:plain-pw")),
];

fn answers(port: u16) -> Vec<String> {
    let mut out: Vec<String> = CASES
        .iter()
        .map(|(path, user)| format!("{path} {user:?} -> {}", curl(port, path, *user, &[])))
        .collect();
    // `limit_except`: only other methods than GET (and HEAD) need credentials.
    for (user, args) in [
        (None, &["-X", "GET"][..]),
        (None, &["-X", "PUT", "-d", "x"][..]),
        (Some("o:o-pw"), &["-X", "PUT", "-d", "x"][..]),
    ] {
        let answer = curl(port, "/lmt/", user, args);
        out.push(format!("/lmt/ {user:?} {args:?} -> {answer}"));
    }
    // A field that is not Basic credentials, and one without a colon.
    for value in ["Bearer abc", "Basic cGxhaW4=", "Basic !!"] {
        let h = format!("Authorization: {value}");
        out.push(format!("{value} -> {}", curl(port, "/", None, &["-H", &h])));
    }
    out
}

#[test]
fn auth_basic_matches_nginx() {
    let dir = std::env::temp_dir().join(format!("ringfront-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    password_file(&dir);
    let (n, r, np, rp) = common::nginx_and_ringfront(|p| config(p, &dir));
    let nginx = answers(np);
    let ours = answers(rp);
    common::assert_same("auth_basic", &nginx, &ours);
    let has = |want: &str| nginx.iter().any(|a| a.contains(want));
    for want in [
        "/ Some(\"s512:s512-pw\") -> HTTP/1.1 200 OK [\"X-User: u=s512\"] index",
        "/ Some(\"sha:sha-pw\") -> HTTP/1.1 200 OK [\"X-User: u=sha\"] index",
        "/ Some(\"bc:bc-pw\") -> HTTP/1.1 200 OK [\"X-User: u=bc\"] index",
        "/ Some(\"ye:ye-pw\") -> HTTP/1.1 200 OK [\"X-User: u=ye\"] index",
        "/ Some(\"des:des-pw\") -> HTTP/1.1 200 OK [\"X-User: u=des\"] index",
        "/ Some(\"ssha:ssha-pw\") -> HTTP/1.1 200 OK [\"X-User: u=ssha\"] index",
        "/any-missing/ Some(\"plain:plain-pw\") -> HTTP/1.1 403 Forbidden",
        "/any-missing/ None -> HTTP/1.1 401 Unauthorized",
        "/lmt/ None [\"-X\", \"PUT\", \"-d\", \"x\"] -> HTTP/1.1 401 Unauthorized [\"WWW-Authenticate: Basic realm=\\\"Writers\\\"\"",
        "/lmt/ None [\"-X\", \"GET\"] -> HTTP/1.1 200 OK",
        "/ None -> HTTP/1.1 401 Unauthorized [\"WWW-Authenticate: Basic realm=\\\"Zone localhost\\\"\", \"X-User: u=\"]",
        "realm=off&file=other None -> HTTP/1.1 200 OK",
        "/missing/ Some(\"apr:apr-pw\") -> HTTP/1.1 403 Forbidden",
        "/any/ Some(\"plain:plain-pw\") -> HTTP/1.1 200 OK [\"X-User: u=plain\"] index any",
        "/any-allowed/ None -> HTTP/1.1 200 OK",
        "/err/ None -> HTTP/1.1 401 Unauthorized [\"WWW-Authenticate: Basic realm=\\\"Zone localhost\\\"\", \"X-User: u=\"] page",
    ] {
        assert!(has(want), "{want}: {nginx:#?}");
    }
    let second = Duration::from_secs(5);
    let missing = format!(
        "open() \"{}/nosuch\" failed (2: No such file or directory)",
        dir.display()
    );
    for line in [
        "user \"apr\": password mismatch",
        &format!(
            "user \"nobody\" was not found in \"{}/htpasswd\"",
            dir.display()
        ),
        &missing,
        "access forbidden by rule",
    ] {
        assert!(r.wait_for_stderr(line, second), "ringfront: {line}");
        let logged = n.error_log_contents().contains(line)
            || n.stderr_lines().iter().any(|l| l.contains(line));
        assert!(logged, "nginx: {line}");
    }
    drop((n, r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn auth_delay_holds_the_401_back() {
    let dir = std::env::temp_dir().join(format!("ringfront-auth-delay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    password_file(&dir);
    let (n, r, np, rp) = common::nginx_and_ringfront(|p| config(p, &dir));
    for (name, port) in [("nginx", np), ("ringfront", rp)] {
        let t = Instant::now();
        let bad = curl(port, "/delay/", Some("plain:x"), &[]);
        let waited = t.elapsed();
        assert!(bad.starts_with("HTTP/1.1 401"), "{name}: {bad}");
        assert!(waited >= Duration::from_millis(400), "{name}: {waited:?}");
        let t = Instant::now();
        let good = curl(port, "/delay/", Some("plain:plain-pw"), &[]);
        assert!(good.ends_with("index delay"), "{name}: {good}");
        assert!(
            t.elapsed() < Duration::from_millis(400),
            "{name}: a pass is not delayed"
        );
    }
    drop((n, r));
    let _ = std::fs::remove_dir_all(&dir);
}
