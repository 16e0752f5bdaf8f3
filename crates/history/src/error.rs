//! What can go wrong with a history database or a folder given to it.

use std::path::PathBuf;

type Source = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite file (or its folder) cannot be created or opened.
    #[error(
        "cannot open the history database {db}; check that its folder is writable, or pass another with --db"
    )]
    OpenFile {
        db: String,
        #[source]
        source: Source,
    },
    /// The PostgreSQL server cannot be reached or refused the login.
    #[error(
        "cannot connect to the PostgreSQL history database {db}; check that the server runs and the URL's user, password and database"
    )]
    Connect {
        db: String,
        #[source]
        source: Source,
    },
    /// The database was written by a newer trtmc.
    #[error(
        "the history database {db} has schema version {found}, newer than this trtmc-bench knows ({known}); use a newer trtmc-bench"
    )]
    NewerSchema { db: String, found: i64, known: i64 },
    /// A statement failed (disk full, a dropped connection, a read-only file).
    #[error("history database {db}: {what} failed")]
    Database {
        db: String,
        what: String,
        #[source]
        source: Source,
    },
    /// A folder given to `history add` holds no result trtmc can ingest.
    #[error(
        "{}: not a trtmc result folder (no result.json of `run`, results.json of `matrix run` nor tuning-summary.json of `tune`); give the folder `run -o`, `matrix run -o` or `tune -o` wrote",
        dir.display()
    )]
    NotAResult { dir: PathBuf },
    /// A result document without a part the history needs.
    #[error("{}: this result has no `{missing}` (written by an older trtmc?); run it again with this version", path.display())]
    Incomplete {
        path: PathBuf,
        missing: &'static str,
    },
    /// A result document that cannot be read or parsed.
    #[error("{}: cannot read this result document; is the folder complete?", path.display())]
    Document {
        path: PathBuf,
        #[source]
        source: Source,
    },
    /// `history show SERIES` with an id no series has.
    #[error(
        "no series {id} in the history database {db}; `trtmc-bench history list` shows the series"
    )]
    UnknownSeries { db: String, id: i64 },
    /// `--since REF` naming a commit no point has.
    #[error(
        "--since {commit}: no result in the history database has this commit; `trtmc-bench history show SERIES` lists the commits"
    )]
    UnknownCommit { commit: String },
    /// Writing the report or an export failed.
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
