//! What Codex does with each pattern when it resumes a rollout
//! (`codex-rs`, `normalize.rs` and the rollout reader).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

/// `{output}`: the output item Codex inserts for the call's kind.
const ORPHAN: &str = "Codex patches this on resume: it inserts `{output}{output:\"aborted\"}` right after the call, in memory only (nothing is written to the rollout or logged); the request is valid, but the model is told the call was aborted";

pub static PROFILE: Profile = Profile {
    app: "Codex",
    dialect: Dialect::Codex,
    formats: &[],
    provider: Provider::OpenAiResponses,
    replays_as_stored: false,
    // `ensure_call_outputs_present` answers a call only when no output
    // anywhere in the rollout has its id.
    pairs_outputs_by_id: true,
    resume: &[
        Resume {
            pattern: Pattern::MissingOrdinalAtEnd,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "it is the last line: Codex reads its ordinal to continue the numbering, and refuses to resume (`final paginated rollout record at … is missing an ordinal`)",
            )],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::MissingOrdinal,
            does: Does::SendsAsIs,
            severity: Some(Severity::Info),
            says: None,
            notes: &[Note::Text(
                "Codex never writes a line without one: another writer did; Codex 0.169.0 resumes the rollout as it is",
            )],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::ReusedOrdinal,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex's history projection expects ordinal {next} next: `thread history projection expected ordinal {next}, got {got}`",
            )],
            cites_context: true,
            versions: "0.146 and later",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::MissingForkParent,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex refuses to resume it: `invalid paginated history lineage for {thread}: missing source rollout`",
            )],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::ProjectionOutOfStep,
            does: Does::Fails("indexes none of its later turns, and refuses to fork it"),
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex resumes it, but its projection ({store}) never indexes the turns appended from now on, and `fork` refuses the thread: `failed to prepare paginated fork: thread-store internal error: durable rollout shrank before projection`; `chatfsck repair --in-place` resets the thread's projection, which Codex then rebuilds from the rollout",
            )],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::OrphanToolCall,
            does: Does::Heals("an `aborted` output after the call, in memory only"),
            severity: Some(Severity::Warning),
            says: None,
            notes: &[Note::Text(ORPHAN)],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::OrphanToolCallAtEnd,
            does: Does::Heals("an `aborted` output after the call, in memory only"),
            severity: Some(Severity::Warning),
            says: None,
            notes: &[
                Note::Text(ORPHAN),
                Note::Text(
                    "the rollout ends on this call: if Codex is still running this session, the call may simply be in progress",
                ),
            ],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecordNotUtf8,
            does: Does::RefusesToResume,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex reads the whole rollout as UTF-8 text: with this line in it, the resume fails (`failed to load thread history …: stream did not contain valid UTF-8`) and no item of the session reaches the model",
            )],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecordTornTail,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex skips this line on resume and says nothing: the item it held (often the turn's final answer) is silently lost; it writes a newline before appending, so the fragment stays in the rollout",
            )],
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
                "Codex skips this line on resume and says nothing: the item it held is silently lost",
            )],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::DuplicateToolCallId,
            does: Does::SendsAsIs,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Codex sends both calls as stored on resume (it answers a call itself only when no output anywhere has its id), and the request is refused: two calls with one `call_id`",
            )],
            cites_context: true,
            versions: "",
            healed_from: None,
        },
        Resume::new(
            Pattern::ReasoningWithoutFollower,
            Does::SendsAsIs,
            &[Note::Text(
                "Codex sends it as stored on resume, and the Responses API answers `Item 'rs_…' of type 'reasoning' was provided without its required following item.`",
            )],
        ),
        // `{call_id}`: the output's call id; `{want}`: the output type the
        // call needs.
        Resume::new(
            Pattern::MismatchedToolOutput,
            Does::Drops,
            &[Note::Text(
                "Codex drops this output on resume, logging `ERROR codex_core::util: Orphan function call output for call id: {call_id}`, and inserts `{want}{output:\"aborted\"}` after the call: the real output is lost",
            )],
        ),
        Resume::new(
            Pattern::InvalidToolNameChars,
            Does::SendsAsIs,
            &[Note::Text(
                "Codex 0.169.0 sends the call under its name as stored on resume (measured with the pinned client), and the Responses API refuses the request: `Invalid 'input[N].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.` (openai/codex#24369)",
            )],
        ),
        // `{id}`: the stored id; `{want}`: the prefix the API expects.
        Resume::new(
            Pattern::InvalidItemId,
            Does::SendsAsIs,
            &[Note::Text(
                "Codex 0.169.0 sends the item with its stored `id` on resume (measured with the pinned client), and the Responses API refuses the request: `[invalid_id_prefix] Invalid 'input[N].id': '{id}'. Expected an ID that begins with '{want}'.`",
            )],
        ),
        Resume {
            pattern: Pattern::InvalidItemIdUuid,
            does: Does::Heals("the id is left out of the request"),
            severity: Some(Severity::Info),
            says: None,
            notes: &[Note::Text(
                "Codex 0.169.0 leaves a UUID-shaped id out of the request on resume (measured with the pinned client: a message, reasoning or function call with a UUID id is sent without it); earlier versions sent it, and the Responses API refused the request: `[invalid_id_prefix] Invalid 'input[N].id': '{id}'. Expected an ID that begins with '{want}'.` (openai/codex#33176)",
            )],
            cites_context: true,
            versions: "0.169.0",
            healed_from: None,
        },
        Resume::new(
            Pattern::DamagedEncryptedContent,
            Does::SendsAsIs,
            &[Note::Text(
                "Codex 0.169.0 sends the reasoning item as stored on resume (measured with the pinned client), and the Responses API refuses the request: `The encrypted content gAAA... could not be verified.` (`invalid_encrypted_content`)",
            )],
        ),
        // `{call_id}`: the output's call id.
        Resume::new(
            Pattern::OrphanToolResult,
            Does::Drops,
            &[Note::Text(
                "Codex drops this output on resume (`remove_orphan_outputs`) and logs `ERROR codex_core::util: Orphan function call output for call id: {call_id}`: the output is lost from the history it sends",
            )],
        ),
    ],
};
