//! The profiling pass: a worker invocation of its own, made after the timed run (a profiler perturbs
//! timings, so it never runs inside the baseline). It loads the bundle with the runtime's per-layer
//! profiler attached, drives the same operation runner as the timed run (same inputs, same calls),
//! discards what the warm-up calls recorded, and writes the trtexec-shaped exports.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use anyhow::Context as _;
use serde_json::json;
use trtmc_core::artifacts::RuntimeInfo;

use crate::bundle::BundleManifest;
use crate::ops::{self, CallRecord, RunnerContext};
use crate::protocol::{
    ProfilePass, WORKER_RESULT_SCHEMA, WorkerRequest, WorkerResult, WorkerStatus,
};
use crate::registry;
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

/// A session shared between the operation runner (which owns a `Box<dyn Session>`) and the pass, which
/// starts and finishes the profiler around the runner's calls. The specs are copies taken at load time.
struct SharedSession {
    inner: Rc<RefCell<Box<dyn Session>>>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl Session for SharedSession {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }
    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }
    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>> {
        self.inner.borrow_mut().run(inputs)
    }
}

/// Runs the profiling pass of `request` and writes the exports into `pass.dir`.
pub fn execute(
    request: &WorkerRequest,
    pass: &ProfilePass,
    runtime_info: RuntimeInfo,
) -> anyhow::Result<WorkerResult> {
    let operation = ops::requested(&request.operation)?;
    let bundle_dir = request
        .bundle
        .as_deref()
        .context("per-layer profiling needs a model bundle; this operation has none")?;
    if pass.iterations == 0 {
        anyhow::bail!("the profiling pass needs at least one iteration");
    }
    let rt = registry::runtime(&request.runtime).map_err(anyhow::Error::msg)?;
    let manifest = BundleManifest::read(bundle_dir).map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&pass.dir)
        .with_context(|| format!("cannot create {}", pass.dir.display()))?;
    let session = rt
        .load_profiling(bundle_dir, &manifest, &request.runtime_settings, &pass.dir)
        .with_context(|| {
            format!(
                "cannot load bundle {} for per-layer profiling",
                bundle_dir.display()
            )
        })?;
    let session = crate::testing::with_hooks(session, request.hooks.as_ref());
    let inputs = session.inputs().to_vec();
    let outputs = session.outputs().to_vec();
    let shared = Rc::new(RefCell::new(session));
    let ctx = RunnerContext {
        request: &request.request,
        session: Some(Box::new(SharedSession {
            inner: Rc::clone(&shared),
            inputs,
            outputs,
        })),
        bundle: Some(&manifest),
        manifest_dir: request.manifest_dir.as_deref(),
        tokenizer: request.tokenizer.as_deref(),
        first_call: request.first_call,
        data: request.data.as_ref(),
    };
    let mut runner = ops::prepare(operation, ctx)?;
    for i in 0..request.warmup {
        runner.prepare_call()?;
        runner
            .call(&mut CallRecord::default())
            .with_context(|| format!("profiling warm-up call {i} failed"))?;
        runner.verify()?;
    }
    shared.borrow_mut().profile_start()?;
    for i in 0..pass.iterations {
        runner.prepare_call()?;
        runner
            .call(&mut CallRecord::default())
            .with_context(|| format!("profiled call {i} failed"))?;
        runner.verify()?;
    }
    let profile = shared.borrow_mut().profile_finish()?;
    let files = super::write_exports(&profile, &pass.dir)?;
    let file_name = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let notes = BTreeMap::from([
        (
            "layer_info".to_string(),
            json!(file_name(&files.layer_info)),
        ),
        (
            "layer_profile".to_string(),
            json!(file_name(&files.profile)),
        ),
        ("profiled_runs".to_string(), json!(profile.runs)),
        ("profiled_calls".to_string(), json!(pass.iterations)),
        ("layers".to_string(), json!(profile.layers.len())),
    ]);
    Ok(WorkerResult {
        schema: WORKER_RESULT_SCHEMA.into(),
        status: WorkerStatus::Ok,
        error: None,
        runtime: runtime_info,
        load_ms: None,
        warmup_ms: Vec::new(),
        observations: Vec::new(),
        stopped_by: None,
        notes,
    })
}
