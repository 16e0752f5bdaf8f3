//! `trtmc-bench report DIR…`: find every `trtmc.benchmark-run/v1` result.json below the roots and write
//! `report.json` + `report.html` into the output directory, each replaced atomically (temporary file,
//! fsync, rename) on every call.
//!
//! - The walk is recursive, does not follow symbolic links, and skips hidden entries (names starting
//!   with `.`, such as the staging directories of a run in progress).
//! - A result.json that cannot be read, is not JSON, carries another schema or does not match
//!   `trtmc.benchmark-run/v1` is **skipped and reported** with its path and reason (stderr, report.json
//!   `skipped`, a banner in report.html); with `strict` it fails the command instead.
//! - A case whose observations.jsonl is missing or malformed keeps its result.json numbers; only its plots
//!   and trend are omitted, with a note.
//! - Per-run files are only read: never rewritten, never copied. The output directory may not itself be a
//!   run directory (its report.html belongs to the run).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use trtmc_core::artifacts::{BENCHMARK_RUN_SCHEMA, BenchmarkRun, Observation};
use trtmc_core::case::ResolvedCase;

use crate::model::{self, CaseLatencies, CollectionReport, LoadedRun, Skipped};
use crate::pages::{self, Kind};
use crate::validity::Policy;

/// The report's model, written into the output directory.
pub const REPORT_JSON: &str = "report.json";
/// The report's page, written beside it.
pub const REPORT_HTML: &str = "report.html";
/// A run's result file: a directory holding one is a run directory.
pub const RESULT_JSON: &str = "result.json";
/// Directory depth below a root beyond which the walk stops (a guard against pathological trees).
const MAX_DEPTH: usize = 32;
/// Largest result.json read (a real one is a few kilobytes per case).
const MAX_RESULT_BYTES: u64 = 64 << 20;

/// What `report` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directories searched for result.json files.
    pub roots: Vec<PathBuf>,
    /// Where report.json and report.html go; `None` means the single root.
    pub output: Option<PathBuf>,
    /// The validity policy cases are judged by.
    pub policy: Policy,
    /// Fail on a malformed result.json instead of skipping it.
    pub strict: bool,
}

/// Why a collection report cannot be made. An underlying I/O error is the `source()`, not part of the
/// message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Several roots and no output directory.
    #[error(
        "{0} result roots were given: name the collection's directory with -o OUT (report.json and report.html go there)"
    )]
    NeedOutput(usize),
    /// No root given.
    #[error("no result directory given: trtmc-bench report DIR…")]
    NoRoots,
    /// A root cannot be read (it does not exist, or is not accessible).
    #[error("result root {}", root.display())]
    RootUnreadable {
        /// The root.
        root: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A root is a file.
    #[error("result root {}: is not a directory", root.display())]
    RootNotADirectory {
        /// The root.
        root: PathBuf,
    },
    /// No usable result.json below the roots.
    #[error("{}", nothing_found(roots, skipped))]
    NothingFound {
        /// The roots searched.
        roots: Vec<PathBuf>,
        /// The result.json files found but not usable, with the reasons.
        skipped: Vec<Skipped>,
    },
    /// `strict` and some result.json files were skipped.
    #[error(
        "{} result.json file(s) could not be used (--strict): {}",
        .0.len(),
        describe(.0)
    )]
    Malformed(Vec<Skipped>),
    /// The output directory holds a run's result.json.
    #[error(
        "{} is a run directory (it holds result.json, and its report.html belongs to that run): give -o OUT for the collection report",
        .0.display()
    )]
    OutputIsRun(PathBuf),
    /// The output directory is a symbolic link (never written through).
    #[error(
        "{} is a symbolic link; refusing to write the report through it (pass the real directory to -o)",
        .0.display()
    )]
    OutputSymlink(PathBuf),
    /// Another `report` writes this directory now.
    #[error(transparent)]
    Locked(#[from] trtmc_core::dirlock::LockError),
    /// The output directory cannot be created.
    #[error("cannot create {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A report file cannot be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
}

fn nothing_found(roots: &[PathBuf], skipped: &[Skipped]) -> String {
    let list: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    let mut text = format!(
        "no {BENCHMARK_RUN_SCHEMA} result.json found below {}: write results there first, e.g. `trtmc-bench run --model NAME -o {}/NAME`",
        list.join(", "),
        list.first().map(String::as_str).unwrap_or("DIR")
    );
    if !skipped.is_empty() {
        text.push_str(&format!("; skipped: {}", describe(skipped)));
    }
    text
}

