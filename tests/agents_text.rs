//! Agent apps whose histories are text files: Cline and Roo Code tasks,
//! GitHub Copilot CLI `events.jsonl`, goose's legacy `.jsonl`, and the
//! formats chatfsck recognises but does not read (`fixtures/unsupported`).
//! Every fixture of these folders: what `inspect` counts, what `lint`
//! finds and where, the exit codes, and repair round trips. Then the
//! directory walk: nothing passes unread.

mod common;
use common::*;

use serde_json::Value;

const CLINE: &str =
    "fixtures/cline/home/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks";
const ROO: &str =
    "fixtures/roo-code/home/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks";
const COPILOT: &str = "fixtures/copilot-cli/home/.copilot/session-state";
const GOOSE: &str = "fixtures/goose/home/.local/share/goose/sessions";

/// A task or session, what it holds (messages, calls, results…), the
/// findings expected and the exit code.
type Case<'a, C> = (&'a str, C, &'a [&'a str], i32);
/// Messages, calls, results, meta records, corrupt records.
type Counts5 = (u64, u64, u64, u64, u64);

fn task(root: &str, id: &str) -> String {
    format!("{root}/{id}/api_conversation_history.json")
}

/// `inspect --format json`: (dialect, messages, tool calls, tool results,
/// meta records, corrupt records).
fn counts(path: &str) -> (String, u64, u64, u64, u64, u64) {
    let o = run(&["inspect", "--format", "json", path]);
    assert_eq!(code(&o), 0, "{path}: {}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &doc["conversations"][0];
    let n = |k: &str| c[k].as_u64().unwrap();
    (
        doc["dialect"].as_str().unwrap().to_string(),
        n("messages"),
        n("tool_calls"),
        n("tool_results"),
        n("meta_records"),
        n("corrupt_records"),
    )
}

/// `rule:severity@line#message` for every finding, in report order.
fn findings(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{}@{}#{}",
                f["rule"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
                f["location"]["line"],
                f["message"]
            )
        })
        .collect()
}

fn one_line_error(o: &std::process::Output, path: &str, says: &[&str]) {
    assert_eq!(code(o), 2, "stdout: {} stderr: {}", stdout(o), stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(path),
        "{err}"
    );
    for s in says {
        assert!(lines[0].contains(s), "says `{s}`: {err}");
    }
}

#[test]
fn cline_tasks_count_and_lint_as_the_readme_says() {
    let cases: &[Case<'_, (u64, u64, u64)>] = &[
        // XML-tool era: the text result answers XML, not a structured call.
        ("1757844000000", (4, 0, 0), &[], 0),
        // Accepted attempt_completion: info, never an orphan.
        (
            "1760000300000",
            (6, 3, 2),
            &["trailing-completion-call:info@1#5"],
            0,
        ),
        // Cline answers an unanswered call itself on every request
        // (`ensureToolResultsFollowToolUse`): a warning.
        (
            "1760001200000",
            (2, 1, 0),
            &["orphan-tool-call:warning@1#1"],
            0,
        ),
        (
            "1760002100000",
            (5, 2, 1),
            &[
                "orphan-tool-call:warning@1#1",
                "orphan-tool-result:error@1#2",
                "trailing-completion-call:info@1#3",
            ],
            1,
        ),
        (
            "1760003000000",
            (0, 0, 0),
            &["empty-history:error@null#null"],
            1,
        ),
        // The second call of one message answered in text form
        // (`formatResponse.toolAlreadyUsed`): answered, not an orphan.
        (
            "1760004000000",
            (6, 4, 3),
            &["trailing-completion-call:info@1#5"],
            0,
        ),
    ];
    for (id, (messages, calls, results), expected, exit) in cases {
        let path = task(CLINE, id);
        let (dialect, m, c, r, _, corrupt) = counts(&path);
        assert_eq!(dialect, "cline", "{id}");
        assert_eq!((m, c, r, corrupt), (*messages, *calls, *results, 0), "{id}");
        let (c, doc) = lint_json(&path, &[]);
        assert_eq!(findings(&doc), *expected, "{id}");
        assert_eq!(c, *exit, "{id}");
    }
}

#[test]
fn roo_tasks_count_and_lint_as_the_readme_says() {
    let cases: &[Case<'_, (u64, u64, u64)>] = &[
        (
            "0199c7a0-5a10-7c3e-9b41-2d6f0e8a1c01",
            (4, 3, 2),
            &["trailing-completion-call:info@1#3"],
            0,
        ),
        (
            "0199c7a8-11f0-72aa-8d3e-9b0c4f5e6a02",
            (3, 2, 1),
            &["orphan-tool-call:error@1#1"],
            1,
        ),
        (
            "0199c7b2-7e44-7d01-a5c6-0f1e2d3c4b03",
            (6, 3, 3),
            &[
                "orphan-tool-result:error@1#4",
                "trailing-completion-call:info@1#5",
            ],
            1,
        ),
        (
            "0199c7bc-2a9d-7f55-bc10-4e3f2a1b0c04",
            (0, 0, 0),
            &["empty-history:error@null#null"],
            1,
        ),
    ];
    for (id, (messages, calls, results), expected, exit) in cases {
        let path = task(ROO, id);
        let (dialect, m, c, r, _, _) = counts(&path);
        assert_eq!(dialect, "roo-code", "{id}");
        assert_eq!((m, c, r), (*messages, *calls, *results), "{id}");
        let (c, doc) = lint_json(&path, &[]);
        assert_eq!(findings(&doc), *expected, "{id}");
        assert_eq!(c, *exit, "{id}");
    }
    // Roo's own answer to an empty history is in the finding.
    let (_, doc) = lint_json(&task(ROO, "0199c7bc-2a9d-7f55-bc10-4e3f2a1b0c04"), &[]);
    let notes = doc["findings"][0]["notes"].to_string();
    assert!(
        notes.contains("No existing API conversation history"),
        "{notes}"
    );
}

