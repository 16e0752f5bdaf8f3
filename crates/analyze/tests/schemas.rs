//! Outputs validate with a real JSON Schema validator: analyze-data.json against the published
//! v1.0 schema (shared fixture), analysis.json against our schemas/analysis.schema.json.

mod common;

use common::{analyze, data, fixture, fixtures_dir, repo_root};
use serde_json::Value;
use trtmc_analyze::Inputs;

fn load(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema).expect("schema compiles")
}

fn problems(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn outputs(inputs: Inputs) -> (Value, Value) {
    let a = analyze(inputs);
    let mut ours = Vec::new();
    a.write_json(&mut ours).expect("write analysis");
    let mut theirs = Vec::new();
    a.write_analyze_data(&mut theirs)
        .expect("write analyze-data");
    (
        serde_json::from_slice(&ours).expect("analysis is JSON"),
        serde_json::from_slice(&theirs).expect("analyze-data is JSON"),
    )
}

fn all_inputs() -> Vec<(String, Inputs)> {
    let f = fixtures_dir();
    vec![
        ("trex".to_owned(), Inputs::Folder(f.join("trex"))),
        (
            "trtexec-other".to_owned(),
            Inputs::Folder(f.join("trtexec-other")),
        ),
        (
            "names-only 8.4".to_owned(),
            data(
                &fixture("trtexec-logs/trt8.4.1_exportLayerInfo_layer_names_only.json"),
                None,
            ),
        ),
        (
            "10.16 detailed".to_owned(),
            data(
                &fixture("trtexec-logs/trt10.16_exportLayerInfo_detailed.json"),
                None,
            ),
        ),
        (
            "failed: knob db".to_owned(),
            data(
                &fixture("trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json"),
                None,
            ),
        ),
        (
            "failed: mismatched pair".to_owned(),
            data(
                &f.join("trex/resnet18-pt-a100-fp16.layers.json"),
                Some(&f.join("trex/mobilenet-qat-titanrtx.profile.json")),
            ),
        ),
    ]
}

#[test]
fn analyze_data_validates_against_the_published_schema() {
    let schema = load(&fixture("trt-perf-analysis/analyze-data.schema.json"));
    let v = validator(&schema);
    for (what, inputs) in all_inputs() {
        let (_, doc) = outputs(inputs);
        assert!(v.is_valid(&doc), "{what}: {:?}", problems(&v, &doc));
        assert_eq!(doc["schema_version"], "1.0");
    }
}

#[test]
fn analysis_validates_against_our_schema() {
    let schema = load(&repo_root().join("schemas/analysis.schema.json"));
    let v = validator(&schema);
    for (what, inputs) in all_inputs() {
        let (doc, _) = outputs(inputs);
        assert!(v.is_valid(&doc), "{what}: {:?}", problems(&v, &doc));
        assert_eq!(doc["schema"], trtmc_analyze::SCHEMA);
    }
}

#[test]
fn the_validators_reject_broken_documents() {
    // Guards the two tests above: a validator that accepted anything would make them pointless.
    let published = validator(&load(&fixture(
        "trt-perf-analysis/analyze-data.schema.json",
    )));
    let ours = validator(&load(&repo_root().join("schemas/analysis.schema.json")));
    let (mut analysis, mut analyze_data) = outputs(Inputs::Folder(fixtures_dir().join("trex")));
    analyze_data["results"][0]["validation"]["analysis_mode"] = Value::from("layer_only");
    assert!(
        !published.is_valid(&analyze_data),
        "layer_only with a profile must not validate"
    );
    analysis["backends"][0]["layers"][0]["family"] = Value::from("no_op");
    assert!(!ours.is_valid(&analysis));
}

/// Whether `json` has whitespace outside its strings.
fn has_whitespace_between_tokens(json: &[u8]) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    for &c in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
        } else if c.is_ascii_whitespace() {
            return true;
        }
    }
    false
}

/// The result of the controlnet export in an analyze-data.json of the trtexec-other fixtures.
fn controlnet_result(doc: &Value) -> &Value {
    doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["label"] == "controlnet-sd15-trt86")
        .expect("controlnet")
}

