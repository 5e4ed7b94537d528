//! The message shapes traces record: OpenAI-compatible request bodies
//! (dispatch's `provider.request`), OpenInference `llm.input_messages`
//! (Phoenix's nested JSON, or flat OTLP keys), and the OpenTelemetry GenAI
//! `gen_ai.input.messages` parts.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::format::records::record::{self as chat, Builder, Handlers};
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message, PartKind,
    Role,
};

/// A recorded prompt holds provider-shaped messages only.
static PROMPT: Handlers = Handlers {
    chat: Some(crate::format::chat::record),
    claude_code: None,
    codex: None,
};

/// Parse JSON a tracing app wrote as the app's own reader reads it: a
/// lone surrogate escape (`\ud83d` of an emoji cut in two), which
/// Python's `json` and `JSON.parse` take and serde_json refuses in a
/// string it decodes, is read as U+FFFD
/// ([`chat::or_with_surrogates_mended`]: the copy in `mended` is as long
/// as the text, so offsets into the text hold for it too). The span was
/// recorded as it was sent: what the provider made of the escape is the
/// span's status to say, so no finding is made of it.
pub fn parse_lenient<'a, T: Deserialize<'a>>(
    text: &'a str,
    mended: &'a std::cell::OnceCell<Vec<u8>>,
) -> serde_json::Result<T> {
    chat::or_with_surrogates_mended(
        serde_json::from_str(text),
        text.as_bytes(),
        mended,
        serde_json::from_slice,
    )
    .map(|(v, _)| v)
}

/// [`parse_lenient`] into a value that owns its data.
pub fn parse_owned<T: serde::de::DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    parse_lenient(text, &std::cell::OnceCell::new())
}

/// What an OpenAI-compatible request body says besides its messages.
#[derive(Debug, Default)]
pub struct RequestMeta {
    pub model: Option<String>,
    pub tools: Option<usize>,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(borrow, default)]
    tools: Option<Vec<&'a RawValue>>,
}

/// Parse an OpenAI-compatible request body (`{model, messages, tools}`)
/// into `conv.messages`. Every message is located at `loc` (the record
/// holding the body); a body or message that does not parse becomes a
/// corrupt record of the conversation.
pub fn openai_request(body: &str, loc: &Loc, conv: Conversation) -> (Conversation, RequestMeta) {
    let mended = std::cell::OnceCell::new();
    let parsed: Body<'_> = match parse_lenient(body, &mended) {
        Ok(b) => b,
        Err(e) => {
            let mut conv = conv;
            conv.corrupt.push(corrupt(
                loc,
                format!("holds a request body that {}", chat::json_error(&e)),
                body,
            ));
            return (conv, RequestMeta::default());
        }
    };
    let meta = RequestMeta {
        model: parsed.model,
        tools: parsed.tools.as_ref().map(Vec::len),
    };
    let Some(messages) = parsed.messages else {
        let mut conv = conv;
        conv.corrupt.push(corrupt(
            loc,
            "holds a request body without `messages`".to_string(),
            body,
        ));
        return (conv, meta);
    };
    let mut b = Builder::new(conv, &PROMPT);
    for m in messages {
        b.feed(m.get(), loc.clone(), false);
    }
    (b.conv, meta)
}

pub fn corrupt(loc: &Loc, reason: String, raw: &str) -> CorruptRecord {
    CorruptRecord::new(loc.clone(), reason, raw.as_bytes(), false)
}

fn role_of(s: &str) -> Option<Role> {
    Role::parse(s).or(match s {
        "model" => Some(Role::Assistant),
        "function" => Some(Role::Tool),
        _ => None,
    })
}

