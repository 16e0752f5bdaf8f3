//! Exit codes and the one error type that reaches `main`.
//!
//! Every failure a user can cause ends as a [`CliError`]: one message that names the thing and says
//! what to do next, and a documented exit code (docs/exit-codes.md). The libraries' error enums get
//! their exit codes here and nowhere else (the `From` impls below).

use std::fmt;

use trtmc_core::error_text::with_causes;

pub use trtmc_core::artifacts::exit_codes::ExitCode;

#[derive(Debug)]
pub struct CliError {
    pub code: ExitCode,
    pub message: String,
}

impl CliError {
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    /// A refused input (exit 3); `message` is a text or a typed error whose message names the fix.
    pub fn input(message: impl fmt::Display) -> Self {
        Self::new(ExitCode::Input, message.to_string())
    }
    pub fn internal(err: impl fmt::Display) -> Self {
        Self::new(ExitCode::Internal, format!("internal error: {err}"))
    }
    /// A library error with its exit code: its message followed by its causes.
    fn classified(code: ExitCode, err: &dyn std::error::Error) -> Self {
        match code {
            ExitCode::Internal => Self::internal(with_causes(err)),
            _ => Self::new(code, with_causes(err)),
        }
    }
}

impl From<trtmc_runner::Error> for CliError {
    fn from(e: trtmc_runner::Error) -> Self {
        use trtmc_runner::Error as E;
        let code = match &e {
            E::ExplicitBundleForManyModels
            | E::UnknownModel { .. }
            | E::ModelNotReady { .. }
            | E::Sweep { .. }
            | E::TestOnlyOperation { .. }
            | E::Case { .. }
            | E::UnknownRuntime { .. }
            | E::UnsupportedOperation { .. }
            | E::BuildSetting(_)
            | E::RuntimeSetting { .. }
            | E::Tokenizer { .. }
            | E::Source { .. }
            | E::MixedTimingBoundaries { .. }
            | E::UnknownOperation { .. }
            | E::BundleManifest { .. }
            | E::BundleRuntimeMismatch { .. }
            | E::CompareInputs { .. }
            | E::NoCase
            | E::NoModelFile { .. }
            | E::SelfTimedRuntime { .. } => ExitCode::Input,
            E::RuntimeUnavailable { .. } => ExitCode::Environment,
            E::NoBundle { .. } | E::BuildFailed { .. } | E::BundleCache { .. } => ExitCode::Build,
            E::OutputSlot { .. }
            | E::CreateResultDir { .. }
            | E::WriteResult { .. }
            | E::WriteReference { .. } => ExitCode::Output,
            E::OperationTable { .. } | E::UnbuildablePlan { .. } => ExitCode::Internal,
        };
        Self::classified(code, &e)
    }
}

impl From<trtmc_tune::orchestrate::TuneRunError> for CliError {
    fn from(e: trtmc_tune::orchestrate::TuneRunError) -> Self {
        use trtmc_tune::TuneError;
        use trtmc_tune::orchestrate::TuneRunError as E;
        let code = match &e {
            E::Onnx { .. }
            | E::Catalog { .. }
            | E::UnknownModel { .. }
            | E::ModelNotReady { .. }
            | E::TestOnlyOperation { .. }
            | E::NoModelFile { .. }
            | E::Case { .. }
            | E::UnknownRuntime { .. }
            | E::NoKnobs(_)
            | E::KnobDatabase { .. }
            | E::Cache { .. }
            | E::CachedPlan { .. }
            | E::Source { .. }
            | E::ModelFile { .. }
            | E::Golden { .. }
            | E::DataSet { .. }
            | E::Tokenizer { .. }
            | E::NotShared { .. } => ExitCode::Input,
            E::Unavailable { .. }
            | E::KnobTool { .. }
            | E::RouteProcesses(_)
            | E::SlurmController { .. } => ExitCode::Environment,
            E::OutputDir { .. } | E::SaveBundle { .. } | E::Write { .. } | E::Locked(_) => {
                ExitCode::Output
            }
            // The default route's reference outputs could not be computed: the tune's case failed.
            E::Engine(TuneError::Reference { .. }) => ExitCode::CaseFailed,
            E::Engine(TuneError::Executor(_)) => ExitCode::Environment,
            E::Engine(TuneError::Cache(trtmc_tune::cache::CacheError::Io { .. })) => {
                ExitCode::Output
            }
            E::Engine(_) => ExitCode::Input,
            E::KnobSet { .. } => ExitCode::Internal,
        };
        Self::classified(code, &e)
    }
}

impl From<trtmc_history::Error> for CliError {
    fn from(e: trtmc_history::Error) -> Self {
        use trtmc_history::Error as E;
        let code = match &e {
            E::NewerSchema { .. }
            | E::NotAResult { .. }
            | E::Incomplete { .. }
            | E::Document { .. }
            | E::UnknownSeries { .. }
            | E::UnknownCommit { .. } => ExitCode::Input,
            E::Connect { .. } => ExitCode::Environment,
            E::OpenFile { .. } | E::Database { .. } | E::Write { .. } => ExitCode::Output,
        };
        Self::classified(code, &e)
    }
}

