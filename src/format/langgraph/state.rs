//! A thread's state as LangGraph resumes it, from its latest checkpoint
//! and that checkpoint's pending writes, mapped onto the model. Shared by
//! the SQLite and the PostgreSQL checkpointers: each reads the rows, this
//! reads what they hold.
//!
//! - The `messages` channel (`channel_values.messages`) is a list of
//!   LangChain messages, each an ext value (`serde`): `HumanMessage`,
//!   `AIMessage` (`content`, `tool_calls: [{id, name, args}]`),
//!   `ToolMessage` (`tool_call_id`, `status`), `SystemMessage`, their
//!   `…Chunk`s and `ChatMessage` (`role`).
//! - The pending writes of the latest checkpoint (the tasks of the next
//!   step that finished before the run stopped) are applied by LangGraph
//!   when the thread resumes: their `messages` are read after the
//!   channel's.
//! - A call is pending, not an orphan, when the checkpoint still has work
//!   for it: an `__interrupt__` write (a tool paused in `interrupt()`,
//!   waiting for `Command(resume=…)`), a `Send` to a node in the tasks
//!   channel (`__pregel_tasks`, written by `create_react_agent`'s router
//!   for each call), or a `branch:to:<tool node>` channel newer than the
//!   version that node last saw. LangGraph runs that work on the next
//!   `invoke(None)`, which writes the result.

use std::sync::Arc;

use rmpv::Value;

use super::serde::{self, Unreadable, get, str_of};
use crate::model::{
    ArgEncoding, Arguments, ByDesign, Conversation, CorruptRecord, Loc, Message, PartKind, Role,
    Slot, Unread,
};

/// The channel of the messages.
pub const MESSAGES: &str = "messages";
/// The channel of an interrupt's write.
pub const INTERRUPT: &str = "__interrupt__";
/// The channel of `Send` packets.
pub const TASKS: &str = "__pregel_tasks";

/// One pending write of the latest checkpoint.
pub struct Write {
    pub loc: Loc,
    pub task_id: String,
    pub channel: String,
    pub ty: String,
    pub value: Vec<u8>,
}

/// What a reader hands over for one thread: the latest checkpoint (where,
/// its serialisation, its bytes, or its channel values already decoded
/// by the store) and its writes.
pub struct Latest {
    pub loc: Loc,
    pub ty: String,
    pub bytes: Vec<u8>,
    pub writes: Vec<Write>,
}

/// The text of a LangChain message's `content`: a string, or a list of
/// blocks (`{"type":"text","text":…}`, other blocks by their type).
fn content_parts(content: Option<&Value>, msg: &mut Message, loc: &Loc) {
    match content {
        Some(Value::String(s)) => {
            let text = s.as_str().unwrap_or_default();
            if !text.is_empty() {
                msg.push_at(
                    PartKind::Text { text: text.into() },
                    loc.clone(),
                    Slot::Whole("content"),
                );
            }
        }
        Some(Value::Array(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                let kind = match (b, str_of(b, "type")) {
                    (Value::String(s), _) => PartKind::Text {
                        text: s.as_str().unwrap_or_default().into(),
                    },
                    (_, Some("text")) => PartKind::Text {
                        text: str_of(b, "text").unwrap_or_default().into(),
                    },
                    (_, Some("thinking")) => PartKind::Thinking {
                        text: str_of(b, "thinking").unwrap_or_default().into(),
                    },
                    (_, Some("reasoning")) => PartKind::Thinking {
                        text: str_of(b, "reasoning").unwrap_or_default().into(),
                    },
                    (_, Some(other)) => PartKind::Other {
                        kind: other.to_string(),
                    },
                    (_, None) => PartKind::Other {
                        kind: "block".into(),
                    },
                };
                msg.push_at(kind, loc.clone(), Slot::Item("content", i));
            }
        }
        _ => {}
    }
}

