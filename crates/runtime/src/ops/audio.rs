//! Audio operations. The WAV input is decoded while the runner is prepared; each call feeds the samples
//! through the model and counts the audio it consumed or produced in microseconds (`audio_us`), so that
//! audio seconds per second and the real-time factor (wall seconds per audio second) follow by reduction.
//!
//! - `transcribe`: a CTC acoustic model (`logits` [1, frames, vocab], blank = 0), greedy CTC decoding into
//!   tokens. Offline, one pass over the whole file; streaming (`request.chunk_ms > 0`), one pass per chunk
//!   with the transcript growing chunk by chunk, and `first_partial` = call start to the first chunk's
//!   partial transcript.
//! - `generate_audio`: seeded latent frames through a vocoder into a waveform.
//! - `convert_speech`: the WAV file through a speech-to-speech model into a new waveform.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::artifacts::{AudioLayout, audio_input, audio_us};
use super::{
    CallInputs, CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner, check_finite,
};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec};
use crate::tokenize::Tokenizer;

/// CTC blank label.
const BLANK: i64 = 0;

fn positive(ctx: &RunnerContext<'_>, name: &str) -> anyhow::Result<usize> {
    let v = ctx.int(name)?;
    if v < 1 {
        bail!("request.{name} must be at least 1, got {v}");
    }
    Ok(v as usize)
}

fn reject_batch(ctx: &RunnerContext<'_>, operation: &str) -> anyhow::Result<()> {
    if ctx.batch_size()? > 1 {
        bail!("operation `{operation}` has no batch API: request.batch_size above 1 is rejected");
    }
    Ok(())
}

/// The decoded audio of each sample of `request.samples` (each `audio` a WAV file or `synthetic`), or
/// of `request.audio` without a list: the calls rotate through them.
fn audio_samples(ctx: &RunnerContext<'_>, rate: u32) -> anyhow::Result<Vec<Vec<f32>>> {
    let Some(samples) = super::sample_requests(ctx.request)? else {
        return Ok(vec![audio_input(ctx, rate)?]);
    };
    samples
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let sample = ctx.for_sample(request);
            audio_input(&sample, rate).with_context(|| format!("request.samples[{i}]"))
        })
        .collect()
}

/// One transcription input: the whole file (offline) or one tensor per chunk (streaming), zero-padded
/// to whole frames, and the audio's length.
struct Recording {
    chunks: Vec<HostTensor>,
    audio_us: u64,
}

pub struct TranscribeRunner {
    session: Box<dyn Session>,
    input_name: String,
    tokenizer: Tokenizer,
    /// One recording per distinct call.
    recordings: Rotation<Recording>,
    /// The recording of the last call.
    last: usize,
    tokens: Vec<i64>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
}

impl TranscribeRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        reject_batch(&ctx, "transcribe")?;
        let rate = positive(&ctx, "sample_rate")? as u32;
        let frame = positive(&ctx, "frame_samples")?;
        let chunk_ms = ctx.int("chunk_ms")?;
        if chunk_ms < 0 {
            bail!(
                "request.chunk_ms must be 0 (offline) or a positive chunk length, got {chunk_ms}"
            );
        }
        let audio = audio_samples(&ctx, rate)?;
        let tokenizer = Tokenizer::load(ctx.tokenizer, ctx.manifest_dir)?;
        let session = ctx.take_session("transcribe")?;
        let [spec] = session.inputs() else {
            bail!("the acoustic model must take one input, the audio");
        };
        let layout = AudioLayout::of(spec, frame)?;
        let input_name = spec.name.clone();
        let frame = layout.frame;
        let recordings = audio
            .iter()
            .map(|samples| {
                let chunk = if chunk_ms == 0 {
                    samples.len()
                } else {
                    // Whole frames per chunk, at least one.
                    let n = (chunk_ms as usize * rate as usize / 1000).div_ceil(frame) * frame;
                    n.max(frame)
                };
                let chunks = samples
                    .chunks(chunk)
                    .map(|c| layout.tensor(c))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Ok(Recording {
                    chunks,
                    audio_us: audio_us(samples.len(), rate),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let recordings = Rotation::new(recordings, ctx.first_call)?;
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            input_name,
            tokenizer,
            last: 0,
            recordings,
            tokens: Vec::new(),
            outputs: Vec::new(),
            output_specs,
        })
    }
}

/// Appends the greedy CTC labels of `logits` [1, frames, vocab] to `tokens`; `prev` carries the last label
/// across chunk boundaries so that a repeat split by a boundary still collapses.
fn ctc_greedy(logits: &ArrayD<f32>, prev: &mut i64, tokens: &mut Vec<i64>) -> anyhow::Result<()> {
    let (vocab, flat) = super::vocab_rows(logits)?;
    for frame in flat.chunks(vocab.max(1)) {
        let label = frame
            .iter()
            .enumerate()
            .fold((0usize, f32::NEG_INFINITY), |b, (i, &v)| {
                if v > b.1 { (i, v) } else { b }
            })
            .0 as i64;
        if label != BLANK && label != *prev {
            tokens.push(label);
        }
        *prev = label;
    }
    Ok(())
}

