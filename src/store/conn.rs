//! The two databases behind [`super::Store`]: a SQLite file (rusqlite) and a PostgreSQL server
//! (postgres, over TLS as the URL's sslmode says: `super::tls`). Each runs the same SQL (`$N` parameters) and gives rows as [`Value`]s, so the
//! store's code is written once; only connecting, locking and the value conversions differ.

use super::rows::Value;
use crate::client::ApiKey;
use crate::config::store::{PgHost, PgUrl, SslMode, StoreUrl};
use crate::error::BadInput;
use anyhow::Result;
use std::time::Duration;

/// An open connection.
pub(super) enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: Box<postgres::Client>,
        /// To redact from every error, though no server is known to echo it.
        password: Option<ApiKey>,
    },
}

/// A result column's type, as the schema declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Real,
    Text,
}

/// A result column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
}

/// Where a streamed query's result goes: its columns once, then each row as it comes.
pub trait RowSink {
    fn columns(&mut self, columns: &[Column]) -> Result<()>;
    fn row(&mut self, row: Vec<Value>) -> Result<()>;
}

/// Every row, held (for the small reads of the store's own code).
struct Collect(Vec<Vec<Value>>);

impl RowSink for Collect {
    fn columns(&mut self, _: &[Column]) -> Result<()> {
        Ok(())
    }

    fn row(&mut self, row: Vec<Value>) -> Result<()> {
        self.0.push(row);
        Ok(())
    }
}

/// What a write transaction holds against other processes writing the same database.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lock<'a> {
    /// The schema: one process migrates at a time.
    Schema,
    /// One run: two pushes of it follow each other; pushes of different runs run side by side
    /// on a server.
    Run(&'a str),
}

/// How long a connection attempt or a wait for a lock may take (docs/store.md and
/// docs/security.md say 30 s).
pub(super) const WAIT: Duration = Duration::from_secs(30);

/// Another process held a lock the whole of [`WAIT`].
#[derive(Debug, thiserror::Error)]
#[error(
    "the database is locked by another process (waited {} s); try again when it is done",
    WAIT.as_secs()
)]
pub(super) struct Locked;

/// Whether `e` is a lock still held after [`WAIT`] (SQLite's busy or locked, PostgreSQL's
/// lock_timeout).
pub(super) fn is_locked(e: &anyhow::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    e.chain().any(|c| {
        c.is::<Locked>()
            || c.downcast_ref::<rusqlite::Error>()
                .and_then(rusqlite::Error::sqlite_error_code)
                .is_some_and(|code| matches!(code, DatabaseBusy | DatabaseLocked))
    })
}

/// The advisory lock key of the schema (PostgreSQL): "gpassk" in ASCII.
const SCHEMA_LOCK: i64 = 0x6770_6173_736b;

impl Conn {
    /// Connects; every failure is one line naming the store and the cause, exit 2.
    pub(super) fn open(url: &StoreUrl) -> Result<Conn> {
        match url {
            StoreUrl::Sqlite(path) => open_sqlite(url, path),
            StoreUrl::Postgres(pg) => open_postgres(url, pg),
        }
    }

    /// Runs statements without parameters (the schema's migrations).
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql)?,
            Conn::Postgres { client, password } => client
                .batch_execute(sql)
                .map_err(|e| pg_error(e, password))?,
        }
        Ok(())
    }

    /// Runs one statement; the rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        Ok(match self {
            Conn::Sqlite(c) => c
                .prepare_cached(sql)?
                .execute(rusqlite::params_from_iter(params))? as u64,
            Conn::Postgres { client, password } => {
                let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    params.iter().map(|v| v as _).collect();
                client
                    .execute(sql, &params)
                    .map_err(|e| pg_error(e, password))?
            }
        })
    }

    /// Every row of a query.
    pub(super) fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let mut rows = Collect(Vec::new());
        self.each(sql, params, &mut rows)?;
        Ok(rows.0)
    }

    /// Streams a query into `sink` (nothing held).
    pub(super) fn each(
        &mut self,
        sql: &str,
        params: &[Value],
        sink: &mut dyn RowSink,
    ) -> Result<()> {
        match self {
            Conn::Sqlite(c) => sqlite_each(c, sql, params, sink),
            Conn::Postgres { client, password } => {
                postgres_each(client, sql, params, sink).map_err(|e| redact(e, password))
            }
        }
    }

    /// Starts a write transaction holding `lock`.
    pub(super) fn begin(&mut self, lock: Lock) -> Result<()> {
        match self {
            // One writer at a time: a second waits (busy timeout), never reads stale rows.
            Conn::Sqlite(c) => c.execute_batch("BEGIN IMMEDIATE")?,
            Conn::Postgres { .. } => {
                self.batch("BEGIN")?;
                match lock {
                    Lock::Schema => self.execute(
                        "SELECT pg_advisory_xact_lock($1)",
                        &[Value::Int(SCHEMA_LOCK)],
                    )?,
                    Lock::Run(id) => self.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended($1, $2))",
                        &[Value::Text(id.to_string()), Value::Int(SCHEMA_LOCK)],
                    )?,
                };
            }
        }
        Ok(())
    }

    pub(super) fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    pub(super) fn rollback(&mut self) -> Result<()> {
        self.batch("ROLLBACK")
    }

    /// The most parameters one statement may take (SQLite's and PostgreSQL's limits, with room).
    pub(super) fn max_params(&self) -> usize {
        match self {
            Conn::Sqlite(_) => 30_000,
            Conn::Postgres { .. } => 60_000,
        }
    }
}

