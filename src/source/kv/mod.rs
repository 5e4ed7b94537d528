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

use super::pipeline::Dealer;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Receiver;

mod entry;

use super::sqlite::{self, Snapshot};
use crate::error::{Error, Result};
use crate::model::{
    ArgEncoding, Arguments, Chunk, ChunkLog, Conversation, Loc, Message, PartKind, Role, SourceInfo,
};
use entry::WireChunk;

pub const NAMESPACE: &str = "conversation-store";
pub const TABLE: &str = "kv";

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
    // `…:chunk:<digits>`: split at the last ':' and look behind it.
    if let Some(i) = memchr::memrchr(b':', rest.as_bytes()) {
        let digits = &rest[i + 1..];
        if let Some(conv) = rest[..i].strip_suffix(":chunk")
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Some(Key::Chunk {
                conv,
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

/// A row as read, before parsing: what its key names, and ranges into its
/// conversation's buffers.
struct RawRow {
    rowid: i64,
    /// The chunk's seq; `None` for the conversation's other keys.
    seq: Option<u64>,
    /// The `:seq` counter.
    counter: bool,
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
}

/// One conversation's rows, with every key in one string and every value
/// in one buffer (two allocations per conversation, not two per row).
struct RawConv {
    id: String,
    rows: Vec<RawRow>,
    keys: String,
    values: Vec<u8>,
}

impl RawConv {
    fn key(&self, r: &RawRow) -> &str {
        &self.keys[r.key.clone()]
    }
    fn value(&self, r: &RawRow) -> &[u8] {
        &self.values[r.value.clone()]
    }
}

pub fn open(path: &Path, snap: Snapshot) -> Result<super::pipeline::Pipeline> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: "sqlite-kv",
        dialect: "dispatch",
    });
    let p = path.to_path_buf();
    let build_info = info.clone();
    // A built conversation's buffers go back to the reader, which fills
    // them again: a few buffers serve the whole store.
    let (spare_tx, spares) = std::sync::mpsc::channel::<RawConv>();
    super::pipeline::start(
        path,
        info,
        "kv",
        move |tx| read_rows(&p, snap, tx, spares),
        move |mut raw| {
            let conv = build(&raw, &build_info);
            if raw.values.capacity() <= MAX_SPARE {
                raw.rows.clear();
                raw.keys.clear();
                raw.values.clear();
                let _ = spare_tx.send(raw);
            }
            conv
        },
    )
}

/// The largest buffer kept for reuse; a rare huge conversation's is freed.
const MAX_SPARE: usize = 16 << 20;

fn read_rows(path: &PathBuf, snap: Snapshot, tx: Dealer<RawConv>, spares: Receiver<RawConv>) {
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
        let read = (|| -> rusqlite::Result<(i64, rusqlite::types::ValueRef<'_>, rusqlite::types::ValueRef<'_>)> {
            Ok((row.get(0)?, row.get_ref(1)?, row.get_ref(2)?))
        })();
        let (rowid, key, value) = match read {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(fail(e));
                return;
            }
        };
        let key: Cow<'_, str> = match key {
            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                match std::str::from_utf8(t) {
                    Ok(k) => Cow::Borrowed(k),
                    Err(_) => String::from_utf8_lossy(t),
                }
            }
            other => Cow::Owned(format!("{other:?}")),
        };
        let value: &[u8] = match value {
            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t,
            _ => &[],
        };
        let (conv_id, seq, counter) = match parse_key(&key) {
            Some(Key::Chunk { conv, seq }) => (conv, Some(seq), false),
            Some(Key::Seq { conv }) => (conv, None, true),
            Some(Key::Other { conv }) => (conv, None, false),
            None => continue,
        };
        if current.as_ref().is_some_and(|c| c.id != conv_id)
            && let Some(done) = current.take()
            && tx.send(Ok(done)).is_err()
        {
            return;
        }
        let cur = current.get_or_insert_with(|| match spares.try_recv() {
            Ok(mut spare) => {
                spare.id.clear();
                spare.id.push_str(conv_id);
                spare
            }
            Err(_) => RawConv {
                id: conv_id.to_string(),
                rows: Vec::new(),
                keys: String::with_capacity(16 * 1024),
                values: Vec::with_capacity(256 * 1024),
            },
        });
        let k0 = cur.keys.len();
        cur.keys.push_str(&key);
        let v0 = cur.values.len();
        cur.values.extend_from_slice(value);
        cur.rows.push(RawRow {
            rowid,
            seq,
            counter,
            key: k0..cur.keys.len(),
            value: v0..cur.values.len(),
        });
    }
    if let Some(done) = current {
        let _ = tx.send(Ok(done));
    }
}

