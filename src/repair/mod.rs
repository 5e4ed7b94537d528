//! `repair`: turn the fixes rules attached to their findings into edits of a
//! copy of the input, in the input's own storage format.
//!
//! Contract (DESIGN.md): the input is never written; the output is a new
//! path, written atomically; every removed or replaced payload goes to the
//! repair log; everything the repair did not need to touch is preserved
//! exactly; a second repair changes nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::fix::{Action, Fix};
use crate::model::{Conversation, Loc, SourceInfo};
use crate::rules::{self, Selection};
use crate::source::{self, Limits};

mod atomic;
mod jsonl;
mod kv;

pub use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};

/// The text of a synthesized tool result. Clearly not the tool's output.
pub const PLACEHOLDER: &str = "[chatfsck repair] No result was recorded for this tool call: the session ended or was interrupted before it completed. This placeholder was inserted by chatfsck; the tool may or may not have run.";

/// Whether the repair engine can apply a fix to this kind of input.
pub fn supports(info: &SourceInfo, fix: &Fix) -> bool {
    fix.actions.iter().all(|a| supports_action(info, a))
}

fn supports_action(info: &SourceInfo, a: &Action) -> bool {
    match info.format {
        // JSON documents are not rewritten yet: their fixes are reported.
        "jsonl" => match a {
            Action::DropRecord { .. } => true,
            Action::RenumberIndices => false,
            // Message-structure edits need provider-shaped records; Claude
            // Code and Codex logs are rebuilt into requests by their apps.
            _ => matches!(info.dialect, "openai" | "kimi" | "anthropic"),
        },
        "sqlite-kv" => matches!(a, Action::RenumberIndices | Action::DropRecord { .. }),
        _ => false,
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub selection: Selection,
    pub policy: Policy,
    pub limits: Limits,
    pub dry_run: bool,
    pub force: bool,
}

/// One edit, as the repair log records it.
#[derive(Debug, Clone, Serialize)]
pub struct Edit {
    pub rule: &'static str,
    pub conversation: String,
    pub action: &'static str,
    /// What was done, in one line.
    pub description: String,
    pub location: Loc,
    /// The record before the edit, verbatim (`null` for an insertion).
    pub before: Option<String>,
    /// The record after the edit (`null` for a removal).
    pub after: Option<String>,
    /// True when the edit invents content (a placeholder result).
    pub synthesized: bool,
    /// Tool call ids involved.
    pub ids: Vec<String>,
}

/// A finding the repair leaves as it is, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Left {
    pub rule: &'static str,
    pub conversation: String,
    pub location: Option<Loc>,
    pub summary: String,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: u32,
    pub input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub format: &'static str,
    pub dialect: &'static str,
    pub dry_run: bool,
    pub policy: Policy,
    pub edits: Vec<Edit>,
    pub left: Vec<Left>,
}

/// A finding with a fix the engine will apply.
pub struct Planned<'a> {
    pub finding: &'a Finding,
    pub fix: &'a Fix,
}

/// Decide, for the findings of one conversation, which fixes apply.
fn plan<'a>(findings: &'a [Finding], policy: &Policy, left: &mut Vec<Left>) -> Vec<Planned<'a>> {
    let mut out = Vec::new();
    for f in findings {
        let leave = |reason: &str, left: &mut Vec<Left>| {
            left.push(Left {
                rule: f.rule,
                conversation: f.conversation.clone(),
                location: f.loc.clone(),
                summary: f.summary.clone(),
                reason: reason.to_string(),
            })
        };
        let Some(fix) = &f.fix else {
            leave("report-only rule", left);
            continue;
        };
        if !f.fixable {
            leave(
                &format!(
                    "not repairable in {} ({}) inputs",
                    f.source.format, f.source.dialect
                ),
                left,
            );
            continue;
        }
        let answers = fix
            .actions
            .iter()
            .any(|a| matches!(a, Action::AnswerCall { .. }));
        if answers {
            match policy.orphan_calls {
                OrphanPolicy::Report => {
                    leave("orphan-calls policy is `report`", left);
                    continue;
                }
                OrphanPolicy::Placeholder if !policy.synthesize => {
                    leave(
                        "synthesizing is off: a placeholder would invent content",
                        left,
                    );
                    continue;
                }
                _ => {}
            }
        }
        out.push(Planned { finding: f, fix });
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Refuse outputs that would overwrite the input (or its sidecars) or an
/// existing file without `--force`.
fn check_output(input: &Path, output: &Path, force: bool) -> Result<()> {
    let sidecars = ["", "-wal", "-shm", "-journal"].map(|s| {
        let mut p = input.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    });
    if sidecars.iter().any(|p| same_file(p, output) || p == output) {
        return Err(Error::Usage(format!(
            "refusing to write the repaired copy over the input {} (it is evidence); name a new path with -o",
            output.display()
        )));
    }
    if output.exists() && !force {
        return Err(Error::Usage(format!(
            "{} already exists; pass --force to overwrite it",
            output.display()
        )));
    }
    if output.is_dir() {
        return Err(Error::Usage(format!("{} is a directory", output.display())));
    }
    Ok(())
}

/// Repair `input` into `output` (or plan only, with `dry_run`).
pub fn repair(input: &Path, output: Option<&Path>, opts: &Options) -> Result<Report> {
    if let Some(out) = output {
        check_output(input, out, opts.force)?;
    } else if !opts.dry_run {
        return Err(Error::Usage("repair needs -o OUTPUT (or --dry-run)".into()));
    }
    let mut src = source::open(input, opts.limits)?;
    let mut convs: Vec<(Conversation, Vec<Finding>)> = Vec::new();
    let mut info: Option<Arc<SourceInfo>> = None;
    let mut report = Report {
        version: crate::report::json::VERSION,
        input: input.display().to_string(),
        output: output.map(|p| p.display().to_string()),
        format: "",
        dialect: "",
        dry_run: opts.dry_run,
        policy: opts.policy,
        edits: Vec::new(),
        left: Vec::new(),
    };
    match src.info().format {
        "sqlite-kv" => {
            // Chunk stores: plan conversation by conversation, keeping only
            // the row edits, never the conversations.
            let mut plan_kv = kv::Plan::default();
            while let Some(conv) = src.next_conversation() {
                let conv = conv?;
                let findings = rules::check(&conv, &opts.selection);
                let planned = plan(&findings, &opts.policy, &mut report.left);
                kv::plan_conversation(&conv, &planned, &mut plan_kv, &mut report.edits);
                info.get_or_insert_with(|| conv.source.clone());
            }
            let info = info.unwrap_or_else(|| src.info());
            report.format = info.format;
            report.dialect = info.dialect;
            if let (Some(out), false) = (output, opts.dry_run) {
                kv::write(input, out, &plan_kv, &mut report.edits, opts.force)?;
            }
        }
        _ => {
            while let Some(conv) = src.next_conversation() {
                let conv = conv?;
                let findings = rules::check(&conv, &opts.selection);
                convs.push((conv, findings));
            }
            let (conv, findings) = convs
                .pop()
                .ok_or_else(|| Error::not_history(input, "holds no conversation"))?;
            report.format = conv.source.format;
            report.dialect = conv.source.dialect;
            let planned = plan(&findings, &opts.policy, &mut report.left);
            let edits = jsonl::plan(&conv, &planned, &opts.policy, input)?;
            if let (Some(out), false) = (output, opts.dry_run) {
                jsonl::write(input, out, &edits, opts.limits, opts.force)?;
            }
            report.edits = edits.log;
        }
    }
    Ok(report)
}
