//! The preflight (`matrix check`, and the first step of `matrix run`) and the plan it produces.
//!
//! Nothing is measured or built here: the suite is checked against the catalog (coverage, testcases,
//! entry ids), every row is resolved on both sides, runtimes and reference runners are looked up, the
//! timing contracts compared, the environment expanded and the machine checked (executables, storage,
//! directories, program revision).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use trtmc_core::artifacts::{PUBLIC_PIPELINE_CALL_WALL, ProgramInfo};
use trtmc_core::case::{self, Override, ResolveInput, ResolvedCase, Source};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::machine::find_program;
use trtmc_runtime::registry;
use trtmc_runtime::runtime;

use crate::suite::{self, Expanded, ORT_PYTHON, Row, Suite, TRTMC_PREFIX};

pub use trtmc_core::artifacts::matrix::PLAN_SCHEMA;
/// The plan's file in a matrix run directory (what marks a directory as a matrix run).
pub const PLAN_FILE: &str = "matrix-run.json";

fn one() -> u64 {
    1
}

/// Operations `reference/ort_reference.py` implements (its documented contract).
pub const ORT_PYTHON_OPERATIONS: &[&str] = &[
    "infer",
    "classify",
    // The text operations, from the runners' per-call inputs (reference/ort_ops/<operation>.py).
    "generate",
    "generate_vl",
    "encode",
    "rerank",
    // The media operations' loops around the session (reference/ort_ops/).
    "segment",
    "detect",
    "forecast",
    "transcribe",
    "generate_audio",
    "convert_speech",
    "generate_image",
    "generate_video",
];

/// What kind of problem a preflight finding is (it decides the exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The suite, environment file or a variable is wrong: fix the file or export the variable.
    Config,
    /// The machine lacks something: an executable, a runtime, storage, a directory, Slurm.
    Machine,
    /// Candidate and reference are timed at different boundaries.
    Contract,
}

/// One problem the preflight found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What sort of problem it is, which decides the exit code.
    pub kind: Kind,
    /// The row id, variable or field the finding is about.
    pub subject: String,
    /// What is wrong and what to do, as a sentence.
    pub message: String,
}

fn finding(kind: Kind, subject: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding {
        kind,
        subject: subject.into(),
        message: message.into(),
    }
}

/// A row after preflight: both sides resolved, contracts known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRow {
    /// The row's position in the suite (Slurm task lists and receipts name rows by it).
    pub index: usize,
    /// The row's id ([`Row::id`]).
    pub id: String,
    /// The suite row, its data paths made absolute.
    pub row: Row,
    /// The operation both sides time (the candidate's).
    pub operation: String,
    /// Untimed calls per side before the timed ones.
    pub warmup: u64,
    /// Timed calls per side in total (each round times `iterations / rounds`, rounded up).
    pub iterations: u64,
    /// Candidate/reference alternations.
    #[serde(default = "one")]
    pub rounds: u64,
    /// The most rounds the row runs while its light is undecided (at least `rounds`; 0 in plans
    /// written before rows added rounds, read as `rounds`).
    #[serde(default)]
    pub max_rounds: u64,
    /// Seconds the row's rounds may take while its light is undecided.
    #[serde(default)]
    pub max_seconds: Option<f64>,
    /// The reference side's precision.
    pub baseline_precision: String,
    /// Where `baseline_precision` came from: `row baseline.precision`, `testcase reference_precision`, `manifest reference_precision` or
    /// `model precision`.
    pub baseline_precision_source: String,
    /// The timed region of the candidate's runtime ([`trtmc_runtime::runtime::Runtime::timing_boundary`]).
    pub candidate_boundary: String,
    /// The reference's; the preflight refuses a row whose two boundaries differ.
    pub reference_boundary: String,
    /// Workload identity of each side as resolved (the run records what each side actually ran).
    pub candidate_identity: String,
    /// See `candidate_identity`.
    pub reference_identity: String,
}

