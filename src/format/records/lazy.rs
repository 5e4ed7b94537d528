//! JSON read lazily, for records that may hold one very large string (a
//! tool's output of tens of MB). A tree (`serde_json::Value`) of such a
//! record costs the string three times at its peak: the record's text,
//! the parser's scratch copy of the string (it has escapes), and the
//! tree's own. Here a record is its text: an object's members and an
//! array's elements are found when asked, and a string is decoded only
//! when the reader takes it, into one allocation of its exact size (or
//! borrowed, when it holds no escape).
//!
//! [`Node::parse`] reads the text this way only where that reads it as the
//! tree would; elsewhere (see there) the caller reads the tree and wraps
//! it ([`Node::Tree`]): one reader for both.
//!
//! Members and elements are found by serde_json (`RawValue`); only the
//! decoding of a string is done here, because neither crate does it at
//! this cost. serde_json decodes a string with escapes into its scratch
//! buffer and copies it out (twice the string). sonic-rs's `LazyValue`,
//! taken through serde, copies the whole text of a value whose strings
//! hold an escape, and its `as_str` decodes such a string through the
//! parser's scratch buffer into a `String` it caches and only lends
//! (three times the string, with the copy the model needs); it also gives
//! nothing for a lone surrogate escape, which the lenient readers mend.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::record::{MAX_DEPTH, lone_surrogates};

/// A JSON value: its text, or a tree already parsed.
#[derive(Clone, Copy, Debug)]
pub enum Node<'a> {
    Raw(&'a RawValue),
    Tree(&'a Value),
}

impl<'a> Node<'a> {
    /// `bytes` as a lazy value, or `None` where that reading could differ
    /// from serde_json's tree: text that is not a JSON value, that nests
    /// deeper than the tree reads, that holds a lone surrogate escape
    /// (the tree refuses it; lenient readers mend it), or a number the
    /// tree could find out of range (an exponent, or 300 digits and more).
    /// The caller reads those as a tree (which then says what is wrong).
    pub fn parse(bytes: &'a [u8]) -> Option<Node<'a>> {
        if !plain(bytes) {
            return None;
        }
        if memchr::memmem::find(bytes, b"\\u").is_some() && lone_surrogates(bytes).next().is_some()
        {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        serde_json::from_str::<&RawValue>(text).ok().map(Node::Raw)
    }

    /// The value's first byte of text (`{`, `[`, `"`, a digit, `t`…).
    fn kind(&self) -> u8 {
        match self {
            Node::Raw(r) => r.get().as_bytes().first().copied().unwrap_or(b'n'),
            Node::Tree(v) => match v {
                Value::Object(_) => b'{',
                Value::Array(_) => b'[',
                Value::String(_) => b'"',
                Value::Null => b'n',
                Value::Bool(true) => b't',
                Value::Bool(false) => b'f',
                Value::Number(_) => b'0',
            },
        }
    }

    pub fn is_null(&self) -> bool {
        self.kind() == b'n'
    }

    pub fn is_object(&self) -> bool {
        self.kind() == b'{'
    }

    pub fn is_array(&self) -> bool {
        self.kind() == b'['
    }

    pub fn is_string(&self) -> bool {
        self.kind() == b'"'
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.kind() {
            b't' => Some(true),
            b'f' => Some(false),
            _ => None,
        }
    }

    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Node::Raw(r) if matches!(self.kind(), b'-' | b'0'..=b'9') => {
                serde_json::from_str::<Value>(r.get()).ok()?.as_i64()
            }
            Node::Raw(_) => None,
            Node::Tree(v) => v.as_i64(),
        }
    }

    /// An object's members, in order (a repeated key more than once).
    pub fn members(&self) -> Option<Members<'a>> {
        match self {
            Node::Raw(r) if self.is_object() => {
                let m: RawMembers<'a> = serde_json::from_str(r.get()).ok()?;
                Some(Members(m.0))
            }
            Node::Tree(Value::Object(m)) => Some(Members(
                m.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::Tree(v)))
                    .collect(),
            )),
            _ => None,
        }
    }

    /// An object's member `key` (the last, where it repeats: as the tree
    /// keeps it).
    pub fn get(&self, key: &str) -> Option<Node<'a>> {
        match self {
            Node::Tree(v) => v.get(key).map(Node::Tree),
            Node::Raw(_) => self.members()?.get(key),
        }
    }

    /// An array's elements.
    pub fn items(&self) -> Option<Vec<Node<'a>>> {
        match self {
            Node::Raw(r) if self.is_array() => {
                let items: Vec<&'a RawValue> = serde_json::from_str(r.get()).ok()?;
                Some(items.into_iter().map(Node::Raw).collect())
            }
            Node::Tree(Value::Array(a)) => Some(a.iter().map(Node::Tree).collect()),
            _ => None,
        }
    }

    /// A string's text: borrowed where the JSON holds no escape, else
    /// decoded once.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        match self {
            Node::Tree(v) => v.as_str().map(Cow::Borrowed),
            Node::Raw(r) => {
                let text = r.get();
                let body = text.strip_prefix('"')?.strip_suffix('"')?;
                Some(if body.contains('\\') {
                    Cow::Owned(decode(body))
                } else {
                    Cow::Borrowed(body)
                })
            }
        }
    }

    /// A string's first `n` bytes or so, decoded (where the JSON text is
    /// longer: the last character may be cut or replaced).
    pub fn str_head(&self, n: usize) -> Option<Cow<'a, str>> {
        match self {
            Node::Raw(r) if self.is_string() && r.get().len() > n + 2 => {
                let body = &r.get()[1..];
                let mut cut = n;
                while !body.is_char_boundary(cut) {
                    cut -= 1;
                }
                Some(Cow::Owned(decode(&body[..cut])))
            }
            _ => self.as_str(),
        }
    }

    /// Whether the value is the empty string (not decoding a long one).
    pub fn is_empty_str(&self) -> bool {
        match self {
            Node::Raw(r) => r.get() == "\"\"",
            Node::Tree(v) => v.as_str() == Some(""),
        }
    }

    /// The value as a tree (for small values).
    pub fn to_value(&self) -> Value {
        match self {
            Node::Tree(v) => (*v).clone(),
            Node::Raw(r) => serde_json::from_str(r.get()).unwrap_or(Value::Null),
        }
    }

    /// The value's compact JSON text, as `Value::to_string` writes it.
    pub fn to_json(&self) -> String {
        match self {
            Node::Tree(v) => v.to_string(),
            Node::Raw(_) => self.to_value().to_string(),
        }
    }
}

