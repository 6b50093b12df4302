//! `limit_rate`, `limit_rate_after` and `$limit_rate` against real nginx on the same
//! configuration: a 128 KiB static file and a proxied 128 KiB body at 32k/s after 8k take
//! the time nginx's arithmetic gives on both (`rate * (whole seconds + 1) + after` may have
//! gone; the first second may turn at once, so at least `ceil((size - after) / rate) - 2`
//! seconds), as does an upstream's
//! `X-Accel-Limit-Rate`; `set $limit_rate` shows in a `return` body and an `add_header`.

mod common;

use std::time::{Duration, Instant};

use common::{fill, port};
use ringfront_testkit::{Backend, Canned, Client, Nginx, Ringfront};

const SIZE: usize = 128 << 10;
const RATE: f64 = 32768.0;
const AFTER: f64 = 8192.0;
/// A `return` body at 1k/s: more than the first second's budget, so one delay of a second.
const RETURNED: usize = 2500;

fn files() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-limit-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("test folder");
    std::fs::write(dir.join("big.bin"), vec![b'x'; SIZE]).expect("test file");
    dir
}

fn config(p: u16, backend: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {DIR};
        limit_rate 32k;
        limit_rate_after 8k;
        location / {
        }
        location /up/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /var {
            set $limit_rate $arg_l;
            add_header X-Rate $limit_rate;
            return 200 "rate=$limit_rate\n";
        }
        location /accel/ {
            limit_rate 0;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /ret {
            limit_rate 1k;
            limit_rate_after 0;
            return 200 "{TEXT}";
        }
        location /fast/ {
            limit_rate 0;
            alias {DIR}/;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", dir.display().to_string()),
            ("TEXT", "r".repeat(RETURNED)),
        ],
    )
}

/// Fetches `path` and returns its body length and how long the whole answer took.
fn timed(port: u16, path: &str) -> (usize, Duration) {
    let started = Instant::now();
    let r = Client::connect(("127.0.0.1", port)).request("GET", path, &[], b"");
    assert_eq!(r.status, 200, "{path} on {port}");
    (r.body.len(), started.elapsed())
}

#[test]
fn limited_bodies_take_nginx_time_band() {
    let b = Backend::start();
    // The upstream's `X-Accel-Limit-Rate` sets the rate where the location has none.
    let mut accel = Canned::status(200, &"y".repeat(SIZE));
    accel.headers = vec![("X-Accel-Limit-Rate".into(), "32768".into())];
    b.set_route("/accel/big", accel);
    let dir = files();
    let (np, rp) = (port(), port());
    let _n = Nginx::start(&config(np, b.port(), &dir), np);
    let _r = Ringfront::start(&config(rp, b.port(), &dir));
    let seconds = ((SIZE as f64 - AFTER) / RATE).ceil() - 2.0;
    let least = Duration::from_secs_f64(seconds - 0.1);
    let most = Duration::from_secs_f64(seconds + 3.0);
    for path in ["/big.bin", &format!("/up/x?size={SIZE}"), "/accel/big"] {
        // Both servers at once: each paces its own connection.
        let other = std::thread::spawn({
            let path = path.to_string();
            move || timed(np, &path)
        });
        let ours = timed(rp, path);
        let theirs = other.join().expect("nginx fetch");
        for (who, (len, took)) in [("nginx", theirs), ("ringfront", ours)] {
            assert_eq!(len, SIZE, "{who} {path}");
            assert!(took >= least, "{who} {path}: {took:?} < {least:?}");
            assert!(took <= most, "{who} {path}: {took:?} > {most:?}");
        }
    }
    for (who, p) in [("nginx", np), ("ringfront", rp)] {
        let (len, took) = timed(p, "/ret");
        assert_eq!(len, RETURNED, "{who}");
        let band = Duration::from_millis(900)..Duration::from_secs(4);
        assert!(band.contains(&took), "{who} return: {took:?}");
    }
    // `limit_rate 0` lifts the server's limit: the file goes at once on both.
    for (who, p) in [("nginx", np), ("ringfront", rp)] {
        let (len, took) = timed(p, "/fast/big.bin");
        assert_eq!(len, SIZE, "{who}");
        assert!(took < least, "{who} unlimited: {took:?}");
    }
}

#[test]
fn set_limit_rate_is_read_back() {
    let b = Backend::start();
    let dir = files();
    let (np, rp) = (port(), port());
    let _n = Nginx::start(&config(np, b.port(), &dir), np);
    let _r = Ringfront::start(&config(rp, b.port(), &dir));
    for path in ["/var?l=40k", "/var?l=1m", "/var?l=7", "/var", "/var?l=bad"] {
        let get = |p: u16| Client::connect(("127.0.0.1", p)).request("GET", path, &[], b"");
        let (n, r) = (get(np), get(rp));
        assert_eq!(n.status, r.status, "{path}");
        assert_eq!(n.header("X-Rate"), r.header("X-Rate"), "{path}");
        assert_eq!(n.text(), r.text(), "{path}");
    }
    let r = Client::connect(("127.0.0.1", rp)).request("GET", "/var?l=40k", &[], b"");
    assert_eq!(r.header("X-Rate"), Some("40960"));
    assert_eq!(r.text(), "rate=40960\n");
}
