//! The worker: owns the timed loop. Loads the bundle, prepares the operation's runner, runs the warm-ups,
//! then times each public operation call with the monotonic clock and records it in a preallocated
//! buffer. Nothing else happens between the two clock reads.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use trtmc_core::artifacts::{Observation, RuntimeInfo};
use trtmc_core::operations;

use crate::bundle::BundleManifest;
use crate::ops::{self, CallRecord, RunnerContext, TimedRunner};
use crate::protocol::{WORKER_RESULT_SCHEMA, WorkerRequest, WorkerResult, WorkerStatus};
use crate::runtime;

/// Executes a worker request; failures become a `WorkerResult` with status `error`.
pub fn execute(request: &WorkerRequest) -> WorkerResult {
    let runtime_info = runtime_info(&request.runtime);
    let outcome = match &request.profile {
        Some(pass) => crate::profile::pass::execute(request, pass, runtime_info.clone()),
        None => execute_inner(request, runtime_info.clone()),
    };
    match outcome {
        Ok(result) => result,
        Err(e) => WorkerResult::failed(runtime_info, format!("{e:#}")),
    }
}

fn runtime_info(name: &str) -> RuntimeInfo {
    match runtime::runtime(name) {
        Ok(rt) => RuntimeInfo {
            name: rt.name().into(),
            version: rt.version(),
        },
        Err(_) => RuntimeInfo {
            name: name.into(),
            version: "unknown".into(),
        },
    }
}

fn execute_inner(
    request: &WorkerRequest,
    runtime_info: RuntimeInfo,
) -> anyhow::Result<WorkerResult> {
    let op = operations::operation(&request.operation)
        .with_context(|| format!("unknown operation `{}`", request.operation))?;
    let load_started = Instant::now();
    let (session, manifest) = match &request.bundle {
        None => (None, None),
        Some(dir) => {
            let rt = runtime::runtime(&request.runtime).map_err(anyhow::Error::msg)?;
            let manifest = BundleManifest::read(dir).map_err(anyhow::Error::msg)?;
            let session = rt
                .load(dir, &manifest, &request.runtime_settings)
                .with_context(|| format!("cannot load bundle {}", dir.display()))?;
            (Some(session), Some(manifest))
        }
    };
    let ctx = RunnerContext {
        request: &request.request,
        session,
        bundle: manifest.as_ref(),
        manifest_dir: request.manifest_dir.as_deref(),
        tokenizer: request.tokenizer.as_deref(),
    };
    let mut runner = ops::prepare(op.name, ctx)?;
    let load_ms = load_started.elapsed().as_secs_f64() * 1e3;

    let mut warmup_ms = Vec::with_capacity(request.warmup as usize);
    for _ in 0..request.warmup {
        let mut record = CallRecord::default();
        let t0 = Instant::now();
        runner.call(&mut record).context("warm-up call failed")?;
        warmup_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        runner.verify()?;
    }

    let min_duration = Duration::from_secs_f64(request.min_duration_s.max(0.0));
    let records = match (request.test_call_delay_us, request.test_call_slowdown_ppm) {
        (None, None) => timed_loop(runner.as_mut(), request.iterations, min_duration)?,
        // Test hooks (the matrix's injected slowdowns): the delay is part of each call.
        (delay_us, slowdown_ppm) => timed_loop(
            &mut ops::Delayed {
                inner: runner.as_mut(),
                delay: Duration::from_micros(delay_us.unwrap_or(0)),
                slowdown: slowdown_ppm.unwrap_or(0) as f64 / 1e6,
            },
            request.iterations,
            min_duration,
        )?,
    };
    let stage_names: Vec<&str> = op.stages.iter().map(|s| s.name).collect();
    let counter_names: Vec<&str> = op.counters.iter().map(|c| c.name).collect();
    let observations = records
        .iter()
        .enumerate()
        .map(|(i, r)| to_observation(i, r, &stage_names, &counter_names))
        .collect();
    Ok(WorkerResult {
        schema: WORKER_RESULT_SCHEMA.into(),
        status: WorkerStatus::Ok,
        error: None,
        runtime: runtime_info,
        load_ms: Some(load_ms),
        warmup_ms,
        observations,
        notes: runner.notes(),
    })
}

/// A timed call: start offset from the first call, wall time, and what the runner reported.
#[derive(Debug, Clone, Copy)]
pub struct TimedCall {
    pub start: Duration,
    pub wall: Duration,
    pub record: CallRecord,
}

/// Runs until `iterations` calls are done and `min_duration` has passed (both minimums hold).
pub fn timed_loop(
    runner: &mut dyn TimedRunner,
    iterations: u64,
    min_duration: Duration,
) -> anyhow::Result<Vec<TimedCall>> {
    let mut calls: Vec<TimedCall> = Vec::with_capacity(iterations as usize);
    let origin = Instant::now();
    loop {
        let mut record = CallRecord::default();
        let t0 = Instant::now();
        let outcome = runner.call(&mut record);
        let t1 = Instant::now();
        outcome.with_context(|| format!("timed call {} failed", calls.len()))?;
        calls.push(TimedCall {
            start: t0 - origin,
            wall: t1 - t0,
            record,
        });
        runner.verify()?;
        if calls.len() as u64 >= iterations && t1 - origin >= min_duration {
            return Ok(calls);
        }
    }
}

