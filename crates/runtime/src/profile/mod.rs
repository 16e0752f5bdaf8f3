//! Per-layer profiles from every runtime, written in trtexec's export shapes so that
//! `trtmc-bench analyze` reads a tract, an ONNX Runtime and a TensorRT run of one model the same way.
//!
//! - [`LayerProfile`]: what a profiling session measured (layers in execution order, their tensors and
//!   the time of each profiled run).
//! - [`write_exports`]: `layers_<runtime>.json` in the shape of `trtexec --exportLayerInfo` with
//!   `--profilingVerbosity=detailed` (`{"Layers": [{Name, LayerType, Inputs, Outputs, …}], "Bindings": […]}`)
//!   and `profile_<runtime>.json` in the shape of `--exportProfile`
//!   (`[{"count": N}, {name, timeMs, averageMs, medianMs, percentage}, …]`). Each carries a `schema` key
//!   (`trtmc.layer-info/v1`, `trtmc.layer-profile/v1`) and the `runtime` that trtexec's readers
//!   ignore and `analyze` reads to label the backend.
//! - [`pass`]: the profiling pass of the worker, run after (never inside) the timed run.
//! - [`ort_trace`]: ONNX Runtime's Chrome-trace profile turned into a [`LayerProfile`].

pub mod ort_trace;
pub mod pass;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use trtmc_core::fsutil::write_json_atomic;

/// The `schema` of the `layers_<runtime>.json` trtmc writes for runtimes other than TensorRT.
pub const LAYER_INFO_SCHEMA: &str = "trtmc.layer-info/v1";
/// The `schema` of the `profile_<runtime>.json` it writes beside it.
pub const LAYER_PROFILE_SCHEMA: &str = "trtmc.layer-profile/v1";

/// One tensor a layer reads or writes, with the shape it had in the first profiled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerTensor {
    /// The tensor's name in the graph.
    pub name: String,
    /// Its shape.
    pub dims: Vec<i64>,
    /// TensorRT's datatype names: `Float`, `Half`, `Int64`, `Int32`, `Int8`, `UInt8`, `Bool`, `Double`.
    pub datatype: String,
}

/// One layer (node) of the executed graph.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfiledLayer {
    /// The node's name.
    pub name: String,
    /// The node's operator, as the runtime names it.
    pub layer_type: String,
    /// What the layer reads.
    pub inputs: Vec<LayerTensor>,
    /// What it writes.
    pub outputs: Vec<LayerTensor>,
    /// Milliseconds of the layer in each profiled run in which it ran.
    pub run_ms: Vec<f64>,
    /// Runtime-specific fields added to the layer record (e.g. `Provider`, `Op`).
    pub extra: Map<String, Value>,
}

/// What one profiling session measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerProfile {
    /// The runtime's registry name; it labels the files (`layers_<runtime>.json`).
    pub runtime: String,
    /// Profiled model executions (session runs after the warm-up calls).
    pub runs: u64,
    /// Layers in execution order.
    pub layers: Vec<ProfiledLayer>,
    /// Model inputs then outputs, as trtexec lists its bindings.
    pub bindings: Vec<String>,
}

impl LayerProfile {
    /// Summed time of every layer over every profiled run, milliseconds.
    pub fn total_ms(&self) -> f64 {
        self.layers
            .iter()
            .map(|l| l.run_ms.iter().sum::<f64>())
            .sum()
    }
}

/// The two files written for one runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportFiles {
    /// `layers_<runtime>.json`, shaped like trtexec's `--exportLayerInfo`.
    pub layer_info: PathBuf,
    /// `profile_<runtime>.json`, shaped like trtexec's `--exportProfile`.
    pub profile: PathBuf,
}

/// `layers_<runtime>.json` and `profile_<runtime>.json` in `dir`.
pub fn export_paths(dir: &Path, runtime: &str) -> ExportFiles {
    ExportFiles {
        layer_info: dir.join(format!("layers_{runtime}.json")),
        profile: dir.join(format!("profile_{runtime}.json")),
    }
}

