//! Sources: one module per storage format. A source opens its input
//! read-only, recognises the format and dialect from the content, and yields
//! conversations one at a time, each message carrying its origin.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{Conversation, SourceInfo};

pub mod chat;
pub mod jsonl;
pub mod kv;
pub mod lines;
pub mod pipeline;
pub mod postgres;
pub mod rows;
pub mod sqlite;
pub mod trace;

pub use rows::Mapping;

/// Work on each conversation that a threaded source may run on the thread
/// that built it, before handing it over (lint's checks): the work then
/// spreads over the cores with the reading, and runs while the
/// conversation is still in that core's cache.
pub type Prepare = Arc<dyn Fn(&Conversation) -> Prepared + Send + Sync>;

/// What a [`Prepare`] made of one conversation.
pub type Prepared = Box<dyn Any + Send>;

/// A stream of conversations read from one input.
pub trait Source: Send {
    fn info(&self) -> Arc<SourceInfo>;
    /// The next conversation, or `None` at the end.
    fn next_conversation(&mut self) -> Option<Result<Conversation>>;
    /// A trace: recorded requests, with access by conversation.
    fn as_trace(&mut self) -> Option<&mut trace::TraceSource> {
        None
    }
    /// Hand back a conversation the caller is done with. A source whose
    /// threads built it frees it there, where it was allocated.
    fn done(&mut self, conv: Conversation) {
        drop(conv);
    }
    /// Offer `work` to run where conversations are built. A source without
    /// threads ignores it; one with threads may still hand over some
    /// conversations (those built before the offer) without it.
    fn prepare_with(&mut self, work: Prepare) {
        drop(work);
    }
    /// What the offered work made of the conversation last returned by
    /// [`Source::next_conversation`], when it ran there; `None` tells the
    /// caller to do the work itself.
    fn prepared(&mut self) -> Option<Prepared> {
        None
    }
}

/// Limits that keep a hostile input from exhausting memory.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest line (JSONL) accepted.
    pub max_line_bytes: usize,
    /// Largest whole-document JSON file accepted.
    pub max_document_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 64 << 20,
            max_document_bytes: 1 << 30,
        }
    }
}

/// What a file turned out to be.
pub enum Opened {
    /// A trace: recorded requests.
    Trace(trace::TraceSource),
    /// A conversation store or log.
    History(Box<dyn Source>),
}

impl Opened {
    pub fn into_source(self) -> Box<dyn Source> {
        match self {
            Opened::Trace(t) => Box::new(t),
            Opened::History(s) => s,
        }
    }
}

/// Open a file and recognise its format from its content.
pub fn open(path: &Path, limits: Limits) -> Result<Box<dyn Source>> {
    open_with(path, limits, None)
}

/// Open an input (see [`open_any_with`]) as a stream of conversations.
pub fn open_with(
    path: &Path,
    limits: Limits,
    mapping: Option<&Mapping>,
) -> Result<Box<dyn Source>> {
    open_any_with(path, limits, mapping).map(Opened::into_source)
}

/// Open a file and recognise its format from its content, keeping traces
/// apart from histories.
pub fn open_any(path: &Path, limits: Limits) -> Result<Opened> {
    open_any_with(path, limits, None)
}

/// Open an input: a file (format recognised from its content) or a
/// PostgreSQL database (`postgres:`, `postgres://…`). A mapping names the
/// message table of a SQLite or PostgreSQL database.
pub fn open_any_with(path: &Path, limits: Limits, mapping: Option<&Mapping>) -> Result<Opened> {
    if postgres::is_target(path) {
        return postgres::open(path, mapping).map(Opened::History);
    }
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, &e))?;
    if meta.is_dir() {
        return Err(Error::input(path, "is a directory"));
    }
    if sqlite::is_sqlite(path) {
        return open_sqlite(path, mapping);
    }
    if mapping.is_some() {
        return Err(Error::Usage(format!(
            "--table and the column flags name a table of a SQLite or PostgreSQL database; {} is not one",
            path.display()
        )));
    }
    if matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("db" | "sqlite" | "sqlite3")
    ) {
        return Err(Error::input(
            path,
            "not a SQLite database (no SQLite header: encrypted, e.g. with SQLCipher, or another kind of file)",
        ));
    }
    if let Some(mode) = trace::otlp::detect(path, limits)? {
        return Ok(Opened::Trace(trace::TraceSource::new(Box::new(
            trace::otlp::open(path, mode, limits)?,
        ))));
    }
    jsonl::open(path, limits).map(Opened::History)
}

/// Open a trace (dispatch `traces.db`, Phoenix `phoenix.db`, OTLP JSON
/// Lines); anything else is an error that says what the file is instead.
pub fn open_trace(path: &Path, limits: Limits) -> Result<trace::TraceSource> {
    match open_any(path, limits)? {
        Opened::Trace(t) => Ok(t),
        Opened::History(src) => {
            let info = src.info();
            let what = if info.format == "jsonl" || info.format == "json" {
                "a message history".to_string()
            } else {
                format!("a {} {} history", info.dialect, info.format)
            };
            Err(Error::input(
                path,
                format!(
                    "is not a trace but {what}; a trace is dispatch's traces.db, a Phoenix database or an OTLP JSON file"
                ),
            ))
        }
    }
}

fn open_sqlite(path: &Path, mapping: Option<&Mapping>) -> Result<Opened> {
    let snap = sqlite::open(path)?;
    if mapping.is_none() && kv::detect(&snap.conn).map_err(sqlite::error_of(path))? {
        return Ok(Opened::History(Box::new(kv::open(path, snap)?)));
    }
    let layout = rows::sqlite_layout(&snap.conn, mapping);
    match layout {
        Ok(layout) => Ok(Opened::History(Box::new(rows::open_sqlite(
            path, snap, layout,
        )?))),
        Err(rows::LayoutError::Bad(cause) | rows::LayoutError::Db(cause)) => {
            Err(Error::input(path, cause))
        }
        Err(rows::LayoutError::NotHistory(why)) => match trace::open_sqlite(path, snap)? {
            Some(t) => Ok(Opened::Trace(t)),
            None => Err(Error::not_history(path, format!("SQLite database {why}"))),
        },
    }
}

/// True for file names the directory walk picks up.
pub fn is_candidate(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "json" | "db" | "sqlite" | "sqlite3")
    )
}

/// Expand the paths named on the command line: files as they are,
/// directories recursively (sorted, `.git` skipped) to their candidate files.
/// Returns (path, named explicitly).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut out = Vec::new();
    for p in paths {
        if postgres::is_target(p) {
            out.push((p.clone(), true));
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, &e))?;
        if !meta.is_dir() {
            out.push((p.clone(), true));
            continue;
        }
        let before = out.len();
        let walker = walkdir::WalkDir::new(p)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git");
        for entry in walker {
            let entry = entry.map_err(|e| {
                let at = e.path().unwrap_or(p).to_path_buf();
                match e.io_error() {
                    Some(io) => Error::io(&at, io),
                    None => Error::input(&at, "cannot walk directory"),
                }
            })?;
            if entry.file_type().is_file() && is_candidate(entry.path()) {
                out.push((entry.into_path(), false));
            }
        }
        if out.len() == before {
            return Err(Error::input(
                p,
                "directory holds no histories (no *.jsonl or *.json files)",
            ));
        }
    }
    Ok(out)
}
