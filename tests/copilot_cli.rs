//! GitHub Copilot CLI's event logs (issue 40): a session the pinned client
//! wrote (fixtures/copilot-cli/real/) and its damaged copies
//! (fixtures/copilot-cli/real.py), read as Copilot CLI 1.0.102 resumes
//! them, repaired in its own terms, and judged by the real client
//! (tests/oracle/copilot.py).

mod common;
use common::*;

use std::path::{Path, PathBuf};

const HEALTHY: &str = "fixtures/copilot-cli/real/7d65e2f1-0fba-4eeb-8c2f-8cf848b717b8/events.jsonl";

/// Each fixture and its findings (`severity rule@line`).
const EXPECTED: &[(&str, &[&str])] = &[
    (HEALTHY, &[]),
    (
        "fixtures/copilot-cli/real/orphan-call.jsonl",
        &["warning orphan-tool-call@6"],
    ),
    (
        "fixtures/copilot-cli/real/orphan-call-at-end.jsonl",
        &["warning orphan-tool-call@6"],
    ),
    (
        "fixtures/copilot-cli/real/stray-result.jsonl",
        &["error orphan-tool-result@9"],
    ),
    // Copilot CLI drops the glued line and rewrites the log without it:
    // the call's result is lost for good.
    (
        "fixtures/copilot-cli/real/glued.jsonl",
        &["error corrupt-record@8", "warning orphan-tool-call@6"],
    ),
    (
        "fixtures/copilot-cli/real/torn-tail.jsonl",
        &["warning corrupt-record@21"],
    ),
    // Copilot CLI drops both lines of the split prompt and rewrites the
    // log without them.
    (
        "fixtures/copilot-cli/real/split.jsonl",
        &["error split-record@16"],
    ),
    // It splits its log on `\n` only: the prompt and the reply are read
    // whole.
    (
        "fixtures/copilot-cli/real/line-separators.jsonl",
        &["info raw-line-separator@16", "info raw-line-separator@19"],
    ),
    // It drops the padding after the last line and resumes whole...
    (
        "fixtures/copilot-cli/real/nul-tail.jsonl",
        &["warning nul-padding@22"],
    ),
    // ...but drops a line whose event follows padding, event and all.
    (
        "fixtures/copilot-cli/real/nul-before-record.jsonl",
        &["error nul-padding@15"],
    ),
    // A torn event with the next run's first event glued after it: the
    // line is dropped, the whole event with it.
    (
        "fixtures/copilot-cli/real/glued-torn.jsonl",
        &["error corrupt-record@15"],
    ),
    // It refuses to resume: `Session file is corrupted (line 19: missing
    // field `messageId`)`.
    (
        "fixtures/copilot-cli/real/missing-field.jsonl",
        &["error missing-required-field@19"],
    ),
];

/// The edits of each fixture's repair (`action@line`).
const REPAIRS: &[(&str, &[&str])] = &[
    (
        "fixtures/copilot-cli/real/orphan-call.jsonl",
        &["answer-call@7", "relink@8"],
    ),
    (
        "fixtures/copilot-cli/real/orphan-call-at-end.jsonl",
        &["answer-call@7"],
    ),
    (
        "fixtures/copilot-cli/real/stray-result.jsonl",
        &["remove-result@9", "relink@10"],
    ),
    ("fixtures/copilot-cli/real/glued.jsonl", &["drop-record@8"]),
    (
        "fixtures/copilot-cli/real/torn-tail.jsonl",
        &["drop-record@21"],
    ),
    ("fixtures/copilot-cli/real/split.jsonl", &["join-lines@16"]),
    (
        "fixtures/copilot-cli/real/line-separators.jsonl",
        &["escape-separators@16", "escape-separators@19"],
    ),
    (
        "fixtures/copilot-cli/real/nul-tail.jsonl",
        &["drop-padding@22"],
    ),
    (
        "fixtures/copilot-cli/real/nul-before-record.jsonl",
        &["drop-padding@15"],
    ),
    (
        "fixtures/copilot-cli/real/glued-torn.jsonl",
        &["drop-record@15"],
    ),
];

fn repair_all(dir: &Path) -> Vec<PathBuf> {
    repair_fixtures(dir, REPAIRS)
}

fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Each event's `parentId` names the event before it, as Copilot CLI
/// writes them.
fn assert_chained(path: &Path) {
    let ev = events(path);
    for w in ev.windows(2) {
        assert_eq!(
            w[1]["parentId"],
            w[0]["id"],
            "{}: {:#}",
            path.display(),
            w[1]
        );
    }
}