/// The text of a tool message's content.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.as_str().unwrap_or_default().to_string(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b {
                Value::String(s) => s.as_str().unwrap_or_default().to_string(),
                _ => str_of(b, "text").map_or_else(
                    || format!("[{}]", str_of(b, "type").unwrap_or("block")),
                    str::to_string,
                ),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Nil) | None => String::new(),
        Some(other) => serde::to_json(other).to_string(),
    }
}

/// One stored message, or why it is not one.
enum Read {
    Message(Message),
    Unknown(String),
}

fn message(v: &Value, loc: &Loc) -> Read {
    // A message is an ext value (msgpack) or a LangChain constructor
    // object (`{"lc":1,"type":"constructor","id":[…,"AIMessage"],"kwargs":{…}}`, JSON).
    let (class, fields) = match v {
        Value::Ext(ty, data) => match serde::object(*ty, data) {
            Some(o) => (o.class, o.fields),
            None => return Read::Unknown(format!("an ext value of type {ty}")),
        },
        Value::Map(_) if get(v, "lc").is_some() => {
            let class = get(v, "id")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match get(v, "kwargs") {
                Some(k) => (class, k.clone()),
                None => return Read::Unknown(format!("`{class}` without kwargs")),
            }
        }
        _ => return Read::Unknown("a value that is not a message".into()),
    };
    let base = class.strip_suffix("Chunk").unwrap_or(&class);
    let role = match base {
        "HumanMessage" => Role::User,
        "AIMessage" => Role::Assistant,
        "ToolMessage" => Role::Tool,
        "SystemMessage" => Role::System,
        "ChatMessage" => match str_of(&fields, "role").and_then(Role::parse) {
            Some(r) => r,
            None => return Read::Unknown(format!("a `{class}` of an unknown role")),
        },
        _ => return Read::Unknown(format!("a `{class}`")),
    };
    let mut msg = Message::new(role, loc.clone());
    match role {
        Role::Tool => {
            msg.push_at(
                PartKind::ToolResult {
                    call_id: str_of(&fields, "tool_call_id")
                        .unwrap_or_default()
                        .to_string(),
                    content: content_text(get(&fields, "content")).into(),
                    is_error: Some(str_of(&fields, "status") == Some("error")),
                },
                loc.clone(),
                Slot::Whole("content"),
            );
        }
        _ => {
            content_parts(get(&fields, "content"), &mut msg, loc);
            if let Some(Value::Array(calls)) = get(&fields, "tool_calls") {
                for (i, c) in calls.iter().enumerate() {
                    let args = get(c, "args").map(serde::to_json).unwrap_or_default();
                    msg.push_at(
                        PartKind::ToolCall {
                            id: str_of(c, "id").unwrap_or_default().to_string(),
                            name: str_of(c, "name").unwrap_or_default().to_string(),
                            arguments: Arguments {
                                raw: args.to_string().into(),
                                encoding: ArgEncoding::JsonValue,
                            },
                        },
                        loc.clone(),
                        Slot::Item("tool_calls", i),
                    );
                }
            }
        }
    }
    Read::Message(msg)
}

/// The checkpoint's map, decoded: `None` when it is not read (the
/// conversation says why).
pub fn checkpoint(conv: &mut Conversation, latest: &Latest) -> Option<Value> {
    match serde::decode(&latest.ty, &latest.bytes) {
        Ok(v) if v.is_map() => Some(v),
        Ok(_) => {
            conv.corrupt.push(CorruptRecord::new(
                latest.loc.clone(),
                "the checkpoint is not a map".into(),
                &latest.bytes,
                false,
            ));
            None
        }
        Err(Unreadable::Broken(why)) => {
            conv.corrupt.push(CorruptRecord::new(
                latest.loc.clone(),
                format!("the latest checkpoint does not decode: {why}"),
                &latest.bytes,
                false,
            ));
            None
        }
        Err(Unreadable::Unread(why)) => {
            conv.unread.push(Unread {
                loc: latest.loc.clone(),
                kind: format!("checkpoint (`{}`)", latest.ty),
                what: leak_free(&why),
            });
            None
        }
    }
}