fn describe(skipped: &[Skipped]) -> String {
    skipped
        .iter()
        .map(|s| format!("{} ({})", s.path, s.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What `write` produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The report as written to report.json.
    pub report: CollectionReport,
    /// The output directory.
    pub dir: PathBuf,
    /// The report.json written.
    pub json: PathBuf,
    /// The report.html written.
    pub html: PathBuf,
    /// Size of report.html, bytes.
    pub html_bytes: usize,
}

/// Every result.json below `root` (sorted), not following symbolic links, skipping hidden entries.
pub fn discover(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(root, 0, &mut found);
    found.sort();
    found
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            subdirs.push(entry.path());
        } else if kind.is_file() && name == RESULT_JSON {
            found.push(entry.path());
        }
    }
    for d in subdirs {
        walk(&d, depth + 1, found);
    }
}

/// Why one result.json (or a file it names) cannot be used; the collection lists it as skipped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunFileError {
    #[error("cannot read it: {source}")]
    Unreadable { source: std::io::Error },
    #[error("{bytes} bytes is too large for a result.json (limit {limit})")]
    TooLarge { bytes: u64, limit: u64 },
    #[error("not valid JSON: {source}")]
    NotJson { source: serde_json::Error },
    #[error("schema `{found}` is not {}", BENCHMARK_RUN_SCHEMA)]
    Schema { found: String },
    #[error("no `schema` field: not a {} result", BENCHMARK_RUN_SCHEMA)]
    NoSchema,
    #[error("does not match {}: {source}", BENCHMARK_RUN_SCHEMA)]
    Shape { source: serde_json::Error },
    #[error("observations path `{rel}` leaves the run directory; ignored")]
    LeavesRunDirectory { rel: String },
}

/// Reads and checks one result.json: the run, or why it cannot be used.
pub(crate) fn read_run(path: &Path) -> Result<BenchmarkRun, RunFileError> {
    let unreadable = |source| RunFileError::Unreadable { source };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_RESULT_BYTES {
        return Err(RunFileError::TooLarge {
            bytes: meta.len(),
            limit: MAX_RESULT_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| RunFileError::NotJson { source })?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(BENCHMARK_RUN_SCHEMA) => {}
        Some(other) => {
            return Err(RunFileError::Schema {
                found: other.to_string(),
            });
        }
        None => return Err(RunFileError::NoSchema),
    }
    serde_json::from_value(value).map_err(|source| RunFileError::Shape { source })
}

/// A path from result.json that must stay inside the run directory.
fn inside(run_dir: &Path, rel: &str) -> Result<PathBuf, RunFileError> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(RunFileError::LeavesRunDirectory {
            rel: rel.to_string(),
        });
    }
    Ok(run_dir.join(p))
}

/// Reads observations.jsonl; the error names the file and line.
pub fn read_observations(path: &Path) -> Result<Vec<Observation>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let o: Observation = serde_json::from_str(line)
            .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
        out.push(o);
    }
    Ok(out)
}

/// The observations of every case of a run read from `run_dir`.
pub fn load_observations(
    run: &BenchmarkRun,
    run_dir: &Path,
) -> Vec<Result<Vec<Observation>, String>> {
    run.cases
        .iter()
        .map(|c| match &c.files.observations {
            Some(rel) => inside(run_dir, rel)
                .map_err(|e| e.to_string())
                .and_then(|p| read_observations(&p)),
            None => Ok(Vec::new()),
        })
        .collect()
}

/// The build and runtime settings of every case of a run, from its resolved-case.json, under their
/// `--set` keys (`build.precision`, `runtime.threads`); empty for a case whose file cannot be read (the
/// table then tells cases apart by their request values and runs only).
pub fn load_settings(run: &BenchmarkRun, run_dir: &Path) -> Vec<BTreeMap<String, String>> {
    run.cases
        .iter()
        .map(|c| {
            let Ok(path) = inside(run_dir, &c.files.resolved_case) else {
                return BTreeMap::new();
            };
            let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_RESULT_BYTES);
            let Some(resolved) = small
                .then(|| std::fs::read(&path).ok())
                .flatten()
                .and_then(|bytes| serde_json::from_slice::<ResolvedCase>(&bytes).ok())
            else {
                return BTreeMap::new();
            };
            let build = resolved
                .build
                .iter()
                .map(|(k, v)| (format!("build.{k}"), model::setting_text(&v.value)));
            let runtime = resolved
                .runtime_settings
                .iter()
                .map(|(k, v)| (format!("runtime.{k}"), model::setting_text(&v.value)));
            build.chain(runtime).collect()
        })
        .collect()
}

