//! The state of the runners that feed one prepared batch per call through the model's first input
//! (`classify`, `forecast`, `detect`, `segment`): session, batches and the last outputs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::artifacts::image_rotation;
use super::{ReferenceInputs, Rotation, RunnerContext, check_finite};
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

pub(super) struct Batched {
    session: Box<dyn Session>,
    input_name: String,
    /// One batch per distinct call.
    pub(super) inputs: Rotation<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    pub(super) batch: usize,
}

impl Batched {
    /// Batches of `batch` items fed as `input_name`.
    pub(super) fn new(
        session: Box<dyn Session>,
        input_name: String,
        inputs: Rotation<HostTensor>,
        batch: usize,
    ) -> Self {
        let output_specs = session.outputs().to_vec();
        Self {
            session,
            input_name,
            inputs,
            outputs: Vec::new(),
            output_specs,
            batch,
        }
    }

    /// Image batches (decoded image files or seeded noise) for the session's first input.
    pub(super) fn images(ctx: &mut RunnerContext<'_>, operation: &str) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let session = ctx.take_session(operation)?;
        let inputs = image_rotation(ctx, session.as_ref(), batch)?;
        let input_name = session
            .inputs()
            .first()
            .map(|s| s.name.clone())
            .unwrap_or_default();
        Ok(Self::new(session, input_name, inputs, batch))
    }

    /// Runs the next call's batch; the model's first output, if it returned any.
    pub(super) fn run(&mut self) -> anyhow::Result<Option<&HostTensor>> {
        let call = self.inputs.next();
        self.outputs = self.session.run(vec![self.inputs.input(call)?.clone()])?;
        Ok(self.outputs.first())
    }

    /// Fails on non-finite values among the last call's outputs.
    pub(super) fn verify(&self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    /// Each distinct call's batch under the model's input name, plus the operation's `values`.
    pub(super) fn reference_inputs(&self, values: &BTreeMap<String, Value>) -> ReferenceInputs {
        self.inputs.reference_inputs(&self.input_name, values)
    }
}
