//! What pi does with each pattern when it resumes a session
//! (`@mariozechner/pi-coding-agent` 0.73.1: `dist/core/session-manager.js`,
//! `convertToLlm`, and pi-ai's `transformMessages`), checked against the
//! client itself (tests/oracle/pi.py).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const ORPHAN: &str = "pi answers the call on resume with an `isError` tool result `No result provided` (pi-ai's `transformMessages`), in memory only: the request is valid, but the model is told the call gave nothing";

const VERSIONS: &str = "0.73.1";

pub static PROFILE: Profile = Profile {
    app: "pi",
    dialect: Dialect::Pi,
    formats: &[],
    // pi speaks every provider's API; what it sends is built from its own
    // entries, checked here as OpenAI Chat Completions (what the oracle
    // runs it against).
    provider: Provider::OpenAiChat,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume::new(
            Pattern::OrphanToolCall,
            Does::Heals("a `No result provided` error result, in memory only"),
            &[Note::Text(ORPHAN)],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            Does::Heals("a `No result provided` error result, in memory only"),
            &[
                Note::Text(ORPHAN),
                Note::Text(
                    "the session ends on this call: if pi is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecordTornTail,
            Does::Drops,
            &[Note::Text(
                "pi skips this line on resume without a word, then appends its next entry right onto the fragment (no newline first): that entry is lost too, the entries after it hang from a parent no line holds, and the resume after that sends only what came after it: the history is lost",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::Drops,
            &[Note::Text(
                "pi skips this line on resume without a word: what it held is lost, and when an entry on the resumed path names it as its `parentId`, pi's walk stops there and everything before it is silently left out of the request",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "pi sends the result as it is, with no call before it (pi-ai answers only calls), and the provider refuses the request",
                ),
                Note::Provider,
            ],
        )
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::InterleavedMessage,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "pi answers the call with `No result provided` when the other message comes, then sends the real result after that message with no call before it, and the provider refuses the request (an extension's `custom_message` written during a tool run: pi-shazam#780)",
                ),
                Note::Provider,
            ],
        )
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::DanglingParentCut,
            Does::Drops,
            &[Note::Text(
                "pi walks `parentId` back from the last entry of the file and stops at a `parentId` no entry has (`buildSessionContext`): the resume succeeds without a word, with only the entries after the gap",
            )],
        )
        .saying("pi resumes from this entry: the {lost} message(s) of the file before it are not sent")
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::ParentCycleCut,
            Does::RefusesToResume,
            &[Note::Text(
                "pi walks `parentId` back from the last entry (`buildSessionContext`) and keeps no record of the entries it passed: on a cycle it never ends, and the resume hangs (its path grows until the process is killed)",
            )],
        )
        .saying("pi never ends its walk from the last entry: the resume hangs")
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::LoneSurrogate,
            Does::SendsAsIs,
            &[Note::Text(
                "pi reads the line (`JSON.parse` takes the escape) and sends the escape as it is; a strict reader refuses the line",
            )],
        )
        .saying("pi reads the line and sends the escape as it is")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        // pi-ai 0.73.1 `dist/providers/openai-completions.js`: an assistant
        // message is given `reasoning_content: ""` when it has none and
        // `compat.requiresReasoningContentOnAssistantMessages` holds for a
        // reasoning model (lines 700-704); `detectCompat` sets it for the
        // `deepseek` provider or a deepseek.com base URL (line 879), a
        // model's own `compat` may set it (913-914). Thinking blocks with
        // text go back under the field their signature names (661-663).
        // From 0.70.1 (pi-coding-agent's CHANGELOG: "Fixed DeepSeek V4
        // session replay 400 errors by sending DeepSeek-compatible thinking
        // controls and replayed assistant `reasoning_content` fields
        // (#3636)"); 0.71.0 extends it to generated OpenAI-compatible
        // DeepSeek models outside the direct provider (#3940). Observed
        // with the pinned pi (tests/pi.rs, the mock serving a provider
        // named `deepseek`, then `mock`).
        Resume::new(
            Pattern::MissingReasoningContent,
            Does::Heals("its DeepSeek provider sends an empty `reasoning_content`"),
            &[Note::Text(
                "pi sends `reasoning_content: \"\"` on an assistant message with no reasoning when `{model}` goes through its `deepseek` provider (or a deepseek.com base URL) as a reasoning model (`requiresReasoningContentOnAssistantMessages`), which DeepSeek takes; through another provider (a proxy, OpenRouter) it sends none",
            )],
        )
        .saying("pi sends an empty `reasoning_content` in its place, which DeepSeek takes")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS)
        .healed_from("0.70.1"),
    ],
};
