//! Writing a repaired SQLite copy: the input's forensic snapshot copied
//! (its main file by the kernel where that file alone is the database,
//! with the backup API otherwise), edited in one transaction, checked, and
//! moved into place.

use std::path::{Path, PathBuf};

use super::atomic;
use crate::error::{Error, Result};

/// A database error of the repaired copy.
pub fn db_err(output: &Path, e: rusqlite::Error) -> Error {
    Error::Output {
        path: output.to_path_buf(),
        cause: crate::source::sqlite::cause(&e),
    }
}

/// Replace the lone surrogate escapes of one row's text with `\ufffd`,
/// in place, every other byte kept: `select` reads the text by rowid
/// (`?1`), `update` writes it (`?1` the text, `?2` the rowid); `mend`
/// is the format's replacement (`None`: nothing to replace). Returns the
/// text before and after, for the log.
pub fn mend_surrogates_in_row(
    tx: &rusqlite::Transaction<'_>,
    output: &Path,
    (select, update): (&str, &str),
    rowid: i64,
    mend: impl FnOnce(&str) -> Option<String>,
) -> Result<(String, String)> {
    let before: String = tx
        .query_row(select, [rowid], |r| r.get(0))
        .map_err(|e| db_err(output, e))?;
    let after = mend(&before).ok_or_else(|| Error::Output {
        path: output.to_path_buf(),
        cause: format!("row {rowid} no longer holds a lone surrogate escape"),
    })?;
    tx.execute(update, rusqlite::params![after, rowid])
        .map_err(|e| db_err(output, e))?;
    Ok((before, after))
}

/// A copy of a SQLite input begun on a thread of its own, made by a
/// writer when it is created: the kernel copies the main file while the
/// conversations are read and checked, instead of after (0.22 s of a
/// 720 MB store's repair). [`Copying::edit`] waits for it.
pub struct Copying {
    output: PathBuf,
    /// Taken by [`Copying::edit`]; a copy never edited (the repair failed
    /// first) is waited for when dropped, so that its temporary file is
    /// removed before the process ends.
    copied: Option<std::thread::JoinHandle<Result<Copied>>>,
}

impl Drop for Copying {
    fn drop(&mut self) {
        if let Some(copied) = self.copied.take() {
            let _ = copied.join();
        }
    }
}

/// The copy, once made: its snapshot (which the copy's checks answer to)
/// and the temporary file beside the output.
struct Copied {
    snap: crate::source::sqlite::Snapshot,
    tmp: atomic::Atomic,
}

impl Copying {
    /// Open `input`'s forensic snapshot and a temporary file beside
    /// `output` here (their errors are the caller's at once), and copy
    /// the one into the other on a thread.
    pub fn begin(input: &Path, output: &Path) -> Result<Copying> {
        let snap = crate::source::sqlite::open(input)?;
        check_writable(input, &snap)?;
        let tmp = atomic::Atomic::new(output)?;
        let out = output.to_path_buf();
        let copied = std::thread::Builder::new()
            .name("copy".into())
            .spawn(move || {
                copy_snapshot(&snap, &tmp, &out)?;
                Ok(Copied { snap, tmp })
            })
            .map_err(|e| Error::Output {
                path: output.to_path_buf(),
                cause: format!("cannot start copying: {e}"),
            })?;
        Ok(Copying {
            output: output.to_path_buf(),
            copied: Some(copied),
        })
    }

    /// The output the copy is for.
    pub fn output(&self) -> &Path {
        &self.output
    }

    /// [`edit_sqlite_copy`] of the copy begun.
    pub fn edit(
        mut self,
        input: &Path,
        force: bool,
        edit: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()>,
    ) -> Result<()> {
        let output = &self.output;
        let Some(Ok(copied)) = self.copied.take().map(std::thread::JoinHandle::join) else {
            return Err(Error::Output {
                path: output.clone(),
                cause: "copying the input failed".into(),
            });
        };
        let Copied { snap, tmp } = copied?;
        edit_copied(input, output, force, snap, tmp, edit)
    }
}

