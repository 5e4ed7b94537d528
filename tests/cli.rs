//! The command line contract: exit codes, errors, selection, escaping, and
//! that no command touches its input.

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

const HEALTHY: &str = concat!(
    r#"{"role":"user","content":"list files"}"#,
    "\n",
    r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
    "\n",
    r#"{"role":"tool","tool_call_id":"call_1","content":"a.txt"}"#,
    "\n",
    r#"{"role":"assistant","content":"one file: a.txt"}"#,
    "\n",
);

#[test]
fn exit_codes_follow_fail_on() {
    let d = tempfile::tempdir().unwrap();
    let bad = write_tmp(&d, "bad.jsonl", ORPHAN.as_bytes());
    let good = write_tmp(&d, "good.jsonl", HEALTHY.as_bytes());
    assert_eq!(code(&run(&["lint", &good])), 0);
    assert_eq!(code(&run(&["lint", &bad])), 1);
    // A warning-only history passes by default and fails with --fail-on warning.
    let warn = write_tmp(
        &d,
        "warn.jsonl",
        b"{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"\"}\n",
    );
    assert_eq!(code(&run(&["lint", &warn])), 0);
    assert_eq!(code(&run(&["lint", "--fail-on", "warning", &warn])), 1);
}

#[test]
fn select_and_ignore() {
    let d = tempfile::tempdir().unwrap();
    let bad = write_tmp(&d, "bad.jsonl", ORPHAN.as_bytes());
    let (c, doc) = lint_json(&bad, &["--ignore", "orphan-tool-call"]);
    assert_eq!(c, 0);
    assert!(doc["findings"].as_array().unwrap().is_empty());
    let (c, doc) = lint_json(&bad, &["--select", "orphan-tool-call,empty-message"]);
    assert_eq!(c, 1);
    assert_eq!(rule_lines(&doc), vec!["orphan-tool-call@2"]);
    let o = run(&["lint", "--select", "no-such-rule", &bad]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown rule `no-such-rule`"));
}

#[test]
fn json_document_carries_the_contract_fields() {
    let d = tempfile::tempdir().unwrap();
    let bad = write_tmp(&d, "bad.jsonl", ORPHAN.as_bytes());
    let (_, doc) = lint_json(&bad, &[]);
    assert_eq!(doc["version"], 1);
    let f = &doc["findings"][0];
    assert_eq!(f["rule"], "orphan-tool-call");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["message"], 1);
    assert_eq!(f["location"]["path"], bad.as_str());
    assert_eq!(f["location"]["line"], 2);
    assert_eq!(f["ids"][0], "call_1");
    assert_eq!(f["fixable"], true);
    assert!(f["conversation"].is_string());
    assert!(f["summary"].as_str().unwrap().contains("`call_1`"));
    assert_eq!(doc["files"][0]["dialect"], "openai");
    assert_eq!(doc["summary"]["errors"], 1);
}

#[test]
fn directories_are_walked_and_non_histories_skipped() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("a/b")).unwrap();
    std::fs::write(d.path().join("a/b/bad.jsonl"), ORPHAN).unwrap();
    std::fs::write(d.path().join("a/good.jsonl"), HEALTHY).unwrap();
    std::fs::write(d.path().join("a/package.json"), "{\"name\": \"x\"}").unwrap();
    std::fs::write(d.path().join("a/notes.txt"), "not a history").unwrap();
    let (c, doc) = lint_json(d.path().to_str().unwrap(), &[]);
    assert_eq!(c, 1);
    assert_eq!(doc["files"].as_array().unwrap().len(), 2);
    assert_eq!(doc["skipped"].as_array().unwrap().len(), 1);
    assert!(
        doc["skipped"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("package.json")
    );
}

fn assert_one_line_error(o: &std::process::Output, path: &str, cause: &str) {
    assert_eq!(code(o), 2, "stdout: {} stderr: {}", stdout(o), stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(lines[0].contains(path), "names the path: {err}");
    assert!(lines[0].contains(cause), "says `{cause}`: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_inputs_are_one_line_errors_with_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(String, &str)> = vec![
        (
            d.path()
                .join("missing.jsonl")
                .to_string_lossy()
                .into_owned(),
            "no such file",
        ),
        (write_tmp(&d, "empty.jsonl", b""), "file is empty"),
        (write_tmp(&d, "blank.jsonl", b"\n\n  \n"), "file is empty"),
        (
            write_tmp(&d, "binary.jsonl", b"\x00\x01\x02ELF\x00\x00\n\x00"),
            "binary file",
        ),
        // A line of invalid UTF-8 among good ones is a corrupt-record
        // finding, not an input error (tests/faults.rs).
        (
            write_tmp(&d, "obj.json", b"{\"foo\": 1}"),
            "not a message history",
        ),
        (
            write_tmp(&d, "nums.json", b"[1, 2, 3]"),
            "not a message history",
        ),
        (write_tmp(&d, "num.jsonl", b"42\n"), "not a message history"),
        (
            write_tmp(&d, "text.jsonl", b"hello world\n"),
            "not a message history",
        ),
    ];
    for (path, cause) in &cases {
        let before = fingerprint(std::path::Path::new(path));
        for cmd in ["lint", "inspect"] {
            let o = run(&[cmd, path]);
            assert_one_line_error(&o, path, cause);
        }
        assert_eq!(
            before,
            fingerprint(std::path::Path::new(path)),
            "{path} changed"
        );
    }
    let empty_dir = tempfile::tempdir().unwrap();
    let p = empty_dir.path().to_string_lossy().into_owned();
    assert_one_line_error(&run(&["lint", &p]), &p, "no histories");
    // Nothing was created beside the inputs.
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), cases.len() - 1, "{names:?}");
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
    assert_one_line_error(&run(&["lint", &p]), &p, "line 2 is longer than 64 MiB");
    // With a higher limit it is an ordinary (long) message.
    assert_eq!(code(&run(&["lint", "--max-line-mib", "200", &p])), 0);
}

