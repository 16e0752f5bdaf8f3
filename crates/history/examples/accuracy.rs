//! Precision and recall of `changes::detect` on synthetic series with known change points, at several
//! noise levels (docs/performance.md, "history (issue 38)").
//!
//! Each series has 60 points: 0 to 2 steps of ±8 % to ±40 % at random positions at least 10 points
//! apart, multiplicative Gaussian noise of the given coefficient of variation, and now and then an
//! outlier point 1.5× slower (a result measured in a slow speed regime). A detection is correct when it
//! is within 2 points of a true change in the same direction.
//!
//!     cargo run --release -p trtmc-history --example accuracy

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use trtmc_history::changes::{Direction, Rule, detect};

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

fn main() {
    let rule = Rule::default();
    println!(
        "| noise (CV) | series | true changes | detected | correct | precision | recall | recall of steps ≥ 20 % | series without a step: with a report |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for noise in [0.01, 0.03, 0.05, 0.10] {
        let mut rng = ChaCha8Rng::seed_from_u64(38);
        let (mut truth, mut found, mut correct, mut big, mut big_found) = (0, 0, 0, 0, 0);
        // Series without any step, and those of them where something was reported (false alarms).
        let (mut flat, mut flat_alarms) = (0, 0);
        let series = 1000;
        for _ in 0..series {
            let steps = rng.random_range(0..=2usize);
            let mut at: Vec<usize> = Vec::new();
            while at.len() < steps {
                let a = rng.random_range(10..50usize);
                if at.iter().all(|b| a.abs_diff(*b) >= 10) {
                    at.push(a);
                }
            }
            at.sort_unstable();
            let mut changes = Vec::new();
            for &a in &at {
                let size: f64 = rng.random_range(0.08..0.40);
                let up = rng.random_bool(0.5);
                changes.push((
                    a,
                    if up {
                        Direction::Slowdown
                    } else {
                        Direction::Speedup
                    },
                    size,
                ));
            }
            let values: Vec<f64> = (0..60)
                .map(|i| {
                    let l = changes
                        .iter()
                        .filter(|(a, ..)| i >= *a)
                        .fold(1.0, |l, (_, d, s)| match d {
                            Direction::Slowdown => l * (1.0 + s),
                            Direction::Speedup => l / (1.0 + s),
                        });
                    let outlier = if rng.random_bool(0.03) { 1.5 } else { 1.0 };
                    l * outlier * (1.0 + noise * normal(&mut rng)).max(0.05)
                })
                .collect();
            let detected = detect(&values, &rule);
            truth += changes.len();
            if changes.is_empty() {
                flat += 1;
                if !detected.is_empty() {
                    flat_alarms += 1;
                }
            }
            found += detected.len();
            correct += detected
                .iter()
                .filter(|d| {
                    changes
                        .iter()
                        .any(|(a, dir, _)| d.at.abs_diff(*a) <= 2 && d.direction == *dir)
                })
                .count();
            for (a, dir, s) in &changes {
                if *s >= 0.2 {
                    big += 1;
                    if detected
                        .iter()
                        .any(|d| d.at.abs_diff(*a) <= 2 && d.direction == *dir)
                    {
                        big_found += 1;
                    }
                }
            }
        }
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                f64::NAN
            } else {
                a as f64 / b as f64
            }
        };
        println!(
            "| {:.0} % | {series} | {truth} | {found} | {correct} | {:.3} | {:.3} | {:.3} | {flat_alarms} of {flat} |",
            noise * 100.0,
            ratio(correct, found),
            ratio(correct, truth),
            ratio(big_found, big)
        );
    }
}
