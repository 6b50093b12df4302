//! No input makes the loader panic: thousands of generated configurations, from random
//! characters to shuffled fragments of valid ones, must each give a `Config` or an error.

mod common;

use common::parse;

/// A small deterministic generator (no dependency, same inputs on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

const FRAGMENTS: &[&str] = &[
    "events",
    "http",
    "server",
    "upstream",
    "location",
    "listen",
    "server_name",
    "proxy_pass",
    "proxy_set_header",
    "return",
    "error_page",
    "log_format",
    "access_log",
    "error_log",
    "root",
    "worker_processes",
    "worker_cpu_affinity",
    "keepalive",
    "keepalive_timeout",
    "weight=0",
    "weight=3",
    "max_fails=x",
    "fail_timeout=1m30s",
    "backup",
    "down",
    "default_server",
    "backlog=",
    "127.0.0.1",
    "127.0.0.1:9001",
    "[::1]:80",
    "8080",
    "0",
    "65536",
    "http://u",
    "http://127.0.0.1:9/x",
    "https://a",
    "u",
    "=",
    "^~",
    "~",
    "~*",
    "(",
    "/",
    "/a",
    "=200",
    "404",
    "500",
    "off",
    "on",
    "auto",
    "1s",
    "5ms",
    "1y",
    "8k",
    "$host",
    "${uri}",
    "$",
    "${",
    "$nope",
    "\"",
    "'",
    "\\",
    "\\\"",
    "{",
    "}",
    ";",
    ";",
    ";",
    "#",
    "\n",
    " ",
    " ",
    "\t",
    "main",
    "combined",
    "escape=json",
    "types",
    "if",
    "ip_hash",
    "gzip",
    "mime.types",
    "match",
    "status",
    "header",
    "body",
    "!",
    "!~",
    "200-399",
    "health_check",
    "match=m",
    "mandatory",
    "persistent",
    "slow_start=1s",
    "passive_health",
    "check",
    "type=http",
    "interval=0",
    "check_http_send",
    "check_http_expect_alive",
    "http_2xx",
    "check_status",
    "api",
    "write=on",
    "é",
    "\u{0}",
];

fn run(text: &str) {
    let _ = parse(text);
}

#[test]
fn random_characters() {
    let alphabet: Vec<char> = " \n\t;{}#\"'\\$abcdefghijklmnopqrstuvwxyz0123456789:/=~^*.[]()é"
        .chars()
        .collect();
    let mut rng = Lcg(1);
    for _ in 0..3000 {
        let len = rng.next() % 80;
        let text: String = (0..len)
            .map(|_| alphabet[rng.next() % alphabet.len()])
            .collect();
        run(&text);
    }
}

#[test]
fn shuffled_fragments() {
    let mut rng = Lcg(2);
    for _ in 0..5000 {
        let len = rng.next() % 40;
        let mut text = String::new();
        for _ in 0..len {
            text.push_str(rng.pick(FRAGMENTS));
            text.push(' ');
        }
        run(&text);
    }
}

#[test]
fn fragments_inside_valid_blocks() {
    let mut rng = Lcg(3);
    let openings = [
        "events {}\nhttp {\n",
        "events {}\nhttp {\nserver {\n",
        "events {}\nhttp {\nserver {\nlocation / {\n",
        "events {}\nhttp {\nupstream u {\nserver 127.0.0.1;\n",
    ];
    for _ in 0..5000 {
        let mut text = rng.pick(&openings).to_string();
        for _ in 0..rng.next() % 12 {
            text.push_str(rng.pick(FRAGMENTS));
            text.push(' ');
        }
        for _ in 0..rng.next() % 5 {
            text.push_str(rng.pick(&[";", "}", "{", "\n"]));
        }
        run(&text);
    }
}

#[test]
fn deep_nesting_is_an_error() {
    let text = format!(
        "events {{}}\nhttp {{ server {{ {} }} }}",
        "location / {".repeat(500)
    );
    assert!(parse(&text).is_err());
    let text = format!(
        "events {{}}\nhttp {{ server {{ {}{} }} }}",
        "location /a {".repeat(50),
        "}".repeat(50)
    );
    assert!(parse(&text).is_ok());
}
