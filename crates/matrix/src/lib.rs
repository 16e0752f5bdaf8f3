//! `trtmc-bench matrix`: the release performance matrix. A suite of rows, each a candidate trtmc
//! runtime measured through `trtmc-bench run` against a reference backend in its own process, checked
//! for the same workload and timing boundary, and given a traffic light from the p50 ratio and its
//! bootstrap interval. Format, lights and exit codes: docs/matrix.md.
//!
//! | module | job |
//! | --- | --- |
//! | [`suite`] | suite and environment YAML |
//! | [`plan`] | the preflight (`matrix check`) and the plan it produces |
//! | [`row`] | one row: leaf commands, contract checks, the light |
//! | [`lights`] | green / yellow / red from the ratio and its interval |
//! | [`runner`] | run directories, results.json, local executor, resume, receipts attached |
//! | [`slurm`] | the Slurm job-array executor |
//! | [`receipt`] | bundle-preparation receipts |
//! | [`report`] | report.html |

pub mod lights;
pub mod plan;
pub mod receipt;
pub mod report;
pub mod row;
pub mod runner;
pub mod slurm;
pub mod suite;
