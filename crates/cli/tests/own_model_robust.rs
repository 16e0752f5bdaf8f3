//! Issue 31, "your own model": models as users bring them (any names and metadata, weights in an
//! external file, malformed graphs) and the verdicts of a multi-case run, through the real binary.
//! Models are written by python3 with the `onnx` wheel (scripts/test installs it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// Runs `script` with python3 (the onnx wheel imported as in the scripts below) in `dir`.
fn python(dir: &Path, script: &str) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import os, numpy as np, onnx\nfrom onnx import helper, numpy_helper, TensorProto as T\n{script}"
        ))
        .current_dir(dir)
        .output()
        .expect("python3 must be installed (scripts/test installs the onnx wheel)");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `model(name, nodes, inputs, outputs, inits, opset=17)` saves `name/model.onnx`.
const SAVE: &str = r#"
def model(name, nodes, inputs, outputs, inits=(), opset=17, **extra):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8, **extra)
    os.makedirs(name, exist_ok=True)
    return m
def save(name, m):
    with open(f"{name}/model.onnx", "wb") as f:
        f.write(m.SerializeToString())
def vi(name, shape):
    return helper.make_tensor_value_info(name, T.FLOAT, shape)
"#;

/// trtmc-bench `run` with `args`, the bundles cached in `tmp/cache`, into `tmp/OUT`.
fn bench_run(tmp: &Path, out: &str, args: &[&str]) -> (Output, PathBuf) {
    let dir = tmp.join(out);
    let mut all = vec!["run", "-o", dir.to_str().expect("utf8"), "-q"];
    all.extend_from_slice(args);
    (bench_cached(&tmp.join("cache"), &all), dir)
}

fn onnx_arg(tmp: &Path, name: &str) -> String {
    tmp.join(name)
        .join("model.onnx")
        .to_str()
        .expect("utf8")
        .to_string()
}

/// [`bench_run`] of the model the python script saved as `NAME/model.onnx`, with `args`.
fn run_saved(tmp: &Path, name: &str, out: &str, args: &[&str]) -> (Output, PathBuf) {
    let onnx = onnx_arg(tmp, name);
    bench_run(tmp, out, &[&["--onnx", &onnx][..], args].concat())
}

/// `--runtime tract --runtime onnxruntime`, then `args`: one case on each runtime.
fn on_both_runtimes<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [
        &["--runtime", "tract", "--runtime", "onnxruntime"][..],
        args,
    ]
    .concat()
}

/// One warm-up and three timed calls on tract: a short run whose outcome, not timing, is checked.
const SHORT_ON_TRACT: [&str; 6] = ["--runtime", "tract", "--warmup", "1", "--iterations", "3"];