/// An object's members.
pub struct Members<'a>(Vec<(Cow<'a, str>, Node<'a>)>);

impl<'a> Members<'a> {
    pub fn get(&self, key: &str) -> Option<Node<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

struct RawMembers<'a>(Vec<(Cow<'a, str>, Node<'a>)>);

impl<'de> Deserialize<'de> for RawMembers<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawMembers<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawMembers<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Key<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k.0, Node::Raw(v)));
                }
                Ok(RawMembers(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A key, borrowed where it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Whether JSON text nests no deeper than the tree reads and holds no
/// number the tree could find out of range: looked at outside strings.
fn plain(bytes: &[u8]) -> bool {
    let (mut depth, mut digits, mut i) = (0usize, 0usize, 0usize);
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                // To the closing quote: one not escaped by a backslash.
                let mut j = i + 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[j..]) {
                        None => return true,
                        Some(k) if bytes[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k;
                            break;
                        }
                    }
                    if j >= bytes.len() {
                        return true;
                    }
                }
                i = j;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'e' | b'E' if i > 0 && (bytes[i - 1].is_ascii_digit() || bytes[i - 1] == b'.') => {
                return false;
            }
            _ => {}
        }
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        if digits >= 300 {
            return false;
        }
        i += 1;
    }
    true
}

/// The text of a JSON string's body (between its quotes, valid JSON),
/// its escapes decoded, in one allocation of its exact size. A lone
/// surrogate escape becomes U+FFFD.
pub fn decode(body: &str) -> String {
    let mut out = String::with_capacity(decoded_len(body.as_bytes()));
    let b = body.as_bytes();
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        out.push_str(&body[i..i + k]);
        i += k;
        let (c, used) = escape(b, i);
        out.push(c);
        i += used;
    }
    out.push_str(&body[i..]);
    out
}

