//! The typed errors of the runtimes' checks: why a runtime cannot be used here, why a setting or a
//! route's knob is refused, why a bundle or an operation cannot run on it.
//!
//! Each variant keeps the data of what went wrong; its message names the thing and the fix and is
//! the text the CLI prints (the tests of the CLI assert it).

use std::path::PathBuf;
use std::sync::Arc;

use trtmc_trtexec::TrtexecVersion;

/// Why a runtime's library or tool cannot be used on this machine ([`crate::runtime::Runtime::availability`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    /// TensorRT's trtexec was not found or cannot be run.
    #[error(transparent)]
    Trtexec(Arc<trtmc_trtexec::TrtexecError>),
    /// ONNX Runtime's shared library was not found or cannot be loaded.
    #[error(transparent)]
    OnnxRuntime(#[from] OrtLibraryError),
}

/// Why ONNX Runtime's shared library cannot be found or loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OrtLibraryError {
    /// `ORT_DYLIB_PATH` names something that is not a file.
    #[error(
        "ORT_DYLIB_PATH={} is not a file: point it at libonnxruntime (e.g. …/onnxruntime/capi/libonnxruntime.so.1.31.1), or unset it to use the `onnxruntime` Python package ({hint})",
        path.display()
    )]
    DylibPathNotAFile {
        /// The value of `ORT_DYLIB_PATH`.
        path: PathBuf,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// The Python interpreter has no `onnxruntime` package.
    #[error(
        "ONNX Runtime is not installed: ORT_DYLIB_PATH is not set and {python} has no `onnxruntime` package ({hint}, or set ORT_DYLIB_PATH to libonnxruntime)"
    )]
    NotInstalled {
        /// The Python interpreter asked (as `trtmc_core::python::interpreter` names it).
        python: String,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// The Python interpreter cannot be asked where its packages are.
    #[error(
        "ONNX Runtime not found: ORT_DYLIB_PATH is not set and {python} cannot be used to look for the `onnxruntime` package ({reason}); {hint}, or set ORT_DYLIB_PATH to libonnxruntime"
    )]
    PythonUnusable {
        /// The Python interpreter that could not be run.
        python: String,
        /// Why running it failed.
        reason: String,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// The wheel's `capi/` folder cannot be listed.
    #[error("cannot list {}: {source} (reinstall: {hint})", dir.display())]
    CannotList {
        /// The wheel's `onnxruntime/capi` folder.
        dir: PathBuf,
        /// The error of listing it.
        source: Arc<std::io::Error>,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// The wheel's `capi/` folder holds no library.
    #[error(
        "the `onnxruntime` package in {} has no capi/libonnxruntime library (wheels before 1.19 did not ship it): {hint}",
        dir.display()
    )]
    NoLibraryInWheel {
        /// The `onnxruntime` package folder (the one holding `capi/`).
        dir: PathBuf,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// None of the places looked at held the library, nor did the `--runtime-dir` folders.
    #[error("{source}; no libonnxruntime in --runtime-dir {runtime_dirs}")]
    NotInRuntimeDirs {
        /// Why the `onnxruntime` package, looked for after the `--runtime-dir` folders, gave no
        /// library.
        source: Box<OrtLibraryError>,
        /// The `--runtime-dir` folders, joined like a `PATH`.
        runtime_dirs: String,
    },
    /// The library was found but does not load.
    #[error(
        "cannot load ONNX Runtime from {}: {reason} ({hint}, or point ORT_DYLIB_PATH at libonnxruntime 1.31 or newer)",
        path.display()
    )]
    Load {
        /// The library file that was found.
        path: PathBuf,
        /// The loader's error.
        reason: String,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
    /// The library loaded but refused to create its environment.
    #[error("cannot create the ONNX Runtime environment: {reason}")]
    Environment {
        /// ONNX Runtime's error.
        reason: String,
    },
    /// Neither the file name nor the library's build information carries a version.
    #[error(
        "cannot tell the ONNX Runtime version of {}: neither its file name nor its build info names one",
        path.display()
    )]
    VersionUnknown {
        /// The library file.
        path: PathBuf,
    },
    /// The library is older than the oldest this program can load (found before any build).
    #[error(
        "ONNX Runtime {version} at {} is older than {oldest}, the oldest this trtmc-bench can load ({hint}, or point ORT_DYLIB_PATH at libonnxruntime {oldest} or newer)",
        path.display()
    )]
    TooOld {
        /// The library file.
        path: PathBuf,
        /// Its version (`1.30.0`).
        version: String,
        /// The oldest version this program loads (`1.31`).
        oldest: &'static str,
        /// How to install a loadable ONNX Runtime ([`crate::ort_rt::INSTALL_HINT`]).
        hint: &'static str,
    },
}

