//! A repaired copy of a JSONL recording, written in the app's own terms.
//!
//! Every line of the input is copied byte for byte (a line that does not
//! parse is dropped: the app never loads it anyway). When records must
//! change, the copy ends with one `{"$set":{"messages":[…]}}` line holding
//! the records the app should load, in order: the checkpoint record Gemini
//! CLI itself appends on every resume (`updateMessagesFromHistory`), which
//! `loadConversationRecord` applies by replacing its whole record set. The
//! records that did not change are copied verbatim into it; the changed
//! ones are re-serialised compactly, as `JSON.stringify` writes them.
//!
//! - a stray or duplicate function response: removed from its `user`
//!   record (the record goes when nothing else is left in it);
//! - an unanswered call: a `user` record right after the call's record
//!   answering it with the app's own error shape
//!   `{functionResponse:{id,name,response:{error}}}`, the text a marked
//!   placeholder; or, with `--orphan-calls=drop`, the call removed.
//!
//! The legacy single-document `.json` form is not written: the app migrates
//! it to `.jsonl` on resume, and chatfsck repairs that file.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::load::{self, Record};
use super::read;
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Format, Loc, PartKind, Slot};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::payload::Payload;
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

pub struct GeminiWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    /// Lines left out of the copy (1-based).
    drop_lines: BTreeSet<u64>,
    /// The `$set.messages` line to append, when records changed (a large
    /// record's text read from the input as it is written).
    set_line: Option<Payload>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(GeminiWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        drop_lines: BTreeSet::new(),
        set_line: None,
        planned: false,
    }))
}

/// One record of the copy: unchanged (verbatim) or rewritten.
struct Slotted {
    rec: Record,
    value: Option<Value>,
    /// Records inserted right after this one.
    after: Vec<Value>,
    dropped: bool,
    /// The record's text once changed (`None`: as the file holds it).
    written: Option<Payload>,
}

impl Slotted {
    fn value_mut(&mut self) -> &mut Value {
        self.value.get_or_insert_with(|| self.rec.value())
    }
}

enum Change {
    /// Remove part `k` of `content` (or the whole content).
    RemoveContent(Slot),
    /// Remove `toolCalls[k]`.
    RemoveToolCall(usize),
}

fn where_of(rec: &Record) -> String {
    let line = rec.loc.line().unwrap_or(0);
    match rec.element {
        Some(k) => format!("record `{}` (line {line}, `$set.messages[{k}]`)", rec.id),
        None => format!("record `{}` (line {line})", rec.id),
    }
}

