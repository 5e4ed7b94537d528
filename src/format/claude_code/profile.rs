//! What Claude Code does with each pattern when it resumes a session.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

pub static PROFILE: Profile = Profile {
    app: "Claude Code",
    dialect: Dialect::ClaudeCode,
    formats: &[],
    provider: Provider::Anthropic,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume {
            pattern: Pattern::OrphanToolCall,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x removes the unanswered call from the request without a word: the call is lost from the history the model sees",
            )],
            cites_context: true,
            versions: "2.1.x",
        },
        Resume {
            pattern: Pattern::OrphanToolCallAtEnd,
            does: Does::Heals(
                "an `is_error` result `[Tool call interrupted: …]`, appended to the session file",
            ),
            severity: Some(Severity::Warning),
            says: None,
            notes: &[
                Note::Text(
                    "a session whose last record is a tool call may simply be running: the tool has not returned yet",
                ),
                Note::Text(
                    "on resume, Claude Code 2.1.x answers it with an `is_error` tool_result `[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. …]` and an assistant `No response requested.`, and appends both to the session file",
                ),
            ],
            cites_context: true,
            versions: "2.1.x",
        },
        Resume {
            pattern: Pattern::CorruptRecordTornTail,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the client appends after it",
            )],
            cites_context: true,
            versions: "2.1.x",
        },
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the records chained to it lose their parent (see `dangling-parent`)",
            )],
            cites_context: true,
            versions: "2.1.x",
        },
        // Claude Code reads the record and sends U+FFFD instead.
        Resume::new(
            Pattern::LoneSurrogate,
            Does::Heals("U+FFFD in the escape's place"),
            &[Note::Text(
                "strict JSON readers reject the line; sent as is, the API answers `no low surrogate in string`",
            )],
        )
        .saying("Claude Code sends U+FFFD in {place}")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::OrphanToolResultOffChain,
            Does::Drops,
            &[Note::Text(
                "Claude Code leaves it out of the request: its content is lost",
            )],
        ),
        Resume::new(
            Pattern::InterleavedMessage,
            Does::Heals("`is_error` results right after the calls; the real results are left out"),
            &[Note::Text(
                "Claude Code 2.1.x answers the calls with `is_error` results `[Tool result missing due to internal error]` right after them and leaves the real results out: the request is accepted, and what the tools returned is lost",
            )],
        )
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::EmptyTextBlock,
            Does::Heals("the block left out of the request"),
            &[Note::Text(
                "Claude Code 2.1.x leaves a blank text block out of the request it builds, so its own resume is accepted; the API refuses the block (`messages: text content blocks must be non-empty`), and other readers of the session send it",
            )],
        )
        .saying("Claude Code leaves it out of the request")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::InvalidToolArguments,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.x sends the `input` as stored, and the API refuses the request: `tool_use.input: Input should be a valid dictionary`",
            )],
        )
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::DuplicateToolCallId,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.x sends the first call of the id only: the later call is left out and its result sent as `(no content)`, so that call and its output are lost from the history the model sees",
            )],
        )
        .on_versions("2.1.x"),
    ],
};
