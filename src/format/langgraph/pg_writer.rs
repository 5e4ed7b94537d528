//! Repair of a LangGraph PostgreSQL checkpointer. The source is never
//! modified: the repair is a reviewable SQL script (`--emit-sql`) or is
//! applied to another database (`--target`, a restored copy), as the
//! message tables' is (`message_table::writer`).
//!
//! Each broken thread gets a NEW checkpoint after its latest one, as the
//! SQLite writer appends one (`writer`): the same checkpoint, with the id
//! after the latest one's, `parent_checkpoint_id` the latest one, the
//! metadata of an `update_state` (`source: "update"`), and the latest
//! one's pending writes copied to it. Its `messages` channel is a new
//! blob: the latest list with a `ToolMessage` answering each orphan call,
//! at a new channel version (the greatest version of the checkpoint plus
//! one, as LangGraph's `get_next_version` counts), since a blob is keyed by
//! its version and the old one stays for the old checkpoint. Every
//! statement is an INSERT that does nothing when its row is there: the
//! script can run twice, and no existing row is changed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rmpv::Value;

use super::postgres::{self as lgpg, BLOBS, CHECKPOINTS, WRITES};
use super::serde;
use super::state;
use super::writer::{answer, next_id, update_metadata};
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::{Error, Result};
use crate::escape::escape;
use crate::format::message_table::postgres::{self as pg, Target as Database};
use crate::format::message_table::writer::{literal, open_target, write_script};
use crate::model::{Conversation, PartKind};
use crate::source::sqlite::quote_ident;
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// The calls to answer on one thread's latest checkpoint.
struct Answer {
    checkpoint: String,
    ids: Vec<String>,
    entry: usize,
}

pub struct PgWriter {
    input: PathBuf,
    force: bool,
    policy: RepairPolicy,
    script: Option<PathBuf>,
    target: Option<Box<(Database, postgres::Client)>>,
    /// By conversation id.
    answers: BTreeMap<String, Answer>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    let source = pg::target(&t.input.to_string_lossy())?;
    let target = match (t.target, t.dry_run) {
        (Some(url), false) => {
            let db = pg::target(url)?;
            let client = open_target(&source, &db)?;
            Some(Box::new((db, client)))
        }
        _ => None,
    };
    Ok(Box::new(PgWriter {
        input: t.input.to_path_buf(),
        force: t.force,
        policy: *t.policy,
        script: t.emit_sql.filter(|_| !t.dry_run).map(Into::into),
        target,
        answers: BTreeMap::new(),
    }))
}

