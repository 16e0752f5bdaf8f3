//! Small seeded models for the task breadth of the benchmark: one per operation, each a few kilobytes
//! to a few hundred kilobytes so that a debug-build test runs them in milliseconds.
//!
//! | name | inputs | outputs |
//! |---|---|---|
//! | `tiny-segnet` | `image` [batch, 3, 32, 32] | `mask_logits` [batch, 4, 32, 32] |
//! | `tiny-detector` | `image` [batch, 3, 32, 32] | `detections` [batch, 8, 4 + 3] (box, class scores) |
//! | `tiny-reranker` | `input_ids`, `attention_mask` i64 [batch, seq] | `scores` [batch, 1] |
//! | `tiny-asr` | `audio` [1, frames, 160] (16 kHz, 10 ms frames) | `logits` [1, frames, 259] (CTC, blank = 0) |
//! | `tiny-vocoder` | `latents` [1, frames, 16] | `audio` [1, frames*256] in (-1, 1) |
//! | `tiny-voice` | `audio` [1, frames, 160] | `audio_out` [1, frames*160] in (-1, 1) |
//! | `tiny-denoiser` | `sample` [batch, 4, 16, 16], `timestep` [1] | `noise_pred` [batch, 4, 16, 16] |
//! | `tiny-forecaster` | `history` [batch, 64, 4] | `forecast` [batch, 16, 4] |

use tract_onnx::pb::tensor_proto::DataType;

use crate::init::scaled_bound;
use crate::layers::{gelu, masked_mean};
use crate::nn::dense;
use crate::proto::{Dim, Graph, attr_int, attr_ints};
use crate::vocab::VOCAB_SIZE;

pub(crate) const SEG_CLASSES: usize = 4;
pub(crate) const DET_BOXES: usize = 8;
pub(crate) const DET_CLASSES: usize = 3;
/// Audio samples per acoustic frame (10 ms at 16 kHz).
pub(crate) const ASR_FRAME: usize = 160;
/// Waveform samples per vocoder latent frame.
pub(crate) const VOCODER_HOP: usize = 256;
/// Width of one latent frame of the tiny vocoder.
pub(crate) const VOCODER_LATENT: usize = 16;
/// Past steps the tiny forecaster reads.
pub(crate) const FORECAST_WINDOW: usize = 64;
/// Future steps it predicts.
pub(crate) const FORECAST_HORIZON: usize = 16;
/// Channels of its series.
pub(crate) const FORECAST_CHANNELS: usize = 4;

/// Conv with bias, "same" padding.
fn conv(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    cin: usize,
    cout: usize,
    k: usize,
    stride: i64,
) -> String {
    let w = g.weight(
        &format!("{prefix}.weight"),
        &[cout, cin, k, k],
        scaled_bound(2.0, cin * k * k),
    );
    let b = g.weight(&format!("{prefix}.bias"), &[cout], 0.05);
    let pad = (k / 2) as i64;
    g.op(
        "Conv",
        &[x, &w, &b],
        vec![
            attr_ints("kernel_shape", &[k as i64, k as i64]),
            attr_ints("strides", &[stride, stride]),
            attr_ints("pads", &[pad, pad, pad, pad]),
        ],
    )
}

pub(crate) fn segnet(seed: u64) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", 32);
    let x = conv(&mut g, &image, "enc1", 3, 8, 3, 1);
    let x = g.op("Relu", &[&x], vec![]);
    let x = conv(&mut g, &x, "enc2", 8, 8, 3, 1);
    let x = g.op("Relu", &[&x], vec![]);
    let logits = conv(&mut g, &x, "head", 8, SEG_CLASSES, 1, 1);
    g.output(
        &logits,
        "mask_logits",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(SEG_CLASSES as i64),
            Dim::Fixed(32),
            Dim::Fixed(32),
        ],
    );
    g.finish(
        "tiny_segnet",
        "trtmc tiny-segnet: seeded fully-convolutional segmenter, 3x32x32 -> 4 class masks",
    )
}

