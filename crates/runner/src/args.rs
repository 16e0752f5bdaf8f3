//! The arguments of `trtmc-bench run` as a library value: the CLI parses them, and the matrix and
//! `tune`'s `run it:` line build one and turn it back into a command line with
//! [`RunArgs::to_argv`], so no flag name is typed as a string outside this file.
//!
//! What a run measures lives here; how its outcome is shown (`--quiet`, `--format`, `--export`, the CI
//! signals, `--history`) belongs to the CLI's `run` command, which flattens this struct.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, FromArgMatches};

use crate::numbers;

/// When `run` samples telemetry (`--telemetry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TelemetryMode {
    /// Sample when a GPU (nvidia-smi) is present.
    #[default]
    Auto,
    /// Always sample; without nvidia-smi, CPU, memory and clocks only.
    On,
    /// Never sample.
    Off,
}

impl TelemetryMode {
    /// The value `--telemetry` takes for this mode.
    fn name(self) -> &'static str {
        match self {
            TelemetryMode::Auto => "auto",
            TelemetryMode::On => "on",
            TelemetryMode::Off => "off",
        }
    }
}

/// What `trtmc-bench run` measures and where: models, cases, overrides, counts, bundles, output.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct RunArgs {
    /// A plan file (YAML) listing models with their cases, counts and overrides.
    #[arg(value_name = "PLAN.yaml")]
    pub plan: Option<PathBuf>,
    /// Catalog model to run; repeat to run a batch (each missing bundle is built once).
    #[arg(short, long = "model", value_name = "NAME")]
    pub models: Vec<String>,
    /// Benchmark any ONNX file without a catalog entry (inputs synthesized from its declared shapes);
    /// repeat to compare several files.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["models", "plan"])]
    pub onnx: Vec<PathBuf>,
    /// Shape of a dynamic input, trtexec style: NAME:1x3x224x224 (repeatable). A dynamic dimension
    /// neither this nor --inputs sets is 1.
    #[arg(long = "shape", value_name = "NAME:DIMS")]
    pub shapes: Vec<String>,
    /// Feed this data instead of synthesized inputs: an .npz, a folder of NAME.npy or of ONNX
    /// input_N.pb files (a folder of test_data_set_* folders: one set each), or trtexec's
    /// name:file.bin list. Repeat for several sets; the calls rotate over them.
    #[arg(long = "inputs", value_name = "PATH")]
    pub inputs: Vec<String>,
    /// Check the outputs of each --inputs set against these (same formats, output_N.pb in ONNX test
    /// folders); a mismatch fails the case (exit 5).
    #[arg(long = "check-outputs", value_name = "PATH", requires = "inputs")]
    pub check_outputs: Vec<String>,
    /// Absolute tolerance of --check-outputs (Polygraphy's meaning: an element fails when it is beyond
    /// both --atol and --rtol).
    #[arg(long, value_name = "X", requires = "check_outputs", default_value_t = trtmc_core::data::DEFAULT_ATOL)]
    pub atol: f64,
    /// Relative tolerance of --check-outputs, against |expected|.
    #[arg(long, value_name = "X", requires = "check_outputs", default_value_t = trtmc_core::data::DEFAULT_RTOL)]
    pub rtol: f64,
    /// Refuse a case whose inputs and outputs would take more than this many GiB (estimated from their
    /// shapes before any build or worker; default 16).
    #[arg(long, value_name = "GIB", value_parser = numbers::positive_gib)]
    pub max_tensor_memory_gib: Option<f64>,
    /// Named case to run (repeatable; cases are independent runs, never combined).
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Override a field: request.KEY=V, build.KEY=V, runtime.KEY=V (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Sweep a field over values; several sweeps form a Cartesian product: KEY=A,B,C.
    #[arg(long = "sweep", value_name = "KEY=V1,V2")]
    pub sweeps: Vec<String>,
    /// Runtime to use instead of the profile's runtime_strategy; repeat to run every case on each
    /// runtime (e.g. --runtime tract --runtime onnxruntime).
    #[arg(long = "runtime", value_name = "NAME")]
    pub runtimes: Vec<String>,
    /// Split each case's measurement into N rounds, one worker process per case per round, the cases
    /// interleaved (A B, B A, …), and compare every case with the baseline over the paired rounds
    /// (default: 10 when there is more than one case, else 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::count_usize)]
    pub rounds: Option<usize>,
    /// The most rounds to measure while a verdict is undecided: after the first block (--rounds), rounds
    /// are added on a fixed schedule of looks until every verdict is decided or a case's --max-duration
    /// would be spent (default: 30 when --rounds is not given, else --rounds: an explicit count is exact).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::count_usize)]
    pub max_rounds: Option<usize>,
    /// The case the others are compared with: its number in the summary (default 1, the first, and then
    /// only cases of its workload get a verdict; given, every case is compared with it).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::count_usize)]
    pub baseline: Option<usize>,
    /// Warm-up calls before timing (default: the operation's, e.g. 5 for generation, 50 for encoders,
    /// cut short once they take a fifth of the time budget).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::count)]
    pub warmup: Option<u64>,
    /// Timed calls, exactly (default: at least the operation's count, e.g. 50 for generation, 500 for
    /// encoders, for at least 1 s, within the time budget).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::count)]
    pub iterations: Option<u64>,
    /// Keep timing until at least this many seconds have passed (and --iterations calls are done).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// Time budget of each case's timed loop: it stops here even before --iterations calls, keeping
    /// what it timed (default: the operation's budget, e.g. 30 s, when --iterations is not given).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub max_duration: Option<f64>,
    /// Stop a case's worker after this many seconds (default 600); the calls it timed are kept and the
    /// case is recorded as interrupted.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// Result directory; replaced only if empty or a previous trtmc result (default: a new timestamped one).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Use this bundle directory as is (reported as not compatibility-verified).
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// Directory searched for a bundle with a matching cache key (repeatable).
    #[arg(long = "bundle-root", value_name = "PATH")]
    pub bundle_roots: Vec<PathBuf>,
    /// Managed bundle cache (default: <user cache dir>/trtmc/bundles).
    #[arg(long, value_name = "PATH")]
    pub bundle_cache: Option<PathBuf>,
    /// Fail instead of building when no bundle exists.
    #[arg(long, conflicts_with = "rebuild")]
    pub no_build: bool,
    /// Rebuild the managed-cache bundle even if a compatible one exists (a match below --bundle-root is
    /// not used then).
    #[arg(long, conflicts_with = "bundle")]
    pub rebuild: bool,
    /// Print the resolved plan and bundle paths without building or loading anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Worker executable (default: this program in worker mode).
    #[arg(long, value_name = "PATH")]
    pub worker: Option<PathBuf>,
    /// Sample CPU, memory, clocks (and nvidia-smi) outside the timed calls into telemetry.json.
    #[arg(long, value_enum, default_value = "auto")]
    pub telemetry: TelemetryMode,
    /// Catalog root holding MODEL.toml files.
    #[arg(long, value_name = "PATH")]
    pub manifest_root: Option<PathBuf>,
    /// After each case's timed run, a separate per-layer profiling pass writing layers_<runtime>.json and
    /// profile_<runtime>.json (trtexec's export shapes, read by `analyze`) into the case directory.
    #[arg(long)]
    pub profile: bool,
    /// Operation calls of the profiling pass (after the case's warm-up calls).
    #[arg(long, value_name = "N", default_value_t = crate::run::DEFAULT_PROFILE_ITERATIONS, requires = "profile", allow_negative_numbers = true, value_parser = numbers::count)]
    pub profile_iterations: u64,
    /// The trtexec executable of the tensorrt runtime (default: trtexec on PATH, then /usr/src/tensorrt/bin).
    #[arg(long, value_name = "PATH")]
    pub trtexec: Option<PathBuf>,
    /// A folder searched for runtime libraries and tools (libonnxruntime, trtexec, TensorRT's libraries)
    /// before the default places; repeatable, in search order. Recorded in result.json's provenance.
    #[arg(long = "runtime-dir", value_name = "PATH")]
    pub runtime_dirs: Vec<PathBuf>,
    /// Hidden: standard input is a pipe the orchestrator (the matrix) holds open; its end stops the
    /// run as SIGTERM does, so a killed orchestrator leaves no run behind.
    #[arg(long, hide = true)]
    pub parent_pipe: bool,
}

