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
        _ => panic!("no fixture {name}"),
    };
    format!("{UNIFIED}/3f9a1c2e-7b4d-4e10-9a55-a1b2c3d4000{suffix}/CURRENT")
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

/// No repaired copy: the store is report only, and `repair` says why
/// without writing anything.
#[test]
fn repair_writes_nothing_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("CURRENT");
    let file = current("orphan-tool-call");
    let before = fingerprint(&root().join(&file));
    let o = run(&["repair", &file, "-o", out.to_str().unwrap()]);
    assert_ne!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("hash-linked"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(!out.exists());
    assert_eq!(fingerprint(&root().join(&file)), before);
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
