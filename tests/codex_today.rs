//! Codex rollouts as the pinned client (0.169.0) writes them today
//! (issue 37): compressed rollouts (`rollout-….jsonl.zst`, 0.137 and
//! later), paginated history (ordinals, `history_base`, the history
//! projection in `thread_history_1.sqlite`) and record kinds the reader
//! does not know. Fixtures: fixtures/codex/zst/ (`make.sh`) and
//! fixtures/codex/paginated/.

mod common;
use common::*;

use std::path::Path;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

fn zst(name: &str) -> String {
    format!("fixtures/codex/zst/{name}")
}

/// The text a zstd file holds.
fn unzstd(path: &Path) -> Vec<u8> {
    zstd::stream::decode_all(std::fs::File::open(path).unwrap()).unwrap()
}

#[test]
fn a_compressed_rollout_is_read_as_the_text_it_holds() {
    let (rc, doc) = lint_json(
        &zst("middle-output-deleted.jsonl.zst"),
        &["--fail-on", "warning"],
    );
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "codex", "{doc:#}");
    assert_eq!(
        rule_lines(&doc),
        ["orphan-tool-call@7"],
        "the plain fixture's finding, on its line: {doc:#}"
    );
    let (rc, doc) = lint_json(&zst("healthy.jsonl.zst"), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    // The evidence shows the record, not compressed bytes.
    let o = run(&["lint", &zst("middle-output-deleted.jsonl.zst")]);
    assert!(
        stdout(&o).contains(r#"{"timestamp":"2026-05-11T10:29:53.019Z","type":"response_item""#),
        "{}",
        stdout(&o)
    );
    // inspect and diff read it too.
    let o = run(&["inspect", &zst("healthy.jsonl.zst")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("jsonl (codex)"), "{}", stdout(&o));
    let o = run(&[
        "diff",
        "fixtures/codex/healthy/rollout.jsonl",
        &zst("healthy.jsonl.zst"),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("no differences"), "{}", stdout(&o));
}

#[test]
fn a_tree_walk_reads_compressed_rollouts() {
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("sessions/2026/05/11");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(
        root().join(zst("middle-output-deleted.jsonl.zst")),
        day.join("rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl.zst"),
    )
    .unwrap();
    let (rc, doc) = lint_json(dir.path().to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(doc["files"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(rule_lines(&doc), ["orphan-tool-call@7"], "{doc:#}");
}

#[test]
fn a_compressed_stream_is_known_by_its_magic_not_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rollout.jsonl");
    std::fs::copy(root().join(zst("middle-output-deleted.jsonl.zst")), &input).unwrap();
    let (rc, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(rule_lines(&doc), ["orphan-tool-call@7"], "{doc:#}");
}

#[test]
fn a_stream_cut_short_is_an_error_naming_the_file_never_clean() {
    for cmd in ["lint", "inspect"] {
        let o = run(&[cmd, &zst("cut-short.jsonl.zst")]);
        assert_eq!(code(&o), 2, "{cmd}: {}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("cut-short.jsonl.zst")
                && err.contains("zstd stream is damaged or cut short"),
            "{cmd}: {err}"
        );
        assert!(!stdout(&o).contains("no problems"), "{}", stdout(&o));
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl.zst");
    let o = run(&[
        "repair",
        &zst("cut-short.jsonl.zst"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!out.exists(), "no partial output");
}

#[test]
fn repair_writes_the_compressed_form_codex_reads() {
    let input = root().join(zst("middle-output-deleted.jsonl.zst"));
    let before = fingerprint(&input);
    let plain =
        std::fs::read(root().join("fixtures/codex/orphan-tool-call/middle-output-deleted.jsonl"))
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rollout-x.jsonl.zst");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(edit_lines(&log), ["answer-call@7"], "{log:#}");
    assert!(
        log["written_as"]
            .as_str()
            .is_some_and(|w| w.starts_with("zstd-compressed JSON Lines")),
        "{log:#}"
    );
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(&ZSTD_MAGIC), "the copy is a zstd stream");
    // Its text is the input's with the one line inserted.
    let text = unzstd(&out);
    let (a, b) = (
        String::from_utf8(plain.clone()).unwrap(),
        String::from_utf8(text.clone()).unwrap(),
    );
    assert_eq!(b.lines().count(), a.lines().count() + 1);
    assert!(b.lines().nth(7).unwrap().contains(r#""output":"aborted""#));
    let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    // A second repair changes nothing.
    let out2 = dir.path().join("again.jsonl.zst");
    let o = run(&[
        "repair",
        "--format",
        "json",
        out.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log2: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(log2["edits"].as_array().unwrap().is_empty(), "{log2:#}");
    assert_eq!(unzstd(&out2), text);
    // A copy named `.jsonl` is plain text: Codex reads that name as such.
    let out3 = dir.path().join("plain.jsonl");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out3.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log3: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        log3["written_as"]
            .as_str()
            .is_some_and(|w| w.starts_with("plain JSON Lines")),
        "{log3:#}"
    );
    assert_eq!(std::fs::read(&out3).unwrap(), text);
    assert_eq!(fingerprint(&input), before, "the input was touched");
    // In place: the file stays compressed, under its name, with a backup.
    let inplace = dir.path().join("rollout-y.jsonl.zst");
    std::fs::copy(&input, &inplace).unwrap();
    let o = run(&["repair", "--in-place", inplace.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(std::fs::read(&inplace).unwrap().starts_with(&ZSTD_MAGIC));
    assert_eq!(unzstd(&inplace), text);
    let backups: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rollout-y.jsonl.zst.chatfsck-backup-"))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(
        std::fs::read(dir.path().join(&backups[0])).unwrap(),
        std::fs::read(&input).unwrap()
    );
}

fn paginated(name: &str) -> String {
    format!("fixtures/codex/paginated/{name}")
}

/// `rule@line:severity` of every finding, sorted.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}@{}:{}",
                f["rule"].as_str().unwrap(),
                f["location"]["line"],
                f["severity"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// Each paginated fixture (fixtures/codex/paginated/README.md): what lint
/// reports, and how many messages it reads of each file.
#[test]
fn paginated_histories_are_read_as_codex_reads_them() {
    let table: &[(&str, &[&str], &[u64])] = &[
        // What the client wrote, untouched but for long strings: nothing.
        ("fresh.jsonl", &[], &[10]),
        // A fork's continuation, out of a Codex home: its own turn only,
        // and the base Codex replays first said to be unread.
        ("fork.jsonl", &["unknown-record-type@1:warning"], &[2]),
        (
            "missing-final-ordinal.jsonl",
            &["missing-ordinal@28:error"],
            &[10],
        ),
        (
            "missing-ordinal-inside.jsonl",
            &["missing-ordinal@17:info"],
            &[10],
        ),
        ("reused-ordinal.jsonl", &["reused-ordinal@18:error"], &[10]),
        (
            "unknown-line-kind.jsonl",
            &["unknown-record-type@29:warning"],
            &[10],
        ),
        (
            "unknown-item-kind.jsonl",
            &["unknown-record-type@29:warning"],
            &[10],
        ),
        (
            "ends-on-call.jsonl",
            &["orphan-tool-call@29:warning"],
            &[10],
        ),
        ("call-inside.jsonl", &["orphan-tool-call@16:warning"], &[10]),
        // The last user turn (begun by its `item_completed` UserMessage)
        // taken back: its prompt and answer are not sent.
        ("rolled-back.jsonl", &[], &[8]),
        ("fork-base-missing", &["missing-fork-parent@1:error"], &[2]),
        ("fork-base-present", &[], &[10, 2]),
    ];
    let mut failures = Vec::new();
    for (fixture, want, messages) in table {
        let (rc, doc) = lint_json(&paginated(fixture), &["--fail-on", "info"]);
        let got = findings(&doc);
        if got != *want {
            failures.push(format!("{fixture}: expected {want:?}, got {got:?}"));
        }
        if rc != i32::from(!want.is_empty()) {
            failures.push(format!("{fixture}: exit {rc}"));
        }
        let read: Vec<u64> = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["messages"].as_u64().unwrap())
            .collect();
        if read != *messages {
            failures.push(format!(
                "{fixture}: messages {read:?}, expected {messages:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_findings_quote_what_codex_answers() {
    let (_, doc) = lint_json(&paginated("missing-final-ordinal.jsonl"), &[]);
    assert!(
        doc["findings"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("final paginated rollout record at … is missing an ordinal"),
        "{doc:#}"
    );
    let (_, doc) = lint_json(&paginated("reused-ordinal.jsonl"), &[]);
    assert!(
        doc["findings"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("thread history projection expected ordinal 17, got 16"),
        "{doc:#}"
    );
    let (_, doc) = lint_json(&paginated("fork-base-missing"), &[]);
    assert!(
        doc["findings"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("invalid paginated history lineage for 01a22347-de2f-7520-8cac-9a2f1784286e: missing source rollout"),
        "{doc:#}"
    );
    let (_, doc) = lint_json(&paginated("unknown-line-kind.jsonl"), &[]);
    let summary = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("thread_snapshot is not read"),
        "{summary}"
    );
}

/// An unanswered call at the end of a paginated rollout is answered by a
/// line that carries the next ordinal: without it the copy's last line
/// has none, and Codex refuses to resume the copy (`final paginated
/// rollout record … is missing an ordinal`). Inside the rollout no ordinal
/// is free: the finding is left, and Codex answers the call itself.
#[test]
fn a_repair_keeps_a_paginated_rollout_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(paginated("ends-on-call.jsonl"));
    let out = dir.path().join("copy.jsonl");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(edit_lines(&log), ["answer-call@29"], "{log:#}");
    let copy = std::fs::read_to_string(&out).unwrap();
    let last: serde_json::Value = serde_json::from_str(copy.lines().last().unwrap()).unwrap();
    assert_eq!(last["ordinal"], 29, "{last}");
    assert_eq!(last["payload"]["output"], "aborted", "{last}");
    let (rc, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");

    let input = root().join(paginated("call-inside.jsonl"));
    let out = dir.path().join("inside.jsonl");
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(log["edits"].as_array().unwrap().is_empty(), "{log:#}");
    assert!(
        log["left"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("inside a paginated rollout"),
        "{log:#}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
}

/// The last line of a paginated rollout without its ordinal (Codex
/// refuses to resume: `final paginated rollout record … is missing an
/// ordinal`) gets the one after the highest before it, spliced in where
/// the client writes it: the copy is byte for byte the rollout the pinned
/// client wrote (`fresh.jsonl`), the line as it was is in the log, and a
/// second repair changes nothing. A line inside the history is left.
#[test]
fn the_last_line_gets_the_ordinal_codex_would_have_given_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(paginated("missing-final-ordinal.jsonl"));
    let (out, log) = repair_logged(&input, dir.path());
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(root().join(paginated("fresh.jsonl"))).unwrap(),
        "the copy is not the rollout the client wrote"
    );
    assert_eq!(edit_lines(&log), ["set-ordinal@28"], "{log:#}");
    let input_text = std::fs::read_to_string(&input).unwrap();
    assert_eq!(
        log["edits"][0]["before"].as_str(),
        input_text.lines().last(),
        "{log:#}"
    );
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// The pinned Codex (tests/oracle/install.sh) writes a fresh session,
/// offline against the mock provider (tests/oracle/fresh.py): two turns.
/// chatfsck reads every item of it (each `response_item` line is a message
/// it read, the prompts and answers among them) with no finding at all, as
/// the client wrote it and compressed as the client compresses it. When a
/// client bump changes what it writes, this test fails first.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Codex client and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn a_fresh_session_of_the_pinned_client_reads_whole_and_clean() {
    let prefix = std::env::var_os("CLIENTS_PREFIX")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("target/tools/clients"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fresh");
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/oracle/fresh.py"))
        .args(["codex", out.to_str().unwrap(), "--timeout", "180"])
        .env("CLIENTS_PREFIX", &prefix)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    let summary: serde_json::Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "fresh.py printed no summary: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
    assert_eq!(summary["version"], "0.169.0", "{summary}");
    for run in summary["runs"].as_array().unwrap() {
        assert_eq!(run["rc"], 0, "the client failed: {summary}");
    }
    assert_eq!(summary["model_requests"], 2, "{summary}");
    let rollouts = summary["rollouts"].as_array().unwrap();
    assert_eq!(rollouts.len(), 1, "{summary}");
    let rollout = out.join(rollouts[0].as_str().unwrap());

    // The response items the client wrote, by line.
    let written = std::fs::read_to_string(&rollout).unwrap();
    let mut items = Vec::new();
    for (i, l) in written.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["ordinal"].is_u64(), "line {} has no ordinal: {l}", i + 1);
        if v["type"] == "response_item" {
            items.push((
                i as u64 + 1,
                v["payload"]["type"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert!(items.iter().any(|(_, t)| t == "message"), "{written}");

    // Compressed as Codex compresses an idle rollout.
    let zst = dir.path().join("rollout-fresh.jsonl.zst");
    std::fs::write(
        &zst,
        zstd::stream::encode_all(written.as_bytes(), 3).unwrap(),
    )
    .unwrap();
    let home = out.join("codex-home/sessions");
    for input in [rollout.as_path(), zst.as_path(), home.as_path()] {
        let (rc, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
        assert_eq!(rc, 0, "{}: {doc:#}", input.display());
        assert!(
            doc["findings"].as_array().unwrap().is_empty(),
            "{}: {doc:#}",
            input.display()
        );
        assert_eq!(doc["files"][0]["dialect"], "codex", "{doc:#}");
        if input == home {
            // The Codex home's tree: read as one rollout, clean.
            assert_eq!(doc["files"].as_array().unwrap().len(), 1, "{doc:#}");
            continue;
        }
        let o = run(&["inspect", "--format", "json", input.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let conv = &doc["conversations"][0];
        let lines: Vec<u64> = conv["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["line"].as_u64().unwrap())
            .collect();
        let item_lines: Vec<u64> = items.iter().map(|(l, _)| *l).collect();
        assert_eq!(
            lines, item_lines,
            "every response item is a message read, and nothing else: {items:?}"
        );
        let previews: Vec<&str> = conv["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["preview"].as_str().unwrap())
            .collect();
        for prompt in summary["prompts"].as_array().unwrap() {
            assert!(
                previews.contains(&prompt.as_str().unwrap()),
                "{prompt} not read: {previews:?}"
            );
        }
    }
}

/// Codex's history projection (`thread_history_1.sqlite`) indexes a
/// paginated rollout from where it stopped. The pinned client writes a
/// session and indexes it; its first user message is then rewritten
/// shorter (a hand edit, a sync). chatfsck reports the projection out of
/// step; Codex refuses to fork the thread, as the finding says; `repair
/// --in-place` resets the thread's projection (the rollout needs no
/// edit), after which the rollout lints clean and Codex forks it
/// (tests/oracle/fresh.py `codex-projection` runs the steps).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Codex client and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn a_projection_left_behind_a_shorter_rollout_is_found_and_reset() {
    let summary = fresh_codex_steps("codex-projection");
    assert_eq!(summary["version"], "0.169.0", "{summary}");
    let steps = summary["steps"].as_array().unwrap();
    let step = |name: &str, n: usize| {
        steps
            .iter()
            .filter(|s| s["step"] == name)
            .nth(n)
            .unwrap_or_else(|| panic!("no step {name} #{n}: {summary}"))
    };
    assert_eq!(step("exec", 0)["rc"], 0, "{summary}");
    // Found, with what Codex answers.
    let lint = step("chatfsck lint", 0);
    assert_eq!(lint["rc"], 1, "{summary}");
    let findings = lint["doc"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{summary}");
    assert_eq!(findings[0]["rule"], "projection-out-of-step", "{summary}");
    assert!(
        findings[0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("durable rollout shrank before projection"),
        "{summary}"
    );
    // Codex refuses the fork, as the finding says.
    let before = step("fork-before", 0);
    assert_ne!(before["rc"], 0, "{summary}");
    assert!(
        before["errors"]
            .to_string()
            .contains("durable rollout shrank before projection"),
        "{summary}"
    );
    // The repair resets the projection; the rollout needs no edit.
    let repair = step("chatfsck repair", 0);
    assert_eq!(repair["rc"], 0, "{summary}");
    assert_eq!(
        repair["doc"]["edits"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    assert!(repair["doc"].get("backup").is_none(), "{summary}");
    assert!(
        repair["doc"]["companion"]
            .as_str()
            .unwrap()
            .contains("was reset"),
        "{summary}"
    );
    assert!(
        repair["doc"]["left"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    let after = step("chatfsck lint", 1);
    assert_eq!(after["rc"], 0, "{summary}");
    assert!(
        after["doc"]["findings"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    // And Codex forks the thread.
    assert_eq!(step("fork-after", 0)["rc"], 0, "{summary}");
}

/// A Codex home holding `fresh.jsonl` as its thread's rollout, and a
/// projection (`thread_history_1.sqlite`, its state table as Codex
/// 0.169.0 creates it) that has read `next_byte` bytes of it.
fn projected_home(
    file: &str,
    next_byte: i64,
) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let thread = "01a22347-de2f-7520-8cac-9a2f1784286e";
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("codex/sessions/2026/11/28");
    std::fs::create_dir_all(&day).unwrap();
    let rollout = day.join(format!("rollout-2026-11-28T17-50-42-{thread}.jsonl"));
    std::fs::copy(root().join(paginated(file)), &rollout).unwrap();
    let db = dir.path().join("codex/thread_history_1.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, \
         next_rollout_byte_offset INTEGER NOT NULL, next_rollout_ordinal INTEGER NOT NULL); \
         CREATE TABLE thread_items (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, \
         item_id TEXT NOT NULL, rollout_ordinal INTEGER NOT NULL, created_at_ms INTEGER NOT NULL, \
         item_json TEXT NOT NULL, PRIMARY KEY (thread_id, turn_id, item_id)); \
         CREATE TABLE thread_turns (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, \
         rollout_ordinal INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (thread_id, turn_id));",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO thread_history_projection_state VALUES (?1, ?2, 28)",
        rusqlite::params![thread, next_byte],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO thread_items VALUES (?1, 't', 'i', 12, 0, '{}')",
        [thread],
    )
    .unwrap();
    drop(conn);
    (dir, rollout, db)
}

/// In step (the projection has read the whole rollout): nothing to say.
/// Behind a shorter rollout: `projection-out-of-step`, which a repair into
/// a copy leaves (the index is the client's, beside the original) and
/// `--in-place` settles by removing the thread's projection rows, writing
/// no backup, since the rollout needs no edit.
#[test]
fn a_projection_is_judged_against_the_rollout_it_indexes() {
    let len = std::fs::metadata(root().join(paginated("fresh.jsonl")))
        .unwrap()
        .len() as i64;
    let (_dir, rollout, _) = projected_home("fresh.jsonl", len);
    let (rc, doc) = lint_json(rollout.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");

    let (dir, rollout, db) = projected_home("fresh.jsonl", len + 500);
    let (rc, doc) = lint_json(rollout.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc:#}");
    assert_eq!(rule_lines(&doc), ["projection-out-of-step@1"], "{doc:#}");
    // What the finding says (the temporary folder's name aside).
    let text = serde_json::to_string_pretty(&doc["findings"][0])
        .unwrap()
        .replace(dir.path().to_str().unwrap(), "<tmp>");
    insta::assert_snapshot!("projection_out_of_step_finding", text);
    // The tree of the home: the same.
    let (_, doc) = lint_json(dir.path().join("codex").to_str().unwrap(), &[]);
    assert_eq!(rule_lines(&doc), ["projection-out-of-step@1"], "{doc:#}");

    let db_before = std::fs::read(&db).unwrap();
    let out = dir.path().join("copy.jsonl");
    let o = run(&[
        "repair",
        rollout.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let rep: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rep["left"][0]["rule"], "projection-out-of-step", "{rep:#}");
    assert!(rep.get("companion").is_none(), "{rep:#}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        db_before,
        "a copy leaves the index"
    );

    let before = std::fs::read(&rollout).unwrap();
    let o = run(&["repair", "--in-place", rollout.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("was reset") && stdout(&o).contains("the file needed no edit"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        std::fs::read(&rollout).unwrap(),
        before,
        "the rollout is as it was"
    );
    let backups = std::fs::read_dir(rollout.parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(backups, 1, "no backup of a file that was not replaced");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for table in ["thread_history_projection_state", "thread_items"] {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }
    let (rc, doc) = lint_json(rollout.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(rc, 0, "{doc:#}");
    // A second repair has nothing to do.
    let o = run(&["repair", "--in-place", rollout.to_str().unwrap()]);
    assert!(!stdout(&o).contains("also:"), "{}", stdout(&o));

    // A projection in step with a rollout that `--in-place` rewrites
    // (an answer inserted for the unanswered call at its end): it indexed
    // the old bytes, so it is reset with the replacement.
    let len = std::fs::metadata(root().join(paginated("ends-on-call.jsonl")))
        .unwrap()
        .len() as i64;
    let (_dir, rollout, db) = projected_home("ends-on-call.jsonl", len);
    let o = run(&[
        "repair",
        "--in-place",
        rollout.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rep: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!rep["edits"].as_array().unwrap().is_empty(), "{rep:#}");
    assert!(rep["backup"].is_string(), "{rep:#}");
    assert!(
        rep["companion"].as_str().unwrap().contains("was reset"),
        "{rep:#}"
    );
    let n: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM thread_history_projection_state",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

/// A fork's rollout holds only its own lines: Codex replays the first
/// `history_base.end_byte_offset` bytes of its base's rollout before them.
/// A repair of the base never changes those bytes (Codex refuses to resume
/// the fork once the base ends before them: tests/oracle/fresh.py
/// `codex-fork`); what lies after them is repaired as usual.
#[test]
fn a_repair_leaves_the_bytes_a_fork_replays() {
    let dir = tempfile::tempdir().unwrap();
    let day = "codex-home/sessions/2026/11/28";
    std::fs::create_dir_all(dir.path().join(day)).unwrap();
    let fixture = root().join(paginated("fork-base-present")).join(day);
    let base_name = "rollout-2026-11-28T17-50-42-01a22347-de2f-7520-8cac-9a2f1784286e.jsonl";
    let fork_name = "rollout-2026-11-28T18-21-47-01a22364-5337-73a0-a230-b933384368d1.jsonl";
    let torn =
        r#"{"timestamp":"2026-11-28T17-50-43.000Z","type":"response_item","payload":{"type":"mess"#;
    // Torn lines at 5 and 25 of the base; the fork's cutoff at line 21.
    let mut lines: Vec<String> = std::fs::read_to_string(fixture.join(base_name))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(4, torn.to_string());
    lines.insert(24, torn.to_string());
    let base_text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let cut: usize = lines[..20].iter().map(|l| l.len() + 1).sum();
    let base = dir.path().join(day).join(base_name);
    std::fs::write(&base, &base_text).unwrap();
    let fork_text = std::fs::read_to_string(fixture.join(fork_name)).unwrap();
    let fork_text = fork_text.replacen(
        "\"end_byte_offset\":106418",
        &format!("\"end_byte_offset\":{cut}"),
        1,
    );
    assert!(fork_text.contains(&format!("\"end_byte_offset\":{cut}")));
    std::fs::write(dir.path().join(day).join(fork_name), &fork_text).unwrap();

    let out = dir.path().join("repaired.jsonl");
    let o = run(&[
        "repair",
        "--format",
        "json",
        base.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The torn line after the cutoff goes; the one before it is left, and
    // the log says why.
    assert_eq!(edit_lines(&log), ["drop-record@25"], "{log:#}");
    let left = log["left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{log:#}");
    assert_eq!(left[0]["location"]["line"], 5, "{log:#}");
    let reason = left[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("01a22364-5337-73a0-a230-b933384368d1")
            && reason.contains(&format!("first {cut} bytes"))
            && reason.contains("cutoff byte offset is past the source rollout"),
        "{reason}"
    );
    let copy = std::fs::read(&out).unwrap();
    assert_eq!(copy[..cut], base_text.as_bytes()[..cut], "the fork's bytes");
    assert_eq!(copy.len(), base_text.len() - torn.len() - 1);

    // Out of a Codex home, no fork is known: both torn lines go.
    let alone = dir.path().join("alone.jsonl");
    std::fs::write(&alone, &base_text).unwrap();
    let out = dir.path().join("alone-repaired.jsonl");
    let o = run(&[
        "repair",
        "--format",
        "json",
        alone.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        edit_lines(&log),
        ["drop-record@5", "drop-record@25"],
        "{log:#}"
    );
}

/// The same with the pinned client: Codex forks a thread whose rollout
/// holds a torn line; `repair --in-place` of the base leaves that line
/// (the fork replays it) and the fork resumes; dropped by hand, as a
/// repair without the guard would, Codex refuses to resume the fork.
/// After the base grew past the cutoff, a torn line among the new lines
/// is dropped, and both threads resume (tests/oracle/fresh.py
/// `codex-fork` runs the steps).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Codex client and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn a_fork_resumes_after_its_base_is_repaired_in_place() {
    let summary = fresh_codex_steps("codex-fork");
    assert_eq!(summary["version"], "0.169.0", "{summary}");
    assert!(
        summary["fork"]["history_base"]["end_byte_offset"].is_u64(),
        "{summary}"
    );
    let steps = summary["steps"].as_array().unwrap();
    let step = |name: &str, n: usize| {
        steps
            .iter()
            .filter(|s| s["step"] == name)
            .nth(n)
            .unwrap_or_else(|| panic!("no step {name} #{n}: {summary}"))
    };
    for name in [
        "exec",
        "fork",
        "resume-fork",
        "resume-base",
        "resume-fork-after",
        "resume-base-after",
    ] {
        assert_eq!(step(name, 0)["rc"], 0, "{name}: {summary}");
    }
    let fork_id = summary["fork"]["id"].as_str().unwrap();
    // First repair: the torn line lies in the bytes the fork replays.
    let first = &step("chatfsck repair", 0)["doc"];
    assert_eq!(step("chatfsck repair", 0)["rc"], 0, "{summary}");
    assert!(first["edits"].as_array().unwrap().is_empty(), "{summary}");
    let left = first["left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{summary}");
    assert!(
        left[0]["reason"].as_str().unwrap().contains(fork_id),
        "{summary}"
    );
    // The control: Codex refuses the fork once those bytes change.
    let control = step("resume-fork-control", 0);
    assert_ne!(control["rc"], 0, "{summary}");
    assert!(
        control["errors"]
            .to_string()
            .contains("cutoff byte offset is past the source rollout"),
        "{summary}"
    );
    // Second repair: the torn line after the cutoff goes, the first stays.
    let second = &step("chatfsck repair", 1)["doc"];
    assert_eq!(step("chatfsck repair", 1)["rc"], 0, "{summary}");
    assert_eq!(second["edits"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(second["edits"][0]["action"], "drop-record", "{summary}");
    assert_eq!(second["left"].as_array().unwrap().len(), 1, "{summary}");
}

/// The summary line of a `tests/oracle/fresh.py` run of the pinned Codex
/// in `mode` (`codex-projection`, `codex-fork`): each step's exit code
/// and output.
fn fresh_codex_steps(mode: &str) -> serde_json::Value {
    let prefix = std::env::var_os("CLIENTS_PREFIX")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("target/tools/clients"));
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/oracle/fresh.py"))
        .args([mode, dir.path().join("out").to_str().unwrap()])
        .args([
            "--chatfsck",
            env!("CARGO_BIN_EXE_chatfsck"),
            "--timeout",
            "180",
        ])
        .env("CLIENTS_PREFIX", &prefix)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "fresh.py printed no summary: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        })
}
