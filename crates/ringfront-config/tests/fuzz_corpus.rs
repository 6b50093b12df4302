//! Replays the committed fuzz corpus (`fuzz/corpus/config`)
//! through the same invariants as the cargo-fuzz targets, on stable and without
//! libFuzzer, so every CI run re-checks every input that once found a bug.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/config.rs"]
mod checks;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
}

/// Runs `check` on every corpus file of `target`, then fails naming every file that failed.
fn replay(target: &str, check: fn(&[u8])) {
    let failed: Vec<String> = corpus(target)
        .into_iter()
        .filter(|path| {
            let data = std::fs::read(path).expect("read corpus file");
            std::panic::catch_unwind(|| check(&data)).is_err()
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{target}: invariants broken by {failed:#?}"
    );
}

#[test]
fn config_corpus() {
    replay("config", checks::check_config);
}
