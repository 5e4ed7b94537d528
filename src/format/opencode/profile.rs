//! What opencode does with each pattern when it loads a session: from its
//! database (≥ 1.2), and from its legacy JSON storage (≤ 1.1).

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

const HEALS: Does = Does::Heals("the result `[Tool execution was interrupted]`, in memory only");

const fn orphan(pattern: Pattern, note: &'static [Note]) -> Resume {
    Resume {
        pattern,
        does: HEALS,
        severity: Some(Severity::Warning),
        says: None,
        notes: note,
        cites_context: false,
        versions: "",
        healed_from: None,
    }
}

const DB: &[Note] = &[Note::Text(
    "opencode patches this in memory on every load: it sends the call followed by the result `[Tool execution was interrupted]` (the tool part was left `pending` or `running`) and writes nothing back; other readers of this history see an unanswered call",
)];

const LEGACY: &[Note] = &[Note::Text(
    "opencode patches this in memory on every load: it sends the call followed by the result `[Tool execution was interrupted]` (the tool part was left `pending` or `running`) and writes nothing back; other readers of this history see an unanswered call (this is opencode ≤ 1.1's JSON storage, which opencode 1.18 does not load at all: `Session not found`)",
)];

/// The row loads and the request carries U+FFFD where the escape was.
const LONE_SURROGATE: Resume = Resume::new(
    Pattern::LoneSurrogate,
    Does::Heals("U+FFFD in the escape's place"),
    &[Note::Text(
        "strict JSON readers (serde_json) refuse the row's `data`; sent as is, the escape is refused (Anthropic: `no low surrogate in string`)",
    )],
)
.saying("opencode sends U+FFFD in {place}")
.with_severity(Severity::Warning)
.on_versions("1.18.33");

pub static PROFILE: Profile = Profile {
    app: "opencode",
    dialect: Dialect::Opencode,
    formats: &[Format::SqliteTable],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall, DB),
        orphan(Pattern::OrphanToolCallAtEnd, DB),
        LONE_SURROGATE,
        // 1.18.33's bundle, `ProviderTransform`'s message normalisation:
        // when the model's API id holds `deepseek`, an assistant message
        // with no reasoning part gets an empty one; then, for a model whose
        // `capabilities.interleaved.field` is set (the catalogue's DeepSeek
        // models; an `@ai-sdk/openai-compatible` model whose id holds
        // `deepseek` gets `reasoning_content` by default), every assistant
        // message carries its reasoning text, empty or not, in that field
        // (not through `@openrouter/ai-sdk-provider`). From 1.14.24 ("Fixed
        // DeepSeek assistant messages so reasoning is always included",
        // PR #24180); 1.14.29 made `reasoning_content` the default field of
        // OpenAI-compatible DeepSeek setups (both release notes quoted in
        // anomalyco/opencode#25311). Observed with the pinned client
        // (tests/opencode.rs, the real client against the mock): as
        // `deepseek-v4-pro` the reply without reasoning goes with
        // `reasoning_content: ""`; as `glm-5`, without the field.
        Resume::new(
            Pattern::MissingReasoningContent,
            Does::Heals("an empty reasoning part, sent as an empty `reasoning_content`"),
            &[Note::Text(
                "opencode gives an assistant message of `{model}` without reasoning an empty reasoning part and sends it as `reasoning_content: \"\"`, which DeepSeek takes (`ProviderTransform`, for a model whose API id holds `deepseek`)",
            )],
        )
        .saying("opencode sends an empty `reasoning_content` in its place, which DeepSeek takes")
        .with_severity(Severity::Warning)
        .on_versions("1.18.33")
        .healed_from("1.14.24"),
    ],
};

pub static LEGACY_PROFILE: Profile = Profile {
    app: "opencode ≤ 1.1 (JSON storage)",
    dialect: Dialect::Opencode,
    formats: &[Format::Json],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        orphan(Pattern::OrphanToolCall, LEGACY),
        orphan(Pattern::OrphanToolCallAtEnd, LEGACY),
        LONE_SURROGATE,
    ],
};
