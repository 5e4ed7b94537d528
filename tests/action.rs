//! CI the way people add linters: the GitHub Action's run script
//! (scripts/action.sh, called by action.yml) and the pre-commit hook
//! (.pre-commit-hooks.yaml), run here as GitHub and pre-commit run them,
//! with the binary under test instead of a fresh build.

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Run scripts/action.sh from the repository root, as the action's step
/// does in a checked-out workspace.
fn action(dir: &Path, paths: &str, args: &str) -> (Output, String) {
    let outputs = dir.join("github-output");
    let _ = std::fs::remove_file(&outputs);
    let o = Command::new("bash")
        .arg(root().join("scripts/action.sh"))
        .current_dir(root())
        .env("CHATFSCK_BIN", env!("CARGO_BIN_EXE_chatfsck"))
        .env("CHATFSCK_PATHS", paths)
        .env("CHATFSCK_ARGS", args)
        .env("CHATFSCK_SARIF", dir.join("chatfsck.sarif"))
        .env("GITHUB_ACTION_PATH", root())
        .env("GITHUB_OUTPUT", &outputs)
        .output()
        .unwrap();
    (o, std::fs::read_to_string(&outputs).unwrap_or_default())
}

fn sarif(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("chatfsck.sarif")).unwrap()).unwrap()
}

#[test]
fn the_action_writes_sarif_and_reports_findings_without_failing_the_upload() {
    let d = tempfile::tempdir().unwrap();
    let (o, outputs) = action(
        d.path(),
        "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl  fixtures/healthy",
        "",
    );
    assert_eq!(
        code(&o),
        0,
        "findings leave the upload to run: {}",
        stderr(&o)
    );
    let sarif_path = d.path().join("chatfsck.sarif");
    assert_eq!(
        outputs,
        format!("sarif={}\nexit-code=1\n", sarif_path.display())
    );
    let log = sarif(d.path());
    assert_eq!(log["version"], "2.1.0");
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    // Paths relative to the workspace, as code scanning needs them.
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.starts_with("fixtures/orphan-tool-call/"), "{uri}");
    }
}

#[test]
fn the_action_passes_lint_arguments_and_reports_a_clean_run() {
    let d = tempfile::tempdir().unwrap();
    // A warning only: clean by default, a failure with --fail-on warning.
    let f = "fixtures/thinking-only-message";
    let (o, outputs) = action(d.path(), f, "--select thinking-only-message");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(outputs.ends_with("exit-code=0\n"), "{outputs}");
    let (o, outputs) = action(
        d.path(),
        f,
        "--select thinking-only-message --fail-on warning",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(outputs.ends_with("exit-code=1\n"), "{outputs}");
    let rules: Vec<String> = sarif(d.path())["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap().to_string())
        .collect();
    assert!(!rules.is_empty() && rules.iter().all(|r| r == "thinking-only-message"));
}

#[test]
fn the_action_fails_at_once_on_an_input_it_cannot_read() {
    let d = tempfile::tempdir().unwrap();
    let (o, outputs) = action(d.path(), "fixtures/does-not-exist.jsonl", "");
    assert_eq!(code(&o), 2);
    assert!(outputs.ends_with("exit-code=2\n"), "{outputs}");
    assert!(
        stdout(&o).contains("::error::chatfsck could not check"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn action_yml_runs_the_script_and_uploads_its_sarif() {
    let yml = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let script = std::fs::read_to_string(root().join("scripts/action.sh")).unwrap();
    assert!(yml.contains("using: composite"));
    assert!(yml.contains(r#"run: '"$GITHUB_ACTION_PATH/scripts/action.sh"'"#));
    assert!(yml.contains("uses: github/codeql-action/upload-sarif@v3"));
    assert!(yml.contains("sarif_file: ${{ steps.lint.outputs.sarif }}"));
    // Every variable the step sets is one the script reads.
    for var in ["CHATFSCK_PATHS", "CHATFSCK_ARGS", "CHATFSCK_SARIF"] {
        assert!(yml.contains(&format!("{var}: ${{{{ inputs.")), "{var}");
        assert!(script.contains(&format!("${{{var}")), "{var}");
    }
    // The build is from this repository, with the lock file.
    assert!(script.contains("cargo build --locked --release --bin chatfsck"));
    assert!(script.contains("--manifest-path \"$action_path/Cargo.toml\""));
}

/// The hook's `entry`, as pre-commit runs it: the command, then the staged
/// files that match `files`.
#[test]
fn the_pre_commit_hook_entry_fails_a_commit_of_a_broken_history() {
    let hooks = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    let field = |name: &str| {
        hooks
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name}"))
            .to_string()
    };
    assert_eq!(field("- id"), "chatfsck");
    assert_eq!(field("language"), "rust");
    assert_eq!(field("files"), r"\.jsonl$");
    let entry = field("entry");
    let mut words = entry.split_whitespace();
    assert_eq!(words.next(), Some("chatfsck"));
    let args: Vec<&str> = words.collect();
    let hook = |files: &[&str]| {
        let mut all = args.clone();
        all.extend_from_slice(files);
        code(&run(&all))
    };
    assert_eq!(hook(&["fixtures/healthy/orphan-tool-call-kimi.jsonl"]), 0);
    assert_eq!(
        hook(&[
            "fixtures/healthy/orphan-tool-call-kimi.jsonl",
            "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"
        ]),
        1
    );
}

#[test]
fn the_readme_shows_the_action_and_the_hook_with_their_real_names() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let yml = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let section = &readme[readme.find("## Using chatfsck in CI").unwrap()..];
    let section = &section[..section[3..].find("\n## ").unwrap()];
    assert!(section.contains("uses: OWNER/chatfsck@REF"));
    for input in ["paths", "args", "sarif", "upload", "fail-on-findings"] {
        assert!(
            yml.contains(&format!("\n  {input}:\n")),
            "{input} in action.yml"
        );
        assert!(
            section.contains(&format!("{input}:")),
            "{input} in the README"
        );
    }
    assert!(section.contains("- id: chatfsck"));
    assert!(section.contains("scripts/action.sh"));
}
