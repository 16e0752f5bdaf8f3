//! Helpers shared by the integration tests: run the real binary, validate against the JSON Schemas.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_trtmc-bench");

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn test_catalog() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/catalog")
}

/// Runs trtmc-bench with `args`; the environment is cleared of settings that would redirect it.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench")
}

/// `run --manifest-root TEST_CATALOG --model MODEL` (a model of the test catalog) with `args` after it.
pub fn run_test_model(model: &str, args: &[&str]) -> Output {
    let catalog = test_catalog().display().to_string();
    run(&[
        &["run", "--manifest-root", &catalog, "--model", model],
        args,
    ]
    .concat())
}

/// The DOM of the report `page` after its sorting/filtering self-test ran in headless Chromium,
/// which must have finished without page errors and passed.
pub fn self_tested_dom(browser: &crate::chromium::Chromium, page: &Path) -> String {
    let url = crate::chromium::file_url(page, "selftest");
    let dom = browser.dump_dom(&url, &[]).stdout;
    let check = crate::chromium::self_check(&dom);
    assert!(dom.contains("data-report-ready=\"true\""), "{check}");
    assert!(dom.contains("data-report-errors=\"0\""), "{check}");
    assert!(dom.contains("data-selftest=\"pass\""), "{check}");
    dom
}

/// `run --manifest-root TEST_CATALOG --model MODEL` as a [`Command`] with [`run`]'s environment,
/// for a test that adds more arguments and starts it its own way (spawned, piped).
pub fn test_model_command(model: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--manifest-root"])
        .arg(test_catalog())
        .args(["--model", model])
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1");
    cmd
}

/// [`run`] with `--bundle-cache CACHE` (the bundles a test's runs share), and without an ONNX Runtime
/// library path from the caller's environment.
pub fn bench_cached(cache: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--bundle-cache")
        .arg(cache)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("ORT_DYLIB_PATH")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench")
}

/// `compare --model MODEL --runtime RUNTIME` with `args` after it, the bundles cached in `tmp/cache`.
pub fn compare_model(tmp: &Path, model: &str, runtime: &str, args: &[&str]) -> Output {
    let head = ["compare", "--model", model, "--runtime", runtime];
    bench_cached(&tmp.join("cache"), &[&head[..], args].concat())
}

/// `DIR/catalog` holding only tiny-cnn (so a matrix's coverage rule is about this model alone);
/// returns its path.
pub fn tiny_cnn_catalog(dir: &Path) -> PathBuf {
    let root = dir.join("catalog");
    let model = root.join("tiny-cnn");
    std::fs::create_dir_all(&model).expect("mkdir");
    for f in ["MODEL.toml", "e2e.toml"] {
        std::fs::copy(repo_root().join("catalog/tiny-cnn").join(f), model.join(f)).expect("copy");
    }
    root
}

/// `tune` of tiny-cnn on tract over two thread counts: the smallest tune with a choice to make.
pub const TUNE_TINY_CNN_THREADS: [&str; 7] = [
    "tune",
    "--model",
    "tiny-cnn",
    "--runtime",
    "tract",
    "--routes",
    "-threads=[1|2]",
];

/// `--set` arguments for each override in `sets`.
pub fn overrides_of<'a>(sets: &[&'a str]) -> Vec<&'a str> {
    sets.iter().flat_map(|s| ["--set", *s]).collect()
}

/// `COMMAND --model MODEL --case CASE --runtime RUNTIME`: one case of a catalog model on one runtime.
pub fn command_on_case<'a>(
    command: &'a str,
    (model, case, runtime): (&'a str, &'a str, &'a str),
) -> [&'a str; 7] {
    [
        command,
        "--model",
        model,
        "--case",
        case,
        "--runtime",
        runtime,
    ]
}

/// `compare --save-inputs TMP/ref-MODEL-CASE` for `model`/`case` as `runtime`'s runner prepares it (the
/// bundles cached in `TMP/cache`), with `sets` overrides; checks the request against its schema and
/// that it names the runner's per-call inputs, then cuts it to `warmup` and `calls` timed calls.
/// Returns the request's path.
pub fn save_reference_inputs(
    tmp: &Path,
    (model, case, runtime): (&str, &str, &str),
    sets: &[&str],
    (warmup, calls): (u64, u64),
) -> PathBuf {
    let dir = tmp.join(format!("ref-{model}-{case}"));
    let out = bench_cached(
        &tmp.join("cache"),
        &[
            &command_on_case("compare", (model, case, runtime))[..],
            &["--save-inputs", dir.to_str().expect("utf8")],
            overrides_of(sets).as_slice(),
        ]
        .concat(),
    );
    assert_eq!(code(&out), 0, "{model}/{case}: {}", stderr(&out));
    let path = dir.join("reference-request.json");
    let mut doc = read_json(&path);
    assert_valid("reference-request.schema.json", &doc);
    assert!(
        doc["operation_inputs"].is_string(),
        "{model}: the runner's per-call inputs are saved: {doc}"
    );
    doc["iterations"] = calls.into();
    doc["warmup"] = warmup.into();
    doc["min_duration_s"] = 0.0.into();
    std::fs::write(&path, doc.to_string()).expect("write");
    path
}

