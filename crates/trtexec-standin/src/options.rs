//! trtexec's command line as the simulator reads it: every argument is `--flag` or
//! `--flag=value` (split at the first `=`), checked against the flags the simulated release
//! knows, then read into [`Options`].

use std::path::PathBuf;

use crate::version::SimVersion;

/// A flag's value the simulated trtexec refuses, as its `[E]` line says it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    /// A file flag without a file name.
    #[error("{flag} needs a file name: {flag}=<file>")]
    NeedsFile { flag: String },
    /// A value of the wrong kind or out of range; `expected` says what the flag takes, when known.
    #[error("Invalid value for {flag}: {value:?}{}", expected.as_deref().map(|e| format!(" ({e})")).unwrap_or_default())]
    InvalidValue {
        flag: String,
        value: String,
        expected: Option<String>,
    },
    /// A `--loadInputs` item that is not `name:file`.
    #[error("Invalid --loadInputs item {item:?}: expected name:file")]
    LoadInputsItem { item: String },
    /// A shape item that is not `name:AxBxC`.
    #[error("Invalid shape {item:?} in {flag}: expected name:AxBxC (or name:scalar)")]
    Shape { item: String, flag: String },
}

impl OptionError {
    fn invalid(flag: &str, value: &str, expected: Option<String>) -> Self {
        OptionError::InvalidValue {
            flag: flag.to_string(),
            value: value.to_string(),
            expected,
        }
    }
}

/// How a flag fares on a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Availability {
    Known,
    /// Accepted, does nothing, and says so with a `[W]` line.
    Deprecated(&'static str),
    Unknown,
}

/// Every flag the simulator knows, with when it exists.
fn availability(flag: &str, v: &SimVersion) -> Availability {
    use Availability::*;
    let routes = if v.has_build_routes() { Known } else { Unknown };
    let before_11 = if v.strongly_typed() { Unknown } else { Known };
    let from_11 = if v.inverted_inference_defaults() {
        Known
    } else {
        Unknown
    };
    let opt_in_10 = |what: &'static str| {
        if v.inverted_inference_defaults() {
            Deprecated(what)
        } else {
            Known
        }
    };
    match flag {
        "--onnx"
        | "--saveEngine"
        | "--loadEngine"
        | "--shapes"
        | "--minShapes"
        | "--optShapes"
        | "--maxShapes"
        | "--noTF32"
        | "--builderOptimizationLevel"
        | "--maxAuxStreams"
        | "--maxTactics"
        | "--avgTiming"
        | "--memPoolSize"
        | "--timingCacheFile"
        | "--profilingVerbosity"
        | "--exportLayerInfo"
        | "--dumpLayerInfo"
        | "--skipInference"
        | "--verbose"
        | "--device"
        | "--warmUp"
        | "--iterations"
        | "--duration"
        | "--avgRuns"
        | "--percentile"
        | "--exportTimes"
        | "--exportProfile"
        | "--exportOutput"
        | "--dumpProfile"
        | "--loadInputs" => Known,
        "--tilingOptimizationLevel" => {
            if v.has_tiling_optimization_level() {
                Known
            } else {
                Unknown
            }
        }
        "--setBuildRoute" | "--helpBuildRoute" => routes,
        "--fp16" | "--bf16" | "--int8" | "--fp8" | "--best" => before_11,
        "--int4" => {
            if v.has_int4() {
                Known
            } else {
                Unknown
            }
        }
        "--stronglyTyped" => {
            if v.strongly_typed() {
                Deprecated("Strongly typed network is now enabled by default")
            } else {
                Known
            }
        }
        "--noCudaGraph" | "--noSpinWait" | "--includeDataTransfers" => from_11,
        "--useCudaGraph" => opt_in_10("CUDA graph is now enabled by default"),
        "--useSpinWait" => opt_in_10("Spin-wait is now enabled by default"),
        "--noDataTransfers" => opt_in_10("Data transfers are now disabled by default"),
        "--separateProfileRun" => opt_in_10("Separate profile run is now always enabled"),
        _ => Unknown,
    }
}

/// The flags that change the engine: they become tokens (with the route's knobs) and so feed the
/// latency model, the fault table and the noise seed.
const ENGINE_FLAGS: &[&str] = &[
    "--fp16",
    "--bf16",
    "--int8",
    "--fp8",
    "--int4",
    "--best",
    "--stronglyTyped",
    "--noTF32",
    "--builderOptimizationLevel",
    "--tilingOptimizationLevel",
    "--maxAuxStreams",
    "--maxTactics",
];

