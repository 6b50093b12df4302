//! The shipped example configurations (the source articles' nginx configs, addresses moved
//! to loopback) run unchanged apart from their ports, and show the articles' behaviour.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{port, served_by};
use ringfront_testkit::{http, Backend, Mode, Ringfront, SIGHUP};

fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example with its listen port and backend ports 9001.. replaced.
fn ported(text: &str, listen: u16, backends: &[&Backend]) -> String {
    let mut s = text.replace("127.0.0.1:8080", &format!("127.0.0.1:{listen}"));
    for (i, b) in backends.iter().enumerate() {
        s = s.replace(
            &format!("127.0.0.1:{}", 9001 + i),
            &format!("127.0.0.1:{}", b.port()),
        );
    }
    s
}

#[test]
fn every_example_passes_the_config_test() {
    for name in [
        "seed000-redispatch.conf",
        "seed001-delayed-blocking.conf",
        "seed003-round-robin.conf",
    ] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../config/examples")
            .join(name);
        let out = std::process::Command::new(ringfront_testkit::ringfront_binary())
            .arg("-t")
            .arg("-c")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn seed000_two_alive_two_refusing_serves_every_request() {
    let bs: Vec<Backend> = (0..4).map(|_| Backend::start()).collect();
    bs[1].set_mode(Mode::Refuse);
    bs[3].set_mode(Mode::Refuse);
    let refs: Vec<&Backend> = bs.iter().collect();
    let p = port();
    let _rf = Ringfront::start(&ported(&example("seed000-redispatch.conf"), p, &refs));
    for _ in 0..8 {
        let r = http::get(("127.0.0.1", p), "/");
        assert_eq!(r.status, 200);
        assert!([bs[0].port(), bs[2].port()].contains(&served_by(&r)));
    }
    assert_eq!(bs[0].hits() + bs[2].hits(), 8);
}

#[test]
fn seed001_warming_backends_504_then_no_live_upstreams() {
    // Article 001: both Tomcats accept but do not answer; max_fails=1, 1 s timeouts.
    let bs: Vec<Backend> = (0..2).map(|_| Backend::start()).collect();
    bs.iter().for_each(|b| b.set_mode(Mode::Hang));
    let refs: Vec<&Backend> = bs.iter().collect();
    let p = port();
    let rf = Ringfront::start(&ported(&example("seed001-delayed-blocking.conf"), p, &refs));
    // The example's error page lives in html/ beside the config; reload to pick it up.
    std::fs::create_dir_all(rf.dir().join("html")).unwrap();
    std::fs::write(rf.dir().join("html/50x.html"), example("html/50x.html")).unwrap();
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", Duration::from_secs(10)));
    let t = Instant::now();
    let first = http::get(("127.0.0.1", p), "/");
    assert_eq!(first.status, 504);
    assert!(
        t.elapsed() >= Duration::from_millis(1800),
        "both servers tried: {:?}",
        t.elapsed()
    );
    assert!(first.text().contains("An error occurred."));
    let second = http::get(("127.0.0.1", p), "/");
    assert_eq!(second.status, 502);
    assert!(rf.wait_for_stderr(
        "no live upstreams while connecting to upstream",
        Duration::from_secs(5)
    ));
}

#[test]
fn seed003_weighted_upstream_is_smooth() {
    let bs: Vec<Backend> = (0..3).map(|_| Backend::start()).collect();
    let refs: Vec<&Backend> = bs.iter().collect();
    let p = port();
    let _rf = Ringfront::start(&ported(&example("seed003-round-robin.conf"), p, &refs));
    let seq: Vec<u16> = (0..5)
        .map(|_| served_by(&http::get(("127.0.0.1", p), "/weighted")))
        .collect();
    let (a, b, c) = (bs[0].port(), bs[1].port(), bs[2].port());
    assert_eq!(seq, [c, a, c, b, c]);
}
