//! Readers for the JSON files trtexec writes: `--exportLayerInfo`, `--exportProfile`, `--exportTimes`.
//!
//! Each reader takes the file's bytes and never panics: bad input becomes a [`FormatError`] that
//! says where and what, or a list of problems on the records that could still be read.

mod layers;
mod loose;
mod profile;
mod scan;
mod times;

use std::fmt;
use std::path::{Path, PathBuf};

pub use layers::{
    ConvFields, Layer, LayerInfo, RootShape, Tensor, Verbosity, WeightCount, read_layer_info,
    read_layer_text,
};
pub use loose::IntOrStr;
pub use profile::{HeaderCount, Profile, ProfileRecord, read_profile};
pub use times::{Stats, TimeRecord, Times, read_time_records, read_times};

/// From this many layers on, reading, classifying, finding and writing split their work between two
/// threads; below it a second thread costs more than it saves.
pub const PARALLEL_LAYERS: usize = 4096;

/// Why a file could not be read as the export it was given as.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormatError {
    /// A JSON syntax error inside the document.
    #[error("invalid JSON at line {line}, column {column}: {detail}{}", hint_suffix(.hint))]
    InvalidJson {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The JSON parser's message, without its own position.
        detail: String,
        /// A likely cause, when the text suggests one (a trtexec text log, an unescaped layer name).
        hint: Option<String>,
    },
    /// The document stops before its end (a copy or write that was cut off), as opposed to a
    /// syntax error inside it.
    #[error(
        "the file ends early, at byte {bytes} (line {line}, column {column}), {place}: it was cut off while being written or copied; export it again with {reexport}"
    )]
    Truncated {
        /// Length of the file, where it stops.
        bytes: usize,
        /// 1-based line where it stops.
        line: usize,
        /// 1-based column where it stops.
        column: usize,
        /// Where inside the document it stops (inside a string, ...), as a phrase.
        place: &'static str,
        /// The trtexec flag that writes this export again.
        reexport: &'static str,
    },
    /// Valid JSON, but another export or document than the one asked for.
    #[error("this is not {expected}: {found}")]
    WrongKind {
        /// The export that was asked for.
        expected: &'static str,
        /// What the document looks like instead.
        found: String,
    },
    /// JSON of the right kind whose structure cannot be read (an empty file, `Layers` not a list,
    /// no usable record); the message says which.
    #[error("{0}")]
    Shape(String),
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default()
}

/// A [`FormatError`] or an I/O failure, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub struct SourceError {
    /// The file that was read.
    pub path: PathBuf,
    /// What went wrong with it.
    pub kind: SourceErrorKind,
}

/// What went wrong with an export file.
#[derive(Debug, thiserror::Error)]
pub enum SourceErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// The file was read but is not a usable export.
    #[error(transparent)]
    Format(#[from] FormatError),
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.kind)
    }
}

/// A document's text: read into memory, or (large files) mapped from the file.
pub struct Text(Repr);

enum Repr {
    Owned(String),
    /// Valid UTF-8 from `start` (past a byte-order mark) to the end, checked when mapped.
    Mapped {
        map: memmap2::Mmap,
        start: usize,
    },
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            Repr::Owned(s) => s,
            // SAFETY: checked to be UTF-8 in `read_text`; the map is read-only and lives as long as
            // `self` (see `read_text` for the file changing underneath).
            Repr::Mapped { map, start } => unsafe { std::str::from_utf8_unchecked(&map[*start..]) },
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Repr::Owned(s))
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Files at least this large are mapped instead of read.
const MAP_FROM_BYTES: u64 = 1 << 20;

