//! Output agreement: run a bundle once on given inputs and compare its named outputs with another
//! runtime's or with golden files, per output tensor, with [`trtmc_core::accuracy`].
//!
//! Library entry points for `compare`, `tune` and `matrix`:
//! - [`synthesize_inputs`]: the seeded inputs `infer` feeds (input `i` uses seed `seed + i`; floats
//!   uniform in [-1, 1), integers in [0, 100)), with symbolic dimensions bound from `dims`;
//! - [`run_session`]: one forward pass of a loaded session (the registry's `run_bundle` loads a
//!   bundle with its runtime first);
//! - [`to_tensor`] / [`from_tensor`]: between [`HostTensor`] and [`accuracy::Tensor`];
//! - [`agreement`]: every loss of every output plus the verdict of one [`AccuracySpec`];
//! - [`write_tensor_set`]: raw little-endian binaries with a JSON index (the golden format
//!   `trtmc_golden::read_golden` reads, and what the Python reference runners read).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trtmc_core::accuracy::{self, AccuracyReport, AccuracySpec, Algorithm, ElementType, Tensor};
use trtmc_core::fsutil::{write_atomic, write_json_atomic};

use crate::runtime::Session;
use crate::tensor::{DType, Dim, HostTensor, TensorSpec, synthesize_all};

/// The `schema` of a serialized [`Agreement`].
pub const AGREEMENT_SCHEMA: &str = "trtmc.output-agreement/v1";

/// `specs` with every symbolic dimension bound from `dims`; an unbound one is an error naming it.
pub fn bind_dims(
    specs: &[TensorSpec],
    dims: &BTreeMap<String, i64>,
) -> anyhow::Result<Vec<TensorSpec>> {
    let mut unbound = Vec::new();
    let bound = specs
        .iter()
        .map(|s| TensorSpec {
            shape: s
                .shape
                .iter()
                .map(|d| match d {
                    Dim::Symbol(name) => match dims.get(name) {
                        Some(&v) => Dim::Fixed(v),
                        None => {
                            unbound.push(format!("{name} (input `{}`)", s.name));
                            d.clone()
                        }
                    },
                    Dim::Fixed(_) => d.clone(),
                })
                .collect(),
            ..s.clone()
        })
        .collect();
    if !unbound.is_empty() {
        unbound.sort();
        unbound.dedup();
        bail!(
            "unbound dimensions {}: give each with --dim NAME=VALUE (or build them into the bundle with build.dims.NAME)",
            unbound.join(", ")
        );
    }
    Ok(bound)
}

/// The symbolic dimensions a case's build settings bind (`build.dims.<name>` = N).
pub fn build_dims(build: &BTreeMap<String, Value>) -> BTreeMap<String, i64> {
    build
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("dims.")?.to_string(), v.as_i64()?)))
        .collect()
}

/// The inputs `infer` synthesizes for `specs` with `seed`, symbolic dimensions bound from `dims`.
pub fn synthesize_inputs(
    specs: &[TensorSpec],
    seed: u64,
    dims: &BTreeMap<String, i64>,
) -> anyhow::Result<Vec<HostTensor>> {
    synthesize_all(&bind_dims(specs, dims)?, seed)
}

