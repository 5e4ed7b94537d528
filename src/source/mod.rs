//! What every reader shares: the [`Source`] trait (a stream of
//! conversations), input limits, the line reader, the reader-thread
//! pipeline, forensic SQLite access, and the expansion of the paths named on
//! the command line. The readers themselves are in `format`, one folder per
//! storage format; this module knows none of them.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{Conversation, Dialect, Format, SourceInfo};

pub mod compressed;
pub mod lines;
pub mod pipeline;
pub mod sqlite;
pub mod trace;

/// A message table named on the command line: `--table T
/// --conversation-column C --index-column I --role-column R --content-column X`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub table: String,
    pub conversation: String,
    pub index: String,
    pub role: String,
    pub content: String,
}

/// Work on each conversation that a threaded source may run on the thread
/// that built it, before handing it over (lint's checks): the work then
/// spreads over the cores with the reading, and runs while the
/// conversation is still in that core's cache.
pub type Prepare = Arc<dyn Fn(&Conversation) -> Prepared + Send + Sync>;

/// What a [`Prepare`] made of one conversation.
pub type Prepared = Box<dyn Any + Send>;

/// A file that holds one conversation, read by `read` when it is asked
/// for (stores whose file is a whole history: JSON documents, session
/// logs). Its info is then the conversation's (a reader may learn the
/// format only as it reads).
pub struct OneFile {
    pub path: PathBuf,
    pub limits: Limits,
    pub info: Arc<SourceInfo>,
    pub read: fn(&Path, Limits, Arc<SourceInfo>) -> Result<Conversation>,
    pub done: bool,
}

impl OneFile {
    /// The file at `path`, opened now so that an unreadable file fails
    /// before any work starts.
    pub fn open(
        path: &Path,
        limits: Limits,
        format: Format,
        dialect: Dialect,
        read: fn(&Path, Limits, Arc<SourceInfo>) -> Result<Conversation>,
    ) -> Result<OneFile> {
        std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
        Ok(OneFile {
            path: path.to_path_buf(),
            limits,
            info: Arc::new(SourceInfo {
                path: path.to_path_buf(),
                format,
                dialect,
            }),
            read,
            done: false,
        })
    }
}

impl Source for OneFile {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        if self.done {
            return None;
        }
        self.done = true;
        let result = (self.read)(&self.path, self.limits, self.info.clone());
        if let Ok(conv) = &result {
            self.info = conv.source.clone();
        }
        Some(result)
    }
}

/// A stream of conversations read from one input.
pub trait Source: Send {
    fn info(&self) -> Arc<SourceInfo>;
    /// The next conversation, or `None` at the end.
    fn next_conversation(&mut self) -> Option<Result<Conversation>>;
    /// Whether this source reads a trace (recorded requests), which is
    /// never cross-checked against itself.
    fn is_trace(&self) -> bool {
        false
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
    /// Where a conversation dataset keeps each row's conversation and id.
    pub columns: Columns,
}

/// The columns (JSON Lines: the members) of a conversation dataset named
/// on the command line (`--messages-column`, `--id-column`); `None`: the
/// usual names (`messages` or ShareGPT's `conversations`, and `id`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Columns {
    pub messages: Option<&'static str>,
    pub id: Option<&'static str>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 64 << 20,
            max_document_bytes: 1 << 30,
            columns: Columns::default(),
        }
    }
}

/// A PostgreSQL database named as an input (`postgres:`, `postgres://…`).
pub fn is_postgres(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.starts_with("postgres:") || s.starts_with("postgresql:")
}

/// What a path that is neither a regular file nor a directory is (a FIFO,
/// a socket, a device), or `None` for a regular file or a directory. Such
/// a path is refused before it is opened: opening a FIFO waits for a
/// writer, and a device such as `/dev/zero` never ends.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() || t.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a named pipe");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("a special file")
}

/// True for file names the directory walk picks up: a compressed Codex
/// rollout (`rollout-….jsonl.zst`) among them.
pub fn is_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.ends_with(".jsonl.zst") {
        return true;
    }
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "json" | "db" | "sqlite" | "sqlite3" | "vscdb" | "traj")
    ) || path.file_name().and_then(|n| n.to_str()) == Some(".aider.chat.history.md")
}

/// A directory that holds a `CURRENT` pointer beside its `generations/`.
pub fn is_generation_store(dir: &Path) -> bool {
    dir.join("CURRENT").is_file() && dir.join("generations").is_dir()
}

/// Expand the paths named on the command line: files as they are,
/// directories recursively (sorted, `.git` skipped) to their candidate files.
/// Returns (path, named explicitly).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut out = Vec::new();
    for p in paths {
        if is_postgres(p) {
            out.push((p.clone(), true));
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, &e))?;
        if !meta.is_dir() {
            out.push((p.clone(), true));
            continue;
        }
        let before = out.len();
        let mut walker = walkdir::WalkDir::new(p)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git");
        while let Some(entry) = walker.next() {
            let entry = entry.map_err(|e| {
                let at = e.path().unwrap_or(p).to_path_buf();
                match e.io_error() {
                    Some(io) => Error::io(&at, io),
                    None => Error::input(&at, "cannot walk directory"),
                }
            })?;
            // A store published as generations behind a `CURRENT`
            // pointer (Mistral Vibe's session directory) is read through
            // the pointer: its chunks, documents and journal are no
            // histories of their own.
            if entry.file_type().is_dir() && is_generation_store(entry.path()) {
                out.push((entry.path().join("CURRENT"), false));
                walker.skip_current_dir();
                continue;
            }
            if entry.file_type().is_file() && is_candidate(entry.path()) {
                out.push((entry.into_path(), false));
            }
        }
        if out.len() == before {
            return Err(Error::input(
                p,
                "directory holds no histories (no *.jsonl, *.jsonl.zst or *.json files)",
            ));
        }
    }
    Ok(out)
}

/// `std::io::copy`, carried on when a signal interrupts it. Between two
/// files it has the kernel copy (`copy_file_range`), and that path returns
/// `EINTR` as an error instead of trying again (a fuzzer's timer signal
/// failed a repair so); each file's offset stands where the interrupted
/// call left it, so the next call goes on from there.
pub fn copy_all<R: std::io::Read + ?Sized, W: std::io::Write + ?Sized>(
    from: &mut R,
    to: &mut W,
) -> std::io::Result<()> {
    loop {
        match std::io::copy(from, to) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
