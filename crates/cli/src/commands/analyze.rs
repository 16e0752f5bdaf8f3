//! `trtmc-bench analyze`: TensorRT layer-info and profile analysis (seeds 001/002).
//!
//! `analyze [FOLDER | --data LAYERS [PROFILE [TIMES]]…]` writes the analysis JSON;
//! `analyze package …` writes a self-contained report folder; `analyze serve DIR` previews one.
//! The command exits 0 whenever it could emit structured data, even when backends fail
//! validation (unless `--fail-on unusable` asks for exit 9 then); it exits 3 only when nothing
//! structured can be produced.

use std::io::{BufWriter, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use trtmc_analyze::report::PackageOptions;
use trtmc_analyze::{Analysis, DataSpec, Inputs, Request};

use crate::exit::{CliError, CliResult, ExitCode};

/// Analyze TensorRT --exportLayerInfo / --exportProfile JSON and package a browser report.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct AnalyzeArgs {
    #[command(subcommand)]
    pub command: Option<AnalyzeCommand>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Write the analysis JSON (schema trtmc.analysis/v1) to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write analyze-data.json (the published "TensorRT Performance Analysis Data" v1.0 format).
    #[arg(long, value_name = "FILE")]
    pub analyze_data_output: Option<PathBuf>,
    /// Do not print the per-backend summary on standard error.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub fail_on: crate::ci::FailOnArgs,
}

/// Where the layer-info / profile files come from.
#[derive(Debug, clap::Args)]
pub struct InputArgs {
    /// Folder that directly holds layers_*.json / profile_*.json (or TREx <name>.layers.json,
    /// .graph.json, .profile.json, .timing.json). A parent of component folders is refused.
    #[arg(value_name = "FOLDER", conflicts_with = "data")]
    pub folder: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataGroups,
    /// Model name; wins over names inferred from config files, the folder and file names.
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// The backend every other one is compared with (its label); default: the first --data given,
    /// or the first in folder order.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,
}

/// `--data LAYERS [PROFILE [TIMES]]`, repeatable, kept as one group of paths per occurrence
/// (clap's derive flattens repeated multi-value options, so this one is declared by hand), each with
/// the `--label` that follows it.
#[derive(Debug, Default, Clone)]
pub struct DataGroups {
    pub groups: Vec<Vec<PathBuf>>,
    /// One entry per group: the `--label NAME` given right after that group.
    pub labels: Vec<Option<String>>,
}

/// Gives each `--label` to the `--data` group before it on the command line.
fn labels_for_groups(
    groups: &[Vec<PathBuf>],
    matches: &clap::ArgMatches,
) -> Result<Vec<Option<String>>, clap::Error> {
    let usage =
        |msg: String| clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, msg + "\n");
    let mut labels = vec![None; groups.len()];
    let (Some(values), Some(positions)) = (
        matches.get_many::<String>("label"),
        matches.indices_of("label"),
    ) else {
        return Ok(labels);
    };
    // Where each group starts on the command line: the position of its first path.
    let data_positions: Vec<usize> = matches.indices_of("data").into_iter().flatten().collect();
    let mut starts = Vec::with_capacity(groups.len());
    let mut at = 0;
    for g in groups {
        if let Some(p) = data_positions.get(at) {
            starts.push(*p);
        }
        at += g.len();
    }
    for (label, position) in values.zip(positions) {
        if label.trim().is_empty() || label.chars().any(char::is_control) {
            return Err(usage(format!(
                "--label {label:?} is not a usable backend label: give a non-empty name without control characters"
            )));
        }
        let Some(group) = starts.iter().rposition(|s| *s < position) else {
            return Err(usage(format!(
                "--label {label:?} comes before any --data group: it names the --data LAYERS [PROFILE [TIMES]] given just before it"
            )));
        };
        if let Some(first) = &labels[group] {
            return Err(usage(format!(
                "--data group {} has two labels ({first:?} and {label:?}): give one --label after each --data",
                group + 1
            )));
        }
        if labels.iter().flatten().any(|l| l == label) {
            return Err(usage(format!(
                "--label {label:?} is given to two --data groups: every backend needs its own label"
            )));
        }
        labels[group] = Some(label.clone());
    }
    Ok(labels)
}

