//! Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`): one
//! `{timestamp, type, payload}` line each; `response_item` lines carry the
//! model's input and output items (messages, reasoning, function calls and
//! their outputs), the rest is session metadata and events.

pub mod discover;
pub mod profile;

use std::borrow::Cow;

use serde::Deserialize;

use super::records::record::{
    Builder, Content, Evidence, Handlers, RawValue, Rec, StrOrRaw, arguments_of, content_text,
    json_error_short, parse_content,
};
use super::store::{AfterReplace, Head, Hooks, Opened, Probe, Store, Writing};

mod home;
mod projection;
mod writer;
use crate::error::Result;
use crate::finding::Action;
use crate::model::{
    ArgEncoding, Arguments, Base, Loc, Message, Ordinal, Paging, Parent, PartKind, Role, Slot,
    Unread,
};
use crate::model::{Dialect, Format};
use crate::source::Limits;

pub static STORE: Store = Store {
    formats: &[Format::Jsonl, Format::Json],
    dialects: &[Dialect::Codex],
    name: "Codex rollout",
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    hooks: Hooks {
        after_replace: Some(AfterReplace {
            run: after_replace,
            settles: &[crate::finding::profile::Pattern::ProjectionOutOfStep],
        }),
        ..Hooks::NONE
    },
};

/// A JSON Lines file whose first record has `type` and `payload`.
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(super::records::first_family(head) == Some(super::records::record::Family::Codex))
}

/// What the rollout writer does (`writer.rs`): whole lines dropped,
/// retyped, given a call_id or a name of their own, or inserted after a
/// call.
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::DropRepeat { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::RetypeResult { .. }
            | Action::RenameCall { .. }
            | Action::RenameTool { .. }
            | Action::DropItemId { .. }
            | Action::SetOrdinal { .. }
    )
}

/// After `repair --in-place` replaced the rollout at `path`: Codex's
/// projection of its thread indexed the old bytes (by offset and
/// ordinal), so it is reset, and Codex rebuilds it from the rollout on
/// its next load (measured with 0.169.0; left in place, the thread's
/// later turns are never indexed, and `fork` refuses it when the rollout
/// got shorter). Says what was done, or None when the thread has no
/// projection. With `only_if_behind` (the rollout was not replaced), only
/// a projection that has read past the rollout's end is reset. Ok: it was
/// reset; Err: it could not be.
pub fn after_replace(
    path: &std::path::Path,
    only_if_behind: bool,
) -> Option<std::result::Result<String, String>> {
    #[derive(Deserialize)]
    struct First {
        #[serde(default)]
        payload: Option<Id>,
    }
    #[derive(Deserialize)]
    struct Id {
        #[serde(default)]
        id: Option<String>,
    }
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut first).ok()?;
    let thread = serde_json::from_str::<First>(&first).ok()?.payload?.id?;
    let p = projection::state(path, &thread)?;
    if only_if_behind && plain_len(path)? >= p.next_byte {
        return None;
    }
    Some(match projection::reset(&p.store, &thread) {
        Ok(_) => Ok(format!(
            "Codex's projection of thread {thread} in {} (it had read {} bytes, ordinals below {}) was reset: Codex rebuilds it from the repaired rollout on its next load",
            p.store.display(),
            p.next_byte,
            p.next_ordinal
        )),
        Err(e) => Err(format!(
            "Codex's projection of thread {thread} in {} could not be reset ({e}): it indexes the rollout as it was, so Codex indexes none of the thread's later turns and may refuse to fork it; delete its rows for the thread with Codex closed",
            p.store.display()
        )),
    })
}

/// The length of the rollout at `path` as Codex reads it (a `.zst` one
/// decompressed).
fn plain_len(path: &std::path::Path) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    if path.extension().is_some_and(|e| e == "zst") {
        let mut dec = zstd::stream::read::Decoder::new(file).ok()?;
        std::io::copy(&mut dec, &mut std::io::sink()).ok()
    } else {
        file.metadata().ok().map(|m| m.len())
    }
}

