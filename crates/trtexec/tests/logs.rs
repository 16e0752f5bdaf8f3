//! `parse_log` on every recorded trtexec log in `shared/fixtures/trtexec-logs` (and the synthetic
//! 7.x and failure logs in `tests/data`). Expected values are the ones printed in those files;
//! cross-checks recompute one printed value from others so that a field read into the wrong slot
//! fails.

mod common;

use common::{data, fixtures_dir, log_text, read};
use trtmc_trtexec::log::ParsedLog;
use trtmc_trtexec::{
    PerformanceSummary, RunStatus, SummaryForm, SummaryWarning, TrtexecVersion, parse_log,
};

/// Every recorded file in `trtexec-logs/` and the test that covers it.
const COVERED: &[&str] = &[
    "trt10.16_dumpLayerInfo_detailed.log",
    "trt10.16_dumpProfile_exportTimes_exportProfile.log",
    "trt10.16_exportLayerInfo_detailed.json",
    "trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log",
    "trt10.16_onnx_build_and_bench_default.log",
    "trt11.1_accuracy_cos_inference_start.log",
    "trt11.1_accuracy_cos_perf_summary.log",
    "trt11.1_helpBuildRoute_knobdb_EXCERPT.json",
    "trt11.1_setBuildRoute_child_build_excerpt.log",
    "trt11.1_tuneBuildRoutes_dryRun_fast_and_full.log",
    "trt11.1_tuneBuildRoutes_fast_run_head.log",
    "trt11.1_tuneBuildRoutes_fast_run_tail.log",
    "trt8.0.3_onnx_fp16_dynamic_shapes_verbose.log",
    "trt8.4.1_exportLayerInfo_layer_names_only.json",
    "trt8.4.1_onnx_fp16_dynamic_shapes_verbose.log",
];

#[test]
fn every_recorded_file_is_covered_by_a_test() {
    let dir = fixtures_dir().join("trtexec-logs");
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log") || name.ends_with(".json"))
        .collect();
    present.sort();
    let mut covered: Vec<String> = COVERED.iter().map(|s| s.to_string()).collect();
    covered.sort();
    assert_eq!(
        present, covered,
        "a fixture was added or removed: give it a test here"
    );
}

fn parse(name: &str) -> ParsedLog {
    parse_log(&log_text(name))
}

fn close(actual: f64, expected: f64, relative: f64) -> bool {
    (actual - expected).abs() <= relative * expected.abs().max(f64::MIN_POSITIVE)
}

/// Printed values that must agree with each other in any trtexec summary.
fn assert_consistent(summary: &PerformanceSummary, queries: u64) {
    let gpu = &summary.gpu_compute;
    let lat = &summary.latency;
    for stat in [gpu, lat] {
        assert!(
            stat.min_ms <= stat.median_ms && stat.median_ms <= stat.max_ms,
            "{stat:?}"
        );
        for p in &stat.percentiles {
            assert!(stat.min_ms <= p.ms && p.ms <= stat.max_ms, "{stat:?}");
        }
    }
    // Latency = H2D + GPU compute + D2H, so it is never below GPU compute.
    assert!(lat.min_ms >= gpu.min_ms && lat.max_ms >= gpu.max_ms);
    // Throughput = queries / walltime.
    let walltime = summary.total_host_walltime_s.expect("walltime");
    assert!(
        close(summary.throughput_qps, queries as f64 / walltime, 1e-3),
        "throughput {} vs {queries} queries over {walltime} s",
        summary.throughput_qps
    );
    // Total GPU compute = mean GPU compute × queries.
    let total = summary.total_gpu_compute_s.expect("total GPU compute");
    let mean = gpu.mean_ms.expect("mean");
    assert!(
        close(total, mean * queries as f64 / 1000.0, 1e-3),
        "total {total} s vs mean {mean} ms × {queries}"
    );
}

