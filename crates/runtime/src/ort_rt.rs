//! ONNX Runtime through the `ort` crate, with `libonnxruntime` loaded at run time (no download, no
//! linking).
//!
//! - **Library:** `ORT_DYLIB_PATH`, else the `onnxruntime` wheel of `$TRTMC_PYTHON` (default `python3`),
//!   found without importing it (`importlib.util.find_spec`, then `capi/libonnxruntime.so*`). It is
//!   loaded with `ort::init_from` (a bad path is an error, not a panic). ort allows one environment per
//!   process; [`environment`] creates it once.
//! - **Build** = ORT's offline optimization: a session at the requested graph optimization level
//!   (`build.optimization_level`) saves the optimized graph (`with_optimized_model_path`) as
//!   `model.ort.onnx`, with `build.dims.*` / `build.shapes.*` bound as free-dimension overrides. The
//!   resolved session options are kept in `ort-session.json` (schema `trtmc.ort-session/v1`).
//! - **Load** = the optimized model with graph optimization disabled (it is done already) and the
//!   `runtime.*` settings: threads, execution mode, spinning, memory pattern, CPU arena.
//! - **Profiling** = ORT's own profiler (`with_profiling`, `end_profiling`): a Chrome trace whose kernel
//!   events become `layers_onnxruntime.json` / `profile_onnxruntime.json` (see [`crate::profile`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context as _, anyhow, bail};
use ort::environment::Environment;
use ort::ep;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::{Session as OrtSession, SessionInputValue, SessionInputs};
use ort::value::{Outlet, TensorElementType, TensorRef, ValueType};
use serde_json::{Value, json};
use tract_core::prelude::f16;
use trtmc_core::fsutil::write_json_atomic;

use crate::bundle::BundleManifest;
use crate::error::{OrtLibraryError, Unavailable};
use crate::profile::LayerProfile;
use crate::profile::ort_trace::{GraphNode, layers_from_trace};
use crate::runtime::{
    BuildOutput, BuildStep, Runtime, Session, SettingDecl, SettingKind, SettingSection,
    check_build_settings,
};
use crate::tensor::{DType, Dim, HostTensor, TensorSpec};

/// The optimized model the build saves in the bundle, loaded by every later session.
pub const ARTIFACT: &str = "model.ort.onnx";
/// The external data file of the optimized model of a source model with external data.
pub const EXTERNAL_WEIGHTS: &str = "model.ort.weights.bin";
/// The bundle's record of the resolved session options of the build (schema [`SESSION_SCHEMA`]).
pub const SESSION_FILE: &str = "ort-session.json";
/// The `schema` of [`SESSION_FILE`]; a bundle with another one is refused (rebuild it).
pub const SESSION_SCHEMA: &str = "trtmc.ort-session/v1";
/// The raw Chrome trace of a profiling pass, kept beside the exports (open it in a trace viewer).
pub const TRACE_FILE: &str = "onnxruntime-trace.json";
/// How to get ONNX Runtime: the wheel's extra for an installed trtmc, the package otherwise.
pub const INSTALL_HINT: &str =
    "pip install 'trtmc[onnxruntime]' (or pip install onnxruntime==1.31.1)";
const NAME: &str = "onnxruntime";

/// The ONNX Runtime runtime (`onnxruntime`): builds an offline-optimized ONNX model and runs it
/// in-process on ORT's CPU provider.
pub struct OrtRuntime;

pub(crate) static SETTINGS: &[SettingDecl] = &[
    SettingDecl {
        section: SettingSection::Build,
        name: "optimization_level",
        help: "ONNX Runtime's graph optimization level, applied offline when the bundle is built",
        default: "all",
        kind: SettingKind::Listed {
            words: &["disable", "basic", "extended", "layout", "all"],
        },
        tunable: true,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "precision",
        help: "fp32 only: the CPU provider runs the model's own types (export the model in another precision instead)",
        default: "fp32",
        kind: SettingKind::Listed { words: &["fp32"] },
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "threads",
        help: "the thread knob every runtime has: here the intra-op pool's threads (intra_threads wins when both are given)",
        default: "1",
        kind: SettingKind::Integer {
            least: 1,
            most: None,
        },
        // intra_threads is the tunable name; one knob, one route.
        tunable: false,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "intra_threads",
        help: "threads of ONNX Runtime's intra-op pool (parallelism inside one operator)",
        default: "1",
        kind: SettingKind::Integer {
            least: 1,
            most: None,
        },
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "inter_threads",
        help: "threads of the inter-op pool (used with execution_mode=parallel)",
        default: "1",
        kind: SettingKind::Integer {
            least: 1,
            most: None,
        },
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "execution_mode",
        help: "run one node at a time (sequential), or independent nodes at once (parallel)",
        default: "sequential",
        kind: SettingKind::Listed {
            words: &["sequential", "parallel"],
        },
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "intra_spinning",
        help: "intra-op threads spin while waiting for work (true) or sleep (false)",
        default: "true",
        kind: SettingKind::Switch,
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "memory_pattern",
        help: "plan memory from the first run's allocation pattern",
        default: "true",
        kind: SettingKind::Switch,
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "cpu_arena",
        help: "allocate CPU tensors from ONNX Runtime's arena",
        default: "true",
        kind: SettingKind::Switch,
        tunable: true,
        recipe: false,
    },
];

/// The located library.
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    /// The `libonnxruntime` file loaded, as found (not canonicalized).
    pub path: PathBuf,
    /// From the file name (`libonnxruntime.so.1.31.1`), else from the loaded library's build info.
    pub version: String,
}

static LIBRARY: OnceLock<Result<Library, OrtLibraryError>> = OnceLock::new();
static ENVIRONMENT: OnceLock<Result<Environment, OrtLibraryError>> = OnceLock::new();

