//! Reading one result folder into the points it contributes (no database involved).
//!
//! A point is one result: its estimate, its interval when the result has one, its count of timed
//! calls and its verdict. Its series key is what it measured (the workload identity trtmc records for
//! every case and matrix side), with which runtime and version, on which machine, and which metric: a
//! change in any of them starts another series, never a jump inside one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use trtmc_core::artifacts::matrix::{Results, RowStatus, Side};
use trtmc_core::artifacts::{BenchmarkRun, CaseStatus, MachineInfo, TuneSummary};
use trtmc_core::intervals;

use crate::Error;

/// The p50 latency of a case or matrix side, milliseconds (lower is better).
pub const METRIC_P50: &str = "p50_ms";
/// The p99 latency of a case, milliseconds (lower is better; no interval).
pub const METRIC_P99: &str = "p99_ms";
/// The file of a `tune -o` folder the history reads.
pub const TUNE_SUMMARY_FILE: &str = "tuning-summary.json";

/// The confidence of the intervals computed here (a matrix side's p50 over its rounds), as everywhere.
const CONFIDENCE: f64 = 0.95;

/// What a series measures: one workload on one runtime version on one machine, one metric.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    /// The workload identity trtmc records (hash of the resolved case).
    pub workload: String,
    /// The model's name.
    pub model: String,
    /// The case label (`single`, `single[batch_size=4]`) or the matrix test case.
    pub label: String,
    /// The operation timed (`infer`, `generate`, ...).
    pub operation: String,
    /// The runtime's name.
    pub runtime: String,
    /// The runtime's version: a new version starts a new series.
    pub runtime_version: String,
    /// [`machine_fingerprint`] of the machine.
    pub machine: String,
    /// The machine for people (CPU model, CPUs, GPUs).
    pub machine_name: String,
    /// What the estimate is ([`METRIC_P50`], [`METRIC_P99`], `tune_<statistic>_cost_ms`).
    pub metric: String,
}

/// One point before it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPoint {
    /// The series the point belongs to.
    pub key: SeriesKey,
    /// The case (`001-tiny-cnn-single`) or matrix row id within the folder.
    pub case_dir: String,
    /// The measured value, in the metric's unit (ms).
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
}

/// What a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A `run` folder (`result.json`).
    Run,
    /// A `matrix run` folder (`results.json`).
    Matrix,
    /// A `tune` folder (`tuning-summary.json`).
    Tune,
}

impl Kind {
    /// The kind as the database stores it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Matrix => "matrix",
            Kind::Tune => "tune",
        }
    }
}

/// One folder, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Folder {
    /// Which verb wrote it.
    pub kind: Kind,
    /// SHA-256 of the folder's document: the same result ingested twice is stored once.
    pub digest: String,
    /// The folder as given.
    pub path: PathBuf,
    /// When the result was created (RFC 3339, from the document).
    pub created: String,
    /// The commit the result belongs to: the program revision of its provenance, unless the caller
    /// names one (`history add --commit`).
    pub commit: String,
    /// Every point the folder contributes.
    pub points: Vec<NewPoint>,
}

/// A stable short fingerprint of the machine: OS, architecture, CPU model and count, memory and
/// GPUs. The host name is left out, so identical nodes of a cluster share their series.
pub fn machine_fingerprint(m: &MachineInfo) -> String {
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        m.os,
        m.arch,
        m.cpu_model,
        m.logical_cpus,
        m.memory_bytes.map(|b| b.to_string()).unwrap_or_default(),
        m.gpus.join("\n")
    );
    hex::encode(&Sha256::digest(text.as_bytes())[..6])
}

fn machine_name(m: &MachineInfo) -> String {
    let mut s = format!("{} × {}", m.cpu_model, m.logical_cpus);
    for g in &m.gpus {
        s.push_str(", ");
        s.push_str(g);
    }
    s
}

