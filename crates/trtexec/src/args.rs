//! Requests for the three things the tensorrt runtime asks of trtexec (build, time, profile) and
//! the pure functions that turn them into an argv for one trtexec version.
//!
//! trtexec only understands `--flag=value` (it splits each argument at its first `=`), so every
//! value travels in the same argv element as its flag. Nothing here drives trtexec's own tuner
//! (`--tuneBuildRoutes`, `--dryRun`, ...): routes are searched by `trtmc-bench tune`, which builds
//! each one with `--setBuildRoute`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrtexecError};
use crate::version::TrtexecVersion;

/// One tensor and its dimensions, written `name:AxBxC` (or `name:scalar` for 0-D).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorShape {
    /// The input tensor name as in the model.
    pub name: String,
    /// Concrete dimensions (trtexec shapes take no wildcards).
    pub dims: Vec<u64>,
}

impl TensorShape {
    /// A tensor shape from a name and dimensions.
    pub fn new(name: impl Into<String>, dims: impl Into<Vec<u64>>) -> Self {
        Self {
            name: name.into(),
            dims: dims.into(),
        }
    }
}

/// Formats shapes in trtexec's `name:AxBxC,name2:DxE` syntax.
///
/// trtexec splits the list at `,` and each item at its last `:`, so names may contain `:` (the
/// 8.0 fixture uses `x:0`) but not `,`; a `'` would be taken as quoting. 0-D tensors are written
/// `name:scalar`, which trtexec understands from 10.0 on.
pub fn format_shapes(shapes: &[TensorShape], version: &TrtexecVersion) -> Result<String> {
    let mut items = Vec::with_capacity(shapes.len());
    for shape in shapes {
        if shape.name.is_empty() {
            return Err(TrtexecError::InvalidRequest(
                "a shape has an empty tensor name; give the model's input name".into(),
            ));
        }
        if let Some(bad) = shape
            .name
            .chars()
            .find(|c| matches!(c, ',' | '\'' | '\n' | '\r'))
        {
            return Err(TrtexecError::InvalidRequest(format!(
                "tensor name {:?} contains {:?}, which trtexec's shape syntax (name:AxB,...) cannot express; \
                 rename the model input",
                shape.name, bad
            )));
        }
        let dims = if shape.dims.is_empty() {
            if version.major < 10 {
                return Err(TrtexecError::Unsupported {
                    what: "a 0-D (scalar) input shape",
                    flag: "name:scalar",
                    needs: ">= 10.0",
                    found: *version,
                    hint: "Give the input at least one dimension or use TensorRT 10 or newer.",
                });
            }
            "scalar".to_string()
        } else {
            let dims: Vec<String> = shape.dims.iter().map(u64::to_string).collect();
            dims.join("x")
        };
        items.push(format!("{}:{}", shape.name, dims));
    }
    Ok(items.join(","))
}

/// Input shapes for an engine build.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BuildShapes {
    /// Let trtexec use the model's shapes (dynamic dimensions become 1, with a warning).
    #[default]
    Model,
    /// One static shape per input: `--shapes=...` (min = opt = max).
    Static(Vec<TensorShape>),
    /// A dynamic-shape optimization profile: `--minShapes --optShapes --maxShapes`.
    Range {
        /// Smallest shapes the engine accepts.
        min: Vec<TensorShape>,
        /// Shapes the builder tunes for.
        opt: Vec<TensorShape>,
        /// Largest shapes the engine accepts.
        max: Vec<TensorShape>,
    },
}

/// A reduced precision the weakly typed builder (TensorRT before 11.0) may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// `--fp16`
    Fp16,
    /// `--bf16` (9.1+)
    Bf16,
    /// `--int8`
    Int8,
    /// `--fp8` (8.6+)
    Fp8,
    /// `--int4` (10.1+)
    Int4,
    /// `--best`: every precision.
    Best,
}

