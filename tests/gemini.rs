//! Gemini CLI chat recordings (`fixtures/gemini-cli/`): every file of the
//! folder read by the built binary, with the message counts, findings and
//! exit codes of `fixtures/gemini-cli/README.md`, repairs that round-trip,
//! and snapshots of the lint reports. An ignored test resumes repaired
//! copies with the real client (`@google/gemini-cli` 0.61.0) against the
//! loopback mock and checks the requests it sends (`scripts/test-all` runs it).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;

const CHATS: &str = "fixtures/gemini-cli/home/.gemini/tmp/shop-api/chats";
const LEGACY: &str = "fixtures/gemini-cli/home/.gemini/tmp/205907310690ed3ad27ab6247b9d95524eda13c835f6f9b2ec653d6428ae8d41/chats/session-2025-09-14T10-02-4f1c2a9e.json";
const CAPTURED: &str =
    "fixtures/gemini-cli/captured-0.61.0/session-2026-11-23T16-57-1d3f51a7.jsonl";

/// One recording: its messages (user, gemini), the findings as
/// `rule@line`, and lint's exit code (default `--fail-on error`).
struct Case {
    path: String,
    user: u64,
    gemini: u64,
    findings: &'static [&'static str],
    exit: i32,
}

fn chat(name: &str) -> String {
    format!("{CHATS}/{name}")
}

/// The README's table, row by row (and the real 0.61.0 capture).
fn cases() -> Vec<Case> {
    let c = |path: String, user, gemini, findings, exit| Case {
        path,
        user,
        gemini,
        findings,
        exit,
    };
    vec![
        // healthy legacy .json: thoughts + one read_file with its result
        c(LEGACY.to_string(), 1, 2, &[], 0),
        // healthy: parallel calls, each result stored twice by design (#26939)
        c(
            chat("session-2026-05-20T09-15-8d2e7b31.jsonl"),
            2,
            2,
            &[],
            0,
        ),
        // orphan call inside a $set.messages checkpoint
        c(
            chat("session-2026-05-20T09-17-a1b2c3d4.jsonl"),
            2,
            1,
            &["orphan-tool-call@4"],
            1,
        ),
        // stray response left after a $rewindTo
        c(
            chat("session-2026-05-20T09-19-e5f6a7b8.jsonl"),
            3,
            0,
            &["orphan-tool-result@7"],
            1,
        ),
        // healthy: a cancelled call, answered by its error response
        c(
            chat("session-2026-05-20T09-22-5e6f7a8b.jsonl"),
            3,
            2,
            &[],
            0,
        ),
        // #29365 persisted: two responses for one call
        c(
            chat("session-2026-05-20T09-25-0a1b2c3d.jsonl"),
            4,
            2,
            &["function-response-count@2"],
            1,
        ),
        // unsigned gemini-3 calls in the current turn (warnings)
        c(
            chat("session-2026-05-20T09-35-6a7b8c9d.jsonl"),
            3,
            2,
            &["missing-thought-signature@2", "missing-thought-signature@2"],
            0,
        ),
        // torn last line
        c(
            chat("session-2026-05-20T09-53-2a3b4c5d.jsonl"),
            2,
            1,
            &["corrupt-record@9"],
            1,
        ),
        // the real capture after two resumes: the <session_context> record
        // is not sent; line 28 holds each of two calls answered twice.
        c(
            CAPTURED.to_string(),
            8,
            6,
            &["function-response-count@28", "function-response-count@28"],
            1,
        ),
    ]
}

/// Files of the folder that are not recordings, and must not be read as one.
const NOT_RECORDINGS: &[&str] = &[
    "fixtures/gemini-cli/home/.gemini/projects.json",
    "fixtures/gemini-cli/captured-0.61.0/requests.jsonl",
];

#[test]
fn every_file_of_the_folder_is_covered() {
    let listed: BTreeSet<String> = cases()
        .into_iter()
        .map(|c| c.path)
        .chain(NOT_RECORDINGS.iter().map(|s| s.to_string()))
        .collect();
    let mut found = BTreeSet::new();
    for e in walkdir::WalkDir::new(root().join("fixtures/gemini-cli")) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if e.file_type().is_file() && (rel.ends_with(".json") || rel.ends_with(".jsonl")) {
            found.insert(rel);
        }
    }
    assert_eq!(found, listed);
}

