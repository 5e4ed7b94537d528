//! Records of JSON message histories, in every dialect chatfsck reads:
//! OpenAI Chat Completions, kimi-cli `context.jsonl`, Anthropic Messages,
//! Claude Code sessions and Codex rollouts. Each record is parsed once, with
//! borrowed data, into the canonical model.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Loc, Message, PartKind, Role, Slot,
};

/// The family of a file, fixed by its first recognised record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Provider-shaped messages: OpenAI, kimi-cli, Anthropic.
    Chat,
    ClaudeCode,
    Codex,
}

#[derive(Deserialize)]
struct Rec<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<OaCall<'a>>>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    partial: Option<bool>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
    #[serde(rename = "sessionId", default)]
    session_id: Option<String>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
}

#[derive(Deserialize)]
struct OaCall<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow, default)]
    function: Option<OaFunction<'a>>,
}

#[derive(Deserialize)]
struct OaFunction<'a> {
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    think: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// An Anthropic message inside a Claude Code record.
#[derive(Deserialize)]
struct CcMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct CodexItem<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    summary: Option<&'a RawValue>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(default)]
    id: Option<String>,
}

/// Evidence for the sub-dialect of a chat file.
#[derive(Default)]
pub(crate) struct Evidence {
    kimi: bool,
    anthropic: bool,
    openai: bool,
}

/// Builds one conversation from the records of one file.
pub struct Builder {
    pub conv: Conversation,
    pub family: Option<Family>,
    evidence: Evidence,
    /// Records parsed as part of the conversation (messages and meta).
    pub records: u64,
    /// First reason the file did not look like a history, for the error
    /// when no record at all is recognised.
    pub first_problem: Option<String>,
    /// Claude Code: the API message id of the last assistant message, for
    /// merging one reply written over several lines.
    cc_last_id: Option<String>,
    cc_sidechain: Option<bool>,
    /// Codex: the last message is an assistant aggregate still open.
    codex_open_assistant: bool,
    id_from_content: bool,
}

impl Builder {
    pub fn new(conv: Conversation) -> Self {
        Builder {
            conv,
            family: None,
            evidence: Evidence::default(),
            records: 0,
            first_problem: None,
            cc_last_id: None,
            cc_sidechain: None,
            codex_open_assistant: false,
            id_from_content: false,
        }
    }

