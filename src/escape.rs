//! Escaping of untrusted text from histories before it reaches a terminal or
//! a document. History text is hostile input: an ANSI escape sequence, a
//! carriage return or a bidi override in a message must never act on the
//! reader's terminal.

use std::borrow::Cow;

/// True for characters that must not reach a terminal raw: C0 and C1 controls,
/// DEL, and the Unicode bidi controls that reorder what a reader sees.
pub fn is_unsafe(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(u, 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069 | 0x061c)
}

/// Escape control characters for a single line of terminal output:
/// newlines and tabs become `\n` and `\t`, everything else `\u{..}`.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    if !is_unsafe(c) {
        out.push(c);
        return;
    }
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => {
            use std::fmt::Write;
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// A short, single-line, escaped preview of at most `max` characters.
pub fn preview(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut last_space = false;
    for c in s.trim().chars() {
        if count >= max {
            out.push('…');
            return out;
        }
        // Fold runs of whitespace (newlines included) into one space.
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
                count += 1;
            }
            last_space = true;
            continue;
        }
        last_space = false;
        push_escaped(&mut out, c);
        count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_escape_is_neutralised() {
        let s = "ok\x1b[31mred\x1b[0m";
        assert_eq!(escape(s), "ok\\u{1b}[31mred\\u{1b}[0m");
        assert!(!escape(s).contains('\x1b'));
    }

    #[test]
    fn bidi_and_c1_are_escaped() {
        assert_eq!(escape("a\u{202e}b\u{9b}c"), "a\\u{202e}b\\u{9b}c");
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(escape("hello `x`"), Cow::Borrowed(_)));
    }

    #[test]
    fn preview_folds_whitespace_and_truncates() {
        assert_eq!(preview("  a\n\n b\tc  ", 10), "a b c");
        assert_eq!(preview("abcdef", 3), "abc…");
        assert_eq!(preview("x\x07y", 10), "x\\u{7}y");
    }
}
