//! Repair of Open WebUI on PostgreSQL. The source is never modified: the
//! repair is a reviewable SQL script (`--emit-sql`) or is applied to
//! another database (`--target`, a restored copy; the source itself is
//! refused), as LangGraph's (`langgraph::pg_writer`) and the message
//! tables' are.
//!
//! Each broken chat's `chat` column is re-linked as in `webui.db`
//! ([`super::writer`]): one `UPDATE` per chat, which applies only while the
//! column still holds the text the repair read (`chat::text = …`). Run
//! twice, the second run finds other text and changes nothing; a chat
//! edited since is left alone. Nothing else changes.

use std::path::PathBuf;

use super::TABLE;
use super::writer::{relink, relink_loc};
use crate::error::{Error, Result};
use crate::escape::escape;
use crate::format::message_table::postgres::{self as pg, Target as Database};
use crate::format::message_table::writer::{literal, open_target, write_script};
use crate::model::Conversation;
use crate::write::{Log, Planned, Target, Writer};

pub struct PgWriter {
    input: PathBuf,
    force: bool,
    source: Database,
    /// A read-only session on the source, opened on the first chat to mend.
    client: Option<postgres::Client>,
    script: Option<PathBuf>,
    target: Option<Box<(Database, postgres::Client)>>,
    /// (chat id, edit in the log, statement).
    updates: Vec<(String, usize, String)>,
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
        source,
        client: None,
        script: t.emit_sql.filter(|_| !t.dry_run).map(Into::into),
        target,
        updates: Vec::new(),
    }))
}

impl Writer for PgWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        if relink_loc(planned).is_none() {
            return Ok(());
        }
        if self.client.is_none() {
            self.client = Some(pg::connect(&self.source)?);
        }
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        let row = client
            .query_opt(
                "SELECT chat::text FROM chat WHERE id::text = $1",
                &[&conv.id],
            )
            .map_err(|e| Error::input(&self.input, pg::cause(&e)))?;
        let Some(before) = row.and_then(|r| r.get::<_, Option<String>>(0)) else {
            return Err(Error::input(
                &self.input,
                format!("chat {} is no longer in the database", conv.id),
            ));
        };
        let at = super::row_loc(&conv.id, None);
        if let Some(after) = relink(conv, planned, &before, at, &self.input, log)? {
            let stmt = format!(
                "UPDATE {TABLE} SET chat = CAST({} AS json) WHERE id = {} AND chat::text = {};",
                literal(&after),
                literal(&conv.id),
                literal(&before)
            );
            self.updates
                .push((conv.id.clone(), log.edits.len() - 1, stmt));
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let PgWriter {
            force,
            source,
            script,
            target,
            updates,
            ..
        } = *self;
        if let Some(sql) = script {
            let mut s = String::new();
            s.push_str(&format!(
                "-- chatfsck repair of {}\n",
                escape(&source.display)
            ));
            s.push_str(&format!(
                "-- chatfsck {}: {} Open WebUI chat(s) re-linked; nothing else is changed.\n",
                env!("CARGO_PKG_VERSION"),
                updates.len()
            ));
            s.push_str(
                "-- Review, then apply with: psql -v ON_ERROR_STOP=1 -f THIS_FILE postgres://…\n",
            );
            s.push_str(
                "-- Each UPDATE applies only while the chat holds the text the repair read: running it twice is harmless.\n",
            );
            s.push_str("BEGIN;\nSET LOCAL standard_conforming_strings = on;\nSET LOCAL client_encoding = 'UTF8';\n");
            for (chat, _, stmt) in &updates {
                s.push_str(&format!(
                    "-- chat {}\n{stmt}\n",
                    escape(chat).replace(['\n', '\r'], " ")
                ));
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
            for (_, entry, stmt) in &updates {
                let n = tx.execute(stmt.as_str(), &[]).map_err(out)?;
                if n == 0 {
                    log.edits[*entry]
                        .description
                        .push_str(" (the target's chat is not the one read: nothing updated)");
                }
            }
            tx.commit().map_err(out)?;
            // Rows are updated, none inserted: `inserted` stays unset.
            log.target = Some(db.display.clone());
        }
        Ok(())
    }
}
