//! The history database: SQLite (a file, the default) or PostgreSQL (`postgres://…`), one schema with
//! versioned migrations, and one SQL text per statement for both (placeholders `$1…`, which SQLite
//! reads as `?1…`).
//!
//! Safety: every folder is ingested in one transaction, keyed by the digest of its document (a
//! `UNIQUE` column), so a folder is stored completely or not at all (a `kill -9` mid-ingest leaves
//! nothing of that folder), the same folder twice is stored once, and concurrent writers (Slurm tasks
//! ingesting at once) serialize on the database's own locks: SQLite's write lock (`BEGIN IMMEDIATE`,
//! a busy timeout, write-ahead log) and PostgreSQL's unique index (a second insert of the same digest
//! waits for the first transaction and then does nothing).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::Error;
use crate::ingest::{Folder, SeriesKey};

/// The schema version this program writes; a database with a higher one is refused.
pub const SCHEMA_VERSION: i64 = 1;

/// The migrations, in order: `(version, statements)`. The statements are written for SQLite;
/// [`Dialect::adapt`] turns them into PostgreSQL's.
const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        digest TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        created TEXT NOT NULL,
        commit_ref TEXT NOT NULL,
        ingested TEXT NOT NULL
    );
    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        workload TEXT NOT NULL,
        model TEXT NOT NULL,
        label TEXT NOT NULL,
        operation TEXT NOT NULL,
        runtime TEXT NOT NULL,
        runtime_version TEXT NOT NULL,
        machine TEXT NOT NULL,
        machine_name TEXT NOT NULL,
        metric TEXT NOT NULL,
        UNIQUE (workload, runtime, runtime_version, machine, metric)
    );
    CREATE TABLE points (
        id INTEGER PRIMARY KEY,
        series_id BIGINT NOT NULL REFERENCES series (id),
        result_id BIGINT NOT NULL REFERENCES results (id),
        case_dir TEXT NOT NULL,
        estimate DOUBLE PRECISION NOT NULL,
        low DOUBLE PRECISION,
        high DOUBLE PRECISION,
        confidence DOUBLE PRECISION,
        count BIGINT NOT NULL,
        verdict TEXT NOT NULL,
        UNIQUE (series_id, result_id, case_dir)
    );
    CREATE INDEX points_by_result ON points (result_id);",
)];

const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS trtmc_history_migrations (
    version BIGINT PRIMARY KEY,
    applied TEXT NOT NULL
)";

/// A key for PostgreSQL's transaction-level advisory lock that serializes migrations.
const MIGRATION_LOCK: i64 = 0x7472_746d_6368;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn adapt(self, sql: &str) -> String {
        match self {
            Dialect::Sqlite => sql.replace('$', "?"),
            Dialect::Postgres => sql.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"),
        }
    }
}

enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: Box<postgres::Client>,
        prepared: HashMap<&'static str, postgres::Statement>,
    },
}

/// A value going into or coming out of a statement.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i64),
    Real(f64),
    Text(String),
    /// SQL NULL (written as a NULL double: the only nullable columns are intervals).
    Null,
}

impl Value {
    fn int(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            Value::Real(f) => *f as i64,
            _ => 0,
        }
    }
    fn real(&self) -> Option<f64> {
        match self {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    fn text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            _ => String::new(),
        }
    }
}

fn opt(v: Option<f64>) -> Value {
    v.map(Value::Real).unwrap_or(Value::Null)
}

/// An open history database.
pub struct Store {
    /// The database as given (a path or a URL with its password removed), for messages.
    db: String,
    conn: Conn,
    /// Series ids already known to exist (series are never deleted).
    series_ids: HashMap<SeriesKey, i64>,
}

/// What ingesting one folder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingested {
    /// Stored, with this many points.
    Stored {
        /// Points stored from the folder.
        points: usize,
    },
    /// A result with the same digest was stored before: nothing changed.
    AlreadyStored,
}

/// A series with its extent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The database id, as `history show SERIES` takes it.
    pub id: i64,
    /// What the series measures.
    #[serde(flatten)]
    pub key: SeriesKey,
    /// Number of stored points.
    pub points: i64,
    /// Creation time of its oldest result (RFC 3339).
    pub first: String,
    /// Creation time of its newest result (RFC 3339).
    pub last: String,
}

