//! tract-onnx's own API on one ONNX backend-test model, for scripts/conformance.py: load the model,
//! fix its input facts to the test data's types and shapes, optimize, run once on `input_N.pb` and
//! check every output against `output_N.pb` with trtmc's element-wise check.
//!
//! Usage: `tract_check MODEL.onnx TEST_DATA_SET_DIR ATOL RTOL`; prints one JSON line
//! `{"status": "ok" | "mismatch" | "error", "message": …}` and exits 0.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use tract_onnx::prelude::*;
use trtmc_core::accuracy::{ElementType, Tensor as DataTensor};
use trtmc_core::data::check_output;
use trtmc_runtime::data::read_pb;

fn numbered(dir: &Path, prefix: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name
                .strip_prefix(prefix)?
                .strip_suffix(".pb")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

fn to_tract(t: &DataTensor) -> anyhow::Result<Tensor> {
    let v = &t.values;
    let s = &t.shape;
    Ok(match t.dtype {
        ElementType::F32 => {
            Tensor::from_shape(s, &v.iter().map(|&x| x as f32).collect::<Vec<_>>())?
        }
        ElementType::F64 => Tensor::from_shape(s, v)?,
        ElementType::I64 => {
            Tensor::from_shape(s, &v.iter().map(|&x| x as i64).collect::<Vec<_>>())?
        }
        ElementType::I32 => {
            Tensor::from_shape(s, &v.iter().map(|&x| x as i32).collect::<Vec<_>>())?
        }
        ElementType::U8 => Tensor::from_shape(s, &v.iter().map(|&x| x as u8).collect::<Vec<_>>())?,
        ElementType::I8 => Tensor::from_shape(s, &v.iter().map(|&x| x as i8).collect::<Vec<_>>())?,
        ElementType::Bool => {
            Tensor::from_shape(s, &v.iter().map(|&x| x != 0.0).collect::<Vec<_>>())?
        }
        other => bail!("test data of type {other} is not fed by this example"),
    })
}

fn check(model: &Path, set: &Path, atol: f64, rtol: f64) -> anyhow::Result<Option<String>> {
    let inputs = numbered(set, "input_")?
        .iter()
        .map(|f| read_pb(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let expected = numbered(set, "output_")?
        .iter()
        .map(|f| read_pb(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut m = tract_onnx::onnx()
        .model_for_path(model)
        .context("tract-onnx cannot load the model")?;
    let fed: TVec<TValue> = inputs
        .iter()
        .map(|t| to_tract(t).map(TValue::from))
        .collect::<anyhow::Result<_>>()?;
    for (i, t) in fed.iter().enumerate() {
        m.set_input_fact(i, InferenceFact::dt_shape(t.datum_type(), t.shape()))?;
    }
    let plan = m.into_optimized()?.into_runnable()?;
    let outputs = plan.run(fed)?;
    for (i, (got, want)) in outputs.iter().zip(&expected).enumerate() {
        let values: Vec<f64> = got
            .cast_to::<f64>()?
            .to_plain_array_view::<f64>()?
            .iter()
            .copied()
            .collect();
        let c = check_output(
            &format!("output {i}"),
            0,
            (got.shape(), &values),
            (&want.shape, &want.values),
            atol,
            rtol,
        );
        if !c.passed {
            return Ok(Some(c.describe_failure(atol, rtol)));
        }
    }
    Ok(None)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: tract_check MODEL.onnx TEST_DATA_SET_DIR ATOL RTOL");
        std::process::exit(2);
    }
    let (atol, rtol) = (
        args[3].parse().unwrap_or(1e-5),
        args[4].parse().unwrap_or(1e-5),
    );
    let outcome =
        std::panic::catch_unwind(|| check(Path::new(&args[1]), Path::new(&args[2]), atol, rtol));
    let (status, message) = match outcome {
        Ok(Ok(None)) => ("ok", String::new()),
        Ok(Ok(Some(m))) => ("mismatch", m),
        Ok(Err(e)) => ("error", format!("{e:#}")),
        Err(_) => ("error", "tract panicked".to_string()),
    };
    println!(
        "{}",
        serde_json::json!({"status": status, "message": message})
    );
}