impl Precision {
    /// The trtexec flag.
    pub fn flag(self) -> &'static str {
        match self {
            Precision::Fp16 => "--fp16",
            Precision::Bf16 => "--bf16",
            Precision::Int8 => "--int8",
            Precision::Fp8 => "--fp8",
            Precision::Int4 => "--int4",
            Precision::Best => "--best",
        }
    }

    fn available(self, version: &TrtexecVersion) -> Result<()> {
        let (ok, needs) = match self {
            Precision::Fp16 | Precision::Int8 | Precision::Best => {
                (version.has_fp16_int8_best_flags(), "< 11.0")
            }
            Precision::Bf16 => (version.has_bf16_flag(), ">= 9.1 and < 11.0"),
            Precision::Fp8 => (version.has_fp8_flag(), ">= 8.6 and < 11.0"),
            Precision::Int4 => (version.has_int4_flag(), ">= 10.1 and < 11.0"),
        };
        if ok {
            return Ok(());
        }
        Err(TrtexecError::Unsupported {
            what: "this builder precision",
            flag: self.flag(),
            needs,
            found: *version,
            hint: "Choose a precision this TensorRT release offers, or export the model already in that precision.",
        })
    }
}

/// A builder memory pool for `--memPoolSize=pool:MiB,...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPoolKind {
    /// `workspace` (before 8.4: `--workspace=N`).
    Workspace,
    /// `dlaSRAM`
    DlaSram,
    /// `dlaLocalDRAM`
    DlaLocalDram,
    /// `dlaGlobalDRAM`
    DlaGlobalDram,
    /// `tacticSharedMem` (10.0+)
    TacticSharedMem,
}

impl MemPoolKind {
    fn trtexec_name(self) -> &'static str {
        match self {
            MemPoolKind::Workspace => "workspace",
            MemPoolKind::DlaSram => "dlaSRAM",
            MemPoolKind::DlaLocalDram => "dlaLocalDRAM",
            MemPoolKind::DlaGlobalDram => "dlaGlobalDRAM",
            MemPoolKind::TacticSharedMem => "tacticSharedMem",
        }
    }
}

/// A size limit for one builder memory pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemPool {
    /// Which pool.
    pub pool: MemPoolKind,
    /// Limit in MiB (trtexec's default unit; fractions allowed).
    pub mib: f64,
}

/// How the timed loop runs. One requested behaviour gives the right flags on every version:
/// before 11.0 trtexec opts in with `--useCudaGraph --useSpinWait --noDataTransfers`; from 11.0 on
/// those are defaults and it opts out with `--noCudaGraph --noSpinWait --includeDataTransfers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InferenceBehaviour {
    /// Capture the inference in a CUDA graph and launch that.
    pub cuda_graph: bool,
    /// Spin-wait for GPU completion instead of blocking synchronization.
    pub spin_wait: bool,
    /// Copy inputs and outputs between host and device inside each query.
    pub data_transfers: bool,
}

impl Default for InferenceBehaviour {
    /// CUDA graph on, spin-wait on, data transfers off: trtexec 11's defaults, which isolate GPU
    /// compute time. Using them on every version keeps results comparable across releases.
    fn default() -> Self {
        Self {
            cuda_graph: true,
            spin_wait: true,
            data_transfers: false,
        }
    }
}

impl InferenceBehaviour {
    /// What trtexec does on `version` when given none of these flags.
    pub fn trtexec_default(version: &TrtexecVersion) -> Self {
        if version.has_inverted_inference_defaults() {
            Self::default()
        } else {
            Self {
                cuda_graph: false,
                spin_wait: false,
                data_transfers: true,
            }
        }
    }

    /// The flags that produce this behaviour on `version` (empty when it is the default there).
    pub fn args(&self, version: &TrtexecVersion) -> Vec<String> {
        let defaults = Self::trtexec_default(version);
        let inverted = version.has_inverted_inference_defaults();
        // Same order as the cookbook's recorded 10.16 command line.
        let mut args = Vec::new();
        if self.data_transfers != defaults.data_transfers {
            args.push(if inverted {
                "--includeDataTransfers"
            } else {
                "--noDataTransfers"
            });
        }
        if self.spin_wait != defaults.spin_wait {
            args.push(if inverted {
                "--noSpinWait"
            } else {
                "--useSpinWait"
            });
        }
        if self.cuda_graph != defaults.cuda_graph {
            args.push(if inverted {
                "--noCudaGraph"
            } else {
                "--useCudaGraph"
            });
        }
        args.into_iter().map(String::from).collect()
    }
}

