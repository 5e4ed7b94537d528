//! Storage formats: one home per format.
//!
//! Each folder here is one store chatfsck reads: its reader (a
//! [`Source`]), and its writer (a [`Writer`]) where a repaired copy can be
//! written in the same format. The shapes rules read beside the messages
//! (a chunk store's chunk log, a message table's rows, a trace's step) are
//! in `model`, since rules import the model only.
//!
//! | folder | store | format (dialect) |
//! | --- | --- | --- |
//! | `chat/` | provider-shaped message logs: OpenAI Chat Completions, kimi-cli `context.jsonl`, Anthropic Messages | `jsonl`, `json` (`openai`, `kimi`, `anthropic`) |
//! | `claude_code/` | Claude Code session files | `jsonl` (`claude-code`) |
//! | `cline/` | Cline and Roo Code tasks (`api_conversation_history.json`), and Cline 4's sessions (`<id>.messages.json`, `session`) | `json` (`cline`, `roo-code`, `cline-4`) |
//! | `codex/` | Codex rollouts | `jsonl` (`codex`) |
//! | `copilot_cli/` | GitHub Copilot CLI `events.jsonl` | `jsonl` (`copilot-cli`) |
//! | `dataset/` | conversation datasets, one conversation a row: JSON Lines with `messages` (OpenAI fine-tuning, TRL, axolotl) or ShareGPT `conversations`, Parquet and Arrow IPC with a `messages` column (JSON text or nested) | `dataset-jsonl`, `parquet`, `arrow-ipc` (`openai`, `sharegpt`) |
//! | `cursor/` | Cursor's `state.vscdb`: the global one (composers and their bubbles), a workspace's (its chat tabs, its composer list) | `sqlite-kv` (`cursor`) |
//! | `gemini_cli/` | Gemini CLI chat recordings | `jsonl`, `json` (`gemini-cli`) |
//! | `dispatch/` | dispatch's SQLite chunk store (seed 000) | `sqlite-kv` (`dispatch`) |
//! | `pi/` | pi's session files (a tree of entries walked from the last one) | `jsonl` (`pi`) |
//! | `qwen_code/` | Qwen Code's session files (a tree of records walked from the last one) | `jsonl` (`qwen-code`) |
//! | `kimi_code/` | Kimi Code's agent journals (`wire.jsonl`, protocol 1.5), folded as its resume folds them | `jsonl` (`kimi-code`) |
//! | `mistral_vibe/` | Mistral Vibe's unified session store (`unified/<id>/CURRENT`, its generation, chunks and hash-linked journal; report only) | `json` (`mistral-vibe`) |
//! | `opencode/` | opencode's `opencode.db`, and its legacy `storage/` tree (≤ 1.1, read through the session files) | `sqlite-table`, `json` (`opencode`) |
//! | `open_webui/` | Open WebUI's `webui.db` and its PostgreSQL database: the `chat` table's message trees, walked from `currentId` (repaired by re-linking) | `sqlite-table`, `postgres-table` (`open-webui`) |
//! | `crush/` | Crush's `crush.db` (one per project data directory), read as Crush loads a session to send it | `sqlite-table` (`crush`) |
//! | `goose/` | goose's `sessions.db` (`db`), and its legacy `sessions/*.jsonl` (`legacy`) | `sqlite-table`, `jsonl` (`goose`) |
//! | `langgraph/` | LangGraph checkpointers: `langgraph-checkpoint-sqlite`'s database and `langgraph-checkpoint-postgres`'s tables (the latest checkpoint of each thread, its blobs, its pending writes) | `sqlite-table`, `postgres-table` (`langgraph`) |
//! | `llm/` | `llm`'s `logs.db` up to llm 0.31: each conversation's responses, tool calls and results as `llm -c` replays them (llm 0.32's message store is refused) | `sqlite-table` (`llm`) |
//! | `message_table/` | gbrain's message tables (seed 003) and tables named with the mapping flags, in SQLite or PostgreSQL | `sqlite-table`, `postgres-table` (`gbrain`, `table`) |
//! | `trace/` | traces: dispatch's `traces.db`, Arize Phoenix, OTLP JSON | `sqlite-trace` (`dispatch`, `phoenix`), `otlp-jsonl`, `otlp-json` (`gen-ai`, `openinference`) |
//! | `unsupported/` | recognised, refused with one line: Aider, OpenHands, SWE-agent, Kimi Code journals of a protocol version not read | — |
//!
//! **The detector** is [`open_any_with`]: an input is tried against
//! [`STORES`] in that order, and the first store that recognises it reads
//! it. A file no store recognises is refused with the list of stores
//! tried. Adding a store: a folder with its reader (and writer), and one
//! line in [`STORES`] (CONTRIBUTING.md, "Add a storage format").
//!
//! **Discovery** is [`APPS`]: where each app keeps its histories on this
//! machine (its `discover.rs`, honouring the app's own environment
//! overrides), for a run without a path and for naming a session by the
//! id its client shows.

