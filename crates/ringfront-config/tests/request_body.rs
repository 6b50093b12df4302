//! `proxy_request_buffering`, `client_body_buffer_size`, `client_body_in_file_only` and
//! `client_body_temp_path` as the model holds them: defaults, inheritance, nginx's load
//! errors (wording checked against `nginx -t` 1.22).

mod common;

use std::path::PathBuf;

use common::{http, parse};
use ringfront_config::{InFileOnly, TempPath};

#[test]
fn defaults_and_inheritance() {
    let cfg = http(
        "client_body_temp_path /var/body 1 2;\nproxy_request_buffering off;\n\
         server {\n location / {}\n \
         location /f { client_body_in_file_only clean; client_body_buffer_size 2k; \
         proxy_request_buffering on; proxy_http_version 1.1; }\n \
         location /k { client_body_in_file_only on; client_body_temp_path tmp; }\n}",
    );
    let locs = &cfg.http.servers[0].locations;
    let d = &locs[0].settings.request_body;
    assert!(!d.buffering, "inherited from http");
    assert_eq!(
        (d.buffer_size, d.in_file_only),
        (16 * 1024, InFileOnly::Off)
    );
    assert_eq!(
        d.temp_path,
        TempPath {
            dir: PathBuf::from("/var/body"),
            levels: vec![1, 2]
        }
    );
    assert!(
        !d.chunked_streams,
        "nginx's default proxy_http_version is 1.0"
    );
    let f = &locs[1].settings.request_body;
    assert!(f.buffering && f.chunked_streams);
    assert_eq!((f.buffer_size, f.in_file_only), (2048, InFileOnly::Clean));
    let k = &locs[2].settings.request_body;
    assert_eq!(k.in_file_only, InFileOnly::On);
    assert!(k.temp_path.dir.ends_with("tmp") && k.temp_path.dir.is_absolute());
    assert!(k.temp_path.levels.is_empty());
    let plain = http("server {\n location / {}\n}");
    let p = &plain.http.servers[0].locations[0].settings.request_body;
    assert!(p.buffering);
    assert!(
        p.temp_path.dir.ends_with("client_body_temp"),
        "under the prefix"
    );
}

#[test]
fn nginx_load_errors() {
    let e = |line: &str| {
        let conf = format!("events {{}}\nhttp {{\n{line}\n}}");
        parse(&conf).unwrap_err().to_string()
    };
    assert_eq!(
        e("client_body_in_file_only bad;"),
        "invalid value \"bad\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("client_body_temp_path /tmp/x 1 2 3 4;"),
        "invalid number of arguments in \"client_body_temp_path\" directive in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("client_body_buffer_size 1q;"),
        "\"client_body_buffer_size\" directive invalid value in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("proxy_request_buffering maybe;"),
        "invalid value \"maybe\" in \"proxy_request_buffering\" directive, \
         it must be \"on\" or \"off\" in /t/conf/x.conf:3"
    );
    assert!(e("client_body_temp_path a;\nclient_body_temp_path b;")
        .starts_with("\"client_body_temp_path\" directive is duplicate in "));
}
