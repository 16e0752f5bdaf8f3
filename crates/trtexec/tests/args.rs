//! The argv we send, per TensorRT version. Where a recorded trtexec command line exists for the
//! same request, the test compares against that command line (read from the fixture banner).

mod common;

use std::path::PathBuf;

use common::log_text;
use trtmc_trtexec::{
    BuildRequest, BuildShapes, InferenceBehaviour, MemPool, MemPoolKind, Precision, ProfileRequest,
    TensorShape, TimeRequest, TrtexecError, TrtexecVersion, format_shapes, help_build_route_args,
    parse_log,
};

const V8_0: TrtexecVersion = TrtexecVersion::new(8, 0, 3);
const V8_4: TrtexecVersion = TrtexecVersion::new(8, 4, 1);
const V8_6: TrtexecVersion = TrtexecVersion::new(8, 6, 1);
const V10_7: TrtexecVersion = TrtexecVersion::new(10, 7, 0);
const V10: TrtexecVersion = TrtexecVersion::new(10, 16, 1);
const V11_0: TrtexecVersion = TrtexecVersion::new(11, 0, 0);
const V11: TrtexecVersion = TrtexecVersion::new(11, 1, 0);

/// (version, command line) of the first banner of a recorded log.
fn recorded(name: &str) -> (TrtexecVersion, String) {
    let log = parse_log(&log_text(name));
    let banner = log.banner().expect("banner").clone();
    (
        banner.version.expect("version"),
        banner.command_line.expect("command line"),
    )
}

