//! Stable stand-ins for the cargo-fuzz targets in ../fuzz: seeded random and mutated inputs to the parsers of
//! outside input never panic, and whatever parses renders back to the same thing.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use trtmc_tune::KnobSet;
use trtmc_tune::expr::parse;

const KNOBS: &str =
    include_str!("../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");

const KNOB_NAMES: &[&str] = &[
    "-conv_lowering",
    "-kgen:tiling",
    "-peep:max",
    "-cask_fusion:num_tactics",
    "-nope",
    "",
];
const VALUES: &[&str] = &[
    "on", "off", "0", "1", "2", "3", "-1", "int", "int32_t", "...", "x", "é", " ", "",
];
/// Pieces inserted at random places to break the structure.
const NOISE: &[&str] = &["=", "[", "]", "|", " ", "\n", "\t", "[]", "...", "=="];

/// Mostly well-formed tokens (`knob=value` or `knob=[a|b]`), sometimes broken by noise.
fn random_expression(rng: &mut ChaCha8Rng) -> String {
    let pick = |rng: &mut ChaCha8Rng, from: &[&'static str]| from[rng.random_range(0..from.len())];
    let tokens: Vec<String> = (0..rng.random_range(0..4))
        .map(|_| {
            let knob = pick(rng, KNOB_NAMES);
            if rng.random_bool(0.5) {
                format!("{knob}={}", pick(rng, VALUES))
            } else {
                let values: Vec<&str> = (0..rng.random_range(0..4))
                    .map(|_| pick(rng, VALUES))
                    .collect();
                format!("{knob}=[{}]", values.join("|"))
            }
        })
        .collect();
    let separator = if rng.random_bool(0.5) { " " } else { "\n" };
    let mut text = tokens.join(separator);
    if rng.random_bool(0.3) {
        let at = rng.random_range(0..=text.len());
        if text.is_char_boundary(at) {
            text.insert_str(at, pick(rng, NOISE));
        }
    }
    text
}

#[test]
fn arbitrary_expressions_never_panic_and_parsed_ones_round_trip() {
    let knobs = KnobSet::from_json(KNOBS, "fixture").expect("fixture");
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut parsed = 0;
    for _ in 0..5_000 {
        let text = random_expression(&mut rng);
        if let Ok(expr) = parse(&text, &knobs) {
            parsed += 1;
            let again = parse(&expr.to_string(), &knobs).expect("canonical form parses");
            assert_eq!(again, expr, "{text:?}");
            let _ = trtmc_tune::search::fast_routes(&expr, &knobs);
            let _ = trtmc_tune::search::FullSpace::new(&expr).take(Some(16));
        }
        let _ = knobs.help_text(Some(&text));
    }
    assert!(
        parsed > 100,
        "the generator should also produce valid expressions ({parsed})"
    );
    // Random bytes as UTF-8 text.
    for _ in 0..2_000 {
        let bytes: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random()).collect();
        let _ = parse(&String::from_utf8_lossy(&bytes), &knobs);
    }
}

#[test]
fn arbitrary_cache_files_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let seeds: [&[u8]; 4] = [
        b"{\"schema\":\"trtmc.tuning-cache/v1\"}\n{\"iter\":0}\n",
        b"\n\n\n",
        b"{}",
        b"{\"schema\":\"trtmc.tuning-cache/v1\",\"tuner_version\":\"1\"}\n{\"iter\":",
    ];
    for _ in 0..5_000 {
        let mut bytes = seeds[rng.random_range(0..seeds.len())].to_vec();
        for _ in 0..rng.random_range(0..4) {
            if bytes.is_empty() {
                break;
            }
            let i = rng.random_range(0..bytes.len());
            bytes[i] = rng.random();
        }
        if let Ok(content) = trtmc_tune::cache::parse(std::path::Path::new("fuzz.jsonl"), &bytes) {
            assert!(content.valid_len as usize <= bytes.len());
        }
    }
}
