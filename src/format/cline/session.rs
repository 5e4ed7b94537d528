//! Cline 4's session store (the `@cline/core` SDK, Cline ≥ 4.0.0, CLI and
//! VS Code alike): `~/.cline/data/sessions/<sessionId>/` (the root moved
//! by `CLINE_SESSION_DATA_DIR`, else `CLINE_DATA_DIR/sessions`, else
//! `CLINE_DIR/data/sessions`), holding
//!
//! - `<sessionId>.messages.json`, the model history: `{"version": 1,
//!   "updated_at", "agent": "lead"|"subagent"|"teammate", "sessionId",
//!   "taskType"?, "origin"?, "messages": [...], "system_prompt"?}`
//!   (`buildMessagesFilePayload`, `docs/messages-contract-v1.md`),
//!   rewritten whole on every save (`JSON.stringify(…, null, 2)`, through
//!   a temporary file and a rename). Messages are Anthropic-shaped (`text`,
//!   `thinking`, `tool_use`, `tool_result` blocks; also `file` and `image`
//!   blocks, sent as text and images), with Cline's `id`, `ts`,
//!   `modelInfo`, `metrics` and `metadata` keys. A sub-agent's or team
//!   member's history is a file of the same shape in its root session's
//!   folder (`<agentId>.messages.json`, `"agent": "subagent"`): read as a
//!   history of its own.
//! - `<sessionId>.compaction.json`, the compacted prefix
//!   (`SessionCompactionState`: `version`, `source_message_count`,
//!   `messages`): a history of the same message shape, read as one.
//! - `<sessionId>.json` (the manifest), and beside the folders
//!   `sessions.index.json` or `sessions.db` (the session index): not
//!   histories; a directory walk lists them as read through the messages
//!   files.
//!
//! What the client does with what it reads (cline/cline@21cb8d25,
//! `runtime-host-support.ts` `readPersistedMessagesFile`,
//! `message-builder.ts`):
//! - a messages file that is empty, not JSON (torn), or holds no
//!   `messages` array is read as **no messages**: the session resumes
//!   empty, and the next save overwrites the file, so every message in it
//!   is lost. Such a file is a corrupt record that says so; a torn one is
//!   read here for the messages it still holds whole (`salvaged`), its
//!   torn tail the corrupt record, which the repair drops: the copy ends
//!   the document after the last whole message, and the client resumes
//!   with those.
//! - a call with no result anywhere in the history is answered on every
//!   request, in memory (`MessageBuilder`: an `is_error` result "Tool
//!   execution was interrupted before a result was produced. Tool: <name>.")
//!   (its client profile, `profile::CLINE_4`, says so in the finding);
//! - a result whose call is not there is sent as it is.
//! - `version` other than 1 is a format this reader does not know: refused
//!   with the version named, never read as clean.

use std::path::Path;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::super::records::record::{Builder, Handlers};
use super::super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, CorruptRecord, Dialect, Format, Loc, SourceInfo};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "Cline 4 session (`<id>.messages.json`)",
    formats: &[Format::Json],
    dialects: &[Dialect::Cline4],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: super::super::records::writer::new,
    },
    hooks: Hooks::NONE,
};

/// What a file of a session folder is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Messages,
    Compaction,
    /// The manifest, `sessions.index.json`: read through the messages.
    Companion(&'static str),
}

fn kind(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".messages.json") {
        Some(Kind::Messages)
    } else if name.ends_with(".compaction.json") {
        Some(Kind::Compaction)
    } else if name == "sessions.index.json" {
        Some(Kind::Companion("Cline 4's session index"))
    } else if name.ends_with(".json") {
        Some(Kind::Companion("Cline 4's session manifest"))
    } else {
        None
    }
}

