//! The ONNX Runtime Python references of the media operations (`segment`, `detect`, `forecast`,
//! `transcribe`, `generate_audio`, `convert_speech`, `generate_image`, `generate_video`): `compare
//! --save-inputs` writes the candidate runner's prepared per-call inputs, `reference/ort_reference.py`
//! repeats the operation's calls around `InferenceSession.run`, and both sides measured the same
//! workload (same operation and request values, same work counted) and agree on the outputs. Then the
//! same through the real `matrix run`, and references that cannot run an operation: `failed` rows
//! naming what is missing, never a light. Needs python3 with numpy and onnxruntime (scripts/test
//! installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use serde_json::Value;
use trtmc_runtime::reference::{ReferenceRequest, ReferenceResult};
use trtmc_runtime::tokenize::Tokenizer;

fn p(path: &Path) -> &str {
    path.to_str().expect("utf8")
}

/// Both sides of one case: the candidate's call notes and resolved request (`trtmc-bench run`, 3
/// timed calls) and the reference's request and result (`compare --save-inputs`, then the Python
/// reference with 1 warm-up and 3 timed calls).
struct Sides {
    candidate_notes: Value,
    candidate_request: Value,
    observations: Vec<Value>,
    request: ReferenceRequest,
    request_path: PathBuf,
    reference: ReferenceResult,
}

/// Saves the reference inputs of `model`/`case` (the runner as `runtime` prepares it) and returns the
/// request, cut to 1 warm-up and 3 timed calls.
fn save_inputs(tmp: &Path, model: &str, case: &str, runtime: &str, sets: &[&str]) -> PathBuf {
    save_reference_inputs(tmp, (model, case, runtime), sets, (1, 3))
}

fn both_sides(tmp: &Path, model: &str, case: &str) -> Sides {
    both_sides_with(tmp, model, case, &[])
}

/// [`both_sides`] with `sets` (`--set` overrides) given to both sides.
fn both_sides_with(tmp: &Path, model: &str, case: &str, sets: &[&str]) -> Sides {
    // ONNX Runtime on both sides: the outputs agree to rounding, so post-processed results (labels,
    // detections, CTC tokens) are equal.
    let request_path = save_inputs(tmp, model, case, "onnxruntime", sets);
    let result_path = request_path.with_file_name("result.json");
    let out = ort_reference(&request_path, &result_path, &[]);
    assert_eq!(code(&out), 0, "{model}/{case}: {}", stderr(&out));
    assert_valid("reference-result.schema.json", &read_json(&result_path));
    let request: ReferenceRequest =
        serde_json::from_value(read_json(&request_path)).expect("request");
    let reference = ReferenceResult::read_checked(&result_path, &request)
        .unwrap_or_else(|e| panic!("{model}/{case}: the contract holds: {e:#}"));
    assert_eq!(reference.observations.len(), 3);
    assert_eq!(reference.warmup_ms.len(), 1);
    assert_eq!(reference.boundary, "public_pipeline_call_wall");

    let dir = tmp.join(format!("run-{model}-{case}"));
    let out = bench_cached(
        &tmp.join("cache"),
        &[
            &command_on_case("run", (model, case, "onnxruntime"))[..],
            &["-o", p(&dir), "-q", "--warmup", "1", "--iterations", "3"],
            overrides_of(sets).as_slice(),
        ]
        .concat(),
    );
    assert_eq!(code(&out), 0, "{model}/{case}: {}", stderr(&out));
    let doc = read_json(&dir.join("result.json"));
    let case_doc = &doc["cases"][0];
    assert_eq!(case_doc["status"], "completed", "{case_doc}");
    let case_dir = dir.join(case_doc["dir"].as_str().expect("dir"));
    let resolved = read_json(&case_dir.join("resolved-case.json"));
    let observations: Vec<Value> = std::fs::read_to_string(case_dir.join("observations.jsonl"))
        .expect("observations")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    // Both sides count the items of a call alike (a batch's images, a video as one item).
    let items = observations[0]["items"].as_u64().unwrap_or(1);
    for o in &reference.observations {
        assert_eq!(
            o.items.unwrap_or(1),
            items,
            "{model}/{case}: items per call"
        );
    }
    let sides = Sides {
        // Runners without notes (forecast) write no call-notes.json.
        candidate_notes: std::fs::read(case_dir.join("call-notes.json"))
            .map(|b| serde_json::from_slice::<Value>(&b).expect("call notes")["notes"].clone())
            .unwrap_or(Value::Null),
        candidate_request: resolved["request"].clone(),
        observations,
        request,
        request_path,
        reference,
    };
    assert_same_workload(&sides, &resolved, model);
    sides
}

