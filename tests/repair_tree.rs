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
            // Codex's newer layouts (a cut-short .zst among them) are
            // checked by tests/codex_today.rs.
            if rel.starts_with("codex/zst") || rel.starts_with("codex/paginated") {
                continue;
            }
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

/// The app trees whose other files (`lint` skips them) are copied through:
/// (fixture home, a healthy subset of it, files that must be skipped).
const APP_TREES: &[(&str, &[&str], &[&str])] = &[
    (
        "cline/home",
        &[
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1757844000000",
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1760000300000",
        ],
        &["ui_messages.json", "task_metadata.json"],
    ),
    (
        "roo-code/home",
        &[
            ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/0199c7a0-5a10-7c3e-9b41-2d6f0e8a1c01",
            ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/_index.json",
        ],
        &[
            "ui_messages.json",
            "task_metadata.json",
            "history_item.json",
            "_index.json",
        ],
    ),
    (
        "gemini-cli/home",
        &[
            ".gemini/projects.json",
            ".gemini/tmp/205907310690ed3ad27ab6247b9d95524eda13c835f6f9b2ec653d6428ae8d41",
            ".gemini/tmp/shop-api/chats/session-2026-05-20T09-15-8d2e7b31.jsonl",
            ".gemini/tmp/shop-api/chats/session-2026-05-20T09-22-5e6f7a8b.jsonl",
        ],
        &["projects.json", "session-2025-09-14T10-02-4f1c2a9e.json"],
    ),
    (
        "opencode/home",
        &[".local/share/opencode/storage"],
        &["project", "message", "part", "session"],
    ),
];

/// Copy `rels` (files or folders) of `from` into `to`, keeping their paths.
fn copy_subset(from: &Path, rels: &[&str], to: &Path) {
    for rel in rels {
        for e in walkdir::WalkDir::new(from.join(rel)) {
            let e = e.unwrap();
            let dest = to.join(e.path().strip_prefix(from).unwrap());
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
            } else {
                std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
                std::fs::copy(e.path(), &dest).unwrap();
            }
        }
    }
}

