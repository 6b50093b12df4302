//! `-T`: the configuration as nginx dumps it — every file read while loading (the main file
//! first, then each include once, in the order read), each as `# configuration file PATH:`,
//! its text, and an empty line.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use ringfront_config::{GlobError, Host, OsHost};

/// The machine's files, remembering every one read.
#[derive(Default)]
pub struct Recording {
    files: RefCell<Vec<(PathBuf, Vec<u8>)>>,
}

impl Host for Recording {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let text = OsHost.read(path)?;
        let mut files = self.files.borrow_mut();
        if !files.iter().any(|(p, _)| p == path) {
            files.push((path.to_path_buf(), text.clone()));
        }
        Ok(text)
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        OsHost.glob(pattern)
    }

    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        OsHost.resolve(name, port)
    }

    fn file_key(&self, path: &Path) -> PathBuf {
        OsHost.file_key(path)
    }
}

impl Recording {
    /// nginx's dump of the files read so far.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, text) in self.files.borrow().iter() {
            out.extend_from_slice(format!("# configuration file {}:\n", path.display()).as_bytes());
            out.extend_from_slice(text);
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_each_file_once_in_order() {
        let dir = std::env::temp_dir().join(format!("ringfront-dump-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.conf"), dir.join("b.conf"));
        std::fs::write(&a, "events {}\n").unwrap();
        std::fs::write(&b, "# b\n").unwrap();
        let r = Recording::default();
        for p in [&a, &b, &a] {
            r.read(p).unwrap();
        }
        assert!(r.read(&dir.join("missing")).is_err());
        let text = String::from_utf8(r.dump()).unwrap();
        let want = format!(
            "# configuration file {}:\nevents {{}}\n\n# configuration file {}:\n# b\n\n",
            a.display(),
            b.display()
        );
        assert_eq!(text, want);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
