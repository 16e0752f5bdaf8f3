//! `trtmc-bench run` on real models through the real binary: the embedded models, the onnx wheel's
//! light_resnet50, `--onnx`, plans, and the bundle cache (reuse, new keys, --no-build, --bundle, locking).

use std::path::{Path, PathBuf};

use crate::common::*;

struct Env {
    _tmp: tempfile::TempDir,
    cache: PathBuf,
    root: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    let root = tmp.path().to_path_buf();
    Env {
        _tmp: tmp,
        cache,
        root,
    }
}

fn run_model(e: &Env, name: &str, out: &str, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let dir = e.root.join(out);
    let mut args = vec![
        "run",
        "--model",
        name,
        "--bundle-cache",
        e.cache.to_str().expect("utf8"),
        "-o",
        dir.to_str().expect("utf8"),
        "-q",
    ];
    args.extend_from_slice(extra);
    (run(&args), dir)
}

/// [`run_model`], which must succeed; returns its result's first case.
fn first_case_of_run(e: &Env, name: &str, out: &str, extra: &[&str]) -> serde_json::Value {
    let (output, dir) = run_model(e, name, out, extra);
    assert_success(&output);
    first_case(&dir)
}

/// The first case of the result in `dir`.
fn first_case(dir: &Path) -> serde_json::Value {
    read_json(&dir.join("result.json"))["cases"][0].clone()
}

/// `run --model tiny-cnn` with `args` after it (the run's own cache and output options).
fn run_tiny_cnn(args: &[&str]) -> std::process::Output {
    run(&[&["run", "--model", "tiny-cnn"], args].concat())
}

/// `run --onnx ONNX` into `ROOT/OUT` with the shared bundle cache and `extra` arguments; returns the
/// output and the result directory.
fn run_onnx(e: &Env, onnx: &Path, out: &str, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let dir = e.root.join(out);
    let mut args = vec!["run", "--onnx", onnx.to_str().expect("utf8")];
    args.extend_from_slice(&["--bundle-cache", e.cache.to_str().expect("utf8")]);
    args.extend_from_slice(&["-o", dir.to_str().expect("utf8")]);
    args.extend_from_slice(extra);
    (run(&args), dir)
}

fn metric(case: &serde_json::Value, name: &str) -> f64 {
    case["metrics"]["throughputs"]
        .as_array()
        .expect("throughputs")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"))["value"]
        .as_f64()
        .expect("value")
}

