//! Decoding one chunk entry,
//! `{"chunk": {"type": …, …}, "role": …, "msgIdx": n, "chunkIdx": n}`.
//!
//! A store holds a million of these, each a few hundred bytes, and decoding
//! them is most of a lint's work. Two decoders give the same answer:
//!
//! - [`scan`], a validating scanner for the shape dispatch writes. Strings
//!   are found with `memchr` and borrowed from the row unless they hold an
//!   escape; nothing is built but the entry. It answers only when it has
//!   checked that the whole value is JSON of the expected shape, and gives
//!   up (`None`) on anything unusual: an escaped, missing or repeated field
//!   name, a `null`, a fractional index, a lone escaped surrogate, bytes that
//!   are not UTF-8, deep nesting, trailing text.
//! - [`serde`], sonic-rs through serde, which decides every value the
//!   scanner gives up on and words the error of a corrupt one.
//!
//! `tests::scanner_agrees_with_serde` holds them to it: over the fixtures'
//! entries and many thousands of mutations of them, whenever the scanner
//! answers, serde accepts the value and answers the same.

use std::borrow::Cow;

use serde::Deserialize;

/// One chunk entry, its strings borrowed from the row where they hold no
/// escape.
#[derive(Debug, PartialEq)]
pub struct Entry<'a> {
    pub chunk: WireChunk<'a>,
    pub role: Cow<'a, str>,
    pub msg_idx: i64,
    pub chunk_idx: i64,
}

/// The chunk inside an entry; fields a chunk type does not use are `None`.
#[derive(Debug, PartialEq)]
pub struct WireChunk<'a> {
    pub ty: Cow<'a, str>,
    pub text: Option<Cow<'a, str>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub tool_name: Option<Cow<'a, str>>,
    /// A tool call's input, as the JSON text stored.
    pub input: Option<Cow<'a, str>>,
    /// A tool result's content: the string if it is one, else its JSON text.
    pub content: Option<Cow<'a, str>>,
    pub is_error: Option<bool>,
    pub message: Option<Cow<'a, str>>,
}

/// Decode a stored value, or say (in sonic-rs's words) why it is not an
/// entry.
pub fn decode(value: &[u8]) -> Result<Entry<'_>, sonic_rs::Error> {
    match std::str::from_utf8(value) {
        Ok(s) => decode_str(s),
        Err(_) => serde(value),
    }
}

/// [`decode`] for a value known to be UTF-8.
pub fn decode_str(value: &str) -> Result<Entry<'_>, sonic_rs::Error> {
    match scan_str(value) {
        Some(entry) => Ok(entry),
        None => serde(value.as_bytes()),
    }
}

// ---------------------------------------------------------------- serde --

#[derive(Deserialize)]
struct SerdeEntry<'a> {
    #[serde(borrow)]
    chunk: SerdeChunk<'a>,
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(rename = "msgIdx")]
    msg_idx: i64,
    #[serde(rename = "chunkIdx")]
    chunk_idx: i64,
}

#[derive(Deserialize)]
struct SerdeChunk<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(rename = "toolName", borrow, default)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow, default)]
    content: Option<sonic_rs::LazyValue<'a>>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
}

/// The general decoder: sonic-rs through serde.
pub fn serde(value: &[u8]) -> Result<Entry<'_>, sonic_rs::Error> {
    // sonic-rs recurses without a limit: bound the depth first.
    if crate::format::records::record::too_deep(value) {
        return Err(serde::de::Error::custom(
            crate::format::records::record::too_deep_reason(),
        ));
    }
    // sonic-rs does not check the UTF-8 of the values it skips.
    let value = std::str::from_utf8(value).map_err(serde::de::Error::custom)?;
    let e: SerdeEntry<'_> = sonic_rs::from_str(value)?;
    let c = e.chunk;
    Ok(Entry {
        chunk: WireChunk {
            ty: c.ty,
            text: c.text,
            tool_call_id: c.tool_call_id,
            tool_name: c.tool_name,
            input: c.input.map(|v| Cow::Owned(v.as_raw_str().to_string())),
            content: c.content.map(|v| {
                let text = v.as_raw_str();
                Cow::Owned(sonic_rs::from_str::<String>(text).unwrap_or_else(|_| text.to_string()))
            }),
            is_error: c.is_error,
            message: c.message,
        },
        role: e.role,
        msg_idx: e.msg_idx,
        chunk_idx: e.chunk_idx,
    })
}

// -------------------------------------------------------------- scanner --

/// Nesting the scanner follows inside `input` and `content` before it
/// leaves a value to serde.
const MAX_DEPTH: u32 = 64;

