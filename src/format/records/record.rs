//! Records of JSON message histories, in every dialect chatfsck reads:
//! OpenAI Chat Completions, kimi-cli `context.jsonl`, Anthropic Messages,
//! Claude Code sessions and Codex rollouts. Each record is parsed once, with
//! borrowed data, into the canonical model.

use std::borrow::Cow;

use serde::Deserialize;
/// A raw JSON value captured without parsing it into a tree.
pub(crate) type RawValue<'a> = sonic_rs::LazyValue<'a>;

use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Loc, Message, PartKind, Slot,
};

/// Whether `bytes` hold exactly one JSON value (and whitespace).
pub fn one_json_value(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

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
pub(crate) struct Rec<'a> {
    #[serde(borrow, default)]
    pub(crate) role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) content: Option<Content<'a>>,
    #[serde(default)]
    pub(crate) reasoning_content: Option<JsonStr>,
    #[serde(borrow, default)]
    pub(crate) tool_calls: Option<Vec<OaCall<'a>>>,
    #[serde(default)]
    pub(crate) tool_call_id: Option<String>,
    #[serde(default)]
    pub(crate) partial: Option<bool>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
    #[serde(rename = "type", borrow, default)]
    pub(crate) ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) message: Option<InText<'a>>,
    #[serde(borrow, default)]
    pub(crate) payload: Option<InText<'a>>,
    /// Codex paginated rollouts (0.146 and later): the record's number.
    #[serde(borrow, default)]
    pub(crate) ordinal: Option<RawValue<'a>>,
    #[serde(rename = "sessionId", default)]
    pub(crate) session_id: Option<String>,
    #[serde(rename = "isSidechain", default)]
    pub(crate) is_sidechain: Option<bool>,
}

impl<'a> Rec<'a> {
    /// The record parsed from `buf` (UTF-8, checked), its `message` and
    /// `payload` found in it ([`InText`]).
    fn parse(buf: &'a [u8]) -> Result<Rec<'a>, sonic_rs::Error> {
        let mut rec: Rec<'a> = sonic_rs::from_slice(buf)?;
        for v in [&mut rec.message, &mut rec.payload] {
            if let Some(t) = v.take() {
                *v = Some(t.found_in(buf));
            }
        }
        Ok(rec)
    }
}

/// A value's JSON text as it stands in the record's text, not copied.
/// sonic-rs lends the text of a value that holds an escape (`visit_str`,
/// see [`SONIC_LAZY`]), and its `LazyValue` copies it: a Codex payload
/// holding a tool's output of tens of MB was copied once, and its output
/// once more, before it was decoded (about 50 MiB over the bound for a
/// 24 MiB output). The lent text lies in the record's text all the same:
/// it is found there by its address ([`Rec::parse`]), never copied.
pub(crate) enum InText<'a> {
    Borrowed(&'a str),
    /// Lent: where it lay in the text parsed, until it is found there.
    Lent {
        addr: usize,
        len: usize,
    },
    /// From a deserializer that hands out no text (read as any value).
    Owned(String),
}

impl<'a> InText<'a> {
    /// The value's JSON text.
    pub(crate) fn as_raw_str(&self) -> &str {
        match self {
            InText::Borrowed(s) => s,
            InText::Owned(s) => s,
            // Never left so by `Rec::parse`, which finds every lent text.
            InText::Lent { .. } => "",
        }
    }

    /// Lent text found in `buf`, the text it was parsed from; text lent
    /// from anywhere else (never, with sonic-rs) is read as no value, as
    /// an empty text does not parse.
    fn found_in(self, buf: &'a [u8]) -> InText<'a> {
        let InText::Lent { addr, len } = self else {
            return self;
        };
        let base = buf.as_ptr() as usize;
        addr.checked_sub(base)
            .and_then(|at| buf.get(at..at.checked_add(len)?))
            .and_then(|b| std::str::from_utf8(b).ok())
            .map_or(InText::Owned(String::new()), InText::Borrowed)
    }
}

impl<'de: 'a, 'a> FromJsonText<'de> for InText<'a> {
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error> {
        Ok(InText::Lent {
            addr: raw.as_ptr() as usize,
            len: raw.len(),
        })
    }
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error> {
        Ok(InText::Borrowed(raw))
    }
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = RawValue::deserialize(d)?;
        Ok(InText::Owned(v.as_raw_str().to_string()))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for InText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_json_text(d)
    }
}

