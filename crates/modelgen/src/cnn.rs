//! `tiny-cnn`: a small ResNet-style image classifier for 64x64 RGB images.
//!
//! stem conv3x3(3->16)+BN+ReLU, MaxPool 2x2 -> [16,32,32]
//! basic block (16->16, identity shortcut)
//! basic block (16->32, stride 2, 1x1 strided projection shortcut) -> [32,16,16]
//! GlobalAveragePool, Flatten, Gemm(32->10) -> logits
//!
//! `resnet18`: the ResNet-18 architecture (He et al. 2016, 11.7 M parameters) at ImageNet size,
//! built from the same blocks, for runtimes whose speed only shows on a realistic workload (the
//! default model of the GPU suite). Every weight is an initializer, so TensorRT's ONNX parser sees
//! constant weights.
//!
//! stem conv7x7(3->64, stride 2)+BN+ReLU, MaxPool 3x3 stride 2 -> [64,56,56]
//! four stages of two basic blocks: 64, 128 (stride 2), 256 (stride 2), 512 (stride 2) -> [512,7,7]
//! GlobalAveragePool, Flatten, Gemm(512->1000) -> logits

use tract_onnx::pb::tensor_proto::DataType;

use crate::init::scaled_bound;
use crate::proto::{Dim, Graph, attr_float, attr_int, attr_ints};

pub(crate) const CLASSES: usize = 10;
pub(crate) const IMAGE_SIZE: i64 = 64;

pub(crate) fn build(seed: u64) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", IMAGE_SIZE as usize);

    let x = conv_bn(&mut g, &image, "stem", 3, 16, 3, 1);
    let x = g.op("Relu", &[&x], vec![]);
    let x = g.op(
        "MaxPool",
        &[&x],
        vec![
            attr_ints("kernel_shape", &[2, 2]),
            attr_ints("strides", &[2, 2]),
        ],
    );
    let x = basic_block(&mut g, &x, "block1", 16, 16, 1);
    let x = basic_block(&mut g, &x, "block2", 16, 32, 2);

    let x = g.op("GlobalAveragePool", &[&x], vec![]);
    let x = g.op("Flatten", &[&x], vec![attr_int("axis", 1)]);
    let w = g.weight("head.weight", &[CLASSES, 32], scaled_bound(1.0, 32));
    let b = g.weight("head.bias", &[CLASSES], 0.05);
    let logits = g.op("Gemm", &[&x, &w, &b], vec![attr_int("transB", 1)]);
    g.output(
        &logits,
        "logits",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(CLASSES as i64)],
    );
    g.finish(
        "tiny_cnn",
        "trtmc tiny-cnn: seeded ResNet-style classifier, 3x64x64 -> 10 logits",
    )
}

pub(crate) const RESNET18_CLASSES: usize = 1000;
pub(crate) const RESNET18_IMAGE: i64 = 224;

pub(crate) fn build_resnet18(seed: u64) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", RESNET18_IMAGE as usize);
    let x = conv_bn(&mut g, &image, "stem", 3, 64, 7, 2);
    let x = g.op("Relu", &[&x], vec![]);
    let mut x = g.op(
        "MaxPool",
        &[&x],
        vec![
            attr_ints("kernel_shape", &[3, 3]),
            attr_ints("strides", &[2, 2]),
            attr_ints("pads", &[1, 1, 1, 1]),
        ],
    );
    let mut channels = 64;
    for (stage, width) in [64, 128, 256, 512].into_iter().enumerate() {
        let stride = if stage == 0 { 1 } else { 2 };
        x = basic_block(
            &mut g,
            &x,
            &format!("layer{}.0", stage + 1),
            channels,
            width,
            stride,
        );
        x = basic_block(
            &mut g,
            &x,
            &format!("layer{}.1", stage + 1),
            width,
            width,
            1,
        );
        channels = width;
    }
    let x = g.op("GlobalAveragePool", &[&x], vec![]);
    let x = g.op("Flatten", &[&x], vec![attr_int("axis", 1)]);
    let w = g.weight(
        "fc.weight",
        &[RESNET18_CLASSES, channels],
        scaled_bound(1.0, channels),
    );
    let b = g.weight("fc.bias", &[RESNET18_CLASSES], 0.05);
    let logits = g.op("Gemm", &[&x, &w, &b], vec![attr_int("transB", 1)]);
    g.output(
        &logits,
        "logits",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(RESNET18_CLASSES as i64)],
    );
    g.finish(
        "resnet18",
        "trtmc resnet18: seeded ResNet-18 classifier, 3x224x224 -> 1000 logits",
    )
}

/// Conv (no bias) followed by BatchNormalization in inference form.
fn conv_bn(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    cin: usize,
    cout: usize,
    k: usize,
    stride: i64,
) -> String {
    let fan_in = cin * k * k;
    let w = g.weight(
        &format!("{prefix}.conv.weight"),
        &[cout, cin, k, k],
        scaled_bound(2.0, fan_in),
    );
    let pad = (k / 2) as i64;
    let y = g.op(
        "Conv",
        &[x, &w],
        vec![
            attr_ints("kernel_shape", &[k as i64, k as i64]),
            attr_ints("strides", &[stride, stride]),
            attr_ints("pads", &[pad, pad, pad, pad]),
        ],
    );
    // Running statistics near the values a He-initialised conv produces on unit-variance input
    // (mean 0, variance about 1), so the normalised output stays near unit scale.
    let scale = g.weight_range(&format!("{prefix}.bn.weight"), &[cout], 0.8, 1.2);
    let bias = g.weight(&format!("{prefix}.bn.bias"), &[cout], 0.1);
    let mean = g.weight(&format!("{prefix}.bn.running_mean"), &[cout], 0.1);
    let var = g.weight_range(&format!("{prefix}.bn.running_var"), &[cout], 0.8, 1.5);
    g.op(
        "BatchNormalization",
        &[&y, &scale, &bias, &mean, &var],
        vec![attr_float("epsilon", 1e-5)],
    )
}

/// ResNet basic block: two 3x3 conv+BN with a ReLU between, a shortcut, Add, ReLU.
fn basic_block(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    cin: usize,
    cout: usize,
    stride: i64,
) -> String {
    let y = conv_bn(g, x, &format!("{prefix}.conv1"), cin, cout, 3, stride);
    let y = g.op("Relu", &[&y], vec![]);
    let y = conv_bn(g, &y, &format!("{prefix}.conv2"), cout, cout, 3, 1);
    let shortcut = if cin == cout && stride == 1 {
        x.to_string()
    } else {
        conv_bn(g, x, &format!("{prefix}.shortcut"), cin, cout, 1, stride)
    };
    let sum = g.op("Add", &[&y, &shortcut], vec![]);
    g.op("Relu", &[&sum], vec![])
}
