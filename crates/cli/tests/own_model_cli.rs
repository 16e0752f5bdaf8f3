//! Your own model through the real binary (docs/run.md, "Your own model"): real inputs (`--inputs`
//! in every format), checked outputs (`--check-outputs`, `--atol`, `--rtol`), dynamic dimensions on
//! every runtime, and the inputs `--dry-run` lists — on the onnx wheel's backend test models.
//! Needs python3 with onnx, numpy and onnxruntime (scripts/test installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// Runs a python3 script with `args` (sys.argv[1:]); its stdout.
fn python(script: &str, args: &[&Path]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 must be installed (scripts/test installs onnx and numpy)");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// trtmc-bench with a private bundle cache under `tmp`.
fn bench(tmp: &Path, args: &[&str]) -> Output {
    bench_cached(&tmp.join("cache"), args)
}

fn model_of(folder: &Path) -> String {
    folder.join("model.onnx").display().to_string()
}

fn set_of(folder: &Path) -> String {
    folder.join("test_data_set_0").display().to_string()
}

/// Writes `name.npz` under `dir` from the backend folder's test_data_set_0 tensors (inputs or
/// outputs by `prefix`), each transformed by the python expression `transform` of `a` (the array;
/// `bump(a)` adds 1 to its element 5).
fn npz_from_set(dir: &Path, name: &str, folder: &Path, prefix: &str, transform: &str) -> PathBuf {
    let file = dir.join(name);
    let script = format!(
        r#"
import glob, os, sys
import numpy as np, onnx
from onnx import numpy_helper
def bump(a):
    a = a.copy()
    a.flat[5] += 1.0
    return a
m = onnx.load(os.path.join(sys.argv[1], "model.onnx"))
init = {{i.name for i in m.graph.initializer}}
names = [v.name for v in (m.graph.input if "{prefix}" == "input_" else m.graph.output) if v.name not in init]
arrays = {{}}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "test_data_set_0", "{prefix}*.pb"))):
    t = onnx.TensorProto()
    t.ParseFromString(open(f, "rb").read())
    n = int(os.path.basename(f)[len("{prefix}"):-3])
    a = numpy_helper.to_array(t)
    arrays[t.name or names[n]] = {transform}
np.savez(sys.argv[2], **arrays)
"#
    );
    python(&script, &[folder, &file]);
    file
}

fn only_case(doc: &serde_json::Value) -> &serde_json::Value {
    &doc["cases"][0]
}

/// One round of three iterations after one warm-up: a short run that still measures.
const ONE_SHORT_ROUND: [&str; 6] = ["--rounds", "1", "--warmup", "1", "--iterations", "3"];

/// Two iterations and no warm-up: enough where the outputs, not the timings, are checked.
const TWO_ITERATIONS: [&str; 4] = ["--warmup", "0", "--iterations", "2"];

/// `run --onnx MODEL ARGS.. -o OUT`: a run whose result directory the test then reads.
fn run_into(tmp: &Path, model: &str, args: &[&str], out: &Path) -> Output {
    let mut all = vec!["run", "--onnx", model];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().expect("utf-8")]);
    bench(tmp, &all)
}

/// The backend model in `folder` fed `inputs` and checked against `expected`, with `extra`
/// arguments, for two iterations into `out`.
fn check_outputs(
    tmp: &Path,
    folder: &Path,
    inputs: &str,
    expected: &str,
    extra: &[&str],
    out: &Path,
) -> Output {
    let mut args = vec!["--inputs", inputs, "--check-outputs", expected];
    args.extend_from_slice(extra);
    args.extend(TWO_ITERATIONS);
    run_into(tmp, &model_of(folder), &args, out)
}

/// `run --onnx M/model.onnx --inputs M/test_data_set_0 --check-outputs M/test_data_set_0` on each
/// runtime given, in one result directory `out`.
fn run_backend_model(tmp: &Path, folder: &Path, runtimes: &[&str], out: &Path) -> Output {
    let set = set_of(folder);
    let mut args = vec!["--inputs", &set, "--check-outputs", &set];
    args.extend(ONE_SHORT_ROUND);
    for rt in runtimes {
        args.extend(["--runtime", rt]);
    }
    run_into(tmp, &model_of(folder), &args, out)
}