fn sum_observations(dir: &Path, field: &str) -> u64 {
    std::fs::read_to_string(dir.join("observations.jsonl"))
        .expect("observations")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")[field]
                .as_u64()
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn tiny_gpt_generates_through_its_kv_cache_with_consistent_metrics() {
    let e = env();
    let (out, dir) = run_model(
        &e,
        "tiny-gpt",
        "gpt",
        &[
            "--case",
            "greedy",
            "--case",
            "sampled",
            "--warmup",
            "1",
            "--iterations",
            "4",
            "--set",
            "request.max_new_tokens=12",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "two named cases are two runs");
    for case in cases {
        let case_dir = dir.join(case["dir"].as_str().expect("dir"));
        assert_eq!(line_count(&case_dir.join("observations.jsonl")), 4);
        let tokens = sum_observations(&case_dir, "output_tokens");
        assert_eq!(tokens, 4 * 12, "max_new_tokens tokens per call");
        let seconds = case["metrics"]["timed_seconds"].as_f64().expect("seconds");
        let tps = metric(case, "output token/s");
        assert!(
            (tps * seconds - tokens as f64).abs() < 1e-6 * tokens as f64,
            "tokens/s × time = tokens"
        );
        let stages = &case["metrics"]["stages_ms"];
        let (prefill, decode, wall) = (
            stages["prefill"]["mean"].as_f64().expect("prefill"),
            stages["decode"]["mean"].as_f64().expect("decode"),
            case["metrics"]["latency_ms"]["mean"]
                .as_f64()
                .expect("wall"),
        );
        assert!(prefill > 0.0 && decode > 0.0);
        assert!(
            (prefill + decode) <= wall * 1.001,
            "stages lie inside the call: {prefill} + {decode} vs {wall}"
        );
        assert!(stages["time_to_first_token"]["p50"].as_f64().expect("ttft") < wall);
    }
    let greedy = read_json(
        &dir.join(cases[0]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(greedy["request"]["seed"]["value"], -1);
    assert_eq!(greedy["request"]["seed"]["source"], "default");
    assert_eq!(greedy["request"]["max_new_tokens"]["source"], "set");
    let sampled = read_json(
        &dir.join(cases[1]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(sampled["request"]["seed"]["value"], 42);
    assert_eq!(cases[0]["bundle"]["origin"], "built");
    assert_eq!(
        cases[1]["bundle"]["origin"], "built",
        "one bundle serves both cases (same key)"
    );
    assert_eq!(cases[0]["bundle"]["path"], cases[1]["bundle"]["path"]);
    let bundle = PathBuf::from(cases[0]["bundle"]["path"].as_str().expect("path"));
    for f in [
        "bundle.json",
        "model.nnef.tar",
        "build.log",
        "build-timing.json",
        "build-command.json",
    ] {
        assert!(bundle.join(f).exists(), "{f} beside the bundle");
    }
    assert_eq!(
        read_json(&bundle.join("build-timing.json"))["excluded_from_metrics"],
        true
    );
    assert!(generation_rejects_batches(&e));
}

fn generation_rejects_batches(e: &Env) -> bool {
    let (out, _) = run_model(
        e,
        "tiny-gpt",
        "gpt-batch",
        &["--set", "request.batch_size=2", "--dry-run"],
    );
    code(&out) == 3 && stderr(&out).contains("no batch API")
}

#[test]
fn bundles_are_reused_for_request_changes_and_rebuilt_for_shape_changes() {
    let e = env();
    let cache = e.cache.to_str().expect("utf8").to_string();
    let dry = run_tiny_cnn(&["--bundle-cache", &cache, "--dry-run"]);
    assert_success(&dry);
    assert!(stdout(&dry).contains("would build"), "{}", stdout(&dry));
    assert!(
        !e.cache.exists()
            || std::fs::read_dir(&e.cache).map(|d| d.count()).unwrap_or(0) == 0
            || !e.cache.join("tract").exists(),
        "dry-run builds nothing"
    );

    let no_build = run_tiny_cnn(&["--bundle-cache", &cache, "--no-build", "-q"]);
    assert_eq!(code(&no_build), 4, "{}", stderr(&no_build));
    assert!(stderr(&no_build).contains("--no-build"));

    let c1 = first_case_of_run(&e, "tiny-cnn", "a", &["--iterations", "5", "--warmup", "1"]);
    assert_eq!(c1["bundle"]["origin"], "built");
    let c2 = first_case_of_run(
        &e,
        "tiny-cnn",
        "b",
        &[
            "--iterations",
            "5",
            "--warmup",
            "1",
            "--set",
            "request.seed=99",
        ],
    );
    assert_eq!(
        c2["bundle"]["origin"], "cache_hit",
        "a request-only change reuses the bundle"
    );
    assert_eq!(c1["bundle"]["key"], c2["bundle"]["key"]);
    assert_ne!(c1["identity"], c2["identity"], "but it is another workload");

    let c3 = first_case_of_run(
        &e,
        "tiny-cnn",
        "c",
        &["--case", "batch8", "--iterations", "3", "--warmup", "1"],
    );
    assert_eq!(
        c3["bundle"]["origin"], "built",
        "a batch-size change is shape-affecting"
    );
    assert_ne!(c3["bundle"]["key"], c1["bundle"]["key"]);
    let images = metric(&c3, "image/s");
    let requests = metric(&c3, "request/s");
    assert!(
        (images - 8.0 * requests).abs() < 1e-6 * images,
        "image/s = batch × request/s"
    );

    let dry2 = run_tiny_cnn(&["--bundle-cache", &cache, "--dry-run"]);
    assert!(stdout(&dry2).contains("cache hit"), "{}", stdout(&dry2));

    // An explicit bundle is used as given and reported as not compatibility-verified.
    let bundle_path = c1["bundle"]["path"].as_str().expect("path").to_string();
    let c4 = first_case_of_run(
        &e,
        "tiny-cnn",
        "d",
        &[
            "--bundle",
            &bundle_path,
            "--iterations",
            "2",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(c4["bundle"]["origin"], "explicit");
    assert_eq!(c4["bundle"]["compatibility_verified"], false);

    // A bundle below --bundle-root with the same key is found before the cache.
    let root = e.root.join("shelf");
    std::fs::create_dir_all(&root).expect("mkdir");
    copy_dir(Path::new(&bundle_path), &root.join("tiny-cnn.bundle"));
    let other_cache = e.root.join("empty-cache");
    // The plan of a run that looks below the shelf first, its cache empty.
    let shelf_plan = |flag: &str| {
        run_tiny_cnn(&[
            "--bundle-cache",
            other_cache.to_str().expect("utf8"),
            "--bundle-root",
            root.to_str().expect("utf8"),
            flag,
            "--dry-run",
        ])
    };
    let found = shelf_plan("--no-build");
    assert_success(&found);
    assert!(
        stdout(&found).contains("found below --bundle-root"),
        "{}",
        stdout(&found)
    );
    // --rebuild means a new build, never the bundle below the root; with --bundle it is refused.
    let rebuild_plan = shelf_plan("--rebuild");
    assert_success(&rebuild_plan);
    assert!(
        stdout(&rebuild_plan).contains("would build")
            && !stdout(&rebuild_plan).contains("found below --bundle-root"),
        "{}",
        stdout(&rebuild_plan)
    );
    let both = run_tiny_cnn(&["--bundle", &bundle_path, "--rebuild", "--dry-run"]);
    assert_refused(&both, 2, "--bundle");

    let rebuilt = run_tiny_cnn(&[
        "--bundle-cache",
        &cache,
        "--rebuild",
        "--iterations",
        "2",
        "--warmup",
        "0",
        "-q",
        "-o",
        e.root.join("e").to_str().expect("utf8"),
    ]);
    assert_eq!(code(&rebuilt), 0, "{}", stderr(&rebuilt));
    assert_eq!(
        read_json(&e.root.join("e/result.json"))["cases"][0]["bundle"]["origin"],
        "built"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("ls").flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

#[test]
fn two_runs_building_the_same_key_at_once_share_one_bundle() {
    let e = env();
    let cache = e.cache.to_str().expect("utf8").to_string();
    let spawn = |out: &str| {
        std::process::Command::new(BIN)
            .args([
                "run",
                "--model",
                "tiny-encoder",
                "--bundle-cache",
                &cache,
                "--iterations",
                "3",
                "--warmup",
                "1",
                "-q",
                "-o",
            ])
            .arg(e.root.join(out))
            .spawn()
            .expect("spawn")
    };
    // Build folders that killed builds left: a dead process's goes, a live one's (this test's) stays.
    let dead = dead_pid();
    let runtime_dir = e.cache.join("tract");
    let dead_folder = runtime_dir.join(format!(".tmp-0123456789abcdef-{dead}"));
    let live_folder = runtime_dir.join(format!(".tmp-0123456789abcdef-{}", std::process::id()));
    for folder in [&dead_folder, &live_folder] {
        std::fs::create_dir_all(folder).expect("mkdir");
        std::fs::write(folder.join("build.log"), "half a build").expect("write");
    }
    let (mut a, mut b) = (spawn("x"), spawn("y"));
    assert!(a.wait().expect("wait").success());
    assert!(b.wait().expect("wait").success());
    let origins: Vec<String> = ["x", "y"]
        .iter()
        .map(|d| {
            read_json(&e.root.join(d).join("result.json"))["cases"][0]["bundle"]["origin"]
                .as_str()
                .expect("origin")
                .to_string()
        })
        .collect();
    // Only one built it: the other reused it, whether it waited for the build or came after it.
    let mut sorted = origins.clone();
    sorted.sort();
    assert_eq!(sorted, ["built", "cache_hit"], "{origins:?}");
    let bundles: Vec<_> = std::fs::read_dir(e.cache.join("tract"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        bundles.iter().filter(|n| n.ends_with(".bundle")).count(),
        1,
        "{bundles:?}"
    );
    let temporaries: Vec<&String> = bundles.iter().filter(|n| n.starts_with(".tmp")).collect();
    assert_eq!(
        temporaries,
        [&live_folder
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned()],
        "no half-built bundle left but the live one: {bundles:?}"
    );
}

/// The race made certain: a run plans a build, then waits on the key's lock while "another run" (this
/// test, holding the lock) puts the finished bundle in place. The waiting run must reuse it and record
/// `cache_hit`, not `built`, and must not rebuild it.
#[test]
fn a_run_that_waited_for_another_build_records_a_cache_hit() {
    let e = env();
    let (first, dir) = run_model(
        &e,
        "tiny-cnn",
        "first",
        &["--iterations", "2", "--warmup", "0"],
    );
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let bundle = read_json(&dir.join("result.json"))["cases"][0]["bundle"].clone();
    assert_eq!(bundle["origin"], "built");
    let path = PathBuf::from(bundle["path"].as_str().expect("path"));
    let key = bundle["key"].as_str().expect("key");
    let manifest = std::fs::read(path.join("bundle.json")).expect("manifest");
    let aside = e.root.join("finished-elsewhere");
    std::fs::rename(&path, &aside).expect("move the bundle aside");

    let lock = std::fs::File::create(e.cache.join(".locks").join(format!("{key}.lock")))
        .expect("lock file");
    lock.lock().expect("lock");
    let log = e.root.join("second.log");
    let mut second = std::process::Command::new(BIN)
        .args(["run", "--model", "tiny-cnn", "--bundle-cache"])
        .arg(&e.cache)
        .args(["--iterations", "2", "--warmup", "0", "-o"])
        .arg(e.root.join("second"))
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("building")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the second run never started its build"
        );
        assert!(
            second.try_wait().expect("wait").is_none(),
            "the second run ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The other build finishes: its bundle appears, then its lock is released.
    std::fs::rename(&aside, &path).expect("put the bundle in place");
    drop(lock);
    assert!(
        second.wait().expect("wait").success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let reused = read_json(&e.root.join("second/result.json"))["cases"][0]["bundle"].clone();
    assert_eq!(reused["origin"], "cache_hit", "{reused}");
    assert_eq!(reused["path"], bundle["path"]);
    assert_eq!(
        std::fs::read(path.join("bundle.json")).expect("manifest"),
        manifest,
        "the waiting run rebuilt the bundle"
    );
}

#[test]
fn tiny_encoder_reports_vectors_and_elements() {
    let e = env();
    let (out, dir) = run_model(
        &e,
        "tiny-encoder",
        "enc",
        &["--case", "batch4", "--iterations", "5", "--warmup", "1"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let case = &doc["cases"][0];
    let vectors = metric(case, "vector/s");
    let elements = metric(case, "element/s");
    let requests = metric(case, "request/s");
    assert!(
        (vectors - 4.0 * requests).abs() < 1e-6 * vectors,
        "vector/s = batch × request/s"
    );
    assert!(
        (elements - 64.0 * vectors).abs() < 1e-6 * elements,
        "element/s = width × vector/s"
    );
}

#[test]
fn plans_run_per_model_cases_and_counts() {
    let e = env();
    let plan = e.root.join("plan.yaml");
    std::fs::write(
        &plan,
        "models:\n  - model: tiny-cnn\n    cases: [single]\n    warmup: 1\n    iterations: 3\n  - model: tiny-gpt\n    iterations: 2\n    warmup: 0\n    set:\n      request.max_new_tokens: 4\n",
    )
    .expect("write");
    let dir = e.root.join("planned");
    let out = run(&[
        "run",
        plan.to_str().expect("utf8"),
        "--bundle-cache",
        e.cache.to_str().expect("utf8"),
        "-o",
        dir.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let counts: Vec<u64> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["measurement"]["observations"].as_u64().expect("n"))
        .collect();
    assert_eq!(counts, vec![3, 2]);
    let gpt = read_json(
        &dir.join(doc["cases"][1]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    assert_eq!(gpt["request"]["max_new_tokens"]["source"], "plan");

    std::fs::write(&plan, "models:\n  - model: tiny-cnn\n    iterationz: 3\n").expect("write");
    let bad = run(&["run", plan.to_str().expect("utf8"), "--dry-run"]);
    assert_eq!(code(&bad), 3);
    assert!(stderr(&bad).contains("plan.yaml"), "{}", stderr(&bad));
}

#[test]
fn sweeps_are_the_only_product() {
    let e = env();
    let (out, dir) = run_model(
        &e,
        "tiny-cnn",
        "sweep",
        &[
            "--sweep",
            "request.seed=1,2",
            "--sweep",
            "request.batch_size=1,2",
            "--iterations",
            "2",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&dir.join("result.json"));
    assert_eq!(doc["cases"].as_array().expect("cases").len(), 4);
    assert_eq!(doc["cases"][3]["sweep_point"]["request.batch_size"], "2");
}

/// The onnx wheel's real-architecture model (CI installs the wheel).
fn onnx_wheel_model(name: &str) -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import onnx,os;print(os.path.dirname(onnx.__file__))"])
        .output()
        .expect("python3 must be installed (scripts/test installs the onnx wheel)");
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && !dir.is_empty(),
        "the onnx wheel is not installed: pip install onnx"
    );
    PathBuf::from(dir)
        .join("backend/test/data/light")
        .join(name)
}

#[test]
fn light_resnet50_from_the_onnx_wheel_runs_from_the_catalog_and_as_onnx() {
    let e = env();
    assert!(onnx_wheel_model("light_resnet50.onnx").exists());
    let (out, dir) = run_model(
        &e,
        "light-resnet50",
        "resnet",
        &["--iterations", "3", "--warmup", "1"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    assert_eq!(doc["cases"][0]["operation"], "classify");

    let onnx = onnx_wheel_model("light_resnet50.onnx");
    let (out2, dir2) = run_onnx(
        &e,
        &onnx,
        "onnx",
        &["--iterations", "3", "--warmup", "1", "-q"],
    );
    assert_success(&out2);
    let doc2 = assert_result_dir_valid(&dir2);
    assert_eq!(doc2["cases"][0]["operation"], "infer");
    assert_eq!(doc2["cases"][0]["model"], "light_resnet50");
}

#[test]
fn onnx_files_with_dynamic_dims_run_at_1_and_name_the_shape_to_set() {
    let e = env();
    let onnx = e.root.join("tiny_cnn.onnx");
    // The embedded CNN has a symbolic batch dimension: a real dynamic-shape ONNX file.
    let bytes = trtmc_modelgen::generate("tiny-cnn", 1).expect("generate");
    std::fs::write(&onnx, bytes).expect("write");
    // Left dynamic, the dimension is 1 (as trtexec does) and one line names the --shape to set.
    let (defaulted, _) = run_onnx(&e, &onnx, "m", &["--iterations", "2"]);
    assert_success(&defaulted);
    assert!(
        stderr(&defaulted).contains("set to 1; choose with --shape image:1x3x64x64"),
        "the note names the fix: {}",
        stderr(&defaulted)
    );
    let doc = read_json(&e.root.join("m/result.json"));
    assert_eq!(
        doc["cases"][0]["input_shapes"]["image"],
        serde_json::json!([[1, 3, 64, 64]])
    );
    let (ok, _) = run_onnx(
        &e,
        &onnx,
        "s",
        &["--shape", "image:2x3x64x64", "--iterations", "2", "-q"],
    );
    assert_success(&ok);
    let doc = read_json(&e.root.join("s/result.json"));
    assert_eq!(doc["cases"][0]["status"], "completed");
}

/// A Hugging Face hub cache laid out as the hub client writes it, holding one small ONNX model.
fn fake_hub(home: &Path, repo: &str, file: &str, bytes: &[u8]) {
    let repo_dir = home
        .join("hub")
        .join(format!("models--{}", repo.replace('/', "--")));
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo_dir.join("refs")).expect("mkdir");
    std::fs::write(repo_dir.join("refs/main"), commit).expect("ref");
    let snapshot = repo_dir.join("snapshots").join(commit);
    std::fs::create_dir_all(&snapshot).expect("mkdir");
    std::fs::write(snapshot.join(file), bytes).expect("model");
}

#[test]
fn hugging_face_sources_resolve_from_the_offline_cache() {
    let e = env();
    let home = e.root.join("hf");
    fake_hub(
        &home,
        "trtmc-test/tiny-cnn",
        "model.onnx",
        &trtmc_modelgen::generate("tiny-cnn", 3).expect("generate"),
    );
    let catalog = e.root.join("catalog/hub-cnn");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    std::fs::write(
        catalog.join("MODEL.toml"),
        "name = \"hub-cnn\"\ntask_strategy = \"image_classification\"\ntest_manifests = [\"c.toml\"]\n[source]\nhf_repo = \"trtmc-test/tiny-cnn\"\nhf_file = \"model.onnx\"\n",
    )
    .expect("write");
    std::fs::write(
        catalog.join("c.toml"),
        "[[case]]\nname = \"one\"\n[case.request]\nseed = 1\n",
    )
    .expect("write");
    let missing_dir = e.root.join("catalog/hub-missing");
    std::fs::create_dir_all(&missing_dir).expect("mkdir");
    std::fs::write(
        missing_dir.join("MODEL.toml"),
        "name = \"hub-missing\"\ntask_strategy = \"image_classification\"\ntest_manifests = [\"../hub-cnn/c.toml\"]\n[source]\nhf_repo = \"trtmc-test/absent\"\nhf_file = \"model.onnx\"\n",
    )
    .expect("write");
    let root = e.root.join("catalog");
    let hub_run = |model: &str, extra: &[&str]| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args([
            "run",
            "--manifest-root",
            root.to_str().expect("utf8"),
            "--model",
            model,
            "--bundle-cache",
            e.cache.to_str().expect("utf8"),
            "-q",
        ])
        .args(extra)
        .env("HF_HOME", &home)
        .env("HF_HUB_OFFLINE", "1");
        cmd.output().expect("run")
    };
    let out = hub_run(
        "hub-cnn",
        &[
            "--iterations",
            "2",
            "--warmup",
            "0",
            "-o",
            e.root.join("hub-out").to_str().expect("utf8"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        read_json(&e.root.join("hub-out/result.json"))["cases"][0]["status"],
        "completed"
    );
    let absent = hub_run("hub-missing", &["--dry-run"]);
    assert_eq!(code(&absent), 3, "{}", stderr(&absent));
    assert!(
        stderr(&absent).contains("HF_HUB_OFFLINE")
            && stderr(&absent).contains("huggingface-cli download"),
        "{}",
        stderr(&absent)
    );
}

/// A local TCP listener standing in for the hub: counts the connections anything makes to it.
fn hub_tripwire() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&hits);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });
    (url, hits)
}

/// The bundle line of a `--dry-run` plan for case 001: (decision, path, rest of the line).
fn planned_bundle(out: &std::process::Output) -> (String, String) {
    let text = stdout(out);
    let line = text
        .lines()
        .find(|l| l.starts_with("001 "))
        .unwrap_or_else(|| panic!("no case line in {text}"))
        .to_owned();
    let after = line
        .split_once(" bundle ")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_else(|| panic!("no bundle in {line}"));
    let (how, rest) = after.split_once(": ").expect("decision: path");
    let path = rest.split(' ').next().expect("path").to_owned();
    (how.to_owned(), path)
}

#[test]
fn dry_runs_and_listing_stay_offline_and_hub_keys_survive_the_first_download() {
    let e = env();
    let home = e.root.join("hf");
    let catalog = e.root.join("catalog/hub-cnn");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    std::fs::write(
        catalog.join("MODEL.toml"),
        "name = \"hub-cnn\"\ntask_strategy = \"image_classification\"\ntest_manifests = [\"c.toml\"]\ntokenizer = \"hub:tokenizer.json\"\n[source]\nhf_repo = \"trtmc-test/tiny-cnn\"\nhf_file = \"model.onnx\"\n",
    )
    .expect("write");
    std::fs::write(
        catalog.join("c.toml"),
        "[[case]]\nname = \"one\"\n[case.request]\nseed = 1\n",
    )
    .expect("write");
    let root = e.root.join("catalog");
    let (hub_url, hits) = hub_tripwire();
    // Online (no HF_HUB_OFFLINE), with the hub pointed at the tripwire.
    let cmd = |args: &[&str]| {
        std::process::Command::new(BIN)
            .args(args)
            .arg("--manifest-root")
            .arg(&root)
            .env("HF_HOME", &home)
            .env("HF_ENDPOINT", &hub_url)
            .env_remove("HF_HUB_OFFLINE")
            .output()
            .expect("run")
    };
    let dry = || {
        cmd(&[
            "run",
            "--model",
            "hub-cnn",
            "--dry-run",
            "--bundle-cache",
            e.cache.to_str().expect("utf8"),
        ])
    };

    // Nothing cached: listing and planning say what the run will download, and download nothing.
    let list = cmd(&["list", "models", "--format", "json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&list)).expect("json");
    assert_valid("model-list.schema.json", &doc);
    assert_eq!(
        doc["models"][0]["needs_download"],
        serde_json::json!([
            "trtmc-test/tiny-cnn/model.onnx@main",
            "trtmc-test/tiny-cnn/tokenizer.json@main"
        ])
    );
    let table = cmd(&["list", "models"]);
    assert!(
        stdout(&table).contains("ready, needs download (trtmc-test/tiny-cnn/model.onnx@main"),
        "{}",
        stdout(&table)
    );
    let before = dry();
    assert_eq!(code(&before), 0, "{}", stderr(&before));
    assert!(
        stdout(&before).contains("the run downloads"),
        "{}",
        stdout(&before)
    );
    let (how, key_before) = planned_bundle(&before);
    assert_eq!(how, "would build");
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a dry run or a listing went to the network"
    );

    // The files arrive in the cache (as a download would put them): the key is the same.
    let model = trtmc_modelgen::generate("tiny-cnn", 3).expect("generate");
    fake_hub(&home, "trtmc-test/tiny-cnn", "model.onnx", &model);
    fake_hub(&home, "trtmc-test/tiny-cnn", "tokenizer.json", b"{}");
    let list = cmd(&["list", "models"]);
    assert!(
        !stdout(&list).contains("needs download"),
        "{}",
        stdout(&list)
    );
    let after = dry();
    assert_eq!(
        planned_bundle(&after),
        ("would build".to_owned(), key_before.clone())
    );
    let built = cmd(&[
        "run",
        "--model",
        "hub-cnn",
        "--iterations",
        "2",
        "--warmup",
        "0",
        "-q",
        "--bundle-cache",
        e.cache.to_str().expect("utf8"),
        "-o",
        e.root.join("first").to_str().expect("utf8"),
    ]);
    assert_eq!(code(&built), 0, "{}", stderr(&built));
    assert_eq!(
        planned_bundle(&dry()),
        ("cache hit".to_owned(), key_before.clone())
    );

    // The revision moves to another commit: same key, but the bundle is stale and rebuilt.
    let repo_dir = home.join("hub/models--trtmc-test--tiny-cnn");
    let moved = "fedcba9876543210fedcba9876543210fedcba98";
    let snapshot = repo_dir.join("snapshots").join(moved);
    std::fs::create_dir_all(&snapshot).expect("mkdir");
    std::fs::write(snapshot.join("model.onnx"), &model).expect("model");
    std::fs::write(snapshot.join("tokenizer.json"), b"{}").expect("tokenizer");
    std::fs::write(repo_dir.join("refs/main"), moved).expect("ref");
    assert_eq!(
        planned_bundle(&dry()),
        ("would build".to_owned(), key_before)
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no command went to the network"
    );
}

#[test]
fn several_onnx_files_and_plan_entries_run_side_by_side() {
    let e = env();
    let onnx = onnx_wheel_model("light_squeezenet.onnx");
    let copy = e.root.join("other").join("light_squeezenet.onnx");
    std::fs::create_dir_all(copy.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&onnx, &copy).expect("copy");
    let dir = e.root.join("two");
    let out = run(&[
        "run",
        "--onnx",
        onnx.to_str().expect("utf8"),
        "--onnx",
        copy.to_str().expect("utf8"),
        "--bundle-cache",
        e.cache.to_str().expect("utf8"),
        "--iterations",
        "10",
        "--warmup",
        "1",
        // Two models are two workloads: a verdict between them only when the baseline is explicit.
        "--baseline",
        "1",
        "-q",
        "-o",
        dir.to_str().expect("utf8"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let models: Vec<&str> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["model"].as_str().expect("model"))
        .collect();
    assert_eq!(
        models,
        ["light_squeezenet", "light_squeezenet-2"],
        "same stem, two names"
    );
    // Two cases: 10 rounds by default, one call each, then more at the looks (15, 22, 30) while the
    // verdict of this A/A pair is undecided.
    let rounds = doc["cases"][0]["rounds"].as_array().map_or(0, Vec::len);
    assert!([10, 15, 22, 30].contains(&rounds), "{rounds}");
    assert_eq!(doc["comparisons"][0]["rounds"], rounds, "{doc}");
    assert!(doc["comparisons"][0]["stopped_by"].is_string(), "{doc}");
    assert!(doc["comparisons"][0]["verdict"].is_string(), "{doc}");

    // A plan names an ONNX file relative to itself.
    let plan = e.root.join("other").join("plan.yaml");
    std::fs::write(
        &plan,
        "models:\n  - onnx: light_squeezenet.onnx\n    iterations: 2\n    warmup: 1\n",
    )
    .expect("plan");
    let planned = e.root.join("planned");
    let out = run(&[
        "run",
        plan.to_str().expect("utf8"),
        "--bundle-cache",
        e.cache.to_str().expect("utf8"),
        "-q",
        "-o",
        planned.to_str().expect("utf8"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&planned);
    assert_eq!(doc["cases"][0]["model"], "light_squeezenet");
    assert_eq!(doc["cases"][0]["operation"], "infer");
}
