//! Conversation datasets: one whole conversation per row, as training and
//! evaluation data keeps them. Here in JSON Lines, one row a line:
//!
//! - `{"messages": [...], "tools": [...]}`: OpenAI's fine-tuning format,
//!   also what TRL, axolotl and LLaMA-Factory read (dialect `openai`);
//! - `{"conversations": [{"from": "human", "value": ...}, ...]}`: ShareGPT
//!   (dialect `sharegpt`).
//!
//! Recognised by content: the first record is an object whose `messages`
//! (or `conversations`, or the `--messages-column` member) is an array.
//! Each row is read on its own ([`row::read_row`]) into one conversation,
//! named by its `id` member (`--id-column`) or its line; a row that does
//! not parse is a finding of that row, never the end of the read. What
//! trainers and uploaders do with each pattern is in [`profile`]; the
//! repaired copy ([`writer`]) keeps every row, in order, and every row it
//! does not edit byte for byte.

pub mod columnar;
pub mod profile;
pub mod row;
pub mod sharegpt;
pub mod writer;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::model::{Conversation, Dialect, Format, Loc, SourceInfo};
use crate::source::compressed::Text;
use crate::source::lines::{LineReader, Next};
use crate::source::{Columns, Limits, Source};
pub use row::{Row, Shape, read_row};

pub static STORE: Store = Store {
    name: "conversation datasets (JSON Lines: messages, ShareGPT)",
    formats: &[Format::DatasetJsonl],
    dialects: &[Dialect::OpenAi, Dialect::ShareGpt],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// The member that holds the rows' conversations, and their shape, as the
/// first record of `head` shows them; `None`: not a dataset.
fn shape_of(
    first: &serde_json::Map<String, serde_json::Value>,
    columns: Columns,
) -> Option<(String, Shape)> {
    let turns_are_sharegpt = |v: &serde_json::Value| {
        v.as_array()
            .and_then(|a| a.first())
            .is_some_and(|t| t.get("from").is_some())
    };
    if let Some(name) = columns.messages {
        let v = first.get(name)?;
        let shape = if turns_are_sharegpt(v) {
            Shape::ShareGpt
        } else {
            Shape::Messages
        };
        return Some((name.to_string(), shape));
    }
    // A record with a `role` is a message of a log, not a row.
    if first.contains_key("role") {
        return None;
    }
    if first
        .get("messages")
        .is_some_and(serde_json::Value::is_array)
    {
        return Some(("messages".into(), Shape::Messages));
    }
    if first
        .get("conversations")
        .is_some_and(serde_json::Value::is_array)
    {
        return Some(("conversations".into(), Shape::ShareGpt));
    }
    None
}

/// A JSON Lines file (a `.json` document with `messages` is one request
/// body, the provider-shaped messages' store) whose first record is a row.
fn detect(head: &Head<'_>) -> Result<bool> {
    if head.extension() == Some("json") {
        return Ok(false);
    }
    Ok(head
        .first_object()
        .is_some_and(|o| shape_of(o, head.limits.columns).is_some()))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let head = super::read_head(path)?;
    let head = Head::new(path, head.strip_prefix(BOM).unwrap_or(&head), limits);
    let (member, shape) = head
        .first_object()
        .and_then(|o| shape_of(o, limits.columns))
        .ok_or_else(|| {
            Error::not_history(
                path,
                match limits.columns.messages {
                    Some(m) => format!("its first row has no `{m}` member"),
                    None => "its first row has no `messages` or `conversations` array".into(),
                },
            )
        })?;
    let text = Text::open(path)?;
    let len = text.len_hint();
    let dialect = match shape {
        Shape::Messages => Dialect::OpenAi,
        Shape::ShareGpt => Dialect::ShareGpt,
    };
    Ok(Opened::History(Box::new(Rows {
        path: path.to_path_buf(),
        lines: LineReader::new(text.buffered(), limits.max_line_bytes).with_len(len),
        limits,
        member,
        shape,
        id: limits.columns.id.unwrap_or("id"),
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format: Format::DatasetJsonl,
            dialect,
        }),
        rows: 0,
        done: false,
    })))
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The rows of a dataset in JSON Lines, one conversation each, read as
/// they are asked for.
struct Rows {
    path: PathBuf,
    lines: LineReader<std::io::BufReader<Text>>,
    limits: Limits,
    member: String,
    shape: Shape,
    id: &'static str,
    info: Arc<SourceInfo>,
    rows: u64,
    done: bool,
}

impl Source for Rows {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        if self.done {
            return None;
        }
        loop {
            match self.lines.next_line() {
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::io(&self.path, &e)));
                }
                Ok(Next::End) => {
                    self.done = true;
                    return (self.rows == 0)
                        .then(|| Err(Error::not_history(&self.path, "holds no rows")));
                }
                Ok(Next::TooLong) => {
                    self.done = true;
                    return Some(Err(crate::format::records::line_too_long(
                        &self.path,
                        self.lines.line,
                        self.limits,
                    )));
                }
                Ok(Next::Line) => {}
            }
            let mut bytes: &[u8] = &self.lines.buf;
            let mut start = self.lines.start;
            if self.lines.line == 1
                && let Some(rest) = bytes.strip_prefix(BOM)
            {
                bytes = rest;
                start += BOM.len() as u64;
            }
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.rows += 1;
            return Some(Ok(self.row(bytes, self.lines.line, start)));
        }
    }
}

impl Rows {
    /// The conversation of the row on line `line`, which starts at byte
    /// `start` of the file.
    fn row(&self, bytes: &[u8], line: u64, start: u64) -> Conversation {
        let whole = Loc::Line {
            line,
            start,
            end: start + bytes.len() as u64,
        };
        let damaged = |reason: String| {
            let mut conv = Conversation::new(format!("line {line}"), self.info.clone());
            conv.corrupt.push(crate::model::CorruptRecord::new(
                whole.clone(),
                reason,
                bytes,
                false,
            ));
            conv
        };
        if memchr::memchr(0, bytes).is_some() {
            return damaged("contains NUL bytes".into());
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return damaged("is not valid UTF-8".into());
        };
        let members: HashMap<Cow<'_, str>, &RawValue> = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let reason = if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                    "is a JSON value but not an object (a dataset row)".to_string()
                } else {
                    format!(
                        "is not valid JSON ({})",
                        crate::format::records::record::json_error(&e)
                    )
                };
                return damaged(reason);
            }
        };
        let name = members
            .get(self.id)
            .and_then(
                |v| match serde_json::from_str::<serde_json::Value>(v.get()) {
                    Ok(serde_json::Value::String(s)) => Some(s),
                    Ok(n @ serde_json::Value::Number(_)) => Some(n.to_string()),
                    _ => None,
                },
            )
            .unwrap_or_else(|| format!("line {line}"));
        let Some(messages) = members.get(self.member.as_str()) else {
            let mut conv = damaged(format!("has no `{}` member", self.member));
            conv.id = name;
            return conv;
        };
        let offset = start + (messages.get().as_ptr() as usize - text.as_ptr() as usize) as u64;
        let at = |r: std::ops::Range<usize>| Loc::Line {
            line,
            start: offset + r.start as u64,
            end: offset + r.end as u64,
        };
        read_row(
            &Row {
                messages: messages.get(),
                shape: self.shape,
                name,
                at: &at,
                whole,
            },
            self.info.clone(),
        )
    }
}
