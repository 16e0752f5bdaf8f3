//! The catalog of model families people ship, generated from their public configurations.
//!
//! Every [`Family`] is an architecture builder (see [`Arch`]) plus two configurations: the published
//! one at real size (built-in name = the family's name, e.g. `gpt2`) and an `l0` smoke variant of the
//! same architecture with one or two layers and a small width (`gpt2-l0`), which tests and the quick
//! release suite run. Weights are seeded (see [`crate::init`]); nothing is downloaded. Where the
//! generated graph departs from the original (BatchNorm folded, a simplification of a pooling), the
//! family's `follows` line or the builder's documentation says so.

use serde::Serialize;

use crate::Task;
use crate::convnet::{ConvNext, MobileNet, Stage, UNet, Yolo};
use crate::generative::{DiffusionUNet, HifiGan, VaeDecoder, Wav2Vec2};
use crate::nn::{Act, Norm};
use crate::science::{DLinear, Fno, PatchTst};
use crate::transformer::{
    Clip, EncoderDecoder, EncoderHead, Positions, Source, Transformer, VisionPrefix, Vit,
};

/// Bumped whenever a builder's output changes for an unchanged configuration: part of the source
/// identity, so cached generated files are rebuilt.
pub const GENERATOR_VERSION: u32 = 1;

/// An architecture and its configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) enum Arch {
    TextEncoder(Transformer, EncoderHead),
    Decoder {
        text: Transformer,
        tied_head: bool,
    },
    VisionDecoder {
        vision: VisionPrefix,
        text: Transformer,
    },
    Vit(Vit),
    MobileNet(MobileNet),
    ConvNext(ConvNext),
    Yolo(Yolo),
    UNet(UNet),
    Wav2Vec2(Wav2Vec2),
    EncoderDecoder(EncoderDecoder),
    Clip(Clip),
    DiffusionUNet(DiffusionUNet),
    VaeDecoder(VaeDecoder),
    HifiGan(HifiGan),
    PatchTst(PatchTst),
    DLinear(DLinear),
    Fno(Fno),
}

impl Arch {
    pub(crate) fn build(&self, seed: u64, name: &str) -> Vec<u8> {
        use crate::{convnet, generative, science, transformer};
        match self {
            Arch::TextEncoder(t, head) => transformer::text_encoder(seed, t, *head, name),
            Arch::Decoder { text, tied_head } => {
                transformer::decoder(seed, text, *tied_head, None, name)
            }
            Arch::VisionDecoder { vision, text } => {
                transformer::decoder(seed, text, true, Some(vision), name)
            }
            Arch::Vit(v) => transformer::vit_classifier(seed, v, name),
            Arch::MobileNet(m) => convnet::mobilenet(seed, m, name),
            Arch::ConvNext(m) => convnet::convnext(seed, m, name),
            Arch::Yolo(m) => convnet::yolo(seed, m, name),
            Arch::UNet(m) => convnet::unet(seed, m, name),
            Arch::Wav2Vec2(m) => generative::wav2vec2(seed, m, name),
            Arch::EncoderDecoder(m) => transformer::encoder_decoder(seed, m, name),
            Arch::Clip(m) => transformer::clip(seed, m, name),
            Arch::DiffusionUNet(m) => generative::diffusion_unet(seed, m, name),
            Arch::VaeDecoder(m) => generative::vae_decoder(seed, m, name),
            Arch::HifiGan(m) => generative::hifigan(seed, m, name),
            Arch::PatchTst(m) => science::patchtst(seed, m, name),
            Arch::DLinear(m) => science::dlinear(seed, m, name),
            Arch::Fno(m) => science::fno(seed, m, name),
        }
    }
}

