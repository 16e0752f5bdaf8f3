//! Stable-toolchain companion of the fuzz targets in crates/core/fuzz: seeded random and mutated inputs
//! through the MODEL.toml, test-manifest and plan parsers must produce a profile or an error, never a panic.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEEDS: &[&str] = &[
    "name = \"m\"\ntask_strategy = \"text_generation\"\ntest_manifests = [\"c.toml\"]\n[source]\nbuiltin = \"tiny-gpt\"\n[build]\nkv_cache_length = 64\n[build.dims]\nbatch = 1\n",
    "name = \"c\"\ntask_strategy = \"image_classification\"\ntest_manifests = [\"c.toml\"]\n[source]\npath = \"m.onnx\"\nreweight_seed = 3\n[distributed]\ntensor_parallel = 2\n",
    "[[case]]\nname = \"a\"\n[case.measure]\niterations = 3\n[case.request]\nprompt = \"hi\"\nbatch_size = 1\n",
    "models:\n  - model: tiny-gpt\n    cases: [greedy]\n    set:\n      request.max_new_tokens: 8\n    sweep:\n      request.seed: [1, 2]\n",
];

const PUNCTUATION: &[u8] = b"[]\"=\n.-:{}#";

fn mutate(rng: &mut ChaCha8Rng, seed: &str) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..rng.random_range(0..6) {
        let at = rng.random_range(0..=bytes.len());
        match rng.random_range(0..4) {
            0 if at < bytes.len() => {
                bytes.remove(at);
            }
            1 => bytes.insert(at, rng.random()),
            2 => bytes.insert(at, PUNCTUATION[rng.random_range(0..PUNCTUATION.len())]),
            _ if at < bytes.len() => bytes[at] = rng.random(),
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_catalog_and_plan_inputs_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x7e57);
    let mut statuses = std::collections::BTreeSet::new();
    for round in 0..3000 {
        let model = mutate(&mut rng, SEEDS[round % 2]);
        let cases = mutate(&mut rng, SEEDS[2]);
        let profile =
            trtmc_core::catalog::profile_from_text(Path::new("x/MODEL.toml"), &model, &|_| {
                Ok(cases.clone())
            });
        statuses.insert(
            profile
                .status
                .label()
                .split(':')
                .next()
                .unwrap_or("")
                .to_string(),
        );
        if profile.status.is_ready() {
            let _ = trtmc_core::case::resolve(&profile, &Default::default(), &[]);
        }
        let _ = trtmc_core::plan::parse(&mutate(&mut rng, SEEDS[3]));
    }
    assert!(
        statuses.contains("ready") && statuses.contains("unsupported"),
        "the mutations reach both valid and invalid profiles: {statuses:?}"
    );
}

/// Numbers as a hostile user types them, plus random ones of every magnitude.
fn hostile_f64(rng: &mut ChaCha8Rng) -> f64 {
    const SPECIAL: &[f64] = &[
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        -0.0,
        0.0,
        -1.0,
        1e20,
        1e300,
        1e-320,
        604_800.0,
        604_800.000_001,
    ];
    match rng.random_range(0..3) {
        0 => SPECIAL[rng.random_range(0..SPECIAL.len())],
        1 => f64::from_bits(rng.random()),
        _ => 10f64.powi(rng.random_range(-20..30)) * rng.random_range(-2.0..2.0),
    }
}

fn hostile_u64(rng: &mut ChaCha8Rng) -> u64 {
    match rng.random_range(0..3) {
        0 => [0, 1, u64::MAX, 100_000_000, 100_000_001][rng.random_range(0..5)],
        1 => rng.random(),
        _ => rng.random_range(0..1_000),
    }
}

#[test]
fn every_accepted_measurement_fits_its_limits_and_a_duration() {
    use trtmc_core::case::{LONGEST_S, MOST_CALLS, MeasureFlags, ResolveInput};
    let profile =
        trtmc_core::catalog::profile_from_text(Path::new("x/MODEL.toml"), SEEDS[0], &|_| {
            Ok(SEEDS[2].to_string())
        });
    assert!(profile.status.is_ready(), "{}", profile.status.label());
    let mut rng = ChaCha8Rng::seed_from_u64(0x1117);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut flags = || MeasureFlags {
            warmup: rng.random_bool(0.5).then(|| hostile_u64(&mut rng)),
            iterations: rng.random_bool(0.5).then(|| hostile_u64(&mut rng)),
            min_duration_s: rng.random_bool(0.5).then(|| hostile_f64(&mut rng)),
            max_duration_s: rng.random_bool(0.5).then(|| hostile_f64(&mut rng)),
            timeout_s: rng.random_bool(0.5).then(|| hostile_f64(&mut rng)),
        };
        let input = ResolveInput {
            plan_measure: flags(),
            flags: flags(),
            ..Default::default()
        };
        let Ok(case) = trtmc_core::case::resolve(&profile, &input, &[]) else {
            continue;
        };
        accepted += 1;
        let m = &case.measure;
        assert!(
            m.warmup.value <= MOST_CALLS && m.iterations.value <= MOST_CALLS,
            "{m:?}"
        );
        for seconds in [
            Some(m.min_duration_s.value),
            m.max_duration_s.value,
            Some(m.timeout_s.value),
        ]
        .into_iter()
        .flatten()
        {
            assert!(seconds <= LONGEST_S, "{m:?}");
            assert!(
                std::time::Duration::try_from_secs_f64(seconds).is_ok(),
                "{m:?}"
            );
        }
    }
    assert!(
        accepted > 100,
        "only {accepted} accepted: the generator is too hostile to test much"
    );
}
