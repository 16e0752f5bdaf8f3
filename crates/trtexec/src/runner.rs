//! Finding trtexec, reading its version, and running it with a timeout.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::args::{BuildRequest, ProfileRequest, TimeRequest, help_build_route_args};
use crate::error::{Result, TrtexecError};
use crate::knobs::{KnobDatabase, parse_knob_database};
use crate::log::{ParsedLog, RunStatus, parse_log, parse_status_line};
use crate::summary::PerformanceSummary;
use crate::version::TrtexecVersion;

/// Folders where TensorRT packages put trtexec without adding it to `PATH`.
pub const WELL_KNOWN_DIRS: &[&str] = &["/usr/src/tensorrt/bin"];

/// How long the version probe (`trtexec --help`) may take.
pub const VERSION_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many `[E]` lines a failure message quotes.
const ERROR_LINES: usize = 5;

/// A located trtexec and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trtexec {
    path: PathBuf,
    version: TrtexecVersion,
    /// The folder trtexec runs in ([`Trtexec::in_dir`]); relative paths of a request are relative
    /// to it. `None`: this process's current directory.
    #[serde(skip, default)]
    work_dir: Option<PathBuf>,
}

/// One finished trtexec run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// Where stdout and stderr were captured (interleaved as written).
    pub log_path: PathBuf,
    /// The exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
    /// The parsed log.
    pub log: ParsedLog,
}

impl RunOutput {
    /// The (last) performance summary, or an error saying it is missing.
    pub fn require_summary(&self) -> Result<&PerformanceSummary> {
        self.log.summary().ok_or_else(|| {
            let mut detail = String::from("the log has no readable performance summary");
            if self.log.e2e_timing_not_reported {
                detail.push_str(
                    " (trtexec left it out because the profiler was attached to the timed run; \
                     profile in a separate run)",
                );
            }
            for problem in &self.log.problems {
                detail.push_str("; ");
                detail.push_str(problem);
            }
            TrtexecError::Unparsable {
                what: format!("the trtexec log {}", self.log_path.display()),
                detail,
            }
        })
    }
}

impl Trtexec {
    /// Finds trtexec (`explicit`, else `PATH`, else [`WELL_KNOWN_DIRS`]) and reads its version by
    /// running `trtexec --help`, which prints the `&&&& RUNNING ... [TensorRT vNNNN]` banner.
    pub fn locate(explicit: Option<&Path>) -> Result<Self> {
        let path = find_executable(explicit)?;
        let version = detect_version(&path, VERSION_PROBE_TIMEOUT)?;
        Ok(Self {
            path,
            version,
            work_dir: None,
        })
    }

    /// A trtexec whose version is already known (no probe is run).
    pub fn with_version(path: impl Into<PathBuf>, version: TrtexecVersion) -> Self {
        Self {
            path: path.into(),
            version,
            work_dir: None,
        }
    }

    /// The same trtexec, run inside `dir`: a request may then name its files relative to `dir`
    /// (`--saveEngine=model.plan`, `--exportTimes=times.json`), so its argv does not depend on
    /// where a result or bundle folder is staged before it is moved into place.
    pub fn in_dir(&self, dir: impl Into<PathBuf>) -> Self {
        Self {
            work_dir: Some(dir.into()),
            ..self.clone()
        }
    }