/// The same workload: the reference ran the candidate's operation on the candidate's resolved request
/// values, with its seed.
fn assert_same_workload(s: &Sides, resolved: &Value, model: &str) {
    assert_eq!(
        s.request.operation,
        resolved["operation"].as_str().expect("op")
    );
    assert_eq!(s.reference.notes["operation"], resolved["operation"]);
    let candidate = s.candidate_request.as_object().expect("request");
    assert_eq!(
        s.request.request.len(),
        candidate.len(),
        "{model}: {:?} vs {candidate:?}",
        s.request.request
    );
    for (name, field) in candidate {
        assert_eq!(
            s.request.request.get(name),
            Some(&field["value"]),
            "{model}: request.{name}"
        );
    }
}

/// The `token_ids` a side's notes record.
fn token_ids(notes: &std::collections::BTreeMap<String, Value>) -> Vec<i64> {
    notes["token_ids"]
        .as_array()
        .expect("token ids")
        .iter()
        .map(|v| v.as_i64().expect("id"))
        .collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-6)
}

#[test]
fn segment_and_detect_references_post_process_the_same_images_to_the_same_labels_and_boxes() {
    let tmp = tempfile::tempdir().expect("tmp");
    for case in ["image", "batch4"] {
        let s = both_sides(tmp.path(), "tiny-segnet", case);
        let pixels = &s.candidate_notes["pixels_per_class"];
        assert_eq!(s.reference.notes["pixels_per_class"], *pixels, "{case}");
        let total: u64 = pixels
            .as_array()
            .expect("pixels")
            .iter()
            .map(|v| v.as_u64().expect("count"))
            .sum();
        let batch = if case == "image" { 1 } else { 4 };
        assert_eq!(
            total,
            batch * 32 * 32,
            "every pixel of every image labelled"
        );
    }
    for case in ["image", "batch4"] {
        let s = both_sides(tmp.path(), "tiny-detector", case);
        assert_eq!(
            s.reference.notes["detections"], s.candidate_notes["detections"],
            "{case}: the same post-processing at the same score_threshold"
        );
    }
}

#[test]
fn forecast_reference_runs_the_candidates_windows() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = both_sides(tmp.path(), "tiny-forecaster", "windows16");
    // The saved windows are the candidate's seeded batch: [16, 64, 4].
    let calls = read_json(&s.request_path.with_file_name("operation-inputs.json"));
    assert_eq!(
        calls["calls"][0]["tensors"][0]["shape"],
        serde_json::json!([16, 64, 4])
    );
    // The reference's forecasts (saved) agree with one forward pass of the candidate on those windows.
    let py_out = s.request_path.with_file_name("py-out");
    let mut doc = read_json(&s.request_path);
    doc["save_outputs"] = p(&py_out).into();
    std::fs::write(&s.request_path, doc.to_string()).expect("write");
    let out = ort_reference(
        &s.request_path,
        &s.request_path.with_file_name("result2.json"),
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let outputs = py_out.join("outputs.json");
    let golden = ["--case", "windows16", "--golden", p(&outputs)];
    let out = compare_model(tmp.path(), "tiny-forecaster", "tract", &golden);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
}

