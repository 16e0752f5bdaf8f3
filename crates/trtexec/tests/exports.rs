//! `--exportTimes`, `--exportProfile` and `--helpBuildRoute` JSON read from real trtexec outputs
//! (`shared/fixtures/trex`, `trtexec-other`, `trtexec-logs`).

mod common;

use std::path::Path;

use common::{fixture, fixtures_dir, log_text, read};
use trtmc_trtexec::{
    BOUNDARY_GPU_COMPUTE, BOUNDARY_HOST_LATENCY, KnobValues, TrtexecError, parse_knob_database,
    parse_log, parse_profile, parse_times, read_profile, read_times,
};

fn files_ending(dir: &str, suffix: &str) -> Vec<std::path::PathBuf> {
    let dir = fixtures_dir().join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// Values printed with 6 significant digits: a difference of two may be off by this much.
fn rounding(values: &[f64]) -> f64 {
    values.iter().map(|v| v.abs()).sum::<f64>() * 1e-5 + 1e-6
}

#[test]
fn every_recorded_times_export_reads_into_consistent_queries() {
    let files = files_ending("trex", ".timing.json");
    assert_eq!(files.len(), 6, "{files:?}");
    for file in &files {
        let queries = read_times(file).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            queries.len() > 1000,
            "{}: {}",
            file.display(),
            queries.len()
        );
        for (i, q) in queries.iter().enumerate() {
            let context = format!("{} record {i}: {q:?}", file.display());
            let compute = q.end_compute_ms - q.start_compute_ms;
            assert!(
                (q.compute_ms - compute).abs() <= rounding(&[q.end_compute_ms, q.start_compute_ms]),
                "{context}"
            );
            let sum = q.h2d_ms + q.compute_ms + q.d2h_ms;
            assert!(
                (q.latency_ms - sum).abs() <= rounding(&[q.h2d_ms, q.compute_ms, q.d2h_ms]),
                "{context}"
            );
            assert!(
                q.start_enq_ms.is_some() && q.end_to_end_ms.is_none(),
                "{context}"
            );
        }
        // Queries are exported in order of submission.
        assert!(
            queries
                .windows(2)
                .all(|w| w[0].start_enq_ms <= w[1].start_enq_ms),
            "{}",
            file.display()
        );
    }
    let first =
        read_times(&fixture("trex/resnet18-pt-a100-fp16.timing.json")).expect("fp16 times")[0];
    assert_eq!(first.start_enq_ms, Some(2.67333));
    assert_eq!(first.compute_ms, 0.873472);
    assert_eq!(first.latency_ms, 0.873472);
    assert_eq!((first.h2d_ms, first.d2h_ms), (0.0, 0.0));
    assert_eq!(BOUNDARY_GPU_COMPUTE, "trtexec_gpu_compute");
    assert_eq!(BOUNDARY_HOST_LATENCY, "trtexec_host_latency");
}

#[test]
fn every_recorded_profile_export_reads() {
    let mut files = files_ending("trex", ".profile.json");
    files.extend(files_ending("trtexec-other", ".profile.json"));
    assert_eq!(files.len(), 9, "{files:?}");
    for file in &files {
        let profile = read_profile(file).unwrap_or_else(|e| panic!("{e}"));
        let context = file.display().to_string();
        assert!(
            profile.count >= 1 && !profile.layers.is_empty(),
            "{context}"
        );
        let percent: f64 = profile.layers.iter().map(|l| l.percentage).sum();
        assert!((percent - 100.0).abs() < 0.01, "{context}: {percent}");
        for layer in &profile.layers {
            // timeMs is the sum over `count` iterations of a per-iteration average.
            let expected = layer.average_ms * profile.count as f64;
            assert!(
                (layer.time_ms - expected).abs() <= layer.time_ms.abs() * 1e-4 + 1e-4,
                "{context}: {layer:?}"
            );
        }
        // TensorRT 8.2 wrote no median.
        let old = context.contains("trt82");
        assert!(
            profile.layers.iter().all(|l| l.median_ms.is_none() == old),
            "{context}"
        );
    }
    let profile =
        read_profile(&fixture("trex/mobilenet-qat-titanrtx-trt82.profile.json")).expect("trt82");
    assert_eq!(profile.count, 4216);
    assert_eq!(profile.layers[0].name, "QuantizeLinear_2");
    assert_eq!(profile.layers[0].time_ms, 51.4526);
}

