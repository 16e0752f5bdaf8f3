//! `infer`: one forward pass over seeded synthesized inputs of the declared shapes.

use anyhow::bail;

use super::{CallRecord, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec, synthesize};

/// Upper bound (exclusive) of synthesized integer inputs: small, so token-id inputs stay in range.
const INT_HIGH: i64 = 100;

pub struct InferRunner {
    session: Box<dyn Session>,
    inputs: Vec<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
}

impl InferRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let seed = ctx.int("seed")? as u64;
        let session = ctx.take_session("infer")?;
        let inputs = synthesize_all(session.inputs(), seed)?;
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            inputs,
            outputs: Vec::new(),
            output_specs,
        })
    }
}

/// Seeded inputs for every declared input; input `i` uses seed `seed + i`.
pub fn synthesize_all(specs: &[TensorSpec], seed: u64) -> anyhow::Result<Vec<HostTensor>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| match spec.concrete_shape() {
            Ok(shape) => synthesize(spec, &shape, seed.wrapping_add(i as u64), INT_HIGH),
            Err(unbound) => bail!(
                "input `{}` has unbound dimensions {} (give them with --shape {}:<dims> or build.dims.<name>)",
                spec.name,
                unbound.join(", "),
                spec.name
            ),
        })
        .collect()
}

impl TimedRunner for InferRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        self.outputs = self.session.run(self.inputs.clone())?;
        record.items = 1;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }
}