/// One forward pass of `session` with inputs matched to its declared inputs by name.
pub fn run_session(
    session: &mut dyn Session,
    inputs: &[(String, HostTensor)],
) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let ordered = session
        .inputs()
        .iter()
        .map(|spec| {
            let (_, t) = inputs
                .iter()
                .find(|(n, _)| *n == spec.name)
                .with_context(|| {
                    let given: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                    format!(
                        "the model needs input `{}`, which was not given (given: {})",
                        spec.name,
                        given.join(", ")
                    )
                })?;
            Ok(t.clone())
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let names: Vec<String> = session.outputs().iter().map(|s| s.name.clone()).collect();
    let outputs = session.run(ordered)?;
    if outputs.len() != names.len() {
        bail!(
            "the session declared {} outputs and returned {}",
            names.len(),
            outputs.len()
        );
    }
    Ok(names.into_iter().zip(outputs).collect())
}

fn element_type(t: &HostTensor) -> ElementType {
    match t {
        HostTensor::F32(_) => ElementType::F32,
        HostTensor::F64(_) => ElementType::F64,
        HostTensor::I64(_) => ElementType::I64,
        HostTensor::I32(_) => ElementType::I32,
        HostTensor::Bool(_) => ElementType::Bool,
        HostTensor::U8(_) => ElementType::U8,
        HostTensor::Str(_) => ElementType::String,
    }
}

/// A host tensor as an accuracy tensor (values widened to f64).
pub fn to_tensor(name: &str, t: &HostTensor) -> anyhow::Result<Tensor> {
    if let Some(strings) = t.strings() {
        return Ok(Tensor::new_strings(name, t.shape().to_vec(), strings)?);
    }
    let values: Vec<f64> = t.to_f32_vec().into_iter().map(f64::from).collect();
    Ok(Tensor::new(
        name,
        element_type(t),
        t.shape().to_vec(),
        values,
    )?)
}

/// An accuracy tensor (e.g. golden inputs) as a host tensor of `dtype`.
pub fn from_tensor(t: &Tensor, dtype: DType) -> anyhow::Result<HostTensor> {
    let dim = IxDyn(&t.shape);
    let v = &t.values;
    if (dtype == DType::Str) != (t.dtype == ElementType::String) {
        bail!(
            "tensor `{}` holds {} values, the model wants {}",
            t.name,
            t.dtype,
            dtype.name()
        );
    }
    Ok(match dtype {
        DType::Str => HostTensor::Str(ArrayD::from_shape_vec(dim, t.strings.clone())?),
        DType::F32 | DType::F16 => HostTensor::F32(ArrayD::from_shape_vec(
            dim,
            v.iter().map(|&x| x as f32).collect(),
        )?),
        DType::F64 => HostTensor::F64(ArrayD::from_shape_vec(dim, v.clone())?),
        DType::I64 => HostTensor::I64(ArrayD::from_shape_vec(
            dim,
            v.iter().map(|&x| x as i64).collect(),
        )?),
        DType::I32 => HostTensor::I32(ArrayD::from_shape_vec(
            dim,
            v.iter().map(|&x| x as i32).collect(),
        )?),
        DType::Bool => HostTensor::Bool(ArrayD::from_shape_vec(
            dim,
            v.iter().map(|&x| x != 0.0).collect(),
        )?),
        DType::U8 => HostTensor::U8(ArrayD::from_shape_vec(
            dim,
            v.iter().map(|&x| x as u8).collect(),
        )?),
    })
}

/// One computed output against its expected tensor (`--check-outputs`): strings exactly, numbers by
/// Polygraphy's element-wise rule with `atol`/`rtol` (`trtmc_core::data`).
pub fn check_against(
    got: &HostTensor,
    want: &Tensor,
    set: usize,
    atol: f64,
    rtol: f64,
) -> trtmc_core::data::OutputCheck {
    match got.strings() {
        Some(strings) => trtmc_core::data::check_string_output(
            &want.name,
            set,
            (got.shape(), &strings),
            (&want.shape, &want.strings),
        ),
        None => trtmc_core::data::check_output(
            &want.name,
            set,
            (got.shape(), &got.to_f64_vec()),
            (&want.shape, &want.values),
            atol,
            rtol,
        ),
    }
}

/// The losses of one output tensor under every algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorLosses {
    /// The output's name.
    pub name: String,
    /// Its shape (the reference's).
    pub shape: Vec<usize>,
    /// Loss per algorithm name (`l0`, `l1`, `l2`, `lInf`, `cos`); `None` when not finite.
    pub losses: BTreeMap<String, Option<f64>>,
}

/// The agreement of a candidate with a reference: every loss of every tensor, and the verdict of
/// `spec` (schema `trtmc.output-agreement/v1` when serialized).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// [`AGREEMENT_SCHEMA`].
    pub schema: String,
    /// The candidate's label (its runtime, say).
    pub candidate: String,
    /// The reference's label.
    pub reference: String,
    /// The algorithm and tolerance the verdict applies.
    pub spec: AccuracySpec,
    /// Whether every tensor passes under `spec`.
    pub passed: bool,
    /// Every tensor's loss under every algorithm, in the reference's order.
    pub tensors: Vec<TensorLosses>,
    /// The verdict under `spec`, per tensor.
    pub verdict: AccuracyReport,
}

/// Compares `candidate` with `reference` per output tensor.
pub fn agreement(
    candidate_label: &str,
    candidate: &[Tensor],
    reference_label: &str,
    reference: &[Tensor],
    spec: &AccuracySpec,
) -> anyhow::Result<Agreement> {
    let verdict = accuracy::compare(candidate, reference, spec)?;
    let mut tensors: Vec<TensorLosses> = reference
        .iter()
        .map(|r| TensorLosses {
            name: r.name.clone(),
            shape: r.shape.clone(),
            losses: BTreeMap::new(),
        })
        .collect();
    for algorithm in Algorithm::ALL {
        let each = AccuracySpec {
            algorithm,
            ..spec.clone()
        };
        let report = accuracy::compare(candidate, reference, &each)?;
        for (t, r) in tensors.iter_mut().zip(&report.tensors) {
            t.losses.insert(algorithm.name().to_string(), r.loss);
        }
    }
    Ok(Agreement {
        schema: AGREEMENT_SCHEMA.into(),
        candidate: candidate_label.into(),
        reference: reference_label.into(),
        spec: spec.clone(),
        passed: verdict.passed,
        tensors,
        verdict,
    })
}

/// Writes tensors as raw little-endian binaries plus `<kind>.json`
/// (`{"<kind>": [{"name", "dtype", "shape", "file"}]}`) into `dir`; returns the index path.
pub fn write_tensor_set(
    dir: &Path,
    kind: &str,
    tensors: &[(String, HostTensor)],
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut entries = Vec::with_capacity(tensors.len());
    for (i, (name, t)) in tensors.iter().enumerate() {
        let file = format!("{kind}-{i}.bin");
        write_atomic(&dir.join(&file), &le_bytes(t))
            .with_context(|| format!("cannot write {}", dir.join(&file).display()))?;
        entries.push(json!({
            "name": name,
            "dtype": t.dtype().name(),
            "shape": t.shape(),
            "file": file,
        }));
    }
    let index = dir.join(format!("{kind}.json"));
    write_json_atomic(&index, &json!({ kind: entries }))
        .with_context(|| format!("cannot write {}", index.display()))?;
    Ok(index)
}

