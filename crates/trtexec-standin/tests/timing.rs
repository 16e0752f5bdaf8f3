//! Timing runs: the latency model, seeded noise, the exports and the summary, read back with
//! trtmc's own parsers.

mod common;

use common::{Sim, mean_compute};
use std::path::Path;
use trtmc_trtexec::{SummaryWarning, read_profile, read_times};

fn latency(sim: &Sim, engine: &str) -> f64 {
    sim.engine(engine)["latency_ms"]
        .as_f64()
        .expect("latency_ms")
}

#[test]
fn latency_follows_the_route_and_the_config() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "default.plan", &[]);
    sim.build(&model, "best.plan", &["--setBuildRoute=-kgen:tiling=1"]);
    sim.build(&model, "slow.plan", &["--setBuildRoute=-kgen:tiling=0"]);
    sim.build(&model, "tie.plan", &["--setBuildRoute=-slice_fusion=off"]);
    sim.build(
        &model,
        "same1.plan",
        &["--setBuildRoute=-kgen:tiling=1 -conv_lowering=off"],
    );
    sim.build(
        &model,
        "same2.plan",
        &["--setBuildRoute=-conv_lowering=off -kgen:tiling=1"],
    );
    sim.build(
        &model,
        "base.plan",
        &["--setBuildRoute=-conv_lowering=on -kgen:tiling=2"],
    );

    assert_eq!(latency(&sim, "default.plan"), 2.0);
    assert!((latency(&sim, "best.plan") - 1.8).abs() < 1e-12);
    assert!((latency(&sim, "slow.plan") - 2.08).abs() < 1e-12);
    assert_eq!(latency(&sim, "tie.plan"), 2.0);
    assert_eq!(
        latency(&sim, "base.plan"),
        2.0,
        "default values change nothing"
    );
    assert_eq!(latency(&sim, "same1.plan"), latency(&sim, "same2.plan"));

    // Measured: best < default < slow, well outside the noise.
    let mut measured = Vec::new();
    for engine in ["best.plan", "default.plan", "slow.plan"] {
        sim.time(engine, 300, &[]).assert_passed();
        measured.push(mean_compute(&sim.path(&format!("{engine}.times.json"))));
    }
    assert!(
        measured[0] < measured[1] && measured[1] < measured[2],
        "{measured:?}"
    );
    // Identical routes (in any token order) measure identically at the same run counter.
    for engine in ["same1.plan", "same2.plan"] {
        sim.time(engine, 50, &[]).assert_passed();
    }
    let a = read_times(&sim.path("same1.plan.times.json")).expect("times");
    let b = read_times(&sim.path("same2.plan.times.json")).expect("times");
    assert_eq!(a, b);

    // A config file replaces the model.
    let mut custom = Sim::new();
    custom.config(r#"{"base_ms": 0.5, "effects": {"-kgen:tiling=1": 3.0}}"#);
    let model = custom.model("tiny-cnn");
    custom.build(
        &model,
        "e.plan",
        &["--setBuildRoute=-kgen:tiling=1 -kgen:codegen:cuda_tile=2"],
    );
    assert!((latency(&custom, "e.plan") - 1.5).abs() < 1e-12);
}

#[test]
fn ten_x_build_flags_are_tokens() {
    let sim = Sim::version(101601);
    let model = sim.model("tiny-cnn");
    sim.build(&model, "o5.plan", &["--builderOptimizationLevel=5"]);
    sim.build(&model, "o0.plan", &["--builderOptimizationLevel=0"]);
    sim.build(&model, "fp16.plan", &["--fp16"]);
    sim.build(
        &model,
        "mix.plan",
        &[
            "--tilingOptimizationLevel=3",
            "--maxAuxStreams=0",
            "--noTF32",
        ],
    );
    assert!((latency(&sim, "o5.plan") - 1.88).abs() < 1e-12);
    assert!((latency(&sim, "o0.plan") - 2.5).abs() < 1e-12);
    assert!((latency(&sim, "fp16.plan") - 1.2).abs() < 1e-12);
    assert!((latency(&sim, "mix.plan") - 2.0 * 0.97 * 1.01).abs() < 1e-12);
}

