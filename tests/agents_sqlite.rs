//! The agent apps' SQLite stores (opencode's `opencode.db`, goose's
//! `sessions.db`, Cursor's `state.vscdb`), read as each app loads them:
//! message counts of the fixture READMEs, findings with their rows, exit
//! codes, the inputs left untouched, and repairs that round-trip.

mod common;
use common::*;

use serde_json::Value;
use std::path::Path;

fn code_of(o: &std::process::Output) -> i32 {
    code(o)
}

const OPENCODE: &str = "fixtures/opencode/home/.local/share/opencode/opencode.db";
const GOOSE: &str = "fixtures/goose/home/.local/share/goose/sessions/sessions.db";
const CURSOR: &str = "fixtures/cursor/home/.config/Cursor/User/globalStorage/state.vscdb";
const LEGACY: &str = "fixtures/opencode/home/.local/share/opencode/storage";
const CURSOR_WS: &str = "fixtures/cursor/home/.config/Cursor/User/workspaceStorage/84c9a67ebe7054485d323a481a9cffeb/state.vscdb";

/// (conversation, messages, user, assistant) as `inspect --format json`
/// counts them.
fn counts(db: &str) -> Vec<(String, u64, u64, u64)> {
    let o = run(&["inspect", "--format", "json", db]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let role = |r: &str| c["by_role"][r].as_u64().unwrap_or(0);
            (
                c["id"].as_str().unwrap().to_string(),
                c["messages"].as_u64().unwrap(),
                role("user"),
                role("assistant"),
            )
        })
        .collect()
}

fn owned(v: &[(&str, u64, u64, u64)]) -> Vec<(String, u64, u64, u64)> {
    v.iter()
        .map(|&(id, m, u, a)| (id.to_string(), m, u, a))
        .collect()
}

