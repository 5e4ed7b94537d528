//! Cursor's state databases: the global one (`<User>/globalStorage/state.vscdb`),
//! read here, and a workspace's ([`workspace`]).
//!
//! VS Code's `ItemTable(key, value)` beside Cursor's `cursorDiskKV(key,
//! value)`, whose keys `composerData:<composerId>` (one per chat session,
//! "composer") and `bubbleId:<composerId>:<bubbleId>` (one per bubble) hold
//! JSON. One conversation per composer: its bubbles in the order of
//! `composerData.fullConversationHeadersOnly[].bubbleId` (database order
//! only when that list is absent); bubble `type` 1 is a user message, 2 an
//! assistant one, and consecutive assistant bubbles (thinking, text, tool
//! bubbles of one turn) are one assistant message. A `toolFormerData`
//! bubble is the call and its result (`toolCallId`; `params` and `result`
//! are JSON strings); only `completed` and `error` have a result. Bubbles
//! of other types, and bubbles the header list does not name, are counted
//! as meta records; a header naming a bubble with no row is a
//! [`MissingRecord`] (`dangling-bubble-header`). Older composers without a
//! header list keep their bubbles inline in `composerData.conversation`
//! (read in that order, each pointing at `composerData:<id>#conversation[i]`),
//! and a composer that holds nothing (Cursor writes one per new chat tab)
//! is not a conversation.
//!
//! The composers are read on a thread of their own, through a reader
//! connection, and built (their bubbles parsed) on the pipeline's workers
//! ([`pipeline::start`]), in key order.
//!
//! Cursor is closed source: what it sends on resume is not known. The
//! layout follows txcript's reader (checked by its author against Cursor
//! 3.16). A repaired copy is not written in Cursor's format (the shapes of
//! a settled tool bubble are not known), so `repair` leaves every finding,
//! with the reason. A workspace's database (`ItemTable` only: its composer
//! list and the chat panel of 2024) is read by [`workspace`].

pub mod discover;
pub mod profile;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::store::{Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::lazy::Node;
use crate::format::records::record::{too_deep, tree_as_lenient_readers_read};
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message,
    MissingRecord, Name, PartKind, Role, SourceInfo,
};
use crate::source::sqlite::{self, Snapshot};
use crate::source::{Source, pipeline};
use crate::write::{Log, Planned, Target, Writer};

pub mod workspace;

pub static STORE: Store = Store {
    name: "Cursor state (state.vscdb)",
    formats: &[Format::SqliteKv],
    dialects: &[Dialect::Cursor],
    probe: Probe::Sqlite {
        detect: |conn, tables| detect(conn, tables).map_err(|e| sqlite::cause(&e)),
        open: open_any,
    },
    writing: Writing::Copy {
        supports,
        new: writer,
    },
    hooks: Hooks::NONE,
};

pub const TABLE: &str = "cursorDiskKV";

/// Whether the database is Cursor's: its global database ([`global`]) or
/// a workspace's ([`workspace::detect`]).
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    Ok(global(conn, tables)? || workspace::detect(conn, tables)?)
}

/// The global database's composers, or else the workspace's chats.
fn open_any(path: &Path, snap: Snapshot) -> Result<Opened> {
    let tables = sqlite::tables(&snap.conn).map_err(sqlite::error_of(path))?;
    if global(&snap.conn, &tables).map_err(sqlite::error_of(path))? {
        Ok(Opened::History(Box::new(open(path, snap)?)))
    } else {
        Ok(Opened::History(Box::new(workspace::open(path, snap)?)))
    }
}

/// Whether the database is Cursor's global one: `ItemTable` and
/// `cursorDiskKV` (key, value) with at least one `composerData:` key.
/// VS Code's own `state.vscdb` has `ItemTable` only.
pub fn global(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("ItemTable") && has(TABLE)) {
        return Ok(false);
    }
    let cols = sqlite::columns(conn, TABLE)?;
    if !["key", "value"].iter().all(|c| cols.iter().any(|x| x == c)) {
        return Ok(false);
    }
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;')",
        [],
        |r| r.get(0),
    )
}

/// No action is carried out: Cursor is closed source, and the shape of a
/// settled tool bubble or of a repaired header list it accepts is not
/// known (it rejects composer documents it does not expect: `Failed to
/// load composer data`).
pub fn supports(_: Dialect, _: &Action) -> bool {
    false
}