#[test]
fn recordings_read_as_the_readme_counts() {
    let mut failures = Vec::new();
    for c in cases() {
        let (code, doc) = lint_json(&c.path, &[]);
        let file = &doc["files"][0];
        let want_format = if c.path.ends_with(".json") {
            "json"
        } else {
            "jsonl"
        };
        let got = (
            file["format"].as_str().unwrap_or("?").to_string(),
            file["dialect"].as_str().unwrap_or("?").to_string(),
            file["messages"].as_u64(),
            file["by_role"]["user"].as_u64().unwrap_or(0),
            file["by_role"]["assistant"].as_u64().unwrap_or(0),
        );
        let want = (
            want_format.to_string(),
            "gemini-cli".to_string(),
            Some(c.user + c.gemini),
            c.user,
            c.gemini,
        );
        if got != want {
            failures.push(format!("{}: read {got:?}, want {want:?}", c.path));
        }
        let mut want_findings: Vec<String> = c.findings.iter().map(|s| s.to_string()).collect();
        want_findings.sort();
        let got_findings = rule_lines(&doc);
        if got_findings != want_findings {
            failures.push(format!(
                "{}: findings {got_findings:?}, want {want_findings:?}",
                c.path
            ));
        }
        if code != c.exit {
            failures.push(format!("{}: exit {code}, want {}", c.path, c.exit));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn files_that_are_not_recordings_are_not_read_as_one() {
    for path in NOT_RECORDINGS {
        let o = run(&["lint", "--format", "json", path]);
        let out = stdout(&o);
        assert!(
            !out.contains("gemini-cli\""),
            "{path} read as a recording: {out}"
        );
        // Never a false "clean": the file was not read, so exit 2.
        assert_eq!(code(&o), 2, "{path}: {out}{}", stderr(&o));
    }
}

#[test]
fn findings_say_what_gemini_cli_does() {
    let expect = [
        (
            chat("session-2026-05-20T09-17-a1b2c3d4.jsonl"),
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        ),
        (
            chat("session-2026-05-20T09-19-e5f6a7b8.jsonl"),
            "Please ensure that function response turn comes immediately after a function call turn.",
        ),
        (
            chat("session-2026-05-20T09-25-0a1b2c3d.jsonl"),
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        ),
        (
            chat("session-2026-05-20T09-35-6a7b8c9d.jsonl"),
            "Function call is missing a thought_signature in functionCall parts.",
        ),
        (
            chat("session-2026-05-20T09-53-2a3b4c5d.jsonl"),
            "Gemini CLI skips a line that does not parse without a word",
        ),
    ];
    for (path, text) in expect {
        let (_, doc) = lint_json(&path, &[]);
        let notes: Vec<String> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["notes"].as_array().unwrap().iter())
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        assert!(
            notes.iter().any(|n| n.contains(text)),
            "{path}: no note quotes {text:?}: {notes:#?}"
        );
    }
    // The duplicate response is one finding, not also a stray result.
    let (_, doc) = lint_json(&chat("session-2026-05-20T09-25-0a1b2c3d.jsonl"), &[]);
    let f = &doc["findings"][0];
    assert_eq!(f["evidence"].as_array().unwrap().len(), 2, "{f:#}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("makes 1 function call but the turn after it sends 2 function responses")
    );
}

#[test]
fn explain_quotes_the_provider_errors() {
    for (rule, text) in [
        (
            "function-response-count",
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        ),
        (
            "missing-thought-signature",
            "Function call is missing a thought_signature in functionCall parts.",
        ),
    ] {
        let o = run(&["explain", rule]);
        assert_eq!(code(&o), 0);
        assert!(stdout(&o).contains(text), "{rule}");
    }
}

struct Repaired {
    out: PathBuf,
    log: serde_json::Value,
    _dir: tempfile::TempDir,
}

fn repair(input: &Path, extra: &[&str]) -> Repaired {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(input.file_name().unwrap());
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
    assert_eq!(
        code(&o),
        0,
        "repair {input:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    Repaired {
        out,
        log,
        _dir: dir,
    }
}

fn edits(log: &serde_json::Value) -> &Vec<serde_json::Value> {
    log["edits"].as_array().unwrap()
}

/// Repair, then prove: the input is untouched; every input line is in the
/// copy (bar the dropped torn ones), in order, byte for byte; re-lint finds
/// nothing of what was repaired; a second repair changes nothing.
fn round_trip(path: &str, extra: &[&str]) -> Repaired {
    let input = root().join(path);
    let before = fingerprint(&input);
    let r = repair(&input, extra);
    assert_eq!(before, fingerprint(&input), "{path} changed");
    let fixed: BTreeSet<String> = edits(&r.log)
        .iter()
        .map(|e| e["rule"].as_str().unwrap().to_string())
        .collect();
    let dropped: BTreeSet<u64> = edits(&r.log)
        .iter()
        .filter(|e| e["action"] == "drop-record")
        .map(|e| e["location"]["line"].as_u64().unwrap())
        .collect();
    let original = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&r.out).unwrap();
    let kept: Vec<&str> = original
        .split_terminator('\n')
        .enumerate()
        .filter(|(i, _)| !dropped.contains(&(*i as u64 + 1)))
        .map(|(_, l)| l)
        .collect();
    let copy_lines: Vec<&str> = copy.split_terminator('\n').collect();
    assert_eq!(
        &copy_lines[..kept.len()],
        &kept[..],
        "{path}: input lines not kept"
    );
    // At most one line added: the $set.messages of the repaired records.
    assert!(copy_lines.len() <= kept.len() + 1, "{path}");
    if let Some(added) = copy_lines.get(kept.len()) {
        assert!(
            added.starts_with("{\"$set\":{\"messages\":["),
            "{path}: {added}"
        );
    }
    let (_, doc) = lint_json(r.out.to_str().unwrap(), &[]);
    for f in doc["findings"].as_array().unwrap() {
        assert!(
            !fixed.contains(f["rule"].as_str().unwrap()),
            "{path}: repaired copy still has {f:#}"
        );
    }
    let again = repair(&r.out, extra);
    assert!(edits(&again.log).is_empty(), "{path}: {:#}", again.log);
    assert_eq!(
        std::fs::read(&r.out).unwrap(),
        std::fs::read(&again.out).unwrap(),
        "{path}: second repair changed bytes"
    );
    r
}

#[test]
fn every_recording_repairs_and_round_trips() {
    for c in cases() {
        if c.path.ends_with(".json") {
            continue;
        }
        let r = round_trip(&c.path, &[]);
        let errors_fixed = c.findings.iter().any(|f| !f.starts_with("missing-thought"));
        assert_eq!(
            !edits(&r.log).is_empty(),
            errors_fixed,
            "{}: {:#}",
            c.path,
            r.log
        );
        if c.findings.is_empty() {
            assert_eq!(
                std::fs::read(root().join(&c.path)).unwrap(),
                std::fs::read(&r.out).unwrap(),
                "{}: a healthy recording's copy must be identical",
                c.path
            );
        }
    }
}

/// The records of the copy's last `$set.messages` line.
fn final_set(copy: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(copy).unwrap();
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    v["$set"]["messages"].as_array().unwrap().clone()
}

#[test]
fn an_orphan_call_is_answered_in_the_apps_error_shape_and_marked() {
    let r = round_trip(&chat("session-2026-05-20T09-17-a1b2c3d4.jsonl"), &[]);
    let e = &edits(&r.log)[0];
    assert_eq!(e["action"], "answer-call");
    assert_eq!(e["synthesized"], true);
    let set = final_set(&r.out);
    let types: Vec<&str> = set.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["user", "gemini", "user", "user"]);
    let fr = &set[2]["content"][0]["functionResponse"];
    assert_eq!(fr["id"], "list_directory_1779269133004_0");
    assert_eq!(fr["name"], "list_directory");
    assert!(
        fr["response"]["error"]
            .as_str()
            .unwrap()
            .starts_with("[chatfsck repair]")
    );
    // The call keeps its signature and its record stays verbatim.
    assert_eq!(
        set[1]["content"][0]["thoughtSignature"],
        "CpMBAY89a1+6c2yTtR0p3qYtUo9vD5xQH7aZf0Kd1mE4sN8wL2bX"
    );
}

