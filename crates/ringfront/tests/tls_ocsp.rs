//! OCSP stapling against real nginx, as nginx's ssl_stapling.t sets it up: a root, an
//! intermediate whose certificates name an OCSP responder (AIA), an RSA leaf that is
//! revoked and an ECDSA leaf that is not; responses made with `openssl ocsp` and a real
//! responder (`openssl ocsp -port`). The client is `openssl s_client -status`. Asserted
//! for both servers: `ssl_stapling_file` staples the file as it is (revoked or good); from
//! the responder, a good status is stapled (after the first handshake asked for it), a
//! revoked one never is, and with `ssl_stapling_verify on` a response signed by a root
//! the issuer did not delegate to is not either; `ssl_stapling on` with no responder URL
//! is nginx's warning at load. `ssl_ocsp`: a good client certificate is `SUCCESS`, a
//! revoked one `FAILED:certificate revoked` (400), a responder that does not answer
//! `FAILED:certificate status request failed`; `ssl_ocsp_cache` and the load-time checks.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn sh(dir: &Path, cmd: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} >>openssl.out 2>&1"))
        .current_dir(dir)
        .status()
        .expect("sh runs")
        .success();
    assert!(ok, "{cmd} failed (see {}/openssl.out)", dir.display());
}

struct Pki {
    dir: TempDir,
    ocsp_port: u16,
}

