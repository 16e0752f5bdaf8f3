//! Per-sample batches and rotating inputs through the real binary on the catalog's tiny models: a case
//! that lists several inputs at batch size 1 sends one per call in rotation; a batch built from declared
//! samples feeds each item its own seed or image, and says whether it was `declared` or `cloned`; sample
//! lists that do not fit the batch are refused with exit 3 before anything is built.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value;

/// Runs `model` with `extra` arguments and `calls` timed calls, no warm-up; returns the result
/// document's cases (all completed) and the result directory.
fn run_cases(
    root: &Path,
    out: &str,
    model: &str,
    calls: &str,
    extra: &[&str],
) -> (Vec<Value>, PathBuf) {
    run_completed(root, out, model, ("0", calls), extra)
}

fn case_file(dir: &Path, case: &Value, file: &str) -> Value {
    read_json(&dir.join(case["dir"].as_str().expect("dir")).join(file))
}

fn worker_notes(dir: &Path, case: &Value) -> Value {
    case_file(dir, case, "call-notes.json")["notes"].clone()
}

#[test]
fn a_case_with_several_inputs_and_batch_size_one_sends_one_per_call_in_rotation() {
    let tmp = tempfile::tempdir().expect("tmp");
    // `sentences`: four sentences, one per call: 8 calls use each twice, and the worker saw four
    // different token sequences.
    let (cases, dir) = run_cases(
        tmp.path(),
        "one",
        "tiny-encoder",
        "8",
        &["--case", "sentences"],
    );
    let sentences = &cases[0];
    let notes = worker_notes(&dir, sentences);
    assert_eq!(
        notes["calls_per_input"],
        serde_json::json!([2, 2, 2, 2]),
        "{notes}"
    );
    assert_eq!(notes["distinct_inputs"], 4, "{notes}");
    let resolved = case_file(&dir, sentences, "resolved-case.json");
    assert_eq!(resolved["inputs"]["calls_rotate_over"], 4, "{resolved}");
    assert_eq!(resolved["inputs"]["sample_list"], "texts");
    assert_eq!(sentences["batch_source"], "declared");
    // In rounds (one worker each), the rotation resumes where the case's last round stopped: the
    // fourth round of two calls sends sentences 3 and 4.
    let (cases, dir) = run_cases(
        tmp.path(),
        "rounds",
        "tiny-encoder",
        "8",
        &["--case", "sentences", "--case", "batch4", "--rounds", "4"],
    );
    let notes = worker_notes(&dir, &cases[0]);
    assert_eq!(
        notes["calls_per_input"],
        serde_json::json!([0, 0, 1, 1]),
        "{notes}"
    );
    // `batch4`: the four sentences are the four items of every call, which all send the same input.
    let batch = &cases[1];
    let resolved = case_file(&dir, batch, "resolved-case.json");
    assert_eq!(resolved["inputs"]["calls_rotate_over"], 1);
    assert_eq!(batch["batch_source"], "declared");
    let notes = worker_notes(&dir, batch);
    assert!(
        notes.get("calls_per_input").is_none() && notes.get("distinct_inputs").is_none(),
        "no rotation to note: {notes}"
    );
}

#[test]
fn diffusion_batches_draw_each_images_noise_from_its_own_seed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let latent_mean = |dir: &Path, case: &Value| {
        worker_notes(dir, case)["latent_mean"]
            .as_f64()
            .expect("latent_mean")
    };
    // The catalog's `batch2` declares seeds 11 and 12; `four-steps` is one image from seed 11.
    let (cases, dir) = run_cases(
        tmp.path(),
        "declared",
        "tiny-diffusion",
        "1",
        &["--case", "four-steps", "--case", "batch2"],
    );
    let (single, declared) = (&cases[0], &cases[1]);
    assert_eq!(declared["batch_source"], "declared");
    assert_eq!(single["batch_source"], "declared");
    // The same batch with seed 11 twice: both images are the single image, so their mean is its mean;
    // with seeds 11 and 12 the second image is another one.
    let (twins, twins_dir) = run_cases(
        tmp.path(),
        "twins",
        "tiny-diffusion",
        "1",
        &[
            "--case",
            "batch2",
            "--set",
            r#"request.samples=[{"seed":11},{"seed":11}]"#,
        ],
    );
    let one = latent_mean(&dir, single);
    let two = latent_mean(&twins_dir, &twins[0]);
    assert!(
        (one - two).abs() <= 1e-6 * one.abs().max(1e-3),
        "{one} vs {two}"
    );
    assert!(
        (one - latent_mean(&dir, declared)).abs() > 1e-6,
        "seed 12 draws other noise"
    );
    // Every sample is part of the workload identity.
    assert_ne!(declared["identity"], twins[0]["identity"]);
    // One request over a batch of two says it was cloned.
    let (cloned, _) = run_cases(
        tmp.path(),
        "cloned",
        "tiny-diffusion",
        "1",
        &["--case", "four-steps", "--set", "request.batch_size=2"],
    );
    assert_eq!(cloned[0]["batch_source"], "cloned");
}