/// `e.plan` loaded on 10.x with the measuring behaviour (CUDA graph, spin wait, no transfers),
/// which is 11.x's default and needs flags before it.
const LOAD_E_PLAN_MEASURING_ON_10: [&str; 4] = [
    "--loadEngine=e.plan",
    "--noDataTransfers",
    "--useSpinWait",
    "--useCudaGraph",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn shape(name: &str, dims: &[u64]) -> TensorShape {
    TensorShape::new(name, dims)
}

#[test]
fn timing_args_reproduce_the_recorded_10_16_command_line() {
    let (version, command) =
        recorded("trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log");
    assert_eq!(version, V10);
    let mut request = TimeRequest::new("model-trained.trt");
    request.shapes = vec![shape("x", &[4, 1, 28, 28])];
    request.behaviour = InferenceBehaviour {
        cuda_graph: true,
        spin_wait: true,
        data_transfers: false,
    };
    request.verbose = true;
    let args = request.args(&version).expect("args");
    assert_eq!(format!("trtexec {}", args.join(" ")), command);
}

#[test]
fn one_behaviour_gives_the_right_flags_on_both_sides_of_11_0() {
    let mut request = TimeRequest::new("e.plan");
    request.behaviour = InferenceBehaviour {
        cuda_graph: true,
        spin_wait: true,
        data_transfers: false,
    };
    assert_eq!(
        request.args(&V10).expect("10.x"),
        strings(&LOAD_E_PLAN_MEASURING_ON_10)
    );
    // The same behaviour is 11.x's default: no flags at all.
    for version in [V11_0, V11] {
        assert_eq!(
            request.args(&version).expect("11.x"),
            strings(&["--loadEngine=e.plan"])
        );
    }
    request.behaviour = InferenceBehaviour {
        cuda_graph: false,
        spin_wait: false,
        data_transfers: true,
    };
    assert_eq!(
        request.args(&V10).expect("10.x"),
        strings(&["--loadEngine=e.plan"])
    );
    assert_eq!(
        request.args(&V11).expect("11.x"),
        strings(&[
            "--loadEngine=e.plan",
            "--includeDataTransfers",
            "--noSpinWait",
            "--noCudaGraph"
        ])
    );
    // Mixed: graph off but spin-wait on, transfers off.
    request.behaviour = InferenceBehaviour {
        cuda_graph: false,
        spin_wait: true,
        data_transfers: false,
    };
    assert_eq!(
        request.args(&V10).expect("10.x"),
        strings(&["--loadEngine=e.plan", "--noDataTransfers", "--useSpinWait"])
    );
    assert_eq!(
        request.args(&V11).expect("11.x"),
        strings(&["--loadEngine=e.plan", "--noCudaGraph"])
    );
    assert_eq!(
        InferenceBehaviour::trtexec_default(&V10),
        InferenceBehaviour {
            cuda_graph: false,
            spin_wait: false,
            data_transfers: true
        }
    );
    assert_eq!(
        InferenceBehaviour::trtexec_default(&V11),
        InferenceBehaviour::default()
    );
}

#[test]
fn timing_loop_options_and_exports() {
    let mut request = TimeRequest::new("e.plan");
    request.warm_up_ms = Some(500);
    request.iterations = Some(100);
    request.duration_s = Some(0);
    request.avg_runs = Some(1);
    request.export_times = Some(PathBuf::from("out/times.json"));
    assert_eq!(
        request.args(&V11).expect("args"),
        strings(&[
            "--loadEngine=e.plan",
            "--warmUp=500",
            "--iterations=100",
            "--duration=0",
            "--avgRuns=1",
            "--exportTimes=out/times.json"
        ])
    );
    request.avg_runs = Some(0);
    let err = request.args(&V11).expect_err("avgRuns 0");
    assert!(err.to_string().contains("--avgRuns"), "{err}");
}

#[test]
fn profile_args_match_the_recorded_10_16_profiling_command() {
    let (version, command) = recorded("trt10.16_dumpProfile_exportTimes_exportProfile.log");
    let mut request =
        ProfileRequest::new("./model-trained.trt", "./model-trained-exportProfile.json");
    request.behaviour = InferenceBehaviour::trtexec_default(&version);
    request.export_times = Some(PathBuf::from("./model-trained-exportTimes.json"));
    request.dump_profile = true;
    // The recording profiled inside the timed run (hence "e2e network timing is not reported").
    request.separate_profile_run = false;
    let mut ours = request.args(&version).expect("args");
    let mut theirs: Vec<String> = command.split(' ').skip(1).map(String::from).collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn profiling_runs_separately_on_every_version() {
    let mut request = ProfileRequest::new("e.plan", "p.json");
    request.export_layer_info = Some(PathBuf::from("l.json"));
    assert_eq!(
        request.args(&V10).expect("10.x"),
        strings(
            &[
                &LOAD_E_PLAN_MEASURING_ON_10[..],
                &[
                    "--separateProfileRun",
                    "--exportProfile=p.json",
                    "--exportLayerInfo=l.json",
                ],
            ]
            .concat()
        )
    );
    // 11.x always profiles in its own run; the flag is a deprecated no-op there.
    assert_eq!(
        request.args(&V11).expect("11.x"),
        strings(&[
            "--loadEngine=e.plan",
            "--exportProfile=p.json",
            "--exportLayerInfo=l.json"
        ])
    );
    request.separate_profile_run = false;
    let err = request
        .args(&V11)
        .expect_err("cannot profile inside the run on 11.x");
    assert!(matches!(err, TrtexecError::Unsupported { .. }), "{err}");
    request.export_layer_info = Some(PathBuf::from("l.json"));
    request.separate_profile_run = true;
    let err = request
        .args(&V8_0)
        .expect_err("8.0 has no --exportLayerInfo");
    assert!(err.to_string().contains("--exportLayerInfo"), "{err}");
}

#[test]
fn full_build_request_on_10_16() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.shapes = BuildShapes::Range {
        min: vec![shape("x", &[1, 3, 224, 224])],
        opt: vec![shape("x", &[8, 3, 224, 224])],
        max: vec![shape("x", &[16, 3, 224, 224])],
    };
    request.precisions = vec![Precision::Int8, Precision::Fp16, Precision::Int8];
    request.no_tf32 = true;
    request.timing_cache = Some(PathBuf::from("cache/timing.cache"));
    request.builder_optimization_level = Some(5);
    request.tiling_optimization_level = Some(3);
    request.max_aux_streams = Some(0);
    request.mem_pools = vec![
        MemPool {
            pool: MemPoolKind::Workspace,
            mib: 1024.0,
        },
        MemPool {
            pool: MemPoolKind::TacticSharedMem,
            mib: 0.046875,
        },
    ];
    request.layer_info = Some(PathBuf::from("layers.json"));
    request.verbose = true;
    assert_eq!(
        request.args(&V10).expect("args"),
        strings(&[
            "--onnx=m.onnx",
            "--saveEngine=m.plan",
            "--minShapes=x:1x3x224x224",
            "--optShapes=x:8x3x224x224",
            "--maxShapes=x:16x3x224x224",
            "--fp16",
            "--int8",
            "--noTF32",
            "--timingCacheFile=cache/timing.cache",
            "--builderOptimizationLevel=5",
            "--tilingOptimizationLevel=3",
            "--maxAuxStreams=0",
            "--memPoolSize=workspace:1024,tacticSharedMem:0.046875",
            "--profilingVerbosity=detailed",
            "--exportLayerInfo=layers.json",
            "--skipInference",
            "--verbose"
        ])
    );
}

#[test]
fn layer_info_build_flags_appear_in_the_recorded_10_16_command() {
    let (version, command) = recorded("trt10.16_dumpLayerInfo_detailed.log");
    let mut request = BuildRequest::new(
        "/work/trt-samples-for-hackathon-cn/cookbook/00-Data/model/model-trained.onnx",
        "unused.plan",
    );
    request.layer_info = Some(PathBuf::from("./model-trained-exportLayerInfo.log"));
    let theirs: Vec<&str> = command.split(' ').collect();
    for arg in request.args(&version).expect("args") {
        if arg.starts_with("--saveEngine=") {
            continue; // that recording did not save the engine
        }
        assert!(theirs.contains(&arg.as_str()), "{arg} not in {command}");
    }
}

#[test]
fn old_build_flags_appear_in_the_recorded_8_x_commands() {
    // 8.0.3: tensor name with ':' ("x:0"), --workspace (no --memPoolSize before 8.4), --fp16.
    let (version, command) = recorded("trt8.0.3_onnx_fp16_dynamic_shapes_verbose.log");
    assert_eq!(version, V8_0);
    let mut request = BuildRequest::new("model.onnx", "model-FP16.plan");
    request.shapes = BuildShapes::Range {
        min: vec![shape("x:0", &[1, 1, 28, 28])],
        opt: vec![shape("x:0", &[4, 1, 28, 28])],
        max: vec![shape("x:0", &[16, 1, 28, 28])],
    };
    request.precisions = vec![Precision::Fp16];
    request.mem_pools = vec![MemPool {
        pool: MemPoolKind::Workspace,
        mib: 1024.0,
    }];
    request.skip_inference = false;
    request.verbose = true;
    let theirs: Vec<&str> = command.split(' ').collect();
    for arg in request.args(&version).expect("8.0 args") {
        assert!(theirs.contains(&arg.as_str()), "{arg} not in {command}");
    }

    // 8.4.1: the same, except that 8.4 has --memPoolSize (the recording used the deprecated
    // --workspace alias).
    let (version, command) = recorded("trt8.4.1_onnx_fp16_dynamic_shapes_verbose.log");
    assert_eq!(version, V8_4);
    request.shapes = BuildShapes::Range {
        min: vec![shape("tensor-0", &[1, 1, 28, 28])],
        opt: vec![shape("tensor-0", &[4, 1, 28, 28])],
        max: vec![shape("tensor-0", &[16, 1, 28, 28])],
    };
    let theirs: Vec<&str> = command.split(' ').collect();
    let ours = request.args(&version).expect("8.4 args");
    assert!(ours.contains(&"--memPoolSize=workspace:1024".to_string()));
    for arg in ours.iter().filter(|a| !a.starts_with("--memPoolSize=")) {
        assert!(theirs.contains(&arg.as_str()), "{arg} not in {command}");
    }
}

#[test]
fn build_route_matches_the_recorded_11_1_child_command() {
    let log = parse_log(&log_text("trt11.1_tuneBuildRoutes_fast_run_head.log"));
    let child = log
        .status_lines
        .iter()
        .filter_map(|s| s.command_line.as_deref())
        .find(|c| c.contains("--setBuildRoute="))
        .expect("child command line");
    let mut request = BuildRequest::new(
        "/work/trt-samples-for-hackathon-cn-wili/cookbook/00-Data/model/model-trained.onnx",
        "/tmp/trtexec_tuning_79287_iterphase1_0.plan",
    );
    request.build_route = Some("-conv_lowering=on -kgen:tiling=2".into());
    request.skip_inference = false;
    let args = request.args(&V11).expect("args");
    assert_eq!(args.len(), 3);
    for arg in &args {
        assert!(child.contains(arg.as_str()), "{arg} not in {child}");
    }
}

#[test]
fn precision_on_strongly_typed_11_x() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.precisions = vec![Precision::Fp16];
    let err = request.args(&V11).expect_err("fp16 on 11.x");
    let message = err.to_string();
    assert!(matches!(err, TrtexecError::StrongTyping { .. }));
    assert!(message.contains("strongly typed"), "{message}");
    assert!(message.contains("--fp16"), "{message}");
    assert!(message.contains("11.1.0"), "{message}");

    // A model exported in fp16 already is what was asked for: no flags needed.
    request.model_is_typed = true;
    assert_eq!(
        request.args(&V11).expect("typed model"),
        strings(&["--onnx=m.onnx", "--saveEngine=m.plan", "--skipInference"])
    );
    // On 10.x the same request still enables the builder precision.
    assert!(
        request
            .args(&V10)
            .expect("10.x")
            .contains(&"--fp16".to_string())
    );
}

