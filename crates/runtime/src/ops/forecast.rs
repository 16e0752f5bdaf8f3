//! `forecast`: a batch of seeded history windows [batch, window, channels] in, forecasts
//! [batch, horizon, channels] out (time-series models and neural operators on sampled fields). With
//! `request.samples`, each window comes from its own seed.

use anyhow::Context as _;

use super::{CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

pub struct ForecastRunner {
    session: Box<dyn Session>,
    input_name: String,
    /// One batch of windows per distinct call.
    inputs: Rotation<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    batch: usize,
}

impl ForecastRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let session = ctx.take_session("forecast")?;
        let spec = session
            .inputs()
            .first()
            .context("the model declares no input")?;
        let shape = super::artifacts::batch_shape(spec, batch)?;
        let inputs = super::artifacts::seeded_rotation(&ctx, spec, &shape)?;
        let input_name = spec.name.clone();
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            input_name,
            inputs,
            outputs: Vec::new(),
            output_specs,
            batch,
        })
    }
}

impl TimedRunner for ForecastRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.inputs.next();
        self.outputs = self.session.run(vec![self.inputs.input(call)?.clone()])?;
        let out = self
            .outputs
            .first()
            .context("the model returned no forecast")?;
        let per_window: usize = out.shape().iter().skip(1).product();
        record.items = self.batch as u32;
        record.elements_per_item = per_window as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    fn notes(&self) -> std::collections::BTreeMap<String, serde_json::Value> {
        self.inputs.notes()
    }

    /// The seeded history windows of each distinct call, under the model's input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.inputs
            .reference_inputs(&self.input_name, &Default::default())
    }
}
