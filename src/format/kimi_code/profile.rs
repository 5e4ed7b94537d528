//! What Kimi Code does with each pattern when it resumes a session
//! (`@moonshot-ai/kimi-code` 2.1.0, `dist/main.mjs`: `AppendLogStore.read`,
//! `repairWireJournal`, `createLoopEventFold`), checked against the client
//! itself (tests/oracle/kimi.py, fixtures/kimi-code/README.md).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const VERSIONS: &str = "2.1.0";

const ORPHAN: &str = "Kimi Code answers the call on resume with an error result `Tool execution was interrupted before its result was recorded. Do not assume the tool completed successfully.`, in memory only (`createLoopEventFold`): the request is valid, and the model is told the call may not have run";

const HEALS_ORPHAN: &str = "an error result saying the call was interrupted, in memory only";

pub static PROFILE: Profile = Profile {
    app: "Kimi Code",
    dialect: Dialect::KimiCode,
    formats: &[],
    // Kimi Code rebuilds its own messages and sends them through the
    // provider configured; checked here as OpenAI Chat Completions (what
    // the oracle runs it against).
    provider: Provider::OpenAiChat,
    replays_as_stored: false,
    pairs_outputs_by_id: true,
    resume: &[
        Resume::new(
            Pattern::OrphanToolCall,
            Does::Heals(HEALS_ORPHAN),
            &[Note::Text(ORPHAN)],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            Does::Heals(HEALS_ORPHAN),
            &[
                Note::Text(ORPHAN),
                Note::Text(
                    "the session ends on this call: if Kimi Code is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::Drops,
            &[Note::Text(
                "Kimi Code ignores a result whose call is not waiting for one in its step (`createLoopEventFold`): the request is valid, and the output is lost from what the model sees",
            )],
        )
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecordTornTail,
            Does::Heals("drops the fragment and rewrites `wire.jsonl` without it, the original kept as `wire.jsonl.bak`"),
            &[Note::Text(
                "Kimi Code drops this last line on resume (a write cut short) and rewrites the journal without it, keeping the original once as `wire.jsonl.bak` (`repairWireJournal`): what the line held is lost, the rest resumes",
            )],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::Drops,
            &[Note::Text(
                "Kimi Code stops reading the journal at this line on resume and rewrites `wire.jsonl` with only the records before it (`repairWireJournal`; the original is kept as `wire.jsonl.bak` only when no such file is there yet): this line and every record after it are lost from the session for good",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::LoneSurrogate,
            Does::SendsAsIs,
            &[Note::Text(
                "Kimi Code reads the line (`JSON.parse` takes the escape) and sends the escape as it is; a strict reader refuses the line",
            )],
        )
        .saying("Kimi Code reads the line and sends the escape as it is")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        // 2.1.0 `dist/main.mjs`, `lowerMessage$1` (lines 193391-193461):
        // the think parts of a stored message go back as its reasoning
        // field; a message with none gets the field, empty, only when the
        // provider's thinking strategy keeps thinking (`preserveThinking`,
        // line 193460), which only the Kimi provider sets, with
        // `thinking.keep: "all"` and thinking on (188901): a DeepSeek model
        // gets no empty field. The model of a reply is the one its step's
        // `llm.request` record names.
        Resume::new(
            Pattern::MissingReasoningContent,
            Does::SendsAsIs,
            &[
                Note::Provider,
                Note::Text(
                    "Kimi Code sends an empty `reasoning_content` on such a message only through its Kimi provider with thinking kept (`thinking.keep: \"all\"`); through any other provider (DeepSeek's among them) it sends the message without one",
                ),
            ],
        )
        .on_versions(VERSIONS),
    ],
};
