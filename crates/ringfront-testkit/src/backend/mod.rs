//! A programmable HTTP/1.1 backend: the PHP test server of article 000 (`?sleep=`, `?code=`)
//! plus the failure modes of articles 001/002 (refused port, a server that accepts but never
//! answers while it warms its cache, early close, garbage, reset). One thread per connection;
//! keepalive and pipelining (answered in order) are supported.

mod serve;

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use serve::body_pattern;

use crate::wire::BufStream;

/// How the backend treats the next request (or connection). Changed at any time with
/// [`Backend::set_mode`]; a connection applies the mode current when a request head arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answer normally (query parameters `sleep`, `code`, `size`, `chunked`, `close`, `echo`).
    Ok,
    /// The port is closed: connects get ECONNREFUSED and open connections are shut down.
    Refuse,
    /// Accept and read requests but never answer; connections stay open until the mode
    /// changes (then they are closed unanswered) or the backend stops.
    Hang,
    /// Read the request, then close without answering.
    Close,
    /// Read the request, answer `HELLO\r\n\r\n` (not HTTP), then close. Note: nginx 1.22
    /// does not count this as `invalid_header`: it logs "upstream sent no valid HTTP/1.0
    /// header" and relays the bytes to the client as an HTTP/0.9 response (status 200).
    Garbage,
    /// Read the request, answer a status line followed by a header whose name contains a
    /// space (`Bad Header: x`), then close: what nginx rejects as "upstream sent invalid
    /// header" (`invalid_header`, 502).
    InvalidHeader,
    /// Read the request, then close with `SO_LINGER` 0 so the peer gets a TCP RST.
    Reset,
    /// Read the request and hold the answer while the mode stays `Hold`; then answer as
    /// the new mode says. A connection the proxy closes meanwhile is counted
    /// ([`Backend::wait_closed`]): the backend's own view of an abandoned request.
    Hold,
}

/// A fixed answer for one path, set with [`Backend::set_route`] (e.g. a `/health` endpoint
/// whose status, headers or body a test flips at run time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canned {
    pub status: u16,
    /// Sent after `Server` and `X-Backend`, before `Content-Length`.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Canned {
    /// `status` with a `text/plain` body and no extra headers.
    pub fn status(status: u16, body: &str) -> Canned {
        Canned {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// One request as the backend received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    /// `HTTP/1.1` or `HTTP/1.0` as sent.
    pub version: String,
    pub headers: Vec<(String, String)>,
    /// The decoded body (de-chunked); partial if the client closed mid-body.
    pub body: Vec<u8>,
    /// The head exactly as received, blank line included.
    pub raw_head: Vec<u8>,
}

impl Recorded {
    /// First value of a header, name case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::wire::find_header(&self.headers, name)
    }
}

/// A running backend on 127.0.0.1; stopped on drop.
pub struct Backend {
    shared: Arc<Shared>,
    accept_thread: Option<JoinHandle<()>>,
}

struct Shared {
    port: u16,
    state: Mutex<State>,
    cond: Condvar,
}

struct State {
    mode: Mode,
    stopped: bool,
    listener: Option<Arc<TcpListener>>,
    hits: usize,
    accepted: usize,
    /// Connections closed by the peer while an answer was held.
    closed: usize,
    requests: Vec<Recorded>,
    conns: HashMap<u64, TcpStream>,
    /// Canned answers by path (the target without its query), for Ok mode.
    routes: HashMap<String, Canned>,
    next_conn: u64,
    threads: Vec<JoinHandle<()>>,
}

impl Backend {
    /// Starts a backend on a kernel-chosen port; returns once it is listening.
    pub fn start() -> Backend {
        Backend::serve(crate::net::fresh_listener())
    }

    /// Starts a backend on `port`; panics when the port cannot be bound.
    pub fn start_on(port: u16) -> Backend {
        Backend::bind(port)
    }

