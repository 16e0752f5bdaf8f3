//! Faults (crashes, hangs, failed builds, wrong outputs), unusable engines, and
//! `--exportOutput` / `--loadInputs` checked against tract.

mod common;

use std::time::Duration;

use common::Sim;
use tract_onnx::prelude::*;
use trtmc_trtexec::RunStatus;

fn build_args(sim: &Sim, model: &std::path::Path, engine: &str, route: &str) -> Vec<String> {
    vec![
        format!("--onnx={}", model.display()),
        sim.arg("--saveEngine", engine),
        format!("--setBuildRoute={route}"),
        "--skipInference".into(),
    ]
}

#[test]
fn crash_build_dies_by_sigabrt() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let run = sim.run_owned(&build_args(&sim, &model, "e.plan", "-tactic:cublas=on"));
    assert_eq!(run.signal(), Some(6), "SIGABRT; log:\n{}", run.log);
    assert!(
        run.log
            .contains("[TuningBuildRoute] Using build route: -tactic:cublas=on")
    );
    assert_eq!(run.parsed().outcome(), None, "no final status line");
    assert!(!sim.path("e.plan").exists());
    // The 10.x fault.
    let old = Sim::version(101601);
    let model = old.model("tiny-cnn");
    let run = old.run_owned(&[
        format!("--onnx={}", model.display()),
        old.arg("--saveEngine", "e.plan"),
        "--maxAuxStreams=7".into(),
    ]);
    assert_eq!(run.signal(), Some(6), "{}", run.log);
}

#[test]
fn hang_build_never_finishes() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let run = sim.run_with_timeout(
        &build_args(
            &sim,
            &model,
            "e.plan",
            "-kgen:tiling=1 -match_ragged_mha=on",
        ),
        Duration::from_millis(1500),
    );
    assert!(run.status.is_none(), "still running after 1.5 s: {run:?}");
    assert!(
        run.log
            .contains("Using build route: -kgen:tiling=1 -match_ragged_mha=on")
    );
    assert!(!sim.path("e.plan").exists());
}

#[test]
fn fail_build_exits_1_with_failed() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let run = sim.run_owned(&build_args(
        &sim,
        &model,
        "e.plan",
        "-kgen:codegen:cuda_tile=0",
    ));
    run.assert_code(1);
    let parsed = run.parsed();
    assert_eq!(parsed.outcome(), Some(RunStatus::Failed));
    assert!(
        parsed
            .errors
            .iter()
            .any(|e| e.contains("Could not find any implementation")),
        "{:?}",
        parsed.errors
    );
    assert!(
        run.log
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("&&&& FAILED"))
    );
    assert!(!sim.path("e.plan").exists());
}

#[test]
fn crash_infer_aborts_once_inference_starts() {
    let mut sim = Sim::new();
    sim.config(r#"{"faults": {"-copy_ppg=off": "crash_infer"}}"#);
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &["--setBuildRoute=-copy_ppg=off"]);
    let run = sim.time("e.plan", 10, &[]);
    assert_eq!(run.signal(), Some(6), "{}", run.log);
    assert!(run.log.contains("Starting inference"));
    // The config replaced the fault table: the built-in crash is gone.
    sim.build(&model, "f.plan", &["--setBuildRoute=-tactic:cublas=on"]);
}

#[test]
fn missing_model_and_unusable_engines_fail() {
    let sim = Sim::new();
    let run = sim.run_owned(&[
        "--onnx=/nonexistent/model.onnx".into(),
        sim.arg("--saveEngine", "e.plan"),
    ]);
    run.assert_code(1);
    assert!(run.log.contains("[E] [TRT] ModelImporter.cpp"));
    assert!(run.log.contains("/nonexistent/model.onnx"));
    assert_eq!(run.parsed().outcome(), Some(RunStatus::Failed));

    std::fs::write(
        sim.path("junk.plan"),
        b"trtmc trtexec-standin dummy engine\n",
    )
    .expect("junk");
    let run = sim.time("junk.plan", 10, &[]);
    run.assert_code(1);
    assert!(run.log.contains("Serialization assertion"), "{}", run.log);
    assert!(run.log.contains("[E] Engine deserialization failed"));

    let run = sim.time("absent.plan", 10, &[]);
    run.assert_code(1);
    assert!(run.log.contains("[E] Error opening engine file"));

    // Built by 10.16.1, loaded by 11.1.0 (and the other way round).
    let old = Sim::version(101601);
    let model = old.model("tiny-cnn");
    old.build(&model, "e.plan", &[]);
    let new = Sim::new();
    let run = new.run_owned(&[old.arg("--loadEngine", "e.plan"), "--iterations=5".into()]);
    run.assert_code(1);
    assert!(
        run.log
            .contains("expecting library version 11.1.0.106 got 10.16.1.11"),
        "{}",
        run.log
    );
    new.build(&model, "n.plan", &[]);
    let run = old.run_owned(&[new.arg("--loadEngine", "n.plan")]);
    run.assert_code(1);
    assert!(
        run.log
            .contains("expecting library version 10.16.1.11 got 11.1.0.106")
    );
}