impl Default for RunArgs {
    /// The value of `run` given no argument: clap's defaults, written out (a test holds the two equal).
    fn default() -> Self {
        RunArgs {
            plan: None,
            models: Vec::new(),
            onnx: Vec::new(),
            shapes: Vec::new(),
            inputs: Vec::new(),
            check_outputs: Vec::new(),
            atol: trtmc_core::data::DEFAULT_ATOL,
            rtol: trtmc_core::data::DEFAULT_RTOL,
            max_tensor_memory_gib: None,
            cases: Vec::new(),
            sets: Vec::new(),
            sweeps: Vec::new(),
            runtimes: Vec::new(),
            rounds: None,
            max_rounds: None,
            baseline: None,
            warmup: None,
            iterations: None,
            duration: None,
            max_duration: None,
            timeout: None,
            output: None,
            bundle: None,
            bundle_roots: Vec::new(),
            bundle_cache: None,
            no_build: false,
            rebuild: false,
            dry_run: false,
            worker: None,
            telemetry: TelemetryMode::Auto,
            manifest_root: None,
            profile: false,
            profile_iterations: crate::run::DEFAULT_PROFILE_ITERATIONS,
            trtexec: None,
            runtime_dirs: Vec::new(),
            parent_pipe: false,
        }
    }
}

