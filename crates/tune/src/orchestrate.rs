//! The orchestration behind `trtmc-bench tune`: the model and its base case, the runtime's knob
//! database, the output directory, the cache fingerprint and header, the route runner driven by the
//! tuning engine, the saved bundles with their `trtmc.tuned-route/v1` record, the summary and the HTML
//! report, and `--continue` from a tuning cache.
//!
//! A [`TuneRequest`] goes in, a [`TuneOutcome`] comes out. It never prints: it reports through
//! [`super::progress::Progress`], and the CLI keeps the options, the progress lines and the decision text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trtmc_core::artifacts::TunedRoute;
use trtmc_core::test_hooks::TestHooks;
use trtmc_runtime::knobs::KnobError;

use crate::cache::{self, CacheError, CacheHeader, CacheWriter, Fingerprint, IterationRecord};
use crate::golden::GoldenError;
use crate::summary::{ChosenRoute, TuneContext, TuneSummary};
use crate::{KnobSet, Reference, RouteRunner, Session, TuneError, TunePlan};
use serde_json::Value;
use trtmc_core::accuracy::Tensor;
use trtmc_core::case::{self, Override, ResolveInput, ResolvedCase};
use trtmc_core::catalog::{Catalog, ModelSource, Profile};
use trtmc_core::fsutil::{
    atomic_temporary_owner, remove_stale_temporaries, write_atomic, write_json_atomic,
};
use trtmc_runtime::runtime::Runtime;

use crate::process::{Options as ProcessOptions, ProcessRunner, RouteBundle, Target};
use crate::progress::{Event, Progress};
use crate::runtime_knobs;
use crate::slurm::{SLURM_DIR, SlurmOptions, SlurmRunner, check_shared_path};
use trtmc_core::artifacts::matrix::SlurmSettings;

/// The tune's JSON summary (`trtmc.tuning-summary/v1`), in the output directory.
pub const SUMMARY_FILE: &str = "tuning-summary.json";
/// The tune's HTML report, beside the summary.
pub const REPORT_FILE: &str = "tuning-report.html";
/// The tuning cache's name in the output directory when `--cache` gives none.
pub const CACHE_FILE: &str = "tuning-cache.jsonl";
/// The chosen route's record, beside a bundle that `--save-bundle` or `--save-all` copies.
pub const TUNED_ROUTE_FILE: &str = "tuned-route.json";
pub use trtmc_core::artifacts::TUNED_ROUTE_SCHEMA;
/// The routes' build and worker logs, inside the output directory.
pub const LOG_DIR: &str = "logs";
/// Scratch space of the routes' processes inside the output directory, removed when the tune ends.
pub const WORK_DIR: &str = ".tune-work";
/// Where `--save-all` copies every eligible route's bundle, inside the output directory.
pub const ALL_BUNDLES_DIR: &str = "bundles";
/// Routes' workers kept loaded at once when the request names no number.
pub const DEFAULT_LIVE_WORKERS: usize = 8;

const SELF_TIMED_MEASUREMENT: &str = "each route is built by its own trtexec process (started by a tune-worker child, \
     killed with it on the route timeout; the trtexec logs stay in logs/route-*.tool) and checked on the same inputs \
     through trtexec --loadInputs/--exportOutput; racing rounds and head-to-head passes each run one trtexec \
     --loadEngine timing (fixed --iterations, --duration=0, --exportTimes) per route in turn, one at a time, at the \
     boundary trtexec_gpu_compute; trtexec's own variance warnings are kept with each iteration";

const MEASUREMENT: &str = "each route is built by its own child process (tune-worker build) into the bundle cache and served by \
     its own worker process that keeps the bundle loaded; racing rounds and head-to-head passes alternate short \
     rounds of calls between the routes' live workers, one command at a time, so two measurements never run at \
     once (at most --live-workers workers stay loaded; the least recently used is stopped and restarted when \
     needed)";

