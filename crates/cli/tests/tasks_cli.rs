//! Task breadth through the real binary: every operation of the registry runs its catalog profile (seeded
//! built-in models, packaged WAV/PNG artifacts) and its task metrics are checked against the raw
//! observations: throughput × timed seconds = items counted; real-time factor × audio seconds/s = 1;
//! seconds/item × items/s = 1.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().to_path_buf();
    Env { _tmp: tmp, root }
}

/// Runs `model` (its default case unless `extra` names one) with 3 timed calls; returns the result
/// document's cases and the result directory.
fn run_model(e: &Env, model: &str, extra: &[&str]) -> (Vec<Value>, PathBuf) {
    run_completed(&e.root, &format!("out-{model}"), model, ("1", "3"), extra)
}

/// `-o DIR -q --warmup 0 --iterations N`: a quiet run of N calls and no warm-up into `dir`, for a
/// test that reads the result, not the timings.
fn quietly_into<'a>(dir: &'a Path, iterations: &'a str) -> [&'a str; 7] {
    let dir = dir.to_str().expect("utf8");
    ["-o", dir, "-q", "--warmup", "0", "--iterations", iterations]
}

fn named<'a>(case: &'a Value, list: &str, name: &str) -> &'a Value {
    case["metrics"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list}"))
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {list} entry {name}: {}", case["metrics"]))
}

fn throughput(case: &Value, name: &str) -> f64 {
    named(case, "throughputs", name)["value"]
        .as_f64()
        .expect("value")
}

fn ratio(case: &Value, name: &str) -> f64 {
    named(case, "ratios", name)["value"]
        .as_f64()
        .expect("value")
}

fn seconds(case: &Value) -> f64 {
    case["metrics"]["timed_seconds"].as_f64().expect("seconds")
}