#[test]
fn trt10_16_build_and_bench_default() {
    let log = parse("trt10.16_onnx_build_and_bench_default.log");
    let banner = log.banner().expect("banner");
    assert_eq!(banner.version, Some(TrtexecVersion::new(10, 16, 1)));
    assert_eq!(banner.encoded_version, Some(101601));
    assert_eq!(banner.build, Some(11));
    assert_eq!(
        banner.command_line.as_deref(),
        Some(
            "trtexec --onnx=/work/trt-samples-for-hackathon-cn/cookbook/00-Data/model/model-trained.onnx"
        )
    );
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert_eq!(log.tensorrt_version, Some(TrtexecVersion::new(10, 16, 1)));
    assert_eq!(log.device.as_deref(), Some("NVIDIA H100 PCIe"));
    assert_eq!(log.build.parse_s, Some(0.0170852));
    assert_eq!(log.build.engine_generation_s, Some(7.41113));
    assert_eq!(log.build.engine_built_s, Some(8.09138));
    assert_eq!(log.build.engine_size_mib, Some(12.5744));
    assert_eq!(log.build.engine_deserialize_s, Some(0.00676279));

    let warmup = log.warmup.expect("warmup");
    assert_eq!((warmup.queries, warmup.duration_ms), (3057, 200.0));
    let trace = log.trace.expect("trace");
    assert_eq!((trace.queries, trace.duration_s), (46125, 3.00013));

    // 10.x prints the first and last 200 averages and elides the rest.
    let averages = log.trace_averages.as_ref().expect("averages");
    assert_eq!(averages.runs_per_average, 10);
    assert_eq!(averages.averages.len(), 400);
    let omitted = averages.omitted_queries.expect("omitted");
    assert_eq!(omitted, 42125);
    assert_eq!(
        omitted + averages.runs_per_average * averages.averages.len() as u64,
        trace.queries
    );

    assert_eq!(log.summaries.len(), 1);
    let s = log.summary().expect("summary");
    assert_eq!(s.form, SummaryForm::Lines);
    assert_eq!(s.throughput_qps, 15374.3);
    assert_eq!(s.latency.min_ms, 0.0410156);
    assert_eq!(s.latency.max_ms, 0.14917);
    assert_eq!(s.latency.mean_ms, Some(0.0441053));
    assert_eq!(s.latency.median_ms, 0.0440674);
    let percents: Vec<f64> = s.latency.percentiles.iter().map(|p| p.percent).collect();
    assert_eq!(percents, [90.0, 95.0, 99.0]);
    assert_eq!(s.latency.percentile(99.0), Some(0.0512695));
    assert_eq!(s.enqueue.as_ref().map(|e| e.median_ms), Some(0.0267334));
    assert_eq!(s.h2d.as_ref().map(|e| e.mean_ms), Some(Some(0.00395853)));
    assert_eq!(s.gpu_compute.median_ms, 0.0361328);
    assert_eq!(s.gpu_compute.percentile(95.0), Some(0.0371094));
    assert_eq!(s.d2h.as_ref().map(|e| e.max_ms), Some(0.0341797));
    assert_eq!(s.end_to_end, None);
    assert_eq!(s.total_host_walltime_s, Some(3.00013));
    assert_eq!(s.total_gpu_compute_s, Some(1.6586));
    assert_eq!(
        s.warnings,
        [SummaryWarning::Unstable {
            coefficient_of_variance_percent: 6.58751
        }]
    );
    assert_consistent(s, trace.queries);
    assert!(log.errors.is_empty() && log.problems.is_empty(), "{log:?}");
    assert!(
        log.warnings
            .iter()
            .any(|w| w.starts_with("Dynamic dimensions required for input: x")),
        "{:?}",
        log.warnings
    );
}

