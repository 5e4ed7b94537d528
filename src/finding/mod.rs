//! Findings: plain data produced by rules and rendered by reports.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::{Loc, SourceInfo};

mod fix;
pub mod profile;

pub use fix::{Action, Applicability, Fix};

/// The version of every JSON document chatfsck writes (lint, inspect,
/// repair log, diff): docs/json-output.md.
pub const JSON_VERSION: u32 = 1;

/// Also the value of `--fail-on` and of `fail-on` in chatfsck.toml.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    /// How many of `findings` have this severity.
    pub fn count<'a>(self, findings: impl IntoIterator<Item = &'a Finding>) -> usize {
        findings.into_iter().filter(|f| f.severity == self).count()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A piece of evidence: a record and what it shows.
#[derive(Debug, Clone, Serialize)]
pub struct Label {
    pub loc: Loc,
    pub text: String,
    /// The file this evidence is in, when it is not the finding's own file
    /// (a cross-check cites the store and the trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Arc<std::path::Path>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    #[serde(skip)]
    pub source: Arc<SourceInfo>,
    pub conversation: String,
    /// Position (0-based) of the message in the conversation, when the
    /// finding is about a message.
    pub message: Option<usize>,
    /// The primary record.
    pub loc: Option<Loc>,
    /// One line, lowercase, identifiers in backticks.
    pub summary: String,
    /// Notes that give context.
    pub notes: Vec<String>,
    /// Evidence records, the primary one first.
    pub labels: Vec<Label>,
    /// Tool call ids involved.
    pub ids: Vec<String>,
    /// Whether `chatfsck repair` fixes this finding in this input's format.
    pub fixable: bool,
    /// How to fix it, when the rule knows.
    #[serde(skip)]
    pub fix: Option<Fix>,
}

impl Finding {
    pub fn line(&self) -> Option<u64> {
        self.loc.as_ref().and_then(Loc::line)
    }
}
