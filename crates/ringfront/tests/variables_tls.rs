//! Differential: the TLS variables against real nginx 1.22 — `$ssl_client_s_dn`,
//! `$ssl_client_i_dn` (RFC 2253, escapes and a multi-valued RDN included) and their
//! `_legacy` forms, `$ssl_client_serial`, `$ssl_client_fingerprint`, `$ssl_client_v_start`,
//! `$ssl_client_v_end`, `$ssl_client_v_remain`, the three PEM forms, `$ssl_client_verify`
//! (a CA-signed certificate, an X.509 v1 self-signed one, none), `$ssl_curve`,
//! `$ssl_curves` and `$ssl_ciphers` of curl's ClientHello. Same configuration, same
//! certificates, same curl commands; the answers must agree.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fill, port};
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Nginx, Ringfront, TempDir};

const CONFIG: &str = r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    ssl_protocols TLSv1.2 TLSv1.3;
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name a.test;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        ssl_verify_client optional_no_ca;
        ssl_client_certificate {CA};
        location / {
            return 200 "s=$ssl_client_s_dn
i=$ssl_client_i_dn
sl=$ssl_client_s_dn_legacy
il=$ssl_client_i_dn_legacy
serial=$ssl_client_serial
fp=$ssl_client_fingerprint
start=$ssl_client_v_start
end=$ssl_client_v_end
verify=$ssl_client_verify
curve=$ssl_curve
curves=$ssl_curves
ciphers=$ssl_ciphers
";
        }
        location /remain { return 200 "$ssl_client_v_remain"; }
        location /raw { return 200 "$ssl_client_raw_cert"; }
        location /escaped { return 200 "$ssl_client_escaped_cert"; }
        location /tabbed { add_header X-Cert $ssl_client_cert; return 204; }
    }
}
"#;

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// curl's answer (head included with `-i`) for `https://a.test:PORT/PATH`.
fn curl(ca: &Path, port: u16, path: &str, cert: Option<(&Path, &Path)>) -> String {
    let mut c = Command::new("curl");
    c.args(["-sS", "-i", "--max-time", "10", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("a.test:{port}:127.0.0.1"));
    if let Some((crt, key)) = cert {
        c.arg("--cert").arg(crt).arg("--key").arg(key);
    }
    let o = c
        .arg(format!("https://a.test:{port}{path}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    // Only what the variables make: the body, or the X-Cert field.
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_default();
    match head.find("X-Cert: ") {
        Some(i) => head[i..].to_string(),
        None => body.to_string(),
    }
}

/// An X.509 v1 self-signed certificate, as `openssl req -x509` makes without extensions.
fn v1_cert(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let conf = dir.join("v1.cnf");
    std::fs::write(
        &conf,
        "[ req ]\ndefault_bits = 2048\nencrypt_key = no\ndistinguished_name = dn\n[ dn ]\n",
    )
    .unwrap();
    let (crt, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let o = Command::new("openssl")
        .args(["req", "-x509", "-new", "-config"])
        .arg(&conf)
        .args(["-subj", &format!("/CN={name} self/O=x\\/y")])
        .arg("-out")
        .arg(&crt)
        .arg("-keyout")
        .arg(&key)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (crt, key)
}

#[test]
fn tls_variables_match_nginx() {
    let dir = TempDir::new("rf-vars-tls");
    let pki = Pki::new(dir.path(), "vars");
    let server = pki.server("a", Key::EcdsaP256, &["a.test"]);
    let client = pki.client_subject(
        "c",
        "/C=US/ST=Some, State/O=Org+OU=Unit/CN=Client \"Q\" <x>; é/emailAddress=a@b.test",
    );
    let v1 = v1_cert(dir.path(), "v1");
    // A self-signed certificate that is in the CA file verifies, as in OpenSSL.
    let trusted = v1_cert(dir.path(), "trusted");
    let bundle = dir.path().join("bundle.pem");
    let mut cas = std::fs::read(&pki.ca.cert).unwrap();
    cas.extend(std::fs::read(&trusted.0).unwrap());
    std::fs::write(&bundle, cas).unwrap();
    let config = |port: u16| {
        fill(
            CONFIG,
            &[
                ("PORT", port.to_string()),
                ("CERT", p(&server.cert)),
                ("KEY", p(&server.key)),
                ("CA", p(&bundle)),
            ],
        )
    };
    let ask = |port: u16| {
        let ca = &pki.ca.cert;
        let signed = Some((client.cert.as_path(), client.key.as_path()));
        let selfsigned = Some((v1.0.as_path(), v1.1.as_path()));
        let in_store = Some((trusted.0.as_path(), trusted.1.as_path()));
        let mut got = Vec::new();
        for cert in [signed, selfsigned, None, in_store] {
            for path in ["/", "/raw", "/escaped", "/tabbed"] {
                got.push(curl(ca, port, path, cert));
            }
            let days = curl(ca, port, "/remain", cert);
            assert!(["29", "30", ""].contains(&days.as_str()), "{days}");
        }
        got
    };
    let np = port();
    let nginx = {
        let _n = Nginx::start(&config(np), np);
        ask(np)
    };
    let rp = port();
    let ours = {
        let _r = Ringfront::start(&config(rp));
        ask(rp)
    };
    for (n, r) in nginx.iter().zip(&ours) {
        assert_eq!(r, n);
    }
    // The cases say what they should.
    assert!(nginx[0].contains("s=emailAddress=a@b.test,CN=Client \\\"Q\\\" \\<x\\>\\; \\C3\\83\\C2\\A9,OU=Unit+O=Org,ST=Some\\, State,C=US\n"), "{}", nginx[0]);
    assert!(nginx[0].contains("verify=SUCCESS\n"), "{}", nginx[0]);
    assert!(
        nginx[1].starts_with("-----BEGIN CERTIFICATE-----\n"),
        "{}",
        nginx[1]
    );
    assert!(
        nginx[4].contains("verify=FAILED:self-signed certificate\n"),
        "{}",
        nginx[4]
    );
    assert!(
        nginx[4].contains("sl=/CN=v1 self/O=x\\/y\n"),
        "{}",
        nginx[4]
    );
    assert!(
        nginx[8].contains("s=\n") && nginx[8].contains("verify=NONE\n"),
        "{}",
        nginx[8]
    );
    assert!(nginx[12].contains("verify=SUCCESS\n"), "{}", nginx[12]);
}
