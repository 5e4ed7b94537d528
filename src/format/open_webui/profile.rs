//! What Open WebUI 0.12.4 does with each pattern when a chat is opened:
//! its web app's walk from `currentId` (`createMessagesList`) and its
//! backend's mending on load (`_repair_chat_current_id`); see `tree.rs`.
//! Both run on the fixtures by tests/oracle/open_webui.py.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

const VERSIONS: &str = "0.12.4";

pub static PROFILE: Profile = Profile {
    app: "Open WebUI",
    dialect: Dialect::OpenWebui,
    formats: &[Format::SqliteTable, Format::PostgresTable],
    // The web app sends the walk's messages to whatever model the chat
    // uses, through the backend's OpenAI-compatible endpoint.
    provider: Provider::OpenAiChat,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume {
            pattern: Pattern::DanglingParentInTree,
            does: Does::Drops,
            severity: Some(Severity::Error),
            says: Some(
                "the web app shows and sends the chat from this message on: {kept}, the ones above it are silently left out",
            ),
            notes: &[Note::Text(
                "Open WebUI's web app walks `parentId` up from `currentId` (`createMessagesList`); a parent it cannot find ends the walk, and its backend does not mend a missing parent on load",
            )],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::DanglingCurrent,
            does: Does::Heals(
                "the backend points `currentId` at the newest leaf when it loads the chat",
            ),
            severity: Some(Severity::Warning),
            says: Some(
                "an Open WebUI web app served by a backend without `_repair_chat_current_id` opens the chat empty; Open WebUI 0.12.4's backend points `currentId` at the newest leaf with a role when it loads the chat (in memory; later sources write it back)",
            ),
            notes: &[Note::Text(
                "reported as stuck on \"Loading…\" or blank in open-webui #24424 and #24157 (a regeneration that failed, a provider's rejection stored in place of the message)",
            )],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::DanglingChild,
            does: Does::Heals("the backend skips it when it moves `currentId` down a branch"),
            severity: Some(Severity::Warning),
            says: Some(
                "Open WebUI's backend skips it when it moves `currentId` down a branch (`_last_descendant_id`), and leaves it in `childrenIds`",
            ),
            notes: &[],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::ParentCycleInTree,
            does: Does::RefusesToResume,
            severity: Some(Severity::Error),
            says: Some(
                "the web app's walk (`createMessagesList`) never ends: the chat never opens (\"Loading…\" forever, until the tab runs out of memory); the backend does not mend it",
            ),
            notes: &[],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::MissingRole,
            does: Does::Unknown,
            severity: Some(Severity::Error),
            says: Some(
                "Open WebUI's backend never takes it for the current message (`_repair_chat_current_id` passes over messages without a role), and the web app's walk does not skip it when it lies on the walk",
            ),
            notes: &[Note::Text(
                "open-webui #26257: a follow-up saved a message without `role`, `parentId` or `timestamp`, and the chat stayed on \"Loading…\"",
            )],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
        Resume {
            pattern: Pattern::LoneSurrogate,
            does: Does::Unknown,
            severity: Some(Severity::Warning),
            says: Some(
                "Open WebUI reads it (Python's `json.loads` and the web app's `JSON.parse` take it); what reaches the model was not established",
            ),
            notes: &[Note::Text(
                "on PostgreSQL the `chat` column (`json`) keeps the escape, but every JSON operator on the chat fails (`Unicode low surrogate must follow a high surrogate`), and `jsonb` refuses it: Open WebUI 0.12.4's chat search applies `#>` and `->>` to the chats it searches",
            )],
            cites_context: false,
            versions: VERSIONS,
            healed_from: None,
        },
    ],
};