/// `path` relative to `base` (both made absolute), with `/` separators.
pub fn relative(path: &Path, base: &Path) -> String {
    let abs = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        })
    };
    let (p, b) = (abs(path), abs(base));
    let pc: Vec<Component> = p.components().collect();
    let bc: Vec<Component> = b.components().collect();
    let common = pc.iter().zip(&bc).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return p.display().to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    parts.extend(std::iter::repeat_n("..".to_string(), bc.len() - common));
    parts.extend(
        pc[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The one-run summary after `run`: reads the observations back from the committed result directory.
pub fn summarize_run_dir(
    run: &BenchmarkRun,
    dir: &Path,
    policy: &Policy,
) -> (CollectionReport, CaseLatencies) {
    let loaded = LoadedRun {
        path: ".".into(),
        has_report: dir.join(REPORT_HTML).is_file(),
        run: run.clone(),
        observations: load_observations(run, dir),
        settings: load_settings(run, dir),
    };
    model::build(
        vec![dir.display().to_string()],
        vec![loaded],
        Vec::new(),
        policy,
    )
}

/// The output directory of `opts`.
pub fn output_dir(opts: &Options) -> Result<PathBuf, Error> {
    match (&opts.output, opts.roots.as_slice()) {
        (Some(o), _) => Ok(o.clone()),
        (None, []) => Err(Error::NoRoots),
        (None, [one]) => Ok(one.clone()),
        (None, many) => Err(Error::NeedOutput(many.len())),
    }
}

/// Discovers and summarizes without writing anything.
pub fn collect(opts: &Options) -> Result<(CollectionReport, CaseLatencies), Error> {
    let out = output_dir(opts)?;
    let mut loaded = Vec::new();
    let mut skipped = Vec::new();
    for root in &opts.roots {
        match std::fs::metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::RootNotADirectory { root: root.clone() }),
            Err(source) => {
                return Err(Error::RootUnreadable {
                    root: root.clone(),
                    source,
                });
            }
        }
        for path in discover(root) {
            let run_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            match read_run(&path) {
                Ok(run) => {
                    let observations = load_observations(&run, &run_dir);
                    let settings = load_settings(&run, &run_dir);
                    loaded.push(LoadedRun {
                        path: relative(&run_dir, &out),
                        has_report: run_dir.join(REPORT_HTML).is_file(),
                        run,
                        observations,
                        settings,
                    });
                }
                Err(e) => skipped.push(Skipped {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                }),
            }
        }
    }
    if loaded.is_empty() {
        return Err(Error::NothingFound {
            roots: opts.roots.clone(),
            skipped,
        });
    }
    if opts.strict && !skipped.is_empty() {
        return Err(Error::Malformed(skipped));
    }
    let roots = opts.roots.iter().map(|r| r.display().to_string()).collect();
    Ok(model::build(roots, loaded, skipped, &opts.policy))
}

