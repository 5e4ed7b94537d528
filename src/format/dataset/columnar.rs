//! Conversation datasets in columnar files: Parquet (Hugging Face
//! datasets' `data/*.parquet`) and Arrow IPC (files, and the streams of
//! the `datasets` cache's `*.arrow`), read with the `parquet` and
//! `arrow-ipc` crates one record batch at a time.
//!
//! A row's conversation is its `messages` column (or `conversations`, or
//! the `--messages-column` one), either a JSON string or nested
//! (`list<struct<role, content, tool_calls: list<struct<id, type,
//! function: struct<name, arguments>>>, tool_call_id>>`, or ShareGPT's
//! `list<struct<from, value>>`). A nested value is turned into the JSON
//! its row stands for, a struct's null fields left out (Parquet writes
//! every field of the struct in every message: `tool_calls: null` on a
//! user message is a missing key, not a value), and then read as the
//! JSON Lines rows are ([`super::row::read_row`]). Findings name the row
//! by its index (`rowid`, from 0) and its `id` column (`--id-column`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{ArrowError, DataType};
use serde_json::{Map, Value};

use super::row::{Row, Shape, read_row};
use crate::error::{Error, Result};
use crate::format::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, Dialect, Format, Loc, SourceInfo};
use crate::source::{Limits, Source};

pub static STORE: Store = Store {
    name: "conversation datasets (Parquet, Arrow IPC)",
    formats: &[Format::Parquet, Format::ArrowIpc],
    dialects: &[Dialect::OpenAi, Dialect::ShareGpt],
    probe: Probe::Text { detect, open },
    writing: Writing::Never(
        "a repaired copy of a Parquet or Arrow dataset is not written yet: repair its JSON Lines form",
    ),
    hooks: Hooks::NONE,
};

const PARQUET_MAGIC: &[u8] = b"PAR1";
const ARROW_FILE_MAGIC: &[u8] = b"ARROW1";
/// An Arrow IPC stream's first message starts with this continuation
/// marker (the `datasets` cache's `*.arrow` files are streams).
const ARROW_STREAM_MARKER: &[u8] = b"\xFF\xFF\xFF\xFF";

fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.bytes.starts_with(PARQUET_MAGIC)
        || head.bytes.starts_with(ARROW_FILE_MAGIC)
        || (head.extension() == Some("arrow") && head.bytes.starts_with(ARROW_STREAM_MARKER)))
}

type Batches = Box<dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + Send>;

/// Rows read a batch at a time.
const BATCH_ROWS: usize = 1024;

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let bad = |what: &str, e: &dyn std::fmt::Display| Error::input(path, format!("{what}: {e}"));
    let file = File::open(path).map_err(|e| Error::io(path, &e))?;
    let head = super::super::read_head(path)?;
    let (format, batches, schema): (Format, Batches, arrow_schema::SchemaRef) =
        if head.starts_with(PARQUET_MAGIC) {
            let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| bad("is not a Parquet file chatfsck can read", &e))?
                .with_batch_size(BATCH_ROWS);
            let schema = b.schema().clone();
            let r = b
                .build()
                .map_err(|e| bad("is not a Parquet file chatfsck can read", &e))?;
            (Format::Parquet, Box::new(r), schema)
        } else if head.starts_with(ARROW_FILE_MAGIC) {
            let r = arrow_ipc::reader::FileReader::try_new(file, None)
                .map_err(|e| bad("is not an Arrow IPC file chatfsck can read", &e))?;
            let schema = r.schema();
            (Format::ArrowIpc, Box::new(r), schema)
        } else {
            let r = arrow_ipc::reader::StreamReader::try_new(std::io::BufReader::new(file), None)
                .map_err(|e| bad("is not an Arrow IPC stream chatfsck can read", &e))?;
            let schema = r.schema();
            (Format::ArrowIpc, Box::new(r), schema)
        };
    let names: Vec<&str> = match limits.columns.messages {
        Some(m) => vec![m],
        None => vec!["messages", "conversations"],
    };
    let Some((column, field)) = names
        .iter()
        .find_map(|n| schema.column_with_name(n).map(|(i, f)| (i, f.clone())))
    else {
        return Err(Error::not_history(
            path,
            format!(
                "has no `{}` column (name the column of the conversations with --messages-column)",
                names.join("` or `")
            ),
        ));
    };
    let id = schema
        .column_with_name(limits.columns.id.unwrap_or("id"))
        .map(|(i, _)| i);
    let shape = shape_of(&field).map_err(|why| Error::not_history(path, why))?;
    let dialect = match shape {
        Shape::Messages => Dialect::OpenAi,
        Shape::ShareGpt => Dialect::ShareGpt,
    };
    Ok(Opened::History(Box::new(Rows {
        path: path.to_path_buf(),
        batches,
        batch: None,
        next: 0,
        row: 0,
        column,
        id,
        shape,
        table: Arc::from(field.name().as_str()),
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format,
            dialect,
        }),
    })))
}

struct Rows {
    path: PathBuf,
    batches: Batches,
    batch: Option<RecordBatch>,
    /// The next row of `batch`.
    next: usize,
    /// The index of the next row in the file.
    row: u64,
    column: usize,
    id: Option<usize>,
    shape: Shape,
    /// The conversations' column, which locations name.
    table: Arc<str>,
    info: Arc<SourceInfo>,
}

