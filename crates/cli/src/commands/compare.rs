//! `trtmc-bench compare`: output agreement of two runtimes, or of a runtime and golden files, per output
//! tensor (l0 with atol/rtol, l1, l2, lInf, cos; `trtmc_core::accuracy`). Without `--against` or
//! `--golden` it only runs the model and saves what it is asked to (inputs, outputs, and the request
//! of the Python reference runners).
//!
//! The library behind it is `trtmc_runner::compare` (each side resolved and built like `run` does, the
//! inputs, one forward pass per side, the reference request) with `trtmc_runtime::outputs::agreement`;
//! `matrix` prepares its Python reference through the same code. This file keeps the arguments, the
//! progress lines and the table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use trtmc_core::accuracy::{AccuracySpec, Algorithm, Tensor};

use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::fsutil::write_json_atomic;
use trtmc_core::test_hooks::TestHooks;
use trtmc_runner::bundles::{BundleOptions, default_cache_root};
use trtmc_runner::compare::{self, ReferenceSettings, Side};
use trtmc_runner::progress::{Event, Progress};
use trtmc_runner::run::Selection;
use trtmc_runtime::outputs::{self, Agreement};
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
    /// Golden reference outputs: .npy, .npz, a raw-binary JSON index ({"outputs": [{name, dtype, shape, file}]}), or a folder of NAME.npy or output_N.pb (one test_data_set_N).
    #[arg(long, value_name = "PATH")]
    pub golden: Option<PathBuf>,
    /// Inputs to feed instead of the seeded synthesized ones: .npy, .npz, a JSON index with "inputs", a folder of NAME.npy or input_N.pb (one test_data_set_N), or trtexec's name:file.bin list.
    #[arg(long, value_name = "PATH")]
    pub inputs: Option<PathBuf>,
    /// Seed of the synthesized inputs (default: request.seed of the case when it has one, else 0).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count)]
    pub seed: Option<u64>,
    /// Binds a symbolic input dimension for the synthesized inputs: NAME=VALUE (repeatable).
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<String>,
    /// Loss that decides agreement: l0, l1, l2, lInf or cos (all five are reported).
    #[arg(long, default_value = "l0", value_name = "NAME")]
    pub algorithm: String,
    /// Absolute tolerance of l0: an element differs when |a - r| > atol + rtol·|r|.
    #[arg(
        long,
        default_value_t = 1e-4,
        value_name = "X",
        allow_negative_numbers = true
    )]
    pub atol: f64,
    /// Relative tolerance of l0.
    #[arg(
        long,
        default_value_t = 1e-3,
        value_name = "X",
        allow_negative_numbers = true
    )]
    pub rtol: f64,
    /// Largest passing loss per tensor (l0: the fraction of differing elements).
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "X",
        allow_negative_numbers = true
    )]
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
    let sets =
        trtmc_core::case::cli_overrides(&args.sets, &args.shapes, &[]).map_err(CliError::input)?;
    let catalog = match &args.onnx {
        Some(onnx) => {
            let profile = Profile::from_onnx_file(onnx)
                .map_err(|e| CliError::input(format!("--onnx: {e}")))?;
            Catalog {
                root: onnx.parent().map(PathBuf::from).unwrap_or_default(),
                profiles: vec![profile],
            }
        }
        None => Catalog::load(&crate::catalog_root::resolve(args.manifest_root.clone())?)
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
    let command_line: Vec<String> = std::env::args().collect();
    let side = |runtime: Option<String>| -> CliResult<Side> {
        let selection = Selection {
            model: model.clone(),
            cases: args.case.iter().cloned().collect(),
            runtime,
            sets: sets.clone(),
            ..Default::default()
        };
        compare::prepare_side(
            &catalog,
            selection,
            &bundle_options,
            &command_line,
            TestHooks::current(),
            &BuildNotice,
        )
        .map_err(CliError::from)
    };
    let candidate = side(args.runtime.clone())?;

    let seed = args.seed.unwrap_or_else(|| candidate.case_seed());
    // Only saving a reference's inputs: an operation with per-call inputs (audio chunks, noise, …)
    // needs no forward pass, so no bundle inputs when their dimensions are unbound.
    let forward_pass =
        args.against.is_some() || args.golden.is_some() || args.save_outputs.is_some();
    let inputs = match &args.inputs {
        Some(path) => candidate.read_inputs(path),
        None if !forward_pass => compare::reference_bundle_inputs(&candidate, seed, &dims),
        None => candidate.synthesize_inputs(seed, &dims),
    }?;

    if let Some(dir) = &args.save_inputs {
        let saved = compare::save_reference_inputs(
            dir,
            &candidate,
            &inputs,
            seed,
            &bundle_options.cache_root,
            &ReferenceSettings::default(),
        )?;
        outln!(
            "inputs: {}; reference request: {}",
            saved.inputs_index.display(),
            saved.request_path.display()
        )?;
    }
    if !forward_pass && !compare::feeds_bundle_inputs(&candidate.planned.resolved.operation) {
        return Ok(());
    }
    let candidate_out = run_side(&candidate, &inputs)?;
    let candidate_label = candidate.label();
    if let Some(dir) = &args.save_outputs {
        save_outputs(dir, &candidate_label, &candidate_out)?;
    }
    let candidate_tensors = to_tensors(&candidate_out)?;

    let (reference_label, reference_tensors) = match (&args.against, &args.golden) {
        (Some(rt), _) => {
            let reference = side(Some(rt.clone()))?;
            let out = run_side(&reference, &inputs)?;
            if let Some(dir) = &args.save_outputs {
                save_outputs(dir, &reference.label(), &out)?;
            }
            (reference.label(), to_tensors(&out)?)
        }
        (None, Some(path)) => {
            let golden = candidate.read_expected(path).map_err(CliError::from)?;
            (format!("golden {}", path.display()), golden)
        }
        (None, None) => {
            outln!(
                "saved: {} output tensor(s) of {candidate_label}; nothing compared (no --against or --golden)",
                candidate_tensors.len()
            )?;
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
    print_agreement(&agreement)?;
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

/// Says on stderr when a side's bundle is built (stdout keeps the table).
struct BuildNotice;

impl Progress for BuildNotice {
    fn report(&self, event: Event<'_>) {
        if let Event::BuildStarted {
            model,
            runtime,
            path,
        } = event
        {
            eprintln!(
                "building the {runtime} bundle of {model} into {}",
                path.display()
            );
        }
    }
}

fn run_side(side: &Side, inputs: &[(String, HostTensor)]) -> CliResult<Vec<(String, HostTensor)>> {
    side.run(inputs)
        .map_err(|e| CliError::new(ExitCode::CaseFailed, format!("{e:#}")))
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
                .filter(|v| (0..=trtmc_core::limits::MOST_DIMENSION).contains(v))
                .ok_or_else(|| {
                    CliError::input(format!(
                        "--dim {d}: `{value}` is not a whole number from 0 to {}",
                        trtmc_core::limits::MOST_DIMENSION
                    ))
                })?;
            Ok((name.trim().to_string(), v))
        })
        .collect()
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
    outln!("outputs of {label}: {}", index.display())?;
    Ok(())
}

fn fmt_loss(v: Option<f64>) -> String {
    match v {
        Some(x) => format!("{x:.3e}"),
        None => "non-finite".into(),
    }
}

fn print_agreement(a: &Agreement) -> CliResult {
    outln!("candidate {}  reference {}", a.candidate, a.reference)?;
    outln!(
        "{:<28} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  verdict ({} <= {})",
        "output",
        "shape",
        "l0",
        "l1",
        "l2",
        "lInf",
        "cos",
        a.spec.algorithm,
        a.spec.epsilon
    )?;
    for (t, v) in a.tensors.iter().zip(&a.verdict.tensors) {
        let shape = format!("{:?}", t.shape);
        let loss = |k: &str| fmt_loss(t.losses.get(k).copied().flatten());
        outln!(
            "{:<28} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
            t.name,
            shape,
            loss("l0"),
            loss("l1"),
            loss("l2"),
            loss("lInf"),
            loss("cos"),
            if v.passed { "agree" } else { "DIFFER" }
        )?;
    }
    outln!(
        "{}",
        if a.passed {
            "outputs agree"
        } else {
            "outputs differ"
        }
    )?;
    Ok(())
}