/// Reads a whole file as text; invalid UTF-8 is replaced and reported rather than refused, because
/// trtexec copies layer names byte for byte.
///
/// Large regular files are memory-mapped (with the pages populated in one call): on the 14,400-
/// layer benchmark, reading the 11.7 MB layer file cost ~29 ms of CPU (fresh zeroed pages, one
/// fault each, and a copy out of the page cache) against ~7 ms mapped. The analysis reads the
/// text for as long as it runs, so the file must not be rewritten meanwhile, as with any
/// program that maps its input; trtexec writes its exports once.
pub fn read_text(path: &Path) -> Result<(Text, Option<String>), SourceError> {
    let fail = |e: std::io::Error| SourceError {
        path: path.to_owned(),
        kind: e.into(),
    };
    // A FIFO or device is refused before it is opened (opening a FIFO blocks).
    trtmc_core::limits::check_outside_file(path, trtmc_core::limits::FileKind::Export)
        .map_err(fail)?;
    let file = std::fs::File::open(path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if meta.is_file() && meta.len() >= MAP_FROM_BYTES {
        // SAFETY: the map is only read, and `Text` keeps it alive while the text is borrowed;
        // a file changed by another process while mapped is the documented limit above.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) };
        // A file that cannot be mapped is read instead.
        if let Ok(map) = map {
            return Ok(match std::str::from_utf8(&map) {
                Ok(text) => {
                    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
                    (Text(Repr::Mapped { map, start }), None)
                }
                Err(_) => {
                    let (text, warning) = bytes_to_text(map.to_vec());
                    (text.into(), warning)
                }
            });
        }
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(fail)?;
    let (text, warning) = bytes_to_text(bytes);
    Ok((text.into(), warning))
}

/// Converts bytes to text, stripping a UTF-8 byte-order mark; the second value is a warning when
/// bytes had to be replaced.
pub fn bytes_to_text(bytes: Vec<u8>) -> (String, Option<String>) {
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(err) => {
            let at = err.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(err.as_bytes()).into_owned();
            (
                text,
                Some(format!(
                    "the file is not valid UTF-8 (first bad byte at offset {at}); bad bytes were replaced by U+FFFD"
                )),
            )
        }
    };
    if text.0.starts_with('\u{feff}') {
        text.0.drain(..'\u{feff}'.len_utf8());
    }
    text
}

/// Which export a document was read as, for the re-export instruction of a truncated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Export {
    LayerInfo,
    Profile,
    Times,
}

impl Export {
    fn reexport(self) -> &'static str {
        match self {
            Export::LayerInfo => {
                "trtexec --exportLayerInfo=FILE (from an engine built with --profilingVerbosity=detailed)"
            }
            Export::Profile => "trtexec --exportProfile=FILE",
            Export::Times => "trtexec --exportTimes=FILE",
        }
    }
}

/// Turns a serde_json syntax error into a [`FormatError`] with a hint where one is likely.
fn invalid_json(text: &str, err: &serde_json::Error, export: Export) -> FormatError {
    // An end of input inside the document is a cut-off file, not a broken name: unescaped
    // quotes and control characters make syntax errors before the end.
    if err.is_eof() && !looks_like_log(text) {
        let place = if err.to_string().starts_with("EOF while parsing a string") {
            "inside a string"
        } else {
            match text.trim_end().as_bytes().last() {
                Some(b'}' | b',') | None => "between records",
                _ => "inside a record",
            }
        };
        return FormatError::Truncated {
            bytes: text.len(),
            line: err.line(),
            column: err.column(),
            place,
            reexport: export.reexport(),
        };
    }
    let detail = err.to_string();
    // serde_json appends " at line L column C"; the position is reported separately.
    let detail = match detail.rfind(" at line ") {
        Some(i) => detail[..i].to_owned(),
        None => detail,
    };
    let line_text = text.lines().nth(err.line().saturating_sub(1)).unwrap_or("");
    let hint = if looks_like_log(text) {
        Some("this looks like a trtexec text log, not a JSON export; pass the file written by --exportLayerInfo / --exportProfile / --exportTimes".to_owned())
    } else if line_text.contains("\"name\"") || line_text.contains("\"Name\"") {
        Some(format!(
            "trtexec writes layer names without JSON escaping, so a name holding a quote, backslash or control character breaks the file; the line starts: {}",
            snippet(line_text, 120)
        ))
    } else {
        None
    };
    FormatError::InvalidJson {
        line: err.line(),
        column: err.column(),
        detail,
        hint,
    }
}

