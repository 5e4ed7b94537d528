//! Faults and hostile inputs (issue 17): each defect an adversarial run
//! found, as a test of the contract it broke. An input chatfsck cannot
//! read ends with one line naming the path and the cause and exit code 2,
//! with no output written and the input untouched; a repair keeps the
//! repair contract (the copy re-lints clean of what it claims to fix, a
//! second repair changes nothing, every payload is in the copy or the log).

mod common;
use common::*;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// A scratch directory holding `name` with `bytes`.
fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    (dir, p)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The error is one line that names `path` and contains `cause`; exit 2.
fn one_line_error(o: &std::process::Output, path: &Path, cause: &str) {
    let err = stderr(o);
    assert_eq!(code(o), 2, "stdout: {}\nstderr: {err}", stdout(o));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(
        err.contains(&path.display().to_string())
            || err.contains(path.file_name().unwrap().to_str().unwrap()),
        "does not name {}: {err}",
        path.display()
    );
    assert!(err.contains(cause), "does not say {cause:?}: {err}");
}

/// The files of `dir` (names), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const ANTHROPIC_INTERLEAVED: &str = r#"{"role":"user","content":"q"}
{"role":"assistant","content":[{"type":"tool_use","id":"A","name":"f","input":{}}]}
{"role":"assistant","content":[{"type":"tool_use","id":"B","name":"f","input":{}}]}
{"role":"user","content":[{"type":"tool_result","tool_use_id":"A","content":"ok"}]}
{"role":"assistant","content":[{"type":"text","text":"done"}]}
"#;

