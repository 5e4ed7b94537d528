//! Repair, with its contract checked as a property on every input
//! (`chatfsck_fuzz::contract`): the copy is read, gains no finding, is
//! left as it is by a second repair, and keeps every payload (or the log
//! does); a repair that fails writes nothing.
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
    let Some((name, body)) = chatfsck_fuzz::named(data) else {
        return;
    };
    let input = chatfsck_fuzz::save("repair-in", name, body);
    let work = chatfsck_fuzz::scratch().join("repair-out");
    let _ = std::fs::remove_dir_all(&work);
    match chatfsck_fuzz::contract::check(&chatfsck_fuzz::Library, &input, &work) {
        Err(why) => panic!("repair contract broken on {name}: {why}"),
        Ok(Outcome::Kept) => {
            KEPT.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
    }
    let n = RUNS.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        eprintln!("kept the input: {} of {n}", KEPT.load(Ordering::Relaxed));
    }
});
