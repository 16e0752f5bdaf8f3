//! The ONNX Runtime Python references of the text operations (`reference/ort_ops/{generate,
//! generate_vl,encode,rerank}.py`): `compare --save-inputs` writes the runner's per-call inputs, the
//! reference repeats the same calls, and both sides agree (greedy and seeded tokens equal, embeddings
//! and scores close); through `matrix run` each operation gets a row, and a reference that cannot run
//! an operation, or that generates another number of tokens, makes a `failed` row naming why.
//! Needs python3 with numpy and the `onnxruntime` wheel (scripts/test installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use serde_json::Value;
use trtmc_runtime::reference::{ReferenceRequest, ReferenceResult};

fn p(path: &Path) -> String {
    path.to_str().expect("utf8").to_string()
}

/// One case measured both ways: the candidate's `run` directory (notes, observations, resolved case)
/// and the reference's result and saved outputs.
struct Pair {
    candidate_case: PathBuf,
    reference: ReferenceResult,
    reference_outputs: PathBuf,
    request: Value,
}

/// `compare --save-inputs` for `model`/`case` on `runtime`, the Python reference on that request
/// (2 timed calls), then the candidate's `run` with the same counts.
fn measure_both(tmp: &Path, model: &str, case: &str, runtime: &str) -> Pair {
    measure_both_with(tmp, model, case, runtime, &[])
}

/// [`measure_both`] with `sets` (`--set` overrides) given to both sides.
fn measure_both_with(tmp: &Path, model: &str, case: &str, runtime: &str, sets: &[&str]) -> Pair {
    let cache = tmp.join("cache");
    let request_path = save_reference_inputs(tmp, (model, case, runtime), sets, (1, 2));
    let dir = request_path.parent().expect("dir").to_path_buf();
    let mut request = read_json(&request_path);
    request["save_outputs"] = p(&dir.join("py-out")).into();
    std::fs::write(&request_path, request.to_string()).expect("write");
    let result_path = dir.join("result.json");
    let out = ort_reference(&request_path, &result_path, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_valid("reference-result.schema.json", &read_json(&result_path));
    let typed: ReferenceRequest = serde_json::from_value(request.clone()).expect("request");
    let reference =
        ReferenceResult::read_checked(&result_path, &typed).expect("the contract holds");

    let run_dir = tmp.join(format!("run-{model}-{case}"));
    let out = bench_cached(
        &cache,
        &[
            &command_on_case("run", (model, case, runtime))[..],
            &[
                "--warmup",
                "1",
                "--iterations",
                "2",
                "--duration",
                "0",
                "-q",
                "-o",
                &p(&run_dir),
            ],
            overrides_of(sets).as_slice(),
        ]
        .concat(),
    );
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let candidate_case = case_dirs(&run_dir).into_iter().next().expect("a case");
    Pair {
        candidate_case,
        reference,
        reference_outputs: dir.join("py-out"),
        request,
    }
}

impl Pair {
    fn candidate_notes(&self) -> Value {
        read_json(&self.candidate_case.join("call-notes.json"))["notes"].clone()
    }

    fn candidate_observations(&self) -> Vec<Value> {
        std::fs::read_to_string(self.candidate_case.join("observations.jsonl"))
            .expect("observations")
            .lines()
            .map(|l| serde_json::from_str(l).expect("observation"))
            .collect()
    }

    /// Same workload: the reference request carries the candidate's operation and resolved request
    /// values (prompt, counts, sampling settings, texts, …).
    fn assert_same_workload(&self) {
        let resolved = read_json(&self.candidate_case.join("resolved-case.json"));
        assert_eq!(self.request["operation"], resolved["operation"]);
        let values: serde_json::Map<String, Value> = resolved["request"]
            .as_object()
            .expect("request")
            .iter()
            .map(|(k, v)| (k.clone(), v["value"].clone()))
            .collect();
        assert_eq!(self.request["request"], Value::Object(values));
        assert_eq!(self.reference.observations.len(), 2);
        let candidate = self.candidate_observations();
        assert_eq!(candidate.len(), 2);
        // Both sides count the items of a call alike (texts, documents; 1 per generation).
        let items = candidate[0]["items"].as_u64().unwrap_or(1);
        for o in &self.reference.observations {
            assert_eq!(o.items.unwrap_or(1), items, "items per call");
        }
    }

    /// The reference's saved output `name` as f32 values.
    fn reference_output(&self, name: &str) -> Vec<f32> {
        let doc = read_json(&self.reference_outputs.join("outputs.json"));
        let entry = doc["outputs"]
            .as_array()
            .expect("outputs")
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("no output `{name}`: {doc}"));
        assert_eq!(entry["dtype"], "f32", "{doc}");
        std::fs::read(
            self.reference_outputs
                .join(entry["file"].as_str().expect("file")),
        )
        .expect("output file")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
    }
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// Greedy decoding and seeded top-k sampling give the candidate's tokens, one per step, on both
/// runtimes' bundles; the reference records the count the matrix checks.
#[test]
fn the_generate_reference_picks_the_candidates_tokens_greedy_and_seeded() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (case, runtime) in [("greedy", "onnxruntime"), ("sampled", "tract")] {
        let pair = measure_both(tmp.path(), "tiny-gpt", case, runtime);
        pair.assert_same_workload();
        let notes = pair.candidate_notes();
        assert_eq!(
            pair.reference.notes["generated_tokens"], notes["generated_tokens"],
            "{case} on {runtime}"
        );
        assert_eq!(pair.reference.notes["output_tokens"], 32);
        assert_eq!(
            pair.reference.notes["sampling_seed"],
            notes["sampling_seed"]
        );
        assert!(
            pair.candidate_observations()
                .iter()
                .all(|o| o["output_tokens"] == 32)
        );
        if case == "sampled" {
            let inputs = read_json(&PathBuf::from(
                pair.request["operation_inputs"].as_str().expect("path"),
            ));
            let names: Vec<&str> = inputs["calls"][0]["tensors"]
                .as_array()
                .expect("tensors")
                .iter()
                .map(|t| t["name"].as_str().expect("name"))
                .collect();
            assert_eq!(names, ["prompt_ids", "sampling_uniforms"]);
            assert_eq!(inputs["calls"][0]["values"]["top_k"], 40);
            // Sampling really samples: not the argmax sequence of a repeated token.
            let tokens = floats(&notes["generated_tokens"]);
            assert!(tokens.windows(2).filter(|w| w[0] != w[1]).count() > 8);
        }
    }
}

