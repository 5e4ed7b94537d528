//! The committed man pages and shell completions match the clap
//! definitions. When a flag or subcommand changes, regenerate them with
//! `cargo run --bin chatfsck-mangen` and commit the result. The README's
//! rule table matches the rule catalogue the same way.

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

/// The table under the README's `## Rules` is exactly what `chatfsck rules
/// --format markdown` prints, which is generated from the rule catalogue.
#[test]
fn readme_rule_table_is_the_catalogue() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (_, rules) = readme
        .split_once("\n## Rules\n")
        .expect("README.md has a `## Rules` section");
    let table: String = rules
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    let o = run(&["rules", "--format", "markdown"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        table == stdout(&o),
        "README.md's rule table differs from the catalogue: replace it with the \
         output of `cargo run -- rules --format markdown`\n--- README.md\n{table}\
         +++ chatfsck rules --format markdown\n{}",
        stdout(&o)
    );
}
