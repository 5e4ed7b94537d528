//! What Gemini CLI does with each pattern when it resumes a chat
//! recording.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const ORPHAN: &str = "Gemini CLI sends the call unanswered on resume (its `historyHardening` repair runs only with `contextManagement.enabled`, off by default); the Gemini API answers `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.`";

pub static PROFILE: Profile = Profile {
    app: "Gemini CLI",
    dialect: Dialect::GeminiCli,
    formats: &[],
    provider: Provider::Gemini,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume {
            pattern: Pattern::OrphanToolCall,
            does: Does::SendsAsIs,
            severity: None,
            says: None,
            notes: &[Note::Text(ORPHAN), Note::Provider],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::OrphanToolCallAtEnd,
            does: Does::SendsAsIs,
            severity: None,
            says: None,
            notes: &[Note::Text(ORPHAN), Note::Provider],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Gemini CLI skips a line that does not parse without a word (`loadConversationRecord`): whatever it held is silently lost on resume",
            )],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume::new(
            Pattern::MissingThoughtSignature,
            Does::Heals("requests stamped with `skip_thought_signature_validator`"),
            &[Note::Text(
                "Gemini CLI stamps its own requests with `skip_thought_signature_validator`, and a resume with a new prompt moves these calls out of the current turn",
            )],
        ),
        Resume::new(
            Pattern::FunctionResponseCount,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "Gemini CLI sends every copy (merged into one user turn) and the Gemini API rejects the request: `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.`",
                ),
                Note::Text(
                    "Gemini CLI 0.61.0 writes such a history itself on resume (#29365), and every later resume keeps the copies",
                ),
            ],
        )
        .on_versions("0.61.0"),
        // The record loads and its text goes out with the escape in it;
        // the Gemini API's answer was not established.
        Resume::new(
            Pattern::LoneSurrogate,
            Does::SendsAsIs,
            &[Note::Text(
                "what the Gemini API answers to a request holding it is not established; a strict reader (serde_json) refuses the line",
            )],
        )
        .saying("Gemini CLI reads the line and sends the escape as it is")
        .with_severity(Severity::Warning)
        .on_versions("0.61.0"),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::SendsAsIs,
            &[Note::Text(
                "Gemini CLI merges it into the user turn it sits in and sends it with no call before it; the Gemini API answers `Please ensure that function response turn comes immediately after a function call turn.`",
            )],
        ),
    ],
};
