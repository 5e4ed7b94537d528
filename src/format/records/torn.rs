//! A JSON document cut off by a write that did not finish (a crash, a full
//! disk, a sync tool that copied half a file): the messages it still holds
//! whole. The document is an array of messages, or an object whose
//! `messages` member is one; the members before `messages` and every
//! complete element of the array are kept, the rest (from the end of the
//! last complete element) is the torn tail. A document torn before its
//! array starts holds no message and is not salvaged.

use serde_json::value::RawValue;

/// What a cut-off document still holds whole.
#[derive(Debug)]
pub(crate) struct Torn<'t> {
    /// Where the array of messages starts (its `[`), as a byte offset.
    pub array: usize,
    /// The array's complete elements, in order, borrowed from the text.
    pub elements: Vec<&'t RawValue>,
    /// Where the torn tail starts: right after the last complete element
    /// (or the array's `[`, or its `]` when the cut came after it).
    pub tail: usize,
    /// The white space between `[` and the first element, as the text
    /// lays it out (`\n    ` for Cline 4's pretty-printed member), empty
    /// when no element is complete.
    pub lead: String,
    /// What closes the array after its last complete element: the text's
    /// own white space and `]` when the array closed before the cut (the
    /// tail then starts after it), else a `]` at the indentation of the
    /// line that opened the array.
    pub array_close: String,
    /// What ends the document after the array: the envelope's `}`, and a
    /// newline where the document is laid out over lines (as
    /// `JSON.stringify(…, null, 2)` and a newline writes it).
    pub doc_close: String,
    /// The envelope's `sessionId`, when it comes before `messages`.
    pub session_id: Option<String>,
}

