//! Writing the repaired copy of a line-based history (JSON Lines): the
//! input is read again line by line, each line handed to the store's
//! writer, which writes what the copy holds in its place (the line as it
//! is, its replacement, nothing, or more lines); the copy is written
//! atomically beside the output and renamed into place.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::atomic::{self, Atomic};
use crate::error::{Error, Result};
use crate::model::Loc;
use crate::source::lines::{LineReader, Next};

/// The input, open once while a writer plans, read record by record where
/// an edit needs the record's own text (for the repair log or to edit it).
pub struct Records<'p> {
    path: &'p Path,
    file: File,
}

impl<'p> Records<'p> {
    pub fn open(path: &'p Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, &e))?;
        Ok(Records { path, file })
    }

    /// The text of the record at `loc` (invalid UTF-8 shown as U+FFFD).
    pub fn read(&mut self, loc: &Loc) -> Result<String> {
        Ok(self.read_verbatim(loc)?.0)
    }

    /// The record at `loc` as the log keeps it: its text, and its exact
    /// bytes in base64 when they are not UTF-8 ([`super::verbatim`]).
    pub fn read_verbatim(&mut self, loc: &Loc) -> Result<(String, Option<String>)> {
        Ok(super::verbatim(&self.read_bytes(loc)?))
    }

    /// The exact bytes of the record at `loc`.
    pub fn read_bytes(&mut self, loc: &Loc) -> Result<Vec<u8>> {
        let path = self.path;
        let Loc::Line { start, end, .. } = loc else {
            return Err(Error::input(
                path,
                "internal: a line edit without a line location",
            ));
        };
        self.file
            .seek(SeekFrom::Start(*start))
            .map_err(|e| Error::io(path, &e))?;
        let mut buf = vec![0; (*end - *start) as usize];
        self.file
            .read_exact(&mut buf)
            .map_err(|e| Error::io(path, &e))?;
        Ok(buf)
    }
}

/// One line of the input, as the copy is written.
pub struct Line<'a> {
    /// The line, without its newline.
    pub bytes: &'a [u8],
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's start in the input.
    pub start: u64,
    /// Whether the line ended with a newline.
    pub terminated: bool,
}

/// Copy `input` to `output` line by line through `each`, then let `end`
/// write what follows the last line; commit atomically (the copy gets the
/// input's permissions). A line longer than `max` stops the copy with an
/// error that names it, and nothing is written.
pub fn rewrite(
    input: &Path,
    output: &Path,
    max: usize,
    force: bool,
    mut each: impl FnMut(&Line<'_>, &mut dyn Write) -> Result<()>,
    end: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let tmp = Atomic::new(output)?;
    let mut w = tmp.writer(output)?;
    let file = File::open(input).map_err(|e| Error::io(input, &e))?;
    let mut lines = LineReader::of_file(file, max);
    loop {
        match lines.next_line().map_err(|e| Error::io(input, &e))? {
            Next::End => break,
            Next::TooLong => {
                return Err(Error::input(
                    input,
                    format!("line {} is too long", lines.line),
                ));
            }
            Next::Line => {}
        }
        let line = Line {
            bytes: &lines.buf,
            number: lines.line,
            start: lines.start,
            terminated: lines.terminated,
        };
        each(&line, &mut w)?;
    }
    end(&mut w)?;
    atomic::finish(w, output)?;
    tmp.commit(output, force, Some(input))
}

/// A write error of the copy, naming the output.
pub fn output_error(output: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Output {
        path: output.to_path_buf(),
        cause: e.to_string(),
    }
}
