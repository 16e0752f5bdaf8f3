//! Deterministic built-in ONNX models for trtmc, and seeded weights for real architectures.
//!
//! Every model here is a real ONNX graph (IR 8, opset 17) written with `tract_onnx::pb` and
//! encoded with `prost`; its weights come from a ChaCha8 stream keyed by the seed and the tensor
//! name (see [`DEFAULT_SEED`]), so the bytes are identical on every machine and nothing is
//! downloaded.
//!
//! | name | task | inputs | outputs |
//! |---|---|---|---|
//! | `tiny-cnn` | classify | `image` f32 [batch, 3, 64, 64] | `logits` f32 [batch, 10] |
//! | `resnet18` | classify | `image` f32 [batch, 3, 224, 224] | `logits` f32 [batch, 1000] |
//! | `tiny-encoder` | encode | `input_ids`, `attention_mask` i64 [batch, seq] | `last_hidden_state` f32 [batch, seq, 64], `embeddings` f32 [batch, 64] (unit L2 norm) |
//! | `tiny-gpt` | generate | see [`DecoderSpec`] | `logits` f32 [1, seq, 259], `present.{i}.key/value` |
//!
//! The text models share the byte vocabulary of [`vocab`]. `tiny-gpt` takes an explicit KV cache
//! whose prefill call uses empty (`past = 0`) cache tensors; [`TINY_GPT`] describes the contract
//! for a host-side generation loop.
//!
//! [`families`] builds the published architectures of 32 model families (GPT-2, a Llama-style
//! decoder, BERT, ViT, Whisper, T5, YOLOv8, a diffusion UNet, HiFi-GAN, an FNO …) from their public
//! configurations at real size (built-in name `<family>`) and as `l0` smoke variants
//! (`<family>-l0`); [`builtin_config`] is the configuration a cache key includes.
//!
//! [`reweight`] gives a real-architecture model (e.g. the `onnx` wheel's `light_resnet50.onnx`,
//! whose weights are all one constant) seeded, well-scaled random weights.
//!
//! Tests: `cargo test -p trtmc-modelgen`. The reweight and Python cross-check tests need
//! `pip install onnx onnxruntime` (the light models are found through the installed `onnx`
//! package, or `TRTMC_ONNX_MODELS`); they fail with that instruction when it is missing.
//! `TRTMC_SKIP_PYTHON=1` skips only the onnxruntime cross-check (`tests/check_onnx.py`).
//! `cargo run -p trtmc-modelgen --example measure` prints sizes and tract timings.

mod cnn;
mod convnet;
mod encoder;
pub mod families;
mod generative;
mod gpt;
mod init;
mod layers;
mod nn;
mod proto;
mod reweight;
mod science;
mod tasks;
mod transformer;
pub mod vocab;

use anyhow::{Result, bail};
use serde::Serialize;

pub use gpt::{DecoderSpec, TINY_GPT, VLM_PATCH, VLM_PATCH_DIM};
pub use reweight::reweight;

/// The seed used when a catalog entry or command does not name one. Any `u64` works; each gives
/// a different, equally well-scaled set of weights.
pub const DEFAULT_SEED: u64 = 20_240_917;

/// What a built-in model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// An image to class logits (the `classify` operation).
    Classify,
    /// Token ids to hidden states and a pooled embedding (`encode`).
    Encode,
    /// Autoregressive text generation over a KV cache (`generate`).
    Generate,
    /// An image to boxes, scores and classes (`detect`).
    Detect,
    /// An image to per-pixel class logits (`segment`).
    Segment,
    /// A query and a document as one token sequence to a relevance score (`rerank`).
    Rerank,
    /// Speech to text (`transcribe`).
    Transcribe,
    /// Acoustic latents to a waveform, a vocoder (`generate_audio`).
    GenerateAudio,
    /// A waveform to a new waveform (`convert_speech`).
    ConvertSpeech,
    /// A timestep-conditioned noise predictor, called once per denoising step (`diffuse`).
    Diffuse,
    /// A window of a multichannel series to the steps after it (`forecast`).
    Forecast,
    /// A plain forward pass (encoder-decoders, CLIP, a VAE decoder): the `infer` operation.
    Infer,
}

