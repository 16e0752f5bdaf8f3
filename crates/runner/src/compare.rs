//! The orchestration behind `trtmc-bench compare` without its presentation: each side of a comparison
//! resolved and its bundle built exactly as `run` resolves it (same cache keys), the inputs both sides
//! are fed, one forward pass per side, and the request of the Python reference runners in `reference/`.
//!
//! The matrix prepares its `onnxruntime-python` reference through [`prepare_reference`], so a
//! reference request is built in one place whether `compare --save-inputs` or a matrix row asks for
//! it. Nothing here prints; bundle builds are reported through [`Progress`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trtmc_core::test_hooks::TestHooks;

use anyhow::Context as _;
use serde_json::Value;
use trtmc_core::catalog::Catalog;
use trtmc_core::fsutil::write_json_atomic;
use trtmc_runtime::bundle::BundleManifest;
use trtmc_runtime::outputs;
use trtmc_runtime::reference::{
    REFERENCE_REQUEST_FILE, REFERENCE_REQUEST_SCHEMA, ReferenceRequest,
};
use trtmc_runtime::registry;
use trtmc_runtime::tensor::HostTensor;

use crate::bundles::BundleOptions;
use crate::progress::Progress;
use crate::run::{PlannedCase, RunError, Selection};
use crate::sources;

/// Named tensors in the order of the bundle's inputs or outputs.
pub type TensorSet = Vec<(String, HostTensor)>;

/// One side of a comparison: its resolved case and its bundle (built when the cache had none).
pub struct Side {
    /// The side's resolved case with its profile and bundle plan.
    pub planned: PlannedCase,
    /// The side's bundle manifest, read after any build.
    pub manifest: BundleManifest,
    /// The side's bundle directory.
    pub bundle: PathBuf,
}

impl Side {
    /// `<runtime> <version>`, as the agreement names each side.
    pub fn label(&self) -> String {
        format!(
            "{} {}",
            self.manifest.runtime.name, self.manifest.runtime.version
        )
    }

    /// The seed of the synthesized inputs when the caller gives none: the case's `request.seed` when
    /// it is a non-negative integer, else 0 (what the worker synthesizes from).
    pub fn case_seed(&self) -> u64 {
        self.planned
            .resolved
            .request_value("seed")
            .and_then(Value::as_i64)
            .filter(|s| *s >= 0)
            .map_or(0, |s| s as u64)
    }

    /// The bundle's inputs synthesized like the worker does (`seed`, symbolic dimensions bound by
    /// `dims`).
    pub fn synthesize_inputs(
        &self,
        seed: u64,
        dims: &BTreeMap<String, i64>,
    ) -> Result<TensorSet, RunError> {
        let tensors =
            outputs::synthesize_inputs(&self.manifest.inputs, seed, dims).map_err(|e| {
                RunError::CompareInputs {
                    reason: format!("{e:#}"),
                }
            })?;
        Ok(self
            .manifest
            .inputs
            .iter()
            .map(|s| s.name.clone())
            .zip(tensors)
            .collect())
    }

    /// The bundle's inputs read from a file (`.npy`, `.npz` or a JSON index with `inputs`), each
    /// converted to the dtype the bundle expects.
    pub fn read_inputs(&self, path: &Path) -> Result<TensorSet, RunError> {
        let file = if path.is_file() {
            trtmc_golden::read_golden(path).map_err(|e| RunError::CompareInputs {
                reason: e.to_string(),
            })?
        } else {
            // A folder (NAME.npy, input_N.pb, one test_data_set_N) or trtexec's name:file.bin list.
            let declared: Vec<_> = self
                .manifest
                .inputs
                .iter()
                .map(trtmc_runtime::data::declared_from_spec)
                .collect();
            trtmc_runtime::data::read_one_set(
                &path.display().to_string(),
                trtmc_runtime::data::DataKind::Inputs,
                &declared,
            )
            .map_err(|e| RunError::CompareInputs {
                reason: e.to_string(),
            })?
        };
        self.manifest
            .inputs
            .iter()
            .map(|spec| {
                let t = file.iter().find(|t| t.name == spec.name).ok_or_else(|| {
                    let names: Vec<&str> = file.iter().map(|t| t.name.as_str()).collect();
                    RunError::CompareInputs {
                        reason: format!(
                            "{} has no input `{}` (it has: {})",
                            path.display(),
                            spec.name,
                            names.join(", ")
                        ),
                    }
                })?;
                let tensor =
                    outputs::from_tensor(t, spec.dtype).map_err(|e| RunError::CompareInputs {
                        reason: format!("input `{}`: {e:#}", spec.name),
                    })?;
                Ok((spec.name.clone(), tensor))
            })
            .collect()
    }

