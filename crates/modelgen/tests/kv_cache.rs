//! The `tiny-gpt` KV cache is real: decoding token by token with the cache reproduces the
//! logits of one full-sequence call.

mod common;

use common::*;
use trtmc_modelgen::vocab::{BOS_ID, VOCAB_SIZE, encode_bytes};
use trtmc_modelgen::{DEFAULT_SEED, generate};

const TOLERANCE: f32 = 1e-4;

/// Greedy generation with the cache: prefill the prompt, then one token per call.
/// Returns the generated ids and the logits row that chose each of them.
fn greedy_with_cache(plan: &Plan, prompt: &[i64], steps: usize) -> (Vec<i64>, Vec<Vec<f32>>) {
    let (logits, mut cache) = gpt_step(plan, prompt, &empty_cache()).unwrap();
    let mut row = values(&logits)[(prompt.len() - 1) * VOCAB_SIZE..].to_vec();
    let (mut ids, mut rows) = (Vec::new(), Vec::new());
    for _ in 0..steps {
        let next = argmax(&row) as i64;
        ids.push(next);
        rows.push(row);
        let (logits, new_cache) = gpt_step(plan, &[next], &cache).unwrap();
        assert_eq!(logits.shape(), &[1, 1, VOCAB_SIZE]);
        cache = new_cache;
        row = values(&logits);
    }
    (ids, rows)
}

#[test]
fn cached_decode_matches_full_sequence() {
    let plan = load(&generate("tiny-gpt", DEFAULT_SEED).unwrap()).unwrap();
    let mut prompt = vec![BOS_ID];
    prompt.extend(encode_bytes("Once upon a"));
    let steps = 12;
    let (generated, rows) = greedy_with_cache(&plan, &prompt, steps);

    // One call over prompt + generated tokens, no cache.
    let full: Vec<i64> = prompt.iter().chain(&generated).copied().collect();
    let (logits, cache) = gpt_step(&plan, &full, &empty_cache()).unwrap();
    assert_eq!(cache[0].0.shape()[2], full.len());
    let all = values(&logits);
    for (step, row) in rows.iter().enumerate() {
        let pos = prompt.len() - 1 + step;
        let reference = &all[pos * VOCAB_SIZE..(pos + 1) * VOCAB_SIZE];
        let diff = max_abs_diff(row, reference);
        assert!(
            diff < TOLERANCE,
            "step {step}: cached logits differ by {diff}"
        );
        assert_eq!(argmax(reference) as i64, generated[step]);
    }
}

#[test]
fn chunked_prefill_on_top_of_a_cache_matches() {
    // seq > 1 with past > 0: the second chunk attends to the cached first chunk.
    let plan = load(&generate("tiny-gpt", DEFAULT_SEED).unwrap()).unwrap();
    let mut ids = vec![BOS_ID];
    ids.extend(encode_bytes("chunked prefill"));
    let (full, _) = gpt_step(&plan, &ids, &empty_cache()).unwrap();
    let (_, cache) = gpt_step(&plan, &ids[..6], &empty_cache()).unwrap();
    let (tail, cache) = gpt_step(&plan, &ids[6..], &cache).unwrap();
    assert_eq!(cache[1].1.shape()[2], ids.len());
    let diff = max_abs_diff(&values(&tail), &values(&full)[6 * VOCAB_SIZE..]);
    assert!(diff < TOLERANCE, "chunked logits differ by {diff}");
}

#[test]
fn the_cache_contents_matter() {
    // A zeroed cache of the right shape gives other logits: the model really reads the cache.
    let plan = load(&generate("tiny-gpt", DEFAULT_SEED).unwrap()).unwrap();
    let ids = [BOS_ID, 40, 50, 60];
    let (_, cache) = gpt_step(&plan, &ids[..3], &empty_cache()).unwrap();
    let (real, _) = gpt_step(&plan, &ids[3..], &cache).unwrap();
    let zeroed: Vec<_> = cache
        .iter()
        .map(|(k, v)| {
            let z = |t: &tract_onnx::prelude::Tensor| f32_tensor(t.shape(), vec![0.0; t.len()]);
            (z(k), z(v))
        })
        .collect();
    let (fake, _) = gpt_step(&plan, &ids[3..], &zeroed).unwrap();
    assert!(max_abs_diff(&values(&real), &values(&fake)) > 1e-3);
}
