//! Inference mode (`--loadEngine=E`, and the timing part of a build without `--skipInference`):
//! set the shapes, load or draw the inputs, compute outputs with tract when they are exported,
//! simulate the warm-up and the timed queries, and print and export what trtexec does.

use std::path::Path;
use std::time::Instant;

use rand_chacha::ChaCha20Rng;

use crate::build::{options_dump, runs_path};
use crate::engine::{Engine, LoadError};
use crate::exports::{self, LayerProfile};
use crate::log::{dims_text, g6};
use crate::model::{self, HostTensor, Values};
use crate::options::Options;
use crate::timing::{self, LoopSpec, Query, Stat, coefficient_of_variance};
use crate::{Ctx, Fail};

/// Averages printed at each end of the trace before the middle is elided.
const TRACE_EDGE: usize = 200;

fn setup_failed(mut errors: Vec<String>) -> Fail {
    errors.push("Engine deserialization failed".into());
    errors.push("Failed to create engine from model or file.".into());
    errors.push("Engine set up failed".into());
    Fail::Trt(errors)
}

pub fn load_and_run(ctx: &mut Ctx, o: &Options) -> Result<(), Fail> {
    let Some(path) = o.load_engine.as_deref() else {
        return Err(Fail::trt("Model missing or format not supported"));
    };
    options_dump(ctx, o, false);
    ctx.log
        .info(&format!("TensorRT version: {}", ctx.version.dotted()));
    ctx.log.info("Loading standard plugins");
    let started = Instant::now();
    let engine = match Engine::read(path, &ctx.version) {
        Ok(engine) => engine,
        Err(LoadError::Unreadable(e)) => {
            return Err(Fail::Trt(vec![
                format!("Error opening engine file: {} ({e})", path.display()),
                "Failed to create engine from model or file.".into(),
                "Engine set up failed".into(),
            ]));
        }
        Err(LoadError::NotAnEngine) => {
            return Err(setup_failed(vec![
                "Error[1]: [runtime.cpp::parsePlan::314] Error Code 1: Serialization \
                 (Serialization assertion plan->header.magicTag == rt::kPLAN_MAGIC_TAG failed.)"
                    .into(),
            ]));
        }
        Err(LoadError::OtherVersion(built)) => {
            return Err(setup_failed(vec![format!(
                "Error[6]: IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The \
                 engine plan file is not compatible with this version of TensorRT, expecting \
                 library version {} got {built}, please rebuild.)",
                ctx.version.library()
            )]));
        }
    };
    deserialized(ctx, &engine, started);
    run(ctx, &engine, Some(path), o)
}

/// The lines trtexec prints once an engine is deserialized.
pub fn deserialized(ctx: &mut Ctx, engine: &Engine, started: Instant) {
    ctx.log.info(&format!(
        "[TRT] Loaded engine size: {} MiB",
        engine.size_mib.floor()
    ));
    ctx.log.info(&format!(
        "Engine deserialized in {} sec.",
        g6(started.elapsed().as_secs_f64())
    ));
}