impl Source for Rows {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        loop {
            if let Some(b) = &self.batch
                && self.next < b.num_rows()
            {
                let conv = self.conversation(b, self.next);
                self.next += 1;
                self.row += 1;
                return Some(Ok(conv));
            }
            match self.batches.next()? {
                Ok(b) => {
                    self.batch = Some(b);
                    self.next = 0;
                }
                Err(e) => {
                    // A damaged page ends the read: what follows it cannot
                    // be told apart from what it holds.
                    self.batch = None;
                    self.batches = Box::new(std::iter::empty());
                    return Some(Err(Error::input(
                        &self.path,
                        format!("row {} and after cannot be read: {e}", self.row),
                    )));
                }
            }
        }
    }
}

impl Rows {
    fn conversation(&self, b: &RecordBatch, i: usize) -> Conversation {
        conversation_at(
            &Cells {
                messages: b.column(self.column).as_ref(),
                id: self.id.map(|c| b.column(c).as_ref()),
                shape: self.shape,
                table: &self.table,
                info: &self.info,
            },
            i,
            self.row,
        )
    }
}

/// How a `messages` column writes its conversations, from its type: a
/// list of structs with `from` is ShareGPT, of other structs OpenAI
/// messages; a text column is told by its name (`conversations` is
/// ShareGPT). `Err`: the column holds no conversations, and why.
pub fn shape_of(field: &arrow_schema::Field) -> std::result::Result<Shape, String> {
    Ok(match field.data_type() {
        DataType::List(f) | DataType::LargeList(f) => match f.data_type() {
            DataType::Struct(fields) if fields.find("from").is_some() => Shape::ShareGpt,
            DataType::Struct(_) => Shape::Messages,
            other => {
                return Err(format!(
                    "its `{}` column is a list of {other}, not of messages",
                    field.name()
                ));
            }
        },
        // Told from the first row that holds one.
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            if field.name() == "conversations" {
                Shape::ShareGpt
            } else {
                Shape::Messages
            }
        }
        other => {
            return Err(format!(
                "its `{}` column is {other}, neither JSON text nor a list of messages",
                field.name()
            ));
        }
    })
}

/// The columns of a batch a conversation is read from.
pub struct Cells<'a> {
    /// The conversations' column (its type checked by [`shape_of`]).
    pub messages: &'a dyn Array,
    /// The rows' ids, when there is an id column.
    pub id: Option<&'a dyn Array>,
    pub shape: Shape,
    /// The conversations' column's name, which locations name.
    pub table: &'a Arc<str>,
    pub info: &'a Arc<SourceInfo>,
}

/// The conversation of row `i` of a batch, which is row `rowid` of the
/// whole input: the code the Parquet and Arrow reader and the Python
/// package's `lint_batch` share. Never an error: a cell that holds no
/// conversation is a conversation with that damaged record.
pub fn conversation_at(cells: &Cells<'_>, i: usize, rowid: u64) -> Conversation {
    let name = cells
        .id
        .and_then(|c| scalar_text(c, i))
        .unwrap_or_else(|| format!("row {rowid}"));
    let loc = Loc::Row {
        table: cells.table.clone().into(),
        key: Arc::from(name.as_str()),
        rowid: i64::try_from(rowid).ok(),
    };
    let col = cells.messages;
    let text = match col.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            scalar_text(col, i).unwrap_or_else(|| "null".into())
        }
        _ => match value_of(col, i) {
            Ok(v) => v.to_string(),
            Err(why) => {
                let mut conv = Conversation::new(name, cells.info.clone());
                conv.corrupt
                    .push(crate::model::CorruptRecord::new(loc, why, b"", false));
                return conv;
            }
        },
    };
    let at = |_: std::ops::Range<usize>| loc.clone();
    read_row(
        &Row {
            messages: &text,
            shape: cells.shape,
            name,
            at: &at,
            whole: loc.clone(),
        },
        cells.info.clone(),
    )
}

/// A string or integer cell as text (`None`: null, or another type).
pub fn scalar_text(a: &dyn Array, i: usize) -> Option<String> {
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        DataType::Utf8 => Some(a.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Some(a.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Some(a.as_string_view().value(i).to_string()),
        _ => match value_of(a, i).ok()? {
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        },
    }
}

/// The JSON a nested cell stands for; a struct's null fields left out.
pub fn value_of(a: &dyn Array, i: usize) -> std::result::Result<Value, String> {
    if a.is_null(i) {
        return Ok(Value::Null);
    }
    macro_rules! num {
        ($t:ty) => {
            Value::from(a.as_primitive::<$t>().value(i))
        };
    }
    Ok(match a.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(a.as_boolean().value(i)),
        DataType::Int8 => num!(Int8Type),
        DataType::Int16 => num!(Int16Type),
        DataType::Int32 => num!(Int32Type),
        DataType::Int64 => num!(Int64Type),
        DataType::UInt8 => num!(UInt8Type),
        DataType::UInt16 => num!(UInt16Type),
        DataType::UInt32 => num!(UInt32Type),
        DataType::UInt64 => num!(UInt64Type),
        DataType::Float32 => num!(Float32Type),
        DataType::Float64 => num!(Float64Type),
        DataType::Utf8 => Value::String(a.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Value::String(a.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Value::String(a.as_string_view().value(i).to_string()),
        DataType::List(_) => list(a.as_list::<i32>().value(i).as_ref())?,
        DataType::LargeList(_) => list(a.as_list::<i64>().value(i).as_ref())?,
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let mut m = Map::new();
            for (f, col) in fields.iter().zip(s.columns()) {
                let v = value_of(col.as_ref(), i)?;
                if !v.is_null() {
                    m.insert(f.name().clone(), v);
                }
            }
            Value::Object(m)
        }
        other => return Err(format!("holds a {other} value, which no message holds")),
    })
}

fn list(a: &dyn Array) -> std::result::Result<Value, String> {
    (0..a.len())
        .map(|k| value_of(a, k))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(Value::Array)
}