impl Task {
    /// The task's name as listings and the catalog spell it; the operation of the same name runs it.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Classify => "classify",
            Task::Encode => "encode",
            Task::Generate => "generate",
            Task::Detect => "detect",
            Task::Segment => "segment",
            Task::Rerank => "rerank",
            Task::Transcribe => "transcribe",
            Task::GenerateAudio => "generate_audio",
            Task::ConvertSpeech => "convert_speech",
            Task::Diffuse => "diffuse",
            Task::Forecast => "forecast",
            Task::Infer => "infer",
        }
    }
}

/// One graph input and the concrete shape to use when nothing else is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct InputSpec {
    /// The graph input's name.
    pub name: &'static str,
    /// `"f32"` or `"i64"`.
    pub dtype: &'static str,
    /// The shape used when no `shapes.*` setting or data set says otherwise (batch 1).
    pub default_shape: &'static [usize],
}

/// A model that [`generate`] can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BuiltinModel {
    /// The built-in name a catalog entry or `--model` uses (`tiny-cnn`, ...).
    pub name: &'static str,
    /// One line on what the graph is, shown in listings.
    pub description: &'static str,
    /// What the model is for, which picks the operation that runs it.
    pub task: Task,
    /// Every graph input with a default shape (for `tiny-gpt`: a 16-token prefill).
    pub inputs: &'static [InputSpec],
}

const fn input(
    name: &'static str,
    dtype: &'static str,
    default_shape: &'static [usize],
) -> InputSpec {
    InputSpec {
        name,
        dtype,
        default_shape,
    }
}

const MODELS: &[BuiltinModel] = &[
    BuiltinModel {
        name: "tiny-cnn",
        description: "ResNet-style image classifier: 3x64x64 image to 10 logits (conv, BN, residual blocks)",
        task: Task::Classify,
        inputs: &[input("image", "f32", &[1, 3, 64, 64])],
    },
    BuiltinModel {
        name: "tiny-encoder",
        description: "BERT-like byte-level sentence embedder: 2 layers, hidden 64, mean-pooled unit-norm embedding",
        task: Task::Encode,
        inputs: &[
            input("input_ids", "i64", &[1, 16]),
            input("attention_mask", "i64", &[1, 16]),
        ],
    },
    BuiltinModel {
        name: "tiny-gpt",
        description: "GPT-like byte-level text generator: 2 layers, hidden 64, explicit KV cache",
        task: Task::Generate,
        inputs: &[
            input("input_ids", "i64", &[1, 16]),
            input("position_ids", "i64", &[1, 16]),
            input("attention_bias", "f32", &[1, 1, 16, 16]),
            input("past_key_values.0.key", "f32", &[1, 4, 0, 16]),
            input("past_key_values.0.value", "f32", &[1, 4, 0, 16]),
            input("past_key_values.1.key", "f32", &[1, 4, 0, 16]),
            input("past_key_values.1.value", "f32", &[1, 4, 0, 16]),
        ],
    },
    BuiltinModel {
        name: "tiny-segnet",
        description: "fully-convolutional semantic segmenter: 3x32x32 image to 4 class-mask logits",
        task: Task::Segment,
        inputs: &[input("image", "f32", &[1, 3, 32, 32])],
    },
    BuiltinModel {
        name: "tiny-detector",
        description: "single-shot detector: 3x32x32 image to 8 boxes with 3 class scores",
        task: Task::Detect,
        inputs: &[input("image", "f32", &[1, 3, 32, 32])],
    },
    BuiltinModel {
        name: "tiny-reranker",
        description: "byte-level cross-encoder: (query, document) tokens to one relevance score",
        task: Task::Rerank,
        inputs: &[
            input("input_ids", "i64", &[1, 16]),
            input("attention_mask", "i64", &[1, 16]),
        ],
    },
    BuiltinModel {
        name: "tiny-asr",
        description: "frame-wise CTC acoustic model: 16 kHz audio to byte-token logits per 10 ms",
        task: Task::Transcribe,
        inputs: &[input("audio", "f32", &[1, 10, 160])],
    },
    BuiltinModel {
        name: "tiny-vocoder",
        description: "frame-wise vocoder: 16-d latent frames to 256 waveform samples each",
        task: Task::GenerateAudio,
        inputs: &[input("latents", "f32", &[1, 8, 16])],
    },
    BuiltinModel {
        name: "tiny-voice",
        description: "frame-wise speech-to-speech converter: 16 kHz audio in and out",
        task: Task::ConvertSpeech,
        inputs: &[input("audio", "f32", &[1, 10, 160])],
    },
    BuiltinModel {
        name: "tiny-denoiser",
        description: "timestep-conditioned conv noise predictor on 4x16x16 latents (image and video diffusion)",
        task: Task::Diffuse,
        inputs: &[
            input("sample", "f32", &[1, 4, 16, 16]),
            input("timestep", "f32", &[1]),
        ],
    },
    BuiltinModel {
        name: "tiny-forecaster",
        description: "channel-independent MLP forecaster: 64-step window of 4 channels to 16 steps",
        task: Task::Forecast,
        inputs: &[input("history", "f32", &[1, 64, 4])],
    },
    BuiltinModel {
        name: "tiny-vlm",
        description: "vision-language generator: patch-embedding image encoder + the tiny-gpt decoder, KV cache",
        task: Task::Generate,
        inputs: &[
            input("input_ids", "i64", &[1, 8]),
            input("position_ids", "i64", &[1, 24]),
            input("image_patches", "f32", &[1, 16, 192]),
            input("attention_bias", "f32", &[1, 1, 24, 24]),
            input("past_key_values.0.key", "f32", &[1, 4, 0, 16]),
            input("past_key_values.0.value", "f32", &[1, 4, 0, 16]),
            input("past_key_values.1.key", "f32", &[1, 4, 0, 16]),
            input("past_key_values.1.value", "f32", &[1, 4, 0, 16]),
        ],
    },
    BuiltinModel {
        name: "resnet18",
        description: "ResNet-18 image classifier at ImageNet size (11.7 M parameters, 47 MB): 3x224x224 image to 1000 logits; a realistic GPU workload",
        task: Task::Classify,
        inputs: &[input("image", "f32", &[1, 3, 224, 224])],
    },
];

