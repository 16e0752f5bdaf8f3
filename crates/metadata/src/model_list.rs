//! `trtmc-bench list models --format json` on stdout: schema `trtmc.model-list/v1`
//! (schemas/model-list.schema.json).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Schema name of the model list.
pub const MODEL_LIST_SCHEMA: &str = "trtmc.model-list/v1";

/// The output of `list models --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    /// Always [`MODEL_LIST_SCHEMA`].
    pub schema: String,
    /// The catalog root the profiles were read from.
    pub catalog: PathBuf,
    /// Every catalog profile, in catalog order.
    pub models: Vec<ModelEntry>,
    /// Every compiled-in runtime.
    pub runtimes: Vec<RuntimeEntry>,
}

/// One catalog profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The profile's name (what `--model` takes).
    pub name: String,
    /// The model family the profile belongs to.
    pub family: String,
    /// How the task is resolved (the catalog's task strategy).
    pub task_strategy: String,
    /// The operation the profile's cases call, when it names one.
    pub operation: Option<String>,
    /// Which runtimes may run the profile (the catalog's runtime strategy).
    pub runtime_strategy: String,
    /// `ready`, or `unsupported: <reason>` / `distributed: <reason>`.
    pub status: String,
    /// Hub files (`repo/file@revision`) a ready profile needs that the local cache lacks: the first
    /// run downloads them (checked without the network).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_download: Vec<String>,
    /// Test case names of the profile.
    pub cases: Vec<String>,
    /// The MODEL.toml that declares the profile.
    pub manifest: PathBuf,
}

/// One compiled-in runtime and whether it can run here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEntry {
    /// The runtime's name (what `--runtime` takes).
    pub name: String,
    /// The runtime's version.
    pub version: String,
    /// Whether it can run on this machine.
    pub available: bool,
    /// Why the runtime is unavailable (`None` when available).
    pub reason: Option<String>,
}
