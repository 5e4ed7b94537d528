//! `loadConversationRecord`, as Gemini CLI runs it on resume
//! (`packages/core/src/services/chatRecordingService.ts`): which records of
//! a recording are left once every line has been applied. Shared by the
//! reader (records → messages) and the writer (which rewrites records).

use std::path::Path;
use std::sync::Arc;

use foldhash::HashMap;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::format::records::lazy::Node;
use crate::format::records::record::replace_lone_surrogates;
use crate::model::{CorruptRecord, Format, Loc};
use crate::source::Limits;
use crate::source::lines::{LineReader, Next};
use crate::write::payload::{self, Shrunk};

/// A message record the loader keeps: its current value and where that
/// value was read.
#[derive(Debug, Clone)]
pub struct Record {
    pub id: String,
    body: Body,
    /// The line (JSONL) or array element (legacy JSON) holding the value:
    /// for an element of `$set.messages`, the element's own bytes.
    pub loc: Loc,
    /// Its position in a `$set.messages` (or legacy `messages`) array.
    pub element: Option<usize>,
    /// Loaded for a writer ([`load_shrunk`]): the line's large strings,
    /// kept out of the record's text as markers, and where the line
    /// starts. The record's text is then that of the file with each
    /// large string as its marker.
    pub shrunk: Option<(Arc<Shrunk>, u64)>,
}

/// A record's JSON text, verbatim as the file holds it, and how its value
/// is read.
#[derive(Debug, Clone)]
enum Body {
    /// Read lazily, checked once: a record holding a tool's output of
    /// many MB was checked again on every look at one of its members
    /// (most of a repair's time).
    Lazy(Box<RawValue>),
    /// Read lazily, checked on every look (text with whitespace around
    /// the value, which a checked value would not keep).
    Text(String),
    /// As a tree, where reading the text lazily could read it otherwise
    /// ([`Node::parse`]): a tree of a record holding a tool's output of
    /// many MB cost that output three times over, so only there.
    Tree(String, Value),
}

impl Record {
    fn new(raw: String, tree: Option<Value>, loc: Loc, element: Option<usize>) -> Record {
        let body = match tree {
            Some(v) => Body::Tree(raw, v),
            None if raw.trim_ascii() == raw.as_str() => match RawValue::from_string(raw) {
                Ok(r) => Body::Lazy(r),
                Err(_) => Body::Tree(String::new(), Value::Null),
            },
            None => Body::Text(raw),
        };
        Record {
            id: String::new(),
            body,
            loc,
            element,
            shrunk: None,
        }
    }

    /// The record's JSON text, verbatim as the file holds it (with its
    /// large strings as markers where it was loaded shrunk).
    pub fn raw(&self) -> &str {
        match &self.body {
            Body::Lazy(r) => r.get(),
            Body::Text(t) | Body::Tree(t, _) => t,
        }
    }

    /// The record's value.
    pub fn node(&self) -> Node<'_> {
        static NULL: Value = Value::Null;
        match &self.body {
            Body::Lazy(r) => Node::Raw(r),
            Body::Text(t) => Node::parse(t.as_bytes()).unwrap_or(Node::Tree(&NULL)),
            Body::Tree(_, v) => Node::Tree(v),
        }
    }

    /// The record's value as a tree of its own (to change it).
    pub fn value(&self) -> Value {
        match &self.body {
            Body::Tree(_, v) => v.clone(),
            _ => self.node().to_value(),
        }
    }
}

/// The tree of `raw`, where it cannot be read lazily.
fn tree_of(raw: &str) -> Option<Value> {
    match Node::parse(raw.as_bytes()) {
        Some(_) => None,
        None => Some(serde_json::from_str(raw).unwrap_or(Value::Null)),
    }
}

/// What the loader leaves of a recording.
#[derive(Debug, Default)]
pub struct Loaded {
    pub format: Option<Format>,
    pub session_id: Option<String>,
    /// The message records, in the map's order.
    pub records: Vec<Record>,
    pub corrupt: Vec<CorruptRecord>,
    /// Metadata lines, `$set` and `$rewindTo` lines.
    pub meta: u64,
    /// Whether the file's last line ends with a newline.
    pub terminated: bool,
    /// A metadata line carries `messages`: the legacy document on one line.
    legacy: bool,
    /// Lines read with their lone surrogate escapes as U+FFFD, and how
    /// many each holds.
    pub lone_surrogates: Vec<(Loc, u32)>,
}

/// An insertion-ordered map: a replaced value keeps its first position.
#[derive(Default)]
struct Ordered {
    slots: Vec<Option<Record>>,
    at: HashMap<String, usize>,
}

