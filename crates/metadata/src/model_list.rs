//! `trtmc-bench list models --format json` on stdout: schema `trtmc.model-list/v1`
//! (schemas/model-list.schema.json).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub const MODEL_LIST_SCHEMA: &str = "trtmc.model-list/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    pub schema: String,
    /// The catalog root the profiles were read from.
    pub catalog: PathBuf,
    pub models: Vec<ModelEntry>,
    pub runtimes: Vec<RuntimeEntry>,
}

/// One catalog profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub name: String,
    pub family: String,
    pub task_strategy: String,
    pub operation: Option<String>,
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
    pub name: String,
    pub version: String,
    pub available: bool,
    /// Why the runtime is unavailable (`None` when available).
    pub reason: Option<String>,
}
