//! Repair where users keep their sessions, on a copy of a projects-like
//! tree (fixtures/claude-code and fixtures/codex copied to a temporary
//! directory):
//! - `repair DIR -o OUTDIR` mirrors every history under DIR at the same
//!   relative path (repaired, or an identical copy when nothing needs it),
//!   never touches DIR, and a second run over OUTDIR changes nothing;
//! - `repair FILE --in-place` keeps a timestamped backup beside FILE,
//!   replaces it with what `repair -o` writes, does nothing to a file with
//!   nothing to repair, and refuses when FILE changes while it works.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// A projects-like tree: `<tmp>/sessions/{claude-code,codex}/…`.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let sessions = t.path().join("sessions");
    for app in ["claude-code", "codex"] {
        for e in walkdir::WalkDir::new(root().join("fixtures").join(app)) {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root().join("fixtures")).unwrap();
            let to = sessions.join(rel);
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&to).unwrap();
            } else {
                std::fs::copy(e.path(), &to).unwrap();
            }
        }
    }
    (t, sessions)
}

/// Relative path → fingerprint, for every file under `dir`.
fn snapshot(dir: &Path) -> Vec<(String, Option<(String, std::time::SystemTime)>)> {
    let mut v: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                fingerprint(e.path()),
            )
        })
        .collect();
    v.sort();
    v
}

fn histories(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.ends_with(".jsonl") || p.ends_with(".json"))
        .collect()
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

