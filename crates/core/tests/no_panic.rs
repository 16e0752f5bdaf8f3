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
            let _ = trtmc_core::case::resolve(&profile, &Default::default());
        }
        let _ = trtmc_core::plan::parse(&mutate(&mut rng, SEEDS[3]));
    }
    assert!(
        statuses.contains("ready") && statuses.contains("unsupported"),
        "the mutations reach both valid and invalid profiles: {statuses:?}"
    );
}
