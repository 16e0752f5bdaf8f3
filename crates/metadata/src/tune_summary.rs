//! `tuning-summary.json` of `trtmc-bench tune`: schema `trtmc.tuning-summary/v1`
//! (schemas/tuning-summary.schema.json). It carries everything a report needs: every route with its
//! status, error, accuracy per tensor and statistic with interval; the ties; the head-to-head; the
//! decision with its margin. The enums it shares with the tuning cache (phase, status, stage, search
//! order, objective) live here too, so the report reads the same types the tuner writes.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::accuracy::{AccuracyReport, AccuracySpec};
use crate::figures::{Interval, Summary};

pub const TUNING_SUMMARY_SCHEMA: &str = "trtmc.tuning-summary/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneSummary {
    pub schema: String,
    pub tuner_version: String,
    pub search: SearchOrder,
    pub objective: Objective,
    /// Unit of every estimate's `value`, `low` and `high`.
    pub objective_unit: String,
    pub confidence: f64,
    pub min_effect: f64,
    pub expression: String,
    /// The `fast`/`mixed` baseline (variable knobs at their defaults, fixed knobs pinned).
    pub baseline_route: String,
    /// Every knob of the expression at its database default: what the runtime builds untuned.
    pub default_route: String,
    pub accuracy: AccuracySpec,
    pub routes: Vec<RouteSummary>,
    /// Mixed search: the knobs promoted to phase 2 (built, accurate and faster than the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positive_knobs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racing: Option<RacingSummary>,
    /// Routes whose search-phase interval overlaps the best one's (the best first).
    pub ties: Vec<String>,
    pub head_to_head: Option<HeadToHeadSummary>,
    pub decision: Decision,
    pub counts: Counts,
    /// Why the tune ended early, if it did.
    pub stopped: Option<StopReason>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Where the golden outputs of the accuracy gate came from: the user's (`--ref-outputs`), the
    /// default route's, or a fallback's when the default route gave none (ONNX Runtime for TensorRT).
    #[serde(default)]
    pub golden: String,
    /// What was tuned where, and what the decision means in settings: filled in by the caller (the CLI),
    /// absent when the engine is used as a library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<TuneContext>,
}

/// The model, runtime and machine of a tune, how it measured, and the chosen route as settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneContext {
    /// Catalog profile name, or the ONNX file stem for `--onnx`.
    pub model: String,
    /// The ONNX file the routes were built from.
    pub model_file: String,
    pub model_sha256: String,
    pub runtime: String,
    pub runtime_version: String,
    pub machine: String,
    /// The public operation each measured call performs (`infer`, `classify`, ...).
    pub operation: String,
    /// How calls were measured and interleaved (process model), in words.
    pub measurement: String,
    pub command_line: String,
    /// The tuning cache, when one was written.
    pub cache: Option<String>,
    /// The decision's route as the settings it resolves to, when there is one.
    pub chosen: Option<ChosenRoute>,
    /// Other files written by the tune (report, saved bundles), by role.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// When the tune ended (RFC 3339); absent in summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The program that tuned (its revision places the tune in a history of commits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<super::ProgramInfo>,
    /// The machine as `run` records it (the history's machine fingerprint is taken from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_info: Option<super::MachineInfo>,
}

/// A route resolved to runtime settings: what to pass to `run` to get the same build and session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChosenRoute {
    pub route: String,
    /// `build.*` settings (part of the bundle key).
    pub build_settings: BTreeMap<String, serde_json::Value>,
    /// `runtime.*` load-time settings.
    pub runtime_settings: BTreeMap<String, serde_json::Value>,
    /// Other settings the route carries (e.g. trtexec flags or a TensorRT build route).
    #[serde(default)]
    pub other: BTreeMap<String, String>,
    /// `--set` arguments for `trtmc-bench run` that reproduce the route.
    pub run_sets: Vec<String>,
    /// Where the route's bundle was saved (`--save-bundle`).
    pub saved_bundle: Option<String>,
}

