//! ONNX Runtime's profile (`SessionOptions` profiling, written by `end_profiling`) turned into a
//! [`LayerProfile`].
//!
//! The file is a JSON array of Chrome-trace events `{cat, name, ph, ts, dur, pid, tid, args}` with times
//! in microseconds. `cat == "Session"` events named `model_run` span one `Session::run` each;
//! `cat == "Node"` events named `<node>_kernel_time` time one kernel, with `args.op_name`,
//! `args.provider`, `args.node_index` and the tensor types and shapes in `args.input_type_shape` /
//! `args.output_type_shape` (`[{"float": [1, 3, 224, 224]}, …]`). The trace has no tensor names, so they
//! come from the graph the session ran (the bundle's optimized model), matched by node index.
//!
//! Warm-up runs are dropped: node events that start before the `skip_runs`-th `model_run` (0-based)
//! are not counted.

use std::collections::HashMap;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

use super::{LayerProfile, LayerTensor, ProfiledLayer, trt_datatype};

/// A node of the executed graph, as stored in the model file.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    /// The node's name.
    pub name: String,
    /// Its ONNX operator (`Conv`, `MatMul`, ...).
    pub op_type: String,
    /// The tensors it reads, by name.
    pub inputs: Vec<String>,
    /// The tensors it writes, by name.
    pub outputs: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: f64,
    end: f64,
}

/// A kernel event of a profiled run.
struct KernelEvent<'a> {
    ts: f64,
    dur_us: f64,
    name: &'a str,
    args: &'a Map<String, Value>,
}

/// Builds the profile of `runtime` from the trace text, skipping the first `skip_runs` runs.
pub fn layers_from_trace(
    runtime: &str,
    trace: &str,
    skip_runs: u64,
    graph: &[GraphNode],
    bindings: Vec<String>,
) -> anyhow::Result<LayerProfile> {
    let events: Vec<Value> = serde_json::from_str(trace)
        .context("the ONNX Runtime profile is not a JSON array of trace events")?;
    let mut runs: Vec<Span> = events
        .iter()
        .filter(|e| cat(e) == Some("Session") && e["name"].as_str() == Some("model_run"))
        .filter_map(|e| {
            let start = e["ts"].as_f64()?;
            Some(Span {
                start,
                end: start + e["dur"].as_f64().unwrap_or(0.0),
            })
        })
        .collect();
    runs.sort_by(|a, b| a.start.total_cmp(&b.start));
    let skip = usize::try_from(skip_runs).unwrap_or(usize::MAX);
    if runs.len() <= skip {
        bail!(
            "the ONNX Runtime profile holds {} model runs and the first {skip_runs} were warm-ups: nothing was profiled",
            runs.len()
        );
    }
    let profiled = &runs[skip..];

    let mut kernels: Vec<KernelEvent<'_>> = events
        .iter()
        .filter(|e| cat(e) == Some("Node"))
        .filter_map(|e| {
            let name = e["name"].as_str()?.strip_suffix("_kernel_time")?;
            Some(KernelEvent {
                ts: e["ts"].as_f64()?,
                dur_us: e["dur"].as_f64().unwrap_or(0.0),
                name,
                args: e["args"].as_object()?,
            })
        })
        .collect();
    kernels.sort_by(|a, b| a.ts.total_cmp(&b.ts));

    let mut index_of: HashMap<String, usize> = HashMap::new();
    let mut layers: Vec<ProfiledLayer> = Vec::new();
    // Per layer: milliseconds in each profiled run (a kernel may run several times in one run).
    let mut per_run: Vec<Vec<f64>> = Vec::new();
    for k in &kernels {
        let Some(run) = run_of(profiled, k.ts) else {
            continue;
        };
        let node_index = k.args.get("node_index").and_then(as_index);
        let key = match node_index {
            Some(i) => format!("#{i}"),
            None => format!("name:{}", k.name),
        };
        let layer = match index_of.get(&key) {
            Some(&i) => i,
            None => {
                layers.push(describe(k, node_index, graph));
                per_run.push(vec![0.0; profiled.len()]);
                index_of.insert(key, layers.len() - 1);
                layers.len() - 1
            }
        };
        per_run[layer][run] += k.dur_us / 1000.0;
    }
    if layers.is_empty() {
        bail!(
            "the ONNX Runtime profile has no kernel events (`cat: \"Node\"`) in the {} profiled runs",
            profiled.len()
        );
    }
    for (layer, times) in layers.iter_mut().zip(per_run) {
        layer.run_ms = times;
    }
    Ok(LayerProfile {
        runtime: runtime.to_string(),
        runs: profiled.len() as u64,
        layers,
        bindings,
    })
}

