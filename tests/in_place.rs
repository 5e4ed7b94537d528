//! `repair FILE --in-place` under races, signals and permissions, on the
//! built binary and a large session:
//! - no write by the session's app is ever lost: a concurrent writer
//!   appends, overwrites one byte, replaces the file by a rename and
//!   touches it across the whole run, up to the instant of the
//!   replacement, and every change ends up in FILE or in a file the run
//!   names in its output;
//! - the repaired file and the backup keep the original's mode and (run
//!   as root) its owner;
//! - an interrupted run leaves the original (and a complete backup, or
//!   none); a killed one's leftovers are swept by the next run.
//!
//! Sizes and counts: `CHATFSCK_RACE_MB` (the session, 4 by default) and
//! `CHATFSCK_RACE_TRIALS` (races per kind of change, 6 by default);
//! `CHATFSCK_RACE_BIN` races another build of chatfsck (an older one, to
//! see a race lose a change) instead of this one.

mod common;
use common::*;

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const NAME: &str = "history.jsonl";
/// A user message whose text the repair keeps verbatim: the one-byte
/// overwrites land in it, one slot each.
const SLOTS: &str = "slots:";
const SLOT_COUNT: usize = 64;

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An OpenAI JSONL conversation of about `mb` MB whose last line is torn
/// (the one thing the repair drops), with the slots line before it.
fn session(mb: usize) -> Vec<u8> {
    let mut out = String::from("{\"role\":\"system\",\"content\":\"You are a coding agent.\"}\n");
    let mut i = 0;
    while out.len() < mb << 20 {
        i += 1;
        out.push_str(&format!(
            "{{\"role\":\"user\",\"content\":\"read file {i} and say what the cache does there\"}}\n\
             {{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"id\":\"call_{i}\",\"type\":\"function\",\"function\":{{\"name\":\"read\",\"arguments\":\"{{\\\"path\\\": \\\"src/{i}.rs\\\"}}\"}}}}]}}\n\
             {{\"role\":\"tool\",\"tool_call_id\":\"call_{i}\",\"content\":\"fn cache_{i}() -> u64 {{ {i} }}\"}}\n\
             {{\"role\":\"assistant\",\"content\":\"It returns {i}.\"}}\n"
        ));
    }
    out.push_str(&format!(
        "{{\"role\":\"user\",\"content\":\"{SLOTS}{}\"}}\n",
        "_".repeat(SLOT_COUNT)
    ));
    out.push_str("{\"role\":\"assistant\",\"content\":\"The cache is wa");
    out.into_bytes()
}

