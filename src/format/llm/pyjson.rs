//! Whether Python's `json.loads` reads a text, and if not, the message it
//! raises with.
//!
//! llm parses its JSON columns with `json.loads`, whose grammar is not
//! serde_json's: it takes `NaN`, `Infinity` and `-Infinity` (which
//! Python's own `json.dumps` writes for a float option such as
//! `temperature: float("nan")`), numbers of any size (`1e400` is `inf`),
//! lone surrogate escapes (`"\ud800"`) and nesting deeper than 128;
//! serde_json refuses each. Judging a column with
//! serde_json called those rows corrupt when `llm -c` reads them
//! without complaint. This checks the text against the grammar of
//! CPython's `json` scanner (Lib/json/decoder.py, scanner.py, 3.11):
//! whitespace `[ \t\n\r]`, `strict=True` strings (no raw control
//! character), its number pattern, and the error text `JSONDecodeError`
//! gives (`Expecting value: line 1 column 5 (char 4)`), positions
//! counted in characters as Python counts them. Depth is not limited
//! here: Python's limit (a `RecursionError` near 1000 levels) depends on
//! how deep its caller's stack already is.

/// The `JSONDecodeError` text `json.loads(text)` raises, or `None` when
/// it parses.
pub fn loads_error(text: &str) -> Option<String> {
    if text.starts_with('\u{feff}') {
        // `json.loads` refuses a str that begins with a BOM.
        return Some(
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)".into(),
        );
    }
    let b = text.as_bytes();
    let mut p = Parser { b, at: 0 };
    let fault = match p.document() {
        Ok(()) => return None,
        Err(f) => f,
    };
    Some(fault.describe(text))
}

struct Fault {
    msg: &'static str,
    at: usize,
}

impl Fault {
    fn describe(&self, text: &str) -> String {
        let before = &text[..self.at.min(text.len())];
        let pos = before.chars().count();
        let line = before.matches('\n').count() + 1;
        let col = match before.rfind('\n') {
            Some(nl) => before[nl + 1..].chars().count(),
            None => pos + 1,
        };
        // Python's column after a newline counts from the newline itself:
        // `pos - doc.rindex('\n', 0, pos)`.
        let col = if before.contains('\n') { col + 1 } else { col };
        format!("{}: line {line} column {col} (char {pos})", self.msg)
    }
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

type Step = Result<(), Fault>;

impl Parser<'_> {
    fn fault(&self, msg: &'static str, at: usize) -> Fault {
        Fault { msg, at }
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn document(&mut self) -> Step {
        self.ws();
        self.value()?;
        self.ws();
        if self.at != self.b.len() {
            return Err(self.fault("Extra data", self.at));
        }
        Ok(())
    }

    /// One value at `at` (no leading whitespace: the callers skip it,
    /// as Python's scanner is called after the skip). Containers are
    /// walked with an explicit stack, so depth costs no recursion.
    fn value(&mut self) -> Step {
        // The open containers: `true` for an object.
        let mut stack: Vec<bool> = Vec::new();
        loop {
            // A value is expected here.
            match self.b.get(self.at) {
                Some(b'{') => {
                    self.at += 1;
                    self.ws();
                    if self.b.get(self.at) == Some(&b'}') {
                        self.at += 1;
                    } else {
                        self.key()?;
                        stack.push(true);
                        continue;
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    self.ws();
                    if self.b.get(self.at) == Some(&b']') {
                        self.at += 1;
                    } else {
                        stack.push(false);
                        continue;
                    }
                }
                _ => self.scalar()?,
            }
            // A value ended: close what it ends, or go on to the next.
            loop {
                let Some(&object) = stack.last() else {
                    return Ok(());
                };
                self.ws();
                match (self.b.get(self.at), object) {
                    (Some(b','), true) => {
                        self.at += 1;
                        self.ws();
                        self.key()?;
                        break;
                    }
                    (Some(b','), false) => {
                        self.at += 1;
                        self.ws();
                        break;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.at += 1;
                        stack.pop();
                    }
                    _ => return Err(self.fault("Expecting ',' delimiter", self.at)),
                }
            }
        }
    }

    /// An object's key and its `:`, leaving `at` on the value.
    fn key(&mut self) -> Step {
        if self.b.get(self.at) != Some(&b'"') {
            return Err(self.fault("Expecting property name enclosed in double quotes", self.at));
        }
        self.string()?;
        self.ws();
        if self.b.get(self.at) != Some(&b':') {
            return Err(self.fault("Expecting ':' delimiter", self.at));
        }
        self.at += 1;
        self.ws();
        Ok(())
    }

    fn scalar(&mut self) -> Step {
        let start = self.at;
        let b = self.b;
        let rest = &b[start..];
        for word in [
            &b"null"[..],
            b"true",
            b"false",
            b"NaN",
            b"Infinity",
            b"-Infinity",
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return Ok(());
            }
        }
        match rest.first() {
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') if self.number() => Ok(()),
            _ => Err(self.fault("Expecting value", start)),
        }
    }

    /// `(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?`: whether one matched.
    fn number(&mut self) -> bool {
        let b = self.b;
        let mut i = self.at;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => return false,
        }
        if b.get(i) == Some(&b'.') && matches!(b.get(i + 1), Some(b'0'..=b'9')) {
            i += 1;
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if matches!(b.get(j), Some(b'0'..=b'9')) {
                while matches!(b.get(j), Some(b'0'..=b'9')) {
                    j += 1;
                }
                i = j;
            }
        }
        self.at = i;
        true
    }