/// The library this process uses (located once).
pub fn library() -> Result<&'static Library, OrtLibraryError> {
    LIBRARY.get_or_init(locate).as_ref().map_err(Clone::clone)
}

/// The process's one ORT environment (created on first use).
pub fn environment() -> Result<&'static Environment, OrtLibraryError> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = library_path()?;
            init_environment(&path)
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn init_environment(path: &Path) -> Result<Environment, OrtLibraryError> {
    ort::init_from(path)
        .map_err(|e| OrtLibraryError::Load {
            path: path.to_path_buf(),
            reason: e.to_string(),
            hint: INSTALL_HINT,
        })?
        .with_name("trtmc")
        .with_telemetry(false)
        .build()
        .map_err(|e| OrtLibraryError::Environment {
            reason: e.to_string(),
        })
}

/// The oldest ONNX Runtime the `ort` crate this program is built with loads (major, minor). `ort`
/// itself refuses an older library only when a model is built ("expected version >= '1.31.x'", seen
/// with the 1.30.0 wheel of a GPU machine's image); checking the version when the library is located
/// makes it a missing prerequisite named before anything runs.
const OLDEST_SUPPORTED: (u32, u32) = (1, 31);
const OLDEST_SUPPORTED_TEXT: &str = "1.31";

/// Whether `version` (`1.30.0`) is older than [`OLDEST_SUPPORTED`]; a version that does not parse is
/// left to the loader.
fn older_than_supported(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) < OLDEST_SUPPORTED,
        _ => false,
    }
}

fn locate() -> Result<Library, OrtLibraryError> {
    let path = library_path()?;
    let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let version = match version_from_file_name(&canonical) {
        Some(v) => v,
        None => {
            environment()?;
            version_from_build_info(ort::info())
                .ok_or_else(|| OrtLibraryError::VersionUnknown { path: path.clone() })?
        }
    };
    if older_than_supported(&version) {
        return Err(OrtLibraryError::TooOld {
            path,
            version,
            oldest: OLDEST_SUPPORTED_TEXT,
            hint: INSTALL_HINT,
        });
    }
    Ok(Library { path, version })
}

/// The library, first found of: a `--runtime-dir` folder, `ORT_DYLIB_PATH`, the `onnxruntime` wheel
/// installed beside this program (`pip install 'trtmc[onnxruntime]'` puts both in one environment),
/// the `onnxruntime` package of the Python interpreter.
fn library_path() -> Result<PathBuf, OrtLibraryError> {
    let runtime_dirs = trtmc_core::runtime_dirs::current();
    if let Some(found) = trtmc_core::runtime_dirs::find_file(&runtime_dirs, is_library_name) {
        return Ok(found);
    }
    if let Some(value) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        if !path.is_file() {
            return Err(OrtLibraryError::DylibPathNotAFile {
                path,
                hint: INSTALL_HINT,
            });
        }
        return Ok(path);
    }
    if let Some(found) = beside_program() {
        return Ok(found);
    }
    wheel_library().map_err(|e| {
        if runtime_dirs.is_empty() {
            e
        } else {
            OrtLibraryError::NotInRuntimeDirs {
                source: Box::new(e),
                runtime_dirs: std::env::join_paths(&runtime_dirs)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            }
        }
    })
}

/// `libonnxruntime.so*` / `libonnxruntime.*.dylib` / `onnxruntime.dll`, not its provider plug-ins.
fn is_library_name(name: &str) -> bool {
    !name.contains("providers")
        && (name.starts_with("libonnxruntime.so")
            || (name.starts_with("libonnxruntime.") && name.ends_with(".dylib"))
            || name == "onnxruntime.dll")
}

/// The `onnxruntime` wheel's `capi/` folder in the Python environment this program is installed in
/// (`<prefix>/bin/trtmc-bench` beside `<prefix>/lib/python3.X/site-packages/onnxruntime/`).
fn beside_program() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let prefix = exe.parent()?.parent()?;
    let mut site_dirs = vec![prefix.join("Lib/site-packages")];
    for lib in ["lib", "lib64"] {
        if let Ok(entries) = std::fs::read_dir(prefix.join(lib)) {
            site_dirs.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
                    .map(|e| e.path().join("site-packages")),
            );
        }
    }
    let capi: Vec<PathBuf> = site_dirs
        .into_iter()
        .map(|d| d.join("onnxruntime/capi"))
        .filter(|d| d.is_dir())
        .collect();
    trtmc_core::runtime_dirs::find_file(&capi, is_library_name)
}

/// The `onnxruntime` package directory of the Python interpreter, found without importing it.
fn wheel_library() -> Result<PathBuf, OrtLibraryError> {
    let python = trtmc_core::python::interpreter();
    let dir = match trtmc_core::python::package_dir("onnxruntime") {
        Ok(Some(dir)) => dir,
        Ok(None) => {
            return Err(OrtLibraryError::NotInstalled {
                python: python.to_string(),
                hint: INSTALL_HINT,
            });
        }
        Err(e) => {
            return Err(OrtLibraryError::PythonUnusable {
                python: python.to_string(),
                reason: e.to_string(),
                hint: INSTALL_HINT,
            });
        }
    };
    let capi = dir.join("capi");
    if let Err(e) = std::fs::read_dir(&capi) {
        return Err(OrtLibraryError::CannotList {
            dir: capi,
            source: std::sync::Arc::new(e),
            hint: INSTALL_HINT,
        });
    }
    trtmc_core::runtime_dirs::find_file(&[capi], is_library_name).ok_or_else(|| {
        OrtLibraryError::NoLibraryInWheel {
            dir: dir.clone(),
            hint: INSTALL_HINT,
        }
    })
}