/// Runs the engine: `engine_path` (when it has one) keeps the run counter beside it.
pub fn run(
    ctx: &mut Ctx,
    engine: &Engine,
    engine_path: Option<&Path>,
    o: &Options,
) -> Result<(), Fail> {
    ctx.log.info(
        "[TRT] [MemUsageChange] TensorRT-managed allocation in IExecutionContext creation: CPU +0, GPU +0, now: CPU 0, GPU 12 (MiB)",
    );
    ctx.log.info("Setting persistentCacheLimit to 0 bytes.");
    let shapes = input_shapes(ctx, engine, o)?;
    let outputs = output_shapes(engine, &shapes);
    ctx.log.info(&format!(
        "Created execution context with device memory size: {} MiB",
        g6(0.119629)
    ));
    let inputs = input_values(ctx, engine, &shapes, o)?;
    for (binding, dims) in engine.inputs.iter().zip(&shapes) {
        ctx.log.info(&format!(
            "Input binding for {} with dimensions {} and type {} is created.",
            binding.name,
            dims_text(dims),
            binding.dtype.trt_name()
        ));
    }
    for (binding, dims) in engine.outputs.iter().zip(&outputs) {
        ctx.log.info(&format!(
            "Output binding for {} with dimensions {} and type {} is created.",
            binding.name,
            dims_text(dims),
            binding.dtype.trt_name()
        ));
    }
    ctx.log.info("Starting inference");
    if o.cuda_graph {
        ctx.log
            .info("Capturing CUDA graph for the current execution context");
        ctx.log.info(
            "Successfully captured CUDA graph for the current execution context. When profiling \
             with Nsight Systems, add \"--cuda-graph-trace=node\" to the nsys command to see \
             per-kernel execution times.",
        );
    }
    if engine.crash_infer {
        ctx.log.flush();
        std::process::abort();
    }
    if let Some(file) = &o.export_output {
        let mut results = model::run(Path::new(&engine.onnx), &inputs).map_err(|e| {
            Fail::trt(format!(
                "the simulator cannot compute outputs with tract from {}: {e}",
                engine.onnx
            ))
        })?;
        if engine.wrong_outputs {
            for t in &mut results {
                t.values = std::mem::replace(&mut t.values, Values::U8(Vec::new())).perturbed();
            }
        }
        exports::in_hash_order(&mut results);
        write(file, &exports::output_json(&results), "--exportOutput")?;
    }

    let counter = next_run(engine_path);
    let mut rng = timing::rng(ctx.config.seed, &engine.tokens, counter, "timing");
    let in_bytes: usize = engine
        .inputs
        .iter()
        .zip(&shapes)
        .map(|(b, d)| d.iter().product::<usize>() * b.dtype.size())
        .sum();
    let out_bytes: usize = engine
        .outputs
        .iter()
        .zip(&outputs)
        .map(|(b, d)| d.iter().product::<usize>() * b.dtype.size())
        .sum();
    let copy_ms = |bytes: usize| 0.003 + bytes as f64 / 25.0e6;
    let spec = LoopSpec {
        warm_up_ms: o.warm_up_ms,
        iterations: o.iterations + ctx.version.reference_pair_queries(),
        duration_s: o.duration_s,
        latency_ms: engine.latency_ms,
        noise: ctx.config.noise,
        h2d_ms: if o.data_transfers {
            copy_ms(in_bytes)
        } else {
            0.0
        },
        d2h_ms: if o.data_transfers {
            copy_ms(out_bytes)
        } else {
            0.0
        },
        enqueue_ms: if o.cuda_graph {
            0.002
        } else {
            0.01 + 0.002 * engine.layers.len() as f64
        },
    };
    let count = spec.timed_queries();
    let queries = spec.run(count, &mut rng);
    let profiling = o.dump_profile || o.export_profile.is_some();
    // 10.x attaches the profiler to the timed run unless told to profile separately.
    let profiler_in_timed_run =
        profiling && !ctx.version.inverted_inference_defaults() && !o.separate_profile_run;
    if profiler_in_timed_run {
        ctx.log.info(
            "The e2e network timing is not reported since it is inaccurate due to the extra \
             synchronizations when the profiler is enabled.",
        );
        ctx.log.info(
            "To show e2e network timing report, add --separateProfileRun to profile layer timing \
             in a separate run or remove --dumpProfile to disable the profiler.",
        );
        ctx.log.info("");
    } else {
        report(ctx, &spec, &queries, o);
    }
    if profiling {
        let profiled = if profiler_in_timed_run {
            queries.clone()
        } else {
            spec.run(count, &mut rng)
        };
        profile(ctx, engine, &profiled, o)?;
    }
    if let Some(file) = &o.export_times {
        write(file, &exports::times_json(&queries), "--exportTimes")?;
    }
    if let Some(file) = &o.export_layer_info {
        write_layer_info(ctx, engine, file)?;
    }
    Ok(())
}