#[test]
fn noise_is_seeded_by_the_run_counter() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let times = sim.path("e.plan.times.json");
    let counter = sim.path("e.plan.runs");
    sim.time("e.plan", 100, &[]).assert_passed();
    let first = read_times(&times).expect("times");
    assert_eq!(
        std::fs::read_to_string(&counter).expect("counter").trim(),
        "1"
    );
    sim.time("e.plan", 100, &[]).assert_passed();
    let second = read_times(&times).expect("times");
    assert_ne!(first, second, "runs differ");
    assert_eq!(
        std::fs::read_to_string(&counter).expect("counter").trim(),
        "2"
    );
    // Back to counter 0: the first run again.
    std::fs::write(&counter, "0").expect("reset");
    sim.time("e.plan", 100, &[]).assert_passed();
    assert_eq!(read_times(&times).expect("times"), first);
    // Rebuilding starts a new sequence.
    sim.build(&model, "e.plan", &[]);
    assert!(!counter.exists());
    sim.time("e.plan", 100, &[]).assert_passed();
    assert_eq!(read_times(&times).expect("times"), first);
    // Another config seed gives other numbers.
    let mut other = Sim::new();
    other.config(r#"{"seed": 8}"#);
    let model = other.model("tiny-cnn");
    other.build(&model, "e.plan", &[]);
    other.time("e.plan", 100, &[]).assert_passed();
    assert_ne!(
        read_times(&other.path("e.plan.times.json")).expect("times"),
        first
    );
}

#[test]
fn exports_and_summary_agree() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &["--setBuildRoute=-kgen:tiling=1"]);
    let run = sim.time("e.plan", 250, &[]);
    run.assert_passed();
    let times = read_times(&sim.path("e.plan.times.json")).expect("read_times");
    assert_eq!(
        times.len(),
        251,
        "--duration=0 on 11.1: --iterations queries and its reference pair's"
    );
    for (i, q) in times.iter().enumerate() {
        assert!(q.start_enq_ms.is_some() && q.end_enq_ms.is_some());
        assert!(q.compute_ms > 0.0);
        assert!((q.latency_ms - (q.h2d_ms + q.compute_ms + q.d2h_ms)).abs() < 1e-5);
        assert!((q.end_compute_ms - q.start_compute_ms - q.compute_ms).abs() < 0.01);
        assert!(q.start_compute_ms >= q.start_h2d_ms && q.end_d2h_ms >= q.end_compute_ms);
        if i > 0 {
            assert!(q.start_compute_ms >= times[i - 1].end_compute_ms - 0.01);
        }
    }
    let parsed = run.parsed();
    let summary = parsed.summary().expect("performance summary");
    let mean = times.iter().map(|q| q.compute_ms).sum::<f64>() / times.len() as f64;
    let printed = summary.gpu_compute.mean_ms.expect("mean");
    assert!((printed - mean).abs() / mean < 1e-4, "{printed} vs {mean}");
    assert!((mean - 1.8).abs() < 0.01, "{mean}");
    assert_eq!(summary.gpu_compute.percentiles.len(), 3);
    assert_eq!(summary.h2d.as_ref().map(|s| s.max_ms), Some(0.0));
    assert!(summary.warnings.is_empty(), "0.4 % noise is stable");
    assert!(summary.throughput_qps > 500.0 && summary.throughput_qps < 600.0);
    let trace = parsed.trace.expect("trace line");
    assert_eq!(trace.queries, 251);
    let warmup = parsed.warmup.expect("warm-up line");
    assert_eq!(warmup.queries, 112);
    let averages = parsed.trace_averages.expect("trace averages");
    assert_eq!(averages.runs_per_average, 10);
    assert_eq!(averages.averages.len(), 25);
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);

    // Duration decides when it asks for more than --iterations.
    let run = sim.run_owned(&[
        sim.arg("--loadEngine", "e.plan"),
        "--duration=1".into(),
        "--warmUp=0".into(),
        "--avgRuns=5".into(),
        "--percentile=50,99.9".into(),
    ]);
    run.assert_passed();
    let parsed = run.parsed();
    assert_eq!(parsed.trace.map(|t| t.queries), Some(556)); // ceil(1000 / 1.8)
    assert_eq!(parsed.warmup.map(|w| w.queries), Some(0));
    let summary = parsed.summary().expect("summary");
    assert!(summary.gpu_compute.percentile(99.9).is_some());
    assert_eq!(summary.latency.percentiles.len(), 2);
}

