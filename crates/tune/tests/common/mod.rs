//! A fake runtime for driver tests: deterministic synthetic latencies with seeded noise, configurable
//! crashes, timeouts and inaccurate routes. It counts every call so tests can assert on work done.

#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use trtmc_core::accuracy::{ElementType, Tensor};
use trtmc_tune::{KnobSet, MeasurePlan, Route, RouteError, RouteRunner, Timing};

pub type Rule = Box<dyn Fn(&Route) -> bool>;

pub struct FakeRunner {
    /// True latency in ms of a route.
    pub latency: Box<dyn Fn(&Route) -> f64>,
    /// Relative standard deviation of the noise.
    pub noise: f64,
    pub crash_on_build: Rule,
    pub timeout_on_measure: Rule,
    /// Routes whose outputs drift from the reference (by `drift`).
    pub inaccurate: Rule,
    pub drift: f64,
    pub seed: u64,
    /// A process effect: each worker process of a route runs at 1.0 or at this factor (drawn when the
    /// process starts), for its whole life. `None`: no effect.
    pub process_levels: Option<f64>,
    /// The level of each route's current process.
    levels: HashMap<String, f64>,
    /// Measurements that asked for a fresh process (head-to-head passes), and their calls.
    pub fresh_processes: usize,
    pub fresh_process_calls: usize,
    per_route_calls: HashMap<String, u64>,
    pub builds: usize,
    pub output_runs: usize,
    /// Measurement calls, warm-ups included.
    pub measure_calls: usize,
    pub warmup_calls: usize,
    /// The routes of every `build_ahead` call, in order.
    pub ahead: Vec<Vec<String>>,
    /// `build_ahead` fails as a refused Slurm submission does (an executor that broke).
    pub ahead_error: bool,
}

pub fn never() -> Rule {
    Box::new(|_| false)
}

impl FakeRunner {
    pub fn new(latency: impl Fn(&Route) -> f64 + 'static) -> Self {
        Self {
            latency: Box::new(latency),
            noise: 0.03,
            crash_on_build: never(),
            timeout_on_measure: never(),
            inaccurate: never(),
            drift: 0.5,
            seed: 1,
            process_levels: None,
            levels: HashMap::new(),
            fresh_processes: 0,
            fresh_process_calls: 0,
            per_route_calls: HashMap::new(),
            builds: 0,
            output_runs: 0,
            measure_calls: 0,
            warmup_calls: 0,
            ahead: Vec::new(),
            ahead_error: false,
        }
    }

    /// One noisy sample: approximately normal noise (sum of 4 uniforms) plus a rare slow outlier.
    fn sample(&self, rng: &mut ChaCha8Rng, base: f64) -> f64 {
        let z: f64 = (0..4).map(|_| rng.random::<f64>() - 0.5).sum::<f64>() * 3f64.sqrt();
        let outlier = if rng.random::<f64>() < 0.01 { 0.3 } else { 0.0 };
        base * (1.0 + self.noise * z + outlier)
    }
}

pub fn golden_inputs() -> Vec<Tensor> {
    vec![Tensor::new("x", ElementType::F32, vec![4], vec![0.5, 1.0, 1.5, 2.0]).expect("input")]
}

/// The model: y = 2x + 1, z = x^2 (exact on accurate routes; an inaccurate route adds `±drift` to y,
/// alternating in sign, which moves every loss including cos).
fn model(inputs: &[Tensor], drift: f64) -> Vec<Tensor> {
    let x = &inputs[0].values;
    let y = x
        .iter()
        .enumerate()
        .map(|(i, v)| 2.0 * v + 1.0 + if i % 2 == 0 { drift } else { -drift })
        .collect();
    let z = x.iter().map(|v| v * v).collect();
    vec![
        Tensor::new("y", ElementType::F32, vec![x.len()], y).expect("y"),
        Tensor::new("z", ElementType::F32, vec![x.len()], z).expect("z"),
    ]
}

pub fn reference_outputs() -> Vec<Tensor> {
    model(&golden_inputs(), 0.0)
}