    /// Expected outputs from `path` in any format `run --check-outputs` reads (a folder of
    /// `output_N.pb` names unnamed tensors after the bundle's outputs).
    pub fn read_expected(
        &self,
        path: &Path,
    ) -> Result<Vec<trtmc_core::accuracy::Tensor>, RunError> {
        if path.is_file() {
            return trtmc_golden::read_golden(path).map_err(|e| RunError::CompareInputs {
                reason: e.to_string(),
            });
        }
        let declared: Vec<_> = self
            .manifest
            .outputs
            .iter()
            .map(trtmc_runtime::data::declared_from_spec)
            .collect();
        trtmc_runtime::data::read_one_set(
            &path.display().to_string(),
            trtmc_runtime::data::DataKind::OutputsOf("--golden"),
            &declared,
        )
        .map_err(|e| RunError::CompareInputs {
            reason: e.to_string(),
        })
    }

    /// One forward pass of the bundle on `inputs`, in this process.
    pub fn run(&self, inputs: &[(String, HostTensor)]) -> anyhow::Result<TensorSet> {
        trtmc_runtime::registry::run_bundle(
            &self.bundle,
            &self.planned.resolved.runtime_values(),
            inputs,
        )
        .with_context(|| {
            format!(
                "{} failed to run {}",
                self.label(),
                self.planned.profile.name
            )
        })
    }
}

/// Resolves the one case `selection` names and builds its bundle when the cache has none.
///
/// `command_line` is recorded in a bundle that gets built. Self-timed runtimes (TensorRT through
/// trtexec) are refused: their tool returns no outputs to compare.
pub fn prepare_side(
    catalog: &Catalog,
    selection: Selection,
    options: &BundleOptions,
    command_line: &[String],
    test_hooks: &TestHooks,
    progress: &dyn Progress,
) -> Result<Side, RunError> {
    let mut planned = crate::run::plan_cases(catalog, &[selection], options, test_hooks)?;
    crate::run::fetch_tokenizers(&mut planned)?;
    let Some(p) = planned.into_iter().next() else {
        return Err(RunError::NoCase);
    };
    let plan = p.bundle.clone().ok_or_else(|| RunError::NoModelFile {
        model: p.profile.name.clone(),
    })?;
    let rt =
        registry::runtime_with(&p.resolved.runtime.value, &options.runtimes).map_err(|reason| {
            RunError::UnknownRuntime {
                runtime: p.resolved.runtime.value.clone(),
                reason,
            }
        })?;
    if rt.self_timed().is_some() {
        return Err(RunError::SelfTimedRuntime {
            runtime: rt.name().to_string(),
        });
    }
    if plan.needs_build {
        crate::run::build_reported(&p, &plan, rt.as_ref(), options, command_line, progress)?;
    }
    let manifest = BundleManifest::read(&plan.path).map_err(|e| RunError::BundleManifest {
        bundle: plan.path.clone(),
        reason: e.to_string(),
    })?;
    Ok(Side {
        planned: p,
        manifest,
        bundle: plan.path,
    })
}

