//! A record's text as a repair keeps it between planning and writing,
//! without holding a large record in memory: the small parts as strings,
//! the large ones as ranges of the input file, read again (through a
//! descriptor opened while planning, so a renamed or replaced input still
//! gives its own bytes) when the copy and the log are written. A store
//! whose records are not ranges of a file (a database row) keeps the
//! record's text once, shared ([`Payload::shared`]), and its edited
//! text as ranges of it.
//!
//! A record whose line holds one large string (a tool's output of tens of
//! MB) that an edit does not touch is planned on a small stand-in: the
//! large string is replaced by a marker ([`shrink`]), the edit is made on
//! the small tree, and the marker is put back as the string's own text
//! when the record is written ([`Payload::expand`]): the bytes are those
//! of serialising the whole tree (the string decoded and escaped again as
//! `serde_json` does), without the tree.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Strings this long, or longer, are kept out of a record's tree.
pub const LARGE: usize = 1 << 20;

/// One piece of a record's text.
#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    /// Bytes of the input, verbatim (`start`, `len`).
    Raw(u64, u64),
    /// The inside of a JSON string of the input (between its quotes),
    /// decoded and escaped again as `serde_json` writes a string.
    Reescaped(u64, u64),
}

/// A record's text: in memory, or in pieces, some of them read from the
/// input when written.
#[derive(Debug, Clone)]
pub struct Payload {
    file: Option<Origin>,
    pieces: Arc<Vec<Piece>>,
}

/// What the ranges of a payload are ranges of.
#[derive(Debug, Clone)]
enum Origin {
    /// The input file, read again when written.
    File(Arc<File>),
    /// A record's text held once, shared by its payloads.
    Text(Arc<str>),
}

impl Payload {
    /// The bytes `start..start + len` of `file` (known to be UTF-8).
    pub fn raw(file: Arc<File>, start: u64, len: u64) -> Payload {
        Payload {
            file: Some(Origin::File(file)),
            pieces: Arc::new(vec![Piece::Raw(start, len)]),
        }
    }

    /// The whole of `text`, shared (not copied) by every clone and by
    /// the payloads expanded from it ([`Shrunk::expand_shared`]).
    pub fn shared(text: Arc<str>) -> Payload {
        let len = text.len() as u64;
        Payload {
            file: Some(Origin::Text(text)),
            pieces: Arc::new(vec![Piece::Raw(0, len)]),
        }
    }

    /// The texts of `parts` one after the other (each read from the same
    /// input as the others, where it is read from one).
    pub fn join(parts: impl IntoIterator<Item = Payload>) -> Payload {
        let mut file = None;
        let mut pieces = Vec::new();
        for p in parts {
            file = file.or_else(|| p.file.clone());
            pieces.extend(p.pieces.iter().cloned());
        }
        Payload {
            file,
            pieces: Arc::new(pieces),
        }
    }

    /// Write the text to `w`, reading what is not in memory.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        self.each(&mut |s| w.write_all(s.as_bytes()))
    }

    /// The whole text, in memory (for a caller that must parse it).
    pub fn to_text(&self) -> io::Result<String> {
        let mut out = String::new();
        self.each(&mut |s| {
            out.push_str(s);
            Ok(())
        })?;
        Ok(out)
    }

    /// Hand the text to `f` in pieces of whole characters.
    fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        for p in self.pieces.iter() {
            match p {
                Piece::Text(s) => f(s)?,
                Piece::Raw(start, len) => {
                    raw_chunks(self.file()?, *start, *len, f)?;
                }
                Piece::Reescaped(start, len) => {
                    let mut r = RangeReader::new(self.file()?, *start, *len);
                    reescape(&mut r, f)?;
                }
            }
        }
        Ok(())
    }

    fn file(&self) -> io::Result<&Origin> {
        self.file
            .as_ref()
            .ok_or_else(|| io::Error::other("internal: a payload's input is not open"))
    }
}

