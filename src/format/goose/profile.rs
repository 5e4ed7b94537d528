//! What goose does with each pattern when it replies in a session
//! (`fix_conversation` runs on every reply).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

/// `{id}`: the call's id.
const ORPHAN: &[Note] = &[Note::Text(
    "goose drops this call on every reply (`fix_conversation`: `Removed orphaned tool request '{id}'`), and the assistant message with it when that message ends the history: the turn is silently lost from the model's view",
)];

const fn orphan(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::Drops,
        severity: Some(Severity::Error),
        says: None,
        notes: ORPHAN,
        cites_context: false,
        versions: "",
        healed_from: None,
    }
}

/// `{call_id}`: the response's call id.
const ORPHANS: [Resume; 3] = [
    orphan(Pattern::OrphanToolCall),
    orphan(Pattern::OrphanToolCallAtEnd),
    Resume::new(
        Pattern::OrphanToolResult,
        Does::Drops,
        &[Note::Text(
            "goose drops this response on every reply (`fix_conversation`: `Removed orphaned tool response '{call_id}'`): what it says silently never reaches the model",
        )],
    ),
];

/// goose's `sessions.db`.
pub static PROFILE: Profile = Profile {
    app: "goose",
    dialect: Dialect::Goose,
    formats: &[Format::SqliteTable],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    // `SessionStorage::get_conversation` (block/goose session_manager.rs,
    // at 0164300 and dbec165) parses each row's `content_json` with
    // `serde_json::from_str(&content_json)?`.
    resume: &[
        ORPHANS[0],
        ORPHANS[1],
        ORPHANS[2],
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "goose cannot load this session at all: its loader parses every row's `content_json` and gives up on the first that does not parse (serde_json's error), so nothing of the session is resumed; without this row it loads",
            )],
            cites_context: true,
            versions: "(source at 0164300, dbec165)",
            healed_from: None,
        },
    ],
};

/// goose's legacy `sessions/*.jsonl`.
pub static LEGACY_PROFILE: Profile = Profile {
    app: "goose (legacy JSON Lines sessions)",
    dialect: Dialect::Goose,
    formats: &[Format::Jsonl],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &ORPHANS,
};