/// Build an engine from ONNX: `--onnx=M --saveEngine=E ...`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildRequest {
    /// The ONNX model.
    pub onnx: PathBuf,
    /// Where the serialized engine goes.
    pub engine: PathBuf,
    /// Input shapes / optimization profile.
    pub shapes: BuildShapes,
    /// Reduced precisions to allow (TensorRT before 11.0). Empty: fp32 (TF32 allowed) on 10.x,
    /// the model's own types on 11.x.
    pub precisions: Vec<Precision>,
    /// The model already carries the requested precisions in its tensor types (e.g. exported in
    /// float16, or with Q/DQ nodes). On 11.x that satisfies `precisions` without flags; without
    /// it, asking 11.x for a precision is an error that explains strong typing.
    pub model_is_typed: bool,
    /// Ask 9.1–10.x for a strongly typed network (`--stronglyTyped`); 11.x always is one.
    pub strongly_typed: bool,
    /// Disallow TF32 for fp32 layers (`--noTF32`).
    pub no_tf32: bool,
    /// Load and save the builder's timing cache here (`--timingCacheFile`).
    pub timing_cache: Option<PathBuf>,
    /// A build route for the Global Performance Tuner, e.g. `-conv_lowering=off -kgen:tiling=2`
    /// (`--setBuildRoute`, 11.1+).
    pub build_route: Option<String>,
    /// `--builderOptimizationLevel` (0–5; 8.6+).
    pub builder_optimization_level: Option<u32>,
    /// `--tilingOptimizationLevel` (0–3; 10.8+).
    pub tiling_optimization_level: Option<u32>,
    /// `--maxAuxStreams` (8.6+; 0 = least memory).
    pub max_aux_streams: Option<u32>,
    /// Builder memory pool limits.
    pub mem_pools: Vec<MemPool>,
    /// Write the engine's layer information here, built with detailed profiling verbosity
    /// (`--profilingVerbosity=detailed --exportLayerInfo=F`, 8.2+).
    pub layer_info: Option<PathBuf>,
    /// Build only; do not run inference afterwards (`--skipInference`, `--buildOnly` before 8.6).
    pub skip_inference: bool,
    /// Verbose log (`--verbose`).
    pub verbose: bool,
}

impl BuildRequest {
    /// A build of `onnx` into `engine` with every option at trtexec's default, skipping the
    /// inference that trtexec would otherwise run after building.
    pub fn new(onnx: impl Into<PathBuf>, engine: impl Into<PathBuf>) -> Self {
        Self {
            onnx: onnx.into(),
            engine: engine.into(),
            shapes: BuildShapes::Model,
            precisions: Vec::new(),
            model_is_typed: false,
            strongly_typed: false,
            no_tf32: false,
            timing_cache: None,
            build_route: None,
            builder_optimization_level: None,
            tiling_optimization_level: None,
            max_aux_streams: None,
            mem_pools: Vec::new(),
            layer_info: None,
            skip_inference: true,
            verbose: false,
        }
    }