/// Declared samples (prompt and seed each) rotate on both sides: the saved inputs hold one call per
/// sample, and after one warm-up and two timed calls (samples 0, 1, 2) the reference's last call picks
/// the candidate's tokens for the third sample, not the first.
#[test]
fn the_generate_reference_rotates_the_declared_samples() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pair = measure_both_with(
        tmp.path(),
        "tiny-gpt",
        "sampled",
        "onnxruntime",
        &[
            "request.max_new_tokens=6",
            r#"request.samples=[{"prompt":"Once upon a time","seed":4},{"prompt":"Hi","seed":9},{"prompt":"The end.","seed":7}]"#,
        ],
    );
    pair.assert_same_workload();
    let inputs = read_json(&PathBuf::from(
        pair.request["operation_inputs"].as_str().expect("path"),
    ));
    let calls = inputs["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 3, "one saved call per sample");
    assert_eq!(calls[0]["values"]["seed"], 4);
    assert_eq!(calls[1]["values"]["seed"], 9);
    let notes = pair.candidate_notes();
    assert_eq!(
        notes["calls_per_input"],
        serde_json::json!([1, 1, 1]),
        "{notes}"
    );
    assert_eq!(notes["sampling_seed"], 7);
    assert_eq!(pair.reference.notes["sampling_seed"], 7);
    assert_eq!(
        pair.reference.notes["generated_tokens"],
        notes["generated_tokens"]
    );
    let observations = pair.candidate_observations();
    assert_ne!(
        observations[0]["input_tokens"], observations[1]["input_tokens"],
        "the timed calls send both prompts"
    );
}

