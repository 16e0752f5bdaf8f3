//! The built-in models load and run in tract with the documented shapes and sane values.

mod common;

use common::*;
use trtmc_modelgen::vocab::{BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, encode_bytes};
use trtmc_modelgen::{DEFAULT_SEED, TINY_GPT, builtin_models, generate};

fn image(batch: usize, seed: u64) -> tract_onnx::prelude::Tensor {
    f32_tensor(
        &[batch, 3, 64, 64],
        pseudo_random(batch * 3 * 64 * 64, seed),
    )
}

#[test]
fn generation_is_deterministic_per_seed() {
    for m in builtin_models() {
        let a = generate(m.name, 5).unwrap();
        assert_eq!(
            a,
            generate(m.name, 5).unwrap(),
            "{} differs between two runs",
            m.name
        );
        assert_ne!(
            a,
            generate(m.name, 6).unwrap(),
            "{} ignores the seed",
            m.name
        );
    }
}

#[test]
fn cnn_classifies_batches() {
    let plan = load(&generate("tiny-cnn", DEFAULT_SEED).unwrap()).unwrap();
    let out = run(&plan, vec![image(2, 1)]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].shape(), &[2, 10]);
    let logits = values(&out[0]);
    assert!(logits.iter().all(|x| x.is_finite()));
    // Well-scaled: neither collapsed nor exploding, and the two images get different logits.
    let spread = std_dev(&logits);
    assert!((0.05..20.0).contains(&spread), "logit spread {spread}");
    assert!(
        max_abs_diff(&logits[..10], &logits[10..]) > 1e-3,
        "{logits:?}"
    );
    // Batch items are independent: item 1 alone gives the same logits.
    let single = values(
        &run(
            &plan,
            vec![f32_tensor(
                &[1, 3, 64, 64],
                values(&image(2, 1))[3 * 64 * 64..].to_vec(),
            )],
        )
        .unwrap()[0],
    );
    assert!(max_abs_diff(&single, &logits[10..]) < 1e-5);
}

#[test]
fn cnn_output_depends_on_seed() {
    let a = values(
        &run(
            &load(&generate("tiny-cnn", 1).unwrap()).unwrap(),
            vec![image(1, 3)],
        )
        .unwrap()[0],
    );
    let b = values(
        &run(
            &load(&generate("tiny-cnn", 2).unwrap()).unwrap(),
            vec![image(1, 3)],
        )
        .unwrap()[0],
    );
    assert!(max_abs_diff(&a, &b) > 1e-2);
}

fn encode(plan: &Plan, rows: &[Vec<i64>], masks: &[Vec<i64>]) -> (Vec<usize>, Vec<f32>, Vec<f32>) {
    let (b, s) = (rows.len(), rows[0].len());
    let out = run(
        plan,
        vec![
            i64_tensor(&[b, s], rows.concat()),
            i64_tensor(&[b, s], masks.concat()),
        ],
    )
    .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].shape(), &[b, 64]);
    (out[0].shape().to_vec(), values(&out[0]), values(&out[1]))
}

fn sentence(text: &str) -> Vec<i64> {
    let mut ids = vec![BOS_ID];
    ids.extend(encode_bytes(text));
    ids.push(EOS_ID);
    ids
}

#[test]
fn encoder_embeddings_are_unit_norm_and_mask_aware() {
    let plan = load(&generate("tiny-encoder", DEFAULT_SEED).unwrap()).unwrap();
    let a = sentence("the quick brown fox");
    let b = sentence("a slow green turtle sleeps");
    let (shape, hidden, emb) = encode(&plan, std::slice::from_ref(&a), &[vec![1; a.len()]]);
    assert_eq!(shape, vec![1, a.len(), 64]);
    assert!(hidden.iter().chain(&emb).all(|x| x.is_finite()));
    let norm = emb.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");

    // Right padding with mask 0 leaves the embedding unchanged...
    let mut padded = a.clone();
    padded.resize(b.len() + 3, PAD_ID);
    let mut mask = vec![1; a.len()];
    mask.resize(padded.len(), 0);
    let (_, _, emb_padded) = encode(&plan, &[padded.clone()], &[mask.clone()]);
    assert!(
        max_abs_diff(&emb, &emb_padded) < 1e-5,
        "padding changed the embedding"
    );
    // ...but unmasked, the same padding does change it (so the mask is what protects it).
    let (_, _, emb_unmasked) = encode(&plan, &[padded.clone()], &[vec![1; padded.len()]]);
    assert!(max_abs_diff(&emb, &emb_unmasked) > 1e-3);

    // A padded batch of two sentences equals the two run alone; different text, different vector.
    let mut b_padded = b.clone();
    b_padded.resize(padded.len(), PAD_ID);
    let mut b_mask = vec![1; b.len()];
    b_mask.resize(padded.len(), 0);
    let (_, _, batch) = encode(&plan, &[padded, b_padded], &[mask, b_mask]);
    let (_, _, emb_b) = encode(&plan, std::slice::from_ref(&b), &[vec![1; b.len()]]);
    assert!(max_abs_diff(&batch[..64], &emb) < 1e-5);
    assert!(max_abs_diff(&batch[64..], &emb_b) < 1e-5);
    let cosine: f32 = emb.iter().zip(&emb_b).map(|(x, y)| x * y).sum();
    assert!(
        cosine < 0.9999,
        "different sentences, same embedding (cos {cosine})"
    );
}

