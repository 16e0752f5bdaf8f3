//! `infer`: one forward pass per call, over the case's own input data (`run --inputs`, several data
//! sets rotating across calls) or seeded synthesized inputs of the declared shapes; with expected
//! outputs (`--check-outputs`), each set's outputs are checked once, outside the timed calls.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use serde_json::Value;
use trtmc_core::accuracy::Tensor;
use trtmc_core::data::{CaseData, OutputCheck};

use super::{CallRecord, Rotation, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec, synthesize_all};

/// The notes key of the output checks (lifted into result.json's `output_check` by the runner).
pub const OUTPUT_CHECK_NOTE: &str = "output_check";
/// The notes key of the input shapes the calls used.
pub const INPUT_SHAPES_NOTE: &str = "input_shapes";

pub struct InferRunner {
    session: Box<dyn Session>,
    inputs: Rotation<Vec<HostTensor>>,
    input_names: Vec<String>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    /// The set the last call used.
    last: usize,
    /// Expected outputs per set (empty without `--check-outputs`), with the tolerances.
    expected: Vec<Vec<Tensor>>,
    tolerance: (f64, f64),
    checks: Vec<OutputCheck>,
    checked: Vec<bool>,
}

impl InferRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let seed = ctx.int("seed")? as u64;
        let session = ctx.take_session("infer")?;
        let settings = ctx.bundle.map(|b| &b.build_settings);
        let specs = bind_inputs(session.inputs(), settings);
        let input_names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let (sets, expected, tolerance) = match ctx.data {
            Some(data) => given_sets(data, &specs)?,
            None => (vec![synthesize_all(&specs, seed)?], Vec::new(), (0.0, 0.0)),
        };
        let output_specs = session.outputs().to_vec();
        let checked = vec![false; expected.len()];
        Ok(Self {
            session,
            inputs: Rotation::new(sets, ctx.first_call)?,
            input_names,
            outputs: Vec::new(),
            output_specs,
            last: 0,
            expected,
            tolerance,
            checks: Vec::new(),
            checked,
        })
    }
}

/// The declared inputs with every dynamic dimension bound: by the bundle's `shapes.<input>`, then its
/// `dims.<name>`, else 1 (run planning pins what it can and says which `--shape` sets the rest).
fn bind_inputs(
    specs: &[TensorSpec],
    settings: Option<&BTreeMap<String, Value>>,
) -> Vec<TensorSpec> {
    let setting = |key: String| settings.and_then(|s| s.get(&key));
    specs
        .iter()
        .map(|spec| {
            let whole: Option<Vec<i64>> = setting(format!("shapes.{}", spec.name))
                .and_then(Value::as_array)
                .and_then(|dims| dims.iter().map(Value::as_i64).collect());
            let shape = match whole {
                Some(dims) if dims.len() == spec.shape.len() => {
                    dims.into_iter().map(Dim::Fixed).collect()
                }
                _ => spec
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(_) => d.clone(),
                        Dim::Symbol(name) => Dim::Fixed(
                            setting(format!("dims.{name}"))
                                .and_then(Value::as_i64)
                                .unwrap_or(1),
                        ),
                    })
                    .collect(),
            };
            TensorSpec {
                shape,
                ..spec.clone()
            }
        })
        .collect()
}

type GivenSets = (Vec<Vec<HostTensor>>, Vec<Vec<Tensor>>, (f64, f64));

/// The case's input sets in the session's input order and type, and its expected outputs.
fn given_sets(data: &CaseData, specs: &[TensorSpec]) -> anyhow::Result<GivenSets> {
    let mut sets = Vec::with_capacity(data.inputs.len());
    for record in &data.inputs {
        let tensors = crate::data::read_set(record)?;
        let ordered = specs
            .iter()
            .map(|spec| {
                let t = tensors
                    .iter()
                    .find(|t| t.name == spec.name)
                    .with_context(|| format!("{} has no input `{}`", record.source, spec.name))?;
                crate::outputs::from_tensor(t, spec.dtype)
                    .with_context(|| format!("input `{}` of {}", spec.name, record.source))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        sets.push(ordered);
    }
    let expected = data
        .expected
        .iter()
        .map(crate::data::read_set)
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !expected.is_empty() && expected.len() != sets.len() {
        bail!(
            "{} input set(s) and {} expected-output set(s): give one expected set per input set",
            sets.len(),
            expected.len()
        );
    }
    Ok((sets, expected, (data.atol, data.rtol)))
}

impl TimedRunner for InferRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let i = self.inputs.next();
        self.last = i;
        self.outputs = self.session.run(self.inputs.prepared(i)?.clone())?;
        record.items = 1;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)?;
        // Each set's outputs are checked the first time a call uses it.
        let set = self.last;
        if let Some(expected) = self.expected.get(set)
            && !self.checked[set]
        {
            self.checked[set] = true;
            let (atol, rtol) = self.tolerance;
            for want in expected {
                let Some(k) = self.output_specs.iter().position(|s| s.name == want.name) else {
                    bail!(
                        "the expected outputs name `{}`, which the model does not produce",
                        want.name
                    );
                };
                self.checks.push(crate::outputs::check_against(
                    &self.outputs[k],
                    want,
                    set,
                    atol,
                    rtol,
                ));
            }
        }
        Ok(())
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.inputs.notes();
        let shapes: BTreeMap<&str, Vec<Vec<usize>>> = self
            .input_names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let mut seen: Vec<Vec<usize>> = Vec::new();
                for set in self.inputs.used() {
                    let shape = set[k].shape().to_vec();
                    if !seen.contains(&shape) {
                        seen.push(shape);
                    }
                }
                (name.as_str(), seen)
            })
            .collect();
        notes.insert(INPUT_SHAPES_NOTE.into(), serde_json::json!(shapes));
        if !self.checks.is_empty() {
            notes.insert(OUTPUT_CHECK_NOTE.into(), serde_json::json!(self.checks));
        }
        notes
    }
}
