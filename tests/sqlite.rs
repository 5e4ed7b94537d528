//! dispatch's SQLite chunk store, read as the app leaves it.

mod common;
use common::*;

const SEED: &str = "1a997b08-09c2-412c-b296-48703c8aaf58";

fn key(seq: u32) -> String {
    format!("conv:{SEED}:chunk:{seq:010}")
}

fn seed_findings() -> Vec<String> {
    let mut v = vec![
        format!("msgidx-collision@{}", key(2)),
        format!("mixed-role-message@{}", key(2)),
        format!("thinking-only-message@{}", key(14)),
        format!("tool-call-as-text@{}", key(14)),
    ];
    v.sort();
    v
}

#[test]
fn seed_000_is_diagnosed_and_the_healthy_conversation_is_not() {
    for db in [
        "fixtures/dispatch/seed-000.db",
        "fixtures/dispatch/wal/dispatch.db",
    ] {
        let (code, doc) = lint_json(db, &["--fail-on", "warning"]);
        assert_eq!(code, 1);
        assert_eq!(rule_locs(&doc), seed_findings(), "{db}");
        assert_eq!(doc["files"][0]["format"], "sqlite-kv");
        assert_eq!(doc["files"][0]["dialect"], "dispatch");
        assert_eq!(doc["files"][0]["conversations"], 2);
        for f in doc["findings"].as_array().unwrap() {
            assert_eq!(f["conversation"], SEED);
            assert_eq!(f["location"]["table"], "kv");
        }
        let collision = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == "msgidx-collision")
            .unwrap();
        assert!(
            collision["summary"]
                .as_str()
                .unwrap()
                .contains("6 messages (seq 1–11) share msgIdx 0")
        );
    }
}

#[test]
fn a_wal_only_database_is_read_whole_and_left_untouched() {
    let d = copy_wal_to_tmp(&["fixtures/dispatch/wal/dispatch.db"]);
    // The main file alone holds no rows: everything is in the WAL.
    assert!(
        std::fs::metadata(d.path().join("dispatch.db"))
            .unwrap()
            .len()
            <= 4096
    );
    let db = d.path().join("dispatch.db").to_string_lossy().into_owned();
    let before = dir_fingerprints(d.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (_, doc) = lint_json(&db, &[]);
    assert_eq!(rule_locs(&doc), seed_findings());
    for args in [
        vec!["inspect", db.as_str()],
        vec!["inspect", db.as_str(), "--conversation", SEED],
        vec![
            "inspect",
            db.as_str(),
            "--conversation",
            SEED,
            "--format",
            "markdown",
        ],
        vec!["inspect", db.as_str(), "--format", "json"],
    ] {
        assert_eq!(code(&run(&args)), 0, "{args:?}");
    }
    assert_eq!(
        before,
        dir_fingerprints(d.path()),
        "db, -wal and -shm must be byte-for-byte unchanged"
    );
}

/// No command leaves anything in the temporary directory. A WAL database
/// with frames and no `-shm` is read in place; one with a hot `-journal`
/// is read from a private copy, which every command removes before it
/// exits, whether it read the store to the end or stopped early. (Reader
/// threads still alive at exit used to leave one copy of the evidence
/// behind per run.) The copy shows the store as SQLite rolls it back: no
/// torn row.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it makes the crashed stores"
)]
fn the_private_copy_of_a_database_is_removed() {
    let d = copy_to_tmp(&[
        "fixtures/dispatch/wal/dispatch.db",
        "fixtures/dispatch/wal/dispatch.db-wal",
        "fixtures/dispatch/wal/traces.db",
        "fixtures/dispatch/wal/traces.db-wal",
    ]);
    let hot = hot_journal_store(d.path(), "hot.db", 20, 6);
    let hot = hot.to_string_lossy().into_owned();
    let (status, doc) = lint_json(&hot, &[]);
    assert_eq!(status, 0, "{doc}");
    assert_eq!(doc["files"][0]["conversations"], 20);
    let db = d.path().join("dispatch.db").to_string_lossy().into_owned();
    let traces = d.path().join("traces.db").to_string_lossy().into_owned();
    let out = d.path().join("repaired.db").to_string_lossy().into_owned();
    let hot_out = d
        .path()
        .join("hot-repaired.db")
        .to_string_lossy()
        .into_owned();
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["lint", db.as_str()],
        vec!["lint", db.as_str(), "--trace", traces.as_str()],
        vec!["lint", traces.as_str()],
        vec!["inspect", db.as_str()],
        vec!["inspect", db.as_str(), "--conversation", SEED],
        vec!["repair", db.as_str(), "-o", out.as_str()],
        vec!["diff", db.as_str(), out.as_str()],
        vec!["lint", hot.as_str()],
        vec!["inspect", hot.as_str(), "--conversation", "00000003"],
        vec!["repair", hot.as_str(), "-o", hot_out.as_str()],
        vec!["diff", hot.as_str(), hot_out.as_str()],
    ] {
        let o = assert_cmd::Command::cargo_bin("chatfsck")
            .unwrap()
            .current_dir(root())
            .env("TMPDIR", tmp.path())
            .args(&args)
            .output()
            .unwrap();
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{args:?} left {left:?} in TMPDIR");
    }
}

