//! Conversation datasets (issue 38): one whole conversation per line, as
//! fine-tuning files (`{"messages": [...], "tools": [...]}`) and ShareGPT
//! (`{"conversations": [{"from", "value"}]}`) keep them, read by the built
//! binary: findings name the row, a row that does not parse is a finding
//! of that row, and the repaired copy keeps every row.

mod common;
#[path = "common/dataset.rs"]
mod dataset;

use std::collections::BTreeSet;
use std::path::Path;

use common::{code, run, stderr, stdout};
use dataset::Pattern;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn lint(path: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["lint", "--format", "json", path];
    args.extend_from_slice(extra);
    let o = run(&args);
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("lint {path}: not JSON ({e}): {}", stderr(&o)));
    (code(&o), doc)
}

/// `line rule conversation` of every finding, sorted.
fn found(doc: &serde_json::Value) -> BTreeSet<(u64, String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["location"]["line"].as_u64().unwrap_or(0),
                f["rule"].as_str().unwrap().to_string(),
                f["conversation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

const FT: &str = r#"{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}, {"role": "assistant", "content": "18 C in Paris."}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]}
{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
"#;

#[test]
fn a_fine_tuning_file_is_read_as_a_dataset_and_a_clean_one_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ft.jsonl", FT);
    let (rc, doc) = lint(&p, &[]);
    assert_eq!(rc, 0, "{doc}");
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{doc}");
    let o = run(&["inspect", &p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("dataset-jsonl"), "{}", stdout(&o));
}

#[test]
fn findings_name_the_row_by_its_line_and_its_id_column() {
    let dir = tempfile::tempdir().unwrap();
    let text = concat!(
        r#"{"uid": "a-1", "chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#,
        "\n",
        r#"{"uid": "b-2", "chat": [{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{\"x\": "}}]}, {"role": "tool", "tool_call_id": "c9", "content": "ok"}, {"role": "assistant", "content": "done"}]}"#,
        "\n",
    );
    let p = write(dir.path(), "named.jsonl", text);
    let (rc, doc) = lint(&p, &["--messages-column", "chat", "--id-column", "uid"]);
    assert_eq!(rc, 1, "{doc}");
    let want: BTreeSet<_> = [(2, "invalid-tool-arguments".to_string(), "b-2".to_string())].into();
    assert_eq!(found(&doc), want);
}

#[test]
fn a_line_that_does_not_parse_is_a_finding_of_its_row_not_the_end_of_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = FT.to_string();
    text.push_str("{\"messages\": [{\"role\": \"user\", \"content\": \"cut\n");
    text.push_str("[1, 2]\n");
    text.push_str(FT.lines().nth(1).unwrap());
    text.push('\n');
    let p = write(dir.path(), "torn.jsonl", &text);
    let (rc, doc) = lint(&p, &[]);
    assert_eq!(rc, 1, "{doc}");
    let lines: Vec<(u64, String)> = found(&doc).into_iter().map(|(l, r, _)| (l, r)).collect();
    assert_eq!(
        lines,
        vec![(3, "corrupt-record".into()), (4, "corrupt-record".into())]
    );
}

#[test]
fn sharegpt_turns_are_read_with_their_calls_and_observations() {
    let dir = tempfile::tempdir().unwrap();
    let clean = r#"{"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "weather?"}, {"from": "function_call", "value": "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"}, {"from": "observation", "value": "3 C"}, {"from": "gpt", "value": "3 C in Oslo."}], "tools": "[]"}"#;
    let unanswered = r#"{"conversations": [{"from": "human", "value": "weather?"}, {"from": "function_call", "value": "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"}, {"from": "gpt", "value": "no idea"}, {"from": "human", "value": "ok"}, {"from": "gpt", "value": "bye"}]}"#;
    let bad_tag = r#"{"conversations": [{"from": "human", "value": "hi"}, {"from": "bot", "value": "hello"}]}"#;
    let p = write(
        dir.path(),
        "sharegpt.jsonl",
        &format!("{clean}\n{unanswered}\n{bad_tag}\n"),
    );
    let (rc, doc) = lint(&p, &[]);
    assert_eq!(rc, 1, "{doc}");
    let lines: Vec<(u64, String)> = found(&doc).into_iter().map(|(l, r, _)| (l, r)).collect();
    assert_eq!(
        lines,
        vec![(2, "orphan-tool-call".into()), (3, "corrupt-record".into())],
        "{doc}"
    );
    let f = &doc["findings"].as_array().unwrap()[1];
    assert!(
        f["summary"].as_str().unwrap().contains("`bot`"),
        "the unknown role tag is named: {f}"
    );
}

/// The generated dataset, its truth table as a set of (line, rule).
fn generated(dir: &Path, n: usize) -> (Vec<dataset::Row>, String) {
    let rows = dataset::rows(38, n, 0);
    let p = write(dir, "gen.jsonl", &dataset::jsonl(&rows));
    (rows, p)
}

fn truth(rows: &[dataset::Row]) -> BTreeSet<(u64, String, String)> {
    rows.iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let line = k as u64 + 1;
            let id = if r.pattern == Pattern::Unparseable {
                format!("line {line}")
            } else {
                r.id.clone()
            };
            Some((line, r.pattern.rule()?.to_string(), id))
        })
        .collect()
}

