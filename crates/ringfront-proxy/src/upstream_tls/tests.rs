//! TLS to upstreams over loopback: blocking rustls backends in threads, the proxy's side
//! on monoio (both drivers). Handshakes, typed failures, pooling by tag, close_notify.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream as StdTcp};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use ringfront_config::{ProxySsl, SslFile};
use ringfront_tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use ringfront_tls::rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::*;
use crate::pool::Pool;
use crate::testutil::on_both;
use crate::upstream::{self, Target};

/// A CA and a server certificate for `b.test` it signed; the CA's PEM is written to a file.
struct Certs {
    ca_file: PathBuf,
    server: Arc<ServerConfig>,
}

fn certs(tag: &str) -> Certs {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{tag} CA"));
    let ca = CertifiedIssuer::self_signed(params, ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["b.test".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let dir = std::env::temp_dir().join(format!("ringfront-upstream-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join(format!("{tag}-ca.pem"));
    std::fs::write(&ca_file, ca.as_ref().pem()).unwrap();
    let provider = Arc::new(ringfront_tls::rustls::crypto::aws_lc_rs::default_provider());
    let chain = vec![CertificateDer::from(leaf.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Certs {
        ca_file,
        server: Arc::new(server),
    }
}

/// A TLS backend answering every request `200 ok`; `close`: a close_notify this long after
/// each answer (zero: with it). Counts the connections it accepted.
fn tls_backend(cfg: Arc<ServerConfig>, close: Option<Duration>) -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let cfg = cfg.clone();
            std::thread::spawn(move || serve(s, cfg, close));
        }
    });
    (addr, accepted)
}

fn serve(s: StdTcp, cfg: Arc<ServerConfig>, close: Option<Duration>) {
    let Ok(conn) = ServerConnection::new(cfg) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, s);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tls.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..i + 4);
            let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            if let Some(after) = close {
                if !after.is_zero() {
                    let _ = tls.flush();
                    std::thread::sleep(after);
                }
                tls.conn.send_close_notify();
            }
            let _ = tls.flush();
        }
    }
}

/// A backend that accepts one connection and does `then` with it.
fn plain_backend(then: impl FnOnce(StdTcp) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            then(s);
        }
    });
    addr
}

fn settings(ca: Option<&PathBuf>) -> ProxySsl {
    ProxySsl {
        verify: ca.is_some(),
        trusted_certificate: ca.map(|p| SslFile {
            path: p.clone(),
            origin: Default::default(),
        }),
        ..Default::default()
    }
}

fn handshake(p: &ProxySsl, name: &str) -> Handshake {
    let rt = TlsCache::default().location(p).unwrap();
    rt.settings_for(name.to_string())
}

fn target<'a>(addr: SocketAddr, hs: &'a Handshake, limit: Duration) -> Target<'a> {
    Target {
        addr,
        peer: 0,
        connect_timeout: limit,
        tls: Some(hs),
        local: None,
        transparent: false,
        unix: None,
        so_keepalive: false,
    }
}

const SECOND: Duration = Duration::from_secs(1);

async fn get(pool: &RefCell<Pool>, t: &Target<'_>) -> upstream::Conn {
    use crate::upstream_request::{Outbound, Request};
    let mut conn = upstream::connect(pool, t).await.unwrap();
    let head = b"GET / HTTP/1.1\r\nHost: b.test\r\n\r\n".to_vec();
    let req = Request(std::rc::Rc::new(Outbound::for_test(head, Vec::new())));
    upstream::send(&mut conn, &req, SECOND).await.unwrap();
    let (head, buf) = upstream::read_head(&mut conn, Vec::new(), SECOND).await;
    assert_eq!(head.unwrap().status, 200);
    assert!(buf.ends_with(b"ok"), "{:?}", String::from_utf8_lossy(&buf));
    conn
}

fn put(pool: &RefCell<Pool>, conn: upstream::Conn) {
    pool.borrow_mut().put_tagged(
        0,
        0,
        (8, Duration::from_secs(60)),
        conn.stream,
        conn.requests + 1,
        (conn.tag, conn.born),
    );
}

async fn settle() {
    monoio::time::sleep(Duration::from_millis(50)).await;
}

