//! Cline and Roo Code tasks (VS Code extensions `saoudrizwan.claude-dev`
//! and `rooveterinaryinc.roo-cline`): `…/globalStorage/<extension>/tasks/
//! <taskId>/api_conversation_history.json` is the model history, a compact
//! JSON array of Anthropic messages with the extensions' own keys (`ts`,
//! `id`, `modelInfo`; Roo's `condenseId`, `isSummary`…). Beside it,
//! `ui_messages.json` is the UI log and `task_metadata.json` metadata:
//! neither is sent to the model. Cline loads the array as it is on resume
//! (docs/agents-formats.md §2).
//!
//! What this store models beyond the Anthropic shape:
//! - **Text-form results.** Older Cline versions store a tool's result as
//!   a user *text* block `[<tool> for '<arg>'] Result:` (no `tool_use_id`;
//!   `ToolResultUtils` falls back to text). When the assistant message
//!   before it called that tool with a `tool_use` block, the text block is
//!   that call's result: paired by tool name and order, as Cline sends
//!   them. Without a `tool_use` (the XML-tool era) it stays text.
//! - **Text-form answers of calls not run.** With parallel tool calling
//!   off, Cline runs the first call of a message and answers each further
//!   one with a user text block (`formatResponse.toolAlreadyUsed`: "Tool
//!   [read_file] was not executed because a tool has already been used in
//!   this message…"); after a rejected call, "Skipping tool due to user
//!   rejecting a previous tool. [read_file for 'a']" (`ToolExecutor`,
//!   cline/cline@864419d8). Neither carries the call's id; on the next
//!   request `ContextManager.ensureToolResultsFollowToolUse` puts a
//!   `result missing` result for that id first in the message, so the
//!   provider sees the call answered. They are paired like text-form
//!   results. (Roo Code answers such calls with a structured `tool_result`,
//!   and since 2026-01 runs them all.)
//! - **Completion calls.** An accepted `attempt_completion` is left
//!   unanswered on disk by design: recorded as such, never an orphan.
//! - **Roo's condensation.** What Roo sends is `getEffectiveApiHistory`
//!   of the array: from the last summary on, without the messages a
//!   summary or truncation marker replaced (their `condenseParent` /
//!   `truncationParent` names it), and without results whose call was
//!   condensed away. Those messages are read as meta records, not
//!   messages: nothing in them is sent, so nothing in them is a finding.
//! - **`[]`.** An emptied history is read as a conversation with no
//!   message (rule `empty-history`), not refused as "not a history".
//! - **`ui_messages.json`** is refused with a one-line error that says what
//!   it is.
//!
//! Repaired by the shared JSON writer (`records::writer`), which writes a
//! compact array back compactly.
//!
//! Cline 4's session store (`~/.cline/data/sessions/`) is another layout,
//! read by [`session`].

pub mod discover;
pub mod profile;

use std::path::Path;
use std::sync::Arc;

pub mod session;

use serde_json::value::RawValue;

use super::records::record::{Builder, Handlers};
use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{ByDesign, Conversation, Dialect, Format, Message, PartKind, Role, SourceInfo};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "Cline / Roo Code task",
    formats: &[Format::Json],
    dialects: &[Dialect::Cline, Dialect::RooCode],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: super::records::writer::new,
    },
    hooks: Hooks::NONE,
};

/// The history's file name in a task folder (`claude_messages.json` in
/// the oldest tasks, which both extensions migrate on load).
const HISTORY: &[&str] = &["api_conversation_history.json", "claude_messages.json"];
/// The UI log beside it.
const UI_LOG: &str = "ui_messages.json";

fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
}

