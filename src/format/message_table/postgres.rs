//! PostgreSQL message tables (gbrain, seed 003), read through a server-side
//! cursor.
//!
//! A path argument `postgres:` (everything from the `PG*` environment), or a
//! URL `postgres://…` / `postgresql://…`, selects this source. The database
//! is evidence: the session is read-only (`default_transaction_read_only`),
//! the rows are read inside one `READ ONLY REPEATABLE READ` transaction (one
//! snapshot for messages and executions), and both cursors (`DECLARE …
//! CURSOR`, `FETCH n`) stream in (job_id, message_idx) order, so millions of
//! rows pass through a few conversations of memory. Identifiers are always
//! quoted, and a mapping's names are checked against the catalog first.

use crate::source::pipeline::Dealer;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, IsolationLevel, NoTls};

use super::{
    self as rows, Catalog, Layout, LayoutError, Mapping, RawConv, RawExec, RawMsg, RowReader,
};
use crate::error::{Error, Result};
use crate::model::{Format, SourceInfo};
use crate::source::sqlite::quote_ident;

/// Rows fetched per round trip.
const BATCH: usize = 500;

/// Whether a command-line path names a PostgreSQL database.
pub fn is_target(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.starts_with("postgres:") || s.starts_with("postgresql:")
}

/// A database to connect to, and how to name it without its password.
#[derive(Clone)]
pub struct Target {
    pub config: Config,
    /// `postgres://user@host:port/db`: no password, ever.
    pub display: String,
}

impl Target {
    pub fn path(&self) -> PathBuf {
        PathBuf::from(&self.display)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Parse a target, filling what it leaves out from the `PG*` environment
/// variables the way libpq does (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
/// `PGDATABASE`, `PGCONNECT_TIMEOUT`).
pub fn target(arg: &str) -> Result<Target> {
    let bare = matches!(arg, "postgres:" | "postgresql:");
    if !bare && !arg.starts_with("postgres://") && !arg.starts_with("postgresql://") {
        return Err(Error::Usage(format!(
            "`{}` is not a PostgreSQL URL (use postgres://user@host:port/db, or `postgres:` to take everything from the PG* environment variables)",
            redact(arg)
        )));
    }
    let mut config = if bare {
        Config::new()
    } else {
        arg.parse::<Config>().map_err(|e| {
            Error::Usage(format!(
                "`{}` is not a valid PostgreSQL URL ({})",
                redact(arg),
                cause(&e)
            ))
        })?
    };
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(h) => {
                for h in h.split(',') {
                    if h.starts_with('/') {
                        config.host_path(h);
                    } else {
                        config.host(h);
                    }
                }
            }
            None if Path::new("/var/run/postgresql").is_dir() => {
                config.host_path("/var/run/postgresql");
            }
            None => {
                config.host("localhost");
            }
        }
    }
    if config.get_ports().is_empty()
        && let Some(p) = env("PGPORT")
    {
        let port = p.parse::<u16>().map_err(|_| {
            Error::Usage(format!(
                "PGPORT=`{}` is not a port number",
                crate::escape::escape(&p)
            ))
        })?;
        config.port(port);
    }
    if config.get_user().is_none()
        && let Some(u) = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
    {
        config.user(&u);
    }
    if config.get_password().is_none()
        && let Some(p) = env("PGPASSWORD")
    {
        config.password(p);
    }
    if config.get_dbname().is_none()
        && let Some(d) = env("PGDATABASE")
    {
        config.dbname(&d);
    }
    if config.get_connect_timeout().is_none() {
        let secs = env("PGCONNECT_TIMEOUT")
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(10);
        config.connect_timeout(Duration::from_secs(secs.max(1)));
    }
    if config.get_application_name().is_none() {
        config.application_name("chatfsck");
    }
    let display = display(&config);
    Ok(Target { config, display })
}

