//! Hardening round 3, bounded input (issue 34 items 1–4, 10 and two of 12), through the binary: every
//! outside file a user names is read by one bounded reader (a device, a FIFO or an oversized file is
//! refused at once, naming the file; so are a `--bundle`'s manifest and its engine or archive); the limits table holds for values from MODEL.toml and from the
//! ONNX file's own declarations; a case's tensor memory, a generation's KV cache included, is
//! estimated before any worker; a chat
//! template has a budget; problems a worker would meet are found before it starts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// How long a refusal may take: it is decided before anything is built or run.
const PROMPTLY: Duration = Duration::from_secs(20);

/// Runs trtmc-bench with `args` and `envs`, killing it (and failing) when it takes longer than
/// [`PROMPTLY`]: an endless or blocking input must not hang the command.
fn bench_promptly(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("start trtmc-bench");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > PROMPTLY {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still ran after {PROMPTLY:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `-o OUT_DIR --bundle-cache CACHE`: where a real (not dry) run would write, which a refusal must
/// leave as it was.
fn into_out_and_cache<'a>(out_dir: &'a Path, cache: &'a Path) -> [&'a str; 4] {
    ["-o", s(out_dir), "--bundle-cache", s(cache)]
}

/// A FIFO at `dir/name` (nobody ever writes it: opening it for reading would block forever).
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
    assert!(made.success());
    path
}

/// A copy of the shipped catalog model `model` in `root/name`, its MODEL.toml changed by `edit`.
fn catalog_copy(root: &Path, model: &str, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let from = repo_root().join("catalog").join(model);
    let to = root.join(name);
    std::fs::create_dir_all(&to).expect("mkdir");
    for entry in std::fs::read_dir(&from).expect("ls").flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
    let manifest = to.join("MODEL.toml");
    let text = std::fs::read_to_string(&manifest).expect("read");
    let text = text.replace(
        &format!("name = \"{model}\""),
        &format!("name = \"{name}\""),
    );
    std::fs::write(&manifest, edit(text)).expect("write");
    to
}

/// `run --dry-run` of `model` in the catalog at `root`, with `extra`.
fn dry_run(root: &Path, model: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--manifest-root",
        s(root),
        "--model",
        model,
        "--dry-run",
    ];
    args.extend_from_slice(extra);
    bench_promptly(&args, &[])
}

fn assert_refused(out: &Output, want: i32, says: &[&str]) {
    let err = stderr(out);
    assert_eq!(code(out), want, "{err}");
    for piece in says {
        assert!(err.contains(piece), "`{piece}` missing from: {err}");
    }
}

#[test]
fn special_files_named_in_a_catalog_are_refused_without_blocking() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("catalog");
    let pipe = fifo(t.path(), "pipe");
    for (special, what) in [
        (Path::new("/dev/zero"), "character device"),
        (&pipe, "FIFO"),
    ] {
        let sp = s(special);
        // A test manifest, a tokenizer file and the model's own path.
        catalog_copy(&root, "tiny-cnn", "manifest", |m| {
            m.replace("[\"e2e.toml\"]", &format!("[\"{sp}\"]"))
        });
        catalog_copy(&root, "tiny-gpt", "tokenizer", |m| {
            m.replace(
                "tokenizer = \"bytes\"",
                &format!("tokenizer = \"file:{sp}\""),
            )
        });
        catalog_copy(&root, "tiny-cnn", "path", |m| {
            m.replace(
                "builtin = \"tiny-cnn\"\nseed = 20240917",
                &format!("path = \"{sp}\""),
            )
        });
        // Listing the catalog finishes and shows each profile as unsupported, naming the file.
        let listed = bench_promptly(&["list", "models", "--manifest-root", s(&root)], &[]);
        assert_eq!(code(&listed), 0, "{}", stderr(&listed));
        for model in ["manifest", "tokenizer", "path"] {
            let out = dry_run(&root, model, &[]);
            assert_refused(&out, 3, &[sp, what, "regular file"]);
        }
        std::fs::remove_dir_all(&root).expect("rm");
    }
}