#[test]
fn gpt_prefill_outputs_logits_and_cache() {
    let plan = load(&generate("tiny-gpt", DEFAULT_SEED).unwrap()).unwrap();
    let prompt = sentence("hello");
    let (logits, cache) = gpt_step(&plan, &prompt, &empty_cache()).unwrap();
    assert_eq!(logits.shape(), &[1, prompt.len(), VOCAB_SIZE]);
    assert_eq!(cache.len(), TINY_GPT.layers);
    for (k, v) in &cache {
        assert_eq!(
            k.shape(),
            &[1, TINY_GPT.heads, prompt.len(), TINY_GPT.head_dim]
        );
        assert_eq!(v.shape(), k.shape());
    }
    let l = values(&logits);
    assert!(l.iter().all(|x| x.is_finite()));
    // Not degenerate: logits spread a few units, so softmax is neither flat nor one-hot.
    let last = &l[l.len() - VOCAB_SIZE..];
    let spread = std_dev(last);
    assert!((0.3..10.0).contains(&spread), "logit spread {spread}");
    // Another prompt gives other logits.
    let (other, _) = gpt_step(&plan, &sentence("world"), &empty_cache()).unwrap();
    assert!(max_abs_diff(&values(&other), &l) > 1e-3);
}

/// The GPU suite's default model: ResNet-18 at ImageNet size, every weight a constant initializer
/// (no node computes a weight, unlike the onnx wheel's light_resnet50), well-scaled logits.
#[test]
fn resnet18_is_imagenet_sized_with_constant_weights() {
    use prost::Message as _;
    let bytes = generate("resnet18", DEFAULT_SEED).unwrap();
    let model = tract_onnx::pb::ModelProto::decode(bytes.as_slice()).unwrap();
    let graph = model.graph.unwrap();
    let parameters: usize = graph
        .initializer
        .iter()
        .map(|t| t.dims.iter().product::<i64>() as usize)
        .sum();
    // ResNet-18: 11,689,512 parameters, plus BatchNorm's running statistics (9,600).
    assert_eq!(parameters, 11_689_512 + 9_600, "{parameters}");
    let ops: std::collections::BTreeSet<&str> =
        graph.node.iter().map(|n| n.op_type.as_str()).collect();
    assert!(
        !ops.contains("ConstantOfShape") && !ops.contains("Constant"),
        "{ops:?}"
    );
    let initializers: std::collections::BTreeSet<&str> =
        graph.initializer.iter().map(|t| t.name.as_str()).collect();
    for node in graph
        .node
        .iter()
        .filter(|n| n.op_type == "Conv" || n.op_type == "Gemm")
    {
        assert!(
            initializers.contains(node.input[1].as_str()),
            "{}",
            node.name
        );
    }
    assert_eq!(
        graph.node.iter().filter(|n| n.op_type == "Conv").count(),
        20
    );

    let plan = load(&bytes).unwrap();
    let image = f32_tensor(&[1, 3, 224, 224], pseudo_random(3 * 224 * 224, 3));
    let out = run(&plan, vec![image]).unwrap();
    assert_eq!(out[0].shape(), &[1, 1000]);
    let logits = values(&out[0]);
    assert!(logits.iter().all(|x| x.is_finite()));
    let spread = std_dev(&logits);
    // Residual sums grow the activations with depth (ONNX Runtime: spread about 18 on uniform input).
    assert!((0.05..100.0).contains(&spread), "logit spread {spread}");
}

/// Pins the exact bytes of each model at the default seed, so a change to the generator (or to
/// a dependency's encoding or random stream) is noticed: it changes every model a user has
/// benchmarked. Update the digests deliberately when the models are meant to change.
#[test]
fn default_models_have_pinned_bytes() {
    let fnv = |bytes: &[u8]| {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let digests: Vec<(&str, u64)> = builtin_models()
        .iter()
        .map(|m| (m.name, fnv(&generate(m.name, DEFAULT_SEED).unwrap())))
        .collect();
    assert_eq!(digests, PINNED, "model bytes changed: {digests:#x?}");
}

const PINNED: &[(&str, u64)] = &[
    ("tiny-cnn", 0xf175_3d33_931f_3667),
    ("tiny-encoder", 0x48d6_1d38_5780_ca98),
    ("tiny-gpt", 0xb4f4_e650_82b7_f0dd),
    ("tiny-segnet", 0xfd5c_cf9e_119d_f6e2),
    ("tiny-detector", 0x11d9_60b6_37b0_c1b2),
    ("tiny-reranker", 0x7152_b46f_0f78_5d52),
    ("tiny-asr", 0x4019_0174_59ec_a694),
    ("tiny-vocoder", 0x4e1f_6f23_f088_66b4),
    ("tiny-voice", 0x4bd3_c6a4_ff3a_9008),
    ("tiny-denoiser", 0x4357_caba_4647_23e7),
    ("tiny-forecaster", 0x89f1_4e4c_ed0f_87bd),
    ("tiny-vlm", 0x1941_eb09_8b8c_bd10),
    ("resnet18", 0xf362_aa7f_2493_36e9),
];