/// `libonnxruntime.so.1.31.1` → `1.31.1`; `libonnxruntime.1.31.1.dylib` → `1.31.1`.
pub fn version_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let rest = name
        .strip_prefix("libonnxruntime.so.")
        .or_else(|| name.strip_prefix("libonnxruntime.")?.strip_suffix(".dylib"))?;
    let parts: Vec<&str> = rest.split('.').collect();
    (parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok())).then(|| rest.to_string())
}

/// `ORT Build Info: git-branch=rel-1.31.1, …` → `1.31.1`.
pub fn version_from_build_info(info: &str) -> Option<String> {
    let start = info.find("git-branch=rel-")? + "git-branch=rel-".len();
    let version: String = info[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (version.split('.').count() == 3).then_some(version)
}

/// `build.optimization_level`: ORT's graph optimization levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum OptimizationLevel {
    /// `disable`: no graph optimization (`ORT_DISABLE_ALL`).
    Disable,
    /// `basic`: semantics-preserving rewrites such as constant folding (`ORT_ENABLE_BASIC`).
    Basic,
    /// `extended`: adds node fusions (`ORT_ENABLE_EXTENDED`).
    Extended,
    /// `layout`: adds layout rewrites (`ORT_ENABLE_LAYOUT`).
    Layout,
    /// `all`, the default: every optimization (`ORT_ENABLE_ALL`).
    #[default]
    All,
}

impl TryFrom<String> for OptimizationLevel {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text).ok_or_else(|| {
            format!(
                "build.optimization_level must be one of {}, got {text:?}",
                Self::NAMES
            )
        })
    }
}

impl OptimizationLevel {
    /// The accepted values of `build.optimization_level`, for messages and `--help`.
    pub const NAMES: &'static str = "disable, basic, extended, layout, all";

    /// The level a `build.optimization_level` value names; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "disable" => Self::Disable,
            "basic" => Self::Basic,
            "extended" => Self::Extended,
            "layout" => Self::Layout,
            "all" => Self::All,
            _ => return None,
        })
    }

    /// The level's `build.optimization_level` value (the inverse of [`Self::parse`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Basic => "basic",
            Self::Extended => "extended",
            Self::Layout => "layout",
            Self::All => "all",
        }
    }

    /// ORT's own name of the level.
    pub fn ort_name(self) -> &'static str {
        match self {
            Self::Disable => "ORT_DISABLE_ALL",
            Self::Basic => "ORT_ENABLE_BASIC",
            Self::Extended => "ORT_ENABLE_EXTENDED",
            Self::Layout => "ORT_ENABLE_LAYOUT",
            Self::All => "ORT_ENABLE_ALL",
        }
    }

    fn ort(self) -> GraphOptimizationLevel {
        match self {
            Self::Disable => GraphOptimizationLevel::Disable,
            Self::Basic => GraphOptimizationLevel::Level1,
            Self::Extended => GraphOptimizationLevel::Level2,
            Self::Layout => GraphOptimizationLevel::Level3,
            Self::All => GraphOptimizationLevel::All,
        }
    }

    /// The level of `build.optimization_level` (default `all`, ORT's own default).
    pub fn from_settings(settings: &BTreeMap<String, Value>) -> anyhow::Result<Self> {
        Ok(BuildSettings::from_settings(settings)?.optimization_level)
    }
}

/// ONNX Runtime's `build.*` settings ([`SETTINGS`]), decoded once where the bundle is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSettings {
    /// fp32 only: the CPU provider runs the model's own types.
    #[serde(default)]
    pub precision: Fp32Only,
    /// `build.optimization_level` (default `all`).
    #[serde(default)]
    pub optimization_level: OptimizationLevel,
}

impl BuildSettings {
    /// Decodes the `build.*` settings (keys without their prefix); an unknown key or a refused value
    /// is an error.
    pub fn from_settings(settings: &BTreeMap<String, Value>) -> anyhow::Result<Self> {
        crate::runtime::decode_settings(NAME, SettingSection::Build, settings)
    }
}

/// `build.precision` of ONNX Runtime: fp32 alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Fp32Only;

impl TryFrom<String> for Fp32Only {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        match text.as_str() {
            "fp32" => Ok(Fp32Only),
            other => Err(format!(
                "runtime onnxruntime builds build.precision fp32 only, not `{other}` (its CPU provider runs the model's own types: export the model in that precision instead)"
            )),
        }
    }
}

/// `runtime.execution_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
enum ExecutionMode {
    #[default]
    Sequential,
    Parallel,
}

impl TryFrom<String> for ExecutionMode {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        match text.as_str() {
            "sequential" => Ok(Self::Sequential),
            "parallel" => Ok(Self::Parallel),
            _ => Err(format!(
                "runtime.execution_mode must be sequential or parallel, got {text:?}"
            )),
        }
    }
}

/// ONNX Runtime's `runtime.*` settings as declared ([`SETTINGS`]), decoded once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclaredSessionSettings {
    #[serde(default)]
    threads: Option<std::num::NonZeroUsize>,
    #[serde(default)]
    intra_threads: Option<std::num::NonZeroUsize>,
    #[serde(default)]
    inter_threads: Option<std::num::NonZeroUsize>,
    #[serde(default)]
    execution_mode: ExecutionMode,
    #[serde(default, deserialize_with = "crate::runtime::switch")]
    intra_spinning: Option<bool>,
    #[serde(default, deserialize_with = "crate::runtime::switch")]
    memory_pattern: Option<bool>,
    #[serde(default, deserialize_with = "crate::runtime::switch")]
    cpu_arena: Option<bool>,
}