/// A command line being written: each flag with its value as one more pair of words.
struct Argv(Vec<String>);

impl Argv {
    /// `--flag value`; `--flag=value` when the value starts with `-`, so it is never read as a flag.
    fn value(&mut self, flag: &str, value: impl ToString) {
        let value = value.to_string();
        if value.starts_with('-') {
            self.0.push(format!("{flag}={value}"));
        } else {
            self.0.push(flag.to_string());
            self.0.push(value);
        }
    }

    fn option(&mut self, flag: &str, value: Option<impl ToString>) {
        if let Some(value) = value {
            self.value(flag, value);
        }
    }

    fn each<T: ToString>(&mut self, flag: &str, values: impl IntoIterator<Item = T>) {
        for value in values {
            self.value(flag, value);
        }
    }

    fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.to_string());
        }
    }
}

/// A path as a word of a command line (lossy only for a name that is not Unicode).
fn word(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

impl RunArgs {
    /// Parses the words after `run` (no program name), as the CLI would.
    pub fn from_argv<I, T>(argv: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let command = Self::augment_args(clap::Command::new("run").no_binary_name(true));
        let mut matches = command.try_get_matches_from(argv)?;
        Self::from_arg_matches_mut(&mut matches)
    }

    /// The words after `run` that give this value back when parsed: every field that differs from its
    /// default, in the order of `run --help`.
    pub fn to_argv(&self) -> Vec<String> {
        let defaults = RunArgs::default();
        let mut argv = Argv(Vec::new());
        argv.each("--model", &self.models);
        argv.each("--onnx", self.onnx.iter().map(|p| word(p)));
        argv.each("--shape", &self.shapes);
        argv.each("--inputs", &self.inputs);
        argv.each("--check-outputs", &self.check_outputs);
        if self.atol.to_bits() != defaults.atol.to_bits() {
            argv.value("--atol", self.atol);
        }
        if self.rtol.to_bits() != defaults.rtol.to_bits() {
            argv.value("--rtol", self.rtol);
        }
        argv.option("--max-tensor-memory-gib", self.max_tensor_memory_gib);
        argv.each("--case", &self.cases);
        argv.each("--set", &self.sets);
        argv.each("--sweep", &self.sweeps);
        argv.each("--runtime", &self.runtimes);
        argv.option("--rounds", self.rounds);
        argv.option("--max-rounds", self.max_rounds);
        argv.option("--baseline", self.baseline);
        argv.option("--warmup", self.warmup);
        argv.option("--iterations", self.iterations);
        argv.option("--duration", self.duration);
        argv.option("--max-duration", self.max_duration);
        argv.option("--timeout", self.timeout);
        // `-o`, as the examples and the matrix's logged commands have always written it.
        argv.option("-o", self.output.as_deref().map(word));
        argv.option("--bundle", self.bundle.as_deref().map(word));
        argv.each("--bundle-root", self.bundle_roots.iter().map(|p| word(p)));
        argv.option("--bundle-cache", self.bundle_cache.as_deref().map(word));
        argv.switch("--no-build", self.no_build);
        argv.switch("--rebuild", self.rebuild);
        argv.switch("--dry-run", self.dry_run);
        argv.option("--worker", self.worker.as_deref().map(word));
        if self.telemetry != defaults.telemetry {
            argv.value("--telemetry", self.telemetry.name());
        }
        argv.option("--manifest-root", self.manifest_root.as_deref().map(word));
        argv.switch("--profile", self.profile);
        if self.profile_iterations != defaults.profile_iterations {
            argv.value("--profile-iterations", self.profile_iterations);
        }
        argv.option("--trtexec", self.trtexec.as_deref().map(word));
        argv.each("--runtime-dir", self.runtime_dirs.iter().map(|p| word(p)));
        argv.switch("--parent-pipe", self.parent_pipe);
        // The plan file last, after `--` when its name looks like a flag.
        if let Some(plan) = &self.plan {
            let plan = word(plan);
            if plan.starts_with('-') {
                argv.0.push("--".into());
            }
            argv.0.push(plan);
        }
        argv.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value with every field away from its default but those that conflict with others (`--onnx`
    /// with `--model` and the plan, `--rebuild` with `--no-build` and `--bundle`), which
    /// [`the_other_flags`] carries.
    fn every_flag() -> RunArgs {
        RunArgs {
            plan: Some("-plan.yaml".into()),
            models: vec!["tiny-cnn".into(), "tiny-gpt".into()],
            onnx: Vec::new(),
            shapes: vec!["input:1x3x8x8".into()],
            inputs: vec!["set.npz".into(), "x:-1.bin".into()],
            check_outputs: vec!["expected.npz".into()],
            atol: 0.25,
            rtol: -0.5,
            max_tensor_memory_gib: Some(0.5),
            cases: vec!["single".into()],
            sets: vec!["request.batch_size=4".into(), "runtime.threads=-1".into()],
            sweeps: vec!["request.batch_size=1,4".into()],
            runtimes: vec!["tract".into(), "onnxruntime".into()],
            rounds: Some(6),
            max_rounds: Some(9),
            baseline: Some(2),
            warmup: Some(0),
            iterations: Some(12),
            duration: Some(1.5),
            max_duration: Some(-2.0),
            timeout: Some(30.0),
            output: Some("out dir".into()),
            bundle: Some("bundle".into()),
            bundle_roots: vec!["r1".into(), "r2".into()],
            bundle_cache: Some("cache".into()),
            no_build: true,
            rebuild: false,
            dry_run: true,
            worker: Some("worker".into()),
            telemetry: TelemetryMode::Off,
            manifest_root: Some("catalog".into()),
            profile: true,
            profile_iterations: 7,
            trtexec: Some("/opt/trtexec".into()),
            runtime_dirs: vec!["lib".into()],
            parent_pipe: true,
        }
    }

    fn the_other_flags() -> RunArgs {
        RunArgs {
            plan: None,
            models: Vec::new(),
            onnx: vec!["a.onnx".into(), "b.onnx".into()],
            rebuild: true,
            no_build: false,
            bundle: None,
            telemetry: TelemetryMode::On,
            ..every_flag()
        }
    }

    fn round_trip(value: &RunArgs) -> RunArgs {
        let argv = value.to_argv();
        RunArgs::from_argv(&argv).unwrap_or_else(|e| panic!("{argv:?} does not parse: {e}"))
    }

    #[test]
    fn the_arguments_are_a_valid_clap_definition() {
        // Names, conflicts and requirements that refer to each other resolve (clap checks them only in
        // debug builds otherwise).
        RunArgs::augment_args(clap::Command::new("run")).debug_assert();
    }

    #[test]
    fn the_default_is_what_run_reads_from_no_argument() {
        let none: [&str; 0] = [];
        assert_eq!(
            RunArgs::from_argv(none).expect("no argument"),
            RunArgs::default()
        );
        assert!(RunArgs::default().to_argv().is_empty());
    }

    #[test]
    fn every_flag_parses_back_to_the_same_value() {
        for value in [every_flag(), the_other_flags()] {
            assert_eq!(round_trip(&value), value);
        }
        // One field at a time away from the default, so no flag depends on another being written.
        let single = RunArgs {
            iterations: Some(3),
            ..RunArgs::default()
        };
        assert_eq!(round_trip(&single), single);
    }

    #[test]
    fn the_command_line_names_every_flag_run_declares() {
        let mut argv = every_flag().to_argv();
        argv.extend(the_other_flags().to_argv());
        let command = RunArgs::augment_args(clap::Command::new("run"));
        for arg in command.get_arguments() {
            match arg.get_long() {
                Some(long) => {
                    let flag = format!("--{long}");
                    let short = arg.get_short().map(|c| format!("-{c}"));
                    assert!(
                        argv.iter().any(|w| *w == flag
                            || w.starts_with(&format!("{flag}="))
                            || Some(w) == short.as_ref()),
                        "to_argv never writes {flag}: {argv:?}"
                    );
                }
                None => assert_eq!(arg.get_id(), "plan", "a positional other than the plan"),
            }
        }
    }

    #[test]
    fn values_that_look_like_flags_stay_values() {
        let argv = every_flag().to_argv();
        assert!(argv.contains(&"--max-duration=-2".to_string()), "{argv:?}");
        assert!(argv.contains(&"--rtol=-0.5".to_string()), "{argv:?}");
        assert_eq!(argv[argv.len() - 2..], ["--", "-plan.yaml"]);
    }
}
