//! Time-series and scientific families: PatchTST and DLinear forecasters, and a 1-D Fourier neural
//! operator. Each takes `history` [batch, steps, channels] and returns `forecast`
//! [batch, horizon, channels] (the `forecast` operation's contract).

use serde::Serialize;
use tract_onnx::pb::tensor_proto::DataType;

use crate::nn::{Act, ConvSpec, activate, conv, dense};
use crate::proto::{Dim, Graph, attr_ints, attr_string};
use crate::transformer::Transformer;

fn history(g: &mut Graph, steps: usize, channels: usize) -> String {
    g.input(
        "history",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(steps as i64),
            Dim::Fixed(channels as i64),
        ],
    )
}

fn forecast_output(
    mut g: Graph,
    y: &str,
    horizon: usize,
    channels: usize,
    name: &str,
    what: &str,
) -> Vec<u8> {
    g.output(
        y,
        "forecast",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(horizon as i64),
            Dim::Fixed(channels as i64),
        ],
    );
    g.finish(name, &format!("trtmc generated {name}: seeded {what}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PatchTst {
    pub context: usize,
    pub horizon: usize,
    pub channels: usize,
    pub patch: usize,
    pub stride: usize,
    pub encoder: Transformer,
}

/// PatchTST (channel-independent): each channel's window is padded by one stride at the end, cut into
/// overlapping patches (a strided 1-D convolution is the patch projection), given learned positions,
/// encoded, flattened and mapped to the horizon.
pub(crate) fn patchtst(seed: u64, m: &PatchTst, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let e = &m.encoder;
    let x = history(&mut g, m.context, m.channels);
    let x = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    let series = g.const_i64(
        &format!("const.series_{}", m.context),
        &[-1, 1, m.context as i64],
    );
    let x = g.op("Reshape", &[&x, &series], vec![]);
    let pads = g.const_i64(
        &format!("const.pad_end_{}", m.stride),
        &[0, 0, 0, 0, 0, m.stride as i64],
    );
    let x = g.op("Pad", &[&x, &pads], vec![attr_string("mode", "edge")]);
    let x = conv(
        &mut g,
        &x,
        "patch",
        ConvSpec::d1(1, e.hidden, m.patch, m.stride).pad(0),
    );
    let x = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    let patches = (m.context + m.stride - m.patch) / m.stride + 1;
    let pos = g.weight("position", &[patches, e.hidden], 0.5);
    let x = g.op("Add", &[&x, &pos], vec![]);
    let x = crate::transformer::stack(&mut g, &x, "encoder", e, None);
    let flat = g.const_i64(
        &format!("const.flat_{}", patches * e.hidden),
        &[-1, (patches * e.hidden) as i64],
    );
    let x = g.op("Reshape", &[&x, &flat], vec![]);
    let y = dense(&mut g, &x, "head", patches * e.hidden, m.horizon, 1.0, true);
    let back = g.const_i64(
        &format!("const.per_channel_{}_{}", m.channels, m.horizon),
        &[-1, m.channels as i64, m.horizon as i64],
    );
    let y = g.op("Reshape", &[&y, &back], vec![]);
    let y = g.op("Transpose", &[&y], vec![attr_ints("perm", &[0, 2, 1])]);
    forecast_output(g, &y, m.horizon, m.channels, name, "PatchTST forecaster")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DLinear {
    pub context: usize,
    pub horizon: usize,
    pub channels: usize,
    /// Moving-average window of the trend (odd).
    pub kernel: usize,
}

/// DLinear: series decomposition (edge-padded moving average = trend, the rest = seasonal), one linear
/// map over time for each, shared across channels, summed.
pub(crate) fn dlinear(seed: u64, m: &DLinear, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let x = history(&mut g, m.context, m.channels);
    let x = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
    let half = (m.kernel / 2) as i64;
    let pads = g.const_i64(&format!("const.pad_both_{half}"), &[0, 0, half, 0, 0, half]);
    let padded = g.op("Pad", &[&x, &pads], vec![attr_string("mode", "edge")]);
    let trend = g.op(
        "AveragePool",
        &[&padded],
        vec![
            attr_ints("kernel_shape", &[m.kernel as i64]),
            attr_ints("strides", &[1]),
        ],
    );
    let seasonal = g.op("Sub", &[&x, &trend], vec![]);
    let s = dense(
        &mut g, &seasonal, "seasonal", m.context, m.horizon, 1.0, true,
    );
    let t = dense(&mut g, &trend, "trend", m.context, m.horizon, 1.0, true);
    let y = g.op("Add", &[&s, &t], vec![]);
    let y = g.op("Transpose", &[&y], vec![attr_ints("perm", &[0, 2, 1])]);
    forecast_output(g, &y, m.horizon, m.channels, name, "DLinear forecaster")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fno {
    /// Grid points of the sampled field.
    pub grid: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub width: usize,
    pub modes: usize,
    pub layers: usize,
    pub projection: usize,
}

/// FNO-1D (Li et al.): lift to `width` channels, Fourier layers (a truncated real DFT written as
/// matrix products, complex weights per kept mode, the inverse DFT, plus a pointwise linear path,
/// GELU), then a two-layer projection. `history` [b, grid, in] -> `forecast` [b, grid, out].
pub(crate) fn fno(seed: u64, m: &Fno, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let (n, k, w) = (m.grid, m.modes, m.width);
    let x = history(&mut g, n, m.in_channels);
    let mut x = dense(&mut g, &x, "lift", m.in_channels, w, 1.0, true);
    // Forward DFT bases [n, k] (real and negated imaginary parts) and the inverse [k, n] (real-valued
    // irfft of the kept modes: weights 1/n for the zero mode, 2/n for the others).
    let mut fwd_re = vec![0.0f32; n * k];
    let mut fwd_im = vec![0.0f32; n * k];
    let mut inv_re = vec![0.0f32; k * n];
    let mut inv_im = vec![0.0f32; k * n];
    for j in 0..n {
        for f in 0..k {
            let angle = 2.0 * std::f64::consts::PI * (f * j) as f64 / n as f64;
            fwd_re[j * k + f] = angle.cos() as f32;
            fwd_im[j * k + f] = -angle.sin() as f32;
            let scale = if f == 0 { 1.0 } else { 2.0 } / n as f64;
            inv_re[f * n + j] = (scale * angle.cos()) as f32;
            inv_im[f * n + j] = (-scale * angle.sin()) as f32;
        }
    }
    let fwd_re = g.const_f32(&format!("const.dft_re_{n}x{k}"), &[n, k], &fwd_re);
    let fwd_im = g.const_f32(&format!("const.dft_im_{n}x{k}"), &[n, k], &fwd_im);
    let inv_re = g.const_f32(&format!("const.idft_re_{k}x{n}"), &[k, n], &inv_re);
    let inv_im = g.const_f32(&format!("const.idft_im_{k}x{n}"), &[k, n], &inv_im);
    let bound = 1.0 / (w * w) as f32;
    for l in 0..m.layers {
        let p = format!("fourier.{l}");
        // [b, n, w] -> [b, w, n] -> spectra [b, w, k] -> [k, b, w].
        let t = g.op("Transpose", &[&x], vec![attr_ints("perm", &[0, 2, 1])]);
        let re = g.op("MatMul", &[&t, &fwd_re], vec![]);
        let im = g.op("MatMul", &[&t, &fwd_im], vec![]);
        let re = g.op("Transpose", &[&re], vec![attr_ints("perm", &[2, 0, 1])]);
        let im = g.op("Transpose", &[&im], vec![attr_ints("perm", &[2, 0, 1])]);
        let wr = g.weight_range(&format!("{p}.weight_re"), &[k, w, w], 0.0, bound);
        let wi = g.weight_range(&format!("{p}.weight_im"), &[k, w, w], 0.0, bound);
        let rr = g.op("MatMul", &[&re, &wr], vec![]);
        let ii = g.op("MatMul", &[&im, &wi], vec![]);
        let ri = g.op("MatMul", &[&re, &wi], vec![]);
        let ir = g.op("MatMul", &[&im, &wr], vec![]);
        let out_re = g.op("Sub", &[&rr, &ii], vec![]);
        let out_im = g.op("Add", &[&ri, &ir], vec![]);
        // [k, b, w] -> [b, w, k] -> inverse -> [b, w, n] -> [b, n, w].
        let out_re = g.op("Transpose", &[&out_re], vec![attr_ints("perm", &[1, 2, 0])]);
        let out_im = g.op("Transpose", &[&out_im], vec![attr_ints("perm", &[1, 2, 0])]);
        let a = g.op("MatMul", &[&out_re, &inv_re], vec![]);
        let b = g.op("MatMul", &[&out_im, &inv_im], vec![]);
        let spectral = g.op("Add", &[&a, &b], vec![]);
        let spectral = g.op(
            "Transpose",
            &[&spectral],
            vec![attr_ints("perm", &[0, 2, 1])],
        );
        let pointwise = dense(&mut g, &x, &format!("{p}.pointwise"), w, w, 1.0, true);
        let y = g.op("Add", &[&spectral, &pointwise], vec![]);
        x = if l + 1 < m.layers {
            activate(&mut g, &y, Act::Gelu)
        } else {
            y
        };
    }
    let h = dense(&mut g, &x, "project.0", w, m.projection, 2.0, true);
    let h = activate(&mut g, &h, Act::Gelu);
    let y = dense(
        &mut g,
        &h,
        "project.1",
        m.projection,
        m.out_channels,
        1.0,
        true,
    );
    forecast_output(g, &y, n, m.out_channels, name, "Fourier neural operator")
}
