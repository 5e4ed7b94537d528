//! The real opencode client (`opencode-ai` 1.18.33) resumes a repaired
//! `opencode.db`, offline, against the loopback mock provider, and the
//! request it sends is checked (issue 14). Ignored on machines without the
//! client (build.rs decides); `scripts/test-all` installs it and sets
//! `CHATFSCK_OPENCODE`.
//!
//! For each fixture session whose tool part was left `pending`/`running`:
//! (1) the ORIGINAL is resumed as a control (opencode patches the part in
//! memory and sends `[Tool execution was interrupted]`); (2) the built
//! binary repairs the fixture into a temp dir; (3) the repaired copy is
//! resumed, and its request must pair every tool call with a result right
//! after it, hold no orphan result, carry every stored text part, and send
//! the repair's own error (`Tool execution aborted`), not opencode's patch.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const OPENCODE: &str = "fixtures/opencode/home/.local/share/opencode/opencode.db";

/// The sessions with an unfinished tool part, and that part's call id.
const UNFINISHED: &[(&str, &str)] = &[
    // `pending`, input {}
    (
        "ses_1bb53bf3ffffKd3Wq9Vb1Ys6Rc",
        "toolu_01OcBash00000000000000C3",
    ),
    // `running` (`npm test`)
    (
        "ses_1bb4a977ffffMn8Bv4Cx2Zl7Jh",
        "toolu_01OcBash00000000000000D4",
    ),
];

const INSTALL: &str = "npm install --prefix target/tools/opencode opencode-ai@1.18.33 \
     && export CHATFSCK_OPENCODE=$PWD/target/tools/opencode/node_modules/.bin/opencode";

fn opencode() -> PathBuf {
    match std::env::var_os("CHATFSCK_OPENCODE") {
        Some(p) if !p.is_empty() && Path::new(&p).exists() => PathBuf::from(p),
        Some(p) if !p.is_empty() => panic!(
            "CHATFSCK_OPENCODE={} does not exist: this test needs the `opencode` binary of opencode-ai 1.18.33: {INSTALL}",
            p.to_string_lossy()
        ),
        _ => panic!(
            "CHATFSCK_OPENCODE is not set: this test needs the `opencode` binary of opencode-ai 1.18.33: {INSTALL} (scripts/test-all does)"
        ),
    }
}

/// The mock provider (fixtures/clients/mock_provider.py), stopped when
/// dropped; it logs every request body as one JSON line.
struct Mock {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
}

impl Mock {
    fn start(dir: &Path) -> Mock {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.join("mock.log");
        let mut child = std::process::Command::new("python3")
            .arg(root().join("fixtures/clients/mock_provider.py"))
            .arg(port.to_string())
            .arg(&log)
            .spawn()
            .expect("python3 runs the mock provider");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Mock { child, port, log };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the mock provider did not start on port {port}");
    }

    /// The `messages` of every chat-completions request, in order.
    fn requests(&self) -> Vec<Vec<Value>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| {
                r["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("chat/completions"))
            })
            .filter_map(|r| r["body"]["messages"].as_array().cloned())
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch home: XDG config (the mock provider), cache and state shared
/// by the runs, and the project folder the sessions are moved to.
struct Home {
    root: PathBuf,
    project: PathBuf,
}

impl Home {
    fn new(dir: &Path, mock: &Mock) -> Home {
        let root = dir.join("home");
        let project = dir.join("shop-api");
        for d in ["config/opencode", "cache", "state"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::create_dir_all(&project).unwrap();
        let config = serde_json::json!({
            "autoupdate": false,
            "share": "disabled",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", mock.port), "apiKey": "dummy"},
                "models": {
                    "mock-1": {"tool_call": true, "limit": {"context": 100000, "output": 4096}},
                    "deepseek-v4-pro": {"tool_call": true, "reasoning": true, "limit": {"context": 100000, "output": 4096}},
                    "glm-5": {"tool_call": true, "reasoning": true, "limit": {"context": 100000, "output": 4096}}
                }
            }}
        });
        std::fs::write(
            root.join("config/opencode/opencode.json"),
            config.to_string(),
        )
        .unwrap();
        Home { root, project }
    }