/// Reads `dir` (a `run`, `matrix run` or `tune` result folder); `commit` overrides the recorded
/// revision.
pub fn read_folder(dir: &Path, commit: Option<&str>) -> Result<Folder, Error> {
    let run = dir.join("result.json");
    let matrix = dir.join("results.json");
    let tune = dir.join(TUNE_SUMMARY_FILE);
    if tune.is_file() {
        let (bytes, digest) = read_document(&tune)?;
        let doc: TuneSummary = parse(&tune, &bytes)?;
        tune_folder(dir, &tune, doc, digest, commit)
    } else if run.is_file() {
        let (bytes, digest) = read_document(&run)?;
        let doc: BenchmarkRun = parse(&run, &bytes)?;
        Ok(run_folder(dir, doc, digest, commit))
    } else if matrix.is_file() {
        let (bytes, digest) = read_document(&matrix)?;
        let doc: Results = parse(&matrix, &bytes)?;
        Ok(matrix_folder(dir, doc, digest, commit))
    } else {
        Err(Error::NotAResult {
            dir: dir.to_path_buf(),
        })
    }
}

fn read_document(path: &Path) -> Result<(Vec<u8>, String), Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::Document {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    let digest = hex::encode(Sha256::digest(&bytes));
    Ok((bytes, digest))
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Document {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

fn run_folder(dir: &Path, doc: BenchmarkRun, digest: String, commit: Option<&str>) -> Folder {
    let machine = machine_fingerprint(&doc.provenance.machine);
    let name = machine_name(&doc.provenance.machine);
    let mut points = Vec::new();
    for case in &doc.cases {
        // A failed case has no statistics; an interrupted one keeps partial ones, marked as such.
        let (Some(metrics), false) = (&case.metrics, case.status == CaseStatus::Failed) else {
            continue;
        };
        let key = |metric: &str| SeriesKey {
            workload: case.identity.clone(),
            model: case.model.clone(),
            label: case.label.clone(),
            operation: case.operation.clone(),
            runtime: case.runtime.name.clone(),
            runtime_version: case.runtime.version.clone(),
            machine: machine.clone(),
            machine_name: name.clone(),
            metric: metric.into(),
        };
        let count = metrics.latency_ms.count as i64;
        let verdict = if metrics.warnings.is_empty() {
            case.status.label().to_string()
        } else {
            format!(
                "{} ({} warning(s))",
                case.status.label(),
                metrics.warnings.len()
            )
        };
        let ci = metrics.p50_ci_ms.as_ref();
        points.push(NewPoint {
            key: key(METRIC_P50),
            case_dir: case.dir.clone(),
            estimate: metrics.latency_ms.p50,
            low: ci.map(|c| c.low),
            high: ci.map(|c| c.high),
            confidence: ci.map(|c| c.confidence),
            count,
            verdict: verdict.clone(),
        });
        points.push(NewPoint {
            key: key(METRIC_P99),
            case_dir: case.dir.clone(),
            estimate: metrics.latency_ms.p99,
            low: None,
            high: None,
            confidence: None,
            count,
            verdict,
        });
    }
    Folder {
        kind: Kind::Run,
        digest,
        path: dir.to_path_buf(),
        created: doc.created,
        commit: commit
            .map(str::to_string)
            .unwrap_or(doc.provenance.program.revision),
        points,
    }
}

fn matrix_folder(dir: &Path, doc: Results, digest: String, commit: Option<&str>) -> Folder {
    let machine = machine_fingerprint(&doc.machine);
    let name = machine_name(&doc.machine);
    let mut points = Vec::new();
    for row in &doc.rows {
        if row.status != RowStatus::Compared {
            continue;
        }
        let light = row
            .comparison
            .as_ref()
            .map(|c| c.light.label().to_string())
            .unwrap_or_default();
        for (role, side) in [("candidate", &row.candidate), ("reference", &row.reference)] {
            let Some(side) = side else { continue };
            if let Some(p) = side_point(row.model.as_str(), &row.testcase, side) {
                points.push(NewPoint {
                    key: SeriesKey {
                        machine: machine.clone(),
                        machine_name: name.clone(),
                        ..p.key
                    },
                    case_dir: format!("{} ({role})", row.id),
                    verdict: format!("{role}: {light}"),
                    ..p
                });
            }
        }
    }
    Folder {
        kind: Kind::Matrix,
        digest,
        path: dir.to_path_buf(),
        created: doc.created,
        commit: commit.map(str::to_string).unwrap_or(doc.program.revision),
        points,
    }
}

/// A tune's points: one per route that passed the accuracy gate and was measured, its objective as
/// a cost in milliseconds with its interval (head-to-head when the route reached it, else the search
/// estimate). A route is its own workload, so each route's series follows that build across commits.
fn tune_folder(
    dir: &Path,
    file: &Path,
    doc: TuneSummary,
    digest: String,
    commit: Option<&str>,
) -> Result<Folder, Error> {
    let Some(context) = doc.context.as_ref() else {
        return Err(Error::Incomplete {
            path: file.to_path_buf(),
            missing: "context",
        });
    };
    let (machine, machine_name) = match &context.machine_info {
        Some(m) => (machine_fingerprint(m), machine_name(m)),
        // Summaries from before the machine was recorded in full: its one-line description.
        None => (
            hex::encode(&Sha256::digest(context.machine.as_bytes())[..6]),
            context.machine.clone(),
        ),
    };
    let chosen = doc.decision.route.as_deref();
    let mut points = Vec::new();
    for route in doc.routes.iter().filter(|r| r.eligible) {
        let Some(estimate) = route.head_to_head.as_ref().or(route.search.as_ref()) else {
            continue;
        };
        let workload = hex::encode(Sha256::digest(
            format!(
                "{}\n{}\n{}\n{}",
                context.model_sha256, context.operation, context.measurement, route.route
            )
            .as_bytes(),
        ));
        let verdict = if chosen == Some(route.route.as_str()) {
            "chosen"
        } else if route.tied_with_best {
            "tied with the chosen"
        } else if route.finalist {
            "finalist"
        } else {
            "eligible"
        };
        points.push(NewPoint {
            key: SeriesKey {
                workload,
                model: context.model.clone(),
                label: format!("route {}", route.route),
                operation: context.operation.clone(),
                runtime: context.runtime.clone(),
                runtime_version: context.runtime_version.clone(),
                machine: machine.clone(),
                machine_name: machine_name.clone(),
                metric: format!("tune_{}_cost_ms", estimate.statistic.name()),
            },
            case_dir: format!("iteration {}", route.iter),
            estimate: estimate.cost.estimate,
            low: Some(estimate.cost.low),
            high: Some(estimate.cost.high),
            confidence: Some(estimate.cost.confidence),
            count: estimate.samples as i64,
            verdict: verdict.into(),
        });
    }
    let created = match &context.created {
        Some(c) => c.clone(),
        None => std::fs::metadata(file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .map(|t| t.to_string())
            .unwrap_or_default(),
    };
    Ok(Folder {
        kind: Kind::Tune,
        digest,
        path: dir.to_path_buf(),
        created,
        commit: commit
            .map(str::to_string)
            .or_else(|| context.program.as_ref().map(|p| p.revision.clone()))
            .unwrap_or_else(|| "unknown".into()),
        points,
    })
}

/// A matrix side's p50: the median of its rounds' p50 with the rounds' interval, or of its calls when
/// it has no rounds recorded.
fn side_point(model: &str, testcase: &str, side: &Side) -> Option<NewPoint> {
    let values = if side.round_p50_ms.is_empty() {
        &side.samples_ms
    } else {
        &side.round_p50_ms
    };
    let (estimate, low, high, confidence) = match intervals::median(values, CONFIDENCE) {
        Some(ri) => (
            ri.interval.estimate,
            Some(ri.interval.low),
            Some(ri.interval.high),
            Some(ri.interval.confidence),
        ),
        None => (*values.first()?, None, None, None),
    };
    Some(NewPoint {
        key: SeriesKey {
            workload: side.identity.clone(),
            model: model.into(),
            label: testcase.into(),
            operation: side.backend.clone(),
            runtime: side.runtime.clone(),
            runtime_version: side.version.clone(),
            machine: String::new(),
            machine_name: String::new(),
            metric: METRIC_P50.into(),
        },
        case_dir: String::new(),
        estimate,
        low,
        high,
        confidence,
        count: side.samples_ms.len() as i64,
        verdict: String::new(),
    })
}
