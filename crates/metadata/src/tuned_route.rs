//! `tuned-route.json`, written by `tune --save-bundle` beside the saved bundle's files: schema
//! `trtmc.tuned-route/v1` (schemas/tuned-route.schema.json). It says which route the bundle was built
//! with, whether the tune chose it, and how to reproduce it with `run`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tune_summary::{DecisionKind, Estimate};

/// Schema name of `tuned-route.json`.
pub const TUNED_ROUTE_SCHEMA: &str = "trtmc.tuned-route/v1";

/// `tuned-route.json`: the route a saved bundle was built with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedRoute {
    /// Always [`TUNED_ROUTE_SCHEMA`].
    pub schema: String,
    /// The route expression the bundle was built with.
    pub route: String,
    /// The tune's decision kind (`winner`, `tie`, `sole`, `none`).
    pub decision: DecisionKind,
    /// True when this is the decision's route (`--saveAllEngines` saves the others too).
    pub chosen: bool,
    /// `build.*` settings the bundle was built with.
    pub build_settings: BTreeMap<String, serde_json::Value>,
    /// `runtime.*` load-time settings of the route.
    pub runtime_settings: BTreeMap<String, serde_json::Value>,
    /// `--set` arguments for `trtmc-bench run` that reproduce the route.
    pub run_sets: Vec<String>,
    /// The route's search-phase objective, when it was measured.
    pub estimate: Option<Estimate>,
    /// The tune's working bundle the files were copied from.
    pub source_bundle: String,
}
