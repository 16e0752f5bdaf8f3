//! Why a case cannot be resolved, or an override (`--set`, `--sweep`, `--shape`, `--dim`, a plan's
//! settings) cannot be read: each variant keeps what was given and what was expected, and its message
//! names the thing and the fix (the CLI prints it; the integration tests assert it).

use crate::limits::{MOST_DIMENSION, MOST_SHAPE_ELEMENTS, MOST_SWEEP_POINTS};
use crate::operations::KindMismatch;
use crate::sourced::Source;

/// A value that does not read as the kind its setting or field takes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// Not a whole number where an integer setting was expected.
    #[error("expected an integer, got `{text}`")]
    NotInteger {
        /// The value as given.
        text: String,
    },
    /// Not a dimension size: a whole number from 1 to [`MOST_DIMENSION`].
    #[error("expected a whole number from 1 to {}, got `{text}`", MOST_DIMENSION)]
    NotDimension {
        /// The value as given.
        text: String,
    },
    /// Not one of the words a listed setting accepts.
    #[error("expected one of {}, got `{text}`", levels.join(", "))]
    NotListed {
        /// The value as given.
        text: String,
        /// The words the setting accepts.
        levels: &'static [&'static str],
    },
    /// An integer outside the range the setting accepts.
    #[error("expected a whole number from {least} to {most}, got `{text}`")]
    OutOfRange {
        /// The value as given.
        text: String,
        /// Smallest accepted value.
        least: i64,
        /// Largest accepted value.
        most: i64,
    },
    /// Not a number where a numeric setting was expected.
    #[error("expected a number, got `{text}`")]
    NotNumber {
        /// The value as given.
        text: String,
    },
    /// Neither `true` nor `false` where a boolean setting was expected.
    #[error("expected true or false, got `{text}`")]
    NotBool {
        /// The value as given.
        text: String,
    },
    /// Not a JSON list of sample tables (e.g. an operation's `samples` list).
    #[error("expected a JSON list of tables (e.g. [{{\"seed\":1}},{{\"seed\":2}}]): {reason}")]
    NotSampleList {
        /// What the JSON parser or the check said.
        reason: String,
    },
    /// Not a JSON list of strings.
    #[error("expected a JSON list of strings: {reason}")]
    NotStringList {
        /// What the JSON parser or the check said.
        reason: String,
    },
    /// A JSON value of another kind than the field declares (see [`KindMismatch`]).
    #[error(transparent)]
    Kind(#[from] KindMismatch),
    /// Not a shape of `x`-separated dimensions such as `1x3x224x224`.
    #[error(
        "`{text}` is not a shape like 1x3x224x224 (each dimension a whole number from 0 to {})",
        MOST_DIMENSION
    )]
    NotShape {
        /// The shape as given.
        text: String,
    },
    /// A shape with more than [`MOST_SHAPE_ELEMENTS`] elements, too large to allocate as one tensor.
    #[error(
        "`{text}` has more than {} elements (2³¹): one tensor of it could not be allocated",
        MOST_SHAPE_ELEMENTS
    )]
    ShapeTooLarge {
        /// The shape as given.
        text: String,
    },
}

/// A command-line override or sweep that is not of its form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OverrideError {
    /// A `--set` without `=`.
    #[error("`{text}` is not KEY=VALUE (e.g. --set request.max_new_tokens=16)")]
    NotKeyValue {
        /// The argument as given.
        text: String,
    },
    /// A `--set` whose key before `=` is empty.
    #[error("`{text}` has an empty key (e.g. --set request.max_new_tokens=16)")]
    EmptyKey {
        /// The argument as given.
        text: String,
    },
    /// A `--shape` that is not `NAME:DIMS`.
    #[error("--shape `{shape}` is not NAME:DIMS (e.g. --shape input:1x3x224x224)")]
    ShapeForm {
        /// The argument as given.
        shape: String,
    },
    /// A `--shape` whose dimensions do not read as a shape.
    #[error("--shape {shape}: {source}")]
    ShapeValue {
        /// The argument as given.
        shape: String,
        /// Why the dimensions were refused.
        source: ValueError,
    },
    /// A `--dim` that is not `NAME=VALUE` with a whole-number value.
    #[error("--dim `{dim}` is not NAME=VALUE with a whole number (e.g. --dim batch=1)")]
    DimForm {
        /// The argument as given.
        dim: String,
    },
    /// A `--sweep` that is not `KEY=V1,V2,…`.
    #[error("`{text}` is not KEY=V1,V2,… (e.g. --sweep request.batch_size=1,2)")]
    SweepForm {
        /// The argument as given.
        text: String,
    },
    /// A `--sweep` with an empty value in its list (e.g. `a=1,,2`).
    #[error("--sweep `{text}` has an empty value")]
    SweepEmptyValue {
        /// The argument as given.
        text: String,
    },
    /// A `--sweep` that lists the same value twice.
    #[error("--sweep `{text}` lists `{value}` twice")]
    SweepValueTwice {
        /// The argument as given.
        text: String,
        /// The repeated value.
        value: String,
    },
    /// Two `--sweep` flags for the same key.
    #[error("--sweep names `{key}` twice; give all values in one --sweep")]
    SweepKeyTwice {
        /// The repeated key.
        key: String,
    },
    /// A sweep whose cross product has more than [`MOST_SWEEP_POINTS`] points.
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
    /// A value that does not read as the kind the setting takes.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A `build.<name>` no runtime declares; `known` lists the common ones and each runtime's own.
    #[error(
        "unknown build setting{}; known: {known}",
        closest.as_ref().map(|c| format!(" (did you mean `build.{c}`?)")).unwrap_or_default()
    )]
    UnknownBuildSetting {
        /// The known name closest to the one given, suggested as a fix.
        closest: Option<String>,
        /// The known build settings, as one comma-separated text.
        known: String,
    },
    /// A key whose section is not `request.`, `build.` or `runtime.`.
    #[error("keys start with `request.`, `build.` or `runtime.` (e.g. request.max_new_tokens=16)")]
    UnknownSection,
}