/// Names NNEF cannot spell (an apostrophe, `é`, quotes, a backslash, a newline, dots), 13 kB of
/// metadata full of quotes, backslashes and newlines, and a doc string like it: the bundle builds,
/// loads and times on tract (issue 31: build succeeded, every run exited 5), and its per-layer
/// profile names the ONNX nodes as the model names them.
#[test]
fn any_name_and_any_metadata_build_load_and_profile_on_tract() {
    let tmp = tempfile::tempdir().expect("tmp");
    python(
        tmp.path(),
        &format!(
            r#"{SAVE}
w = numpy_helper.from_array(np.random.rand(4, 3, 3, 3).astype(np.float32), "p2o.Conv.58.w\"eight'")
nodes = [
    helper.make_node("Conv", ["entrée 'x'", w.name], ["conv'out"], name="p2o.Conv.58", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["conv'out"], ["sortie é\"\\"], name="relu é'\"\\\n2"),
]
m = model("hostile", nodes, [vi("entrée 'x'", [1, 3, 8, 8])], [vi("sortie é\"\\", [1, 4, 8, 8])], [w],
          doc_string="a 'doc' \"string\" \\ with\nnewlines")
blob = ("key 'q' \"dq\" back\\slash\nnew line\ttab é ✓ " * 300)[:13000]
helper.set_model_props(m, {{"vocab": blob, "it's": "a \"key\"", "plain": "ok"}})
m.graph.doc_string = "graph 'doc'"
save("hostile", m)
"#
        ),
    );
    let profiled = [
        &SHORT_ON_TRACT[..],
        &["--profile", "--profile-iterations", "2"],
    ]
    .concat();
    let (out, dir) = run_saved(tmp.path(), "hostile", "r", &profiled);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "completed", "{case}");
    assert_eq!(case["measurement"]["observations"], 3);

    // The bundle records what it renamed and what metadata it left out.
    let bundle = PathBuf::from(case["bundle"]["path"].as_str().expect("bundle"));
    let names = read_json(&bundle.join("nnef-names.json"));
    let renamed = names["renamed"].as_object().expect("renamed");
    assert!(
        renamed.values().any(|v| v == "p2o.Conv.58"),
        "the dotted node name is renamed and recorded: {names}"
    );
    assert!(
        renamed
            .values()
            .any(|v| v.as_str().is_some_and(|v| v.starts_with("relu é'\"\\\n2"))),
        "the steps tract made of the relu keep its name: {names}"
    );
    let dropped: Vec<&str> = names["dropped_properties"]
        .as_array()
        .expect("dropped")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        dropped.contains(&"onnx.metadata_props.vocab") && dropped.contains(&"onnx.doc_string"),
        "{dropped:?}"
    );
    let log = std::fs::read_to_string(bundle.join("build.log")).expect("build log");
    assert!(log.contains("left out of the bundle"), "{log}");

    // The profile names layers by their ONNX nodes (through the record), not tract's renames.
    let case_dir = dir.join(case["dir"].as_str().expect("dir"));
    let layers = std::fs::read_to_string(case_dir.join("layers_tract.json")).expect("layers");
    assert!(layers.contains("p2o.Conv.58"), "{layers}");
    assert!(!layers.contains("p2o_Conv_58"), "{layers}");

    // --profile says where its report is, and the report names no staging folder that is gone.
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("profile report of case "))
        .unwrap_or_else(|| panic!("no line naming the profile report: {text}"));
    let report = PathBuf::from(line.rsplit(": ").next().expect("path"));
    assert!(report.is_file(), "{line}");
    for f in walk_files(&case_dir.join("profile-report")) {
        let Ok(content) = std::fs::read_to_string(&f) else {
            continue;
        };
        assert!(
            !content.contains(".staging-"),
            "{} names the staging folder",
            f.display()
        );
    }
}

/// A model whose weights live in `weights.bin` beside it runs on both runtimes (issue 31: ONNX
/// Runtime failed with "External data path does not exist: …/.tmp-KEY-PID/weights.bin"); a weight
/// file outside the model's folder is refused by both.
#[test]
fn external_data_is_read_beside_the_model_on_every_runtime_and_never_outside_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    python(
        tmp.path(),
        &format!(
            r#"{SAVE}
w = numpy_helper.from_array(np.random.rand(64, 32).astype(np.float32), "W")
m = model("ext", [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [vi("x", [1, 64])], [vi("y", [1, 32])], [w])
onnx.save_model(m, "ext/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
# The same graph pointing one folder up for its weights.
m = onnx.load("ext/model.onnx", load_external_data=False)
for e in m.graph.initializer[0].external_data:
    if e.key == "location":
        e.value = "../outside.bin"
os.makedirs("escape", exist_ok=True)
save("escape", m)
import shutil
shutil.copy("ext/weights.bin", "outside.bin")
"#
        ),
    );
    assert!(tmp.path().join("ext/weights.bin").is_file());
    let both = on_both_runtimes(&["--warmup", "1", "--iterations", "3", "--rounds", "1"]);
    let (out, dir) = run_saved(tmp.path(), "ext", "r", &both);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["status"], "completed", "{case}");
    }
    let ort = PathBuf::from(doc["cases"][1]["bundle"]["path"].as_str().expect("bundle"));
    assert!(
        ort.join("model.ort.weights.bin").is_file(),
        "the optimized model's weights travel with the bundle"
    );

    for runtime in ["tract", "onnxruntime"] {
        let (out, dir) = run_saved(
            tmp.path(),
            "escape",
            &format!("escape-{runtime}"),
            &["--runtime", runtime, "--iterations", "2"],
        );
        assert_eq!(code(&out), 4, "{runtime}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("outside.bin"),
            "{runtime}: the message names the file: {}",
            stderr(&out)
        );
        assert!(!dir.exists(), "nothing was measured");
    }
}

