//! `listen unix:PATH`: the one listening socket of each path, bound by the engine (at start
//! and before a reload is published) and shared by every worker.
//!
//! `SO_REUSEPORT` does not spread connections over unix-domain sockets, so each worker
//! accepts on its own descriptor (`dup`) of the same socket: the kernel gives each
//! connection to one of the accepts waiting on it. That costs nothing per connection (no
//! hand-off between workers, no lock), at the price of no balancing between the workers
//! beyond the kernel's.
//!
//! As nginx: the socket file is created with mode 0666 (`chmod` after `bind`), kept as long
//! as a configuration listens on it (a reload that keeps the path keeps the socket, and the
//! connections queued on it), removed when a reload drops the path and when the engine
//! stops. A stale file (a socket nobody listens on, left by a killed process) is removed
//! before the bind; one somebody listens on is refused with nginx's
//! `bind() to unix:PATH failed (98: Address already in use)`.

use std::io;
use std::net::SocketAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::snapshot::{ListenRt, Snapshot};

/// The unix-domain listening sockets of the engine. Locked only at start, reload and stop.
#[derive(Debug, Default)]
pub struct UnixSockets {
    bound: Mutex<Vec<Bound>>,
}

#[derive(Debug)]
struct Bound {
    key: SocketAddr,
    path: PathBuf,
    listener: UnixListener,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl UnixSockets {
    /// Binds the unix paths of `snap` not bound yet, then closes and removes those `snap`
    /// no longer has. All or nothing: on an error the sockets bound by this call go again.
    pub fn sync(&self, snap: &Snapshot) -> io::Result<()> {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let mut fresh = Vec::new();
        for l in &snap.listens {
            let Some(path) = &l.unix else { continue };
            if bound.iter().chain(&fresh).any(|b: &Bound| b.key == l.addr) {
                continue;
            }
            fresh.push(Bound {
                key: l.addr,
                path: path.clone(),
                listener: bind(l, path)?,
            });
        }
        bound.retain(|b| snap.listens.iter().any(|l| l.addr == b.key));
        bound.extend(fresh);
        Ok(())
    }

    /// A worker's own descriptor of the socket keyed `key`.
    pub fn listener(&self, key: SocketAddr) -> io::Result<UnixListener> {
        let bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let b = bound
            .iter()
            .find(|b| b.key == key)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unix listener not bound"))?;
        b.listener.try_clone()
    }

    /// Closes every socket and removes its file (the engine stops).
    pub fn close_all(&self) {
        self.bound.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Binds `path` with the listen's backlog and buffer sizes, mode 0666 as nginx.
fn bind(l: &ListenRt, path: &Path) -> io::Result<UnixListener> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let name = format!("unix:{}", path.display());
    let failed = |e: io::Error| crate::listen::bind_failed(&name, &e);
    remove_stale(path);
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    if let Some(n) = l.options.rcvbuf {
        sock.set_recv_buffer_size(usize::try_from(n).unwrap_or(usize::MAX))?;
    }
    if let Some(n) = l.options.sndbuf {
        sock.set_send_buffer_size(usize::try_from(n).unwrap_or(usize::MAX))?;
    }
    sock.bind(&SockAddr::unix(path)?).map_err(failed)?;
    sock.listen(l.backlog).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(sock.into())
}

/// Removes `path` when it is a socket nobody accepts on (a connect is refused).
fn remove_stale(path: &Path) {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    if !is_socket {
        return;
    }
    if let Err(e) = UnixStream::connect(path) {
        if e.kind() == io::ErrorKind::ConnectionRefused {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(path: &Path) -> ListenRt {
        ListenRt {
            addr: ringfront_config::unix_addr::listen_key(path),
            ssl: false,
            proxy_protocol: false,
            backlog: 16,
            options: Default::default(),
            unix: Some(path.into()),
        }
    }

    fn path(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rf-unix-listen-{}-{tag}.sock", std::process::id()))
    }

    /// A stale file goes; a live socket is refused in nginx's words; mode 0666; the file
    /// leaves with the socket.
    #[test]
    fn binds_over_stale_files_only() {
        use std::os::unix::fs::PermissionsExt;
        let p = path("stale");
        drop(UnixListener::bind(&p).unwrap());
        let l = rt(&p);
        let b = Bound {
            key: l.addr,
            path: p.clone(),
            listener: bind(&l, &p).unwrap(),
        };
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        let err = bind(&l, &p).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "bind() to unix:{} failed (98: Address already in use)",
                p.display()
            )
        );
        assert!(UnixStream::connect(&p).is_ok(), "the live socket was kept");
        drop(b);
        assert!(!p.exists());
    }
}