impl Ordered {
    fn put(&mut self, rec: Record) {
        match self.at.get(&rec.id) {
            Some(&i) => self.slots[i] = Some(rec),
            None => {
                self.at.insert(rec.id.clone(), self.slots.len());
                self.slots.push(Some(rec));
            }
        }
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.at.clear();
    }

    /// `$rewindTo`: delete `id` and every record inserted after it; an
    /// unknown id deletes everything.
    fn rewind(&mut self, id: &str) {
        let from = self.at.get(id).copied().unwrap_or(0);
        for slot in self.slots.drain(from..).flatten() {
            self.at.remove(&slot.id);
        }
    }

    fn into_records(self) -> Vec<Record> {
        self.slots.into_iter().flatten().collect()
    }
}

/// The `projectHash` Gemini CLI writes: sha256 of the project root, hex.
pub fn is_project_hash(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A metadata object: string `sessionId` and a 64-hex `projectHash`.
pub fn is_metadata(v: Node<'_>) -> bool {
    v.get("sessionId").is_some_and(|s| s.is_string())
        && v.get("projectHash")
            .is_some_and(|h| is_project_hash(Some(&h.to_value())))
}

fn string_id(v: Node<'_>) -> Option<String> {
    v.get("id")
        .and_then(|i| i.as_str())
        .map(std::borrow::Cow::into_owned)
}

/// Load a recording: a JSONL file, or (when no line is a metadata object)
/// a legacy single JSON document.
pub fn load(path: &Path, limits: Limits) -> Result<Loaded> {
    load_as(path, limits, false)
}

/// [`load`] for a writer: a line of UTF-8 holding large strings is read
/// with each as a marker ([`payload::shrink`]), so that its records are
/// small (the writer reads a large string from the file as it writes it).
pub fn load_shrunk(path: &Path, limits: Limits) -> Result<Loaded> {
    load_as(path, limits, true)
}

fn load_as(path: &Path, limits: Limits, shrink: bool) -> Result<Loaded> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut lines = LineReader::of_file(file, limits.max_line_bytes);
    let mut out = Loaded::default();
    let mut map = Ordered::default();
    let mut metadata = false;
    let mut pending_corrupt: Vec<(Loc, String, Vec<u8>, bool)> = Vec::new();
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End => break,
            Next::TooLong => {
                return Err(Error::input(
                    path,
                    format!(
                        "line {} is longer than {} bytes",
                        lines.line, limits.max_line_bytes
                    ),
                ));
            }
            Next::Line => {}
        }
        out.terminated = lines.terminated;
        let loc = Loc::Line {
            line: lines.line,
            start: lines.start,
            end: lines.end(),
        };
        if lines.buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // A writer's line holding large strings: read with markers in
        // their place, where the small text reads lazily.
        if shrink
            && lines.buf.len() >= payload::LARGE
            && let Ok(text) = std::str::from_utf8(&lines.buf)
            && let Some(small) = payload::shrink(text)
            && Node::parse(small.text.as_bytes()).is_some()
        {
            let small = Arc::new(small);
            let raw = small.text.clone();
            let from = (small, lines.start);
            apply(
                &mut map,
                &mut out,
                &mut metadata,
                raw,
                None,
                loc,
                Some(from),
            );
            continue;
        }
        // Read lazily where that reads as the tree (see `Body`).
        if Node::parse(&lines.buf).is_some() {
            // A long line is handed over, not copied (it is UTF-8).
            let raw = if lines.buf.len() >= payload::LARGE {
                String::from_utf8(std::mem::take(&mut lines.buf))
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            } else {
                String::from_utf8_lossy(&lines.buf).into_owned()
            };
            apply(&mut map, &mut out, &mut metadata, raw, None, loc, None);
            continue;
        }
        // Node reads the file as UTF-8 text, each byte sequence that is not
        // UTF-8 as U+FFFD, and the line parses (0.61.0 sends the prompt
        // with U+FFFD in it): so does this reader.
        // (Only a line serde_json refuses is looked at again.)
        let parsed =
            serde_json::from_slice(&lines.buf).or_else(|e| match std::str::from_utf8(&lines.buf) {
                Ok(_) => Err(e),
                Err(_) => serde_json::from_str(&String::from_utf8_lossy(&lines.buf)),
            });
        // `JSON.parse` also takes a lone surrogate escape, and 0.61.0
        // sends it as it is; serde_json refuses it. The line is read with
        // each such escape as `\ufffd` (same length: offsets hold).
        let mut fixed = None;
        let parsed = parsed.or_else(|e| {
            let text = String::from_utf8_lossy(&lines.buf);
            let (Some(f), n) = replace_lone_surrogates(text.as_bytes()) else {
                return Err(e);
            };
            let f = String::from_utf8_lossy(&f).into_owned();
            let v = serde_json::from_str(&f).map_err(|_| e)?;
            fixed = Some((f, n));
            Ok(v)
        });
        let value: Value = match parsed {
            Ok(v) => v,
            Err(e) => {
                // The app skips it without a word (`catch {}`).
                let reason = if e.is_eof() {
                    "ends before its JSON value is complete".to_string()
                } else {
                    format!("is not JSON ({e})")
                };
                pending_corrupt.push((loc, reason, lines.buf.clone(), !lines.terminated));
                continue;
            }
        };
        let raw = match fixed {
            Some((text, n)) => {
                out.lone_surrogates.push((loc.clone(), n));
                text
            }
            None => String::from_utf8_lossy(&lines.buf).into_owned(),
        };
        apply(
            &mut map,
            &mut out,
            &mut metadata,
            raw,
            Some(value),
            loc,
            None,
        );
    }
    if !metadata || out.legacy {
        // No line was a metadata object: the legacy single-document form
        // (`loadLegacyConversationRecord`). What the lines held goes
        // first: a pretty-printed document's long line, read as a line
        // and kept as a corrupt one, was the document's size twice over.
        drop((lines, pending_corrupt, map));
        return load_document(path, limits);
    }
    for (loc, reason, raw, torn) in pending_corrupt {
        out.corrupt
            .push(CorruptRecord::new(loc, reason, &raw, torn));
    }
    out.format = Some(Format::Jsonl);
    out.records = map.into_records();
    Ok(out)
}