#[test]
fn a_directory_is_repaired_into_a_mirrored_tree() {
    let (t, sessions) = tree();
    let before = snapshot(&sessions);
    let out = t.path().join("repaired");
    let log = t.path().join("run.log.json");
    let o = run(&[
        "repair",
        "--format",
        "json",
        sessions.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    // The input tree is untouched, byte for byte and mtime.
    assert_eq!(snapshot(&sessions), before);
    // Every history is mirrored at its relative path.
    assert_eq!(histories(&out), histories(&sessions));
    // And nothing else is left there: no scratch folder of a settle pass,
    // no copy a pass wrote, no temporary file.
    let entries = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = walkdir::WalkDir::new(d)
            .into_iter()
            .map(|e| {
                e.unwrap()
                    .path()
                    .strip_prefix(d)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        v.sort();
        v
    };
    let input = entries(&sessions);
    let stray: Vec<String> = entries(&out)
        .into_iter()
        .filter(|e| !input.contains(e))
        .collect();
    assert!(stray.is_empty(), "left in the output tree: {stray:?}");
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), histories(&sessions).len());
    assert!(doc["errors"].as_array().unwrap().is_empty(), "{doc:#}");
    // One log for the run: the same document.
    let logged: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(logged, doc);
    let mut edited = 0;
    for rep in files {
        let input = Path::new(rep["input"].as_str().unwrap());
        let output = Path::new(rep["output"].as_str().unwrap());
        assert_eq!(
            output.strip_prefix(&out).unwrap(),
            input.strip_prefix(&sessions).unwrap()
        );
        if rep["edits"].as_array().unwrap().is_empty() {
            assert_eq!(
                std::fs::read(input).unwrap(),
                std::fs::read(output).unwrap(),
                "{} has nothing to repair: copied as it is",
                input.display()
            );
        } else {
            edited += 1;
        }
    }
    // The Codex fixtures alone have eight files to repair.
    assert!(edited >= 8, "{edited} files repaired");
    // A second run over the mirror changes nothing.
    let again = t.path().join("again");
    let o = run(&[
        "repair",
        "--format",
        "json",
        out.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    for rep in doc["files"].as_array().unwrap() {
        assert!(
            rep["edits"].as_array().unwrap().is_empty(),
            "second repair edits {}: {:#}",
            rep["input"],
            rep["edits"]
        );
    }
    let (a, b): (Vec<_>, Vec<_>) = (snapshot(&out), snapshot(&again));
    assert_eq!(
        a.iter()
            .map(|(p, f)| (p, f.as_ref().map(|x| &x.0)))
            .collect::<Vec<_>>(),
        b.iter()
            .map(|(p, f)| (p, f.as_ref().map(|x| &x.0)))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_directory_repair_refuses_to_write_into_itself_or_over_a_tree() {
    let (t, sessions) = tree();
    let before = snapshot(&sessions);
    let inside = sessions.join("repaired");
    let o = run(&[
        "repair",
        sessions.to_str().unwrap(),
        "-o",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("inside or over the input directory"),
        "{}",
        stderr(&o)
    );
    let o = run(&["repair", sessions.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let full = t.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep.txt"), "mine").unwrap();
    let o = run(&[
        "repair",
        sessions.to_str().unwrap(),
        "-o",
        full.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("pass --force"), "{}", stderr(&o));
    assert_eq!(snapshot(&sessions), before);
}

#[test]
fn in_place_keeps_a_backup_and_writes_what_a_copy_would_be() {
    let (t, sessions) = tree();
    let file = sessions.join("codex/orphan-tool-call/middle-output-deleted.jsonl");
    let original = std::fs::read(&file).unwrap();
    let count = || std::fs::read_dir(file.parent().unwrap()).unwrap().count();
    let files_before = count();
    // What `repair -o` writes, for comparison.
    let copy = t.path().join("copy.jsonl");
    let o = run(&[
        "repair",
        file.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(&[
        "repair",
        "--format",
        "json",
        "--in-place",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rep = json(&o);
    assert_eq!(rep["edits"].as_array().unwrap().len(), 1, "{rep:#}");
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&copy).unwrap());
    let backup = PathBuf::from(rep["backup"].as_str().unwrap());
    assert_eq!(backup.parent(), file.parent());
    let name = backup.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("middle-output-deleted.jsonl.chatfsck-backup-") && name.ends_with('Z'),
        "{name}"
    );
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    // Nothing else was left beside it (no temporary file).
    assert_eq!(count(), files_before + 1);
    // A second in-place repair changes nothing and keeps no new backup.
    let fp = fingerprint(&file);
    let o = run(&[
        "repair",
        "--format",
        "json",
        "--in-place",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rep = json(&o);
    assert!(rep["edits"].as_array().unwrap().is_empty());
    assert!(rep.get("backup").is_none());
    assert_eq!(fingerprint(&file), fp);
    assert_eq!(count(), files_before + 1);
}

#[test]
fn in_place_leaves_a_healthy_file_alone() {
    let (_t, sessions) = tree();
    for f in [
        "codex/healthy/rollout.jsonl",
        "claude-code/healthy/linear.jsonl",
    ] {
        let file = sessions.join(f);
        let fp = fingerprint(&file);
        let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stdout(&o).contains("nothing was written"), "{}", stdout(&o));
        assert_eq!(fingerprint(&file), fp, "{f}");
        assert_eq!(
            std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
            std::fs::read_dir(root().join("fixtures").join(f).parent().unwrap())
                .unwrap()
                .count()
        );
    }
}

#[test]
fn in_place_refuses_a_file_that_changes_while_it_works() {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_t, sessions) = tree();
    let file = sessions.join("codex/torn-tail/torn-last-line.jsonl");
    // The client appends while the repair runs: first a newline after the
    // torn line, as Codex does, then events.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let started = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (file, stop, started) = (file.clone(), stop.clone(), started.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .unwrap();
            f.write_all(b"\n").unwrap();
            while !stop.load(Ordering::SeqCst) {
                f.write_all(br#"{"timestamp":"2026-05-11T11:21:00.000Z","type":"event_msg","payload":{"type":"token_count"}}"#).unwrap();
                f.write_all(b"\n").unwrap();
                started.store(true, Ordering::SeqCst);
                // Often enough that no repair fits between two writes.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        })
    };
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("changed while it was being repaired"), "{err}");
    assert!(err.contains("nothing was replaced"), "{err}");
    // Everything the client wrote is still there; no backup or temporary
    // file is left beside it.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("\"token_count\"}}\n"));
    let beside: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside, vec!["torn-last-line.jsonl".to_string()]);
}

#[test]
fn in_place_is_explicit() {
    let (_t, sessions) = tree();
    let file = sessions.join("codex/torn-tail/torn-last-line.jsonl");
    let fp = fingerprint(&file);
    // Without --in-place and without -o, nothing is written.
    let o = run(&["repair", file.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let o = run(&["repair", "--in-place", "--dry-run", file.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let o = run(&["repair", "--in-place", sessions.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a file"), "{}", stderr(&o));
    assert_eq!(fingerprint(&file), fp);
}

#[test]
fn in_place_refuses_a_database() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("app.db");
    let src = walkdir::WalkDir::new(root().join("fixtures"))
        .into_iter()
        .map(Result::unwrap)
        .find(|e| e.path().extension().is_some_and(|x| x == "db"))
        .expect("a SQLite fixture");
    std::fs::copy(src.path(), &db).unwrap();
    let fp = fingerprint(&db);
    let o = run(&["repair", "--in-place", db.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("SQLite database"), "{}", stderr(&o));
    assert_eq!(fingerprint(&db), fp);
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
}
