//! SARIF 2.1.0, as GitHub code scanning accepts it.
//!
//! One run; the driver lists every rule of the catalogue (so `ruleIndex` is
//! the catalogue position) with its documentation as help. Each result
//! points at the primary record with a URI relative to `%SRCROOT%` (the
//! current directory, where CI checks out the repository), carries the other
//! evidence records as related locations, and a partial fingerprint that
//! survives lines being added above it. Database rows have no line: they are
//! reported at line 1 with the table and key in the message.
//!
//! Written with serde_json through the JSON report's safe formatter; history
//! text in messages is also escaped as for a terminal, because SARIF viewers
//! show it to people.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{CiPath, CiPaths, ci_base};
use crate::escape::escape;
use crate::finding::{Finding, Severity};
use crate::lint::Outcome;
use crate::model::Loc;
use crate::rules::{RULES, Rule};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The `uriBaseId` of relative artifact locations.
pub const SRCROOT: &str = "%SRCROOT%";
/// The key of chatfsck's partial fingerprint; bumped if its recipe changes.
pub const FINGERPRINT_KEY: &str = "chatfsck/v1";

pub struct Sarif {
    paths: CiPaths,
}

impl Sarif {
    pub fn from_env() -> Self {
        Self::with_base(ci_base())
    }

    pub fn with_base(base: Option<PathBuf>) -> Self {
        Sarif {
            paths: CiPaths::new(base),
        }
    }
}