/// The keys at the top of a document, with the spacing taken out.
fn squeezed(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .take(4096)
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

/// A session folder's file: a messages or compaction file (by its name,
/// whatever it holds, torn or empty included: the client reads it so),
/// or a manifest or index that names itself (`"version":1` with
/// `"session_id"` and `"messages_path"`, or `"sessions":{`).
fn detect(head: &Head<'_>) -> Result<bool> {
    let Some(k) = kind(head.path) else {
        return Ok(false);
    };
    let s = squeezed(head.bytes);
    let has = |needle: &str| memchr::memmem::find(&s, needle.as_bytes()).is_some();
    Ok(match k {
        Kind::Messages => {
            s.is_empty()
                || (s.starts_with(b"{") && (has("\"messages\":") || has("\"version\":")))
                || s.starts_with(b"[")
                    && (s == b"[]" || s.starts_with(b"[{\"id\":") || has("\"modelInfo\":"))
                || !s.starts_with(b"{") && !s.starts_with(b"[")
        }
        Kind::Compaction => {
            !s.starts_with(b"{")
                || has("\"source_message_count\":")
                || (has("\"version\":") && has("\"messages\":"))
        }
        Kind::Companion(_) => {
            s.starts_with(b"{\"version\":1,")
                && ((has("\"session_id\":") && has("\"messages_path\":")) || has("\"sessions\":{"))
        }
    })
}

/// The messages are an array in one pretty-printed document, edited as a
/// task's array is (`records::writer::write_document`: each element kept
/// as its text or replaced, the envelope and the array's layout kept):
/// every edit of messages and blocks, none of the edits that belong to
/// another client's records. An unanswered call is not answered in the
/// file: the client answers it itself on every request (`MessageBuilder`),
/// and a message it did not write (no `id`, `ts`) is not put in its file.
fn supports(d: Dialect, a: &Action) -> bool {
    !matches!(a, Action::AnswerCall { .. }) && super::supports(d, a)
}

static READ: Handlers = Handlers {
    chat: Some(super::super::chat::record),
    claude_code: None,
    codex: None,
};

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let k = kind(path).unwrap_or(Kind::Messages);
    if let Kind::Companion(what) = k {
        return Err(Error::PartOf {
            path: path.to_path_buf(),
            cause: format!(
                "is {what}, not a history; the session's messages are in `<sessionId>/<sessionId>.messages.json`"
            ),
        });
    }
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Json,
        Dialect::Cline4,
        read,
    )?)))
}

/// The members of the file this reader reads.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(rename = "sessionId", default)]
    session_id: Option<String>,
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

fn lost(name: &str, why: &str) -> String {
    if name.ends_with(".compaction.json") {
        return format!("`{name}` {why}: the compacted history it holds cannot be read");
    }
    format!(
        "`{name}` {why}: Cline 4 reads it as a session with no message, resumes it empty and overwrites the file on its next save, so all of this session's history is lost"
    )
}

fn read(path: &Path, limits: Limits, info: Arc<SourceInfo>) -> Result<Conversation> {
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, &e))?
        .len();
    if len > limits.max_document_bytes {
        return Err(Error::input(
            path,
            format!(
                "JSON document is larger than {} MiB",
                limits.max_document_bytes >> 20
            ),
        ));
    }
    let data = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".messages.json")
        .or_else(|| name.strip_suffix(".compaction.json"))
        .unwrap_or(&name)
        .to_string();
    let whole = |why: &str| {
        let mut c = Conversation::new(stem.clone(), info.clone());
        c.corrupt.push(CorruptRecord::new(
            Loc::Line {
                line: 1,
                start: 0,
                end: data.len() as u64,
            },
            lost(&name, why),
            &data,
            false,
        ));
        c
    };
    // `readFile(path, "utf8")`: bytes that are not UTF-8 become U+FFFD,
    // and a document with them parses (or not) as it would here. A write
    // torn inside a character leaves one at the very end: the text before
    // it is read for what it holds whole.
    let text = match std::str::from_utf8(&data) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            let text = std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default();
            return Ok(
                salvaged(text, &data, &name, &stem, &info).unwrap_or_else(|| {
                    whole("is cut off inside a character (not valid UTF-8 at its end)")
                }),
            );
        }
        Err(e) => {
            let line = 1 + memchr::memchr_iter(b'\n', &data[..e.valid_up_to()]).count();
            return Ok(whole(&format!("is not valid UTF-8 (line {line})")));
        }
    };
    let trimmed = text.trim_start_matches('\u{feff}');
    if trimmed.trim().is_empty() {
        return Ok(whole("is empty"));
    }
    let not_json = |e: serde_json::Error| {
        salvaged(text, &data, &name, &stem, &info)
            .unwrap_or_else(|| whole(&format!("is not valid JSON ({e})")))
    };
    // The client accepts the envelope, or a bare array of messages.
    let (id, messages): (String, &RawValue) = if trimmed.trim_start().starts_with('[') {
        match serde_json::from_str::<&RawValue>(trimmed) {
            Ok(v) => (stem.clone(), v),
            Err(e) => return Ok(not_json(e)),
        }
    } else {
        let env: Envelope<'_> = match serde_json::from_str(trimmed) {
            Ok(env) => env,
            Err(e) => return Ok(not_json(e)),
        };
        if let Some(v) = env.version
            && v.get() != "1"
        {
            return Err(Error::input(
                path,
                format!(
                    "is a Cline 4 messages file of version {}, which chatfsck does not know (it reads version 1); nothing of it was read",
                    crate::escape::escape(v.get())
                ),
            ));
        }
        match env.messages {
            Some(m) if m.get().starts_with('[') => (env.session_id.unwrap_or(stem.clone()), m),
            _ => return Ok(whole("holds no `messages` array")),
        }
    };
    let elements: Vec<&RawValue> = serde_json::from_str(messages.get())
        .map_err(|e| Error::input(path, format!("`messages` is not an array ({e})")))?;
    let mut b = Builder::new(Conversation::new(id, info), &READ);
    // The envelope (version, session, system prompt): not a message.
    b.conv.meta_records += 1;
    for (el, loc) in super::super::records::element_locs(text, 0, elements) {
        b.feed(el.get(), loc, false);
    }
    Ok(b.conv)
}

