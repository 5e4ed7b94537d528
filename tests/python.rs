//! The Python package (python/, issue 38): built into its test venv with
//! maturin, then its pytest suite run against the built CLI on a
//! generated dataset. A failing Python test fails this test; so does a
//! skipped one (an engine that is not installed), unless the run allows
//! it by name (CHATFSCK_PY_ALLOW_SKIP).

mod common;
#[path = "common/dataset.rs"]
mod dataset;

use std::path::PathBuf;
use std::process::Command;

use common::root;

fn venv() -> PathBuf {
    std::env::var_os("CHATFSCK_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/tools/python-pkg"))
}

fn ok(what: &str, c: &mut Command) -> String {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed ({}):\n{out}", o.status);
    out
}

#[test]
#[cfg_attr(
    not(has_tool = "python-pkg"),
    ignore = "needs the Python package's venv in target/tools/python-pkg (scripts/test-all installs it from python/requirements-test.txt)"
)]
fn the_python_package_passes_its_tests_on_a_generated_dataset() {
    let venv = venv();
    let bin = venv.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The extension module, built by the workspace's cargo into the venv.
    ok(
        "maturin develop",
        Command::new(bin.join("maturin"))
            .args(["develop", "--locked", "--quiet", "--manifest-path"])
            .arg(root().join("python/Cargo.toml"))
            .env("VIRTUAL_ENV", &venv)
            .env("PATH", &path)
            .env_remove("CONDA_PREFIX"),
    );
    // The dataset: JSON Lines, Parquet with a JSON-text and with a nested
    // `messages` column, and the truth table.
    let dir = tempfile::tempdir().unwrap();
    let rows = dataset::rows(38, 3000, 0);
    std::fs::write(dir.path().join("gen.jsonl"), dataset::jsonl(&rows)).unwrap();
    std::fs::write(dir.path().join("gen.truth.tsv"), dataset::truth(&rows)).unwrap();
    dataset::write_parquet(&rows, false, &dir.path().join("gen.parquet"), 1000);
    dataset::write_parquet(&rows, true, &dir.path().join("gen.nested.parquet"), 1000);
    let out = ok(
        "pytest",
        Command::new(bin.join("python"))
            .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
            .arg(root().join("python/tests"))
            .current_dir(dir.path())
            .env("CHATFSCK_BIN", env!("CARGO_BIN_EXE_chatfsck"))
            .env("CHATFSCK_PY_DATA", dir.path())
            .env("PATH", &path),
    );
    eprintln!("{out}");
    let allowed = std::env::var("CHATFSCK_PY_ALLOW_SKIP").unwrap_or_default();
    for line in out.lines().filter(|l| l.starts_with("SKIPPED")) {
        assert!(
            allowed
                .split(',')
                .any(|a| !a.is_empty() && line.contains(a)),
            "a Python test was skipped, and CHATFSCK_PY_ALLOW_SKIP does not allow it: {line}"
        );
    }
    assert!(out.contains(" passed"), "no Python test ran:\n{out}");
}
