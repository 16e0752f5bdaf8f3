//! `trtmc-bench compare`: output agreement of two runtimes, or of a runtime and golden files, per output
//! tensor (l0 with atol/rtol, l1, l2, lInf, cos; `trtmc_core::accuracy`). Without `--against` or
//! `--golden` it only runs the model and saves what it is asked to (inputs, outputs, and the request
//! of the Python reference runners).
//!
//! The library behind it is `trtmc_runtime::outputs` (inputs, one forward pass, agreement) with bundles
//! resolved like `run` does (`trtmc_runner::run::plan_cases`, the same cache keys), so `tune` and
//! `matrix` can do the same without this command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use trtmc_core::accuracy::{AccuracySpec, Algorithm, Tensor};
use trtmc_core::case::{Override, Source};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::fsutil::write_json_atomic;
use trtmc_core::test_hooks::TestHooks;
use trtmc_runner::bundles::{self, BundleOptions, default_cache_root};
use trtmc_runner::run::{self as runner, PlannedCase, Selection};
use trtmc_runtime::bundle::BundleManifest;
use trtmc_runtime::outputs::{self, Agreement};
use trtmc_runtime::reference::{
    REFERENCE_REQUEST_FILE, REFERENCE_REQUEST_SCHEMA, ReferenceRequest,
};
use trtmc_runtime::runtime;
use trtmc_runtime::tensor::HostTensor;

use crate::exit::{CliError, CliResult, ExitCode};

/// Compare the outputs of two runtimes (or a runtime and golden files) per output tensor.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  trtmc-bench compare --model tiny-cnn --runtime tract --against onnxruntime
  trtmc-bench compare --model light-resnet50-rand --runtime onnxruntime --against tract --algorithm cos --epsilon 1e-6
  trtmc-bench compare --model tiny-gpt --runtime onnxruntime --against tract --dim seq=4 --dim past=4 --dim total=8
  trtmc-bench compare --model tiny-cnn --runtime tract --save-outputs golden/      (no reference: save only)
  trtmc-bench compare --model tiny-cnn --runtime onnxruntime --golden golden/tract/outputs.json

Exit codes: 0 the outputs agree, 5 they do not (the table says which tensor), 3 invalid input,
4 no bundle, 7 a runtime is missing.")]
pub struct CompareArgs {
    /// Catalog model to run.
    #[arg(
        short,
        long,
        value_name = "NAME",
        conflicts_with = "onnx",
        required_unless_present = "onnx"
    )]
    pub model: Option<String>,
    /// Any ONNX file instead of a catalog model.
    #[arg(long, value_name = "PATH")]
    pub onnx: Option<PathBuf>,
    /// Shape of a dynamic input, trtexec style: NAME:1x3x224x224 (repeatable).
    #[arg(long = "shape", value_name = "NAME:DIMS")]
    pub shapes: Vec<String>,
    /// Named case of the model (its request and build settings resolve the bundle, as in `run`).
    #[arg(long, value_name = "NAME")]
    pub case: Option<String>,
    /// Override a field: request.KEY=V, build.KEY=V, runtime.KEY=V (repeatable; applies to both sides).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The candidate runtime (default: the model's runtime_strategy).
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// The reference runtime.
    #[arg(long, value_name = "NAME", conflicts_with = "golden")]
    pub against: Option<String>,
    /// Golden reference outputs: .npy, .npz, or a raw-binary JSON index ({"outputs": [{name, dtype, shape, file}]}).
    #[arg(long, value_name = "PATH")]
    pub golden: Option<PathBuf>,
    /// Inputs to feed instead of the seeded synthesized ones (.npy, .npz or JSON index with "inputs").
    #[arg(long, value_name = "PATH")]
    pub inputs: Option<PathBuf>,
    /// Seed of the synthesized inputs (default: request.seed of the case when it has one, else 0).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Binds a symbolic input dimension for the synthesized inputs: NAME=VALUE (repeatable).
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<String>,
    /// Loss that decides agreement: l0, l1, l2, lInf or cos (all five are reported).
    #[arg(long, default_value = "l0", value_name = "NAME")]
    pub algorithm: String,
    /// Absolute tolerance of l0: an element differs when |a - r| > atol + rtol·|r|.
    #[arg(long, default_value_t = 1e-4, value_name = "X")]
    pub atol: f64,
    /// Relative tolerance of l0.
    #[arg(long, default_value_t = 1e-3, value_name = "X")]
    pub rtol: f64,
    /// Largest passing loss per tensor (l0: the fraction of differing elements).
    #[arg(long, default_value_t = 0.0, value_name = "X")]
    pub epsilon: f64,
    /// Write the agreement (schema trtmc.output-agreement/v1) to this file.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Save the inputs (raw binaries + inputs.json) and reference-request.json for reference/*.py.
    #[arg(long, value_name = "DIR")]
    pub save_inputs: Option<PathBuf>,
    /// Save each side's outputs to DIR/<runtime>/outputs.json (+ binaries), usable as --golden.
    #[arg(long, value_name = "DIR")]
    pub save_outputs: Option<PathBuf>,
    /// Managed bundle cache (default: <user cache dir>/trtmc/bundles).
    #[arg(long, value_name = "PATH")]
    pub bundle_cache: Option<PathBuf>,
    /// Catalog root holding MODEL.toml files.
    #[arg(long, value_name = "PATH")]
    pub manifest_root: Option<PathBuf>,
}

