//! LangGraph's SQLite checkpointer (issue 41), on databases the real
//! library wrote (fixtures/langgraph/README.md): each thread read as it
//! resumes, the orphan a state update leaves, the calls still to run (a
//! tool paused in `interrupt()`, a crash before the tool step) never
//! reported as orphans nor answered, a pickle never unpickled, a torn
//! checkpoint; a repair that appends a checkpoint the library resumes from.

mod common;
use common::*;

use serde_json::Value;
use std::path::Path;

const DB: &str = "fixtures/langgraph/checkpoints.sqlite";
const PICKLED: &str = "fixtures/langgraph/pickled.sqlite";
const TRUNCATED: &str = "fixtures/langgraph/truncated.sqlite";
/// The call whose `ToolMessage` a state update removed (thread `trimmed`).
const ORPHAN: &str = "call_mock_1";

fn findings(doc: &Value) -> Vec<&Value> {
    doc["findings"].as_array().unwrap().iter().collect()
}

/// `severity rule conversation first-id` of each finding, sorted.
fn summary(doc: &Value) -> Vec<String> {
    let mut v: Vec<String> = findings(doc)
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["conversation"].as_str().unwrap_or("-"),
                f["ids"][0].as_str().unwrap_or("-"),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn each_thread_is_read_as_it_resumes() {
    let o = run(&["inspect", "--format", "json", DB]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<(String, u64)> = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["messages"].as_u64().unwrap(),
            )
        })
        .collect();
    // healthy: question, call, result, answer; trimmed: the same without
    // the result; paused and crashed: question and call.
    assert_eq!(
        got,
        [
            ("crashed".to_string(), 2),
            ("healthy".to_string(), 4),
            ("paused".to_string(), 2),
            ("trimmed".to_string(), 3),
        ]
    );
}

#[test]
fn the_trimmed_thread_is_the_only_error_and_pending_calls_are_not_orphans() {
    let (code, doc) = lint_json(DB, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        summary(&doc),
        [
            "error orphan-tool-call trimmed call_mock_1",
            "info trailing-completion-call crashed call_mock_1",
            "info trailing-completion-call paused call_mock_1",
        ]
    );
    let orphan = findings(&doc)
        .into_iter()
        .find(|f| f["rule"] == "orphan-tool-call")
        .unwrap();
    let text = orphan.to_string();
    assert!(text.contains("INVALID_CHAT_HISTORY"), "{text}");
    assert_eq!(orphan["location"]["table"], "checkpoints", "{text}");
    let paused = findings(&doc)
        .into_iter()
        .find(|f| f["conversation"] == "paused")
        .unwrap();
    assert!(paused.to_string().contains("interrupt()"), "{paused}");
}

#[test]
fn lint_of_the_fixtures_is_stable() {
    for (name, db) in [
        ("checkpoints", DB),
        ("pickled", PICKLED),
        ("truncated", TRUNCATED),
    ] {
        let o = run(&["lint", db]);
        insta::assert_snapshot!(format!("langgraph_lint__{name}"), stdout(&o));
    }
}