// Defect 1: `--log` is checked against the input and its sidecars as `-o`
// is, and may not be the output either.
#[test]
fn log_never_overwrites_the_input_its_sidecars_or_the_output() {
    let (dir, input) = file("in.jsonl", ANTHROPIC_INTERLEAVED.as_bytes());
    let wal = dir.path().join("in.jsonl-wal");
    std::fs::write(&wal, b"sidecar").unwrap();
    let out = dir.path().join("out.jsonl");
    let before = (fingerprint(&input), fingerprint(&wal));
    let dotted = format!("{}/./in.jsonl", dir.path().display());
    for log in [dotted.as_str(), s(&wal), s(&out)] {
        let o = run(&["repair", s(&input), "-o", s(&out), "--log", log, "--force"]);
        assert_eq!(code(&o), 2, "--log {log}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("log"), "{}", stderr(&o));
        assert_eq!(
            before,
            (fingerprint(&input), fingerprint(&wal)),
            "--log {log}"
        );
        assert!(!out.exists(), "--log {log}: the copy was written");
    }
}

// Defect 6: a log that cannot be written fails the repair before a copy
// exists, so no payload the repair removed is in neither.
#[test]
fn a_log_that_cannot_be_written_leaves_no_copy() {
    let (dir, input) = file("in.jsonl", ANTHROPIC_INTERLEAVED.as_bytes());
    let out = dir.path().join("out.jsonl");
    // Under a regular file: fails for root as for anyone.
    std::fs::write(dir.path().join("plain"), b"").unwrap();
    let log = dir.path().join("plain").join("log.json");
    let o = run(&["repair", s(&input), "-o", s(&out), "--log", s(&log)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("log.json"), "{}", stderr(&o));
    assert!(!out.exists(), "the copy was kept without its log");
    assert_eq!(listing(dir.path()), ["in.jsonl", "plain"]);
}

// Defect 11: anything that is not a regular file (or a directory to walk)
// is refused before it is opened: a FIFO would block forever.
#[test]
fn fifos_and_devices_are_refused_before_they_are_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = dir.path().join("out.jsonl");
    for path in [
        fifo.as_path(),
        Path::new("/dev/zero"),
        Path::new("/dev/null"),
    ] {
        for args in [
            vec!["lint", s(path)],
            vec!["inspect", s(path)],
            vec!["diff", s(path), s(path)],
            vec!["repair", s(path), "-o", s(&out)],
        ] {
            let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
                .args(&args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let start = std::time::Instant::now();
            while child.try_wait().unwrap().is_none() {
                if start.elapsed() > std::time::Duration::from_secs(20) {
                    child.kill().unwrap();
                    panic!("{args:?} hangs");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let o = child.wait_with_output().unwrap();
            one_line_error(&o, path, "not a regular file");
            assert!(!out.exists());
        }
    }
    // Beside a database, where its -wal would be: copied with it.
    let db = dir.path().join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("store.db-wal"))
        .status()
        .unwrap();
    assert!(made.success());
    let o = run_checked(&["lint", s(&db)]);
    one_line_error(&o, &db, "its -wal is not a regular file (a named pipe)");
    // Named as the configuration file.
    let o = run(&["lint", "--config", s(&fifo), "fixtures/healthy"]);
    one_line_error(&o, &fifo, "not a regular file");
}

/// A file name holding every terminal and annotation attack: an OSC title,
/// a colour, a carriage return, a bidi override, a newline followed by a
/// workflow command, markdown and HTML.
const HOSTILE_NAME: &str =
    "x\u{1b}]0;pwn\u{7}\u{1b}[31m\r\u{202e}|`<b>`\n::error::INJECTED\u{8}.jsonl";

fn no_raw_attacks(out: &str, what: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{8}', '\u{9b}', '\u{202e}', '\r'] {
        assert!(!out.contains(c), "{what}: raw {c:?} in\n{out}");
    }
    assert!(
        !out.lines().any(|l| l.starts_with("::error::INJECTED")),
        "{what}: an injected annotation in\n{out}"
    );
}

// Defect 14: the path in human `lint` output (the diagnostic header) reached
// the terminal raw. Every command and every format escapes it.
#[test]
fn hostile_file_names_are_escaped_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(HOSTILE_NAME);
    std::fs::write(
        &p,
        concat!(
            r#"{"role":"user","content":"go"}"#,
            "\n",
            r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
            "\n",
            r#"{"role":"user","content":"well?"}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for f in ["human", "json", "sarif", "github", "markdown"] {
        runs.push(vec!["lint", "--format", f, s(&p)]);
    }
    for f in ["human", "json", "markdown"] {
        runs.push(vec!["inspect", "--format", f, s(&p)]);
        runs.push(vec!["diff", "--format", f, s(&p), s(&p)]);
        runs.push(vec!["repair", "--dry-run", "--format", f, s(&p)]);
    }
    runs.push(vec!["repair", s(&p), "-o", s(&out)]);
    for args in runs {
        let o = run(&args);
        let (so, se) = (stdout(&o), stderr(&o));
        assert!(code(&o) < 2, "{args:?}: {so}{se}");
        no_raw_attacks(&so, &format!("{args:?} stdout"));
        no_raw_attacks(&se, &format!("{args:?} stderr"));
        let _ = std::fs::remove_file(&out);
    }
    // Human output on a pseudo-terminal (colour on, as a user sees it):
    // colour codes are chatfsck's own, the name's sequences are not.
    let o = std::process::Command::new("script")
        .args(["-qec", r#"exec "$BIN" lint "$F""#, "/dev/null"])
        .env("BIN", assert_cmd::cargo::cargo_bin("chatfsck"))
        .env("F", &p)
        .env_remove("NO_COLOR")
        .output()
        .expect("script(1) from util-linux runs commands on a pseudo-terminal");
    let tty = String::from_utf8_lossy(&o.stdout).replace("\r\n", "\n");
    assert!(tty.contains("orphan-tool-call"), "{tty}");
    assert!(tty.contains('\u{1b}'), "no colour: not a terminal? {tty}");
    for attack in ["\u{1b}]0;pwn", "\u{7}", "\u{8}", "\u{202e}", "\r"] {
        assert!(!tty.contains(attack), "terminal: raw {attack:?} in\n{tty}");
    }
    assert!(
        !tty.lines().any(|l| l.starts_with("::error::INJECTED")),
        "{tty}"
    );
    // An input that cannot be read: the error line escapes the name too.
    let bad = dir.path().join(format!("{HOSTILE_NAME}.db"));
    std::fs::write(&bad, b"not a database").unwrap();
    let o = run(&["lint", s(&bad)]);
    assert_eq!(code(&o), 2);
    no_raw_attacks(&stderr(&o), "error");
    no_raw_attacks(&stdout(&o), "error stdout");
}

/// Run chatfsck as a user that file permissions apply to: as root (who
/// ignores them), through setpriv(1) as `nobody`. Never skipped silently:
/// a machine without setpriv fails the test.
fn run_unprivileged(args: &[&str]) -> std::process::Output {
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("chatfsck");
    let mut cmd = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    cmd.args(args)
        .output()
        .expect("setpriv(1) runs chatfsck as nobody, whom permissions apply to")
}

/// A directory anyone may enter (a tempdir is owner-only).
fn open_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

// Defect 16: an unreadable database is "permission denied", not "not a
// SQLite database (encrypted)".
#[test]
fn unreadable_files_say_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let dir = open_dir();
    let db = dir.path().join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let jsonl = dir.path().join("h.jsonl");
    std::fs::write(&jsonl, ANTHROPIC_INTERLEAVED).unwrap();
    let out = dir.path().join("out.db");
    for p in [&db, &jsonl] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
        let before = fingerprint(p);
        for args in [
            vec!["lint", s(p)],
            vec!["inspect", s(p)],
            vec!["repair", s(p), "-o", s(&out)],
        ] {
            let o = run_unprivileged(&args);
            one_line_error(&o, p, "permission denied");
            assert!(!stderr(&o).contains("not a SQLite"), "{}", stderr(&o));
            assert!(!out.exists());
        }
        assert_eq!(before, fingerprint(p));
    }
}

/// Repair `input` into `dir`, asserting exit 0; the copy, the log, and the
/// human output.
fn repair_into(input: &Path, name: &str, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let dir = input.parent().unwrap();
    let out = match input.extension() {
        Some(ext) => dir.join(name).with_extension(ext),
        None => dir.join(name),
    };
    let log = dir.join(format!("{name}.log.json"));
    let mut args = vec!["repair", s(input), "-o", s(&out), "--log", s(&log)];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(
        code(&o),
        0,
        "repair {}: {}{}",
        input.display(),
        stdout(&o),
        stderr(&o)
    );
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    (out, log)
}

/// The repair contract on one input: the input is untouched; the copy
/// re-lints without any finding of a rule the repair claims to have fixed
/// and with no error that the input did not have; a second repair makes no
/// edit and writes the same bytes. Returns the copy and the log.
fn prove(input: &Path, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let before = fingerprint(input);
    let (_, doc_in) = lint_json(s(input), &[]);
    let (out, log) = repair_into(input, "repaired", extra);
    assert_eq!(before, fingerprint(input), "the input changed");
    let fixed: Vec<&str> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    let (_, doc) = lint_json(s(&out), &[]);
    let copy = std::fs::read_to_string(&out).unwrap_or_default();
    let had: Vec<&str> = doc_in["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    for f in doc["findings"].as_array().unwrap() {
        let rule = f["rule"].as_str().unwrap();
        assert!(
            !fixed.contains(&rule),
            "the copy still has {f:#}\ncopy:\n{copy}\nlog: {log:#}"
        );
        assert!(
            f["severity"] != "error" || had.contains(&rule),
            "the copy has a new error {f:#}\ncopy:\n{copy}"
        );
    }
    let (again, log2) = repair_into(&out, "again", extra);
    assert_eq!(
        log2["edits"].as_array().unwrap().len(),
        0,
        "second repair: {log2:#}\ncopy:\n{copy}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&again).unwrap(),
        "second repair changed bytes"
    );
    (out, log)
}

// Defect 8: a JSON array after a byte order mark lints; its repair failed
// with "is no longer the document it was".
#[test]
fn a_json_array_after_a_byte_order_mark_repairs() {
    let (_dir, p) = file(
        "bom.json",
        "\u{feff}[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"user\",\"content\":\"x\"}]".as_bytes(),
    );
    let (out, log) = prove(&p, &[]);
    assert_eq!(log["edits"].as_array().unwrap().len(), 1, "{log:#}");
    let copy = std::fs::read(&out).unwrap();
    assert!(copy.starts_with(b"\xEF\xBB\xBF["), "the mark is kept");
}

// Defect 5: a history whose only record is a stray result repaired to an
// empty copy (exit 0) that chatfsck then refused to read. Removing the last
// message leaves no history at all, which no app resumes and chatfsck does
// not read: the repair leaves the finding, says why, and the copy is the
// input, which reads back.
#[test]
fn a_repair_never_empties_a_history() {
    for (name, text) in [
        (
            "stray.jsonl",
            "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"}\n",
        ),
        (
            "stray.json",
            "[{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"}]",
        ),
        (
            "stray-anthropic.jsonl",
            "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"A\",\"content\":\"ok\"}]}\n",
        ),
        // Found by repair_file without ASan: a Codex rollout whose every
        // line was dropped or removed became an empty copy, which the
        // settle pass then refused to read, leaving the copy behind.
        (
            "rollout-2025-06-01T10-00-00-0198a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl",
            concat!(
                "{\"timestamp\":\"2026-05-11T10:29:40.150Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"019e1695\"\n",
                "{\"timestamp\":\"2026-05-11T10:30:01.511Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"ok\"}}\n",
            ),
        ),
    ] {
        let (_dir, p) = file(name, text.as_bytes());
        let (out, log) = prove(&p, &[]);
        assert_eq!(std::fs::read(&out).unwrap(), text.as_bytes(), "{name}");
        assert_eq!(log["edits"].as_array().unwrap().len(), 0, "{name}: {log:#}");
        let left = log["left"].as_array().unwrap();
        assert!(
            left.iter().any(|l| l["rule"] == "orphan-tool-result"
                && l["reason"].as_str().unwrap().contains("no message")),
            "{name}: {log:#}"
        );
        let (code, _) = lint_json(s(&out), &[]);
        assert_eq!(code, 1, "{name}: the copy reads back, with its finding");
    }
}

// Found by repair_file without ASan: a Gemini CLI session whose first
// lines were damaged read as a Claude Code session without a message; the
// repair dropped every line but one, and the copy read as another format,
// with an error the input did not have. A Claude Code copy keeps a message
// or keeps the input.
#[test]
fn a_claude_code_repair_never_leaves_no_message() {
    let text = concat!(
        "{\"type\":\"summary\",\"summary\":\"Fix the build\",\"leafUuid\":\"a1\"}\n",
        "{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"hi th",
    );
    let (_dir, p) = file(
        "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
        text.as_bytes(),
    );
    let (out, log) = prove(&p, &[]);
    assert_eq!(std::fs::read(&out).unwrap(), text.as_bytes());
    assert_eq!(log["edits"].as_array().unwrap().len(), 0, "{log:#}");
    assert!(
        log["left"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["rule"] == "corrupt-record"
                && l["reason"].as_str().unwrap().contains("no message")),
        "{log:#}"
    );
}