pub fn execute(args: CompareArgs) -> CliResult {
    let algorithm: Algorithm = args.algorithm.parse().map_err(CliError::input)?;
    for (flag, v) in [
        ("--atol", args.atol),
        ("--rtol", args.rtol),
        ("--epsilon", args.epsilon),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(CliError::input(format!(
                "{flag} must be a non-negative number, got {v}"
            )));
        }
    }
    if args.against.is_none()
        && args.golden.is_none()
        && args.save_outputs.is_none()
        && args.save_inputs.is_none()
    {
        return Err(CliError::new(
            ExitCode::Usage,
            "nothing to do: give --against RUNTIME or --golden PATH to compare, or --save-outputs/--save-inputs DIR to save",
        ));
    }
    let dims = parse_dims(&args.dims)?;
    let mut sets: Vec<Override> = args
        .sets
        .iter()
        .map(|s| Override::parse(s, Source::Set))
        .collect::<Result<_, _>>()
        .map_err(CliError::input)?;
    for shape in &args.shapes {
        let (name, dims) = shape.split_once(':').ok_or_else(|| {
            CliError::input(format!(
                "--shape `{shape}` is not NAME:DIMS (e.g. --shape input:1x3x224x224)"
            ))
        })?;
        trtmc_core::case::parse_shape(dims)
            .map_err(|e| CliError::input(format!("--shape {shape}: {e}")))?;
        sets.push(Override {
            key: format!("build.shapes.{name}"),
            value: dims.to_string(),
            source: Source::Cli,
        });
    }
    let catalog = match &args.onnx {
        Some(onnx) => {
            let profile = super::run::onnx_profile(onnx)?;
            Catalog {
                root: onnx.parent().map(PathBuf::from).unwrap_or_default(),
                profiles: vec![profile],
            }
        }
        None => Catalog::load(&crate::catalog_root::resolve(args.manifest_root.clone()))
            .map_err(CliError::input)?,
    };
    let model = match (&args.model, catalog.profiles.first()) {
        (Some(m), _) => m.clone(),
        (None, Some(p)) => p.name.clone(),
        (None, None) => {
            return Err(CliError::new(
                ExitCode::Usage,
                "give --model NAME or --onnx PATH",
            ));
        }
    };
    let bundle_options = BundleOptions {
        cache_root: args.bundle_cache.clone().unwrap_or_else(default_cache_root),
        ..Default::default()
    };
    let side = |runtime: Option<String>| -> CliResult<Side> {
        let selection = Selection {
            model: model.clone(),
            cases: args.case.iter().cloned().collect(),
            runtime,
            sets: sets.clone(),
            ..Default::default()
        };
        prepare_side(&catalog, selection, &bundle_options)
    };
    let candidate = side(args.runtime.clone())?;

    let seed = args.seed.unwrap_or_else(|| {
        candidate
            .planned
            .resolved
            .request_value("seed")
            .and_then(Value::as_i64)
            .filter(|s| *s >= 0)
            .map_or(0, |s| s as u64)
    });
    let inputs: Vec<(String, HostTensor)> = match &args.inputs {
        Some(path) => {
            let golden = trtmc_tune::golden::read_golden(path)
                .map_err(|e| CliError::input(e.to_string()))?;
            candidate
                .manifest
                .inputs
                .iter()
                .map(|spec| {
                    let t = golden.iter().find(|t| t.name == spec.name).ok_or_else(|| {
                        CliError::input(format!(
                            "{} has no input `{}` (it has: {})",
                            path.display(),
                            spec.name,
                            names(&golden)
                        ))
                    })?;
                    Ok((
                        spec.name.clone(),
                        outputs::from_tensor(t, spec.dtype).map_err(|e| {
                            CliError::input(format!("input `{}`: {e:#}", spec.name))
                        })?,
                    ))
                })
                .collect::<CliResult<_>>()?
        }
        None => {
            let tensors = outputs::synthesize_inputs(&candidate.manifest.inputs, seed, &dims)
                .map_err(|e| CliError::input(format!("{e:#}")))?;
            candidate
                .manifest
                .inputs
                .iter()
                .map(|s| s.name.clone())
                .zip(tensors)
                .collect()
        }
    };

    if let Some(dir) = &args.save_inputs {
        save_inputs(dir, &candidate, &inputs, seed, &bundle_options)?;
    }
    let candidate_out = candidate.run(&inputs)?;
    let candidate_label = candidate.label();
    if let Some(dir) = &args.save_outputs {
        save_outputs(dir, &candidate_label, &candidate_out)?;
    }
    let candidate_tensors = to_tensors(&candidate_out)?;

    let (reference_label, reference_tensors) = match (&args.against, &args.golden) {
        (Some(rt), _) => {
            let reference = side(Some(rt.clone()))?;
            let out = reference.run(&inputs)?;
            if let Some(dir) = &args.save_outputs {
                save_outputs(dir, &reference.label(), &out)?;
            }
            (reference.label(), to_tensors(&out)?)
        }
        (None, Some(path)) => {
            let golden = trtmc_tune::golden::read_golden(path)
                .map_err(|e| CliError::input(e.to_string()))?;
            (format!("golden {}", path.display()), golden)
        }
        (None, None) => {
            println!(
                "saved: {} output tensor(s) of {candidate_label}; nothing compared (no --against or --golden)",
                candidate_tensors.len()
            );
            return Ok(());
        }
    };
    let spec = AccuracySpec {
        algorithm,
        atol: args.atol,
        rtol: args.rtol,
        epsilon: args.epsilon,
        per_tensor_epsilon: BTreeMap::new(),
    };
    let agreement = outputs::agreement(
        &candidate_label,
        &candidate_tensors,
        &reference_label,
        &reference_tensors,
        &spec,
    )
    .map_err(|e| {
        CliError::new(
            ExitCode::CaseFailed,
            format!("the outputs cannot be compared: {e:#}"),
        )
    })?;
    print_agreement(&agreement);
    if let Some(path) = &args.output {
        write_json_atomic(path, &agreement).map_err(|e| {
            CliError::new(
                ExitCode::Output,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    }
    if !agreement.passed {
        let failed: Vec<&str> = agreement.verdict.failed();
        return Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "{candidate_label} and {reference_label} disagree on {} (algorithm {}, epsilon {}, atol {}, rtol {})",
                failed.join(", "),
                spec.algorithm,
                spec.epsilon,
                spec.atol,
                spec.rtol
            ),
        ));
    }
    Ok(())
}