/// Everything a run needs, written as `matrix-run.json` so that `resume` and Slurm tasks replay it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_SCHEMA`].
    pub schema: String,
    /// When the plan was made (RFC 3339).
    pub created: String,
    /// The suite file, absolute.
    pub suite_path: PathBuf,
    /// SHA-256 of the suite file's bytes.
    pub suite_sha256: String,
    /// The suite as parsed.
    pub suite: Suite,
    /// The environment file, absolute.
    pub environment_path: PathBuf,
    /// The environment with every `${NAME}` expanded on the machine that made the plan.
    pub environment: Expanded,
    /// The catalog the rows were resolved against, absolute.
    pub catalog_root: PathBuf,
    /// The program that made the plan; `resume` refuses another revision.
    pub program: ProgramInfo,
    /// The trtmc-bench executable that runs rows (the one that made the plan).
    pub exe: PathBuf,
    /// `local` or `slurm`.
    pub executor: String,
    /// `--entry`: only the rows of this entry or row id were planned.
    pub entry: Option<String>,
    /// The command line that made the plan.
    pub command_line: Vec<String>,
    /// The rows to run, in suite order.
    pub rows: Vec<PlannedRow>,
}

/// Inputs of a preflight.
pub struct CheckInput<'a> {
    /// The suite file.
    pub suite: &'a Path,
    /// The environment file.
    pub environment: &'a Path,
    /// The catalog to resolve rows against.
    pub catalog_root: &'a Path,
    /// The reference runners' folder used when the environment names none.
    pub repo_reference: &'a Path,
    /// `--entry`: plan only the rows of this entry (or this row id).
    pub entry: Option<&'a str>,
    /// `--executor`: `local` or `slurm`.
    pub executor: &'a str,
    /// The command line, recorded in the plan.
    pub command_line: Vec<String>,
}

/// Runs the whole preflight; `Err` lists every problem found (not just the first).
pub fn check(input: &CheckInput<'_>) -> Result<Plan, Vec<Finding>> {
    let mut f = Vec::new();
    let suite = match suite::load_suite(input.suite) {
        Ok(s) => s,
        Err(e) => return Err(vec![finding(Kind::Config, "suite", e.to_string())]),
    };
    let env_file = match suite::load_environment(input.environment) {
        Ok(e) => e,
        Err(e) => return Err(vec![finding(Kind::Config, "environment", e.to_string())]),
    };
    let env = match env_file.expand(input.repo_reference) {
        Ok(e) => Some(e),
        Err(errors) => {
            f.extend(
                errors
                    .into_iter()
                    .map(|e| finding(Kind::Config, "environment", e)),
            );
            None
        }
    };
    let catalog = match Catalog::load(input.catalog_root) {
        Ok(c) => c,
        Err(e) => {
            f.push(finding(Kind::Config, "catalog", e.to_string()));
            return Err(f);
        }
    };
    coverage(&suite, &catalog, &mut f);
    if let Some(entry) = input.entry
        && !suite
            .rows
            .iter()
            .any(|r| r.entry == entry || r.id() == entry)
    {
        let known: Vec<&str> = suite.rows.iter().map(|r| r.entry.as_str()).collect();
        f.push(finding(
            Kind::Config,
            "--entry",
            format!("no row has entry `{entry}` (entries: {})", known.join(", ")),
        ));
    }
    if !matches!(input.executor, "local" | "slurm") {
        f.push(finding(
            Kind::Config,
            "--executor",
            format!(
                "executor `{}` is unknown: use local or slurm",
                input.executor
            ),
        ));
    }

    let program = trtmc_runner::machine::program();
    if let Some(env) = &env {
        machine_checks(env, input.executor, &program, &mut f);
    }

    let mut rows = Vec::new();
    let suite_dir = absolute(input.suite)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for (index, row) in suite.rows.iter().enumerate() {
        let selected = input.entry.is_none_or(|e| row.entry == e || row.id() == e);
        if !selected {
            continue;
        }
        let row = &with_data_paths(row, &suite_dir, &mut f);
        if let Some(planned) = plan_row(index, row, &suite, &catalog, env.as_ref(), &mut f) {
            rows.push(planned);
        }
    }
    if !f.is_empty() {
        return Err(f);
    }
    let Some(environment) = env else {
        return Err(f);
    };
    let text = std::fs::read(input.suite).unwrap_or_default();
    // The trtmc-bench the candidate rows run: the environment's `worker`, else this program.
    let exe = match &environment.worker {
        Some(worker) => absolute(worker),
        None => std::env::current_exe().unwrap_or_else(|_| PathBuf::from("trtmc-bench")),
    };
    Ok(Plan {
        schema: PLAN_SCHEMA.into(),
        created: jiff::Timestamp::now().to_string(),
        suite_path: absolute(input.suite),
        suite_sha256: trtmc_core::hash::sha256_hex(&text),
        suite,
        environment_path: absolute(input.environment),
        environment,
        catalog_root: absolute(input.catalog_root),
        program,
        exe,
        executor: input.executor.into(),
        entry: input.entry.map(str::to_string),
        command_line: input.command_line.clone(),
        rows,
    })
}