/// What a caller sets on a reference request beyond what the resolved case implies. `None` keeps the
/// case's value; `options` are added to (and replace) the options the case implies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReferenceSettings {
    /// Warm-up calls of the reference run.
    pub warmup: Option<u64>,
    /// Timed calls of the reference run; when set, the case's default minimum duration no longer applies.
    pub iterations: Option<u64>,
    /// Precision the reference computes in (`fp32`, `fp16`, …).
    pub precision: Option<String>,
    /// Threads the reference runtime may use.
    pub threads: Option<u64>,
    /// Runtime options of the reference runner (e.g. ONNX Runtime's `graph_optimization_level`).
    pub options: BTreeMap<String, Value>,
}

/// The reference's minimum timed duration, by the run's stopping rule (docs/run.md): a count the caller
/// sets is what runs, with no default minimum duration, as the candidate's `run --iterations N` does;
/// a duration the case or the user set still holds.
fn min_duration_s(r: &trtmc_core::case::ResolvedCase, settings: &ReferenceSettings) -> f64 {
    let m = &r.measure.min_duration_s;
    if settings.iterations.is_some() && m.source == trtmc_core::case::Source::Default {
        0.0
    } else {
        m.value
    }
}

/// The request the Python reference runners execute for `planned`: the same operation, warm-ups,
/// iterations, seed and precision as the resolved case, unless `settings` says otherwise.
///
/// Precision: the case's `build.precision`, else the profile's `reference_precision`, else fp32.
/// Threads: the runtime's `intra_threads` (or `threads`), else 1. Options: ONNX Runtime's
/// `graph_optimization_level` from `build.optimization_level`, and the runtime's `execution_mode` and
/// `inter_threads`.
pub fn reference_request(
    planned: &PlannedCase,
    model: PathBuf,
    inputs: PathBuf,
    seed: u64,
    settings: &ReferenceSettings,
) -> ReferenceRequest {
    let r = &planned.resolved;
    let runtime_settings = r.runtime_values();
    let threads = ["intra_threads", "threads"]
        .iter()
        .find_map(|k| runtime_settings.get(*k).and_then(Value::as_u64))
        .unwrap_or(1);
    let precision = r
        .build
        .get("precision")
        .and_then(|v| v.value.as_str().map(str::to_string))
        .or_else(|| planned.profile.reference_precision.clone())
        .unwrap_or_else(|| "fp32".into());
    let mut options = BTreeMap::new();
    if let Some(level) = r.build.get("optimization_level") {
        options.insert("graph_optimization_level".to_string(), level.value.clone());
    }
    for key in ["execution_mode", "inter_threads"] {
        if let Some(v) = runtime_settings.get(key) {
            options.insert(key.to_string(), v.clone());
        }
    }
    options.extend(settings.options.clone());
    ReferenceRequest {
        schema: REFERENCE_REQUEST_SCHEMA.into(),
        model,
        inputs,
        operation: r.operation.clone(),
        warmup: settings.warmup.unwrap_or(r.measure.warmup.value),
        iterations: settings.iterations.unwrap_or(r.measure.iterations.value),
        min_duration_s: min_duration_s(r, settings),
        seed,
        precision: settings.precision.clone().unwrap_or(precision),
        threads: settings.threads.unwrap_or(threads),
        options,
        save_outputs: None,
        request: r
            .request
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
        operation_inputs: None,
        profile_dir: None,
    }
}

