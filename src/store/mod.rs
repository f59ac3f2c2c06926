//! The results database (`[store]`, `gpassk store`): a run's manifest, models, metric values with
//! their exact fractions and intervals, and per-problem counts, written in one transaction to
//! SQLite; one versioned schema ([`schema`]), rows built once ([`rows`]).

pub mod rows;
pub mod schema;

pub use crate::config::store::StoreUrl;
use crate::error::BadInput;
use crate::metrics::ProblemCounts;
use crate::rundir::RunDir;
use crate::scoring::{ModelScore, RunResults, ScoreParts};
use crate::stats::Vote;
use rows::{Row, Value};

use rusqlite::{params_from_iter, Connection, OptionalExtension};

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The run was not in the store.
    New,
    /// The run was there with other content (resumed, re-scored): its rows were replaced.
    Replaced,
    /// The run was there with the same content: nothing was written.
    Unchanged,
}

/// One run as `store ls` lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub run_id: String,
    pub created_at: String,
    pub status: String,
    pub dataset: String,
    pub models: i64,
}

/// An open results database at the schema version this gpassk knows.
pub struct Store {
    conn: Connection,
    url: StoreUrl,
}

impl Store {
    /// Opens (creating when missing) the database and brings its schema up to [`schema::VERSION`];
    /// a database of a newer schema is refused, untouched.
    pub fn open(url: &StoreUrl) -> anyhow::Result<Store> {
        let StoreUrl::Sqlite(path) = url;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                BadInput(format!(
                    "{url}: cannot create folder {}: {e}",
                    dir.display()
                ))
            })?;
        }
        let conn = Connection::open(path)
            .map_err(|e| BadInput(format!("{url}: cannot open the database: {e}")))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        let mut store = Store {
            conn,
            url: url.clone(),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| BadInput(format!("{}: not a database gpassk can use: {e}", self.url)))?;
        tx.execute_batch(schema::VERSION_TABLE)
            .map_err(|e| BadInput(format!("{}: not a database gpassk can use: {e}", self.url)))?;
        let found: i64 = tx.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM gpassk_schema",
            [],
            |r| r.get(0),
        )?;
        if found > schema::VERSION {
            return Err(BadInput(format!(
                "{}: schema version {found} is newer than this gpassk's ({}); use a newer gpassk",
                self.url,
                schema::VERSION
            ))
            .into());
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO gpassk_schema (version, applied_at) VALUES ($1, $2)",
                rusqlite::params![i as i64 + 1, crate::util::now_rfc3339()],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The schema version the database holds.
    pub fn version(&self) -> anyhow::Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT MAX(version) FROM gpassk_schema", [], |r| r.get(0))?)
    }

    /// Writes one scored run, replacing what the store held of it, in one transaction: a reader
    /// sees the old rows or the new, never a mix.
    pub fn push(&mut self, dir: &RunDir, results: &RunResults) -> anyhow::Result<Pushed> {
        let tables = rows::of_run(dir, results)?;
        let run_id = &results.run_id;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let held: Option<String> = tx
            .query_row(
                "SELECT content_sha256 FROM runs WHERE run_id = $1",
                [run_id],
                |r| r.get(0),
            )
            .optional()?;
        if held.as_deref() == Some(tables.content_sha256.as_str()) {
            return Ok(Pushed::Unchanged);
        }
        // Children first, though the foreign keys cascade: the order a PostgreSQL store shares.
        for table in schema::TABLES.iter().rev() {
            tx.execute(&format!("DELETE FROM {table} WHERE run_id = $1"), [run_id])?;
        }
        for (table, rows) in tables.tables() {
            insert(&tx, table, rows)?;
        }
        tx.commit()?;
        Ok(if held.is_some() {
            Pushed::Replaced
        } else {
            Pushed::New
        })
    }

    /// Every run in the store, oldest first.
    pub fn list(&self) -> anyhow::Result<Vec<Listed>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.run_id, r.created_at, r.status, r.dataset_name, \
             (SELECT COUNT(*) FROM run_models m WHERE m.run_id = r.run_id) \
             FROM runs r ORDER BY r.created_at, r.run_id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Listed {
                run_id: r.get(0)?,
                created_at: r.get(1)?,
                status: r.get(2)?,
                dataset: r.get(3)?,
                models: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every row of `table` as (column names, rows), for `store export`.
    pub fn dump(&self, table: &str) -> anyhow::Result<(Vec<String>, Vec<Vec<Value>>)> {
        if !schema::TABLES.contains(&table) {
            return Err(BadInput(format!(
                "unknown table `{}`: expected one of {}",
                crate::util::printable(table),
                schema::TABLES.join(", ")
            ))
            .into());
        }
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))?;
        let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
        let width = names.len();
        let rows = stmt.query_map([], |r| {
            (0..width)
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
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok((names, rows.collect::<Result<_, _>>()?))
    }

    /// Where the store is.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }
}

