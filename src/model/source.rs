//! What an input is: its path, storage format and dialect. The formats
//! and dialects are types; they render as the strings the JSON and SARIF
//! outputs have always carried (`jsonl`, `sqlite-kv`, `claude-code`…).

use std::path::PathBuf;

use serde::Serialize;

/// What a source recognised a file or database as.
#[derive(Debug, Clone, Serialize)]
pub struct SourceInfo {
    /// The path as the user named it (relative paths stay relative).
    pub path: PathBuf,
    pub format: Format,
    pub dialect: Dialect,
}

/// A storage format: how records are laid out on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One JSON record per line.
    Jsonl,
    /// One JSON document: an array of messages, or an object holding one.
    Json,
    /// A SQLite key-value chunk store.
    SqliteKv,
    /// A SQLite table of messages, one row each.
    SqliteTable,
    /// A PostgreSQL table of messages, one row each.
    PostgresTable,
    /// A SQLite trace database.
    SqliteTrace,
    /// OTLP JSON, one export per line.
    OtlpJsonl,
    /// OTLP JSON, one export document.
    OtlpJson,
    /// A conversation dataset in JSON Lines: one whole conversation per
    /// line (`{"messages": [...]}`, or ShareGPT's `{"conversations": [...]}`).
    DatasetJsonl,
    /// A conversation dataset in Parquet: one conversation per row.
    Parquet,
    /// A conversation dataset in Arrow IPC (a file, or a stream).
    ArrowIpc,
}

impl Format {
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Json => "json",
            Format::SqliteKv => "sqlite-kv",
            Format::SqliteTable => "sqlite-table",
            Format::PostgresTable => "postgres-table",
            Format::SqliteTrace => "sqlite-trace",
            Format::OtlpJsonl => "otlp-jsonl",
            Format::OtlpJson => "otlp-json",
            Format::DatasetJsonl => "dataset-jsonl",
            Format::Parquet => "parquet",
            Format::ArrowIpc => "arrow-ipc",
        }
    }

    /// A history in a plain JSON file (not a store or a trace).
    pub fn is_json_file(self) -> bool {
        matches!(self, Format::Jsonl | Format::Json)
    }
}

/// What wrote the records inside a format: the app or the API shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Not known yet (a source before its first record).
    Unknown,
    OpenAi,
    Kimi,
    Anthropic,
    ClaudeCode,
    Codex,
    /// Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.json[l]`).
    GeminiCli,
    Dispatch,
    Gbrain,
    /// A message table named with the mapping flags.
    Table,
    Phoenix,
    OpenInference,
    GenAi,
    Opencode,
    Goose,
    Cursor,
    Cline,
    /// Cline 4's session store (`~/.cline/data/sessions/<id>/<id>.messages.json`).
    Cline4,
    RooCode,
    CopilotCli,
    /// pi's session files (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`).
    Pi,
    /// Qwen Code's session files (`~/.qwen/projects/<cwd>/chats/<id>.jsonl`).
    QwenCode,
    /// Kimi Code's agent event logs
    /// (`~/.kimi-code/sessions/<workdir-key>/<session>/agents/<agent>/wire.jsonl`).
    KimiCode,
    /// Mistral Vibe's unified session store
    /// (`~/.vibe/logs/session/unified/<id>/CURRENT` and what it names).
    MistralVibe,
    /// LangGraph checkpointers (`langgraph-checkpoint-sqlite`, `-postgres`).
    LangGraph,
    /// ShareGPT conversations (`{"from": "human", "value": ...}` turns).
    ShareGpt,
    /// Open WebUI's `chat` table (`webui.db`, or PostgreSQL).
    OpenWebui,
    /// Simon Willison's `llm` CLI (`logs.db`).
    Llm,
    /// Crush's `crush.db` (`<project>/.crush/crush.db`).
    Crush,
}

impl Dialect {
    pub const fn as_str(self) -> &'static str {
        match self {
            Dialect::Unknown => "unknown",
            Dialect::OpenAi => "openai",
            Dialect::Kimi => "kimi",
            Dialect::Anthropic => "anthropic",
            Dialect::ClaudeCode => "claude-code",
            Dialect::Codex => "codex",
            Dialect::GeminiCli => "gemini-cli",
            Dialect::Dispatch => "dispatch",
            Dialect::Gbrain => "gbrain",
            Dialect::Table => "table",
            Dialect::Phoenix => "phoenix",
            Dialect::OpenInference => "openinference",
            Dialect::GenAi => "gen-ai",
            Dialect::Opencode => "opencode",
            Dialect::Goose => "goose",
            Dialect::Cursor => "cursor",
            Dialect::Cline => "cline",
            Dialect::Cline4 => "cline-4",
            Dialect::RooCode => "roo-code",
            Dialect::CopilotCli => "copilot-cli",
            Dialect::Pi => "pi",
            Dialect::QwenCode => "qwen-code",
            Dialect::KimiCode => "kimi-code",
            Dialect::MistralVibe => "mistral-vibe",
            Dialect::LangGraph => "langgraph",
            Dialect::ShareGpt => "sharegpt",
            Dialect::OpenWebui => "open-webui",
            Dialect::Llm => "llm",
            Dialect::Crush => "crush",
        }
    }

    /// Whether its messages hold the content blocks of the Anthropic
    /// Messages API as the client sends them (whose `type` the API checks):
    /// an Anthropic Messages log, and Claude Code's records.
    pub const fn holds_anthropic_blocks(self) -> bool {
        matches!(self, Dialect::Anthropic | Dialect::ClaudeCode)
    }

    /// Whether its histories are Anthropic Messages requests sent as
    /// stored, where an empty final assistant message is a prefill the API
    /// accepts. (Claude Code rebuilds its request from its records.)
    pub const fn is_anthropic_request(self) -> bool {
        matches!(self, Dialect::Anthropic)
    }
}

macro_rules! as_text {
    ($t:ty) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}
as_text!(Format);
as_text!(Dialect);
