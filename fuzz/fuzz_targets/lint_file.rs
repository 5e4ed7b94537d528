//! `chatfsck_fuzz::targets::lint_file`, under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chatfsck_fuzz::targets::lint_file(data));