impl Writer for PgWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        for p in planned {
            for action in &p.fix.actions {
                let crate::finding::Action::AnswerCall { message, part } = action else {
                    continue;
                };
                let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part)) else {
                    continue;
                };
                let PartKind::ToolCall { id, .. } = &pt.kind else {
                    continue;
                };
                if self.policy.orphan_calls == OrphanCalls::Drop {
                    log.left.push(Left::of(
                        p.finding,
                        "`--orphan-calls=drop` is not carried out on a LangGraph checkpoint: the call is part of the `AIMessage` the model wrote, and LangGraph users answer it with a `ToolMessage` instead",
                    ));
                    continue;
                }
                let in_channel =
                    matches!(&pt.loc, crate::model::Loc::Row { table, .. } if &**table == BLOBS);
                let Some(checkpoint) = lgpg::checkpoint_of(&pt.loc).filter(|_| in_channel) else {
                    log.left.push(Left::of(
                        p.finding,
                        "the call is in a pending write, not in the checkpoint: LangGraph applies it on resume, and a checkpoint cannot answer it before it is applied",
                    ));
                    continue;
                };
                let a = self.answers.entry(conv.id.clone()).or_insert_with(|| {
                    log.edits.push(Edit {
                        synthesized: true,
                        ..Edit::new(
                            p.finding.rule,
                            &conv.id,
                            "answer-call",
                            String::new(),
                            pt.loc.clone(),
                        )
                    });
                    Answer {
                        checkpoint: checkpoint.to_string(),
                        ids: Vec::new(),
                        entry: log.edits.len() - 1,
                    }
                });
                a.ids.push(id.clone());
                let list = a
                    .ids
                    .iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let e = &mut log.edits[a.entry];
                e.ids.clone_from(&a.ids);
                e.description = format!(
                    "appended a checkpoint after the latest one of thread `{}` whose `messages` (a new blob) answer {list} with a `ToolMessage` (status `error`, placeholder); the latest checkpoint is kept as its parent",
                    conv.id
                );
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let PgWriter {
            input,
            force,
            script,
            target,
            answers,
            ..
        } = *self;
        if script.is_none() && target.is_none() {
            return Ok(());
        }
        let (source, mut client) = lgpg::source(&input)?;
        let mut steps = Vec::new();
        for (conv, a) in &answers {
            let (stmts, new_id, added) = statements(&mut client, &source, conv, a)?;
            let e = &mut log.edits[a.entry];
            e.location = state::loc(CHECKPOINTS, new_id, None);
            e.after = Some(serde_json::Value::Array(added).to_string());
            steps.push((conv.clone(), stmts));
        }
        if let Some(sql) = script {
            let mut s = String::new();
            s.push_str(&format!(
                "-- chatfsck repair of {}\n",
                escape(&source.display)
            ));
            s.push_str(&format!(
                "-- chatfsck {}: a new checkpoint on each of {} LangGraph thread(s), after its latest one; no existing row is changed.\n",
                env!("CARGO_PKG_VERSION"),
                steps.len()
            ));
            s.push_str(
                "-- Review, then apply with: psql -v ON_ERROR_STOP=1 -f THIS_FILE postgres://…\n",
            );
            s.push_str(
                "-- Each INSERT does nothing when its row already exists: running it twice is harmless.\n",
            );
            s.push_str("BEGIN;\nSET LOCAL standard_conforming_strings = on;\nSET LOCAL client_encoding = 'UTF8';\n");
            for (conv, stmts) in &steps {
                s.push_str(&format!(
                    "-- thread {}\n",
                    escape(conv).replace(['\n', '\r'], " ")
                ));
                for st in stmts {
                    s.push_str(st);
                    s.push('\n');
                }
            }
            s.push_str("COMMIT;\n");
            write_script(&sql, &s, force)?;
            log.sql = Some(sql.display().to_string());
        }
        if let Some(target) = target {
            let (db, mut client) = *target;
            let out = |e: postgres::Error| Error::Output {
                path: db.path(),
                cause: pg::cause(&e),
            };
            let mut tx = client.transaction().map_err(out)?;
            let mut inserted = 0;
            for ((_, stmts), (_, a)) in steps.iter().zip(&answers) {
                // The checkpoint's row is the second statement.
                let mut n_checkpoint = 0;
                for (i, st) in stmts.iter().enumerate() {
                    let n = tx.execute(st.as_str(), &[]).map_err(out)?;
                    if i == 1 {
                        n_checkpoint = n;
                    }
                    inserted += n;
                }
                if n_checkpoint == 0 {
                    log.edits[a.entry]
                        .description
                        .push_str(" (already present in the target: nothing inserted)");
                }
            }
            tx.commit().map_err(out)?;
            log.target = Some(db.display.clone());
            log.inserted = Some(inserted);
        }
        Ok(())
    }
}

