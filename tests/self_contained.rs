//! A fresh clone is all the tests need: nothing the project builds, tests
//! or benchmarks names a file beside the repository. (The project's notes
//! live beside it on the maintainers' machines; a contributor's clone has
//! no such folder, so a test that read one would fail there, or worse,
//! pass only here.) `.ci/run` also runs the whole suite with that folder
//! hidden.

mod common;
use common::root;

/// The ways a path outside the repository was written before the corpus
/// and the oracle moved in (spelled in pieces, so this file does not match).
fn outside() -> Vec<String> {
    let notes = "shared";
    vec![
        format!("../{notes}"),
        format!("/work/{notes}"),
        format!("{notes}/corpus"),
        format!("{notes}/oracles"),
    ]
}

#[test]
fn no_file_of_the_repository_reads_beside_it() {
    let needles = outside();
    let mut hits = Vec::new();
    // Build output, installed tools and the fuzzers' data name nothing.
    let walk = walkdir::WalkDir::new(root()).into_iter().filter_entry(|e| {
        let name = e.file_name().to_string_lossy();
        let fuzz_data = e.path().parent() == Some(&root().join("fuzz"))
            && matches!(&*name, "corpus" | "artifacts" | "coverage");
        !(e.file_type().is_dir()
            && (matches!(&*name, "target" | ".git" | "node_modules") || fuzz_data))
    });
    for e in walk {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        // Text only: the fixtures' databases and binary inputs name nothing.
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let rel = e.path().strip_prefix(root()).unwrap().display().to_string();
        // The corpus's README tells where its files came from, in the
        // words of its sources; its files are data.
        // .ci/run names the folder to hide it from everything it runs.
        if rel.starts_with("fixtures/corpus/") || rel == ".ci/run" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|x| line.contains(x.as_str())) {
                hits.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "files that name a path beside the repository (a fresh clone has none):\n{}",
        hits.join("\n")
    );
}
