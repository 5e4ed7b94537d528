//! `repair DIR -o OUTDIR`: every history under DIR (as `lint DIR` finds
//! them) repaired into the same relative path under OUTDIR; a history with
//! nothing to repair is written as an identical copy, the apps' other
//! files that `lint` skips (a Cline task's `ui_messages.json`, an opencode
//! part file) are copied as they are and listed as skipped, and a file
//! that is not a readable history is copied as it is and reported as an
//! error; every other file (no history's name) is copied as it is. One log for the run (`--log`): the run's document as JSON.
//!
//! The tree is built beside OUTDIR and renamed to it at the end, with the
//! log ([`TreeOut`]): OUTDIR is absent or complete, whatever stops the run.

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::super::out_err;
use crate::cli::RepairArgs;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::repair::{self, Report};
use crate::report::{self, Format};
use crate::write::atomic::{Atomic, Batch};
use crate::write::tree::TreeOut;

/// The document of a directory repair: one report per history, the
/// files skipped as `lint` skips them, and the files that could not be
/// repaired (copied as they are).
#[derive(Serialize)]
struct TreeReport {
    version: u32,
    input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    dry_run: bool,
    files: Vec<Report>,
    skipped: Vec<Skipped>,
    errors: Vec<TreeError>,
    /// How many files under DIR have no history's name (an opencode
    /// `storage/migration`, a task's attachments): copied as they are, so
    /// the app finds in OUTDIR all it keeps there.
    other_files: usize,
}

#[derive(Serialize)]
struct TreeError {
    path: String,
    error: String,
    /// The file was copied to the mirror as it is.
    copied: bool,
}

/// A file that is no history to repair: a companion file of an app (read
/// through another file, or known not to be a history), or a healthy
/// history of a store chatfsck reads but never writes.
#[derive(Serialize)]
struct Skipped {
    path: String,
    reason: String,
    /// The file was copied to the mirror as it is.
    copied: bool,
}

