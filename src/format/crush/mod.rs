//! Crush (charmbracelet/crush, `@charmland/crush`): its SQLite store
//! `crush.db`, one per project data directory (`.crush/`), read as Crush
//! loads a session to send it to the provider (`db`), repaired in Crush's
//! own rows (`writer`). Crush cannot run here (its npm package downloads
//! its binary from GitHub at install): everything is read from its source
//! at charmbracelet/crush@37f36e93 (`docs/clients.md`).

pub mod db;
pub mod discover;
pub mod profile;
pub mod writer;

/// The commit of Crush's source the reader and the profile were read from.
pub const SOURCE: &str = "charmbracelet/crush@37f36e93";