#[test]
fn strong_typing_opt_in_before_11() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.strongly_typed = true;
    assert!(
        request
            .args(&V10)
            .expect("10.x")
            .contains(&"--stronglyTyped".to_string())
    );
    assert!(
        !request
            .args(&V11)
            .expect("11.x")
            .iter()
            .any(|a| a == "--stronglyTyped")
    );
    let err = request.args(&V8_4).expect_err("8.4 has no --stronglyTyped");
    assert!(err.to_string().contains(">= 9.1"), "{err}");
    request.precisions = vec![Precision::Best];
    let err = request.args(&V10).expect_err("--best with strong typing");
    assert!(matches!(err, TrtexecError::InvalidRequest(_)), "{err}");
}

#[test]
fn precision_flags_follow_their_release() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.precisions = vec![Precision::Fp8];
    assert!(request.args(&V8_6).is_ok());
    assert!(request.args(&V8_4).is_err());
    request.precisions = vec![Precision::Bf16];
    let err = request.args(&V8_6).expect_err("bf16 needs 9.1");
    assert!(err.to_string().contains("--bf16"), "{err}");
    assert!(request.args(&V10).is_ok());
    request.precisions = vec![Precision::Int4];
    assert!(request.args(&V10).is_ok());
    assert!(request.args(&TrtexecVersion::new(10, 0, 1)).is_err());
}