/// This store reads its own records only (the detector found them first).
static OWN: Handlers = Handlers {
    chat: None,
    codex: Some(record),
    claude_code: None,
};

fn open(path: &std::path::Path, limits: Limits) -> Result<Opened> {
    super::records::open(path, limits, &OWN).map(Opened::History)
}

#[derive(Deserialize)]
struct CodexItem<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    summary: Option<Content<'a>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<RawValue<'a>>,
    #[serde(default)]
    input: Option<StrOrRaw>,
    #[serde(default)]
    call_id: Option<String>,
    /// Decoded from the payload's text as it is read (a tool's output
    /// of tens of MB, copied once more as a `LazyValue`).
    #[serde(default)]
    output: Option<StrOrRaw>,
    #[serde(borrow, default)]
    action: Option<RawValue<'a>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow, default)]
    encrypted_content: Option<Cow<'a, str>>,
}

/// The kinds of rollout line (`RolloutItem`) Codex 0.169.0 writes; the
/// reader reads the history from `session_meta`, `response_item`,
/// `compacted` and `event_msg`, and keeps the others as metadata.
const LINE_KINDS: &[&str] = &[
    "session_meta",
    "response_item",
    "compacted",
    "event_msg",
    "turn_context",
    "world_state",
    "token_usage_record",
    "dynamic_tools_updated",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "realtime_item",
    "rollout_reference",
];

pub(crate) fn record(b: &mut Builder, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
    let ty = rec.ty.as_deref().unwrap_or_default();
    let Some(payload) = rec.payload else {
        b.conv.meta_records += 1;
        return Ok(());
    };
    if ty == "session_meta" && b.records == 0 && b.conv.paging.is_none() {
        session_meta(b, payload.as_raw_str(), &loc);
    }
    if let Some(paging) = b.conv.paging.as_deref_mut() {
        paging
            .records
            .push((loc.clone(), ordinal(rec.ordinal.as_ref())));
    }
    match ty {
        "response_item" => item(b, payload.as_raw_str(), &loc, true),
        "compacted" => compacted(b, payload.as_raw_str(), &loc),
        "session_meta" => {
            #[derive(Deserialize)]
            struct Meta {
                #[serde(default)]
                id: Option<String>,
            }
            if let Ok(Meta { id: Some(id) }) = sonic_rs::from_str::<Meta>(payload.as_raw_str())
                && !b.id_from_content
            {
                b.conv.id = id;
                b.id_from_content = true;
            }
            b.conv.meta_records += 1;
            Ok(())
        }
        "event_msg" => {
            event(b, payload.as_raw_str());
            b.conv.meta_records += 1;
            Ok(())
        }
        known if LINE_KINDS.contains(&known) => {
            b.conv.meta_records += 1;
            Ok(())
        }
        other => {
            b.conv.unread.push(Unread {
                loc,
                kind: other.to_string(),
                what: "a kind of rollout line this reader does not know; what it holds was not read",
            });
            b.conv.meta_records += 1;
            Ok(())
        }
    }
}

/// A line's `ordinal` as stored.
fn ordinal(raw: Option<&RawValue<'_>>) -> Ordinal {
    match raw.map(|r| r.as_raw_str().trim().parse::<u64>()) {
        None => Ordinal::Missing,
        Some(Ok(n)) => Ordinal::At(n),
        Some(Err(_)) => Ordinal::Invalid,
    }
}