/// The `runtime.*` settings of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSettings {
    /// Threads of the intra-op pool: `runtime.intra_threads`, else `runtime.threads`, else 1.
    pub intra_threads: usize,
    /// Threads of the inter-op pool (`runtime.inter_threads`, default 1; used in parallel mode).
    pub inter_threads: usize,
    /// Whether `runtime.execution_mode` is `parallel` (default sequential).
    pub parallel: bool,
    /// `runtime.intra_spinning`: whether idle intra-op threads spin; `None` leaves ORT's default.
    pub intra_spinning: Option<bool>,
    /// `runtime.memory_pattern`: ORT's memory-pattern planning; `None` leaves ORT's default.
    pub memory_pattern: Option<bool>,
    /// `runtime.cpu_arena`: the CPU provider's arena allocator; `None` leaves ORT's default.
    pub cpu_arena: Option<bool>,
}

impl SessionSettings {
    /// Decodes the `runtime.*` settings (keys without their prefix); an unknown key or a refused
    /// value is an error.
    pub fn from_settings(settings: &BTreeMap<String, Value>) -> anyhow::Result<Self> {
        let d: DeclaredSessionSettings =
            crate::runtime::decode_settings(NAME, SettingSection::Runtime, settings)?;
        let one = std::num::NonZeroUsize::MIN;
        Ok(Self {
            // `threads`, the knob every runtime has, is the intra-op pool; intra_threads wins.
            intra_threads: d.intra_threads.or(d.threads).unwrap_or(one).get(),
            inter_threads: d.inter_threads.unwrap_or(one).get(),
            parallel: d.execution_mode == ExecutionMode::Parallel,
            intra_spinning: d.intra_spinning,
            memory_pattern: d.memory_pattern,
            cpu_arena: d.cpu_arena,
        })
    }
}

fn ort_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("ONNX Runtime: {e}")
}

fn env() -> anyhow::Result<&'static Environment> {
    environment().map_err(anyhow::Error::msg)
}

fn builder(
    level: OptimizationLevel,
    overrides: &BTreeMap<String, i64>,
) -> anyhow::Result<SessionBuilder> {
    let mut b = OrtSession::builder(env()?)
        .map_err(ort_err)?
        .with_optimization_level(level.ort())
        .map_err(ort_err)?;
    for (symbol, value) in overrides {
        b = b.with_dimension_override(symbol, *value).map_err(ort_err)?;
    }
    Ok(b)
}

fn apply_settings(b: SessionBuilder, s: &SessionSettings) -> anyhow::Result<SessionBuilder> {
    let mut b = b
        .with_intra_threads(s.intra_threads)
        .map_err(ort_err)?
        .with_inter_threads(s.inter_threads)
        .map_err(ort_err)?
        .with_parallel_execution(s.parallel)
        .map_err(ort_err)?;
    if let Some(spin) = s.intra_spinning {
        b = b.with_intra_op_spinning(spin).map_err(ort_err)?;
    }
    if let Some(pattern) = s.memory_pattern {
        b = b.with_memory_pattern(pattern).map_err(ort_err)?;
    }
    if let Some(arena) = s.cpu_arena {
        b = b
            .with_execution_providers([ep::CPU::default().with_arena_allocator(arena).build()])
            .map_err(ort_err)?;
    }
    Ok(b)
}

/// `build.dims.<symbol>` plus the dimensions `build.shapes.<input>` binds, as ORT free-dimension
/// overrides (ORT binds dimensions by name only).
fn dimension_overrides(
    onnx: &Path,
    settings: &BTreeMap<String, Value>,
    log: &mut Vec<String>,
) -> anyhow::Result<BTreeMap<String, i64>> {
    let mut overrides = BTreeMap::new();
    for (key, value) in settings {
        if let Some(symbol) = key.strip_prefix("dims.") {
            let v = value.as_i64().filter(|v| *v >= 0).with_context(|| {
                format!("build.{key} must be a non-negative integer, got {value}")
            })?;
            overrides.insert(symbol.to_string(), v);
        }
    }
    let shapes: Vec<(&str, Vec<i64>)> = trtmc_core::settings::shape_settings(settings).collect();
    if shapes.is_empty() {
        return Ok(overrides);
    }
    // Names bound by `build.dims.*` must hold; names only the shapes bind may be left dynamic.
    let explicit: std::collections::BTreeSet<String> = overrides.keys().cloned().collect();
    let mut unbindable = std::collections::BTreeSet::new();
    let probe = builder(OptimizationLevel::Disable, &BTreeMap::new())?
        .commit_from_file(onnx)
        .map_err(ort_err)
        .with_context(|| format!("ONNX Runtime cannot load {}", onnx.display()))?;
    for (input, shape) in shapes {
        let outlet = probe
            .inputs()
            .iter()
            .find(|o| o.name() == input)
            .with_context(|| {
                let names: Vec<&str> = probe.inputs().iter().map(Outlet::name).collect();
                format!(
                    "shape given for unknown input `{input}` (inputs: {})",
                    names.join(", ")
                )
            })?;
        let ValueType::Tensor {
            shape: declared,
            dimension_symbols,
            ..
        } = outlet.dtype()
        else {
            bail!("input `{input}` is not a tensor");
        };
        if declared.len() != shape.len() {
            bail!(
                "input `{input}` has {} dimensions, build.shapes.{input} gives {}",
                declared.len(),
                shape.len()
            );
        }
        for (axis, (&d, &want)) in declared.iter().zip(&shape).enumerate() {
            if d >= 0 {
                if d != want {
                    bail!(
                        "input `{input}` axis {axis} is fixed at {d}, build.shapes.{input} asks for {want}"
                    );
                }
                continue;
            }
            let symbol = dimension_symbols
                .get(axis)
                .map(String::as_str)
                .unwrap_or("");
            if symbol.is_empty() {
                // ONNX Runtime binds dimensions by name only: an unnamed one stays dynamic in the
                // optimized model and takes the shape of the tensors fed at run time.
                log.push(format!(
                    "input `{input}` axis {axis}: dynamic without a name, left dynamic (fed as {want})"
                ));
                continue;
            }
            if unbindable.contains(symbol) {
                continue;
            }
            match overrides.get(symbol) {
                Some(&v) if v != want && explicit.contains(symbol) => bail!(
                    "dimension `{symbol}` is bound to {v} and build.shapes.{input} asks for {want} on axis {axis}"
                ),
                Some(&v) if v != want => {
                    // One name on axes of different sizes (PaddleOCR exports name every dynamic axis
                    // `?`): ONNX Runtime does not hold the name to one size at run time, so the axes
                    // stay dynamic and are fed the shapes asked for, as its own API runs them.
                    overrides.remove(symbol);
                    unbindable.insert(symbol.to_string());
                    log.push(format!(
                        "dimension `{symbol}` is asked to be {v} and {want} (input `{input}` axis {axis}): left dynamic"
                    ));
                }
                _ => {
                    overrides.insert(symbol.to_string(), want);
                    log.push(format!("input `{input}` axis {axis}: {symbol} = {want}"));
                }
            }
        }
    }
    Ok(overrides)
}

