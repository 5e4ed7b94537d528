#![allow(dead_code)]
//! Helpers for tests that run the built binary on real files.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use sha2::{Digest, Sha256};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run chatfsck from the repository root with these arguments.
pub fn run(args: &[&str]) -> Output {
    Command::cargo_bin("chatfsck")
        .unwrap()
        .current_dir(root())
        .env_remove("NO_COLOR")
        .args(args)
        .output()
        .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally, not by a signal")
}

/// Lint one path with JSON output and return the parsed document.
pub fn lint_json(path: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["lint", "--format", "json", path];
    args.extend_from_slice(extra);
    let o = run(&args);
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("lint {path}: not JSON ({e}): {}", stderr(&o)));
    (code(&o), doc)
}

/// Repair `input` into `dir/out.jsonl` with its log at `dir/log.json`,
/// expecting exit 0: the copy's path and the parsed log.
pub fn repair_logged(input: &Path, dir: &Path) -> (PathBuf, serde_json::Value) {
    let (out, log) = (dir.join("out.jsonl"), dir.join("log.json"));
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "repair {}: {}", input.display(), stderr(&o));
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    (out, log)
}

/// `action@line` of every edit of a repair log, in the log's order.
pub fn edit_lines(log: &serde_json::Value) -> Vec<String> {
    log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}@{}",
                e["action"].as_str().unwrap(),
                e["location"]["line"]
            )
        })
        .collect()
}

/// `rule@line` for every finding, sorted.
pub fn rule_lines(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}@{}", f["rule"].as_str().unwrap(), f["location"]["line"]))
        .collect();
    v.sort();
    v
}

/// `severity rule@line` for every finding, sorted.
pub fn severity_rule_lines(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}@{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["location"]["line"]
            )
        })
        .collect();
    v.sort();
    v
}

/// Repair each fixture that has edits (`action@line`, as
/// [`edit_lines`] lists them) into its own folder of `dir`, checking the
/// edits, that the input was not touched, and that every edit but an
/// answer put in keeps what it removed or replaced: the copies, each
/// named as its fixture.
pub fn repair_fixtures(dir: &Path, repairs: &[(&str, &[&str])]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (file, edits) in repairs {
        if edits.is_empty() {
            continue;
        }
        let input = root().join(file);
        let before = fingerprint(&input);
        let sub = dir.join(Path::new(file).file_stem().unwrap());
        std::fs::create_dir_all(&sub).unwrap();
        let (copy, log) = repair_logged(&input, &sub);
        assert_eq!(edit_lines(&log), *edits, "{file}: {log:#}");
        assert_eq!(fingerprint(&input), before, "{file} was touched");
        for e in log["edits"].as_array().unwrap() {
            if e["action"] != "answer-call" {
                assert!(e["before"].is_string(), "{file}: {e:#}");
            }
        }
        let named = sub.join(Path::new(file).file_name().unwrap());
        std::fs::rename(&copy, &named).unwrap();
        out.push(named);
    }
    out
}

/// `repair --in-place` of a copy of `fixture` named `name`: exit 0, one
/// backup beside it holding the input as it was, and a copy that lints
/// clean.
pub fn assert_in_place_repair_keeps_a_backup(fixture: &str, name: &str) {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join(name);
    std::fs::copy(root().join(fixture), &file).unwrap();
    let base = std::fs::read(&file).unwrap();
    let o = run(&["repair", "--in-place", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let backups: Vec<PathBuf> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &file)
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read(&backups[0]).unwrap(), base);
    let (rc, doc) = lint_json(file.to_str().unwrap(), &["--fail-on", "warning"]);
    assert_eq!(rc, 0, "{doc:#}");
}

/// `python3`, run from the repository root (for the oracle scripts).
pub fn python() -> std::process::Command {
    let mut c = std::process::Command::new("python3");
    c.current_dir(root());
    c
}

/// The JSON lines an oracle script (`script`, for the message) printed,
/// none of them an error.
pub fn oracle_summaries(script: &str, o: &Output) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !v.is_empty() && v.iter().all(|s| s.get("error").is_none()),
        "{script}: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    v
}

