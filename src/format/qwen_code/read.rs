//! The records the walk reaches, as the history Qwen Code 0.15.10 sends
//! (`buildApiHistoryFromConversation`, then the OpenAI converter):
//!
//! - with a `system` record of subtype `chat_compression` on the path
//!   (the last one counts) whose `systemPayload.compressedHistory` is set:
//!   that history first, then the messages of the records after it;
//! - otherwise the `message` (a Gemini `Content`: `role` `user` or
//!   `model`, `parts` of `text`, `thought` text, `functionCall`,
//!   `functionResponse`) of every record of the path that has one;
//!   `system` records carry none.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::load::{End, Loaded};
use crate::model::{
    ArgEncoding, Arguments, Conversation, Loc, Message, PartKind, Role, Slot, SourceInfo, Text,
    Unread,
};

/// One message the resume sends, by where it is read from.
#[derive(Debug, Clone)]
pub enum Sent {
    /// The records of one uuid that carry a `message` (indices, in file
    /// order).
    Records(Vec<usize>),
    /// Item `index` of the compressed history of the `chat_compression`
    /// record at `record`.
    Compressed { record: usize, index: usize },
}

/// The messages the resume sends, in order.
pub fn sent(loaded: &Loaded) -> Vec<Sent> {
    let records = &loaded.records;
    let compression = loaded.path.iter().rposition(|g| {
        let v = &records[g[0]].value;
        v.get("type").and_then(Value::as_str) == Some("system")
            && v.get("subtype").and_then(Value::as_str) == Some("chat_compression")
            && v.pointer("/systemPayload/compressedHistory")
                .is_some_and(|h| !h.is_null())
    });
    let mut out = Vec::new();
    let from = match compression {
        Some(c) => {
            let record = loaded.path[c][0];
            if let Some(Value::Array(h)) = records[record]
                .value
                .pointer("/systemPayload/compressedHistory")
            {
                out.extend((0..h.len()).map(|index| Sent::Compressed { record, index }));
            }
            c + 1
        }
        None => 0,
    };
    for group in &loaded.path[from..] {
        if compression.is_some() && records[group[0]].ty() == "system" {
            continue;
        }
        let with: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&i| {
                records[i]
                    .value
                    .get("message")
                    .is_some_and(Value::is_object)
            })
            .collect();
        if !with.is_empty() {
            out.push(Sent::Records(with));
        }
    }
    out
}

pub fn conversation(loaded: Loaded, info: Arc<SourceInfo>) -> Conversation {
    let mut conv = Conversation::new(loaded.session_id().unwrap_or_default().to_string(), info);
    let records = &loaded.records;
    let mut sent_records: HashSet<usize> = HashSet::new();
    for s in sent(&loaded) {
        match s {
            Sent::Compressed { record, index } => {
                let r = &records[record];
                let content = r
                    .value
                    .pointer("/systemPayload/compressedHistory")
                    .and_then(|h| h.get(index))
                    .unwrap_or(&Value::Null);
                let mut m = Message::new(role_of(content), r.loc.clone());
                parts(content, &r.loc, &mut m, Some(index));
                conv.messages.push(m);
                sent_records.insert(record);
            }
            Sent::Records(group) => {
                let mut m = Message::new(
                    role_of(&records[group[0]].value["message"]),
                    records[group[0]].loc.clone(),
                );
                for &i in &group {
                    parts(&records[i].value["message"], &records[i].loc, &mut m, None);
                    sent_records.insert(i);
                }
                if m.role == Role::User
                    && !m.parts.is_empty()
                    && m.parts
                        .iter()
                        .all(|p| matches!(p.kind, PartKind::ToolResult { .. }))
                {
                    m.role = Role::Tool;
                }
                // The model that wrote the reply (`model` on the record):
                // Qwen Code picks its DeepSeek provider by it.
                if m.role == Role::Assistant
                    && let Some(model) = group
                        .iter()
                        .find_map(|&i| records[i].value.get("model").and_then(Value::as_str))
                {
                    let at = conv.messages.len();
                    conv.reasoning_mut().models.insert(at, model.to_string());
                }
                conv.messages.push(m);
            }
        }
    }
    conv.meta_records = (records.len() - sent_records.len()) as u64;
    conv.client_version = records
        .iter()
        .rev()
        .find_map(|r| r.value.get("version").and_then(Value::as_str))
        .map(str::to_string);
    let lost = lost(&loaded);
    conv.lone_surrogates = loaded.lone_surrogates;
    conv.corrupt = loaded.corrupt;
    conv.unread = loaded.unread;
    match &loaded.end {
        End::NoLeaf => {
            if let Some(r) = records.last() {
                conv.unread.push(Unread {
                    loc: r.loc.clone(),
                    kind: "a last record without a `uuid`".to_string(),
                    what: "Qwen Code resumes from the last record of the file: with no `uuid` it finds no history and does not resume",
                });
            }
        }
        End::Cut { at, missing } => conv.parent_cuts.push(crate::model::ParentCut {
            loc: records[*at].loc.clone(),
            missing: missing.clone(),
            cycle: false,
            lost,
        }),
        End::Cycle { at, parent } => conv.parent_cuts.push(crate::model::ParentCut {
            loc: records[*at].loc.clone(),
            missing: parent.clone(),
            cycle: true,
            lost,
        }),
        End::Root => {}
    }
    conv
}

