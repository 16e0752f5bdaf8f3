//! Per-layer memory footprint, computed as TREx computes it: weights are the `Weights` and `Bias`
//! blobs a detailed export lists (count × element size), activations are a layer's input and
//! output tensors (elements × element size of their format). Only where the export has the
//! fields: names-only records have neither, and a tensor of unknown format counts as nothing.

pub use crate::analysis::Memory;
use crate::analysis::{LayerView, TensorView};
use crate::classify::precision_of;
use crate::read::WeightCount;

/// Bytes per element of a precision name (`FP16` → 2); 4-bit types are half a byte.
pub fn element_bytes(precision: &str) -> Option<f64> {
    Some(match precision {
        "FP32" | "INT32" | "UINT32" => 4.0,
        "FP16" | "BF16" | "INT16" | "UINT16" => 2.0,
        "INT8" | "UINT8" | "FP8" | "BOOL" => 1.0,
        "INT64" | "UINT64" | "FP64" => 8.0,
        "FP4" | "INT4" => 0.5,
        _ => return None,
    })
}

fn blob_bytes(w: &WeightCount) -> Option<f64> {
    Some(w.count * element_bytes(precision_of(&w.dtype)?)?)
}

fn tensor_bytes(t: &TensorView) -> Option<f64> {
    let dims = t.dims.as_ref()?;
    let size = element_bytes(precision_of(t.format.as_deref()?)?)?;
    // Dynamic dimensions (-1) have no size.
    dims.iter()
        .try_fold(1.0, |n, &d| (d >= 0).then_some(n * d as f64))
        .map(|n| n * size)
}

/// The footprint of every layer; `None` when no layer lists weights and no tensor has a size.
pub fn footprint(layers: &[LayerView]) -> Option<Memory> {
    let weights_bytes: Vec<Option<u64>> = layers
        .iter()
        .map(|l| {
            let parts = [l.weights.as_ref(), l.bias.as_ref()];
            let known: Vec<f64> = parts
                .iter()
                .flatten()
                .filter_map(|w| blob_bytes(w))
                .collect();
            (!known.is_empty()).then(|| known.iter().sum::<f64>().ceil() as u64)
        })
        .collect();
    let activation_bytes: Vec<Option<u64>> = layers
        .iter()
        .map(|l| {
            let known: Vec<f64> = l
                .inputs
                .iter()
                .chain(&l.outputs)
                .filter_map(tensor_bytes)
                .collect();
            (!known.is_empty()).then(|| known.iter().sum::<f64>().ceil() as u64)
        })
        .collect();
    if weights_bytes
        .iter()
        .chain(&activation_bytes)
        .all(Option::is_none)
    {
        return None;
    }
    Some(Memory {
        total_weights_bytes: weights_bytes.iter().flatten().sum(),
        total_activation_bytes: activation_bytes.iter().flatten().sum(),
        weights_bytes,
        activation_bytes,
    })
}
