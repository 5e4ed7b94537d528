//! Records of JSON message histories, in every dialect chatfsck reads:
//! OpenAI Chat Completions, kimi-cli `context.jsonl`, Anthropic Messages,
//! Claude Code sessions and Codex rollouts. Each record is parsed once, with
//! borrowed data, into the canonical model.

use std::borrow::Cow;

use serde::Deserialize;
/// A raw JSON value captured without parsing it into a tree.
type RawValue<'a> = sonic_rs::LazyValue<'a>;

use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Loc, Message, PartKind, Role, Slot,
};

/// A record that is not UTF-8 text.
#[derive(Debug)]
pub struct NotUtf8;

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
    content: Option<Content<'a>>,
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
    message: Option<RawValue<'a>>,
    #[serde(borrow, default)]
    payload: Option<RawValue<'a>>,
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
    arguments: Option<RawValue<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Block<'a> {
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
    input: Option<RawValue<'a>>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// Message content, parsed in the same pass as its record: a string, a
/// list of parts (blocks), or null.
pub(crate) enum Content<'a> {
    Text(String),
    Blocks(Vec<Block<'a>>),
    /// Any other JSON value (kept as its text for evidence).
    Other(String),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of content parts")
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(v))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Text(String::new()))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Text(String::new()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let v: serde_json::Value =
                    Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Content::Other(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Content::Other(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Content::Other(v.to_string()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An Anthropic message inside a Claude Code record.
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
    #[serde(borrow, default)]
    input: Option<RawValue<'a>>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(borrow, default)]
    output: Option<RawValue<'a>>,
    #[serde(borrow, default)]
    action: Option<RawValue<'a>>,
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
        self.conv
            .corrupt
            .push(CorruptRecord::new(loc, reason, raw, torn_tail));
    }

    /// Feed one record (a JSONL line or a JSON array element).
    pub fn feed(&mut self, text: &str, loc: Loc, torn_tail: bool) {
        // Valid UTF-8 by type: the error below cannot happen.
        let _ = self.feed_bytes(text.as_bytes(), loc, torn_tail);
    }

    /// Feed one record given as bytes. UTF-8 is validated by the parser, in
    /// the same pass; `Err(NotUtf8)` tells the caller the record is not
    /// text, which it handles (a torn tail is evidence, damage inside the
    /// file is fatal).
    pub fn feed_bytes(&mut self, bytes: &[u8], loc: Loc, torn_tail: bool) -> Result<(), NotUtf8> {
        let rec: Rec<'_> = match sonic_rs::from_slice(bytes) {
            Ok(r) => r,
            Err(e) => {
                if std::str::from_utf8(bytes).is_err() {
                    return Err(NotUtf8);
                }
                let reason = sonic_error(&e);
                self.corrupt(loc, reason, bytes, torn_tail && e.is_eof());
                return Ok(());
            }
        };
        let text = bytes;
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
                text,
                false,
            );
            return Ok(());
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
                    text,
                    false,
                );
                return Ok(());
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
            Err(reason) => self.corrupt(loc, reason, text, false),
        }
        Ok(())
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
                PartKind::Thinking { text: r.into() },
                loc.clone(),
                Slot::Whole("reasoning_content"),
            );
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
            parse_content(c, &mut msg, &loc, &mut self.evidence)?;
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
            if let Ok(Meta { id: Some(id) }) = sonic_rs::from_str::<Meta>(payload.as_raw_str())
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
        let item: CodexItem<'_> = sonic_rs::from_str(payload.as_raw_str()).map_err(|e| {
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
                for c in [item.summary, item.content].into_iter().flatten() {
                    let t = content_text(c);
                    if !t.is_empty() {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t);
                    }
                }
                self.codex_assistant(&loc)
                    .push(PartKind::Thinking { text: text.into() }, loc.clone());
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let (name, arguments) = match kind {
                    "function_call" => {
                        (item.name.unwrap_or_default(), arguments_of(item.arguments))
                    }
                    "custom_tool_call" => (
                        item.name.unwrap_or_default(),
                        Arguments {
                            raw: item
                                .input
                                .map(|r| string_or_raw(r))
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
                        content: item
                            .output
                            .map(|r| string_or_raw(r))
                            .unwrap_or_default()
                            .into(),
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
fn arguments_of(raw: Option<RawValue<'_>>) -> Arguments {
    match raw {
        None => Arguments {
            raw: String::new().into(),
            encoding: ArgEncoding::JsonString,
        },
        Some(r) => match sonic_rs::from_str::<String>(r.as_raw_str()) {
            Ok(s) => Arguments {
                raw: s.into(),
                encoding: ArgEncoding::JsonString,
            },
            // Some apps store the object itself: keep its text.
            Err(_) => Arguments {
                raw: r.as_raw_str().to_string().into(),
                encoding: ArgEncoding::JsonValue,
            },
        },
    }
}

fn string_or_raw(r: RawValue<'_>) -> String {
    sonic_rs::from_str::<String>(r.as_raw_str()).unwrap_or_else(|_| r.as_raw_str().to_string())
}

/// The text of a content value: a string, or the text parts of a block list.
fn content_text(c: Content<'_>) -> String {
    match c {
        Content::Text(t) | Content::Other(t) => t,
        Content::Blocks(blocks) => {
            let mut out = String::new();
            for b in blocks {
                if let Some(t) = b.text {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&t);
                }
            }
            out
        }
    }
}

/// Parse content given as JSON text (a list of blocks, a string or null)
/// into parts. Shared with the message-table source, whose rows hold
/// Anthropic blocks.
pub(crate) fn parse_content_json(text: &str, msg: &mut Message, loc: &Loc) -> Result<(), String> {
    let c: Content<'_> = sonic_rs::from_str(text).map_err(|e| sonic_error(&e))?;
    parse_content(c, msg, loc, &mut Evidence::default())
}

/// Parse message content (a string, or a list of parts/blocks) into parts.
fn parse_content(
    c: Content<'_>,
    msg: &mut Message,
    loc: &Loc,
    ev: &mut Evidence,
) -> Result<(), String> {
    match c {
        Content::Text(text) => {
            msg.push_at(
                PartKind::Text { text: text.into() },
                loc.clone(),
                Slot::Whole("content"),
            );
            Ok(())
        }
        Content::Blocks(blocks) => {
            for (k, b) in blocks.into_iter().enumerate() {
                let kind = block(b, ev);
                msg.push_at(kind, loc.clone(), Slot::Item("content", k));
            }
            Ok(())
        }
        Content::Other(_) => {
            Err("has `content` that is neither a string nor a list of parts".to_string())
        }
    }
}

fn block(b: Block<'_>, ev: &mut Evidence) -> PartKind {
    let ty = b.ty.as_deref().unwrap_or_default();
    match ty {
        "text" | "input_text" | "output_text" => PartKind::Text {
            text: b.text.unwrap_or_default().into(),
        },
        "think" => {
            ev.kimi = true;
            PartKind::Thinking {
                text: b.think.unwrap_or_default().into(),
            }
        }
        "thinking" => {
            ev.anthropic = true;
            PartKind::Thinking {
                text: b.thinking.or(b.text).unwrap_or_default().into(),
            }
        }
        "refusal" => PartKind::Text {
            text: b.refusal.unwrap_or_default().into(),
        },
        "tool_use" => {
            ev.anthropic = true;
            let arguments = match b.input {
                Some(raw) => Arguments {
                    raw: raw.as_raw_str().to_string().into(),
                    encoding: ArgEncoding::JsonValue,
                },
                None => Arguments {
                    raw: String::new().into(),
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
                content: b.content.map(content_text).unwrap_or_default().into(),
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
    let kind = match e.classify() {
        Category::Eof => ErrKind::Eof,
        Category::Syntax => ErrKind::Syntax,
        Category::Data => ErrKind::Data,
        Category::Io => ErrKind::Io,
    };
    describe(kind, &e.to_string(), e.column())
}

/// The same for sonic-rs, which parses the hot path.
pub fn sonic_error(e: &sonic_rs::Error) -> String {
    use sonic_rs::error::Category;
    let kind = match e.classify() {
        Category::Eof => ErrKind::Eof,
        Category::Syntax => ErrKind::Syntax,
        Category::Io => ErrKind::Io,
        _ => ErrKind::Data,
    };
    describe(kind, &e.to_string(), e.column())
}

enum ErrKind {
    Eof,
    Syntax,
    Data,
    Io,
}

fn describe(kind: ErrKind, full: &str, column: usize) -> String {
    let mut what = short(full);
    if let Some(first) = what.get(..1)
        && what.get(1..2).is_some_and(|c| c == c.to_lowercase())
    {
        what = first.to_lowercase() + &what[1..];
    }
    match kind {
        ErrKind::Eof => format!("ends before the JSON value is complete ({what})"),
        ErrKind::Syntax => format!("is not valid JSON ({what} at column {column})"),
        ErrKind::Data => format!("is not a message record ({what})"),
        ErrKind::Io => format!("could not be read ({what})"),
    }
}

/// An error message without its position (and sonic-rs's excerpt).
fn short(s: &str) -> String {
    let s = s.lines().next().unwrap_or_default();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s.to_string(),
    }
}

fn json_error_short(e: &impl std::fmt::Display) -> String {
    short(&e.to_string())
}
