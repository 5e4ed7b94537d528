//! Writing a repaired SQLite copy: the input's forensic snapshot copied
//! (its main file by the kernel where that file alone is the database,
//! with the backup API otherwise), edited in one transaction, checked, and
//! moved into place.

use std::path::Path;

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
    let tmp = atomic::Atomic::new(output)?;
    if !snap.copy_main_file(tmp.file(), tmp.path())? {
        snap.backup_to(tmp.path()).map_err(|e| db_err(output, e))?;
    }
    // Written while it was copied: nothing is written.
    snap.check().verify_unchanged()?;
    let edited = (|| {
        let mut conn = rusqlite::Connection::open_with_flags(
            tmp.path(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
        )
        .map_err(|e| db_err(output, e))?;
        let tx = conn.transaction().map_err(|e| db_err(output, e))?;
        edit(&tx)?;
        tx.commit().map_err(|e| db_err(output, e))?;
        finish_sqlite(conn, output)
    })();
    // The copy passed integrity_check, a full check of what was copied.
    // If it failed, the input's own structure check tells a damaged input
    // (named as such) from a failed edit.
    edited.map_err(|e| snap.check().explain(e))?;
    drop(snap);
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
