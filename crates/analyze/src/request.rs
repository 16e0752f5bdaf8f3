//! What to analyze ([`Request`], [`Inputs`], [`Options`]) and the entry point, [`analyze`], that reads
//! the inputs, analyzes every backend, compares them and returns the [`Analysis`] document.

use std::path::{Path, PathBuf};

use crate::analysis::{
    Analysis, Backend, Context, Generator, InputInfo, InputMode, Overall, OverallStatus, SCHEMA,
};
use crate::backend;
use crate::compare;
use crate::discover::{self, BackendFiles, DataSpec, DiscoverError};
use crate::identity;

/// What to analyze.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// A folder that directly holds layer-info / profile files.
    Folder(PathBuf),
    /// Explicit `--data LAYERS [PROFILE [TIMES]]` groups.
    Data(Vec<DataSpec>),
    /// A previously written `analyze-data.json` (published v1.0 format), analyzed again.
    AnalyzeData(PathBuf),
}

/// One analysis to run: the inputs and the model name to use.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the exports are.
    pub inputs: Inputs,
    /// `--model-name`: wins over every inferred name.
    pub model_name: Option<String>,
}

/// Choices that change how the backends are compared, not what is read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--baseline LABEL`: the backend every other one is compared with (default: the first
    /// `--data` given, or the first in folder order).
    pub baseline: Option<String>,
}

/// Nothing structured can be emitted (the caller exits nonzero).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The folder yields no backends.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// [`Inputs::Data`] with no group.
    #[error("--data needs at least one layer-info file")]
    NoData,
    /// The `analyze-data.json` given cannot be read as the published format.
    #[error("{path}: {message}")]
    AnalyzeData {
        /// The file given.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `--baseline` names no backend's label.
    #[error("--baseline {label:?} names no backend; the backends are: {}", .labels.join(", "))]
    UnknownBaseline {
        /// The label given.
        label: String,
        /// The backends' labels.
        labels: Vec<String>,
    },
}

/// Runs the whole analysis. Fails only when nothing structured can be produced.
pub fn analyze(request: &Request) -> Result<Analysis, AnalyzeError> {
    analyze_with(request, &Options::default())
}

/// [`analyze`] with comparison choices (`--baseline`).
pub fn analyze_with(request: &Request, options: &Options) -> Result<Analysis, AnalyzeError> {
    let read = read_inputs(&request.inputs)?;
    let labels: Vec<String> = read.loaded.iter().map(|l| l.label.clone()).collect();
    if let Some(label) = options.baseline.as_ref().filter(|l| !labels.contains(l)) {
        return Err(AnalyzeError::UnknownBaseline {
            label: label.clone(),
            labels,
        });
    }
    let explicit = request
        .model_name
        .as_deref()
        .or(read.recorded_name.as_deref());
    let ctx = context(
        explicit,
        read.folder.as_deref(),
        &labels,
        &read.loaded,
        &read.engine_files,
    );
    let backends = analyze_backends(read.loaded, &ctx);

    let first = match read.mode {
        InputMode::Data => "the first --data given",
        InputMode::Folder => {
            "the first in the folder's order (by label); choose another with --baseline"
        }
        InputMode::AnalyzeData => "the first backend of analyze-data.json",
    };
    let comparisons = compare::compare_all(
        &backends,
        ctx.identity.name.as_deref(),
        options.baseline.as_deref(),
        first,
    );
    Ok(Analysis {
        schema: SCHEMA,
        generator: Generator {
            name: "trtmc-analyze",
            version: env!("CARGO_PKG_VERSION"),
        },
        validation: overall(&backends, &read.ignored),
        input: InputInfo {
            mode: read.mode,
            folder: read.folder.map(|f| f.display().to_string()),
            ignored_files: read.ignored,
            engine_files: read.engine_files,
        },
        model: ctx.identity,
        backends,
        comparisons,
    })
}

/// The request's inputs, read: every backend's files loaded, and where they came from.
struct ReadInputs {
    mode: InputMode,
    folder: Option<PathBuf>,
    /// JSON files in the folder that matched no naming scheme.
    ignored: Vec<String>,
    engine_files: Vec<String>,
    loaded: Vec<backend::Loaded>,
    /// The model name an earlier analysis recorded (`analyze-data.json`).
    recorded_name: Option<String>,
}

