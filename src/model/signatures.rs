//! Thought signatures (Gemini): what a Gemini history says beside its
//! messages about who wrote each model turn and which function calls carry
//! the opaque `thoughtSignature` the Gemini API hands out with a call.
//! Gemini 3 models reject a request whose current turn holds a function
//! call without one (`missing-thought-signature`).

use foldhash::{HashMap, HashSet};

use crate::model::pairing::PartRef;

#[derive(Debug, Clone, Default)]
pub struct Signatures {
    /// Message position → the model the store names for that model turn.
    pub models: HashMap<usize, String>,
    /// The function calls (message, part) that carry a `thoughtSignature`.
    pub signed: HashSet<PartRef>,
}
