//! Which runtime wrote a backend's files and, for TensorRT, the export's era with the evidence it
//! used, on every fixture; truncated files; the few-iterations warning.

mod common;

use std::path::Path;

use common::{analyze, backend, data, fixture, fixtures_dir, version_hints};
use trtmc_analyze::analysis::{Backend, CheckStatus, Level, Status};
use trtmc_analyze::provenance::Runtime;
use trtmc_analyze::{DataSpec, Inputs};

/// Asserts a TensorRT backend's era label and that every expected fact is in its evidence.
fn assert_era(b: &Backend, label: &str, evidence: &[&str], set_aside: &[&str]) {
    let runtime = b.runtime.as_ref().expect("runtime");
    assert_eq!(runtime.name, Runtime::Tensorrt, "{}", b.label);
    let era = b
        .export
        .as_ref()
        .and_then(|e| e.era.as_ref())
        .unwrap_or_else(|| panic!("{}: no era", b.label));
    assert_eq!(era.label, label, "{}: {era:?}", b.label);
    for e in evidence {
        assert!(
            era.evidence.iter().any(|x| x.contains(e)),
            "{}: evidence {e:?} missing from {:?}",
            b.label,
            era.evidence
        );
    }
    assert_eq!(era.set_aside.len(), set_aside.len(), "{}: {era:?}", b.label);
    for e in set_aside {
        assert!(
            era.set_aside.iter().any(|x| x.contains(e)),
            "{}: {e:?} not set aside: {:?}",
            b.label,
            era.set_aside
        );
    }
    assert!(!era.conflict, "{}", b.label);
    // The plain hints list the same facts, for readers of the older field.
    let hints = version_hints(b);
    assert_eq!(hints.len(), era.evidence.len() + era.set_aside.len());
}

const MEDIAN: &str = "profile records carry medianMs";
const NO_MEDIAN: &str = "profile records have no medianMs";
const ORIGIN_QDQ: &str = "Reformat with Origin QDQ";
const SCALE_QDQ: &str = "Q/DQ appears as Scale layers";
const LOCATION: &str = "tensors have Location";
const NO_LOCATION: &str = "no tensor has Location";
const STREAM: &str = "StreamId / Metadata";
const KGEN: &str = "kgen / gemm / shape_call";
const MYELIN: &str = "opaque Myelin regions";
const SHORT_FORMATS: &str = "short datatype names";
const LONG_FORMATS: &str = "long descriptions";
const MEMORY_POOLS: &str = "\"Memory Pools\"";
const NAMES_ONLY: &str = "names only";

#[test]
fn every_trex_export_is_dated_from_all_its_evidence() {
    let a = analyze(Inputs::Folder(fixtures_dir().join("trex")));
    assert_eq!(a.backends.len(), 7);
    let newer = "TensorRT 8.4–8.x";
    let plain = [MEDIAN, LOCATION, MEMORY_POOLS, LONG_FORMATS];
    for label in ["resnet18-pt-a100-fp16", "resnet18-pt-a100-fp32"] {
        assert_era(backend(&a, label), newer, &plain, &[]);
    }
    let qat = [MEDIAN, ORIGIN_QDQ, LOCATION, MEMORY_POOLS, LONG_FORMATS];
    for label in [
        "resnet18-pt-a100-qat",
        "resnet18-pt-a100-qat-residual",
        "resnet18-pt-a100-qat-residual-qgap",
        "mobilenet-qat-titanrtx",
    ] {
        assert_era(backend(&a, label), newer, &qat, &[]);
    }
    assert_era(
        backend(&a, "mobilenet-qat-titanrtx-trt82"),
        "TensorRT 8.2 or older",
        &[NO_MEDIAN, SCALE_QDQ, NO_LOCATION, LONG_FORMATS],
        &[],
    );
}

#[test]
fn every_other_trtexec_export_is_dated_from_all_its_evidence() {
    let a = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    assert_eq!(a.backends.len(), 4);
    assert_era(
        backend(&a, "controlnet-sd15-trt86"),
        "TensorRT 8.6–8.x",
        &[MEDIAN, LOCATION, STREAM, MYELIN, LONG_FORMATS],
        &[],
    );
    for label in ["mnist-cnn-trt10.14-rtx6000ada", "mnist-cnn-trt10.16-h100"] {
        assert_era(
            backend(&a, label),
            "TensorRT 10 or newer",
            &[LOCATION, STREAM, KGEN, SHORT_FORMATS],
            &[],
        );
    }
    // Names only: the layers say nothing, the profile's medianMs still dates it.
    assert_era(
        backend(&a, "yolo-qat-int8-orin-trt85-namesonly"),
        "TensorRT 8.4 or newer",
        &[NAMES_ONLY, MEDIAN],
        &[],
    );
}

