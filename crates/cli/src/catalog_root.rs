//! Where the model catalog and the reference runners are: `--manifest-root`, `$TRTMC_MANIFEST_ROOT`,
//! else the copy embedded in this binary (`trtmc-share`), unpacked once into the user cache. No path of
//! the source checkout is compiled in, so a binary copied anywhere finds the same catalog.

use std::path::{Path, PathBuf};

use crate::exit::{CliError, ExitCode};

pub fn resolve(explicit: Option<PathBuf>) -> Result<PathBuf, CliError> {
    if let Some(p) = explicit.or_else(|| std::env::var_os("TRTMC_MANIFEST_ROOT").map(PathBuf::from))
    {
        return Ok(normalised(&p));
    }
    trtmc_share::catalog().map_err(unpack_error)
}

/// The unpacked share (catalog, reference runners, schemas, suites).
pub fn share_root() -> Result<&'static Path, CliError> {
    trtmc_share::root().map_err(unpack_error)
}

/// The reference runners' folder (`ort_reference.py`, …).
pub fn reference_dir() -> Result<PathBuf, CliError> {
    trtmc_share::reference_dir().map_err(unpack_error)
}

/// A shipped suite or environment (`what`) by short name (`release`, `cpu`) when `path` is not a
/// file; a bare word that is neither is an input error listing the shipped names.
pub fn shipped(what: &str, path: &Path, table: &[(&str, &str)]) -> Result<PathBuf, CliError> {
    if path.exists() {
        return Ok(path.to_path_buf());
    }
    let Some(name) = path.to_str() else {
        return Ok(path.to_path_buf());
    };
    if let Some((_, relative)) = table.iter().find(|(short, _)| *short == name) {
        return Ok(share_root()?.join(relative));
    }
    if path.components().count() == 1 && path.extension().is_none() {
        let names: Vec<&str> = table.iter().map(|(short, _)| *short).collect();
        return Err(CliError::input(format!(
            "no {what} file `{name}` and no shipped {what} of that name: give a YAML file or one of {}",
            names.join(", ")
        )));
    }
    Ok(path.to_path_buf())
}

fn unpack_error(e: &trtmc_share::UnpackError) -> CliError {
    CliError::new(
        ExitCode::Environment,
        trtmc_core::error_text::with_causes(e),
    )
}

/// An absolute path without `.`/`..` detours when it exists; as given otherwise (the error that
/// follows names what the user typed).
fn normalised(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