/// A JSON string's text decoded, or any other value's JSON text (a
/// tool's output, a custom tool's input), taken from the record's text
/// without a copy of it ([`FromJsonText`]).
pub(crate) struct StrOrRaw(pub(crate) String);

impl StrOrRaw {
    fn of(raw: &str) -> StrOrRaw {
        StrOrRaw(if raw.starts_with('"') {
            decode_str(raw).unwrap_or_else(|_| raw.to_string())
        } else {
            raw.to_string()
        })
    }
}

impl<'de> FromJsonText<'de> for StrOrRaw {
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error> {
        Ok(StrOrRaw::of(raw))
    }
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error> {
        Ok(StrOrRaw::of(raw))
    }
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = RawValue::deserialize(d)?;
        Ok(StrOrRaw(string_or_raw(v)))
    }
}

impl<'de> Deserialize<'de> for StrOrRaw {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_json_text(d)
    }
}

#[derive(Deserialize)]
pub(crate) struct OaCall<'a> {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(borrow, default)]
    pub(crate) function: Option<OaFunction<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct OaFunction<'a> {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(borrow, default)]
    pub(crate) arguments: Option<RawValue<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    #[serde(default)]
    text: Option<JsonStr>,
    #[serde(default)]
    think: Option<JsonStr>,
    #[serde(default)]
    thinking: Option<JsonStr>,
    #[serde(default)]
    refusal: Option<JsonStr>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    input: Option<JsonText<'a>>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
}

impl Block<'_> {
    /// The block with nothing borrowed (read from text that does not
    /// outlive it).
    fn into_owned(self) -> Block<'static> {
        Block {
            ty: self.ty.map(|t| Cow::Owned(t.into_owned())),
            text: self.text,
            think: self.think,
            thinking: self.thinking,
            refusal: self.refusal,
            id: self.id,
            name: self.name,
            input: self.input.map(|i| JsonText(Cow::Owned(i.0.into_owned()))),
            tool_use_id: self.tool_use_id,
            content: self.content.map(Content::into_owned),
            is_error: self.is_error,
        }
    }
}

/// Message content, parsed in the same pass as its record: a string, a
/// list of parts (blocks), or null.
///
/// The value is taken as its JSON text first ([`FromJsonText`]): a string
/// (a tool's output of tens of MB) is decoded from it once, into a string
/// of its exact size. Read as any value, it was decoded into the parser's
/// scratch buffer (grown by doubling) and copied from there: three to four
/// times its size at the peak, with the record's text. Any other value is
/// parsed from its text as it was before.
pub(crate) enum Content<'a> {
    Text(String),
    Blocks(Vec<Block<'a>>),
    /// Any other JSON value (kept as its text for evidence).
    Other(String),
}

impl Content<'_> {
    fn into_owned(self) -> Content<'static> {
        match self {
            Content::Text(t) => Content::Text(t),
            Content::Other(t) => Content::Other(t),
            Content::Blocks(b) => Content::Blocks(b.into_iter().map(Block::into_owned).collect()),
        }
    }

    /// Content from the JSON text of its value.
    fn from_json(raw: &str) -> Result<Content<'_>, sonic_rs::Error> {
        if raw.starts_with('"') {
            return decode_json_str(raw).map(Content::Text);
        }
        sonic_rs::from_str::<AnyContent<'_>>(raw).map(|c| c.0)
    }
}

impl<'de: 'a, 'a> FromJsonText<'de> for Content<'a> {
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error> {
        Content::from_json(raw).map(Content::into_owned)
    }
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error> {
        Content::from_json(raw)
    }
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AnyContent::deserialize(d).map(|c| c.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_json_text(d)
    }
}

/// A JSON string, taken as its text and decoded once (see [`Content`]).
pub(crate) struct JsonStr(pub(crate) String);