impl clap::FromArgMatches for DataGroups {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let groups: Vec<Vec<PathBuf>> = matches
            .get_occurrences::<PathBuf>("data")
            .map(|occurrences| occurrences.map(|group| group.cloned().collect()).collect())
            .unwrap_or_default();
        let labels = labels_for_groups(&groups, matches)?;
        Ok(DataGroups { groups, labels })
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for DataGroups {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.arg(
            clap::Arg::new("data")
                .long("data")
                .value_name("LAYERS [PROFILE [TIMES]]")
                .num_args(1..=3)
                .action(clap::ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("One backend from explicit files: LAYERS [PROFILE [TIMES]]. Repeat for several backends."),
        )
        .arg(
            clap::Arg::new("label")
                .long("label")
                .value_name("NAME")
                .action(clap::ArgAction::Append)
                .requires("data")
                .help("Label for the --data group just before it (default: from its file names), kept as written."),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum AnalyzeCommand {
    /// Analyze one input folder (or --data files) and write one self-contained report folder.
    // Boxed: the package options are most of the enum's size.
    Package(Box<PackageArgs>),
    /// Serve a report folder on the loopback interface for a browser preview.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct PackageArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Exact report folder to create (must be absent or empty).
    #[arg(long, value_name = "DIR", conflicts_with = "output_parent")]
    pub report_dir: Option<PathBuf>,
    /// Parent folder for an automatically named report_<model>_<timestamp> folder (default: the
    /// system temporary directory); an existing name gets a _2, _3, … suffix.
    #[arg(long, value_name = "DIR")]
    pub output_parent: Option<PathBuf>,
    /// Re-package the report folder holding this analyze-data.json (ours or another tool's).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["folder", "data", "report_dir", "output_parent"])]
    pub analyze_data: Option<PathBuf>,
    /// A written analysis (## Summary, ## Details) to copy as analyze.md and show in the report.
    #[arg(long, value_name = "FILE")]
    pub analyze_md: Option<PathBuf>,
    /// Timestamp for the automatic folder name, YYYYMMDD_HHMMSS (default: now).
    #[arg(long, value_name = "YYYYMMDD_HHMMSS")]
    pub timestamp: Option<String>,
    #[command(flatten)]
    pub fail_on: crate::ci::FailOnArgs,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Report folder (holding index.html) to serve.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Loopback address to bind (`localhost` is 127.0.0.1).
    #[arg(long, default_value = "127.0.0.1", value_parser = bind_address)]
    pub bind: IpAddr,
}

/// `--bind`: an IP address, or `localhost` (127.0.0.1); whether it is a loopback one is checked by
/// the server.
fn bind_address(text: &str) -> Result<IpAddr, NotAnAddress> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    }
    text.parse().map_err(|_| NotAnAddress {
        text: text.to_string(),
    })
}

/// A `--bind` value that is no IP address.
#[derive(Debug)]
struct NotAnAddress {
    text: String,
}

impl std::fmt::Display for NotAnAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not an IP address or `localhost`", self.text)
    }
}

impl std::error::Error for NotAnAddress {}

pub fn execute(args: AnalyzeArgs) -> CliResult {
    match args.command {
        Some(AnalyzeCommand::Package(p)) => package(*p),
        Some(AnalyzeCommand::Serve(s)) => serve(s),
        None => {
            args.fail_on
                .check("analyze", &[crate::ci::FailOn::Unusable])?;
            analyze_to_json(
                args.input,
                args.output,
                args.analyze_data_output,
                args.quiet,
                &args.fail_on,
            )
        }
    }
}

fn request(input: InputArgs) -> CliResult<(Request, trtmc_analyze::Options)> {
    let options = trtmc_analyze::Options {
        baseline: input.baseline.clone(),
    };
    let DataGroups { groups, labels } = input.data;
    let inputs = match (input.folder, groups.is_empty()) {
        (Some(folder), true) => Inputs::Folder(folder),
        (None, false) => Inputs::Data(
            groups
                .into_iter()
                .zip(labels)
                .map(|(mut group, label)| {
                    let mut it = group.drain(..);
                    let layers = it.next().unwrap_or_default();
                    DataSpec {
                        layers,
                        profile: it.next(),
                        times: it.next(),
                        label,
                    }
                })
                .collect(),
        ),
        (Some(_), false) => {
            return Err(CliError::new(
                ExitCode::Usage,
                "give either a FOLDER or --data files, not both",
            ));
        }
        (None, true) => {
            return Err(CliError::new(
                ExitCode::Usage,
                "nothing to analyze: give a FOLDER holding layers_*.json / profile_*.json, or --data LAYERS [PROFILE]",
            ));
        }
    };
    Ok((
        Request {
            inputs,
            model_name: input.model_name,
        },
        options,
    ))
}

fn run_analysis(request: &Request, options: &trtmc_analyze::Options) -> CliResult<Analysis> {
    Ok(trtmc_analyze::analyze_with(request, options)?)
}

fn print_summary(analysis: &Analysis) {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    for line in analysis.summary_lines() {
        let _ = writeln!(err, "{line}");
    }
}