/// Why a `build.*`/`runtime.*` value, or a route's `knob=value` token, is refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SettingError {
    /// A `runtime.*` key the runtime does not declare.
    #[error(
        "unknown runtime setting `runtime.{key}` for runtime `{runtime}` (known: {})",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )]
    UnknownRuntimeSetting {
        /// The runtime's name (`tract`, `onnxruntime`, `tensorrt`).
        runtime: &'static str,
        /// The key without its `runtime.` prefix.
        key: String,
        /// The `runtime.*` keys the runtime declares, without the prefix.
        known: Vec<String>,
    },
    /// An open integer range's value outside `least..=most`.
    #[error(
        "{key}={value}: runtime `{runtime}` takes a whole number from {least} to {most} (e.g. {key}={example})"
    )]
    OutOfRange {
        /// The runtime's name.
        runtime: &'static str,
        /// The setting's full key (`build.threads`, `runtime.…`).
        key: String,
        /// The refused value, as given.
        value: String,
        /// The smallest value accepted.
        least: i64,
        /// The largest value accepted.
        most: i64,
        /// A value that is accepted (the declared default), for the message.
        example: &'static str,
    },
    /// A value that is not one of the listed ones.
    #[error(
        "{key}={value}: runtime `{runtime}` takes {} (e.g. {key}={example})",
        one_of(allowed)
    )]
    NotListed {
        /// The runtime's name.
        runtime: &'static str,
        /// The setting's full key (`build.threads`, `runtime.…`).
        key: String,
        /// The refused value, as given.
        value: String,
        /// The values the setting takes.
        allowed: Vec<String>,
        /// A value that is accepted (the declared default), for the message.
        example: &'static str,
    },
    /// A value the declaration's open form does not accept.
    #[error("{key}={value}: runtime `{runtime}` takes {expected}")]
    NotAccepted {
        /// The runtime's name.
        runtime: &'static str,
        /// The setting's full key (`build.threads`, `runtime.…`).
        key: String,
        /// The refused value, as given.
        value: String,
        /// What the setting takes, in words.
        expected: String,
    },
    /// A route's knob for a runtime that declares none.
    #[error("runtime `{runtime}` has no tunable knobs")]
    NoKnobs {
        /// The runtime's name.
        runtime: &'static str,
    },
    /// A route's knob the runtime does not declare.
    #[error(
        "knob {knob} is not a knob of runtime `{runtime}` (see tune --runtime {runtime} --help-routes)"
    )]
    UnknownKnob {
        /// The runtime's name.
        runtime: &'static str,
        /// The knob as the route names it.
        knob: String,
    },
    /// A `-trtexec:<flag>` knob naming no known trtexec flag.
    #[error("unknown trtexec flag knob {knob} (see --help-routes)")]
    UnknownFlagKnob {
        /// The knob as the route names it (`-trtexec:<flag>`).
        knob: String,
    },
    /// `build.route` holds no token.
    #[error("build.route is empty: give -knob=value tokens, e.g. '-kgen:tiling=1'")]
    EmptyRoute,
    /// `build.route` is not text.
    #[error("build.route must be text such as '-kgen:tiling=1 -conv_lowering=off', got {value}")]
    RouteNotText {
        /// The value given, as JSON.
        value: String,
    },
    /// A `build.route` token not of the form `-knob=value`.
    #[error("build.route token `{token}` is not of the form -knob=value")]
    RouteToken {
        /// The malformed token.
        token: String,
    },
    /// A `build.route` knob the installed TensorRT does not have.
    #[error(
        "build.route: TensorRT {version} has no knob `{knob}` (its {knob_count} knobs: `trtmc-bench tune --runtime tensorrt --help-routes`)"
    )]
    RouteUnknownKnob {
        /// The installed TensorRT's version.
        version: TrtexecVersion,
        /// The knob as the route names it.
        knob: String,
        /// How many knobs that TensorRT's database has.
        knob_count: usize,
    },
    /// A `build.route` setting one knob twice.
    #[error("build.route sets knob `{knob}` twice")]
    RouteKnobTwice {
        /// The knob set twice.
        knob: String,
    },
    /// A knob whose database entry lists no readable values.
    #[error(transparent)]
    RouteAllowedValues(#[from] trtmc_trtexec::AllowedValuesError),
    /// A `build.route` knob value the installed TensorRT does not accept.
    #[error(
        "build.route: knob `{knob}` takes {expected} on TensorRT {version} (default {default}), not `{value}`"
    )]
    RouteValue {
        /// The knob.
        knob: String,
        /// The values it takes, in words.
        expected: String,
        /// The installed TensorRT's version.
        version: TrtexecVersion,
        /// The knob's default value in that TensorRT's database.
        default: String,
        /// The refused value, as given.
        value: String,
    },
    /// `build.route` on a TensorRT without `--setBuildRoute`.
    #[error(
        "build.route needs TensorRT >= 11.1 (--setBuildRoute), but {} is TensorRT {version}; this version offers these build settings instead: {}",
        trtexec.display(),
        offered.join(", ")
    )]
    RouteUnsupported {
        /// The trtexec asked.
        trtexec: PathBuf,
        /// Its TensorRT version.
        version: TrtexecVersion,
        /// The `build.*` settings that TensorRT offers instead.
        offered: Vec<String>,
    },
    /// The installed TensorRT's knob database cannot be read.
    #[error("trtexec --helpBuildRoute: {0}")]
    RouteDatabase(Arc<trtmc_trtexec::TrtexecError>),
    /// A trtexec build flag the installed TensorRT does not have.
    #[error("build.{setting} (--{flag}) is not available in TensorRT {version}")]
    FlagUnsupported {
        /// The setting without its `build.` prefix.
        setting: &'static str,
        /// The trtexec flag it maps to, without `--`.
        flag: &'static str,
        /// The installed TensorRT's version.
        version: TrtexecVersion,
    },
    /// Settings that do not decode into the runtime's settings struct.
    #[error("{reason}")]
    Undecodable {
        /// The decoder's message, printed as is.
        reason: String,
    },
    /// An optimization level or stream count outside its range.
    #[error("build.{name} takes an integer from 0 to {max}, got {value}")]
    Level {
        /// The setting without its `build.` prefix.
        name: String,
        /// The largest value accepted.
        max: u32,
        /// The refused value, as given.
        value: String,
    },
    /// The runtime's tool, needed to check the value, is missing.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// Why an earlier-built bundle cannot run here ([`crate::runtime::Runtime::check_bundle`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BundleCheckError {
    /// The runtime's tool is missing.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// The bundle's build record cannot be read.
    #[error("{reason}")]
    BuildRecord {
        /// The bundle directory.
        bundle: PathBuf,
        /// Why its build record cannot be read; printed as is.
        reason: String,
    },
    /// A TensorRT engine built by another TensorRT version.
    #[error(
        "bundle {} holds an engine built by TensorRT {built_with}, but {} is TensorRT {here}; an engine loads only in the TensorRT version that built it: rebuild it (drop --bundle) or pass --trtexec for a TensorRT {built_with} install",
        bundle.display(),
        trtexec.display()
    )]
    EngineVersion {
        /// The bundle directory.
        bundle: PathBuf,
        /// The TensorRT version that built the engine.
        built_with: String,
        /// The trtexec this run uses.
        trtexec: PathBuf,
        /// Its TensorRT version.
        here: String,
    },
}

