//! Command-line definitions (also used to generate the man pages).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::finding::Severity;
use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "chatfsck",
    version,
    about = "fsck for LLM conversation histories: find, explain and repair corrupted agent histories",
    long_about = "chatfsck reads the histories agent apps persist (JSONL logs, JSON message \
arrays, Claude Code sessions, Codex rollouts, SQLite stores) and the traces they write \
(dispatch traces.db, Arize Phoenix, OTLP JSON), finds the known corruption patterns \
(orphan tool calls, interleaved messages, truncated arguments, torn records, prompts that \
differ from the store, …), and explains each with the exact lines as evidence. It never \
writes to its input.",
    after_help = "Exit codes (lint): 0 no finding at or above --fail-on, 1 such findings, 2 chatfsck could not do its job.\nExit codes (diff): 0 every recorded prompt matches the store, 1 some differ, 2 chatfsck could not do its job."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check histories and report every finding, with evidence.
    Lint(LintArgs),
    /// Show what a history holds: format, dialect, counts and a message timeline.
    Inspect(InspectArgs),
    /// List every rule: name, severity, whether repair fixes it, what it detects.
    Rules(RulesArgs),
    /// Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair.
    Explain(ExplainArgs),
    /// Compare a conversation store with the trace its app wrote: every recorded prompt beside the stored history.
    Diff(DiffArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
}

impl FailOn {
    pub fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Info => Severity::Info,
        }
    }
}

#[derive(Debug, Args)]
pub struct InputArgs {
    /// Longest JSONL line accepted, in MiB (a longer line is an error, not a history)
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub max_line_mib: usize,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Files or directories (walked recursively for *.jsonl, *.json and SQLite *.db)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Run only these rules (comma-separated rule names)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Vec<String>,
    /// Do not run these rules (comma-separated rule names)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Exit 1 when a finding of this severity or higher is found
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Cross-check against the trace the app wrote (dispatch traces.db, Phoenix phoenix.db,
    /// OTLP JSON): report prompts sent that differ from the stored history, and cut-off answers
    /// stored as complete
    #[arg(long, value_name = "TRACE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The conversation store (e.g. dispatch.db)
    #[arg(value_name = "STORE")]
    pub store: PathBuf,
    /// The trace its app wrote (dispatch traces.db, Phoenix phoenix.db, OTLP JSON)
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Show only this conversation, or one request (`<conversation>/turn-<n>/step-<k>`)
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InspectFormat {
    Human,
    Json,
    /// Tables that paste into a bug report
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The history to inspect
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Show only this conversation
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = InspectFormat::Human)]
    pub format: InspectFormat,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Rule name, e.g. orphan-tool-call
    #[arg(value_name = "RULE")]
    pub rule: String,
}