#[test]
fn unstable_timing_gets_trtexecs_warning() {
    let mut sim = Sim::new();
    sim.config(r#"{"noise": 0.05}"#);
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let run = sim.time("e.plan", 400, &[]);
    run.assert_passed();
    let summary = run.parsed().summary().cloned().expect("summary");
    let cv = summary
        .warnings
        .iter()
        .find_map(|w| match w {
            SummaryWarning::Unstable {
                coefficient_of_variance_percent,
            } => Some(*coefficient_of_variance_percent),
            _ => None,
        })
        .expect("unstable warning");
    assert!((3.5..6.5).contains(&cv), "{cv}");
    // 11.x advises locking the clocks only: spin-wait is its default.
    assert!(
        run.log.contains(
            "[W]   If not already in use, locking GPU clock frequency may improve the stability."
        ),
        "{}",
        run.log
    );
}

/// The unstable-time warning follows each release's threshold (1 % up to 10.13, 2.5 % from 10.14)
/// and advice; `--iterations=N --duration=0` times N queries up to 11.0 and N + 1 from 11.1; the
/// banner has its build number from 10.4.
#[test]
fn releases_differ_as_trtexecs_sources_do() {
    // About 1.8 % noise: above 10.13's threshold, below 10.14's.
    for (version, warns, spin_wait_advice, queries) in [
        (101300, true, true, 300),
        (101601, false, false, 300),
        (110000, false, false, 300),
        (110100, false, false, 301),
    ] {
        let mut sim = Sim::version(version);
        sim.config(r#"{"noise": 0.018}"#);
        let model = sim.model("tiny-cnn");
        sim.build(&model, "e.plan", &[]);
        let run = sim.time("e.plan", 300, &[]);
        run.assert_passed();
        let summary = run.parsed().summary().cloned().expect("summary");
        let unstable = summary
            .warnings
            .iter()
            .any(|w| matches!(w, SummaryWarning::Unstable { .. }));
        assert_eq!(unstable, warns, "{version}: {}", run.log);
        if warns {
            assert_eq!(
                run.log.contains("--useSpinWait may"),
                spin_wait_advice,
                "{version}"
            );
        }
        let times = read_times(&sim.path("e.plan.times.json")).expect("times");
        assert_eq!(times.len(), queries, "{version}");
    }
    let mut noisy = Sim::version(101601);
    noisy.config(r#"{"noise": 0.05}"#);
    let model = noisy.model("tiny-cnn");
    noisy.build(&model, "e.plan", &[]);
    let run = noisy.time("e.plan", 300, &[]);
    assert!(
        run.log
            .contains("locking GPU clock frequency or adding --useSpinWait may improve"),
        "{}",
        run.log
    );
    for (version, banner) in [
        (100300, "[TensorRT v100300] # trtexec"),
        (100400, "[TensorRT v100400] [b1] # trtexec"),
    ] {
        let run = Sim::version(version).run(&["--help"]);
        run.assert_code(0);
        assert!(run.log.contains(banner), "{version}: {}", run.log);
    }
}

/// The profiled run carries the profiler's overhead: its layers add up to more than the timed
/// run's mean GPU compute time, as a public TensorRT 11.1 log shows (about 40 % there).
#[test]
fn profiled_layers_add_up_to_more_than_the_timed_mean() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let run = sim.time("e.plan", 100, &[&sim.arg("--exportProfile", "p.json")]);
    run.assert_passed();
    let timed = run
        .parsed()
        .summary()
        .cloned()
        .expect("summary")
        .gpu_compute;
    let profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sim.path("p.json")).expect("profile"))
            .expect("JSON");
    let layers: f64 = profile
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["averageMs"].as_f64())
        .sum();
    let mean = timed.mean_ms.expect("mean");
    assert!(
        layers > mean * 1.05,
        "layers {layers} ms, timed mean {mean} ms"
    );
}