fn dtype_of(ty: TensorElementType) -> Option<DType> {
    Some(match ty {
        TensorElementType::Float32 => DType::F32,
        TensorElementType::Float16 => DType::F16,
        TensorElementType::Float64 => DType::F64,
        TensorElementType::Int64 => DType::I64,
        TensorElementType::Int32 => DType::I32,
        TensorElementType::Bool => DType::Bool,
        TensorElementType::Uint8 => DType::U8,
        TensorElementType::String => DType::Str,
        _ => return None,
    })
}

fn specs(outlets: &[Outlet]) -> anyhow::Result<Vec<TensorSpec>> {
    outlets
        .iter()
        .map(|o| {
            let ValueType::Tensor {
                ty,
                shape,
                dimension_symbols,
            } = o.dtype()
            else {
                bail!(
                    "`{}` is not a tensor ({}); only tensors are supported",
                    o.name(),
                    o.dtype()
                );
            };
            let dtype = dtype_of(*ty)
                .with_context(|| format!("`{}` has unsupported element type {ty:?}", o.name()))?;
            let shape = shape
                .iter()
                .enumerate()
                .map(|(axis, &d)| {
                    if d >= 0 {
                        Dim::Fixed(d)
                    } else {
                        match dimension_symbols.get(axis).filter(|s| !s.is_empty()) {
                            Some(s) => Dim::Symbol(s.clone()),
                            None => Dim::Symbol(format!("{}_dim{axis}", o.name())),
                        }
                    }
                })
                .collect();
            Ok(TensorSpec {
                name: o.name().to_string(),
                dtype,
                shape,
            })
        })
        .collect()
}

/// The resolved session options of a bundle (`ort-session.json`).
fn read_session_file(bundle_dir: &Path) -> anyhow::Result<BTreeMap<String, i64>> {
    let path = bundle_dir.join(SESSION_FILE);
    let doc: Value = serde_json::from_slice(
        &trtmc_core::limits::read_outside(&path, trtmc_core::limits::FileKind::Text)
            .with_context(|| format!("cannot read {} (rebuild the bundle)", path.display()))?,
    )
    .with_context(|| format!("{} is malformed (rebuild the bundle)", path.display()))?;
    if doc["schema"] != SESSION_SCHEMA {
        bail!(
            "{} is not a {SESSION_SCHEMA} file (rebuild the bundle)",
            path.display()
        );
    }
    let overrides = doc["dimension_overrides"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_i64()?)))
                .collect()
        })
        .unwrap_or_default();
    Ok(overrides)
}