fn observations(dir: &Path, case: &Value) -> Vec<Value> {
    let path = dir
        .join(case["dir"].as_str().expect("dir"))
        .join("observations.jsonl");
    std::fs::read_to_string(path)
        .expect("observations")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// Sum of `field` (or `counts.<name>` with `counts.` prefix) over the observations.
fn total(obs: &[Value], field: &str) -> u64 {
    obs.iter()
        .map(|o| match field.strip_prefix("counts.") {
            Some(c) => o["counts"][c].as_u64().unwrap_or(0),
            None => o[field].as_u64().unwrap_or(0),
        })
        .sum()
}

fn notes(dir: &Path, case: &Value) -> Value {
    let doc = read_json(
        &dir.join(case["dir"].as_str().expect("dir"))
            .join("call-notes.json"),
    );
    let _: trtmc_core::artifacts::CallNotes = assert_document("call-notes.schema.json", &doc);
    doc
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// throughput × timed seconds = the quantity the observations counted.
fn assert_counts(case: &Value, metric: &str, counted: f64) {
    let v = throughput(case, metric);
    assert!(
        close(v * seconds(case), counted),
        "{metric}: {v} × {} s ≠ {counted}",
        seconds(case)
    );
}

#[test]
fn every_task_profile_is_listed_ready() {
    let out = run(&["list", "models", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let _: trtmc_core::artifacts::ModelList = assert_document("model-list.schema.json", &doc);
    let models = doc["models"].as_array().expect("models");
    for name in [
        "tiny-segnet",
        "tiny-detector",
        "tiny-reranker",
        "tiny-asr",
        "tiny-vocoder",
        "tiny-voice",
        "tiny-diffusion",
        "tiny-video-diffusion",
        "tiny-forecaster",
        "tiny-operator",
        "tiny-vlm",
        "distilgpt2",
    ] {
        let m = models
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert_eq!(m["status"], "ready", "{m}");
    }
}

#[test]
fn segmentation_counts_images_masks_and_mask_pixels() {
    let e = env();
    let (cases, dir) = run_model(&e, "tiny-segnet", &["--case", "image", "--case", "batch4"]);
    for (case, batch) in cases.iter().zip([1u64, 4]) {
        let obs = observations(&dir, case);
        assert_eq!(total(&obs, "items"), 3 * batch);
        assert_eq!(
            total(&obs, "counts.masks"),
            3 * batch * 4,
            "4 class masks per image"
        );
        assert_eq!(total(&obs, "counts.mask_pixels"), 3 * batch * 4 * 32 * 32);
        assert_counts(case, "image/s", (3 * batch) as f64);
        assert_counts(case, "mask/s", (3 * batch * 4) as f64);
        assert_counts(case, "mask pixel/s", (3 * batch * 4 * 1024) as f64);
        assert!(close(
            throughput(case, "image/s"),
            batch as f64 * throughput(case, "request/s")
        ));
        let pixels = notes(&dir, case)["notes"]["pixels_per_class"].clone();
        let labelled: u64 = pixels
            .as_array()
            .expect("pixels_per_class")
            .iter()
            .map(|v| v.as_u64().expect("count"))
            .sum();
        assert_eq!(labelled, batch * 1024, "every pixel gets one label");
    }
    // The packaged image is part of the workload identity; the synthetic batch has none.
    let resolved = read_json(
        &dir.join(cases[0]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(
        resolved["request"]["image"]["value"],
        "../assets/shapes.png"
    );
}

#[test]
fn detection_reports_images_per_second_and_batches_in_one_call() {
    let e = env();
    let (cases, dir) = run_model(
        &e,
        "tiny-detector",
        &["--case", "image", "--case", "batch4"],
    );
    for (case, batch) in cases.iter().zip([1u64, 4]) {
        let obs = observations(&dir, case);
        assert_eq!(total(&obs, "items"), 3 * batch);
        assert_counts(case, "image/s", (3 * batch) as f64);
        let detections = notes(&dir, case)["notes"]["detections"]
            .as_u64()
            .expect("detections");
        assert!(detections <= batch * 8, "at most 8 boxes per image");
    }
}

#[test]
fn reranking_scores_every_document_in_one_call() {
    let e = env();
    let (cases, dir) = run_model(&e, "tiny-reranker", &[]);
    let case = &cases[0];
    assert_counts(case, "document/s", 24.0);
    assert!(close(
        throughput(case, "document/s"),
        8.0 * throughput(case, "request/s")
    ));
    let mut ranking: Vec<u64> = notes(&dir, case)["notes"]["ranking"]
        .as_array()
        .expect("ranking")
        .iter()
        .map(|v| v.as_u64().expect("index"))
        .collect();
    ranking.sort_unstable();
    assert_eq!(
        ranking,
        (0..8).collect::<Vec<_>>(),
        "a permutation of the documents"
    );
}

#[test]
fn transcription_offline_and_streaming_report_audio_rate_rtf_tokens_and_first_partial() {
    let e = env();
    let (cases, dir) = run_model(
        &e,
        "tiny-asr",
        &["--case", "offline", "--case", "streaming"],
    );
    for (case, chunks) in cases.iter().zip([1u64, 4]) {
        let obs = observations(&dir, case);
        // 12000 samples at 16 kHz per call.
        assert_eq!(total(&obs, "counts.audio_us"), 3 * 750_000);
        assert_counts(case, "audio s/s", 3.0 * 0.75);
        let rtf = ratio(case, "real-time factor");
        assert!(close(rtf, seconds(case) / 2.25), "RTF = wall s / audio s");
        assert!(close(rtf * throughput(case, "audio s/s"), 1.0));
        let tokens = total(&obs, "output_tokens");
        assert!(tokens > 0, "the seeded model emits tokens");
        assert_counts(case, "output token/s", tokens as f64);
        for o in &obs {
            let first = o["stages_ns"]["first_partial"]
                .as_u64()
                .expect("first_partial");
            assert!(first > 0 && first <= o["wall_ns"].as_u64().expect("wall"));
        }
        let n = notes(&dir, case);
        assert_eq!(n["notes"]["chunks"], chunks);
        assert_eq!(n["notes"]["audio_seconds"], 0.75);
    }
    // Streaming is exact for a frame-wise model: the same transcript either way.
    assert_eq!(
        notes(&dir, &cases[0])["notes"]["transcript"],
        notes(&dir, &cases[1])["notes"]["transcript"]
    );
}

#[test]
fn audio_generation_reports_samples_audio_seconds_and_rtf() {
    let e = env();
    let (cases, dir) = run_model(&e, "tiny-vocoder", &[]);
    let case = &cases[0];
    let obs = observations(&dir, case);
    assert_eq!(total(&obs, "counts.samples"), 3 * 63 * 256);
    assert_counts(case, "sample/s", (3 * 63 * 256) as f64);
    assert_counts(case, "audio s/s", 3.0 * 16128.0 / 16000.0);
    assert!(close(
        throughput(case, "audio s/s") * 16000.0,
        throughput(case, "sample/s")
    ));
    assert!(close(
        ratio(case, "real-time factor") * throughput(case, "audio s/s"),
        1.0
    ));
}

#[test]
fn speech_to_speech_reports_consumed_and_generated_audio() {
    let e = env();
    let (cases, _) = run_model(&e, "tiny-voice", &[]);
    let case = &cases[0];
    assert_counts(case, "consumed audio s/s", 2.25);
    assert_counts(case, "generated audio s/s", 2.25);
    assert!(close(
        ratio(case, "input real-time factor") * throughput(case, "consumed audio s/s"),
        1.0
    ));
}

#[test]
fn image_diffusion_reports_images_per_second_and_seconds_per_image() {
    let e = env();
    let (cases, dir) = run_model(
        &e,
        "tiny-diffusion",
        &["--case", "four-steps", "--case", "batch2"],
    );
    for (case, batch) in cases.iter().zip([1u64, 2]) {
        assert_counts(case, "image/s", (3 * batch) as f64);
        assert!(close(
            ratio(case, "s/image") * throughput(case, "image/s"),
            1.0
        ));
        assert_eq!(notes(&dir, case)["notes"]["steps"], 4);
    }
    let defaults = read_json(
        &dir.join(cases[0]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(defaults["request"]["steps"]["source"], "case");
}

#[test]
fn video_diffusion_reports_videos_frames_and_seconds_per_video() {
    let e = env();
    let (cases, dir) = run_model(&e, "tiny-video-diffusion", &[]);
    let case = &cases[0];
    let obs = observations(&dir, case);
    assert_eq!(total(&obs, "counts.frames"), 3 * 8);
    assert_counts(case, "video/s", 3.0);
    assert_counts(case, "frame/s", 24.0);
    assert!(close(
        ratio(case, "s/video") * throughput(case, "video/s"),
        1.0
    ));
    // The frame count is a shape: it binds the denoiser's batch dimension.
    let resolved = read_json(
        &dir.join(case["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(resolved["build"]["dims.batch"]["value"], 8);
}

#[test]
fn forecasting_and_neural_operators_report_windows_and_forecast_elements() {
    let e = env();
    for (model, batch) in [("tiny-forecaster", 16u64), ("tiny-operator", 8)] {
        let (cases, _) = run_model(&e, model, &[]);
        let case = &cases[0];
        assert_counts(case, "window/s", (3 * batch) as f64);
        assert_counts(case, "forecast element/s", (3 * batch * 16 * 4) as f64);
    }
}

#[test]
fn operations_without_a_batch_api_reject_batches_and_artifacts_must_exist() {
    let e = env();
    let cache = e.root.join("cache");
    let dry = |model: &str, set: &str| {
        run(&[
            "run",
            "--model",
            model,
            "--bundle-cache",
            cache.to_str().expect("utf8"),
            "--set",
            set,
            "--dry-run",
        ])
    };
    let video = dry("tiny-video-diffusion", "request.batch_size=2");
    assert_eq!(code(&video), 3, "{}", stderr(&video));
    let vlm = dry("tiny-vlm", "request.batch_size=2");
    assert_refused(&vlm, 3, "no batch API");
    let asr = dry("tiny-asr", "request.batch_size=2");
    assert_eq!(code(&asr), 3, "{}", stderr(&asr));
    let images = dry("tiny-diffusion", "request.batch_size=3");
    assert_eq!(
        code(&images),
        0,
        "image diffusion has a batch API: {}",
        stderr(&images)
    );
    let missing = dry("tiny-asr", "request.audio=../assets/missing.wav");
    assert_eq!(code(&missing), 3, "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("missing.wav") && stderr(&missing).contains("request.audio"),
        "{}",
        stderr(&missing)
    );
}

/// The bytes of an artifact input are part of the case identity: a copy of the profile whose WAV file
/// differs by one sample resolves to another identity; an identical copy to the same one.
#[test]
fn artifact_bytes_are_hashed_into_the_case_identity() {
    let e = env();
    let catalog = e.root.join("catalog");
    let repo = repo_root().join("catalog");
    for sub in ["tiny-asr", "assets"] {
        std::fs::create_dir_all(catalog.join(sub)).expect("mkdir");
        for f in std::fs::read_dir(repo.join(sub)).expect("read_dir") {
            let f = f.expect("entry").path();
            if f.is_dir() {
                continue; // assets/wordpiece: not used by tiny-asr
            }
            std::fs::copy(&f, catalog.join(sub).join(f.file_name().expect("name"))).expect("copy");
        }
    }
    let identity = |out: &str| {
        let dir = e.root.join(out);
        let cache = e.root.join("cache");
        let head = [
            "run",
            "--manifest-root",
            catalog.to_str().expect("utf8"),
            "--model",
            "tiny-asr",
            "--bundle-cache",
            cache.to_str().expect("utf8"),
        ];
        let o = run(&[&head[..], &quietly_into(&dir, "1")].concat());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc = read_json(&dir.join("result.json"));
        doc["cases"][0]["identity"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| {
                read_json(
                    &dir.join(doc["cases"][0]["dir"].as_str().expect("dir"))
                        .join("resolved-case.json"),
                )["identity"]
                    .as_str()
                    .expect("identity")
                    .to_string()
            })
    };
    let first = identity("a");
    assert_eq!(first, identity("b"), "same bytes, same identity");
    let wav = catalog.join("assets/speech.wav");
    let mut bytes = std::fs::read(&wav).expect("wav");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&wav, bytes).expect("write");
    assert_ne!(
        first,
        identity("c"),
        "one changed sample changes the workload"
    );
}

#[test]
fn vision_language_generation_prefills_the_image_and_reports_tokens_and_stages() {
    let e = env();
    let (cases, dir) = run_model(&e, "tiny-vlm", &["--case", "describe", "--case", "sampled"]);
    for case in &cases {
        let obs = observations(&dir, case);
        assert_eq!(
            total(&obs, "output_tokens"),
            3 * 24,
            "max_new_tokens per call"
        );
        assert_counts(case, "output token/s", 72.0);
        for o in &obs {
            let ttft = o["stages_ns"]["time_to_first_token"]
                .as_u64()
                .expect("ttft");
            let decode = o["stages_ns"]["decode"].as_u64().expect("decode");
            let wall = o["wall_ns"].as_u64().expect("wall");
            assert!(ttft > 0 && ttft + decode <= wall + wall / 1000);
        }
        let n = notes(&dir, case);
        assert_eq!(
            n["notes"]["generated_tokens"]
                .as_array()
                .expect("tokens")
                .len(),
            24
        );
    }
    let resolved = |i: usize| {
        read_json(
            &dir.join(cases[i]["dir"].as_str().expect("dir"))
                .join("resolved-case.json"),
        )
    };
    assert_eq!(
        resolved(0)["request"]["seed"]["value"],
        -1,
        "greedy: pipeline default"
    );
    assert_eq!(
        resolved(1)["request"]["seed"]["value"],
        42,
        "sampling keeps its seed"
    );
    // The image occupies the KV cache ahead of the prompt: 16 patches + 20 prompt tokens (BOS + 19 bytes)
    // + 221 new tokens exceed the 256 positions, which 20 + 221 alone would not.
    let out = run(&[
        "run",
        "--model",
        "tiny-vlm",
        "--bundle-cache",
        e.root.join("cache").to_str().expect("utf8"),
        "-o",
        e.root.join("vlm-long").to_str().expect("utf8"),
        "-q",
        "--iterations",
        "1",
        "--set",
        "request.max_new_tokens=221",
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let failed = read_json(&e.root.join("vlm-long/result.json"));
    let error = failed["cases"][0]["error"].as_str().expect("error");
    assert!(
        error.contains("16 patches") && error.contains("KV-cache length 256"),
        "{error}"
    );
}

/// distilgpt2 resolves through the Hugging Face cache layout (`HF_HUB_OFFLINE=1`, nothing downloaded): with
/// the file cached it plans at FP16 with a 256-token KV cache and runs (here a stand-in decoder with the
/// same cache contract sits at the hub path); without it, it fails closed with the download command.
#[test]
fn distilgpt2_resolves_from_the_offline_hub_cache_at_fp16_with_a_256_token_cache() {
    let e = env();
    let home = e.root.join("hf");
    let snapshot = home
        .join("hub/models--Xenova--distilgpt2/snapshots")
        .join("0123456789abcdef0123456789abcdef01234567");
    std::fs::create_dir_all(snapshot.join("onnx")).expect("mkdir");
    std::fs::create_dir_all(home.join("hub/models--Xenova--distilgpt2/refs")).expect("mkdir");
    std::fs::write(
        home.join("hub/models--Xenova--distilgpt2/refs/main"),
        "0123456789abcdef0123456789abcdef01234567",
    )
    .expect("ref");
    std::fs::write(
        snapshot.join("onnx/decoder_with_past_model.onnx"),
        trtmc_modelgen::generate("tiny-gpt", 1).expect("stand-in decoder"),
    )
    .expect("model");
    std::fs::write(snapshot.join("tokenizer.json"), mini_gpt2_tokenizer()).expect("tokenizer");
    let hub = |hf_home: &Path, extra: &[&str]| {
        std::process::Command::new(BIN)
            .args([
                "run",
                "--model",
                "distilgpt2",
                "--bundle-cache",
                e.root.join("cache").to_str().expect("utf8"),
            ])
            .args(extra)
            .env_remove("TRTMC_MANIFEST_ROOT")
            .env("HF_HOME", hf_home)
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .expect("run")
    };
    let plan = hub(&home, &["--dry-run"]);
    assert_eq!(code(&plan), 0, "{}", stderr(&plan));
    assert!(
        stdout(&plan).contains("distilgpt2 greedy op=generate"),
        "{}",
        stdout(&plan)
    );

    let dir = e.root.join("distil");
    let tokens = ["--set", "request.max_new_tokens=4"];
    let out = hub(&home, &[&quietly_into(&dir, "2")[..], &tokens].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let case = &doc["cases"][0];
    assert_counts(case, "output token/s", 8.0);
    let resolved = read_json(
        &dir.join(case["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(resolved["build"]["precision"]["value"], "fp16");
    assert_eq!(resolved["build"]["kv_cache_length"]["value"], 256);
    assert_eq!(resolved["request"]["seed"]["value"], -1);
    // The prompt went through the cached byte-level BPE: <|endoftext|> + "The" (two merges) + the
    // 16 bytes of " quick brown fox" = 18 tokens (the byte tokenizer would give 20).
    for o in observations(&dir, case) {
        assert_eq!(o["input_tokens"], 18, "{o}");
    }
    let generated = notes(&dir, case)["notes"]["generated_tokens"].clone();
    assert_eq!(generated.as_array().map(Vec::len), Some(4), "{generated}");

    // A model without its tokenizer in the cache fails closed and names the file to download.
    std::fs::remove_file(snapshot.join("tokenizer.json")).expect("rm tokenizer");
    let no_tokenizer = hub(&home, &["--dry-run"]);
    assert_eq!(code(&no_tokenizer), 3, "{}", stderr(&no_tokenizer));
    assert!(
        stderr(&no_tokenizer).contains("tokenizer Xenova/distilgpt2/tokenizer.json")
            && stderr(&no_tokenizer)
                .contains("huggingface-cli download Xenova/distilgpt2 tokenizer.json"),
        "{}",
        stderr(&no_tokenizer)
    );

    let absent = hub(&e.root.join("empty-hf"), &["--dry-run"]);
    assert_refused(&absent, 3, "huggingface-cli download Xenova/distilgpt2");
}

/// GPT-2's tokenizer.json shape in miniature, so that its ids fit the stand-in decoder's 259-token
/// vocabulary: the 256 byte-level symbols in GPT-2's order, `<|endoftext|>` = 256, and two merges
/// ("T h" → 257, "Th e" → 258).
fn mini_gpt2_tokenizer() -> String {
    // GPT-2's byte-to-symbol table: printable bytes stand for themselves, the others are moved to
    // U+0100 onwards in byte order.
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut symbols: Vec<char> = (0..256u32)
        .filter(|&b| printable(b))
        .filter_map(char::from_u32)
        .collect();
    symbols.extend(
        (0..256u32)
            .filter(|&b| !printable(b))
            .enumerate()
            .filter_map(|(n, _)| char::from_u32(256 + n as u32)),
    );
    let mut vocab: serde_json::Map<String, serde_json::Value> = symbols
        .iter()
        .enumerate()
        .map(|(i, c)| (c.to_string(), serde_json::Value::from(i)))
        .collect();
    vocab.insert("<|endoftext|>".into(), 256.into());
    vocab.insert("Th".into(), 257.into());
    vocab.insert("The".into(), 258.into());
    let byte_level = serde_json::json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": true, "special": true}],
        "normalizer": null,
        "pre_tokenizer": byte_level,
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": ["T h", "Th e"]}
    })
    .to_string()
}