#[test]
fn transcribe_reference_decodes_the_same_tokens_offline_and_streaming_with_a_first_partial() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (case, chunks) in [("offline", 1u64), ("streaming", 4)] {
        let s = both_sides(tmp.path(), "tiny-asr", case);
        assert_eq!(s.candidate_notes["chunks"], chunks);
        assert_eq!(s.reference.notes["chunks"], chunks, "{case}");
        let ids = token_ids(&s.reference.notes);
        assert!(!ids.is_empty(), "the seeded model emits tokens");
        assert_eq!(
            Tokenizer::Bytes.decode(&ids),
            s.candidate_notes["transcript"]
                .as_str()
                .expect("transcript"),
            "{case}: the same greedy CTC decoding"
        );
        assert_eq!(
            ids.len() as u64,
            s.observations[0]["output_tokens"].as_u64().expect("tokens"),
            "{case}"
        );
        // The first partial of every call (warm-up first), inside its wall time.
        let partials = s.reference.notes["first_partial_ms"]
            .as_array()
            .expect("first partials");
        assert_eq!(partials.len(), 4, "{case}: 1 warm-up + 3 timed calls");
        for (partial, o) in partials[1..].iter().zip(&s.reference.observations) {
            let ms = partial.as_f64().expect("ms");
            assert!(ms > 0.0 && ms <= o.wall_ns as f64 / 1e6, "{case}: {ms} ms");
        }
    }
}

/// `--set` arguments for each override.
/// Declared recordings rotate on both sides: the saved inputs hold one call per recording, and after one
/// warm-up and three timed calls (recordings 0, 1, 0, 1) the reference's last call is the second
/// recording's (1 s of synthetic audio: 5 chunks of 200 ms, where the 0.75 s file has 4).
#[test]
fn audio_references_rotate_the_declared_recordings() {
    let tmp = tempfile::tempdir().expect("tmp");
    let recordings = r#"request.samples=[{"audio":"../assets/speech.wav"},{"audio":"synthetic"}]"#;
    let s = both_sides_with(tmp.path(), "tiny-asr", "streaming", &[recordings]);
    let saved = read_json(s.request.operation_inputs.as_deref().expect("saved inputs"));
    assert_eq!(saved["calls"].as_array().expect("calls").len(), 2);
    assert_eq!(
        s.candidate_notes["calls_per_input"],
        serde_json::json!([2, 2])
    );
    assert_eq!(s.candidate_notes["chunks"], 5);
    assert_eq!(s.reference.notes["chunks"], 5, "the reference rotated");
    let ids = token_ids(&s.reference.notes);
    assert_eq!(
        Tokenizer::Bytes.decode(&ids),
        s.candidate_notes["transcript"]
            .as_str()
            .expect("transcript")
    );
    let s = both_sides_with(tmp.path(), "tiny-voice", "speech", &[recordings]);
    assert_eq!(
        s.candidate_notes["calls_per_input"],
        serde_json::json!([2, 2])
    );
    assert_eq!(
        s.reference.notes["generated_samples"],
        s.candidate_notes["generated_samples"]
    );
}

#[test]
fn audio_references_generate_and_convert_the_same_samples() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = both_sides(tmp.path(), "tiny-vocoder", "one-second");
    assert_eq!(s.candidate_notes["generated_samples"], 63 * 256);
    assert_eq!(s.reference.notes["generated_samples"], 63 * 256);
    let s = both_sides(tmp.path(), "tiny-voice", "speech");
    assert_eq!(
        s.reference.notes["generated_samples"],
        s.candidate_notes["generated_samples"]
    );
}

#[test]
fn diffusion_references_denoise_the_saved_noise_to_the_same_latents() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (model, case, steps) in [
        ("tiny-diffusion", "four-steps", 4),
        ("tiny-diffusion", "batch2", 4),
        ("tiny-video-diffusion", "clip8", 3),
    ] {
        let s = both_sides(tmp.path(), model, case);
        assert_eq!(s.reference.notes["steps"], steps);
        assert_eq!(s.candidate_notes["steps"], steps);
        let (py, rs) = (
            s.reference.notes["latent_mean"].as_f64().expect("py mean"),
            s.candidate_notes["latent_mean"]
                .as_f64()
                .expect("rust mean"),
        );
        assert!(
            close(py, rs, 1e-4),
            "{model}/{case}: latent mean {py} (reference) vs {rs} (candidate)"
        );
    }
}