impl Runtime for OrtRuntime {
    fn name(&self) -> &'static str {
        NAME
    }

    fn version(&self) -> String {
        library()
            .map(|l| l.version.clone())
            .unwrap_or_else(|_| "unavailable".into())
    }

    fn target(&self) -> String {
        crate::tract_rt::cpu_target()
    }

    fn availability(&self) -> Result<(), Unavailable> {
        library().map(|_| ()).map_err(Unavailable::OnnxRuntime)
    }

    fn settings(&self) -> &'static [SettingDecl] {
        SETTINGS
    }

    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput> {
        check_build_settings(NAME, settings, &self.build_settings())?;
        let level = BuildSettings::from_settings(settings)?.optimization_level;
        let lib = library().map_err(anyhow::Error::msg)?;
        let mut steps = Vec::new();
        let mut log = vec![format!(
            "ONNX Runtime {} from {}",
            lib.version,
            lib.path.display()
        )];
        let mut timed = |name: &str, started: Instant| {
            steps.push(BuildStep {
                name: name.into(),
                ms: started.elapsed().as_secs_f64() * 1e3,
            })
        };

        // ONNX Runtime refuses an unknown opset itself, but would time a graph with no outputs.
        crate::guard::check_graph(onnx, None)?;
        let t = Instant::now();
        let overrides = dimension_overrides(onnx, settings, &mut log)?;
        timed("bind_dimensions", t);

        let t = Instant::now();
        let SourceGraph {
            inputs: true_inputs,
            copy: source,
            external_data,
        } = without_weight_inputs(onnx, out_dir, &mut log)?;
        timed("drop_weight_inputs", t);

        let artifact = out_dir.join(ARTIFACT);
        let t = Instant::now();
        let mut optimizer = builder(level, &overrides)?
            .with_intra_threads(1)
            .map_err(ort_err)?
            .with_optimized_model_path(&artifact)
            .map_err(ort_err)?;
        if external_data {
            // ONNX Runtime would save the optimized model pointing at the source's weight file by its
            // relative name, which the bundle folder lacks: it writes the weights into the bundle instead.
            optimizer = optimizer
                .with_config_entry(
                    "session.optimized_model_external_initializers_file_name",
                    EXTERNAL_WEIGHTS,
                )
                .map_err(ort_err)?;
            log.push(format!(
                "{} keeps weights in external data files: the optimized model's weights are saved as {EXTERNAL_WEIGHTS} in the bundle",
                onnx.display()
            ));
        }
        let optimized = optimizer
            .commit_from_file(source.as_deref().unwrap_or(onnx))
            .map_err(ort_err)
            .with_context(|| format!("ONNX Runtime cannot optimize {}", onnx.display()));
        if let Some(copy) = &source {
            // Only the optimized model is part of the bundle.
            let _ = std::fs::remove_file(copy);
        }
        optimized?;
        timed("optimize_and_save", t);
        if !artifact.is_file() {
            bail!(
                "ONNX Runtime did not write the optimized model {}",
                artifact.display()
            );
        }

        let t = Instant::now();
        let reloaded = builder(OptimizationLevel::Disable, &overrides)?
            .commit_from_file(&artifact)
            .map_err(ort_err)
            .with_context(|| {
                format!(
                    "ONNX Runtime cannot reload its optimized model {}",
                    artifact.display()
                )
            })?;
        timed("reload_check", t);
        let inputs = specs(reloaded.inputs())?;
        let outputs = specs(reloaded.outputs())?;
        check_no_new_inputs(onnx, &true_inputs, &inputs, level)?;

        write_json_atomic(
            &out_dir.join(SESSION_FILE),
            &json!({
                "schema": SESSION_SCHEMA,
                "onnxruntime": {"version": lib.version, "library": lib.path},
                "optimization_level": level.name(),
                "ort_optimization_level": level.ort_name(),
                "dimension_overrides": overrides,
                "load": {
                    "optimization_level": OptimizationLevel::Disable.name(),
                    "runtime_settings": SETTINGS.iter().map(|s| s.name).collect::<Vec<_>>(),
                },
            }),
        )?;
        log.push(format!(
            "graph optimization level {} ({}), saved offline as {ARTIFACT}",
            level.name(),
            level.ort_name()
        ));
        if level == OptimizationLevel::All || level == OptimizationLevel::Layout {
            log.push(format!(
                "note: level {} may write layout-specific (NCHWc) operators tied to this CPU; the bundle key includes the CPU target",
                level.name()
            ));
        }
        for s in &inputs {
            log.push(format!("input  {}", s.describe()));
        }
        for s in &outputs {
            log.push(format!("output {}", s.describe()));
        }
        let command = json!([
            {"step": "SessionBuilder::with_dimension_override", "overrides": overrides},
            {"step": "SessionBuilder::with_optimization_level", "level": level.ort_name()},
            {"step": "SessionBuilder::with_optimized_model_path", "artifact": ARTIFACT},
            {"step": "IR < 4 only: re-encode as IR 4 without the weights listed as graph inputs", "applied": source.is_some()},
            {"step": "SessionBuilder::commit_from_file", "path": onnx},
            {"step": "reload with optimization disabled", "artifact": ARTIFACT},
        ]);
        Ok(BuildOutput {
            artifact: ARTIFACT.into(),
            inputs,
            outputs,
            steps,
            log,
            command,
        })
    }

    fn load(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Box<dyn Session>> {
        Ok(Box::new(load_session(
            bundle_dir, manifest, settings, None,
        )?))
    }

    fn load_profiling(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
        scratch: &Path,
    ) -> anyhow::Result<Box<dyn Session>> {
        Ok(Box::new(load_session(
            bundle_dir,
            manifest,
            settings,
            Some(scratch),
        )?))
    }
}

fn load_session(
    bundle_dir: &Path,
    manifest: &BundleManifest,
    settings: &BTreeMap<String, Value>,
    profile_dir: Option<&Path>,
) -> anyhow::Result<OrtModel> {
    let session_settings = SessionSettings::from_settings(settings)?;
    let lib = library().map_err(anyhow::Error::msg)?;
    if manifest.runtime.version != lib.version {
        bail!(
            "bundle {} was built with ONNX Runtime {}, this process loads {} from {} (rebuild it with --rebuild)",
            bundle_dir.display(),
            manifest.runtime.version,
            lib.version,
            lib.path.display()
        );
    }
    let overrides = read_session_file(bundle_dir)?;
    let model_path = bundle_dir.join(&manifest.artifact);
    let mut b = apply_settings(
        builder(OptimizationLevel::Disable, &overrides)?,
        &session_settings,
    )?;
    let profiling = match profile_dir {
        None => None,
        Some(dir) => {
            let prefix = dir.join("onnxruntime-profile");
            b = b.with_profiling(&prefix).map_err(ort_err)?;
            Some(Profiling {
                dir: dir.to_path_buf(),
                model_path: model_path.clone(),
                skip_runs: 0,
            })
        }
    };
    let session = b
        .commit_from_file(&model_path)
        .map_err(ort_err)
        .with_context(|| format!("ONNX Runtime cannot load {}", model_path.display()))?;
    Ok(OrtModel {
        session,
        inputs: manifest.inputs.clone(),
        outputs: manifest.outputs.clone(),
        runs: 0,
        profiling,
    })
}

struct Profiling {
    dir: PathBuf,
    model_path: PathBuf,
    /// Runs before `profile_start` (the warm-ups), dropped from the trace.
    skip_runs: u64,
}

struct OrtModel {
    session: OrtSession,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    /// `Session::run` calls so far.
    runs: u64,
    profiling: Option<Profiling>,
}

