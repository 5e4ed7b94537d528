//! gbrain (seed 003) sends its message table's rows, in index order, as
//! Anthropic Messages requests.

use crate::finding::profile::{Profile, Provider};
use crate::model::Dialect;

/// gbrain's message tables.
pub static GBRAIN: Profile = Profile {
    app: "gbrain",
    dialect: Dialect::Gbrain,
    formats: &[],
    provider: Provider::Anthropic,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[],
};
