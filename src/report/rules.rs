//! `rules` and `explain`: the catalogue, from the documentation that lives
//! next to each rule's code.

use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use crate::cli::ListFormat;
use crate::finding::Severity;
use crate::rules::{RULES, Rule};

#[derive(Serialize)]
struct RuleOut {
    name: &'static str,
    severity: Severity,
    repairable: bool,
    summary: &'static str,
    repair: Option<&'static str>,
}

pub fn list(format: ListFormat, out: &mut dyn Write) -> io::Result<()> {
    match format {
        ListFormat::Json => {
            let rules: Vec<RuleOut> = RULES
                .iter()
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
        ListFormat::Human => {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(110)
                .set_header(vec!["rule", "severity", "repair", "detects"]);
            for r in RULES {
                t.add_row(vec![
                    r.name,
                    r.severity.as_str(),
                    if r.repair.is_some() { "yes" } else { "report" },
                    r.summary,
                ]);
            }
            writeln!(out, "{t}")
        }
        ListFormat::Markdown => {
            // The catalogue's own text: its backticks are meant as code;
            // only pipes would break the table.
            let rows: Vec<Vec<String>> = RULES
                .iter()
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
    }
}

pub fn explain(rule: &Rule, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# {} ({})", rule.name, rule.severity.as_str())?;
    writeln!(out)?;
    writeln!(out, "{}", rule.summary)?;
    writeln!(out)?;
    write!(out, "{}", rule.doc)
}
