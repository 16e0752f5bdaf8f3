//! Cross-checks with the Python reference stack: `onnx.checker.check_model(full_check=True)`
//! passes on every generated model and onnxruntime agrees with tract within 1e-4.
//!
//! Needs `pip install onnx onnxruntime`; fails (does not skip) when they are missing, unless
//! TRTMC_SKIP_PYTHON=1.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use prost::Message;
use serde_json::{Value, json};
use tract_onnx::prelude::*;
use trtmc_modelgen::vocab::{BOS_ID, PAD_ID, encode_bytes};
use trtmc_modelgen::{DEFAULT_SEED, generate, reweight};

fn spec(t: &Tensor) -> Value {
    let (dtype, data) = if t.datum_type() == i64::datum_type() {
        let v: Vec<i64> = t
            .to_plain_array_view::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect();
        ("i64", json!(v))
    } else {
        ("f32", json!(values(t)))
    };
    json!({"dtype": dtype, "shape": t.shape(), "data": data})
}

/// Runs `inputs` through tract and writes model.onnx + io.json into `dir/name`.
fn write_case(dir: &Path, name: &str, model: &[u8], inputs: Vec<(String, Tensor)>) -> PathBuf {
    let plan = load(model).unwrap();
    let outputs = run(&plan, inputs.iter().map(|(_, t)| t.clone()).collect()).unwrap();
    // tract returns outputs in the ONNX graph's output order.
    let graph = tract_onnx::pb::ModelProto::decode(model)
        .unwrap()
        .graph
        .unwrap();
    let out_names: Vec<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    let case = dir.join(name);
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("model.onnx"), model).unwrap();
    let io = json!({
        "tolerance": 1e-4,
        "inputs": inputs.iter().map(|(n, t)| (n.clone(), spec(t))).collect::<serde_json::Map<_, _>>(),
        "outputs": out_names.iter().zip(&outputs).map(|(n, t)| (n.clone(), spec(t))).collect::<serde_json::Map<_, _>>(),
    });
    std::fs::write(case.join("io.json"), serde_json::to_vec(&io).unwrap()).unwrap();
    case
}

fn named(names: &[&str], tensors: Vec<Tensor>) -> Vec<(String, Tensor)> {
    names.iter().map(|s| s.to_string()).zip(tensors).collect()
}

fn gpt_inputs(ids: &[i64], past_kv: &[(Tensor, Tensor)]) -> Vec<(String, Tensor)> {
    let spec = trtmc_modelgen::TINY_GPT;
    let (seq, past) = (ids.len(), past_kv[0].0.shape()[2]);
    let total = past + seq;
    let bias = (0..seq)
        .flat_map(|i| (0..total).map(move |j| if j <= past + i { 0.0 } else { spec.mask_value }))
        .collect();
    let mut v = named(
        &[spec.input_ids, spec.position_ids, spec.attention_bias],
        vec![
            i64_tensor(&[1, seq], ids.to_vec()),
            i64_tensor(&[1, seq], (past as i64..total as i64).collect()),
            f32_tensor(&[1, 1, seq, total], bias),
        ],
    );
    for (layer, (k, val)) in past_kv.iter().enumerate() {
        v.push((spec.past_key(layer), k.clone()));
        v.push((spec.past_value(layer), val.clone()));
    }
    v
}

#[test]
fn onnx_checker_and_onnxruntime_agree_with_tract() {
    if std::env::var("TRTMC_SKIP_PYTHON").as_deref() == Ok("1") {
        eprintln!("TRTMC_SKIP_PYTHON=1: skipping the onnx/onnxruntime cross-check");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();

    let cnn = generate("tiny-cnn", DEFAULT_SEED).unwrap();
    let image = f32_tensor(&[2, 3, 64, 64], pseudo_random(2 * 3 * 64 * 64, 11));
    cases.push(write_case(
        dir.path(),
        "tiny-cnn",
        &cnn,
        named(&["image"], vec![image]),
    ));

    let enc = generate("tiny-encoder", DEFAULT_SEED).unwrap();
    let mut ids = vec![BOS_ID];
    ids.extend(encode_bytes("cross-check"));
    let n = ids.len();
    let mut row2 = ids[..5].to_vec();
    row2.resize(n, PAD_ID);
    let mask: Vec<i64> = (0..2 * n).map(|i| i64::from(i < n || i - n < 5)).collect();
    let enc_inputs = vec![
        i64_tensor(&[2, n], [ids.clone(), row2].concat()),
        i64_tensor(&[2, n], mask),
    ];
    cases.push(write_case(
        dir.path(),
        "tiny-encoder",
        &enc,
        named(&["input_ids", "attention_mask"], enc_inputs),
    ));

    // tiny-gpt: a prefill with an empty cache, then one decode step on the resulting cache.
    let gpt = generate("tiny-gpt", DEFAULT_SEED).unwrap();
    cases.push(write_case(
        dir.path(),
        "tiny-gpt-prefill",
        &gpt,
        gpt_inputs(&ids, &empty_cache()),
    ));
    let (_, cache) = gpt_step(&load(&gpt).unwrap(), &ids, &empty_cache()).unwrap();
    cases.push(write_case(
        dir.path(),
        "tiny-gpt-decode",
        &gpt,
        gpt_inputs(&[BOS_ID + 40], &cache),
    ));

    let resnet = reweight(&read_light_model("light_resnet50.onnx"), DEFAULT_SEED).unwrap();
    let image = f32_tensor(&[1, 3, 224, 224], pseudo_random(3 * 224 * 224, 12));
    cases.push(write_case(
        dir.path(),
        "light_resnet50-reweighted",
        &resnet,
        named(&["gpu_0/data_0"], vec![image]),
    ));

    let densenet = reweight(&read_light_model("light_densenet121.onnx"), DEFAULT_SEED).unwrap();
    let image = f32_tensor(&[1, 3, 224, 224], pseudo_random(3 * 224 * 224, 13));
    cases.push(write_case(
        dir.path(),
        "light_densenet121-reweighted",
        &densenet,
        named(&["data_0"], vec![image]),
    ));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_onnx.py");
    let out = Command::new("python3").arg(&script).args(&cases).output().unwrap_or_else(|e| {
        panic!("cannot run python3 ({e}); install Python 3 with `pip install onnx onnxruntime`, or set TRTMC_SKIP_PYTHON=1")
    });
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{report}");
    match out.status.code() {
        Some(0) => {}
        Some(3) => panic!(
            "onnx/onnxruntime missing: run `pip install onnx onnxruntime` (or set TRTMC_SKIP_PYTHON=1)\n{report}"
        ),
        _ => panic!("onnx checker or onnxruntime disagreed with tract:\n{report}"),
    }
}