#[test]
fn ten_x_copies_data_and_profiles_in_the_timed_run() {
    let sim = Sim::version(101601);
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let run = sim.time("e.plan", 100, &[]);
    run.assert_passed();
    let summary = run.parsed().summary().cloned().expect("summary");
    let h2d = summary.h2d.expect("h2d");
    assert!(
        h2d.mean_ms.expect("mean") > 0.003,
        "data transfers are on by default"
    );
    assert!(summary.latency.mean_ms > summary.gpu_compute.mean_ms);
    assert!(run.log.contains("[TensorRT v101601] [b11]"));

    // --dumpProfile without --separateProfileRun: no summary, as 10.x.
    let run = sim.time(
        "e.plan",
        100,
        &["--dumpProfile", &sim.arg("--exportProfile", "p.json")],
    );
    run.assert_passed();
    let parsed = run.parsed();
    assert!(parsed.summaries.is_empty());
    assert!(parsed.e2e_timing_not_reported);
    assert_eq!(parsed.profile_tables.len(), 1);
    let table = &parsed.profile_tables[0];
    assert_eq!(table.iterations, 100);
    assert!(table.total.is_some());
    // With it, both.
    let run = sim.time(
        "e.plan",
        100,
        &[
            "--dumpProfile",
            "--separateProfileRun",
            &sim.arg("--exportProfile", "p.json"),
        ],
    );
    run.assert_passed();
    assert_eq!(run.parsed().summaries.len(), 1);
    assert_eq!(run.parsed().profile_tables.len(), 1);
}

#[test]
fn profile_and_layer_information_are_read_by_trtmc() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(
        &model,
        "e.plan",
        &[
            "--setBuildRoute=-kgen:tiling=1",
            "--profilingVerbosity=detailed",
            &sim.arg("--exportLayerInfo", "build-layers.json"),
        ],
    );
    let run = sim.time(
        "e.plan",
        200,
        &[
            &sim.arg("--exportProfile", "profile.json"),
            &sim.arg("--exportLayerInfo", "layers.json"),
            "--dumpProfile",
        ],
    );
    run.assert_passed();
    let profile = read_profile(&sim.path("profile.json")).expect("read_profile");
    assert_eq!(
        profile.count, 201,
        "11.1's profiled loop has its reference pair too"
    );
    let sum: f64 = profile.layers.iter().map(|l| l.average_ms).sum();
    assert!(
        sum > 1.8 * 1.05 && sum < 1.8 * 1.5,
        "per-layer averages add up to the latency and the profiler's overhead: {sum}"
    );
    let percent: f64 = profile.layers.iter().map(|l| l.percentage).sum();
    assert!((percent - 100.0).abs() < 0.01);
    let parsed = run.parsed();
    assert_eq!(parsed.summaries.len(), 1, "11.x always profiles separately");
    let table = &parsed.profile_tables[0];
    assert_eq!(table.layers.len(), profile.layers.len());

    for file in ["build-layers.json", "layers.json"] {
        let text = std::fs::read_to_string(sim.path(file)).expect("layer info");
        let info = trtmc_analyze::read::read_layer_info(text).expect("analyze reads it");
        assert_eq!(info.verbosity, trtmc_analyze::read::Verbosity::Detailed);
        assert_eq!(
            info.bindings.as_deref(),
            Some(&["image".to_string(), "logits".to_string()][..])
        );
        let names: Vec<&str> = info.layers.iter().map(|l| l.name.as_str()).collect();
        let profiled: Vec<&str> = profile.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, profiled, "profile names are layer names, in order");
        for layer in &info.layers {
            assert!(
                layer.problems.is_empty(),
                "{}: {:?}",
                layer.name,
                layer.problems
            );
            assert!(layer.layer_type.is_some());
            assert!(
                layer
                    .metadata
                    .as_deref()
                    .is_some_and(|m| m.contains("[ONNX Layer: "))
            );
        }
        assert!(
            names.iter().any(|n| n.contains(" + ")),
            "an activation is fused: {names:?}"
        );
        let first = &info.layers[0];
        assert_eq!(first.inputs[0].name, "image");
        assert_eq!(first.inputs[0].dims.as_deref(), Some(&[1, 3, 64, 64][..]));
    }

    // Without detailed verbosity at build time, names only (trtexec's default).
    sim.build(
        &model,
        "names.plan",
        &[&sim.arg("--exportLayerInfo", "names.json")],
    );
    let text = std::fs::read_to_string(sim.path("names.json")).expect("names");
    let info = trtmc_analyze::read::read_layer_info(text).expect("names only");
    assert_eq!(info.verbosity, trtmc_analyze::read::Verbosity::NamesOnly);
}