#[test]
fn every_fixture_reads_as_copilot_cli_with_what_copilot_cli_does_with_it() {
    for (file, want) in EXPECTED {
        let (_, doc) = lint_json(file, &["--fail-on", "info"]);
        assert_eq!(doc["files"][0]["dialect"], "copilot-cli", "{file}: {doc:#}");
        assert_eq!(severity_rule_lines(&doc), *want, "{file}: {doc:#}");
        for f in doc["findings"].as_array().unwrap() {
            assert!(
                f["notes"].to_string().contains("Copilot CLI"),
                "{file}: {f:#}"
            );
            // A member the client requires and has no default for: report only.
            let fixable = f["rule"] != "missing-required-field";
            assert_eq!(f["fixable"], fixable, "{file}: {f:#}");
        }
    }
    // Every message of the session Copilot CLI wrote, and only those: its
    // system prompt, turns and usage records are not messages.
    let o = run(&["inspect", HEALTHY]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 3, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_repaired_copy_is_clean_chained_and_a_second_repair_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let copies = repair_all(d.path());
    for copy in &copies {
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{}: {doc:#}", copy.display());
        assert_second_repair_changes_nothing(copy, copy.parent().unwrap());
        assert_chained(copy);
    }
    // The result put in for an unanswered call is the one Copilot CLI
    // itself records on resume, right after the call's start.
    let ev = events(&d.path().join("orphan-call").join("orphan-call.jsonl"));
    let result = &ev[7];
    assert_eq!(result["type"], "tool.execution_complete", "{result:#}");
    assert_eq!(ev[6]["type"], "tool.execution_start", "{result:#}");
    assert_eq!(result["data"]["toolCallId"], ev[6]["data"]["toolCallId"]);
    assert_eq!(result["data"]["success"], false);
    assert_eq!(result["data"]["error"]["code"], "interrupted");
    assert!(
        result["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Tool execution was interrupted before a result was recorded."),
        "{result:#}"
    );
    // A glued line: both events it holds on lines of their own, the
    // result among them; nothing is put in for its call.
    let glued = events(&d.path().join("glued").join("glued.jsonl"));
    let healthy = events(&root().join(HEALTHY));
    assert_eq!(glued, healthy);
    // A torn last line: dropped, as Copilot CLI drops it.
    let torn = events(&d.path().join("torn-tail").join("torn-tail.jsonl"));
    assert_eq!(torn[..], healthy[..healthy.len() - 1]);
    // NUL padding: dropped, the event after it on its line kept.
    for name in ["nul-tail", "nul-before-record"] {
        let copy = d.path().join(name).join(format!("{name}.jsonl"));
        assert_eq!(events(&copy), healthy, "{name}");
    }
    // The split prompt: one event again, its newline escaped.
    let split = events(&d.path().join("split").join("split.jsonl"));
    assert_eq!(split.len(), healthy.len());
    assert_eq!(split[15]["data"]["content"], "second\nprompt");
    assert_eq!(split[15]["id"], healthy[15]["id"]);
    // The separators: the same texts, escaped in the file.
    let seps = d
        .path()
        .join("line-separators")
        .join("line-separators.jsonl");
    let text = std::fs::read_to_string(&seps).unwrap();
    assert!(!text.contains(['\u{2028}', '\u{2029}']), "{text}");
    assert!(text.contains("second\\u2028prompt"), "{text}");
    assert_eq!(events(&seps)[15]["data"]["content"], "second\u{2028}prompt");
    // A torn event glued before a whole one: the whole one is kept (the
    // second prompt), hung from the event before the line.
    let torn = events(&d.path().join("glued-torn").join("glued-torn.jsonl"));
    let mut want = healthy.clone();
    want.remove(14);
    want[14]["parentId"] = healthy[13]["id"].clone();
    assert_eq!(torn, want);
}

#[test]
fn an_in_place_repair_keeps_a_backup() {
    assert_in_place_repair_keeps_a_backup("fixtures/copilot-cli/real/glued.jsonl", "events.jsonl");
}

/// The pinned Copilot CLI resumes a glued line as the profile says, and
/// the repaired copies whole (a valid request carrying every unit of the
/// copy, each call answered by its real result or the one Copilot CLI puts
/// in): one copilot.py run, the clients side by side. (The torn and
/// end-of-log copies are checked byte for byte above: four runs keep the
/// test under 20 s.)
#[test]
#[cfg_attr(
    not(all(has_tool = "copilot-cli", has_tool = "python3")),
    ignore = "needs the pinned Copilot CLI and python3: scripts/test-all"
)]
fn the_pinned_copilot_cli_resumes_as_the_profile_says_and_the_repaired_copies_whole() {
    let d = tempfile::tempdir().unwrap();
    let copies = repair_all(&d.path().join("copies"));
    let judged: Vec<&PathBuf> = copies
        .iter()
        .filter(|c| {
            ["glued.jsonl", "orphan-call.jsonl", "stray-result.jsonl"]
                .iter()
                .any(|n| c.ends_with(n))
        })
        .collect();
    assert_eq!(judged.len(), 3, "{copies:?}");
    let o = python()
        .arg("tests/oracle/copilot.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .arg(root().join("fixtures/copilot-cli/real/glued.jsonl"))
        .args(&judged)
        .args(["--jobs", "4"])
        .output()
        .unwrap();
    let s = oracle_summaries("copilot.py", &o);
    assert_eq!(s.len(), 1 + judged.len(), "{s:#?}");
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["units_missing"], 0, "{r:#}");
        assert_eq!(r["unanswered"], serde_json::json!([]), "{r:#}");
    }
    let call = "call_mock_2";
    let real = "hi\n<shellId: 0 completed with exit code 0>";
    // A glued line: Copilot CLI drops it, and sends its own result in
    // place of the real one it held. Its repaired copy sends the real one.
    assert_eq!(
        s[0]["results"][call], "The execution of this tool, or a previous tool was interrupted.",
        "{:#}",
        s[0]
    );
    let copy = |name: &str| {
        s.iter()
            .find(|r| r["file"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name}: {s:#?}"))
    };
    assert_eq!(copy("glued/glued.jsonl")["results"][call], real);
    assert_eq!(
        copy("stray-result/stray-result.jsonl")["results"][call],
        real
    );
    // An unanswered call's copy: the result Copilot CLI itself records.
    assert!(
        copy("orphan-call/orphan-call.jsonl")["results"][call]
            .as_str()
            .unwrap()
            .starts_with("Tool execution was interrupted"),
        "{s:#?}"
    );
}

/// The pinned Copilot CLI resumes the copies repaired of line damage
/// whole, and refuses a session whose event lacks a member it requires,
/// as the profile says: one copilot.py run, the sessions side by side.
/// (The copies of NUL padding equal the healthy log byte for byte:
/// checked above, not resumed again.)
#[test]
#[cfg_attr(
    not(all(has_tool = "copilot-cli", has_tool = "python3")),
    ignore = "needs the pinned Copilot CLI and python3: scripts/test-all"
)]
fn the_pinned_copilot_cli_resumes_the_rejoined_and_escaped_copies_whole() {
    let d = tempfile::tempdir().unwrap();
    let judged: Vec<(&str, &[&str])> = REPAIRS
        .iter()
        .filter(|(f, _)| {
            ["split", "line-separators", "glued-torn"]
                .iter()
                .any(|n| f.ends_with(&format!("/{n}.jsonl")))
        })
        .copied()
        .collect();
    let copies = repair_fixtures(&d.path().join("copies"), &judged);
    assert_eq!(copies.len(), 3, "{copies:?}");
    let o = python()
        .arg("tests/oracle/copilot.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .arg(root().join("fixtures/copilot-cli/real/missing-field.jsonl"))
        .args(&copies)
        .args(["--jobs", "4"])
        .output()
        .unwrap();
    let s = oracle_summaries("copilot.py", &o);
    assert_eq!(s.len(), 1 + copies.len(), "{s:#?}");
    // An event without `data.messageId`: the whole session refused.
    assert_ne!(s[0]["rc"], 0, "{:#}", s[0]);
    assert_eq!(s[0]["valid"], false, "{:#}", s[0]);
    let err = s[0]["stderr"].as_str().unwrap_or_default();
    assert!(
        err.contains("Session file is corrupted (line 19: missing field `messageId`)"),
        "{:#}",
        s[0]
    );
    // Each copy: a valid request carrying every unit of the copy, the
    // rejoined prompt, the escaped texts and the kept event's prompt among
    // them.
    for r in &s[1..] {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["units_missing"], 0, "{r:#}");
        assert_eq!(r["unanswered"], serde_json::json!([]), "{r:#}");
    }
}