/// The ONNX Runtime Python reference (`reference/ort_reference.py REQUEST RESULT`) under
/// `$TRTMC_PYTHON` (default python3), with TRTMC_TEST=1 (its test hooks) and `env` added.
pub fn ort_reference(request: &Path, result: &Path, env: &[(&str, &Path)]) -> Output {
    let python = std::env::var("TRTMC_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(python)
        .arg(repo_root().join("reference/ort_reference.py"))
        .arg(request)
        .arg(result)
        .env("TRTMC_TEST", "1")
        .envs(env.iter().copied())
        .output()
        .expect("start python3")
}

/// `run --model MODEL -q` into `root/OUT` with `extra` arguments, the bundles cached in `root/cache`.
pub fn run_quietly(root: &Path, out: &str, model: &str, extra: &[&str]) -> Output {
    let cache = root.join("cache").display().to_string();
    let dir = root.join(out).display().to_string();
    let head = [
        "run",
        "--model",
        model,
        "--bundle-cache",
        &cache,
        "-o",
        &dir,
        "-q",
    ];
    run(&[&head[..], extra].concat())
}

/// `run --model MODEL -q` into `root/OUT` with `warmup` and `calls` timed calls, the bundles cached in
/// `root/cache`, and `extra` arguments; checks the result directory against its schemas and that every
/// case completed. Returns the result document's cases and the result directory.
pub fn run_completed(
    root: &Path,
    out: &str,
    model: &str,
    (warmup, calls): (&str, &str),
    extra: &[&str],
) -> (Vec<serde_json::Value>, PathBuf) {
    let dir = root.join(out);
    let timed = [&["--warmup", warmup, "--iterations", calls][..], extra].concat();
    let o = run_quietly(root, out, model, &timed);
    assert_eq!(code(&o), 0, "{model}: {}", stderr(&o));
    let doc = assert_result_dir_valid(&dir);
    let cases = doc["cases"].as_array().expect("cases").clone();
    for case in &cases {
        assert_eq!(case["status"], "completed", "{case}");
    }
    (cases, dir)
}

/// A matrix environment for tests, `DIR/env.yaml`: bundles and results below `dir`, python3, no free
/// storage needed, and `extra` YAML lines after those (e.g. `reference_dir: …`). Returns its path.
pub fn write_matrix_environment(dir: &Path, extra: &str) -> PathBuf {
    let env = dir.join("env.yaml");
    std::fs::write(
        &env,
        format!(
            "schema: trtmc.perf-environment/v1\nname: test\nexecutables: [python3]\nbundle_cache: {}\nresults_root: {}\nfree_storage_gib: 0\n{extra}",
            dir.join("bundles").display(),
            dir.join("results").display()
        ),
    )
    .expect("write env");
    env
}

/// Lines in a file so far (0 while it does not exist): progress of an append-only log.
pub fn cache_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Starts `cmd` with its standard output and error discarded (a run a test kills part-way).
pub fn spawn_silent(cmd: &mut Command) -> std::process::Child {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start")
}

/// Waits until `ready()` holds while `child` still runs, then kills it with SIGKILL and reaps it. The
/// child ending first, or `timeout` passing (`waiting_for` says what for), fails the test.
pub fn kill_9_when(
    child: &mut std::process::Child,
    timeout: std::time::Duration,
    waiting_for: &str,
    mut ready: impl FnMut() -> bool,
) {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the command ended before it was killed (waiting for {waiting_for})"
        );
        assert!(
            started.elapsed() < timeout,
            "waited {timeout:?} for {waiting_for}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
}

/// The entry of route `text` in a tuning summary's `routes`.
pub fn tune_route<'a>(summary: &'a serde_json::Value, text: &str) -> &'a serde_json::Value {
    summary["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .find(|r| r["route"] == text)
        .unwrap_or_else(|| panic!("route {text} missing in {}", summary["routes"]))
}

/// Starts `trtmc-bench analyze serve ARGS` and reads the first line it prints; returns the server, that
/// line, and the `host:port` of its `http://` address (empty when it names none).
pub fn start_analyze_serve(args: &[&str]) -> (std::process::Child, String, String) {
    use std::io::BufRead as _;
    let mut server = Command::new(BIN)
        .args(["analyze", "serve"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .map(str::to_owned)
        .unwrap_or_default();
    (server, line, addr)
}

/// `trtmc-bench analyze INPUT -o OUTPUT --quiet`, which must succeed; returns the analysis document.
pub fn analyze_into(input: &Path, output: &Path) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["analyze", input.to_str().expect("utf8")])
        .args(["-o", output.to_str().expect("utf8"), "--quiet"])
        .output()
        .expect("analyze");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    read_json(output)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Asserts that a command exited 0 (its standard error shown when it did not).
#[track_caller]
pub fn assert_success(output: &Output) {
    assert_eq!(code(output), 0, "{}", stderr(output));
}

/// The id of a process that has ended and been reaped: the owner of a leftover that a dead run left.
pub fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("reap");
    pid
}