pub(super) fn run(
    a: &RepairArgs,
    dir: &Path,
    opts: &repair::Options,
    render: report::Render<Report>,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let outdir = match (&a.output, a.dry_run) {
        (_, true) => None,
        (Some(o), false) => Some(o.as_path()),
        (None, false) => {
            return Err(Error::Usage(
                "repair of a directory needs -o OUTDIR (a new directory) or --dry-run".into(),
            ));
        }
    };
    let din = std::fs::canonicalize(dir).ok();
    if let Some(o) = outdir {
        if let (Some(din), Some(dout)) = (&din, absolute(o))
            && (dout.starts_with(din) || din.starts_with(&dout))
        {
            return Err(Error::Usage(format!(
                "refusing to write the repaired tree {} inside or over the input directory {} (it is evidence); name a directory outside it",
                o.display(),
                dir.display()
            )));
        }
        if o.is_file() {
            return Err(Error::Usage(format!(
                "{} is a file, not a directory",
                o.display()
            )));
        }
        if o.read_dir().is_ok_and(|mut d| d.next().is_some()) && !a.force {
            return Err(Error::Usage(format!(
                "{} already exists and is not empty; pass --force to write into it",
                o.display()
            )));
        }
    }
    if let (Some(l), Some(din)) = (&a.log, &din)
        && absolute(l).is_some_and(|l| l.starts_with(din))
    {
        return Err(Error::Usage(format!(
            "refusing to write the repair log {} inside the input directory {} (it is evidence); name a path outside it",
            l.display(),
            dir.display()
        )));
    }
    // A log inside OUTDIR is written into the tree, and comes with it.
    let log_in_tree = match (&a.log, outdir) {
        (Some(l), Some(o)) => absolute(l)
            .zip(absolute(o))
            .and_then(|(l, o)| l.strip_prefix(o).ok().map(Path::to_path_buf)),
        _ => None,
    };
    let files = crate::source::expand(&[dir.to_path_buf()])?;
    let others = other_files(dir)?;
    // The log's temporary file is made first: a log that cannot be
    // written stops the run before any copy is made.
    let log_tmp = match (&a.log, &log_in_tree) {
        (Some(l), None) => Some((Atomic::new(l)?, l.as_path())),
        _ => None,
    };
    let tree = outdir.map(TreeOut::begin).transpose()?;
    let dests = match (&tree, outdir) {
        (Some(t), Some(o)) => Some(Dests {
            building: t.path(),
            final_root: o,
        }),
        _ => None,
    };
    let mut doc = TreeReport {
        version: crate::finding::JSON_VERSION,
        input: dir.display().to_string(),
        output: outdir.map(|o| o.display().to_string()),
        dry_run: a.dry_run,
        files: Vec::new(),
        skipped: Vec::new(),
        errors: Vec::new(),
        other_files: others.len(),
    };
    // Files are repaired on the thread pool, as `lint DIR` reads them, and
    // flushed to disk once at the end (`Batch`), not one fsync a file.
    // The reports keep the walk's order; the first output error stops the
    // files not yet started and is the run's error.
    let batch = tree.as_ref().map(|t| Batch::begin(t.path()));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let done: Vec<Option<Result<Done, Error>>> = files
        .into_par_iter()
        .map(|(file, _)| {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            let one = repair_one(a, opts, dir, dests.as_ref(), file);
            if matches!(one, Err(Error::Output { .. })) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Some(one)
        })
        .collect();
    if let Some(d) = &dests
        && !stop.load(std::sync::atomic::Ordering::Relaxed)
    {
        others.par_iter().try_for_each(|file| {
            let rel = file.strip_prefix(dir).unwrap_or(file);
            let dest = d.building.join(rel);
            if let Some(parent) = dest.parent() {
                crate::write::tree::create_dir_all(parent).map_err(|e| Error::Output {
                    path: d.final_root.join(rel),
                    cause: e.to_string(),
                })?;
            }
            crate::write::atomic::copy(file, &dest, false)
        })?;
    }
    for one in done.into_iter().flatten() {
        match one? {
            Done::Repaired(rep) => doc.files.push(*rep),
            Done::Skipped(s) => doc.skipped.push(s),
            Done::Unreadable(e) => doc.errors.push(e),
        }
    }
    if let Some(batch) = batch {
        batch.finish()?;
    }
    // The log holds history text: it is escaped as every JSON output is.
    let mut text = Vec::new();
    report::json::write(&doc, &mut text).map_err(out_err)?;
    match (tree, &a.log) {
        (Some(tree), Some(log)) => {
            let log = match (log_tmp, &log_in_tree) {
                (Some((tmp, path)), _) => {
                    let mut w = tmp.writer(path)?;
                    w.write_all(&text).map_err(|e| Error::Output {
                        path: path.to_path_buf(),
                        cause: e.to_string(),
                    })?;
                    crate::write::atomic::finish(w, path)?;
                    Some((tmp, path))
                }
                (None, Some(rel)) => {
                    let at = tree.path().join(rel);
                    if let Some(parent) = at.parent() {
                        crate::write::tree::create_dir_all(parent).map_err(|e| Error::Output {
                            path: log.clone(),
                            cause: e.to_string(),
                        })?;
                    }
                    crate::write::atomic::write_bytes(&at, &text, false).map_err(|e| match e {
                        Error::Output { cause, .. } => Error::Output {
                            path: log.clone(),
                            cause,
                        },
                        e => e,
                    })?;
                    None
                }
                (None, None) => None,
            };
            tree.finish(dir, a.force, log)?;
        }
        (Some(tree), None) => tree.finish(dir, a.force, None)?,
        (None, Some(log)) => match log_tmp {
            Some((tmp, path)) => tmp.fill(path, &text, a.force)?,
            None => crate::write::atomic::write_bytes(log, &text, a.force)?,
        },
        (None, None) => {}
    }
    match a.format {
        Format::Json => out.write_all(&text).map_err(out_err)?,
        _ => human(&doc, a.dry_run, outdir, render, out).map_err(out_err)?,
    }
    Ok(if doc.errors.is_empty() {
        EXIT_CLEAN
    } else {
        crate::exit::EXIT_ERROR
    })
}

fn human(
    doc: &TreeReport,
    dry_run: bool,
    outdir: Option<&Path>,
    render: report::Render<Report>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    use crate::escape::escape;
    for rep in &doc.files {
        render(rep, out)?;
    }
    let copied = |c: bool| {
        if c { "copied as it is" } else { "not copied" }
    };
    for s in &doc.skipped {
        writeln!(
            out,
            "note: skipped {}: {} ({})",
            escape(&s.path),
            escape(&s.reason),
            copied(s.copied)
        )?;
    }
    for e in &doc.errors {
        let what = if e.copied {
            "copied as it is"
        } else {
            "not repaired"
        };
        writeln!(out, "error: {} ({what})", escape(&e.error))?;
    }
    let edited = doc.files.iter().filter(|r| !r.edits.is_empty()).count();
    let edits: usize = doc.files.iter().map(|r| r.edits.len()).sum();
    let verb = if dry_run { "would repair" } else { "repaired" };
    let target = outdir
        .map(|o| format!(" into {}", escape(&o.display().to_string())))
        .unwrap_or_default();
    writeln!(
        out,
        "{verb} {} of {} histories{target}: {edits} edits; {} unchanged; {} skipped; {} not readable as a history; {} other files {}",
        edited,
        doc.files.len() + doc.errors.len(),
        doc.files.len() - edited,
        doc.skipped.len(),
        doc.errors.len(),
        doc.other_files,
        if dry_run {
            "to copy"
        } else {
            "copied as they are"
        }
    )
}

