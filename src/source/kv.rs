//! dispatch's SQLite key-value chunk store (seed 000).
//!
//! `kv(namespace, key, value)`, namespace `conversation-store`, one row per
//! chunk under `conv:<id>:chunk:<10-digit seq>` with value
//! `{"chunk": Chunk, "role": Role, "msgIdx": n, "chunkIdx": n}`, plus
//! per-conversation keys (`:seq`, `:cwd`, `:reasoning-effort`, `:metrics…`,
//! newer ones) that are preserved and never flagged.
//!
//! One ordered pass over the primary-key index. A reader thread steps
//! SQLite and hands each conversation's raw rows to a parser thread, which
//! builds the conversation; the caller runs the rules. Memory holds a few
//! conversations at a time, never the database.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Source;
use super::sqlite::{self, Snapshot};
use crate::error::{Error, Result};
use crate::escape::preview;
use crate::model::{
    ArgEncoding, Arguments, Chunk, ChunkLog, Conversation, Loc, Message, PartKind, Role, SourceInfo,
};

pub const NAMESPACE: &str = "conversation-store";
pub const TABLE: &str = "kv";

/// Characters of chunk content kept for evidence tables.
const PREVIEW: usize = 60;

/// Whether the database holds dispatch's conversation store.
pub fn detect(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
    let tables = sqlite::tables(conn)?;
    if !tables.iter().any(|t| t == TABLE) {
        return Ok(false);
    }
    let cols = sqlite::columns(conn, TABLE)?;
    if !["namespace", "key", "value"]
        .iter()
        .all(|c| cols.iter().any(|x| x == c))
    {
        return Ok(false);
    }
    conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM kv WHERE namespace = ?1 AND key >= 'conv:' AND key < 'conv;' AND key GLOB 'conv:*:chunk:*')",
        [NAMESPACE],
        |r| r.get::<_, bool>(0),
    )
}