    /// `path` as trtexec sees it: relative paths are relative to its working folder.
    fn resolve(&self, path: &Path) -> PathBuf {
        match &self.work_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The TensorRT version it reported.
    pub fn version(&self) -> &TrtexecVersion {
        &self.version
    }

    /// Runs trtexec with `args`, capturing stdout and stderr into `log_path`; fails when it does
    /// not start, times out, exits nonzero, prints `&&&& FAILED`, or prints no trtexec banner or
    /// final status.
    pub fn run(&self, args: &[String], log_path: &Path, timeout: Duration) -> Result<RunOutput> {
        let output = run_process_in(
            &self.path,
            args,
            log_path,
            timeout,
            self.work_dir.as_deref(),
        )?;
        check_outcome(output)
    }

    /// Builds an engine; checks that the engine (and the layer information, if asked) exist.
    pub fn build(
        &self,
        request: &BuildRequest,
        log_path: &Path,
        timeout: Duration,
    ) -> Result<RunOutput> {
        let args = request.args(&self.version)?;
        let output = self.run(&args, log_path, timeout)?;
        require_file("the engine", &self.resolve(&request.engine), log_path)?;
        if let Some(layer_info) = &request.layer_info {
            require_file(
                "the --exportLayerInfo file",
                &self.resolve(layer_info),
                log_path,
            )?;
        }
        Ok(output)
    }

    /// Times an engine; checks that the summary was printed and the exports written.
    pub fn time(
        &self,
        request: &TimeRequest,
        log_path: &Path,
        timeout: Duration,
    ) -> Result<RunOutput> {
        let args = request.args(&self.version)?;
        let output = self.run(&args, log_path, timeout)?;
        output.require_summary()?;
        if let Some(times) = &request.export_times {
            require_file("the --exportTimes file", &self.resolve(times), log_path)?;
        }
        Ok(output)
    }

    /// Profiles an engine per layer; checks that the exports were written.
    pub fn profile(
        &self,
        request: &ProfileRequest,
        log_path: &Path,
        timeout: Duration,
    ) -> Result<RunOutput> {
        let args = request.args(&self.version)?;
        let output = self.run(&args, log_path, timeout)?;
        require_file(
            "the --exportProfile file",
            &self.resolve(&request.export_profile),
            log_path,
        )?;
        if let Some(layer_info) = &request.export_layer_info {
            require_file(
                "the --exportLayerInfo file",
                &self.resolve(layer_info),
                log_path,
            )?;
        }
        if let Some(times) = &request.export_times {
            require_file("the --exportTimes file", &self.resolve(times), log_path)?;
        }
        Ok(output)
    }

    /// Reads the build-route knob database (`trtexec --helpBuildRoute`, 11.1+). trtexec prints
    /// it and exits 0 without a `&&&& PASSED` line. The database is what matters: how the run
    /// ended is reported only when the log holds no database to read.
    pub fn knob_database(&self, log_path: &Path, timeout: Duration) -> Result<KnobDatabase> {
        let args = help_build_route_args(&self.version)?;
        let ran = run_process_in(
            &self.path,
            &args,
            log_path,
            timeout,
            self.work_dir.as_deref(),
        );
        let parsed = read_log(log_path).and_then(|text| parse_knob_database(&text));
        match (parsed, ran) {
            (Ok(database), _) => Ok(database),
            (Err(_), Err(run)) => Err(run),
            (Err(_), Ok(output)) if output.exit_code != Some(0) => {
                Err(failure(&output, describe_exit(output.exit_code)))
            }
            (Err(parse), Ok(_)) => Err(parse),
        }
    }
}

/// Finds trtexec without running it. `explicit` may be a path or a bare program name (looked up
/// on `PATH`).
pub fn find_executable(explicit: Option<&Path>) -> Result<PathBuf> {
    // `--runtime-dir` folders come before PATH.
    let mut dirs = trtmc_core::runtime_dirs::current();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let path_var = std::env::join_paths(&dirs).ok();
    let fallback: Vec<&Path> = WELL_KNOWN_DIRS.iter().map(Path::new).collect();
    find_executable_in(explicit, path_var.as_deref(), &fallback)
}

/// A trtexec command with the `--runtime-dir` folders first on the loader's path (TensorRT's
/// libraries may live beside trtexec in one of them).
fn command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    if let Some(library_path) =
        trtmc_core::runtime_dirs::library_path(&trtmc_core::runtime_dirs::current())
    {
        cmd.env("LD_LIBRARY_PATH", library_path);
    }
    cmd
}

/// `LD_LIBRARY_PATH` as [`command`] hands it to trtexec: the `--runtime-dir` folders, then ours.
pub(crate) fn effective_library_path() -> Option<std::ffi::OsString> {
    trtmc_core::runtime_dirs::library_path(&trtmc_core::runtime_dirs::current())
        .or_else(|| std::env::var_os("LD_LIBRARY_PATH"))
        .filter(|p| !p.is_empty())
}

/// [`find_executable`] with the search path and fallback folders given (for tests).
pub fn find_executable_in(
    explicit: Option<&Path>,
    path_var: Option<&OsStr>,
    fallback_dirs: &[&Path],
) -> Result<PathBuf> {
    let dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    if let Some(explicit) = explicit {
        if explicit.exists() {
            check_executable(explicit)?;
            return Ok(explicit.to_path_buf());
        }
        let bare_name = explicit.components().count() == 1 && !explicit.is_absolute();
        if bare_name && let Some(found) = search(explicit.as_os_str(), &dirs, &[])? {
            return Ok(found);
        }
        return Err(TrtexecError::NotFound {
            searched: if bare_name {
                format!(
                    "--trtexec {} is neither a file nor a program on PATH",
                    explicit.display()
                )
            } else {
                format!("--trtexec {} does not exist", explicit.display())
            },
        });
    }
    if let Some(found) = search(OsStr::new("trtexec"), &dirs, fallback_dirs)? {
        return Ok(found);
    }
    let fallback: Vec<String> = fallback_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    Err(TrtexecError::NotFound {
        searched: format!(
            "not on PATH ({} folders) nor in {}",
            dirs.len(),
            if fallback.is_empty() {
                "any install folder".to_string()
            } else {
                fallback.join(", ")
            }
        ),
    })
}

