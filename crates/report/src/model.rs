//! The summary model behind every view: `report.json` (schema `trtmc.collection-report/v1`,
//! schemas/collection-report.schema.json), the HTML pages, the terminal table and the exports.
//!
//! A run report is the same model over one run; a collection report covers every run found below the
//! given roots. Per-case numbers come from each run's result.json (the authoritative evidence, never
//! rewritten); the raw observations add the validity duration, the trend and the plots.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use trtmc_core::artifacts::{
    BenchmarkRun, BundleOrigin, CaseStatus, Comparison, MachineInfo, Observation, ProgramInfo,
    RunStatus, RuntimeInfo, Throughput,
};
use trtmc_core::stats::{Interval, Summary};

use crate::validity::{self, Policy, Trend, Validity};

/// The `schema` of report.json.
pub const COLLECTION_REPORT_SCHEMA: &str = "trtmc.collection-report/v1";

/// report.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionReport {
    /// [`COLLECTION_REPORT_SCHEMA`].
    pub schema: String,
    /// When the report was made (RFC 3339).
    pub created: String,
    /// The program that made it.
    pub generator: Generator,
    /// The directories searched, as given on the command line.
    pub roots: Vec<String>,
    /// The validity policy every case was judged by.
    pub policy: Policy,
    /// Counts over `runs` and `cases`.
    pub totals: Totals,
    /// Every run used, in the order found.
    pub runs: Vec<RunEntry>,
    /// Every case of those runs.
    pub cases: Vec<CaseEntry>,
    /// Groups of cases that differ only by their sweep point (plotted as curves).
    pub sweeps: Vec<SweepEntry>,
    /// result.json files that were found but not used, with the reason.
    pub skipped: Vec<Skipped>,
    /// Caveats about comparing the runs (different timing boundaries or percentile methods).
    pub notes: Vec<String>,
}

/// The program that wrote a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// `trtmc-bench`.
    pub name: String,
    /// Its package version.
    pub version: String,
}

/// The report's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Runs used.
    pub runs: usize,
    /// Cases of those runs.
    pub cases: usize,
    /// Cases whose status is completed.
    pub completed: usize,
    /// Cases whose status is failed.
    pub failed: usize,
    /// Cases the validity policy accepts.
    pub valid: usize,
    /// Cases it does not.
    pub invalid: usize,
    /// result.json files found but not used.
    pub skipped: usize,
}

/// One run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    /// The run directory, relative to the report's directory (`.` for a run report).
    pub path: String,
    /// Its result.json, relative to the report's directory.
    pub result: String,
    /// Its own report.html, when present.
    pub report: Option<String>,
    /// The run's id from its result.json.
    pub run_id: String,
    /// When the run was created (RFC 3339).
    pub created: String,
    /// How the run ended.
    pub status: RunStatus,
    /// The timed region of its observations; runs with different boundaries are not comparable.
    pub timing_boundary: String,
    /// How its percentiles were computed.
    pub percentile_method: String,
    /// The program that made the run.
    pub program: ProgramInfo,
    /// The runtimes it used, with their versions.
    pub runtimes: Vec<RuntimeInfo>,
    /// The machine it ran on.
    pub machine: MachineInfo,
    /// Number of its cases.
    pub cases: usize,
    /// `run`'s verdicts between its cases (from paired rounds), as result.json has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
}

