//! chatfsck: `fsck` for LLM conversation histories.
//!
//! Pipeline: path → [`source`] (format and dialect detection, streaming
//! conversations) → [`rules`] (pure checks) → [`finding::Finding`]s →
//! [`report`] (human, JSON). See DESIGN.md in the project's shared notes.

pub mod app;
pub mod cli;
pub mod crosscheck;
pub mod error;
pub mod escape;
pub mod finding;
pub mod inspect;
pub mod lint;
pub mod model;
pub mod report;
pub mod rules;
pub mod source;
