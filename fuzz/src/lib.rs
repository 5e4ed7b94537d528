//! What the fuzz targets share: the file names a fuzzed input is written
//! under (detection looks at names as well as content), a private scratch
//! directory, the repair contract as a checkable property (the same module
//! tests/conservation.rs checks the built binary with), and what a report
//! must never let through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[path = "../../tests/contract/mod.rs"]
pub mod contract;
#[path = "targets.rs"]
pub mod targets;

/// chatfsck's library, called in process, as the contract's driver.
pub struct Library;

impl contract::Chatfsck for Library {
    fn lint(&self, path: &Path) -> Result<BTreeMap<String, usize>, String> {
        let out = chatfsck::lint::lint(&[path.to_path_buf()], &Default::default())
            .map_err(|e| e.to_string())?;
        if let Some(e) = out.errors.first() {
            return Err(e.to_string());
        }
        let mut t = BTreeMap::new();
        for f in out.findings() {
            if f.severity == chatfsck::finding::Severity::Error {
                *t.entry(f.rule.to_string()).or_default() += 1;
            }
        }
        Ok(t)
    }

    /// The input's resume, from the resume model: every record a message
    /// it sends is built from (merged records and results included),
    /// found again in the copy by `contract::keys_by_line`.
    fn brought_back(&self, input: &Path, copy: &Path) -> BTreeMap<String, usize> {
        use chatfsck::format::{self, Dialect};
        let limits = Default::default();
        let Ok(mut src) = format::open(input, limits) else {
            return BTreeMap::new();
        };
        if src.info().dialect != Dialect::ClaudeCode {
            return BTreeMap::new();
        }
        let keys = contract::keys_by_line(&std::fs::read(input).unwrap_or_default());
        let mut sent = std::collections::HashSet::new();
        while let Some(Ok(conv)) = src.next_conversation() {
            for m in &conv.messages {
                let lines = std::iter::once(&m.loc).chain(m.parts.iter().map(|p| &p.loc));
                for l in lines.filter_map(|l| l.line()) {
                    if let Some(k) = contract::on_line(&keys, l) {
                        sent.insert(k.to_string());
                    }
                }
            }
        }
        let Ok(out) = chatfsck::lint::lint(&[copy.to_path_buf()], &Default::default()) else {
            return BTreeMap::new();
        };
        let after = contract::keys_by_line(&std::fs::read(copy).unwrap_or_default());
        let mut t = BTreeMap::new();
        for f in out.findings() {
            if f.severity == chatfsck::finding::Severity::Error
                && let Some(k) = f.line().and_then(|l| contract::on_line(&after, l))
                && !sent.contains(k)
            {
                *t.entry(f.rule.to_string()).or_default() += 1;
            }
        }
        t
    }

    fn resumes_as_much(&self, input: &Path, copy: &Path, removed: &contract::Removed) -> bool {
        let resumed = |p: &Path| chatfsck::format::claude_code::resumed_at(p, Default::default());
        match (resumed(input), resumed(copy)) {
            (Ok(a), Ok(b)) => contract::sends_all(&a, &b, removed),
            _ => false,
        }
    }

    fn repair(&self, input: &Path, output: &Path) -> Result<contract::Repaired, String> {
        let opts = chatfsck::repair::Options::default();
        let r = chatfsck::repair::repair(input, Some(output), &opts).map_err(|e| e.to_string())?;
        // Read as the log the command writes: one reading of it, the
        // contract's.
        let doc = serde_json::to_value(&r).map_err(|e| e.to_string())?;
        contract::Repaired::from_log(&doc)
    }

    fn never_repaired(&self, input: &Path) -> bool {
        use chatfsck::format::{self, Writing};
        format::open(input, Default::default())
            .ok()
            .and_then(|s| {
                format::store_of(&s.info()).map(|s| matches!(s.writing, Writing::Never(_)))
            })
            .unwrap_or(false)
    }
}

pub use contract::NAMES;

/// This process's scratch directory (under /dev/shm when there is one:
/// every execution writes a file), named with chatfsck's own temporary
/// tag (`fuzz-chatfsck-<pid>-`). The fuzzer ends a process with `exit`,
/// so a directory outlives its process: each process removes those of
/// processes that are gone, as chatfsck sweeps its own (a fork-mode run
/// starts a process per job, thousands in a long run).
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        chatfsck::cleanup::sweep(&base, "fuzz-");
        let dir = base.join(format!("fuzz-{}", chatfsck::cleanup::tag()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}

pub use contract::named;

/// Write `body` as `name` in a fresh subdirectory `sub` of the scratch
/// directory (emptied first), and give its path.
pub fn save(sub: &str, name: &str, body: &[u8]) -> PathBuf {
    let dir = scratch().join(sub);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch subdirectory");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("scratch file");
    path
}

/// A report keeps untrusted text from acting on what reads it: no control
/// character reaches any format (a terminal, a CI log) but the line breaks
/// and tabs of its own layout; JSON and SARIF parse; every GitHub workflow
/// command in the output is an annotation of chatfsck's own.
pub fn escaped(format: chatfsck::report::Format, text: &str) {
    use chatfsck::report::Format;
    if let Some(c) = contract::scan::raw_character(text) {
        panic!("{format:?} output holds the raw character {c:?}");
    }
    match format {
        Format::Json | Format::Sarif => {
            // Parsed, not built: a tree of the SARIF catalogue would cost
            // more than the lint.
            serde_json::from_str::<serde::de::IgnoredAny>(text).expect("JSON output parses");
        }
        Format::Github => {
            // The runner reads a line that starts with `::` as a command:
            // only chatfsck's own annotations may.
            for line in text.lines().filter(|l| l.trim_start().starts_with("::")) {
                assert!(
                    line.starts_with("::error ")
                        || line.starts_with("::warning ")
                        || line.starts_with("::notice "),
                    "a GitHub command that is not chatfsck's annotation: {line:?}"
                );
            }
        }
        _ => {}
    }
}