#[test]
fn the_apps_other_files_are_skipped_and_copied_through() {
    for (home, healthy, skipped) in APP_TREES {
        let t = tempfile::tempdir().unwrap();
        let input = t.path().join("in");
        copy_subset(&root().join("fixtures").join(home), healthy, &input);
        // As lint sees the tree: no error, the companion files skipped.
        let (_, lint) = lint_json(input.to_str().unwrap(), &[]);
        assert!(
            lint["errors"].as_array().is_none_or(Vec::is_empty),
            "{home}: {lint:#}"
        );
        let out = t.path().join("out");
        let o = run(&[
            "repair",
            "--format",
            "json",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{home}: {}{}", stdout(&o), stderr(&o));
        let doc = json(&o);
        assert!(
            doc["errors"].as_array().unwrap().is_empty(),
            "{home}: {doc:#}"
        );
        let listed: Vec<&str> = doc["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                assert_eq!(s["copied"], true, "{s}");
                assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
                s["path"].as_str().unwrap()
            })
            .collect();
        for name in *skipped {
            assert!(
                listed.iter().any(|p| p.contains(&format!("/{name}"))),
                "{home}: {name} not listed as skipped: {listed:?}"
            );
        }
        // Everything the app keeps there is in the mirror, so it resumes
        // from it: the skipped files byte for byte.
        assert_eq!(
            snapshot(&input)
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>(),
            snapshot(&out)
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>(),
            "{home}"
        );
        for p in &listed {
            let rel = Path::new(p).strip_prefix(&input).unwrap();
            assert_eq!(
                std::fs::read(p).unwrap(),
                std::fs::read(out.join(rel)).unwrap(),
                "{p}"
            );
        }
        // The human summary says so, and exits 0 as well.
        let again = t.path().join("again");
        let o = run(&[
            "repair",
            input.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{home}: {}{}", stdout(&o), stderr(&o));
        let text = stdout(&o);
        assert!(!text.contains("error:"), "{home}: {text}");
        assert!(text.contains("note: skipped"), "{home}: {text}");
        assert!(
            text.contains(&format!("; {} skipped;", listed.len())),
            "{home}: {text}"
        );
    }
}

#[test]
fn a_damaged_history_of_a_store_never_written_is_still_an_error() {
    // A legacy single-document Gemini CLI recording is read, never
    // rewritten: healthy, it is skipped (above); with an error lint
    // reports, the run says it is not repaired and exits 2.
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    let rel = ".gemini/tmp/205907310690ed3ad27ab6247b9d95524eda13c835f6f9b2ec653d6428ae8d41";
    copy_subset(&root().join("fixtures/gemini-cli/home"), &[rel], &input);
    let file = input
        .join(rel)
        .join("chats/session-2025-09-14T10-02-4f1c2a9e.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // The call's result is lost: an unanswered call.
    let call = &mut doc["messages"][1]["toolCalls"][0];
    call.as_object_mut().unwrap().remove("result").unwrap();
    call["status"] = "executing".into();
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let (_, lint) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(lint["summary"]["errors"], 1, "{lint:#}");
    let out = t.path().join("out");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let doc = json(&o);
    assert!(doc["skipped"].as_array().unwrap().is_empty(), "{doc:#}");
    let errors = doc["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{doc:#}");
    assert_eq!(errors[0]["path"], file.to_str().unwrap());
    assert_eq!(errors[0]["copied"], true);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(
            out.join(rel)
                .join("chats/session-2025-09-14T10-02-4f1c2a9e.json")
        )
        .unwrap()
    );
}

#[test]
fn tree_outputs_escape_hostile_names_and_dropped_lines() {
    let t = tempfile::tempdir().unwrap();
    let input = t.path().join("in");
    let sub = input.join("p\u{2066}roj\u{2069}");
    std::fs::create_dir_all(&sub).unwrap();
    // A torn line in the middle, holding a bidi override and a C1 CSI,
    // is dropped (and logged verbatim).
    std::fs::write(
        sub.join("evil\u{202e}lmth.jsonl"),
        "{\"role\":\"user\",\"content\":\"hi\"}\n\
         {\"role\":\"assistant\",\"content\":\"cut \u{202e}here\u{9b}31m\n\
         {\"role\":\"user\",\"content\":\"again\"}\n\
         {\"role\":\"assistant\",\"content\":\"fine\"}\n",
    )
    .unwrap();
    // A file that looks like a history and is none: an error naming it.
    std::fs::write(sub.join("bad\u{9b}2J.jsonl"), "\u{202e} not json\n").unwrap();
    let out = t.path().join("out");
    let log = t.path().join("log.json");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    let doc = json(&o);
    assert_eq!(doc["files"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(
        doc["files"][0]["edits"].as_array().unwrap().len(),
        1,
        "{doc:#}"
    );
    assert_eq!(doc["errors"].as_array().unwrap().len(), 1, "{doc:#}");
    let logged = std::fs::read_to_string(&log).unwrap();
    for (what, text) in [("stdout", stdout(&o)), ("log", logged)] {
        for c in ['\u{202e}', '\u{2066}', '\u{2069}', '\u{9b}'] {
            assert!(
                !text.contains(c),
                "{what} carries a raw U+{:04X}: {text}",
                c as u32
            );
        }
        // Escaped, not lost: the dropped line is in the log as it was.
        assert!(text.contains(r"cut \u202ehere\u009b31m"), "{what}: {text}");
        assert!(text.contains(r"evil\u202elmth.jsonl"), "{what}: {text}");
        assert!(text.contains(r"p\u2066roj\u2069"), "{what}: {text}");
        assert!(text.contains(r"bad\u009b2J.jsonl"), "{what}: {text}");
    }
    // Read back as JSON, the text is the history's own.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert!(
        doc["files"][0]["edits"][0]["before"]
            .as_str()
            .unwrap()
            .contains("cut \u{202e}here\u{9b}31m")
    );
}

/// Mode bits of a path.
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn the_tree_keeps_the_input_directories_modes_and_owners() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (t, sessions) = tree();
    // Neither is what any umask leaves of 0777.
    let sub = sessions.join("codex/healthy");
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o710)).unwrap();
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o750)).unwrap();
    let as_root = std::fs::metadata(t.path()).unwrap().uid() == 0;
    if as_root {
        std::os::unix::fs::chown(&sub, Some(4321), Some(4322)).unwrap();
    }
    let out = t.path().join("out");
    let o = run(&[
        "repair",
        sessions.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(mode(&out), 0o710);
    assert_eq!(mode(&out.join("codex/healthy")), 0o750);
    assert_eq!(mode(&out.join("codex")), mode(&sessions.join("codex")));
    if as_root {
        let m = std::fs::metadata(out.join("codex/healthy")).unwrap();
        assert_eq!((m.uid(), m.gid()), (4321, 4322));
    }
}

/// A tree large enough that a repair of it takes a while: the fixtures'
/// Claude Code and Codex sessions, `copies` times over.
fn big_tree(copies: usize) -> (tempfile::TempDir, PathBuf) {
    let (t, sessions) = tree();
    let big = t.path().join("big");
    for i in 0..copies {
        for e in walkdir::WalkDir::new(&sessions) {
            let e = e.unwrap();
            let to = big
                .join(format!("copy{i}"))
                .join(e.path().strip_prefix(&sessions).unwrap());
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&to).unwrap();
            } else {
                std::fs::copy(e.path(), &to).unwrap();
            }
        }
    }
    (t, big)
}