/// `Unread::what` is a static phrase: the known ones.
fn leak_free(why: &str) -> &'static str {
    if why.starts_with("a pickled value") {
        "a pickled value (LangGraph's `pickle_fallback`): never unpickled"
    } else {
        "a serialisation chatfsck does not read"
    }
}

/// Read one thread: `cp` the latest checkpoint decoded (its channel
/// values, or `channels` when the store keeps them apart, as the
/// PostgreSQL checkpointer does).
pub fn read(
    conv: &mut Conversation,
    latest: &Latest,
    cp: &Value,
    messages: Option<(&Value, &Loc)>,
) {
    let values = get(cp, "channel_values");
    let list = match messages {
        Some((v, loc)) => Some((v, loc.clone())),
        None => values
            .and_then(|v| get(v, MESSAGES))
            .map(|v| (v, latest.loc.clone())),
    };
    match list {
        Some((Value::Array(items), loc)) => {
            push_messages(conv, items, &loc, "channel_values.messages");
        }
        // A `DeltaChannel`'s snapshot (beta): the list inside.
        Some((Value::Ext(serde::EXT_DELTA_SNAPSHOT, data), loc)) => {
            if let Ok(Value::Array(items)) = serde::msgpack(data) {
                push_messages(conv, &items, &loc, "channel_values.messages");
            }
        }
        _ => {}
    }
    // The pending writes, applied on resume.
    let mut paused = false;
    let mut sends: Vec<&Write> = Vec::new();
    for w in &latest.writes {
        match w.channel.as_str() {
            INTERRUPT => paused = true,
            TASKS => sends.push(w),
            MESSAGES => match serde::decode(&w.ty, &w.value) {
                Ok(Value::Array(items)) => push_messages(conv, &items, &w.loc, "writes"),
                Ok(v @ (Value::Ext(..) | Value::Map(_))) => {
                    push_messages(conv, std::slice::from_ref(&v), &w.loc, "writes")
                }
                Ok(_) => {}
                Err(Unreadable::Broken(why)) => conv.corrupt.push(CorruptRecord::new(
                    w.loc.clone(),
                    format!("a pending write to `messages` does not decode: {why}"),
                    &w.value,
                    false,
                )),
                Err(Unreadable::Unread(why)) => conv.unread.push(Unread {
                    loc: w.loc.clone(),
                    kind: format!("pending write to `messages` (`{}`)", w.ty),
                    what: leak_free(&why),
                }),
            },
            // Any other channel's value is LangGraph's alone; a pickle is
            // named, never unpickled.
            channel if w.ty == "pickle" => conv.unread.push(Unread {
                loc: w.loc.clone(),
                kind: format!("pending write to `{channel}` (`pickle`)"),
                what: "a pickled value (LangGraph's `pickle_fallback`): never unpickled",
            }),
            _ => {}
        }
    }
    // The calls the checkpoint still has work for.
    let mut sent: Vec<String> = Vec::new();
    if let Some(Value::Array(packets)) = values.and_then(|v| get(v, TASKS)) {
        packets.iter().for_each(|p| send_ids(p, &mut sent));
    }
    for w in sends {
        if let Ok(v) = serde::decode(&w.ty, &w.value) {
            send_ids(&v, &mut sent);
        }
    }
    let scheduled = tool_node_scheduled(cp);
    mark_pending(conv, paused, scheduled, &sent);
}

fn push_messages(conv: &mut Conversation, items: &[Value], loc: &Loc, field: &'static str) {
    for v in items {
        match message(v, loc) {
            Read::Message(m) => conv.messages.push(m),
            Read::Unknown(what) => {
                conv.unread.push(Unread {
                    loc: loc.clone(),
                    kind: format!("{field}: {what}"),
                    what: "a value of the messages list that is not a LangChain message chatfsck reads",
                });
            }
        }
    }
}

