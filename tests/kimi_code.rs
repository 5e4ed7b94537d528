//! Kimi Code's agent journals (issue 40): the journals the pinned client
//! wrote and their damaged variants (fixtures/kimi-code/), read as Kimi
//! Code 2.1.0 folds them on resume, and judged by the real client
//! (tests/oracle/kimi.py).

mod common;
use common::*;

use std::path::Path;

const HEALTHY: &str = "fixtures/kimi-code/home/.kimi-code/sessions/wd_work_57065d9cacbc/session_ee9a3aae-802b-4cb8-819d-e35902940556/agents/main/wire.jsonl";

/// Each fixture and its findings (`severity rule@line`).
const EXPECTED: &[(&str, &[&str])] = &[
    (HEALTHY, &[]),
    ("fixtures/kimi-code/unknown-tool.jsonl", &[]),
    // Kimi Code answers the killed call itself on resume.
    (
        "fixtures/kimi-code/killed-call.jsonl",
        &["warning orphan-tool-call@42"],
    ),
    // It drops a torn last line and rewrites the journal without it.
    (
        "fixtures/kimi-code/torn-tail.jsonl",
        &["warning corrupt-record@42"],
    ),
    // A bad line mid-file ends its read: everything after is lost.
    (
        "fixtures/kimi-code/corrupt-line.jsonl",
        &["error corrupt-record@18", "warning orphan-tool-call@17"],
    ),
];

/// The edits of each fixture's repair (`action@line`).
const REPAIRS: &[(&str, &[&str])] = &[
    ("fixtures/kimi-code/killed-call.jsonl", &["answer-call@42"]),
    ("fixtures/kimi-code/torn-tail.jsonl", &["drop-record@42"]),
    (
        "fixtures/kimi-code/corrupt-line.jsonl",
        &["answer-call@17", "drop-record@18"],
    ),
];

#[test]
fn every_fixture_reads_as_kimi_code_with_what_kimi_code_does_with_it() {
    for (file, want) in EXPECTED {
        let (_, doc) = lint_json(file, &["--fail-on", "info"]);
        assert_eq!(doc["files"][0]["dialect"], "kimi-code", "{file}: {doc:#}");
        assert_eq!(severity_rule_lines(&doc), *want, "{file}: {doc:#}");
        for f in doc["findings"].as_array().unwrap() {
            assert!(
                f["notes"].to_string().contains("Kimi Code"),
                "{file}: {f:#}"
            );
        }
    }
    // The context the client rebuilds: the prompt and its two reminders,
    // the call, its result and the reply; the UI's event records and the
    // request records are not messages.
    let o = run(&["inspect", HEALTHY]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 2, tool 1, user 3)"),
        "{}",
        stdout(&o)
    );
    // A line mid-file that does not parse: the finding says the client
    // drops everything after it for good.
    let (rc, doc) = lint_json("fixtures/kimi-code/corrupt-line.jsonl", &[]);
    assert_eq!(rc, 1, "{doc:#}");
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "corrupt-record")
        .unwrap();
    assert!(
        f["notes"].to_string().contains("every record after it"),
        "{f:#}"
    );
}

/// What a user reads about each damaged journal (snapshots, reviewed).
#[test]
fn lint_output_of_the_damaged_journals() {
    for (file, _) in &EXPECTED[2..] {
        let name = Path::new(file).file_stem().unwrap().to_str().unwrap();
        insta::assert_snapshot!(format!("kimi_lint__{name}"), stdout(&run(&["lint", file])));
    }
}