/// One family: its published configuration at real size and its `l0` smoke variant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Family {
    /// The real-size built-in name (the smoke variant is `<name>-l0`).
    pub name: &'static str,
    /// The public configuration it follows, e.g. "gpt2: n_layer 12, n_embd 768, …".
    pub follows: &'static str,
    /// What the family's models do, which picks the operation that runs them.
    pub task: Task,
    pub(crate) real: Arch,
    pub(crate) smoke: Arch,
}

/// Suffix of a family's smoke variant.
pub const SMOKE_SUFFIX: &str = "-l0";

/// The configuration behind a family built-in name (`gpt2` or `gpt2-l0`).
pub(crate) fn family_arch(name: &str) -> Option<(&'static Family, Arch)> {
    let (base, smoke) = match name.strip_suffix(SMOKE_SUFFIX) {
        Some(base) => (base, true),
        None => (name, false),
    };
    let f = FAMILIES.iter().find(|f| f.name == base)?;
    Some((f, if smoke { f.smoke } else { f.real }))
}

/// Every generated family, in a stable order.
pub fn families() -> &'static [Family] {
    FAMILIES
}

const fn tf(layers: usize, hidden: usize, heads: usize, ffn: usize, vocab: usize) -> Transformer {
    Transformer {
        layers,
        hidden,
        heads,
        kv_heads: heads,
        ffn,
        vocab,
        norm: Norm::LayerNorm,
        act: Act::Gelu,
        positions: Positions::Learned(512),
        pre_norm: false,
        parallel: false,
        bias: true,
    }
}

/// BERT-style post-norm encoder.
const fn bert(
    layers: usize,
    hidden: usize,
    heads: usize,
    ffn: usize,
    vocab: usize,
    max: usize,
) -> Transformer {
    Transformer {
        positions: Positions::Learned(max),
        ..tf(layers, hidden, heads, ffn, vocab)
    }
}

/// A pre-norm stack (GPT-2, ViT, Whisper).
const fn pre(t: Transformer) -> Transformer {
    Transformer {
        pre_norm: true,
        ..t
    }
}

const fn with_act(t: Transformer, act: Act) -> Transformer {
    Transformer { act, ..t }
}

const fn with_positions(t: Transformer, positions: Positions) -> Transformer {
    Transformer { positions, ..t }
}

/// Llama-style: RMSNorm, rotary positions, grouped-query attention, SwiGLU, no biases.
const fn llama(
    layers: usize,
    hidden: usize,
    heads: usize,
    kv_heads: usize,
    ffn: usize,
    vocab: usize,
    max: usize,
) -> Transformer {
    Transformer {
        layers,
        hidden,
        heads,
        kv_heads,
        ffn,
        vocab,
        norm: Norm::RmsNorm,
        act: Act::SwiGlu,
        positions: Positions::Rotary {
            max,
            dims: hidden / heads,
        },
        pre_norm: true,
        parallel: false,
        bias: false,
    }
}

/// The smoke width of every transformer family: hidden 64, 4 heads, FFN 128, a 512-token vocabulary
/// (the byte and WordPiece test tokenizers stay below it).
const SMOKE_VOCAB: usize = 512;
const fn smoke(t: Transformer, layers: usize) -> Transformer {
    let kv = if t.kv_heads < t.heads { 2 } else { 4 };
    let positions = match t.positions {
        Positions::Learned(_) => Positions::Learned(256),
        Positions::Sinusoidal(_) => Positions::Sinusoidal(256),
        Positions::Rotary { max: _, dims } => Positions::Rotary {
            max: 256,
            dims: if dims * t.heads < t.hidden { 4 } else { 16 },
        },
        Positions::RelativeBias(_) => Positions::RelativeBias(64),
    };
    Transformer {
        layers,
        hidden: 64,
        heads: 4,
        kv_heads: kv,
        ffn: 128,
        vocab: if t.vocab > SMOKE_VOCAB {
            SMOKE_VOCAB
        } else {
            t.vocab
        },
        positions,
        ..t
    }
}

