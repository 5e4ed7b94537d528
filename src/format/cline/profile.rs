//! What Cline and Roo Code do with each pattern when they resume a task.

use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const CLINE_ORPHAN: Note = Note::Text(
    "Cline answers it itself on the next request (`ensureToolResultsFollowToolUse` inserts a `result missing` tool result); the file keeps the call unanswered, and any other reader of it gets a history the provider rejects",
);

const ROO_ORPHAN: Note = Note::Text(
    "Roo Code answers it on resume (`Task was interrupted before this tool call could be completed.`); the file keeps the call unanswered, and any other reader of it gets a history the provider rejects",
);

/// The file keeps the call unanswered: in the middle of the history,
/// the provider's answer to any other reader comes first.
const fn orphan(pattern: Pattern, how: &'static str, notes: &'static [Note]) -> Resume {
    Resume {
        pattern,
        does: Does::Heals(how),
        severity: None,
        says: None,
        notes,
        cites_context: true,
        versions: "",
    }
}

const CLINE_HEALS: &str = "a `result missing` tool result, on the next request";
const ROO_HEALS: &str = "an `interrupted` tool result, on resume";

pub static CLINE: Profile = Profile {
    app: "Cline",
    dialect: Dialect::Cline,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(
            Pattern::OrphanToolCall,
            CLINE_HEALS,
            &[Note::Provider, CLINE_ORPHAN],
        ),
        orphan(Pattern::OrphanToolCallAtEnd, CLINE_HEALS, &[CLINE_ORPHAN]),
        Resume {
            pattern: Pattern::EmptyHistory,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Cline resumes the task with an empty history: all earlier context is silently gone (Cline never writes `[]` itself)",
            )],
            cites_context: true,
            versions: "",
        },
    ],
};

pub static ROO_CODE: Profile = Profile {
    app: "Roo Code",
    dialect: Dialect::RooCode,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(
            Pattern::OrphanToolCall,
            ROO_HEALS,
            &[Note::Provider, ROO_ORPHAN],
        ),
        orphan(Pattern::OrphanToolCallAtEnd, ROO_HEALS, &[ROO_ORPHAN]),
        Resume {
            pattern: Pattern::EmptyHistory,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Roo Code refuses to resume the task: `Unexpected: No existing API conversation history`",
            )],
            cites_context: true,
            versions: "",
        },
    ],
};
