//! Qwen Code's sessions (issue 40): the session the pinned client wrote
//! (fixtures/qwen-code/home/) and its damaged variants
//! (fixtures/qwen-code/build.py), read as Qwen Code 0.15.10 loads them on
//! resume, and judged by the real client (tests/oracle/qwen.py).

mod common;
use common::*;

use std::path::{Path, PathBuf};

const HEALTHY: &str = "fixtures/qwen-code/home/.qwen/projects/-tmp-qwen-fresh-8wu6xufh-work/chats/c2126db6-fec2-4f7d-a38b-758906db4f27.jsonl";

/// Each fixture and its findings (`severity rule@line`).
const EXPECTED: &[(&str, &[&str])] = &[
    (HEALTHY, &[]),
    // Qwen Code recovers both records of a `}{` line.
    ("fixtures/qwen-code/glued.jsonl", &[]),
    (
        "fixtures/qwen-code/torn-tail.jsonl",
        &["error corrupt-record@13"],
    ),
    (
        "fixtures/qwen-code/torn-then-resumed.jsonl",
        &["error corrupt-record@13", "error dangling-parent@14"],
    ),
    (
        "fixtures/qwen-code/orphan-call.jsonl",
        &["warning orphan-tool-call@4"],
    ),
    (
        "fixtures/qwen-code/orphan-call-at-end.jsonl",
        &["warning orphan-tool-call@4"],
    ),
    (
        "fixtures/qwen-code/stray-result.jsonl",
        &["error orphan-tool-result@6"],
    ),
    (
        "fixtures/qwen-code/dangling-parent.jsonl",
        &["error dangling-parent@10"],
    ),
    (
        "fixtures/qwen-code/garbled-middle.jsonl",
        &["error corrupt-record@8", "error dangling-parent@9"],
    ),
    (
        "fixtures/qwen-code/parent-cycle.jsonl",
        &["error parent-cycle@9"],
    ),
    // DeepSeek's thinking mode: every reply with its reasoning; the call's
    // reply without it (Qwen Code's DeepSeek provider sends an empty
    // `reasoning_content` in its place); no reasoning anywhere.
    ("fixtures/qwen-code/thinking.jsonl", &[]),
    (
        "fixtures/qwen-code/thinking-missing.jsonl",
        &["warning missing-reasoning-content@4"],
    ),
    ("fixtures/qwen-code/thinking-off.jsonl", &[]),
];

/// The edits of each fixture's repair (`action@line`); the others have
/// nothing to repair, or nothing the writer changes (report only).
const REPAIRS: &[(&str, &[&str])] = &[
    ("fixtures/qwen-code/torn-tail.jsonl", &["drop-record@13"]),
    (
        "fixtures/qwen-code/torn-then-resumed.jsonl",
        &["drop-record@13", "relink@14"],
    ),
    (
        "fixtures/qwen-code/garbled-middle.jsonl",
        &["drop-record@8", "relink@9"],
    ),
    (
        "fixtures/qwen-code/orphan-call.jsonl",
        &["relink@5", "answer-call@4"],
    ),
    (
        "fixtures/qwen-code/orphan-call-at-end.jsonl",
        &["relink@5", "answer-call@4"],
    ),
    (
        "fixtures/qwen-code/stray-result.jsonl",
        &["remove-result@6", "relink@7"],
    ),
];

/// Repair every damaged fixture into `dir`: the copies, in REPAIRS' order.
fn repair_all(dir: &Path) -> Vec<PathBuf> {
    repair_fixtures(dir, REPAIRS)
}

