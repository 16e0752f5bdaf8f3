//! Benchmark inputs and build timing of the report crate (docs/performance.md, `## report`; driven by
//! scripts/bench-report.sh).
//!
//! ```text
//! cargo build --release --workspace --examples
//! target/release/examples/report_bench OUT_DIR [CASES] [ROWS]
//! ```
//!
//! 1. Writes a synthetic collection of CASES cases (default 100: 10 run directories × 10 cases, 500
//!    observations each, with noise, warm-up drift, a slowdown, outliers and a 4-point sweep per run) under
//!    OUT_DIR/collection, then times `collection::write` (report.json + report.html) five times and prints
//!    the sizes.
//! 2. Writes OUT_DIR/matrix.html: a matrix-like page with a ROWS-row (default 1000) sortable, filterable
//!    table built from the shared components, for timing in Chromium, and OUT_DIR/matrix-baseline.html,
//!    the same page with one row (what Chromium costs without the table).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use trtmc_core::artifacts::{BENCHMARK_RUN_SCHEMA, Observation};
use trtmc_core::operations::operation;
use trtmc_core::result::reduce;
use trtmc_report::collection::{self, Options};
use trtmc_report::html::{Page, Section, pill, text};
use trtmc_report::table::{Cell, Column, Table};
use trtmc_report::validity::Policy;

/// xorshift64*: deterministic noise without a dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn observations(noise: &mut Noise, n: usize, base_ms: f64, shape: usize) -> Vec<Observation> {
    let mut start = 0u64;
    (0..n)
        .map(|i| {
            let mut ms = base_ms * (1.0 + 0.04 * (noise.next() - 0.5));
            if shape.is_multiple_of(3) && i < 30 {
                ms *= 1.5; // warm-up drift
            }
            if shape % 4 == 1 && i > n * 7 / 10 {
                ms *= 1.25; // slowdown
            }
            if noise.next() < 0.005 {
                ms *= 1.8; // outlier
            }
            let wall = (ms * 1e6) as u64;
            let o = Observation {
                iteration: i as u64,
                start_ns: start,
                wall_ns: wall,
                ..Default::default()
            };
            start += wall + 20_000;
            o
        })
        .collect()
}

fn write_run(dir: &Path, r: usize, cases: usize, noise: &mut Noise) -> std::io::Result<()> {
    let op = operation("test_sleep").expect("test_sleep is declared");
    let mut results = Vec::new();
    for c in 0..cases {
        let model = if c < 4 {
            "model-sweep".to_string()
        } else {
            format!("model-{:02}", c % 6)
        };
        let sweep: BTreeMap<String, String> = if c < 4 {
            BTreeMap::from([("request.batch_size".into(), (1usize << c).to_string())])
        } else {
            BTreeMap::new()
        };
        let label = if sweep.is_empty() {
            format!("case-{c}")
        } else {
            format!("sweep[request.batch_size={}]", 1usize << c)
        };
        let case_dir = format!("{:03}-{model}-{c}", c + 1);
        std::fs::create_dir_all(dir.join(&case_dir))?;
        let obs = observations(noise, 500, 2.0 + (c as f64) * 0.7 + r as f64 * 0.05, r + c);
        let lines: Vec<String> = obs
            .iter()
            .map(|o| serde_json::to_string(o).expect("observation serializes"))
            .collect();
        std::fs::write(
            dir.join(&case_dir).join("observations.jsonl"),
            lines.join("\n") + "\n",
        )?;
        // Written as JSON (not through the structs) so this keeps working as result types gain fields.
        results.push(serde_json::json!({
            "dir": case_dir,
            "model": model,
            "case": if sweep.is_empty() { format!("case-{c}") } else { "sweep".into() },
            "label": label,
            "task_strategy": "test_sleep",
            "operation": "test_sleep",
            "runtime": {"name": if r.is_multiple_of(2) { "tract" } else { "onnxruntime" }, "version": "1.0"},
            "status": "completed",
            "error": null,
            "identity": format!("{:064x}", r * 1000 + c),
            "bundle": null,
            "measurement": {"warmup": 5, "iterations": 500, "min_duration_s": 0.0, "observations": 500, "load_ms": 12.0},
            "metrics": reduce(op, &obs),
            "sweep_point": sweep,
            "request": {},
            "files": {
                "resolved_case": format!("{case_dir}/resolved-case.json"),
                "observations": format!("{case_dir}/observations.jsonl"),
                "worker_log": format!("{case_dir}/worker.log"),
                "telemetry": null
            }
        }));
    }
    let run = serde_json::json!({
        "schema": BENCHMARK_RUN_SCHEMA,
        "run_id": format!("run-{r}"),
        "created": "2026-01-01T00:00:00Z",
        "status": "completed",
        "command_line": ["trtmc-bench", "run"],
        "timing_boundary": "public_pipeline_call_wall",
        "percentile_method": "linear_interpolation_type7",
        "task_quality_evaluated": false,
        "provenance": {
            "program": {"name": "trtmc-bench", "version": "0.1.0", "revision": "bench", "build_profile": "release"},
            "runtimes": [],
            "machine": {
                "hostname": format!("host-{}", r % 3), "os": "linux", "arch": "x86_64",
                "cpu_model": "bench cpu", "logical_cpus": 2, "memory_bytes": null, "gpus": []
            }
        },
        "cases": results
    });
    std::fs::write(
        dir.join("result.json"),
        serde_json::to_vec_pretty(&run).map_err(std::io::Error::other)?,
    )
}