/// Copy a SQLite input (from its forensic snapshot: see
/// [`crate::source::sqlite::Snapshot::copy_main_file`]) into a temporary
/// file beside `output`, apply `edit` to the copy in one
/// transaction, check its integrity, and move it into place. Schema, other
/// tables and every row `edit` does not touch stay as they were.
pub fn edit_sqlite_copy(
    input: &Path,
    output: &Path,
    force: bool,
    snap: crate::source::sqlite::Snapshot,
    edit: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()>,
) -> Result<()> {
    check_writable(input, &snap)?;
    let tmp = atomic::Atomic::new(output)?;
    copy_snapshot(&snap, &tmp, output)?;
    edit_copied(input, output, force, snap, tmp, edit)
}

/// Refuse, before any output file is made, an input SQLite opens
/// read-only (as its snapshot read the header): one
/// whose header's write version (byte 18: 1 for a rollback journal, 2 for
/// WAL) is above 2, a file format newer than SQLite knows. SQLite reads
/// such a database (lint does) but writes no page of it, so a copy of it
/// cannot be edited; it would fail as "attempt to write a readonly
/// database", which reads as the copy's fault. SQLite never changes the
/// byte itself, and neither does chatfsck: the cause is the input's.
fn check_writable(input: &Path, snap: &crate::source::sqlite::Snapshot) -> Result<()> {
    match snap.write_version() {
        0..=2 => Ok(()),
        version => Err(Error::input(
            input,
            format!(
                "the SQLite header's write version (byte 18) is {version}, which SQLite does not know (1 is a rollback journal, 2 is WAL): SQLite opens the database read-only, so no repaired copy of it can be written"
            ),
        )),
    }
}

/// One row of `table`, whole, for the repair log: every column by name, in
/// the table's order, its value as stored: an integer or a real as a JSON
/// number, text as a string, NULL as null; a BLOB (and text that is not
/// UTF-8) as `{"base64": …}` of its bytes, a real that JSON cannot hold
/// (an infinity) as `{"real": "inf"}` or `"-inf"`. What a repair deletes
/// is logged so, to be put back as it was.
pub fn row_json(
    tx: &rusqlite::Transaction<'_>,
    output: &Path,
    table: &str,
    rowid: i64,
) -> Result<serde_json::Value> {
    use base64::Engine as _;
    use rusqlite::types::ValueRef;
    use serde_json::{Value, json};
    let mut st = tx
        .prepare_cached(&format!("SELECT * FROM \"{table}\" WHERE rowid = ?1"))
        .map_err(|e| db_err(output, e))?;
    let names: Vec<String> = st.column_names().into_iter().map(String::from).collect();
    st.query_row([rowid], |r| {
        let mut row = serde_json::Map::new();
        for (i, name) in names.iter().enumerate() {
            let bytes =
                |b: &[u8]| json!({"base64": base64::engine::general_purpose::STANDARD.encode(b)});
            let v = match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => n.into(),
                ValueRef::Real(x) => serde_json::Number::from_f64(x).map_or_else(
                    || json!({"real": if x > 0.0 { "inf" } else { "-inf" }}),
                    Value::Number,
                ),
                ValueRef::Text(t) => std::str::from_utf8(t).map_or_else(|_| bytes(t), Value::from),
                ValueRef::Blob(b) => bytes(b),
            };
            row.insert(name.clone(), v);
        }
        Ok(Value::Object(row))
    })
    .map_err(|e| db_err(output, e))
}

/// Copy the snapshot's database into the temporary file: its main file by
/// the kernel where that file alone is the database, with the backup API
/// otherwise.
fn copy_snapshot(
    snap: &crate::source::sqlite::Snapshot,
    tmp: &atomic::Atomic,
    output: &Path,
) -> Result<()> {
    if !snap.copy_main_file(tmp.file(), tmp.path())? {
        snap.backup_to(tmp.path()).map_err(|e| db_err(output, e))?;
    }
    Ok(())
}

