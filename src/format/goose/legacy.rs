//! goose's legacy sessions (`<data>/goose/sessions/<name>.jsonl`, before
//! `sessions.db`): line 1 is the `SessionMetadata` object (`description`,
//! `message_count`, `working_dir`, token counters), every other line one
//! `Message` `{role, created, content:[…]}` with camelCase content types
//! (`text`, `toolRequest`, `toolResponse`, `thinking`…). A tool request
//! and its response pair by `id`; the response lives in the next user
//! message (docs/agents-formats.md §4).
//!
//! What goose does with these files: the pre-SQLite reader fails the whole
//! session on an unparseable line; the importer into `sessions.db` skips
//! it. On every reply `fix_conversation` **drops** orphan requests and
//! orphan responses (nothing is synthesised): the findings say so.
//!
//! Repair: the shared JSON Lines writer keeps line 1 and every untouched
//! line byte for byte; it drops a torn line and removes a stray response
//! element. It never inserts a placeholder (goose has none).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::copilot_cli::{arguments, each_line, text_of};
use crate::format::records::lazy::Node;
use crate::format::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, Dialect, Format, Message, PartKind, Role, Slot, SourceInfo};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "goose legacy session (.jsonl)",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::Goose],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: crate::format::records::writer::new,
    },
    hooks: Hooks::NONE,
};

/// Only the edits that keep goose's own shapes: dropping a torn line and
/// removing a content element (a stray response). A placeholder result
/// would have to be a goose `toolResponse`, which the shared writer does
/// not write.
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(a, Action::DropRecord { .. } | Action::RemoveResult { .. })
}

fn is_metadata(m: &serde_json::Map<String, Value>) -> bool {
    m.get("role").is_none() && m.contains_key("description") && m.contains_key("message_count")
}

/// A goose `Message`: a role, an integer `created` and a content array.
fn is_message(m: &serde_json::Map<String, Value>) -> bool {
    m.get("role").and_then(Value::as_str).is_some()
        && m.get("created").is_some_and(Value::is_i64)
        && m.get("content").is_some_and(Value::is_array)
}

/// Line 1 is `SessionMetadata`, or (a file without it) a goose message.
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.extension() == Some("jsonl")
        && head
            .first_object()
            .is_some_and(|m| is_metadata(m) || is_message(m)))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Jsonl,
        Dialect::Goose,
        read,
    )?)))
}

/// The text of a tool result's content list (`[{type:"text", text}…]`);
/// one item's text is taken as it is, not copied again.
fn contents_text(v: Option<Node<'_>>) -> String {
    match v.and_then(|v| v.items()) {
        Some(items) => {
            let mut texts: Vec<Cow<'_, str>> = items
                .into_iter()
                .filter_map(|i| i.get("text").and_then(|t| t.as_str()))
                .collect();
            match texts.len() {
                1 => texts.pop().map(Cow::into_owned).unwrap_or_default(),
                _ => texts.join("\n"),
            }
        }
        None => text_of(v),
    }
}

/// Whether a line is the metadata line.
fn is_metadata_line(m: Node<'_>) -> bool {
    m.get("role").is_none() && m.get("description").is_some() && m.get("message_count").is_some()
}

fn read(path: &Path, limits: Limits, info: Arc<SourceInfo>) -> Result<Conversation> {
    let mut conv = Conversation::new(path.display().to_string(), info);
    let mut first = true;
    each_line(path, limits, &mut conv, |conv, rec, loc| {
        let is_first = std::mem::take(&mut first);
        if is_first && is_metadata_line(rec) {
            conv.meta_records += 1;
            return;
        }
        let role = match rec.get("role").and_then(|r| r.as_str()).as_deref() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => {
                let raw = rec.to_json();
                conv.corrupt.push(crate::model::CorruptRecord::new(
                    loc,
                    "is not a goose message (no `role` user or assistant)".into(),
                    raw.as_bytes(),
                    false,
                ));
                return;
            }
        };
        let mut m = Message::new(role, loc.clone());
        let items = rec.get("content").and_then(|c| c.items());
        for (k, item) in items.into_iter().flatten().enumerate() {
            let ty = item
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or_default();
            let kind = match ty.as_ref() {
                "text" => PartKind::Text {
                    text: text_of(item.get("text")).into(),
                },
                "thinking" => PartKind::Thinking {
                    text: text_of(item.get("thinking")).into(),
                },
                "toolRequest" => {
                    let call = item.get("toolCall");
                    let value = call.and_then(|c| c.get("value"));
                    PartKind::ToolCall {
                        id: text_of(item.get("id")),
                        name: text_of(value.and_then(|v| v.get("name"))),
                        arguments: arguments(value.and_then(|v| v.get("arguments"))),
                    }
                }
                "toolResponse" => {
                    let result = item.get("toolResult");
                    let ok = result
                        .and_then(|r| r.get("status"))
                        .and_then(|s| s.as_str())
                        .as_deref()
                        == Some("success");
                    let value = result.and_then(|r| r.get("value"));
                    let (content, is_error) = if ok {
                        match value {
                            // New: `{content, isError}`; legacy: a bare list.
                            Some(o) if o.is_object() => (
                                contents_text(o.get("content")),
                                o.get("isError").and_then(|e| e.as_bool()),
                            ),
                            other => (contents_text(other), Some(false)),
                        }
                    } else {
                        (text_of(result.and_then(|r| r.get("error"))), Some(true))
                    };
                    PartKind::ToolResult {
                        call_id: text_of(item.get("id")),
                        content: content.into(),
                        is_error,
                    }
                }
                "" => PartKind::Other {
                    kind: "untyped".into(),
                },
                other => PartKind::Other {
                    kind: other.to_string(),
                },
            };
            m.push_at(kind, loc.clone(), Slot::Item("content", k));
        }
        conv.messages.push(m);
    })?;
    if conv.messages.is_empty() && conv.meta_records == 0 && conv.corrupt.is_empty() {
        return Err(Error::not_history(path, "file is empty"));
    }
    Ok(conv)
}
