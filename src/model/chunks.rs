//! The chunk view of a chunk store (dispatch's KV rows): the stored
//! chunks, in seq order, beside the true messages they make up. Rules that
//! check index-grouping loaders read it; `format::dispatch` fills it.

use std::sync::Arc;

use super::{Loc, Role};

/// One stored chunk of a chunk store (dispatch's KV rows): the raw view
/// that index-based loaders see, beside the true messages.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub seq: u64,
    pub loc: Loc,
    /// The stored role.
    pub role: Role,
    pub msg_idx: i64,
    pub chunk_idx: i64,
    /// The chunk's `type`.
    pub kind: std::borrow::Cow<'static, str>,
    /// What evidence tables show beside the content: the tool name of a
    /// result, the message of an error chunk.
    pub detail: Option<String>,
    /// The true message this chunk belongs to (position in `messages`).
    pub message: usize,
    /// The part of that message it became.
    pub part: usize,
}

/// The raw chunk log of a conversation, in seq order.
#[derive(Debug, Clone, Default)]
pub struct ChunkLog {
    pub chunks: Vec<Chunk>,
    /// The conversation's `:seq` counter row (location, value) if present.
    pub seq_counter: Option<(Loc, String)>,
    /// Keys seen more than once for the same seq (differently formatted).
    pub repeated: Vec<(u64, Loc)>,
    /// The buffer the conversation's texts share, for the reader to fill
    /// again once the conversation is dropped (see `source::kv`).
    pub buffer: Option<Arc<String>>,
}

impl ChunkLog {
    /// The messages an index-grouping loader (dispatch's `load()`) builds:
    /// a new message starts only where `msgIdx` changes. Returns index
    /// ranges into `chunks`.
    pub fn loaded_groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 1..=self.chunks.len() {
            if i == self.chunks.len() || self.chunks[i].msg_idx != self.chunks[i - 1].msg_idx {
                if i > start {
                    out.push(start..i);
                }
                start = i;
            }
        }
        out
    }
}
