//! What Crush does with each pattern when it loads a session to send it,
//! read from its source at charmbracelet/crush@37f36e93 (Crush cannot run
//! here: `docs/clients.md`). `agent.go` is `internal/agent/agent.go`,
//! `message.go` and `content.go` are in `internal/message/`.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

/// The source the profile was read from.
const VERSIONS: &str = "(source at 37f36e93)";

/// What Crush answers an unanswered call with, in memory, on every
/// request (`syntheticToolResultsForOrphanedCalls`, agent.go:1662-1687).
pub const SYNTHETIC: &str = "tool call was interrupted and did not produce a result, you may retry this call if the result is still needed";

const ORPHAN: &str = "Crush answers the call on every request with an error tool result `tool call was interrupted and did not produce a result, you may retry this call if the result is still needed` (`syntheticToolResultsForOrphanedCalls`, agent.go:1582-1586, 1662-1687), in memory only: the request is valid, but the model is told the call gave nothing (left by a Ctrl-C or a killed TUI mid-call: crush#1206)";

pub static PROFILE: Profile = Profile {
    app: "Crush",
    dialect: Dialect::Crush,
    formats: &[Format::SqliteTable],
    // Crush speaks every provider's API through charm.land/fantasy.
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume::new(
            Pattern::OrphanToolCall,
            Does::Heals("an interrupted-call error result, in memory only"),
            &[Note::Text(ORPHAN)],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            Does::Heals("an interrupted-call error result, in memory only"),
            &[
                Note::Text(ORPHAN),
                Note::Text(
                    "the session ends on this call: if Crush is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::Drops,
            &[Note::Text(
                "Crush drops a result whose call no message of the session holds (`filterOrphanedToolResults`, agent.go:1626-1653: `Dropping orphaned tool result with no matching tool call`): the request is valid, what the result says never reaches the model. A second result for a call that has one is not dropped (its call is known): it is sent, and the provider refuses the request",
            )],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::RefusesToResume,
            &[Note::Text(
                "Crush cannot load this session at all: `List` reads every row of the session and gives up on the first whose `parts` `unmarshalParts` refuses (message.go:457-470, 510-514, 581-655), so the session shows nothing and nothing is sent; without this row it loads",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::InvalidToolArguments,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "Crush sends the stored `input` as the call's arguments as it is (`ToAIMessage`, content.go:602-609); a call cut off mid-stream keeps its partial input when it was marked finished (a killed TUI: crush#2720, `invalid function arguments: json string`), and the provider refuses the request",
                ),
                Note::Provider,
            ],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::InvalidToolNameEmpty,
            Does::SendsAsIs,
            &[Note::Text(
                "Crush sends the call with its empty name as it is (`ToAIMessage`, content.go:602-609): every request of the session fails from then on (crush#659, when several tools run at once)",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::InterleavedMessage,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "Crush answers a call only when no row of the session holds its result (agent.go:1543-1556): a result stored after another message is sent where it is, after a message that is not its call's, and the provider refuses the request",
                ),
                Note::Provider,
            ],
        )
        .on_versions(VERSIONS),
        // content.go:583-585 gives a reply a reasoning part only when its
        // stored thinking is not empty; charm.land/fantasy v0.41.2 (its
        // go.mod) writes `reasoning_content` only for a message holding one
        // (providers/openaicompat/language_model_hooks.go:432-441). Nothing
        // fills it in for DeepSeek; its provider sends `thinking: enabled`
        // only when the model is configured to think (coordinator.go:552-557).
        Resume::new(
            Pattern::MissingReasoningContent,
            Does::SendsAsIs,
            &[
                Note::Text(
                    "Crush sends `reasoning_content` only on a reply whose stored thinking is not empty (content.go:583-585, fantasy's `ToPromptFunc`): this one goes without it, and in thinking mode DeepSeek refuses the request (crush#2696, crush#2754); turning thinking off for the model (`thinking: disabled`, coordinator.go:552-557) lets the session resume",
                ),
                Note::Provider,
            ],
        )
        .on_versions(VERSIONS),
    ],
};