/// Graphs with nothing to time are refused on both runtimes with exit 4 and a message naming what is
/// wrong, never timed (issue 31: tract exited 0) and never a panic (tract-onnx panicked on an output
/// no node produces: exit 101).
#[test]
fn graphs_with_nothing_to_time_are_refused_by_name_never_timed_or_panicking() {
    let tmp = tempfile::tempdir().expect("tmp");
    python(
        tmp.path(),
        &format!(
            r#"{SAVE}
relu = helper.make_node("Relu", ["x"], ["y"], name="r")
x, y, z = vi("x", [1, 4]), vi("y", [1, 4]), vi("z", [1, 4])
save("dangling", model("dangling", [relu], [x], [y, z]))
save("nooutputs", model("nooutputs", [relu], [x], []))
save("empty", model("empty", [], [x], [x]))
save("opset999", model("opset999", [relu], [x], [y], opset=999))
"#
        ),
    );
    for (model, runtimes, needle) in [
        (
            "dangling",
            &["tract", "onnxruntime"][..],
            "graph output `z`",
        ),
        (
            "nooutputs",
            &["tract", "onnxruntime"][..],
            "declares no outputs",
        ),
        ("empty", &["tract", "onnxruntime"][..], "has no nodes"),
        ("opset999", &["tract"][..], "opset 999"),
        ("opset999", &["onnxruntime"][..], "999"),
    ] {
        for runtime in runtimes {
            let (out, dir) = run_saved(
                tmp.path(),
                model,
                &format!("{model}-{runtime}"),
                &["--runtime", runtime, "--iterations", "2"],
            );
            let err = stderr(&out);
            assert_ne!(code(&out), 0, "{model} on {runtime} was timed");
            assert_ne!(code(&out), 101, "{model} on {runtime} panicked: {err}");
            assert!(
                [3, 4].contains(&code(&out)),
                "{model} on {runtime}: exit {}: {err}",
                code(&out)
            );
            assert!(err.contains(needle), "{model} on {runtime}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            assert!(!dir.exists(), "{model} on {runtime}: nothing was measured");
        }
    }
}

/// A worker (`--worker`) that adds `delay_us` to every call of round 2 of each case (the test hook
/// travels in the round's request, which it edits), then runs the real worker.
#[cfg(unix)]
fn slow_round_worker(dir: &Path, delay_us: u64) -> PathBuf {
    let wrapper = dir.join("slow-round-2.sh");
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\npython3 - \"$@\" <<'EOF'\nimport json, sys\nargs = sys.argv[1:]\nreq = args[args.index('--request') + 1]\nif '-r02' in req:\n    d = json.load(open(req))\n    d.setdefault('hooks', {{}})['call_delay_us'] = {delay_us}\n    json.dump(d, open(req, 'w'))\nEOF\nexec {BIN:?} \"$@\"\n",
        ),
    );
    wrapper
}

/// A round that ran out of its time budget in the middle of a run keeps the case's fewer calls
/// allowed, whichever round came last, so the verdict is kept (issue 31: "worker returned 380
/// observations, 500 were requested", exit 5, no verdict, 1 run in 3). A wrapper worker slows every
/// call of round 2 past that round's share of --max-duration.
#[test]
#[cfg(unix)]
fn a_budget_stop_in_a_middle_round_keeps_the_cases_and_their_verdict() {
    let tmp = tempfile::tempdir().expect("tmp");
    let wrapper = slow_round_worker(tmp.path(), 60_000);
    let out_dir = tmp.path().join("r");
    let out = run_test_model(
        "test-sleep",
        &[
            "--sweep",
            "request.sleep_us=1000,2000",
            "--baseline",
            "1",
            "--warmup",
            "0",
            "--iterations",
            "40",
            "--rounds",
            "4",
            "--max-duration",
            "1.6",
            "--worker",
            wrapper.to_str().expect("utf8"),
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["status"], "completed", "{case}");
        assert_eq!(case["measurement"]["stopped_by"], "budget", "{case}");
        let calls = case["measurement"]["observations"].as_u64().expect("calls");
        assert!(calls < 40, "round 2 stopped short: {calls}");
    }
    assert_eq!(
        doc["comparisons"].as_array().expect("comparisons").len(),
        1,
        "the verdict is kept"
    );
}

