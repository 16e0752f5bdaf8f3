//! `generate`: prompt in, `max_new_tokens` tokens out, through the model's KV cache.
//!
//! The decoder contract follows Hugging Face optimum exports: inputs `input_ids` [1, seq], optional
//! `position_ids` [1, seq], optional `attention_mask` [1, total] or additive `attention_bias`
//! [1, 1, seq, total], and `past_key_values.<i>.key|value` [1, heads, past, head_dim]; outputs `logits`
//! [1, seq, vocab] and `present.<i>.key|value` [1, heads, total, head_dim]. The first call (prefill) runs
//! the whole prompt with an empty cache; every later call runs one token against the cache returned by
//! the previous call. Stages: `time_to_first_token` = prefill + first sampling; `prefill` = the same span;
//! `decode` = the rest of the call, so prefill + decode = the call's wall time.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{CallInputs, CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor};
use crate::tokenize::Tokenizer;

/// Additive bias that masks a position out.
const MASKED: f32 = -1e9;

/// Where each decoder input and output sits in the session's lists.
#[derive(Debug, Clone)]
struct DecoderIo {
    input_count: usize,
    ids: usize,
    positions: Option<usize>,
    mask: Option<usize>,
    bias: Option<usize>,
    /// (past input index, present output index, heads, head_dim)
    cache: Vec<(usize, usize, usize, usize)>,
    logits: usize,
    /// Vision-language decoders: `image_patches` [1, patches, patch_dim] (input index, patch_dim). The
    /// prefill call carries the image's patches ahead of the prompt; decode calls carry none.
    patches: Option<(usize, usize)>,
}

impl DecoderIo {
    fn discover(session: &dyn Session) -> anyhow::Result<Self> {
        let inputs = session.inputs();
        let outputs = session.outputs();
        let find_in = |n: &str| inputs.iter().position(|s| s.name == n);
        let ids = find_in("input_ids").context("the decoder has no `input_ids` input")?;
        let logits = outputs
            .iter()
            .position(|s| s.name == "logits")
            .context("the decoder has no `logits` output")?;
        let mut cache = Vec::new();
        for (i, spec) in inputs.iter().enumerate() {
            let Some(rest) = spec.name.strip_prefix("past_key_values.") else {
                continue;
            };
            let present = format!("present.{rest}");
            let o = outputs
                .iter()
                .position(|s| s.name == present)
                .with_context(|| {
                    format!(
                        "cache input `{}` has no matching output `{present}`",
                        spec.name
                    )
                })?;
            let fixed = |k: usize| match spec.shape.get(k) {
                Some(Dim::Fixed(n)) => Ok(*n as usize),
                _ => Err(anyhow::anyhow!(
                    "cache input `{}` must have fixed heads and head_dim",
                    spec.describe()
                )),
            };
            cache.push((i, o, fixed(1)?, fixed(3)?));
        }
        if cache.is_empty() {
            bail!(
                "the decoder has no `past_key_values.*` inputs: a KV cache is required for `generate`"
            );
        }
        let patches = match find_in("image_patches") {
            Some(i) => match inputs[i].shape.as_slice() {
                [_, _, Dim::Fixed(d)] => Some((i, *d as usize)),
                _ => bail!(
                    "decoder input `{}` must be [1, patches, patch_dim] with a fixed patch_dim",
                    inputs[i].describe()
                ),
            },
            None => None,
        };
        let known = 1
            + usize::from(patches.is_some())
            + cache.len()
            + usize::from(find_in("position_ids").is_some())
            + usize::from(find_in("attention_mask").is_some())
            + usize::from(find_in("attention_bias").is_some());
        if known != inputs.len() {
            bail!(
                "the decoder has inputs `generate` does not know how to feed (known: input_ids, position_ids, attention_mask, attention_bias, image_patches, past_key_values.*)"
            );
        }
        Ok(Self {
            input_count: inputs.len(),
            ids,
            positions: find_in("position_ids"),
            mask: find_in("attention_mask"),
            bias: find_in("attention_bias"),
            cache,
            logits,
            patches,
        })
    }
}

/// Greedy argmax, or seeded temperature/top-k sampling.
#[derive(Debug, Clone)]
pub struct Sampler {
    pub do_sample: bool,
    pub temperature: f32,
    pub top_k: usize,
    pub seed: i64,
    rng: ChaCha8Rng,
    scratch: Vec<(f32, usize)>,
}

