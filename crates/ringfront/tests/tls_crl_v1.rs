//! `ssl_crl` and `proxy_ssl_crl` with X.509 version 1 revocation lists (what `openssl ca
//! -gencrl` writes without `crl_extensions`, and what nginx's own suite uses) against real
//! nginx: a root, an intermediate and an end certificate made as the suite makes them, lists
//! from either CA — empty, revoking the intermediate, expired, not yet valid — and every
//! certificate of the path needing its issuer's list (OpenSSL's `CRL_CHECK_ALL`, the root
//! included). Client side: curl with the client's certificate, `$ssl_client_verify`
//! compared. Upstream side: the status and the `(CODE:TEXT)` of nginx's "upstream SSL
//! certificate verify error" line compared; the suite's upstream certificates are CA ones
//! (`CA:TRUE`), verified on OpenSSL's path within `proxy_ssl_verify_depth`, lists or not.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn openssl(dir: &Path, args: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("openssl {args}"))
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The suite's PKI (ssl_crl.t): root → int → end, all `CA:TRUE`, plus `localhost`; lists
/// `empty.crl` (root's), `int.crl` (int's), `root.crl` (root's, int revoked), expired and
/// future ones of each CA.
fn pki() -> TempDir {
    let t = TempDir::new("rf-crl-v1");
    let d = t.path();
    let w = |name: &str, text: String| std::fs::write(d.join(name), text).unwrap();
    w(
        "openssl.conf",
        "[ req ]\ndefault_bits = 2048\nencrypt_key = no\n\
         distinguished_name = req_distinguished_name\nx509_extensions = myca_extensions\n\
         [ req_distinguished_name ]\n[ myca_extensions ]\nbasicConstraints = critical,CA:TRUE\n"
            .into(),
    );
    w(
        "ca.conf",
        format!(
            "[ ca ]\ndefault_ca = myca\n[ myca ]\nnew_certs_dir = {d}\ndatabase = {d}/certindex\n\
             default_md = sha256\npolicy = myca_policy\nserial = {d}/certserial\n\
             default_days = 1\nx509_extensions = myca_extensions\n\
             [ myca_policy ]\ncommonName = supplied\n[ myca_extensions ]\n\
             basicConstraints = critical,CA:TRUE\n\
             keyUsage = critical, digitalSignature, cRLSign, keyCertSign\n",
            d = d.display()
        ),
    );
    w("certserial", "1000".into());
    w("certindex", String::new());
    for n in ["root", "localhost"] {
        openssl(
            d,
            &format!(
                "req -x509 -new -config openssl.conf -subj /CN={n}/ -out {n}.crt -keyout {n}.key"
            ),
        );
    }
    for n in ["int", "end"] {
        openssl(
            d,
            &format!("req -new -config openssl.conf -subj /CN={n}/ -out {n}.csr -keyout {n}.key"),
        );
    }
    let ca = |key: &str, rest: &str| {
        openssl(
            d,
            &format!("ca -batch -config ca.conf -keyfile {key}.key -cert {key}.crt {rest}"),
        )
    };
    ca("root", "-subj /CN=int/ -in int.csr -out int.crt");
    ca("int", "-subj /CN=end/ -in end.csr -out end.crt");
    ca("root", "-gencrl -out empty.crl -crldays 1");
    ca("int", "-gencrl -out int.crl -crldays 1");
    for key in ["root", "int"] {
        ca(key, &format!("-gencrl -out {key}-expired.crl -crl_lastupdate 20200101000000Z -crl_nextupdate 20200102000000Z"));
        ca(key, &format!("-gencrl -out {key}-future.crl -crl_lastupdate 20990101000000Z -crl_nextupdate 20990102000000Z"));
    }
    ca("root", "-revoke int.crt");
    ca("root", "-gencrl -out root.crl -crldays 1");
    let cat = |out: &str, parts: &[&str]| {
        let text: String = parts
            .iter()
            .map(|p| std::fs::read_to_string(d.join(p)).unwrap())
            .collect();
        w(out, text);
    };
    cat("empty-chain.crl", &["empty.crl", "int.crl"]);
    cat("int-root.crt", &["int.crt", "root.crt"]);
    cat("int-expired-chain.crl", &["empty.crl", "int-expired.crl"]);
    cat("int-future-chain.crl", &["empty.crl", "int-future.crl"]);
    cat("revoked-and-expired.crl", &["root.crl", "int-expired.crl"]);
    cat("root-expired-chain.crl", &["root-expired.crl", "int.crl"]);
    t
}