#[test]
fn a_rollback_database_is_read_in_place_without_creating_files() {
    let d = copy_to_tmp(&["fixtures/dispatch/seed-000.db"]);
    let db = d.path().join("seed-000.db").to_string_lossy().into_owned();
    let before = dir_fingerprints(d.path());
    let (_, doc) = lint_json(&db, &[]);
    assert_eq!(rule_locs(&doc), seed_findings());
    run(&["inspect", &db, "--conversation", SEED]);
    assert_eq!(before, dir_fingerprints(d.path()));
}

#[test]
fn inspect_reproduces_the_seed_evidence_table() {
    let o = run(&[
        "inspect",
        "fixtures/dispatch/seed-000.db",
        "--conversation",
        SEED,
        "--format",
        "markdown",
    ]);
    assert_eq!(code(&o), 0);
    let md = stdout(&o);
    for row in [
        "| 0000000001 | user | 0 | 0 | text | \"hello\" |",
        "| 0000000003 | assistant | 0 | 1 | text | \"Hello! How can I help you today?\" |",
        "| 0000000007 | user | 0 | 0 | text | \"the caching, there are 3 different percentages displayed\" |",
        "| 0000000012 | tool | 1 | 0 | tool-result | run\\_shell ./packages/metrics/src/cache-stats.ts",
        "| 0000000013 | tool | 2 | 0 | tool-result | run\\_shell (error)",
        "| 0000000014 | assistant | 0 | 0 | thinking |",
        // The loaded view: seq 1–11 merged into one `user` message.
        "| 0 | user | 1–11 | 11 | user, assistant | 0, 1, 2, 3, 4, 5 |",
        "| 1 | tool | 12 | 1 | tool | 6 |",
    ] {
        assert!(md.contains(row), "missing `{row}` in\n{md}");
    }
    let o = run(&[
        "inspect",
        "fixtures/dispatch/seed-000.db",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    let seed = convs.iter().find(|c| c["id"] == SEED).unwrap();
    assert_eq!(seed["messages"], 9);
    assert_eq!(seed["loaded_messages"], 4);
    let healthy = convs.iter().find(|c| c["id"] != SEED).unwrap();
    assert_eq!(healthy["messages"], healthy["loaded_messages"]);
    assert_eq!(healthy["errors"], 0);
    assert_eq!(healthy["warnings"], 0);
}

#[test]
fn seq_gaps_repeats_and_counter_mismatch() {
    let (_, doc) = lint_json(
        "fixtures/seq-gap/dispatch-seq-gap.db",
        &["--select", "seq-gap"],
    );
    let summaries: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        summaries,
        vec![
            "seq 3 is missing from the chunk log",
            "seq 5 is stored twice, under two keys",
            "the seq counter says 9, but the last chunk is seq 7",
        ],
        "{doc:#}"
    );
}

fn assert_error(path: &str, cause: &str) {
    let o = run(&["lint", path]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(path) && err.contains(cause), "{err}");
}

#[test]
fn bad_databases_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    // Not SQLite at all (or encrypted: SQLCipher files have no header).
    let enc = d.path().join("encrypted.db");
    std::fs::write(
        &enc,
        (0..8192u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_error(enc.to_str().unwrap(), "not a SQLite database");
    // A SQLite file with no history in it.
    let other = d.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('x');").unwrap();
    }
    assert_error(
        other.to_str().unwrap(),
        "SQLite database holds no conversation history chatfsck recognises (no `subagent_messages` table; tables: `notes`); tried: dispatch chunk store, gbrain message tables, dispatch traces (traces.db), Arize Phoenix traces, opencode database (opencode.db), goose sessions (sessions.db), Crush sessions (crush.db), llm logs (logs.db), Cursor state (state.vscdb), LangGraph checkpoints (SQLite, langgraph-checkpoint-sqlite), Open WebUI database (webui.db); name a message table with --table and the column flags",
    );
    // Corrupt: the header survives, the pages do not.
    let corrupt = d.path().join("corrupt.db");
    let mut bytes = std::fs::read(root().join("fixtures/dispatch/seed-000.db")).unwrap();
    for b in bytes[100..].iter_mut() {
        *b = 0xA5;
    }
    std::fs::write(&corrupt, bytes).unwrap();
    let o = run(&["lint", corrupt.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("corrupt") || err.contains("not a readable SQLite database"),
        "{err}"
    );
}

/// Issue 35, defect 10: a header whose write version (byte 18) SQLite does
/// not know makes SQLite open the database read-only. Lint reads it; a
/// repair failed with "out.db: attempt to write a readonly database",
/// blaming the copy it had just made. The error names the input and the
/// header's byte, exit 2, and nothing is written.
#[test]
fn a_store_with_an_unknown_write_version_is_refused_naming_the_input() {
    for (fixture, name) in [
        ("fixtures/dispatch/seed-000.db", "store.db"),
        (
            "fixtures/goose/home/.local/share/goose/sessions/sessions.db",
            "sessions.db",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join(name);
        let mut bytes = std::fs::read(root().join(fixture)).unwrap();
        assert!(bytes[19] <= 2, "{fixture}: read version {}", bytes[19]);
        bytes[18] = 7;
        std::fs::write(&db, &bytes).unwrap();
        let path = db.to_str().unwrap();
        let before = fingerprint(&db);
        // SQLite reads it: lint does.
        let o = run(&["lint", path]);
        assert!(matches!(code(&o), 0 | 1), "{fixture}: {}", stderr(&o));
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("out.db");
        let log = out_dir.path().join("log.json");
        let o = run(&[
            "repair",
            path,
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{fixture}: {err}");
        assert_eq!(err.lines().count(), 1, "{fixture}: {err}");
        assert!(
            err.starts_with(&format!("error: {path}: ")),
            "{fixture}: not the input's error: {err}"
        );
        assert!(
            err.contains("write version") && err.contains("byte 18") && err.contains('7'),
            "{fixture}: {err}"
        );
        assert!(!err.contains("out.db"), "{fixture}: blames the copy: {err}");
        assert_eq!(
            std::fs::read_dir(out_dir.path()).unwrap().count(),
            0,
            "{fixture}: wrote something"
        );
        assert_eq!(before, fingerprint(&db), "{fixture}: input changed");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "{fixture}");
    }
}

#[test]
fn a_database_locked_by_a_writer_is_reported_as_locked() {
    let d = copy_to_tmp(&["fixtures/dispatch/seed-000.db"]);
    let db = d.path().join("seed-000.db");
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    let o = run(&["lint", db.to_str().unwrap()]);
    writer.execute_batch("ROLLBACK;").unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("locked by another process"),
        "{}",
        stderr(&o)
    );
}

/// An interrupted run (Ctrl-C) removes the private copy of the database it
/// was reading (one with a hot `-journal`), and exits 130 with one line.
#[cfg(unix)]
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it makes the crashed stores"
)]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it makes the crashed stores"
)]
fn an_interrupted_run_removes_its_private_copy() {
    let d = tempfile::tempdir().unwrap();
    let db = hot_journal_store(d.path(), "big.db", 800, 500);
    let tmp = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .args(["lint", db.to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the copy, then interrupt the lint while it reads.
    let start = std::time::Instant::now();
    while std::fs::read_dir(tmp.path()).unwrap().next().is_none() {
        assert!(start.elapsed().as_secs() < 30, "no private copy was made");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "the lint ended before the interrupt; make the store larger: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "error: interrupted"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "an interrupted lint left {left:?} in TMPDIR"
    );
}

/// Run `chatfsck lint --format json DB` with `TMPDIR` set to `tmp`.
fn lint_with_tmpdir(db: &str, tmp: &std::path::Path) -> std::process::Output {
    assert_cmd::Command::cargo_bin("chatfsck")
        .unwrap()
        .current_dir(root())
        .env("TMPDIR", tmp)
        .args(["lint", "--format", "json", db])
        .output()
        .unwrap()
}

/// A chunk store of `convs` conversations of `turns` chunks in rollback
/// mode, caught in the middle of a write as a crash leaves it: every
/// 97th row rewritten by a transaction whose pages reached the main file
/// before it committed, beside the `-journal` that holds those pages as
/// they were (hot: no process holds the database). SQLite rolls it back
/// before it reads, which writes the main file: the one database chatfsck
/// reads from a private copy. `dir` holds only `name` and its `-journal`.
fn hot_journal_store(
    dir: &std::path::Path,
    name: &str,
    convs: u32,
    turns: u32,
) -> std::path::PathBuf {
    let db = crashed_store(dir, name, (convs, turns), (2, 97, "FULL"), Main::AtTheCrash);
    // The main file holds the torn rows: only a rollback hides them.
    let torn: i64 = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
    .query_row("SELECT count(*) FROM kv WHERE value = 'torn'", [], |r| {
        r.get(0)
    })
    .unwrap();
    assert!(torn > 0);
    db
}

/// A chunk store caught by a crash in the middle of a transaction that
/// rewrites every `every`th row, with a page cache of `cache` pages and
/// `PRAGMA synchronous` set to `sync`. A cache smaller than the
/// transaction spills pages to the main file before it commits: the main
/// file is torn, and the `-journal` holds their originals, hot. A larger
/// one keeps them all in memory: the main file is whole, and the journal
/// holds only what a rollback would put back as it is; SQLite writes its
/// header's magic number when it syncs the journal, before the first
/// write to the main file, so that journal is hot only when `sync` is
/// `OFF` (the magic written at once). `dir` holds only `name` and its
/// `-journal`. Made by `tests/data/sqlite/crashed_store.py`, in a
/// process of its own: the bundled SQLite's page caches share one pool
/// per process, and here the other tests' connections would keep the
/// cache from spilling.
fn crashed_store(
    dir: &std::path::Path,
    name: &str,
    (convs, turns): (u32, u32),
    (cache, every, sync): (u32, u32, &str),
    main: Main,
) -> std::path::PathBuf {
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/data/sqlite/crashed_store.py"))
        .arg(dir)
        .arg(name)
        .args([convs, turns, cache, every].map(|n| n.to_string()))
        .arg(sync)
        .arg(match main {
            Main::AtTheCrash => "crash",
            Main::BeforeTheWrite => "before",
        })
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir.join(name)
}

/// Which main file [`crashed_store`] leaves beside the journal.
#[derive(PartialEq)]
enum Main {
    /// As the crash left it.
    AtTheCrash,
    /// As it was before the transaction: a crash after the journal was
    /// synced (its header written, the journal hot) and before the first
    /// page reached the main file.
    BeforeTheWrite,
}

/// The seed store in WAL mode, as dispatch leaves it after a checkpoint:
/// `state` is "absent" (no `-wal`, no `-shm`: the app closed it),
/// "empty" (a 0-byte `-wal`, no `-shm`), "empty+shm" (a 0-byte `-wal` and a
/// `-shm`: the app is open and idle after a truncating checkpoint), or
/// "checkpointed" (a `-wal` whose frames the main file already holds, no
/// `-shm`), or "frames" (a `-wal` with a table the main file lacks, no
/// `-shm`: the app's files copied without it). `filler_kib` of rows in a table of their own make the store
/// larger (a store of a few pages is copied in one step).
fn seed_in_wal_mode(dir: &std::path::Path, state: &str, filler_kib: usize) -> std::path::PathBuf {
    let db = dir.join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    if filler_kib > 0 {
        conn.execute_batch("BEGIN; CREATE TABLE filler (x TEXT)")
            .unwrap();
        for i in 0..filler_kib {
            conn.execute("INSERT INTO filler VALUES (?1)", [format!("{i:>1024}")])
                .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
    }
    conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    if state == "checkpointed" {
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch(
            "PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE scratch (x); DROP TABLE scratch;
             PRAGMA wal_checkpoint(PASSIVE);",
        )
        .unwrap();
    }
    if state == "frames" {
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch(
            "PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE in_wal (x); INSERT INTO in_wal VALUES (1);",
        )
        .unwrap();
    }
    drop(conn);
    let side = |suffix: &str| dir.join(format!("store.db{suffix}"));
    match state {
        "absent" => {}
        "empty" => std::fs::write(side("-wal"), b"").unwrap(),
        "empty+shm" => {
            std::fs::write(side("-wal"), b"").unwrap();
            std::fs::write(side("-shm"), vec![0u8; 32768]).unwrap();
        }
        "checkpointed" | "frames" => {
            assert!(std::fs::metadata(side("-wal")).unwrap().len() > 32);
            std::fs::remove_file(side("-shm")).unwrap();
        }
        _ => unreachable!(),
    }
    db
}

/// Issue 15: a WAL-mode store whose WAL adds nothing to the main file (the
/// state dispatch leaves after a checkpoint) used to be copied whole into
/// the temporary directory before every lint (750 MB of the user's data, a
/// second time). It is read in place: a run whose temporary directory does
/// not even exist reads it, finds what it holds and changes nothing.
#[test]
fn a_checkpointed_wal_store_is_read_in_place_without_a_copy() {
    for state in ["absent", "empty", "empty+shm", "checkpointed"] {
        let d = tempfile::tempdir().unwrap();
        let db = seed_in_wal_mode(d.path(), state, 0);
        let before = dir_fingerprints(d.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let o = lint_with_tmpdir(db.to_str().unwrap(), &d.path().join("no-such-dir"));
        assert!(code(&o) < 2, "{state}: {}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(rule_locs(&doc), seed_findings(), "{state}");
        assert_eq!(before, dir_fingerprints(d.path()), "{state}");
    }
}

/// A repair copies a WAL store it reads in place with SQLite's backup API.
/// With a `-shm` beside the store (the app is open), each step of the
/// backup began a read of its own, which SQLite took for a change to the
/// database: the backup started again from its first page, and a repair
/// of a store of more than 100 pages never ended (found timing the
/// benchmark's 720 MB store). Every state repairs, in bounded time, into
/// a copy that holds every table, and leaves the store as it was.
#[test]
fn a_wal_store_in_every_state_is_repaired_and_left_untouched() {
    for state in ["absent", "empty", "empty+shm", "checkpointed", "frames"] {
        let d = tempfile::tempdir().unwrap();
        // 2 MiB: about 500 pages, five steps of the backup.
        let db = seed_in_wal_mode(d.path(), state, 2048);
        let before = dir_fingerprints(d.path());
        let out = tempfile::tempdir().unwrap();
        let copy = out.path().join("store.db");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let o = run_within_a_minute(
            &["repair", db.to_str().unwrap(), "-o", copy.to_str().unwrap()],
            &[],
            state,
        );
        assert_eq!(code(&o), 0, "{state}: {}", stderr(&o));
        assert_eq!(before, dir_fingerprints(d.path()), "{state}");
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "{state}");
        let filler: i64 = conn
            .query_row("SELECT count(*) FROM filler", [], |r| r.get(0))
            .unwrap();
        assert_eq!(filler, 2048, "{state}");
        if state == "frames" {
            let in_wal: i64 = conn
                .query_row("SELECT count(*) FROM in_wal", [], |r| r.get(0))
                .unwrap();
            assert_eq!(in_wal, 1, "the copy lacks what only the -wal held");
        }
        drop(conn);
        let o = run(&["lint", "--format", "json", copy.to_str().unwrap()]);
        assert_eq!(
            code(&o),
            0,
            "{state}: the copy still has errors: {}",
            stdout(&o)
        );
    }
}

/// A WAL store with committed frames the main file lacks, and its `-shm`
/// beside it (the app is open, or closed without a checkpoint), is read in
/// place too: SQLite reads the WAL without writing the `-shm`.
#[test]
fn a_wal_store_with_frames_and_its_shm_is_read_in_place() {
    let d = copy_wal_to_tmp(&["fixtures/dispatch/wal/dispatch.db"]);
    let db = d.path().join("dispatch.db");
    let before = dir_fingerprints(d.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let o = lint_with_tmpdir(db.to_str().unwrap(), &d.path().join("no-such-dir"));
    assert!(code(&o) < 2, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Every row is in the WAL: the main file alone holds none.
    assert_eq!(rule_locs(&doc), seed_findings());
    assert_eq!(before, dir_fingerprints(d.path()));
}

/// Issue 15: without its `-shm`, a WAL that holds rows the main file lacks
/// was read from a private copy of the whole database in the temporary
/// directory (SQLite would create the `-shm` beside the input). It is read
/// in place, the WAL index in memory: every command reads its rows with no
/// temporary directory at all, creates nothing beside the input, and
/// leaves every byte and time of it as it was.
#[test]
fn a_wal_store_with_frames_but_no_shm_is_read_in_place() {
    let d = copy_to_tmp(&[
        "fixtures/dispatch/wal/dispatch.db",
        "fixtures/dispatch/wal/dispatch.db-wal",
    ]);
    let db = d.path().join("dispatch.db");
    // Every row is in the WAL: the main file alone holds none.
    seed_store_read_in_place(d.path(), &db, "WAL without -shm");
}

/// Lint, inspect, repair and diff of the seed store at `db` (in `dir`),
/// with `TMPDIR` pointing nowhere, so that a private copy would fail:
/// each finds the seed's findings and leaves every file in `dir` as it
/// was, byte and time.
fn seed_store_read_in_place(dir: &std::path::Path, db: &std::path::Path, case: &str) {
    let before = dir_fingerprints(dir);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let no_tmp = dir.join("no-such-dir");
    let o = lint_with_tmpdir(db.to_str().unwrap(), &no_tmp);
    assert!(code(&o) < 2, "{case}: {}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rule_locs(&doc), seed_findings(), "{case}");
    assert_eq!(before, dir_fingerprints(dir), "{case}");
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy.db");
    let db = db.to_str().unwrap();
    for args in [
        vec!["inspect", db, "--conversation", SEED],
        vec!["repair", db, "-o", copy.to_str().unwrap()],
        vec!["diff", db, copy.to_str().unwrap()],
    ] {
        let o = assert_cmd::Command::cargo_bin("chatfsck")
            .unwrap()
            .env("TMPDIR", &no_tmp)
            .args(&args)
            .output()
            .unwrap();
        assert!(code(&o) < 2, "{case} {args:?}: {}", stderr(&o));
        if args[0] == "inspect" {
            assert!(
                stdout(&o).contains("0000000014"),
                "{case} {args:?}: {}",
                stdout(&o)
            );
        }
        assert_eq!(before, dir_fingerprints(dir), "{case} {args:?}");
    }
    assert!(!no_tmp.exists(), "{case}");
}

/// An app in `journal_mode=PERSIST` leaves a `-journal` with a zeroed
/// header after each commit, one in `TRUNCATE` mode an empty one: nothing
/// to roll back, and SQLite reads the database beside it (it plays back
/// only a journal whose first byte is not zero). Such a store was read
/// from a full private copy, as a hot journal is; it is read in place now,
/// with `TMPDIR` pointing nowhere, and left as it was.
#[test]
fn a_journal_with_nothing_to_roll_back_is_read_in_place() {
    for mode in ["PERSIST", "TRUNCATE"] {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("seed-000.db");
        std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
        {
            let c = rusqlite::Connection::open(&db).unwrap();
            c.pragma_update(None, "journal_mode", mode).unwrap();
            c.execute_batch("CREATE TABLE app_state(x); INSERT INTO app_state VALUES (1);")
                .unwrap();
        }
        let journal = std::fs::read(d.path().join("seed-000.db-journal")).unwrap();
        match mode {
            "PERSIST" => assert!(journal.len() >= 512 && journal[0] == 0, "{mode}"),
            _ => assert!(journal.is_empty(), "{mode}"),
        }
        seed_store_read_in_place(d.path(), &db, mode);
    }
}

/// A `-journal` whose transaction had not reached the main file (a crash
/// before its commit, its pages in the cache: most of a transaction's
/// life) leaves nothing for SQLite to roll back: the main file alone is
/// the database, and it is read in place, without a copy, whether the
/// journal is hot (`synchronous=OFF`) or not yet (its header zeroed until
/// it is synced). Checked against SQLite itself: a copy of the store,
/// rolled back by SQLite, is byte for byte the main file exactly when
/// lint reads it in place (`TMPDIR` pointing nowhere, so a private copy
/// fails); the stores whose main file the transaction tore are read from
/// the copy, and show no torn row.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it makes the crashed stores"
)]
fn a_crashed_store_is_read_in_place_only_when_its_rollback_changes_nothing() {
    let mut seen = std::collections::BTreeSet::new();
    use Main::{AtTheCrash, BeforeTheWrite};
    for (cache, every, sync, main) in [
        (100_000, 97, "OFF", AtTheCrash),
        (100_000, 3, "OFF", AtTheCrash),
        (100_000, 3, "FULL", AtTheCrash),
        (100_000, 3, "NORMAL", AtTheCrash),
        (2, 97, "FULL", AtTheCrash),
        (2, 3, "OFF", AtTheCrash),
        (40, 97, "NORMAL", AtTheCrash),
        (40, 5, "OFF", AtTheCrash),
        (8, 3, "FULL", AtTheCrash),
        (8, 2, "OFF", AtTheCrash),
        // A journal of several segments (one per sync), none of whose
        // pages reached the main file.
        (8, 3, "FULL", BeforeTheWrite),
        (2, 97, "FULL", BeforeTheWrite),
    ] {
        let case = format!(
            "cache {cache}, every {every}, synchronous {sync}, {}",
            if main == AtTheCrash {
                "main file at the crash"
            } else {
                "main file before the write"
            }
        );
        let d = tempfile::tempdir().unwrap();
        let db = crashed_store(d.path(), "crashed.db", (60, 6), (cache, every, sync), main);
        let journal = std::fs::read(d.path().join("crashed.db-journal")).unwrap();
        let hot = journal[0] != 0;
        let main = std::fs::read(&db).unwrap();
        // SQLite's own rollback, on a copy.
        let rolled = tempfile::tempdir().unwrap();
        let copy = rolled.path().join("crashed.db");
        std::fs::copy(&db, &copy).unwrap();
        std::fs::write(rolled.path().join("crashed.db-journal"), &journal).unwrap();
        let torn_after_rollback: i64 = rusqlite::Connection::open(&copy)
            .unwrap()
            .query_row("SELECT count(*) FROM kv WHERE value = 'torn'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(torn_after_rollback, 0);
        let unchanged = std::fs::read(&copy).unwrap() == main;
        let before = dir_fingerprints(d.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let no_tmp = d.path().join("no-such-dir");
        let o = lint_with_tmpdir(db.to_str().unwrap(), &no_tmp);
        let in_place = code(&o) < 2;
        assert_eq!(in_place, unchanged, "{case}: {}", stderr(&o));
        if in_place {
            // A repair copies the main file alone: the database, whole.
            let out = tempfile::tempdir().unwrap();
            let copy = out.path().join("crashed.db");
            let o = assert_cmd::Command::cargo_bin("chatfsck")
                .unwrap()
                .env("TMPDIR", &no_tmp)
                .args(["repair", db.to_str().unwrap(), "-o", copy.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(code(&o) < 2, "{case}: {}", stderr(&o));
            let rows: i64 = rusqlite::Connection::open(&copy)
                .unwrap()
                .query_row("SELECT count(*) FROM kv WHERE value != 'torn'", [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(rows, 360, "{case}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let o = lint_with_tmpdir(db.to_str().unwrap(), tmp.path());
        assert!(code(&o) < 2, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["files"][0]["conversations"], 60, "{case}");
        assert!(!stdout(&o).contains("torn"), "{case}");
        assert_eq!(before, dir_fingerprints(d.path()), "{case}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        eprintln!("{case}: hot {hot}, read in place {in_place}");
        seen.insert((hot, in_place));
    }
    // Every kind was made: a hot journal with nothing to roll back, one
    // with torn pages, and a journal not yet hot.
    assert_eq!(
        seen,
        [(false, true), (true, false), (true, true)].into(),
        "{seen:?}"
    );
}

/// A chunk whose value holds a lone surrogate escape (an emoji cut in
/// two): dispatch's `JSON.parse` reads it. lint called the row "not a
/// chunk entry" and lost the chunk, which moved the rest: a false
/// `seq-gap`, a false `role-order` and a collision summary that named the
/// wrong message. It is a `lone-surrogate` error; the repair replaces the
/// escape with `\ufffd` in place before it renumbers the row, and a
/// second repair changes nothing.
#[test]
fn a_lone_surrogate_escape_in_a_chunk_is_read_and_mended() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("seed-000.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let key = format!("conv:{SEED}:chunk:0000000003");
    let n = rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            r"UPDATE kv SET value = replace(value, 'Hello! How', 'Hello! \ud83dHow') WHERE key = ?1",
            [&key],
        )
        .unwrap();
    assert_eq!(n, 1);
    let rules = |doc: &serde_json::Value| -> Vec<String> {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {}", f["rule"], f["summary"]))
            .collect()
    };
    let (_, fixture) = lint_json("fixtures/dispatch/seed-000.db", &[]);
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    let mut want = rules(&fixture);
    want.push(format!(
        "\"lone-surrogate\" \"kv row `{key}` has 1 lone surrogate escape: Python's `json` and `JSON.parse` read it, but the request cannot carry the text\""
    ));
    assert_eq!(rules(&doc), want);

    let (out, log) = repair_logged(&db, dir.path());
    let mended: Vec<&serde_json::Value> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "replace-surrogates")
        .collect();
    assert_eq!(mended.len(), 1, "{log:#}");
    let before = mended[0]["before"].as_str().unwrap();
    let after = mended[0]["after"].as_str().unwrap();
    assert!(before.contains(r"Hello! \ud83dHow"), "{before}");
    assert_eq!(after, before.replace(r"\ud83d", r"\ufffd"));
    let (_, again) = lint_json(out.to_str().unwrap(), &[]);
    assert!(
        again["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "lone-surrogate" && f["rule"] != "msgidx-collision"),
        "{again:#}"
    );
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// A chunk whose `text` is named twice: dispatch's `JSON.parse` keeps the
/// last value. lint called the row "not a chunk entry" and lost the
/// chunk (a false `corrupt-record`, and a false `seq-gap` after it). It
/// is now read as the app reads it: the findings are the fixture's, and
/// the conversation holds the last text, never the first.
#[test]
fn a_member_named_twice_in_a_chunk_is_read_as_the_app_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("seed-000.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let key = format!("conv:{SEED}:chunk:0000000003");
    let n = rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            r#"UPDATE kv SET value = replace(value, '"text":"Hello! How', '"text":"a draft the app never reads","text":"Hello! How') WHERE key = ?1"#,
            [&key],
        )
        .unwrap();
    assert_eq!(n, 1);
    let rules = |doc: &serde_json::Value| -> Vec<String> {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {}", f["rule"], f["summary"]))
            .collect()
    };
    let (_, fixture) = lint_json("fixtures/dispatch/seed-000.db", &[]);
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    assert_eq!(rules(&doc), rules(&fixture));
    let o = run(&[
        "inspect",
        db.to_str().unwrap(),
        "--conversation",
        SEED,
        "--format",
        "json",
    ]);
    let text = stdout(&o);
    assert!(text.contains("Hello! How can I help"), "{text}");
    assert!(!text.contains("a draft the app never reads"), "{text}");
    let (out, _) = repair_logged(&db, dir.path());
    let (_, again) = lint_json(out.to_str().unwrap(), &[]);
    assert!(
        again["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "corrupt-record" && f["rule"] != "seq-gap"),
        "{again:#}"
    );
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// `src` rebuilt at `dest` with every page of its data in a `-wal` the main
/// file lacks, and no `-shm` (an app's files copied without it): the main
/// file holds only an empty database in WAL mode, and the WAL each table,
/// row (with its rowid), index, view and trigger of `src`.
fn rebuilt_in_wal(src: &std::path::Path, dest: &std::path::Path) {
    let conn = rusqlite::Connection::open(dest).unwrap();
    // Tables are filled in the order they were made, before the ones
    // their foreign keys name.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA foreign_keys = OFF;",
    )
    .unwrap();
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    conn.execute("ATTACH DATABASE ?1 AS src", [src.to_str().unwrap()])
        .unwrap();
    let schema: Vec<(String, String, String)> = conn
        .prepare(
            "SELECT type, name, sql FROM src.sqlite_master
             WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    conn.execute_batch("BEGIN").unwrap();
    for (kind, name, sql) in &schema {
        if kind != "table" {
            continue;
        }
        conn.execute_batch(sql).unwrap();
        let name = name.replace('"', "\"\"");
        // Rowids kept where the table has them: findings name rows by them.
        {
            let columns: Vec<String> = conn
                .prepare(&format!("PRAGMA src.table_info(\"{name}\")"))
                .unwrap()
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(|c| format!("\"{}\"", c.unwrap().replace('"', "\"\"")))
                .collect();
            let columns = columns.join(", ");
            let with_rowid = conn.execute_batch(&format!(
                "INSERT INTO main.\"{name}\" (rowid, {columns}) SELECT rowid, {columns} FROM src.\"{name}\""
            ));
            if with_rowid.is_err() {
                conn.execute_batch(&format!(
                    "INSERT INTO main.\"{name}\" ({columns}) SELECT {columns} FROM src.\"{name}\""
                ))
                .unwrap();
            }
        }
    }
    for (kind, _, sql) in &schema {
        if kind != "table" {
            conn.execute_batch(sql).unwrap();
        }
    }
    conn.execute_batch("COMMIT; DETACH DATABASE src;").unwrap();
    drop(conn);
    let side = |suffix: &str| {
        let mut s = dest.as_os_str().to_owned();
        s.push(suffix);
        std::path::PathBuf::from(s)
    };
    std::fs::remove_file(side("-shm")).unwrap();
    assert!(std::fs::metadata(side("-wal")).unwrap().len() > 32);
}

/// Issue 15, for every store kept in SQLite: each fixture database, its
/// data moved into a `-wal` with no `-shm` beside it, is read in place
/// (the WAL index in memory) by every reader, and lints exactly as the
/// original does: the same findings, or the same error. Nothing is
/// written beside it, in the temporary directory or to its files.
#[test]
fn every_sqlite_store_is_read_whole_from_a_wal_without_its_shm() {
    let fixtures = [
        "fixtures/dispatch/seed-000.db",
        "fixtures/dispatch/traces.db",
        "fixtures/seq-gap/dispatch-seq-gap.db",
        "fixtures/gbrain/gbrain.db",
        "fixtures/traces/phoenix.db",
        "fixtures/opencode/home/.local/share/opencode/opencode.db",
        "fixtures/goose/home/.local/share/goose/sessions/sessions.db",
        "fixtures/cursor/home/.config/Cursor/User/globalStorage/state.vscdb",
        "fixtures/langgraph/checkpoints.sqlite",
        "fixtures/open-webui/webui.db",
        "fixtures/crush/damaged/.crush/crush.db",
    ];
    let d = tempfile::tempdir().unwrap();
    let no_tmp = d.path().join("no-such-dir");
    for fixture in fixtures {
        let original = root().join(fixture);
        // The same path under the temporary directory: some stores are
        // told by where they live.
        let copy = d.path().join(fixture);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        rebuilt_in_wal(&original, &copy);
        let before = dir_fingerprints(copy.parent().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let lint = |db: &std::path::Path| {
            let o = lint_with_tmpdir(db.to_str().unwrap(), &no_tmp);
            let text = String::from_utf8_lossy(&o.stdout)
                .replace(&format!("{}/", d.path().display()), "")
                .replace(&format!("{}/", root().display()), "");
            let err = stderr(&o)
                .replace(&format!("{}/", d.path().display()), "")
                .replace(&format!("{}/", root().display()), "");
            (code(&o), text, err)
        };
        let (want_code, want, want_err) = lint(&original);
        let (got_code, got, got_err) = lint(&copy);
        assert_eq!(got_err, want_err, "{fixture}");
        assert_eq!(got_code, want_code, "{fixture}: {got_err}");
        if want_code < 2 {
            let findings = |text: &str| {
                let doc: serde_json::Value = serde_json::from_str(text).unwrap();
                (doc["findings"].clone(), doc["summary"].clone())
            };
            assert_eq!(findings(&got), findings(&want), "{fixture}");
        }
        assert_eq!(
            before,
            dir_fingerprints(copy.parent().unwrap()),
            "{fixture}"
        );
        assert!(!no_tmp.exists());
    }
}
