//! The JSON report: one versioned document (schema in docs/json-output.md).
//!
//! Written with serde_json through a formatter that also escapes DEL, C1
//! controls and bidi overrides (`\u009b` is a terminal's CSI), so the
//! document is safe to print even though it carries hostile history text.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::finding::{Finding, Severity};
use crate::lint::{Outcome, Stats};
use crate::model::Loc;

/// Bumped on any incompatible change to the document's shape.
pub const VERSION: u32 = crate::finding::JSON_VERSION;

pub struct Json;

#[derive(Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

pub const TOOL: Tool = Tool {
    name: "chatfsck",
    version: env!("CARGO_PKG_VERSION"),
};

#[derive(Serialize)]
struct Doc<'a> {
    version: u32,
    tool: Tool,
    files: Vec<FileOut<'a>>,
    findings: Vec<FindingOut<'a>>,
    skipped: Vec<Skipped>,
    errors: Vec<String>,
    summary: Summary,
    /// A run without a path: what was found of each app.
    #[serde(skip_serializing_if = "Option::is_none")]
    discovery: Option<&'a [crate::lint::AppSummary]>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    path: String,
    format: &'a str,
    dialect: &'a str,
    #[serde(flatten)]
    stats: &'a Stats,
    findings: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    crosscheck: Option<&'a crate::lint::CrossCheck>,
}

#[derive(Serialize)]
pub struct Location {
    pub path: String,
    #[serde(flatten)]
    pub loc: Option<Loc>,
}

#[derive(Serialize)]
struct Evidence<'a> {
    location: Location,
    text: &'a str,
}

#[derive(Serialize)]
struct FindingOut<'a> {
    rule: &'a str,
    severity: Severity,
    conversation: &'a str,
    message: Option<usize>,
    location: Location,
    summary: &'a str,
    ids: &'a [String],
    fixable: bool,
    /// `safe`, `unsafe` (the fix invents content), or null (report only).
    applicability: Option<&'static str>,
    notes: &'a [String],
    evidence: Vec<Evidence<'a>>,
}

#[derive(Serialize)]
struct Skipped {
    path: String,
    reason: String,
}

#[derive(Serialize)]
struct Summary {
    files: usize,
    conversations: u64,
    messages: u64,
    errors: usize,
    warnings: usize,
    infos: usize,
    fixable: usize,
    /// Inputs that were not read (the entries of `errors`).
    unread: usize,
}

pub fn location(f: &Finding, loc: Option<&Loc>) -> Location {
    Location {
        path: f.source.path.display().to_string(),
        loc: loc.cloned(),
    }
}

fn finding(f: &Finding) -> FindingOut<'_> {
    FindingOut {
        rule: f.rule,
        severity: f.severity,
        conversation: &f.conversation,
        message: f.message,
        location: location(f, f.loc.as_ref()),
        summary: &f.summary,
        ids: &f.ids,
        fixable: f.fixable,
        applicability: f.fix.as_ref().map(|x| x.applicability.as_str()),
        notes: &f.notes,
        evidence: f
            .labels
            .iter()
            .map(|l| Evidence {
                location: match &l.path {
                    Some(p) => Location {
                        path: p.display().to_string(),
                        loc: Some(l.loc.clone()),
                    },
                    None => location(f, Some(&l.loc)),
                },
                text: &l.text,
            })
            .collect(),
    }
}

/// One finding as `--format json` writes it in `findings`, for the
/// reports that carry the same fields in another container (Arrow).
pub fn finding_json(f: &Finding) -> serde_json::Value {
    serde_json::to_value(finding(f)).unwrap_or(serde_json::Value::Null)
}

/// A pretty formatter that escapes everything a terminal could act on.
pub struct SafeFormatter(PrettyFormatter<'static>);

impl SafeFormatter {
    pub fn new() -> Self {
        SafeFormatter(PrettyFormatter::with_indent(b"  "))
    }
}

impl Default for SafeFormatter {
    fn default() -> Self {
        Self::new()
    }
}

impl Formatter for SafeFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest
            .char_indices()
            .find(|(_, c)| crate::escape::is_unsafe(*c))
        {
            w.write_all(&rest.as_bytes()[..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{:04x}", u)?;
            }
            rest = &rest[i + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Write any serialisable value as safe, pretty JSON with a final newline.
pub fn write<T: Serialize>(value: &T, out: &mut dyn Write) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, SafeFormatter::new());
    value.serialize(&mut ser).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

impl Json {
    /// Write `lint`'s outcome.
    pub fn render(&self, o: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        let t = o.totals();
        let doc = Doc {
            version: VERSION,
            tool: TOOL,
            files: o
                .files
                .iter()
                .map(|f| FileOut {
                    path: f.info.path.display().to_string(),
                    format: f.info.format.as_str(),
                    dialect: f.info.dialect.as_str(),
                    stats: &f.stats,
                    findings: f.findings.len(),
                    crosscheck: f.crosscheck.as_ref(),
                })
                .collect(),
            findings: o.findings().map(finding).collect(),
            skipped: o
                .skipped
                .iter()
                .map(|(p, r)| Skipped {
                    path: p.display().to_string(),
                    reason: r.clone(),
                })
                .collect(),
            errors: o.errors.iter().map(|e| e.to_string()).collect(),
            summary: Summary {
                files: o.files.len(),
                conversations: t.conversations,
                messages: t.messages,
                errors: o.count(Severity::Error),
                warnings: o.count(Severity::Warning),
                infos: o.count(Severity::Info),
                fixable: o.fixable(),
                unread: o.errors.len(),
            },
            discovery: o.discovered.as_deref(),
        };
        write(&doc, out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn safe_formatter_escapes_c1_and_bidi() {
        let mut buf = Vec::new();
        super::write(&"a\u{9b}b\u{202e}c\u{1b}", &mut buf).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(s.trim(), r#""a\u009bb\u202ec\u001b""#);
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\u{9b}b\u{202e}c\u{1b}");
    }
}