/// One tensor shape of `--shapes` and friends; `dims` empty for `name:scalar`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeSpec {
    pub name: String,
    pub dims: Vec<usize>,
}

/// The command line, read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Flag/value pairs in argv order (value empty for bare flags).
    pub pairs: Vec<(String, String)>,
    pub help: bool,
    /// `--helpBuildRoute`, with the knob it was given (`Some("")` when none).
    pub help_build_route: Option<String>,
    pub onnx: Option<PathBuf>,
    pub save_engine: Option<PathBuf>,
    pub load_engine: Option<PathBuf>,
    pub shapes: Vec<ShapeSpec>,
    pub min_shapes: Vec<ShapeSpec>,
    pub opt_shapes: Vec<ShapeSpec>,
    pub max_shapes: Vec<ShapeSpec>,
    pub route: Option<String>,
    /// Engine tokens from build flags (`--fp16`, `--builderOptimizationLevel=5`, ...).
    pub flag_tokens: Vec<String>,
    pub timing_cache: Option<PathBuf>,
    pub detailed: bool,
    pub profiling_verbosity: Option<String>,
    pub export_layer_info: Option<PathBuf>,
    pub skip_inference: bool,
    pub verbose: bool,
    pub warm_up_ms: f64,
    pub iterations: u64,
    pub duration_s: f64,
    pub avg_runs: u64,
    pub percentiles: Vec<f64>,
    pub export_times: Option<PathBuf>,
    pub export_profile: Option<PathBuf>,
    pub export_output: Option<PathBuf>,
    pub dump_profile: bool,
    pub separate_profile_run: bool,
    pub load_inputs: Vec<(String, PathBuf)>,
    pub cuda_graph: bool,
    pub spin_wait: bool,
    pub data_transfers: bool,
    /// `[W]` lines to print once the run has started (deprecated no-op flags).
    pub warnings: Vec<String>,
}

