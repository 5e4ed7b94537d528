//! `chatfsck_fuzz::targets::message_rows`, under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chatfsck_fuzz::targets::message_rows(data));
