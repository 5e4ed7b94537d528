//! What `llm -c` (llm 0.31.1, and 0.36 with its message store) does with
//! each pattern when it continues a conversation: it rebuilds the prompt
//! from the stored responses (`load_conversation`, `Response.from_row`)
//! or, from llm 0.32 on, loads the conversation's thread
//! (`LogStore.thread_messages`), and the model plugin sends it without
//! checking it (the OpenAI plugin's `build_messages`); see `logs.rs` and
//! `store.rs`. Run on the fixtures by tests/oracle/llm_oracle.py.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

const VERSIONS: &str = "0.31.1";
/// The patterns only the message store has (llm 0.32 and later).
const STORE_VERSIONS: &str = "0.36";

const ORPHAN_CALL: &[Note] = &[Note::Text(
    "`llm -c` sends the call (`build_messages`: an `assistant` message with `tool_calls`) with nothing answering `{id}`: an OpenAI-compatible provider refuses every continuation of this conversation with a 400 (`An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'`), and llm logs nothing of the failed prompt",
)];

const fn orphan_call(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::SendsAsIs,
        severity: Some(Severity::Error),
        says: None,
        notes: ORPHAN_CALL,
        cites_context: false,
        versions: VERSIONS,
        healed_from: None,
    }
}

/// llm's `logs.db`.
pub static PROFILE: Profile = Profile {
    app: "llm",
    dialect: Dialect::Llm,
    formats: &[Format::SqliteTable],
    // llm sends through whichever model plugin the conversation's model
    // belongs to; the turn order it builds is its own.
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan_call(Pattern::OrphanToolCall),
        orphan_call(Pattern::OrphanToolCallAtEnd),
        Resume {
            pattern: Pattern::OrphanToolResult,
            does: Does::SendsAsIs,
            severity: Some(Severity::Error),
            says: None,
            notes: &[Note::Text(
                "`llm -c` sends this result as a `tool` message with `tool_call_id` `{call_id}` that no earlier `assistant` message calls (the response that held the call is gone: its history is silently missing too): an OpenAI-compatible provider refuses every continuation with a 400 (`Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'`)",
            )],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::RefusesToResume,
            severity: Some(Severity::Error),
            says: None,
            notes: &[Note::Text(
                "`llm -c` cannot continue this conversation at all: it parses the record with `json.loads` (`Response.from_row` a legacy column, `LogStore._load_parts` a part's `payload`) or rebuilds the part (`Part.from_dict`, which raises `ValueError` on an unknown type), which raises, and llm stops with a traceback before anything is sent",
            )],
            cites_context: true,
            versions: "0.31.1, 0.36",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::EmptyAssistantMessage,
            does: Does::SendsAsIs,
            severity: Some(Severity::Error),
            says: None,
            notes: &[Note::Text(
                "`llm -c` sends it (the OpenAI plugin's `_append_llm_message` keeps an empty assistant message) as an `assistant` message whose `content` is null with no `tool_calls`, which OpenAI's Chat Completions does not take: an assistant message needs content or tool calls",
            )],
            cites_context: false,
            versions: STORE_VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::DanglingParentInTree,
            does: Does::Drops,
            severity: Some(Severity::Error),
            says: Some(
                "`llm -c` cannot load the thread and sends none of it ({kept}, from the tip down to the break, and every message above it)",
            ),
            notes: &[Note::Text(
                "`LogStore.load_chain` walks `parent_hash` up from the thread's `tip_message_hash` and raises `KeyError` at a hash no `messages` row has; `load_conversation` ignores it and sends the conversation's legacy `responses` rows instead, none for a conversation llm 0.32 or later wrote: the new prompt goes out without its history, rc 0, and llm logs the new turn as the thread's tip, so the thread no longer reaches the old messages",
            )],
            cites_context: false,
            versions: STORE_VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::ParentCycleInTree,
            does: Does::RefusesToResume,
            severity: Some(Severity::Error),
            says: Some(
                "`llm -c` never finishes loading the thread: `LogStore.load_chain` follows `parent_hash` with no check, appending the same messages until the process is killed",
            ),
            notes: &[Note::Text(
                "llm cannot write a cycle (a message's hash covers its parent's hash): the rows were changed by something else",
            )],
            cites_context: false,
            versions: STORE_VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::DanglingCurrent,
            does: Does::Drops,
            severity: Some(Severity::Error),
            says: Some("`llm -c` cannot load the thread and sends none of it"),
            notes: &[Note::Text(
                "`LogStore.load_chain` raises `KeyError` for a tip no `messages` row has; `load_conversation` ignores it and sends the conversation's legacy `responses` rows instead, none for a conversation llm 0.32 or later wrote: the new prompt goes out without its history, rc 0, and llm logs the new turn as the thread's tip",
            )],
            cites_context: false,
            versions: STORE_VERSIONS,
            healed_from: None,
        },
    ],
};