#[test]
fn a_repaired_copy_is_clean_and_a_second_repair_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    for copy in repair_all(d.path()) {
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{}: {doc:#}", copy.display());
        assert_second_repair_changes_nothing(&copy, copy.parent().unwrap());
    }
    // The result put in for an unanswered call is the one Qwen Code itself
    // records for a call cancelled while it ran, under the call's record,
    // and the record that hung from the call now hangs from it.
    let text = std::fs::read_to_string(
        d.path()
            .join("orphan-call-at-end")
            .join("orphan-call-at-end.jsonl"),
    )
    .unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "{text}");
    let result = &lines[4];
    assert_eq!(result["type"], "tool_result", "{result:#}");
    assert_eq!(result["parentUuid"], lines[3]["uuid"], "{result:#}");
    assert_eq!(
        result["message"]["parts"][0]["functionResponse"]["response"]["error"],
        "[Operation Cancelled] Reason: User cancelled tool execution.",
        "{result:#}"
    );
    assert_eq!(lines[5]["parentUuid"], result["uuid"], "{text}");
    // A torn record with the prompt Qwen Code appended onto it: the line
    // goes, and the record that named the lost prompt is linked to the
    // record before it: the copy sends every message left.
    let copy = d
        .path()
        .join("torn-then-resumed")
        .join("torn-then-resumed.jsonl");
    let o = run(&["inspect", copy.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("messages:      7 (assistant 4, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_in_place_repair_keeps_a_backup() {
    assert_in_place_repair_keeps_a_backup(
        "fixtures/qwen-code/torn-tail.jsonl",
        "c2126db6-fec2-4f7d-a38b-758906db4f27.jsonl",
    );
}

#[test]
fn every_fixture_reads_as_qwen_code_with_what_qwen_code_does_with_it() {
    for (file, want) in EXPECTED {
        let (_, doc) = lint_json(file, &["--fail-on", "info"]);
        assert_eq!(doc["files"][0]["dialect"], "qwen-code", "{file}: {doc:#}");
        assert_eq!(severity_rule_lines(&doc), *want, "{file}: {doc:#}");
        for f in doc["findings"].as_array().unwrap() {
            assert!(
                f["notes"].to_string().contains("Qwen Code"),
                "{file}: {f:#}"
            );
        }
    }
    // Every message of the session Qwen Code wrote is read, and only
    // those: its system records (telemetry, snapshots) are not messages.
    let o = run(&["inspect", HEALTHY]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 3, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
    // A record missing from the chain: the walk from the last record stops
    // at its child, and only the last reply is sent (the client did so:
    // fixtures/qwen-code/README.md).
    let o = run(&["inspect", "fixtures/qwen-code/dangling-parent.jsonl"]);
    assert!(stdout(&o).contains("messages:      1"), "{}", stdout(&o));
    let (_, doc) = lint_json("fixtures/qwen-code/dangling-parent.jsonl", &[]);
    let summary = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(summary.contains("the 5 message(s)"), "{summary}");
}

/// A DeepSeek reply stored without its reasoning (issue 40): Qwen Code's
/// DeepSeek provider sends an empty `reasoning_content` in its place from
/// 0.15.5 on, so the finding is a warning that names the model, the
/// evidence of thinking mode, and which version wrote the session.
#[test]
fn a_deepseek_reply_without_its_reasoning_is_healed_from_0_15_5() {
    const FILE: &str = "fixtures/qwen-code/thinking-missing.jsonl";
    let o = run(&["lint", FILE]);
    insta::assert_snapshot!("thinking_missing_lint_human", stdout(&o));
    let (_, doc) = lint_json(FILE, &[]);
    let f = &doc["findings"][0];
    let notes = f["notes"].to_string();
    for want in [
        "`deepseek-v4-pro` (a DeepSeek model)",
        "2 other assistant message(s) of this history carry reasoning",
        "Qwen Code heals this from 0.15.5 on",
        "this history was written by 0.15.10, which does",
    ] {
        assert!(notes.contains(want), "{want}: {f:#}");
    }
    // The same session written by 0.15.4: sent without the field, and
    // refused; the severity stays the entry's (the client in use is at
    // least the one that wrote the session).
    let d = tempfile::tempdir().unwrap();
    let old = d.path().join("thinking-missing.jsonl");
    let text = std::fs::read_to_string(root().join(FILE)).unwrap();
    std::fs::write(
        &old,
        text.replace("\"version\":\"0.15.10\"", "\"version\":\"0.15.4\""),
    )
    .unwrap();
    let (_, doc) = lint_json(old.to_str().unwrap(), &[]);
    assert_eq!(
        severity_rule_lines(&doc),
        ["warning missing-reasoning-content@4"]
    );
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("this history was written by 0.15.4, which does not"),
        "{doc:#}"
    );
}

#[test]
fn the_detector_takes_a_qwen_code_session_and_not_a_claude_code_one() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("x.jsonl");
    // Claude Code's records share uuid/parentUuid/sessionId/cwd; their
    // message holds `content`, not Gemini `parts`.
    std::fs::write(
        &f,
        "{\"parentUuid\":null,\"isSidechain\":false,\"cwd\":\"/w\",\"sessionId\":\"s\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"a\",\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n",
    )
    .unwrap();
    let (_, doc) = lint_json(f.to_str().unwrap(), &[]);
    assert_eq!(doc["files"][0]["dialect"], "claude-code", "{doc:#}");
    // The first line torn: the next record still names the store.
    let text = std::fs::read_to_string(root().join(HEALTHY)).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&f, format!("{}\n{text}", &first[..first.len() / 2])).unwrap();
    let (_, doc) = lint_json(f.to_str().unwrap(), &[]);
    assert_eq!(doc["files"][0]["dialect"], "qwen-code", "{doc:#}");
}