    /// A data dir holding `db` as `opencode/opencode.db`, its sessions
    /// moved to the scratch project: 1.18.33 fails on a session whose
    /// directory does not exist (`FileSystem.realPath (/home/dev/shop-api)`).
    /// Only `session.directory` and `project.worktree` change.
    fn data_dir(&self, name: &str, db: &Path) -> PathBuf {
        let data = self.root.join(name);
        std::fs::create_dir_all(data.join("opencode")).unwrap();
        let to = data.join("opencode/opencode.db");
        std::fs::copy(db, &to).unwrap();
        let c = rusqlite::Connection::open(&to).unwrap();
        let p = self.project.to_str().unwrap();
        c.execute("UPDATE session SET directory = ?1", [p]).unwrap();
        c.execute("UPDATE project SET worktree = ?1", [p]).unwrap();
        data
    }
}

/// Resume `session` from the data dir with the real client; the first
/// request it sends (system prompt left out). The client is stopped once
/// that request is logged: what it does with the mock's answer is not
/// under test.
fn resume(cli: &Path, home: &Home, data: &Path, mock: &Mock, session: &str) -> Vec<Value> {
    resume_as(cli, home, data, mock, session, "mock/mock-1")
}

/// [`resume`] with the model `model` (`provider/id`).
fn resume_as(
    cli: &Path,
    home: &Home,
    data: &Path,
    mock: &Mock,
    session: &str,
    model: &str,
) -> Vec<Value> {
    let before = mock.requests().len();
    let out = data.join(format!("{session}.out"));
    let mut child = std::process::Command::new(cli)
        .args([
            "run",
            "--print-logs",
            "--model",
            model,
            "--session",
            session,
            "continue",
        ])
        .current_dir(&home.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home.root)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", home.root.join("config"))
        .env("XDG_CACHE_HOME", home.root.join("cache"))
        .env("XDG_STATE_HOME", home.root.join("state"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(data.join(format!("{session}.err"))).unwrap())
        .spawn()
        .expect("the opencode binary runs");
    let start = Instant::now();
    let sent = loop {
        if let Some(r) = mock.requests().into_iter().nth(before) {
            break Some(r);
        }
        if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(120) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    let Some(sent) = sent else {
        let err = std::fs::read_to_string(data.join(format!("{session}.err"))).unwrap_or_default();
        let lines: Vec<&str> = err.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        panic!(
            "opencode run --session {session} sent no request in {:?}: {}",
            start.elapsed(),
            tail
        );
    };
    sent.into_iter().filter(|m| m["role"] != "system").collect()
}

/// Where a chat-completions request breaks the pairing rules: an assistant
/// message's tool calls not answered, each once, by the tool messages
/// right after it; a tool message that answers no call just before it.
fn pairing_errors(messages: &[Value]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m["role"] == "tool" {
            errors.push(format!(
                "message {i}: tool result {} answers no call before it",
                m["tool_call_id"]
            ));
            i += 1;
            continue;
        }
        let calls: Vec<&str> = m["tool_calls"]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["id"].as_str()).collect())
            .unwrap_or_default();
        i += 1;
        let mut answered = Vec::new();
        while i < messages.len() && messages[i]["role"] == "tool" {
            let id = messages[i]["tool_call_id"].as_str().unwrap_or("");
            if !calls.contains(&id) || answered.contains(&id) {
                errors.push(format!(
                    "message {i}: tool result {id} answers no open call"
                ));
            }
            answered.push(id);
            i += 1;
        }
        for c in calls {
            if !answered.contains(&c) {
                errors.push(format!("call {c}: no result right after it"));
            }
        }
    }
    errors
}

