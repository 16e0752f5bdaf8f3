//! Change-point detection at scale: a SQLite database of 1,000 series × 500 points (filled on first
//! use, through the same ingest as `history add`), then `check::analyze` (read every point, detect the
//! changes of every series) timed `REPEATS` times (docs/performance.md, "history (issue 38)").
//!
//!     cargo run --release -p trtmc-history --example scale -- /tmp/scale.sqlite [REPEATS]

use std::path::PathBuf;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use trtmc_history::changes::Rule;
use trtmc_history::check;
use trtmc_history::ingest::{Folder, Kind, METRIC_P50, NewPoint, SeriesKey};
use trtmc_history::store::Store;

const SERIES: usize = 1000;
const POINTS: usize = 500;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(db) = args.next() else {
        eprintln!("usage: scale DB [REPEATS]");
        std::process::exit(2);
    };
    let repeats: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let mut store = Store::open(&db).expect("open");
    if store.counts().expect("counts").1 == 0 {
        let started = Instant::now();
        let mut rng = ChaCha8Rng::seed_from_u64(500);
        // Every tenth series steps up by 30 % at point 300.
        for i in 0..POINTS {
            let points = (0..SERIES)
                .map(|s| {
                    let level = if s % 10 == 0 && i >= 300 { 1.3 } else { 1.0 };
                    let v = level * (1.0 + 0.03 * (rng.random::<f64>() - 0.5));
                    NewPoint {
                        key: SeriesKey {
                            workload: format!("w{s}"),
                            model: format!("model-{}", s / 10),
                            label: format!("case-{}", s % 10),
                            operation: "classify".into(),
                            runtime: "tract".into(),
                            runtime_version: "0.23.9".into(),
                            machine: "bench".into(),
                            machine_name: "bench".into(),
                            metric: METRIC_P50.into(),
                        },
                        case_dir: format!("{s:04}"),
                        estimate: v,
                        low: Some(v * 0.99),
                        high: Some(v * 1.01),
                        confidence: Some(0.95),
                        count: 1000,
                        verdict: "completed".into(),
                    }
                })
                .collect();
            store
                .ingest(&Folder {
                    kind: Kind::Run,
                    digest: format!("scale-{i}"),
                    path: PathBuf::from(format!("results/{i:03}")),
                    created: format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60),
                    commit: format!("c{i:03}"),
                    points,
                })
                .expect("ingest");
        }
        eprintln!(
            "filled {SERIES} series × {POINTS} points in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    for _ in 0..repeats {
        let started = Instant::now();
        let analyzed = check::analyze(&mut store, &Rule::default()).expect("analyze");
        let seconds = started.elapsed().as_secs_f64();
        let changes: usize = analyzed.iter().map(|a| a.changes.len()).sum();
        let points: usize = analyzed.iter().map(|a| a.points.len()).sum();
        println!(
            "{} series, {points} points, {changes} changes: {seconds:.2} s",
            analyzed.len()
        );
    }
}