pub fn level(sev: Severity) -> &'static str {
    match sev {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// Text for a SARIF message: control characters escaped, and the square
/// brackets SARIF reserves for embedded links escaped with a backslash
/// (SARIF 2.1.0 §3.11.6), as is a backslash in front of one.
pub fn message_text(s: &str) -> String {
    let s = escape(s);
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '\\' if matches!(chars.peek(), Some('[' | ']')) => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encode a path for a URI: everything but unreserved characters
/// and `/`.
fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The artifact location of an input: relative to `%SRCROOT%` when it is
/// under the base directory, else an absolute `file://` URI.
fn artifact(name: CiPath) -> (String, Value) {
    match name {
        CiPath::Relative(rel) => {
            let uri = percent_encode(&rel);
            (uri.clone(), json!({ "uri": uri, "uriBaseId": SRCROOT }))
        }
        CiPath::Url(url) => (url.clone(), json!({ "uri": url })),
        CiPath::Absolute(abs) => {
            let p = abs.to_string_lossy().replace('\\', "/");
            let p = if p.starts_with('/') {
                p
            } else {
                format!("/{p}")
            };
            let uri = format!("file://{}", percent_encode(&p));
            (uri.clone(), json!({ "uri": uri }))
        }
    }
}

fn region(loc: Option<&Loc>) -> Value {
    let line = loc.and_then(Loc::line).unwrap_or(1);
    json!({ "startLine": line })
}

/// ` (table `kv`, key `…`)` for a database row, empty for a line.
fn row_suffix(loc: Option<&Loc>) -> String {
    match loc {
        Some(Loc::Row { table, key, rowid }) => {
            let rowid = rowid.map(|r| format!(", rowid {r}")).unwrap_or_default();
            format!(" (table `{table}`, key `{key}`{rowid})")
        }
        _ => String::new(),
    }
}

/// The first section of a rule's documentation, as one paragraph.
fn full_description(rule: &Rule) -> String {
    let mut lines = rule
        .doc
        .lines()
        .skip_while(|l| !l.starts_with("## What it does"));
    lines.next();
    let text: Vec<&str> = lines
        .take_while(|l| !l.starts_with("## "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if text.is_empty() {
        rule.summary.to_string()
    } else {
        text.join(" ")
    }
}

/// `orphan-tool-call` → `OrphanToolCall`: SARIF wants a rule's `name` to
/// be a readable identifier distinct from its opaque `id`.
fn pascal_case(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn rule_descriptor(rule: &Rule) -> Value {
    // The documentation `chatfsck explain` prints: markdown that also reads
    // well as plain text.
    let help = format!("{}\n\n{}", rule.summary, rule.doc);
    json!({
        "id": rule.name,
        "name": pascal_case(rule.name),
        "shortDescription": { "text": rule.summary },
        "fullDescription": { "text": full_description(rule) },
        "help": { "text": help, "markdown": help },
        "defaultConfiguration": { "level": level(rule.severity) },
        "properties": { "repairable": rule.repair.is_some() },
    })
}

/// A fingerprint of what the finding is about, not where: rule, file,
/// conversation and the tool call ids (or, for findings about no id, the
/// summary). The caller appends `:<occurrence>` to tell apart findings
/// that share all of these.
fn fingerprint(f: &Finding, uri: &str) -> String {
    let mut h = Sha256::new();
    for part in [f.rule, uri, f.conversation.as_str()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    if f.ids.is_empty() {
        h.update(f.summary.as_bytes());
    } else {
        for id in &f.ids {
            h.update(id.as_bytes());
            h.update([0]);
        }
    }
    let digest = h.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl Sarif {
    fn result(&self, f: &Finding, seen: &mut HashMap<String, usize>) -> Value {
        let (uri, artifact) = artifact(self.paths.name(&f.source.path));
        let rule_index = RULES.iter().position(|r| r.name == f.rule);
        let message = message_text(&format!("{}{}", f.summary, row_suffix(f.loc.as_ref())));
        let related: Vec<Value> = f
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                // Evidence may live in another file (a trace, for a cross-check).
                let artifact = match &l.path {
                    Some(p) => self::artifact(self.paths.name(p)).1,
                    None => artifact.clone(),
                };
                json!({
                    "id": i + 1,
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": region(Some(&l.loc)),
                    },
                    "message": { "text": message_text(&format!("{}{}", l.text, row_suffix(Some(&l.loc)))) },
                })
            })
            .collect();
        let base_fp = fingerprint(f, &uri);
        let n = seen.entry(base_fp.clone()).or_insert(0);
        *n += 1;
        let fp = format!("{base_fp}:{n}");
        let mut r = json!({
            "ruleId": f.rule,
            "level": level(f.severity),
            "message": { "text": message },
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": artifact,
                    "region": region(f.loc.as_ref()),
                }
            }],
            "partialFingerprints": { FINGERPRINT_KEY: fp },
            "properties": {
                "conversation": f.conversation,
                "message": f.message,
                "ids": f.ids,
                "fixable": f.fixable,
                "notes": f.notes,
            },
        });
        // `ruleIndex` right after `ruleId`, and only when the rule is in the
        // catalogue (it always is for findings the rules produce).
        if let (Some(i), Value::Object(map)) = (rule_index, &mut r) {
            map.shift_insert(1, "ruleIndex".to_string(), json!(i));
        }
        if !related.is_empty() {
            r["relatedLocations"] = Value::Array(related);
        }
        r
    }
}

impl Sarif {
    /// Write `lint`'s outcome.
    pub fn render(&self, o: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        let mut seen = HashMap::new();
        let results: Vec<Value> = o.findings().map(|f| self.result(f, &mut seen)).collect();
        let mut notifications: Vec<Value> = o
            .errors
            .iter()
            .map(|e| json!({ "level": "error", "message": { "text": message_text(&e.to_string()) } }))
            .collect();
        if !o.errors.is_empty() {
            let n = o.errors.len();
            let text = format!(
                "{n} {} not read: the results cover only the inputs that were read",
                if n == 1 { "input was" } else { "inputs were" }
            );
            notifications.push(json!({ "level": "error", "message": { "text": text } }));
        }
        notifications.extend(o.skipped.iter().map(|(p, reason)| {
            json!({
                "level": "note",
                "message": { "text": message_text(&format!("skipped {}: {reason}", p.display())) },
            })
        }));
        let mut driver = json!({
            "name": "chatfsck",
            "version": env!("CARGO_PKG_VERSION"),
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "rules": RULES.iter().map(|r| rule_descriptor(r)).collect::<Vec<_>>(),
        });
        // The project's home page, once Cargo.toml names one.
        let home = [env!("CARGO_PKG_HOMEPAGE"), env!("CARGO_PKG_REPOSITORY")]
            .into_iter()
            .find(|u| !u.is_empty());
        if let Some(home) = home {
            driver["informationUri"] = json!(home);
        }
        let mut invocation = json!({ "executionSuccessful": o.errors.is_empty() });
        if !notifications.is_empty() {
            invocation["toolExecutionNotifications"] = Value::Array(notifications);
        }
        let log = json!({
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": { "driver": driver },
                "invocations": [invocation],
                "results": results,
            }],
        });
        super::json::write(&log, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ci_path;
    use super::*;
    use std::path::Path;

    #[test]
    fn message_brackets_are_escaped() {
        assert_eq!(message_text("a [b] c"), r"a \[b\] c");
        assert_eq!(message_text("x\\[y"), r"x\\\[y");
        assert_eq!(message_text("id\x1b[31m"), r"id\u{1b}\[31m");
    }

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(percent_encode("a b/c#d%e.jsonl"), "a%20b/c%23d%25e.jsonl");
        assert_eq!(percent_encode("é"), "%C3%A9");
        let (uri, v) = artifact(ci_path(
            Path::new("./x/y z.jsonl"),
            Some(Path::new("/repo")),
        ));
        assert_eq!(uri, "x/y%20z.jsonl");
        assert_eq!(v["uriBaseId"], SRCROOT);
        let (uri, v) = artifact(ci_path(Path::new("/tmp/a.jsonl"), Some(Path::new("/repo"))));
        assert_eq!(uri, "file:///tmp/a.jsonl");
        assert!(v.get("uriBaseId").is_none());
    }

    #[test]
    fn rule_names_are_pascal_case() {
        assert_eq!(pascal_case("orphan-tool-call"), "OrphanToolCall");
        assert_eq!(pascal_case("msgidx-collision"), "MsgidxCollision");
    }

    #[test]
    fn every_rule_has_a_full_description() {
        for r in RULES {
            let d = full_description(r);
            assert!(d.len() > r.summary.len() / 2, "{}: {d}", r.name);
            assert!(!d.contains("##"), "{}: {d}", r.name);
        }
    }
}