fn open_sqlite(url: &StoreUrl, path: &std::path::Path) -> Result<Conn> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            BadInput(format!(
                "{url}: cannot create folder {}: {e}",
                dir.display()
            ))
        })?;
    }
    let conn = rusqlite::Connection::open(path)
        .map_err(|e| BadInput(format!("{url}: cannot open the database: {e}")))?;
    conn.busy_timeout(WAIT)?;
    conn.execute_batch("PRAGMA foreign_keys = ON")
        .map_err(|e| BadInput(format!("{url}: not a database gpassk can use: {e}")))?;
    Ok(Conn::Sqlite(conn))
}

fn open_postgres(url: &StoreUrl, pg: &PgUrl) -> Result<Conn> {
    let password = password(pg)?;
    let mode = pg.sslmode();
    let mut config = postgres::Config::new();
    config
        .user(&pg.user)
        .dbname(&pg.dbname)
        .port(pg.port)
        .application_name("gpassk")
        .connect_timeout(WAIT)
        // A wait for a lock (a push of the same run, a migration) ends as SQLite's does.
        .options(&format!("-c lock_timeout={}", WAIT.as_millis()))
        .ssl_mode(match mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        });
    match &pg.host {
        PgHost::Tcp(h) => config.host(h),
        PgHost::Socket(dir) => config.host_path(dir),
    };
    if let Some(ip) = pg.hostaddr {
        config.hostaddr(ip);
    }
    if let Some(p) = &password {
        config.password(p.expose());
    }
    let connected = match mode {
        SslMode::Disable => config.connect(postgres::NoTls),
        _ => config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(
            super::tls::client_config(mode, pg)?,
        )),
    };
    let client = connected.map_err(|e| {
        let mut why = crate::util::printable(&one_line(&e)).into_owned();
        if let Some(advice) = super::tls::advice(pg, &e) {
            why = format!("{why} ({advice})");
        }
        let why = password
            .as_ref()
            .map_or(why.clone(), |p| p.redact_owned(why));
        BadInput(format!("{url}: cannot connect: {why}"))
    })?;
    Ok(Conn::Postgres {
        client: Box::new(client),
        password,
    })
}

/// The password from the variable `password_env` names, or `PGPASSWORD` when none is named.
fn password(pg: &PgUrl) -> Result<Option<ApiKey>, BadInput> {
    let (var, named) = match &pg.password_env {
        Some(v) => (v.as_str(), true),
        None => ("PGPASSWORD", false),
    };
    match std::env::var_os(var) {
        Some(v) => match v.into_string() {
            Ok(p) if !p.is_empty() => Ok(Some(ApiKey::new(p))),
            _ if !named => Ok(None),
            Ok(_) => Err(BadInput(format!(
                "password_env: environment variable {var} is set but empty"
            ))),
            Err(_) => Err(BadInput(format!(
                "password_env: environment variable {var} is not valid UTF-8"
            ))),
        },
        None if named => Err(BadInput(format!(
            "password_env: environment variable {var} is not set; export the password in it"
        ))),
        None => Ok(None),
    }
}

/// A driver error as one line: its message and its cause's, each once.
fn one_line(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    if let Some(db) = e.as_db_error() {
        // "db error" alone says nothing: the server's own words do.
        text = format!("{}: {}", db.severity(), db.message());
    } else if let Some(cause) = std::error::Error::source(e) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text.replace('\n', " ")
}

fn pg_error(e: postgres::Error, password: &Option<ApiKey>) -> anyhow::Error {
    if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
        return Locked.into();
    }
    let text = one_line(&e);
    anyhow::anyhow!(password
        .as_ref()
        .map_or(text.clone(), |p| p.redact_owned(text)))
}

