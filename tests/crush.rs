//! Crush's `crush.db` (issue 40): the fixtures built from Crush's own
//! migration SQL (fixtures/crush/build.py), read as Crush at
//! charmbracelet/crush@37f36e93 loads a session, repaired in Crush's own
//! rows, and judged by a re-implementation of Crush's loader
//! (tests/oracle/crush.py: Crush itself cannot run here, docs/clients.md).

mod common;
use common::*;

use std::path::Path;

const HEALTHY: &str = "fixtures/crush/healthy/.crush/crush.db";
const DAMAGED: &str = "fixtures/crush/damaged/.crush/crush.db";

/// `severity rule conversation` of every finding, in the report's order.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["conversation"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_healthy_crush_db_reads_whole_and_clean() {
    let (rc, doc) = lint_json(HEALTHY, &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    let file = &doc["files"][0];
    assert_eq!(file["format"], "sqlite-table");
    assert_eq!(file["dialect"], "crush");
    assert_eq!(file["conversations"], 6);
    // The cancelled empty turn and the two rows before the summary are not
    // sent by Crush: counted, not read as messages.
    assert_eq!(file["meta_records"], 3, "{file:#}");
    assert_eq!(file["messages"], 24, "{file:#}");
    assert_eq!(file["tool_calls"], 4, "{file:#}");
    assert_eq!(file["tool_results"], 4, "{file:#}");
}

#[test]
fn every_pattern_is_found_with_what_crush_does_with_it() {
    let (rc, doc) = lint_json(DAMAGED, &[]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(
        findings(&doc),
        [
            // Crush answers an unanswered call itself (crush#1206): a warning.
            "warning orphan-tool-call d0000000-0001-4000-8000-000000000001",
            "warning orphan-tool-call d0000000-0002-4000-8000-000000000002",
            // It drops a result no call answers: a warning.
            "warning orphan-tool-result d0000000-0003-4000-8000-000000000003",
            // It sends an empty name as it is (crush#659).
            "error invalid-tool-name d0000000-0004-4000-8000-000000000004",
            "warning orphan-tool-call d0000000-0005-4000-8000-000000000005",
            // It sends a cut input as it is (crush#2720).
            "error invalid-tool-arguments d0000000-0005-4000-8000-000000000005",
            // It cannot load a session with a row it cannot read.
            "error corrupt-record d0000000-0006-4000-8000-000000000006",
            "warning unknown-record-type d0000000-0007-4000-8000-000000000007",
            "warning orphan-tool-call d0000000-0008-4000-8000-000000000008",
            // A second answer to an answered call is sent: an error.
            "error orphan-tool-result d0000000-0009-4000-8000-000000000009",
        ]
    );
    let text = |rule: &str| -> String {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| f.to_string())
            .collect()
    };
    assert!(
        text("orphan-tool-call").contains("tool call was interrupted and did not produce a result"),
        "{}",
        text("orphan-tool-call")
    );
    assert!(text("corrupt-record").contains("cannot load this session at all"));
    assert!(text("invalid-tool-name").contains("empty name"));
}

/// DeepSeek's thinking mode (issue 40): the healthy sessions as if a
/// DeepSeek model had written them (the rows' `model`). The second
/// session's answer after its calls carries no reasoning while the reply
/// with the calls does: Crush sends it without `reasoning_content`, and
/// DeepSeek refuses the request; the sessions with no reasoning at all
/// are left alone.
#[test]
fn a_deepseek_reply_without_its_reasoning_is_sent_as_it_is() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("crush.db");
    std::fs::copy(root().join(HEALTHY), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE messages SET model = 'deepseek-v4-pro', provider = 'deepseek' \
         WHERE role = 'assistant'",
        [],
    )
    .unwrap();
    drop(c);
    let (rc, doc) = lint_json(db.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(
        findings(&doc),
        ["error missing-reasoning-content a1b2c3d4-0002-4000-8000-000000000002"]
    );
    let f = &doc["findings"][0];
    assert_eq!(f["location"]["rowid"], 7, "{f:#}");
    let notes = f["notes"].to_string();
    for want in [
        "`deepseek-v4-pro` (a DeepSeek model)",
        "Crush sends `reasoning_content` only on a reply whose stored thinking is not empty",
        "DeepSeek answers `400 The `reasoning_content` in the thinking mode must be passed back to the API.`",
    ] {
        assert!(notes.contains(want), "{want}: {f:#}");
    }
}

