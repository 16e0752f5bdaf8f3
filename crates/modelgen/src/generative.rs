//! Diffusion and audio families: a DDPM-style UNet noise predictor, a Stable-Diffusion-style VAE
//! decoder, a HiFi-GAN vocoder and a wav2vec2-style CTC acoustic model.

use serde::Serialize;
use tract_onnx::pb::tensor_proto::DataType;

use crate::layers::layer_norm;
use crate::nn::{Act, ConvSpec, activate, conv, dense, group_norm, upsample2d};
use crate::proto::{Dim, Graph, attr_float, attr_int, attr_ints};
use crate::transformer::Transformer;

/// GroupNorm, SiLU, 3x3 conv (twice), an optional time-embedding shift, and a residual (1x1 when the
/// width changes): the ResNet block of diffusers' UNet2DModel and of the VAE.
fn res_block(
    g: &mut Graph,
    x: &str,
    p: &str,
    cin: usize,
    cout: usize,
    groups: usize,
    temb: Option<(&str, usize)>,
) -> String {
    let h = group_norm(g, x, &format!("{p}.norm1"), cin, groups);
    let h = activate(g, &h, Act::Silu);
    let mut h = conv(g, &h, &format!("{p}.conv1"), ConvSpec::d2(cin, cout, 3, 1));
    if let Some((t, tdim)) = temb {
        let t = activate(g, t, Act::Silu);
        let t = dense(g, &t, &format!("{p}.time"), tdim, cout, 1.0, true);
        let axes = g.const_i64("const.axes_2_3", &[2, 3]);
        let t = g.op("Unsqueeze", &[&t, &axes], vec![]);
        h = g.op("Add", &[&h, &t], vec![]);
    }
    let h = group_norm(g, &h, &format!("{p}.norm2"), cout, groups);
    let h = activate(g, &h, Act::Silu);
    let h = conv(g, &h, &format!("{p}.conv2"), ConvSpec::d2(cout, cout, 3, 1));
    let skip = if cin == cout {
        x.to_string()
    } else {
        conv(g, x, &format!("{p}.skip"), ConvSpec::d2(cin, cout, 1, 1))
    };
    g.op("Add", &[&skip, &h], vec![])
}