/// A JSON array in a file named as a task's history (or its UI log):
/// the names are the extensions' own (`GlobalFileNames`). Under another
/// name (a copy, a repaired copy), an array of messages that carries the
/// extensions' own marks: a text-form result block (`"text":"[read_file
/// for 'a'] Result:`), Roo's condense and truncation keys, or the keys
/// both add to a message ([`own_keys`]). A plain Anthropic array stays
/// with provider-shaped messages; so does `[]` under another name, which
/// nothing tells from any other empty array (`repair` refuses to write a
/// task's copy that would read so: `repair::check_reads_back`).
fn detect(head: &Head<'_>) -> Result<bool> {
    if head.bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return Ok(false);
    }
    let name = file_name(head.path);
    if HISTORY.contains(&name) || name == UI_LOG {
        return Ok(true);
    }
    let text = String::from_utf8_lossy(head.bytes);
    let messages = text.trim_start()[1..]
        .trim_start()
        .starts_with("{\"role\":");
    Ok(messages && (has_text_result(&text) || roo_marks(&text) || own_keys(&text)))
}

/// Whether a message the head holds whole carries a key the extensions
/// add to the Anthropic shape (`ClineStorageMessage`, Roo's
/// `ApiMessage`): `ts` (the time it was stored, a number), Cline's
/// `modelInfo` or `metrics` (objects). Keys of a message, not of a tool's
/// input: each element is parsed.
fn own_keys(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Keys<'a> {
        #[serde(borrow, default)]
        ts: Option<&'a RawValue>,
        #[serde(rename = "modelInfo", borrow, default)]
        model_info: Option<&'a RawValue>,
        #[serde(borrow, default)]
        metrics: Option<&'a RawValue>,
    }
    let starts = |v: Option<&RawValue>, f: fn(u8) -> bool| {
        v.is_some_and(|v| v.get().as_bytes().first().copied().is_some_and(f))
    };
    let Some(mut rest) = text.trim_start().strip_prefix('[') else {
        return false;
    };
    // The elements the head holds whole (it may end inside one).
    loop {
        let mut elements = serde_json::Deserializer::from_str(rest).into_iter::<Keys<'_>>();
        let Some(Ok(k)) = elements.next() else {
            return false;
        };
        if starts(k.ts, |b| b.is_ascii_digit())
            || starts(k.model_info, |b| b == b'{')
            || starts(k.metrics, |b| b == b'{')
        {
            return true;
        }
        match rest[elements.byte_offset()..]
            .trim_start()
            .strip_prefix(',')
        {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

/// A text block whose text is a text-form result, in compact JSON.
fn has_text_result(text: &str) -> bool {
    text.match_indices("\"type\":\"text\",\"text\":\"[")
        .any(|(i, m)| {
            let rest = &text[i + m.len() - 1..];
            let cut = rest.char_indices().nth(300).map_or(rest.len(), |(k, _)| k);
            text_result_tool(&rest[..cut]).is_some()
        })
}

/// Roo Code's own keys on messages.
fn roo_marks(text: &str) -> bool {
    [
        "\"condenseParent\":",
        "\"isSummary\":",
        "\"truncationParent\":",
        "\"condenseId\":",
    ]
    .iter()
    .any(|k| text.contains(k))
}

fn supports(_: Dialect, a: &Action) -> bool {
    !matches!(
        a,
        Action::RenumberIndices
            | Action::RebuildResults { .. }
            | Action::RenameCall { .. }
            | Action::ReplaceImage { .. }
            | Action::DropItemId { .. }
            | Action::UnshareUuid { .. }
            | Action::SetOrdinal { .. }
            | Action::ReplaceToolReference { .. }
            | Action::RenameTool { .. }
    )
}

/// The Anthropic message reader of provider-shaped histories reads each
/// element.
static READ: Handlers = Handlers {
    chat: Some(super::chat::record),
    claude_code: None,
    codex: None,
};

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let app = app_of(path);
    if file_name(path) == UI_LOG {
        return Err(Error::not_history(
            path,
            format!(
                "is {}'s UI log (`ui_messages.json`), not the API history the model is sent; check `api_conversation_history.json` in the same task folder",
                app_name(app)
            ),
        ));
    }
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Json,
        app,
        read,
    )?)))
}

