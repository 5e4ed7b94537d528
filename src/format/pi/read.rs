//! The entries the walk reaches, as the messages pi sends
//! (`buildSessionContext`, then `convertToLlm` and pi-ai's
//! `transformMessages`, 0.73.1):
//!
//! - with a `compaction` on the path (the last one counts): its summary
//!   first, then the entries from its `firstKeptEntryId` up to it (none
//!   when that id is not on the path), then the entries after it;
//! - `message` entries: `user`, `assistant`, `toolResult` as they are;
//!   `bashExecution` as a user message (`Ran \`cmd\`` and its output),
//!   unless `excludeFromContext`; `custom` as a user message;
//! - `custom_message` entries as a user message; `branch_summary` entries
//!   with a summary as a user message; every other entry sends nothing;
//! - an assistant message whose `stopReason` is `error` or `aborted` is
//!   not sent (pi-ai skips it).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::load::{End, Loaded};
use crate::model::{
    ArgEncoding, Arguments, Conversation, Loc, Message, PartKind, Role, Slot, SourceInfo, Text,
};

/// What one entry of the path sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The entry's message (the entry at this index of `entries`).
    Entry(usize),
    /// The compaction summary of the entry at this index.
    Summary(usize),
}

/// The entries the resume sends, in order.
pub fn sent(loaded: &Loaded) -> Vec<Sent> {
    let path = &loaded.path;
    let entries = &loaded.entries;
    let compaction = path.iter().rposition(|&i| entries[i].ty() == "compaction");
    let mut out = Vec::new();
    let push = |i: usize, out: &mut Vec<Sent>| {
        if sends(&entries[i].value) {
            out.push(Sent::Entry(i));
        }
    };
    match compaction {
        Some(c) => {
            out.push(Sent::Summary(path[c]));
            let first_kept = entries[path[c]]
                .value
                .get("firstKeptEntryId")
                .and_then(Value::as_str);
            let mut found = false;
            for &i in &path[..c] {
                if first_kept.is_some() && entries[i].id.as_deref() == first_kept {
                    found = true;
                }
                if found {
                    push(i, &mut out);
                }
            }
            for &i in &path[c + 1..] {
                push(i, &mut out);
            }
        }
        None => {
            for &i in path {
                push(i, &mut out);
            }
        }
    }
    out
}

/// Whether an entry sends a message.
fn sends(v: &Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("message") => {
            let m = v.get("message");
            match m.and_then(|m| m.get("role")).and_then(Value::as_str) {
                Some("user" | "toolResult" | "custom") => true,
                Some("assistant") => !matches!(
                    m.and_then(|m| m.get("stopReason")).and_then(Value::as_str),
                    Some("error" | "aborted")
                ),
                Some("bashExecution") => {
                    m.and_then(|m| m.get("excludeFromContext"))
                        .and_then(Value::as_bool)
                        != Some(true)
                }
                _ => false,
            }
        }
        Some("custom_message") => true,
        Some("branch_summary") => v
            .get("summary")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
        _ => false,
    }
}

pub fn conversation(loaded: Loaded, info: Arc<SourceInfo>) -> Conversation {
    let mut conv = Conversation::new(loaded.session_id.clone().unwrap_or_default(), info);
    let sent = sent(&loaded);
    let mut on_path: HashSet<usize> = HashSet::new();
    for s in &sent {
        let (Sent::Entry(i) | Sent::Summary(i)) = *s;
        on_path.insert(i);
        let e = &loaded.entries[i];
        let m = message(*s, &e.value, &e.loc);
        // The model that wrote an assistant message (`message.model`).
        if m.role == Role::Assistant
            && let Some(model) = e.value.pointer("/message/model").and_then(Value::as_str)
        {
            let at = conv.messages.len();
            conv.reasoning_mut().models.insert(at, model.to_string());
        }
        conv.messages.push(m);
    }
    conv.meta_records = loaded.meta + (loaded.entries.len() - on_path.len()) as u64;
    conv.lone_surrogates = loaded
        .lone_surrogates
        .iter()
        .filter(|(loc, _)| {
            on_path
                .iter()
                .any(|&i| loaded.entries[i].loc.line() == loc.line())
        })
        .cloned()
        .collect();
    conv.corrupt = loaded.corrupt;
    conv.unread = loaded.unread;
    // Where the walk from the last entry ends early: the entries above
    // are not sent (a missing parent), or pi never ends the walk (a cycle).
    let lost = loaded
        .entries
        .iter()
        .enumerate()
        .filter(|(i, e)| !on_path.contains(i) && sends(&e.value))
        .count();
    match &loaded.end {
        End::Cut { at, missing } => conv.parent_cuts.push(crate::model::ParentCut {
            loc: loaded.entries[*at].loc.clone(),
            missing: missing.clone(),
            cycle: false,
            lost,
        }),
        // The entry whose `parentId` closes the cycle: the last the walk
        // reached (the first of the path, root first).
        End::Cycle { at } => {
            let e = &loaded.entries[loaded.path.first().copied().unwrap_or(*at)];
            conv.parent_cuts.push(crate::model::ParentCut {
                loc: e.loc.clone(),
                missing: e.parent.clone().unwrap_or_default(),
                cycle: true,
                lost,
            });
        }
        End::Root => {}
    }
    conv
}