/// What a key of the conversation store names.
#[derive(Debug, PartialEq, Eq)]
pub enum Key<'a> {
    Chunk { conv: &'a str, seq: u64 },
    Seq { conv: &'a str },
    Other { conv: &'a str },
}

pub fn parse_key(key: &str) -> Option<Key<'_>> {
    let rest = key.strip_prefix("conv:")?;
    if let Some(i) = rest.rfind(":chunk:") {
        let digits = &rest[i + ":chunk:".len()..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Some(Key::Chunk {
                conv: &rest[..i],
                seq: digits.parse().ok()?,
            });
        }
    }
    if let Some(i) = rest.rfind(":metrics:") {
        return Some(Key::Other { conv: &rest[..i] });
    }
    let i = rest.rfind(':')?;
    let (conv, suffix) = (&rest[..i], &rest[i + 1..]);
    Some(if suffix == "seq" {
        Key::Seq { conv }
    } else {
        Key::Other { conv }
    })
}

/// A row as read, before parsing.
struct RawRow {
    rowid: i64,
    key: String,
    value: Vec<u8>,
}

struct RawConv {
    id: String,
    rows: Vec<RawRow>,
}

type Parsed = Result<Conversation>;

pub struct KvSource {
    info: Arc<SourceInfo>,
    rx: Receiver<Parsed>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<KvSource> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: "sqlite-kv",
        dialect: "dispatch",
    });
    let (raw_tx, raw_rx) = sync_channel::<Result<RawConv>>(4);
    let (tx, rx) = sync_channel::<Parsed>(4);
    let p = path.to_path_buf();
    thread::Builder::new()
        .name("chatfsck-kv-read".into())
        .spawn(move || read_rows(&p, snap, raw_tx))
        .map_err(|e| Error::input(path, format!("cannot start reader: {e}")))?;
    let info2 = info.clone();
    thread::Builder::new()
        .name("chatfsck-kv-parse".into())
        .spawn(move || {
            for raw in raw_rx {
                let parsed = raw.map(|r| build(r, &info2));
                if tx.send(parsed).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| Error::input(path, format!("cannot start parser: {e}")))?;
    Ok(KvSource { info, rx })
}

fn read_rows(path: &PathBuf, snap: Snapshot, tx: SyncSender<Result<RawConv>>) {
    let fail = |e: rusqlite::Error| Err(Error::input(path, sqlite::cause(&e)));
    let mut st = match snap.conn.prepare(
        "SELECT rowid, key, value FROM kv WHERE namespace = ?1 AND key >= 'conv:' AND key < 'conv;' ORDER BY namespace, key",
    ) {
        Ok(st) => st,
        Err(e) => {
            let _ = tx.send(fail(e));
            return;
        }
    };
    let mut rows = match st.query([NAMESPACE]) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(fail(e));
            return;
        }
    };
    let mut current: Option<RawConv> = None;
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(fail(e));
                return;
            }
        };
        let read = (|| -> rusqlite::Result<RawRow> {
            let key = match row.get_ref(1)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    String::from_utf8_lossy(t).into_owned()
                }
                other => format!("{other:?}"),
            };
            let value = match row.get_ref(2)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    t.to_vec()
                }
                _ => Vec::new(),
            };
            Ok(RawRow {
                rowid: row.get(0)?,
                key,
                value,
            })
        })();
        let raw = match read {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(fail(e));
                return;
            }
        };
        let conv_id = match parse_key(&raw.key) {
            Some(Key::Chunk { conv, .. } | Key::Seq { conv } | Key::Other { conv }) => {
                conv.to_string()
            }
            None => continue,
        };
        if current.as_ref().is_some_and(|c| c.id != conv_id)
            && let Some(done) = current.take()
            && tx.send(Ok(done)).is_err()
        {
            return;
        }
        current
            .get_or_insert_with(|| RawConv {
                id: conv_id,
                rows: Vec::new(),
            })
            .rows
            .push(raw);
    }
    if let Some(done) = current {
        let _ = tx.send(Ok(done));
    }
}

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    chunk: WireChunk<'a>,
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(rename = "msgIdx")]
    msg_idx: i64,
    #[serde(rename = "chunkIdx")]
    chunk_idx: i64,
}

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default)]
    text: Option<String>,
    #[serde(rename = "toolCallId", default)]
    tool_call_id: Option<String>,
    #[serde(rename = "toolName", default)]
    tool_name: Option<String>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(default)]
    message: Option<String>,
}

fn build(raw: RawConv, info: &Arc<SourceInfo>) -> Conversation {
    let table: Arc<str> = Arc::from(TABLE);
    let mut conv = Conversation::new(raw.id.clone(), info.clone());
    let mut log = ChunkLog::default();
    let mut chunk_rows: Vec<(u64, RawRow)> = Vec::new();
    for row in raw.rows {
        match parse_key(&row.key) {
            Some(Key::Chunk { seq, .. }) => chunk_rows.push((seq, row)),
            Some(Key::Seq { .. }) => {
                let loc = Loc::Row {
                    table: table.clone(),
                    key: Arc::from(row.key.as_str()),
                    rowid: Some(row.rowid),
                };
                log.seq_counter =
                    Some((loc, String::from_utf8_lossy(&row.value).trim().to_string()));
                conv.meta_records += 1;
            }
            _ => conv.meta_records += 1,
        }
    }
    // Keys sort by their text; seq order is numeric (and survives keys
    // that lost their zero padding).
    chunk_rows.sort_by_key(|(seq, r)| (*seq, r.key.clone()));
    let mut last_seq = None;
    for (seq, row) in chunk_rows {
        let loc = Loc::Row {
            table: table.clone(),
            key: Arc::from(row.key.as_str()),
            rowid: Some(row.rowid),
        };
        if last_seq == Some(seq) {
            log.repeated.push((seq, loc.clone()));
        }
        last_seq = Some(seq);
        let entry: Entry<'_> = match serde_json::from_slice(&row.value) {
            Ok(e) => e,
            Err(e) => {
                let cut = row.value.len().min(240);
                conv.corrupt.push(crate::model::CorruptRecord {
                    loc,
                    reason: format!("is not a chunk entry ({})", super::chat::json_error(&e)),
                    excerpt: String::from_utf8_lossy(&row.value[..cut]).into_owned(),
                    torn_tail: false,
                });
                continue;
            }
        };
        let role = Role::parse(&entry.role);
        let Some(role) = role else {
            let cut = row.value.len().min(240);
            conv.corrupt.push(crate::model::CorruptRecord {
                loc,
                reason: format!("has unknown role `{}`", entry.role),
                excerpt: String::from_utf8_lossy(&row.value[..cut]).into_owned(),
                torn_tail: false,
            });
            continue;
        };
        let (kind, text_preview) = part_of(&entry.chunk);
        // A true message starts where chunkIdx restarts at 0 or the role changes.
        let starts = match conv.messages.last() {
            None => true,
            Some(m) => entry.chunk_idx == 0 || m.role != role,
        };
        if starts {
            let mut m = Message::new(role, loc.clone());
            m.stored_index = Some(entry.msg_idx);
            conv.messages.push(m);
        }
        let message = conv.messages.len() - 1;
        log.chunks.push(Chunk {
            seq,
            loc: loc.clone(),
            role: entry.role.to_string(),
            msg_idx: entry.msg_idx,
            chunk_idx: entry.chunk_idx,
            kind: entry.chunk.ty.to_string(),
            preview: text_preview,
            message,
        });
        conv.messages[message].push(kind, loc);
    }
    conv.chunks = Some(log);
    conv
}