/// One piece of a record's text as the log writes a large record's
/// `after` ([`Payload::pieces_of`]): text, or a range of the record's
/// `before` (byte offsets into its text).
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum LogPiece<'a> {
    Text(&'a str),
    /// `before`'s bytes `[start, len]`, verbatim.
    Before {
        before: [u64; 2],
    },
    /// The inside of a JSON string that is `before`'s bytes `[start,
    /// len]`, escaped again as JSON writes a string (the same bytes where
    /// the input escaped it so).
    BeforeString {
        before_string: [u64; 2],
    },
}

impl Payload {
    /// The text as text and ranges of `before`, when every range of it
    /// lies in `before` (a single range of the same input): a replaced
    /// record's `after` that keeps its large strings, written in the log
    /// without writing them twice. `None` otherwise.
    pub fn pieces_of(&self, before: &Payload) -> Option<Vec<LogPiece<'_>>> {
        let same = match (&self.file, &before.file) {
            (Some(Origin::File(a)), Some(Origin::File(b))) => Arc::ptr_eq(a, b),
            (Some(Origin::Text(a)), Some(Origin::Text(b))) => Arc::ptr_eq(a, b),
            _ => false,
        };
        let [Piece::Raw(b0, blen)] = before.pieces.as_slice() else {
            return None;
        };
        let within = |s: u64, l: u64| (s >= *b0 && s + l <= b0 + blen).then_some([s - b0, l]);
        if !same {
            return None;
        }
        let mut out = Vec::with_capacity(self.pieces.len());
        let mut ranged = false;
        for p in self.pieces.iter() {
            out.push(match p {
                Piece::Text(t) => LogPiece::Text(t),
                Piece::Raw(s, l) => LogPiece::Before {
                    before: within(*s, *l)?,
                },
                Piece::Reescaped(s, l) => LogPiece::BeforeString {
                    before_string: within(*s, *l)?,
                },
            });
            ranged |= !matches!(p, Piece::Text(_));
        }
        ranged.then_some(out)
    }
}

impl From<String> for Payload {
    fn from(s: String) -> Payload {
        Payload {
            file: None,
            pieces: Arc::new(vec![Piece::Text(s)]),
        }
    }
}

/// The text, streamed: `serde`'s `collect_str` escapes it piece by
/// piece. An input that can no longer be read (it changed while it was
/// being repaired) is the serialiser's error, never a panic (serde_json
/// expects a `Display` to fail only where its writer did).
impl serde::Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let failed = std::cell::RefCell::new(None);
        let r = s.collect_str(&Shown {
            payload: self,
            failed: &failed,
        });
        match failed.into_inner() {
            Some(e) => Err(serde::ser::Error::custom(e)),
            None => r,
        }
    }
}

struct Shown<'a> {
    payload: &'a Payload,
    failed: &'a std::cell::RefCell<Option<io::Error>>,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer_failed = false;
        let r = self.payload.each(&mut |s| {
            f.write_str(s).map_err(|_| {
                writer_failed = true;
                io::Error::other("the writer failed")
            })
        });
        match r {
            Err(_) if writer_failed => Err(fmt::Error),
            Err(e) => {
                *self.failed.borrow_mut() = Some(e);
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }
}

/// Bytes `start..start + len` of a file (or of a shared text), as a
/// reader.
struct RangeReader<'f> {
    file: &'f Origin,
    pos: u64,
    end: u64,
}

