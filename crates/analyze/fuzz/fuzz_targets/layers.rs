//! Any bytes as an `--exportLayerInfo` file: an error or layers whose graph can be built, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (text, _) = trtmc_analyze::read::bytes_to_text(data.to_vec());
    if let Ok(info) = trtmc_analyze::read::read_layer_info(text) {
        let graph = trtmc_analyze::graph::build(&info.layers);
        assert!(graph.edges.iter().all(|(a, b)| (*a as usize) < info.layers.len() && (*b as usize) < info.layers.len()));
        for layer in &info.layers {
            let _ = trtmc_analyze::classify::family(layer);
            let _ = trtmc_analyze::classify::report_type(layer);
            let _ = trtmc_analyze::classify::origins(layer);
        }
    }
});