#[test]
fn special_and_oversized_files_given_on_the_command_line_are_refused() {
    let t = tempfile::tempdir().expect("tmp");
    let pipe = fifo(t.path(), "pipe.yaml");
    // A run plan.
    for plan in [Path::new("/dev/zero"), &pipe] {
        let out = bench_promptly(&["run", s(plan), "--dry-run"], &[]);
        assert_refused(&out, 3, &[s(plan), "not a regular file"]);
    }
    let big = t.path().join("big.yaml");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(65 << 20))
        .expect("sparse file");
    let out = bench_promptly(&["run", s(&big), "--dry-run"], &[]);
    assert_refused(&out, 3, &[s(&big), "67108864 bytes", "name a smaller file"]);

    // `--inputs` data of an ONNX model.
    let onnx = t.path().join("cnn.onnx");
    std::fs::write(
        &onnx,
        trtmc_modelgen::generate("tiny-cnn", 5).expect("model"),
    )
    .expect("onnx");
    let npy = fifo(t.path(), "image.npy");
    let out = bench_promptly(
        &["run", "--onnx", s(&onnx), "--inputs", s(&npy), "--dry-run"],
        &[],
    );
    assert_refused(&out, 3, &[s(&npy), "FIFO"]);

    // A request's image (an artifact file of the case).
    let image = fifo(t.path(), "cat.png");
    let set = format!("request.image={}", s(&image));
    let out = bench_promptly(
        &["run", "--model", "tiny-cnn", "--set", &set, "--dry-run"],
        &[],
    );
    assert_refused(&out, 3, &[s(&image), "FIFO"]);

    // Analyzer inputs: the backend fails validation (or the command is refused) naming the file.
    for data in [Path::new("/dev/zero"), &fifo(t.path(), "layers.json")] {
        let out = bench_promptly(&["analyze", "--data", s(data), "--quiet"], &[]);
        let said = stdout(&out) + &stderr(&out);
        assert!(
            said.contains(s(data)) && said.contains("not a regular file"),
            "{said}"
        );
    }

    // A matrix suite and environment.
    let env = write_matrix_environment(t.path(), "");
    let suite = fifo(t.path(), "suite.yaml");
    let out = bench_promptly(
        &["matrix", "check", s(&suite), "--environment", s(&env)],
        &[],
    );
    assert_refused(&out, 3, &[s(&suite), "FIFO"]);
    let shipped = repo_root().join("benchmarks/performance/release.yaml");
    let out = bench_promptly(
        &["matrix", "check", s(&shipped), "--environment", "/dev/zero"],
        &[],
    );
    assert_refused(&out, 3, &["/dev/zero", "character device"]);
}

/// A hand-made bundle folder `root/name` for `runtime`: a bundle.json naming `artifact` (the file
/// itself is left to the caller).
fn bundle_folder(root: &Path, name: &str, runtime: &str, artifact: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let manifest = serde_json::json!({
        "schema": "trtmc.bundle/v1",
        "key": "0".repeat(64),
        "model": "tiny-cnn",
        "runtime": {"name": runtime, "version": "1"},
        "arch": std::env::consts::ARCH,
        "target": "cpu",
        "artifact": artifact,
        "build_settings": {},
        "inputs": [],
        "outputs": [],
        "created": "2026-12-04T00:00:00Z",
        "build_seconds": 0.0,
    });
    std::fs::write(dir.join("bundle.json"), manifest.to_string()).expect("bundle.json");
    dir
}