fn redact(e: anyhow::Error, password: &Option<ApiKey>) -> anyhow::Error {
    match password {
        Some(p) => anyhow::anyhow!(p.redact_owned(crate::error::render(&e))),
        None => e,
    }
}

fn sqlite_each(
    c: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
    sink: &mut dyn RowSink,
) -> Result<()> {
    let mut stmt = c.prepare_cached(sql)?;
    let cols: Vec<Column> = stmt
        .columns()
        .iter()
        .map(|c| Column {
            name: c.name().to_string(),
            kind: match c.decl_type().map(str::to_ascii_uppercase).as_deref() {
                Some("BIGINT" | "INTEGER") => Kind::Int,
                Some("DOUBLE PRECISION" | "REAL") => Kind::Real,
                _ => Kind::Text,
            },
        })
        .collect();
    sink.columns(&cols)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    while let Some(r) = rows.next()? {
        let row = (0..cols.len())
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(v) => Value::Int(v),
                    rusqlite::types::ValueRef::Real(v) => Value::Real(v),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Blob(_) => Value::Null,
                })
            })
            .collect::<rusqlite::Result<Vec<_>>>()?;
        sink.row(row)?;
    }
    Ok(())
}

fn postgres_each(
    client: &mut postgres::Client,
    sql: &str,
    params: &[Value],
    sink: &mut dyn RowSink,
) -> Result<()> {
    use postgres::fallible_iterator::FallibleIterator;
    use postgres::types::Type;
    let stmt = client.prepare(sql).map_err(|e| pg_error(e, &None))?;
    let cols: Vec<Column> = (stmt.columns().iter())
        .map(|c| Column {
            name: c.name().to_string(),
            kind: match *c.type_() {
                Type::INT2 | Type::INT4 | Type::INT8 => Kind::Int,
                Type::FLOAT4 | Type::FLOAT8 => Kind::Real,
                _ => Kind::Text,
            },
        })
        .collect();
    sink.columns(&cols)?;
    let mut rows = client
        .query_raw(&stmt, params.iter())
        .map_err(|e| pg_error(e, &None))?;
    while let Some(r) = rows.next().map_err(|e| pg_error(e, &None))? {
        let row = (0..cols.len())
            .map(|i| pg_value(&r, i))
            .collect::<Result<Vec<_>>>()?;
        sink.row(row)?;
    }
    Ok(())
}

/// Column `i` of a PostgreSQL row as a [`Value`] (the types the schema uses, and counts).
fn pg_value(r: &postgres::Row, i: usize) -> Result<Value> {
    use postgres::types::Type;
    let column = &r.columns()[i];
    let ty = column.type_();
    let got = |e: postgres::Error| pg_error(e, &None);
    Ok(match *ty {
        Type::INT2 => r
            .try_get::<_, Option<i16>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT4 => r
            .try_get::<_, Option<i32>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT8 => r.try_get::<_, Option<i64>>(i).map_err(got)?.into(),
        Type::FLOAT4 => r
            .try_get::<_, Option<f32>>(i)
            .map_err(got)?
            .map(f64::from)
            .into(),
        Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map_err(got)?.into(),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            r.try_get::<_, Option<String>>(i).map_err(got)?.into()
        }
        _ => {
            return Err(anyhow::anyhow!(
                "column {}: type {ty} is not one gpassk reads",
                column.name()
            ))
        }
    })
}

impl From<Option<i64>> for Value {
    fn from(v: Option<i64>) -> Value {
        v.map_or(Value::Null, Value::Int)
    }
}

impl From<Option<f64>> for Value {
    fn from(v: Option<f64>) -> Value {
        v.map_or(Value::Null, Value::Real)
    }
}

impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Value {
        v.map_or(Value::Null, Value::Text)
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

impl postgres::types::ToSql for Value {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::Type;
        match (self, ty) {
            (Value::Null, _) => Ok(postgres::types::IsNull::Yes),
            (Value::Int(v), &Type::INT8) => v.to_sql(ty, out),
            (Value::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::INT2) => i16::try_from(*v)?.to_sql(ty, out),
            (Value::Real(v), &Type::FLOAT8) => v.to_sql(ty, out),
            (Value::Text(s), &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME) => {
                s.as_str().to_sql(ty, out)
            }
            (v, ty) => Err(format!("a {v:?} cannot go in a column of type {ty}").into()),
        }
    }

    fn accepts(ty: &postgres::types::Type) -> bool {
        use postgres::types::Type;
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::FLOAT8
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
        )
    }

    postgres::types::to_sql_checked!();
}