// Found by repair_file without ASan: damaged OpenAI lines glued before a
// goose session. The input reads as an OpenAI history, where goose's
// `toolRequest` is no call; once the repair dropped those lines, the copy
// read as a goose session, where the request without a response is an
// orphan call: a new error. A copy that would read as another dialect
// keeps the input, and says why.
#[test]
fn a_repair_never_changes_the_dialect_a_file_reads_as() {
    let text = lines(&[
        r#"{"role":"assistant","content":"torn"#,
        r#"{"role":"tool","tool_call_id":"call_1","content":"r"}"#,
        r#"{"role":"user","created":1757844131,"content":[{"type":"text","text":"What port?"}]}"#,
        r#"{"role":"assistant","created":1757844134,"content":[{"type":"toolRequest","id":"t1","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"ls"}}}}]}"#,
    ]);
    let (_dir, p) = file("session.jsonl", text.as_bytes());
    let (out, log) = prove(&p, &[]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    assert_eq!(log["dialect"], "openai", "{log:#}");
    assert_eq!(log["edits"].as_array().unwrap().len(), 0, "{log:#}");
    for rule in ["corrupt-record", "orphan-tool-result"] {
        assert!(
            log["left"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["rule"] == rule
                    && l["reason"]
                        .as_str()
                        .unwrap()
                        .contains("would be read by the goose")),
            "{rule}: {log:#}"
        );
    }
}

// Found by the repair_file fuzz target: removing a stray result whose
// message is the first turn made the copy start with an assistant message,
// which the provider rejects as well (a new `role-order` finding). The
// repair leaves such a result, and says why.
#[test]
fn removing_a_stray_result_never_leaves_turns_the_provider_rejects() {
    let text = lines(&[
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"X","content":"r"}]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"a"}]}"#,
        r#"{"role":"user","content":[{"type":"text","text":"q"}]}"#,
    ]);
    let (_dir, p) = file("first.jsonl", text.as_bytes());
    let (out, log) = prove(&p, &[]);
    assert_eq!(std::fs::read(&out).unwrap(), text.as_bytes());
    let left = log["left"].as_array().unwrap();
    assert!(
        left.iter().any(|l| l["rule"] == "orphan-tool-result"
            && l["reason"].as_str().unwrap().contains("rejects as well")),
        "{log:#}"
    );
}

/// A stray result between two assistant turns is removed: the Anthropic
/// API combines the two assistant turns that then meet into one (as
/// `role-order` holds), while it rejects the stray result. The repair once
/// left it, the stricter side, and the copy stayed unsendable.
#[test]
fn a_stray_result_between_assistant_turns_is_removed() {
    let (q, a, stray, b) = (
        r#"{"role":"user","content":[{"type":"text","text":"q"}]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"a"}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"X","content":"r"}]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"b"}]}"#,
    );
    let (_dir, p) = file("between.jsonl", lines(&[q, a, stray, b]).as_bytes());
    let (out, log) = prove(&p, &[]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), lines(&[q, a, b]));
    assert!(
        log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["rule"] == "orphan-tool-result"),
        "{log:#}"
    );
}

fn lines(v: &[&str]) -> String {
    v.iter().map(|l| format!("{l}\n")).collect()
}

