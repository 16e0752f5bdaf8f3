//! Simulated timing: per-query times drawn around the engine's latency, laid out back to back on
//! one stream, and the statistics trtexec prints about them. Nothing here sleeps.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

/// Most queries one timed run simulates from `--duration` (more only when `--iterations` asks).
pub const MAX_DURATION_QUERIES: u64 = 200_000;
/// Most queries one timed run simulates at all.
pub const MAX_QUERIES: u64 = 1_000_000;

/// A random stream keyed by the config seed, the engine's tokens (order does not matter) and the
/// run counter; `purpose` separates the streams of one run.
pub fn rng(seed: u64, tokens: &[String], counter: u64, purpose: &str) -> ChaCha20Rng {
    let mut sorted: Vec<&str> = tokens.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let mut hasher = Sha256::new();
    hasher.update(b"trtmc-sim/1\0");
    hasher.update(seed.to_le_bytes());
    for token in sorted {
        hasher.update((token.len() as u64).to_le_bytes());
        hasher.update(token.as_bytes());
    }
    hasher.update(counter.to_le_bytes());
    hasher.update(purpose.as_bytes());
    let mut key = [0u8; 32];
    key.copy_from_slice(&hasher.finalize());
    ChaCha20Rng::from_seed(key)
}

/// A standard normal draw (Box–Muller).
pub fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The GPU compute time of one query: `latency × (1 + noise·N(0,1))`, kept above 1 % of latency.
pub fn compute_ms<R: Rng + ?Sized>(latency: f64, noise: f64, rng: &mut R) -> f64 {
    (latency * (1.0 + noise * normal(rng))).max(latency * 0.01)
}

/// One timed query, ms since the start of the run (the `--exportTimes` record).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Query {
    pub start_enq: f64,
    pub end_enq: f64,
    pub start_h2d: f64,
    pub end_h2d: f64,
    pub start_compute: f64,
    pub end_compute: f64,
    pub start_d2h: f64,
    pub end_d2h: f64,
    pub h2d: f64,
    pub compute: f64,
    pub d2h: f64,
    pub latency: f64,
}

/// What a timed run looks like, apart from the engine.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    pub warm_up_ms: f64,
    pub iterations: u64,
    pub duration_s: f64,
    pub latency_ms: f64,
    pub noise: f64,
    /// Copy time per query each way (0 without data transfers).
    pub h2d_ms: f64,
    pub d2h_ms: f64,
    /// Host time to enqueue one query.
    pub enqueue_ms: f64,
}

impl LoopSpec {
    /// Mean time one query keeps the stream busy.
    fn query_ms(&self) -> f64 {
        self.latency_ms + self.h2d_ms + self.d2h_ms
    }

    /// Warm-up queries: as many as fit in `--warmUp`.
    pub fn warmup_queries(&self) -> u64 {
        if self.warm_up_ms <= 0.0 {
            return 0;
        }
        let n = (self.warm_up_ms / self.query_ms()).ceil();
        if n >= MAX_DURATION_QUERIES as f64 {
            MAX_DURATION_QUERIES
        } else {
            n as u64
        }
    }

    /// Timed queries: at least `--iterations`, and enough to fill `--duration`.
    pub fn timed_queries(&self) -> u64 {
        let by_duration = (self.duration_s * 1000.0 / self.query_ms()).ceil();
        let by_duration = if by_duration >= MAX_DURATION_QUERIES as f64 {
            MAX_DURATION_QUERIES
        } else {
            by_duration.max(0.0) as u64
        };
        self.iterations.max(by_duration).min(MAX_QUERIES)
    }

    /// The timed queries, one stream, back to back after the warm-up.
    pub fn run<R: Rng + ?Sized>(&self, count: u64, rng: &mut R) -> Vec<Query> {
        let mut queries = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        let mut host = self.warm_up_ms.max(0.0);
        let mut gpu_free = host;
        fn jitter<R: Rng + ?Sized>(rng: &mut R, ms: f64) -> f64 {
            if ms == 0.0 {
                0.0
            } else {
                (ms * (1.0 + 0.05 * normal(rng))).max(ms * 0.2)
            }
        }
        for _ in 0..count {
            let compute = compute_ms(self.latency_ms, self.noise, rng);
            let enqueue = jitter(rng, self.enqueue_ms);
            let h2d = jitter(rng, self.h2d_ms);
            let d2h = jitter(rng, self.d2h_ms);
            let start_enq = host;
            let end_enq = start_enq + enqueue;
            let start_h2d = end_enq.max(gpu_free);
            let end_h2d = start_h2d + h2d;
            let start_compute = end_h2d;
            let end_compute = start_compute + compute;
            let start_d2h = end_compute;
            let end_d2h = start_d2h + d2h;
            gpu_free = end_d2h;
            // The host enqueues the next query once this one is running.
            host = end_enq.max(start_compute);
            queries.push(Query {
                start_enq,
                end_enq,
                start_h2d,
                end_h2d,
                start_compute,
                end_compute,
                start_d2h,
                end_d2h,
                h2d,
                compute,
                d2h,
                latency: h2d + compute + d2h,
            });
        }
        queries
    }
}