fn text(s: &str) -> PartKind {
    PartKind::Text {
        text: Text::from(s),
    }
}

fn message(s: Sent, v: &Value, loc: &Loc) -> Message {
    if let Sent::Summary(_) = s {
        let mut m = Message::new(Role::User, loc.clone());
        let summary = v.get("summary").and_then(Value::as_str).unwrap_or("");
        m.push_at(
            text(&format!(
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"
            )),
            loc.clone(),
            Slot::Whole("summary"),
        );
        return m;
    }
    match v.get("type").and_then(Value::as_str) {
        Some("custom_message") => {
            let mut m = Message::new(Role::User, loc.clone());
            content(v.get("content"), loc, &mut m);
            m
        }
        Some("branch_summary") => {
            let mut m = Message::new(Role::User, loc.clone());
            let summary = v.get("summary").and_then(Value::as_str).unwrap_or("");
            m.push_at(
                text(&format!(
                    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}</summary>"
                )),
                loc.clone(),
                Slot::Whole("summary"),
            );
            m
        }
        _ => {
            let msg = v.get("message").unwrap_or(&Value::Null);
            match msg.get("role").and_then(Value::as_str) {
                Some("assistant") => {
                    let mut m = Message::new(Role::Assistant, loc.clone());
                    content(msg.get("content"), loc, &mut m);
                    m
                }
                Some("toolResult") => {
                    let mut m = Message::new(Role::Tool, loc.clone());
                    let output = match msg.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(a)) => a
                            .iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => String::new(),
                    };
                    m.push_at(
                        PartKind::ToolResult {
                            call_id: str_of(msg, "toolCallId"),
                            content: Text::from(output),
                            is_error: msg.get("isError").and_then(Value::as_bool),
                        },
                        loc.clone(),
                        Slot::Whole("message"),
                    );
                    m
                }
                Some("bashExecution") => {
                    let mut m = Message::new(Role::User, loc.clone());
                    m.push_at(text(&bash_text(msg)), loc.clone(), Slot::Whole("message"));
                    m
                }
                // `user`, `custom`
                _ => {
                    let mut m = Message::new(Role::User, loc.clone());
                    content(msg.get("content"), loc, &mut m);
                    m
                }
            }
        }
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `bashExecutionToText`.
fn bash_text(msg: &Value) -> String {
    let command = msg.get("command").and_then(Value::as_str).unwrap_or("");
    let mut t = format!("Ran `{command}`\n");
    match msg.get("output").and_then(Value::as_str) {
        Some(o) if !o.is_empty() => t.push_str(&format!("```\n{o}\n```")),
        _ => t.push_str("(no output)"),
    }
    if msg.get("cancelled").and_then(Value::as_bool) == Some(true) {
        t.push_str("\n\n(command cancelled)");
    } else if let Some(code) = msg.get("exitCode").and_then(Value::as_i64)
        && code != 0
    {
        t.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    t
}

/// A message's `content`: a string, or blocks (`text`, `thinking`,
/// `toolCall`, `image`).
fn content(c: Option<&Value>, loc: &Loc, m: &mut Message) {
    match c {
        Some(Value::String(s)) => m.push_at(text(s), loc.clone(), Slot::Whole("content")),
        Some(Value::Array(blocks)) => {
            for (k, b) in blocks.iter().enumerate() {
                let kind = match b.get("type").and_then(Value::as_str) {
                    Some("text") => text(b.get("text").and_then(Value::as_str).unwrap_or("")),
                    Some("thinking") => PartKind::Thinking {
                        text: Text::from(b.get("thinking").and_then(Value::as_str).unwrap_or("")),
                    },
                    Some("toolCall") => PartKind::ToolCall {
                        id: str_of(b, "id"),
                        name: str_of(b, "name"),
                        arguments: Arguments {
                            raw: Text::from(
                                b.get("arguments")
                                    .map(Value::to_string)
                                    .unwrap_or_else(|| "{}".into()),
                            ),
                            encoding: ArgEncoding::JsonValue,
                        },
                    },
                    other => PartKind::Other {
                        kind: other.unwrap_or("block").to_string(),
                    },
                };
                m.push_at(kind, loc.clone(), Slot::Item("content", k));
            }
        }
        _ => {}
    }
}
