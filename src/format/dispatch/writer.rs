//! Repair of dispatch's SQLite chunk store.
//!
//! The copy is made with SQLite's backup API from a forensic snapshot of the
//! input, then edited in one transaction: only the `value` of chunks whose
//! `msgIdx` changes (and rows that do not parse, and rows whose lone
//! surrogate escapes become `\ufffd` in place) are touched. Keys, seq,
//! chunk content, other namespaces, other tables and the schema stay as
//! they are. The result must pass `PRAGMA quick_check`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::record::replace_lone_surrogates_in;
use crate::model::{Conversation, Dialect, Loc};
use crate::write::sqlite::{Copying, db_err, mend_surrogates_in_row};
use crate::write::{Edit, Log, Planned, Target, Writer};

/// What this writer carries out: renumbering a conversation's message
/// indices, dropping rows that do not parse, and replacing lone surrogate
/// escapes.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::RenumberIndices | Action::DropRecord { .. } | Action::ReplaceSurrogates { .. }
    )
}

/// The writer of one repair: row edits planned conversation by
/// conversation (never the conversations), applied to a copy at the end.
pub struct KvWriter {
    input: PathBuf,
    /// The copy of the input, begun while its conversations are read;
    /// none without an output.
    copying: Option<Copying>,
    force: bool,
    plan: Plan,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(KvWriter {
        input: t.input.to_path_buf(),
        copying: t
            .output
            .map(|out| Copying::begin(t.input, out))
            .transpose()?,
        force: t.force,
        plan: Plan::default(),
    }))
}

impl Writer for KvWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        plan_conversation(conv, planned, &mut self.plan, &mut log.edits);
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        match self.copying {
            Some(copying) => write(&self.input, copying, &self.plan, &mut log.edits, self.force),
            None => Ok(()),
        }
    }
}

#[derive(Default)]
pub struct Plan {
    /// (rowid, new msgIdx, index of the log entry)
    renumber: Vec<(i64, i64, usize)>,
    /// (rowid, index of the log entry)
    delete: Vec<(i64, usize)>,
    /// Rows whose lone surrogate escapes become `\ufffd`, in place:
    /// (rowid, index of the log entry). Done first: a row renumbered too
    /// is renumbered from the mended text.
    mend: Vec<(i64, usize)>,
}

fn plan_conversation(
    conv: &Conversation,
    planned: &[Planned<'_>],
    plan: &mut Plan,
    log: &mut Vec<Edit>,
) {
    let mut renumbered = false;
    for p in planned {
        for action in &p.fix.actions {
            match action {
                Action::RenumberIndices if !renumbered => {
                    renumbered = true;
                    let Some(chunks) = &conv.chunks else { continue };
                    for c in &chunks.chunks {
                        let new = c.message as i64;
                        if c.msg_idx == new {
                            continue;
                        }
                        let Loc::Row {
                            rowid: Some(rowid), ..
                        } = &c.loc
                        else {
                            continue;
                        };
                        plan.renumber.push((*rowid, new, log.len()));
                        log.push(Edit::new(
                            p.finding.rule,
                            &conv.id,
                            "renumber-indices",
                            format!("seq {}: msgIdx {} → {new}", c.seq, c.msg_idx),
                            c.loc.clone(),
                        ));
                    }
                }
                Action::ReplaceSurrogates { loc } | Action::DropRecord { loc } => {
                    let Loc::Row {
                        rowid: Some(rowid), ..
                    } = loc
                    else {
                        continue;
                    };
                    let (rows, edit, description) = match action {
                        Action::ReplaceSurrogates { .. } => (
                            &mut plan.mend,
                            "replace-surrogates",
                            "replaced the lone surrogate escapes with `\\ufffd`",
                        ),
                        _ => (
                            &mut plan.delete,
                            "drop-record",
                            "deleted the row that does not parse (kept verbatim here)",
                        ),
                    };
                    rows.push((*rowid, log.len()));
                    log.push(Edit::new(
                        p.finding.rule,
                        &conv.id,
                        edit,
                        description.into(),
                        loc.clone(),
                    ));
                }
                _ => {}
            }
        }
    }
}

/// Wait for the copy begun when the writer was made, apply the plan,
/// check the copy, and move it into place. Fills the log's before/after
/// values.
fn write(input: &Path, copying: Copying, plan: &Plan, log: &mut [Edit], force: bool) -> Result<()> {
    let output = copying.output().to_path_buf();
    let output = output.as_path();
    copying.edit(input, force, |tx| {
        for &(rowid, entry) in &plan.mend {
            let (before, after) = mend_surrogates_in_row(
                tx,
                output,
                (
                    "SELECT value FROM kv WHERE rowid = ?1",
                    "UPDATE kv SET value = ?1 WHERE rowid = ?2",
                ),
                rowid,
                replace_lone_surrogates_in,
            )?;
            log[entry].before = Some(before);
            log[entry].after = Some(after);
        }
        for &(rowid, new, entry) in &plan.renumber {
            // Statements prepared once for every row (a store with many
            // collisions renumbers tens of thousands).
            let before: String = tx
                .prepare_cached("SELECT value FROM kv WHERE rowid = ?1")
                .and_then(|mut st| st.query_row([rowid], |r| r.get(0)))
                .map_err(|e| db_err(output, e))?;
            // Read as the reader read it: a lone surrogate escape as
            // U+FFFD, which the rewritten value then holds.
            let (mut v, _) =
                crate::format::records::record::tree_as_lenient_readers_read(before.as_bytes())
                    .map_err(|e| Error::Output {
                        path: output.to_path_buf(),
                        cause: format!("row {rowid} no longer parses: {e}"),
                    })?;
            v["msgIdx"] = serde_json::Value::from(new);
            let after = serde_json::to_string(&v).expect("a Value serialises");
            tx.prepare_cached("UPDATE kv SET value = ?1 WHERE rowid = ?2")
                .and_then(|mut st| st.execute(rusqlite::params![after, rowid]))
                .map_err(|e| db_err(output, e))?;
            log[entry].before = Some(before);
            log[entry].after = Some(after);
        }
        for &(rowid, entry) in &plan.delete {
            let before: Option<String> = tx
                .query_row(
                    "SELECT CAST(value AS TEXT) FROM kv WHERE rowid = ?1",
                    [rowid],
                    |r| r.get(0),
                )
                .ok();
            log[entry].row = Some(crate::write::sqlite::row_json(tx, output, "kv", rowid)?);
            tx.execute("DELETE FROM kv WHERE rowid = ?1", [rowid])
                .map_err(|e| db_err(output, e))?;
            log[entry].before = before;
        }
        Ok(())
    })
}