#[test]
fn a_build_without_skip_inference_also_times() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let run = sim.run_owned(&[
        format!("--onnx={}", model.display()),
        sim.arg("--saveEngine", "e.plan"),
        "--iterations=20".into(),
        "--duration=0".into(),
        sim.arg("--exportTimes", "t.json"),
    ]);
    run.assert_passed();
    let parsed = run.parsed();
    let built = parsed.build.engine_built_s.expect("Engine built in");
    assert!(built > 0.0 && built < 30.0);
    assert!(parsed.build.engine_size_mib.is_some());
    assert!(parsed.build.engine_deserialize_s.is_some());
    assert!(parsed.summary().is_some());
    assert_eq!(
        read_times(&sim.path("t.json")).expect("times").len(),
        21,
        "11.1: --iterations and its reference pair"
    );
    assert_eq!(
        std::fs::read_to_string(sim.path("e.plan.runs"))
            .expect("counter")
            .trim(),
        "1"
    );
    let skip = sim.build(&model, "s.plan", &[]);
    assert!(skip.parsed().inference_skipped);
    assert!(skip.parsed().summary().is_none());
}

#[test]
fn timing_is_fast() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let run = sim.time("e.plan", 1000, &["--warmUp=0"]);
    run.assert_passed();
    assert!(run.elapsed.as_secs_f64() < 3.0, "{:?}", run.elapsed);
    eprintln!("1000 timed queries took {:?}", run.elapsed);
    // A default 3 s run of a fast engine is capped, not slow.
    let mut fast = Sim::new();
    fast.config(r#"{"base_ms": 0.001}"#);
    let model = fast.model("tiny-cnn");
    fast.build(&model, "e.plan", &[]);
    let run = fast.run_owned(&[fast.arg("--loadEngine", "e.plan")]);
    run.assert_passed();
    assert_eq!(run.parsed().trace.map(|t| t.queries), Some(200_000));
    assert!(Path::new(&fast.path("e.plan")).exists());
}

#[test]
fn trtmcs_driver_builds_and_times_through_the_simulator() {
    use std::time::Duration;
    use trtmc_trtexec::{BuildRequest, TimeRequest, Trtexec};
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let trtexec = Trtexec::locate(Some(&sim.wrapper())).expect("locate");
    assert_eq!(trtexec.version().to_string(), "11.1.0");
    let mut build = BuildRequest::new(&model, sim.path("e.plan"));
    build.build_route = Some("-kgen:tiling=1 -conv_lowering=off".into());
    build.layer_info = Some(sim.path("layers.json"));
    let built = trtexec
        .build(&build, &sim.path("build.log"), Duration::from_secs(60))
        .expect("build");
    assert!(built.log.build.engine_built_s.is_some());
    assert_eq!(
        built.log.tuning.build_route.as_deref(),
        Some("-kgen:tiling=1 -conv_lowering=off")
    );
    let mut time = TimeRequest::new(sim.path("e.plan"));
    time.iterations = Some(50);
    time.duration_s = Some(0);
    time.export_times = Some(sim.path("times.json"));
    let timed = trtexec
        .time(&time, &sim.path("time.log"), Duration::from_secs(60))
        .expect("time");
    let summary = timed.require_summary().expect("summary");
    let mean = summary.gpu_compute.mean_ms.expect("mean");
    assert!((mean - 2.0 * 0.9 * 0.97).abs() < 0.02, "{mean}");
    assert_eq!(
        read_times(&sim.path("times.json")).expect("times").len(),
        51,
        "11.1 times one query more than --iterations (its reference pair)"
    );
}