/// Builds the collection and writes report.html and report.json, each atomically.
pub fn write(opts: &Options) -> Result<Outcome, Error> {
    let dir = output_dir(opts)?;
    if dir.join(RESULT_JSON).exists() {
        return Err(Error::OutputIsRun(dir));
    }
    if dir.is_symlink() {
        return Err(Error::OutputSymlink(dir));
    }
    let (report, latencies) = collect(opts)?;
    std::fs::create_dir_all(&dir).map_err(|source| Error::CreateDir {
        path: dir.clone(),
        source,
    })?;
    // One writer per report folder; each file below is replaced atomically.
    let _lock = trtmc_core::dirlock::DirLock::acquire(
        &trtmc_core::dirlock::sibling_lock_path(&dir.join(REPORT_HTML)),
        &format!("the report folder {}", dir.display()),
    )?;
    let html = pages::render(Kind::Collection, &report, &latencies);
    let html_path = dir.join(REPORT_HTML);
    trtmc_core::fsutil::write_atomic(&html_path, html.as_bytes()).map_err(|source| {
        Error::Write {
            path: html_path.clone(),
            source,
        }
    })?;
    let json_path = dir.join(REPORT_JSON);
    trtmc_core::fsutil::write_json_atomic(&json_path, &report).map_err(|source| Error::Write {
        path: json_path.clone(),
        source,
    })?;
    Ok(Outcome {
        report,
        dir,
        json: json_path,
        html: html_path,
        html_bytes: html.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{case, observations, run};

    fn write_run(dir: &Path, model: &str, n: usize) {
        std::fs::create_dir_all(dir.join("001-case")).expect("mkdir");
        let o = observations(n, 2.0);
        let mut c = case(model, "default", &[], &o);
        c.dir = "001-case".into();
        c.files.observations = Some("001-case/observations.jsonl".into());
        let lines: Vec<String> = o
            .iter()
            .map(|x| serde_json::to_string(x).expect("json"))
            .collect();
        std::fs::write(dir.join("001-case/observations.jsonl"), lines.join("\n")).expect("write");
        let r = run(vec![c], "host");
        std::fs::write(
            dir.join("result.json"),
            serde_json::to_vec_pretty(&r).expect("json"),
        )
        .expect("write");
    }

    #[test]
    fn discovery_skips_hidden_directories_and_symlinks() {
        let tmp = tempfile::tempdir().expect("tmp");
        write_run(&tmp.path().join("a"), "a", 20);
        write_run(&tmp.path().join("deep/er/b"), "b", 20);
        write_run(&tmp.path().join(".staging-x"), "hidden", 20);
        #[cfg(unix)]
        std::os::unix::fs::symlink(tmp.path().join("a"), tmp.path().join("link")).expect("symlink");
        let found = discover(tmp.path());
        let rel: Vec<String> = found.iter().map(|p| relative(p, tmp.path())).collect();
        assert_eq!(rel, vec!["a/result.json", "deep/er/b/result.json"]);
    }

    #[test]
    fn malformed_results_are_skipped_with_their_path_or_fail_when_strict() {
        let tmp = tempfile::tempdir().expect("tmp");
        write_run(&tmp.path().join("good"), "good", 20);
        std::fs::create_dir_all(tmp.path().join("bad")).expect("mkdir");
        std::fs::write(tmp.path().join("bad/result.json"), "{ not json").expect("write");
        std::fs::create_dir_all(tmp.path().join("other")).expect("mkdir");
        std::fs::write(
            tmp.path().join("other/result.json"),
            r#"{"schema":"trtmc.matrix/v1"}"#,
        )
        .expect("write");
        let mut opts = Options {
            roots: vec![tmp.path().to_path_buf()],
            output: None,
            policy: Policy::default(),
            strict: false,
        };
        let out = write(&opts).expect("report");
        assert_eq!(out.report.cases.len(), 1);
        assert_eq!(out.report.skipped.len(), 2);
        assert!(
            out.report
                .skipped
                .iter()
                .any(|s| s.path.ends_with("bad/result.json")
                    && s.reason.starts_with("not valid JSON"))
        );
        assert!(
            out.report
                .skipped
                .iter()
                .any(|s| s.reason.contains("trtmc.matrix/v1"))
        );
        let html = std::fs::read_to_string(tmp.path().join(REPORT_HTML)).expect("html");
        assert!(html.contains("bad/result.json"), "the skip is shown");
        opts.strict = true;
        match write(&opts) {
            Err(Error::Malformed(s)) => assert_eq!(s.len(), 2),
            other => panic!("strict must fail: {other:?}"),
        }
    }

    #[test]
    fn empty_trees_and_run_directories_are_refused_with_a_way_forward() {
        let tmp = tempfile::tempdir().expect("tmp");
        let opts = Options {
            roots: vec![tmp.path().to_path_buf()],
            output: None,
            policy: Policy::default(),
            strict: false,
        };
        let err = write(&opts).expect_err("empty");
        assert!(matches!(err, Error::NothingFound { .. }));
        assert!(err.to_string().contains("trtmc-bench run --model"), "{err}");
        write_run(&tmp.path().join("r"), "m", 20);
        let opts = Options {
            roots: vec![tmp.path().join("r")],
            ..opts
        };
        let err = write(&opts).expect_err("run dir");
        assert!(matches!(err, Error::OutputIsRun(_)), "{err}");
        assert!(!tmp.path().join("r/report.json").exists());
        let two = Options {
            roots: vec![tmp.path().join("r"), tmp.path().join("r")],
            ..opts
        };
        assert!(matches!(
            write(&two).expect_err("two roots"),
            Error::NeedOutput(2)
        ));
    }

    #[test]
    fn observation_paths_may_not_leave_the_run_directory() {
        let d = Path::new("/runs/x");
        assert!(inside(d, "001/observations.jsonl").is_ok());
        assert!(inside(d, "../secret").is_err());
        assert!(inside(d, "/etc/passwd").is_err());
    }

    #[test]
    fn relative_paths_walk_up_when_needed() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(tmp.path().join("a/b")).expect("mkdir");
        std::fs::create_dir_all(tmp.path().join("c")).expect("mkdir");
        assert_eq!(
            relative(&tmp.path().join("a/b"), &tmp.path().join("c")),
            "../a/b"
        );
        assert_eq!(relative(&tmp.path().join("a/b"), tmp.path()), "a/b");
        assert_eq!(relative(tmp.path(), tmp.path()), ".");
    }
}
