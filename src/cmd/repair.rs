//! `chatfsck repair`: write a repaired copy of a history, a mirrored tree
//! of repaired copies of a directory, or (`--in-place`) repair one file
//! itself, keeping a backup.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{limits, out_err};
use crate::cli::RepairArgs;
use crate::config::Config;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::repair::{self, Report};
use crate::report;
use crate::write::atomic::Atomic;

mod tree;

pub fn run(a: RepairArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Report>(a.format)?;
    let config = Config::load(a.config.config.as_deref())?;
    let policy = config.repair_policy_with(a.orphan_calls, a.no_synthesize.then_some(false))?;
    let selection = config.selection(a.select.clone(), a.ignore.clone())?;
    if let Some(log) = &a.log {
        let outputs: Vec<&std::path::Path> = [a.output.as_deref(), a.emit_sql.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        repair::check_log(&a.input, &outputs, log, a.force)?;
    }
    let opts = repair::Options {
        selection,
        policy,
        limits: limits(&a.input_args),
        dry_run: a.dry_run,
        force: a.force,
        mapping: a.input_args.mapping(),
        emit_sql: a.emit_sql.clone(),
        target: a.target.clone(),
    };
    if a.in_place {
        let rep = in_place(&a.input, &opts)?;
        if let Some(log) = &a.log {
            report::repair::write_log(&rep, Atomic::new(log)?, log, a.force)?;
        }
        render(&rep, out).map_err(out_err)?;
        return Ok(EXIT_CLEAN);
    }
    if a.input.is_dir() {
        return tree::run(&a, &opts, render, out);
    }
    let output = if a.dry_run { None } else { a.output.as_deref() };
    // The log's temporary file is made first: a log that cannot be
    // written stops the repair before any copy exists.
    let log_tmp = match &a.log {
        Some(log) => Some((Atomic::new(log)?, log)),
        None => None,
    };
    // A copy is only complete with its log: until both are in place, an
    // interrupt removes both. Registered before they exist when the paths
    // are free (so no window is left); when --force replaces files, once
    // the copy replaced its file.
    let guard = || match (output, &a.log) {
        (Some(o), Some(l)) => Some([
            crate::cleanup::register(o.to_path_buf()),
            crate::cleanup::register(l.clone()),
        ]),
        _ => None,
    };
    let free = output.is_some_and(|o| !o.exists()) && a.log.as_ref().is_some_and(|l| !l.exists());
    let mut pair = if free { guard() } else { None };
    let rep = repair::repair(&a.input, output, &opts)?;
    // A copy chatfsck would read back as another store (by its name) is
    // no repair: removed, with the reason.
    if let Some(out) = output
        && let Err(e) = repair::check_reads_back(&a.input, out, &opts)
    {
        let _ = std::fs::remove_file(out);
        return Err(e);
    }
    if pair.is_none() {
        pair = guard();
    }
    if let Some((tmp, log)) = log_tmp
        && let Err(e) = report::repair::write_log(&rep, tmp, log, a.force)
    {
        // A copy without its log would hold fewer payloads than the
        // input, with the others nowhere: remove it.
        if let Some(out) = output {
            let _ = std::fs::remove_file(out);
        }
        return Err(e);
    }
    drop(pair);
    render(&rep, out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}

/// What is compared before the repaired file replaces the original.
#[derive(PartialEq, Eq, Debug)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    sha256: [u8; 32],
}

fn stamp(path: &Path) -> Result<Stamp, Error> {
    use sha2::{Digest, Sha256};
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, &e))?;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h).map_err(|e| Error::io(path, &e))?;
    Ok(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        sha256: h.finalize().into(),
    })
}

/// `YYYYMMDDTHHMMSSZ`, UTC.
fn utc_stamp(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `repair FILE --in-place`: repair into a temporary file beside FILE; if
/// anything changed, copy FILE to `FILE.chatfsck-backup-<UTC time>` first,
/// check that FILE is still what was read (size, mtime, SHA-256: its app
/// may be appending to it), then rename the repaired file over it.
fn in_place(input: &Path, opts: &repair::Options) -> Result<Report, Error> {
    if crate::source::is_postgres(input) {
        return Err(Error::Usage(
            "--in-place repairs a file; a PostgreSQL database is never modified (use --emit-sql or --target)".into(),
        ));
    }
    let meta = std::fs::metadata(input).map_err(|e| Error::io(input, &e))?;
    if !meta.is_file() {
        return Err(Error::Usage(format!(
            "--in-place repairs one file; {} is not a file (repair a directory into a new one with -o OUTDIR)",
            input.display()
        )));
    }
    // A database has sidecars (-wal, -shm) that a rename would leave
    // behind, stale, beside the new file.
    let mut head = [0u8; 16];
    let is_sqlite = std::fs::File::open(input)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == crate::source::sqlite::HEADER;
    if is_sqlite {
        return Err(Error::Usage(format!(
            "--in-place repairs session files (JSON Lines, JSON); {} is a SQLite database: repair it into a copy with -o",
            input.display()
        )));
    }
    let before = stamp(input)?;
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = match input.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(".{name}.chatfsck-{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let cleanup = |p: &Path| {
        let _ = std::fs::remove_file(p);
    };
    let mut rep = match repair::repair(input, Some(&tmp), opts) {
        Ok(r) => r,
        Err(e) => {
            cleanup(&tmp);
            return Err(e);
        }
    };
    rep.input = input.display().to_string();
    if rep.edits.is_empty() {
        cleanup(&tmp);
        rep.output = None;
        return Ok(rep);
    }
    let changed = |what: &str| {
        Error::input(
            input,
            format!(
                "changed while it was being repaired ({what}): its app may be writing to it; nothing was replaced. Close the session and run again"
            ),
        )
    };
    // The backup: a new file, never an existing one.
    let backup = dir.join(format!(
        "{name}.chatfsck-backup-{}",
        utc_stamp(std::time::SystemTime::now())
    ));
    let copied = (|| -> std::io::Result<()> {
        let mut from = std::fs::File::open(input)?;
        let mut to = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&backup)?;
        crate::source::copy_all(&mut from, &mut to)?;
        to.sync_all()
    })();
    if let Err(e) = copied {
        cleanup(&tmp);
        return Err(Error::Output {
            path: backup,
            cause: e.to_string(),
        });
    }
    let now = stamp(input)?;
    let kept = stamp(&backup)?;
    if now != before || kept.sha256 != before.sha256 {
        cleanup(&tmp);
        cleanup(&backup);
        let what = if now.len != before.len {
            format!("{} bytes, then {}", before.len, now.len)
        } else if now.modified != before.modified {
            "its modification time moved".to_string()
        } else {
            "its content differs".to_string()
        };
        return Err(changed(&what));
    }
    // Keep the file's permissions, then replace it in one rename.
    let _ = std::fs::set_permissions(&tmp, meta.permissions());
    crate::write::atomic::rename_into_place(&tmp, input).map_err(|e| {
        cleanup(&tmp);
        Error::Output {
            path: input.to_path_buf(),
            cause: e.to_string(),
        }
    })?;
    rep.output = Some(input.display().to_string());
    rep.backup = Some(backup.display().to_string());
    Ok(rep)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_stamps() {
        // Checked with `date -u -d @1795000000 +%Y%m%dT%H%M%SZ`.
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000);
        assert_eq!(super::utc_stamp(t), "20261118T110640Z");
        assert_eq!(super::utc_stamp(std::time::UNIX_EPOCH), "19700101T000000Z");
    }
}
