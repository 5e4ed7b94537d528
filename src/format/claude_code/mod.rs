//! Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`):
//! one record per line, `type` `user`/`assistant` records carrying API
//! messages, among meta records (`summary`, `progress`,
//! `file-history-snapshot`, `system`…). One API reply is written as
//! several records sharing `message.id`; they are merged into one message.

pub mod discover;
pub mod profile;

use std::borrow::Cow;

use serde::Deserialize;

pub mod loader;
pub mod writer;

use super::records::record::{Builder, Content, Evidence, Rec, json_error_short, parse_content};
use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::model::{Dialect, Format};
use crate::model::{Loc, Message, Role};
use crate::source::Limits;

pub static STORE: Store = Store {
    formats: &[Format::Jsonl, Format::Json],
    dialects: &[Dialect::ClaudeCode],
    name: "Claude Code session",
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// A JSON Lines file whose first record has a `type` and neither a `role`
/// (provider-shaped) nor a `payload` (Codex).
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(super::records::first_family(head) == Some(super::records::record::Family::ClaudeCode))
}

fn open(path: &std::path::Path, limits: Limits) -> Result<Opened> {
    loader::open(path, limits).map(Opened::History)
}

#[derive(Deserialize)]
struct CcMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

pub(crate) fn record(b: &mut Builder, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
    if !b.id_from_content
        && let Some(id) = &rec.session_id
    {
        b.conv.id = id.clone();
        b.id_from_content = true;
    }
    let ty = rec.ty.as_deref().unwrap_or_default();
    let (Some(raw), "user" | "assistant") = (rec.message, ty) else {
        b.conv.meta_records += 1;
        return Ok(());
    };
    // A session file holds its main chain; a sub-agent file holds only
    // sidechain records. Keep the kind the first message has.
    let side = rec.is_sidechain.unwrap_or(false);
    match b.cc_sidechain {
        None => b.cc_sidechain = Some(side),
        Some(s) if s != side => {
            b.conv.meta_records += 1;
            return Ok(());
        }
        _ => {}
    }
    let m: CcMessage<'_> = sonic_rs::from_str(raw.as_raw_str()).map_err(|e| {
        format!(
            "has a `message` that is not a message ({})",
            json_error_short(&e)
        )
    })?;
    let role = match m.role.as_deref() {
        Some(r) => Role::parse(r).ok_or_else(|| format!("has unknown role `{r}`"))?,
        None if ty == "assistant" => Role::Assistant,
        None => Role::User,
    };
    let mut ev = Evidence::default();
    // One API reply is written as several records sharing `message.id`.
    if role == Role::Assistant
        && m.id.is_some()
        && m.id == b.cc_last_id
        && let Some(last) = b.conv.messages.last_mut()
        && last.role == Role::Assistant
    {
        if let Some(content) = m.content {
            parse_content(content, last, &loc, &mut ev)?;
        }
        if m.stop_reason.is_some() {
            last.finish_reason = m.stop_reason;
        }
        return Ok(());
    }
    let mut msg = Message::new(role, loc.clone());
    msg.finish_reason = m.stop_reason;
    if let Some(content) = m.content {
        parse_content(content, &mut msg, &loc, &mut ev)?;
    }
    b.cc_last_id = if role == Role::Assistant { m.id } else { None };
    b.conv.messages.push(msg);
    Ok(())
}

/// The uuids of the records Claude Code's resume of `conv` sends (on the
/// chain it walks, or merged into a message on it).
pub fn resumed(conv: &crate::model::Conversation) -> impl Iterator<Item = &str> {
    conv.chain
        .iter()
        .flat_map(|c| c.records.iter())
        .filter(|r| r.unreached == crate::model::chain::Unreached::No && r.kind.is_message())
        .filter_map(|r| r.uuid.as_deref())
}

/// `resumed`, of every conversation of the session at `path`.
pub fn resumed_at(
    path: &std::path::Path,
    limits: Limits,
) -> Result<std::collections::HashSet<String>> {
    let mut src = super::open(path, limits)?;
    let mut out = std::collections::HashSet::new();
    while let Some(conv) = src.next_conversation() {
        out.extend(resumed(&conv?).map(str::to_string));
    }
    Ok(out)
}
