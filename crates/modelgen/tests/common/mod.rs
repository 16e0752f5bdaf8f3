//! Helpers shared by the integration tests: load ONNX bytes in tract, run, read outputs, and
//! find the `onnx` wheel's test models.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tract_onnx::prelude::*;

pub type Plan = Arc<TypedRunnableModel>;

/// Loads, optimizes and plans a model the way the runtime does, keeping symbolic dims.
pub fn load(bytes: &[u8]) -> Result<Plan> {
    let model = tract_onnx::onnx().model_for_read(&mut &bytes[..])?;
    model.into_optimized()?.into_runnable()
}

pub fn run(plan: &Plan, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let outputs = plan.run(inputs.into_iter().map(|t| t.into_tvalue()).collect())?;
    Ok(outputs.into_iter().map(|v| v.into_tensor()).collect())
}

pub fn f32_tensor(shape: &[usize], data: Vec<f32>) -> Tensor {
    Tensor::from_shape(shape, &data).expect("shape matches data")
}

pub fn i64_tensor(shape: &[usize], data: Vec<i64>) -> Tensor {
    Tensor::from_shape(shape, &data).expect("shape matches data")
}

pub fn values(t: &Tensor) -> Vec<f32> {
    t.to_plain_array_view::<f32>()
        .expect("f32 tensor")
        .iter()
        .copied()
        .collect()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A deterministic pseudo-random sequence in [-1, 1) (xorshift; test inputs only).
pub fn pseudo_random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

pub fn std_dev(v: &[f32]) -> f32 {
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / v.len() as f32).sqrt()
}

/// The folder with the `onnx` wheel's `light_*.onnx` models: `TRTMC_ONNX_MODELS` if set, else
/// asked from the installed `onnx` Python package.
pub fn onnx_light_models() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TRTMC_ONNX_MODELS") {
        return Ok(PathBuf::from(dir));
    }
    let out = Command::new("python3")
        .args(["-c", "import onnx,os;print(os.path.dirname(onnx.__file__))"])
        .output()
        .context("could not start python3; install Python 3 and `pip install onnx`, or set TRTMC_ONNX_MODELS")?;
    if !out.status.success() {
        bail!(
            "the `onnx` Python package is missing: run `pip install onnx` (or set TRTMC_ONNX_MODELS to a folder with light_resnet50.onnx)\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let root = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(PathBuf::from(root).join("backend/test/data/light"))
}

pub fn read_light_model(file: &str) -> Vec<u8> {
    let dir = onnx_light_models().unwrap_or_else(|e| panic!("{e:#}"));
    let path = dir.join(file);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run `pip install onnx`",
            path.display()
        )
    })
}

/// One `tiny-gpt` call: `ids` at absolute positions `past..past+seq` on top of the cache
/// `past_kv` (one (key, value) pair per layer). Returns logits [1, seq, vocab] and the new cache.
pub fn gpt_step(
    plan: &Plan,
    ids: &[i64],
    past_kv: &[(Tensor, Tensor)],
) -> Result<(Tensor, Vec<(Tensor, Tensor)>)> {
    let spec = trtmc_modelgen::TINY_GPT;
    let seq = ids.len();
    let past = past_kv.first().map_or(0, |(k, _)| k.shape()[2]);
    let total = past + seq;
    let positions: Vec<i64> = (past..total).map(|p| p as i64).collect();
    // Causal over past + current: query i (absolute past + i) sees keys 0..=past + i.
    let bias: Vec<f32> = (0..seq)
        .flat_map(|i| (0..total).map(move |j| if j <= past + i { 0.0 } else { spec.mask_value }))
        .collect();
    let mut inputs = vec![
        i64_tensor(&[1, seq], ids.to_vec()),
        i64_tensor(&[1, seq], positions),
        f32_tensor(&[1, 1, seq, total], bias),
    ];
    for (k, v) in past_kv {
        inputs.push(k.clone());
        inputs.push(v.clone());
    }
    let mut outputs = run(plan, inputs)?.into_iter();
    let logits = outputs.next().context("no logits output")?;
    let mut cache = Vec::new();
    while let (Some(k), Some(v)) = (outputs.next(), outputs.next()) {
        cache.push((k, v));
    }
    Ok((logits, cache))
}

/// The empty cache of a prefill call: [1, heads, 0, head_dim] per layer.
pub fn empty_cache() -> Vec<(Tensor, Tensor)> {
    let spec = trtmc_modelgen::TINY_GPT;
    let empty = || f32_tensor(&[1, spec.heads, 0, spec.head_dim], vec![]);
    (0..spec.layers).map(|_| (empty(), empty())).collect()
}

pub fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, &x)| {
            if x > best.1 { (i, x) } else { best }
        })
        .0
}