/// One case of one run, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEntry {
    /// Index into `runs`.
    pub run: usize,
    /// 1-based position of the case in its run (its anchor `#case-N` in the run's report.html).
    pub number: usize,
    /// The case directory, relative to its run directory (`001-tiny-gpt-greedy`).
    pub dir: String,
    /// The catalog profile (model).
    pub model: String,
    /// The test case.
    pub case: String,
    /// The case as people read it.
    pub label: String,
    /// The operation the case calls.
    pub operation: String,
    /// The profile's task strategy.
    pub task_strategy: String,
    /// The runtime that ran it.
    pub runtime: RuntimeInfo,
    /// Host name of the machine that ran it.
    pub machine: String,
    /// How the case ended.
    pub status: CaseStatus,
    /// Why it failed or stopped, when it did.
    pub error: Option<String>,
    /// Swept keys and values of this case.
    pub sweep_point: BTreeMap<String, String>,
    /// Resolved request values, as result.json has them.
    pub request: BTreeMap<String, serde_json::Value>,
    /// The resolved request, build and runtime settings under their `--set` keys (`request.batch_size`,
    /// `build.precision`, `runtime.threads`): what tells apart runs that differ only by `--set`. From
    /// the case's resolved-case.json; only the request values when that file could not be read.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Where the case's bundle came from (built, the cache, a bundle root, `--bundle`).
    pub bundle_origin: Option<BundleOrigin>,
    /// Whether the bundle was checked to be compatible with its run (never for `--bundle PATH`);
    /// `None` when the case had no bundle.
    pub bundle_verified: Option<bool>,
    /// The build route trtexec reported it used (result.json `bundle.route_used`).
    #[serde(default)]
    pub bundle_route: Option<String>,
    /// Model load time (excluded from every metric), milliseconds.
    pub load_ms: Option<f64>,
    /// Untimed calls before the timed ones.
    pub warmup: u64,
    /// Timed calls.
    pub samples: u64,
    /// Seconds from the first timed call's start to the last one's end (summed call time when the
    /// observations could not be read).
    pub duration_s: f64,
    /// Latency statistics of the timed calls, milliseconds; `None` when none was timed.
    pub latency_ms: Option<Summary>,
    /// The median latency's confidence interval, milliseconds.
    pub p50_ci_ms: Option<Interval>,
    /// Calls outside Tukey's inner fences (1.5 IQR).
    pub outliers: usize,
    /// Every throughput result.json records (`request/s` and the task's own units).
    pub throughputs: Vec<Throughput>,
    /// Stage durations (time to first token, prefill, decode), milliseconds.
    pub stages_ms: BTreeMap<String, Summary>,
    /// The drift of latency over the timed calls, when the observations could be read.
    pub trend: Option<Trend>,
    /// VALID or INVALID under the report's policy, with the reasons.
    pub validity: Validity,
    /// Why the observations are missing from plots and trend, when they are.
    pub observations_note: Option<String>,
    /// The analyze report of the case's per-layer profile (`run --profile`), relative to the
    /// report's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_report: Option<String>,
    /// The shapes each input was fed in (result.json `input_shapes`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_shapes: BTreeMap<String, Vec<Vec<usize>>>,
    /// The outputs checked against `--check-outputs` (result.json `output_check`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_check: Vec<trtmc_core::data::OutputCheck>,
}

impl CaseEntry {
    /// `x 1x3x224x224, mask 1x8` (a scalar as `scalar`; shapes that varied joined with `|`).
    pub fn input_shapes_text(&self) -> String {
        self.input_shapes
            .iter()
            .map(|(name, shapes)| {
                let shapes: Vec<String> = shapes
                    .iter()
                    .map(|s| {
                        if s.is_empty() {
                            "scalar".to_string()
                        } else {
                            s.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
                        }
                    })
                    .collect();
                format!("{name} {}", shapes.join("|"))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `outputs match (3 checked, max abs 1.2e-07, max rel 3.4e-06)`, or which ones do not.
    pub fn output_check_text(&self) -> Option<String> {
        if self.output_check.is_empty() {
            return None;
        }
        let max = |f: &dyn Fn(&trtmc_core::data::OutputCheck) -> Option<f64>| {
            self.output_check
                .iter()
                .map(f)
                .try_fold(0.0f64, |m, v| v.map(|v| m.max(v)))
                .map_or_else(|| "NaN".to_string(), |v| format!("{v:.1e}"))
        };
        let failed: Vec<&str> = self
            .output_check
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.output.as_str())
            .collect();
        let how = format!(
            "{} checked, max abs error {}, max rel error {}",
            self.output_check.len(),
            max(&|c| c.max_abs_error),
            max(&|c| c.max_rel_error)
        );
        Some(if failed.is_empty() {
            format!("outputs match ({how})")
        } else {
            format!("outputs DIFFER: {} ({how})", failed.join(", "))
        })
    }

    /// A throughput by name (`request/s` exists for every operation).
    pub fn throughput(&self, name: &str) -> Option<&Throughput> {
        self.throughputs.iter().find(|t| t.name == name)
    }

    /// The throughput in the task's own unit (token/s, image/s, audio s/s, …) named by the operation
    /// table; for an operation this program no longer knows, the first one besides request/s.
    pub fn headline_throughput(&self) -> Option<&Throughput> {
        match trtmc_core::operations::operation(&self.operation) {
            Some(op) => self.throughput(op.headline_throughput),
            None => self
                .throughputs
                .iter()
                .find(|t| t.name != "request/s")
                .or_else(|| self.throughput("request/s")),
        }
    }
}

/// Cases of one run that differ only by their sweep point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepEntry {
    /// Index into `runs`.
    pub run: usize,
    /// The catalog profile.
    pub model: String,
    /// The test case.
    pub case: String,
    /// The runtime's name.
    pub runtime: String,
    /// The operation.
    pub operation: String,
    /// The swept key on the x axis (the one with the most distinct values).
    pub parameter: String,
    /// Whether every value of `parameter` is a number (else the axis is categorical).
    pub numeric: bool,
    /// The other swept keys: one line per combination of their values.
    pub series_keys: Vec<String>,
    /// Indices into `cases`.
    pub cases: Vec<usize>,
}

/// A result.json found but not used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The file.
    pub path: String,
    /// Why it was not used.
    pub reason: String,
}