    /// The trtexec argv (without the program name) for this build on `version`.
    pub fn args(&self, version: &TrtexecVersion) -> Result<Vec<String>> {
        require_drivable(version)?;
        let mut args = vec![
            path_arg("--onnx", &self.onnx)?,
            path_arg("--saveEngine", &self.engine)?,
        ];
        match &self.shapes {
            BuildShapes::Model => {}
            BuildShapes::Static(shapes) => {
                require_some_shapes(shapes, "--shapes")?;
                args.push(format!("--shapes={}", format_shapes(shapes, version)?));
            }
            BuildShapes::Range { min, opt, max } => {
                check_profile(min, opt, max)?;
                args.push(format!("--minShapes={}", format_shapes(min, version)?));
                args.push(format!("--optShapes={}", format_shapes(opt, version)?));
                args.push(format!("--maxShapes={}", format_shapes(max, version)?));
            }
        }
        args.extend(self.precision_args(version)?);
        if self.no_tf32 {
            args.push("--noTF32".into());
        }
        if let Some(cache) = &self.timing_cache {
            if !version.has_timing_cache_file() {
                return Err(unsupported(
                    "a timing cache file",
                    "--timingCacheFile",
                    ">= 8.0",
                    version,
                ));
            }
            args.push(path_arg("--timingCacheFile", cache)?);
        }
        if let Some(route) = &self.build_route {
            args.push(build_route_arg(route, version)?);
        }
        if let Some(level) = self.builder_optimization_level {
            if !version.has_builder_optimization_level() {
                return Err(unsupported(
                    "a builder optimization level",
                    "--builderOptimizationLevel",
                    ">= 8.6",
                    version,
                ));
            }
            if level > 5 {
                return Err(TrtexecError::InvalidRequest(format!(
                    "builder optimization level {level} is out of range; trtexec accepts 0 to 5"
                )));
            }
            args.push(format!("--builderOptimizationLevel={level}"));
        }
        if let Some(level) = self.tiling_optimization_level {
            if !version.has_tiling_optimization_level() {
                return Err(unsupported(
                    "a tiling optimization level",
                    "--tilingOptimizationLevel",
                    ">= 10.8",
                    version,
                ));
            }
            if level > 3 {
                return Err(TrtexecError::InvalidRequest(format!(
                    "tiling optimization level {level} is out of range; trtexec accepts 0 (none) to 3 (full)"
                )));
            }
            args.push(format!("--tilingOptimizationLevel={level}"));
        }
        if let Some(streams) = self.max_aux_streams {
            if !version.has_max_aux_streams() {
                return Err(unsupported(
                    "a limit on auxiliary streams",
                    "--maxAuxStreams",
                    ">= 8.6",
                    version,
                ));
            }
            args.push(format!("--maxAuxStreams={streams}"));
        }
        if let Some(arg) = mem_pool_arg(&self.mem_pools, version)? {
            args.push(arg);
        }
        if let Some(layer_info) = &self.layer_info {
            if !version.has_layer_info_export() {
                return Err(unsupported(
                    "exporting layer information",
                    "--exportLayerInfo",
                    ">= 8.2",
                    version,
                ));
            }
            args.push("--profilingVerbosity=detailed".into());
            args.push(path_arg("--exportLayerInfo", layer_info)?);
        }
        if self.skip_inference {
            args.push(if version.has_skip_inference() {
                "--skipInference".into()
            } else {
                "--buildOnly".into()
            });
        }
        if self.verbose {
            args.push("--verbose".into());
        }
        Ok(args)
    }

    fn precision_args(&self, version: &TrtexecVersion) -> Result<Vec<String>> {
        let mut precisions = self.precisions.clone();
        precisions.sort();
        precisions.dedup();
        if version.strongly_typed_by_default() {
            if !precisions.is_empty() && !self.model_is_typed {
                let flags: Vec<&str> = precisions.iter().map(|p| p.flag()).collect();
                return Err(TrtexecError::StrongTyping {
                    flags: flags.join(" "),
                    found: *version,
                });
            }
            // Strongly typed: the model's types decide; `--stronglyTyped` would be a no-op.
            return Ok(Vec::new());
        }
        if self.strongly_typed {
            if !version.has_strongly_typed_flag() {
                return Err(unsupported(
                    "a strongly typed network",
                    "--stronglyTyped",
                    ">= 9.1",
                    version,
                ));
            }
            if !precisions.is_empty() {
                return Err(TrtexecError::InvalidRequest(
                    "a strongly typed network takes its precision from the model, so precision flags \
                     cannot be combined with --stronglyTyped; drop one of them"
                        .into(),
                ));
            }
            return Ok(vec!["--stronglyTyped".into()]);
        }
        let mut args = Vec::with_capacity(precisions.len());
        for precision in precisions {
            precision.available(version)?;
            args.push(precision.flag().to_string());
        }
        Ok(args)
    }
}

/// Time an engine: `--loadEngine=E --shapes=... --warmUp ... --exportTimes=F` plus the loop
/// behaviour flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeRequest {
    /// The serialized engine.
    pub engine: PathBuf,
    /// Input shapes for engines with dynamic inputs (`--shapes`).
    pub shapes: Vec<TensorShape>,
    /// Warm-up time in ms (`--warmUp`; trtexec default 200).
    pub warm_up_ms: Option<u32>,
    /// Minimum number of queries (`--iterations`; default 10).
    pub iterations: Option<u32>,
    /// Minimum measuring time in s (`--duration`; default 3).
    pub duration_s: Option<u32>,
    /// Queries per "Average on N runs" log line (`--avgRuns`; default 10).
    pub avg_runs: Option<u32>,
    /// CUDA graph, spin-wait and data transfers.
    pub behaviour: InferenceBehaviour,
    /// Write one JSON record per timed query here (`--exportTimes`).
    pub export_times: Option<PathBuf>,
    /// Feed these raw binary files to the named inputs instead of random values (`--loadInputs`).
    pub load_inputs: Vec<(String, PathBuf)>,
    /// Write the outputs of the last query here, in trtexec's JSON (`--exportOutput`).
    pub export_output: Option<PathBuf>,
    /// Verbose log (`--verbose`).
    pub verbose: bool,
}