/// `postgres://user@host:port/db`, from the resolved configuration.
fn display(c: &Config) -> String {
    let user = c
        .get_user()
        .map(String::from)
        .or_else(|| env("USER"))
        .unwrap_or_default();
    let host = match c.get_hosts().first() {
        Some(Host::Tcp(h)) if h.contains(':') => format!("[{h}]"),
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => format!("[{}]", p.display()),
        None => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    let db = c
        .get_dbname()
        .map(String::from)
        .unwrap_or_else(|| user.clone());
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    format!("postgres://{at}{host}:{port}/{db}")
}

/// A URL as typed, with any password removed, for messages about it.
fn redact(arg: &str) -> String {
    let mut s = arg.to_string();
    if let Some(scheme) = s.find("://") {
        let rest = scheme + 3;
        let end = s[rest..].find(['/', '?']).map_or(s.len(), |i| rest + i);
        if let Some(at) = s[rest..end].rfind('@') {
            let userinfo = &s[rest..rest + at];
            if let Some(colon) = userinfo.find(':') {
                s.replace_range(rest + colon..rest + at, ":***");
            }
        }
    }
    if let Some(q) = s.find("password=") {
        let end = s[q..].find('&').map_or(s.len(), |i| q + i);
        s.replace_range(q + "password=".len()..end, "***");
    }
    crate::escape::escape(&s).into_owned()
}

/// One line for a PostgreSQL error: the server's message, or the
/// connection failure without OS error codes.
pub fn cause(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut s = e.to_string();
    if let Some(src) = std::error::Error::source(e) {
        let inner = src.to_string();
        if !s.contains(&inner) {
            s = format!("{s}: {inner}");
        }
    }
    if s.contains("TLS") || s.contains("tls") {
        return "the server requires TLS, which this build of chatfsck does not speak (connect with sslmode=disable or prefer)".into();
    }
    let s = s.lines().next().unwrap_or_default().to_string();
    let s = match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    };
    s.replace("error connecting to server: ", "cannot connect: ")
        .to_lowercase()
}

/// Connect, read-only by default for every transaction of the session.
pub fn connect(t: &Target) -> Result<Client> {
    let mut client = t
        .config
        .connect(NoTls)
        .map_err(|e| Error::input(t.path(), cause(&e)))?;
    client
        .batch_execute("SET default_transaction_read_only = on")
        .map_err(|e| Error::input(t.path(), cause(&e)))?;
    Ok(client)
}

/// Connect for writing (a repair's `--target`, never the source).
pub fn connect_rw(t: &Target) -> Result<Client> {
    t.config.connect(NoTls).map_err(|e| Error::Output {
        path: t.path(),
        cause: cause(&e),
    })
}

struct PgCatalog<'a>(&'a mut Client);

impl Catalog for PgCatalog<'_> {
    fn columns(
        &mut self,
        table: &str,
    ) -> std::result::Result<Option<(Option<String>, Vec<(String, String)>)>, String> {
        // The first schema of the search path that has the table, as an
        // unqualified name would resolve; names are parameters, never SQL.
        let schema = self
            .0
            .query_opt(
                "SELECT s.n FROM unnest(current_schemas(false)) WITH ORDINALITY AS s(n, o) \
                 WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace \
                               WHERE ns.nspname = s.n AND c.relname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')) \
                 ORDER BY s.o LIMIT 1",
                &[&table],
            )
            .map_err(|e| cause(&e))?;
        let Some(schema) = schema.map(|r| r.get::<_, String>(0)) else {
            return Ok(None);
        };
        let rows = self
            .0
            .query(
                "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod) \
                 FROM pg_catalog.pg_attribute a \
                 JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
                 JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace \
                 WHERE ns.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped \
                 ORDER BY a.attnum",
                &[&schema, &table],
            )
            .map_err(|e| cause(&e))?;
        let cols = rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .collect();
        Ok(Some((Some(schema), cols)))
    }

    fn tables(&mut self) -> std::result::Result<Vec<String>, String> {
        let rows = self
            .0
            .query(
                "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace \
                 WHERE ns.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1",
                &[],
            )
            .map_err(|e| cause(&e))?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    fn is_integer(&self, ty: &str) -> bool {
        matches!(ty, "smallint" | "integer" | "bigint")
    }
}

/// The tables (and views) on the search path of the database `arg` names,
/// for the stores that recognise themselves by them.
pub fn tables(arg: &Path) -> Result<Vec<String>> {
    let t = target(&arg.to_string_lossy())?;
    let mut client = connect(&t)?;
    PgCatalog(&mut client)
        .tables()
        .map_err(|c| Error::input(t.path(), c))
}