/// Every string in the messages, for "did this text reach the request".
fn strings(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// What a stored session holds: the text of each text part, and the
/// call id and input of each tool part.
fn stored(db: &Path, session: &str) -> (Vec<String>, Vec<(String, Value)>) {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut q = c
        .prepare("SELECT data FROM part WHERE session_id = ?1 ORDER BY id")
        .unwrap();
    let rows: Vec<String> = q
        .query_map([session], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let (mut texts, mut calls) = (Vec::new(), Vec::new());
    for data in rows {
        let p: Value = serde_json::from_str(&data).unwrap();
        match p["type"].as_str() {
            Some("text") => texts.push(p["text"].as_str().unwrap().to_string()),
            Some("tool") => calls.push((
                p["callID"].as_str().unwrap().to_string(),
                p["state"]["input"].clone(),
            )),
            _ => {}
        }
    }
    (texts, calls)
}

/// The content of the tool message answering `call`.
fn result_of<'a>(messages: &'a [Value], call: &str) -> Option<&'a Value> {
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
        .map(|m| &m["content"])
}

/// The request carries every stored text and call of the session, and the
/// turn `continue` at its end.
fn assert_history(messages: &[Value], db: &Path, session: &str, what: &str) {
    let (texts, calls) = stored(db, session);
    assert!(
        !texts.is_empty() && !calls.is_empty(),
        "{session}: fixture changed"
    );
    let mut all = String::new();
    strings(&Value::Array(messages.to_vec()), &mut all);
    for t in &texts {
        assert!(
            all.contains(t.as_str()),
            "{what} {session}: text {t:?} not sent: {messages:#?}"
        );
    }
    for (c, input) in &calls {
        let sent = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .find(|x| x["id"] == c.as_str())
            .unwrap_or_else(|| panic!("{what} {session}: call {c} not sent: {messages:#?}"));
        let args: Value =
            serde_json::from_str(sent["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            &args, input,
            "{what} {session}: call {c} sent other arguments"
        );
    }
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{what} {session}");
    assert!(
        serde_json::to_string(last).unwrap().contains("continue"),
        "{what}: {last}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "opencode", has_tool = "python3")),
    ignore = "needs the real opencode client (opencode-ai 1.18.33) in CHATFSCK_OPENCODE and Python 3: scripts/test-all installs it"
)]
fn the_real_client_resumes_a_repaired_opencode_db() {
    let cli = opencode();
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(dir.path());
    let home = Home::new(dir.path(), &mock);
    let fixture = root().join(OPENCODE);
    let before = fingerprint(&fixture);

    // (1) Control: the original as stored. opencode patches the unfinished
    // part in memory; its marker is what the repaired run must not need.
    let original = home.data_dir("data-original", &fixture);
    for (session, call) in UNFINISHED {
        let sent = resume(&cli, &home, &original, &mock, session);
        assert_eq!(
            pairing_errors(&sent),
            Vec::<String>::new(),
            "control {session}: {sent:#?}"
        );
        assert_eq!(
            result_of(&sent, call),
            Some(&Value::from("[Tool execution was interrupted]")),
            "control {session}: {sent:#?}"
        );
        assert_history(&sent, &fixture, session, "control");
    }

    // (2) Repair the fixture with the built binary into the temp dir.
    let repaired = dir.path().join("repaired/opencode.db");
    std::fs::create_dir_all(repaired.parent().unwrap()).unwrap();
    let log = dir.path().join("repair-log.json");
    let o = run(&[
        "repair",
        OPENCODE,
        "-o",
        repaired.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "repair: {}{}", stdout(&o), stderr(&o));
    assert_eq!(before, fingerprint(&fixture), "the fixture changed");
    let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(
        log["edits"].as_array().unwrap().len(),
        UNFINISHED.len(),
        "{log:#}"
    );

    // (3) The repaired copy: well formed, whole, and answered by the repair.
    let data = home.data_dir("data-repaired", &repaired);
    for (session, call) in UNFINISHED {
        let sent = resume(&cli, &home, &data, &mock, session);
        assert_eq!(
            pairing_errors(&sent),
            Vec::<String>::new(),
            "repaired {session}: {sent:#?}"
        );
        let result = result_of(&sent, call).unwrap_or_else(|| panic!("{session}: {sent:#?}"));
        let result = serde_json::to_string(result).unwrap();
        assert!(
            result.contains("Tool execution aborted") && !result.contains("was interrupted"),
            "repaired {session}: the result is not the repair's: {result}"
        );
        assert_history(&sent, &repaired, session, "repaired");
    }
}

/// The pairing check itself catches what it is for.
#[test]
fn pairing_errors_catches_unanswered_calls_and_orphan_results() {
    let call = |ids: &[&str]| serde_json::json!({"role": "assistant", "tool_calls": ids.iter().map(|i| serde_json::json!({"id": i})).collect::<Vec<_>>()});
    let result = |id: &str| serde_json::json!({"role": "tool", "tool_call_id": id, "content": "x"});
    let user = serde_json::json!({"role": "user", "content": "hi"});
    assert!(
        pairing_errors(&[
            user.clone(),
            call(&["a", "b"]),
            result("a"),
            result("b"),
            user.clone()
        ])
        .is_empty()
    );
    assert_eq!(pairing_errors(&[call(&["a"]), user.clone()]).len(), 1);
    assert_eq!(pairing_errors(&[user.clone(), result("a")]).len(), 1);
    assert_eq!(
        pairing_errors(&[call(&["a"]), user.clone(), result("a")]).len(),
        2
    );
    assert_eq!(
        pairing_errors(&[call(&["a"]), result("a"), result("a")]).len(),
        1
    );
}

/// A text part whose `data` holds a lone surrogate escape (an emoji cut
/// in two): opencode 1.18.33 reads the part and sends U+FFFD in its
/// place. lint said the part was "not JSON" and its message had no
/// content (a `corrupt-record` error and an `empty-message` warning); it is a
/// `lone-surrogate` warning, and the repaired copy, the escape replaced
/// with `\ufffd` in place, sends the same request.
#[test]
#[cfg_attr(
    not(all(has_tool = "opencode", has_tool = "python3")),
    ignore = "needs the real opencode client (opencode-ai 1.18.33) in CHATFSCK_OPENCODE and Python 3: scripts/test-all installs it"
)]
fn the_real_client_sends_u_fffd_for_a_lone_surrogate_escape() {
    let cli = opencode();
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(dir.path());
    let home = Home::new(dir.path(), &mock);
    let damaged = dir.path().join("damaged.db");
    std::fs::copy(root().join(OPENCODE), &damaged).unwrap();
    cut_a_prompt(&damaged);
    let session = "ses_1bb5ce6fffffHq7Lm2Nx8Pr4Tz";
    let prompt = Value::from("Which \u{fffd}routes does the API expose?");

    let data = home.data_dir("data-damaged", &damaged);
    let sent = resume(&cli, &home, &data, &mock, session);
    assert_eq!(sent[0]["content"], prompt, "{sent:#?}");

    let repaired = dir.path().join("repaired/opencode.db");
    std::fs::create_dir_all(repaired.parent().unwrap()).unwrap();
    let o = run(&[
        "repair",
        damaged.to_str().unwrap(),
        "-o",
        repaired.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "repair: {}{}", stdout(&o), stderr(&o));
    let data = home.data_dir("data-repaired", &repaired);
    let again = resume(&cli, &home, &data, &mock, session);
    assert_eq!(again[0]["content"], prompt, "{again:#?}");
    assert_eq!(again.len(), sent.len(), "{again:#?}");
}

/// The same damage, read by lint and repaired without the client: a
/// warning on the part, no false error, and a repair that replaces the
/// escape in place and is a no-op the second time.
#[test]
fn a_lone_surrogate_escape_in_a_part_is_a_warning_and_mended_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.db");
    std::fs::copy(root().join(OPENCODE), &damaged).unwrap();
    cut_a_prompt(&damaged);
    let path = damaged.to_str().unwrap();
    let (_, doc) = lint_json(path, &[]);
    let rules: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rules,
        [
            ("orphan-tool-call", "warning"),
            ("orphan-tool-call", "warning"),
            ("lone-surrogate", "warning"),
        ],
        "{doc:#}"
    );
    let lone = &doc["findings"][2];
    assert_eq!(
        lone["summary"],
        "part row `prt_19e44a31900001Fx01Qm7Lk2Pz9W` has 1 lone surrogate escape: opencode sends U+FFFD in its place"
    );

    let before = fingerprint(&damaged);
    let (out, log) = repair_logged(&damaged, dir.path());
    assert_eq!(before, fingerprint(&damaged), "the input changed");
    let mended: Vec<&Value> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["rule"] == "lone-surrogate")
        .collect();
    assert_eq!(mended.len(), 1, "{log:#}");
    assert_eq!(
        mended[0]["before"],
        r#"{"type":"text","text":"Which \ud83droutes does the API expose?"}"#
    );
    assert_eq!(
        mended[0]["after"],
        r#"{"type":"text","text":"Which \ufffdroutes does the API expose?"}"#
    );
    let (_, again) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(again["findings"].as_array().unwrap().len(), 0, "{again:#}");
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// DeepSeek's thinking mode (issue 40): `ses_1bb5ce6f…` as if
/// `deepseek-v4-pro` had written it, its answer after the calls with a
/// reasoning part and the reply with the calls without one. opencode gives
/// such a reply an empty reasoning part, sent as `reasoning_content: ""`,
/// from 1.14.24 on: a warning.
#[test]
fn a_deepseek_reply_without_its_reasoning_is_healed_from_1_14_24() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("deepseek.db");
    std::fs::copy(root().join(OPENCODE), &db).unwrap();
    as_deepseek(&db, "deepseek");
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    // (The fixture's two calls left running are its own.)
    let found: Vec<(&str, &str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] != "orphan-tool-call")
        .map(|f| {
            (
                f["rule"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
                f["location"]["key"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [(
            "missing-reasoning-content",
            "warning",
            "msg_19e44a32008000Fx00Qm7Lk2Pz9W"
        )],
        "{doc:#}"
    );
    let notes = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "missing-reasoning-content")
        .unwrap()["notes"]
        .to_string();
    for want in [
        "`deepseek-v4-pro` (a DeepSeek model)",
        "opencode heals this from 1.14.24 on",
    ] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
}

/// `ses_1bb5ce6f…` of `db` as if `deepseek-v4-pro` of `provider` had
/// written it: every reply names the model, and the answer after the
/// calls has a reasoning part (the reply with the calls has none).
fn as_deepseek(db: &Path, provider: &str) {
    as_model(db, provider, "deepseek-v4-pro");
}

/// [`as_deepseek`] with the model `model`.
fn as_model(db: &Path, provider: &str, model: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute(
        "UPDATE message SET data = json_set(data, '$.modelID', ?2, '$.providerID', ?1) \
         WHERE json_extract(data, '$.role') = 'assistant'",
        [provider, model],
    )
    .unwrap();
    c.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES \
         ('prt_19e44a333fe001Fx02Qm7Lk2Pz9W', 'msg_19e44a32d50000Fx00Qm7Lk2Pz9W', \
          'ses_1bb5ce6fffffHq7Lm2Nx8Pr4Tz', 1779268005100, 1779268005100, \
          '{\"type\":\"reasoning\",\"text\":\"The router answers it.\",\"time\":{\"start\":1779268005100,\"end\":1779268005150}}')",
        [],
    )
    .unwrap();
}

/// The pinned client on that session: as `deepseek-v4-pro`, the reply
/// stored without reasoning goes with `reasoning_content: ""` (opencode's
/// DeepSeek normalisation) and the answer with its own; as another model
/// (`glm-5`), the reply goes without the field. What the profile says.
#[test]
#[cfg_attr(
    not(all(has_tool = "opencode", has_tool = "python3")),
    ignore = "needs the real opencode client (opencode-ai 1.18.33) in CHATFSCK_OPENCODE and Python 3: scripts/test-all installs it"
)]
fn the_real_client_sends_an_empty_reasoning_content_for_a_deepseek_model() {
    let cli = opencode();
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(dir.path());
    let home = Home::new(dir.path(), &mock);
    const SESSION: &str = "ses_1bb5ce6fffffHq7Lm2Nx8Pr4Tz";
    // Each model on a copy of its own, whose replies name it (opencode
    // leaves out the reasoning of another model's replies).
    let replies = |model: &str| -> Vec<Option<Value>> {
        let db = dir.path().join(format!("{model}.db"));
        std::fs::copy(root().join(OPENCODE), &db).unwrap();
        as_model(&db, "mock", model);
        let data = home.data_dir(&format!("data-{model}"), &db);
        resume_as(&cli, &home, &data, &mock, SESSION, &format!("mock/{model}"))
            .into_iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| m.get("reasoning_content").cloned())
            .collect()
    };
    assert_eq!(
        replies("deepseek-v4-pro"),
        [Some("".into()), Some("The router answers it.".into())]
    );
    assert_eq!(
        replies("glm-5"),
        [None, Some("The router answers it.".into())]
    );
}

