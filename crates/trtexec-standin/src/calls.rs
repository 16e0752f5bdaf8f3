//! What the simulator records about its invocations for tests: the argv (`TRTMC_STANDIN_ARGV`,
//! overwritten) and one JSON line per call (`TRTMC_SIM_CALLS`, appended).

use std::io::Write;
use std::path::Path;

use crate::error::SimError;

/// What an invocation asks for, from its argv alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Help,
    HelpBuildRoute,
    Build,
    Infer,
    /// Neither a model nor an engine: trtexec fails with "Model missing".
    Usage,
}

impl Mode {
    pub fn of(args: &[String]) -> Self {
        if args.iter().any(|a| a == "--help" || a == "-h") {
            Mode::Help
        } else if args
            .iter()
            .any(|a| a == "--helpBuildRoute" || a.starts_with("--helpBuildRoute="))
        {
            Mode::HelpBuildRoute
        } else if args.iter().any(|a| a.starts_with("--loadEngine=")) {
            Mode::Infer
        } else if args.iter().any(|a| a.starts_with("--onnx=")) {
            Mode::Build
        } else {
            Mode::Usage
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Help => "help",
            Mode::HelpBuildRoute => "help_build_route",
            Mode::Build => "build",
            Mode::Infer => "infer",
            Mode::Usage => "usage",
        }
    }
}

/// Writes `TRTMC_STANDIN_ARGV` (if set) and appends to `TRTMC_SIM_CALLS` (if set).
pub fn record(mode: Mode, args: &[String]) -> Result<(), SimError> {
    if let Some(path) = std::env::var_os("TRTMC_STANDIN_ARGV") {
        write_argv(Path::new(&path), args)?;
    }
    if let Some(path) = std::env::var_os("TRTMC_SIM_CALLS") {
        let mut call = serde_json::json!({"mode": mode.name(), "argv": args});
        if mode == Mode::Build
            && let Some(route) = args
                .iter()
                .rev()
                .find_map(|a| a.strip_prefix("--setBuildRoute="))
        {
            call["route"] = serde_json::Value::String(route.to_string());
        }
        let line = format!("{call}\n");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| SimError::File {
                action: "open TRTMC_SIM_CALLS".into(),
                path: path.clone().into(),
                source,
            })?;
        // One write per line, so concurrent simulators append whole lines.
        file.write_all(line.as_bytes())
            .map_err(|source| SimError::File {
                action: "append to TRTMC_SIM_CALLS".into(),
                path: path.into(),
                source,
            })?;
    }
    Ok(())
}

/// Writes `args` as JSON to `path` (`TRTMC_STANDIN_ARGV`), for a test to read what it was called with.
pub fn write_argv(path: &Path, args: &[String]) -> Result<(), SimError> {
    let json = serde_json::to_string(args).map_err(|source| SimError::Json { source })?;
    std::fs::write(path, json).map_err(|source| SimError::File {
        action: "write argv to".into(),
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn modes_come_from_argv() {
        assert_eq!(Mode::of(&args(&["--onnx=m", "--help"])), Mode::Help);
        assert_eq!(Mode::of(&args(&["-h"])), Mode::Help);
        assert_eq!(
            Mode::of(&args(&["--helpBuildRoute=x"])),
            Mode::HelpBuildRoute
        );
        assert_eq!(
            Mode::of(&args(&["--onnx=m", "--loadEngine=e"])),
            Mode::Infer
        );
        assert_eq!(
            Mode::of(&args(&["--onnx=m", "--saveEngine=e"])),
            Mode::Build
        );
        assert_eq!(Mode::of(&args(&[])), Mode::Usage);
        assert_eq!(Mode::Build.name(), "build");
    }
}