/// Runs the model with tract directly: the reference for `--exportOutput`.
fn tract_outputs(model: &std::path::Path, inputs: Vec<Tensor>) -> Vec<Tensor> {
    let mut m = tract_onnx::onnx()
        .model_for_path(model)
        .expect("tract loads");
    for (i, t) in inputs.iter().enumerate() {
        m.set_input_fact(i, InferenceFact::dt_shape(t.datum_type(), t.shape()))
            .expect("fact");
    }
    let plan = m
        .into_optimized()
        .and_then(|m| m.into_runnable())
        .expect("plan");
    plan.run(inputs.into_iter().map(|t| t.into_tvalue()).collect())
        .expect("run")
        .into_iter()
        .map(|v| v.into_tensor())
        .collect()
}

fn exported(sim: &Sim, file: &str) -> Vec<(String, String, Vec<f64>)> {
    let text = std::fs::read_to_string(sim.path(file)).expect("exportOutput");
    assert!(text.starts_with("[\n  { \"name\" : \""), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).expect("exportOutput is JSON");
    json.as_array()
        .expect("array")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().expect("name").to_string(),
                t["dimensions"].as_str().expect("dimensions").to_string(),
                t["values"]
                    .as_array()
                    .expect("values")
                    .iter()
                    .map(|v| v.as_f64().expect("number"))
                    .collect(),
            )
        })
        .collect()
}

fn pseudo_random(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

#[test]
fn export_output_matches_tract_and_wrong_outputs_differ() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "good.plan", &["--shapes=image:2x3x64x64"]);
    sim.build(
        &model,
        "bad.plan",
        &[
            "--shapes=image:2x3x64x64",
            "--setBuildRoute=-kgen:sigmoid_approx=off",
        ],
    );
    let input = pseudo_random(2 * 3 * 64 * 64);
    let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(sim.path("image.raw"), &bytes).expect("raw input");
    for engine in ["good", "bad"] {
        let run = sim.time(
            &format!("{engine}.plan"),
            10,
            &[
                "--loadInputs=image:image.raw",
                &sim.arg("--exportOutput", &format!("{engine}.json")),
            ],
        );
        run.assert_passed();
        assert!(
            run.log
                .contains("Using values loaded from image.raw for input image")
        );
        assert!(run.parsed().summary().is_some(), "timing is unaffected");
    }
    let tensor = Tensor::from_shape(&[2, 3, 64, 64], &input).expect("tensor");
    let expected = tract_outputs(&model, vec![tensor]);
    let expected: Vec<f32> = expected[0]
        .to_plain_array_view::<f32>()
        .expect("f32")
        .iter()
        .copied()
        .collect();
    let good = exported(&sim, "good.json");
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].0, "logits");
    assert_eq!(good[0].1, "2x10");
    assert_eq!(good[0].2.len(), expected.len());
    for (got, want) in good[0].2.iter().zip(&expected) {
        // Printed as trtexec prints it, to 6 significant digits: within half a unit of the 6th.
        let want = f64::from(*want);
        assert!((got - want).abs() <= 5e-6 * want.abs(), "{got} vs {want}");
    }
    let bad = exported(&sim, "bad.json");
    // Reversed, scaled and shifted: a wrong answer even to a cosine check.
    for (got, want) in bad[0].2.iter().zip(expected.iter().rev()) {
        let want = f64::from(want * 1.25 + 0.1);
        assert!(
            (got - want).abs() <= 5e-6 * want.abs().max(1e-6),
            "{got} vs {want}"
        );
    }
    assert_ne!(
        bad[0].2.iter().map(|v| *v as f32).collect::<Vec<_>>(),
        expected
    );
}