// Defect 2: moving an interleaved message that has calls of its own put
// their results (or placeholders) before it: the copy gained orphans and a
// second repair changed it again.
#[test]
fn a_moved_message_keeps_its_own_results_after_it() {
    let openai_call = |id: &str| {
        format!(
            r#"{{"role":"assistant","tool_calls":[{{"id":"{id}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
        )
    };
    let openai_result =
        |id: &str| format!(r#"{{"role":"tool","tool_call_id":"{id}","content":"r-{id}"}}"#);
    let (a, b) = (openai_call("A"), openai_call("B"));
    let (ra, rb) = (openai_result("A"), openai_result("B"));
    let user = r#"{"role":"user","content":"q"}"#;
    let done = r#"{"role":"assistant","content":"done"}"#;
    let cases = [
        ("anthropic.jsonl", ANTHROPIC_INTERLEAVED.to_string()),
        // The moved message's call has no result: its placeholder follows it.
        ("openai.jsonl", lines(&[user, &a, &b, &ra, done])),
        // Its result is in the window: it moves with it.
        ("own-result.jsonl", lines(&[user, &a, &b, &rb, &ra, done])),
    ];
    for (name, text) in cases {
        let (_dir, p) = file(name, text.as_bytes());
        let (out, log) = prove(&p, &[]);
        let (_, doc) = lint_json(s(&out), &[]);
        let rules: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        assert!(
            !rules
                .iter()
                .any(|r| r.starts_with("orphan") || *r == "interleaved-message"),
            "{name}: {rules:?}\n{}\n{log:#}",
            std::fs::read_to_string(&out).unwrap()
        );
    }
}

// Defect 3: duplicate call ids and an interleave: two assistant messages
// calling `c1`, then two results for `c1`.
#[test]
fn duplicate_ids_and_an_interleave_repair_stably() {
    let call = r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#;
    let text = lines(&[
        r#"{"role":"user","content":"q"}"#,
        call,
        call,
        r#"{"role":"tool","tool_call_id":"c1","content":"r1"}"#,
        r#"{"role":"tool","tool_call_id":"c1","content":"r2"}"#,
        r#"{"role":"assistant","content":"done"}"#,
    ]);
    let (_dir, p) = file("dup.jsonl", text.as_bytes());
    prove(&p, &[]);
}

/// JSON nested `depth` levels deep: arrays in arrays.
fn deep(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

/// Run chatfsck with a watchdog; a crash (a signal) fails with its name.
fn run_checked(args: &[&str]) -> std::process::Output {
    let o = run(args);
    assert!(
        o.status.code().is_some(),
        "{args:?} was killed by a signal ({:?}): {}",
        o.status,
        stderr(&o)
    );
    o
}

// Defect 10: deeply nested JSON overflowed the stack of the JSON skipper
// (exit 134), in JSONL lines, chunk-store values and gbrain content; one
// such file killed a whole directory lint. Depth is bounded before parsing:
// the record is a corrupt-record finding, the rest of the input is read.
#[test]
fn deeply_nested_json_is_a_finding_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("x.jsonl"), deep(20_000) + "\n").unwrap();
    std::fs::write(
        d.join("ok.jsonl"),
        "{\"role\":\"user\",\"content\":\"q\"}\n",
    )
    .unwrap();
    // The directory is checked to the end and the file is named with why
    // (whether an unreadable file in a walk fails the run is not this
    // test's business).
    let o = run_checked(&["lint", s(&d)]);
    let all = stdout(&o) + &stderr(&o);
    assert!(
        all.contains("x.jsonl") && all.contains("nested deeper than"),
        "{all}"
    );
    assert!(all.contains("1 conversation"), "ok.jsonl was read: {all}");
    // A record among good ones: a finding on its line, the others read.
    let good = r#"{"role":"user","content":"q"}"#;
    let nested = format!(r#"{{"role":"assistant","content":{}}}"#, deep(20_000));
    let args = format!(
        r#"{{"role":"assistant","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}],"x":{}}}"#,
        deep(50_000)
    );
    let (_d2, p) = file("h.jsonl", lines(&[good, &nested, &args, good]).as_bytes());
    let o = run_checked(&["lint", "--format", "json", s(&p)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        rule_lines(&doc),
        ["corrupt-record@2", "corrupt-record@3"],
        "{doc:#}"
    );
    assert!(stdout(&o).contains("nested deeper than"), "{}", stdout(&o));
    for args in [vec!["inspect", s(&p)], vec!["diff", s(&p), s(&p)]] {
        let o = run_checked(&args);
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
    }
    let (out, log) = prove(&p, &[]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), lines(&[good, good]));
    assert_eq!(log["edits"].as_array().unwrap().len(), 2);

    // A chunk-store value and a gbrain content column.
    let db = dir.path().join("kv.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let key: String = c
        .query_row(
            "SELECT key FROM kv WHERE key LIKE 'conv:%:chunk:%' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let value = format!(
        r#"{{"chunk":{{"type":"tool-call","toolCallId":"x","toolName":"f","input":{}}},"role":"assistant","msgIdx":0,"chunkIdx":0}}"#,
        deep(30_000)
    );
    c.execute("UPDATE kv SET value = ?1 WHERE key = ?2", [&value, &key])
        .unwrap();
    drop(c);
    let o = run_checked(&["lint", "--format", "json", s(&db)]);
    assert!(
        stdout(&o).contains("nested deeper than"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let gb = dir.path().join("gbrain.db");
    std::fs::copy(root().join("fixtures/gbrain/gbrain.db"), &gb).unwrap();
    let c = rusqlite::Connection::open(&gb).unwrap();
    c.execute(
        "UPDATE subagent_messages SET content_blocks = ?1 WHERE id = 1",
        [format!(
            r#"[{{"type":"text","text":"x","extra":{}}}]"#,
            deep(30_000)
        )],
    )
    .unwrap();
    drop(c);
    let o = run_checked(&["lint", "--format", "json", s(&gb)]);
    assert!(
        stdout(&o).contains("nested deeper than"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}

// Defect 17: one line with invalid UTF-8 made the whole file unreadable
// ("line 2 is not valid UTF-8", exit 2). A write torn inside a multi-byte
// character is a damaged record like any other: a corrupt-record finding on
// that line, and the rest of the file is checked.
#[test]
fn a_line_of_invalid_utf8_is_a_corrupt_record() {
    let mut text = b"{\"role\":\"user\",\"content\":\"q\"}\n".to_vec();
    // A euro sign cut after two of its three bytes, inside a string.
    text.extend_from_slice(b"{\"role\":\"assistant\",\"content\":\"price \xE2\x82 ok\"}\n");
    // A stray high byte outside any string.
    text.extend_from_slice(b"\xFF{\"role\":\"user\",\"content\":\"again\"}\n");
    text.extend_from_slice(
        br#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
    );
    text.extend_from_slice(b"\n{\"role\":\"user\",\"content\":\"well?\"}\n");
    let (_dir, p) = file("torn.jsonl", &text);
    let (c, doc) = lint_json(s(&p), &[]);
    assert_eq!(c, 1, "{doc:#}");
    assert_eq!(
        rule_lines(&doc),
        ["corrupt-record@2", "corrupt-record@3", "orphan-tool-call@4"],
        "{doc:#}"
    );
    let (out, log) = prove(&p, &[]);
    let copy = std::fs::read(&out).unwrap();
    assert!(std::str::from_utf8(&copy).is_ok(), "the copy is text");
    let dropped = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["rule"] == "corrupt-record")
        .count();
    assert_eq!(dropped, 2, "{log:#}");
}

// The same defect in Claude Code sessions, still there until 2026-11-24:
// one line with bytes that are not UTF-8 made the whole session unreadable.
// The client decodes the file as UTF-8, each invalid sequence as U+FFFD,
// and reads the record (tests/oracle.rs resumes this session: every
// message is sent). chatfsck reads it as the client does; the copy keeps
// its bytes.
#[test]
fn a_claude_code_line_with_invalid_utf8_is_read_as_the_client_reads_it() {
    let p = root().join("tests/data/claude-code/invalid-utf8-in-text.jsonl");
    let (c, doc) = lint_json(s(&p), &[]);
    assert_eq!(c, 0, "{doc:#}");
    let o = run(&["inspect", "--format", "json", s(&p)]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let texts: Vec<&str> = doc["conversations"][0]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["preview"].as_str())
        .collect();
    assert_eq!(texts.len(), 4, "{doc:#}");
    assert!(
        texts.iter().any(|t| t.contains("h\u{FFFD}\u{FFFD}i")),
        "{texts:?}"
    );
}

// Found by repair_file without ASan: a Codex rollout whose torn first line
// was dropped left a copy whose new first line had a byte that is not
// UTF-8 in a string, and chatfsck refused the copy as a binary file. A
// first line that reads as a record once its invalid sequences are
// replaced is a damaged record.
#[test]
fn a_first_line_with_invalid_utf8_is_a_damaged_record_not_a_binary_file() {
    let mut text = b"{\"role\":\"user\",\"content\":\"caf\xE9\"}\n".to_vec();
    text.extend_from_slice(b"{\"role\":\"user\",\"content\":\"q\"}\n");
    text.extend_from_slice(b"{\"role\":\"assistant\",\"content\":\"a\"}\n");
    let (_dir, p) = file("latin1.jsonl", &text);
    let (c, doc) = lint_json(s(&p), &[]);
    assert_eq!(c, 1, "{doc:#}");
    assert_eq!(rule_lines(&doc), ["corrupt-record@1"], "{doc:#}");
    // Bytes that read as no record are still a binary file.
    let (_dir, p) = file("binary.jsonl", b"\x89PNG\r\n\x1a\n\xff\xfe\n");
    let o = run(&["lint", s(&p)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("binary file"), "{}", stderr(&o));
}

/// Standard base64 with padding, to compare with the log's.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// Defect 9: "kept verbatim" was not verbatim: a torn tail cut inside a
// multi-byte character was logged with U+FFFD. A record whose bytes are not
// UTF-8 is logged with its exact bytes too, in base64 (`before_base64`).
#[test]
fn records_that_are_not_utf8_are_logged_byte_for_byte() {
    let good = b"{\"role\":\"user\",\"content\":\"q\"}\n";
    let middle: &[u8] = b"{\"role\":\"assistant\",\"content\":\"Caf\xff\xfe\"}";
    let tail: &[u8] = b"{\"role\":\"assistant\",\"content\":\"caf\xC3";
    let mut text = good.to_vec();
    text.extend_from_slice(middle);
    text.push(b'\n');
    text.extend_from_slice(good);
    text.extend_from_slice(tail);
    let (_dir, p) = file("torn.jsonl", &text);
    let (out, log) = prove(&p, &[]);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        [&good[..], &good[..]].concat()
    );
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{log:#}");
    for (e, raw) in edits.iter().zip([middle, tail]) {
        assert_eq!(e["before_base64"], base64(raw), "{e:#}");
        assert_eq!(e["before"], String::from_utf8_lossy(raw).as_ref(), "{e:#}");
    }
    // Text records carry no copy in base64.
    let (_d, p) = file(
        "ok.jsonl",
        b"{\"role\":\"user\",\"content\":\"q\"}\n{\"role\":",
    );
    let (_, log) = prove(&p, &[]);
    let e = &log["edits"][0];
    assert_eq!(e["before"], "{\"role\":", "{log:#}");
    assert!(e.get("before_base64").is_none(), "{log:#}");
}

// Defect 4: the log recorded edits that were not made ("replaced the
// arguments with `{}`" with the copy byte-identical): a call with no
// `function` object, and Anthropic blocks in a file read as OpenAI. Every
// logged edit changes the copy; one that cannot be made is left, with why.
#[test]
fn the_log_records_only_edits_that_were_made() {
    let user = r#"{"role":"user","content":"q"}"#;
    let no_function = lines(&[
        user,
        r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function"}]}"#,
        r#"{"role":"tool","tool_call_id":"c1","content":"r"}"#,
    ]);
    let mixed = lines(&[
        user,
        r#"{"role":"assistant","content":"x","tool_calls":[{"id":"c0","type":"function","function":{"name":"g","arguments":"{}"}}]}"#,
        r#"{"role":"tool","tool_call_id":"c0","content":"r"}"#,
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":"{\"a\": "}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r"}]}"#,
    ]);
    for (name, text) in [("no-function.jsonl", no_function), ("mixed.jsonl", mixed)] {
        let (_dir, p) = file(name, text.as_bytes());
        let (out, log) = prove(&p, &[]);
        let copy = std::fs::read_to_string(&out).unwrap();
        for e in log["edits"].as_array().unwrap() {
            let before = e["before"].as_str().unwrap_or_default();
            assert!(
                before.is_empty() || e["after"].as_str() != Some(before),
                "{name}: an edit that changes nothing: {e:#}"
            );
            if let Some(after) = e["after"].as_str() {
                assert!(
                    copy.contains(after),
                    "{name}: logged, not in the copy: {e:#}\n{copy}"
                );
            }
        }
        if log["edits"].as_array().unwrap().is_empty() {
            assert_eq!(copy, text, "{name}: no edit, yet the copy differs");
            assert!(
                log["left"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l["rule"] == "invalid-tool-arguments"),
                "{name}: {log:#}"
            );
        }
    }
}

// Defect 7: malformed records repaired badly. A `tool` record that also
// carries `tool_calls` was dropped whole with its stray result, orphaning
// the result of its call; a user message left holding only an unknown block
// once its stray result was removed became a new interleaved message.
#[test]
fn removing_a_stray_result_never_takes_or_strands_other_content() {
    let tool_with_calls = lines(&[
        r#"{"role":"user","content":"q"}"#,
        r#"{"role":"tool","tool_call_id":"zz","content":"r","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
        r#"{"role":"tool","tool_call_id":"c2","content":"r2"}"#,
        r#"{"role":"assistant","content":"done"}"#,
    ]);
    let unknown_block = lines(&[
        r#"{"role":"user","content":"q"}"#,
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"A","name":"f","input":{}}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"ZZ","content":"x"},{"type":"image_ref","x":1}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"A","content":"ok"}]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"done"}]}"#,
    ]);
    for (name, text) in [
        ("tool-with-calls.jsonl", tool_with_calls),
        ("unknown-block.jsonl", unknown_block),
    ] {
        let (_dir, p) = file(name, text.as_bytes());
        // prove(): no new error in the copy, a second repair is a no-op.
        let (out, log) = prove(&p, &[]);
        let copy = std::fs::read_to_string(&out).unwrap();
        assert!(
            copy.contains("\"c2\"") || !text.contains("\"c2\""),
            "{name}: the call went\n{copy}"
        );
        assert!(
            copy.contains("image_ref") || !text.contains("image_ref"),
            "{name}\n{copy}"
        );
        assert!(
            log["left"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["rule"] == "orphan-tool-result"),
            "{name}: {log:#}"
        );
    }
}

