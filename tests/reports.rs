//! The CI and bug-report formats: SARIF, GitHub workflow commands and
//! markdown. Reviewed snapshots over seed fixtures, escaping of hostile
//! history text, relative SARIF URIs, stable fingerprints, and validation by
//! Microsoft's SARIF Multitool when scripts/test-all has installed it.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const SNAPSHOT_FIXTURES: [&str; 4] = [
    "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
    "fixtures/interleaved-message/anthropic-zeph-reflection.jsonl",
    "fixtures/hostile/ansi-in-tool-id.jsonl",
    "fixtures/dispatch/seed-000.db",
];

fn snapshot_name(fixture: &str) -> String {
    fixture.trim_start_matches("fixtures/").replace('/', "__")
}

fn sarif(args: &[&str]) -> Value {
    let mut all = vec!["lint", "--format", "sarif"];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(matches!(code(&o), 0 | 1), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}"))
}

/// The SARIF log without the rule catalogue, which has its own snapshot.
fn without_rules(mut log: Value) -> Value {
    let rules = &mut log["runs"][0]["tool"]["driver"]["rules"];
    let n = rules.as_array().unwrap().len();
    *rules = json!(format!("<{n} rules: see the sarif_rules snapshot>"));
    log
}

#[test]
fn snapshots_of_sarif_github_and_markdown() {
    for f in SNAPSHOT_FIXTURES {
        let name = snapshot_name(f);
        let log = without_rules(sarif(&[f]));
        insta::assert_snapshot!(
            format!("sarif__{name}"),
            serde_json::to_string_pretty(&log).unwrap()
        );
        insta::assert_snapshot!(
            format!("github__{name}"),
            stdout(&run(&["lint", "--format", "github", f]))
        );
        insta::assert_snapshot!(
            format!("markdown__{name}"),
            stdout(&run(&["lint", "--format", "markdown", f]))
        );
    }
    // Several files, one of them clean: the files table.
    let md = stdout(&run(&[
        "lint",
        "--format",
        "markdown",
        "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
        "fixtures/healthy/orphan-tool-call-kimi.jsonl",
        "fixtures/dispatch/seed-000.db",
    ]));
    insta::assert_snapshot!("markdown__three_files", md);
}

#[test]
fn sarif_rules_catalogue() {
    let log = sarif(&["fixtures/healthy/orphan-tool-call-kimi.jsonl"]);
    let rules = &log["runs"][0]["tool"]["driver"]["rules"];
    let ids: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let o = run(&["rules", "--format", "json"]);
    let catalogue: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = catalogue
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(ids, names, "every rule, in catalogue order");
    for r in rules.as_array().unwrap() {
        for field in [
            "/shortDescription/text",
            "/fullDescription/text",
            "/help/text",
            "/help/markdown",
            "/defaultConfiguration/level",
        ] {
            let v = r.pointer(field).and_then(Value::as_str).unwrap_or("");
            assert!(!v.is_empty(), "{}: no {field}", r["id"]);
        }
    }
    insta::assert_snapshot!("sarif_rules", serde_json::to_string_pretty(rules).unwrap());
}

