//! The history of trtmc results: every `run` and `matrix run` folder ingested into one database
//! (an embedded SQLite file, or a shared PostgreSQL server), cut into series that each mean one thing,
//! and searched for change points (docs/history.md).
//!
//! * [`store`]: the database, its versioned migrations, and ingest (one transaction per folder,
//!   idempotent by the digest of the folder's document);
//! * [`ingest`]: reading a result folder into points (no database involved);
//! * [`changes`]: E-divisive means change points, confirmed by the ratio-interval rule the matrix
//!   lights use (`trtmc_core::intervals`);
//! * [`check`]: the regressions since a commit, for `history check --fail-on regression`;
//! * [`report`]: the self-contained HTML page and the CSV and JSON exports.
//!
//! The library never prints: the CLI (`trtmc-bench history …`) presents what it returns.

pub mod changes;
pub mod check;
pub mod error;
pub mod ingest;
pub mod report;
pub mod store;

pub use error::Error;

/// The database used when `--db` is not given: `$TRTMC_HISTORY_DB`, else `history.sqlite` in the
/// user's data folder (`~/.local/share/trtmc/` on Linux).
pub fn default_db() -> Option<String> {
    if let Ok(db) = std::env::var(DB_ENV)
        && !db.is_empty()
    {
        return Some(db);
    }
    dirs::data_dir().map(|d| {
        d.join("trtmc")
            .join("history.sqlite")
            .to_string_lossy()
            .into_owned()
    })
}

/// The variable that names the default database (a path or a `postgres://` URL).
pub const DB_ENV: &str = "TRTMC_HISTORY_DB";