/// `rule@key severity` for every finding, sorted.
fn findings(doc: &Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}@{}:{} {}",
                f["rule"].as_str().unwrap(),
                f["location"]["table"].as_str().unwrap(),
                f["location"]["key"].as_str().unwrap(),
                f["severity"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

fn notes(doc: &Value) -> String {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["notes"].as_array().unwrap().iter())
        .map(|n| n.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn message_counts_match_the_fixture_readmes() {
    assert_eq!(
        counts(OPENCODE),
        owned(&[
            ("ses_1bb4a977ffffMn8Bv4Cx2Zl7Jh", 2, 1, 1),
            ("ses_1bb53bf3ffffKd3Wq9Vb1Ys6Rc", 2, 1, 1),
            ("ses_1bb5ce6fffffHq7Lm2Nx8Pr4Tz", 3, 1, 2),
        ])
    );
    assert_eq!(
        counts(GOOSE),
        owned(&[
            ("20260520_1", 4, 2, 2),
            ("20260520_2", 2, 1, 1),
            ("20260520_3", 5, 3, 2),
        ])
    );
    assert_eq!(
        counts(CURSOR),
        owned(&[
            ("2f8e6d4c-1b3a-4958-a7c6-5d4e3f2a1b09", 2, 1, 1),
            ("7a21307b-c742-491d-ac90-21fdab1f1746", 2, 1, 1),
            ("9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02", 2, 1, 1),
        ])
    );
}

#[test]
fn formats_and_dialects_are_named() {
    for (db, format, dialect) in [
        (OPENCODE, "sqlite-table", "opencode"),
        (GOOSE, "sqlite-table", "goose"),
        (CURSOR, "sqlite-kv", "cursor"),
    ] {
        let (_, doc) = lint_json(db, &[]);
        assert_eq!(doc["files"][0]["format"], format, "{db}");
        assert_eq!(doc["files"][0]["dialect"], dialect, "{db}");
    }
}

/// Cursor's healthy composer: the thinking, the two parallel tool bubbles
/// (each a call and its result) and the answer are one assistant message,
/// in header order although the rows were written in reverse.
#[test]
fn cursor_bubbles_follow_the_header_list() {
    let o = run(&[
        "inspect",
        "--format",
        "json",
        CURSOR,
        "--conversation",
        "7a21307b-c742-491d-ac90-21fdab1f1746",
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["conversations"][0]["timeline"].as_array().unwrap();
    let parts: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            r["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            vec!["text"],
            vec![
                "thinking",
                "tool-call",
                "tool-result",
                "tool-call",
                "tool-result",
                "text"
            ],
        ]
    );
    assert_eq!(
        rows[0]["key"],
        "bubbleId:7a21307b-c742-491d-ac90-21fdab1f1746:b0c1e2a3-0001-4f00-8000-000000000001"
    );
}

#[test]
fn opencode_unfinished_tool_parts_are_warnings_that_say_what_opencode_sends() {
    let (code, doc) = lint_json(OPENCODE, &[]);
    assert_eq!(code, 0, "warnings only: opencode patches the calls");
    assert_eq!(
        findings(&doc),
        vec![
            "orphan-tool-call@part:prt_19e44ac4d40002Fx02Qm7Lk2Pz9W warning",
            "orphan-tool-call@part:prt_19e44b57564003Fx03Qm7Lk2Pz9W warning",
        ]
    );
    assert!(notes(&doc).contains("[Tool execution was interrupted]"));
    let (code, _) = lint_json(OPENCODE, &["--fail-on", "warning"]);
    assert_eq!(code, 1);
}

#[test]
fn goose_orphans_are_errors_that_say_goose_drops_them() {
    let (code, doc) = lint_json(GOOSE, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        vec![
            "orphan-tool-call@messages:6 error",
            "orphan-tool-result@messages:11 error",
        ]
    );
    let notes = notes(&doc);
    assert!(notes.contains("Removed orphaned tool request 'toolu_01GooseShell00000000000E5'"));
    assert!(notes.contains("Removed orphaned tool response 'toolu_01GooseShell00000000000F6'"));
    let call = &doc["findings"][0];
    assert_eq!(call["conversation"], "20260520_2");
    assert_eq!(call["location"]["rowid"], 6);
}

#[test]
fn cursor_unfinished_call_and_dangling_header() {
    let (code, doc) = lint_json(CURSOR, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        vec![
            "dangling-bubble-header@cursorDiskKV:composerData:9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02 error",
            "orphan-tool-call@cursorDiskKV:bubbleId:2f8e6d4c-1b3a-4958-a7c6-5d4e3f2a1b09:c1d2e3f4-0003-4a00-9000-000000000003 error",
        ]
    );
    let dangling = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "dangling-bubble-header")
        .unwrap();
    assert!(
        dangling["summary"]
            .as_str()
            .unwrap()
            .contains("`fullConversationHeadersOnly[1]` names `bubbleId:9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02:d2e3f4a5-0002-4b00-a000-000000000002`")
    );
    assert_eq!(dangling["fixable"], false);
}

/// A Cursor workspace database (`ItemTable` only) holds the chat panel's
/// tabs, read as conversations, and the workspace's composer list, whose
/// messages the global database keeps: each composer is named with that
/// file (info), never read as "no history" nor as a clean empty chat.
#[test]
fn a_cursor_workspace_database_reads_its_chats_and_names_where_composers_are() {
    assert_eq!(
        counts(CURSOR_WS),
        owned(&[
            ("3e1c9a20-5b7d-4f61-8a2e-0c4d6f8b1a01", 4, 2, 2),
            // The stopped response (a bubble with no text) is no message.
            ("3e1c9a20-5b7d-4f61-8a2e-0c4d6f8b1a02", 1, 1, 0),
            ("7a21307b-c742-491d-ac90-21fdab1f1746", 0, 0, 0),
            ("2f8e6d4c-1b3a-4958-a7c6-5d4e3f2a1b09", 0, 0, 0),
            ("9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02", 0, 0, 0),
        ])
    );
    let (code, doc) = lint_json(CURSOR_WS, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "sqlite-kv");
    assert_eq!(doc["files"][0]["dialect"], "cursor");
    assert_eq!(
        findings(&doc),
        (0..3)
            .map(|i| format!(
                "history-elsewhere@ItemTable:composer.composerData#allComposers[{i}] info"
            ))
            .collect::<Vec<_>>()
    );
    let global = Path::new("fixtures/cursor/home/.config/Cursor/User/globalStorage/state.vscdb");
    for f in doc["findings"].as_array().unwrap() {
        let summary = f["summary"].as_str().unwrap();
        assert!(summary.contains(&global.display().to_string()), "{summary}");
    }
    // The global database holds what the workspace lists.
    let listed: Vec<String> = counts(CURSOR).into_iter().map(|c| c.0).collect();
    for f in doc["findings"].as_array().unwrap() {
        let id = f["conversation"].as_str().unwrap().to_string();
        assert!(listed.contains(&id), "{id} not in {listed:?}");
    }
    // A repair has nothing to do and leaves the input as it was.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("copy.vscdb");
    let before = std::fs::read(root().join(CURSOR_WS)).unwrap();
    let o = run(&["repair", CURSOR_WS, "-o", out.to_str().unwrap()]);
    assert_eq!(code_of(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(root().join(CURSOR_WS)).unwrap(), before);
}

/// VS Code's own workspace database (`ItemTable` without Cursor's keys)
/// is still no history.
#[test]
fn a_workspace_database_without_cursor_keys_is_no_history() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("state.vscdb");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
         INSERT INTO ItemTable VALUES ('workbench.explorer.treeViewState', '{}');",
    )
    .unwrap();
    drop(conn);
    let o = run(&["lint", db.to_str().unwrap()]);
    assert_eq!(code_of(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("holds no conversation history"),
        "{}",
        stderr(&o)
    );
}

/// Every command on every store leaves the database byte for byte and its
/// mtime as they were, and creates nothing beside it.
#[test]
fn inputs_are_left_untouched() {
    for db in [OPENCODE, GOOSE, CURSOR] {
        let d = copy_to_tmp(&[db]);
        let name = Path::new(db).file_name().unwrap();
        let input = d.path().join(name).to_string_lossy().into_owned();
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir
            .path()
            .join("repaired")
            .to_string_lossy()
            .into_owned();
        let before = dir_fingerprints(d.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        for args in [
            vec!["lint", input.as_str()],
            vec!["lint", "--format", "json", input.as_str()],
            vec!["inspect", input.as_str()],
            vec!["repair", input.as_str(), "--dry-run"],
            vec!["repair", input.as_str(), "-o", out.as_str()],
        ] {
            let o = run(&args);
            assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        }
        assert_eq!(before, dir_fingerprints(d.path()), "{db}");
    }
}

/// opencode runs its database in WAL mode: rows still in the `-wal` are
/// read (here the `running` part completed in the WAL), and the database,
/// its `-wal` and its `-shm` stay as they were.
#[test]
fn opencode_in_wal_mode_is_read_with_its_wal_and_left_untouched() {
    let d = copy_to_tmp(&[OPENCODE]);
    let db = d.path().join("opencode.db");
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             UPDATE part SET data = json_set(data, '$.state.status', 'completed', '$.state.output', 'ok', '$.state.title', 'npm test', '$.state.time.end', 1779269209000)
             WHERE id = 'prt_19e44b57564003Fx03Qm7Lk2Pz9W';",
        )
        .unwrap();
    assert!(d.path().join("opencode.db-wal").exists());
    let path = db.to_string_lossy().into_owned();
    let before = dir_fingerprints(d.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (_, doc) = lint_json(&path, &[]);
    assert_eq!(
        findings(&doc),
        vec!["orphan-tool-call@part:prt_19e44ac4d40002Fx02Qm7Lk2Pz9W warning"],
        "the completed part in the WAL is read"
    );
    run(&["inspect", &path]);
    assert_eq!(before, dir_fingerprints(d.path()));
    drop(writer);
}

/// The report of `repair --format json` (with `extra` flags) of `db` into
/// `out`.
fn repair(db: &str, out: &Path, extra: &[&str]) -> Value {
    let out = out.to_string_lossy();
    let mut args = vec!["repair", "--format", "json", db, "-o", &out];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Rows of a table as text, in rowid order, without the rows `skip`.
fn rows(db: &Path, table: &str, skip: &[i64]) -> Vec<String> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let n = c
        .prepare(&format!("SELECT * FROM {table}"))
        .unwrap()
        .column_count();
    let mut st = c
        .prepare(&format!("SELECT rowid, * FROM {table} ORDER BY rowid"))
        .unwrap();
    let mut out = Vec::new();
    let mut q = st.query([]).unwrap();
    while let Some(r) = q.next().unwrap() {
        let rowid: i64 = r.get(0).unwrap();
        if skip.contains(&rowid) {
            continue;
        }
        let cells: Vec<String> = (1..=n)
            .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
            .collect();
        out.push(cells.join("|"));
    }
    out
}

/// Lint a repaired copy: the rules repair claimed to fix are gone, and a
/// second repair changes nothing.
fn assert_round_trip(copy: &Path, rules: &[&str]) {
    let path = copy.to_string_lossy().into_owned();
    let (_, doc) = lint_json(&path, &[]);
    for f in doc["findings"].as_array().unwrap() {
        assert!(
            !rules.contains(&f["rule"].as_str().unwrap()),
            "{path}: {f:#}"
        );
    }
    let again = repair(&path, &copy.with_extension("again"), &[]);
    assert_eq!(again["edits"], serde_json::json!([]), "{again:#}");
}

#[test]
fn opencode_repair_settles_unfinished_parts_as_opencode_does() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("opencode.db");
    let report = repair(OPENCODE, &out, &[]);
    let edits = report["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    for e in edits {
        assert_eq!(e["action"], "answer-call");
        assert_eq!(e["location"]["table"], "part");
        let before: Value = serde_json::from_str(e["before"].as_str().unwrap()).unwrap();
        let after: Value = serde_json::from_str(e["after"].as_str().unwrap()).unwrap();
        assert!(matches!(
            before["state"]["status"].as_str(),
            Some("pending" | "running")
        ));
        assert_eq!(after["state"]["status"], "error");
        assert_eq!(after["state"]["error"], "Tool execution aborted");
        assert_eq!(after["state"]["metadata"]["interrupted"], true);
        assert_eq!(after["state"]["input"], before["state"]["input"]);
        assert_eq!(after["callID"], before["callID"]);
    }
    // Only those two part rows changed.
    let input = root().join(OPENCODE);
    for table in ["session", "message", "event", "migration"] {
        assert_eq!(rows(&input, table, &[]), rows(&out, table, &[]), "{table}");
    }
    assert_eq!(
        rows(&input, "part", &[12, 16]),
        rows(&out, "part", &[12, 16])
    );
    assert_round_trip(&out, &["orphan-tool-call"]);
    // What opencode sends for the settled part: the call and its error.
    let (_, doc) = lint_json(
        out.to_str().unwrap(),
        &["--select", "orphan-tool-call,orphan-tool-result"],
    );
    assert_eq!(doc["files"][0]["tool_results"], 4);
}

#[test]
fn opencode_repair_can_drop_the_unfinished_parts() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("opencode.db");
    let report = repair(OPENCODE, &out, &["--orphan-calls", "drop"]);
    let edits = report["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    assert!(
        edits
            .iter()
            .all(|e| e["after"].is_null() && e["before"].is_string())
    );
    assert_eq!(
        rows(&root().join(OPENCODE), "part", &[12, 16]),
        rows(&out, "part", &[])
    );
    assert_round_trip(&out, &["orphan-tool-call"]);
}

#[test]
fn goose_repair_answers_the_orphan_and_removes_the_stray_response() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("sessions.db");
    let report = repair(GOOSE, &out, &[]);
    let edits = report["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{report:#}");
    let answer = edits.iter().find(|e| e["action"] == "answer-call").unwrap();
    assert_eq!(answer["synthesized"], true);
    let stray = edits
        .iter()
        .find(|e| e["action"] == "remove-result")
        .unwrap();
    assert_eq!(stray["location"]["key"], "11");
    assert!(stray["before"].as_str().unwrap().contains("toolResponse"));
    assert_eq!(
        stray["after"],
        r#"[{"type":"text","text":"And the type check?"}]"#
    );
    let input = root().join(GOOSE);
    assert_eq!(
        rows(&input, "messages", &[11]),
        rows(&out, "messages", &[11, 12])
    );
    assert_eq!(rows(&input, "sessions", &[]), rows(&out, "sessions", &[]));
    // The answer sorts right after its request, as goose orders rows.
    let c = rusqlite::Connection::open(&out).unwrap();
    let order: Vec<i64> = c
        .prepare("SELECT id FROM messages WHERE session_id = '20260520_2' ORDER BY timestamp, id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(order, vec![5, 6, 12]);
    assert_round_trip(&out, &["orphan-tool-call", "orphan-tool-result"]);
}

#[test]
fn goose_repair_can_drop_the_orphan_request_as_goose_does() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("sessions.db");
    let report = repair(GOOSE, &out, &["--orphan-calls", "drop"]);
    let drop = report["edits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "drop-call")
        .unwrap();
    assert_eq!(
        drop["after"],
        r#"[{"type":"text","text":"Running the test suite."}]"#
    );
    assert_round_trip(&out, &["orphan-tool-call", "orphan-tool-result"]);
}

/// An answer that would not sort right after its request (another row of
/// the session shares its second) is not inserted: the finding is left,
/// with the reason.
#[test]
fn goose_repair_leaves_an_orphan_it_cannot_place() {
    let d = copy_to_tmp(&[GOOSE]);
    let db = d.path().join("sessions.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, timestamp, metadata_json)
             VALUES ('20260520_2', 'user', '[{\"type\":\"text\",\"text\":\"hello?\"}]', 1779269104, '2026-05-20 09:25:04', '{\"userVisible\":true,\"agentVisible\":true}');",
        )
        .unwrap();
    }
    let out = d.path().join("out.db");
    let report = repair(db.to_str().unwrap(), &out, &[]);
    let left = report["left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{report:#}");
    assert_eq!(left[0]["rule"], "orphan-tool-call");
    assert!(left[0]["reason"].as_str().unwrap().contains("timestamp"));
    assert!(
        report["edits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["action"] != "answer-call")
    );
}

#[test]
fn cursor_repair_leaves_every_finding_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("state.vscdb");
    let report = repair(CURSOR, &out, &[]);
    assert_eq!(report["edits"], serde_json::json!([]));
    let mut left: Vec<(String, String)> = report["left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["rule"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec![
            ("dangling-bubble-header".into(), "report-only rule".into()),
            (
                "orphan-tool-call".into(),
                "not repairable in sqlite-kv (cursor) inputs".into()
            ),
        ]
    );
    let input = root().join(CURSOR);
    for table in ["cursorDiskKV", "ItemTable", "composerHeaders"] {
        assert_eq!(rows(&input, table, &[]), rows(&out, table, &[]), "{table}");
    }
}

