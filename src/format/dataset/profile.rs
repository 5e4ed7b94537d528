//! What the consumers of a conversation dataset do with each pattern: a
//! dataset is not resumed but loaded by a trainer or an uploader, whose
//! request is the provider's (OpenAI chat messages) row by row. A pattern
//! named nowhere here is the provider's: the row is sent as it is, and
//! the request built from it is refused.

use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::{Dialect, Format};

/// A row that does not parse stops the loaders that read JSON Lines into
/// columns (Hugging Face `datasets`' `json` builder, pandas `read_json`):
/// the whole file fails to load, not only the row.
const CORRUPT_ROW: Resume = Resume::new(
    Pattern::CorruptRecord,
    Does::RefusesToResume,
    &[Note::Text(
        "a JSON Lines loader that reads the rows into columns (Hugging Face `datasets`, pandas) stops at this line: the whole file fails to load",
    )],
);

/// OpenAI chat messages, one conversation a row (OpenAI fine-tuning, TRL,
/// axolotl, Hugging Face `messages` datasets).
pub static MESSAGES: Profile = Profile {
    app: "conversation dataset (OpenAI chat messages)",
    dialect: Dialect::OpenAi,
    formats: &[Format::DatasetJsonl, Format::Parquet, Format::ArrowIpc],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[CORRUPT_ROW],
};

/// ShareGPT turns. LLaMA-Factory's ShareGPT converter skips a row whose
/// turn carries a role tag it does not accept (`Invalid role tag`), and
/// stops when no row is left (`Cannot find valid samples`).
pub static SHAREGPT: Profile = Profile {
    app: "ShareGPT dataset",
    dialect: Dialect::ShareGpt,
    formats: &[],
    provider: Provider::OpenAiChat,
    replays_as_stored: true,
    pairs_outputs_by_id: false,
    resume: &[Resume::new(
        Pattern::CorruptRecord,
        Does::Drops,
        &[Note::Text(
            "LLaMA-Factory skips the row (`Invalid role tag`, `Skipping this abnormal example`); a line that does not parse stops the whole load",
        )],
    )],
};