#[test]
fn image_batches_take_each_items_declared_image() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (cases, dir) = run_cases(
        tmp.path(),
        "out",
        "tiny-segnet",
        "2",
        &[
            "--case",
            "batch4",
            "--set",
            "request.batch_size=2",
            "--set",
            r#"request.samples=[{"image":"../assets/shapes.png"},{"image":"synthetic","seed":3}]"#,
        ],
    );
    let case = &cases[0];
    assert_eq!(case["batch_source"], "declared");
    let labelled: u64 = worker_notes(&dir, case)["pixels_per_class"]
        .as_array()
        .expect("pixels_per_class")
        .iter()
        .map(|v| v.as_u64().expect("count"))
        .sum();
    assert_eq!(labelled, 2 * 32 * 32, "two images per call");
    let resolved = case_file(&dir, case, "resolved-case.json");
    assert_eq!(resolved["inputs"]["samples"], 2);
    assert_eq!(resolved["request"]["samples"]["source"], "set");
    // The same batch with the file swapped for seeded noise is another workload.
    let (noise, _) = run_cases(
        tmp.path(),
        "noise",
        "tiny-segnet",
        "1",
        &[
            "--case",
            "batch4",
            "--set",
            "request.batch_size=2",
            "--set",
            r#"request.samples=[{"image":"synthetic","seed":2},{"image":"synthetic","seed":3}]"#,
        ],
    );
    assert_ne!(case["identity"], noise[0]["identity"]);
}

