//! What a trace recorded about one provider call, beside the prompt it
//! sent (the conversation's messages). `format::trace` fills it.

use serde::Serialize;

use super::{Loc, Message};

/// How a traced span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanStatus {
    Ok,
    Error,
    /// Closed without a status (OpenTelemetry `UNSET`).
    Unset,
    /// Opened and never closed: the process stopped during the call.
    Open,
}

impl SpanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanStatus::Ok => "ok",
            SpanStatus::Error => "error",
            SpanStatus::Unset => "unset",
            SpanStatus::Open => "open",
        }
    }
}

/// One provider call recorded in a trace: the request's messages are the
/// conversation's `messages`; this is everything else the trace knows.
#[derive(Debug, Clone)]
pub struct TraceStep {
    /// The conversation the trace files the call under (dispatch's
    /// `conversationId`, `session.id`, `gen_ai.conversation.id`, or the
    /// trace id when nothing names one).
    pub conversation: String,
    /// The turn's id as recorded (dispatch `turnId`, the OpenTelemetry trace id).
    pub turn: Option<String>,
    /// 1-based position of the turn in the conversation.
    pub turn_index: usize,
    /// 0-based position of the step (provider call) in its turn.
    pub step_index: usize,
    /// The span of the call (dispatch: the `step` span).
    pub span: String,
    /// Where the request body is recorded.
    pub request: Loc,
    /// Where the call's outcome is recorded (span close, span row), if it
    /// was recorded at all.
    pub end: Option<Loc>,
    /// The finish reason, normalised (`stop`, `tool_call`, `length`,
    /// `content_filter`, or the raw value when unknown).
    pub finish_reason: Option<String>,
    /// The finish reason exactly as recorded.
    pub raw_finish_reason: Option<String>,
    pub status: SpanStatus,
    /// The recorded error: status message, `error.message`, exception event.
    pub error: Option<String>,
    pub model: Option<String>,
    /// Tools offered in the request.
    pub tools: Option<usize>,
    /// Size of the recorded request payload in bytes.
    pub request_bytes: Option<u64>,
    /// Earlier attempts of the same step (retries) recorded before this one.
    pub retries: usize,
    /// The recorded answer, where the trace keeps it.
    pub output: Vec<Message>,
    /// When the call started, as recorded.
    pub started: Option<String>,
}

impl TraceStep {
    /// The call ended without a finish reason, or with an error: the
    /// answer is cut off.
    pub fn truncated(&self) -> bool {
        self.finish_reason.is_none()
            || self.finish_reason.as_deref() == Some("error")
            || matches!(self.status, SpanStatus::Error | SpanStatus::Open)
    }
}

/// Something a trace recorded about a conversation besides its requests:
/// dispatch's `reconcile.repair` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    pub name: String,
    #[serde(flatten)]
    pub loc: Loc,
    /// The turn it was recorded in, if any.
    pub turn: Option<String>,
    /// How many of the conversation's requests started before it.
    pub before_request: usize,
    /// Its attributes, as recorded (scalars as JSON text).
    pub attributes: Vec<(String, String)>,
    pub timestamp: Option<String>,
}

impl Event {
    /// `droppedEmptyMessages 1, repairedCount 0`: the attributes that say
    /// something was changed, or all of them when none did.
    pub fn summary(&self) -> String {
        let changed: Vec<String> = self
            .attributes
            .iter()
            .filter(|(_, v)| v.parse::<f64>().is_ok_and(|n| n != 0.0))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !changed.is_empty() {
            return changed.join(", ");
        }
        self.attributes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the report says the app changed the history it loaded.
    pub fn changed_history(&self) -> bool {
        self.attributes
            .iter()
            .any(|(_, v)| v.parse::<f64>().is_ok_and(|n| n != 0.0))
    }
}
