//! Every configuration shipped in `config/` loads (no DNS needed: they use addresses).

mod common;

use std::path::{Path, PathBuf};

use ringfront_config::{load_with, ProxyTarget, Return, Template, TemplatePart};

fn config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn conf_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(conf_files(&path));
        } else if path.extension().is_some_and(|e| e == "conf") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The disk, with config/realistic/ standing where those configurations expect their
/// document root and included files (`/srv/realistic`, see config/realistic/README.md).
struct Realistic(common::Disk);

impl Realistic {
    fn map(path: &Path) -> PathBuf {
        match path.strip_prefix("/srv/realistic") {
            Ok(rest) => config_dir().join("realistic").join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
}

impl ringfront_config::Host for Realistic {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.0.read(&Self::map(path))
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, ringfront_config::GlobError> {
        self.0.glob(pattern)
    }

    fn resolve(&self, name: &str, port: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
        self.0.resolve(name, port)
    }

    fn file_key(&self, path: &Path) -> PathBuf {
        self.0.file_key(&Self::map(path))
    }
}

#[test]
fn every_shipped_config_loads() {
    let files = conf_files(&config_dir());
    assert!(files.len() >= 4, "{files:?}");
    let host = Realistic(common::disk());
    for file in files {
        if let Err(e) = load_with(&file, &host) {
            panic!("{} does not load: {e}", file.display());
        }
    }
}

#[test]
fn default_config_is_the_wrr_demo() {
    let cfg = load_with(&config_dir().join("ringfront.conf"), &common::disk()).unwrap();
    let demo = cfg.upstream("demo").unwrap();
    let weights: Vec<u32> = demo.servers.iter().map(|s| s.weight).collect();
    assert_eq!(weights, [4, 2, 1]);
    let server = &cfg.http.servers[0];
    assert_eq!(server.listens[0].addr.to_string(), "127.0.0.1:8080");
    let health = &server.locations[0].settings;
    let ok = Template {
        parts: vec![TemplatePart::Literal("ok\n".into())],
    };
    assert_eq!(
        health.first_return().cloned(),
        Some(Return {
            code: 200,
            text: Some(ok)
        })
    );
    let root = &server.locations[1].settings;
    assert_eq!(
        root.proxy_pass.as_ref().unwrap().target,
        ProxyTarget::Upstream("demo".into())
    );
}
