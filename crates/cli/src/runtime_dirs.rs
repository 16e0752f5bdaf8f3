//! `--runtime-dir`: checked once, then handed to every process this one starts (workers, trtexec)
//! through `trtmc_core::runtime_dirs::ENV`.

use std::path::PathBuf;

use crate::exit::{CliError, CliResult};

pub fn apply(given: &[PathBuf]) -> CliResult {
    if given.is_empty() {
        return Ok(());
    }
    let dirs = trtmc_core::runtime_dirs::validated(given).map_err(CliError::input)?;
    let value = trtmc_core::runtime_dirs::joined(&dirs).map_err(CliError::input)?;
    // SAFETY: called on the main thread at the start of a command, before this process has started
    // any other thread, so nothing reads the environment concurrently.
    unsafe { std::env::set_var(trtmc_core::runtime_dirs::ENV, value) };
    Ok(())
}
