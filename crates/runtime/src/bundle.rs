//! Bundles: a runtime's optimized artifact plus `bundle.json` and the build evidence beside it.
//!
//! ```text
//! <name>.bundle/
//!   bundle.json          schema trtmc.bundle/v1: key, runtime, settings, inputs/outputs
//!   <artifact>           e.g. model.nnef.tar (tract)
//!   build.log            what the build did
//!   build-timing.json    structured build step timings (never part of performance metrics)
//!   build-command.json   the resolved build command
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trtmc_core::artifacts::RuntimeInfo;
use trtmc_core::fsutil::{write_atomic, write_json_atomic};
use trtmc_core::limits::{FileKind, read_outside};

use crate::error::ManifestError;
use crate::runtime::{BuildStep, Runtime};
use crate::tensor::TensorSpec;

/// The `schema` of bundle.json; a manifest with another is refused.
pub const BUNDLE_SCHEMA: &str = "trtmc.bundle/v1";
/// The manifest's file in a bundle directory.
pub const BUNDLE_FILE: &str = "bundle.json";
/// The build's log in a bundle directory (written on failure too).
pub const BUILD_LOG: &str = "build.log";
/// The build's timed steps and total (excluded from every metric).
pub const BUILD_TIMING: &str = "build-timing.json";
/// What the build was asked to do and the runtime's resolved command or steps.
pub const BUILD_COMMAND: &str = "build-command.json";

/// bundle.json: what a bundle directory holds and what it was built from, for, and with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleManifest {
    /// [`BUNDLE_SCHEMA`].
    pub schema: String,
    /// The cache key the bundle was built for (hash of manifest, settings, runtime, machine, target).
    pub key: String,
    /// The model's name.
    pub model: String,
    /// The runtime that built it, with its version.
    pub runtime: RuntimeInfo,
    /// The CPU architecture it was built on (`x86_64`, `aarch64`).
    pub arch: String,
    /// [`Runtime::target`] at build time (CPU features, GPU compute capability).
    pub target: String,
    /// File name of the optimized artifact, relative to the bundle directory.
    pub artifact: String,
    /// The `build.*` settings it was built with.
    pub build_settings: BTreeMap<String, Value>,
    /// The model's inputs as the artifact takes them.
    pub inputs: Vec<TensorSpec>,
    /// The model's outputs as the artifact produces them.
    pub outputs: Vec<TensorSpec>,
    /// When it was built (RFC 3339).
    pub created: String,
    /// Wall time of the build, seconds.
    pub build_seconds: f64,
    /// The hub commit the model file came from, for a hub model: a cached revision that has moved
    /// to another commit since makes the bundle stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
}

impl BundleManifest {
    /// Reads and checks `bundle_dir`'s bundle.json (bounded: the folder may be one a user names).
    pub fn read(bundle_dir: &Path) -> Result<BundleManifest, ManifestError> {
        let path = bundle_dir.join(BUNDLE_FILE);
        // A bundle folder may be one a user names (`--bundle`): its manifest is read bounded.
        let bytes = read_outside(&path, FileKind::Text).map_err(|source| {
            if source.kind() == std::io::ErrorKind::InvalidInput {
                // A special or oversized file: the reader's message names it, the limit and the fix.
                ManifestError::Refused {
                    bundle: bundle_dir.to_path_buf(),
                    source,
                }
            } else {
                ManifestError::Unreadable {
                    bundle: bundle_dir.to_path_buf(),
                    path: path.clone(),
                    source,
                }
            }
        })?;
        let m: BundleManifest = match serde_json::from_slice(&bytes) {
            Ok(m) => m,
            Err(source) => return Err(ManifestError::Malformed { path, source }),
        };
        if m.schema != BUNDLE_SCHEMA {
            return Err(ManifestError::Schema {
                path,
                found: m.schema,
                expected: BUNDLE_SCHEMA,
            });
        }
        Ok(m)
    }
}

/// What the build was asked to do, recorded in build-command.json.
pub struct BuildPlan<'a> {
    /// The cache key the bundle is built for.
    pub key: &'a str,
    /// The model's name.
    pub model: &'a str,
    /// The ONNX file to build from.
    pub onnx: &'a Path,
    /// The `build.*` settings.
    pub settings: &'a BTreeMap<String, Value>,
    /// The command line of the process that asked for the build.
    pub command_line: &'a [String],
    /// The creation time to record (RFC 3339).
    pub created: &'a str,
    /// See [`BundleManifest::source_commit`].
    pub source_commit: Option<&'a str>,
}

/// Runs the runtime's build into the empty directory `dir` and writes bundle.json and the evidence.
pub fn build_bundle(
    rt: &dyn Runtime,
    plan: &BuildPlan<'_>,
    dir: &Path,
) -> anyhow::Result<BundleManifest> {
    let started = Instant::now();
    let outcome = crate::guard::catch_runtime_panic(rt.name(), "building the bundle", || {
        rt.build(plan.onnx, plan.settings, dir)
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut log = vec![
        format!(
            "trtmc bundle build: model {} runtime {} {}",
            plan.model,
            rt.name(),
            rt.version()
        ),
        format!("source: {}", plan.onnx.display()),
        format!(
            "settings: {}",
            Value::from(serde_json::Map::from_iter(plan.settings.clone()))
        ),
    ];
    let output = match outcome {
        Ok(o) => o,
        Err(e) => {
            log.push(format!("FAILED after {seconds:.3} s: {e:#}"));
            let _ = write_atomic(&dir.join(BUILD_LOG), (log.join("\n") + "\n").as_bytes());
            return Err(e);
        }
    };
    log.extend(output.log.iter().cloned());
    log.push(format!("built in {seconds:.3} s"));
    write_atomic(&dir.join(BUILD_LOG), (log.join("\n") + "\n").as_bytes())?;
    let steps: Vec<BuildStep> = output.steps.clone();
    write_json_atomic(
        &dir.join(BUILD_TIMING),
        &json!({
            "schema": "trtmc.build-timing/v1",
            "excluded_from_metrics": true,
            "total_ms": seconds * 1e3,
            "steps": steps,
        }),
    )?;
    write_json_atomic(
        &dir.join(BUILD_COMMAND),
        &json!({
            "schema": "trtmc.build-command/v1",
            "command_line": plan.command_line,
            "runtime": rt.name(),
            "source": plan.onnx,
            "settings": plan.settings,
            "steps": output.command,
        }),
    )?;
    let manifest = BundleManifest {
        schema: BUNDLE_SCHEMA.into(),
        key: plan.key.into(),
        model: plan.model.into(),
        runtime: RuntimeInfo {
            name: rt.name().into(),
            version: rt.version(),
        },
        arch: std::env::consts::ARCH.into(),
        target: rt.target(),
        artifact: output.artifact,
        build_settings: plan.settings.clone(),
        inputs: output.inputs,
        outputs: output.outputs,
        created: plan.created.into(),
        build_seconds: seconds,
        source_commit: plan.source_commit.map(str::to_owned),
    };
    write_json_atomic(&dir.join(BUNDLE_FILE), &manifest)?;
    Ok(manifest)
}