impl Sampler {
    pub fn new(do_sample: bool, temperature: f32, top_k: usize, seed: i64) -> Self {
        let rng = if seed >= 0 {
            ChaCha8Rng::seed_from_u64(seed as u64)
        } else {
            ChaCha8Rng::from_os_rng()
        };
        Self {
            do_sample,
            temperature,
            top_k,
            seed,
            rng,
            scratch: Vec::new(),
        }
    }

    /// Restarts the random stream so that every call with a fixed seed produces the same tokens.
    pub fn restart(&mut self) {
        if self.seed >= 0 {
            self.rng = ChaCha8Rng::seed_from_u64(self.seed as u64);
        }
    }

    /// Whether [`Sampler::next`] draws a random number (one per token) rather than taking the argmax.
    pub fn draws(&self) -> bool {
        self.do_sample && self.temperature > 0.0
    }

    /// The first `n` uniform draws of a seeded stream, the ones [`Sampler::next`] uses for tokens
    /// 1..=n of every call; `None` when sampling is greedy or unseeded (the draws then are not
    /// repeatable).
    pub fn seeded_draws(&self, n: usize) -> Option<Vec<f32>> {
        if !self.draws() || self.seed < 0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed as u64);
        Some((0..n).map(|_| rng.random::<f32>()).collect())
    }

    pub fn next(&mut self, logits: &[f32]) -> usize {
        if !self.draws() {
            return argmax(logits);
        }
        self.scratch.clear();
        self.scratch.extend(
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| (l / self.temperature, i)),
        );
        if self.top_k > 0 && self.top_k < self.scratch.len() {
            // Highest first, ties by token id: the kept tokens and their order (which the draw walks)
            // are fully determined, so a reference in another framework picks the same token.
            let order =
                |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
            self.scratch.select_nth_unstable_by(self.top_k - 1, order);
            self.scratch.truncate(self.top_k);
            self.scratch.sort_unstable_by(order);
        }
        let max = self
            .scratch
            .iter()
            .map(|p| p.0)
            .fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = self
            .scratch
            .iter_mut()
            .map(|p| {
                p.0 = (p.0 - max).exp();
                p.0
            })
            .sum();
        let mut target = self.rng.random::<f32>() * total;
        for &(w, i) in &self.scratch {
            if target < w {
                return i;
            }
            target -= w;
        }
        self.scratch.last().map(|p| p.1).unwrap_or(0)
    }
}

fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold(
            (0, f32::NEG_INFINITY),
            |b, (i, &x)| if x > b.1 { (i, x) } else { b },
        )
        .0
}

/// Tokens produced by one generation call and when the first one appeared.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationOutput {
    /// The generated token ids, in order.
    pub tokens: Vec<i64>,
    /// Nanoseconds from the call's start to the first generated token.
    pub first_token_ns: u64,
}

/// Runs prefill plus decode steps through `session`'s KV cache; `started` is the call's start.
pub fn generate_tokens(
    session: &mut dyn Session,
    prompt: &[i64],
    max_new_tokens: usize,
    sampler: &mut Sampler,
    started: Instant,
) -> anyhow::Result<GenerationOutput> {
    let io = DecoderIo::discover(session)?;
    generate_with(session, &io, None, prompt, max_new_tokens, sampler, started)
}

