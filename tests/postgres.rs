//! Message tables on a real PostgreSQL server (gbrain, seed 003).
//!
//! Needs `CHATFSCK_TEST_PG`: the URL of a database on a throwaway server, as a
//! superuser (`postgres://user:password@host:port/db`). `scripts/test-all`
//! starts one (see .ci/postgres.sh). Without it every test here is listed
//! as ignored, saying so (build.rs decides): a test that could not run never
//! passes. Each test works in databases of its
//! own, created from fixtures/gbrain/gbrain.pgsql and dropped afterwards.

mod common;
use common::*;

use std::process::Output;

use postgres::{Client, NoTls};
use serde_json::Value;

const FIXTURE: &str = "fixtures/gbrain/gbrain.pgsql";
const SETTLED: &str = "toolu_01GhM2hngDnETq45Ds75kszE";
const PENDING: &str = "toolu_01qY8IHmIHbta3LeqsHH8BuK";

fn server() -> Option<String> {
    match std::env::var("CHATFSCK_TEST_PG") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => panic!(
            "CHATFSCK_TEST_PG is not set: this test needs a superuser URL of a throwaway PostgreSQL server (scripts/test-all installs and starts one; see .ci/postgres.sh)"
        ),
    }
}

/// `base` with another database name.
fn with_db(base: &str, db: &str) -> String {
    let (head, _) = base.rsplit_once('/').expect("postgres://…/db");
    format!("{head}/{db}")
}

/// A database of one test, dropped when the test ends.
struct Db {
    admin: String,
    name: String,
    url: String,
}

impl Db {
    fn new(admin: &str, tag: &str, seed: bool) -> Db {
        let name = format!("chatfsck_{tag}_{}", std::process::id());
        let mut c = Client::connect(admin, NoTls).unwrap();
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_db(admin, &name);
        if seed {
            let sql = std::fs::read_to_string(root().join(FIXTURE)).unwrap();
            Client::connect(&url, NoTls)
                .unwrap()
                .batch_execute(&sql)
                .unwrap();
        }
        Db {
            admin: admin.to_string(),
            name,
            url,
        }
    }

    fn client(&self) -> Client {
        Client::connect(&self.url, NoTls).unwrap()
    }