/// `--exportLayerInfo`.
pub fn write_layer_info(_ctx: &mut Ctx, engine: &Engine, file: &Path) -> Result<(), Fail> {
    let text = engine.layer_info_json().map_err(Fail::Sim)?;
    write(file, &text, "--exportLayerInfo")
}

fn write(file: &Path, text: &str, flag: &str) -> Result<(), Fail> {
    std::fs::write(file, text).map_err(|e| {
        Fail::trt(format!(
            "Cannot open file {} for {flag}: {e}",
            file.display()
        ))
    })
}

/// Reads and bumps the counter in `E.runs`: 0 for a fresh engine. Counter trouble is never
/// fatal (the run then uses 0, or does not advance).
fn next_run(engine_path: Option<&Path>) -> u64 {
    let Some(engine) = engine_path else {
        return 0;
    };
    let path = runs_path(engine);
    let current = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let _ = std::fs::write(&path, format!("{}\n", current.saturating_add(1)));
    current
}

/// Inference shapes: `--shapes` within the optimization profile, else the profile's OPT shape.
fn input_shapes(ctx: &mut Ctx, engine: &Engine, o: &Options) -> Result<Vec<Vec<usize>>, Fail> {
    if let Some(unknown) = o
        .shapes
        .iter()
        .find(|s| !engine.inputs.iter().any(|b| b.name == s.name))
    {
        return Err(Fail::trt(format!(
            "Cannot find input tensor with name \"{}\" in the engine bindings! Please make sure \
             the input tensor names are correct.",
            unknown.name
        )));
    }
    let mut shapes = Vec::with_capacity(engine.inputs.len());
    for b in &engine.inputs {
        let dims = match o.shapes.iter().find(|s| s.name == b.name) {
            Some(spec) => {
                let fits = spec.dims.len() == b.min.len()
                    && spec
                        .dims
                        .iter()
                        .zip(b.min.iter().zip(&b.max))
                        .all(|(d, (lo, hi))| lo <= d && d <= hi);
                if !fits {
                    return Err(Fail::trt(format!(
                        "Error[3]: IExecutionContext::setInputShape: Error Code 3: API Usage Error \
                         (Input {}: dimensions {} are outside the optimization profile MIN={} MAX={}.)",
                        b.name,
                        dims_text(&spec.dims),
                        dims_text(&b.min),
                        dims_text(&b.max)
                    )));
                }
                spec.dims.clone()
            }
            None => b.dims.clone(),
        };
        if b.min != b.max || o.shapes.iter().any(|s| s.name == b.name) {
            ctx.log.info(&format!(
                "Set shape of input tensor {} to: {}",
                b.name,
                dims_text(&dims)
            ));
        }
        shapes.push(dims);
    }
    Ok(shapes)
}

/// Output shapes for the inference input shapes (recomputed with tract when they differ from
/// the profile's OPT shapes and the model is still there).
fn output_shapes(engine: &Engine, shapes: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let stored: Vec<Vec<usize>> = engine.outputs.iter().map(|b| b.dims.clone()).collect();
    if engine.inputs.iter().zip(shapes).all(|(b, d)| b.dims == *d) {
        return stored;
    }
    let inputs: Vec<_> = engine
        .inputs
        .iter()
        .zip(shapes)
        .map(|(b, d)| (b.name.clone(), b.dtype, d.clone()))
        .collect();
    match model::analyse(Path::new(&engine.onnx), &inputs) {
        Ok((_, outputs)) if outputs.len() == stored.len() => {
            outputs.into_iter().map(|(_, _, dims)| dims).collect()
        }
        _ => stored,
    }
}

