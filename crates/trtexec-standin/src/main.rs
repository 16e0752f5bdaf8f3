//! `trtexec-standin`: a stand-in for NVIDIA's `trtexec` that needs no GPU and no TensorRT.
//!
//! * **Replay mode** (`TRTMC_STANDIN_LOG` set): replays a recorded log; see [`replay`].
//! * **Simulate mode** (otherwise): imitates trtexec 10.x/11.x. It builds "engines" (JSON
//!   documents) from ONNX models, times them with seeded noise around a latency given by a
//!   configurable per-token performance model, validates build routes against TensorRT 11.1's
//!   recorded knob database, injects configured faults (crashes, hangs, build failures, wrong
//!   outputs), and computes real outputs with tract for `--exportOutput`. Every log line and
//!   export has trtexec's format. See `docs/trtexec-standin.md`.
//!
//! Simulate-mode environment: `TRTMC_SIM_VERSION` (banner number, default `110100`),
//! `TRTMC_SIM_CONFIG` (JSON performance model and fault table), `TRTMC_SIM_CALLS` (append one
//! JSON line per invocation), `TRTMC_STANDIN_ARGV` (write the argv as JSON).
//!
//! Exit status: 0 passed, 1 trtexec failure (`&&&& FAILED`), 2 the simulator itself is
//! misconfigured (bad environment), killed by SIGABRT for simulated crashes.

mod build;
mod calls;
mod config;
mod engine;
mod error;
mod exports;
mod infer;
mod knobs;
mod log;
mod model;
mod options;
mod replay;
mod timing;
mod version;

use std::process::ExitCode;

use crate::calls::Mode;
use crate::config::Config;
use crate::log::{Log, status_line};
use crate::options::Options;
use crate::version::SimVersion;

/// Why a simulated run did not pass.
#[derive(Debug)]
pub enum Fail {
    /// A trtexec failure: these `[E]` messages, `&&&& FAILED`, exit status 1.
    Trt(Vec<String>),
    /// The simulator cannot do its job (bad environment): one `[E]` message, exit status 2.
    Sim(crate::error::SimError),
    /// The command line does not parse: these `[E]` messages and exit status 1, with `&&&& FAILED`
    /// only where the simulated version prints it ([`SimVersion::parse_failure_reports_failed`]).
    Usage(Vec<String>),
}

impl Fail {
    pub fn trt(message: impl Into<String>) -> Self {
        Fail::Trt(vec![message.into()])
    }
}

/// Everything one simulated run shares.
pub struct Ctx {
    pub log: Log,
    pub version: SimVersion,
    pub config: Config,
    pub args: Vec<String>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if std::env::var_os("TRTMC_STANDIN_LOG").is_some() {
        return match replay::run(&args) {
            Ok(code) => ExitCode::from(code),
            Err(message) => {
                eprintln!("[E] trtexec-standin: {message}");
                ExitCode::from(2)
            }
        };
    }
    simulate(args)
}

fn simulate(args: Vec<String>) -> ExitCode {
    let mut log = Log::new();
    let mode = Mode::of(&args);
    let setup = calls::record(mode, &args)
        .and_then(|()| SimVersion::from_env())
        .and_then(|version| Config::from_env().map(|config| (version, config)));
    let (version, config) = match setup {
        Ok(found) => found,
        Err(message) => {
            log.error(&format!("trtexec-standin: {message}"));
            return ExitCode::from(2);
        }
    };
    let mut ctx = Ctx {
        log,
        version,
        config,
        args,
    };
    let running = status_line(
        "RUNNING",
        version.encoded(),
        version.banner_build(),
        &ctx.args,
    );
    ctx.log.raw(&running);
    let result = match Options::parse(&ctx.args, &version) {
        Err(errors) => Err(Fail::Usage(errors)),
        Ok(options) => {
            for warning in &options.warnings {
                ctx.log.warn(warning);
            }
            ctx.log.set_verbose(options.verbose);
            dispatch(&mut ctx, mode, &options)
        }
    };
    let code = match result {
        Ok(Outcome::Quiet) => 0,
        Ok(Outcome::Passed) => {
            let line = status_line(
                "PASSED",
                version.encoded(),
                version.banner_build(),
                &ctx.args,
            );
            ctx.log.raw(&line);
            0
        }
        Err(Fail::Trt(errors)) => {
            for error in &errors {
                ctx.log.error(error);
            }
            let line = status_line(
                "FAILED",
                version.encoded(),
                version.banner_build(),
                &ctx.args,
            );
            ctx.log.raw(&line);
            1
        }
        Err(Fail::Usage(errors)) => {
            for error in &errors {
                ctx.log.error(error);
            }
            if version.parse_failure_reports_failed() {
                let line = status_line(
                    "FAILED",
                    version.encoded(),
                    version.banner_build(),
                    &ctx.args,
                );
                ctx.log.raw(&line);
            }
            1
        }
        Err(Fail::Sim(message)) => {
            ctx.log.error(&format!("trtexec-standin: {message}"));
            2
        }
    };
    ctx.log.flush();
    ExitCode::from(code)
}