/// A log written in the schema's order (`id` first, the hand-made
/// sessions), its call's result glued to the next event (a stray result):
/// the repair finds both whole events on the line and writes them on lines
/// of their own, so the call keeps its real result (nothing is put in for
/// it) and the stray one is then dropped. Before, only events starting
/// `{"type":` were found: the line was dropped whole, a result was put in
/// for the call, and with the call's line written twice (conservation's
/// `b18e5d3c… (line-twice, line-twice, glued)`) that result landed after
/// the repeated call, an interleaved message the input does not have: the
/// repair kept the input as it is.
#[test]
fn a_glued_line_of_events_written_id_first_is_split_into_its_events() {
    let fixture = root().join(
        "fixtures/copilot-cli/home/.copilot/session-state/b18e5d3c-9a70-4c2f-8e14-6d5b3a2f1c03/events.jsonl",
    );
    let text = std::fs::read_to_string(&fixture).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (result, stray) = (lines[5], lines[6]);
    let result_id = serde_json::from_str::<serde_json::Value>(result).unwrap()["id"].clone();
    let glue = |ls: &[&str]| -> String {
        let mut out: Vec<String> = ls.iter().map(|l| l.to_string()).collect();
        let at = out.iter().position(|l| l == result).unwrap();
        let next = out.remove(at + 1);
        out[at].push_str(&next);
        out.join("\n") + "\n"
    };
    let mut twice = lines.clone();
    twice.insert(3, lines[3]);
    twice.insert(0, lines[0]);
    let d = tempfile::tempdir().unwrap();
    for (name, body) in [("glued", glue(&lines)), ("twice", glue(&twice))] {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("events.jsonl");
        std::fs::write(&input, &body).unwrap();
        let (_, before) = lint_json(input.to_str().unwrap(), &[]);
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "{name}: {log:#}");
        let (_, after) = lint_json(copy.to_str().unwrap(), &[]);
        let errors = |doc: &serde_json::Value| -> Vec<String> {
            let mut v: Vec<String> = doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] == "error")
                .map(|f| f["rule"].as_str().unwrap().to_string())
                .collect();
            v.sort();
            v
        };
        // What errors the copy still holds, the input held (the call
        // written twice: its id repeated).
        let (was, now) = (errors(&before), errors(&after));
        assert!(
            now.iter().all(|r| was.contains(r)),
            "{name}: {now:?} of {was:?}: {after:#}"
        );
        assert!(!now.contains(&"corrupt-record".to_string()), "{name}");
        let ev = events(&copy);
        // The real result is back, on a line of its own; the stray one is
        // dropped (in the log); nothing is put in.
        assert!(ev.iter().any(|e| e["id"] == result_id), "{name}");
        assert!(
            ev.iter().all(|e| e["data"]["model"] != "resumed"),
            "{name}: {ev:#?}"
        );
        let logged = log.to_string();
        assert!(logged.contains("toolu_01CopView000000000000Z9"), "{name}");
        assert!(
            log["edits"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["before"].as_str() == Some(&format!("{result}{stray}"))),
            "{name}: the glued line whole in the log: {log:#}"
        );
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}

