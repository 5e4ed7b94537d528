//! Store versus trace: align every request a trace recorded as sent with
//! the stored history of the same conversation, and say where they differ.
//!
//! A stored conversation is a list of true messages; a recorded request is
//! the list of messages the app built from it and sent. The alignment is a
//! small edit-distance search over the two lists whose steps are the things
//! that go wrong between a store and a prompt: several stored messages sent
//! as one (merged), a message sent under another role (re-labelled), a
//! message's tool calls left out (stripped), a stored message not sent
//! (dropped), content sent differently (changed), a sent message the store
//! does not hold (not stored). Stored messages after the last one the request
//! covers are the request's future (its answer, later turns) and cost nothing.
//!
//! Matching is tolerant of what apps do when they convert a history: a
//! system prompt the store does not keep, thinking concatenated into the
//! content (dispatch's `convertAssistantMessage`), sent apart as reasoning,
//! or left out; one tool message per tool result; re-serialised arguments;
//! whitespace and `<think>` tags between parts.

use crate::error::Result;
use crate::format::trace::TraceSource;
use crate::model::Conversation;
use crate::model::compare::{
    ConvComparison, RequestComparison, RequestHead, Sent, message_preview, part_types,
};

mod align;
mod view;

pub use view::{DiffConv, DiffDoc, DiffRequest, DiffRow, SentSide, StoreSide, diff, diff_request};

use align::align;

// ---------------------------------------------------------------------------
// Comparison

/// Compare one stored conversation with every request the trace recorded
/// for it. `None` when the trace has nothing for it.
pub fn compare(store: &Conversation, trace: &mut TraceSource) -> Result<Option<ConvComparison>> {
    if store.trace.is_some() || !trace.has_group(&store.id) {
        return Ok(None);
    }
    let group = trace.group(&store.id)?;
    let mut requests = Vec::new();
    // One request at a time: only its alignment and a summary are kept.
    for pos in 0..group.requests {
        let req = trace.request(pos)?;
        let Some(mut step) = req.trace.as_deref().cloned() else {
            continue;
        };
        step.output = Vec::new();
        let (rows, covered) = align(store, &req.messages);
        let reports = group
            .events
            .iter()
            .filter(|e| e.before_request <= pos && e.changed_history())
            .filter(|e| {
                // Reports of this turn, or of a load before it.
                e.turn.is_none() || e.turn == step.turn
            })
            .cloned()
            .collect();
        requests.push(RequestComparison {
            head: RequestHead {
                request: req.id.clone(),
                turn: step.turn_index,
                step: step.step_index,
                location: step.request.clone(),
                finish_reason: step.finish_reason.clone(),
                status: step.status.as_str(),
                truncated: step.truncated(),
                sent: req.messages.len(),
                covered,
            },
            rows,
            step_info: step,
            reports,
            sent_messages: req
                .messages
                .iter()
                .map(|m| Sent {
                    role: m.role,
                    parts: part_types(m),
                    preview: message_preview(m, 60),
                })
                .collect(),
        });
    }
    Ok(Some(ConvComparison {
        conversation: store.id.clone(),
        messages: store.messages.len(),
        requests,
    }))
}
