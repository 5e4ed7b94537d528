use std::path::Path;

use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::{Finding, Severity};
use crate::model::compare::{ConvComparison, part_types, store_span};
use crate::model::{Conversation, PartKind, Role, SpanStatus, TraceStep};

pub static RULE: Rule = Rule {
    name: "truncated-response",
    severity: Severity::Error,
    summary: "a provider call ended without a finish reason (stream cut, or error status): its answer is incomplete",
    repair: None,
    doc: r#"## What it does
Reads what a trace recorded about each provider call (a dispatch `step`
span, a Phoenix or OpenTelemetry LLM span) and finds the calls that ended
without a finish reason: the span closed with status `error`, was never
closed at all (the app stopped mid-stream), or closed `ok` with no finish
reason anywhere (no `finishReason`, `llm.finish_reason`,
`gen_ai.response.finish_reasons`, no `finish_reason` on an output message).

Linting a trace alone reports every such call. Cross-checking a store
against its trace (`chatfsck lint STORE --trace TRACE`) reports only the
calls whose answer the store holds as a complete message: an answer stored
with an error chunk, or not stored at all, was handled by the app.

## Why is this bad?
A stream that stops without a finish reason was cut: by a connection reset,
a gateway idle timeout, a crash. Orva (seed 001) emitted "done" whenever the
chunk channel closed, so a silently truncated answer was marked as a success
and stored as complete; a cut inside a tool call dispatched half-written
argument JSON and replayed it forever. Every later request replays the
truncated answer as if the model had meant it.

## Example
A Phoenix LLM span with `status_code = 'ERROR'`, an `exception` event
`ConnectionResetError: [Errno 104] Connection reset by peer`, partial
`llm.output_messages` and no `llm.finish_reason`.

## Repair
Report only: the missing part of the answer was never received. Ask the
model again from the turn before, or mark the stored answer as incomplete.
"#,
    check,
};

/// One line that says how the call ended.
pub fn outcome(t: &TraceStep) -> String {
    match (t.status, &t.finish_reason) {
        (SpanStatus::Open, _) => {
            "its span was opened and never closed: the app stopped during the call".to_string()
        }
        (SpanStatus::Error, None) => "it failed with status `error`".to_string(),
        (SpanStatus::Error, Some(f)) => {
            format!("it ended with status `error` (finish reason `{f}`)")
        }
        (_, Some(f)) => format!("it ended with finish reason `{f}`"),
        (s, None) => format!(
            "it ended with status `{}`: the stream stopped before the provider said it was done",
            s.as_str()
        ),
    }
}

/// The recorded error, as a note.
pub fn error_note(t: &TraceStep) -> Option<String> {
    t.error
        .as_deref()
        .map(|e| format!("recorded error: {}", preview(e, 200)))
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(t) = &ctx.conv.trace else { return };
    if !t.truncated() {
        return;
    }
    let at = t.end.clone().unwrap_or_else(|| t.request.clone());
    let mut f = ctx
        .finding(
            &RULE,
            None,
            at.clone(),
            format!(
                "request `{}` ended without a finish reason: {}",
                ctx.conv.id,
                outcome(t)
            ),
        )
        .label(
            &at,
            match (t.status, &t.end) {
                (SpanStatus::Open, _) | (_, None) => "the call's span is never closed".to_string(),
                (s, _) => format!("span ends: status `{}`, no finish reason", s.as_str()),
            },
        );
    if t.end.as_ref() != Some(&t.request) {
        f = f.label(
            &t.request,
            format!("the request: {} messages sent", ctx.conv.messages.len()),
        );
    }
    let answer: String = t
        .output
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if let Some(n) = error_note(t) {
        f = f.note(n);
    }
    if !answer.is_empty() {
        f = f.note(format!(
            "the recorded answer stops at: `…{}`",
            tail(&answer, 60)
        ));
    }
    out.push(f.note(
        "a stream that stops without a finish reason was cut (connection reset, idle timeout, crash); an app that stores it as complete replays a truncated answer (seed 001)",
    ));
}

/// The last `n` characters, escaped.
fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    preview(
        &s.chars().skip(count.saturating_sub(n)).collect::<String>(),
        n,
    )
}

/// With a store: `truncated-response` where the store keeps, as a complete
/// answer, what a call that ended without a finish reason produced.
pub fn against_store(
    ctx: &Ctx<'_>,
    store: &Conversation,
    cmp: &ConvComparison,
    trace_path: &Path,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for req in &cmp.requests {
        if !req.head.truncated {
            continue;
        }
        let answer = req.head.covered;
        let Some(m) = store.messages.get(answer) else {
            continue;
        };
        let complete = m.role == Role::Assistant
            && !m.parts.is_empty()
            && !m
                .parts
                .iter()
                .any(|p| matches!(&p.kind, PartKind::Other { kind } if kind == "error"));
        if !complete || seen.contains(&answer) {
            continue;
        }
        seen.push(answer);
        let t = &req.step_info;
        let end = t.end.clone().unwrap_or_else(|| t.request.clone());
        let mut f = ctx.finding(
                &RULE,
                Some(answer),
                m.loc.clone(),
                format!(
                    "stored `assistant` message {answer} ({}) is kept as a complete answer, but the call that produced it ended without a finish reason: {}",
                    store_span(store, &[answer]),
                    outcome(t)
                ),
            )
            .label(&m.loc, format!("the answer, stored as complete ({})", part_types(m)))
            .label_in(trace_path, &end, format!("`{}`: the call's span ends without a finish reason", req.head.request));
        if let Some(n) = error_note(t) {
            f = f.note(n);
        }
        out.push(f.note("a stream that stops without a finish reason was cut (connection reset, idle timeout, crash); every later request replays the truncated answer as if the model meant it (seed 001)"));
    }
    out
}
