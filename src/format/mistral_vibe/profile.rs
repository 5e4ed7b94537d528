//! What Mistral Vibe does with each pattern when it resumes a session
//! (`mistral-vibe` 3.0.3, read from its published source; the client
//! needs Python 3.12 and does not run here: docs/clients.md):
//!
//! - `_storage.py:4608` (`_read_journal`): a last journal line without a
//!   newline is skipped, and `_append_journal_record` (line 4652) truncates
//!   it before the next append: healed;
//! - `_storage.py:4614`: any other journal line that does not validate
//!   raises "invalid recovery journal record N", and the load fails: the
//!   session does not resume;
//! - a digest that does not match (journal record, chain, manifest,
//!   documents, chunks: lines 2512, 2132, 5022, 4618-4623) fails the load
//!   the same way: the `digest-mismatch` rule says so itself.
//!
//! What the Core (`_native.abi3.so`, compiled) does with the messages it
//! restores is not read: every message pattern is held to the provider's
//! rules (Mistral's chat API, OpenAI-shaped and strict on turn order:
//! "Unexpected role 'tool' after role 'user'", "Unexpected tool call id …
//! in tool results", "Assistant message must have either content or
//! tool_calls").

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const VERSIONS: &str = "3.0.3";

pub static PROFILE: Profile = Profile {
    app: "Mistral Vibe",
    dialect: Dialect::MistralVibe,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[
        Resume::new(
            Pattern::CorruptRecordTornTail,
            Does::Heals("skips the fragment, and the next append truncates it"),
            &[Note::Text(
                "Vibe skips a last journal line without a newline on load (`_read_journal`) and cuts it off before its next append (`_append_journal_record`): what the line held is lost, the rest resumes",
            )],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::RefusesToResume,
            &[Note::Text(
                "Vibe refuses the whole journal at this line (`_read_journal` raises \"invalid recovery journal record N\"): the session does not load until the line is fixed",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            Does::Heals("runs the call again when that is safe, else fails it"),
            &[
                Note::Text(
                    "a session stopped while a tool ran is stored as a recoverable generation whose journal holds the action: on resume Vibe's runtime runs it again when it is safe to, else fails it with `The interrupted effect cannot be reconnected safely` (`_runtime.py` `_recover`, line 3821)",
                ),
                Note::Text(
                    "the session ends on this call: if Vibe is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::EmptyAssistantMessage,
            Does::SendsAsIs,
            &[Note::Text(
                "Vibe sends the message as it is: Mistral's API refuses the request with \"Assistant message must have either content or tool_calls, but not none.\" (mistral-vibe#555), on every turn from here on",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::SendsAsIs,
            &[Note::Text(
                "Vibe sends the result as it is: Mistral's API refuses the request with \"Unexpected tool call id … in tool results\" (mistral-vibe#398), or with \"Unexpected role 'tool' after role 'user'\" when the result follows a user message (mistral-vibe#1114), on every turn from here on",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
    ],
};
