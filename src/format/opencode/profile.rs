//! What opencode does with each pattern when it loads a session: from its
//! database (≥ 1.2), and from its legacy JSON storage (≤ 1.1).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

const HEALS: Does = Does::Heals("the result `[Tool execution was interrupted]`, in memory only");

const fn orphan(pattern: Pattern, note: &'static [Note]) -> Resume {
    Resume {
        pattern,
        does: HEALS,
        severity: Some(Severity::Warning),
        says: None,
        notes: note,
        cites_context: false,
        versions: "",
        healed_from: None,
    }
}

const DB: &[Note] = &[Note::Text(
    "opencode patches this in memory on every load: it sends the call followed by the result `[Tool execution was interrupted]` (the tool part was left `pending` or `running`) and writes nothing back; other readers of this history see an unanswered call",
)];

const LEGACY: &[Note] = &[Note::Text(
    "opencode patches this in memory on every load: it sends the call followed by the result `[Tool execution was interrupted]` (the tool part was left `pending` or `running`) and writes nothing back; other readers of this history see an unanswered call (this is opencode ≤ 1.1's JSON storage, which opencode 1.18 does not load at all: `Session not found`)",
)];

/// The row loads and the request carries U+FFFD where the escape was.
const LONE_SURROGATE: Resume = Resume::new(
    Pattern::LoneSurrogate,
    Does::Heals("U+FFFD in the escape's place"),
    &[Note::Text(
        "strict JSON readers (serde_json) refuse the row's `data`; sent as is, the escape is refused (Anthropic: `no low surrogate in string`)",
    )],
)
.saying("opencode sends U+FFFD in {place}")
.with_severity(Severity::Warning)
.on_versions("1.18.33");

pub static PROFILE: Profile = Profile {
    app: "opencode",
    dialect: Dialect::Opencode,
    formats: &[Format::SqliteTable],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall, DB),
        orphan(Pattern::OrphanToolCallAtEnd, DB),
        LONE_SURROGATE,
    ],
};

pub static LEGACY_PROFILE: Profile = Profile {
    app: "opencode ≤ 1.1 (JSON storage)",
    dialect: Dialect::Opencode,
    formats: &[Format::Json],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall, LEGACY),
        orphan(Pattern::OrphanToolCallAtEnd, LEGACY),
        LONE_SURROGATE,
    ],
};
