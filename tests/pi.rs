//! pi's sessions (issue 40): the session the pinned client wrote
//! (fixtures/pi/home/) and its damaged variants (fixtures/pi/build.py),
//! read as pi 0.73.1 loads them, repaired in pi's own format, and judged
//! by the real client (tests/oracle/pi.py).

mod common;
use common::*;

use std::path::{Path, PathBuf};

const HEALTHY: &str = "fixtures/pi/home/.pi/agent/sessions/--tmp-pit-work--/2026-11-28T21-26-37-110Z_01a2240d-8b34-7454-8a97-6035e26c947e.jsonl";

/// Each fixture: its findings (`severity rule@line`), and the edits of
/// its repair (`action@line`; empty: nothing to repair).
const EXPECTED: &[(&str, &[&str], &[&str])] = &[
    (HEALTHY, &[], &[]),
    ("fixtures/pi/aborted-reply.jsonl", &[], &[]),
    ("fixtures/pi/v1-linear.jsonl", &[], &[]),
    (
        "fixtures/pi/drift.jsonl",
        &[
            "warning unknown-record-type@1",
            "warning unknown-record-type@4",
        ],
        &[],
    ),
    (
        "fixtures/pi/torn-tail.jsonl",
        &["error corrupt-record@9"],
        &["drop-record@9"],
    ),
    (
        "fixtures/pi/torn-then-resumed.jsonl",
        &["error corrupt-record@9", "error dangling-parent@10"],
        &["drop-record@9"],
    ),
    (
        "fixtures/pi/garbled-middle.jsonl",
        &["error corrupt-record@7", "error dangling-parent@8"],
        &["drop-record@7", "relink@8"],
    ),
    // A `parentId` no entry has, no line damaged: pi resumes from the
    // entry naming it, without the four messages before it.
    (
        "fixtures/pi/dangling-parent.jsonl",
        &["error dangling-parent@8"],
        &[],
    ),
    // A `parentId` cycle: pi's walk never ends, the resume hangs.
    (
        "fixtures/pi/parent-cycle.jsonl",
        &["error parent-cycle@4"],
        &[],
    ),
    (
        "fixtures/pi/orphan-call-at-end.jsonl",
        &["warning orphan-tool-call@5"],
        &["answer-call@5"],
    ),
    (
        "fixtures/pi/orphan-call.jsonl",
        &["warning orphan-tool-call@5"],
        &["relink@6", "answer-call@5"],
    ),
    (
        "fixtures/pi/stray-result.jsonl",
        &["error orphan-tool-result@6"],
        &["remove-result@6", "relink@7"],
    ),
    (
        "fixtures/pi/custom-message-mid-tool.jsonl",
        &["error interleaved-message@6"],
        &["move-after@7", "move-after@6", "move-after@8"],
    ),
];

