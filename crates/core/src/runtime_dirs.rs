//! `--runtime-dir`: folders searched for runtime libraries and tools (`libonnxruntime`, `trtexec`,
//! TensorRT's shared libraries) before the default places. The command line checks them once and
//! hands them to every process it starts through one environment variable, so a worker finds exactly
//! what its parent found, and the result records them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable carrying the folders (a `PATH`-style list) from `trtmc-bench` to its workers.
pub const ENV: &str = "TRTMC_RUNTIME_DIRS";

/// The folders in effect for this process, in search order.
pub fn current() -> Vec<PathBuf> {
    std::env::var_os(ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the folders given on the command line (each must be an existing folder) and returns them
/// absolute, followed by any already in effect (a worker's parent's), as one `ENV` value.
pub fn validated(given: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut dirs = Vec::new();
    for dir in given {
        if !dir.is_dir() {
            return Err(format!(
                "--runtime-dir {} is not a folder: give an existing folder holding runtime libraries or tools (libonnxruntime, trtexec), or drop the option",
                dir.display()
            ));
        }
        dirs.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()));
    }
    for inherited in current() {
        if !dirs.contains(&inherited) {
            dirs.push(inherited);
        }
    }
    Ok(dirs)
}

/// The `ENV` value for `dirs`.
pub fn joined(dirs: &[PathBuf]) -> Result<OsString, JoinError> {
    std::env::join_paths(dirs).map_err(|source| JoinError { source })
}

/// A `--runtime-dir` that cannot be put in a search path (it holds the separator, `:`).
#[derive(Debug, thiserror::Error)]
#[error("a --runtime-dir cannot be passed on: {source}")]
pub struct JoinError {
    source: std::env::JoinPathsError,
}

/// The dynamic loader's search path for a tool started with the runtime folders: the folders, then
/// the inherited `LD_LIBRARY_PATH` (`None` when there is nothing to add).
pub fn library_path(dirs: &[PathBuf]) -> Option<OsString> {
    if dirs.is_empty() {
        return None;
    }
    let inherited = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    let all: Vec<PathBuf> = dirs
        .iter()
        .cloned()
        .chain(std::env::split_paths(&inherited).filter(|p| !p.as_os_str().is_empty()))
        .collect();
    std::env::join_paths(all).ok()
}

/// The first file in `dirs` whose name `matches`, preferring the longest name (a versioned
/// `libonnxruntime.so.1.31.1` before its bare `libonnxruntime.so` link).
pub fn find_file(dirs: &[PathBuf], matches: impl Fn(&str) -> bool) -> Option<PathBuf> {
    dirs.iter().find_map(|dir| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && file_name(p).is_some_and(&matches))
            .collect();
        found.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
        found.into_iter().next()
    })
}

fn file_name(p: &Path) -> Option<&str> {
    p.file_name().and_then(|n| n.to_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_refused_by_name() {
        let err = validated(&[PathBuf::from("/no/such/runtime/dir")]).expect_err("missing");
        assert!(err.contains("/no/such/runtime/dir"), "{err}");
        assert!(err.contains("--runtime-dir"), "{err}");
    }

    #[test]
    fn finds_the_versioned_library_first_in_folder_order() {
        let a = tempfile::tempdir().expect("tmp");
        let b = tempfile::tempdir().expect("tmp");
        std::fs::write(b.path().join("libonnxruntime.so"), "").expect("write");
        std::fs::write(b.path().join("libonnxruntime.so.1.31.1"), "").expect("write");
        std::fs::write(a.path().join("other.so"), "").expect("write");
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let found = find_file(&dirs, |n| n.starts_with("libonnxruntime.so")).expect("found");
        assert_eq!(found, b.path().join("libonnxruntime.so.1.31.1"));
        assert_eq!(find_file(&dirs, |n| n == "trtexec"), None);
    }

    #[test]
    fn library_path_puts_the_folders_first() {
        let dirs = vec![PathBuf::from("/opt/trt/lib")];
        let value = library_path(&dirs).expect("some");
        let first = std::env::split_paths(&value).next().expect("first");
        assert_eq!(first, PathBuf::from("/opt/trt/lib"));
        assert_eq!(library_path(&[]), None);
    }
}