/// The writer: with no action supported, the copy is the database as it
/// is (made with the backup API, checked like every SQLite copy).
fn writer(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(Copy {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
    }))
}

struct Copy {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
}

impl Writer for Copy {
    fn plan(&mut self, _: &Conversation, _: &[Planned<'_>], _: &mut Log) -> Result<()> {
        Ok(())
    }

    fn write(self: Box<Self>, _: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        let snap = sqlite::open(&self.input)?;
        crate::write::sqlite::edit_sqlite_copy(&self.input, out, self.force, snap, |_| Ok(()))
    }
}

/// The composers, read on a thread of their own (the rows of one
/// composer, through a reader connection) and built on the pipeline's
/// workers (parsing the bubbles is most of the work), in key order.
pub struct Composers {
    pipeline: pipeline::Pipeline,
    /// The snapshot the reader's connection belongs to.
    _snap: Snapshot,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Composers> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteKv,
        dialect: Dialect::Cursor,
    });
    let ids = (|| -> rusqlite::Result<Vec<(i64, String)>> {
        let mut st = snap.conn.prepare(
            "SELECT rowid, key FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' ORDER BY key",
        )?;
        let rows = st.query_map([], |r| {
            Ok((r.get(0)?, sqlite::text(r.get_ref(1)?).unwrap_or_default()))
        })?;
        rows.collect()
    })()
    .map_err(sqlite::error_of(path))?;
    let reader = snap.reader(path)?;
    let read_path = path.to_path_buf();
    let read = move |dealer: pipeline::Dealer<Raw>| {
        for (rowid, key) in ids {
            let raw = fetch(&reader.conn, rowid, key)
                .map_err(|e| Error::input(&read_path, sqlite::cause(&e)));
            let stop = raw.is_err();
            if dealer.send(raw).is_err() || stop {
                return;
            }
        }
    };
    let build_info = info.clone();
    let pipeline = pipeline::start(path, info, "cursor", read, move |raw| {
        build(raw, &build_info)
    })?;
    Ok(Composers {
        pipeline,
        _snap: snap,
    })
}

impl Source for Composers {
    fn info(&self) -> Arc<SourceInfo> {
        self.pipeline.info()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        loop {
            match self.pipeline.next_conversation()? {
                // Cursor writes a composer for every new chat tab: one
                // that holds nothing at all is not a conversation.
                Ok(c) if c.messages.is_empty() && c.missing.is_empty() && c.corrupt.is_empty() => {
                    continue;
                }
                other => return Some(other),
            }
        }
    }

    fn prepare_with(&mut self, work: crate::source::Prepare) {
        self.pipeline.prepare_with(work);
    }

    fn prepared(&mut self) -> Option<crate::source::Prepared> {
        self.pipeline.prepared()
    }
}

fn loc(key: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(key),
        rowid: Some(rowid),
    }
}

