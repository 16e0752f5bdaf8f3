//! The inputs of an `infer` case, settled before any build: the model's declared inputs read from its
//! ONNX file, `--shape` checked against them, the case's own data (`--inputs`, `--check-outputs`) read
//! and checked, and every dimension left dynamic pinned (to the data's shape, else to 1, as trtexec
//! does) so each runtime builds and feeds the same shapes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use trtmc_core::case::{ResolvedCase, Source, Sourced};
use trtmc_core::catalog::Profile;
use trtmc_core::data::{CaseData, DEFAULT_ATOL, DEFAULT_RTOL, DataSetRecord};
use trtmc_runtime::data::{
    DataKind, DataReadError, DataSetError, Declared, check_sets, declared_io, locate, shape_text,
};
use trtmc_runtime::tensor::{DType, Dim};

use crate::sources;

/// The data a selection brings of its own: `--inputs`, `--check-outputs` and their tolerance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GivenData<'a> {
    pub inputs: &'a [String],
    pub check_outputs: &'a [String],
    pub tolerance: Option<(f64, f64)>,
    /// `--max-tensor-memory-gib`: the bound of the case's estimated tensor memory.
    pub most_tensor_gib: Option<f64>,
}

/// One input of a planned case, for `--dry-run` and the run's notes.
#[derive(Debug, Clone, PartialEq)]
pub struct InputLine {
    /// Name of the input as the ONNX graph declares it.
    pub name: String,
    /// Element type and declared shape, dynamic dimensions marked `?name` (`?` when unnamed).
    pub declared: String,
    /// The shape fed (`varies` when data sets differ).
    pub fed: String,
    /// Where the values come from: the data sets, or how they are synthesized.
    pub source: String,
    /// The line a user should read: dimensions set to 1 and the `--shape` that chooses them.
    pub note: Option<String>,
}

/// Why the inputs of a case are refused before any build (an input error, exit 3); the message names
/// the input, what the model wants and what was given.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// `--inputs`/`--check-outputs` for a model whose operation prepares its own inputs.
    #[error(
        "--inputs and --check-outputs feed a model's own inputs (operation `infer`, e.g. a model given with --onnx); model `{model}` runs operation `{operation}`, which prepares its own"
    )]
    NotInfer {
        /// Catalog name of the model.
        model: String,
        /// The operation it runs.
        operation: String,
    },
    /// `--check-outputs` without `--inputs`.
    #[error(
        "--check-outputs needs the inputs the expected outputs were computed from: give --inputs too"
    )]
    CheckOutputsWithoutInputs,
    /// The model file cannot be found or fetched.
    #[error(transparent)]
    Source(#[from] crate::sources::SourceError),
    /// The model file's declared inputs cannot be read.
    #[error("cannot read the inputs {} declares: {reason}", model_file.display())]
    Declared {
        /// The ONNX file.
        model_file: PathBuf,
        /// Why, with its causes.
        reason: String,
    },
    /// `--shape` names no input of the model.
    #[error(
        "--shape {name}:…: model `{model}` has no input `{name}`.{} Its inputs: {inputs}",
        closest.as_ref().map(|c| format!(" Did you mean `{c}`?")).unwrap_or_default()
    )]
    UnknownShapeInput {
        /// The input named by `--shape`.
        name: String,
        /// Catalog name of the model.
        model: String,
        /// The declared input closest to `name`, when one is close.
        closest: Option<String>,
        /// The model's inputs with their declared types.
        inputs: String,
    },
    /// A string input without `--inputs`.
    #[error(
        "input `{name}` of model `{model}` is a string tensor ({wants}), whose values trtmc cannot make up: give them with --inputs (an .npy/.npz of numpy strings, or a folder of input_N.pb)"
    )]
    StringInput {
        /// The input.
        name: String,
        /// Catalog name of the model.
        model: String,
        /// Its declared type.
        wants: String,
    },
    /// The model file declares a shape beyond the limits.
    #[error(
        "input `{name}` of model `{model}` is declared {declared} in {}: {why}",
        model_file.display()
    )]
    DeclaredShape {
        /// The input.
        name: String,
        /// Catalog name of the model.
        model: String,
        /// Its declared type, dynamic dimensions marked.
        declared: String,
        /// The ONNX file.
        model_file: PathBuf,
        /// Which limit it passes.
        why: String,
    },
    /// The case's tensors would take more memory than the bound.
    #[error("{reason}")]
    TensorMemory {
        /// The estimate and the bound.
        reason: String,
    },
    /// A generation case's KV cache would take more memory than the bound.
    #[error(
        "model `{model}` case `{case}`: its KV cache would take about {:.1} GiB ({per_token} bytes a token × (the prompt's {prompt} + request.max_new_tokens {new_tokens}) × batch {batch}), more than the {bound} GiB bound; lower request.max_new_tokens or raise the bound with {}",
        *bytes as f64 / f64::from(1u32 << 30),
        trtmc_core::limits::TENSOR_MEMORY_FLAG
    )]
    KvCache {
        /// Catalog name of the model.
        model: String,
        /// The case.
        case: String,
        /// The estimated bytes.
        bytes: u64,
        /// Bytes one token takes.
        per_token: u64,
        /// Tokens of the longest prompt.
        prompt: u64,
        /// `request.max_new_tokens`.
        new_tokens: u64,
        /// `request.batch_size`.
        batch: u64,
        /// The bound, GiB.
        bound: f64,
    },
    /// A data set cannot be read.
    #[error(transparent)]
    Data(#[from] DataReadError),
    /// A data set does not fit the model.
    #[error(transparent)]
    DataSet(#[from] Box<DataSetError>),
    /// `--check-outputs` gives another number of sets than `--inputs`.
    #[error(
        "--inputs gives {inputs} data set(s) and --check-outputs {expected}: give one expected set per input set, in the same order"
    )]
    SetCounts {
        /// Sets given with `--inputs`.
        inputs: usize,
        /// Sets given with `--check-outputs`.
        expected: usize,
    },
}

