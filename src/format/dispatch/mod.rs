//! dispatch's SQLite key-value chunk store (seed 000).
//!
//! `kv(namespace, key, value)`, namespace `conversation-store`, one row per
//! chunk under `conv:<id>:chunk:<10-digit seq>` with value
//! `{"chunk": Chunk, "role": Role, "msgIdx": n, "chunkIdx": n}`, plus
//! per-conversation keys (`:seq`, `:cwd`, `:reasoning-effort`, `:metrics…`,
//! newer ones) that are preserved and never flagged.
//!
//! One ordered pass over the primary-key index, cut into key ranges
//! (shards, [`shard_bounds`]) that reader threads take in turn: each reads
//! its range through its own connection (every connection begins its read
//! transaction before any reading, so all see the same database), decodes each
//! chunk while the row is still in its cache ([`entry`]), and builds the
//! conversation; the caller receives conversations in key order and runs
//! the rules. Memory holds a few conversations per thread, never the
//! database.

pub mod profile;

use crate::source::pipeline::{self, Closed, ShardOut, Sharded};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

pub mod entry;
pub mod writer;

use super::store::{Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::model::{
    ArgEncoding, Arguments, Chunk, ChunkLog, Conversation, Dialect, Format, Loc, Message, PartKind,
    Role, SourceInfo, Text,
};
use crate::source::sqlite::{self, Snapshot};
use entry::WireChunk;

pub const NAMESPACE: &str = "conversation-store";
pub const TABLE: &str = "kv";

pub static STORE: Store = Store {
    name: "dispatch chunk store",
    formats: &[Format::SqliteKv],
    dialects: &[Dialect::Dispatch],
    probe: Probe::Sqlite {
        detect: |conn, tables| detect(conn, tables).map_err(|e| sqlite::cause(&e)),
        open: |path, snap| Ok(Opened::History(Box::new(open(path, snap)?))),
    },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// Whether the database holds dispatch's conversation store.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
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
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Sharded> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteKv,
        dialect: Dialect::Dispatch,
    });
    let bytes: i64 = snap
        .conn
        .query_row(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| r.get(0),
        )
        .map_err(sqlite::error_of(path))?;
    open_sharded(path, snap, info, shard_bounds(bytes))
}

