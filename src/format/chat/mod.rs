//! Provider-shaped message histories: OpenAI Chat Completions, kimi-cli
//! `context.jsonl` (OpenAI roles plus `_checkpoint`/`_usage` meta lines)
//! and Anthropic Messages, as JSON Lines or as one JSON document (an array
//! of messages, or a request body with `messages`). The dialect is told
//! from the records themselves (see `records::Builder::dialect`). Read by
//! the shared JSON record reader (`format::records`); repaired by
//! [`writer`].

pub mod profile;

use super::records::record::{
    Builder, Handlers, JsonStr, Rec, arguments_of, content_text, parse_content,
};
use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::finding::Action;
use crate::model::{Dialect, Format};
use crate::model::{Loc, Message, PartKind, Role, Slot};
use crate::source::Limits;

pub static STORE: Store = Store {
    formats: &[Format::Jsonl, Format::Json],
    dialects: &[
        Dialect::OpenAi,
        Dialect::Kimi,
        Dialect::Anthropic,
        Dialect::Unknown,
    ],
    name: "provider-shaped messages (OpenAI, kimi-cli, Anthropic)",
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: super::records::writer::new,
    },
    hooks: Hooks::NONE,
};

/// Any JSON that is left: this store is tried last, and its reader says
/// why a file is not a history when it is not.
fn detect(_head: &Head<'_>) -> Result<bool> {
    Ok(true)
}

fn open(path: &std::path::Path, limits: Limits) -> Result<Opened> {
    super::records::open(path, limits, &ANY).map(Opened::History)
}

/// Which fixes the JSON writer carries out in provider-shaped messages:
/// every one but the store edits (chunk indices, table rows).
fn supports(_: Dialect, a: &Action) -> bool {
    !matches!(
        a,
        Action::RenumberIndices
            | Action::RebuildResults { .. }
            | Action::RetypeResult { .. }
            | Action::Relink { .. }
            | Action::SplitLine { .. }
            | Action::DropThinking { .. }
            | Action::SetMessageId { .. }
            | Action::DropBlock { .. }
            | Action::RenameCall { .. }
            | Action::ReplaceImage { .. }
            | Action::DropItemId { .. }
            | Action::UnshareUuid { .. }
            | Action::SetOrdinal { .. }
            | Action::ReplaceToolReference { .. }
            | Action::RenameTool { .. }
    )
}

/// The readers of every JSON family: this store reads what no other JSON
/// store recognised from a file's first records, so a file whose family
/// shows only further in is still read by its family's reader.
pub(crate) static ANY: Handlers = Handlers {
    chat: Some(record),
    claude_code: Some(super::claude_code::record),
    codex: Some(super::codex::record),
};

/// Read one provider-shaped record.
pub(crate) fn record(b: &mut Builder, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
    let role_text = rec.role.as_deref().unwrap_or_default();
    if role_text.starts_with('_') {
        // kimi-cli meta lines: `_system_prompt`, `_checkpoint`, `_usage`.
        b.evidence.kimi = true;
        b.conv.meta_records += 1;
        return Ok(());
    }
    let role = Role::parse(role_text).ok_or_else(|| format!("has unknown role `{role_text}`"))?;
    let mut msg = Message::new(role, loc.clone());
    msg.finish_reason = rec.finish_reason;
    if rec.partial.is_some() {
        b.evidence.kimi = true;
    }
    if matches!(role, Role::Tool | Role::Developer) {
        b.evidence.openai = true;
    }
    if rec.reasoning_content.is_some() {
        b.conv.reasoning_mut().in_field = true;
    }
    match rec.reasoning_content {
        Some(JsonStr(r)) if !r.is_empty() => msg.push_at(
            PartKind::Thinking { text: r.into() },
            loc.clone(),
            Slot::Whole("reasoning_content"),
        ),
        // Stored empty: sent as it is, the field is there (a thinking-mode
        // provider that wants it back takes it).
        Some(_) => {
            let at = b.conv.messages.len();
            b.conv.reasoning_mut().empty.insert(at);
        }
        None => {}
    }
    if role == Role::Tool {
        let content = match rec.content {
            Some(c) => content_text(c),
            None => String::new(),
        };
        msg.push_at(
            PartKind::ToolResult {
                call_id: rec.tool_call_id.unwrap_or_default(),
                content: content.into(),
                is_error: None,
            },
            loc.clone(),
            Slot::Whole("content"),
        );
    } else if let Some(c) = rec.content {
        parse_content(c, &mut msg, &loc, &mut b.evidence)?;
    }
    if let Some(calls) = rec.tool_calls {
        b.evidence.openai = true;
        for (k, call) in calls.into_iter().enumerate() {
            let (name, arguments) = match call.function {
                Some(f) => (f.name.unwrap_or_default(), arguments_of(f.arguments)),
                None => (String::new(), arguments_of(None)),
            };
            msg.push_at(
                PartKind::ToolCall {
                    id: call.id.unwrap_or_default(),
                    name,
                    arguments,
                },
                loc.clone(),
                Slot::Item("tool_calls", k),
            );
        }
    }
    b.conv.messages.push(msg);
    Ok(())
}