/// The `--exportLayerInfo`-shaped document.
pub fn layer_info_json(profile: &LayerProfile) -> Value {
    let tensors = |list: &[LayerTensor]| -> Vec<Value> {
        list.iter()
            .map(|t| json!({"Name": t.name, "Dimensions": t.dims, "Format/Datatype": t.datatype}))
            .collect()
    };
    let layers: Vec<Value> = profile
        .layers
        .iter()
        .map(|l| {
            let mut record = Map::new();
            record.insert("Name".into(), json!(l.name));
            record.insert("LayerType".into(), json!(l.layer_type));
            record.insert("Inputs".into(), Value::Array(tensors(&l.inputs)));
            record.insert("Outputs".into(), Value::Array(tensors(&l.outputs)));
            for (k, v) in &l.extra {
                record.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Value::Object(record)
        })
        .collect();
    json!({
        "schema": LAYER_INFO_SCHEMA,
        "runtime": profile.runtime,
        "Layers": layers,
        "Bindings": profile.bindings,
    })
}

/// The `--exportProfile`-shaped document: `timeMs` sums every profiled run, `averageMs` is per run
/// (`timeMs / count`), `medianMs` is the median over the runs in which the layer ran, and `percentage`
/// is the layer's share of the summed time of all layers.
pub fn profile_json(profile: &LayerProfile) -> anyhow::Result<Value> {
    anyhow::ensure!(
        profile.runs > 0,
        "the profile holds no profiled run (raise the profiling iterations)"
    );
    let total = profile.total_ms();
    let count = profile.runs as f64;
    let mut records = vec![json!({
        "count": profile.runs,
        "schema": LAYER_PROFILE_SCHEMA,
        "runtime": profile.runtime,
    })];
    for l in &profile.layers {
        let time_ms: f64 = l.run_ms.iter().sum();
        let percentage = if total > 0.0 {
            100.0 * time_ms / total
        } else {
            0.0
        };
        records.push(json!({
            "name": l.name,
            "timeMs": time_ms,
            "averageMs": time_ms / count,
            "medianMs": median(&l.run_ms),
            "percentage": percentage,
        }));
    }
    Ok(Value::Array(records))
}

/// Writes both documents atomically into `dir`.
pub fn write_exports(profile: &LayerProfile, dir: &Path) -> anyhow::Result<ExportFiles> {
    let files = export_paths(dir, &profile.runtime);
    let profile_doc = profile_json(profile)?;
    write_json_atomic(&files.layer_info, &layer_info_json(profile))
        .with_context(|| format!("cannot write {}", files.layer_info.display()))?;
    write_json_atomic(&files.profile, &profile_doc)
        .with_context(|| format!("cannot write {}", files.profile.display()))?;
    Ok(files)
}

/// Median (`trtmc_core::stats::median`); 0 for no values.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        trtmc_core::stats::median(values)
    }
}

/// TensorRT's datatype name for a lower-case element type name (`float`, `f32`, `int64`, …).
pub fn trt_datatype(name: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "float" | "float32" | "f32" => "Float".into(),
        "float16" | "f16" | "half" => "Half".into(),
        "bfloat16" | "bf16" => "BFloat16".into(),
        "double" | "float64" | "f64" => "Double".into(),
        "int64" | "i64" => "Int64".into(),
        "int32" | "i32" => "Int32".into(),
        "int16" | "i16" => "Int16".into(),
        "int8" | "i8" => "Int8".into(),
        "uint8" | "u8" => "UInt8".into(),
        "bool" => "Bool".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LayerProfile {
        let t = |n: &str| LayerTensor {
            name: n.into(),
            dims: vec![1, 4],
            datatype: "Float".into(),
        };
        LayerProfile {
            runtime: "tract".into(),
            runs: 4,
            layers: vec![
                ProfiledLayer {
                    name: "conv".into(),
                    layer_type: "Conv".into(),
                    inputs: vec![t("x")],
                    outputs: vec![t("h")],
                    run_ms: vec![3.0, 1.0, 2.0, 2.0],
                    extra: Map::from_iter([("Op".to_string(), json!("Conv"))]),
                },
                ProfiledLayer {
                    name: "relu".into(),
                    layer_type: "Relu".into(),
                    inputs: vec![t("h")],
                    outputs: vec![t("y")],
                    run_ms: vec![1.0, 1.0, 1.0, 5.0],
                    extra: Map::new(),
                },
            ],
            bindings: vec!["x".into(), "y".into()],
        }
    }

    #[test]
    fn profile_document_follows_trtexec_semantics() {
        let doc = profile_json(&sample()).expect("profile");
        let records = doc.as_array().expect("array");
        assert_eq!(records[0]["count"], 4);
        assert_eq!(records[0]["schema"], LAYER_PROFILE_SCHEMA);
        assert_eq!(records[1]["name"], "conv");
        assert_eq!(records[1]["timeMs"], 8.0);
        assert_eq!(records[1]["averageMs"], 2.0);
        assert_eq!(records[1]["medianMs"], 2.0);
        assert_eq!(records[2]["medianMs"], 1.0);
        let sum: f64 = records[1..]
            .iter()
            .map(|r| r["percentage"].as_f64().expect("pct"))
            .sum();
        assert!((sum - 100.0).abs() < 1e-9);
        assert!((records[1]["percentage"].as_f64().expect("pct") - 50.0).abs() < 1e-9);
    }

    #[test]
    fn layer_document_has_trtexec_keys_and_keeps_extras() {
        let doc = layer_info_json(&sample());
        assert_eq!(doc["Bindings"], json!(["x", "y"]));
        assert_eq!(doc["runtime"], "tract");
        let conv = &doc["Layers"][0];
        assert_eq!(conv["Name"], "conv");
        assert_eq!(conv["LayerType"], "Conv");
        assert_eq!(conv["Inputs"][0]["Format/Datatype"], "Float");
        assert_eq!(conv["Outputs"][0]["Dimensions"], json!([1, 4]));
        assert_eq!(conv["Op"], "Conv");
    }

    #[test]
    fn an_empty_profile_is_an_error_not_a_file() {
        let mut p = sample();
        p.runs = 0;
        assert!(
            profile_json(&p)
                .expect_err("no runs")
                .to_string()
                .contains("no profiled run")
        );
    }

    #[test]
    fn datatype_names_follow_tensorrt() {
        assert_eq!(trt_datatype("float"), "Float");
        assert_eq!(trt_datatype("F16"), "Half");
        assert_eq!(trt_datatype("int64"), "Int64");
        assert_eq!(median(&[4.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[]), 0.0);
    }
}
