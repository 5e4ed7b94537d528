//! goose (block/goose): two stores, one per generation of its session
//! storage. `db`: the SQLite `sessions.db` goose writes today, repaired in
//! goose's own rows (`writer`). `legacy`: the JSON Lines session files
//! before it, whose first line is the session's metadata.
//!
//! On every reply goose runs `fix_conversation`: it drops unanswered tool
//! requests and stray responses silently. Both readers read the messages
//! as stored, and the findings say what goose will drop.

pub mod db;
pub mod discover;
pub mod legacy;
pub mod profile;
pub mod writer;