#[test]
fn sarif_results_point_into_the_catalogue_with_relative_uris() {
    let abs = root().join("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl");
    for path in [
        "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
        "./fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
        "fixtures/../fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
        abs.to_str().unwrap(),
    ] {
        let log = sarif(&[path]);
        let run = &log["runs"][0];
        let r = &run["results"][0];
        let rule = &run["tool"]["driver"]["rules"][r["ruleIndex"].as_u64().unwrap() as usize];
        assert_eq!(rule["id"], r["ruleId"]);
        let mut locs = vec![&r["locations"][0]];
        locs.extend(r["relatedLocations"].as_array().unwrap());
        assert!(locs.len() > 1, "evidence becomes related locations");
        for l in locs {
            let a = &l["physicalLocation"]["artifactLocation"];
            assert_eq!(
                a["uri"], "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
                "{path}"
            );
            assert_eq!(a["uriBaseId"], "%SRCROOT%");
            assert!(
                l["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap()
                    >= 1
            );
        }
    }
    // Database rows: line 1, and the table and key in the message.
    let log = sarif(&["fixtures/dispatch/seed-000.db"]);
    for r in log["runs"][0]["results"].as_array().unwrap() {
        let l = &r["locations"][0]["physicalLocation"];
        assert_eq!(
            l["artifactLocation"]["uri"],
            "fixtures/dispatch/seed-000.db"
        );
        assert_eq!(l["region"]["startLine"], 1);
        let m = r["message"]["text"].as_str().unwrap();
        assert!(m.contains("table `kv`, key `conv:"), "{m}");
    }
    // A file outside the current directory cannot be relative to it.
    let d = copy_to_tmp(&["fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"]);
    let p = d.path().join("kimi-2336-shell-206.jsonl");
    let log = sarif(&[p.to_str().unwrap()]);
    let a = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert!(a["uri"].as_str().unwrap().starts_with("file:///"), "{a}");
    assert!(a.get("uriBaseId").is_none());
}

fn fingerprints(log: &Value) -> Vec<(String, u64)> {
    log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["partialFingerprints"]["chatfsck/v1"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect()
}

#[test]
fn fingerprints_survive_lines_added_above() {
    let original =
        std::fs::read_to_string(root().join("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"))
            .unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("h")).unwrap();
    let file = d.path().join("h/session.jsonl");
    let run_in = |dir: &Path| -> Value {
        let o = assert_cmd::Command::cargo_bin("chatfsck")
            .unwrap()
            .current_dir(dir)
            .args(["lint", "--format", "sarif", "h/session.jsonl"])
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    std::fs::write(&file, &original).unwrap();
    let before = fingerprints(&run_in(d.path()));
    // Three meta lines more at the top: every line number moves.
    let shifted = format!(
        "{0}\n{0}\n{0}\n{original}",
        r#"{"role":"_checkpoint","id":0}"#
    );
    std::fs::write(&file, shifted).unwrap();
    let after = fingerprints(&run_in(d.path()));
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].0, after[0].0, "same finding, same fingerprint");
    assert_eq!(before[0].1 + 3, after[0].1, "the line did move");
    // Two findings that differ only in where they are get distinct fingerprints.
    let log = sarif(&["fixtures/duplicate-tool-call-id/openai-reused-across-turns.jsonl"]);
    let fps = fingerprints(&log);
    let mut unique: Vec<&String> = fps.iter().map(|(f, _)| f).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), fps.len(), "{fps:?}");
}

