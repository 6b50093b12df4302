//! Loading through a [`Host`]: includes, globs and host names from a [`MemoryHost`] read the
//! same as from the machine, with the same messages, and never reach the disk.

mod common;

use std::net::SocketAddr;
use std::path::Path;

use common::{disk, temp_dir, write};
use ringfront_config::{load_with, parse_str, Config, ConfigError, Host, MemoryHost, OsHost};

const MAIN: &str = "/m/conf/nginx.conf";

fn parse(text: &str, host: &dyn Host) -> Result<Config, ConfigError> {
    parse_str(text, Path::new(MAIN), host)
}

fn ports(cfg: &Config) -> Vec<u16> {
    let listens = cfg.http.servers.iter().map(|s| s.listens[0].addr.port());
    listens.collect()
}

#[test]
fn include_glob_through_the_memory_host() {
    let host = MemoryHost::new()
        .file("/m/conf/conf.d/b.conf", "server { listen 8082; }\n")
        .file("/m/conf/conf.d/a.conf", "server { listen 8081; }\n")
        .file("/m/conf/conf.d/.hidden.conf", "not nginx;\n")
        .file("/m/conf/conf.d/readme.txt", "not matched;\n")
        .file("/m/conf/conf.d/deeper/c.conf", "not matched either;\n")
        .file("/m/conf/events.conf", "events {}\n");
    let text = "include events.conf;\nhttp {\n    include conf.d/*.conf;\n}\n";
    let cfg = parse(text, &host).unwrap();
    assert_eq!(
        ports(&cfg),
        [8081, 8082],
        "sorted, dot files and subfolders left out"
    );
    let server = &cfg.http.servers[1];
    assert_eq!(server.origin.file, Path::new("/m/conf/conf.d/b.conf"));
    assert_eq!(server.origin.line, 1);
}

#[test]
fn missing_include_reads_as_nginx_with_file_and_line() {
    let text = "events {}\ninclude missing.conf;\n";
    let err = parse(text, &MemoryHost::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "open() \"/m/conf/missing.conf\" failed (2: No such file or directory) in /m/conf/nginx.conf:2"
    );
    // The machine says the same of a file it does not have.
    let on_disk = parse_str(
        text,
        Path::new("/nonexistent-ringfront/nginx.conf"),
        &OsHost,
    );
    assert_eq!(
        on_disk.unwrap_err().to_string(),
        "open() \"/nonexistent-ringfront/missing.conf\" failed (2: No such file or directory) in /nonexistent-ringfront/nginx.conf:2"
    );
}

#[test]
fn include_cycle_through_the_memory_host() {
    let host = MemoryHost::new()
        .file("/m/conf/a.conf", "include b.conf;\n")
        .file("/m/conf/b.conf", "\ninclude a.conf;\n");
    let err = parse("include a.conf;\n", &host).unwrap_err();
    assert_eq!(
        err.to_string(),
        "include cycle: \"/m/conf/a.conf\" includes itself in /m/conf/b.conf:2"
    );
}

#[test]
fn bad_include_pattern_reads_the_same_on_both_hosts() {
    let text = "include conf.d/[.conf;\n";
    let memory = parse(text, &MemoryHost::new()).unwrap_err().to_string();
    let os = parse(text, &OsHost).unwrap_err().to_string();
    assert_eq!(memory, os);
    assert_eq!(
        memory,
        "invalid include pattern \"/m/conf/conf.d/[.conf\": invalid range pattern in /m/conf/nginx.conf:1"
    );
}

#[test]
fn server_host_name_resolves_through_the_memory_host() {
    let ips = ["10.1.0.2".parse().unwrap(), "10.1.0.1".parse().unwrap()];
    let host = MemoryHost::new().name("app.internal", &ips);
    let text = "events {}\nhttp {\n    upstream u {\n        server app.internal:9001;\n    }\n}\n";
    let cfg = parse(text, &host).unwrap();
    let addrs = &cfg.upstream("u").unwrap().servers[0].addrs;
    let want: Vec<SocketAddr> = vec![
        "10.1.0.2:9001".parse().unwrap(),
        "10.1.0.1:9001".parse().unwrap(),
    ];
    assert_eq!(addrs, &want, "the resolver's order");
}

#[test]
fn failed_resolution_reads_as_before() {
    let text =
        "events {}\nhttp {\n    upstream u {\n        server nowhere.internal:9001;\n    }\n}\n";
    let err = parse(text, &MemoryHost::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "host not found in upstream \"nowhere.internal:9001\" in /m/conf/nginx.conf:4"
    );
    // A name with no addresses is not found either.
    let empty = MemoryHost::new().name("nowhere.internal", &[]);
    assert_eq!(parse(text, &empty).unwrap_err(), err);
}

#[test]
fn the_memory_host_never_reads_the_disk() {
    let dir = temp_dir("memory-host");
    let main = write(&dir, "nginx.conf", "events {}\ninclude real.conf;\n");
    write(&dir, "real.conf", "worker_processes 2;\n");
    assert!(load_with(&main, &disk()).is_ok(), "the files are there");

    let err = load_with(&main, &MemoryHost::new()).unwrap_err();
    let missing = format!(
        "open() \"{}\" failed (2: No such file or directory)",
        main.display()
    );
    assert_eq!(err.to_string(), missing);

    let text = "events {}\ninclude real.conf;\ninclude *.conf;\n";
    let err = parse_str(text, &main, &MemoryHost::new()).unwrap_err();
    assert!(err.message.starts_with("open() "), "{err}");
    let globbed = "events {}\ninclude *.conf;\n";
    assert!(
        parse_str(globbed, &main, &MemoryHost::new()).is_ok(),
        "the glob matches nothing"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
