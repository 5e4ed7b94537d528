//! LangGraph's PostgreSQL checkpointer (issue 41), on a database the real
//! `PostgresSaver` writes at test time (tests/oracle/langgraph_judge.py
//! `make-pg`) into the throwaway server of tests/postgres.rs: the threads
//! of the SQLite fixtures (healthy, trimmed: an orphan; paused in
//! `interrupt()`; crashed before the tool step), `torn`, whose latest
//! `messages` blob is cut in half afterwards, and `unblobbed`, whose latest
//! `messages` blob row is deleted afterwards. The repair appends a
//! checkpoint, into another database or as a script, and the real library
//! resumes the repaired threads.
//!
//! Needs `CHATFSCK_TEST_PG` and LangGraph's venv (`scripts/test-all` sets
//! both up); without them each test is listed as ignored, saying so.

mod common;
use common::pg::*;
use common::*;

use std::sync::OnceLock;

use postgres::{Client, NoTls};
use serde_json::Value;

/// The call whose `ToolMessage` a state update removed (thread `trimmed`).
const ORPHAN: &str = "call_mock_1";

fn python() -> String {
    std::env::var("CHATFSCK_LANGGRAPH_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/tools/langgraph/bin/python")
            .display()
            .to_string()
    })
}

fn judge(args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(python())
        .arg(root().join("tests/oracle/langgraph_judge.py"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The fixture database, written once per run by the real library. Its
/// name is the process's; the server is a throwaway one.
fn fixture() -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(|| {
        let name = format!("chatfsck_lgpg_{}", std::process::id());
        let url = fresh(&name, None);
        let (rc, out, err) = judge(&["make-pg", &url]);
        assert_eq!(rc, 0, "{out}{err}");
        // The copies, made here: a database is copied only while no other
        // session is connected to it.
        for tag in COPIES {
            fresh(&format!("{name}_{tag}"), Some(&name));
        }
        name
    })
}

/// The copies of the fixture the repair test uses (restored backups, say).
const COPIES: [&str; 3] = ["target", "script", "original"];

/// A copy of the fixture, as it was written.
fn copy_of_fixture(tag: &str) -> String {
    assert!(COPIES.contains(&tag));
    format!("{}_{tag}", fixture())
}

/// Every row of every table of the checkpointer: proof nothing changed.
fn digest(url: &str) -> String {
    let mut c = Client::connect(url, NoTls).unwrap();
    let mut out = String::new();
    for t in [
        "checkpoints",
        "checkpoint_blobs",
        "checkpoint_writes",
        "checkpoint_migrations",
    ] {
        let row = c
            .query_one(
                &format!("SELECT count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM {t} t"),
                &[],
            )
            .unwrap();
        out.push_str(&format!("{t}={} ", row.get::<_, String>(0)));
    }
    out
}

/// `severity rule conversation first-id` of each finding, sorted.
fn summary(doc: &Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
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
#[cfg_attr(
    not(all(has_tool = "postgres", has_tool = "langgraph")),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG and LangGraph's venv in target/tools/langgraph: scripts/test-all sets up both"
)]
fn each_thread_is_read_as_postgres_saver_resumes_it() {
    let db = url(fixture());
    let (status, doc) = lint_json(&db, &[]);
    assert_eq!(status, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "postgres-table", "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "langgraph", "{doc:#}");
    assert_eq!(doc["files"][0]["conversations"], 6, "{doc:#}");
    // The healthy thread has no finding; the paused and the crashed calls
    // are pending, never orphans; the torn blob is one corrupt record; the
    // missing blob is rebuilt as LangGraph rebuilds it, and said.
    assert_eq!(
        summary(&doc),
        [
            "error corrupt-record torn -",
            "error orphan-tool-call trimmed call_mock_1",
            "info trailing-completion-call crashed call_mock_1",
            "info trailing-completion-call paused call_mock_1",
            "warning missing-blob unblobbed -",
        ],
        "{doc:#}"
    );
    let by = |conv: &str, rule: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["conversation"] == conv && f["rule"] == rule)
            .unwrap()
            .clone()
    };
    let orphan = by("trimmed", "orphan-tool-call");
    assert!(
        orphan.to_string().contains("INVALID_CHAT_HISTORY"),
        "{orphan}"
    );
    // The call is where PostgresSaver keeps the messages: a blob.
    assert_eq!(orphan["location"]["table"], "checkpoint_blobs", "{orphan}");
    let torn = by("torn", "corrupt-record");
    assert_eq!(torn["location"]["table"], "checkpoint_blobs", "{torn}");
    assert!(torn.to_string().contains("does not decode"), "{torn}");
    let gone = by("unblobbed", "missing-blob");
    assert_eq!(gone["location"]["table"], "checkpoint_blobs", "{gone}");
    let said = gone["summary"].as_str().unwrap();
    assert!(
        said.contains("LangGraph rebuilds it from the `messages` blob of checkpoint")
            && said.contains("the resume starts from these 4 messages"),
        "{gone}"
    );
    // The messages each thread resumes with.
    let o = run(&["inspect", "--format", "json", &db]);
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
    assert_eq!(
        got,
        [
            ("crashed".to_string(), 2),
            ("healthy".to_string(), 4),
            ("paused".to_string(), 2),
            ("torn".to_string(), 0),
            ("trimmed".to_string(), 3),
            ("unblobbed".to_string(), 4),
        ]
    );
    // The report, its database named without its password; the ids and
    // channel versions the library wrote at this run, masked.
    let o = run(&["lint", "--format", "markdown", &db]);
    let plain = shown(&db);
    let escaped = plain.replace('@', "@<!-- -->").replace('_', "\\_");
    let text = stdout(&o)
        .replace(&plain, "postgres://USER@HOST:PORT/DB")
        .replace(&escaped, "postgres://USER@HOST:PORT/DB");
    insta::assert_snapshot!("langgraph_pg_lint", mask(&text));
}

/// `text` with each UUID as `<uuid>` and each channel version
/// (`000…0003.0.7661…`) as `<version>`.
fn mask(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let hex = |c: u8| c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
    while i < b.len() {
        let uuid = b.len() >= i + 36
            && [8, 13, 18, 23].iter().all(|&k| b[i + k] == b'-')
            && (0..36)
                .filter(|k| ![8, 13, 18, 23].contains(k))
                .all(|k| hex(b[i + k]));
        if uuid {
            out.push_str("<uuid>");
            i += 36;
            continue;
        }
        if b.len() >= i + 33 && b[i..i + 32].iter().all(u8::is_ascii_digit) && b[i + 32] == b'.' {
            let mut j = i + 33;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            out.push_str("<version>");
            i = j;
            continue;
        }
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn repair(args: &[&str], dir: &std::path::Path, name: &str) -> Value {
    let log = dir.join(format!("{name}.json"));
    let mut all = vec!["repair"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--log", log.to_str().unwrap()]);
    let o = run(&all);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    not(all(has_tool = "postgres", has_tool = "langgraph")),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG and LangGraph's venv in target/tools/langgraph: scripts/test-all sets up both"
)]
fn the_repair_appends_a_checkpoint_that_postgres_saver_resumes() {
    let d = tempfile::tempdir().unwrap();
    let source = url(fixture());
    let before = digest(&source);
    let target = url(&copy_of_fixture("target"));
    let script = d.path().join("repair.sql");
    let log = repair(
        &[
            &source,
            "--target",
            &target,
            "--emit-sql",
            script.to_str().unwrap(),
        ],
        d.path(),
        "once",
    );
    assert_eq!(digest(&source), before, "the source database changed");
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log:#}");
    assert_eq!(edits[0]["conversation"], "trimmed");
    assert_eq!(edits[0]["action"], "answer-call");
    assert_eq!(edits[0]["ids"], serde_json::json!([ORPHAN]));
    assert_eq!(edits[0]["synthesized"], true);
    assert_eq!(edits[0]["location"]["table"], "checkpoints", "{log:#}");
    // One checkpoint more, its parent the latest one; its writes copied.
    let mut c = Client::connect(&target, NoTls).unwrap();
    let rows = c
        .query(
            "SELECT checkpoint_id, parent_checkpoint_id, metadata::text FROM checkpoints WHERE thread_id = 'trimmed' ORDER BY checkpoint_id DESC LIMIT 2",
            &[],
        )
        .unwrap();
    assert_eq!(
        rows[0].get::<_, Option<String>>(1).as_deref(),
        Some(rows[1].get::<_, &str>(0))
    );
    assert!(rows[0].get::<_, &str>(2).contains(r#""source": "update""#));
    let count = |c: &mut Client, t: &str| -> i64 {
        c.query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .unwrap()
            .get(0)
    };
    let mut s = Client::connect(&source, NoTls).unwrap();
    assert_eq!(
        count(&mut c, "checkpoints"),
        count(&mut s, "checkpoints") + 1
    );
    // The repaired database: the orphan answered, the pending calls, the
    // torn blob and the missing one as they were.
    let (_, doc) = lint_json(&target, &[]);
    assert_eq!(
        summary(&doc),
        [
            "error corrupt-record torn -",
            "info trailing-completion-call crashed call_mock_1",
            "info trailing-completion-call paused call_mock_1",
            "warning missing-blob unblobbed -",
        ],
        "{doc:#}"
    );
    // The script does the same to another copy, twice over harmlessly.
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(!text.contains(&password(&source)), "{text}");
    let other = url(&copy_of_fixture("script"));
    let mut o = Client::connect(&other, NoTls).unwrap();
    o.batch_execute(&text).unwrap();
    o.batch_execute(&text).unwrap();
    assert_eq!(digest(&other), digest(&target));
    // A second repair changes nothing.
    let again = repair(
        &[
            &target,
            "--emit-sql",
            d.path().join("again.sql").to_str().unwrap(),
        ],
        d.path(),
        "twice",
    );
    assert_eq!(again["edits"].as_array().unwrap().len(), 0, "{again:#}");
    // LangGraph: the original stuck on the orphan, the repaired copy
    // resumed with every message; the paused call resumed by the user's
    // answer and the crashed one run, never answered by chatfsck.
    let threads = ["crashed", "healthy", "paused", "trimmed"];
    let original = url(&copy_of_fixture("original"));
    let (rc, out, err) = judge(&[
        "resume",
        "--postgres",
        &original,
        "torn",
        "trimmed",
        "unblobbed",
    ]);
    assert_eq!(rc, 1, "{out}{err}");
    let line = |t: &str| {
        out.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|l| l["thread"] == t)
            .unwrap_or_else(|| panic!("no line for {t}: {out}{err}"))
    };
    assert_eq!(
        line("trimmed")["code"],
        "INVALID_CHAT_HISTORY",
        "{out}{err}"
    );
    // The torn blob: the checkpointer cannot load the thread at all.
    assert_eq!(line("torn")["error"], "ValueError", "{out}{err}");
    // The missing blob: LangGraph loads the 4 messages lint and inspect
    // read (each_thread_is_read_as_postgres_saver_resumes_it) and resumes.
    assert_eq!(line("unblobbed")["loaded"], 4, "{out}{err}");
    assert_eq!(line("unblobbed")["ok"], true, "{out}{err}");
    let mut args = vec!["resume", "--postgres", target.as_str()];
    args.extend_from_slice(&threads);
    let (rc, out, err) = judge(&args);
    assert_eq!(rc, 0, "{out}{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    let thread = |t: &str| lines.iter().find(|l| l["thread"] == t).unwrap();
    for t in threads {
        assert_eq!(thread(t)["ok"], true, "{out}");
    }
    assert_eq!(
        thread("paused")["tool_results"],
        serde_json::json!(["approved: yes"])
    );
    assert_eq!(
        thread("crashed")["tool_results"],
        serde_json::json!(["ran crash-now"])
    );
    assert!(
        thread("trimmed")["tool_results"]
            .to_string()
            .contains("chatfsck"),
        "{out}"
    );
}

/// `ShallowPostgresSaver`'s tables (langgraph-checkpoint-postgres 3.2.0,
/// `shallow.py`: one checkpoint per thread; the same table names, without
/// `checkpoint_id` and blob versions) are refused in one line, not misread.
#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one"
)]
fn shallow_postgres_saver_tables_are_refused_saying_so() {
    let db = fresh(&format!("chatfsck_lgshallow_{}", std::process::id()), None);
    let mut c = Client::connect(&db, NoTls).unwrap();
    c.batch_execute(
        "CREATE TABLE checkpoint_migrations (v INTEGER PRIMARY KEY);
         CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', type TEXT,
             checkpoint JSONB NOT NULL, metadata JSONB NOT NULL DEFAULT '{}', PRIMARY KEY (thread_id, checkpoint_ns));
         CREATE TABLE checkpoint_blobs (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', channel TEXT NOT NULL,
             type TEXT NOT NULL, blob BYTEA, PRIMARY KEY (thread_id, checkpoint_ns, channel));
         CREATE TABLE checkpoint_writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
             task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, blob BYTEA NOT NULL,
             task_path TEXT NOT NULL DEFAULT '', PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
         INSERT INTO checkpoints (thread_id, checkpoint) VALUES ('t', '{\"v\": 4, \"id\": \"1f1e\", \"channel_versions\": {}}');",
    )
    .unwrap();
    drop(c);
    let o = run(&["lint", &db]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("ShallowPostgresSaver") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!err.contains(&password(&db)), "{err}");
}