/// `(ca file, depth, list, client)` of each client-side server, in port order.
const CLIENT_CASES: &[(&str, u32, &str, &str)] = &[
    ("root.crt", 1, "empty.crl", "int"),
    ("root.crt", 1, "root.crl", "int"),
    ("int-root.crt", 2, "root.crl", "end"),
    ("int-root.crt", 2, "empty.crl", "end"),
    ("int-root.crt", 2, "empty-chain.crl", "end"),
    ("int-root.crt", 2, "int-expired-chain.crl", "end"),
    ("int-root.crt", 2, "int-future-chain.crl", "end"),
    ("int-root.crt", 2, "revoked-and-expired.crl", "end"),
    ("int-root.crt", 2, "root-expired-chain.crl", "end"),
];

fn client_config(dir: &Path, ports: &[u16]) -> String {
    let mut servers = String::new();
    for (&(ca, depth, crl, _), port) in CLIENT_CASES.iter().zip(ports) {
        servers += &format!(
            "    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_client_certificate {ca};
        ssl_verify_depth {depth};
        ssl_crl {crl};
        location / {{ return 200 \"ok\"; }}
    }}
"
        );
    }
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    ssl_certificate {DIR}/localhost.crt;
    ssl_certificate_key {DIR}/localhost.key;
    ssl_verify_client optional;
    add_header X-Verify $ssl_client_verify always;
{SERVERS}}
",
        &[("DIR", dir.display().to_string()), ("SERVERS", servers)],
    )
    .replace(
        " ssl_client_certificate ",
        &format!(" ssl_client_certificate {}/", dir.display()),
    )
    .replace(" ssl_crl ", &format!(" ssl_crl {}/", dir.display()))
}