/// Single-head spatial self-attention over the pixels of [b, c, h, w], with a residual.
fn spatial_attention(g: &mut Graph, x: &str, p: &str, c: usize, groups: usize) -> String {
    let h = group_norm(g, x, &format!("{p}.norm"), c, groups);
    let shape = g.op("Shape", &[x], vec![]);
    let flat_shape = g.const_i64(&format!("const.flatten_{c}"), &[0, c as i64, -1]);
    let flat = g.op("Reshape", &[&h, &flat_shape], vec![]);
    let tokens = g.op("Transpose", &[&flat], vec![attr_ints("perm", &[0, 2, 1])]);
    let q = dense(g, &tokens, &format!("{p}.q"), c, c, 1.0, true);
    let k = dense(g, &tokens, &format!("{p}.k"), c, c, 1.0, true);
    let v = dense(g, &tokens, &format!("{p}.v"), c, c, 1.0, true);
    let kt = g.op("Transpose", &[&k], vec![attr_ints("perm", &[0, 2, 1])]);
    let scores = g.op("MatMul", &[&q, &kt], vec![]);
    let scale = g.const_f32(
        &format!("const.attn_scale_{c}"),
        &[],
        &[1.0 / (c as f32).sqrt()],
    );
    let scores = g.op("Mul", &[&scores, &scale], vec![]);
    let probs = g.op("Softmax", &[&scores], vec![attr_int("axis", -1)]);
    let ctx = g.op("MatMul", &[&probs, &v], vec![]);
    let out = dense(g, &ctx, &format!("{p}.out"), c, c, 1.0, true);
    let back = g.op("Transpose", &[&out], vec![attr_ints("perm", &[0, 2, 1])]);
    let back = g.op("Reshape", &[&back, &shape], vec![]);
    g.op("Add", &[x, &back], vec![])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DiffusionUNet {
    pub image: usize,
    pub channels: usize,
    pub block_out: &'static [usize],
    pub layers_per_block: usize,
    /// Levels (indices into `block_out`) with attention after each ResNet block.
    pub attention_levels: &'static [usize],
    pub groups: usize,
}

/// diffusers' UNet2DModel: sinusoidal timestep embedding, down path (ResNet blocks, optional attention,
/// strided-conv downsampling), mid (ResNet, attention, ResNet), up path with skip concatenation and
/// nearest upsampling. `sample` [b, c, H, W] and `timestep` [1] -> `noise_pred` [b, c, H, W].
pub(crate) fn diffusion_unet(seed: u64, m: &DiffusionUNet, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let s = m.image as i64;
    let dims = [
        Dim::Param("batch"),
        Dim::Fixed(m.channels as i64),
        Dim::Fixed(s),
        Dim::Fixed(s),
    ];
    let sample = g.input("sample", DataType::Float, &dims);
    let t = g.input("timestep", DataType::Float, &[Dim::Fixed(1)]);
    let base = m.block_out[0];
    let half = base / 2;
    let freqs: Vec<f32> = (0..half)
        .map(|i| (-(10_000f64.ln()) * i as f64 / half as f64).exp() as f32)
        .collect();
    let freqs = g.const_f32(&format!("const.time_freqs_{half}"), &[half], &freqs);
    let angles = g.op("Mul", &[&t, &freqs], vec![]);
    let sin = g.op("Sin", &[&angles], vec![]);
    let cos = g.op("Cos", &[&angles], vec![]);
    let emb = g.op("Concat", &[&cos, &sin], vec![attr_int("axis", 0)]);
    let axis0 = g.const_i64("const.zero_1d", &[0]);
    let emb = g.op("Unsqueeze", &[&emb, &axis0], vec![]);
    let tdim = 4 * base;
    let emb = dense(&mut g, &emb, "time.linear1", base, tdim, 1.0, true);
    let emb = activate(&mut g, &emb, Act::Silu);
    let temb = dense(&mut g, &emb, "time.linear2", tdim, tdim, 1.0, true);
    let te = Some((temb.as_str(), tdim));

    let mut x = conv(
        &mut g,
        &sample,
        "conv_in",
        ConvSpec::d2(m.channels, base, 3, 1),
    );
    let mut skips = vec![(x.clone(), base)];
    let mut c = base;
    let levels = m.block_out.len();
    for (level, &out) in m.block_out.iter().enumerate() {
        for r in 0..m.layers_per_block {
            let p = format!("down.{level}.{r}");
            x = res_block(&mut g, &x, &p, c, out, m.groups, te);
            c = out;
            if m.attention_levels.contains(&level) {
                x = spatial_attention(&mut g, &x, &format!("{p}.attn"), c, m.groups);
            }
            skips.push((x.clone(), c));
        }
        if level + 1 < levels {
            x = conv(
                &mut g,
                &x,
                &format!("down.{level}.downsample"),
                ConvSpec::d2(c, c, 3, 2),
            );
            skips.push((x.clone(), c));
        }
    }
    x = res_block(&mut g, &x, "mid.0", c, c, m.groups, te);
    x = spatial_attention(&mut g, &x, "mid.attn", c, m.groups);
    x = res_block(&mut g, &x, "mid.1", c, c, m.groups, te);
    for (level, &out) in m.block_out.iter().enumerate().rev() {
        for r in 0..=m.layers_per_block {
            let p = format!("up.{level}.{r}");
            let (skip, sc) = skips.pop().unwrap_or_default();
            let cat = g.op("Concat", &[&x, &skip], vec![attr_int("axis", 1)]);
            x = res_block(&mut g, &cat, &p, c + sc, out, m.groups, te);
            c = out;
            if m.attention_levels.contains(&level) {
                x = spatial_attention(&mut g, &x, &format!("{p}.attn"), c, m.groups);
            }
        }
        if level > 0 {
            x = upsample_conv(&mut g, &x, level, c);
        }
    }
    let h = out_norm(&mut g, &x, c, m.groups);
    let eps = conv(&mut g, &h, "out.conv", ConvSpec::d2(c, m.channels, 3, 1));
    g.output(&eps, "noise_pred", DataType::Float, &dims);
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded UNet2D noise predictor"),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VaeDecoder {
    pub latent: usize,
    pub latent_channels: usize,
    /// Channels per level from the image side (SD: 128, 256, 512, 512).
    pub block_out: &'static [usize],
    pub layers_per_block: usize,
    pub groups: usize,
}

/// The VAE decoder of Stable Diffusion: post-quant 1x1, conv_in, mid (ResNet, attention, ResNet), up
/// blocks of `layers_per_block + 1` ResNet blocks with nearest upsampling, GroupNorm, SiLU, conv_out.
/// `latent_sample` [b, 4, h, w] -> `sample` [b, 3, 8h, 8w] (with four levels).
pub(crate) fn vae_decoder(seed: u64, m: &VaeDecoder, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let l = m.latent as i64;
    let z = g.input(
        "latent_sample",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(m.latent_channels as i64),
            Dim::Fixed(l),
            Dim::Fixed(l),
        ],
    );
    let top = *m.block_out.last().unwrap_or(&64);
    let z = conv(
        &mut g,
        &z,
        "post_quant",
        ConvSpec::d2(m.latent_channels, m.latent_channels, 1, 1),
    );
    let mut x = conv(
        &mut g,
        &z,
        "conv_in",
        ConvSpec::d2(m.latent_channels, top, 3, 1),
    );
    x = res_block(&mut g, &x, "mid.0", top, top, m.groups, None);
    x = spatial_attention(&mut g, &x, "mid.attn", top, m.groups);
    x = res_block(&mut g, &x, "mid.1", top, top, m.groups, None);
    let mut c = top;
    for (level, &out) in m.block_out.iter().enumerate().rev() {
        for r in 0..=m.layers_per_block {
            x = res_block(
                &mut g,
                &x,
                &format!("up.{level}.{r}"),
                c,
                out,
                m.groups,
                None,
            );
            c = out;
        }
        if level > 0 {
            x = upsample_conv(&mut g, &x, level, c);
        }
    }
    let h = out_norm(&mut g, &x, c, m.groups);
    let img = conv(&mut g, &h, "out.conv", ConvSpec::d2(c, 3, 3, 1));
    let side = l << (m.block_out.len() - 1);
    g.output(
        &img,
        "sample",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(3),
            Dim::Fixed(side),
            Dim::Fixed(side),
        ],
    );
    g.finish(name, &format!("trtmc generated {name}: seeded VAE decoder"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HifiGan {
    pub mels: usize,
    pub initial_channels: usize,
    pub upsample_rates: &'static [usize],
    pub upsample_kernels: &'static [usize],
    pub resblock_kernels: &'static [usize],
    pub resblock_dilations: &'static [usize],
}

fn leaky(g: &mut Graph, x: &str) -> String {
    g.op("LeakyRelu", &[x], vec![attr_float("alpha", 0.1)])
}

/// HiFi-GAN generator (V1): conv_pre, per upsampling stage a LeakyReLU and a transposed convolution,
/// then the multi-receptive-field fusion of ResBlock1s (dilated convolutions), conv_post and tanh.
/// `mel` [1, frames, mels] -> `audio` [1, frames · product(upsample_rates)].
pub(crate) fn hifigan(seed: u64, m: &HifiGan, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let mel = g.rows_input("mel", "frames", m.mels);
    let x = g.op("Transpose", &[&mel], vec![attr_ints("perm", &[0, 2, 1])]);
    let mut c = m.initial_channels;
    let mut x = conv(&mut g, &x, "conv_pre", ConvSpec::d1(m.mels, c, 7, 1));
    for (i, (&rate, &k)) in m.upsample_rates.iter().zip(m.upsample_kernels).enumerate() {
        let out = c / 2;
        let h = leaky(&mut g, &x);
        let w = g.weight(
            &format!("ups.{i}.weight"),
            &[c, out, k],
            crate::init::scaled_bound(1.0, c * k / rate),
        );
        let b = g.weight(&format!("ups.{i}.bias"), &[out], 0.05);
        let pad = ((k - rate) / 2) as i64;
        x = g.op(
            "ConvTranspose",
            &[&h, &w, &b],
            vec![
                attr_ints("kernel_shape", &[k as i64]),
                attr_ints("strides", &[rate as i64]),
                attr_ints("pads", &[pad, pad]),
            ],
        );
        c = out;
        let mut sum: Option<String> = None;
        for (j, &rk) in m.resblock_kernels.iter().enumerate() {
            let mut y = x.clone();
            for (d, &dil) in m.resblock_dilations.iter().enumerate() {
                let p = format!("ups.{i}.res.{j}.{d}");
                let h = leaky(&mut g, &y);
                let h = conv(
                    &mut g,
                    &h,
                    &format!("{p}.conv1"),
                    ConvSpec::d1(c, c, rk, 1).dilation(dil),
                );
                let h = leaky(&mut g, &h);
                let h = conv(&mut g, &h, &format!("{p}.conv2"), ConvSpec::d1(c, c, rk, 1));
                y = g.op("Add", &[&y, &h], vec![]);
            }
            sum = Some(match sum {
                None => y,
                Some(s) => g.op("Add", &[&s, &y], vec![]),
            });
        }
        let n = g.const_f32(
            &format!("const.inv_{}", m.resblock_kernels.len()),
            &[],
            &[1.0 / m.resblock_kernels.len() as f32],
        );
        x = g.op("Mul", &[&sum.unwrap_or(x), &n], vec![]);
    }
    let h = leaky(&mut g, &x);
    let h = conv(&mut g, &h, "conv_post", ConvSpec::d1(c, 1, 7, 1));
    g.audio_output(&h, "audio");
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded HiFi-GAN vocoder"),
    )
}

/// A decoder level's 2x nearest upsampling and the 3x3 convolution after it (diffusers'
/// `Upsample2D`).
fn upsample_conv(g: &mut Graph, x: &str, level: usize, c: usize) -> String {
    let u = upsample2d(g, x, 2.0);
    conv(
        g,
        &u,
        &format!("up.{level}.upsample"),
        ConvSpec::d2(c, c, 3, 1),
    )
}

/// The GroupNorm and SiLU before a UNet's or VAE decoder's output convolution.
fn out_norm(g: &mut Graph, x: &str, c: usize, groups: usize) -> String {
    let h = group_norm(g, x, "out.norm", c, groups);
    activate(g, &h, Act::Silu)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Wav2Vec2 {
    /// Feature-extractor convolutions: (channels, kernel, stride).
    pub extractor: &'static [(usize, usize, usize)],
    /// Convolutional position embedding: kernel and groups.
    pub pos_kernel: usize,
    pub pos_groups: usize,
    pub encoder: Transformer,
    /// CTC vocabulary (characters).
    pub vocab: usize,
}

/// wav2vec2 for CTC: raw 16 kHz `audio` [1, samples] -> conv feature extractor (GroupNorm on the first
/// layer, GELU), feature projection, convolutional position embedding, post-norm transformer, CTC head
/// -> `logits` [1, frames, vocab] (one frame per 320 samples with the base extractor).
pub(crate) fn wav2vec2(seed: u64, m: &Wav2Vec2, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let audio = g.input(
        "audio",
        DataType::Float,
        &[Dim::Fixed(1), Dim::Param("samples")],
    );
    let axis = g.const_i64("const.i64_1", &[1]);
    let mut x = g.op("Unsqueeze", &[&audio, &axis], vec![]);
    let mut c = 1;
    for (i, &(out, k, s)) in m.extractor.iter().enumerate() {
        x = conv(
            &mut g,
            &x,
            &format!("extractor.{i}"),
            ConvSpec::d1(c, out, k, s).pad(0),
        );
        if i == 0 {
            // GroupNorm with one group per channel: instance normalisation over time.
            let scale = g.weight_range("extractor.0.norm.weight", &[out], 0.9, 1.1);
            let bias = g.weight("extractor.0.norm.bias", &[out], 0.05);
            x = g.op(
                "InstanceNormalization",
                &[&x, &scale, &bias],
                vec![attr_float("epsilon", 1e-5)],
            );
        }
        x = activate(&mut g, &x, Act::Gelu);
        c = out;
    }
    let e = &m.encoder;
    let x = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    let x = layer_norm(&mut g, &x, "projection.norm", c);
    let x = dense(&mut g, &x, "projection", c, e.hidden, 1.0, true);
    let t = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    let p = conv(
        &mut g,
        &t,
        "pos_conv",
        ConvSpec::d1(e.hidden, e.hidden, m.pos_kernel, 1)
            .groups(m.pos_groups)
            .pad(m.pos_kernel / 2),
    );
    // An even kernel with padding k/2 yields one extra frame: drop it, as wav2vec2 does.
    let p = if m.pos_kernel.is_multiple_of(2) {
        let frames = crate::nn::dim_of(&mut g, &t, 2);
        let zero = g.const_i64("const.zero_1d", &[0]);
        let axis2 = g.const_i64("const.i64_2", &[2]);
        g.op("Slice", &[&p, &zero, &frames, &axis2], vec![])
    } else {
        p
    };
    let p = activate(&mut g, &p, Act::Gelu);
    let p = g.op("Transpose", &[&p], vec![attr_ints("perm", &[0, 2, 1])]);
    let x = g.op("Add", &[&x, &p], vec![]);
    let x = layer_norm(&mut g, &x, "encoder.norm", e.hidden);
    let x = crate::transformer::stack(&mut g, &x, "encoder.layers", e, None);
    let logits = dense(&mut g, &x, "ctc", e.hidden, m.vocab, 6.0, true);
    g.rows_output(&logits, "logits", "frames", m.vocab);
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded wav2vec2 CTC model"),
    )
}
