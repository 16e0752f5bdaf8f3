//! The cost of the harness itself: a timed no-op call through the worker's operation dispatch and
//! observation recording, against a bare `Instant` loop measured in the same process, interleaved in
//! rounds (A B A B …) so machine drift hits both sides alike.
//!
//! Run: `cargo bench --workspace --bench harness_overhead` (or scripts/bench-run.sh)
//! Target (issue 2): median recorded no-op call ≤ 1.3 × the bare loop's median.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use trtmc_runtime::ops::{self, RunnerContext};
use trtmc_runtime::worker::timed_loop;

const CALLS: usize = 200_000;
const ROUNDS: usize = 10;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A bare loop: read the clock, do nothing, read the clock, keep the difference.
fn bare_loop(calls: usize) -> (Vec<f64>, f64) {
    let mut recorded = Vec::with_capacity(calls);
    let started = Instant::now();
    for _ in 0..calls {
        let t0 = Instant::now();
        black_box(());
        let t1 = Instant::now();
        recorded.push((t1 - t0).as_nanos() as f64);
    }
    let per_iteration = started.elapsed().as_nanos() as f64 / calls as f64;
    (recorded, per_iteration)
}

fn harness_loop(calls: usize) -> (Vec<f64>, f64) {
    let request = BTreeMap::new();
    let ctx = RunnerContext::request_only(&request, 0);
    let mut runner =
        ops::prepare(trtmc_core::operations::Operation::TestNoop, ctx).expect("noop runner");
    let started = Instant::now();
    let timed = timed_loop(runner.as_mut(), calls as u64, Duration::ZERO).expect("timed loop");
    let per_iteration = started.elapsed().as_nanos() as f64 / calls as f64;
    (
        timed.iter().map(|c| c.wall.as_nanos() as f64).collect(),
        per_iteration,
    )
}

fn main() {
    // Warm both paths (page faults, branch predictors) before measuring.
    let _ = bare_loop(CALLS / 10);
    let _ = harness_loop(CALLS / 10);
    let (mut bare_med, mut harness_med, mut bare_iter, mut harness_iter) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (b, bi) = bare_loop(CALLS);
        let (h, hi) = harness_loop(CALLS);
        bare_med.push(median(b));
        harness_med.push(median(h));
        bare_iter.push(bi);
        harness_iter.push(hi);
    }
    let (b, h) = (median(bare_med), median(harness_med));
    let (bi, hi) = (median(bare_iter), median(harness_iter));
    println!("rounds {ROUNDS} × {CALLS} calls, interleaved");
    println!(
        "recorded call, median of round medians: bare {b:.1} ns, harness no-op {h:.1} ns, ratio {:.3}",
        h / b
    );
    println!(
        "whole loop per iteration (clock reads + call + recording): bare {bi:.1} ns, harness {hi:.1} ns, ratio {:.3}",
        hi / bi
    );
}