/// Resolve the layout of a PostgreSQL database.
pub fn layout(client: &mut Client, t: &Target, mapping: Option<&Mapping>) -> Result<Layout> {
    rows::resolve(&mut PgCatalog(client), mapping).map_err(|e| match e {
        LayoutError::NotHistory(c) => Error::not_history(t.path(), format!("database {c}")),
        LayoutError::Bad(c) | LayoutError::Db(c) => Error::input(t.path(), c),
    })
}

/// The message rows in (conversation, index, id) order. Every reference is
/// qualified with the table's alias: an unqualified `ORDER BY "job_id"`
/// would sort by the output column `CAST("job_id" AS text)`, as text.
fn messages_sql(l: &Layout) -> String {
    let q = |c: &str| format!("m.{}", quote_ident(c));
    let (id, order_id) = match &l.id {
        Some(id) => (format!("CAST({} AS bigint)", q(id)), format!(", {}", q(id))),
        None => ("CAST(NULL AS bigint)".to_string(), String::new()),
    };
    format!(
        "SELECT {id} AS c0, CAST({c} AS text) AS c1, CAST({i} AS bigint) AS c2, CAST({r} AS text) AS c3, CAST({x} AS text) AS c4 \
         FROM {t} AS m ORDER BY {c}, {i}{order_id}",
        c = q(&l.conversation),
        i = q(&l.index),
        r = q(&l.role),
        x = q(&l.content),
        t = l.qualified(&l.table),
    )
}

/// The execution rows in the same conversation order as the messages.
fn executions_sql(l: &Layout, table: &str, ordinal: bool) -> String {
    let (ord, order_ord) = if ordinal {
        ("CAST(e.\"ordinal\" AS bigint)", ", e.\"ordinal\"")
    } else {
        ("CAST(NULL AS bigint)", "")
    };
    format!(
        "SELECT CAST(e.\"id\" AS bigint) AS c0, CAST(e.\"job_id\" AS text) AS c1, CAST(e.\"message_idx\" AS bigint) AS c2, {ord} AS c3, \
         CAST(e.\"tool_use_id\" AS text) AS c4, CAST(e.\"tool_name\" AS text) AS c5, CAST(e.\"status\" AS text) AS c6, \
         CAST(e.\"output\" AS text) AS c7, CAST(e.\"error\" AS text) AS c8 \
         FROM {} AS e ORDER BY e.\"job_id\", e.\"message_idx\"{order_ord}, e.\"id\"",
        l.qualified(table)
    )
}

/// A server-side cursor read `batch` rows a round trip (`FETCH n`): the
/// one way every PostgreSQL reader here streams a table (message tables,
/// LangGraph's threads, Open WebUI's chats).
pub struct Cursor {
    name: &'static str,
    batch: usize,
    buf: VecDeque<postgres::Row>,
    done: bool,
}

impl Cursor {
    /// The cursor `name`, declared by the caller in its transaction.
    pub fn new(name: &'static str, batch: usize) -> Cursor {
        Cursor {
            name,
            batch,
            buf: VecDeque::new(),
            done: false,
        }
    }

    /// The next row, fetching the next batch when the last is used up.
    pub fn next(
        &mut self,
        client: &mut impl postgres::GenericClient,
    ) -> std::result::Result<Option<postgres::Row>, String> {
        if self.buf.is_empty() && !self.done {
            let rows = client
                .query(&format!("FETCH {} FROM {}", self.batch, self.name), &[])
                .map_err(|e| cause(&e))?;
            self.done = rows.len() < self.batch;
            self.buf.extend(rows);
        }
        Ok(self.buf.pop_front())
    }
}

struct PgReader<'a> {
    tx: postgres::Transaction<'a>,
    msgs: Cursor,
    execs: Cursor,
    has_execs: bool,
}

