//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<sessionId>/
//! events.jsonl`): an append-only log of events `{id, parentId, timestamp,
//! type, data}` with dotted types (`session.start` first). Messages are
//! `user.message` (user), `assistant.message` (assistant: `content`,
//! `reasoningText`, `toolRequests[]`) and one tool result per
//! `tool.execution_complete`; every other event is metadata. Calls and
//! results pair by `toolCallId` (docs/agents-formats.md §5).
//!
//! The CLI is closed source; run here (1.0.102, tests/oracle/copilot.py)
//! it replays the events in file order on resume, drops a line that does
//! not parse (and rewrites the log without it), answers a call without a
//! result itself and leaves a stray result out of the request. Its event
//! log is linked by `parentId`: a repaired copy re-points the chain around
//! every removed or inserted event (`writer.rs`).

pub mod discover;
mod lines;
pub mod profile;
mod required;
mod writer;

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::records::lazy::Node;
use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, LineDamage,
    LineDamageKind, Loc, Message, MissingField, PartKind, Role, SourceInfo, Unread,
};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "GitHub Copilot CLI session (events.jsonl)",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::CopilotCli],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// What the writer carries out in Copilot CLI's own format (see
/// `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::JoinLines { .. }
            | Action::EscapeSeparators { .. }
            | Action::DropPadding { .. }
    )
}

/// The `session.start` `data.version` this reader reads.
const EVENTS_VERSION: &str = "1";

/// The event types that open or fill a Copilot CLI log (`session.*`,
/// `user.*`, `assistant.*`, `tool.*`…).
const PREFIXES: &[&str] = &[
    "session.",
    "user.",
    "assistant.",
    "tool.",
    "subagent.",
    "hook.",
    "permission.",
];

/// A JSON Lines file whose first line is an event: `id`, `timestamp`, a
/// dotted `type` of the CLI's families and a `data` object.
fn detect(head: &Head<'_>) -> Result<bool> {
    let Some(first) = head.first_object() else {
        return Ok(false);
    };
    let ty = first
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(first.get("id").is_some_and(Value::is_string)
        && first.get("timestamp").is_some()
        && first.get("data").is_some_and(Value::is_object)
        && PREFIXES.iter().any(|p| ty.starts_with(p)))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Jsonl,
        Dialect::CopilotCli,
        read_events,
    )?)))
}

/// Read every line of a JSON Lines file: `each` gets the object and its
/// location; a line that is not a JSON object is a corrupt record (torn
/// when it is the unterminated last line and ends early). The object is
/// read lazily where that reads as the tree: a line holding one large
/// string (a tool's output) costs the line and the texts taken from it.
/// A record split over lines by raw newlines, NUL padding around one, and
/// raw U+2028/U+2029 in one are read as the record and noted
/// (`lines.rs`).
pub(crate) fn each_line(
    path: &Path,
    limits: Limits,
    conv: &mut Conversation,
    each: impl FnMut(&mut Conversation, Node<'_>, Loc),
) -> Result<()> {
    lines::read(path, limits, &mut Reading { conv, each })
}

/// The reader's side of [`lines::read`].
struct Reading<'c, F> {
    conv: &'c mut Conversation,
    each: F,
}

