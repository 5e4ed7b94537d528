//! The repaired copy of a conversation dataset in JSON Lines: every row,
//! in its order; a row with no edit is copied byte for byte, a row with
//! edits gets its messages array rewritten (each element kept as its text
//! or its planned replacement, only the array's separators written anew)
//! and every other member kept as it was.
//!
//! Each row is planned as the provider-shaped message log its messages
//! are (`records::writer::plan`): the messages of a row are records whose
//! locations are their byte ranges in the file, as a JSON document's
//! elements are. A row the repair would leave without a message is kept
//! as it is, with its findings left (a row is never dropped).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use crate::config::RepairPolicy as Policy;
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::writer::{LineEdit, plan};
use crate::model::{Conversation, Dialect};
use crate::source::Limits;
use crate::write::{Left, Log, NO_MESSAGE_LEFT, Planned, Target, Writer, atomic, lines};

/// What the copy carries out: the edits of a row's messages. ShareGPT
/// rows are not written back yet (their turns are not OpenAI messages),
/// and neither is a renamed call.
pub fn supports(dialect: Dialect, a: &Action) -> bool {
    dialect == Dialect::OpenAi
        && matches!(
            a,
            Action::DropRecord { .. }
                | Action::RemoveResult { .. }
                | Action::ReplaceArguments { .. }
                | Action::AnswerCall { .. }
                | Action::MoveAfter { .. }
                | Action::ReplaceSurrogates { .. }
        )
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(DatasetWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        edits: BTreeMap::new(),
    }))
}

struct DatasetWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    /// The edits of every row, by where the message they edit starts.
    edits: BTreeMap<u64, LineEdit>,
}

impl Writer for DatasetWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        let mut p = plan(conv, planned, &self.policy, &self.input)?;
        if !p.keeps_a_message(conv) {
            // A row left without a message (or one that does not parse)
            // is kept as it is: a dataset keeps every row.
            for f in planned {
                log.left.push(Left::of(f.finding, NO_MESSAGE_LEFT));
            }
            return Ok(());
        }
        log.edits.append(&mut p.log);
        log.left.append(&mut p.left);
        self.edits.append(&mut p.lines);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        };
        if self.edits.is_empty() {
            return atomic::copy(&self.input, out, self.force);
        }
        let werr = lines::output_error(out);
        let input = &self.input;
        lines::rewrite(
            input,
            out,
            self.limits.max_line_bytes,
            self.force,
            |line, w| {
                let end = line.start + line.bytes.len() as u64;
                if self.edits.range(line.start..end).next().is_none() {
                    w.write_all(line.bytes).map_err(&werr)?;
                } else {
                    let row = rewrite_row(line.bytes, line.start, &self.edits).map_err(|why| {
                        Error::input(input, format!("line {} {why}", line.number))
                    })?;
                    w.write_all(&row).map_err(&werr)?;
                }
                if line.terminated {
                    w.write_all(b"\n").map_err(&werr)?;
                }
                Ok(())
            },
            |_| Ok(()),
        )
    }
}

/// The row `bytes` (at byte `start` of the file) with the planned edits of
/// its messages carried out.
fn rewrite_row(
    bytes: &[u8],
    start: u64,
    edits: &BTreeMap<u64, LineEdit>,
) -> std::result::Result<Vec<u8>, String> {
    let gone = || "is no longer the row it was".to_string();
    let text = std::str::from_utf8(bytes).map_err(|_| gone())?;
    let base = text.as_ptr() as usize;
    let at = |s: &str| start + (s.as_ptr() as usize - base) as u64;
    let members: HashMap<std::borrow::Cow<'_, str>, &RawValue> =
        serde_json::from_str(text).map_err(|_| gone())?;
    let first = *edits.range(start..).next().ok_or_else(gone)?.0;
    // The member whose array holds the edited messages.
    let array = members
        .values()
        .find(|v| (at(v.get())..at(v.get()) + v.get().len() as u64).contains(&first))
        .ok_or_else(gone)?;
    let elements: Vec<&RawValue> = serde_json::from_str(array.get()).map_err(|_| gone())?;
    // The array's separator as the row writes it (`, ` from Python's
    // `json.dumps`).
    let sep = match elements.as_slice() {
        [a, b, ..] => {
            let from = a.get().as_ptr() as usize + a.get().len() - base;
            let to = b.get().as_ptr() as usize - base;
            text[from..to].to_string()
        }
        _ if text.contains("\": ") => ", ".into(),
        _ => ",".into(),
    };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 256);
    let from = array.get().as_ptr() as usize - base;
    out.extend_from_slice(&bytes[..from]);
    out.push(b'[');
    let mut first_el = true;
    let mut put = |out: &mut Vec<u8>, piece: &[u8]| {
        if !first_el {
            out.extend_from_slice(sep.as_bytes());
        }
        first_el = false;
        out.extend_from_slice(piece);
    };
    let mut stash: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    for el in &elements {
        let key = at(el.get());
        let edit = edits.get(&key);
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        match edit {
            Some(e) if e.drop => {}
            Some(LineEdit {
                replacement: Some(r),
                ..
            }) => {
                let mut v = Vec::new();
                r.write_to(&mut v).map_err(|e| e.to_string())?;
                pieces.push(v);
            }
            _ => pieces.push(el.get().as_bytes().to_vec()),
        }
        pieces.extend(
            edit.into_iter()
                .flat_map(|e| e.insert_after.iter().map(|i| i.as_bytes().to_vec())),
        );
        match edit.and_then(|e| e.moved_to) {
            // What is inserted after a moved message moves with it.
            Some(target) => stash.entry(target).or_default().extend(pieces),
            None => {
                for p in pieces {
                    put(&mut out, &p);
                }
            }
        }
        for p in stash.remove(&key).into_iter().flatten() {
            put(&mut out, &p);
        }
    }
    out.push(b']');
    out.extend_from_slice(&bytes[from + array.get().len()..]);
    Ok(out)
}
