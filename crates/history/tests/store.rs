//! The store on both databases: the same tests run on SQLite always, and on PostgreSQL when
//! TRTMC_TEST_POSTGRES=postgres://… names a server (CI starts one in `.ci/run`; each test creates its
//! own database there and drops it).

#[path = "common/test_db.rs"]
mod test_db;

use std::path::PathBuf;

use test_db::databases;

use trtmc_history::Error;
use trtmc_history::changes::Rule;
use trtmc_history::check;
use trtmc_history::ingest::{Folder, Kind, METRIC_P50, NewPoint, SeriesKey};
use trtmc_history::store::{Ingested, SCHEMA_VERSION, Store};

fn key(workload: &str, version: &str) -> SeriesKey {
    SeriesKey {
        workload: workload.into(),
        model: "tiny-cnn".into(),
        label: "single".into(),
        operation: "classify".into(),
        runtime: "tract".into(),
        runtime_version: version.into(),
        machine: "m1".into(),
        machine_name: "test cpu × 2".into(),
        metric: METRIC_P50.into(),
    }
}

fn folder(i: usize, value: f64, version: &str) -> Folder {
    Folder {
        kind: Kind::Run,
        digest: format!("digest-{i}-{version}"),
        path: PathBuf::from(format!("results/{i:03}")),
        created: format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60),
        commit: format!("c{i:03}"),
        points: vec![NewPoint {
            key: key("w1", version),
            case_dir: "001-tiny-cnn-single".into(),
            estimate: value,
            low: Some(value * 0.99),
            high: Some(value * 1.01),
            confidence: Some(0.95),
            count: 100,
            verdict: "completed".into(),
        }],
    }
}

#[test]
fn a_folder_is_stored_once_and_its_points_come_back_in_order() {
    let dir = tempfile::tempdir().expect("tmp");
    for db in databases(dir.path(), "trtmc", "once") {
        let mut store = Store::open(&db.url).expect("open");
        assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
        for i in 0..5 {
            let f = folder(i, 1.0 + i as f64, "1");
            assert_eq!(
                store.ingest(&f).expect("ingest"),
                Ingested::Stored { points: 1 }
            );
        }
        // Again, from another connection: nothing changes.
        let mut again = Store::open(&db.url).expect("reopen");
        assert_eq!(
            again.ingest(&folder(2, 3.0, "1")).expect("ingest"),
            Ingested::AlreadyStored
        );
        assert_eq!(again.counts().expect("counts"), (5, 5));
        let series = again.series().expect("series");
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].points, 5);
        let points = again.points(series[0].id).expect("points");
        let estimates: Vec<f64> = points.iter().map(|p| p.estimate).collect();
        assert_eq!(estimates, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(points[4].commit, "c004");
        assert_eq!(points[4].low, Some(5.0 * 0.99));
        assert!(matches!(
            again.points(9999),
            Err(Error::UnknownSeries { id: 9999, .. })
        ));
    }
}

#[test]
fn a_new_runtime_version_starts_a_new_series_with_a_boundary() {
    let dir = tempfile::tempdir().expect("tmp");
    for db in databases(dir.path(), "trtmc", "boundary") {
        let mut store = Store::open(&db.url).expect("open");
        for i in 0..4 {
            store.ingest(&folder(i, 1.0, "0.23.8")).expect("ingest");
        }
        for i in 4..8 {
            store.ingest(&folder(i, 1.5, "0.23.9")).expect("ingest");
        }
        let analyzed = check::analyze(&mut store, &Rule::default()).expect("analyze");
        assert_eq!(analyzed.len(), 2, "two series, never one line");
        assert!(
            analyzed
                .iter()
                .all(|a| a.points.len() == 4 && a.changes.is_empty())
        );
        let series: Vec<_> = analyzed.iter().map(|a| a.series.clone()).collect();
        let b = check::boundaries(&series);
        assert_eq!(b.len(), 1);
        assert_eq!(
            b[0].changed,
            vec!["tract version 0.23.8 → 0.23.9".to_string()]
        );
    }
}