/// The first line's `session_meta`: whether the history is paginated
/// (`history_mode`, Codex 0.146 and later: every line then carries an
/// ordinal) and, for a fork's continuation, the history it continues
/// (`history_base`).
fn session_meta(b: &mut Builder, payload: &str, loc: &Loc) {
    #[derive(Deserialize)]
    struct HistoryBase {
        #[serde(default)]
        thread_id: Option<String>,
        #[serde(default)]
        end_ordinal_exclusive: Option<u64>,
    }
    #[derive(Deserialize)]
    struct Meta {
        /// The thread's id.
        #[serde(default)]
        id: Option<String>,
        /// The version of Codex that started the session.
        #[serde(default)]
        cli_version: Option<String>,
        #[serde(default)]
        history_mode: Option<String>,
        #[serde(default)]
        history_base: Option<HistoryBase>,
    }
    let Ok(meta) = sonic_rs::from_str::<Meta>(payload) else {
        return;
    };
    b.conv.client_version = meta.cli_version;
    match meta.history_mode.as_deref() {
        None | Some("legacy") => return,
        Some("paginated") => {}
        Some(other) => {
            b.conv.unread.push(Unread {
                loc: loc.clone(),
                kind: format!("session_meta history_mode `{other}`"),
                what: "a history mode this reader does not know; the lines were read as a legacy rollout's",
            });
            return;
        }
    }
    let mut paging = Paging::new(loc.clone());
    paging.projection = meta
        .id
        .as_deref()
        .and_then(|thread| projection::state(&b.conv.source.path, thread));
    if let Some(HistoryBase {
        thread_id: Some(thread),
        end_ordinal_exclusive,
    }) = meta.history_base
    {
        let parent = home::find_rollout(&b.conv.source.path, &thread);
        if matches!(parent, Parent::Unknown) {
            // Codex replays the base's records before this file's; out of
            // a Codex home the base cannot be found, so they went unread.
            // (Missing: `missing-fork-parent`; found: the base is a
            // rollout of the home, read as its own history.)
            let before = end_ordinal_exclusive
                .map(|n| format!("its records before ordinal {n}"))
                .unwrap_or_else(|| "its records".to_string());
            b.conv.unread.push(Unread {
                loc: loc.clone(),
                kind: format!("session_meta history_base (thread {thread}, {before})"),
                what: "a fork's base, which Codex replays before this file's lines; this file is not in a Codex home (sessions/ or archived_sessions/), so the base was neither found nor read",
            });
        }
        paging.base = Some(Base {
            loc: loc.clone(),
            thread,
            end_exclusive: end_ordinal_exclusive,
            parent,
        });
    }
    b.conv.paging = Some(Box::new(paging));
}

/// A `compacted` line. One that carries `replacement_history` is the new
/// base of the thread: Codex resumes from those items and replays only what
/// follows, so everything read before it is not sent. A legacy one (no
/// `replacement_history`) is rebuilt as Codex rebuilds it
/// (`build_compacted_history`): the user messages so far, then the
/// summary (`message`) as one more user message; the model's items before
/// it (its messages, calls and their outputs) are not sent.
fn compacted(b: &mut Builder, payload: &str, loc: &Loc) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Compacted<'a> {
        #[serde(borrow, default)]
        replacement_history: Option<Vec<RawValue<'a>>>,
        #[serde(borrow, default)]
        message: Option<Cow<'a, str>>,
    }
    let c: Compacted<'_> = sonic_rs::from_str(payload).map_err(|e| {
        format!(
            "has a `compacted` payload that is not one ({})",
            json_error_short(&e)
        )
    })?;
    b.conv.meta_records += 1;
    let Some(history) = c.replacement_history else {
        b.conv.messages.retain(|m| {
            m.role == Role::User
                && m.parts
                    .iter()
                    .all(|p| !matches!(p.kind, PartKind::ToolResult { .. }))
        });
        if let Some(summary) = c.message.filter(|s| !s.is_empty()) {
            let mut m = Message::new(Role::User, loc.clone());
            m.push(
                PartKind::Text {
                    text: summary.into_owned().into(),
                },
                loc.clone(),
            );
            b.conv.messages.push(m);
        }
        b.codex_open_assistant = false;
        b.codex_turns.clear();
        return Ok(());
    };
    b.conv.messages.clear();
    b.codex_open_assistant = false;
    b.codex_turns.clear();
    for raw in history {
        item(b, raw.as_raw_str(), loc, false)?;
    }
    Ok(())
}