/// `image`: the prefill's image patches [1, patches, patch_dim] for a vision-language decoder.
fn generate_with(
    session: &mut dyn Session,
    io: &DecoderIo,
    image: Option<&ArrayD<f32>>,
    prompt: &[i64],
    max_new_tokens: usize,
    sampler: &mut Sampler,
    started: Instant,
) -> anyhow::Result<GenerationOutput> {
    sampler.restart();
    let mut tokens = Vec::with_capacity(max_new_tokens);
    let mut first_token_ns = 0;
    let mut cache: Vec<HostTensor> = io
        .cache
        .iter()
        .map(|&(_, _, heads, dim)| HostTensor::F32(ArrayD::zeros(IxDyn(&[1, heads, 0, dim]))))
        .collect();
    let mut step_ids: Vec<i64> = prompt.to_vec();
    let mut past = 0usize;
    for step in 0..max_new_tokens {
        let mut inputs: Vec<Option<HostTensor>> = vec![None; io.input_count];
        inputs[io.ids] = Some(HostTensor::I64(ArrayD::from_shape_vec(
            IxDyn(&[1, step_ids.len()]),
            step_ids.clone(),
        )?));
        // New positions of this call: the image's patches (prefill only) then the tokens.
        let mut seq = step_ids.len();
        if let Some((index, dim)) = io.patches {
            let patches = match image {
                Some(p) if step == 0 => p.clone(),
                _ => ArrayD::zeros(IxDyn(&[1, 0, dim])),
            };
            seq += patches.shape().get(1).copied().unwrap_or(0);
            inputs[index] = Some(HostTensor::F32(patches));
        }
        if let Some(p) = io.positions {
            let pos: Vec<i64> = (past..past + seq).map(|x| x as i64).collect();
            inputs[p] = Some(HostTensor::I64(ArrayD::from_shape_vec(
                IxDyn(&[1, seq]),
                pos,
            )?));
        }
        let total = past + seq;
        if let Some(m) = io.mask {
            inputs[m] = Some(HostTensor::I64(ArrayD::ones(IxDyn(&[1, total]))));
        }
        if let Some(b) = io.bias {
            let mut bias = vec![0f32; seq * total];
            for i in 0..seq {
                for j in (past + i + 1)..total {
                    bias[i * total + j] = MASKED;
                }
            }
            inputs[b] = Some(HostTensor::F32(ArrayD::from_shape_vec(
                IxDyn(&[1, 1, seq, total]),
                bias,
            )?));
        }
        for (k, &(input, _, _, _)) in io.cache.iter().enumerate() {
            inputs[input] = Some(std::mem::replace(
                &mut cache[k],
                HostTensor::F32(ArrayD::zeros(IxDyn(&[0]))),
            ));
        }
        let inputs: Vec<HostTensor> = inputs
            .into_iter()
            .map(|t| t.context("decoder input left unfilled"))
            .collect::<Result<_, _>>()?;
        let mut outputs = session.run(inputs)?;
        let logits = outputs
            .get(io.logits)
            .and_then(HostTensor::as_f32)
            .context("decoder logits are not f32")?;
        let (vocab, flat) = super::vocab_rows(logits)?;
        let last_row = &flat[flat.len() - vocab..];
        if last_row.iter().any(|x| !x.is_finite()) {
            bail!(
                "output `logits` holds non-finite values (NaN or infinity) at step {step}: the run is a failure, not a result"
            );
        }
        let token = sampler.next(last_row) as i64;
        tokens.push(token);
        if step == 0 {
            first_token_ns = started.elapsed().as_nanos() as u64;
        }
        for (k, &(_, output, _, _)) in io.cache.iter().enumerate() {
            cache[k] = std::mem::replace(
                &mut outputs[output],
                HostTensor::F32(ArrayD::zeros(IxDyn(&[0]))),
            );
        }
        past = total;
        step_ids.clear();
        step_ids.push(token);
    }
    Ok(GenerationOutput {
        tokens,
        first_token_ns,
    })
}

/// One declared sample: its prompt's token ids (BOS included) and its sampling seed.
struct GenerateSample {
    prompt: Vec<i64>,
    seed: i64,
}

pub struct GenerateRunner {
    session: Box<dyn Session>,
    io: DecoderIo,
    tokenizer: Tokenizer,
    /// One prompt and sampling seed per distinct call.
    samples: Rotation<GenerateSample>,
    max_new_tokens: usize,
    sampler: Sampler,
    last: Option<GenerationOutput>,
    /// The image's patches for `generate_vl`, cut before timing.
    image: Option<ArrayD<f32>>,
}

impl GenerateRunner {
    pub fn prepare(ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        Self::prepare_with(ctx, false)
    }

