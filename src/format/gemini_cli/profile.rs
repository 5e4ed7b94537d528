//! What Gemini CLI does with each pattern when it resumes a chat
//! recording.

use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const ORPHAN: &str = "Gemini CLI sends the call unanswered on resume (its `historyHardening` repair runs only with `contextManagement.enabled`, off by default); the Gemini API answers `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.`";

pub static PROFILE: Profile = Profile {
    app: "Gemini CLI",
    dialect: Dialect::GeminiCli,
    formats: &[],
    provider: Provider::Gemini,
    pairs_outputs_by_id: false,
    resume: &[
        Resume {
            pattern: Pattern::OrphanToolCall,
            does: Does::SendsAsIs,
            severity: None,
            notes: &[Note::Text(ORPHAN), Note::Provider],
            cites_context: true,
            versions: "",
        },
        Resume {
            pattern: Pattern::OrphanToolCallAtEnd,
            does: Does::SendsAsIs,
            severity: None,
            notes: &[Note::Text(ORPHAN), Note::Provider],
            cites_context: true,
            versions: "",
        },
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::Drops,
            severity: None,
            notes: &[Note::Text(
                "Gemini CLI skips a line that does not parse without a word (`loadConversationRecord`): whatever it held is silently lost on resume",
            )],
            cites_context: true,
            versions: "",
        },
    ],
};