const BERT_BASE: Transformer = bert(12, 768, 12, 3072, 30522, 512);
const MINILM_L6: Transformer = bert(6, 384, 12, 1536, 30522, 512);
const SMALL_384: Transformer = bert(12, 384, 12, 1536, 30522, 512);
const GPT2: Transformer = pre(with_act(
    bert(12, 768, 12, 3072, 50257, 1024),
    Act::GeluTanh,
));
const SMOLLM: Transformer = llama(30, 576, 9, 3, 1536, 49152, 2048);
const OPT: Transformer = pre(with_act(bert(12, 768, 12, 3072, 50272, 2050), Act::Relu));
const PYTHIA: Transformer = Transformer {
    parallel: true,
    positions: Positions::Rotary {
        max: 2048,
        dims: 16,
    },
    ..pre(bert(12, 768, 12, 3072, 50304, 2048))
};
const VIT_B16: Transformer = pre(bert(12, 768, 12, 3072, 0, 0));
const DEIT_S: Transformer = pre(bert(12, 384, 6, 1536, 0, 0));
const SIGLIP_B: Transformer = pre(with_act(bert(12, 768, 12, 3072, 0, 0), Act::GeluTanh));
const WHISPER_TINY_ENC: Transformer = pre(with_positions(
    bert(4, 384, 6, 1536, 0, 0),
    Positions::Sinusoidal(1500),
));
const WHISPER_TINY_DEC: Transformer = pre(bert(4, 384, 6, 1536, 51865, 448));
const T5_SMALL: Transformer = Transformer {
    norm: Norm::RmsNorm,
    act: Act::Relu,
    positions: Positions::RelativeBias(512),
    pre_norm: true,
    bias: false,
    ..tf(6, 512, 8, 2048, 32128)
};
const BART_BASE: Transformer = bert(6, 768, 12, 3072, 50265, 1026);
const MARIAN: Transformer = with_act(
    with_positions(
        bert(6, 512, 8, 2048, 58101, 512),
        Positions::Sinusoidal(512),
    ),
    Act::Silu,
);
const CLIP_TEXT: Transformer = pre(with_act(bert(12, 512, 8, 2048, 49408, 77), Act::QuickGelu));
const CLIP_VISION: Transformer = pre(with_act(bert(12, 768, 12, 3072, 0, 0), Act::QuickGelu));
const WAV2VEC2_BASE: Transformer = bert(12, 768, 12, 3072, 0, 0);
const PATCHTST_ETTH1: Transformer = bert(3, 128, 16, 256, 0, 0);

const fn vit(image: usize, patch: usize, classes: usize, encoder: Transformer) -> Vit {
    Vit {
        image,
        patch,
        classes,
        encoder,
    }
}

const fn stage(
    expand: usize,
    channels: usize,
    repeats: usize,
    stride: usize,
    kernel: usize,
) -> Stage {
    Stage {
        expand,
        channels,
        repeats,
        stride,
        kernel,
    }
}

const MOBILENET_V2: &[Stage] = &[
    stage(1, 16, 1, 1, 3),
    stage(6, 24, 2, 2, 3),
    stage(6, 32, 3, 2, 3),
    stage(6, 64, 4, 2, 3),
    stage(6, 96, 3, 1, 3),
    stage(6, 160, 3, 2, 3),
    stage(6, 320, 1, 1, 3),
];
const EFFICIENTNET_B0: &[Stage] = &[
    stage(1, 16, 1, 1, 3),
    stage(6, 24, 2, 2, 3),
    stage(6, 40, 2, 2, 5),
    stage(6, 80, 3, 2, 3),
    stage(6, 112, 3, 1, 5),
    stage(6, 192, 4, 2, 5),
    stage(6, 320, 1, 1, 3),
];
const SMOKE_STAGES: &[Stage] = &[
    stage(1, 8, 1, 1, 3),
    stage(4, 16, 1, 2, 3),
    stage(4, 24, 2, 2, 5),
];