fn to_observation(
    index: usize,
    call: &TimedCall,
    stage_names: &[&str],
    counter_names: &[&str],
) -> Observation {
    let r = &call.record;
    let positive = |v: u32| (v > 0).then_some(u64::from(v));
    Observation {
        iteration: index as u64,
        start_ns: call.start.as_nanos() as u64,
        wall_ns: call.wall.as_nanos() as u64,
        items: positive(r.items),
        elements_per_item: positive(r.elements_per_item),
        input_tokens: positive(r.input_tokens),
        output_tokens: positive(r.output_tokens),
        stages_ns: stage_names
            .iter()
            .zip(r.stages_ns.iter())
            .map(|(name, &ns)| (name.to_string(), ns))
            .collect::<BTreeMap<_, _>>(),
        counts: counter_names
            .iter()
            .zip(r.counts.iter())
            .map(|(name, &n)| (name.to_string(), n))
            .collect(),
    }
}

/// Reads the request file, executes it, writes the result file atomically. Returns the exit code:
/// 0 when the result says ok, 1 when it records an error (a crash writes no result at all).
pub fn main_with_files(request_path: &Path, result_path: &Path) -> i32 {
    let request: Result<WorkerRequest, String> = std::fs::read(request_path)
        .map_err(|e| format!("cannot read worker request {}: {e}", request_path.display()))
        .and_then(|b| {
            serde_json::from_slice(&b)
                .map_err(|e| format!("malformed worker request {}: {e}", request_path.display()))
        });
    let result = match request {
        Ok(r) => execute(&r),
        Err(e) => WorkerResult::failed(
            RuntimeInfo {
                name: "unknown".into(),
                version: "unknown".into(),
            },
            e,
        ),
    };
    if let Some(e) = &result.error {
        eprintln!("worker error: {e}");
    }
    if let Err(e) = trtmc_core::fsutil::write_json_atomic(result_path, &result) {
        eprintln!("worker: cannot write {}: {e}", result_path.display());
        return 1;
    }
    i32::from(result.status != WorkerStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WORKER_REQUEST_SCHEMA;

    fn request(op: &str, warmup: u64, iterations: u64) -> WorkerRequest {
        WorkerRequest {
            schema: WORKER_REQUEST_SCHEMA.into(),
            operation: op.into(),
            runtime: "tract".into(),
            bundle: None,
            manifest_dir: None,
            tokenizer: None,
            request: BTreeMap::new(),
            runtime_settings: BTreeMap::new(),
            warmup,
            iterations,
            min_duration_s: 0.0,
            profile: None,
            test_call_delay_us: None,
            test_call_slowdown_ppm: None,
        }
    }

    #[test]
    fn noop_produces_exactly_the_requested_observations() {
        let r = execute(&request("test_noop", 3, 25));
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert_eq!(r.warmup_ms.len(), 3);
        assert_eq!(r.observations.len(), 25);
        assert!(
            r.observations
                .windows(2)
                .all(|w| w[0].start_ns <= w[1].start_ns)
        );
        assert_eq!(r.observations[24].iteration, 24);
    }

    #[test]
    fn min_duration_extends_the_loop() {
        let mut req = request("test_sleep", 0, 2);
        req.request
            .insert("sleep_us".into(), serde_json::json!(2000));
        req.min_duration_s = 0.05;
        let r = execute(&req);
        let last = r.observations.last().expect("observations");
        assert!(
            last.start_ns + last.wall_ns >= 50_000_000,
            "the loop ran for at least the minimum duration"
        );
        assert!(
            r.observations.len() > 2,
            "more calls than --iterations were needed"
        );
        assert!(r.observations.iter().all(|o| o.wall_ns >= 2_000_000));
    }

    #[test]
    fn the_requested_test_slowdown_stretches_every_timed_call_by_its_fraction() {
        let mut req = request("test_sleep", 1, 5);
        req.request
            .insert("sleep_us".into(), serde_json::json!(20_000));
        req.test_call_slowdown_ppm = Some(500_000);
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        // A 20 ms call made 50 % slower: at least 30 ms, however long the sleep overshot.
        assert!(
            r.observations.iter().all(|o| o.wall_ns >= 30_000_000),
            "{:?}",
            r.observations
        );
        assert!(
            r.warmup_ms.iter().all(|&ms| ms < 29.0),
            "warm-ups are not slowed"
        );
    }

    #[test]
    fn the_requested_test_delay_is_inside_every_timed_call_only() {
        let mut req = request("test_noop", 2, 5);
        req.test_call_delay_us = Some(3000);
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert_eq!(r.observations.len(), 5);
        assert!(r.observations.iter().all(|o| o.wall_ns >= 3_000_000));
        assert!(
            r.warmup_ms.iter().all(|&ms| ms < 3.0),
            "warm-up calls are not delayed: {:?}",
            r.warmup_ms
        );
    }

    #[test]
    fn non_finite_outputs_fail_the_case() {
        let r = execute(&request("test_nan", 1, 3));
        assert_eq!(r.status, WorkerStatus::Error);
        assert!(r.error.as_deref().unwrap_or("").contains("non-finite"));
        let mut infer = request("infer", 1, 3);
        infer.request.insert("seed".into(), serde_json::json!(0));
        let missing = execute(&infer);
        assert!(
            missing
                .error
                .as_deref()
                .unwrap_or("")
                .contains("needs a model bundle")
        );
    }
}
