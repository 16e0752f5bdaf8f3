//! Provenance: which program produced a result (the machine: `trtmc_core::machine`).

use trtmc_core::artifacts::ProgramInfo;

/// This program's name, version, source revision and build profile, as a result records it.
pub fn program() -> ProgramInfo {
    ProgramInfo {
        name: "trtmc-bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        revision: env!("TRTMC_REVISION").into(),
        build_profile: if cfg!(debug_assertions) {
            "debug".into()
        } else {
            "release".into()
        },
    }
}