/// An event with a byte that is not UTF-8 (here in its `parentId` key) is
/// no event the repair writes back: read as U+FFFD, its key would be
/// another, and the copy's event would lack `parentId` (a required
/// member). The line is dropped whole (it is in the log), as Copilot CLI
/// drops it; the copy repairs and lints clean.
#[test]
fn an_event_that_is_not_utf8_is_not_written_back() {
    let fixture = root().join(
        "fixtures/copilot-cli/home/.copilot/session-state/7a4f2c90-1d3e-4b8a-b6c5-0e9f8d7c6b02/events.jsonl",
    );
    let text = std::fs::read(&fixture).unwrap();
    let at = memchr_find(&text, b"\"parentId\":\"61845677").unwrap() + "\"parentI".len();
    let mut body = text.clone();
    body.insert(at, 0xE2);
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("events.jsonl");
    std::fs::write(&input, &body).unwrap();
    let (copy, log) = repair_logged(&input, d.path());
    assert!(log["kept_input"].is_null(), "{log:#}");
    let (_, doc) = lint_json(copy.to_str().unwrap(), &[]);
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] != "error"),
        "{doc:#}"
    );
    assert!(
        !String::from_utf8_lossy(&std::fs::read(&copy).unwrap()).contains('\u{FFFD}'),
        "the copy holds a U+FFFD"
    );
    assert_second_repair_changes_nothing(&copy, d.path());
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