impl<'f> RangeReader<'f> {
    fn new(file: &'f Origin, start: u64, len: u64) -> Self {
        RangeReader {
            file,
            pos: start,
            end: start + len,
        }
    }
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = match self.file {
            Origin::File(f) => f.read_at(&mut buf[..want], self.pos)?,
            Origin::Text(t) => {
                let from = t.as_bytes().get(self.pos as usize..).unwrap_or_default();
                let n = want.min(from.len());
                buf[..n].copy_from_slice(&from[..n]);
                n
            }
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input is shorter than when it was read: a record read before is no longer there",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// The bytes of a range of `file`, in pieces of whole characters.
fn raw_chunks(
    file: &Origin,
    start: u64,
    len: u64,
    f: &mut dyn FnMut(&str) -> io::Result<()>,
) -> io::Result<()> {
    let mut r = RangeReader::new(file, start, len);
    let mut buf = vec![0u8; 1 << 16];
    let mut have = 0;
    loop {
        let n = r.read(&mut buf[have..])?;
        have += n;
        let valid = match std::str::from_utf8(&buf[..have]) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() && n > 0 => e.valid_up_to(),
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the input changed while it was being repaired: a record is no longer UTF-8",
                ));
            }
        };
        f(std::str::from_utf8(&buf[..valid]).expect("checked"))?;
        buf.copy_within(valid..have, 0);
        have -= valid;
        if n == 0 {
            return Ok(());
        }
    }
}

/// The inside of a JSON string (its text between the quotes), read from
/// `r`, decoded and escaped again as `serde_json` writes a string, handed
/// to `f` in pieces. The text is cut between escapes and characters,
/// and each piece decoded and escaped by `serde_json` itself: the bytes
/// are those of serialising the whole string. What `serde_json` refuses
/// (an escape JSON does not have, a lone surrogate, a control character)
/// is an error.
pub fn reescape(r: &mut dyn Read, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
    const PIECE: usize = 1 << 16;
    let mut buf: Vec<u8> = Vec::with_capacity(2 * PIECE + 16);
    let mut quoted: Vec<u8> = Vec::with_capacity(PIECE + 32);
    let mut eof = false;
    loop {
        // Fill the buffer to two pieces (or the end).
        while !eof && buf.len() < 2 * PIECE {
            let have = buf.len();
            buf.resize(have + 2 * PIECE - have.min(2 * PIECE) + 16, 0);
            let n = r.read(&mut buf[have..])?;
            buf.truncate(have + n);
            eof = n == 0;
        }
        if buf.is_empty() {
            return Ok(());
        }
        let cut = if eof && buf.len() <= PIECE {
            buf.len()
        } else {
            cut_after(&buf, PIECE)
        };
        quoted.clear();
        quoted.push(b'"');
        quoted.extend_from_slice(&buf[..cut]);
        quoted.push(b'"');
        let text: String = serde_json::from_slice(&quoted)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let e = serde_json::to_string(&text).map_err(io::Error::other)?;
        f(&e[1..e.len() - 1])?;
        buf.drain(..cut);
    }
}

/// Where to cut the inside of a JSON string `b` at or after `at`: not
/// inside an escape (a surrogate pair's two escapes kept together), nor
/// inside a character. (At most the whole of `b`.)
fn cut_after(b: &[u8], at: usize) -> usize {
    let mut i = 0;
    // Walk escape to escape from the start: `b` begins outside one.
    while let Some(k) = memchr::memchr(b'\\', &b[i..]).map(|k| i + k) {
        if k >= at {
            break;
        }
        let len = match b.get(k + 1) {
            Some(b'u') => {
                let hi = std::str::from_utf8(b.get(k + 2..k + 6).unwrap_or_default())
                    .ok()
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                if hi.is_some_and(|u| (0xD800..0xDC00).contains(&u))
                    && b.get(k + 6..k + 8) == Some(b"\\u")
                {
                    12
                } else {
                    6
                }
            }
            _ => 2,
        };
        i = k + len;
        if i >= at {
            return i.min(b.len());
        }
    }
    let mut c = at.max(i).min(b.len());
    while c < b.len() && b[c] & 0xC0 == 0x80 {
        c += 1;
    }
    c
}

/// A line with its large strings replaced by markers: the small text to
/// parse and edit, and where each large string's inside is in the line.
#[derive(Debug)]
pub struct Shrunk {
    pub text: String,
    /// Byte ranges in the line (between the quotes), by marker number.
    strings: Vec<(usize, usize)>,
    /// Where each marker is in `text` (between its quotes), by number.
    marks: Vec<(usize, usize)>,
}

