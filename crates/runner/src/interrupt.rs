//! Ctrl-C and SIGTERM while cases are measured: the first one asks the running worker to stop after its
//! current call (its timed calls are kept and the result directory is committed, marked interrupted);
//! a second Ctrl-C exits at once with 130. Before measuring starts (builds, planning) the signals keep
//! their default action: nothing has been measured, so nothing is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Starts watching for SIGINT and SIGTERM (once per process; later calls do nothing).
pub fn watch() -> std::io::Result<()> {
    if STOP.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    // Registered first, so it sees the flag before this signal sets it: only a second Ctrl-C exits.
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGINT, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGTERM, Arc::clone(&flag))?;
    let _ = STOP.set(flag);
    Ok(())
}

/// Whether a stop was asked for since [`watch`].
pub fn requested() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}