impl<F: FnMut(&mut Conversation, Node<'_>, Loc)> Reading<'_, F> {
    /// Note what the line-by-line reading met around the record at `at`.
    fn note(&mut self, at: &lines::At, text: &[u8], ty: Option<String>) {
        let mut push = |kind| {
            self.conv.line_damage.push(LineDamage {
                loc: at.loc.clone(),
                kind,
                record: ty.clone(),
            })
        };
        if at.lines > 1 {
            push(LineDamageKind::Split { lines: at.lines });
        }
        if at.nuls > 0 {
            push(LineDamageKind::NulPadding {
                nuls: at.nuls,
                record: true,
            });
        }
        let count = lines::raw_separators(text);
        if count > 0 {
            push(LineDamageKind::RawSeparators { count });
        }
    }
}

impl<F: FnMut(&mut Conversation, Node<'_>, Loc)> lines::Sink for Reading<'_, F> {
    fn record(&mut self, text: &[u8], at: lines::At) -> bool {
        let ty = |n: &Node<'_>| {
            n.get("type")
                .and_then(|t| t.as_str().map(std::borrow::Cow::into_owned))
        };
        if let Some(node) = Node::parse(text) {
            if !node.is_object() {
                return false;
            }
            self.note(&at, text, ty(&node));
            (self.each)(self.conv, node, at.loc);
            return true;
        }
        // A lone surrogate escape (an emoji cut in two) is read as
        // `JSON.parse` reads it, as U+FFFD, and noted for `lone-surrogate`.
        match super::records::record::tree_as_lenient_readers_read(text) {
            Ok((v @ Value::Object(_), lone)) => {
                let node = Node::Tree(&v);
                self.note(&at, text, ty(&node));
                self.conv.note_lone_surrogates(&at.loc, lone);
                (self.each)(self.conv, node, at.loc);
                true
            }
            _ => false,
        }
    }

    fn corrupt(&mut self, bytes: &[u8], loc: Loc, terminated: bool) {
        let reason = match super::records::record::tree_as_lenient_readers_read(bytes) {
            Ok(_) => "is a JSON value but not an object".to_string(),
            Err(e) => {
                let torn = !terminated && e.is_eof();
                self.conv.corrupt.push(CorruptRecord::new(
                    loc,
                    super::records::record::json_error(&e),
                    bytes,
                    torn,
                ));
                return;
            }
        };
        self.conv
            .corrupt
            .push(CorruptRecord::new(loc, reason, bytes, false));
    }

    fn padding(&mut self, loc: Loc, nuls: u64) {
        self.conv.line_damage.push(LineDamage {
            loc,
            kind: LineDamageKind::NulPadding {
                nuls,
                record: false,
            },
            record: None,
        });
    }
}

/// Tool-call arguments: an object's JSON text, or a string's content.
pub(crate) fn arguments(v: Option<Node<'_>>) -> Arguments {
    match v {
        Some(v) if v.is_string() => Arguments {
            raw: v.as_str().map(Cow::into_owned).unwrap_or_default().into(),
            encoding: ArgEncoding::JsonString,
        },
        Some(v) => Arguments {
            raw: v.to_json().into(),
            encoding: ArgEncoding::JsonValue,
        },
        None => Arguments {
            raw: "{}".to_string().into(),
            encoding: ArgEncoding::JsonValue,
        },
    }
}

/// A member's text: a string's own (taken, not copied again where it was
/// decoded), another value's JSON text, or nothing.
pub(crate) fn text_of(v: Option<Node<'_>>) -> String {
    match v {
        Some(v) if v.is_null() => String::new(),
        Some(v) => match v.as_str() {
            Some(s) => s.into_owned(),
            None => v.to_json(),
        },
        None => String::new(),
    }
}

fn read_events(path: &Path, limits: Limits, info: Arc<SourceInfo>) -> Result<Conversation> {
    let mut conv = Conversation::new(path.display().to_string(), info);
    each_line(path, limits, &mut conv, |conv, ev, loc| {
        let ty = ev.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        for field in required::missing(&ty, &ev) {
            conv.missing_fields.push(MissingField {
                loc: loc.clone(),
                record: ty.to_string(),
                field,
            });
        }
        let data = ev.get("data").filter(Node::is_object);
        let get = |key: &str| data.and_then(|d| d.get(key));
        match ty.as_ref() {
            "session.start" => {
                if let Some(id) = get("sessionId").and_then(|i| i.as_str()) {
                    conv.id = id.into_owned();
                }
                // The event schema's version: 1 from 1.0.6 to 1.0.102 (the
                // registry's latest, 2026-11). A newer one is read as
                // version 1 and said to be.
                let version = get("version").map(|v| v.to_json());
                if let Some(v) = version.filter(|v| v != EVENTS_VERSION) {
                    conv.unread.push(Unread {
                        loc: loc.clone(),
                        kind: format!("session.start version {v}"),
                        what: "an events.jsonl schema version this reader does not know (it reads version 1, Copilot CLI 1.0.6 to 1.0.102); the events were read as version 1's",
                    });
                }
                conv.meta_records += 1;
            }
            "user.message" => {
                let mut m = Message::new(Role::User, loc.clone());
                m.push(
                    PartKind::Text {
                        text: text_of(get("content")).into(),
                    },
                    loc,
                );
                conv.messages.push(m);
            }
            "assistant.message" => {
                let mut m = Message::new(Role::Assistant, loc.clone());
                let reasoning = text_of(get("reasoningText"));
                if !reasoning.is_empty() {
                    m.push(
                        PartKind::Thinking {
                            text: reasoning.into(),
                        },
                        loc.clone(),
                    );
                }
                let content = text_of(get("content"));
                if !content.is_empty() {
                    m.push(
                        PartKind::Text {
                            text: content.into(),
                        },
                        loc.clone(),
                    );
                }
                for req in get("toolRequests")
                    .and_then(|r| r.items())
                    .into_iter()
                    .flatten()
                {
                    m.push(
                        PartKind::ToolCall {
                            id: text_of(req.get("toolCallId")),
                            name: text_of(req.get("name")),
                            arguments: arguments(req.get("arguments")),
                        },
                        loc.clone(),
                    );
                }
                conv.messages.push(m);
            }
            "tool.execution_complete" => {
                let success = get("success").and_then(|s| s.as_bool());
                let content = match success {
                    Some(false) => text_of(get("error").and_then(|e| e.get("message"))),
                    _ => text_of(get("result").and_then(|r| r.get("content"))),
                };
                let mut m = Message::new(Role::Tool, loc.clone());
                m.push(
                    PartKind::ToolResult {
                        call_id: text_of(get("toolCallId")),
                        content: content.into(),
                        is_error: success.map(|s| !s),
                    },
                    loc,
                );
                conv.messages.push(m);
            }
            _ => conv.meta_records += 1,
        }
    })?;
    if conv.messages.is_empty() && conv.meta_records == 0 && conv.corrupt.is_empty() {
        return Err(Error::not_history(path, "file is empty"));
    }
    Ok(conv)
}