fn app_name(d: Dialect) -> &'static str {
    if d == Dialect::RooCode {
        "Roo Code"
    } else {
        "Cline"
    }
}

/// Which extension wrote a task: Roo's extension folder, or Roo's files
/// beside the history (`history_item.json`); Cline otherwise.
fn app_of(path: &Path) -> Dialect {
    let roo_folder = path
        .ancestors()
        .filter_map(|a| a.file_name().and_then(|n| n.to_str()))
        .any(|n| n.eq_ignore_ascii_case("rooveterinaryinc.roo-cline"));
    let roo_files = path
        .parent()
        .is_some_and(|d| d.join("history_item.json").is_file());
    let roo_keys = || {
        use std::io::Read;
        let mut head = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(Head::LEN as u64).read_to_end(&mut head))
            .is_ok()
            && roo_marks(&String::from_utf8_lossy(&head))
    };
    if roo_folder || roo_files || roo_keys() {
        Dialect::RooCode
    } else {
        Dialect::Cline
    }
}

fn read(path: &Path, limits: Limits, info: Arc<SourceInfo>) -> Result<Conversation> {
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, &e))?
        .len();
    if len > limits.max_document_bytes {
        return Err(Error::input(
            path,
            format!(
                "JSON document is larger than {} MiB",
                limits.max_document_bytes >> 20
            ),
        ));
    }
    let data = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    let bom: &[u8] = b"\xEF\xBB\xBF";
    let start = if data.starts_with(bom) { bom.len() } else { 0 };
    let text = std::str::from_utf8(&data[start..]).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &data[..start + e.valid_up_to()]).count();
        Error::input(path, format!("line {line} is not valid UTF-8"))
    })?;
    let elements: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
        Error::input(
            path,
            format!(
                "is not a valid {} history: not a JSON array ({e})",
                app_name(info.dialect)
            ),
        )
    })?;
    let roo = info.dialect == Dialect::RooCode;
    // Every element is parsed once more for its tags: only in a task that
    // has any.
    let hidden = if roo && roo_marks(text) {
        condensed_away(&elements)
    } else {
        Vec::new()
    };
    let mut b = Builder::new(Conversation::new(path.display().to_string(), info), &READ);
    let mut hidden_calls = std::collections::HashSet::new();
    for (k, (el, loc)) in super::records::element_locs(text, start, elements).enumerate() {
        // Roo keeps encrypted reasoning as standalone items: elements of
        // the array, not chat messages.
        if is_reasoning_item(el.get()) {
            b.conv.meta_records += 1;
            continue;
        }
        // Condensed or truncated away: kept on disk, never sent.
        if hidden.get(k).copied().unwrap_or(false) {
            b.conv.meta_records += 1;
            hidden_calls.extend(call_ids(el.get()));
            continue;
        }
        b.feed(el.get(), loc, false);
    }
    let mut conv = b.conv;
    if !hidden_calls.is_empty() {
        drop_results_of(&mut conv.messages, &hidden_calls);
    }
    pair_text_results(&mut conv.messages);
    conv.by_design = completion_calls(&conv.messages);
    Ok(conv)
}

/// Roo Code's condense and truncation tags on one element.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Tags {
    is_summary: bool,
    condense_id: Option<String>,
    condense_parent: Option<String>,
    is_truncation_marker: bool,
    truncation_id: Option<String>,
    truncation_parent: Option<String>,
}