/// Put a lone surrogate escape in the first prompt of `ses_1bb5ce6f…`.
fn cut_a_prompt(db: &Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    let n = c
        .execute(
            r"UPDATE part SET data = replace(data, 'Which routes', 'Which \ud83droutes') WHERE rowid = 1",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// Drift (issue 37): opencode's V2 store (`session_message`, the 2.0 line
/// also renames `session` to `session_v2`) is not read by this reader; its
/// rows are reported as unread, never "no problems" and never "no history".
/// (1) the fixture (1.18.33 layout, `session_message` empty) with V2 rows
/// added, one for a session of `message` and two for a session only there;
/// (2) a 2.0-shaped database: `session_v2` and `session_message`, no
/// `message`/`part`.
#[test]
fn v2_session_message_rows_are_reported_unread() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mixed.db");
    std::fs::copy(root().join(OPENCODE), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    // `ses_v2only` has no `session` row: the V2 store keeps its sessions in
    // `session_v2`.
    c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let row = "INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data) \
               VALUES (?1, ?2, ?3, ?4, 1795900000000, 1795900000000, '{}')";
    for (id, ses, ty, seq) in [
        ("msg_v2a", "ses_1bb53bf3ffffKd3Wq9Vb1Ys6Rc", "user", 0),
        ("msg_v2b", "ses_v2only", "user", 0),
        ("msg_v2c", "ses_v2only", "assistant", 1),
    ] {
        c.execute(row, rusqlite::params![id, ses, ty, seq]).unwrap();
    }
    drop(c);
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    let unread: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "unknown-record-type")
        .map(|f| f["summary"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        unread,
        [
            "1 session_message row (the first of type `user`) is not read: opencode's V2 session store (session_message, opencode 2.0); this reader reads the message and part tables only",
            "2 session_message rows (the first of type `user`) is not read: opencode's V2 session store (session_message, opencode 2.0); this reader reads the message and part tables only",
        ],
        "{doc:#}"
    );

    let v2 = dir.path().join("v2.db");
    let c = rusqlite::Connection::open(&v2).unwrap();
    c.execute_batch(
        "CREATE TABLE session_v2 (id TEXT PRIMARY KEY, title TEXT);
         CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL,
             seq INTEGER NOT NULL, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);
         INSERT INTO session_v2 VALUES ('ses_two', 'hello');
         INSERT INTO session_message VALUES ('msg_2', 'ses_two', 'assistant', 1, 0, 0, '{}');
         INSERT INTO session_message VALUES ('msg_1', 'ses_two', 'user', 0, 0, 0, '{}');",
    )
    .unwrap();
    drop(c);
    let (code, doc) = lint_json(v2.to_str().unwrap(), &[]);
    assert_ne!(code, 2, "{doc:#}");
    let f = &doc["findings"].as_array().unwrap()[..];
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["rule"], "unknown-record-type");
    assert!(
        f[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("2 session_message rows (the first of type `user`)"),
        "{doc:#}"
    );
    let o = run(&["lint", v2.to_str().unwrap()]);
    assert!(!stdout(&o).contains("no problems"), "{}", stdout(&o));
}
