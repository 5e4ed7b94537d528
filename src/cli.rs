//! Command-line definitions (also used to generate the man pages).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::finding::Severity;
use crate::report::{Format, FormatArg};

#[derive(Debug, Parser)]
#[command(
    name = "chatfsck",
    version,
    about = "fsck for LLM conversation histories: find, explain and repair corrupted agent histories",
    long_about = "Start here:
  chatfsck lint                        every agent history on this machine (Claude Code, Codex, \
Gemini CLI, opencode, Cline, Roo Code, goose, Cursor, Copilot CLI), where each app keeps it, \
with a table per app
  chatfsck lint --last                 the session you were just in (changed last, any app)
  chatfsck repair --in-place <ID>      repair a session named by its client's id (`claude \
--resume`, `codex resume`, `gemini --resume`, opencode's session list) or a unique prefix, \
after a timestamped backup beside it

chatfsck reads the histories agent apps persist (JSONL logs, JSON message \
arrays, Claude Code sessions, Codex rollouts, SQLite stores) and the traces they write \
(dispatch traces.db, Arize Phoenix, OTLP JSON), finds the known corruption patterns \
(orphan tool calls, interleaved messages, truncated arguments, torn records, prompts that \
differ from the store, …), and explains each with the exact lines as evidence. It never \
writes to its input.",
    after_help = "Exit codes (lint): 0 no finding at or above --fail-on, 1 such findings, 2 chatfsck could not do its job.\nExit codes (diff): 0 no differences (with a trace: every recorded prompt matches the store), 1 differences, 2 chatfsck could not do its job.\nInterrupted (Ctrl-C, SIGTERM, SIGHUP): exit 130, after removing the private copies of WAL databases and unfinished repair output."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check histories and report every finding, with evidence (no path: every app's histories on this machine).
    Lint(LintArgs),
    /// Show what a history holds: format, dialect, counts and a message timeline.
    Inspect(InspectArgs),
    /// Write a repaired copy of a history (the input is never changed).
    Repair(RepairArgs),
    /// Compare two histories message by message (e.g. original and repaired), or a
    /// conversation store with the trace its app wrote (every recorded prompt beside the
    /// stored history).
    Diff(DiffArgs),
    /// List every rule: name, severity, whether repair fixes it, what it detects.
    Rules(RulesArgs),
    /// Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct InputArgs {
    /// Longest JSONL line accepted, in MiB (a longer line is an error, not a history)
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub max_line_mib: usize,
    /// Read this message table of a SQLite or PostgreSQL database (one row per message; needs the four column flags)
    #[arg(
        long,
        value_name = "TABLE",
        requires_all = ["conversation_column", "index_column", "role_column", "content_column"],
        help_heading = "Message table mapping"
    )]
    pub table: Option<String>,
    /// Column that names the conversation of a row
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "table",
        help_heading = "Message table mapping"
    )]
    pub conversation_column: Option<String>,
    /// Integer column that orders the messages of a conversation
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "table",
        help_heading = "Message table mapping"
    )]
    pub index_column: Option<String>,
    /// Column holding the role (`user`, `assistant`, `system`, `tool`)
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "table",
        help_heading = "Message table mapping"
    )]
    pub role_column: Option<String>,
    /// Column holding the content: Anthropic content blocks or parts (JSON), or plain text
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "table",
        help_heading = "Message table mapping"
    )]
    pub content_column: Option<String>,
    /// Conversation datasets: the member (JSON Lines) that holds each row's messages, when it is not `messages` (or ShareGPT's `conversations`)
    #[arg(long, value_name = "COLUMN", help_heading = "Conversation datasets")]
    pub messages_column: Option<String>,
    /// Conversation datasets: the member (JSON Lines) that names each row in findings, when it is not `id`
    #[arg(long, value_name = "COLUMN", help_heading = "Conversation datasets")]
    pub id_column: Option<String>,
}