/// A verified handshake, a request, the connection pooled and reused; a request whose
/// handshake would differ (another name) does not get it.
#[test]
fn verified_connections_are_pooled_and_reused_by_the_same_settings_only() {
    on_both(|| async {
        let c = certs("reuse");
        let (addr, accepted) = tls_backend(c.server.clone(), None);
        let hs = handshake(&settings(Some(&c.ca_file)), "b.test");
        let pool = RefCell::new(Pool::new(1));
        let conn = get(&pool, &target(addr, &hs, SECOND)).await;
        assert!(!conn.reused && conn.stream.peer_addr().is_ok());
        put(&pool, conn);
        settle().await;
        assert_eq!(pool.borrow().idle(), 1);
        let conn = get(&pool, &target(addr, &hs, SECOND)).await;
        assert!(conn.reused);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        put(&pool, conn);
        // Another name (unverified here, so the handshake passes) is another tag.
        let other = handshake(&settings(None), "b.test");
        assert_ne!(other.tag, hs.tag);
        let conn = get(&pool, &target(addr, &other, SECOND)).await;
        assert!(!conn.reused);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.borrow().idle(), 0, "the mismatched one was closed");
    });
}

#[test]
fn verify_failures_are_typed() {
    on_both(|| async {
        let c = certs("verify");
        let other = certs("other");
        let (addr, _) = tls_backend(c.server.clone(), None);
        let pool = RefCell::new(Pool::new(1));
        let wrong_ca = handshake(&settings(Some(&other.ca_file)), "b.test");
        let Err(f) = upstream::connect(&pool, &target(addr, &wrong_ca, SECOND)).await else {
            panic!("verified against the wrong CA");
        };
        assert_eq!(f.phase, Phase::Handshake);
        assert_eq!(
            f.cause,
            Cause::Ssl(SslFault::Verify(
                20,
                "unable to get local issuer certificate"
            ))
        );
        let wrong_name = handshake(&settings(Some(&c.ca_file)), "c.test");
        let Err(f) = upstream::connect(&pool, &target(addr, &wrong_name, SECOND)).await else {
            panic!("verified another name");
        };
        assert_eq!(f.cause, Cause::Ssl(SslFault::NameMismatch));
    });
}

#[test]
fn plain_and_silent_backends_fail_the_handshake() {
    on_both(|| async {
        let hs = handshake(&settings(None), "b.test");
        let pool = RefCell::new(Pool::new(1));
        let plain = plain_backend(|mut s| {
            let mut b = [0u8; 512];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
            std::thread::sleep(Duration::from_millis(200));
        });
        let Err(f) = upstream::connect(&pool, &target(plain, &hs, SECOND)).await else {
            panic!("TLS with a plain HTTP server");
        };
        assert_eq!(
            f,
            Failure::new(
                Phase::Handshake,
                Cause::Ssl(SslFault::Protocol("wrong version number"))
            )
        );
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let silent = plain_backend(move |_s| {
            let _ = rx.recv();
        });
        let limit = Duration::from_millis(100);
        let Err(f) = upstream::connect(&pool, &target(silent, &hs, limit)).await else {
            panic!("a handshake with a silent peer");
        };
        assert_eq!(f, Failure::new(Phase::Handshake, Cause::TimedOut));
        assert_eq!(f.status(), 504);
        drop(tx);
        let closed = plain_backend(drop);
        let Err(f) = upstream::connect(&pool, &target(closed, &hs, SECOND)).await else {
            panic!("a handshake with a peer that closed");
        };
        assert_eq!(f.phase, Phase::Handshake);
        assert!(matches!(f.cause, Cause::Closed | Cause::Os(104)), "{f}");
    });
}

/// A backend's close_notify after the answer: the connection is not kept (read with the
/// answer) or leaves the pool when its watcher sees it (sent later).
#[test]
fn a_close_notify_ends_an_idle_tls_connection() {
    on_both(|| async {
        let c = certs("close");
        let hs = handshake(&settings(None), "b.test");
        let pool = RefCell::new(Pool::new(1));
        let (with, _) = tls_backend(c.server.clone(), Some(Duration::ZERO));
        let conn = get(&pool, &target(with, &hs, SECOND)).await;
        put(&pool, conn);
        settle().await;
        assert_eq!(pool.borrow().idle(), 0);
        let (later, _) = tls_backend(c.server.clone(), Some(Duration::from_millis(100)));
        let conn = get(&pool, &target(later, &hs, SECOND)).await;
        put(&pool, conn);
        assert_eq!(pool.borrow().idle(), 1);
        monoio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(pool.borrow().idle(), 0, "the watcher saw the close_notify");
    });
}

