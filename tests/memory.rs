//! Peak memory: a run holds one conversation at a time, and a
//! conversation costs at most about twice its bytes plus half a KiB per
//! record (the bound bench/README.md states under "Memory"). A history of
//! short records is the worst case for the per-record part: before the
//! model's part lists stopped reserving four parts per message, `lint`
//! took about 1 KiB per record and `diff` over 2 KiB.
//!
//! Peak RSS is measured by GNU time (`/usr/bin/time -f %M`); without it
//! these tests are listed as ignored, never passed unmeasured
//! (`scripts/test-all` installs it).

mod common;

use std::path::Path;
use std::process::Command;

/// Bytes a conversation may take on top of the process's own footprint:
/// twice its size plus this much per record.
const PER_RECORD: u64 = 512;

/// One OpenAI JSONL conversation of short records (a user question, a
/// tool call, its result, an answer; about 110 bytes a line), `target`
/// bytes long. Returns the number of records.
fn short_records(path: &Path, target: usize) -> u64 {
    const WORDS: &[&str] = &[
        "the", "cache", "hit", "rate", "is", "computed", "from", "tokens", "over", "input",
        "shown", "in", "three", "places",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut words = |n: usize| {
        (0..n)
            .map(|_| WORDS[next() % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::from("{\"role\":\"system\",\"content\":\"You are a coding agent.\"}\n");
    let mut records = 1;
    let mut i = 0;
    while out.len() < target {
        i += 1;
        let (q, r, a) = (words(3 + i % 10), words(3 + i % 17), words(3 + i % 9));
        out.push_str(&format!(
            "{{\"role\":\"user\",\"content\":\"{q}\"}}\n\
             {{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"id\":\"call_{i}\",\"type\":\"function\",\"function\":{{\"name\":\"read\",\"arguments\":\"{{\\\"path\\\": \\\"src/{i}.rs\\\"}}\"}}}}]}}\n\
             {{\"role\":\"tool\",\"tool_call_id\":\"call_{i}\",\"content\":\"{r}\"}}\n\
             {{\"role\":\"assistant\",\"content\":\"{a}\"}}\n"
        ));
        records += 4;
    }
    std::fs::write(path, out).unwrap();
    records
}

/// Peak RSS in bytes of chatfsck run with `args`, and its exit code.
fn peak_rss(args: &[&str]) -> (u64, i32) {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "GNU time (/usr/bin/time) is needed to measure peak memory: apt-get install time"
    );
    let bin = env!("CARGO_BIN_EXE_chatfsck");
    let o = Command::new(time)
        .args(["-f", "chatfsck-peak-kib %M"])
        .arg(bin)
        .args(args)
        .current_dir(common::root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("chatfsck-peak-kib "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from GNU time: {err}"));
    // GNU time reports a signal's death as "Command terminated by signal".
    let code = o.status.code().unwrap_or(-1);
    (kib * 1024, code)
}

/// The process's own footprint: the same command on a tiny history.
fn footprint(dir: &Path, cmd: &[&str]) -> u64 {
    let tiny = dir.join("tiny.jsonl");
    std::fs::write(
        &tiny,
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"hello\"}\n",
    )
    .unwrap();
    let tiny = tiny.to_str().unwrap();
    let mut args = cmd.to_vec();
    args.push(tiny);
    if cmd[0] == "diff" {
        args.push(tiny);
    }
    let (rss, code) = peak_rss(&args);
    assert!(code == 0, "{cmd:?} on a tiny history exited {code}");
    rss
}

/// What `inspect` keeps besides the conversation: a timeline row per
/// message (its location, part names, tool ids, a 48-character preview).
const ROW: u64 = 512;

fn check(cmd: &[&str], sides: u64) {
    check_with(cmd, sides, PER_RECORD);
}

fn check_with(cmd: &[&str], sides: u64, per_record: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.jsonl");
    let records = short_records(&path, 8 << 20);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let base = footprint(dir.path(), cmd);
    let p = path.to_str().unwrap();
    let mut args = cmd.to_vec();
    args.push(p);
    if cmd[0] == "diff" {
        args.push(p);
    }
    let (rss, code) = peak_rss(&args);
    assert_eq!(code, 0, "{cmd:?} exited {code}");
    let allowed = base + sides * (2 * bytes + per_record * records);
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    eprintln!(
        "{cmd:?}: {:.1} MiB, {records} records: peak {:.1} MiB (footprint {:.1} MiB), allowed {:.1} MiB",
        mib(bytes),
        mib(rss),
        mib(base),
        mib(allowed)
    );
    assert!(
        rss <= allowed,
        "{cmd:?} on {:.1} MiB ({records} records) peaked at {:.1} MiB; allowed {:.1} MiB \
         ({:.1} MiB footprint + {sides} × (2 × bytes + {per_record} B a record)): {:.0} B a record",
        mib(bytes),
        mib(rss),
        mib(allowed),
        mib(base),
        (rss.saturating_sub(base)) as f64 / records as f64,
    );
}

#[test]
#[cfg_attr(
    not(has_tool = "gnu-time"),
    ignore = "needs GNU time at /usr/bin/time: apt-get install time (scripts/test-all does it)"
)]
fn lint_of_one_long_conversation_stays_within_its_bound() {
    check(&["lint", "--format", "json"], 1);
}

#[test]
#[cfg_attr(
    not(has_tool = "gnu-time"),
    ignore = "needs GNU time at /usr/bin/time: apt-get install time (scripts/test-all does it)"
)]
fn diff_of_a_long_conversation_with_itself_stays_within_two_bounds() {
    check(&["diff", "--format", "json"], 2);
}

#[test]
#[cfg_attr(
    not(has_tool = "gnu-time"),
    ignore = "needs GNU time at /usr/bin/time: apt-get install time (scripts/test-all does it)"
)]
fn inspect_of_one_long_conversation_keeps_a_row_a_message() {
    check_with(&["inspect", "--format", "json"], 1, PER_RECORD + ROW);
}

/// The human tables are written row by row: a table built whole took
/// about 2 KiB a row (165 MiB for this 8 MiB history).
#[test]
#[cfg_attr(
    not(has_tool = "gnu-time"),
    ignore = "needs GNU time at /usr/bin/time: apt-get install time (scripts/test-all does it)"
)]
fn inspect_tables_are_written_row_by_row() {
    check_with(&["inspect"], 1, PER_RECORD + ROW);
    check_with(&["inspect", "--format", "markdown"], 1, PER_RECORD + ROW);
}
