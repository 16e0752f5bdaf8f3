//! Runtime settings as data: what a runtime declares it understands under `build.*` and `runtime.*`.
//!
//! Each runtime owns its declarations (`trtmc_runtime::runtime::Runtime::settings`); the type lives here,
//! below the runtimes, so that what reads declarations (case resolution, documents, the tuner) needs no
//! runtime.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// Where a setting lives in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingSection {
    /// `build.<name>`: fixed when the bundle is built (part of the bundle key).
    Build,
    /// `runtime.<name>`: applied when the bundle is loaded.
    Runtime,
}

impl SettingSection {
    /// The key prefix in a case: `build` or `runtime`.
    pub fn prefix(self) -> &'static str {
        match self {
            SettingSection::Build => "build",
            SettingSection::Runtime => "runtime",
        }
    }
}

/// A setting a runtime understands (`--set build.<name>=…` / `--set runtime.<name>=…`): the one
/// declaration the setting checks, the help and the tuning knobs (`tune --help-routes`) come from.
#[derive(Debug, Clone, Serialize)]
pub struct SettingDecl {
    pub section: SettingSection,
    pub name: &'static str,
    pub help: &'static str,
    /// The runtime's own default: what applies when no case sets it.
    pub default: &'static str,
    /// The values it takes, in getAllBuildRoutes' notation after the `=`: `[a|b]`, an open integer
    /// range `[1|2|...]`, `[true|false]` for a switch (its knob says `on`/`off`, as Myelin's do).
    pub allowed: &'static str,
    /// Offered to `tune` as the knob `-<name>`.
    pub tunable: bool,
    /// A build setting that says how the bundle is built, not what it computes (precision, an
    /// optimization level, a build route): part of the bundle key, not of the workload identity
    /// ([`crate::case::RECIPE_BUILD_SETTINGS`] lists them; a test in the runtime crate checks both agree).
    #[serde(skip)]
    pub recipe: bool,
}

/// The input shapes among a case's build values (`shapes.<input>` = `[d, …]`), by input name; a value
/// that is not a list of integers is left out (its setting check reports it).
pub fn shape_settings(build: &BTreeMap<String, Value>) -> impl Iterator<Item = (&str, Vec<i64>)> {
    build.iter().filter_map(|(k, v)| {
        let name = k.strip_prefix("shapes.")?;
        let dims = v
            .as_array()?
            .iter()
            .map(Value::as_i64)
            .collect::<Option<_>>()?;
        Some((name, dims))
    })
}