impl Session for OrtModel {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>> {
        if inputs.len() != self.inputs.len() {
            bail!(
                "expected {} inputs, got {}",
                self.inputs.len(),
                inputs.len()
            );
        }
        let mut values: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(inputs.len());
        // Every element type but float16 and strings is fed as a view of the host array.
        macro_rules! borrowed {
            ($a:expr) => {
                TensorRef::from_array_view($a.view())
                    .map_err(ort_err)?
                    .into()
            };
        }
        for (t, spec) in inputs.iter().zip(&self.inputs) {
            let value: SessionInputValue<'_> = match t {
                // A float16 input is held as f32 on the host (exact) and fed as float16.
                HostTensor::F32(a) if spec.dtype == DType::F16 => {
                    ort::value::Tensor::from_array(a.mapv(f16::from_f32))
                        .map_err(ort_err)?
                        .into()
                }
                HostTensor::Str(a) => ort::value::Tensor::from_string_array(a.view())
                    .map_err(ort_err)?
                    .into(),
                HostTensor::F32(a) => borrowed!(a),
                HostTensor::F64(a) => borrowed!(a),
                HostTensor::I64(a) => borrowed!(a),
                HostTensor::I32(a) => borrowed!(a),
                HostTensor::Bool(a) => borrowed!(a),
                HostTensor::U8(a) => borrowed!(a),
            };
            values.push((Cow::Borrowed(spec.name.as_str()), value));
        }
        self.runs += 1;
        let outputs = self
            .session
            .run(SessionInputs::<'_, '_, 0>::ValueMap(values))
            .map_err(ort_err)?;
        self.outputs
            .iter()
            .map(|spec| {
                let v = outputs
                    .get(spec.name.as_str())
                    .with_context(|| format!("ONNX Runtime returned no output `{}`", spec.name))?;
                let ty = match v.dtype() {
                    ValueType::Tensor { ty, .. } => *ty,
                    other => bail!("output `{}` is not a tensor ({other})", spec.name),
                };
                // Every element type but float16 and strings is copied out as it is.
                macro_rules! owned {
                    ($variant:ident, $t:ty) => {
                        HostTensor::$variant(
                            v.try_extract_array::<$t>().map_err(ort_err)?.to_owned(),
                        )
                    };
                }
                Ok(match ty {
                    TensorElementType::Float32 => owned!(F32, f32),
                    TensorElementType::Float64 => owned!(F64, f64),
                    TensorElementType::Int64 => owned!(I64, i64),
                    TensorElementType::Int32 => owned!(I32, i32),
                    TensorElementType::Bool => owned!(Bool, bool),
                    TensorElementType::Uint8 => owned!(U8, u8),
                    TensorElementType::Float16 => HostTensor::F32(
                        v.try_extract_array::<f16>()
                            .map_err(ort_err)?
                            .mapv(f16::to_f32),
                    ),
                    TensorElementType::String => {
                        HostTensor::Str(v.try_extract_string_array().map_err(ort_err)?)
                    }
                    other => bail!(
                        "output `{}` has element type {other:?}, which trtmc does not read",
                        spec.name
                    ),
                })
            })
            .collect()
    }

    fn profile_start(&mut self) -> anyhow::Result<()> {
        let runs = self.runs;
        let p = self
            .profiling
            .as_mut()
            .context("this ONNX Runtime session was not loaded for profiling")?;
        p.skip_runs = runs;
        Ok(())
    }

    fn profile_finish(&mut self) -> anyhow::Result<LayerProfile> {
        let p = self
            .profiling
            .as_ref()
            .context("this ONNX Runtime session was not loaded for profiling")?;
        let written = PathBuf::from(self.session.end_profiling().map_err(ort_err)?);
        let trace_path = p.dir.join(TRACE_FILE);
        std::fs::rename(&written, &trace_path)
            .or_else(|_| std::fs::copy(&written, &trace_path).map(|_| ()))
            .with_context(|| {
                format!(
                    "cannot move ONNX Runtime's profile {} to {}",
                    written.display(),
                    trace_path.display()
                )
            })?;
        let trace = std::fs::read_to_string(&trace_path)
            .with_context(|| format!("cannot read {}", trace_path.display()))?;
        let graph = graph_nodes(&p.model_path)?;
        let bindings = self
            .inputs
            .iter()
            .chain(&self.outputs)
            .map(|s| s.name.clone())
            .collect();
        layers_from_trace(NAME, &trace, p.skip_runs, &graph, bindings)
    }
}

/// The source model's true inputs (graph inputs that are not weights) and, when it needed one, the
/// re-encoded copy ONNX Runtime optimizes instead of it.
struct SourceGraph {
    inputs: std::collections::HashSet<String>,
    copy: Option<PathBuf>,
    /// Some weight lives in an external data file beside the model (`weights.bin`).
    external_data: bool,
}

/// Models of ONNX IR < 4 must list their weights as graph inputs too; ORT's optimizers fold those weights
/// but keep the inputs as required inputs without data (the onnx wheel's light_resnet50 asked for 213
/// inputs). Such a model is re-encoded as IR 4 without the weight inputs — what IR 4 defines them to mean —
/// into `out_dir`.
fn without_weight_inputs(
    onnx: &Path,
    out_dir: &Path,
    log: &mut Vec<String>,
) -> anyhow::Result<SourceGraph> {
    use prost::Message as _;
    use tract_onnx::prelude::Framework as _;
    let mut proto = tract_onnx::onnx()
        .proto_model_for_path(onnx)
        .with_context(|| format!("cannot read the graph of {}", onnx.display()))?;
    let graph = proto
        .graph
        .as_mut()
        .with_context(|| format!("{} has no graph", onnx.display()))?;
    let weights: std::collections::HashSet<String> =
        graph.initializer.iter().map(|t| t.name.clone()).collect();
    let before = graph.input.len();
    graph.input.retain(|i| !weights.contains(&i.name));
    let dropped = before - graph.input.len();
    let inputs = graph.input.iter().map(|i| i.name.clone()).collect();
    let external_data = graph.initializer.iter().any(|t| {
        t.data_location == Some(tract_onnx::pb::tensor_proto::DataLocation::External as i32)
    });
    if dropped == 0 {
        return Ok(SourceGraph {
            inputs,
            copy: None,
            external_data,
        });
    }
    let ir_version = proto.ir_version;
    proto.ir_version = proto.ir_version.max(4);
    let copy = out_dir.join("source-ir4.onnx");
    std::fs::write(&copy, proto.encode_to_vec())
        .with_context(|| format!("cannot write {}", copy.display()))?;
    log.push(format!(
        "{} (ONNX IR {ir_version}) lists {dropped} weight(s) as graph inputs: re-encoded as IR {} without them before optimizing",
        onnx.display(),
        proto.ir_version
    ));
    Ok(SourceGraph {
        inputs,
        copy: Some(copy),
        external_data,
    })
}

