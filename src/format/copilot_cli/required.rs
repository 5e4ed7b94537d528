//! The members Copilot CLI 1.0.102 requires of an event when it loads a
//! log: an event without one makes it refuse the whole session, `Session
//! file is corrupted (line N: missing field `messageId`)` or `(line N:
//! invalid session event envelope: `id` must be a UUID string)`
//! (`missing-required-field`).
//!
//! The lists are the `required` members of the client's own event schema
//! (`schemas/session-events.schema.json` in the pinned package) for the
//! event types that carry the conversation; the client was run on a log
//! lacking each of `id`, `parentId`, `timestamp`, `user.message`'s
//! `content`, `assistant.message`'s `messageId` and `content`,
//! `tool.execution_start`'s `toolName`, `tool.execution_complete`'s
//! `success`, `assistant.turn_end`'s `turnId` and `session.resume`'s
//! `eventCount`, and refused every one (fixtures/copilot-cli/README.md).
//! A member the schema leaves optional (`session.task_complete`'s
//! `summary`, which 1.0.6 required: copilot-cli#2089) is not listed.

use crate::format::records::lazy::Node;

/// The members every event has (`parentId` may be null).
const ENVELOPE: &[&str] = &["id", "timestamp", "parentId", "type", "data"];

/// The `data` members each event type requires.
const DATA: &[(&str, &[&str])] = &[
    ("user.message", &["content"]),
    ("system.message", &["content", "role"]),
    ("assistant.message", &["messageId", "content"]),
    ("assistant.reasoning", &["reasoningId", "content"]),
    ("assistant.turn_start", &["turnId"]),
    ("assistant.turn_end", &["turnId"]),
    ("tool.execution_start", &["toolCallId", "toolName"]),
    ("tool.execution_complete", &["toolCallId", "success"]),
    ("abort", &["reason"]),
    (
        "session.start",
        &[
            "sessionId",
            "version",
            "producer",
            "copilotVersion",
            "startTime",
        ],
    ),
    ("session.resume", &["resumeTime", "eventCount"]),
    ("session.compaction_complete", &["success"]),
];

/// The members the event `ev` of type `ty` lacks, as paths (`data.messageId`).
pub fn missing(ty: &str, ev: &Node<'_>) -> Vec<String> {
    let mut out: Vec<String> = ENVELOPE
        .iter()
        .filter(|k| ev.get(k).is_none())
        .map(|k| k.to_string())
        .collect();
    let Some(data) = ev.get("data").filter(Node::is_object) else {
        return out;
    };
    if let Some((_, fields)) = DATA.iter().find(|(t, _)| *t == ty) {
        out.extend(
            fields
                .iter()
                .filter(|k| data.get(k).is_none())
                .map(|k| format!("data.{k}")),
        );
    }
    out
}
