//! Codex rollouts, read as Codex 0.169.0 resumes them (docs/clients.md,
//! fixtures/codex/README.md): every fixture reports exactly what its README
//! row says (rule, severity, line); healthy rollouts and the real corpus
//! rollout raise nothing of error severity; every broken fixture repairs
//! into a copy that lints clean, keeps every other byte, and repairs to
//! itself a second time; the input is never touched.

mod common;
use common::*;

use std::path::Path;

/// (fixture, `rule@line:severity` expected, the repair's actions).
const TABLE: &[(&str, &[&str], &[&str])] = &[
    ("healthy/rollout.jsonl", &[], &[]),
    // The 28 items before the compacted line are not sent, by design.
    ("compacted/compacted-replacement-history.jsonl", &[], &[]),
    (
        "orphan-tool-call/middle-output-deleted.jsonl",
        &["orphan-tool-call@7:warning"],
        &["answer-call@7"],
    ),
    (
        "orphan-tool-call/end-truncated-after-call.jsonl",
        &["orphan-tool-call@21:warning"],
        &["answer-call@21"],
    ),
    (
        "orphan-tool-call/custom-tool-call-no-output.jsonl",
        &["orphan-tool-call@4:warning"],
        &["answer-call@4"],
    ),
    (
        "orphan-tool-call/custom-tool-call-function-output.jsonl",
        &["mismatched-tool-output@5:error"],
        &["retype-result@5"],
    ),
    (
        "orphan-tool-result/call-deleted.jsonl",
        &["orphan-tool-result@8:error"],
        &["remove-result@8"],
    ),
    (
        "reasoning-without-follower/ends-on-reasoning.jsonl",
        &["reasoning-without-follower@29:error"],
        &["drop-record@29"],
    ),
    (
        "reasoning-without-follower/torn-message-after-reasoning.jsonl",
        &[
            "corrupt-record@30:error",
            "reasoning-without-follower@29:error",
        ],
        &["drop-record@29", "drop-record@30"],
    ),
    (
        "not-utf8/byte-in-a-call.jsonl",
        &["corrupt-record@7:error", "orphan-tool-result@9:error"],
        &["drop-record@7", "remove-result@9"],
    ),
    (
        "torn-tail/torn-last-line.jsonl",
        &["corrupt-record@32:error"],
        &["drop-record@32"],
    ),
    (
        "duplicate-tool-call-id/call-written-twice.jsonl",
        &["duplicate-tool-call-id@8:error"],
        &["drop-repeat@8"],
    ),
    (
        "duplicate-tool-call-id/id-reused-later.jsonl",
        &["duplicate-tool-call-id@21:error"],
        &["rename-call@21", "rename-call@25"],
    ),
    (
        "invalid-item-id/foreign-ids.jsonl",
        &[
            "invalid-item-id@30:info",
            "invalid-item-id@32:error",
            "invalid-item-id@4:error",
        ],
        &["drop-item-id@30", "drop-item-id@32", "drop-item-id@4"],
    ),
    (
        "damaged-encrypted-content/cut-reasoning.jsonl",
        &["damaged-encrypted-content@20:error"],
        &["drop-record@20"],
    ),
    (
        "invalid-tool-name/nul-in-call-name.jsonl",
        &["invalid-tool-name@7:error"],
        &["rename-tool@7"],
    ),
];

const CORPUS_ROLLOUT: &str = "fixtures/corpus/codemie-ai__codemie-code/src/agents/plugins/codex/__tests__/fixtures/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl";

fn path(fixture: &str) -> String {
    format!("fixtures/codex/{fixture}")
}