/// Fails when ORT's optimized model requires inputs the source model does not have (`true_inputs`), so
/// that such a bundle fails at build time instead of at its first timed call.
fn check_no_new_inputs(
    onnx: &Path,
    true_inputs: &std::collections::HashSet<String>,
    inputs: &[TensorSpec],
    level: OptimizationLevel,
) -> anyhow::Result<()> {
    let new: Vec<&str> = inputs
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !true_inputs.contains(*n))
        .collect();
    if let Some(first) = new.first() {
        bail!(
            "ONNX Runtime's model optimized at level {} requires {} input(s) that {} does not have (e.g. `{first}`); build it with --set build.optimization_level=disable, and please report the model",
            level.name(),
            new.len(),
            onnx.display(),
        );
    }
    Ok(())
}

/// The nodes of an ONNX file in file order (ORT numbers the nodes of a loaded graph the same way).
pub fn graph_nodes(model: &Path) -> anyhow::Result<Vec<GraphNode>> {
    use tract_onnx::prelude::Framework as _;
    let proto = tract_onnx::onnx()
        .proto_model_for_path(model)
        .with_context(|| format!("cannot read the graph of {}", model.display()))?;
    let graph = proto
        .graph
        .with_context(|| format!("{} has no graph", model.display()))?;
    Ok(graph
        .node
        .into_iter()
        .map(|n| GraphNode {
            name: n.name,
            op_type: n.op_type,
            inputs: n.input,
            outputs: n.output,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_file_names_and_build_info() {
        assert_eq!(
            version_from_file_name(Path::new("/x/capi/libonnxruntime.so.1.31.1")).as_deref(),
            Some("1.31.1")
        );
        assert_eq!(
            version_from_file_name(Path::new("libonnxruntime.1.32.0.dylib")).as_deref(),
            Some("1.32.0")
        );
        assert_eq!(version_from_file_name(Path::new("libonnxruntime.so")), None);
        assert!(older_than_supported("1.30.0"));
        assert!(older_than_supported("0.99.9"));
        assert!(!older_than_supported("1.31.1"));
        assert!(!older_than_supported("1.100.0"));
        assert!(!older_than_supported("2.0.0"));
        assert!(!older_than_supported("dev"), "left to the loader");
        assert_eq!(
            version_from_build_info(
                "ORT Build Info: git-branch=rel-1.31.1, git-commit-id=abc, build type=Release"
            )
            .as_deref(),
            Some("1.31.1")
        );
        assert_eq!(
            version_from_build_info("ORT Build Info: git-branch=main"),
            None
        );
    }

    #[test]
    fn the_declared_optimization_levels_are_the_ones_the_build_reads() {
        let decl = SETTINGS
            .iter()
            .find(|d| d.name == "optimization_level")
            .expect("declared");
        let allowed = decl.allowed();
        let listed: Vec<&str> = allowed.trim_matches(['[', ']']).split('|').collect();
        assert_eq!(listed.join(", "), OptimizationLevel::NAMES);
        for name in listed {
            assert_eq!(OptimizationLevel::parse(name).map(|l| l.name()), Some(name));
        }
        assert_eq!(
            OptimizationLevel::parse(decl.default),
            Some(OptimizationLevel::All)
        );
    }

    #[test]
    fn settings_parse_with_clear_errors() {
        let s = |pairs: &[(&str, Value)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        let parsed = SessionSettings::from_settings(&s(&[
            ("intra_threads", json!(2)),
            ("execution_mode", json!("parallel")),
            ("cpu_arena", json!(false)),
            ("intra_spinning", json!("off")),
        ]))
        .expect("valid");
        assert_eq!(parsed.intra_threads, 2);
        // `threads`, the knob every runtime has, means the intra-op pool; intra_threads wins.
        let common = |pairs: &[(&str, Value)]| {
            SessionSettings::from_settings(
                &pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            )
            .expect("settings")
            .intra_threads
        };
        assert_eq!(common(&[("threads", json!(2))]), 2);
        assert_eq!(
            common(&[("threads", json!(2)), ("intra_threads", json!(1))]),
            1
        );
        assert!(
            SessionSettings::from_settings(&[("threads".to_string(), json!(0))].into()).is_err()
        );
        assert!(parsed.parallel);
        assert_eq!(parsed.cpu_arena, Some(false));
        assert_eq!(parsed.intra_spinning, Some(false));
        assert_eq!(parsed.memory_pattern, None);
        let err = SessionSettings::from_settings(&s(&[("execution_mode", json!("fast"))]))
            .expect_err("bad mode");
        assert!(err.to_string().contains("sequential or parallel"), "{err}");
        let err = SessionSettings::from_settings(&s(&[("memory_pattern", json!("maybe"))]))
            .expect_err("bad bool");
        assert!(err.to_string().contains("true or false"), "{err}");
        assert_eq!(
            OptimizationLevel::from_settings(&s(&[])).expect("default"),
            OptimizationLevel::All
        );
        let err = OptimizationLevel::from_settings(&s(&[("optimization_level", json!("max"))]))
            .expect_err("bad level");
        assert!(
            err.to_string()
                .contains("disable, basic, extended, layout, all"),
            "{err}"
        );
    }
}
