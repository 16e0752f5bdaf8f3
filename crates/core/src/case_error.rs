//! Why a case cannot be resolved, or an override (`--set`, `--sweep`, `--shape`, `--dim`, a plan's
//! settings) cannot be read: each variant keeps what was given and what was expected, and its message
//! names the thing and the fix (the CLI prints it; the integration tests assert it).

use crate::case::{MOST_DIMENSION, MOST_SHAPE_ELEMENTS, MOST_SWEEP_POINTS, Source};
use crate::operations::KindMismatch;

/// A value that does not read as the kind its setting or field takes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("expected an integer, got `{text}`")]
    NotInteger { text: String },
    #[error("expected a whole number from 1 to {}, got `{text}`", MOST_DIMENSION)]
    NotDimension { text: String },
    #[error("expected one of {}, got `{text}`", levels.join(", "))]
    NotListed {
        text: String,
        levels: &'static [&'static str],
    },
    #[error("expected a whole number from {least} to {most}, got `{text}`")]
    OutOfRange { text: String, least: i64, most: i64 },
    #[error("expected a number, got `{text}`")]
    NotNumber { text: String },
    #[error("expected true or false, got `{text}`")]
    NotBool { text: String },
    #[error("expected a JSON list of tables (e.g. [{{\"seed\":1}},{{\"seed\":2}}]): {reason}")]
    NotSampleList { reason: String },
    #[error("expected a JSON list of strings: {reason}")]
    NotStringList { reason: String },
    #[error(transparent)]
    Kind(#[from] KindMismatch),
    #[error(
        "`{text}` is not a shape like 1x3x224x224 (each dimension a whole number from 0 to {})",
        MOST_DIMENSION
    )]
    NotShape { text: String },
    #[error(
        "`{text}` has more than {} elements (2³¹): one tensor of it could not be allocated",
        MOST_SHAPE_ELEMENTS
    )]
    ShapeTooLarge { text: String },
}

/// A command-line override or sweep that is not of its form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OverrideError {
    #[error("`{text}` is not KEY=VALUE (e.g. --set request.max_new_tokens=16)")]
    NotKeyValue { text: String },
    #[error("`{text}` has an empty key (e.g. --set request.max_new_tokens=16)")]
    EmptyKey { text: String },
    #[error("--shape `{shape}` is not NAME:DIMS (e.g. --shape input:1x3x224x224)")]
    ShapeForm { shape: String },
    #[error("--shape {shape}: {source}")]
    ShapeValue { shape: String, source: ValueError },
    #[error("--dim `{dim}` is not NAME=VALUE with a whole number (e.g. --dim batch=1)")]
    DimForm { dim: String },
    #[error("`{text}` is not KEY=V1,V2,… (e.g. --sweep request.batch_size=1,2)")]
    SweepForm { text: String },
    #[error("--sweep `{text}` has an empty value")]
    SweepEmptyValue { text: String },
    #[error("--sweep `{text}` lists `{value}` twice")]
    SweepValueTwice { text: String, value: String },
    #[error("--sweep names `{key}` twice; give all values in one --sweep")]
    SweepKeyTwice { key: String },
    #[error(
        "the sweep has {} points, more than the {} a run may have; sweep fewer values (or split the sweep into several runs)",
        sizes.iter().map(usize::to_string).collect::<Vec<_>>().join(" × "),
        MOST_SWEEP_POINTS
    )]
    SweepTooLarge {
        /// The number of values of each axis.
        sizes: Vec<usize>,
    },
}

/// Why one override (`section.key=value`) does not apply to the case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingRefused {
    /// `request.<name>` that the operation does not declare; the text lists close and known names.
    #[error("{0}")]
    UnknownField(String),
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A `build.<name>` no runtime declares; `known` lists the common ones and each runtime's own.
    #[error(
        "unknown build setting{}; known: {known}",
        closest.as_ref().map(|c| format!(" (did you mean `build.{c}`?)")).unwrap_or_default()
    )]
    UnknownBuildSetting {
        closest: Option<String>,
        known: String,
    },
    #[error("keys start with `request.`, `build.` or `runtime.` (e.g. request.max_new_tokens=16)")]
    UnknownSection,
}

