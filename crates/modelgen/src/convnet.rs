//! Convolutional families: MobileNetV2, EfficientNet, ConvNeXt classifiers, a YOLOv8-style detector
//! and a U-Net segmenter. BatchNorm is folded into each convolution's bias, as inference exports have it.

use serde::Serialize;
use tract_onnx::pb::tensor_proto::DataType;

use crate::nn::{Act, ConvSpec, activate, channel_norm, conv, dense, slice, upsample2d};
use crate::proto::{Dim, Graph, attr_int, attr_ints};

fn relu6(g: &mut Graph, x: &str) -> String {
    let lo = g.const_f32("const.zero", &[], &[0.0]);
    let hi = g.const_f32("const.six", &[], &[6.0]);
    g.op("Clip", &[x, &lo, &hi], vec![])
}

/// Global average pool and flatten: [b, c, h, w] -> [b, c].
fn pool_flat(g: &mut Graph, x: &str) -> String {
    let p = g.op("GlobalAveragePool", &[x], vec![]);
    g.op("Flatten", &[&p], vec![attr_int("axis", 1)])
}

fn classifier_output(
    mut g: Graph,
    logits: &str,
    classes: usize,
    name: &str,
    what: &str,
) -> Vec<u8> {
    g.output(
        logits,
        "logits",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(classes as i64)],
    );
    g.finish(name, &format!("trtmc generated {name}: seeded {what}"))
}

/// Scales every channel count by a width multiplier, rounded to a multiple of 8 (as MobileNet does).
fn width(c: usize, mult_percent: usize) -> usize {
    ((c * mult_percent / 100 + 4) / 8 * 8).max(8)
}

/// MobileNetV2 / EfficientNet stage: (expansion, output channels, repeats, first stride, kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stage {
    pub expand: usize,
    pub channels: usize,
    pub repeats: usize,
    pub stride: usize,
    pub kernel: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MobileNet {
    pub image: usize,
    pub stem: usize,
    pub stages: &'static [Stage],
    pub head: usize,
    pub classes: usize,
    /// Width multiplier in percent.
    pub width_percent: usize,
    /// EfficientNet: squeeze-and-excitation (input/4) and SiLU; MobileNetV2: ReLU6, no SE.
    pub efficient: bool,
}