#[test]
fn orphan_call_policies_drop_and_no_synthesize() {
    let path = chat("session-2026-05-20T09-17-a1b2c3d4.jsonl");
    let r = round_trip(&path, &["--orphan-calls", "drop"]);
    let set = final_set(&r.out);
    let types: Vec<&str> = set.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["user", "user"], "the call's only part went with it");
    assert_eq!(edits(&r.log)[0]["synthesized"], false);
    let r = repair(&root().join(&path), &["--no-synthesize"]);
    assert!(edits(&r.log).is_empty());
    assert_eq!(
        std::fs::read(root().join(&path)).unwrap(),
        std::fs::read(&r.out).unwrap()
    );
    assert_eq!(r.log["left"][0]["rule"], "orphan-tool-call");
}

#[test]
fn stray_and_duplicate_responses_are_removed_and_logged() {
    let r = round_trip(&chat("session-2026-05-20T09-19-e5f6a7b8.jsonl"), &[]);
    let e = &edits(&r.log)[0];
    assert_eq!(
        (e["rule"].as_str(), e["action"].as_str()),
        (Some("orphan-tool-result"), Some("remove-result"))
    );
    assert!(
        e["before"]
            .as_str()
            .unwrap()
            .contains("grep_search_1779269402711_0")
    );
    assert!(e["after"].is_null());
    let set = final_set(&r.out);
    assert!(!serde_json::to_string(&set).unwrap().contains("grep_search"));
    assert_eq!(set.len(), 2);

    let r = round_trip(&chat("session-2026-05-20T09-25-0a1b2c3d.jsonl"), &[]);
    assert_eq!(edits(&r.log).len(), 1);
    let set = final_set(&r.out);
    let responses = serde_json::to_string(&set)
        .unwrap()
        .matches("\"functionResponse\"")
        .count();
    assert_eq!(responses, 1, "one response for the one call");
    assert_eq!(set.len(), 5);
}