impl From<trtmc_matrix::Error> for CliError {
    fn from(e: trtmc_matrix::Error) -> Self {
        use trtmc_matrix::Error as E;
        use trtmc_matrix::plan::Kind;
        let code = match &e {
            E::NotARunDirectory { .. }
            | E::HalfCreated { .. }
            | E::MalformedPlan { .. }
            | E::UnknownExecutor { .. }
            | E::RevisionMismatch { .. }
            | E::TaskList { .. }
            | E::TaskNotListed { .. }
            | E::RowNotPlanned { .. }
            | E::Receipt { .. } => ExitCode::Input,
            // The worst kind decides: a configuration error, then a machine problem, then a contract one.
            E::Preflight { findings } => {
                if findings.iter().any(|f| f.kind == Kind::Config) {
                    ExitCode::Input
                } else if findings.iter().any(|f| f.kind == Kind::Machine) {
                    ExitCode::Environment
                } else {
                    ExitCode::ContractMismatch
                }
            }
            E::SlurmSubmit { .. } | E::SlurmPoll { .. } | E::SlurmTimeout { .. } => {
                ExitCode::Environment
            }
            E::OutputNotEmpty { .. }
            | E::OutputRefused { .. }
            | E::CreateDir { .. }
            | E::Write { .. }
            | E::Locked(_) => ExitCode::Output,
            E::Interrupted { .. } => ExitCode::Interrupted,
        };
        Self::classified(code, &e)
    }
}

impl From<trtmc_report::collection::Error> for CliError {
    fn from(e: trtmc_report::collection::Error) -> Self {
        use trtmc_report::collection::Error as E;
        let code = match &e {
            E::NeedOutput(_) | E::NoRoots => ExitCode::Usage,
            E::RootUnreadable { .. }
            | E::RootNotADirectory { .. }
            | E::NothingFound { .. }
            | E::Malformed(_) => ExitCode::Input,
            E::OutputIsRun(_)
            | E::OutputSymlink(_)
            | E::Locked(_)
            | E::CreateDir { .. }
            | E::Write { .. } => ExitCode::Output,
        };
        Self::classified(code, &e)
    }
}

impl From<trtmc_analyze::report::PackageError> for CliError {
    fn from(e: trtmc_analyze::report::PackageError) -> Self {
        use trtmc_analyze::report::PackageError as E;
        match e {
            E::Markdown { .. } | E::Timestamp(_) => Self::input(e.to_string()),
            E::Json(_) => Self::internal(e),
            _ => Self::new(ExitCode::Output, e.to_string()),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

pub type CliResult<T = ()> = Result<T, CliError>;

impl From<trtmc_analyze::AnalyzeError> for CliError {
    fn from(e: trtmc_analyze::AnalyzeError) -> Self {
        match e {
            // A --baseline that names no backend is a wrong command line.
            trtmc_analyze::AnalyzeError::UnknownBaseline { .. } => {
                Self::new(ExitCode::Usage, e.to_string())
            }
            // Every other variant is about the inputs: a folder without exports, a malformed file.
            _ => Self::classified(ExitCode::Input, &e),
        }
    }
}

impl From<trtmc_analyze::serve::ServeError> for CliError {
    fn from(e: trtmc_analyze::serve::ServeError) -> Self {
        use trtmc_analyze::serve::ServeError as E;
        match e {
            E::Bind { .. } => Self::new(ExitCode::Output, format!("{e}; choose another --port")),
            E::NotLoopback(_) | E::NotAReport(_) => Self::classified(ExitCode::Input, &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_failed_build_is_exit_4_and_shows_the_build_log_and_every_cause() {
        let cause =
            anyhow::anyhow!("No importer registered for op: FancyOp").context("trtexec failed");
        let e = CliError::from(trtmc_runner::Error::BuildFailed {
            model: "tiny-cnn".into(),
            runtime: "tensorrt".into(),
            log: PathBuf::from("/cache/failed.build.log"),
            source: cause,
        });
        assert_eq!(e.code, ExitCode::Build);
        assert_eq!(
            e.message,
            "building model `tiny-cnn` with runtime `tensorrt` failed (build log: /cache/failed.build.log): \
             trtexec failed: No importer registered for op: FancyOp"
        );
    }

    #[test]
    fn an_unwritable_result_is_exit_6_with_the_io_error() {
        let e = CliError::from(trtmc_runner::Error::WriteResult {
            path: PathBuf::from("out/result.json"),
            source: std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"),
        });
        assert_eq!(e.code, ExitCode::Output);
        assert_eq!(
            e.message,
            "cannot write out/result.json: no space left on device"
        );
    }

    #[test]
    fn a_broken_operation_table_is_an_internal_error() {
        let e = CliError::from(trtmc_runner::Error::OperationTable {
            reason: "operation `x` is declared twice".into(),
        });
        assert_eq!(e.code, ExitCode::Internal);
        assert!(e.message.starts_with("internal error: "), "{}", e.message);
    }

    #[test]
    fn the_worst_preflight_finding_decides_the_matrix_exit_code() {
        use trtmc_matrix::plan::{Finding, Kind};
        let finding = |kind| Finding {
            kind,
            subject: "row".into(),
            message: "problem".into(),
        };
        let code = |kinds: &[Kind]| {
            CliError::from(trtmc_matrix::Error::Preflight {
                findings: kinds.iter().map(|k| finding(*k)).collect(),
            })
            .code
        };
        assert_eq!(code(&[Kind::Contract, Kind::Config]), ExitCode::Input);
        assert_eq!(
            code(&[Kind::Contract, Kind::Machine]),
            ExitCode::Environment
        );
        assert_eq!(code(&[Kind::Contract]), ExitCode::ContractMismatch);
    }

    #[test]
    fn a_matrix_directory_without_a_plan_is_exit_3_and_says_why() {
        let e = CliError::from(trtmc_matrix::Error::NotARunDirectory {
            run: PathBuf::from("runs/x"),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not found"),
        });
        assert_eq!(e.code, ExitCode::Input);
        assert_eq!(
            e.message,
            "runs/x is not a matrix run directory (no matrix-run.json): not found"
        );
    }
}