/// A run without a path finds the sessions where Qwen Code keeps them:
/// `$QWEN_RUNTIME_DIR`, then `$QWEN_HOME` (a leading `~` expanded), each
/// `projects/<cwd>/chats/<sessionId>.jsonl`.
#[test]
fn a_run_without_a_path_finds_qwen_code_sessions_under_its_overrides() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let put = |dir: &Path| {
        let chats = dir.join("projects/-w/chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::copy(
            root().join(HEALTHY),
            chats.join("c2126db6-fec2-4f7d-a38b-758906db4f27.jsonl"),
        )
        .unwrap();
        // Not a session name Qwen Code lists.
        std::fs::write(chats.join("notes.jsonl"), "{}\n").unwrap();
    };
    put(&home.join("qh"));
    put(&home.join("rt"));
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("QWEN_HOME", "~/qh")
        .env("QWEN_RUNTIME_DIR", home.join("rt"))
        .env("NO_COLOR", "1")
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let qwen = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == "qwen-code")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(qwen["found"], 2, "{qwen:#}");
    for f in doc["files"].as_array().unwrap() {
        assert_eq!(f["dialect"], "qwen-code", "{f:#}");
    }
}

/// The pinned Qwen Code resumes the fixtures whose resume the profile
/// describes as the findings say, and every repaired copy whole (a valid
/// request carrying every unit of the copy): one qwen.py run, all the
/// clients side by side. Its fresh session is tests/fresh_sessions.rs's.
#[test]
#[cfg_attr(
    not(all(has_tool = "qwen-code", has_tool = "python3")),
    ignore = "needs the pinned Qwen Code and python3: scripts/test-all"
)]
fn the_pinned_qwen_code_resumes_as_the_profile_says_and_every_repaired_copy_whole() {
    let d = tempfile::tempdir().unwrap();
    let copies = repair_all(&d.path().join("copies"));
    let originals = [
        "fixtures/qwen-code/dangling-parent.jsonl",
        "fixtures/qwen-code/orphan-call.jsonl",
    ];
    let o = python()
        .arg("tests/oracle/qwen.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .args(originals.iter().map(|f| root().join(f)))
        .args(&copies)
        // All side by side: each client mostly waits (about 30 s each).
        .args(["--jobs", "8"])
        .output()
        .unwrap();
    let s = oracle_summaries("qwen.py", &o);
    assert_eq!(s.len(), originals.len() + copies.len(), "{s:#?}");
    // Every repaired copy resumes whole.
    for r in &s[originals.len()..] {
        assert_eq!(r["units_missing"], 0, "{r:#}");
    }
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
    }
    // A missing parent: the walk stops, and what came before it is not
    // sent: both prompts, the call and its result (the first reply's text,
    // `ok`, is the last reply's too). An unanswered call: sent, and
    // answered with the failure Qwen Code makes up (0.21.2 and later;
    // 0.15.10 left the call out).
    assert_eq!(s[0]["units_missing"], 4, "{:#}", s[0]);
    assert_eq!(s[1]["missing"], serde_json::json!([]), "{:#}", s[1]);
    let request: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("runs/01/request.json")).unwrap())
            .unwrap();
    let answer = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_mock_4")
        .unwrap_or_else(|| panic!("no answer to call_mock_4: {request:#}"));
    assert!(
        answer["content"]
            .to_string()
            .contains("Tool execution result was not recorded"),
        "{answer:#}"
    );
}

/// What the profile says of a DeepSeek reply stored without its reasoning,
/// on the pinned client: configured with a DeepSeek model, 0.15.10 sends
/// the call's reply with `reasoning_content: ""` and the replies with
/// reasoning with theirs; configured with another model (the mock's), it
/// sends the call's reply without the field.
#[test]
#[cfg_attr(
    not(all(has_tool = "qwen-code", has_tool = "python3")),
    ignore = "needs the pinned Qwen Code and python3: scripts/test-all"
)]
fn the_pinned_qwen_code_sends_an_empty_reasoning_content_for_a_deepseek_model() {
    let replies = |model: Option<&str>| -> Vec<serde_json::Value> {
        let d = tempfile::tempdir().unwrap();
        let mut c = python();
        c.arg("tests/oracle/qwen.py")
            .arg("resume")
            .arg(d.path())
            .arg(root().join("fixtures/qwen-code/thinking-missing.jsonl"));
        if let Some(m) = model {
            c.env("CHATFSCK_QWEN_ORACLE_MODEL", m);
        }
        let o = c.output().unwrap();
        let s = oracle_summaries("qwen.py", &o);
        assert_eq!(s[0]["rc"], 0, "{:#}", s[0]);
        assert_eq!(s[0]["valid"], true, "{:#}", s[0]);
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.path().join("00/request.json")).unwrap())
                .unwrap();
        // The call's reply and the two answers, in order (the client's own
        // startup exchange before them left out).
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .skip_while(|m| m.get("tool_calls").is_none())
            .map(|m| m.get("reasoning_content").cloned().unwrap_or_default())
            .collect()
    };
    // Both runs side by side (each client mostly waits).
    let (deepseek, other) = std::thread::scope(|s| {
        let deepseek = s.spawn(|| replies(Some("deepseek-v4-pro")));
        let other = replies(None);
        (deepseek.join().unwrap(), other)
    });
    let thought = serde_json::Value::from("Let me work this out.");
    assert_eq!(deepseek, ["".into(), thought.clone(), thought.clone()]);
    assert_eq!(other, [serde_json::Value::Null, thought.clone(), thought]);
}