/// One side of a comparison: its resolved case and bundle.
struct Side {
    planned: PlannedCase,
    manifest: BundleManifest,
    bundle: PathBuf,
}

impl Side {
    fn label(&self) -> String {
        format!(
            "{} {}",
            self.manifest.runtime.name, self.manifest.runtime.version
        )
    }

    fn run(&self, inputs: &[(String, HostTensor)]) -> CliResult<Vec<(String, HostTensor)>> {
        outputs::run_bundle(
            &self.bundle,
            &self.planned.resolved.runtime_values(),
            inputs,
        )
        .map_err(|e| {
            CliError::new(
                ExitCode::CaseFailed,
                format!(
                    "{} failed to run {}: {e:#}",
                    self.label(),
                    self.planned.profile.name
                ),
            )
        })
    }
}

/// Resolves the case for one runtime and builds its bundle when the cache has none.
fn prepare_side(
    catalog: &Catalog,
    selection: Selection,
    options: &BundleOptions,
) -> CliResult<Side> {
    let planned = runner::plan_cases(catalog, &[selection], options, &TestHooks::from_env())
        .map_err(super::run::run_error)?;
    let Some(p) = planned.into_iter().next() else {
        return Err(CliError::input("the selection resolved to no case"));
    };
    let plan = p.bundle.clone().ok_or_else(|| {
        CliError::input(format!(
            "model `{}` has no model file to compare",
            p.profile.name
        ))
    })?;
    let rt = runtime::runtime(&p.resolved.runtime.value).map_err(CliError::input)?;
    if rt.self_timed().is_some() {
        return Err(CliError::input(format!(
            "runtime `{}` runs inside its own tool and returns no outputs here; compare it with trtexec's own accuracy check (--loadInputs/--loadRefOutputs)",
            rt.name()
        )));
    }
    if plan.needs_build {
        eprintln!(
            "building the {} bundle of {} into {}",
            rt.name(),
            p.profile.name,
            plan.path.display()
        );
        let command_line: Vec<String> = std::env::args().collect();
        bundles::build(
            &p.profile,
            &p.resolved.build_values(),
            rt.as_ref(),
            &plan,
            options,
            &command_line,
        )
        .map_err(|e| super::run::run_error(e.into()))?;
    }
    let manifest = BundleManifest::read(&plan.path).map_err(CliError::input)?;
    Ok(Side {
        planned: p,
        manifest,
        bundle: plan.path,
    })
}