/// Errors that stop a tune, each with the data of what went wrong. The CLI decides the exit code of
/// each (crates/cli/src/exit.rs). An underlying typed error (the tuning engine's, the cache's, a golden
/// file's, a failed write's) is the variant's `source()`; where a lower crate still reports plain text,
/// the variant keeps it as `reason` beside the name of what it concerns.
#[derive(Debug, thiserror::Error)]
pub enum TuneRunError {
    // --- the request is wrong (exit 3) ---
    /// `--onnx` names a file that is no usable ONNX model.
    #[error("--onnx: {source}")]
    Onnx {
        /// The file given to `--onnx`.
        path: PathBuf,
        /// Why it cannot be used.
        source: trtmc_core::catalog::CatalogError,
    },
    /// The catalog at `root` cannot be loaded.
    #[error("{source}")]
    Catalog {
        /// The catalog's root directory.
        root: PathBuf,
        /// Why it cannot be loaded.
        source: trtmc_core::catalog::CatalogError,
    },
    /// The catalog has no such model (the message lists close names).
    #[error("{source}")]
    UnknownModel {
        /// The model name as given.
        model: String,
        /// The catalog's error, with the closest known names.
        source: trtmc_core::catalog::CatalogError,
    },
    /// The model's status (e.g. `unsupported`) says it cannot run.
    #[error("model `{model}` cannot be tuned: {status}")]
    ModelNotReady {
        /// Catalog name of the model.
        model: String,
        /// The model's catalog status, with its note.
        status: String,
    },
    /// A test-only operation outside the test harness.
    #[error("{reason}")]
    TestOnlyOperation {
        /// Catalog name of the model.
        model: String,
        /// Which operation it is and why it is refused here.
        reason: String,
    },
    /// The model has no model file, so nothing can be built.
    #[error("model `{model}` has no model file, so it has no build routes to tune")]
    NoModelFile {
        /// Catalog name of the model.
        model: String,
    },
    /// The base case cannot be resolved (unknown case or field, a bad value).
    #[error("{source}")]
    Case {
        /// Catalog name of the model.
        model: String,
        /// Why the case cannot be resolved.
        source: Box<trtmc_core::case::CaseError>,
    },
    /// No runtime of that name.
    #[error("{reason}")]
    UnknownRuntime {
        /// The runtime name as given.
        runtime: String,
        /// The registry's message, with the known runtimes.
        reason: String,
    },
    /// The runtime has nothing to tune.
    #[error(transparent)]
    NoKnobs(KnobError),
    /// A knob database the runtime gave is not valid (a bad `allowed_values`, a knob defined twice).
    #[error("{reason}")]
    KnobDatabase {
        /// Name of the runtime.
        runtime: String,
        /// What is wrong with the database.
        reason: String,
    },
    /// The tuning cache cannot be created, read or continued, or was written for another tune.
    #[error("{source}")]
    Cache {
        /// The tuning cache file.
        path: PathBuf,
        /// The cache's error.
        #[source]
        source: CacheError,
    },
    /// Another tune writes this tuning cache now (one writer per cache).
    #[error(transparent)]
    Locked(#[from] trtmc_core::dirlock::LockError),
    /// The plan stored in the tuning cache's header no longer holds (`--continue`).
    #[error("{source}")]
    CachedPlan {
        /// The tuning cache file.
        path: PathBuf,
        /// Why its plan cannot be restored.
        #[source]
        source: TuneError,
    },
    /// The model's source file cannot be found, read or fetched.
    #[error("{source}")]
    Source {
        /// Catalog name of the model.
        model: String,
        /// What is missing and how to get it.
        source: Box<trtmc_runner::sources::SourceError>,
    },
    /// The model file cannot be read to take its digest.
    #[error("cannot read the model file {}: {source}", path.display())]
    ModelFile {
        /// The model file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `--inputs` or `--ref-outputs` cannot be read as golden tensors.
    #[error("{flag}: {source}")]
    Golden {
        /// `--inputs` or `--ref-outputs`.
        flag: &'static str,
        /// Why the file cannot be read.
        #[source]
        source: GoldenError,
    },
    /// `--inputs` or `--ref-outputs` names a data set (a folder or trtexec's `name:file.bin` list)
    /// that cannot be read for this model.
    #[error("{flag}: {reason}")]
    DataSet {
        /// `--inputs` or `--ref-outputs`.
        flag: &'static str,
        /// Why the data set cannot be read for this model.
        reason: String,
    },
    /// The model's tokenizer cannot be found or fetched.
    #[error("{source}")]
    Tokenizer {
        /// Catalog name of the model.
        model: String,
        /// What is missing and how to get it.
        source: Box<trtmc_runner::sources::SourceError>,
    },
    /// `--executor slurm`: a file the tasks read or write is not on a path every node sees.
    #[error("{source}")]
    NotShared {
        /// What the path is, in words (`the tuning cache (--cache)`).
        what: &'static str,
        /// The path that is not shared.
        path: PathBuf,
        /// Why it is not on a shared file system.
        source: crate::slurm::SharedPathError,
    },
    // --- the machine lacks something (exit 7) ---
    /// The runtime's library or tool is missing, so its routes cannot be built and measured here.
    #[error("{reason}")]
    Unavailable {
        /// Name of the runtime.
        runtime: String,
        /// What is missing and how to provide it.
        reason: String,
    },
    /// The runtime's tool (trtexec) could not list its knobs.
    #[error("{reason}")]
    KnobTool {
        /// Name of the runtime.
        runtime: String,
        /// The tool's failure.
        reason: String,
    },
    /// The routes' processes cannot be started.
    #[error(transparent)]
    RouteProcesses(#[from] crate::process::StartError),
    /// `--executor slurm`: no Slurm controller answers.
    #[error("{reason}")]
    SlurmController {
        /// Slurm's answer (or why it could not be asked).
        reason: String,
    },
    // --- an output is refused or cannot be written (exit 4) ---
    /// The output directory (`-o`) is refused.
    #[error("-o {}: {reason}; choose another directory", dir.display())]
    OutputDir {
        /// The directory given to `-o`.
        dir: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// `--save-bundle` (or `--save-all`'s copy) is refused or cannot be written.
    #[error("--save-bundle {}: {reason}", dir.display())]
    SaveBundle {
        /// The directory given to `--save-bundle` (or `--save-all`).
        dir: PathBuf,
        /// Why it is refused or cannot be written.
        reason: String,
    },
    /// A file or directory of the tune's output cannot be written.
    #[error("cannot {action} {}", path.display())]
    Write {
        /// What was attempted, as a verb phrase (`create`, `write`, …).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The tuning engine stopped (bad plan, cache damage, reference outputs that cannot be computed).
    #[error(transparent)]
    Engine(#[from] TuneError),
    /// The merged knob database contradicts itself (a bug, not the user's input).
    #[error("{reason}")]
    KnobSet {
        /// Name of the runtime.
        runtime: String,
        /// The contradiction found.
        reason: String,
    },
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Which model to tune.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChoice {
    /// Any ONNX file: generic inference on seeded synthesized inputs.
    OnnxFile(PathBuf),
    /// A profile of the catalog at `root`.
    Catalog {
        /// The profile's name (`--model`).
        name: String,
        /// The catalog's root directory.
        root: PathBuf,
    },
}

/// A model ready to tune: its profile and, for a catalog profile, the catalog's root.
#[derive(Debug, Clone)]
pub struct Model {
    /// The model's profile (for `--onnx`, one made for the file).
    pub profile: Profile,
    /// The catalog's root for a catalog profile; `None` for `--onnx`.
    pub catalog_root: Option<PathBuf>,
}

impl Model {
    /// `test_hooks` decides whether a test-only operation may be tuned (only under the test harness).
    pub fn load(choice: &ModelChoice, test_hooks: &TestHooks) -> Result<Model, TuneRunError> {
        let (name, root) = match choice {
            ModelChoice::OnnxFile(onnx) => {
                return Ok(Model {
                    profile: Profile::from_onnx_file(onnx).map_err(|source| {
                        TuneRunError::Onnx {
                            path: onnx.clone(),
                            source,
                        }
                    })?,
                    catalog_root: None,
                });
            }
            ModelChoice::Catalog { name, root } => (name, root),
        };
        let catalog = Catalog::load(root).map_err(|source| TuneRunError::Catalog {
            root: root.clone(),
            source,
        })?;
        let profile = catalog
            .require(name)
            .map_err(|source| TuneRunError::UnknownModel {
                model: name.clone(),
                source,
            })?
            .clone();
        if !profile.status.is_ready() {
            return Err(TuneRunError::ModelNotReady {
                model: profile.name.clone(),
                status: profile.status.label().to_string(),
            });
        }
        test_hooks
            .check_operation(&profile)
            .map_err(|e| TuneRunError::TestOnlyOperation {
                model: profile.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(Model {
            profile,
            catalog_root: Some(root.clone()),
        })
    }

    /// The case every route starts from: `case` (default: the first) with the fixed overrides.
    pub fn resolve_base(
        &self,
        case: Option<&str>,
        sets: &[Override],
        runtime_name: &str,
    ) -> Result<ResolvedCase, TuneRunError> {
        if matches!(self.profile.source, ModelSource::None) {
            return Err(TuneRunError::NoModelFile {
                model: self.profile.name.clone(),
            });
        }
        let input = ResolveInput {
            case,
            sets: sets.to_vec(),
            runtime: Some(runtime_name.to_string()),
            ..ResolveInput::default()
        };
        case::resolve(
            &self.profile,
            &input,
            trtmc_runtime::registry::declared_settings(),
        )
        .map_err(|source| TuneRunError::Case {
            model: self.profile.name.clone(),
            source: Box::new(source),
        })
    }
}

/// Refuses a runtime whose routes cannot be built and measured here (its library or tool is missing).
pub fn check_measurable(rt: &dyn Runtime) -> Result<(), TuneRunError> {
    rt.availability().map_err(|e| TuneRunError::Unavailable {
        runtime: rt.name().to_string(),
        reason: e.to_string(),
    })
}

/// The runtime's knob databases, merged (plus the test knobs under the test harness); a session
/// runtime's knobs default to the case `base` resolves.
pub fn knob_database(
    rt: &dyn Runtime,
    base: Option<&ResolvedCase>,
) -> Result<KnobSet, TuneRunError> {
    let runtime = rt.name().to_string();
    runtime_knobs::knob_set(rt, base).map_err(|e| match e {
        runtime_knobs::KnobSetError::Runtime(KnobError::Tool(reason)) => {
            TuneRunError::KnobTool { runtime, reason }
        }
        runtime_knobs::KnobSetError::Runtime(e @ KnobError::NoKnobs { .. }) => {
            TuneRunError::NoKnobs(e)
        }
        runtime_knobs::KnobSetError::Database(reason) => {
            TuneRunError::KnobDatabase { runtime, reason }
        }
        runtime_knobs::KnobSetError::Internal(reason) => TuneRunError::KnobSet { runtime, reason },
    })
}

/// The output directory (default `trtmc-results/tune-<time>`): created when missing; an existing one
/// must be empty or hold a tune's files.
pub fn prepare_output(output: Option<&Path>) -> Result<PathBuf, TuneRunError> {
    let dir = match output {
        Some(d) => absolute(d),
        None => {
            let stamp = jiff::ZonedDateTime::now()
                .strftime("%Y%m%d-%H%M%S")
                .to_string();
            absolute(&PathBuf::from("trtmc-results").join(format!("tune-{stamp}")))
        }
    };
    let refuse = |reason: String| TuneRunError::OutputDir {
        dir: dir.clone(),
        reason,
    };
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => return Err(refuse("it is a symlink".into())),
        Ok(m) if !m.is_dir() => return Err(refuse("it is a file".into())),
        Ok(_) => {
            // A killed tune's half-written summary or report is not "something a tune did not write".
            remove_stale_temporaries(&dir, atomic_temporary_owner);
            let entries: Vec<String> = std::fs::read_dir(&dir)
                .map_err(|e| refuse(format!("it cannot be read: {e}")))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            let ours = [
                SUMMARY_FILE,
                REPORT_FILE,
                CACHE_FILE,
                LOG_DIR,
                WORK_DIR,
                ALL_BUNDLES_DIR,
                SLURM_DIR,
            ];
            if let Some(other) = entries.iter().find(|e| !ours.contains(&e.as_str())) {
                return Err(refuse(format!(
                    "it holds `{other}`, which a tune did not write"
                )));
            }
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(&dir).map_err(|e| refuse(format!("it cannot be created: {e}")))?;
    Ok(dir)
}

/// The header of the tuning cache at `path` (for `--continue`, which restores the tune's options from
/// its stored command line).
pub fn read_cache_header(path: &Path) -> Result<CacheHeader, TuneRunError> {
    Ok(cache::read(path)
        .map_err(|source| TuneRunError::Cache {
            path: path.to_path_buf(),
            source,
        })?
        .header)
}

/// One tune: the model and where everything goes. The plan comes with [`Start`].
#[derive(Debug, Clone)]
pub struct TuneRequest {
    /// The model to tune.
    pub model: Model,
    /// The case with the fixed overrides ([`Model::resolve_base`]): the default route's settings.
    pub base: ResolvedCase,
    /// Name of the runtime whose routes are tuned (`--runtime`).
    pub runtime: String,
    /// The trtexec the tensorrt runtime drives (`--trtexec`); `None`: found on `PATH`.
    pub trtexec: Option<PathBuf>,
    /// The case and the fixed overrides every route starts from (`--case`, `--set`, `--shape`, `--dim`).
    pub case: Option<String>,
    /// The fixed overrides (`--set`, `--shape`, `--dim`) every route starts from.
    pub sets: Vec<Override>,
    /// The output directory ([`prepare_output`] for a new tune).
    pub output_dir: PathBuf,
    /// The tuning cache file, appended to after every iteration.
    pub cache: PathBuf,
    /// Golden inputs; `None`: seeded inputs.
    pub inputs: Option<PathBuf>,
    /// Golden outputs for `inputs`; `None`: the default route's outputs.
    pub ref_outputs: Option<PathBuf>,
    /// Copy the chosen route's bundle here (with `tuned-route.json`).
    pub save_bundle: Option<PathBuf>,
    /// Also copy every eligible route's bundle into `output_dir/bundles`.
    pub save_all: bool,
    /// The managed bundle cache the routes are built into (shared with `run`).
    pub bundle_cache: PathBuf,
    /// `--live-workers`: most route workers kept loaded at once (the least recently used is stopped).
    pub live_workers: usize,
    /// The tune's options as an argument vector: stored in the cache header (`--continue` parses it
    /// back) and shown in the summary.
    pub command_line: Vec<String>,
    /// The executable whose `tune-worker` subcommand runs the routes' child processes.
    pub worker_exe: PathBuf,
    /// `--executor slurm`: the environment's Slurm settings (builds as job arrays); `None`: local.
    pub slurm: Option<SlurmSettings>,
    /// Renders the report page from the summary (the CLI passes the report crate's renderer).
    pub page: TunePage,
}

/// A tune's page from its summary: the orchestrator writes the page it is given and knows no HTML.
pub type TunePage = fn(&TuneSummary) -> String;

/// A new tune with its plan, or the continuation of the one in the request's cache.
#[expect(clippy::large_enum_variant, reason = "one value per tune, moved once")]
pub enum Start {
    /// A new tune of this plan, into a new cache.
    New(TunePlan),
    /// The cache header ([`read_cache_header`]) restores the plan; its recorded iterations are replayed.
    Continue(CacheHeader),
}

/// A finished tune. `summary.all_failed()` when no route was eligible (the files are written anyway).
#[derive(Debug)]
pub struct TuneOutcome {
    /// The tune's summary as written.
    pub summary: TuneSummary,
    /// Where the summary was written ([`SUMMARY_FILE`] in the output directory).
    pub summary_file: PathBuf,
    /// Where the HTML report was written ([`REPORT_FILE`]).
    pub report_file: PathBuf,
    /// The routes' logs ([`LOG_DIR`]).
    pub log_dir: PathBuf,
}

/// A route runner that knows the bundle of every route it built (for `--save-bundle`, `--save-all`).
pub trait BuiltRoutes {
    /// The bundle built for `route` (its display form), if this runner built it.
    fn route_bundle(&self, route: &str) -> Option<RouteBundle>;
}

impl BuiltRoutes for ProcessRunner {
    fn route_bundle(&self, route: &str) -> Option<RouteBundle> {
        self.built.get(route).cloned()
    }
}

/// Runs a tune with the real route runner: one build process and one serving worker per route, the
/// builds as Slurm job arrays with `request.slurm`.
pub fn run(
    request: &TuneRequest,
    start: Start,
    progress: &dyn Progress,
) -> Result<TuneOutcome, TuneRunError> {
    let Some(settings) = &request.slurm else {
        return run_with(request, start, progress, |target, options| {
            Ok(ProcessRunner::new(target, options)?)
        });
    };
    // Before the cache, the reference build or any submission.
    check_slurm(request, settings)?;
    let dir = request.output_dir.join(SLURM_DIR);
    // A new tune in the directory of an earlier one must not take that tune's build results for its own.
    if matches!(start, Start::New(_)) && dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|source| TuneRunError::Write {
            action: "remove",
            path: dir.clone(),
            source,
        })?;
    }
    run_with(request, start, progress, |target, options| {
        let inner = ProcessRunner::new(target, options)?;
        let options = SlurmOptions {
            settings: settings.clone(),
            exe: request.worker_exe.clone(),
            dir,
        };
        Ok(SlurmRunner::new(inner, options, progress))
    })
}

/// What `--executor slurm` needs before anything is submitted: the files the tasks read and write on
/// paths every node sees (else an input error, exit 3), and a reachable controller (else exit 7).
pub fn check_slurm(request: &TuneRequest, settings: &SlurmSettings) -> Result<(), TuneRunError> {
    let mut paths = vec![
        ("the output directory (-o)", request.output_dir.clone()),
        ("the tuning cache (--cache)", request.cache.clone()),
        (
            "the bundle cache (--bundle-cache)",
            request.bundle_cache.clone(),
        ),
        ("the trtmc-bench the tasks run", request.worker_exe.clone()),
    ];
    // The tasks read the model's files from its folder (its MODEL.toml's, or the --onnx file's).
    paths.push((
        "the model's folder",
        request.model.profile.dir().to_path_buf(),
    ));
    for (what, path) in paths {
        check_shared_path(what, &path, settings).map_err(|source| TuneRunError::NotShared {
            what,
            path,
            source,
        })?;
    }
    trtmc_executor::slurm::check_controller().map_err(|e| TuneRunError::SlurmController {
        reason: e.to_string(),
    })
}

/// [`run`] with the route runner that `make_runner` makes from the target and the runner's options.
pub fn run_with<R, F>(
    request: &TuneRequest,
    start: Start,
    progress: &dyn Progress,
    make_runner: F,
) -> Result<TuneOutcome, TuneRunError>
where
    R: RouteRunner + BuiltRoutes,
    F: FnOnce(Target, ProcessOptions) -> Result<R, TuneRunError>,
{
    // A destination the end of the tune would refuse is refused before it runs.
    if let Some(dir) = &request.save_bundle {
        check_save_destination(&absolute(dir))?;
    }
    // One writer per tuning cache: a second tune on it (`--continue` or new) is refused before it
    // reads or writes the cache, so no iteration is written twice.
    if let Some(parent) = request.cache.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _lock = trtmc_core::dirlock::DirLock::acquire(
        &trtmc_core::dirlock::sibling_lock_path(&request.cache),
        &format!("the tuning cache {}", request.cache.display()),
    )?;
    let (plan, prepared, mut writer, previous) = match start {
        Start::New(plan) => {
            // Before the cache file and the reference build.
            plan.check_space()?;
            let prepared = prepare(request)?;
            let header = CacheHeader::new(
                plan.config.clone(),
                plan.knobs.to_db(),
                plan.expression.to_string(),
                prepared.fingerprint.clone(),
                request.command_line.clone(),
                prepared.files.clone(),
            );
            let writer = CacheWriter::create(&request.cache, &header)
                .map_err(|source| cache_err(request, source))?;
            (plan, prepared, writer, Vec::new())
        }
        Start::Continue(header) => {
            let plan =
                TunePlan::from_header(&header).map_err(|source| TuneRunError::CachedPlan {
                    path: request.cache.clone(),
                    source,
                })?;
            let out_dir = &request.output_dir;
            std::fs::create_dir_all(out_dir).map_err(|source| TuneRunError::Write {
                action: "create",
                path: out_dir.clone(),
                source,
            })?;
            remove_stale_temporaries(out_dir, atomic_temporary_owner);
            let prepared = prepare(request)?;
            header
                .check_fingerprint(&prepared.fingerprint)
                .map_err(|source| cache_err(request, source))?;
            let (content, writer) = cache::open_for_continue(&request.cache)
                .map_err(|source| cache_err(request, source))?;
            if content.torn_bytes > 0 {
                progress.report(Event::TornCacheLine {
                    bytes: content.torn_bytes,
                    cache: &request.cache,
                });
            }
            (plan, prepared, writer, content.records)
        }
    };
    search(
        request,
        &plan,
        prepared,
        &mut writer,
        previous,
        progress,
        make_runner,
    )
}

fn cache_err(request: &TuneRequest, source: CacheError) -> TuneRunError {
    TuneRunError::Cache {
        path: request.cache.clone(),
        source,
    }
}

/// What a tune needs besides its plan: the runner's target, the fingerprint and the golden data.
struct Prepared {
    /// The runtime's own tool owns the timed loop (trtexec).
    self_timed: bool,
    target: Target,
    fingerprint: Fingerprint,
    files: BTreeMap<String, String>,
    model_sha256: String,
    runtime_version: String,
    inputs: Vec<Tensor>,
    reference: Reference,
    operation: String,
}

fn prepare(request: &TuneRequest) -> Result<Prepared, TuneRunError> {
    let model = &request.model;
    let base = &request.base;
    let runtime_name = request.runtime.as_str();
    let onnx = trtmc_runner::sources::materialize(&model.profile, &request.bundle_cache).map_err(
        |source| TuneRunError::Source {
            model: model.profile.name.clone(),
            source: Box::new(source),
        },
    )?;
    let model_sha256 =
        trtmc_core::hash::file_sha256(&onnx).map_err(|source| TuneRunError::ModelFile {
            path: onnx.clone(),
            source,
        })?;
    let runtime_options = trtmc_runtime::runtime::RuntimeOptions {
        trtexec: request.trtexec.clone(),
        probe_cache: Some(absolute(&request.bundle_cache)),
    };
    let rt = trtmc_runtime::registry::runtime_with(runtime_name, &runtime_options).map_err(
        |reason| TuneRunError::UnknownRuntime {
            runtime: runtime_name.to_string(),
            reason,
        },
    )?;
    let runtime_version = rt.version();
    let self_timed = rt.self_timed().is_some();
    let mut shapes = BTreeMap::new();
    let mut build_settings = BTreeMap::new();
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (k, v) in base.build_values() {
        if let Some(input) = k.strip_prefix("shapes.") {
            shapes.insert(input.to_string(), text(&v));
        } else {
            build_settings.insert(format!("build.{k}"), text(&v));
        }
    }
    for (k, v) in base.runtime_values() {
        build_settings.insert(format!("runtime.{k}"), text(&v));
    }
    for (k, v) in &base.request {
        build_settings.insert(format!("request.{k}"), text(&v.value));
    }
    build_settings.insert("operation".into(), base.operation.clone());
    build_settings.insert("case".into(), base.case.clone());
    let fingerprint = Fingerprint {
        model_sha256: model_sha256.clone(),
        runtime: runtime_name.to_string(),
        runtime_version: runtime_version.clone(),
        machine: trtmc_core::machine::machine().fingerprint_line(),
        shapes,
        build_settings,
    };
    let mut files = BTreeMap::new();
    files.insert("onnx".to_string(), onnx.display().to_string());
    if let Some(root) = &model.catalog_root {
        files.insert(
            "manifest_root".to_string(),
            absolute(root).display().to_string(),
        );
    }
    // A file as before; a folder (NAME.npy, input_N.pb/output_N.pb, one test_data_set_N) or
    // trtexec's name:file.bin list as `run --inputs` reads it, unnamed tensors named by the model.
    let read = |flag: &'static str, p: &Path, kind: trtmc_runtime::data::DataKind| {
        if p.is_file() {
            return crate::golden::read_golden(p)
                .map_err(|source| TuneRunError::Golden { flag, source });
        }
        let data_set = |reason: String| TuneRunError::DataSet { flag, reason };
        let (inputs, outputs) =
            trtmc_runtime::data::declared_io(&onnx).map_err(|e| data_set(format!("{e:#}")))?;
        let declared = match kind {
            trtmc_runtime::data::DataKind::Inputs => inputs,
            trtmc_runtime::data::DataKind::Outputs
            | trtmc_runtime::data::DataKind::OutputsOf(_) => outputs,
        };
        trtmc_runtime::data::read_one_set(&p.display().to_string(), kind, &declared)
            .map_err(|e| data_set(e.to_string()))
    };
    let mut inputs = match &request.inputs {
        Some(p) => {
            files.insert("inputs".into(), absolute(p).display().to_string());
            read("--inputs", p, trtmc_runtime::data::DataKind::Inputs)?
        }
        None => Vec::new(),
    };
    let mut reference = match &request.ref_outputs {
        Some(p) => {
            files.insert("ref_outputs".into(), absolute(p).display().to_string());
            Reference::Given(read(
                "--ref-outputs",
                p,
                trtmc_runtime::data::DataKind::OutputsOf("--ref-outputs"),
            )?)
        }
        None => Reference::DefaultRoute,
    };
    // A runtime inside its own tool (trtexec) whose default route fails still gets golden outputs:
    // ONNX Runtime's on the ONNX file, on the very inputs every route then gets.
    if self_timed && request.ref_outputs.is_none() {
        let work = request.output_dir.join(WORK_DIR).join("golden");
        // Without ONNX Runtime the default route is the only golden, as for every runtime.
        if let Ok(golden) = onnxruntime_golden(&onnx, base, &inputs, &work) {
            inputs = golden.inputs;
            reference = Reference::DefaultRouteElse {
                source: golden.source,
                outputs: golden.outputs,
            };
        }
        let _ = std::fs::remove_dir_all(&work);
    }
    let mut profile = model.profile.clone();
    profile.tokenizer =
        trtmc_runner::sources::resolve_tokenizer(&profile, trtmc_runner::sources::Fetch::Allowed)
            .map_err(|source| TuneRunError::Tokenizer {
            model: profile.name.clone(),
            source: Box::new(source),
        })?;
    let target = Target {
        profile,
        case: request.case.clone(),
        sets: request.sets.clone(),
        runtime: runtime_name.to_string(),
        onnx,
        trtexec: request.trtexec.clone(),
    };
    Ok(Prepared {
        self_timed,
        target,
        fingerprint,
        files,
        model_sha256,
        runtime_version,
        inputs,
        reference,
        operation: base.operation.clone(),
    })
}

/// ONNX Runtime's outputs on the ONNX file, with the inputs they were computed on.
struct Golden {
    source: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

/// Builds an ONNX Runtime bundle of `onnx` in `work` (with the base case's shapes and dimensions), runs
/// it once on `given` (else on the case's seeded inputs) and returns inputs and outputs.
fn onnxruntime_golden(
    onnx: &Path,
    base: &ResolvedCase,
    given: &[Tensor],
    work: &Path,
) -> anyhow::Result<Golden> {
    use trtmc_runtime::outputs::{
        build_dims, from_tensor, run_session, synthesize_inputs, to_tensor,
    };
    let ort = trtmc_runtime::registry::runtime("onnxruntime").map_err(anyhow::Error::msg)?;
    ort.availability()?;
    let settings: BTreeMap<String, Value> = base
        .build_values()
        .into_iter()
        .filter(|(k, _)| k.starts_with("dims.") || k.starts_with("shapes."))
        .collect();
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", work.display()))?;
    let created = jiff::Timestamp::now().to_string();
    let plan = trtmc_runtime::bundle::BuildPlan {
        key: "golden",
        model: "golden",
        onnx,
        settings: &settings,
        command_line: &[],
        created: &created,
        source_commit: None,
    };
    trtmc_runtime::bundle::build_bundle(ort.as_ref(), &plan, work)?;
    let manifest = trtmc_runtime::bundle::BundleManifest::read(work)?;
    let mut session = ort.load(work, &manifest, &BTreeMap::new())?;
    let specs = session.inputs().to_vec();
    let named = if given.is_empty() {
        let dims = build_dims(&settings);
        let seed = base
            .request_value("seed")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let tensors = synthesize_inputs(&specs, seed, &dims)?;
        specs
            .iter()
            .map(|s| s.name.clone())
            .zip(tensors)
            .collect::<Vec<_>>()
    } else {
        specs
            .iter()
            .map(|spec| {
                let t = given
                    .iter()
                    .find(|t| t.name == spec.name)
                    .ok_or_else(|| anyhow::anyhow!("--inputs has no input `{}`", spec.name))?;
                Ok((spec.name.clone(), from_tensor(t, spec.dtype)?))
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let outputs = run_session(session.as_mut(), &named)?;
    let convert = |list: &[(String, trtmc_runtime::tensor::HostTensor)]| {
        list.iter()
            .map(|(n, t)| to_tensor(n, t))
            .collect::<anyhow::Result<Vec<_>>>()
    };
    Ok(Golden {
        source: format!("onnxruntime {} on {}", ort.version(), onnx.display()),
        inputs: convert(&named)?,
        outputs: convert(&outputs)?,
    })
}

/// Drives the engine over the plan's routes, then saves bundles and writes the summary and the report.
fn search<R, F>(
    request: &TuneRequest,
    plan: &TunePlan,
    prepared: Prepared,
    writer: &mut CacheWriter,
    previous: Vec<IterationRecord>,
    progress: &dyn Progress,
    make_runner: F,
) -> Result<TuneOutcome, TuneRunError>
where
    R: RouteRunner + BuiltRoutes,
    F: FnOnce(Target, ProcessOptions) -> Result<R, TuneRunError>,
{
    let out_dir = request.output_dir.as_path();
    let work_dir = out_dir.join(WORK_DIR);
    let options = ProcessOptions {
        exe: request.worker_exe.clone(),
        cache_root: absolute(&request.bundle_cache),
        work_dir: work_dir.clone(),
        log_dir: out_dir.join(LOG_DIR),
        max_live_workers: request.live_workers,
        command_line: request.command_line.clone(),
    };
    let Prepared {
        self_timed,
        target,
        files,
        model_sha256,
        runtime_version,
        inputs,
        reference,
        operation,
        ..
    } = prepared;
    let model_name = target.profile.name.clone();
    let model_file = target.onnx.display().to_string();
    let runtime_name = target.runtime.clone();
    let mut runner = make_runner(target, options)?;
    let objective = plan.config.objective;
    let mut each = |rec: &IterationRecord, replayed: bool| {
        progress.report(Event::Iteration {
            record: rec,
            replayed,
            objective,
        });
    };
    progress.report(Event::TuneStarted {
        model: &model_name,
        runtime: &runtime_name,
        plan,
        cache: writer.path(),
    });
    let session = Session {
        cache: Some(writer),
        previous,
        stop_after_new_iterations: None,
        progress: Some(&mut each),
    };
    let outcome = crate::tune(&mut runner, plan, &inputs, &reference, session);
    let mut summary = outcome?;
    let _ = std::fs::remove_dir_all(&work_dir);

    let decided = summary.decision.route.clone();
    let mut context_files = BTreeMap::new();
    let mut chosen_route = None;
    if let Some(route) = &decided {
        let info = runner.route_bundle(route);
        let saved = match (&request.save_bundle, &info) {
            (Some(dir), Some(info)) => Some(save_bundle(info, dir, &summary)?),
            _ => None,
        };
        chosen_route = info.map(|i| chosen_settings(&i, saved.clone()));
        if let Some(s) = saved {
            context_files.insert("saved_bundle".to_string(), s);
        }
    }
    if request.save_all {
        let dir = out_dir.join(ALL_BUNDLES_DIR);
        for r in summary.routes.iter().filter(|r| r.eligible) {
            if let Some(info) = runner.route_bundle(&r.route) {
                let name = format!("iter{:03}.bundle", r.iter);
                save_bundle(&info, &dir.join(name), &summary)?;
            }
        }
        context_files.insert("all_bundles".into(), dir.display().to_string());
    }
    // Stops the routes' workers before the files that say the tune is over are written.
    drop(runner);
    for (k, v) in files {
        context_files.insert(k, v);
    }
    context_files.insert(
        "report".into(),
        out_dir.join(REPORT_FILE).display().to_string(),
    );
    summary.context = Some(TuneContext {
        model: model_name,
        model_file,
        model_sha256,
        runtime: runtime_name,
        runtime_version,
        machine: trtmc_core::machine::machine().fingerprint_line(),
        operation,
        measurement: if self_timed {
            SELF_TIMED_MEASUREMENT
        } else {
            MEASUREMENT
        }
        .into(),
        command_line: trtmc_core::text::shell_line(&request.command_line),
        cache: Some(absolute(&request.cache).display().to_string()),
        chosen: chosen_route,
        files: context_files,
        created: Some(jiff::Timestamp::now().to_string()),
        program: Some(trtmc_runner::machine::program()),
        machine_info: Some(trtmc_core::machine::machine()),
    });
    let summary_path = out_dir.join(SUMMARY_FILE);
    write_json_atomic(&summary_path, &summary).map_err(|source| TuneRunError::Write {
        action: "write",
        path: summary_path.clone(),
        source,
    })?;
    let html = (request.page)(&summary);
    let report_path = out_dir.join(REPORT_FILE);
    write_atomic(&report_path, html.as_bytes()).map_err(|source| TuneRunError::Write {
        action: "write",
        path: report_path.clone(),
        source,
    })?;
    Ok(TuneOutcome {
        summary,
        summary_file: summary_path,
        report_file: report_path,
        log_dir: out_dir.join(LOG_DIR),
    })
}

fn chosen_settings(info: &RouteBundle, saved: Option<String>) -> ChosenRoute {
    ChosenRoute {
        route: info.route.clone(),
        build_settings: info.resolved.build_values(),
        runtime_settings: info.resolved.runtime_values(),
        other: BTreeMap::new(),
        run_sets: runtime_knobs::run_sets(&info.settings),
        saved_bundle: saved,
    }
}

/// Copies a route's bundle to `dir` (which must be absent, empty, or an earlier saved bundle) and writes
/// `tuned-route.json` beside its files.
fn save_bundle(
    info: &RouteBundle,
    dir: &Path,
    summary: &TuneSummary,
) -> Result<String, TuneRunError> {
    let dir = absolute(dir);
    let refuse = |reason: String| TuneRunError::SaveBundle {
        dir: dir.clone(),
        reason,
    };
    if check_save_destination(&dir)? {
        std::fs::remove_dir_all(&dir).map_err(|e| refuse(format!("cannot replace it: {e}")))?;
    }
    copy_dir(&info.bundle, &dir)
        .map_err(|e| refuse(format!("cannot copy {}: {e}", info.bundle.display())))?;
    let route = summary.route(&info.route);
    let record = TunedRoute {
        schema: TUNED_ROUTE_SCHEMA.into(),
        route: info.route.clone(),
        decision: summary.decision.kind,
        chosen: summary.decision.route.as_deref() == Some(info.route.as_str()),
        build_settings: info.resolved.build_values(),
        runtime_settings: info.resolved.runtime_values(),
        run_sets: runtime_knobs::run_sets(&info.settings),
        estimate: route.and_then(|r| r.search.clone()),
        source_bundle: info.bundle.display().to_string(),
    };
    write_json_atomic(&dir.join(TUNED_ROUTE_FILE), &record)
        .map_err(|e| refuse(format!("cannot write {TUNED_ROUTE_FILE}: {e}")))?;
    Ok(dir.display().to_string())
}

/// Whether `dir` may receive a saved bundle: absent (`Ok(false)`), or an empty directory or an
/// earlier saved bundle to replace (`Ok(true)`); a symlink, a file or another directory is refused.
fn check_save_destination(dir: &Path) -> Result<bool, TuneRunError> {
    let refuse = |reason: &str| TuneRunError::SaveBundle {
        dir: dir.to_path_buf(),
        reason: reason.to_string(),
    };
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return Ok(false);
    };
    if m.file_type().is_symlink() || !m.is_dir() {
        return Err(refuse("it exists and is not a directory"));
    }
    let empty = std::fs::read_dir(dir)
        .map(|mut e| e.next().is_none())
        .unwrap_or(false);
    if !empty && !dir.join(TUNED_ROUTE_FILE).is_file() {
        return Err(refuse(
            "it is not empty and holds no tuned-route.json (choose another directory)",
        ));
    }
    Ok(true)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
