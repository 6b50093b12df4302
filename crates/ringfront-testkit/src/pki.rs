//! A throwaway PKI for TLS tests, made with the `openssl` command an operator would use: a
//! CA, server certificates (ECDSA P-256 or RSA-2048) for given names, and client
//! certificates. Files are PEM in the given folder; paths are returned.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a certificate and its key were written.
#[derive(Debug, Clone)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Key types for [`Pki::server`] and [`Pki::client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    EcdsaP256,
    Rsa2048,
}

pub struct Pki {
    dir: PathBuf,
    name: String,
    pub ca: CertFiles,
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn new_key(path: &Path, key: Key) {
    let p = path.to_str().unwrap();
    match key {
        Key::EcdsaP256 => openssl(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            p,
        ]),
        Key::Rsa2048 => openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            p,
        ]),
    }
}

impl Pki {
    /// A new CA named `name` (its files `NAME-ca.pem`, `NAME-ca.key` in `dir`).
    pub fn new(dir: &Path, name: &str) -> Pki {
        let ca = CertFiles {
            cert: dir.join(format!("{name}-ca.pem")),
            key: dir.join(format!("{name}-ca.key")),
        };
        new_key(&ca.key, Key::EcdsaP256);
        openssl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            ca.key.to_str().unwrap(),
            "-days",
            "30",
            "-subj",
            &format!("/CN={name} test CA"),
            "-out",
            ca.cert.to_str().unwrap(),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        Pki {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            ca,
        }
    }

    fn issue(&self, file: &str, key: Key, subject: &str, ext: &str) -> CertFiles {
        let files = CertFiles {
            cert: self.dir.join(format!("{}-{file}.pem", self.name)),
            key: self.dir.join(format!("{}-{file}.key", self.name)),
        };
        new_key(&files.key, key);
        let csr = self.dir.join(format!("{}-{file}.csr", self.name));
        let extfile = self.dir.join(format!("{}-{file}.ext", self.name));
        std::fs::write(&extfile, ext).unwrap();
        openssl(&[
            "req",
            "-new",
            "-key",
            files.key.to_str().unwrap(),
            "-subj",
            subject,
            "-out",
            csr.to_str().unwrap(),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            csr.to_str().unwrap(),
            "-CA",
            self.ca.cert.to_str().unwrap(),
            "-CAkey",
            self.ca.key.to_str().unwrap(),
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            extfile.to_str().unwrap(),
            "-out",
            files.cert.to_str().unwrap(),
        ]);
        files
    }

    /// A server certificate for `names` (DNS names; `127.0.0.1` becomes an IP entry). The
    /// file is called `NAME-FILE.pem`.
    pub fn server(&self, file: &str, key: Key, names: &[&str]) -> CertFiles {
        let san: Vec<String> = names
            .iter()
            .map(|n| match n.parse::<std::net::IpAddr>() {
                Ok(_) => format!("IP:{n}"),
                Err(_) => format!("DNS:{n}"),
            })
            .collect();
        let ext = format!(
            "subjectAltName={}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
            san.join(",")
        );
        self.issue(file, key, &format!("/CN={}", names[0]), &ext)
    }

    /// A version 2 revocation list signed by the CA (`NAME-FILE.crl`), revoking
    /// `revoked`, made with `openssl ca` as a CA operator would.
    pub fn crl(&self, file: &str, revoked: &[&CertFiles]) -> PathBuf {
        let db = self.dir.join(format!("{}-{file}.index", self.name));
        let number = self.dir.join(format!("{}-{file}.crlnumber", self.name));
        let conf = self.dir.join(format!("{}-{file}.ca.conf", self.name));
        std::fs::write(&db, "").unwrap();
        std::fs::write(&number, "1000\n").unwrap();
        let text = format!(
            "[ca]\ndefault_ca = ca\n[ca]\ndatabase = {}\ncrlnumber = {}\n\
             default_md = sha256\ndefault_crl_days = 7\ncrl_extensions = ext\n\
             [ext]\nauthorityKeyIdentifier = keyid:always\n",
            db.display(),
            number.display()
        );
        std::fs::write(&conf, text).unwrap();
        let ca = |extra: &[&str]| {
            let mut args = vec![
                "ca",
                "-config",
                conf.to_str().unwrap(),
                "-keyfile",
                self.ca.key.to_str().unwrap(),
                "-cert",
                self.ca.cert.to_str().unwrap(),
            ];
            args.extend_from_slice(extra);
            openssl(&args);
        };
        for r in revoked {
            ca(&["-revoke", r.cert.to_str().unwrap()]);
        }
        let out = self.dir.join(format!("{}-{file}.crl", self.name));
        ca(&["-gencrl", "-out", out.to_str().unwrap()]);
        out
    }

    /// A client certificate with common name `cn`.
    pub fn client(&self, file: &str, cn: &str) -> CertFiles {
        self.client_subject(file, &format!("/CN={cn}"))
    }

    /// A client certificate with the whole `subject` (`openssl -subj` form:
    /// `/C=US/O=Org+OU=Unit/CN=name`).
    pub fn client_subject(&self, file: &str, subject: &str) -> CertFiles {
        let ext = "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n";
        self.issue(file, Key::EcdsaP256, subject, ext)
    }
}