    fn bind(port: u16) -> Backend {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("backend: cannot bind 127.0.0.1:{port}: {e}"));
        Backend::serve(listener)
    }

    fn serve(listener: TcpListener) -> Backend {
        let port = listener.local_addr().expect("local_addr").port();
        let shared = Arc::new(Shared {
            port,
            state: Mutex::new(State {
                mode: Mode::Ok,
                stopped: false,
                listener: Some(Arc::new(listener)),
                hits: 0,
                accepted: 0,
                closed: 0,
                requests: Vec::new(),
                conns: HashMap::new(),
                routes: HashMap::new(),
                next_conn: 0,
                threads: Vec::new(),
            }),
            cond: Condvar::new(),
        });
        let accept_shared = Arc::clone(&shared);
        let accept_thread = thread::Builder::new()
            .name(format!("backend-{port}-accept"))
            .spawn(move || accept_loop(&accept_shared))
            .expect("spawn accept thread");
        Backend {
            shared,
            accept_thread: Some(accept_thread),
        }
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.shared.port))
    }

    /// Request heads received (in every mode, Hang included) since start or the last reset.
    pub fn hits(&self) -> usize {
        self.shared.lock().hits
    }

    /// Connections accepted since start or the last reset (keepalive reuse shows here).
    pub fn accepted(&self) -> usize {
        self.shared.lock().accepted
    }

    /// Resets `hits`, `accepted` and the request log.
    pub fn reset_hits(&self) {
        let mut st = self.shared.lock();
        st.hits = 0;
        st.accepted = 0;
        st.requests.clear();
    }

    /// Blocks until `hits() >= n` or `timeout` passes; returns whether it got there.
    pub fn wait_hits(&self, n: usize, timeout: Duration) -> bool {
        let st = self.shared.lock();
        let (st, _) = self
            .shared
            .cond
            .wait_timeout_while(st, timeout, |st| st.hits < n)
            .expect("backend state poisoned");
        st.hits >= n
    }

    /// Blocks until `n` connections were closed by the peer while their answer was held
    /// (`Mode::Hold`) or `timeout` passes; returns whether it got there.
    pub fn wait_closed(&self, n: usize, timeout: Duration) -> bool {
        let st = self.shared.lock();
        let (st, _) = self
            .shared
            .cond
            .wait_timeout_while(st, timeout, |st| st.closed < n)
            .expect("backend state poisoned");
        st.closed >= n
    }

    /// Connections closed by the peer while their answer was held (`Mode::Hold`).
    pub fn closed(&self) -> usize {
        self.shared.lock().closed
    }

    /// Every request received since start or the last reset, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    pub fn mode(&self) -> Mode {
        self.shared.lock().mode
    }

    /// Switches mode. Returns once it is in effect: after `Refuse` connects are refused,
    /// after leaving `Refuse` the same port listens again.
    pub fn set_mode(&self, mode: Mode) {
        let mut st = self.shared.lock();
        if st.stopped || st.mode == mode {
            return;
        }
        let was_refusing = st.mode == Mode::Refuse;
        st.mode = mode;
        if mode == Mode::Refuse {
            if let Some(listener) = st.listener.take() {
                stop_listening(&listener);
            }
            for conn in st.conns.values() {
                let _ = conn.shutdown(Shutdown::Both);
            }
        } else if was_refusing {
            let port = self.shared.port;
            let listener = TcpListener::bind(("127.0.0.1", port))
                .unwrap_or_else(|e| panic!("backend: cannot re-bind 127.0.0.1:{port}: {e}"));
            st.listener = Some(Arc::new(listener));
        }
        drop(st);
        self.shared.cond.notify_all();
    }

    /// From now on, Ok-mode requests whose path (target without the query) is `path` get
    /// `answer` instead of the usual one; replaces an earlier answer for that path.
    pub fn set_route(&self, path: &str, answer: Canned) {
        self.shared.lock().routes.insert(path.to_string(), answer);
    }

    /// Drops the canned answer for `path`: its requests get the usual answer again.
    pub fn clear_route(&self, path: &str) {
        self.shared.lock().routes.remove(path);
    }

    /// Stops listening, closes every connection and joins all threads. Idempotent.
    pub fn stop(&mut self) {
        let threads = {
            let mut st = self.shared.lock();
            st.stopped = true;
            if let Some(listener) = st.listener.take() {
                stop_listening(&listener);
            }
            for conn in st.conns.values() {
                let _ = conn.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut st.threads)
        };
        self.shared.cond.notify_all();
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
        for t in threads {
            let _ = t.join();
        }
        // Connections accepted between the sweep above and the accept thread's exit.
        let late = std::mem::take(&mut self.shared.lock().threads);
        for t in late {
            let _ = t.join();
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Stops a listening socket from another thread. On Linux `shutdown` on a listener takes it
/// out of LISTEN (pending connections are reset, new ones refused) and wakes a blocked
/// `accept` with EINVAL, so the accept thread needs no self-connect trick.
fn stop_listening(listener: &TcpListener) {
    let _ = socket2::SockRef::from(listener).shutdown(Shutdown::Both);
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("backend state poisoned")
    }

    fn port(&self) -> u16 {
        self.port
    }

    fn mode(&self) -> Mode {
        self.lock().mode
    }

    fn route(&self, target: &str) -> Option<Canned> {
        let path = target.split('?').next().unwrap_or(target);
        self.lock().routes.get(path).cloned()
    }

    fn count_hit(&self) {
        self.lock().hits += 1;
        self.cond.notify_all();
    }

    fn record(&self, req: Recorded) {
        self.lock().requests.push(req);
    }

    /// Sleeps `d` unless the backend stops first (then returns false).
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut st = self.lock();
        while !st.stopped {
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            st = self
                .cond
                .wait_timeout(st, deadline - now)
                .expect("backend state poisoned")
                .0;
        }
        false
    }

    /// Blocks while the mode is still `Hang` and the backend runs.
    fn hang(&self) {
        let st = self.lock();
        let _st = self
            .cond
            .wait_while(st, |st| st.mode == Mode::Hang && !st.stopped)
            .expect("backend state poisoned");
    }

    fn stopped(&self) -> bool {
        self.lock().stopped
    }

    fn count_closed(&self) {
        self.lock().closed += 1;
        self.cond.notify_all();
    }

    fn unregister(&self, id: u64) {
        self.lock().conns.remove(&id);
    }
}

