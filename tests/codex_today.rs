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
