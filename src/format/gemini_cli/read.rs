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

use std::borrow::Cow;

use super::load::{Loaded, Record};
use crate::format::records::lazy::Node;
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
        match kind(rec).as_ref() {
            "user" if replayed(rec.node()) => {
                let mut m = Message::new(Role::User, rec.loc.clone());
                content_parts(rec.node(), &rec.loc, &mut m, &mut Vec::new());
                conv.messages.push(m);
            }
            "gemini" => {
                let pos = conv.messages.len();
                let mut m = Message::new(Role::Assistant, rec.loc.clone());
                let mut signed = Vec::new();
                let value = rec.node();
                if is_part_form(value.get("content")) {
                    content_parts(value, &rec.loc, &mut m, &mut signed);
                } else {
                    legacy_parts(rec, &answered_after(records, i), &mut m);
                }
                if let Some(model) = value.get("model").and_then(|m| m.as_str()) {
                    sigs.models.insert(pos, model.into_owned());
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

pub fn kind(rec: &Record) -> Cow<'_, str> {
    rec.node()
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
}

/// `convertSessionToClientHistory` skips user records whose text is empty
/// or starts with `/`, `?`, `<session_context>` or `<hook_context>`.
pub fn replayed(v: Node<'_>) -> bool {
    let first = match v.get("content") {
        Some(s) if s.is_string() => head(s),
        Some(a) if a.is_array() => match a.items().unwrap_or_default().first() {
            None => return false,
            Some(s) if s.is_string() => head(*s),
            Some(p) => p.get("text").and_then(head),
        },
        Some(p) if p.is_object() => p.get("text").and_then(head),
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
            .and_then(|c| c.items())
            .is_some_and(|a| a.len() > 1);
    }
    !(t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>"))
}

/// The start of a text, as far as [`replayed`] looks: a prompt of many MB
/// is not decoded twice.
fn head(s: Node<'_>) -> Option<Cow<'_, str>> {
    let h = s.str_head(64 * 1024)?;
    if h.trim_start().is_empty() {
        s.as_str()
    } else {
        Some(h)
    }
}

/// Part[] content that already holds calls or thoughts is sent as it is.
fn is_part_form(content: Option<Node<'_>>) -> bool {
    let is_rich = |p: &Node<'_>| {
        p.get("functionCall").is_some() || p.get("thought").and_then(|t| t.as_bool()) == Some(true)
    };
    match content {
        Some(a) if a.is_array() => a.items().unwrap_or_default().iter().any(is_rich),
        Some(p) if p.is_object() => is_rich(&p),
        _ => false,
    }
}

/// The call ids answered by the `user` records right after record `i`
/// (the turn the app merges them into; unsent records skipped).
fn answered_after(records: &[Record], i: usize) -> HashSet<String> {
    let mut ids = HashSet::new();
    for rec in &records[i + 1..] {
        match kind(rec).as_ref() {
            "info" | "error" | "warning" => continue,
            "user" => {
                for p in parts_of(rec.node().get("content")) {
                    if let Some(id) = p
                        .get("functionResponse")
                        .and_then(|r| r.get("id"))
                        .and_then(|i| i.as_str())
                    {
                        ids.insert(id.into_owned());
                    }
                }
            }
            _ => break,
        }
    }
    ids
}

fn parts_of(content: Option<Node<'_>>) -> Vec<Node<'_>> {
    match content {
        Some(a) if a.is_array() => a.items().unwrap_or_default(),
        Some(v) if v.is_object() || v.is_string() => vec![v],
        _ => Vec::new(),
    }
}

/// `content` as parts: a string, one Part, or Part[]. `signed` gets the
/// positions of function calls that carry a `thoughtSignature`.
fn content_parts(v: Node<'_>, loc: &Loc, m: &mut Message, signed: &mut Vec<usize>) {
    match v.get("content") {
        Some(a) if a.is_array() => {
            for (k, p) in a.items().unwrap_or_default().into_iter().enumerate() {
                push_part(p, loc, Slot::Item("content", k), m, signed);
            }
        }
        Some(p) if p.is_object() || p.is_string() => {
            push_part(p, loc, Slot::Whole("content"), m, signed)
        }
        _ => {}
    }
}

fn push_part(p: Node<'_>, loc: &Loc, slot: Slot, m: &mut Message, signed: &mut Vec<usize>) {
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
fn part_kind(p: Node<'_>, call: Option<(&str, &str)>) -> PartKind {
    if let Some(s) = p.as_str() {
        return match call {
            Some((id, _)) => PartKind::ToolResult {
                call_id: id.to_string(),
                content: Text::from(s.into_owned()),
                is_error: None,
            },
            None => PartKind::Text {
                text: Text::from(s.into_owned()),
            },
        };
    }
    if let Some(text) = p.get("text").and_then(|t| t.as_str()) {
        return if p.get("thought").and_then(|t| t.as_bool()) == Some(true) {
            PartKind::Thinking {
                text: Text::from(text.into_owned()),
            }
        } else {
            PartKind::Text {
                text: Text::from(text.into_owned()),
            }
        };
    }
    if let Some(fc) = p.get("functionCall") {
        let raw = fc
            .get("args")
            .map(|a| a.to_json())
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
        let content = match response
            .and_then(|r| r.get("output"))
            .and_then(|o| o.as_str())
        {
            Some(s) => s.into_owned(),
            _ => response.map(|r| r.to_json()).unwrap_or_default(),
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
    .find(|k| p.get(k).is_some())
    .unwrap_or("part");
    PartKind::Other {
        kind: kind.to_string(),
    }
}

fn str_of(v: Node<'_>, key: &str) -> String {
    v.get(key)
        .and_then(|s| s.as_str())
        .map(Cow::into_owned)
        .unwrap_or_default()
}

/// A legacy-form `gemini` record, as `convertSessionToClientHistory`
/// rebuilds it: thoughts, text, calls, then the results the following
/// user records do not already hold.
fn legacy_parts(rec: &Record, answered: &HashSet<String>, m: &mut Message) {
    let loc = &rec.loc;
    let v = rec.node();
    if let Some(thoughts) = v.get("thoughts").and_then(|t| t.items()) {
        for (k, t) in thoughts.into_iter().enumerate() {
            let subject = t
                .get("subject")
                .and_then(|s| s.as_str())
                .unwrap_or_default();
            let description = t
                .get("description")
                .and_then(|s| s.as_str())
                .unwrap_or_default();
            let text = if subject.is_empty() {
                description.into_owned()
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
        .and_then(|c| c.items())
        .unwrap_or_default();
    for (k, call) in calls.iter().enumerate() {
        let call = *call;
        let raw = call
            .get("args")
            .map(|a| a.to_json())
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
        let call = *call;
        let id = str_of(call, "id");
        let name = str_of(call, "name");
        if answered.contains(&id) {
            continue;
        }
        let results: Vec<Node<'_>> = match call.get("result") {
            None => continue,
            Some(r) if r.is_null() || r.as_bool() == Some(false) => continue,
            Some(r) if r.is_empty_str() => continue,
            Some(r) if r.is_array() => r.items().unwrap_or_default(),
            Some(r) => vec![r],
        };
        for r in results {
            let kind = part_kind(r, Some((&id, &name)));
            m.push_at(kind, loc.clone(), Slot::Item("toolCalls", k));
        }
    }
}