#[test]
fn backend_models_run_their_own_inputs_with_checked_outputs_on_both_runtimes() {
    let tmp = tempfile::tempdir().expect("tmp");
    // Its int64 `shape` input says what to expand to: synthesized values would time another workload.
    // (tract refuses it: an Expand whose output rank depends on an input's values.)
    let folder = backend_model("simple/test_expand_shape_model1");
    let out_dir = tmp.path().join("expand");
    let out = run_backend_model(tmp.path(), &folder, &["onnxruntime"], &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let case = only_case(&doc);
    let checks = case["output_check"].as_array().expect("output_check");
    assert_eq!(checks.len(), 1, "{case}");
    assert_eq!(checks[0]["output"], "Y");
    assert_eq!(checks[0]["passed"], true, "{case}");
    assert_eq!(
        checks[0]["elements"], 3,
        "the data's shape, not a synthesized one"
    );
    // The shapes fed are the data's: X [1,3,1] and the 2-element `shape`.
    assert_eq!(case["input_shapes"]["X"], serde_json::json!([[1, 3, 1]]));
    assert_eq!(case["input_shapes"]["shape"], serde_json::json!([[2]]));
    let resolved = read_json(
        &out_dir
            .join(case["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    );
    let set = &resolved["data"]["inputs"][0];
    assert_eq!(set["format"], "onnx-pb");
    assert_eq!(set["source"], set_of(&folder));
    assert_eq!(set["tensors"][1]["name"], "shape");
    assert_eq!(resolved["data"]["expected"][0]["tensors"][0]["name"], "Y");
    assert_eq!(resolved["data"]["atol"], 1e-5);
    let summary = stdout(&out);
    assert!(summary.contains("inputs X 1x3x1, shape 2"), "{summary}");
    assert!(summary.contains("outputs match (1 checked"), "{summary}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("class=\"case-inputs\""),
        "the report shows the inputs fed"
    );

    let folder = backend_model("pytorch-converted/test_Conv2d");
    let out_dir = tmp.path().join("conv");
    let out = run_backend_model(tmp.path(), &folder, &["tract", "onnxruntime"], &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["output_check"][0]["output"], "3", "{case}");
        assert_eq!(case["output_check"][0]["passed"], true, "{case}");
        assert_eq!(case["input_shapes"]["0"], serde_json::json!([[2, 3, 7, 5]]));
    }
}

#[test]
fn a_mismatch_fails_the_case_naming_the_output_and_its_worst_element() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-converted/test_Conv2d");
    // The expected output with one element moved by 1.
    let wrong = npz_from_set(tmp.path(), "wrong.npz", &folder, "output_", "bump(a)");
    let out_dir = tmp.path().join("out");
    let wrong = wrong.to_str().expect("utf-8");
    let out = check_outputs(tmp.path(), &folder, &set_of(&folder), wrong, &[], &out_dir);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let doc = read_json(&out_dir.join("result.json"));
    let case = only_case(&doc);
    let error = case["error"].as_str().expect("error");
    assert!(
        error.contains("output `3` (set 0) differs from the expected outputs in 1 of")
            && error.contains("worst element [0,0,1,1]"),
        "{error}"
    );
    let check = &case["output_check"][0];
    assert_eq!(check["passed"], false);
    assert_eq!(check["mismatches"], 1);
    assert_eq!(check["worst"]["index"], serde_json::json!([0, 0, 1, 1]));
    // The advice says what to do about a mismatch (tolerances or inputs), and every file the
    // messages name exists after the command.
    let (said, summary) = (stderr(&out), stdout(&out));
    // The summary wraps long lines at spaces.
    let words = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("raise --atol/--rtol")
            && words
                .contains("check that --inputs are what the expected outputs were computed from"),
        "{summary}"
    );
    let kept = said
        .split("kept for a look: ")
        .nth(1)
        .unwrap_or_else(|| panic!("the message names the files kept: {said}"));
    for file in kept.trim().split(", ") {
        assert!(
            Path::new(file).is_file(),
            "named but missing: {file} ({said})"
        );
    }
    for named in summary.split_whitespace().filter(|w| w.ends_with(".log")) {
        assert!(
            out_dir.join(named).is_file(),
            "advice names {named}, which does not exist"
        );
    }
    // A wide enough tolerance accepts it: --atol is Polygraphy's absolute tolerance.
    let out = check_outputs(
        tmp.path(),
        &folder,
        &set_of(&folder),
        wrong,
        &["--atol", "1.5"],
        &tmp.path().join("out2"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn data_that_does_not_fit_the_model_is_refused_before_any_build() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-converted/test_Conv2d");
    let model = model_of(&folder);
    let cases: [(&str, &str, &str); 3] = [
        (
            "f64.npz",
            "a.astype('float64')",
            "input `0`: the model wants f32[2,3,7,5], the data gives f64[2,3,7,5]",
        ),
        (
            "short.npz",
            "a[:, :, :6, :]",
            "the data gives f32[2,3,6,5] (axis 2 is fixed at 7)",
        ),
        ("renamed.npz", "a", "renamed"),
    ];
    for (name, transform, expected) in cases {
        let file = npz_from_set(tmp.path(), name, &folder, "input_", transform);
        if name == "renamed.npz" {
            python(
                "import numpy as np, sys; d = dict(np.load(sys.argv[1])); np.savez(sys.argv[1], image=d['0'])",
                &[&file],
            );
        }
        let out = bench(
            tmp.path(),
            &[
                "run",
                "--onnx",
                &model,
                "--inputs",
                file.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(code(&out), 3, "{name}: {}", stderr(&out));
        let err = stderr(&out);
        if name == "renamed.npz" {
            assert!(
                err.contains("`image` is not an input of the model")
                    && err.contains("Its inputs: 0"),
                "{err}"
            );
        } else {
            assert!(err.contains(expected), "{name}: {err}");
        }
        assert!(
            !tmp.path().join("cache/tract").exists(),
            "nothing is built before the data is checked"
        );
    }
    // Expected outputs need the inputs they came from.
    let out = bench(
        tmp.path(),
        &["run", "--onnx", &model, "--check-outputs", &set_of(&folder)],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// A model with a named (`batch`) and an unnamed dynamic dimension: y = relu(x) + relu(z).
fn dynamic_model(dir: &Path) -> PathBuf {
    let file = dir.join("dynamic.onnx");
    python(
        r#"
import sys, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["rx"]), helper.make_node("Relu", ["z"], ["rz"]),
                       helper.make_node("Add", ["rx", "rz"], ["y"])], "dyn", [x, z], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
"#,
        &[&file],
    );
    file
}

#[test]
fn dry_run_lists_every_input_and_a_shape_naming_no_input_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let model = dynamic_model(tmp.path());
    let model = model.to_str().expect("utf-8");
    let out = bench(tmp.path(), &["run", "--onnx", model, "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let plan = stdout(&out);
    assert!(
        plan.contains(
            "input `x` f32[?batch,3] fed 1x3: synthesized: floats uniform in [-1, 1), seed 0"
        ),
        "{plan}"
    );
    assert!(plan.contains("input `z` f32[?,3] fed 1x3"), "{plan}");
    assert!(
        plan.contains(
            "note: input `x`: dynamic `batch` (axis 0) set to 1; choose with --shape x:1x3"
        ),
        "{plan}"
    );
    assert!(
        plan.contains("note: input `z`: dynamic axis 0 set to 1; choose with --shape z:1x3"),
        "{plan}"
    );
    let out = bench(
        tmp.path(),
        &["run", "--onnx", model, "--shape", "zz:2x3", "--dry-run"],
    );
    assert_refused(&out, 3, "has no input `zz`. Did you mean `z`?");
}

#[test]
fn unnamed_dynamic_dimensions_run_on_every_runtime_in_the_shape_asked_for() {
    let tmp = tempfile::tempdir().expect("tmp");
    let model = dynamic_model(tmp.path());
    let model = model.to_str().expect("utf-8");
    let run = |extra: &[&str], out: &Path| {
        let mut args = vec!["--runtime", "tract", "--runtime", "onnxruntime"];
        args.extend(ONE_SHORT_ROUND);
        args.extend_from_slice(extra);
        run_into(tmp.path(), model, &args, out)
    };
    let first = tmp.path().join("ones");
    let out = run(&[], &first);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("note: input `z`: dynamic axis 0 set to 1; choose with --shape z:1x3"),
        "{}",
        stderr(&out)
    );
    let doc = read_json(&first.join("result.json"));
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(
            case["input_shapes"]["z"],
            serde_json::json!([[1, 3]]),
            "{case}"
        );
    }
    let second = tmp.path().join("fours");
    let out = run(&["--shape", "x:4x3", "--shape", "z:4x3"], &second);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&second.join("result.json"));
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["status"], "completed", "{case}");
        assert_eq!(
            case["input_shapes"]["x"],
            serde_json::json!([[4, 3]]),
            "{case}"
        );
        assert_eq!(
            case["input_shapes"]["z"],
            serde_json::json!([[4, 3]]),
            "{case}"
        );
    }
}

