//! Golden traces recorded from real nginx (`cargo run -p ringfront-testkit --bin
//! record-golden` writes `tests/golden/*.txt`, see its README): for every recorded request,
//! ringfront's balancer must pick the server nginx picked. Also a few
//! mappings worked out by hand from nginx's formulas, so this test asserts something even
//! before any trace is recorded.
//!
//! File format: `# server ADDR [weight=W] [down] ...` header lines give the servers in
//! configuration order; other `#` lines are comments; every other non-empty line is
//! `KEY<TAB>SERVER_ADDR` (KEY is the client address for `ip_hash`, the hash key otherwise).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use ringfront_upstream::{
    free, select, Attempt, Balancer, Board, PeerSpec, RequestKey, Selection, Topology,
    UpstreamSpec, WorkerPeers,
};

fn server(line: &str, file: &str) -> PeerSpec {
    let mut words = line.split_whitespace();
    let text = words
        .next()
        .unwrap_or_else(|| panic!("{file}: empty server line"));
    let addr: SocketAddr = text
        .parse()
        .unwrap_or_else(|e| panic!("{file}: server {text:?}: {e}"));
    let mut p = PeerSpec {
        name: addr.to_string(),
        server: text.to_string(),
        addr,
        weight: 1,
        max_fails: 1,
        fail_timeout: 10,
        max_conns: 0,
        down: false,
        drain: false,
        slow_start_ms: 0,
    };
    for w in words {
        let num = |v: &str| -> u32 {
            v.parse()
                .unwrap_or_else(|e| panic!("{file}: server {text}: {w:?}: {e}"))
        };
        match w.split_once('=') {
            Some(("weight", v)) => p.weight = num(v),
            Some(("max_fails", v)) => p.max_fails = num(v),
            Some(("max_conns", v)) => p.max_conns = num(v),
            Some(("fail_timeout", v)) => {
                p.fail_timeout = u64::from(num(v.trim_end_matches('s')));
            }
            None if w == "down" => p.down = true,
            _ => panic!("{file}: server {text}: unknown parameter {w:?}"),
        }
    }
    p
}

/// Checks every line of one trace; returns how many requests it compared.
fn check_trace(balancer: Balancer, text: &str, file: &str) -> usize {
    let mut peers = Vec::new();
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("# server ") {
            peers.push(server(rest, file));
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let (k, s) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("{file}:{}: no tab in {line:?}", n + 1));
            assert!(!s.is_empty(), "{file}:{}: no server in {line:?}", n + 1);
            lines.push((n + 1, k.to_string(), s.to_string()));
        }
    }
    assert!(!peers.is_empty(), "{file}: no `# server` lines");
    assert!(!lines.is_empty(), "{file}: no recorded requests");
    for (n, _, s) in &lines {
        assert!(
            peers.iter().any(|p| &p.name == s || &p.server == s),
            "{file}:{n}: {s:?} is not one of the servers"
        );
    }
    let topo = Topology::new(vec![UpstreamSpec {
        name: "u".into(),
        primary: peers,
        balancer,
        ..UpstreamSpec::default()
    }]);
    let board = Board::new(topo.peer_count);
    let mut ws = WorkerPeers::new(&topo, 1);
    let mut mismatches = Vec::new();
    for (n, k, want) in &lines {
        let client: Option<IpAddr> = match balancer {
            Balancer::IpHash => Some(
                k.parse()
                    .unwrap_or_else(|e| panic!("{file}:{n}: client {k:?}: {e}")),
            ),
            _ => None,
        };
        let key = RequestKey {
            client,
            hash: k.as_bytes(),
        };
        let mut at = Attempt::new(&topo, 0, 0);
        let got = match select(&topo, &mut ws, &board, &mut at, &key, 0) {
            Selection::Peer(id) => topo.peer(id).map(|p| p.name.clone()),
            Selection::NoLive => None,
        };
        free(&topo, &mut ws, &board, &mut at, false, None, 0);
        if got.as_deref() != Some(want.as_str()) {
            mismatches.push(format!(
                "{file}:{n}: {k} -> nginx {want}, ringfront {got:?}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        lines.len(),
        mismatches.join("\n")
    );
    lines.len()
}

/// The balancer a trace was recorded with: from its `# | ` upstream block (the recorder
/// writes the exact block), else from the file name (`ip_hash*`, `hash_consistent*`, `hash*`).
fn balancer_of(text: &str, file: &str) -> Balancer {
    for line in text.lines() {
        let Some(directive) = line.strip_prefix("# |").map(str::trim) else {
            continue;
        };
        if directive == "ip_hash;" {
            return Balancer::IpHash;
        }
        if let Some(args) = directive.strip_prefix("hash ") {
            let consistent = args.trim_end_matches(';').split_whitespace().nth(1);
            return Balancer::Hash {
                consistent: consistent == Some("consistent"),
            };
        }
        assert!(
            !directive.ends_with(';') || directive.starts_with("server "),
            "{file}: the trace's upstream uses {directive:?}, which no golden test knows"
        );
    }
    if file.starts_with("ip_hash") {
        Balancer::IpHash
    } else if file.starts_with("hash_consistent") {
        Balancer::Hash { consistent: true }
    } else if file.starts_with("hash") {
        Balancer::Hash { consistent: false }
    } else {
        panic!("{file}: cannot tell which balancer recorded it");
    }
}

#[test]
fn recorded_nginx_traces() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| {
                e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                    .path()
            })
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    files.sort();
    let mut checked = 0;
    for path in &files {
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("?");
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let n = check_trace(balancer_of(&text, file), &text, file);
        eprintln!("{file}: all {n} requests pick what nginx picked");
        checked += n;
    }
    eprintln!(
        "{} traces, {checked} recorded requests checked",
        files.len()
    );
}

