//! The runtimes by name, and what needs one chosen by name: this module sits above every runtime
//! (the runtimes and the operations they run import `crate::runtime`, never this).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::bundle::BundleManifest;
use crate::runtime::{DeclaredSettings, Runtime, RuntimeOptions, SettingDecl};
use crate::tensor::HostTensor;

/// How one runtime is made from this process's options.
type MakeRuntime = fn(&RuntimeOptions) -> Box<dyn Runtime>;

/// Every runtime compiled into this program, by name: the one list [`runtime_names`],
/// [`declared_settings`] and [`runtime_with`] read.
const RUNTIMES: &[(&str, MakeRuntime)] = &[
    ("tract", |_| Box::new(crate::tract_rt::TractRuntime)),
    ("onnxruntime", |_| Box::new(crate::ort_rt::OrtRuntime)),
    ("tensorrt", |options| {
        Box::new(
            crate::tensorrt_rt::TensorrtRuntime::new(options.trtexec.clone())
                .with_probe_cache(options.probe_cache.as_deref()),
        )
    }),
];

/// The settings of every runtime, by name in [`RUNTIMES`]' order (`Runtime::settings`, which a test
/// checks): what case resolution reads `build.*` and `runtime.*` values by
/// (`trtmc_core::case::resolve`).
pub fn declared_settings() -> &'static DeclaredSettings {
    static DECLARED: &[(&str, &[SettingDecl])] = &[
        ("tract", crate::tract_rt::SETTINGS),
        ("onnxruntime", crate::ort_rt::SETTINGS),
        ("tensorrt", crate::tensorrt_rt::SETTINGS),
    ];
    DECLARED
}

/// Runtimes compiled into this program.
pub fn runtime_names() -> Vec<&'static str> {
    RUNTIMES.iter().map(|(name, _)| *name).collect()
}

/// The runtime called `name` with default options (tools looked up on `PATH`), or a message listing
/// the known ones.
pub fn runtime(name: &str) -> Result<Box<dyn Runtime>, String> {
    runtime_with(name, &RuntimeOptions::default())
}

/// The runtime called `name`, finding its tools as `options` say.
pub fn runtime_with(name: &str, options: &RuntimeOptions) -> Result<Box<dyn Runtime>, String> {
    match RUNTIMES.iter().find(|(known, _)| *known == name) {
        Some((_, make)) => Ok(make(options)),
        None => Err(format!(
            "unknown runtime `{name}` (known: {})",
            runtime_names().join(", ")
        )),
    }
}

/// Loads `bundle_dir` with its runtime and runs one forward pass; inputs are matched by name.
pub fn run_bundle(
    bundle_dir: &Path,
    settings: &BTreeMap<String, Value>,
    inputs: &[(String, HostTensor)],
) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let manifest = BundleManifest::read(bundle_dir).map_err(anyhow::Error::msg)?;
    let rt = runtime(&manifest.runtime.name).map_err(anyhow::Error::msg)?;
    if rt.self_timed().is_some() {
        bail!(
            "runtime `{}` runs inside its own tool and cannot return outputs here; compare it with its tool's accuracy check",
            rt.name()
        );
    }
    let mut session = rt
        .load(bundle_dir, &manifest, settings)
        .with_context(|| format!("cannot load bundle {}", bundle_dir.display()))?;
    crate::outputs::run_session(session.as_mut(), inputs)
}
