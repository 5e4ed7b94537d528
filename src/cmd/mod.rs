//! One module per command, each with `run(args, out)`: read the input,
//! call the engine, render the command's [`Document`](crate::report::Document)
//! in the format asked for, and answer the exit code. [`crate::app`]
//! dispatches to them.

use std::io::{self, Write};
use std::path::Path;

use crate::cli::{InputArgs, OutputArgs};
use crate::error::Error;
use crate::report::Render;
use crate::source::Limits;
use crate::write::atomic;

pub mod diff;
pub mod explain;
pub mod inspect;
pub mod lint;
pub mod repair;
pub mod rules;

/// The reading limits the input flags set.
fn limits(a: &InputArgs) -> Limits {
    Limits {
        max_line_bytes: a.max_line_mib.saturating_mul(1 << 20),
        ..Limits::default()
    }
}

/// A failed write to standard output.
pub fn out_err(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Error::BrokenPipe;
    }
    Error::Output {
        path: "<stdout>".into(),
        cause: e.to_string(),
    }
}

/// Refuse a report file (`-o`) that would overwrite an input or one of its
/// SQLite sidecars, or an existing file without `--force`: checked before
/// any input is read, with repair's words.
fn check_output(o: &OutputArgs, inputs: &[&Path]) -> Result<(), Error> {
    match &o.output {
        Some(dest) => atomic::check_dest(inputs, dest, o.force, "the report"),
        None => Ok(()),
    }
}

/// Write a document to standard output, or to the `-o` file: a temporary
/// file beside it renamed into place, so an interrupted run leaves no
/// partial report (and the file keeps owner-only permissions: it holds
/// history text).
fn emit<D>(render: Render<D>, doc: &D, o: &OutputArgs, out: &mut dyn Write) -> Result<(), Error> {
    let Some(dest) = &o.output else {
        return render(doc, out).map_err(out_err);
    };
    let tmp = atomic::Atomic::new(dest)?;
    let mut w = tmp.writer(dest)?;
    render(doc, &mut w).map_err(|e| Error::Output {
        path: dest.clone(),
        cause: e.to_string(),
    })?;
    atomic::finish(w, dest)?;
    tmp.commit(dest, o.force, None)
}
