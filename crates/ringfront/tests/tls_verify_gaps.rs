//! Differential, against real nginx: what `ssl_verify_client` servers put in the
//! CertificateRequest (the CA names of `ssl_client_certificate` only, each once; none of
//! `ssl_trusted_certificate`), and nginx's 421 for a request whose `Host` differs from the
//! SNI name and selects a server that verifies clients. The client is `openssl s_client`,
//! which prints the CA names it was sent and the HTTP answer.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::fill;
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn openssl(args: &[&str]) {
    let ok = Command::new("openssl")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs")
        .success();
    assert!(ok, "openssl {args:?}");
}

/// A self-signed certificate `NAME.crt` / `NAME.key` with CN `name`.
fn self_signed(dir: &Path, name: &str) {
    let p = |ext: &str| dir.join(format!("{name}.{ext}")).display().to_string();
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "2",
        "-subj",
        &format!("/CN={name}"),
        "-out",
        &p("crt"),
        "-keyout",
        &p("key"),
    ]);
}

const CONFIG: &str = "worker_processes 1;
events {}
http {
    access_log off;
    add_header X-Verify $ssl_client_verify always;
    ssl_certificate {D}/1.example.com.crt;
    ssl_certificate_key {D}/1.example.com.key;
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name on;
        ssl_verify_client on;
        ssl_client_certificate {D}/2.example.com.crt;
        location / { return 200 \"on\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name optional;
        ssl_verify_client optional;
        ssl_client_certificate {D}/2.example.com.crt;
        ssl_trusted_certificate {D}/3.example.com.crt;
        location / { return 200 \"optional\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name dup;
        ssl_verify_client optional;
        ssl_client_certificate {D}/dup.crt;
        location / { return 200 \"dup\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name noca;
        ssl_verify_client optional_no_ca;
        ssl_client_certificate {D}/both.crt;
        ssl_trusted_certificate {D}/3.example.com.crt;
        location / { return 200 \"noca\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name off;
        ssl_client_certificate {D}/2.example.com.crt;
        location / { return 200 \"off\"; }
    }
}
";

/// (SNI, Host, client certificate).
const CASES: &[(&str, &str, Option<&str>)] = &[
    ("optional", "optional", Some("3.example.com")),
    ("optional", "optional", None),
    ("dup", "dup", None),
    ("noca", "noca", Some("1.example.com")),
    ("on", "on", Some("2.example.com")),
    ("off", "off", None),
    // Misdirected: the Host's server (or the default, `on`) verifies clients.
    ("optional", "localhost", None),
    ("on", "localhost", None),
    ("off", "optional", Some("2.example.com")),
    ("optional", "dup", Some("2.example.com")),
    // Not misdirected: the Host's server does not verify, or the names are the same.
    ("optional", "off", None),
    ("optional", "OPTIONAL.", None),
];

/// The CA names sent, the status line, `X-Verify` and the body of one exchange.
fn exchange(dir: &Path, port: u16, (sni, host, cert): (&str, &str, Option<&str>)) -> String {
    let mut cmd = Command::new("openssl");
    cmd.args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", sni, "-ign_eof"]);
    if let Some(c) = cert {
        cmd.arg("-cert").arg(dir.join(format!("{c}.crt")));
        cmd.arg("-key").arg(dir.join(format!("{c}.key")));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("s_client runs");
    let req = format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("s_client ends");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let mut names = Vec::new();
    if lines.any(|l| l.starts_with("Acceptable client certificate CA names")) {
        names = lines
            .by_ref()
            .take_while(|l| l.starts_with("CN"))
            .map(str::to_string)
            .collect();
    }
    // The answer may follow other output on the same line.
    let answer = text.find("HTTP/1.1 ").map_or("", |i| &text[i..]);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let status = head.lines().next().unwrap_or("-");
    let verify = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-");
    // Other output (session tickets) may follow the body.
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let body = body.get(..length).unwrap_or(body);
    let body = body.lines().next().unwrap_or("");
    format!("{names:?} {status} {verify} {body}")
}

fn run_all(dir: &Path, conf: impl Fn(u16) -> String, nginx: bool) -> Vec<String> {
    let port = common::port();
    let text = conf(port);
    let _n = nginx.then(|| Nginx::start(&text, port));
    let _r = (!nginx).then(|| Ringfront::start(&text));
    CASES.iter().map(|c| exchange(dir, port, *c)).collect()
}

#[test]
fn client_ca_names_and_misdirected_requests_match_nginx() {
    let tmp = TempDir::new("rf-verify-gaps");
    let d = tmp.path();
    for n in ["1.example.com", "2.example.com", "3.example.com"] {
        self_signed(d, n);
    }
    let two = std::fs::read_to_string(d.join("2.example.com.crt")).unwrap();
    let three = std::fs::read_to_string(d.join("3.example.com.crt")).unwrap();
    std::fs::write(d.join("dup.crt"), two.repeat(2)).unwrap();
    std::fs::write(d.join("both.crt"), format!("{two}{three}{two}")).unwrap();
    let conf = |port: u16| {
        fill(
            CONFIG,
            &[("PORT", port.to_string()), ("D", d.display().to_string())],
        )
    };
    let nginx = run_all(d, conf, true);
    let ours = run_all(d, conf, false);
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        println!("{:?}\n  nginx:     {n}\n  ringfront: {r}", CASES[i]);
    }
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(r, n, "{:?}", CASES[i]);
    }
    // What the cases are for, on nginx's own answers.
    let two_only = "[\"CN = 2.example.com\"]";
    assert!(nginx[0].starts_with(two_only), "{}", nginx[0]);
    assert!(nginx[0].contains("200 OK SUCCESS"), "{}", nginx[0]);
    assert!(nginx[2].starts_with(two_only), "{}", nginx[2]);
    assert!(
        nginx[3].starts_with("[\"CN = 2.example.com\", \"CN = 3.example.com\"]"),
        "{}",
        nginx[3]
    );
    for n in &nginx[6..10] {
        assert!(n.contains("421 Misdirected Request"), "{n}");
    }
    assert!(nginx[10].ends_with("off"), "{}", nginx[10]);
    assert!(nginx[11].ends_with("optional"), "{}", nginx[11]);
}

const BACKENDS: &str = "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{V1} ssl;
        ssl_certificate {D}/v1.crt;
        ssl_certificate_key {D}/v1.key;
        location / { return 200 \"v1\"; }
    }
    server {
        listen 127.0.0.1:{V3} ssl;
        ssl_certificate {D}/v3.crt;
        ssl_certificate_key {D}/v3.key;
        location / { return 200 \"v3\"; }
    }
}
";

const FRONT: &str = "worker_processes 1;
events {}
http {
    access_log off;
    proxy_ssl_verify on;
    # nginx resumes a session a location with other settings verified (same peer).
    proxy_ssl_session_reuse off;
    server {
        listen 127.0.0.1:{PORT};
        location /v1/ok { proxy_pass https://127.0.0.1:{V1}; proxy_ssl_name 2.example.com; proxy_ssl_trusted_certificate {D}/v1.crt; }
        location /v1/case { proxy_pass https://127.0.0.1:{V1}; proxy_ssl_name 2.EXAMPLE.com; proxy_ssl_trusted_certificate {D}/v1.crt; }
        location /v1/fail { proxy_pass https://127.0.0.1:{V1}; proxy_ssl_name bad.example.com; proxy_ssl_trusted_certificate {D}/v1.crt; }
        location /v1/untrusted { proxy_pass https://127.0.0.1:{V1}; proxy_ssl_name 2.example.com; proxy_ssl_trusted_certificate {D}/ca.crt; }
        location /v3/ok { proxy_pass https://127.0.0.1:{V3}; proxy_ssl_name a.wild.test; proxy_ssl_trusted_certificate {D}/ca.crt; }
        location /v3/deep { proxy_pass https://127.0.0.1:{V3}; proxy_ssl_name a.b.wild.test; proxy_ssl_trusted_certificate {D}/ca.crt; }
        location /v3/fail { proxy_pass https://127.0.0.1:{V3}; proxy_ssl_name wild.test; proxy_ssl_trusted_certificate {D}/ca.crt; }
        location /v3/untrusted { proxy_pass https://127.0.0.1:{V3}; proxy_ssl_name a.wild.test; proxy_ssl_trusted_certificate {D}/v1.crt; }
    }
}
";

const PATHS: &[&str] = &[
    "/v1/ok",
    "/v1/case",
    "/v1/fail",
    "/v1/untrusted",
    "/v3/ok",
    "/v3/deep",
    "/v3/fail",
    "/v3/untrusted",
];

fn status_of(port: u16, path: &str) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let req = format!("GET {path} HTTP/1.0\r\nHost: front\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.lines().next().unwrap_or("-").to_string();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    match status.contains("200") {
        true => format!("{status} {body}"),
        false => status,
    }
}

/// Upstream certificates nginx verifies by commonName (no subjectAltName): an X.509 v1
/// self-signed one that is its own trusted certificate, and a v3 one a CA issued for
/// `*.wild.test`; wrong names and untrusted issuers are 502.
#[test]
fn upstream_common_names_verify_as_nginx() {
    let tmp = TempDir::new("rf-verify-cn");
    let d = tmp.path();
    let p = |f: &str| d.join(f).display().to_string();
    // `openssl req -x509` with a config naming no extensions writes a version 1 certificate.
    std::fs::write(
        d.join("v1.conf"),
        "[ req ]\nprompt = no\nencrypt_key = no\ndistinguished_name = dn\n[ dn ]\ncommonName=2.example.com\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-newkey",
        "rsa:2048",
        "-config",
        &p("v1.conf"),
        "-days",
        "2",
        "-out",
        &p("v1.crt"),
        "-keyout",
        &p("v1.key"),
    ]);
    self_signed(d, "ca");
    openssl(&[
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-subj",
        "/CN=*.wild.test",
        "-out",
        &p("v3.csr"),
        "-keyout",
        &p("v3.key"),
    ]);
    std::fs::write(d.join("v3.ext"), "basicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &p("v3.csr"),
        "-CA",
        &p("ca.crt"),
        "-CAkey",
        &p("ca.key"),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &p("v3.ext"),
        "-out",
        &p("v3.crt"),
    ]);
    let (v1, v3) = (common::port(), common::port());
    let vars = |port: u16| {
        vec![
            ("PORT", port.to_string()),
            ("V1", v1.to_string()),
            ("V3", v3.to_string()),
            ("D", d.display().to_string()),
        ]
    };
    let _backends = Nginx::start(&fill(BACKENDS, &vars(0)), v1);
    let np = common::port();
    let nginx: Vec<String> = {
        let _n = Nginx::start(&fill(FRONT, &vars(np)), np);
        PATHS.iter().map(|path| status_of(np, path)).collect()
    };
    let rp = common::port();
    let ours: Vec<String> = {
        let _r = Ringfront::start(&fill(FRONT, &vars(rp)));
        PATHS.iter().map(|path| status_of(rp, path)).collect()
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        println!("{}: nginx {n:?} ringfront {r:?}", PATHS[i]);
    }
    assert_eq!(ours, nginx);
    assert_eq!(nginx[0], "HTTP/1.1 200 OK v1");
    assert_eq!(nginx[4], "HTTP/1.1 200 OK v3");
    for i in [2, 3, 5, 6, 7] {
        assert_eq!(nginx[i], "HTTP/1.1 502 Bad Gateway", "{}", PATHS[i]);
    }
}

const DEPTH: &str = "worker_processes 1;
events {}
http {
    access_log off;
    ssl_certificate {D}/srv.crt;
    ssl_certificate_key {D}/srv.key;
    ssl_verify_client optional;
    add_header X-Verify $ssl_client_verify always;
    server { listen 127.0.0.1:{P0} ssl; ssl_verify_depth 0; ssl_client_certificate {D}/root-int.crt; location / { return 200; } }
    server { listen 127.0.0.1:{P1} ssl; ssl_verify_depth 1; ssl_client_certificate {D}/root-int.crt; location / { return 200; } }
    server { listen 127.0.0.1:{P2} ssl; ssl_verify_depth 2; ssl_client_certificate {D}/root-int.crt; location / { return 200; } }
    server { listen 127.0.0.1:{R0} ssl; ssl_verify_depth 0; ssl_client_certificate {D}/root.crt; location / { return 200; } }
    server { listen 127.0.0.1:{R1} ssl; ssl_verify_depth 1; ssl_client_certificate {D}/root.crt; location / { return 200; } }
    server { listen 127.0.0.1:{R2} ssl; ssl_verify_depth 2; ssl_client_certificate {D}/root.crt; location / { return 200; } }
}
";

/// `$ssl_client_verify` for a client sending the certificates of `files` (leaf first).
fn depth_verdict(dir: &Path, port: u16, cert: &str) -> String {
    let o = Command::new("curl")
        .args(["-sSk", "--max-time", "10", "-o", "/dev/null", "-D", "-"])
        .arg("--cert")
        .arg(dir.join(format!("{cert}.chain")))
        .arg("--key")
        .arg(dir.join(format!("{cert}.key")))
        .arg(format!("https://127.0.0.1:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&o.stdout).into_owned();
    let verdict = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-");
    if verdict == "-" {
        eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    }
    format!("{cert}: {}", verdict.trim_end())
}

/// `ssl_verify_depth` counted as OpenSSL counts it: the CAs between the client's
/// certificate and the self-signed root, trusted or sent; client certificates that are CA
/// certificates themselves (as in nginx's own tests) verify as OpenSSL verifies them.
#[test]
fn verify_depth_counts_as_openssl() {
    let tmp = TempDir::new("rf-verify-depth");
    let d = tmp.path();
    let p = |f: &str| d.join(f).display().to_string();
    self_signed(d, "srv");
    std::fs::write(
        d.join("ca.ext"),
        "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n",
    )
    .unwrap();
    std::fs::write(
        d.join("leaf.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=root",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-out",
        &p("root.crt"),
        "-keyout",
        &p("root.key"),
    ]);
    let issue = |name: &str, by: &str, ext: &str| {
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-out",
            &p(&format!("{name}.csr")),
            "-keyout",
            &p(&format!("{name}.key")),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &p(&format!("{name}.csr")),
            "-CA",
            &p(&format!("{by}.crt")),
            "-CAkey",
            &p(&format!("{by}.key")),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &p(ext),
            "-out",
            &p(&format!("{name}.crt")),
        ]);
    };
    issue("int", "root", "ca.ext");
    issue("end", "int", "ca.ext");
    issue("leaf", "int", "leaf.ext");
    issue("leaf2", "root", "leaf.ext");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    std::fs::write(d.join("root-int.crt"), read("root.crt") + &read("int.crt")).unwrap();
    for (name, chain) in [
        ("root", vec!["root"]),
        ("int", vec!["int"]),
        ("end", vec!["end"]),
        ("leaf", vec!["leaf"]),
        ("leaf2", vec!["leaf2"]),
        ("endint", vec!["end", "int"]),
        ("leafint", vec!["leaf", "int"]),
    ] {
        let text: String = chain.iter().map(|c| read(&format!("{c}.crt"))).collect();
        std::fs::write(d.join(format!("{name}.chain")), text).unwrap();
        if name != chain[0] {
            let key = format!("{}.key", chain[0]);
            std::fs::copy(d.join(&key), d.join(format!("{name}.key"))).unwrap();
        }
    }
    let clients = ["root", "int", "end", "leaf", "leaf2", "endint", "leafint"];
    let ports: Vec<u16> = (0..6).map(|_| common::port()).collect();
    let conf = |ports: &[u16]| {
        let mut v = vec![("D", d.display().to_string())];
        for (k, port) in ["P0", "P1", "P2", "R0", "R1", "R2"].iter().zip(ports) {
            v.push((k, port.to_string()));
        }
        fill(DEPTH, &v)
    };
    let all = |ports: &[u16]| -> Vec<String> {
        ports
            .iter()
            .enumerate()
            .flat_map(|(i, &port)| {
                clients
                    .iter()
                    .map(move |c| format!("{i} {}", depth_verdict(d, port, c)))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let nginx = {
        let _n = Nginx::start(&conf(&ports), ports[0]);
        all(&ports)
    };
    let ours_ports: Vec<u16> = (0..6).map(|_| common::port()).collect();
    let ours = {
        let _r = Ringfront::start(&conf(&ours_ports));
        all(&ours_ports)
    };
    for (n, r) in nginx.iter().zip(&ours) {
        println!("nginx {n:60} ringfront {r}");
    }
    assert_eq!(ours, nginx);
}