#[test]
fn every_fixture_reads_as_pi_with_what_pi_does_with_it() {
    for (file, want, _) in EXPECTED {
        let (_, doc) = lint_json(file, &["--fail-on", "info"]);
        assert_eq!(doc["files"][0]["dialect"], "pi", "{file}: {doc:#}");
        assert_eq!(severity_rule_lines(&doc), *want, "{file}: {doc:#}");
        // Each finding says what pi does with it.
        for f in doc["findings"].as_array().unwrap() {
            let notes = f["notes"].to_string();
            if f["rule"] != "unknown-record-type" {
                assert!(notes.contains("pi "), "{file}: {f:#}");
            }
        }
    }
    // Every message of the session pi wrote is read, and only those.
    let o = run(&["inspect", HEALTHY]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 3, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
    // A garbled line in the middle: the walk stops at the entry naming
    // it, and pi sends only what follows (the oracle test measures it).
    let o = run(&["inspect", "fixtures/pi/garbled-middle.jsonl"]);
    assert!(stdout(&o).contains("messages:      2"), "{}", stdout(&o));
}

#[test]
fn the_detector_takes_a_pi_session_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    // A header whose line is torn: the next entries still name the store
    // only when a header is found; a lone entry line is not a pi session.
    let f = d.path().join("x.jsonl");
    std::fs::write(
        &f,
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let (_, doc) = lint_json(f.to_str().unwrap(), &[]);
    assert_ne!(doc["files"][0]["dialect"], "pi", "{doc:#}");
}

/// Repair every damaged fixture into `dir`: the copies, in EXPECTED's order.
fn repair_all(dir: &Path) -> Vec<PathBuf> {
    let repairs: Vec<(&str, &[&str])> = EXPECTED.iter().map(|(f, _, e)| (*f, *e)).collect();
    repair_fixtures(dir, &repairs)
}

#[test]
fn a_repaired_copy_is_clean_and_a_second_repair_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    for copy in repair_all(d.path()) {
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{}: {doc:#}", copy.display());
        assert_second_repair_changes_nothing(&copy, copy.parent().unwrap());
    }
    // The result put in for an unanswered call is the one pi itself sends.
    let text = std::fs::read_to_string(
        d.path()
            .join("orphan-call-at-end")
            .join("orphan-call-at-end.jsonl"),
    )
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["message"]["role"], "toolResult", "{last:#}");
    assert_eq!(last["message"]["isError"], true, "{last:#}");
    assert_eq!(
        last["message"]["content"][0]["text"], "No result provided",
        "{last:#}"
    );
    assert_eq!(last["parentId"], "f843f4bd", "{last:#}");
    // A torn entry with the next one pi appended onto it: the fragment
    // goes, the glued entry (the third prompt) stays, and the copy sends
    // every message left.
    let copy = d
        .path()
        .join("torn-then-resumed")
        .join("torn-then-resumed.jsonl");
    let text = std::fs::read_to_string(&copy).unwrap();
    let line9: serde_json::Value = serde_json::from_str(text.lines().nth(8).unwrap()).unwrap();
    assert_eq!(line9["id"], "5d1e7a20", "{text}");
    let o = run(&["inspect", copy.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("messages:      7 (assistant 3, tool 1, user 3)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_in_place_repair_keeps_a_backup() {
    assert_in_place_repair_keeps_a_backup("fixtures/pi/torn-tail.jsonl", "s.jsonl");
}

/// The pinned pi (tests/oracle/install.sh) writes a fresh session
/// offline (tests/oracle/pi.py fresh: a prompt the mock answers with a
/// `bash` call, pi runs it, then a second prompt with `--continue`):
/// chatfsck reads every message of it, and finds nothing.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned clients and python3: tests/oracle/install.sh"
)]
fn a_fresh_session_of_the_pinned_pi_reads_whole_and_clean() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("fresh");
    let o = python()
        .arg("tests/oracle/pi.py")
        .arg("fresh")
        .arg(&out)
        .output()
        .unwrap();
    let s = &oracle_summaries("pi.py", &o)[0];
    assert_eq!(s["version"], "0.73.1", "{s:#}");
    assert!(
        s["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["rc"] == 0 && r["timed_out"] == false),
        "{s:#}"
    );
    let files = s["sessions"].as_array().unwrap();
    assert_eq!(files.len(), 1, "one session, continued: {s:#}");
    let session = out.join(files[0].as_str().unwrap());
    let (rc, doc) = lint_json(session.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "pi", "{doc:#}");
    // Every message entry pi wrote is a message read.
    let text = std::fs::read_to_string(&session).unwrap();
    let entries = text
        .lines()
        .filter(|l| l.contains("\"type\":\"message\""))
        .count();
    assert_eq!(entries, 6, "{text}");
    let o = run(&["inspect", session.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("messages:      6 (assistant 3, tool 1, user 2)"),
        "{}",
        stdout(&o)
    );
}

/// The pinned pi resumes each damaged fixture as the profile says, and
/// every repaired copy whole: the request it sends is valid and carries
/// every unit of the copy's history. One pi.py run for all of them.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned clients and python3: tests/oracle/install.sh"
)]
fn the_pinned_pi_resumes_every_repaired_copy_whole() {
    let d = tempfile::tempdir().unwrap();
    let copies = repair_all(&d.path().join("copies"));
    // The originals whose resume the profile describes, one per behaviour.
    let originals = [
        "fixtures/pi/custom-message-mid-tool.jsonl",
        "fixtures/pi/stray-result.jsonl",
        "fixtures/pi/torn-then-resumed.jsonl",
        "fixtures/pi/orphan-call.jsonl",
    ];
    let o = python()
        .arg("tests/oracle/pi.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .args(originals.iter().map(|f| root().join(f)))
        .args(&copies)
        .output()
        .unwrap();
    let s = oracle_summaries("pi.py", &o);
    assert_eq!(s.len(), originals.len() + copies.len(), "{s:#?}");
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
    }
    // As the profile says: refused, refused, history lost, healed.
    assert_eq!(s[0]["valid"], false, "{:#}", s[0]);
    assert_eq!(s[0]["no_result_provided"], 1, "{:#}", s[0]);
    assert_eq!(s[1]["valid"], false, "{:#}", s[1]);
    assert_eq!(s[2]["valid"], true, "{:#}", s[2]);
    assert!(s[2]["units_missing"].as_u64().unwrap() > 0, "{:#}", s[2]);
    assert_eq!(s[3]["valid"], true, "{:#}", s[3]);
    assert_eq!(s[3]["no_result_provided"], 1, "{:#}", s[3]);
    for r in &s[originals.len()..] {
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["units_missing"], 0, "{r:#}");
    }
}