/// Settles the inputs of `resolved` (an `infer` case of `profile`): may pin `build.shapes.<input>`
/// and set `resolved.data`. `Err` is an input error (exit 3) naming the input, what the model wants
/// and what was given.
pub(crate) fn settle(
    profile: &Profile,
    given: GivenData<'_>,
    resolved: &mut ResolvedCase,
    cache_root: &Path,
) -> Result<Vec<InputLine>, InputsError> {
    let given_data = !given.inputs.is_empty() || !given.check_outputs.is_empty();
    if resolved.operation != "infer" {
        if given_data {
            return Err(InputsError::NotInfer {
                model: profile.name.clone(),
                operation: resolved.operation.clone(),
            });
        }
        return Ok(Vec::new());
    }
    if !given.check_outputs.is_empty() && given.inputs.is_empty() {
        return Err(InputsError::CheckOutputsWithoutInputs);
    }
    let local = sources::resolve(profile, cache_root)
        .ok()
        .and_then(|s| s.path);
    let model_file = match local {
        Some(path) => path,
        None if given_data => sources::materialize(profile, cache_root)?,
        // A hub model not downloaded yet: its inputs are known after the build.
        None => return Ok(Vec::new()),
    };
    let (inputs, outputs) = match declared_io(&model_file) {
        Ok(io) => io,
        Err(e) if given_data => {
            return Err(InputsError::Declared {
                model_file,
                reason: format!("{e:#}"),
            });
        }
        // The build reports what is wrong with the file.
        Err(_) => return Ok(Vec::new()),
    };

    let build = resolved.build_values();
    let shapes: BTreeMap<String, Vec<i64>> = trtmc_core::settings::shape_settings(&build)
        .map(|(name, dims)| (name.to_string(), dims))
        .collect();
    for name in shapes.keys() {
        if !inputs.iter().any(|d| &d.name == name) {
            return Err(InputsError::UnknownShapeInput {
                name: name.clone(),
                model: profile.name.clone(),
                closest: trtmc_core::text::closest(name, inputs.iter().map(|d| d.name.as_str()))
                    .map(str::to_string),
                inputs: described(&inputs),
            });
        }
    }
    let dims: BTreeMap<String, i64> = build
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("dims.")?.to_string(), v.as_i64()?)))
        .collect();

    let data = if given_data {
        Some(read_data(given, &inputs, &outputs, &shapes)?)
    } else {
        None
    };

    if data.is_none()
        && let Some(d) = inputs.iter().find(|d| d.dtype == Some(DType::Str))
    {
        return Err(InputsError::StringInput {
            name: d.name.clone(),
            model: profile.name.clone(),
            wants: d.describe_type(),
        });
    }
    let mut lines = Vec::with_capacity(inputs.len());
    // The shapes fed, for the memory estimate before any worker (`None`: known after the build).
    let mut fed_shapes: Vec<(&Declared, Vec<i64>)> = Vec::new();
    for (i, d) in inputs.iter().enumerate() {
        let declared = marked(d);
        let mut note = None;
        let mut fed_shape: Option<Vec<i64>> = None;
        let data_shapes: Vec<&Vec<usize>> = data
            .iter()
            .flat_map(|c| &c.inputs)
            .filter_map(|set| set.tensors.iter().find(|t| t.name == d.name))
            .map(|t| &t.shape)
            .collect();
        let dynamic = d.has_shape && d.dims.iter().any(|x| matches!(x, Dim::Symbol(_)));
        let (fed, pin, pin_source): (String, Option<Vec<i64>>, Source) =
            if let Some(s) = shapes.get(&d.name) {
                fed_shape = Some(s.clone());
                (shape_text(s), None, Source::Cli)
            } else if let Some(first) = data_shapes.first() {
                let first: Vec<i64> = first.iter().map(|&n| n as i64).collect();
                fed_shape = Some(first.clone());
                if data_shapes
                    .iter()
                    .all(|s| s.iter().map(|&n| n as i64).eq(first.iter().copied()))
                {
                    (shape_text(&first), dynamic.then_some(first), Source::Cli)
                } else {
                    ("varies by data set".into(), None, Source::Cli)
                }
            } else if !d.has_shape {
                ("as the model gives".into(), None, Source::Default)
            } else {
                let mut defaulted = Vec::new();
                let concrete: Vec<i64> = d
                    .dims
                    .iter()
                    .zip(&d.unnamed)
                    .enumerate()
                    .map(|(axis, (dim, &unnamed))| match dim {
                        Dim::Fixed(n) => *n,
                        Dim::Symbol(s) => match dims.get(s) {
                            Some(&v) if !unnamed => v,
                            _ => {
                                defaulted.push(if unnamed {
                                    format!("axis {axis}")
                                } else {
                                    format!("`{s}` (axis {axis})")
                                });
                                1
                            }
                        },
                    })
                    .collect();
                // The file's own declaration is bounded like a shape the user gives.
                trtmc_core::limits::check_shape(&concrete).map_err(|why| {
                    InputsError::DeclaredShape {
                        name: d.name.clone(),
                        model: profile.name.clone(),
                        declared: marked(d),
                        model_file: model_file.clone(),
                        why,
                    }
                })?;
                fed_shape = Some(concrete.clone());
                if !defaulted.is_empty() {
                    note = Some(format!(
                        "input `{}`: dynamic {} set to 1; choose with --shape {}:{}",
                        d.name,
                        defaulted.join(", "),
                        d.name,
                        shape_text(&concrete)
                    ));
                }
                let pin = (!defaulted.is_empty()).then(|| concrete.clone());
                (shape_text(&concrete), pin, Source::Default)
            };
        if let Some(shape) = pin {
            resolved.build.insert(
                format!("shapes.{}", d.name),
                Sourced::new(json!(shape), pin_source),
            );
        }
        let seed = resolved
            .request_value("seed")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let source = match &data {
            Some(c) => sets_text(&c.inputs),
            None => synthesized(d, seed + i as i64),
        };
        lines.push(InputLine {
            name: d.name.clone(),
            declared,
            fed,
            source,
            note,
        });
        if let Some(shape) = fed_shape {
            fed_shapes.push((d, shape));
        }
    }
    check_memory(&fed_shapes, &outputs, &dims, given.most_tensor_gib)?;
    if let Some(data) = data {
        resolved.inputs.calls_rotate_over = data.inputs.len();
        resolved.data = Some(data);
    }
    Ok(lines)
}

