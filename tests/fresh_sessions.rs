//! Each pinned client writes a fresh session today, and chatfsck reads all
//! of it (issue 37, "drift is never silent"): Claude Code 2.1.330, Gemini
//! CLI 0.61.0, opencode 1.18.33, the Cline CLI 3.0.65, Copilot CLI
//! 1.0.102 and Qwen Code 0.24.4 (issue 40) run one prompt
//! offline
//! (`tests/oracle/fresh.py`, against the loopback mock provider of
//! fixtures/clients/mock_provider.py, which answers with one tool call and
//! then with text), and the session they write must lint clean at every
//! severity, read as the four steps it holds (prompt, tool call, its
//! result, answer), with every record of the store either a message read
//! or a bookkeeping record counted. Codex has its own in
//! tests/codex_today.rs. When a client bump changes what it writes, these
//! fail first. The four run in parallel: about a minute in all on 2 cores.

mod common;
use common::*;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Run `fresh.py CLIENT` into a temp dir: its summary (checked: the pinned
/// version, a clean exit, a tool round made) and the store it copied.
fn fresh(client: &str, version: &str) -> (tempfile::TempDir, Value, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fresh");
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/oracle/fresh.py"))
        .args([client, out.to_str().unwrap(), "--timeout", "180"])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    let summary: Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "fresh.py {client} printed no summary: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
    assert_eq!(summary["version"], version, "{summary}");
    assert_eq!(summary["rc"], 0, "the client failed: {summary}");
    assert!(
        summary["model_requests"].as_u64().unwrap() >= 2,
        "no tool round: {summary}"
    );
    let store = PathBuf::from(
        summary["store"]
            .as_str()
            .unwrap_or_else(|| panic!("the client wrote no session: {summary}")),
    );
    (dir, summary, store)
}

/// Lint (clean at `--fail-on info`, read as `dialect`) and inspect the
/// store: its one conversation.
fn read_clean(store: &Path, dialect: &str) -> Value {
    let path = store.to_str().unwrap();
    let (rc, doc) = lint_json(path, &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], dialect, "{doc:#}");
    let o = run(&["inspect", "--format", "json", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 1, "{doc:#}");
    let conv = convs[0].clone();
    assert_eq!(conv["corrupt_records"], 0, "{conv:#}");
    conv
}

/// The timeline as (role, parts), and the tool ids it names.
fn steps(conv: &Value) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let mut steps = Vec::new();
    let mut ids = Vec::new();
    for m in conv["timeline"].as_array().unwrap() {
        let parts = m["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        steps.push((m["role"].as_str().unwrap().to_string(), parts));
        for id in m["tool_ids"].as_array().unwrap() {
            ids.push(id.as_str().unwrap().to_string());
        }
    }
    (steps, ids)
}

fn step(role: &str, parts: &[&str]) -> (String, Vec<String>) {
    (
        role.to_string(),
        parts.iter().map(|p| p.to_string()).collect(),
    )
}

/// A JSONL session: prompt, call, result, answer; the call answered by
/// its result; every line a message or a counted bookkeeping record.
fn assert_jsonl_session(conv: &Value, store: &Path, prompt: &str, result_role: &str) {
    let (got, ids) = steps(conv);
    assert_eq!(
        got,
        [
            step("user", &["text"]),
            step("assistant", &["tool-call"]),
            step(result_role, &["tool-result"]),
            step("assistant", &["text"]),
        ],
        "{conv:#}"
    );
    assert_eq!(ids.len(), 2, "{conv:#}");
    assert_eq!(ids[0], ids[1], "the call's result names it: {conv:#}");
    assert_eq!(conv["timeline"][0]["preview"], prompt, "{conv:#}");
    let lines = std::fs::read_to_string(store)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64;
    assert_eq!(
        conv["messages"].as_u64().unwrap() + conv["meta_records"].as_u64().unwrap(),
        lines,
        "every line is read as a message or counted as bookkeeping: {conv:#}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code client and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("claude", "2.1.330");
    let conv = read_clean(&store, "claude-code");
    assert_jsonl_session(&conv, &store, summary["prompt"].as_str().unwrap(), "user");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "gemini-cli", has_tool = "python3")),
    ignore = "needs the real Gemini CLI 0.61.0 in CHATFSCK_GEMINI_CLI and Python 3: scripts/test-all installs it"
)]
fn gemini_cli_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("gemini", "0.61.0");
    let conv = read_clean(&store, "gemini-cli");
    assert_jsonl_session(&conv, &store, summary["prompt"].as_str().unwrap(), "user");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "opencode", has_tool = "python3")),
    ignore = "needs the real opencode client (opencode-ai 1.18.33) in CHATFSCK_OPENCODE and Python 3: scripts/test-all installs it"
)]
fn opencode_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("opencode", "1.18.33");
    let conv = read_clean(&store, "opencode");
    let (got, ids) = steps(&conv);
    // A tool part is the call and its result.
    assert_eq!(
        got,
        [
            step("user", &["text"]),
            step("assistant", &["tool-call", "tool-result"]),
            step("assistant", &["text"]),
        ],
        "{conv:#}"
    );
    assert_eq!(ids.len(), 2, "{conv:#}");
    assert_eq!(ids[0], ids[1], "{conv:#}");
    let prompt = summary["prompt"].as_str().unwrap();
    assert!(
        conv["timeline"][0]["preview"]
            .as_str()
            .unwrap()
            .contains(prompt),
        "{conv:#}"
    );
    // Every message row read, every part row a part read or bookkeeping
    // counted; and nothing in the tables this reader does not read.
    let db =
        rusqlite::Connection::open_with_flags(&store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, u64>(0)).unwrap();
    assert_eq!(conv["messages"], count("SELECT count(*) FROM message"));
    let parts_read = conv["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let parts = m["parts"].as_array().unwrap();
            // a tool part is read as a call and a result
            parts.len() - parts.iter().filter(|p| *p == "tool-result").count()
        })
        .sum::<usize>() as u64;
    assert_eq!(
        parts_read + conv["meta_records"].as_u64().unwrap(),
        count("SELECT count(*) FROM part"),
        "{conv:#}"
    );
    assert_eq!(count("SELECT count(*) FROM session_message"), 0);
}