/// `p` made absolute: canonical when it exists, else joined to the current directory.
pub(crate) fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

/// Every ready profile is covered by a row, excluded by rule (a smoke duplicate) or listed in
/// `excluded_profiles` with a reason.
fn coverage(suite: &Suite, catalog: &Catalog, f: &mut Vec<Finding>) {
    let mut excluded: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &suite.excluded_profiles {
        if catalog.profiles.iter().all(|p| p.name != e.profile) {
            f.push(finding(
                Kind::Config,
                format!("excluded_profiles/{}", e.profile),
                "is not a profile of the catalog: remove it or fix the name",
            ));
        }
        if e.reason.trim().is_empty() {
            f.push(finding(
                Kind::Config,
                format!("excluded_profiles/{}", e.profile),
                "has no reason: say why it is not measured",
            ));
        }
        if excluded.insert(&e.profile, &e.reason).is_some() {
            f.push(finding(
                Kind::Config,
                format!("excluded_profiles/{}", e.profile),
                "is listed twice",
            ));
        }
        if suite.rows.iter().any(|r| r.model == e.profile) {
            f.push(finding(
                Kind::Config,
                format!("excluded_profiles/{}", e.profile),
                "is excluded but also has rows: drop one of them",
            ));
        }
    }
    for e in &suite.excluded_operations {
        if trtmc_core::operations::operation(&e.operation).is_none() {
            f.push(finding(
                Kind::Config,
                format!("excluded_operations/{}", e.operation),
                "is not an operation trtmc knows: fix the name",
            ));
        }
        if e.reason.trim().is_empty() {
            f.push(finding(
                Kind::Config,
                format!("excluded_operations/{}", e.operation),
                "has no reason: say why it is not measured",
            ));
        }
    }
    for p in &catalog.profiles {
        if !p.status.is_ready() || p.smoke_of.is_some() {
            continue;
        }
        let op = p.operation.as_deref().unwrap_or("");
        if suite.excluded_operations.iter().any(|e| e.operation == op)
            && suite.rows.iter().all(|r| r.model != p.name)
        {
            continue;
        }
        let covered = suite
            .rows
            .iter()
            .any(|r| covered_profile(catalog, &r.model) == Some(p.name.as_str()));
        if !covered && !excluded.contains_key(p.name.as_str()) {
            f.push(finding(
                Kind::Config,
                format!("coverage/{}", p.name),
                format!(
                    "ready profile `{}` has no row and is not in excluded_profiles: add a row, or exclude it with a reason",
                    p.name
                ),
            ));
        }
    }
}

/// The profile a row on `model` covers: the model itself, or for a smoke duplicate (`smoke_of`, e.g.
/// an `l0` variant in the quick pass) the profile it shortens.
fn covered_profile<'a>(catalog: &'a Catalog, model: &str) -> Option<&'a str> {
    let p = catalog.profiles.iter().find(|p| p.name == model)?;
    Some(p.smoke_of.as_deref().unwrap_or(p.name.as_str()))
}

