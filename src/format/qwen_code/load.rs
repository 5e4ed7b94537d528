//! Qwen Code's session loader, as 0.15.10 runs it on `--resume` and
//! `--continue` (`SessionService.loadSession`, `jsonl-utils.read`):
//!
//! - the file is read as UTF-8 text (invalid bytes become U+FFFD) line by
//!   line; each line is trimmed, blank lines skipped, and `JSON.parse`d.
//!   A value that is not an object is skipped. A line `JSON.parse` refuses
//!   is scanned for balanced `{…}` objects at its top level
//!   (`parseLineTolerant`): each one that parses is a record, the rest of
//!   the line is lost without a word. Two records glued `}{` are both
//!   read; a torn record yields nothing.
//! - the leaf is the **last record of the file**, whatever its type;
//!   `reconstructHistory` walks `parentUuid` back from it: a `parentUuid`
//!   no record has ends the walk there (the records before it are left
//!   out), and so does a `parentUuid` the walk has already passed (a
//!   cycle). Records sharing one `uuid` are merged into one (their message
//!   parts concatenated, the first record's role and parent kept).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::format::records::chain::{self, Line, parse};
use crate::model::{CorruptRecord, Loc, Unread};
use crate::source::Limits;

/// The record types Qwen Code 0.15.10 writes.
pub const KNOWN_TYPES: &[&str] = &["user", "assistant", "tool_result", "system"];

/// One record as the loader keeps it: its `uuid` and `parentUuid`, and
/// whether it is one of several records read from one line.
pub type Record = chain::Node;

/// How the walk from the leaf ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// At a record whose `parentUuid` is null.
    Root,
    /// At record `at`, whose `parentUuid` names no record of the file.
    Cut { at: usize, missing: String },
    /// At record `at`, whose `parentUuid` names a record the walk has
    /// already passed.
    Cycle { at: usize, parent: String },
    /// The last record has no `uuid`: the walk finds nothing.
    NoLeaf,
}

/// A line that held several records, or records and bytes that are none.
#[derive(Debug, Clone)]
pub struct GluedLine {
    pub loc: Loc,
    /// Records recovered from it.
    pub records: usize,
}

#[derive(Debug)]
pub struct Loaded {
    pub records: Vec<Record>,
    pub corrupt: Vec<CorruptRecord>,
    pub unread: Vec<Unread>,
    pub glued: Vec<GluedLine>,
    pub lone_surrogates: Vec<(Loc, u32)>,
    /// The walk, root first: each step the records of one uuid (indices
    /// into `records`, in file order).
    pub path: Vec<Vec<usize>>,
    pub end: End,
}

impl Loaded {
    /// The session id: the first record's `sessionId`.
    pub fn session_id(&self) -> Option<&str> {
        self.records
            .first()
            .and_then(|r| r.value.get("sessionId"))
            .and_then(Value::as_str)
    }
}

/// `_recoverObjectsFromLine`: the balanced top-level `{…}` spans of a line
/// (strings and their escapes skipped over), each kept when it parses
/// ([`chain::balanced_objects`], which the chain writer reads glued lines
/// with too).
pub fn recover_objects(line: &str) -> Vec<(usize, usize)> {
    chain::balanced_objects(line)
}

