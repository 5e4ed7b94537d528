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
use crate::rules::Selection;
use crate::source::{self, Limits};

pub(crate) mod atomic;
mod jsonl;
mod kv;
mod rows;

pub use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};

/// The text of a synthesized tool result. Clearly not the tool's output.
pub const PLACEHOLDER: &str = "[chatfsck repair] No result was recorded for this tool call: the session ended or was interrupted before it completed. This placeholder was inserted by chatfsck; the tool may or may not have run.";

/// Whether the repair engine can apply a fix to this kind of input.
pub fn supports(info: &SourceInfo, fix: &Fix) -> bool {
    fix.actions.iter().all(|a| supports_action(info, a))
}

fn supports_action(info: &SourceInfo, a: &Action) -> bool {
    match info.format {
        "jsonl" | "json" => match a {
            Action::DropRecord { .. } => true,
            Action::RenumberIndices => false,
            // Message-structure edits need provider-shaped records; Claude
            // Code and Codex logs are rebuilt into requests by their apps.
            _ => matches!(info.dialect, "openai" | "kimi" | "anthropic"),
        },
        "sqlite-kv" => matches!(a, Action::RenumberIndices | Action::DropRecord { .. }),
        // Message tables are repaired with inserts only.
        "sqlite-table" | "postgres-table" => matches!(a, Action::RebuildResults { .. }),
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
    /// The message table to read in SQLite and PostgreSQL inputs.
    pub mapping: Option<source::Mapping>,
    /// PostgreSQL inputs: write the repair as a SQL script here.
    pub emit_sql: Option<PathBuf>,
    /// PostgreSQL inputs: apply the repair to this other database.
    pub target: Option<String>,
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
    /// PostgreSQL inputs: the SQL script written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// PostgreSQL inputs: the database the repair was applied to, and how
    /// many rows it inserted there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<u64>,
    pub edits: Vec<Edit>,
    pub left: Vec<Left>,
}

/// A database error of the repaired copy.
pub(crate) fn db_err(output: &Path, e: rusqlite::Error) -> Error {
    Error::Output {
        path: output.to_path_buf(),
        cause: crate::source::sqlite::cause(&e),
    }
}

/// Copy a SQLite input (from its forensic snapshot) with the backup API
/// into a temporary file beside `output`, apply `edit` to the copy in one
/// transaction, check its integrity, and move it into place. Schema, other
/// tables and every row `edit` does not touch stay as they were.
pub(crate) fn edit_sqlite_copy(
    input: &Path,
    output: &Path,
    force: bool,
    snap: crate::source::sqlite::Snapshot,
    edit: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()>,
) -> Result<()> {
    let tmp = atomic::Atomic::new(output)?;
    snap.conn
        .backup(rusqlite::MAIN_DB, tmp.path(), None)
        .map_err(|e| db_err(output, e))?;
    drop(snap);
    let mut conn = rusqlite::Connection::open_with_flags(
        tmp.path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
    )
    .map_err(|e| db_err(output, e))?;
    let tx = conn.transaction().map_err(|e| db_err(output, e))?;
    edit(&tx)?;
    tx.commit().map_err(|e| db_err(output, e))?;
    finish_sqlite(conn, output)?;
    tmp.commit(output, force, Some(input))
}

/// Check a repaired SQLite copy and close it, so no `-wal` or `-shm` is
/// left beside the temporary file when it is renamed into place.
fn finish_sqlite(conn: rusqlite::Connection, output: &Path) -> Result<()> {
    let err = |e: rusqlite::Error| Error::Output {
        path: output.to_path_buf(),
        cause: crate::source::sqlite::cause(&e),
    };
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(err)?;
    if check != "ok" {
        return Err(Error::Output {
            path: output.to_path_buf(),
            cause: format!("the repaired copy fails PRAGMA integrity_check: {check}"),
        });
    }
    conn.close().map_err(|(_, e)| err(e))
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
    let pg = source::postgres::is_target(input);
    if pg {
        if output.is_some() {
            return Err(Error::Usage(
                "a PostgreSQL database is never modified and has no file copy: write the repair as a script with --emit-sql FILE, or apply it to another database with --target URL".into(),
            ));
        }
        if opts.emit_sql.is_none() && opts.target.is_none() && !opts.dry_run {
            return Err(Error::Usage(
                "repair of a PostgreSQL database needs --emit-sql FILE or --target URL (or --dry-run)".into(),
            ));
        }
        if let Some(sql) = &opts.emit_sql {
            check_output(input, sql, opts.force)?;
        }
    } else if opts.emit_sql.is_some() || opts.target.is_some() {
        return Err(Error::Usage(format!(
            "--emit-sql and --target repair PostgreSQL inputs; {} is a file: write its repaired copy with -o",
            input.display()
        )));
    }
    if !pg {
        if let Some(out) = output {
            check_output(input, out, opts.force)?;
        } else if !opts.dry_run {
            return Err(Error::Usage("repair needs -o OUTPUT (or --dry-run)".into()));
        }
    }
    // PostgreSQL: resolve the source and target first, so a bad URL fails
    // before the whole database is read (and no password reaches the log).
    let pg_source = if pg {
        Some(source::postgres::target(&input.to_string_lossy())?)
    } else {
        None
    };
    let pg_target = match (&opts.target, pg) {
        (Some(t), true) => Some(source::postgres::target(t)?),
        _ => None,
    };
    // Refuse a target that is the source before anything is read or written.
    let mut pg_target_client = match (&pg_source, &pg_target) {
        (Some(s), Some(t)) if !opts.dry_run => Some(rows::open_target(s, t)?),
        _ => None,
    };
    let mut src = source::open_with(input, opts.limits, opts.mapping.as_ref())?;
    let mut convs: Vec<(Conversation, Vec<Finding>)> = Vec::new();
    let mut info: Option<Arc<SourceInfo>> = None;
    let mut report = Report {
        version: crate::report::json::VERSION,
        input: match &pg_source {
            Some(s) => s.display.clone(),
            None => input.display().to_string(),
        },
        output: output.map(|p| p.display().to_string()),
        format: "",
        dialect: "",
        dry_run: opts.dry_run,
        policy: opts.policy,
        sql: None,
        target: None,
        inserted: None,
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
                let findings = crate::lint::check(&conv, &opts.selection);
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
        "sqlite-table" | "postgres-table" => {
            // Message tables: plan job by job, keeping only the rows to insert.
            let mut plan_rows = rows::Plan::default();
            while let Some(conv) = src.next_conversation() {
                let conv = conv?;
                let findings = crate::lint::check(&conv, &opts.selection);
                let planned = plan(&findings, &opts.policy, &mut report.left);
                rows::plan_conversation(
                    &conv,
                    &planned,
                    &opts.policy,
                    &mut plan_rows,
                    &mut report.edits,
                    &mut report.left,
                );
            }
            let info = src.info();
            report.format = info.format;
            report.dialect = info.dialect;
            if let (Some(source), false) = (&pg_source, opts.dry_run) {
                let layout = rows::postgres_layout(source, opts.mapping.as_ref())?;
                if let Some(sql) = &opts.emit_sql {
                    let text = rows::script(&source.display, &layout, &plan_rows);
                    rows::write_script(sql, &text, opts.force)?;
                    report.sql = Some(sql.display().to_string());
                }
                if let (Some(t), Some(client)) = (&pg_target, pg_target_client.as_mut()) {
                    let n = rows::apply(client, t, &layout, &plan_rows, &mut report.edits)?;
                    report.target = Some(t.display.clone());
                    report.inserted = Some(n);
                }
                report.output = match (&report.sql, &report.target) {
                    (Some(s), Some(t)) => Some(format!("{s} and {t}")),
                    (Some(s), None) => Some(s.clone()),
                    (None, Some(t)) => Some(t.clone()),
                    (None, None) => None,
                };
            } else if let (Some(out), false) = (output, opts.dry_run) {
                rows::write_sqlite(input, out, &plan_rows, opts.mapping.as_ref(), opts.force)?;
            }
        }
        _ => {
            while let Some(conv) = src.next_conversation() {
                let conv = conv?;
                let findings = crate::lint::check(&conv, &opts.selection);
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
                if report.format == "json" {
                    jsonl::write_document(input, out, &edits, opts.force)?;
                } else {
                    jsonl::write(input, out, &edits, opts.limits, opts.force)?;
                }
            }
            report.edits = edits.log;
        }
    }
    Ok(report)
}
