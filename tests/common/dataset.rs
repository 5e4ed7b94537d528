//! A seeded generator of conversation datasets with known damage, and its
//! truth table: the tests (tests/datasets.rs) and the benchmark
//! (bench/datasets.sh, through `cargo run --example gen_dataset`) write
//! their inputs with it.
//!
//! Each row is one OpenAI chat conversation (a user request, an assistant
//! turn with one or two tool calls, their results, a final answer), with
//! `tools` and an `id`. About 1 % of the rows carry each injected pattern
//! and 0.1 % do not parse; every other row is clean. The truth table names,
//! for each damaged row, the rule that must report it.

#![allow(dead_code)]

use std::fmt::Write as _;

/// A pattern injected into a row, and the rule that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Clean,
    /// A call whose result is missing; the conversation moves on.
    OrphanCall,
    /// A result that answers no call.
    StrayResult,
    /// A user message between the calls and their results.
    Interleaved,
    /// A call whose arguments are not JSON.
    InvalidArguments,
    /// Two calls of one turn with the same id.
    DuplicateId,
    /// The line does not parse (cut short).
    Unparseable,
}

impl Pattern {
    pub fn rule(self) -> Option<&'static str> {
        match self {
            Pattern::Clean => None,
            Pattern::OrphanCall => Some("orphan-tool-call"),
            Pattern::StrayResult => Some("orphan-tool-result"),
            Pattern::Interleaved => Some("interleaved-message"),
            Pattern::InvalidArguments => Some("invalid-tool-arguments"),
            Pattern::DuplicateId => Some("duplicate-tool-call-id"),
            Pattern::Unparseable => Some("corrupt-record"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Clean => "clean",
            Pattern::OrphanCall => "orphan-call",
            Pattern::StrayResult => "stray-result",
            Pattern::Interleaved => "interleaved",
            Pattern::InvalidArguments => "invalid-arguments",
            Pattern::DuplicateId => "duplicate-id",
            Pattern::Unparseable => "unparseable",
        }
    }
}

/// One generated row.
pub struct Row {
    /// Its `id` member.
    pub id: String,
    pub pattern: Pattern,
    /// The row's JSON text, on one line (not JSON for an unparseable row).
    pub line: String,
    /// The row's messages (`None` for an unparseable row).
    pub messages: Option<serde_json::Value>,
}

const CITIES: &[&str] = &["Paris", "Lyon", "Oslo", "Kyoto", "Lima", "Quito", "Perth"];
const WORDS: &[&str] = &[
    "weather", "forecast", "tomorrow", "rain", "umbrella", "please", "check", "thanks", "the",
    "for", "and", "what", "is", "in", "à", "naïve", "日本",
];

fn sentence(rng: &mut fastrand::Rng, words: usize) -> String {
    let mut s = String::new();
    for k in 0..words {
        if k > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.usize(..WORDS.len())]);
    }
    s
}

/// The pattern of a row, drawn per row: 1 % each, 0.1 % unparseable.
fn draw(rng: &mut fastrand::Rng) -> Pattern {
    match rng.u32(0..1000) {
        0 => Pattern::Unparseable,
        1..=10 => Pattern::OrphanCall,
        11..=20 => Pattern::StrayResult,
        21..=30 => Pattern::Interleaved,
        31..=40 => Pattern::InvalidArguments,
        41..=50 => Pattern::DuplicateId,
        _ => Pattern::Clean,
    }
}

/// `n` rows from `seed`; `filler` bytes of extra text per message (for a
/// benchmark's size).
pub fn rows(seed: u64, n: usize, filler: usize) -> Vec<Row> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|i| row(&mut rng, i, filler)).collect()
}

