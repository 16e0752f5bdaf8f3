//! Build mode (`--onnx=M`): validate the route and flags, read the model with tract, apply the
//! configured faults, sleep `build_ms`, write the engine document and the layer information,
//! then time the engine unless `--skipInference`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::Fault;
use crate::engine::{Engine, InputBinding, OutputBinding, build_layers};
use crate::knobs::KnobDatabase;
use crate::log::{dims_text, g6};
use crate::model::{self, DType, ModelInfo};
use crate::options::{Options, ShapeSpec};
use crate::{Ctx, Fail, infer};

/// trtexec's closing lines after a failed engine build.
fn build_failed(mut errors: Vec<String>) -> Fail {
    errors.push("Engine could not be created from network".into());
    errors.push("Building engine failed".into());
    errors.push("Failed to create engine from model or file.".into());
    errors.push("Engine set up failed".into());
    Fail::Trt(errors)
}

fn parse_failed(path: &Path, detail: &str) -> Fail {
    Fail::Trt(vec![
        format!(
            "[TRT] ModelImporter.cpp:1047: Failed to parse ONNX model from file: {} ({detail})",
            path.display()
        ),
        "Failed to parse onnx file".into(),
        "Parsing model failed".into(),
        "Failed to create engine from model or file.".into(),
        "Engine set up failed".into(),
    ])
}

