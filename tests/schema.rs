//! The JSON document of `lint --format json` matches the committed schema
//! (docs/lint-output.schema.json) on real output: JSONL, JSON, SQLite,
//! hostile text, directories with skipped and unreadable files.

mod common;
use common::*;

use serde_json::{Value, json};

fn schema() -> Value {
    let text = std::fs::read_to_string(root().join("docs/lint-output.schema.json")).unwrap();
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn validator() -> jsonschema::Validator {
    let schema = schema();
    jsonschema::meta::validate(&schema).expect("the schema is a valid draft 2020-12 schema");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn real_output_matches_the_schema() {
    let v = validator();
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"),
        d.path().join("a.jsonl"),
    )
    .unwrap();
    std::fs::write(d.path().join("package.json"), "{\"name\": \"x\"}").unwrap();
    // Unreadable: a SQLite file cut inside its header. (A line of invalid
    // UTF-8 is a corrupt-record finding since issue 17, not an error.)
    std::fs::write(d.path().join("bad.db"), b"SQLite format 3\0\x10\x00").unwrap();
    let dir = d.path().to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"],
        vec!["fixtures/interleaved-message/anthropic-zeph-reflection.jsonl"],
        vec!["fixtures/hostile/ansi-in-tool-id.jsonl"],
        vec!["fixtures/dispatch/seed-000.db"],
        vec!["fixtures/seq-gap/dispatch-seq-gap.db"],
        vec!["fixtures/orphan-tool-call/openai-array.json"],
        vec!["fixtures/corrupt-record"],
        vec!["fixtures/healthy"],
        // A skipped file and an unreadable one.
        vec![dir],
    ];
    let mut checked = 0;
    for paths in cases {
        let mut args = vec!["lint", "--format", "json"];
        args.extend(&paths);
        let o = run(&args);
        let doc: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{paths:?}: not JSON ({e}): {}", stderr(&o)));
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{paths:?}:\n{}", errs.join("\n"));
        checked += doc["findings"].as_array().unwrap().len();
        if paths == [dir] {
            assert_eq!(doc["skipped"].as_array().unwrap().len(), 1, "{doc:#}");
            assert_eq!(doc["errors"].as_array().unwrap().len(), 1, "{doc:#}");
        }
    }
    assert!(checked > 10, "only {checked} findings checked");
}

#[test]
fn the_schema_is_strict_about_undocumented_fields() {
    let v = validator();
    let (_, mut doc) = lint_json("fixtures/dispatch/seed-000.db", &[]);
    assert!(v.is_valid(&doc));
    doc["findings"][0]["undocumented"] = json!(true);
    assert!(!v.is_valid(&doc), "a finding with an unknown field passed");
    let (_, mut doc) = lint_json("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl", &[]);
    doc["findings"][0]["location"]["table"] = json!("kv");
    assert!(
        !v.is_valid(&doc),
        "a location that is both line and row passed"
    );
    let (_, mut doc) = lint_json("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl", &[]);
    doc["findings"][0]["severity"] = json!("fatal");
    assert!(!v.is_valid(&doc), "an unknown severity passed");
}

#[test]
fn the_documentation_covers_every_field_of_the_schema() {
    let doc = std::fs::read_to_string(root().join("docs/json-output.md")).unwrap();
    let schema = schema();
    let mut names = Vec::new();
    collect_properties(&schema, &mut names);
    names.sort();
    names.dedup();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/json-output.md does not mention {missing:?}"
    );
}

fn collect_properties(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            for child in map.values() {
                collect_properties(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_properties(i, out)),
        _ => {}
    }
}

#[test]
fn the_documented_example_is_real_output() {
    let doc = std::fs::read_to_string(root().join("docs/json-output.md")).unwrap();
    let start = doc.find("```json\n").expect("an example") + "```json\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let mut example: Value = serde_json::from_str(&doc[start..end]).expect("the example is JSON");
    let (_, real) = lint_json("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl", &[]);
    example["tool"]["version"] = real["tool"]["version"].clone();
    assert_eq!(
        example, real,
        "docs/json-output.md's example is out of date"
    );
}
