//! The command line as data: every case under `tests/cmd/` runs the built
//! `chatfsck` and must print exactly its expected output and exit with its
//! expected code. A new case is files, never code: see tests/cmd/README.md.
//!
//! `TRYCMD=overwrite cargo test --test cmd` writes what the binary prints into
//! the expected files (then read the diff before committing it);
//! `cargo test --test cmd -- cli_cases trycmd=NAME` runs the cases whose file
//! names contain NAME.

use std::path::{Path, PathBuf};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cmd")
}

#[test]
fn cli_cases() {
    trycmd::TestCases::new()
        .register_bin("chatfsck", Path::new(env!("CARGO_BIN_EXE_chatfsck")))
        .default_bin_name("chatfsck")
        .case("tests/cmd/*.toml")
        .case("tests/cmd/*.trycmd");
}

/// Two ways trycmd would pass a `.toml` case without checking it: a stream
/// with no expected text is not compared at all, and in text mode a `\` in
/// the output compares equal to a `/` (trycmd normalises Windows paths), so
/// an escape like `\u{1b}` would match `/u{1b}`. Every case checks both
/// streams, and one whose expected output holds a backslash compares bytes
/// (`binary = true`).
#[test]
fn toml_cases_check_both_streams_exactly() {
    let mut loose = Vec::new();
    for entry in std::fs::read_dir(cases_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let case: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        let binary = case.get("binary").and_then(toml::Value::as_bool) == Some(true);
        for stream in ["stdout", "stderr"] {
            let file = path.with_extension(stream);
            let expected = match case.get(stream) {
                Some(inline) => inline.as_str().unwrap_or_default().to_owned(),
                None if file.exists() => std::fs::read_to_string(&file).unwrap(),
                None => {
                    loose.push(format!(
                        "{}: no `{stream}` key and no .{stream} file",
                        path.display()
                    ));
                    continue;
                }
            };
            if !binary && expected.contains('\\') {
                loose.push(format!(
                    "{}: expected {stream} holds `\\`: set `binary = true`",
                    path.display()
                ));
            }
        }
    }
    assert!(loose.is_empty(), "{}", loose.join("\n"));
}

/// In a `.trycmd` session and in `<case>.out/`, trycmd turns each `\` of the
/// actual output into `/` before comparing, so an expected `\` can never
/// match and an expected `/` hides what chatfsck printed: keep commands
/// whose output holds backslashes in binary `.toml` cases, and write `[..]`
/// for such a line of an output file (tests/cmd/README.md).
#[test]
fn sessions_and_output_files_hold_no_backslash() {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(cases_dir()) {
        let entry = entry.unwrap();
        let path = entry.path();
        let session = path.extension().is_some_and(|e| e == "trycmd");
        let output_file = path
            .ancestors()
            .skip(1)
            .any(|a| a.extension().is_some_and(|e| e == "out"));
        if entry.file_type().is_file() && (session || output_file) {
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
            if let Some(n) = text.lines().position(|l| l.contains('\\')) {
                found.push(format!("{}:{}", path.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// chatfsck escapes control characters, ANSI escapes and bidi overrides
/// before they reach a terminal; an expected output holding one raw would
/// mean an overwrite accepted output that broke that promise.
#[test]
fn expected_outputs_hold_no_raw_control_characters() {
    let mut raw = Vec::new();
    for entry in walkdir::WalkDir::new(cases_dir()) {
        let entry = entry.unwrap();
        let path = entry.path();
        let expected = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("stdout" | "stderr" | "toml" | "trycmd")
        ) || path
            .ancestors()
            .skip(1)
            .any(|a| a.extension().is_some_and(|e| e == "out"));
        if !entry.file_type().is_file() || !expected {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        if let Some(c) = text.chars().find(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        }) {
            raw.push(format!("{}: raw {:?}", path.display(), c));
        }
    }
    assert!(raw.is_empty(), "{}", raw.join("\n"));
}