pub fn run(ctx: &mut Ctx, o: &Options) -> Result<(), Fail> {
    let Some(onnx) = o.onnx.as_deref() else {
        return Err(Fail::trt("Model missing or format not supported"));
    };
    let route_tokens = match &o.route {
        Some(route) => KnobDatabase::load()
            .map_err(Fail::Sim)?
            .validate_route(route)
            .map_err(Fail::Trt)?,
        None => Vec::new(),
    };
    let route = (!route_tokens.is_empty()).then(|| route_tokens.join(" "));
    let tokens = o.tokens(&route_tokens);
    options_dump(ctx, o, true);
    let v = ctx.version;
    ctx.log.info(&format!("TensorRT version: {}", v.dotted()));
    ctx.log.info("Loading standard plugins");
    ctx.log
        .info("[TRT] [MemUsageChange] Init CUDA: CPU +0, GPU +0, now: CPU 32, GPU 914 (MiB)");
    if let Some(route) = &route {
        ctx.log.info(&format!("Using tuning build route: {route}"));
    }
    let started = Instant::now();
    ctx.log.info("Start parsing network model.");
    let path = std::path::absolute(onnx).unwrap_or_else(|_| onnx.to_path_buf());
    if !path.is_file() {
        return Err(parse_failed(&path, "file not found"));
    }
    let info = model::inspect(&path).map_err(|e| parse_failed(&path, &e.to_string()))?;
    onnx_header(ctx, &path, &info);
    for output in info.outputs.iter().filter(|d| d.dtype == DType::I64) {
        ctx.log.warn(&format!(
            "[TRT] ModelImporter.cpp:1047: Make sure output {} has Int64 binding.",
            output.name
        ));
    }
    ctx.log.info(&format!(
        "Finished parsing network model. Parse time: {}",
        g6(started.elapsed().as_secs_f64())
    ));
    let inputs = resolve_shapes(ctx, o, &info)?;
    let shapes: Vec<(String, DType, Vec<usize>)> = inputs
        .iter()
        .map(|b| (b.name.clone(), b.dtype, b.dims.clone()))
        .collect();
    let (facts, outputs) = model::analyse(&path, &shapes).map_err(|e| {
        build_failed(vec![format!(
            "Error[4]: [network.cpp::validate] Error Code 4: Internal Error (the simulator's ONNX \
             engine, tract, cannot load this model: {e})"
        )])
    })?;
    ctx.log.info(
        "[TRT] [MemUsageChange] Init builder kernel library: CPU +523, GPU +10, now: CPU 834, GPU 926 (MiB)",
    );
    match &o.timing_cache {
        Some(cache) if cache.is_file() => ctx.log.info(&format!(
            "[TRT] Loaded timing cache from {}",
            cache.display()
        )),
        _ => ctx.log.info(
            "[TRT] Local timing cache in use. Profiling results in this builder pass will not be stored.",
        ),
    }
    ctx.log
        .info("[TRT] Compiler backend is used during engine build.");
    if let Some(route) = &route {
        ctx.log.info(&format!(
            "[TRT] [TuningBuildRoute] Using build route: {route}"
        ));
    }
    let latency_ms = ctx.config.latency_ms(&tokens);
    ctx.log.verbose(&format!(
        "[TRT] trtexec-standin: tokens [{}] give a GPU compute time of {} ms (base {} ms)",
        tokens.join(", "),
        g6(latency_ms),
        g6(ctx.config.base_ms)
    ));
    let faults = ctx.config.faults_of(&tokens);
    if let Some((token, fault)) = faults.iter().find(|(_, f)| f.is_build_fault()) {
        apply_build_fault(ctx, token, *fault, &info)?;
    }
    let wrong_outputs = faults.iter().any(|(_, f)| *f == Fault::WrongOutputs);
    let crash_infer = faults.iter().any(|(_, f)| *f == Fault::CrashInfer);
    std::thread::sleep(Duration::from_millis(ctx.config.build_ms));
    let layers = build_layers(&info, &facts);
    let size_mib = info.weight_bytes as f64 / (1024.0 * 1024.0) + 0.0625;
    let engine = Engine {
        format: crate::engine::FORMAT.to_string(),
        tensorrt: v.dotted(),
        library: v.library(),
        onnx: path.to_string_lossy().into_owned(),
        route,
        tokens,
        latency_ms,
        wrong_outputs,
        crash_infer,
        size_mib,
        profiling_verbosity: o
            .profiling_verbosity
            .clone()
            .unwrap_or_else(|| "layer_names_only".to_string()),
        inputs,
        outputs: outputs
            .into_iter()
            .map(|(name, dtype, dims)| OutputBinding { name, dtype, dims })
            .collect(),
        layers,
    };
    ctx.log.info(&format!(
        "[TRT] Detected {} inputs and {} output network tensors.",
        engine.inputs.len(),
        engine.outputs.len()
    ));
    ctx.log.info(&format!(
        "[TRT] Total Weights Memory: {} bytes",
        info.weight_bytes
    ));
    ctx.log.info(&format!(
        "[TRT] Engine generation completed in {} seconds.",
        g6(started.elapsed().as_secs_f64())
    ));
    if let Some(save) = &o.save_engine {
        engine
            .write(save)
            .map_err(|e| Fail::trt(format!("Cannot write engine file {}: {e}", save.display())))?;
        // A new engine starts a new sequence of runs.
        match std::fs::remove_file(runs_path(save)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => ctx.log.warn(&format!(
                "cannot reset the run counter {}: {e}",
                runs_path(save).display()
            )),
        }
    }
    if let Some(cache) = &o.timing_cache {
        let text = format!("trtexec-standin timing cache (TensorRT {})\n", v.dotted());
        if std::fs::write(cache, text).is_ok() {
            ctx.log
                .info(&format!("[TRT] Saved timing cache to {}", cache.display()));
        }
    }
    ctx.log.info(&format!(
        "Created engine with size: {} MiB",
        g6(engine.size_mib)
    ));
    ctx.log.info(&format!(
        "Engine built in {} sec.",
        g6(started.elapsed().as_secs_f64())
    ));
    if let Some(layer_info) = &o.export_layer_info {
        infer::write_layer_info(ctx, &engine, layer_info)?;
    }
    if o.skip_inference {
        ctx.log
            .info("Skipped inference phase since --skipInference is added.");
        return Ok(());
    }
    infer::deserialized(ctx, &engine, Instant::now());
    infer::run(ctx, &engine, o.save_engine.as_deref(), o)
}

/// `E.runs`: the invocation counter kept beside engine `E`.
pub fn runs_path(engine: &Path) -> PathBuf {
    let mut name = engine.as_os_str().to_os_string();
    name.push(".runs");
    PathBuf::from(name)
}

