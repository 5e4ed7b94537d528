//! Mistral Vibe's unified session store (issue 40): session directories
//! laid out as mistral-vibe 3.0.3 writes them (fixtures/mistral-vibe/,
//! made by its make.py from the client's published source: the client
//! needs Python 3.12 and does not run here), read through their `CURRENT`
//! pointer with every digest checked as the client checks it.

mod common;
use common::*;

const UNIFIED: &str = "fixtures/mistral-vibe/home/.vibe/logs/session/unified";

/// The session directory of a fixture, by the name make.py gives it.
fn current(name: &str) -> String {
    let suffix = match name {
        "healthy" => "1",
        "healthy-journal" => "2",
        "tampered-record" => "3",
        "broken-chain" => "4",
        "torn-tail" => "5",
        "tampered-chunk" => "6",
        "orphan-tool-call" => "7",
        "stray-result" => "8",
        "tool-after-user" => "9",
        "empty-assistant" => "a",
        "newer-minor" => "b",
        "unknown-record" => "c",
        "missing-chunk" => "d",
        "call-in-flight" => "e",
        _ => panic!("no fixture {name}"),
    };
    // A store a newer Vibe wrote is kept outside the home: a run without
    // a path lists it as unread.
    let unified = if name == "newer-minor" {
        "fixtures/mistral-vibe/newer/unified"
    } else {
        UNIFIED
    };
    format!("{unified}/3f9a1c2e-7b4d-4e10-9a55-a1b2c3d4000{suffix}/CURRENT")
}

/// `severity rule@file:key` of every finding, sorted: the findings of this
/// store are located in the files beside `CURRENT`.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let l = &f["location"];
            let table = l["table"].as_str().unwrap_or("");
            let table = if table.starts_with("chunks/") {
                "chunk"
            } else {
                table
            };
            format!(
                "{} {}@{}:{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                table,
                l["key"].as_str().unwrap_or("")
            )
        })
        .collect();
    v.sort();
    v
}

/// Each fixture and its findings.
const EXPECTED: &[(&str, &[&str])] = &[
    ("healthy", &[]),
    ("healthy-journal", &[]),
    (
        "tampered-record",
        &["error digest-mismatch@journal/0000000000000007.jsonl:line 2"],
    ),
    (
        "broken-chain",
        &["error digest-mismatch@journal/0000000000000007.jsonl:line 2"],
    ),
    // Vibe skips a torn last line and cuts it off at its next append.
    (
        "torn-tail",
        &["warning corrupt-record@journal/0000000000000007.jsonl:line 2"],
    ),
    ("tampered-chunk", &["error digest-mismatch@chunk:file"]),
    ("missing-chunk", &["error digest-mismatch@chunk:file"]),
    ("orphan-tool-call", &["error orphan-tool-call@chunk:item 2"]),
    // Stopped while the call ran: the runtime recovers it on resume.
    ("call-in-flight", &["warning orphan-tool-call@chunk:item 2"]),
    ("stray-result", &["error orphan-tool-result@chunk:item 2"]),
    (
        "tool-after-user",
        &["error orphan-tool-result@chunk:item 2"],
    ),
    ("empty-assistant", &["error empty-message@chunk:item 2"]),
    (
        "unknown-record",
        &["warning unknown-record-type@journal/0000000000000007.jsonl:line 2"],
    ),
];

