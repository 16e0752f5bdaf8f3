//! Shared helpers for the analyze crate's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The real trtexec fixtures: `$TRTMC_FIXTURES`, else the vendored `<repo>/tests/fixtures`. Missing
/// fixtures fail the test with a message instead of skipping it.
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRTMC_FIXTURES") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "TRTMC_FIXTURES={} is not a folder",
            dir.display()
        );
        return dir;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = repo.join("tests/fixtures");
    assert!(
        dir.is_dir(),
        "fixtures not found at {}: restore tests/fixtures from the repository or set TRTMC_FIXTURES to a copy",
        dir.display()
    );
    dir
}

pub fn fixture(rel: &str) -> PathBuf {
    let p = fixtures_dir().join(rel);
    assert!(p.is_file(), "missing fixture {}", p.display());
    p
}

/// The repository root (for schemas/).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn data(layers: &Path, profile: Option<&Path>) -> trtmc_analyze::Inputs {
    trtmc_analyze::Inputs::Data(vec![trtmc_analyze::DataSpec {
        layers: layers.to_owned(),
        profile: profile.map(Path::to_owned),
        times: None,
        label: None,
    }])
}

pub fn analyze(inputs: trtmc_analyze::Inputs) -> trtmc_analyze::Analysis {
    trtmc_analyze::analyze(&trtmc_analyze::Request {
        inputs,
        model_name: None,
    })
    .expect("structured analysis")
}

/// `copies` ResNet18 fp16 TREx builds (36 layers each) chained into one engine, each copy reading the
/// previous one's output, as scripts/gen-large-engine.py builds the 14,400-layer benchmark case:
/// (the `{"Layers", "Bindings"}` layer info, the profile records with their count header).
pub fn chained_resnets(copies: usize) -> (serde_json::Value, serde_json::Value) {
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(fixture(name)).expect("read")).expect("json")
    };
    let doc = read("trex/resnet18-pt-a100-fp16.layers.json");
    let profile = read("trex/resnet18-pt-a100-fp16.profile.json");
    let bindings = doc["Bindings"].as_array().expect("bindings");
    let first_in = bindings[0].as_str().expect("input").to_owned();
    let last_out = bindings[bindings.len() - 1]
        .as_str()
        .expect("output")
        .to_owned();
    let mut layers = Vec::new();
    let mut records = vec![profile[0].clone()];
    for i in 0..copies {
        let rename = |name: &str| {
            if i > 0 && name == first_in {
                format!("c{}/{last_out}", i - 1)
            } else {
                format!("c{i}/{name}")
            }
        };
        for layer in doc["Layers"].as_array().expect("layers") {
            let mut l = layer.clone();
            l["Name"] = format!("c{i}/{}", layer["Name"].as_str().expect("name")).into();
            for key in ["Inputs", "Outputs"] {
                for t in l[key].as_array_mut().expect("tensors") {
                    t["Name"] = rename(t["Name"].as_str().expect("tensor")).into();
                }
            }
            layers.push(l);
        }
        for r in profile.as_array().expect("profile").iter().skip(1) {
            let mut r = r.clone();
            r["name"] = format!("c{i}/{}", r["name"].as_str().expect("name")).into();
            records.push(r);
        }
    }
    let last = format!("c{}/{last_out}", copies.saturating_sub(1));
    (
        serde_json::json!({"Layers": layers, "Bindings": [first_in, last]}),
        serde_json::Value::Array(records),
    )
}

/// The backend labelled `label` of an analysis.
pub fn backend<'a>(
    a: &'a trtmc_analyze::Analysis,
    label: &str,
) -> &'a trtmc_analyze::analysis::Backend {
    a.backends
        .iter()
        .find(|b| b.label == label)
        .unwrap_or_else(|| panic!("no backend {label}"))
}

/// The evidence lines of a backend's export era (it must have an export).
pub fn version_hints(b: &trtmc_analyze::analysis::Backend) -> &[String] {
    &b.export.as_ref().expect("export").version_hints
}
