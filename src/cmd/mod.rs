//! One module per command, each with `run(args, out)`: read the input,
//! call the engine, render the command's [`Document`](crate::report::Document)
//! in the format asked for, and answer the exit code. [`crate::app`]
//! dispatches to them.

use std::io;

use crate::cli::InputArgs;
use crate::error::Error;
use crate::source::Limits;

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