/// Elements of a list that may have been rebuilt from flat keys: an array,
/// or an object keyed by indices.
pub fn list(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) => {
            let mut items: Vec<(u64, &Value)> = o
                .iter()
                .filter_map(|(k, v)| k.parse().ok().map(|i| (i, v)))
                .collect();
            items.sort_by_key(|(i, _)| *i);
            items.into_iter().map(|(_, v)| v).collect()
        }
        _ => Vec::new(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn arguments(v: Option<&Value>) -> Arguments {
    match v {
        None | Some(Value::Null) => Arguments {
            raw: String::new().into(),
            encoding: ArgEncoding::JsonString,
        },
        Some(Value::String(s)) => Arguments {
            raw: s.clone().into(),
            encoding: ArgEncoding::JsonString,
        },
        Some(other) => Arguments {
            raw: other.to_string().into(),
            encoding: ArgEncoding::JsonValue,
        },
    }
}

/// OpenInference messages: `[{message: {role, content, contents,
/// tool_calls, tool_call_id}}]`. Each is unwrapped into the OpenAI shape it
/// mirrors and read by the chat source, so a prompt recorded by Phoenix or
/// OTLP is parsed exactly like the stored history it is compared with.
/// Returns the messages and the problems of the ones that could not be read.
pub fn openinference(list_value: &Value, loc: &Loc) -> (Vec<Message>, Vec<CorruptRecord>) {
    let info = std::sync::Arc::new(crate::model::SourceInfo {
        path: std::path::PathBuf::new(),
        format: Format::Jsonl,
        dialect: Dialect::OpenInference,
    });
    let mut b = Builder::new(Conversation::new("", info), &PROMPT);
    for item in list(list_value) {
        let m = item.get("message").unwrap_or(item);
        // Written as UTF-8 from UTF-8 strings: never refused as bytes.
        let _ = b.feed_bytes(&openai_shape(m), loc.clone(), false);
    }
    (b.conv.messages, b.conv.corrupt)
}

/// A value as its text (`text_of`), serialised as a JSON string; none is
/// an empty one. A string is written from where it is, not copied.
#[derive(Clone, Copy)]
struct Text<'a>(Option<&'a Value>);

impl Serialize for Text<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(Value::String(t)) => s.serialize_str(t),
            Some(other) => s.serialize_str(&text_of(other)),
            None => s.serialize_str(""),
        }
    }
}

/// A content part of an OpenInference message, in the OpenAI shape.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Part<'a> {
    /// A text part.
    Text { text: Text<'a> },
    /// Any other part: its type alone.
    #[serde(untagged)]
    Other {
        #[serde(rename = "type")]
        kind: String,
    },
}

/// A message's content as OpenAI writes it: none, one text as a string,
/// or a list of parts.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    None(()),
    One(Text<'a>),
    Parts(Vec<Part<'a>>),
}

/// An OpenAI tool call, borrowed from the OpenInference one.
#[derive(Serialize)]
struct Call<'a> {
    id: Text<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: Text<'a>,
    /// As recorded (a string, an object), null when absent.
    arguments: Option<&'a Value>,
}

/// The OpenAI message an OpenInference message records, in the member
/// order the chat reader has always been given.
#[derive(Serialize)]
struct Shape<'a> {
    role: String,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<Text<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Call<'a>>>,
}

/// An OpenInference message as the OpenAI message it records, written as
/// JSON: indexed objects become arrays, `contents[].message_content` the
/// content parts, `tool_calls[].tool_call` the calls, and the role aliases
/// some instrumentations write (`model`, `function`) their OpenAI roles.
fn openai_shape(m: &Value) -> Vec<u8> {
    let role = match m.get("role").map(text_of).as_deref() {
        Some("model") => "assistant".to_string(),
        Some("function") => "tool".to_string(),
        Some(r) => r.to_string(),
        None => String::new(),
    };
    let mut parts: Vec<Part<'_>> = Vec::new();
    if let Some(c) = m.get("content").filter(|c| !c.is_null()) {
        parts.push(Part::Text {
            text: Text(Some(c)),
        });
    }
    if let Some(contents) = m.get("contents") {
        for c in list(contents) {
            let c = c.get("message_content").unwrap_or(c);
            match c.get("type").map(text_of).as_deref() {
                Some("text") | None | Some("") => parts.push(Part::Text {
                    text: Text(c.get("text")),
                }),
                Some(other) => parts.push(Part::Other {
                    kind: other.to_string(),
                }),
            }
        }
    }
    let content = match parts.as_slice() {
        [] => Content::None(()),
        [Part::Text { text }] => Content::One(*text),
        _ => Content::Parts(parts),
    };
    let shape = Shape {
        role,
        content,
        tool_call_id: m.get("tool_call_id").map(|id| Text(Some(id))),
        tool_calls: m.get("tool_calls").map(|calls| {
            list(calls)
                .into_iter()
                .map(|c| {
                    let c = c.get("tool_call").unwrap_or(c);
                    let f = c.get("function");
                    Call {
                        id: Text(c.get("id")),
                        kind: "function",
                        function: Function {
                            name: Text(f.and_then(|f| f.get("name"))),
                            arguments: f.and_then(|f| f.get("arguments")),
                        },
                    }
                })
                .collect()
        }),
    };
    // Serialising borrowed strings and trees into memory cannot fail.
    serde_json::to_vec(&shape).unwrap_or_default()
}

