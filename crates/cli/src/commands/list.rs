//! `trtmc-bench list models`: every catalog profile with its STATUS and reason.

use std::path::PathBuf;

use trtmc_core::catalog::Catalog;

use crate::exit::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(subcommand)]
    pub what: ListWhat,
}

#[derive(Debug, clap::Subcommand)]
pub enum ListWhat {
    /// Every profile declared by the catalog's MODEL.toml files, ready or with the reason it is not.
    Models {
        /// Catalog root holding MODEL.toml files.
        #[arg(long, value_name = "PATH")]
        manifest_root: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: ListFormat,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

pub fn execute(args: ListArgs) -> CliResult {
    let ListWhat::Models {
        manifest_root,
        format,
    } = args.what;
    let root = crate::catalog_root::resolve(manifest_root);
    let catalog = Catalog::load(&root).map_err(CliError::input)?;
    let runtimes: Vec<serde_json::Value> = trtmc_runtime::runtime::runtime_names()
        .iter()
        .filter_map(|n| trtmc_runtime::runtime::runtime(n).ok())
        .map(|rt| {
            serde_json::json!({
                "name": rt.name(),
                "version": rt.version(),
                "available": rt.availability().is_ok(),
                "reason": rt.availability().err(),
            })
        })
        .collect();
    match format {
        ListFormat::Json => {
            let profiles: Vec<serde_json::Value> = catalog
                .profiles
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "name": p.name,
                        "family": p.family,
                        "task_strategy": p.task_strategy,
                        "operation": p.operation,
                        "runtime_strategy": p.runtime_strategy,
                        "status": p.status.label(),
                        "cases": p.cases.iter().map(|c| &c.name).collect::<Vec<_>>(),
                        "manifest": p.manifest,
                    })
                })
                .collect();
            let doc = serde_json::json!({"schema": "trtmc.model-list/v1", "catalog": catalog.root, "models": profiles, "runtimes": runtimes});
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(CliError::internal)?
            );
        }
        ListFormat::Table => {
            let width = catalog
                .profiles
                .iter()
                .map(|p| p.name.len())
                .max()
                .unwrap_or(4)
                .max(4);
            println!(
                "{:<width$}  {:<22} {:<10} {:<9} STATUS",
                "NAME", "TASK", "OPERATION", "RUNTIME"
            );
            for p in &catalog.profiles {
                println!(
                    "{:<width$}  {:<22} {:<10} {:<9} {}",
                    p.name,
                    p.task_strategy,
                    p.operation.as_deref().unwrap_or("-"),
                    p.runtime_strategy,
                    p.status.label()
                );
            }
            let rts: Vec<String> = runtimes
                .iter()
                .map(|r| {
                    let name = r["name"].as_str().unwrap_or("?");
                    let version = r["version"].as_str().unwrap_or("?");
                    match r["reason"].as_str() {
                        None => format!("{name} {version} (available)"),
                        Some(why) => format!("{name} (unavailable: {why})"),
                    }
                })
                .collect();
            println!(
                "\n{} profile(s) in {}; runtimes: {}",
                catalog.profiles.len(),
                catalog.root.display(),
                rts.join(", ")
            );
        }
    }
    Ok(())
}