fn parse_dims(dims: &[String]) -> CliResult<BTreeMap<String, i64>> {
    dims.iter()
        .map(|d| {
            let (name, value) = d.split_once('=').ok_or_else(|| {
                CliError::input(format!("--dim `{d}` is not NAME=VALUE (e.g. --dim seq=8)"))
            })?;
            let v: i64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v| *v >= 0)
                .ok_or_else(|| {
                    CliError::input(format!(
                        "--dim {d}: `{value}` is not a non-negative integer"
                    ))
                })?;
            Ok((name.trim().to_string(), v))
        })
        .collect()
}

fn names(tensors: &[Tensor]) -> String {
    tensors
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn to_tensors(outputs: &[(String, HostTensor)]) -> CliResult<Vec<Tensor>> {
    outputs
        .iter()
        .map(|(n, t)| outputs::to_tensor(n, t).map_err(|e| CliError::internal(format!("{e:#}"))))
        .collect()
}

fn file_safe(label: &str) -> String {
    label
        .split_whitespace()
        .next()
        .unwrap_or("runtime")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn save_outputs(dir: &Path, label: &str, out: &[(String, HostTensor)]) -> CliResult {
    let target = dir.join(file_safe(label));
    let index = outputs::write_tensor_set(&target, "outputs", out)
        .map_err(|e| CliError::new(ExitCode::Output, format!("{e:#}")))?;
    println!("outputs of {label}: {}", index.display());
    Ok(())
}

/// Writes the inputs and the request the Python reference runners execute (same model file, inputs,
/// warm-ups, iterations, seed and precision as the resolved case).
fn save_inputs(
    dir: &Path,
    side: &Side,
    inputs: &[(String, HostTensor)],
    seed: u64,
    options: &BundleOptions,
) -> CliResult {
    let out = |e: anyhow::Error| CliError::new(ExitCode::Output, format!("{e:#}"));
    let index = outputs::write_tensor_set(dir, "inputs", inputs).map_err(out)?;
    let profile: &Profile = &side.planned.profile;
    let model = trtmc_runner::sources::materialize(profile, &options.cache_root)
        .map_err(CliError::input)?;
    let r = &side.planned.resolved;
    let settings = r.runtime_values();
    let threads = ["intra_threads", "threads"]
        .iter()
        .find_map(|k| settings.get(*k).and_then(Value::as_u64))
        .unwrap_or(1);
    let precision = r
        .build
        .get("precision")
        .and_then(|v| v.value.as_str().map(str::to_string))
        .or_else(|| profile.reference_precision.clone())
        .unwrap_or_else(|| "fp32".into());
    let mut options_map = BTreeMap::new();
    if let Some(level) = r.build.get("optimization_level") {
        options_map.insert("graph_optimization_level".to_string(), level.value.clone());
    }
    for key in ["execution_mode", "inter_threads"] {
        if let Some(v) = settings.get(key) {
            options_map.insert(key.to_string(), v.clone());
        }
    }
    let request = ReferenceRequest {
        schema: REFERENCE_REQUEST_SCHEMA.into(),
        model: std::fs::canonicalize(&model).unwrap_or(model),
        inputs: std::fs::canonicalize(&index).unwrap_or(index),
        operation: r.operation.clone(),
        warmup: r.measure.warmup.value,
        iterations: r.measure.iterations.value,
        min_duration_s: r.measure.min_duration_s.value,
        seed,
        precision,
        threads,
        options: options_map,
        save_outputs: None,
    };
    let path = dir.join(REFERENCE_REQUEST_FILE);
    write_json_atomic(&path, &request).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    println!(
        "inputs: {}; reference request: {}",
        dir.join("inputs.json").display(),
        path.display()
    );
    Ok(())
}

fn fmt_loss(v: Option<f64>) -> String {
    match v {
        Some(x) => format!("{x:.3e}"),
        None => "non-finite".into(),
    }
}

fn print_agreement(a: &Agreement) {
    println!("candidate {}  reference {}", a.candidate, a.reference);
    println!(
        "{:<28} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  verdict ({} <= {})",
        "output", "shape", "l0", "l1", "l2", "lInf", "cos", a.spec.algorithm, a.spec.epsilon
    );
    for (t, v) in a.tensors.iter().zip(&a.verdict.tensors) {
        let shape = format!("{:?}", t.shape);
        let loss = |k: &str| fmt_loss(t.losses.get(k).copied().flatten());
        println!(
            "{:<28} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
            t.name,
            shape,
            loss("l0"),
            loss("l1"),
            loss("l2"),
            loss("lInf"),
            loss("cos"),
            if v.passed { "agree" } else { "DIFFER" }
        );
    }
    println!(
        "{}",
        if a.passed {
            "outputs agree"
        } else {
            "outputs differ"
        }
    );
}
