//! The files trtexec writes, in its own layouts: `--exportTimes`, `--exportProfile`,
//! `--exportOutput` (`--exportLayerInfo` is [`crate::engine::Engine::layer_info_json`]).

use crate::log::{dims_text, g6};
use crate::model::HostTensor;
use crate::timing::Query;

/// One record per timed query, the 12 fields in trtexec's order, numbers as C++ streams print.
pub fn times_json(queries: &[Query]) -> String {
    let mut text = String::with_capacity(queries.len() * 330 + 8);
    text.push_str("[\n");
    for (i, q) in queries.iter().enumerate() {
        text.push_str(if i == 0 { "  { " } else { ", { " });
        let fields = [
            ("startEnqMs", q.start_enq),
            ("endEnqMs", q.end_enq),
            ("startH2dMs", q.start_h2d),
            ("endH2dMs", q.end_h2d),
            ("startComputeMs", q.start_compute),
            ("endComputeMs", q.end_compute),
            ("startD2hMs", q.start_d2h),
            ("endD2hMs", q.end_d2h),
            ("h2dMs", q.h2d),
            ("computeMs", q.compute),
            ("d2hMs", q.d2h),
            ("latencyMs", q.latency),
        ];
        for (j, (key, value)) in fields.iter().enumerate() {
            if j > 0 {
                text.push_str(", ");
            }
            text.push('"');
            text.push_str(key);
            text.push_str("\" : ");
            text.push_str(&g6(*value));
        }
        text.push_str(" }\n");
    }
    text.push_str("]\n");
    text
}

/// One profiled layer.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerProfile {
    pub name: String,
    pub time_ms: f64,
    pub average_ms: f64,
    pub median_ms: f64,
    pub percentage: f64,
}

/// `[ { "count" : N }, { "name" : ..., "timeMs" : ..., ... }, ... ]` (names JSON-escaped, which
/// trtexec does not do; for ordinary names the text is the same).
pub fn profile_json(count: u64, layers: &[LayerProfile]) -> String {
    let mut text = format!("[\n  {{ \"count\" : {count} }}\n");
    for l in layers {
        let name = serde_json::to_string(&l.name).unwrap_or_else(|_| "\"?\"".to_string());
        text.push_str(&format!(
            ", {{ \"name\" : {name}, \"timeMs\" : {}, \"averageMs\" : {}, \"medianMs\" : {}, \"percentage\" : {} }}\n",
            g6(l.time_ms),
            g6(l.average_ms),
            g6(l.median_ms),
            g6(l.percentage)
        ));
    }
    text.push_str("]\n");
    text
}

/// The `--dumpProfile` table rows (without the log prefix).
pub fn profile_table(count: u64, layers: &[LayerProfile], total: &LayerProfile) -> Vec<String> {
    let mut lines = vec![
        format!("=== Profile ({count} iterations ) ==="),
        "   Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer".to_string(),
    ];
    for l in layers.iter().chain(std::iter::once(total)) {
        lines.push(format!(
            "{:>11.2}{:>13.4}{:>13.4}{:>10.1}   {}",
            l.time_ms, l.average_ms, l.median_ms, l.percentage, l.name
        ));
    }
    lines
}

/// Puts `outputs` in the order trtexec lists them: `Bindings::getOutputBindings` returns a
/// `std::unordered_map` keyed by name, so the order is the standard library's hash order, not
/// the model's. The simulator orders by a hash of the name (64-bit FNV-1a): as arbitrary, and
/// the same on every run, so a reader that relies on the model's order fails here as on a GPU.
pub fn in_hash_order(outputs: &mut [HostTensor]) {
    outputs.sort_by_key(|t| fnv1a(&t.name));
}

fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// trtexec's `--exportOutput` layout:
///
/// ```text
/// [
///   { "name" : "y"
///   , "dimensions" : "1x10"
///   , "values" : [ 0.1, 0.2 ]
///   }
/// ]
/// ```
pub fn output_json(outputs: &[HostTensor]) -> String {
    let mut text = String::from("[\n");
    for (i, t) in outputs.iter().enumerate() {
        let name = serde_json::to_string(&t.name).unwrap_or_else(|_| "\"?\"".to_string());
        text.push_str(if i == 0 { "  { " } else { ", { " });
        text.push_str(&format!("\"name\" : {name}\n"));
        text.push_str(&format!(
            "  , \"dimensions\" : \"{}\"\n",
            dims_text(&t.dims)
        ));
        text.push_str("  , \"values\" : [ ");
        text.push_str(&t.values.texts().join(", "));
        text.push_str(" ]\n  }\n");
    }
    text.push_str("]\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Values;

    #[test]
    fn output_layout_is_trtexecs() {
        let outputs = vec![
            HostTensor {
                name: "y".into(),
                dims: vec![1, 3],
                values: Values::F32(vec![0.1, 0.2, 0.3]),
            },
            HostTensor {
                name: "z".into(),
                dims: vec![1],
                values: Values::I64(vec![2]),
            },
        ];
        assert_eq!(
            output_json(&outputs),
            "[\n  { \"name\" : \"y\"\n  , \"dimensions\" : \"1x3\"\n  , \"values\" : [ 0.1, 0.2, 0.3 ]\n  }\n\
             , { \"name\" : \"z\"\n  , \"dimensions\" : \"1\"\n  , \"values\" : [ 2 ]\n  }\n]\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&output_json(&outputs)).expect("JSON");
        assert_eq!(parsed[1]["values"][0], 2);
    }

    #[test]
    fn outputs_come_in_hash_order_not_the_models() {
        let tensor = |name: &str| HostTensor {
            name: name.into(),
            dims: vec![1],
            values: Values::F32(vec![0.0]),
        };
        // The three outputs of the onnx wheel's test_operator_symbolic_override_nested.
        let mut outputs = vec![tensor("3"), tensor("4"), tensor("5")];
        in_hash_order(&mut outputs);
        let names: Vec<&str> = outputs.iter().map(|t| t.name.as_str()).collect();
        assert_ne!(names, ["3", "4", "5"]);
        let mut again = vec![tensor("5"), tensor("3"), tensor("4")];
        in_hash_order(&mut again);
        let again: Vec<&str> = again.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, again, "the order depends on the names only");
    }

    #[test]
    fn profile_and_times_are_json() {
        let layers = vec![LayerProfile {
            name: "conv + relu".into(),
            time_ms: 20.0,
            average_ms: 2.0,
            median_ms: 2.0,
            percentage: 100.0,
        }];
        let parsed: serde_json::Value =
            serde_json::from_str(&profile_json(10, &layers)).expect("JSON");
        assert_eq!(parsed[0]["count"], 10);
        assert_eq!(parsed[1]["averageMs"], 2);
        let table = profile_table(10, &layers, &layers[0]);
        assert_eq!(
            table[2],
            "      20.00       2.0000       2.0000     100.0   conv + relu"
        );
        let q = Query {
            start_enq: 200.0,
            end_enq: 200.002,
            start_h2d: 200.002,
            end_h2d: 200.002,
            start_compute: 200.002,
            end_compute: 202.002,
            start_d2h: 202.002,
            end_d2h: 202.002,
            h2d: 0.0,
            compute: 2.0,
            d2h: 0.0,
            latency: 2.0,
        };
        let parsed: serde_json::Value = serde_json::from_str(&times_json(&[q, q])).expect("JSON");
        assert_eq!(parsed.as_array().map(Vec::len), Some(2));
        assert_eq!(parsed[0]["computeMs"], 2);
        assert_eq!(parsed[1]["endComputeMs"], 202.002);
    }
}