/// Every model [`generate`] knows, in a stable order.
pub fn builtin_models() -> &'static [BuiltinModel] {
    MODELS
}

/// The ONNX bytes of built-in model `name` with weights from `seed`. The same name and seed
/// give the same bytes on every machine.
pub fn generate(name: &str, seed: u64) -> Result<Vec<u8>> {
    Ok(match name {
        "tiny-cnn" => cnn::build(seed),
        "resnet18" => cnn::build_resnet18(seed),
        "tiny-encoder" => encoder::build(seed),
        "tiny-gpt" => gpt::build(seed),
        "tiny-segnet" => tasks::segnet(seed),
        "tiny-detector" => tasks::detector(seed),
        "tiny-reranker" => tasks::reranker(seed),
        "tiny-asr" => tasks::asr(seed),
        "tiny-vocoder" => tasks::vocoder(seed),
        "tiny-voice" => tasks::voice(seed),
        "tiny-denoiser" => tasks::denoiser(seed),
        "tiny-forecaster" => tasks::forecaster(seed),
        "tiny-vlm" => gpt::build_vlm(seed),
        _ => match families::family_arch(name) {
            Some((_, arch)) => arch.build(seed, name),
            None => bail!(
                "unknown built-in model {name:?}; known models: {}",
                builtin_names().join(", ")
            ),
        },
    })
}

/// Bytes one token takes in the KV cache of built-in generator `name`: every layer's key and value
/// (`past_key_values.<layer>.key|value`, [1, kv_heads, past, head_dim] of f32). `None` for a model
/// without a KV cache. Known without generating the model, so a run can be sized before it is built.
pub fn kv_cache_bytes_per_token(name: &str) -> Option<u64> {
    if let Some(model) = MODELS.iter().find(|m| m.name == name) {
        let bytes: usize = model
            .inputs
            .iter()
            .filter(|i| i.name.starts_with("past_key_values."))
            .map(|i| match i.default_shape {
                [_, heads, _, head_dim] => heads * head_dim * 4,
                _ => 0,
            })
            .sum();
        return (bytes > 0).then_some(bytes as u64);
    }
    match families::family_arch(name)?.1 {
        families::Arch::Decoder { text, .. } | families::Arch::VisionDecoder { text, .. } => {
            Some((text.layers * 2 * text.kv_heads * (text.hidden / text.heads) * 4) as u64)
        }
        _ => None,
    }
}