use std::path::Path;

use crate::error::{Error, Result};
use crate::finding::profile::Profile;
pub use crate::model::{Dialect, Format, SourceInfo};
use crate::source::sqlite;
use crate::source::{Limits, Source};

pub mod discovery;
pub mod store;

pub use discovery::App;
pub use store::{AfterReplace, Head, Hooks, Opened, Probe, Store, Writing};

pub mod chat;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod copilot_cli;
pub mod crush;
pub mod cursor;
pub mod dataset;
pub mod dispatch;
pub mod gemini_cli;
pub mod goose;
pub mod kimi_code;
pub mod langgraph;
pub mod llm;
pub mod message_table;
pub mod mistral_vibe;
pub mod open_webui;
pub mod opencode;
pub mod pi;
pub mod qwen_code;
pub mod records;
pub mod trace;
pub mod unsupported;

pub use crate::write::Writer;
pub use message_table::Mapping;

/// Every store, in detection order: the first that recognises an input
/// reads it. SQLite stores are tried on databases (the order of the
/// schema checks), text stores on every other file: traces first (they
/// name themselves on their first line), then the agents' session
/// formats, then provider-shaped messages, which take any JSON.
pub static STORES: &[&Store] = &[
    &dispatch::STORE,
    &message_table::STORE,
    &trace::dispatch::STORE,
    &trace::phoenix::STORE,
    &trace::otlp::STORE,
    &opencode::STORE,
    &opencode::legacy::STORE,
    &goose::db::STORE,
    &crush::db::STORE,
    &llm::STORE,
    &cursor::STORE,
    &cline::session::INDEX,
    &langgraph::sqlite::STORE,
    &langgraph::postgres::STORE,
    &open_webui::STORE,
    &open_webui::postgres::STORE,
    &dataset::columnar::STORE,
    &kimi_code::STORE,
    &mistral_vibe::STORE,
    &unsupported::TEXT,
    &copilot_cli::STORE,
    &pi::STORE,
    &qwen_code::STORE,
    &goose::legacy::STORE,
    &cline::session::STORE,
    &cline::STORE,
    &gemini_cli::STORE,
    &gemini_cli::LEGACY,
    &claude_code::STORE,
    &codex::STORE,
    &dataset::STORE,
    &chat::STORE,
];

/// Every app whose histories a run without a path finds, in the order of
/// the report: one line per app, whose folder knows where it keeps them
/// (its `discover.rs`).
pub static APPS: &[&App] = &[
    &claude_code::discover::APP,
    &codex::discover::APP,
    &gemini_cli::discover::APP,
    &opencode::discover::APP,
    &cline::discover::CLINE,
    &cline::discover::ROO,
    &goose::discover::APP,
    &cursor::discover::APP,
    &copilot_cli::discover::APP,
    &pi::discover::APP,
    &qwen_code::discover::APP,
    &kimi_code::discover::APP,
    &mistral_vibe::discover::APP,
    &llm::discover::APP,
    &open_webui::discover::APP,
    &crush::discover::APP,
];

