//! Options of one tuning run. All of them are stored in the tuning-cache header, so `--continue` with only
//! the cache path restores them.

use crate::search::SearchOrder;
use crate::select::Objective;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use trtmc_core::accuracy::{AccuracySpec, Algorithm};

/// Every option of a tune: search order, objective, call counts, statistics, limits and the accuracy
/// gate (defaults: [`TuneConfig::default`]; from command-line flags: [`ConfigFlags::to_config`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneConfig {
    /// The order routes are tried in (`--search`).
    pub search: SearchOrder,
    /// The statistic routes are ranked on (steady-state samples only).
    pub objective: Objective,
    /// Confidence of every interval (medians over rounds, docs/statistics.md) used to call ties and
    /// winners.
    pub confidence: f64,
    /// Smallest relative margin that makes a winner: a finalist within `min_effect` of the best (at the
    /// interval's lower bound) is a tie. 0.01 = 1 %.
    pub min_effect: f64,
    /// Steady-state calls per route in the search phase; for `racing`, the most a route gets.
    pub calls: usize,
    /// Warm-up calls before a route's first measurement (never counted).
    pub warmup_calls: usize,
    /// Warm-up calls before each later round or head-to-head pass (never counted).
    pub switch_warmup_calls: usize,
    /// Calls per route per racing round.
    pub race_round_calls: usize,
    /// Significance of the racing elimination test (Mann-Whitney U, two-sided, per comparison).
    pub race_alpha: f64,
    /// Samples every surviving route needs before racing drops anything.
    pub race_min_samples: usize,
    /// Interleaved head-to-head passes over the finalists.
    pub final_passes: usize,
    /// The most head-to-head passes while a finalist is undecided (docs/tune.md); `None`: twice
    /// `final_passes`. Absent from caches written before passes were added, which resume with the default.
    #[serde(default)]
    pub max_final_passes: Option<usize>,
    /// Calls per finalist per pass.
    pub final_calls_per_pass: usize,
    /// Most routes taken into the head-to-head.
    pub max_finalists: usize,
    /// `--max-routes`: most routes built and evaluated (all phases together).
    pub max_routes: Option<usize>,
    /// `--route-timeout`: limit for one route's build, output or measurement call, enforced by the runtime
    /// (which kills its child process); a route over it is excluded as timed out.
    pub route_timeout_s: Option<f64>,
    /// `--timeout` (trtexec's `--tuningTimeOut`): wall-clock budget of the whole tune, checked before each
    /// iteration (the running one finishes); when spent, the tune stops and decides with what it has.
    pub budget_s: Option<f64>,
    /// Steady-state calls of a route's probe, the first stage of its measurement (after one warm-up call):
    /// enough to see that a route is far slower than the best before spending `calls` on it. On a route
    /// that goes on, the probe's calls count among its warm-ups. 0 measures in one stage.
    #[serde(default)]
    pub probe_calls: usize,
    /// Early stop: a route whose every probe call is above this factor × the best route's cost so far is
    /// stopped and recorded as `eliminated`. `None` (`--early-stop-factor 0`) never stops a route early.
    /// Absent from caches written before early stopping existed, which therefore resume without it.
    #[serde(default)]
    pub early_stop_factor: Option<f64>,
    /// `--route-budget`: seconds of steady-state measurement one route gets in the search (the calls that
    /// fit, sized from its probe; at least one). Unlike `route_timeout_s` nothing is killed: the calls
    /// made are kept. `None`: every route gets `calls`.
    #[serde(default)]
    pub route_budget_s: Option<f64>,
    /// The accuracy gate: how each route's outputs are compared with the reference's, and the thresholds.
    pub accuracy: AccuracySpec,
}