/// A copy of the seed dispatch store whose `_migrations` index page is
/// damaged (its first cell pointer points past the page): the tables
/// chatfsck reads are intact, so only a check of the whole file sees it.
fn store_with_a_corrupt_index_page(dir: &Path) -> PathBuf {
    store_with_a_corrupt_page(dir, "sqlite_autoindex__migrations_1")
}

/// A copy of the seed dispatch store whose b-tree `name` has its root page
/// damaged (a leaf: its first cell pointer points past the page).
fn store_with_a_corrupt_page(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let page: u64 = c
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap();
    let size: u64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    drop(c);
    let mut data = std::fs::read(&db).unwrap();
    let at = ((page - 1) * size + 8) as usize;
    data[at..at + 2].copy_from_slice(&[0xff, 0xf0]);
    std::fs::write(&db, data).unwrap();
    db
}

// Defect 15: a corrupt index page went unnoticed: lint, inspect and diff
// read the database as healthy, and repair failed blaming its own output.
// A database is checked (PRAGMA quick_check) when it is opened.
#[test]
fn a_corrupt_database_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_with_a_corrupt_index_page(dir.path());
    let out = dir.path().join("out.db");
    let before = fingerprint(&db);
    for args in [
        vec!["lint", s(&db)],
        vec!["inspect", s(&db)],
        vec!["diff", s(&db), s(&db)],
        vec!["repair", s(&db), "-o", s(&out)],
    ] {
        let o = run(&args);
        one_line_error(&o, &db, "database is corrupt");
        assert!(stderr(&o).contains("quick_check"), "{}", stderr(&o));
        assert!(
            !stderr(&o).contains("out.db"),
            "blames the output: {}",
            stderr(&o)
        );
        assert!(!out.exists());
    }
    assert_eq!(before, fingerprint(&db));
    assert_eq!(listing(dir.path()), ["store.db"]);
}

// Issue 15: the structure check no longer reads the chunk table a second
// time before the readers do (they read it, and SQLite checks each page it
// reads); damage there is still an error, with the check's cause when it
// has one.
#[test]
fn a_corrupt_page_of_the_chunk_table_is_reported_as_corrupt() {
    for name in ["kv", "sqlite_autoindex_kv_1"] {
        let dir = tempfile::tempdir().unwrap();
        let db = store_with_a_corrupt_page(dir.path(), name);
        let before = fingerprint(&db);
        for args in [vec!["lint", s(&db)], vec!["inspect", s(&db)]] {
            let o = run(&args);
            one_line_error(&o, &db, "database is corrupt");
        }
        assert_eq!(before, fingerprint(&db));
    }
}

