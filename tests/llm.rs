//! Simon Willison's `llm` CLI: its `logs.db` (fixtures/llm, written by the
//! real llm 0.31.1, one conversation per pattern; see its README), each
//! conversation read as `llm -c` replays it, the findings with what llm
//! does with each, the repair, and llm itself continuing the repaired
//! copy against the loopback mock.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::Path;

const DB: &str = "fixtures/llm/logs.db";
const DB_036: &str = "fixtures/llm/logs-0.36.db";
const STORE: &str = "fixtures/llm/store.db";

/// Conversation id → its name (the pattern, from its first prompt).
fn names(db: &Path) -> BTreeMap<String, String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st = conn.prepare("SELECT id, name FROM conversations").unwrap();
    st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (id, name) = r.unwrap();
            (id, name.split(':').next().unwrap().to_string())
        })
        .collect()
}

/// `severity rule@pattern`, sorted.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let names = names(&root().join(DB));
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}@{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                names[f["conversation"].as_str().unwrap()]
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_pattern_is_found_with_what_llm_does_and_the_healthy_ones_are_clean() {
    let (code, doc) = lint_json(DB, &["--fail-on", "info"]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "sqlite-table", "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "llm", "{doc:#}");
    assert_eq!(
        findings(&doc),
        [
            "error corrupt-record@torn-arguments",
            "error orphan-tool-call@interrupted",
            "error orphan-tool-call@lost-result",
            "error orphan-tool-result@lost-response",
        ],
        "{doc:#}"
    );
    for f in doc["findings"].as_array().unwrap() {
        let text = format!("{} {}", f["summary"], f["notes"]);
        assert!(text.contains("llm -c"), "{f:#}");
        assert_eq!(f["fixable"], true, "{f:#}");
    }
    // The evidence is the row: the torn `arguments` of a `tool_calls` row.
    let torn = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "corrupt-record")
        .unwrap();
    assert_eq!(torn["location"]["table"], "tool_calls", "{torn:#}");
}

/// `json.loads` reads `NaN`, `Infinity`, numbers beyond a double and
/// lone surrogate escapes (Python's `json.dumps` writes the first three):
/// a column holding them is not a corrupt record, and a torn one is
/// still reported with the message llm's traceback gives.
#[test]
fn what_pythons_json_reads_is_not_corrupt() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("logs.db");
    std::fs::copy(root().join(DB), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        r#"UPDATE responses SET options_json = '{"temperature": NaN, "top_p": -Infinity}',
                  response_json = '{"usage": 1e400, "note": "cut \ud83d"}'
            WHERE id = '01m8k6wtk4gw4catkxv1jvpkvp';
           UPDATE tool_calls SET arguments = '{"command": "ls", "limit": Infinity}' WHERE id = 1;"#,
    )
    .unwrap();
    drop(conn);
    let (code, doc) = lint_json(db.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(
        findings(&doc),
        [
            "error corrupt-record@torn-arguments",
            "error orphan-tool-call@interrupted",
            "error orphan-tool-call@lost-result",
            "error orphan-tool-result@lost-response",
        ],
        "{doc:#}"
    );
    let torn = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "corrupt-record")
        .unwrap();
    assert!(
        torn["summary"]
            .as_str()
            .unwrap()
            .contains("Expecting ':' delimiter: line 1 column 11 (char 10)"),
        "{torn:#}"
    );
}

/// What `llm -c` sends is what inspect shows: the prompt of the lost
/// response is gone from the conversation, its result is still there.
#[test]
fn each_conversation_holds_what_llm_replays() {
    let names = names(&root().join(DB));
    let cid = |n: &str| names.iter().find(|(_, v)| *v == n).unwrap().0.clone();
    let show = |n: &str| {
        let o = run(&["inspect", "--format", "json", DB, "--conversation", &cid(n)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let healthy = show("healthy");
    for text in [
        "Answer briefly.",
        "[mock:bash pwd]",
        "out of pwd",
        "Thanks.",
    ] {
        assert!(healthy.contains(text), "{text}: {healthy}");
    }
    let lost = show("lost-response");
    assert!(lost.contains("out of pwd"), "{lost}");
    assert!(!lost.contains("[mock:bash pwd]"), "{lost}");
}

#[test]
fn the_human_report_is_reviewed() {
    let o = run(&["lint", DB]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    insta::assert_snapshot!("llm_lint_human", stdout(&o));
}

/// A message store this reader does not know is refused with one line
/// naming the file, never reported clean: a migration llm 0.36 does not
/// have (a newer llm's), or a column of the store missing.
#[test]
fn an_unknown_message_store_is_refused_with_one_line() {
    let cases: [(&str, &str); 2] = [
        (
            "INSERT INTO _llm_migrations (name, applied_at) VALUES ('m028_something_new', '2027-01-01')",
            "m028_something_new",
        ),
        (
            "ALTER TABLE parts DROP COLUMN payload",
            "no `payload` column",
        ),
    ];
    for (sql, says) in cases {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("logs.db");
        std::fs::copy(root().join(STORE), &db).unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        for cmd in ["lint", "repair"] {
            let out = d.path().join("out.db");
            let mut args = vec![cmd, db.to_str().unwrap()];
            if cmd == "repair" {
                args.extend(["-o", out.to_str().unwrap()]);
            }
            let o = run(&args);
            assert_eq!(code(&o), 2, "{cmd}: {}", stdout(&o));
            let err = stderr(&o);
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(err.contains("logs.db"), "{err}");
            assert!(err.contains(says), "{err}");
            assert!(!out.exists(), "{cmd} wrote {}", out.display());
        }
    }
}

/// A file of llm 0.31 migrated by llm 0.36, one more prompt logged by 0.36:
/// the old conversation is read from `responses` (it has no thread), the new
/// one from its thread; both healthy.
#[test]
fn a_migrated_file_is_read_from_both_tables() {
    let (rc, doc) = lint_json(DB_036, &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["files"][0]["conversations"], 2, "{doc:#}");
    for (cid, t) in [
        ("01m8k76kv4d1b8mab4qmv8qrph", "A plain question, no tools."),
        ("01m8k7n0w47apysh64kna2ghr4", "Written by llm 0.36."),
    ] {
        let o = run(&["inspect", "--format", "json", DB_036, "--conversation", cid]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains(t), "{t}: {text}");
    }
}

/// Repair: each call answered as llm files a result (a `tool_results`
/// row on the response after it, or on a response appended after the
/// last), the stray result deleted, the torn column replaced; all of it
/// logged, the input untouched, a second repair changes nothing and the
/// copy is clean.
#[test]
fn the_repair_answers_as_llm_records_results_and_settles() {
    let d = tempfile::tempdir().unwrap();
    let input = root().join(DB);
    let before = fingerprint(&input);
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(fingerprint(&input), before, "the input was touched");
    let names = names(&input);
    let mut edits: Vec<String> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}@{}",
                e["action"].as_str().unwrap(),
                e["location"]["table"].as_str().unwrap(),
                names[e["conversation"].as_str().unwrap()]
            )
        })
        .collect();
    edits.sort();
    assert_eq!(
        edits,
        [
            "answer-call tool_results@interrupted",
            "answer-call tool_results@lost-result",
            "remove-result tool_results@lost-response",
            "replace-column tool_calls@torn-arguments",
        ],
        "{log:#}"
    );
    for e in log["edits"].as_array().unwrap() {
        match e["action"].as_str().unwrap() {
            "remove-result" => assert_eq!(e["row"]["output"], "out of pwd", "{e:#}"),
            "replace-column" => {
                assert!(
                    e["before"].as_str().unwrap().contains("{\\\"command"),
                    "{e:#}"
                );
                assert_eq!(e["after"], r#"{"arguments":"{}"}"#, "{e:#}");
            }
            _ => assert_eq!(e["synthesized"], true, "{e:#}"),
        }
    }
    let (code, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_second_repair_changes_nothing(&out, d.path());
    // The interrupted conversation got a response after its last one.
    let conn = rusqlite::Connection::open(&out).unwrap();
    let cid = names.iter().find(|(_, v)| *v == "interrupted").unwrap().0;
    let (count, last_prompt): (i64, String) = conn
        .query_row(
            "SELECT count(*), (SELECT prompt FROM responses WHERE conversation_id = ?1 ORDER BY rowid DESC LIMIT 1) FROM responses WHERE conversation_id = ?1",
            [cid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((count, last_prompt.as_str()), (2, ""));
}

/// The orphan call left when the next response has a prompt of its own:
/// `build_messages` sends that prompt before the results filed with it,
/// so nothing is inserted and the finding is left, with the reason;
/// `--orphan-calls=drop` deletes the call instead.
#[test]
fn an_answer_that_would_not_follow_its_call_is_not_inserted() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("logs.db");
    std::fs::copy(root().join(DB), &db).unwrap();
    let names = names(&db);
    let cid = names.iter().find(|(_, v)| *v == "lost-result").unwrap().0;
    let conn = rusqlite::Connection::open(&db).unwrap();
    // The empty prompt of the step that followed the call becomes a user's.
    conn.execute(
        "UPDATE responses SET prompt = 'And now?' WHERE rowid = (SELECT rowid FROM responses WHERE conversation_id = ?1 ORDER BY rowid LIMIT 1 OFFSET 3)",
        [cid],
    )
    .unwrap();
    drop(conn);
    let out = d.path().join("out.db");
    let o = run(&[
        "repair",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("sends a response's prompt before the tool results"),
        "{report:#}"
    );
    let out2 = d.path().join("out2.db");
    let o = run(&[
        "repair",
        db.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
        "--orphan-calls=drop",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (code, doc) = lint_json(out2.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
}

/// llm itself (0.31.1, tests/oracle/llm_oracle.py) continues each
/// conversation with `llm -c --cid` against the loopback mock: on the
/// fixture, what the findings say happens does (a request OpenAI refuses,
/// a traceback); on the repaired copy every conversation goes on, with
/// every call answered and every message it sent before.
#[test]
#[cfg_attr(
    not(has_tool = "llm"),
    ignore = "needs llm 0.31.1 (scripts/test-all installs tests/oracle/llm-requirements.txt into target/tools/llm)"
)]
fn llm_continues_every_repaired_conversation() {
    let python = std::env::var("CHATFSCK_LLM_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/tools/llm/bin/python")
            .to_string_lossy()
            .into_owned()
    });
    let d = tempfile::tempdir().unwrap();
    // llm logs each continuation into the database: copies only.
    let original = d.path().join("original.db");
    std::fs::copy(root().join(DB), &original).unwrap();
    let repaired = d.path().join("repaired.db");
    let o = run(&["repair", DB, "-o", repaired.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let names = names(&original);
    let mut args: Vec<String> = vec![
        root()
            .join("tests/oracle/llm_oracle.py")
            .to_string_lossy()
            .into_owned(),
        python.clone(),
        "judge".into(),
    ];
    for db in [&original, &repaired] {
        args.push(db.to_string_lossy().into_owned());
        args.extend(names.keys().cloned());
    }
    let o = std::process::Command::new(&python)
        .args(&args)
        .output()
        .expect("the llm venv's python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2 * names.len());
    let get = |db: &Path, name: &str| {
        runs.iter()
            .find(|r| r["db"] == db.to_str().unwrap() && names[r["cid"].as_str().unwrap()] == name)
            .unwrap()
            .clone()
    };
    // Before: what each finding says.
    for name in ["healthy", "A plain question, no tools."] {
        assert_eq!(get(&original, name)["valid"], true, "{name}");
    }
    for name in ["lost-result", "interrupted"] {
        let r = get(&original, name);
        assert_eq!(
            r["errors"],
            serde_json::json!(["tool_calls_no_response"]),
            "{r}"
        );
    }
    let r = get(&original, "lost-response");
    assert_eq!(
        r["errors"],
        serde_json::json!(["orphan_tool_message"]),
        "{r}"
    );
    let r = get(&original, "torn-arguments");
    assert_eq!(r["code"], 1, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("JSONDecodeError"),
        "{r}"
    );
    assert!(r["roles"].is_null(), "nothing was sent: {r}");
    // After: every conversation goes on, every call answered, and every
    // message sent before is sent again.
    for name in names.values() {
        let after = get(&repaired, name);
        assert_eq!(after["code"], 0, "{after}");
        assert_eq!(after["valid"], true, "{after}");
        let mut calls: Vec<&serde_json::Value> =
            after["calls"].as_array().unwrap().iter().collect();
        let mut results: Vec<&serde_json::Value> =
            after["results"].as_array().unwrap().iter().collect();
        calls.sort_by_key(|v| v.to_string());
        results.sort_by_key(|v| v.to_string());
        assert_eq!(calls, results, "{after}");
        let before = get(&original, name);
        if let Some(texts) = before["texts"].as_array() {
            // The stray result is deleted (kept in the repair log).
            let stray = serde_json::json!("out of pwd");
            for t in texts
                .iter()
                .filter(|t| name != "lost-response" || **t != stray)
            {
                assert!(
                    after["texts"].as_array().unwrap().contains(t),
                    "{t} lost: {after}"
                );
            }
        }
    }
    // The torn call is sent with the arguments llm reads as nothing.
    assert_eq!(
        get(&repaired, "torn-arguments")["calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

// llm 0.36's message store (fixtures/llm/store.db, written by the real
// llm 0.36 through tests/oracle/llm_oracle.py make-store; one thread per
// pattern, named by its first prompt).

/// Thread id → its name (the pattern, from its first prompt).
fn thread_names(db: &Path) -> BTreeMap<String, String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st = conn.prepare("SELECT id, name FROM threads").unwrap();
    st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (id, name) = r.unwrap();
            (id, name.split(':').next().unwrap().to_string())
        })
        .collect()
}

/// `severity rule@pattern`, sorted, for the threads of `db`.
fn store_findings(db: &Path, doc: &serde_json::Value) -> Vec<String> {
    let names = thread_names(db);
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}@{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                names[f["conversation"].as_str().unwrap()]
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_pattern_of_the_message_store_is_found_and_the_healthy_threads_are_clean() {
    let (rc, doc) = lint_json(STORE, &["--fail-on", "info"]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "llm", "{doc:#}");
    assert_eq!(doc["files"][0]["conversations"], 8, "{doc:#}");
    assert_eq!(
        store_findings(&root().join(STORE), &doc),
        [
            "error corrupt-record@torn-arguments",
            "error dangling-parent@broken-chain",
            "error dangling-parent@missing-tip",
            "error empty-message@lost-call",
            "error orphan-tool-call@interrupted",
            "error orphan-tool-call@lost-result",
            "error orphan-tool-result@lost-call",
            "error orphan-tool-result@torn-arguments",
            "warning empty-message@lost-result",
        ],
        "{doc:#}"
    );
    for f in doc["findings"].as_array().unwrap() {
        assert_eq!(f["fixable"], true, "{f:#}");
        if f["severity"] == "error" {
            let text = format!("{} {}", f["summary"], f["notes"]);
            assert!(text.contains("llm -c"), "{f:#}");
        }
    }
    // The evidence names the exact rows: a part, a message, the thread.
    let at = |rule: &str, table: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule && f["location"]["table"] == table)
    };
    assert!(at("corrupt-record", "parts"), "{doc:#}");
    assert!(at("orphan-tool-call", "parts"), "{doc:#}");
    assert!(at("dangling-parent", "messages"), "{doc:#}");
    assert!(at("dangling-parent", "threads"), "{doc:#}");
    let broken = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "dangling-parent" && f["location"]["table"] == "messages")
        .unwrap();
    assert!(
        broken["location"]["key"]
            .as_str()
            .unwrap()
            .starts_with("b2:"),
        "{broken:#}"
    );
    assert!(
        broken["summary"]
            .as_str()
            .unwrap()
            .contains("`llm -c` cannot load the thread and sends none of it"),
        "{broken:#}"
    );
}

#[test]
fn the_message_store_human_report_is_reviewed() {
    let o = run(&["lint", STORE]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    insta::assert_snapshot!("llm_store_lint_human", stdout(&o));
}

/// A thread is what `llm -c` replays: the chain from the tip, each
/// message's parts; a thread whose chain is broken replays nothing.
#[test]
fn each_thread_holds_what_llm_replays() {
    let names = thread_names(&root().join(STORE));
    let tid = |n: &str| names.iter().find(|(_, v)| *v == n).unwrap().0.clone();
    let show = |n: &str| {
        let o = run(&[
            "inspect",
            "--format",
            "json",
            STORE,
            "--conversation",
            &tid(n),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let healthy = show("healthy");
    for text in [
        "Answer briefly.",
        "[mock:bash pwd]",
        "out of pwd",
        "Thanks.",
    ] {
        assert!(healthy.contains(text), "{text}: {healthy}");
    }
    let broken = show("broken-chain");
    assert!(!broken.contains("[mock:bash pwd]"), "{broken}");
}

/// Repair: every thread's fix is written as new messages under llm's
/// hashes and the thread's tip moved; everything logged, removed parts
/// whole; the input untouched; the copy clean; a second repair changes
/// nothing.
#[test]
fn the_message_store_repair_settles_and_logs_every_payload() {
    let d = tempfile::tempdir().unwrap();
    let input = root().join(STORE);
    let before = fingerprint(&input);
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(fingerprint(&input), before, "the input was touched");
    let names = thread_names(&input);
    let mut edits: Vec<String> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}@{}",
                e["action"].as_str().unwrap(),
                e["location"]["table"].as_str().unwrap(),
                names[e["conversation"].as_str().unwrap()]
            )
        })
        .collect();
    edits.sort();
    assert_eq!(
        edits,
        [
            "answer-call parts@interrupted",
            "answer-call parts@lost-result",
            "drop-message messages@lost-call",
            "drop-part parts@torn-arguments",
            "fill-message messages@lost-result",
            "relink messages@broken-chain",
            "relink threads@missing-tip",
            "remove-result parts@lost-call",
            "remove-result parts@torn-arguments",
        ],
        "{log:#}"
    );
    for e in log["edits"].as_array().unwrap() {
        match e["action"].as_str().unwrap() {
            "remove-result" => {
                let output = e["row"]["payload"].as_str().unwrap();
                assert!(output.contains("\"output\": \"out of"), "{e:#}");
            }
            "drop-part" => {
                assert_eq!(e["row"]["payload"], r#"{"name": "bash", "ar"#, "{e:#}")
            }
            "drop-message" => assert_eq!(e["row"]["role"], "assistant", "{e:#}"),
            "relink" => {
                assert!(
                    e["before"].as_str().unwrap().contains("tip_message_hash"),
                    "{e:#}"
                );
                assert_ne!(e["before"], e["after"], "{e:#}");
            }
            "answer-call" => {
                assert_eq!(e["synthesized"], true, "{e:#}");
                assert!(
                    e["after"].as_str().unwrap().contains("chatfsck repair"),
                    "{e:#}"
                );
            }
            _ => {}
        }
        assert!(
            e["description"].as_str().unwrap().contains("its tip moved"),
            "{e:#}"
        );
    }
    assert_eq!(log["left"], serde_json::json!([]), "{log:#}");
    let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_second_repair_changes_nothing(&out, d.path());
    // Nothing of the input is deleted: its messages and parts are all in
    // the copy (the old rows kept beside the new ones).
    let conn =
        rusqlite::Connection::open_with_flags(&out, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.execute("ATTACH DATABASE ?1 AS input", [input.to_str().unwrap()])
        .unwrap();
    let missing: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM input.messages WHERE hash NOT IN (SELECT hash FROM main.messages)) \
                  + (SELECT count(*) FROM input.parts WHERE id NOT IN (SELECT id FROM main.parts))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(missing, 0);
}

/// `--orphan-calls=drop` leaves the unanswered calls out of their threads.
#[test]
fn the_message_store_drops_unanswered_calls_when_told_to() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out.db");
    let o = run(&[
        "repair",
        STORE,
        "-o",
        out.to_str().unwrap(),
        "--orphan-calls=drop",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let drops = report["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "drop-call")
        .count();
    assert_eq!(drops, 2, "{report:#}");
    let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
}

/// llm 0.36 itself (tests/oracle/llm_oracle.py) continues each thread with
/// `llm -c --cid` against the loopback mock: on the fixture, what the
/// findings say happens does; on the repaired copy every thread goes on
/// with every call answered and every message it sent before (the stray
/// results excepted), the history a broken chain lost sent again, and
/// llm's own `message_hash` re-derives every hash the repair wrote.
#[test]
#[cfg_attr(
    not(has_tool = "llm36"),
    ignore = "needs llm 0.36 (scripts/test-all installs tests/oracle/llm36-requirements.txt into target/tools/llm36)"
)]
fn llm_0_36_continues_every_repaired_thread() {
    let python = std::env::var("CHATFSCK_LLM36_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/tools/llm36/bin/python")
            .to_string_lossy()
            .into_owned()
    });
    let oracle = root()
        .join("tests/oracle/llm_oracle.py")
        .to_string_lossy()
        .into_owned();
    let d = tempfile::tempdir().unwrap();
    // llm logs each continuation into the database (and migrates it on
    // open): copies only.
    let original = d.path().join("original.db");
    std::fs::copy(root().join(STORE), &original).unwrap();
    let repaired = d.path().join("repaired.db");
    let o = run(&["repair", STORE, "-o", repaired.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The hashes first, before llm logs anything into the copy.
    let last: i64 = rusqlite::Connection::open_with_flags(
        root().join(STORE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap()
    .query_row("SELECT max(rowid) FROM messages", [], |r| r.get(0))
    .unwrap();
    let hashes = d.path().join("hashes.db");
    std::fs::copy(&repaired, &hashes).unwrap();
    let o = std::process::Command::new(&python)
        .args([
            &oracle,
            "llm",
            "verify",
            hashes.to_str().unwrap(),
            &last.to_string(),
        ])
        .output()
        .expect("the llm36 venv's python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["broken"], serde_json::json!([]), "{v}");
    assert!(v["verified"].as_u64().unwrap() > 10, "{v}");

    let names = thread_names(&original);
    let mut args: Vec<String> = vec![
        oracle.clone(),
        root()
            .join("target/tools/llm36/bin/llm")
            .to_string_lossy()
            .into_owned(),
        "judge".into(),
    ];
    for db in [&original, &repaired] {
        args.push(db.to_string_lossy().into_owned());
        args.extend(names.keys().cloned());
    }
    let o = std::process::Command::new(&python)
        .args(&args)
        .output()
        .expect("the llm36 venv's python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2 * names.len());
    let get = |db: &Path, name: &str| {
        runs.iter()
            .find(|r| r["db"] == db.to_str().unwrap() && names[r["cid"].as_str().unwrap()] == name)
            .unwrap()
            .clone()
    };
    // Before: what each finding says.
    for name in ["healthy", "A plain question, no tools."] {
        assert_eq!(get(&original, name)["valid"], true, "{name}");
    }
    for name in ["lost-result", "interrupted"] {
        let r = get(&original, name);
        assert_eq!(
            r["errors"],
            serde_json::json!(["tool_calls_no_response"]),
            "{r}"
        );
    }
    let r = get(&original, "lost-call");
    let errors = r["errors"].to_string();
    assert!(errors.contains("orphan_tool_message"), "{r}");
    assert!(errors.contains("empty_assistant"), "{r}");
    let r = get(&original, "torn-arguments");
    assert_eq!(r["code"], 1, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("JSONDecodeError"),
        "{r}"
    );
    assert!(r["roles"].is_null(), "nothing was sent: {r}");
    // A broken chain: rc 0, and nothing of the thread is sent.
    for name in ["broken-chain", "missing-tip"] {
        let r = get(&original, name);
        assert_eq!(r["code"], 0, "{r}");
        assert_eq!(r["roles"], serde_json::json!(["user"]), "{r}");
    }
    // After: every thread goes on, every call answered, every message
    // sent before sent again.
    for name in names.values() {
        let after = get(&repaired, name);
        assert_eq!(after["code"], 0, "{after}");
        assert_eq!(after["valid"], true, "{after}");
        let mut calls: Vec<&serde_json::Value> =
            after["calls"].as_array().unwrap().iter().collect();
        let mut results: Vec<&serde_json::Value> =
            after["results"].as_array().unwrap().iter().collect();
        calls.sort_by_key(|v| v.to_string());
        results.sort_by_key(|v| v.to_string());
        assert_eq!(calls, results, "{after}");
        let before = get(&original, name);
        let stray = match name.as_str() {
            "lost-call" => Some("out of pwd"),
            "torn-arguments" => Some("out of ls"),
            _ => None,
        };
        if let Some(texts) = before["texts"].as_array() {
            for t in texts.iter().filter(|t| t.as_str() != stray) {
                assert!(
                    after["texts"].as_array().unwrap().contains(t),
                    "{t} lost: {after}"
                );
            }
        }
    }
    // What the broken threads lost is sent again (but the lost messages).
    for name in ["broken-chain", "missing-tip"] {
        let after = get(&repaired, name);
        let texts = after["texts"].to_string();
        for t in [
            "Answer briefly.",
            "[mock:bash pwd]",
            "out of pwd",
            "Thanks.",
        ] {
            assert!(texts.contains(t), "{t}: {after}");
        }
    }
    // llm logged each continuation on top of the repaired threads: what it
    // wrote reads clean, and each thread holds its new turn.
    let (rc, doc) = lint_json(repaired.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    for id in names.keys() {
        let o = run(&[
            "inspect",
            "--format",
            "json",
            repaired.to_str().unwrap(),
            "--conversation",
            id,
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("One more question."), "{id}: {text}");
    }
}

/// A conversation of llm 0.31.1 continued by llm 0.36: llm migrates the
/// file and writes the whole rebuilt history as the conversation's thread,
/// which `llm -c` replays from then on. It is read from the thread (the new
/// turn is there), clean; the conversations 0.36 did not touch are still
/// read from their old rows, with their findings.
#[test]
#[cfg_attr(
    not(has_tool = "llm36"),
    ignore = "needs llm 0.36 (scripts/test-all installs tests/oracle/llm36-requirements.txt into target/tools/llm36)"
)]
fn a_0_31_conversation_continued_by_llm_0_36_is_read_from_its_thread() {
    let python = std::env::var("CHATFSCK_LLM36_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/tools/llm36/bin/python")
            .to_string_lossy()
            .into_owned()
    });
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("logs.db");
    std::fs::copy(root().join(DB), &db).unwrap();
    let names = names(&db);
    let cid = |n: &str| names.iter().find(|(_, v)| *v == n).unwrap().0.clone();
    let continued = [cid("healthy"), cid("A plain question, no tools.")];
    let o = std::process::Command::new(&python)
        .arg(root().join("tests/oracle/llm_oracle.py"))
        .arg(root().join("target/tools/llm36/bin/llm"))
        .arg("judge")
        .arg(&db)
        .args(&continued)
        .output()
        .expect("the llm36 venv's python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let threads: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM threads", [], |r| r.get(0))
        .unwrap();
    assert_eq!(threads, 2);
    let (rc, doc) = lint_json(db.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(
        findings(&doc),
        [
            "error corrupt-record@torn-arguments",
            "error orphan-tool-call@interrupted",
            "error orphan-tool-call@lost-result",
            "error orphan-tool-result@lost-response",
        ],
        "{doc:#}"
    );
    for id in &continued {
        let o = run(&[
            "inspect",
            "--format",
            "json",
            db.to_str().unwrap(),
            "--conversation",
            id,
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("One more question."), "{id}: {text}");
    }
}

/// Shapes llm does not write, in a copy of the store: read without a panic,
/// each reported as what llm does with it, the repair carried out around
/// them; a value Python's JSON reads (`NaN`) is not taken for corrupt.
#[test]
fn odd_shapes_of_the_message_store_are_reported_not_crashed_on() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("logs.db");
    std::fs::copy(root().join(STORE), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        r#"
        UPDATE parts SET payload = replace(payload, '"ls"', 'NaN')
            WHERE id = (SELECT p.id FROM parts p JOIN threads t ON t.name LIKE 'healthy%'
                        WHERE p.type = 'tool_call' ORDER BY p.id LIMIT 1);
        UPDATE parts SET type = 'video'
            WHERE message_hash = (SELECT tip_message_hash FROM threads WHERE name LIKE 'A plain%');
        UPDATE parts SET text = X'ff00fe'
            WHERE message_hash = (SELECT parent_hash FROM messages
                                  WHERE hash = (SELECT tip_message_hash FROM threads WHERE name LIKE 'A plain%'));
        INSERT INTO threads (id, name, tip_message_hash) VALUES ('t-null', 'no tip', NULL);
        "#,
    )
    .unwrap();
    // A cycle: the interrupted thread's first prompt hangs under its tip.
    let changed = conn
        .execute(
            "UPDATE messages SET parent_hash = (SELECT tip_message_hash FROM threads WHERE name LIKE 'interrupted%') \
             WHERE hash IN (SELECT message_hash FROM parts WHERE text LIKE 'interrupted:%')",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let (rc, doc) = lint_json(db.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 1, "{doc:#}");
    let got = store_findings(&db, &doc);
    assert!(
        got.contains(&"error corrupt-record@A plain question, no tools.".to_string()),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|f| f.ends_with("@healthy")),
        "NaN is read by Python's json: {got:?}"
    );
    assert!(
        got.contains(&"error parent-cycle@interrupted".to_string()),
        "{got:?}"
    );
    // Repaired around them: what is left is the cycle, reported only.
    let d2 = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&db, d2.path());
    let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(
        store_findings(&out, &doc),
        ["error parent-cycle@interrupted"],
        "{doc:#}"
    );
    assert!(log["left"].to_string().contains("parent-cycle"), "{log:#}");
}