#[test]
fn bundles_and_engines_given_with_bundle_are_read_bounded() {
    let t = tempfile::tempdir().expect("tmp");
    let run_bundle = |bundle: &Path, extra: &[&str]| {
        let mut args = vec!["run", "--bundle", s(bundle), "--dry-run"];
        args.extend_from_slice(extra);
        bench_promptly(&args, &[("TRTMC_SIM_VERSION", Path::new("101601"))])
    };
    // The artifact a worker would open is a FIFO.
    let tract = bundle_folder(t.path(), "fifo-artifact.bundle", "tract", "model.nnef.tar");
    let artifact = fifo(&tract, "model.nnef.tar");
    let tiny_cnn = ["--model", "tiny-cnn", "--runtime", "tract"];
    let out = run_bundle(&tract, &tiny_cnn);
    assert_refused(&out, 3, &[s(&artifact), "FIFO", "regular file"]);

    // bundle.json itself a FIFO, then an oversized one.
    let dir = t.path().join("fifo-manifest.bundle");
    std::fs::create_dir(&dir).expect("mkdir");
    let manifest = fifo(&dir, "bundle.json");
    let out = run_bundle(&dir, &tiny_cnn);
    assert_refused(&out, 3, &[s(&manifest), "FIFO"]);
    std::fs::remove_file(&manifest).expect("rm fifo");
    std::fs::File::create(&manifest)
        .and_then(|f| f.set_len(65 << 20))
        .expect("sparse file");
    let out = run_bundle(&dir, &tiny_cnn);
    assert_refused(
        &out,
        3,
        &[s(&manifest), "67108864 bytes", "name a smaller file"],
    );

    // A TensorRT engine that trtexec would --loadEngine: a FIFO, then an oversized (sparse) one;
    // refused before trtexec is asked anything about the bundle.
    let standin = Path::new(BIN).with_file_name("trtexec-standin");
    let trt = bundle_folder(t.path(), "engine.bundle", "tensorrt", "model.plan");
    let engine = fifo(&trt, "model.plan");
    let onnx = t.path().join("cnn.onnx");
    std::fs::write(
        &onnx,
        trtmc_modelgen::generate("tiny-cnn", 5).expect("model"),
    )
    .expect("onnx");
    let trt_args = [
        "--onnx",
        s(&onnx),
        "--runtime",
        "tensorrt",
        "--trtexec",
        s(&standin),
        "--set",
        "build.dims.batch=1",
    ];
    let out = run_bundle(&trt, &trt_args);
    assert_refused(&out, 3, &[s(&engine), "FIFO"]);
    std::fs::remove_file(&engine).expect("rm fifo");
    std::fs::File::create(&engine)
        .and_then(|f| f.set_len((64 << 30) + 1))
        .expect("sparse engine");
    let out = run_bundle(&trt, &trt_args);
    assert_refused(
        &out,
        3,
        &[s(&engine), "68719476736 bytes", "name a smaller file"],
    );
}

#[test]
fn limits_hold_for_values_from_model_toml() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("catalog");
    catalog_copy(&root, "tiny-cnn", "negative-shape", |m| {
        m + "[build.shapes]\nimage = [-1, 3, 64, 64]\n"
    });
    catalog_copy(&root, "tiny-cnn", "huge-shape", |m| {
        m + "[build.shapes]\nimage = [1, 3, 65536, 65536]\n"
    });
    catalog_copy(&root, "tiny-gpt", "huge-kv", |m| {
        m.replace("kv_cache_length = 256", "kv_cache_length = 10000000")
    });
    let out = dry_run(&root, "negative-shape", &[]);
    assert_refused(&out, 3, &["MODEL.toml [build.shapes] image", "-1"]);
    let out = dry_run(&root, "huge-shape", &[]);
    assert_refused(&out, 3, &["MODEL.toml [build.shapes] image", "2³¹"]);
    let out = dry_run(&root, "huge-kv", &[]);
    assert_refused(&out, 3, &["kv_cache_length", "10000000", "1048576"]);
    // Not only the dry run: a real run stops before any build or result directory.
    let out_dir = t.path().join("out");
    let out = bench_promptly(
        &[
            "run",
            "--manifest-root",
            s(&root),
            "--model",
            "negative-shape",
            "-o",
            s(&out_dir),
        ],
        &[],
    );
    assert_refused(&out, 3, &["-1"]);
    assert!(!out_dir.exists());
}

