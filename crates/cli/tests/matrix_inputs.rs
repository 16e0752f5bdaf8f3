//! A matrix row on your own model with your own data (docs/matrix.md, *Rows with their own data*):
//! `inputs:` feed both sides — the candidate's `run`, a `trtmc:` reference's `run`, and the Python
//! reference's request — and `check_outputs:` fails a row whose outputs do not match, naming the
//! output. On the onnx wheel's backend test model `pytorch-converted/test_Conv2d` and its
//! `test_data_set_0`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use serde_json::Value;

/// The onnx wheel's `backend/test/data/pytorch-converted/test_Conv2d` folder.
fn conv2d_folder() -> PathBuf {
    backend_model("pytorch-converted/test_Conv2d")
}

/// A catalog with one profile, `conv2d`, whose source is the backend test model.
fn catalog(dir: &Path, model: &Path) -> PathBuf {
    let root = dir.join("catalog");
    let profile = root.join("conv2d");
    std::fs::create_dir_all(&profile).expect("mkdir");
    std::fs::copy(model, profile.join("model.onnx")).expect("copy model");
    std::fs::write(
        profile.join("MODEL.toml"),
        "name = \"conv2d\"\nfamily = \"conv2d\"\nsummary = \"backend test Conv2d\"\ntask_strategy = \"onnx_inference\"\nruntime_strategy = \"tract\"\nreference_precision = \"fp32\"\ntest_manifests = [\"e2e.toml\"]\n\n[source]\npath = \"model.onnx\"\n\n[build]\nprecision = \"fp32\"\n",
    )
    .expect("MODEL.toml");
    std::fs::write(
        profile.join("e2e.toml"),
        "[[case]]\nname = \"single\"\nsummary = \"one call\"\n[case.measure]\nwarmup = 1\niterations = 8\n",
    )
    .expect("e2e.toml");
    root
}

fn suite(dir: &Path, name: &str, rows: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "schema: trtmc.perf-suite/v1\nname: {name}\nthresholds: {{green_max: 1.5, yellow_max: 3.0, min_samples: 4}}\nmeasure: {{warmup: 1, iterations: 8, rounds: 2}}\nrows:\n{rows}"
        ),
    )
    .expect("write suite");
    path
}

fn matrix(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("matrix")
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench")
}

/// `matrix run SUITE` with the test's environment and catalog into `out`.
fn matrix_run(suite: &Path, env: &Path, catalog: &Path, out: &Path) -> Output {
    let (s, e, c, o) = (
        suite.display().to_string(),
        env.display().to_string(),
        catalog.display().to_string(),
        out.display().to_string(),
    );
    matrix(&[
        "run",
        &s,
        "--environment",
        &e,
        "--manifest-root",
        &c,
        "-o",
        &o,
    ])
}

fn row(candidate: &str, reference: &str, data: &str) -> String {
    format!(
        "  - entry: conv2d.infer\n    model: conv2d\n    testcase: single\n    candidate: {{runtime: {candidate}}}\n    reference: {{backend: \"{reference}\"}}\n{data}"
    )
}

/// The float32 elements of a raw little-endian file.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The float32 elements of the backend set's `input_0.pb` (its raw_data), through python's onnx.
fn backend_input(folder: &Path, out: &Path) -> Vec<f32> {
    let script = "import onnx, sys\nfrom onnx import numpy_helper\nt = onnx.TensorProto()\nt.ParseFromString(open(sys.argv[1], 'rb').read())\nnumpy_helper.to_array(t).astype('<f4').tofile(sys.argv[2])";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(folder.join("test_data_set_0/input_0.pb"))
        .arg(out)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", stderr(&o));
    f32s(&std::fs::read(out).expect("read raw input"))
}