/// The statements that append one thread's new checkpoint, its id, and the
/// messages added (JSON, for the log).
fn statements(
    client: &mut postgres::Client,
    source: &Database,
    conv: &str,
    a: &Answer,
) -> Result<(Vec<String>, String, Vec<serde_json::Value>)> {
    let db = |e: postgres::Error| Error::input(source.path(), pg::cause(&e));
    let bad = |why: String| Error::Output {
        path: source.path(),
        cause: format!("checkpoint {} of thread {conv}: {why}", a.checkpoint),
    };
    let rows = client
        .query(
            "SELECT thread_id, checkpoint_ns, checkpoint::text, metadata::text, parent_checkpoint_id FROM checkpoints WHERE checkpoint_id = $1",
            &[&a.checkpoint],
        )
        .map_err(db)?;
    let row = rows
        .iter()
        .find(|r| state::conversation_id(r.get(0), r.get(1)) == conv)
        .ok_or_else(|| bad("no longer in the database".into()))?;
    let (thread, ns): (String, String) = (row.get(0), row.get(1));
    let mut cp: serde_json::Value =
        serde_json::from_str(row.get::<_, &str>(2)).map_err(|e| bad(e.to_string()))?;
    let meta: Option<String> = row.get(3);
    let parent: Option<String> = row.get(4);
    let versions = cp
        .get("channel_versions")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| bad("no `channel_versions`".into()))?;
    let old_version = match versions.get(state::MESSAGES) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => return Err(bad("no version of `messages`".into())),
    };
    // LangGraph's `get_next_version`: the integer before the dot, plus one.
    let top = versions
        .values()
        .filter_map(|v| match v {
            serde_json::Value::String(s) => s.split('.').next()?.parse::<u64>().ok(),
            other => other.as_u64(),
        })
        .max()
        .unwrap_or(0);
    let new_version = format!("{:032}.{:016}", top + 1, 0);
    let blob = client
        .query_opt(
            "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3 AND version = $4",
            &[&thread, &ns, &state::MESSAGES, &old_version],
        )
        .map_err(db)?
        .filter(|b| b.get::<_, &str>(0) != "empty");
    let list = match blob {
        Some(blob) => {
            let ty: String = blob.get(0);
            if ty != "msgpack" {
                return Err(bad(format!(
                    "its `messages` blob is serialised as `{ty}`; only msgpack is written"
                )));
            }
            let bytes: Vec<u8> = blob.get::<_, Option<Vec<u8>>>(1).unwrap_or_default();
            serde::msgpack(&bytes).map_err(|e| bad(format!("{e:?}")))?
        }
        // Not stored: the list LangGraph rebuilds, which the lint read.
        None => {
            let has_path = lgpg::has_task_path(client).map_err(db)?;
            let walk = lgpg::Walk::prepare(client, has_path).map_err(db)?;
            match walk
                .rebuild(
                    client,
                    &thread,
                    &ns,
                    &a.checkpoint,
                    parent.as_deref(),
                    state::MESSAGES,
                )
                .map_err(db)?
            {
                Ok(r) => Value::Array(r.list),
                Err(_) => {
                    return Err(bad(
                        "its `messages` blob is missing, and a value LangGraph rebuilds it from does not decode".into(),
                    ));
                }
            }
        }
    };
    let mut holder = Value::Map(vec![(
        Value::from("channel_values"),
        Value::Map(vec![(Value::from(state::MESSAGES), list)]),
    )]);
    let added = answer(&mut holder, &a.ids).map_err(bad)?;
    let list = serde::get(&holder, "channel_values")
        .and_then(|v| serde::get(v, state::MESSAGES))
        .cloned()
        .unwrap_or(Value::Nil);
    let new_blob = serde::encode(&list);
    let new_id = next_id(&a.checkpoint).ok_or_else(|| bad("its id is not a UUID".into()))?;
    cp["id"] = new_id.clone().into();
    cp["channel_versions"][state::MESSAGES] = new_version.clone().into();
    let meta = meta
        .map(|m| String::from_utf8(update_metadata(m.as_bytes())).unwrap_or(m))
        .unwrap_or_else(|| "{}".into());
    let (t, n) = (literal(&thread), literal(&ns));
    let mut out = vec![
        format!(
            "INSERT INTO {BLOBS} (thread_id, checkpoint_ns, channel, version, type, blob) VALUES ({t}, {n}, {}, {}, 'msgpack', '\\x{}'::bytea) ON CONFLICT DO NOTHING;",
            literal(state::MESSAGES),
            literal(&new_version),
            hex(&new_blob)
        ),
        format!(
            "INSERT INTO {CHECKPOINTS} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata) VALUES ({t}, {n}, {}, {}, CAST({} AS jsonb), CAST({} AS jsonb)) ON CONFLICT DO NOTHING;",
            literal(&new_id),
            literal(&a.checkpoint),
            literal(&cp.to_string()),
            literal(&meta)
        ),
    ];
    // The latest checkpoint's pending writes, carried over with every
    // column the checkpointer's version has (`task_path`).
    let cols: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = ANY (current_schemas(false)) AND table_name = $1 ORDER BY ordinal_position",
            &[&WRITES],
        )
        .map_err(db)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let names: Vec<String> = cols.iter().map(|c| quote_ident(c)).collect();
    let values: Vec<String> = cols
        .iter()
        .zip(&names)
        .map(|(c, q)| {
            if c == "checkpoint_id" {
                literal(&new_id)
            } else {
                q.clone()
            }
        })
        .collect();
    out.push(format!(
        "INSERT INTO {WRITES} ({}) SELECT {} FROM {WRITES} WHERE thread_id = {t} AND checkpoint_ns = {n} AND checkpoint_id = {} ON CONFLICT DO NOTHING;",
        names.join(", "),
        values.join(", "),
        literal(&a.checkpoint)
    ));
    Ok((out, new_id, added))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