/// Refuses a case whose inputs and outputs (those whose shapes are known before the build) would take
/// more memory than the bound (`--max-tensor-memory-gib`, default
/// [`trtmc_core::limits::DEFAULT_MOST_TENSOR_GIB`]) before any build or worker.
fn check_memory(
    fed: &[(&Declared, Vec<i64>)],
    outputs: &[Declared],
    dims: &BTreeMap<String, i64>,
    most_gib: Option<f64>,
) -> Result<(), InputsError> {
    use trtmc_core::limits::{TensorEstimate, shape_elements};
    // A symbolic dimension's value: given with --dim, else as an input's fed shape sets it.
    let mut bound: BTreeMap<&str, i64> = dims.iter().map(|(k, &v)| (k.as_str(), v)).collect();
    for (d, shape) in fed {
        for (dim, &n) in d.dims.iter().zip(shape) {
            if let Dim::Symbol(s) = dim {
                bound.entry(s.as_str()).or_insert(n);
            }
        }
    }
    let estimate = |what: String, d: &Declared, shape: &[i64]| TensorEstimate {
        what,
        bytes: shape_elements(shape)
            .unwrap_or(u64::MAX)
            .saturating_mul(element_bytes(d)),
    };
    let mut tensors: Vec<TensorEstimate> = fed
        .iter()
        .map(|(d, shape)| estimate(format!("input `{}`", d.name), d, shape))
        .collect();
    for d in outputs.iter().filter(|d| d.has_shape) {
        let shape: Option<Vec<i64>> = d
            .dims
            .iter()
            .map(|dim| match dim {
                Dim::Fixed(n) => Some(*n),
                Dim::Symbol(s) => bound.get(s.as_str()).copied(),
            })
            .collect();
        if let Some(shape) = shape {
            tensors.push(estimate(format!("output `{}`", d.name), d, &shape));
        }
    }
    trtmc_core::limits::check_tensor_memory(
        &tensors,
        most_gib.unwrap_or(trtmc_core::limits::DEFAULT_MOST_TENSOR_GIB),
    )
    .map_err(|reason| InputsError::TensorMemory { reason })
}