const MARK: &str = "\\u0000\\u0001chatfsck-large-";

/// `line` with each string of [`LARGE`] bytes or more (one that decodes)
/// replaced by a marker; `None` when there is none, or when the line
/// already holds something that looks like a marker.
pub fn shrink(line: &str) -> Option<Shrunk> {
    if line.len() < LARGE || line.contains("chatfsck-large-") {
        return None;
    }
    let b = line.as_bytes();
    let mut text = String::new();
    let mut strings = Vec::new();
    let mut marks = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while let Some(q) = memchr::memchr(b'"', &b[i..]) {
        let open = i + q;
        // Find the closing quote: one not escaped.
        let mut j = open + 1;
        let close = loop {
            let k = j + memchr::memchr2(b'"', b'\\', &b[j..])?;
            if b[k] == b'\\' {
                j = k + 2;
                if j > b.len() {
                    return None;
                }
            } else {
                break k;
            }
        };
        // Only a string serde_json reads (one it can be written from).
        if close - open > LARGE
            && serde_json::from_str::<serde::de::IgnoredAny>(&line[open..=close]).is_ok()
        {
            text.push_str(&line[copied..open]);
            text.push('"');
            let mark = text.len();
            text.push_str(MARK);
            text.push_str(&strings.len().to_string());
            text.push_str("\\u0001");
            marks.push((mark, text.len()));
            text.push('"');
            strings.push((open + 1, close));
            copied = close + 1;
        }
        i = close + 1;
    }
    if strings.is_empty() {
        return None;
    }
    text.push_str(&line[copied..]);
    Some(Shrunk {
        text,
        strings,
        marks,
    })
}

impl Shrunk {
    /// Where the byte at `at` of the small text is in the line: a
    /// position outside the markers (the start or end of a value that
    /// holds one, say) moves by what the markers before it left out.
    pub fn in_line(&self, at: usize) -> usize {
        let mut pos = at;
        for (&(ms, me), &(ls, le)) in self.marks.iter().zip(&self.strings) {
            if me <= at {
                pos = pos + (le - ls) - (me - ms);
            }
        }
        pos
    }

    /// The record `serialised` (a serialisation of the edited small tree)
    /// with each marker back as its string, read from `file`, where the
    /// line starts at `line_start`.
    pub fn expand(&self, serialised: String, file: Arc<File>, line_start: u64) -> Payload {
        self.expand_from(serialised, Origin::File(file), line_start)
    }

    /// [`Shrunk::expand`] of a line held in memory, `text`, shared.
    pub fn expand_shared(&self, serialised: String, text: Arc<str>) -> Payload {
        self.expand_from(serialised, Origin::Text(text), 0)
    }