#[test]
fn verbatim_layer_records_are_kept_without_indentation() {
    // trtexec indents its records; analyze-data.json holds them with the same values, no whitespace.
    let source = fixture("trtexec-other/controlnet-sd15-trt86.layers.json");
    let text = std::fs::read(&source).expect("read");
    assert!(
        has_whitespace_between_tokens(&text),
        "the fixture is indented"
    );
    let a = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    let mut written = Vec::new();
    a.write_analyze_data(&mut written).expect("write");
    assert!(!has_whitespace_between_tokens(&written));
    let source: Value = serde_json::from_slice(&text).expect("json");
    let doc: Value = serde_json::from_slice(&written).expect("json");
    let cn = controlnet_result(&doc);
    let layers = source["Layers"].as_array().expect("layers");
    assert_eq!(cn["layers"].as_array().expect("layers"), layers);
    // Each record's layer is the same record again.
    for r in cn["records"].as_array().expect("records") {
        let l = layers
            .iter()
            .find(|l| l["Name"] == r["name"])
            .expect("the record's layer");
        assert_eq!(&r["layer"], l);
    }
}

#[test]
fn verbatim_layer_records_keep_their_unknown_keys() {
    let (_, doc) = outputs(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    let cn = controlnet_result(&doc);
    let first = &cn["layers"][0];
    // The Constant layer keeps its lower-case `weights` / `dimensions` keys as trtexec wrote them.
    assert_eq!(first["LayerType"], "Constant");
    assert!(
        first.get("weights").is_some() && first.get("dimensions").is_some(),
        "{first}"
    );
    assert_eq!(cn["records"].as_array().expect("records").len(), 389);
    // Names-only records are normalized, marked, and still valid layer objects.
    let yolo = doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["label"] == "yolo-qat-int8-orin-trt85-namesonly")
        .expect("yolo");
    assert_eq!(yolo["validation"]["analysis_mode"], "layer_only");
    assert_eq!(yolo["layers"][0]["Name"], "[trainStation1]");
    assert_eq!(yolo["layers"][0]["_trtmc_names_only"], true);
}

#[test]
fn trt82_profiles_without_median_say_what_stands_in() {
    let f = fixtures_dir().join("trex");
    let (ours, doc) = outputs(data(
        &f.join("mobilenet-qat-titanrtx-trt82.layers.json"),
        Some(&f.join("mobilenet-qat-titanrtx-trt82.profile.json")),
    ));
    let entry = &doc["results"][0]["profile"][0];
    assert_eq!(entry["medianMs"], entry["averageMs"]);
    assert_eq!(entry["medianMs_source"], "averageMs");
    assert!(ours["backends"][0]["layers"][0]["timing"]["median_ms"].is_null());
}

#[test]
fn analysis_json_is_byte_for_byte_what_serde_writes() {
    // write_json writes the layer records by hand for speed; it must not differ from the derived
    // serialization in a single byte, on every fixture and on names that need escaping.
    let dir = tempfile::tempdir().expect("tempdir");
    let layers = dir.path().join("layers_odd.json");
    std::fs::write(
        &layers,
        r#"{"Layers": [
{"Name": "q\"uote \\ back\u0001slash é ∑ 😀", "LayerType": "kgen", "Inputs": [{"Name": "in\tput", "Dimensions": [-1, 3, 0], "Format/Datatype": "Row major \"linear\" FP32"}], "Outputs": [{"Name": "mid", "Dimensions": [1, 9223372036854775807], "Datatype": "Half", "Format": "Row major"}], "StreamId": "s1", "_subgraph": 2, "Metadata": "[ONNX Layer: a\"b]\u001e[ONNX Layer: c]", "TacticName": "t\\x"},
{"Name": "plain", "LayerType": "Reformat", "ParameterType": "Reformat", "Inputs": [{"Name": "mid"}], "Outputs": [{"Name": "out", "Dimensions": [-9223372036854775808]}], "StreamId": 0, "Activation": "RELU"}
], "Bindings": ["in\tput", "out"]}"#,
    )
    .expect("write");
    let mut inputs = all_inputs();
    inputs.push(("escaping".to_owned(), data(&layers, None)));
    for (what, inputs) in inputs {
        let a = analyze(inputs);
        let mut ours = Vec::new();
        a.write_json(&mut ours).expect("write analysis");
        let derived = serde_json::to_vec(&a).expect("serialize");
        if ours != derived {
            let at = ours
                .iter()
                .zip(&derived)
                .take_while(|(x, y)| x == y)
                .count();
            let show = |b: &[u8]| {
                String::from_utf8_lossy(&b[at.saturating_sub(80)..(at + 80).min(b.len())])
                    .into_owned()
            };
            panic!(
                "{what}: differs at byte {at}:\n ours: {}\n serde: {}",
                show(&ours),
                show(&derived)
            );
        }
    }
}