#[test]
fn every_fixture_reads_as_mistral_vibe_with_what_vibe_does_with_it() {
    for (name, want) in EXPECTED {
        let file = current(name);
        let (_, doc) = lint_json(&file, &["--fail-on", "info"]);
        assert_eq!(
            doc["files"][0]["dialect"], "mistral-vibe",
            "{name}: {doc:#}"
        );
        assert_eq!(findings(&doc), *want, "{name}: {doc:#}");
    }
    // The history the session resumes with: the checkpoint's context
    // messages, read from the chunk the manifest names.
    let o = run(&["inspect", &current("healthy")]);
    assert!(
        stdout(&o).contains("messages:      7 (assistant 3, system 1, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
}

/// A broken digest is an error that says the client refuses the session,
/// with what does not match.
#[test]
fn a_broken_digest_says_vibe_refuses_the_session() {
    for (name, what) in [
        ("tampered-record", "does not hash to its `record_sha256`"),
        ("broken-chain", "digest chain mismatch"),
        ("tampered-chunk", "hashes to"),
        ("missing-chunk", "cannot be read"),
    ] {
        let (rc, doc) = lint_json(&current(name), &[]);
        assert_eq!(rc, 1, "{name}: {doc:#}");
        let f = &doc["findings"][0];
        assert_eq!(f["rule"], "digest-mismatch", "{name}: {f:#}");
        assert!(
            f["summary"].as_str().unwrap().contains(what),
            "{name}: {f:#}"
        );
        assert!(
            f["notes"]
                .to_string()
                .contains("refuses to load the session"),
            "{name}: {f:#}"
        );
    }
    // The torn tail is what the client heals: the note says so.
    let (_, doc) = lint_json(&current("torn-tail"), &[]);
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("Vibe skips"),
        "{doc:#}"
    );
}

/// A store of a newer minor than 3.0.3 reads: one line naming the file and
/// the cause, exit 2.
#[test]
fn a_newer_store_is_refused_with_one_line() {
    let file = current("newer-minor");
    let o = run(&["lint", &file]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("CURRENT"), "{err}");
    assert!(err.contains("minor 11"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A copy of a fixture's session directory in `dir`, under its own id (the
/// client refuses a session whose directory is named otherwise): its
/// `CURRENT`.
fn copy_session(name: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let current = root().join(current(name));
    let src = current.parent().unwrap();
    let dst = dir.join(src.file_name().unwrap());
    for e in walkdir::WalkDir::new(src) {
        let e = e.unwrap();
        let to = dst.join(e.path().strip_prefix(src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    dst.join("CURRENT")
}

/// What tests/oracle/vibe_judge.py says of each session directory: it
/// re-does every check of Vibe 3.0.3's load with the client's hashing
/// rules, apart from chatfsck, and validates the request its messages make.
fn judge(dirs: &[&std::path::Path]) -> Vec<serde_json::Value> {
    let mut c = python();
    c.arg("tests/oracle/vibe_judge.py").args(dirs);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The edits of each fixture's repair (`action@transcript item`).
const REPAIRS: &[(&str, &[&str])] = &[
    ("orphan-tool-call", &["answer-call@item 2"]),
    ("stray-result", &["remove-result@item 2"]),
    ("tool-after-user", &["remove-result@item 2"]),
];

/// A repair publishes a new generation as Vibe does: every digest holds
/// (the judge loads the copy), the request is valid, every removed payload
/// is in the log, the input is not touched, and a second repair changes
/// nothing.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): tests/oracle/vibe_judge.py judges the sessions"
)]
fn a_repaired_copy_is_published_as_vibe_publishes_a_generation() {
    let d = tempfile::tempdir().unwrap();
    let mut copies = Vec::new();
    for (name, want) in REPAIRS {
        let input = root().join(current(name));
        let session = input.parent().unwrap();
        let before: Vec<_> = walkdir::WalkDir::new(session)
            .sort_by_file_name()
            .into_iter()
            .map(|e| fingerprint(e.unwrap().path()))
            .collect();
        let out_dir = d.path().join(name);
        std::fs::create_dir_all(&out_dir).unwrap();
        let id = session.file_name().unwrap();
        let out = out_dir.join(id).join("CURRENT");
        let log = out_dir.join("log.json");
        let o = run(&[
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
        let edits: Vec<String> = log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{}@{}",
                    e["action"].as_str().unwrap(),
                    e["location"]["key"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(edits, *want, "{name}: {log:#}");
        for e in log["edits"].as_array().unwrap() {
            if e["action"] == "remove-result" {
                assert!(
                    e["before"].as_str().unwrap().contains("\"role\":\"tool\""),
                    "{e:#}"
                );
            } else {
                assert!(
                    e["after"]
                        .as_str()
                        .unwrap()
                        .contains("Interrupted by the runtime before completion."),
                    "{e:#}"
                );
            }
        }
        let after: Vec<_> = walkdir::WalkDir::new(session)
            .sort_by_file_name()
            .into_iter()
            .map(|e| fingerprint(e.unwrap().path()))
            .collect();
        assert_eq!(before, after, "{name}: the input was touched");
        let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
        assert_eq!(rc, 0, "{name}: {doc:#}");
        // A second repair edits nothing and writes no new generation.
        let again = d
            .path()
            .join(format!("{name}-again"))
            .join(id)
            .join("CURRENT");
        let o = run(&[
            "repair",
            out.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stdout(&o).contains("applied 0 edits"), "{}", stdout(&o));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
        copies.push(out.parent().unwrap().to_path_buf());
    }
    let dirs: Vec<&std::path::Path> = copies.iter().map(|p| p.as_path()).collect();
    for s in judge(&dirs) {
        assert_eq!(s["loads"], true, "{s:#}");
        assert_eq!(s["request_valid"], true, "{s:#}");
    }
}

/// The judge agrees with the findings on the fixtures: the healthy
/// sessions and the torn tail load with a valid request, those with a
/// broken digest are refused.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): tests/oracle/vibe_judge.py judges the sessions"
)]
fn the_judge_agrees_with_the_findings() {
    let dir = |n: &str| root().join(current(n)).parent().unwrap().to_path_buf();
    let names = [
        ("healthy", true, true),
        ("healthy-journal", true, true),
        ("torn-tail", true, true),
        ("tampered-record", false, false),
        ("broken-chain", false, false),
        ("tampered-chunk", false, false),
        ("missing-chunk", false, false),
        ("newer-minor", false, false),
        ("unknown-record", false, false),
        ("stray-result", true, false),
        ("empty-assistant", true, false),
    ];
    let dirs: Vec<_> = names.iter().map(|(n, _, _)| dir(n)).collect();
    let refs: Vec<&std::path::Path> = dirs.iter().map(|p| p.as_path()).collect();
    for (s, (name, loads, valid)) in judge(&refs).iter().zip(names) {
        assert_eq!(s["loads"], loads, "{name}: {s:#}");
        assert_eq!(s["request_valid"], valid, "{name}: {s:#}");
    }
}

/// A call in flight in a recoverable generation is left to Vibe, which
/// recovers it from its journal: a result written here would answer it
/// twice.
#[test]
fn a_call_the_runtime_recovers_is_left_to_it() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("copy").join("CURRENT");
    let o = run(&[
        "repair",
        &current("call-in-flight"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("applied 0 edits"), "{}", stdout(&o));
    assert!(stdout(&o).contains("recovers the call"), "{}", stdout(&o));
}

/// Nothing is written for a session whose digests do not hold: a copy
/// would keep them broken or hide the edit that broke them.
#[test]
fn a_session_whose_digests_do_not_hold_is_not_rewritten() {
    let d = tempfile::tempdir().unwrap();
    let input = copy_session("orphan-tool-call", d.path());
    let journal = input
        .parent()
        .unwrap()
        .join("journal/0000000000000007.jsonl");
    std::fs::write(
        &journal,
        format!(
            "{{\"payload\":{{}},\"previous_record_sha256\":null,\"record_sha256\":\"{}\",\"recovery_journal_record_version\":1,\"sequence\":7,\"type\":\"command_reserved\"}}\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let out = d.path().join("copy").join("CURRENT");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("applied 0 edits"), "{}", stdout(&o));
    assert!(stdout(&o).contains("digests do not hold"), "{}", stdout(&o));
}

/// `repair --in-place`: the new generation and chunks are added beside the
/// old ones, `CURRENT` is replaced and kept as a backup that still names
/// the old generation; a second run changes nothing.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): tests/oracle/vibe_judge.py judges the sessions"
)]
fn an_in_place_repair_publishes_beside_the_old_generation_with_a_backup() {
    let d = tempfile::tempdir().unwrap();
    let current = copy_session("stray-result", d.path());
    let session = current.parent().unwrap().to_path_buf();
    let base = std::fs::read(&current).unwrap();
    // Run in the session directory, the file named without a folder.
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(&session)
        .env("NO_COLOR", "1")
        .args(["repair", "--in-place", "CURRENT"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let backups: Vec<_> = std::fs::read_dir(&session)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("CURRENT.chatfsck-backup-"))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read(&backups[0]).unwrap(), base);
    let (rc, doc) = lint_json(current.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    // The backup still reads as the session was.
    let (_, doc) = lint_json(backups[0].to_str().unwrap(), &[]);
    assert_eq!(doc["findings"][0]["rule"], "orphan-tool-result", "{doc:#}");
    let s = &judge(&[session.as_path()])[0];
    assert_eq!(s["loads"], true, "{s:#}");
    assert_eq!(s["request_valid"], true, "{s:#}");
    let fingerprints = |dir: &std::path::Path| -> Vec<_> {
        walkdir::WalkDir::new(dir)
            .sort_by_file_name()
            .into_iter()
            .map(|e| {
                let p = e.unwrap().path().to_path_buf();
                (p.clone(), fingerprint(&p))
            })
            .collect()
    };
    let before = fingerprints(&session);
    let o = run(&["repair", "--in-place", current.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(before, fingerprints(&session));
}

/// A run without a path finds the sessions where Vibe keeps them:
/// `$VIBE_HOME/logs/session/unified/<id>/CURRENT`, and the harness's
/// `$MISTRAL_VIBE_SESSION_ROOT/unified/<id>/CURRENT`.
#[test]
fn a_run_without_a_path_finds_vibe_sessions() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let copy = |from: &str, to: &std::path::Path| {
        let src = root().join(from);
        for e in walkdir::WalkDir::new(&src) {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(&src).unwrap();
            let dst = to.join(rel);
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&dst).unwrap();
            } else {
                std::fs::copy(e.path(), &dst).unwrap();
            }
        }
    };
    let healthy = current("healthy");
    let session = std::path::Path::new(&healthy).parent().unwrap();
    let session = session.to_str().unwrap();
    copy(session, &home.join("vh/logs/session/unified/s1"));
    copy(session, &home.join("root/unified/s2"));
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("VIBE_HOME", home.join("vh"))
        .env("MISTRAL_VIBE_SESSION_ROOT", home.join("root"))
        .env("NO_COLOR", "1")
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let vibe = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == "mistral-vibe")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(vibe["found"], 2, "{vibe:#}");
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{doc:#}");
    for f in files {
        assert_eq!(f["dialect"], "mistral-vibe", "{f:#}");
    }
    assert!(doc["findings"].as_array().unwrap().is_empty(), "{doc:#}");
}

/// A manifest naming a file outside the session (`../…`) is refused, as
/// the client's validation refuses it, and that file is never read.
#[test]
fn a_manifest_naming_a_file_outside_the_session_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let healthy = root().join(current("healthy"));
    let src = healthy.parent().unwrap();
    let dst = d.path().join("s");
    for e in walkdir::WalkDir::new(src) {
        let e = e.unwrap();
        let to = dst.join(e.path().strip_prefix(src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    // A secret beside the session, named through the manifest.
    std::fs::write(d.path().join("secret.json"), "[{\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"SECRET\"}]}}]\n").unwrap();
    let manifest = dst.join("generations/0000000000000006/manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let chunk = v["checkpoint"]["chunks"][0].as_str().unwrap().to_string();
    std::fs::write(&manifest, text.replace(&chunk, "../secret")).unwrap();
    let current = dst.join("CURRENT");
    let (rc, doc) = lint_json(current.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    let all = doc.to_string();
    assert!(all.contains("not a file of the session"), "{doc:#}");
    assert!(!all.contains("SECRET"), "{doc:#}");
}

/// The report of each damaged session, as a user reads it.
#[test]
fn lint_output_of_the_damaged_sessions() {
    for name in [
        "tampered-record",
        "broken-chain",
        "torn-tail",
        "tampered-chunk",
        "missing-chunk",
        "stray-result",
        "empty-assistant",
        "unknown-record",
    ] {
        insta::assert_snapshot!(
            format!("vibe_lint__{name}"),
            stdout(&run(&["lint", &current(name)]))
        );
    }
}

/// Vibe reads `CURRENT` only in its canonical form: a pointer written
/// back pretty-printed (by hand, by a tool) is refused, and said.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): tests/oracle/vibe_judge.py judges the sessions"
)]
fn a_pointer_not_in_canonical_form_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let current = copy_session("healthy", d.path());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&current).unwrap()).unwrap();
    std::fs::write(
        &current,
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap()),
    )
    .unwrap();
    let (rc, doc) = lint_json(current.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(doc["findings"][0]["rule"], "digest-mismatch", "{doc:#}");
    assert!(
        doc["findings"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("not canonical"),
        "{doc:#}"
    );
    let s = &judge(&[current.parent().unwrap()])[0];
    assert_eq!(s["loads"], false, "{s:#}");
}

/// A directory walk reads each session through its `CURRENT` (its chunks,
/// documents and journal are no histories of their own), and a tree
/// repair writes every session whole: those it repairs load with a valid
/// request, the others are copied as they are.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): tests/oracle/vibe_judge.py judges the sessions"
)]
fn a_directory_walk_reads_each_session_through_its_pointer() {
    let home = "fixtures/mistral-vibe/home";
    let (_, doc) = lint_json(home, &[]);
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 13, "{doc:#}");
    assert!(
        files.iter().all(|f| f["dialect"] == "mistral-vibe"),
        "{doc:#}"
    );
    assert!(doc["errors"].as_array().unwrap().is_empty(), "{doc:#}");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("tree");
    let o = run(&["repair", home, "-o", out.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("repaired 3 of 13"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let sessions = |root: &std::path::Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(root.join(".vibe/logs/session/unified"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let (before, after) = (sessions(&root().join(home)), sessions(&out));
    assert_eq!(before.len(), after.len());
    let b: Vec<&std::path::Path> = before.iter().map(|p| p.as_path()).collect();
    let a: Vec<&std::path::Path> = after.iter().map(|p| p.as_path()).collect();
    for (x, y) in judge(&b).iter().zip(judge(&a)) {
        assert_eq!(x["loads"], y["loads"], "{x:#} {y:#}");
        assert!(
            y["request_valid"] == true || y["request_valid"] == x["request_valid"],
            "{x:#} {y:#}"
        );
    }
}

/// A manifest that is not even JSON is one finding, the client's refusal:
/// the session is not said to have lost its history (it was not read).
#[test]
fn a_garbled_manifest_is_the_refusal_alone() {
    let d = tempfile::tempdir().unwrap();
    let current = copy_session("healthy", d.path());
    std::fs::write(
        current
            .parent()
            .unwrap()
            .join("generations/0000000000000006/manifest.json"),
        b"\x00\x01garbage",
    )
    .unwrap();
    let (rc, doc) = lint_json(current.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    let rules: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["digest-mismatch"], "{doc:#}");
}
