//! Ctrl-C, SIGTERM and SIGHUP (the terminal closed) while cases are measured: the first one asks the
//! running worker to stop after its current call (its timed calls are kept and the result directory is
//! committed, marked interrupted); a second Ctrl-C exits at once with 130. Before measuring starts
//! (builds, planning) the signals keep their default action: nothing has been measured, so nothing is
//! lost. `tune` and `matrix` watch the same three signals through [`watch`] and [`requested`].
//!
//! A `run` started by the matrix (`--parent-pipe`, [`watch_parent_pipe`]) treats the end of its
//! standard input, a pipe its orchestrator holds, as SIGTERM, so it never outlives a killed
//! orchestrator.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Starts watching for SIGINT, SIGTERM and SIGHUP (once per process; later calls do nothing).
pub fn watch() -> std::io::Result<()> {
    if STOP.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    // Registered first, so it sees the flag before this signal sets it: only a second Ctrl-C exits.
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGINT, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGTERM, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGHUP, Arc::clone(&flag))?;
    let _ = STOP.set(flag);
    Ok(())
}

/// Whether a stop was asked for since [`watch`].
pub fn requested() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// How long a `run` whose orchestrator is gone may take to stop gracefully before it ends itself.
const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Watches standard input, a pipe the orchestrator holds open: at its end (the orchestrator exited or
/// was killed, even with SIGKILL) this process gets SIGTERM, which stops a measuring case gracefully or,
/// before measuring, ends the process; if it is still alive [`ORPHAN_GRACE`] later, it exits with 130.
pub fn watch_parent_pipe() {
    let spawned = std::thread::Builder::new()
        .name("parent-pipe".into())
        .spawn(|| {
            let mut input = std::io::stdin();
            let mut buf = [0u8; 64];
            while let Ok(n) = std::io::Read::read(&mut input, &mut buf) {
                if n == 0 {
                    break;
                }
            }
            eprintln!("run: the orchestrator is gone (its pipe closed); stopping");
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::TERM,
            );
            std::thread::sleep(ORPHAN_GRACE);
            std::process::exit(130);
        });
    if let Err(e) = spawned {
        eprintln!("run: cannot watch the orchestrator ({e})");
    }
}

/// What [`exit_on_signals`] does before it exits: stops work this process started outside its own
/// process tree (tune's Slurm job arrays), which no liveness pipe reaches. Returns a line saying what
/// it stopped, or `None` when there was nothing to stop.
pub type StopHook = Box<dyn Fn() -> Option<String> + Send>;

static STOP_HOOKS: std::sync::Mutex<Vec<StopHook>> = std::sync::Mutex::new(Vec::new());

/// Registers `hook` to run on a graceful stop ([`exit_on_signals`]), before the process exits.
pub fn on_stop(hook: StopHook) {
    STOP_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(hook);
}

/// For an orchestrator whose state reaches disk as it goes (tune's cache, one line per iteration): the
/// first SIGINT, SIGTERM or SIGHUP runs the [`on_stop`] hooks, prints what they stopped and `message`
/// (where the work is kept, how to finish it) and exits with 130, the interrupted code. Its children
/// stop by their liveness pipes.
pub fn exit_on_signals(message: String) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                let hooks = STOP_HOOKS.lock().unwrap_or_else(|e| e.into_inner());
                for line in hooks.iter().filter_map(|hook| hook()) {
                    eprintln!("{line}");
                }
                eprintln!("{message}");
                std::process::exit(130);
            }
        })?;
    Ok(())
}
