//! dispatch (seed 000) replays its chunk store's messages as Chat
//! Completions requests; its traces record the requests it sent.

use crate::finding::profile::{Profile, Provider};
use crate::model::Dialect;

/// dispatch's chunk store and its `traces.db`.
pub static PROFILE: Profile = Profile {
    app: "dispatch",
    dialect: Dialect::Dispatch,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};
