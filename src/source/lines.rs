//! A line reader with a hard cap on line length, that knows where every line
//! starts and ends and whether the last line was terminated.

use std::io::{self, BufRead};

pub struct LineReader<R> {
    inner: R,
    /// The current line, without its newline.
    pub buf: Vec<u8>,
    /// 1-based number of the current line.
    pub line: u64,
    /// Byte offset of the start of the current line.
    pub start: u64,
    /// Whether the current line ended with a newline.
    pub terminated: bool,
    next_start: u64,
    max: usize,
    /// The input's length, when it is a file's.
    len: Option<u64>,
}

pub enum Next {
    Line,
    End,
    /// The line exceeds the cap; its number is in `line`.
    TooLong,
}

/// Room for `more` bytes in a line. A line of many MB grows fourfold at a
/// time, not twofold: each step copies the line to a new block, and the
/// allocator returns the old blocks to the system only some milliseconds
/// later, so a doubling line left about its own size again in freed
/// blocks still counted in the peak. Where the input's length is known
/// (`left`: its bytes not yet in the line), a line past 1 MiB gets room
/// for the rest of the input (up to the cap) at once: one copy of its
/// first MiB, and no freed block of its size at all. The room not
/// written to is never touched, and costs no memory.
fn grow(buf: &mut Vec<u8>, more: usize, left: Option<u64>, max: usize) {
    const LARGE: usize = 1 << 20;
    if buf.capacity() - buf.len() < more && buf.len() >= LARGE {
        match left {
            Some(left) => {
                let cap = max.saturating_sub(buf.len()).max(more);
                buf.reserve(usize::try_from(left).unwrap_or(usize::MAX).clamp(more, cap));
            }
            None => buf.reserve(buf.len() * 3 + more),
        }
    }
}

impl LineReader<std::io::BufReader<std::fs::File>> {
    /// Lines of a file, read in chunks of 256 KiB, whose length sizes a
    /// long line's buffer at once (see [`grow`]).
    pub fn of_file(file: std::fs::File, max: usize) -> Self {
        let len = file.metadata().ok().map(|m| m.len());
        LineReader::new(std::io::BufReader::with_capacity(256 * 1024, file), max).with_len(len)
    }
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            line: 0,
            start: 0,
            terminated: false,
            next_start: 0,
            max,
            len: None,
        }
    }

    pub fn next_line(&mut self) -> io::Result<Next> {
        self.buf.clear();
        self.start = self.next_start;
        self.terminated = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                if self.buf.is_empty() {
                    return Ok(Next::End);
                }
                break;
            }
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    if self.buf.len() + i > self.max {
                        self.line += 1;
                        return Ok(Next::TooLong);
                    }
                    let left = Self::left(self.len, self.start, &self.buf);
                    grow(&mut self.buf, i, left, self.max);
                    self.buf.extend_from_slice(&chunk[..i]);
                    self.inner.consume(i + 1);
                    self.terminated = true;
                    break;
                }
                None => {
                    let n = chunk.len();
                    if self.buf.len() + n > self.max {
                        self.line += 1;
                        return Ok(Next::TooLong);
                    }
                    let left = Self::left(self.len, self.start, &self.buf);
                    grow(&mut self.buf, n, left, self.max);
                    self.buf.extend_from_slice(chunk);
                    self.inner.consume(n);
                }
            }
        }
        self.line += 1;
        self.next_start = self.start + self.buf.len() as u64 + u64::from(self.terminated);
        Ok(Next::Line)
    }

    /// The input is `len` bytes long (see [`grow`]).
    pub fn with_len(mut self, len: Option<u64>) -> Self {
        self.len = len;
        self
    }

    /// The input's bytes not yet in the current line, where its length is
    /// known.
    fn left(len: Option<u64>, start: u64, buf: &[u8]) -> Option<u64> {
        len.map(|n| n.saturating_sub(start + buf.len() as u64))
    }

    /// Byte offset just past the current line's content.
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_offsets_and_termination() {
        let data = b"ab\n\ncde";
        let mut r = LineReader::new(&data[..], 100);
        assert!(matches!(r.next_line().unwrap(), Next::Line));
        assert_eq!((r.line, r.start, r.end(), r.terminated), (1, 0, 2, true));
        assert!(matches!(r.next_line().unwrap(), Next::Line));
        assert_eq!((r.line, r.start, r.buf.len()), (2, 3, 0));
        assert!(matches!(r.next_line().unwrap(), Next::Line));
        assert_eq!((r.line, r.start, r.end(), r.terminated), (3, 4, 7, false));
        assert!(matches!(r.next_line().unwrap(), Next::End));
    }

    #[test]
    fn caps_line_length() {
        let data = vec![b'x'; 1000];
        let mut r = LineReader::new(&data[..], 100);
        assert!(matches!(r.next_line().unwrap(), Next::TooLong));
        assert_eq!(r.line, 1);
    }
}
