//! Open WebUI on PostgreSQL (issue 41): the chats of webui.db
//! (fixtures/open-webui) loaded into the tables Open WebUI 0.12.4's
//! migrations leave on PostgreSQL (fixtures/open-webui/schema.pgsql), on
//! the throwaway server of tests/postgres.rs, and `c-0007-nul`: the
//! healthy chat with a NUL at the end of an answer, as SQLAlchemy's `JSON`
//! type writes it (`\u0000`). Each chat is read as from webui.db; the
//! repair re-links the same trees, into another database or as a script,
//! and Open WebUI's own code (tests/oracle/open_webui.py) opens the
//! repaired chats.
//!
//! Needs `CHATFSCK_TEST_PG` (`scripts/test-all` starts the server); without
//! it each test is listed as ignored, saying so.

mod common;
use common::pg::*;
use common::*;

use std::sync::OnceLock;

use postgres::{Client, NoTls};
use serde_json::Value;

const DB: &str = "fixtures/open-webui/webui.db";
const NUL: &str = "c-0007-nul";

/// The fixture database, loaded once per run, and its copies (restored
/// backups, say) for the repair.
fn fixture() -> &'static str {
    static DB_NAME: OnceLock<String> = OnceLock::new();
    DB_NAME.get_or_init(|| {
        let name = format!("chatfsck_owpg_{}", std::process::id());
        let url = fresh(&name, None);
        let mut c = Client::connect(&url, NoTls).unwrap();
        c.batch_execute(
            &std::fs::read_to_string(root().join("fixtures/open-webui/schema.pgsql")).unwrap(),
        )
        .unwrap();
        c.execute("INSERT INTO auth (id, email, active) VALUES ('u1', 'u1@example.com', true)", &[])
            .unwrap();
        let lite = rusqlite::Connection::open(root().join(DB)).unwrap();
        let mut st = lite
            .prepare("SELECT id, user_id, title, chat, created_at, updated_at FROM chat ORDER BY rowid")
            .unwrap();
        let mut rows: Vec<(String, String, String, String, i64, i64)> = st
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let healthy = rows[0].clone();
        assert_eq!(healthy.0, "c-0001-healthy");
        let answer = "It reads PORT; the Dockerfile sets 8080.";
        assert!(healthy.3.contains(answer));
        rows.push((
            NUL.into(),
            healthy.1,
            "NUL in an answer".into(),
            healthy.3.replace(answer, &format!("{answer}\\u0000")),
            healthy.4,
            healthy.5,
        ));
        for (id, user, title, chat, created, updated) in &rows {
            c.execute(
                "INSERT INTO chat (id, user_id, title, chat, created_at, updated_at, archived, pinned) \
                 VALUES ($1, $2, $3, CAST($4::text AS json), $5, $6, false, false)",
                &[id, user, title, chat, created, updated],
            )
            .unwrap();
        }
        drop(c);
        for tag in COPIES {
            fresh(&format!("{name}_{tag}"), Some(&name));
        }
        name
    })
}

const COPIES: [&str; 2] = ["target", "script"];

fn copy_of_fixture(tag: &str) -> String {
    assert!(COPIES.contains(&tag));
    url(&format!("{}_{tag}", fixture()))
}