/// Where a tree repair writes: under `building` (the temporary tree),
/// for a file whose place, once the run is done, is under `final_root`.
struct Dests<'a> {
    building: &'a Path,
    final_root: &'a Path,
}

/// One file of a tree repair: its report, or why it is not a history
/// (then copied as it is).
enum Done {
    Repaired(Box<Report>),
    Skipped(Skipped),
    Unreadable(TreeError),
}

fn repair_one(
    a: &RepairArgs,
    opts: &repair::Options,
    dir: &Path,
    dests: Option<&Dests<'_>>,
    file: PathBuf,
) -> Result<Done, Error> {
    let rel = file.strip_prefix(dir).unwrap_or(&file).to_path_buf();
    let dest = dests.map(|d| d.building.join(&rel));
    if let Some(parent) = dest.as_deref().and_then(Path::parent) {
        crate::write::tree::create_dir_all(parent).map_err(|e| Error::Output {
            path: dests.map_or_else(|| parent.to_path_buf(), |d| d.final_root.join(&rel)),
            cause: e.to_string(),
        })?;
    }
    match repair::repair(&file, dest.as_deref(), opts) {
        Ok(mut rep) => {
            // The copy's path once the tree is in place.
            if let (Some(d), Some(_)) = (dests, &rep.output) {
                rep.output = Some(d.final_root.join(&rel).display().to_string());
            }
            Ok(Done::Repaired(Box::new(rep)))
        }
        Err(e @ Error::Output { .. }) => Err(e),
        Err(e) => {
            let copied = match &dest {
                Some(d) => {
                    crate::write::atomic::copy(&file, d, a.force)?;
                    true
                }
                None => false,
            };
            let path = file.display().to_string();
            Ok(match skipped(&file, &e, opts) {
                Some(reason) => Done::Skipped(Skipped {
                    path,
                    reason,
                    copied,
                }),
                None => Done::Unreadable(TreeError {
                    path,
                    error: e.to_string(),
                    copied,
                }),
            })
        }
    }
}

/// Why a file the repair could not take is skipped, as `lint DIR` skips
/// it, or `None` when it is an error: a file of an app's task folder known
/// not to be a history (Cline's `ui_messages.json`, Gemini CLI's
/// `projects.json`), a file read through another one (opencode's legacy
/// message and part files), or a history of a store chatfsck never writes
/// in which lint finds no error (nothing to repair: its copy is the file
/// as it is). One with errors left unrepaired is an error of the run.
fn skipped(file: &Path, e: &Error, opts: &repair::Options) -> Option<String> {
    match e {
        Error::NotHistory { cause, .. } if !crate::format::looks_like_history(file) => {
            Some(cause.clone())
        }
        Error::PartOf { cause, .. } => Some(cause.clone()),
        Error::Input { cause, .. } => {
            let src = crate::format::open_with(file, opts.limits, opts.mapping.as_ref()).ok()?;
            let never = crate::format::store_of(&src.info())
                .is_some_and(|s| matches!(s.writing, crate::format::Writing::Never(_)));
            drop(src);
            if !never {
                return None;
            }
            let lint = crate::lint::Options {
                selection: opts.selection.clone(),
                limits: opts.limits,
                mapping: opts.mapping.clone(),
                trace: None,
                only: None,
                detail: 0,
            };
            let rep = crate::lint::lint_one(file, &lint, None).ok()?;
            let errors = crate::finding::Severity::Error.count(rep.findings.iter());
            (errors == 0).then(|| format!("{cause}; lint finds no error in it"))
        }
        _ => None,
    }
}

/// The regular files under `dir` that the walk for histories leaves out
/// (their names are no history's), in the walk's order.
fn other_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    // A store read through its `CURRENT` pointer is copied whole by its
    // own writer, which repairs it.
    let walker = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.file_name() != ".git"
                && !(e.file_type().is_dir() && crate::source::is_generation_store(e.path()))
        });
    for entry in walker {
        let entry = entry.map_err(|e| {
            let at = e.path().unwrap_or(dir).to_path_buf();
            match e.io_error() {
                Some(io) => Error::io(&at, io),
                None => Error::input(&at, "cannot walk directory"),
            }
        })?;
        if entry.file_type().is_file() && !crate::source::is_candidate(entry.path()) {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

fn absolute(p: &Path) -> Option<PathBuf> {
    // The output directory may not exist yet: resolve its nearest parent.
    if let Ok(c) = std::fs::canonicalize(p) {
        return Some(c);
    }
    let parent = p.parent().filter(|x| !x.as_os_str().is_empty());
    let base = match parent {
        Some(par) => absolute(par)?,
        None => std::env::current_dir().ok()?,
    };
    Some(base.join(p.file_name()?))
}
