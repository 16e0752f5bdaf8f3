//! `encode`: a batch of texts in, one embedding vector per text out (tokenization included in the call).
//! `request.texts` holds one text for every item, one per batch item, or at batch size 1 one per call
//! in rotation.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context as _, bail};
use ndarray::ArrayD;
use serde_json::Value;

use super::{
    CallInputs, CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner, check_finite,
    sample_layout,
};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec};
use crate::tokenize::Tokenizer;

pub struct EncodeRunner {
    session: Box<dyn Session>,
    tokenizer: Tokenizer,
    /// The texts of each distinct call.
    batches: Rotation<Vec<String>>,
    /// Fixed sequence length of the bundle, or `None` when the length follows the batch.
    seq_len: Option<usize>,
    input_names: Vec<String>,
    output_index: usize,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
}

impl EncodeRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let texts: Vec<String> = ctx
            .request
            .get("texts")
            .and_then(|v| v.as_array())
            .context("request.texts must be a list of strings")?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if texts.is_empty() {
            bail!("request.texts is empty: give at least one text");
        }
        let batches = sample_layout(texts.len(), batch)?
            .into_iter()
            .map(|items| items.into_iter().map(|i| texts[i].clone()).collect())
            .collect();
        let batches = Rotation::new(batches, ctx.first_call)?;
        let tokenizer = Tokenizer::load(ctx.tokenizer, ctx.manifest_dir)?;
        let session = ctx.take_session("encode")?;
        let input_names: Vec<String> = session.inputs().iter().map(|s| s.name.clone()).collect();
        for name in &input_names {
            if !["input_ids", "attention_mask", "token_type_ids"].contains(&name.as_str()) {
                bail!(
                    "encoder input `{name}` is not one of input_ids, attention_mask, token_type_ids"
                );
            }
        }
        let ids = session
            .inputs()
            .iter()
            .find(|s| s.name == "input_ids")
            .context("the encoder has no `input_ids` input")?;
        let seq_len = match ids.shape.get(1) {
            Some(Dim::Fixed(n)) => Some(*n as usize),
            _ => None,
        };
        if let Some(Dim::Fixed(b)) = ids.shape.first()
            && *b as usize != batch
        {
            bail!("the bundle was built for batch {b}, the request asks for {batch}");
        }
        let output_specs = session.outputs().to_vec();
        let output_index = output_specs
            .iter()
            .position(|s| s.name == "embeddings")
            .unwrap_or(0);
        Ok(Self {
            session,
            tokenizer,
            batches,
            seq_len,
            input_names,
            output_index,
            outputs: Vec::new(),
            output_specs,
        })
    }

    fn tokenize(&self, texts: &[String]) -> anyhow::Result<(ArrayD<i64>, ArrayD<i64>)> {
        let (bos, eos, pad) = (
            self.tokenizer.bos(),
            self.tokenizer.eos(),
            self.tokenizer.pad(),
        );
        let rows: Vec<Vec<i64>> = texts
            .iter()
            .map(|t| {
                let mut ids = vec![bos];
                ids.extend(self.tokenizer.encode(t)?);
                ids.push(eos);
                Ok(ids)
            })
            .collect::<anyhow::Result<_>>()?;
        let len = self
            .seq_len
            .unwrap_or_else(|| rows.iter().map(Vec::len).max().unwrap_or(1));
        let mut ids = Vec::with_capacity(rows.len() * len);
        let mut mask = Vec::with_capacity(rows.len() * len);
        for row in &rows {
            for j in 0..len {
                // Truncate long texts to the bundle's sequence length, keeping the end token.
                let token = if j + 1 == len && row.len() > len {
                    eos
                } else {
                    row.get(j).copied().unwrap_or(pad)
                };
                ids.push(token);
                mask.push(i64::from(j < row.len()));
            }
        }
        let shape = ndarray::IxDyn(&[rows.len(), len]);
        Ok((
            ArrayD::from_shape_vec(shape.clone(), ids)?,
            ArrayD::from_shape_vec(shape, mask)?,
        ))
    }

    /// The encoder's inputs in session order: token ids, attention mask, zero token types.
    fn feeds(&self, ids: &ArrayD<i64>, mask: &ArrayD<i64>) -> Vec<HostTensor> {
        self.input_names
            .iter()
            .map(|n| match n.as_str() {
                "input_ids" => HostTensor::I64(ids.clone()),
                "attention_mask" => HostTensor::I64(mask.clone()),
                _ => HostTensor::I64(ArrayD::zeros(ids.raw_dim())),
            })
            .collect()
    }
}

/// How many leading values of each embedding the notes keep (enough to compare with a reference).
const EMBEDDING_HEAD: usize = 8;

impl TimedRunner for EncodeRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.batches.next();
        let texts = self.batches.prepared(call)?;
        let items = texts.len();
        let (ids, mask) = self.tokenize(texts)?;
        let inputs = self.feeds(&ids, &mask);
        self.outputs = self.session.run(inputs)?;
        let out = self
            .outputs
            .get(self.output_index)
            .context("the encoder returned no embeddings")?;
        let shape = out.shape();
        record.items = items as u32;
        record.elements_per_item = shape.last().copied().unwrap_or(0) as u32;
        record.input_tokens = ids.len() as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    /// `embedding_head`: the first values of each item's embedding from the last call. With rotation:
    /// how many calls used each input, and how many of the token sequences the calls sent differ
    /// (texts that tokenize alike count once).
    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.batches.notes();
        let rotating = !notes.is_empty();
        if let Some(out) = self
            .outputs
            .get(self.output_index)
            .and_then(HostTensor::as_f32)
        {
            let width = out.shape().last().copied().unwrap_or(0).max(1);
            let values: Vec<f32> = out.iter().copied().collect();
            let heads: Vec<Value> = values
                .chunks(width)
                .map(|item| {
                    Value::from(
                        item.iter()
                            .take(EMBEDDING_HEAD)
                            .map(|&x| f64::from(x))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            notes.insert("embedding_head".to_string(), Value::from(heads));
        }
        if rotating {
            let distinct: BTreeSet<Vec<i64>> = self
                .batches
                .used()
                .filter_map(|texts| self.tokenize(texts).ok())
                .map(|(ids, _)| ids.into_raw_vec_and_offset().0)
                .collect();
            notes.insert("distinct_inputs".into(), Value::from(distinct.len()));
        }
        notes
    }

    /// Each distinct call's tokenized batch as the call feeds it, by the encoder's input names, with
    /// its texts, the tokenizer and the sequence length: a reference tokenizes inside its timed call,
    /// as this runner does, and checks its token ids against these.
    fn reference_inputs(&self) -> ReferenceInputs {
        let output = self
            .output_specs
            .get(self.output_index)
            .map_or("", |s| s.name.as_str());
        let mut calls = Vec::with_capacity(self.batches.inputs().count());
        for texts in self.batches.inputs() {
            let Ok((ids, mask)) = self.tokenize(texts) else {
                return ReferenceInputs::default();
            };
            let tensors = self
                .input_names
                .iter()
                .cloned()
                .zip(self.feeds(&ids, &mask))
                .collect();
            let values = BTreeMap::from([
                ("items".to_string(), Value::from(texts.len())),
                ("output".to_string(), Value::from(output)),
                ("texts".to_string(), Value::from(texts.clone())),
                ("tokenizer".to_string(), self.tokenizer.reference_spec()),
                ("seq_len".to_string(), Value::from(self.seq_len)),
            ]);
            calls.push(CallInputs { tensors, values });
        }
        ReferenceInputs { calls }
    }
}
