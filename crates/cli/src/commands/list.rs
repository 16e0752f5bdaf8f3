//! `trtmc-bench list models`: every catalog profile with its STATUS and reason; `list schemas` and
//! `list suites`: the JSON Schemas and matrix suites shipped inside the binary, as files.

use std::path::PathBuf;

use trtmc_core::artifacts::{MODEL_LIST_SCHEMA, ModelEntry, ModelList, RuntimeEntry};
use trtmc_core::catalog::Catalog;
use trtmc_report::terminal::{pad_right, width};

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
    /// The JSON Schema of every document trtmc-bench writes, as files (unpacked from the binary).
    Schemas,
    /// The matrix suites and environments shipped in the binary, by the name `matrix` accepts.
    Suites,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

pub fn execute(args: ListArgs) -> CliResult {
    let (manifest_root, format) = match args.what {
        ListWhat::Models {
            manifest_root,
            format,
        } => (manifest_root, format),
        ListWhat::Schemas => return list_schemas(),
        ListWhat::Suites => return list_suites(),
    };
    let root = crate::catalog_root::resolve(manifest_root)?;
    let catalog = Catalog::load(&root).map_err(CliError::input)?;
    let runtimes: Vec<RuntimeEntry> = trtmc_runtime::registry::runtime_names()
        .iter()
        .filter_map(|n| trtmc_runtime::registry::runtime(n).ok())
        .map(|rt| RuntimeEntry {
            name: rt.name().to_string(),
            version: rt.version(),
            available: rt.availability().is_ok(),
            reason: rt.availability().err().map(|e| e.to_string()),
        })
        .collect();
    // Looked up in the local hub cache only: listing never touches the network.
    let missing: Vec<Vec<String>> = catalog
        .profiles
        .iter()
        .map(|p| {
            if p.status.is_ready() {
                trtmc_runner::sources::needs_download(p)
            } else {
                Vec::new()
            }
        })
        .collect();
    // A profile whose model file comes from a package this machine lacks says how to install it.
    let prerequisite: Vec<Option<String>> = catalog
        .profiles
        .iter()
        .map(|p| {
            p.status
                .is_ready()
                .then(|| trtmc_runner::sources::missing_prerequisite(p))
                .flatten()
        })
        .collect();
    let status = |i: usize, p: &trtmc_core::catalog::Profile| match (
        &prerequisite[i],
        missing[i].as_slice(),
    ) {
        (Some(why), _) => format!("missing prerequisite: {why}"),
        (None, []) => p.status.label(),
        (None, files) => format!("ready, needs download ({})", files.join(", ")),
    };
    match format {
        ListFormat::Json => {
            let models = catalog
                .profiles
                .iter()
                .zip(&missing)
                .enumerate()
                .map(|(i, (p, missing))| ModelEntry {
                    name: p.name.clone(),
                    family: p.family.clone(),
                    task_strategy: p.task_strategy.clone(),
                    operation: p.operation.clone(),
                    runtime_strategy: p.runtime_strategy.clone(),
                    status: match &prerequisite[i] {
                        Some(why) => format!("missing prerequisite: {why}"),
                        None => p.status.label(),
                    },
                    needs_download: missing.clone(),
                    cases: p.cases.iter().map(|c| c.name.clone()).collect(),
                    manifest: p.manifest.clone(),
                })
                .collect();
            let doc = ModelList {
                schema: MODEL_LIST_SCHEMA.into(),
                catalog: catalog.root.clone(),
                models,
                runtimes,
            };
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(CliError::internal)?
            )?;
        }
        ListFormat::Table => {
            // Columns as wide as their longest entry, so long task names never shift the table.
            let col = |header: &str, cell: &dyn Fn(&trtmc_core::catalog::Profile) -> String| {
                catalog
                    .profiles
                    .iter()
                    .map(|p| width(&cell(p)))
                    .fold(header.len(), usize::max)
            };
            let operation = |p: &trtmc_core::catalog::Profile| {
                p.operation.clone().unwrap_or_else(|| "-".into())
            };
            let w_name = col("NAME", &|p| p.name.clone());
            let w_task = col("TASK", &|p| p.task_strategy.clone());
            let w_op = col("OPERATION", &operation);
            let w_rt = col("RUNTIME", &|p| p.runtime_strategy.clone());
            // Padded by terminal columns, so wide (CJK) names keep the table aligned.
            outln!(
                "{}  {}  {}  {}  STATUS",
                pad_right("NAME", w_name),
                pad_right("TASK", w_task),
                pad_right("OPERATION", w_op),
                pad_right("RUNTIME", w_rt)
            )?;
            for (i, p) in catalog.profiles.iter().enumerate() {
                outln!(
                    "{}  {}  {}  {}  {}",
                    pad_right(&p.name, w_name),
                    pad_right(&p.task_strategy, w_task),
                    pad_right(&operation(p), w_op),
                    pad_right(&p.runtime_strategy, w_rt),
                    status(i, p)
                )?;
            }
            let rts: Vec<String> = runtimes
                .iter()
                .map(|r| match &r.reason {
                    None => format!("{} {} (available)", r.name, r.version),
                    Some(why) => format!("{} (unavailable: {why})", r.name),
                })
                .collect();
            outln!(
                "\n{} profile(s) in {}; runtimes: {}",
                catalog.profiles.len(),
                catalog.root.display(),
                rts.join(", ")
            )?;
        }
    }
    Ok(())
}

/// The unpacked path of every shipped JSON Schema.
fn list_schemas() -> CliResult {
    let root = crate::catalog_root::share_root()?;
    for (path, _) in trtmc_share::files()
        .iter()
        .filter(|(p, _)| p.starts_with("schemas/"))
    {
        outln!("{}", root.join(path).display())?;
    }
    Ok(())
}

/// The shipped suites and environments: the name `matrix` accepts, the kind, the unpacked path.
fn list_suites() -> CliResult {
    let root = crate::catalog_root::share_root()?;
    let rows = trtmc_share::SHIPPED_SUITES
        .iter()
        .map(|(name, path)| (name, "suite", path))
        .chain(
            trtmc_share::SHIPPED_ENVIRONMENTS
                .iter()
                .map(|(name, path)| (name, "environment", path)),
        );
    let width = trtmc_share::SHIPPED_SUITES
        .iter()
        .chain(trtmc_share::SHIPPED_ENVIRONMENTS)
        .map(|(name, _)| name.chars().count())
        .max()
        .unwrap_or(0);
    for (name, kind, path) in rows {
        outln!(
            "{}  {:<11}  {}",
            pad_right(name, width),
            kind,
            root.join(path).display()
        )?;
    }
    Ok(())
}