/// The candidate runner's per-call inputs (token ids, images, noise, …) written beside the request,
/// so the reference repeats exactly the candidate's calls; `None` for operations that have none.
fn save_call_inputs(dir: &Path, side: &Side) -> Result<Option<PathBuf>, RunError> {
    // One forward pass on the synthesized inputs: nothing more to save, and no model load to pay.
    // (`classify` saves its image batches: declared images and their rotation are its workload.)
    if side.planned.resolved.operation == "infer" {
        return Ok(None);
    }
    let mut worker = crate::run::case_worker_request(&side.planned);
    worker.bundle = Some(side.bundle.clone());
    let inputs =
        trtmc_runtime::worker::reference_inputs(&worker).map_err(|e| RunError::CompareInputs {
            reason: format!(
                "preparing the {} inputs of `{}` for the reference: {e:#}",
                side.planned.resolved.operation, side.planned.profile.name
            ),
        })?;
    if inputs.calls.is_empty() {
        return Ok(None);
    }
    let index = outputs::write_call_inputs(dir, &inputs).map_err(|e| RunError::WriteReference {
        path: dir.to_path_buf(),
        reason: format!("{e:#}"),
    })?;
    Ok(Some(std::fs::canonicalize(&index).unwrap_or(index)))
}

/// Whether `operation`'s reference feeds the bundle's synthesized inputs (one forward pass per call:
/// `infer`, `classify`); every other operation's reference repeats the runner's own per-call inputs.
pub fn feeds_bundle_inputs(operation: &str) -> bool {
    matches!(operation, "infer" | "classify")
}

/// The bundle's synthesized inputs for a reference. An operation with per-call inputs whose bundle
/// cannot synthesize them (unbound symbolic dimensions: an audio length, latent frames) does without:
/// its reference feeds the runner's prepared inputs instead.
pub fn reference_bundle_inputs(
    side: &Side,
    seed: u64,
    dims: &BTreeMap<String, i64>,
) -> Result<TensorSet, RunError> {
    match side.synthesize_inputs(seed, dims) {
        Err(_) if !feeds_bundle_inputs(&side.planned.resolved.operation) => Ok(TensorSet::new()),
        other => other,
    }
}

/// What [`save_reference_inputs`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedReference {
    /// The inputs' JSON index (`inputs.json`, beside the raw binaries).
    pub inputs_index: PathBuf,
    /// `reference-request.json`.
    pub request_path: PathBuf,
    /// The request as written, for a caller that runs the reference itself.
    pub request: ReferenceRequest,
    /// The workload identity of the case the inputs were made for (with `--inputs`, their data).
    pub identity: String,
}

/// Writes `inputs` (raw binaries + `inputs.json`) and the reference request into `dir`. The request
/// names the side's source model (materialized below `cache_root`) and the inputs by absolute path,
/// so the runner can be started from anywhere.
pub fn save_reference_inputs(
    dir: &Path,
    side: &Side,
    inputs: &[(String, HostTensor)],
    seed: u64,
    cache_root: &Path,
    settings: &ReferenceSettings,
) -> Result<SavedReference, RunError> {
    let index =
        outputs::write_tensor_set(dir, "inputs", inputs).map_err(|e| RunError::WriteReference {
            path: dir.to_path_buf(),
            reason: format!("{e:#}"),
        })?;
    let model = sources::materialize(&side.planned.profile, cache_root).map_err(|source| {
        RunError::Source {
            model: side.planned.profile.name.clone(),
            source: Box::new(source),
        }
    })?;
    let mut request = reference_request(
        &side.planned,
        std::fs::canonicalize(&model).unwrap_or(model),
        std::fs::canonicalize(&index).unwrap_or_else(|_| index.clone()),
        seed,
        settings,
    );
    request.operation_inputs = save_call_inputs(dir, side)?;
    let request_path = dir.join(REFERENCE_REQUEST_FILE);
    write_json_atomic(&request_path, &request).map_err(|e| RunError::WriteReference {
        path: request_path.clone(),
        reason: e.to_string(),
    })?;
    Ok(SavedReference {
        inputs_index: index,
        request_path,
        request,
        identity: side.planned.resolved.identity.clone(),
    })
}