/// Apply one line; `shrunk`: the line was read with its large strings as
/// markers ([`load_shrunk`]), and where it starts.
fn apply(
    map: &mut Ordered,
    out: &mut Loaded,
    metadata: &mut bool,
    raw: String,
    tree: Option<Value>,
    loc: Loc,
    shrunk: Option<(Arc<Shrunk>, u64)>,
) {
    // The line becomes a record only where it is one: a `$set` line's
    // elements are taken from its text.
    static NULL: Value = Value::Null;
    let value = match &tree {
        Some(v) => Node::Tree(v),
        None => Node::parse(raw.as_bytes()).unwrap_or(Node::Tree(&NULL)),
    };
    if is_metadata(value) {
        *metadata = true;
        if value.get("messages").is_some_and(|m| m.is_array()) {
            // A legacy document written on one line.
            out.legacy = true;
        }
        out.session_id = value
            .get("sessionId")
            .and_then(|s| s.as_str())
            .map(std::borrow::Cow::into_owned);
        out.meta += 1;
        return;
    }
    if let Some(target) = value.get("$rewindTo") {
        out.meta += 1;
        map.rewind(target.as_str().as_deref().unwrap_or(""));
        return;
    }
    if let Some(set) = value.get("$set") {
        out.meta += 1;
        if let Some(sid) = set.get("sessionId").and_then(|s| s.as_str()) {
            out.session_id = Some(sid.into_owned());
        }
        if set.get("messages").is_some_and(|m| m.is_array()) {
            map.clear();
            let elements = set_elements(&raw, &loc, shrunk.as_ref());
            drop(raw);
            for (element, (raw, loc)) in elements.into_iter().enumerate() {
                let tree = tree_of(&raw);
                let mut el = Record::new(raw, tree, loc, Some(element));
                el.shrunk.clone_from(&shrunk);
                if let Some(id) = string_id(el.node()) {
                    el.id = id;
                    map.put(el);
                }
            }
        }
        return;
    }
    match string_id(value) {
        Some(id) => {
            let mut rec = Record::new(raw, tree, loc, None);
            rec.id = id;
            rec.shrunk = shrunk;
            map.put(rec);
        }
        // An object the loader does not recognise: neither sent nor kept.
        None => out.meta += 1,
    }
}

