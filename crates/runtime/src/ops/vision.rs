//! `detect` and `segment`: a batch of images in (seeded noise or a decoded image file), boxes or class
//! masks out. Post-processing that turns raw outputs into detections and label maps is part of the call.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::batched::Batched;
use super::{CallRecord, ReferenceInputs, RunnerContext, TimedRunner};
use crate::tensor::HostTensor;

/// Runs the next image batch; the model's first output as f32.
fn run_images(images: &mut Batched) -> anyhow::Result<&ndarray::ArrayD<f32>> {
    images
        .run()?
        .and_then(HostTensor::as_f32)
        .context("the model's first output is not f32")
}

pub struct DetectRunner {
    vision: Batched,
    threshold: f32,
    last_detections: u64,
}

impl DetectRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let threshold = ctx
            .request
            .get("score_threshold")
            .and_then(Value::as_f64)
            .unwrap_or(0.5) as f32;
        Ok(Self {
            vision: Batched::images(&mut ctx, "detect")?,
            threshold,
            last_detections: 0,
        })
    }
}

impl TimedRunner for DetectRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.vision.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.vision.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let threshold = self.threshold;
        let out = run_images(&mut self.vision)?;
        // [batch, boxes, 4 + classes]: a box is a detection when its best class score passes.
        let per_box = *out.shape().last().context("detections have no box axis")?;
        if per_box <= 4 {
            bail!("detections must hold 4 box coordinates plus class scores per box");
        }
        let flat = out
            .as_slice_memory_order()
            .context("detections are not contiguous")?;
        let detections = flat
            .chunks(per_box)
            .filter(|b| b[4..].iter().any(|&s| s > threshold))
            .count() as u64;
        self.last_detections = detections;
        record.items = self.vision.batch as u32;
        record.counts[0] = detections;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        self.vision.verify()
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.vision.inputs.notes();
        notes.insert("detections".to_string(), Value::from(self.last_detections));
        notes
    }

    fn reference_inputs(&self) -> ReferenceInputs {
        self.vision.reference_inputs(&BTreeMap::from([(
            "score_threshold".to_string(),
            Value::from(self.threshold),
        )]))
    }
}

pub struct SegmentRunner {
    vision: Batched,
    labels: Vec<u32>,
    class_pixels: Vec<u64>,
}

impl SegmentRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        Ok(Self {
            vision: Batched::images(&mut ctx, "segment")?,
            labels: Vec::new(),
            class_pixels: Vec::new(),
        })
    }
}

impl TimedRunner for SegmentRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.vision.inputs.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.vision.inputs.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let out = run_images(&mut self.vision)?;
        let shape = out.shape().to_vec();
        let [batch, classes, h, w] = shape[..] else {
            bail!("mask logits must be [batch, classes, height, width], got {shape:?}");
        };
        let flat = out
            .as_slice_memory_order()
            .context("mask logits are not contiguous")?;
        // Label map: the arg-max class of every pixel.
        let plane = h * w;
        self.labels.clear();
        self.labels.resize(batch * plane, 0);
        self.class_pixels.clear();
        self.class_pixels.resize(classes, 0);
        for b in 0..batch {
            let image = &flat[b * classes * plane..(b + 1) * classes * plane];
            for p in 0..plane {
                let mut best = (0usize, f32::NEG_INFINITY);
                for c in 0..classes {
                    let v = image[c * plane + p];
                    if v > best.1 {
                        best = (c, v);
                    }
                }
                self.labels[b * plane + p] = best.0 as u32;
                self.class_pixels[best.0] += 1;
            }
        }
        let masks = (batch * classes) as u64;
        record.items = batch as u32;
        record.counts[0] = masks;
        record.counts[1] = masks * plane as u64;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        self.vision.verify()
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.vision.inputs.notes();
        notes.insert(
            "pixels_per_class".to_string(),
            Value::from(self.class_pixels.clone()),
        );
        notes
    }

    fn reference_inputs(&self) -> ReferenceInputs {
        self.vision.reference_inputs(&BTreeMap::new())
    }
}
