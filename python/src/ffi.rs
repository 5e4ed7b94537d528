//! Arrow batches across the Python boundary, through the Arrow PyCapsule
//! interface (<https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html>):
//! any object with `__arrow_c_stream__` (a pyarrow `Table` or
//! `RecordBatchReader`, polars, arro3, DuckDB) or `__arrow_c_array__` (a
//! pyarrow `RecordBatch`) comes in without a copy, and results go out as
//! an object with both methods.

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";
const STREAM: &CStr = c"arrow_array_stream";

fn arrow_err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The record batches of `data`, in order.
pub fn batches(data: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    if data.hasattr("__arrow_c_array__")? {
        let pair = data.call_method0("__arrow_c_array__")?;
        let pair = pair.cast::<PyTuple>()?;
        let schema = pair.get_item(0)?.cast_into::<PyCapsule>()?;
        let array = pair.get_item(1)?.cast_into::<PyCapsule>()?;
        let schema_ptr = schema
            .pointer_checked(Some(SCHEMA))?
            .cast::<FFI_ArrowSchema>();
        let array_ptr = array.pointer_checked(Some(ARRAY))?.cast::<FFI_ArrowArray>();
        // SAFETY: the capsules are named as the PyCapsule interface names
        // an ArrowSchema and an ArrowArray (checked above), and stay alive
        // while they are read. The array is moved out of its capsule (its
        // release callback left null there), as the interface allows a
        // consumer to; the schema is only borrowed.
        let data = unsafe {
            let ffi_array = FFI_ArrowArray::from_raw(array_ptr.as_ptr());
            arrow_array::ffi::from_ffi(ffi_array, schema_ptr.as_ref())
        }
        .map_err(arrow_err)?;
        let array = arrow_array::make_array(data);
        let Some(s) = array.as_any().downcast_ref::<StructArray>() else {
            return Err(PyTypeError::new_err(
                "lint_batch takes a record batch or a table, not a single array",
            ));
        };
        return Ok(vec![RecordBatch::from(s)]);
    }
    if data.hasattr("__arrow_c_stream__")? {
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let ptr = capsule
            .pointer_checked(Some(STREAM))?
            .cast::<FFI_ArrowArrayStream>();
        // SAFETY: the capsule is named as the interface names an
        // ArrowArrayStream (checked above); the stream is moved out of it,
        // leaving a released one that its destructor ignores.
        let stream = unsafe { FFI_ArrowArrayStream::from_raw(ptr.as_ptr()) };
        let reader = RecordBatchStreamReader::try_new(stream).map_err(arrow_err)?;
        return reader.collect::<Result<Vec<_>, _>>().map_err(arrow_err);
    }
    Err(PyTypeError::new_err(format!(
        "expected Arrow data (an object with __arrow_c_stream__ or __arrow_c_array__, such as a pyarrow Table or RecordBatch), got {}",
        data.get_type().name()?
    )))
}

/// A record batch handed back to Python: read it with
/// `pyarrow.table(x)`, `pyarrow.record_batch(x)`, `polars.DataFrame(x)`
/// or `arro3.core.Table(x)`.
#[pyclass(frozen, module = "chatfsck._native", name = "ArrowBatch")]
pub struct ArrowBatch(pub RecordBatch);

#[pymethods]
impl ArrowBatch {
    /// The batch as an Arrow C stream of one batch.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is ours to choose; a consumer casts if it must.
        let _ = requested_schema;
        let b = self.0.clone();
        let reader = RecordBatchIterator::new(vec![Ok(b)], self.0.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    /// The batch as an Arrow C struct array and its schema.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let s = StructArray::from(self.0.clone());
        let schema = FFI_ArrowSchema::try_from(s.data_type()).map_err(arrow_err)?;
        let array = FFI_ArrowArray::new(&s.to_data());
        let schema = PyCapsule::new_with_value(py, schema, SCHEMA)?;
        let array = PyCapsule::new_with_value(py, array, ARRAY)?;
        PyTuple::new(py, [schema, array])
    }

    fn __len__(&self) -> usize {
        self.0.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "ArrowBatch({} rows: {})",
            self.0.num_rows(),
            self.0
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