/// DeepSeek's thinking mode (issue 40): the pinned session as if
/// `deepseek-v4-pro` had written it through pi's `deepseek` provider, the
/// answer with its reasoning and the call's reply without. pi sends an
/// empty `reasoning_content` in its place from 0.70.1 on: a warning, and
/// the session does not say which pi wrote it.
#[test]
fn a_deepseek_reply_without_its_reasoning_is_healed_from_0_70_1() {
    let d = tempfile::tempdir().unwrap();
    let file = deepseek_session(d.path(), "deepseek");
    let (_, doc) = lint_json(file.to_str().unwrap(), &[]);
    assert_eq!(
        severity_rule_lines(&doc),
        ["warning missing-reasoning-content@5"],
        "{doc:#}"
    );
    let notes = doc["findings"][0]["notes"].to_string();
    for want in [
        // The notes as JSON text: their quotes escaped.
        r#"pi sends `reasoning_content: \"\"`"#,
        "pi heals this from 0.70.1 on",
        "the history does not say which version wrote it",
    ] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
}

/// The pinned session as if `deepseek-v4-pro` of `provider` had written
/// it, in `dir`: every reply names them, and the answer after the call's
/// result (line 7) has a thinking block; the call's reply (line 5) none.
fn deepseek_session(dir: &Path, provider: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join(HEALTHY)).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (k, v) in lines.iter_mut().enumerate() {
        let m = &mut v["message"];
        if m["role"] != "assistant" {
            continue;
        }
        m["model"] = "deepseek-v4-pro".into();
        m["provider"] = provider.into();
        if k == 6 {
            let content = m["content"].as_array_mut().unwrap();
            content.insert(
                0,
                serde_json::json!({"type": "thinking", "thinking": "The command printed hi.", "thinkingSignature": "reasoning_content"}),
            );
        }
    }
    let file = dir.join(format!("{provider}.jsonl"));
    let body: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&file, body).unwrap();
    file
}

