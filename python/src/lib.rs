//! `chatfsck._native`: the engine of the chatfsck CLI for Python, on Arrow
//! record batches of conversations (python/chatfsck/__init__.py is the
//! public face). The work runs with the GIL released; nothing here starts
//! a thread (no thread pool at import or after), so the module is safe in
//! a `fork` child (Hugging Face `datasets.map(num_proc=…)`).

mod ffi;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use chatfsck::batch::{Reading, Repaired, lint_batch as lint_rows, repair_batch as repair_rows};
use chatfsck::report::arrow;
use chatfsck::rules::Selection;
use ffi::ArrowBatch;

/// The findings of every row of `data` (a record batch or a table of
/// conversations), as a batch with a row a finding.
#[pyfunction]
#[pyo3(signature = (data, messages_column=None, id_column=None, first_row=0, source=None, row_column=None))]
fn lint_batch(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    messages_column: Option<&str>,
    id_column: Option<&str>,
    first_row: u64,
    source: Option<&str>,
    row_column: Option<&str>,
) -> PyResult<ArrowBatch> {
    let batches = ffi::batches(data)?;
    py.detach(|| {
        let selection = Selection::default();
        let mut rows = Vec::new();
        let mut first = first_row;
        for b in &batches {
            let reading = Reading {
                messages_column,
                id_column,
                first_row: first,
                row_column,
                source,
            };
            rows.extend(lint_rows(b, &reading, &selection).map_err(PyValueError::new_err)?);
            first += b.num_rows() as u64;
        }
        Ok(ArrowBatch(arrow::findings(&rows)))
    })
}

/// Every row of `data` repaired as `chatfsck repair` repairs a dataset:
/// the rows (`row`, `messages` as JSON text, `status`), the log's edits
/// and the findings left, three batches.
#[pyfunction]
#[pyo3(signature = (data, messages_column=None, id_column=None, first_row=0, source=None, row_column=None))]
fn repair_batch(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    messages_column: Option<&str>,
    id_column: Option<&str>,
    first_row: u64,
    source: Option<&str>,
    row_column: Option<&str>,
) -> PyResult<(ArrowBatch, ArrowBatch, ArrowBatch)> {
    let batches = ffi::batches(data)?;
    py.detach(|| {
        let mut first = first_row;
        let mut all = Repaired {
            rows: Vec::new(),
            messages: Vec::new(),
            status: Vec::new(),
            edits: Vec::new(),
            left: Vec::new(),
        };
        for b in &batches {
            let reading = Reading {
                messages_column,
                id_column,
                first_row: first,
                row_column,
                source,
            };
            let mut r = repair_rows(b, &reading).map_err(PyValueError::new_err)?;
            all.rows.append(&mut r.rows);
            all.messages.append(&mut r.messages);
            all.status.append(&mut r.status);
            all.edits.append(&mut r.edits);
            all.left.append(&mut r.left);
            first += b.num_rows() as u64;
        }
        Ok((
            ArrowBatch(arrow::repaired(&all)),
            ArrowBatch(arrow::edits(&all)),
            ArrowBatch(arrow::left(&all)),
        ))
    })
}

/// The `chatfsck` command with `argv` (its name first); its exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| chatfsck::app::main(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(lint_batch, m)?)?;
    m.add_function(wrap_pyfunction!(repair_batch, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<ArrowBatch>()?;
    Ok(())
}