    /// A string from its opening quote, as `py_scanstring` with
    /// `strict=True` reads it.
    fn string(&mut self) -> Step {
        let start = self.at;
        let b = self.b;
        let mut i = self.at + 1;
        loop {
            match b.get(i) {
                None => return Err(self.fault("Unterminated string starting at", start)),
                Some(b'"') => {
                    self.at = i + 1;
                    return Ok(());
                }
                Some(c) if *c < 0x20 => {
                    return Err(self.fault("Invalid control character at", i));
                }
                Some(b'\\') => match b.get(i + 1) {
                    None => return Err(self.fault("Unterminated string starting at", start)),
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') => {
                        let hex = b.get(i + 2..i + 6);
                        // Python takes any 4 hex digits, a lone surrogate
                        // included (it becomes one in the str).
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return Err(self.fault("Invalid \\uXXXX escape", i + 1));
                        }
                        i += 6;
                    }
                    Some(_) => return Err(self.fault("Invalid \\escape", i)),
                },
                Some(_) => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::loads_error;

    /// Each verdict and message is what CPython 3.11's `json.loads`
    /// gives for the text (checked by running it).
    #[test]
    fn it_reads_what_python_reads() {
        for ok in [
            "{}",
            "[]",
            " {\"a\": [1, 2.5, -0, 1e400, -1E-3]} \n",
            "{\"t\": NaN, \"u\": Infinity, \"v\": -Infinity}",
            "[NaN]",
            "\"\\ud800\"",
            "\"a\\/b\\u00e9\"",
            "null",
            "1",
            "\"\u{7f}\u{2028}\"",
            "{\"a\":{\"b\":[{\"c\":[]}]}}",
            "{\"a\": 1, \"a\": 2}",
        ] {
            assert_eq!(loads_error(ok), None, "{ok:?}");
        }
        for (bad, why) in [
            ("", "Expecting value: line 1 column 1 (char 0)"),
            (
                "{\"a\": 1",
                "Expecting ',' delimiter: line 1 column 8 (char 7)",
            ),
            (
                "{\"a\" 1}",
                "Expecting ':' delimiter: line 1 column 6 (char 5)",
            ),
            (
                "{'a': 1}",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            (
                "{\"a\": 1,}",
                "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
            ),
            ("[1,]", "Expecting value: line 1 column 4 (char 3)"),
            ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
            (
                "{\"a\": \"b",
                "Unterminated string starting at: line 1 column 7 (char 6)",
            ),
            (
                "\"a\nb\"",
                "Invalid control character at: line 1 column 3 (char 2)",
            ),
            ("\"\\x\"", "Invalid \\escape: line 1 column 2 (char 1)"),
            (
                "\"\\u12\"",
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            ("{} x", "Extra data: line 1 column 4 (char 3)"),
            ("01", "Extra data: line 1 column 2 (char 1)"),
            ("nan", "Expecting value: line 1 column 1 (char 0)"),
            ("-", "Expecting value: line 1 column 1 (char 0)"),
            ("[\n\"é\", x]", "Expecting value: line 2 column 6 (char 7)"),
            (
                "\u{feff}{}",
                "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
            ),
        ] {
            assert_eq!(loads_error(bad).as_deref(), Some(why), "{bad:?}");
        }
    }
}
