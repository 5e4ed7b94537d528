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
        notes: ORPHAN,
        cites_context: false,
        versions: "",
    }
}

pub static PROFILE: Profile = Profile {
    app: "Cursor",
    dialect: Dialect::Cursor,
    formats: &[],
    provider: Provider::Unknown,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall),
        orphan(Pattern::OrphanToolCallAtEnd),
    ],
};
