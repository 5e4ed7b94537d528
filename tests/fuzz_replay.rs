//! The fuzz targets' inputs, replayed on every `cargo test`: each target's
//! regression inputs (`fuzz/regressions/TARGET`, one per finding fixed),
//! its seeds (`fuzz/seed.py`, from fixtures/) and its committed corpus
//! (`fuzz/corpus/TARGET`), through the targets' own functions
//! (`fuzz/src/targets.rs`, which `fuzz/fuzz_targets/` runs under
//! libFuzzer). Every input must pass as it does under the fuzzer: no
//! panic, no broken repair contract, no report that lets hostile text
//! through, no input that runs for minutes. A failure names the input's
//! file.
//!
//! This is CI's fuzz gate: the test build replays in a few minutes what a
//! libFuzzer build (release, AddressSanitizer) took a quarter of an hour
//! to build for. `fuzz/run.sh --ci` replays the same inputs under
//! AddressSanitizer (the bundled SQLite, the SIMD scanners); the long
//! searches run it (fuzz/README.md).

#[path = "../fuzz/src/lib.rs"]
#[expect(
    dead_code,
    unused_imports,
    reason = "the fuzz crate's library, of which this file uses the targets"
)]
mod chatfsck_fuzz;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use chatfsck_fuzz::targets;

/// An input running longer than this hangs: libFuzzer's replay allows
/// 10 s to a release build; the test build is several times slower.
const HANG: Duration = Duration::from_secs(120);

/// The fuzzer runs targets on an 8 MiB main thread; a debug build's
/// frames are larger, so the replay gives it twice that.
const STACK: usize = 16 << 20;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Set in the process that replays one target: the test of that name
/// runs it in a child process of its own.
const CHILD: &str = "CHATFSCK_FUZZ_REPLAY_CHILD";

/// Run the test `target` of this binary in a child process, as
/// `fuzz/run.sh` runs a target: with `NO_COLOR` (reports rendered to
/// memory must not be coloured, whether or not the test's stdout is a
/// terminal) and alone, so that an abort (a stack overflow) fails this
/// test with the child's output rather than ending every test of the
/// binary.
fn in_child(target: &str) {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", target, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env(SEEDS, seeds())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    };
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{target}: the replay failed ({}):\n{}\n{}",
        out.status,
        tail(&stdout),
        tail(&stderr)
    );
    // The child's summary: how many inputs, the slowest.
    for line in stderr.lines().filter(|l| l.starts_with(target)) {
        eprintln!("{line}");
    }
}

/// Where the child processes find the seeds.
const SEEDS: &str = "CHATFSCK_FUZZ_REPLAY_SEEDS";

/// The seeds, written once per run by `fuzz/seed.py` from fixtures/, by
/// the tests' own process (the children it starts read them).
fn seeds() -> PathBuf {
    if let Some(dir) = std::env::var_os(SEEDS) {
        return PathBuf::from(dir);
    }
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-seeds");
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("python3")
            .arg(root().join("fuzz/seed.py"))
            .arg("--out")
            .arg(&dir)
            .output()
            .expect("python3 runs fuzz/seed.py");
        assert!(
            out.status.success(),
            "fuzz/seed.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .clone()
}

/// Every input of `target`: regression inputs, seeds, committed corpus.
fn inputs(target: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for dir in [
        root().join("fuzz/regressions").join(target),
        seeds().join(target),
        root().join("fuzz/corpus").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .map(|e| e.expect("a readable directory").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        all.extend(files);
    }
    all
}

/// What a panic said.
fn message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// What the replay thread tells the test: an input's start, and how it
/// ended (the outcome's name, or the panic's message).
enum Event {
    Start(usize),
    End(usize, Result<&'static str, String>),
}

/// Run `run` on every input of `target` (in a child process: `in_child`),
/// on a thread of twice the fuzzer's stack size; fail naming each input
/// that panicked, or the one that hung. `run` names how an input fared;
/// the counts are printed, and `must` names an outcome at least a tenth
/// of the inputs must have (a replay where every input ends early checks
/// nothing).
fn replay(target: &'static str, run: fn(&[u8]) -> &'static str, must: &str) {
    if std::env::var_os(CHILD).is_none() {
        in_child(target);
        return;
    }
    let files = inputs(target);
    assert!(
        files.len() >= 10,
        "{target}: only {} inputs to replay: fuzz/corpus/{target} or the seeds are missing",
        files.len()
    );
    let n = files.len();
    let (tx, rx) = mpsc::channel::<Event>();
    let worker_files = files.clone();
    std::thread::Builder::new()
        .name(format!("replay-{target}"))
        .stack_size(STACK)
        .spawn(move || {
            for (i, f) in worker_files.iter().enumerate() {
                if tx.send(Event::Start(i)).is_err() {
                    return;
                }
                let data = std::fs::read(f).expect("a readable input");
                let ran =
                    catch_unwind(AssertUnwindSafe(|| run(&data))).map_err(|p| message(p.as_ref()));
                if tx.send(Event::End(i, ran)).is_err() {
                    return;
                }
            }
        })
        .expect("a replay thread");
    let mut failures = Vec::new();
    let mut fared = BTreeMap::<&str, usize>::new();
    let mut slowest = (Duration::ZERO, 0);
    let mut started = Instant::now();
    let mut current = 0;
    let mut done = 0;
    while done < n {
        match rx.recv_timeout(HANG) {
            Ok(Event::Start(i)) => {
                current = i;
                started = Instant::now();
            }
            Ok(Event::End(i, ran)) => {
                done += 1;
                let took = started.elapsed();
                if took > slowest.0 {
                    slowest = (took, i);
                }
                match ran {
                    Ok(how) => *fared.entry(how).or_default() += 1,
                    Err(why) => failures.push(format!("{}: {why}", files[i].display())),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "{target}: {} has run for over {} s: a hang",
                files[current].display(),
                HANG.as_secs()
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("{target}: the replay thread ended after {done} of {n} inputs")
            }
        }
    }
    eprintln!(
        "{target}: {n} inputs replayed ({fared:?}); the slowest took {:.2} s ({})",
        slowest.0.as_secs_f64(),
        files[slowest.1].display()
    );
    assert!(
        failures.is_empty(),
        "{target}: {} of {n} inputs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        fared.get(must).copied().unwrap_or(0) * 10 >= n,
        "{target}: fewer than a tenth of the inputs were {must}: {fared:?}"
    );
}

#[test]
fn lint_file() {
    replay(
        "lint_file",
        |data| {
            targets::lint_file(data);
            "linted"
        },
        "linted",
    );
}

#[test]
fn repair_file() {
    use chatfsck_fuzz::contract::Outcome;
    replay(
        "repair_file",
        |data| match targets::repair_file(data) {
            None => "unnamed",
            Some(Outcome::Unreadable) => "unreadable",
            Some(Outcome::NotRepaired) => "not repaired",
            Some(Outcome::Repaired(0)) => "clean",
            Some(Outcome::Repaired(_)) => "repaired",
            Some(Outcome::Kept) => "kept",
        },
        "repaired",
    );
}

#[test]
fn chunk_entry() {
    replay(
        "chunk_entry",
        |data| {
            targets::chunk_entry(data);
            "decoded"
        },
        "decoded",
    );
}

#[test]
fn message_rows() {
    replay(
        "message_rows",
        |data| {
            targets::message_rows(data);
            "checked"
        },
        "checked",
    );
}

#[test]
fn trace_messages() {
    replay(
        "trace_messages",
        |data| {
            targets::trace_messages(data);
            "checked"
        },
        "checked",
    );
}