    /// A digest of every row of every table: proof that nothing changed.
    fn digest(&self) -> String {
        let mut c = self.client();
        let mut out = String::new();
        for t in [
            "subagent_messages",
            "subagent_tool_executions",
            "minion_jobs",
        ] {
            let row = c
                .query_one(
                    &format!("SELECT count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM {t} t"),
                    &[],
                )
                .unwrap();
            out.push_str(&format!("{t}={} ", row.get::<_, String>(0)));
        }
        out
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The display form chatfsck uses: the URL without its password.
fn shown(url: &str) -> String {
    let cfg: postgres::Config = url.parse().unwrap();
    let host = match &cfg.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => unreachable!(),
    };
    format!(
        "postgres://{}@{host}:{}/{}",
        cfg.get_user().unwrap(),
        cfg.get_ports()[0],
        cfg.get_dbname().unwrap()
    )
}

fn password(url: &str) -> String {
    let cfg: postgres::Config = url.parse().unwrap();
    String::from_utf8(cfg.get_password().unwrap_or_default().to_vec()).unwrap()
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = assert_cmd::Command::cargo_bin("chatfsck").unwrap();
    cmd.current_dir(root()).args(args);
    for k in ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn key(idx: i64) -> String {
    format!("job_id=42, message_idx={idx}")
}

fn seed_findings() -> Vec<String> {
    // Two assistant turns in a row are merged by the Anthropic API: not a
    // role-order finding.
    let mut v = vec![
        format!("index-gap@{}", key(1)),
        format!("index-gap@{}", key(3)),
    ];
    v.sort();
    v
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn gbrain_on_postgres_reports_the_gaps_with_their_executions() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin, "lint", true);
    let (status, doc) = lint_json(&db.url, &["--fail-on", "warning"]);
    assert_eq!(status, 1, "{doc:#}");
    assert_eq!(rule_locs(&doc), seed_findings(), "{doc:#}");
    let file = &doc["files"][0];
    assert_eq!(file["format"], "postgres-table");
    assert_eq!(file["dialect"], "gbrain");
    assert_eq!(file["conversations"], 2);
    assert_eq!(file["path"], shown(&db.url));
    let gaps: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "index-gap")
        .collect();
    assert_eq!(gaps[0]["ids"][0], SETTLED);
    assert_eq!(gaps[1]["ids"][0], PENDING);
    assert!(gaps[0]["notes"].to_string().contains("id=1 is `complete`"));
    assert!(gaps[1]["notes"].to_string().contains("id=2 is `pending`"));
    assert!(gaps.iter().all(|g| g["fixable"] == true));
    // The password never reaches the output.
    let o = run(&["lint", &db.url]);
    assert!(!stdout(&o).contains(&password(&db.url)));
    assert!(stdout(&o).contains(&shown(&db.url)), "{}", stdout(&o));
    // `postgres:` takes everything from the PG* variables, as libpq does.
    let cfg: postgres::Config = db.url.parse().unwrap();
    let host = shown(&db.url);
    let host = host.split('@').nth(1).unwrap().split(':').next().unwrap();
    let port = cfg.get_ports()[0].to_string();
    let o = run_env(
        &["lint", "--format", "json", "postgres:"],
        &[
            ("PGHOST", host),
            ("PGPORT", &port),
            ("PGUSER", cfg.get_user().unwrap()),
            ("PGPASSWORD", &password(&db.url)),
            ("PGDATABASE", cfg.get_dbname().unwrap()),
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rule_locs(&doc), seed_findings());
    // inspect works on a database too.
    let o = run(&[
        "inspect",
        &db.url,
        "--conversation",
        "42",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        doc["conversations"][0]["timeline"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn a_read_only_role_is_enough_and_no_write_reaches_the_source() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin, "readonly", true);
    let role = format!("chatfsck_ro_{}", std::process::id());
    {
        let mut c = db.client();
        c.batch_execute(&format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD 'ro-secret' NOSUPERUSER;
             GRANT CONNECT ON DATABASE {db} TO {role}; GRANT USAGE ON SCHEMA public TO {role};
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};",
            db = db.name
        ))
        .unwrap();
    }
    let ro = db
        .url
        .replacen("postgres:", "", 1)
        .split_once('@')
        .map(|(_, rest)| format!("postgres://{role}:ro-secret@{rest}"))
        .unwrap();
    // The role really cannot write.
    let mut rc = Client::connect(&ro, NoTls).unwrap();
    assert!(rc.batch_execute("DELETE FROM minion_jobs").is_err());
    drop(rc);
    let before = db.digest();
    let (status, doc) = lint_json(&ro, &[]);
    assert_eq!(status, 1);
    assert_eq!(rule_locs(&doc), seed_findings());
    let dir = tempfile::tempdir().unwrap();
    let sql = dir.path().join("repair.sql");
    let o = run(&["repair", &ro, "--emit-sql", sql.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&run(&["inspect", &ro])), 0);
    assert_eq!(before, db.digest(), "the source changed");
    let mut c = Client::connect(&admin, NoTls).unwrap();
    let _ = c.batch_execute(&format!("REVOKE ALL ON DATABASE {} FROM {role}", db.name));
    drop(db);
    let _ = c.batch_execute(&format!("DROP ROLE IF EXISTS {role}"));
}

fn user_content(c: &mut Client, job: i64, idx: i32) -> Option<Value> {
    c.query_opt(
        "SELECT content_blocks::text FROM subagent_messages WHERE job_id = $1 AND message_idx = $2 AND role = 'user'",
        &[&job, &idx],
    )
    .unwrap()
    .map(|r| serde_json::from_str(&r.get::<_, String>(0)).unwrap())
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn repair_writes_a_reviewable_script_and_applies_it_to_another_database() {
    let Some(admin) = server() else { return };
    let source = Db::new(&admin, "src", true);
    let target = Db::new(&admin, "dst", true);
    let scripted = Db::new(&admin, "script", true);
    let before = source.digest();
    let healthy_before: Vec<String> = target
        .client()
        .query(
            "SELECT t::text FROM subagent_messages t WHERE job_id = 43 ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let sql = dir.path().join("repair.sql");
    let log = dir.path().join("log.json");
    let o = run(&[
        "repair",
        &source.url,
        "--emit-sql",
        sql.to_str().unwrap(),
        "--target",
        &target.url,
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains(&password(&source.url)));
    // The source is evidence: never modified.
    assert_eq!(before, source.digest());
    let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(log["inserted"], 2);
    assert_eq!(log["target"], shown(&target.url));
    assert!(!log.to_string().contains(&password(&source.url)));
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    assert_eq!(edits[1]["synthesized"], true);
    // The script: one transaction of INSERTs, each a no-op when its row exists.
    let script = std::fs::read_to_string(&sql).unwrap();
    let statements: Vec<&str> = script
        .lines()
        .filter(|l| !l.starts_with("--") && !l.trim().is_empty())
        .collect();
    assert_eq!(statements.first(), Some(&"BEGIN;"));
    assert_eq!(statements.last(), Some(&"COMMIT;"));
    let inserts: Vec<&&str> = statements
        .iter()
        .filter(|l| l.starts_with("INSERT"))
        .collect();
    assert_eq!(inserts.len(), 2);
    assert!(inserts.iter().all(
        |l| l.starts_with("INSERT INTO \"public\".\"subagent_messages\"")
            && l.ends_with("ON CONFLICT (\"job_id\", \"message_idx\") DO NOTHING;")
    ));
    assert!(statements.iter().all(|l| l.starts_with("INSERT")
        || l.starts_with("SET LOCAL")
        || *l == "BEGIN;"
        || *l == "COMMIT;"));
    // The target now holds the rebuilt messages.
    let mut t = target.client();
    let rebuilt = user_content(&mut t, 42, 2).expect("message_idx 2 in the target");
    assert_eq!(rebuilt[0]["tool_use_id"], SETTLED);
    let output: String = t
        .query_one(
            "SELECT output::text FROM subagent_tool_executions WHERE tool_use_id = $1",
            &[&SETTLED],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        serde_json::from_str::<Value>(rebuilt[0]["content"].as_str().unwrap()).unwrap(),
        serde_json::from_str::<Value>(&output).unwrap()
    );
    let placeholder = user_content(&mut t, 42, 4).expect("message_idx 4 answered");
    assert_eq!(placeholder[0]["is_error"], true);
    let healthy_after: Vec<String> = t
        .query(
            "SELECT t::text FROM subagent_messages t WHERE job_id = 43 ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(healthy_before, healthy_after, "the healthy job was touched");
    // Lint on the repaired database: clean.
    let (code_after, doc) = lint_json(&target.url, &["--fail-on", "warning"]);
    assert_eq!(code_after, 0, "{doc:#}");
    // Applying again changes nothing (idempotent), through chatfsck…
    let o = run(&[
        "repair",
        &source.url,
        "--target",
        &target.url,
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rep["inserted"], 0);
    // …and through the script, run twice on a third copy.
    let mut s = scripted.client();
    s.batch_execute(&script).unwrap();
    s.batch_execute(&script).unwrap();
    let n: i64 = s
        .query_one(
            "SELECT count(*) FROM subagent_messages WHERE job_id = 42",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 6);
    let (code_script, _) = lint_json(&scripted.url, &["--fail-on", "warning"]);
    assert_eq!(code_script, 0);
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn the_source_is_never_a_target() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin, "self", true);
    let before = db.digest();
    // Spelled the same, and spelled differently (localhost, a query string).
    let other_spelling = db.url.replace("127.0.0.1", "localhost") + "?application_name=x";
    for t in [db.url.clone(), other_spelling] {
        let o = run(&["repair", &db.url, "--target", &t]);
        assert_eq!(code(&o), 2, "{t}: {}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("refusing to apply the repair to"), "{err}");
    }
    assert_eq!(before, db.digest());
    // No file copy of a database, and no target without an input database.
    let o = run(&["repair", &db.url, "-o", "/tmp/x.db"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("never modified"), "{}", stderr(&o));
    let o = run(&["repair", &db.url]);
    assert_eq!(code(&o), 2);
    let o = run(&[
        "repair",
        "fixtures/gbrain/gbrain.db",
        "--emit-sql",
        "/tmp/x.sql",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("repair PostgreSQL inputs"),
        "{}",
        stderr(&o)
    );
}

fn one_line_error(args: &[&str], needles: &[&str], secret: &str) {
    let o = run(args);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{args:?}: {}{err}", stdout(&o));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    assert!(
        secret.is_empty() || !err.contains(secret),
        "password leaked: {err}"
    );
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn bad_targets_are_one_line_errors() {
    let Some(admin) = server() else { return };
    let pw = password(&admin);
    // Unreachable: nothing listens on port 1.
    let url = "postgres://someone:pw@127.0.0.1:1/db";
    one_line_error(
        &["lint", url],
        &["postgres://someone@127.0.0.1:1/db", "connection refused"],
        "pw@",
    );
    // Wrong password.
    let wrong = admin.replacen(&format!(":{pw}@"), ":not-the-password@", 1);
    one_line_error(
        &["lint", &wrong],
        &[&shown(&admin), "password authentication failed"],
        "not-the-password",
    );
    // A database without gbrain's tables.
    let empty = Db::new(&admin, "empty", false);
    one_line_error(
        &["lint", &empty.url],
        &[
            &shown(&empty.url),
            "no `subagent_messages` table",
            "--table",
        ],
        &pw,
    );
    // A mapping that names a column that is not there, and a text index.
    empty
        .client()
        .batch_execute(
            "CREATE TABLE chat (conv text, seq text, who text, body jsonb, n integer);
             INSERT INTO chat VALUES ('c1', '0', 'user', '\"hi\"', 0);",
        )
        .unwrap();
    let map = |conv: &str, idx: &str| {
        vec![
            "lint".to_string(),
            empty.url.clone(),
            "--table".into(),
            "chat".into(),
            "--conversation-column".into(),
            conv.into(),
            "--index-column".into(),
            idx.into(),
            "--role-column".into(),
            "who".into(),
            "--content-column".into(),
            "body".into(),
        ]
    };
    let args = map("conversation_id", "n");
    one_line_error(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            &shown(&empty.url),
            "table `chat` has no column `conversation_id`",
        ],
        &pw,
    );
    let args = map("conv", "seq");
    one_line_error(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            &shown(&empty.url),
            "index column `seq` of `chat` is `text`, not an integer type",
        ],
        &pw,
    );
    let evil = "n) FROM chat; DROP TABLE chat; --";
    let args = map("conv", evil);
    one_line_error(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &["has no column `n) FROM chat; DROP TABLE chat; --`"],
        &pw,
    );
    let n: i64 = empty
        .client()
        .query_one("SELECT count(*) FROM chat", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    // Not a URL at all.
    one_line_error(
        &["lint", "postgres:nonsense"],
        &["not a PostgreSQL URL"],
        "",
    );
}

#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn a_mapped_table_on_postgres_and_its_script() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin, "mapped", false);
    let ddl = "CREATE TABLE chat (id bigserial PRIMARY KEY, conv text NOT NULL, seq integer NOT NULL, who text NOT NULL, body jsonb);
        INSERT INTO chat (conv, seq, who, body) VALUES
          ('c1', 0, 'user', '\"hello\"'), ('c1', 1, 'assistant', '\"Hi!\"'), ('c1', 1, 'assistant', '\"Hello!\"'),
          ('c2', 0, 'user', '\"list\"'), ('c2', 1, 'assistant', '[{\"type\":\"tool_use\",\"id\":\"toolu_X\",\"name\":\"ls\",\"input\":{}}]'),
          ('c2', 3, 'assistant', '\"done\"');";
    db.client().batch_execute(ddl).unwrap();
    let copy = Db::new(&admin, "mapped_copy", false);
    copy.client().batch_execute(ddl).unwrap();
    let map = [
        "--table",
        "chat",
        "--conversation-column",
        "conv",
        "--index-column",
        "seq",
        "--role-column",
        "who",
        "--content-column",
        "body",
    ];
    let (status, doc) = lint_json(&db.url, &map);
    assert_eq!(status, 1);
    let mut got = rule_locs(&doc);
    got.retain(|r| !r.starts_with("role-order"));
    assert_eq!(
        got,
        vec!["duplicate-index@conv=c1, seq=1", "index-gap@conv=c2, seq=1"]
    );
    let dir = tempfile::tempdir().unwrap();
    let sql = dir.path().join("r.sql");
    let mut args = vec![
        "repair",
        db.url.as_str(),
        "--emit-sql",
        sql.to_str().unwrap(),
    ];
    args.extend_from_slice(&map);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let script = std::fs::read_to_string(&sql).unwrap();
    assert!(script.contains("WHERE NOT EXISTS"), "{script}");
    let mut c = copy.client();
    c.batch_execute(&script).unwrap();
    c.batch_execute(&script).unwrap();
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM chat WHERE conv = 'c2' AND seq = 2 AND who = 'user'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
}

/// Thousands of jobs, more rows than one FETCH: every conversation comes
/// through the cursors whole, with its own executions.
#[test]
#[cfg_attr(
    not(has_tool = "postgres"),
    ignore = "needs a throwaway PostgreSQL server in CHATFSCK_TEST_PG: scripts/test-all starts one (Debian's postgresql)"
)]
fn many_jobs_stream_through_the_cursors() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin, "many", true);
    db.client()
        .batch_execute(
            "INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks)
               SELECT 1000 + j, 0, 'user', '[{\"type\":\"text\",\"text\":\"go\"}]' FROM generate_series(1, 3000) j;
             INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks)
               SELECT 1000 + j, 1, 'assistant', jsonb_build_array(jsonb_build_object('type', 'tool_use', 'id', 'toolu_' || j, 'name', 'brain_get_page', 'input', '{}'::jsonb)) FROM generate_series(1, 3000) j;
             INSERT INTO subagent_tool_executions (job_id, message_idx, tool_use_id, tool_name, input, status, output, ordinal)
               SELECT 1000 + j, 1, 'toolu_' || j, 'brain_get_page', '{}', 'complete', '{\"ok\": true}', 0 FROM generate_series(1, 3000) j;
             -- every 100th job lost its result message
             INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks)
               SELECT 1000 + j, 2, 'user', jsonb_build_array(jsonb_build_object('type', 'tool_result', 'tool_use_id', 'toolu_' || j, 'content', 'ok')) FROM generate_series(1, 3000) j WHERE j % 100 <> 0;
             INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks)
               SELECT 1000 + j, 3, 'assistant', '[{\"type\":\"text\",\"text\":\"done\"}]' FROM generate_series(1, 3000) j;",
        )
        .unwrap();
    let (_, doc) = lint_json(&db.url, &["--select", "index-gap"]);
    assert_eq!(doc["files"][0]["conversations"], 3002);
    let gaps = doc["findings"].as_array().unwrap();
    assert_eq!(gaps.len(), 2 + 30, "{}", gaps.len());
    let recoverable = gaps
        .iter()
        .filter(|f| {
            f["summary"]
                .as_str()
                .unwrap()
                .contains("(1 of 1 result recoverable")
        })
        .count();
    assert_eq!(recoverable, 31);
}