/// Everything [`prepare_reference`] needs.
pub struct ReferencePreparation<'a> {
    /// The catalog the selection is resolved in.
    pub catalog: &'a Catalog,
    /// The case whose bundle synthesizes the inputs (the worker's own synthesis, so both sides feed
    /// identical tensors).
    pub selection: Selection,
    /// How the case's bundle is found or built.
    pub bundle: &'a BundleOptions,
    /// Where the inputs and the request go.
    pub dir: &'a Path,
    /// Overrides of the reference request's counts, precision, threads and options.
    pub settings: ReferenceSettings,
    /// Recorded in a bundle that gets built.
    pub command_line: &'a [String],
    /// The test suite's hooks, which allow test-only operations (all off unless `TRTMC_TEST=1`).
    pub test_hooks: &'a TestHooks,
}

/// The inputs and request of a Python reference run, with the case's own seed: what
/// `trtmc-bench compare --save-inputs DIR` writes, with `settings` applied (the matrix's row counts,
/// baseline precision, threads and runner options).
pub fn prepare_reference(
    prep: ReferencePreparation<'_>,
    progress: &dyn Progress,
) -> Result<SavedReference, RunError> {
    // The selection's own data (`--inputs`, a matrix row's `inputs`): its first set is what the
    // Python runner feeds.
    let data = prep.selection.inputs.first().map(PathBuf::from);
    let side = prepare_side(
        prep.catalog,
        prep.selection,
        prep.bundle,
        prep.command_line,
        prep.test_hooks,
        progress,
    )?;
    let seed = side.case_seed();
    let inputs = match &data {
        Some(path) => side.read_inputs(path)?,
        None => reference_bundle_inputs(&side, seed, &BTreeMap::new())?,
    };
    save_reference_inputs(
        prep.dir,
        &side,
        &inputs,
        seed,
        &prep.bundle.cache_root,
        &prep.settings,
    )
}

#[cfg(test)]
mod tests {
    use crate::progress::Event;
    use std::cell::RefCell;

    use serde_json::json;
    use trtmc_core::case::{self, Override, ResolveInput, Source};

    use super::*;

    /// A catalog holding only the repository's tiny-cnn (builtin source: nothing to download).
    fn tiny_cnn_catalog(dir: &Path) -> Catalog {
        let model = dir.join("catalog/tiny-cnn");
        std::fs::create_dir_all(&model).expect("mkdir");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../catalog/tiny-cnn");
        for f in ["MODEL.toml", "e2e.toml"] {
            std::fs::copy(repo.join(f), model.join(f)).expect("copy catalog file");
        }
        Catalog::load(&dir.join("catalog")).expect("catalog")
    }

    fn selection(runtime: &str, sets: &[&str]) -> Selection {
        Selection {
            model: "tiny-cnn".into(),
            cases: vec!["single".into()],
            runtime: Some(runtime.into()),
            sets: sets
                .iter()
                .map(|s| Override::parse(s, Source::Set).expect("override"))
                .collect(),
            ..Default::default()
        }
    }

    /// The case resolved without planning a bundle, so a runtime whose library is absent here
    /// (ONNX Runtime) still resolves.
    fn resolved(catalog: &Catalog, runtime: &str, sets: &[&str]) -> PlannedCase {
        let profile = catalog.require("tiny-cnn").expect("profile").clone();
        let sel = selection(runtime, sets);
        let resolved = case::resolve(
            &profile,
            &ResolveInput {
                case: Some("single"),
                sets: sel.sets,
                runtime: sel.runtime,
                ..Default::default()
            },
            trtmc_runtime::registry::declared_settings(),
        )
        .expect("resolve");
        PlannedCase {
            profile,
            resolved,
            bundle: None,
            inputs: Vec::new(),
        }
    }

    #[derive(Default)]
    struct Builds(RefCell<Vec<String>>);

    impl Progress for Builds {
        fn report(&self, event: Event<'_>) {
            if let Event::BuildStarted { model, runtime, .. } = event {
                self.0.borrow_mut().push(format!("{runtime} {model}"));
            }
        }
    }

