//! Writing the repaired copy of a line-based history (JSON Lines): the
//! input is read again line by line, each line handed to the store's
//! writer, which writes what the copy holds in its place (the line as it
//! is, its replacement, nothing, or more lines); the copy is written
//! atomically beside the output and renamed into place.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use std::sync::Arc;

use super::atomic::{self, Atomic};
use super::payload::Payload;
use crate::error::{Error, Result};
use crate::model::Loc;
use crate::source::compressed::{Ranges, Text, compress_output};
use crate::source::lines::{LineReader, Next};

/// The input, open once while a writer plans, read record by record where
/// an edit needs the record's own text (for the repair log or to edit it).
/// A compressed input is read as the text it holds.
pub struct Records<'p> {
    path: &'p Path,
    text: Ranges<'p>,
    /// The input, open for the log and the copy to read a large record
    /// from (`None` for a compressed input, or until first asked).
    file: Option<Option<Arc<File>>>,
}

impl<'p> Records<'p> {
    pub fn open(path: &'p Path) -> Result<Self> {
        Ok(Records {
            path,
            text: Ranges::open(path)?,
            file: None,
        })
    }

    /// The input file, when its bytes are its text (not compressed): a
    /// large record is then kept as a range of it ([`Payload`]).
    pub fn file(&mut self) -> Result<Option<Arc<File>>> {
        if self.file.is_none() {
            let f = self
                .text
                .plain_file()
                .map_err(|e| Error::io(self.path, &e))?;
            self.file = Some(f.map(Arc::new));
        }
        Ok(self.file.clone().flatten())
    }

    /// The record at `loc` as the log keeps it: a large record of UTF-8
    /// as a range of the input ([`Payload::raw`]), any other as
    /// [`Records::read_verbatim`] gives it.
    pub fn read_kept(&mut self, loc: &Loc) -> Result<Kept> {
        let bytes = self.read_bytes(loc)?;
        if bytes.len() >= super::payload::LARGE
            && std::str::from_utf8(&bytes).is_ok()
            && let (Some(file), Loc::Line { start, .. }) = (self.file()?, loc)
        {
            return Ok(Kept::Large(Payload::raw(file, *start, bytes.len() as u64)));
        }
        Ok(Kept::Small(super::verbatim(&bytes)))
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
        let len = (*end - *start) as usize;
        let buf = self.text.read(*start, len)?;
        if buf.len() != len {
            return Err(Error::input(
                path,
                "changed while it was being repaired: a record read before is no longer there",
            ));
        }
        Ok(buf)
    }
}

/// A record as [`Records::read_kept`] keeps it.
pub enum Kept {
    /// Its text, and its exact bytes in base64 when they are not UTF-8.
    Small((String, Option<String>)),
    Large(Payload),
}

impl Kept {
    /// Set `e`'s `before` to this record.
    pub fn as_before(self, e: &mut super::Edit) {
        match self {
            Kept::Small((text, raw)) => (e.before, e.before_base64) = (Some(text), raw),
            Kept::Large(p) => e.large.before = Some(p),
        }
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
    let text = Text::open(input)?;
    let len = text.len_hint();
    let mut w = Output::new(
        tmp.writer(output)?,
        compress_output(text.is_zstd(), output),
        output,
    )?;
    let mut lines = LineReader::new(text.buffered(), max).with_len(len);
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
    atomic::finish(w.finish(output)?, output)?;
    tmp.commit(output, force, Some(input))
}

/// Copy `input` to `output` as it is, in the form the output's name asks
/// for ([`compress_output`]): the kernel copies the bytes when the form is
/// the input's; otherwise the text is decompressed, or compressed, on the
/// way.
pub fn copy_as(input: &Path, output: &Path, max: usize, force: bool) -> Result<()> {
    let zstd = crate::source::compressed::file_is_zstd(input)?;
    if compress_output(zstd, output) == zstd {
        return atomic::copy(input, output, force);
    }
    let werr = output_error(output);
    rewrite(
        input,
        output,
        max,
        force,
        |line, w| {
            w.write_all(line.bytes).map_err(&werr)?;
            if line.terminated {
                w.write_all(b"\n").map_err(&werr)?;
            }
            Ok(())
        },
        |_| Ok(()),
    )
}

/// The copy as it is written: plain text, or one zstd stream of it (the
/// form Codex reads a `.jsonl.zst` rollout in: `compress_output`).
pub enum Output {
    Plain(BufWriter<File>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl Output {
    pub fn new(w: BufWriter<File>, compress: bool, output: &Path) -> Result<Output> {
        if !compress {
            return Ok(Output::Plain(w));
        }
        zstd::stream::write::Encoder::new(w, zstd::DEFAULT_COMPRESSION_LEVEL)
            .map(Output::Zstd)
            .map_err(output_error(output))
    }

    /// The file writer, once a zstd stream is ended.
    pub fn finish(self, output: &Path) -> Result<BufWriter<File>> {
        match self {
            Output::Plain(w) => Ok(w),
            Output::Zstd(e) => e.finish().map_err(output_error(output)),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Zstd(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Zstd(e) => e.flush(),
        }
    }
}

/// A write error of the copy, naming the output.
pub fn output_error(output: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Output {
        path: output.to_path_buf(),
        cause: e.to_string(),
    }
}