/// Refuses a generation case whose KV cache would take more memory than the bound
/// (`--max-tensor-memory-gib`), before any build or worker: every layer's key and value, per token
/// (from the built-in generator's configuration, else from the `past_key_values.*` inputs the ONNX
/// file declares), for the longest prompt plus `request.max_new_tokens`, per batch item. A model whose
/// cache layout is not known before its download is sized by the worker.
pub(crate) fn check_kv_cache_memory(
    profile: &Profile,
    tokenizer: Option<&str>,
    resolved: &ResolvedCase,
    cache_root: &Path,
    most_gib: Option<f64>,
) -> Result<(), InputsError> {
    use trtmc_core::limits::{DEFAULT_MOST_TENSOR_GIB, TensorEstimate};
    if !matches!(resolved.operation.as_str(), "generate" | "generate_vl") {
        return Ok(());
    }
    let Some(per_token) = kv_cache_bytes_per_token(profile, cache_root) else {
        return Ok(());
    };
    // A tokenizer the estimate cannot load is reported by the checks that need it; here the prompt
    // then counts for nothing, and the new tokens alone are sized.
    let prompt = crate::chat::longest_prompt_tokens(profile, tokenizer, resolved)
        .ok()
        .flatten()
        .unwrap_or(0);
    let request_u64 = |key: &str| resolved.request_value(key).and_then(Value::as_u64);
    let new_tokens = request_u64("max_new_tokens").unwrap_or(0);
    let batch = request_u64("batch_size").unwrap_or(1).max(1);
    let tokens = prompt.saturating_add(new_tokens);
    let bytes = per_token.saturating_mul(tokens).saturating_mul(batch);
    let bound = most_gib.unwrap_or(DEFAULT_MOST_TENSOR_GIB);
    let estimate = TensorEstimate {
        what: "KV cache".into(),
        bytes,
    };
    if trtmc_core::limits::check_tensor_memory(&[estimate], bound).is_ok() {
        return Ok(());
    }
    Err(InputsError::KvCache {
        model: profile.name.clone(),
        case: resolved.case.clone(),
        bytes,
        per_token,
        prompt,
        new_tokens,
        batch,
        bound,
    })
}

/// Bytes one token takes in `profile`'s KV cache, when known before a build: a built-in generator's
/// configuration, else the fixed heads and head size of the `past_key_values.*` inputs of a local
/// ONNX file ([1, heads, past, head_dim]).
fn kv_cache_bytes_per_token(profile: &Profile, cache_root: &Path) -> Option<u64> {
    if let trtmc_core::catalog::ModelSource::Builtin { name, .. } = &profile.source {
        return trtmc_modelgen::kv_cache_bytes_per_token(name);
    }
    let path = sources::resolve(profile, cache_root).ok()?.path?;
    let (inputs, _) = declared_io(&path).ok()?;
    let bytes: u64 = inputs
        .iter()
        .filter(|d| d.name.starts_with("past_key_values."))
        .filter_map(|d| match d.dims.as_slice() {
            [_, Dim::Fixed(heads), _, Dim::Fixed(head_dim)] => Some(
                u64::try_from(*heads)
                    .ok()?
                    .saturating_mul(u64::try_from(*head_dim).ok()?)
                    .saturating_mul(element_bytes(d)),
            ),
            _ => None,
        })
        .sum();
    (bytes > 0).then_some(bytes)
}

