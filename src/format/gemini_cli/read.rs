//! The records `loadConversationRecord` left, as messages: what
//! `convertSessionToClientHistory` sends, one message per record.
//!
//! - `user` → a user message (`content` is a string, a Part or Part[]),
//!   unless the app does not send it (text starting with `/`, `?`,
//!   `<session_context>` or `<hook_context>`, or empty);
//! - `gemini` → an assistant message: its Part[] content as it is, or in
//!   the legacy form its `thoughts[]`, its text, one call per
//!   `toolCalls[]`, then each truthy `toolCalls[].result` as the call's
//!   result. Since #26939 the app also records those results as a `user`
//!   record of their own right after: when that record answers the call,
//!   it is the call's result and the copy inside `toolCalls` is not counted
//!   again (one result per call id);
//! - `info`, `error`, `warning` → never sent (counted as metadata).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::load::{Loaded, Record};
use crate::model::{
    ArgEncoding, Arguments, Conversation, Loc, Message, PartKind, Role, Signatures, Slot,
    SourceInfo, Text,
};

pub fn conversation(loaded: Loaded, info: Arc<SourceInfo>) -> Conversation {
    let mut conv = Conversation::new(loaded.session_id.clone().unwrap_or_default(), info);
    conv.corrupt = loaded.corrupt;
    conv.meta_records = loaded.meta;
    let mut sigs = Signatures::default();
    let records = &loaded.records;
    for (i, rec) in records.iter().enumerate() {
        match kind(rec) {
            "user" if replayed(&rec.value) => {
                let mut m = Message::new(Role::User, rec.loc.clone());
                content_parts(&rec.value, &rec.loc, &mut m, &mut Vec::new());
                conv.messages.push(m);
            }
            "gemini" => {
                let pos = conv.messages.len();
                let mut m = Message::new(Role::Assistant, rec.loc.clone());
                let mut signed = Vec::new();
                if is_part_form(rec.value.get("content")) {
                    content_parts(&rec.value, &rec.loc, &mut m, &mut signed);
                } else {
                    legacy_parts(rec, &answered_after(records, i), &mut m);
                }
                if let Some(model) = rec.value.get("model").and_then(Value::as_str) {
                    sigs.models.insert(pos, model.to_string());
                }
                sigs.signed.extend(signed.into_iter().map(|p| (pos, p)));
                conv.messages.push(m);
            }
            // info / error / warning, and user records the app does not send.
            _ => conv.meta_records += 1,
        }
    }
    conv.signatures = Some(Box::new(sigs));
    // A line whose records the CLI sends (a later line may replace them).
    let sent: std::collections::BTreeSet<u64> =
        conv.messages.iter().filter_map(|m| m.loc.line()).collect();
    conv.lone_surrogates = loaded
        .lone_surrogates
        .into_iter()
        .filter(|(loc, _)| loc.line().is_some_and(|l| sent.contains(&l)))
        .collect();
    conv
}

pub fn kind(rec: &Record) -> &str {
    rec.value.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `convertSessionToClientHistory` skips user records whose text is empty
/// or starts with `/`, `?`, `<session_context>` or `<hook_context>`.
pub fn replayed(v: &Value) -> bool {
    let first = match v.get("content") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Array(a)) => match a.first() {
            None => return false,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(p) => p.get("text").and_then(Value::as_str),
        },
        Some(p @ Value::Object(_)) => p.get("text").and_then(Value::as_str),
        _ => return false,
    };
    let Some(text) = first else {
        // Not a text part: a response or media, always sent.
        return true;
    };
    let t = text.trim_start();
    if t.is_empty() {
        // Empty only when no other part holds anything.
        return v
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|a| a.len() > 1);
    }
    !(t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>"))
}

/// Part[] content that already holds calls or thoughts is sent as it is.
fn is_part_form(content: Option<&Value>) -> bool {
    let is_rich = |p: &Value| {
        p.get("functionCall").is_some() || p.get("thought").and_then(Value::as_bool) == Some(true)
    };
    match content {
        Some(Value::Array(a)) => a.iter().any(is_rich),
        Some(p @ Value::Object(_)) => is_rich(p),
        _ => false,
    }
}

/// The call ids answered by the `user` records right after record `i`
/// (the turn the app merges them into; unsent records skipped).
fn answered_after(records: &[Record], i: usize) -> HashSet<String> {
    let mut ids = HashSet::new();
    for rec in &records[i + 1..] {
        match kind(rec) {
            "info" | "error" | "warning" => continue,
            "user" => {
                for p in parts_of(rec.value.get("content")) {
                    if let Some(id) = p
                        .get("functionResponse")
                        .and_then(|r| r.get("id"))
                        .and_then(Value::as_str)
                    {
                        ids.insert(id.to_string());
                    }
                }
            }
            _ => break,
        }
    }
    ids
}

fn parts_of(content: Option<&Value>) -> Vec<&Value> {
    match content {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ (Value::Object(_) | Value::String(_))) => vec![v],
        _ => Vec::new(),
    }
}