/// MobileNetV2 inverted residuals, or EfficientNet MBConv blocks with squeeze-and-excitation.
pub(crate) fn mobilenet(seed: u64, m: &MobileNet, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let act = |g: &mut Graph, x: &str, efficient: bool| {
        if efficient {
            activate(g, x, Act::Silu)
        } else {
            relu6(g, x)
        }
    };
    let image = g.image_input("image", m.image);
    let mut c = width(m.stem, m.width_percent);
    let x = conv(&mut g, &image, "stem", ConvSpec::d2(3, c, 3, 2));
    let mut x = act(&mut g, &x, m.efficient);
    for (s, stage) in m.stages.iter().enumerate() {
        let out = width(stage.channels, m.width_percent);
        for r in 0..stage.repeats {
            let p = format!("blocks.{s}.{r}");
            let stride = if r == 0 { stage.stride } else { 1 };
            let hidden = c * stage.expand;
            let mut h = x.clone();
            if stage.expand != 1 {
                h = conv(
                    &mut g,
                    &h,
                    &format!("{p}.expand"),
                    ConvSpec::d2(c, hidden, 1, 1),
                );
                h = act(&mut g, &h, m.efficient);
            }
            h = conv(
                &mut g,
                &h,
                &format!("{p}.depthwise"),
                ConvSpec::d2(hidden, hidden, stage.kernel, stride).depthwise(),
            );
            h = act(&mut g, &h, m.efficient);
            if m.efficient {
                let squeezed = (c / 4).max(1);
                let s = g.op("GlobalAveragePool", &[&h], vec![]);
                let s = conv(
                    &mut g,
                    &s,
                    &format!("{p}.se.reduce"),
                    ConvSpec::d2(hidden, squeezed, 1, 1),
                );
                let s = activate(&mut g, &s, Act::Silu);
                let s = conv(
                    &mut g,
                    &s,
                    &format!("{p}.se.expand"),
                    ConvSpec::d2(squeezed, hidden, 1, 1),
                );
                let s = g.op("Sigmoid", &[&s], vec![]);
                h = g.op("Mul", &[&h, &s], vec![]);
            }
            h = conv(
                &mut g,
                &h,
                &format!("{p}.project"),
                ConvSpec::d2(hidden, out, 1, 1),
            );
            x = if stride == 1 && c == out {
                g.op("Add", &[&x, &h], vec![])
            } else {
                h
            };
            c = out;
        }
    }
    let head = if m.width_percent > 100 {
        width(m.head, m.width_percent)
    } else {
        m.head
    };
    let x = conv(&mut g, &x, "head", ConvSpec::d2(c, head, 1, 1));
    let x = act(&mut g, &x, m.efficient);
    let f = pool_flat(&mut g, &x);
    let logits = dense(&mut g, &f, "classifier", head, m.classes, 1.0, true);
    let what = if m.efficient {
        "EfficientNet classifier"
    } else {
        "MobileNetV2 classifier"
    };
    classifier_output(g, &logits, m.classes, name, what)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConvNext {
    pub image: usize,
    pub depths: [usize; 4],
    pub dims: [usize; 4],
    pub classes: usize,
}

/// ConvNeXt: patchify stem, per stage (downsample, blocks of depthwise 7x7, channel LayerNorm,
/// 4x MLP with GELU, layer scale, residual), pooled LayerNorm head.
pub(crate) fn convnext(seed: u64, m: &ConvNext, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", m.image);
    let x = conv(
        &mut g,
        &image,
        "stem",
        ConvSpec::d2(3, m.dims[0], 4, 4).pad(0),
    );
    let mut x = channel_norm(&mut g, &x, "stem.norm", m.dims[0], 4);
    for s in 0..4 {
        let d = m.dims[s];
        if s > 0 {
            let n = channel_norm(&mut g, &x, &format!("down.{s}.norm"), m.dims[s - 1], 4);
            x = conv(
                &mut g,
                &n,
                &format!("down.{s}.conv"),
                ConvSpec::d2(m.dims[s - 1], d, 2, 2).pad(0),
            );
        }
        for b in 0..m.depths[s] {
            let p = format!("stages.{s}.{b}");
            let h = conv(
                &mut g,
                &x,
                &format!("{p}.dwconv"),
                ConvSpec::d2(d, d, 7, 1).depthwise(),
            );
            let h = g.op("Transpose", &[&h], vec![attr_ints("perm", &[0, 2, 3, 1])]);
            let h = crate::layers::layer_norm(&mut g, &h, &format!("{p}.norm"), d);
            let h = dense(&mut g, &h, &format!("{p}.pw1"), d, 4 * d, 2.0, true);
            let h = activate(&mut g, &h, Act::Gelu);
            let h = dense(&mut g, &h, &format!("{p}.pw2"), 4 * d, d, 1.0, true);
            let gamma = g.weight_range(&format!("{p}.gamma"), &[d], 0.05, 0.15);
            let h = g.op("Mul", &[&h, &gamma], vec![]);
            let h = g.op("Transpose", &[&h], vec![attr_ints("perm", &[0, 3, 1, 2])]);
            x = g.op("Add", &[&x, &h], vec![]);
        }
    }
    let f = pool_flat(&mut g, &x);
    let f = crate::layers::layer_norm(&mut g, &f, "head.norm", m.dims[3]);
    let logits = dense(&mut g, &f, "head", m.dims[3], m.classes, 1.0, true);
    classifier_output(g, &logits, m.classes, name, "ConvNeXt classifier")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Yolo {
    pub image: usize,
    /// Channels of P1..P5 (YOLOv8n: 16, 32, 64, 128, 256).
    pub widths: [usize; 5],
    /// C2f repeats in the backbone stages P2..P5 (YOLOv8n: 1, 2, 2, 1).
    pub depths: [usize; 4],
    pub classes: usize,
    /// Distribution-focal-loss bins per box side (16).
    pub reg_max: usize,
}

/// Conv, SiLU.
fn cbs(g: &mut Graph, x: &str, p: &str, cin: usize, cout: usize, k: usize, s: usize) -> String {
    let y = conv(g, x, p, ConvSpec::d2(cin, cout, k, s));
    activate(g, &y, Act::Silu)
}

/// YOLOv8's C2f: split in two, `n` bottlenecks on the second half, concatenate everything, fuse.
fn c2f(
    g: &mut Graph,
    x: &str,
    p: &str,
    cin: usize,
    cout: usize,
    n: usize,
    shortcut: bool,
) -> String {
    let c = cout / 2;
    let y = cbs(g, x, &format!("{p}.cv1"), cin, 2 * c, 1, 1);
    let mut parts = vec![
        slice(g, &y, 1, 0, c as i64),
        slice(g, &y, 1, c as i64, 2 * c as i64),
    ];
    for i in 0..n {
        let last = parts.last().cloned().unwrap_or_default();
        let h = cbs(g, &last, &format!("{p}.m.{i}.cv1"), c, c, 3, 1);
        let h = cbs(g, &h, &format!("{p}.m.{i}.cv2"), c, c, 3, 1);
        parts.push(if shortcut {
            g.op("Add", &[&last, &h], vec![])
        } else {
            h
        });
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let cat = g.op("Concat", &refs, vec![attr_int("axis", 1)]);
    cbs(g, &cat, &format!("{p}.cv2"), (2 + n) * c, cout, 1, 1)
}

fn concat(g: &mut Graph, a: &str, b: &str) -> String {
    g.op("Concat", &[a, b], vec![attr_int("axis", 1)])
}

/// YOLOv8 (n/s/m by width and depth): CSP backbone with C2f and SPPF, PAN neck, anchor-free decoupled
/// heads on strides 8, 16, 32 with DFL box decoding. `detections` [b, anchors, 4 + classes]: box
/// centre x, y, width, height in pixels and sigmoid class scores.
pub(crate) fn yolo(seed: u64, m: &Yolo, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let [w1, w2, w3, w4, w5] = m.widths;
    let image = g.image_input("image", m.image);
    let x = cbs(&mut g, &image, "b.0", 3, w1, 3, 2);
    let x = cbs(&mut g, &x, "b.1", w1, w2, 3, 2);
    let x = c2f(&mut g, &x, "b.2", w2, w2, m.depths[0], true);
    let x = cbs(&mut g, &x, "b.3", w2, w3, 3, 2);
    let p3 = c2f(&mut g, &x, "b.4", w3, w3, m.depths[1], true);
    let x = cbs(&mut g, &p3, "b.5", w3, w4, 3, 2);
    let p4 = c2f(&mut g, &x, "b.6", w4, w4, m.depths[2], true);
    let x = cbs(&mut g, &p4, "b.7", w4, w5, 3, 2);
    let x = c2f(&mut g, &x, "b.8", w5, w5, m.depths[3], true);
    // SPPF: three chained 5x5 max pools, concatenated.
    let h = cbs(&mut g, &x, "sppf.cv1", w5, w5 / 2, 1, 1);
    let pool = |g: &mut Graph, x: &str| {
        g.op(
            "MaxPool",
            &[x],
            vec![
                attr_ints("kernel_shape", &[5, 5]),
                attr_ints("strides", &[1, 1]),
                attr_ints("pads", &[2, 2, 2, 2]),
            ],
        )
    };
    let y1 = pool(&mut g, &h);
    let y2 = pool(&mut g, &y1);
    let y3 = pool(&mut g, &y2);
    let cat = g.op("Concat", &[&h, &y1, &y2, &y3], vec![attr_int("axis", 1)]);
    let p5 = cbs(&mut g, &cat, "sppf.cv2", 2 * w5, w5, 1, 1);
    let n = m.depths[3];
    // Neck: top-down then bottom-up.
    let up = upsample2d(&mut g, &p5, 2.0);
    let c = concat(&mut g, &up, &p4);
    let t4 = c2f(&mut g, &c, "n.12", w5 + w4, w4, n, false);
    let up = upsample2d(&mut g, &t4, 2.0);
    let c = concat(&mut g, &up, &p3);
    let o3 = c2f(&mut g, &c, "n.15", w4 + w3, w3, n, false);
    let d = cbs(&mut g, &o3, "n.16", w3, w3, 3, 2);
    let c = concat(&mut g, &d, &t4);
    let o4 = c2f(&mut g, &c, "n.18", w3 + w4, w4, n, false);
    let d = cbs(&mut g, &o4, "n.19", w4, w4, 3, 2);
    let c = concat(&mut g, &d, &p5);
    let o5 = c2f(&mut g, &c, "n.21", w4 + w5, w5, n, false);
    // Heads.
    let c2 = (w3 / 4).max(16).max(4 * m.reg_max);
    let c3 = w3.max(m.classes.min(100));
    let mut boxes = Vec::new();
    let mut scores = Vec::new();
    for (i, (feat, ch, stride)) in [(&o3, w3, 8usize), (&o4, w4, 16), (&o5, w5, 32)]
        .into_iter()
        .enumerate()
    {
        let p = format!("detect.{i}");
        let b = cbs(&mut g, feat, &format!("{p}.box.0"), ch, c2, 3, 1);
        let b = cbs(&mut g, &b, &format!("{p}.box.1"), c2, c2, 3, 1);
        let b = conv(
            &mut g,
            &b,
            &format!("{p}.box.2"),
            ConvSpec::d2(c2, 4 * m.reg_max, 1, 1),
        );
        let s = cbs(&mut g, feat, &format!("{p}.cls.0"), ch, c3, 3, 1);
        let s = cbs(&mut g, &s, &format!("{p}.cls.1"), c3, c3, 3, 1);
        let s = conv(
            &mut g,
            &s,
            &format!("{p}.cls.2"),
            ConvSpec::d2(c3, m.classes, 1, 1),
        );
        let side = m.image / stride;
        let anchors = side * side;
        let shape = g.const_i64(
            &format!("const.flat_{}_{anchors}", 4 * m.reg_max),
            &[0, (4 * m.reg_max) as i64, anchors as i64],
        );
        let b = g.op("Reshape", &[&b, &shape], vec![]);
        let shape = g.const_i64(
            &format!("const.flat_{}_{anchors}", m.classes),
            &[0, m.classes as i64, anchors as i64],
        );
        let s = g.op("Reshape", &[&s, &shape], vec![]);
        boxes.push((b, anchors, side, stride));
        scores.push(s);
    }
    // DFL: a softmax over the bins of each side, the expected bin is the distance (in strides).
    let mut decoded = Vec::new();
    for (b, anchors, side, stride) in boxes {
        let shape = g.const_i64(
            &format!("const.dfl_{anchors}"),
            &[0, 4, m.reg_max as i64, anchors as i64],
        );
        let b = g.op("Reshape", &[&b, &shape], vec![]);
        let probs = g.op("Softmax", &[&b], vec![attr_int("axis", 2)]);
        let bins: Vec<f32> = (0..m.reg_max).map(|i| i as f32).collect();
        let bins = g.const_f32(
            &format!("const.dfl_bins_{}", m.reg_max),
            &[1, 1, m.reg_max, 1],
            &bins,
        );
        let weighted = g.op("Mul", &[&probs, &bins], vec![]);
        let axis2 = g.const_i64("const.i64_2", &[2]);
        let dist = g.op(
            "ReduceSum",
            &[&weighted, &axis2],
            vec![attr_int("keepdims", 0)],
        );
        let lt = slice(&mut g, &dist, 1, 0, 2);
        let rb = slice(&mut g, &dist, 1, 2, 4);
        let mut centers = Vec::with_capacity(2 * anchors);
        for axis in 0..2 {
            for a in 0..anchors {
                let (row, col) = (a / side, a % side);
                let cell = if axis == 0 { col } else { row };
                centers.push(cell as f32 + 0.5);
            }
        }
        let anchor = g.const_f32(&format!("const.anchors_{side}"), &[1, 2, anchors], &centers);
        let x1y1 = g.op("Sub", &[&anchor, &lt], vec![]);
        let x2y2 = g.op("Add", &[&anchor, &rb], vec![]);
        let sum = g.op("Add", &[&x1y1, &x2y2], vec![]);
        let half = g.const_f32("const.half", &[], &[0.5]);
        let center = g.op("Mul", &[&sum, &half], vec![]);
        let wh = g.op("Sub", &[&x2y2, &x1y1], vec![]);
        let xywh = g.op("Concat", &[&center, &wh], vec![attr_int("axis", 1)]);
        let st = g.const_f32(&format!("const.stride_{stride}"), &[], &[stride as f32]);
        decoded.push(g.op("Mul", &[&xywh, &st], vec![]));
    }
    let refs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let all_boxes = g.op("Concat", &refs, vec![attr_int("axis", 2)]);
    let refs: Vec<&str> = scores.iter().map(String::as_str).collect();
    let all_scores = g.op("Concat", &refs, vec![attr_int("axis", 2)]);
    let all_scores = g.op("Sigmoid", &[&all_scores], vec![]);
    let out = g.op(
        "Concat",
        &[&all_boxes, &all_scores],
        vec![attr_int("axis", 1)],
    );
    let out = g.op("Transpose", &[&out], vec![attr_ints("perm", &[0, 2, 1])]);
    let anchors: usize = [8, 16, 32].iter().map(|s| (m.image / s).pow(2)).sum();
    g.output(
        &out,
        "detections",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(anchors as i64),
            Dim::Fixed((4 + m.classes) as i64),
        ],
    );
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded YOLOv8-style detector"),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UNet {
    pub image: usize,
    /// Channels per level (the original U-Net: 64, 128, 256, 512, 1024).
    pub channels: &'static [usize],
    pub classes: usize,
}

fn double_conv(g: &mut Graph, x: &str, p: &str, cin: usize, cout: usize) -> String {
    let y = conv(g, x, &format!("{p}.0"), ConvSpec::d2(cin, cout, 3, 1));
    let y = g.op("Relu", &[&y], vec![]);
    let y = conv(g, &y, &format!("{p}.1"), ConvSpec::d2(cout, cout, 3, 1));
    g.op("Relu", &[&y], vec![])
}

/// U-Net: double 3x3 convolutions, max-pool down, transposed-convolution up with skip concatenation,
/// a 1x1 classifier: `image` [b, 3, H, W] -> `mask_logits` [b, classes, H, W].
pub(crate) fn unet(seed: u64, m: &UNet, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", m.image);
    let ch = m.channels;
    let mut x = double_conv(&mut g, &image, "inc", 3, ch[0]);
    let mut skips = vec![x.clone()];
    for i in 1..ch.len() {
        let p = g.op(
            "MaxPool",
            &[&x],
            vec![
                attr_ints("kernel_shape", &[2, 2]),
                attr_ints("strides", &[2, 2]),
            ],
        );
        x = double_conv(&mut g, &p, &format!("down.{i}"), ch[i - 1], ch[i]);
        skips.push(x.clone());
    }
    skips.pop();
    for i in (1..ch.len()).rev() {
        let w = g.weight(
            &format!("up.{i}.deconv.weight"),
            &[ch[i], ch[i - 1], 2, 2],
            crate::init::scaled_bound(2.0, ch[i]),
        );
        let b = g.weight(&format!("up.{i}.deconv.bias"), &[ch[i - 1]], 0.05);
        let up = g.op(
            "ConvTranspose",
            &[&x, &w, &b],
            vec![
                attr_ints("kernel_shape", &[2, 2]),
                attr_ints("strides", &[2, 2]),
            ],
        );
        let skip = skips.pop().unwrap_or_default();
        let cat = concat(&mut g, &skip, &up);
        x = double_conv(
            &mut g,
            &cat,
            &format!("up.{i}.conv"),
            2 * ch[i - 1],
            ch[i - 1],
        );
    }
    let logits = conv(&mut g, &x, "outc", ConvSpec::d2(ch[0], m.classes, 1, 1));
    let s = m.image as i64;
    g.output(
        &logits,
        "mask_logits",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Fixed(m.classes as i64),
            Dim::Fixed(s),
            Dim::Fixed(s),
        ],
    );
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded U-Net segmenter"),
    )
}