/// How a run that did not fail ends.
pub enum Outcome {
    /// `&&&& PASSED`.
    Passed,
    /// No final status line (`--help`, `--helpBuildRoute`), like trtexec.
    Quiet,
}

fn dispatch(ctx: &mut Ctx, mode: Mode, options: &Options) -> Result<Outcome, Fail> {
    match mode {
        Mode::Help => {
            print_help(ctx);
            Ok(Outcome::Quiet)
        }
        Mode::HelpBuildRoute => help_build_route(ctx, options),
        Mode::Build => build::run(ctx, options).map(|()| Outcome::Passed),
        Mode::Infer => infer::load_and_run(ctx, options).map(|()| Outcome::Passed),
        Mode::Usage => Err(Fail::trt("Model missing or format not supported")),
    }
}

fn print_help(ctx: &mut Ctx) {
    let v = ctx.version;
    let mut lines = vec![
        "=== Model Options ===".to_string(),
        "  --onnx=<file>               ONNX model".to_string(),
        "=== Build Options ===".to_string(),
        "  --saveEngine=<file>         Save the serialized engine".to_string(),
        "  --shapes=spec               Set input shapes (name:AxBxC,...)".to_string(),
        "  --builderOptimizationLevel  Builder optimization level (0 to 5, default = 3)"
            .to_string(),
        "  --maxAuxStreams=N           Auxiliary streams per inference stream".to_string(),
    ];
    if v.has_tiling_optimization_level() {
        lines.push(
            "  --tilingOptimizationLevel   Tiling optimization level (0 to 3, default = 0)".into(),
        );
    }
    if v.strongly_typed() {
        lines.push("  --stronglyTyped             [Deprecated] Strongly typed network is now enabled by default. This flag is a no-op.".into());
    } else {
        lines.push(
            "  --fp16, --bf16, --int8, --fp8, --best  Enable reduced precisions (default = disabled)"
                .into(),
        );
    }
    lines.push("=== Inference Options ===".into());
    lines.push("  --loadEngine=<file>         Load a serialized engine".into());
    lines.push(
        "  --iterations=N --duration=N --warmUp=N  Timing loop (default 10 queries, 3 s, 200 ms)"
            .into(),
    );
    if v.inverted_inference_defaults() {
        lines.push("  --noCudaGraph --noSpinWait --includeDataTransfers".into());
    } else {
        lines.push("  --useCudaGraph --useSpinWait --noDataTransfers --separateProfileRun".into());
    }
    if v.has_build_routes() {
        lines.push("=== Tuning Options ===".into());
        lines.push("  --setBuildRoute=<route>     Build with a specific build route".into());
        lines.push("  --helpBuildRoute[=<knob>]   Print the knob database as JSON and exit".into());
    }
    lines.push(
        "(trtexec-standin simulate mode: no GPU, no TensorRT; see docs/trtexec-standin.md)".into(),
    );
    for line in lines {
        ctx.log.raw(&line);
    }
}

fn help_build_route(ctx: &mut Ctx, options: &Options) -> Result<Outcome, Fail> {
    let db = knobs::KnobDatabase::load().map_err(Fail::Sim)?;
    let wanted = options.help_build_route.as_deref().unwrap_or("");
    let shown = if wanted.is_empty() {
        db
    } else {
        db.only(wanted).ok_or_else(|| {
            Fail::trt(format!(
                "Unknown knob: -{}",
                wanted.trim().trim_start_matches('-')
            ))
        })?
    };
    let json = serde_json::to_string_pretty(&shown)
        .map_err(|source| Fail::Sim(crate::error::SimError::Json { source }))?;
    ctx.log.info(&format!(
        "Build route knob database (tuner version {}):",
        shown.tuner_version
    ));
    ctx.log.raw(&json);
    Ok(Outcome::Quiet)
}