/// Default probe: three calls, so one lucky or unlucky call cannot decide alone.
pub const DEFAULT_PROBE_CALLS: usize = 3;
/// Default early-stop factor. The shared 2-core machine changes speed by up to ~2× for seconds at a time
/// (docs/statistics.md: block medians ranged 1.65–2.05× fastest to slowest), and a route with two
/// threads ran over 3× slower than the best while other builds loaded both cores (onnxruntime's racing
/// test in crates/cli/tests/tune_cli.rs), so only a route whose fastest probe call is 5× the best's cost
/// is slower beyond doubt. The pathological routes early stopping is for are hundreds to thousands of
/// times slower (tract's fp16 transform on tiny-cnn: ~4,000×).
pub const DEFAULT_EARLY_STOP_FACTOR: f64 = 5.0;
/// Default per-route measurement budget in seconds: 100 calls of a 100 ms route.
pub const DEFAULT_ROUTE_BUDGET_S: f64 = 10.0;

impl TuneConfig {
    /// The most head-to-head passes: `max_final_passes`, by default twice `final_passes`.
    pub fn most_final_passes(&self) -> usize {
        self.max_final_passes
            .unwrap_or(2 * self.final_passes)
            .max(self.final_passes)
    }
}

impl Default for TuneConfig {
    fn default() -> Self {
        Self {
            search: SearchOrder::Fast,
            objective: Objective::P50,
            confidence: 0.95,
            min_effect: 0.01,
            calls: 100,
            warmup_calls: 5,
            switch_warmup_calls: 1,
            race_round_calls: 5,
            race_alpha: 0.01,
            race_min_samples: 10,
            final_passes: 10,
            max_final_passes: None,
            final_calls_per_pass: 10,
            max_finalists: 4,
            max_routes: None,
            route_timeout_s: None,
            budget_s: None,
            probe_calls: DEFAULT_PROBE_CALLS,
            early_stop_factor: Some(DEFAULT_EARLY_STOP_FACTOR),
            route_budget_s: Some(DEFAULT_ROUTE_BUDGET_S),
            accuracy: AccuracySpec::new(Algorithm::Cos, 1e-3),
        }
    }
}

/// An option outside its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tuning option {option} = {value} is out of range: {expected}")]
pub struct ConfigError {
    /// The [`TuneConfig`] field, e.g. `min_effect`.
    pub option: &'static str,
    /// The refused value as text.
    pub value: String,
    /// What the option accepts.
    pub expected: &'static str,
}

/// The tuning options a command line may set (`None` keeps the default), in the units users type:
/// names for the search order, objective and accuracy algorithm, `NAME=EPS` per-tensor thresholds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigFlags {
    /// `--search`: `fast`, `full`, `mixed` or `racing`.
    pub search: Option<String>,
    /// `--objective`: the statistic routes are ranked on (e.g. `p50`).
    pub objective: Option<String>,
    /// `--calls`: steady-state calls per route in the search.
    pub calls: Option<usize>,
    /// `--warmup`: warm-up calls before a route's first measurement.
    pub warmup: Option<usize>,
    /// `--race-round-calls`: calls per route per racing round.
    pub race_round_calls: Option<usize>,
    /// `--final-passes`: head-to-head passes over the finalists.
    pub final_passes: Option<usize>,
    /// `--final-calls`: calls per finalist per pass.
    pub final_calls: Option<usize>,
    /// `--confidence`: confidence of the intervals that call ties and winners (between 0.5 and 1).
    pub confidence: Option<f64>,
    /// `--min-effect`: smallest relative margin that makes a winner (0.01 = 1 %).
    pub min_effect: Option<f64>,
    /// `--max-routes`: most routes built and evaluated.
    pub max_routes: Option<usize>,
    /// `--route-timeout`, in seconds: limit of one route's build, output or measurement call.
    pub route_timeout_s: Option<f64>,
    /// trtexec's `--tuningTimeOut`: a negative budget means none.
    pub timeout_s: Option<f64>,
    /// `--route-budget`: a negative budget means none.
    pub route_budget_s: Option<f64>,
    /// `--early-stop-factor`: 0 turns early stopping off.
    pub early_stop_factor: Option<f64>,
    /// `--accuracy-algorithm`: how outputs are compared with the reference's (e.g. `cos`).
    pub accuracy_algorithm: Option<String>,
    /// `--accuracy-threshold`: the loss every output tensor must stay within.
    pub accuracy_threshold: Option<f64>,
    /// `--atol`: absolute tolerance of the `l0` loss.
    pub atol: Option<f64>,
    /// `--rtol`: relative tolerance of the `l0` loss.
    pub rtol: Option<f64>,
    /// `--tensor-threshold NAME=EPS`, repeatable: a threshold for one output tensor.
    pub tensor_thresholds: Vec<String>,
}

