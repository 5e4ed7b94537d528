//! One module per command, each with `run(args, out)`: read the input,
//! call the engine, render the command's [`Document`](crate::report::Document)
//! in the format asked for, and answer the exit code. [`crate::app`]
//! dispatches to them.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::cli::{InputArgs, OutputArgs};
use crate::discover;
use crate::error::Error;
use crate::escape::escape;
use crate::format::discovery::Env;
use crate::report::Render;
use crate::source::Limits;
use crate::write::atomic;

pub mod diff;
pub mod explain;
pub mod inspect;
pub mod lint;
pub mod repair;
pub mod rules;

/// A command's input as the user named it: a path, or a session by the id
/// its client shows (or a unique prefix of it), or `--last`.
pub struct Named {
    pub path: PathBuf,
    /// In a database of many sessions, the one named.
    pub conversation: Option<String>,
}

/// Resolve a command's input: a file or directory is itself; a name that
/// is none is a session's id (see [`discover::resolve`]); `--last` is the
/// session changed last. Which session was taken is said on standard
/// error, so that a report on standard output stays as it was.
fn named(arg: Option<&Path>, last: bool) -> Result<Named, Error> {
    let env = Env::from_process();
    let session = if last {
        discover::last(&env)?
    } else {
        let Some(arg) = arg else {
            return Err(Error::Usage(
                "name a session (its id) or a file, or give --last".into(),
            ));
        };
        if !discover::is_session_name(arg) {
            return Ok(Named {
                path: arg.to_path_buf(),
                conversation: None,
            });
        }
        discover::resolve(&arg.to_string_lossy(), &env)?
    };
    eprintln!(
        "note: {} session {} in {}",
        session.app,
        escape(&session.id),
        escape(&session.path.display().to_string())
    );
    Ok(Named {
        path: session.path,
        conversation: session.conversation,
    })
}

/// The reading limits the input flags set.
fn limits(a: &InputArgs) -> Limits {
    Limits {
        max_line_bytes: a.max_line_mib.saturating_mul(1 << 20),
        // Named once per run: the names live as long as the run.
        columns: crate::source::Columns {
            messages: a.messages_column.clone().map(|c| &*c.leak()),
            id: a.id_column.clone().map(|c| &*c.leak()),
        },
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
