//! The command line contract that case files cannot state. What a command
//! prints and its exit code are data in tests/cmd/ (tests/cmd.rs runs them);
//! here stay the checks of a file's hash and mtime and of a directory's
//! listing (no command touches its input or writes beside it), an input
//! generated at run time (a 100 MiB line), and properties over every rule
//! of the catalogue or every file of fixtures/bad-input, which a new rule
//! or file must meet without a new case.

mod common;
use common::*;

use std::io::Write;

fn write_tmp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p.to_string_lossy().into_owned()
}

const ORPHAN: &str = concat!(
    r#"{"role":"user","content":"list files"}"#,
    "\n",
    r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
    "\n",
    r#"{"role":"user","content":"well?"}"#,
    "\n",
);

/// Exit 2 and one line on stderr, `error: ` first, naming the input;
/// returns that line.
fn assert_one_line_error(o: &std::process::Output, path: &str) -> String {
    assert_eq!(code(o), 2, "stdout: {} stderr: {}", stdout(o), stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with(&format!("error: {path}: ")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_owned()
}

/// Every file of fixtures/bad-input (and a missing one) is refused with one
/// line and exit 2 by `lint` and `inspect`, and is left exactly as it was,
/// with nothing created beside it. The exact messages are cases in
/// tests/cmd/ (`error-*`); this covers a file added there without one.
#[test]
fn bad_inputs_are_refused_and_left_untouched() {
    let names: Vec<String> = std::fs::read_dir(root().join("fixtures/bad-input"))
        .unwrap()
        .map(|e| {
            format!(
                "fixtures/bad-input/{}",
                e.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    let d = copy_to_tmp(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let before = dir_fingerprints(d.path());
    assert_eq!(before.len(), names.len());
    let mut paths: Vec<String> = before
        .iter()
        .map(|(name, _)| d.path().join(name).to_string_lossy().into_owned())
        .collect();
    paths.push(
        d.path()
            .join("missing.jsonl")
            .to_string_lossy()
            .into_owned(),
    );
    for path in &paths {
        for cmd in ["lint", "inspect"] {
            assert_one_line_error(&run(&[cmd, path]), path);
        }
    }
    assert_eq!(
        before,
        dir_fingerprints(d.path()),
        "an input changed or a file appeared"
    );
}

#[test]
fn a_100_mib_line_is_refused_without_reading_it_whole() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("huge.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"user\",\"content\":\"")
        .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}\n").unwrap();
    drop(f);
    let p = path.to_string_lossy().into_owned();
    let err = assert_one_line_error(&run(&["lint", &p]), &p);
    assert!(err.contains("line 2 is longer than 64 MiB"), "{err}");
    // With a higher limit it is an ordinary (long) message.
    assert_eq!(code(&run(&["lint", "--max-line-mib", "200", &p])), 0);
}

#[test]
fn no_command_writes_to_its_input_or_beside_it() {
    let d = tempfile::tempdir().unwrap();
    let p = write_tmp(&d, "bad.jsonl", ORPHAN.as_bytes());
    let before = fingerprint(std::path::Path::new(&p));
    for args in [
        vec!["lint", p.as_str()],
        vec!["lint", "--format", "json", p.as_str()],
        vec!["inspect", p.as_str()],
    ] {
        run(&args);
    }
    assert_eq!(before, fingerprint(std::path::Path::new(&p)));
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

/// Every rule of the catalogue explains itself with the same sections, so
/// a new rule needs no case; `explain orphan-tool-call`, `rules` and an
/// unknown rule are cases in tests/cmd/.
#[test]
fn every_rule_explains_itself() {
    let o = run(&["rules", "--format", "json"]);
    let rules: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for rule in rules.as_array().unwrap() {
        let name = rule["name"].as_str().unwrap();
        let o = run(&["explain", name]);
        assert_eq!(code(&o), 0);
        let text = stdout(&o);
        for section in [
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "## Repair",
        ] {
            assert!(text.contains(section), "{name} lacks {section}");
        }
    }
}

/// `explain` ends with what each client does with the rule's patterns,
/// generated from the client profiles (so it cannot drift from what the
/// rules report), for every rule a profile names; a rule no profile names
/// has no such section.
#[test]
fn explain_lists_what_each_client_does() {
    const SECTION: &str = "## What each client does on resume";
    let o = run(&["rules", "--format", "json"]);
    let rules: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut with = Vec::new();
    for rule in rules.as_array().unwrap() {
        let rule = rule["name"].as_str().unwrap();
        let o = run(&["explain", rule]);
        assert_eq!(code(&o), 0);
        let text = stdout(&o);
        let Some(at) = text.find(SECTION) else {
            continue;
        };
        with.push(rule.to_string());
        insta::assert_snapshot!(format!("explain_clients__{rule}"), &text[at..]);
    }
    with.sort();
    assert_eq!(
        with, WITH_CLIENTS,
        "the rules whose patterns a profile names"
    );
}

/// The rules some client profile says something about (sorted).
const WITH_CLIENTS: &[&str] = &[
    "corrupt-record",
    "damaged-encrypted-content",
    "dangling-parent",
    "duplicate-tool-call-id",
    "duplicate-uuid",
    "empty-history",
    "empty-message",
    "empty-text-block",
    "function-response-count",
    "glued-records",
    "interleaved-message",
    "invalid-item-id",
    "invalid-tool-arguments",
    "invalid-tool-name",
    "lone-surrogate",
    "mismatched-message-id",
    "mismatched-tool-output",
    "missing-fork-parent",
    "missing-ordinal",
    "missing-reasoning-content",
    "missing-required-field",
    "missing-role",
    "missing-thought-signature",
    "nul-padding",
    "orphan-tool-call",
    "orphan-tool-result",
    "oversized-image",
    "oversized-tool-result",
    "parent-cycle",
    "projection-out-of-step",
    "raw-line-separator",
    "reasoning-without-follower",
    "reused-ordinal",
    "split-record",
    "stale-leaf",
    "thinking-signature",
    "unchained-records",
    "unknown-block-type",
];