#[test]
fn findings_in_a_one_line_array_point_at_their_own_element() {
    let path = task(CLINE, "1760002100000");
    let (_, doc) = lint_json(&path, &[]);
    let text = std::fs::read_to_string(root().join(&path)).unwrap();
    for f in doc["findings"].as_array().unwrap() {
        let l = &f["location"];
        let (a, b) = (
            l["byte_start"].as_u64().unwrap() as usize,
            l["byte_end"].as_u64().unwrap() as usize,
        );
        let element: Value = serde_json::from_str(&text[a..b]).unwrap();
        let id = f["ids"][0].as_str().unwrap();
        assert!(element.to_string().contains(id), "{id} not in {element}");
    }
    // The human report shows each label's own element, not line 1's first.
    let o = run(&["lint", &path]);
    let out = stdout(&o);
    assert!(
        out.contains(r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01Zz9Y"#),
        "{out}"
    );
}

#[test]
fn ui_messages_is_refused_as_the_ui_log() {
    for (base, app) in [(CLINE, "Cline"), (ROO, "Roo Code")] {
        let dir = std::fs::read_dir(root().join(base))
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.path().join("ui_messages.json").is_file())
            .unwrap();
        let rel = format!(
            "{base}/{}/ui_messages.json",
            dir.file_name().to_string_lossy()
        );
        for cmd in ["lint", "inspect"] {
            let o = run(&[cmd, &rel]);
            one_line_error(&o, &rel, &[app, "UI log", "not the API history"]);
        }
    }
}

/// A task folder with one history, in a temporary directory.
fn temp_task(history: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("saoudrizwan.claude-dev/tasks/1760009000000");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("api_conversation_history.json");
    std::fs::write(&p, history).unwrap();
    (d, p)
}

/// Native calls answered by text-form results (older Cline): every call
/// has its result, nothing is an orphan.
const TEXT_RESULTS: &str = concat!(
    r#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}]},"#,
    r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"read_file","input":{"path":"a.ts"}},{"type":"tool_use","id":"toolu_B","name":"read_file","input":{"path":"b.ts"}}]},"#,
    r#"{"role":"user","content":[{"type":"text","text":"[read_file for 'a.ts'] Result:"},{"type":"text","text":"A"},{"type":"text","text":"[read_file for 'b.ts'] Result:"},{"type":"text","text":"B"}]},"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"Done."}]}]"#
);

/// The same, with one of two calls unanswered.
const ONE_TEXT_RESULT: &str = concat!(
    r#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}]},"#,
    r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"read_file","input":{"path":"a.ts"}},{"type":"tool_use","id":"toolu_B","name":"execute_command","input":{"command":"npm test"}}]},"#,
    r#"{"role":"user","content":[{"type":"text","text":"[read_file for 'a.ts'] Result:"},{"type":"text","text":"A"}]},"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"Done."}]}]"#
);