/// One runtime that cannot build the model fails its case, with the cause, and the other case is
/// still measured and written (issue 31: exit 4 and no result folder). `Det` is an operator ONNX
/// Runtime runs and tract does not know.
#[test]
fn a_build_failure_fails_its_case_only_and_names_its_cause() {
    let tmp = tempfile::tempdir().expect("tmp");
    python(
        tmp.path(),
        &format!(
            r#"{SAVE}
save("det", model("det", [helper.make_node("Det", ["x"], ["y"], name="det")], [vi("x", [2, 3, 3])], [vi("y", [2])]))
"#
        ),
    );
    let both = on_both_runtimes(&["--warmup", "1", "--iterations", "4", "--rounds", "2"]);
    let (out, dir) = run_saved(tmp.path(), "det", "r", &both);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("1 of 2 case(s) have no bundle") && err.contains("Det"),
        "{err}"
    );
    let doc = assert_result_dir_valid(&dir);
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases[0]["runtime"]["name"], "tract");
    assert_eq!(cases[0]["status"], "failed");
    let cause = cases[0]["error"].as_str().expect("error");
    assert!(
        cause.contains("building model") && cause.contains("Det"),
        "{cause}"
    );
    assert_eq!(cases[1]["status"], "completed", "{}", cases[1]);
    assert_eq!(cases[1]["measurement"]["observations"], 4);
    assert!(
        stdout(&out).contains("fix the failure named above"),
        "the advice names no log that does not exist: {}",
        stdout(&out)
    );
}