fn looks_like_log(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    head.contains("&&&& RUNNING")
        || head
            .lines()
            .any(|l| l.starts_with("[I] ") || (l.starts_with('[') && l.contains("] [I] ")))
}

/// A short, printable excerpt of untrusted text for an error message.
pub fn snippet(text: &str, max_chars: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max_chars)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if text.chars().count() > max_chars {
        out.push('…');
    }
    format!("{out:?}")
}

/// What a JSON document looks like, for messages about files given in the wrong slot.
fn describe_object_keys(keys: &[String]) -> String {
    let has = |k: &str| keys.iter().any(|x| x == k);
    if has("tuner_options") || has("tuner_version") {
        "it looks like trtexec --helpBuildRoute output (a tuner knob database)".to_owned()
    } else if has("$schema") {
        "it looks like a JSON Schema document".to_owned()
    } else if has("performance_summary") || has("build_options") || has("model_options") {
        "it looks like TREx metadata parsed from a trtexec log (.build.metadata.json / .profile.metadata.json)".to_owned()
    } else if has("schema_version") && has("results") {
        "it looks like an analyze-data.json analysis (use `analyze package --analyze-data` to re-package it)".to_owned()
    } else if has("schema") && has("backends") {
        "it looks like a trtmc analysis JSON".to_owned()
    } else {
        let shown: Vec<&str> = keys.iter().take(8).map(String::as_str).collect();
        format!("it is an object with keys {shown:?}")
    }
}

/// Describes a list whose first record has these keys.
fn describe_record_keys(keys: &[String]) -> Option<&'static str> {
    let has = |k: &str| keys.iter().any(|x| x == k);
    if has("latencyMs") || has("startEnqMs") || has("computeMs") {
        Some("it looks like a trtexec --exportTimes file (per-iteration timestamps)")
    } else if has("timeMs") || has("averageMs") || (keys.len() == 1 && has("count")) {
        Some("it looks like a trtexec --exportProfile file (per-layer times)")
    } else if has("LayerType") || has("Inputs") || has("Outputs") {
        Some("it looks like a layer-info export (--exportLayerInfo)")
    } else if has("ComputeCapability") || has("TotalMemory") {
        Some("it looks like TREx device metadata (.metadata.json), not a trtexec export")
    } else {
        None
    }
}

/// The first non-whitespace byte of a document.
fn first_byte(text: &str) -> Option<u8> {
    text.bytes().find(|b| !b.is_ascii_whitespace())
}

/// 1-based line and column of a byte offset, for errors found after the syntax pass.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = offset
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|p| p + 1)
            .unwrap_or(0)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn bom_is_stripped_and_bad_utf8_reported() {
        let (t, w) = bytes_to_text(b"\xef\xbb\xbf[1]".to_vec());
        assert_eq!(t, "[1]");
        assert!(w.is_none());
        let (t, w) = bytes_to_text(b"[\"a\xff\"]".to_vec());
        assert!(t.contains('\u{fffd}'));
        assert!(w.expect("warning").contains("offset 3"));
    }

    #[test]
    fn large_files_are_mapped_and_read_like_small_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let body = format!(
            "[{}]",
            "\"x\",".repeat(MAP_FROM_BYTES as usize / 4) + "\"é\""
        );
        for (name, bytes) in [
            ("small.json", b"\xef\xbb\xbf[1]".to_vec()),
            ("large.json", body.clone().into_bytes()),
            (
                "large-bom.json",
                [b"\xef\xbb\xbf".as_slice(), body.as_bytes()].concat(),
            ),
            ("large-bad.json", [body.as_bytes(), b"\xff"].concat()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).expect("write");
            let (text, warning) = read_text(&path).expect("reads");
            let (expected, expected_warning) = bytes_to_text(bytes);
            assert_eq!(&*text, expected.as_str(), "{name}");
            assert_eq!(warning, expected_warning, "{name}");
        }
        assert!(read_text(&dir.path().join("missing.json")).is_err());
    }

    #[test]
    fn snippet_hides_control_characters() {
        assert_eq!(snippet("a\u{1}b", 10), "\"a\u{fffd}b\"");
        assert!(snippet("abcdef", 3).contains('…'));
    }
}
