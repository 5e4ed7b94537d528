//! Lint and repair of conversation datasets handed over as Arrow record
//! batches, by a program rather than in a file: the engine of the Python
//! package's `lint_batch` and `repair_batch` (python/), which Spark's
//! `mapInArrow`, Ray's `map_batches` and Hugging Face `datasets.map` call.
//! A batch is read exactly as a batch of a Parquet or Arrow file is
//! ([`columnar::conversation_at`]), so its findings are the CLI's on the
//! same rows; a batch is repaired by the CLI's repair of the same rows in
//! JSON Lines.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::finding::Finding;
use crate::format::dataset::Shape;
use crate::format::dataset::columnar::{self, Cells, conversation_at, shape_of};
use crate::model::{Dialect, Format, SourceInfo};
use crate::rules::Selection;

/// The findings of one row of a batch.
pub struct RowFindings {
    /// The row's index in the whole input: its `row_column` cell, or
    /// `first_row` plus its index in the batch.
    pub row: u64,
    pub findings: Vec<Finding>,
}

/// What [`lint_batch`] reads a batch as.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading<'a> {
    /// The column of the conversations (`None`: as the CLI, `messages`
    /// or `conversations`).
    pub messages_column: Option<&'a str>,
    /// The column of the rows' ids (`None`: `id`, when there is one).
    pub id_column: Option<&'a str>,
    /// The index of the batch's first row in the whole input, so findings
    /// name the same rows in every partition of it.
    pub first_row: u64,
    /// A column that holds each row's index in the whole input (integers,
    /// no null): for engines whose partitions are not slices of the input
    /// in order (Spark, Ray, a shuffled or filtered dataset), so findings
    /// name the same rows however the input was split. Set, it stands
    /// instead of `first_row`.
    pub row_column: Option<&'a str>,
    /// What the findings' locations call the input.
    pub source: Option<&'a str>,
}

/// The findings of every row of `batch`, rows in order (a clean row has an
/// empty list). `Err`: the batch holds no conversation column, and why,
/// in one line; a row that does not parse is a finding of its row.
pub fn lint_batch(
    batch: &RecordBatch,
    reading: &Reading<'_>,
    selection: &Selection,
) -> Result<Vec<RowFindings>, String> {
    let (column, id, shape) = columns_of(batch, reading)?;
    let rowids = rowids(batch, reading)?;
    let field = batch.schema_ref().field(column).clone();
    let info = Arc::new(SourceInfo {
        path: Path::new(reading.source.unwrap_or("<arrow batch>")).to_path_buf(),
        format: Format::ArrowIpc,
        dialect: match shape {
            Shape::Messages => Dialect::OpenAi,
            Shape::ShareGpt => Dialect::ShareGpt,
        },
    });
    let table: Arc<str> = Arc::from(field.name().as_str());
    let cells = Cells {
        messages: batch.column(column).as_ref(),
        id: id.map(|c| batch.column(c).as_ref()),
        shape,
        table: &table,
        info: &info,
    };
    Ok((0..batch.num_rows())
        .map(|i| {
            let row = rowids[i];
            let conv = conversation_at(&cells, i, row);
            RowFindings {
                row,
                findings: crate::lint::check(&conv, selection),
            }
        })
        .collect())
}

/// The batch's conversations' column, its id column and the shape of its
/// conversations, as the CLI finds them in a Parquet file.
fn columns_of(
    batch: &RecordBatch,
    reading: &Reading<'_>,
) -> Result<(usize, Option<usize>, Shape), String> {
    let schema = batch.schema();
    let names: Vec<&str> = match reading.messages_column {
        Some(m) => vec![m],
        None => vec!["messages", "conversations"],
    };
    let Some((column, field)) = names.iter().find_map(|n| schema.column_with_name(n)) else {
        return Err(format!(
            "the batch has no `{}` column (name the column of the conversations with messages_column)",
            names.join("` or `")
        ));
    };
    let id = match reading.id_column {
        Some(name) => Some(
            schema
                .column_with_name(name)
                .ok_or_else(|| format!("the batch has no `{name}` column (id_column)"))?
                .0,
        ),
        None => schema.column_with_name("id").map(|(i, _)| i),
    };
    let shape = shape_of(field).map_err(|why| format!("the batch: {why}"))?;
    Ok((column, id, shape))
}