impl RouteRunner for FakeRunner {
    type Built = Route;

    fn build_ahead(
        &mut self,
        routes: &[Route],
        _timeout: Option<Duration>,
    ) -> Result<(), trtmc_tune::ExecutorError> {
        self.ahead
            .push(routes.iter().map(Route::to_string).collect());
        match self.ahead_error {
            // A refused submission, as the Slurm runner reports it.
            true => Err(trtmc_tune::ExecutorError::Submit {
                source: trtmc_executor::slurm::SlurmError::ControllerUnreachable,
            }),
            false => Ok(()),
        }
    }

    fn build(&mut self, route: &Route, _timeout: Option<Duration>) -> Result<Route, RouteError> {
        self.builds += 1;
        if (self.crash_on_build)(route) {
            return Err(RouteError::crash("child killed by signal 11 (SIGSEGV)"));
        }
        Ok(route.clone())
    }

    fn outputs(
        &mut self,
        built: &mut Route,
        inputs: &[Tensor],
        _t: Option<Duration>,
    ) -> Result<Vec<Tensor>, RouteError> {
        self.output_runs += 1;
        let drift = if (self.inaccurate)(built) {
            self.drift
        } else {
            0.0
        };
        Ok(model(inputs, drift))
    }

    fn measure(&mut self, built: &mut Route, plan: &MeasurePlan) -> Result<Timing, RouteError> {
        self.measure_calls += plan.warmup_calls + plan.calls;
        self.warmup_calls += plan.warmup_calls;
        if (self.timeout_on_measure)(built) {
            return Err(RouteError::timeout(
                "no result within the 30 s route timeout; child killed",
            ));
        }
        let key = built.to_string();
        let n = self.per_route_calls.entry(key.clone()).or_insert(0);
        *n += 1;
        let mut hash: u64 = self.seed ^ (*n << 32);
        for b in key.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(hash);
        if plan.fresh_process {
            self.fresh_processes += 1;
            self.fresh_process_calls += plan.warmup_calls + plan.calls;
        }
        let mut base = (self.latency)(built);
        if let Some(slow) = self.process_levels {
            if plan.fresh_process || !self.levels.contains_key(&key) {
                let level = if rng.random::<bool>() { slow } else { 1.0 };
                self.levels.insert(key.clone(), level);
            }
            base *= self.levels.get(&key).copied().unwrap_or(1.0);
        }
        // Warm-ups are slow (cold caches) so that counting them would visibly bias a statistic.
        let warmup_ms = (0..plan.warmup_calls).map(|_| base * 3.0).collect();
        let samples_ms = (0..plan.calls)
            .map(|_| self.sample(&mut rng, base))
            .collect();
        Ok(Timing {
            notes: Vec::new(),
            warmup_ms,
            samples_ms,
        })
    }
}

/// A knob database of `n` knobs `-k0..-k{n-1}`, each `[0|1|2|3]` with default 0, plus `-noop=[on|off]`.
pub fn knobs(n: usize) -> KnobSet {
    let mut options: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({"option": format!("-k{i}"), "allowed_values": format!("-k{i}=[0|1|2|3]"),
                "default_value": "0", "help": format!("test knob {i}")})
        })
        .collect();
    options.push(serde_json::json!({"option": "-noop", "allowed_values": "-noop=[on|off]", "default_value": "on",
        "help": "changes nothing"}));
    let db = serde_json::json!({"tuner_version": "fake-1", "tuner_options": options});
    KnobSet::from_json(&db.to_string(), "fake runtime").expect("test knobs")
}

pub fn value(route: &Route, knob: &str) -> u32 {
    route.value(knob).and_then(|v| v.parse().ok()).unwrap_or(0)
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Validates `instance` against `schemas/<name>`, listing every violation.
pub fn assert_valid(schema_name: &str, instance: &serde_json::Value) {
    let path = repo_root().join("schemas").join(schema_name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{schema_name} violations:\n{}",
        errors.join("\n")
    );
}
