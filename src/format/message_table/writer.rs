//! Repair of message tables: rebuild lost tool-result messages (seed 003).
//!
//! Inserts only. Every edit is a new row at an index the table lacks; no
//! existing row is changed or removed. The new row names the conversation,
//! index, role (`user`) and content columns; every other column takes its
//! default (gbrain: `schema_version` 1, `ended_at` now()), as gbrain's own
//! `persistMessage` leaves them.
//! - SQLite: the copy is made with SQLite's backup API from a forensic
//!   snapshot, the rows are inserted in one transaction, and the result must
//!   pass `PRAGMA quick_check` before it is moved into place.
//! - PostgreSQL: the source is never modified. `--emit-sql FILE` writes a
//!   reviewable script (one transaction, INSERTs that do nothing when the
//!   row already exists, so it can run twice); `--target URL` applies the
//!   same statements to another database, refused when it is the source.

use std::path::Path;

use serde_json::{Value, json};

use super::postgres::{self as pgsrc, Target as Database};
use super::{Layout, Mapping};
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::escape::escape;
use crate::finding::Action;
use crate::model::{Conversation, Dialect, PartKind};
use crate::source::sqlite::{self, quote_ident};
use crate::write::atomic;
use crate::write::sqlite::{db_err, edit_sqlite_copy};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

/// What this writer carries out: message tables are repaired with inserts
/// only, so only a lost tool-result message is rebuilt.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(a, Action::RebuildResults { .. })
}

/// Where the rebuilt rows go.
enum Out {
    /// A copy of a SQLite file (none on a dry run).
    Sqlite(Option<std::path::PathBuf>),
    /// A PostgreSQL source, never modified: a script, another database, or
    /// both (neither on a dry run).
    Postgres {
        source: Box<Database>,
        script: Option<std::path::PathBuf>,
        target: Option<Box<(Database, ::postgres::Client)>>,
    },
}

/// The writer of one repair: the rows to insert, planned job by job.
pub struct RowsWriter {
    input: std::path::PathBuf,
    force: bool,
    policy: Policy,
    mapping: Option<Mapping>,
    out: Out,
    plan: Plan,
}

/// A writer for `t`. For PostgreSQL, a `--target` that is the source is
/// refused here, before any conversation is read.
pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    let out = if crate::source::is_postgres(t.input) {
        let source = pgsrc::target(&t.input.to_string_lossy())?;
        let target = match (t.target, t.dry_run) {
            (Some(url), false) => {
                let db = pgsrc::target(url)?;
                let client = open_target(&source, &db)?;
                Some(Box::new((db, client)))
            }
            _ => None,
        };
        Out::Postgres {
            source: Box::new(source),
            script: t.emit_sql.filter(|_| !t.dry_run).map(Into::into),
            target,
        }
    } else {
        Out::Sqlite(t.output.map(Into::into))
    };
    Ok(Box::new(RowsWriter {
        input: t.input.to_path_buf(),
        force: t.force,
        policy: *t.policy,
        mapping: t.mapping.cloned(),
        out,
        plan: Plan::default(),
    }))
}

impl Writer for RowsWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        plan_conversation(
            conv,
            planned,
            &self.policy,
            &mut self.plan,
            &mut log.edits,
            &mut log.left,
        );
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let RowsWriter {
            input,
            force,
            mapping,
            out,
            plan,
            ..
        } = *self;
        match out {
            Out::Sqlite(Some(output)) => {
                write_sqlite(&input, &output, &plan, mapping.as_ref(), force)
            }
            Out::Sqlite(None) => Ok(()),
            Out::Postgres {
                source,
                script,
                target,
            } => {
                let layout = postgres_layout(&source, mapping.as_ref())?;
                if let Some(sql) = script {
                    let text = self::script(&source.display, &layout, &plan);
                    write_script(&sql, &text, force)?;
                    log.sql = Some(sql.display().to_string());
                }
                if let Some(target) = target {
                    let (db, mut client) = *target;
                    let n = apply(&mut client, &db, &layout, &plan, &mut log.edits)?;
                    log.target = Some(db.display.clone());
                    log.inserted = Some(n);
                }
                Ok(())
            }
        }
    }
}