/// What a suite covers, counted as the seed counts it: distinct ready profiles (a smoke duplicate's row
/// counts for the profile it shortens, never for itself), their families, and (family, operation)
/// contracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoverageCounts {
    /// Distinct ready profiles.
    pub profiles: usize,
    /// Distinct model families of those profiles.
    pub families: usize,
    /// Distinct (family, operation) pairs.
    pub contracts: usize,
}

/// Counts what `suite` covers of `catalog` (`matrix check` prints it).
pub fn coverage_counts(suite: &Suite, catalog: &Catalog) -> CoverageCounts {
    let mut profiles = std::collections::BTreeSet::new();
    let mut families = std::collections::BTreeSet::new();
    let mut contracts = std::collections::BTreeSet::new();
    for row in &suite.rows {
        let Some(name) = covered_profile(catalog, &row.model) else {
            continue;
        };
        let Some(p) = catalog.profiles.iter().find(|p| p.name == name) else {
            continue;
        };
        if !p.status.is_ready() {
            continue;
        }
        profiles.insert(p.name.as_str());
        families.insert(p.family.as_str());
        contracts.insert((p.family.as_str(), p.operation.as_deref().unwrap_or("")));
    }
    CoverageCounts {
        profiles: profiles.len(),
        families: families.len(),
        contracts: contracts.len(),
    }
}

fn machine_checks(env: &Expanded, executor: &str, program: &ProgramInfo, f: &mut Vec<Finding>) {
    let mut exes: Vec<String> = env.executables.keys().cloned().collect();
    exes.push(env.python.clone());
    if executor == "slurm" {
        exes.extend(["sbatch", "squeue", "scontrol"].map(String::from));
    }
    exes.sort();
    exes.dedup();
    for exe in &exes {
        if find_program(exe).is_none() {
            f.push(finding(
                Kind::Machine,
                format!("executable/{exe}"),
                format!("`{exe}` is not on PATH: install it or add its folder to PATH"),
            ));
        }
    }
    if executor == "slurm"
        && find_program("scontrol").is_some()
        && !std::process::Command::new("scontrol")
            .arg("ping")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    {
        f.push(finding(
            Kind::Machine,
            "slurm",
            "`scontrol ping` failed: the Slurm controller is not reachable (start slurmctld, check /etc/slurm/slurm.conf)",
        ));
    }
    for (what, dir) in env
        .runtime_dirs
        .iter()
        .map(|d| ("runtime_dirs", d))
        .chain(env.bundle_roots.iter().map(|d| ("bundle_roots", d)))
    {
        if !dir.is_dir() {
            f.push(finding(
                Kind::Machine,
                format!("{what}/{}", dir.display()),
                "is not a directory: create it or fix the variable that names it",
            ));
        }
    }
    if let Some(worker) = &env.worker
        && !worker.is_file()
    {
        f.push(finding(
            Kind::Machine,
            "worker",
            format!(
                "{} is not a file: point TRTMC_PERF_WORKER (the environment's `worker`) at a trtmc-bench executable, or unset it to run this program",
                worker.display()
            ),
        ));
    }
    if !env.reference_dir.join("ort_reference.py").is_file() {
        f.push(finding(
            Kind::Machine,
            "reference_dir",
            format!(
                "{} has no ort_reference.py: point reference_dir at the repository's reference/ folder",
                env.reference_dir.display()
            ),
        ));
    }
    if find_program(&env.python).is_some()
        && let Err(why) = probe_python(&env.python)
    {
        f.push(finding(Kind::Machine, "python", why.to_string()));
    }
    for (what, dir) in [
        ("results_root", &env.results_root),
        ("bundle_cache", &env.bundle_cache),
    ] {
        // Absent is fine (created on first use); anything but a directory is not.
        if dir.exists() && !dir.is_dir() {
            f.push(finding(
                Kind::Machine,
                what,
                format!(
                    "{} is not a directory: point {what} at a directory (or a path to create)",
                    dir.display()
                ),
            ));
            continue;
        }
        match free_gib(dir) {
            Some(free) if free < env.free_storage_gib => f.push(finding(
                Kind::Machine,
                what,
                format!(
                    "{} has {free:.1} GiB free, the environment needs {} GiB: free space or move it",
                    dir.display(),
                    env.free_storage_gib
                ),
            )),
            Some(_) => {}
            None => f.push(finding(
                Kind::Machine,
                what,
                format!("cannot read the free storage of {}", dir.display()),
            )),
        }
    }
    if env.require_release_build && program.build_profile != "release" {
        f.push(finding(
            Kind::Machine,
            "program",
            format!(
                "this trtmc-bench is a {} build (revision {}); the environment requires a release build: cargo build --release",
                program.build_profile, program.revision
            ),
        ));
    }
}

