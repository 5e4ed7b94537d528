//! Claude Code sessions as the real client (2.1.330) resumes them: every
//! fixture under fixtures/claude-code/ gives exactly the findings its
//! README's "linter" column names (rule, severity, line), and the real
//! sessions in fixtures/corpus raise no error.

mod common;
use common::*;

/// `rule severity line` of every finding (`-` for a file-level one), sorted.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let line = match f["location"]["line"].as_u64() {
                Some(l) => l.to_string(),
                None => "-".to_string(),
            };
            format!(
                "{} {} {line}",
                f["rule"].as_str().unwrap(),
                f["severity"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// fixtures/claude-code/README.md, column "linter".
const EXPECTED: &[(&str, &[&str])] = &[
    ("healthy/linear.jsonl", &[]),
    ("healthy/parallel-tool-calls.jsonl", &[]),
    ("healthy/split-message-result-between.jsonl", &[]),
    ("healthy/split-message-chain-through-result.jsonl", &[]),
    ("healthy/hook-progress-chain.jsonl", &[]),
    ("healthy/two-turns-stop-hooks.jsonl", &[]),
    ("healthy/thinking.jsonl", &[]),
    ("healthy/compact-boundary.jsonl", &[]),
    ("healthy/live-tail.jsonl", &["orphan-tool-call warning 25"]),
    ("healthy/subagent.jsonl", &[]),
    ("healthy/image-prompt.jsonl", &[]),
    (
        "unknown-block-type/assistant-text.jsonl",
        &["unknown-block-type error 25"],
    ),
    (
        "unknown-block-type/tool-result.jsonl",
        &["orphan-tool-call error 23", "unknown-block-type error 24"],
    ),
    (
        "mismatched-message-id/first-call.jsonl",
        &["mismatched-message-id warning 5"],
    ),
    (
        "mismatched-message-id/middle-call.jsonl",
        &["mismatched-message-id error 6"],
    ),
    (
        "mismatched-message-id/last-call.jsonl",
        &["mismatched-message-id error 7"],
    ),
    (
        "dangling-parent/progress-deleted-gap-2s.jsonl",
        &["dangling-parent warning 7"],
    ),
    (
        "dangling-parent/progress-deleted-gap-5000ms.jsonl",
        &["dangling-parent warning 16"],
    ),
    (
        "dangling-parent/progress-deleted-gap-5001ms.jsonl",
        &["dangling-parent error 16"],
    ),
    (
        "dangling-parent/progress-deleted-gap-13s.jsonl",
        &["dangling-parent error 16"],
    ),
    (
        "dangling-parent/all-progress-stripped.jsonl",
        &[
            "dangling-parent error 13",
            "dangling-parent warning 15",
            "dangling-parent warning 16",
            "dangling-parent warning 2",
            "dangling-parent warning 6",
            "dangling-parent warning 9",
        ],
    ),
    (
        "dangling-parent/turn-duration-deleted.jsonl",
        &["dangling-parent error 35"],
    ),
    (
        "nul-run/nul-tool-result.jsonl",
        &[
            "corrupt-record error 17",
            "dangling-parent warning 18",
            "orphan-tool-call error 16",
        ],
    ),
    (
        "nul-run/nul-user-prompt.jsonl",
        &["corrupt-record error 15", "dangling-parent error 16"],
    ),
    ("nul-run/nul-last-line.jsonl", &["corrupt-record error 25"]),
    (
        "torn-write/torn-user-prompt.jsonl",
        &["corrupt-record error 22", "dangling-parent error 23"],
    ),
    (
        "torn-write/torn-then-next-record.jsonl",
        &[
            "corrupt-record error 17",
            // the result on line 18 is bridged to line 16 (4,074 ms)
            "dangling-parent warning 18",
            "orphan-tool-call error 16",
            "orphan-tool-result error 18",
        ],
    ),
    (
        "torn-tail/last-line-torn-no-newline.jsonl",
        &["corrupt-record error 25"],
    ),
    (
        "duplicate-uuid/different-records-adjacent.jsonl",
        &["duplicate-uuid error 21"],
    ),
    (
        "duplicate-uuid/different-record-appended.jsonl",
        &["duplicate-uuid error 26"],
    ),
    (
        "duplicate-uuid/exact-duplicate-adjacent.jsonl",
        &["duplicate-uuid warning 18"],
    ),
    (
        "duplicate-uuid/exact-duplicate-appended.jsonl",
        &["duplicate-uuid warning 26"],
    ),
    (
        "duplicate-uuid/side-branch-record-appended.jsonl",
        &["duplicate-uuid error 33", "stale-leaf error 33"],
    ),
    (
        "glued-records/prompt-glued-to-summary.jsonl",
        &["glued-records warning 3"],
    ),
    (
        "glued-records/final-answer-glued-to-summary.jsonl",
        &["glued-records warning 12"],
    ),
    (
        "lone-surrogate/assistant-text.jsonl",
        &["lone-surrogate warning 20"],
    ),
    (
        "lone-surrogate/user-prompt.jsonl",
        &["lone-surrogate warning 15"],
    ),
    (
        "lone-surrogate/tool-result.jsonl",
        &["lone-surrogate warning 17"],
    ),
    (
        "empty-text-block/assistant-empty.jsonl",
        &["empty-message warning 20"],
    ),
    (
        "empty-text-block/assistant-whitespace.jsonl",
        &["empty-message warning 20"],
    ),
    (
        "empty-text-block/user-prompt-whitespace.jsonl",
        &["empty-message error 22"],
    ),
    (
        "empty-text-block/final-answer-empty.jsonl",
        &["empty-message warning 25"],
    ),
    (
        "thinking-signature/missing.jsonl",
        &["thinking-signature error 7"],
    ),
    (
        "thinking-signature/empty.jsonl",
        &["thinking-signature error 7"],
    ),
    (
        "thinking-signature/truncated.jsonl",
        &["thinking-signature error 7"],
    ),
    // Four characters altered: only the server can tell.
    ("thinking-signature/damaged.jsonl", &[]),
    // The later record's parent descends from the uuid it reuses. The
    // client sends 5 of 20 units and a request starting with an
    // assistant turn: the messages above the cycle in the file are lost,
    // though none is older in time (an error, which said "nothing is
    // lost" before).
    (
        "duplicate-uuid/reused-uuid-closes-a-cycle.jsonl",
        &["duplicate-uuid error 26", "parent-cycle error 26"],
    ),
    (
        "oversized-image/wider-than-8000-px.jsonl",
        &["oversized-image error 2"],
    ),
    // Cut at a base64 quantum: well-formed base64 that no longer frames.
    (
        "thinking-signature/cut-at-a-quantum.jsonl",
        &["thinking-signature error 7"],
    ),
    (
        "orphan-tool-call/middle-result-deleted.jsonl",
        &["dangling-parent warning 17", "orphan-tool-call error 16"],
    ),
    (
        "orphan-tool-call/parallel-sibling-result-deleted.jsonl",
        &["orphan-tool-call error 6"],
    ),
    (
        "orphan-tool-call/parallel-chain-result-deleted.jsonl",
        &["dangling-parent warning 10", "orphan-tool-call error 5"],
    ),
    (
        "orphan-tool-call/end-truncated-after-tool-use.jsonl",
        &["orphan-tool-call warning 23"],
    ),
    (
        "orphan-tool-result/tool-use-deleted.jsonl",
        &["dangling-parent warning 16", "orphan-tool-result error 16"],
    ),
    (
        "orphan-tool-result/parallel-tool-use-deleted.jsonl",
        &["dangling-parent warning 6", "orphan-tool-result error 8"],
    ),
    (
        "dangling-parent/torn-prompt-result-before-call.jsonl",
        &["corrupt-record error 22", "dangling-parent error 24"],
    ),
    (
        "unchained-records/all-parents-null.jsonl",
        &["unchained-records error -"],
    ),
    (
        "parent-cycle/root-points-to-leaf.jsonl",
        &["parent-cycle warning 2"],
    ),
    (
        "duplicate-tool-call-id/later-call-reuses-id.jsonl",
        &["duplicate-tool-call-id error 18"],
    ),
    (
        "invalid-tool-arguments/input-is-a-string.jsonl",
        &["invalid-tool-arguments error 23"],
    ),
    // A tool name over 200 characters: the client cuts it to 200.
    (
        "invalid-tool-name/name-over-200-characters.jsonl",
        &["invalid-tool-name warning 23"],
    ),
    // A NUL in a tool name: sent as stored, refused.
    (
        "invalid-tool-name/nul-in-name.jsonl",
        &["invalid-tool-name error 23"],
    ),
    // A tool search result naming a tool of 82 characters: sent while the
    // tool is offered, and refused (`tool_reference.tool_name`).
    (
        "invalid-tool-name/tool-reference-over-64-characters.jsonl",
        &["invalid-tool-name error 24"],
    ),
    (
        "empty-text-block/blank-text-beside-calls.jsonl",
        &["empty-text-block warning 3"],
    ),
    // A server tool's call in one reply (paused), its result in the next:
    // the client leaves the call out and sends the result, refused.
    (
        "orphan-tool-result/server-tool-result-in-the-next-reply.jsonl",
        &["orphan-tool-result error 24"],
    ),
    // The same with the advisor: the client leaves both out.
    (
        "orphan-tool-result/advisor-result-in-the-next-reply.jsonl",
        &["orphan-tool-result warning 24"],
    ),
];

fn fixture(name: &str) -> String {
    format!("fixtures/claude-code/{name}")
}

#[test]
fn every_fixture_gives_the_readme_findings() {
    let mut failures = Vec::new();
    for (name, want) in EXPECTED {
        let path = fixture(name);
        let (code, doc) = lint_json(&path, &["--fail-on", "info"]);
        let got = findings(&doc);
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        if got != want {
            failures.push(format!("{path}:\n  expected {want:?}\n  got      {got:?}"));
        }
        let expect = if want.is_empty() { 0 } else { 1 };
        if code != expect {
            failures.push(format!("{path}: exit {code}, expected {expect}"));
        }
        assert_eq!(doc["files"][0]["dialect"], "claude-code", "{path}");
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_table_covers_every_fixture() {
    let mut on_disk: Vec<String> = walkdir::WalkDir::new(root().join("fixtures/claude-code"))
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| {
            e.path()
                .strip_prefix(root().join("fixtures/claude-code"))
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = EXPECTED.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it generates the fixture"
)]
fn an_image_over_5_mb_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("image-over-5mb.jsonl");
    let made = std::process::Command::new("python3")
        .arg(root().join("fixtures/claude-code/gen_oversized_image.py"))
        .arg(&out)
        .current_dir(root())
        .output()
        .expect("python3 runs (it generates the 7.9 MB fixture)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (exit, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(findings(&doc), vec!["oversized-image error 2"], "{doc:#}");
    assert_eq!(exit, 1);
    let summary = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(summary.contains("7842560 base64 characters"), "{summary}");
    // Issue 39, pattern 4: the copy carries a text block in the image's
    // place, saying what was removed and why; the log keeps the image.
    let copy = dir.path().join("copy.jsonl");
    let log = dir.path().join("log.json");
    let o = run(&[
        "repair",
        out.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let recs = records(&copy);
    let content = &recs[1]["message"]["content"];
    let marker = content[1]["text"].as_str().unwrap();
    assert_eq!(content[1]["type"], "text");
    assert!(
        marker.contains("Image removed by chatfsck repair")
            && marker.contains("7842560 characters (7.5 MB), over the 5 MB"),
        "{marker}"
    );
    assert_eq!(content[0], {
        let input = records(&out);
        input[1]["message"]["content"][0].clone()
    });
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let edit = &log["edits"][0];
    assert_eq!(edit["action"], "replace-image");
    assert!(edit["before"].as_str().unwrap().len() > 7_842_560);
    let (exit, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!((exit, findings(&doc)), (0, vec![]), "{doc:#}");
}

/// The head of a PNG whose IHDR says `w`×`h`: all the rule reads of an
/// image is its header (the API would read the rest).
fn png_head(w: u32, h: u32) -> String {
    use base64::Engine as _;
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// healthy/image-prompt.jsonl with its image replaced by `n` images of
/// `w`×`h` pixels.
fn with_images(n: usize, w: u32, h: u32) -> (tempfile::TempDir, String) {
    let src = std::fs::read_to_string(fixture("healthy/image-prompt.jsonl")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    let mut rec: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let content = rec["message"]["content"].as_array_mut().unwrap();
    let mut image = content[1].clone();
    image["source"]["data"] = png_head(w, h).into();
    content.splice(1..2, std::iter::repeat_n(image, n));
    lines[1] = rec.to_string();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("images.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    (dir, p.to_str().unwrap().to_string())
}

/// The API's pixel limits: 8000 px a side, 2000 px when the request holds
/// more than 20 images (anthropics/claude-code#13480 quotes the error).
#[test]
fn an_image_too_large_in_pixels_is_refused() {
    let (_d, p) = with_images(1, 9000, 120);
    let (code, doc) = lint_json(&p, &[]);
    assert_eq!(findings(&doc), vec!["oversized-image error 2"], "{doc:#}");
    assert_eq!(code, 1);
    let s = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(
        s.contains("9000×120 pixels, over the API's 8000-pixel limit"),
        "{s}"
    );
    let (_d, p) = with_images(1, 7999, 2100);
    let (code, doc) = lint_json(&p, &[]);
    assert_eq!((code, findings(&doc)), (0, vec![]), "{doc:#}");
    let (_d, p) = with_images(21, 2100, 100);
    let (code, doc) = lint_json(&p, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 21, "{doc:#}");
    let note = doc.to_string();
    assert!(
        note.contains("for many-image requests: 2000 pixels"),
        "{note}"
    );
    let (_d, p) = with_images(20, 2100, 100);
    let (code, doc) = lint_json(&p, &[]);
    assert_eq!((code, findings(&doc)), (0, vec![]), "{doc:#}");
    // An image the resume does not send (its record is off the chain the
    // client walks: the next record starts a chain of its own) is refused
    // by nobody.
    let (_d, p) = with_images(1, 9000, 120);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut rec: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    rec["parentUuid"] = serde_json::Value::Null;
    lines[2] = rec.to_string();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let (_, doc) = lint_json(&p, &[]);
    assert!(
        !findings(&doc)
            .iter()
            .any(|f| f.starts_with("oversized-image")),
        "{doc:#}"
    );
}

/// Two images the API refuses in one tool result: the repair replaces
/// both in its first pass (the second was looked for among the images
/// left once the first was text, not found, and left to a second pass
/// over the repaired copy), and the copy is clean.
#[test]
fn two_refused_images_in_one_tool_result_are_both_replaced() {
    let src = std::fs::read_to_string(fixture("healthy/linear.jsonl")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    let mut rec: serde_json::Value = serde_json::from_str(&lines[7]).unwrap();
    let image = serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_head(9000, 120)}});
    let result = &mut rec["message"]["content"][0];
    assert_eq!(result["type"], "tool_result");
    result["content"] =
        serde_json::json!([{"type": "text", "text": "two screenshots"}, image, image]);
    lines[7] = rec.to_string();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("two-images.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let (exit, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(
        (exit, findings(&doc)),
        (
            1,
            vec![
                "oversized-image error 8".to_string(),
                "oversized-image error 8".to_string()
            ]
        ),
        "{doc:#}"
    );
    let (copy, log) = (dir.path().join("copy.jsonl"), dir.path().join("log.json"));
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(log["left"], serde_json::json!([]), "{log:#}");
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{log:#}");
    for e in edits {
        assert_eq!(e["action"], "replace-image", "{e:#}");
        let d = e["description"].as_str().unwrap();
        assert!(!d.contains("pass 2"), "{d}");
    }
    let content = &records(&copy)[7]["message"]["content"][0]["content"];
    let kinds: Vec<&str> = content
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "text", "text"], "{content:#}");
    let (exit, doc) = lint_json(copy.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!((exit, findings(&doc)), (0, vec![]), "{doc:#}");
}

#[test]
fn a_resume_that_loses_history_says_how_much() {
    let (_, doc) = lint_json(&fixture("dangling-parent/turn-duration-deleted.jsonl"), &[]);
    let s = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(s.contains("218.007 s older"), "{s}");
    assert!(s.contains("the resume keeps 12 of 26 messages"), "{s}");
    let (_, doc) = lint_json(
        &fixture("dangling-parent/progress-deleted-gap-5001ms.jsonl"),
        &[],
    );
    let f = &doc["findings"][0];
    assert!(f["summary"].as_str().unwrap().contains("5.001 s older"));
    let notes = f["notes"].to_string();
    assert!(
        notes.contains("starts with an assistant message"),
        "{notes}"
    );
}

#[test]
fn a_tail_call_is_patched_by_the_client_and_may_be_running() {
    let (_, doc) = lint_json(&fixture("healthy/live-tail.jsonl"), &[]);
    let notes = doc["findings"][0]["notes"].to_string();
    assert!(notes.contains("may simply be running"), "{notes}");
    assert!(notes.contains("[Tool call interrupted"), "{notes}");
    assert!(notes.contains("No response requested."), "{notes}");
}

#[test]
fn real_sessions_raise_no_error() {
    let corpus = root().join("fixtures/corpus");
    assert!(corpus.exists(), "{} is not present", corpus.display());
    let (_, doc) = lint_json(corpus.to_str().unwrap(), &["--fail-on", "info"]);
    let errors: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn snapshots_of_human_and_json_output() {
    for (name, _) in EXPECTED {
        let path = fixture(name);
        let snap = name.replace('/', "__");
        let human = stdout(&run(&["lint", &path]));
        insta::assert_snapshot!(format!("claude_code_lint_human__{snap}"), human);
        let json = stdout(&run(&["lint", "--format", "json", &path]));
        insta::assert_snapshot!(format!("claude_code_lint_json__{snap}"), json);
    }
}

/// The rules whose findings `repair` fixes in a Claude Code session.
const REPAIRED: &[&str] = &[
    "corrupt-record",
    "duplicate-tool-call-id",
    "invalid-tool-arguments",
    "invalid-tool-name",
    "empty-text-block",
    "oversized-image",
    "stale-leaf",
    "empty-message",
    "dangling-parent",
    "glued-records",
    "lone-surrogate",
    "thinking-signature",
    "orphan-tool-call",
    "orphan-tool-result",
    "unchained-records",
    "duplicate-uuid",
];

/// Where the repaired copies of the broken fixtures are written, for the
/// real-client check (tests/oracle.rs) to resume: one file per fixture,
/// `<group>__<name>.jsonl`.
pub fn repaired_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("claude-code-repaired")
}

#[test]
fn repair_of_every_broken_fixture_is_clean_stable_and_minimal() {
    let dir = repaired_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for (name, want) in EXPECTED {
        if name.starts_with("healthy/") || want.is_empty() {
            continue;
        }
        let input = root().join(fixture(name));
        let out = dir.join(name.replace('/', "__"));
        let log = dir.join(format!("{}.log.json", name.replace('/', "__")));
        let o = run(&[
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--force",
        ]);
        assert!(matches!(code(&o), 0 | 1), "{name}: {}", stderr(&o));
        // Nothing of what repair fixes is left.
        let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
        let left: Vec<String> = findings(&doc)
            .into_iter()
            .filter(|f| REPAIRED.iter().any(|r| f.starts_with(&format!("{r} "))))
            .collect();
        if !left.is_empty() {
            failures.push(format!("{name}: after repair {left:?}"));
        }
        // A second repair changes nothing.
        let again = dir.join(format!("{}.again", name.replace('/', "__")));
        run(&[
            "repair",
            out.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
            "--force",
        ]);
        if std::fs::read(&out).unwrap() != std::fs::read(&again).unwrap() {
            failures.push(format!("{name}: a second repair changed the copy"));
        }
        std::fs::remove_file(&again).ok();
        // Every line the log does not name is in the copy, in order, byte
        // for byte.
        let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
        let edited: std::collections::HashSet<u64> = log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["before"].is_string())
            .filter_map(|e| e["location"]["line"].as_u64())
            .collect();
        let original = std::fs::read(&input).unwrap();
        let copy = std::fs::read(&out).unwrap();
        let copy_lines: Vec<&[u8]> = copy.split(|&b| b == b'\n').collect();
        let mut at = 0;
        for (i, line) in original.split(|&b| b == b'\n').enumerate() {
            if edited.contains(&(i as u64 + 1)) || line.is_empty() {
                continue;
            }
            match copy_lines[at..].iter().position(|l| *l == line) {
                Some(k) => at += k + 1,
                None => {
                    failures.push(format!(
                        "{name}: line {} is not in the copy as it was",
                        i + 1
                    ));
                    break;
                }
            }
        }
        // The copy's changed lines are the logged ones (inserted records
        // add lines).
        let inserted = log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["before"].is_null())
            .count();
        let unchanged = original
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(i, l)| !l.is_empty() && !edited.contains(&(*i as u64 + 1)))
            .count();
        let copy_records = copy_lines.iter().filter(|l| !l.is_empty()).count();
        if copy_records > unchanged + edited.len() * 2 + inserted {
            failures.push(format!(
                "{name}: the copy has more lines than the edits explain"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn repair_splits_glued_records_and_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.jsonl");
    let input = root().join(fixture("glued-records/final-answer-glued-to-summary.jsonl"));
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let original = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    // The same bytes, with one newline more: between the two records.
    assert_eq!(copy.len(), original.len() + 1);
    assert_eq!(copy.replace('\n', ""), original.replace('\n', ""));
    assert_eq!(copy.lines().count(), original.lines().count() + 1);
}

#[test]
fn repair_answers_a_middle_call_and_chains_the_next_record_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.jsonl");
    let input = root().join(fixture("orphan-tool-call/middle-result-deleted.jsonl"));
    run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let copy = std::fs::read_to_string(&out).unwrap();
    let recs: Vec<serde_json::Value> = copy
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = &recs[15];
    let result = &recs[16];
    let next = &recs[17];
    assert_eq!(result["parentUuid"], call["uuid"]);
    assert_eq!(next["parentUuid"], result["uuid"]);
    assert_eq!(result["timestamp"], call["timestamp"]);
    let block = &result["message"]["content"][0];
    assert_eq!(block["is_error"], true);
    assert_eq!(
        block["tool_use_id"], call["message"]["content"][0]["id"],
        "{block}"
    );
}

/// The records of a JSON Lines file.
fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Repair a session of tests/data/claude-code into a directory of its own:
/// the copy's records, its findings, and what else the directory holds.
fn repair_data(name: &str) -> (Vec<serde_json::Value>, Vec<String>, Vec<String>) {
    repair_in("tests/data/claude-code", name)
}

const MISMATCHED: &str = "fixtures/claude-code/mismatched-message-id";

/// Repair the session `name` of the directory `dir` (from the root) into a
/// directory of its own, as [`repair_data`].
fn repair_in(dir: &str, name: &str) -> (Vec<serde_json::Value>, Vec<String>, Vec<String>) {
    let input = root().join(dir).join(name);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(matches!(code(&o), 0 | 1), "{name}: {}", stderr(&o));
    let (_, doc) = lint_json(out.to_str().unwrap(), &[]);
    let others = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != name)
        .collect();
    (records(&out), findings(&doc), others)
}

/// A Grep call (line 5) lost its parent; the client bridges it to line 2,
/// 4,244 ms older. The record before it in the file (line 4) is newer
/// than it, and line 7, written last, takes line 3's uuid: linked to "the
/// record before it", line 5 hung under line 4, and the client, which
/// resumes from the newest descendant of the last record, started its walk
/// at line 4, above the call: the real client sent 4 of 7 units, where the
/// input sends 6 (a repair_file fuzzer find). The repair writes the
/// bridges the client makes.
#[test]
fn repair_writes_the_clients_bridge_where_file_order_would_lose_history() {
    let (recs, found, others) = repair_data("bridged-behind-a-newer-record.jsonl");
    assert_eq!(recs[4]["parentUuid"], recs[1]["uuid"], "line 5 → line 2");
    assert_eq!(recs[6]["parentUuid"], recs[5]["uuid"], "line 7 → line 6");
    // The replaced record is the input's (report-only): no new finding.
    assert_eq!(found, ["duplicate-uuid error 7"]);
    assert!(others.is_empty(), "left beside the copy: {others:?}");
}

/// One reply written as several records, two of them holding the same
/// call (a record without a `uuid` repeats a later one's `Write`, from a
/// repair_file find). Claude Code merges a reply's records and sends one
/// tool_use per id: the real client resumes this session with a valid
/// request, the call once, its result after it (tests/oracle.rs). Lint
/// counted the call twice: one answered, one an `orphan-tool-call`, and a
/// `duplicate-tool-call-id`; and the repair kept as it was an input whose
/// copy this is.
#[test]
fn a_call_repeated_in_a_reply_is_sent_once() {
    let path = root().join("tests/data/claude-code/call-repeated-in-a-reply.jsonl");
    let (_, doc) = lint_json(path.to_str().unwrap(), &[]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
}

/// The same session with its line 2 lost, as a crash loses a line (found
/// by damaging the sessions of tests/data): lines 2 and 6 hold one uuid,
/// and both they and line 4 name parents no record has. The client takes
/// line 6 for that uuid, bridges it to line 5, and stops at line 4 (nothing
/// within 5 s before it): its request starts with an assistant turn and is
/// refused. Linked in file order, line 4 hung under line 3, newer than it:
/// the client's walk then started at line 3 and left lines 4–5 out (the
/// repair kept the input as it was). As time has it, line 4 goes under the
/// newest record before it that is not newer (line 1) and line 6 under the
/// record the client bridges it to: the real client sends every unit but
/// the replaced call, in a valid request (tests/oracle.rs).
#[test]
fn repair_links_as_time_has_it_where_file_order_links_under_a_newer_record() {
    let (recs, found, others) = repair_data("lost-line-behind-a-bridged-record.jsonl");
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[3]["parentUuid"], recs[0]["uuid"], "line 4 → line 1");
    assert_eq!(recs[5]["parentUuid"], recs[4]["uuid"], "line 6 → line 5");
    // The replaced record is the input's (report-only): no new finding.
    assert_eq!(found, ["duplicate-uuid error 6"]);
    assert!(others.is_empty(), "left beside the copy: {others:?}");
}

/// The same session with line 7 an exact copy of line 3: the input resumes
/// from that copy and leaves lines 5–6 out. Once the copy is dropped, the
/// resume reaches line 5, and linked in file order (under line 4) it sends
/// every message; the client's bridge would leave lines 3–4 out.
#[test]
fn repair_links_in_file_order_where_that_keeps_more() {
    let (recs, found, others) = repair_data("copy-over-a-bridged-branch.jsonl");
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[4]["parentUuid"], recs[3]["uuid"], "line 5 → line 4");
    assert!(found.is_empty(), "{found:?}");
    assert!(others.is_empty(), "left beside the copy: {others:?}");
}

/// One API reply, written as four records (thinking, then three parallel
/// calls, their results on side branches), with one record's `message.id`
/// damaged, off the branch the resume walks. Claude Code brings the rest
/// of the reply in by `message.id` and leaves that record and its result
/// out without a word (2.1.330 sent 12 of 14 units). With `requestId`s
/// (the last call) and without (the middle call, whose reply goes on under
/// it), lint reports it; the repair gives it the reply's `message.id`, and
/// the copy reads clean (the oracle sends it whole: tests/oracle.rs).
#[test]
fn a_split_reply_record_with_another_message_id_is_found_and_mended() {
    for (name, line, call) in [
        ("last-call.jsonl", 7, "toolu_0111NTR6CCh1e6u1jBAu9yZe"),
        ("middle-call.jsonl", 6, "toolu_01TAxJUnmZSk4Bq6e8dYXSwi"),
    ] {
        let input = root().join(MISMATCHED).join(name);
        let (code_in, doc) = lint_json(input.to_str().unwrap(), &[]);
        assert_eq!(code_in, 1, "{name}");
        assert_eq!(
            findings(&doc),
            [format!("mismatched-message-id error {line}")],
            "{name}"
        );
        let f = &doc["findings"][0];
        assert_eq!(f["ids"][0], call, "{name}: {f:#}");
        assert!(
            f["summary"]
                .as_str()
                .unwrap()
                .contains("out of the request"),
            "{name}: {f:#}"
        );
        let (recs, found, others) = repair_in(MISMATCHED, name);
        assert!(found.is_empty(), "{name}: {found:?}");
        assert!(
            others.is_empty(),
            "{name}: left beside the copy: {others:?}"
        );
        let reply = &recs[3]["message"]["id"];
        assert_eq!(&recs[line - 1]["message"]["id"], reply, "{name}");
        assert_eq!(
            recs[line - 1]["message"]["content"][0]["id"],
            call,
            "{name}"
        );
    }
}

/// The same reply with its first call's record carrying another
/// `message.id`: that record is on the branch the resume walks, and
/// Claude Code sends it as a reply of its own, after the rest of the reply
/// and its results (2.1.330: 14 of 14 units, a valid request). A warning,
/// not an error; the repair gives the record the reply's id all the same,
/// which is the file as the client wrote it.
#[test]
fn a_split_reply_record_with_another_message_id_on_the_walk_is_a_warning() {
    let name = "first-call.jsonl";
    let input = root().join(MISMATCHED).join(name);
    let (code_in, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code_in, 0);
    assert_eq!(findings(&doc), ["mismatched-message-id warning 5"]);
    assert!(
        doc["findings"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("a reply of its own"),
        "{doc:#}"
    );
    let (recs, found, _) = repair_in(MISMATCHED, name);
    assert!(found.is_empty(), "{found:?}");
    let healthy = records(&root().join("fixtures/claude-code/healthy/parallel-tool-calls.jsonl"));
    assert_eq!(recs, healthy, "the copy is the file as the client wrote it");
}

/// A repair_file find, made from `thinking-signature/truncated.jsonl`:
/// line 12's parent is missing, and the client bridges it to the thinking
/// record on line 7 (2.5 s older); line 21, an exact copy of line 12
/// written last, is the one the client walks. The repair removes line 7
/// (its signature is refused) and line 21 (a copy): line 12 was then left
/// with a missing parent and nothing within 5 s to bridge to, and the
/// copy's resume started at it, without the prompt. Line 12 is linked past
/// the removed record, to the prompt (the oracle sends the copy whole).
#[test]
fn a_record_bridged_to_a_removed_record_is_linked_past_it() {
    let (recs, found, others) = repair_data("bridged-to-a-removed-thinking-block.jsonl");
    assert!(found.is_empty(), "{found:?}");
    assert!(others.is_empty(), "left beside the copy: {others:?}");
    let text = recs
        .iter()
        .find(|r| r["uuid"] == "b5d93735-6144-4784-b613-07756c66fe16")
        .unwrap();
    let prompt = recs.iter().find(|r| r["type"] == "user").unwrap();
    assert_eq!(text["parentUuid"], prompt["uuid"]);
}

/// A repair_file find (`fuzz/regressions/repair_file/claude-code-relink-of-
/// a-replaced-record-joined-the-tree`, its first byte the file name): a
/// record written twice with different content, the later last in the
/// file, hangs under a stray result the repair removes. Re-linking the
/// earlier copy (which the client never loads) joined the later one's
/// tree, so the later one was taken for an ancestor of every record and
/// made a root: the copy resumed 1 of 6 messages, against 4 sent by the
/// input. It is now linked past the removed result as the earlier copy
/// is, and the resume keeps all 6; a leaf that leaves nothing out is no
/// `stale-leaf`. The removed result's parent is a call this repair
/// answers: the later record goes under the inserted result, so the chain
/// holds both results in a row (the client sends them as one message).
#[test]
fn a_replaced_records_relink_does_not_cut_the_later_one_loose() {
    let r = repair_regression(
        "claude-code-relink-of-a-replaced-record-joined-the-tree",
        "history.json",
    );
    let (_, doc) = lint_json(r.copy.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["duplicate-uuid error 11"], "{doc:#}");
    let timeline = timeline(&r.copy);
    let sent: Vec<(String, Vec<String>)> = timeline
        .iter()
        .map(|m| {
            let ids = m["tool_ids"].as_array().unwrap();
            (
                m["role"].as_str().unwrap().to_string(),
                ids.iter()
                    .map(|i| i.as_str().unwrap()[11..].to_string())
                    .collect(),
            )
        })
        .collect();
    let s = |role: &str, ids: &[&str]| {
        (
            role.to_string(),
            ids.iter().map(|i| i.to_string()).collect(),
        )
    };
    assert_eq!(
        sent,
        [
            s("user", &[]),
            s(
                "assistant",
                &["016tbodT5CtBRJqqi7vKsFvG", "01AE52DNTFXnbYCYZbNxhzWc"]
            ),
            s("user", &["01AE52DNTFXnbYCYZbNxhzWc"]),
            s("user", &["016tbodT5CtBRJqqi7vKsFvG"]),
        ],
        "{timeline:#?}"
    );
}

/// A repair_file find (`fuzz/regressions/repair_file/claude-code-relink-to-
/// a-uuid-a-later-record-replaces`): an Edit call whose parent the repair
/// removes was linked to "the record before it", whose uuid a later record
/// of different content also has. The client resolves that uuid to the
/// later record, which the client bridges back to the call: a cycle, and
/// the copy's resume left the call out (the input's sent it). A record a
/// later kept one replaces is no longer a record to link to.
#[test]
fn a_relink_never_targets_a_uuid_a_later_record_replaces() {
    let r = repair_regression(
        "claude-code-relink-to-a-uuid-a-later-record-replaces",
        "session.jsonl",
    );
    let (_, doc) = lint_json(r.copy.to_str().unwrap(), &[]);
    assert!(
        !findings(&doc).iter().any(|f| f.starts_with("stale-leaf")),
        "{doc:#}"
    );
    let recs = records(&r.copy);
    let call = recs
        .iter()
        .position(|r| r["uuid"] == "3ac43b34-2909-42a6-a100-08748e1b7de3")
        .unwrap();
    let lines: Vec<u64> = timeline(&r.copy)
        .iter()
        .filter_map(|m| m["line"].as_u64())
        .collect();
    assert!(lines.contains(&(call as u64 + 1)), "{lines:?}");
}

/// A repair_file find (`fuzz/regressions/repair_file/claude-code-relink-
/// to-a-still-dangling-parent`): two records name the same missing parent
/// with one timestamp, so the client bridges each to the other. The copy
/// with the client's links re-linked one to the other, which stayed
/// dangling; a second repair (which starts in file order) then re-linked
/// it, answered the call it now reached and dropped an empty message. A
/// copy with the client's links is kept only where a repair in file order
/// would leave it as it is: the second repair changes nothing.
#[test]
fn a_copy_with_the_clients_links_is_kept_only_as_a_fixpoint() {
    let r = repair_regression(
        "claude-code-relink-to-a-still-dangling-parent",
        "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    );
    let again = r.copy.with_file_name("again.jsonl");
    let o = run(&[
        "repair",
        r.copy.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["edits"], serde_json::json!([]), "{report:#}");
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&r.copy).unwrap()
    );
}

/// A repair_file find (`fuzz/regressions/repair_file/claude-code-uuid-
/// not-where-it-was-read`): records glued and cut into each other leave
/// one whose message holds a `uuid` member of the record's own value. The
/// repair that gives the record a new uuid found two members where it
/// looked for one and refused the file (exit 2) that lint reads. The
/// record's own member (of the record itself, not of its message) now
/// gets the new uuid, and a second repair changes nothing.
#[test]
fn a_uuid_inside_the_message_is_not_the_records() {
    let r = repair_regression(
        "claude-code-uuid-not-where-it-was-read",
        "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    );
    assert_eq!(code(&r.out), 0, "{}", stderr(&r.out));
    let again = r.copy.with_file_name("again.jsonl");
    let o = run(&[
        "repair",
        r.copy.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["edits"], serde_json::json!([]), "{report:#}");
}

/// A record whose call block the repair mends (its `input` no object)
/// and whose bytes are not all UTF-8 elsewhere (issue 34, repair_file
/// finds `claude-code-content-not-where-it-was-read`, `-2`): the writer
/// looked for the block in the record's raw bytes, which no JSON parser
/// takes, and refused the file lint reads (exit 2). The record is now
/// written as the client reads it (U+FFFD for each such byte), its block
/// mended, and the log keeps the record's own bytes.
#[test]
fn a_block_edit_in_a_record_not_utf8_is_written_as_read() {
    use base64::Engine as _;
    for input in [
        "claude-code-content-not-where-it-was-read",
        "claude-code-content-not-where-it-was-read-2",
    ] {
        let r = repair_regression(input, "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl");
        let raw4 = r.input.split(|&b| b == b'\n').nth(3).unwrap();
        assert!(
            std::str::from_utf8(raw4).is_err(),
            "{input}: line 4 is not UTF-8"
        );
        let edits = r.log["edits"].as_array().unwrap();
        let e = edits
            .iter()
            .find(|e| e["rule"] == "invalid-tool-arguments")
            .unwrap_or_else(|| panic!("{input}: {:#}", r.log));
        assert_eq!(
            e["before_base64"],
            base64::engine::general_purpose::STANDARD.encode(raw4),
            "{input}: {e:#}"
        );
        let copy = std::fs::read_to_string(&r.copy).expect("the copy is UTF-8");
        let line = copy
            .lines()
            .find(|l| l.contains("toolu_bdrk_01QRsKello.md"))
            .unwrap();
        let rec: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(rec["message"]["content"][0]["input"], serde_json::json!({}));
        assert!(line.contains('\u{FFFD}'), "{input}: {line}");
        assert_second_repair_changes_nothing(&r.copy, r.copy.parent().unwrap());
    }
}

/// A repair_file regression input repaired: its directory, the input's
/// bytes, the copy, what repair printed, and its log.
struct Repaired {
    _dir: tempfile::TempDir,
    input: Vec<u8>,
    copy: std::path::PathBuf,
    out: std::process::Output,
    log: serde_json::Value,
}

/// Repair a repair_file regression input (its first byte picks the file
/// name the fuzzer saved it under, `name`) into a directory of its own,
/// with a log.
fn repair_regression(input: &str, name: &str) -> Repaired {
    let bytes = std::fs::read(root().join("fuzz/regressions/repair_file").join(input)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, &bytes[1..]).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let (copy, log) = (out.join(name), dir.path().join("log.json"));
    let o = run(&[
        "repair",
        path.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(matches!(code(&o), 0 | 1), "{input}: {}", stderr(&o));
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    Repaired {
        _dir: dir,
        input: bytes[1..].to_vec(),
        copy,
        out: o,
        log,
    }
}

/// `inspect`'s timeline of the first conversation of `path`: the messages
/// a resume sends.
fn timeline(path: &std::path::Path) -> Vec<serde_json::Value> {
    let o = run(&["inspect", "--format", "json", path.to_str().unwrap()]);
    let inspect: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    inspect["conversations"][0]["timeline"]
        .as_array()
        .unwrap()
        .clone()
}

/// A repair_file find (`claude-code-cycle-bridge-target-removed`): a record
/// whose parent is its own descendant, which the client breaks by bridging
/// to a stray result 4.9 s older. The repair removed that result and left
/// the record as it was (its parent is present), and the copy's resume
/// stopped there: 2 of 5 messages, where the input's sent 4 besides the
/// strays. The record is now linked past the removed result.
#[test]
fn a_cycle_broken_at_a_removed_record_is_linked_past_it() {
    let r = repair_regression(
        "claude-code-cycle-bridge-target-removed",
        "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    );
    let (_, doc) = lint_json(r.copy.to_str().unwrap(), &[]);
    assert!(
        !findings(&doc).iter().any(|f| f.starts_with("parent-cycle")),
        "{doc:#}"
    );
    let timeline = timeline(&r.copy);
    assert!(timeline.len() >= 6, "{timeline:#?}");
}

/// Never worse: where the writer's copy would hold more errors of a rule
/// than its input (here a repair_file find, `claude-code-interleaved-
/// message-gained`: answering a call puts its result between two records
/// the client merges into one message), or would not settle
/// (`claude-code-second-repair-not-a-no-op`), the copy is the input as it
/// is, and every finding is left with the reason. (A copy with a new error
/// of a rule that says which history a resume leaves out, whose resume
/// leaves out a record the input's sent, is kept so too; its find,
/// `claude-code-unchained-records-gained`, is repaired since lint reads a
/// stop-hook summary whose parent is lost as the client does: see
/// `a_stop_hook_summary_whose_parent_is_lost_is_not_the_leaf`.)
#[test]
fn a_copy_worse_than_its_input_keeps_the_input() {
    for (input, name, why) in [
        (
            "claude-code-interleaved-message-gained",
            "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
            "would hold 1 interleaved-message error(s) more than the input",
        ),
        (
            "claude-code-second-repair-not-a-no-op",
            "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
            "the repair does not settle",
        ),
    ] {
        let r = repair_regression(input, name);
        assert_eq!(std::fs::read(&r.copy).unwrap(), r.input, "{input}");
        let log = &r.log;
        assert!(
            log["edits"].as_array().unwrap().is_empty(),
            "{input}: {log:#}"
        );
        let left = log["left"].as_array().unwrap();
        assert!(!left.is_empty(), "{input}");
        // Every finding the repair would have fixed gives the reason;
        // those no repair fixes (report-only rules, a case its rule does
        // not repair) keep their own.
        for l in left {
            let reason = l["reason"].as_str().unwrap();
            assert!(
                reason.contains(why)
                    || reason.contains("report-only")
                    || reason.contains("no repair for this case"),
                "{input}: {l:#}"
            );
        }
        assert!(
            left.iter()
                .any(|l| l["reason"].as_str().unwrap().contains(why)),
            "{input}"
        );
        assert!(stdout(&r.out).contains(why), "{input}: {}", stdout(&r.out));
    }
}

/// A reply's last call sits on a record without a uuid (line 8), and no
/// result answers it before the conversation moves on. The client sends
/// the call with the rest of the reply (merged by `message.id`), finds it
/// unanswered and removes it without a word (2.1.330: 11 of 13 units).
/// The repair answers it on a side branch off the record the call's
/// record hangs from, where the reply's other result hangs: the copy reads
/// clean and the client sends the call with its placeholder (13 of 14,
/// tests/oracle.rs). Made from a repair_file find
/// (`claude-code-call-on-a-record-without-uuid-left-unanswered`), whose
/// repair once skipped such a call without a word.
#[test]
fn a_call_on_a_record_without_uuid_is_answered_off_its_parent() {
    let name = "call-on-a-record-without-uuid.jsonl";
    let input = root().join("tests/data/claude-code").join(name);
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["orphan-tool-call error 8"]);
    let (recs, found, others) = repair_data(name);
    assert!(found.is_empty(), "{found:?}");
    assert!(others.is_empty(), "left beside the copy: {others:?}");
    assert_eq!(recs.len(), 16);
    let (call, result) = (&recs[7], &recs[8]);
    assert!(call.get("uuid").is_none());
    assert_eq!(result["parentUuid"], call["parentUuid"]);
    assert_eq!(
        result["message"]["content"][0]["tool_use_id"],
        "toolu_0111NTR6CCh1e6u1jBAu9yZe"
    );
    assert_eq!(result["message"]["content"][0]["is_error"], true);
    // The fuzz find: every call answered, nothing left without a word.
    let r = repair_regression(
        "claude-code-call-on-a-record-without-uuid-left-unanswered",
        "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    );
    assert_eq!(code(&r.out), 0, "{}", stderr(&r.out));
    let (_, doc) = lint_json(r.copy.to_str().unwrap(), &[]);
    assert!(findings(&doc).is_empty(), "{:?}", findings(&doc));
    let answered: Vec<_> = r.log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "answer-call")
        .map(|e| e["ids"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        answered,
        [
            "toolu_01WZaVU3pU1jT7kGLEBNU5pz",
            "toolu_0111NTR6CCh1e6u1jBAu9yZe"
        ]
    );
}

/// `lost-line-behind-a-bridged-record.jsonl` with a byte that is not UTF-8
/// inside line 3's `timestamp` (the conservation test's damage): line 3's
/// time cannot be read. Linked as the client bridges, line 4 went under
/// line 3 (the record before it, whose time was taken as no newer), and
/// the client's walk left lines 4-5 out, so the repair kept the input,
/// whose request is refused (it starts with an assistant turn). A record
/// whose time cannot be read is now passed over as maybe newer: line 4
/// goes under line 1, line 6 under line 5, and the client sends every
/// message in a valid request (2.1.330; line 2 is replaced by line 6).
#[test]
fn a_record_whose_time_is_damaged_is_not_linked_under() {
    let r = repair_regression(
        "claude-code-linked-under-a-record-whose-time-is-damaged",
        "d530d2dc-eba4-4a3a-9aa1-0658cddb8af2.jsonl",
    );
    assert_eq!(code(&r.out), 0, "{}", stderr(&r.out));
    let (_, doc) = lint_json(r.copy.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["duplicate-uuid error 6"]);
    let bytes = std::fs::read(&r.copy).unwrap();
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let rec = |i: usize| -> serde_json::Value { serde_json::from_slice(lines[i]).unwrap() };
    assert_eq!(rec(3)["parentUuid"], rec(0)["uuid"], "line 4 → line 1");
    assert_eq!(rec(5)["parentUuid"], rec(4)["uuid"], "line 6 → line 5");
    // Line 3 is kept byte for byte, its damage included.
    assert_eq!(lines[2], r.input.split(|&b| b == b'\n').nth(2).unwrap());
}

/// Line 8's tool result lost its `type` (`"ty@e"`). Claude Code removes a
/// block without a `type` before it sends the request (2.1.330: the
/// request is valid, 17 of 19 units, the call that result answered
/// removed as unanswered), so lint reports it as a warning, not as a
/// refused request, and the emptied message is no message: no
/// `interleaved-message` or `empty-message` on it. The repair removes the
/// record into the log and answers the call: the client sends all 19
/// (tests/oracle.rs). A repair_file find
/// (`claude-code-untyped-block-brought-back`): lint called such a block a
/// refused request, and a re-link that brought it into the resume then
/// failed the contract.
#[test]
fn a_block_without_type_is_what_the_client_drops() {
    let name = "result-block-without-type.jsonl";
    let input = root().join("tests/data/claude-code").join(name);
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        ["orphan-tool-call error 4", "unknown-block-type warning 8"]
    );
    let (recs, found, others) = repair_data(name);
    assert!(found.is_empty(), "{found:?}");
    assert!(others.is_empty(), "left beside the copy: {others:?}");
    assert!(
        recs.iter().all(|r| !r.to_string().contains("\"ty@e\"")),
        "the untyped block is gone from the copy"
    );
}

/// A record that names a member twice (`timestamp` on line 3, a text
/// block's `text` on line 13, a result's `tool_use_id` on line 17): the
/// client's `JSON.parse` keeps the last value of each, and the resume
/// sends every unit (the oracle, 2.1.330: 19 of 19). lint called line 3
/// "not a message record" that the client skips, said the resume kept 17
/// of 18 messages, and the repair dropped the line: its copy sent 18.
/// Each is now read as the client reads it, and the copy is the input.
#[test]
fn a_member_named_twice_is_read_as_the_client_reads_it() {
    let input = root().join("tests/data/claude-code/member-named-twice.jsonl");
    let (code, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(findings(&doc).is_empty(), "{doc:#}");
    let o = run(&["inspect", input.to_str().unwrap(), "--format", "json"]);
    let text = stdout(&o);
    assert!(!text.contains("a draft the client never reads"), "{text}");
    assert!(!text.contains("toolu_not_this_one"), "{text}");
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
    assert_eq!(log["edits"].as_array().unwrap().len(), 0, "{log:#}");
}

/// Line 4 names `parentUuid` twice: its own parent first, a uuid no record
/// has last. The client reads the last and bridges the record to line 3
/// (a warning). The re-link edited the first `parentUuid`, which the
/// client does not read; the record is now written as the client reads
/// it, the parent once, re-linked, and the log keeps the line as it was.
#[test]
fn a_parent_named_twice_is_relinked_where_the_client_reads_it() {
    let input = root().join("tests/data/claude-code/parent-named-twice.jsonl");
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["dangling-parent warning 4"]);
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    let was = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    let line4 = copy.lines().nth(3).unwrap();
    let rec: serde_json::Value = serde_json::from_str(line4).unwrap();
    assert_eq!(line4.matches("\"parentUuid\":").count(), 1, "{line4}");
    assert_eq!(rec["parentUuid"], "f4dfad6e-e564-4e66-b8b0-b469f5204e23");
    let others = |t: &str| -> Vec<String> {
        t.lines()
            .enumerate()
            .filter(|(i, _)| *i != 3)
            .map(|(_, l)| l.to_string())
            .collect()
    };
    assert_eq!(others(&copy), others(&was), "only line 4 changes");
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log:#}");
    assert_eq!(edits[0]["action"], "relink");
    assert_eq!(edits[0]["before"], was.lines().nth(3).unwrap());
    let (code, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_second_repair_changes_nothing(&out, d.path());
}

/// The same record with a byte that is not UTF-8 in its tool input
/// (found by `repair_file`, `claude-code-named-twice-record-not-utf8-relinked`).
/// The client decodes the line with that byte as U+FFFD and reads the
/// record; so does lint. The repair, which writes such a record as read,
/// parsed the raw bytes instead and failed ("line 4: the record no longer
/// reads", exit 2). It now writes the record as read, the byte as U+FFFD,
/// and the log keeps the line's own bytes.
#[test]
fn a_parent_named_twice_in_a_record_not_utf8_is_relinked() {
    let mut bytes =
        std::fs::read(root().join("tests/data/claude-code/parent-named-twice.jsonl")).unwrap();
    let at = bytes
        .windows(11)
        .position(|w| w == b"def main():")
        .expect("line 4's tool input");
    bytes.insert(at + 5, 0xFF);
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("parent-named-twice.jsonl");
    std::fs::write(&input, &bytes).unwrap();
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["dangling-parent warning 4"]);
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let (out, log) = repair_logged(&input, &out_dir);
    let copy = std::fs::read_to_string(&out).expect("the copy is UTF-8");
    let line4 = copy.lines().nth(3).unwrap();
    let rec: serde_json::Value = serde_json::from_str(line4).unwrap();
    assert_eq!(line4.matches("\"parentUuid\":").count(), 1, "{line4}");
    assert_eq!(rec["parentUuid"], "f4dfad6e-e564-4e66-b8b0-b469f5204e23");
    assert!(line4.contains("def m\u{FFFD}ain():"), "{line4}");
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log:#}");
    assert_eq!(edits[0]["action"], "relink");
    use base64::Engine as _;
    let raw_line4 = bytes.split(|&b| b == b'\n').nth(3).unwrap();
    let raw_line4 = base64::engine::general_purpose::STANDARD.encode(raw_line4);
    assert_eq!(edits[0]["before_base64"], raw_line4, "{log:#}");
    let (code, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_second_repair_changes_nothing(&out, &out_dir);
}

/// The final answer of a turn lost (a write that never reached the
/// disk), the stop-hook summary written after it kept: the summary's
/// parent is gone, and nothing within 5 s is older. The client does not
/// resume from that summary: it sends the whole history
/// (`tests/oracle.rs`, 12 units of 12), where lint said it sent none (an
/// error on the summary, "the resume keeps 0 of 9 messages").
#[test]
fn a_stop_hook_summary_whose_parent_is_lost_is_not_the_leaf() {
    let input = root().join("tests/data/claude-code/stop-hook-after-a-lost-answer.jsonl");
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(findings(&doc), Vec::<String>::new(), "{doc:#}");
    assert_eq!(doc["summary"]["messages"], 9, "{doc:#}");
}

/// A new prompt whose parent is a `progress` record, whose own parent is
/// lost with nothing within 5 s older: the client does not load the
/// progress record, takes its parent, finds none, and sends the prompt
/// alone (1 unit of 13, `tests/oracle.rs`). The repair re-links the
/// prompt past the progress record; it used to make no edit and leave no
/// finding (its parent, the progress record, is in the file).
#[test]
fn a_record_under_a_progress_record_whose_parent_is_lost_is_relinked() {
    let input = root()
        .join("tests/data/claude-code/prompt-under-a-progress-record-whose-parent-is-lost.jsonl");
    let (_, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(findings(&doc), ["dangling-parent error 21"], "{doc:#}");
    assert_eq!(doc["summary"]["messages"], 1, "{doc:#}");
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{log:#}");
    assert_eq!(edits[0]["action"], "relink", "{log:#}");
    let line21 = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .nth(20)
        .unwrap()
        .to_string();
    let rec: serde_json::Value = serde_json::from_str(&line21).unwrap();
    // Line 19's tool result, the record before it that is loaded.
    assert_eq!(rec["parentUuid"], "3e0ce3c0-5860-4ede-83c3-d3104f02f84d");
    let (code, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["summary"]["messages"], 10, "{doc:#}");
    assert_second_repair_changes_nothing(&out, d.path());
}

/// A tool result written without the newline before it, glued to the
/// line of its call (`linear.jsonl`, lines 18 and 19 on one line). Claude
/// Code 2.1.330 reads the first record of such a line only: the result is
/// lost, the call left unanswered is removed, and the request lacks both
/// (`tests/oracle.rs`). Lint called the line a warning, "Claude Code reads
/// them all". It is an error naming what is lost; the repair writes each
/// record on its own line, which gives back the file as it was.
#[test]
fn a_record_glued_after_another_is_lost_to_claude_code() {
    let input = root().join("tests/data/claude-code/result-glued-to-its-call.jsonl");
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(findings(&doc), ["glued-records error 18"], "{doc:#}");
    let summary = doc["findings"][0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("reads the first and loses the rest on resume (`user`)"),
        "{summary}"
    );
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(log["edits"][0]["action"], "split-line", "{log:#}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(root().join("fixtures/claude-code/healthy/linear.jsonl")).unwrap()
    );
    // A summary glued after a message costs nothing: the client never
    // sends it. Still worth a line of its own, for every other reader.
    let (code, doc) = lint_json(
        "fixtures/claude-code/glued-records/prompt-glued-to-summary.jsonl",
        &[],
    );
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(findings(&doc), ["glued-records warning 3"], "{doc:#}");
}

/// The session's first prompt lost (`linear.jsonl` without line 2): the
/// reply to it is the oldest record, its parent missing. Claude Code
/// starts the conversation with that reply and the request is refused
/// (`first_not_user`, `tests/oracle.rs`). Lint said "nothing is lost"
/// (a warning), and the repair set the reply's `parentUuid` to null: a
/// copy that linted clean and was refused all the same. It is an error,
/// left as it is by the repair, with the reason.
#[test]
fn a_reply_whose_prompt_is_lost_starts_a_refused_conversation() {
    let input = root().join("tests/data/claude-code/first-prompt-lost.jsonl");
    let (code, doc) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(findings(&doc), ["dangling-parent error 2"], "{doc:#}");
    assert!(
        doc["findings"][0]["notes"]
            .to_string()
            .contains("first message must use"),
        "{doc:#}"
    );
    let d = tempfile::tempdir().unwrap();
    let (out, log) = repair_logged(&input, d.path());
    assert!(log["edits"].as_array().unwrap().is_empty(), "{log:#}");
    assert_eq!(log["left"][0]["rule"], "dangling-parent", "{log:#}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
}

/// A record with no `parentUuid` member at all, linked by the repair,
/// gets the member written first: an insertion. Its log entry said
/// `"parentUuid":null` → the new parent, bytes the record never held, and
/// the record as it was was in neither the copy nor the log (a repair_file
/// find, `claude-code-parent-member-added-logged-as-replaced`). The entry's
/// `before` is now the whole record as it was.
#[test]
fn a_parent_member_added_is_logged_with_the_whole_record() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl");
    let first = r#"{"type":"user","uuid":"u1","sessionId":"4c2ddfdc-b619-4525-8d03-1950fb1b0257","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#;
    let second = r#"{"type":"assistant","uuid":"a1","sessionId":"4c2ddfdc-b619-4525-8d03-1950fb1b0257","timestamp":"2026-01-01T00:00:01.000Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"hello"}]}}"#;
    std::fs::write(&input, format!("{first}\n{second}\n")).unwrap();
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let (out, log) = repair_logged(&input, &out_dir);
    let relinks: Vec<_> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "relink")
        .collect();
    assert_eq!(relinks.len(), 1, "{log:#}");
    assert_eq!(relinks[0]["before"], second, "{log:#}");
    let copy = std::fs::read_to_string(&out).unwrap();
    let line2 = copy.lines().nth(1).unwrap();
    assert_eq!(relinks[0]["after"], line2, "{log:#}");
    assert!(
        line2.starts_with(r#"{"parentUuid":"u1","type":"assistant""#),
        "{line2}"
    );
}

/// A Claude Code record of `kind` (`user`/`assistant`) with these fields
/// and `content` (a JSON value), one line.
fn cc(kind: &str, uuid: Option<&str>, parent: Option<&str>, second: u32, content: &str) -> String {
    let uuid = uuid.map_or(String::new(), |u| format!(r#""uuid":"{u}","#));
    let parent = parent.map_or("null".to_string(), |p| format!(r#""{p}""#));
    let id = if kind == "assistant" {
        format!(r#""id":"msg_{second}","#)
    } else {
        String::new()
    };
    format!(
        r#"{{"parentUuid":{parent},"type":"{kind}",{uuid}"sessionId":"4c2ddfdc-b619-4525-8d03-1950fb1b0257","timestamp":"2026-01-01T00:00:{second:02}.000Z","message":{{{id}"role":"{kind}","content":{content}}}}}"#
    )
}

/// Write `lines` as the session file `name` in `dir`.
fn session(dir: &std::path::Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

/// Issue 35, defect 5: a line nested deeper than the parsers' limit
/// overflowed the stack of the Claude Code loader (sonic-rs recurses per
/// level): exit 134, and in a directory walk no report for the other
/// sessions. The other JSONL readers report such a line as a
/// `corrupt-record`; so does this one, and the rest is read.
#[test]
fn a_record_nested_too_deep_is_a_corrupt_record_never_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let project = d.path().join("-home-u-repo");
    std::fs::create_dir(&project).unwrap();
    let healthy = root().join("fixtures/claude-code/healthy/linear.jsonl");
    std::fs::copy(&healthy, project.join("healthy.jsonl")).unwrap();
    let depth = 100_000;
    let deep = format!(
        r#"{{"type":"user","uuid":"deep","parentUuid":null,"x":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let mut lines: Vec<String> = std::fs::read_to_string(&healthy)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(2, deep);
    let file = session(&project, "deep.jsonl", &lines);
    let o = run(&["lint", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(findings(&doc), ["corrupt-record error 3"], "{doc:#}");
    assert!(stdout(&o).contains("nested deeper than"), "{}", stdout(&o));
    // In a directory walk (reader threads have smaller stacks), both
    // sessions are reported.
    let o = run(&["lint", "--format", "json", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["files"].as_array().unwrap().len(), 2, "{doc:#}");
    assert_eq!(findings(&doc), ["corrupt-record error 3"], "{doc:#}");
}

/// Issue 35, defect 6: the first record has no `uuid` (or a null one) and
/// the second names a parent no record has. Claude Code bridges the
/// second to the first (1 s older): a warning, nothing lost. The repair
/// re-linked the second to null, the copy resumed the second alone (an
/// `unchained-records` error), and a second repair claimed to fix that and
/// did not. No link can name a record without a uuid: the record is left
/// as the client reads it, and the copy is the input.
#[test]
fn a_bridge_to_a_record_without_uuid_is_not_cut_by_a_relink() {
    for first_uuid in [r#""#, r#""uuid":null,"#] {
        let d = tempfile::tempdir().unwrap();
        let first = cc("user", None, None, 0, r#""hi""#).replacen(
            r#""type":"user","#,
            &format!(r#""type":"user",{first_uuid}"#),
            1,
        );
        let lines = [
            first,
            cc(
                "assistant",
                Some("a1"),
                Some("lost"),
                1,
                r#"[{"type":"text","text":"hello"}]"#,
            ),
        ];
        let input = session(
            d.path(),
            "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
            &lines,
        );
        let (_, before) = lint_json(input.to_str().unwrap(), &[]);
        assert_eq!(
            findings(&before),
            ["dangling-parent warning 2"],
            "{before:#}"
        );
        assert_eq!(timeline(&input).len(), 2);
        let out_dir = d.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let (out, log) = repair_logged(&input, &out_dir);
        let (_, after) = lint_json(out.to_str().unwrap(), &[]);
        assert_eq!(findings(&after), findings(&before), "{after:#}\n{log:#}");
        assert_eq!(timeline(&out).len(), 2, "the copy resumes both: {log:#}");
        assert!(
            log["left"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["rule"] == "dangling-parent"),
            "{log:#}"
        );
        assert_second_repair_changes_nothing(&out, &out_dir);
    }
}

/// The same, as the copy the repair once wrote: no record carries a
/// parent (`unchained-records`), and the record before the last has no
/// uuid to link to. The repair changes nothing and says so: the finding
/// is left, with the reason (it said "0 findings left as is").
#[test]
fn unchained_records_no_link_can_name_are_left_and_said_so() {
    let d = tempfile::tempdir().unwrap();
    let lines = [
        cc("user", None, None, 0, r#""hi""#),
        cc(
            "assistant",
            Some("a1"),
            None,
            1,
            r#"[{"type":"text","text":"hello"}]"#,
        ),
    ];
    let input = session(
        d.path(),
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        &lines,
    );
    let (_, before) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&before),
        ["unchained-records error -"],
        "{before:#}"
    );
    let (out, log) = repair_logged(&input, d.path());
    assert!(log["edits"].as_array().unwrap().is_empty(), "{log:#}");
    assert!(
        log["left"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["rule"] == "unchained-records"),
        "{log:#}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
}

/// Issue 35, defect 7: a tool call's result record (line 4) reuses the
/// uuid of the record before it, the user's `[Request interrupted by
/// user]` (line 3), with the same parent, the call. Keeping both put the
/// earlier between the call and its result: the copy gained an
/// `interleaved-message` error (Claude Code then answers the call with a
/// placeholder and leaves the real result out). The pair is left.
#[test]
fn a_replaced_record_is_not_kept_between_a_call_and_its_result() {
    let d = tempfile::tempdir().unwrap();
    let lines = [
        cc("user", Some("u1"), None, 0, r#""list the files""#),
        cc(
            "assistant",
            Some("a1"),
            Some("u1"),
            1,
            r#"[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]"#,
        ),
        cc(
            "user",
            Some("u2"),
            Some("a1"),
            2,
            r#"[{"type":"text","text":"[Request interrupted by user]"}]"#,
        ),
        cc(
            "user",
            Some("u2"),
            Some("a1"),
            3,
            r#"[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]"#,
        ),
        cc(
            "assistant",
            Some("a2"),
            Some("u2"),
            4,
            r#"[{"type":"text","text":"one file"}]"#,
        ),
    ];
    let input = session(
        d.path(),
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        &lines,
    );
    let (_, before) = lint_json(input.to_str().unwrap(), &[]);
    assert_eq!(findings(&before), ["duplicate-uuid error 4"], "{before:#}");
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let (out, log) = repair_logged(&input, &out_dir);
    let (_, after) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(findings(&after), findings(&before), "{after:#}\n{log:#}");
    let left = log["left"].as_array().unwrap();
    assert!(
        left.iter().any(|l| l["rule"] == "duplicate-uuid"
            && l["reason"].as_str().unwrap().contains("tool result")),
        "{log:#}"
    );
    assert_second_repair_changes_nothing(&out, &out_dir);
}

/// Issue 35, defect 8: a call without its result (line 2) sits above a
/// break in the chain (line 4's parent is lost, a minute after line 3):
/// the input's resume does not reach it. The re-link that mends the break
/// brings it onto the chain, where the next pass meets it; with
/// `--orphan-calls drop` or `--no-synthesize` that pass leaves it, and the
/// run said "0 findings left as is" about a copy holding the error. What
/// the copy holds, the run lists as left.
#[test]
fn a_call_a_relink_brings_back_and_leaves_is_listed_as_left() {
    let lines = [
        cc("user", Some("u1"), None, 0, r#""list the files""#),
        cc(
            "assistant",
            Some("a1"),
            Some("u1"),
            1,
            r#"[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]"#,
        ),
        cc("user", Some("u2"), Some("a1"), 2, r#""never mind""#),
        cc(
            "assistant",
            Some("a2"),
            Some("lost"),
            59,
            r#"[{"type":"text","text":"ok"}]"#,
        ),
        cc("user", Some("u3"), Some("a2"), 59, r#""thanks""#),
    ];
    for policy in [&["--orphan-calls", "drop"][..], &["--no-synthesize"][..]] {
        let d = tempfile::tempdir().unwrap();
        let input = session(
            d.path(),
            "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
            &lines,
        );
        let (_, before) = lint_json(input.to_str().unwrap(), &[]);
        assert_eq!(findings(&before), ["dangling-parent error 4"], "{before:#}");
        let (out, log) = (d.path().join("out.jsonl"), d.path().join("log.json"));
        let mut args = vec![
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ];
        args.extend_from_slice(policy);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{policy:?}: {}", stderr(&o));
        let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
        let (_, copy) = lint_json(out.to_str().unwrap(), &[]);
        let errors: Vec<&str> = copy["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        assert_eq!(errors, ["orphan-tool-call"], "{policy:?}: {copy:#}");
        let left: Vec<&str> = log["left"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["rule"].as_str().unwrap())
            .collect();
        assert!(left.contains(&"orphan-tool-call"), "{policy:?}: {log:#}");
        assert!(
            stdout(&o).contains(&format!("{} finding", left.len()))
                && !stdout(&o).contains("0 findings left"),
            "{policy:?}: {}",
            stdout(&o)
        );
    }
}

/// Issue 35, defect 15: repair time grew with the square of the records
/// that share one `uuid` (each kept under a new uuid, derived by counting
/// from 0 past every uuid made before it: 80,000 took over 5 minutes),
/// and of a chain of records whose parents are lost (the copy's lint
/// walked down from each record of the chain to find a reply going on
/// under it). 20,000 of each took minutes, where they take seconds now
/// (bench/shared_id.sh times them).
#[test]
fn repair_is_linear_in_records_sharing_a_uuid_or_losing_their_parent() {
    let n = 20_000;
    let d = tempfile::tempdir().unwrap();
    let text = |i: usize| format!(r#"[{{"type":"text","text":"draft {i}"}}]"#);
    let mut shared = vec![cc("user", Some("u0"), None, 0, r#""summarise""#)];
    shared.extend((1..=n).map(|i| {
        cc("assistant", Some("a1"), Some("u0"), 1, &text(i)).replacen(
            r#""id":"msg_1""#,
            &format!(r#""id":"msg_{i}""#),
            1,
        )
    }));
    let input = session(
        d.path(),
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        &shared,
    );
    let said = repair_within_a_minute(&input, &d.path().join("out.jsonl"), "one uuid");
    assert!(said.contains(&format!("applied {n} edits")), "{said}");
    // Each reply a second after the one before, its parent lost: bridged,
    // and re-linked. (Timestamps of whole seconds past midnight.)
    let d = tempfile::tempdir().unwrap();
    let mut lost = vec![cc("user", Some("u0"), None, 0, r#""summarise""#)];
    lost.extend((1..=n).map(|i| {
        cc(
            "assistant",
            Some(&format!("a{i}")),
            Some(&format!("lost{i}")),
            0,
            &text(i),
        )
        .replacen(r#""id":"msg_0""#, &format!(r#""id":"msg_{i}""#), 1)
        .replacen(
            "00:00:00.000Z",
            &format!("{:02}:{:02}:{:02}.000Z", i / 3600, i / 60 % 60, i % 60),
            1,
        )
    }));
    let input = session(
        d.path(),
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        &lost,
    );
    let said = repair_within_a_minute(&input, &d.path().join("out.jsonl"), "lost parents");
    assert!(said.contains(&format!("applied {n} edits")), "{said}");
}

/// A session whose large Bash output Claude Code 2.1.330 persisted to
/// `<sessionId>/tool-results/<id>.txt` (the record keeps
/// `<persisted-output>`, the path and a preview), and a sub-agent of it in
/// `<sessionId>/subagents/agent-<id>.jsonl` with its `.meta.json`.
fn session_with_external_output(dir: &std::path::Path) -> std::path::PathBuf {
    let sid = "5f0e2c1a-7b3d-4e9f-8a21-c4d5e6f70819";
    let rec = |v: serde_json::Value| v.to_string();
    let base = |uuid: &str, parent: Option<&str>| {
        serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/app", "sessionId": sid, "version": "2.1.330",
            "uuid": uuid, "timestamp": "2026-11-20T10:00:00.000Z"
        })
    };
    let with = |mut b: serde_json::Value, k: &str, v: serde_json::Value| {
        b[k] = v;
        b
    };
    let output = format!(
        "<persisted-output>\nOutput too large (83.6KB). Full output saved to: /home/dev/.claude/projects/-home-dev-app/{sid}/tool-results/toolu_01ExtOut000000000000001.txt\n\nPreview (first 2KB):\nsrc/a.ts\nsrc/b.ts\n...\n</persisted-output>"
    );
    let lines = [
        with(
            with(base("u1", None), "type", "user".into()),
            "message",
            serde_json::json!({"role": "user", "content": "list every file"}),
        ),
        with(
            with(base("a1", Some("u1")), "type", "assistant".into()),
            "message",
            serde_json::json!({"id": "msg_ext_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": [{"type": "tool_use", "id": "toolu_01ExtOut000000000000001", "name": "Bash", "input": {"command": "find ."}}],
                "stop_reason": "tool_use"}),
        ),
        with(
            with(base("r1", Some("a1")), "type", "user".into()),
            "message",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01ExtOut000000000000001", "content": output}]}),
        ),
        with(
            with(base("a2", Some("r1")), "type", "assistant".into()),
            "message",
            serde_json::json!({"id": "msg_ext_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "There are two files."}], "stop_reason": "end_turn"}),
        ),
    ];
    let path = dir.join(format!("{sid}.jsonl"));
    let text: Vec<String> = lines.into_iter().map(rec).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    // The sub-agent: sidechain records of its own file.
    let sub = dir.join(sid).join("subagents");
    std::fs::create_dir_all(&sub).unwrap();
    let side = |uuid: &str, parent: Option<&str>| {
        with(
            with(base(uuid, parent), "isSidechain", true.into()),
            "agentId",
            "a1b2c3d4e5f60718".into(),
        )
    };
    let sub_lines = [
        with(
            with(side("s1", None), "type", "user".into()),
            "message",
            serde_json::json!({"role": "user", "content": "Find the routes"}),
        ),
        with(
            with(side("s2", Some("s1")), "type", "assistant".into()),
            "message",
            serde_json::json!({"id": "msg_sub_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": "src/routes.ts"}], "stop_reason": "end_turn"}),
        ),
    ];
    let text: Vec<String> = sub_lines.into_iter().map(rec).collect();
    std::fs::write(
        sub.join("agent-a1b2c3d4e5f60718.jsonl"),
        text.join("\n") + "\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("agent-a1b2c3d4e5f60718.meta.json"),
        r#"{"agentType":"Explore","model":"claude-haiku-4-5"}"#,
    )
    .unwrap();
    path
}

/// A result whose output file is gone is a warning that names the file;
/// with the file beside the session (where Claude Code keeps it), none.
#[test]
fn a_persisted_tool_output_whose_file_is_gone_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let path = session_with_external_output(d.path());
    let p = path.to_str().unwrap();
    let (_, doc) = lint_json(p, &[]);
    let rules: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(rules, vec![("missing-tool-output", "warning")], "{doc:#}");
    let f = &doc["findings"][0];
    assert_eq!(f["message"], 2);
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("tool-results/toolu_01ExtOut000000000000001.txt"),
        "{f:#}"
    );
    // Restored beside the session: nothing to report.
    let results = d
        .path()
        .join("5f0e2c1a-7b3d-4e9f-8a21-c4d5e6f70819")
        .join("tool-results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(
        results.join("toolu_01ExtOut000000000000001.txt"),
        "src/a.ts\nsrc/b.ts\n",
    )
    .unwrap();
    let (c, doc) = lint_json(p, &[]);
    assert_eq!(c, 0, "{doc:#}");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{doc:#}");
}

/// A sub-agent's `subagents/agent-<id>.jsonl` is a history of its own: a
/// walk of the project folder reads it and the session, and skips the
/// sub-agent's `.meta.json` without calling it unread.
#[test]
fn a_subagent_file_is_read_as_a_history_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    session_with_external_output(d.path());
    let sub = d
        .path()
        .join("5f0e2c1a-7b3d-4e9f-8a21-c4d5e6f70819/subagents/agent-a1b2c3d4e5f60718.jsonl");
    let o = run(&["inspect", "--format", "json", sub.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["dialect"], "claude-code");
    assert_eq!(doc["conversations"][0]["messages"], 2, "{doc:#}");
    let (_, doc) = lint_json(d.path().to_str().unwrap(), &[]);
    assert_eq!(doc["summary"]["files"], 2, "{doc:#}");
    assert_eq!(doc["summary"]["unread"], 0, "{doc:#}");
}

/// Issue 39, pattern 1: the Edit call on line 18 reuses the id of the Read
/// call on line 16, and its result (line 19) answers it under that id.
/// Claude Code sends the first call of the id only: the Edit call and its
/// result were lost on every resume. The copy gives the later call an id
/// of its own, derived from the old one, and its result the same; the log
/// keeps both blocks as they were.
#[test]
fn a_call_reusing_an_id_gets_its_own_with_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(fixture("duplicate-tool-call-id/later-call-reuses-id.jsonl"));
    let out = dir.path().join("copy.jsonl");
    let log = dir.path().join("log.json");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let old = "toolu_bdrk_019rEFxU8hyZyoD9foULmY5m";
    let new = format!("{old}x2");
    let recs = records(&out);
    assert_eq!(recs[15]["message"]["content"][0]["id"], old);
    assert_eq!(recs[16]["message"]["content"][0]["tool_use_id"], old);
    assert_eq!(recs[17]["message"]["content"][0]["id"], new.as_str());
    assert_eq!(recs[17]["message"]["content"][0]["name"], "Edit");
    assert_eq!(
        recs[18]["message"]["content"][0]["tool_use_id"],
        new.as_str()
    );
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let renamed: Vec<u64> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "rename-call")
        .map(|e| {
            assert!(e["before"].as_str().unwrap().contains(old), "{e}");
            e["location"]["line"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(renamed, vec![18, 19]);
}

/// Issue 39, pattern 6: a blank text block in a record that holds other
/// blocks is taken out of the content; the other blocks stay byte for
/// byte, and the block is in the log.
#[test]
fn a_blank_text_block_beside_a_call_is_taken_out_of_its_record() {
    let d = tempfile::tempdir().unwrap();
    let call = r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}"#;
    let lines = [
        cc("user", Some("u1"), None, 1, r#""list the files""#),
        cc(
            "assistant",
            Some("a1"),
            Some("u1"),
            2,
            &format!(r#"[{{"type":"text","text":" \n"}},{call}]"#),
        ),
        cc(
            "user",
            Some("u2"),
            Some("a1"),
            3,
            r#"[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]"#,
        ),
        cc(
            "assistant",
            Some("a2"),
            Some("u2"),
            4,
            r#"[{"type":"text","text":"One file."}]"#,
        ),
    ];
    let input = session(
        d.path(),
        "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        &lines,
    );
    let (_, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(
        findings(&doc),
        vec!["empty-text-block warning 2"],
        "{doc:#}"
    );
    let out = d.path().join("copy.jsonl");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let copy = std::fs::read_to_string(&out).unwrap();
    let copied: Vec<&str> = copy.lines().collect();
    assert_eq!(copied.len(), 4);
    assert_eq!(
        copied[1],
        lines[1].replace(r#"{"type":"text","text":" \n"},"#, ""),
    );
    for i in [0, 2, 3] {
        assert_eq!(copied[i], lines[i]);
    }
    let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
}

/// Any JSON Lines file whose first record has a `type` is read as Claude
/// Code, whose resume skips the types it does not know. A file of
/// another program's typed records was then "no problems found (1
/// conversation, 0 messages)": said of a file not read. It is now refused
/// (exit 2, one line naming the file and why), while a session of only
/// records Claude Code writes without messages still reads.
#[test]
fn typed_records_claude_code_never_writes_are_not_a_session() {
    let d = tempfile::tempdir().unwrap();
    let other = d.path().join("events.jsonl");
    std::fs::write(
        &other,
        "{\"type\":\"turn.prompt\",\"text\":\"hi\"}\n{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let o = run(&["lint", other.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("events.jsonl"), "{err}");
    assert!(
        err.contains("no record is one Claude Code writes") && err.contains("`turn.prompt`"),
        "{err}"
    );
    let summaries = d.path().join("0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl");
    std::fs::write(
        &summaries,
        "{\"type\":\"summary\",\"summary\":\"Fix the build\",\"leafUuid\":\"f4dfad6e-e564-4e66-b8b0-b469f5204e23\"}\n",
    )
    .unwrap();
    let (code, doc) = lint_json(summaries.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "claude-code", "{doc:#}");
}

/// A server tool's use and its result in one reply (the advisor tool of
/// Claude Code 2.1.x: `server_tool_use` named `advisor`, answered by an
/// `advisor_tool_result` in the same API message) are block types the
/// API knows: a healthy session holding them raised `unknown-block-type`
/// (an error, "the request is refused") before the rule took the block
/// types of the client's own API types.
#[test]
fn the_newer_server_tool_blocks_are_known() {
    let head = r#""isSidechain":false,"userType":"external","cwd":"/tmp/p","sessionId":"4c2ddfdc-b619-4525-8d03-1950fb1b0257","version":"2.1.330","gitBranch":"main""#;
    let reply = |uuid: &str, parent: &str, block: &str| {
        format!(
            r#"{{"parentUuid":"{parent}",{head},"message":{{"model":"claude-opus-4-8","id":"msg_01","type":"message","role":"assistant","content":[{block}],"stop_reason":null}},"type":"assistant","uuid":"{uuid}","timestamp":"2026-11-20T10:00:01.000Z"}}"#
        )
    };
    let lines = [
        format!(
            r#"{{"parentUuid":null,{head},"type":"user","message":{{"role":"user","content":"Is this plan sound?"}},"uuid":"a0000000-0000-4000-8000-000000000001","timestamp":"2026-11-20T10:00:00.000Z"}}"#
        ),
        reply(
            "a0000000-0000-4000-8000-000000000002",
            "a0000000-0000-4000-8000-000000000001",
            r#"{"type":"server_tool_use","id":"srvtoolu_01","name":"advisor","input":{}}"#,
        ),
        reply(
            "a0000000-0000-4000-8000-000000000003",
            "a0000000-0000-4000-8000-000000000002",
            r#"{"type":"advisor_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"advisor_result","text":"Yes."}}"#,
        ),
        reply(
            "a0000000-0000-4000-8000-000000000004",
            "a0000000-0000-4000-8000-000000000003",
            r#"{"type":"text","text":"The plan is sound."}"#,
        ),
    ];
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, doc) = lint_json(path.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["messages"], 2, "{doc:#}");
}

/// Issue 39: tool names the API refuses. A tool search result naming a
/// tool of 82 characters (`tool_reference.tool_name: String should have at
/// most 64 characters`, as in mims-harvard/ToolUniverse #65): the copy
/// carries a text block saying which tool it named and why it was removed,
/// where Claude Code itself leaves out references to tools it no longer
/// offers. A call's name with a NUL: the copy's call is named without it,
/// under its id, so its result still answers it. Each block as it was is
/// in the log; every other line is the input's; a second repair changes
/// nothing.
#[test]
fn a_tool_name_the_api_refuses_is_mended_in_the_call_and_the_reference() {
    let long = "mcp__tooluniverse__FDA_get_info_on_conditions_for_doctor_consultation_by_drug_name";
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(fixture(
        "invalid-tool-name/tool-reference-over-64-characters.jsonl",
    ));
    let (out, log) = repair_logged(&input, dir.path());
    assert_eq!(edit_lines(&log), vec!["replace-tool-reference@24"]);
    let recs = records(&out);
    let content = &recs[23]["message"]["content"][0];
    assert_eq!(
        content["tool_use_id"],
        "toolu_bdrk_01Siz9pfbo7dpNst33AQai4F"
    );
    assert_eq!(content["content"].as_array().unwrap().len(), 1, "{content}");
    assert_eq!(content["content"][0]["type"], "text", "{content}");
    let text = content["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("[Tool reference removed by chatfsck repair:")
            && text.contains(long)
            && text.contains("82 characters"),
        "{text}"
    );
    let edit = &log["edits"][0];
    assert_eq!(
        edit["before"].as_str().unwrap(),
        format!(
            r#"{{"tool_use_id":"toolu_bdrk_01Siz9pfbo7dpNst33AQai4F","type":"tool_result","content":[{{"type":"tool_reference","tool_name":"{long}"}}]}}"#
        ),
    );
    let original = std::fs::read_to_string(&input).unwrap();
    let copy = std::fs::read_to_string(&out).unwrap();
    let changed: Vec<usize> = original
        .lines()
        .zip(copy.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(changed, vec![24]);
    assert_eq!(original.lines().count(), copy.lines().count());
    let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
    assert_second_repair_changes_nothing(&out, dir.path());

    let dir = tempfile::tempdir().unwrap();
    let input = root().join(fixture("invalid-tool-name/nul-in-name.jsonl"));
    let (out, log) = repair_logged(&input, dir.path());
    assert_eq!(edit_lines(&log), vec!["rename-tool@23"]);
    assert!(
        log["edits"][0]["before"]
            .as_str()
            .unwrap()
            .contains(r#""name":"Ba\u0000sh""#),
        "{log:#}"
    );
    let recs = records(&out);
    let call = &recs[22]["message"]["content"][0];
    assert_eq!(call["name"], "Bash", "{call}");
    assert_eq!(
        recs[23]["message"]["content"][0]["tool_use_id"], call["id"],
        "the result answers the call it answered"
    );
    let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
    assert_second_repair_changes_nothing(&out, dir.path());

    // Over 200 characters: cut where Claude Code cuts it when it sends it.
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(fixture("invalid-tool-name/name-over-200-characters.jsonl"));
    let (out, log) = repair_logged(&input, dir.path());
    assert_eq!(edit_lines(&log), vec!["rename-tool@23"]);
    let before: serde_json::Value =
        serde_json::from_str(log["edits"][0]["before"].as_str().unwrap()).unwrap();
    let name = before["name"].as_str().unwrap();
    assert_eq!(name.chars().count(), 240);
    let recs = records(&out);
    let cut: String = name.chars().take(200).collect();
    assert_eq!(recs[22]["message"]["content"][0]["name"], cut.as_str());
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// Issue 39: a server tool's pair split across replies. The reply paused
/// after its `web_search` call (line 23, `pause_turn`); the result came in
/// the next reply (line 24, line 25's `message.id`). Claude Code 2.1.330
/// leaves the call out (no result in its message) and sends the result,
/// which the API refuses. The copy holds neither: both records go to the
/// log, and line 25 is linked to the prompt they hung off. The same
/// with the advisor, which the client itself leaves out, is a warning.
#[test]
fn a_server_tool_result_in_the_next_reply_goes_with_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join(fixture(
        "orphan-tool-result/server-tool-result-in-the-next-reply.jsonl",
    ));
    let (_, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
    let f = &doc["findings"][0];
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("its `server_tool_use` is in an earlier message (line 23)"),
        "{f:#}"
    );
    let (out, log) = repair_logged(&input, dir.path());
    let before: Vec<&str> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["before"].as_str())
        .collect();
    assert!(
        before
            .iter()
            .any(|b| b.contains(r#""type":"server_tool_use""#))
            && before
                .iter()
                .any(|b| b.contains(r#""type":"web_search_tool_result""#)),
        "{log:#}"
    );
    let original: Vec<serde_json::Value> = records(&input);
    let recs = records(&out);
    assert_eq!(recs.len(), original.len() - 2);
    assert_eq!(recs[22]["uuid"], original[24]["uuid"]);
    assert_eq!(recs[22]["parentUuid"], original[21]["uuid"]);
    let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
    assert_second_repair_changes_nothing(&out, dir.path());
}

/// Issue 39: a tool result larger by itself than the model's context
/// (over 800,000 bytes: 200,000 tokens at 4 bytes a token). The
/// generated fixture is reported, a warning naming what Claude Code does
/// (tests/oracle.rs `claude_code_compacts_away_a_tool_result_over_the_context`
/// measures it); a result of exactly the limit is not.
#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it generates the fixture"
)]
fn a_tool_result_over_the_context_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("linear.jsonl");
    let made = std::process::Command::new("python3")
        .arg(root().join("fixtures/claude-code/gen_oversized_tool_result.py"))
        .arg(&out)
        .output()
        .expect("python3 runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (exit, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert_eq!(
        findings(&doc),
        vec!["oversized-tool-result warning 8"],
        "{doc:#}"
    );
    assert_eq!(exit, 0, "a warning");
    let f = &doc["findings"][0];
    assert!(
        f["summary"].as_str().unwrap().contains("1152000 bytes"),
        "{f:#}"
    );
    assert!(
        f["notes"].to_string().contains("prompt is too long"),
        "{f:#}"
    );
    // At the limit and one byte over it.
    let text = std::fs::read_to_string(&out).unwrap();
    for (size, want) in [
        (800_000usize, vec![]),
        (800_001, vec!["oversized-tool-result warning 8"]),
    ] {
        let lines: Vec<String> = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| {
                if i != 7 {
                    return l.to_string();
                }
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["message"]["content"][0]["content"] = serde_json::Value::from("x".repeat(size));
                serde_json::to_string(&v).unwrap()
            })
            .collect();
        let at = dir.path().join(format!("at-{size}.jsonl"));
        std::fs::write(&at, lines.join("\n")).unwrap();
        let (_, doc) = lint_json(at.to_str().unwrap(), &[]);
        assert_eq!(findings(&doc), want, "{size}: {doc:#}");
    }
}
