//! A run without a path: every app's histories found where the app keeps
//! them, on a home directory each test builds in a temporary directory
//! from the fixtures' stores (and one store in a layout chatfsck does not
//! know), with the environment cleared but for `HOME`.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Claude Code session ids (what `claude --resume` shows).
const CLAUDE_A: &str = "5f1c2a9e-1111-4222-8333-944455556666";
const CLAUDE_B: &str = "5f1c77aa-2222-4333-8444-a55566667777";
/// A Codex thread id (what `codex resume` takes).
const CODEX: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn put(home: &Path, rel: &str, fixture: &str) -> PathBuf {
    let dest = home.join(rel);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(root().join(fixture), &dest).unwrap();
    dest
}

/// The apps whose fixtures keep a home directory of their own.
const HOMES: &[&str] = &[
    "gemini-cli",
    "opencode",
    "cline",
    "roo-code",
    "goose",
    "cursor",
    "copilot-cli",
    "pi",
    "qwen-code",
    "kimi-code",
    "mistral-vibe",
];

/// A home directory holding every app's stores in its layout, and an
/// opencode database of a layout chatfsck does not read (tables named as
/// the reported opencode 2.0 line names them).
fn generated_home() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    for app in HOMES {
        copy_tree(&root().join("fixtures").join(app).join("home"), home);
    }
    put(
        home,
        &format!(".claude/projects/-home-u-shop/{CLAUDE_A}.jsonl"),
        "fixtures/claude-code/healthy/linear.jsonl",
    );
    put(
        home,
        &format!(".claude/projects/-home-u-api/{CLAUDE_B}.jsonl"),
        "fixtures/claude-code/orphan-tool-result/tool-use-deleted.jsonl",
    );
    put(
        home,
        &format!(".codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-{CODEX}.jsonl"),
        "fixtures/codex/orphan-tool-result/call-deleted.jsonl",
    );
    // llm 0.36's message store (threads; the 0.31 schema is the override
    // test's).
    put(
        home,
        ".config/io.datasette.llm/logs.db",
        "fixtures/llm/store.db",
    );
    // Open WebUI installed with `uv tool install open-webui`, started with
    // `open-webui serve`: its data folder is the package's own.
    put(
        home,
        ".local/share/uv/tools/open-webui/lib/python3.11/site-packages/open_webui/data/webui.db",
        "fixtures/open-webui/webui.db",
    );
    // Crush's global workspace keeps its data directory in `.crush/`.
    put(
        home,
        ".local/share/crush/.crush/crush.db",
        "fixtures/crush/damaged/.crush/crush.db",
    );
    let unknown = home.join(".local/share/opencode/opencode-next.db");
    let conn = rusqlite::Connection::open(&unknown).unwrap();
    conn.execute_batch(
        "CREATE TABLE session_v2 (id TEXT PRIMARY KEY, data TEXT);
         CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT);
         INSERT INTO session_v2 VALUES ('ses_next', '{}');
         INSERT INTO session_message VALUES ('msg_1', 'ses_next', '{\"role\":\"user\"}');",
    )
    .unwrap();
    drop(conn);
    d
}

/// Run chatfsck with only `HOME` (and `PATH`) set.
fn run_home(home: &Path, args: &[&str]) -> Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn app<'a>(doc: &'a Value, key: &str) -> &'a Value {
    doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .unwrap_or_else(|| panic!("{key} in the discovery table"))
}

