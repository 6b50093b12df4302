//! Fault injection under load: a backend process killed with SIGKILL while wrk runs costs no
//! request, because idempotent requests that fail before any response byte are redispatched.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{fill, port};
use ringfront_testkit::{Ringfront, SIGKILL};

/// A backend process (ringfront answering by itself), so it can be killed for real.
fn backend(name: &str) -> (Ringfront, u16) {
    let p = port();
    let cfg = fill(
        "events { worker_connections 1024; }
http {
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"{NAME}\\n\"; }
    }
}
",
        &[("PORT", p.to_string()), ("NAME", name.to_string())],
    );
    (Ringfront::start_with_args(&cfg, &["--workers", "1"]), p)
}

#[test]
fn sigkill_of_a_backend_under_load_loses_no_request() {
    let backends: Vec<(Ringfront, u16)> = ["b1", "b2", "b3"].iter().map(|n| backend(n)).collect();
    let p = port();
    let servers: String = backends
        .iter()
        .map(|(_, bp)| format!("server 127.0.0.1:{bp} max_fails=1 fail_timeout=30s;\n"))
        .collect();
    let cfg = fill(
        "worker_processes 2;
events { worker_connections 1024; }
http {
    upstream b {
{SERVERS}    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://b; }
    }
}
",
        &[("SERVERS", servers), ("PORT", p.to_string())],
    );
    let front = Ringfront::start(&cfg);
    let wrk = std::thread::spawn(move || {
        Command::new("wrk")
            .args(["-t1", "-c16", "-d4s", &format!("http://127.0.0.1:{p}/")])
            .output()
            .expect("wrk is installed (apt-get install wrk)")
    });
    // Let the load run on all three backends, then kill one mid-flight.
    std::thread::sleep(Duration::from_millis(1500)); // the scenario's timeline
    backends[2].0.signal(SIGKILL);
    let out = wrk.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Non-2xx"), "{text}");
    assert!(!text.contains("Socket errors"), "{text}");
    let total: usize = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(total > 1000, "{text}");
    // The dead backend was seen failing and taken out.
    assert!(front.wait_for_stderr(
        &format!("127.0.0.1:{}", backends[2].1),
        Duration::from_secs(5)
    ));
}