/// Every client profile: what each app's client does, on resume, with
/// the patterns the rules detect (each declared in its store's folder).
/// An input no profile covers is held to no client's behaviour: every
/// pattern is the provider's.
pub static PROFILES: &[&Profile] = &[
    &claude_code::profile::PROFILE,
    &codex::profile::PROFILE,
    &gemini_cli::profile::PROFILE,
    &opencode::profile::PROFILE,
    &opencode::profile::LEGACY_PROFILE,
    &goose::profile::PROFILE,
    &goose::profile::LEGACY_PROFILE,
    &cursor::profile::PROFILE,
    &copilot_cli::profile::PROFILE,
    &pi::profile::PROFILE,
    &qwen_code::profile::PROFILE,
    &kimi_code::profile::PROFILE,
    &mistral_vibe::profile::PROFILE,
    &langgraph::profile::PROFILE,
    &open_webui::profile::PROFILE,
    &llm::profile::PROFILE,
    &crush::profile::PROFILE,
    &cline::profile::CLINE,
    &cline::profile::CLINE_4,
    &cline::profile::ROO_CODE,
    &dispatch::profile::PROFILE,
    &message_table::profile::GBRAIN,
    &trace::profile::PHOENIX,
    &trace::profile::OPENINFERENCE,
    &trace::profile::GENAI,
    &dataset::profile::MESSAGES,
    &dataset::profile::SHAREGPT,
    &chat::profile::OPENAI,
    &chat::profile::KIMI,
    &chat::profile::ANTHROPIC,
];

/// The profile of the client that reads `info`'s input back.
pub fn profile_of(info: &SourceInfo) -> &'static Profile {
    PROFILES
        .iter()
        .copied()
        .find(|p| p.covers(info.dialect, info.format))
        .unwrap_or(&Profile::UNKNOWN)
}

/// The store that read `info`'s input: the first of [`STORES`] that
/// reports its format and dialect.
pub fn store_of(info: &SourceInfo) -> Option<&'static Store> {
    store_for(info.format, info.dialect)
}

/// The store that reads histories of this format and dialect (see
/// [`store_of`]).
pub fn store_for(format: Format, dialect: Dialect) -> Option<&'static Store> {
    STORES
        .iter()
        .copied()
        .find(|s| s.formats.contains(&format) && s.dialects.contains(&dialect))
}

/// Whether `repair` can apply every action of `fix` to this input: the
/// writer of its store says so (lint marks findings fixable from this).
pub fn can_apply(info: &SourceInfo, fix: &crate::finding::Fix) -> bool {
    match store_of(info).map(|s| &s.writing) {
        Some(Writing::Copy { supports, .. }) => {
            fix.actions.iter().all(|a| supports(info.dialect, a))
        }
        Some(Writing::Never(_)) | None => false,
    }
}

/// Files of the apps' task folders that are known not to be histories:
/// a directory walk lists them as skipped, never as unread.
const COMPANIONS: &[&str] = &[
    // Cline and Roo Code: the UI log, metadata, the history index.
    "ui_messages.json",
    "task_metadata.json",
    "context_history.json",
    "history_item.json",
    "_index.json",
];

/// Whether a file a directory walk found, and no store could read, looks
/// like a history: then it is reported as not read (never as clean). Its
/// name says so (a JSON Lines log, a database, a trajectory) or its
/// content does (a JSON document with `role` or `messages` keys); a
/// `package.json` or an app's metadata file does not.
pub fn looks_like_history(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if COMPANIONS.contains(&name) {
        return false;
    }
    if name.ends_with(".jsonl.zst") {
        return true;
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl" | "db" | "sqlite" | "sqlite3" | "traj" | "md") => true,
        Some("json") => read_head(path).is_ok_and(|head| {
            let text = String::from_utf8_lossy(&head);
            ["\"role\"", "\"messages\""]
                .iter()
                .any(|k| text.contains(k))
        }),
        _ => false,
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

/// The detector. Open an input: a PostgreSQL database (`postgres:`,
/// `postgres://…`), a SQLite database (tried against the SQLite stores of
/// [`STORES`] in order) or a text file (tried against the text stores in
/// order). A mapping names the message table of a SQLite or PostgreSQL
/// database, and then no other store is tried.
pub fn open_any_with(path: &Path, limits: Limits, mapping: Option<&Mapping>) -> Result<Opened> {
    if crate::source::is_postgres(path) {
        if mapping.is_none() {
            let tables = message_table::postgres::tables(path)?;
            for store in STORES {
                if let Probe::Postgres { detect, open } = store.probe
                    && detect(&tables)
                {
                    return open(path);
                }
            }
        }
        return message_table::postgres::open(path, mapping).map(Opened::History);
    }
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, &e))?;
    if meta.is_dir() {
        return Err(Error::input(path, "is a directory"));
    }
    // Before anything opens it: a FIFO blocks an open (or a read) forever,
    // a device never ends.
    if let Some(what) = crate::source::not_regular(&meta) {
        return Err(Error::input(path, format!("not a regular file ({what})")));
    }
    // Read first: an unreadable file is "permission denied", whatever its
    // name says it is.
    let bytes = read_head(path)?;
    if bytes.starts_with(sqlite::HEADER) {
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
    let head = Head::new(
        path,
        bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes),
        limits,
    );
    match text_store_of(&head)?.map(|s| &s.probe) {
        Some(Probe::Text { open, .. }) => open(path, limits),
        _ => Err(Error::not_history(path, "no text store")),
    }
}

