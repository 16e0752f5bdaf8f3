//! `classify`: a batch of images in, the top-1 class of each out.

use anyhow::Context as _;
use serde_json::Value;

use super::batched::Batched;
use super::{CallRecord, ReferenceInputs, RunnerContext, TimedRunner};
use crate::tensor::HostTensor;

pub struct ClassifyRunner {
    /// One image batch per distinct call.
    images: Batched,
    last_classes: Vec<usize>,
}

impl ClassifyRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        Ok(Self {
            images: Batched::images(&mut ctx, "classify")?,
            last_classes: Vec::new(),
        })
    }
}

impl TimedRunner for ClassifyRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.images.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.images.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let logits = self
            .images
            .run()?
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
        record.items = self.images.batch as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        self.images.verify()
    }

    /// The image batch of each distinct call (declared images or seeded noise), under the model's
    /// input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.images.reference_inputs(&Default::default())
    }

    fn notes(&self) -> std::collections::BTreeMap<String, Value> {
        let mut notes = self.images.inputs.notes();
        notes.insert(
            "top1_classes".to_string(),
            Value::from(self.last_classes.clone()),
        );
        notes
    }
}