impl InputArgs {
    /// The message table named by the mapping flags, if any.
    pub fn mapping(&self) -> Option<crate::source::Mapping> {
        Some(crate::source::Mapping {
            table: self.table.clone()?,
            conversation: self.conversation_column.clone()?,
            index: self.index_column.clone()?,
            role: self.role_column.clone()?,
            content: self.content_column.clone()?,
        })
    }
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Sessions named by the id their client shows (`claude --resume`, `codex resume`, `gemini --resume`, opencode's session list) or a unique prefix of it; files or directories (walked recursively for *.jsonl, *.json, SQLite *.db, *.traj and .aider.chat.history.md; a file found there that looks like a history but cannot be read makes lint exit 2, see --skip-unreadable); or a PostgreSQL database: `postgres://user@host:port/db`, or `postgres:` for the PG* environment variables. None: every history of every app chatfsck reads, where each app keeps them on this machine, with a table per app
    #[arg(value_name = "SESSION|PATH", conflicts_with = "last")]
    pub paths: Vec<PathBuf>,
    /// Check the session changed last, across every app (the one you were just in)
    #[arg(long)]
    pub last: bool,
    /// Output format
    #[arg(long, value_parser = FormatArg::of::<crate::lint::Outcome>(), default_value = "human")]
    pub format: Format,
    /// Run only these rules (comma-separated rule names; replaces `select` in chatfsck.toml)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Vec<String>,
    /// Do not run these rules (comma-separated rule names; replaces `ignore` in chatfsck.toml)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Exit 1 when a finding of this severity or higher is found [default: error]
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Cross-check against the trace the app wrote (dispatch traces.db, Phoenix phoenix.db,
    /// OTLP JSON): report prompts sent that differ from the stored history, and cut-off answers
    /// stored as complete
    #[arg(long, value_name = "TRACE")]
    pub trace: Option<PathBuf>,
    /// Do not exit 2 because a file found in a directory could not be read (it is still listed,
    /// and counted in the summary); inputs named on the command line still must be read
    #[arg(long)]
    pub skip_unreadable: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the report to this file instead of standard output (atomically; never over an input)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the --output file if it exists
    #[arg(long, requires = "output")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Read settings from this file instead of the nearest chatfsck.toml
    /// (searched from the current directory upwards); flags override it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The session to inspect, by the id its client shows (or a unique prefix), or a history file
    #[arg(
        value_name = "SESSION|PATH",
        required_unless_present = "last",
        conflicts_with = "last"
    )]
    pub path: Option<PathBuf>,
    /// Inspect the session changed last, across every app
    #[arg(long)]
    pub last: bool,
    /// Show only this conversation
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Output format
    #[arg(long, value_parser = FormatArg::of::<crate::inspect::Inspection>(), default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// Output format
    #[arg(long, value_parser = FormatArg::of::<crate::report::rules::Catalogue>(), default_value = "human")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Rule name, e.g. orphan-tool-call
    #[arg(value_name = "RULE")]
    pub rule: String,
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// The history to repair (never modified without --in-place): a session by the id its client shows (or a unique prefix), a file, a directory of them, or a PostgreSQL database (`postgres://…`)
    #[arg(
        value_name = "SESSION|INPUT",
        required_unless_present = "last",
        conflicts_with = "last"
    )]
    pub input: Option<PathBuf>,
    /// Repair the session changed last, across every app (with --in-place: the one you were just in)
    #[arg(long)]
    pub last: bool,
    /// Where to write the repaired copy (a new file, in the input's format); for a directory INPUT, a new directory
    /// that mirrors it: every history repaired (or copied as it is) at the same relative path
    #[arg(
        short,
        long,
        value_name = "OUTPUT",
        required_unless_present_any = ["dry_run", "emit_sql", "target", "in_place"]
    )]
    pub output: Option<PathBuf>,
    /// Repair the file itself: a timestamped backup is kept beside it first, the repaired file replaces it
    /// atomically, and nothing is replaced if the file changed meanwhile (its app may be appending to it)
    #[arg(long, conflicts_with_all = ["output", "dry_run", "emit_sql", "target"])]
    pub in_place: bool,
    /// PostgreSQL input: write the repair as a reviewable SQL script (one transaction, idempotent INSERTs only)
    #[arg(long, value_name = "FILE")]
    pub emit_sql: Option<PathBuf>,
    /// PostgreSQL input: apply the repair to this other database (e.g. a restored copy); never the source
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Print the plan and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Write the repair log (every edit, with removed and replaced payloads verbatim) as JSON
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Overwrite OUTPUT (and the log) if they exist; the input is never overwritten
    #[arg(long)]
    pub force: bool,
    /// Tool calls without a result: insert a marked placeholder result, drop the call, or leave and report it
    /// [default: placeholder, or report with --no-synthesize; chatfsck.toml's [repair] applies]
    #[arg(long, value_enum)]
    pub orphan_calls: Option<crate::config::OrphanCalls>,
    /// Never invent content: unanswered calls are reported (or dropped) instead of answered with a placeholder
    #[arg(long)]
    pub no_synthesize: bool,
    /// Repair only findings of these rules (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Vec<String>,
    /// Do not repair findings of these rules (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Output format of the summary
    #[arg(long, value_parser = FormatArg::of::<crate::repair::Report>(), default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub input_args: InputArgs,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first history
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second history, or the trace the first one's app wrote
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Compare only this conversation (with a trace: or one request, `<conversation>/turn-<n>/step-<k>`)
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Output format (with a trace: human or json)
    #[arg(
        long,
        value_parser = FormatArg::of::<crate::diff::Diff>().or::<crate::crosscheck::DiffDoc>(),
        default_value = "human"
    )]
    pub format: Format,
    #[command(flatten)]
    pub input: InputArgs,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// The names `--format` of `command` offers (in help, man page and completions).
    fn offered(command: &str) -> Vec<String> {
        let cli = Cli::command();
        let sub = cli.find_subcommand(command).expect(command);
        let arg = sub
            .get_arguments()
            .find(|a| a.get_id() == "format")
            .expect("--format");
        arg.get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect()
    }

    #[test]
    fn each_format_flag_offers_only_what_its_command_writes() {
        assert_eq!(
            offered("lint"),
            ["human", "json", "sarif", "github", "markdown", "html"]
        );
        assert_eq!(offered("inspect"), ["human", "json", "markdown", "html"]);
        for command in ["repair", "diff", "rules"] {
            assert_eq!(offered(command), ["human", "json", "markdown"], "{command}");
        }
    }

    #[test]
    fn a_format_a_command_lacks_is_refused_in_one_line() {
        let refused = |args: &[&str]| {
            let e = Cli::try_parse_from(args).expect_err("accepted");
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue);
            assert!(e.use_stderr());
            e.to_string()
        };
        assert_eq!(
            refused(&["chatfsck", "inspect", "--format", "sarif", "x"]),
            "error: `inspect` has no `sarif` output (its formats: human, json, markdown, html)\n"
        );
        assert_eq!(
            refused(&["chatfsck", "rules", "--format=xml"]),
            "error: `rules` has no `xml` output (its formats: human, json, markdown)\n"
        );
        let ok = Cli::try_parse_from(["chatfsck", "lint", "--format", "github", "x"]);
        assert!(ok.is_ok());
    }
}
