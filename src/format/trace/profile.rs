//! Requests recorded in traces are what was sent: held to the rules of
//! Chat Completions requests.

use crate::finding::profile::{Profile, Provider};
use crate::model::Dialect;

/// A request recorded by Arize Phoenix.
pub static PHOENIX: Profile = Profile {
    app: "Arize Phoenix trace",
    dialect: Dialect::Phoenix,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};

/// A request recorded with OpenInference attributes.
pub static OPENINFERENCE: Profile = Profile {
    app: "OpenInference trace",
    dialect: Dialect::OpenInference,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};

/// A request recorded with OpenTelemetry GenAI attributes.
pub static GENAI: Profile = Profile {
    app: "OpenTelemetry GenAI trace",
    dialect: Dialect::GenAi,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};
