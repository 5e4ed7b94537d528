//! The committed man pages and shell completions match the clap
//! definitions. When a flag or subcommand changes, regenerate them with
//! `cargo run --bin chatfsck-mangen` and commit the result.

mod common;
use common::*;

use chatfsck::docgen::{DIRS, REGENERATE, files};

#[test]
fn man_pages_and_completions_are_up_to_date() {
    let want = files().unwrap();
    let mut stale = Vec::new();
    for (rel, bytes) in &want {
        match std::fs::read(root().join(rel)) {
            Ok(have) if &have == bytes => {}
            Ok(_) => stale.push(format!("{} is stale", rel.display())),
            Err(_) => stale.push(format!("{} is missing", rel.display())),
        }
    }
    for dir in DIRS {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let rel = e
                .unwrap()
                .path()
                .strip_prefix(root())
                .unwrap()
                .to_path_buf();
            if !want.iter().any(|(p, _)| *p == rel) {
                stale.push(format!("{} matches no command", rel.display()));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nregenerate them with `{REGENERATE}` and commit the result",
        stale.join("\n")
    );
}

#[test]
fn every_subcommand_has_a_man_page() {
    let want = files().unwrap();
    for name in [
        "chatfsck",
        "chatfsck-lint",
        "chatfsck-inspect",
        "chatfsck-rules",
        "chatfsck-explain",
    ] {
        let rel = std::path::PathBuf::from(format!("man/{name}.1"));
        assert!(want.iter().any(|(p, _)| *p == rel), "no {name}.1");
    }
    let lint = &want
        .iter()
        .find(|(p, _)| p.ends_with("chatfsck-lint.1"))
        .unwrap()
        .1;
    let text = String::from_utf8_lossy(lint);
    for flag in [
        "\\-\\-format",
        "\\-\\-config",
        "\\-\\-fail\\-on",
        "sarif",
        "github",
        "markdown",
    ] {
        assert!(text.contains(flag), "chatfsck-lint.1 lacks {flag}");
    }
}
