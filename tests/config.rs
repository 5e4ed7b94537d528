//! chatfsck.toml: found from the current directory upwards or named with
//! --config, overridden by flags, and refused (exit 2, one line naming the
//! file) when it holds an unknown key or rule.

mod common;
use common::*;

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

const ORPHAN: &str = concat!(
    r#"{"role":"user","content":"list files"}"#,
    "\n",
    r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
    "\n",
    r#"{"role":"user","content":"well?"}"#,
    "\n",
);

/// A history whose only finding is a warning (`empty-message`).
const WARN_ONLY: &str = concat!(
    r#"{"role":"user","content":"hi"}"#,
    "\n",
    r#"{"role":"assistant","content":""}"#,
    "\n",
);

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("chatfsck")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn findings(o: &Output) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(o)));
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A project: `chatfsck.toml` with `config` at the top, histories in
/// `histories/`, and a nested working directory `histories/deep/er`.
fn project(config: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("chatfsck.toml"), config).unwrap();
    std::fs::create_dir_all(d.path().join("histories/deep/er")).unwrap();
    std::fs::write(d.path().join("histories/orphan.jsonl"), ORPHAN).unwrap();
    std::fs::write(d.path().join("histories/warn.jsonl"), WARN_ONLY).unwrap();
    d
}

#[test]
fn the_nearest_file_above_the_current_directory_applies() {
    let d = project("ignore = [\"orphan-tool-call\"]\n");
    let deep = d.path().join("histories/deep/er");
    let o = run_in(&deep, &["lint", "--format", "json", "../../orphan.jsonl"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(findings(&o).is_empty());
    // Without the file the orphan is found.
    std::fs::remove_file(d.path().join("chatfsck.toml")).unwrap();
    let o = run_in(&deep, &["lint", "--format", "json", "../../orphan.jsonl"]);
    assert_eq!(code(&o), 1);
    assert_eq!(findings(&o), vec!["orphan-tool-call"]);
}

#[test]
fn config_names_a_file_anywhere() {
    let d = project("");
    let other = tempfile::tempdir().unwrap();
    let cfg = other.path().join("ci.toml");
    std::fs::write(
        &cfg,
        "select = [\"empty-message\"]\nfail-on = \"warning\"\n",
    )
    .unwrap();
    let o = run_in(
        d.path(),
        &[
            "lint",
            "--format",
            "json",
            "--config",
            cfg.to_str().unwrap(),
            "histories",
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(findings(&o), vec!["empty-message"]);
}

#[test]
fn flags_override_the_file() {
    let d = project("select = [\"empty-message\"]\nfail-on = \"warning\"\n");
    let p = d.path();
    // The file: only empty-message, failing on warnings.
    let o = run_in(p, &["lint", "--format", "json", "histories/warn.jsonl"]);
    assert_eq!(code(&o), 1);
    // --fail-on replaces fail-on.
    let o = run_in(p, &["lint", "--fail-on", "error", "histories/warn.jsonl"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // --select replaces select.
    let o = run_in(
        p,
        &[
            "lint",
            "--format",
            "json",
            "--select",
            "orphan-tool-call",
            "histories",
        ],
    );
    assert_eq!(findings(&o), vec!["orphan-tool-call"]);
    // --ignore replaces ignore.
    let d = project("ignore = [\"orphan-tool-call\"]\n");
    let o = run_in(
        d.path(),
        &[
            "lint",
            "--format",
            "json",
            "--ignore",
            "empty-message",
            "histories",
        ],
    );
    assert_eq!(findings(&o), vec!["orphan-tool-call"]);
}

fn assert_config_error(o: &Output, file: &Path, says: &str) {
    assert_eq!(code(o), 2, "stdout: {} stderr: {}", stdout(o), stderr(o));
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let want = format!("error: {}: ", file.display());
    assert!(err.starts_with(&want), "names the file: {err}");
    assert!(err.contains(says), "says `{says}`: {err}");
    assert!(stdout(o).is_empty(), "no report: {}", stdout(o));
}

#[test]
fn bad_files_are_one_line_errors_naming_the_file() {
    let cases = [
        (
            "selct = [\"orphan-tool-call\"]\n",
            "line 1, column 1: unknown field `selct`",
        ),
        ("[lint]\nselect = []\n", "unknown field `lint`"),
        (
            "ignore = [\"orphan-tool-cal\"]\n",
            "unknown rule `orphan-tool-cal` in `ignore`",
        ),
        ("select = [\"nope\"]\n", "unknown rule `nope` in `select`"),
        ("fail-on = \"fatal\"\n", "unknown variant `fatal`"),
        (
            "[repair]\norphan-calls = \"keep\"\n",
            "line 2, column 16: unknown variant `keep`",
        ),
        (
            "[repair]\nsynthesise = false\n",
            "unknown field `synthesise`",
        ),
        (
            "[repair]\norphan-calls = \"placeholder\"\nsynthesize = false\n",
            "[repair]: `orphan-calls = \"placeholder\"` invents results",
        ),
        ("select = [\n", "unclosed array"),
    ];
    for (text, says) in cases {
        let d = project(text);
        let file = d.path().join("chatfsck.toml");
        // Found by the upward search, from the project root.
        let o = run_in(d.path(), &["lint", "histories"]);
        assert_config_error(&o, &file, says);
        // Named with --config.
        let o = run_in(
            &root(),
            &[
                "lint",
                "--config",
                file.to_str().unwrap(),
                "fixtures/healthy",
            ],
        );
        assert_config_error(&o, &file, says);
    }
}

#[test]
fn a_missing_config_file_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.toml");
    let o = run_in(
        &root(),
        &[
            "lint",
            "--config",
            missing.to_str().unwrap(),
            "fixtures/healthy",
        ],
    );
    assert_config_error(&o, &missing, "no such file");
}

#[test]
fn the_repository_has_no_config_that_would_change_the_other_tests() {
    assert!(
        !root().join("chatfsck.toml").exists(),
        "a chatfsck.toml at the root changes what every CLI test sees"
    );
}

#[test]
fn the_readme_example_is_a_valid_file() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let c = chatfsck::config::Config::parse(&readme[start..end], Path::new("README.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(c.select.is_some() && c.ignore.is_some() && c.fail_on.is_some());
    assert!(c.repair.orphan_calls.is_some() && c.repair.synthesize.is_some());
}