/// `severity rule@key` of each finding, sorted.
fn findings(doc: &Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}@{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["location"]["key"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// Every chat's `chat` column, as text, by id.
fn digest(url: &str) -> Vec<(String, String)> {
    let mut c = Client::connect(url, NoTls).unwrap();
    c.query("SELECT id, chat::text FROM chat ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one"
)]
fn each_chat_is_read_as_from_webui_db_and_nul_is_said() {
    let db = url(fixture());
    let (status, doc) = lint_json(&db, &["--fail-on", "info"]);
    assert_eq!(status, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "postgres-table", "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "open-webui", "{doc:#}");
    assert_eq!(doc["files"][0]["conversations"], 7, "{doc:#}");
    // The same findings as webui.db's, and the NUL.
    let (_, lite) = lint_json(DB, &["--fail-on", "info"]);
    let mut want = findings(&lite);
    want.push(format!("warning nul-escape@{NUL}"));
    want.sort();
    assert_eq!(findings(&doc), want, "{doc:#}");
    let by = |rule: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap()
            .to_string()
    };
    let nul = by("nul-escape");
    // The answer is in the tree and in the `messages` list beside it.
    assert!(
        nul.contains("2 NUL escapes") && nul.contains("chat search"),
        "{nul}"
    );
    let lone = by("lone-surrogate");
    assert!(
        lone.contains("Unicode low surrogate must follow a high surrogate"),
        "{lone}"
    );
    // Each chat holds what the web app walks, as from webui.db.
    let walked = |input: &str| -> Vec<(String, u64)> {
        let o = run(&["inspect", "--format", "json", input]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut v: Vec<(String, u64)> = doc["conversations"]
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
        v.sort();
        v
    };
    let mut want = walked(DB);
    want.push((NUL.to_string(), 4));
    want.sort();
    assert_eq!(walked(&db), want);
}

#[test]
#[cfg_attr(
    not(all(has_tool = "postgres", has_tool = "open-webui", has_tool = "python3")),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG, the open-webui 0.12.4 wheel and Python 3: scripts/test-all sets them up"
)]
fn the_repair_relinks_into_another_database_or_a_script_that_open_webui_opens() {
    let d = tempfile::tempdir().unwrap();
    let source = url(fixture());
    let before = digest(&source);
    let target = copy_of_fixture("target");
    let script = d.path().join("repair.sql");
    let log = d.path().join("log.json");
    // The source is refused as a target.
    let o = run(&["repair", &source, "--target", &source]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("refusing"), "{}", stderr(&o));
    let o = run(&[
        "repair",
        &source,
        "--target",
        &target,
        "--emit-sql",
        script.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(digest(&source), before, "the source database changed");
    let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let edited: Vec<&str> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["conversation"].as_str().unwrap())
        .collect();
    // The trees webui.db's repair re-links.
    assert_eq!(
        edited,
        [
            "c-0002-dangling-current",
            "c-0003-dangling-parent",
            "c-0004-parent-cycle"
        ],
        "{log:#}"
    );
    for e in log["edits"].as_array().unwrap() {
        assert!(e["before"].is_string() && e["after"].is_string(), "{e:#}");
        assert_eq!(e["location"]["table"], "chat", "{e:#}");
    }
    // What is left: the message without a role, the cut emoji, the NUL.
    let (_, doc) = lint_json(&target, &["--fail-on", "info"]);
    let left = findings(&doc);
    assert_eq!(left.len(), 3, "{doc:#}");
    assert!(
        left[0].starts_with("error missing-role@c-0005-missing-role/"),
        "{left:?}"
    );
    assert_eq!(
        left[1..],
        [
            "warning lone-surrogate@c-0006-lone-surrogate".to_string(),
            format!("warning nul-escape@{NUL}"),
        ],
        "{doc:#}"
    );
    // The script does the same to another copy, twice over harmlessly,
    // and never names the password.
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(!text.contains(&password(&source)), "{text}");
    let other = copy_of_fixture("script");
    let mut o = Client::connect(&other, NoTls).unwrap();
    o.batch_execute(&text).unwrap();
    o.batch_execute(&text).unwrap();
    drop(o);
    assert_eq!(digest(&other), digest(&target));
    // A second repair changes nothing.
    let again = d.path().join("again.json");
    let o = run(&[
        "repair",
        &target,
        "--emit-sql",
        d.path().join("again.sql").to_str().unwrap(),
        "--log",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let again: Value = serde_json::from_slice(&std::fs::read(&again).unwrap()).unwrap();
    assert_eq!(again["edits"].as_array().unwrap().len(), 0, "{again:#}");
    // Open WebUI's own code on the repaired chats (the judge reads a
    // webui.db: the repaired column of each chat written into a copy).
    let copy = d.path().join("webui.db");
    std::fs::copy(root().join(DB), &copy).unwrap();
    let lite = rusqlite::Connection::open(&copy).unwrap();
    for (id, chat) in digest(&target) {
        if id == NUL {
            continue;
        }
        let n = lite
            .execute("UPDATE chat SET chat = ?1 WHERE id = ?2", [&chat, &id])
            .unwrap();
        assert_eq!(n, 1, "{id}");
    }
    drop(lite);
    let wheel = std::env::var("CHATFSCK_OPEN_WEBUI").unwrap_or_else(|_| {
        root()
            .join("target/tools/open-webui/open_webui-0.12.4-py3-none-any.whl")
            .to_string_lossy()
            .into_owned()
    });
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/oracle/open_webui.py"))
        .arg(&wheel)
        .arg(&copy)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(after.len(), 6);
    for c in &after {
        assert_eq!(c["hangs"], false, "{c}");
        assert!(c["error"].is_null(), "{c}");
        let walk = c["walk"].as_array().unwrap();
        assert!(!walk.is_empty(), "{c}");
        assert_eq!(
            c["reached"].as_array().unwrap().len() as u64,
            c["with_role"].as_u64().unwrap(),
            "a message with a role is out of reach: {c}"
        );
    }
}