/// Which elements Roo Code leaves out of every request
/// (`getEffectiveApiHistory`): everything before the last summary
/// (`isSummary`), and those whose `condenseParent` names a summary the
/// history holds (`isSummary` with that `condenseId`) or whose
/// `truncationParent` names a truncation marker it holds. A tag naming a
/// summary or marker that is not there hides nothing: Roo sends the
/// message.
fn condensed_away(elements: &[&RawValue]) -> Vec<bool> {
    let tags: Vec<Tags> = elements
        .iter()
        .map(|e| serde_json::from_str(e.get()).unwrap_or_default())
        .collect();
    let summaries: std::collections::HashSet<&str> = tags
        .iter()
        .filter(|t| t.is_summary)
        .filter_map(|t| t.condense_id.as_deref())
        .collect();
    let markers: std::collections::HashSet<&str> = tags
        .iter()
        .filter(|t| t.is_truncation_marker)
        .filter_map(|t| t.truncation_id.as_deref())
        .collect();
    let last_summary = tags.iter().rposition(|t| t.is_summary).unwrap_or(0);
    tags.iter()
        .enumerate()
        .map(|(k, t)| {
            k < last_summary
                || t.condense_parent
                    .as_deref()
                    .is_some_and(|p| summaries.contains(p))
                || t.truncation_parent
                    .as_deref()
                    .is_some_and(|p| markers.contains(p))
        })
        .collect()
}

/// The `tool_use` ids of one element.
fn call_ids(el: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Block {
        #[serde(rename = "type", default)]
        ty: String,
        #[serde(default)]
        id: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct El {
        #[serde(default)]
        content: Option<serde_json::Value>,
    }
    let Ok(El {
        content: Some(serde_json::Value::Array(blocks)),
    }) = serde_json::from_str::<El>(el)
    else {
        return Vec::new();
    };
    blocks
        .into_iter()
        .filter_map(|b| serde_json::from_value::<Block>(b).ok())
        .filter(|b| b.ty == "tool_use")
        .filter_map(|b| b.id)
        .collect()
}

/// Results of calls that were condensed away: Roo drops them from the
/// request (their `tool_use` is gone), so they are not results the
/// provider sees. A message left with nothing goes too.
fn drop_results_of(messages: &mut Vec<Message>, calls: &std::collections::HashSet<String>) {
    messages.retain_mut(|m| {
        let before = m.parts.len();
        m.parts.retain(
            |p| !matches!(&p.kind, PartKind::ToolResult { call_id, .. } if calls.contains(call_id)),
        );
        before == 0 || !m.parts.is_empty()
    });
}

fn is_reasoning_item(el: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Item<'a> {
        #[serde(borrow, default)]
        role: Option<&'a RawValue>,
        #[serde(rename = "type", default)]
        ty: Option<String>,
    }
    matches!(
        serde_json::from_str::<Item<'_>>(el),
        Ok(Item { role: None, ty: Some(t) }) if t == "reasoning"
    )
}

/// The tool named by a text-form result: `[read_file for 'src/a.ts']
/// Result:` → `read_file` (also `[tool] Result:`, Cline's form for tools
/// without an argument to show).
pub fn text_result_tool(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('[')?;
    let close = rest.find("] Result:")?;
    let head = &rest[..close];
    let name = head.split(" for ").next().unwrap_or(head);
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    ok.then_some(name)
}

/// The reasons Cline's `ToolExecutor.execute` gives, in a user text block,
/// for a call it did not run; the call's description (`[read_file for
/// 'a']`) follows.
const NOT_RUN: &[&str] = &[
    "Skipping tool due to user rejecting a previous tool. ",
    "Tool was interrupted and not executed due to user rejecting a previous tool. ",
];

/// The tool named by a text block that answers a call in Cline's text
/// form: a text-form result ([`text_result_tool`]), the answer to a
/// further call of one message (`Tool [read_file] was not executed
/// because a tool has already been used in this message.…`), or a call
/// skipped after a rejection ([`NOT_RUN`]).
pub fn text_answer_tool(text: &str) -> Option<&str> {
    if let Some(tool) = text_result_tool(text) {
        return Some(tool);
    }
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if let Some(rest) = text.strip_prefix("Tool [") {
        let (name, tail) = rest.split_once(']')?;
        let used = tail
            .starts_with(" was not executed because a tool has already been used in this message.");
        return (used && name_ok(name)).then_some(name);
    }
    let rest = NOT_RUN.iter().find_map(|r| text.strip_prefix(r))?;
    let head = rest.strip_prefix('[')?;
    let end = head.find([']', ' '])?;
    let name = &head[..end];
    name_ok(name).then_some(name)
}

