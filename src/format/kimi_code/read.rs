//! The records a resume reads, folded into the history Kimi Code 2.1.0
//! sends (`createContextTranscriptReducer` and `createLoopEventFold`):
//!
//! - `context.append_message`: one message (`role`, `content` parts,
//!   `toolCalls`, `toolCallId`), held back while calls of the open step
//!   are unanswered and sent after their results;
//! - `context.append_loop_event`: the steps of the agent loop. `step.begin`
//!   opens an assistant message (settling the one before), `content.part`
//!   and `tool.call` fill the open one (those naming another step are
//!   ignored), `tool.result` answers a call of the open step (a result for
//!   any other call is ignored), `step.end` settles the step unless its
//!   `finishReason` is `interrupted` or `error`. Settling answers each call
//!   still unanswered with an error result `Tool execution was interrupted
//!   before its result was recorded…` (in memory only), and drops the
//!   assistant message when it holds no call and no content but blank text;
//! - `context.clear` empties the history, `context.undo` takes back the
//!   last `count` user turns, `context.apply_compaction` replaces the
//!   history with its summary (and the messages it kept);
//! - every other record (`turn.prompt`, `llm.request`, the `kind: event`
//!   UI records such as `agent.message.appended`…) carries no context;
//!   `llm.request` names the model the open step asked, kept as the
//!   model of its reply.
//!
//! The history built here keeps what the client heals (an unanswered call,
//! a result for no call) where it is, so the rules find it; the profile
//! says what the client does with it.

use std::sync::Arc;

use serde_json::Value;

use super::load::{Loaded, Record};
use crate::model::{
    ArgEncoding, Arguments, Conversation, Message, PartKind, Role, Slot, SourceInfo, Text,
};

/// What the client answers an unanswered call with on resume
/// (`TOOL_INTERRUPTED_ON_RESUME_OUTPUT`, an `isError` tool message).
pub const INTERRUPTED: &str = "Tool execution was interrupted before its result was recorded. Do not assume the tool completed successfully.";

/// The fold's state.
#[derive(Default)]
struct Fold {
    messages: Vec<Message>,
    /// Whether each message is an injected one (`origin.kind` `injection`),
    /// which `context.undo` keeps.
    injected: Vec<bool>,
    /// The open step: its uuid and the index of its assistant message.
    open: Option<(String, usize)>,
    /// Calls of the open step not answered yet.
    pending: Vec<String>,
    /// Messages held back while calls are pending.
    deferred: Vec<(Message, bool)>,
    /// Records that carry context.
    used: u64,
    /// The model each step's request named (`llm.request`'s `model`, sent
    /// after the step begins), by the line of the step's `step.begin`.
    models: std::collections::HashMap<u64, String>,
}

impl Fold {
    fn push(&mut self, m: Message, injected: bool) {
        self.messages.push(m);
        self.injected.push(injected);
    }

    fn flush_deferred(&mut self) {
        if !self.pending.is_empty() {
            return;
        }
        for (m, inj) in std::mem::take(&mut self.deferred) {
            self.push(m, inj);
        }
    }

    /// `settleOpen`: the pending calls stay unanswered here (the rules find
    /// them); an empty assistant message is dropped.
    fn settle(&mut self) {
        let Some((_, at)) = self.open.take() else {
            return;
        };
        self.pending.clear();
        let m = &self.messages[at];
        let vacuous = m.parts.iter().all(|p| match &p.kind {
            PartKind::Text { text } | PartKind::Thinking { text } => text.trim().is_empty(),
            _ => false,
        });
        if vacuous {
            self.messages.remove(at);
            self.injected.remove(at);
        }
        self.flush_deferred();
    }

    fn reset(&mut self) {
        self.open = None;
        self.pending.clear();
        self.deferred.clear();
    }

    fn apply(&mut self, r: &Record) {
        let v = &r.value;
        match r.ty() {
            "context.append_message" => {
                self.used += 1;
                let Some(msg) = v.get("message") else { return };
                let m = message(msg, r);
                let injected =
                    msg.pointer("/origin/kind").and_then(Value::as_str) == Some("injection");
                if self.pending.is_empty() {
                    self.push(m, injected);
                } else {
                    self.deferred.push((m, injected));
                }
            }
            "context.append_loop_event" => {
                self.used += 1;
                let Some(ev) = v.get("event") else { return };
                self.loop_event(ev, r);
            }
            "context.clear" => {
                self.used += 1;
                self.messages.clear();
                self.injected.clear();
                self.reset();
            }
            "context.undo" => {
                self.used += 1;
                let count = v.get("count").and_then(Value::as_u64).unwrap_or(0);
                self.undo(count);
            }
            "context.apply_compaction" => {
                self.used += 1;
                self.compaction(r);
            }
            // Not context: the model the open step asked.
            "llm.request" => {
                if let Some((_, at)) = &self.open
                    && let Some(line) = self.messages[*at].loc.line()
                    && let Some(model) = v.get("model").and_then(Value::as_str)
                {
                    self.models.insert(line, model.to_string());
                }
            }
            _ => {}
        }
    }

