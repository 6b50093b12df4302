//! cargo-fuzz target: see `check_chunked` in `fuzz/checks/http.rs` for the invariants.
#![no_main]

#[path = "../checks/http.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_chunked(data));