/// From this length of JSON text on, a string is decoded by
/// [`decode_json_str`] into a string of its exact size; a shorter one by
/// sonic-rs, faster, whose scratch buffer (grown by doubling, then copied)
/// costs nothing that matters at its size.
pub(crate) const DECODE_ONCE_FROM: usize = 64 * 1024;

/// A JSON string's text decoded: by [`decode_json_str`] when it is long
/// ([`DECODE_ONCE_FROM`]), else by sonic-rs.
pub(crate) fn decode_str(raw: &str) -> Result<String, sonic_rs::Error> {
    if raw.len() >= DECODE_ONCE_FROM {
        decode_json_str(raw)
    } else {
        sonic_rs::from_str::<String>(raw)
    }
}

impl<'de> FromJsonText<'de> for JsonStr {
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error> {
        decode_str(raw).map(JsonStr)
    }
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error> {
        Self::lent(raw)
    }
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(JsonStr)
    }
}

impl<'de> Deserialize<'de> for JsonStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_json_text(d)
    }
}

/// The JSON text of a value (a tool call's input): borrowed where the
/// record's text is, else copied once.
pub(crate) struct JsonText<'a>(pub(crate) Cow<'a, str>);

impl<'de: 'a, 'a> FromJsonText<'de> for JsonText<'a> {
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error> {
        Ok(JsonText(Cow::Owned(raw.to_string())))
    }
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error> {
        Ok(JsonText(Cow::Borrowed(raw)))
    }
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = RawValue::deserialize(d)?;
        Ok(JsonText(Cow::Owned(v.as_raw_str().to_string())))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_json_text(d)
    }
}

/// The name sonic-rs's deserializer answers with a value's JSON text
/// (validated as its `LazyValue` is: escapes and control characters
/// checked, strings not decoded) instead of the value. It is the name its
/// own `LazyValue` asks with: the text comes borrowed from the input
/// (`visit_borrowed_str`), or, when a string in it holds an escape, as a
/// `&str` into the input all the same (`visit_str`), which `LazyValue`
/// then copies and [`FromJsonText::lent`] does not keep. A deserializer
/// that does not know the name (serde_json, or a later sonic-rs that
/// renamed it) reads the value as a newtype: [`FromJsonText::eager`]
/// reads it as any value, as before, at the old cost.
const SONIC_LAZY: &str = "$sonic_rs::LazyValue";

/// A value read from its JSON text.
pub(crate) trait FromJsonText<'de>: Sized {
    /// From text lent for the call only.
    fn lent(raw: &str) -> Result<Self, sonic_rs::Error>;
    /// From the input's own text.
    fn borrowed(raw: &'de str) -> Result<Self, sonic_rs::Error>;
    /// From a deserializer that does not hand out the text.
    fn eager<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

fn from_json_text<'de, D: serde::Deserializer<'de>, T: FromJsonText<'de>>(
    d: D,
) -> Result<T, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: FromJsonText<'de>> serde::de::Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, raw: &'de str) -> Result<T, E> {
            T::borrowed(raw).map_err(|e| E::custom(json_error_short(&e)))
        }
        fn visit_str<E: serde::de::Error>(self, raw: &str) -> Result<T, E> {
            T::lent(raw).map_err(|e| E::custom(json_error_short(&e)))
        }
        fn visit_newtype_struct<D: serde::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            T::eager(d)
        }
    }
    d.deserialize_newtype_struct(SONIC_LAZY, V(std::marker::PhantomData))
}

/// The text of a JSON string given as its JSON text (validated by the
/// parser that found it), decoded into a string of its exact size. A lone
/// surrogate escape, and any value that is not a string, is refused as
/// sonic-rs refuses it (the caller reads the record as lenient readers
/// do).
pub(crate) fn decode_json_str(raw: &str) -> Result<String, sonic_rs::Error> {
    let body = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|_| raw.len() >= 2);
    let Some(body) = body else {
        return sonic_rs::from_str::<String>(raw);
    };
    if !body.contains('\\') {
        return Ok(body.to_string());
    }
    if lone_surrogates(body.as_bytes()).next().is_some() {
        return sonic_rs::from_str::<String>(raw);
    }
    Ok(super::lazy::decode(body))
}