/// The white space at `at` and after it.
fn skip_ws(text: &str, mut at: usize) -> usize {
    let b = text.as_bytes();
    while at < b.len() && matches!(b[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// One JSON value starting at `at` (white space first allowed), and the
/// offset right after it; `None` when the text ends inside it or it is
/// not JSON.
fn value_at(text: &str, at: usize) -> Option<(&RawValue, usize)> {
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<&RawValue>();
    let v = values.next()?.ok()?;
    Some((v, at + values.byte_offset()))
}

/// The indentation of the line that holds offset `at`.
fn indent_of(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let rest = &text[line..at];
    &rest[..rest.len() - rest.trim_start().len()]
}

/// The complete messages of a cut-off document `text` (without a byte
/// order mark), or `None` when the document is torn before its array of
/// messages starts, or has none.
pub(crate) fn torn(text: &str) -> Option<Torn<'_>> {
    let b = text.as_bytes();
    let mut at = skip_ws(text, 0);
    let mut session_id = None;
    let (array, close_doc) = match b.get(at)? {
        b'[' => (at, String::new()),
        b'{' => {
            let open = at;
            at += 1;
            loop {
                at = skip_ws(text, at);
                let (key, after) = value_at(text, at)?;
                let key: String = serde_json::from_str(key.get()).ok()?;
                at = skip_ws(text, after);
                if b.get(at) != Some(&b':') {
                    return None;
                }
                at = skip_ws(text, at + 1);
                if key == "messages" && b.get(at) == Some(&b'[') {
                    break;
                }
                let (value, after) = value_at(text, at)?;
                if key == "sessionId" {
                    session_id = serde_json::from_str(value.get()).ok();
                }
                at = skip_ws(text, after);
                if b.get(at) != Some(&b',') {
                    // The envelope ended (or was cut) before `messages`.
                    return None;
                }
                at += 1;
            }
            let lines = text[open..at].contains('\n');
            (
                at,
                if lines {
                    format!("\n{}}}", indent_of(text, open))
                } else {
                    "}".into()
                },
            )
        }
        _ => return None,
    };
    let multiline = text[..array].contains('\n') || text[array..].starts_with("[\n");
    let mut elements = Vec::new();
    let mut tail = array + 1;
    let mut array_close = None;
    let mut lead = String::new();
    let mut at = array + 1;
    loop {
        let start = skip_ws(text, at);
        if elements.is_empty() && b.get(start) == Some(&b']') {
            array_close = Some(text[array + 1..=start].to_string());
            tail = start + 1;
            break;
        }
        let Some((el, after)) = value_at(text, start) else {
            break;
        };
        if elements.is_empty() {
            lead = text[array + 1..start].to_string();
        }
        elements.push(el);
        tail = after;
        let next = skip_ws(text, after);
        match b.get(next) {
            Some(b',') => at = next + 1,
            Some(b']') => {
                array_close = Some(text[after..=next].to_string());
                tail = next + 1;
                break;
            }
            _ => break,
        }
    }
    let array_close = match array_close {
        Some(own) => own,
        None if text[array..].starts_with("[\n") => format!("\n{}]", indent_of(text, array)),
        None => "]".to_string(),
    };
    let mut doc_close = close_doc;
    if multiline {
        doc_close.push('\n');
    }
    Some(Torn {
        array,
        elements,
        tail,
        lead,
        array_close,
        doc_close,
        session_id,
    })
}

#[cfg(test)]
mod tests {
    use super::torn;

    const WHOLE: &str = "{\n  \"version\": 1,\n  \"sessionId\": \"s\",\n  \"messages\": [\n    {\n      \"role\": \"user\",\n      \"content\": \"a\"\n    },\n    {\n      \"role\": \"assistant\",\n      \"content\": \"b\"\n    }\n  ],\n  \"system_prompt\": \"p\"\n}\n";

    /// The document as a repair writes it: the text before the array,
    /// the complete elements laid out as the text lays them out, the
    /// array's close and the document's.
    fn mended(text: &str) -> Option<String> {
        let t = torn(text)?;
        let sep = format!(",{}", t.lead);
        let elements: Vec<&str> = t.elements.iter().map(|e| e.get()).collect();
        Some(format!(
            "{}[{}{}{}{}",
            &text[..t.array],
            t.lead,
            elements.join(&sep),
            t.array_close,
            t.doc_close
        ))
    }

    #[test]
    fn a_document_cut_inside_an_element_keeps_the_elements_before_it() {
        let cut = &WHOLE[..WHOLE.find("\"b\"").unwrap()];
        let t = torn(cut).unwrap();
        assert_eq!(t.elements.len(), 1);
        assert_eq!(t.lead, "\n    ");
        let doc = mended(cut).unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 1);
        assert_eq!(v["sessionId"], "s");
        // Laid out as the client lays it out.
        assert!(doc.ends_with("\"a\"\n    }\n  ]\n}\n"), "{doc:?}");
    }

    #[test]
    fn every_cut_gives_a_document_or_nothing() {
        for n in 0..WHOLE.len() {
            let cut = &WHOLE[..n];
            if let Some(doc) = mended(cut) {
                let v: serde_json::Value = serde_json::from_str(&doc)
                    .unwrap_or_else(|e| panic!("cut at {n}: {doc:?}: {e}"));
                assert!(v["messages"].is_array(), "cut at {n}");
            }
        }
    }

    #[test]
    fn a_cut_after_the_array_keeps_every_message() {
        let cut = &WHOLE[..WHOLE.find("\"p\"").unwrap()];
        let t = torn(cut).unwrap();
        assert_eq!(t.elements.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&mended(cut).unwrap()).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_cut_before_the_array_salvages_nothing() {
        assert!(torn(&WHOLE[..WHOLE.find("\"messages\"").unwrap()]).is_none());
        assert!(torn("").is_none());
        assert!(torn("{\"version\": 1, \"messages\": {").is_none());
    }

    #[test]
    fn a_compact_array_closes_compactly() {
        let text = r#"[{"role":"user","content":"a"},{"role":"assis"#;
        let t = torn(text).unwrap();
        assert_eq!(t.elements.len(), 1);
        assert_eq!(mended(text).unwrap(), r#"[{"role":"user","content":"a"}]"#);
    }
}
