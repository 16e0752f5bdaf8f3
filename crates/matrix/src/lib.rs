//! `trtmc-bench matrix`: the release performance matrix. A suite of rows, each a candidate trtmc
//! runtime measured through `trtmc-bench run` against a reference backend in its own process, checked
//! for the same workload and timing boundary, and given a traffic light from the p50 ratio and its
//! interval over paired rounds. Format, lights and exit codes: docs/matrix.md; the interval:
//! docs/statistics.md.
//!
//! | module | job |
//! | --- | --- |
//! | [`suite`] | suite YAML (the environment file is `trtmc_executor::environment`) |
//! | [`plan`] | the preflight (`matrix check`) and the plan it produces |
//! | [`progress`] | the events a matrix run reports to the user interface |
//! | [`row`] | one row: leaf commands, contract checks, the light |
//! | [`lights`] | green / yellow / red from the ratio and its interval |
//! | [`explain`] | a yellow or red row's per-layer profiles of both sides, aligned by ONNX node |
//! | [`runner`] | run directories, results.json, local executor, resume, receipts attached |
//! | [`slurm`] | the Slurm job-array executor |
//! | [`receipt`] | bundle-preparation receipts |
//! | [`junit`] | the run as JUnit XML (`--export-junit`) |

mod error;
pub mod explain;
pub mod junit;
pub mod lights;
pub mod plan;
pub mod progress;
pub mod receipt;
pub mod row;
pub mod runner;
pub mod slurm;
pub mod suite;

pub use error::{Error, MatrixError};

/// Entry points of the fuzz target (crates/matrix/fuzz) and its stable no-panic test.
#[doc(hidden)]
pub mod fuzzing {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Every outside-file parser on the same bytes; results are discarded, panics are the bug.
    pub fn all(data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let _ = crate::suite::parse_suite(&text);
        if let Ok(env) = crate::suite::parse_environment(&text) {
            let _ = env.expand(Path::new("reference"));
        }
        let _ = crate::suite::expand(&text, &|n| (n.len() % 2 == 0).then(|| n.to_string()));
        let consumed = BTreeMap::from([("/b".to_string(), "/m.onnx".to_string())]);
        let _ = crate::receipt::parse(data, "abc", &consumed);
    }
}