/// The fast decoder on bytes: its answer alone, `None` where [`decode`]
/// would ask serde (the tests and the `chunk_entry` fuzz target hold it to
/// serde on arbitrary bytes).
pub fn scan(value: &[u8]) -> Option<Entry<'_>> {
    scan_str(std::str::from_utf8(value).ok()?)
}

/// The fast decoder; `None` leaves the value to [`serde`].
fn scan_str(value: &str) -> Option<Entry<'_>> {
    let mut p = Scanner {
        s: value,
        i: 0,
        depth: 0,
    };
    let (mut chunk, mut role, mut msg_idx, mut chunk_idx) = (None, None, None, None);
    p.object(|p, key| match key {
        "chunk" => set(&mut chunk, p.chunk()?),
        "role" => set(&mut role, p.str_value()?),
        "msgIdx" => set(&mut msg_idx, p.int()?),
        "chunkIdx" => set(&mut chunk_idx, p.int()?),
        _ => p.skip(),
    })?;
    p.ws();
    if p.i != value.len() {
        return None;
    }
    Some(Entry {
        chunk: chunk?,
        role: role?,
        msg_idx: msg_idx?,
        chunk_idx: chunk_idx?,
    })
}

/// Fill a field once; a repeated field is serde's to judge.
fn set<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

struct Scanner<'a> {
    s: &'a str,
    i: usize,
    depth: u32,
}