/// Messages of the file (one per uuid) the walk does not reach.
fn lost(loaded: &Loaded) -> usize {
    let on: HashSet<usize> = loaded.path.iter().flatten().copied().collect();
    let mut uuids = HashSet::new();
    loaded
        .records
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            !on.contains(i)
                && r.value.get("message").is_some_and(Value::is_object)
                && r.id.as_ref().is_none_or(|u| uuids.insert(u.clone()))
        })
        .count()
}

fn role_of(content: &Value) -> Role {
    match content.get("role").and_then(Value::as_str) {
        Some("model") => Role::Assistant,
        _ => Role::User,
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The `parts` of one `Content`, each at its place in the record (`at`:
/// the content's index in a compressed history).
fn parts(content: &Value, loc: &Loc, m: &mut Message, at: Option<usize>) {
    let Some(Value::Array(parts)) = content.get("parts") else {
        return;
    };
    for (k, p) in parts.iter().enumerate() {
        let kind = if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                PartKind::Thinking {
                    text: Text::from(t),
                }
            } else {
                PartKind::Text {
                    text: Text::from(t),
                }
            }
        } else if let Some(fc) = p.get("functionCall") {
            PartKind::ToolCall {
                id: str_of(fc, "id"),
                name: str_of(fc, "name"),
                arguments: Arguments {
                    raw: Text::from(
                        fc.get("args")
                            .map(Value::to_string)
                            .unwrap_or_else(|| "{}".into()),
                    ),
                    encoding: ArgEncoding::JsonValue,
                },
            }
        } else if let Some(fr) = p.get("functionResponse") {
            let response = fr.get("response");
            let output = match response.and_then(|r| r.get("output")) {
                Some(Value::String(s)) => s.clone(),
                _ => response.map(Value::to_string).unwrap_or_default(),
            };
            PartKind::ToolResult {
                call_id: str_of(fr, "id"),
                content: Text::from(output),
                is_error: Some(response.and_then(|r| r.get("error")).is_some()),
            }
        } else {
            let kind = [
                "inlineData",
                "fileData",
                "executableCode",
                "codeExecutionResult",
            ]
            .into_iter()
            .find(|k| p.get(k).is_some())
            .unwrap_or("part");
            PartKind::Other {
                kind: kind.to_string(),
            }
        };
        let slot = match at {
            Some(_) => Slot::Whole("systemPayload"),
            None => Slot::Item("parts", k),
        };
        m.push_at(kind, loc.clone(), slot);
    }
}
