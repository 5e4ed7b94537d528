//! chatfsck: `fsck` for LLM conversation histories.
//!
//! Pipeline: path → [`source`] (format and dialect detection, streaming
//! conversations) → [`rules`] (pure checks) → [`finding::Finding`]s →
//! [`report`] (human, JSON, SARIF, GitHub annotations, markdown). The
//! binary's [`app`] hands each command to its module in [`cmd`]. See
//! DESIGN.md in the project's shared notes.

pub mod app;
pub mod batch;
pub mod cleanup;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod crosscheck;
pub mod detail;
pub mod diff;
pub mod discover;
pub mod docgen;
pub mod error;
pub mod escape;
pub mod exit;
pub mod finding;
pub mod format;
pub mod inspect;
pub mod lint;
pub mod model;
pub mod progress;
pub mod repair;
pub mod report;
pub mod rules;
pub mod source;
pub mod write;
