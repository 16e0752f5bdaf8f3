//! `generate_image` and `generate_video`: seeded noise latents [n, channels, h, w] denoised by a noise
//! predictor (inputs `sample` and `timestep` [1], output the predicted noise) over `request.steps` Euler
//! steps from t = 1 to t = 0. An image batch is n images; a video is n frames denoised together. With
//! `request.samples`, each image's noise comes from its own seed.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use super::artifacts::seeded_rotation;
use super::{CallInputs, CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor};

pub struct DiffusionRunner {
    session: Box<dyn Session>,
    /// The starting noise of each distinct call.
    noise: Rotation<HostTensor>,
    latents: ArrayD<f32>,
    sample_index: usize,
    steps: usize,
    /// Images in the batch, or frames of the one video.
    count: usize,
    video: bool,
}

impl DiffusionRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>, video: bool) -> anyhow::Result<Self> {
        let operation = if video {
            "generate_video"
        } else {
            "generate_image"
        };
        let count = if video {
            let frames = ctx.int("frames")?;
            if frames < 1 {
                bail!("request.frames must be at least 1, got {frames}");
            }
            frames as usize
        } else {
            ctx.batch_size()?
        };
        let steps = ctx.int("steps")?;
        if steps < 1 {
            bail!("request.steps must be at least 1, got {steps}");
        }
        let session = ctx.take_session(operation)?;
        let inputs = session.inputs();
        let sample_index = inputs
            .iter()
            .position(|s| s.name == "sample")
            .context("the denoiser has no `sample` input")?;
        if !inputs.iter().any(|s| s.name == "timestep") || inputs.len() != 2 {
            bail!("the denoiser must take exactly `sample` and `timestep`");
        }
        let spec = &inputs[sample_index];
        let mut shape = Vec::new();
        for (i, d) in spec.shape.iter().enumerate() {
            shape.push(match d {
                Dim::Fixed(n) if i == 0 && *n as usize != count => bail!(
                    "the bundle was built for {n} {}, the request asks for {count}",
                    if video { "frames" } else { "images" }
                ),
                Dim::Fixed(n) => *n as usize,
                Dim::Symbol(_) if i == 0 => count,
                Dim::Symbol(s) => bail!("denoiser dimension `{s}` is unbound (set build.dims.{s})"),
            });
        }
        let noise = seeded_rotation(&ctx, spec, &shape)?;
        let latents = ArrayD::zeros(IxDyn(&shape));
        Ok(Self {
            session,
            noise,
            latents,
            sample_index,
            steps: steps as usize,
            count,
            video,
        })
    }
}

impl TimedRunner for DiffusionRunner {
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.noise.prepare_next()
    }

    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.noise.prepare_all()
    }

    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.noise.next();
        let mut x = match self.noise.input(call)? {
            HostTensor::F32(a) => a.clone(),
            _ => bail!("the denoiser's `sample` input must be f32"),
        };
        let dt = 1.0 / self.steps as f32;
        for k in 0..self.steps {
            let t = 1.0 - k as f32 * dt;
            let timestep = HostTensor::F32(ArrayD::from_elem(IxDyn(&[1]), t));
            let sample = HostTensor::F32(x.clone());
            let inputs = if self.sample_index == 0 {
                vec![sample, timestep]
            } else {
                vec![timestep, sample]
            };
            let outputs = self.session.run(inputs)?;
            let eps = outputs
                .first()
                .and_then(HostTensor::as_f32)
                .context("the denoiser's output is not f32")?;
            if eps.shape() != x.shape() {
                bail!(
                    "the denoiser returned shape {:?} for a sample of {:?}",
                    eps.shape(),
                    x.shape()
                );
            }
            x.scaled_add(-dt, eps);
        }
        self.latents = x;
        if self.video {
            record.items = 1;
            record.counts[0] = self.count as u64;
        } else {
            record.items = self.count as u32;
        }
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        if self.latents.iter().any(|v| !v.is_finite()) {
            bail!(
                "the denoised latents hold non-finite values (NaN or infinity): the run is a failure, not a result"
            );
        }
        Ok(())
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let n = self.latents.len().max(1) as f64;
        let mean = self.latents.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let mut notes = self.noise.notes();
        notes.insert("steps".to_string(), Value::from(self.steps));
        notes.insert("latent_mean".to_string(), Value::from(mean));
        notes
    }

    /// The initial noise (drawn with trtmc's seeded synthesis) and the Euler schedule: `steps` steps of
    /// dt = 1 / steps from t = 1, `x -= dt * eps(x, t)` in f32.
    fn reference_inputs(&self) -> ReferenceInputs {
        ReferenceInputs {
            calls: self
                .noise
                .inputs()
                .map(|noise| CallInputs {
                    tensors: vec![("noise".to_string(), noise.clone())],
                    values: BTreeMap::from([
                        ("steps".to_string(), Value::from(self.steps)),
                        ("count".to_string(), Value::from(self.count)),
                        ("video".to_string(), Value::from(self.video)),
                    ]),
                })
                .collect(),
        }
    }
}