/// Non-finite latents are a reference failure before anything could turn them into pixels: saved
/// noise holding an infinity (as an overflowing model or scheduler would make) fails the reference
/// with the latents named, and no observations are kept.
#[test]
fn non_finite_diffusion_latents_fail_the_reference_before_image_conversion() {
    let tmp = tempfile::tempdir().expect("tmp");
    let request_path = save_inputs(tmp.path(), "tiny-diffusion", "four-steps", "tract", &[]);
    let calls = read_json(&request_path.with_file_name("operation-inputs.json"));
    let noise = &calls["calls"][0]["tensors"][0];
    assert_eq!(noise["name"], "noise");
    let bin = request_path.with_file_name(noise["file"].as_str().expect("file"));
    let mut bytes = std::fs::read(&bin).expect("noise");
    bytes[..4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    std::fs::write(&bin, bytes).expect("write");
    let result_path = request_path.with_file_name("result.json");
    let out = ort_reference(&request_path, &result_path, &[]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let doc = read_json(&result_path);
    assert_valid("reference-result.schema.json", &doc);
    assert_eq!(doc["status"], "error");
    let error = doc["error"].as_str().expect("error");
    assert!(
        error.contains("denoised_latents") && error.contains("non-finite"),
        "{error}"
    );
    assert_eq!(doc["observations"], serde_json::json!([]));
}

/// A request without the runner's per-call inputs, or saved inputs missing a piece, is a reference
/// failure that names what is missing.
#[test]
fn missing_saved_inputs_are_reference_failures_naming_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let request_path = save_inputs(tmp.path(), "tiny-asr", "streaming", "tract", &[]);
    let result_path = request_path.with_file_name("result.json");

    let mut doc = read_json(&request_path);
    doc["operation_inputs"] = Value::Null;
    let bare = request_path.with_file_name("bare.json");
    std::fs::write(&bare, doc.to_string()).expect("write");
    let out = ort_reference(&bare, &result_path, &[]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let error = read_json(&result_path)["error"].clone();
    assert!(
        error.as_str().expect("error").contains("operation_inputs"),
        "{error}"
    );

    let index = request_path.with_file_name("operation-inputs.json");
    let mut calls = read_json(&index);
    let tensors = calls["calls"][0]["tensors"]
        .as_array_mut()
        .expect("tensors");
    assert_eq!(tensors.len(), 4, "four 200 ms chunks of 0.75 s");
    tensors.pop();
    std::fs::write(&index, calls.to_string()).expect("write");
    let out = ort_reference(&request_path, &result_path, &[]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let error = read_json(&result_path)["error"].clone();
    assert!(error.as_str().expect("error").contains("chunk3"), "{error}");
}

// --- through `matrix run` ---------------------------------------------------------------------

/// A catalog with the packaged assets, the given repository profiles and extra `(name, MODEL.toml,
/// e2e.toml)` profiles.
fn catalog(dir: &Path, models: &[&str], extra: &[(&str, &str, &str)]) -> PathBuf {
    let root = dir.join("catalog");
    let assets = root.join("assets");
    std::fs::create_dir_all(&assets).expect("mkdir");
    for f in ["speech.wav", "shapes.png"] {
        std::fs::copy(repo_root().join("catalog/assets").join(f), assets.join(f)).expect("copy");
    }
    for m in models {
        let model = root.join(m);
        std::fs::create_dir_all(&model).expect("mkdir");
        for f in ["MODEL.toml", "e2e.toml"] {
            std::fs::copy(repo_root().join("catalog").join(m).join(f), model.join(f))
                .expect("copy");
        }
    }
    for (name, manifest, cases) in extra {
        let model = root.join(name);
        std::fs::create_dir_all(&model).expect("mkdir");
        std::fs::write(model.join("MODEL.toml"), manifest).expect("write");
        std::fs::write(model.join("e2e.toml"), cases).expect("write");
    }
    root
}

fn matrix_run(dir: &Path, catalog: &Path, rows: &str) -> (Output, PathBuf) {
    let env = write_matrix_environment(dir, "");
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "schema: trtmc.perf-suite/v1\nname: media\nthresholds: {{green_max: 1.3, yellow_max: 2.0, min_samples: 4, min_rounds: 2}}\nmeasure: {{warmup: 1, iterations: 4, rounds: 2}}\nrows:\n{rows}"
        ),
    )
    .expect("write suite");
    let out_dir = dir.join("run");
    let out = Command::new(BIN)
        .args(["matrix", "run", p(&suite), "--environment", p(&env)])
        .args(["--manifest-root", p(catalog), "-o", p(&out_dir)])
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench");
    (out, out_dir)
}

/// A suite row against the Python reference; `options` are the reference runner's (YAML flow map).
fn row(entry: &str, model: &str, case: &str, runtime: &str, options: &str) -> String {
    format!(
        "  - entry: {entry}\n    model: {model}\n    testcase: {case}\n    candidate: {{runtime: {runtime}}}\n    reference: {{backend: onnxruntime-python, options: {{{options}}}}}\n"
    )
}

/// Streaming transcription, image diffusion and detection rows through the real `matrix run`: each
/// compared against ONNX Runtime's Python loop on the same workload identity and boundary, with a
/// light.
#[test]
fn matrix_rows_of_media_operations_compare_against_the_python_reference() {
    let tmp = tempfile::tempdir().expect("tmp");
    let models = ["tiny-asr", "tiny-diffusion", "tiny-detector"];
    let cat = catalog(tmp.path(), &models, &[]);
    let rows = [
        row("tiny-asr.transcribe", "tiny-asr", "streaming", "tract", ""),
        row(
            "tiny-denoiser.generate_image",
            "tiny-diffusion",
            "four-steps",
            "onnxruntime",
            "",
        ),
        row(
            "tiny-detector.detect",
            "tiny-detector",
            "image",
            "tract",
            "",
        ),
    ]
    .concat();
    let (out, dir) = matrix_run(tmp.path(), &cat, &rows);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let results = read_json(&dir.join("results.json"));
    let rows = results["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["status"], "compared", "{r}");
        assert!(r["comparison"]["light"].is_string(), "{r}");
        assert_eq!(r["candidate"]["identity"], r["reference"]["identity"]);
        assert_eq!(r["reference"]["boundary"], "public_pipeline_call_wall");
        assert_eq!(r["reference"]["backend"], "onnxruntime-python");
    }
}

/// References that cannot run the operation, each a `failed` row whose message names what is missing
/// or wrong, never a light: a model lacking the piece the operation needs (tiny-cnn given to the
/// diffusion loop has no `sample` and `timestep` inputs: preparing the reference's inputs fails), and
/// a reference whose denoised latents are not finite (the test-only `test_noise_scale` option scales
/// the saved noise to infinity: the check runs on the float latents, before any 8-bit conversion).
#[test]
fn a_reference_that_cannot_run_the_operation_is_a_failed_row_naming_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let no_denoiser = "name = \"cnn-as-denoiser\"\nfamily = \"tiny-cnn\"\nsummary = \"test-only: tiny-cnn given to the diffusion loop\"\ntask_strategy = \"image_diffusion\"\nruntime_strategy = \"tract\"\nreference_precision = \"fp32\"\ntest_manifests = [\"e2e.toml\"]\n[source]\nbuiltin = \"tiny-cnn\"\n[build]\nprecision = \"fp32\"\n";
    let cases =
        "[[case]]\nname = \"four-steps\"\n[case.request]\nbatch_size = 1\nsteps = 4\nseed = 11\n";
    let cat = catalog(
        tmp.path(),
        &["tiny-diffusion"],
        &[("cnn-as-denoiser", no_denoiser, cases)],
    );
    let rows = [
        row(
            "tiny-cnn.generate_image",
            "cnn-as-denoiser",
            "four-steps",
            "tract",
            "",
        ),
        row(
            "tiny-denoiser.generate_image",
            "tiny-diffusion",
            "four-steps",
            "tract",
            "test_noise_scale: 1.0e39",
        ),
    ]
    .concat();
    let (out, dir) = matrix_run(tmp.path(), &cat, &rows);
    assert_eq!(code(&out), 5, "{}\n{}", stdout(&out), stderr(&out));
    let results = read_json(&dir.join("results.json"));
    let rows = results["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for (r, named) in rows
        .iter()
        .zip([&["`sample`"][..], &["denoised_latents", "non-finite"][..]])
    {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(r["comparison"]["light"].is_null(), "{r}");
        let message = r["message"].as_str().expect("message");
        for word in named {
            assert!(message.contains(word), "{word}: {message}");
        }
    }
}