fn row(rng: &mut fastrand::Rng, i: usize, filler: usize) -> Row {
    use serde_json::{Value, json};
    let pattern = draw(rng);
    let id = format!("row-{i}");
    let pad = |rng: &mut fastrand::Rng| {
        let mut s = sentence(rng, 6);
        while s.len() < filler {
            s.push(' ');
            s.push_str(&sentence(rng, 8));
        }
        s
    };
    let ncalls = 1 + rng.usize(..2);
    let calls: Vec<(String, String)> = (0..ncalls)
        .map(|k| {
            let call_id = format!("call_{i}_{k}");
            let args = json!({"city": CITIES[rng.usize(..CITIES.len())], "days": 1 + rng.u8(..5)})
                .to_string();
            (call_id, args)
        })
        .collect();
    let mut messages: Vec<Value> = Vec::new();
    if rng.bool() {
        messages.push(json!({"role": "system", "content": "You are a weather assistant."}));
    }
    messages.push(json!({"role": "user", "content": pad(rng)}));
    let mut tool_calls: Vec<Value> = calls
        .iter()
        .map(|(cid, args)| json!({"id": cid, "type": "function", "function": {"name": "get_weather", "arguments": args}}))
        .collect();
    let mut results: Vec<Value> = calls
        .iter()
        .map(|(cid, _)| json!({"role": "tool", "tool_call_id": cid, "content": pad(rng)}))
        .collect();
    match pattern {
        Pattern::OrphanCall => {
            results.pop();
        }
        Pattern::InvalidArguments => {
            let args = tool_calls[0]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_string();
            tool_calls[0]["function"]["arguments"] =
                Value::String(args[..args.len() - 1].to_string());
        }
        Pattern::DuplicateId => {
            let first = calls[0].0.clone();
            if tool_calls.len() == 1 {
                tool_calls.push(json!({"id": first, "type": "function", "function": {"name": "get_weather", "arguments": calls[0].1}}));
                results.push(json!({"role": "tool", "tool_call_id": first, "content": pad(rng)}));
            } else {
                tool_calls[1]["id"] = Value::String(first.clone());
                results[1]["tool_call_id"] = Value::String(first);
            }
        }
        _ => {}
    }
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
    if pattern == Pattern::Interleaved {
        messages.push(json!({"role": "user", "content": "are you still there?"}));
    }
    messages.extend(results);
    if pattern == Pattern::StrayResult {
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}_stray"), "content": "late output"}));
    }
    messages.push(json!({"role": "assistant", "content": pad(rng)}));
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]);
    let mut line = json!({"id": id, "messages": messages, "tools": tools}).to_string();
    let mut messages = Some(Value::Array(messages));
    if pattern == Pattern::Unparseable {
        // Cut on a character boundary: the line stays UTF-8 (truncate
        // panics inside a character).
        let mut cut = line.len() / 2;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        messages = None;
    }
    Row {
        id,
        pattern,
        line,
        messages,
    }
}

/// The rows as JSON Lines.
pub fn jsonl(rows: &[Row]) -> String {
    let mut s = String::new();
    for r in rows {
        s.push_str(&r.line);
        s.push('\n');
    }
    s
}

/// The truth table: `line<TAB>id<TAB>pattern<TAB>rule`, one damaged row a
/// line (lines are 1-based, as findings name them).
pub fn truth(rows: &[Row]) -> String {
    let mut s = String::from("line\tid\tpattern\trule\n");
    for (k, r) in rows.iter().enumerate() {
        if let Some(rule) = r.pattern.rule() {
            let _ = writeln!(s, "{}\t{}\t{}\t{rule}", k + 1, r.id, r.pattern.name());
        }
    }
    s
}

