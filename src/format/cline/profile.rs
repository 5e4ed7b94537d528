//! What Cline and Roo Code do with each pattern when they resume a task.

use crate::finding::Severity;
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
        healed_from: None,
    }
}

/// Cline (the VS Code extension's task history) answers every call the
/// next message leaves unanswered on every request it builds
/// (`ContextManager.getTruncatedMessages` → `ensureToolResultsFollowToolUse`,
/// cline/cline `src/core/context/context-management/ContextManager.ts`),
/// and a history ending on a call gets a new user message on resume, which
/// it then answers the same way: the request it sends is valid wherever
/// the call is, so a warning (the file still holds the call unanswered).
const fn cline_heals(pattern: Pattern, notes: &'static [Note]) -> Resume {
    Resume {
        severity: Some(Severity::Warning),
        ..orphan(pattern, CLINE_HEALS, notes)
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
        cline_heals(Pattern::OrphanToolCall, &[Note::Provider, CLINE_ORPHAN]),
        cline_heals(Pattern::OrphanToolCallAtEnd, &[CLINE_ORPHAN]),
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
            healed_from: None,
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
            healed_from: None,
        },
    ],
};

/// What Cline 4 sends for a call that has no result anywhere in the
/// history (checked against cline/cline@21cb8d25, `MessageBuilder`).
const CLINE_4_ANSWERS: Note = Note::Text(
    "Cline 4 answers it itself on every request, in memory (`MessageBuilder`: an `is_error` tool result `Tool execution was interrupted before a result was produced. Tool: <name>.`); the file keeps the call unanswered, so the model is told the call was interrupted, whatever the tool did",
);

/// Cline 4 heals an unanswered call wherever it is: a warning, since the
/// request it sends is valid.
const fn cline_4_heals(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::Heals("an `is_error` `interrupted` tool result, in memory, on every request"),
        severity: Some(Severity::Warning),
        says: None,
        notes: &[CLINE_4_ANSWERS],
        cites_context: false,
        versions: "",
        healed_from: None,
    }
}

pub static CLINE_4: Profile = Profile {
    app: "Cline ≥ 4.0 (SDK session store)",
    dialect: Dialect::Cline4,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        cline_4_heals(Pattern::OrphanToolCall),
        cline_4_heals(Pattern::OrphanToolCallAtEnd),
    ],
};