/// min/max/mean/median/percentiles of one quantity, as trtexec computes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    pub percentiles: Vec<(f64, f64)>,
}

impl Stat {
    /// Median: the middle element (mean of the two middle ones for an even count); percentile
    /// p: `sorted[max(N-1-floor((1-p/100)·N), 0)]`, computed in `float` as trtexec does (so
    /// p90 of 10 values is the 9th, not the 10th).
    pub fn of(values: &[f64], percentiles: &[f64]) -> Self {
        if values.is_empty() {
            return Stat {
                min: 0.0,
                max: 0.0,
                mean: 0.0,
                median: 0.0,
                percentiles: percentiles.iter().map(|p| (*p, 0.0)).collect(),
            };
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n.is_multiple_of(2) {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        } else {
            sorted[n / 2]
        };
        let percentiles = percentiles
            .iter()
            .map(|p| {
                let fraction = 1.0f32 - (*p as f32) / 100.0f32;
                let drop = (fraction * n as f32).floor().max(0.0) as usize;
                let index = (n - 1).saturating_sub(drop);
                (*p, sorted[index])
            })
            .collect();
        Stat {
            min: sorted[0],
            max: sorted[n - 1],
            mean: values.iter().sum::<f64>() / n as f64,
            median,
            percentiles,
        }
    }
}

/// Coefficient of variance in percent (population standard deviation over the mean).
pub fn coefficient_of_variance(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    variance.sqrt() / mean * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(noise: f64) -> LoopSpec {
        LoopSpec {
            warm_up_ms: 200.0,
            iterations: 10,
            duration_s: 3.0,
            latency_ms: 2.0,
            noise,
            h2d_ms: 0.0,
            d2h_ms: 0.0,
            enqueue_ms: 0.002,
        }
    }

    #[test]
    fn query_counts_follow_trtexec() {
        let s = spec(0.0);
        assert_eq!(s.warmup_queries(), 100);
        assert_eq!(s.timed_queries(), 1500);
        let short = LoopSpec {
            duration_s: 0.0,
            iterations: 37,
            ..spec(0.0)
        };
        assert_eq!(short.timed_queries(), 37);
        let fast = LoopSpec {
            latency_ms: 1e-6,
            ..spec(0.0)
        };
        assert_eq!(fast.timed_queries(), MAX_DURATION_QUERIES);
    }

    #[test]
    fn queries_are_back_to_back_and_consistent() {
        let s = LoopSpec {
            h2d_ms: 0.01,
            d2h_ms: 0.005,
            ..spec(0.01)
        };
        let mut rng = rng(7, &["-a=1".into()], 0, "t");
        let queries = s.run(500, &mut rng);
        assert_eq!(queries.len(), 500);
        for pair in queries.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(b.start_h2d >= a.end_d2h - 1e-9);
            assert!(b.start_enq >= a.start_enq);
        }
        for q in &queries {
            assert!((q.end_compute - q.start_compute - q.compute).abs() < 1e-9);
            assert!((q.latency - (q.h2d + q.compute + q.d2h)).abs() < 1e-12);
            assert!(q.start_h2d >= q.end_enq - 1e-12);
            assert!(q.compute > 0.0);
        }
        let compute: Vec<f64> = queries.iter().map(|q| q.compute).collect();
        let stat = Stat::of(&compute, &[99.0]);
        assert!((stat.mean - 2.0).abs() < 0.01, "{}", stat.mean);
        let cv = coefficient_of_variance(&compute);
        assert!((0.7..1.3).contains(&cv), "{cv}");
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let tokens = vec!["-b=2".to_string(), "-a=1".to_string()];
        let reversed = vec!["-a=1".to_string(), "-b=2".to_string()];
        let draw = |tokens: &[String], counter| rng(7, tokens, counter, "t").random::<u64>();
        assert_eq!(draw(&tokens, 3), draw(&reversed, 3));
        assert_ne!(draw(&tokens, 3), draw(&tokens, 4));
        assert_ne!(draw(&tokens, 3), draw(&tokens[..1], 3));
    }

    #[test]
    fn statistics_match_trtexec_definitions() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Stat::of(&values, &[90.0, 95.0, 99.0, 50.0]);
        assert_eq!((s.min, s.max, s.mean, s.median), (1.0, 10.0, 5.5, 5.5));
        assert_eq!(
            s.percentiles,
            vec![(90.0, 9.0), (95.0, 10.0), (99.0, 10.0), (50.0, 5.0)]
        );
        assert_eq!(Stat::of(&[3.0, 1.0, 2.0], &[]).median, 2.0);
        assert_eq!(coefficient_of_variance(&[2.0, 2.0]), 0.0);
    }
}