/// The image's patches reach the prefill: the reference on the packaged picture repeats the
/// candidate's greedy tokens.
#[test]
fn the_generate_vl_reference_feeds_the_image_and_picks_the_candidates_tokens() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pair = measure_both(tmp.path(), "tiny-vlm", "describe", "onnxruntime");
    pair.assert_same_workload();
    assert_eq!(
        pair.reference.notes["generated_tokens"],
        pair.candidate_notes()["generated_tokens"]
    );
    assert_eq!(pair.reference.notes["output_tokens"], 24);
    let inputs = read_json(&PathBuf::from(
        pair.request["operation_inputs"].as_str().expect("path"),
    ));
    let image = &inputs["calls"][0]["tensors"][1];
    assert_eq!(image["name"], "image_patches");
    assert_eq!(
        image["shape"],
        serde_json::json!([1, 16, 192]),
        "32x32 RGB in 8x8 patches"
    );
}

/// The tokenized batch gives the candidate's embeddings (tract against ORT: close, not equal).
#[test]
fn the_encode_reference_gives_the_candidates_embeddings() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pair = measure_both(tmp.path(), "tiny-encoder", "batch4", "tract");
    pair.assert_same_workload();
    assert_eq!(pair.reference.notes["items"], 4);
    assert!(
        pair.candidate_observations()
            .iter()
            .all(|o| o["items"] == 4)
    );
    let embeddings = pair.reference_output("embeddings");
    assert_eq!(embeddings.len(), 4 * 64);
    let heads = pair.candidate_notes()["embedding_head"].clone();
    let heads = heads.as_array().expect("one head per text");
    assert_eq!(heads.len(), 4);
    for (i, head) in heads.iter().enumerate() {
        for (j, c) in floats(head).into_iter().enumerate() {
            let r = f64::from(embeddings[i * 64 + j]);
            assert!((c - r).abs() < 1e-5, "text {i} value {j}: {c} vs {r}");
        }
    }
}

/// The tokenized pairs give the candidate's scores and the same ranking.
#[test]
fn the_rerank_reference_gives_the_candidates_scores_and_ranking() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pair = measure_both(tmp.path(), "tiny-reranker", "documents8", "tract");
    pair.assert_same_workload();
    let notes = pair.candidate_notes();
    assert_eq!(pair.reference.notes["ranking"], notes["ranking"]);
    assert_eq!(pair.reference.notes["documents"], 8);
    let scores = pair.reference_output("scores");
    let candidate = floats(&notes["scores"]);
    assert_eq!(scores.len(), candidate.len());
    for (c, r) in candidate.iter().zip(&scores) {
        assert!((c - f64::from(*r)).abs() < 1e-5, "{c} vs {r}");
    }
}

/// encode and rerank tokenize inside the reference's timed call, as the candidate does (the
/// WordPiece tokenizer.json through the Python `tokenizers` package); texts that tokenize to other ids
/// than the candidate fed are a reference failure naming the tensor; without the package the
/// reference exits 7 with the install command.
#[test]
fn the_text_references_tokenize_inside_their_call_and_refuse_other_ids() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (model, case) in [("tiny-encoder", "batch4"), ("tiny-reranker", "documents8")] {
        let pair = measure_both(tmp.path(), model, case, "onnxruntime");
        let tokenization = pair.reference.notes["tokenization"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            tokenization.starts_with("inside the timed call (tokenizers 0.22")
                && tokenization.contains("wordpiece/tokenizer.json"),
            "{model}: {tokenization}"
        );
        let request_path = PathBuf::from(pair.request["inputs"].as_str().expect("inputs"))
            .with_file_name("reference-request.json");
        let inputs_path = PathBuf::from(
            pair.request["operation_inputs"]
                .as_str()
                .expect("operation inputs"),
        );
        let inputs_path = if inputs_path.is_absolute() {
            inputs_path
        } else {
            request_path.with_file_name(inputs_path)
        };
        let saved = std::fs::read_to_string(&inputs_path).expect("operation inputs");
        let mut edited: Value = serde_json::from_str(&saved).expect("json");
        let texts = &mut edited["calls"][0]["values"]["texts"][0];
        assert!(texts.is_string(), "{model}: texts saved: {saved}");
        *texts = format!("{} and more words", texts.as_str().unwrap_or_default()).into();
        std::fs::write(&inputs_path, edited.to_string()).expect("write");
        let result = tmp.path().join(format!("{model}-edited.json"));
        let out = ort_reference(&request_path, &result, &[]);
        assert_eq!(code(&out), 1, "{model}: {}", stderr(&out));
        let doc = read_json(&result);
        let error = doc["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("input_ids") && error.contains("differs from the candidate's"),
            "{model}: {doc}"
        );
        std::fs::write(&inputs_path, saved).expect("restore");

        // No `tokenizers` package: a module of that name that fails to import, first on the path.
        let blocked = tmp.path().join("blocked/tokenizers");
        std::fs::create_dir_all(&blocked).expect("mkdir");
        std::fs::write(
            blocked.join("__init__.py"),
            "raise ImportError('hidden by the test')\n",
        )
        .expect("write");
        let out = ort_reference(
            &request_path,
            &result,
            &[("PYTHONPATH", &tmp.path().join("blocked"))],
        );
        assert_eq!(code(&out), 7, "{model}: {}", stderr(&out));
        let error = read_json(&result)["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            error.contains("pip install tokenizers=="),
            "{model}: {error}"
        );
    }
}