/// Worked out by hand from nginx's formulas (three servers of weight 1 on 127.0.0.1:19801-3).
/// ip_hash, 192.168.1.x: 89 -> (89*113+192)%6271 = 3978 -> (3978*113+168)%6271 = 4441 ->
/// (4441*113+1)%6271 = 154; 154 % 3 = 1, the second server. The `hash` and `consistent`
/// lines follow crc32 of the key (`(crc32(key) >> 16) & 0x7fff`; the ketama point).
const BY_HAND: &[(&str, Balancer, &str)] = &[
    (
        "# server 127.0.0.1:19801 weight=1\n# server 127.0.0.1:19802 weight=1\n\
         # server 127.0.0.1:19803 weight=1\n\
         192.168.1.10\t127.0.0.1:19802\n10.0.0.1\t127.0.0.1:19801\n\
         10.0.0.200\t127.0.0.1:19801\n172.16.5.4\t127.0.0.1:19802\n8.8.8.8\t127.0.0.1:19803\n",
        Balancer::IpHash,
        "ip_hash (by hand)",
    ),
    (
        "# server 127.0.0.1:19801 weight=1\n# server 127.0.0.1:19802 weight=2\n\
         # server 127.0.0.1:19803 weight=3\n192.168.1.10\t127.0.0.1:19803\n",
        Balancer::IpHash,
        "ip_hash weighted (by hand)",
    ),
    (
        "# server 127.0.0.1:19801 weight=1\n# server 127.0.0.1:19802 weight=1\n\
         # server 127.0.0.1:19803 weight=1\n\
         /a\t127.0.0.1:19802\n/b\t127.0.0.1:19803\nuser42\t127.0.0.1:19801\n",
        Balancer::Hash { consistent: false },
        "hash (by hand)",
    ),
    (
        "# server 127.0.0.1:19801 weight=1\n# server 127.0.0.1:19802 weight=1\n\
         # server 127.0.0.1:19803 weight=1\n\
         /a\t127.0.0.1:19801\n/b\t127.0.0.1:19803\nuser42\t127.0.0.1:19803\nx\t127.0.0.1:19802\n",
        Balancer::Hash { consistent: true },
        "hash consistent (by hand)",
    ),
];

#[test]
fn hand_computed_traces() {
    for (text, balancer, name) in BY_HAND {
        assert!(check_trace(*balancer, text, name) > 0);
    }
}

#[test]
#[should_panic(expected = "no tab")]
fn malformed_trace_fails() {
    check_trace(
        Balancer::IpHash,
        "# server 127.0.0.1:1 weight=1\n1.2.3.4 127.0.0.1:1\n",
        "bad",
    );
}