/// Load a session file as Qwen Code does.
pub fn load(path: &Path, limits: Limits) -> Result<Loaded> {
    let mut out = Loaded {
        records: Vec::new(),
        corrupt: Vec::new(),
        unread: Vec::new(),
        glued: Vec::new(),
        lone_surrogates: Vec::new(),
        path: Vec::new(),
        end: End::Root,
    };
    chain::each_line(path, limits, |line| {
        let Line {
            loc, bytes, torn, ..
        } = line;
        // Node decodes the stream as UTF-8 (a BOM dropped, each invalid
        // sequence as U+FFFD); `trim()` drops white space at both ends.
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() {
            return Ok(());
        }
        match parse(text) {
            Ok((v, n)) => {
                if n > 0 {
                    out.lone_surrogates.push((loc.clone(), n));
                }
                if v.is_object() {
                    push(&mut out, loc, v, false);
                } else {
                    out.unread.push(Unread {
                        loc,
                        kind: "a JSON value that is not an object".to_string(),
                        what: "Qwen Code skips a line that holds no object",
                    });
                }
            }
            Err(e) => {
                let spans = recover_objects(text);
                let mut found = Vec::new();
                for (s, t) in spans {
                    if let Ok((v, n)) = parse(&text[s..t]) {
                        if n > 0 {
                            out.lone_surrogates.push((loc.clone(), n));
                        }
                        found.push(v);
                    }
                }
                let n = found.len();
                let whole = n > 0 && glued_whole(text);
                if n > 0 {
                    out.glued.push(GluedLine {
                        loc: loc.clone(),
                        records: n,
                    });
                }
                if !whole {
                    let reason = if n > 0 {
                        format!(
                            "holds bytes that are no record beside the {n} record(s) Qwen Code recovers from it"
                        )
                    } else {
                        chain::not_json(&e)
                    };
                    out.corrupt.push(CorruptRecord::new(
                        loc.clone(),
                        reason,
                        bytes,
                        torn && n == 0,
                    ));
                }
                for v in found {
                    push(&mut out, loc.clone(), v, true);
                }
            }
        }
        Ok(())
    })?;
    for r in &out.records {
        let ty = r.ty();
        if !KNOWN_TYPES.contains(&ty) {
            out.unread.push(Unread {
                loc: r.loc.clone(),
                kind: if ty.is_empty() {
                    "a record without a `type`".to_string()
                } else {
                    format!("record type `{ty}`")
                },
                what: "a record type Qwen Code 0.15.10 does not write: its message, if any, is sent as it is",
            });
        }
    }
    walk(&mut out);
    Ok(out)
}

/// Whether a line is nothing but whole objects one after the other
/// (`{…}{…}`, white space between): every byte of it is recovered.
fn glued_whole(text: &str) -> bool {
    let mut at = 0;
    for (s, t) in recover_objects(text) {
        if !text[at..s].trim().is_empty() || parse(&text[s..t]).is_err() {
            return false;
        }
        at = t;
    }
    text[at..].trim().is_empty()
}

fn push(out: &mut Loaded, loc: Loc, value: Value, glued: bool) {
    out.records
        .push(Record::new(loc, value, "uuid", "parentUuid", glued));
}

/// `reconstructHistory`'s walk from the last record.
fn walk(out: &mut Loaded) {
    let mut by_uuid: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, r) in out.records.iter().enumerate() {
        if let Some(u) = &r.id {
            by_uuid.entry(u.as_str()).or_default().push(i);
        }
    }
    let Some(last) = out.records.last() else {
        return;
    };
    let Some(mut current) = last.id.clone() else {
        out.end = End::NoLeaf;
        return;
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut path: Vec<Vec<usize>> = Vec::new();
    let end = loop {
        seen.insert(current.clone());
        let Some(group) = by_uuid.get(current.as_str()) else {
            // Only a parent can be missing: the leaf's uuid is its own.
            let at = *path.last().and_then(|g| g.first()).unwrap_or(&0);
            break End::Cut {
                at,
                missing: current,
            };
        };
        path.push(group.clone());
        // The first record of the uuid names the parent.
        let Some(parent) = out.records[group[0]].parent.clone() else {
            break End::Root;
        };
        if seen.contains(&parent) {
            break End::Cycle {
                at: group[0],
                parent,
            };
        }
        current = parent;
    };
    path.reverse();
    out.path = path;
    out.end = end;
}

#[cfg(test)]
mod tests {
    use super::recover_objects;

    #[test]
    fn glued_objects_are_recovered_and_a_torn_one_is_not() {
        let line = r#"{"a":"}{"}{"b":1}"#;
        let spans = recover_objects(line);
        assert_eq!(spans, vec![(0, 10), (10, 17)]);
        assert!(recover_objects(r#"{"a":{"b":"#).is_empty());
        assert!(super::glued_whole(line));
        assert!(!super::glued_whole(r#"{"a":"x{"b":1}"#));
    }
}
