//! What nginx's command line and test harness need from the loader: `-p` prefix, `-g`
//! directives, the `-e` error log, the disk-buffering directives accepted and ignored with
//! nginx's argument checks, "not supported by ringfront" against `unknown directive`, and
//! `on`/`off` in any case.

mod common;

use std::path::{Path, PathBuf};

use common::{dns, parse, FILE};
use ringfront_config::{load_with_options, Config, ConfigError, LoadOptions, MemoryHost};

fn with(opts: &LoadOptions, text: &str) -> Result<Config, ConfigError> {
    let host = dns().file(FILE, text);
    load_with_options(Path::new(FILE), &host, opts)
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

/// `events {}` and `http { BODY }`, the error if any.
fn http(body: &str) -> Result<Config, ConfigError> {
    parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n"))
}

#[test]
fn disk_buffering_directives_are_accepted_in_nginx_contexts() {
    let ok = "client_body_temp_path /tmp/cb 1 2;\n\
              proxy_temp_path t;\n\
              fastcgi_temp_path t 2;\n\
              uwsgi_temp_path t;\n\
              scgi_temp_path t 1 1 2;\n\
              proxy_max_temp_file_size 0;\n\
              proxy_temp_file_write_size 16k;\n\
              connection_pool_size 512;\n\
              request_pool_size 4k;\n\
              client_body_in_single_buffer On;\n\
              server { listen 127.0.0.1:8080; client_body_temp_path x;\n\
                location / { proxy_temp_path y 1; proxy_max_temp_file_size 1m; return 204; } }";
    if let Err(e) = http(ok) {
        panic!("{e}");
    }
}

#[test]
fn disk_buffering_directives_keep_nginx_argument_checks() {
    let e = |body: &str| http(body).unwrap_err().to_string();
    assert_eq!(
        e("client_body_temp_path;"),
        "invalid number of arguments in \"client_body_temp_path\" directive in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("proxy_temp_path t 1 1 1 1;"),
        "invalid number of arguments in \"proxy_temp_path\" directive in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("proxy_temp_path t 0;"),
        "\"proxy_temp_path\" directive invalid value in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("scgi_temp_path t 5 5 1;"),
        "\"scgi_temp_path\" directive invalid value in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("proxy_max_temp_file_size big;"),
        "\"proxy_max_temp_file_size\" directive invalid value in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("server { location / { connection_pool_size 1k; } }"),
        "\"connection_pool_size\" directive is not allowed here in /t/conf/x.conf:3"
    );
    assert_eq!(
        err("client_body_temp_path x;\nevents {}"),
        "\"client_body_temp_path\" directive is not allowed here in /t/conf/x.conf:1"
    );
}

#[test]
fn nginx_directives_ringfront_lacks_say_so_and_typos_stay_unknown() {
    assert_eq!(
        http("proxy_cache_path /c keys_zone=z:1m;")
            .unwrap_err()
            .to_string(),
        "\"proxy_cache_path\" directive is not supported by ringfront in /t/conf/x.conf:3"
    );
    assert_eq!(
        http("server { sub_filter a b; }").unwrap_err().to_string(),
        "\"sub_filter\" directive is not supported by ringfront in /t/conf/x.conf:3"
    );
    assert_eq!(
        err("events {}\nssl_engine pkcs11;"),
        "\"ssl_engine\" directive is not supported by ringfront in /t/conf/x.conf:2"
    );
    assert_eq!(
        http("proxy_cahce on;").unwrap_err().to_string(),
        "unknown directive \"proxy_cahce\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        http("more_set_headers x;").unwrap_err().to_string(),
        "unknown directive \"more_set_headers\" in /t/conf/x.conf:3"
    );
}

#[test]
fn flags_are_case_insensitive_as_nginx() {
    let c = parse("daemon OFF;\nmaster_process Off;\nevents {}\nhttp { sendfile On; gzip OFF; }")
        .unwrap();
    assert!(!c.main.daemon);
    assert!(!c.main.master_process);
    assert_eq!(
        err("daemon yes;\nevents {}"),
        "invalid value \"yes\" in \"daemon\" directive, it must be \"on\" or \"off\" in /t/conf/x.conf:1"
    );
}

#[test]
fn prefix_moves_pid_and_logs_but_not_includes() {
    let host = MemoryHost::new()
        .file("/t/conf/x.conf", "include more.conf;\nevents {}\n")
        .file(
            "/t/conf/more.conf",
            "pid run/x.pid;\nerror_log logs/e.log;\n",
        );
    let opts = LoadOptions {
        prefix: Some(PathBuf::from("/p")),
        ..LoadOptions::default()
    };
    let c = load_with_options(Path::new("/t/conf/x.conf"), &host, &opts).unwrap();
    assert_eq!(c.main.pid, Some(PathBuf::from("/p/run/x.pid")));
    assert_eq!(
        c.main.error_log[0].path,
        Some(PathBuf::from("/p/logs/e.log"))
    );
    let c = load_with_options(Path::new("/t/conf/x.conf"), &host, &LoadOptions::default()).unwrap();
    assert_eq!(c.main.pid, Some(PathBuf::from("/t/conf/run/x.pid")));
}

#[test]
fn globals_are_read_before_the_file_and_errors_say_command_line() {
    let opts = |g: &str| LoadOptions {
        globals: Some(g.to_string()),
        ..LoadOptions::default()
    };
    let c = with(&opts("worker_processes 3; pid /r/x.pid;"), "events {}\n").unwrap();
    assert_eq!(c.main.pid, Some(PathBuf::from("/r/x.pid")));
    assert_eq!(
        format!("{:?}", c.main.worker_processes),
        "Count(3)".to_string()
    );
    assert_eq!(
        with(
            &opts("worker_processes 2;"),
            "worker_processes 1;\nevents {}\n"
        )
        .unwrap_err()
        .to_string(),
        "\"worker_processes\" directive is duplicate in /t/conf/x.conf:1"
    );
    assert_eq!(
        with(&opts("bogus 1;"), "events {}\n")
            .unwrap_err()
            .to_string(),
        "unknown directive \"bogus\" in command line"
    );
    assert_eq!(
        with(&opts("daemon off"), "events {}\n")
            .unwrap_err()
            .to_string(),
        "unexpected end of file, expecting \";\" or \"}\" in command line"
    );
}

#[test]
fn error_log_flag_is_the_default_error_log() {
    let opts = LoadOptions {
        error_log: Some(PathBuf::from("/p/error.log")),
        ..LoadOptions::default()
    };
    let c = with(&opts, "events {}\n").unwrap();
    assert_eq!(c.main.error_log.len(), 1);
    assert_eq!(
        c.main.error_log[0].path,
        Some(PathBuf::from("/p/error.log"))
    );
    let c = with(&opts, "error_log stderr;\nevents {}\n").unwrap();
    assert_eq!(c.main.error_log[0].path, None);
}
