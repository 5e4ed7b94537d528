//! What a history says beside its messages about the reasoning of its
//! assistant messages: the model the store names for each, and which ones
//! hold their reasoning field empty. Thinking-mode providers that require
//! the reasoning back (DeepSeek's `reasoning_content`) take an empty field
//! but refuse a missing one (`missing-reasoning-content`); a message read
//! with no thinking part is one or the other, and only the store knows.

use std::collections::BTreeMap;

use foldhash::HashSet;

#[derive(Debug, Clone, Default)]
pub struct Reasoning {
    /// Message position → the model the store names for that assistant
    /// message (Qwen Code's record `model`, pi's message `model`).
    pub models: BTreeMap<usize, String>,
    /// Assistant messages whose reasoning field is stored, empty
    /// (`"reasoning_content": ""`): sent as stored, the field is there.
    pub empty: HashSet<usize>,
    /// The store keeps reasoning in the request's own field
    /// (`reasoning_content`) and its client sends the messages as stored
    /// (a Chat Completions log that holds the field): a message without it
    /// goes without it. Stores that keep reasoning their own way (kimi-cli's
    /// `think` parts) leave it unset: how their client sends a message with
    /// none is its own.
    pub in_field: bool,
}

impl Reasoning {
    /// The model the store names for the message at `pos`, or failing
    /// that the nearest one it names before it, then after it (a store
    /// that names the model on some records only).
    pub fn model_of(&self, pos: usize) -> Option<&str> {
        self.models
            .range(..=pos)
            .next_back()
            .or_else(|| self.models.range(pos..).next())
            .map(|(_, m)| m.as_str())
    }
}
