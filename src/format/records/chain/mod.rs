//! JSON Lines files whose records form a tree linked by an id and a
//! parent id, which their client walks back from the last record on resume
//! (pi's `id`/`parentId`, Qwen Code's `uuid`/`parentUuid`): what their
//! loaders and writers share. What differs from app to app (the member
//! names, what the client salvages from a damaged line, what it sends for
//! a call without a result, how its walk ends) is the app's: its [`App`]
//! description, its loader's walk and its writer's actions.
//!
//! Claude Code's chain is read by its own loader (`claude_code::loader`),
//! whose resume walk is modelled (`model::chain`).

pub mod writer;

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::format::records::record::replace_lone_surrogates;
use crate::model::Loc;
use crate::source::Limits;
use crate::source::lines::{LineReader, Next};

/// What an app's chain file is called and linked by.
pub trait App {
    /// The client, as its users name it ("pi").
    const CLIENT: &'static str;
    /// The member that names a record's parent (`parentId`).
    const PARENT: &'static str;
    /// What the app calls one record of the tree ("entry").
    const NODE: &'static str;
    /// What the tree is called where a re-linked record hangs from nothing
    /// ("tree": "the start of the tree").
    const WHOLE: &'static str;
    /// A new id no record has (added to `taken`), derived from `seed`:
    /// stable, so that a second repair of the same input makes the same
    /// copy.
    fn new_id(seed: &str, taken: &mut HashSet<String>) -> String;
}

/// A version 4 uuid no id in `taken` is (added to it), derived from
/// `seed`: the ids Qwen Code and Copilot CLI draw, made stable so that a
/// second repair of the same input makes the same copy.
pub fn uuid_v4(seed: &str, taken: &mut HashSet<String>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in seed.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    loop {
        let lo = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let u = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (h >> 32) as u32,
            (h >> 16) as u16,
            h as u16 & 0xfff,
            (lo >> 52) as u16 & 0xfff,
            lo & 0xffff_ffff_ffff
        );
        if taken.insert(u.clone()) {
            return u;
        }
        h = h.wrapping_add(1);
    }
}

/// One record the loader kept.
#[derive(Debug, Clone)]
pub struct Node {
    /// The line it was read from (several records may share one).
    pub loc: Loc,
    /// The record as the client holds it.
    pub value: Value,
    /// Its id (`None`: absent or not a string).
    pub id: Option<String>,
    /// Its parent's id (`None`: null, absent, empty or not a string: a
    /// root).
    pub parent: Option<String>,
    /// One of several records read from one line.
    pub glued: bool,
}

impl Node {
    /// A record read from `loc`, its id and parent taken from the members
    /// `id` and `parent`.
    pub fn new(loc: Loc, value: Value, id: &str, parent: &str, glued: bool) -> Node {
        let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
        Node {
            loc,
            id: text(id),
            parent: text(parent).filter(|s| !s.is_empty()),
            glued,
            value,
        }
    }

    /// Its `type` ("" when it has none).
    pub fn ty(&self) -> &str {
        self.value.get("type").and_then(Value::as_str).unwrap_or("")
    }
}

/// One line of a chain file, as [`each_line`] hands it over.
pub struct Line<'a> {
    pub loc: Loc,
    /// Its 1-based number.
    pub number: u64,
    /// Its bytes, without the newline.
    pub bytes: &'a [u8],
    /// The file ends on it without a newline.
    pub torn: bool,
}

/// Read the file at `path` line by line: a line longer than `limits`
/// allows is an error naming the file.
pub fn each_line(
    path: &Path,
    limits: Limits,
    mut f: impl FnMut(Line<'_>) -> Result<()>,
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut lines = LineReader::of_file(file, limits.max_line_bytes);
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End => return Ok(()),
            Next::TooLong => {
                return Err(crate::format::records::line_too_long(
                    path, lines.line, limits,
                ));
            }
            Next::Line => {}
        }
        f(Line {
            loc: Loc::Line {
                line: lines.line,
                start: lines.start,
                end: lines.end(),
            },
            number: lines.line,
            bytes: &lines.buf,
            torn: !lines.terminated,
        })?;
    }
}

/// The balanced top-level `{…}` spans of a line (strings and their
/// escapes skipped over): Qwen Code's `_recoverObjectsFromLine` reads each
/// that parses as a record of a line `JSON.parse` refuses.
pub fn balanced_objects(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut escape) = (0i64, false, false);
    let mut start: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        if escape {
            escape = false;
            continue;
        }
        if in_string {
            match c {
                b'\\' => escape = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    if let Some(s) = start.take() {
                        out.push((s, i + 1));
                    }
                } else if depth < 0 {
                    depth = 0;
                    start = None;
                }
            }
            _ => {}
        }
    }
    out
}

/// `JSON.parse` of one text: serde_json, with lone surrogate escapes
/// (which `JSON.parse` takes) read as U+FFFD, and how many there were.
pub fn parse(text: &str) -> std::result::Result<(Value, u32), serde_json::Error> {
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

/// Why a line `JSON.parse` refuses is no record.
pub fn not_json(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "ends before its JSON value is complete".to_string()
    } else {
        format!("is not JSON ({e})")
    }
}