/// A run as read from disk, ready to be summarized.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// Directory relative to the report's directory.
    pub path: String,
    /// Whether the run directory has its own report.html.
    pub has_report: bool,
    /// Its result.json.
    pub run: BenchmarkRun,
    /// Per case (same order as `run.cases`): the observations, or why they could not be read.
    pub observations: Vec<Result<Vec<Observation>, String>>,
    /// Per case (same order as `run.cases`): the build and runtime settings from resolved-case.json
    /// (`build.precision`, `runtime.threads`, …); empty where it could not be read.
    pub settings: Vec<BTreeMap<String, String>>,
}

/// Latencies (ms) per case in call order, parallel to [`CollectionReport::cases`]; `None` where the
/// observations could not be read. Only the HTML needs them; report.json does not carry them.
pub type CaseLatencies = Vec<Option<Vec<f64>>>;

fn join(dir: &str, file: &str) -> String {
    if dir == "." || dir.is_empty() {
        file.to_string()
    } else {
        format!("{}/{file}", dir.trim_end_matches('/'))
    }
}

/// Summarizes loaded runs.
pub fn build(
    roots: Vec<String>,
    runs: Vec<LoadedRun>,
    skipped: Vec<Skipped>,
    policy: &Policy,
) -> (CollectionReport, CaseLatencies) {
    let mut entries = Vec::new();
    let mut cases = Vec::new();
    let mut latencies = Vec::new();
    for (ri, loaded) in runs.into_iter().enumerate() {
        let run = loaded.run;
        let run_path = loaded.path.clone();
        entries.push(RunEntry {
            result: join(&loaded.path, "result.json"),
            report: loaded.has_report.then(|| join(&loaded.path, "report.html")),
            path: loaded.path,
            run_id: run.run_id.clone(),
            created: run.created.clone(),
            status: run.status,
            timing_boundary: run.timing_boundary.clone(),
            percentile_method: run.percentile_method.clone(),
            program: run.provenance.program.clone(),
            runtimes: run.provenance.runtimes.clone(),
            machine: run.provenance.machine.clone(),
            cases: run.cases.len(),
            comparisons: run.comparisons.clone(),
        });
        let mut observations = loaded.observations.into_iter();
        let mut settings = loaded.settings.into_iter();
        for (ci, c) in run.cases.iter().enumerate() {
            let obs = observations
                .next()
                .unwrap_or_else(|| Err("no observations were loaded".into()));
            let (obs, note) = match obs {
                Ok(o) if !o.is_empty() => (Some(o), None),
                Ok(_) if c.status == CaseStatus::Failed => (None, None),
                Ok(_) => (None, Some("no observations recorded".to_string())),
                Err(e) => (None, Some(e)),
            };
            let (validity, trend) = validity::assess(c, obs.as_deref(), policy);
            let m = c.metrics.as_ref();
            let duration_s = obs
                .as_deref()
                .and_then(validity::observed_span_s)
                .or(m.map(|m| m.timed_seconds))
                .unwrap_or(0.0);
            latencies.push(obs.as_deref().map(validity::latencies_ms));
            let mut case_settings = settings.next().unwrap_or_default();
            for (k, v) in &c.request {
                case_settings.insert(format!("request.{k}"), setting_text(v));
            }
            cases.push(CaseEntry {
                run: ri,
                number: ci + 1,
                dir: c.dir.clone(),
                model: c.model.clone(),
                case: c.case.clone(),
                label: c.label.clone(),
                operation: c.operation.clone(),
                task_strategy: c.task_strategy.clone(),
                runtime: c.runtime.clone(),
                machine: run.provenance.machine.hostname.clone(),
                status: c.status,
                error: c.error.clone(),
                sweep_point: c.sweep_point.clone(),
                request: c.request.clone(),
                settings: case_settings,
                bundle_origin: c.bundle.as_ref().map(|b| b.origin),
                bundle_verified: c.bundle.as_ref().map(|b| b.compatibility_verified),
                bundle_route: c.bundle.as_ref().and_then(|b| b.route_used.clone()),
                load_ms: c.measurement.load_ms,
                warmup: c.measurement.warmup,
                samples: m.map_or(0, |m| m.latency_ms.count as u64),
                duration_s,
                latency_ms: m.map(|m| m.latency_ms.clone()),
                p50_ci_ms: m.and_then(|m| m.p50_ci_ms),
                outliers: m.map_or(0, |m| m.outliers),
                throughputs: m.map(|m| m.throughputs.clone()).unwrap_or_default(),
                stages_ms: m.map(|m| m.stages_ms.clone()).unwrap_or_default(),
                trend,
                validity,
                observations_note: note,
                profile_report: c
                    .profile
                    .as_ref()
                    .and_then(|p| p.report.as_deref())
                    .map(|r| join(&run_path, r)),
                input_shapes: c.input_shapes.clone(),
                output_check: c.output_check.clone(),
            });
        }
    }
    let sweeps = find_sweeps(&cases);
    let notes = comparability_notes(&entries);
    let totals = Totals {
        runs: entries.len(),
        cases: cases.len(),
        completed: cases
            .iter()
            .filter(|c| c.status == CaseStatus::Completed)
            .count(),
        failed: cases
            .iter()
            .filter(|c| c.status == CaseStatus::Failed)
            .count(),
        valid: cases.iter().filter(|c| c.validity.valid).count(),
        invalid: cases.iter().filter(|c| !c.validity.valid).count(),
        skipped: skipped.len(),
    };
    let report = CollectionReport {
        schema: COLLECTION_REPORT_SCHEMA.into(),
        created: jiff::Timestamp::now().to_string(),
        generator: Generator {
            name: "trtmc-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        roots,
        policy: policy.clone(),
        totals,
        runs: entries,
        cases,
        sweeps,
        skipped,
        notes,
    };
    (report, latencies)
}

/// A setting's value as a person reads it: strings without quotes.
pub fn setting_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What tells each case apart from the cases that would look the same in a summary table (same model,
/// label, runtime and machine), parallel to [`CollectionReport::cases`]: the settings whose values
/// differ among them (`threads=2`, keys shortened to their last part where that stays unambiguous); where even those agree (the same command run twice), the
/// shortest tail of the run's directory that differs (`b`, `nightly/b`), else the run id. Empty for a
/// case that no other case looks like.
pub fn distinctions(report: &CollectionReport) -> Vec<String> {
    let mut out = vec![String::new(); report.cases.len()];
    let mut groups: BTreeMap<(&str, &str, &str, &str, &str), Vec<usize>> = BTreeMap::new();
    for (i, c) in report.cases.iter().enumerate() {
        let key = (
            c.model.as_str(),
            c.label.as_str(),
            c.runtime.name.as_str(),
            c.runtime.version.as_str(),
            c.machine.as_str(),
        );
        groups.entry(key).or_default().push(i);
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        let keys: BTreeSet<&String> = members
            .iter()
            .flat_map(|&i| report.cases[i].settings.keys())
            .collect();
        let differing: Vec<&String> = keys
            .into_iter()
            .filter(|k| {
                let values: BTreeSet<Option<&String>> = members
                    .iter()
                    .map(|&i| report.cases[i].settings.get(*k))
                    .collect();
                values.len() > 1
            })
            .collect();
        let names = short_keys(&differing);
        for &i in members {
            let c = &report.cases[i];
            out[i] = differing
                .iter()
                .zip(&names)
                .map(|(k, name)| {
                    let v = c.settings.get(*k).map(String::as_str).unwrap_or("–");
                    format!("{name}={v}")
                })
                .collect::<Vec<_>>()
                .join(", ");
        }
        // Cases whose settings agree: name their runs.
        let mut by_text: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for &i in members {
            by_text.entry(out[i].clone()).or_default().push(i);
        }
        for same in by_text.values().filter(|s| s.len() > 1) {
            let names = run_names(report, same);
            for (&i, name) in same.iter().zip(names) {
                out[i] = if out[i].is_empty() {
                    name
                } else {
                    format!("{}, {name}", out[i])
                };
            }
        }
    }
    out
}

/// Each key's shortest tail of dot-separated parts that no other key ends with (`runtime.threads` →
/// `threads`; `build.dims.batch` next to `request.batch` stays `dims.batch`).
fn short_keys(keys: &[&String]) -> Vec<String> {
    let tail = |k: &str, n: usize| -> String {
        let parts: Vec<&str> = k.split('.').collect();
        parts[parts.len().saturating_sub(n)..].join(".")
    };
    keys.iter()
        .map(|k| {
            let depth = k.split('.').count();
            (1..=depth)
                .map(|n| tail(k, n))
                .find(|t| {
                    keys.iter()
                        .filter(|other| {
                            *other != k && (**other == t || other.ends_with(&format!(".{t}")))
                        })
                        .count()
                        == 0
                })
                .unwrap_or_else(|| k.to_string())
        })
        .collect()
}

/// For cases whose settings agree: the shortest tail of each one's run directory that tells them
/// apart, else the run id, else the case's number in its run.
fn run_names(report: &CollectionReport, cases: &[usize]) -> Vec<String> {
    let parts = |i: usize| -> Vec<&str> {
        let path = report
            .runs
            .get(report.cases[i].run)
            .map_or("", |r| r.path.as_str());
        path.split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect()
    };
    let unique = |names: &[String]| names.iter().collect::<BTreeSet<_>>().len() == names.len();
    let longest = cases.iter().map(|&i| parts(i).len()).max().unwrap_or(0);
    for depth in 1..=longest {
        let names: Vec<String> = cases
            .iter()
            .map(|&i| {
                let p = parts(i);
                p[p.len().saturating_sub(depth)..].join("/")
            })
            .collect();
        if unique(&names) && names.iter().all(|n| !n.is_empty()) {
            return names;
        }
    }
    let ids: Vec<String> = cases
        .iter()
        .map(|&i| {
            let run = report.runs.get(report.cases[i].run);
            format!("run {}", run.map_or("?", |r| r.run_id.as_str()))
        })
        .collect();
    if unique(&ids) {
        return ids;
    }
    cases
        .iter()
        .map(|&i| format!("case {}", report.cases[i].number))
        .collect()
}

fn comparability_notes(runs: &[RunEntry]) -> Vec<String> {
    let mut notes = Vec::new();
    let boundaries: BTreeSet<&str> = runs.iter().map(|r| r.timing_boundary.as_str()).collect();
    if boundaries.len() > 1 {
        notes.push(format!(
            "the runs measure different timing boundaries ({}): latencies across them are not comparable",
            boundaries.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let methods: BTreeSet<&str> = runs.iter().map(|r| r.percentile_method.as_str()).collect();
    if methods.len() > 1 {
        notes.push(format!(
            "the runs use different percentile methods ({})",
            methods.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    notes
}

/// Groups cases of one run that differ only by their sweep point (same model, case, runtime, operation
/// and swept keys), when a group has at least two cases.
fn find_sweeps(cases: &[CaseEntry]) -> Vec<SweepEntry> {
    type Key = (usize, String, String, String, String, Vec<String>);
    let mut groups: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        if c.sweep_point.is_empty() {
            continue;
        }
        let key = (
            c.run,
            c.model.clone(),
            c.case.clone(),
            format!("{} {}", c.runtime.name, c.runtime.version),
            c.operation.clone(),
            c.sweep_point.keys().cloned().collect(),
        );
        groups.entry(key).or_default().push(i);
    }
    let mut sweeps = Vec::new();
    for ((run, model, case, runtime, operation, keys), members) in groups {
        if members.len() < 2 {
            continue;
        }
        let distinct = |k: &str| {
            members
                .iter()
                .filter_map(|&i| cases[i].sweep_point.get(k))
                .collect::<BTreeSet<_>>()
                .len()
        };
        // The key with the most distinct values; the first such in key order on ties.
        let mut parameter = keys[0].clone();
        for k in &keys {
            if distinct(k) > distinct(&parameter) {
                parameter = k.clone();
            }
        }
        let numeric = members.iter().all(|&i| {
            cases[i]
                .sweep_point
                .get(&parameter)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .is_some_and(f64::is_finite)
        });
        let series_keys = keys.iter().filter(|k| **k != parameter).cloned().collect();
        sweeps.push(SweepEntry {
            run,
            model,
            case,
            runtime,
            operation,
            parameter,
            numeric,
            series_keys,
            cases: members,
        });
    }
    sweeps
}

impl SweepEntry {
    /// The line a case belongs to: its values of the other swept keys (`all` when there are none).
    pub fn series_of(&self, case: &CaseEntry) -> String {
        if self.series_keys.is_empty() {
            return "all".into();
        }
        self.series_keys
            .iter()
            .map(|k| {
                format!(
                    "{k}={}",
                    case.sweep_point.get(k).map(String::as_str).unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use trtmc_core::artifacts::{BENCHMARK_RUN_SCHEMA, CaseResult};
    use trtmc_core::operations::operation;
    use trtmc_core::result::reduce;

    pub fn observations(n: usize, ms: f64) -> Vec<Observation> {
        let mut start = 0;
        (0..n)
            .map(|i| {
                let wall = ((ms * (1.0 + 0.01 * ((i * 37 % 11) as f64 - 5.0) / 5.0)) * 1e6) as u64;
                let o = Observation {
                    iteration: i as u64,
                    start_ns: start,
                    wall_ns: wall,
                    ..Default::default()
                };
                start += wall + 10_000;
                o
            })
            .collect()
    }

    /// Built through JSON so that fields added to the result types later (with serde defaults) do not
    /// break these fixtures.
    pub fn case(
        model: &str,
        label: &str,
        sweep: &[(&str, &str)],
        obs: &[Observation],
    ) -> CaseResult {
        let op = operation("test_sleep").expect("op");
        let sweep: BTreeMap<&str, &str> = sweep.iter().copied().collect();
        serde_json::from_value(serde_json::json!({
            "dir": format!("001-{model}"),
            "model": model,
            "case": "default",
            "label": label,
            "task_strategy": "test_sleep",
            "operation": "test_sleep",
            "runtime": {"name": "tract", "version": "0.23.9"},
            "status": "completed",
            "error": null,
            "identity": "0".repeat(64),
            "bundle": null,
            "measurement": {
                "warmup": 2,
                "iterations": obs.len(),
                "min_duration_s": 0.0,
                "observations": obs.len(),
                "load_ms": null
            },
            "metrics": reduce(op, obs),
            "sweep_point": sweep,
            "request": {},
            "files": {
                "resolved_case": "r.json",
                "observations": "o.jsonl",
                "worker_log": null,
                "telemetry": null
            }
        }))
        .expect("a valid case")
    }

    pub fn run(cases: Vec<CaseResult>, host: &str) -> BenchmarkRun {
        serde_json::from_value(serde_json::json!({
            "schema": BENCHMARK_RUN_SCHEMA,
            "run_id": "run-1",
            "created": "2026-01-01T00:00:00Z",
            "status": BenchmarkRun::status_of(&cases),
            "command_line": ["trtmc-bench"],
            "timing_boundary": "public_pipeline_call_wall",
            "percentile_method": "linear_interpolation_type7",
            "task_quality_evaluated": false,
            "provenance": {
                "program": {"name": "trtmc-bench", "version": "0.1.0", "revision": "abc", "build_profile": "debug"},
                "runtimes": [],
                "machine": {
                    "hostname": host, "os": "linux", "arch": "x86_64", "cpu_model": "cpu",
                    "logical_cpus": 2, "memory_bytes": null, "gpus": []
                }
            },
            "cases": cases
        }))
        .expect("a valid run")
    }

    #[test]
    fn sweeps_group_cases_that_differ_only_by_sweep_point() {
        let o = observations(50, 1.0);
        let cases = vec![
            case("m", "d[b=1,s=4]", &[("b", "1"), ("s", "4")], &o),
            case("m", "d[b=2,s=4]", &[("b", "2"), ("s", "4")], &o),
            case("m", "d[b=4,s=4]", &[("b", "4"), ("s", "4")], &o),
            case("m", "d[b=1,s=20]", &[("b", "1"), ("s", "20")], &o),
            case("other", "d[b=1]", &[("b", "1")], &o),
            case("m", "plain", &[], &o),
        ];
        let n = cases.len();
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: true,
            run: run(cases, "h"),
            observations: (0..n).map(|_| Ok(o.clone())).collect(),
            settings: Vec::new(),
        };
        let (report, lat) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        assert_eq!(report.cases.len(), 6);
        assert_eq!(lat.len(), 6);
        assert_eq!(
            report.sweeps.len(),
            1,
            "`other` has one point, `plain` none"
        );
        let s = &report.sweeps[0];
        assert_eq!((s.parameter.as_str(), s.numeric), ("b", true));
        assert_eq!(s.series_keys, vec!["s".to_string()]);
        assert_eq!(s.cases, vec![0, 1, 2, 3]);
        assert_eq!(s.series_of(&report.cases[3]), "s=20");
        assert_eq!(report.runs[0].report.as_deref(), Some("report.html"));
    }

    #[test]
    fn totals_count_validity_and_missing_observations_are_noted() {
        let o = observations(150, 10.0);
        let short = observations(30, 10.0);
        let loaded = LoadedRun {
            path: "a/b".into(),
            has_report: false,
            run: run(
                vec![case("m", "x", &[], &o), case("m", "y", &[], &short)],
                "h",
            ),
            observations: vec![Ok(o.clone()), Err("observations.jsonl line 3: bad".into())],
            settings: Vec::new(),
        };
        let (report, lat) = build(vec!["a".into()], vec![loaded], vec![], &Policy::default());
        assert_eq!(report.runs[0].result, "a/b/result.json");
        assert_eq!(report.totals.valid, 1, "{:#?}", report.cases[0].validity);
        assert_eq!(report.totals.invalid, 1);
        assert!(lat[1].is_none());
        assert_eq!(
            report.cases[1].observations_note.as_deref(),
            Some("observations.jsonl line 3: bad")
        );
        // Without observations the summed call time stands in for the duration.
        let m = report.cases[1].latency_ms.as_ref().expect("metrics");
        assert!((report.cases[1].duration_s - m.mean * 30.0 / 1000.0).abs() < 1e-6);
    }

    #[test]
    fn settings_keys_shorten_to_what_stays_unambiguous() {
        let keys: Vec<String> = ["runtime.threads", "build.dims.batch", "request.batch"]
            .map(String::from)
            .to_vec();
        let refs: Vec<&String> = keys.iter().collect();
        assert_eq!(
            short_keys(&refs),
            ["threads", "dims.batch", "request.batch"]
        );
    }

    #[test]
    fn cases_of_one_run_with_equal_settings_fall_back_to_their_number() {
        let o = observations(50, 1.0);
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(vec![case("m", "x", &[], &o), case("m", "x", &[], &o)], "h"),
            observations: vec![Ok(o.clone()), Ok(o.clone())],
            settings: Vec::new(),
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        assert_eq!(distinctions(&report), ["case 1", "case 2"]);
    }
}
