//! Write a generated conversation dataset and its truth table (the
//! generator of tests/common/dataset.rs, which the tests use too):
//!
//!     cargo run --example gen_dataset -- OUT ROWS [SEED] [FILLER]
//!
//! writes OUT (`.jsonl`: one conversation a line; `.parquet`: `id` and a
//! JSON-text `messages` column; `.nested.parquet`: a nested one) and
//! OUT's truth table beside it (`.truth.tsv`). FILLER: bytes of text per
//! message (default 0), to reach a benchmark's size.

#[path = "../tests/common/dataset.rs"]
mod dataset;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_dataset OUT(.jsonl|.parquet|.nested.parquet) ROWS [SEED] [FILLER]";
    let (Some(out), Some(n)) = (args.first(), args.get(1).and_then(|n| n.parse().ok())) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let seed = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(38);
    let filler = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let rows = dataset::rows(seed, n, filler);
    let stem = if let Some(stem) = out.strip_suffix(".parquet") {
        let nested = stem.ends_with(".nested");
        dataset::write_parquet(&rows, nested, std::path::Path::new(out), 64 * 1024);
        stem
    } else {
        let mut w = std::io::BufWriter::new(std::fs::File::create(out).expect("create the output"));
        for r in &rows {
            w.write_all(r.line.as_bytes()).expect("write");
            w.write_all(b"\n").expect("write");
        }
        w.flush().expect("write");
        out.trim_end_matches(".jsonl")
    };
    let truth = format!("{stem}.truth.tsv");
    std::fs::write(&truth, dataset::truth(&rows)).expect("write the truth table");
}