fn bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
        other => sqlite::text(other).unwrap_or_default().into_bytes(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A bubble row: its key, rowid and value.
struct Bubble {
    rowid: i64,
    key: String,
    id: String,
    value: Vec<u8>,
}

/// A composer's rows as read: its `composerData` row and its bubbles.
pub struct Raw {
    rowid: i64,
    key: String,
    data: Vec<u8>,
    bubbles: Vec<Bubble>,
}

impl pipeline::Weigh for Raw {
    fn weight(&self) -> usize {
        self.data.len() + self.bubbles.iter().map(|b| b.value.len()).sum::<usize>()
    }
}

/// Read a composer's rows: its document, and its bubbles in row order.
/// The bubbles' keys are ordered alone, their values then read one by
/// one: ordering whole rows copied a large value through SQLite's sorter
/// several times over (about 7 MiB of memory for each MB of one bubble).
fn fetch(conn: &rusqlite::Connection, rowid: i64, key: String) -> rusqlite::Result<Raw> {
    let composer = key.strip_prefix("composerData:").unwrap_or(&key);
    let mut value = conn.prepare_cached("SELECT value FROM cursorDiskKV WHERE rowid = ?1")?;
    let data: Vec<u8> = value.query_row([rowid], |r| Ok(bytes(r.get_ref(0)?)))?;
    let lo = format!("bubbleId:{composer}:");
    let hi = format!("bubbleId:{composer};");
    let mut st = conn.prepare_cached(
        "SELECT rowid, key FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 ORDER BY rowid",
    )?;
    let keys: Vec<(i64, String)> = st
        .query_map([&lo, &hi], |r| {
            Ok((r.get(0)?, sqlite::text(r.get_ref(1)?).unwrap_or_default()))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut bubbles = Vec::with_capacity(keys.len());
    for (rowid, key) in keys {
        // A row gone meanwhile cannot be: the reader holds its snapshot.
        let value = value.query_row([rowid], |r| Ok(bytes(r.get_ref(0)?)))?;
        bubbles.push(Bubble {
            rowid,
            id: key[lo.len()..].to_string(),
            key,
            value,
        });
    }
    Ok(Raw {
        rowid,
        key,
        data,
        bubbles,
    })
}

/// Build a composer's conversation from its rows.
fn build(raw: Raw, info: &Arc<SourceInfo>) -> Conversation {
    let Raw {
        rowid,
        key,
        data,
        mut bubbles,
    } = raw;
    let key = key.as_str();
    let composer = key.strip_prefix("composerData:").unwrap_or(key);
    let mut conv = Conversation::new(composer, info.clone());
    let data_loc = loc(key, rowid);
    // Older composers keep their bubbles inline, in `conversation`.
    let mut inline = Vec::new();
    // Read as Cursor's `JSON.parse` reads it: a lone surrogate escape (an
    // emoji cut in two) as U+FFFD, noted for `lone-surrogate`.
    let headers: Option<Vec<Option<String>>> = match tree_as_lenient_readers_read(&data) {
        Ok((mut v, lone)) => {
            conv.note_lone_surrogates(&data_loc, lone);
            let headers = v
                .get("fullConversationHeadersOnly")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .map(|h| str_of(h, "bubbleId").map(str::to_string))
                        .collect()
                });
            if headers.is_none()
                && let Some(Value::Array(items)) = v.get_mut("conversation").map(Value::take)
            {
                inline = items;
            }
            headers
        }
        Err(e) => {
            conv.corrupt.push(CorruptRecord::new(
                data_loc.clone(),
                format!("`{key}` is not JSON ({e})"),
                &data,
                false,
            ));
            None
        }
    };
    conv.meta_records += 1; // the composerData row itself
    let mut run_open = false;
    match headers {
        Some(headers) => {
            let mut used = vec![false; bubbles.len()];
            let by_id: foldhash::HashMap<&str, usize> = bubbles
                .iter()
                .enumerate()
                .map(|(i, b)| (b.id.as_str(), i))
                .collect();
            for (i, h) in headers.iter().enumerate() {
                let found = h.as_deref().and_then(|id| by_id.get(id).copied());
                match found {
                    Some(bi) => {
                        used[bi] = true;
                        add_bubble(&mut conv, &bubbles[bi], &mut run_open);
                    }
                    None => conv.missing.push(MissingRecord {
                        loc: data_loc.clone(),
                        field: format!("fullConversationHeadersOnly[{i}]"),
                        key: match h {
                            Some(id) => format!("bubbleId:{composer}:{id}"),
                            None => "(no bubbleId)".to_string(),
                        },
                        // Inside an assistant run, the run's own message.
                        before_message: conv.messages.len() - usize::from(run_open),
                    }),
                }
            }
            // Rows the header list does not name are not loaded.
            conv.meta_records += used.iter().filter(|u| !**u).count() as u64;
        }
        None => {
            for (i, item) in inline.iter().enumerate() {
                let b = Bubble {
                    rowid,
                    key: format!("{key}#conversation[{i}]"),
                    id: str_of(item, "bubbleId").unwrap_or("").to_string(),
                    value: serde_json::to_vec(item).unwrap_or_default(),
                };
                add_bubble(&mut conv, &b, &mut run_open);
            }
            for b in std::mem::take(&mut bubbles) {
                add_bubble(&mut conv, &b, &mut run_open);
            }
        }
    }
    conv
}

/// What a message is built from in a bubble: its `type` (as an integer),
/// `text`, `thinking.text`, and `toolFormerData`; each `None` where the
/// member is absent, null or not of that type.
#[derive(Debug, PartialEq)]
struct Fields<'a> {
    kind: Option<i64>,
    text: Option<Cow<'a, str>>,
    thinking: Option<Cow<'a, str>>,
    tool: Option<Tool<'a>>,
}

/// The members of `toolFormerData` a message is built from.
#[derive(Debug, PartialEq, Default, Deserialize)]
struct Tool<'a> {
    #[serde(borrow, default, rename = "toolCallId")]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "rawArgs")]
    raw_args: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    result: Option<Cow<'a, str>>,
}

