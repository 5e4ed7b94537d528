//! `chatfsck_fuzz::targets::trace_messages`, under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chatfsck_fuzz::targets::trace_messages(data));
