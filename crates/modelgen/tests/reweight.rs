//! `reweight` turns the `onnx` wheel's constant-weight models into well-scaled seeded ones.
//! Needs `pip install onnx` (or TRTMC_ONNX_MODELS pointing at its `backend/test/data/light`).

mod common;

use common::*;
use prost::Message;
use tract_onnx::pb;
use trtmc_modelgen::reweight;

const INPUT_LEN: usize = 3 * 224 * 224;

fn outputs(plan: &Plan, input_seed: u64) -> Vec<f32> {
    let input = f32_tensor(&[1, 3, 224, 224], pseudo_random(INPUT_LEN, input_seed));
    let out = run(plan, vec![input]).unwrap();
    values(&out[0])
}

/// Checks one light model; `softmax` says whether its output is already a probability vector.
fn check(file: &str, softmax: bool) {
    let original = read_light_model(file);
    let before = outputs(&load(&original).unwrap(), 1);

    let a = reweight(&original, 1).unwrap();
    assert_eq!(
        a,
        reweight(&original, 1).unwrap(),
        "{file}: not deterministic"
    );
    let plan = load(&a).unwrap();
    let x1 = outputs(&plan, 1);
    let x2 = outputs(&plan, 2);
    assert_eq!(x1.len(), before.len());
    assert!(
        x1.iter().chain(&x2).all(|v| v.is_finite()),
        "{file}: non-finite output"
    );
    assert!(
        max_abs_diff(&x1, &x2) > 1e-2 * x1.iter().fold(0.0f32, |m, v| m.max(v.abs())),
        "{file}: output ignores the input"
    );
    eprintln!(
        "{file}: output spread {:.3e} before, {:.3e} after; max |output| {:.3e}; input change moves it by {:.3e}",
        std_dev(&before),
        std_dev(&x1),
        x1.iter().fold(0.0f32, |m, v| m.max(v.abs())),
        max_abs_diff(&x1, &x2)
    );
    if softmax {
        let top = x1.iter().copied().fold(0.0, f32::max);
        assert!(
            (0.0015..0.9).contains(&top),
            "{file}: top probability {top}"
        );
    } else {
        let spread = std_dev(&x1);
        assert!(
            (0.05..50.0).contains(&spread),
            "{file}: logit spread {spread}"
        );
    }
    let other_seed = outputs(&load(&reweight(&original, 2).unwrap()).unwrap(), 1);
    assert!(
        max_abs_diff(&x1, &other_seed) > 1e-4,
        "{file}: seeds 1 and 2 agree"
    );

    // Structure is kept: same outputs, same real input, only ConstantOfShape nodes removed.
    let (m0, m1) = (
        pb::ModelProto::decode(&original[..]).unwrap(),
        pb::ModelProto::decode(&a[..]).unwrap(),
    );
    let (g0, g1) = (m0.graph.unwrap(), m1.graph.unwrap());
    let ops = |g: &pb::GraphProto| {
        g.node
            .iter()
            .filter(|n| n.op_type != "ConstantOfShape")
            .map(|n| n.op_type.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ops(&g0), ops(&g1));
    assert!(g1.node.iter().all(|n| n.op_type != "ConstantOfShape"));
    assert_eq!(g0.output, g1.output);
    assert_eq!(m0.opset_import, m1.opset_import);

    // Every BatchNormalization variance is a positive initializer now.
    let mut checked = 0;
    for bn in g1.node.iter().filter(|n| n.op_type == "BatchNormalization") {
        let var = g1
            .initializer
            .iter()
            .find(|t| t.name == bn.input[4])
            .expect("variance initializer");
        let v: Vec<f32> = var
            .raw_data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert!(
            !v.is_empty() && v.iter().all(|&x| x > 0.0),
            "{file}: {} has a non-positive variance",
            bn.input[4]
        );
        checked += 1;
    }
    assert!(
        checked > 50,
        "{file}: only {checked} BatchNormalization nodes"
    );
}

#[test]
fn reweighting_a_generated_model_keeps_it_runnable() {
    // An IR 8 model whose weights are already initializers (no ConstantOfShape).
    let original = trtmc_modelgen::generate("tiny-cnn", 1).unwrap();
    let image = || f32_tensor(&[1, 3, 64, 64], pseudo_random(3 * 64 * 64, 4));
    let before = values(&run(&load(&original).unwrap(), vec![image()]).unwrap()[0]);
    let after = values(
        &run(
            &load(&reweight(&original, 9).unwrap()).unwrap(),
            vec![image()],
        )
        .unwrap()[0],
    );
    assert_eq!(after.len(), 10);
    assert!(after.iter().all(|v| v.is_finite()));
    assert!(max_abs_diff(&before, &after) > 1e-3);
}

#[test]
fn light_resnet50_gets_usable_weights() {
    check("light_resnet50.onnx", true);
}

#[test]
fn light_densenet121_gets_usable_weights() {
    check("light_densenet121.onnx", false);
}