    /// `vision`: the `generate_vl` operation, whose prefill carries the request's image.
    pub fn prepare_with(mut ctx: RunnerContext<'_>, vision: bool) -> anyhow::Result<Self> {
        let operation = if vision { "generate_vl" } else { "generate" };
        if ctx.batch_size()? > 1 {
            bail!(
                "operation `{operation}` has no batch API: request.batch_size above 1 is rejected"
            );
        }
        let tokenizer = Tokenizer::load(ctx.tokenizer, ctx.manifest_dir)?;
        let chat = ctx
            .request
            .get(trtmc_core::chat::MODE_FIELD)
            .and_then(Value::as_str)
            == Some(trtmc_core::chat::MODE_CHAT);
        if chat && ctx.request.get(trtmc_core::chat::PROMPT_FIELD).is_none() {
            bail!(
                "a chat case reached the worker without its rendered prompt (a runner bug: render it with trtmc_runner::chat before the worker starts)"
            );
        }
        // One (prompt ids, seed) per sample; case resolution refused sample prompts in chat mode, so a
        // chat case's samples all carry the rendered prompt.
        let requests =
            super::sample_requests(ctx.request)?.unwrap_or_else(|| vec![ctx.request.clone()]);
        let mut samples = Vec::with_capacity(requests.len());
        for (i, request) in requests.iter().enumerate() {
            let field = |name: &str| {
                if ctx.request.contains_key("samples") {
                    format!("request.samples[{i}].{name}")
                } else {
                    format!("request.{name}")
                }
            };
            let text = request
                .get(trtmc_core::chat::PROMPT_FIELD)
                .and_then(Value::as_str)
                .with_context(|| format!("{} must be a string", field("prompt")))?;
            let prompt = tokenizer.prompt_ids(text, chat)?;
            if prompt.is_empty() {
                bail!(
                    "{} has no tokens (for a chat case: the chat template wrote nothing for the case's messages)",
                    field("prompt")
                );
            }
            let seed = match request.get("seed") {
                None => -1,
                Some(v) => v
                    .as_i64()
                    .with_context(|| format!("{} must be an integer", field("seed")))?,
            };
            samples.push(GenerateSample { prompt, seed });
        }
        let max_new_tokens = ctx.int("max_new_tokens")?;
        if max_new_tokens < 1 {
            bail!("request.max_new_tokens must be at least 1, got {max_new_tokens}");
        }
        let max_new_tokens = max_new_tokens as usize;
        let do_sample = ctx
            .request
            .get("do_sample")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let temperature = ctx
            .request
            .get("temperature")
            .and_then(Value::as_f64)
            .unwrap_or(1.0) as f32;
        let top_k = ctx
            .request
            .get("top_k")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .max(0) as usize;
        let session = ctx.take_session(operation)?;
        let io = DecoderIo::discover(session.as_ref())?;
        let image = match (vision, io.patches) {
            (false, _) => None,
            (true, Some((_, dim))) => Some(super::artifacts::image_patches(&ctx, dim)?),
            (true, None) => bail!(
                "operation `generate_vl` needs a decoder with an `image_patches` input; this one is text-only (use task_strategy text_generation)"
            ),
        };
        let image_tokens = image.as_ref().map_or(0, |p| p.shape()[1]);
        let limit = ctx
            .bundle
            .and_then(|b| b.build_settings.get("kv_cache_length"))
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let longest = samples.iter().map(|s| s.prompt.len()).max().unwrap_or(0);
        if let Some(limit) = limit
            && image_tokens + longest + max_new_tokens > limit
        {
            bail!(
                "image ({image_tokens} patches) + prompt ({longest} tokens) + max_new_tokens ({max_new_tokens}) exceeds the KV-cache length {limit} of the bundle (shorten the prompt, lower request.max_new_tokens, or raise build.kv_cache_length)"
            );
        }
        let first_seed = samples[0].seed;
        let samples = Rotation::new(samples, ctx.first_call)?;
        Ok(Self {
            session,
            io,
            tokenizer,
            samples,
            max_new_tokens,
            sampler: Sampler::new(do_sample, temperature, top_k, first_seed),
            last: None,
            image,
        })
    }
}

