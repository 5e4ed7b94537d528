//! `chatfsck_fuzz::targets::chunk_entry`, under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chatfsck_fuzz::targets::chunk_entry(data));