/// A tool message of two text parts is one result, as the client sends it:
/// before, each part was read as a result of its own, and the second was
/// a false `orphan-tool-result` error on a healthy journal.
#[test]
fn a_result_of_several_parts_is_one_result() {
    let one = r#""content":[{"type":"text","text":"<system>Thought logged</system>"}]"#;
    let two = r#""content":[{"type":"text","text":"<system>Thought "},{"type":"text","text":"logged</system>"}]"#;
    let text = std::fs::read_to_string(root().join("fixtures/kimi-code/older/v1.0-imported.jsonl"))
        .unwrap();
    assert_eq!(text.matches(one).count(), 1);
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("wire.jsonl");
    std::fs::write(&path, text.replace(one, two)).unwrap();
    let (rc, doc) = lint_json(path.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!((rc, severity_rule_lines(&doc)), (0, vec![]), "{doc:#}");
}

/// A journal of a protocol version Kimi Code 2.1.0 neither migrates nor
/// writes: refused in one line that names the version, never called clean.
#[test]
fn a_journal_of_another_protocol_version_is_still_refused() {
    let o = run(&["lint", "fixtures/unsupported/kimi-code/wire.jsonl"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("Kimi Code")
            && stderr(&o).contains("protocol version 1.6,")
            && stderr(&o).contains("1.0 to 1.5"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

/// The older journals (fixtures/kimi-code/older/README.md): 1.4 written by
/// Kimi Code 0.20.0, 1.0 by 2.1.0's `kimi migrate` of a kimi-cli session.
const OLDER: &[(&str, &[&str])] = &[
    ("fixtures/kimi-code/older/v1.4-healthy.jsonl", &[]),
    (
        "fixtures/kimi-code/older/v1.4-killed-call.jsonl",
        &["warning orphan-tool-call@22"],
    ),
    // Its calls' arguments read out of `function` (read where 1.5 keeps
    // them, each would be "", `invalid-tool-arguments`).
    ("fixtures/kimi-code/older/v1.0-imported.jsonl", &[]),
];

/// Journals of the protocol versions 2.1.0 migrates on load (1.0 to 1.4)
/// are read as it migrates them: 1.0's calls take their name and
/// arguments out of `function`.
#[test]
fn journals_of_older_protocol_versions_read_as_kimi_code_migrates_them() {
    for (file, want) in OLDER {
        let (_, doc) = lint_json(file, &["--fail-on", "info"]);
        assert_eq!(doc["files"][0]["dialect"], "kimi-code", "{file}: {doc:#}");
        assert_eq!(severity_rule_lines(&doc), *want, "{file}: {doc:#}");
    }
    let o = run(&["inspect", "fixtures/kimi-code/older/v1.4-healthy.jsonl"]);
    assert!(
        stdout(&o).contains("messages:      5 (assistant 2, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
    // What the imported session sends (tests/oracle/kimi.py, the request
    // of its resume): the prompt, two calls each with its result.
    let o = run(&["inspect", "fixtures/kimi-code/older/v1.0-imported.jsonl"]);
    assert!(
        stdout(&o).contains("messages:      5 (assistant 2, tool 2, user 1)"),
        "{}",
        stdout(&o)
    );
    let text = std::fs::read_to_string(root().join("fixtures/kimi-code/older/v1.0-imported.jsonl"))
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("wire.jsonl");
    // A 1.0 message whose calls are not `function` objects: the client's
    // migration fails on it, and the reader says so.
    std::fs::write(
        &f,
        text.replacen(
            r#""function":{"name":"Think","arguments":"#,
            r#""name":"Think","x":{"arguments":"#,
            1,
        ),
    )
    .unwrap();
    let (_, doc) = lint_json(f.to_str().unwrap(), &["--fail-on", "info"]);
    assert!(
        doc["findings"]
            .to_string()
            .contains("migration of it to protocol 1.1 fails"),
        "{doc:#}"
    );
}

#[test]
fn a_repaired_copy_is_clean_and_a_second_repair_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    for copy in repair_fixtures(d.path(), REPAIRS) {
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{}: {doc:#}", copy.display());
        assert_second_repair_changes_nothing(&copy, copy.parent().unwrap());
    }
    // The result put in for the killed call is the one Kimi Code itself
    // answers it with on resume, a loop event right after the call.
    let text =
        std::fs::read_to_string(d.path().join("killed-call").join("killed-call.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 43, "{text}");
    let (call, result) = (&lines[41]["event"], &lines[42]["event"]);
    assert_eq!(result["type"], "tool.result", "{result:#}");
    assert_eq!(result["toolCallId"], call["toolCallId"], "{result:#}");
    assert_eq!(result["parentUuid"], call["uuid"], "{result:#}");
    assert_eq!(result["result"]["isError"], true, "{result:#}");
    assert!(
        result["result"]["output"]
            .as_str()
            .unwrap()
            .starts_with("Tool execution was interrupted before its result was recorded."),
        "{result:#}"
    );
    // The line mid-file goes, and the reply after it stays.
    let copy = d.path().join("corrupt-line").join("corrupt-line.jsonl");
    let o = run(&["inspect", copy.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 2, tool 1, user 3)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_in_place_repair_keeps_a_backup() {
    assert_in_place_repair_keeps_a_backup("fixtures/kimi-code/torn-tail.jsonl", "wire.jsonl");
}

/// A run without a path finds the journals where Kimi Code keeps them:
/// `$KIMI_CODE_HOME/sessions/<workdir-key>/<session>/agents/<agent>/wire.jsonl`,
/// a subagent's too.
#[test]
fn a_run_without_a_path_finds_kimi_code_journals() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let session = home.join("kc/sessions/wd_w_43553b023a14/session_1");
    for agent in ["main", "agent_1"] {
        let dir = session.join("agents").join(agent);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(root().join(HEALTHY), dir.join("wire.jsonl")).unwrap();
    }
    // Not a journal.
    std::fs::write(session.join("state.json"), "{}").unwrap();
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KIMI_CODE_HOME", home.join("kc"))
        .env("NO_COLOR", "1")
        .args(["lint", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kimi = doc["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == "kimi-code")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(kimi["found"], 2, "{kimi:#}");
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{doc:#}");
    for f in files {
        assert_eq!(f["dialect"], "kimi-code", "{f:#}");
    }
}

fn python() -> std::process::Command {
    let mut c = std::process::Command::new("python3");
    c.current_dir(root());
    c
}

/// The JSON lines a `tests/oracle/kimi.py` run printed.
fn summaries(o: &std::process::Output) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !v.is_empty() && v.iter().all(|s| s.get("error").is_none()),
        "kimi.py: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    v
}

/// The pinned Kimi Code resumes the fixtures as the profile says, and
/// every repaired copy whole (a valid request carrying every unit of the
/// copy, the journal left as it was): one kimi.py run, all the clients
/// side by side.
#[test]
#[cfg_attr(
    not(all(has_tool = "kimi-code", has_tool = "python3")),
    ignore = "needs the pinned Kimi Code and python3: scripts/test-all"
)]
fn the_pinned_kimi_code_resumes_as_the_profile_says_and_every_repaired_copy_whole() {
    let d = tempfile::tempdir().unwrap();
    let copies = repair_fixtures(&d.path().join("copies"), REPAIRS);
    let originals = [
        HEALTHY,
        "fixtures/kimi-code/killed-call.jsonl",
        "fixtures/kimi-code/torn-tail.jsonl",
        "fixtures/kimi-code/corrupt-line.jsonl",
    ];
    let o = python()
        .arg("tests/oracle/kimi.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .args(originals.iter().map(|f| root().join(f)))
        .args(&copies)
        .arg(root().join(OLDER[2].0))
        // All side by side: each client mostly waits (about 13 s each).
        .args(["--jobs", "8"])
        .output()
        .unwrap();
    let s = summaries(&o);
    assert_eq!(s.len(), originals.len() + copies.len() + 1, "{s:#?}");
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
    }
    // The imported 1.0 journal: migrated to 1.5 and rewritten so, and
    // sent with its system prompt, the 5 messages chatfsck reads, the
    // prompt and two reminders.
    let imported = &s[s.len() - 1];
    assert_eq!(imported["messages"], 9, "{imported:#}");
    assert_eq!(imported["rewritten"], true, "{imported:#}");
    let s = &s[..s.len() - 1];
    // The healthy journal and the killed call resume whole, the journal
    // left as it was (the call answered in memory only).
    for r in &s[..2] {
        assert_eq!(r["units_missing"], 0, "{r:#}");
        assert_eq!(r["rewritten"], false, "{r:#}");
    }
    // A torn last line: dropped, the journal rewritten with a backup.
    assert_eq!(s[2]["units_missing"], 0, "{:#}", s[2]);
    assert_eq!(s[2]["rewritten"], true, "{:#}", s[2]);
    assert_eq!(s[2]["backup"], true, "{:#}", s[2]);
    // A bad line mid-file: the reply after it is lost, the journal
    // rewritten without it.
    assert_eq!(s[3]["units_missing"], 1, "{:#}", s[3]);
    assert_eq!(s[3]["rewritten"], true, "{:#}", s[3]);
    // Every repaired copy resumes whole, and the client leaves it as it is.
    for r in &s[originals.len()..] {
        assert_eq!(r["units_missing"], 0, "{r:#}");
        assert_eq!(r["rewritten"], false, "{r:#}");
    }
}

/// DeepSeek's thinking mode (issue 40): the pinned session as if each step
/// had asked `deepseek-v4-pro` (the `llm.request` records' `model`), the
/// answer's step with a `think` part and the call's step without. Kimi
/// Code sends that reply without `reasoning_content` through any provider
/// but its Kimi one: an error, what DeepSeek answers.
#[test]
fn a_deepseek_reply_without_its_reasoning_is_sent_as_it_is() {
    let text = std::fs::read_to_string(root().join(HEALTHY)).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["type"] == "llm.request" {
            v["model"] = "deepseek-v4-pro".into();
        }
        // The answer's step thought before its text.
        if v["event"]["type"] == "content.part" && v["event"]["part"]["text"] == "ok" {
            let mut think = v.clone();
            think["event"]["part"] =
                serde_json::json!({"type": "think", "think": "The command printed hi."});
            think["event"]["uuid"] = "c37beade-66f2-41a5-91a8-9446bc8b0600".into();
            out.push_str(&format!("{think}\n"));
        }
        out.push_str(&format!("{v}\n"));
    }
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("wire.jsonl");
    std::fs::write(&file, out).unwrap();
    let (_, doc) = lint_json(file.to_str().unwrap(), &[]);
    assert_eq!(
        severity_rule_lines(&doc),
        ["error missing-reasoning-content@12"],
        "{doc:#}"
    );
    let notes = doc["findings"][0]["notes"].to_string();
    for want in [
        "`deepseek-v4-pro` (a DeepSeek model)",
        "Kimi Code sends an empty `reasoning_content` on such a message only through its Kimi provider",
        "DeepSeek answers `400 The `reasoning_content` in the thinking mode must be passed back to the API.`",
    ] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
}

/// The older killed call's journal with the step's reminder and its
/// `step.begin` swapped (the reminder appended while the step was open,
/// before the call), alone and with a line glued mid-file and one written
/// twice (conservation's `v1.4-killed-call.jsonl (lines-swapped,
/// line-twice, glued)`): the result put in for the call lands after the
/// reminder, an interleaved message the input did not have, and the
/// repair kept the input as it is. The reminder's line is now moved after
/// the result (a second pass, on the copy): the copy lints clean, a second
/// repair changes nothing, and the move is in the log.
fn swapped_reminder_inputs() -> Vec<(&'static str, String)> {
    let text = std::fs::read_to_string(root().join(OLDER[1].0)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[19].contains("<system-reminder>"), "{}", lines[19]);
    assert!(lines[20].contains("\"step.begin\""), "{}", lines[20]);
    let mut swapped = lines.clone();
    swapped.swap(19, 20);
    let mut damaged: Vec<String> = swapped.iter().map(|l| l.to_string()).collect();
    damaged.insert(16, damaged[16].clone());
    let next = damaged.remove(2);
    damaged[1].push_str(&next);
    vec![
        ("swapped", swapped.join("\n") + "\n"),
        ("damaged", damaged.join("\n") + "\n"),
    ]
}

#[test]
fn a_reminder_between_a_call_and_its_result_is_moved_after_it() {
    let d = tempfile::tempdir().unwrap();
    for (name, text) in swapped_reminder_inputs() {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("wire.jsonl");
        std::fs::write(&input, &text).unwrap();
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "{name}: {log:#}");
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &[]);
        assert_eq!(rc, 0, "{name}: {doc:#}");
        let moved = log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == "move-after")
            .unwrap_or_else(|| panic!("{name}: {log:#}"));
        assert!(
            moved["before"]
                .as_str()
                .unwrap()
                .contains("<system-reminder>"),
            "{name}: {moved:#}"
        );
        // The reminder follows the result put in for the call.
        let out = std::fs::read_to_string(&copy).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        let at = |needle: &str| lines.iter().rposition(|l| l.contains(needle)).unwrap();
        assert!(
            at("Tool execution was interrupted")
                < at("Auto permission mode is active. Tool approvals wi"),
            "{name}: {out}"
        );
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}

/// The pinned Kimi Code resumes the copies of
/// [`a_reminder_between_a_call_and_its_result_is_moved_after_it`] whole:
/// a valid request carrying every unit of the copy (the journal, of
/// protocol 1.4, is migrated to 1.5 and rewritten so, as every older one).
#[test]
#[cfg_attr(
    not(all(has_tool = "kimi-code", has_tool = "python3")),
    ignore = "needs the pinned Kimi Code and python3: scripts/test-all"
)]
fn the_pinned_kimi_code_resumes_the_moved_reminder_whole() {
    let d = tempfile::tempdir().unwrap();
    let mut copies = Vec::new();
    for (name, text) in swapped_reminder_inputs() {
        let dir = d.path().join("copies").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("wire.jsonl");
        std::fs::write(&input, text).unwrap();
        copies.push(repair_logged(&input, &dir).0);
    }
    let o = python()
        .arg("tests/oracle/kimi.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .args(&copies)
        .args(["--jobs", "2"])
        .output()
        .unwrap();
    let s = summaries(&o);
    assert_eq!(s.len(), copies.len(), "{s:#?}");
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["units_missing"], 0, "{r:#}");
    }
}

/// The pinned Kimi Code writes a fresh session offline (tests/oracle/kimi.py
/// fresh: a prompt the mock answers with a `Bash` call, Kimi Code runs it
/// and the mock answers `ok`): chatfsck reads every message of its journal
/// (each user message appended to the context, each step, each result) and
/// finds nothing. When a client bump changes what it writes, this fails
/// first.
#[test]
#[cfg_attr(
    not(all(has_tool = "kimi-code", has_tool = "python3")),
    ignore = "needs the pinned Kimi Code and python3: scripts/test-all"
)]
fn a_fresh_session_of_the_pinned_kimi_code_reads_whole_and_clean() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("fresh");
    let o = python()
        .arg("tests/oracle/kimi.py")
        .arg("fresh")
        .arg(&out)
        .output()
        .unwrap();
    let s = &summaries(&o)[0];
    assert_eq!(s["version"], "2.1.0", "{s:#}");
    assert!(
        s["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["rc"] == 0 && r["timed_out"] == false),
        "{s:#}"
    );
    let journal = out.join("healthy.wire.jsonl");
    let (rc, doc) = lint_json(journal.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "kimi-code", "{doc:#}");
    // Every context record that makes a message is one read: the user
    // messages appended, each step the model took, each tool result.
    let text = std::fs::read_to_string(&journal).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |ty: &str, event: Option<&str>| {
        records
            .iter()
            .filter(|r| r["type"] == ty && event.is_none_or(|e| r["event"]["type"] == e))
            .count() as u64
    };
    let users = count("context.append_message", None);
    let steps = count("context.append_loop_event", Some("step.begin"));
    let results = count("context.append_loop_event", Some("tool.result"));
    assert!(users >= 1 && steps >= 2 && results >= 1, "{text}");
    assert_eq!(
        doc["files"][0]["messages"].as_u64().unwrap(),
        users + steps + results,
        "{doc:#}"
    );
    assert_eq!(doc["files"][0]["tool_calls"], 1, "{doc:#}");
    assert_eq!(doc["files"][0]["tool_results"], 1, "{doc:#}");
}
