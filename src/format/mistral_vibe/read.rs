//! The checkpoint's context messages mapped to the common model. Each item
//! is `{"message": {...}}` in the Core's shapes (`protocol.py` 3.0.3,
//! `RustSystemMessage`, `RustUserMessage`, `RustAssistantMessage`,
//! `RustToolMessage`, lines 774-795):
//!
//! - `system` and `user`: `content`, a list of content blocks (`text`,
//!   `image`, `audio`, `resource_link`, `resource`);
//! - `assistant`: `content`, a list of parts: content blocks, `reasoning`
//!   (`content`: `text`, `summary`, `redacted`) and `tool_call` (`id`,
//!   `name`, `arguments`: `{type: json, raw, value}` or
//!   `{type: invalid_json, raw, error}`);
//! - `tool`: `tool_call_id`, `name`, `outcome` (`success`, `failure`),
//!   `content` blocks.

use std::sync::Arc;

use serde_json::Value;

use super::load::{Item, Loaded};
use crate::model::{
    ArgEncoding, Arguments, Conversation, Message, PartKind, Role, Slot, SourceInfo, Text,
};

fn texts(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

fn block(b: &Value) -> PartKind {
    match b.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => PartKind::Text {
            text: Text::from(b.get("text").and_then(Value::as_str).unwrap_or("")),
        },
        "reasoning" => {
            let parts = b
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            PartKind::Thinking {
                text: Text::from(texts(parts)),
            }
        }
        "tool_call" => {
            let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let raw = b
                .pointer("/arguments/raw")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            PartKind::ToolCall {
                id: s("id"),
                name: s("name"),
                arguments: Arguments {
                    raw: Text::from(raw),
                    encoding: ArgEncoding::JsonString,
                },
            }
        }
        other => PartKind::Other {
            kind: if other.is_empty() { "block" } else { other }.to_string(),
        },
    }
}

fn message(item: &Item) -> Message {
    let msg = item.value.get("message").unwrap_or(&Value::Null);
    let role = match msg.get("role").and_then(Value::as_str) {
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some("system") => Role::System,
        _ => Role::User,
    };
    let loc = item.loc.clone();
    let mut m = Message::new(role, loc.clone());
    let content = msg
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if role == Role::Tool {
        m.push_at(
            PartKind::ToolResult {
                call_id: msg
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                content: Text::from(texts(content)),
                is_error: msg
                    .get("outcome")
                    .and_then(Value::as_str)
                    .map(|o| o == "failure"),
            },
            loc,
            Slot::Whole("message"),
        );
        return m;
    }
    for (k, b) in content.iter().enumerate() {
        m.push_at(block(b), loc.clone(), Slot::Item("content", k));
    }
    m
}

pub fn conversation(loaded: Loaded, info: Arc<SourceInfo>) -> Conversation {
    let id = if loaded.session_id.is_empty() {
        info.path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        loaded.session_id.clone()
    };
    let mut conv = Conversation::new(id, info);
    conv.messages = loaded.messages.iter().map(message).collect();
    // The generation's documents and the journal's records are records
    // that are not messages: a session whose transcript is empty (one
    // created and not prompted yet) is not a history that lost its messages.
    conv.meta_records = loaded.documents + loaded.journal;
    conv.corrupt = loaded.corrupt;
    conv.digest_mismatches = loaded.digests;
    conv.unread = loaded.unread;
    conv
}