const W2V2_BASE_EXTRACTOR: &[(usize, usize, usize)] = &[
    (512, 10, 5),
    (512, 3, 2),
    (512, 3, 2),
    (512, 3, 2),
    (512, 3, 2),
    (512, 2, 2),
    (512, 2, 2),
];
const W2V2_SMOKE_EXTRACTOR: &[(usize, usize, usize)] = &[(32, 10, 5), (32, 3, 2), (32, 2, 2)];

/// A text encoder family: the same head at real size and in the smoke variant.
const fn text_encoder(
    name: &'static str,
    follows: &'static str,
    task: Task,
    head: EncoderHead,
    real: Transformer,
    smoke: Transformer,
) -> Family {
    Family {
        name,
        follows,
        task,
        real: Arch::TextEncoder(real, head),
        smoke: Arch::TextEncoder(smoke, head),
    }
}

/// A decoder-only generator family: the same LM head tying at real size and in the smoke variant.
const fn decoder(
    name: &'static str,
    follows: &'static str,
    real: Transformer,
    smoke: Transformer,
    tied_head: bool,
) -> Family {
    Family {
        name,
        follows,
        task: Task::Generate,
        real: Arch::Decoder {
            text: real,
            tied_head,
        },
        smoke: Arch::Decoder {
            text: smoke,
            tied_head,
        },
    }
}

/// A text-to-text encoder-decoder family: one configuration on both sides, one layer each in the
/// smoke variant.
const fn text_to_text(name: &'static str, follows: &'static str, t: Transformer) -> Family {
    let smoke = smoke(t, 1);
    Family {
        name,
        follows,
        task: Task::Infer,
        real: Arch::EncoderDecoder(EncoderDecoder {
            source: Source::Text,
            encoder: t,
            decoder: t,
        }),
        smoke: Arch::EncoderDecoder(EncoderDecoder {
            source: Source::Text,
            encoder: smoke,
            decoder: smoke,
        }),
    }
}

/// A MobileNet-style classifier family at 224x224 with 1000 classes; the smoke variant shares
/// its three small stages.
const fn mobilenet(
    name: &'static str,
    follows: &'static str,
    stages: &'static [Stage],
    efficient: bool,
) -> Family {
    Family {
        name,
        follows,
        task: Task::Classify,
        real: Arch::MobileNet(MobileNet {
            image: 224,
            stem: 32,
            stages,
            head: 1280,
            classes: 1000,
            width_percent: 100,
            efficient,
        }),
        smoke: Arch::MobileNet(MobileNet {
            image: 32,
            stem: 8,
            stages: SMOKE_STAGES,
            head: 64,
            classes: 10,
            width_percent: 100,
            efficient,
        }),
    }
}

/// A ViT classifier family: 224x224 with 16x16 patches and 1000 classes; the smoke variant
/// 32x32 with 8x8 patches and 10 classes.
const fn vit_classifier(
    name: &'static str,
    follows: &'static str,
    encoder: Transformer,
    smoke_layers: usize,
) -> Family {
    Family {
        name,
        follows,
        task: Task::Classify,
        real: Arch::Vit(vit(224, 16, 1000, encoder)),
        smoke: Arch::Vit(vit(32, 8, 10, smoke(encoder, smoke_layers))),
    }
}