    fn loop_event(&mut self, ev: &Value, r: &Record) {
        let s = |k: &str| ev.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match ev.get("type").and_then(Value::as_str).unwrap_or("") {
            "step.begin" => {
                self.settle();
                self.push(Message::new(Role::Assistant, r.loc.clone()), false);
                self.open = Some((s("uuid"), self.messages.len() - 1));
            }
            "step.end" => {
                let reason = s("finishReason");
                if reason == "interrupted" || reason == "error" {
                    return;
                }
                self.settle();
                self.flush_deferred();
            }
            "content.part" => {
                let Some((uuid, at)) = &self.open else { return };
                if *uuid != s("stepUuid") {
                    return;
                }
                let at = *at;
                if let Some(p) = ev.get("part") {
                    self.messages[at].push_at(part_kind(p), r.loc.clone(), Slot::Whole("event"));
                }
            }
            "tool.call" => {
                let Some((uuid, at)) = &self.open else { return };
                if *uuid != s("stepUuid") {
                    return;
                }
                let at = *at;
                let id = s("toolCallId");
                let raw = match ev.get("args") {
                    None | Some(Value::Null) => "null".to_string(),
                    Some(a) => a.to_string(),
                };
                self.messages[at].push_at(
                    PartKind::ToolCall {
                        id: id.clone(),
                        name: s("name"),
                        arguments: Arguments {
                            raw: Text::from(raw),
                            encoding: ArgEncoding::JsonValue,
                        },
                    },
                    r.loc.clone(),
                    Slot::Whole("event"),
                );
                self.pending.push(id);
            }
            "tool.result" => {
                let id = s("toolCallId");
                // A result for no pending call is ignored by the client;
                // it is kept here so the rules find it.
                let answered = self.pending.iter().position(|p| *p == id);
                let result = ev.get("result");
                let output = match result.and_then(|o| o.get("output")) {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => String::new(),
                };
                let mut m = Message::new(Role::Tool, r.loc.clone());
                m.push_at(
                    PartKind::ToolResult {
                        call_id: id,
                        content: Text::from(output),
                        is_error: result
                            .and_then(|o| o.get("isError"))
                            .and_then(Value::as_bool),
                    },
                    r.loc.clone(),
                    Slot::Whole("event"),
                );
                self.push(m, false);
                if let Some(k) = answered {
                    self.pending.remove(k);
                    self.flush_deferred();
                }
            }
            _ => {}
        }
    }

    /// `applyUndo`: from the end, messages are taken out (injected ones
    /// kept) until `count` user inputs are; a compaction summary stops it.
    fn undo(&mut self, count: u64) {
        if count == 0 {
            return;
        }
        let mut removed = 0;
        let mut i = self.messages.len();
        while i > 0 {
            i -= 1;
            if self.injected[i] {
                continue;
            }
            if self.messages[i].role == Role::User && self.summary_at(i) {
                break;
            }
            let user = self.messages[i].role == Role::User;
            self.messages.remove(i);
            self.injected.remove(i);
            if user {
                removed += 1;
                if removed >= count {
                    break;
                }
            }
        }
        self.reset();
    }

    fn summary_at(&self, i: usize) -> bool {
        self.messages[i]
            .parts
            .first()
            .is_some_and(|p| p.slot == Some(Slot::Whole("summary")))
    }