impl Options {
    /// Reads `args` for release `v`; on failure, trtexec-style `[E]` messages.
    pub fn parse(args: &[String], v: &SimVersion) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut o = Options {
            warm_up_ms: 200.0,
            iterations: 10,
            duration_s: 3.0,
            avg_runs: 10,
            percentiles: vec![90.0, 95.0, 99.0],
            cuda_graph: v.inverted_inference_defaults(),
            spin_wait: v.inverted_inference_defaults(),
            data_transfers: !v.inverted_inference_defaults(),
            ..Options::default()
        };
        for arg in args {
            if arg == "-h" || arg == "--help" {
                o.help = true;
                continue;
            }
            let (flag, value) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_string(), value.to_string()),
                None => (arg.clone(), String::new()),
            };
            match availability(&flag, v) {
                Availability::Unknown => errors.push(format!("Unknown option: {flag}")),
                Availability::Deprecated(why) => o.warnings.push(format!(
                    "{flag} is deprecated: {why}. This flag is a no-op."
                )),
                Availability::Known => o.pairs.push((flag, value)),
            }
        }
        if o.help {
            return Ok(o);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let pairs = o.pairs.clone();
        for (flag, value) in &pairs {
            if let Err(e) = o.apply(flag, value) {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(o)
        } else {
            Err(errors)
        }
    }

    fn apply(&mut self, flag: &str, value: &str) -> Result<(), OptionError> {
        let path = || -> Result<PathBuf, OptionError> {
            if value.is_empty() {
                Err(OptionError::NeedsFile {
                    flag: flag.to_string(),
                })
            } else {
                Ok(PathBuf::from(value))
            }
        };
        if ENGINE_FLAGS.contains(&flag) {
            let token = match flag {
                "--builderOptimizationLevel" => {
                    format!("{flag}={}", int_in(flag, value, 0, 5)?)
                }
                "--tilingOptimizationLevel" => format!("{flag}={}", int_in(flag, value, 0, 3)?),
                "--maxAuxStreams" => format!("{flag}={}", int_in(flag, value, -1, 1024)?),
                "--maxTactics" => format!("{flag}={}", int_in(flag, value, -1, i64::MAX)?),
                _ => flag.to_string(),
            };
            if !self.flag_tokens.contains(&token) {
                self.flag_tokens.push(token);
            }
            return Ok(());
        }
        match flag {
            "--onnx" => self.onnx = Some(path()?),
            "--saveEngine" => self.save_engine = Some(path()?),
            "--loadEngine" => self.load_engine = Some(path()?),
            "--timingCacheFile" => self.timing_cache = Some(path()?),
            "--exportLayerInfo" => self.export_layer_info = Some(path()?),
            "--exportTimes" => self.export_times = Some(path()?),
            "--exportProfile" => self.export_profile = Some(path()?),
            "--exportOutput" => self.export_output = Some(path()?),
            "--shapes" => self.shapes = parse_shapes(flag, value)?,
            "--minShapes" => self.min_shapes = parse_shapes(flag, value)?,
            "--optShapes" => self.opt_shapes = parse_shapes(flag, value)?,
            "--maxShapes" => self.max_shapes = parse_shapes(flag, value)?,
            "--setBuildRoute" => self.route = Some(value.to_string()),
            "--helpBuildRoute" => self.help_build_route = Some(value.to_string()),
            "--profilingVerbosity" => match value {
                "layer_names_only" | "detailed" | "none" => {
                    self.detailed = value == "detailed";
                    self.profiling_verbosity = Some(value.to_string());
                }
                _ => {
                    return Err(OptionError::invalid(
                        flag,
                        value,
                        Some("layer_names_only|detailed|none".into()),
                    ));
                }
            },
            "--skipInference" => self.skip_inference = true,
            "--verbose" => self.verbose = true,
            "--dumpProfile" => self.dump_profile = true,
            "--separateProfileRun" => self.separate_profile_run = true,
            "--warmUp" => self.warm_up_ms = number(flag, value, 0.0)?,
            "--duration" => {
                let seconds: f64 = value
                    .parse()
                    .ok()
                    .filter(|d: &f64| d.is_finite())
                    .ok_or_else(|| OptionError::invalid(flag, value, None))?;
                if seconds < 0.0 {
                    self.warnings.push(format!(
                        "--duration={value} (run until stopped) is not simulated; the run times --iterations queries"
                    ));
                }
                self.duration_s = seconds.max(0.0);
            }
            "--iterations" => self.iterations = positive(flag, value)?,
            "--avgRuns" => self.avg_runs = positive(flag, value)?,
            "--percentile" => {
                let list: Option<Vec<f64>> = value
                    .split(',')
                    .map(|p| {
                        p.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|p| (0.0..=100.0).contains(p))
                    })
                    .collect();
                self.percentiles = list.ok_or_else(|| {
                    OptionError::invalid(
                        flag,
                        value,
                        Some("numbers in 0..100, comma separated".into()),
                    )
                })?;
            }
            "--loadInputs" => {
                for item in value.split(',').filter(|i| !i.is_empty()) {
                    let bad = || OptionError::LoadInputsItem {
                        item: item.to_string(),
                    };
                    let (name, file) = item.rsplit_once(':').ok_or_else(bad)?;
                    if name.is_empty() || file.is_empty() {
                        return Err(bad());
                    }
                    self.load_inputs
                        .push((name.to_string(), PathBuf::from(file)));
                }
            }
            "--useCudaGraph" => self.cuda_graph = true,
            "--noCudaGraph" => self.cuda_graph = false,
            "--useSpinWait" => self.spin_wait = true,
            "--noSpinWait" => self.spin_wait = false,
            "--noDataTransfers" => self.data_transfers = false,
            "--includeDataTransfers" => self.data_transfers = true,
            // Accepted; they change nothing the simulator models.
            _ => {}
        }
        Ok(())
    }

    /// The engine tokens: the route's knobs (in route order) then the build flags (argv order).
    pub fn tokens(&self, route_tokens: &[String]) -> Vec<String> {
        route_tokens
            .iter()
            .chain(&self.flag_tokens)
            .cloned()
            .collect()
    }
}

fn int_in(flag: &str, value: &str, min: i64, max: i64) -> Result<i64, OptionError> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            OptionError::invalid(flag, value, Some(format!("an integer from {min} to {max}")))
        })
}

fn positive(flag: &str, value: &str) -> Result<u64, OptionError> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| OptionError::invalid(flag, value, Some("a positive integer".into())))
}