static FAMILIES: &[Family] = &[
    // Text encoders: sentence embedders.
    text_encoder(
        "bert",
        "bert-base-uncased: 12 layers, hidden 768, 12 heads, intermediate 3072, vocab 30522, 512 positions, post-LN, GELU; mean-pooled unit-norm embedding",
        Task::Encode,
        EncoderHead::MeanPool,
        BERT_BASE,
        smoke(BERT_BASE, 2),
    ),
    text_encoder(
        "distilbert",
        "distilbert-base-uncased: 6 layers, dim 768, 12 heads, hidden_dim 3072, vocab 30522, 512 positions, post-LN, GELU",
        Task::Encode,
        EncoderHead::MeanPool,
        bert(6, 768, 12, 3072, 30522, 512),
        smoke(BERT_BASE, 1),
    ),
    text_encoder(
        "minilm",
        "sentence-transformers/all-MiniLM-L6-v2: 6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, mean pooling, normalized",
        Task::Encode,
        EncoderHead::MeanPool,
        MINILM_L6,
        smoke(MINILM_L6, 1),
    ),
    text_encoder(
        "bge",
        "BAAI/bge-small-en-v1.5: 12 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, CLS pooling, normalized",
        Task::Encode,
        EncoderHead::ClsPool,
        SMALL_384,
        smoke(SMALL_384, 2),
    ),
    text_encoder(
        "e5",
        "intfloat/e5-small-v2: 12 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, mean pooling, normalized",
        Task::Encode,
        EncoderHead::MeanPool,
        SMALL_384,
        smoke(SMALL_384, 1),
    ),
    text_encoder(
        "roberta",
        "roberta-base: 12 layers, hidden 768, 12 heads, intermediate 3072, vocab 50265, 514 positions, post-LN, GELU",
        Task::Encode,
        EncoderHead::MeanPool,
        bert(12, 768, 12, 3072, 50265, 514),
        smoke(BERT_BASE, 2),
    ),
    // Cross-encoder rerankers.
    text_encoder(
        "ms-marco-minilm",
        "cross-encoder/ms-marco-MiniLM-L-6-v2: 6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, tanh pooler, 1 label",
        Task::Rerank,
        EncoderHead::Rerank,
        MINILM_L6,
        smoke(MINILM_L6, 1),
    ),
    text_encoder(
        "tinybert-reranker",
        "cross-encoder/ms-marco-TinyBERT-L-2-v2: 2 layers, hidden 128, 2 heads, intermediate 512, vocab 30522, tanh pooler, 1 label",
        Task::Rerank,
        EncoderHead::Rerank,
        bert(2, 128, 2, 512, 30522, 512),
        smoke(MINILM_L6, 1),
    ),
    // Decoder-only generators with a KV cache.
    decoder(
        "gpt2",
        "gpt2: n_layer 12, n_embd 768, n_head 12, n_inner 3072, vocab 50257, n_positions 1024, pre-LN, gelu_new, tied LM head",
        GPT2,
        smoke(GPT2, 2),
        true,
    ),
    decoder(
        "llama",
        "HuggingFaceTB/SmolLM-135M (LlamaForCausalLM): 30 layers, hidden 576, 9 heads, 3 key-value heads, intermediate 1536, vocab 49152, 2048 positions, RMSNorm, rotary, SwiGLU, tied embeddings",
        SMOLLM,
        smoke(SMOLLM, 2),
        true,
    ),
    decoder(
        "opt",
        "facebook/opt-125m: 12 layers, hidden 768, 12 heads, ffn 3072, vocab 50272, 2050 learned positions, pre-LN, ReLU, tied LM head",
        OPT,
        smoke(OPT, 1),
        true,
    ),
    decoder(
        "pythia",
        "EleutherAI/pythia-160m (GPT-NeoX): 12 layers, hidden 768, 12 heads, intermediate 3072, vocab 50304, rotary on 25% of each head (16 of 64), parallel residual, untied LM head",
        PYTHIA,
        smoke(PYTHIA, 2),
        false,
    ),
    // Vision-language generator.
    Family {
        name: "smolvlm",
        follows: "HuggingFaceTB/SmolVLM-256M: SigLIP-B/16 image encoder (12 layers, hidden 768, 12 heads, 512x512 image, 1024 patches) projected into a SmolLM-135M decoder (no pixel shuffle: every patch is a token)",
        task: Task::Generate,
        real: Arch::VisionDecoder {
            vision: VisionPrefix {
                patch: 16,
                max_patches: 1024,
                encoder: SIGLIP_B,
            },
            text: SMOLLM,
        },
        smoke: Arch::VisionDecoder {
            vision: VisionPrefix {
                patch: 8,
                max_patches: 64,
                encoder: smoke(SIGLIP_B, 1),
            },
            text: smoke(SMOLLM, 1),
        },
    },
    // Image classifiers.
    vit_classifier(
        "vit",
        "google/vit-base-patch16-224: 12 layers, hidden 768, 12 heads, intermediate 3072, 224x224 image, 16x16 patches, 1000 classes",
        VIT_B16,
        1,
    ),
    vit_classifier(
        "deit",
        "facebook/deit-small-patch16-224: 12 layers, hidden 384, 6 heads, intermediate 1536, 224x224 image, 16x16 patches, 1000 classes",
        DEIT_S,
        2,
    ),
    mobilenet(
        "mobilenetv2",
        "MobileNetV2 1.0/224 (torchvision mobilenet_v2): inverted residual stages (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), ReLU6, 1280-wide head, 1000 classes",
        MOBILENET_V2,
        false,
    ),
    mobilenet(
        "efficientnet",
        "EfficientNet-B0 (torchvision efficientnet_b0): MBConv stages (t, c, n, s, k) = (1,16,1,1,3) (6,24,2,2,3) (6,40,2,2,5) (6,80,3,2,3) (6,112,3,1,5) (6,192,4,2,5) (6,320,1,1,3), squeeze-excitation 0.25, SiLU, 1280-wide head, 224x224, 1000 classes",
        EFFICIENTNET_B0,
        true,
    ),
    Family {
        name: "convnext",
        follows: "facebook/convnext-tiny-224: depths 3, 3, 9, 3, dims 96, 192, 384, 768, 7x7 depthwise, 4x MLP, layer scale, 224x224, 1000 classes",
        task: Task::Classify,
        real: Arch::ConvNext(ConvNext {
            image: 224,
            depths: [3, 3, 9, 3],
            dims: [96, 192, 384, 768],
            classes: 1000,
        }),
        smoke: Arch::ConvNext(ConvNext {
            image: 32,
            depths: [1, 1, 1, 1],
            dims: [8, 16, 24, 32],
            classes: 10,
        }),
    },
    // Detection and segmentation.
    Family {
        name: "yolov8",
        follows: "Ultralytics YOLOv8n: depth 0.33, width 0.25 (channels 16, 32, 64, 128, 256), C2f + SPPF backbone, PAN neck, anchor-free heads at strides 8/16/32 with DFL (reg_max 16), 640x640, 80 classes",
        task: Task::Detect,
        real: Arch::Yolo(Yolo {
            image: 640,
            widths: [16, 32, 64, 128, 256],
            depths: [1, 2, 2, 1],
            classes: 80,
            reg_max: 16,
        }),
        smoke: Arch::Yolo(Yolo {
            image: 64,
            widths: [8, 8, 16, 16, 32],
            depths: [1, 1, 1, 1],
            classes: 4,
            reg_max: 4,
        }),
    },
    Family {
        name: "unet",
        follows: "U-Net (Ronneberger et al. 2015, as milesial/Pytorch-UNet with transposed-convolution upsampling): channels 64, 128, 256, 512, 1024, 2 classes, at 256x256",
        task: Task::Segment,
        real: Arch::UNet(UNet {
            image: 256,
            channels: &[64, 128, 256, 512, 1024],
            classes: 2,
        }),
        smoke: Arch::UNet(UNet {
            image: 32,
            channels: &[8, 16, 32],
            classes: 2,
        }),
    },
    // Speech.
    Family {
        name: "wav2vec2",
        follows: "facebook/wav2vec2-base-960h: conv extractor 512 channels (kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2), conv positions (kernel 128, 16 groups), 12 layers, hidden 768, 12 heads, intermediate 3072, post-LN, CTC vocab 32",
        task: Task::Transcribe,
        real: Arch::Wav2Vec2(Wav2Vec2 {
            extractor: W2V2_BASE_EXTRACTOR,
            pos_kernel: 128,
            pos_groups: 16,
            encoder: WAV2VEC2_BASE,
            vocab: 32,
        }),
        smoke: Arch::Wav2Vec2(Wav2Vec2 {
            extractor: W2V2_SMOKE_EXTRACTOR,
            pos_kernel: 16,
            pos_groups: 4,
            encoder: smoke(WAV2VEC2_BASE, 1),
            vocab: 32,
        }),
    },
    Family {
        name: "whisper",
        follows: "openai/whisper-tiny: 80 mel bins x 3000 frames, 2 conv layers, encoder and decoder 4 layers each, d_model 384, 6 heads, ffn 1536, vocab 51865, 448 decoder positions",
        task: Task::Infer,
        real: Arch::EncoderDecoder(EncoderDecoder {
            source: Source::LogMel {
                mels: 80,
                frames: 3000,
            },
            encoder: WHISPER_TINY_ENC,
            decoder: WHISPER_TINY_DEC,
        }),
        smoke: Arch::EncoderDecoder(EncoderDecoder {
            source: Source::LogMel {
                mels: 16,
                frames: 64,
            },
            encoder: smoke(WHISPER_TINY_ENC, 1),
            decoder: smoke(WHISPER_TINY_DEC, 1),
        }),
    },
    // Text encoder-decoders.
    text_to_text(
        "t5",
        "t5-small: 6 encoder + 6 decoder layers, d_model 512, 8 heads, d_ff 2048, vocab 32128, RMS layer norm, ReLU, relative position bias (a learned bias per head and position pair up to 512), no biases",
        T5_SMALL,
    ),
    text_to_text(
        "bart",
        "facebook/bart-base: 6 encoder + 6 decoder layers, d_model 768, 12 heads, ffn 3072, vocab 50265, 1026 learned positions, post-LN, GELU",
        BART_BASE,
    ),
    text_to_text(
        "marian",
        "Helsinki-NLP/opus-mt-en-de (Marian): 6 encoder + 6 decoder layers, d_model 512, 8 heads, ffn 2048, vocab 58101, sinusoidal positions, post-LN, swish",
        MARIAN,
    ),
    // Vision-language pair.
    Family {
        name: "clip",
        follows: "openai/clip-vit-base-patch32: image ViT-B/32 (12 layers, hidden 768, 12 heads, 224x224), text 12 layers, hidden 512, 8 heads, vocab 49408, 77 positions, quick GELU, projection 512",
        task: Task::Infer,
        real: Arch::Clip(Clip {
            vision: vit(224, 32, 0, CLIP_VISION),
            text: CLIP_TEXT,
            projection: 512,
        }),
        smoke: Arch::Clip(Clip {
            vision: vit(32, 8, 0, smoke(CLIP_VISION, 1)),
            text: smoke(CLIP_TEXT, 1),
            projection: 32,
        }),
    },
    // Diffusion.
    Family {
        name: "ddpm-unet",
        follows: "google/ddpm-cifar10-32 (UNet2DModel): 3x32x32, block_out_channels 128, 256, 256, 256, 2 layers per block, attention at 16x16, GroupNorm 32, sinusoidal timestep embedding",
        task: Task::Diffuse,
        real: Arch::DiffusionUNet(DiffusionUNet {
            image: 32,
            channels: 3,
            block_out: &[128, 256, 256, 256],
            layers_per_block: 2,
            attention_levels: &[1],
            groups: 32,
        }),
        smoke: Arch::DiffusionUNet(DiffusionUNet {
            image: 16,
            channels: 3,
            block_out: &[16, 32],
            layers_per_block: 1,
            attention_levels: &[1],
            groups: 4,
        }),
    },
    Family {
        name: "sd-vae-decoder",
        follows: "stabilityai/sd-vae-ft-mse decoder: 4x64x64 latent to 3x512x512, block_out_channels 128, 256, 512, 512, 3 ResNet blocks per level, mid-block attention, GroupNorm 32",
        task: Task::Infer,
        real: Arch::VaeDecoder(VaeDecoder {
            latent: 64,
            latent_channels: 4,
            block_out: &[128, 256, 512, 512],
            layers_per_block: 2,
            groups: 32,
        }),
        smoke: Arch::VaeDecoder(VaeDecoder {
            latent: 8,
            latent_channels: 4,
            block_out: &[16, 32],
            layers_per_block: 1,
            groups: 4,
        }),
    },
    // Audio generation.
    Family {
        name: "hifigan",
        follows: "HiFi-GAN V1 (jik876/hifi-gan, LJSpeech): 80 mel bins, upsample rates 8, 8, 2, 2 (kernels 16, 16, 4, 4), initial channels 512, ResBlock1 kernels 3, 7, 11 with dilations 1, 3, 5; 256 samples per frame",
        task: Task::GenerateAudio,
        real: Arch::HifiGan(HifiGan {
            mels: 80,
            initial_channels: 512,
            upsample_rates: &[8, 8, 2, 2],
            upsample_kernels: &[16, 16, 4, 4],
            resblock_kernels: &[3, 7, 11],
            resblock_dilations: &[1, 3, 5],
        }),
        smoke: Arch::HifiGan(HifiGan {
            mels: 16,
            initial_channels: 32,
            upsample_rates: &[4, 4],
            upsample_kernels: &[8, 8],
            resblock_kernels: &[3],
            resblock_dilations: &[1, 3],
        }),
    },
    // Time series and a neural operator.
    Family {
        name: "patchtst",
        follows: "PatchTST/42 on ETTh1 (Nie et al. 2023): look-back 336, horizon 96, 7 channels, patch 16, stride 8, 3 layers, d_model 128, 16 heads, ffn 256 (LayerNorm in place of BatchNorm, no RevIN)",
        task: Task::Forecast,
        real: Arch::PatchTst(PatchTst {
            context: 336,
            horizon: 96,
            channels: 7,
            patch: 16,
            stride: 8,
            encoder: PATCHTST_ETTH1,
        }),
        smoke: Arch::PatchTst(PatchTst {
            context: 64,
            horizon: 16,
            channels: 4,
            patch: 8,
            stride: 4,
            encoder: Transformer {
                layers: 1,
                hidden: 32,
                heads: 4,
                kv_heads: 4,
                ffn: 64,
                ..PATCHTST_ETTH1
            },
        }),
    },
    Family {
        name: "dlinear",
        follows: "DLinear on ETTh1 (Zeng et al. 2023): look-back 336, horizon 96, 7 channels, moving-average kernel 25, shared linear layers",
        task: Task::Forecast,
        real: Arch::DLinear(DLinear {
            context: 336,
            horizon: 96,
            channels: 7,
            kernel: 25,
        }),
        smoke: Arch::DLinear(DLinear {
            context: 64,
            horizon: 16,
            channels: 4,
            kernel: 5,
        }),
    },
    Family {
        name: "fno",
        follows: "FNO-1D on Burgers (Li et al. 2021): 1024 grid points, inputs (a(x), x), width 64, 16 modes, 4 Fourier layers, projection 128",
        task: Task::Forecast,
        real: Arch::Fno(Fno {
            grid: 1024,
            in_channels: 2,
            out_channels: 1,
            width: 64,
            modes: 16,
            layers: 4,
            projection: 128,
        }),
        smoke: Arch::Fno(Fno {
            grid: 64,
            in_channels: 2,
            out_channels: 1,
            width: 16,
            modes: 8,
            layers: 2,
            projection: 32,
        }),
    },
];
