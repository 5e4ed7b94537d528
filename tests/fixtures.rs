//! Every fixture reports exactly the findings written down, by hand from the
//! seeds, in fixtures/EXPECTED.tsv; and its human and JSON output match the
//! reviewed snapshots.

mod common;
use common::*;

fn expected() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("fixtures/EXPECTED.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (path, exp) = l.split_once('\t').expect("path<TAB>expected");
            let mut rules: Vec<String> = if exp.trim() == "-" {
                Vec::new()
            } else {
                exp.split(',').map(|s| s.trim().to_string()).collect()
            };
            rules.sort();
            (format!("fixtures/{path}"), rules)
        })
        .collect()
}

#[test]
fn every_fixture_reports_exactly_what_is_expected() {
    let table = expected();
    let listed: Vec<&String> = table.iter().map(|(p, _)| p).collect();
    for f in fixtures() {
        if f.contains("/hostile/") {
            continue;
        }
        assert!(
            listed.contains(&&f),
            "{f} has no line in fixtures/EXPECTED.tsv"
        );
    }
    let mut failures = Vec::new();
    for (path, want) in &table {
        let (code, doc) = lint_json(path, &["--fail-on", "warning"]);
        let got = rule_lines(&doc);
        if &got != want {
            failures.push(format!("{path}:\n  expected {want:?}\n  got      {got:?}"));
        }
        let expect_code = if want.is_empty() { 0 } else { 1 };
        if code != expect_code {
            failures.push(format!("{path}: exit {code}, expected {expect_code}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn healthy_fixtures_report_nothing() {
    for f in fixtures()
        .iter()
        .filter(|f| f.starts_with("fixtures/healthy/"))
    {
        let (code, doc) = lint_json(f, &["--fail-on", "info"]);
        assert_eq!(code, 0, "{f}: {doc:#}");
        assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{f}");
    }
}

#[test]
fn snapshots_of_human_and_json_output() {
    for f in fixtures() {
        let name = f.trim_start_matches("fixtures/").replace('/', "__");
        let human = stdout(&run(&["lint", &f]));
        insta::assert_snapshot!(format!("lint_human__{name}"), human);
        let json = stdout(&run(&["lint", "--format", "json", &f]));
        insta::assert_snapshot!(format!("lint_json__{name}"), json);
    }
}

#[test]
fn snapshots_of_inspect() {
    for f in fixtures() {
        let name = f.trim_start_matches("fixtures/").replace('/', "__");
        let out = stdout(&run(&["inspect", &f]));
        insta::assert_snapshot!(format!("inspect__{name}"), out);
    }
}