/// One value set per input: `--loadInputs` files (checked against the binding) or seeded random
/// values (the same for every run and engine: keyed by the config seed and the input name).
fn input_values(
    ctx: &mut Ctx,
    engine: &Engine,
    shapes: &[Vec<usize>],
    o: &Options,
) -> Result<Vec<HostTensor>, Fail> {
    if let Some((name, _)) = o
        .load_inputs
        .iter()
        .find(|(name, _)| !engine.inputs.iter().any(|b| b.name == *name))
    {
        let known: Vec<&str> = engine.inputs.iter().map(|b| b.name.as_str()).collect();
        return Err(Fail::trt(format!(
            "Cannot find input tensor with name \"{name}\" given in --loadInputs in the engine \
             bindings (inputs: {})",
            known.join(", ")
        )));
    }
    let mut tensors = Vec::with_capacity(engine.inputs.len());
    for (b, dims) in engine.inputs.iter().zip(shapes) {
        let count: usize = dims.iter().product();
        let values = match o.load_inputs.iter().rev().find(|(name, _)| *name == b.name) {
            Some((_, file)) => {
                let bytes = std::fs::read(file).map_err(|e| {
                    Fail::trt(format!(
                        "Cannot open input file {} for input {}: {e}",
                        file.display(),
                        b.name
                    ))
                })?;
                let expected = count * b.dtype.size();
                if bytes.len() != expected {
                    return Err(Fail::trt(format!(
                        "Input file {} for input {} has {} bytes, but the binding {} {} needs {expected}",
                        file.display(),
                        b.name,
                        bytes.len(),
                        dims_text(dims),
                        b.dtype.trt_name()
                    )));
                }
                ctx.log.info(&format!(
                    "Using values loaded from {} for input {}",
                    file.display(),
                    b.name
                ));
                Values::from_le_bytes(b.dtype, &bytes)
            }
            None => {
                ctx.log
                    .info(&format!("Using random values for input {}", b.name));
                let mut rng = input_rng(ctx.config.seed, &b.name);
                Values::random(b.dtype, count, &mut rng)
            }
        };
        tensors.push(HostTensor {
            name: b.name.clone(),
            dims: dims.clone(),
            values,
        });
    }
    Ok(tensors)
}

fn input_rng(seed: u64, name: &str) -> ChaCha20Rng {
    timing::rng(seed, &[name.to_string()], 0, "inputs")
}