impl Writer for GeminiWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        if conv.source.format == Format::Json {
            for p in planned {
                log.left.push(Left::of(
                    p.finding,
                    "the legacy single-document `.json` recording is not written: Gemini CLI migrates it to `.jsonl` on resume; repair that file",
                ));
            }
            return Ok(());
        }
        // Records are read with their large strings as markers, and
        // written with them read from the input again.
        let loaded = load::load_shrunk(&self.input, self.limits)?;
        // Which record each message came from.
        let of_message: Vec<usize> = loaded
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                let k = read::kind(r);
                k == "gemini" || (k == "user" && read::replayed(r.node()))
            })
            .map(|(i, _)| i)
            .collect();
        if of_message.len() != conv.messages.len() {
            return Err(Error::input(
                &self.input,
                "changed while it was being repaired (its records no longer match)",
            ));
        }
        let mut recs: Vec<Slotted> = loaded
            .records
            .into_iter()
            .map(|rec| Slotted {
                rec,
                value: None,
                after: Vec::new(),
                dropped: false,
                written: None,
            })
            .collect();
        // Changes per record, applied from the last part back so that
        // positions stay valid.
        let mut changes: HashMap<usize, Vec<(Change, Edit)>> = HashMap::new();
        let mut answers: HashMap<usize, Vec<(Value, Edit)>> = HashMap::new();
        let mut records = Records::open(&self.input)?;
        let file = records.file()?;
        let text_of = |rec: &Record| whole(rec, file.as_ref(), &self.input);
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                match action {
                    Action::DropRecord { loc } => {
                        let Some(line) = loc.line() else { continue };
                        if self.drop_lines.insert(line) {
                            let (before, before_base64) = records.read_verbatim(loc)?;
                            let description = format!(
                                "dropped line {line}, which does not parse (the app skips it on load)"
                            );
                            log.edits.push(Edit {
                                before: Some(before),
                                before_base64,
                                ids: f.ids.clone(),
                                ..Edit::new(
                                    f.rule,
                                    &f.conversation,
                                    action.name(),
                                    description,
                                    loc.clone(),
                                )
                            });
                        }
                    }
                    Action::RemoveResult { message, part } => {
                        let ri = of_message[*message];
                        let part = &conv.messages[*message].parts[*part];
                        let PartKind::ToolResult { call_id, .. } = &part.kind else {
                            continue;
                        };
                        let change = match part.slot {
                            Some(s @ Slot::Item("content", _))
                            | Some(s @ Slot::Whole("content")) => Change::RemoveContent(s),
                            _ => {
                                log.left.push(Left::of(
                                    f,
                                    "the response is the `result` of the call's own `toolCalls` entry: removing it would leave the call unanswered",
                                ));
                                continue;
                            }
                        };
                        let edit = Edit {
                            ids: vec![call_id.clone()],
                            ..Edit::new(
                                f.rule,
                                &f.conversation,
                                action.name(),
                                format!(
                                    "removed the function response for `{call_id}` from {}",
                                    where_of(&recs[ri].rec)
                                ),
                                part.loc.clone(),
                            )
                        };
                        let edit = with_before(edit, &recs[ri].rec, text_of(&recs[ri].rec)?);
                        changes.entry(ri).or_default().push((change, edit));
                    }
                    Action::AnswerCall { message, part } => {
                        let ri = of_message[*message];
                        let p_ = &conv.messages[*message].parts[*part];
                        let PartKind::ToolCall { id, name, .. } = &p_.kind else {
                            continue;
                        };
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                let change = match p_.slot {
                                    Some(Slot::Item("toolCalls", k)) => Change::RemoveToolCall(k),
                                    Some(s) => Change::RemoveContent(s),
                                    None => continue,
                                };
                                let edit = Edit {
                                    ids: vec![id.clone()],
                                    ..Edit::new(
                                        f.rule,
                                        &f.conversation,
                                        action.name(),
                                        format!(
                                            "removed the unanswered call `{id}` (`{name}`) from {}",
                                            where_of(&recs[ri].rec)
                                        ),
                                        p_.loc.clone(),
                                    )
                                };
                                let edit =
                                    with_before(edit, &recs[ri].rec, text_of(&recs[ri].rec)?);
                                changes.entry(ri).or_default().push((change, edit));
                            }
                            OrphanPolicy::Placeholder => {
                                let response = json!({"functionResponse": {
                                    "id": id, "name": name, "response": {"error": PLACEHOLDER}
                                }});
                                let edit = Edit {
                                    synthesized: true,
                                    ids: vec![id.clone()],
                                    ..Edit::new(
                                        f.rule,
                                        &f.conversation,
                                        action.name(),
                                        format!(
                                            "answered the call `{id}` (`{name}`) with a placeholder error response in a new user record right after {}",
                                            where_of(&recs[ri].rec)
                                        ),
                                        p_.loc.clone(),
                                    )
                                };
                                answers.entry(ri).or_default().push((response, edit));
                            }
                        }
                    }
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Gemini CLI recordings")),
                }
            }
        }
        let mut edits = Vec::new();
        let mut ris: Vec<usize> = changes.keys().copied().collect();
        ris.sort();
        for ri in ris {
            let mut list = changes.remove(&ri).unwrap_or_default();
            // Highest position first.
            list.sort_by_key(|(c, _)| {
                std::cmp::Reverse(match c {
                    Change::RemoveContent(Slot::Item(_, k)) | Change::RemoveToolCall(k) => *k,
                    Change::RemoveContent(Slot::Whole(_)) => usize::MAX,
                })
            });
            let s = &mut recs[ri];
            for (change, _) in &list {
                let v = s.value_mut();
                match change {
                    Change::RemoveContent(Slot::Item(_, k)) => {
                        if let Some(a) = v.get_mut("content").and_then(Value::as_array_mut)
                            && *k < a.len()
                        {
                            a.remove(*k);
                        }
                    }
                    Change::RemoveContent(Slot::Whole(_)) => {
                        if let Some(o) = v.as_object_mut() {
                            o.insert("content".into(), Value::Array(Vec::new()));
                        }
                    }
                    Change::RemoveToolCall(k) => {
                        if let Some(a) = v.get_mut("toolCalls").and_then(Value::as_array_mut)
                            && *k < a.len()
                        {
                            a.remove(*k);
                        }
                    }
                }
            }
            let v = s.value.as_ref().expect("changed above");
            let empty_content = v
                .get("content")
                .is_none_or(|c| c.as_array().is_some_and(Vec::is_empty) || c == "");
            let no_calls = v
                .get("toolCalls")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            let no_thoughts = v
                .get("thoughts")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            s.dropped = empty_content && no_calls && no_thoughts;
            let after = if s.dropped {
                None
            } else {
                let text = serde_json::to_string(v).unwrap_or_default();
                Some(match (&s.rec.shrunk, &file) {
                    (Some((small, start)), Some(f)) => Err(small.expand(text, f.clone(), *start)),
                    _ => Ok(text),
                })
            };
            s.written = after.as_ref().map(|a| match a {
                Ok(text) => Payload::from(text.clone()),
                Err(large) => large.clone(),
            });
            for (_, mut e) in list {
                match &after {
                    Some(Ok(text)) => e.after = Some(text.clone()),
                    Some(Err(large)) => e.large.after = Some(large.clone()),
                    None => {}
                }
                if s.dropped {
                    e.description
                        .push_str("; nothing else was left in it, so the record goes");
                }
                edits.push(e);
            }
        }
        let mut ris: Vec<usize> = answers.keys().copied().collect();
        ris.sort();
        for ri in ris {
            let list = answers.remove(&ri).unwrap_or_default();
            let s = &mut recs[ri];
            let id = format!("{}-chatfsck-response", s.rec.id);
            let mut record = serde_json::Map::new();
            record.insert("id".into(), Value::String(id));
            if let Some(ts) = s.rec.node().get("timestamp") {
                record.insert("timestamp".into(), ts.to_value());
            }
            record.insert("type".into(), Value::String("user".into()));
            record.insert(
                "content".into(),
                Value::Array(list.iter().map(|(r, _)| r.clone()).collect()),
            );
            let record = Value::Object(record);
            let text = serde_json::to_string(&record).unwrap_or_default();
            for (_, mut e) in list {
                e.after = Some(text.clone());
                edits.push(e);
            }
            s.after.push(record);
        }
        if edits.is_empty() {
            return Ok(());
        }
        let mut elements = Vec::new();
        for s in &recs {
            if !s.dropped {
                elements.push(match &s.written {
                    Some(p) => p.clone(),
                    None => text_of(&s.rec)?,
                });
            }
            for a in &s.after {
                elements.push(Payload::from(serde_json::to_string(a).unwrap_or_default()));
            }
        }
        let mut line = vec![Payload::from("{\"$set\":{\"messages\":[".to_string())];
        for (i, el) in elements.into_iter().enumerate() {
            if i > 0 {
                line.push(Payload::from(",".to_string()));
            }
            line.push(el);
        }
        line.push(Payload::from("]}}".to_string()));
        self.set_line = Some(Payload::join(line));
        for e in &mut edits {
            e.description.push_str(
                " (the copy ends with a `$set.messages` line holding the repaired records, which the app loads in place of the earlier ones)",
            );
        }
        log.edits.extend(edits);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        if !self.planned {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        }
        crate::write::lines::write_edited(
            &self.input,
            out,
            self.limits.max_line_bytes,
            self.force,
            &crate::write::lines::Edited::<Payload> {
                drop: &self.drop_lines,
                replace: None,
                insert_after: None,
                tail: self.set_line.as_ref(),
            },
        )
    }
}

/// The record's text as the file holds it: in memory, or (a record
/// loaded with its large strings as markers) read from the input.
fn whole(rec: &Record, file: Option<&Arc<File>>, input: &Path) -> Result<Payload> {
    match (&rec.shrunk, &rec.loc) {
        (None, _) => Ok(Payload::from(rec.raw().to_string())),
        (Some(_), Loc::Line { start, end, .. }) if file.is_some() => Ok(Payload::raw(
            file.expect("checked").clone(),
            *start,
            end - start,
        )),
        _ => Err(Error::input(
            input,
            "internal: a large record without its place in the file",
        )),
    }
}

/// `e` with the record's text as it was (`whole`) as its `before`.
fn with_before(mut e: Edit, rec: &Record, whole: Payload) -> Edit {
    match rec.shrunk {
        Some(_) => e.large.before = Some(whole),
        None => e.before = Some(rec.raw().to_string()),
    }
    e
}