/// [`edit_sqlite_copy`] once the copy is made.
fn edit_copied(
    input: &Path,
    output: &Path,
    force: bool,
    snap: crate::source::sqlite::Snapshot,
    tmp: atomic::Atomic,
    edit: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()>,
) -> Result<()> {
    // Written while it was copied: nothing is written.
    snap.check().verify_unchanged()?;
    // The copy goes to disk while it is edited and checked: the commit's
    // flush then waits only for the pages the edit wrote (of a 720 MB
    // store, 0.3 s less).
    let (edited, flushed) = std::thread::scope(|s| {
        let flush = s.spawn(|| tmp.flush_early(output));
        let edited = (|| {
            let mut conn = rusqlite::Connection::open_with_flags(
                tmp.path(),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
            )
            .map_err(|e| db_err(output, e))?;
            private_copy_pragmas(&conn).map_err(|e| db_err(output, e))?;
            let tx = conn.transaction().map_err(|e| db_err(output, e))?;
            edit(&tx)?;
            tx.commit().map_err(|e| db_err(output, e))?;
            finish_sqlite(conn, output)
        })();
        let flushed = flush.join().unwrap_or_else(|_| {
            Err(Error::Output {
                path: output.to_path_buf(),
                cause: "flushing the copy to disk failed".into(),
            })
        });
        (edited, flushed)
    });
    // The copy passed quick_check, a check of every page of what was
    // copied and edited. If it failed, the input's own structure check
    // tells a damaged input (named as such) from a failed edit.
    edited.map_err(|e| snap.check().explain(e))?;
    flushed?;
    drop(snap);
    tmp.commit(output, force, Some(input))
}

/// The temporary copy is private and reaches `output` only by a rename
/// after it was checked and flushed to disk ([`atomic::Atomic::commit`]);
/// an edit that fails, or a crash, leaves no output at all. SQLite's own
/// crash safety on it (a rollback journal, synced to disk before each
/// spill of the page cache and again at commit: sixteen syncs for the
/// benchmark's million-chunk store) therefore guards nothing: the copy is
/// edited without a journal and SQLite does not sync. No `-journal` is
/// left beside the output by a run killed while it edits. A WAL-mode copy
/// stays in WAL mode (the mode is part of the file; a rollback journal's
/// is not): its `-wal` is checkpointed into the copy, unsynced, when the
/// connection closes.
fn private_copy_pragmas(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "OFF")?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        let _: String = conn.query_row("PRAGMA journal_mode = OFF", [], |r| r.get(0))?;
    }
    Ok(())
}

/// Check a repaired SQLite copy and close it, so no `-wal` or `-shm` is
/// left beside the temporary file when it is renamed into place.
///
/// The check is `PRAGMA quick_check`, the pragma of lint's structure
/// check of an input: every page of every b-tree, the free list, each
/// page used once, NOT NULL and CHECK constraints. `integrity_check`
/// also looks up every row in each of its table's indexes, which took
/// 2.6 times as long (1.06 s against 0.41 s on the benchmark's 720 MB
/// store, a third of the whole repair); the edits are SQLite statements,
/// which keep the indexes, and an index that disagrees with its table was
/// so in the input.
fn finish_sqlite(conn: rusqlite::Connection, output: &Path) -> Result<()> {
    let err = |e: rusqlite::Error| Error::Output {
        path: output.to_path_buf(),
        cause: crate::source::sqlite::cause(&e),
    };
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(err)?;
    if check != "ok" {
        return Err(Error::Output {
            path: output.to_path_buf(),
            cause: format!("the repaired copy fails PRAGMA quick_check: {check}"),
        });
    }
    conn.close().map_err(|(_, e)| err(e))
}