#[test]
fn a_step_in_a_stored_series_is_a_regression_since_the_commit_before_it() {
    let dir = tempfile::tempdir().expect("tmp");
    for db in databases(dir.path(), "trtmc", "step") {
        let mut store = Store::open(&db.url).expect("open");
        for i in 0..20 {
            let value = if i < 11 { 2.0 } else { 2.6 } * (1.0 + 0.01 * ((i % 3) as f64 - 1.0));
            store.ingest(&folder(i, value, "1")).expect("ingest");
        }
        let analyzed = check::analyze(&mut store, &Rule::default()).expect("analyze");
        let found = &analyzed[0].changes;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].change.at, 11);
        assert_eq!(
            (
                found[0].last_good_commit.as_str(),
                found[0].first_changed_commit.as_str()
            ),
            ("c010", "c011")
        );
        assert_eq!(
            found[0].after_folders.first().map(String::as_str),
            Some("results/011")
        );
        assert_eq!(check::regressions(&analyzed, None).expect("all").len(), 1);
        assert_eq!(
            check::regressions(&analyzed, Some("c005"))
                .expect("since")
                .len(),
            1
        );
        assert!(
            check::regressions(&analyzed, Some("c011"))
                .expect("since")
                .is_empty()
        );
        assert!(matches!(
            check::regressions(&analyzed, Some("nope")),
            Err(Error::UnknownCommit { .. })
        ));
    }
}

#[test]
fn concurrent_writers_store_every_folder_once() {
    let dir = tempfile::tempdir().expect("tmp");
    for db in databases(dir.path(), "trtmc", "concurrent") {
        Store::open(&db.url).expect("create");
        // Four writers, each ingesting all 40 folders in a different order.
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let url = db.url.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&url).expect("open");
                    let mut stored = 0;
                    for k in 0..40 {
                        let i = (k * 7 + w * 11) % 40;
                        if let Ingested::Stored { .. } =
                            store.ingest(&folder(i, 1.0, "1")).expect("ingest")
                        {
                            stored += 1;
                        }
                    }
                    stored
                })
            })
            .collect();
        let stored: usize = writers.into_iter().map(|t| t.join().expect("writer")).sum();
        assert_eq!(stored, 40, "each folder stored by exactly one writer");
        let mut store = Store::open(&db.url).expect("open");
        assert_eq!(store.counts().expect("counts"), (40, 40));
        assert_eq!(store.series().expect("series").len(), 1);
    }
}

#[test]
fn concurrent_first_opens_migrate_once() {
    let dir = tempfile::tempdir().expect("tmp");
    for db in databases(dir.path(), "trtmc", "migrate") {
        let openers: Vec<_> = (0..4)
            .map(|_| {
                let url = db.url.clone();
                std::thread::spawn(move || Store::open(&url).map(|_| ()))
            })
            .collect();
        for o in openers {
            o.join().expect("thread").expect("open");
        }
        let mut store = Store::open(&db.url).expect("open");
        assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
    }
}

#[test]
fn a_database_of_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("newer.sqlite");
    Store::open(path.to_str().expect("utf8")).expect("create");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute(
        "INSERT INTO trtmc_history_migrations (version, applied) VALUES (?1, 'later')",
        [SCHEMA_VERSION + 1],
    )
    .expect("pretend a newer program wrote it");
    drop(conn);
    match Store::open(path.to_str().expect("utf8")) {
        Err(Error::NewerSchema { found, known, .. }) => {
            assert_eq!((found, known), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {:?}", other.err()),
    }
}

#[test]
fn an_unreachable_server_is_a_connect_error_without_the_password() {
    let e = Store::open("postgres://bench:secret@127.0.0.1:1/trtmc")
        .err()
        .expect("refused");
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("postgres://bench:…@127.0.0.1:1/trtmc"),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}