/// The parent-cycle session with a line of the cycle overwritten by NUL
/// bytes (conservation's `parent-cycle.jsonl (nul-line)`): Qwen Code
/// skips the line and its walk stops at the record naming it. The relink
/// of that record to the record before the line would close the cycle
/// again (the walk would stop there, leaving out what it reached): it is
/// not made. The copy repairs (the input is not kept), holds no cycle,
/// and a second repair changes nothing.
#[test]
fn a_relink_that_would_close_a_hidden_cycle_is_not_made() {
    let text = std::fs::read(root().join("fixtures/qwen-code/parent-cycle.jsonl")).unwrap();
    let d = tempfile::tempdir().unwrap();
    for i in [9, 10] {
        let mut lines: Vec<Vec<u8>> = text
            .strip_suffix(b"\n")
            .unwrap_or(&text)
            .split(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        lines[i] = vec![0; lines[i].len()];
        let mut body = lines.join(&b'\n');
        body.push(b'\n');
        let dir = d.path().join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("s.jsonl");
        std::fs::write(&input, body).unwrap();
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "line {}: {log:#}", i + 1);
        let (_, doc) = lint_json(copy.to_str().unwrap(), &[]);
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["rule"] != "parent-cycle" && f["rule"] != "corrupt-record"),
            "line {}: {doc:#}",
            i + 1
        );
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}

/// A record glued to another on one line is a record Qwen Code reads: a
/// repair that re-links it must write the new link in the line's text.
/// The writer skipped every change to a glued record: the record after a
/// dropped stray result, glued to the next one, kept naming the result,
/// and the walk stopped there (conservation's `stray-result.jsonl
/// (glued)`, dangling-parent gained); a call's record glued to the next
/// one, answered, never took the result as its child's parent, and the
/// repair never settled. Now each changed record is written in place in
/// the line (the rest of the line as it is): the copy repairs (the input
/// is not kept), lints clean, and a second repair changes nothing.
#[test]
fn a_glued_record_a_repair_relinks_is_relinked_in_its_line() {
    let d = tempfile::tempdir().unwrap();
    for (fixture, at) in [
        ("fixtures/qwen-code/stray-result.jsonl", 6),
        ("fixtures/qwen-code/orphan-call.jsonl", 4),
    ] {
        let text = std::fs::read_to_string(root().join(fixture)).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let next = lines.remove(at + 1);
        lines[at].push_str(&next);
        let dir = d.path().join(at.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("s.jsonl");
        std::fs::write(&input, lines.join("\n") + "\n").unwrap();
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "{fixture}: {log:#}");
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{fixture}: {doc:#}");
        // The glued line is still one line, its second record as it was.
        let out = std::fs::read_to_string(&copy).unwrap();
        assert!(out.contains(&next), "{fixture}: {out}");
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}

/// A record written twice (a line repeated): Qwen Code merges records
/// sharing a uuid, their parts concatenated, and sends the call twice
/// (`duplicate-tool-call-id`). In the torn-then-resumed session the
/// repair's relink brings the repeat back into the resume, and the copy
/// held an error the input's resume did not reach, so the repair kept the
/// input as it is (conservation's `torn-then-resumed.jsonl (line-twice,
/// lines-swapped)`). The repeat's line is now dropped (it repeats the
/// earlier one byte for byte; it is in the log): the copy lints clean, and
/// a second repair changes nothing.
#[test]
fn a_record_written_twice_is_dropped_once() {
    let d = tempfile::tempdir().unwrap();
    let fixture = "fixtures/qwen-code/torn-then-resumed.jsonl";
    let text = std::fs::read_to_string(root().join(fixture)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let repeat = lines[3];
    assert!(repeat.contains("functionCall"), "{repeat}");
    lines.insert(3, repeat);
    let input = d.path().join("s.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let (copy, log) = repair_logged(&input, d.path());
    assert!(log["kept_input"].is_null(), "{log:#}");
    let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert!(
        log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "drop-repeat" && e["before"] == repeat),
        "{log:#}"
    );
    let out = std::fs::read_to_string(&copy).unwrap();
    assert_eq!(out.matches(repeat).count(), 1, "{out}");
    assert_second_repair_changes_nothing(&copy, d.path());
}