fn decoded_len(b: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        n += k;
        i += k;
        let (c, used) = escape(b, i);
        n += c.len_utf8();
        i += used;
    }
    n + b.len() - i
}

/// The character of the escape at `b[i]` (a backslash) and its length.
fn escape(b: &[u8], i: usize) -> (char, usize) {
    let hex = |at: usize| -> Option<u16> {
        let s = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    };
    match b.get(i + 1) {
        Some(b'n') => ('\n', 2),
        Some(b't') => ('\t', 2),
        Some(b'r') => ('\r', 2),
        Some(b'b') => ('\u{8}', 2),
        Some(b'f') => ('\u{c}', 2),
        Some(b'u') => {
            let Some(hi) = hex(i + 2) else {
                return ('\u{fffd}', 2);
            };
            if (0xD800..0xDC00).contains(&hi)
                && b.get(i + 6) == Some(&b'\\')
                && b.get(i + 7) == Some(&b'u')
                && let Some(lo) = hex(i + 8)
                && (0xDC00..0xE000).contains(&lo)
            {
                let c = 0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                return (char::from_u32(c).unwrap_or('\u{fffd}'), 12);
            }
            (char::from_u32(u32::from(hi)).unwrap_or('\u{fffd}'), 6)
        }
        // `\"`, `\\`, `\/`.
        Some(&c) => (char::from(c), 2),
        None => ('\\', 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings decode as serde_json decodes them, lone surrogates as
    /// U+FFFD; members and elements are found as the tree finds them.
    #[test]
    fn reads_as_the_tree_reads() {
        for text in [
            r#""plain""#,
            r#""a \"quoted\" \\ back\/slash \n\t\r\b\f end""#,
            r#""caf\u00e9 \u2713 \ud83d\ude00 \u0000""#,
            r#""naïve ✓ 😀""#,
            r#""""#,
            r#""\\u0041""#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap();
            let node = Node::parse(text.as_bytes()).unwrap();
            assert_eq!(node.as_str().as_deref(), tree.as_str(), "{text}");
        }
        assert_eq!(decode(r"a\ud83d b\udc00"), "a\u{fffd} b\u{fffd}");
        let text = br#"{"a":1,"b":{"c":[true,null,"x\"y"],"d":-2},"a":3}"#;
        let node = Node::parse(text).unwrap();
        let tree: Value = serde_json::from_slice(text).unwrap();
        for n in [node, Node::Tree(&tree)] {
            assert_eq!(n.get("a").and_then(|a| a.as_i64()), Some(3));
            let c = n.get("b").unwrap().get("c").unwrap().items().unwrap();
            assert_eq!(c[0].as_bool(), Some(true));
            assert!(c[1].is_null());
            assert_eq!(c[2].as_str().as_deref(), Some("x\"y"));
            assert_eq!(n.get("b").unwrap().get("d").unwrap().as_i64(), Some(-2));
            assert!(n.get("z").is_none());
            assert_eq!(
                n.get("b").unwrap().to_json(),
                r#"{"c":[true,null,"x\"y"],"d":-2}"#
            );
        }
    }

    /// What the tree could read otherwise is left to it.
    #[test]
    fn leaves_to_the_tree_what_it_could_read_otherwise() {
        for text in [
            r#"{"a":"\ud83d"}"#,
            r#"{"a":1e999}"#,
            r#"{"a":1.5E3}"#,
            r#"{"a":tru}"#,
            r#"{"a":1} x"#,
            "{\"a\":\"raw\tcontrol\"}",
        ] {
            assert!(Node::parse(text.as_bytes()).is_none(), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(Node::parse(deep.as_bytes()).is_none());
        let long = format!("[{}]", "9".repeat(300));
        assert!(Node::parse(long.as_bytes()).is_none());
        // Exponent-like letters inside strings, `true`, `false`: read.
        assert!(Node::parse(br#"{"e":"1e9","t":true,"f":false}"#).is_some());
        assert!(Node::parse(b"\xff").is_none());
    }
}