/// Every name [`generate`] accepts: the tiny models, then each family and its `-l0` variant.
pub fn builtin_names() -> Vec<String> {
    let mut names: Vec<String> = MODELS.iter().map(|m| m.name.to_string()).collect();
    for f in families::families() {
        names.push(f.name.to_string());
        names.push(format!("{}{}", f.name, families::SMOKE_SUFFIX));
    }
    names
}

/// Whether [`generate`] knows `name`.
pub fn is_builtin(name: &str) -> bool {
    MODELS.iter().any(|m| m.name == name) || families::family_arch(name).is_some()
}

/// What the bytes of built-in `name` depend on besides the seed and the crate version: a family's
/// configuration and the generator version (`null` for the tiny models). Cache keys include it.
pub fn builtin_config(name: &str) -> serde_json::Value {
    match families::family_arch(name) {
        Some((_, arch)) => serde_json::json!({
            "generator": families::GENERATOR_VERSION,
            "config": arch,
        }),
        None => serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_model_generates() {
        for m in builtin_models() {
            assert!(
                !generate(m.name, DEFAULT_SEED).unwrap().is_empty(),
                "{}",
                m.name
            );
        }
    }

    /// Every family's l0 variant generates the same bytes twice, other bytes for another seed, and a
    /// configuration key that differs from its real size's (real sizes are never generated in tests).
    #[test]
    fn family_smoke_variants_are_deterministic_and_keyed_by_configuration() {
        assert!(families::families().len() >= 30);
        for f in families::families() {
            let smoke = format!("{}{}", f.name, families::SMOKE_SUFFIX);
            assert!(is_builtin(&smoke) && is_builtin(f.name), "{}", f.name);
            let a = generate(&smoke, 5).unwrap();
            assert_eq!(
                a,
                generate(&smoke, 5).unwrap(),
                "{smoke} differs between runs"
            );
            assert_ne!(a, generate(&smoke, 6).unwrap(), "{smoke} ignores the seed");
            assert_ne!(builtin_config(&smoke), builtin_config(f.name), "{smoke}");
            assert!(
                a.len() < 4_000_000,
                "{smoke} is {} bytes: not a smoke size",
                a.len()
            );
        }
        assert!(builtin_config("tiny-gpt").is_null());
        assert!(!is_builtin("gpt2-l1"));
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = generate("tiny-rnn", 1).unwrap_err().to_string();
        assert!(
            err.contains("tiny-rnn") && err.contains("tiny-cnn, tiny-encoder, tiny-gpt"),
            "{err}"
        );
    }

    /// The per-token KV cache follows each generator's configuration: tiny-gpt 2 layers × key and
    /// value × 4 heads × 16 × f32; SmolLM-135M 30 layers × 2 × 3 key-value heads × 64 × f32.
    #[test]
    fn kv_cache_bytes_follow_the_decoder_configuration() {
        assert_eq!(
            kv_cache_bytes_per_token("tiny-gpt"),
            Some(2 * 2 * 4 * 16 * 4)
        );
        assert_eq!(
            kv_cache_bytes_per_token("tiny-vlm"),
            Some(2 * 2 * 4 * 16 * 4)
        );
        assert_eq!(kv_cache_bytes_per_token("llama"), Some(30 * 2 * 3 * 64 * 4));
        // The smoke variant: 2 layers, hidden 64, 4 heads, 2 key-value heads.
        assert_eq!(
            kv_cache_bytes_per_token("llama-l0"),
            Some(2 * 2 * 2 * 16 * 4)
        );
        assert_eq!(kv_cache_bytes_per_token("tiny-cnn"), None);
        assert_eq!(kv_cache_bytes_per_token("bert"), None);
        assert_eq!(kv_cache_bytes_per_token("no-such-model"), None);
    }

    #[test]
    fn gpt_defaults_match_the_decoder_spec() {
        let gpt = builtin_models()
            .iter()
            .find(|m| m.task == Task::Generate)
            .unwrap();
        let names: Vec<&str> = gpt.inputs.iter().map(|i| i.name).collect();
        for layer in 0..TINY_GPT.layers {
            assert!(names.contains(&TINY_GPT.past_key(layer).as_str()));
            assert!(names.contains(&TINY_GPT.past_value(layer).as_str()));
        }
    }
}