#[test]
fn the_findings_read_as_they_should() {
    let o = run(&["lint", DAMAGED]);
    insta::assert_snapshot!("crush_lint_human", stdout(&o));
}

#[test]
fn a_repaired_copy_loses_nothing_and_a_second_repair_changes_nothing() {
    let before = fingerprint(&root().join(DAMAGED));
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("crush.db");
    std::fs::copy(root().join(DAMAGED), &src).unwrap();
    let out = d.path().join("out").join("crush.db");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let log = d.path().join("log.json");
    let o = run(&[
        "repair",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(fingerprint(&root().join(DAMAGED)), before);
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let actions: Vec<&str> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "answer-call",
            "answer-call",
            "remove-result",
            "replace-arguments",
            "answer-call",
            "drop-record",
            "remove-result"
        ]
    );
    let edits = log["edits"].as_array().unwrap();
    // What Crush writes for a cancelled run, with the call's name.
    let answer = edits[0]["after"].as_str().unwrap();
    assert!(
        answer.contains(r#""content":"Error: user cancelled assistant tool calling""#)
            && answer.contains(r#""name":"grep""#)
            && answer.contains(r#""is_error":true"#),
        "{answer}"
    );
    // Every removed payload is in the log.
    assert!(
        edits[2]["row"]["parts"]
            .as_str()
            .unwrap()
            .contains("toolu_01CrushGone000000000G2")
    );
    assert!(
        edits[3]["before"]
            .as_str()
            .unwrap()
            .contains(r#"\"old_str"#)
    );
    assert!(
        edits[5]["before"]
            .as_str()
            .unwrap()
            .contains("README.md describes a sh")
    );
    // What is left: the empty name (nothing says which tool ran), the
    // unknown part, and a call whose answer could not sort after it.
    let left: Vec<&str> = log["left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        left,
        [
            "invalid-tool-name",
            "unknown-record-type",
            "orphan-tool-call"
        ]
    );
    let (_, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        [
            "error invalid-tool-name d0000000-0004-4000-8000-000000000004",
            "warning unknown-record-type d0000000-0007-4000-8000-000000000007",
            "warning orphan-tool-call d0000000-0008-4000-8000-000000000008",
        ]
    );
    assert_second_repair_changes_nothing(&out, d.path());
}

#[test]
fn a_call_whose_answer_cannot_sort_after_it_is_dropped_on_request() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("crush.db");
    let o = run(&[
        "repair",
        DAMAGED,
        "-o",
        out.to_str().unwrap(),
        "--orphan-calls=drop",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (_, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert!(
        !findings(&doc)
            .iter()
            .any(|f| f.contains("orphan-tool-call")),
        "{doc:#}"
    );
}

#[test]
fn an_in_place_repair_of_the_database_is_refused_and_touches_nothing() {
    // SQLite stores are repaired into a copy only (as goose's, opencode's):
    // the refusal is one line, exit 2, and the input stays as it was.
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("crush.db");
    std::fs::copy(root().join(DAMAGED), &file).unwrap();
    let before = fingerprint(&file);
    let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("crush.db"), "{}", stderr(&o));
    assert_eq!(fingerprint(&file), before);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

#[test]
fn a_run_without_a_path_finds_the_projects_crush_lists() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("src").join("shop");
    std::fs::create_dir_all(project.join(".crush")).unwrap();
    std::fs::copy(
        root().join(DAMAGED),
        project.join(".crush").join("crush.db"),
    )
    .unwrap();
    let global = home.path().join(".local").join("share").join("crush");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("projects.json"),
        serde_json::json!({"projects": [{"path": project, "data_dir": project.join(".crush"), "last_accessed": "2026-05-21T00:00:00Z"}]}).to_string(),
    )
    .unwrap();
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let crush = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == "crush")
        .expect("Crush in the discovery table")
        .clone();
    assert_eq!(crush["sessions"], 9, "{crush:#}");
    // $CRUSH_GLOBAL_DATA moves the global data directory, projects.json
    // with it: nothing is listed there.
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CRUSH_GLOBAL_DATA", home.path().join("elsewhere"))
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let crush = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == "crush")
        .unwrap()
        .clone();
    assert_eq!(crush["sessions"], 0, "{crush:#}");
    assert!(crush.to_string().contains("elsewhere"), "{crush:#}");
}

/// Crush's loader, re-implemented (tests/oracle/crush.py), on every
/// session: (session, loads, valid).
fn judge(dbs: &[&Path]) -> Vec<(String, bool, bool)> {
    let mut c = python();
    c.arg("tests/oracle/crush.py");
    c.args(dbs);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["session"].as_str().unwrap().to_string(),
                v["loads"].as_bool().unwrap(),
                v["valid"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(not(has_tool = "python3"), ignore = "needs python3")]
fn crush_s_loader_sends_every_repaired_session_and_refuses_what_is_left() {
    let healthy = judge(&[&root().join(HEALTHY)]);
    assert!(healthy.iter().all(|(_, l, v)| *l && *v), "{healthy:?}");
    let damaged = judge(&[&root().join(DAMAGED)]);
    // The errors chatfsck reports are the sessions Crush cannot send.
    assert_eq!(
        damaged
            .iter()
            .filter(|(_, l, ok)| !(*l && *ok))
            .map(|(s, _, _)| s.as_str())
            .collect::<Vec<_>>(),
        [
            "d0000000-0004-4000-8000-000000000004",
            "d0000000-0005-4000-8000-000000000005",
            "d0000000-0006-4000-8000-000000000006",
            "d0000000-0007-4000-8000-000000000007",
            "d0000000-0009-4000-8000-000000000009",
        ]
    );
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("crush.db");
    let o = run(&["repair", DAMAGED, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let repaired = judge(&[&out]);
    // Only what the repair leaves, with a finding: the empty name and the
    // unknown part.
    assert_eq!(
        repaired
            .iter()
            .filter(|(_, l, ok)| !(*l && *ok))
            .map(|(s, _, _)| s.as_str())
            .collect::<Vec<_>>(),
        [
            "d0000000-0004-4000-8000-000000000004",
            "d0000000-0007-4000-8000-000000000007",
        ]
    );
    assert_eq!(repaired.len(), damaged.len());
}

/// A row whose `parts` is not UTF-8, or not text at all, is that row's
/// problem, never the whole database's: Go reads any bytes into a string
/// (invalid UTF-8 becomes U+FFFD in `json.Unmarshal`), and a number is
/// not the array `unmarshalParts` wants.
#[test]
fn a_row_of_bytes_that_are_not_utf8_does_not_stop_the_read() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("crush.db");
    std::fs::copy(root().join(HEALTHY), &db).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute(
            "UPDATE messages SET parts = ?1 WHERE rowid = 1",
            [b"[{\"type\":\"text\",\"data\":{\"text\":\"caf\xe9\"}}]".to_vec()],
        )
        .unwrap();
        c.execute("UPDATE messages SET parts = 1234 WHERE rowid = 2", [])
            .unwrap();
    }
    let (rc, doc) = lint_json(db.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["conversations"], 6, "{doc:#}");
    assert_eq!(
        findings(&doc),
        ["error corrupt-record a1b2c3d4-0001-4000-8000-000000000001"]
    );
    assert!(
        doc["findings"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("not a JSON array"),
        "{doc:#}"
    );
}
