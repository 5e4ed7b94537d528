//! Reports render what the engine computed; they never compute findings.
//!
//! Every command prints one [`Document`] in one [`Format`] (see
//! [`document`]). A document's module says how it is written in each of its
//! formats (`inspect.rs`, `repair.rs`, `diff.rs`, `crosscheck.rs`,
//! `rules.rs`, `lint.rs`); the per-format modules hold `lint`'s printers and
//! what the documents share (`json::write`, `markdown::table`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, IsTerminal};
use std::path::{Component, Path, PathBuf};

pub mod arrow;
pub mod crosscheck;
pub mod diff;
pub mod document;
pub mod github;
pub mod html;
pub mod human;
pub mod inspect;
pub mod json;
pub mod lint;
pub mod markdown;
pub mod repair;
pub mod rules;
pub mod sarif;
pub mod snippet;
pub mod table;

pub use document::{Document, Format, FormatArg, Render, formats, renderer};

/// `1 file`, `2 files`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A record named for people, without its file: `line 12`, or
/// `kv conv:…:chunk:0000000002 (rowid 2)`. Not escaped: history text may be
/// in a key, so every caller escapes for its medium.
pub fn record(loc: &crate::model::Loc) -> String {
    use crate::model::Loc;
    match loc {
        Loc::Line { line, .. } => format!("line {line}"),
        Loc::Row { table, key, rowid } => match rowid {
            Some(r) => format!("{table} {key} (rowid {r})"),
            None => format!("{table} {key}"),
        },
    }
}

/// Whether to colour output written to stdout.
pub fn use_color() -> bool {
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// How a CI report names an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiPath {
    /// Relative to the base directory (the current directory, where CI
    /// checks out the repository), `/`-separated, without `./`.
    Relative(String),
    /// Outside the base directory: the absolute path.
    Absolute(PathBuf),
    /// Not a file: a database URL (`postgres://user@host/db`).
    Url(String),
}

/// Remove `.` and resolve `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn slash_join(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Name `path` relative to `base` when it lies under it. Lexical first (so
/// a symlinked checkout keeps its names), then through the real paths.
pub fn ci_path(path: &Path, base: Option<&Path>) -> CiPath {
    if crate::source::is_postgres(path) {
        return CiPath::Url(path.display().to_string());
    }
    let Some(base) = base else {
        let n = normalize(path);
        return if n.is_absolute() {
            CiPath::Absolute(n)
        } else {
            CiPath::Relative(slash_join(&n))
        };
    };
    let base = normalize(base);
    let abs = normalize(&base.join(path));
    if let Ok(rel) = abs.strip_prefix(&base)
        && rel.components().next().is_some()
    {
        return CiPath::Relative(slash_join(rel));
    }
    if let (Ok(real), Ok(real_base)) = (abs.canonicalize(), base.canonicalize())
        && let Ok(rel) = real.strip_prefix(&real_base)
        && rel.components().next().is_some()
    {
        return CiPath::Relative(slash_join(rel));
    }
    CiPath::Absolute(abs)
}

/// `ci_path` for one report, each input named once however many findings
/// it has: naming a path outside the base directory asks the file system
/// for the real paths of both.
pub struct CiPaths {
    base: Option<PathBuf>,
    named: RefCell<HashMap<PathBuf, CiPath>>,
}

impl CiPaths {
    pub fn new(base: Option<PathBuf>) -> Self {
        CiPaths {
            base,
            named: RefCell::default(),
        }
    }

    pub fn name(&self, path: &Path) -> CiPath {
        if let Some(n) = self.named.borrow().get(path) {
            return n.clone();
        }
        let n = ci_path(path, self.base.as_deref());
        self.named
            .borrow_mut()
            .insert(path.to_path_buf(), n.clone());
        n
    }
}

/// The directory CI paths are relative to: the current directory.
pub fn ci_base() -> Option<PathBuf> {
    std::env::current_dir().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_base_become_relative() {
        let base = Path::new("/repo");
        let rel = |p: &str| ci_path(Path::new(p), Some(base));
        assert_eq!(
            rel("fixtures/a.jsonl"),
            CiPath::Relative("fixtures/a.jsonl".into())
        );
        assert_eq!(
            rel("./fixtures/./a.jsonl"),
            CiPath::Relative("fixtures/a.jsonl".into())
        );
        assert_eq!(
            rel("/repo/fixtures/a.jsonl"),
            CiPath::Relative("fixtures/a.jsonl".into())
        );
        assert_eq!(
            rel("x/../fixtures/a.jsonl"),
            CiPath::Relative("fixtures/a.jsonl".into())
        );
        assert_eq!(
            rel("../other/a.jsonl"),
            CiPath::Absolute("/other/a.jsonl".into())
        );
        assert_eq!(
            rel("/elsewhere/a.jsonl"),
            CiPath::Absolute("/elsewhere/a.jsonl".into())
        );
        assert_eq!(
            ci_path(Path::new("./a/b.jsonl"), None),
            CiPath::Relative("a/b.jsonl".into())
        );
    }

    #[test]
    fn a_database_url_is_not_a_repository_path() {
        assert_eq!(
            ci_path(
                Path::new("postgres://alice@db:5432/app"),
                Some(Path::new("/repo"))
            ),
            CiPath::Url("postgres://alice@db:5432/app".into())
        );
    }
}