#[test]
fn a_pickled_checkpoint_is_not_read_and_says_so() {
    let (code, doc) = lint_json(PICKLED, &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    assert_eq!(
        summary(&doc),
        ["warning unknown-record-type pickled -"],
        "{doc}"
    );
    assert!(doc.to_string().contains("never unpickled"), "{doc}");
}

#[test]
fn a_torn_checkpoint_is_a_corrupt_record_langgraph_cannot_load() {
    let (code, doc) = lint_json(TRUNCATED, &[]);
    assert_eq!(code, 1);
    assert_eq!(summary(&doc), ["error corrupt-record healthy -"], "{doc}");
    assert!(
        doc.to_string()
            .contains("LangGraph cannot load this thread"),
        "{doc}"
    );
}

/// Repair `db` into `dir/out.sqlite`, with its log.
fn repair(db: &Path, dir: &Path, name: &str) -> (std::path::PathBuf, Value) {
    let out = dir.join(format!("{name}.sqlite"));
    let log = dir.join(format!("{name}.log.json"));
    let o = run(&[
        "repair",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    (
        out,
        serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap(),
    )
}

#[test]
fn repair_appends_a_checkpoint_answering_the_orphan_only() {
    let d = tempfile::tempdir().unwrap();
    let input = root().join(DB);
    let before = fingerprint(&input);
    let (out, log) = repair(&input, d.path(), "once");
    assert_eq!(fingerprint(&input), before, "the input was touched");
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log}");
    assert_eq!(edits[0]["conversation"], "trimmed");
    assert_eq!(edits[0]["action"], "answer-call");
    assert_eq!(edits[0]["ids"], serde_json::json!([ORPHAN]));
    assert_eq!(edits[0]["synthesized"], true);
    // The old checkpoints are all there, and one more.
    let count = |p: &Path| -> i64 {
        rusqlite::Connection::open(p)
            .unwrap()
            .query_row("SELECT COUNT(*) FROM checkpoints", [], |r| r.get(0))
            .unwrap()
    };
    // Counted on a copy: opening the fixture (a WAL database, as
    // SqliteSaver leaves it) would create its `-wal` and `-shm`.
    let original = d.path().join("original.sqlite");
    std::fs::copy(&input, &original).unwrap();
    assert_eq!(count(&out), count(&original) + 1);
    // The copy: the orphan answered, the pending calls left as they were.
    let (code, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        summary(&doc),
        [
            "info trailing-completion-call crashed call_mock_1",
            "info trailing-completion-call paused call_mock_1",
        ]
    );
    // A second repair changes nothing.
    let (_, again) = repair(&out, d.path(), "twice");
    assert_eq!(again["edits"].as_array().unwrap().len(), 0, "{again}");
}

#[test]
fn the_new_checkpoint_follows_the_latest_one() {
    let d = tempfile::tempdir().unwrap();
    let (out, _) = repair(&root().join(DB), d.path(), "copy");
    let c = rusqlite::Connection::open(&out).unwrap();
    let rows: Vec<(String, Option<String>)> = c
        .prepare("SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = 'trimmed' ORDER BY checkpoint_id DESC LIMIT 2")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows[0].1.as_deref(), Some(rows[1].0.as_str()));
    let meta: String = c
        .query_row(
            "SELECT CAST(metadata AS TEXT) FROM checkpoints WHERE checkpoint_id = ?1",
            [&rows[0].0],
            |r| r.get(0),
        )
        .unwrap();
    assert!(meta.contains(r#""source":"update""#), "{meta}");
}

/// The venv's Python with LangGraph (scripts/test-all installs it).
fn judge(db: &Path) -> (i32, String, String) {
    let python = std::env::var("CHATFSCK_LANGGRAPH_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/tools/langgraph/bin/python")
            .display()
            .to_string()
    });
    let o = std::process::Command::new(python)
        .arg(root().join("tests/oracle/langgraph_judge.py"))
        .arg("resume")
        .arg(db)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(has_tool = "langgraph"),
    ignore = "needs LangGraph's venv in target/tools/langgraph (scripts/test-all installs it from tests/oracle/langgraph-requirements.txt)"
)]
fn langgraph_resumes_the_repaired_copy_and_not_the_original() {
    let d = tempfile::tempdir().unwrap();
    let original = d.path().join("original.sqlite");
    std::fs::copy(root().join(DB), &original).unwrap();
    let (rc, out, err) = judge(&original);
    assert_eq!(rc, 1, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(r#""thread": "trimmed""#) && l.contains("INVALID_CHAT_HISTORY")),
        "{out}{err}"
    );
    let (copy, _) = repair(&root().join(DB), d.path(), "copy");
    let (rc, out, err) = judge(&copy);
    assert_eq!(rc, 0, "{out}{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    for l in &lines {
        assert_eq!(l["ok"], true, "{l}");
    }
    let thread = |t: &str| lines.iter().find(|l| l["thread"] == t).unwrap();
    // The paused call was resumed by the user's answer, not by a placeholder.
    assert_eq!(
        thread("paused")["tool_results"],
        serde_json::json!(["approved: yes"])
    );
    assert_eq!(
        thread("crashed")["tool_results"],
        serde_json::json!(["ran crash-now"])
    );
    let trimmed = thread("trimmed")["tool_results"].to_string();
    assert!(trimmed.contains("chatfsck"), "{trimmed}");
}

/// `--orphan-calls=drop` is not what LangGraph users do: the call is left,
/// with the reason, and no checkpoint is added.
#[test]
fn dropping_the_orphan_call_is_refused_with_a_reason() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("drop.sqlite");
    let log = d.path().join("drop.json");
    let o = run(&[
        "repair",
        DB,
        "--orphan-calls=drop",
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(
        log["edits"].as_array().unwrap().len(),
        0,
        "{log}; {}",
        stderr(&o)
    );
    assert!(log.to_string().contains("orphan-calls=drop"), "{log}");
}
