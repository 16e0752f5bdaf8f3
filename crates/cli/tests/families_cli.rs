//! The generated model families (crates/modelgen/src/families.rs) through the real binary: every `l0`
//! smoke variant runs on tract and on ONNX Runtime, `list models` shows the families ready offline, the
//! hub profiles list as needing a download and run from a hub cache, and `matrix check` counts coverage.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

fn bench(cache: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut with_cache = args.to_vec();
    with_cache.extend(["--bundle-cache", cache.to_str().expect("utf8")]);
    offline(&with_cache, env)
}

/// trtmc-bench on the embedded catalog with the hub offline (`HF_HUB_OFFLINE=1`).
fn offline(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("ORT_DYLIB_PATH")
        .env("TRTMC_TEST", "1")
        .env("HF_HUB_OFFLINE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("start trtmc-bench")
}

/// One run of each family's l0 profile on each runtime (its default case, two timed calls): all
/// complete with finite outputs (a non-finite output fails the case).
#[test]
fn every_l0_family_runs_on_tract_and_onnxruntime() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    let mut failures = Vec::new();
    for family in trtmc_modelgen::families::families() {
        let profile = format!("{}{}", family.name, trtmc_modelgen::families::SMOKE_SUFFIX);
        for runtime in ["tract", "onnxruntime"] {
            let dir = tmp.path().join(format!("{profile}-{runtime}"));
            let out = bench(
                &cache,
                &[
                    "run",
                    "--model",
                    &profile,
                    "--runtime",
                    runtime,
                    "--warmup",
                    "1",
                    "--iterations",
                    "2",
                    "-o",
                    dir.to_str().expect("utf8"),
                    "-q",
                ],
                &[],
            );
            if code(&out) != 0 {
                failures.push(format!("{profile} on {runtime}: {}", stderr(&out)));
                continue;
            }
            let doc = read_json(&dir.join("result.json"));
            let case = &doc["cases"][0];
            if case["status"] != "completed" || case["measurement"]["observations"] != 2 {
                failures.push(format!("{profile} on {runtime}: {case}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `list models` (the embedded catalog) shows at least 30 generated families ready, each with its
/// real-size profile and its l0 variant; the hub profiles list as ready but needing a download.
#[test]
fn list_models_shows_the_families_ready_offline() {
    let tmp = tempfile::tempdir().expect("tmp");
    let empty_hub = tmp.path().join("hf");
    let out = offline(
        &["list", "models", "--format", "json"],
        &[("HF_HOME", &empty_hub)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let models = doc["models"].as_array().expect("models");
    let ready = |name: &str| {
        models
            .iter()
            .any(|m| m["name"] == name && m["status"] == "ready")
    };
    let families = trtmc_modelgen::families::families();
    assert!(families.len() >= 30, "{} families", families.len());
    for f in families {
        assert!(ready(f.name), "{} is not listed ready", f.name);
        assert!(
            ready(&format!("{}-l0", f.name)),
            "{}-l0 is not listed ready",
            f.name
        );
    }
    let text = offline(&["list", "models"], &[("HF_HOME", &empty_hub)]);
    let listing = stdout(&text);
    for hub in HUB_PROFILES {
        let line = listing
            .lines()
            .find(|l| l.split_whitespace().next() == Some(hub.0))
            .unwrap_or_else(|| panic!("{} not listed:\n{listing}", hub.0));
        assert!(line.contains("needs download"), "{line}");
    }
}

/// (profile, hub repository, file, l0 stand-in with the same input/output contract, whether it reads
/// the repository's tokenizer.json).
const HUB_PROFILES: &[(&str, &str, &str, &str, bool)] = &[
    (
        "bert-base-uncased",
        "Xenova/bert-base-uncased",
        "onnx/model.onnx",
        "bert-l0",
        true,
    ),
    (
        "all-minilm-l6-v2",
        "Xenova/all-MiniLM-L6-v2",
        "onnx/model.onnx",
        "minilm-l0",
        true,
    ),
    (
        "bge-small-en-v1.5",
        "Xenova/bge-small-en-v1.5",
        "onnx/model.onnx",
        "bge-l0",
        true,
    ),
    (
        "ms-marco-minilm-l-6-v2",
        "Xenova/ms-marco-MiniLM-L-6-v2",
        "onnx/model.onnx",
        "ms-marco-minilm-l0",
        true,
    ),
    (
        "vit-base-patch16-224",
        "Xenova/vit-base-patch16-224",
        "onnx/model.onnx",
        "vit-l0",
        false,
    ),
    (
        "mobilenet-v2-1.0-224",
        "Xenova/mobilenet_v2_1.0_224",
        "onnx/model.onnx",
        "mobilenetv2-l0",
        false,
    ),
];

/// Each hub profile resolves from a locally made hub cache (`HF_HUB_OFFLINE=1`, nothing downloaded) and
/// runs, with a generated l0 model of the family's contract standing in at the hub path and the test
/// WordPiece vocabulary as its tokenizer; with an empty cache it fails closed naming the download.
#[test]
fn hub_profiles_run_from_a_local_hub_cache() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("hf");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let wordpiece = repo_root().join("catalog/assets/wordpiece/tokenizer.json");
    for (profile, repo, file, stand_in, tokenizer) in HUB_PROFILES {
        let repo_dir = home
            .join("hub")
            .join(format!("models--{}", repo.replace('/', "--")));
        let snapshot = repo_dir.join("snapshots").join(commit);
        std::fs::create_dir_all(snapshot.join("onnx")).expect("mkdir");
        std::fs::create_dir_all(repo_dir.join("refs")).expect("mkdir");
        std::fs::write(repo_dir.join("refs/main"), commit).expect("ref");
        std::fs::write(
            snapshot.join(file),
            trtmc_modelgen::generate(stand_in, 1).expect("stand-in"),
        )
        .expect("model");
        if *tokenizer {
            std::fs::copy(&wordpiece, snapshot.join("tokenizer.json")).expect("tokenizer");
        }
        let dir = tmp.path().join(profile);
        let out = bench(
            &tmp.path().join("cache"),
            &[
                "run",
                "--model",
                profile,
                "--warmup",
                "0",
                "--iterations",
                "2",
                "-o",
                dir.to_str().expect("utf8"),
                "-q",
            ],
            &[("HF_HOME", &home)],
        );
        assert_eq!(code(&out), 0, "{profile}: {}", stderr(&out));
        let doc = assert_result_dir_valid(&dir);
        assert_eq!(doc["cases"][0]["status"], "completed", "{profile}");

        let absent = bench(
            &tmp.path().join("cache"),
            &["run", "--model", profile, "--dry-run"],
            &[("HF_HOME", &tmp.path().join("empty-hf"))],
        );
        assert_eq!(code(&absent), 3, "{profile}: {}", stderr(&absent));
        assert!(
            stderr(&absent).contains(&format!("huggingface-cli download {repo}")),
            "{}",
            stderr(&absent)
        );
    }
}

/// `matrix check` prints the suite's coverage counted as the seed counts it: the quick pass's l0 rows
/// count for their real-size profiles, so both suites cover the same profiles, families and contracts.
#[test]
fn matrix_check_prints_the_coverage_counts() {
    let counts = |suite: &str| -> (usize, usize, usize) {
        let o = run(&[
            "matrix",
            "check",
            &repo_root()
                .join("benchmarks/performance")
                .join(suite)
                .to_string_lossy(),
            "--environment",
            &repo_root()
                .join("benchmarks/performance/environments/cpu.yaml")
                .to_string_lossy(),
        ]);
        assert_eq!(code(&o), 0, "{suite}: {}", stderr(&o));
        let text = stdout(&o);
        let line = text
            .lines()
            .find(|l| l.starts_with("coverage: "))
            .unwrap_or_else(|| panic!("no coverage line:\n{text}"));
        let numbers: Vec<usize> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(numbers.len(), 3, "{line}");
        (numbers[0], numbers[1], numbers[2])
    };
    let (profiles, families, contracts) = counts("release-full.yaml");
    assert!(families >= 30, "{families} families");
    assert!(contracts >= 40, "{contracts} contracts");
    assert!(profiles >= contracts, "{profiles} profiles");
    assert_eq!(
        counts("release.yaml"),
        (profiles, families, contracts),
        "the quick pass covers the same profiles through their l0 variants"
    );
}