#[test]
fn several_data_sets_rotate_across_calls_and_join_the_workload_identity() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-converted/test_Conv2d");
    let a = npz_from_set(tmp.path(), "a.npz", &folder, "input_", "a");
    let b = npz_from_set(tmp.path(), "b.npz", &folder, "input_", "a * 2")
        .display()
        .to_string();
    // The same values as a folder of NAME.npy files: another format, the same tensors.
    let npy = tmp.path().join("npy");
    std::fs::create_dir_all(&npy).expect("npy folder");
    python(
        "import numpy as np, sys; np.save(sys.argv[2] + '/0.npy', np.load(sys.argv[1])['0'])",
        &[&a, &npy],
    );
    let a = a.display().to_string();
    let model = model_of(&folder);
    let identity = |inputs: &[&str], out: &str| {
        let mut args = vec![
            "run",
            "--onnx",
            &model,
            "--warmup",
            "0",
            "--iterations",
            "4",
            "-o",
            out,
        ];
        for i in inputs {
            args.extend(["--inputs", i]);
        }
        let o = bench(tmp.path(), &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc = read_json(&Path::new(out).join("result.json"));
        (
            doc["cases"][0]["identity"]
                .as_str()
                .expect("identity")
                .to_string(),
            doc,
        )
    };
    let (two, doc) = identity(&[&a, &b], tmp.path().join("two").to_str().expect("utf-8"));
    let dir = tmp
        .path()
        .join("two")
        .join(doc["cases"][0]["dir"].as_str().expect("dir"));
    let notes = read_json(&dir.join("call-notes.json"));
    assert_eq!(
        notes["notes"]["calls_per_input"],
        serde_json::json!([2, 2]),
        "{notes}"
    );
    let resolved = read_json(&dir.join("resolved-case.json"));
    assert_eq!(resolved["inputs"]["calls_rotate_over"], 2);
    assert_eq!(
        resolved["data"]["inputs"].as_array().expect("sets").len(),
        2
    );
    let (one, _) = identity(&[&a], tmp.path().join("one").to_str().expect("utf-8"));
    let (npy_one, _) = identity(
        &[npy.to_str().expect("utf-8")],
        tmp.path().join("npy-run").to_str().expect("utf-8"),
    );
    let (synthesized, _) = identity(&[], tmp.path().join("none").to_str().expect("utf-8"));
    assert_ne!(two, one, "every data set is part of the identity");
    assert_ne!(
        one, synthesized,
        "given data is another workload than synthesized inputs"
    );
    assert_ne!(npy_one, synthesized);
}