#[test]
fn torn_last_line_is_a_finding_and_the_rest_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let text = format!("{ORPHAN}{{\"role\":\"assistant\",\"content\":\"Hello! How can I he");
    let p = write_tmp(&d, "torn.jsonl", text.as_bytes());
    let (c, doc) = lint_json(&p, &[]);
    assert_eq!(c, 1);
    assert_eq!(
        rule_lines(&doc),
        vec!["corrupt-record@4", "orphan-tool-call@2"]
    );
    assert!(
        doc["findings"][1]["summary"]
            .as_str()
            .unwrap()
            .contains("torn write")
    );
}

#[test]
fn hostile_text_never_reaches_the_terminal_raw() {
    let d = tempfile::tempdir().unwrap();
    let text = concat!(
        r#"{"role":"user","content":"hi \u001b]0;pwned\u0007 \u009b31m"}"#,
        "\n",
        r#"{"role":"assistant","tool_calls":[{"id":"call_\u001b[31mred","type":"function","function":{"name":"ls\u001b[2J","arguments":"{}"}}]}"#,
        "\n",
        r#"{"role":"user","content":"again \u202e reversed"}"#,
        "\n",
    );
    let p = write_tmp(&d, "hostile.jsonl", text.as_bytes());
    for args in [
        vec!["lint", p.as_str()],
        vec!["lint", "--format", "json", p.as_str()],
        vec!["inspect", p.as_str()],
        vec!["inspect", "--format", "json", p.as_str()],
    ] {
        let o = run(&args);
        for stream in [stdout(&o), stderr(&o)] {
            assert!(!stream.contains('\u{1b}'), "{args:?}: raw ESC in {stream}");
            assert!(!stream.contains('\u{7}'), "{args:?}: raw BEL");
            assert!(!stream.contains('\u{9b}'), "{args:?}: raw CSI");
            assert!(!stream.contains('\u{202e}'), "{args:?}: raw bidi override");
        }
    }
    let human = stdout(&run(&["lint", &p]));
    assert!(human.contains("call_\\u{1b}[31mred"), "{human}");
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

#[test]
fn rules_and_explain_cover_every_rule() {
    let o = run(&["rules", "--format", "json"]);
    let rules: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 18);
    assert!(names.contains(&"truncated-response") && names.contains(&"prompt-divergence"));
    assert!(names.contains(&"index-gap") && names.contains(&"duplicate-index"));
    for name in names {
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
    let o = run(&["explain", "orphan-tool-call"]);
    assert!(stdout(&o).contains("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"));
    assert_eq!(code(&run(&["explain", "nope"])), 2);
}

#[test]
fn json_array_documents_and_messages_bodies() {
    let d = tempfile::tempdir().unwrap();
    let arr = format!(
        "[\n  {},\n  {}\n]\n",
        r#"{"role":"user","content":"hi"}"#,
        r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#
    );
    let p = write_tmp(&d, "conv.json", arr.as_bytes());
    let (c, doc) = lint_json(&p, &[]);
    assert_eq!(c, 1);
    assert_eq!(rule_lines(&doc), vec!["orphan-tool-call@3"]);
    assert_eq!(doc["files"][0]["format"], "json");
    let body = format!("{{\"model\":\"gpt\",\"messages\":{arr}}}");
    let p = write_tmp(&d, "request.json", body.as_bytes());
    let (c, doc) = lint_json(&p, &[]);
    assert_eq!(c, 1);
    assert_eq!(rule_lines(&doc), vec!["orphan-tool-call@3"]);
}

#[test]
fn bundled_bad_inputs_are_refused() {
    for e in std::fs::read_dir(root().join("fixtures/bad-input")).unwrap() {
        let p = e.unwrap().path();
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let o = run(&["lint", &rel]);
        assert_eq!(code(&o), 2, "{rel}: {}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{rel}: {err}");
        assert!(err.starts_with(&format!("error: {rel}: ")), "{err}");
    }
}

#[test]
fn a_truncated_sqlite_file_says_so() {
    let d = tempfile::tempdir().unwrap();
    let p = write_tmp(&d, "short.db", b"SQLite format 3\0\x10\x00");
    let o = run(&["lint", &p]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}