#[test]
fn options_newer_than_the_trtexec_are_errors() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.build_route = Some("-conv_lowering=off".into());
    let err = request.args(&V10).expect_err("routes need 11.1");
    let message = err.to_string();
    assert!(
        message.contains("--setBuildRoute") && message.contains(">= 11.1"),
        "{message}"
    );
    assert!(message.contains("10.16.1"), "{message}");
    assert!(request.args(&V11_0).is_err());

    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.tiling_optimization_level = Some(1);
    assert!(request.args(&V10_7).is_err());
    assert!(request.args(&TrtexecVersion::new(10, 8, 0)).is_ok());

    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.builder_optimization_level = Some(3);
    assert!(request.args(&V8_4).is_err());
    request.builder_optimization_level = Some(6);
    let err = request.args(&V10).expect_err("level 6");
    assert!(err.to_string().contains("0 to 5"), "{err}");

    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.mem_pools = vec![MemPool {
        pool: MemPoolKind::TacticSharedMem,
        mib: 1.0,
    }];
    assert!(request.args(&V8_6).is_err());
    request.mem_pools[0].mib = f64::NAN;
    assert!(request.args(&V10).is_err());

    assert_eq!(
        help_build_route_args(&V11).expect("11.1"),
        strings(&["--helpBuildRoute"])
    );
    assert!(help_build_route_args(&V10).is_err());
    let old = TrtexecVersion::new(7, 2, 1);
    assert!(BuildRequest::new("m.onnx", "m.plan").args(&old).is_err());
    assert!(TimeRequest::new("m.plan").args(&old).is_err());
}