/// A bubble read straight into the members a message needs, borrowing the
/// strings that hold no escape: no tree of the whole bubble (a tool's
/// `result`, most of a store's bytes, is copied once at most).
#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(default, rename = "type")]
    kind: Option<Value>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<MapOnly<Thinking<'a>>>,
    #[serde(borrow, default, rename = "toolFormerData")]
    tool: Option<MapOnly<Tool<'a>>>,
}

#[derive(Deserialize)]
struct Thinking<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// A struct read from a JSON object only: serde's derived structs take an
/// array too, member by member, where the tree reading takes none.
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Objects<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Objects<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<MapOnly<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MapOnly)
            }
        }
        d.deserialize_map(Objects(std::marker::PhantomData))
    }
}

/// A bubble this large is not read the quick way.
const LARGE_BUBBLE: usize = 1 << 20;

/// The fields of a bubble read the quick way (sonic-rs, into [`Doc`]), or
/// `None` where that reading could differ from the tree's
/// ([`fields_of_tree`], serde_json's): text that is not UTF-8, holds a
/// control character or a `\u` escape anywhere (sonic-rs does not check
/// what it skips; the tree's lenient reading notes a lone surrogate), or
/// nests deeper than serde_json reads; a member of another type than
/// expected, a repeated member (the tree keeps the last), a bubble that
/// is not an object, or one over [`LARGE_BUBBLE`] (read lazily). Those go to the tree. Cursor writes compact
/// JSON with its text as UTF-8: nearly every bubble is read the quick way.
/// One difference is left, in the real client's favour: a number beyond
/// a double's range (`1e999`) in a member no message is built from, which
/// `JSON.parse` reads and serde_json refuses, is read.
fn quick_fields(bytes: &[u8]) -> Option<Fields<'_>> {
    // A bubble of many MB goes to the lazy reading: sonic-rs decodes a
    // string with escapes through buffers of its own, a few times the
    // string's size.
    if bytes.len() > LARGE_BUBBLE {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    if !text.starts_with('{')
        || bytes.iter().any(|&b| b < 0x20)
        || memchr::memmem::find(bytes, b"\\u").is_some()
        || too_deep(bytes)
    {
        return None;
    }
    let doc: Doc<'_> = sonic_rs::from_str(text).ok()?;
    Some(Fields {
        kind: doc.kind.as_ref().and_then(Value::as_i64),
        text: doc.text,
        thinking: doc.thinking.and_then(|t| t.0.text),
        tool: doc.tool.map(|t| t.0),
    })
}

/// The fields of a bubble read as a tree, as Cursor's `JSON.parse` reads
/// it.
#[cfg(test)]
fn fields_of_tree(v: &Value) -> Fields<'_> {
    fields_of(Node::Tree(v))
}

/// The fields of a bubble read lazily (where that reads as the tree) or
/// as a tree.
fn fields_of(v: Node<'_>) -> Fields<'_> {
    fn s<'a>(v: Node<'a>, key: &str) -> Option<Cow<'a, str>> {
        v.get(key).and_then(|s| s.as_str())
    }
    Fields {
        kind: v.get("type").and_then(|t| t.as_i64()),
        text: s(v, "text"),
        thinking: v.get("thinking").and_then(|t| s(t, "text")),
        tool: v
            .get("toolFormerData")
            .filter(|t| t.is_object())
            .map(|t| Tool {
                call_id: s(t, "toolCallId"),
                name: s(t, "name"),
                params: s(t, "params"),
                raw_args: s(t, "rawArgs"),
                status: s(t, "status"),
                result: s(t, "result"),
            }),
    }
}

/// Add one bubble: a user message, a part of the current assistant run, or
/// a meta record.
fn add_bubble(conv: &mut Conversation, b: &Bubble, run_open: &mut bool) {
    add_bubble_in(conv, b, run_open, TABLE)
}