/// What a run named on the app's own files reads: (sessions, sessions
/// with an error finding), counted from its findings.
fn named_counts(paths: &[PathBuf]) -> (u64, usize) {
    let mut args = vec!["lint", "--format", "json"];
    let strs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(strs.iter().map(String::as_str));
    let doc = json(&run(&args));
    let sessions = doc["summary"]["conversations"].as_u64().unwrap();
    let mut errored: Vec<(String, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["location"]["path"].as_str().unwrap().to_string(),
                f["conversation"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    errored.sort();
    errored.dedup();
    (sessions, errored.len())
}

#[test]
fn a_run_without_a_path_lists_every_app_and_names_the_unknown_layout() {
    let d = generated_home();
    let home = d.path();
    let o = run_home(home, &["lint", "--format", "json"]);
    // The unknown layout is unread: exit 2, whatever the findings.
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let doc = json(&o);
    let keys: Vec<&str> = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "claude-code",
            "codex",
            "gemini-cli",
            "opencode",
            "cline",
            "roo-code",
            "goose",
            "cursor",
            "copilot-cli",
            "pi",
            "qwen-code",
            "kimi-code",
            "mistral-vibe",
            "llm",
            "open-webui",
            "crush"
        ]
    );
    // Every app's counts are what a run naming its files reads.
    for a in doc["discovery"].as_array().unwrap() {
        let key = a["key"].as_str().unwrap();
        let found = a["found"].as_u64().unwrap();
        assert!(found > 0, "{key}: nothing found");
        let files: Vec<PathBuf> = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
            .filter(|p| {
                a["looked"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| p.starts_with(l["path"].as_str().unwrap()))
            })
            .collect();
        let (sessions, with_errors) = named_counts(&files);
        assert_eq!(a["sessions"].as_u64().unwrap(), sessions, "{key}");
        assert_eq!(
            a["with_errors"].as_u64().unwrap() as usize,
            with_errors,
            "{key}"
        );
        let unread = a["unread"].as_array().unwrap();
        if key == "opencode" {
            assert_eq!(unread.len(), 1, "{key}: {unread:?}");
            assert!(
                unread[0]["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("opencode-next.db")
            );
            assert_eq!(found as usize, files.len() + 1, "{key}");
        } else {
            assert!(unread.is_empty(), "{key}: {unread:?}");
            // Read every session it found.
            assert_eq!(found as usize, files.len(), "{key}");
        }
    }
    // The document keeps to the committed schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/lint-output.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let bad: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(bad.is_empty(), "{bad:?}");
    // The per-app document, the temporary home written `$HOME`.
    let text = serde_json::to_string(&doc["discovery"])
        .unwrap()
        .replace(home.to_str().unwrap(), "$HOME");
    let discovery: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("discovery_json", discovery);
    assert!(
        doc["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("opencode-next.db")),
        "{}",
        doc["errors"]
    );
}

/// The table and the closing lines of the human report (the findings
/// above them carry the temporary directory's path).
fn table(out: &str) -> String {
    let start = out.find('┌').expect("a table");
    out[start..].to_string()
}

#[test]
fn the_human_report_is_a_table_per_app() {
    let d = generated_home();
    let o = run_home(d.path(), &["lint"]);
    assert_eq!(code(&o), 2);
    insta::assert_snapshot!("discovery_human_table", table(&stdout(&o)));
}

#[test]
fn a_machine_without_any_app_is_told_where_it_looked() {
    let d = tempfile::tempdir().unwrap();
    let o = run_home(d.path(), &["lint"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("no agent histories found; looked in:\n"),
        "{out}"
    );
    assert!(out.contains("Claude Code: ~/.claude/projects"), "{out}");
    assert!(out.contains("Codex: ~/.codex/sessions"), "{out}");
    let o = run_home(d.path(), &["lint", "--format", "json"]);
    assert_eq!(code(&o), 0);
    let doc = json(&o);
    assert!(
        doc["discovery"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["found"] == 0)
    );
}

#[test]
fn each_app_honours_its_own_override() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let elsewhere = d.path().join("elsewhere");
    put(
        &elsewhere,
        &format!("claude/projects/p/{CLAUDE_A}.jsonl"),
        "fixtures/claude-code/healthy/linear.jsonl",
    );
    put(
        &elsewhere,
        &format!("codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-{CODEX}.jsonl"),
        "fixtures/codex/healthy/rollout.jsonl",
    );
    copy_tree(
        &root().join("fixtures/goose/home/.local/share"),
        &elsewhere.join("xdg"),
    );
    put(&elsewhere, "llm/logs.db", "fixtures/llm/logs.db");
    put(&elsewhere, "owui/webui.db", "fixtures/open-webui/webui.db");
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .env_clear()
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", elsewhere.join("claude"))
        .env("CODEX_HOME", elsewhere.join("codex"))
        .env("XDG_DATA_HOME", elsewhere.join("xdg"))
        .env("LLM_USER_PATH", elsewhere.join("llm"))
        .env("DATA_DIR", elsewhere.join("owui"))
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc = json(&o);
    assert_eq!(app(&doc, "claude-code")["found"], 1, "{doc}");
    assert_eq!(app(&doc, "codex")["found"], 1);
    assert_eq!(app(&doc, "goose")["found"], 3);
    assert_eq!(app(&doc, "llm")["found"], 1);
    assert_eq!(app(&doc, "open-webui")["found"], 1);
    // Open WebUI's `DATABASE_URL` names its database whatever `DATA_DIR`
    // says; a PostgreSQL one is no file to find.
    let url = |value: &str| {
        let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
            .env_clear()
            .env("HOME", &home)
            .env("DATA_DIR", elsewhere.join("owui"))
            .env("DATABASE_URL", value)
            .args(["lint", "--format", "json"])
            .output()
            .unwrap();
        json(&o)
    };
    let moved = d.path().join("moved.db");
    std::fs::copy(root().join("fixtures/open-webui/webui.db"), &moved).unwrap();
    let by_url = url(&format!("sqlite:///{}", moved.display()));
    assert_eq!(app(&by_url, "open-webui")["found"], 1, "{by_url}");
    assert_eq!(
        by_url["files"][0]["path"].as_str().unwrap(),
        moved.to_str().unwrap()
    );
    let by_url = url("postgresql://owui:secret@127.0.0.1/owui");
    assert_eq!(app(&by_url, "open-webui")["found"], 0, "{by_url}");
    // Nothing was looked for in the home directory instead.
    let looked = app(&doc, "claude-code")["looked"][0]["path"]
        .as_str()
        .unwrap();
    assert!(looked.starts_with(elsewhere.to_str().unwrap()), "{looked}");
}

#[test]
fn a_codex_session_named_by_its_thread_id_is_repaired_in_place_with_a_backup() {
    let d = generated_home();
    let home = d.path();
    let rollout = home.join(format!(
        ".codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-{CODEX}.jsonl"
    ));
    let before = std::fs::read(&rollout).unwrap();
    // A unique prefix, as a user types it.
    let o = run_home(home, &["lint", &CODEX[..8]]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("orphan-tool-result"), "{}", stdout(&o));
    assert!(stderr(&o).contains(&format!("note: Codex session {CODEX}")));
    let o = run_home(home, &["repair", "--in-place", &CODEX[..8]]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let backups: Vec<PathBuf> = std::fs::read_dir(rollout.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".chatfsck-backup-"))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read(&backups[0]).unwrap(), before);
    assert_ne!(std::fs::read(&rollout).unwrap(), before);
    let o = run_home(home, &["lint", CODEX]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    let d = generated_home();
    let o = run_home(d.path(), &["inspect", "5f1c"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("`5f1c` names 2 sessions"), "{err}");
    assert!(err.contains(CLAUDE_A) && err.contains(CLAUDE_B), "{err}");
    assert!(o.stdout.is_empty());
    let o = run_home(d.path(), &["inspect", "nosuchsession"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no session of Claude Code, Codex"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_session_in_a_database_is_read_alone() {
    let d = generated_home();
    // An opencode session, by the id opencode's session list shows.
    let o = run_home(
        d.path(),
        &["lint", "--format", "json", "ses_1bb5ce6fffffHq7Lm2Nx8Pr4Tz"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["summary"]["conversations"], 1);
}

#[test]
fn last_takes_the_session_changed_last() {
    let d = generated_home();
    let home = d.path();
    let newest = home.join(format!(".claude/projects/-home-u-api/{CLAUDE_B}.jsonl"));
    let f = std::fs::File::options().append(true).open(&newest).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    drop(f);
    let o = run_home(home, &["lint", "--last"]);
    assert!(
        stderr(&o).contains(&format!("note: Claude Code session {CLAUDE_B}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let o = run_home(home, &["inspect", "--last", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn compressed_codex_rollouts_are_found_never_skipped() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let zst = home.join(format!(
        ".codex/sessions/2026/04/01/rollout-2026-04-01T10-00-00-{CODEX}.jsonl.zst"
    ));
    std::fs::create_dir_all(zst.parent().unwrap()).unwrap();
    // A zstd frame's magic number, then nothing: a damaged rollout.
    std::fs::write(&zst, b"\x28\xb5\x2f\xfd").unwrap();
    let o = run_home(home, &["lint", "--format", "json"]);
    let doc = json(&o);
    assert_eq!(app(&doc, "codex")["found"], 1, "{doc}");
    // Read or unread, never skipped and never clean.
    assert!(doc["skipped"].as_array().unwrap().is_empty());
    assert_ne!(code(&o), 0);
}

/// Every session a database store lists is read alone by its id: the id
/// discovery gives is the conversation's id in the reader.
#[test]
fn every_session_a_database_lists_is_read_by_its_id() {
    use chatfsck::format::APPS;
    use chatfsck::lint::{Options, lint_inputs};
    let dbs = [
        (
            "opencode",
            "fixtures/opencode/home/.local/share/opencode/opencode.db",
        ),
        (
            "goose",
            "fixtures/goose/home/.local/share/goose/sessions/sessions.db",
        ),
        (
            "cursor",
            "fixtures/cursor/home/.config/Cursor/User/globalStorage/state.vscdb",
        ),
        ("llm", "fixtures/llm/logs.db"),
        // llm 0.36's message store: threads, and a conversation of 0.31.
        ("llm", "fixtures/llm/store.db"),
        ("llm", "fixtures/llm/logs-0.36.db"),
        ("open-webui", "fixtures/open-webui/webui.db"),
        ("crush", "fixtures/crush/damaged/.crush/crush.db"),
    ];
    for (key, db) in dbs {
        let app = APPS.iter().find(|a| a.key == key).unwrap();
        let path = root().join(db);
        let sessions = (app.sessions)(&path);
        // What the store holds, read whole.
        let whole = lint_inputs(vec![(path.clone(), true)], &Options::default(), &|_| {}).unwrap();
        assert_eq!(
            sessions.len() as u64,
            whole.totals().conversations,
            "{key}: {sessions:?}"
        );
        for s in sessions {
            let opts = Options {
                only: s.conversation.clone(),
                ..Options::default()
            };
            let one = lint_inputs(vec![(path.clone(), true)], &opts, &|_| {}).unwrap();
            assert!(one.errors.is_empty(), "{key} {}: {:?}", s.id, one.errors);
            assert_eq!(one.totals().conversations, 1, "{key} {}", s.id);
        }
    }
    // A session that is not there is an error, never a clean run.
    let path = root().join(dbs[0].1);
    let opts = Options {
        only: Some("ses_gone".into()),
        ..Options::default()
    };
    let gone = lint_inputs(vec![(path, true)], &opts, &|_| {}).unwrap();
    assert_eq!(gone.errors.len(), 1);
    assert!(
        gone.errors[0]
            .to_string()
            .contains("holds no session `ses_gone`"),
        "{}",
        gone.errors[0]
    );
}