/// The legacy JSON tree (opencode ≤ 1.1) is read from its session files,
/// as opencode ≤ 1.1 loaded it; its other files are left to them: skipped
/// in a directory walk with that note, refused when named alone, never
/// reported as holding no problems. It is not repaired.
#[test]
fn the_opencode_legacy_tree_is_read_through_its_session_files() {
    let sessions = format!("{LEGACY}/session/4b0c2f1e9d8a7c6b5a4f3e2d1c0b9a8f7e6d5c4b");
    let healthy = format!("{sessions}/ses_45afceffffffHq7Lm2Nx8Pr4Tz.json");
    let running = format!("{sessions}/ses_45af85c1ffffMn8Bv4Cx2Zl7Jh.json");
    assert_eq!(
        counts(&healthy),
        owned(&[("ses_45afceffffffHq7Lm2Nx8Pr4Tz", 3, 1, 2)])
    );
    assert_eq!(
        counts(&running),
        owned(&[("ses_45af85c1ffffMn8Bv4Cx2Zl7Jh", 2, 1, 1)])
    );
    let (code, doc) = lint_json(&healthy, &[]);
    assert_eq!((code, findings(&doc)), (0, vec![]));
    assert_eq!(doc["files"][0]["format"], "json");
    assert_eq!(doc["files"][0]["dialect"], "opencode");
    let (code, doc) = lint_json(&running, &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&doc),
        vec![
            "orphan-tool-call@storage:part/msg_19ba507aa20000Fx00Qm7Lk2Pz9W/prt_19ba507b0c4003Fx03Qm7Lk2Pz9W.json warning"
        ]
    );
    assert!(notes(&doc).contains("opencode 1.18 does not load at all"));

    // Another file of the tree, named alone: one line, exit 2.
    let file = format!(
        "{LEGACY}/message/ses_45af85c1ffffMn8Bv4Cx2Zl7Jh/msg_19ba507a3e0000Fx00Qm7Lk2Pz9W.json"
    );
    let o = run(&["lint", &file]);
    assert_eq!(code_of(&o), 2);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&file) && err.contains("read through its session file"),
        "{err}"
    );

    // The whole tree: both sessions read, every other file skipped with
    // the note.
    let (code, doc) = lint_json(LEGACY, &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["summary"]["conversations"], 2);
    assert_eq!(doc["summary"]["messages"], 5);
    let skipped = doc["skipped"].as_array().unwrap();
    let files = walkdir::WalkDir::new(root().join(LEGACY))
        .into_iter()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(skipped.len(), files - 2, "{doc:#}");
    assert!(
        skipped
            .iter()
            .all(|s| s.to_string().contains("opencode's legacy JSON storage"))
    );

    // Not repaired: refused before anything is written.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("x.json");
    let o = run(&["repair", &running, "-o", out.to_str().unwrap()]);
    assert_eq!(code_of(&o), 2);
    assert!(stderr(&o).contains("not repaired yet"), "{}", stderr(&o));
    assert!(!out.exists());
}