// Defect 13: SIGKILL skips every cleanup: a repair killed mid-write left a
// hidden partial output beside the output, and the private copy of a WAL
// database stayed in $TMPDIR (750 MB per run). Their names carry the pid
// of the run that made them; a later run removes those whose process is
// gone (its own user's only), and leaves everything else.
#[test]
fn leftovers_of_killed_runs_are_swept() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // No process has this pid (above any pid_max Linux allows).
    let dead = 999_999_999u64;
    let live = std::process::id();
    let stale_copy = tmp.path().join(format!("chatfsck-{dead}-a1b2c3"));
    std::fs::create_dir(&stale_copy).unwrap();
    std::fs::write(stale_copy.join("db"), b"a copy of the evidence").unwrap();
    let live_copy = tmp.path().join(format!("chatfsck-{live}-d4e5f6"));
    std::fs::create_dir(&live_copy).unwrap();
    let other = tmp.path().join(format!("other-{dead}-x"));
    std::fs::create_dir(&other).unwrap();
    let stale_out = work
        .path()
        .join(format!(".out.jsonl.chatfsck-{dead}-q1.chatfsck-tmp"));
    let stale_journal = work.path().join(format!(
        ".out.jsonl.chatfsck-{dead}-q1.chatfsck-tmp-journal"
    ));
    let live_out = work
        .path()
        .join(format!(".out.jsonl.chatfsck-{live}-q2.chatfsck-tmp"));
    // A dead run's output for another destination of the directory, one
    // whose own name holds the tag's word, and a file of the user's.
    let stale_other = work.path().join(format!(
        ".b.chatfsck-x.jsonl.chatfsck-{dead}-q3.chatfsck-tmp"
    ));
    let users = work.path().join(".notes.chatfsck-tmp");
    for p in [&stale_out, &stale_journal, &live_out, &stale_other, &users] {
        std::fs::write(p, b"partial").unwrap();
    }
    let input = work.path().join("in.jsonl");
    std::fs::write(&input, ANTHROPIC_INTERLEAVED).unwrap();
    let out = work.path().join("out.jsonl");
    let o = Command::cargo_bin("chatfsck")
        .unwrap()
        .env("TMPDIR", tmp.path())
        .args(["repair", s(&input), "-o", s(&out)])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !stale_out.exists() && !stale_journal.exists(),
        "{:?}",
        listing(work.path())
    );
    assert!(!stale_other.exists(), "{:?}", listing(work.path()));
    assert!(live_out.exists(), "a live run's file was removed");
    assert!(users.exists(), "a file of the user's was removed");
    // A run that reads a database sweeps the temporary directory.
    let db = root().join("fixtures/dispatch/wal/dispatch.db");
    let o = Command::cargo_bin("chatfsck")
        .unwrap()
        .env("TMPDIR", tmp.path())
        .args(["lint", s(&db)])
        .output()
        .unwrap();
    assert!(code(&o) < 2, "{}", stderr(&o));
    assert!(!stale_copy.exists(), "{:?}", listing(tmp.path()));
    assert!(
        live_copy.exists() && other.exists(),
        "{:?}",
        listing(tmp.path())
    );
    assert_eq!(
        listing(tmp.path()).len(),
        2,
        "the run's own copy is gone too"
    );
}

// Defect 12: SIGINT or SIGTERM during a SQLite repair left the temporary
// copy's -journal/-wal/-shm beside the output, and a signal between the
// copy and its log left a copy without its log. Whenever the signal lands:
// the output directory holds nothing of the run, or the copy and its log
// both; never a temporary file or a sidecar.
#[test]
fn a_signal_during_a_sqlite_repair_leaves_all_or_nothing() {
    let src = tempfile::tempdir().unwrap();
    let db = src.path().join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    {
        // Bulk, so that the copy takes long enough to be interrupted, and
        // WAL mode, so that SQLite makes -wal and -shm beside the copy.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL; CREATE TABLE filler(x BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000)
             INSERT INTO filler SELECT randomblob(8000) FROM n;",
        )
        .unwrap();
    }
    use std::os::unix::process::ExitStatusExt;
    let before = fingerprint(&db);
    // How long a whole repair takes here: the signals land from the start
    // to a little after the end.
    let (full, _) = {
        let d = tempfile::tempdir().unwrap();
        let start = std::time::Instant::now();
        let o = run(&["repair", s(&db), "-o", s(&d.path().join("o.db"))]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        (start.elapsed(), d)
    };
    let step = full.mul_f64(1.3 / 24.0);
    let mut outcomes = std::collections::BTreeMap::new();
    for (k, signal) in (0..24u32).flat_map(|k| [(k, "-INT"), (k, "-TERM")]) {
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("out.db");
        let log = out_dir.path().join("log.json");
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
            .args(["repair", s(&db), "-o", s(&out), "--log", s(&log)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(step * k);
        let _ = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let o = child.wait_with_output().unwrap();
        let c = o.status.code();
        // Before the handler is set, the signal's default action ends the
        // run: nothing is written yet then.
        assert!(
            matches!(c, Some(0 | 130)) || o.status.signal().is_some(),
            "{signal} after {k}: {:?} {}",
            o.status,
            stderr(&o)
        );
        let files = listing(out_dir.path());
        let all = files == ["log.json", "out.db"];
        assert!(
            files.is_empty() || all,
            "{signal} after {:?}: {files:?}",
            step * k
        );
        if c == Some(130) {
            assert_eq!(stderr(&o).trim(), "error: interrupted");
        }
        *outcomes.entry((c, files.len())).or_insert(0) += 1;
    }
    assert_eq!(before, fingerprint(&db));
    eprintln!("outcomes (exit code, files left): {outcomes:?}");
    // Some runs must have met the signal while they worked.
    assert!(
        outcomes.keys().any(|(c, _)| *c == Some(130)),
        "{outcomes:?}"
    );
}

// ------------------------------------------------------------ fault matrix --

/// Every command that reads `path`, and, for repair, where it writes.
fn commands<'a>(path: &'a str, out: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec!["lint", path],
        vec!["lint", "--format", "json", path],
        vec!["inspect", path],
        vec!["diff", path, path],
        vec!["repair", path, "-o", out],
    ]
}

/// One input chatfsck cannot read, through every command: one line naming
/// the path and `cause`, exit 2, no output, the input (and its directory)
/// unchanged.
fn refused(path: &Path, cause: &str) {
    let dir = path.parent().unwrap();
    let before = (fingerprint(path), listing(dir));
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    for args in commands(s(path), s(&out)) {
        let o = run_checked(&args);
        one_line_error(&o, path, cause);
        assert!(
            listing(out_dir.path()).is_empty(),
            "{args:?} wrote {:?}",
            listing(out_dir.path())
        );
    }
    assert_eq!(
        before,
        (fingerprint(path), listing(dir)),
        "{} changed",
        path.display()
    );
}