/// Why the environment's `python` is not a usable Python 3 interpreter.
#[derive(Debug, thiserror::Error)]
enum PythonProbeError {
    /// `python --version` could not be started.
    #[error(
        "`{python} --version` cannot start: {source}; point `python` at a Python 3 interpreter"
    )]
    CannotStart {
        /// The interpreter named by the environment.
        python: String,
        /// Why it could not start.
        source: std::io::Error,
    },
    /// `python --version` failed or answered something other than `Python 3.x`.
    #[error(
        "`{python} --version` printed no Python 3 version ({status}, output `{said}`): point `python` at a Python 3 interpreter"
    )]
    NotPython3 {
        /// The interpreter named by the environment.
        python: String,
        /// How the command ended.
        status: std::process::ExitStatus,
        /// Its standard output and error, trimmed.
        said: String,
    },
}

/// Runs `python --version`: the reference rows need an interpreter that answers `Python 3.x`.
fn probe_python(python: &str) -> Result<(), PythonProbeError> {
    let out = std::process::Command::new(python)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| PythonProbeError::CannotStart {
            python: python.to_string(),
            source,
        })?;
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() && said.trim_start().starts_with("Python 3") {
        return Ok(());
    }
    Err(PythonProbeError::NotPython3 {
        python: python.to_string(),
        status: out.status,
        said: said.trim().to_string(),
    })
}

/// Free GiB of the file system holding `dir` (or its nearest existing ancestor).
fn free_gib(dir: &Path) -> Option<f64> {
    let abs = absolute(dir);
    let existing = abs.ancestors().find(|p| p.exists())?;
    let st = rustix::fs::statvfs(existing).ok()?;
    Some(st.f_bavail as f64 * st.f_frsize as f64 / (1u64 << 30) as f64)
}

pub(crate) fn overrides(
    set: &BTreeMap<String, Value>,
) -> Result<Vec<Override>, trtmc_core::case::OverrideError> {
    set.iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Override::parse(&format!("{k}={text}"), Source::Set)
        })
        .collect()
}

/// The row with its `inputs`/`check_outputs` resolved against the suite file's folder (then the
/// current directory), so the plan replays from anywhere; a named file that is missing is a finding
/// now rather than a failed row later. A trtexec-style `name:file.bin` list is passed on as written.
fn with_data_paths(row: &Row, suite_dir: &Path, f: &mut Vec<Finding>) -> Row {
    let mut row = row.clone();
    let id = row.id();
    if row.check_outputs.is_some() && row.inputs.is_none() {
        f.push(finding(
            Kind::Config,
            format!("row {id}"),
            "check_outputs needs inputs: give the data whose outputs it holds",
        ));
    }
    for (key, value) in [
        ("inputs", &mut row.inputs),
        ("check_outputs", &mut row.check_outputs),
    ] {
        let Some(text) = value.as_mut() else {
            continue;
        };
        let beside_suite = suite_dir.join(&*text);
        if beside_suite.exists() {
            *text = beside_suite.to_string_lossy().into_owned();
        } else if Path::new(text.as_str()).exists() {
            *text = absolute(Path::new(text.as_str()))
                .to_string_lossy()
                .into_owned();
        } else if !text.contains(':') {
            f.push(finding(
                Kind::Config,
                format!("row {id}"),
                format!(
                    "{key} `{text}` does not exist (looked beside the suite, in {}, and in the current directory): fix the path",
                    suite_dir.display()
                ),
            ));
        }
    }
    for (key, tolerance) in [("atol", row.atol), ("rtol", row.rtol)] {
        if let Some(t) = tolerance
            && !(t.is_finite() && t >= 0.0)
        {
            f.push(finding(
                Kind::Config,
                format!("row {id}"),
                format!("{key} must be a finite number >= 0, got {t}"),
            ));
        }
    }
    row
}

