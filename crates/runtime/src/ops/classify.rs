//! `classify`: a batch of images in, the top-1 class of each out.

use anyhow::Context as _;
use serde_json::Value;

use super::artifacts::image_rotation;
use super::{CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

pub struct ClassifyRunner {
    session: Box<dyn Session>,
    input_name: String,
    /// One image batch per distinct call.
    inputs: Rotation<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    batch: usize,
    last_classes: Vec<usize>,
}

impl ClassifyRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let session = ctx.take_session("classify")?;
        let inputs = image_rotation(&ctx, session.as_ref(), batch)?;
        let output_specs = session.outputs().to_vec();
        let input_name = session
            .inputs()
            .first()
            .map(|s| s.name.clone())
            .unwrap_or_default();
        Ok(Self {
            session,
            input_name,
            inputs,
            outputs: Vec::new(),
            output_specs,
            batch,
            last_classes: Vec::new(),
        })
    }
}

impl TimedRunner for ClassifyRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.inputs.next();
        self.outputs = self.session.run(vec![self.inputs.input(call)?.clone()])?;
        let logits = self
            .outputs
            .first()
            .and_then(HostTensor::as_f32)
            .context("classifier output is not f32 logits")?;
        let rows = logits.shape().first().copied().unwrap_or(1).max(1);
        let per_row = logits.len() / rows;
        let flat = logits
            .as_slice_memory_order()
            .context("logits are not contiguous")?;
        self.last_classes.clear();
        for row in flat.chunks(per_row.max(1)) {
            let best = row
                .iter()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |b, (i, &v)| if v > b.1 { (i, v) } else { b },
                );
            self.last_classes.push(best.0);
        }
        record.items = self.batch as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    /// The image batch of each distinct call (declared images or seeded noise), under the model's
    /// input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.inputs
            .reference_inputs(&self.input_name, &Default::default())
    }

    fn notes(&self) -> std::collections::BTreeMap<String, Value> {
        let mut notes = self.inputs.notes();
        notes.insert(
            "top1_classes".to_string(),
            Value::from(self.last_classes.clone()),
        );
        notes
    }
}