fn wrapped(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

#[test]
fn causes_in_openssl_words() {
    let unknown = wrapped(rustls::Error::InvalidCertificate(
        CertificateError::UnknownIssuer,
    ));
    assert_eq!(
        cause(&unknown),
        Cause::Ssl(SslFault::Verify(
            20,
            "unable to get local issuer certificate"
        ))
    );
    let name = wrapped(rustls::Error::InvalidCertificate(
        CertificateError::NotValidForName,
    ));
    assert_eq!(cause(&name), Cause::Ssl(SslFault::NameMismatch));
    let plain = wrapped(rustls::Error::InvalidMessage(
        InvalidMessage::InvalidContentType,
    ));
    assert_eq!(
        cause(&plain),
        Cause::Ssl(SslFault::Protocol("wrong version number"))
    );
    let alert = wrapped(rustls::Error::AlertReceived(
        AlertDescription::CertificateRequired,
    ));
    assert_eq!(
        cause(&alert),
        Cause::Ssl(SslFault::Protocol("tlsv13 alert certificate required"))
    );
    assert_eq!(cause(&io::Error::from_raw_os_error(104)), Cause::Os(104));
    assert_eq!(cause(&io::ErrorKind::UnexpectedEof.into()), Cause::Closed);
}

/// The same settings written in two places share one rustls configuration (and so its
/// session cache); names and places do not change the pool tag's profile.
#[test]
fn identical_settings_share_one_configuration() {
    let mut cache = TlsCache::default();
    let a = cache.location(&ProxySsl::default()).unwrap();
    let placed = ProxySsl {
        ciphers_origin: Some(ringfront_config::Origin {
            file: "x.conf".into(),
            line: 3,
        }),
        ..Default::default()
    };
    let b = cache.location(&placed).unwrap();
    assert!(Arc::ptr_eq(&a.config, &b.config));
    assert_eq!(
        a.settings_for("h".into()).tag,
        b.settings_for("h".into()).tag
    );
    let sni = ProxySsl {
        server_name: true,
        ..Default::default()
    };
    let c = cache.location(&sni).unwrap();
    assert!(!Arc::ptr_eq(&a.config, &c.config));
    assert_ne!(
        a.settings_for("h".into()).tag,
        c.settings_for("h".into()).tag
    );
}

#[test]
fn probes_render_proxy_ssl_name_without_a_request() {
    let p = ProxySsl {
        name: Some(ringfront_config::Template {
            parts: vec![
                TemplatePart::Literal("api.".into()),
                TemplatePart::Var(Variable::ProxyHost),
            ],
        }),
        ..Default::default()
    };
    let rt = TlsCache::default().location(&p).unwrap();
    assert_eq!(rt.probe_handshake("b:8443").name, "api.b:8443");
    let plain = TlsCache::default().location(&ProxySsl::default()).unwrap();
    let hs = plain.probe_handshake("b:8443");
    assert_eq!(hs.name, "b:8443");
    assert_eq!(
        hs.server_name,
        Some(ServerName::try_from("b".to_string()).unwrap())
    );
}

/// nginx drops the scheme's default port from `$proxy_host` (the `Host` sent): `:443` for
/// `https://`, `:80` for `http://`; any other port stays.
#[test]
fn proxy_host_leaves_out_the_default_port_of_the_scheme() {
    let text = "events {}
http {
    server {
        listen 127.0.0.1:1;
        location /a { proxy_pass https://127.0.0.1:443; }
        location /b { proxy_pass https://127.0.0.1:8443; }
        location /c { proxy_pass http://127.0.0.2:80; }
    }
}
";
    let host = ringfront_config::MemoryHost::default();
    let cfg = ringfront_config::parse_str(text, std::path::Path::new("/t/r.conf"), &host).unwrap();
    let snap = crate::snapshot::Snapshot::build(&cfg, 1).unwrap();
    let hosts: Vec<&str> = snap.groups.iter().map(|g| g.proxy_host.as_str()).collect();
    assert_eq!(hosts, ["127.0.0.1", "127.0.0.1:8443", "127.0.0.2"]);
}

/// `proxy_ssl_session_reuse on` (the default): a second connection with the same settings
/// resumes the first one's session.
#[test]
fn a_second_connection_resumes_the_session() {
    on_both(|| async {
        let c = certs("resume");
        let (addr, _) = tls_backend(c.server.clone(), Some(Duration::ZERO));
        let hs = handshake(&settings(None), "127.0.0.1");
        let pool = RefCell::new(Pool::new(1));
        let kinds = {
            let mut kinds = Vec::new();
            for _ in 0..2 {
                let conn = get(&pool, &target(addr, &hs, SECOND)).await;
                let crate::stream::Stream::Tls(t) = &conn.stream else {
                    panic!("not TLS")
                };
                kinds.push(t.conn().handshake_kind());
            }
            kinds
        };
        use ringfront_tls::rustls::HandshakeKind;
        assert_eq!(
            kinds,
            [Some(HandshakeKind::Full), Some(HandshakeKind::Resumed)]
        );
    });
}
