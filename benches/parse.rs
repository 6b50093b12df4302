//! Parsing hot paths: request heads (wrk's minimal GET, a browser-like GET), an upstream
//! response head, and scanning a 16 KiB chunked body.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringfront_benches::{chunked_body, BROWSER_GET, RESPONSE_HEAD, WRK_GET};
use ringfront_http::{ChunkedDecoder, RequestHead, ResponseHead};

fn request(c: &mut Criterion) {
    let mut g = c.benchmark_group("request_head");
    for (name, buf) in [("wrk_get", WRK_GET), ("browser_get_15h", BROWSER_GET)] {
        // The head is reused across requests, as a client session does.
        let mut head = RequestHead::new();
        assert_eq!(head.parse(buf).unwrap(), Some(buf.len()), "{name}");
        g.throughput(Throughput::Bytes(buf.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| head.parse(black_box(buf)).unwrap());
        });
    }
    g.finish();
}

fn response(c: &mut Criterion) {
    let mut g = c.benchmark_group("response_head");
    let mut head = ResponseHead::new();
    assert_eq!(
        head.parse(RESPONSE_HEAD).unwrap(),
        Some(RESPONSE_HEAD.len())
    );
    g.throughput(Throughput::Bytes(RESPONSE_HEAD.len() as u64));
    g.bench_function("nginx_200", |b| {
        b.iter(|| head.parse(black_box(RESPONSE_HEAD)).unwrap());
    });
    g.finish();
}

fn chunked(c: &mut Criterion) {
    let mut g = c.benchmark_group("chunked_scan");
    for (name, chunk) in [("16k_in_4k_chunks", 4096), ("16k_in_256b_chunks", 256)] {
        let body = chunked_body(16 * 1024, chunk);
        let check = ChunkedDecoder::new().scan(&body).unwrap();
        assert!(check.done && check.consumed == body.len(), "{name}");
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut dec = ChunkedDecoder::new();
                dec.scan(black_box(&body)).unwrap()
            });
        });
    }
    g.finish();
}

criterion_group!(benches, request, response, chunked);
criterion_main!(benches);