impl<'a> Scanner<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// Skip whitespace, then take `c`. (dispatch writes no whitespace, so
    /// the byte is looked at first.)
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() != Some(c) {
            self.ws();
            if self.peek()? != c {
                return None;
            }
        }
        self.i += 1;
        Some(())
    }

    /// An object whose members `member` reads, given each (unescaped) name
    /// with the scanner after its colon. An empty object is left to serde:
    /// the entry and its chunk both have required fields.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        loop {
            let (name, escaped) = self.string()?;
            if escaped {
                return None;
            }
            self.eat(b':')?;
            member(self, name)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn chunk(&mut self) -> Option<WireChunk<'a>> {
        let mut ty = None;
        let mut c = WireChunk {
            ty: Cow::Borrowed(""),
            text: None,
            tool_call_id: None,
            tool_name: None,
            input: None,
            content: None,
            is_error: None,
            message: None,
        };
        self.object(|p, key| match key {
            "type" => set(&mut ty, p.str_value()?),
            "text" => set(&mut c.text, p.str_value()?),
            "toolCallId" => set(&mut c.tool_call_id, p.str_value()?),
            "toolName" => set(&mut c.tool_name, p.str_value()?),
            "message" => set(&mut c.message, p.str_value()?),
            "input" => {
                let raw = p.raw_value()?;
                set(&mut c.input, Cow::Borrowed(raw))
            }
            "content" => {
                p.ws();
                let v = if p.peek()? == b'"' {
                    p.str_value()?
                } else {
                    Cow::Borrowed(p.raw_value()?)
                };
                set(&mut c.content, v)
            }
            "isError" => {
                let v = p.boolean()?;
                set(&mut c.is_error, v)
            }
            _ => p.skip(),
        })?;
        c.ty = ty?;
        Some(c)
    }

    /// A string's raw text between its quotes, and whether it holds an
    /// escape. Escapes are checked; a lone escaped surrogate is left to serde.
    #[inline]
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let b = self.bytes();
        let start = self.i;
        let mut j = start;
        let mut escaped = false;
        loop {
            let k = special(b, j)?;
            if b[k] == b'"' {
                self.i = k + 1;
                return Some((&self.s[start..k], escaped));
            }
            // Control characters must be escaped inside a JSON string.
            if b[k] != b'\\' {
                return None;
            }
            escaped = true;
            j = match *b.get(k + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => k + 2,
                b'u' => {
                    let cp = hex4(b.get(k + 2..k + 6)?)?;
                    match cp {
                        // A surrogate pair is one escaped character; a
                        // lone surrogate is serde's to judge.
                        0xD800..0xDC00 => {
                            let low = b.get(k + 6..k + 12)?;
                            if !low.starts_with(b"\\u")
                                || !(0xDC00..0xE000).contains(&hex4(&low[2..])?)
                            {
                                return None;
                            }
                            k + 12
                        }
                        0xDC00..0xE000 => return None,
                        _ => k + 6,
                    }
                }
                _ => return None,
            };
        }
    }

    /// A string value, decoded; borrowed when it holds no escape.
    fn str_value(&mut self) -> Option<Cow<'a, str>> {
        let (raw, escaped) = self.string()?;
        Some(if escaped {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        })
    }

    /// An integer that fits `i64` with room to spare; a fraction, an
    /// exponent or a longer number is serde's to judge.
    fn int(&mut self) -> Option<i64> {
        self.ws();
        let b = self.bytes();
        let neg = self.peek() == Some(b'-');
        let start = self.i + usize::from(neg);
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let digits = &b[start..end];
        // sonic-rs reads `-0` as a float.
        if digits.is_empty()
            || digits.len() > 18
            || (digits[0] == b'0' && (digits.len() > 1 || neg))
        {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = b.get(end) {
            return None;
        }
        self.i = end;
        let n = digits
            .iter()
            .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
        Some(if neg { -n } else { n })
    }

    fn boolean(&mut self) -> Option<bool> {
        self.ws();
        let rest = &self.bytes()[self.i..];
        let (v, len) = if rest.starts_with(b"true") {
            (true, 4)
        } else if rest.starts_with(b"false") {
            (false, 5)
        } else {
            return None;
        };
        self.i += len;
        Some(v)
    }

    /// Any JSON value, checked and skipped; its text.
    fn raw_value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Some(&self.s[start..self.i])
    }

    /// Check and skip any JSON value.
    fn skip(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return None;
                }
                let array = self.peek()? == b'[';
                self.i += 1;
                self.ws();
                let close = if array { b']' } else { b'}' };
                if self.peek()? == close {
                    self.i += 1;
                } else {
                    loop {
                        if !array {
                            self.string()?;
                            self.eat(b':')?;
                        }
                        self.skip()?;
                        self.ws();
                        match self.peek()? {
                            b',' => self.i += 1,
                            c if c == close => {
                                self.i += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                self.depth -= 1;
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes()[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let mut i = self.i;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let first = *b.get(i)?;
        let n = digits(&mut i);
        if n == 0 || (first == b'0' && n > 1) {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                return None;
            }
        }
        self.i = i;
        Some(())
    }
}

/// The position of the first `"`, `\\` or control character at or after
/// `from`: where a string ends, escapes, or is not JSON. Names and short
/// values end within a few words, read eight bytes at a time; long text
/// goes to `memchr` (SIMD) with a vectorised check for control characters.
#[inline]
fn special(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// High bit of each byte that is zero; exact for the lowest such byte,
    /// which is all that is read.
    fn zero_bytes(v: u64) -> u64 {
        v.wrapping_sub(ONES) & !v & HIGH
    }
    let mut i = from;
    for _ in 0..4 {
        let Some(word) = b.get(i..i + 8) else {
            return b[i..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .map(|k| i + k);
        };
        let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let hits = zero_bytes(x ^ (ONES * u64::from(b'"')))
            | zero_bytes(x ^ (ONES * u64::from(b'\\')))
            // Bytes below 0x20: subtracting 0x20 borrows only from them.
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let k = i + memchr::memchr2(b'"', b'\\', &b[i..]).unwrap_or(b.len() - i);
    // One branch-free pass (it vectorises); the position only when needed.
    if b[i..k].iter().fold(false, |bad, &c| bad | (c < 0x20)) {
        return b[i..k].iter().position(|&c| c < 0x20).map(|c| i + c);
    }
    (k < b.len()).then_some(k)
}

fn hex4(h: &[u8]) -> Option<u32> {
    h.iter()
        .try_fold(0u32, |n, &c| Some(n * 16 + char::from(c).to_digit(16)?))
}

/// Decode the escapes of a string the scanner has checked (every escape
/// complete, surrogates in pairs).
fn unescape(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        let k = i + k;
        out.push_str(&raw[i..k]);
        let (c, len) = match b[k + 1] {
            b'n' => ('\n', 2),
            b't' => ('\t', 2),
            b'r' => ('\r', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'u' => {
                let cp = hex4(&b[k + 2..k + 6]).unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&cp) {
                    let low = hex4(&b[k + 8..k + 12]).unwrap_or(0xDC00);
                    let c = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    (char::from_u32(c).unwrap_or('\u{FFFD}'), 12)
                } else {
                    (char::from_u32(cp).unwrap_or('\u{FFFD}'), 6)
                }
            }
            other => (char::from(other), 2),
        };
        out.push(c);
        i = k + len;
    }
    out.push_str(&raw[i..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries as dispatch writes them, and the odd corners of JSON.
    const SAMPLES: &[&str] = &[
        r#"{"chunk":{"type":"text","text":"I'll look at the failing tests first."},"role":"user","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"thinking","text":"<function=run_shell>\n<parameter=command>ls</parameter>\n</function>"},"role":"assistant","msgIdx":0,"chunkIdx":1}"#,
        r#"{"chunk":{"type":"tool-call","toolCallId":"call_e04504e2","toolName":"run_shell","input":{"command":"grep -rn 'the' packages/ | head -18","timeout":1.5e3,"flags":[true,false,null,-0.25,{"a":[]}]}},"role":"assistant","msgIdx":1,"chunkIdx":2}"#,
        r#"{"chunk":{"type":"tool-result","toolCallId":"call_e04504e2","toolName":"run_shell","content":"packages/m0/src/x.ts:0: \"quoted\" \\ tab\there \u00e9 \u20ac \ud83d\ude00","isError":false},"role":"tool","msgIdx":2,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"tool-result","toolCallId":"c2","toolName":"read","content":[{"type":"text","text":"a"}],"isError":true},"role":"tool","msgIdx":2,"chunkIdx":1}"#,
        r#"{"chunk":{"type":"tool-result","toolCallId":"c3","content":{"ok":1}},"role":"tool","msgIdx":3,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"error","message":"rate limited: retry in 2s"},"role":"assistant","msgIdx":4,"chunkIdx":0}"#,
        r#" { "role" : "assistant" , "chunkIdx" : 12 , "msgIdx" : -3 , "chunk" : { "text" : "héllo wörld ✓" , "type" : "text" , "providerMetadata" : { "x" : [ 1 , 2.5 , "s" ] } } , "extra" : null } "#,
        r#"{"chunk":{"type":"system","text":""},"role":"system","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":null},"role":"user","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":"x"},"role":"user","msgIdx":1.0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":"x"},"role":"user","msgIdx":0,"chunkIdx":0,"role":"tool"}"#,
        r#"{"chunk":{"type":"text","text":"lone \ud800 surrogate"},"role":"user","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","te\u0078t":"escaped name"},"role":"user","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":"x"},"role":"user","msgIdx":99999999999999999999,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":"x"},"role":"user","msgIdx":0,"chunkIdx":0}trailing"#,
        r#"{"chunk":{"type":"text"},"role":"user","msgIdx":0}"#,
        r#"[1,2,3]"#,
        r#""#,
    ];

    fn check(value: &[u8]) -> bool {
        let Some(fast) = scan(value) else {
            return false;
        };
        match serde(value) {
            Ok(slow) => assert_eq!(
                fast,
                slow,
                "the scanner and serde disagree on {:?}",
                String::from_utf8_lossy(value)
            ),
            Err(e) => panic!(
                "the scanner accepted what serde rejects ({e}): {:?}",
                String::from_utf8_lossy(value)
            ),
        }
        true
    }

    #[test]
    fn samples_decode_alike() {
        let answered: Vec<bool> = SAMPLES.iter().map(|s| check(s.as_bytes())).collect();
        // The scanner takes the shapes dispatch writes (including odd
        // spacing, unknown fields and escapes) and leaves the rest.
        assert_eq!(
            answered,
            [
                true, true, true, true, true, true, true, true, true, false, false, false, false,
                false, false, false, false, false, false
            ]
        );
        let e = scan(SAMPLES[3].as_bytes()).unwrap();
        assert_eq!(
            e.chunk.content.as_deref(),
            Some("packages/m0/src/x.ts:0: \"quoted\" \\ tab\there é € 😀")
        );
        let e = scan(SAMPLES[2].as_bytes()).unwrap();
        assert!(e.chunk.text.is_none());
        assert!(
            e.chunk
                .input
                .as_deref()
                .unwrap()
                .starts_with(r#"{"command":"#)
        );
        let e = scan(SAMPLES[0].as_bytes()).unwrap();
        assert!(
            matches!(e.chunk.text, Some(Cow::Borrowed(_))),
            "no copy without escapes"
        );
    }

    /// Random edits of the samples: wherever the scanner answers, serde
    /// accepts the value and reads the same entry.
    #[test]
    fn scanner_agrees_with_serde() {
        const ALPHABET: &[u8] =
            b"\"\\{}[],:.-+eE0129aunltrfx \t\n\x00\x1f\x7f\xc3\xa9\xe2\x82\xac\xff";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut answered, mut tried) = (0, 0);
        for round in 0..100_000 {
            let mut v = SAMPLES[round % SAMPLES.len()].as_bytes().to_vec();
            for _ in 0..=(next() % 3) {
                if v.is_empty() {
                    break;
                }
                let at = (next() as usize) % v.len();
                let c = ALPHABET[(next() as usize) % ALPHABET.len()];
                match next() % 4 {
                    0 => v[at] = c,
                    1 => v.insert(at, c),
                    2 => {
                        v.remove(at);
                    }
                    _ => {
                        let end = (at + 1 + (next() as usize) % 8).min(v.len());
                        let dup = v[at..end].to_vec();
                        v.splice(at..at, dup);
                    }
                }
            }
            tried += 1;
            answered += usize::from(check(&v));
        }
        // Enough of the mutations stay valid for the agreement to mean something.
        assert!(answered > tried / 20, "only {answered} of {tried} answered");
    }
}