#[test]
fn a_torn_line_is_dropped_and_kept_in_the_log() {
    let path = chat("session-2026-05-20T09-53-2a3b4c5d.jsonl");
    let r = round_trip(&path, &[]);
    let e = &edits(&r.log)[0];
    assert_eq!(e["action"], "drop-record");
    let original = std::fs::read_to_string(root().join(&path)).unwrap();
    assert_eq!(
        e["before"].as_str().unwrap(),
        original.lines().last().unwrap()
    );
    let copy = std::fs::read_to_string(&r.out).unwrap();
    assert!(original.starts_with(&copy) && copy.ends_with('\n'));
}

#[test]
fn the_legacy_json_form_is_checked_but_never_written() {
    // A copy of the legacy file with a stray response: lint finds it and
    // does not call it repairable; repair refuses with the reason and
    // writes nothing.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("session-2025-09-14T10-02-4f1c2a9e.json");
    let text = std::fs::read_to_string(root().join(LEGACY)).unwrap();
    let broken = text.replacen(
        "\"messages\": [",
        "\"messages\": [\n    {\"id\": \"x1\", \"timestamp\": \"2025-09-14T10:02:11.000Z\", \"type\": \"user\", \"content\": [{\"functionResponse\": {\"id\": \"gone_1\", \"name\": \"glob\", \"response\": {\"output\": \"\"}}}]},",
        1,
    );
    std::fs::write(&p, broken).unwrap();
    let (code_, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert_eq!(code_, 1);
    assert_eq!(rule_lines(&doc), ["orphan-tool-result@7"]);
    assert_eq!(doc["summary"]["fixable"], 0);
    let out = dir.path().join("out.json");
    let o = run(&["repair", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("migrates it to `.jsonl` on resume"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn detection_is_strict() {
    let dir = tempfile::tempdir().unwrap();
    // sessionId without a 64-hex projectHash (a Claude Code line has
    // sessionId too): not a recording.
    let p = dir.path().join("other.jsonl");
    std::fs::write(
        &p,
        "{\"sessionId\":\"s\",\"projectHash\":\"abc\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let o = run(&["lint", "--format", "json", p.to_str().unwrap()]);
    assert!(!stdout(&o).contains("\"gemini-cli\""), "{}", stdout(&o));
    // A /chat save checkpoint ({history: Content[]}) is not a recording.
    let p = dir.path().join("checkpoint-x.json");
    std::fs::write(
        &p,
        "{\"history\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}",
    )
    .unwrap();
    let o = run(&["lint", "--format", "json", p.to_str().unwrap()]);
    assert!(!stdout(&o).contains("\"gemini-cli\""), "{}", stdout(&o));
}

#[test]
fn snapshots_of_lint_human_and_json() {
    for c in cases() {
        let name = Path::new(&c.path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let human = stdout(&run(&["lint", &c.path]));
        insta::assert_snapshot!(format!("gemini_lint_human__{name}"), human);
        let json = stdout(&run(&["lint", "--format", "json", &c.path]));
        insta::assert_snapshot!(format!("gemini_lint_json__{name}"), json);
    }
}

// ---- The real client ---------------------------------------------------------
//
// `CHATFSCK_GEMINI_CLI` names the `gemini` binary of @google/gemini-cli 0.61.0.
// Without it the tests are listed as ignored, with the command that
// installs it (build.rs decides); `scripts/test-all` installs the client and
// sets the variable, and the tests run, failing for real. The client
// runs with a scratch HOME against fixtures/clients/mock_provider.py on a
// loopback port; the mock logs each request it gets.

fn gemini_cli() -> PathBuf {
    match std::env::var_os("CHATFSCK_GEMINI_CLI") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "CHATFSCK_GEMINI_CLI is not set: this test needs the `gemini` binary of @google/gemini-cli 0.61.0 (scripts/test-all installs it)"
        ),
    }
}

/// The mock provider, stopped when dropped.
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
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the mock provider did not start on port {port}");
    }

    /// The `contents` of every generateContent request, in order.
    fn requests(&self) -> Vec<Vec<serde_json::Value>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| {
                r["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("GenerateContent") || p.contains("generateContent"))
            })
            .filter_map(|r| r["body"]["contents"].as_array().cloned())
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch HOME holding the fixture recordings, and the project folder
/// `projects.json` maps to their temp-dir slug.
fn scratch_home(dir: &Path) -> (PathBuf, PathBuf) {
    let home = dir.join("home");
    let project = dir.join("proj").join("shop-api");
    std::fs::create_dir_all(&project).unwrap();
    let src = root().join("fixtures/gemini-cli/home/.gemini");
    for e in walkdir::WalkDir::new(&src) {
        let e = e.unwrap();
        let to = home
            .join(".gemini")
            .join(e.path().strip_prefix(&src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    let projects = serde_json::json!({"projects": {project.to_str().unwrap(): "shop-api"}});
    std::fs::write(home.join(".gemini/projects.json"), projects.to_string()).unwrap();
    // Never delete sessions (0.61.0 removes those older than 30 days by
    // default), never phone home.
    let settings = r#"{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},"general":{"disableAutoUpdate":true,"sessionRetention":{"enabled":false}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"ide":{"enabled":false}}"#;
    std::fs::write(home.join(".gemini/settings.json"), settings).unwrap();
    (home, project)
}

/// Resume a session with the real client; the first request it sent.
fn resume(
    cli: &Path,
    home: &Path,
    project: &Path,
    mock: &Mock,
    session: &str,
) -> Vec<serde_json::Value> {
    let before = mock.requests().len();
    run_resume(cli, home, project, mock, session);
    mock.requests()
        .into_iter()
        .nth(before)
        .unwrap_or_else(|| panic!("gemini --resume {session} sent no request"))
}

/// Resume a session with the real client, which must succeed.
fn run_resume(cli: &Path, home: &Path, project: &Path, mock: &Mock, session: &str) {
    let o = std::process::Command::new(cli)
        .args([
            "-m",
            "gemini-2.5-pro",
            "--resume",
            session,
            "-p",
            "continue",
            "--output-format",
            "json",
        ])
        .current_dir(project)
        .env("HOME", home)
        .env("GEMINI_API_KEY", "dummy")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port),
        )
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .env_remove("GOOGLE_GENAI_USE_VERTEXAI")
        .output()
        .expect("the gemini binary runs");
    assert!(
        o.status.success(),
        "gemini --resume {session}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Where a request breaks the Gemini API's pairing rules: a model turn
/// with N function calls not followed by exactly N function responses, or
/// responses in a turn that does not follow a call turn.
fn pairing_errors(contents: &[serde_json::Value]) -> Vec<String> {
    let count = |c: &serde_json::Value, key: &str| {
        c["parts"]
            .as_array()
            .map_or(0, |ps| ps.iter().filter(|p| p.get(key).is_some()).count())
    };
    let mut errors = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let calls = count(c, "functionCall");
        let responses = count(c, "functionResponse");
        if calls > 0 {
            let next = contents
                .get(i + 1)
                .map_or(0, |n| count(n, "functionResponse"));
            if next != calls {
                errors.push(format!("turn {i}: {calls} calls, {next} responses after"));
            }
        }
        if responses > 0 && (i == 0 || count(&contents[i - 1], "functionCall") == 0) {
            errors.push(format!(
                "turn {i}: {responses} responses after no call turn"
            ));
        }
    }
    errors
}

#[test]
#[cfg_attr(
    not(all(has_tool = "gemini-cli", has_tool = "python3")),
    ignore = "needs the real Gemini CLI 0.61.0 in CHATFSCK_GEMINI_CLI and Python 3: scripts/test-all installs it"
)]
fn the_real_client_resumes_repaired_copies_with_valid_pairing() {
    let cli = gemini_cli();
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = scratch_home(dir.path());
    let mock = Mock::start(dir.path());
    let chats = home.join(".gemini/tmp/shop-api/chats");

    // Control: the duplicate as stored breaks the pairing in the request
    // 0.61.0 sends, so the check below can fail.
    let dup = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    let sent = resume(&cli, &home, &project, &mock, dup);
    assert!(!pairing_errors(&sent).is_empty(), "{sent:#?}");

    // The repaired copies, put in place of the recordings.
    for (file, session) in [
        ("session-2026-05-20T09-25-0a1b2c3d.jsonl", dup),
        (
            "session-2026-05-20T09-17-a1b2c3d4.jsonl",
            "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
        ),
    ] {
        let target = chats.join(file);
        std::fs::remove_file(&target).unwrap();
        let o = run(&["repair", &chat(file), "-o", target.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let sent = resume(&cli, &home, &project, &mock, session);
        assert_eq!(
            pairing_errors(&sent),
            Vec::<String>::new(),
            "{file}: {sent:#?}"
        );
        if file.contains("a1b2c3d4") {
            let text = serde_json::to_string(&sent).unwrap();
            assert!(text.contains("[chatfsck repair]"), "{text}");
        }
    }
}

/// A prompt holding a byte that is not UTF-8, written as a crash or a bad
/// disk leaves it: Node reads the line as text, the byte as U+FFFD, and
/// 0.61.0 sends the prompt so. lint read the line as unparseable and
/// said the client skips it, and repair dropped a prompt the client
/// sends; now it reads the line as the client does.
fn prompt_with_a_byte_not_utf8(dir: &Path) -> PathBuf {
    let name = "session-2026-05-20T09-15-8d2e7b31.jsonl";
    let bytes = std::fs::read(root().join(chat(name))).unwrap();
    let at = memchr_at(&bytes, b"Which routes") + "Which ".len();
    let mut damaged = bytes[..at].to_vec();
    damaged.push(0xA9);
    damaged.extend_from_slice(&bytes[at..]);
    let path = dir.join(name);
    std::fs::write(&path, damaged).unwrap();
    path
}

fn memchr_at(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("the fixture holds the text")
}

#[test]
fn a_byte_not_utf8_is_read_as_the_client_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = prompt_with_a_byte_not_utf8(dir.path());
    let (rc, doc) = lint_json(path.to_str().unwrap(), &[]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["files"][0]["by_role"]["user"], 2, "{doc:#}");
    let out = dir.path().join("copy.jsonl");
    let o = run(&[
        "repair",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&path).unwrap());
}

#[test]
#[cfg_attr(
    not(all(has_tool = "gemini-cli", has_tool = "python3")),
    ignore = "needs the real Gemini CLI 0.61.0 in CHATFSCK_GEMINI_CLI and Python 3: scripts/test-all installs it"
)]
fn the_real_client_reads_a_byte_not_utf8_as_ufffd() {
    let (_dir, mock) = resume_damaged(prompt_with_a_byte_not_utf8);
    let sent = mock.requests().into_iter().next().expect("a request");
    let text = serde_json::to_string(&sent).unwrap();
    assert!(text.contains("Which \u{fffd}routes"), "{text}");
}

/// A prompt holding a lone surrogate escape (`\ud800`): `JSON.parse`
/// reads the line and 0.61.0 sends the escape as it is. lint read the line
/// as unparseable, said the client skips it, and repair dropped a prompt
/// the client sends.
fn prompt_with_a_lone_surrogate(dir: &Path) -> PathBuf {
    let name = "session-2026-05-20T09-15-8d2e7b31.jsonl";
    let text = std::fs::read_to_string(root().join(chat(name))).unwrap();
    assert!(text.contains("Which routes"));
    let path = dir.join(name);
    std::fs::write(
        &path,
        text.replacen("Which routes", "Which \\ud800routes", 1),
    )
    .unwrap();
    path
}

#[test]
fn a_lone_surrogate_escape_is_read_and_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = prompt_with_a_lone_surrogate(dir.path());
    let (rc, doc) = lint_json(path.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(rc, 1, "{doc:#}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc:#}");
    assert_eq!(findings[0]["rule"], "lone-surrogate", "{doc:#}");
    assert_eq!(findings[0]["severity"], "warning", "{doc:#}");
    assert!(
        findings[0]["summary"]
            .as_str()
            .unwrap()
            .contains("Gemini CLI reads the line and sends the escape as it is"),
        "{doc:#}"
    );
    assert_eq!(doc["files"][0]["by_role"]["user"], 2, "{doc:#}");
    // The Gemini writer does not rewrite the escape: the prompt stays, as
    // the client sends it, and the finding is left with its reason.
    let (out, log) = repair_logged(&path, dir.path());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&path).unwrap());
    assert_eq!(log["edits"], serde_json::json!([]), "{log:#}");
    assert_eq!(log["left"][0]["rule"], "lone-surrogate", "{log:#}");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "gemini-cli", has_tool = "python3")),
    ignore = "needs the real Gemini CLI 0.61.0 in CHATFSCK_GEMINI_CLI and Python 3: scripts/test-all installs it"
)]
fn the_real_client_sends_a_lone_surrogate_escape_as_it_is() {
    let (_dir, mock) = resume_damaged(prompt_with_a_lone_surrogate);
    // serde_json refuses the escape: the mock's log is searched as text.
    let log = std::fs::read_to_string(&mock.log).unwrap();
    assert!(log.contains("Which \\ud800routes"), "{log}");
}