pub(crate) fn detector(seed: u64) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", 32);
    let x = conv(&mut g, &image, "backbone1", 3, 8, 3, 2);
    let x = g.op("Relu", &[&x], vec![]);
    let x = conv(&mut g, &x, "backbone2", 8, 16, 3, 2);
    let x = g.op("Relu", &[&x], vec![]);
    let x = g.op("GlobalAveragePool", &[&x], vec![]);
    let x = g.op("Flatten", &[&x], vec![attr_int("axis", 1)]);
    let per_box = 4 + DET_CLASSES;
    let raw = dense(&mut g, &x, "head", 16, DET_BOXES * per_box, 1.0, true);
    let shape = g.const_i64("const.det_shape", &[0, DET_BOXES as i64, per_box as i64]);
    let boxes = g.op("Reshape", &[&raw, &shape], vec![]);
    // Box coordinates and class scores in (0, 1).
    let boxes = g.op("Sigmoid", &[&boxes], vec![]);
    g.output(
        &boxes,
        "detections",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(DET_BOXES as i64),
            Dim::Fixed(per_box as i64),
        ],
    );
    g.finish(
        "tiny_detector",
        "trtmc tiny-detector: seeded single-shot detector, 3x32x32 -> 8 boxes x (4 + 3 scores)",
    )
}

pub(crate) fn reranker(seed: u64) -> Vec<u8> {
    const HIDDEN: usize = 32;
    let mut g = Graph::new(seed);
    let dims = [Dim::Param("batch"), Dim::Param("seq")];
    let ids = g.input("input_ids", DataType::Int64, &dims);
    let mask = g.input("attention_mask", DataType::Int64, &dims);
    let table = g.weight("embeddings.token", &[VOCAB_SIZE, HIDDEN], 1.0);
    let tok = g.op("Gather", &[&table, &ids], vec![attr_int("axis", 0)]);
    let h = dense(&mut g, &tok, "mix", HIDDEN, HIDDEN, 2.0, true);
    let h = gelu(&mut g, &h);
    // Mask-weighted mean over the sequence, then a scoring MLP.
    let mask_f = g.op(
        "Cast",
        &[&mask],
        vec![attr_int("to", DataType::Float as i64)],
    );
    let pooled = masked_mean(&mut g, &h, &mask_f).mean;
    let s = dense(&mut g, &pooled, "score.hidden", HIDDEN, HIDDEN, 2.0, true);
    let s = gelu(&mut g, &s);
    let score = dense(&mut g, &s, "score.out", HIDDEN, 1, 1.0, true);
    g.output(
        &score,
        "scores",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(1)],
    );
    g.finish(
        "tiny_reranker",
        "trtmc tiny-reranker: seeded byte-level cross-encoder, (query, document) -> relevance score",
    )
}

/// Audio framed by the caller: [1, frames, 160] (10 ms frames at 16 kHz), so that the frame count stays
/// symbolic without a reshape of an unknown length.
fn audio_input(g: &mut Graph) -> String {
    g.rows_input("audio", "frames", ASR_FRAME)
}

pub(crate) fn asr(seed: u64) -> Vec<u8> {
    const HIDDEN: usize = 64;
    let mut g = Graph::new(seed);
    let x = audio_input(&mut g);
    let x = dense(&mut g, &x, "frontend", ASR_FRAME, HIDDEN, 2.0, true);
    let x = gelu(&mut g, &x);
    let x = dense(&mut g, &x, "hidden", HIDDEN, HIDDEN, 2.0, true);
    let x = gelu(&mut g, &x);
    // Wide output init so that greedy CTC decoding emits a mix of blanks and tokens.
    let logits = dense(&mut g, &x, "ctc", HIDDEN, VOCAB_SIZE, 6.0, true);
    g.rows_output(&logits, "logits", "frames", VOCAB_SIZE);
    g.finish(
        "tiny_asr",
        "trtmc tiny-asr: seeded frame-wise CTC acoustic model, 16 kHz audio -> byte-token logits per 10 ms",
    )
}

