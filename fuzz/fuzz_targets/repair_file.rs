//! `chatfsck_fuzz::targets::repair_file`, under libFuzzer.
//!
//! A repair whose every copy would be worse keeps the input as it is:
//! that keeps the contract and hides the writer defect behind it, so the
//! target counts such inputs and prints the count as it goes (`kept the
//! input: K of N`, at every power of two of N).
#![no_main]

use std::sync::atomic::{AtomicUsize, Ordering};

use chatfsck_fuzz::contract::Outcome;
use libfuzzer_sys::fuzz_target;

static RUNS: AtomicUsize = AtomicUsize::new(0);
static KEPT: AtomicUsize = AtomicUsize::new(0);

fuzz_target!(|data: &[u8]| {
    let Some(outcome) = chatfsck_fuzz::targets::repair_file(data) else {
        return;
    };
    if matches!(outcome, Outcome::Kept) {
        KEPT.fetch_add(1, Ordering::Relaxed);
    }
    let n = RUNS.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        eprintln!("kept the input: {} of {n}", KEPT.load(Ordering::Relaxed));
    }
});