/// [`add_bubble`] for a bubble kept in `table`.
fn add_bubble_in(conv: &mut Conversation, b: &Bubble, run_open: &mut bool, table: &'static str) {
    let at = Loc::Row {
        table: Name::Static(table),
        key: Arc::from(b.key.as_str()),
        rowid: Some(b.rowid),
    };
    if let Some(f) = quick_fields(&b.value) {
        return add_fields(conv, f, at, run_open);
    }
    // Escapes or control characters sonic-rs is not trusted with (a
    // terminal's output): read lazily where that reads as the tree.
    if let Some(node) = Node::parse(&b.value).filter(Node::is_object) {
        return add_fields(conv, fields_of(node), at, run_open);
    }
    let v: Value = match tree_as_lenient_readers_read(&b.value) {
        Ok((v @ Value::Object(_), lone)) => {
            conv.note_lone_surrogates(&at, lone);
            v
        }
        Ok(_) => {
            conv.corrupt.push(CorruptRecord::new(
                at,
                "bubble is not a JSON object".into(),
                &b.value,
                false,
            ));
            return;
        }
        Err(e) => {
            conv.corrupt.push(CorruptRecord::new(
                at,
                format!("bubble is not JSON ({e})"),
                &b.value,
                false,
            ));
            return;
        }
    };
    add_fields(conv, fields_of(Node::Tree(&v)), at, run_open);
}

/// A text taken, not copied where it was decoded.
fn owned(t: Option<Cow<'_, str>>) -> String {
    t.map(Cow::into_owned).unwrap_or_default()
}