#[test]
fn a_row_feeds_its_own_data_to_both_sides_and_checks_the_outputs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = conv2d_folder();
    let catalog = catalog(tmp.path(), &folder.join("model.onnx"));
    let env = write_matrix_environment(tmp.path(), "");
    // The data beside the suite, named relative to it.
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    for f in ["input_0.pb", "output_0.pb"] {
        std::fs::copy(folder.join("test_data_set_0").join(f), data.join(f)).expect("copy set");
    }
    let rows = [
        row(
            "tract",
            "onnxruntime-python",
            "    inputs: data\n    check_outputs: data\n",
        ),
        row(
            "onnxruntime",
            "trtmc:tract",
            "    inputs: data\n    check_outputs: data\n    atol: 0.001\n",
        ),
    ]
    .concat();
    let suite = suite(tmp.path(), "own-data", &rows);
    let out = tmp.path().join("run");
    let ran = matrix_run(&suite, &env, &catalog, &out);
    assert_eq!(code(&ran), 0, "{}\n{}", stdout(&ran), stderr(&ran));
    let results = read_json(&out.join("results.json"));
    let rows = results["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{results}");
    let expected_input = backend_input(&folder, &tmp.path().join("input.f32"));
    for r in rows {
        // Compared, not a contract mismatch: both sides' identities carry the same data.
        assert_eq!(r["status"], "compared", "{r}");
        let attempt = out.join(r["attempt_dir"].as_str().expect("attempt_dir"));
        // The candidate fed the data and its outputs matched (the output check of `run`).
        let candidate = find_result(&attempt.join("candidate-1"));
        let case = &candidate["cases"][0];
        assert_eq!(case["output_check"][0]["passed"], true, "{case}");
        let resolved = read_json(
            &attempt
                .join("candidate-1")
                .join(case["dir"].as_str().expect("dir"))
                .join("resolved-case.json"),
        );
        assert_eq!(
            resolved["data"]["inputs"][0]["source"],
            Value::from(data.display().to_string()),
            "resolved against the suite's folder"
        );
        if r["reference"]["backend"] == "onnxruntime-python" {
            // The Python reference's request feeds the same tensor, element for element.
            let request = read_json(&attempt.join("reference/reference-request.json"));
            let index = read_json(Path::new(request["inputs"].as_str().expect("inputs")));
            let file = index["inputs"][0]["file"].as_str().expect("file");
            let fed = f32s(
                &std::fs::read(attempt.join("reference").join(file)).expect("reference input"),
            );
            assert_eq!(fed, expected_input, "the reference fed the row's data");
        }
    }
}

/// The result document `run -o DIR` wrote.
fn find_result(dir: &Path) -> Value {
    read_json(&dir.join("result.json"))
}

#[test]
fn a_row_whose_outputs_do_not_match_fails_naming_the_output_and_check_names_missing_data() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = conv2d_folder();
    let catalog = catalog(tmp.path(), &folder.join("model.onnx"));
    let env = write_matrix_environment(tmp.path(), "");
    // Expected outputs that are the real ones plus 1 everywhere.
    let wrong = tmp.path().join("wrong.npz");
    let script = "import onnx, sys, numpy as np\nfrom onnx import numpy_helper\nt = onnx.TensorProto()\nt.ParseFromString(open(sys.argv[1], 'rb').read())\nnp.savez(sys.argv[2], **{'3': numpy_helper.to_array(t) + 1})";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(folder.join("test_data_set_0/output_0.pb"))
        .arg(&wrong)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", stderr(&o));
    let set = folder.join("test_data_set_0").display().to_string();
    let rows = row(
        "tract",
        "trtmc:onnxruntime",
        &format!("    inputs: {set}\n    check_outputs: wrong.npz\n"),
    );
    let suite_path = suite(tmp.path(), "mismatch", &rows);
    let out = tmp.path().join("run");
    let ran = matrix_run(&suite_path, &env, &catalog, &out);
    let results = read_json(&out.join("results.json"));
    let r = &results["rows"][0];
    assert_eq!(r["status"], "failed", "{r}\n{}", stderr(&ran));
    let message = r["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("output `3` (set 0) differs from the expected outputs"),
        "the failure names the output: {message}"
    );

    // A missing data file is a finding of `matrix check`, naming the row and the key.
    let rows = row("tract", "trtmc:onnxruntime", "    inputs: no-such-data\n");
    let missing = suite(tmp.path(), "missing", &rows);
    let (m, e, c) = (
        missing.display().to_string(),
        env.display().to_string(),
        catalog.display().to_string(),
    );
    let checked = matrix(&["check", &m, "--environment", &e, "--manifest-root", &c]);
    assert_ne!(code(&checked), 0, "{}", stdout(&checked));
    let said = format!("{}{}", stdout(&checked), stderr(&checked));
    assert!(
        said.contains("conv2d.infer/conv2d/single/tract")
            && said.contains("inputs `no-such-data` does not exist"),
        "{said}"
    );
}
