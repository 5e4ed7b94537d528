//! `rules` and `explain`: the catalogue, from the documentation that lives
//! next to each rule's code.

use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use super::{Document, Format, Render};
use crate::finding::Severity;
use crate::finding::profile::{Does, Pattern, Profile};
use crate::rules::Rule;

#[derive(Serialize)]
struct RuleOut {
    name: &'static str,
    severity: Severity,
    repairable: bool,
    summary: &'static str,
    repair: Option<&'static str>,
}

/// `rules`'s document: the catalogue.
pub struct Catalogue(pub &'static [&'static Rule]);

impl Document for Catalogue {
    const COMMAND: &'static str = "rules";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(human),
            Format::Json => Some(json),
            Format::Markdown => Some(markdown),
            Format::Sarif | Format::Github | Format::Html => None,
        }
    }
}

fn json(c: &Catalogue, out: &mut dyn Write) -> io::Result<()> {
    let rules: Vec<RuleOut> =
        c.0.iter()
            .map(|r| RuleOut {
                name: r.name,
                severity: r.severity,
                repairable: r.repair.is_some(),
                summary: r.summary,
                repair: r.repair,
            })
            .collect();
    super::json::write(&rules, out)
}

fn human(c: &Catalogue, out: &mut dyn Write) -> io::Result<()> {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(110)
        .set_header(vec!["rule", "severity", "repair", "detects"]);
    for r in c.0 {
        t.add_row(vec![
            r.name,
            r.severity.as_str(),
            if r.repair.is_some() { "yes" } else { "report" },
            r.summary,
        ]);
    }
    writeln!(out, "{t}")
}

fn markdown(c: &Catalogue, out: &mut dyn Write) -> io::Result<()> {
    // The catalogue's own text: its backticks are meant as code; only
    // pipes would break the table.
    let rows: Vec<Vec<String>> =
        c.0.iter()
            .map(|r| {
                vec![
                    format!("`{}`", r.name),
                    r.severity.as_str().to_string(),
                    r.repair.unwrap_or("report").replace('|', "\\|"),
                    r.summary.replace('|', "\\|"),
                ]
            })
            .collect();
    super::markdown::table(out, &["rule", "severity", "repair", "detects"], &rows)
}

/// `explain`'s document: one rule, as its documentation, and what each
/// client does with the patterns it detects (from the client profiles).
pub struct Explanation {
    pub rule: &'static Rule,
    pub profiles: &'static [&'static Profile],
}

impl Document for Explanation {
    const COMMAND: &'static str = "explain";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(explain_with_clients),
            Format::Json | Format::Sarif | Format::Github | Format::Markdown | Format::Html => None,
        }
    }
}

fn explain_with_clients(e: &Explanation, out: &mut dyn Write) -> io::Result<()> {
    explain(e.rule, out)?;
    let patterns: Vec<Pattern> = Pattern::ALL
        .iter()
        .copied()
        .filter(|p| p.rule() == e.rule.name)
        .collect();
    let lines: Vec<String> = patterns
        .iter()
        .flat_map(|&pattern| {
            e.profiles.iter().filter_map(move |profile| {
                let r = profile.own(pattern)?;
                let versions = if r.versions.is_empty() {
                    String::new()
                } else {
                    format!(" {}", r.versions)
                };
                let severity = r.severity_or(e.rule.severity);
                let from = r.healed_from.map_or(String::new(), |h| {
                    let earlier = h
                        .earlier
                        .map_or_else(|| Does::SendsAsIs.describe(), str::to_string);
                    format!("; from {} on (earlier versions: {earlier})", h.from)
                });
                Some(format!(
                    "- {}{versions}, when {}: {} ({}){from}",
                    profile.app,
                    pattern.case(),
                    r.does.describe(),
                    severity.as_str()
                ))
            })
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## What each client does on resume")?;
    writeln!(
        out,
        "Generated from the client profiles (`src/format/<store>/profile.rs`)."
    )?;
    for l in lines {
        writeln!(out, "{l}")?;
    }
    // A pattern found on a parent chain of records, or in a paginated
    // history: no other client has one.
    if patterns
        .iter()
        .all(|p| p.on_a_chain() || p.on_a_paged_history())
    {
        return Ok(());
    }
    // Damage to the store's framing: each loader decides, before any
    // request is built.
    let others = if patterns.iter().all(|p| p.in_the_loader()) {
        Does::Unknown
    } else {
        Does::SendsAsIs
    };
    writeln!(
        out,
        "- any other client: {} ({})",
        others.describe(),
        e.rule.severity.as_str()
    )
}

fn explain(rule: &Rule, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# {} ({})", rule.name, rule.severity.as_str())?;
    writeln!(out)?;
    writeln!(out, "{}", rule.summary)?;
    writeln!(out)?;
    write!(out, "{}", rule.doc)
}