pub(crate) fn vocoder(seed: u64) -> Vec<u8> {
    const HIDDEN: usize = 64;
    let mut g = Graph::new(seed);
    let latents = g.rows_input("latents", "frames", VOCODER_LATENT);
    let x = dense(&mut g, &latents, "up1", VOCODER_LATENT, HIDDEN, 2.0, true);
    let x = gelu(&mut g, &x);
    let x = dense(&mut g, &x, "up2", HIDDEN, VOCODER_HOP, 1.0, true);
    g.audio_output(&x, "audio");
    g.finish(
        "tiny_vocoder",
        "trtmc tiny-vocoder: seeded frame-wise vocoder, 16-d latents -> 256 waveform samples per frame",
    )
}

pub(crate) fn voice(seed: u64) -> Vec<u8> {
    const HIDDEN: usize = 64;
    let mut g = Graph::new(seed);
    let x = audio_input(&mut g);
    let x = dense(&mut g, &x, "encode", ASR_FRAME, HIDDEN, 2.0, true);
    let x = gelu(&mut g, &x);
    let x = dense(&mut g, &x, "decode", HIDDEN, ASR_FRAME, 1.0, true);
    g.audio_output(&x, "audio_out");
    g.finish(
        "tiny_voice",
        "trtmc tiny-voice: seeded frame-wise speech-to-speech converter, 16 kHz in and out",
    )
}

pub(crate) fn denoiser(seed: u64) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let dims = [
        Dim::Param("batch"),
        Dim::Fixed(4),
        Dim::Fixed(16),
        Dim::Fixed(16),
    ];
    let sample = g.input("sample", DataType::Float, &dims);
    let t = g.input("timestep", DataType::Float, &[Dim::Fixed(1)]);
    let x = conv(&mut g, &sample, "in", 4, 16, 3, 1);
    // Timestep conditioning: a learned per-channel shift scaled by t.
    let t_embed = g.weight("time.embed", &[1, 16, 1, 1], 0.5);
    let shift = g.op("Mul", &[&t_embed, &t], vec![]);
    let x = g.op("Add", &[&x, &shift], vec![]);
    let x = g.op("Relu", &[&x], vec![]);
    let x = conv(&mut g, &x, "mid", 16, 16, 3, 1);
    let x = g.op("Relu", &[&x], vec![]);
    let eps = conv(&mut g, &x, "out", 16, 4, 3, 1);
    g.output(&eps, "noise_pred", DataType::Float, &dims);
    g.finish(
        "tiny_denoiser",
        "trtmc tiny-denoiser: seeded timestep-conditioned conv noise predictor on 4x16x16 latents",
    )
}

pub(crate) fn forecaster(seed: u64) -> Vec<u8> {
    const HIDDEN: usize = 32;
    let mut g = Graph::new(seed);
    let history = g.input(
        "history",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(FORECAST_WINDOW as i64),
            Dim::Fixed(FORECAST_CHANNELS as i64),
        ],
    );
    // Channel-independent MLP over time (a linear-operator style forecaster).
    let x = g.op(
        "Transpose",
        &[&history],
        vec![attr_ints("perm", &[0, 2, 1])],
    );
    let x = dense(
        &mut g,
        &x,
        "time.hidden",
        FORECAST_WINDOW,
        HIDDEN,
        2.0,
        true,
    );
    let x = gelu(&mut g, &x);
    let x = dense(&mut g, &x, "time.out", HIDDEN, FORECAST_HORIZON, 1.0, true);
    let y = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    g.output(
        &y,
        "forecast",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(FORECAST_HORIZON as i64),
            Dim::Fixed(FORECAST_CHANNELS as i64),
        ],
    );
    g.finish(
        "tiny_forecaster",
        "trtmc tiny-forecaster: seeded channel-independent MLP, 64-step window -> 16-step forecast",
    )
}