#[test]
fn findings_on_a_generated_dataset_equal_its_truth_table() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, p) = generated(dir.path(), 2000);
    // Every pattern is there, and the truth table says so.
    for pattern in [
        Pattern::OrphanCall,
        Pattern::StrayResult,
        Pattern::Interleaved,
        Pattern::InvalidArguments,
        Pattern::DuplicateId,
        Pattern::Unparseable,
    ] {
        assert!(rows.iter().any(|r| r.pattern == pattern), "{pattern:?}");
    }
    assert_eq!(
        dataset::truth(&rows).lines().count() - 1,
        truth(&rows).len()
    );
    let (rc, doc) = lint(&p, &[]);
    assert_eq!(rc, 1);
    assert_eq!(found(&doc), truth(&rows));
}

#[test]
fn repair_keeps_every_row_leaves_clean_rows_identical_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, p) = generated(dir.path(), 2000);
    let out = dir.path().join("out.jsonl");
    let log = dir.path().join("log.json");
    let o = run(&[
        "repair",
        &p,
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let copy = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = copy.lines().collect();
    assert_eq!(lines.len(), rows.len(), "every row is kept, one a line");
    for (r, line) in rows.iter().zip(&lines) {
        if matches!(
            r.pattern,
            Pattern::Clean | Pattern::Unparseable | Pattern::DuplicateId
        ) {
            assert_eq!(*line, r.line, "{} ({:?}) is unchanged", r.id, r.pattern);
        } else {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["id"], r.id.as_str(), "rows keep their order");
        }
    }
    // Every edit is logged, naming its row.
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let edited: BTreeSet<String> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["conversation"].as_str().unwrap().to_string())
        .collect();
    let damaged: BTreeSet<String> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.pattern,
                Pattern::OrphanCall
                    | Pattern::StrayResult
                    | Pattern::Interleaved
                    | Pattern::InvalidArguments
            )
        })
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(edited, damaged);
    // The copy holds only what repair does not fix.
    let (_, doc) = lint(out.to_str().unwrap(), &[]);
    let left: BTreeSet<String> = found(&doc).into_iter().map(|(_, r, _)| r).collect();
    assert!(
        left.is_subset(
            &[
                "corrupt-record".to_string(),
                "duplicate-tool-call-id".to_string()
            ]
            .into()
        ),
        "{left:?}"
    );
    common::assert_second_repair_changes_nothing(&out, dir.path());
}

/// `row rule conversation` of every finding (rows from 1, as lines are).
fn found_rows(doc: &serde_json::Value) -> BTreeSet<(u64, String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["location"]["rowid"].as_u64().expect("a row") + 1,
                f["rule"].as_str().unwrap().to_string(),
                f["conversation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn parquet_and_arrow_datasets_give_the_truth_table_in_both_column_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dataset::rows(38, 2000, 0);
    // In Parquet every row has its id, the rows that do not parse too.
    let want: BTreeSet<_> = truth(&rows)
        .into_iter()
        .map(|(line, rule, _)| (line, rule, rows[line as usize - 1].id.clone()))
        .collect();
    for nested in [false, true] {
        let p = dir.path().join(format!("gen-{nested}.parquet"));
        // Row groups of 700 rows: rows are read across them, in order.
        dataset::write_parquet(&rows, nested, &p, 700);
        let (rc, doc) = lint(p.to_str().unwrap(), &[]);
        assert_eq!(rc, 1, "{doc}");
        assert_eq!(found_rows(&doc), want, "nested: {nested}");
    }
    let p = dir.path().join("gen.arrow");
    dataset::write_arrow(&rows, &p);
    let (rc, doc) = lint(p.to_str().unwrap(), &[]);
    assert_eq!(rc, 1, "{doc}");
    assert_eq!(found_rows(&doc), want, "Arrow IPC");
}
