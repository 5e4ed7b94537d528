//! Trace sources: what a tracing store recorded as really sent to the
//! provider. Every recorded request becomes one [`Conversation`] whose
//! messages are the prompt as sent and whose [`TraceStep`] holds the rest
//! (finish reason, status, where the span closed). Requests are grouped by
//! the conversation the trace files them under, so a store can be compared
//! with the prompts built from it (see `crosscheck`).
//!
//! One module per format: dispatch's `traces.db`, Arize Phoenix's
//! `phoenix.db`, OTLP JSON Lines. The formats share the message shapes in
//! [`messages`].

pub use crate::source::trace::{Backend, Group, TraceSource};

pub mod dispatch;
pub mod messages;
pub mod otlp;
pub mod phoenix;
pub mod profile;

/// Why a trace is never repaired, for `repair`'s refusal.
pub const NOT_REPAIRED: &str = "is a trace: traces are evidence of what was sent to the provider and are not repaired (repair the store the app loads its history from)";

pub use crate::model::Event;

/// The id of one recorded request: `<conversation>/turn-<n>/step-<k>`.
pub fn request_id(conversation: &str, turn: usize, step: usize) -> String {
    format!("{conversation}/turn-{turn}/step-{step}")
}

/// What `--conversation ID` selects in a trace: a conversation, or one
/// request of it (`<conversation>/turn-<n>/step-<k>`, as [`request_id`]
/// writes it). Returns (conversation, request).
pub fn selection(id: Option<&str>) -> (Option<&str>, Option<&str>) {
    match id {
        Some(id) => match id.rsplit_once("/turn-") {
            Some((conv, rest)) if rest.contains("/step-") => (Some(conv), Some(id)),
            _ => (Some(id), None),
        },
        None => (None, None),
    }
}

/// Normalise a provider's raw finish reason to the OpenTelemetry GenAI
/// vocabulary: `tool_calls` (OpenAI), `tool_use` (Anthropic),
/// `function_call` → `tool_call`; `end_turn`, `STOP` → `stop`;
/// `max_tokens`, `MAX_TOKENS` → `length`; `SAFETY` → `content_filter`.
/// Unknown values pass through, lowercased.
pub fn normalise_finish(raw: &str) -> String {
    let lower = raw.trim().to_ascii_lowercase();
    match lower.as_str() {
        "tool_calls" | "tool_use" | "function_call" | "tool_call" | "tool-calls" => "tool_call",
        "stop" | "end_turn" | "stop_sequence" | "eos" | "finish_reason_stop" => "stop",
        "length" | "max_tokens" | "max_output_tokens" | "model_length" => "length",
        "content_filter" | "safety" | "refusal" | "recitation" | "blocklist" => "content_filter",
        "error" => "error",
        _ => return lower,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn finish_reasons_are_normalised() {
        use super::normalise_finish as n;
        assert_eq!(n("tool_calls"), "tool_call");
        assert_eq!(n("tool_use"), "tool_call");
        assert_eq!(n("end_turn"), "stop");
        assert_eq!(n("STOP"), "stop");
        assert_eq!(n("MAX_TOKENS"), "length");
        assert_eq!(n("weird"), "weird");
    }
}

#[cfg(test)]
mod selection_tests {
    use super::*;

    #[test]
    fn a_request_id_selects_its_conversation_and_itself() {
        let id = request_id("a/turn-x", 3, 1);
        assert_eq!(selection(Some(&id)), (Some("a/turn-x"), Some(id.as_str())));
        assert_eq!(selection(Some("conv")), (Some("conv"), None));
        assert_eq!(selection(None), (None, None));
    }
}
