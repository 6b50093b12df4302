//! `proxy_bind` against real nginx on the same configuration: an address at server level
//! inherited, a location's own, `off`, `transparent` (the tests run as root, so
//! `IP_TRANSPARENT` is allowed), one with variables (including `$remote_port`), and an
//! invalid value from a variable (logged, no bind). The upstream is a server of the same
//! proxy that answers with the address the connection came from.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16, inner: u16) -> String {
    fill(
        r#"worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        proxy_bind 127.0.0.2;
        location / {
            proxy_bind 127.0.0.1;
            proxy_pass http://127.0.0.1:{INNER}/;
        }
        location /inherit {
            proxy_pass http://127.0.0.1:{INNER}/;
        }
        location /transparent {
            proxy_bind 127.0.0.5 transparent;
            proxy_pass http://127.0.0.1:{INNER}/;
        }
        location /off {
            proxy_bind off;
            proxy_pass http://127.0.0.1:{INNER}/;
        }
        location /var {
            proxy_bind $arg_b;
            proxy_pass http://127.0.0.1:{INNER}/;
        }
        location /port {
            proxy_bind 127.0.0.3:$remote_port;
            proxy_pass http://127.0.0.1:{INNER}/port;
            add_header X-Client-Port $remote_port;
        }
    }
    server {
        listen 127.0.0.1:{INNER};
        location / {
            return 200 "$remote_addr";
        }
        location /port {
            return 200 "$remote_addr $remote_port";
        }
    }
}
"#,
        &[("PORT", p.to_string()), ("INNER", inner.to_string())],
    )
}

const PATHS: &[&str] = &[
    "/",
    "/inherit",
    "/off",
    "/transparent",
    "/var?b=127.0.0.4",
    "/var?b=",
    "/var?b=nonsense",
    "/inherit",
    "/",
];

fn answers(p: u16) -> Vec<String> {
    let mut all: Vec<String> = PATHS
        .iter()
        .map(|path| {
            let mut c = Client::connect(("127.0.0.1", p));
            let r = c.request("GET", path, &[], b"");
            format!("{} {}", r.status, r.text())
        })
        .collect();
    // The upstream connection came from the client's own port.
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/port", &[], b"");
    let client_port = r.header("X-Client-Port").unwrap_or("?").to_string();
    all.push(r.text().replace(&client_port, "CLIENT_PORT"));
    all
}

#[test]
fn proxy_bind_matches_nginx() {
    let (nginx, rf, np, rp) = common::nginx_and_ringfront(|p| config(p, common::port()));
    let n = answers(np);
    let r = answers(rp);
    common::assert_same("proxy_bind", &n, &r);
    assert_eq!(
        n,
        [
            "200 127.0.0.1",
            "200 127.0.0.2",
            "200 127.0.0.1",
            "200 127.0.0.5",
            "200 127.0.0.4",
            "200 127.0.0.1",
            "200 127.0.0.1",
            "200 127.0.0.2",
            "200 127.0.0.1",
            "127.0.0.3 CLIENT_PORT",
        ]
    );
    let line = "invalid local address \"nonsense\"";
    assert!(
        rf.wait_for_stderr(line, std::time::Duration::from_secs(5)),
        "ringfront: {line}"
    );
    let logged = nginx.error_log_contents().contains(line)
        || nginx.stderr_lines().iter().any(|l| l.contains(line));
    assert!(logged, "nginx: {line}");
}