fn cat(e: &Value) -> Option<&str> {
    e["cat"].as_str()
}

fn as_index(v: &Value) -> Option<usize> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The profiled run whose span holds `ts`, if any.
fn run_of(runs: &[Span], ts: f64) -> Option<usize> {
    let after = runs.partition_point(|r| r.start <= ts);
    let i = after.checked_sub(1)?;
    (ts <= runs[i].end).then_some(i)
}

/// The layer record of a kernel: names from the graph node it ran, types and shapes from the trace.
fn describe(k: &KernelEvent<'_>, node_index: Option<usize>, graph: &[GraphNode]) -> ProfiledLayer {
    let op = k.args.get("op_name").and_then(Value::as_str).unwrap_or("");
    let by_index = node_index
        .and_then(|i| graph.get(i))
        .filter(|n| n.op_type == op && (k.name.is_empty() || n.name == k.name));
    let node = by_index.or_else(|| {
        (!k.name.is_empty())
            .then(|| graph.iter().find(|n| n.name == k.name))
            .flatten()
    });
    let name = if !k.name.is_empty() {
        k.name.to_string()
    } else {
        match node_index {
            Some(i) => format!("{op}_{i}"),
            None => op.to_string(),
        }
    };
    let names = |list: Option<&Vec<String>>| -> Vec<String> {
        list.map(|l| l.iter().filter(|n| !n.is_empty()).cloned().collect())
            .unwrap_or_default()
    };
    let inputs = tensors(
        k.args.get("input_type_shape"),
        &names(node.map(|n| &n.inputs)),
        &name,
        "in",
    );
    let outputs = tensors(
        k.args.get("output_type_shape"),
        &names(node.map(|n| &n.outputs)),
        &name,
        "out",
    );
    let mut extra = Map::new();
    if let Some(p) = k.args.get("provider") {
        extra.insert("Provider".into(), p.clone());
    }
    if let Some(i) = node_index {
        extra.insert("NodeIndex".into(), json!(i));
    }
    ProfiledLayer {
        name,
        layer_type: op.to_string(),
        inputs,
        outputs,
        run_ms: Vec::new(),
        extra,
    }
}