fn apply_build_fault(
    ctx: &mut Ctx,
    token: &str,
    fault: Fault,
    info: &ModelInfo,
) -> Result<(), Fail> {
    match fault {
        Fault::CrashBuild => {
            ctx.log
                .info("[TRT] [GraphReduction] Total 1 graph(s) to compile.");
            ctx.log.flush();
            std::process::abort();
        }
        Fault::HangBuild => {
            ctx.log
                .info("[TRT] [GraphReduction] Total 1 graph(s) to compile.");
            ctx.log.flush();
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Fault::FailBuild => {
            let first = info.nodes.first().map_or("network", |n| n.name.as_str());
            let last = info.nodes.last().map_or("network", |n| n.name.as_str());
            Err(build_failed(vec![format!(
                "Error[10]: IBuilder::buildSerializedNetwork: Error Code 10: Internal Error (Could \
                 not find any implementation for node {{ForeignNode[{first}...{last}]}}. \
                 [trtexec-standin fault of {token}])"
            )]))
        }
        Fault::WrongOutputs | Fault::CrashInfer => Ok(()),
    }
}

fn onnx_header(ctx: &mut Ctx, path: &Path, info: &ModelInfo) {
    let rule = "[TRT] ----------------------------------------------------------------";
    let lines = [
        rule.to_string(),
        format!("[TRT] Input filename:   {}", path.display()),
        format!("[TRT] ONNX IR version:  0.0.{}", info.ir_version),
        format!("[TRT] Opset version:    {}", info.opset),
        format!("[TRT] Producer name:    {}", info.producer_name),
        format!("[TRT] Producer version: {}", info.producer_version),
        format!("[TRT] Domain:           {}", info.domain),
        format!("[TRT] Model version:    {}", info.model_version),
        format!(
            "[TRT] Doc string:       {}",
            info.doc_string.lines().next().unwrap_or("")
        ),
        rule.to_string(),
    ];
    for line in lines {
        ctx.log.info(line.trim_end());
    }
}

/// The optimization profile of every model input, from `--shapes`, `--min/opt/maxShapes` or the
/// model (dynamic dimensions become 1, with trtexec's warning).
fn resolve_shapes(ctx: &mut Ctx, o: &Options, info: &ModelInfo) -> Result<Vec<InputBinding>, Fail> {
    let given = [&o.shapes, &o.min_shapes, &o.opt_shapes, &o.max_shapes];
    let mut errors = Vec::new();
    for spec in given.iter().flat_map(|list| list.iter()) {
        if !info.inputs.iter().any(|d| d.name == spec.name) {
            let message = format!(
                "Cannot find input tensor with name \"{}\" in the network inputs! Please make sure \
                 the input tensor names are correct.",
                spec.name
            );
            if !errors.contains(&message) {
                errors.push(message);
            }
        }
    }
    if !errors.is_empty() {
        return Err(Fail::Trt(errors));
    }
    let find = |list: &[ShapeSpec], name: &str| -> Option<Vec<usize>> {
        list.iter().find(|s| s.name == name).map(|s| s.dims.clone())
    };
    let mut bindings = Vec::with_capacity(info.inputs.len());
    for decl in &info.inputs {
        let declared = decl.dims.clone();
        let (min, opt, max, explicit) = if let Some(dims) = find(&o.shapes, &decl.name) {
            (dims.clone(), dims.clone(), dims, true)
        } else if let Some(opt) = find(&o.opt_shapes, &decl.name) {
            let min = find(&o.min_shapes, &decl.name).unwrap_or_else(|| opt.clone());
            let max = find(&o.max_shapes, &decl.name).unwrap_or_else(|| opt.clone());
            (min, opt, max, true)
        } else {
            let Some(declared) = &declared else {
                return Err(Fail::trt(format!(
                    "Input {} has no shape in the model; give it with --shapes={}:AxBxC",
                    decl.name, decl.name
                )));
            };
            let dims: Vec<usize> = declared
                .iter()
                .map(|d| d.map_or(1, |n| usize::try_from(n).unwrap_or(1)))
                .collect();
            if declared.iter().any(Option::is_none) {
                ctx.log.warn(&format!(
                    "Dynamic dimensions required for input: {}, but no shapes were provided. \
                     Automatically overriding shape to: {}",
                    decl.name,
                    dims_text(&dims)
                ));
            }
            (
                dims.clone(),
                dims.clone(),
                dims,
                declared.iter().any(Option::is_none),
            )
        };
        if let Some(declared) = &declared {
            for (what, dims) in [("MIN", &min), ("OPT", &opt), ("MAX", &max)] {
                if dims.len() != declared.len() {
                    return Err(Fail::trt(format!(
                        "Input {} has {} dimensions in the model but the {what} shape {} has {}",
                        decl.name,
                        declared.len(),
                        dims_text(dims),
                        dims.len()
                    )));
                }
                if let Some((axis, (want, got))) = declared
                    .iter()
                    .zip(dims.iter())
                    .enumerate()
                    .find(|(_, (want, got))| {
                        want.is_some_and(|w| usize::try_from(w).ok() != Some(**got))
                    })
                {
                    return Err(Fail::trt(format!(
                        "Input {}: dimension {axis} is {} in the model but the {what} shape gives {got}",
                        decl.name,
                        want.unwrap_or_default()
                    )));
                }
            }
        }
        let ordered = min.len() == opt.len()
            && opt.len() == max.len()
            && min
                .iter()
                .zip(&opt)
                .zip(&max)
                .all(|((a, b), c)| a <= b && b <= c);
        if !ordered {
            return Err(Fail::trt(format!(
                "Invalid optimization profile for input {}: MIN={} OPT={} MAX={} (need MIN <= OPT <= MAX)",
                decl.name,
                dims_text(&min),
                dims_text(&opt),
                dims_text(&max)
            )));
        }
        if explicit {
            ctx.log.info(&format!(
                "Set shape of input tensor {} for optimization profile 0 to: MIN={} OPT={} MAX={}",
                decl.name,
                dims_text(&min),
                dims_text(&opt),
                dims_text(&max)
            ));
        }
        bindings.push(InputBinding {
            name: decl.name.clone(),
            dtype: decl.dtype,
            dims: opt,
            min,
            max,
        });
    }
    Ok(bindings)
}

/// A condensed version of trtexec's option dump (what the simulator models).
pub fn options_dump(ctx: &mut Ctx, o: &Options, building: bool) {
    let v = ctx.version;
    let enabled = |on: bool| if on { "Enabled" } else { "Disabled" };
    let path = |p: &Option<PathBuf>| {
        p.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    };
    let shapes = |list: &[ShapeSpec]| {
        if list.is_empty() {
            "model".to_string()
        } else {
            list.iter()
                .map(|s| format!("{}={}", s.name, dims_text(&s.dims)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let precision = if v.strongly_typed() {
        "Strongly Typed".to_string()
    } else {
        let mut p = String::from("FP32");
        for flag in &o.flag_tokens {
            if let Some(name) = flag
                .strip_prefix("--")
                .filter(|f| matches!(*f, "fp16" | "bf16" | "int8" | "fp8" | "int4" | "best"))
            {
                p.push('+');
                p.push_str(&name.to_uppercase());
            }
        }
        p
    };
    let mut lines: Vec<String> = Vec::new();
    if building {
        lines.extend([
            "=== Model Options ===".to_string(),
            "Format: ONNX".to_string(),
            format!("Model: {}", path(&o.onnx)),
            "Output:".to_string(),
            "=== Build Options ===".to_string(),
            format!("Precision: {precision}"),
            format!("Skip inference: {}", enabled(o.skip_inference)),
            format!("Save engine: {}", path(&o.save_engine)),
            "Load engine: ".to_string(),
            format!("Profiling verbosity: {}", if o.detailed { 2 } else { 0 }),
            format!("timingCacheFile: {}", path(&o.timing_cache)),
            format!("Input build shapes: {}", shapes(&o.shapes)),
        ]);
    }
    lines.extend([
        "=== Inference Options ===".to_string(),
        "Batch: Explicit".to_string(),
        format!("Input inference shapes: {}", shapes(&o.shapes)),
        format!("Iterations: {}", o.iterations),
        format!(
            "Duration: {}s (+ {}ms warm up)",
            g6(o.duration_s),
            g6(o.warm_up_ms)
        ),
        format!("Data transfers: {}", enabled(o.data_transfers)),
        format!("Spin-wait: {}", enabled(o.spin_wait)),
        format!("CUDA Graph: {}", enabled(o.cuda_graph)),
        format!(
            "Separate profiling: {}",
            enabled(o.separate_profile_run || v.inverted_inference_defaults())
        ),
        "=== Reporting Options ===".to_string(),
        format!("Verbose: {}", enabled(o.verbose)),
        format!("Averages: {} inferences", o.avg_runs),
        format!(
            "Percentiles: {}",
            o.percentiles.iter().map(|p| g6(*p)).collect::<Vec<_>>().join(",")
        ),
        format!(
            "Profile: {}",
            enabled(o.dump_profile || o.export_profile.is_some())
        ),
        format!("Export timing to JSON file: {}", path(&o.export_times)),
        format!("Export output to JSON file: {}", path(&o.export_output)),
        format!("Export profile to JSON file: {}", path(&o.export_profile)),
        String::new(),
        "=== Device Information ===".to_string(),
        "Available Devices:".to_string(),
        "  Device 0: \"trtexec-standin simulated GPU\" UUID: GPU-00000000-0000-0000-0000-000000000000".to_string(),
        "Selected Device: trtexec-standin simulated GPU".to_string(),
        "Selected Device ID: 0".to_string(),
        "Compute Capability: 9.0".to_string(),
        "SMs: 132".to_string(),
        String::new(),
    ]);
    for line in lines {
        ctx.log.info(line.trim_end());
    }
}
