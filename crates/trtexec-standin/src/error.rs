//! Why the simulator itself cannot do its job (exit status 2 with one `[E] trtexec-standin:` line), and
//! why the ONNX model cannot be read or run by the simulator's engine (tract).

use std::path::PathBuf;

/// The simulator's environment or its own data is wrong; the message names the variable or file.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A file the simulator records to, replays from or writes cannot be used.
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        /// What it tried, in words (`write argv to`, `read TRTMC_STANDIN_LOG`).
        action: String,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A recorded export cannot be copied where the command line asks for it.
    #[error("cannot copy {variable} {} to {}: {source}", from.display(), to.display())]
    Copy {
        /// The variable naming the recording (`TRTMC_STANDIN_TIMES`).
        variable: &'static str,
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
    /// Standard output or error cannot be written.
    #[error("cannot write output: {source}")]
    Output { source: std::io::Error },
    /// Something the simulator writes as JSON cannot be written.
    #[error("{source}")]
    Json { source: serde_json::Error },
    /// Data compiled into the simulator does not parse.
    #[error("the {what} does not parse: {source}")]
    Embedded {
        /// `built-in simulator config`, `embedded knob database`.
        what: &'static str,
        source: serde_json::Error,
    },
    /// A replay without its log.
    #[error("set TRTMC_STANDIN_LOG to the recorded trtexec log to replay")]
    NoReplayLog,
    /// `TRTMC_STANDIN_EXIT` is no exit status.
    #[error("TRTMC_STANDIN_EXIT={value} is not an exit status (0-255)")]
    ExitStatus { value: String },
    /// `TRTMC_SIM_VERSION` is not UTF-8.
    #[error("TRTMC_SIM_VERSION is not valid UTF-8")]
    VersionNotUtf8,
    /// `TRTMC_SIM_VERSION` is no release number.
    #[error(
        "TRTMC_SIM_VERSION={value:?} is not a TensorRT 10+ banner number such as 110100 (11.1.0) or 101601 (10.16.1)"
    )]
    Version { value: String },
    /// `TRTMC_SIM_CONFIG` cannot be used.
    #[error("TRTMC_SIM_CONFIG {}: {source}", path.display())]
    ConfigFile {
        path: PathBuf,
        source: Box<SimError>,
    },
    /// The configuration file is not JSON of the configuration's shape.
    #[error(
        "{source}; expected {{\"base_ms\": 2.0, \"noise\": 0.004, \"seed\": 7, \"build_ms\": 30, \"effects\": {{token: factor}}, \"faults\": {{token: \"crash_build\"|\"hang_build\"|\"fail_build\"|\"wrong_outputs\"|\"crash_infer\"}}}}"
    )]
    ConfigShape { source: serde_json::Error },
    /// The configuration file cannot be read.
    #[error("{source}")]
    ConfigRead { source: std::io::Error },
    /// A configuration value out of range.
    #[error("{field} = {value} must be a {must} number")]
    ConfigValue {
        field: &'static str,
        value: f64,
        /// `positive`, `non-negative`.
        must: &'static str,
    },
    /// An effect factor that is not a positive number.
    #[error("effect of {token:?} is {factor}; factors must be positive numbers")]
    Effect { token: String, factor: f64 },
}

/// Why the simulator's engine (tract) cannot read or run the model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// tract refused the model; `reason` is its error chain.
    #[error("{reason}")]
    Tract { reason: String },
    /// The protobuf has no graph.
    #[error("the model has no graph")]
    NoGraph,
    /// An input or output that is not a tensor.
    #[error("`{name}` is not a tensor")]
    NotATensor { name: String },
    /// An ONNX element type the simulator does not model.
    #[error("`{name}` has ONNX element type {code}, which the simulator does not handle")]
    ElementType { name: String, code: i32 },
    /// An output type the simulator does not model.
    #[error("output `{name}` has type {datum}, which the simulator does not handle")]
    OutputType { name: String, datum: String },
    /// An output whose shape stays symbolic.
    #[error("output `{name}` has no concrete shape ({shape})")]
    OutputShape { name: String, shape: String },
    /// A model input without a shape.
    #[error("no shape for model input `{name}`")]
    NoInputShape { name: String },
    /// A model input without a value.
    #[error("no value for model input `{name}`")]
    NoInputValue { name: String },
    /// An input's values do not make a tensor of its shape.
    #[error("input `{name}`: {reason}")]
    Input { name: String, reason: String },
    /// An output type this reader does not copy out.
    #[error("output type {datum} is not handled")]
    OutputValues { datum: String },
}

impl ModelError {
    /// tract's error with its causes, as `{:#}` prints them.
    pub fn tract(e: impl std::fmt::Display) -> Self {
        ModelError::Tract {
            reason: format!("{e:#}"),
        }
    }
}
