//! Message tables in SQLite files: gbrain's `subagent_messages` (seed 003)
//! found without flags, and other tables read through a mapping. The real
//! binary on real database files; the repair proofs of tests/repair.rs for
//! the repaired copy.

mod common;
use common::*;

use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

const GBRAIN: &str = "fixtures/gbrain/gbrain.db";
const SETTLED: &str = "toolu_01GhM2hngDnETq45Ds75kszE";
const PENDING: &str = "toolu_01qY8IHmIHbta3LeqsHH8BuK";

fn key(idx: i64) -> String {
    format!("job_id=42, message_idx={idx}")
}

fn findings(doc: &Value) -> &Vec<Value> {
    doc["findings"].as_array().unwrap()
}

#[test]
fn gbrain_gaps_are_reported_with_the_dangling_calls_and_their_executions() {
    let (code, doc) = lint_json(GBRAIN, &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    // The gaps leave two assistant turns in a row, which the Anthropic API
    // merges into one turn: not a role-order finding.
    let mut want = vec![
        format!("index-gap@{}", key(1)),
        format!("index-gap@{}", key(3)),
    ];
    want.sort();
    assert_eq!(rule_locs(&doc), want, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "sqlite-table");
    assert_eq!(doc["files"][0]["dialect"], "gbrain");
    assert_eq!(doc["files"][0]["conversations"], 2);
    let gaps: Vec<&Value> = findings(&doc)
        .iter()
        .filter(|f| f["rule"] == "index-gap")
        .collect();
    assert_eq!(gaps[0]["ids"], serde_json::json!([SETTLED]));
    assert_eq!(gaps[1]["ids"], serde_json::json!([PENDING]));
    assert_eq!(gaps[0]["location"]["table"], "subagent_messages");
    assert_eq!(gaps[0]["location"]["rowid"], 2);
    assert!(
        gaps[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with(&format!("`message_idx` 2 is missing: the tool-result message for `{SETTLED}` was never stored (1 of 1 result recoverable")),
        "{}",
        gaps[0]["summary"]
    );
    let notes = |f: &Value| f["notes"].to_string();
    assert!(notes(gaps[0]).contains("`subagent_tool_executions` id=1 is `complete`"));
    assert!(notes(gaps[1]).contains("`subagent_tool_executions` id=2 is `pending`"));
    assert!(gaps.iter().all(|g| g["fixable"] == true));
    // The gap explains the dangling calls: no orphan-tool-call finding for
    // them, and nothing at all about the healthy job.
    assert!(findings(&doc).iter().all(|f| f["conversation"] == "42"));
    // Without index-gap, the same calls are orphans.
    let (_, doc) = lint_json(GBRAIN, &["--ignore", "index-gap"]);
    let orphans: Vec<&Value> = findings(&doc)
        .iter()
        .filter(|f| f["rule"] == "orphan-tool-call")
        .collect();
    assert_eq!(orphans.len(), 2);
    assert!(orphans.iter().all(|f| f["fixable"] == false));
}

#[test]
fn human_output_names_the_rows() {
    let o = run(&["lint", GBRAIN]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(
        out.contains("subagent_messages job_id=42, message_idx=1"),
        "{out}"
    );
    assert!(
        out.contains(&format!("tool call `{SETTLED}` dangles")),
        "{out}"
    );
    assert!(out.contains("found 2 errors, 0 warnings"), "{out}");
    let o = run(&[
        "inspect",
        GBRAIN,
        "--conversation",
        "42",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let timeline = doc["conversations"][0]["timeline"].as_array().unwrap();
    let keys: Vec<&str> = timeline
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, [key(0), key(1), key(3), key(5)]);
}

#[test]
fn reading_never_writes_the_database() {
    let d = copy_to_tmp(&[GBRAIN]);
    let db = d.path().join("gbrain.db").to_string_lossy().into_owned();
    let before = dir_fingerprints(d.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    lint_json(&db, &[]);
    run(&["inspect", &db, "--conversation", "42"]);
    run(&["repair", &db, "--dry-run"]);
    assert_eq!(before, dir_fingerprints(d.path()));
}

/// Every row of every table, as text, by table.
fn dump(db: &Path) -> Vec<(String, Vec<Vec<String>>)> {
    let c = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    tables
        .into_iter()
        .map(|t| {
            let mut st = c
                .prepare(&format!("SELECT * FROM \"{t}\" ORDER BY rowid"))
                .unwrap();
            let n = st.column_count();
            let rows = st
                .query_map([], |r| {
                    Ok((0..n)
                        .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                        .collect::<Vec<_>>())
                })
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (t, rows)
        })
        .collect()
}

fn content_at(db: &Path, job: i64, idx: i64) -> Option<Value> {
    let c = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    c.query_row(
        "SELECT content_blocks FROM subagent_messages WHERE job_id = ?1 AND message_idx = ?2 AND role = 'user'",
        [job, idx],
        |r| r.get::<_, String>(0),
    )
    .ok()
    .map(|s| serde_json::from_str(&s).unwrap())
}

struct Out {
    dir: tempfile::TempDir,
    log: Value,
}

impl Out {
    fn db(&self) -> std::path::PathBuf {
        self.dir.path().join("repaired.db")
    }
}

fn repair_db(input: &Path, extra: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repaired.db");
    let log = dir.path().join("log.json");
    let mut args = vec![
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    Out { dir, log }
}

#[test]
fn gbrain_repair_rebuilds_the_settled_result_and_the_proofs_hold() {
    let d = copy_to_tmp(&[GBRAIN]);
    let input = d.path().join("gbrain.db");
    let before = dir_fingerprints(d.path());
    let r = repair_db(&input, &[]);
    // 4. the input (and its directory) is untouched; the output directory
    // holds the copy and the log, nothing else.
    assert_eq!(before, dir_fingerprints(d.path()));
    let mut names: Vec<String> = std::fs::read_dir(r.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["log.json", "repaired.db"]);
    // The settled result comes from its execution row, as strict JSON text.
    let exec_output: String = Connection::open(&input)
        .unwrap()
        .query_row(
            "SELECT output FROM subagent_tool_executions WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let rebuilt = content_at(&r.db(), 42, 2).expect("message_idx 2 rebuilt");
    assert_eq!(rebuilt[0]["type"], "tool_result");
    assert_eq!(rebuilt[0]["tool_use_id"], SETTLED);
    assert!(rebuilt[0].get("is_error").is_none());
    let content = rebuilt[0]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        serde_json::from_str::<Value>(&exec_output).unwrap()
    );
    // The pending one gets the marked placeholder, by the default policy.
    let placeholder = content_at(&r.db(), 42, 4).expect("message_idx 4 answered");
    assert_eq!(placeholder[0]["tool_use_id"], PENDING);
    assert_eq!(placeholder[0]["is_error"], true);
    assert!(
        placeholder[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("[chatfsck repair]")
    );
    let edits = r.log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    assert_eq!(edits[0]["synthesized"], false);
    assert_eq!(edits[1]["synthesized"], true);
    assert!(
        edits
            .iter()
            .all(|e| e["before"].is_null() && e["after"].is_string())
    );
    assert_eq!(edits[0]["location"]["key"], key(2));
    // 3. every row of the input is in the copy, unchanged; the copy has
    // exactly the two inserted rows more, and the healthy job is untouched.
    let (a, b) = (dump(&input), dump(&r.db()));
    assert_eq!(a.len(), b.len());
    for ((ta, ra), (tb, rb)) in a.iter().zip(&b) {
        assert_eq!(ta, tb);
        for row in ra {
            assert!(rb.contains(row), "{ta}: row lost or changed: {row:?}");
        }
        let extra = rb.len() - ra.len();
        assert_eq!(extra, if ta == "subagent_messages" { 2 } else { 0 }, "{ta}");
    }
    // 1. lint finds nothing repair claims to fix (nor anything else here).
    let (code, doc) = lint_json(r.db().to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(code, 0, "{doc:#}");
    // integrity
    let check: String = Connection::open(r.db())
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    // 2. a second repair changes nothing.
    let again = repair_db(&r.db(), &[]);
    assert_eq!(again.log["edits"].as_array().unwrap().len(), 0);
    // (Row for row: the backup API gives every copy its own header change
    // counter, so the bytes of two copies differ there.)
    assert!(
        dump(&r.db()) == dump(&again.db()),
        "a second repair changed rows"
    );
    // diff shows exactly the two added messages.
    let o = run(&[
        "diff",
        "--format",
        "json",
        input.to_str().unwrap(),
        r.db().to_str().unwrap(),
    ]);
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    let seed = d["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["a_id"] == "42")
        .unwrap();
    let changes = seed["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{seed:#}");
    assert!(changes.iter().all(|c| c["change"] == "added"));
}

#[test]
fn pending_calls_follow_the_policy_and_a_gap_is_never_half_filled() {
    for (flags, reason) in [
        // Without synthesis and without a named policy, orphans are reported.
        (&["--no-synthesize"][..], "policy is `report`"),
        (&["--orphan-calls", "report"][..], "policy is `report`"),
        (&["--orphan-calls", "drop"][..], "inserts only"),
    ] {
        let r = repair_db(Path::new(GBRAIN), flags);
        let edits = r.log["edits"].as_array().unwrap();
        assert_eq!(edits.len(), 1, "{flags:?}");
        assert_eq!(edits[0]["location"]["key"], key(2));
        assert!(content_at(&r.db(), 42, 2).is_some());
        assert!(content_at(&r.db(), 42, 4).is_none());
        let left = r.log["left"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rule"] == "index-gap")
            .unwrap();
        let why = left["reason"].as_str().unwrap();
        assert!(
            why.contains(PENDING) && why.contains("`pending`") && why.contains(reason),
            "{why}"
        );
        // The gap left is still reported, and the repair is stable.
        let (_, doc) = lint_json(r.db().to_str().unwrap(), &[]);
        assert_eq!(
            rule_locs(&doc)
                .into_iter()
                .filter(|r| r.starts_with("index-gap"))
                .collect::<Vec<_>>(),
            vec![format!("index-gap@{}", key(3))]
        );
    }
}

#[test]
fn a_failed_execution_rebuilds_an_error_result() {
    let d = copy_to_tmp(&[GBRAIN]);
    let input = d.path().join("gbrain.db");
    Connection::open(&input)
        .unwrap()
        .execute_batch(
            "UPDATE subagent_tool_executions SET status = 'failed', error = 'page not found: notes/vector-index-rebuild' WHERE id = 2",
        )
        .unwrap();
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    let gap = findings(&doc)
        .iter()
        .find(|f| f["location"]["key"] == key(3))
        .unwrap();
    assert!(gap["notes"].to_string().contains("is `failed`"), "{gap:#}");
    let r = repair_db(&input, &["--no-synthesize"]);
    assert_eq!(r.log["edits"].as_array().unwrap().len(), 2);
    let rebuilt = content_at(&r.db(), 42, 4).unwrap();
    assert_eq!(
        rebuilt[0],
        serde_json::json!({"type": "tool_result", "tool_use_id": PENDING, "content": "page not found: notes/vector-index-rebuild", "is_error": true})
    );
    let (code, _) = lint_json(r.db().to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(code, 0);
}

/// A chat app's own table: text ids, no unique constraint, plain-text and
/// block content, a quote in a column name.
fn mapped_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("app.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        r#"CREATE TABLE chat_log (conv TEXT NOT NULL, seq INTEGER NOT NULL, speaker TEXT NOT NULL, "bo""dy" TEXT, note TEXT);
        INSERT INTO chat_log VALUES ('c1', 0, 'user', 'hello', 'x');
        INSERT INTO chat_log VALUES ('c1', 1, 'assistant', 'Hi!', NULL);
        INSERT INTO chat_log VALUES ('c1', 1, 'assistant', 'Hello! How can I help?', NULL);
        INSERT INTO chat_log VALUES ('c2', 0, 'user', 'list files', NULL);
        INSERT INTO chat_log VALUES ('c2', 1, 'assistant', '[{"type":"tool_use","id":"toolu_X","name":"ls","input":{}}]', NULL);
        INSERT INTO chat_log VALUES ('c2', 3, 'assistant', 'done', NULL);
        INSERT INTO chat_log VALUES ('c3', 0, 'user', 'a', NULL);
        INSERT INTO chat_log VALUES ('c3', 1, 'assistant', 'b', NULL);"#,
    )
    .unwrap();
    db
}

const MAP: [&str; 10] = [
    "--table",
    "chat_log",
    "--conversation-column",
    "conv",
    "--index-column",
    "seq",
    "--role-column",
    "speaker",
    "--content-column",
    "bo\"dy",
];

#[test]
fn a_mapped_table_is_read_and_repaired() {
    let d = tempfile::tempdir().unwrap();
    let db = mapped_db(d.path());
    let (code, doc) = lint_json(db.to_str().unwrap(), &MAP);
    assert_eq!(code, 1);
    assert_eq!(doc["files"][0]["dialect"], "table");
    assert_eq!(doc["files"][0]["conversations"], 3);
    let mut got = rule_locs(&doc);
    got.retain(|r| !r.starts_with("role-order"));
    assert_eq!(
        got,
        vec!["duplicate-index@conv=c1, seq=1", "index-gap@conv=c2, seq=1"],
        "{doc:#}"
    );
    let dup = findings(&doc)
        .iter()
        .find(|f| f["rule"] == "duplicate-index")
        .unwrap();
    assert_eq!(dup["summary"], "2 rows claim `seq` 1 (rowids 2, 3)");
    assert_eq!(dup["fixable"], false);
    // No execution table: the lost result can only be a placeholder.
    let gap = findings(&doc)
        .iter()
        .find(|f| f["rule"] == "index-gap")
        .unwrap();
    assert!(
        gap["notes"]
            .to_string()
            .contains("keeps no tool execution records")
    );
    let r = repair_db(&db, &MAP);
    let edits = r.log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0]["synthesized"], true);
    let c = Connection::open(r.db()).unwrap();
    let (speaker, body): (String, String) = c
        .query_row(
            r#"SELECT speaker, "bo""dy" FROM chat_log WHERE conv = 'c2' AND seq = 2"#,
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(speaker, "user");
    assert!(body.contains("toolu_X"));
    let (_, doc) = lint_json(r.db().to_str().unwrap(), &MAP);
    assert!(rule_locs(&doc).iter().all(|r| !r.starts_with("index-gap")));
}

fn assert_one_line_error(args: &[&str], needles: &[&str]) {
    let o = run(args);
    assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

#[test]
fn bad_mappings_are_one_line_errors_and_never_sql() {
    let d = tempfile::tempdir().unwrap();
    let db = mapped_db(d.path());
    let path = db.to_str().unwrap();
    let with = |i: usize, v: &str| {
        let mut m: Vec<String> = MAP.iter().map(|s| s.to_string()).collect();
        m[i] = v.to_string();
        m
    };
    let check = |m: Vec<String>, needles: &[&str]| {
        let mut args: Vec<&str> = vec!["lint", path];
        args.extend(m.iter().map(String::as_str));
        assert_one_line_error(&args, needles);
    };
    let before = dir_fingerprints(d.path());
    check(
        with(3, "conversation_id"),
        &[
            path,
            "table `chat_log` has no column `conversation_id`",
            "--conversation-column",
        ],
    );
    check(
        with(1, "messages"),
        &[path, "no table `messages`", "`chat_log`"],
    );
    check(
        with(5, "speaker"),
        &[
            path,
            "index column `speaker` of `chat_log` is `TEXT`, not an integer type",
        ],
    );
    // A name that would be SQL if it were ever spliced in unquoted.
    let evil = "seq FROM chat_log; DROP TABLE chat_log; --";
    check(
        with(5, evil),
        &[
            path,
            "has no column `seq FROM chat_log; DROP TABLE chat_log; --`",
        ],
    );
    let evil_table = "chat_log\"; DROP TABLE chat_log; --";
    check(with(1, evil_table), &[path, "no table"]);
    assert_eq!(before, dir_fingerprints(d.path()));
    let n: i64 = Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM chat_log", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 8);
    // Half a mapping is a usage error; a mapping on a JSONL file too.
    let o = run(&["lint", path, "--table", "chat_log"]);
    assert_eq!(code(&o), 2);
    assert_one_line_error(
        &[
            "lint",
            "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
            "--table",
            "t",
            "--conversation-column",
            "c",
            "--index-column",
            "i",
            "--role-column",
            "r",
            "--content-column",
            "x",
        ],
        &["name a table of a SQLite or PostgreSQL database"],
    );
}

#[test]
fn a_database_without_a_message_table_says_so() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("other.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE subagent_messages (id INTEGER PRIMARY KEY, job_id INTEGER);")
        .unwrap();
    assert_one_line_error(
        &["lint", db.to_str().unwrap()],
        &[
            "SQLite database holds no conversation history chatfsck recognises (`subagent_messages` lacks `message_idx`, `role`, `content_blocks`; tables: `subagent_messages`); tried: dispatch chunk store, gbrain message tables, dispatch traces (traces.db), Arize Phoenix traces, opencode database (opencode.db), goose sessions (sessions.db), Crush sessions (crush.db), llm logs (logs.db), Cursor state (state.vscdb), LangGraph checkpoints (SQLite, langgraph-checkpoint-sqlite), Open WebUI database (webui.db); name a message table with --table and the column flags",
        ],
    );
}

#[test]
fn the_sqlite_and_postgresql_fixtures_hold_the_same_rows() {
    let rows = |f: &str| -> Vec<String> {
        let text = std::fs::read_to_string(root().join(f)).unwrap();
        let start = text.find("-- Job 42").unwrap();
        let end = text[start..]
            .find("\n-- The ids above")
            .map_or(text.len(), |i| start + i + 1);
        text[start..end].lines().map(String::from).collect()
    };
    let (a, b) = (
        rows("fixtures/gbrain/gbrain.sql"),
        rows("fixtures/gbrain/gbrain.pgsql"),
    );
    assert!(a.len() > 10);
    assert_eq!(a, b);
}

/// Jobs whose ids sort differently as text (5 < 42 < 100, but "100" < "42"
/// < "5"): each still gets its own executions.
#[test]
fn executions_follow_their_jobs_in_numeric_order() {
    let d = copy_to_tmp(&[GBRAIN]);
    let input = d.path().join("gbrain.db");
    Connection::open(&input)
        .unwrap()
        .execute_batch(
            r#"INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks) VALUES
                 (5, 0, 'user', '[{"type":"text","text":"go"}]'),
                 (5, 1, 'assistant', '[{"type":"tool_use","id":"toolu_5","name":"brain_get_page","input":{}}]'),
                 (5, 3, 'assistant', '[{"type":"text","text":"done"}]'),
                 (100, 0, 'user', '[{"type":"text","text":"go"}]'),
                 (100, 1, 'assistant', '[{"type":"tool_use","id":"toolu_100","name":"brain_get_page","input":{}}]'),
                 (100, 3, 'assistant', '[{"type":"text","text":"done"}]');
               INSERT INTO subagent_tool_executions (job_id, message_idx, tool_use_id, tool_name, input, status, output, ordinal) VALUES
                 (5, 1, 'toolu_5', 'brain_get_page', '{}', 'complete', '"five"', 0),
                 (100, 1, 'toolu_100', 'brain_get_page', '{}', 'failed', NULL, 0);"#,
        )
        .unwrap();
    let (_, doc) = lint_json(input.to_str().unwrap(), &["--select", "index-gap"]);
    let by_conv = |c: &str| -> Vec<String> {
        findings(&doc)
            .iter()
            .filter(|f| f["conversation"] == c)
            .map(|f| f["notes"][0].as_str().unwrap().to_string())
            .collect()
    };
    assert!(by_conv("5")[0].contains("is `complete`"), "{doc:#}");
    assert!(by_conv("100")[0].contains("is `failed`"), "{doc:#}");
    assert!(by_conv("42")[0].contains("is `complete`"), "{doc:#}");
    assert!(by_conv("42")[1].contains("is `pending`"), "{doc:#}");
}

#[test]
fn a_mapped_table_is_found_as_sqlite_finds_it_views_included() {
    let d = tempfile::tempdir().unwrap();
    let db = mapped_db(d.path());
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE VIEW recent AS SELECT * FROM chat_log;")
        .unwrap();
    // SQLite matches identifiers ignoring ASCII case, and reads views.
    for table in ["CHAT_LOG", "recent"] {
        let mut map = MAP;
        map[1] = table;
        let (code, doc) = lint_json(db.to_str().unwrap(), &map);
        assert_eq!(code, 1, "{table}: {doc:#}");
        assert_eq!(doc["files"][0]["conversations"], 3, "{table}");
    }
}

/// A message row whose `content_blocks` text holds a lone surrogate
/// escape (an emoji cut in two), in a SQLite store: `JSON.parse` reads
/// it. lint called the row not valid JSON and lost the message, which
/// then raised an `index-gap` ("`message_idx` 0 is missing") and a
/// `role-order` warning that were not so. It is a `lone-surrogate`
/// error: the row loads, and the request cannot carry the text.
#[test]
fn a_lone_surrogate_escape_in_a_message_row_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gbrain.db");
    std::fs::copy(root().join(GBRAIN), &db).unwrap();
    let n = Connection::open(&db)
        .unwrap()
        .execute(
            r"UPDATE subagent_messages SET content_blocks = replace(content_blocks, 'Dream cycle', 'Dream \ud83dcycle') WHERE job_id = 42 AND message_idx = 0",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    let rules = |doc: &Value| -> Vec<String> {
        findings(doc)
            .iter()
            .map(|f| format!("{} {}", f["rule"], f["severity"]))
            .collect()
    };
    let (_, fixture) = lint_json(GBRAIN, &[]);
    let (code, doc) = lint_json(db.to_str().unwrap(), &[]);
    assert_eq!(code, 1);
    let mut want = rules(&fixture);
    want.push("\"lone-surrogate\" \"error\"".to_string());
    assert_eq!(rules(&doc), want, "{doc:#}");
}

/// Members named twice in gbrain's `content_blocks` (a text block's
/// `text`, a call's `name`): `JSON.parse` and `jsonb` keep the last value.
/// lint called the row's `content_blocks` (`message_idx` 1) "not a message
/// record" and lost the message, which turned the fixture's gap at
/// `message_idx` 2 into a gap of two (1-2). It is read as the app reads it:
/// the fixture's findings, and a repair that settles.
#[test]
fn gbrain_members_named_twice_are_read_as_the_app_reads_them() {
    let d = copy_to_tmp(&[GBRAIN]);
    let db = d.path().join("gbrain.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            r#"UPDATE subagent_messages SET content_blocks = replace(replace(content_blocks,
                   '"text":"I''ll start', '"text":"a draft","text":"I''ll start'),
                   '"name":"brain_list_pages"', '"name":"x","name":"brain_list_pages"')
               WHERE rowid = 2;"#,
        )
        .unwrap();
    let text: String = Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT content_blocks FROM subagent_messages WHERE rowid = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        text.contains(r#""name":"x","name":"brain_list_pages""#),
        "{text}"
    );
    let (_, fixture) = lint_json(GBRAIN, &[]);
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    assert_eq!(rule_locs(&doc), rule_locs(&fixture), "{doc:#}");
    let (out, _) = repair_logged(&db, d.path());
    let (code, _) = lint_json(out.to_str().unwrap(), &["--fail-on", "error"]);
    assert_eq!(code, 0);
    assert_second_repair_changes_nothing(&out, d.path());
}
