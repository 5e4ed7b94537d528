//! Kimi Code's wire journal, read as 2.1.0 reads it when it resumes an
//! agent (`AppendLogStore.read` with an `onTruncate` handler, then
//! `readEntries`; `@moonshot-ai/kimi-code` 2.1.0, `dist/main.mjs`):
//!
//! - the file is read as UTF-8 and split at `\n`; a trailing `\r` is cut,
//!   an empty line skipped, every other line `JSON.parse`d;
//! - a line that does not parse and is followed by a newline (anywhere in
//!   the file) ends the read there: the records before it are kept, and
//!   the journal is rewritten with only those (`repairWireJournal`: the
//!   original is copied once to `wire.jsonl.bak`, when no such file is
//!   there yet). Everything from that line on is lost;
//! - a last line without a newline that does not parse (a write cut short)
//!   is dropped, and the journal is rewritten without it the same way;
//! - a value that is not an object with a string `type` is skipped;
//! - the first record must be a `metadata` record with a string
//!   `protocol_version` and a numeric `created_at`, else the agent does
//!   not load ("Agent wire metadata is malformed");
//! - a journal of an older protocol version (1.0 to 1.4) is migrated
//!   record by record to 1.5 (`resolveWireMigrations`, `MIGRATIONS`), and
//!   rewritten as 1.5. Of the five steps only 1.0 to 1.1 changes what the
//!   history holds: the `toolCalls` of a `context.append_message` go from
//!   `{type, id, function: {name, arguments}}` (what `kimi migrate` writes
//!   for a kimi-cli session it imports) to `{type, id, name, arguments}`;
//!   the others change permission and goal records, which carry no
//!   context. Versions 1.0 to 1.5 are read here ([`PROTOCOLS`]); the
//!   detector leaves the others to the refusal of `format::unsupported`.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::format::records::record::replace_lone_surrogates;
use crate::model::{CorruptRecord, Loc, Unread};
use crate::source::Limits;
use crate::source::lines::{LineReader, Next};

/// The wire protocol version 2.1.0 writes.
pub const PROTOCOL: &str = "1.5";

/// The wire protocol versions this reader knows: those 2.1.0 migrates to
/// 1.5 on load (written by Kimi Code 0.20 to 0.29: 1.4; by `kimi migrate`,
/// importing a kimi-cli session: 1.0), and 1.5.
pub const PROTOCOLS: &[&str] = &["1.0", "1.1", "1.2", "1.3", "1.4", PROTOCOL];

/// One record of the journal.
#[derive(Debug, Clone)]
pub struct Record {
    pub loc: Loc,
    pub value: Value,
}

impl Record {
    pub fn ty(&self) -> &str {
        self.value.get("type").and_then(Value::as_str).unwrap_or("")
    }
}

#[derive(Debug)]
pub struct Loaded {
    /// Every record of the file that parses, also those after a line that
    /// ends the client's read (see `stop`).
    pub records: Vec<Record>,
    pub corrupt: Vec<CorruptRecord>,
    pub unread: Vec<Unread>,
    pub lone_surrogates: Vec<(Loc, u32)>,
    /// The index in `records` of the first record the client does not
    /// read: the records after a line that does not parse, mid-file.
    pub stop: Option<usize>,
}

impl Loaded {
    /// The records the client reads on resume.
    pub fn read(&self) -> &[Record] {
        &self.records[..self.stop.unwrap_or(self.records.len())]
    }
}

/// `JSON.parse` of one line: serde_json, with lone surrogate escapes
/// (which `JSON.parse` takes) read as U+FFFD, and how many there were.
fn parse(text: &str) -> std::result::Result<(Value, u32), serde_json::Error> {
    serde_json::from_str::<Value>(text)
        .map(|v| (v, 0))
        .or_else(|e| {
            let (Some(fixed), n) = replace_lone_surrogates(text.as_bytes()) else {
                return Err(e);
            };
            serde_json::from_slice::<Value>(&fixed)
                .map(|v| (v, n))
                .map_err(|_| e)
        })
}