fn matrix_page(rows: usize) -> String {
    let mut noise = Noise(7);
    let mut t = Table::new(
        "matrix-table",
        vec![
            Column::text("entry"),
            Column::text("family").filter(),
            Column::text("operation").filter(),
            Column::text("light").filter(),
            Column::num("candidate p50 ms"),
            Column::num("reference p50 ms"),
            Column::num("ratio"),
            Column::num("95 % CI"),
            Column::text("bundle").filter(),
        ],
    );
    for i in 0..rows {
        let cand = 1.0 + noise.next() * 50.0;
        let refr = cand * (0.8 + noise.next() * 0.4);
        let ratio = cand / refr;
        let light = if ratio < 1.02 {
            "green"
        } else if ratio < 1.1 {
            "yellow"
        } else {
            "red"
        };
        t.push(vec![
            Cell::text(&format!("family-{}.model-{i}.generate", i % 76)),
            Cell::text(&format!("family-{}", i % 76)),
            Cell::text(["generate", "encode", "classify", "generate_image"][i % 4]),
            Cell::markup(pill(light, light), light),
            Cell::num(cand, &format!("{cand:.2}")),
            Cell::num(refr, &format!("{refr:.2}")),
            Cell::num(ratio, &format!("{ratio:.3}")),
            Cell::num(0.02, &format!("{:.3} – {:.3}", ratio - 0.01, ratio + 0.01)),
            Cell::text(if i.is_multiple_of(3) {
                "Built"
            } else {
                "cache hit"
            }),
        ]);
    }
    let mut page = Page::new("matrix", &format!("matrix-like table, {rows} rows"));
    page.subtitle
        .push(text("synthetic rows for the render benchmark"));
    page.sections.push(Section::new("rows", "Rows", t.render()));
    page.render()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .ok_or("usage: report_bench OUT_DIR [CASES] [ROWS]")?,
    );
    let cases: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100);
    let rows: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let root = out.join("collection");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    let mut noise = Noise(0x5eed);
    let runs = cases.div_ceil(10);
    for r in 0..runs {
        let n = (cases - r * 10).min(10);
        write_run(&root.join(format!("run-{r:02}")), r, n, &mut noise)?;
    }
    let opts = Options {
        roots: vec![root.clone()],
        output: None,
        policy: Policy::default(),
        strict: true,
    };
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let t0 = Instant::now();
        let outcome = collection::write(&opts)?;
        times.push(t0.elapsed().as_secs_f64());
        last = Some(outcome);
    }
    times.sort_by(f64::total_cmp);
    let outcome = last.ok_or("no run")?;
    let json_bytes = std::fs::metadata(&outcome.json)?.len();
    println!(
        "collection: {} runs, {} cases, {} sweeps; report.html {} bytes ({:.2} MB), report.json {} bytes",
        outcome.report.totals.runs,
        outcome.report.totals.cases,
        outcome.report.sweeps.len(),
        outcome.html_bytes,
        outcome.html_bytes as f64 / 1e6,
        json_bytes
    );
    println!(
        "build + write: min {:.3} s, median {:.3} s, max {:.3} s (5 runs)",
        times[0], times[2], times[4]
    );
    let page = matrix_page(rows);
    std::fs::write(out.join("matrix.html"), &page)?;
    println!("matrix.html: {rows} rows, {} bytes", page.len());
    std::fs::write(out.join("matrix-baseline.html"), matrix_page(1))?;
    Ok(())
}