    fn expand_from(&self, serialised: String, file: Origin, line_start: u64) -> Payload {
        let mut pieces = Vec::new();
        let mut rest = serialised.as_str();
        while let Some(k) = rest.find(MARK) {
            let after = &rest[k + MARK.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let n: usize = after[..digits].parse().expect("a marker's number");
            let tail = &after[digits..];
            let tail = tail
                .strip_prefix("\\u0001")
                .expect("a marker ends as it was written");
            if k > 0 {
                pieces.push(Piece::Text(rest[..k].to_string()));
            }
            let (s, e) = self.strings[n];
            pieces.push(Piece::Reescaped(line_start + s as u64, (e - s) as u64));
            rest = tail;
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Payload {
            file: Some(file),
            pieces: Arc::new(pieces),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reescaped(s: &str) -> io::Result<String> {
        let mut out = String::new();
        reescape(&mut s.as_bytes(), &mut |p| {
            out.push_str(p);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn a_string_escaped_again_in_pieces_is_as_serde_json_writes_it() {
        let long = "\\u00e9\\\\\\ud83d\\ude00\\\"x✓\\t".repeat(20_000);
        for s in [
            r#"plain"#,
            r#"a\"b\\c\/d\b\f\n\r\t"#,
            r#"\u00e9 caf\u00E9 \ud83d\ude00 ✓"#,
            "",
            long.as_str(),
        ] {
            let v: String = serde_json::from_str(&format!("\"{s}\"")).unwrap();
            let want = serde_json::to_string(&v).unwrap();
            assert_eq!(reescaped(s).unwrap(), want[1..want.len() - 1]);
        }
        for s in [r#"\ud83d"#, r#"\ud83dx"#, r#"\x"#, "a\u{1}b", r#"\u12"#] {
            assert!(reescaped(s).is_err(), "{s}");
        }
    }

    /// A large record's `after` written as text and ranges of its
    /// `before` gives the whole `after` back from the `before` alone.
    #[test]
    fn an_after_as_pieces_of_its_before_gives_the_after_back() {
        let big: String = (0..LARGE / 8).map(|i| format!("{i}\t\"é/")).collect();
        let line =
            serde_json::json!([{"type": "text", "text": big}, {"type": "toolResponse", "id": "x"}])
                .to_string();
        let before_text: Arc<str> = line.into();
        let s = shrink(&before_text).expect("one large string");
        let mut v: serde_json::Value = serde_json::from_str(&s.text).unwrap();
        v.as_array_mut().unwrap().remove(1);
        let after = s.expand_shared(v.to_string(), before_text.clone());
        let before = Payload::shared(before_text.clone());
        let pieces = after.pieces_of(&before).expect("ranges of the before");
        assert!(pieces.len() >= 3, "{pieces:?}");
        let b = before_text.as_bytes();
        let mut rebuilt = String::new();
        for p in &pieces {
            match p {
                LogPiece::Text(t) => rebuilt.push_str(t),
                LogPiece::Before { before: [s, l] } => rebuilt
                    .push_str(std::str::from_utf8(&b[*s as usize..(s + l) as usize]).unwrap()),
                LogPiece::BeforeString {
                    before_string: [s, l],
                } => {
                    let inside = &b[*s as usize..(s + l) as usize];
                    reescape(&mut &inside[..], &mut |t| {
                        rebuilt.push_str(t);
                        Ok(())
                    })
                    .unwrap();
                }
            }
        }
        assert_eq!(rebuilt, after.to_text().unwrap());
        assert_eq!(
            rebuilt,
            serde_json::json!([{"type": "text", "text": big}]).to_string()
        );
        // Another record's text, or a text in memory, is written whole.
        let other = Payload::shared(before_text.to_string().into());
        assert!(after.pieces_of(&other).is_none());
        assert!(Payload::from("x".to_string()).pieces_of(&before).is_none());
    }

    #[test]
    fn a_shrunk_line_expands_to_the_whole_line_serialised() {
        let big: String = (0..LARGE / 8)
            .map(|i| format!("{i}\t\"é\\/"))
            .collect::<String>();
        let line = serde_json::json!({"role": "user", "content": [{"type": "text", "text": big}]})
            .to_string()
            // A form serde_json does not write, which it reads.
            .replace("\\\"", "\\u0022");
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(b"xx").unwrap();
        tmp.write_all(line.as_bytes()).unwrap();
        let s = shrink(&line).expect("one large string");
        assert!(s.text.len() < 200, "{}", s.text);
        // Offsets outside the marker map to the line's own.
        assert_eq!(s.in_line(s.text.len()), line.len());
        assert_eq!(s.in_line(3), 3);
        let mut v: serde_json::Value = serde_json::from_str(&s.text).unwrap();
        v["content"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "text", "text": "more"}));
        let p = s.expand(v.to_string(), Arc::new(tmp), 2);
        let mut whole: serde_json::Value = serde_json::from_str(&line).unwrap();
        whole["content"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "text", "text": "more"}));
        assert_eq!(p.to_text().unwrap(), whole.to_string());
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::Value::String(whole.to_string())
        );
    }
}