/// `$ssl_client_verify` as the server at `port` judged `client`'s certificate.
fn verdict(dir: &Path, port: u16, client: &str) -> String {
    let o = Command::new("curl")
        .args(["-sS", "-k", "--max-time", "10", "--cert"])
        .arg(dir.join(format!("{client}.crt")))
        .arg("--key")
        .arg(dir.join(format!("{client}.key")))
        .args(["-o", "/dev/null", "-D", "-"])
        .arg(format!("https://127.0.0.1:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&o.stdout).into_owned();
    head.lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-")
        .trim_end()
        .to_string()
}

#[test]
fn version_1_lists_judge_client_chains_as_nginx() {
    let t = pki();
    let dir = t.path();
    let ports: Vec<u16> = CLIENT_CASES.iter().map(|_| common::port()).collect();
    let conf = client_config(dir, &ports);
    let run = |_server: Box<dyn std::any::Any>| -> Vec<String> {
        CLIENT_CASES
            .iter()
            .zip(&ports)
            .map(|(c, &port)| verdict(dir, port, c.3))
            .collect()
    };
    let n = run(Box::new(Nginx::start(&conf, ports[0])));
    let r = run(Box::new(Ringfront::start(&conf)));
    println!("nginx {n:?}\nringfront {r:?}");
    assert_eq!(r, n);
    assert_eq!(
        r,
        [
            "SUCCESS",
            "FAILED:certificate revoked",
            "FAILED:certificate revoked",
            "FAILED:unable to get certificate CRL",
            "SUCCESS",
            "FAILED:CRL has expired",
            "FAILED:CRL is not yet valid",
            "FAILED:certificate revoked",
            "FAILED:CRL has expired",
        ]
    );
}

/// `(upstream certificate, depth, trusted, list)` of each location `/N`.
const PROXY_CASES: &[(&str, u32, &str, &str)] = &[
    ("int", 1, "root.crt", "empty.crl"),
    ("int", 1, "root.crt", "root.crl"),
    ("end", 2, "int-root.crt", "root.crl"),
    ("end", 2, "int-root.crt", "empty.crl"),
    ("end", 2, "int-root.crt", "empty-chain.crl"),
    ("end", 2, "int-root.crt", "int-expired-chain.crl"),
    ("end", 0, "int-root.crt", "empty-chain.crl"),
    // Without lists: the upstream's certificate is a CA one (`CA:TRUE`), which webpki
    // takes for no server; OpenSSL verifies it on its path, within the depth.
    ("end", 2, "int-root.crt", ""),
    ("end", 0, "int-root.crt", ""),
];

fn proxy_config(dir: &Path, port: u16, int_port: u16, end_port: u16, log: &Path) -> String {
    let mut locations = String::new();
    for (i, &(cert, depth, trusted, crl)) in PROXY_CASES.iter().enumerate() {
        let up = if cert == "int" { int_port } else { end_port };
        locations += &format!(
            "        location /{i} {{
            proxy_pass https://127.0.0.1:{up}/;
            proxy_ssl_name {cert};
            proxy_ssl_verify_depth {depth};
            proxy_ssl_trusted_certificate {d}/{trusted};
            {list}
        }}
",
            d = dir.display(),
            list = match crl {
                "" => String::new(),
                f => format!("proxy_ssl_crl {}/{f};", dir.display()),
            }
        );
    }
    fill(
        "worker_processes 1;
error_log {LOG} info;
events {}
http {
    access_log off;
    proxy_ssl_verify on;
    proxy_ssl_session_reuse off;
    server {
        listen 127.0.0.1:{PORT};
{LOCATIONS}    }
    server {
        listen 127.0.0.1:{INT} ssl;
        ssl_certificate {DIR}/int.crt;
        ssl_certificate_key {DIR}/int.key;
        location / { return 200 \"upstream\"; }
    }
    server {
        listen 127.0.0.1:{END} ssl;
        ssl_certificate {DIR}/end.crt;
        ssl_certificate_key {DIR}/end.key;
        location / { return 200 \"upstream\"; }
    }
}
",
        &[
            ("LOG", log.display().to_string()),
            ("PORT", port.to_string()),
            ("INT", int_port.to_string()),
            ("END", end_port.to_string()),
            ("DIR", dir.display().to_string()),
            ("LOCATIONS", locations),
        ],
    )
}

/// The `(CODE:TEXT)` of every "upstream SSL certificate verify error" line, once `want`
/// of them are in the log (bounded wait: the log writer may lag the response).
fn verify_errors(log: &Path, want: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found: Vec<String> = text
            .lines()
            .filter_map(|l| l.split("upstream SSL certificate verify error: ").nth(1))
            .filter_map(|rest| rest.split(')').next().map(|c| format!("{c})")))
            .collect();
        if found.len() >= want || Instant::now() > end {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn proxy_run(dir: &Path, log: PathBuf, nginx: bool) -> (Vec<u16>, Vec<String>) {
    let (port, int_port, end_port) = (common::port(), common::port(), common::port());
    let conf = proxy_config(dir, port, int_port, end_port, &log);
    let _server: Box<dyn std::any::Any> = match nginx {
        true => Box::new(Nginx::start(&conf, port)),
        false => Box::new(Ringfront::start(&conf)),
    };
    let statuses: Vec<u16> = (0..PROXY_CASES.len())
        .map(|i| ringfront_testkit::http::get(("127.0.0.1", port), &format!("/{i}")).status)
        .collect();
    let failed = statuses.iter().filter(|&&s| s == 502).count();
    (statuses, verify_errors(&log, failed))
}

#[test]
fn version_1_lists_judge_upstream_chains_as_nginx() {
    let t = pki();
    let dir = t.path();
    let n = proxy_run(dir, dir.join("nginx-error.log"), true);
    let r = proxy_run(dir, dir.join("ringfront-error.log"), false);
    println!("nginx {n:?}\nringfront {r:?}");
    assert_eq!(r.0, n.0);
    assert_eq!(r.0, [200, 502, 502, 502, 200, 502, 502, 200, 502]);
    let same = [
        "(23:certificate revoked)",
        "(23:certificate revoked)",
        "(3:unable to get certificate CRL)",
        "(12:CRL has expired)",
    ];
    assert_eq!(r.1[..4], same);
    assert_eq!(n.1[..4], same);
    // A path longer than proxy_ssl_verify_depth: both refuse it; OpenSSL goes on past the
    // depth error and reports the lists' signature check on the cut path last, ringfront
    // the depth error itself (docs/configuration.md, deviations).
    assert_eq!(n.1[4], "(8:CRL signature failure)");
    assert_eq!(r.1[4], "(2:unable to get issuer certificate)");
    assert_eq!(r.1[5], n.1[5]);
    assert_eq!(r.1.len(), 6);
}