/// Why a case of a profile cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The profile's status does not let it run (e.g. not yet exported).
    #[error("model `{model}` cannot run: {status}")]
    NotReady {
        /// The profile's name.
        model: String,
        /// The status's label, saying why it cannot run.
        status: String,
    },
    /// The profile declares no operation, so no request can be built.
    #[error("model `{model}` has no operation")]
    NoOperation {
        /// The profile's name.
        model: String,
    },
    /// The case named by the user is not one of the profile's test cases.
    #[error(
        "model `{model}` has no case `{case}`.{} Its cases: {}",
        closest.as_ref().map(|c| format!(" Did you mean `{c}`?")).unwrap_or_default(),
        cases.join(", ")
    )]
    UnknownCase {
        /// The profile's name.
        model: String,
        /// The case name as given.
        case: String,
        /// The profile's case name closest to the one given, suggested as a fix.
        closest: Option<String>,
        /// All of the profile's case names.
        cases: Vec<String>,
    },
    /// No case was named and the profile has no test case to default to.
    #[error("model `{model}` has no test case")]
    NoTestCase {
        /// The profile's name.
        model: String,
    },
    /// A resolved case names an operation trtmc does not know.
    #[error("unknown operation `{operation}`")]
    UnknownOperation {
        /// The operation's name as the resolved case gives it.
        operation: String,
    },
    /// An override that does not apply, named as the user gave it.
    #[error("{} `{key}={value}`: {source}", describe_source(*given))]
    Override {
        /// Where the override came from (`--set`, `--sweep`, a plan, …).
        given: Source,
        /// The key as given.
        key: String,
        /// The value as given.
        value: String,
        /// Why it does not apply.
        source: SettingRefused,
    },
    /// A request field the operation requires is set nowhere (case, plan or `--set`).
    #[error("request.{field} is required by operation `{operation}` ({help})")]
    RequiredField {
        /// The missing field's name (without `request.`).
        field: &'static str,
        /// The operation that requires it.
        operation: &'static str,
        /// The field's help text, saying what to give.
        help: &'static str,
    },
    /// A request field's integer value is outside the operation's range for it.
    #[error(
        "{} request.{field}={value}: give a whole number from {least} to {most}{}",
        describe_source(*given),
        binds_dim.map(|dim| format!(" (it binds the model's `{dim}` dimension; a bundle built for more could not be loaded)")).unwrap_or_default()
    )]
    OutOfRange {
        /// Where the value came from.
        given: Source,
        /// The field's name (without `request.`).
        field: &'static str,
        /// The value as given.
        value: String,
        /// Smallest accepted value.
        least: i64,
        /// Largest accepted value.
        most: i64,
        /// The model dimension the field sets (e.g. `batch`), if any: a bundle is built for this range.
        binds_dim: Option<&'static str>,
    },
    /// `request.batch_size` above 1 for an operation that cannot send a batch in one call.
    #[error(
        "operation `{operation}` has no batch API: request.batch_size={batch} is rejected instead of being simulated with sequential calls"
    )]
    NoBatchApi {
        /// The operation's name.
        operation: &'static str,
        /// The requested batch size.
        batch: i64,
    },
    /// A resolved dimension or shape past the limits of `crate::limits`.
    #[error("{reason}")]
    Limits {
        /// What is past which limit, as a sentence.
        reason: String,
    },
    /// A chat case whose prompt could not be prepared (see [`crate::chat::ChatError`]).
    #[error(transparent)]
    Chat(#[from] crate::chat::ChatError),
    /// A request field naming a file next to MODEL.toml that cannot be read.
    #[error(
        "request.{label} = `{rel}`: cannot read {} ({source}); give a file relative to {}",
        path.display(),
        manifest.display()
    )]
    Artifact {
        /// The request field's name (without `request.`).
        label: String,
        /// The file name as written in the request, relative to the manifest.
        rel: String,
        /// The file's resolved path.
        path: std::path::PathBuf,
        /// The MODEL.toml the path is relative to.
        manifest: std::path::PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// A sample of a chat case sets its own prompt, which the chat template would bypass.
    #[error(
        "{list}[{index}] sets `{}` in a chat case (request.{}={}): a chat case renders one prompt from its messages; its samples may set only `seed`",
        crate::chat::PROMPT_FIELD,
        crate::chat::MODE_FIELD,
        crate::chat::MODE_CHAT
    )]
    ChatSamplePrompt {
        /// The sample list's name as the user wrote it.
        list: String,
        /// Index of the offending sample in the list, from 0.
        index: usize,
    },
    /// The sample list's length fits neither one sample per batch item nor one sample per call.
    #[error(
        "{list} lists {samples} samples for request.batch_size={batch}: list one sample per batch item ({batch}), or set request.batch_size=1 to send them one per call in rotation"
    )]
    SampleCount {
        /// The sample list's name as the user wrote it.
        list: String,
        /// The number of samples listed.
        samples: usize,
        /// The requested batch size.
        batch: usize,
    },
    /// A sample list item that is not a table.
    #[error("{list}[{index}] is not a table (e.g. {{ seed = 1 }})")]
    SampleNotTable {
        /// The sample list's name as the user wrote it.
        list: String,
        /// Index of the offending item in the list, from 0.
        index: usize,
    },
    /// A sample table that sets no field.
    #[error("{list}[{index}] sets nothing; a sample sets {}", keys.join(", "))]
    SampleEmpty {
        /// The sample list's name as the user wrote it.
        list: String,
        /// Index of the offending sample in the list, from 0.
        index: usize,
        /// The fields a sample may set.
        keys: Vec<&'static str>,
    },
    /// A sample table sets a field that is not one of the operation's per-sample fields.
    #[error(
        "{list}[{index}] sets `{key}`, which is no per-sample field of `{operation}` (a sample sets {})",
        keys.join(", ")
    )]
    SampleField {
        /// The sample list's name as the user wrote it.
        list: String,
        /// Index of the offending sample in the list, from 0.
        index: usize,
        /// The unknown field as given.
        key: String,
        /// The operation's name.
        operation: &'static str,
        /// The fields a sample may set.
        keys: Vec<&'static str>,
    },
    /// A sample field's value is of another JSON kind than the field declares.
    #[error("{list}[{index}].{key}: {source}")]
    SampleKind {
        /// The sample list's name as the user wrote it.
        list: String,
        /// Index of the offending sample in the list, from 0.
        index: usize,
        /// The field's name.
        key: String,
        /// Which kind was expected and which was given.
        source: KindMismatch,
    },
    /// Some, but not all, of the samples that need a seed (no image file) set `seed`.
    #[error(
        "{list}: {set} of the {seeded} seeded samples set `seed`: give every seeded sample its seed, or none"
    )]
    SeedsPartial {
        /// The sample list's name as the user wrote it.
        list: String,
        /// How many of them set `seed`.
        set: usize,
        /// How many samples need a seed.
        seeded: usize,
    },
    /// An iteration count of 0.
    #[error("{field} 0: give at least 1 call")]
    NoCalls {
        /// The setting as the user wrote it (a flag, a plan field, a test case field).
        field: String,
    },
    /// A warmup or iteration count above the most calls a case may make.
    #[error(
        "{field} {value} is more than the {most} calls a case may make; bound the run by time instead (--duration / --max-duration)"
    )]
    TooManyCalls {
        /// The setting as the user wrote it (a flag, a plan field, a test case field).
        field: String,
        /// The count given.
        value: u64,
        /// The most calls a case may make.
        most: u64,
    },
    /// A duration or timeout that is not a finite number of seconds in the accepted range.
    #[error(
        "{field} {value}: give seconds {} and at most {most} (one week)",
        if *above_zero { "above 0" } else { "from 0" }
    )]
    Seconds {
        /// The setting as the user wrote it (a flag, a plan field, a test case field).
        field: String,
        /// The value as [`crate::case::number_text`] writes it.
        value: String,
        /// Whether 0 is refused (a maximum duration or timeout) or allowed (a minimum duration).
        above_zero: bool,
        /// The longest accepted value, in seconds (one week).
        most: f64,
    },
    /// `--max-duration` is below the minimum duration, so no run could satisfy both.
    #[error(
        "--max-duration {max} is below the minimum duration {min} s: raise --max-duration or lower --duration"
    )]
    MaxBelowMin {
        /// The maximum duration, in seconds.
        max: f64,
        /// The minimum duration, in seconds.
        min: f64,
    },
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
