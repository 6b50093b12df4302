//! `record-golden [DIR]`: records the ip_hash / hash / consistent-hash golden traces from real
//! nginx (`/usr/sbin/nginx`) into DIR (default `crates/ringfront-upstream/tests/golden`).
//! Needs ports 19801-19805 free: the server addresses are part of the hash.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use ringfront_testkit::golden::{golden_backends, hash_keys, ip_hash_sources, record};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ringfront-upstream/tests/golden")
        });
    std::fs::create_dir_all(&dir).expect("create golden dir");
    let _backends = golden_backends(&[19801, 19802, 19803, 19804, 19805]);
    let s = |p: u16, w: u32| (format!("127.0.0.1:{p}"), w);
    let four = [s(19801, 1), s(19802, 1), s(19803, 2), s(19804, 1)];
    let five = [
        s(19801, 1),
        s(19802, 1),
        s(19803, 2),
        s(19804, 1),
        s(19805, 1),
    ];
    let five_minus_one = [s(19801, 1), s(19803, 2), s(19804, 1), s(19805, 1)];
    let local = Ipv4Addr::LOCALHOST;
    let by_ip: Vec<_> = ip_hash_sources(400)
        .into_iter()
        .map(|ip| (ip, "/".to_string()))
        .collect();
    let by_key: Vec<_> = hash_keys(1000).into_iter().map(|k| (local, k)).collect();
    let files = [
        ("ip_hash.txt", record("ip_hash", &four, &by_ip, true)),
        (
            "hash_consistent.txt",
            record("hash $request_uri consistent", &five, &by_key, false),
        ),
        (
            "hash_consistent_minus_one.txt",
            record(
                "hash $request_uri consistent",
                &five_minus_one,
                &by_key,
                false,
            ),
        ),
        (
            "hash.txt",
            record("hash $request_uri", &five, &by_key, false),
        ),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write golden file");
        println!("wrote {}", path.display());
    }
}