/// Warm-up and trace lines, trace averages, and the performance summary.
fn report(ctx: &mut Ctx, spec: &LoopSpec, queries: &[Query], o: &Options) {
    let warmup = spec.warmup_queries();
    let (Some(first), Some(last)) = (queries.first(), queries.last()) else {
        return;
    };
    let walltime_s = (last.end_d2h - first.start_enq) / 1000.0;
    ctx.log.info(&format!(
        "Warmup completed {warmup} queries over {} ms",
        g6(spec.warm_up_ms)
    ));
    ctx.log.info(&format!(
        "Timing trace has {} queries over {} s",
        queries.len(),
        g6(walltime_s)
    ));
    ctx.log.info("");
    ctx.log.info("=== Trace details ===");
    let runs = usize::try_from(o.avg_runs).unwrap_or(usize::MAX).max(1);
    ctx.log.info(&format!("Trace averages of {runs} runs:"));
    let groups: Vec<&[Query]> = queries.chunks_exact(runs).collect();
    let average_line = |group: &[Query]| {
        let n = group.len() as f64;
        let mean = |f: fn(&Query) -> f64| group.iter().map(f).sum::<f64>() / n;
        format!(
            "Average on {runs} runs - GPU latency: {} ms - Host latency: {} ms (enqueue {} ms)",
            g6(mean(|q| q.compute)),
            g6(mean(|q| q.latency)),
            g6(mean(|q| q.end_enq - q.start_enq))
        )
    };
    if groups.len() > 2 * TRACE_EDGE {
        for group in &groups[..TRACE_EDGE] {
            ctx.log.info(&average_line(group));
        }
        let omitted = queries.len().saturating_sub(2 * TRACE_EDGE * runs);
        ctx.log.info(&format!("... Omitting {omitted} lines"));
        for group in &groups[groups.len() - TRACE_EDGE..] {
            ctx.log.info(&average_line(group));
        }
    } else {
        for group in &groups {
            ctx.log.info(&average_line(group));
        }
    }
    ctx.log.info("");
    let column = |f: fn(&Query) -> f64| queries.iter().map(f).collect::<Vec<f64>>();
    let compute = column(|q| q.compute);
    let stat_line = |name: &str, values: &[f64]| {
        let s = Stat::of(values, &o.percentiles);
        let mut line = format!(
            "{name}: min = {} ms, max = {} ms, mean = {} ms, median = {} ms",
            g6(s.min),
            g6(s.max),
            g6(s.mean),
            g6(s.median)
        );
        for (p, v) in &s.percentiles {
            line.push_str(&format!(", percentile({}%) = {} ms", g6(*p), g6(*v)));
        }
        line
    };
    ctx.log.info("=== Performance summary ===");
    ctx.log.info(&format!(
        "Throughput: {} qps",
        g6(queries.len() as f64 / walltime_s)
    ));
    ctx.log.info(&stat_line("Latency", &column(|q| q.latency)));
    ctx.log.info(&stat_line(
        "Enqueue Time",
        &column(|q| q.end_enq - q.start_enq),
    ));
    ctx.log.info(&stat_line("H2D Latency", &column(|q| q.h2d)));
    ctx.log.info(&stat_line("GPU Compute Time", &compute));
    ctx.log.info(&stat_line("D2H Latency", &column(|q| q.d2h)));
    ctx.log
        .info(&format!("Total Host Walltime: {} s", g6(walltime_s)));
    ctx.log.info(&format!(
        "Total GPU Compute Time: {} s",
        g6(compute.iter().sum::<f64>() / 1000.0)
    ));
    let cv = coefficient_of_variance(&compute);
    if cv > ctx.version.unstable_threshold_percent() {
        ctx.log.warn(&format!(
            "* GPU compute time is unstable, with coefficient of variance = {}%.",
            g6(cv)
        ));
        ctx.log.warn(ctx.version.unstable_advice());
    }
    ctx.log
        .info("Explanations of the performance metrics are printed in the verbose logs.");
    ctx.log.info("");
}

/// What the layer profiler adds to each layer of each query: it synchronizes and times every layer
/// apart, so a profiled run's layers add up to more than the timed run's GPU compute time (a public
/// TensorRT 11.1 log: 40 % more). The shape, not the size, is what the simulator keeps.
const PROFILER_OVERHEAD_FACTOR: f64 = 1.08;
const PROFILER_OVERHEAD_MS_PER_LAYER: f64 = 0.02;

/// Per-layer times: every query's compute time split by the layers' shares, with the profiler's
/// overhead.
fn profile(ctx: &mut Ctx, engine: &Engine, queries: &[Query], o: &Options) -> Result<(), Fail> {
    let compute: Vec<f64> = queries
        .iter()
        .map(|q| {
            q.compute * PROFILER_OVERHEAD_FACTOR
                + PROFILER_OVERHEAD_MS_PER_LAYER * engine.layers.len() as f64
        })
        .collect();
    let whole = Stat::of(&compute, &[]);
    let total_ms: f64 = compute.iter().sum();
    let count = queries.len() as u64;
    let layers: Vec<LayerProfile> = engine
        .layers
        .iter()
        .map(|l| LayerProfile {
            name: l.record.name.clone(),
            time_ms: total_ms * l.share,
            average_ms: whole.mean * l.share,
            median_ms: whole.median * l.share,
            percentage: l.share * 100.0,
        })
        .collect();
    if o.dump_profile {
        let total = LayerProfile {
            name: "Total".into(),
            time_ms: total_ms,
            average_ms: whole.mean,
            median_ms: whole.median,
            percentage: 100.0,
        };
        for line in exports::profile_table(count, &layers, &total) {
            ctx.log.info(&line);
        }
        ctx.log.info("");
    }
    if let Some(file) = &o.export_profile {
        write(
            file,
            &exports::profile_json(count, &layers),
            "--exportProfile",
        )?;
    }
    Ok(())
}
