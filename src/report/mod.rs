//! Reports render what the engine computed; they never compute findings.

use std::io::{self, IsTerminal, Write};

use crate::lint::Outcome;

pub mod diff;
pub mod human;
pub mod inspect;
pub mod json;
pub mod rules;
pub mod snippet;

/// Output formats of `lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Diagnostics with evidence excerpts, for people.
    Human,
    /// One versioned JSON document (see docs/json-output.md).
    Json,
}

/// Whether to colour output written to stdout.
pub fn use_color() -> bool {
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A printer for lint results.
pub trait Report {
    fn render(&self, outcome: &Outcome, out: &mut dyn Write) -> io::Result<()>;
}

pub fn for_format(format: Format) -> Box<dyn Report> {
    match format {
        Format::Human => Box::new(human::Human::from_env()),
        Format::Json => Box::new(json::Json),
    }
}
