//! Any bytes as ONNX Runtime's profile trace: a profile (whose exports render) or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trtmc_runtime::profile::ort_trace::{GraphNode, layers_from_trace};
use trtmc_runtime::profile::{layer_info_json, profile_json};

fuzz_target!(|data: &[u8]| {
    let Some((&skip, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let graph = [GraphNode {
        name: "n".into(),
        op_type: "Conv".into(),
        inputs: vec!["x".into(), String::new()],
        outputs: vec!["y".into()],
    }];
    if let Ok(profile) = layers_from_trace("onnxruntime", &text, u64::from(skip % 4), &graph, vec![]) {
        assert!(profile.runs > 0 && !profile.layers.is_empty());
        let _ = layer_info_json(&profile);
        let _ = profile_json(&profile);
    }
});
