//! Which of the tools that some tests need this machine has.
//!
//! A test that needs a tool outside Rust (PostgreSQL, Chromium, the real
//! agent clients, Python, …) carries
//! `#[cfg_attr(not(has_tool = "NAME"), ignore = "needs …: how to install")]`.
//! This script decides `has_tool` when the tests are built, from what is on
//! the machine, so a plain `cargo test` on a machine with only Rust lists
//! those tests as ignored with their reason, and never passes them without
//! running; where the tool is there, the same test runs and can fail.
//!
//! A tool is there when its variable is set (`scripts/test-all` sets them
//! all; a variable set to a wrong path makes the test run and fail, naming
//! it) or, for programs found on `PATH`, when `PATH` has it. Cargo runs
//! this again when one of those variables changes, when `PATH` changes,
//! and when a program appears in or leaves a directory of `PATH`.

use std::env;
use std::path::{Path, PathBuf};

/// Each tool: its cfg value, the variable that names it, and the program
/// names looked up on `PATH` when the variable is not set.
const TOOLS: &[(&str, &str, &[&str])] = &[
    ("python3", "CHATFSCK_PYTHON", &["python3"]),
    ("postgres", "CHATFSCK_TEST_PG", &[]),
    (
        "chromium",
        "CHATFSCK_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    ),
    ("sarif-validator", "CHATFSCK_SARIF_VALIDATOR", &[]),
    ("gnu-time", "CHATFSCK_GNU_TIME", &[]),
    ("clients", "CLIENTS_PREFIX", &[]),
    ("gemini-cli", "CHATFSCK_GEMINI_CLI", &[]),
    ("opencode", "CHATFSCK_OPENCODE", &[]),
    ("copilot-cli", "CHATFSCK_COPILOT_CLI", &[]),
    ("cline-cli", "CHATFSCK_CLINE_CLI", &[]),
    ("qwen-code", "CHATFSCK_QWEN_CODE", &[]),
    ("kimi-code", "CHATFSCK_KIMI_CODE", &[]),
    ("langgraph", "CHATFSCK_LANGGRAPH_PYTHON", &[]),
    ("open-webui", "CHATFSCK_OPEN_WEBUI", &[]),
    ("llm", "CHATFSCK_LLM_PYTHON", &[]),
    ("llm36", "CHATFSCK_LLM36_PYTHON", &[]),
    ("python-pkg", "CHATFSCK_PY_VENV", &[]),
];

fn main() {
    let names: Vec<String> = TOOLS.iter().map(|(n, ..)| format!("\"{n}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(has_tool, values({}))",
        names.join(", ")
    );
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");

    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let path_dirs: Vec<PathBuf> = env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect())
        .unwrap_or_default();
    // A program installed into (or removed from) one of these directories
    // changes its modification time. Only absolute directories outside the
    // repository are watched: its `target/` changes with every build.
    for dir in &path_dirs {
        if dir.is_absolute() && dir.is_dir() && !dir.starts_with(&manifest) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }

    for (name, var, programs) in TOOLS {
        println!("cargo::rerun-if-env-changed={var}");
        let set = env::var_os(var).is_some_and(|v| !v.is_empty());
        let there = set
            || programs.iter().any(|p| on_path(&path_dirs, p))
            || default_there(name, &manifest);
        if there {
            println!("cargo::rustc-cfg=has_tool=\"{name}\"");
        }
    }
}

fn on_path(dirs: &[PathBuf], program: &str) -> bool {
    dirs.iter().any(|d| is_executable(&d.join(program)))
}

/// Where a tool is found without its variable: GNU time at the path
/// tests/memory.rs runs; the pinned clients where `scripts/test-all`
/// installs them. Each is watched only when it exists (Cargo would run this
/// script on every build for a watched path that does not).
fn default_there(name: &str, manifest: &Path) -> bool {
    let path = match name {
        "gnu-time" => PathBuf::from("/usr/bin/time"),
        "clients" => manifest.join("target/tools/clients/node_modules/.package-lock.json"),
        "qwen-code" => {
            manifest.join("target/tools/qwen/node_modules/@qwen-code/qwen-code/package.json")
        }
        "kimi-code" => {
            manifest.join("target/tools/kimi/node_modules/@moonshot-ai/kimi-code/dist/main.mjs")
        }
        "langgraph" => manifest.join("target/tools/langgraph/bin/python"),
        "python-pkg" => manifest.join("target/tools/python-pkg/bin/maturin"),
        "llm" => manifest.join("target/tools/llm/bin/llm"),
        "llm36" => manifest.join("target/tools/llm36/bin/llm"),
        "open-webui" => manifest.join("target/tools/open-webui/open_webui-0.12.4-py3-none-any.whl"),
        _ => return false,
    };
    let there = path.is_file();
    if there {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    there
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