#[test]
fn fault_matrix_inputs() {
    let d = tempfile::tempdir().unwrap();
    let w = |name: &str, bytes: &[u8]| {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    refused(&d.path().join("missing.jsonl"), "no such file");
    refused(&w("empty.jsonl", b""), "file is empty");
    refused(&w("blank.jsonl", b"\n \n"), "file is empty");
    refused(&w("zeros.jsonl", &[0u8; 4096]), "NUL bytes");
    refused(
        &w("elf.jsonl", b"\x7fELF\x02\x01\x01\x00\x00\x00"),
        "NUL bytes",
    );
    // Not UTF-8 from the first line on (outside any string): not text.
    refused(
        &w(
            "latin1.jsonl",
            b"\xe9t\xe9\n{\"role\":\"user\",\"content\":\"x\"}\n",
        ),
        "line 1 is not UTF-8",
    );
    refused(
        &w("not-history.json", b"{\"foo\": 1}"),
        "not a message history",
    );
    refused(&w("numbers.json", b"[1, 2, 3]"), "not a message history");
    // Nesting alone, nothing else: a clear error, never a crash.
    refused(
        &w("deep.json", deep(100_000).as_bytes()),
        "not a message history",
    );
    // SQLite: shorter than its header; cut after its first page; a header
    // and then noise; not a database despite the name.
    refused(&w("short.db", b"SQLite format 3\0\x10\x00"), "truncated");
    let seed = std::fs::read(root().join("fixtures/dispatch/seed-000.db")).unwrap();
    refused(&w("cut.db", &seed[..4096]), "database is corrupt");
    let mut noise = seed[..100].to_vec();
    noise.extend((0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    refused(&w("noise.db", &noise), "database is corrupt");
    refused(&w("text.db", b"hello"), "not a SQLite database");
    let x = d.path().join("x");
    std::fs::create_dir(&x).unwrap();
    refused(&store_with_a_corrupt_index_page(&x), "database is corrupt");
    // A WAL database whose -wal lost its frames: SQLite (and the app) see
    // the database without them, here no table at all.
    let wal = d.path().join("wal");
    std::fs::create_dir(&wal).unwrap();
    for f in ["dispatch.db", "dispatch.db-wal", "dispatch.db-shm"] {
        std::fs::copy(root().join("fixtures/dispatch/wal").join(f), wal.join(f)).unwrap();
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(wal.join("dispatch.db-wal"))
        .unwrap();
    f.set_len(100).unwrap();
    drop(f);
    refused(&wal.join("dispatch.db"), "holds no conversation history");
}

#[test]
fn fault_matrix_directories() {
    // A directory whose symbolic links loop back: walked once, not forever.
    let d = tempfile::tempdir().unwrap();
    let sub = d.path().join("d");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(
        sub.join("a.jsonl"),
        "{\"role\":\"user\",\"content\":\"x\"}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("..", sub.join("up")).unwrap();
    std::os::unix::fs::symlink(".", sub.join("self")).unwrap();
    let o = run_checked(&["lint", "--format", "json", s(&sub)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["summary"]["files"], 1, "{doc:#}");
    // An unreadable directory: permission denied (as nobody, see above).
    use std::os::unix::fs::PermissionsExt;
    let top = open_dir();
    let closed = top.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::write(
        closed.join("a.jsonl"),
        "{\"role\":\"user\",\"content\":\"x\"}\n",
    )
    .unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    let o = run_unprivileged(&["lint", s(&closed)]);
    one_line_error(&o, &closed, "permission denied");
}

#[test]
fn fault_matrix_outputs() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.jsonl");
    std::fs::write(&input, ANTHROPIC_INTERLEAVED).unwrap();
    let exists = d.path().join("exists.jsonl");
    std::fs::write(&exists, b"keep me").unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, b"").unwrap();
    let db = d.path().join("store.db");
    std::fs::copy(root().join("fixtures/dispatch/seed-000.db"), &db).unwrap();
    for side in ["-wal", "-shm", "-journal"] {
        // Sidecars that exist, as they do beside a live database.
        std::fs::write(format!("{}{side}", db.display()), b"").unwrap();
    }
    let _ = std::fs::remove_file(format!("{}-journal", db.display()));
    let dotted = format!("{}/./in.jsonl", d.path().display());
    let under_file = format!("{}/out.jsonl", plain.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![s(&input).into(), "-o".into(), s(&exists).into()],
            "already exists",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                s(&input).into(),
                "--force".into(),
            ],
            "refusing",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                dotted.clone(),
                "--force".into(),
            ],
            "refusing",
        ),
        (
            vec![
                s(&db).into(),
                "-o".into(),
                format!("{}-wal", db.display()),
                "--force".into(),
            ],
            "refusing",
        ),
        (
            vec![
                s(&db).into(),
                "-o".into(),
                format!("{}-shm", db.display()),
                "--force".into(),
            ],
            "refusing",
        ),
        (
            vec![
                s(&db).into(),
                "-o".into(),
                format!("{}-journal", db.display()),
            ],
            "refusing",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                s(&d.path().join("o1.jsonl")).into(),
                "--log".into(),
                s(&exists).into(),
            ],
            "already exists",
        ),
        (
            vec![
                s(&db).into(),
                "-o".into(),
                s(&d.path().join("o2.db")).into(),
                "--log".into(),
                format!("{}-shm", db.display()),
                "--force".into(),
            ],
            "refusing",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                s(&d.path().join("o3.jsonl")).into(),
                "--log".into(),
                s(&d.path().join("o3.jsonl")).into(),
            ],
            "path of its own",
        ),
        (
            vec![s(&input).into(), "-o".into(), under_file.clone()],
            "is not a folder",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                s(&d.path().join("no-such-folder").join("o4.jsonl")).into(),
            ],
            "no-such-folder does not exist",
        ),
        (
            vec![
                s(&input).into(),
                "-o".into(),
                s(d.path()).into(),
                "--force".into(),
            ],
            "is a directory",
        ),
    ];
    let before: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| (e.as_ref().unwrap().path(), fingerprint(&e.unwrap().path())))
        .collect();
    for (args, cause) in cases {
        let mut a = vec!["repair"];
        a.extend(args.iter().map(String::as_str));
        let o = run_checked(&a);
        assert_eq!(code(&o), 2, "{a:?}: {}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
        assert!(err.contains(cause), "{a:?}: {err}");
        let after: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| (e.as_ref().unwrap().path(), fingerprint(&e.unwrap().path())))
            .collect();
        assert_eq!(before, after, "{a:?} changed the directory");
    }
}

// A full disk, as `ulimit -f` makes one: the copy cannot be written, the
// run says so in one line, and nothing is left behind. SIGXFSZ is ignored
// here (as `trap '' XFSZ` does) so that the write fails with EFBIG; with
// the default action the kernel kills the process, and the partial hidden
// output is what the sweep of the next run removes.
#[test]
fn fault_matrix_full_disk() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.jsonl");
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!(
            "{{\"role\":\"user\",\"content\":\"{i} {}\"}}\n",
            "x".repeat(200)
        ));
        text.push_str("{\"role\":\"assistant\",\"content\":\"ok\"}\n");
    }
    text.push_str(r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#);
    text.push('\n');
    std::fs::write(&input, &text).unwrap();
    let before = fingerprint(&input);
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.jsonl");
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            r#"trap '' XFSZ; ulimit -f 64; exec "$BIN" repair "$IN" -o "$OUT""#,
        ])
        .env("BIN", assert_cmd::cargo::cargo_bin("chatfsck"))
        .env("IN", &input)
        .env("OUT", &out)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("out.jsonl") && err.contains("too large"),
        "{err}"
    );
    assert!(
        listing(out_dir.path()).is_empty(),
        "{:?}",
        listing(out_dir.path())
    );
    assert_eq!(before, fingerprint(&input));
}