impl TimedRunner for TranscribeRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        self.last = self.recordings.next();
        let recording = self.recordings.prepared(self.last)?;
        let started = Instant::now();
        let mut first_partial = 0u64;
        self.tokens.clear();
        let mut prev = BLANK;
        for (i, chunk) in recording.chunks.iter().enumerate() {
            self.outputs = self.session.run(vec![chunk.clone()])?;
            let logits = self
                .outputs
                .first()
                .and_then(HostTensor::as_f32)
                .context("the acoustic model's first output is not f32 logits")?;
            ctc_greedy(logits, &mut prev, &mut self.tokens)?;
            if i == 0 {
                first_partial = started.elapsed().as_nanos() as u64;
            }
        }
        record.items = 1;
        record.output_tokens = self.tokens.len() as u32;
        record.counts[0] = recording.audio_us;
        record.stages_ns[0] = first_partial;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    /// The last call's transcript, chunk count and audio length; `calls_per_input` when calls rotate.
    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.recordings.notes();
        notes.insert(
            "transcript".to_string(),
            Value::from(self.tokenizer.decode(&self.tokens)),
        );
        if let Ok(recording) = self.recordings.prepared(self.last) {
            notes.extend([
                ("chunks".to_string(), Value::from(recording.chunks.len())),
                (
                    "audio_seconds".to_string(),
                    Value::from(recording.audio_us as f64 / 1e6),
                ),
            ]);
        }
        notes
    }

    /// Per recording (one entry per distinct call): the chunks as the model takes them (`chunk0`,
    /// `chunk1`, …, one for offline), fed under the model's input name (`input`), with the CTC blank
    /// label.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.recordings.reference_calls(|recording| {
            let tensors = recording
                .chunks
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("chunk{i}"), c.clone()))
                .collect();
            let values = BTreeMap::from([
                ("input".to_string(), Value::from(self.input_name.clone())),
                ("chunks".to_string(), Value::from(recording.chunks.len())),
                ("blank".to_string(), Value::from(BLANK)),
                ("audio_us".to_string(), Value::from(recording.audio_us)),
            ]);
            CallInputs { tensors, values }
        })
    }
}

pub struct GenerateAudioRunner {
    session: Box<dyn Session>,
    input_name: String,
    latents: HostTensor,
    rate: u32,
    samples: usize,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
}

impl GenerateAudioRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        reject_batch(&ctx, "generate_audio")?;
        let rate = positive(&ctx, "sample_rate")? as u32;
        let frames = positive(&ctx, "frames")?;
        let seed = ctx.int("seed")? as u64;
        let session = ctx.take_session("generate_audio")?;
        let spec = session
            .inputs()
            .first()
            .context("the vocoder declares no input")?;
        let width = match spec.shape.as_slice() {
            [_, _, Dim::Fixed(w)] => *w as usize,
            _ => bail!(
                "vocoder input `{}` must be [1, frames, latent_width] with a fixed width",
                spec.describe()
            ),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<f32> = (0..frames * width)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let latents = HostTensor::F32(ArrayD::from_shape_vec(IxDyn(&[1, frames, width]), values)?);
        let input_name = spec.name.clone();
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            input_name,
            latents,
            rate,
            samples: 0,
            outputs: Vec::new(),
            output_specs,
        })
    }
}

impl TimedRunner for GenerateAudioRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        self.outputs = self.session.run(vec![self.latents.clone()])?;
        let audio = self
            .outputs
            .first()
            .context("the vocoder returned no audio")?;
        self.samples = audio.shape().iter().product();
        record.items = 1;
        record.counts[0] = audio_us(self.samples, self.rate);
        record.counts[1] = self.samples as u64;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([("generated_samples".to_string(), Value::from(self.samples))])
    }

    /// The seeded latent frames (drawn with trtmc's own RNG) under the vocoder's input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        one_tensor_call(&self.input_name, &self.latents)
    }
}

pub struct ConvertSpeechRunner {
    session: Box<dyn Session>,
    input_name: String,
    /// One (frame-padded audio, its length in µs) per distinct call.
    audio: Rotation<(HostTensor, u64)>,
    rate: u32,
    generated: usize,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
}

impl ConvertSpeechRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        reject_batch(&ctx, "convert_speech")?;
        let rate = positive(&ctx, "sample_rate")? as u32;
        let frame = positive(&ctx, "frame_samples")?;
        let recordings = audio_samples(&ctx, rate)?;
        let session = ctx.take_session("convert_speech")?;
        let [spec] = session.inputs() else {
            bail!("the speech-to-speech model must take one input, the audio");
        };
        let layout = AudioLayout::of(spec, frame)?;
        let audio = recordings
            .iter()
            .map(|samples| Ok((layout.tensor(samples)?, audio_us(samples.len(), rate))))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let audio = Rotation::new(audio, ctx.first_call)?;
        let input_name = spec.name.clone();
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            input_name,
            audio,
            rate,
            generated: 0,
            outputs: Vec::new(),
            output_specs,
        })
    }
}

impl TimedRunner for ConvertSpeechRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.audio.next();
        let (audio, input_us) = self.audio.prepared(call)?;
        self.outputs = self.session.run(vec![audio.clone()])?;
        let out = self
            .outputs
            .first()
            .context("the model returned no audio")?;
        self.generated = out.shape().iter().product();
        record.items = 1;
        record.counts[0] = *input_us;
        record.counts[1] = audio_us(self.generated, self.rate);
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.audio.notes();
        notes.insert("generated_samples".to_string(), Value::from(self.generated));
        notes
    }

    /// The decoded, frame-padded audio of each distinct call under the model's input name.
    fn reference_inputs(&self) -> ReferenceInputs {
        ReferenceInputs {
            calls: self
                .audio
                .inputs()
                .map(|(audio, _)| CallInputs {
                    tensors: vec![(self.input_name.clone(), audio.clone())],
                    values: BTreeMap::new(),
                })
                .collect(),
        }
    }
}

/// One call fed one tensor, with no other values.
fn one_tensor_call(name: &str, tensor: &HostTensor) -> ReferenceInputs {
    ReferenceInputs {
        calls: vec![CallInputs {
            tensors: vec![(name.to_string(), tensor.clone())],
            values: BTreeMap::new(),
        }],
    }
}
