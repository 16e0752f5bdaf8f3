//! `forecast`: a batch of seeded history windows [batch, window, channels] in, forecasts
//! [batch, horizon, channels] out (time-series models and neural operators on sampled fields). With
//! `request.samples`, each window comes from its own seed.

use anyhow::Context as _;

use super::batched::Batched;
use super::{CallRecord, ReferenceInputs, RunnerContext, TimedRunner};

pub struct ForecastRunner {
    /// One batch of windows per distinct call.
    windows: Batched,
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
        Ok(Self {
            windows: Batched::new(session, input_name, inputs, batch),
        })
    }
}

impl TimedRunner for ForecastRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.windows.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.windows.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let out = self
            .windows
            .run()?
            .context("the model returned no forecast")?;
        let per_window: usize = out.shape().iter().skip(1).product();
        record.items = self.windows.batch as u32;
        record.elements_per_item = per_window as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        self.windows.verify()
    }

    fn notes(&self) -> std::collections::BTreeMap<String, serde_json::Value> {
        self.windows.inputs.notes()
    }

    /// The seeded history windows of each distinct call, under the model's input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.windows.reference_inputs(&Default::default())
    }
}