/// A messages file cut off by a write that did not finish, read for the
/// messages it still holds whole (`records::torn`): the conversation of
/// those, and the torn tail as a corrupt record whose repair ends the
/// document after the last whole message. The client reads the whole file
/// as no message (`JSON.parse` fails) and overwrites it on its next save;
/// the copy resumes with every message that was whole. `None` when no
/// message is whole (a file torn before its first message is lost as a
/// whole). `text` is the file's text (or, for a file cut inside a
/// character, the text before that character), `data` its bytes.
fn salvaged(
    text: &str,
    data: &[u8],
    name: &str,
    stem: &str,
    info: &Arc<SourceInfo>,
) -> Option<Conversation> {
    let body = text.trim_start_matches('\u{feff}');
    let bom = text.len() - body.len();
    let t = super::super::records::torn::torn(body)?;
    if t.elements.is_empty() {
        return None;
    }
    let whole = t.elements.len();
    let id = t.session_id.clone().unwrap_or_else(|| stem.to_string());
    let mut b = Builder::new(Conversation::new(id, info.clone()), &READ);
    // The envelope (version, session, system prompt): not a message.
    b.conv.meta_records += 1;
    for (el, loc) in super::super::records::element_locs(text, 0, t.elements) {
        b.feed(el.get(), loc, false);
    }
    let tail = bom + t.tail;
    let line = 1 + memchr::memchr_iter(b'\n', &data[..tail]).count() as u64;
    let s = if whole == 1 { "" } else { "s" };
    let client = if name.ends_with(".compaction.json") {
        "Cline 4 cannot parse the file, so the compacted history it holds cannot be read"
            .to_string()
    } else {
        let lost = if whole == 1 {
            "it is lost".to_string()
        } else {
            format!("all {whole} are lost")
        };
        format!(
            "Cline 4 cannot parse the file, reads it as a session with no message, resumes it empty and overwrites the file on its next save, so {lost}"
        )
    };
    b.conv.corrupt.push(CorruptRecord::new(
        Loc::Line {
            line,
            start: tail as u64,
            end: data.len() as u64,
        },
        format!(
            "`{name}` ends here, after {whole} whole message{s}: {client}; a repaired copy ends the document after the last whole message"
        ),
        &data[tail..],
        true,
    ));
    Some(b.conv)
}

/// Cline 4's SQLite session index (`sessions.db`, table `sessions` with
/// `messages_path`): not a history; a directory walk lists it as read
/// through the messages files it names.
pub static INDEX: Store = Store {
    name: "Cline 4 session index (`sessions.db`)",
    formats: &[],
    dialects: &[],
    probe: Probe::Sqlite {
        detect: |conn, tables| {
            detect_index(conn, tables).map_err(|e| crate::source::sqlite::cause(&e))
        },
        open: |path, _| {
            Err(Error::PartOf {
                path: path.to_path_buf(),
                cause: "is Cline 4's session index (`sessions.db`), not a history; each session's messages are in `<sessionId>/<sessionId>.messages.json`".to_string(),
            })
        },
    },
    writing: Writing::Never("Cline 4's session index holds no messages"),
    hooks: Hooks {
        own_database: Some(own_database),
        ..Hooks::NONE
    },
};

/// Whether the database at `path` is one of the Cline CLI's own beside
/// `sessions.db` (in the data folder's `db/`: `cron.db`,
/// `session-search.db`, `tasks.db`, `teams.db`, `connectors.db`, the
/// hub's event and run logs, as `cline` 3.0.65 writes them; more come with
/// new features): not a history, so a directory walk of `~/.cline/data`
/// lists it as skipped, as it lists `sessions.db`, instead of failing on
/// it. Told by where it is, beside the data folder's `sessions/` and
/// `settings/`, not by its tables, which change with each release.
pub fn own_database(path: &std::path::Path) -> Option<String> {
    let dir = path.parent()?;
    let data = dir.parent()?;
    (dir.file_name()? == "db" && data.join("sessions").is_dir() && data.join("settings").is_dir())
        .then(|| {
            "is one of the Cline CLI's own databases (in its data folder's `db/`), not a history; each session's messages are in `sessions/<sessionId>/<sessionId>.messages.json`".to_string()
        })
}

fn detect_index(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    if !tables.iter().any(|t| t == "sessions") {
        return Ok(false);
    }
    let cols = crate::source::sqlite::columns(conn, "sessions")?;
    Ok(["session_id", "messages_path", "hook_path", "enable_spawn"]
        .iter()
        .all(|c| cols.iter().any(|x| x == c)))
}