    #[test]
    fn the_reference_request_carries_the_resolved_case() {
        let tmp = tempfile::tempdir().expect("tmp");
        let catalog = tiny_cnn_catalog(tmp.path());
        let planned = resolved(
            &catalog,
            "onnxruntime",
            &[
                "build.optimization_level=basic",
                "runtime.intra_threads=3",
                "runtime.execution_mode=parallel",
            ],
        );
        let r = &planned.resolved;
        let request = reference_request(
            &planned,
            "/m/model.onnx".into(),
            "/in/inputs.json".into(),
            7,
            &ReferenceSettings::default(),
        );
        assert_eq!(request.schema, REFERENCE_REQUEST_SCHEMA);
        assert_eq!(request.model, PathBuf::from("/m/model.onnx"));
        assert_eq!(request.inputs, PathBuf::from("/in/inputs.json"));
        assert_eq!(request.operation, "classify");
        assert_eq!(request.seed, 7);
        assert_eq!(request.warmup, r.measure.warmup.value);
        assert_eq!(request.iterations, r.measure.iterations.value);
        assert_eq!(request.min_duration_s, r.measure.min_duration_s.value);
        assert_eq!(request.precision, "fp32", "the case's build.precision");
        assert_eq!(request.threads, 3, "runtime.intra_threads");
        assert_eq!(
            request.options,
            BTreeMap::from([
                ("graph_optimization_level".to_string(), json!("basic")),
                ("execution_mode".to_string(), json!("parallel")),
            ])
        );
        assert_eq!(request.save_outputs, None);
    }

    #[test]
    fn reference_settings_replace_the_case_values_and_add_options() {
        let tmp = tempfile::tempdir().expect("tmp");
        let catalog = tiny_cnn_catalog(tmp.path());
        let mut planned = resolved(&catalog, "onnxruntime", &["build.optimization_level=basic"]);
        let settings = ReferenceSettings {
            warmup: Some(3),
            iterations: Some(20),
            precision: Some("fp16".into()),
            threads: Some(2),
            options: BTreeMap::from([
                ("graph_optimization_level".to_string(), json!("all")),
                ("enable_profiling".to_string(), json!(false)),
            ]),
        };
        let request = reference_request(&planned, "m".into(), "i".into(), 0, &settings);
        assert_eq!(request.warmup, 3);
        assert_eq!(request.iterations, 20);
        assert_eq!(request.precision, "fp16");
        assert_eq!(request.threads, 2);
        // A set count is what runs (the candidate's `run --iterations` gets no default minimum
        // duration either); the case's default would stretch each reference round to a second.
        assert_eq!(request.min_duration_s, 0.0);
        assert!(planned.resolved.measure.min_duration_s.value > 0.0);
        planned.resolved.measure.min_duration_s = trtmc_core::case::Sourced::new(2.5, Source::Set);
        let request = reference_request(&planned, "m".into(), "i".into(), 0, &settings);
        assert_eq!(
            request.min_duration_s, 2.5,
            "a duration someone set still holds"
        );
        assert_eq!(
            request.options,
            BTreeMap::from([
                ("graph_optimization_level".to_string(), json!("all")),
                ("enable_profiling".to_string(), json!(false)),
            ]),
            "the caller's option replaces the case's"
        );
    }

    #[test]
    fn without_a_build_precision_the_profile_reference_precision_decides() {
        let tmp = tempfile::tempdir().expect("tmp");
        let catalog = tiny_cnn_catalog(tmp.path());
        let mut planned = resolved(&catalog, "tract", &[]);
        planned.resolved.build.remove("precision");
        planned.profile.reference_precision = Some("fp16".into());
        let request = reference_request(
            &planned,
            "m".into(),
            "i".into(),
            0,
            &ReferenceSettings::default(),
        );
        assert_eq!(request.precision, "fp16");
        assert_eq!(request.threads, 1, "no thread setting: one thread");
        planned.profile.reference_precision = None;
        let request = reference_request(
            &planned,
            "m".into(),
            "i".into(),
            0,
            &ReferenceSettings::default(),
        );
        assert_eq!(request.precision, "fp32");
    }

