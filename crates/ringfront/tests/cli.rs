//! nginx's command line, as nginx's own test harness (Test::Nginx) drives it:
//! `-p DIR/ -c nginx.conf -e error.log`, `-g`, `-t`/`-T`/`-q`, `-v`/`-V`, and the messages a
//! directive ringfront lacks gets.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::port;
use ringfront_testkit::{http, ringfront_binary, TempDir};

fn ringfront(args: &[&str], cwd: &Path) -> Output {
    Command::new(ringfront_binary())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run ringfront")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `nginx.conf` in `dir` with `body` inside `http {}`.
fn write_conf(dir: &Path, main: &str, body: &str) {
    let text = format!("daemon off;\n{main}\nevents {{}}\nhttp {{\n{body}\n}}\n");
    std::fs::write(dir.join("nginx.conf"), text).unwrap();
}

fn wait_for_file(path: &Path) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Starts the binary as Test::Nginx does, from another folder than the prefix.
fn start_like_the_harness(dir: &Path, extra: &[&str]) -> Child {
    let prefix = format!("{}/", dir.display());
    let mut args = vec!["-p", &prefix, "-c", "nginx.conf", "-e", "error.log"];
    args.extend_from_slice(extra);
    Command::new(ringfront_binary())
        .args(&args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringfront")
}

fn stop(child: Child) -> String {
    let _ = Command::new("kill")
        .args(["-QUIT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().expect("wait ringfront");
    stderr(&out)
}

#[test]
fn prefix_takes_relative_pid_and_logs_as_the_harness_needs() {
    let dir = TempDir::new("ringfront-cli");
    let p = port();
    let server = format!(
        "access_log access.log;\nclient_body_temp_path {}/client_body_temp;\n\
         proxy_temp_path {}/proxy_temp;\n\
         server {{ listen 127.0.0.1:{p}; location / {{ return 204; }} }}",
        dir.path().display(),
        dir.path().display()
    );
    write_conf(
        dir.path(),
        "pid nginx.pid;\nerror_log error.log info;",
        &server,
    );
    let child = start_like_the_harness(dir.path(), &[]);
    let pid_file = dir.path().join("nginx.pid");
    assert!(wait_for_file(&pid_file), "no {}", pid_file.display());
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert_eq!(pid.trim(), child.id().to_string());
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 204);
    stop(child);
    let access = std::fs::read_to_string(dir.path().join("access.log")).unwrap();
    assert!(access.contains("\"GET / HTTP/1.1\" 204"), "{access}");
}

#[test]
fn early_errors_go_to_the_e_file_too() {
    let dir = TempDir::new("ringfront-cli");
    std::fs::write(dir.path().join("nginx.conf"), "events {}\nbogus on;\n").unwrap();
    let prefix = format!("{}/", dir.path().display());
    let out = ringfront(
        &["-p", &prefix, "-c", "nginx.conf", "-e", "early.log"],
        Path::new("/"),
    );
    assert_eq!(out.status.code(), Some(1));
    let conf = dir.path().join("nginx.conf");
    let want = format!("unknown directive \"bogus\" in {}:2", conf.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let log = std::fs::read_to_string(dir.path().join("early.log")).unwrap();
    assert!(log.contains("[emerg]") && log.contains(&want), "{log}");
    let out = ringfront(
        &["-p", &prefix, "-c", "nginx.conf", "-e", "stderr"],
        Path::new("/"),
    );
    assert!(stderr(&out).contains(&want));
}

#[test]
fn globals_apply_and_errors_in_them_say_command_line() {
    let dir = TempDir::new("ringfront-cli");
    let p = port();
    let server = format!("server {{ listen 127.0.0.1:{p}; location / {{ return 204; }} }}");
    write_conf(dir.path(), "", &server);
    let child = start_like_the_harness(dir.path(), &["-g", "worker_processes 3; pid run.pid;"]);
    assert!(wait_for_file(&dir.path().join("run.pid")));
    assert!(stop(child).contains("ready: 3 worker(s)"));
    let prefix = format!("{}/", dir.path().display());
    let out = ringfront(
        &["-p", &prefix, "-c", "nginx.conf", "-t", "-g", "bogus;"],
        Path::new("/"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown directive \"bogus\" in command line"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn dump_shows_every_file_read() {
    let dir = TempDir::new("ringfront-cli");
    write_conf(dir.path(), "include main.d/*.conf;", "include extra.conf;");
    std::fs::create_dir(dir.path().join("main.d")).unwrap();
    std::fs::write(dir.path().join("main.d/a.conf"), "worker_processes 1;\n").unwrap();
    std::fs::write(dir.path().join("extra.conf"), "sendfile on;\n").unwrap();
    let conf = dir.path().join("nginx.conf");
    let out = ringfront(&["-T", "-c", &conf.to_string_lossy()], Path::new("/"));
    assert!(out.status.success(), "{}", stderr(&out));
    let dump = String::from_utf8_lossy(&out.stdout);
    let d = dir.path().display();
    let want = format!(
        "# configuration file {d}/nginx.conf:\ndaemon off;\ninclude main.d/*.conf;\n\
         events {{}}\nhttp {{\ninclude extra.conf;\n}}\n\n\
         # configuration file {d}/main.d/a.conf:\nworker_processes 1;\n\n\
         # configuration file {d}/extra.conf:\nsendfile on;\n\n"
    );
    assert_eq!(dump, want);
    assert!(stderr(&out).contains("test is successful"));
    let quiet = ringfront(&["-tq", "-c", &conf.to_string_lossy()], Path::new("/"));
    assert!(quiet.status.success());
    assert_eq!(stderr(&quiet), "");
}

#[test]
fn version_flags_read_like_nginx() {
    let out = ringfront(&["-V"], Path::new("/"));
    assert!(out.status.success());
    let text = stderr(&out);
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("nginx version: ringfront/"), "{text}");
    assert_eq!(lines.next(), Some("TLS SNI support enabled"), "{text}");
    let args = lines.next().unwrap_or_default();
    assert!(args.starts_with("configure arguments: "), "{text}");
    for m in ["charset", "uwsgi", "fastcgi", "ssi"] {
        assert!(
            args.contains(&format!("--without-http_{m}_module")),
            "{m}: {text}"
        );
    }
    for m in [
        "proxy",
        "map",
        "geo",
        "split_clients",
        "rewrite",
        "gzip",
        "limit_req",
        "limit_conn",
        "auth_basic",
    ] {
        assert!(!args.contains(&format!("--without-http_{m}_module")), "{m}");
    }
    assert!(args.contains("--with-http_stub_status_module"));
    assert!(text.contains("--with-http_ssl_module"));
    let out = ringfront(&["-v"], Path::new("/"));
    assert_eq!(stderr(&out).trim(), first);
}

#[test]
fn directives_ringfront_lacks_and_typos_are_told_apart() {
    let dir = TempDir::new("ringfront-cli");
    let conf = dir.path().join("nginx.conf");
    let check = |body: &str| {
        write_conf(dir.path(), "", body);
        stderr(&ringfront(
            &["-t", "-c", &conf.to_string_lossy()],
            Path::new("/"),
        ))
    };
    let at = format!("in {}:5", conf.display());
    let out = check("proxy_cache_path /tmp/c keys_zone=c:1m;");
    assert!(
        out.contains(&format!(
            "[emerg] \"proxy_cache_path\" directive is not supported by ringfront {at}"
        )),
        "{out}"
    );
    let out = check("proxy_cahce_path /tmp/c;");
    assert!(
        out.contains(&format!(
            "[emerg] unknown directive \"proxy_cahce_path\" {at}"
        )),
        "{out}"
    );
    let out = check("client_body_temp_path /tmp/cb 1 2;\nproxy_temp_path /tmp/pt;");
    assert!(out.contains("test is successful"), "{out}");
}

#[test]
fn bad_options_read_like_nginx() {
    let out = ringfront(&["-x"], Path::new("/"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "ringfront: invalid option: \"x\"\n");
    let out = ringfront(&["-c"], Path::new("/"));
    assert_eq!(
        stderr(&out),
        "ringfront: option \"-c\" requires file name\n"
    );
}

#[test]
fn test_and_start_create_the_log_files_as_nginx() {
    let dir = TempDir::new("ringfront-cli");
    let body = "access_log logs/access.log;\nserver { listen 127.0.0.1:1; return 204; }";
    write_conf(dir.path(), "error_log logs/error.log debug;", body);
    let prefix = format!("{}/", dir.path().display());
    let out = ringfront(&["-p", &prefix, "-c", "nginx.conf", "-t"], Path::new("/"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("logs/error.log").is_file());
    assert!(dir.path().join("logs/access.log").is_file());
    let body = "access_log /proc/nope/access.log;\nserver { listen 127.0.0.1:1; return 204; }";
    write_conf(dir.path(), "", body);
    let out = ringfront(&["-p", &prefix, "-c", "nginx.conf", "-t"], Path::new("/"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "[emerg] open() \"/proc/nope/access.log\" failed (2: No such file or directory)"
        ),
        "{}",
        stderr(&out)
    );
}