#[test]
fn random_inputs_are_seeded_and_integer_models_work() {
    let sim = Sim::new();
    let model = sim.model("tiny-encoder");
    sim.build(
        &model,
        "e.plan",
        &["--shapes=input_ids:1x6,attention_mask:1x6"],
    );
    for name in ["a.json", "b.json"] {
        sim.time("e.plan", 5, &[&sim.arg("--exportOutput", name)])
            .assert_passed();
    }
    let a = exported(&sim, "a.json");
    assert_eq!(
        a,
        exported(&sim, "b.json"),
        "random inputs do not change between runs"
    );
    // In hash order, as trtexec's unordered_map lists them, not the model's.
    let mut names: Vec<&str> = a.iter().map(|t| t.0.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, vec!["embeddings", "last_hidden_state"]);
    let hidden = a
        .iter()
        .find(|t| t.0 == "last_hidden_state")
        .expect("hidden");
    assert_eq!(hidden.1, "1x6x64");

    // The same inputs loaded from files give what tract gives.
    let ids: Vec<i64> = vec![3, 1, 4, 1, 5, 9];
    let mask: Vec<i64> = vec![1, 1, 1, 1, 0, 0];
    let raw = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(sim.path("ids.raw"), raw(&ids)).expect("ids");
    std::fs::write(sim.path("mask.raw"), raw(&mask)).expect("mask");
    sim.time(
        "e.plan",
        5,
        &[
            "--loadInputs=input_ids:ids.raw,attention_mask:mask.raw",
            &sim.arg("--exportOutput", "loaded.json"),
        ],
    )
    .assert_passed();
    let expected = tract_outputs(
        &model,
        vec![
            Tensor::from_shape(&[1, 6], &ids).expect("ids"),
            Tensor::from_shape(&[1, 6], &mask).expect("mask"),
        ],
    );
    let loaded = exported(&sim, "loaded.json");
    assert_eq!(loaded.len(), expected.len());
    // tract gives the model's order; the export is matched by name.
    for (name, want) in ["last_hidden_state", "embeddings"].iter().zip(&expected) {
        let tensor = loaded.iter().find(|t| t.0 == *name).expect("exported");
        let want = want.to_plain_array_view::<f32>().expect("f32");
        assert_eq!(tensor.2.len(), want.len(), "{name}");
        for (got, want) in tensor.2.iter().zip(want.iter()) {
            // 6 significant digits, as trtexec prints them.
            let want = f64::from(*want);
            assert!(
                (got - want).abs() <= 5e-6 * want.abs(),
                "{name}: {got} vs {want}"
            );
        }
    }
    assert_ne!(loaded, a);
}

#[test]
fn load_inputs_are_checked() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    std::fs::write(sim.path("short.raw"), [0u8; 12]).expect("raw");
    let run = sim.time("e.plan", 5, &["--loadInputs=image:short.raw"]);
    run.assert_code(1);
    assert!(
        run.log
            .contains("has 12 bytes, but the binding 1x3x64x64 fp32 needs 49152"),
        "{}",
        run.log
    );
    let run = sim.time("e.plan", 5, &["--loadInputs=pixels:short.raw"]);
    run.assert_code(1);
    assert!(
        run.log
            .contains("Cannot find input tensor with name \"pixels\"")
    );
    let run = sim.time("e.plan", 5, &["--loadInputs=image:absent.raw"]);
    run.assert_code(1);
    assert!(run.log.contains("Cannot open input file absent.raw"));
    // Shapes outside the profile are refused; unknown names too.
    let run = sim.time("e.plan", 5, &["--shapes=image:2x3x64x64"]);
    run.assert_code(1);
    assert!(run.log.contains("outside the optimization profile"));
    let run = sim.time("e.plan", 5, &["--shapes=pixels:1x3x64x64"]);
    run.assert_code(1);
}

#[test]
fn dynamic_profiles_take_shapes_in_range() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(
        &model,
        "e.plan",
        &[
            "--minShapes=image:1x3x64x64",
            "--optShapes=image:2x3x64x64",
            "--maxShapes=image:4x3x64x64",
        ],
    );
    let run = sim.time(
        "e.plan",
        5,
        &[
            "--shapes=image:3x3x64x64",
            &sim.arg("--exportOutput", "o.json"),
        ],
    );
    run.assert_passed();
    assert!(
        run.log
            .contains("Output binding for logits with dimensions 3x10")
    );
    assert_eq!(exported(&sim, "o.json")[0].1, "3x10");
    // Shapes that contradict the model are refused at build time.
    let run = sim.run_owned(&[
        format!("--onnx={}", model.display()),
        sim.arg("--saveEngine", "x.plan"),
        "--shapes=image:1x4x64x64".into(),
    ]);
    run.assert_code(1);
    assert!(
        run.log.contains("dimension 1 is 3 in the model"),
        "{}",
        run.log
    );
}
