//! `trtmc-bench analyze`: TensorRT layer-info and profile analysis (seeds 001/002).

use crate::exit::{CliError, CliResult};

/// Analyze TensorRT --exportLayerInfo / --exportProfile JSON and package a browser report.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Folder that directly holds layers_*.json and/or profile_*.json (or TREx-named files).
    pub folder: Option<std::path::PathBuf>,
}

pub fn execute(_args: AnalyzeArgs) -> CliResult {
    Err(CliError::input("analyze is not available yet"))
}