#[test]
fn trt10_16_load_engine_cuda_graph_spin_wait_no_transfers() {
    let log = parse("trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log");
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert_eq!(log.build.engine_built_s, None);
    assert_eq!(log.build.engine_deserialize_s, Some(0.0245724));
    let trace = log.trace.expect("trace");
    assert_eq!(trace.queries, 74692);
    let averages = log.trace_averages.as_ref().expect("averages");
    assert_eq!(averages.omitted_queries, Some(70692));
    assert_eq!(averages.averages.len(), 400);
    assert_eq!(averages.averages[0].gpu_ms, 0.0390579);
    assert_eq!(averages.averages[0].enqueue_ms, Some(0.00185547));

    let s = log.summary().expect("summary");
    assert_eq!(s.throughput_qps, 24896.9);
    // No data transfers: copies are zero and host latency equals GPU compute.
    for copies in [s.h2d.as_ref(), s.d2h.as_ref()] {
        let copies = copies.expect("copy statistics");
        assert_eq!(
            (copies.min_ms, copies.max_ms, copies.median_ms),
            (0.0, 0.0, 0.0)
        );
    }
    assert_eq!(s.latency, s.gpu_compute);
    assert_eq!(s.total_gpu_compute_s, Some(2.89541));
    assert!(s.warnings.is_empty());
    assert_consistent(s, trace.queries);
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt10_16_layer_info_build_skips_inference() {
    let log = parse("trt10.16_dumpLayerInfo_detailed.log");
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert!(log.inference_skipped);
    assert!(log.summaries.is_empty() && log.trace.is_none() && log.warmup.is_none());
    assert_eq!(log.build.engine_built_s, Some(8.05109));
    assert_eq!(log.build.engine_generation_s, Some(7.36936));
    assert_eq!(log.build.parse_s, Some(0.0162636));
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt10_16_dump_profile_table_and_missing_summary() {
    let log = parse("trt10.16_dumpProfile_exportTimes_exportProfile.log");
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert!(log.e2e_timing_not_reported);
    assert!(log.summaries.is_empty());
    assert_eq!(log.profile_tables.len(), 1);
    let table = &log.profile_tables[0];
    assert_eq!(table.iterations, 18362);
    assert_eq!(table.layers.len(), 15);
    let first = &table.layers[0];
    assert_eq!(first.name, "__mye59_0_myl0_0");
    assert_eq!(
        (
            first.time_ms,
            first.average_ms,
            first.median_ms,
            first.percentage
        ),
        (31.40, 0.0017, Some(0.0018), 2.1)
    );
    assert_eq!(
        table.layers[3].name,
        "Reformatting CopyNode for Input Tensor 0 to {ForeignNode[node_conv2d_1...node_relu_1]}"
    );
    let total = table.total.as_ref().expect("Total row");
    assert_eq!(total.time_ms, 1529.13);
    // Rows are rounded to 2 decimals (time) and 1 decimal (%): their sums match the total.
    let time: f64 = table.layers.iter().map(|r| r.time_ms).sum();
    let percent: f64 = table.layers.iter().map(|r| r.percentage).sum();
    assert!((time - total.time_ms).abs() < 0.01 * table.layers.len() as f64);
    assert!((percent - 100.0).abs() < 0.05 * table.layers.len() as f64);
    assert!(close(
        total.average_ms,
        total.time_ms / table.iterations as f64,
        1e-2
    ));
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt8_0_3_single_percentile_and_end_to_end() {
    let log = parse("trt8.0.3_onnx_fp16_dynamic_shapes_verbose.log");
    let banner = log.banner().expect("banner");
    assert_eq!(banner.encoded_version, Some(8003));
    assert_eq!(banner.version, Some(TrtexecVersion::new(8, 0, 3)));
    assert_eq!(banner.build, None);
    // A log line follows the final status; the outcome is still the PASSED line.
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert_eq!(log.tensorrt_version, Some(TrtexecVersion::new(8, 0, 3)));
    assert_eq!(log.build.engine_built_s, Some(5.1349));
    let trace = log.trace.expect("trace");
    assert_eq!((trace.queries, trace.duration_s), (18553, 3.00109));
    // 8.0 prints every average, with end-to-end and enqueue times.
    let averages = log.trace_averages.as_ref().expect("averages");
    assert_eq!(averages.omitted_queries, None);
    assert_eq!(
        averages.averages.len() as u64,
        trace.queries / averages.runs_per_average
    );
    assert_eq!(averages.averages[0].end_to_end_ms, Some(0.289972));
    assert_eq!(averages.averages[0].enqueue_ms, Some(0.0316971));

    let s = log.summary().expect("summary");
    assert_eq!(s.throughput_qps, 6182.1);
    assert_eq!(s.latency.percentiles.len(), 1);
    assert_eq!(s.latency.percentile(99.0), Some(0.166382));
    let e2e = s.end_to_end.as_ref().expect("End-to-End Host Latency");
    assert_eq!((e2e.min_ms, e2e.median_ms), (0.163086, 0.286621));
    assert_eq!(e2e.percentile(99.0), Some(0.294922));
    assert_eq!(s.gpu_compute.mean_ms, Some(0.15217));
    assert_consistent(s, trace.queries);
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt8_4_1_single_percentile_without_end_to_end() {
    let log = parse("trt8.4.1_onnx_fp16_dynamic_shapes_verbose.log");
    assert_eq!(
        log.banner().and_then(|b| b.version),
        Some(TrtexecVersion::new(8, 4, 1))
    );
    assert_eq!(log.tensorrt_version, Some(TrtexecVersion::new(8, 4, 1)));
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert_eq!(log.build.engine_built_s, Some(2.94838));
    let trace = log.trace.expect("trace");
    let averages = log.trace_averages.as_ref().expect("averages");
    assert_eq!(
        averages.averages.len() as u64,
        trace.queries / averages.runs_per_average
    );
    assert_eq!(averages.averages[0].end_to_end_ms, None);
    let s = log.summary().expect("summary");
    assert_eq!(s.throughput_qps, 6175.47);
    assert_eq!(s.end_to_end, None);
    assert_eq!(s.latency.percentiles.len(), 1);
    assert_eq!(
        s.d2h.as_ref().and_then(|d| d.percentile(99.0)),
        Some(0.003479)
    );
    assert_consistent(s, trace.queries);
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt11_1_accuracy_check_start() {
    let log = parse("trt11.1_accuracy_cos_inference_start.log");
    assert_eq!(log.accuracy.len(), 1);
    let loss = &log.accuracy[0];
    assert_eq!(
        (loss.tensor.as_str(), loss.algorithm.as_str(), loss.loss),
        ("y", "Cosine", 0.0)
    );
    // Fixed notation after the accuracy check.
    let warmup = log.warmup.expect("warmup");
    assert_eq!((warmup.queries, warmup.duration_ms), (3078, 200.0));
    let trace = log.trace.expect("trace");
    assert_eq!((trace.queries, trace.duration_s), (46774, 3.000158));
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt11_1_summary_in_mixed_fixed_notation() {
    let log = parse("trt11.1_accuracy_cos_perf_summary.log");
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    assert_eq!(log.tensorrt_version, Some(TrtexecVersion::new(11, 1, 0)));
    let s = log.summary().expect("summary");
    assert_eq!(s.throughput_qps, 15590.511719);
    assert_eq!(s.total_host_walltime_s, Some(3.000158));
    assert_eq!(s.total_gpu_compute_s, Some(2.936293));
    assert_eq!(s.latency.min_ms, 0.0625);
    assert_eq!(s.gpu_compute.percentile(99.0), Some(0.0629883));
    // The queries are in the other excerpt of the same run.
    let start = parse("trt11.1_accuracy_cos_inference_start.log");
    assert_consistent(s, start.trace.expect("trace").queries);
}

#[test]
fn trt11_1_set_build_route_child_build() {
    let log = parse("trt11.1_setBuildRoute_child_build_excerpt.log");
    assert_eq!(log.tensorrt_version, Some(TrtexecVersion::new(11, 1, 0)));
    assert_eq!(
        log.tuning.build_route.as_deref(),
        Some("-conv_lowering=on -kgen:tiling=2")
    );
    assert_eq!(log.build.engine_built_s, Some(7.97911));
    assert_eq!(log.build.engine_generation_s, Some(7.28323));
    assert_eq!(log.build.engine_size_mib, Some(12.5781));
    assert_eq!(log.outcome(), None);
}

#[test]
fn trt11_1_dry_run_listings() {
    let log = parse("trt11.1_tuneBuildRoutes_dryRun_fast_and_full.log");
    assert_eq!(log.tuning.dry_runs.len(), 2);
    assert_eq!(
        log.tuning.dry_runs[0],
        [
            "-conv_lowering=on -kgen:tiling=2",
            "-conv_lowering=on -kgen:tiling=0",
            "-conv_lowering=on -kgen:tiling=1",
            "-conv_lowering=off -kgen:tiling=2",
        ]
    );
    assert_eq!(log.tuning.dry_runs[1].len(), 6);
    assert_eq!(
        log.tuning.dry_runs[1][5],
        "-conv_lowering=off -kgen:tiling=2"
    );
}

#[test]
fn trt11_1_tuning_parent_and_first_child() {
    let log = parse("trt11.1_tuneBuildRoutes_fast_run_head.log");
    let running: Vec<_> = log
        .status_lines
        .iter()
        .filter(|s| s.status == RunStatus::Running)
        .collect();
    assert_eq!(running.len(), 2);
    assert!(
        running
            .iter()
            .all(|s| s.version == Some(TrtexecVersion::new(11, 1, 0)) && s.build == Some(106))
    );
    let child = running[1].command_line.as_deref().expect("child command");
    assert!(child.contains("--setBuildRoute=-conv_lowering=on -kgen:tiling=2"));
    assert_eq!(log.tuning.tasks.len(), 1);
    assert_eq!(log.tuning.tasks[0].marker, "TASK_BEGIN");
    assert_eq!(log.tuning.tasks[0].iteration, 0);
    assert_eq!(
        log.tuning.tasks[0].route,
        "-conv_lowering=on -kgen:tiling=2"
    );
    assert_eq!(log.outcome(), None);
}

#[test]
fn trt11_1_tuning_tail_best_iteration() {
    let log = parse("trt11.1_tuneBuildRoutes_fast_run_tail.log");
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    let passed = log
        .status_lines
        .iter()
        .filter(|s| s.status == RunStatus::Passed)
        .count();
    assert_eq!(passed, 2, "the last child's and the parent's");
    let s = log.summary().expect("last child's summary");
    assert_eq!(s.throughput_qps, 33524.7);
    assert_eq!(s.gpu_compute.mean_ms, Some(0.028372));
    assert_eq!(log.tuning.tasks.len(), 1);
    assert_eq!(log.tuning.tasks[0].marker, "TASK_END");
    assert_eq!(log.tuning.tasks[0].iteration, 3);
    assert_eq!(
        log.tuning.best,
        Some(("-conv_lowering=off -kgen:tiling=2".to_string(), 0.0283833))
    );
    assert_eq!(log.tuning.succeeded, Some((4, 4)));
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt7_0_block_summary_synthetic() {
    let log = parse_log(&read(&data("trt7.0_synthetic_block_summary.log")));
    let banner = log.banner().expect("banner");
    assert_eq!(banner.version, None);
    assert_eq!(log.tensorrt_version, None);
    assert_eq!(log.outcome(), Some(RunStatus::Passed));
    let averages = log.trace_averages.as_ref().expect("averages");
    assert_eq!(averages.averages.len(), 3);
    assert_eq!(averages.averages[0].end_to_end_ms, Some(0.1852));
    assert_eq!(averages.averages[0].enqueue_ms, None);
    let s = log.summary().expect("block summary");
    assert_eq!(s.form, SummaryForm::Block);
    assert_eq!(s.throughput_qps, 9666.0);
    assert_eq!(
        (
            s.latency.min_ms,
            s.latency.max_ms,
            s.latency.mean_ms,
            s.latency.median_ms
        ),
        (0.0952, 0.4317, Some(0.1031), 0.1019)
    );
    assert_eq!(s.latency.percentile(99.0), Some(0.1187));
    let e2e = s.end_to_end.as_ref().expect("end to end");
    assert_eq!((e2e.min_ms, e2e.percentile(99.0)), (0.1723, Some(0.2107)));
    assert_eq!(s.enqueue, None);
    assert_eq!(s.gpu_compute.mean_ms, Some(0.0823));
    assert_eq!(s.gpu_compute.percentile(99.0), Some(0.0962));
    assert_eq!(s.total_host_walltime_s, Some(3.00021));
    assert_eq!(s.total_gpu_compute_s, Some(2.3867));
    assert_consistent(s, log.trace.expect("trace").queries);
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn trt7_2_block_summary_and_name_first_profile_synthetic() {
    let log = parse_log(&read(&data(
        "trt7.2_synthetic_block_summary_dumpProfile.log",
    )));
    let s = log.summary().expect("block summary");
    assert_eq!(s.form, SummaryForm::Block);
    assert_eq!(s.throughput_qps, 969.005);
    let enqueue = s.enqueue.as_ref().expect("7.2 enqueue block");
    assert_eq!(
        (
            enqueue.min_ms,
            enqueue.max_ms,
            enqueue.mean_ms,
            enqueue.median_ms
        ),
        (0.8411, 1.5133, None, 0.8902)
    );
    assert_eq!(s.gpu_compute.min_ms, 0.0573);
    assert_eq!(
        log.trace_averages
            .as_ref()
            .map(|a| a.averages[1].enqueue_ms),
        Some(Some(0.8871))
    );
    let table = &log.profile_tables[0];
    assert_eq!(table.iterations, 3541);
    assert_eq!(table.layers.len(), 4);
    assert_eq!(
        table.layers[2].name,
        "Reformatting CopyNode for Input Tensor 0 to Plus214_Output_0"
    );
    assert_eq!(table.layers[2].median_ms, None);
    assert_eq!(table.layers[2].percentage, 23.0);
    assert_eq!(table.total.as_ref().map(|t| t.time_ms), Some(174.15));
    assert!(log.problems.is_empty(), "{:?}", log.problems);
}

#[test]
fn failed_build_keeps_error_lines_synthetic() {
    let log = parse_log(&read(&data("trt10.16_synthetic_build_failed.log")));
    assert_eq!(log.outcome(), Some(RunStatus::Failed));
    assert_eq!(
        log.last_errors(2),
        [
            "Failed to create engine from model or file.",
            "Engine set up failed"
        ]
    );
    assert_eq!(log.errors.len(), 8);
}

#[test]
fn unknown_option_on_11_1_synthetic() {
    let log = parse_log(&read(&data("trt11.1_synthetic_unknown_option_fp16.log")));
    assert_eq!(
        log.outcome(),
        None,
        "trtexec returns before reporting a status"
    );
    assert_eq!(log.errors, ["Unknown option: --fp16"]);
}

#[test]
fn cuda_failure_without_a_severity_is_an_error_line_synthetic() {
    let log = parse_log(&read(&data("trt11.1_synthetic_cuda_failure.log")));
    assert_eq!(
        log.outcome(),
        None,
        "the process aborted before a final status"
    );
    assert_eq!(
        log.errors,
        ["Cuda failure at samples/common/sampleDevice.h:304: out of memory"]
    );
    // The other unmarked failure forms; ordinary lines are not failures.
    for line in [
        "Cuda failure: 2",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "what():  Failed to create object",
        "trtexec: error while loading shared libraries: libnvinfer.so.11: cannot open shared object file: No such file or directory",
    ] {
        assert!(trtmc_trtexec::is_unmarked_failure(line), "{line}");
    }
    for line in ["Engine loaded in 0.0213 sec.", "CUDA Graph: Enabled"] {
        assert!(!trtmc_trtexec::is_unmarked_failure(line), "{line}");
    }
}

#[test]
fn truncated_summary_is_reported_as_a_problem() {
    let text = log_text("trt10.16_onnx_build_and_bench_default.log");
    let cut: Vec<&str> = text
        .lines()
        .take_while(|l| !l.contains("] Latency: min"))
        .collect();
    let log = parse_log(&cut.join("\n"));
    assert!(log.summaries.is_empty());
    assert_eq!(log.problems.len(), 1, "{:?}", log.problems);
    assert!(
        log.problems[0].contains("latency statistics"),
        "{:?}",
        log.problems
    );
    assert_eq!(log.outcome(), None);
}

#[test]
fn an_unrelated_warning_after_the_summary_is_not_swallowed() {
    let text = log_text("trt10.16_onnx_build_and_bench_default.log");
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        lines.push(line.to_string());
        if line.contains("may improve the stability") {
            lines.push("[07/07/2026-02:10:58] [W] [TRT] a late warning".to_string());
        }
    }
    let log = parse_log(&lines.join("\n"));
    let s = log.summary().expect("summary");
    assert_eq!(s.warnings.len(), 1);
    assert!(log.warnings.contains(&"[TRT] a late warning".to_string()));
}