/// Writes one output document through the atomic writer (a temporary sibling renamed over the
/// path, so a kill never leaves half a file); a symlink at the path is refused, never written through.
fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut BufWriter<&mut std::fs::File>) -> serde_json::Result<()>,
) -> CliResult {
    if path.is_symlink() {
        return Err(CliError::new(
            ExitCode::Output,
            format!(
                "{} is a symbolic link; refusing to write through it (pass the real file or a new path)",
                path.display()
            ),
        ));
    }
    trtmc_core::fsutil::write_atomic_with(path, |w| write(w).map_err(std::io::Error::from)).map_err(
        |e| {
            CliError::new(
                ExitCode::Output,
                format!("cannot write {}: {e}", path.display()),
            )
        },
    )
}

fn analyze_to_json(
    input: InputArgs,
    output: Option<PathBuf>,
    analyze_data: Option<PathBuf>,
    quiet: bool,
    fail_on: &crate::ci::FailOnArgs,
) -> CliResult {
    let (request, options) = request(input)?;
    let analysis = run_analysis(&request, &options)?;
    // The two documents are independent: write them on two threads.
    let (ours, theirs) = std::thread::scope(|s| {
        let theirs = analyze_data
            .as_ref()
            .map(|path| s.spawn(|| write_file(path, |w| analysis.write_analyze_data(w))));
        let ours = match output.as_ref().filter(|p| p.as_os_str() != "-") {
            Some(path) => write_file(path, |w| analysis.write_json(w)),
            None => write_stdout(&analysis),
        };
        let theirs = theirs.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(CliError::internal("the analyze-data.json writer stopped")))
        });
        (ours, theirs)
    });
    ours?;
    theirs.transpose()?;
    if !quiet {
        print_summary(&analysis);
    }
    let verdict = crate::ci::after_analyze(&analysis, fail_on);
    // The process ends next: handing the memory back in one piece is faster than freeing every
    // layer record on the way out.
    std::mem::forget(analysis);
    verdict.map_or(Ok(()), Err)
}

fn write_stdout(analysis: &Analysis) -> CliResult {
    let mut w = BufWriter::new(crate::out::stdout());
    analysis
        .write_json(&mut w)
        .and_then(|_| w.write_all(b"\n").map_err(serde_json::Error::io))
        .and_then(|_| w.flush().map_err(serde_json::Error::io))
        .map_err(|e| {
            CliError::new(
                ExitCode::Output,
                format!("cannot write the analysis to standard output: {e}"),
            )
        })
}

fn package(args: PackageArgs) -> CliResult {
    args.fail_on
        .check("analyze package", &[crate::ci::FailOn::Unusable])?;
    let verdict;
    let packaged = match &args.analyze_data {
        Some(path) => {
            if !path.is_file() {
                return Err(CliError::input(format!(
                    "{}: no such analyze-data.json file",
                    path.display()
                )));
            }
            let request = Request {
                inputs: Inputs::AnalyzeData(path.clone()),
                model_name: args.input.model_name.clone(),
            };
            let options = trtmc_analyze::Options {
                baseline: args.input.baseline.clone(),
            };
            let analysis = run_analysis(&request, &options)?;
            print_summary(&analysis);
            verdict = crate::ci::after_analyze(&analysis, &args.fail_on);
            trtmc_analyze::report::repackage(&analysis, path, args.analyze_md.as_deref())?
        }
        None => {
            let (request, options) = request(args.input)?;
            let analysis = run_analysis(&request, &options)?;
            print_summary(&analysis);
            verdict = crate::ci::after_analyze(&analysis, &args.fail_on);
            let opts = PackageOptions {
                report_dir: args.report_dir,
                output_parent: args.output_parent,
                timestamp: args.timestamp,
                analyze_md: args.analyze_md,
            };
            trtmc_analyze::report::package(&analysis, &opts)?
        }
    };
    for w in &packaged.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = crate::out::stdout();
    let lines = [
        format!("report_dir: {}", packaged.report_dir.display()),
        format!("index: {}", packaged.index.display()),
        format!("analyze_data: {}", packaged.analyze_data_json.display()),
    ];
    for line in lines.iter().chain(
        packaged
            .analyze_md
            .as_ref()
            .map(|p| format!("analyze_md: {}", p.display()))
            .iter(),
    ) {
        writeln!(out, "{line}").map_err(crate::out::write_failed)?;
    }
    verdict.map_or(Ok(()), Err)
}

fn serve(args: ServeArgs) -> CliResult {
    let addr = SocketAddr::new(args.bind, args.port);
    let stop = AtomicBool::new(false);
    let dir = args.dir.clone();
    trtmc_analyze::serve::serve(&args.dir, addr, &stop, |bound| {
        let mut out = crate::out::stdout();
        let _ = writeln!(
            out,
            "serving {} at http://{bound}/ (Ctrl-C to stop)",
            dir.display()
        );
        let _ = out.flush();
    })
    .map_err(CliError::from)
}