impl ConfigFlags {
    /// The validated configuration; an error names the flag and what it accepts.
    pub fn to_config(&self) -> Result<TuneConfig, FlagError> {
        let mut c = TuneConfig::default();
        if let Some(s) = &self.search {
            c.search = s.parse::<SearchOrder>().map_err(|e| FlagError::Value {
                flag: "--search",
                reason: e.to_string(),
            })?;
        }
        if let Some(o) = &self.objective {
            c.objective = o.parse::<Objective>().map_err(|e| FlagError::Value {
                flag: "--objective",
                reason: e.to_string(),
            })?;
        }
        let set = |target: &mut usize, value: Option<usize>| {
            if let Some(v) = value {
                *target = v;
            }
        };
        set(&mut c.calls, self.calls);
        set(&mut c.warmup_calls, self.warmup);
        set(&mut c.race_round_calls, self.race_round_calls);
        set(&mut c.final_passes, self.final_passes);
        set(&mut c.final_calls_per_pass, self.final_calls);
        c.confidence = self.confidence.unwrap_or(c.confidence);
        c.min_effect = self.min_effect.unwrap_or(c.min_effect);
        c.max_routes = self.max_routes;
        c.route_timeout_s = self.route_timeout_s;
        // A negative budget means none; NaN is kept, for `validate` to refuse.
        c.budget_s = self.timeout_s.filter(|t| t.is_nan() || *t >= 0.0);
        if let Some(b) = self.route_budget_s {
            c.route_budget_s = (b.is_nan() || b >= 0.0).then_some(b);
        }
        if let Some(f) = self.early_stop_factor {
            c.early_stop_factor = (f != 0.0).then_some(f);
        }
        let algorithm = match &self.accuracy_algorithm {
            Some(a) => a.parse::<Algorithm>().map_err(|e| FlagError::Value {
                flag: "--accuracy-algorithm",
                reason: e.to_string(),
            })?,
            None => c.accuracy.algorithm,
        };
        let mut spec = AccuracySpec::new(
            algorithm,
            self.accuracy_threshold.unwrap_or(c.accuracy.epsilon),
        );
        spec.atol = self.atol.unwrap_or(spec.atol);
        spec.rtol = self.rtol.unwrap_or(spec.rtol);
        for t in &self.tensor_thresholds {
            let (name, eps) = t
                .split_once('=')
                .ok_or_else(|| FlagError::TensorThreshold { given: t.clone() })?;
            let eps: f64 = eps.trim().parse().map_err(|_| FlagError::TensorEpsilon {
                given: t.clone(),
                epsilon: eps.to_string(),
            })?;
            spec.per_tensor_epsilon.insert(name.trim().to_string(), eps);
        }
        c.accuracy = spec;
        c.validate().map_err(|e| FlagError::OutOfRange {
            flag: flag_of(e.option),
            refused: e,
        })?;
        Ok(c)
    }
}