/// Events are metadata, except the two that shape the history Codex
/// rebuilds: a user turn starts (`user_message`), and
/// `thread_rolled_back{num_turns}` takes back the last user turns.
fn event(b: &mut Builder, payload: &str) {
    #[derive(Deserialize)]
    struct Event<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<Cow<'a, str>>,
        #[serde(default)]
        num_turns: Option<u64>,
        #[serde(borrow, default)]
        item: Option<EventItem<'a>>,
    }
    #[derive(Deserialize)]
    struct EventItem<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<Cow<'a, str>>,
    }
    let Ok(e) = sonic_rs::from_str::<Event<'_>>(payload) else {
        return;
    };
    match e.ty.as_deref() {
        // Codex 0.148 and later writes a user turn as `item_completed`
        // with a `UserMessage` item (0.169.0 writes no `user_message`
        // event at all), after the user `response_item` it sends.
        Some("item_completed")
            if e.item.as_ref().and_then(|i| i.ty.as_deref()) == Some("UserMessage") =>
        {
            b.codex_open_assistant = false;
            let len = b.conv.messages.len();
            let start = match b.conv.messages.last() {
                Some(m) if m.role == Role::User => len - 1,
                _ => len,
            };
            // One turn, when a `user_message` event marked it already.
            if b.codex_turns.last() != Some(&start) {
                b.codex_turns.push(start);
            }
        }
        Some("user_message") => {
            // A new turn: the model's next items are a new message.
            b.codex_open_assistant = false;
            // Newer rollouts write the prompt as a user response_item just
            // before the event: the turn starts at that message.
            let len = b.conv.messages.len();
            let start = match b.conv.messages.last() {
                Some(m) if m.role == Role::User => len - 1,
                _ => len,
            };
            b.codex_turns.push(start);
        }
        Some("thread_rolled_back") => {
            let n = e.num_turns.unwrap_or(0) as usize;
            if n == 0 || b.codex_turns.is_empty() {
                return;
            }
            let keep = b.codex_turns.len().saturating_sub(n);
            let cut = b.codex_turns[keep.min(b.codex_turns.len() - 1)];
            b.codex_turns.truncate(keep);
            b.conv.messages.truncate(cut);
            b.codex_open_assistant = false;
        }
        _ => {}
    }
}

/// The item type as a constant, kept in the part's slot: Codex pairs an
/// output with a call of the matching type only.
fn kind_static(kind: &str) -> &'static str {
    match kind {
        "function_call" => "function_call",
        "custom_tool_call" => "custom_tool_call",
        "local_shell_call" => "local_shell_call",
        "tool_search_call" => "tool_search_call",
        "function_call_output" => "function_call_output",
        "custom_tool_call_output" => "custom_tool_call_output",
        "local_shell_call_output" => "local_shell_call_output",
        "tool_search_output" => "tool_search_output",
        "reasoning" => "reasoning",
        _ => "item",
    }
}