impl TimeRequest {
    /// Timing of `engine` with trtexec's default durations and [`InferenceBehaviour::default`].
    pub fn new(engine: impl Into<PathBuf>) -> Self {
        Self {
            engine: engine.into(),
            shapes: Vec::new(),
            warm_up_ms: None,
            iterations: None,
            duration_s: None,
            avg_runs: None,
            behaviour: InferenceBehaviour::default(),
            export_times: None,
            load_inputs: Vec::new(),
            export_output: None,
            verbose: false,
        }
    }

    /// The trtexec argv (without the program name) for this timing run on `version`.
    pub fn args(&self, version: &TrtexecVersion) -> Result<Vec<String>> {
        require_drivable(version)?;
        let mut args = vec![path_arg("--loadEngine", &self.engine)?];
        if !self.shapes.is_empty() {
            args.push(format!(
                "--shapes={}",
                format_shapes(&self.shapes, version)?
            ));
        }
        if self.avg_runs == Some(0) {
            return Err(TrtexecError::InvalidRequest(
                "avg_runs (--avgRuns) must be at least 1".into(),
            ));
        }
        args.extend(loop_args(
            self.warm_up_ms,
            self.iterations,
            self.duration_s,
            self.avg_runs,
        ));
        args.extend(self.behaviour.args(version));
        if let Some(times) = &self.export_times {
            args.push(path_arg("--exportTimes", times)?);
        }
        if !self.load_inputs.is_empty() {
            args.push(load_inputs_arg(&self.load_inputs)?);
        }
        if let Some(output) = &self.export_output {
            args.push(path_arg("--exportOutput", output)?);
        }
        if self.verbose {
            args.push("--verbose".into());
        }
        Ok(args)
    }
}

/// `--loadInputs=name:file,...`: trtexec splits the list at `,` and each item at its last `:`, so
/// neither a name nor a path may contain `,`, and a path may not contain `:`.
fn load_inputs_arg(inputs: &[(String, PathBuf)]) -> Result<String> {
    let mut items = Vec::with_capacity(inputs.len());
    for (name, file) in inputs {
        let path = file.to_str().ok_or_else(|| {
            TrtexecError::InvalidRequest(format!(
                "input file {} is not valid UTF-8, which trtexec's --loadInputs cannot take",
                file.display()
            ))
        })?;
        if name.is_empty() || name.contains(',') || path.contains([',', ':']) {
            return Err(TrtexecError::InvalidRequest(format!(
                "--loadInputs cannot express input `{name}` from {path}: names may not contain ',' \
                 and paths neither ',' nor ':'"
            )));
        }
        items.push(format!("{name}:{path}"));
    }
    Ok(format!("--loadInputs={}", items.join(",")))
}

/// Profile an engine per layer: `--loadEngine=E --exportProfile=F [--exportLayerInfo=F]`, with the
/// profiled queries kept out of the timed ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRequest {
    /// The serialized engine.
    pub engine: PathBuf,
    /// Input shapes for engines with dynamic inputs (`--shapes`).
    pub shapes: Vec<TensorShape>,
    /// Warm-up time in ms (`--warmUp`).
    pub warm_up_ms: Option<u32>,
    /// Minimum number of queries (`--iterations`).
    pub iterations: Option<u32>,
    /// Minimum measuring time in s (`--duration`).
    pub duration_s: Option<u32>,
    /// CUDA graph, spin-wait and data transfers for the timed part.
    pub behaviour: InferenceBehaviour,
    /// Per-layer times as JSON (`--exportProfile`).
    pub export_profile: PathBuf,
    /// Layer information as JSON (`--exportLayerInfo`; detailed only if the engine was built with
    /// `--profilingVerbosity=detailed`).
    pub export_layer_info: Option<PathBuf>,
    /// Per-query times of the timed run (`--exportTimes`).
    pub export_times: Option<PathBuf>,
    /// Also print the per-layer table in the log (`--dumpProfile`).
    pub dump_profile: bool,
    /// Profile in a second run so that the timed run and its performance summary are not
    /// perturbed by the profiler (`--separateProfileRun` before 11.0; always so from 11.0).
    pub separate_profile_run: bool,
    /// Verbose log (`--verbose`).
    pub verbose: bool,
}

