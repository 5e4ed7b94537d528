//! Provider-shaped message logs are sent as they are stored: their
//! clients are the providers' own request shapes, with no behaviour of
//! their own on resume.

use crate::finding::profile::{Profile, Provider};
use crate::model::Dialect;

/// An OpenAI Chat Completions message log.
pub static OPENAI: Profile = Profile {
    app: "OpenAI Chat Completions log",
    dialect: Dialect::OpenAi,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};

/// kimi-cli's `context.jsonl`, replayed as Chat Completions messages.
pub static KIMI: Profile = Profile {
    app: "kimi-cli",
    dialect: Dialect::Kimi,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};

/// An Anthropic Messages log.
pub static ANTHROPIC: Profile = Profile {
    app: "Anthropic Messages log",
    dialect: Dialect::Anthropic,
    formats: &[],
    provider: Provider::Anthropic,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};