/// Whether the first line of a file is the `metadata` record of a wire
/// journal of the protocol version this reader knows.
pub fn is_known_metadata(o: &serde_json::Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some("metadata")
        && o.get("protocol_version")
            .and_then(Value::as_str)
            .is_some_and(|v| PROTOCOLS.contains(&v))
        && o.get("created_at").is_some_and(Value::is_number)
}

/// Migration 1.0 to 1.1 (`migrateV1_0ToV1_1`) of one record: each tool
/// call of a `context.append_message` takes its `name` and `arguments`
/// out of its `function`. A record the client's migration would fail on
/// (a call without a `function` object) is left as it is, and said to be.
fn migrate_1_0(v: &mut Value) -> std::result::Result<(), ()> {
    if v.get("type").and_then(Value::as_str) != Some("context.append_message") {
        return Ok(());
    }
    let Some(calls) = v
        .pointer_mut("/message/toolCalls")
        .and_then(Value::as_array_mut)
    else {
        return Err(());
    };
    if !calls
        .iter()
        .all(|c| c.get("function").is_some_and(Value::is_object))
    {
        return Err(());
    }
    for c in calls.iter_mut() {
        let Some(o) = c.as_object_mut() else { continue };
        let Some(Value::Object(f)) = o.remove("function") else {
            continue;
        };
        o.insert("name".into(), f.get("name").cloned().unwrap_or(Value::Null));
        o.insert(
            "arguments".into(),
            f.get("arguments").cloned().unwrap_or(Value::Null),
        );
    }
    Ok(())
}

/// Load a wire journal as Kimi Code does.
pub fn load(path: &Path, limits: Limits) -> Result<Loaded> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut lines = LineReader::of_file(file, limits.max_line_bytes);
    let mut out = Loaded {
        records: Vec::new(),
        corrupt: Vec::new(),
        unread: Vec::new(),
        lone_surrogates: Vec::new(),
        stop: None,
    };
    // Whether the journal is of protocol 1.0 (its first record says).
    let mut version_1_0 = false;
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End => break,
            Next::TooLong => {
                return Err(crate::format::records::line_too_long(
                    path, lines.line, limits,
                ));
            }
            Next::Line => {}
        }
        let loc = Loc::Line {
            line: lines.line,
            start: lines.start,
            end: lines.end(),
        };
        let bytes: &[u8] = &lines.buf;
        let torn = !lines.terminated;
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if text.is_empty() {
            continue;
        }
        match parse(text) {
            Ok((mut v, n)) => {
                if n > 0 {
                    out.lone_surrogates.push((loc.clone(), n));
                }
                if out.records.is_empty() {
                    version_1_0 = v.get("protocol_version").and_then(Value::as_str) == Some("1.0");
                }
                if version_1_0 && migrate_1_0(&mut v).is_err() {
                    out.unread.push(Unread {
                        loc: loc.clone(),
                        kind: "a protocol 1.0 message without `toolCalls` of `function` objects"
                            .to_string(),
                        what: "Kimi Code's migration of it to protocol 1.1 fails, and the agent does not load; read here as it is",
                    });
                }
                if v.get("type").is_some_and(Value::is_string) {
                    out.records.push(Record { loc, value: v });
                } else {
                    out.unread.push(Unread {
                        loc,
                        kind: "a JSON value that is not a record (an object with a `type`)"
                            .to_string(),
                        what: "Kimi Code skips it on resume",
                    });
                }
            }
            Err(e) => {
                let reason = if e.is_eof() {
                    "ends before its JSON value is complete".to_string()
                } else {
                    format!("is not JSON ({e})")
                };
                out.corrupt
                    .push(CorruptRecord::new(loc, reason, bytes, torn));
                if !torn && out.stop.is_none() {
                    out.stop = Some(out.records.len());
                }
            }
        }
    }
    Ok(out)
}