fn part_of(c: &WireChunk<'_>) -> (PartKind, String) {
    let content_text = |raw: &RawValue| {
        serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_string())
    };
    match c.ty.as_ref() {
        "text" | "system" => {
            let text = c.text.clone().unwrap_or_default();
            let p = preview(&text, PREVIEW);
            (PartKind::Text { text }, format!("\"{p}\""))
        }
        "thinking" => {
            let text = c.text.clone().unwrap_or_default();
            let p = preview(&text, PREVIEW);
            (PartKind::Thinking { text }, format!("\"{p}\""))
        }
        "tool-call" => {
            let raw = c.input.map(|r| r.get().to_string()).unwrap_or_default();
            let name = c.tool_name.clone().unwrap_or_default();
            let p = format!("{} {}", preview(&name, 30), preview(&raw, PREVIEW - 20));
            (
                PartKind::ToolCall {
                    id: c.tool_call_id.clone().unwrap_or_default(),
                    name,
                    arguments: Arguments {
                        raw,
                        encoding: ArgEncoding::JsonValue,
                    },
                },
                p,
            )
        }
        "tool-result" => {
            let content = c.content.map(content_text).unwrap_or_default();
            let name = c.tool_name.clone().unwrap_or_default();
            let err = if c.is_error == Some(true) {
                " (error)"
            } else {
                ""
            };
            let p = format!(
                "{}{err} {}",
                preview(&name, 30),
                preview(&content, PREVIEW - 20)
            );
            (
                PartKind::ToolResult {
                    call_id: c.tool_call_id.clone().unwrap_or_default(),
                    content,
                    is_error: c.is_error,
                },
                p,
            )
        }
        other => {
            let p = c
                .message
                .as_deref()
                .map(|m| preview(m, PREVIEW))
                .unwrap_or_default();
            (
                PartKind::Other {
                    kind: other.to_string(),
                },
                p,
            )
        }
    }
}

impl Source for KvSource {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        self.rx.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(
            parse_key("conv:1a99:chunk:0000000014"),
            Some(Key::Chunk {
                conv: "1a99",
                seq: 14
            })
        );
        assert_eq!(parse_key("conv:1a99:seq"), Some(Key::Seq { conv: "1a99" }));
        assert_eq!(
            parse_key("conv:1a99:metrics:0000000002"),
            Some(Key::Other { conv: "1a99" })
        );
        assert_eq!(
            parse_key("conv:1a99:reasoning-effort"),
            Some(Key::Other { conv: "1a99" })
        );
        assert_eq!(
            parse_key("conv:a:b:chunk:0000000001"),
            Some(Key::Chunk {
                conv: "a:b",
                seq: 1
            })
        );
        assert_eq!(parse_key("settings:x"), None);
    }
}