/// `content` as parts: a string, one Part, or Part[]. `signed` gets the
/// positions of function calls that carry a `thoughtSignature`.
fn content_parts(v: &Value, loc: &Loc, m: &mut Message, signed: &mut Vec<usize>) {
    match v.get("content") {
        Some(Value::Array(a)) => {
            for (k, p) in a.iter().enumerate() {
                push_part(p, loc, Slot::Item("content", k), m, signed);
            }
        }
        Some(p @ (Value::Object(_) | Value::String(_))) => {
            push_part(p, loc, Slot::Whole("content"), m, signed)
        }
        _ => {}
    }
}

fn push_part(p: &Value, loc: &Loc, slot: Slot, m: &mut Message, signed: &mut Vec<usize>) {
    let kind = part_kind(p, None);
    if matches!(kind, PartKind::ToolCall { .. }) && p.get("thoughtSignature").is_some() {
        signed.push(m.parts.len());
    }
    if matches!(&kind, PartKind::Text { text } if text.as_str().is_empty()) && slot_is_whole(slot) {
        return;
    }
    m.push_at(kind, loc.clone(), slot);
}

fn slot_is_whole(slot: Slot) -> bool {
    matches!(slot, Slot::Whole(_))
}

/// One Gemini `Part`. `call` names the call a bare string result answers.
fn part_kind(p: &Value, call: Option<(&str, &str)>) -> PartKind {
    if let Value::String(s) = p {
        return match call {
            Some((id, _)) => PartKind::ToolResult {
                call_id: id.to_string(),
                content: Text::from(s.as_str()),
                is_error: None,
            },
            None => PartKind::Text {
                text: Text::from(s.as_str()),
            },
        };
    }
    if let Some(text) = p.get("text").and_then(Value::as_str) {
        return if p.get("thought").and_then(Value::as_bool) == Some(true) {
            PartKind::Thinking {
                text: Text::from(text),
            }
        } else {
            PartKind::Text {
                text: Text::from(text),
            }
        };
    }
    if let Some(fc) = p.get("functionCall") {
        let raw = fc
            .get("args")
            .map(|a| serde_json::to_string(a).unwrap_or_default())
            .unwrap_or_else(|| "{}".to_string());
        return PartKind::ToolCall {
            id: str_of(fc, "id"),
            name: str_of(fc, "name"),
            arguments: Arguments {
                raw: Text::from(raw),
                encoding: ArgEncoding::JsonValue,
            },
        };
    }
    if let Some(fr) = p.get("functionResponse") {
        let response = fr.get("response");
        let content = match response.and_then(|r| r.get("output")) {
            Some(Value::String(s)) => s.clone(),
            _ => response
                .map(|r| serde_json::to_string(r).unwrap_or_default())
                .unwrap_or_default(),
        };
        return PartKind::ToolResult {
            call_id: str_of(fr, "id"),
            content: Text::from(content),
            is_error: Some(response.and_then(|r| r.get("error")).is_some()),
        };
    }
    let kind = [
        "inlineData",
        "fileData",
        "executableCode",
        "codeExecutionResult",
    ]
    .into_iter()
    .find(|k| p.get(*k).is_some())
    .unwrap_or("part");
    PartKind::Other {
        kind: kind.to_string(),
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A legacy-form `gemini` record, as `convertSessionToClientHistory`
/// rebuilds it: thoughts, text, calls, then the results the following
/// user records do not already hold.
fn legacy_parts(rec: &Record, answered: &HashSet<String>, m: &mut Message) {
    let loc = &rec.loc;
    let v = &rec.value;
    if let Some(thoughts) = v.get("thoughts").and_then(Value::as_array) {
        for (k, t) in thoughts.iter().enumerate() {
            let subject = t.get("subject").and_then(Value::as_str).unwrap_or("");
            let description = t.get("description").and_then(Value::as_str).unwrap_or("");
            let text = if subject.is_empty() {
                description.to_string()
            } else {
                format!("**{subject}** {description}")
            };
            m.push_at(
                PartKind::Thinking {
                    text: Text::from(text),
                },
                loc.clone(),
                Slot::Item("thoughts", k),
            );
        }
    }
    content_parts(v, loc, m, &mut Vec::new());
    let calls = v
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (k, call) in calls.iter().enumerate() {
        let raw = call
            .get("args")
            .map(|a| serde_json::to_string(a).unwrap_or_default())
            .unwrap_or_else(|| "{}".to_string());
        m.push_at(
            PartKind::ToolCall {
                id: str_of(call, "id"),
                name: str_of(call, "name"),
                arguments: Arguments {
                    raw: Text::from(raw),
                    encoding: ArgEncoding::JsonValue,
                },
            },
            loc.clone(),
            Slot::Item("toolCalls", k),
        );
    }
    for (k, call) in calls.iter().enumerate() {
        let id = str_of(call, "id");
        let name = str_of(call, "name");
        if answered.contains(&id) {
            continue;
        }
        let results: Vec<&Value> = match call.get("result") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => continue,
            Some(Value::String(s)) if s.is_empty() => continue,
            Some(Value::Array(a)) => a.iter().collect(),
            Some(r) => vec![r],
        };
        for r in results {
            let kind = part_kind(r, Some((&id, &name)));
            m.push_at(kind, loc.clone(), Slot::Item("toolCalls", k));
        }
    }
}
