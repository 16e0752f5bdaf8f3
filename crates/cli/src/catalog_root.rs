//! Where the model catalog is: `--manifest-root`, `$TRTMC_MANIFEST_ROOT`, the installed share directory,
//! or the source checkout this binary was built from.

use std::path::PathBuf;

pub fn resolve(explicit: Option<PathBuf>) -> PathBuf {
    if let Some(p) = explicit {
        return p;
    }
    if let Some(p) = std::env::var_os("TRTMC_MANIFEST_ROOT") {
        return PathBuf::from(p);
    }
    if let Some(installed) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|bin| bin.join("../share/trtmc/catalog")))
        .filter(|p| p.is_dir())
    {
        return installed;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../catalog"))
}
