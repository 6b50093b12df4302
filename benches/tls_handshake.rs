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
//! `TLS_HANDSHAKE_ROUNDS=30 cargo bench -p ringfront-benches --bench tls_handshake` runs
//! every case in turn instead, round after round (see [`interleaved`]): the figures to
//! compare providers with on a machine shared with other work.
//!
//! The client checks the server's handshake signature with the same provider but not its
//! certificate chain (like wrk, which sets `SSL_VERIFY_NONE`); that only changes the
//! client-side figure.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{self, CryptoProvider, SupportedKxGroup, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::NoServerSessionStorage;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, NamedGroup, ProtocolVersion,
    ServerConfig, ServerConnection, SignatureScheme, SupportedCipherSuite,
    SupportedProtocolVersion,
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

/// The provider with its TLS 1.3 suites' HKDF extracting once per secret, as the proxy's
/// (ringfront-tls's hkdf.rs: rustls's `HkdfUsingHmac` over aws-lc-rs's keyed HMAC).
fn with_hmac_hkdf(p: CryptoProvider) -> CryptoProvider {
    let cipher_suites = p
        .cipher_suites
        .iter()
        .map(|&cs| ringfront_tls::keyed_hkdf(cs))
        .collect();
    CryptoProvider { cipher_suites, ..p }
}

struct Case {
    name: String,
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    version: ProtocolVersion,
    group: NamedGroup,
    suite: rustls::CipherSuite,
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
    only_suite: Option<SupportedCipherSuite>,
    client_base: Option<CryptoProvider>,
) -> Case {
    let mut provider = CryptoProvider {
        kx_groups: vec![group],
        ..base
    };
    let mut suffix = String::new();
    if let Some(suite) = only_suite {
        provider.cipher_suites = vec![suite];
        suffix = format!("-{:?}", suite.suite()).to_ascii_lowercase();
    }
    // Both sides list AES-256-GCM first (OpenSSL clients do too).
    let suite = match (only_suite, version.version) {
        (Some(s), _) => s.suite(),
        (None, ProtocolVersion::TLSv1_3) => rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
        (None, _) => rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    };
    let provider = Arc::new(provider);
    // The client: the same provider, unless told otherwise (with the same group and suites).
    let client_provider = match client_base {
        Some(c) => Arc::new(CryptoProvider {
            kx_groups: provider.kx_groups.clone(),
            cipher_suites: match only_suite {
                Some(_) => provider.cipher_suites.clone(),
                None => c.cipher_suites.clone(),
            },
            ..c
        }),
        None => provider.clone(),
    };
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

    let mut client = ClientConfig::builder_with_provider(client_provider)
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
        name: format!("{provider_name}/{v}-{g}{suffix}"),
        server: Arc::new(server),
        client: Arc::new(client),
        version: version.version,
        group: group.name(),
        suite,
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

/// The provider's TLS13_AES_128_GCM_SHA256.
fn aes128(p: &CryptoProvider) -> SupportedCipherSuite {
    *p.cipher_suites
        .iter()
        .find(|s| s.suite() == rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
        .expect("TLS13_AES_128_GCM_SHA256")
}

fn cases() -> Vec<Case> {
    use crypto::{aws_lc_rs, ring};
    use rustls::version::{TLS12, TLS13};
    let cert = cert();
    let (aws, x_aws) = (aws_lc_rs::default_provider, aws_lc_rs::kx_group::X25519);
    let (ring, x_ring) = (ring::default_provider, ring::kx_group::X25519);
    let aes128_aws = Some(aes128(&aws()));
    let aes128_ring = Some(aes128(&ring()));
    let mlkem = aws_lc_rs::kx_group::X25519MLKEM768;
    let cases = vec![
        case(&cert, "aws_lc_rs", aws(), x_aws, &TLS13, None, None),
        case(&cert, "ring", ring(), x_ring, &TLS13, None, None),
        case(&cert, "aws_lc_rs", aws(), x_aws, &TLS12, None, None),
        case(&cert, "ring", ring(), x_ring, &TLS12, None, None),
        // The same with a SHA-256 suite instead of the clients' first choice (AES-256-GCM
        // with SHA-384): the transcript hash and HKDF are a large part of a handshake.
        case(&cert, "aws_lc_rs", aws(), x_aws, &TLS13, aes128_aws, None),
        case(&cert, "ring", ring(), x_ring, &TLS13, aes128_ring, None),
        // rustls's aws-lc-rs provider with the proxy's HKDF that extracts once; its
        // client is the stock provider, so the variant is checked to interoperate.
        case(
            &cert,
            "aws_lc_rs+hmac_hkdf",
            with_hmac_hkdf(aws()),
            x_aws,
            &TLS13,
            None,
            Some(aws()),
        ),
        // What a current rustls or browser client negotiates with aws-lc-rs (ring has no ML-KEM).
        case(&cert, "aws_lc_rs", aws(), mlkem, &TLS13, None, None),
    ];
    for c in &cases {
        let (_, _, server) = handshake(c);
        assert_eq!(server.protocol_version(), Some(c.version), "{}", c.name);
        let group = server.negotiated_key_exchange_group().map(|g| g.name());
        assert_eq!(group, Some(c.group), "{}", c.name);
        let suite = server.negotiated_cipher_suite().map(|s| s.suite());
        assert_eq!(suite, Some(c.suite), "{}", c.name);
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

/// `TLS_HANDSHAKE_ROUNDS=N`: instead of criterion's one-case-after-another runs, N rounds
/// that each time through every case do `TLS_HANDSHAKE_BATCH` (default 100) handshakes, so
/// that drift of a shared machine hits every case alike; prints per case the median over
/// rounds of the mean server-side and client-side µs per handshake, with the quartiles.
fn interleaved(rounds: usize) {
    let batch: u32 = std::env::var("TLS_HANDSHAKE_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(100);
    let cases = cases();
    let mut server = vec![Vec::with_capacity(rounds); cases.len()];
    let mut client = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for (i, case) in cases.iter().enumerate() {
            let (mut s, mut c) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..batch {
                let (ds, dc, conn) = handshake(case);
                black_box(conn);
                s += ds;
                c += dc;
            }
            server[i].push(s.as_secs_f64() * 1e6 / f64::from(batch));
            client[i].push(c.as_secs_f64() * 1e6 / f64::from(batch));
        }
    }
    let at = |v: &[f64], q: f64| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    // Server time relative to the first case's in the same round: drift cancels out.
    let ratio = |i: usize| -> Vec<f64> {
        server[i]
            .iter()
            .zip(&server[0])
            .map(|(s, s0)| s / s0)
            .collect()
    };
    println!(
        "{rounds} rounds x {batch} handshakes per case; µs per handshake: median over rounds \
         (p10-p90); server time vs {}: median of the per-round ratios",
        cases[0].name
    );
    println!("| case | server µs | client µs | server vs first |");
    println!("|---|---:|---:|---:|");
    for (i, case) in cases.iter().enumerate() {
        let (s, c, r) = (&server[i], &client[i], ratio(i));
        println!(
            "| {} | {:.1} ({:.1}-{:.1}) | {:.1} ({:.1}-{:.1}) | {:.2} |",
            case.name,
            at(s, 0.5),
            at(s, 0.1),
            at(s, 0.9),
            at(c, 0.5),
            at(c, 0.1),
            at(c, 0.9),
            at(&r, 0.5)
        );
    }
}

criterion_group!(benches, bench_handshakes);

fn main() {
    if let Some(rounds) = std::env::var("TLS_HANDSHAKE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
    {
        return interleaved(rounds);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
