//! The results database (`[store]`, `gpassk store`): a run's manifest, models, metric values with
//! their exact fractions and intervals, per-problem counts and (with `--samples`) graded samples,
//! written in one transaction to SQLite or PostgreSQL; one versioned schema ([`schema`]), rows
//! built once ([`rows`]), one code path over both databases (`conn` holds what differs). A push
//! leaves a run of the same content alone, replaces a changed one, and refuses another run with
//! the same id (its `created_at` and `origin` differ).

mod conn;
pub mod export;
pub mod rows;
pub mod schema;
mod tls;

pub use crate::config::store::StoreUrl;
use crate::error::BadInput;
use crate::grade::FoundBy;
use crate::metrics::ProblemCounts;
use crate::plan::Plan;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::scoring::found::ModelFound;
use crate::scoring::stored::{exact, ExtraColumn};
use crate::scoring::{ModelScore, RunResults, ScoreParts};
use crate::stats::Vote;
use crate::util::Notes;
use anyhow::Context;
pub use conn::{Column, Kind, RowSink};
use conn::{Conn, Lock};
use rows::{cell, Row, Value};

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The run was not in the store.
    New,
    /// The run was there with other content (resumed, re-scored): its rows were replaced. A push
    /// without samples also removed the `samples_removed` sample rows of the old content.
    Replaced { samples_removed: u64 },
    /// The run was there with the same content: nothing was written (stored samples kept).
    Unchanged,
    /// The run was there with the same content: only its sample rows were written.
    SamplesStored,
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
    conn: Conn,
    url: StoreUrl,
}

/// A write transaction: rolled back unless committed (an error, a panic, a push with nothing
/// new), so a reader never sees half of one.
struct Tx<'a> {
    conn: &'a mut Conn,
    open: bool,
}

impl<'a> Tx<'a> {
    fn begin(conn: &'a mut Conn, lock: Lock) -> anyhow::Result<Tx<'a>> {
        if let Err(e) = conn.begin(lock) {
            // A transaction begun but not locked must not stay open.
            let _ = conn.rollback();
            return Err(e);
        }
        Ok(Tx { conn, open: true })
    }

    fn commit(mut self) -> anyhow::Result<()> {
        self.open = false;
        self.conn.commit()
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            // A connection that broke has rolled back on the server already.
            let _ = self.conn.rollback();
        }
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
    }
}

impl std::ops::DerefMut for Tx<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
    }
}