// Hostile text from the history itself (message text, tool names, call ids,
// a Claude Code session id, which becomes the conversation id) in every
// command and format, human output on a pseudo-terminal included.
#[test]
fn hostile_history_text_is_escaped_in_every_format() {
    let evil =
        "\u{1b}]0;pwn\u{7}\u{1b}[31mred\r\u{202e}rev\u{8}\u{0}|`<b>x</b>`\n::error::INJECTED %0A";
    let call_id = format!("c1{evil}");
    let name = format!("ls{evil}");
    let text = lines(&[
        &serde_json::json!({"role": "user", "content": format!("hi {evil}")}).to_string(),
        &serde_json::json!({"role": "assistant", "content": format!("<tool_call>{evil}</tool_call>"),
            "tool_calls": [{"id": call_id, "type": "function",
                "function": {"name": name, "arguments": "{\"a\": \"x"}}]})
        .to_string(),
        &serde_json::json!({"role": "user", "content": format!("again {evil}")}).to_string(),
        &serde_json::json!({"role": "tool", "tool_call_id": format!("zz{evil}"), "content": evil}).to_string(),
    ]);
    let (dir, p) = file("h.jsonl", text.as_bytes());
    let out = dir.path().join("out.jsonl");
    let log = dir.path().join("log.json");
    let (c, doc) = lint_json(s(&p), &[]);
    assert_eq!(c, 1);
    assert!(doc["findings"].as_array().unwrap().len() >= 3, "{doc:#}");
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for f in ["human", "json", "sarif", "github", "markdown"] {
        runs.push(vec!["lint", "--format", f, s(&p)]);
    }
    for f in ["human", "json", "markdown"] {
        runs.push(vec!["inspect", "--format", f, s(&p)]);
        runs.push(vec!["diff", "--format", f, s(&p), s(&p)]);
        runs.push(vec!["repair", "--dry-run", "--format", f, s(&p)]);
    }
    runs.push(vec!["repair", s(&p), "-o", s(&out), "--log", s(&log)]);
    for args in runs {
        let o = run_checked(&args);
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        for (what, text) in [("stdout", stdout(&o)), ("stderr", stderr(&o))] {
            no_raw_attacks(&text, &format!("{args:?} {what}"));
            assert!(!text.contains('\u{0}'), "{args:?} {what}: raw NUL");
        }
    }
    // JSON documents stay JSON, with the text intact once decoded.
    let o = run(&["lint", "--format", "json", s(&p)]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc.to_string().contains("INJECTED"));
    // A pseudo-terminal: colour on, the history's sequences escaped.
    let o = std::process::Command::new("script")
        .args(["-qec", r#"exec "$BIN" lint "$F""#, "/dev/null"])
        .env("BIN", assert_cmd::cargo::cargo_bin("chatfsck"))
        .env("F", &p)
        .env_remove("NO_COLOR")
        .output()
        .expect("script(1) from util-linux runs commands on a pseudo-terminal");
    let tty = String::from_utf8_lossy(&o.stdout).replace("\r\n", "\n");
    assert!(tty.contains('\u{1b}'), "no colour: not a terminal? {tty}");
    for attack in ["\u{1b}]0;pwn", "\u{7}", "\u{8}", "\u{202e}", "\r", "\u{0}"] {
        assert!(!tty.contains(attack), "terminal: raw {attack:?} in\n{tty}");
    }
    assert!(
        !tty.lines().any(|l| l.starts_with("::error::INJECTED")),
        "{tty}"
    );
}

// Defect 6, the late case: the log's temporary file was made, but filling
// it fails (a disk that fills up between the copy and the log). The copy,
// already in place, is removed: a copy is never left without its log.
#[test]
fn a_log_that_fails_late_takes_the_copy_with_it() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.jsonl");
    // A small history whose stray result is large: the copy is small, the
    // log (which keeps the removed result) is not.
    let big = "r".repeat(300_000);
    let text = lines(&[
        r#"{"role":"user","content":"q"}"#,
        &serde_json::json!({"role": "tool", "tool_call_id": "zz", "content": big}).to_string(),
        r#"{"role":"assistant","content":"done"}"#,
    ]);
    std::fs::write(&input, &text).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.jsonl");
    let log = out_dir.path().join("log.json");
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            r#"trap '' XFSZ; ulimit -f 128; exec "$BIN" repair "$IN" -o "$OUT" --log "$LOG""#,
        ])
        .env("BIN", assert_cmd::cargo::cargo_bin("chatfsck"))
        .env("IN", &input)
        .env("OUT", &out)
        .env("LOG", &log)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("log.json"), "{err}");
    assert!(
        listing(out_dir.path()).is_empty(),
        "{:?}",
        listing(out_dir.path())
    );
}

// Found by repair_file without ASan: a Claude Code record with a lone
// surrogate escape and bytes that are not UTF-8. The repair replaced the
// escape, and logged the record as text, U+FFFD in place of the bytes:
// they were in neither the copy nor the log. The log keeps them in base64.
#[test]
fn replaced_surrogates_log_the_exact_bytes_of_a_record() {
    let fixture = root().join("fixtures/claude-code/lone-surrogate/assistant-text.jsonl");
    let text = std::fs::read(&fixture).unwrap();
    let at = memchr::memmem::find(&text, b"\\ud800").unwrap() + 6;
    let bytes = [&text[..at], b"\xB5\xB5", &text[at..]].concat();
    let (_dir, p) = file("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", &bytes);
    let (_, log) = prove(&p, &[]);
    let e = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "replace-surrogates")
        .unwrap_or_else(|| panic!("{log:#}"));
    let line = bytes
        .split(|&b| b == b'\n')
        .find(|l| memchr::memmem::find(l, b"\xB5\xB5").is_some())
        .unwrap();
    assert_eq!(e["before_base64"], base64(line), "{e:#}");
}

// A `\u` escape without four hex digits in a field no reader asks for
// (a Claude Code record's `toolUseResult`, an OpenAI line's `metadata`):
// sonic-rs, which skips such a field, took it, and lint read the line as
// a record, where every app's parser (`JSON.parse`, Python's `json`,
// serde_json) refuses the whole line (Claude Code 2.1.330 skips it and
// sends 17 of 18 units: tests/oracle.rs). The line is a corrupt record,
// and the repair drops it into the log. A repair_file find: the writer,
// which parses with serde_json, failed on the line.
#[test]
fn a_bad_unicode_escape_in_a_skipped_field_makes_the_line_corrupt() {
    let (_cc_dir, cc) = file(
        "session.jsonl",
        &std::fs::read(
            root().join("tests/data/claude-code/bad-unicode-escape-in-a-skipped-field.jsonl"),
        )
        .unwrap(),
    );
    let openai = concat!(
        r#"{"role":"user","content":"hi"}"#,
        "\n",
        r#"{"role":"assistant","content":"hello","metadata":{"note":"a \uzzzz b","n":1}}"#,
        "\n",
        r#"{"role":"user","content":"thanks"}"#,
        "\n",
    );
    let (_dir, generic) = file("session.jsonl", openai.as_bytes());
    for (input, line) in [(cc, 8), (generic, 2)] {
        let (_, doc) = lint_json(s(&input), &[]);
        let corrupt: Vec<_> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "corrupt-record")
            .collect();
        assert_eq!(corrupt.len(), 1, "{}: {doc:#}", input.display());
        assert_eq!(corrupt[0]["location"]["line"], line);
        assert!(
            corrupt[0]["summary"]
                .as_str()
                .unwrap()
                .contains("a `\\u` escape without four hex digits"),
            "{:#}",
            corrupt[0]
        );
        let (out, log) = prove(&input, &[]);
        let dropped: Vec<_> = log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "drop-record")
            .map(|e| e["before"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(dropped.len(), 1, "{log:#}");
        assert!(dropped[0].contains(r"\uzzzz"));
        assert!(!std::fs::read_to_string(&out).unwrap().contains(r"\uzzzz"));
    }
}