/// Inserts `rows` into `table`, one prepared statement for all.
fn insert(tx: &rusqlite::Transaction<'_>, table: &str, rows: &[Row]) -> anyhow::Result<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    let columns: Vec<&str> = first.iter().map(|(c, _)| *c).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    );
    let mut stmt = tx.prepare(&sql)?;
    for row in rows {
        stmt.execute(params_from_iter(row.iter().map(|(_, v)| v)))?;
    }
    Ok(())
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

/// Reading a stored run back as the results `history` and `compare` take.
impl Store {
    /// The stored run `run_id` as scored results: its manifest, and each model's metrics
    /// recomputed exactly from its per-problem counts and votes ([`ModelScore::from_parts`]).
    /// None when the store does not hold the run.
    pub fn results(&self, run_id: &str) -> anyhow::Result<Option<RunResults>> {
        let run: Option<(String, String, String)> = self
            .conn
            .query_row(
                "SELECT manifest, dataset_name, dataset_sha256 FROM runs WHERE run_id = $1",
                [run_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((manifest, dataset, dataset_sha256)) = run else {
            return Ok(None);
        };
        let manifest: crate::rundir::manifest::Manifest = serde_json::from_str(&manifest)
            .map_err(|e| BadInput(format!("{}: run {run_id}: field `manifest`: {e}", self.url)))?;
        let path = std::path::Path::new(&manifest.config_path);
        let settings = crate::config::load_json_with(&manifest.config, path, &[])
            .map_err(|e| BadInput(format!("{}: run {run_id}: its config: {e}", self.url)))?;
        let ev = &settings.evaluation;
        let models = self
            .parts(run_id)?
            .into_iter()
            .map(|p| ModelScore::from_parts(p, &ev.ks, &ev.taus))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Some(RunResults {
            run_id: run_id.to_string(),
            dataset,
            dataset_sha256,
            shown: ev.metrics.clone(),
            ks: ev.ks.clone(),
            taus: ev.taus.clone(),
            manifest: Some(manifest),
            models,
        }))
    }

    /// Per model of a stored run, its usable samples by system fingerprint (`""` for none).
    pub fn fingerprints(
        &self,
        run_id: &str,
    ) -> anyhow::Result<std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>>
    {
        let mut stmt = self.conn.prepare(
            "SELECT model, system_fingerprint, samples FROM fingerprint_counts WHERE run_id = $1",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u64>(2)?,
            ))
        })?;
        let mut out =
            std::collections::BTreeMap::<String, std::collections::BTreeMap<String, u64>>::new();
        for row in rows {
            let (model, fingerprint, samples) = row?;
            out.entry(model).or_default().insert(fingerprint, samples);
        }
        Ok(out)
    }

    /// Each model's score parts, in the run's model order, problems in dataset order.
    fn parts(&self, run_id: &str) -> anyhow::Result<Vec<ScoreParts>> {
        let mut stmt = self.conn.prepare(
            "SELECT model, model_id, n, correct, wrong, no_answer, truncated, missing, \
             served_models FROM run_models WHERE run_id = $1 ORDER BY position",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            let served: String = r.get(8)?;
            Ok((
                ScoreParts {
                    name: r.get(0)?,
                    model_id: r.get(1)?,
                    n: r.get(2)?,
                    problems: Vec::new(),
                    votes: Vec::new(),
                    correct: r.get(3)?,
                    wrong: r.get(4)?,
                    no_answer: r.get(5)?,
                    truncated: r.get(6)?,
                    missing: r.get(7)?,
                    served_models: Default::default(),
                },
                served,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut p, served) = row?;
            p.served_models = serde_json::from_str(&served).unwrap_or_default();
            self.problems(run_id, &mut p)?;
            out.push(p);
        }
        Ok(out)
    }

    fn problems(&self, run_id: &str, p: &mut ScoreParts) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT problem_id, subset, n, c, greedy, voters, winners, winners_correct \
             FROM problem_counts WHERE run_id = $1 AND model = $2 ORDER BY position",
        )?;
        let rows = stmt.query_map([run_id, p.name.as_str()], |r| {
            let greedy: Option<i64> = r.get(4)?;
            Ok((
                ProblemCounts {
                    id: r.get(0)?,
                    subset: r.get(1)?,
                    n: r.get(2)?,
                    c: r.get(3)?,
                    greedy: greedy.map(|g| g != 0),
                },
                Vote {
                    voters: r.get(5)?,
                    winners: r.get(6)?,
                    winners_correct: r.get(7)?,
                },
            ))
        })?;
        for row in rows {
            let (problem, vote) = row?;
            p.problems.push(problem);
            p.votes.push(vote);
        }
        Ok(())
    }
}
