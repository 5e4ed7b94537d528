//! The row view of a message table (gbrain's `subagent_messages`, or a
//! table named by a mapping) and its tool execution records. Rules that
//! check stored indices read it; `format::message_table` fills it.

use std::sync::Arc;

use super::{Loc, Name};

/// A message table (gbrain's `subagent_messages`, or a table named by a
/// mapping): one row per message, `stored_index` on every message, and the
/// conversation's tool execution records where the store keeps them.
#[derive(Debug, Clone)]
pub struct MessageTable {
    pub table: Arc<str>,
    /// The column that names the conversation (`job_id`).
    pub conversation_column: Arc<str>,
    /// The column that orders messages (`message_idx`).
    pub index_column: Arc<str>,
    /// The conversation's key value, as text (`42`).
    pub conversation_key: String,
    /// The first index the app writes (gbrain: 0), when it is known.
    pub first_index: Option<i64>,
    /// The execution records, or `None` when the store keeps none.
    pub executions: Option<Executions>,
}

impl MessageTable {
    /// The key that names a row: `job_id=42, message_idx=3`.
    pub fn key(&self, index: i64) -> String {
        format!(
            "{}={}, {}={index}",
            self.conversation_column, self.conversation_key, self.index_column
        )
    }

    /// The location a message at `index` has (or would have) in the table.
    pub fn loc(&self, index: i64, rowid: Option<i64>) -> Loc {
        Loc::Row {
            table: Name::Shared(self.table.clone()),
            key: Arc::from(self.key(index)),
            rowid,
        }
    }
}

/// The tool execution records of one conversation (gbrain's
/// `subagent_tool_executions`), in (message index, ordinal, id) order.
#[derive(Debug, Clone)]
pub struct Executions {
    pub table: Arc<str>,
    pub rows: Vec<Execution>,
}

impl Executions {
    /// The execution that answers tool call `id` made in the message at
    /// `index`: a settled one first (the latest), else the latest of any
    /// status. Rows of the call's own message win over same-id rows of other
    /// turns (provider ids may repeat across turns).
    pub fn for_call(&self, id: &str, index: Option<i64>) -> Option<&Execution> {
        let same_id = || self.rows.iter().filter(move |e| e.tool_use_id == id);
        let own: Vec<&Execution> = same_id()
            .filter(|e| index.is_some_and(|i| e.message_index == i))
            .collect();
        let pool: Vec<&Execution> = if own.is_empty() {
            same_id().collect()
        } else {
            own
        };
        pool.iter()
            .rev()
            .find(|e| e.status.is_settled())
            .or_else(|| pool.last())
            .copied()
    }
}

/// The state of a tool execution record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecStatus {
    Pending,
    Complete,
    Failed,
    /// A value outside the schema's CHECK constraint, kept as stored.
    Other(String),
}

impl ExecStatus {
    pub fn parse(s: &str) -> ExecStatus {
        match s {
            "pending" => ExecStatus::Pending,
            "complete" => ExecStatus::Complete,
            "failed" => ExecStatus::Failed,
            other => ExecStatus::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ExecStatus::Pending => "pending",
            ExecStatus::Complete => "complete",
            ExecStatus::Failed => "failed",
            ExecStatus::Other(s) => s,
        }
    }

    /// `complete` or `failed`: the tool ran to an end and its outcome is stored.
    pub fn is_settled(&self) -> bool {
        matches!(self, ExecStatus::Complete | ExecStatus::Failed)
    }
}

/// One tool execution record.
#[derive(Debug, Clone)]
pub struct Execution {
    pub loc: Loc,
    pub id: Option<i64>,
    /// Index of the message that holds the call.
    pub message_index: i64,
    pub ordinal: Option<i64>,
    pub tool_use_id: String,
    pub tool_name: String,
    pub status: ExecStatus,
    /// The stored output, as JSON text (`complete`).
    pub output: Option<String>,
    /// The stored error text (`failed`).
    pub error: Option<String>,
}

impl Execution {
    /// The tool result a settled execution gives back — `complete`: its
    /// output (a JSON string as its text, any other JSON value normalised);
    /// `failed`: its error, as an error — or `None` while it is unsettled.
    /// The one place that decides what is recoverable, for the rule that
    /// reports a gap and the repair that fills it.
    pub fn result(&self) -> Option<(String, bool)> {
        match self.status {
            ExecStatus::Complete => Some((output_text(self.output.as_deref()), false)),
            ExecStatus::Failed => Some((
                self.error
                    .clone()
                    .unwrap_or_else(|| "(the execution failed; no error text was stored)".into()),
                true,
            )),
            ExecStatus::Pending | ExecStatus::Other(_) => None,
        }
    }
}

/// An execution's stored output as tool-result text: a JSON string gives
/// its text; any other JSON value its strict, compact JSON; a value that
/// does not parse as JSON (SQLite ports store text) is kept as it is.
pub fn output_text(output: Option<&str>) -> String {
    let Some(raw) = output else {
        return "null".into();
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(v) => serde_json::to_string(&v).expect("a Value serialises"),
        Err(_) => raw.to_string(),
    }
}