#[test]
fn trtexec_load_inputs_raw_files_feed_the_model() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-converted/test_Conv2d");
    let raw = tmp.path().join("input0.bin");
    python(
        "import onnx, sys\nfrom onnx import numpy_helper\nt = onnx.TensorProto(); t.ParseFromString(open(sys.argv[1], 'rb').read())\nnumpy_helper.to_array(t).astype('<f4').tofile(sys.argv[2])",
        &[&folder.join("test_data_set_0/input_0.pb"), &raw],
    );
    let spec = format!("'0':{}", raw.display());
    let out_dir = tmp.path().join("out");
    let out = check_outputs(tmp.path(), &folder, &spec, &set_of(&folder), &[], &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&out_dir.join("result.json"));
    assert_eq!(only_case(&doc)["output_check"][0]["passed"], true);
    // A raw file of the wrong size names the input and the bytes it needs.
    std::fs::write(&raw, [0u8; 12]).expect("short file");
    let out = bench(
        tmp.path(),
        &["run", "--onnx", &model_of(&folder), "--inputs", &spec],
    );
    assert_refused(&out, 3, "holds 12 bytes; `0` as f32[2, 3, 7, 5] needs 840");
}

#[test]
fn string_tensors_feed_onnx_runtime_and_are_checked_exactly() {
    let tmp = tempfile::tempdir().expect("tmp");
    // StringNormalizer over a string input: the backend test's own .pb strings in and out.
    let folder = backend_model("simple/test_strnorm_model_monday_casesensintive_nochangecase");
    let out_dir = tmp.path().join("pb");
    let out = run_backend_model(tmp.path(), &folder, &["onnxruntime"], &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let check = &only_case(&doc)["output_check"][0];
    assert_eq!(check["passed"], true, "{check}");
    assert_eq!(check["mismatches"], 0);
    // numpy unicode strings (.npz) in, one expected string changed: exact match fails, naming it.
    let inputs = npz_from_set(tmp.path(), "in.npz", &folder, "input_", "a.astype(str)");
    let wrong = npz_from_set(
        tmp.path(),
        "wrong.npz",
        &folder,
        "output_",
        "np.where(np.arange(a.size).reshape(a.shape) == 0, 'not-this', a.astype(str))",
    );
    let out = check_outputs(
        tmp.path(),
        &folder,
        inputs.to_str().expect("utf-8"),
        wrong.to_str().expect("utf-8"),
        &["--runtime", "onnxruntime"],
        &tmp.path().join("wrong"),
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let doc = read_json(&tmp.path().join("wrong/result.json"));
    let error = only_case(&doc)["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(
        error.contains("strings differ from the expected outputs")
            && error.contains("expected \"not-this\""),
        "{error}"
    );
    // Without data a string input is refused before any build, naming the input and the fix;
    // tract refuses string models at build, as its own API does.
    let model = model_of(&folder);
    let out = bench(
        tmp.path(),
        &["run", "--onnx", &model, "--runtime", "onnxruntime"],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a string tensor") && stderr(&out).contains("--inputs"),
        "{}",
        stderr(&out)
    );
    let out = bench(
        tmp.path(),
        &[
            "run",
            "--onnx",
            &model,
            "--runtime",
            "tract",
            "--inputs",
            inputs.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
}

#[test]
fn float16_inputs_are_fed_as_float16_to_onnx_runtime() {
    let tmp = tempfile::tempdir().expect("tmp");
    // y = x * 2 in float16, and data made by numpy in float16.
    let dir = tmp.path();
    python(
        r#"
import sys, os
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
two = numpy_helper.from_array(np.array(2.0, dtype=np.float16), "two")
g = helper.make_graph(
    [helper.make_node("Mul", ["x", "two"], ["y"])], "half",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])], [two])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(sys.argv[1], "half.onnx"))
x = (np.arange(6, dtype=np.float16) / 3).reshape(2, 3)
np.savez(os.path.join(sys.argv[1], "in.npz"), x=x)
np.savez(os.path.join(sys.argv[1], "out.npz"), y=x * np.float16(2))
"#,
        &[dir],
    );
    let model = dir.join("half.onnx");
    for (runtime, data) in [
        ("onnxruntime", true),
        ("onnxruntime", false),
        ("tract", true),
    ] {
        let out_dir = dir.join(format!("{runtime}-{data}"));
        let (inputs, outputs) = (dir.join("in.npz"), dir.join("out.npz"));
        let mut args = vec!["--runtime", runtime, "--warmup", "1", "--iterations", "3"];
        if data {
            args.extend([
                "--inputs",
                inputs.to_str().expect("utf-8"),
                "--check-outputs",
                outputs.to_str().expect("utf-8"),
                "--atol",
                "0",
                "--rtol",
                "0",
            ]);
        }
        let out = run_into(dir, model.to_str().expect("utf-8"), &args, &out_dir);
        assert_eq!(code(&out), 0, "{runtime} {data}: {}", stderr(&out));
        let doc = read_json(&out_dir.join("result.json"));
        if data {
            // Exact: float16 in, float16 out, no detour through a float32 model input.
            assert_eq!(only_case(&doc)["output_check"][0]["passed"], true, "{doc}");
            assert_eq!(only_case(&doc)["output_check"][0]["max_abs_error"], 0.0);
        }
    }
}