fn spawn_tree_repair(input: &Path, out: &Path, log: &Path) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .args([
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The entries chatfsck left beside OUTDIR (its temporary trees).
fn leftovers(out: &Path) -> Vec<String> {
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!(".{name}.")))
        .collect()
}

/// OUTDIR holds every history of `input`, and its log is there.
fn assert_complete(input: &Path, out: &Path, log: &Path, what: &str) {
    assert_eq!(
        histories(out),
        histories(input),
        "{what}: OUTDIR incomplete"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(log).unwrap())
        .unwrap_or_else(|e| panic!("{what}: no whole log: {e}"));
    assert_eq!(
        doc["files"].as_array().unwrap().len(),
        histories(input).len(),
        "{what}"
    );
}

#[test]
fn an_interrupted_tree_repair_leaves_no_outdir() {
    let (t, big) = big_tree(3);
    let before = snapshot(&big);
    let (out, log) = (t.path().join("out"), t.path().join("log.json"));
    let interrupted = |child: &mut std::process::Child, what: &str| {
        let status = child.wait().unwrap();
        match status.code() {
            Some(130) => {
                assert!(
                    !out.exists(),
                    "{what}: OUTDIR left: {:?}",
                    snapshot(&out).len()
                );
                assert!(!log.exists(), "{what}: a log without its tree");
                assert_eq!(leftovers(&out), Vec::<String>::new(), "{what}");
                true
            }
            Some(0) => {
                assert_complete(&big, &out, &log, what);
                false
            }
            other => panic!("{what}: exit {other:?}"),
        }
    };
    let signal = |child: &std::process::Child, signal: &str| {
        std::process::Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .unwrap();
    };
    // Mid-run for certain: each signal once the temporary tree holds that
    // many files (a moment a timer could miss on a loaded machine).
    for (sig, files) in [("INT", 1), ("TERM", 10), ("HUP", 20)] {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(&log);
        let what = format!("SIG{sig} after {files} file(s) written");
        let mut child = spawn_tree_repair(&big, &out, &log);
        let start = std::time::Instant::now();
        while written(&out) < files {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{what}: the repair ended first (the tree is too small)"
            );
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "{what}: no progress"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        signal(&child, sig);
        assert!(interrupted(&mut child, &what), "{what}: not interrupted");
    }
    // At moments across a whole run, the end included (the tree renamed
    // into place, the log written): whichever way it ends, all or nothing.
    let start = std::time::Instant::now();
    let status = spawn_tree_repair(&big, &out, &log).wait().unwrap();
    let whole = start.elapsed();
    assert!(status.success());
    assert_complete(&big, &out, &log, "uninterrupted");
    for (i, fraction) in [0.5, 0.9, 0.97, 1.0].into_iter().enumerate() {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(&log);
        let sig = ["INT", "TERM", "HUP"][i % 3];
        let what = format!("SIG{sig} at {fraction} of {whole:?}");
        let mut child = spawn_tree_repair(&big, &out, &log);
        std::thread::sleep(whole.mul_f64(fraction));
        signal(&child, sig);
        interrupted(&mut child, &what);
    }
    assert_eq!(snapshot(&big), before, "the input changed");
}

/// How many files a run writing `out` has written so far: in its
/// temporary trees beside OUTDIR, and in OUTDIR once renamed into place.
fn written(out: &Path) -> usize {
    let mut n = 0;
    for name in leftovers(out) {
        n += walkdir::WalkDir::new(out.parent().unwrap().join(name))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .count();
    }
    if out.exists() {
        n += snapshot(out).len();
    }
    n
}

#[test]
fn a_killed_tree_repair_is_swept_by_the_next_run() {
    let (t, big) = big_tree(3);
    let (out, log) = (t.path().join("out"), t.path().join("log.json"));
    let mut child = spawn_tree_repair(&big, &out, &log);
    // Kill it once it has written part of the tree.
    let start = std::time::Instant::now();
    while written(&out) < 20 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the repair finished before it was killed"
    );
    assert!(!out.exists(), "a killed run left a half-filled OUTDIR");
    assert!(!log.exists());
    let left = leftovers(&out);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].contains(&format!("chatfsck-{}-", child.id())),
        "{left:?}"
    );
    // The next run removes what the killed one left, and succeeds.
    let o = run(&[
        "repair",
        big.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(leftovers(&out), Vec::<String>::new());
    // The log's temporary file the killed run left is gone too.
    let stray: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("chatfsck"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    assert_complete(&big, &out, &log, "after the sweep");
}