/// An operation a runtime cannot run ([`crate::runtime::Runtime::supports_operation`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("runtime {runtime} {why}: operation `{operation}` cannot run on it ({instead})")]
pub struct UnsupportedOperation {
    /// The runtime asked.
    pub runtime: &'static str,
    /// The operation asked for.
    pub operation: String,
    /// What the runtime does that rules the operation out.
    pub why: &'static str,
    /// What to do instead.
    pub instead: &'static str,
}

/// Why a bundle directory holds no readable, current `bundle.json`.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// `bundle.json` cannot be read.
    #[error(
        "{} is not a bundle: cannot read {}: {source} (rebuild it, or drop --bundle to build one)",
        bundle.display(),
        path.display()
    )]
    Unreadable {
        /// The bundle directory.
        bundle: PathBuf,
        /// Its `bundle.json`.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// `bundle.json` is a special file or past the size limit for outside files.
    #[error("{} is not a bundle: {source}", bundle.display())]
    Refused {
        /// The bundle directory.
        bundle: PathBuf,
        /// Why the file was refused.
        source: std::io::Error,
    },
    /// `bundle.json` is not a manifest.
    #[error("{} is malformed: {source} (rebuild the bundle with --rebuild)", path.display())]
    Malformed {
        /// The `bundle.json`.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A manifest of another schema.
    #[error("{} has schema `{found}`, expected `{expected}` (rebuild the bundle)", path.display())]
    Schema {
        /// The `bundle.json`.
        path: PathBuf,
        /// The schema it names.
        found: String,
        /// The schema this program reads.
        expected: &'static str,
    },
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn one_of(values: &[String]) -> String {
    match values.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => values.join(""),
    }
}
