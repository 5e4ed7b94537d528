//! Findings and repairs as Arrow record batches: what the Python
//! package's `lint_batch` returns, one row a finding, with the fields of
//! `chatfsck lint --format json` (docs/json-output.md) and the index of
//! the dataset row each is about; and what its `repair_batch` returns, the
//! repaired rows and the log's entries.
//!
//! Text columns hold the text itself (Arrow is read by programs, not
//! terminals); `evidence` holds the JSON array `--format json` writes,
//! escaped as it escapes it.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, ListBuilder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::batch::{Repaired, RowFindings};

/// The findings batch's columns.
pub fn schema() -> SchemaRef {
    let list = || DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    Arc::new(Schema::new(vec![
        Field::new("row", DataType::UInt64, false),
        Field::new("conversation", DataType::Utf8, false),
        Field::new("rule", DataType::Utf8, false),
        Field::new("severity", DataType::Utf8, false),
        Field::new("message", DataType::UInt64, true),
        Field::new("summary", DataType::Utf8, false),
        Field::new("ids", list(), false),
        Field::new("fixable", DataType::Boolean, false),
        Field::new("applicability", DataType::Utf8, true),
        Field::new("notes", list(), false),
        Field::new("evidence", DataType::Utf8, false),
    ]))
}

/// One row per finding of `rows`, in their order.
pub fn findings(rows: &[RowFindings]) -> RecordBatch {
    let mut row = UInt64Builder::new();
    let mut conversation = StringBuilder::new();
    let mut rule = StringBuilder::new();
    let mut severity = StringBuilder::new();
    let mut message = UInt64Builder::new();
    let mut summary = StringBuilder::new();
    let mut ids = ListBuilder::new(StringBuilder::new());
    let mut fixable = BooleanBuilder::new();
    let mut applicability = StringBuilder::new();
    let mut notes = ListBuilder::new(StringBuilder::new());
    let mut evidence = StringBuilder::new();
    for r in rows {
        for f in &r.findings {
            let j = super::json::finding_json(f);
            row.append_value(r.row);
            conversation.append_value(&f.conversation);
            rule.append_value(f.rule);
            severity.append_value(f.severity.as_str());
            message.append_option(f.message.map(|m| m as u64));
            summary.append_value(&f.summary);
            for id in &f.ids {
                ids.values().append_value(id);
            }
            ids.append(true);
            fixable.append_value(f.fixable);
            applicability.append_option(j["applicability"].as_str());
            for n in &f.notes {
                notes.values().append_value(n);
            }
            notes.append(true);
            let mut text = Vec::new();
            // Writing to memory does not fail.
            let _ = super::json::write(&j["evidence"], &mut text);
            evidence.append_value(String::from_utf8_lossy(&text).trim_end());
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(row.finish()),
        Arc::new(conversation.finish()),
        Arc::new(rule.finish()),
        Arc::new(severity.finish()),
        Arc::new(message.finish()),
        Arc::new(summary.finish()),
        Arc::new(ids.finish()),
        Arc::new(fixable.finish()),
        Arc::new(applicability.finish()),
        Arc::new(notes.finish()),
        Arc::new(evidence.finish()),
    ];
    RecordBatch::try_new(schema(), columns).expect("the columns match the schema")
}

/// A repaired batch's rows: `row`, `messages` (JSON text, null where the
/// cell was null) and `status` (`unchanged`, `repaired`, `kept`).
pub fn repaired(r: &Repaired) -> RecordBatch {
    let rows: UInt64Array = r.rows.iter().map(|&k| Some(k)).collect();
    let messages: StringArray = r.messages.iter().map(Option::as_deref).collect();
    let status: StringArray = r.status.iter().map(|s| Some(s.as_str())).collect();
    RecordBatch::try_from_iter([
        ("row", Arc::new(rows) as ArrayRef),
        ("messages", Arc::new(messages) as ArrayRef),
        ("status", Arc::new(status) as ArrayRef),
    ])
    .expect("the columns have one length")
}

/// The repair log's edits, one a row, with the fields of `repair --log`'s
/// `edits` (but the scratch file's byte offsets): `row`, `conversation`,
/// `rule`, `action`, `description`, `before`, `after`, `synthesized`.
pub fn edits(r: &Repaired) -> RecordBatch {
    let e = || r.edits.iter().map(|(_, e)| e);
    let row: UInt64Array = r.edits.iter().map(|(k, _)| Some(*k)).collect();
    let strings = |f: &dyn Fn(&crate::write::Edit) -> Option<String>| -> ArrayRef {
        Arc::new(e().map(f).collect::<StringArray>())
    };
    let synthesized: BooleanArray = e().map(|e| Some(e.synthesized)).collect();
    RecordBatch::try_from_iter([
        ("row", Arc::new(row) as ArrayRef),
        ("conversation", strings(&|e| Some(e.conversation.clone()))),
        ("rule", strings(&|e| Some(e.rule.to_string()))),
        ("action", strings(&|e| Some(e.action.to_string()))),
        ("description", strings(&|e| Some(e.description.clone()))),
        ("before", strings(&|e| e.before.clone())),
        ("after", strings(&|e| e.after.clone())),
        ("synthesized", Arc::new(synthesized) as ArrayRef),
    ])
    .expect("the columns have one length")
}

/// The findings the repair left, one a row: `row`, `conversation`,
/// `rule`, `summary`, `reason`.
pub fn left(r: &Repaired) -> RecordBatch {
    let row: UInt64Array = r.left.iter().map(|(k, _)| Some(*k)).collect();
    let strings = |f: &dyn Fn(&crate::write::Left) -> String| -> ArrayRef {
        Arc::new(
            r.left
                .iter()
                .map(|(_, l)| Some(f(l)))
                .collect::<StringArray>(),
        )
    };
    RecordBatch::try_from_iter([
        ("row", Arc::new(row) as ArrayRef),
        ("conversation", strings(&|l| l.conversation.clone())),
        ("rule", strings(&|l| l.rule.to_string())),
        ("summary", strings(&|l| l.summary.clone())),
        ("reason", strings(&|l| l.reason.clone())),
    ])
    .expect("the columns have one length")
}
