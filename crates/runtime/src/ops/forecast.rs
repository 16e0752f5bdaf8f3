//! `forecast`: a batch of seeded history windows [batch, window, channels] in, forecasts
//! [batch, horizon, channels] out (time-series models and neural operators on sampled fields).

use anyhow::Context as _;

use super::{CallInputs, CallRecord, ReferenceInputs, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

pub struct ForecastRunner {
    session: Box<dyn Session>,
    input_name: String,
    inputs: Vec<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    batch: usize,
}

impl ForecastRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let seed = ctx.int("seed")? as u64;
        let session = ctx.take_session("forecast")?;
        let spec = session
            .inputs()
            .first()
            .context("the model declares no input")?;
        let shape = super::artifacts::batch_shape(spec, batch)?;
        let inputs = vec![crate::tensor::synthesize(spec, &shape, seed, 1)?];
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
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        self.outputs = self.session.run(self.inputs.clone())?;
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

    /// The seeded history windows under the model's input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        let tensors = self
            .inputs
            .first()
            .map(|t| vec![(self.input_name.clone(), t.clone())])
            .unwrap_or_default();
        ReferenceInputs {
            calls: vec![CallInputs {
                tensors,
                values: Default::default(),
            }],
        }
    }
}