/// A request without the per-call inputs, and a text-only decoder asked for `generate_vl`: reference
/// failures that say what is missing.
#[test]
fn a_reference_lacking_what_the_operation_needs_fails_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("ref");
    let out = compare_model(
        tmp.path(),
        "tiny-gpt",
        "tract",
        &["--save-inputs", &p(&dir)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request = read_json(&dir.join("reference-request.json"));
    let result = tmp.path().join("result.json");
    let mut without_inputs = request.clone();
    without_inputs
        .as_object_mut()
        .expect("object")
        .remove("operation_inputs");
    let mut text_only_vl = request.clone();
    text_only_vl["operation"] = "generate_vl".into();
    let cases = [
        ("per-call inputs", without_inputs),
        (
            "needs a decoder with an `image_patches` input",
            text_only_vl,
        ),
    ];
    for (needle, doc) in cases {
        let path = tmp.path().join("edited.json");
        std::fs::write(&path, doc.to_string()).expect("write");
        let out = ort_reference(&path, &result, &[]);
        assert_eq!(code(&out), 1, "{}", stderr(&out));
        let doc = read_json(&result);
        assert_valid("reference-result.schema.json", &doc);
        assert_eq!(doc["status"], "error");
        assert!(
            doc["error"].as_str().expect("error").contains(needle),
            "`{needle}` missing: {doc}"
        );
    }
}

const TEXT_MODELS: [&str; 4] = ["tiny-gpt", "tiny-vlm", "tiny-encoder", "tiny-reranker"];

/// A catalog of the four text models (and the assets their cases name), and an environment whose
/// Python references come from `reference_dir`.
fn matrix_setup(dir: &Path, models: &[&str], reference_dir: &Path) -> (PathBuf, PathBuf) {
    let catalog = dir.join("catalog");
    for model in models {
        std::fs::create_dir_all(catalog.join(model)).expect("mkdir");
        for f in ["MODEL.toml", "e2e.toml"] {
            std::fs::copy(
                repo_root().join("catalog").join(model).join(f),
                catalog.join(model).join(f),
            )
            .expect("copy");
        }
    }
    let assets = catalog.join("assets/wordpiece");
    std::fs::create_dir_all(&assets).expect("mkdir");
    std::fs::copy(
        repo_root().join("catalog/assets/shapes.png"),
        catalog.join("assets/shapes.png"),
    )
    .expect("copy");
    for f in std::fs::read_dir(repo_root().join("catalog/assets/wordpiece")).expect("assets") {
        let f = f.expect("entry").path();
        std::fs::copy(&f, assets.join(f.file_name().expect("name"))).expect("copy");
    }
    let env = write_matrix_environment(dir, &format!("reference_dir: {}\n", p(reference_dir)));
    (catalog, env)
}

fn row(entry: &str, model: &str, testcase: &str) -> String {
    format!(
        "  - entry: {entry}\n    model: {model}\n    testcase: {testcase}\n    candidate: {{runtime: onnxruntime}}\n    reference: {{backend: onnxruntime-python}}\n"
    )
}

fn matrix_run(catalog: &Path, env: &Path, suite: &Path, out: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["matrix", "run", &p(suite), "--environment", &p(env)])
        .args(["--manifest-root", &p(catalog), "-o", &p(out)])
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench");
    let results = read_json(&out.join("results.json"));
    assert!(matches!(code(&o), 0 | 5), "{}\n{}", stdout(&o), stderr(&o));
    results
}

