//! What can go wrong with a history database or a folder given to it.

use std::path::PathBuf;

type Source = Box<dyn std::error::Error + Send + Sync>;

/// Why a history command failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite file (or its folder) cannot be created or opened.
    #[error(
        "cannot open the history database {db}; check that its folder is writable, or pass another with --db"
    )]
    OpenFile {
        /// The database as given (`--db`: a SQLite path or a PostgreSQL URL).
        db: String,
        /// The driver's error.
        #[source]
        source: Source,
    },
    /// The PostgreSQL server cannot be reached or refused the login.
    #[error(
        "cannot connect to the PostgreSQL history database {db}; check that the server runs and the URL's user, password and database"
    )]
    Connect {
        /// The database as given (`--db`: a SQLite path or a PostgreSQL URL).
        db: String,
        /// The driver's error.
        #[source]
        source: Source,
    },
    /// The database was written by a newer trtmc.
    #[error(
        "the history database {db} has schema version {found}, newer than this trtmc-bench knows ({known}); use a newer trtmc-bench"
    )]
    NewerSchema {
        /// The database as given (`--db`: a SQLite path or a PostgreSQL URL).
        db: String,
        /// The database's schema version.
        found: i64,
        /// The newest schema version this program knows.
        known: i64,
    },
    /// A statement failed (disk full, a dropped connection, a read-only file).
    #[error("history database {db}: {what} failed")]
    Database {
        /// The database as given (`--db`: a SQLite path or a PostgreSQL URL).
        db: String,
        /// What was being done (a statement's purpose).
        what: String,
        /// The driver's error.
        #[source]
        source: Source,
    },
    /// A folder given to `history add` holds no result trtmc can ingest.
    #[error(
        "{}: not a trtmc result folder (no result.json of `run`, results.json of `matrix run` nor tuning-summary.json of `tune`); give the folder `run -o`, `matrix run -o` or `tune -o` wrote",
        dir.display()
    )]
    NotAResult {
        /// The folder given.
        dir: PathBuf,
    },
    /// A result document without a part the history needs.
    #[error("{}: this result has no `{missing}` (written by an older trtmc?); run it again with this version", path.display())]
    Incomplete {
        /// The result document.
        path: PathBuf,
        /// The missing part, as its JSON key.
        missing: &'static str,
    },
    /// A result document that cannot be read or parsed.
    #[error("{}: cannot read this result document; is the folder complete?", path.display())]
    Document {
        /// The result document.
        path: PathBuf,
        /// The read or parse error.
        #[source]
        source: Source,
    },
    /// `history show SERIES` with an id no series has.
    #[error(
        "no series {id} in the history database {db}; `trtmc-bench history list` shows the series"
    )]
    UnknownSeries {
        /// The database as given (`--db`: a SQLite path or a PostgreSQL URL).
        db: String,
        /// The id asked for.
        id: i64,
    },
    /// `--since REF` naming a commit no point has.
    #[error(
        "--since {commit}: no result in the history database has this commit; `trtmc-bench history show SERIES` lists the commits"
    )]
    UnknownCommit {
        /// The commit as given.
        commit: String,
    },
    /// Writing the report or an export failed.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
}