/// A tune flag whose value is refused; the message names the flag and what it accepts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    /// A value that does not parse; `reason` lists what the flag takes.
    #[error("{flag}: {reason}")]
    Value {
        /// The flag, e.g. `--search`.
        flag: &'static str,
        /// The parser's message, listing what the flag takes.
        reason: String,
    },
    /// A `--tensor-threshold` value without `=`.
    #[error("--tensor-threshold `{given}` is not NAME=EPS (e.g. --tensor-threshold logits=1e-3)")]
    TensorThreshold {
        /// The value as typed.
        given: String,
    },
    /// A `--tensor-threshold` whose threshold is not a number.
    #[error("--tensor-threshold `{given}`: `{epsilon}` is not a number")]
    TensorEpsilon {
        /// The value as typed.
        given: String,
        /// The part after `=`.
        epsilon: String,
    },
    /// A value that parses but is outside the option's range.
    #[error(
        "{flag} {} is out of range: {} (see trtmc-bench tune --help)",
        refused.value,
        refused.expected
    )]
    OutOfRange {
        /// The flag the user typed for the option (e.g. `--timeout` for `budget_s`).
        flag: String,
        /// The option, value and accepted range.
        refused: ConfigError,
    },
}

/// The command-line flag of a configuration option, for messages about what the user typed.
fn flag_of(option: &str) -> String {
    match option {
        "budget_s" => "--timeout".into(),
        "route_timeout_s" => "--route-timeout".into(),
        "route_budget_s" => "--route-budget".into(),
        "warmup_calls" => "--warmup".into(),
        "final_calls_per_pass" => "--final-calls".into(),
        "epsilon" => "--accuracy-threshold".into(),
        "per_tensor_epsilon" => "--tensor-threshold".into(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

/// The most calls of one kind a tuning option may ask for per route (as `run --iterations`).
pub const MOST_CALLS: usize = trtmc_core::case::MOST_CALLS as usize;

impl TuneConfig {
    /// Checks every option's range; `Err` names the first option out of range and what it accepts.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |option, value: String, expected| {
            Err(ConfigError {
                option,
                value,
                expected,
            })
        };
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return bad(
                "confidence",
                self.confidence.to_string(),
                "between 0.5 and 1 (e.g. 0.95)",
            );
        }
        if !(0.0..1.0).contains(&self.min_effect) {
            return bad(
                "min_effect",
                self.min_effect.to_string(),
                "at least 0 and below 1 (0.01 = 1 %)",
            );
        }
        if !(self.race_alpha > 0.0 && self.race_alpha < 0.5) {
            return bad(
                "race_alpha",
                self.race_alpha.to_string(),
                "between 0 and 0.5 (e.g. 0.01)",
            );
        }
        for (option, value) in [
            ("calls", self.calls),
            ("race_round_calls", self.race_round_calls),
            ("final_calls_per_pass", self.final_calls_per_pass),
        ] {
            if value == 0 {
                return bad(option, "0".into(), "at least 1");
            }
        }
        for (option, value) in [
            ("calls", self.calls),
            ("warmup_calls", self.warmup_calls),
            ("race_round_calls", self.race_round_calls),
            ("final_passes", self.final_passes),
            ("final_calls_per_pass", self.final_calls_per_pass),
        ] {
            if value > MOST_CALLS {
                return bad(
                    option,
                    value.to_string(),
                    "at most 100000000 calls; bound the search by time instead (--route-budget, --timeout)",
                );
            }
        }
        if self.max_finalists < 2 {
            return bad(
                "max_finalists",
                self.max_finalists.to_string(),
                "at least 2",
            );
        }
        if self.max_routes == Some(0) {
            return bad("max_routes", "0".into(), "at least 1");
        }
        for (option, value) in [
            ("route_timeout_s", self.route_timeout_s),
            ("budget_s", self.budget_s),
            ("route_budget_s", self.route_budget_s),
        ] {
            // Above a week is a typo (and beyond what a `Duration` holds near 1e20).
            if let Some(v) = value
                && !(0.0..=trtmc_core::case::LONGEST_S).contains(&v)
            {
                return bad(
                    option,
                    trtmc_core::case::number_text(v),
                    "seconds from 0 to 604800 (one week); a negative --timeout or --route-budget means none",
                );
            }
        }
        if let Some(f) = self.early_stop_factor
            && !(f.is_finite() && f > 1.0)
        {
            return bad(
                "early_stop_factor",
                f.to_string(),
                "a finite factor above 1 (e.g. 3), or 0 for no early stop",
            );
        }
        let a = &self.accuracy;
        // Finite, because JSON (the cache header) cannot hold infinity: a gate that passes everything is a
        // large threshold such as 1e30.
        for (option, value) in [("atol", a.atol), ("rtol", a.rtol), ("epsilon", a.epsilon)] {
            if !(value.is_finite() && value >= 0.0) {
                return bad(
                    option,
                    value.to_string(),
                    "a finite number at least 0 (1e30 disables the gate)",
                );
            }
        }
        if a.per_tensor_epsilon
            .values()
            .any(|v| !(v.is_finite() && *v >= 0.0))
        {
            return bad(
                "per_tensor_epsilon",
                format!("{:?}", a.per_tensor_epsilon),
                "finite numbers at least 0",
            );
        }
        Ok(())
    }

    pub(crate) fn route_timeout(&self) -> Option<Duration> {
        self.route_timeout_s.map(Duration::from_secs_f64)
    }

    pub(crate) fn budget(&self) -> Option<Duration> {
        self.budget_s.map(Duration::from_secs_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_round_trip() {
        let c = TuneConfig::default();
        assert_eq!(c.validate(), Ok(()));
        let back: TuneConfig =
            serde_json::from_str(&serde_json::to_string(&c).expect("json")).expect("back");
        assert_eq!(back, c);
    }

    #[test]
    fn out_of_range_options_name_themselves() {
        let c = TuneConfig {
            confidence: 1.5,
            ..TuneConfig::default()
        };
        assert!(
            c.validate()
                .expect_err("bad")
                .to_string()
                .starts_with("tuning option confidence = 1.5")
        );
        let c = TuneConfig {
            calls: 0,
            ..TuneConfig::default()
        };
        assert_eq!(c.validate().expect_err("bad").option, "calls");
        let c = TuneConfig {
            budget_s: Some(f64::NAN),
            ..TuneConfig::default()
        };
        assert_eq!(c.validate().expect_err("bad").option, "budget_s");
    }

    #[test]
    fn flags_are_bounded_and_named_as_typed() {
        let refused = |flags: ConfigFlags| flags.to_config().expect_err("refused").to_string();
        // Beyond a week is refused before anything turns it into a Duration (which would panic).
        let e = refused(ConfigFlags {
            route_timeout_s: Some(1e20),
            ..ConfigFlags::default()
        });
        assert!(e.starts_with("--route-timeout 1e20 is out of range"), "{e}");
        assert!(e.contains("604800"), "{e}");
        let e = refused(ConfigFlags {
            timeout_s: Some(f64::NAN),
            ..ConfigFlags::default()
        });
        assert!(e.starts_with("--timeout NaN"), "{e}");
        let e = refused(ConfigFlags {
            route_budget_s: Some(1e300),
            ..ConfigFlags::default()
        });
        assert!(e.starts_with("--route-budget 1e300"), "{e}");
        let e = refused(ConfigFlags {
            warmup: Some(MOST_CALLS + 1),
            ..ConfigFlags::default()
        });
        assert!(e.starts_with("--warmup 100000001"), "{e}");
        // A negative budget still means none, as with trtexec.
        let c = ConfigFlags {
            timeout_s: Some(-1.0),
            route_budget_s: Some(-1.0),
            ..ConfigFlags::default()
        }
        .to_config()
        .expect("negative: none");
        assert_eq!((c.budget_s, c.route_budget_s), (None, None));
        let c = ConfigFlags {
            timeout_s: Some(WEEK),
            ..ConfigFlags::default()
        }
        .to_config()
        .expect("a week");
        assert!(c.budget().is_some());
    }

    const WEEK: f64 = 604_800.0;
}
