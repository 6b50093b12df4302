//! Response compression: gzip of a 64 KiB HTML page and a 64 KiB JSON answer at levels 1
//! (nginx's default) and 6, with zlib-rs through flate2 (what ringfront uses) and with
//! miniz_oxide (flate2's default backend), each call from a fresh compressor as one
//! response gets (docs/decisions/0009-deflate-library.md).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flate2::{Compress, Compression, FlushCompress, Status};
use ringfront_benches::{html_body, json_body};

/// zlib-rs: the whole body in one call, as a gzip stream.
fn zlib_rs(data: &[u8], level: u32, out: &mut Vec<u8>) -> usize {
    out.clear();
    let mut z = Compress::new_gzip(Compression::new(level), 15);
    loop {
        let done = z.total_in() as usize;
        match z.compress_vec(&data[done..], out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => return out.len(),
            Ok(_) => out.reserve(out.capacity().max(4096)),
            Err(e) => panic!("{e}"),
        }
    }
}

/// miniz_oxide: raw deflate of the body (the gzip header and trailer are a few bytes and
/// one CRC over the input, left out here).
fn miniz(data: &[u8], level: u8) -> usize {
    miniz_oxide::deflate::compress_to_vec(data, level).len()
}

fn gzip(c: &mut Criterion) {
    for (name, body) in [
        ("html_64k", html_body(64 << 10)),
        ("json_64k", json_body(64 << 10)),
    ] {
        let mut g = c.benchmark_group(format!("gzip_{name}"));
        g.throughput(Throughput::Bytes(body.len() as u64));
        let mut out = Vec::with_capacity(body.len());
        for level in [1u32, 6] {
            let zsize = zlib_rs(&body, level, &mut out);
            let msize = miniz(&body, level as u8);
            println!("{name} level {level}: zlib-rs {zsize} bytes, miniz_oxide {msize} bytes");
            g.bench_function(format!("zlib_rs_level{level}"), |b| {
                b.iter(|| zlib_rs(black_box(&body), level, &mut out));
            });
            g.bench_function(format!("miniz_oxide_level{level}"), |b| {
                b.iter(|| miniz(black_box(&body), level as u8));
            });
        }
        g.finish();
    }
}

criterion_group!(benches, gzip);
criterion_main!(benches);