    /// The dialect the evidence points to.
    pub fn dialect(&self) -> &'static str {
        match self.family {
            Some(Family::ClaudeCode) => "claude-code",
            Some(Family::Codex) => "codex",
            _ if self.evidence.kimi => "kimi",
            _ if self.evidence.anthropic && !self.evidence.openai => "anthropic",
            _ => "openai",
        }
    }

    /// Record a line or element that is not a record of this file.
    pub fn corrupt(&mut self, loc: Loc, reason: String, raw: &[u8], torn_tail: bool) {
        if self.first_problem.is_none() {
            self.first_problem = Some(match loc.line() {
                Some(l) => format!("line {l} {reason}"),
                None => reason.clone(),
            });
        }
        let cut = raw.len().min(240);
        self.conv.corrupt.push(CorruptRecord {
            loc,
            reason,
            excerpt: String::from_utf8_lossy(&raw[..cut]).into_owned(),
            torn_tail,
        });
    }

    /// Feed one record (a JSONL line or a JSON array element).
    pub fn feed(&mut self, text: &str, loc: Loc, torn_tail: bool) {
        let rec: Rec<'_> = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                let reason = json_error(&e);
                self.corrupt(loc, reason, text.as_bytes(), torn_tail && e.is_eof());
                return;
            }
        };
        let family = if rec.role.is_some() {
            Family::Chat
        } else if rec.payload.is_some() && rec.ty.is_some() {
            Family::Codex
        } else if rec.ty.is_some() {
            Family::ClaudeCode
        } else {
            self.corrupt(
                loc,
                "is a JSON value but not a message record (no `role` or `type`)".into(),
                text.as_bytes(),
                false,
            );
            return;
        };
        match self.family {
            None => self.family = Some(family),
            Some(f) if f != family => {
                self.corrupt(
                    loc,
                    format!(
                        "is a {} record in a {} file",
                        family_name(family),
                        family_name(f)
                    ),
                    text.as_bytes(),
                    false,
                );
                return;
            }
            _ => {}
        }
        let result = match family {
            Family::Chat => self.chat(rec, loc.clone()),
            Family::ClaudeCode => self.claude_code(rec, loc.clone()),
            Family::Codex => self.codex(rec, loc.clone()),
        };
        match result {
            Ok(()) => self.records += 1,
            Err(reason) => self.corrupt(loc, reason, text.as_bytes(), false),
        }
    }

    fn chat(&mut self, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
        let role_text = rec.role.as_deref().unwrap_or_default();
        if role_text.starts_with('_') {
            // kimi-cli meta lines: `_system_prompt`, `_checkpoint`, `_usage`.
            self.evidence.kimi = true;
            self.conv.meta_records += 1;
            return Ok(());
        }
        let role =
            Role::parse(role_text).ok_or_else(|| format!("has unknown role `{role_text}`"))?;
        let mut msg = Message::new(role, loc.clone());
        msg.finish_reason = rec.finish_reason;
        if rec.partial.is_some() {
            self.evidence.kimi = true;
        }
        if matches!(role, Role::Tool | Role::Developer) {
            self.evidence.openai = true;
        }
        if let Some(r) = rec.reasoning_content
            && !r.is_empty()
        {
            msg.push_at(
                PartKind::Thinking { text: r },
                loc.clone(),
                Slot::Whole("reasoning_content"),
            );
        }
        if role == Role::Tool {
            let content = match rec.content {
                Some(raw) => content_text(raw)?,
                None => String::new(),
            };
            msg.push_at(
                PartKind::ToolResult {
                    call_id: rec.tool_call_id.unwrap_or_default(),
                    content,
                    is_error: None,
                },
                loc.clone(),
                Slot::Whole("content"),
            );
        } else if let Some(raw) = rec.content {
            parse_content(raw, &mut msg, &loc, &mut self.evidence)?;
        }
        if let Some(calls) = rec.tool_calls {
            self.evidence.openai = true;
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
        self.conv.messages.push(msg);
        Ok(())
    }

    fn claude_code(&mut self, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
        if !self.id_from_content
            && let Some(id) = &rec.session_id
        {
            self.conv.id = id.clone();
            self.id_from_content = true;
        }
        let ty = rec.ty.as_deref().unwrap_or_default();
        let (Some(raw), "user" | "assistant") = (rec.message, ty) else {
            self.conv.meta_records += 1;
            return Ok(());
        };
        // A session file holds its main chain; a sub-agent file holds only
        // sidechain records. Keep the kind the first message has.
        let side = rec.is_sidechain.unwrap_or(false);
        match self.cc_sidechain {
            None => self.cc_sidechain = Some(side),
            Some(s) if s != side => {
                self.conv.meta_records += 1;
                return Ok(());
            }
            _ => {}
        }
        let m: CcMessage<'_> = serde_json::from_str(raw.get()).map_err(|e| {
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
            && m.id == self.cc_last_id
            && let Some(last) = self.conv.messages.last_mut()
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
        self.cc_last_id = if role == Role::Assistant { m.id } else { None };
        self.conv.messages.push(msg);
        Ok(())
    }

    fn codex(&mut self, rec: Rec<'_>, loc: Loc) -> Result<(), String> {
        let ty = rec.ty.as_deref().unwrap_or_default();
        let Some(payload) = rec.payload else {
            self.conv.meta_records += 1;
            return Ok(());
        };
        if ty == "session_meta" {
            #[derive(Deserialize)]
            struct Meta {
                #[serde(default)]
                id: Option<String>,
            }
            if let Ok(Meta { id: Some(id) }) = serde_json::from_str::<Meta>(payload.get())
                && !self.id_from_content
            {
                self.conv.id = id;
                self.id_from_content = true;
            }
        }
        if ty != "response_item" {
            self.conv.meta_records += 1;
            return Ok(());
        }
        let item: CodexItem<'_> = serde_json::from_str(payload.get()).map_err(|e| {
            format!(
                "has a `payload` that is not a response item ({})",
                json_error_short(&e)
            )
        })?;
        let kind = item.ty.as_deref().unwrap_or_default();
        let mut ev = Evidence::default();
        match kind {
            "message" => {
                let role_text = item.role.as_deref().unwrap_or("assistant");
                let role = Role::parse(role_text)
                    .ok_or_else(|| format!("has unknown role `{role_text}`"))?;
                if role == Role::Assistant {
                    let msg = self.codex_assistant(&loc);
                    if let Some(c) = item.content {
                        parse_content(c, msg, &loc, &mut ev)?;
                    }
                } else {
                    self.codex_open_assistant = false;
                    let mut msg = Message::new(role, loc.clone());
                    if let Some(c) = item.content {
                        parse_content(c, &mut msg, &loc, &mut ev)?;
                    }
                    self.conv.messages.push(msg);
                }
            }
            "reasoning" => {
                let mut text = String::new();
                for raw in [item.summary, item.content].into_iter().flatten() {
                    if let Ok(blocks) = serde_json::from_str::<Vec<Block<'_>>>(raw.get()) {
                        for b in blocks {
                            if let Some(t) = b.text {
                                if !text.is_empty() {
                                    text.push('\n');
                                }
                                text.push_str(&t);
                            }
                        }
                    }
                }
                self.codex_assistant(&loc)
                    .push(PartKind::Thinking { text }, loc.clone());
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let (name, arguments) = match kind {
                    "function_call" => {
                        (item.name.unwrap_or_default(), arguments_of(item.arguments))
                    }
                    "custom_tool_call" => (
                        item.name.unwrap_or_default(),
                        Arguments {
                            raw: item.input.map(|r| string_or_raw(r)).unwrap_or_default(),
                            encoding: ArgEncoding::Freeform,
                        },
                    ),
                    _ => (
                        "local_shell".to_string(),
                        Arguments {
                            raw: item.action.map(|r| r.get().to_string()).unwrap_or_default(),
                            encoding: ArgEncoding::JsonValue,
                        },
                    ),
                };
                let id = item.call_id.or(item.id).unwrap_or_default();
                self.codex_assistant(&loc).push(
                    PartKind::ToolCall {
                        id,
                        name,
                        arguments,
                    },
                    loc.clone(),
                );
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                self.codex_open_assistant = false;
                let mut msg = Message::new(Role::Tool, loc.clone());
                msg.push(
                    PartKind::ToolResult {
                        call_id: item.call_id.unwrap_or_default(),
                        content: item.output.map(|r| string_or_raw(r)).unwrap_or_default(),
                        is_error: None,
                    },
                    loc.clone(),
                );
                self.conv.messages.push(msg);
            }
            other => {
                let other = if other.is_empty() { "unknown" } else { other };
                self.codex_assistant(&loc).push(
                    PartKind::Other {
                        kind: other.to_string(),
                    },
                    loc.clone(),
                );
            }
        }
        Ok(())
    }

    fn codex_assistant(&mut self, loc: &Loc) -> &mut Message {
        if !self.codex_open_assistant
            || self.conv.messages.last().map(|m| m.role) != Some(Role::Assistant)
        {
            self.conv
                .messages
                .push(Message::new(Role::Assistant, loc.clone()));
            self.codex_open_assistant = true;
        }
        self.conv.messages.last_mut().expect("just pushed")
    }
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::Chat => "chat message",
        Family::ClaudeCode => "Claude Code",
        Family::Codex => "Codex rollout",
    }
}

