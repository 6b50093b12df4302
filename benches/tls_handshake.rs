//! Full TLS handshakes in memory, per rustls crypto provider (docs/decisions/0007): a
//! `ClientConnection` and a `ServerConnection` exchange their records through a `Vec`, no
//! socket, until both have finished. ECDSA P-256 certificate (rcgen), X25519 key exchange
//! (what OpenSSL 3.0 clients such as wrk and curl negotiate), no session cache and no
//! tickets on the server and no resumption on the client, so every iteration is a full
//! handshake, as in the `https-handshake` shape of `loadtest/tls.sh`.
//!
//! Three measurements per case:
//! - `server/…`: time spent inside the server's calls only (`ServerConnection::new`,
//!   `read_tls` + `process_new_packets`, `write_tls`), summed with `iter_custom`: the part of
//!   a handshake a proxy pays for;
//! - `client/…`: the same for the client's calls;
//! - `both/…`: the whole exchange, wall time.
//!
//! The client checks the server's handshake signature with the same provider but not its
//! certificate chain (like wrk, which sets `SSL_VERIFY_NONE`); that only changes the
//! client-side figure.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{self, CryptoProvider, SupportedKxGroup, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::NoServerSessionStorage;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, NamedGroup, ProtocolVersion,
    ServerConfig, ServerConnection, SignatureScheme, SupportedProtocolVersion,
};

/// Accepts any certificate, checks handshake signatures (wrk's `SSL_VERIFY_NONE`).
#[derive(Debug)]
struct NoChainCheck(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoChainCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

struct Case {
    name: String,
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    version: ProtocolVersion,
    group: NamedGroup,
}

struct Cert {
    chain: Vec<CertificateDer<'static>>,
    key: Vec<u8>,
}

fn cert() -> Cert {
    // rcgen's default key is ECDSA P-256 (PKCS_ECDSA_P256_SHA256).
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("rcgen certificate");
    Cert {
        chain: vec![ck.cert.der().clone()],
        key: ck.signing_key.serialize_der(),
    }
}

fn case(
    cert: &Cert,
    provider_name: &str,
    base: CryptoProvider,
    group: &'static dyn SupportedKxGroup,
    version: &'static SupportedProtocolVersion,
) -> Case {
    let provider = Arc::new(CryptoProvider {
        kx_groups: vec![group],
        ..base
    });
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key.clone()));
    let mut server = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .expect("server protocol versions")
        .with_no_client_auth()
        .with_single_cert(cert.chain.clone(), key)
        .expect("server certificate");
    server.session_storage = Arc::new(NoServerSessionStorage {});
    server.send_tls13_tickets = 0;
    let verifier = Arc::new(NoChainCheck(provider.signature_verification_algorithms));
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .expect("client protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    client.resumption = Resumption::disabled();
    let v = match version.version {
        ProtocolVersion::TLSv1_3 => "tls13",
        _ => "tls12",
    };
    let g = format!("{:?}", group.name()).to_ascii_lowercase();
    Case {
        name: format!("{provider_name}/{v}-{g}"),
        server: Arc::new(server),
        client: Arc::new(client),
        version: version.version,
        group: group.name(),
    }
}

/// Moves every record `from` has queued into `buf` (cleared first).
fn take_records<D>(from: &mut rustls::ConnectionCommon<D>, buf: &mut Vec<u8>) {
    buf.clear();
    while from.wants_write() {
        from.write_tls(buf).expect("write_tls");
    }
}

/// Hands `records` to `to` and processes them.
fn give_records<D>(to: &mut rustls::ConnectionCommon<D>, mut records: &[u8]) {
    while !records.is_empty() {
        to.read_tls(&mut records).expect("read_tls");
        to.process_new_packets().expect("handshake");
    }
}

/// One full handshake; the time spent in the server's and in the client's calls.
fn handshake(case: &Case) -> (Duration, Duration, ServerConnection) {
    let mut buf = Vec::with_capacity(8192);
    let t = Instant::now();
    let mut client = ClientConnection::new(
        case.client.clone(),
        ServerName::try_from("localhost").expect("server name"),
    )
    .expect("client connection");
    let mut c = t.elapsed();
    let t = Instant::now();
    let mut server = ServerConnection::new(case.server.clone()).expect("server connection");
    let mut s = t.elapsed();
    loop {
        let t = Instant::now();
        take_records(&mut client, &mut buf);
        c += t.elapsed();
        let t = Instant::now();
        give_records(&mut server, &buf);
        take_records(&mut server, &mut buf);
        s += t.elapsed();
        let t = Instant::now();
        give_records(&mut client, &buf);
        c += t.elapsed();
        if !client.is_handshaking()
            && !server.is_handshaking()
            && !client.wants_write()
            && !server.wants_write()
        {
            return (s, c, server);
        }
    }
}

fn cases() -> Vec<Case> {
    use crypto::{aws_lc_rs, ring};
    use rustls::version::{TLS12, TLS13};
    let cert = cert();
    let (aws, x_aws) = (aws_lc_rs::default_provider, aws_lc_rs::kx_group::X25519);
    let (ring, x_ring) = (ring::default_provider, ring::kx_group::X25519);
    let cases = vec![
        case(&cert, "aws_lc_rs", aws(), x_aws, &TLS13),
        case(&cert, "ring", ring(), x_ring, &TLS13),
        case(&cert, "aws_lc_rs", aws(), x_aws, &TLS12),
        case(&cert, "ring", ring(), x_ring, &TLS12),
        // What a current rustls or browser client negotiates with aws-lc-rs (ring has no ML-KEM).
        case(
            &cert,
            "aws_lc_rs",
            aws(),
            aws_lc_rs::kx_group::X25519MLKEM768,
            &TLS13,
        ),
    ];
    for c in &cases {
        let (_, _, server) = handshake(c);
        assert_eq!(server.protocol_version(), Some(c.version), "{}", c.name);
        let group = server.negotiated_key_exchange_group().map(|g| g.name());
        assert_eq!(group, Some(c.group), "{}", c.name);
        assert!(server.peer_certificates().is_none());
    }
    cases
}

fn bench_handshakes(c: &mut Criterion) {
    let cases = cases();
    let mut g = c.benchmark_group("tls_handshake");
    g.sample_size(40);
    g.measurement_time(Duration::from_secs(4));
    for case in &cases {
        g.bench_function(format!("server/{}", case.name), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| handshake(case).0).sum())
        });
        g.bench_function(format!("client/{}", case.name), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| handshake(case).1).sum())
        });
        g.bench_function(format!("both/{}", case.name), |b| {
            b.iter(|| black_box(handshake(case)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_handshakes);
criterion_main!(benches);