/// What the profile says, on the pinned pi (the mock serving a provider
/// named `deepseek`): the call's reply goes with `reasoning_content: ""`,
/// the answer with its own; through another provider (`mock`), the reply
/// goes without the field.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned clients and python3: tests/oracle/install.sh"
)]
fn the_pinned_pi_sends_an_empty_reasoning_content_through_its_deepseek_provider() {
    let replies = |provider: &str| -> Vec<serde_json::Value> {
        let d = tempfile::tempdir().unwrap();
        let session = deepseek_session(d.path(), provider);
        let o = python()
            .arg("tests/oracle/pi.py")
            .arg("resume")
            .arg(d.path().join("runs"))
            .arg(&session)
            .env("CHATFSCK_PI_ORACLE_PROVIDER", provider)
            .env("CHATFSCK_PI_ORACLE_MODEL", "deepseek-v4-pro")
            .output()
            .unwrap();
        let s = oracle_summaries("pi.py", &o);
        assert_eq!(s[0]["rc"], 0, "{:#}", s[0]);
        assert_eq!(s[0]["valid"], true, "{:#}", s[0]);
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.path().join("runs/00/request.json")).unwrap())
                .unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .take(2)
            .map(|m| m.get("reasoning_content").cloned().unwrap_or_default())
            .collect()
    };
    // Both runs side by side (each client mostly waits).
    let (deepseek, other) = std::thread::scope(|s| {
        let deepseek = s.spawn(|| replies("deepseek"));
        let other = replies("mock");
        (deepseek.join().unwrap(), other)
    });
    let thought = serde_json::Value::from("The command printed hi.");
    assert_eq!(deepseek, ["".into(), thought.clone()]);
    assert_eq!(other, [serde_json::Value::Null, thought]);
}

/// `fixture` with lines `at` and `at + 1` (1-based) glued on one line: a
/// lost newline.
fn glued(fixture: &str, at: usize) -> String {
    let text = std::fs::read_to_string(root().join(fixture)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let next = lines.remove(at);
    lines[at - 1].push_str(&next);
    lines.join("\n") + "\n"
}

/// Whole entries glued on one line (a lost newline), which pi skips:
/// written on lines of their own. The unanswered call's session with its
/// last two entries glued: before, only the entry after the first was
/// kept, its parent (the first) in no line, and pi's walk from it sent it
/// alone (conservation's `orphan-call.jsonl (glued)`). The parent-cycle
/// session with the entry that closes its cycle glued to the one before
/// it: kept as it is, it brought back the cycle the line had hidden (pi's
/// walk never ends), so it hangs from the entry kept before it
/// (conservation's `parent-cycle.jsonl (glued, lines-swapped)`).
/// Each copy lints clean, sends every message of the file, and a second
/// repair changes nothing; the glued line is in the log whole.
#[test]
fn entries_glued_on_one_line_are_written_on_lines_of_their_own() {
    let d = tempfile::tempdir().unwrap();
    for (name, input_text, ids, messages) in glued_inputs() {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("s.jsonl");
        std::fs::write(&input, &input_text).unwrap();
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "{name}: {log:#}");
        let (rc, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "warning"]);
        assert_eq!(rc, 0, "{name}: {doc:#}");
        let o = run(&["inspect", copy.to_str().unwrap()]);
        assert!(stdout(&o).contains(messages), "{name}: {}", stdout(&o));
        let text = std::fs::read_to_string(&copy).unwrap();
        for id in ids {
            let on_own_line = text.lines().any(|l| {
                serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["id"] == *id)
            });
            assert!(on_own_line, "{name}: `{id}`: {text}");
        }
        let glued_line = input_text
            .lines()
            .find(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            .unwrap();
        assert!(
            log["edits"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["action"] == "drop-record" && e["before"] == *glued_line),
            "{name}: {log:#}"
        );
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}

/// The inputs of [`entries_glued_on_one_line_are_written_on_lines_of_their_own`]:
/// a name, the text, the ids of the glued entries, what `inspect` says of
/// the copy's messages.
fn glued_inputs() -> [(&'static str, String, [&'static str; 2], &'static str); 2] {
    [
        (
            "orphan-call",
            glued("fixtures/pi/orphan-call.jsonl", 7),
            ["9b9c238d", "28f28047"],
            "messages:      6 (assistant 3, tool 1, user 2)",
        ),
        (
            "parent-cycle",
            glued("fixtures/pi/parent-cycle.jsonl", 3),
            ["a7d5f857", "6012da32"],
            "messages:      6 (assistant 3, tool 1, user 2)",
        ),
    ]
}