/// Each row's index in the whole input: its `row_column` cell, or
/// `first_row` plus its index in the batch.
fn rowids(batch: &RecordBatch, reading: &Reading<'_>) -> Result<Vec<u64>, String> {
    let Some(name) = reading.row_column else {
        return Ok((0..batch.num_rows())
            .map(|i| reading.first_row + i as u64)
            .collect());
    };
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| format!("the batch has no `{name}` column (row_column)"))?;
    if !col.data_type().is_integer() {
        return Err(format!(
            "the batch's `{name}` column (row_column) is {}, not integers",
            col.data_type()
        ));
    }
    (0..batch.num_rows())
        .map(|i| {
            columnar::value_of(col.as_ref(), i)
                .ok()
                .and_then(|v| v.as_u64())
                .ok_or_else(|| {
                    format!(
                        "the batch's `{name}` column (row_column) holds no row index at row {i}: null or negative"
                    )
                })
        })
        .collect()
}

/// What [`repair_batch`] did to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No finding: the row is as it was.
    Unchanged,
    /// Edited (every edit in the log); findings may be left.
    Repaired,
    /// Not edited, with findings the repair leaves (each in the log's
    /// `left`, with why): a row is never dropped.
    Kept,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unchanged => "unchanged",
            Status::Repaired => "repaired",
            Status::Kept => "kept",
        }
    }
}

/// A repaired batch: a row each in `messages` and `status`, in order;
/// the log's entries name their row by its index in the whole input.
pub struct Repaired {
    /// Each row's index in the whole input, in the batch's order.
    pub rows: Vec<u64>,
    /// The row's conversation as JSON text: byte for byte the cell of a
    /// text column that was not edited, the repaired messages otherwise
    /// (a nested cell is written as the JSON it stands for); `None`: a
    /// null cell, kept.
    pub messages: Vec<Option<String>>,
    pub status: Vec<Status>,
    pub edits: Vec<(u64, crate::write::Edit)>,
    pub left: Vec<(u64, crate::write::Left)>,
}