/// Cline 4's store, as the Cline CLI (3.0.65, `cline PROMPT --json`)
/// writes it: one `<id>.messages.json` document per session.
#[test]
#[cfg_attr(
    not(all(has_tool = "cline-cli", has_tool = "python3")),
    ignore = "needs the real Cline CLI (cline 3.0.65) in CHATFSCK_CLINE_CLI and Python 3: scripts/test-all installs it"
)]
fn cline_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("cline", "3.0.65");
    let conv = read_clean(&store, "cline-4");
    let (got, ids) = steps(&conv);
    assert_eq!(
        got,
        [
            step("user", &["text"]),
            step("assistant", &["tool-call"]),
            step("user", &["tool-result"]),
            step("assistant", &["text"]),
        ],
        "{conv:#}"
    );
    assert_eq!(ids.len(), 2, "{conv:#}");
    assert_eq!(ids[0], ids[1], "the call's result names it: {conv:#}");
    let prompt = summary["prompt"].as_str().unwrap();
    assert!(
        conv["timeline"][0]["preview"]
            .as_str()
            .unwrap()
            .contains(prompt),
        "{conv:#}"
    );
    // Every element of `messages` is a message read.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    assert_eq!(
        conv["messages"].as_u64().unwrap(),
        doc["messages"].as_array().unwrap().len() as u64,
        "{conv:#}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "copilot-cli", has_tool = "python3")),
    ignore = "needs the real Copilot CLI 1.0.102 in CHATFSCK_COPILOT_CLI and Python 3: scripts/test-all installs it"
)]
fn copilot_cli_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("copilot", "1.0.102");
    let conv = read_clean(&store, "copilot-cli");
    assert_jsonl_session(&conv, &store, summary["prompt"].as_str().unwrap(), "tool");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "qwen-code", has_tool = "python3")),
    ignore = "needs the real Qwen Code 0.24.4 in CHATFSCK_QWEN_CODE and Python 3: scripts/test-all installs it"
)]
fn qwen_code_fresh_session_reads_whole_and_clean() {
    let (_dir, summary, store) = fresh("qwen", "0.24.4");
    let conv = read_clean(&store, "qwen-code");
    assert_jsonl_session(&conv, &store, summary["prompt"].as_str().unwrap(), "tool");
}