#[test]
fn an_input_whose_first_node_folds_away_keeps_its_onnx_name_on_tract() {
    // `0` feeds a Slice that tract's declutter removes; the bundle's input must still be `0`,
    // the name the data set gives, as tract_onnx's own API runs it.
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-operator/test_operator_index");
    let out_dir = tmp.path().join("out");
    let out = run_backend_model(tmp.path(), &folder, &["tract", "onnxruntime"], &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["output_check"][0]["passed"], true, "{case}");
        assert_eq!(case["input_shapes"]["0"], serde_json::json!([[1, 1]]));
    }
}

/// `compare` of the backend model in `folder` on ONNX Runtime, fed its own test_data_set_0, against
/// `golden` outputs, with `extra` arguments.
fn compare_golden(tmp: &Path, folder: &Path, golden: &str, extra: &[&str]) -> Output {
    let (model, set) = (model_of(folder), set_of(folder));
    let mut args = vec![
        "compare",
        "--onnx",
        &model,
        "--runtime",
        "onnxruntime",
        "--inputs",
        &set,
        "--golden",
        golden,
    ];
    args.extend_from_slice(extra);
    bench(tmp, &args)
}

#[test]
fn compare_reads_the_data_set_formats_of_run_on_both_sides() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = backend_model("pytorch-converted/test_Conv2d");
    let agreement = tmp.path().join("agreement.json");
    // A backend-test folder (unnamed input_0.pb / output_0.pb) as inputs for both runtimes and as
    // the golden outputs.
    let out = bench(
        tmp.path(),
        &[
            "compare",
            "--onnx",
            &model_of(&folder),
            "--runtime",
            "tract",
            "--against",
            "onnxruntime",
            "--inputs",
            &set_of(&folder),
            "-o",
            agreement.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read_json(&agreement)["passed"], true);
    let out = compare_golden(
        tmp.path(),
        &folder,
        &set_of(&folder),
        &["-o", agreement.to_str().expect("utf-8")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&agreement);
    assert_eq!(doc["passed"], true, "{doc}");
    assert_eq!(
        doc["tensors"][0]["name"], "3",
        "the unnamed output_0.pb is the model's output 0"
    );
    // Golden outputs that differ fail the comparison (exit 5: they do not agree).
    let wrong = npz_from_set(tmp.path(), "wrong.npz", &folder, "output_", "bump(a) * 3");
    let out = compare_golden(tmp.path(), &folder, wrong.to_str().expect("utf-8"), &[]);
    assert_eq!(code(&out), 5, "{}", stdout(&out));
    // A golden folder without the output files is refused naming --golden (not run's
    // --check-outputs, which this command does not have).
    let empty = tmp.path().join("empty-set");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = compare_golden(tmp.path(), &folder, empty.to_str().expect("utf-8"), &[]);
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("--golden") && !said.contains("--check-outputs"),
        "{said}"
    );
}

#[test]
fn one_dimension_name_on_axes_of_different_sizes_runs_as_onnx_runtime_runs_it() {
    // PaddleOCR's exports (rapidocr's angle classifier, found by scripts/corpus.py) name both image
    // axes `?`; the package feeds 48x192. ONNX Runtime's own API runs that, so must trtmc.
    let tmp = tempfile::tempdir().expect("tmp");
    python(
        r#"
import sys, os
import onnx
from onnx import helper, TensorProto
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"])], "same-name",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3, "?", "?"])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(sys.argv[1], "same-name.onnx"))
"#,
        &[tmp.path()],
    );
    let model = tmp.path().join("same-name.onnx");
    let out_dir = tmp.path().join("out");
    let mut args = vec![
        "--runtime",
        "onnxruntime",
        "--runtime",
        "tract",
        "--shape",
        "x:1x3x4x6",
    ];
    args.extend(ONE_SHORT_ROUND);
    let out = run_into(tmp.path(), model.to_str().expect("utf-8"), &args, &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(
            case["input_shapes"]["x"],
            serde_json::json!([[1, 3, 4, 6]]),
            "{case}"
        );
    }
}