fn read_inputs(inputs: &Inputs) -> Result<ReadInputs, AnalyzeError> {
    Ok(match inputs {
        Inputs::Folder(folder) => {
            let d = discover::discover(folder)?;
            let loaded = load_all(&d.backends);
            ReadInputs {
                mode: InputMode::Folder,
                folder: Some(d.folder),
                ignored: d.ignored,
                engine_files: d.engine_files,
                loaded,
                recorded_name: None,
            }
        }
        Inputs::Data(specs) => {
            if specs.is_empty() {
                return Err(AnalyzeError::NoData);
            }
            let files = discover::from_data(specs);
            let folder = common_parent(&files);
            ReadInputs {
                mode: InputMode::Data,
                engine_files: folder.as_deref().map(engine_files_in).unwrap_or_default(),
                folder,
                ignored: Vec::new(),
                loaded: load_all(&files),
                recorded_name: None,
            }
        }
        Inputs::AnalyzeData(path) => {
            let doc =
                crate::compat::read_analyze_data(path).map_err(|e| AnalyzeError::AnalyzeData {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            let folder = doc
                .folder
                .as_ref()
                .map(PathBuf::from)
                .filter(|f| f.is_dir());
            ReadInputs {
                mode: InputMode::AnalyzeData,
                engine_files: folder.as_deref().map(engine_files_in).unwrap_or_default(),
                folder,
                ignored: Vec::new(),
                loaded: doc.backends,
                recorded_name: doc.model_name,
            }
        }
    })
}

/// What every backend of the request shares: the engine files beside the exports, the model's
/// identity and its Hugging Face `config.json`, when there is one.
fn context(
    explicit_name: Option<&str>,
    folder: Option<&Path>,
    labels: &[String],
    loaded: &[backend::Loaded],
    engine_files: &[String],
) -> Context {
    let prefix = identity::layer_name_prefix(loaded.iter().filter_map(|l| match &l.layers {
        Some(Ok(info)) => Some(info.layers.iter().map(|x| x.name.as_str())),
        _ => None,
    }));
    let identity = identity::infer_with_prefix(explicit_name, folder, labels, prefix.as_ref());
    let config = folder.and_then(|f| {
        identity::config_paths(f)
            .into_iter()
            .find_map(|p| identity::load_config(&p).map(|c| (c, p.display().to_string())))
    });
    Context {
        engine_files: engine_files.to_vec(),
        identity,
        config,
    }
}

/// Analyzes each backend; several are independent, so each gets a thread of its own.
fn analyze_backends(loaded: Vec<backend::Loaded>, ctx: &Context) -> Vec<Backend> {
    if loaded.len() < 2 {
        return loaded
            .into_iter()
            .map(|l| backend::analyze(l, ctx))
            .collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = loaded
            .into_iter()
            .map(|l| (l.label.clone(), s.spawn(move || backend::analyze(l, ctx))))
            .collect();
        handles
            .into_iter()
            .map(|(label, h)| {
                h.join()
                    .unwrap_or_else(|_| backend::internal_failure(label))
            })
            .collect()
    })
}

/// The request's verdict: passed when every backend passed, failed when none did.
fn overall(backends: &[Backend], ignored: &[String]) -> Overall {
    let passed = backends.iter().filter(|b| b.passed()).count();
    let failed = backends.len() - passed;
    let mut warnings = Vec::new();
    if !ignored.is_empty() {
        warnings.push(format!(
            "{} JSON file(s) in the folder matched no naming scheme and were ignored: {}",
            ignored.len(),
            ignored.join(", ")
        ));
    }
    let status = match (passed, failed) {
        (_, 0) => OverallStatus::Passed,
        (0, _) => OverallStatus::Failed,
        _ => OverallStatus::Partial,
    };
    Overall {
        status,
        backend_count: backends.len(),
        passed_count: passed,
        failed_count: failed,
        warnings,
    }
}

/// Reads and parses every backend's files, each backend on a thread of its own (a two-build
/// comparison uses both cores of a small machine; within a backend the profile is read beside
/// the layer file too).
fn load_all(files: &[BackendFiles]) -> Vec<backend::Loaded> {
    if files.len() < 2 {
        return files.iter().map(backend::load_files).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| s.spawn(move || backend::load_files(f)))
            .collect();
        handles
            .into_iter()
            .zip(files)
            .map(|(h, f)| h.join().unwrap_or_else(|_| backend::load_files(f)))
            .collect()
    })
}

fn common_parent(files: &[BackendFiles]) -> Option<PathBuf> {
    let mut dirs = files
        .iter()
        .flat_map(|b| [b.layers.as_ref(), b.profile.as_ref(), b.times.as_ref()])
        .flatten()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .filter_map(|p| p.parent().map(Path::to_path_buf));
    let mut common = dirs.next()?;
    for d in dirs {
        while !d.starts_with(&common) {
            common = common.parent()?.to_path_buf();
        }
    }
    Some(common)
}

fn engine_files_in(folder: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    let l = n.to_ascii_lowercase();
                    [".engine", ".trt", ".plan"].iter().any(|s| l.ends_with(s))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