impl Store {
    /// Opens (creating a SQLite file when missing) the database and brings its schema up to
    /// [`schema::VERSION`]; a database of a newer schema is refused, untouched.
    pub fn open(url: &StoreUrl) -> anyhow::Result<Store> {
        let mut store = Store {
            conn: Conn::open(url)?,
            url: url.clone(),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        // A database already at this version is only read: a role that may only read (a
        // dashboard's) opens it, and no reader waits for a writer's lock.
        let url = &self.url;
        let newer = |found: i64| {
            BadInput(format!(
                "{url}: schema version {found} is newer than this gpassk's ({}); use a newer gpassk",
                schema::VERSION
            ))
        };
        match self
            .conn
            .query("SELECT MAX(version) FROM gpassk_schema", &[])
        {
            Ok(rows) => match rows.first().and_then(|r| r.first()) {
                Some(Value::Int(v)) if *v == schema::VERSION => return Ok(()),
                Some(Value::Int(v)) if *v > schema::VERSION => return Err(newer(*v).into()),
                _ => {}
            },
            Err(e) if conn::is_locked(&e) => return Err(locked(url, e)),
            Err(_) => {} // no schema yet: made below
        }
        let unusable = |e: anyhow::Error| -> anyhow::Error {
            if conn::is_locked(&e) {
                return locked(url, e);
            }
            BadInput(format!(
                "{url}: not a database gpassk can use: {}",
                crate::error::render(&e)
            ))
            .into()
        };
        let mut tx = Tx::begin(&mut self.conn, Lock::Schema).map_err(unusable)?;
        tx.batch(schema::VERSION_TABLE).map_err(unusable)?;
        let found = tx.query("SELECT COALESCE(MAX(version), 0) FROM gpassk_schema", &[])?;
        let found: i64 = cell(&found[0], 0, "version")?;
        if found > schema::VERSION {
            return Err(newer(found).into());
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.batch(sql)?;
            tx.execute(
                "INSERT INTO gpassk_schema (version, applied_at) VALUES ($1, $2)",
                &[
                    Value::Int(i as i64 + 1),
                    Value::Text(crate::util::now_rfc3339()),
                ],
            )?;
        }
        tx.commit()
    }

    /// The schema version the database holds.
    pub fn version(&mut self) -> anyhow::Result<i64> {
        let rows = self
            .conn
            .query("SELECT MAX(version) FROM gpassk_schema", &[])?;
        cell(&rows[0], 0, "version")
    }

    /// Writes one scored run, replacing what the store held of it, in one transaction: a reader
    /// sees the old rows or the new, never a mix. With `samples` (the run's plan), a row per
    /// graded sample too, streamed from the checkpoints; without, stored sample rows are kept
    /// while the rest is unchanged. Another run of the same id is refused, naming both.
    pub fn push(
        &mut self,
        dir: &RunDir,
        results: &RunResults,
        samples: Option<(&Plan, &Notes)>,
    ) -> anyhow::Result<Pushed> {
        let tables = rows::of_run(dir, results)?;
        let manifest = results
            .manifest
            .as_ref()
            .context("a pushed run has a manifest")?;
        let content = tables.digest.clone().finish();
        let run_id = results.run_id.as_str();
        let url = &self.url;
        let mut tx = Tx::begin(&mut self.conn, Lock::Run(run_id)).map_err(|e| locked(url, e))?;
        let held = Held::read(&mut tx, run_id)?;
        if let Some(h) = &held {
            h.same_run(manifest, dir, url)?;
        }
        let same = held.as_ref().is_some_and(|h| h.content == content);
        if same && samples.is_none() {
            return Ok(Pushed::Unchanged);
        }
        let id = [Value::Text(run_id.into())];
        if same {
            tx.execute("DELETE FROM samples WHERE run_id = $1", &id)?;
        } else {
            if held.is_some() {
                // Children first, though the foreign keys cascade.
                for table in schema::TABLES.iter().rev() {
                    tx.execute(&format!("DELETE FROM {table} WHERE run_id = $1"), &id)?;
                }
            }
            let mut run = tables.runs[0].clone();
            run.push(("content_sha256", Value::Text(content.clone())));
            insert(&mut tx, "runs", &[run])?;
            for (table, rows) in tables.tables().into_iter().skip(1) {
                insert(&mut tx, table, rows)?;
            }
        }
        let sampled = match samples {
            Some((plan, notes)) => Some(push_samples(&mut tx, plan, (dir, results), notes)?),
            None => None,
        };
        if same && held.as_ref().and_then(|h| h.samples.as_ref()) == sampled.as_ref() {
            return Ok(Pushed::Unchanged);
        }
        tx.execute(
            "UPDATE runs SET origin = $1, samples_sha256 = $2 WHERE run_id = $3",
            &[
                Value::opt_text(manifest.origin.clone()),
                Value::opt_text(sampled),
                Value::Text(run_id.into()),
            ],
        )?;
        tx.commit()?;
        Ok(match held {
            None => Pushed::New,
            Some(_) if same => Pushed::SamplesStored,
            Some(h) if samples.is_none() => Pushed::Replaced {
                samples_removed: h.sample_rows,
            },
            Some(_) => Pushed::Replaced { samples_removed: 0 },
        })
    }

    /// Every run in the store, oldest first (then by id, bytewise: the same order from either
    /// database, whatever its collation).
    pub fn list(&mut self) -> anyhow::Result<Vec<Listed>> {
        let rows = self.conn.query(
            "SELECT r.run_id, r.created_at, r.status, r.dataset_name, \
             (SELECT COUNT(*) FROM run_models m WHERE m.run_id = r.run_id) FROM runs r",
            &[],
        )?;
        let mut out = rows
            .iter()
            .map(|r| {
                Ok(Listed {
                    run_id: cell(r, 0, "run_id")?,
                    created_at: cell(r, 1, "created_at")?,
                    status: cell(r, 2, "status")?,
                    dataset: cell(r, 3, "dataset_name")?,
                    models: cell(r, 4, "models")?,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        out.sort_by(|a, b| (&a.created_at, &a.run_id).cmp(&(&b.created_at, &b.run_id)));
        Ok(out)
    }

    /// Streams every row of `table` (its columns first) into `sink`, for `store export`.
    pub fn each_row(&mut self, table: &str, sink: &mut dyn RowSink) -> anyhow::Result<()> {
        if !schema::TABLES.contains(&table) {
            return Err(BadInput(format!(
                "unknown table `{}`: expected one of {}",
                crate::util::printable(table),
                schema::TABLES.join(", ")
            ))
            .into());
        }
        let sql = format!("SELECT * FROM {table} ORDER BY 1, 2");
        self.conn.each(&sql, &[], sink)
    }

    /// Where the store is.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }
}

/// Whether writing `path` would overwrite the SQLite database `url` names, or its journal: the
/// same file by any name (a relative path, `..`, a symbolic or hard link).
pub fn is_database_file(url: &StoreUrl, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let StoreUrl::Sqlite(db) = url else {
        return false;
    };
    let absolute = |p: &std::path::Path| {
        p.canonicalize().ok().or_else(|| {
            let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
            let parent = parent.unwrap_or(std::path::Path::new("."));
            Some(parent.canonicalize().ok()?.join(p.file_name()?))
        })
    };
    let same = |a: &std::path::Path| match (std::fs::metadata(a), std::fs::metadata(path)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => absolute(a).is_some_and(|a| absolute(path) == Some(a)),
    };
    ["", "-journal", "-wal", "-shm"].iter().any(|suffix| {
        let mut file = db.as_os_str().to_owned();
        file.push(suffix);
        same(std::path::Path::new(&file))
    })
}

/// A lock held past the wait as one line naming the store and saying so; other errors as they are.
fn locked(url: &StoreUrl, e: anyhow::Error) -> anyhow::Error {
    if conn::is_locked(&e) {
        BadInput(format!("{url}: {}", conn::Locked)).into()
    } else {
        e
    }
}

/// Inserts `rows` into `table`, many rows a statement (as many as the database takes).
fn insert(conn: &mut Conn, table: &str, rows: &[Row]) -> anyhow::Result<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    let columns: Vec<&str> = first.iter().map(|(c, _)| *c).collect();
    let per_statement = (conn.max_params() / columns.len()).max(1);
    for chunk in rows.chunks(per_statement) {
        let mut marks = Vec::with_capacity(chunk.len());
        for i in 0..chunk.len() {
            let cells: Vec<String> = (1..=columns.len())
                .map(|c| format!("${}", i * columns.len() + c))
                .collect();
            marks.push(format!("({})", cells.join(", ")));
        }
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES {}",
            columns.join(", "),
            marks.join(", ")
        );
        let params: Vec<Value> = chunk
            .iter()
            .flat_map(|r| r.iter().map(|(_, v)| v.clone()))
            .collect();
        conn.execute(&sql, &params)?;
    }
    Ok(())
}

/// What the store holds of a run about to be pushed.
struct Held {
    content: String,
    samples: Option<String>,
    sample_rows: u64,
    created_at: String,
    origin: Option<String>,
}

impl Held {
    fn read(conn: &mut Conn, run_id: &str) -> anyhow::Result<Option<Held>> {
        let id = [Value::Text(run_id.into())];
        let rows = conn.query(
            "SELECT content_sha256, samples_sha256, created_at, origin, \
             (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.run_id) FROM runs r \
             WHERE r.run_id = $1",
            &id,
        )?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(Held {
            content: cell(r, 0, "content_sha256")?,
            samples: cell(r, 1, "samples_sha256")?,
            created_at: cell(r, 2, "created_at")?,
            origin: cell(r, 3, "origin")?,
            sample_rows: cell(r, 4, "samples")?,
        }))
    }

    /// Refuses `manifest` when it is another run than the one held under its id: created at
    /// another time, or in another place (when both places are known). A run resumed, re-scored,
    /// moved or copied is the same run.
    fn same_run(&self, manifest: &Manifest, dir: &RunDir, url: &StoreUrl) -> Result<(), BadInput> {
        let places = self.origin.as_ref().zip(manifest.origin.as_ref());
        if self.created_at == manifest.created_at && places.is_none_or(|(a, b)| a == b) {
            return Ok(());
        }
        let place = |o: Option<&String>| {
            o.map_or_else(
                || "an unrecorded place".to_string(),
                |o| crate::util::printable(o).into_owned(),
            )
        };
        Err(BadInput(format!(
            "{}: not pushed: {url} already holds another run with the id {} (created {} at {}); \
             this one was created {} at {}. A store holds one run per id: nothing was written",
            dir.display(),
            crate::util::printable(&manifest.run_id),
            crate::util::printable(&self.created_at),
            place(self.origin.as_ref()),
            crate::util::printable(&manifest.created_at),
            place(manifest.origin.as_ref()),
        )))
    }
}

/// Rows held before a batch of sample rows is written.
const SAMPLE_BATCH: usize = 2000;

/// Writes a row per graded sample of every model of the run, in batches; their digest.
fn push_samples(
    conn: &mut Conn,
    plan: &Plan,
    (dir, results): (&RunDir, &RunResults),
    notes: &Notes,
) -> anyhow::Result<String> {
    let mut digest = rows::RowDigest::default();
    let mut batch: Vec<Row> = Vec::with_capacity(SAMPLE_BATCH);
    for m in &results.models {
        let Some(settings) = plan.settings.models.iter().find(|s| s.name == m.name) else {
            continue;
        };
        crate::scoring::for_each_sample(plan, dir, settings, notes, |s| {
            let row = rows::sample_row(&results.run_id, &m.name, &s);
            digest.add(&row);
            batch.push(row);
            if batch.len() == SAMPLE_BATCH {
                insert(conn, "samples", &batch)?;
                batch.clear();
            }
            Ok(())
        })?;
    }
    insert(conn, "samples", &batch)?;
    Ok(digest.finish())
}

/// Reading a stored run back as the results `history` and `compare` take.
impl Store {
    /// The stored run `run_id` as scored results: its manifest, and each model's metrics
    /// recomputed exactly from its per-problem counts and votes ([`ModelScore::from_parts`]).
    /// None when the store does not hold the run.
    pub fn results(&mut self, run_id: &str) -> anyhow::Result<Option<RunResults>> {
        let Some(manifest) = self.manifest(run_id)? else {
            return Ok(None);
        };
        let id = [Value::Text(run_id.into())];
        let run = self.conn.query(
            "SELECT dataset_name, dataset_sha256 FROM runs WHERE run_id = $1",
            &id,
        )?;
        let run = run.first().context("the run went while it was read")?;
        let (dataset, dataset_sha256): (String, String) = (
            cell(run, 0, "dataset_name")?,
            cell(run, 1, "dataset_sha256")?,
        );
        let path = std::path::Path::new(&manifest.config_path);
        let settings = crate::config::load_json_with(&manifest.config, path, &[])
            .map_err(|e| BadInput(format!("{}: run {run_id}: its config: {e}", self.url)))?;
        let ev = &settings.evaluation;
        let mut models = Vec::new();
        for p in self.parts(run_id)? {
            let extra = self.extra_columns(run_id, &p.name, p.problems.len())?;
            models.push(ModelScore::from_stored(p, extra, &ev.ks, &ev.taus)?);
        }
        Ok(Some(RunResults {
            run_id: run_id.to_string(),
            dataset,
            dataset_sha256,
            shown: ev.metrics.clone(),
            ks: ev.ks.clone(),
            taus: ev.taus.clone(),
            manifest: Some(manifest),
            models,
            basis: None,
            call_costs: Vec::new(),
            heuristic_warn: ev.heuristic_warn,
        }))
    }

    /// The manifest of the stored run `run_id`; None when the store does not hold the run.
    pub fn manifest(&mut self, run_id: &str) -> anyhow::Result<Option<Manifest>> {
        let rows = self.conn.query(
            "SELECT manifest FROM runs WHERE run_id = $1",
            &[Value::Text(run_id.into())],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let text: String = cell(row, 0, "manifest")?;
        let manifest = serde_json::from_str(&text).map_err(|e| {
            BadInput(format!(
                "{}: run {}: field `manifest`: {e}",
                self.url,
                crate::util::printable(run_id)
            ))
        })?;
        Ok(Some(manifest))
    }

    /// Per model of a stored run, its usable samples by system fingerprint (`""` for none).
    pub fn fingerprints(
        &mut self,
        run_id: &str,
    ) -> anyhow::Result<std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>>
    {
        let rows = self.conn.query(
            "SELECT model, system_fingerprint, samples FROM fingerprint_counts WHERE run_id = $1",
            &[Value::Text(run_id.into())],
        )?;
        let mut out =
            std::collections::BTreeMap::<String, std::collections::BTreeMap<String, u64>>::new();
        for r in &rows {
            out.entry(cell(r, 0, "model")?)
                .or_default()
                .insert(cell(r, 1, "system_fingerprint")?, cell(r, 2, "samples")?);
        }
        Ok(out)
    }

    /// Each model's score parts, in the run's model order, problems in dataset order.
    fn parts(&mut self, run_id: &str) -> anyhow::Result<Vec<ScoreParts>> {
        let rows = self.conn.query(
            "SELECT model, model_id, n, correct, wrong, no_answer, truncated, missing, \
             served_models FROM run_models WHERE run_id = $1 ORDER BY position",
            &[Value::Text(run_id.into())],
        )?;
        let mut out = Vec::new();
        for r in &rows {
            let served: String = cell(r, 8, "served_models")?;
            let mut p = ScoreParts {
                name: cell(r, 0, "model")?,
                model_id: cell(r, 1, "model_id")?,
                n: cell(r, 2, "n")?,
                problems: Vec::new(),
                votes: Vec::new(),
                correct: cell(r, 3, "correct")?,
                wrong: cell(r, 4, "wrong")?,
                no_answer: cell(r, 5, "no_answer")?,
                truncated: cell(r, 6, "truncated")?,
                missing: cell(r, 7, "missing")?,
                served_models: serde_json::from_str(&served).unwrap_or_default(),
                found_by: None,
            };
            self.problems(run_id, &mut p)?;
            p.found_by = self.found_by(run_id, &p.name)?;
            out.push(p);
        }
        Ok(out)
    }

    /// A model's metric columns that its counts do not give (`problem_values`: the verifier's,
    /// pass@n past the k grid), in their stored order, each over its `problems` problems.
    fn extra_columns(
        &mut self,
        run_id: &str,
        model: &str,
        problems: usize,
    ) -> anyhow::Result<Vec<ExtraColumn>> {
        let rows = self.conn.query(
            "SELECT metric, position, problem_position, value_numerator, value_denominator, \
             std_error FROM problem_values WHERE run_id = $1 AND model = $2 \
             ORDER BY position, problem_position",
            &[Value::Text(run_id.into()), Value::Text(model.into())],
        )?;
        let url = &self.url;
        let bad = |what: String| BadInput(format!("{url}: run {run_id}: problem_values: {what}"));
        let mut out: Vec<(u64, ExtraColumn)> = Vec::new();
        for r in &rows {
            let position: u64 = cell(r, 1, "position")?;
            if out.last().map(|c| c.0) != Some(position) {
                let name: String = cell(r, 0, "metric")?;
                let metric =
                    (name.parse::<crate::metrics::MetricKind>()).map_err(|e| bad(e.to_string()))?;
                let column = ExtraColumn {
                    metric,
                    values: vec![None; problems],
                    std_errors: None,
                };
                out.push((position, column));
            }
            let column = &mut out.last_mut().expect("a column was just pushed").1;
            let problem: u64 = cell(r, 2, "problem_position")?;
            let problem = usize::try_from(problem).ok().filter(|&p| p < problems);
            let problem = problem.ok_or_else(|| bad(format!("problem position {problem:?}")))?;
            let numer: Option<String> = cell(r, 3, "value_numerator")?;
            let denom: Option<String> = cell(r, 4, "value_denominator")?;
            if let (Some(n), Some(d)) = (numer, denom) {
                column.values[problem] = Some(exact(&n, &d).map_err(|e| bad(e.to_string()))?);
            }
            if let Some(se) = cell::<Option<f64>>(r, 5, "std_error")? {
                column
                    .std_errors
                    .get_or_insert_with(|| vec![None; problems])[problem] = Some(se);
            }
        }
        Ok(out.into_iter().map(|(_, c)| c).collect())
    }

    /// A model's answers counted by how they were found; None when the store holds no count
    /// (a run pushed by a gpassk before them). A way this gpassk does not know is refused.
    fn found_by(&mut self, run_id: &str, model: &str) -> anyhow::Result<Option<ModelFound>> {
        let rows = self.conn.query(
            "SELECT found_by, answers FROM found_by_counts WHERE run_id = $1 AND model = $2",
            &[Value::Text(run_id.into()), Value::Text(model.into())],
        )?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut found = ModelFound::default();
        for r in &rows {
            let way: String = cell(r, 0, "found_by")?;
            let answers: u64 = cell(r, 1, "answers")?;
            let way = match way.as_str() {
                "" => None,
                w => Some(FoundBy::parse(w).ok_or_else(|| {
                    BadInput(format!(
                        "{}: run {}: found_by_counts: unknown found_by {:?}",
                        self.url,
                        crate::util::printable(run_id),
                        crate::util::printable(w)
                    ))
                })?),
            };
            found.add_n(way, answers);
        }
        Ok(Some(found))
    }

    fn problems(&mut self, run_id: &str, p: &mut ScoreParts) -> anyhow::Result<()> {
        let rows = self.conn.query(
            "SELECT problem_id, subset, n, c, greedy, voters, winners, winners_correct, \
             problem_group FROM problem_counts WHERE run_id = $1 AND model = $2 ORDER BY position",
            &[Value::Text(run_id.into()), Value::Text(p.name.clone())],
        )?;
        for r in &rows {
            let greedy: Option<i64> = cell(r, 4, "greedy")?;
            p.problems.push(ProblemCounts {
                id: cell(r, 0, "problem_id")?,
                subset: cell(r, 1, "subset")?,
                group: cell(r, 8, "problem_group")?,
                n: cell(r, 2, "n")?,
                c: cell(r, 3, "c")?,
                greedy: greedy.map(|g| g != 0),
            });
            p.votes.push(Vote {
                voters: cell(r, 5, "voters")?,
                winners: cell(r, 6, "winners")?,
                winners_correct: cell(r, 7, "winners_correct")?,
            });
        }
        Ok(())
    }
}