/// A stored point with its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Id of the series it belongs to.
    pub series: i64,
    /// The measured value, in the metric's unit (ms for every metric so far).
    pub estimate: f64,
    /// Lower end of the estimate's interval, when the result has one.
    pub low: Option<f64>,
    /// Upper end of that interval.
    pub high: Option<f64>,
    /// The interval's confidence level, as a fraction.
    pub confidence: Option<f64>,
    /// Timed calls behind the estimate.
    pub count: i64,
    /// `completed`, `interrupted`, or a matrix light.
    pub verdict: String,
    /// The case or matrix row within the result folder.
    pub case_dir: String,
    /// The commit the result belongs to.
    pub commit: String,
    /// When the result was created (RFC 3339).
    pub created: String,
    /// The result folder, as it was given to `history add`.
    pub folder: String,
    /// What wrote the folder: `run`, `matrix` or `tune` ([`crate::ingest::Kind::label`]).
    pub kind: String,
    /// Database id of the result (one per ingested folder) the point came from.
    pub result: i64,
}

/// Whether `db` names a PostgreSQL server rather than a SQLite file.
pub fn is_postgres(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `db` without a password, for messages.
fn shown(db: &str) -> String {
    if !is_postgres(db) {
        return db.to_string();
    }
    // postgres://user:password@host/db → postgres://user:…@host/db
    match (db.find("://"), db.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &db[scheme + 3..at];
            match credentials.find(':') {
                Some(colon) => format!(
                    "{}{}:…{}",
                    &db[..scheme + 3],
                    &credentials[..colon],
                    &db[at..]
                ),
                None => db.to_string(),
            }
        }
        _ => db.to_string(),
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl Store {
    /// Opens (creating when needed) the database `db` and brings its schema up to date.
    pub fn open(db: &str) -> Result<Store, Error> {
        // SQLite answers "database is locked" at once, without waiting in its busy handler, in a few
        // races of connections opening one new file together (turning it to write-ahead logging, or
        // reading a log another connection is recovering); the whole open is retried for as long as a
        // statement would wait. The migration runs in one transaction, so a retry starts clean.
        let deadline = Instant::now() + SQLITE_BUSY_TIMEOUT;
        loop {
            match Self::open_once(db) {
                Err(e) if sqlite_busy(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(25));
                }
                opened => return opened,
            }
        }
    }

    fn open_once(db: &str) -> Result<Store, Error> {
        let conn = if is_postgres(db) {
            let client =
                postgres::Client::connect(db, postgres::NoTls).map_err(|e| Error::Connect {
                    db: shown(db),
                    source: Box::new(e),
                })?;
            Conn::Postgres {
                client: Box::new(client),
                prepared: HashMap::new(),
            }
        } else {
            Conn::Sqlite(
                open_sqlite(Path::new(db)).map_err(|source| Error::OpenFile {
                    db: db.to_string(),
                    source,
                })?,
            )
        };
        let mut store = Store {
            db: shown(db),
            conn,
            series_ids: HashMap::new(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database for messages (no password).
    pub fn name(&self) -> &str {
        &self.db
    }

    fn dialect(&self) -> Dialect {
        match self.conn {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres { .. } => Dialect::Postgres,
        }
    }

    fn failed(&self, what: &str, source: BoxError) -> Error {
        Error::Database {
            db: self.db.clone(),
            what: what.to_string(),
            source,
        }
    }

    /// Runs statements without parameters or results (`BEGIN`, `COMMIT`, a migration).
    fn batch(&mut self, what: &str, sql: &str) -> Result<(), Error> {
        let result: Result<(), BoxError> = match &mut self.conn {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.into()),
            Conn::Postgres { client, .. } => client.batch_execute(sql).map_err(|e| e.into()),
        };
        result.map_err(|e| self.failed(what, e))
    }

    /// Runs one statement and returns its rows.
    fn query(
        &mut self,
        what: &str,
        sql: &'static str,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, Error> {
        let dialect = self.dialect();
        let result: Result<Vec<Vec<Value>>, BoxError> = match &mut self.conn {
            Conn::Sqlite(c) => query_sqlite(c, &dialect.adapt(sql), params).map_err(|e| e.into()),
            Conn::Postgres { client, prepared } => {
                query_postgres(client, prepared, sql, params).map_err(|e| e.into())
            }
        };
        result.map_err(|e| self.failed(what, e))
    }

    fn migrate(&mut self) -> Result<(), Error> {
        let dialect = self.dialect();
        match dialect {
            // IMMEDIATE: take the write lock now, so two first opens do not both try to migrate.
            Dialect::Sqlite => self.batch("starting the migration", "BEGIN IMMEDIATE")?,
            Dialect::Postgres => self.batch(
                "starting the migration",
                &format!("BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"),
            )?,
        }
        let outcome = self.apply_migrations(dialect);
        match outcome {
            Ok(()) => self.batch("committing the migration", "COMMIT"),
            Err(e) => {
                let _ = self.batch("rolling back the migration", "ROLLBACK");
                Err(e)
            }
        }
    }

    fn apply_migrations(&mut self, dialect: Dialect) -> Result<(), Error> {
        self.batch("creating the migrations table", MIGRATIONS_TABLE)?;
        let rows = self.query(
            "reading the schema version",
            "SELECT MAX(version) FROM trtmc_history_migrations",
            &[],
        )?;
        let found = rows
            .first()
            .and_then(|r| r.first())
            .map(Value::int)
            .unwrap_or(0);
        if found > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                db: self.db.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        for (version, statements) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
            self.batch(&format!("migration {version}"), &dialect.adapt(statements))?;
            self.query(
                "recording the migration",
                "INSERT INTO trtmc_history_migrations (version, applied) VALUES ($1, $2)",
                &[Value::Int(*version), Value::Text(now())],
            )?;
        }
        Ok(())
    }

    /// The schema version of the database.
    pub fn schema_version(&mut self) -> Result<i64, Error> {
        let rows = self.query(
            "reading the schema version",
            "SELECT MAX(version) FROM trtmc_history_migrations",
            &[],
        )?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .map(Value::int)
            .unwrap_or(0))
    }

    /// Stores `folder` in one transaction: all its points or, when its digest is already stored,
    /// nothing.
    pub fn ingest(&mut self, folder: &Folder) -> Result<Ingested, Error> {
        let begin = match self.dialect() {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        };
        self.batch("starting a transaction", begin)?;
        let mut new_series = HashMap::new();
        match self.ingest_in_transaction(folder, &mut new_series) {
            Ok(outcome) => {
                self.batch("committing", "COMMIT")?;
                self.series_ids.extend(new_series);
                Ok(outcome)
            }
            Err(e) => {
                let _ = self.batch("rolling back", "ROLLBACK");
                Err(e)
            }
        }
    }

    fn ingest_in_transaction(
        &mut self,
        folder: &Folder,
        new_series: &mut HashMap<SeriesKey, i64>,
    ) -> Result<Ingested, Error> {
        let inserted = self.query(
            "storing the result",
            "INSERT INTO results (digest, kind, path, created, commit_ref, ingested)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO NOTHING RETURNING id",
            &[
                Value::Text(folder.digest.clone()),
                Value::Text(folder.kind.label().into()),
                Value::Text(folder.path.to_string_lossy().into_owned()),
                Value::Text(folder.created.clone()),
                Value::Text(folder.commit.clone()),
                Value::Text(now()),
            ],
        )?;
        let Some(result_id) = inserted.first().and_then(|r| r.first()).map(Value::int) else {
            return Ok(Ingested::AlreadyStored);
        };
        for point in &folder.points {
            let series = match self
                .series_ids
                .get(&point.key)
                .or(new_series.get(&point.key))
            {
                Some(id) => *id,
                None => {
                    let id = self.series_id(&point.key)?;
                    new_series.insert(point.key.clone(), id);
                    id
                }
            };
            self.query(
                "storing a point",
                "INSERT INTO points (series_id, result_id, case_dir, estimate, low, high, confidence, count, verdict)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (series_id, result_id, case_dir) DO NOTHING",
                &[
                    Value::Int(series),
                    Value::Int(result_id),
                    Value::Text(point.case_dir.clone()),
                    Value::Real(point.estimate),
                    opt(point.low),
                    opt(point.high),
                    opt(point.confidence),
                    Value::Int(point.count),
                    Value::Text(point.verdict.clone()),
                ],
            )?;
        }
        Ok(Ingested::Stored {
            points: folder.points.len(),
        })
    }

    /// The id of the series `key`, created when it is new.
    fn series_id(&mut self, key: &SeriesKey) -> Result<i64, Error> {
        self.query(
            "storing a series",
            "INSERT INTO series (workload, model, label, operation, runtime, runtime_version, machine, machine_name, metric)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (workload, runtime, runtime_version, machine, metric) DO NOTHING",
            &[
                Value::Text(key.workload.clone()),
                Value::Text(key.model.clone()),
                Value::Text(key.label.clone()),
                Value::Text(key.operation.clone()),
                Value::Text(key.runtime.clone()),
                Value::Text(key.runtime_version.clone()),
                Value::Text(key.machine.clone()),
                Value::Text(key.machine_name.clone()),
                Value::Text(key.metric.clone()),
            ],
        )?;
        let rows = self.query(
            "finding a series",
            "SELECT id FROM series WHERE workload = $1 AND runtime = $2 AND runtime_version = $3
             AND machine = $4 AND metric = $5",
            &[
                Value::Text(key.workload.clone()),
                Value::Text(key.runtime.clone()),
                Value::Text(key.runtime_version.clone()),
                Value::Text(key.machine.clone()),
                Value::Text(key.metric.clone()),
            ],
        )?;
        match rows.first().and_then(|r| r.first()) {
            Some(id) => Ok(id.int()),
            None => Err(self.failed(
                "finding a series just stored",
                "the series row is missing after its insert".into(),
            )),
        }
    }

    /// Every series with its point count and extent, ordered by model, case, metric and first point.
    pub fn series(&mut self) -> Result<Vec<Series>, Error> {
        let rows = self.query(
            "listing the series",
            "SELECT s.id, s.workload, s.model, s.label, s.operation, s.runtime, s.runtime_version,
                    s.machine, s.machine_name, s.metric, COUNT(p.id), MIN(r.created), MAX(r.created)
             FROM series s JOIN points p ON p.series_id = s.id JOIN results r ON r.id = p.result_id
             GROUP BY s.id, s.workload, s.model, s.label, s.operation, s.runtime, s.runtime_version,
                    s.machine, s.machine_name, s.metric
             ORDER BY s.model, s.label, s.metric, MIN(r.created), s.id",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| Series {
                id: r[0].int(),
                key: SeriesKey {
                    workload: r[1].text(),
                    model: r[2].text(),
                    label: r[3].text(),
                    operation: r[4].text(),
                    runtime: r[5].text(),
                    runtime_version: r[6].text(),
                    machine: r[7].text(),
                    machine_name: r[8].text(),
                    metric: r[9].text(),
                },
                points: r[10].int(),
                first: r[11].text(),
                last: r[12].text(),
            })
            .collect())
    }

    /// The points of every series, each series in order (time of the result, then ingest order).
    pub fn all_points(&mut self) -> Result<HashMap<i64, Vec<Point>>, Error> {
        let rows = self.query(
            "reading the points",
            "SELECT p.series_id, p.estimate, p.low, p.high, p.confidence, p.count, p.verdict, p.case_dir,
                    r.commit_ref, r.created, r.path, r.kind, r.id
             FROM points p JOIN results r ON r.id = p.result_id
             ORDER BY p.series_id, r.created, r.id, p.id",
            &[],
        )?;
        let mut by_series: HashMap<i64, Vec<Point>> = HashMap::new();
        for r in rows {
            let p = point(&r);
            by_series.entry(p.series).or_default().push(p);
        }
        Ok(by_series)
    }

    /// The points of one series in order; an unknown id is [`Error::UnknownSeries`].
    pub fn points(&mut self, series: i64) -> Result<Vec<Point>, Error> {
        let rows = self.query(
            "reading the points",
            "SELECT p.series_id, p.estimate, p.low, p.high, p.confidence, p.count, p.verdict, p.case_dir,
                    r.commit_ref, r.created, r.path, r.kind, r.id
             FROM points p JOIN results r ON r.id = p.result_id
             WHERE p.series_id = $1
             ORDER BY r.created, r.id, p.id",
            &[Value::Int(series)],
        )?;
        if rows.is_empty() {
            return Err(Error::UnknownSeries {
                db: self.db.clone(),
                id: series,
            });
        }
        Ok(rows.iter().map(|r| point(r)).collect())
    }

    /// How many results and points are stored.
    pub fn counts(&mut self) -> Result<(i64, i64), Error> {
        let rows = self.query(
            "counting",
            "SELECT (SELECT COUNT(*) FROM results), (SELECT COUNT(*) FROM points)",
            &[],
        )?;
        let r = rows.first().cloned().unwrap_or_default();
        Ok((
            r.first().map(Value::int).unwrap_or(0),
            r.get(1).map(Value::int).unwrap_or(0),
        ))
    }
}

