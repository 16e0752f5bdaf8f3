//! The runtime abstraction: build an optimized artifact from ONNX, load it into a session, run it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bundle::BundleManifest;
use crate::tensor::{HostTensor, TensorSpec};

/// A runtime's load-time setting (`--set runtime.<name>=…`), e.g. the thread count.
#[derive(Debug, Clone, Serialize)]
pub struct SettingDecl {
    pub name: &'static str,
    pub help: &'static str,
    /// Default as text, for help output.
    pub default: &'static str,
}

/// One timed build step, for build-timing.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildStep {
    pub name: String,
    pub ms: f64,
}

/// What a runtime's build produced inside the bundle directory.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOutput {
    /// File name of the optimized artifact, relative to the bundle directory.
    pub artifact: String,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub steps: Vec<BuildStep>,
    /// Human-readable lines for build.log.
    pub log: Vec<String>,
    /// The resolved build command or equivalent step list, for build-command.json.
    pub command: Value,
}

/// A loaded model ready to run.
pub trait Session {
    fn inputs(&self) -> &[TensorSpec];
    fn outputs(&self) -> &[TensorSpec];
    /// One forward pass; `inputs` are in [`Session::inputs`] order.
    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>>;
}

pub trait Runtime: Send + Sync {
    fn name(&self) -> &'static str;
    fn version(&self) -> String;
    /// What the artifact is tied to besides the architecture (CPU features, GPU compute capability).
    fn target(&self) -> String;
    /// `Err` with an install hint when the runtime cannot be used on this machine.
    fn availability(&self) -> Result<(), String>;
    fn settings(&self) -> &'static [SettingDecl];
    /// Builds the optimized artifact from `onnx` into the empty directory `out_dir`.
    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput>;
    fn load(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Box<dyn Session>>;
}

/// Runtimes compiled into this program.
pub fn runtime_names() -> &'static [&'static str] {
    &["tract"]
}

/// The runtime called `name`, or a message listing the known ones.
pub fn runtime(name: &str) -> Result<Box<dyn Runtime>, String> {
    match name {
        "tract" => Ok(Box::new(crate::tract_rt::TractRuntime)),
        other => Err(format!(
            "unknown runtime `{other}` (known: {})",
            runtime_names().join(", ")
        )),
    }
}

/// Checks `settings` against a runtime's declared settings.
pub fn check_settings(rt: &dyn Runtime, settings: &BTreeMap<String, Value>) -> Result<(), String> {
    for key in settings.keys() {
        if !rt.settings().iter().any(|s| s.name == key) {
            let known: Vec<&str> = rt.settings().iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown runtime setting `runtime.{key}` for runtime `{}` (known: {})",
                rt.name(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// Reads a positive integer setting.
pub fn positive_setting(
    settings: &BTreeMap<String, Value>,
    name: &str,
    default: usize,
) -> anyhow::Result<usize> {
    match settings.get(name) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(n as usize),
            _ => anyhow::bail!("runtime.{name} must be a positive integer, got {v}"),
        },
    }
}