impl ProfileRequest {
    /// A profile of `engine` written to `export_profile`, in a separate run.
    pub fn new(engine: impl Into<PathBuf>, export_profile: impl Into<PathBuf>) -> Self {
        Self {
            engine: engine.into(),
            shapes: Vec::new(),
            warm_up_ms: None,
            iterations: None,
            duration_s: None,
            behaviour: InferenceBehaviour::default(),
            export_profile: export_profile.into(),
            export_layer_info: None,
            export_times: None,
            dump_profile: false,
            separate_profile_run: true,
            verbose: false,
        }
    }

    /// The trtexec argv (without the program name) for this profiling run on `version`.
    pub fn args(&self, version: &TrtexecVersion) -> Result<Vec<String>> {
        require_drivable(version)?;
        let mut args = vec![path_arg("--loadEngine", &self.engine)?];
        if !self.shapes.is_empty() {
            args.push(format!(
                "--shapes={}",
                format_shapes(&self.shapes, version)?
            ));
        }
        args.extend(loop_args(
            self.warm_up_ms,
            self.iterations,
            self.duration_s,
            None,
        ));
        args.extend(self.behaviour.args(version));
        if self.separate_profile_run {
            if !version.always_separates_profile_run() {
                args.push("--separateProfileRun".into());
            }
        } else if version.always_separates_profile_run() {
            return Err(unsupported(
                "profiling inside the timed run",
                "(no --separateProfileRun)",
                "< 11.0",
                version,
            ));
        }
        args.push(path_arg("--exportProfile", &self.export_profile)?);
        if let Some(layer_info) = &self.export_layer_info {
            if !version.has_layer_info_export() {
                return Err(unsupported(
                    "exporting layer information",
                    "--exportLayerInfo",
                    ">= 8.2",
                    version,
                ));
            }
            args.push(path_arg("--exportLayerInfo", layer_info)?);
        }
        if let Some(times) = &self.export_times {
            args.push(path_arg("--exportTimes", times)?);
        }
        if self.dump_profile {
            args.push("--dumpProfile".into());
        }
        if self.verbose {
            args.push("--verbose".into());
        }
        Ok(args)
    }
}

/// `--helpBuildRoute`: print the Global Performance Tuner's knob database (11.1+).
pub fn help_build_route_args(version: &TrtexecVersion) -> Result<Vec<String>> {
    if !version.has_build_routes() {
        return Err(unsupported(
            "the build-route knob database",
            "--helpBuildRoute",
            ">= 11.1",
            version,
        ));
    }
    Ok(vec!["--helpBuildRoute".into()])
}

fn require_drivable(version: &TrtexecVersion) -> Result<()> {
    if version.is_drivable() {
        return Ok(());
    }
    Err(unsupported("driving trtexec", "trtexec", ">= 8.0", version))
}

fn unsupported(
    what: &'static str,
    flag: &'static str,
    needs: &'static str,
    version: &TrtexecVersion,
) -> TrtexecError {
    TrtexecError::Unsupported {
        what,
        flag,
        needs,
        found: *version,
        hint: "Drop the option or point --trtexec at a TensorRT release that has it.",
    }
}

fn path_arg(flag: &str, path: &Path) -> Result<String> {
    let Some(text) = path.to_str() else {
        return Err(TrtexecError::InvalidRequest(format!(
            "the path for {flag} is not valid UTF-8 ({}); trtexec takes paths as text, so use a \
             UTF-8 path",
            path.display()
        )));
    };
    if text.is_empty() {
        return Err(TrtexecError::InvalidRequest(format!(
            "the path for {flag} is empty"
        )));
    }
    Ok(format!("{flag}={text}"))
}

