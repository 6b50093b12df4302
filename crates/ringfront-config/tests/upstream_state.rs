//! `state FILE` in an upstream (nginx Plus): the servers come from the file, which may not
//! exist yet; `server` lines beside it and a group without a `zone` are refused.

use std::path::{Path, PathBuf};

use ringfront_config::{parse_str, MemoryHost};

const STATE: &str = "/t/u.state";

fn conf(body: &str) -> String {
    format!(
        "events {{}}\nhttp {{\nupstream u {{\n{body}\n}}\n\
         server {{ listen 127.0.0.1:1; location / {{ proxy_pass http://u; }} }}\n}}\n"
    )
}

fn parse(body: &str, state: Option<&str>) -> Result<ringfront_config::Config, String> {
    let mut host = MemoryHost::default();
    if let Some(text) = state {
        host = host.file(STATE, text);
    }
    parse_str(&conf(body), Path::new("/t/m.conf"), &host).map_err(|e| e.to_string())
}

#[test]
fn the_servers_come_from_the_state_file() {
    let text = "server 127.0.0.1:81 weight=3 max_fails=2 fail_timeout=5s;\n\
                server 127.0.0.1:82 backup down;\n\
                server 127.0.0.1:83 drain;\n";
    let cfg = parse("zone u 64k;\nstate /t/u.state;", Some(text)).unwrap();
    let up = cfg.upstream("u").unwrap();
    assert_eq!(up.state, Some(PathBuf::from(STATE)));
    assert_eq!(up.servers.len(), 3);
    assert_eq!(up.servers[0].weight, 3);
    assert_eq!(up.servers[0].max_fails, 2);
    assert_eq!(up.servers[0].fail_timeout.as_secs(), 5);
    assert!(up.servers[1].backup && up.servers[1].down && !up.servers[1].drain);
    assert!(up.servers[2].drain && !up.servers[2].down);
    assert_eq!(up.servers[1].origin.file, PathBuf::from(STATE));
    assert_eq!(up.servers[1].origin.line, 2);
}

#[test]
fn a_missing_state_file_is_an_empty_group() {
    let cfg = parse("zone u 64k;\nstate /t/u.state;", None).unwrap();
    let up = cfg.upstream("u").unwrap();
    assert!(up.servers.is_empty());
    assert!(cfg.upstream("u").unwrap().state.is_some());
}

#[test]
fn state_errors() {
    let e = |body: &str, state: Option<&str>| parse(body, state).unwrap_err();
    assert_eq!(
        e("zone u 64k;\nserver 127.0.0.1;\nstate /t/u.state;", None),
        "\"state\" directive is incompatible with \"server\" in /t/m.conf:6"
    );
    assert_eq!(
        e("state /t/u.state;", None),
        "\"state\" requires upstream \"u\" to be in shared memory in /t/m.conf:4"
    );
    assert_eq!(
        e("zone u 64k;\nstate /t/u.state;\nstate /t/u.state;", None),
        "\"state\" directive is duplicate in /t/m.conf:6"
    );
    assert_eq!(
        e("zone u 64k;\nstate /t/u.state;", Some("keepalive 2;\n")),
        "\"keepalive\" directive is not allowed here in /t/u.state:1"
    );
    assert_eq!(
        e(
            "zone u 64k;\nstate /t/u.state;",
            Some("server 127.0.0.1 weight=x;\n")
        ),
        "invalid parameter \"weight=x\" in /t/u.state:1"
    );
    assert_eq!(
        e("zone u 64k;\nstate /t/u.state;", Some("server 127.0.0.1")),
        "unexpected end of file, expecting \";\" or \"}\" in /t/u.state:1"
    );
}