/// One `response_item` payload (or an item of a `replacement_history`).
fn item(b: &mut Builder, payload: &str, loc: &Loc, alone: bool) -> Result<(), String> {
    let loc = loc.clone();
    let item: CodexItem<'_> = sonic_rs::from_str(payload).map_err(|e| {
        format!(
            "has a `payload` that is not a response item ({})",
            json_error_short(&e)
        )
    })?;
    let kind = item.ty.as_deref().unwrap_or_default();
    let slot = Slot::Whole(kind_static(kind));
    // Codex (0.169.0) sends an item with the `id` it was stored with.
    if let Some(id) = &item.id {
        b.conv.item_ids.push(crate::model::ItemId {
            loc: loc.clone(),
            kind: kind.to_string(),
            id: id.clone(),
            alone,
        });
    }
    let mut ev = Evidence::default();
    match kind {
        "message" => {
            let role_text = item.role.as_deref().unwrap_or("assistant");
            let role =
                Role::parse(role_text).ok_or_else(|| format!("has unknown role `{role_text}`"))?;
            if role == Role::Assistant {
                let msg = assistant(b, &loc);
                if let Some(c) = item.content {
                    parse_content(c, msg, &loc, &mut ev)?;
                }
            } else {
                b.codex_open_assistant = false;
                let mut msg = Message::new(role, loc.clone());
                if let Some(c) = item.content {
                    parse_content(c, &mut msg, &loc, &mut ev)?;
                }
                b.conv.messages.push(msg);
            }
        }
        "reasoning" => {
            if let Some(problem) = item
                .encrypted_content
                .as_deref()
                .and_then(crate::model::sealed::fernet_problem)
            {
                b.conv.sealed.push(crate::model::sealed::Sealed {
                    loc: loc.clone(),
                    kind: kind.to_string(),
                    len: item.encrypted_content.as_deref().map_or(0, str::len),
                    problem,
                    alone,
                });
            }
            let mut text = String::new();
            for c in [item.summary, item.content].into_iter().flatten() {
                let t = content_text(c);
                if !t.is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
            }
            assistant(b, &loc).push_at(PartKind::Thinking { text: text.into() }, loc.clone(), slot);
        }
        "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
            let (name, arguments) = match kind {
                "function_call" => (item.name.unwrap_or_default(), arguments_of(item.arguments)),
                "custom_tool_call" => (
                    item.name.unwrap_or_default(),
                    Arguments {
                        raw: item.input.map(|r| r.0).unwrap_or_default().into(),
                        encoding: ArgEncoding::Freeform,
                    },
                ),
                "tool_search_call" => (
                    "tool_search".to_string(),
                    Arguments {
                        raw: item
                            .arguments
                            .map(|r| r.as_raw_str().to_string())
                            .unwrap_or_default()
                            .into(),
                        encoding: ArgEncoding::Freeform,
                    },
                ),
                _ => (
                    "local_shell".to_string(),
                    Arguments {
                        raw: item
                            .action
                            .map(|r| r.as_raw_str().to_string())
                            .unwrap_or_default()
                            .into(),
                        encoding: ArgEncoding::JsonValue,
                    },
                ),
            };
            let id = item.call_id.or(item.id).unwrap_or_default();
            assistant(b, &loc).push_at(
                PartKind::ToolCall {
                    id,
                    name,
                    arguments,
                },
                loc.clone(),
                slot,
            );
        }
        "function_call_output"
        | "custom_tool_call_output"
        | "local_shell_call_output"
        | "tool_search_output" => {
            b.codex_open_assistant = false;
            let mut msg = Message::new(Role::Tool, loc.clone());
            msg.push_at(
                PartKind::ToolResult {
                    call_id: item.call_id.unwrap_or_default(),
                    content: item.output.map(|r| r.0).unwrap_or_default().into(),
                    is_error: None,
                },
                loc.clone(),
                slot,
            );
            b.conv.messages.push(msg);
        }
        other => {
            if !ITEM_KINDS.contains(&other) {
                b.conv.unread.push(Unread {
                    loc: loc.clone(),
                    kind: format!("response_item `{}`", if other.is_empty() { "(no type)" } else { other }),
                    what: "a kind of response item this reader does not know; it is kept as an item of the assistant's, unread",
                });
            }
            let other = if other.is_empty() { "unknown" } else { other };
            assistant(b, &loc).push(
                PartKind::Other {
                    kind: other.to_string(),
                },
                loc.clone(),
            );
        }
    }
    Ok(())
}

/// Response items Codex 0.169.0 writes that the reader keeps as they are
/// (an item of the assistant's message), beside those it reads.
const ITEM_KINDS: &[&str] = &[
    "additional_tools",
    "web_search_call",
    "image_generation_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "compaction_trigger",
    "context_compaction",
    "configuration_update",
    "agent_message",
    "other",
];

fn assistant<'b>(b: &'b mut Builder, loc: &Loc) -> &'b mut Message {
    if !b.codex_open_assistant || b.conv.messages.last().map(|m| m.role) != Some(Role::Assistant) {
        b.conv
            .messages
            .push(Message::new(Role::Assistant, loc.clone()));
        b.codex_open_assistant = true;
    }
    b.conv.messages.last_mut().expect("just pushed")
}