/// The file [`write_call_inputs`] writes.
pub const CALL_INPUTS_FILE: &str = "operation-inputs.json";

/// Writes a runner's per-call inputs into `dir`: each call's tensors as raw binaries
/// (`call<i>-<j>.bin`) and an index, `operation-inputs.json`:
/// `{"calls": [{"tensors": [{"name", "dtype", "shape", "file"}], "values": {…}}]}`.
/// A reference runner uses `calls[i % len]` for its call `i`.
pub fn write_call_inputs(
    dir: &Path,
    inputs: &crate::reference::ReferenceInputs,
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut calls = Vec::with_capacity(inputs.calls.len());
    for (i, call) in inputs.calls.iter().enumerate() {
        let mut tensors = Vec::with_capacity(call.tensors.len());
        for (j, (name, t)) in call.tensors.iter().enumerate() {
            let file = format!("call{i}-{j}.bin");
            write_atomic(&dir.join(&file), &le_bytes(t))
                .with_context(|| format!("cannot write {}", dir.join(&file).display()))?;
            tensors.push(json!({
                "name": name,
                "dtype": t.dtype().name(),
                "shape": t.shape(),
                "file": file,
            }));
        }
        calls.push(json!({ "tensors": tensors, "values": call.values }));
    }
    let index = dir.join(CALL_INPUTS_FILE);
    write_json_atomic(&index, &json!({ "calls": calls }))
        .with_context(|| format!("cannot write {}", index.display()))?;
    Ok(index)
}

/// The tensor's elements as little-endian bytes in C order.
pub fn le_bytes(t: &HostTensor) -> Vec<u8> {
    match t {
        HostTensor::F32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        HostTensor::F64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        HostTensor::I64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        HostTensor::I32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        HostTensor::Bool(a) => a.iter().map(|&x| u8::from(x)).collect(),
        HostTensor::U8(a) => a.iter().copied().collect(),
        // Strings have no fixed width: each one's UTF-8 bytes, NUL-terminated.
        HostTensor::Str(a) => a
            .iter()
            .flat_map(|x| x.bytes().chain(std::iter::once(0)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, shape: Vec<Dim>) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            dtype: DType::F32,
            shape,
        }
    }

    #[test]
    fn symbolic_dims_bind_or_fail_naming_them() {
        let specs = vec![spec("x", vec![Dim::Symbol("batch".into()), Dim::Fixed(3)])];
        let dims = BTreeMap::from([("batch".to_string(), 2)]);
        let inputs = synthesize_inputs(&specs, 7, &dims).expect("bound");
        assert_eq!(inputs[0].shape(), &[2, 3]);
        assert_eq!(inputs, synthesize_inputs(&specs, 7, &dims).expect("again"));
        let err = synthesize_inputs(&specs, 7, &BTreeMap::new()).expect_err("unbound");
        assert!(err.to_string().contains("batch (input `x`)"), "{err}");
        assert!(err.to_string().contains("--dim"), "{err}");
    }

    #[test]
    fn tensors_round_trip_and_agreement_reports_every_loss() {
        let a = HostTensor::F32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0, 2.0]).expect("a"));
        let b = HostTensor::F32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0, 2.5]).expect("b"));
        let ta = to_tensor("y", &a).expect("ta");
        assert_eq!(from_tensor(&ta, DType::F32).expect("back"), a);
        let tb = to_tensor("y", &b).expect("tb");
        let spec = AccuracySpec::new(Algorithm::LInf, 0.1);
        let r = agreement("b", &[tb], "a", &[ta], &spec).expect("agreement");
        assert!(!r.passed);
        assert_eq!(r.tensors[0].losses["lInf"], Some(0.5));
        assert_eq!(r.tensors[0].losses["l1"], Some(0.25));
        assert_eq!(r.tensors[0].losses.len(), 5);
    }

    #[test]
    fn tensor_sets_are_raw_little_endian_with_an_index() {
        let dir = tempfile::tempdir().expect("tmp");
        let t = HostTensor::I64(ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![3, -1]).expect("t"));
        let index = write_tensor_set(dir.path(), "inputs", &[("ids".into(), t)]).expect("write");
        let doc: Value =
            serde_json::from_slice(&std::fs::read(&index).expect("read")).expect("json");
        assert_eq!(doc["inputs"][0]["dtype"], "i64");
        assert_eq!(doc["inputs"][0]["shape"], json!([1, 2]));
        let bytes = std::fs::read(dir.path().join("inputs-0.bin")).expect("bin");
        assert_eq!(bytes.len(), 16);
        assert_eq!(i64::from_le_bytes(bytes[8..].try_into().expect("8")), -1);
    }
}
