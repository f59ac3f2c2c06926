//! The results database's schema: its migrations in order, each applied once and recorded, so a
//! database says which version it holds and an older gpassk refuses a newer one.

/// The schema version this gpassk writes and reads.
pub const VERSION: i64 = 6;

/// The statements that take a database from version `i` to `i + 1`, in order. Plain SQL that
/// SQLite and PostgreSQL both read: TEXT, BIGINT, DOUBLE PRECISION; times as RFC 3339 text; exact
/// values as numerator and denominator text (they outgrow every integer type).
pub const MIGRATIONS: [&str; 6] = [V1, V2, V3, V4, V5, V6];

const V1: &str = "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    dataset_sha256 TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    grader TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    harness_commit TEXT,
    task TEXT,
    imported TEXT,
    manifest TEXT NOT NULL,
    content_sha256 TEXT NOT NULL
);
CREATE TABLE run_models (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    position BIGINT NOT NULL,
    model_id TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    n BIGINT NOT NULL,
    units_planned BIGINT NOT NULL,
    ok BIGINT NOT NULL,
    truncated BIGINT NOT NULL,
    api_error BIGINT NOT NULL,
    correct BIGINT NOT NULL,
    wrong BIGINT NOT NULL,
    no_answer BIGINT NOT NULL,
    missing BIGINT NOT NULL,
    served_models TEXT NOT NULL,
    system_fingerprints TEXT NOT NULL,
    cost_total DOUBLE PRECISION,
    cost_currency TEXT,
    PRIMARY KEY (run_id, model)
);
CREATE TABLE metric_values (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    metric TEXT NOT NULL,
    family TEXT NOT NULL,
    k BIGINT,
    tau TEXT,
    subset TEXT NOT NULL,
    value DOUBLE PRECISION,
    ci_low DOUBLE PRECISION,
    ci_high DOUBLE PRECISION,
    problems BIGINT NOT NULL,
    exact_numerator TEXT,
    exact_denominator TEXT,
    PRIMARY KEY (run_id, model, metric, subset)
);
CREATE TABLE problem_counts (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    subset TEXT,
    n BIGINT NOT NULL,
    c BIGINT NOT NULL,
    greedy BIGINT,
    voters BIGINT NOT NULL,
    winners BIGINT NOT NULL,
    winners_correct BIGINT NOT NULL,
    PRIMARY KEY (run_id, model, problem_id)
);
CREATE TABLE fingerprint_counts (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    system_fingerprint TEXT NOT NULL,
    samples BIGINT NOT NULL,
    PRIMARY KEY (run_id, model, system_fingerprint)
);
";

/// Version 2: a row per graded sample (`store push --samples`); the sample index is -1 for the
/// greedy answer (a key column cannot be NULL in both databases).
const V2: &str = "
CREATE TABLE samples (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    sample BIGINT NOT NULL,
    extracted TEXT,
    verdict TEXT NOT NULL,
    response_sha256 TEXT,
    PRIMARY KEY (run_id, model, problem_id, sample)
);
";

/// Version 3: the per-problem values of the metrics that per-problem counts and votes do not give
/// (the verifier's bon@N, wmaj@N and maj@N, and pass@n past the k grid), with the Monte Carlo
/// standard error of a value estimated from sampled subsets, so a stored run reads back with every
/// metric its folder has. `position` is the metric's column among the model's metrics.
const V3: &str = "
CREATE TABLE problem_values (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    metric TEXT NOT NULL,
    position BIGINT NOT NULL,
    problem_id TEXT NOT NULL,
    problem_position BIGINT NOT NULL,
    value_numerator TEXT,
    value_denominator TEXT,
    std_error DOUBLE PRECISION,
    PRIMARY KEY (run_id, model, metric, problem_id)
);
";

/// Version 4: what tells a run from another of the same id (`origin`, where it was created, with
/// `created_at`), and the digest of its sample rows apart from the rest (`samples_sha256`, NULL
/// when none are stored), so a push without samples leaves stored ones alone.
const V4: &str = "
ALTER TABLE runs ADD COLUMN origin TEXT;
ALTER TABLE runs ADD COLUMN samples_sha256 TEXT;
";

/// Version 5: how each graded answer was found (`found_by`: `boxed`, `marker`, …, `last_number`,
/// `none`; NULL in rows pushed before, and for an answer a run kept without saying how), and per
/// model the answers counted by way (`found_by` `''` for those whose way was not recorded), so a
/// stored run reads back with the share the heuristics found.
const V5: &str = "
ALTER TABLE samples ADD COLUMN found_by TEXT;
CREATE TABLE found_by_counts (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    found_by TEXT NOT NULL,
    answers BIGINT NOT NULL,
    PRIMARY KEY (run_id, model, found_by)
);
";

/// Version 6: a problem's dataset `group` (problems of one group are one unit for intervals and
/// paired tests), so a stored run reads back with the clusters its folder has.
const V6: &str = "
ALTER TABLE problem_counts ADD COLUMN problem_group TEXT;
";

/// The table that records which migrations a database has.
pub const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS gpassk_schema (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)";

/// The tables `store export` writes, in the order a reader meets them.
pub const TABLES: [&str; 8] = [
    "runs",
    "run_models",
    "metric_values",
    "problem_counts",
    "fingerprint_counts",
    "problem_values",
    "found_by_counts",
    "samples",
];
