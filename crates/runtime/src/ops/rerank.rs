//! `rerank`: a query and `batch_size` documents in (`request.documents` holds one document for every
//! item, one per batch item, or at batch size 1 one per call in rotation), one relevance score per
//! (query, document) pair out, from one cross-encoder call. Each pair is tokenized as
//! `BOS query EOS document EOS`, padded to the longest pair (or to the bundle's fixed length); tokenizing
//! and sorting the documents by score are part of the call.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

use super::{
    CallInputs, CallRecord, ReferenceInputs, Rotation, RunnerContext, TimedRunner, check_finite,
    sample_layout,
};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec};
use crate::tokenize::Tokenizer;

pub struct RerankRunner {
    session: Box<dyn Session>,
    tokenizer: Tokenizer,
    query: String,
    /// The documents of each distinct call.
    batches: Rotation<Vec<String>>,
    seq_len: Option<usize>,
    input_names: Vec<String>,
    outputs: Vec<HostTensor>,
    output_specs: Vec<TensorSpec>,
    ranking: Vec<usize>,
}

impl RerankRunner {
    pub fn prepare(mut ctx: RunnerContext<'_>) -> anyhow::Result<Self> {
        let batch = ctx.batch_size()?;
        let query = ctx.string("query")?.to_string();
        let documents: Vec<String> = ctx
            .request
            .get("documents")
            .and_then(Value::as_array)
            .context("request.documents must be a list of strings")?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if documents.is_empty() {
            bail!("request.documents is empty: give at least one document");
        }
        let batches = sample_layout(documents.len(), batch)?
            .into_iter()
            .map(|items| items.into_iter().map(|i| documents[i].clone()).collect())
            .collect();
        let batches = Rotation::new(batches, ctx.first_call)?;
        let tokenizer = Tokenizer::load(ctx.tokenizer, ctx.manifest_dir)?;
        let session = ctx.take_session("rerank")?;
        let input_names: Vec<String> = session.inputs().iter().map(|s| s.name.clone()).collect();
        for name in &input_names {
            if !["input_ids", "attention_mask", "token_type_ids"].contains(&name.as_str()) {
                bail!(
                    "cross-encoder input `{name}` is not one of input_ids, attention_mask, token_type_ids"
                );
            }
        }
        let ids = session
            .inputs()
            .iter()
            .find(|s| s.name == "input_ids")
            .context("the cross-encoder has no `input_ids` input")?;
        let seq_len = match ids.shape.get(1) {
            Some(Dim::Fixed(n)) => Some(*n as usize),
            _ => None,
        };
        let output_specs = session.outputs().to_vec();
        Ok(Self {
            session,
            tokenizer,
            query,
            batches,
            seq_len,
            input_names,
            outputs: Vec::new(),
            output_specs,
            ranking: Vec::new(),
        })
    }

    fn tokenize(
        &self,
        documents: &[String],
    ) -> anyhow::Result<(ArrayD<i64>, ArrayD<i64>, ArrayD<i64>)> {
        let (bos, eos, pad) = (
            self.tokenizer.bos(),
            self.tokenizer.eos(),
            self.tokenizer.pad(),
        );
        let query = self.tokenizer.encode(&self.query)?;
        let rows: Vec<(Vec<i64>, usize)> = documents
            .iter()
            .map(|d| {
                let mut ids = vec![bos];
                ids.extend(&query);
                ids.push(eos);
                let query_len = ids.len();
                ids.extend(self.tokenizer.encode(d)?);
                ids.push(eos);
                Ok((ids, query_len))
            })
            .collect::<anyhow::Result<_>>()?;
        let len = self
            .seq_len
            .unwrap_or_else(|| rows.iter().map(|r| r.0.len()).max().unwrap_or(1));
        let n = rows.len() * len;
        let (mut ids, mut mask, mut types) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (row, query_len) in &rows {
            for j in 0..len {
                ids.push(row.get(j).copied().unwrap_or(pad));
                mask.push(i64::from(j < row.len()));
                types.push(i64::from(j >= *query_len && j < row.len()));
            }
        }
        let shape = IxDyn(&[rows.len(), len]);
        Ok((
            ArrayD::from_shape_vec(shape.clone(), ids)?,
            ArrayD::from_shape_vec(shape.clone(), mask)?,
            ArrayD::from_shape_vec(shape, types)?,
        ))
    }
}

impl RerankRunner {
    /// The tokenized (query, document) pairs as the cross-encoder's inputs, in session order.
    fn feeds(&self, documents: &[String]) -> anyhow::Result<Vec<HostTensor>> {
        let (ids, mask, types) = self.tokenize(documents)?;
        let mut ids = Some(ids);
        let mut mask = Some(mask);
        let mut types = Some(types);
        self.input_names
            .iter()
            .map(|n| match n.as_str() {
                "input_ids" => ids.take(),
                "attention_mask" => mask.take(),
                _ => types.take(),
            })
            .map(|t| {
                t.map(HostTensor::I64)
                    .context("cross-encoder input named twice")
            })
            .collect()
    }
}

impl TimedRunner for RerankRunner {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let call = self.batches.next();
        let documents = self.batches.prepared(call)?;
        let count = documents.len();
        let inputs = self.feeds(documents)?;
        let tokens = inputs.first().map_or(0, |t| t.shape().iter().product());
        self.outputs = self.session.run(inputs)?;
        let scores = self
            .outputs
            .first()
            .and_then(HostTensor::as_f32)
            .context("the cross-encoder's scores are not f32")?;
        let scores = scores
            .as_slice_memory_order()
            .context("scores are not contiguous")?;
        if scores.len() != count {
            bail!(
                "the cross-encoder returned {} scores for {count} documents",
                scores.len(),
            );
        }
        self.ranking.clear();
        self.ranking.extend(0..scores.len());
        self.ranking
            .sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        record.items = count as u32;
        record.input_tokens = tokens as u32;
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        check_finite(&self.output_specs, &self.outputs)
    }

    /// `ranking` (document indices, best first) and `scores` (per document) of the last call.
    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.batches.notes();
        let scores: Vec<f64> = self
            .outputs
            .first()
            .and_then(HostTensor::as_f32)
            .map(|s| s.iter().map(|&x| f64::from(x)).collect())
            .unwrap_or_default();
        notes.insert("ranking".to_string(), Value::from(self.ranking.clone()));
        notes.insert("scores".to_string(), Value::from(scores));
        notes
    }

    /// Each distinct call's tokenized (query, document) pairs as the call feeds them, by input name,
    /// with the query, the documents, the tokenizer and the sequence length: a reference tokenizes
    /// inside its timed call, as this runner does, and checks its token ids against these.
    fn reference_inputs(&self) -> ReferenceInputs {
        let mut calls = Vec::with_capacity(self.batches.inputs().count());
        for documents in self.batches.inputs() {
            let Ok(feeds) = self.feeds(documents) else {
                return ReferenceInputs::default();
            };
            let tensors = self.input_names.iter().cloned().zip(feeds).collect();
            let values = BTreeMap::from([
                ("documents".to_string(), Value::from(documents.len())),
                ("query".to_string(), Value::from(self.query.as_str())),
                ("texts".to_string(), Value::from(documents.clone())),
                ("tokenizer".to_string(), self.tokenizer.reference_spec()),
                ("seq_len".to_string(), Value::from(self.seq_len)),
            ]);
            calls.push(CallInputs { tensors, values });
        }
        ReferenceInputs { calls }
    }
}
