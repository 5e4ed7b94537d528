//! What GitHub Copilot CLI does with each pattern when it resumes a
//! session: closed source, and where its behaviour is not known it says so.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

pub static PROFILE: Profile = Profile {
    app: "Copilot CLI",
    dialect: Dialect::CopilotCli,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        // Closed source, on Node: not seen resuming one.
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