/// Hash and mtime of a file, to prove it was not touched.
pub fn fingerprint(path: &Path) -> Option<(String, std::time::SystemTime)> {
    let data = std::fs::read(path).ok()?;
    let mtime = std::fs::metadata(path).ok()?.modified().ok()?;
    Some((format!("{:x}", Sha256::digest(&data)), mtime))
}

/// Every fixture history (not the bad inputs), relative to the root.
/// Fixture folders of agent apps, in the apps' own layouts: checked by
/// their own tests, not by the per-rule fixture table.
const APP_FOLDERS: &[&str] = &[
    "fixtures/claude-code/",
    "fixtures/codex/",
    "fixtures/gemini-cli/",
    "fixtures/cline/",
    "fixtures/roo-code/",
    "fixtures/opencode/",
    "fixtures/goose/",
    "fixtures/copilot-cli/",
    "fixtures/pi/",
    "fixtures/qwen-code/",
    "fixtures/kimi-code/",
    "fixtures/mistral-vibe/",
    "fixtures/cursor/",
    "fixtures/cline4/",
    "fixtures/langgraph/",
    "fixtures/unsupported/",
    "fixtures/clients/",
    // Real sessions as their sources hold them: tests/corpus.rs.
    "fixtures/corpus/",
];

pub fn fixtures() -> Vec<String> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(root().join("fixtures")).sort_by_file_name() {
        let e = e.unwrap();
        let p = e.path();
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if e.file_type().is_file()
            && matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("jsonl" | "json")
            )
            && !rel.contains("bad-input")
            && !APP_FOLDERS.iter().any(|f| rel.starts_with(f))
        {
            out.push(rel);
        }
    }
    out
}

/// `rule@key` (database findings) or `rule@line`, sorted.
pub fn rule_locs(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let l = &f["location"];
            let at = match l.get("key") {
                Some(k) => k.as_str().unwrap().to_string(),
                None => l["line"].to_string(),
            };
            format!("{}@{}", f["rule"].as_str().unwrap(), at)
        })
        .collect();
    v.sort();
    v
}

/// Copy files into a fresh temporary directory; returns the directory.
pub fn copy_to_tmp(files: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in files {
        let src = root().join(f);
        std::fs::copy(&src, d.path().join(src.file_name().unwrap())).unwrap();
    }
    d
}

/// Copy SQLite databases, each with its `-wal` and `-shm`, into a fresh
/// temporary directory.
pub fn copy_wal_to_tmp(dbs: &[&str]) -> tempfile::TempDir {
    let files: Vec<String> = dbs
        .iter()
        .flat_map(|db| ["", "-wal", "-shm"].map(|suffix| format!("{db}{suffix}")))
        .collect();
    copy_to_tmp(&files.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Fingerprints of every file in a directory, by name.
pub fn dir_fingerprints(dir: &Path) -> Vec<(String, Option<(String, std::time::SystemTime)>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fingerprint(&p),
            )
        })
        .collect();
    v.sort();
    v
}

/// Repair `copy` (a repaired copy) again into `dir/second` under its own
/// file name, and assert the second copy is byte for byte the first.
pub fn assert_second_repair_changes_nothing(copy: &Path, dir: &Path) {
    let second = dir.join("second").join(copy.file_name().unwrap());
    std::fs::create_dir_all(second.parent().unwrap()).unwrap();
    let o = run(&[
        "repair",
        copy.to_str().unwrap(),
        "-o",
        second.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read(copy).unwrap(),
        std::fs::read(&second).unwrap(),
        "a second repair of {} changed it",
        copy.display()
    );
}

/// Run chatfsck with `args` (and `env`) in the repository's root, and
/// fail if it has not ended within a minute (it is killed first): for a
/// test of a hang. Its output, as [`run`] gives it.
pub fn run_within_a_minute(args: &[&str], env: &[(&str, &str)], what: &str) -> Output {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .current_dir(root())
        .envs(env.iter().copied())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed().as_secs() >= 60 {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what}: chatfsck ran for a minute and was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Repair `input` into `out` (within a minute, or the test fails): the
/// run's summary line.
pub fn repair_within_a_minute(
    input: &std::path::Path,
    out: &std::path::Path,
    what: &str,
) -> String {
    let o = run_within_a_minute(
        &[
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &[],
        what,
    );
    assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
    stdout(&o).lines().last().unwrap_or_default().to_string()
}
pub mod pg;