impl RowReader for PgReader<'_> {
    fn next_message(&mut self) -> std::result::Result<Option<RawMsg>, String> {
        let Some(r) = self.msgs.next(&mut self.tx)? else {
            return Ok(None);
        };
        let g = |e: postgres::Error| cause(&e);
        let index: Option<i64> = r.try_get(2).map_err(g)?;
        Ok(Some(RawMsg {
            rowid: r.try_get(0).map_err(g)?,
            conv: r
                .try_get::<_, Option<String>>(1)
                .map_err(g)?
                .unwrap_or_else(|| "NULL".into()),
            index: index.ok_or_else(|| "NULL".to_string()),
            role: r.try_get(3).map_err(g)?,
            content: r.try_get(4).map_err(g)?,
        }))
    }

    fn next_execution(&mut self) -> std::result::Result<Option<RawExec>, String> {
        if !self.has_execs {
            return Ok(None);
        }
        let Some(r) = self.execs.next(&mut self.tx)? else {
            return Ok(None);
        };
        let g = |e: postgres::Error| cause(&e);
        Ok(Some(RawExec {
            id: r.try_get(0).map_err(g)?,
            conv: r
                .try_get::<_, Option<String>>(1)
                .map_err(g)?
                .unwrap_or_else(|| "NULL".into()),
            message_index: r.try_get(2).map_err(g)?,
            ordinal: r.try_get(3).map_err(g)?,
            tool_use_id: r
                .try_get::<_, Option<String>>(4)
                .map_err(g)?
                .unwrap_or_default(),
            tool_name: r
                .try_get::<_, Option<String>>(5)
                .map_err(g)?
                .unwrap_or_default(),
            status: r
                .try_get::<_, Option<String>>(6)
                .map_err(g)?
                .unwrap_or_default(),
            output: r.try_get(7).map_err(g)?,
            error: r.try_get(8).map_err(g)?,
        }))
    }
}

fn read(mut client: Client, t: &Target, layout: &Layout, out: Dealer<RawConv>) {
    let path = t.path();
    let fail = |cause: String| Err(Error::input(&path, cause));
    let tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(IsolationLevel::RepeatableRead)
        .start();
    let mut tx = match tx {
        Ok(tx) => tx,
        Err(e) => {
            let _ = out.send(fail(cause(&e)));
            return;
        }
    };
    let mut declare = format!(
        "DECLARE chatfsck_messages NO SCROLL CURSOR FOR {};",
        messages_sql(layout)
    );
    if let Some((table, ordinal)) = &layout.executions {
        declare.push_str(&format!(
            "DECLARE chatfsck_executions NO SCROLL CURSOR FOR {};",
            executions_sql(layout, table, *ordinal)
        ));
    }
    if let Err(e) = tx.batch_execute(&declare) {
        let _ = out.send(fail(cause(&e)));
        return;
    }
    let mut reader = PgReader {
        tx,
        msgs: Cursor::new("chatfsck_messages", BATCH),
        execs: Cursor::new("chatfsck_executions", BATCH),
        has_execs: layout.executions.is_some(),
    };
    rows::pump(&mut reader, &path, &out);
    // Read-only: nothing to commit; ending the transaction closes the cursors.
    let _ = reader.tx.rollback();
}

/// Open a PostgreSQL database as a source of conversations.
pub fn open(arg: &Path, mapping: Option<&Mapping>) -> Result<Box<dyn crate::source::Source>> {
    let t = target(&arg.to_string_lossy())?;
    let mut client = connect(&t)?;
    let layout = layout(&mut client, &t, mapping)?;
    let info = Arc::new(SourceInfo {
        path: t.path(),
        format: Format::PostgresTable,
        dialect: layout.dialect,
    });
    let (t2, l2) = (t.clone(), layout.clone());
    Ok(Box::new(rows::start(&t.path(), info, layout, move |tx| {
        read(client, &t2, &l2, tx)
    })?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://alice:s3cret@db:5432/app?sslmode=disable"),
            "postgres://alice:***@db:5432/app?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://h/app?user=u&password=pw&x=1"),
            "postgresql://h/app?user=u&password=***&x=1"
        );
        let t = target("postgres://alice:s3cret@127.0.0.1:5999/app").unwrap();
        assert_eq!(t.display, "postgres://alice@127.0.0.1:5999/app");
    }

    #[test]
    fn what_selects_postgres() {
        for yes in ["postgres:", "postgres://h/db", "postgresql://h/db"] {
            assert!(is_target(Path::new(yes)), "{yes}");
        }
        for no in ["pg.db", "./postgres", "history.jsonl"] {
            assert!(!is_target(Path::new(no)), "{no}");
        }
        assert!(matches!(target("postgres:x"), Err(Error::Usage(_))));
    }
}