#[test]
fn sample_lists_that_do_not_fit_the_batch_exit_3_naming_the_field_before_any_build() {
    let tmp = tempfile::tempdir().expect("tmp");
    // run_quietly caches the bundles in TMP/cache: nothing may be built there.
    let cache = tmp.path().join("cache");
    let refused = |model: &str, case: &str, sets: &[&str], expected: &str| {
        let args = [&["--case", case][..], &overrides_of(sets)].concat();
        let out = run_quietly(tmp.path(), "out", model, &args);
        assert_eq!(code(&out), 3, "{model} {sets:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    };
    // Two declared seeds for a batch of three.
    refused(
        "tiny-diffusion",
        "batch2",
        &["request.batch_size=3"],
        "test case request.samples lists 2 samples for request.batch_size=3",
    );
    // A seed list longer than the batch.
    refused(
        "tiny-diffusion",
        "batch2",
        &[r#"request.samples=[{"seed":1},{"seed":2},{"seed":3}]"#],
        "--set request.samples lists 3 samples for request.batch_size=2",
    );
    // A seed list that leaves out one of the seeded images.
    refused(
        "tiny-segnet",
        "batch4",
        &[
            "request.batch_size=2",
            r#"request.samples=[{"seed":1},{"image":"synthetic"}]"#,
        ],
        "request.samples: 1 of the 2 seeded samples set `seed`",
    );
    // Four texts for a batch of three.
    refused(
        "tiny-encoder",
        "batch4",
        &["request.batch_size=3"],
        "request.texts lists 4 samples for request.batch_size=3",
    );
    // A chat case renders one prompt from its messages: a sample's own prompt is refused.
    refused(
        "tiny-gpt",
        "chat",
        &[r#"request.samples=[{"prompt":"a"},{"prompt":"b"}]"#],
        "request.samples[0] sets `prompt` in a chat case",
    );
    assert!(walk_files(&cache).is_empty(), "nothing was built");
}

/// Generation rotates its declared prompts and seeds: call i sends sample i mod n (the observations'
/// prompt lengths follow the rotation), and a chat case may rotate seeds over its one rendered prompt.
#[test]
fn generate_rotates_its_declared_prompts_and_seeds_across_calls() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (cases, dir) = run_cases(
        tmp.path(),
        "prompts",
        "tiny-gpt",
        "6",
        &[
            "--case",
            "sampled",
            "--set",
            "request.max_new_tokens=2",
            "--set",
            r#"request.samples=[{"prompt":"a","seed":1},{"prompt":"bbbb","seed":2},{"prompt":"ccccccc","seed":3}]"#,
        ],
    );
    let case = &cases[0];
    let notes = worker_notes(&dir, case);
    assert_eq!(
        notes["calls_per_input"],
        serde_json::json!([2, 2, 2]),
        "{notes}"
    );
    assert_eq!(notes["sampling_seed"], 3, "the last call's seed: {notes}");
    let resolved = case_file(&dir, case, "resolved-case.json");
    assert_eq!(resolved["inputs"]["calls_rotate_over"], 3, "{resolved}");
    assert_eq!(resolved["inputs"]["sample_list"], "samples");
    let observations = std::fs::read_to_string(
        dir.join(case["dir"].as_str().expect("dir"))
            .join("observations.jsonl"),
    )
    .expect("observations");
    let lengths: Vec<i64> = observations
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("observation")["input_tokens"]
                .as_i64()
                .expect("input_tokens")
        })
        .collect();
    assert_eq!(lengths.len(), 6);
    // Byte tokens: each prompt's length apart, in call order, twice round.
    assert_eq!(lengths[1] - lengths[0], 3, "{lengths:?}");
    assert_eq!(lengths[2] - lengths[0], 6, "{lengths:?}");
    assert_eq!(lengths[..3], lengths[3..], "{lengths:?}");

    let (cases, dir) = run_cases(
        tmp.path(),
        "chat",
        "tiny-gpt",
        "4",
        &[
            "--case",
            "chat",
            "--set",
            "request.max_new_tokens=2",
            "--set",
            r#"request.samples=[{"seed":5},{"seed":6}]"#,
        ],
    );
    let notes = worker_notes(&dir, &cases[0]);
    assert_eq!(
        notes["calls_per_input"],
        serde_json::json!([2, 2]),
        "{notes}"
    );
}

/// Audio operations rotate their declared recordings: the packaged 0.75 s WAV file and one second of
/// synthetic audio alternate, and each call counts its own recording's length.
#[test]
fn audio_operations_rotate_their_declared_recordings_across_calls() {
    let tmp = tempfile::tempdir().expect("tmp");
    let recordings = r#"request.samples=[{"audio":"../assets/speech.wav"},{"audio":"synthetic"}]"#;
    for (model, case) in [("tiny-asr", "offline"), ("tiny-voice", "speech")] {
        let (cases, dir) = run_cases(
            tmp.path(),
            model,
            model,
            "4",
            &["--case", case, "--set", recordings],
        );
        let case = &cases[0];
        let notes = worker_notes(&dir, case);
        assert_eq!(
            notes["calls_per_input"],
            serde_json::json!([2, 2]),
            "{model}: {notes}"
        );
        let resolved = case_file(&dir, case, "resolved-case.json");
        assert_eq!(
            resolved["inputs"]["calls_rotate_over"], 2,
            "{model}: {resolved}"
        );
        let observations = std::fs::read_to_string(
            dir.join(case["dir"].as_str().expect("dir"))
                .join("observations.jsonl"),
        )
        .expect("observations");
        let audio_us: Vec<u64> = observations
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("observation")["counts"]["audio_us"]
                    .as_u64()
                    .expect("audio_us")
            })
            .collect();
        assert_eq!(
            audio_us,
            [750_000, 1_000_000, 750_000, 1_000_000],
            "{model}"
        );
    }
}