/// `[{"float": [1, 3]}, …]` with names taken by position (`<layer>:<in|out><i>` when the graph has none).
fn tensors(types: Option<&Value>, names: &[String], layer: &str, kind: &str) -> Vec<LayerTensor> {
    let Some(list) = types.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let (dtype, dims) = t.as_object()?.iter().next()?;
            Some(LayerTensor {
                name: names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("{layer}:{kind}{i}")),
                dims: dims
                    .as_array()
                    .map(|d| d.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default(),
                datatype: trt_datatype(dtype),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ts: u64, dur: u64) -> Value {
        json!({"cat": "Session", "name": "model_run", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": {}})
    }

    fn kernel(name: &str, index: u64, op: &str, ts: u64, dur: u64) -> Value {
        json!({"cat": "Node", "name": format!("{name}_kernel_time"), "ph": "X", "ts": ts, "dur": dur,
               "pid": 1, "tid": 1,
               "args": {"op_name": op, "provider": "CPUExecutionProvider", "node_index": index.to_string(),
                        "input_type_shape": [{"float": [1, 4]}], "output_type_shape": [{"float": [1, 4]}],
                        "thread_scheduling_stats": ""}})
    }

    fn graph() -> Vec<GraphNode> {
        vec![
            GraphNode {
                name: "".into(),
                op_type: "Conv".into(),
                inputs: vec!["x".into(), "w".into()],
                outputs: vec!["h".into()],
            },
            GraphNode {
                name: "act".into(),
                op_type: "Relu".into(),
                inputs: vec!["h".into()],
                outputs: vec!["y".into()],
            },
        ]
    }

    /// Three runs; the first is a warm-up whose kernels must not count.
    fn trace() -> String {
        let mut events = vec![
            json!({"cat": "Session", "name": "model_loading_uri", "ph": "X", "ts": 1, "dur": 5, "args": {}}),
        ];
        for (r, start) in [100u64, 200, 300].into_iter().enumerate() {
            events.push(run(start, 50));
            events.push(kernel("", 0, "Conv", start + 1, 30 + r as u64 * 1000));
            events.push(kernel("act", 1, "Relu", start + 40, 5));
        }
        serde_json::to_string(&events).expect("json")
    }

    #[test]
    fn warm_up_runs_are_dropped_and_names_come_from_the_graph() {
        let p = layers_from_trace(
            "onnxruntime",
            &trace(),
            1,
            &graph(),
            vec!["x".into(), "y".into()],
        )
        .expect("profile");
        assert_eq!(p.runs, 2);
        assert_eq!(p.layers.len(), 2);
        let conv = &p.layers[0];
        assert_eq!(conv.name, "Conv_0");
        assert_eq!(conv.layer_type, "Conv");
        // Run 1 and 2 only: 1.03 ms and 2.03 ms (the warm-up's 0.03 ms is gone).
        assert_eq!(conv.run_ms, vec![1.03, 2.03]);
        assert_eq!(conv.inputs[0].name, "x");
        assert_eq!(conv.outputs[0].name, "h");
        assert_eq!(conv.outputs[0].datatype, "Float");
        assert_eq!(p.layers[1].name, "act");
        assert_eq!(p.layers[1].inputs[0].name, "h");
        assert_eq!(p.layers[1].extra["Provider"], "CPUExecutionProvider");
    }

    /// Stable twin of the `ort_trace` fuzz target: every prefix of a real-shaped trace, and events whose
    /// fields have the wrong types or extreme values, give a profile or an error, never a panic.
    #[test]
    fn no_input_panics() {
        let check = |text: &str| {
            if let Ok(p) = layers_from_trace("onnxruntime", text, 1, &graph(), vec![]) {
                let _ = crate::profile::layer_info_json(&p);
                let _ = crate::profile::profile_json(&p);
            }
        };
        let text = trace();
        for end in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            check(&text[..end]);
        }
        let odd = [
            json!(null),
            json!(-1),
            json!(1e308),
            json!(-1e308),
            json!("x"),
            json!([]),
            json!({}),
            json!(u64::MAX),
        ];
        for value in &odd {
            for field in ["ts", "dur", "args", "name", "cat"] {
                let mut events: Vec<Value> = serde_json::from_str(&text).expect("json");
                for e in events.iter_mut() {
                    e[field] = value.clone();
                }
                check(&serde_json::to_string(&events).expect("json"));
            }
            for arg in [
                "node_index",
                "op_name",
                "input_type_shape",
                "output_type_shape",
            ] {
                let mut events: Vec<Value> = serde_json::from_str(&text).expect("json");
                for e in events.iter_mut() {
                    e["args"][arg] = value.clone();
                }
                check(&serde_json::to_string(&events).expect("json"));
            }
        }
    }

    #[test]
    fn too_few_runs_and_garbage_are_clear_errors() {
        let e =
            layers_from_trace("onnxruntime", &trace(), 3, &graph(), vec![]).expect_err("skip all");
        assert!(e.to_string().contains("nothing was profiled"), "{e}");
        let e = layers_from_trace("onnxruntime", "{}", 0, &graph(), vec![]).expect_err("object");
        assert!(e.to_string().contains("JSON array"), "{e}");
        let only_runs = serde_json::to_string(&vec![run(1, 2)]).expect("json");
        let e =
            layers_from_trace("onnxruntime", &only_runs, 0, &graph(), vec![]).expect_err("none");
        assert!(e.to_string().contains("no kernel events"), "{e}");
    }
}