/// Asserts that a command was refused: exit `expected` and `needle` in its standard error (both
/// streams are shown when it was not).
#[track_caller]
pub fn assert_refused(output: &Output, expected: i32, needle: &str) {
    assert_eq!(
        code(output),
        expected,
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
    assert!(
        stderr(output).contains(needle),
        "expected `{needle}` in stderr: {}",
        stderr(output)
    );
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Validates `instance` against `schemas/<name>`, panicking with every error.
pub fn assert_valid(schema_name: &str, instance: &serde_json::Value) {
    let schema = read_json(&repo_root().join("schemas").join(schema_name));
    assert_schema_holds(&schema, instance, schema_name);
}

/// Validates `instance` against the compiled `schema`, panicking with every error under `what`.
fn assert_schema_holds(schema: &serde_json::Value, instance: &serde_json::Value, what: &str) {
    let validator = jsonschema::validator_for(schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} violations:\n{}",
        errors.join("\n")
    );
}

/// Validates `instance` against the definition `def` of `schemas/<name>` (e.g. a matrix row, which
/// results.json's schema defines under `$defs/row`).
pub fn assert_valid_def(schema_name: &str, def: &str, instance: &serde_json::Value) {
    let mut schema = read_json(&repo_root().join("schemas").join(schema_name));
    let defs = schema["$defs"].take();
    assert!(defs.get(def).is_some(), "{schema_name} has no $defs/{def}");
    let wrapper = serde_json::json!({
        "$schema": schema["$schema"].clone(),
        "$defs": defs,
        "$ref": format!("#/$defs/{def}"),
    });
    assert_schema_holds(&wrapper, instance, &format!("{schema_name}#/$defs/{def}"));
}

/// Validates a real output against its JSON Schema and reads it as its Rust type: the schema and the
/// type in `trtmc_core::artifacts` must both accept what the program wrote.
pub fn assert_document<T: serde::de::DeserializeOwned>(
    schema_name: &str,
    instance: &serde_json::Value,
) -> T {
    assert_valid(schema_name, instance);
    serde_json::from_value(instance.clone()).unwrap_or_else(|e| {
        panic!(
            "{schema_name}: the document does not read as {}: {e}",
            std::any::type_name::<T>()
        )
    })
}

/// Every case directory of a result directory, sorted.
pub fn case_dirs(result: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(result)
        .expect("read result dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

pub fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .count()
}

/// Validates result.json, every resolved-case.json and every observations line of a result directory.
pub fn assert_result_dir_valid(result: &Path) -> serde_json::Value {
    let doc = read_json(&result.join("result.json"));
    let _: trtmc_core::artifacts::BenchmarkRun = assert_document("benchmark-run.schema.json", &doc);
    for case in doc["cases"].as_array().expect("cases") {
        let dir = result.join(case["dir"].as_str().expect("dir"));
        assert_valid(
            "resolved-case.schema.json",
            &read_json(&dir.join("resolved-case.json")),
        );
        if case["status"] == "completed" {
            let text =
                std::fs::read_to_string(dir.join("observations.jsonl")).expect("observations");
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).expect("observation line");
                let _: trtmc_core::artifacts::Observation =
                    assert_document("observation.schema.json", &v);
            }
            assert!(
                !dir.join("worker-request.json").exists(),
                "successful cases remove intermediates"
            );
            assert!(
                !dir.join("worker-result.json").exists(),
                "successful cases remove intermediates"
            );
        }
    }
    let html = std::fs::read_to_string(result.join("report.html")).expect("report.html");
    assert!(
        html.contains("<svg")
            || doc["cases"]
                .as_array()
                .is_some_and(|c| c.iter().all(|c| c["status"] != "completed"))
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "report must be self-contained"
    );
    doc
}

/// Every file below `dir`, recursively (none when it does not exist).
pub fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Writes an executable shell script (a wrapper standing in for a program) without the
/// "Text file busy" race; see `trtmc_testkit::write_script`.
#[cfg(unix)]
pub use trtmc_testkit::write_script;

/// The onnx wheel's backend test model folder `group/name` (model.onnx, test_data_set_0).
pub fn backend_model(group_and_name: &str) -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(onnx.__file__))",
        ])
        .output()
        .expect("python3 with onnx (scripts/test installs it)");
    assert!(out.status.success(), "{}", stderr(&out));
    let folder = PathBuf::from(stdout(&out).trim())
        .join("backend/test/data")
        .join(group_and_name);
    assert!(
        folder.join("model.onnx").is_file(),
        "the onnx wheel lacks {}",
        folder.display()
    );
    folder
}