impl Pki {
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// ssl_stapling.t's certificates and responses: `end` (RSA) revoked, `ec-end` good, both
/// issued by `int` under `root`; responses signed by `root` (`resp.der`, `ec-resp.der`).
fn pki() -> Pki {
    let dir = TempDir::new("rf-ocsp");
    let d = dir.path().to_path_buf();
    let ocsp_port = common::port();
    std::fs::write(
        d.join("openssl.conf"),
        "[ req ]\ndefault_bits = 2048\nencrypt_key = no\ndistinguished_name = dn\n\
         x509_extensions = ext\n[ dn ]\n[ ext ]\nbasicConstraints = critical,CA:TRUE\n",
    )
    .unwrap();
    let ca = format!(
        "[ ca ]\ndefault_ca = myca\n[ myca ]\nnew_certs_dir = {d}\ndatabase = {d}/certindex\n\
         default_md = sha256\npolicy = pol\nserial = {d}/certserial\ndefault_days = 1\n\
         x509_extensions = ext\n[ pol ]\ncommonName = supplied\n[ ext ]\n\
         basicConstraints = critical,CA:TRUE\n\
         authorityInfoAccess = OCSP;URI:http://127.0.0.1:{ocsp_port}\n",
        d = d.display()
    );
    std::fs::write(d.join("ca.conf"), ca).unwrap();
    std::fs::write(d.join("certserial"), "1000").unwrap();
    std::fs::write(d.join("certindex"), "").unwrap();
    sh(&d, "openssl req -x509 -new -config openssl.conf -subj /CN=root/ -out root.crt -keyout root.key");
    for n in ["int", "end"] {
        sh(
            &d,
            &format!(
                "openssl req -new -config openssl.conf -subj /CN={n}/ -out {n}.csr -keyout {n}.key"
            ),
        );
    }
    sh(
        &d,
        "openssl ecparam -genkey -out ec-end.key -name prime256v1",
    );
    sh(
        &d,
        "openssl req -new -key ec-end.key -config openssl.conf -subj /CN=ec-end/ -out ec-end.csr",
    );
    sh(&d, "openssl ca -batch -config ca.conf -keyfile root.key -cert root.crt -subj /CN=int/ -in int.csr -out int.crt");
    for n in ["end", "ec-end"] {
        sh(&d, &format!("openssl ca -batch -config ca.conf -keyfile int.key -cert int.crt -subj /CN={n}/ -in {n}.csr -out {n}.crt"));
    }
    sh(
        &d,
        "openssl ca -config ca.conf -revoke end.crt -keyfile root.key -cert root.crt",
    );
    for (req, cert) in [("req", "end"), ("ec-req", "ec-end")] {
        sh(
            &d,
            &format!("openssl ocsp -issuer int.crt -cert {cert}.crt -reqout {req}.der"),
        );
        let resp = req.replace("req", "resp");
        sh(&d, &format!("openssl ocsp -index certindex -CA int.crt -rsigner root.crt -rkey root.key -reqin {req}.der -respout {resp}.der -ndays 1"));
    }
    for n in ["end", "ec-end"] {
        let chain =
            [format!("{n}.crt"), "int.crt".into()].map(|f| std::fs::read(d.join(f)).unwrap());
        std::fs::write(d.join(format!("{n}-int.crt")), chain.concat()).unwrap();
    }
    sh(&d, "openssl req -x509 -new -config openssl.conf -subj /CN=plain/ -out plain.crt -keyout plain.key");
    Pki { dir, ocsp_port }
}

/// `openssl ocsp` answering for `int`, signed by `signer`, until dropped.
struct Responder(Child);

impl Responder {
    fn start(pki: &Pki, signer: &str) -> Responder {
        let mut child = Command::new("openssl")
            .args([
                "ocsp",
                "-index",
                "certindex",
                "-CA",
                "int.crt",
                "-ndays",
                "1",
            ])
            .args([
                "-rsigner",
                &format!("{signer}.crt"),
                "-rkey",
                &format!("{signer}.key"),
            ])
            .args(["-port", &pki.ocsp_port.to_string()])
            .current_dir(pki.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl ocsp runs");
        // It prints `ACCEPT ...` once listening (a probe connection would end it: it
        // exits when a connection closes without a request).
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("responder output");
        assert!(line.starts_with("ACCEPT"), "responder: {line}");
        Responder(child)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What `s_client -status` saw: `none`, or the response status and the cert status.
fn staple(port: u16) -> String {
    let o = Command::new("openssl")
        .args(["s_client", "-status", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .output()
        .expect("s_client runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    match field("OCSP Response Status:") {
        None => "none".into(),
        Some(s) => format!("{s} {}", field("Cert Status:").unwrap_or_default()),
    }
}

/// The staple of `port` once the server had time to fetch one: handshakes until one is
/// stapled, for at most `limit` (each handshake is what prompts the fetch).
fn staple_after_fetch(port: u16, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let s = staple(port);
        if s != "none" || start.elapsed() > limit {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server(port: u16, cert: &str, key: &str, extra: &str) -> String {
    fill(
        "    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        {EXTRA}
        location / { return 200 ok; }
    }
",
        &[
            ("PORT", port.to_string()),
            ("CERT", cert.into()),
            ("KEY", key.into()),
            ("EXTRA", extra.into()),
        ],
    )
}

fn config(servers: &[String]) -> String {
    format!(
        "worker_processes 1;\nevents {{}}\nhttp {{\n    access_log off;\n    ssl_stapling on;\n{}}}\n",
        servers.concat()
    )
}

/// The same configuration under nginx and ringfront: what each port staples.
fn both(
    conf: impl Fn(&[u16]) -> String,
    n: usize,
    look: impl Fn(u16) -> String,
) -> [Vec<String>; 2] {
    let ports: Vec<u16> = (0..n).map(|_| common::port()).collect();
    let nginx = {
        let _n = Nginx::start(&conf(&ports), ports[0]);
        ports.iter().map(|&p| look(p)).collect()
    };
    let ports: Vec<u16> = (0..n).map(|_| common::port()).collect();
    let rf = {
        let _r = Ringfront::start(&conf(&ports));
        ports.iter().map(|&p| look(p)).collect()
    };
    [nginx, rf]
}

#[test]
fn stapling_files_are_sent_as_they_are() {
    let k = pki();
    let conf = |p: &[u16]| {
        config(&[
            server(
                p[0],
                &k.path("end-int.crt"),
                &k.path("end.key"),
                &format!("ssl_stapling_file {};", k.path("resp.der")),
            ),
            server(
                p[1],
                &k.path("ec-end-int.crt"),
                &k.path("ec-end.key"),
                &format!("ssl_stapling_file {};", k.path("ec-resp.der")),
            ),
        ])
    };
    let [n, r] = both(conf, 2, staple);
    println!("nginx {n:?} ringfront {r:?}");
    assert_eq!(r, n);
    assert_eq!(r, ["successful (0x0) revoked", "successful (0x0) good"]);
}

#[test]
fn responses_from_the_responder_are_stapled_when_good() {
    let k = pki();
    let _responder = Responder::start(&k, "root");
    let conf = |p: &[u16]| {
        config(&[
            server(p[0], &k.path("ec-end-int.crt"), &k.path("ec-end.key"), ""),
            server(p[1], &k.path("end-int.crt"), &k.path("end.key"), ""),
            server(
                p[2],
                &k.path("ec-end-int.crt"),
                &k.path("ec-end.key"),
                &format!(
                    "ssl_stapling_verify on; ssl_trusted_certificate {};",
                    k.path("int.crt")
                ),
            ),
            // the issuer from the trusted certificates, not the chain
            server(
                p[3],
                &k.path("ec-end.crt"),
                &k.path("ec-end.key"),
                &format!("ssl_trusted_certificate {};", k.path("int.crt")),
            ),
        ])
    };
    let look = |p: u16| staple_after_fetch(p, Duration::from_secs(2));
    let [n, r] = both(conf, 4, look);
    println!("nginx {n:?} ringfront {r:?}");
    assert_eq!(r, n);
    assert_eq!(
        r,
        [
            "successful (0x0) good",
            "none",
            "none",
            "successful (0x0) good"
        ]
    );
}

#[test]
fn a_delegated_signer_passes_verification() {
    let k = pki();
    // `int` signs for itself: the issuer's own signature.
    let _responder = Responder::start(&k, "int");
    let conf = |p: &[u16]| {
        config(&[server(
            p[0],
            &k.path("ec-end-int.crt"),
            &k.path("ec-end.key"),
            &format!(
                "ssl_stapling_verify on; ssl_trusted_certificate {};",
                k.path("int.crt")
            ),
        )])
    };
    let look = |p: u16| staple_after_fetch(p, Duration::from_secs(5));
    let [n, r] = both(conf, 1, look);
    assert_eq!(r, n);
    assert_eq!(r, ["successful (0x0) good"]);
}

#[test]
fn stapling_without_an_issuer_or_a_responder_url_is_a_warning() {
    let k = pki();
    let plain = k.path("plain.crt");
    let trusted = format!("ssl_trusted_certificate {plain};");
    let cases = [
        (
            k.path("ec-end.crt"),
            k.path("ec-end.key"),
            "",
            format!(
                "issuer certificate not found for certificate \"{}\"",
                k.path("ec-end.crt")
            ),
        ),
        (
            plain.clone(),
            k.path("plain.key"),
            trusted.as_str(),
            format!("no OCSP responder URL in the certificate \"{plain}\""),
        ),
    ];
    for (cert, key, extra, why) in cases {
        let conf = config(&[server(common::port(), &cert, &key, extra)]);
        let (ns, n) = Nginx::run_check(&conf);
        let (rs, r) = Ringfront::run_check(&conf);
        let line = format!("\"ssl_stapling\" ignored, {why}");
        assert!(ns.success() && rs.success(), "nginx {n} ringfront {r}");
        let warned = |out: &str| {
            out.lines()
                .any(|l| l.contains("[warn]") && l.ends_with(&line))
        };
        assert!(warned(&n), "nginx: {n}");
        assert!(warned(&r), "ringfront: {r}");
    }
}

#[test]
fn a_stapling_file_that_is_not_a_response_is_refused() {
    let k = pki();
    let bad: PathBuf = k.dir.path().join("bad.der");
    std::fs::write(&bad, b"not DER").unwrap();
    let conf = config(&[server(
        common::port(),
        &k.path("ec-end-int.crt"),
        &k.path("ec-end.key"),
        &format!("ssl_stapling_file {};", bad.display()),
    )]);
    let (ns, n) = Nginx::run_check(&conf);
    let (rs, r) = Ringfront::run_check(&conf);
    let want = format!("d2i_OCSP_RESPONSE_bio(\"{}\") failed", bad.display());
    assert!(!ns.success() && !rs.success());
    assert!(n.contains(&want), "nginx: {n}");
    assert!(r.contains(&want), "ringfront: {r}");
}

/// `ssl_ocsp`: the status and `$ssl_client_verify` of a request made with `client`'s
/// certificate (and its chain) to a server that asks `responder` about it.
fn client_verdict(k: &Pki, port: u16, client: &str) -> String {
    let o = Command::new("curl")
        .args(["-sSk", "--max-time", "10", "--cert"])
        .arg(k.path(&format!("{client}-int.crt")))
        .arg("--key")
        .arg(k.path(&format!("{client}.key")))
        .args(["-o", "/dev/null", "-D", "-"])
        .arg(format!("https://127.0.0.1:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&o.stdout).into_owned();
    let status = head.split_whitespace().nth(1).unwrap_or("-").to_string();
    let verdict = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-")
        .trim_end();
    format!("{status} {verdict}")
}

fn ocsp_server(k: &Pki, port: u16, ocsp: &str) -> String {
    fill(
        "    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        ssl_verify_client on;
        ssl_verify_depth 2;
        ssl_client_certificate {CA};
        {OCSP}
        add_header X-Verify $ssl_client_verify always;
        location / { return 200 ok; }
    }
",
        &[
            ("PORT", port.to_string()),
            ("CERT", k.path("plain.crt")),
            ("KEY", k.path("plain.key")),
            ("CA", k.path("trusted.crt")),
            ("OCSP", ocsp.into()),
        ],
    )
}

#[test]
fn client_certificates_are_asked_about_as_nginx() {
    let k = pki();
    let chain = ["int.crt", "root.crt"].map(|f| std::fs::read(k.dir.path().join(f)).unwrap());
    std::fs::write(k.dir.path().join("trusted.crt"), chain.concat()).unwrap();
    let _responder = Responder::start(&k, "int");
    let dead = common::port();
    let conf = |p: &[u16]| {
        let servers = [
            ocsp_server(&k, p[0], "ssl_ocsp leaf;"),
            ocsp_server(
                &k,
                p[1],
                &format!("ssl_ocsp leaf; ssl_ocsp_responder http://127.0.0.1:{dead};"),
            ),
            // `on` asks about `int` too, which this responder (for `int`'s certificates) cannot answer well
            ocsp_server(&k, p[2], "ssl_ocsp on;"),
            ocsp_server(&k, p[3], "ssl_ocsp leaf; ssl_ocsp_cache shared:OCSP:1m;"),
        ];
        format!(
            "worker_processes 1;\nevents {{}}\nhttp {{\n    access_log off;\n{}}}\n",
            servers.concat()
        )
    };
    let look = |p: u16| {
        format!(
            "{} / {}",
            client_verdict(&k, p, "ec-end"),
            client_verdict(&k, p, "end")
        )
    };
    let [n, r] = both(conf, 4, look);
    println!("nginx {n:?} ringfront {r:?}");
    assert_eq!(r, n);
    assert_eq!(r[0], "200 SUCCESS / 400 FAILED:certificate revoked");
    assert_eq!(
        r[1],
        "400 FAILED:certificate status request failed / 400 FAILED:certificate status request failed"
    );
    assert!(r[2].starts_with("400 FAILED:"), "{}", r[2]);
    assert_eq!(r[3], r[0]);
}

#[test]
fn ssl_ocsp_settings_are_checked_as_nginx() {
    let k = pki();
    let cases = [
        (
            "ssl_ocsp leaf; ssl_verify_client optional_no_ca;",
            "\"ssl_ocsp\" is incompatible with \"ssl_verify_client optional_no_ca\"",
        ),
        (
            "ssl_ocsp_cache shared:X;",
            "invalid OCSP cache \"shared:X\"",
        ),
        (
            "ssl_ocsp_cache shared:X:1k;",
            "OCSP cache \"shared:X:1k\" is too small",
        ),
        ("ssl_ocsp_cache builtin;", "invalid OCSP cache \"builtin\""),
        ("ssl_ocsp maybe;", "invalid value \"maybe\""),
    ];
    for (extra, want) in cases {
        let conf = format!(
            "events {{}}\nhttp {{\n{}}}\n",
            server(
                common::port(),
                &k.path("plain.crt"),
                &k.path("plain.key"),
                &format!("ssl_client_certificate {}; {extra}", k.path("int.crt"))
            )
        );
        let (ns, n) = Nginx::run_check(&conf);
        let (rs, r) = Ringfront::run_check(&conf);
        assert!(
            !ns.success() && !rs.success(),
            "{extra}: nginx {n} ringfront {r}"
        );
        assert!(n.contains(want), "nginx: {n}");
        assert!(r.contains(want), "ringfront: {r}");
    }
}