/// `rule@line:severity` for every finding, sorted.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}@{}:{}",
                f["rule"].as_str().unwrap(),
                f["location"]["line"],
                f["severity"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// `text` written as a rollout in a new temporary folder, under the name
/// Codex gives the healthy fixture's session (a rollout is found by it).
fn as_rollout(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir
        .path()
        .join("rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl");
    std::fs::write(&input, text).unwrap();
    (dir, input)
}

/// The healthy rollout with `extra` written as a line of its own after
/// its line `after` (0-based).
fn healthy_with_line(after: usize, extra: &str) -> String {
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let mut text = String::new();
    for (i, l) in base.lines().enumerate() {
        text.push_str(l);
        text.push('\n');
        if i == after {
            text.push_str(extra);
            text.push('\n');
        }
    }
    text
}

/// `repair --format json INPUT -o OUT`, which must succeed: its log.
fn repaired(input: &Path, out: &Path) -> serde_json::Value {
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}: {}", input.display(), stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_table_covers_every_codex_fixture() {
    let mut on_disk: Vec<String> = walkdir::WalkDir::new(root().join("fixtures/codex"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        // Paginated histories (0.146 and later): tests/codex_today.rs.
        .filter(|e| {
            !e.path()
                .starts_with(root().join("fixtures/codex/paginated"))
        })
        .map(|e| {
            e.path()
                .strip_prefix(root().join("fixtures/codex"))
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = TABLE.iter().map(|(f, _, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn every_fixture_reports_what_its_readme_row_says() {
    let mut failures = Vec::new();
    for (fixture, want, _) in TABLE {
        let (code, doc) = lint_json(&path(fixture), &["--fail-on", "info"]);
        let got = findings(&doc);
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        if got != want {
            failures.push(format!(
                "{fixture}:\n  expected {want:?}\n  got      {got:?}"
            ));
        }
        assert_eq!(doc["files"][0]["dialect"], "codex", "{fixture}");
        let expect_code = i32::from(!want.is_empty());
        if code != expect_code {
            failures.push(format!("{fixture}: exit {code}, expected {expect_code}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn findings_say_what_codex_does() {
    let (_, doc) = lint_json(&path("orphan-tool-call/middle-output-deleted.jsonl"), &[]);
    let notes = doc["findings"][0]["notes"].to_string();
    assert!(
        notes.contains(r#"function_call_output{output:\"aborted\"}"#),
        "{notes}"
    );
    assert!(
        !notes.contains("every resume sends it unanswered"),
        "{notes}"
    );
    let (_, doc) = lint_json(
        &path("orphan-tool-call/custom-tool-call-no-output.jsonl"),
        &[],
    );
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("custom_tool_call_output")
    );
    let (_, doc) = lint_json(
        &path("orphan-tool-call/end-truncated-after-call.jsonl"),
        &[],
    );
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("still running")
    );
    let (_, doc) = lint_json(&path("orphan-tool-result/call-deleted.jsonl"), &[]);
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("Orphan function call output for call id: call_VZakMJ4krqqb1Wnmc8ZVkSKs")
    );
    let (_, doc) = lint_json(
        &path("reasoning-without-follower/ends-on-reasoning.jsonl"),
        &[],
    );
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("of type 'reasoning' was provided without its required following item")
    );
    let explain = stdout(&run(&["explain", "reasoning-without-follower"]));
    assert!(
        explain.contains(
            "Item 'rs_…' of type 'reasoning' was provided without its required following item."
        ),
        "{explain}"
    );
}

#[test]
fn compacted_replacement_history_is_the_base() {
    // What Codex sends: the two replacement messages (both on the
    // compacted line, 31) and the turn-2 answer after it.
    let o = run(&[
        "inspect",
        "--format",
        "json",
        &path("compacted/compacted-replacement-history.jsonl"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = doc.to_string();
    let (_, lint) = lint_json(&path("compacted/compacted-replacement-history.jsonl"), &[]);
    assert_eq!(lint["files"][0]["messages"], 3, "{lint:#}");
    assert!(text.contains("Another language model started"), "{text}");
}

/// A legacy `compacted` line (no `replacement_history`): Codex rebuilds
/// the history from the user messages so far and the summary
/// (`build_compacted_history`), so an unanswered call before it is never
/// sent: not a finding. The same call after the compaction is one.
#[test]
fn a_legacy_compaction_leaves_the_calls_before_it_behind() {
    let src =
        std::fs::read_to_string(root().join(path("orphan-tool-call/middle-output-deleted.jsonl")))
            .unwrap();
    let compacted = r#"{"timestamp":"2026-05-11T11:21:00.000Z","type":"compacted","payload":{"message":"Summary: the transcript was reviewed; one command's output was lost."}}"#;
    let (_dir, p) = as_rollout(&format!("{src}{compacted}\n"));
    let (code, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), Vec::<String>::new(), "{doc:#}");
    assert_eq!(code, 0);
    let o = run(&["inspect", "--format", "json", p.to_str().unwrap()]);
    assert!(stdout(&o).contains("Summary: the transcript was reviewed"));
    // Before the compaction the call is still what Codex sends.
    let mut lines: Vec<&str> = src.lines().collect();
    lines.insert(2, compacted);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let (_, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert!(
        findings(&doc)
            .iter()
            .any(|f| f.starts_with("orphan-tool-call")),
        "{doc:#}"
    );
}

#[test]
fn the_real_rollout_and_healthy_fixtures_raise_no_error() {
    let corpus = root().join(CORPUS_ROLLOUT);
    assert!(
        corpus.exists(),
        "the corpus rollout is missing: {}",
        corpus.display()
    );
    for p in [
        corpus.to_string_lossy().into_owned(),
        path("healthy/rollout.jsonl"),
    ] {
        let (code, doc) = lint_json(&p, &["--fail-on", "error"]);
        assert_eq!(code, 0, "{p}: {doc:#}");
        assert_eq!(doc["summary"]["errors"], 0, "{p}");
    }
}

/// How many lines of `orig` are not in `text`, and of `text` not in
/// `orig`, each line counted as often as it occurs (a line written twice
/// and dropped once is one line removed).
fn changed(orig: &str, text: &str) -> (usize, usize) {
    let mut count: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for l in orig.lines() {
        *count.entry(l).or_default() += 1;
    }
    for l in text.lines() {
        *count.entry(l).or_default() -= 1;
    }
    let removed = count.values().filter(|&&n| n > 0).sum::<i64>();
    let added = -count.values().filter(|&&n| n < 0).sum::<i64>();
    (removed as usize, added as usize)
}

#[test]
fn repairs_round_trip() {
    for (fixture, want_findings, want_actions) in TABLE {
        let input = root().join(path(fixture));
        let before = fingerprint(&input);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("repaired.jsonl");
        let o = run(&[
            "repair",
            "--format",
            "json",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{fixture}: {}", stderr(&o));
        let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut actions = edit_lines(&log);
        actions.sort();
        assert_eq!(actions, *want_actions, "{fixture}: {log:#}");
        assert!(
            log["left"].as_array().unwrap().is_empty(),
            "{fixture}: {log:#}"
        );
        // Every removed or replaced line is verbatim in the log.
        // (Lossily: a line that is not UTF-8 is logged as its lossy text,
        // with its bytes in `before_base64`.)
        let orig = String::from_utf8_lossy(&std::fs::read(&input).unwrap()).into_owned();
        for e in log["edits"].as_array().unwrap() {
            if let Some(b) = e["before"].as_str() {
                assert!(
                    orig.contains(b),
                    "{fixture}: `before` is not the input's line"
                );
            }
        }
        // The copy lints clean, and differs from the input only by the
        // edited lines.
        let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
        assert_eq!(rc, 0, "{fixture}: the copy still has {doc:#}");
        let copy = std::fs::read_to_string(&out).unwrap();
        let (removed, added) = changed(&orig, &copy);
        let edits = want_actions.len();
        assert!(
            removed <= edits && added <= edits,
            "{fixture}: {removed} lines removed, {added} added for {edits} edits"
        );
        if want_findings.is_empty() {
            assert_eq!(copy, orig, "{fixture}: nothing to repair, copy differs");
        }
        // A second repair changes nothing.
        let out2 = dir.path().join("again.jsonl");
        let o = run(&[
            "repair",
            "--format",
            "json",
            out.to_str().unwrap(),
            "-o",
            out2.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{fixture}: {}", stderr(&o));
        let log2: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            log2["edits"].as_array().unwrap().is_empty(),
            "{fixture}: {log2:#}"
        );
        assert_eq!(std::fs::read(&out2).unwrap(), copy.as_bytes(), "{fixture}");
        assert_eq!(
            fingerprint(&input),
            before,
            "{fixture}: the input was touched"
        );
    }
}

#[test]
fn the_aborted_output_is_what_codex_inserts_right_after_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.jsonl");
    let input = path("orphan-tool-call/middle-output-deleted.jsonl");
    let o = run(&["repair", &input, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let copy = std::fs::read_to_string(&out).unwrap();
    let line8: serde_json::Value = serde_json::from_str(copy.lines().nth(7).unwrap()).unwrap();
    assert_eq!(line8["type"], "response_item");
    assert_eq!(line8["payload"]["type"], "function_call_output");
    assert_eq!(line8["payload"]["call_id"], "call_VZakMJ4krqqb1Wnmc8ZVkSKs");
    assert_eq!(line8["payload"]["output"], "aborted");
    // Synthesized: refused with --no-synthesize.
    let out2 = dir.path().join("r2.jsonl");
    let o = run(&[
        "repair",
        "--no-synthesize",
        "--format",
        "json",
        &input,
        "-o",
        out2.to_str().unwrap(),
    ]);
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(log["edits"].as_array().unwrap().is_empty(), "{log:#}");
    assert_eq!(log["left"][0]["rule"], "orphan-tool-call");
}

#[test]
fn snapshots_of_lint_human_and_json() {
    for (fixture, _, _) in TABLE {
        let p = path(fixture);
        assert!(Path::new(&root().join(&p)).exists());
        let name = fixture.replace('/', "__");
        let human = stdout(&run(&["lint", &p]));
        insta::assert_snapshot!(format!("codex_lint_human__{name}"), human);
        let json = stdout(&run(&["lint", "--format", "json", &p]));
        insta::assert_snapshot!(format!("codex_lint_json__{name}"), json);
    }
}

#[test]
fn thread_rolled_back_takes_back_the_last_user_turns() {
    // The healthy rollout (two turns: the user_message events on lines 2
    // and 31), with `thread_rolled_back{num_turns:1}` appended: Codex
    // rebuilds the history without turn 2, so its answer (line 32) is not
    // part of what it sends.
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("rolled-back.jsonl");
    let rollback = r#"{"timestamp":"2026-05-11T11:30:00.000Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#;
    std::fs::write(&f, format!("{base}{rollback}\n")).unwrap();
    let (_, whole) = lint_json(&path("healthy/rollout.jsonl"), &[]);
    let (code, doc) = lint_json(f.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(
        doc["files"][0]["messages"].as_u64().unwrap() + 1,
        whole["files"][0]["messages"].as_u64().unwrap()
    );
    let o = run(&["inspect", "--format", "json", f.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"line\": 32"));
}

/// A torn last line cut inside a multi-byte character is dropped, and the
/// repair log keeps its exact bytes (issue 17: "kept verbatim" must be
/// verbatim), as every other writer does.
#[test]
fn a_torn_line_cut_inside_a_character_is_logged_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(path("torn-tail/torn-last-line.jsonl")).unwrap();
    bytes.extend_from_slice(" é".as_bytes());
    bytes.pop(); // half of `é`: the line is no longer UTF-8
    let input = d.path().join("rollout.jsonl");
    std::fs::write(&input, &bytes).unwrap();
    let (_, log) = repair_logged(&input, d.path());
    let dropped: Vec<&serde_json::Value> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["rule"] == "corrupt-record")
        .collect();
    assert_eq!(dropped.len(), 1, "{log:#}");
    let torn_start = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    use base64::Engine as _;
    assert_eq!(
        dropped[0]["before_base64"].as_str(),
        Some(
            base64::engine::general_purpose::STANDARD
                .encode(&bytes[torn_start..])
                .as_str()
        ),
        "{log:#}"
    );
}

/// Lines Codex's reader skips are dropped whole, whatever their lossy text
/// parses as: a `function_call` with a byte that is not UTF-8 (its lossy
/// text, with U+FFFD, is valid JSON), and a `response_item` without its
/// `payload`. The writer once judged both "not one to drop" and kept
/// them, so the copy still lost their calls' outputs
/// (fuzz/regressions/repair_file/codex-copy-reads-as-no-history).
#[test]
fn lines_codex_cannot_read_are_dropped_whatever_they_parse_as() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(path("healthy/rollout.jsonl")).unwrap();
    let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    // Line 7: a function_call whose timestamp holds a stray byte.
    let at = lines[6].iter().position(|&b| b == b'T').unwrap() + 1;
    lines[6][at] = 0xA9;
    // Line 12: a function_call whose `payload` key is damaged.
    let l12 = String::from_utf8(lines[11].clone()).unwrap();
    assert!(l12.contains("\"function_call\""), "{l12}");
    lines[11] = l12.replacen("\"payload\"", "\"paylofd\"", 1).into_bytes();
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    let input = d.path().join("rollout.jsonl");
    std::fs::write(&input, &bytes).unwrap();

    let o = run(&["lint", "--format", "json", input.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let got = findings(&doc);
    for want in ["corrupt-record@7:error", "corrupt-record@12:error"] {
        assert!(got.iter().any(|g| g == want), "{want} not in {got:?}");
    }

    let (out, log) = repair_logged(&input, d.path());
    let dropped: Vec<String> = edit_lines(&log)
        .into_iter()
        .filter(|e| e.starts_with("drop-record"))
        .collect();
    assert_eq!(dropped, ["drop-record@7", "drop-record@12"], "{log:#}");
    assert!(log["left"].as_array().unwrap().is_empty(), "{log:#}");
    let copy = std::fs::read(&out).unwrap();
    assert!(!copy.windows(9).any(|w| w == b"\"paylofd\""));
    assert!(std::str::from_utf8(&copy).is_ok());
    let o = run(&["lint", "--format", "json", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
}

/// Consecutive reasoning items with no model output after them are each
/// refused by the Responses API (the next item of each but the last is
/// reasoning). lint reported the last one only, so each repair pass
/// dropped one more and a long run never settled
/// (fuzz/regressions/repair_file/codex-second-repair-not-a-no-op). Each is
/// reported now, and one pass drops them all.
#[test]
fn consecutive_reasoning_items_without_output_are_each_reported() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(path("reasoning-without-follower/ends-on-reasoning.jsonl"))
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len();
    assert!(lines[last - 1].contains("\"reasoning\""));
    // Two more reasoning items (earlier ones of the file) after the last.
    let extra: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains("\"type\":\"reasoning\""))
        .take(2)
        .collect();
    let mut all = lines.clone();
    all.extend(&extra);
    let input = d.path().join("rollout.jsonl");
    std::fs::write(&input, all.join("\n") + "\n").unwrap();

    let o = run(&["lint", "--format", "json", input.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want: Vec<String> = (last..last + 3)
        .map(|l| format!("reasoning-without-follower@{l}:error"))
        .collect();
    assert_eq!(findings(&doc), want, "{doc:#}");

    let (out, log) = repair_logged(&input, d.path());
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 3, "{log:#}");
    assert!(
        edits
            .iter()
            .all(|e| !e["description"].as_str().unwrap().contains("(pass ")),
        "a later pass had more to do: {log:#}"
    );
    let o = run(&["lint", "--format", "json", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
}

/// Codex reads a lone surrogate escape (its serde_json takes `\ud800` in
/// an item's `output` and in a field it skips): the oracle sent such a
/// rollout whole (29/29, valid; docs/clients.md). lint raises nothing.
#[test]
fn a_lone_surrogate_escape_is_no_damage_to_codex() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(path("healthy/rollout.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(lines[4].contains("\"output\":\""), "{}", lines[4]);
    lines[4] = lines[4].replacen("\"output\":\"", "\"output\":\"\\ud800 ", 1);
    lines[8] = lines[8].replacen("\"payload\":{", "\"payload\":{\"x\":\"\\udc00\",", 1);
    let input = d.path().join("rollout.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let o = run(&["lint", "--format", "json", input.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(code(&o), 0, "{doc:#}");
    assert_eq!(findings(&doc), Vec::<String>::new(), "{doc:#}");
}

/// Members named twice: `timestamp` on line 4, `type` at the top of line
/// 5 and `call_id` in its payload, the payload's `type` on line 9. Codex
/// 0.169.0 reads each with its last value and sends every unit (the
/// oracle: 29 of 29, and never the first `call_id`). lint called lines 5
/// and 9 records Codex skips, with their calls unanswered, and the repair
/// dropped both outputs. Now each is read as Codex reads it.
#[test]
fn a_member_named_twice_is_read_as_codex_reads_it() {
    let input = root().join("tests/data/codex/member-named-twice.jsonl");
    let (code, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["summary"]["messages"], 17, "{doc:#}");
    let o = run(&["inspect", input.to_str().unwrap(), "--format", "json"]);
    assert!(!stdout(&o).contains("call_not_this_one"), "{}", stdout(&o));
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
    assert_eq!(log["edits"].as_array().unwrap().len(), 0, "{log:#}");
}

/// A call line written twice (a double write): Codex sends both calls,
/// answers neither itself (the output with their id is there), and the
/// request is refused for the repeated call_id. Lint said the first call
/// was unanswered and that Codex would insert an `"aborted"` output for
/// it, and the repair inserted one: the copy held the id twice and two
/// outputs for it, still refused. The repeat is the defect: lint reports
/// it alone, and the repair drops the repeated line, which gives back the
/// rollout as it was before the double write, byte for byte.
#[test]
fn a_call_written_twice_is_dropped_and_nothing_is_made_up() {
    let input = root().join(path("duplicate-tool-call-id/call-written-twice.jsonl"));
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        ["duplicate-tool-call-id@8:error"],
        "{doc:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    assert_eq!(log["edits"][0]["action"], "drop-repeat", "{log:#}");
    assert_eq!(log["edits"][0]["synthesized"], false, "{log:#}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(root().join(path("healthy/rollout.jsonl"))).unwrap()
    );
}

/// The call line written again after its output (a write retried late):
/// Codex has an output with that id, so it inserts nothing; lint reported
/// the repeat as an unanswered call too, and the repair inserted an
/// `"aborted"` output it then had to remove again. The repeat alone is
/// reported, and dropped.
#[test]
fn a_call_written_again_after_its_output_is_a_repeat_only() {
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let lines: Vec<&str> = base.lines().collect();
    // Line 7's call, again after line 9 (its output).
    let (dir, input) = as_rollout(&healthy_with_line(8, lines[6]));
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        ["duplicate-tool-call-id@10:error"],
        "{doc:#}"
    );
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    assert_eq!(log["edits"].as_array().unwrap().len(), 1, "{log:#}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), base);
}

/// A reused call id whose calls differ (another command) is no repeat:
/// reported, never dropped.
#[test]
fn a_reused_call_id_with_other_arguments_is_reported_only() {
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let lines: Vec<&str> = base.lines().collect();
    let other = lines[6].replace("wc -l", "wc -c");
    assert_ne!(other, lines[6]);
    let (_dir, input) = as_rollout(&healthy_with_line(6, &other));
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    let found = findings(&doc);
    assert!(
        found.contains(&"duplicate-tool-call-id@8:error".to_string()),
        "{doc:#}"
    );
    let dup = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "duplicate-tool-call-id")
        .unwrap();
    assert_eq!(dup["fixable"], false, "{dup:#}");
}

/// Issue 35, defect 15: repair time grew with the square of the calls
/// that share one `call_id` (80,000 took 79 s, lint 5.4 s): a call and
/// its output written again and again, each repeated call removed and
/// each output left answering none removed after it. The copy's lint
/// counted every turn over every message for each stray output. 30,000
/// of them took minutes, where they take seconds now (bench/shared_id.sh
/// times them).
#[test]
fn repair_is_linear_in_calls_sharing_a_call_id() {
    let n = 30_000;
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let mut text: String = base.lines().take(2).map(|l| format!("{l}\n")).collect();
    for i in 0..n {
        let ts = format!(
            "2026-05-11T11:{:02}:{:02}.{:03}Z",
            i / 60000,
            i / 1000 % 60,
            i % 1000
        );
        text.push_str(&format!(
            r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"ls\"}}","call_id":"call_same"}}}}"#
        ));
        text.push('\n');
        text.push_str(&format!(
            r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"function_call_output","call_id":"call_same","output":"a.txt"}}}}"#
        ));
        text.push('\n');
    }
    let (dir, input) = as_rollout(&text);
    let out = dir.path().join("out.jsonl");
    let said = repair_within_a_minute(&input, &out, "one call_id");
    assert!(
        said.contains(&format!("applied {} edits", 2 * n - 2)),
        "{said}"
    );
}

/// Issue 39, pattern 2: a later call reuses the call_id of a call already
/// answered (an id counter that restarted), and its own output follows
/// it. Codex 0.169.0 sends both calls and both outputs as stored, and the
/// request is refused (the oracle's `duplicate_call_id`). The repair left
/// the rollout as it was; now the later call and its output get a call_id
/// of their own, derived from the old one, logged, and every other line
/// is the input's.
#[test]
fn a_reused_call_id_gets_an_id_of_its_own_with_its_output() {
    let input = root().join(path("duplicate-tool-call-id/id-reused-later.jsonl"));
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(doc["findings"][0]["fixable"], true, "{doc:#}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    let orig = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    let (old, new) = (
        "call_AvUkcEDS8tiUyr1JW8hw2z43",
        "call_AvUkcEDS8tiUyr1JW8hw2z43_2",
    );
    for (i, (a, b)) in orig.lines().zip(copy.lines()).enumerate() {
        if i == 20 || i == 24 {
            assert_eq!(b, a.replace(old, new), "line {}", i + 1);
        } else {
            assert_eq!(a, b, "line {}", i + 1);
        }
    }
    assert_eq!(orig.lines().count(), copy.lines().count());
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{log:#}");
    for e in edits {
        assert_eq!(e["action"], "rename-call");
        assert!(orig.contains(e["before"].as_str().unwrap()));
        assert!(e["description"].as_str().unwrap().contains(new), "{e:#}");
    }
    // Two calls under one id in one turn, both open when the outputs
    // come: which output answers which call is not known. Reported only.
    let base = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let text = base.replace(
        "call_S9CCSetFADlbjlahU9MvN15w",
        "call_VZakMJ4krqqb1Wnmc8ZVkSKs",
    );
    let (_dir, input) = as_rollout(&text);
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    let dup = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "duplicate-tool-call-id")
        .expect("reported");
    assert_eq!(dup["fixable"], false, "{dup:#}");
}

/// Issue 39: item ids of the wrong shape. Codex 0.169.0 sends a stored
/// `id` with its item (`item_…`, `resp_…_msg`), and the Responses API
/// refuses the request (`invalid_id_prefix`); a UUID-shaped id it leaves
/// out of the request itself (measured with the pinned client), so that
/// one is information. Nothing was reported. The repair removes the id and
/// nothing else: every other byte of each line is the input's.
#[test]
fn item_ids_of_the_wrong_shape_are_reported_and_removed() {
    let input = root().join(path("invalid-item-id/foreign-ids.jsonl"));
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    let notes = doc["findings"].to_string();
    assert!(
        notes.contains("Expected an ID that begins with 'fc'"),
        "{notes}"
    );
    assert!(notes.contains("leaves a UUID-shaped id out"), "{notes}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    let orig = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    assert_eq!(orig.lines().count(), copy.lines().count());
    let ids = [
        (3, r#""id":"item_c270d5511c7129adc7475632","#),
        (29, r#""id":"019f629b-43ee-7a82-acb1-3071dbffbdad","#),
        (31, r#""id":"resp_68a1c0e2_msg","#),
    ];
    for (i, (a, b)) in orig.lines().zip(copy.lines()).enumerate() {
        match ids.iter().find(|(n, _)| *n == i) {
            Some((_, id)) => assert_eq!(b, a.replacen(id, "", 1), "line {}", i + 1),
            None => assert_eq!(a, b, "line {}", i + 1),
        }
    }
    for e in log["edits"].as_array().unwrap() {
        assert_eq!(e["action"], "drop-item-id");
        assert!(orig.contains(e["before"].as_str().unwrap()));
    }
}

/// Issue 39 (openai/codex#24369): a call's name with NULs written into it.
/// Codex 0.169.0 sends it as stored and the Responses API refuses every
/// resume (`Invalid 'input[N].name': string does not match pattern`). The
/// repair names the call without its NULs and changes nothing else: the
/// call_id, and so the output that answers it, are kept.
#[test]
fn a_call_name_with_nuls_is_reported_and_renamed() {
    let input = root().join(path("invalid-tool-name/nul-in-call-name.jsonl"));
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    let f = &doc["findings"][0];
    assert!(f["summary"].to_string().contains("NUL"), "{f:#}");
    assert!(
        f["notes"].to_string().contains("does not match pattern"),
        "{f:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    let orig = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    let healthy = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    // The copy is the rollout the damage was made from.
    assert_eq!(copy, healthy);
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log:#}");
    assert_eq!(edits[0]["action"], "rename-tool");
    assert_eq!(
        edits[0]["before"].as_str().unwrap(),
        orig.lines().nth(6).unwrap()
    );
}

/// Issue 39: encrypted reasoning cut short (37 characters lost). Codex
/// 0.169.0 sends it as stored and the API cannot verify it
/// (`invalid_encrypted_content`); nothing was reported. The repair drops
/// the reasoning item (verbatim in the log) and keeps the output after it.
/// Every whole token of the fixtures (85, all `gAAAAA…`) passes the check.
#[test]
fn cut_encrypted_reasoning_is_reported_and_dropped() {
    let input = root().join(path("damaged-encrypted-content/cut-reasoning.jsonl"));
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("could not be verified"),
        "{doc:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.jsonl");
    let log = repaired(&input, &out);
    let orig = std::fs::read_to_string(&input).unwrap();
    let line20 = orig.lines().nth(19).unwrap();
    assert_eq!(log["edits"][0]["before"], line20, "{log:#}");
    let copy = std::fs::read_to_string(&out).unwrap();
    let want: Vec<&str> = orig.lines().filter(|l| *l != line20).collect();
    assert_eq!(copy.lines().collect::<Vec<_>>(), want);
    // A token whose characters are not URL-safe base64 (standard base64's
    // `+`) is damaged too; the healthy rollout's tokens are not.
    let healthy = std::fs::read_to_string(root().join(path("healthy/rollout.jsonl"))).unwrap();
    let (_d, p) = as_rollout(&healthy.replacen("gAAAAABqAa-w4ey7h", "gAAAAABqAa+w4ey7h", 1));
    let (_, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        ["damaged-encrypted-content@20:error"],
        "{doc:#}"
    );
}
