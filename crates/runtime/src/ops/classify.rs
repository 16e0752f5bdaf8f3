//! `classify`: a batch of images in, the top-1 class of each out.

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::{CallRecord, RunnerContext, TimedRunner, check_finite};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec, synthesize};

pub struct ClassifyRunner {
    session: Box<dyn Session>,
    inputs: Vec<HostTensor>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    batch: usize,
    last_classes: Vec<usize>,
}

impl ClassifyRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let seed = ctx.int("seed")? as u64;
        let image = ctx.string("image")?.to_string();
        if image != "synthetic" {
            bail!("request.image `{image}`: only `synthetic` images are supported by this build");
        }
        let session = ctx.take_session("classify")?;
        let spec = session
            .inputs()
            .first()
            .context("the classifier declares no input")?
            .clone();
        if spec.shape.len() != 4 {
            bail!(
                "classifier input `{}` must be [batch, channels, height, width]",
                spec.describe()
            );
        }
        let mut shape = Vec::with_capacity(4);
        for (i, d) in spec.shape.iter().enumerate() {
            shape.push(match d {
                Dim::Fixed(n) => *n as usize,
                Dim::Symbol(_) if i == 0 => batch,
                Dim::Symbol(s) => {
                    bail!("classifier input dimension `{s}` is unbound (set build.dims.{s})")
                }
            });
        }
        if shape[0] != batch {
            bail!(
                "the bundle was built for batch {}, the request asks for {batch}",
                shape[0]
            );
        }
        let inputs = vec![synthesize(&spec, &shape, seed, 1)?];
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            inputs,
            outputs: Vec::new(),
            output_specs,
            batch,
            last_classes: Vec::new(),
        })
    }
}

impl TimedRunner for ClassifyRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        self.outputs = self.session.run(self.inputs.clone())?;
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

    fn notes(&self) -> std::collections::BTreeMap<String, Value> {
        std::collections::BTreeMap::from([(
            "top1_classes".to_string(),
            Value::from(self.last_classes.clone()),
        )])
    }
}