/// Resume `8d2e7b31` with the real client against the mock, after
/// `damage` rewrote its recording in a scratch HOME; the scratch folder
/// (kept while the mock's log is read) and the mock.
fn resume_damaged(damage: fn(&Path) -> PathBuf) -> (tempfile::TempDir, Mock) {
    let cli = gemini_cli();
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = scratch_home(dir.path());
    let mock = Mock::start(dir.path());
    damage(&home.join(".gemini/tmp/shop-api/chats"));
    run_resume(
        &cli,
        &home,
        &project,
        &mock,
        "8d2e7b31-3f4a-4c5d-8e6f-70819a2b3c4d",
    );
    (dir, mock)
}

/// Issue 35, defect 15: a `$rewindTo` after each turn, taking back the
/// model turn whose call the next record answers: every such response is
/// a stray (`orphan-tool-result`), and lint worked out the turns of the
/// whole recording again for each one, quadratic in them (repair with
/// it). 20,000 took minutes, where they take seconds now
/// (bench/shared_id.sh times them).
#[test]
fn repair_is_linear_in_turns_rewound() {
    let n = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("session-2026-05-20T09-19-e5f6a7b8.jsonl");
    let mut text = format!(
        "{{\"sessionId\":\"e5f6a7b8-c9d0-4e1f-8a2b-3c4d5e6f7a8b\",\"projectHash\":\"{}\",\"startTime\":\"2026-05-20T09:19:00.005Z\",\"lastUpdated\":\"2026-05-20T09:19:00.005Z\",\"kind\":\"main\"}}\n",
        "ab".repeat(32)
    );
    for i in 0..n {
        let ts = format!(
            "2026-05-20T10:{:02}:{:02}.{:03}Z",
            i / 6000,
            i / 100 % 60,
            i % 100
        );
        text.push_str(&format!(
            r#"{{"id":"u{i}","timestamp":"{ts}","type":"user","content":[{{"text":"find caller {i}"}}]}}
{{"id":"g{i}","timestamp":"{ts}","type":"gemini","content":"","toolCalls":[{{"id":"grep_{i}","name":"grep_search","args":{{"pattern":"f{i}"}}}}]}}
{{"$rewindTo":"g{i}"}}
{{"id":"r{i}","timestamp":"{ts}","type":"user","content":[{{"functionResponse":{{"id":"grep_{i}","name":"grep_search","response":{{"output":"none"}}}}}}]}}
"#
        ));
    }
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out").join(input.file_name().unwrap());
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let said = repair_within_a_minute(&input, &out, "rewound turns");
    assert!(said.contains(&format!("applied {n} edits")), "{said}");
}