/// Content read as any value: the reading [`Content`] has for every value
/// but a string, and for deserializers that do not hand out JSON text.
struct AnyContent<'a>(Content<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for AnyContent<'a> {
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
            .map(AnyContent)
    }
}

/// An Anthropic message inside a Claude Code record.
/// Evidence for the sub-dialect of a chat file.
#[derive(Default)]
pub(crate) struct Evidence {
    pub(crate) kimi: bool,
    pub(crate) anthropic: bool,
    pub(crate) openai: bool,
}

/// Reads one record of a family into the builder's conversation.
pub(crate) type Handler = fn(&mut Builder, Rec<'_>, Loc) -> Result<(), String>;

/// The readers of the JSON families, given to a builder by whoever reads a
/// file (the registry's JSON stores), so this shared module knows none of
/// them. A family without a reader is not read from that file.
pub(crate) struct Handlers {
    pub(crate) chat: Option<Handler>,
    pub(crate) claude_code: Option<Handler>,
    pub(crate) codex: Option<Handler>,
}

/// Builds one conversation from the records of one file.
pub struct Builder {
    handlers: &'static Handlers,
    pub conv: Conversation,
    pub family: Option<Family>,
    pub(crate) evidence: Evidence,
    /// Records parsed as part of the conversation (messages and meta).
    pub records: u64,
    /// First reason the file did not look like a history, for the error
    /// when no record at all is recognised.
    pub first_problem: Option<String>,
    /// Claude Code: the API message id of the last assistant message, for
    /// merging one reply written over several lines.
    pub(crate) cc_last_id: Option<String>,
    pub(crate) cc_sidechain: Option<bool>,
    /// Codex: the last message is an assistant aggregate still open.
    pub(crate) codex_open_assistant: bool,
    /// Codex: how many messages there were when each user turn began (for
    /// `thread_rolled_back`).
    pub(crate) codex_turns: Vec<usize>,
    pub(crate) id_from_content: bool,
}

impl Builder {
    pub(crate) fn new(conv: Conversation, handlers: &'static Handlers) -> Self {
        Builder {
            handlers,
            conv,
            family: None,
            evidence: Evidence::default(),
            records: 0,
            first_problem: None,
            cc_last_id: None,
            cc_sidechain: None,
            codex_open_assistant: false,
            codex_turns: Vec::new(),
            id_from_content: false,
        }
    }

    /// The dialect the evidence points to.
    pub fn dialect(&self) -> Dialect {
        match self.family {
            Some(Family::ClaudeCode) => Dialect::ClaudeCode,
            Some(Family::Codex) => Dialect::Codex,
            _ if self.evidence.kimi => Dialect::Kimi,
            _ if self.evidence.anthropic && !self.evidence.openai => Dialect::Anthropic,
            _ => Dialect::OpenAi,
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
        // sonic-rs does not check the UTF-8 of the values it skips (a lazy
        // value's raw text): the line is checked first.
        if std::str::from_utf8(bytes).is_err() {
            return Err(NotUtf8);
        }
        if too_deep(bytes) {
            self.corrupt(loc, too_deep_reason(), bytes, false);
            return Ok(());
        }
        let mut fixed: Vec<u8> = Vec::new();
        let mut surrogates = 0;
        let rec: Rec<'_> = match Rec::parse(bytes) {
            Ok(_) if let Some(at) = bad_unicode_escape(bytes) => {
                self.corrupt(loc, bad_unicode_escape_reason(at), bytes, false);
                return Ok(());
            }
            Ok(r) => r,
            Err(e) => {
                // Python's `json` and `JSON.parse`, which provider-shaped
                // histories are read with, are more lenient than sonic-rs:
                // a provider-shaped message is read as they read it. So is
                // a Codex line: Codex 0.169.0 reads a member named twice
                // with its last value, at the top or in the payload.
                let Some((text, n)) = as_lenient_readers_read(bytes) else {
                    let reason = sonic_error(&e);
                    self.corrupt(loc, reason, bytes, torn_tail && e.is_eof());
                    return Ok(());
                };
                fixed = text;
                match Rec::parse(&fixed) {
                    Ok(r)
                        if (r.role.is_some() || (r.ty.is_some() && r.payload.is_some()))
                            && bad_unicode_escape(bytes).is_none() =>
                    {
                        surrogates = n;
                        r
                    }
                    _ => {
                        let reason = sonic_error(&e);
                        self.corrupt(loc, reason, bytes, torn_tail && e.is_eof());
                        return Ok(());
                    }
                }
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
        let handler = match family {
            Family::Chat => self.handlers.chat,
            Family::ClaudeCode => self.handlers.claude_code,
            Family::Codex => self.handlers.codex,
        };
        let mut result = match handler {
            Some(read) => read(self, rec, loc.clone()),
            None => Err(format!("is a {} record", family_name(family))),
        };
        // A member named twice inside a Codex payload: read again as Codex
        // reads it, each member with its last value.
        if let (Err(reason), Family::Codex, Some(read), true) =
            (&result, family, handler, fixed.is_empty())
            && reason.contains("duplicate field")
            && bad_unicode_escape(bytes).is_none()
            && let Some((text, n)) = as_lenient_readers_read(bytes)
            && let Ok(rec) = Rec::parse(&text)
        {
            result = read(self, rec, loc.clone());
            surrogates = n;
        }
        match result {
            Ok(()) => {
                self.records += 1;
                if surrogates > 0 {
                    self.conv.lone_surrogates.push((loc, surrogates));
                }
            }
            Err(reason) => self.corrupt(loc, reason, text, false),
        }
        Ok(())
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
pub(crate) fn arguments_of(raw: Option<RawValue<'_>>) -> Arguments {
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

pub(crate) fn string_or_raw(r: RawValue<'_>) -> String {
    // Decoded into a string of its exact size: sonic-rs decodes a string
    // with escapes into a scratch buffer that grows by doubling, then
    // copies it (a tool's output of 24 MB cost about three times that).
    decode_str(r.as_raw_str()).unwrap_or_else(|_| r.as_raw_str().to_string())
}

/// The text of a content value: a string, or the text parts of a block list.
pub(crate) fn content_text(c: Content<'_>) -> String {
    match c {
        Content::Text(t) | Content::Other(t) => t,
        Content::Blocks(blocks) => {
            // The first text is taken, not copied: a tool's large output
            // is most often the only one.
            let mut out = String::new();
            for JsonStr(t) in blocks.into_iter().filter_map(|b| b.text) {
                if out.is_empty() {
                    out = t;
                } else {
                    out.push('\n');
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
///
/// A lone surrogate escape (an emoji cut in two), which sonic-rs refuses
/// in a string it decodes, is read as `JSON.parse` and Python's `json`
/// read it, as U+FFFD; the count of such escapes is returned.
pub(crate) fn parse_content_json(text: &str, msg: &mut Message, loc: &Loc) -> Result<u32, String> {
    if too_deep(text.as_bytes()) {
        return Err(too_deep_reason());
    }
    let mended = std::cell::OnceCell::new();
    let lenient = std::cell::OnceCell::new();
    let (c, n) = match or_with_surrogates_mended(
        sonic_rs::from_str::<Content<'_>>(text),
        text.as_bytes(),
        &mended,
        sonic_rs::from_slice,
    ) {
        // A member named twice: `JSON.parse` and PostgreSQL's `jsonb`
        // keep its last value, and so does serde_json's tree.
        Err(e) if e.to_string().contains("duplicate field") => {
            match as_lenient_readers_read(text.as_bytes()) {
                Some((t, n)) => sonic_rs::from_slice::<Content<'_>>(lenient.get_or_init(|| t))
                    .map(|c| (c, n))
                    .map_err(|_| e),
                None => Err(e),
            }
        }
        other => other,
    }
    .map_err(|e| sonic_error(&e))?;
    parse_content(c, msg, loc, &mut Evidence::default()).map(|()| n)
}

/// Parse message content (a string, or a list of parts/blocks) into parts.
pub(crate) fn parse_content(
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

fn text_of(s: Option<JsonStr>) -> String {
    s.map(|s| s.0).unwrap_or_default()
}

fn block(b: Block<'_>, ev: &mut Evidence) -> PartKind {
    let ty = b.ty.as_deref().unwrap_or_default();
    match ty {
        "text" | "input_text" | "output_text" => PartKind::Text {
            text: text_of(b.text).into(),
        },
        "think" => {
            ev.kimi = true;
            PartKind::Thinking {
                text: text_of(b.think).into(),
            }
        }
        "thinking" => {
            ev.anthropic = true;
            PartKind::Thinking {
                text: text_of(b.thinking.or(b.text)).into(),
            }
        }
        "refusal" => PartKind::Text {
            text: text_of(b.refusal).into(),
        },
        "tool_use" => {
            ev.anthropic = true;
            let arguments = match b.input {
                Some(raw) => Arguments {
                    raw: raw.0.into_owned().into(),
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

/// How deep arrays and objects may nest in one record. The parsers
/// recurse per level (sonic-rs without a limit: 20,000 levels overflow a
/// reader thread's stack); serde_json stops at 128, and so does chatfsck.
pub const MAX_DEPTH: usize = 128;

/// Whether JSON text nests arrays and objects deeper than [`MAX_DEPTH`],
/// found without recursion, before any parser sees it. Brackets inside
/// strings do not count. Text with fewer opening brackets than the limit
/// (every real record) is answered by one counting pass.
pub fn too_deep(bytes: &[u8]) -> bool {
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            // A string: jump to its closing quote (most of a record's bytes
            // are inside strings); a quote after an odd run of backslashes
            // is escaped.
            b'"' => loop {
                let Some(k) = memchr::memchr(b'"', &bytes[i + 1..]) else {
                    return false;
                };
                i += 1 + k;
                let slashes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
                if slashes % 2 == 0 {
                    break;
                }
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where the first `\u` escape of JSON text is not followed by four hex
/// digits (0-based byte offset of its backslash). sonic-rs checks the
/// escapes of the strings it decodes, but in a value it skips (a field no
/// reader asks for) it takes any four characters after `\u`, where
/// `JSON.parse`, Python's `json` and serde_json refuse the whole line: the
/// line is then lost to the app, and must not be read as a record.
pub fn bad_unicode_escape(bytes: &[u8]) -> Option<usize> {
    // Only `\u` is looked for (one SIMD search; a record's text holds many
    // other escapes): a backslash starts an escape when an even number of
    // backslashes runs before it. The searcher is built once: one built per
    // call (`memmem::find_iter`) was 2 % of a chunk store's lint.
    static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    ESCAPE.find_iter(bytes).find(|&at| {
        let run = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        run % 2 == 0
            && !bytes
                .get(at + 2..at + 6)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    })
}

/// The reason a line with a [`bad_unicode_escape`] at `at` is not read.
pub fn bad_unicode_escape_reason(at: usize) -> String {
    format!(
        "is not valid JSON (a `\\u` escape without four hex digits at column {})",
        at + 1
    )
}

/// Replace every lone surrogate escape (`\ud800` not part of a pair) with
/// `\ufffd`, which has the same length: byte offsets do not move.
pub fn replace_lone_surrogates(bytes: &[u8]) -> (Option<Vec<u8>>, u32) {
    let mut out: Option<Vec<u8>> = None;
    let mut n = 0;
    for (at, _) in lone_surrogates(bytes) {
        let o = out.get_or_insert_with(|| bytes.to_vec());
        o[at..at + 6].copy_from_slice(b"\\ufffd");
        n += 1;
    }
    (out, n)
}

/// [`replace_lone_surrogates`] of a text, as a text; `None` when it holds
/// no lone surrogate escape.
pub fn replace_lone_surrogates_in(text: &str) -> Option<String> {
    let (fixed, _) = replace_lone_surrogates(text.as_bytes());
    // ASCII replaced by ASCII: still UTF-8 (the lossy read changes
    // nothing; it only spares a panic).
    fixed.map(|f| {
        String::from_utf8(f).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    })
}

/// What a lenient reader (Python's `json`, `JSON.parse`) makes of text a
/// strict parser refused. `first` is the strict parse of `bytes`; when it
/// failed and the text holds lone surrogate escapes (an emoji cut in two),
/// `parse` reads a copy kept in `mended` with each escape replaced by
/// `\ufffd`. The copy is as long as the text, so offsets into one hold
/// for the other. Returns the value and how many escapes were replaced;
/// an error is the copy's when there was a copy to read.
pub fn or_with_surrogates_mended<'a, T, E>(
    first: Result<T, E>,
    bytes: &'a [u8],
    mended: &'a std::cell::OnceCell<Vec<u8>>,
    parse: impl FnOnce(&'a [u8]) -> Result<T, E>,
) -> Result<(T, u32), E> {
    let err = match first {
        Ok(v) => return Ok((v, 0)),
        Err(e) => e,
    };
    let (Some(fixed), n) = replace_lone_surrogates(bytes) else {
        return Err(err);
    };
    parse(mended.get_or_init(|| fixed)).map(|v| (v, n))
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// Positions of the lone surrogate escapes of a JSON text (a `\` that
/// starts `\uD800`–`\uDFFF` not forming a pair), with their code unit.
pub fn lone_surrogates(bytes: &[u8]) -> impl Iterator<Item = (usize, u16)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while let Some(off) = memchr::memchr(b'\\', &bytes[i..]) {
            let at = i + off;
            let &next = bytes.get(at + 1)?;
            if next != b'u' {
                i = at + 2;
                continue;
            }
            let Some(u) = hex4(&bytes[at + 2..]) else {
                i = at + 2;
                continue;
            };
            i = at + 6;
            match u {
                0xD800..=0xDBFF => {
                    if bytes.get(at + 6) == Some(&b'\\')
                        && bytes.get(at + 7) == Some(&b'u')
                        && hex4(&bytes[(at + 8).min(bytes.len())..])
                            .is_some_and(|l| (0xDC00..=0xDFFF).contains(&l))
                    {
                        i = at + 12;
                        continue;
                    }
                    return Some((at, u));
                }
                0xDC00..=0xDFFF => return Some((at, u)),
                _ => {}
            }
        }
        None
    })
}

/// A record sonic-rs refuses as Python's `json` and `JSON.parse` read it,
/// written out again for sonic-rs: each lone surrogate escape as U+FFFD
/// (`lone-surrogate` says what the request then does, and how many there
/// were), and a member named twice with its last value, the one they keep
/// (the earlier value is lost to the app as well). `None` when serde_json
/// refuses the text too.
pub fn as_lenient_readers_read(bytes: &[u8]) -> Option<(Vec<u8>, u32)> {
    // Members named twice: serde_json's tree keeps the last of each.
    let (tree, n) = tree_as_lenient_readers_read(bytes).ok()?;
    Some((serde_json::to_vec(&tree).ok()?, n))
}

/// `bytes` parsed into a tree as Python's `json` and `JSON.parse` read
/// them: each lone surrogate escape as U+FFFD (and how many there were),
/// a member named twice with its last value. An error is serde_json's,
/// on the text with its escapes replaced when it has any (the offsets
/// are the same).
pub fn tree_as_lenient_readers_read(bytes: &[u8]) -> serde_json::Result<(serde_json::Value, u32)> {
    or_with_surrogates_mended(
        serde_json::from_slice(bytes),
        bytes,
        &std::cell::OnceCell::new(),
        serde_json::from_slice,
    )
}

/// The reason a record nested too deep is not read.
pub fn too_deep_reason() -> String {
    format!(
        "is nested deeper than {MAX_DEPTH} levels of arrays and objects; chatfsck does not parse it"
    )
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

pub(crate) fn json_error_short(e: &impl std::fmt::Display) -> String {
    short(&e.to_string())
}

#[cfg(test)]
mod depth_tests {
    use super::{MAX_DEPTH, too_deep};

    #[test]
    fn a_unicode_escape_needs_four_hex_digits() {
        use super::bad_unicode_escape;
        assert_eq!(bad_unicode_escape(br#"{"a":"x\ur md"}"#), Some(7));
        assert_eq!(bad_unicode_escape(br#"{"a":"\u12"}"#), Some(6));
        assert_eq!(bad_unicode_escape(br#"{"a":"\u"#), Some(6));
        assert_eq!(bad_unicode_escape(br#"{"a":"\u00e9\ud800\n"}"#), None);
        // An escaped backslash before a `u` is no escape of `u`.
        assert_eq!(bad_unicode_escape(br#"{"a":"\\ur md"}"#), None);
        assert_eq!(bad_unicode_escape(br#"{"a":"\\\ur md"}"#), Some(8));
        assert_eq!(bad_unicode_escape(br#"{"a":"x\"}"#), None);
    }

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(too_deep(deep.as_bytes()));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!too_deep(ok.as_bytes()));
        // Brackets in strings, escaped quotes and escaped backslashes.
        let inside = format!(
            r#"{{"a":"{}\"{}\\","b":[1]}}"#,
            "[".repeat(500),
            "{".repeat(500)
        );
        assert!(!too_deep(inside.as_bytes()));
        let after = format!(r#"{{"a":"x\\",{}"#, "[".repeat(MAX_DEPTH + 1));
        assert!(too_deep(after.as_bytes()));
        assert!(!too_deep(br#"{"a":"unterminated [[[["#));
    }
}

#[cfg(test)]
mod lazy_string_tests {
    use super::{Content, FromJsonText, JsonStr};

    /// Read only through the JSON text sonic-rs hands out.
    struct TextOnly;

    impl<'de> FromJsonText<'de> for TextOnly {
        fn lent(_: &str) -> Result<Self, sonic_rs::Error> {
            Ok(TextOnly)
        }
        fn borrowed(_: &'de str) -> Result<Self, sonic_rs::Error> {
            Ok(TextOnly)
        }
        fn eager<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Err(serde::de::Error::custom("read as a value, not as its text"))
        }
    }

    impl<'de> serde::Deserialize<'de> for TextOnly {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::from_json_text(d)
        }
    }

    /// sonic-rs still hands out a value's text under the name its
    /// `LazyValue` asks with: else large strings cost their old peak again
    /// (tests/memory.rs would say so, slowly).
    #[test]
    fn sonic_rs_hands_out_the_text() {
        for text in [
            r#""plain""#,
            r#""esc\"aped\n""#,
            r#"[1,{"a":"\u00e9"}]"#,
            "null",
        ] {
            assert!(sonic_rs::from_str::<TextOnly>(text).is_ok(), "{text}");
        }
    }

    /// Strings read from their text are what sonic-rs decodes, and what it
    /// refuses is refused with its own words.
    #[test]
    fn strings_read_from_their_text_read_as_decoded() {
        for text in [
            r#""plain""#,
            r#""a \"quoted\" \\ back\/slash \n\t\r\b\f end""#,
            r#""caf\u00e9 \u2713 \ud83d\ude00 \u0000""#,
            r#""naïve ✓ 😀""#,
            r#""""#,
        ] {
            let want: String = sonic_rs::from_str(text).unwrap();
            assert_eq!(sonic_rs::from_str::<JsonStr>(text).unwrap().0, want);
            match sonic_rs::from_str::<Content<'_>>(text).unwrap() {
                Content::Text(t) => assert_eq!(t, want),
                _ => panic!("{text} is not text"),
            }
        }
        for text in [
            r#""\q""#,
            "\"raw\tcontrol\"",
            r#""\ud800 lone""#,
            "5",
            "[1]",
        ] {
            let want = sonic_rs::from_str::<String>(text).unwrap_err();
            let got = sonic_rs::from_str::<JsonStr>(text).err().unwrap();
            assert_eq!(
                super::json_error_short(&got),
                super::json_error_short(&want),
                "{text}"
            );
        }
    }
}
