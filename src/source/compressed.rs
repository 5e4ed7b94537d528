//! Text files stored compressed. Codex (0.137 and later) rewrites a
//! rollout left idle for a week as `rollout-….jsonl.zst`, one zstd stream
//! of the same JSON Lines. A compressed file is recognised by its magic
//! bytes, whatever its name, and read as the text it holds, streaming:
//! never more of it in memory than the line being read. Every location
//! (`Loc::Line` offsets) in such a file is an offset into that text.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The first four bytes of a zstd frame (RFC 8878, `0xFD2FB528` little-endian).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Whether `head` (a file's first bytes) starts a zstd stream.
pub fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&ZSTD_MAGIC)
}

/// Whether the file at `path` is a zstd stream (from its first bytes).
pub fn file_is_zstd(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let mut f = File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut got = 0;
    while got < magic.len() {
        match f.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, &e)),
        }
    }
    Ok(got == magic.len() && is_zstd(&magic))
}

/// A file's text: the file itself, or what its zstd stream holds.
pub enum Text {
    Plain(File),
    Zstd(Box<Decoded>),
}

/// A zstd stream being decompressed, with the count of bytes it gave: a
/// damaged or truncated stream is an error that says where it broke.
pub struct Decoded {
    decoder: zstd::stream::read::Decoder<'static, BufReader<File>>,
    out: u64,
}

impl Read for Decoded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.decoder.read(buf) {
            Ok(n) => {
                self.out += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the zstd stream is damaged or cut short after {} bytes of text ({e}); what it holds past there cannot be read",
                    self.out
                ),
            )),
        }
    }
}

impl Read for Text {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Text::Plain(f) => f.read(buf),
            Text::Zstd(d) => d.read(buf),
        }
    }
}

impl Text {
    /// Open the file at `path` for its text.
    pub fn open(path: &Path) -> Result<Text> {
        let zstd = file_is_zstd(path)?;
        let file = File::open(path).map_err(|e| Error::io(path, &e))?;
        if !zstd {
            return Ok(Text::Plain(file));
        }
        let decoder = zstd::stream::read::Decoder::new(file).map_err(|e| Error::io(path, &e))?;
        Ok(Text::Zstd(Box::new(Decoded { decoder, out: 0 })))
    }

    pub fn is_zstd(&self) -> bool {
        matches!(self, Text::Zstd(_))
    }

    /// The length of the text, where the file says it: a plain file's
    /// (it sizes a long line's buffer at once); a compressed one's text
    /// is longer than its file, by how much is not known.
    pub fn len_hint(&self) -> Option<u64> {
        match self {
            Text::Plain(f) => f.metadata().ok().map(|m| m.len()),
            Text::Zstd(_) => None,
        }
    }

    /// Buffered for line reading.
    pub fn buffered(self) -> BufReader<Text> {
        BufReader::with_capacity(256 * 1024, self)
    }
}

/// The text of a file read at given offsets, in any order: a plain file
/// seeks; a compressed one is decompressed forward to the offset, and
/// again from its start for an offset behind the last one read (callers
/// ask in file order, nearly always).
pub struct Ranges<'p> {
    path: &'p Path,
    text: BufReader<Text>,
    /// Offset of the next byte `text` gives.
    pos: u64,
}

impl<'p> Ranges<'p> {
    pub fn open(path: &'p Path) -> Result<Self> {
        Ok(Ranges {
            path,
            text: Text::open(path)?.buffered(),
            pos: 0,
        })
    }

    /// A descriptor of the file, when its bytes are its text (it is not
    /// compressed).
    pub fn plain_file(&mut self) -> io::Result<Option<std::fs::File>> {
        match self.text.get_mut() {
            Text::Plain(f) => f.try_clone().map(Some),
            Text::Zstd(_) => Ok(None),
        }
    }

    /// Up to `len` bytes from offset `start` (fewer at the end of the text).
    pub fn read(&mut self, start: u64, len: usize) -> Result<Vec<u8>> {
        let path = self.path;
        match self.text.get_mut() {
            Text::Plain(f) => {
                use std::io::Seek;
                // The buffer is never used for a plain file here.
                f.seek(io::SeekFrom::Start(start))
                    .map_err(|e| Error::io(path, &e))?;
                let mut buf = Vec::with_capacity(len);
                f.take(len as u64)
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io(path, &e))?;
                Ok(buf)
            }
            Text::Zstd(_) => {
                if start < self.pos {
                    self.text = Text::open(path)?.buffered();
                    self.pos = 0;
                }
                let skip = start - self.pos;
                let skipped = io::copy(&mut (&mut self.text).take(skip), &mut io::sink())
                    .map_err(|e| Error::io(path, &e))?;
                self.pos += skipped;
                let mut buf = Vec::with_capacity(len);
                let n = (&mut self.text)
                    .take(len as u64)
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io(path, &e))?;
                self.pos += n as u64;
                Ok(buf)
            }
        }
    }
}

/// Whether a repaired copy of `input` is written compressed: when its name
/// says so (`….zst`: Codex opens a rollout named `.jsonl.zst` through its
/// zstd reader, and any other as plain text), or when the input is
/// compressed and the copy's name does not ask for plain text (an in-place
/// repair's temporary file, a name without an extension).
pub fn compress_output(input_is_zstd: bool, output: &Path) -> bool {
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.ends_with(".zst") {
        return true;
    }
    input_is_zstd && !(name.ends_with(".jsonl") || name.ends_with(".json"))
}

/// What the repair report says of the copy's form, when the input or the
/// copy is compressed: which form was written, and why.
pub fn written_as(input: &Path, output: &Path) -> Result<Option<String>> {
    let zstd = file_is_zstd(input)?;
    Ok(match (zstd, compress_output(zstd, output)) {
        (_, true) => Some(
            "zstd-compressed JSON Lines: Codex (0.137 and later, 0.169.0 checked) reads a rollout named `….jsonl.zst` through its zstd reader, and materialises a plain copy itself before it appends"
                .to_string(),
        ),
        (true, false) => Some(
            "plain JSON Lines, as the copy's name asks: the compressed input's text, decompressed (Codex reads a rollout named `….jsonl` as plain text, and prefers it to a `.jsonl.zst` of the same name)"
                .to_string(),
        ),
        (false, false) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_form_follows_the_name_then_the_input() {
        assert!(compress_output(false, Path::new("a/rollout-x.jsonl.zst")));
        assert!(compress_output(
            true,
            Path::new(".rollout-x.jsonl.zst.chatfsck-7.tmp")
        ));
        assert!(!compress_output(true, Path::new("out.jsonl")));
        assert!(!compress_output(false, Path::new("out")));
        assert!(compress_output(true, Path::new("out")));
    }
}