/// The elements of a `$set.messages` line that parse: verbatim text, and
/// the element's own byte range on that line (in the file, where the
/// line was read `shrunk`).
fn set_elements(raw: &str, loc: &Loc, shrunk: Option<&(Arc<Shrunk>, u64)>) -> Vec<(String, Loc)> {
    #[derive(serde::Deserialize)]
    struct Set<'a> {
        #[serde(rename = "$set", borrow)]
        set: Inner<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Inner<'a> {
        #[serde(borrow)]
        messages: Vec<&'a RawValue>,
    }
    let Ok(parsed) = serde_json::from_str::<Set<'_>>(raw) else {
        return Vec::new();
    };
    let base = raw.as_ptr() as usize;
    let (line, start) = match loc {
        Loc::Line { line, start, .. } => (*line, *start),
        Loc::Row { .. } => (0, 0),
    };
    parsed
        .set
        .messages
        .into_iter()
        .filter_map(|el| {
            let text = el.get();
            let off = text.as_ptr() as usize - base;
            // An element that does not parse is left out (checked as a
            // tree only where the lazy reading could read otherwise).
            if Node::parse(text.as_bytes()).is_none() {
                serde_json::from_str::<Value>(text).ok()?;
            }
            let (s, e) = match shrunk {
                Some((small, _)) => (small.in_line(off), small.in_line(off + text.len())),
                None => (off, off + text.len()),
            };
            Some((
                text.to_string(),
                Loc::Line {
                    line,
                    start: start + s as u64,
                    end: start + e as u64,
                },
            ))
        })
        .collect()
}

/// The legacy single-document form: `{sessionId, projectHash, …,
/// messages: […]}`, pretty-printed. Each element keeps the line it starts
/// on and its byte range.
fn load_document(path: &Path, limits: Limits) -> Result<Loaded> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, &e))?;
    if meta.len() > limits.max_document_bytes {
        return Err(Error::input(
            path,
            format!(
                "is a {}-byte JSON document, over the {}-byte limit",
                meta.len(),
                limits.max_document_bytes
            ),
        ));
    }
    let data = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    let text = std::str::from_utf8(&data)
        .map_err(|_| Error::input(path, "is not valid UTF-8"))?
        .trim_start_matches('\u{feff}');
    #[derive(serde::Deserialize)]
    struct Doc<'a> {
        #[serde(rename = "sessionId")]
        session_id: String,
        #[serde(default, borrow)]
        messages: Option<Vec<&'a RawValue>>,
    }
    // The document is read lazily where that reads as the tree.
    let whole: Value;
    let node = match Node::parse(text.as_bytes()) {
        Some(n) => n,
        None => {
            whole = serde_json::from_str(text).map_err(|e| {
                Error::input(
                    path,
                    format!("is a Gemini CLI recording that does not parse as JSON ({e})"),
                )
            })?;
            Node::Tree(&whole)
        }
    };
    if !is_metadata(node) {
        return Err(Error::not_history(
            path,
            "has no Gemini CLI metadata (`sessionId` and `projectHash`)",
        ));
    }
    let doc: Doc<'_> = serde_json::from_str(text)
        .map_err(|e| Error::input(path, format!("is not a Gemini CLI recording ({e})")))?;
    let Some(messages) = doc.messages else {
        return Err(Error::not_history(
            path,
            "is a Gemini CLI recording without a `messages` array",
        ));
    };
    let base = data.as_ptr() as usize;
    let mut map = Ordered::default();
    let mut line = 1u64;
    let mut counted = 0usize;
    for (element, el) in messages.into_iter().enumerate() {
        let raw = el.get();
        let start = raw.as_ptr() as usize - base;
        line += data[counted..start].iter().filter(|&&b| b == b'\n').count() as u64;
        counted = start;
        let loc = Loc::Line {
            line,
            start: start as u64,
            end: (start + raw.len()) as u64,
        };
        let mut rec = Record::new(raw.to_string(), tree_of(raw), loc, Some(element));
        if let Some(id) = string_id(rec.node()) {
            rec.id = id;
            map.put(rec);
        }
    }
    Ok(Loaded {
        format: Some(Format::Json),
        session_id: Some(doc.session_id),
        records: map.into_records(),
        corrupt: Vec::new(),
        meta: 1,
        terminated: data.ends_with(b"\n"),
        legacy: true,
        lone_surrogates: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> Record {
        let loc = Loc::Line {
            line: 1,
            start: 0,
            end: 0,
        };
        let mut r = Record::new(String::new(), Some(Value::Null), loc, None);
        r.id = id.into();
        r
    }

    #[test]
    fn replace_keeps_position_and_rewind_cuts_the_tail() {
        let mut m = Ordered::default();
        for id in ["a", "b", "c", "b"] {
            m.put(rec(id));
        }
        let ids: Vec<_> = m.slots.iter().flatten().map(|r| r.id.clone()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        m.rewind("b");
        let ids: Vec<_> = m.slots.iter().flatten().map(|r| r.id.clone()).collect();
        assert_eq!(ids, ["a"]);
        m.put(rec("d"));
        m.rewind("unknown");
        assert!(m.into_records().is_empty());
    }
}
