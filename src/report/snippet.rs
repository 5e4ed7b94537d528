//! Evidence excerpts for human diagnostics.
//!
//! Histories have long lines (a tool output can be megabytes on one line), so
//! a diagnostic never shows the file itself: it shows the referenced records,
//! each cut to a readable length and escaped, while keeping their real line
//! numbers. `Excerpt` implements miette's `SourceCode` over those lines.

use std::collections::BTreeMap;
use std::path::Path;

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

use crate::escape::escape;
use crate::model::Loc;

/// How much of a record line is shown.
pub const MAX_SHOWN: usize = 110;

/// Lines (real 1-based number → shown text) and where each sits in `data`.
pub struct Excerpt {
    name: String,
    data: String,
    /// (real line number, the record's byte offset in its file, start
    /// offset in data, length)
    lines: Vec<(u64, u64, usize, usize)>,
}

impl Excerpt {
    /// Read the lines `locs` point at from `path`. Database rows are shown
    /// as `table key`, numbered by their rowid.
    pub fn read(path: &Path, locs: &[&Loc]) -> Excerpt {
        // Keyed by line and start: the elements of a compact JSON array
        // share line 1 and must each show their own text.
        let mut wanted: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut rows: BTreeMap<(u64, u64), String> = BTreeMap::new();
        for loc in locs {
            match loc {
                Loc::Line { line, start, end } => {
                    wanted.insert((*line, *start), *end);
                }
                Loc::Row { table, key, rowid } => {
                    let n = rowid.map(|r| r.max(1) as u64).unwrap_or(1);
                    rows.insert((n, 0), escape(&format!("{table} {key}")).into_owned());
                }
            }
        }
        let mut shown: Vec<((u64, u64), String)> = Vec::new();
        if !wanted.is_empty() {
            // A compressed file's records are shown from the text it holds.
            let mut file = crate::source::compressed::Ranges::open(path).ok();
            for ((line, start), end) in wanted {
                let text = file
                    .as_mut()
                    .and_then(|f| read_range(f, start, end))
                    .unwrap_or_else(|| "<unreadable>".to_string());
                shown.push(((line, start), text));
            }
        }
        shown.extend(rows);
        let mut data = String::new();
        let mut lines = Vec::new();
        for ((line, start), text) in shown {
            if !data.is_empty() {
                data.push('\n');
            }
            lines.push((line, start, data.len(), text.len()));
            data.push_str(&text);
        }
        Excerpt {
            // The file name is untrusted text: miette prints it raw.
            name: crate::escape::escape(&path.display().to_string()).into_owned(),
            data,
            lines,
        }
    }

    /// The span of a shown line, for a label.
    pub fn span_of(&self, loc: &Loc) -> Option<SourceSpan> {
        let key = match loc {
            Loc::Line { line, start, .. } => (*line, *start),
            Loc::Row { rowid, .. } => (rowid.map(|r| r.max(1) as u64).unwrap_or(1), 0),
        };
        self.lines
            .iter()
            .find(|(l, s, _, _)| (*l, *s) == key)
            .map(|(_, _, off, len)| SourceSpan::new((*off).into(), (*len).max(1)))
    }

    fn index_at(&self, offset: usize) -> usize {
        match self
            .lines
            .binary_search_by(|(_, _, off, _)| off.cmp(&offset))
        {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }
}

fn read_range(
    f: &mut crate::source::compressed::Ranges<'_>,
    start: u64,
    end: u64,
) -> Option<String> {
    let want = (end.saturating_sub(start) as usize).min(MAX_SHOWN * 4 + 8);
    let buf = f.read(start, want).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let escaped = escape(&text);
    let mut shown: String = escaped.chars().take(MAX_SHOWN).collect();
    if (end - start) as usize > want || escaped.chars().count() > MAX_SHOWN {
        shown.push('…');
    }
    Some(shown)
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        _context_lines_before: usize,
        _context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        if self.lines.is_empty() {
            return Err(MietteError::OutOfBounds);
        }
        let first = self.index_at(span.offset());
        let last = self.index_at(span.offset() + span.len().saturating_sub(1));
        let (line, _, start, _) = self.lines[first];
        let (_, _, lstart, llen) = self.lines[last];
        let end = lstart + llen;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.data.as_bytes()[start..end],
            SourceSpan::new(start.into(), end - start),
            (line - 1) as usize,
            0,
            last - first + 1,
        )))
    }
}