    #[test]
    fn an_unknown_runtime_is_refused_with_its_name_and_the_known_ones() {
        let tmp = tempfile::tempdir().expect("tmp");
        let catalog = tiny_cnn_catalog(tmp.path());
        let options = BundleOptions {
            cache_root: tmp.path().join("cache"),
            ..Default::default()
        };
        let err = prepare_side(
            &catalog,
            selection("no-such-runtime", &[]),
            &options,
            &[],
            &TestHooks::default(),
            &Builds::default(),
        )
        .err()
        .expect("refused");
        let RunError::UnknownRuntime {
            reason: message, ..
        } = err
        else {
            panic!("not an unknown-runtime error: {err:?}");
        };
        assert!(message.contains("no-such-runtime"), "{message}");
        assert!(message.contains("tract"), "{message}");
        assert!(
            !tmp.path().join("cache").exists(),
            "nothing was built for a refused side"
        );
    }

    #[test]
    fn prepare_reference_writes_the_worker_inputs_and_the_request_and_builds_once() {
        let tmp = tempfile::tempdir().expect("tmp");
        let catalog = tiny_cnn_catalog(tmp.path());
        let options = BundleOptions {
            cache_root: tmp.path().join("cache"),
            ..Default::default()
        };
        let settings = ReferenceSettings {
            warmup: Some(3),
            iterations: Some(20),
            precision: Some("fp32".into()),
            threads: Some(1),
            options: BTreeMap::from([("graph_optimization_level".to_string(), json!("all"))]),
        };
        let builds = Builds::default();
        let dir = tmp.path().join("reference");
        let saved = prepare_reference(
            ReferencePreparation {
                catalog: &catalog,
                selection: selection("tract", &[]),
                bundle: &options,
                dir: &dir,
                settings: settings.clone(),
                command_line: &["test".to_string()],
                test_hooks: &TestHooks::default(),
            },
            &builds,
        )
        .expect("prepared");
        assert_eq!(*builds.0.borrow(), ["tract tiny-cnn"]);
        assert_eq!(saved.request_path, dir.join(REFERENCE_REQUEST_FILE));
        assert_eq!(saved.inputs_index, dir.join("inputs.json"));
        let on_disk: ReferenceRequest =
            serde_json::from_slice(&std::fs::read(&saved.request_path).expect("request written"))
                .expect("a reference request");
        assert_eq!(on_disk, saved.request);
        assert_eq!(on_disk.seed, 7, "the case's own request.seed");
        assert_eq!((on_disk.warmup, on_disk.iterations), (3, 20));
        assert!(on_disk.model.is_absolute() && on_disk.model.is_file());
        assert!(on_disk.inputs.is_absolute() && on_disk.inputs.is_file());
        assert_eq!(on_disk.options["graph_optimization_level"], json!("all"));

        // The inputs are the worker's synthesis of the bundle's inputs with that seed.
        let side = prepare_side(
            &catalog,
            selection("tract", &[]),
            &options,
            &[],
            &TestHooks::default(),
            &builds,
        )
        .expect("side");
        assert_eq!(builds.0.borrow().len(), 1, "the second side is a cache hit");
        let expected = side
            .synthesize_inputs(7, &BTreeMap::new())
            .expect("synthesis");
        let written = side.read_inputs(&saved.inputs_index).expect("read back");
        assert_eq!(written.len(), expected.len());
        for ((wn, wt), (en, et)) in written.iter().zip(&expected) {
            assert_eq!(wn, en);
            assert_eq!(outputs::le_bytes(wt), outputs::le_bytes(et), "input {wn}");
        }
        // And the bundle runs on them: one output per bundle output.
        let out = side.run(&written).expect("forward pass");
        assert_eq!(out.len(), side.manifest.outputs.len());
    }
}