/// Read text-form answers as the results of the calls they answer: in the
/// user message right after an assistant message with `tool_use` blocks,
/// the k-th text answer ([`text_answer_tool`]) of tool T answers the k-th
/// call of T that no structured `tool_result` answers.
fn pair_text_results(messages: &mut [Message]) {
    for i in 1..messages.len() {
        if messages[i].role != Role::User || messages[i - 1].role != Role::Assistant {
            continue;
        }
        let answered: Vec<String> = messages[i]
            .tool_results()
            .map(|(_, id, _, _)| id.to_string())
            .collect();
        let mut open: Vec<(String, String)> = messages[i - 1]
            .tool_calls()
            .filter(|(_, id, _, _)| !answered.iter().any(|a| a == id))
            .map(|(_, id, name, _)| (id.to_string(), name.to_string()))
            .collect();
        if open.is_empty() {
            continue;
        }
        for part in &mut messages[i].parts {
            let PartKind::Text { text } = &part.kind else {
                continue;
            };
            let Some(tool) = text_answer_tool(text.as_str()) else {
                continue;
            };
            let Some(k) = open.iter().position(|(_, name)| name == tool) else {
                continue;
            };
            let (id, _) = open.remove(k);
            let content = text.clone();
            part.kind = PartKind::ToolResult {
                call_id: id,
                content,
                is_error: None,
            };
        }
    }
}

/// Unanswered `attempt_completion` calls: the extensions push no result
/// when the user accepts the completion.
fn completion_calls(messages: &[Message]) -> Vec<ByDesign> {
    let pairing = crate::model::pairing::Pairing::analyse(messages);
    pairing
        .unanswered
        .iter()
        .filter(|&&(mi, pi)| {
            matches!(&messages[mi].parts[pi].kind,
                PartKind::ToolCall { name, .. } if name == "attempt_completion")
        })
        .map(|&(mi, pi)| ByDesign {
            message: mi,
            part: pi,
            why: "the extension pushes no result when the user accepts the completion, and answers it itself on resume",
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::text_result_tool;

    #[test]
    fn text_results_name_their_tool() {
        assert_eq!(
            text_result_tool("[read_file for 'src/app.ts'] Result:"),
            Some("read_file")
        );
        assert_eq!(
            text_result_tool("[execute_command for 'npm test'] Result:\nok"),
            Some("execute_command")
        );
        assert_eq!(
            text_result_tool("[list_code_definition_names] Result:"),
            Some("list_code_definition_names")
        );
        assert_eq!(text_result_tool("[TASK RESUMPTION] This task"), None);
        assert_eq!(text_result_tool("plain text"), None);
    }

    #[test]
    fn answers_of_calls_not_run_name_their_tool() {
        use super::text_answer_tool;
        assert_eq!(
            text_answer_tool(
                "Tool [read_file] was not executed because a tool has already been used in this message. Only one tool may be used per message."
            ),
            Some("read_file")
        );
        assert_eq!(
            text_answer_tool(
                "Skipping tool due to user rejecting a previous tool. [write_to_file for 'a.ts']"
            ),
            Some("write_to_file")
        );
        assert_eq!(
            text_answer_tool(
                "Tool was interrupted and not executed due to user rejecting a previous tool. [list_files]"
            ),
            Some("list_files")
        );
        assert_eq!(text_answer_tool("Tool [read_file] is great"), None);
        assert_eq!(
            text_answer_tool(
                "Tool [] was not executed because a tool has already been used in this message."
            ),
            None
        );
        assert_eq!(
            text_answer_tool("[read_file for 'a'] Result:"),
            Some("read_file")
        );
    }
}