/// The first executable `name` in `dirs` then `fallback_dirs`. A match that cannot be run is an
/// error only if nothing runnable comes later.
fn search(name: &OsStr, dirs: &[PathBuf], fallback_dirs: &[&Path]) -> Result<Option<PathBuf>> {
    let mut first_problem = None;
    let candidates = dirs
        .iter()
        .map(PathBuf::as_path)
        .chain(fallback_dirs.iter().copied())
        .map(|dir| dir.join(name));
    for candidate in candidates {
        if !candidate.is_file() {
            continue;
        }
        match check_executable(&candidate) {
            Ok(()) => return Ok(Some(candidate)),
            Err(problem) => {
                first_problem.get_or_insert(problem);
            }
        }
    }
    match first_problem {
        Some(problem) => Err(problem),
        None => Ok(None),
    }
}

fn check_executable(path: &Path) -> Result<()> {
    let metadata = std::fs::metadata(path).map_err(|source| TrtexecError::Io {
        action: "inspect",
        path: path.to_path_buf(),
        source,
    })?;
    if metadata.is_dir() {
        return Err(TrtexecError::NotExecutable {
            path: path.to_path_buf(),
            reason: "it is a directory".into(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o111 == 0 {
            return Err(TrtexecError::NotExecutable {
                path: path.to_path_buf(),
                reason: "it has no execute permission (chmod +x it)".into(),
            });
        }
    }
    Ok(())
}

/// Runs `trtexec --help` and reads the version from its `&&&& RUNNING` banner.
pub fn detect_version(path: &Path, timeout: Duration) -> Result<TrtexecVersion> {
    let (status, stdout, stderr) = capture(path, &["--help".to_string()], timeout)?;
    let banner = stdout.lines().filter_map(parse_status_line).next();
    match banner {
        Some(banner) => match banner.version {
            Some(version) => Ok(version),
            None => Err(TrtexecError::VersionUnknown {
                path: path.to_path_buf(),
                detail: match banner.encoded_version {
                    Some(n) => format!("the banner's version number {n} is not one TensorRT uses"),
                    None => "its banner has no version (TensorRT 7.x or older)".into(),
                },
            }),
        },
        None => {
            let tail: Vec<&str> = stderr
                .lines()
                .chain(stdout.lines())
                .filter(|l| !l.trim().is_empty())
                .take(3)
                .collect();
            let mut detail = format!(
                "`{} --help` printed no '&&&& RUNNING TensorRT.trtexec' banner ({})",
                path.display(),
                describe_exit(status.code())
            );
            if !tail.is_empty() {
                detail.push_str(": ");
                detail.push_str(&tail.join(" | "));
            }
            if stderr.contains("error while loading shared libraries") {
                detail.push_str(". Add TensorRT's lib folder (with libnvinfer) to LD_LIBRARY_PATH");
            }
            Err(TrtexecError::VersionUnknown {
                path: path.to_path_buf(),
                detail,
            })
        }
    }
}

/// Runs `program` with `args`, stdout and stderr both appended to `log_path` (created or
/// truncated), killing it after `timeout`. Only spawning, waiting and the timeout are checked
/// here; [`Trtexec::run`] also judges the outcome.
pub fn run_process(
    program: &Path,
    args: &[String],
    log_path: &Path,
    timeout: Duration,
) -> Result<RunOutput> {
    run_process_in(program, args, log_path, timeout, None)
}

/// [`run_process`] with the child's working folder `work_dir` (`None`: ours).
pub fn run_process_in(
    program: &Path,
    args: &[String],
    log_path: &Path,
    timeout: Duration,
    work_dir: Option<&Path>,
) -> Result<RunOutput> {
    let log_file = File::create(log_path).map_err(|source| TrtexecError::Io {
        action: "create the log",
        path: log_path.to_path_buf(),
        source,
    })?;
    let err_file = log_file.try_clone().map_err(|source| TrtexecError::Io {
        action: "share the log",
        path: log_path.to_path_buf(),
        source,
    })?;
    let started = Instant::now();
    let mut cmd = command(program);
    if let Some(dir) = work_dir {
        cmd.current_dir(dir);
    }
    let mut child = spawn(
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file))
            .stderr(Stdio::from(err_file)),
        program,
    )?;
    let status = match wait_with_timeout(&mut child, timeout, program)? {
        Some(status) => status,
        None => {
            return Err(TrtexecError::TimedOut {
                after: timeout,
                log: log_path.to_path_buf(),
            });
        }
    };
    let elapsed = started.elapsed();
    let text = read_log(log_path)?;
    Ok(RunOutput {
        log_path: log_path.to_path_buf(),
        exit_code: status.code(),
        elapsed,
        log: parse_log(&text),
    })
}

fn check_outcome(output: RunOutput) -> Result<RunOutput> {
    let exit_ok = output.exit_code == Some(0);
    match (exit_ok, output.log.outcome()) {
        (true, Some(RunStatus::Passed | RunStatus::Waived)) => {}
        (true, Some(RunStatus::Failed)) => {
            return Err(failure(&output, "'&&&& FAILED' with exit status 0".into()));
        }
        (true, Some(RunStatus::Running) | None) => {
            let detail = if output.log.banner().is_none() {
                "no '&&&& RUNNING TensorRT.trtexec' banner: this does not look like trtexec output"
            } else {
                "no final '&&&& PASSED' or '&&&& FAILED' line: the output looks truncated"
            };
            return Err(TrtexecError::Unparsable {
                what: format!("the trtexec log {}", output.log_path.display()),
                detail: detail.into(),
            });
        }
        (false, _) => return Err(failure(&output, describe_exit(output.exit_code))),
    }
    Ok(output)
}

fn failure(output: &RunOutput, status: String) -> TrtexecError {
    let errors = output.log.last_errors(ERROR_LINES);
    let tail = if errors.is_empty() {
        last_lines(&output.log_path, ERROR_LINES)
    } else {
        Vec::new()
    };
    TrtexecError::Failed {
        status,
        errors,
        tail,
        log: output.log_path.clone(),
    }
}

/// The last `count` non-empty lines of a log (none when it cannot be read).
fn last_lines(path: &Path, count: usize) -> Vec<String> {
    let text = read_log(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exit status {code}"),
        None => crate::error::KILLED_BY_SIGNAL.into(),
    }
}

fn require_file(what: &'static str, path: &Path, log: &Path) -> Result<()> {
    if path.is_file() {
        return Ok(());
    }
    Err(TrtexecError::MissingOutput {
        what,
        path: path.to_path_buf(),
        log: log.to_path_buf(),
    })
}

fn read_log(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| TrtexecError::Io {
        action: "read the log",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn spawn(command: &mut Command, program: &Path) -> Result<Child> {
    command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => TrtexecError::NotFound {
            searched: format!("{} does not exist", program.display()),
        },
        std::io::ErrorKind::PermissionDenied => TrtexecError::NotExecutable {
            path: program.to_path_buf(),
            reason: format!("the system refused to run it ({source})"),
        },
        _ => TrtexecError::Spawn {
            path: program.to_path_buf(),
            source,
        },
    })
}

/// Waits for `child`; on timeout kills it, reaps it and returns `None`.
fn wait_with_timeout(
    child: &mut Child,
    timeout: Duration,
    program: &Path,
) -> Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let wait_error = |source| TrtexecError::Io {
        action: "wait for",
        path: program.to_path_buf(),
        source,
    };
    loop {
        if let Some(status) = child.try_wait().map_err(wait_error)? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            // It may have exited just now; kill errors are then harmless.
            let _ = child.kill();
            child.wait().map_err(wait_error)?;
            return Ok(None);
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
}

/// Runs `program` and returns (status, stdout, stderr), each stream read on its own thread so
/// that a long help text cannot fill a pipe and stall the child.
fn capture(
    program: &Path,
    args: &[String],
    timeout: Duration,
) -> Result<(ExitStatus, String, String)> {
    let mut child = spawn(
        command(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        program,
    )?;
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let status = wait_with_timeout(&mut child, timeout, program)?;
    let collect = |handle: Option<std::thread::JoinHandle<String>>| {
        handle
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    };
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    match status {
        Some(status) => Ok((status, stdout, stderr)),
        None => Err(TrtexecError::VersionUnknown {
            path: program.to_path_buf(),
            detail: format!(
                "`{} --help` did not finish within {timeout:?}",
                program.display()
            ),
        }),
    }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error leaves what was read so far; the caller judges the content.
        let _ = stream.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
