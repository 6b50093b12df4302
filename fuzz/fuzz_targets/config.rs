//! cargo-fuzz target: see `check_config` in `fuzz/checks/config.rs` for the invariants.
#![no_main]

#[path = "../checks/config.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_config(data));