/// Why one side of a row does not resolve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SideError {
    /// A `set:` override that does not parse.
    #[error(transparent)]
    Override(#[from] trtmc_core::case::OverrideError),
    /// The case does not resolve with the side's runtime and overrides.
    #[error(transparent)]
    Resolve(#[from] trtmc_core::case::CaseError),
}

/// Resolves one side of a row: `testcase` of `profile` on `runtime` with the side's `set:`
/// overrides.
pub(crate) fn resolve_side(
    profile: &Profile,
    testcase: &str,
    runtime: &str,
    set: &BTreeMap<String, Value>,
) -> Result<ResolvedCase, SideError> {
    let input = ResolveInput {
        case: Some(testcase),
        sets: overrides(set)?,
        runtime: Some(runtime.to_string()),
        ..Default::default()
    };
    Ok(case::resolve(
        profile,
        &input,
        trtmc_runtime::registry::declared_settings(),
    )?)
}

/// Reference precision: the row's `baseline.precision`, the testcase's `reference_precision`, the
/// manifest's `reference_precision`, then the resolved model precision.
pub fn baseline_precision(
    row: &Row,
    profile: &Profile,
    resolved: &ResolvedCase,
) -> (String, String) {
    if let Some(p) = &row.baseline.precision {
        return (p.clone(), "row baseline.precision".into());
    }
    if let Some(p) = profile
        .case(&row.testcase)
        .and_then(|c| c.reference_precision.clone())
    {
        return (p, "testcase reference_precision".into());
    }
    if let Some(p) = &profile.reference_precision {
        return (p.clone(), "manifest reference_precision".into());
    }
    match resolved
        .build
        .get("precision")
        .and_then(|v| v.value.as_str())
    {
        Some(p) => (p.to_string(), "model precision".into()),
        None => ("fp32".into(), "model precision (default fp32)".into()),
    }
}

fn plan_row(
    index: usize,
    row: &Row,
    suite: &Suite,
    catalog: &Catalog,
    env: Option<&Expanded>,
    f: &mut Vec<Finding>,
) -> Option<PlannedRow> {
    let id = row.id();
    let mut bad = |kind, msg: String| f.push(finding(kind, format!("row {id}"), msg));
    let profile = match catalog.require(&row.model) {
        Ok(p) => p,
        Err(e) => {
            bad(Kind::Config, e.to_string());
            return None;
        }
    };
    if !profile.status.is_ready() {
        bad(
            Kind::Config,
            format!(
                "model `{}` cannot run: {}",
                row.model,
                profile.status.label()
            ),
        );
        return None;
    }
    if let Some(why) = trtmc_runner::sources::missing_prerequisite(profile) {
        bad(
            Kind::Machine,
            format!("model `{}` cannot be built here: {why}", row.model),
        );
        return None;
    }
    if profile.case(&row.testcase).is_none() {
        let names: Vec<&str> = profile.cases.iter().map(|c| c.name.as_str()).collect();
        bad(
            Kind::Config,
            format!(
                "testcase `{}` is not a case of `{}` (cases: {})",
                row.testcase,
                row.model,
                names.join(", ")
            ),
        );
        return None;
    }
    let candidate = match resolve_side(
        profile,
        &row.testcase,
        &row.candidate.runtime,
        &row.candidate.set,
    ) {
        Ok(c) => c,
        Err(e) => {
            bad(Kind::Config, format!("candidate: {e}"));
            return None;
        }
    };
    let expected_entry = format!("{}.{}", profile.family, candidate.operation);
    if row.entry != expected_entry {
        bad(
            Kind::Config,
            format!(
                "entry `{}` does not name this row's contract: model `{}` is family `{}`, operation `{}`, so the entry is `{expected_entry}`",
                row.entry, row.model, profile.family, candidate.operation
            ),
        );
    }
    // The row's own `run` keeps the probes in the bundle cache; the plan probes once per process.
    let cand_options = runtime::RuntimeOptions {
        trtexec: row.candidate.trtexec.clone(),
        probe_cache: None,
    };
    let cand_rt = match registry::runtime_with(&row.candidate.runtime, &cand_options) {
        Ok(rt) => rt,
        Err(e) => {
            bad(Kind::Config, format!("candidate: {e}"));
            return None;
        }
    };
    if let Err(e) = cand_rt.availability() {
        bad(
            Kind::Machine,
            format!(
                "candidate runtime `{}` is not available: {e}",
                cand_rt.name()
            ),
        );
    }
    if let Err(e) = cand_rt.supports_operation(&candidate.operation) {
        bad(Kind::Config, format!("candidate: {e}"));
    }
    // Setting values against the runtime's declarations, as `run` checks them before any build.
    if let Err(e) =
        runtime::check_settings(cand_rt.as_ref(), &candidate.runtime_values()).and_then(|()| {
            runtime::check_declared_values(
                cand_rt.name(),
                cand_rt.settings(),
                runtime::SettingSection::Build,
                &candidate.build_values(),
            )
        })
    {
        bad(Kind::Config, format!("candidate: {e}"));
    }
    let backend = row.reference.backend.as_str();
    let (reference_boundary, ref_runtime) = if backend == ORT_PYTHON {
        if !ORT_PYTHON_OPERATIONS.contains(&candidate.operation.as_str()) {
            bad(
                Kind::Config,
                format!(
                    "reference `{ORT_PYTHON}` implements {} only, not `{}`: exclude this profile with a reason or pick another reference",
                    ORT_PYTHON_OPERATIONS.join(", "),
                    candidate.operation
                ),
            );
        }
        (
            PUBLIC_PIPELINE_CALL_WALL.to_string(),
            row.candidate.runtime.clone(),
        )
    } else {
        let name = backend.trim_start_matches(TRTMC_PREFIX);
        let options = runtime::RuntimeOptions {
            trtexec: row.reference.trtexec.clone(),
            probe_cache: None,
        };
        match registry::runtime_with(name, &options) {
            Ok(rt) => {
                if let Err(e) = rt.availability() {
                    bad(
                        Kind::Machine,
                        format!("reference runtime `{name}` is not available: {e}"),
                    );
                }
                (rt.timing_boundary().to_string(), name.to_string())
            }
            Err(e) => {
                bad(Kind::Config, format!("reference: {e}"));
                return None;
            }
        }
    };
    let reference = match resolve_side(profile, &row.testcase, &ref_runtime, &row.reference.set) {
        Ok(r) => r,
        Err(e) => {
            bad(Kind::Config, format!("reference: {e}"));
            return None;
        }
    };
    let candidate_boundary = cand_rt.timing_boundary().to_string();
    if candidate_boundary != reference_boundary {
        bad(
            Kind::Contract,
            format!(
                "timing contract mismatch: candidate `{}` is timed at `{candidate_boundary}`, reference `{backend}` at `{reference_boundary}`; pick a reference timed at the same boundary",
                row.candidate.runtime
            ),
        );
    }
    let (baseline_precision, baseline_precision_source) =
        baseline_precision(row, profile, &candidate);
    let _ = env;
    Some(PlannedRow {
        index,
        id,
        row: row.clone(),
        operation: candidate.operation.clone(),
        warmup: row.warmup(suite).unwrap_or(candidate.measure.warmup.value),
        iterations: row
            .iterations(suite)
            .unwrap_or(candidate.measure.iterations.value),
        rounds: row.rounds(suite),
        max_rounds: row.max_rounds(suite),
        max_seconds: row.max_seconds(suite),
        baseline_precision,
        baseline_precision_source,
        candidate_boundary,
        reference_boundary,
        candidate_identity: candidate.identity.clone(),
        reference_identity: reference.identity.clone(),
    })
}
