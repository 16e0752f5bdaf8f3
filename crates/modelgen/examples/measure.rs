//! Parameter count, ONNX size and tract time per call of each built-in model, with the default
//! input shapes (for tiny-gpt also one decode step on a 16-token cache).
//!
//! cargo run -p trtmc-modelgen --example measure [ITERATIONS]

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prost::Message;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use trtmc_modelgen::{DEFAULT_SEED, InputSpec, TINY_GPT, builtin_models, generate};

fn main() -> Result<()> {
    let iterations: usize = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .context("ITERATIONS must be a positive integer")?,
        None => 50,
    };
    println!("| model | parameters | ONNX bytes | call | median per call | min |");
    println!("|---|---|---|---|---|---|");
    for model in builtin_models() {
        let bytes = generate(model.name, DEFAULT_SEED)?;
        let params = parameter_count(&bytes)?;
        let plan = tract_onnx::onnx()
            .model_for_read(&mut &bytes[..])?
            .into_optimized()?
            .into_runnable()?;
        let inputs: TVec<TValue> = model
            .inputs
            .iter()
            .map(default_input)
            .collect::<Result<_>>()?;
        let (median, min) = time(&plan, &inputs, iterations)?;
        let label = if model.name == "tiny-gpt" {
            "prefill 16"
        } else {
            "default shapes"
        };
        println!(
            "| {} | {params} | {} | {label} | {median:.3?} | {min:.3?} |",
            model.name,
            bytes.len()
        );
        if model.name == "tiny-gpt" {
            // One new token on top of the prefill's 16-token cache.
            let prefill = plan.run(inputs.clone())?;
            let mut step: TVec<TValue> = tvec![
                Tensor::from_shape(&[1, 1], &[42i64])?.into_tvalue(),
                Tensor::from_shape(&[1, 1], &[16i64])?.into_tvalue(),
                Tensor::from_shape(&[1, 1, 1, 17], &[0f32; 17])?.into_tvalue(),
            ];
            step.extend(prefill.iter().skip(1).cloned());
            let (median, min) = time(&plan, &step, iterations)?;
            println!(
                "| {} | | | decode 1 (past 16) | {median:.3?} | {min:.3?} |",
                model.name
            );
        }
    }
    Ok(())
}

fn time(
    plan: &std::sync::Arc<TypedRunnableModel>,
    inputs: &TVec<TValue>,
    iterations: usize,
) -> Result<(Duration, Duration)> {
    for _ in 0..3 {
        plan.run(inputs.clone())?;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        plan.run(inputs.clone())?;
        samples.push(start.elapsed());
    }
    samples.sort();
    Ok((samples[samples.len() / 2], samples[0]))
}

/// Weights only: f32 initializers, not the small `const.*` helper constants.
fn parameter_count(bytes: &[u8]) -> Result<usize> {
    let graph = pb::ModelProto::decode(bytes)?.graph.context("no graph")?;
    Ok(graph
        .initializer
        .iter()
        .filter(|t| {
            t.data_type == pb::tensor_proto::DataType::Float as i32 && !t.name.starts_with("const.")
        })
        .map(|t| t.dims.iter().product::<i64>() as usize)
        .sum())
}

fn default_input(spec: &InputSpec) -> Result<TValue> {
    let shape = spec.default_shape;
    let n: usize = shape.iter().product();
    let tensor = match (spec.name, spec.dtype) {
        ("attention_mask", _) => Tensor::from_shape(shape, &vec![1i64; n])?,
        ("position_ids", _) => Tensor::from_shape(shape, &(0..n as i64).collect::<Vec<_>>())?,
        (_, "i64") => Tensor::from_shape(
            shape,
            &(0..n)
                .map(|i| 3 + (i as i64 * 37) % 256)
                .collect::<Vec<_>>(),
        )?,
        ("attention_bias", _) => {
            let (seq, total) = (shape[2], shape[3]);
            let causal: Vec<f32> = (0..seq)
                .flat_map(|i| {
                    (0..total).map(move |j| {
                        if j + seq <= i + total {
                            0.0
                        } else {
                            TINY_GPT.mask_value
                        }
                    })
                })
                .collect();
            Tensor::from_shape(shape, &causal)?
        }
        _ => Tensor::from_shape(
            shape,
            &(0..n)
                .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
                .collect::<Vec<_>>(),
        )?,
    };
    Ok(tensor.into_tvalue())
}