/// A history whose ids and names hold everything that could break a
/// workflow command or a markdown table, plus the terminal attacks.
fn hostile_history(dir: &Path) -> PathBuf {
    let id = "call_|x|`y`<script>alert(1)</script>**b** [l](http://e) @octocat #1\n::error::pwned %0A,:\u{1b}[31m\u{202e}";
    let call = json!({"role": "assistant", "tool_calls": [{
        "id": id, "type": "function",
        "function": {"name": "ls\r\n::warning::x", "arguments": "{}"}}]});
    let text = format!(
        "{}\n{}\n{}\n",
        json!({"role": "user", "content": "go"}),
        call,
        json!({"role": "user", "content": "well?"})
    );
    let p = dir.join("hostile.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

fn no_terminal_attacks(out: &str, what: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\r'] {
        assert!(!out.contains(c), "{what}: raw {c:?} in\n{out}");
    }
}

#[test]
fn github_commands_cannot_be_broken_by_history_text() {
    let d = tempfile::tempdir().unwrap();
    let p = hostile_history(d.path());
    let o = run(&["lint", "--format", "github", p.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    no_terminal_attacks(&out, "github");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "one command and the summary: {out}");
    let cmd = lines[0];
    assert!(cmd.starts_with("::error file="), "{cmd}");
    // The history's newline, `::` and `%0A` stay inside the message.
    assert!(
        !out.lines().any(|l| l.starts_with("::error::pwned")),
        "{out}"
    );
    assert!(!out.lines().any(|l| l.starts_with("::warning::")), "{out}");
    assert!(
        cmd.contains(r"\n::error::pwned %250A,:\u{1b}[31m\u{202e}"),
        "{cmd}"
    );
    assert!(cmd.contains(r"ls\r\n::warning::x"), "{cmd}");
    // The properties hold no unescaped `:` or `,` besides the separators.
    let props = cmd
        .trim_start_matches("::error ")
        .split_once("::")
        .unwrap()
        .0;
    assert_eq!(props.split(',').count(), 3, "file, line, title: {props}");
    // The same for the bundled hostile fixture.
    let out = stdout(&run(&[
        "lint",
        "--format",
        "github",
        "fixtures/hostile/ansi-in-tool-id.jsonl",
    ]));
    no_terminal_attacks(&out, "github, fixture");
    assert!(out.contains(r"call_\u{1b}[31mX9kQ2\u{1b}[0m"), "{out}");
}

/// Cells of a markdown table row, split at pipes that are not escaped.
fn cells(row: &str) -> usize {
    let mut n: usize = 0;
    let mut escaped = false;
    for c in row.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
    }
    n.saturating_sub(1)
}

/// An HTML page without its style and script (the same on every page,
/// checked in a browser by tests/html.rs).
fn html_body(page: &str) -> String {
    let cut = |s: &str, open: &str, close: &str| {
        let a = s.find(open).expect(open) + open.len();
        let b = a + s[a..].find(close).expect(close);
        format!("{}<{} bytes>{}", &s[..a], b - a, &s[b..])
    };
    let page = cut(page, "<style>", "</style>");
    let page = cut(&page, "<script>", "</script>");
    // The policy names the two by hash.
    let a = page.find("style-src 'sha256-").unwrap();
    let b = page[a..].find("; base-uri").unwrap();
    format!(
        "{}style-src <hash>; script-src <hash>{}",
        &page[..a],
        &page[a + b..]
    )
}

#[test]
fn snapshots_of_html() {
    for f in [
        "fixtures/hostile/html-injection.jsonl",
        "fixtures/interleaved-message/anthropic-zeph-reflection.jsonl",
    ] {
        let page = stdout(&run(&["lint", "--format", "html", f]));
        insta::assert_snapshot!(format!("html__{}", snapshot_name(f)), html_body(&page));
    }
    let page = stdout(&run(&[
        "inspect",
        "--format",
        "html",
        "fixtures/dispatch/seed-000.db",
    ]));
    insta::assert_snapshot!("html__inspect__dispatch__seed-000.db", html_body(&page));
}

#[test]
fn markdown_cannot_be_broken_by_history_text() {
    let d = tempfile::tempdir().unwrap();
    let p = hostile_history(d.path());
    let out = stdout(&run(&["lint", "--format", "markdown", p.to_str().unwrap()]));
    no_terminal_attacks(&out, "markdown");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() >= 5, "{out}");
    for r in &rows {
        // The files table and the evidence table both have six columns.
        assert_eq!(cells(r), 6, "row keeps its columns: {r}");
    }
    for raw in ["<script>", "**b**", "[l](", "`y`", "@octocat", " #1"] {
        assert!(!out.contains(raw), "raw {raw:?} in\n{out}");
    }
    for escaped in [
        "&lt;script&gt;",
        r"\*\*b\*\*",
        r"\[l\](",
        r"\`y\`",
        "@<!-- -->octocat",
        "#<!-- -->1",
        r"\\u{1b}\[31m",
    ] {
        assert!(out.contains(escaped), "no {escaped:?} in\n{out}");
    }
    // The bundled hostile fixture.
    let out = stdout(&run(&[
        "lint",
        "--format",
        "markdown",
        "fixtures/hostile/ansi-in-tool-id.jsonl",
    ]));
    no_terminal_attacks(&out, "markdown, fixture");
    assert!(out.contains(r"call\_\\u{1b}\[31mX9kQ2\\u{1b}\[0m"), "{out}");
}