/// One matrix row per text operation, through the real `matrix run` with tiny counts: each is
/// compared (same workload identity, boundary and precision). Then, with a reference directory whose
/// `generate` stops one token early and which has no `rerank`, those rows fail and say why.
#[test]
fn matrix_rows_of_the_text_operations_compare_and_a_reference_that_cannot_fails_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (catalog, env) = matrix_setup(tmp.path(), &TEXT_MODELS, &repo_root().join("reference"));
    let suite = tmp.path().join("text.yaml");
    std::fs::write(
        &suite,
        format!(
            "schema: trtmc.perf-suite/v1\nname: text\nthresholds: {{green_max: 1.3, yellow_max: 2.0, min_samples: 2}}\nmeasure: {{warmup: 1, iterations: 4, rounds: 2}}\nrows:\n{}{}{}{}",
            row("tiny-gpt.generate", "tiny-gpt", "sampled"),
            row("tiny-vlm.generate_vl", "tiny-vlm", "describe"),
            row("tiny-encoder.encode", "tiny-encoder", "batch4"),
            row("tiny-reranker.rerank", "tiny-reranker", "documents8"),
        ),
    )
    .expect("write suite");
    let results = matrix_run(&catalog, &env, &suite, &tmp.path().join("run"));
    for r in results["rows"].as_array().expect("rows") {
        assert_eq!(r["status"], "compared", "{r}");
        assert_eq!(r["candidate"]["identity"], r["reference"]["identity"]);
        assert_eq!(r["reference"]["boundary"], "public_pipeline_call_wall");
        assert!(r["comparison"]["light"].is_string(), "{r}");
    }

    // A reference directory whose generate loop stops one token early and that lacks rerank.
    let broken = tmp.path().join("broken-reference");
    std::fs::create_dir_all(broken.join("ort_ops")).expect("mkdir");
    for f in ["ort_reference.py", "trtmc_reference.py"] {
        std::fs::copy(repo_root().join("reference").join(f), broken.join(f)).expect("copy");
    }
    // generate.py rotates its saved calls with _media's helper.
    for f in ["__init__.py", "_media.py", "generate.py"] {
        let text = std::fs::read_to_string(repo_root().join("reference/ort_ops").join(f))
            .expect("read")
            .replace(
                "for step in range(max_new_tokens):",
                "for step in range(max_new_tokens - 1):",
            );
        std::fs::write(broken.join("ort_ops").join(f), text).expect("write");
    }
    let (catalog, env) = matrix_setup(
        &tmp.path().join("second"),
        &["tiny-gpt", "tiny-reranker"],
        &broken,
    );
    let broken_suite = tmp.path().join("broken.yaml");
    std::fs::write(
        &broken_suite,
        std::fs::read_to_string(&suite)
            .expect("suite")
            .replace(&row("tiny-vlm.generate_vl", "tiny-vlm", "describe"), "")
            .replace(&row("tiny-encoder.encode", "tiny-encoder", "batch4"), ""),
    )
    .expect("write suite");
    let results = matrix_run(
        &catalog,
        &env,
        &broken_suite,
        &tmp.path().join("run-broken"),
    );
    let rows = results["rows"].as_array().expect("rows");
    let by_model = |m: &str| {
        rows.iter()
            .find(|r| r["model"] == m)
            .unwrap_or_else(|| panic!("row of {m}"))
    };
    let generate = by_model("tiny-gpt");
    assert_eq!(generate["status"], "failed", "{generate}");
    assert!(generate["comparison"].is_null(), "no light: {generate}");
    let message = generate["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("output token count differs")
            && message.contains("32")
            && message.contains("31"),
        "{generate}"
    );
    let rerank = by_model("tiny-reranker");
    assert_eq!(rerank["status"], "failed", "{rerank}");
    let message = rerank["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("'rerank' has no ONNX Runtime reference here"),
        "{rerank}"
    );
    assert_eq!(rows.len(), 2);
}