/// The pinned pi resumes the copies of glued entries whole: a valid
/// request carrying every unit of the copy (the cycle's copy no longer
/// hangs).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned clients and python3: tests/oracle/install.sh"
)]
fn the_pinned_pi_resumes_the_copies_of_glued_entries_whole() {
    let d = tempfile::tempdir().unwrap();
    let mut copies = Vec::new();
    for (name, text, _, _) in glued_inputs() {
        let dir = d.path().join("copies").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("s.jsonl");
        std::fs::write(&input, text).unwrap();
        copies.push(repair_logged(&input, &dir).0);
    }
    let o = python()
        .arg("tests/oracle/pi.py")
        .arg("resume")
        .arg(d.path().join("runs"))
        .args(&copies)
        .output()
        .unwrap();
    let s = oracle_summaries("pi.py", &o);
    assert_eq!(s.len(), copies.len(), "{s:#?}");
    for r in &s {
        assert_eq!(r["rc"], 0, "{r:#}");
        assert_eq!(r["timed_out"], false, "{r:#}");
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["units_missing"], 0, "{r:#}");
    }
}

/// `fixture` damaged as conservation damages it, each step in turn:
/// `("glued", i)` glues line `i + 1` (0-based `i`) onto line `i`, `("nul",
/// i)` overwrites line `i` with NUL bytes.
fn damaged(fixture: &str, steps: &[(&str, usize)]) -> Vec<u8> {
    let text = std::fs::read(root().join(fixture)).unwrap();
    let mut lines: Vec<Vec<u8>> = text
        .strip_suffix(b"\n")
        .unwrap_or(&text)
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    for &(how, i) in steps {
        match how {
            "glued" => {
                let next = lines.remove(i + 1);
                lines[i].extend(next);
            }
            "nul" => lines[i] = vec![0; lines[i].len()],
            _ => unreachable!(),
        }
    }
    let mut out = lines.join(&b'\n');
    out.push(b'\n');
    out
}

/// The parent-cycle session with the cycle hidden by a damaged line (pi
/// skips it, its walk stops at the entry naming it, and ends): the copy
/// must not bring the cycle back (pi's walk would never end). A NUL line
/// in the cycle: the relink of the entry after it to the entry before it
/// would close it, and is not made (conservation's `parent-cycle.jsonl
/// (nul-line)`). Glued entries: one whose link would close it stays out
/// (in the log, its line whole), seeing the links of entries kept from
/// other glued lines; and the relink after a dropped line skips an entry
/// this repair drops (a result whose call the line held), re-linking the
/// first entry the copy keeps. Each copy repairs (the input is not kept),
/// lints without an error the input lacks, and a second repair changes
/// nothing.
#[test]
fn a_cycle_a_damaged_line_hid_stays_broken_in_the_copy() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[(&str, usize)])] = &[
        ("nul-6", &[("nul", 5)]),
        ("nul-7", &[("nul", 6)]),
        ("glued-4", &[("glued", 3)]),
        ("glued-6-7", &[("glued", 5), ("glued", 6)]),
        ("glued-3-nul-7", &[("glued", 2), ("nul", 6)]),
    ];
    let errors = |doc: &serde_json::Value| -> Vec<String> {
        let mut v: Vec<String> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    for (name, steps) in cases {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("s.jsonl");
        std::fs::write(&input, damaged("fixtures/pi/parent-cycle.jsonl", steps)).unwrap();
        let (_, before) = lint_json(input.to_str().unwrap(), &[]);
        let (copy, log) = repair_logged(&input, &dir);
        assert!(log["kept_input"].is_null(), "{name}: {log:#}");
        let (_, after) = lint_json(copy.to_str().unwrap(), &[]);
        let (was, now) = (errors(&before), errors(&after));
        assert!(
            !now.contains(&"parent-cycle".to_string()),
            "{name}: {after:#}"
        );
        assert!(
            now.iter().all(|r| was.contains(r)) && !now.contains(&"corrupt-record".to_string()),
            "{name}: {now:?}, the input {was:?}: {after:#}"
        );
        assert_second_repair_changes_nothing(&copy, &dir);
    }
}