/// A message's class and id (`None` for a value that is not a message,
/// or one without an id).
fn class_and_id(v: &Value) -> Option<(String, Option<String>)> {
    let (class, fields) = match v {
        Value::Ext(ty, data) => {
            let o = serde::object(*ty, data)?;
            (o.class, o.fields)
        }
        Value::Map(_) if get(v, "lc").is_some() => (
            get(v, "id")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(Value::as_str)?
                .to_string(),
            get(v, "kwargs")?.clone(),
        ),
        _ => return None,
    };
    let id = str_of(&fields, "id").map(str::to_string);
    Some((class, id))
}

/// The id LangGraph's `RemoveMessage` uses to clear the whole list.
const REMOVE_ALL: &str = "__remove_all__";

/// LangGraph's `add_messages` reducer (`graph/message.py`), the one the
/// `messages` channel of `MessagesState`/`AgentState` has: `update`, one
/// write's messages, merged into `list`. A message whose id is in the
/// list replaces it; a `RemoveMessage` deletes the message of its id (all
/// of them after a `RemoveMessage` of `__remove_all__`); any other is
/// appended.
pub fn add_messages(list: &mut Vec<Value>, update: &[Value]) {
    let mut update = update;
    if let Some(i) = update.iter().rposition(|m| {
        matches!(class_and_id(m), Some((c, Some(id))) if c == "RemoveMessage" && id == REMOVE_ALL)
    }) {
        list.clear();
        update = &update[i + 1..];
    }
    let mut removed: Vec<String> = Vec::new();
    for m in update {
        let (class, id) = class_and_id(m).unwrap_or_default();
        let at = id.as_deref().and_then(|id| {
            list.iter()
                .position(|x| class_and_id(x).and_then(|(_, i)| i).as_deref() == Some(id))
        });
        match (at, class.as_str()) {
            (Some(_), "RemoveMessage") => removed.extend(id),
            (Some(i), _) => list[i] = m.clone(),
            // LangGraph raises on removing an id it does not have; the
            // write was applied once, so it had it.
            (None, "RemoveMessage") => {}
            (None, _) => list.push(m.clone()),
        }
    }
    list.retain(|x| {
        class_and_id(x)
            .and_then(|(_, i)| i)
            .is_none_or(|i| !removed.contains(&i))
    });
}

/// The messages of one write's value: a list, or one message.
pub fn write_messages(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        v @ (Value::Ext(..) | Value::Map(_)) => vec![v],
        _ => Vec::new(),
    }
}

/// The tool call ids a `Send` packet carries (`Send("tools",
/// ToolCallWithContext{tool_call: {id, …}})`, or a tool call itself).
fn send_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Ext(ty, data) => {
            if let Some(o) = serde::object(*ty, data) {
                send_ids(&o.fields, out);
            } else if let Ok(inner) = serde::msgpack(data) {
                send_ids(&inner, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| send_ids(x, out)),
        Value::Map(m) => {
            if str_of(v, "type") == Some("tool_call")
                && let Some(id) = str_of(v, "id")
            {
                out.push(id.to_string());
            }
            m.iter().for_each(|(_, x)| send_ids(x, out));
        }
        _ => {}
    }
}

/// Whether a `branch:to:<node>` channel of a tool node (its name says
/// `tool`) is newer than the version that node last saw: the node runs
/// on the next step.
fn tool_node_scheduled(cp: &Value) -> bool {
    let Some(Value::Map(versions)) = get(cp, "channel_versions") else {
        return false;
    };
    let seen = get(cp, "versions_seen");
    versions.iter().any(|(k, v)| {
        let Some(node) = k.as_str().and_then(|k| k.strip_prefix("branch:to:")) else {
            return false;
        };
        if !node.contains("tool") {
            return false;
        }
        let saw = seen
            .and_then(|s| get(s, node))
            .and_then(|s| get(s, k.as_str().unwrap_or_default()));
        match saw {
            None => true,
            Some(s) => newer(v, s),
        }
    })
}