#[test]
fn text_form_results_answer_their_calls() {
    let (_d, p) = temp_task(TEXT_RESULTS);
    let path = p.to_str().unwrap();
    let (dialect, m, c, r, _, _) = counts(path);
    assert_eq!((dialect.as_str(), m, c, r), ("cline", 4, 2, 2));
    let (c, doc) = lint_json(path, &[]);
    assert_eq!(findings(&doc), Vec::<String>::new());
    assert_eq!(c, 0);
    // Nothing to repair: the copy is the input.
    let out = p.with_file_name("copy.json");
    let o = run(&["repair", path, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    if out.exists() {
        assert_eq!(std::fs::read(&out).unwrap(), TEXT_RESULTS.as_bytes());
    }
}

#[test]
fn repair_never_puts_a_placeholder_before_a_real_text_result() {
    let (_d, p) = temp_task(ONE_TEXT_RESULT);
    let path = p.to_str().unwrap();
    let (c, doc) = lint_json(path, &[]);
    // Cline answers the call itself on every request: a warning.
    assert_eq!(c, 0);
    assert_eq!(findings(&doc), vec!["orphan-tool-call:warning@1#1"]);
    assert_eq!(doc["findings"][0]["ids"][0], "toolu_B");
    let out = p.with_file_name("repaired.json");
    let o = run(&["repair", path, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains('\n'),
        "a compact array stays compact: {text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let blocks = v[2]["content"].as_array().unwrap();
    // The real text result and its content first, untouched; then the
    // placeholder for the one call that had none.
    assert_eq!(blocks[0]["text"], "[read_file for 'a.ts'] Result:");
    assert_eq!(blocks[1]["text"], "A");
    assert_eq!(blocks.len(), 3, "{text}");
    assert_eq!(blocks[2]["type"], "tool_result");
    assert_eq!(blocks[2]["tool_use_id"], "toolu_B");
    // No placeholder for the answered call.
    assert!(!text.contains(r#""tool_use_id":"toolu_A""#), "{text}");
    // The copy lints clean, and a second repair changes nothing.
    let (c, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!((c, findings(&doc)), (0, vec![]));
    let again = p.with_file_name("again.json");
    let o = run(&[
        "repair",
        out.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0);
    if again.exists() {
        assert_eq!(std::fs::read(&again).unwrap(), text.as_bytes());
    }
}

#[test]
fn plain_anthropic_arrays_stay_with_provider_shaped_messages() {
    let d = tempfile::tempdir().unwrap();
    // No text-form result, no Roo key, not a task file name: Anthropic.
    let plain = d.path().join("history.json");
    std::fs::write(
        &plain,
        r#"[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read_file","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[read_file for 'a'] Result: x"}]}]"#,
    )
    .unwrap();
    let (_, doc) = lint_json(plain.to_str().unwrap(), &[]);
    assert_eq!(doc["files"][0]["dialect"], "anthropic");
    // A copy of a task under another name is still recognised by its
    // text-form results.
    let copy = d.path().join("copy.json");
    std::fs::write(&copy, ONE_TEXT_RESULT).unwrap();
    let (_, doc) = lint_json(copy.to_str().unwrap(), &[]);
    assert_eq!(doc["files"][0]["dialect"], "cline");
}

#[test]
fn cline_repairs_round_trip_and_leave_the_task_folder_alone() {
    for id in ["1760001200000", "1760002100000"] {
        let input = task(CLINE, id);
        let before = fingerprint(&root().join(&input));
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("api_conversation_history.json");
        let log = d.path().join("log.json");
        let o = run(&[
            "repair",
            &input,
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{id}: {}", stderr(&o));
        assert_eq!(
            before,
            fingerprint(&root().join(&input)),
            "{id}: input touched"
        );
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains('\n'), "{id}: compact, as Cline writes it");
        let v: Vec<Value> = serde_json::from_str(&text).unwrap();
        // Extra keys (ts, id, modelInfo, metrics) are kept on every element.
        let orig: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(root().join(&input)).unwrap()).unwrap();
        for (a, b) in orig.iter().zip(&v) {
            for k in ["ts", "id", "modelInfo", "metrics"] {
                assert_eq!(a.get(k), b.get(k), "{id}: `{k}` changed");
            }
        }
        // Only the trailing completion call (info) is left.
        let (c, doc) = lint_json(out.to_str().unwrap(), &[]);
        assert_eq!(c, 0, "{id}: {doc:#}");
        assert!(
            findings(&doc)
                .iter()
                .all(|f| f.starts_with("trailing-completion-call:info")),
            "{id}: {:?}",
            findings(&doc)
        );
        let again = d.path().join("again.json");
        let o = run(&[
            "repair",
            out.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0);
        if again.exists() {
            assert_eq!(std::fs::read_to_string(&again).unwrap(), text, "{id}");
        }
        let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
        assert!(!log.to_string().is_empty());
    }
    // The orphan at the end: a new user message holds the placeholder.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("copy.json");
    run(&[
        "repair",
        &task(CLINE, "1760001200000"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let v: Vec<Value> = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v[2]["role"], "user");
    assert_eq!(v[2]["content"][0]["type"], "tool_result");
}

#[test]
fn an_empty_history_is_not_repaired_into_anything() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("copy.json");
    let o = run(&[
        "repair",
        &task(CLINE, "1760003000000"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code(&o), 1, "{}", stderr(&o));
    if out.exists() {
        assert_eq!(std::fs::read(&out).unwrap(), b"[]");
    }
}

/// Issue 35, defect 9: detection went by file name or text-form marks, so
/// a repaired copy written under another name read as a plain Anthropic
/// array: a healthy task's accepted `attempt_completion` (info) became an
/// `orphan-tool-call` error that a second repair "fixed", and an emptied
/// task (`[]`) was copied with exit 0 into a file chatfsck then refused
/// as no history. A copy reads back as what it was, or is not written.
#[test]
fn a_repaired_task_reads_back_as_a_task_under_any_name() {
    for id in ["1760000300000", "1760001200000", "1760002100000"] {
        let input = task(CLINE, id);
        let d = tempfile::tempdir().unwrap();
        // The copy under the task's own name, and under another.
        let own = d.path().join("api_conversation_history.json");
        let other = d.path().join("fixed.json");
        for out in [&own, &other] {
            let o = run(&["repair", &input, "-o", out.to_str().unwrap()]);
            assert_eq!(code(&o), 0, "{id}: {}", stderr(&o));
        }
        assert_eq!(
            std::fs::read(&own).unwrap(),
            std::fs::read(&other).unwrap(),
            "{id}"
        );
        let (c_own, own_doc) = lint_json(own.to_str().unwrap(), &[]);
        let (c_other, other_doc) = lint_json(other.to_str().unwrap(), &[]);
        assert_eq!(other_doc["files"][0]["dialect"], "cline", "{id}");
        assert_eq!(
            (c_other, findings(&other_doc)),
            (c_own, findings(&own_doc)),
            "{id}: the copy reads otherwise under another name"
        );
        assert_eq!(c_other, 0, "{id}: {other_doc:#}");
        // A second repair of the renamed copy changes nothing.
        let again = d.path().join("again.json");
        let o = run(&[
            "repair",
            other.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(code(&o), 0, "{id}: {}", stderr(&o));
        let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(rep["edits"], serde_json::json!([]), "{id}: {rep:#}");
    }
    // `[]` tells nothing by its content: under another name a copy would
    // read as no history. The repair says so, names the task's file name,
    // exits 2 and writes nothing.
    let input = task(CLINE, "1760003000000");
    let d = tempfile::tempdir().unwrap();
    let other = d.path().join("fixed.json");
    let o = run(&["repair", &input, "-o", other.to_str().unwrap()]);
    one_line_error(&o, &input, &["api_conversation_history.json", "fixed.json"]);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    // Under the task's own name the copy reads back as it was.
    let own = d.path().join("api_conversation_history.json");
    let o = run(&["repair", &input, "-o", own.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (_, before) = lint_json(&input, &[]);
    let (_, after) = lint_json(own.to_str().unwrap(), &[]);
    assert_eq!(findings(&after), findings(&before));
    assert_eq!(findings(&after)[0], "empty-history:error@null#null");
}

#[test]
fn copilot_cli_sessions_count_and_lint_as_the_readme_says() {
    let cases: &[Case<'_, Counts5>] = &[
        (
            "3c9d1e7a-58b2-4f60-9a1d-7e2b4c6f8a01",
            (5, 2, 2, 5, 0),
            &[],
            0,
        ),
        // What Copilot CLI 1.0.102 heals on resume is a warning
        // (tests/copilot_cli.rs has the client judge it).
        (
            "7a4f2c90-1d3e-4b8a-b6c5-0e9f8d7c6b02",
            (2, 1, 0, 3, 0),
            &["orphan-tool-call:warning@4#1"],
            0,
        ),
        (
            "b18e5d3c-9a70-4c2f-8e14-6d5b3a2f1c03",
            (5, 1, 2, 4, 0),
            &["orphan-tool-result:error@7#3"],
            1,
        ),
        (
            "e62a0b9f-4c1d-4e3b-9f72-8a1c5d4e3f04",
            (2, 1, 0, 3, 1),
            &[
                "orphan-tool-call:warning@4#1",
                "corrupt-record:warning@6#null",
            ],
            0,
        ),
    ];
    for (id, (messages, calls, results, meta, corrupt), expected, exit) in cases {
        let path = format!("{COPILOT}/{id}/events.jsonl");
        let (dialect, m, c, r, me, co) = counts(&path);
        assert_eq!(dialect, "copilot-cli", "{id}");
        assert_eq!(
            (m, c, r, me, co),
            (*messages, *calls, *results, *meta, *corrupt),
            "{id}"
        );
        let (c, doc) = lint_json(&path, &[]);
        assert_eq!(findings(&doc), *expected, "{id}");
        assert_eq!(c, *exit, "{id}");
        assert_eq!(doc["files"][0]["conversations"], 1);
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["fixable"] == true),
            "{doc:#}"
        );
    }
    // The session id comes from session.start.
    let (_, doc) = lint_json(
        &format!("{COPILOT}/7a4f2c90-1d3e-4b8a-b6c5-0e9f8d7c6b02/events.jsonl"),
        &[],
    );
    assert_eq!(
        doc["findings"][0]["conversation"],
        "7a4f2c90-1d3e-4b8a-b6c5-0e9f8d7c6b02"
    );
    // Repaired in Copilot CLI's own format: the torn result dropped, the
    // call answered as the client answers it, the copy clean.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("events.jsonl");
    let input = format!("{COPILOT}/e62a0b9f-4c1d-4e3b-9f72-8a1c5d4e3f04/events.jsonl");
    let o = run(&["repair", &input, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (c, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!((c, findings(&doc)), (0, Vec::<String>::new()), "{doc:#}");
}

#[test]
fn goose_legacy_sessions_keep_their_metadata_line() {
    let healthy = format!("{GOOSE}/20250914_100211.jsonl");
    assert_eq!(counts(&healthy), ("goose".into(), 4, 1, 1, 1, 0));
    let (c, doc) = lint_json(&healthy, &[]);
    assert_eq!((c, findings(&doc)), (0, vec![]));

    let torn = format!("{GOOSE}/20250914_101702.jsonl");
    assert_eq!(counts(&torn), ("goose".into(), 3, 1, 1, 1, 1));
    let (c, doc) = lint_json(&torn, &[]);
    assert_eq!(
        (c, findings(&doc)),
        (1, vec!["corrupt-record:error@5#null".to_string()])
    );
    // Repair drops the torn line only; line 1 and the others are kept byte
    // for byte; a second repair changes nothing.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("s.jsonl");
    let o = run(&["repair", &torn, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let input = std::fs::read_to_string(root().join(&torn)).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    let kept: Vec<&str> = input.lines().take(4).collect();
    assert_eq!(copy, format!("{}\n", kept.join("\n")));
    let (c, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!((c, findings(&doc)), (0, vec![]));
}

#[test]
fn goose_orphans_say_goose_drops_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("20250914_120000.jsonl");
    std::fs::write(
        &p,
        concat!(
            r#"{"working_dir":"/w","description":"x","schedule_id":null,"message_count":3}"#, "\n",
            r#"{"role":"user","created":1,"content":[{"type":"text","text":"run it"}]}"#, "\n",
            r#"{"role":"assistant","created":2,"content":[{"type":"toolRequest","id":"t1","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"ls"}}}}]}"#, "\n",
            r#"{"role":"user","created":3,"content":[{"type":"toolResponse","id":"t9","toolResult":{"status":"success","value":[]}},{"type":"text","text":"and?"}]}"#, "\n",
        ),
    )
    .unwrap();
    let (c, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert_eq!(c, 1);
    assert_eq!(
        findings(&doc),
        vec!["orphan-tool-call:error@3#1", "orphan-tool-result:error@4#2"]
    );
    for f in doc["findings"].as_array().unwrap() {
        assert!(
            f["notes"].to_string().contains("goose drops"),
            "{}",
            f["notes"]
        );
    }
    // The stray response is removed (goose's own shape); the orphan request
    // is not answered with an invented result.
    assert_eq!(doc["findings"][1]["fixable"], true);
    assert_eq!(doc["findings"][0]["fixable"], false);
    let out = d.path().join("copy.jsonl");
    let o = run(&["repair", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let copy = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = copy.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with(r#"{"working_dir""#));
    assert!(
        !lines[3].contains("t9") && lines[3].contains("and?"),
        "{copy}"
    );
}

#[test]
fn unsupported_formats_are_named_and_refused() {
    for (path, app) in [
        ("fixtures/unsupported/aider/.aider.chat.history.md", "Aider"),
        (
            "fixtures/unsupported/openhands/trajectory.json",
            "OpenHands",
        ),
        (
            "fixtures/unsupported/swe-agent/shop-api__shop-api-1.traj",
            "SWE-agent",
        ),
        // Taken for a Claude Code session with no message ("no problems
        // found") before it was recognised.
        ("fixtures/unsupported/kimi-code/wire.jsonl", "Kimi Code"),
    ] {
        for cmd in ["lint", "inspect"] {
            let o = run(&[cmd, path]);
            one_line_error(&o, path, &[app, "not support"]);
            assert!(
                o.stdout.is_empty() || !stdout(&o).contains("no problems"),
                "{path}"
            );
        }
    }
}

/// A directory with a healthy history, plus `extra` files.
fn dir_with(extra: &[(&str, &[u8])]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join(format!("{GOOSE}/20250914_100211.jsonl")),
        d.path().join("good.jsonl"),
    )
    .unwrap();
    for (name, bytes) in extra {
        let p = d.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    d
}

#[test]
fn a_directory_scan_with_an_unreadable_history_exits_2() {
    // A log chatfsck cannot read, beside a healthy one.
    let d = dir_with(&[("sessions/unknown.jsonl", b"{\"foo\":1}\n{\"bar\":2}\n")]);
    let dir = d.path().to_str().unwrap();
    let (c, doc) = lint_json(dir, &[]);
    assert_eq!(c, 2, "{doc:#}");
    assert_eq!(doc["summary"]["unread"], 1);
    assert_eq!(doc["summary"]["files"], 1);
    assert!(doc["errors"][0].as_str().unwrap().contains("unknown.jsonl"));
    // Human: says what was not read; "no problems" only about what was.
    let o = run(&["lint", dir]);
    assert_eq!(code(&o), 2);
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert!(
        last.contains("no problems found in 1 file") && last.contains("1 input could not be read"),
        "{last}"
    );
    // SARIF: a notification counts it.
    let o = run(&["lint", "--format", "sarif", dir]);
    assert_eq!(code(&o), 2);
    assert!(
        stdout(&o).contains("1 input was not read"),
        "{}",
        stdout(&o)
    );
    // The opt-out: listed, counted, exit 0.
    let (c, doc) = lint_json(dir, &["--skip-unreadable"]);
    assert_eq!(c, 0);
    assert_eq!(doc["summary"]["unread"], 1);
    assert_eq!(doc["errors"].as_array().unwrap().len(), 1);
    // … also from chatfsck.toml.
    let cfg = d.path().join("chatfsck.toml");
    std::fs::write(&cfg, "skip-unreadable = true\n").unwrap();
    let (c, _) = lint_json(dir, &["--config", cfg.to_str().unwrap()]);
    assert_eq!(c, 0);
    // A named input that cannot be read always exits 2.
    let named = d.path().join("sessions/unknown.jsonl");
    let (c, _) = lint_json(named.to_str().unwrap(), &["--skip-unreadable"]);
    assert_eq!(c, 2);
}

#[test]
fn a_directory_of_only_unreadable_files_is_never_clean() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/unsupported/swe-agent/shop-api__shop-api-1.traj"),
        d.path().join("a.traj"),
    )
    .unwrap();
    std::fs::copy(
        root().join("fixtures/unsupported/swe-agent/shop-api__shop-api-1.traj"),
        d.path().join("b.traj"),
    )
    .unwrap();
    let o = run(&["lint", d.path().to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let out = stdout(&o);
    assert!(!out.contains("no problems"), "{out}");
    assert!(out.contains("nothing was read"), "{out}");
    assert!(out.contains("2 inputs could not be read"), "{out}");
}

#[test]
fn files_that_do_not_look_like_histories_are_skipped_not_unread() {
    let d = dir_with(&[
        ("package.json", b"{\"name\": \"x\"}"),
        (
            "task/ui_messages.json",
            b"[{\"ts\":1,\"type\":\"say\",\"say\":\"task\",\"text\":\"hi\"}]",
        ),
        ("task/task_metadata.json", b"{\"files_in_context\":[]}"),
    ]);
    let (c, doc) = lint_json(d.path().to_str().unwrap(), &[]);
    assert_eq!(c, 0, "{doc:#}");
    assert_eq!(doc["summary"]["unread"], 0);
    let skipped: Vec<String> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped.iter().any(|r| r.contains("UI log")), "{skipped:?}");
}

#[test]
fn the_app_fixture_folders_scan_with_what_is_not_read_listed() {
    // Cline, Roo Code, Copilot CLI, goose (legacy JSONL and sessions.db):
    // every history read, the rest skipped.
    for dir in [
        "fixtures/cline",
        "fixtures/roo-code",
        "fixtures/copilot-cli",
        "fixtures/goose",
    ] {
        let (c, doc) = lint_json(dir, &[]);
        assert_eq!(doc["summary"]["unread"], 0, "{dir}: {doc:#}");
        assert_eq!(c, 1, "{dir}");
    }
    let (_, doc) = lint_json("fixtures/goose", &[]);
    assert_eq!(doc["summary"]["files"], 3);
}

/// Every history of these app folders (the files a walk reads).
fn app_histories() -> Vec<String> {
    let mut out = Vec::new();
    for base in [CLINE, ROO, COPILOT, GOOSE] {
        for e in walkdir::WalkDir::new(root().join(base)).sort_by_file_name() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy();
            if name == "api_conversation_history.json"
                || name == "events.jsonl"
                || name.ends_with(".jsonl")
            {
                let rel = e.path().strip_prefix(root()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// A short snapshot name: the app and the task or session.
fn snap_name(path: &str) -> String {
    let app = path.split('/').nth(1).unwrap();
    let p = std::path::Path::new(path);
    let id = if p.file_name().unwrap() == "api_conversation_history.json"
        || p.file_name().unwrap() == "events.jsonl"
    {
        p.parent().unwrap().file_name().unwrap().to_string_lossy()
    } else {
        p.file_name().unwrap().to_string_lossy()
    };
    format!("{app}__{id}")
}

#[test]
fn snapshots_of_lint_for_every_app_history() {
    let files = app_histories();
    assert_eq!(files.len(), 6 + 4 + 4 + 2, "{files:?}");
    for f in files {
        let name = snap_name(&f);
        let human = stdout(&run(&["lint", &f]));
        insta::assert_snapshot!(format!("agents_lint_human__{name}"), human);
        let json = stdout(&run(&["lint", "--format", "json", &f]));
        insta::assert_snapshot!(format!("agents_lint_json__{name}"), json);
    }
}

/// Found by the repair_file fuzz target: a goose session whose first line
/// (its metadata) was overwritten was read as an OpenAI chat, where goose's
/// `toolResponse` blocks mean nothing, so a stray result went unseen; its
/// repair, which dropped the broken line, then read as goose and showed
/// it. A damaged first line no longer decides the format: the first record
/// that parses does.
#[test]
fn a_goose_session_with_its_first_line_overwritten_is_still_goose() {
    let src = std::fs::read_to_string(root().join(GOOSE).join("20250914_100211.jsonl")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    lines[0] = format!("{}\u{0}\u{0}garbage", &lines[0][..lines[0].len() / 2]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("20250914_100211.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let (code, doc) = lint_json(p.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "goose", "{doc:#}");
    assert_eq!(findings(&doc), ["corrupt-record:error@1#null"], "{doc:#}");
}

/// A Roo Code task after a context condense: the messages the summary
/// replaced (`condenseParent` naming its `condenseId`) are kept on disk and
/// never sent (`getEffectiveApiHistory`), and a result after the summary
/// whose call was condensed away is dropped from the request. Neither is a
/// finding. A tag naming a summary that is not there hides nothing.
#[test]
fn roo_condensed_messages_are_not_sent_and_not_reported() {
    let condensed = concat!(
        r#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}],"ts":1,"condenseParent":"c1"},"#,
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_GONE","name":"read_file","input":{"path":"a.ts"}},{"type":"tool_use","id":"toolu_LATE","name":"read_file","input":{"path":"b.ts"}}],"ts":2,"condenseParent":"c1"},"#,
        r#"{"role":"user","content":[{"type":"text","text":"Summary: read a.ts; b.ts is being read."}],"ts":3,"isSummary":true,"condenseId":"c1"},"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_LATE","content":"B"},{"type":"text","text":"go on"}],"ts":4},"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"Done."}],"ts":5}]"#
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d
        .path()
        .join("rooveterinaryinc.roo-cline/tasks/0199c7c6-0000-7000-8000-000000000001");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("api_conversation_history.json");
    std::fs::write(&p, condensed).unwrap();
    let path = p.to_str().unwrap();
    let (c, doc) = lint_json(path, &[]);
    assert_eq!(findings(&doc), Vec::<String>::new(), "{doc:#}");
    assert_eq!(c, 0);
    let (dialect, messages, calls, results, meta, _) = counts(path);
    assert_eq!(
        (dialect.as_str(), messages, calls, results, meta),
        ("roo-code", 3, 0, 0, 2)
    );
    // Without its summary, the tag hides nothing: the unanswered call and
    // the late result are what Roo sends.
    std::fs::write(&p, condensed.replace(r#""isSummary":true,"#, "")).unwrap();
    let (c, doc) = lint_json(path, &[]);
    assert_eq!(c, 1, "{doc:#}");
    assert!(
        findings(&doc)
            .iter()
            .any(|f| f.starts_with("orphan-tool-call")),
        "{doc:#}"
    );
}

/// A Copilot CLI event whose text holds a lone surrogate escape (an
/// emoji cut in two): Copilot CLI runs on Node, whose `JSON.parse` reads
/// the line. lint said the line was not valid JSON (a `corrupt-record`
/// error, the prompt lost); it reads the prompt, the escape as U+FFFD,
/// and says so in a `lone-surrogate` warning.
#[test]
fn a_copilot_cli_event_with_a_lone_surrogate_escape_is_read() {
    let id = "3c9d1e7a-58b2-4f60-9a1d-7e2b4c6f8a01";
    let text =
        std::fs::read_to_string(root().join(format!("{COPILOT}/{id}/events.jsonl"))).unwrap();
    assert!(text.contains(r#""content":"Which routes"#));
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(id);
    std::fs::create_dir_all(&session).unwrap();
    let path = session.join("events.jsonl");
    std::fs::write(
        &path,
        text.replacen(
            r#""content":"Which routes"#,
            r#""content":"Which \ud83droutes"#,
            1,
        ),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (dialect, messages, calls, results, meta, corrupt) = counts(path);
    assert_eq!(dialect, "copilot-cli");
    assert_eq!((messages, calls, results, meta, corrupt), (5, 2, 2, 5, 0));
    let (code, doc) = lint_json(path, &[]);
    assert_eq!(findings(&doc), ["lone-surrogate:warning@2#null"]);
    assert_eq!(code, 0, "{doc:#}");
    let inspect = run(&["inspect", "--format", "json", path]);
    assert!(
        stdout(&inspect).contains("Which \u{fffd}routes"),
        "{}",
        stdout(&inspect)
    );
}

/// Drift (issue 37): a Copilot CLI log whose `session.start` declares an
/// events schema other than 1 (the one 1.0.6 to 1.0.102 write) is read as
/// version 1's and says so, never as clean; version 1 says nothing.
#[test]
fn a_copilot_cli_events_schema_it_does_not_know_is_reported() {
    let id = "3c9d1e7a-58b2-4f60-9a1d-7e2b4c6f8a01";
    let text =
        std::fs::read_to_string(root().join(format!("{COPILOT}/{id}/events.jsonl"))).unwrap();
    assert!(text.contains(r#""version":1,"#));
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(id);
    std::fs::create_dir_all(&session).unwrap();
    let path = session.join("events.jsonl");
    std::fs::write(
        &path,
        text.replacen(r#""version":1,"#, r#""version":2,"#, 1),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (_, doc) = lint_json(path, &[]);
    assert_eq!(
        findings(&doc),
        ["unknown-record-type:warning@1#null"],
        "{doc:#}"
    );
    assert!(
        doc["findings"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("session.start version 2 is not read: "),
        "{doc:#}"
    );
    // Still read as version 1's: every message counted.
    let (dialect, messages, ..) = counts(path);
    assert_eq!((dialect.as_str(), messages), ("copilot-cli", 5));
    let (_, doc) = lint_json(&format!("{COPILOT}/{id}/events.jsonl"), &[]);
    assert_eq!(findings(&doc), Vec::<String>::new(), "{doc:#}");
}

const CLINE4: &str = "fixtures/cline4/home/.cline/data/sessions";

fn session4(id: &str) -> String {
    format!("{CLINE4}/{id}/{id}.messages.json")
}

/// Cline 4's session store (`~/.cline/data/sessions/<id>/<id>.messages.json`
/// and a sub-agent's `<agentId>.messages.json`): read as `cline-4`, every
/// message counted, each finding saying what the client does with it.
#[test]
fn cline4_sessions_count_and_lint_as_the_client_reads_them() {
    let healthy = session4("1784100000000_a1b2c");
    let sub = format!("{CLINE4}/1784100000000_a1b2c/explorer.messages.json");
    let compaction = format!("{CLINE4}/1784100000000_a1b2c/1784100000000_a1b2c.compaction.json");
    let cases: &[Case<'_, (u64, u64, u64, u64)>] = &[
        (&healthy, (4, 1, 1, 0), &[], 0),
        (&compaction, (2, 0, 0, 0), &[], 0),
        (&sub, (2, 0, 0, 0), &[], 0),
        // The client answers the call in memory: a warning.
        (
            "1784100100000_d3e4f",
            (2, 1, 0, 0),
            &["orphan-tool-call:warning@18#1"],
            0,
        ),
        // Sent as it is: the provider refuses it.
        (
            "1784100200000_g5h6i",
            (4, 0, 1, 0),
            &["orphan-tool-result:error@41#2"],
            1,
        ),
        // Torn and empty files: the client resumes them empty. The torn
        // one still holds its first message whole: read, and the torn
        // tail after it is the corrupt record.
        (
            "1784100300000_j7k8l",
            (1, 0, 0, 1),
            &["corrupt-record:error@17#null"],
            1,
        ),
        (
            "1784100400000_m9n0p",
            (0, 0, 0, 1),
            &["corrupt-record:error@1#null"],
            1,
        ),
    ];
    for (id, (messages, calls, results, corrupt), expected, exit) in cases {
        let path = if id.ends_with(".json") {
            id.to_string()
        } else {
            session4(id)
        };
        let (dialect, m, c, r, _, k) = counts(&path);
        assert_eq!(dialect, "cline-4", "{id}");
        assert_eq!(
            (m, c, r, k),
            (*messages, *calls, *results, *corrupt),
            "{id}"
        );
        let (c, doc) = lint_json(&path, &[]);
        assert_eq!(findings(&doc), *expected, "{id}");
        assert_eq!(c, *exit, "{id}");
        let summary = doc["findings"].to_string();
        if id.starts_with("1784100100000") {
            assert!(
                summary.contains("Tool execution was interrupted before a result was produced"),
                "{summary}"
            );
        }
        if *corrupt > 0 {
            assert!(
                summary.contains("resumes it empty and overwrites the file on its next save, so all of this session's history is lost")
                    || summary.contains("ends here, after 1 whole message: Cline 4 cannot parse the file, reads it as a session with no message, resumes it empty and overwrites the file on its next save, so it is lost"),
                "{summary}"
            );
        }
    }
}

/// The folder's other files (manifests, `sessions.db`) are skipped as read
/// through the messages files, never unread; a `version` chatfsck does not
/// know is refused with the version named, never read as clean.
#[test]
fn cline4_store_walk_and_unknown_version() {
    let (c, doc) = lint_json("fixtures/cline4", &[]);
    assert_eq!(c, 1, "{doc:#}");
    assert_eq!(doc["summary"]["unread"], 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], 7, "{doc:#}");
    let skipped = doc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 6, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|s| s["reason"].as_str().unwrap().contains("session index")),
        "{skipped:?}"
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("1784100500000_q1r2s");
    std::fs::create_dir(&dir).unwrap();
    let p = dir.join("1784100500000_q1r2s.messages.json");
    std::fs::write(
        &p,
        r#"{"version": 2, "sessionId": "1784100500000_q1r2s", "messages": []}"#,
    )
    .unwrap();
    let path = p.to_str().unwrap();
    one_line_error(
        &run(&["lint", path]),
        path,
        &["version 2", "nothing of it was read"],
    );
    // A repair changes nothing it cannot write in the client's form, and
    // leaves the input as it was.
    let input = root().join(session4("1784100100000_d3e4f"));
    let before = std::fs::read(&input).unwrap();
    let out = d.path().join("copy.messages.json");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

/// Repair of a Cline 4 messages file: the result the provider would refuse
/// is removed (logged), the envelope (`version`, `sessionId`, `agent`,
/// `updated_at`) and every other message are kept as they were written,
/// in the client's layout; the copy lints clean and a second repair
/// leaves it as it is. A torn or empty file, and a call the client answers
/// itself, are left, with the reason.
#[test]
fn cline4_repair_removes_what_the_provider_refuses_and_keeps_the_rest() {
    let d = tempfile::tempdir().unwrap();
    let stray = root().join(session4("1784100200000_g5h6i"));
    let input = std::fs::read_to_string(&stray).unwrap();
    // Named as the client names it: the copy is read back as Cline 4's.
    let folder = d.path().join("1784100200000_g5h6i");
    std::fs::create_dir(&folder).unwrap();
    let copy = &folder.join("1784100200000_g5h6i.messages.json");
    let log = d.path().join("log.json");
    let o = run(&[
        "repair",
        stray.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(edit_lines(&log), ["remove-result@41"], "{log:#}");
    assert!(
        log["edits"][0]["before"]
            .as_str()
            .unwrap()
            .contains("toolu_01C4cStrayGone000000001")
    );
    assert_eq!(
        std::fs::read_to_string(&stray).unwrap(),
        input,
        "the input changed"
    );
    let output = std::fs::read_to_string(copy).unwrap();
    let (a, b): (Value, Value) = (
        serde_json::from_str(&input).unwrap(),
        serde_json::from_str(&output).unwrap(),
    );
    for key in ["version", "sessionId", "agent", "updated_at"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    // Every message is laid out as the client lays it out: the edited one
    // too, at its depth, and the others are the text it wrote.
    assert!(
        output.contains("\n    },\n    {\n      \"id\": \"msg_c4c_3\",\n      \"role\": \"user\",\n      \"content\": [\n        {\n          \"type\": \"text\","),
        "{output}"
    );
    let (before, after) = (
        a["messages"].as_array().unwrap(),
        b["messages"].as_array().unwrap(),
    );
    assert_eq!(before.len(), after.len(), "{output}");
    let unedited: Vec<_> = before.iter().zip(after).filter(|(x, y)| x == y).collect();
    assert_eq!(unedited.len(), before.len() - 1, "{output}");
    let pretty = |v: &Value| {
        serde_json::to_string_pretty(v)
            .unwrap()
            .replace('\n', "\n    ")
    };
    for (m, _) in unedited {
        assert!(output.contains(&format!("    {}", pretty(m))), "{output}");
    }
    let (rc, doc) = lint_json(copy.to_str().unwrap(), &[]);
    assert_eq!((rc, findings(&doc)), (0, vec![]), "{doc:#}");
    assert_second_repair_changes_nothing(copy, d.path());
    // Nothing to rebuild an empty file from, and an unanswered call the
    // client answers itself on every request: left, with the reason, the
    // copy the input as it is. (A torn file is mended:
    // `cline4_torn_messages_file_is_mended_to_its_whole_messages`.)
    for id in ["1784100100000_d3e4f", "1784100400000_m9n0p"] {
        let input = root().join(session4(id));
        let out = d.path().join(format!("{id}.messages.json"));
        let o = run(&[
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{id}: {}", stderr(&o));
        assert!(stdout(&o).contains("left as is"), "{id}: {}", stdout(&o));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&input).unwrap(),
            "{id}"
        );
    }
}

/// A messages file cut off by a write that did not finish: Cline 4 cannot
/// parse it, resumes the session empty and overwrites the file on its next
/// save, so every message is lost. The repair writes the messages the file
/// still holds whole, in the client's own layout, and ends the document
/// after them: the copy parses as the client parses it, with the same
/// envelope and every whole message byte for byte; the torn tail is in the
/// log verbatim (in base64 where the cut fell inside a character); a
/// second repair changes nothing. A file torn before its first whole
/// message is not rebuilt into anything.
#[test]
fn cline4_torn_messages_file_is_mended_to_its_whole_messages() {
    let d = tempfile::tempdir().unwrap();
    let healthy = std::fs::read_to_string(root().join(session4("1784100000000_a1b2c"))).unwrap();
    let full: Value = serde_json::from_str(&healthy).unwrap();
    let messages = full["messages"].as_array().unwrap();
    // Cut inside the last message, inside a character of it (a 'é' is
    // put in its text first), and after the array (in a later member).
    let last = healthy.rfind("\n    {\n").unwrap();
    let accented = {
        let at = healthy[last..].find("\"text\": \"").unwrap() + last + 9;
        format!("{}é{}", &healthy[..at], &healthy[at..])
    };
    let in_char = accented.find('é').unwrap() + 1;
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        (
            "inside-a-message",
            healthy.as_bytes()[..last + 40].to_vec(),
            messages.len() - 1,
        ),
        (
            "inside-a-character",
            accented.as_bytes()[..in_char].to_vec(),
            messages.len() - 1,
        ),
    ];
    for (name, bytes, whole) in cases {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("1784100000000_a1b2c.messages.json");
        std::fs::write(&input, &bytes).unwrap();
        let (rc, doc) = lint_json(input.to_str().unwrap(), &[]);
        assert_eq!(rc, 1, "{name}: {doc:#}");
        let found = findings(&doc);
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        assert!(
            found[0].starts_with("corrupt-record:error@"),
            "{name}: {found:?}"
        );
        let summary = doc["findings"][0]["summary"].as_str().unwrap();
        assert!(
            summary.contains(&format!("after {whole} whole messages"))
                && summary.contains("resumes it empty and overwrites the file"),
            "{name}: {summary}"
        );
        let out = dir.join("out").join("1784100000000_a1b2c.messages.json");
        let log = dir.join("log.jsonl");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let o = run(&[
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(&input).unwrap(),
            bytes,
            "{name}: the input changed"
        );
        let copy = std::fs::read_to_string(&out).unwrap();
        // As the client reads it: JSON.parse, then `messages`.
        let parsed: Value =
            serde_json::from_str(&copy).unwrap_or_else(|e| panic!("{name}: {e}: {copy}"));
        assert_eq!(
            parsed["messages"].as_array().unwrap()[..],
            messages[..whole],
            "{name}"
        );
        for key in ["version", "updated_at", "agent", "sessionId"] {
            assert_eq!(parsed[key], full[key], "{name}: {key}");
        }
        // The kept text is the input's, and the document is closed as
        // `JSON.stringify(…, null, 2)` and a newline close it.
        let kept = copy
            .strip_suffix("\n  ]\n}\n")
            .unwrap_or_else(|| panic!("{name}: {copy:?}"));
        assert!(bytes.starts_with(kept.as_bytes()), "{name}: {copy}");
        // The tail, verbatim in the log: the copy and the log hold every
        // byte of the input.
        let logged: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        let edit = &logged["edits"][0];
        assert_eq!(edit["action"], "drop-record", "{name}: {logged:#}");
        let tail = match edit["before_base64"].as_str() {
            Some(b) => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b).unwrap()
            }
            None => edit["before"].as_str().unwrap().as_bytes().to_vec(),
        };
        assert_eq!([kept.as_bytes(), &tail].concat(), bytes, "{name}");
        assert_eq!(
            edit["before_base64"].is_string(),
            name == "inside-a-character",
            "{name}: {edit:#}"
        );
        let (rc, doc) = lint_json(out.to_str().unwrap(), &[]);
        assert_eq!((rc, findings(&doc)), (0, vec![]), "{name}: {doc:#}");
        assert_second_repair_changes_nothing(&out, &dir);
    }
    // Torn before its first whole message: nothing to mend.
    let cut = &healthy[..healthy.find("\"messages\"").unwrap() + 30];
    let input = d
        .path()
        .join("early")
        .join("1784100000000_a1b2c.messages.json");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    std::fs::write(&input, cut).unwrap();
    let out = d.path().join("early-out.messages.json");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("left as is"), "{}", stdout(&o));
    assert_eq!(std::fs::read(&out).unwrap(), cut.as_bytes());
}

/// The Cline CLI (3.0.65) keeps databases of its own beside `sessions.db`
/// in its data folder's `db/` (`cron.db`, `session-search.db`,
/// `tasks.db`, `teams.db`, `connectors.db`, the hub's logs; seen when it
/// ran here), and adds more with its features. A walk of the data folder
/// skips each as Cline's, by where it is: before, each was "could not be
/// read" and the walk of a healthy data folder exited 2. The same
/// database outside that layout is still an error, never skipped.
#[test]
fn cline_data_folder_walk_skips_the_clis_own_databases() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join(".cline/data");
    for sub in ["db", "settings", "sessions"] {
        std::fs::create_dir_all(data.join(sub)).unwrap();
    }
    let sessions = root().join(CLINE4);
    for e in std::fs::read_dir(&sessions).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_str().unwrap().starts_with("1784100000000") {
            let to = data.join("sessions").join(e.file_name());
            std::fs::create_dir(&to).unwrap();
            for f in std::fs::read_dir(e.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
            }
        }
    }
    for (name, table) in [
        ("cron.db", "cron_specs"),
        ("teams.db", "team_events"),
        ("hub-runs-hub-production.db", "hub_runs"),
    ] {
        rusqlite::Connection::open(data.join("db").join(name))
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT);"
            ))
            .unwrap();
    }
    let (c, doc) = lint_json(data.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(c, 0, "{doc:#}");
    let skipped = doc["skipped"].as_array().unwrap();
    for name in ["cron.db", "teams.db", "hub-runs-hub-production.db"] {
        assert!(
            skipped.iter().any(|s| {
                s["path"].as_str().unwrap().ends_with(name)
                    && s["reason"]
                        .as_str()
                        .unwrap()
                        .contains("Cline CLI's own databases")
            }),
            "{name}: {skipped:?}"
        );
    }
    // Outside a Cline data folder: an error naming the file, as before.
    let other = d.path().join("cron.db");
    std::fs::copy(data.join("db/cron.db"), &other).unwrap();
    let o = run(&["lint", other.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
}
