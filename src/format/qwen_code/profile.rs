//! What Qwen Code does with each pattern when it resumes a session
//! (`@qwen-code/qwen-code` 0.15.10: `SessionService.loadSession`,
//! `buildApiHistoryFromConversation`, and the OpenAI converter's
//! `cleanOrphanedToolCalls`), checked against the client itself
//! (tests/oracle/qwen.py, fixtures/qwen-code/README.md), and every entry
//! again with 0.24.4, the version tests/oracle pins now: the same on
//! every fixture but an unanswered call, which 0.21.2 and later answer
//! (0.15.x is a maintenance line for Node.js 20; 0.21 and later need 22).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const VERSIONS: &str = "0.15.10, 0.24.4";

const ORPHAN: &str = "Qwen Code answers the call in the request it sends with a failure it makes up (`Tool execution result was not recorded \u{2014} likely interrupted by network failure, abort, or process exit. Treat as failure and retry if needed.`, the bundle's `ORPHAN_TOOL_USE_REPAIR_REASON`): the request is valid, and the model is told the call failed";

/// What Qwen Code did with an unanswered call before 0.21.2 (0.15.10).
const ORPHAN_EARLIER: &str = "remove the call from the request (`cleanOrphanedToolCalls`), and the whole assistant turn when it holds no text: the model is not told it made the call";

/// What 0.21.2 and later do with an unanswered call, in a few words.
const ANSWERS: Does = Does::Heals("answers it with a made-up failure result");

pub static PROFILE: Profile = Profile {
    app: "Qwen Code",
    dialect: Dialect::QwenCode,
    formats: &[],
    // Qwen Code keeps Gemini `Content` and sends it through the provider
    // the user configured; checked here as OpenAI Chat Completions (what
    // the oracle runs it against, and what most of its users configure).
    provider: Provider::OpenAiChat,
    replays_as_stored: false,
    pairs_outputs_by_id: true,
    resume: &[
        Resume::new(Pattern::OrphanToolCall, ANSWERS, &[Note::Text(ORPHAN)])
            .with_severity(Severity::Warning)
            .on_versions(VERSIONS)
            .healed_from_while_earlier("0.21.2", ORPHAN_EARLIER),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            ANSWERS,
            &[
                Note::Text(ORPHAN),
                Note::Text(
                    "the session ends on this call: if Qwen Code is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS)
        .healed_from_while_earlier("0.21.2", ORPHAN_EARLIER),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::Drops,
            &[Note::Text(
                "Qwen Code removes a result whose call is not in the request (`cleanOrphanedToolCalls`): the request is valid, and the output is lost from what the model sees",
            )],
        )
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecordTornTail,
            Does::Drops,
            &[Note::Text(
                "Qwen Code skips this line on resume without a word (it recovers no whole record from it), then appends its next record right onto the fragment (no newline first)",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::Drops,
            &[Note::Text(
                "Qwen Code skips what of this line is no whole record, without a word: what it held is lost, and when a record on the resumed path names it as its `parentUuid`, the walk stops there and everything before it is left out of the request",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::DanglingParentCut,
            Does::Drops,
            &[Note::Text(
                "Qwen Code walks `parentUuid` back from the last record of the file and stops at a parent no record has (`reconstructHistory`): the resume succeeds without a word, with only the records after the gap",
            )],
        )
        .saying("Qwen Code resumes from this record: the {lost} message(s) of the file before it are not sent")
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::ParentCycleCut,
            Does::Drops,
            &[Note::Text(
                "Qwen Code's walk keeps the uuids it passed and stops at one it meets again (`reconstructHistory`): the resume succeeds without a word",
            )],
        )
        .saying("Qwen Code's walk stops here: the {lost} message(s) of the file it does not reach are not sent")
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::LoneSurrogate,
            Does::SendsAsIs,
            &[Note::Text(
                "Qwen Code reads the line (`JSON.parse` takes the escape) and sends the escape as it is; a strict reader refuses the line",
            )],
        )
        .saying("Qwen Code reads the line and sends the escape as it is")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        // 0.15.10's `cli.js`: the DeepSeek provider's `buildRequest` maps
        // every outgoing message through `ensureReasoningContentOnToolCalls`
        // (lines 157554-157565, called at 157609), which gives an assistant
        // message without a non-empty `reasoning_content` an empty one. The
        // provider is picked by `isDeepSeekProvider` (157502-157506: the
        // api.deepseek.com host, or a model name holding `deepseek`), after
        // DashScope's (a DashScope base URL or Qwen OAuth, `determineProvider`
        // 159301-159313). The converter itself sends `reasoning_content`
        // only when the thought parts join to a non-empty text
        // (146586-146590): a turn stored without them goes with nothing
        // from any other provider. First released in 0.15.5 (its CHANGELOG:
        // "core: inject reasoning_content on DeepSeek tool-call replays
        // (#3729)"); 0.15.6's bundle already covers every assistant message.
        // Observed with the pinned client (tests/qwen_code.rs, the oracle
        // configured as `deepseek-v4-pro`, then as `mock-model`).
        Resume::new(
            Pattern::MissingReasoningContent,
            Does::Heals("its DeepSeek provider sends an empty `reasoning_content`"),
            &[Note::Text(
                "Qwen Code picks its DeepSeek provider by the model it is configured with (a name holding `deepseek`, as `{model}`, which wrote this history, does) or the api.deepseek.com host, and that provider sends `reasoning_content: \"\"` on every assistant message stored without reasoning (`ensureReasoningContentOnToolCalls`), which DeepSeek takes; configured with another name behind a proxy, or through a DashScope base URL (whose provider Qwen Code picks first), it sends none, and DeepSeek refuses the request",
            )],
        )
        .saying("Qwen Code sends an empty `reasoning_content` in its place, which DeepSeek takes")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS)
        .healed_from("0.15.5"),
    ],
};