fn build(raw: &RawConv, info: &Arc<SourceInfo>) -> Conversation {
    let table: Arc<str> = Arc::from(TABLE);
    let mut conv = Conversation::new(raw.id.clone(), info.clone());
    let mut log = ChunkLog::default();
    let mut chunk_rows: Vec<(u64, &RawRow)> = Vec::new();
    for row in &raw.rows {
        match (row.seq, row.counter) {
            (Some(seq), _) => chunk_rows.push((seq, row)),
            (None, true) => {
                let loc = Loc::Row {
                    table: table.clone(),
                    key: Arc::from(raw.key(row)),
                    rowid: Some(row.rowid),
                };
                log.seq_counter = Some((
                    loc,
                    String::from_utf8_lossy(raw.value(row)).trim().to_string(),
                ));
                conv.meta_records += 1;
            }
            _ => conv.meta_records += 1,
        }
    }
    // Keys sort by their text; seq order is numeric (and survives keys
    // that lost their zero padding).
    // The rows arrive in key order, so a stable sort by seq keeps
    // differently formatted keys of one seq in key order.
    chunk_rows.sort_by_key(|(seq, _)| *seq);
    let mut last_seq = None;
    for (seq, row) in chunk_rows {
        let loc = Loc::Row {
            table: table.clone(),
            key: Arc::from(raw.key(row)),
            rowid: Some(row.rowid),
        };
        if last_seq == Some(seq) {
            log.repeated.push((seq, loc.clone()));
        }
        last_seq = Some(seq);
        let value = raw.value(row);
        let entry = match entry::decode(value) {
            Ok(e) => e,
            Err(e) => {
                conv.corrupt.push(crate::model::CorruptRecord::new(
                    loc,
                    format!("is not a chunk entry ({})", super::chat::sonic_error(&e)),
                    value,
                    false,
                ));
                continue;
            }
        };
        let role = Role::parse(&entry.role);
        let Some(role) = role else {
            conv.corrupt.push(crate::model::CorruptRecord::new(
                loc,
                format!("has unknown role `{}`", entry.role),
                value,
                false,
            ));
            continue;
        };
        let kind_name: Cow<'static, str> = match entry.chunk.ty.as_ref() {
            "text" => Cow::Borrowed("text"),
            "thinking" => Cow::Borrowed("thinking"),
            "tool-call" => Cow::Borrowed("tool-call"),
            "tool-result" => Cow::Borrowed("tool-result"),
            other => Cow::Owned(other.to_string()),
        };
        let (kind, detail) = part_of(entry.chunk);
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
            role,
            msg_idx: entry.msg_idx,
            chunk_idx: entry.chunk_idx,
            kind: kind_name,
            detail,
            message,
            part: conv.messages[message].parts.len(),
        });
        conv.messages[message].push(kind, loc);
    }
    conv.chunks = Some(log);
    conv
}

/// The part a chunk becomes, and what evidence tables show beside it (the
/// tool name of a result, the message of an error chunk).
fn part_of(c: WireChunk<'_>) -> (PartKind, Option<String>) {
    match c.ty.as_ref() {
        "text" | "system" => (
            PartKind::Text {
                text: c.text.map(Cow::into_owned).unwrap_or_default(),
            },
            None,
        ),
        "thinking" => (
            PartKind::Thinking {
                text: c.text.map(Cow::into_owned).unwrap_or_default(),
            },
            None,
        ),
        "tool-call" => (
            PartKind::ToolCall {
                id: c.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                name: c.tool_name.map(Cow::into_owned).unwrap_or_default(),
                arguments: Arguments {
                    raw: c.input.map(Cow::into_owned).unwrap_or_default(),
                    encoding: ArgEncoding::JsonValue,
                },
            },
            None,
        ),
        "tool-result" => (
            PartKind::ToolResult {
                call_id: c.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                content: c.content.map(Cow::into_owned).unwrap_or_default(),
                is_error: c.is_error,
            },
            c.tool_name.map(Cow::into_owned),
        ),
        other => (
            PartKind::Other {
                kind: other.to_string(),
            },
            c.message.map(Cow::into_owned),
        ),
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