impl TimedRunner for GenerateRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.samples.next();
        let sample = self.samples.prepared(call)?;
        self.sampler.seed = sample.seed;
        let started = Instant::now();
        let out = generate_with(
            self.session.as_mut(),
            &self.io,
            self.image.as_ref(),
            &sample.prompt,
            self.max_new_tokens,
            &mut self.sampler,
            started,
        )?;
        let total = started.elapsed().as_nanos() as u64;
        record.items = 1;
        record.input_tokens = sample.prompt.len() as u32;
        // Image patches occupy cache positions but are not text tokens.
        record.output_tokens = out.tokens.len() as u32;
        record.stages_ns = [
            out.first_token_ns,
            out.first_token_ns,
            total.saturating_sub(out.first_token_ns),
        ];
        self.last = Some(out);
        Ok(())
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.samples.notes();
        if let Some(out) = &self.last {
            notes.insert(
                "generated_text".into(),
                Value::from(self.tokenizer.decode(&out.tokens)),
            );
            notes.insert("generated_tokens".into(), Value::from(out.tokens.clone()));
        }
        notes.insert("sampling_seed".into(), Value::from(self.sampler.seed));
        notes
    }

    /// Per sample (one entry per distinct call): the prompt's token ids (BOS included), the image's
    /// patches for `generate_vl`, the sampling settings, and for seeded sampling the uniform draws of
    /// tokens 1..=max_new_tokens, so a reference repeats the same loop and picks the same tokens
    /// without a tokenizer or ChaCha8.
    fn reference_inputs(&self) -> ReferenceInputs {
        self.samples.reference_calls(|sample| {
            let mut tensors = vec![(
                "prompt_ids".to_string(),
                HostTensor::I64(ndarray::Array1::from(sample.prompt.clone()).into_dyn()),
            )];
            if let Some(image) = &self.image {
                tensors.push(("image_patches".to_string(), HostTensor::F32(image.clone())));
            }
            let sampler = Sampler::new(
                self.sampler.do_sample,
                self.sampler.temperature,
                self.sampler.top_k,
                sample.seed,
            );
            if let Some(draws) = sampler.seeded_draws(self.max_new_tokens) {
                tensors.push((
                    "sampling_uniforms".to_string(),
                    HostTensor::F32(ndarray::Array1::from(draws).into_dyn()),
                ));
            }
            let values = BTreeMap::from([
                (
                    "max_new_tokens".to_string(),
                    Value::from(self.max_new_tokens),
                ),
                ("do_sample".to_string(), Value::from(sampler.do_sample)),
                ("temperature".to_string(), Value::from(sampler.temperature)),
                ("top_k".to_string(), Value::from(sampler.top_k)),
                ("seed".to_string(), Value::from(sample.seed)),
            ]);
            CallInputs { tensors, values }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a reference in another framework does with the saved draws: temperature, the top k
    /// highest first (ties by id), f32 weights summed in that order, one draw walked through them.
    fn pick_with_draw(logits: &[f32], temperature: f32, top_k: usize, u: f32) -> usize {
        let mut kept: Vec<(f32, usize)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (l / temperature, i))
            .collect();
        kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        kept.truncate(top_k);
        let max = kept[0].0;
        let weights: Vec<f32> = kept.iter().map(|p| (p.0 - max).exp()).collect();
        let mut target = u * weights.iter().sum::<f32>();
        for (w, p) in weights.iter().zip(&kept) {
            if target < *w {
                return p.1;
            }
            target -= w;
        }
        kept[kept.len() - 1].1
    }

    #[test]
    fn the_saved_draws_reproduce_seeded_top_k_sampling() {
        // Ties (1.0 three times) straddle the top-k cut: the kept set must not depend on the sort.
        let logits = [0.5, 1.0, 3.0, 1.0, 2.5, 1.0, -1.0, 2.9];
        let mut sampler = Sampler::new(true, 0.7, 5, 11);
        let draws = sampler.seeded_draws(40).expect("seeded sampling draws");
        sampler.restart();
        let tokens: Vec<usize> = (0..40).map(|_| sampler.next(&logits)).collect();
        let again: Vec<usize> = draws
            .iter()
            .map(|&u| pick_with_draw(&logits, 0.7, 5, u))
            .collect();
        assert_eq!(tokens, again);
        // Kept: 2, 7, 4 and of the tied three the lowest ids, 1 and 3.
        assert!(
            tokens.iter().all(|&t| ![0, 5, 6].contains(&t)),
            "{tokens:?}"
        );
        assert!(
            Sampler::new(false, 0.7, 5, 11).seeded_draws(4).is_none(),
            "greedy"
        );
        assert!(
            Sampler::new(true, 0.7, 5, -1).seeded_draws(4).is_none(),
            "unseeded"
        );
    }

    #[test]
    fn greedy_picks_the_maximum_and_seeded_sampling_repeats() {
        let logits = [0.1, 2.0, 0.3, 1.9];
        assert_eq!(Sampler::new(false, 1.0, 0, -1).next(&logits), 1);
        let mut a = Sampler::new(true, 1.0, 0, 7);
        let first: Vec<usize> = (0..20).map(|_| a.next(&logits)).collect();
        a.restart();
        let again: Vec<usize> = (0..20).map(|_| a.next(&logits)).collect();
        assert_eq!(first, again);
        assert!(
            first
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 1,
            "sampling varies"
        );
        let mut k1 = Sampler::new(true, 1.0, 1, 3);
        assert!(
            (0..20).all(|_| k1.next(&logits) == 1),
            "top_k = 1 is greedy"
        );
    }
}