/// The rows' messages as a column: JSON text (an unparseable row's cut
/// text), or nested (`list<struct<role, content, tool_calls:
/// list<struct<id, type, function: struct<name, arguments>>>,
/// tool_call_id>>`, an unparseable row's cell null).
pub fn messages_column(rows: &[Row], nested: bool) -> arrow_array::ArrayRef {
    use arrow_array::{ArrayRef, ListArray, StringArray, StructArray};
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, Field, Fields};
    use std::sync::Arc;
    if !nested {
        // The text of the row's `messages` member, as a JSON column holds it.
        let texts: Vec<String> =
            rows.iter()
                .map(|r| match &r.messages {
                    Some(m) => m.to_string(),
                    None => r.line["{\"id\":\"".len() + r.id.len() + "\",\"messages\":".len()..]
                        .to_string(),
                })
                .collect();
        return Arc::new(StringArray::from_iter_values(texts)) as ArrayRef;
    }
    let s = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let (mut role, mut content, mut tcid) = (Vec::new(), Vec::new(), Vec::new());
    let (mut call_lens, mut call_valid) = (Vec::new(), Vec::new());
    let (mut cid, mut cty, mut fname, mut fargs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut row_lens, mut row_valid) = (Vec::new(), Vec::new());
    for r in rows {
        let msgs = r.messages.as_ref().and_then(|m| m.as_array());
        row_valid.push(msgs.is_some());
        row_lens.push(msgs.map_or(0, Vec::len));
        for m in msgs.into_iter().flatten() {
            role.push(s(&m["role"]));
            content.push(s(&m["content"]));
            tcid.push(s(&m["tool_call_id"]));
            let calls = m["tool_calls"].as_array();
            call_valid.push(calls.is_some());
            call_lens.push(calls.map_or(0, Vec::len));
            for c in calls.into_iter().flatten() {
                cid.push(s(&c["id"]));
                cty.push(s(&c["type"]));
                fname.push(s(&c["function"]["name"]));
                fargs.push(s(&c["function"]["arguments"]));
            }
        }
    }
    let utf8 = |n: &str| Field::new(n, DataType::Utf8, true);
    let strings = |v: Vec<Option<String>>| Arc::new(StringArray::from(v)) as ArrayRef;
    let function_fields = Fields::from(vec![utf8("name"), utf8("arguments")]);
    let function = StructArray::new(
        function_fields.clone(),
        vec![strings(fname), strings(fargs)],
        None,
    );
    let call_fields = Fields::from(vec![
        utf8("id"),
        utf8("type"),
        Field::new("function", DataType::Struct(function_fields), true),
    ]);
    let call = StructArray::new(
        call_fields.clone(),
        vec![strings(cid), strings(cty), Arc::new(function) as ArrayRef],
        None,
    );
    let call_item = Arc::new(Field::new("item", DataType::Struct(call_fields), true));
    let tool_calls = ListArray::new(
        call_item.clone(),
        OffsetBuffer::from_lengths(call_lens),
        Arc::new(call),
        Some(NullBuffer::from(call_valid)),
    );
    let message_fields = Fields::from(vec![
        utf8("role"),
        utf8("content"),
        Field::new("tool_calls", DataType::List(call_item), true),
        utf8("tool_call_id"),
    ]);
    let message = StructArray::new(
        message_fields.clone(),
        vec![
            strings(role),
            strings(content),
            Arc::new(tool_calls) as ArrayRef,
            strings(tcid),
        ],
        None,
    );
    Arc::new(ListArray::new(
        Arc::new(Field::new("item", DataType::Struct(message_fields), true)),
        OffsetBuffer::from_lengths(row_lens),
        Arc::new(message),
        Some(NullBuffer::from(row_valid)),
    ))
}

/// Write the rows as Parquet (`id`, `messages`), in row groups of
/// `group` rows.
pub fn write_parquet(rows: &[Row], nested: bool, path: &std::path::Path, group: usize) {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use std::sync::Arc;
    let ids = Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r.id.as_str()),
    )) as ArrayRef;
    let batch =
        RecordBatch::try_from_iter([("id", ids), ("messages", messages_column(rows, nested))])
            .expect("a batch");
    let file = std::fs::File::create(path).expect("create the Parquet file");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

/// Write the rows as an Arrow IPC file (`id`, `messages` as JSON text).
pub fn write_arrow(rows: &[Row], path: &std::path::Path) {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use std::sync::Arc;
    let ids = Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r.id.as_str()),
    )) as ArrayRef;
    let batch =
        RecordBatch::try_from_iter([("id", ids), ("messages", messages_column(rows, false))])
            .expect("a batch");
    let file = std::fs::File::create(path).expect("create the Arrow file");
    let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).expect("a writer");
    w.write(&batch).expect("write");
    w.finish().expect("finish");
}