/// OpenTelemetry GenAI messages: `[{role, parts: [{type: text, content} |
/// {type: reasoning, content} | {type: tool_call, id, name, arguments} |
/// {type: tool_call_response, id, response}], finish_reason?}]`.
/// Returns the messages, each with its `finish_reason`, and the problems.
pub fn genai(list_value: &Value, loc: &Loc) -> (Vec<Message>, Vec<CorruptRecord>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (i, m) in list(list_value).into_iter().enumerate() {
        let role_text = m.get("role").map(text_of).unwrap_or_default();
        let Some(role) = role_of(&role_text) else {
            bad.push(corrupt(
                loc,
                format!("records message {i} with unknown role `{role_text}`"),
                &m.to_string(),
            ));
            continue;
        };
        let mut msg = Message::new(role, loc.clone());
        msg.finish_reason = m.get("finish_reason").filter(|v| !v.is_null()).map(text_of);
        let parts = m.get("parts").map(list).unwrap_or_default();
        for p in parts {
            let ty = p.get("type").map(text_of).unwrap_or_default();
            let kind = match ty.as_str() {
                "text" => PartKind::Text {
                    text: p.get("content").map(text_of).unwrap_or_default().into(),
                },
                "reasoning" | "thinking" => PartKind::Thinking {
                    text: p.get("content").map(text_of).unwrap_or_default().into(),
                },
                "tool_call" => PartKind::ToolCall {
                    id: p.get("id").map(text_of).unwrap_or_default(),
                    name: p.get("name").map(text_of).unwrap_or_default(),
                    arguments: arguments(p.get("arguments")),
                },
                "tool_call_response" => PartKind::ToolResult {
                    call_id: p.get("id").map(text_of).unwrap_or_default(),
                    content: p.get("response").map(text_of).unwrap_or_default().into(),
                    is_error: None,
                },
                "" => PartKind::Other {
                    kind: "untyped".into(),
                },
                other => PartKind::Other {
                    kind: other.to_string(),
                },
            };
            msg.push(kind, loc.clone());
        }
        out.push(msg);
    }
    (out, bad)
}

/// Rebuild nested JSON from flat dotted keys (`llm.input_messages.0.message.role`):
/// objects at every segment; lists stay objects keyed by index (read them
/// with [`list`]).
pub fn unflatten<'a>(pairs: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    let mut root = Value::Object(Default::default());
    for (key, value) in pairs {
        let mut node = &mut root;
        let segs: Vec<&str> = key.split('.').collect();
        for (i, seg) in segs.iter().enumerate() {
            if !node.is_object() {
                // A key that is both a leaf and a prefix: keep the deeper one.
                *node = Value::Object(Default::default());
            }
            let obj = node.as_object_mut().expect("object");
            if i == segs.len() - 1 {
                obj.insert((*seg).to_string(), value);
                break;
            }
            node = obj
                .entry((*seg).to_string())
                .or_insert_with(|| Value::Object(Default::default()));
        }
    }
    root
}

/// Follow a dotted path through nested objects.
pub fn path<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    let mut cur = v;
    for seg in dotted.split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// A value that may be a JSON document serialised as a string.
pub fn decoded(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) => parse_owned(s).ok(),
        Value::Null => None,
        other => Some(other.clone()),
    }
}