#[test]
fn sarif_escapes_history_text_for_viewers() {
    let d = tempfile::tempdir().unwrap();
    let p = hostile_history(d.path());
    let o = run(&["lint", "--format", "sarif", p.to_str().unwrap()]);
    let out = stdout(&o);
    no_terminal_attacks(&out, "sarif");
    let log: Value = serde_json::from_str(&out).unwrap();
    let m = log["runs"][0]["results"][0]["message"]["text"]
        .as_str()
        .unwrap();
    // Escaped as for a terminal, and SARIF's link brackets escaped.
    assert!(m.contains(r"\u{1b}\[31m\u{202e}"), "{m}");
    assert!(m.contains(r"\[l\](http://e)"), "{m}");
    assert!(!m.contains('\n'), "{m}");
}

#[test]
fn no_progress_bar_or_stray_output_in_machine_formats() {
    for format in ["json", "sarif", "github", "markdown"] {
        let o = run(&["lint", "--format", format, "fixtures/orphan-tool-call"]);
        assert_eq!(code(&o), 1, "{format}");
        assert!(stderr(&o).is_empty(), "{format}: {}", stderr(&o));
        no_terminal_attacks(&stdout(&o), format);
    }
}

/// Microsoft's SARIF Multitool (scripts/test-all installs it; without it
/// the test is listed as ignored, as those that need Chromium, PostgreSQL
/// or the real clients are): every SARIF log chatfsck writes for the fixtures passes
/// `validate --rule-kind "Sarif;Gh"` (the SARIF spec plus GitHub code
/// scanning's ingestion rules) with no error.
#[test]
#[cfg_attr(
    not(has_tool = "sarif-validator"),
    ignore = "needs Microsoft's SARIF validator in CHATFSCK_SARIF_VALIDATOR: scripts/test-all installs it (npm @microsoft/sarif-multitool)"
)]
fn sarif_passes_the_sarif_multitool_validator() {
    let Some(tool) = std::env::var_os("CHATFSCK_SARIF_VALIDATOR") else {
        panic!(
            "CHATFSCK_SARIF_VALIDATOR is not set: scripts/test-all installs \
             @microsoft/sarif-multitool and sets it"
        );
    };
    let d = tempfile::tempdir().unwrap();
    let mut inputs: Vec<Vec<&str>> = SNAPSHOT_FIXTURES.iter().map(|f| vec![*f]).collect();
    inputs.push(vec!["fixtures/"]);
    inputs.push(vec!["fixtures/healthy"]);
    for (i, args) in inputs.iter().enumerate() {
        let mut all = vec!["lint", "--format", "sarif"];
        all.extend(args);
        let o = run(&all);
        let log = d.path().join(format!("{i}.sarif"));
        std::fs::write(&log, &o.stdout).unwrap();
        let report = d.path().join(format!("{i}.validation.sarif"));
        let v = std::process::Command::new(&tool)
            .args(["validate", "--rule-kind", "Sarif;Gh", "--output"])
            .arg(&report)
            .arg(&log)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(&tool).display()));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
        assert!(v.status.success(), "{args:?}: validator failed:\n{said}");
        let result: Value = serde_json::from_slice(
            &std::fs::read(&report)
                .unwrap_or_else(|e| panic!("{args:?}: no report ({e}):\n{said}")),
        )
        .unwrap();
        let problems: Vec<String> = result["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["level"] == "error")
            .map(|r| format!("{}: {}", r["ruleId"], r["message"]))
            .collect();
        assert!(
            problems.is_empty(),
            "{args:?}: SARIF Multitool found errors:\n{}\n{said}",
            problems.join("\n")
        );
    }
}

#[test]
fn sarif_evidence_from_a_trace_points_at_the_trace() {
    let o = run(&[
        "lint",
        "--format",
        "sarif",
        "fixtures/dispatch/seed-000.db",
        "--trace",
        "fixtures/dispatch/traces.db",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let divergence = results
        .iter()
        .find(|r| r["ruleId"] == "prompt-divergence")
        .expect("a prompt-divergence result");
    let uris: Vec<&str> = divergence["relatedLocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(uris.contains(&"fixtures/dispatch/seed-000.db"), "{uris:?}");
    assert!(uris.contains(&"fixtures/dispatch/traces.db"), "{uris:?}");
}