fn accept_loop(shared: &Arc<Shared>) {
    loop {
        let listener = {
            let st = shared.lock();
            let st = shared
                .cond
                .wait_while(st, |st| !st.stopped && st.listener.is_none())
                .expect("backend state poisoned");
            match &st.listener {
                Some(l) if !st.stopped => Arc::clone(l),
                _ => return,
            }
        };
        match listener.accept() {
            Ok((stream, _)) => {
                drop(listener);
                spawn_conn(shared, stream);
            }
            Err(e) => {
                let still_current = {
                    let st = shared.lock();
                    if st.stopped {
                        return;
                    }
                    st.listener
                        .as_ref()
                        .is_some_and(|l| Arc::ptr_eq(l, &listener))
                };
                // A transient error (ECONNABORTED, EMFILE) on a listener still in use: back
                // off briefly instead of spinning. A listener taken away by Refuse is not.
                if still_current && e.kind() != io::ErrorKind::Interrupted {
                    thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
}

fn spawn_conn(shared: &Arc<Shared>, stream: TcpStream) {
    let mut st = shared.lock();
    if st.stopped || st.mode == Mode::Refuse {
        return; // accepted in the instant before the listener went away
    }
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let id = st.next_conn;
    st.next_conn += 1;
    st.accepted += 1;
    st.conns.insert(id, clone);
    st.threads.retain(|t| !t.is_finished());
    let conn_shared = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name(format!("backend-{}-conn", shared.port))
        .spawn(move || {
            let mut conn = BufStream::new(stream);
            serve::serve(&conn_shared, &mut conn);
            // Drop our registry clone before the stream itself closes, so a Reset's
            // SO_LINGER 0 takes effect on the last close.
            conn_shared.unregister(id);
            drop(conn);
        });
    match spawned {
        Ok(handle) => st.threads.push(handle),
        Err(_) => {
            st.conns.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests;