fn spawn_in_place(file: &Path) -> Child {
    let bin = std::env::var_os("CHATFSCK_RACE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_chatfsck")),
        PathBuf::from,
    );
    Command::new(bin)
        .args(["repair", "--format", "json", "--in-place"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A change the writer made, and how to tell it is still somewhere.
#[derive(Debug, Clone)]
enum Change {
    Appended(String),
    Overwrote(usize),
    Replaced(String),
    Touched(SystemTime),
}

impl Change {
    fn found_in(&self, path: &Path) -> bool {
        let Ok(bytes) = std::fs::read(path) else {
            return false;
        };
        match self {
            Change::Appended(m) | Change::Replaced(m) => memfind(&bytes, m.as_bytes()).is_some(),
            Change::Overwrote(slot) => {
                slot_bytes(&bytes).is_some_and(|s| s.get(*slot) == Some(&b'X'))
            }
            Change::Touched(t) => {
                std::fs::metadata(path).is_ok_and(|m| m.modified().unwrap() == *t)
            }
        }
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn slot_bytes(bytes: &[u8]) -> Option<&[u8]> {
    let from = bytes.len().saturating_sub(1 << 16);
    let at = from + memfind(&bytes[from..], SLOTS.as_bytes())? + SLOTS.len();
    Some(&bytes[at..(at + SLOT_COUNT).min(bytes.len())])
}

/// One change to `file`, through its name, as an app makes it.
fn change(file: &Path, kind: usize, tag: &str, slot: usize, touch: SystemTime) -> Change {
    match kind {
        0 => {
            let m = format!("\n{{\"role\":\"user\",\"content\":\"appended {tag}\"}}\n");
            let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
            f.write_all(m.as_bytes()).unwrap();
            Change::Appended(format!("appended {tag}"))
        }
        1 => {
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(file)
                .unwrap();
            let len = f.metadata().unwrap().len();
            let from = len.saturating_sub(1 << 16);
            f.seek(SeekFrom::Start(from)).unwrap();
            let mut tail = vec![0; (len - from) as usize];
            f.read_exact(&mut tail).unwrap();
            let at = memfind(&tail, SLOTS.as_bytes()).expect("the slots line") + SLOTS.len();
            f.seek(SeekFrom::Start(from + (at + slot) as u64)).unwrap();
            f.write_all(b"X").unwrap();
            Change::Overwrote(slot)
        }
        2 => {
            let mut bytes = std::fs::read(file).unwrap();
            let m = format!("replaced {tag}");
            bytes.extend_from_slice(
                format!("\n{{\"role\":\"user\",\"content\":\"{m}\"}}\n").as_bytes(),
            );
            let new = file.with_file_name(".writer-new");
            std::fs::write(&new, &bytes).unwrap();
            std::fs::rename(&new, file).unwrap();
            Change::Replaced(m)
        }
        _ => {
            let f = std::fs::File::open(file).unwrap();
            f.set_modified(touch).unwrap();
            Change::Touched(touch)
        }
    }
}

/// When the writer strikes: so long after the start, or after a file of
/// the run appears, or after one appeared and went, plus a delay.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    After(Duration),
    Appears(&'static str, Duration),
    Gone(&'static str, Duration),
}

#[test]
fn no_change_is_lost_while_repairing_in_place() {
    let mb = env_num("CHATFSCK_RACE_MB", 4);
    let trials = env_num("CHATFSCK_RACE_TRIALS", 6).max(1);
    let base = session(mb);
    let t = tempfile::tempdir().unwrap();
    // How long a run takes, alone.
    let file = t.path().join(NAME);
    std::fs::write(&file, &base).unwrap();
    let start = Instant::now();
    let o = spawn_in_place(&file).wait_with_output().unwrap();
    let alone = start.elapsed();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    eprintln!("{mb} MB: an in-place repair alone takes {alone:?}");
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    let mut n = 0;
    let mut gone = 0;
    let mut lost = Vec::new();
    for kind in 0..4 {
        for trial in 0..trials {
            n += 1;
            // Spread over the run, and over the last milliseconds before
            // the replacement: once the later passes over the copy are
            // done (their scratch folder is gone), the change check reads
            // the file again, the backup is made and the copy takes the
            // file's name, tens of milliseconds in all.
            let trigger = if trial % 3 == 0 {
                let frac = (trial as f64 + 0.5) / trials as f64;
                Trigger::After(alone.mul_f64(0.2 + 0.9 * frac))
            } else {
                gone += 1;
                Trigger::Gone(".chatfsck-", Duration::from_millis(gone * 13 % 80))
            };
            let dir = t.path().join(format!("race-{n}"));
            std::fs::create_dir(&dir).unwrap();
            let file = dir.join(NAME);
            std::fs::write(&file, &base).unwrap();
            let child = spawn_in_place(&file);
            let writer = {
                let (file, dir) = (file.clone(), dir.clone());
                std::thread::spawn(move || {
                    wait_for(&dir, trigger, alone);
                    // Three changes of the kind, a few hundred µs apart.
                    let mut done = Vec::new();
                    for j in 0..3 {
                        let touch = SystemTime::UNIX_EPOCH
                            + Duration::from_secs(1_000_000_000 + (n * 10 + j) as u64);
                        done.push(change(
                            &file,
                            kind,
                            &format!("{n}-{j}"),
                            n % 20 * 3 + j,
                            touch,
                        ));
                        std::thread::sleep(Duration::from_micros(300));
                    }
                    done
                })
            };
            let o = child.wait_with_output().unwrap();
            let done = writer.join().unwrap();
            let said = format!("{}{}", stdout(&o), stderr(&o));
            let outcome = match code(&o) {
                0 => "replaced",
                // Seen after the exchange, which was undone.
                2 if said.contains("had taken its name, undone") => "undone",
                2 if said.contains("changed while it was being repaired") => "changed",
                c => panic!("race {n}: exit {c}: {said}"),
            };
            *outcomes
                .entry(format!(
                    "{} {outcome}",
                    ["append", "overwrite", "rename", "touch"][kind]
                ))
                .or_default() += 1;
            // Where a change may be: the file, or a file the run named.
            let mut places = vec![file.clone()];
            for x in names(&dir) {
                if x == NAME {
                    continue;
                }
                assert!(
                    said.contains(&x),
                    "race {n} ({trigger:?}): {x} is left beside the file, unnamed: {said}"
                );
                places.push(dir.join(&x));
            }
            // A touch is undone by any later change: only the last counts.
            let checked = if kind == 3 { &done[2..] } else { &done[..] };
            for c in checked {
                if !places.iter().any(|p| c.found_in(p)) {
                    lost.push(format!(
                        "race {n} ({trigger:?}, {outcome}): {c:?} is lost; left: {:?}",
                        names(&dir)
                    ));
                }
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    eprintln!("outcomes: {outcomes:?}");
    assert!(
        lost.is_empty(),
        "{} changes lost:\n{}",
        lost.len(),
        lost.join("\n")
    );
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn backup_of(dir: &Path) -> PathBuf {
    let b: Vec<String> = names(dir)
        .into_iter()
        .filter(|x| x.starts_with("history.jsonl.chatfsck-backup-"))
        .collect();
    assert_eq!(b.len(), 1, "{b:?}");
    dir.join(&b[0])
}

#[test]
fn the_repaired_file_and_its_backup_keep_the_mode_and_owner() {
    let base = session(1);
    for m in [0o600, 0o444, 0o640] {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join(NAME);
        std::fs::write(&file, &base).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m)).unwrap();
        let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let backup = backup_of(t.path());
        assert_eq!(std::fs::read(&backup).unwrap(), base);
        assert_ne!(std::fs::read(&file).unwrap(), base);
        assert_eq!(mode(&file), m, "the repaired file of a {m:o} session");
        assert_eq!(mode(&backup), m, "the backup of a {m:o} session");
    }
    // Run as root (as CI runs the tests): a user's session stays theirs.
    if rustix_uid() != 0 {
        eprintln!("not root: the owner is not checked");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join(NAME);
    std::fs::write(&file, &base).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let backup = backup_of(t.path());
    for p in [&file, &backup] {
        let m = std::fs::metadata(p).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "{}", p.display());
        assert_eq!(mode(p), 0o600, "{}", p.display());
    }
}

/// This process's user id (as `/proc/self` is owned).
fn rustix_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([format!("-{sig}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// What an interrupted or killed run may leave: the original, or the
/// repaired file with a complete backup of the original.
fn assert_original_or_replaced(dir: &Path, file: &Path, base: &[u8], what: &str) {
    let now = std::fs::read(file).unwrap();
    let backups: Vec<String> = names(dir)
        .into_iter()
        .filter(|x| x.starts_with("history.jsonl.chatfsck-backup-"))
        .collect();
    if now == base {
        // A backup left in the instant between its link and the
        // replacement is the file itself.
        for b in &backups {
            let (m, f) = (
                std::fs::metadata(dir.join(b)).unwrap(),
                std::fs::metadata(file).unwrap(),
            );
            assert_eq!((m.dev(), m.ino()), (f.dev(), f.ino()), "{what}: {b}");
        }
    } else {
        assert_eq!(backups.len(), 1, "{what}: {:?}", names(dir));
        assert_eq!(
            std::fs::read(dir.join(&backups[0])).unwrap(),
            base,
            "{what}"
        );
        assert!(
            !now.ends_with(b"The cache is wa"),
            "{what}: not the repaired file"
        );
    }
}

/// Moments of a run: a while after its start (reading the file), when
/// the temporary file of its copy appears (writing it), when the copy is
/// under its temporary name (the later passes read it, the change check
/// reads the file again), when the backup appears (the replacement).
const MOMENTS: [Trigger; 4] = [
    Trigger::After(Duration::from_millis(100)),
    Trigger::Appears("..history.jsonl.chatfsck-", Duration::ZERO),
    Trigger::Appears(".history.jsonl.chatfsck-", Duration::ZERO),
    Trigger::Appears("history.jsonl.chatfsck-backup-", Duration::ZERO),
];

/// Wait for `moment` of a run in `dir` (at most four times as long as a
/// run alone takes).
fn wait_for(dir: &Path, moment: Trigger, alone: Duration) {
    let began = Instant::now();
    match moment {
        Trigger::After(d) => std::thread::sleep(d),
        Trigger::Appears(prefix, d) | Trigger::Gone(prefix, d) => {
            let there = || names(dir).iter().any(|x| x.starts_with(prefix));
            while began.elapsed() < alone * 4 && !there() {
                std::hint::spin_loop();
            }
            if matches!(moment, Trigger::Gone(..)) {
                while began.elapsed() < alone * 4 && there() {
                    std::hint::spin_loop();
                }
            }
            std::thread::sleep(d);
        }
    }
}

#[test]
fn an_interrupted_in_place_repair_leaves_the_original() {
    let mb = env_num("CHATFSCK_RACE_MB", 4);
    let base = session(mb);
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join(NAME);
    std::fs::write(&file, &base).unwrap();
    let start = Instant::now();
    let o = spawn_in_place(&file).wait_with_output().unwrap();
    let alone = start.elapsed();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut n = 0;
    let mut seen = std::collections::BTreeSet::new();
    for sig in ["INT", "TERM", "HUP"] {
        for moment in MOMENTS {
            n += 1;
            let dir = t.path().join(format!("signal-{n}"));
            std::fs::create_dir(&dir).unwrap();
            let file = dir.join(NAME);
            std::fs::write(&file, &base).unwrap();
            let child = spawn_in_place(&file);
            wait_for(&dir, moment, alone);
            signal(&child, sig);
            let o = child.wait_with_output().unwrap();
            let what = format!("SIG{sig} {moment:?}");
            match code(&o) {
                130 => assert!(stderr(&o).contains("interrupted"), "{what}"),
                0 => {}
                c => panic!("{what}: exit {c}: {}", stderr(&o)),
            }
            eprintln!("{what}: exit {}", code(&o));
            seen.insert(code(&o));
            assert_original_or_replaced(&dir, &file, &base, &what);
            // Nothing else: no temporary file, no scratch folder.
            for x in names(&dir) {
                assert!(
                    x == NAME || x.starts_with("history.jsonl.chatfsck-backup-"),
                    "{what}: {x} is left"
                );
            }
        }
    }
    assert!(seen.contains(&130), "no signal came during a run: {seen:?}");
    // Killed: what is left is swept by the next run, which then repairs.
    let mut swept = 0;
    for moment in &MOMENTS[1..] {
        n += 1;
        let dir = t.path().join(format!("kill-{n}"));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join(NAME);
        std::fs::write(&file, &base).unwrap();
        let mut child = spawn_in_place(&file);
        wait_for(&dir, *moment, alone);
        child.kill().unwrap();
        child.wait().unwrap();
        let what = format!("SIGKILL {moment:?}");
        // A name that only looks like a leftover, and a live process's:
        // the next run leaves them alone.
        let alike = [
            ".history.jsonl.chatfsck-notapid.tmp".to_string(),
            format!(".history.jsonl.chatfsck-{}.tmp", std::process::id()),
        ];
        for a in &alike {
            std::fs::write(dir.join(a), "not chatfsck's to remove").unwrap();
        }
        assert_original_or_replaced(&dir, &file, &base, &what);
        let left: Vec<String> = names(&dir)
            .into_iter()
            .filter(|x| {
                x != NAME && !x.starts_with("history.jsonl.chatfsck-backup-") && !alike.contains(x)
            })
            .collect();
        eprintln!("{what}: left {left:?}");
        swept += left.len();
        let before = std::fs::read(&file).unwrap();
        let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
        for x in names(&dir) {
            assert!(
                x == NAME || x.starts_with("history.jsonl.chatfsck-backup-") || alike.contains(&x),
                "{what}: {x} is left after the next run"
            );
        }
        for a in &alike {
            assert!(dir.join(a).exists(), "{what}: {a} was removed");
        }
        if before == base {
            assert_ne!(std::fs::read(&file).unwrap(), base, "{what}: not repaired");
        }
    }
    assert!(swept > 0, "no kill left anything to sweep");
}
