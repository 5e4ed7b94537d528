//! What Cursor does with each pattern when it resumes a composer: Cursor
//! is closed source, and where its behaviour is not known it says so.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const ORPHAN: &[Note] = &[Note::Text(
    "the tool bubble never reached `completed` or `error`; Cursor is closed source, and what it sends for such a bubble on resume is not known",
)];

const fn orphan(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::Unknown,
        severity: Some(Severity::Error),
        says: None,
        notes: ORPHAN,
        cites_context: false,
        versions: "",
        healed_from: None,
    }
}

pub static PROFILE: Profile = Profile {
    app: "Cursor",
    dialect: Dialect::Cursor,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall),
        orphan(Pattern::OrphanToolCallAtEnd),
        // Closed source, on Electron: not seen resuming one.
        Resume::new(
            Pattern::LoneSurrogate,
            Does::Unknown,
            &[Note::Text(
                "what the app sends in its place was not established; strict JSON readers (serde_json) refuse the record, and sent as is the escape is refused (Anthropic: `no low surrogate in string`)",
            )],
        )
        .saying("a `JSON.parse` reader takes it, the escape as U+FFFD")
        .with_severity(Severity::Warning),
    ],
};