#[test]
fn build_only_before_8_6() {
    let request = BuildRequest::new("m.onnx", "m.plan");
    assert!(
        request
            .args(&V8_4)
            .expect("8.4")
            .contains(&"--buildOnly".to_string())
    );
    assert!(
        request
            .args(&V8_6)
            .expect("8.6")
            .contains(&"--skipInference".to_string())
    );
}

#[test]
fn build_routes_are_checked() {
    let mut request = BuildRequest::new("m.onnx", "m.plan");
    for bad in [
        "",
        "   ",
        "conv_lowering=on",
        "-conv_lowering",
        "-a=1\n-b=2",
    ] {
        request.build_route = Some(bad.into());
        let err = request.args(&V11).expect_err(bad);
        assert!(
            matches!(err, TrtexecError::InvalidRequest(_)),
            "{bad:?}: {err}"
        );
    }
    request.build_route = Some("  -peep:max=2   -kgen:codegen:cuda_tile=3 ".into());
    assert!(
        request
            .args(&V11)
            .expect("args")
            .contains(&"--setBuildRoute=-peep:max=2 -kgen:codegen:cuda_tile=3".to_string())
    );
}

#[test]
fn shape_syntax() {
    let shapes = [shape("x:0", &[4, 1, 28, 28]), shape("mask", &[4, 128])];
    assert_eq!(
        format_shapes(&shapes, &V10).expect("shapes"),
        "x:0:4x1x28x28,mask:4x128"
    );
    assert_eq!(
        format_shapes(&[shape("scale", &[])], &V10).expect("scalar"),
        "scale:scalar"
    );
    assert!(format_shapes(&[shape("scale", &[])], &V8_6).is_err());
    for bad in ["a,b", "it's", ""] {
        let err = format_shapes(&[shape(bad, &[1])], &V10).expect_err(bad);
        assert!(matches!(err, TrtexecError::InvalidRequest(_)), "{err}");
    }

    let mut request = BuildRequest::new("m.onnx", "m.plan");
    request.shapes = BuildShapes::Range {
        min: vec![shape("x", &[1, 3])],
        opt: vec![shape("y", &[1, 3])],
        max: vec![shape("x", &[1, 3])],
    };
    let err = request.args(&V10).expect_err("names differ");
    assert!(err.to_string().contains("same tensors"), "{err}");
    request.shapes = BuildShapes::Range {
        min: vec![shape("x", &[4, 3])],
        opt: vec![shape("x", &[2, 3])],
        max: vec![shape("x", &[8, 3])],
    };
    let err = request.args(&V10).expect_err("min > opt");
    assert!(err.to_string().contains("min <= opt <= max"), "{err}");
    request.shapes = BuildShapes::Static(vec![]);
    assert!(request.args(&V10).is_err());
    request.shapes = BuildShapes::Static(vec![shape("x", &[2, 3])]);
    assert!(
        request
            .args(&V10)
            .expect("static")
            .contains(&"--shapes=x:2x3".to_string())
    );
}

#[cfg(unix)]
#[test]
fn non_utf8_paths_are_rejected_with_the_flag_named() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let request = TimeRequest::new(PathBuf::from(OsStr::from_bytes(b"bad\xffname.plan")));
    let err = request.args(&V10).expect_err("non-UTF-8");
    assert!(err.to_string().contains("--loadEngine"), "{err}");
    let request = TimeRequest::new("");
    assert!(request.args(&V10).is_err());
}
