//! Text buffers: history text shared with the buffer it was read into.

use std::sync::Arc;

use serde::Serialize;

/// Text read from a history: a slice of the buffer a conversation's
/// records were read into, or a string of its own (escapes decoded, other
/// sources). A million-chunk store holds half a gigabyte of text; sharing
/// the buffer spares a copy and an allocation per chunk. Dereferences to
/// `str`.
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Own(String),
    Shared {
        buf: Arc<String>,
        start: usize,
        end: usize,
    },
}

impl Text {
    /// `buf[start..end]`, sharing `buf`; a copy if the range does not fall
    /// on character boundaries.
    pub fn shared(buf: &Arc<String>, start: usize, end: usize) -> Text {
        match buf.get(start..end) {
            Some(_) => Text(TextRepr::Shared {
                buf: buf.clone(),
                start,
                end,
            }),
            None => Text::from(String::from_utf8_lossy(&buf.as_bytes()[start..end]).into_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            TextRepr::Own(s) => s,
            TextRepr::Shared { buf, start, end } => &buf[*start..*end],
        }
    }
}

impl Default for Text {
    fn default() -> Text {
        Text(TextRepr::Own(String::new()))
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for Text {
    fn eq(&self, o: &Text) -> bool {
        self.as_str() == o.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(TextRepr::Own(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(TextRepr::Own(s.to_string()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        match t.0 {
            TextRepr::Own(s) => s,
            TextRepr::Shared { .. } => t.as_str().to_string(),
        }
    }
}