/// Two different models get no verdict unless --baseline asks for one (issue 31: "tiny-encoder … ran
/// 2.11× faster than tiny-cnn"); the summary says why and how.
#[test]
fn only_cases_of_one_workload_get_a_verdict_unless_the_baseline_is_explicit() {
    let tmp = tempfile::tempdir().expect("tmp");
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "--model",
            "tiny-encoder",
            "--model",
            "tiny-cnn",
            "--runtime",
            "tract",
            "--warmup",
            "1",
            "--iterations",
            "4",
            "--rounds",
            "2",
        ];
        a.extend_from_slice(extra);
        a
    };
    let (out, dir) = bench_run(tmp.path(), "plain", &args(&[]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&dir);
    assert_eq!(
        doc["comparisons"].as_array().map_or(0, Vec::len),
        0,
        "{doc}"
    );
    assert!(
        stdout(&out).contains("no verdict for case 2 (tiny-cnn "),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("it measures a different workload than case 1 (tiny-encoder ")
            && stdout(&out).contains("give --baseline 1 to compare them anyway"),
        "{}",
        stdout(&out)
    );
    let (out, dir) = bench_run(tmp.path(), "explicit", &args(&["--baseline", "1"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&dir.join("result.json"));
    assert_eq!(doc["comparisons"].as_array().expect("comparisons").len(), 1);
    assert!(!stdout(&out).contains("no verdict"), "{}", stdout(&out));
}

/// The failure advice of a rounds run names the round's own log, which exists and holds what the
/// worker said (issue 31: it named `worker.log`, which a rounds run does not write).
#[test]
fn the_failure_advice_of_a_rounds_run_names_a_log_that_exists() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let out = run_test_model(
        "test-crash",
        &[
            "--rounds",
            "2",
            "--iterations",
            "4",
            "-o",
            out_dir.to_str().expect("utf8"),
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let text = stdout(&out).replace("\n    ", " ");
    let advice = text
        .lines()
        .find(|l| l.contains("→ read "))
        .unwrap_or_else(|| panic!("no advice naming a log: {text}"));
    let log = advice
        .split("→ read ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("the log's path");
    assert!(log.ends_with("worker-r01.log"), "{advice}");
    let written = std::fs::read_to_string(out_dir.join(log)).expect("the named log exists");
    assert!(
        written.contains("aborting the worker on purpose"),
        "{written}"
    );
    assert!(
        stderr(&out).contains("SIGABRT"),
        "the run's last line names the cause: {}",
        stderr(&out)
    );
}

/// Bash completes the options of a subcommand (issue 31: nothing completed after the subcommand,
/// clap_complete's bash script spelling the hyphenated name two ways) and offers no hidden internal
/// command. Completed in a real bash through the registered function, as the shell calls it.
#[test]
#[cfg(unix)]
fn bash_completes_after_the_subcommand_and_offers_no_internal_command() {
    let out = run(&["completions", "bash"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let script = stdout(&out);
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("trtmc-bench.bash");
    std::fs::write(&path, &script).expect("write script");
    let registered = script
        .lines()
        .find(|l| l.trim_start().starts_with("complete -F ") && l.ends_with(" trtmc-bench"))
        .expect("a completion function registered for trtmc-bench");
    let function = registered
        .split_whitespace()
        .nth(2)
        .expect("the function's name");
    // What bash does on TAB: COMP_WORDS and COMP_CWORD set, the function called with the command,
    // the word being completed and the one before it.
    let complete = |words: &[&str]| -> Vec<String> {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let n = words.len() - 1;
        let line = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={n}; {function} trtmc-bench '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display(),
            quoted.join(" "),
            words[n],
            words[n - 1],
        );
        let o = Command::new("bash")
            .arg("-c")
            .arg(line)
            .output()
            .expect("bash");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let after_run = complete(&["trtmc-bench", "run", "--mo"]);
    assert!(
        after_run.contains(&"--model".to_string()),
        "`trtmc-bench run --mo<TAB>`: {after_run:?}"
    );
    let commands = complete(&["trtmc-bench", ""]);
    for visible in ["run", "matrix", "analyze", "completions"] {
        assert!(
            commands.contains(&visible.to_string()),
            "{visible}: {commands:?}"
        );
    }
    for hidden in ["worker", "tune-worker", "tune-task"] {
        assert!(
            !commands.contains(&hidden.to_string()),
            "{hidden} is internal: {commands:?}"
        );
    }
    let in_matrix = complete(&["trtmc-bench", "matrix", ""]);
    assert!(
        in_matrix.contains(&"check".to_string()),
        "a nested subcommand: {in_matrix:?}"
    );
}

/// A duplicate matrix row is reported with the rows counted from 1, as the summary and the row
/// directories count them (issue 31: from 0).
#[test]
fn a_duplicate_matrix_row_is_named_by_its_number_from_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = tiny_cnn_catalog(tmp.path());
    let env = write_matrix_environment(tmp.path(), "");
    let row = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: tract}\n    reference: {backend: onnxruntime-python}\n";
    let suite = tmp.path().join("dup.yaml");
    std::fs::write(
        &suite,
        format!("schema: trtmc.perf-suite/v1\nname: dup\nmeasure: {{warmup: 1, iterations: 24, rounds: 6}}\nrows:\n{row}{row}"),
    )
    .expect("suite");
    let out = run(&[
        "matrix",
        "check",
        suite.to_str().expect("utf8"),
        "--environment",
        env.to_str().expect("utf8"),
        "--manifest-root",
        catalog.to_str().expect("utf8"),
    ]);
    assert_refused(&out, 3, "rows 1 and 2 (counting from 1) are both");
}

/// The INVALID advice about throttling names the case's telemetry.json only when the run wrote one,
/// and otherwise says how to get one (issue 31: it named telemetry.json, which is written by default
/// only where nvidia-smi exists). Round 2 made 200 times as slow spreads the latencies past the limit.
#[test]
#[cfg(unix)]
fn the_spread_advice_names_telemetry_json_only_when_it_was_written() {
    let tmp = tempfile::tempdir().expect("tmp");
    // 20 ms against 0.1 ms calls: a spread no load on the machine can hide.
    let wrapper = slow_round_worker(tmp.path(), 20_000);
    for telemetry in ["off", "on"] {
        let out_dir = tmp.path().join(telemetry);
        let out = run_test_model(
            "test-sleep",
            &[
                "--warmup",
                "0",
                "--iterations",
                "20",
                "--rounds",
                "2",
                "--telemetry",
                telemetry,
                "--worker",
                wrapper.to_str().expect("utf8"),
                "-o",
                out_dir.to_str().expect("utf8"),
            ],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        // Advice lines wrap at 100 columns with a 4-space indent.
        let text = stdout(&out).replace("\n    ", " ");
        let advice = text
            .lines()
            .find(|l| l.contains("latency varies too much"))
            .unwrap_or_else(|| panic!("no spread advice: {text}"));
        let doc = read_json(&out_dir.join("result.json"));
        let case_dir = doc["cases"][0]["dir"].as_str().expect("dir").to_string();
        if telemetry == "off" {
            assert!(advice.contains("run again with --telemetry on"), "{advice}");
            assert!(!out_dir.join(&case_dir).join("telemetry.json").exists());
        } else {
            let named = format!("check {case_dir}/telemetry.json");
            assert!(advice.contains(&named), "{advice}");
            assert!(out_dir.join(&case_dir).join("telemetry.json").is_file());
        }
    }
}

/// What a terminal shows after a program wrote `output` to it: a small emulator of the controls the
/// progress bars use (carriage return, cursor up/down/column, erase line and below).
const SCREEN: &str = r#"
import os, pty, re, struct, sys, fcntl, termios
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    os.execvp(sys.argv[1], sys.argv[1:])
raw = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    raw += chunk
_, status = os.waitpid(pid, 0)
screen, row, col = [""], 0, 0
data = raw.decode("utf-8", "replace")
i = 0
while i < len(data):
    c = data[i]
    if c == "\x1b":
        m = re.match(r"\x1b\[([?0-9;]*)([A-Za-z])", data[i:])
        if m:
            p, cmd = m.group(1), m.group(2)
            n = int(p) if p.isdigit() else 1
            while len(screen) <= row:
                screen.append("")
            if cmd == "A":
                row = max(0, row - n)
            elif cmd == "B":
                row += n
            elif cmd == "G":
                col = n - 1
            elif cmd == "C":
                col += n
            elif cmd == "D":
                col = max(0, col - n)
            elif cmd == "K":
                screen[row] = "" if p == "2" else screen[row][:col]
            elif cmd == "J":
                screen = screen[: row + 1]
                screen[row] = screen[row][:col]
            i += len(m.group(0))
            continue
        i += 1
        continue
    if c == "\r":
        col = 0
    elif c == "\n":
        row, col = row + 1, 0
    else:
        while len(screen) <= row:
            screen.append("")
        line = screen[row].ljust(col)
        screen[row] = line[:col] + c + line[col + 1 :]
        col += 1
    i += 1
print("\n".join(l.rstrip() for l in screen))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// On a terminal a rounds run leaves no stale progress line behind and prints every case's finish
/// line (issue 31: one stale line per round, and the second case's finish line was missing).
#[test]
#[cfg(unix)]
fn a_rounds_run_on_a_terminal_leaves_no_stale_line_and_finishes_every_case() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCREEN)
        .arg(BIN)
        .args([
            "run",
            "--manifest-root",
            test_catalog().to_str().expect("utf8"),
            "--model",
            "test-sleep",
            "--sweep",
            "request.sleep_us=20000,30000",
            "--warmup",
            "0",
            "--iterations",
            "6",
            "--rounds",
            "3",
            "-o",
            out_dir.to_str().expect("utf8"),
        ])
        .env("TRTMC_TEST", "1")
        .env("TERM", "xterm")
        .env_remove("TRTMC_MANIFEST_ROOT")
        .output()
        .expect("python3");
    let screen = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{screen}\n{}", stderr(&out));
    assert!(
        !screen.contains("(round "),
        "a round's progress line stayed on the screen:\n{screen}"
    );
    for case in ["[1] test-sleep", "[2] test-sleep"] {
        assert!(
            screen
                .lines()
                .any(|l| l.starts_with(case) && l.contains("calls, p50")),
            "{case} has no finish line:\n{screen}"
        );
    }
}

/// A model name too long for the summary's column is shortened between words, its first and last
/// words kept around an ellipsis (issue 31: names were cut mid-word, and OCR models that differ only
/// in `det`/`rec` near the end looked the same).
#[test]
fn long_model_names_are_shortened_between_words_in_the_summary() {
    let tmp = tempfile::tempdir().expect("tmp");
    let name = "ch_PP-OCRv4_server_det_infer_with_extra_words";
    std::fs::write(
        tmp.path().join(format!("{name}.onnx")),
        trtmc_modelgen::generate("tiny-cnn", 3).expect("model"),
    )
    .expect("write");
    let onnx = tmp.path().join(format!("{name}.onnx"));
    let onnx = onnx.to_str().expect("utf8");
    let args = [
        &["--onnx", onnx, "--shape", "image:1x3x64x64"][..],
        &SHORT_ON_TRACT,
    ]
    .concat();
    let (out, _) = bench_run(tmp.path(), "r", &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("no row for case 1: {text}"));
    let cell = row
        .trim_start()
        .split("  ")
        .map(str::trim)
        .find(|c| c.contains('…'))
        .unwrap_or_else(|| panic!("the name is not shortened: {row}"));
    let (head, tail) = cell.split_once('…').expect("ellipsis");
    let separator = |c: char| matches!(c, '-' | '_' | '.');
    assert!(
        name.starts_with(head) && (head.is_empty() || head.ends_with(separator)),
        "{cell}: the head ends between words"
    );
    assert!(
        name.ends_with(tail)
            && name[..name.len() - tail.len()].ends_with(separator)
            && !tail.is_empty(),
        "{cell}: the tail starts between words"
    );
}