/// Repair every row of `batch` as `chatfsck repair` repairs the same rows
/// in a JSON Lines dataset: the rows are written, one a line, to a private
/// scratch file, repaired by the CLI's engine and its dataset writer, and
/// read back; so the batch's repair is the CLI's, with its guarantees (a
/// row kept whenever its repair would leave no message, every removed or
/// replaced value in the log, a second repair changes nothing).
pub fn repair_batch(batch: &RecordBatch, reading: &Reading<'_>) -> Result<Repaired, String> {
    use std::io::Write as _;
    let (column, id, shape) = columns_of(batch, reading)?;
    let rowids = rowids(batch, reading)?;
    let member = match shape {
        Shape::Messages => "messages",
        Shape::ShareGpt => "conversations",
    };
    let col = batch.column(column).as_ref();
    let ids = id.map(|c| batch.column(c).as_ref());
    let scratch = tempfile::Builder::new()
        .prefix("chatfsck-batch-")
        .tempdir()
        .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    let input = scratch.path().join("rows.jsonl");
    let output = scratch.path().join("repaired.jsonl");
    let io = |e: std::io::Error| format!("cannot write the scratch file: {e}");
    let mut cells: Vec<Option<String>> = Vec::with_capacity(batch.num_rows());
    let mut lines: Vec<String> = Vec::with_capacity(batch.num_rows());
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&input).map_err(io)?);
        // A first row every reader takes for a dataset row, whatever the
        // batch's first row is; it is no row of the batch.
        writeln!(w, "{{\"{member}\": []}}").map_err(io)?;
        for (i, rowid) in rowids.iter().enumerate() {
            let name = ids
                .and_then(|c| columnar::scalar_text(c, i))
                .unwrap_or_else(|| format!("row {rowid}"));
            let cell = if col.is_null(i) {
                None
            } else {
                Some(match col.data_type() {
                    arrow_schema::DataType::Utf8
                    | arrow_schema::DataType::LargeUtf8
                    | arrow_schema::DataType::Utf8View => {
                        columnar::scalar_text(col, i).unwrap_or_default()
                    }
                    _ => columnar::value_of(col, i)
                        .map(|v| v.to_string())
                        .unwrap_or_else(|why| why),
                })
            };
            // One line a row: a cell written over several lines is
            // compacted (an unparseable one only loses its line breaks:
            // it is kept as it is, never edited).
            let text = match &cell {
                None => "null".to_string(),
                Some(t) if t.contains(['\n', '\r']) => {
                    match serde_json::from_str::<serde_json::Value>(t) {
                        Ok(v) => v.to_string(),
                        Err(_) => t.replace(['\n', '\r'], " "),
                    }
                }
                Some(t) => t.clone(),
            };
            let line = format!(
                "{{\"id\": {}, \"{member}\": {text}}}",
                serde_json::Value::String(name)
            );
            w.write_all(line.as_bytes()).map_err(io)?;
            w.write_all(b"\n").map_err(io)?;
            cells.push(cell);
            lines.push(line);
        }
        w.flush().map_err(io)?;
    }
    let report = crate::repair::repair(&input, Some(&output), &crate::repair::Options::default())
        .map_err(|e| e.to_string())?;
    let copy = std::fs::read_to_string(&output)
        .map_err(|e| format!("cannot read the scratch copy back: {e}"))?;
    let mut out: Vec<&str> = copy.lines().skip(1).collect();
    if out.len() != lines.len() {
        return Err(format!(
            "the repaired copy holds {} rows, not {}",
            out.len(),
            lines.len()
        ));
    }
    // A log entry's row: the row of its line, less the first.
    let row_of = |loc: Option<&crate::model::Loc>| {
        loc.and_then(crate::model::Loc::line)
            .and_then(|l| rowids.get(l.saturating_sub(2) as usize).copied())
    };
    let mut edits = Vec::new();
    let mut edited = std::collections::HashSet::new();
    for e in report.edits {
        if let Some(row) = row_of(Some(&e.location)) {
            edited.insert(row);
            edits.push((row, e));
        }
    }
    let mut left = Vec::new();
    let mut kept = std::collections::HashSet::new();
    for l in report.left {
        if let Some(row) = row_of(l.location.as_ref()) {
            kept.insert(row);
            left.push((row, l));
        }
    }
    let mut messages = Vec::with_capacity(cells.len());
    let mut status = Vec::with_capacity(cells.len());
    for (k, (cell, line)) in cells.into_iter().zip(&lines).enumerate() {
        let row = rowids[k];
        let now = std::mem::take(&mut out[k]);
        if now == line.as_str() {
            messages.push(cell);
            status.push(if kept.contains(&row) {
                Status::Kept
            } else {
                Status::Unchanged
            });
            continue;
        }
        let members: std::collections::HashMap<String, &serde_json::value::RawValue> =
            serde_json::from_str(now)
                .map_err(|e| format!("the repaired row {row} does not read back: {e}"))?;
        let text = members
            .get(member)
            .ok_or_else(|| format!("the repaired row {row} lost its messages"))?;
        messages.push(Some(text.get().to_string()));
        status.push(if edited.contains(&row) {
            Status::Repaired
        } else {
            Status::Kept
        });
    }
    Ok(Repaired {
        rows: rowids,
        messages,
        status,
        edits,
        left,
    })
}
