//! What LangGraph does with each pattern when a thread resumes: the
//! checkpointer loads the latest checkpoint and its pending writes; the
//! prebuilt agent (`create_react_agent`, `ToolNode`) checks the messages
//! before it calls the model.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

/// `{id}`: the call's id. langgraph `prebuilt/chat_agent_executor.py`,
/// `_validate_chat_history`: every `AIMessage` tool call needs a
/// `ToolMessage` of its id, else `ValueError` with
/// `ErrorCode.INVALID_CHAT_HISTORY`.
const ORPHAN: &[Note] = &[Note::Text(
    "every resume of this thread raises INVALID_CHAT_HISTORY (\"Found AIMessages with tool_calls that do not have a corresponding ToolMessage\") before the model is called: `create_react_agent` checks the messages first, and the thread is stuck until a checkpoint answers `{id}`",
)];

const fn orphan(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::RefusesToResume,
        severity: Some(Severity::Error),
        says: None,
        notes: ORPHAN,
        cites_context: false,
        versions: "(langgraph 1.x, prebuilt `create_react_agent`)",
        healed_from: None,
    }
}

/// LangGraph's checkpointers (SQLite and PostgreSQL).
pub static PROFILE: Profile = Profile {
    app: "LangGraph",
    dialect: Dialect::LangGraph,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: true,
    resume: &[
        orphan(Pattern::OrphanToolCall),
        orphan(Pattern::OrphanToolCallAtEnd),
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "LangGraph cannot load this thread: the checkpointer deserialises the whole checkpoint (or pending write) when the thread is resumed, and the error ends the run before any node runs",
            )],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
    ],
};