fn require_some_shapes(shapes: &[TensorShape], flag: &str) -> Result<()> {
    if shapes.is_empty() {
        return Err(TrtexecError::InvalidRequest(format!(
            "{flag} needs at least one tensor shape; use BuildShapes::Model to keep the model's shapes"
        )));
    }
    Ok(())
}

fn check_profile(min: &[TensorShape], opt: &[TensorShape], max: &[TensorShape]) -> Result<()> {
    require_some_shapes(min, "--minShapes")?;
    let names = |list: &[TensorShape]| list.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    if names(min) != names(opt) || names(min) != names(max) {
        return Err(TrtexecError::InvalidRequest(format!(
            "min/opt/max shapes must name the same tensors in the same order (min: {:?}, opt: {:?}, max: {:?})",
            names(min),
            names(opt),
            names(max)
        )));
    }
    for ((lo, mid), hi) in min.iter().zip(opt).zip(max) {
        let ordered = lo.dims.len() == mid.dims.len()
            && mid.dims.len() == hi.dims.len()
            && lo
                .dims
                .iter()
                .zip(&mid.dims)
                .zip(&hi.dims)
                .all(|((a, b), c)| a <= b && b <= c);
        if !ordered {
            return Err(TrtexecError::InvalidRequest(format!(
                "shapes of {:?} must have the same rank and satisfy min <= opt <= max in every dimension \
                 (min {:?}, opt {:?}, max {:?})",
                lo.name, lo.dims, mid.dims, hi.dims
            )));
        }
    }
    Ok(())
}

fn build_route_arg(route: &str, version: &TrtexecVersion) -> Result<String> {
    if !version.has_build_routes() {
        return Err(unsupported(
            "a build route",
            "--setBuildRoute",
            ">= 11.1",
            version,
        ));
    }
    let route = route.trim();
    if route.is_empty() || route.contains(['\n', '\r']) {
        return Err(TrtexecError::InvalidRequest(format!(
            "build route {route:?} must be one line of space-separated -knob=value tokens"
        )));
    }
    let tokens: Vec<&str> = route.split_whitespace().collect();
    if let Some(token) = tokens
        .iter()
        .find(|t| !t.starts_with('-') || !t.contains('='))
    {
        return Err(TrtexecError::InvalidRequest(format!(
            "build route token {token:?} is not of the form -knob=value"
        )));
    }
    // One space between tokens: the compiler parses each knob as a separate option.
    Ok(format!("--setBuildRoute={}", tokens.join(" ")))
}

fn mem_pool_arg(pools: &[MemPool], version: &TrtexecVersion) -> Result<Option<String>> {
    if pools.is_empty() {
        return Ok(None);
    }
    for pool in pools {
        if !pool.mib.is_finite() || pool.mib < 0.0 {
            return Err(TrtexecError::InvalidRequest(format!(
                "memory pool {} size {} MiB must be a finite, non-negative number",
                pool.pool.trtexec_name(),
                pool.mib
            )));
        }
    }
    if !version.has_mem_pool_size() {
        return match pools {
            [
                MemPool {
                    pool: MemPoolKind::Workspace,
                    mib,
                },
            ] => Ok(Some(format!("--workspace={mib}"))),
            _ => Err(unsupported(
                "memory pools other than the workspace",
                "--memPoolSize",
                ">= 8.4",
                version,
            )),
        };
    }
    let mut items = Vec::with_capacity(pools.len());
    for pool in pools {
        if pool.pool == MemPoolKind::TacticSharedMem && version.major < 10 {
            return Err(unsupported(
                "the tactic shared memory pool",
                "--memPoolSize=tacticSharedMem:N",
                ">= 10.0",
                version,
            ));
        }
        items.push(format!("{}:{}", pool.pool.trtexec_name(), pool.mib));
    }
    Ok(Some(format!("--memPoolSize={}", items.join(","))))
}

fn loop_args(
    warm_up_ms: Option<u32>,
    iterations: Option<u32>,
    duration_s: Option<u32>,
    avg_runs: Option<u32>,
) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(ms) = warm_up_ms {
        args.push(format!("--warmUp={ms}"));
    }
    if let Some(n) = iterations {
        args.push(format!("--iterations={n}"));
    }
    if let Some(s) = duration_s {
        args.push(format!("--duration={s}"));
    }
    if let Some(n) = avg_runs {
        args.push(format!("--avgRuns={n}"));
    }
    args
}