/// One row to insert.
#[derive(Debug, Clone)]
pub struct Insert {
    /// The conversation column's value, as text.
    pub conversation: String,
    pub index: i64,
    /// The `content_blocks` JSON.
    pub content: String,
    /// The log entry of this insert.
    pub entry: usize,
    /// What it is, for the script's comment (one line).
    pub comment: String,
}

#[derive(Default)]
pub struct Plan {
    pub inserts: Vec<Insert>,
}

/// Plan the inserts for one conversation.
pub fn plan_conversation(
    conv: &Conversation,
    planned: &[Planned<'_>],
    policy: &Policy,
    plan: &mut Plan,
    log: &mut Vec<Edit>,
    left: &mut Vec<Left>,
) {
    let Some(table) = &conv.table else { return };
    for p in planned {
        for action in &p.fix.actions {
            let Action::RebuildResults {
                message,
                index,
                calls,
            } = action
            else {
                continue;
            };
            let m = &conv.messages[*message];
            let mut blocks = Vec::new();
            let mut sources = Vec::new();
            let mut blocked = Vec::new();
            let mut synthesized = false;
            for &pi in calls {
                let PartKind::ToolCall { id, name, .. } = &m.parts[pi].kind else {
                    continue;
                };
                let exec = table
                    .executions
                    .as_ref()
                    .and_then(|ex| ex.for_call(id, m.stored_index));
                let row = |e: &crate::model::Execution| match e.id {
                    Some(r) => format!("execution id={r}"),
                    None => "its execution".to_string(),
                };
                match exec.and_then(|e| e.result().map(|r| (e, r))) {
                    Some((e, (content, false))) => {
                        blocks.push(
                            json!({"type": "tool_result", "tool_use_id": id, "content": content}),
                        );
                        sources.push(format!("`{id}` from {} (complete)", row(e)));
                    }
                    Some((e, (content, true))) => {
                        blocks.push(json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": true}));
                        sources.push(format!("`{id}` from {} (failed)", row(e)));
                    }
                    None => {
                        let why = match exec {
                            Some(e) => {
                                format!("`{id}` (`{name}`): {} is `{}`", row(e), e.status.as_str())
                            }
                            None => format!("`{id}` (`{name}`): no execution record"),
                        };
                        match (policy.orphan_calls, policy.synthesize) {
                            (OrphanPolicy::Placeholder, true) => {
                                synthesized = true;
                                blocks.push(json!({"type": "tool_result", "tool_use_id": id, "content": PLACEHOLDER, "is_error": true}));
                                sources.push(format!("`{id}` as a placeholder (no settled execution)"));
                            }
                            (OrphanPolicy::Placeholder, false) => blocked.push(format!(
                                "{why}; synthesizing is off: a placeholder would invent content"
                            )),
                            (OrphanPolicy::Report, _) => {
                                blocked.push(format!("{why}; orphan-calls policy is `report`"))
                            }
                            (OrphanPolicy::Drop, _) => blocked.push(format!(
                                "{why}; orphan-calls policy `drop` would edit the assistant row, and message tables are repaired with inserts only"
                            )),
                        }
                    }
                }
            }
            if !blocked.is_empty() {
                left.push(Left {
                    rule: p.finding.rule,
                    conversation: conv.id.clone(),
                    location: p.finding.loc.clone(),
                    summary: p.finding.summary.clone(),
                    reason: format!(
                        "{} (a gap is rebuilt whole or not at all)",
                        blocked.join("; ")
                    ),
                });
                continue;
            }
            let content = serde_json::to_string(&Value::Array(blocks)).expect("JSON");
            let description = format!(
                "inserted the `user` tool-result message at `{}` {index}: {}",
                table.index_column,
                sources.join(", ")
            );
            plan.inserts.push(Insert {
                conversation: table.conversation_key.clone(),
                index: *index,
                content: content.clone(),
                entry: log.len(),
                comment: escape(&format!(
                    "{}: {}",
                    p.finding.rule,
                    description.replace('`', "")
                ))
                .into_owned(),
            });
            log.push(Edit {
                after: Some(content),
                synthesized,
                ids: p.finding.ids.clone(),
                ..Edit::new(
                    p.finding.rule,
                    &conv.id,
                    "rebuild-results",
                    description,
                    table.loc(*index, None),
                )
            });
        }
    }
}

/// Copy a SQLite input with the backup API, insert the rebuilt rows, check
/// integrity, and move the copy into place.
pub fn write_sqlite(
    input: &Path,
    output: &Path,
    plan: &Plan,
    mapping: Option<&Mapping>,
    force: bool,
) -> Result<()> {
    let snap = sqlite::open(input)?;
    let layout = super::sqlite_layout(&snap.conn, mapping).map_err(|_| {
        Error::input(
            input,
            "the message table changed while it was being repaired",
        )
    })?;
    edit_sqlite_copy(input, output, force, snap, |tx| {
        let sql = format!(
            "INSERT INTO {} ({}, {}, {}, {}) VALUES (?1, ?2, 'user', ?3)",
            layout.qualified(&layout.table),
            quote_ident(&layout.conversation),
            quote_ident(&layout.index),
            quote_ident(&layout.role),
            quote_ident(&layout.content),
        );
        let mut st = tx.prepare(&sql).map_err(|e| db_err(output, e))?;
        for ins in &plan.inserts {
            let key: rusqlite::types::Value = match ins.conversation.parse::<i64>() {
                Ok(i) => i.into(),
                Err(_) => ins.conversation.clone().into(),
            };
            st.execute(rusqlite::params![key, ins.index, ins.content])
                .map_err(|e| db_err(output, e))?;
        }
        Ok(())
    })
}

/// A PostgreSQL string literal (standard_conforming_strings is set on by
/// the script, so only quotes need doubling).
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn typed(value: &str, ty: &str) -> String {
    if ty.is_empty() {
        literal(value)
    } else {
        format!("CAST({} AS {ty})", literal(value))
    }
}

/// The INSERT statements of a plan, one per rebuilt message, each doing
/// nothing when its row is already there.
pub fn statements(layout: &Layout, plan: &Plan) -> Vec<(String, String)> {
    let t = layout.qualified(&layout.table);
    let (c, i, r, x) = (
        quote_ident(&layout.conversation),
        quote_ident(&layout.index),
        quote_ident(&layout.role),
        quote_ident(&layout.content),
    );
    let empty = Default::default();
    let types: &[String; 4] = layout.types.as_ref().unwrap_or(&empty);
    plan.inserts
        .iter()
        .map(|ins| {
            let key = typed(&ins.conversation, &types[0]);
            let idx = ins.index.to_string();
            let values = format!(
                "{key}, CAST({idx} AS {}), {}, {}",
                if types[1].is_empty() { "bigint" } else { &types[1] },
                typed("user", &types[2]),
                typed(&ins.content, &types[3]),
            );
            let sql = if layout.dialect == Dialect::Gbrain {
                // gbrain's UNIQUE (job_id, message_idx), as gbrain itself writes.
                format!(
                    "INSERT INTO {t} ({c}, {i}, {r}, {x}) VALUES ({values}) ON CONFLICT ({c}, {i}) DO NOTHING;"
                )
            } else {
                // A mapped table may have no unique constraint to conflict on.
                format!(
                    "INSERT INTO {t} ({c}, {i}, {r}, {x}) SELECT {values} WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE {c} = {key} AND {i} = {idx});"
                )
            };
            (ins.comment.clone(), sql)
        })
        .collect()
}

/// The reviewable script: one transaction of idempotent INSERTs.
pub fn script(source: &str, layout: &Layout, plan: &Plan) -> String {
    let mut s = String::new();
    s.push_str(&format!("-- chatfsck repair of {}\n", escape(source)));
    s.push_str(&format!(
        "-- chatfsck {}: {} row(s) to insert into {}; no existing row is changed.\n",
        env!("CARGO_PKG_VERSION"),
        plan.inserts.len(),
        escape(&layout.qualified(&layout.table))
    ));
    s.push_str("-- Review, then apply with: psql -v ON_ERROR_STOP=1 -f THIS_FILE postgres://…\n");
    s.push_str(
        "-- Each INSERT does nothing when its row already exists: running it twice is harmless.\n",
    );
    s.push_str("BEGIN;\nSET LOCAL standard_conforming_strings = on;\nSET LOCAL client_encoding = 'UTF8';\n");
    for (comment, sql) in statements(layout, plan) {
        s.push_str(&format!(
            "-- {}\n{sql}\n",
            comment.replace(['\n', '\r'], " ")
        ));
    }
    s.push_str("COMMIT;\n");
    s
}

/// Write the script atomically (with the default permissions: there is no
/// input file whose mode it should copy).
pub fn write_script(path: &Path, text: &str, force: bool) -> Result<()> {
    atomic::write_bytes(path, text.as_bytes(), force)
}

/// Whether the database `target` connects to is the one `probe` is
/// connected to: `probe` carries a unique application name, and a target
/// in the same cluster and database sees that session.
fn same_database(
    probe: &mut ::postgres::Client,
    target: &mut ::postgres::Client,
) -> std::result::Result<bool, ::postgres::Error> {
    let tag = format!(
        "chatfsck-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    probe.batch_execute(&format!("SET application_name = {}", literal(&tag)))?;
    let pid: i32 = probe.query_one("SELECT pg_backend_pid()", &[])?.get(0);
    let row = target.query_one(
        "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND application_name = $2 AND datname = current_database())",
        &[&pid, &tag],
    )?;
    Ok(row.get(0))
}

/// The source's layout (for the statements), resolved over a connection of
/// its own.
fn postgres_layout(source: &Database, mapping: Option<&Mapping>) -> Result<Layout> {
    let mut probe = pgsrc::connect(source)?;
    pgsrc::layout(&mut probe, source, mapping)
}

/// Connect to a `--target`, refusing the source itself however it is
/// spelled (the same URL, or a database where a session of the source is
/// visible as connected to it).
pub fn open_target(source: &Database, target: &Database) -> Result<::postgres::Client> {
    let refuse = || {
        Error::Usage(format!(
            "refusing to apply the repair to {}: it is the source database (evidence, never modified); restore a copy and name that with --target",
            target.display
        ))
    };
    if source.display == target.display {
        return Err(refuse());
    }
    let mut probe = pgsrc::connect(source)?;
    let mut client = pgsrc::connect_rw(target)?;
    let same = same_database(&mut probe, &mut client).map_err(|e| Error::Output {
        path: target.path(),
        cause: pgsrc::cause(&e),
    })?;
    if same {
        return Err(refuse());
    }
    Ok(client)
}

/// Apply the statements to an open target in one transaction. Returns how
/// many rows were inserted (the others were already there).
pub fn apply(
    client: &mut ::postgres::Client,
    target: &Database,
    layout: &Layout,
    plan: &Plan,
    log: &mut [Edit],
) -> Result<u64> {
    let out = |e: ::postgres::Error| Error::Output {
        path: target.path(),
        cause: pgsrc::cause(&e),
    };
    let mut tx = client.transaction().map_err(out)?;
    let mut inserted = 0;
    for ((_, sql), ins) in statements(layout, plan).iter().zip(&plan.inserts) {
        let n = tx.execute(sql.as_str(), &[]).map_err(out)?;
        inserted += n;
        if n == 0 {
            log[ins.entry]
                .description
                .push_str(" (already present in the target: nothing inserted)");
        }
    }
    tx.commit().map_err(out)?;
    Ok(inserted)
}