fn open_sharded(
    path: &Path,
    snap: Snapshot,
    info: Arc<SourceInfo>,
    bounds: Vec<String>,
) -> Result<Sharded> {
    // The readers read `kv` (its chunk rows, nearly all of it, through its
    // primary key): SQLite checks each page they read as it reads it. The
    // structure check covers the rest of the file meanwhile, instead of
    // reading the whole of it a second time first.
    snap.start_check(&["kv"]);
    // Every reader's transaction begins before any reading starts.
    let workers = (0..pipeline::workers())
        .map(|_| {
            snap.reader(path).map(|reader| Worker {
                reader,
                raw: RawConv {
                    id: String::new(),
                    rows: Vec::new(),
                    keys: String::with_capacity(16 * 1024),
                    values: Vec::with_capacity(START_CAPACITY),
                },
                spare: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    drop(snap);
    let p = path.to_path_buf();
    let shards = bounds.len();
    pipeline::start_sharded(
        path,
        info.clone(),
        "kv",
        shards,
        workers,
        move |w, shard, out| {
            let (lo, hi) = (
                &bounds[shard],
                bounds.get(shard + 1).map_or(END, String::as_str),
            );
            read_shard(&p, w, lo, hi, &info, out)
        },
    )
}

/// Keys of the conversation store lie in `[START, END)`.
const START: &str = "conv:";
const END: &str = "conv;";

/// The lower bounds of the key ranges the store is read in, in order: the
/// store's start, then `conv:` followed by every hex string of one length,
/// chosen so that a range holds a few megabytes of a store of random (UUID)
/// ids. No conversation straddles two ranges: its keys all begin
/// `conv:<id>:`, and a bound without `:` orders every such key alike.
/// Other ids land in the ranges between; the ranges still cover the store.
fn shard_bounds(db_bytes: i64) -> Vec<String> {
    let wanted = (db_bytes / (4 << 20)).max(1);
    let mut len = 0u32;
    while 16i64.pow(len) < wanted && len < 4 {
        len += 1;
    }
    let mut bounds = vec![START.to_string()];
    if len > 0 {
        for n in 0..16usize.pow(len) {
            bounds.push(format!("{START}{n:0width$x}", width = len as usize));
        }
    }
    bounds
}

/// A reader thread's connection and its reusable buffers.
struct Worker {
    reader: sqlite::Reader,
    raw: RawConv,
    spare: Vec<Vec<u8>>,
}

/// Read the keys in `[lo, hi)`, building and sending each conversation as
/// its last row is read; `Err` when the consumer has gone.
fn read_shard(
    path: &Path,
    w: &mut Worker,
    lo: &str,
    hi: &str,
    info: &Arc<SourceInfo>,
    out: &ShardOut,
) -> std::result::Result<(), Closed> {
    let send = |item: Result<Conversation>| out.send(item, 0);
    let error = sqlite::error_of(path);
    let fail = |e: rusqlite::Error| Err(error(e));
    let mut st = match w.reader.conn.prepare_cached(
        "SELECT rowid, key, value FROM kv WHERE namespace = ?1 AND key >= ?2 AND key < ?3 ORDER BY namespace, key",
    ) {
        Ok(st) => st,
        Err(e) => return send(fail(e)),
    };
    let mut rows = match st.query((NAMESPACE, lo, hi)) {
        Ok(r) => r,
        Err(e) => return send(fail(e)),
    };
    let raw = &mut w.raw;
    let mut open = false;
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => return send(fail(e)),
        };
        let read = (|| -> rusqlite::Result<(i64, rusqlite::types::ValueRef<'_>, rusqlite::types::ValueRef<'_>)> {
            Ok((row.get(0)?, row.get_ref(1)?, row.get_ref(2)?))
        })();
        let (rowid, key, value) = match read {
            Ok(r) => r,
            Err(e) => return send(fail(e)),
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
        if open && raw.id != conv_id {
            let bytes = raw.values.len() + raw.keys.len();
            let conv = finish(raw, &mut w.spare, info);
            out.send(Ok(conv), bytes)?;
            recycle(out, &mut w.spare);
            open = false;
        }
        if !open {
            raw.id.clear();
            raw.id.push_str(conv_id);
            raw.rows.clear();
            raw.keys.clear();
            raw.values.clear();
            open = true;
        }
        let k0 = raw.keys.len();
        raw.keys.push_str(&key);
        let v0 = raw.values.len();
        raw.values.extend_from_slice(value);
        raw.rows.push(RawRow {
            rowid,
            seq,
            counter,
            key: k0..raw.keys.len(),
            value: v0..raw.values.len(),
        });
    }
    if open {
        let bytes = raw.values.len() + raw.keys.len();
        let conv = finish(raw, &mut w.spare, info);
        out.send(Ok(conv), bytes)?;
        recycle(out, &mut w.spare);
    }
    Ok(())
}

/// The value buffer a conversation starts with.
const START_CAPACITY: usize = 256 << 10;

/// Buffers a reader keeps for reuse, and the largest it keeps.
const SPARES: usize = 4;
const MAX_SPARE: usize = 16 << 20;

/// Free the conversations the consumer has handed back, keeping their
/// value buffers to read the next conversations into: a fresh buffer per
/// conversation made the allocator fault in (and zero) new pages all along.
fn recycle(out: &ShardOut, spare: &mut Vec<Vec<u8>>) {
    for mut conv in out.returned() {
        let buffer = conv.chunks.as_mut().and_then(|log| log.buffer.take());
        drop(conv);
        if let Some(Ok(text)) = buffer.map(Arc::try_unwrap)
            && spare.len() < SPARES
            && text.capacity() <= MAX_SPARE
        {
            let mut bytes = text.into_bytes();
            bytes.clear();
            spare.push(bytes);
        }
    }
}

/// Build the conversation whose rows `raw` holds. Its texts share the
/// buffer the values were read into (the conversation keeps it; the reader
/// starts a new one) unless some value is not UTF-8, in which case they
/// are copied and the buffer is reused.
fn finish(raw: &mut RawConv, spare: &mut Vec<Vec<u8>>, info: &Arc<SourceInfo>) -> Conversation {
    let values = std::mem::take(&mut raw.values);
    match String::from_utf8(values) {
        Ok(text) => {
            let buf = Arc::new(text);
            raw.values = spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(START_CAPACITY));
            let mut conv = build(raw, buf.as_bytes(), Some(&buf), info);
            if let Some(log) = conv.chunks.as_mut() {
                log.buffer = Some(buf);
            }
            conv
        }
        Err(e) => {
            raw.values = e.into_bytes();
            build(raw, &raw.values, None, info)
        }
    }
}

fn build(
    raw: &RawConv,
    values: &[u8],
    shared: Option<&Arc<String>>,
    info: &Arc<SourceInfo>,
) -> Conversation {
    let value_of = |row: &RawRow| &values[row.value.clone()];
    let table = crate::model::Name::Static(TABLE);
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
                    String::from_utf8_lossy(value_of(row)).trim().to_string(),
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
        let value = value_of(row);
        // The app's `JSON.parse` refuses a `\u` escape without four hex
        // digits anywhere in the value; sonic-rs takes one in a value it
        // skips.
        if let Some(at) = super::records::record::bad_unicode_escape(value) {
            conv.corrupt.push(crate::model::CorruptRecord::new(
                loc,
                format!(
                    "is not a chunk entry ({})",
                    super::records::record::bad_unicode_escape_reason(at)
                ),
                value,
                false,
            ));
            continue;
        }
        let decoded = match shared.and_then(|buf| buf.get(row.value.clone())) {
            Some(text) => entry::decode_str(text),
            None => entry::decode(value),
        };
        // dispatch's `JSON.parse` reads a lone surrogate escape (an emoji
        // cut in two) as U+FFFD; sonic-rs refuses it in a string it
        // decodes. Such a value is decoded from a copy with the escapes
        // replaced, and the row noted for `lone-surrogate`.
        let mended = std::cell::OnceCell::new();
        let decoded = super::records::record::or_with_surrogates_mended(
            decoded,
            value,
            &mended,
            entry::decode,
        );
        // A member named twice: `JSON.parse` keeps its last value, and so
        // does this second reading (serde_json's tree, written out again).
        let lenient = std::cell::OnceCell::new();
        let decoded = match decoded {
            Err(e) if e.to_string().contains("duplicate field") => {
                match super::records::record::as_lenient_readers_read(value) {
                    Some((text, lone)) => entry::decode(lenient.get_or_init(|| text))
                        .map(|e| (e, lone))
                        .map_err(|_| e),
                    None => Err(e),
                }
            }
            other => other,
        };
        let entry = match decoded {
            Ok((e, lone)) => {
                conv.note_lone_surrogates(&loc, lone);
                e
            }
            Err(e) => {
                conv.corrupt.push(crate::model::CorruptRecord::new(
                    loc,
                    format!(
                        "is not a chunk entry ({})",
                        super::records::record::sonic_error(&e)
                    ),
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
        let ty = entry.chunk.ty.as_ref();
        let kind_name: Cow<'static, str> = match CHUNK_TYPES.iter().find(|k| **k == ty) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(ty.to_string()),
        };
        let (kind, detail) = part_of(entry.chunk, shared);
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

/// The chunk types dispatch writes: a chunk of one of them is named
/// without a copy.
const CHUNK_TYPES: &[&str] = &[
    "text",
    "thinking",
    "tool-call",
    "tool-result",
    "system",
    "error",
];

/// A decoded string as a [`Text`]: a share of the conversation's buffer
/// when it was borrowed from it, else its own string.
fn text_in(s: Cow<'_, str>, shared: Option<&Arc<String>>) -> Text {
    if let (Cow::Borrowed(b), Some(buf)) = (&s, shared) {
        let start = (b.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
        if start <= buf.len() && b.len() <= buf.len() - start {
            return Text::shared(buf, start, start + b.len());
        }
    }
    Text::from(s.into_owned())
}

/// The part a chunk becomes, and what evidence tables show beside it (the
/// tool name of a result, the message of an error chunk).
fn part_of(c: WireChunk<'_>, shared: Option<&Arc<String>>) -> (PartKind, Option<String>) {
    let text = |s: Option<Cow<'_, str>>| s.map(|s| text_in(s, shared)).unwrap_or_default();
    match c.ty.as_ref() {
        "text" | "system" => (PartKind::Text { text: text(c.text) }, None),
        "thinking" => (PartKind::Thinking { text: text(c.text) }, None),
        "tool-call" => (
            PartKind::ToolCall {
                id: c.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                name: c.tool_name.map(Cow::into_owned).unwrap_or_default(),
                arguments: Arguments {
                    raw: text(c.input),
                    encoding: ArgEncoding::JsonValue,
                },
            },
            None,
        ),
        "tool-result" => (
            PartKind::ToolResult {
                call_id: c.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                content: text(c.content),
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
    use crate::source::{Prepared, Source};

    /// A store in dispatch's layout holding `rows` (key, value).
    fn store(
        rows: impl IntoIterator<Item = (String, String)>,
    ) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (namespace, key));",
        )
        .unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for row in rows {
            tx.execute("INSERT INTO kv VALUES ('conversation-store', ?1, ?2)", row)
                .unwrap();
        }
        tx.commit().unwrap();
        (dir, db)
    }

    /// The store at `db`, read through `bounds`.
    fn sharded(db: &Path, bounds: Vec<String>) -> Sharded {
        let info = Arc::new(SourceInfo {
            path: db.to_path_buf(),
            format: Format::SqliteKv,
            dialect: Dialect::Dispatch,
        });
        open_sharded(db, sqlite::open(db).unwrap(), info, bounds).unwrap()
    }

    #[test]
    fn shard_bounds_grow_with_the_store() {
        assert_eq!(shard_bounds(1 << 20), vec!["conv:"]);
        let b = shard_bounds(690 << 20);
        assert_eq!(b.len(), 257);
        assert_eq!((b[1].as_str(), b[256].as_str()), ("conv:00", "conv:ff"));
        assert!(b.windows(2).all(|w| w[0] < w[1]), "bounds are in key order");
        assert_eq!(shard_bounds(1 << 40).len(), 65537);
    }

    /// Ids of every shape (not hex, upper case, empty, with colons, beyond
    /// ASCII) are read once each, whole, in key order, however the store
    /// is cut.
    #[test]
    fn shards_read_every_conversation_once_in_key_order() {
        let ids = [
            "", "0", "00", "00a", "0f:x", "1a99", "9z", "A1", "Zeta", "a", "ab:cd", "f", "ff",
            "fff", "g-1", "é", "~",
        ];
        let (_dir, db) = store(ids.iter().flat_map(|id| {
            (1..=3)
                .map(move |seq| {
                    let value = format!(
                        r#"{{"chunk":{{"type":"text","text":"{id} {seq}"}},"role":"{}","msgIdx":{},"chunkIdx":0}}"#,
                        if seq == 2 { "assistant" } else { "user" },
                        seq - 1
                    );
                    (format!("conv:{id}:chunk:{seq:010}"), value)
                })
                .chain([(format!("conv:{id}:seq"), "3".to_string())])
        }));
        let read = |bounds: Vec<String>| {
            let mut src = sharded(&db, bounds);
            let mut got = Vec::new();
            while let Some(c) = src.next_conversation() {
                let c = c.unwrap();
                got.push((c.id.clone(), c.messages.len(), c.meta_records));
            }
            got
        };
        let whole = read(shard_bounds(0));
        let mut expected: Vec<&str> = ids.to_vec();
        expected.sort_by_key(|id| format!("conv:{id}:"));
        assert_eq!(
            whole.iter().map(|(id, ..)| id.as_str()).collect::<Vec<_>>(),
            expected
        );
        assert!(
            whole
                .iter()
                .all(|&(_, messages, meta)| messages == 3 && meta == 1)
        );
        assert_eq!(read(shard_bounds(690 << 20)), whole);
        assert_eq!(read(shard_bounds(40 << 30)), whole);
    }

    /// Work offered by the consumer runs on the reader threads, and its
    /// result comes back with the conversation it was run on.
    #[test]
    fn offered_work_runs_on_the_readers() {
        use crate::source::pipeline::{BATCH_ITEMS, SHARD_DEPTH};
        // One shard: its channel holds SHARD_DEPTH batches of BATCH_ITEMS
        // conversations, and one more batch fills while the reader waits,
        // so the later ones are built after the offer below.
        let ahead = (SHARD_DEPTH + 1) * BATCH_ITEMS;
        let n = ahead + 3 * BATCH_ITEMS;
        let (_dir, db) = store((0..n).map(|i| {
            (
                format!("conv:{i:04}:chunk:0000000001"),
                r#"{"chunk":{"type":"text","text":"hi"},"role":"user","msgIdx":0,"chunkIdx":0}"#
                    .to_string(),
            )
        }));
        let mut src = sharded(&db, shard_bounds(0));
        src.prepare_with(Arc::new(|c: &Conversation| {
            let thread = std::thread::current()
                .name()
                .unwrap_or_default()
                .to_string();
            Box::new((c.id.clone(), thread)) as Prepared
        }));
        let mut prepared = Vec::new();
        while let Some(c) = src.next_conversation() {
            let c = c.unwrap();
            let p = src
                .prepared()
                .map(|p| *p.downcast::<(String, String)>().unwrap());
            if let Some((id, thread)) = &p {
                assert_eq!(id, &c.id, "a result comes with its own conversation");
                assert_eq!(thread, "chatfsck-kv-read");
            }
            prepared.push(p.is_some());
            src.done(c);
        }
        assert_eq!(prepared.len(), n);
        assert!(prepared[ahead..].iter().all(|&p| p));
    }

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