/// Channel versions are integers or strings that sort (`"0000…0002.0.41…"`).
fn newer(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.as_bytes() > y.as_bytes(),
        _ => match (
            a.as_f64().or(a.as_i64().map(|i| i as f64)),
            b.as_f64().or(b.as_i64().map(|i| i as f64)),
        ) {
            (Some(x), Some(y)) => x > y,
            _ => false,
        },
    }
}

/// The unanswered calls of the last assistant message that the checkpoint
/// still has work for are pending.
fn mark_pending(conv: &mut Conversation, paused: bool, scheduled: bool, sent: &[String]) {
    let answered: std::collections::HashSet<&str> = conv
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let Some(last) = conv
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
    else {
        return;
    };
    let mut pending = Vec::new();
    for (i, p) in conv.messages[last].parts.iter().enumerate() {
        let PartKind::ToolCall { id, .. } = &p.kind else {
            continue;
        };
        if answered.contains(id.as_str()) {
            continue;
        }
        let why = if paused {
            "LangGraph paused this call in `interrupt()` (an `__interrupt__` write on the latest checkpoint): the thread waits for `Command(resume=…)`, and the tool's own result answers it"
        } else if sent.iter().any(|s| s == id) || scheduled {
            "the latest checkpoint still schedules the tool node for this call: LangGraph runs it on the next `invoke(None)`, which writes its result"
        } else {
            continue;
        };
        pending.push(ByDesign {
            message: last,
            part: i,
            why,
        });
    }
    conv.by_design.extend(pending);
}

/// The source of one thread's conversation id: the thread, and the
/// namespace of a subgraph after it.
pub fn conversation_id(thread: &str, ns: &str) -> String {
    if ns.is_empty() {
        thread.to_string()
    } else {
        format!("{thread} [{ns}]")
    }
}

/// A row's location.
pub fn loc(table: &'static str, key: String, rowid: Option<i64>) -> Loc {
    Loc::Row {
        table: crate::model::Name::Static(table),
        key: Arc::from(key),
        rowid,
    }
}

#[cfg(test)]
mod tests {
    use rmpv::Value;

    use super::{add_messages, class_and_id};

    /// A LangChain message in its JSON constructor form.
    fn msg(class: &str, id: &str, text: &str) -> Value {
        Value::Map(vec![
            (Value::from("lc"), Value::from(1)),
            (Value::from("type"), Value::from("constructor")),
            (
                Value::from("id"),
                Value::Array(vec![Value::from("langchain"), Value::from(class)]),
            ),
            (
                Value::from("kwargs"),
                Value::Map(vec![
                    (Value::from("id"), Value::from(id)),
                    (Value::from("content"), Value::from(text)),
                ]),
            ),
        ])
    }

    fn ids(list: &[Value]) -> Vec<String> {
        list.iter()
            .map(|m| class_and_id(m).unwrap().1.unwrap())
            .collect()
    }

    #[test]
    fn add_messages_replaces_by_id_removes_and_appends() {
        let mut list = vec![
            msg("HumanMessage", "a", "hi"),
            msg("AIMessage", "b", "hello"),
        ];
        add_messages(
            &mut list,
            &[
                msg("AIMessage", "b", "hello again"),
                msg("HumanMessage", "c", "bye"),
                msg("RemoveMessage", "a", ""),
                msg("RemoveMessage", "nowhere", ""),
            ],
        );
        assert_eq!(ids(&list), ["b", "c"]);
        assert_eq!(
            super::serde::str_of(super::serde::get(&list[0], "kwargs").unwrap(), "content"),
            Some("hello again")
        );
        add_messages(
            &mut list,
            &[
                msg("HumanMessage", "d", "x"),
                msg("RemoveMessage", "__remove_all__", ""),
                msg("HumanMessage", "e", "y"),
            ],
        );
        assert_eq!(ids(&list), ["e"]);
    }
}