/// Why a case of a profile cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("model `{model}` cannot run: {status}")]
    NotReady { model: String, status: String },
    #[error("model `{model}` has no operation")]
    NoOperation { model: String },
    #[error(
        "model `{model}` has no case `{case}`.{} Its cases: {}",
        closest.as_ref().map(|c| format!(" Did you mean `{c}`?")).unwrap_or_default(),
        cases.join(", ")
    )]
    UnknownCase {
        model: String,
        case: String,
        closest: Option<String>,
        cases: Vec<String>,
    },
    #[error("model `{model}` has no test case")]
    NoTestCase { model: String },
    #[error("unknown operation `{operation}`")]
    UnknownOperation { operation: String },
    /// An override that does not apply, named as the user gave it.
    #[error("{} `{key}={value}`: {source}", describe_source(*given))]
    Override {
        given: Source,
        key: String,
        value: String,
        source: SettingRefused,
    },
    #[error("request.{field} is required by operation `{operation}` ({help})")]
    RequiredField {
        field: &'static str,
        operation: &'static str,
        help: &'static str,
    },
    #[error(
        "{} request.{field}={value}: give a whole number from {least} to {most}{}",
        describe_source(*given),
        binds_dim.map(|dim| format!(" (it binds the model's `{dim}` dimension; a bundle built for more could not be loaded)")).unwrap_or_default()
    )]
    OutOfRange {
        given: Source,
        field: &'static str,
        value: String,
        least: i64,
        most: i64,
        binds_dim: Option<&'static str>,
    },
    #[error(
        "operation `{operation}` has no batch API: request.batch_size={batch} is rejected instead of being simulated with sequential calls"
    )]
    NoBatchApi { operation: &'static str, batch: i64 },
    /// A resolved dimension or shape past the limits of `crate::limits`.
    #[error("{reason}")]
    Limits { reason: String },
    #[error(transparent)]
    Chat(#[from] crate::chat::ChatError),
    #[error(
        "request.{label} = `{rel}`: cannot read {} ({source}); give a file relative to {}",
        path.display(),
        manifest.display()
    )]
    Artifact {
        label: String,
        rel: String,
        path: std::path::PathBuf,
        manifest: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{list}[{index}] sets `{}` in a chat case (request.{}={}): a chat case renders one prompt from its messages; its samples may set only `seed`",
        crate::chat::PROMPT_FIELD,
        crate::chat::MODE_FIELD,
        crate::chat::MODE_CHAT
    )]
    ChatSamplePrompt { list: String, index: usize },
    #[error(
        "{list} lists {samples} samples for request.batch_size={batch}: list one sample per batch item ({batch}), or set request.batch_size=1 to send them one per call in rotation"
    )]
    SampleCount {
        list: String,
        samples: usize,
        batch: usize,
    },
    #[error("{list}[{index}] is not a table (e.g. {{ seed = 1 }})")]
    SampleNotTable { list: String, index: usize },
    #[error("{list}[{index}] sets nothing; a sample sets {}", keys.join(", "))]
    SampleEmpty {
        list: String,
        index: usize,
        keys: Vec<&'static str>,
    },
    #[error(
        "{list}[{index}] sets `{key}`, which is no per-sample field of `{operation}` (a sample sets {})",
        keys.join(", ")
    )]
    SampleField {
        list: String,
        index: usize,
        key: String,
        operation: &'static str,
        keys: Vec<&'static str>,
    },
    #[error("{list}[{index}].{key}: {source}")]
    SampleKind {
        list: String,
        index: usize,
        key: String,
        source: KindMismatch,
    },
    #[error(
        "{list}: {set} of the {seeded} seeded samples set `seed`: give every seeded sample its seed, or none"
    )]
    SeedsPartial {
        list: String,
        set: usize,
        seeded: usize,
    },
    #[error("{field} 0: give at least 1 call")]
    NoCalls {
        /// The setting as the user wrote it (a flag, a plan field, a test case field).
        field: String,
    },
    #[error(
        "{field} {value} is more than the {most} calls a case may make; bound the run by time instead (--duration / --max-duration)"
    )]
    TooManyCalls {
        field: String,
        value: u64,
        most: u64,
    },
    #[error(
        "{field} {value}: give seconds {} and at most {most} (one week)",
        if *above_zero { "above 0" } else { "from 0" }
    )]
    Seconds {
        field: String,
        /// The value as [`crate::case::number_text`] writes it.
        value: String,
        above_zero: bool,
        most: f64,
    },
    #[error(
        "--max-duration {max} is below the minimum duration {min} s: raise --max-duration or lower --duration"
    )]
    MaxBelowMin { max: f64, min: f64 },
}

/// How a message names where a value came from.
pub(crate) fn describe_source(s: Source) -> &'static str {
    match s {
        Source::Set => "--set",
        Source::Sweep => "--sweep",
        Source::Plan => "plan",
        Source::Case => "test case",
        Source::Manifest => "MODEL.toml",
        Source::Cli => "--shape/--dim",
        Source::Default => "default",
    }
}