/// An ONNX model of one `Add` of two f32 inputs declared with `dims` (an output of the same shape),
/// written with python3's `onnx`.
fn onnx_add(path: &Path, dims: &str) {
    let script = format!(
        "import onnx, sys\n\
         from onnx import helper, TensorProto\n\
         d = {dims}\n\
         x = helper.make_tensor_value_info('x', TensorProto.FLOAT, d)\n\
         y = helper.make_tensor_value_info('y', TensorProto.FLOAT, d)\n\
         z = helper.make_tensor_value_info('z', TensorProto.FLOAT, d)\n\
         g = helper.make_graph([helper.make_node('Add', ['x', 'y'], ['z'])], 'g', [x, y], [z])\n\
         m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])\n\
         m.ir_version = 8\n\
         onnx.save(m, sys.argv[1])\n"
    );
    let made = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .status()
        .expect("python3");
    assert!(
        made.success(),
        "python3 onnx could not write {}",
        path.display()
    );
}

#[test]
fn shapes_declared_inside_an_onnx_file_are_bounded_and_memory_is_estimated_first() {
    let t = tempfile::tempdir().expect("tmp");
    let wide = t.path().join("wide.onnx");
    onnx_add(&wide, "[65536, 65536]");
    let out_dir = t.path().join("out");
    let out = bench_promptly(&["run", "--onnx", s(&wide), "-o", s(&out_dir)], &[]);
    assert_refused(&out, 3, &["input `x`", "[65536,65536]", "2³¹"]);
    assert!(!out_dir.exists());
    let max = t.path().join("max.onnx");
    onnx_add(&max, &format!("[1, {}]", i64::MAX));
    let out = bench_promptly(&["run", "--onnx", s(&max), "-o", s(&out_dir)], &[]);
    assert_refused(&out, 3, &["input `x`", &i64::MAX.to_string(), "1048576"]);
    assert!(!out_dir.exists());

    // Each tensor fits, all three do not: refused by the memory bound, which a flag raises.
    let large = t.path().join("large.onnx");
    onnx_add(&large, "[46000, 46000]");
    let out = bench_promptly(&["run", "--onnx", s(&large), "-o", s(&out_dir)], &[]);
    assert_refused(
        &out,
        3,
        &[
            "23.6 GiB",
            "16 GiB",
            "--max-tensor-memory-gib",
            "input `x` 7.9 GiB",
        ],
    );
    assert!(!out_dir.exists());
    let out = bench_promptly(
        &[
            "run",
            "--onnx",
            s(&large),
            "--max-tensor-memory-gib",
            "32",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A shape given on the command line counts in the estimate too.
    let small = t.path().join("small.onnx");
    onnx_add(&small, "['n', 4]");
    let out = bench_promptly(
        &[
            "run",
            "--onnx",
            s(&small),
            "--shape",
            "x:1000000x4",
            "--shape",
            "y:1000000x4",
            "--max-tensor-memory-gib",
            "0.01",
            "--dry-run",
        ],
        &[],
    );
    assert_refused(&out, 3, &["0.01 GiB", "input `x`"]);
}

#[test]
fn a_runaway_chat_template_stops_at_its_budget_naming_the_file() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("catalog");
    for (name, template, limit) in [
        (
            "loops",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "TEMPLATE_FUEL",
        ),
        (
            "prints",
            "{% for i in range(100000) %}{% for j in range(100000) %}{{ 'xxxxxxxxxx' }}{% endfor %}{% endfor %}",
            "MOST_TEMPLATE_OUTPUT_BYTES",
        ),
    ] {
        let dir = catalog_copy(&root, "tiny-gpt", name, |m| m);
        std::fs::write(dir.join("chat_template.jinja"), template).expect("template");
        let started = Instant::now();
        let out = dry_run(&root, name, &["--case", "chat"]);
        let file = dir.join("chat_template.jinja");
        assert_refused(&out, 3, &[s(&file), limit]);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn what_a_worker_would_refuse_is_refused_before_any_worker() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("catalog");
    let out_dir = t.path().join("out");
    let cache = t.path().join("cache");
    let real_run = |model: &str, extra: &[&str]| {
        let mut args = vec!["run", "--manifest-root", s(&root), "--model", model];
        args.extend(into_out_and_cache(&out_dir, &cache));
        args.extend_from_slice(extra);
        bench_promptly(&args, &[])
    };
    // A tokenizer file that is not a tokenizer.json.
    let dir = catalog_copy(&root, "tiny-gpt", "bad-tokenizer", |m| {
        m.replace(
            "tokenizer = \"bytes\"",
            "tokenizer = \"file:tokenizer.json\"",
        )
    });
    std::fs::write(dir.join("tokenizer.json"), "this is not JSON").expect("write");
    let out = real_run("bad-tokenizer", &[]);
    assert_refused(&out, 3, &["tokenizer.json", "cannot read tokenizer"]);
    assert!(
        !out_dir.exists() && !cache.exists(),
        "a worker or build ran"
    );
    // A prompt longer than the KV cache.
    catalog_copy(&root, "tiny-gpt", "short-cache", |m| m);
    let out = real_run(
        "short-cache",
        &["--case", "greedy", "--set", "build.kv_cache_length=8"],
    );
    assert_refused(
        &out,
        3,
        &["exceeds the KV-cache length 8", "build.kv_cache_length"],
    );
    assert!(
        !out_dir.exists() && !cache.exists(),
        "a worker or build ran"
    );

    // `tune --save-bundle` into a symlink: refused before the tune measures anything.
    let onnx = t.path().join("cnn.onnx");
    std::fs::write(
        &onnx,
        trtmc_modelgen::generate("tiny-cnn", 5).expect("model"),
    )
    .expect("onnx");
    let link = t.path().join("link");
    std::os::unix::fs::symlink(t.path(), &link).expect("symlink");
    let tune_out = t.path().join("tune");
    let out = bench_promptly(
        &[
            "tune",
            "--onnx",
            s(&onnx),
            "--dim",
            "batch=1",
            "--runtime",
            "tract",
            "--routes",
            "-threads=[1|2]",
            "-o",
            s(&tune_out),
            "--save-bundle",
            s(&link),
            "--bundle-cache",
            s(&cache),
        ],
        &[],
    );
    assert_refused(&out, 6, &[s(&link), "not a directory"]);
    assert!(!cache.exists(), "the tune built a bundle before refusing");

    // `matrix check`: a bundle cache that is a file, a `python` that prints no version.
    let shipped = repo_root().join("benchmarks/performance/release.yaml");
    for (extra, says) in [
        (
            "bundle_cache: /etc/passwd\n",
            "/etc/passwd is not a directory",
        ),
        ("python: /bin/false\n", "/bin/false --version"),
    ] {
        let env = t.path().join("env.yaml");
        let base = std::fs::read_to_string(
            repo_root().join("benchmarks/performance/environments/cpu.yaml"),
        )
        .expect("cpu.yaml");
        let kept: String = base
            .lines()
            .filter(|l| !l.starts_with(extra.split(':').next().unwrap_or_default()))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&env, kept + extra).expect("env");
        let out = bench_promptly(
            &["matrix", "check", s(&shipped), "--environment", s(&env)],
            &[],
        );
        assert_refused(&out, 7, &[says]);
    }
}

#[test]
fn a_generation_whose_kv_cache_cannot_fit_is_refused_before_any_build_or_worker() {
    let t = tempfile::tempdir().expect("tmp");
    let out_dir = t.path().join("out");
    let cache = t.path().join("cache");
    // The largest request the limits table allows, and a cache long enough to take it.
    let huge = [
        "--case",
        "greedy",
        "--set",
        "request.max_new_tokens=1000000",
        "--set",
        "build.kv_cache_length=1048576",
    ];
    let real_run = |model: &str, extra: &[&str]| {
        let mut args = vec!["run", "--model", model];
        args.extend(into_out_and_cache(&out_dir, &cache));
        args.extend_from_slice(&huge);
        args.extend_from_slice(extra);
        bench_promptly(&args, &[])
    };
    // SmolLM-135M's shape (30 layers × key and value × 3 heads × 64 × f32 = 46,080 bytes a
    // token): about 43 GiB for a million tokens, above the default 16 GiB bound.
    let out = real_run("llama", &[]);
    assert_refused(
        &out,
        3,
        &[
            "KV cache",
            "46080 bytes a token",
            "request.max_new_tokens 1000000",
            "16 GiB bound",
            "--max-tensor-memory-gib",
        ],
    );
    assert!(
        !out_dir.exists() && !cache.exists(),
        "a worker or build ran"
    );
    // tiny-gpt's cache (1,024 bytes a token, about 1 GiB here) passes the default bound and is
    // refused under a lower one.
    let mut args = vec!["run", "--model", "tiny-gpt", "--dry-run"];
    args.extend_from_slice(&huge);
    let out = bench_promptly(&args, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = real_run("tiny-gpt", &["--max-tensor-memory-gib", "0.5"]);
    assert_refused(
        &out,
        3,
        &["KV cache", "1024 bytes a token", "0.5 GiB bound"],
    );
    assert!(
        !out_dir.exists() && !cache.exists(),
        "a worker or build ran"
    );
}

/// Declared samples are prepared call by call (issue 34 item 11): a sample whose image cannot be
/// decoded costs nothing while no call reaches it, and fails the call that does, naming it.
#[test]
fn declared_samples_are_prepared_only_for_the_calls_made() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("catalog");
    let dir = catalog_copy(&root, "tiny-cnn", "lazy-cnn", |m| m);
    std::fs::write(dir.join("broken.png"), "not a PNG").expect("write");
    let cache = t.path().join("cache");
    let run_calls = |iterations: &str| {
        let out = t.path().join(format!("out-{iterations}"));
        Command::new(BIN)
            .args([
                "run",
                "--manifest-root",
                s(&root),
                "--model",
                "lazy-cnn",
                "--case",
                "single",
                "--set",
                r#"request.samples=[{"seed":1},{"seed":2},{"image":"broken.png"}]"#,
                "--warmup",
                "0",
                "--iterations",
                iterations,
                "--bundle-cache",
                s(&cache),
                "-o",
                s(&out),
            ])
            .env_remove("TRTMC_MANIFEST_ROOT")
            .env("TRTMC_TEST", "1")
            .output()
            .expect("run")
    };
    let out = run_calls("2");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run_calls("3");
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let result = read_json(&t.path().join("out-3/result.json"));
    let error = result["cases"][0]["error"].to_string();
    assert!(
        error.contains("request.samples[2]") && error.contains("broken.png"),
        "{result}"
    );
}

#[test]
fn a_killed_unpacks_folder_is_removed_by_the_next_command() {
    let t = tempfile::tempdir().expect("tmp");
    let cache = t.path().join("xdg");
    let envs = [("XDG_CACHE_HOME", cache.as_path())];
    let listed = bench_promptly(&["list", "models"], &envs);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let share = cache.join("trtmc/share");
    let digest = std::fs::read_dir(&share)
        .expect("share")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| !n.starts_with('.'))
        .expect("the unpacked share");
    // What a run killed mid-unpack leaves: a staging folder whose owner is gone.
    let mut reaped = Command::new("true").spawn().expect("true");
    let dead = reaped.id();
    reaped.wait().expect("reap");
    let stale = share.join(format!(".{digest}-unpacking.tmp-{dead}"));
    std::fs::create_dir_all(stale.join("catalog")).expect("mkdir");
    let listed = bench_promptly(&["list", "models"], &envs);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(!stale.exists(), "the dead unpack's folder stayed");
}

#[test]
fn a_negative_average_time_fails_analyze_validation_naming_the_layer() {
    let t = tempfile::tempdir().expect("tmp");
    let trex = repo_root().join("tests/fixtures/trex");
    let layers = trex.join("resnet18-pt-a100-fp16.layers.json");
    let mut profile: serde_json::Value =
        read_json(&trex.join("resnet18-pt-a100-fp16.profile.json"));
    profile[2]["averageMs"] = serde_json::json!(-0.5);
    let layer = profile[2]["name"].as_str().expect("name").to_string();
    let changed = t.path().join("negative.profile.json");
    std::fs::write(&changed, profile.to_string()).expect("write");
    let out = bench_promptly(
        &["analyze", "--quiet", "--data", s(&layers), s(&changed)],
        &[],
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["validation"]["status"], "failed", "{doc}");
    let text = doc["backends"][0]["validation"].to_string();
    assert!(
        text.contains(&layer) && text.contains("negative `averageMs`"),
        "{text}"
    );
}