fn number(flag: &str, value: &str, min: f64) -> Result<f64, OptionError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= min)
        .ok_or_else(|| OptionError::invalid(flag, value, Some(format!("a number >= {min}"))))
}

/// `name:AxBxC,name2:scalar`: items split at `,`, each at its last `:`.
pub fn parse_shapes(flag: &str, value: &str) -> Result<Vec<ShapeSpec>, OptionError> {
    let bad = |item: &str| OptionError::Shape {
        item: item.to_string(),
        flag: flag.to_string(),
    };
    let mut shapes = Vec::new();
    for item in value.split(',').filter(|i| !i.trim().is_empty()) {
        let (name, dims) = item.rsplit_once(':').ok_or_else(|| bad(item))?;
        let name = name.trim().trim_matches('\'');
        if name.is_empty() {
            return Err(bad(item));
        }
        let dims = if dims.is_empty() || dims == "scalar" {
            Vec::new()
        } else {
            dims.split('x')
                .map(|d| d.trim().parse::<usize>().ok())
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| bad(item))?
        };
        shapes.retain(|s: &ShapeSpec| s.name != name);
        shapes.push(ShapeSpec {
            name: name.to_string(),
            dims,
        });
    }
    Ok(shapes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(encoded: u64) -> SimVersion {
        SimVersion::from_encoded(encoded).expect("version")
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_split_at_the_first_equals_sign() {
        let o = Options::parse(
            &args(&[
                "--onnx=m.onnx",
                "--setBuildRoute=-conv_lowering=off -kgen:tiling=2",
                "--shapes=x:1x3x28x28,ids:scalar",
                "--builderOptimizationLevel=05",
            ]),
            &v(110_100),
        )
        .expect("valid");
        assert_eq!(o.onnx, Some(PathBuf::from("m.onnx")));
        assert_eq!(
            o.route.as_deref(),
            Some("-conv_lowering=off -kgen:tiling=2")
        );
        assert_eq!(o.shapes[0].dims, vec![1, 3, 28, 28]);
        assert!(o.shapes[1].dims.is_empty());
        assert_eq!(o.flag_tokens, vec!["--builderOptimizationLevel=5"]);
        assert!(o.cuda_graph && o.spin_wait && !o.data_transfers);
    }

    #[test]
    fn each_release_knows_its_own_flags() {
        let err = Options::parse(&args(&["--fp16", "--useCudaGraph"]), &v(110_100))
            .expect_err("fp16 on 11.1");
        assert_eq!(err, vec!["Unknown option: --fp16"]);
        let o = Options::parse(&args(&["--useCudaGraph"]), &v(110_100)).expect("deprecated");
        assert_eq!(o.warnings.len(), 1);
        let err = Options::parse(
            &args(&["--setBuildRoute=-a=1", "--noCudaGraph", "--helpBuildRoute"]),
            &v(101_601),
        )
        .expect_err("11.x flags on 10.16");
        assert_eq!(err.len(), 3);
        let o =
            Options::parse(&args(&["--fp16", "--noDataTransfers"]), &v(101_601)).expect("10.16");
        assert_eq!(o.flag_tokens, vec!["--fp16"]);
        assert!(!o.data_transfers && !o.cuda_graph);
        assert!(Options::parse(&args(&["--tilingOptimizationLevel=3"]), &v(100_700)).is_err());
    }

    #[test]
    fn values_are_checked() {
        let bad = |list: &[&str]| Options::parse(&args(list), &v(101_601)).is_err();
        assert!(bad(&["--builderOptimizationLevel=6"]));
        assert!(bad(&["--iterations=0"]));
        assert!(bad(&["--warmUp=-1"]));
        assert!(bad(&["--shapes=x:1xa"]));
        assert!(bad(&["--profilingVerbosity=loud"]));
        assert!(bad(&["--loadInputs=nofile"]));
        assert!(bad(&["--percentile=101"]));
        assert!(bad(&["--onnx"]));
        let o = Options::parse(
            &args(&["--loadInputs=x:a.raw,y:b.raw", "--percentile=50,99.9"]),
            &v(101_601),
        )
        .expect("valid");
        assert_eq!(o.load_inputs.len(), 2);
        assert_eq!(o.percentiles, vec![50.0, 99.9]);
    }
}
