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

/// Escape untrusted text for inline markdown (a table cell, a list item, a
/// heading): pipes, backticks, HTML and emphasis or link syntax must not
/// change the document's structure, and `@name` must not mention anyone when
/// the report is pasted into a GitHub issue. Control characters are escaped
/// first, as for a terminal; a newline becomes a space.
pub fn md_escape(s: &str) -> String {
    let escaped = escape(s);
    let mut out = String::with_capacity(escaped.len() + 8);
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '`' => out.push_str("\\`"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '*' | '_' | '~' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            // An empty HTML comment splits `@name` and `#123` into two text
            // nodes, so GitHub sees no mention and no issue reference; the
            // rendered text is unchanged.
            '@' if chars.peek().is_some_and(|n| n.is_alphanumeric()) => {
                out.push_str("@<!-- -->");
            }
            '#' if chars.peek().is_some_and(|n| n.is_ascii_digit()) => {
                out.push_str("#<!-- -->");
            }
            c => out.push(c),
        }
    }
    out
}

/// Untrusted text as an inline markdown code span (for a heading or a list
/// item, not a table cell): shown verbatim with control characters escaped,
/// whatever backticks it holds. Inside a code span nothing else is markdown.
pub fn md_code(s: &str) -> String {
    let text = escape(s);
    // The fence is one backtick longer than the longest run inside.
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Escape untrusted text for HTML, as element content or a quoted
/// attribute value: `& < > " '` become entities, so no history text can
/// open a tag, close a `<textarea>` or `<script>`, end an attribute or
/// spell an entity; control and bidi characters are shown as `\u{..}` as
/// on a terminal. With `block`, newlines and tabs stay (text in a `<pre>`).
pub fn html_escape(s: &str, block: bool) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' if block => out.push(c),
            c => push_escaped(&mut out, c),
        }
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

    #[test]
    fn markdown_syntax_and_html_are_neutralised() {
        assert_eq!(
            md_escape("a|b `c` <img src=x> *d* _e_ ~f~ [g](h) \\ & #1"),
            r"a\|b \`c\` &lt;img src=x&gt; \*d\* \_e\_ \~f\~ \[g\](h) \\ &amp; #<!-- -->1"
        );
        assert_eq!(md_escape("line\none\x1b[2J"), r"line\\none\\u{1b}\[2J");
        assert_eq!(
            md_escape("@dataclass and a@b and @"),
            "@<!-- -->dataclass and a@<!-- -->b and @"
        );
    }

    #[test]
    fn html_cannot_open_a_tag_or_spell_an_entity() {
        assert_eq!(
            html_escape("</textarea><script>alert('x')</script> &amp; \"q\"", false),
            "&lt;/textarea&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp;amp; &quot;q&quot;"
        );
        assert_eq!(
            html_escape("a\nb\x1b[2J\u{202e}", false),
            "a\\nb\\u{1b}[2J\\u{202e}"
        );
        assert_eq!(html_escape("a\nb\tc\r", true), "a\nb\tc\\r");
    }

    #[test]
    fn code_spans_hold_any_backticks() {
        assert_eq!(md_code("plain"), "`plain`");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`x``"), "``` `x`` ```");
        assert_eq!(md_code("p|q_\x1b"), r"`p|q_\u{1b}`");
    }
}