/// Arguments of an OpenAI-style call: a JSON string holding JSON.
fn arguments_of(raw: Option<&RawValue>) -> Arguments {
    match raw {
        None => Arguments {
            raw: String::new(),
            encoding: ArgEncoding::JsonString,
        },
        Some(r) => match serde_json::from_str::<String>(r.get()) {
            Ok(s) => Arguments {
                raw: s,
                encoding: ArgEncoding::JsonString,
            },
            // Some apps store the object itself: keep its text.
            Err(_) => Arguments {
                raw: r.get().to_string(),
                encoding: ArgEncoding::JsonValue,
            },
        },
    }
}

fn string_or_raw(r: &RawValue) -> String {
    serde_json::from_str::<String>(r.get()).unwrap_or_else(|_| r.get().to_string())
}

/// The text of a content value: a string, or the text parts of a block list.
fn content_text(raw: &RawValue) -> Result<String, String> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(s).map_err(|e| json_error_short(&e)),
        Some(b'[') => {
            let blocks: Vec<Block<'_>> = serde_json::from_str(s).map_err(|e| {
                format!(
                    "has content blocks of the wrong shape ({})",
                    json_error_short(&e)
                )
            })?;
            let mut out = String::new();
            for b in blocks {
                if let Some(t) = b.text {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&t);
                }
            }
            Ok(out)
        }
        Some(b'n') => Ok(String::new()),
        _ => Ok(s.to_string()),
    }
}

