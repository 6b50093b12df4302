//! `include`: in place, in any block, globs sorted, relative to the main file's folder.

mod common;

use common::{disk, temp_dir, write};
use ringfront_config::load_with;

#[test]
fn globs_expand_in_place_sorted_relative_to_main_folder() {
    let dir = temp_dir("glob");
    let main = write(
        &dir,
        "nginx.conf",
        "include main.d/*.conf;\nevents {}\nhttp {\n    include conf.d/*.conf;\n    include nothing.d/*.conf;\n}\n",
    );
    write(&dir, "main.d/workers.conf", "worker_processes 3;\n");
    write(
        &dir,
        "conf.d/b-server.conf",
        "server {\n    listen 8082;\n    include snippets/proxy.conf;\n}\n",
    );
    write(&dir, "conf.d/a-server.conf", "server { listen 8081; }\n");
    write(&dir, "conf.d/.hidden.conf", "this is not nginx;\n");
    write(&dir, "conf.d/readme.txt", "not matched;\n");
    // Relative to the main file's folder even when included from conf.d/.
    write(
        &dir,
        "snippets/proxy.conf",
        "location / {\n    proxy_pass http://127.0.0.1:9001;\n}\n",
    );

    let cfg = load_with(&main, &disk()).unwrap();
    assert_eq!(
        cfg.main.worker_processes,
        ringfront_config::WorkerProcesses::Count(3)
    );
    let ports: Vec<u16> = cfg
        .http
        .servers
        .iter()
        .map(|s| s.listens[0].addr.port())
        .collect();
    assert_eq!(ports, [8081, 8082], "glob results are sorted");
    let loc = &cfg.http.servers[1].locations[0];
    assert_eq!(loc.origin.file, dir.join("snippets/proxy.conf"));
    assert_eq!(loc.origin.line, 1);
    assert!(loc.settings.proxy_pass.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_included_file() {
    let dir = temp_dir("errors");
    let main = write(
        &dir,
        "nginx.conf",
        "events {}\nhttp {\n    include bad.conf;\n}\n",
    );
    write(
        &dir,
        "bad.conf",
        "server {\n    listen 80;\n    bogus on;\n}\n",
    );
    let err = load_with(&main, &disk()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "unknown directive \"bogus\" in {}:3",
            dir.join("bad.conf").display()
        )
    );

    // A `}` closing the including block is an error inside the included file.
    write(&dir, "bad.conf", "server {}\n}\n");
    let err = load_with(&main, &disk()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("unexpected \"}}\" in {}:2", dir.join("bad.conf").display())
    );

    write(&dir, "bad.conf", "include missing.conf;\n");
    let err = load_with(&main, &disk()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "open() \"{}\" failed (2: No such file or directory) in {}:1",
            dir.join("missing.conf").display(),
            dir.join("bad.conf").display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cycles_are_errors_not_overflows() {
    let dir = temp_dir("cycle");
    let main = write(&dir, "nginx.conf", "events {}\ninclude a.conf;\n");
    write(&dir, "a.conf", "include b.conf;\n");
    write(&dir, "b.conf", "include a.conf;\n");
    let err = load_with(&main, &disk()).unwrap_err();
    assert!(err.message.starts_with("include cycle"), "{err}");
    assert_eq!(err.file, Some(dir.join("b.conf")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_mime_types_is_a_noop_but_an_existing_one_is_read() {
    let dir = temp_dir("mime");
    let main = write(
        &dir,
        "nginx.conf",
        "events {}\nhttp {\n    include mime.types;\n}\n",
    );
    assert!(load_with(&main, &disk()).is_ok());
    write(
        &dir,
        "mime.types",
        "types {\n    text/html html htm;\n    image/png png;\n}\n",
    );
    assert!(load_with(&main, &disk()).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