/// Bytes of one element of `d` (8 for a string's pointer, 4 when the type is not one trtmc handles).
fn element_bytes(d: &Declared) -> u64 {
    match d.dtype {
        Some(DType::F64 | DType::I64 | DType::Str) => 8,
        Some(DType::F32 | DType::I32) | None => 4,
        Some(DType::F16) => 2,
        Some(DType::Bool | DType::U8) => 1,
    }
}

/// Reads and checks `--inputs` and `--check-outputs`.
fn read_data(
    given: GivenData<'_>,
    inputs: &[Declared],
    outputs: &[Declared],
    shapes: &BTreeMap<String, Vec<i64>>,
) -> Result<CaseData, InputsError> {
    let read = |specs: &[String], kind: DataKind, declared: &[Declared]| {
        let mut sets: Vec<DataSetRecord> = Vec::new();
        for spec in specs {
            sets.extend(
                locate(spec, kind, declared, shapes)?
                    .into_iter()
                    .map(|(record, _)| record),
            );
        }
        check_sets(&sets, kind, declared, shapes)?;
        Ok::<_, InputsError>(sets)
    };
    let input_sets = read(given.inputs, DataKind::Inputs, inputs)?;
    let expected = read(given.check_outputs, DataKind::Outputs, outputs)?;
    if !expected.is_empty() && expected.len() != input_sets.len() {
        return Err(InputsError::SetCounts {
            inputs: input_sets.len(),
            expected: expected.len(),
        });
    }
    let (atol, rtol) = given.tolerance.unwrap_or((DEFAULT_ATOL, DEFAULT_RTOL));
    Ok(CaseData {
        inputs: input_sets,
        expected,
        atol,
        rtol,
    })
}

/// `f32[?batch,3,?]`: dynamic dimensions marked with `?`, by name when they have one.
fn marked(d: &Declared) -> String {
    if !d.has_shape {
        return format!(
            "{}[shape not declared]",
            trtmc_runtime::data::onnx_type_name(d.elem_type)
        );
    }
    let dims: Vec<String> = d
        .dims
        .iter()
        .zip(&d.unnamed)
        .map(|(dim, &unnamed)| match dim {
            Dim::Fixed(n) => n.to_string(),
            Dim::Symbol(_) if unnamed => "?".into(),
            Dim::Symbol(s) => format!("?{s}"),
        })
        .collect();
    format!(
        "{}[{}]",
        trtmc_runtime::data::onnx_type_name(d.elem_type),
        dims.join(",")
    )
}

fn described(inputs: &[Declared]) -> String {
    inputs
        .iter()
        .map(|d| format!("{} {}", d.name, marked(d)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sets_text(sets: &[DataSetRecord]) -> String {
    let first = sets
        .first()
        .map(|s| format!("{} ({})", s.source, s.format))
        .unwrap_or_default();
    match sets.len() {
        1 => format!("data set {first}"),
        n => format!("{n} data sets rotating across calls, first {first}"),
    }
}

/// How `infer` synthesizes an input of `d`'s type (`trtmc_runtime::tensor::synthesize`).
fn synthesized(d: &Declared, seed: i64) -> String {
    let values = match d.dtype {
        Some(DType::F32 | DType::F16 | DType::F64) => "floats uniform in [-1, 1)",
        Some(DType::I64 | DType::I32) => "integers uniform in [0, 100)",
        Some(DType::Bool) => "booleans, each true with probability 1/2",
        Some(DType::U8) => "bytes uniform in [0, 255]",
        Some(DType::Str) => return "none: string inputs need --inputs".into(),
        None => {
            return format!(
                "none: trtmc's runners do not handle {} inputs",
                trtmc_runtime::data::onnx_type_name(d.elem_type)
            );
        }
    };
    format!("synthesized: {values}, seed {seed}")
}