/// Parse message content (a string, or a list of parts/blocks) into parts.
/// Shared with the message-table source, whose rows hold Anthropic blocks.
pub(crate) fn parse_content(
    raw: &RawValue,
    msg: &mut Message,
    loc: &Loc,
    ev: &mut Evidence,
) -> Result<(), String> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'"') => {
            let text: String = serde_json::from_str(s).map_err(|e| json_error_short(&e))?;
            msg.push_at(PartKind::Text { text }, loc.clone(), Slot::Whole("content"));
            Ok(())
        }
        Some(b'n') => Ok(()),
        Some(b'[') => {
            let blocks: Vec<Block<'_>> = serde_json::from_str(s).map_err(|e| {
                format!(
                    "has content parts of the wrong shape ({})",
                    json_error_short(&e)
                )
            })?;
            for (k, b) in blocks.into_iter().enumerate() {
                let kind = block(b, ev);
                msg.push_at(kind, loc.clone(), Slot::Item("content", k));
            }
            Ok(())
        }
        _ => Err("has `content` that is neither a string nor a list of parts".to_string()),
    }
}

fn block(b: Block<'_>, ev: &mut Evidence) -> PartKind {
    let ty = b.ty.as_deref().unwrap_or_default();
    match ty {
        "text" | "input_text" | "output_text" => PartKind::Text {
            text: b.text.unwrap_or_default(),
        },
        "think" => {
            ev.kimi = true;
            PartKind::Thinking {
                text: b.think.unwrap_or_default(),
            }
        }
        "thinking" => {
            ev.anthropic = true;
            PartKind::Thinking {
                text: b.thinking.or(b.text).unwrap_or_default(),
            }
        }
        "refusal" => PartKind::Text {
            text: b.refusal.unwrap_or_default(),
        },
        "tool_use" => {
            ev.anthropic = true;
            let arguments = match b.input {
                Some(raw) => Arguments {
                    raw: raw.get().to_string(),
                    encoding: ArgEncoding::JsonValue,
                },
                None => Arguments {
                    raw: String::new(),
                    encoding: ArgEncoding::JsonValue,
                },
            };
            PartKind::ToolCall {
                id: b.id.unwrap_or_default(),
                name: b.name.unwrap_or_default(),
                arguments,
            }
        }
        "tool_result" => {
            ev.anthropic = true;
            PartKind::ToolResult {
                call_id: b.tool_use_id.unwrap_or_default(),
                content: b
                    .content
                    .map(|c| content_text(c).unwrap_or_else(|_| c.get().to_string()))
                    .unwrap_or_default(),
                is_error: b.is_error,
            }
        }
        "" => PartKind::Other {
            kind: "untyped".to_string(),
        },
        other => {
            if matches!(other, "redacted_thinking" | "image" | "document") {
                ev.anthropic = true;
            }
            PartKind::Other {
                kind: other.to_string(),
            }
        }
    }
}

/// One-line reason for a JSON error, for a corrupt-record finding.
pub fn json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = json_error_short(e);
    match e.classify() {
        Category::Eof => format!("ends before the JSON value is complete ({what})"),
        Category::Syntax => format!("is not valid JSON ({what} at column {})", e.column()),
        Category::Data => format!("is not a message record ({what})"),
        Category::Io => format!("could not be read ({what})"),
    }
}

fn json_error_short(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
