//! No input makes the readers or the whole analysis panic: arbitrary bytes, and real exports with
//! random damage. (The cargo-fuzz targets in crates/analyze/fuzz explore further on nightly.)

mod common;

use proptest::prelude::*;
use trtmc_analyze::read::{bytes_to_text, read_layer_info, read_profile, read_times};

fn read_all(bytes: Vec<u8>) {
    let (text, _) = bytes_to_text(bytes);
    let _ = read_layer_info(text.clone());
    let _ = read_profile(&text);
    let _ = read_times(&text);
}

/// JSON-ish fragments that steer random input into the interesting parser paths.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{\"Layers\": [".to_owned()),
        Just("{\"Name\": \"".to_owned()),
        Just("\"LayerType\": \"kgen\"".to_owned()),
        Just("\"Inputs\": [{\"Name\": \"x\", \"Dimensions\": [1, -1]}]".to_owned()),
        Just("{ \"count\" : 3 }".to_owned()),
        Just(
            ", { \"name\" : \"a\"b\", \"timeMs\" : 1, \"averageMs\" : 1, \"percentage\" : 1 }\n"
                .to_owned()
        ),
        Just("\"latencyMs\": 1e309".to_owned()),
        Just("]}".to_owned()),
        Just("\u{1e}\u{1f}\"\\".to_owned()),
        "[ -~]{0,12}".prop_map(|s| s),
    ]
}

fn mutate(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for (at, cut, insert) in edits {
        let at = at % (bytes.len() + 1);
        let end = (at + cut % 64).min(bytes.len());
        bytes.splice(at..end, insert.bytes());
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn readers_survive_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        read_all(bytes);
    }

    #[test]
    fn readers_survive_json_like_soup(parts in proptest::collection::vec(fragment(), 0..24)) {
        read_all(parts.concat().into_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_pipeline_survives_damaged_real_exports(
        layer_edits in proptest::collection::vec((any::<usize>(), any::<usize>(), fragment()), 0..4),
        profile_edits in proptest::collection::vec((any::<usize>(), any::<usize>(), fragment()), 0..4),
    ) {
        let layers = std::fs::read_to_string(common::fixture("trex/resnet18-pt-a100-fp16.layers.json")).expect("fixture");
        let profile = std::fs::read_to_string(common::fixture("trex/resnet18-pt-a100-fp16.profile.json")).expect("fixture");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("layers_x.json"), mutate(&layers, &layer_edits)).expect("write");
        std::fs::write(dir.path().join("profile_x.json"), mutate(&profile, &profile_edits)).expect("write");
        let a = trtmc_analyze::analyze(&trtmc_analyze::Request { inputs: trtmc_analyze::Inputs::Folder(dir.path().to_owned()), model_name: None });
        // A folder with both files always yields structured data, whatever their content.
        let a = a.expect("structured analysis");
        let mut sink = Vec::new();
        a.write_json(&mut sink).expect("serializes");
        a.write_analyze_data(&mut sink).expect("serializes");
        prop_assert_eq!(a.backends.len(), 1);
    }
}

#[test]
fn every_fixture_prefix_is_handled() {
    // Truncation at every 97th byte of a real layer file: each prefix is an error or a result.
    let text = std::fs::read_to_string(common::fixture(
        "trtexec-other/mnist-cnn-trt10.16-h100.layers.json",
    ))
    .expect("fixture");
    for end in (0..text.len()).step_by(97) {
        if text.is_char_boundary(end) {
            let r = read_layer_info(text[..end].to_owned());
            if end < text.len() - 2 {
                assert!(
                    r.is_err(),
                    "a truncated document at {end} cannot be complete"
                );
            }
        }
    }
}