/// The text store whose detector recognises a file with this head: the
/// first of [`STORES`]. Provider-shaped messages take any file that is
/// left: their reader says why it is not a history when it is not.
fn text_store_of(head: &Head<'_>) -> Result<Option<&'static Store>> {
    let mut last = None;
    for store in STORES {
        if let Probe::Text { detect, .. } = store.probe {
            last = Some(*store);
            if detect(head)? {
                return Ok(last);
            }
        }
    }
    Ok(last)
}

/// The text store that reads the file at `path` (`None` for a SQLite
/// database, recognised by its schema whatever its name): detection reads
/// the content and, for some stores, the name (a Cline task's
/// `api_conversation_history.json`, a goose session's `.jsonl`), so a
/// copy of a file under another name can be read by another store.
pub fn text_store(path: &Path, limits: Limits) -> Result<Option<&'static Store>> {
    let bytes = read_head(path)?;
    if bytes.starts_with(sqlite::HEADER) {
        return Ok(None);
    }
    text_store_of(&Head::new(
        path,
        bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes),
        limits,
    ))
}

/// The first [`Head::LEN`] bytes of a file's text: of what a compressed
/// file holds, decompressed (a Codex `.jsonl.zst` rollout).
pub(crate) fn read_head(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let text = crate::source::compressed::Text::open(path)?;
    let mut buf = Vec::with_capacity(Head::LEN);
    text.take(Head::LEN as u64)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, &e))?;
    Ok(buf)
}

fn open_sqlite(path: &Path, mapping: Option<&Mapping>) -> Result<Opened> {
    let snap = sqlite::open(path)?;
    let check = snap.check();
    // Every source read from the snapshot ends with its check.
    let guarded = |opened: Result<Opened>| match opened.inspect(|_| check.start(&[])) {
        Ok(Opened::History(src)) => Ok(Opened::History(Box::new(sqlite::Guarded::new(
            src,
            check.clone(),
        )))),
        Ok(Opened::Trace(t)) => Ok(Opened::Trace(t.guarded(check.clone()))),
        Err(e) => Err(check.explain(e)),
    };
    if let Some(mapping) = mapping {
        return guarded(message_table::open_mapped(path, snap, mapping));
    }
    let tables = sqlite::tables(&snap.conn).map_err(sqlite::error_of(path))?;
    let mut tried = Vec::new();
    for store in STORES {
        if let Probe::Sqlite { detect, open } = store.probe {
            if detect(&snap.conn, &tables).map_err(|cause| Error::input(path, cause))? {
                return guarded(open(path, snap));
            }
            // Stores that only recognise (and refuse) are not readers tried.
            if !store.formats.is_empty() {
                tried.push(store.name);
            }
        }
    }
    // An app's own database that holds no history, known by where the
    // app keeps it (each store's `own_database` hook).
    if let Some(cause) = STORES
        .iter()
        .filter_map(|s| s.hooks.own_database)
        .find_map(|own| own(path))
    {
        return Err(Error::PartOf {
            path: path.to_path_buf(),
            cause,
        });
    }
    // Say why it is not a message table, the store most databases are
    // meant to be, and which stores were tried.
    Err(Error::not_history(
        path,
        message_table::why_not(&snap.conn, &tried),
    ))
}

/// Open a trace (dispatch `traces.db`, Phoenix `phoenix.db`, OTLP JSON
/// Lines); anything else is an error that says what the file is instead.
pub fn open_trace(path: &Path, limits: Limits) -> Result<trace::TraceSource> {
    match open_any(path, limits)? {
        Opened::Trace(t) => Ok(t),
        Opened::History(src) => {
            let info = src.info();
            let what = if info.format.is_json_file() {
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
