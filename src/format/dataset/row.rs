//! One row of a conversation dataset, read into a conversation: the code
//! every dataset container (JSON Lines here, a batch of a columnar file
//! later) hands its rows to. It keeps no state between rows, so a caller
//! may read rows in any order, on any thread, one batch at a time.
//!
//! A row's messages are read by the provider-shaped message reader
//! (`chat::record`), one array element per record, so a dataset row is
//! held to exactly what an OpenAI message log is; ShareGPT turns are first
//! translated into the OpenAI message they stand for ([`super::sharegpt`]).

use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::format::records::record::{Builder, Handlers};
use crate::model::{Conversation, Loc, SourceInfo};

/// How a row writes its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// OpenAI chat messages (`{"role": ..., "content": ..., "tool_calls": ...}`):
    /// OpenAI fine-tuning files, TRL, axolotl, Hugging Face `messages`.
    Messages,
    /// ShareGPT turns (`{"from": "human", "value": ...}`).
    ShareGpt,
}

/// One row's conversation, as a container hands it over.
pub struct Row<'a> {
    /// The row's messages: the text of a JSON array.
    pub messages: &'a str,
    pub shape: Shape,
    /// What findings call the row: its id, or its line or row number.
    pub name: String,
    /// Where a piece of `messages` is in the input (its byte range in
    /// `messages`), for the findings' evidence and the repair.
    pub at: &'a dyn Fn(Range<usize>) -> Loc,
    /// Where the whole row is, for a row whose messages do not parse.
    pub whole: Loc,
}

/// Only provider-shaped records are read from a row.
static MESSAGES: Handlers = Handlers {
    chat: Some(crate::format::chat::record),
    claude_code: None,
    codex: None,
};

/// Read one row into a conversation (`source` says which input and
/// dialect it belongs to). A row whose messages are not a JSON array is a
/// conversation with that one damaged record, never an error: one bad row
/// does not stop the others.
pub fn read_row(row: &Row<'_>, source: Arc<SourceInfo>) -> Conversation {
    let mut b = Builder::new(Conversation::new(row.name.clone(), source), &MESSAGES);
    let elements = match serde_json::from_str::<Vec<&RawValue>>(row.messages) {
        Ok(e) => e,
        Err(e) => {
            let what = match row.shape {
                Shape::Messages => "messages",
                Shape::ShareGpt => "conversations",
            };
            let reason = if serde_json::from_str::<serde::de::IgnoredAny>(row.messages).is_ok() {
                format!("has `{what}` that is not an array")
            } else {
                format!(
                    "has `{what}` that is not valid JSON ({})",
                    crate::format::records::record::json_error(&e)
                )
            };
            b.corrupt(row.whole.clone(), reason, row.messages.as_bytes(), false);
            return b.conv;
        }
    };
    let base = row.messages.as_ptr() as usize;
    let range_of = |el: &RawValue| {
        let off = el.get().as_ptr() as usize - base;
        off..off + el.get().len()
    };
    match row.shape {
        Shape::Messages => {
            for el in elements {
                b.feed(el.get(), (row.at)(range_of(el)), false);
            }
        }
        Shape::ShareGpt => {
            let mut calls = super::sharegpt::Calls::default();
            for (k, el) in elements.into_iter().enumerate() {
                let loc = (row.at)(range_of(el));
                match calls.translate(el.get(), k) {
                    Ok(text) => b.feed(&text, loc, false),
                    Err(reason) => b.corrupt(loc, reason, el.get().as_bytes(), false),
                }
            }
        }
    }
    b.conv
}

// A row's findings: `crate::lint::check` on its conversation (every
// selected rule, held to what the dataset's consumers do, through the
// dataset's profile); formats do not run rules themselves.