/// Databases that only look like the apps' fall through to the other
/// stores.
#[test]
fn near_miss_databases_are_not_taken_for_the_apps() {
    let d = tempfile::tempdir().unwrap();
    for (name, sql) in [
        (
            "vscode.vscdb",
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB); INSERT INTO ItemTable VALUES ('workbench.x', '{}');",
        ),
        (
            "nocomposer.vscdb",
            "CREATE TABLE ItemTable (key TEXT, value BLOB); CREATE TABLE cursorDiskKV (key TEXT PRIMARY KEY, value BLOB); INSERT INTO cursorDiskKV VALUES ('agentKv:blob:1', 'x');",
        ),
        (
            "blog.db",
            "CREATE TABLE session (id TEXT); CREATE TABLE message (id TEXT, body TEXT); CREATE TABLE part (id TEXT);",
        ),
        (
            "chat.db",
            "CREATE TABLE sessions (id TEXT); CREATE TABLE messages (id INTEGER, session_id TEXT, role TEXT, content_json TEXT, created_timestamp INTEGER);",
        ),
    ] {
        let p = d.path().join(name);
        rusqlite::Connection::open(&p)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        let o = run(&["lint", p.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{name}");
        assert!(
            stderr(&o).contains("holds no conversation history"),
            "{name}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn snapshots_of_lint_human_and_json() {
    let legacy = format!(
        "{LEGACY}/session/4b0c2f1e9d8a7c6b5a4f3e2d1c0b9a8f7e6d5c4b/ses_45af85c1ffffMn8Bv4Cx2Zl7Jh.json"
    );
    for (name, db) in [
        ("opencode", OPENCODE),
        ("opencode-legacy", legacy.as_str()),
        ("goose", GOOSE),
        ("cursor", CURSOR),
        ("cursor-workspace", CURSOR_WS),
    ] {
        let human = stdout(&run(&["lint", db]));
        insta::assert_snapshot!(format!("agents_lint_human__{name}"), human);
        let json = stdout(&run(&["lint", "--format", "json", db]));
        insta::assert_snapshot!(format!("agents_lint_json__{name}"), json);
    }
}

/// A bubble whose text holds a lone surrogate escape (an emoji cut in
/// two): Cursor reads its rows with `JSON.parse`, which takes it. lint
/// said the bubble was not JSON (a `corrupt-record` error, the prompt
/// lost); it reads the prompt, the escape as U+FFFD, and says so in a
/// `lone-surrogate` warning.
#[test]
fn a_cursor_bubble_with_a_lone_surrogate_escape_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.vscdb");
    std::fs::copy(root().join(CURSOR), &db).unwrap();
    let key = "bubbleId:7a21307b-c742-491d-ac90-21fdab1f1746:b0c1e2a3-0001-4f00-8000-000000000001";
    let c = rusqlite::Connection::open(&db).unwrap();
    let value: String = c
        .query_row(
            "SELECT value FROM cursorDiskKV WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .unwrap();
    let at = value.find(r#""text":""#).unwrap() + r#""text":""#.len();
    let cut = format!(r"{}\ud83d{}", &value[..at], &value[at..]);
    c.execute(
        "UPDATE cursorDiskKV SET value = ?1 WHERE key = ?2",
        [cut.as_str(), key],
    )
    .unwrap();
    drop(c);
    let path = db.to_str().unwrap();
    let (before, fixture) = lint_json(CURSOR, &[]);
    let (code, doc) = lint_json(path, &[]);
    assert_eq!(code, before);
    let mut want = findings(&fixture);
    want.push(format!("lone-surrogate@cursorDiskKV:{key} warning"));
    let mut got = findings(&doc);
    got.sort();
    want.sort();
    assert_eq!(got, want, "{doc:#}");
    let o = run(&[
        "inspect",
        "--format",
        "json",
        path,
        "--conversation",
        "7a21307b-c742-491d-ac90-21fdab1f1746",
    ]);
    assert!(stdout(&o).contains('\u{fffd}'), "{}", stdout(&o));
}

/// Issue 35, defect 13: a goose row that repair deleted (its
/// `content_json` does not parse, or the removal of a stray `toolResponse`
/// left it empty) was logged by its `content_json` alone: its
/// `metadata_json` (goose's `userVisible`/`agentVisible`), `tokens` and
/// timestamps were in neither the copy nor the log. The log holds the row
/// whole: put back into the copy, it gives the input's rows back.
#[test]
fn a_deleted_goose_row_is_logged_whole_and_can_be_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    std::fs::copy(root().join(GOOSE), &db).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        // Row 4 torn; row 11 holding only its stray response.
        let stray: String = c
            .query_row("SELECT content_json FROM messages WHERE id = 11", [], |r| {
                r.get(0)
            })
            .unwrap();
        let stray: Vec<Value> = serde_json::from_str(&stray).unwrap();
        assert_eq!(stray[0]["type"], "toolResponse");
        let only = serde_json::to_string(&stray[..1]).unwrap();
        c.execute_batch(
            "UPDATE messages SET content_json = substr(content_json, 1, 30), tokens = 321 WHERE id = 4;
             UPDATE messages SET tokens = 77,
               metadata_json = '{\"userVisible\":false,\"agentVisible\":true}' WHERE id = 11;",
        )
        .unwrap();
        c.execute(
            "UPDATE messages SET content_json = ?1 WHERE id = 11",
            [only],
        )
        .unwrap();
    }
    let (out, log) = repair_logged(&db, dir.path());
    let input_rows = rows(&db, "messages", &[]);
    let edits = log["edits"].as_array().unwrap();
    let deleted: Vec<&Value> = edits.iter().filter(|e| e["after"].is_null()).collect();
    assert_eq!(deleted.len(), 2, "{log:#}");
    let c = rusqlite::Connection::open(&out).unwrap();
    for e in &deleted {
        let row = e["row"]
            .as_object()
            .unwrap_or_else(|| panic!("a deleted row is logged whole: {e:#}"));
        let id = row["id"].as_i64().unwrap();
        assert!(id == 4 || id == 11, "{e:#}");
        let (tokens, visible) = if id == 4 { (321, true) } else { (77, false) };
        assert_eq!(row["tokens"], tokens, "{e:#}");
        let meta: Value = serde_json::from_str(row["metadata_json"].as_str().unwrap()).unwrap();
        assert_eq!(meta["userVisible"], visible, "{e:#}");
        for col in [
            "session_id",
            "role",
            "content_json",
            "created_timestamp",
            "timestamp",
        ] {
            assert!(row.contains_key(col), "{col} missing: {e:#}");
        }
        // Put back from the log alone.
        let cols: Vec<&String> = row.keys().collect();
        let values: Vec<rusqlite::types::Value> = row
            .values()
            .map(|v| match v {
                Value::Null => rusqlite::types::Value::Null,
                Value::Number(n) if n.is_i64() => n.as_i64().unwrap().into(),
                Value::Number(n) => n.as_f64().unwrap().into(),
                Value::String(s) => s.clone().into(),
                other => panic!("not a column value: {other}"),
            })
            .collect();
        let sql = format!(
            "INSERT INTO messages ({}) VALUES ({})",
            cols.iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
            vec!["?"; cols.len()].join(", ")
        );
        c.execute(&sql, rusqlite::params_from_iter(values)).unwrap();
    }
    drop(c);
    // Every row of the input is back; the copy adds only the answer it
    // inserted (row 12).
    assert_eq!(rows(&out, "messages", &[12]), input_rows);
}

/// One goose `messages` row whose `content_json` does not parse: goose's
/// loader gives up on the whole session (`serde_json::from_str(…)?` in
/// `SessionStorage::get_conversation`), so the finding says nothing of
/// it can be resumed; the repair drops the row, logged, and the copy
/// loads.
#[test]
fn a_goose_row_that_does_not_parse_fails_the_whole_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    std::fs::copy(root().join(GOOSE), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let n = c
        .execute(
            "UPDATE messages SET content_json = substr(content_json, 1, 30) WHERE id = 4",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(c);
    let path = db.to_str().unwrap();
    let (code, doc) = lint_json(path, &[]);
    assert_eq!(code, 1);
    let bad: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "corrupt-record")
        .collect();
    assert_eq!(bad.len(), 1, "{doc:#}");
    assert_eq!(bad[0]["location"]["rowid"], 4);
    assert!(
        bad[0]["notes"]
            .to_string()
            .contains("goose cannot load this session at all"),
        "{:#}",
        bad[0]
    );
    let (out, log) = repair_logged(&db, dir.path());
    let dropped = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["rule"] == "corrupt-record")
        .count();
    assert_eq!(dropped, 1, "{log:#}");
    let (_, again) = lint_json(out.to_str().unwrap(), &[]);
    assert!(
        again["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "corrupt-record"),
        "{again:#}"
    );
}
