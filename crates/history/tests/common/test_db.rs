//! The databases a history test runs on: a SQLite file always, and a scratch PostgreSQL database
//! when TRTMC_TEST_POSTGRES=postgres://… names a server. Shared by the store's tests and the CLI's
//! (`#[path]` includes this file), so both create and drop their databases the same way.

#![allow(dead_code)]

use std::path::Path;

/// A database for one test: a SQLite file, or a scratch PostgreSQL database dropped afterwards.
pub struct Db {
    pub url: String,
    pub admin: Option<(String, String)>,
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.admin
            && let Ok(mut c) = postgres::Client::connect(admin, postgres::NoTls)
        {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// The databases the test `test` runs on: `dir/TEST.sqlite`, and on PostgreSQL a database named
/// `PREFIX_TEST_PID` (the prefix tells whose tests left it, should one be left behind).
pub fn databases(dir: &Path, prefix: &str, test: &str) -> Vec<Db> {
    let mut out = vec![Db {
        url: dir.join(format!("{test}.sqlite")).display().to_string(),
        admin: None,
    }];
    if let Ok(admin) = std::env::var("TRTMC_TEST_POSTGRES")
        && !admin.is_empty()
    {
        let name = format!("{prefix}_{test}_{}", std::process::id());
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("TRTMC_TEST_POSTGRES={admin} is set but unreachable: {e}"));
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .and_then(|()| c.batch_execute(&format!("CREATE DATABASE {name}")))
            .expect("create the test database");
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
        out.push(Db {
            url: format!("{base}/{name}"),
            admin: Some((admin.clone(), name)),
        });
    }
    out
}