fn add_fields(conv: &mut Conversation, f: Fields<'_>, at: Loc, run_open: &mut bool) {
    match f.kind {
        Some(1) => {
            *run_open = false;
            let mut m = Message::new(Role::User, at.clone());
            m.push(
                PartKind::Text {
                    text: owned(f.text).into(),
                },
                at,
            );
            conv.messages.push(m);
        }
        Some(2) => {
            if !*run_open {
                conv.messages
                    .push(Message::new(Role::Assistant, at.clone()));
                *run_open = true;
            }
            let m = conv.messages.last_mut().expect("a run has its message");
            if let Some(t) = f.thinking {
                m.push(
                    PartKind::Thinking {
                        text: t.into_owned().into(),
                    },
                    at.clone(),
                );
            }
            if let Some(t) = f.text.filter(|t| !t.is_empty()) {
                m.push(
                    PartKind::Text {
                        text: t.into_owned().into(),
                    },
                    at.clone(),
                );
            }
            if let Some(tool) = f.tool {
                let id = tool.call_id.as_deref().unwrap_or("").to_string();
                let args = [tool.params.as_deref(), tool.raw_args.as_deref()]
                    .into_iter()
                    .flatten()
                    .find(|a| !a.is_empty())
                    .unwrap_or("{}");
                m.push(
                    PartKind::ToolCall {
                        id: id.clone(),
                        name: tool.name.as_deref().unwrap_or("").to_string(),
                        arguments: Arguments {
                            raw: args.into(),
                            encoding: ArgEncoding::JsonString,
                        },
                    },
                    at.clone(),
                );
                let status = tool.status.as_deref().unwrap_or("");
                if matches!(status, "completed" | "error") {
                    m.push(
                        PartKind::ToolResult {
                            call_id: id,
                            content: owned(tool.result).into(),
                            is_error: Some(status == "error"),
                        },
                        at,
                    );
                }
            }
        }
        // Other bubble types (e.g. 7) are not messages.
        _ => conv.meta_records += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty composer is skipped; an older one with inline bubbles is
    /// read in their order.
    #[test]
    fn inline_bubbles_are_read_and_empty_composers_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.vscdb");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            r#"CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
               CREATE TABLE cursorDiskKV (key TEXT PRIMARY KEY, value BLOB);
               INSERT INTO cursorDiskKV VALUES ('composerData:a', '{"_v":3,"composerId":"a","fullConversationHeadersOnly":[]}');
               INSERT INTO cursorDiskKV VALUES ('composerData:b', '{"_v":2,"composerId":"b","conversation":[{"type":1,"bubbleId":"1","text":"hi"},{"type":2,"bubbleId":"2","text":"hello"}]}');"#,
        )
        .unwrap();
        let tables = sqlite::tables(&conn).unwrap();
        assert!(detect(&conn, &tables).unwrap());
        let mut src = open(&path, sqlite::open(&path).unwrap()).unwrap();
        let c = src.next_conversation().unwrap().unwrap();
        assert_eq!(c.id, "b");
        let roles: Vec<Role> = c.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        assert!(src.next_conversation().is_none());
    }

    /// The quick reading of a bubble gives what the tree gives, or leaves
    /// the bubble to the tree: never other fields.
    #[test]
    fn a_bubble_read_the_quick_way_reads_as_the_tree_reads_it() {
        let taken: &[&str] = &[
            r#"{"_v":3,"type":1,"bubbleId":"b1","text":"hi there"}"#,
            r#"{"type":2,"text":"","thinking":{"text":"plan \"it\"\n","signature":"x"}}"#,
            r#"{"type":2,"toolFormerData":{"tool":40,"name":"grep","toolCallId":"t1","status":"completed","rawArgs":"","params":"{\"q\":1}","result":"{\"m\":[\"a\\\\b\"]}"}}"#,
            r#"{"type":2,"toolFormerData":null,"thinking":null,"text":null}"#,
            r#"{"type":7,"other":{"deep":[1,2,{"x":"y"}]}}"#,
            r#"{"type":1.0,"text":"a float type is no type"}"#,
            r#"{"type":"1","text":"a string type is none either"}"#,
            r#"{"type":18446744073709551615,"text":"too large for i64"}"#,
            r#"{"type":2,"thinking":{},"toolFormerData":{}}"#,
        ];
        // Left to the tree: each reads differently there, or might.
        let left: &[&str] = &[
            r#"{"type":1,"text":"twice","text":"the last one counts"}"#,
            r#"{"type":2,"thinking":"a string","text":"t"}"#,
            r#"{"type":2,"thinking":["an array"],"text":"t"}"#,
            r#"{"type":2,"toolFormerData":["t1","grep"]}"#,
            r#"{"type":1,"text":7}"#,
            r#"{"type":2,"toolFormerData":{"result":{"an":"object"},"status":"completed"}}"#,
            r#"{"type":1,"text":"an emoji cut in two \ud83d"}"#,
            r#"{"type":1,"text":"ok","skipped":"\ud83d"}"#,
            r#"{"type":1,"text":"ok","skipped":"\uZZZZ"}"#,
            "{\"type\":1,\"text\":\"a raw\ttab\"}",
            "{\"type\":1,\"text\":\"ok\",\"skipped\":\"a raw\ncontrol\"}",
            r#"[1,"b1","hi"]"#,
            r#" {"type":1,"text":"leading space"}"#,
            r#"{"type":1,"text":"x","skipped":01}"#,
            r#"{"type":1,"text":"x","skipped":[1,]}"#,
            r#"{"type":1,"text":"x","skipped":tru}"#,
            r#"{"type":1e999,"text":"x"}"#,
            r#"{"type":1,"text":"trailing"} x"#,
        ];
        for text in taken {
            let quick = quick_fields(text.as_bytes()).unwrap_or_else(|| panic!("{text}"));
            let (tree, lone) = tree_as_lenient_readers_read(text.as_bytes()).unwrap();
            assert_eq!(lone, 0);
            assert_eq!(quick, fields_of_tree(&tree), "{text}");
            // The lazy reading (a bubble over a MiB) reads it so too.
            let lazy = Node::parse(text.as_bytes()).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(fields_of(lazy), fields_of_tree(&tree), "{text}");
        }
        // A bubble over a MiB is read lazily, as the tree reads it.
        let big = format!(
            r#"{{"type":2,"toolFormerData":{{"toolCallId":"t","status":"completed","result":"{}"}}}}"#,
            r#"a \"b\"\n"#.repeat(LARGE_BUBBLE / 4)
        );
        assert!(quick_fields(big.as_bytes()).is_none());
        let (tree, _) = tree_as_lenient_readers_read(big.as_bytes()).unwrap();
        assert_eq!(
            fields_of(Node::parse(big.as_bytes()).unwrap()),
            fields_of_tree(&tree)
        );
        for text in left {
            assert_eq!(quick_fields(text.as_bytes()), None, "{text}");
        }
        // One difference, in the real client's favour: a number beyond a
        // double's range in a member no message is built from. Cursor's
        // `JSON.parse` reads it (as Infinity), and so does the quick
        // reading; serde_json refuses the bubble. `JSON.stringify` never
        // writes one (it writes Infinity as null): only a hand-edited
        // store holds it.
        let huge = r#"{"type":1,"text":"x","skipped":1e999}"#;
        assert!(tree_as_lenient_readers_read(huge.as_bytes()).is_err());
        assert_eq!(
            quick_fields(huge.as_bytes()).unwrap().text.as_deref(),
            Some("x")
        );
        let mut deep = "[".repeat(200);
        deep.insert_str(0, r#"{"type":1,"x":"#);
        assert_eq!(quick_fields(deep.as_bytes()), None);
        assert_eq!(quick_fields(b"{\"type\":1,\"text\":\"\xff\"}"), None);
    }
}