fn point(r: &[Value]) -> Point {
    Point {
        series: r[0].int(),
        estimate: r[1].real().unwrap_or(f64::NAN),
        low: r[2].real(),
        high: r[3].real(),
        confidence: r[4].real(),
        count: r[5].int(),
        verdict: r[6].text(),
        case_dir: r[7].text(),
        commit: r[8].text(),
        created: r[9].text(),
        folder: r[10].text(),
        kind: r[11].text(),
        result: r[12].int(),
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long a SQLite statement waits for another connection's lock before it fails.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// An error that is SQLite's "busy" or "locked": another connection held the lock.
fn sqlite_busy(e: &Error) -> bool {
    let source = match e {
        Error::OpenFile { source, .. } | Error::Database { source, .. } => source,
        _ => return false,
    };
    matches!(
        source.downcast_ref::<rusqlite::Error>(),
        Some(rusqlite::Error::SqliteFailure(f, _))
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn open_sqlite(path: &Path) -> Result<rusqlite::Connection, BoxError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    let conn = rusqlite::Connection::open(path)?;
    // Concurrent writers wait for each other's transactions instead of failing.
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    // Write-ahead log: readers never block the writer; with synchronous=NORMAL a commit survives a
    // killed process (only a power cut may lose the last commits, never corrupt the file).
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    Ok(conn)
}

fn query_sqlite(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<Vec<Vec<Value>>> {
    use rusqlite::types::{Value as V, ValueRef};
    let mut stmt = conn.prepare(sql)?;
    let columns = stmt.column_count();
    let bound = params.iter().map(|p| match p {
        Value::Int(i) => V::Integer(*i),
        Value::Real(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.clone()),
        Value::Null => V::Null,
    });
    let mut rows = stmt.query(rusqlite::params_from_iter(bound))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(columns);
        for i in 0..columns {
            values.push(match row.get_ref(i)? {
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Real(f) => Value::Real(f),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Null | ValueRef::Blob(_) => Value::Null,
            });
        }
        out.push(values);
    }
    Ok(out)
}

fn query_postgres(
    client: &mut postgres::Client,
    prepared: &mut HashMap<&'static str, postgres::Statement>,
    sql: &'static str,
    params: &[Value],
) -> Result<Vec<Vec<Value>>, postgres::Error> {
    use postgres::types::{ToSql, Type};
    let statement = match prepared.get(sql) {
        Some(s) => s.clone(),
        None => {
            let s = client.prepare(sql)?;
            prepared.insert(sql, s.clone());
            s
        }
    };
    let boxed: Vec<Box<dyn ToSql + Sync>> = params
        .iter()
        .map(|p| -> Box<dyn ToSql + Sync> {
            match p {
                Value::Int(i) => Box::new(*i),
                Value::Real(f) => Box::new(*f),
                Value::Text(s) => Box::new(s.clone()),
                Value::Null => Box::new(None::<f64>),
            }
        })
        .collect();
    let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
    let rows = client.query(&statement, &refs)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut values = Vec::with_capacity(row.len());
        for (i, column) in row.columns().iter().enumerate() {
            let t = column.type_();
            values.push(if *t == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)?
                    .map_or(Value::Null, Value::Int)
            } else if *t == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)?
                    .map_or(Value::Null, |v| Value::Int(v.into()))
            } else if *t == Type::FLOAT8 {
                row.try_get::<_, Option<f64>>(i)?
                    .map_or(Value::Null, Value::Real)
            } else if *t == Type::TEXT || *t == Type::VARCHAR {
                row.try_get::<_, Option<String>>(i)?
                    .map_or(Value::Null, Value::Text)
            } else {
                Value::Null
            });
        }
        out.push(values);
    }
    Ok(out)
}
