//! tract's own timing loop on an ONNX model, for comparison with `trtmc-bench run` (docs/performance.md).
//! It uses tract's public API the way an application would: load, optimize, plan, then call `run` on a
//! persistent state with the same seeded input every time.
//!
//! The model is an ONNX file, or a trtmc tract bundle's `model.nnef.tar`: loaded the way `run` loads it,
//! so that the comparison is of the timing harness alone, not of two ways to optimize the model.
//!
//! Run: `cargo run --release --example tract_loop -- MODEL.onnx|model.nnef.tar WARMUP ITERATIONS`
//! Prints the median, mean and minimum call time in milliseconds as one JSON line.

use std::time::Instant;

use tract_onnx::prelude::*;

// The allocator of `trtmc-bench`'s worker, so that the comparison is of the harness alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> TractResult<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: tract_loop MODEL.onnx|model.nnef.tar WARMUP ITERATIONS");
        std::process::exit(2);
    }
    let warmup: usize = args[2].parse()?;
    let iterations: usize = args[3].parse()?;
    let model = if args[1].ends_with(".nnef.tar") {
        trtmc_runtime::tract_rt::nnef_framework()
            .model_for_path(&args[1])?
            .into_optimized()?
    } else {
        tract_onnx::onnx()
            .model_for_path(&args[1])?
            .into_optimized()?
    };
    let fact = model.input_fact(0)?.clone();
    let shape: Vec<usize> = fact
        .shape
        .as_concrete()
        .map(|s| s.to_vec())
        .unwrap_or_default();
    let n: usize = shape.iter().product();
    // Same distribution as trtmc's synthesized inputs (uniform in [-1, 1)); the values do not change the work.
    let data: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let input: Tensor = tract_ndarray::ArrayD::from_shape_vec(shape, data)?.into_tensor();
    let plan = Arc::new(TypedSimplePlan::build(model, &Default::default())?);
    let mut state = tract_core::plan::SimpleState::new(&plan)?;
    for _ in 0..warmup {
        state.run(tvec!(input.clone().into_tvalue()))?;
    }
    let mut ms = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t0 = Instant::now();
        let out = state.run(tvec!(input.clone().into_tvalue()))?;
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(out);
    }
    ms.sort_by(f64::total_cmp);
    let median = if ms.len() % 2 == 1 {
        ms[ms.len() / 2]
    } else {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    };
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    println!(
        "{{\"median_ms\": {median}, \"mean_ms\": {mean}, \"min_ms\": {}}}",
        ms[0]
    );
    Ok(())
}