#[test]
fn every_trtexec_log_json_is_dated_or_refused() {
    let dated = |file: &str| analyze(data(&fixture(&format!("trtexec-logs/{file}")), None));
    let a = dated("trt10.16_exportLayerInfo_detailed.json");
    assert_era(
        &a.backends[0],
        "TensorRT 10 or newer",
        &[LOCATION, STREAM, KGEN, SHORT_FORMATS],
        &[],
    );
    let a = dated("trt8.4.1_exportLayerInfo_layer_names_only.json");
    assert_era(
        &a.backends[0],
        "TensorRT, version not datable from the export",
        &[NAMES_ONLY],
        &[],
    );
    // A knob database is no export: no runtime, no era.
    let a = dated("trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    assert_eq!(a.backends[0].validation.status, Status::Failed);
    assert!(a.backends[0].runtime.is_none() && a.backends[0].export.is_none());
}

/// The export: `medianMs` in the profile and Q/DQ as Reformat with Origin QDQ, but no
/// tensor has `Location`. The missing field is set aside, never the label.
#[test]
fn a_missing_location_does_not_outvote_median_and_origin() {
    let dir = tempfile::tempdir().expect("tmp");
    let layers = fixtures_dir().join("trex/resnet18-pt-a100-qat.layers.json");
    let text = std::fs::read_to_string(&layers).expect("read");
    let without_location: serde_json::Value = {
        let mut doc: serde_json::Value = serde_json::from_str(&text).expect("json");
        for l in doc["Layers"].as_array_mut().expect("layers") {
            for side in ["Inputs", "Outputs"] {
                for t in l[side].as_array_mut().into_iter().flatten() {
                    t.as_object_mut().expect("tensor").remove("Location");
                }
            }
        }
        doc
    };
    let copy = dir.path().join("layers_qat.json");
    std::fs::write(&copy, without_location.to_string()).expect("write");
    let profile = fixtures_dir().join("trex/resnet18-pt-a100-qat.profile.json");
    let a = analyze(data(&copy, Some(&profile)));
    let b = &a.backends[0];
    assert!(b.passed());
    assert_era(
        b,
        "TensorRT 8.4–8.x",
        &[MEDIAN, ORIGIN_QDQ, LONG_FORMATS],
        &[NO_LOCATION],
    );
    assert!(
        version_hints(b).iter().all(|h| !h.contains("8.2-era")),
        "no 8.2-era label"
    );
}

/// `cut` bytes of `src` written to `dir/name`.
fn truncated_copy(src: &Path, dir: &Path, name: &str, cut: usize) -> std::path::PathBuf {
    let bytes = std::fs::read(src).expect("read");
    let path = dir.join(name);
    std::fs::write(&path, &bytes[..cut]).expect("write");
    path
}

fn only_error(b: &Backend) -> String {
    let errors: Vec<&str> = b
        .validation
        .messages
        .iter()
        .filter(|m| m.level == Level::Error)
        .map(|m| m.message.as_str())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors[0].to_owned()
}

fn assert_truncation(message: &str, bytes: usize, place: &str, flag: &str) {
    assert!(
        message.contains(&format!("the file ends early, at byte {bytes} ")),
        "{message}"
    );
    assert!(message.contains(place), "{place}: {message}");
    assert!(message.contains(flag), "{flag}: {message}");
    assert!(
        !message.contains("without JSON escaping") && !message.contains("unescaped"),
        "not blamed on names: {message}"
    );
}

#[test]
fn truncated_layer_profile_and_times_files_say_where_they_end_and_what_to_export() {
    let dir = tempfile::tempdir().expect("tmp");
    let layers = fixtures_dir().join("trex/resnet18-pt-a100-fp32.layers.json");
    let profile = fixtures_dir().join("trex/resnet18-pt-a100-fp32.profile.json");
    let times = fixtures_dir().join("trex/resnet18-pt-a100-fp32.timing.json");
    let text = |p: &Path| std::fs::read_to_string(p).expect("read");
    // Inside a string: in the middle of a layer name.
    let layer_text = text(&layers);
    let in_name = layer_text.find("\"Conv_0 + Relu_1\"").expect("name") + 5;
    let cut = truncated_copy(&layers, dir.path(), "layers_a.json", in_name);
    let a = analyze(data(&cut, Some(&profile)));
    assert_truncation(
        &only_error(&a.backends[0]),
        in_name,
        "inside a string",
        "--exportLayerInfo",
    );
    // Between records: right after a complete layer object.
    let after_record = layer_text
        .find("\n  }")
        .map(|i| i + 4)
        .expect("end of record");
    let cut = truncated_copy(&layers, dir.path(), "layers_b.json", after_record);
    let a = analyze(data(&cut, Some(&profile)));
    assert_truncation(
        &only_error(&a.backends[0]),
        after_record,
        "between records",
        "--exportLayerInfo",
    );

    // Profiles: a cut inside a name, and one between trtexec's one-record lines, which the
    // unescaped-name recovery must not read as a shorter profile.
    let profile_text = text(&profile);
    let second_line = profile_text.match_indices("\n,").nth(1).expect("records").0;
    for (name, at, place) in [
        (
            "inside",
            profile_text.find("Relu_1").expect("name"),
            "inside a string",
        ),
        ("between", second_line, "between records"),
    ] {
        let cut = truncated_copy(&profile, dir.path(), &format!("profile_{name}.json"), at);
        let a = analyze(data(&layers, Some(&cut)));
        let b = &a.backends[0];
        assert_eq!(b.validation.status, Status::Failed, "{name}");
        assert!(
            b.validation
                .messages
                .iter()
                .all(|m| m.code != "profile_recovered"),
            "{name}: a cut-off profile is not recovered"
        );
        assert_truncation(&only_error(b), at, place, "--exportProfile");
    }

    // Times are optional: a cut-off file is a warning with the same facts.
    let times_text = text(&times);
    let at = times_text.len() / 2;
    let at = (0..=at)
        .rev()
        .find(|i| times_text.is_char_boundary(*i))
        .expect("boundary");
    let cut = truncated_copy(&times, dir.path(), "times_cut.json", at);
    let a = analyze(Inputs::Data(vec![DataSpec {
        layers: layers.clone(),
        profile: Some(profile.clone()),
        times: Some(cut),
        label: None,
    }]));
    let b = &a.backends[0];
    assert!(b.passed());
    let warning = b
        .validation
        .messages
        .iter()
        .find(|m| m.code == "times_unreadable")
        .expect("times warning");
    assert!(
        warning.message.contains("--exportTimes"),
        "{}",
        warning.message
    );
    assert!(
        warning.message.contains(&format!("at byte {at} ")),
        "{}",
        warning.message
    );
}

#[test]
fn a_profile_of_one_iteration_is_a_warning_not_a_failure() {
    let dir = tempfile::tempdir().expect("tmp");
    let layers = fixtures_dir().join("trex/mobilenet-qat-titanrtx.layers.json");
    let profile = fixtures_dir().join("trex/mobilenet-qat-titanrtx.profile.json");
    let few = |b: &Backend| {
        b.validation
            .messages
            .iter()
            .find(|m| m.code == "few_iterations")
            .map(|m| (m.level, m.message.clone()))
    };
    let check = |b: &Backend| {
        b.validation
            .checks
            .iter()
            .find(|c| c.name == "iteration_count")
            .map(|c| c.status)
    };
    // 6,610 iterations: no warning.
    let a = analyze(data(&layers, Some(&profile)));
    assert_eq!(few(&a.backends[0]), None);
    assert_eq!(check(&a.backends[0]), Some(CheckStatus::Passed));
    // The same profile with its count header set to 1 (and times to match).
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).expect("read")).expect("json");
    let records = doc.as_array_mut().expect("list");
    records[0]["count"] = serde_json::json!(1);
    for r in records.iter_mut().skip(1) {
        r["timeMs"] = r["averageMs"].clone();
    }
    let copy = dir.path().join("profile_one.json");
    std::fs::write(&copy, doc.to_string()).expect("write");
    let a = analyze(data(&layers, Some(&copy)));
    let b = &a.backends[0];
    assert!(b.passed(), "a warning, not a failure");
    assert_eq!(b.count, Some(1));
    let (level, message) = few(b).expect("few-iterations warning");
    assert_eq!(level, Level::Warning);
    assert!(message.contains("only 1 iteration"), "{message}");
    assert!(message.contains("--iterations"), "{message}");
    assert_eq!(check(b), Some(CheckStatus::Warning));
}
