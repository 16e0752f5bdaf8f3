//! The integration tests of `trtmc-bench`, as one test binary (one link of the workspace instead of
//! one per file). Each file in this folder is a module here; `common` holds the shared helpers, and
//! the browser and JUnit checkers come from the repository's `tests/` folder.
//!
//! A new test file `tests/NAME.rs` needs its `mod NAME;` line below (cargo no longer discovers test
//! files on its own: `autotests = false` in Cargo.toml); it imports helpers with
//! `use crate::common::*;`. Run one file's tests with `cargo test --release --workspace --test tests
//! -- NAME::`.

#[path = "../../../tests/browser/report-chromium.rs"]
mod chromium;
mod common;
#[path = "../../history/tests/common/test_db.rs"]
mod test_db;
#[path = "../../../tests/junit/xmllint.rs"]
mod xmllint;

mod analyze_cli;
mod broken_pipe;
mod chat_cli;
mod ci_cli;
mod families_cli;
mod gpu_check_script;
mod hardening3_io;
mod hardening3_proc;
mod history_cli;
mod install_cli;
mod limits_cli;
mod matrix_cli;
mod matrix_inputs;
mod matrix_report_browser;
mod measure_cli;
mod media_reference;
mod models_cli;
mod own_model_cli;
mod own_model_robust;
mod report_browser;
mod report_cli;
mod run_cli;
mod runtimes_compare;
mod runtimes_ort;
mod runtimes_profile;
mod runtimes_reference;
mod runtimes_tensorrt;
mod samples_cli;
mod tasks_cli;
mod tensorrt_sim;
mod text_references;
mod tune_cli;