impl TuneSummary {
    /// True when no route was eligible (the CLI exits nonzero then).
    pub fn all_failed(&self) -> bool {
        self.decision.kind == DecisionKind::None
    }

    pub fn route(&self, route: &str) -> Option<&RouteSummary> {
        self.routes.iter().find(|r| r.route == route)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteSummary {
    pub route: String,
    /// Phase of the iteration that built and checked the route.
    pub phase: Phase,
    pub iter: usize,
    pub status: RouteStatus,
    pub failed_stage: Option<Stage>,
    pub crash: bool,
    pub error_message: Option<String>,
    pub accuracy: Option<AccuracyReport>,
    /// Objective over the search-phase samples (evaluation plus racing rounds).
    pub search: Option<Estimate>,
    pub search_samples: Option<Summary>,
    /// Objective over the head-to-head samples, for finalists.
    pub head_to_head: Option<Estimate>,
    pub eligible: bool,
    pub tied_with_best: bool,
    pub finalist: bool,
    /// Racing: the round after which the route was dropped as slower than the best.
    pub eliminated_in_round: Option<usize>,
    /// What the runtime's own tool said about this route's measurements, each once (trtexec's
    /// "GPU compute time is unstable" warning).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why this route's ranking is doubtful, e.g. a coefficient of variation above
    /// [`DOUBTFUL_CV`] over its search samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Coefficient of variation (standard deviation / mean of the search samples) above which a route's
/// ranking is flagged as doubtful. Calls of a steady route on the shared 2-core machine vary by a few
/// percent (docs/statistics.md: A/A ratios up to 1.06); a CV above 10 % means single calls differ by more
/// than the margins routes are told apart by, so its place in the search ranking rests on luck of timing.
pub const DOUBTFUL_CV: f64 = 0.10;

/// The warning for a route whose samples vary too much to rank it with confidence, if they do.
pub fn cv_warning(samples: Option<&Summary>) -> Option<String> {
    let s = samples?;
    (s.cv.is_finite() && s.cv > DOUBTFUL_CV).then(|| {
        format!(
            "CV {:.1} % over {} calls (above {:.0} %): its calls vary more than routes differ, so its rank is doubtful",
            s.cv * 100.0,
            s.count,
            DOUBTFUL_CV * 100.0
        )
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RacingSummary {
    pub rounds: usize,
    pub round_calls: usize,
    pub alpha: f64,
    pub test: String,
    pub eliminated: usize,
    pub survivors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadToHeadSummary {
    /// `interleaved_passes`, or `search_samples` when the passes could not run (budget spent).
    pub based_on: String,
    pub passes: usize,
    pub calls_per_pass: usize,
    pub finalists: Vec<FinalistResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalistResult {
    pub route: String,
    pub estimate: Option<Estimate>,
    /// Cost relative to the fastest finalist (`None` for the fastest itself).
    pub ratio_to_best: Option<Interval>,
    pub tied_with_best: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// One route is faster than every other finalist by more than `min_effect` at `confidence`.
    Winner,
    /// Several routes are within noise of each other; `route` is the one chosen among them.
    Tie,
    /// Only one route was eligible.
    Sole,
    /// No route was eligible.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    /// The route to use (the winner, or the chosen one of a tie).
    pub route: Option<String>,
    /// All tied routes (for `tie`), the chosen one included.
    pub tied_routes: Vec<String>,
    /// Winner only: how much slower the closest other finalist is.
    pub margin: Option<Margin>,
    /// How the chosen route compares with the baseline, when the baseline was measured.
    pub versus_baseline: Option<Margin>,
    pub reason: String,
}

/// `cost(other) / cost(route)`: above 1 means `route` is faster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Margin {
    pub other: String,
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    /// `(ratio - 1) * 100`.
    pub percent: f64,
}

impl Margin {
    pub fn from_interval(other: String, i: Interval) -> Self {
        Self {
            other,
            ratio: i.estimate,
            low: i.low,
            high: i.high,
            confidence: i.confidence,
            percent: (i.estimate - 1.0) * 100.0,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Routes planned before measurement (mixed: phase 1).
    pub planned: usize,
    pub evaluated: usize,
    pub eligible: usize,
    pub crashed: usize,
    pub timed_out: usize,
    pub failed: usize,
    pub accuracy_failed: usize,
    pub accuracy_errors: usize,
    /// Routes stopped after their probe as clearly slower than the best (status `eliminated`).
    #[serde(default)]
    pub eliminated: usize,
    /// Routes whose measurement the per-route budget cut short (fewer than `calls` samples).
    #[serde(default)]
    pub budget_capped: usize,
    /// Lines in the tuning cache after the header.
    pub iterations: usize,
    /// Iterations run in this session (the rest were read back from the cache).
    pub iterations_this_session: usize,
    /// Measurement calls made in this session, warm-ups included.
    pub measurement_calls_this_session: usize,
    /// Wall time of those calls in ms, warm-ups included, as the runtime timed them (the measurement
    /// cost of the search, without builds, loads and accuracy checks).
    #[serde(default)]
    pub measurement_ms_this_session: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The whole-tune budget (`--timeout`) was spent.
    Budget,
    /// The caller asked to stop after a number of iterations (a simulated kill); continue with the cache.
    Interrupted,
}

/// Which part of the tune an iteration belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Building the default route to produce golden outputs.
    #[serde(rename = "reference")]
    Reference,
    #[serde(rename = "fast")]
    Fast,
    #[serde(rename = "full")]
    Full,
    #[serde(rename = "mixed-1")]
    Mixed1,
    #[serde(rename = "mixed-2")]
    Mixed2,
    #[serde(rename = "racing")]
    Racing,
    /// Interleaved head-to-head passes over the finalists.
    #[serde(rename = "final")]
    Final,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Reference => "reference",
            Phase::Fast => "fast",
            Phase::Full => "full",
            Phase::Mixed1 => "mixed-1",
            Phase::Mixed2 => "mixed-2",
            Phase::Racing => "racing",
            Phase::Final => "final",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteStatus {
    /// Built, accurate and measured: eligible to win.
    Ok,
    /// The child process died (signal, missing result).
    Crashed,
    /// The child process ran past the per-route timeout and was killed.
    TimedOut,
    /// The runtime reported an error.
    Failed,
    /// Outputs exceeded a threshold or were not finite; measured for the record, never eligible.
    AccuracyFailed,
    /// Outputs could not be compared (missing tensor, shape mismatch).
    AccuracyError,
    /// Stopped after its probe calls: slower than the best route so far beyond doubt (every probe call
    /// above `early_stop_factor` × the best's cost). Its calls are kept; never eligible. The reason is in
    /// `error_message`.
    Eliminated,
}

/// Where an iteration failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Build,
    Outputs,
    Accuracy,
    Measure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchOrder {
    Fast,
    Full,
    Mixed,
    Racing,
}

impl SearchOrder {
    pub const ALL: [SearchOrder; 4] = [
        SearchOrder::Fast,
        SearchOrder::Full,
        SearchOrder::Mixed,
        SearchOrder::Racing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SearchOrder::Fast => "fast",
            SearchOrder::Full => "full",
            SearchOrder::Mixed => "mixed",
            SearchOrder::Racing => "racing",
        }
    }
}

impl fmt::Display for SearchOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SearchOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SearchOrder::ALL
            .into_iter()
            .find(|o| o.name() == s.trim())
            .ok_or_else(|| format!("unknown search order '{s}': use fast, full, mixed or racing"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    P50,
    P95,
    Mean,
    Throughput,
}

impl Objective {
    pub const ALL: [Objective; 4] = [
        Objective::P50,
        Objective::P95,
        Objective::Mean,
        Objective::Throughput,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Objective::P50 => "p50",
            Objective::P95 => "p95",
            Objective::Mean => "mean",
            Objective::Throughput => "throughput",
        }
    }

    /// Unit of [`Objective::value`].
    pub fn unit(self) -> &'static str {
        match self {
            Objective::Throughput => "calls/s",
            _ => "ms",
        }
    }

    /// Name of the latency statistic behind the cost (what a cache line's `time_ms` is).
    pub fn time_statistic(self) -> &'static str {
        match self {
            Objective::P50 => "p50",
            Objective::P95 => "p95",
            Objective::Mean | Objective::Throughput => "mean",
        }
    }

    /// The objective's own value for a cost (throughput: calls per second).
    pub fn value(self, cost: f64) -> f64 {
        match self {
            Objective::Throughput if cost > 0.0 => 1000.0 / cost,
            Objective::Throughput => f64::INFINITY,
            _ => cost,
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Objective {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == s.trim())
            .ok_or_else(|| format!("unknown objective '{s}': use p50, p95, mean or throughput"))
    }
}

/// The objective of one route with its interval, in the objective's unit (and the cost interval behind it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub statistic: Objective,
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    pub unit: String,
    pub samples: usize,
    /// The same interval as a cost in ms (lower is better), used for ranking.
    pub cost: Interval,
}

impl RouteStatus {
    /// The name as written in the summary and the cache.
    pub fn name(self) -> &'static str {
        match self {
            RouteStatus::Ok => "ok",
            RouteStatus::Crashed => "crashed",
            RouteStatus::TimedOut => "timed_out",
            RouteStatus::Failed => "failed",
            RouteStatus::AccuracyFailed => "accuracy_failed",
            RouteStatus::AccuracyError => "accuracy_error",
            RouteStatus::Eliminated => "eliminated",
        }
    }
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Build => "build",
            Stage::Outputs => "outputs",
            Stage::Accuracy => "accuracy",
            Stage::Measure => "measure",
        }
    }
}

impl DecisionKind {
    pub fn name(self) -> &'static str {
        match self {
            DecisionKind::Winner => "winner",
            DecisionKind::Tie => "tie",
            DecisionKind::Sole => "sole",
            DecisionKind::None => "none",
        }
    }
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Budget => "budget",
            StopReason::Interrupted => "interrupted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written names are the serialized ones (the report shows the names).
    #[test]
    fn names_match_the_serialized_values() {
        let serialized = |v: serde_json::Value| v.as_str().map(str::to_string);
        for s in [
            RouteStatus::Ok,
            RouteStatus::Crashed,
            RouteStatus::TimedOut,
            RouteStatus::Failed,
            RouteStatus::AccuracyFailed,
            RouteStatus::AccuracyError,
            RouteStatus::Eliminated,
        ] {
            assert_eq!(serialized(serde_json::json!(s)).as_deref(), Some(s.name()));
        }
        for s in [
            Stage::Build,
            Stage::Outputs,
            Stage::Accuracy,
            Stage::Measure,
        ] {
            assert_eq!(serialized(serde_json::json!(s)).as_deref(), Some(s.name()));
        }
        for k in [
            DecisionKind::Winner,
            DecisionKind::Tie,
            DecisionKind::Sole,
            DecisionKind::None,
        ] {
            assert_eq!(serialized(serde_json::json!(k)).as_deref(), Some(k.name()));
        }
        for r in [StopReason::Budget, StopReason::Interrupted] {
            assert_eq!(serialized(serde_json::json!(r)).as_deref(), Some(r.name()));
        }
        for p in [
            Phase::Reference,
            Phase::Fast,
            Phase::Full,
            Phase::Mixed1,
            Phase::Mixed2,
            Phase::Racing,
            Phase::Final,
        ] {
            assert_eq!(serialized(serde_json::json!(p)).as_deref(), Some(p.name()));
        }
    }
}