/// The finish reason a raw response body reports (OpenAI `choices[].finish_reason`,
/// Anthropic `stop_reason`, Gemini `candidates[].finishReason`).
pub fn response_finish(v: &Value) -> Option<String> {
    let from_list = |key: &str, field: &str| {
        v.get(key).and_then(Value::as_array).and_then(|a| {
            a.iter()
                .find_map(|c| c.get(field)?.as_str().map(str::to_string))
        })
    };
    from_list("choices", "finish_reason")
        .or_else(|| {
            v.get("stop_reason")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| from_list("candidates", "finishReason"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loc() -> Loc {
        Loc::Line {
            line: 1,
            start: 0,
            end: 0,
        }
    }

    #[test]
    fn flat_openinference_keys_rebuild_messages() {
        let v = unflatten([
            ("llm.input_messages.0.message.role", json!("user")),
            ("llm.input_messages.0.message.content", json!("hi")),
            ("llm.input_messages.1.message.role", json!("assistant")),
            (
                "llm.input_messages.1.message.tool_calls.0.tool_call.id",
                json!("call_1"),
            ),
            (
                "llm.input_messages.1.message.tool_calls.0.tool_call.function.name",
                json!("ls"),
            ),
            (
                "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments",
                json!("{}"),
            ),
            ("llm.input_messages.10.message.role", json!("tool")),
            (
                "llm.input_messages.10.message.tool_call_id",
                json!("call_1"),
            ),
            ("llm.input_messages.10.message.content", json!("a.txt")),
        ]);
        let (msgs, bad) = openinference(path(&v, "llm.input_messages").unwrap(), &loc());
        assert!(bad.is_empty());
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1].tool_calls().next().unwrap().1, "call_1");
        assert_eq!(msgs[2].role, Role::Tool);
        assert_eq!(msgs[2].tool_results().next().unwrap().1, "call_1");
    }

    #[test]
    fn genai_parts() {
        let v = json!([
            {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
            {"role": "assistant", "parts": [
                {"type": "reasoning", "content": "use the tool"},
                {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}
            ], "finish_reason": "tool_call"},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "rainy"}]}
        ]);
        let (msgs, bad) = genai(&v, &loc());
        assert!(bad.is_empty());
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1].finish_reason.as_deref(), Some("tool_call"));
        let (_, _, _, args) = msgs[1].tool_calls().next().unwrap();
        assert_eq!(args.raw, r#"{"city":"Paris"}"#);
    }

    #[test]
    fn openinference_messages_are_written_in_the_openai_shape() {
        let shape = |m: Value| String::from_utf8(openai_shape(&m)).unwrap();
        assert_eq!(
            shape(json!({"role": "model", "contents": {
                "1": {"message_content": {"type": "image"}},
                "0": {"message_content": {"type": "text", "text": "a \"b\"\n"}},
            }, "tool_calls": [
                {"tool_call": {"id": "c1", "function": {"name": "f", "arguments": {"x": [1, null]}}}},
                {"id": 7, "function": {"name": null}},
            ]})),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "a \"b\"\n"}, {"type": "image"},
            ], "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": [1, null]}}},
                {"id": "7", "type": "function", "function": {"name": "", "arguments": null}},
            ]})
            .to_string()
        );
        assert_eq!(
            shape(json!({"role": "function", "content": {"k": true}, "tool_call_id": null})),
            json!({"role": "tool", "content": "{\"k\":true}", "tool_call_id": ""}).to_string()
        );
        assert_eq!(
            shape(json!({"role": "user", "content": null, "contents": [{"text": "only"}]})),
            json!({"role": "user", "content": "only"}).to_string()
        );
        assert_eq!(
            shape(json!("odd")),
            json!({"role": "", "content": null}).to_string()
        );
    }

    #[test]
    fn openinference_reads_like_the_chat_source() {
        // Text parts of a tool result join as the chat source joins them, and
        // the role aliases of some instrumentations are understood.
        let v = json!([
            {"message": {"role": "model", "content": "checking"}},
            {"message": {"role": "tool", "tool_call_id": "c1", "contents": [
                {"message_content": {"type": "text", "text": "a"}},
                {"message_content": {"type": "text", "text": "b"}}
            ]}}
        ]);
        let (msgs, bad) = openinference(&v, &loc());
        assert!(bad.is_empty());
        assert_eq!(msgs[0].role, Role::Assistant);
        let (_, id, content, _) = msgs[1].tool_results().next().unwrap();
        assert_eq!((id, content), ("c1", "a\nb"));
        let chat = crate::format::records::record::Builder::new(
            Conversation::new(
                "",
                std::sync::Arc::new(crate::model::SourceInfo {
                    path: Default::default(),
                    format: Format::Jsonl,
                    dialect: Dialect::OpenAi,
                }),
            ),
            &PROMPT,
        );
        let mut chat = chat;
        chat.feed(
            r#"{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
            loc(),
            false,
        );
        assert_eq!(chat.conv.messages[0].parts[0].kind, msgs[1].parts[0].kind);
    }
}
