//! `sticky route` with backups (nginx 1.29.6; nginx 1.22 has no sticky, so there is no
//! differential oracle, the expectations are upstream_sticky_route.t's): nginx looks the
//! server id up on the list the request is on, so a request whose primary is out goes to
//! the backup with the same id, on every request and both workers; an id only a backup has
//! is not reached while a primary is alive.

mod common;

use common::{addr, fill, port, served_by};
use ringfront_testkit::{http::Client, Backend, Ringfront};

fn config(p: u16, primaries: &[String], backups: &[String]) -> String {
    let mut servers = String::new();
    for (s, r) in primaries.iter().zip(["a", "b"]) {
        servers.push_str(&format!("server {s} route={r};\n"));
    }
    for (s, r) in backups.iter().zip(["a", "b", "c"]) {
        servers.push_str(&format!("server {s} backup route={r};\n"));
    }
    fill(
        "worker_processes 2;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        {SERVERS}
        sticky route $cookie_x;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://backend; }
    }
}
",
        &[("SERVERS", servers), ("PORT", p.to_string())],
    )
}

fn get(p: u16, cookie: &str) -> u16 {
    let mut c = Client::connect(("127.0.0.1", p));
    served_by(&c.request("GET", "/", &[("Cookie", cookie)], b""))
}

#[test]
fn a_request_whose_primary_is_out_goes_to_the_backup_with_its_id() {
    let backups: Vec<Backend> = (0..2).map(|_| Backend::start()).collect();
    // Nothing listens on the primaries: refused, failed out after one try each.
    let dead = [
        format!("127.0.0.1:{}", port()),
        format!("127.0.0.1:{}", port()),
    ];
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &dead,
        &backups.iter().map(addr).collect::<Vec<_>>(),
    ));
    for _ in 0..10 {
        assert_eq!(get(p, "x=b"), backups[1].port());
        assert_eq!(get(p, "x=a"), backups[0].port());
    }
}

#[test]
fn an_id_only_a_backup_has_is_not_reached_while_a_primary_is_alive() {
    let primaries: Vec<Backend> = (0..2).map(|_| Backend::start()).collect();
    let backups: Vec<Backend> = (0..3).map(|_| Backend::start()).collect();
    let p = port();
    let conf = config(
        p,
        &primaries.iter().map(addr).collect::<Vec<_>>(),
        &backups.iter().map(addr).collect::<Vec<_>>(),
    );
    let _rf = Ringfront::start(&conf);
    let live: Vec<u16> = primaries.iter().map(Backend::port).collect();
    for _ in 0..8 {
        assert!(live.contains(&get(p, "x=c")));
        assert_eq!(get(p, "x=b"), primaries[1].port());
    }
}
