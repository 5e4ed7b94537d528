//! Signals timed across the end of a run (issue 35, defect 14): SIGTERM
//! near the end of `lint` or `inspect` printed `error: interrupted` and
//! exited 0. The interrupt handler and the run's own end raced: the run
//! checked a flag the handler sets, found it clear and went on to exit
//! with its result, while the handler, woken a moment later, still said
//! `error: interrupted` before the process was gone. Whenever a signal
//! lands, a run ends one way: exit 130 (README, "Exit codes") after
//! `error: interrupted` alone, or its own result without a word of the
//! signal.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An OpenAI JSON Lines history of about `bytes` bytes: questions, tool
/// calls, their results and answers, all paired (lint finds nothing).
fn session(path: &Path, bytes: usize) {
    let mut out = String::from("{\"role\":\"system\",\"content\":\"You are a coding agent.\"}\n");
    let mut i = 0;
    while out.len() < bytes {
        i += 1;
        out.push_str(&format!(
            "{{\"role\":\"user\",\"content\":\"question {i} about the cache\"}}\n\
             {{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"id\":\"call_{i}\",\"type\":\"function\",\"function\":{{\"name\":\"read\",\"arguments\":\"{{\\\"path\\\": \\\"src/{i}.rs\\\"}}\"}}}}]}}\n\
             {{\"role\":\"tool\",\"tool_call_id\":\"call_{i}\",\"content\":\"fn f{i}() {{}}\"}}\n\
             {{\"role\":\"assistant\",\"content\":\"answer {i}\"}}\n"
        ));
    }
    std::fs::write(path, out).unwrap();
}

/// How a signalled run ended.
#[derive(Debug)]
struct Ended {
    code: Option<i32>,
    /// The signal that ended it (one before the handler was set).
    signal: Option<i32>,
    stderr: String,
    /// Whether it wrote anything to stdout.
    printed: bool,
    /// Whether the signal was sent before the process was gone.
    sent: bool,
}

/// Run chatfsck with `args` and send SIGTERM `delay` after the first byte
/// of its output (`after_output`) or after its start.
fn signalled(args: &[&str], delay: Duration, after_output: bool) -> Ended {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chatfsck"))
        .args(args)
        .current_dir(common::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let mut first = [0u8; 1];
    let mut printed = false;
    let reader = if after_output {
        // Blocks until the run writes its report (or ends).
        printed = out.read(&mut first).is_ok_and(|n| n > 0);
        let rest = std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = out.read_to_end(&mut sink);
            !sink.is_empty()
        });
        Some(rest)
    } else {
        Some(std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = out.read_to_end(&mut sink);
            !sink.is_empty()
        }))
    };
    let wait = if after_output {
        delay
    } else {
        delay.saturating_sub(start.elapsed())
    };
    std::thread::sleep(wait);
    let sent = Command::new("kill")
        .args(["-TERM", &pid])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let status = child.wait().unwrap();
    if let Some(r) = reader {
        printed |= r.join().unwrap();
    }
    use std::os::unix::process::ExitStatusExt;
    Ended {
        code: status.code(),
        signal: status.signal(),
        stderr: errors.join().unwrap(),
        printed,
        sent,
    }
}

/// The one way an interrupted run may end, and the one way a finished one
/// may: never an error with a success code, never a half of each.
fn assert_one_ending(e: &Ended, what: &str) {
    let interrupted = e.stderr.contains("interrupted");
    match e.code {
        Some(130) => assert_eq!(e.stderr.trim_end(), "error: interrupted", "{what}: {e:?}"),
        Some(0 | 1) => assert!(
            !interrupted,
            "{what}: a finished run spoke of a signal: {e:?}"
        ),
        // Before its handler is set, the signal's default action ends a
        // run: it has done nothing yet.
        None => assert!(
            e.signal == Some(15) && !e.printed && e.stderr.is_empty(),
            "{what}: {e:?}"
        ),
        _ => panic!("{what}: {e:?}"),
    }
}

#[test]
fn a_signal_at_the_end_of_lint_or_inspect_exits_one_way() {
    let d = tempfile::tempdir().unwrap();
    let history = d.path().join("session.jsonl");
    // Small enough for inspect's whole report to be written in one piece
    // at the end (its buffer holds 64 KiB), as lint's is.
    session(&history, 40 << 10);
    let path = history.to_str().unwrap();
    let commands: [&[&str]; 2] = [&["lint", path], &["inspect", path]];
    let mut outcomes = std::collections::BTreeMap::new();
    for args in commands {
        // A whole run, for the signals timed from the start.
        let start = Instant::now();
        let o = common::run(args);
        let full = start.elapsed();
        assert_eq!(common::code(&o), 0, "{args:?}: {}", common::stderr(&o));
        assert!(common::stderr(&o).is_empty(), "{}", common::stderr(&o));
        // Right after the report is written (the run's last steps), at
        // steps of 50 µs; then from the start, across the end of the run.
        let mut runs: Vec<(Duration, bool)> = (0..40u32)
            .map(|k| (Duration::from_micros(50 * u64::from(k % 20)), true))
            .collect();
        runs.extend((0..20u32).map(|k| (full.mul_f64(0.3 + 1.2 * f64::from(k) / 20.0), false)));
        for (delay, after_output) in runs {
            let e = signalled(args, delay, after_output);
            let what = format!("{} after {delay:?} (from output: {after_output})", args[0]);
            assert_one_ending(&e, &what);
            *outcomes.entry((args[0], e.code, e.sent)).or_insert(0u32) += 1;
        }
    }
    eprintln!("outcomes (command, exit code, signal sent): {outcomes:?}");
    // The signals met live runs.
    for cmd in ["lint", "inspect"] {
        assert!(
            outcomes.keys().any(|(c, _, sent)| *c == cmd && *sent),
            "{cmd}: every signal came after the end: {outcomes:?}"
        );
    }
}