/// Profile names must come through byte for byte: they join the layer-information export.
#[test]
fn profile_names_equal_the_layer_names_of_the_same_engine() {
    for (layers, profile) in [
        (
            "trtexec-other/yolo-qat-int8-orin-trt85-namesonly.layers.json",
            "trtexec-other/yolo-qat-int8-orin-trt85-namesonly.profile.json",
        ),
        (
            "trtexec-other/controlnet-sd15-trt86.layers.json",
            "trtexec-other/controlnet-sd15-trt86.profile.json",
        ),
    ] {
        let layers: serde_json::Value =
            serde_json::from_str(&read(&fixture(layers))).expect("layers JSON");
        let names: Vec<String> = layers["Layers"]
            .as_array()
            .expect("Layers")
            .iter()
            .map(|l| {
                l.as_str()
                    .or_else(|| l["Name"].as_str())
                    .expect("name")
                    .to_string()
            })
            .collect();
        let profile = read_profile(&fixture(profile)).expect("profile");
        let profiled: Vec<String> = profile.layers.into_iter().map(|l| l.name).collect();
        assert_eq!(profiled, names);
    }
}

#[test]
fn knob_database_excerpt() {
    let text = read(&fixture(
        "trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json",
    ));
    let db = parse_knob_database(&text).expect("knob database");
    assert_eq!(db.tuner_version, "2.19.45");
    assert_eq!(db.tuner_options.len(), 21);

    // It serializes back to the same getAllBuildRoutes JSON.
    let original: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(serde_json::to_value(&db).expect("serializes"), original);

    let tiling = db.knob("kgen:tiling").expect("-kgen:tiling");
    assert_eq!(tiling.default_value, "2");
    assert_eq!(
        tiling.values(),
        Ok(KnobValues::Listed(vec!["0".into(), "1".into(), "2".into()]))
    );
    let peep = db.knob("-peep:max").expect("-peep:max");
    assert_eq!(
        peep.values(),
        Ok(KnobValues::OpenRange(vec!["1".into(), "2".into()]))
    );
    assert!(!peep.values().expect("open range").is_bounded());

    let kinds = |want: fn(&KnobValues) -> bool| {
        db.tuner_options
            .iter()
            .filter(|k| want(&k.values().expect("every real knob reads")))
            .count()
    };
    let closed = kinds(|v| matches!(v, KnobValues::Listed(_)));
    let open = kinds(|v| matches!(v, KnobValues::OpenRange(_)));
    let int = kinds(|v| matches!(v, KnobValues::Unbounded(kind) if kind == "int"));
    assert_eq!((closed, open, int), (16, 1, 4));

    // The real fast dry run starts from the defaults of the same database.
    let dry = parse_log(&log_text(
        "trt11.1_tuneBuildRoutes_dryRun_fast_and_full.log",
    ));
    let baseline = &dry.tuning.dry_runs[0][0];
    for token in baseline.split(' ') {
        let (name, value) = token.split_once('=').expect("knob=value");
        assert_eq!(db.knob(name).expect(name).default_value, value);
    }
    assert!(
        db.default_route()
            .starts_with("-conv_use_long_w=on -conv_use_long_w:reshapes=off -reshape_ppg=on")
    );
}

#[test]
fn export_errors_name_the_file_and_the_expected_shape() {
    let missing = Path::new("/nonexistent/times.json");
    let err = read_times(missing).expect_err("missing file");
    assert!(matches!(err, TrtexecError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/times.json"), "{err}");

    let knobs = fixture("trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let err = read_times(&knobs).expect_err("not a times file");
    let message = err.to_string();
    assert!(message.contains("--exportTimes"), "{message}");
    assert!(message.contains("knobdb_EXCERPT.json"), "{message}");

    let err = read_profile(&fixture("trex/resnet18-pt-a100-fp32.timing.json"))
        .expect_err("not a profile");
    assert!(err.to_string().contains("count"), "{err}");

    let err = parse_times("[{\"computeMs\" : nan}]", "t.json").expect_err("nan");
    assert!(err.to_string().contains("nan"), "{err}");
    let err = parse_profile(
        "[{\"name\": \"a\", \"timeMs\": 1, \"averageMs\": 1, \"percentage\": 1}]",
        "p",
    )
    .expect_err("no count first");
    assert!(err.to_string().contains("count"), "{err}");
}