    /// `context.apply_compaction`: the summary as a user message, after the
    /// messages the record says were kept (`compactedCount` of the oldest
    /// folded away, when `keptUserMessageCount` is absent).
    fn compaction(&mut self, r: &Record) {
        let v = &r.value;
        let summary = v
            .get("contextSummary")
            .and_then(Value::as_str)
            .or_else(|| v.get("summary").and_then(Value::as_str))
            .unwrap_or("")
            .to_string();
        let compacted = v
            .get("compactedCount")
            .or_else(|| v.get("count"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let mut m = Message::new(Role::User, r.loc.clone());
        m.push_at(
            PartKind::Text {
                text: Text::from(summary),
            },
            r.loc.clone(),
            Slot::Whole("summary"),
        );
        let keep_tail = v.get("keptUserMessageCount").is_none() && compacted < self.messages.len();
        let tail: Vec<(Message, bool)> = if keep_tail {
            self.messages
                .drain(compacted..)
                .zip(self.injected.drain(compacted..))
                .collect()
        } else {
            Vec::new()
        };
        self.messages.clear();
        self.injected.clear();
        self.push(m, false);
        for (m, inj) in tail {
            self.push(m, inj);
        }
        self.reset();
    }
}

fn part_kind(p: &Value) -> PartKind {
    match p.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => PartKind::Text {
            text: Text::from(p.get("text").and_then(Value::as_str).unwrap_or("")),
        },
        "think" => PartKind::Thinking {
            text: Text::from(p.get("think").and_then(Value::as_str).unwrap_or("")),
        },
        other => PartKind::Other {
            kind: if other.is_empty() { "part" } else { other }.to_string(),
        },
    }
}

/// A message of `context.append_message` (Kimi Code's own message shape).
fn message(msg: &Value, r: &Record) -> Message {
    let role = match msg.get("role").and_then(Value::as_str) {
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some("system") => Role::System,
        _ => Role::User,
    };
    let mut m = Message::new(role, r.loc.clone());
    match msg.get("content") {
        Some(Value::String(t)) => m.push_at(
            PartKind::Text {
                text: Text::from(t.as_str()),
            },
            r.loc.clone(),
            Slot::Whole("message"),
        ),
        // A tool message is one result, whatever number of parts it
        // holds: the client sends them as one tool message, its text the
        // texts of its parts (a result of two parts is not two results).
        Some(Value::Array(parts)) if role == Role::Tool => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            m.push_at(
                PartKind::ToolResult {
                    call_id: msg
                        .get("toolCallId")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    content: Text::from(text.as_str()),
                    is_error: msg.get("isError").and_then(Value::as_bool),
                },
                r.loc.clone(),
                Slot::Whole("message"),
            );
        }
        Some(Value::Array(parts)) => {
            for (k, p) in parts.iter().enumerate() {
                m.push_at(part_kind(p), r.loc.clone(), Slot::Item("content", k));
            }
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = msg.get("toolCalls") {
        for (k, c) in calls.iter().enumerate() {
            let s = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            m.push_at(
                PartKind::ToolCall {
                    id: s("id"),
                    name: s("name"),
                    arguments: Arguments {
                        raw: Text::from(s("arguments")),
                        encoding: ArgEncoding::JsonString,
                    },
                },
                r.loc.clone(),
                Slot::Item("toolCalls", k),
            );
        }
    }
    m
}

/// The session's id: the `session_…` directory two levels up of
/// `agents/<agent>/wire.jsonl`, with the agent when it is not `main`.
fn session_id(info: &SourceInfo) -> String {
    let p = &info.path;
    let name = |p: Option<&std::path::Path>| {
        p.and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    };
    let agent_dir = p.parent();
    let agents = agent_dir.and_then(|a| a.parent());
    if name(agents).as_deref() == Some("agents")
        && let Some(session) = name(agents.and_then(|a| a.parent()))
    {
        let agent = name(agent_dir).unwrap_or_default();
        return if agent == "main" {
            session
        } else {
            format!("{session}/{agent}")
        };
    }
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn conversation(loaded: Loaded, info: Arc<SourceInfo>) -> Conversation {
    let mut conv = Conversation::new(session_id(&info), info);
    let mut fold = Fold::default();
    // Records after a line that ends the client's read are folded too:
    // the report shows them (they are what that line costs), and a repair
    // that drops the line keeps them.
    for r in &loaded.records {
        fold.apply(r);
    }
    // A step still open at the end (the client was stopped in it): the
    // client drops its message when it settles the step, if it is empty.
    if let Some((_, at)) = fold.open.clone()
        && fold.messages[at].parts.is_empty()
    {
        fold.messages.remove(at);
        fold.injected.remove(at);
    }
    let deferred: Vec<Message> = fold.deferred.drain(..).map(|(m, _)| m).collect();
    conv.messages = fold.messages;
    conv.messages.extend(deferred);
    // The model each step's reply was asked of.
    for (at, m) in conv.messages.iter().enumerate() {
        if m.role == Role::Assistant
            && let Some(model) = m.loc.line().and_then(|l| fold.models.get(&l))
        {
            conv.reasoning
                .get_or_insert_with(Box::default)
                .models
                .insert(at, model.clone());
        }
    }
    conv.meta_records = loaded.records.len() as u64 - fold.used;
    conv.client_version = None;
    conv.lone_surrogates = loaded.lone_surrogates;
    conv.corrupt = loaded.corrupt;
    conv.unread = loaded.unread;
    conv
}
