//! The runtime side of `trtmc-bench tune`: knob databases per runtime, and the real route runners that
//! the tuning engine (`trtmc-tune`) drives.
//!
//! * [`knobs`]: the getAllBuildRoutes-shaped knob database of each runtime and what each knob sets.
//! * [`process`]: [`process::ProcessRunner`], one build process and one serving worker per route
//!   (tract, onnxruntime).
//! * [`child`]: the `tune-worker` child process (build or serve).
//! * [`orchestrate`]: a whole tune, request in, outcome out (output directory, cache, engine, saved
//!   bundles, summary and report).
//! * [`progress`]: the events a tune reports to the user interface.
//! * [`protocol`]: the line protocol between the tuner and its children.
//! * [`slurm`]: `--executor slurm`, each round's builds as one Slurm job array.

pub mod child;
pub mod knobs;
pub mod orchestrate;
pub mod process;
pub mod progress;
pub mod protocol;
pub mod slurm;
