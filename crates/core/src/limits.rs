//! The one table of limits on what a user hands trtmc (docs/run.md, "Limits"): how large an outside
//! file may be, how large a build dimension, a shape and a case's tensors may be, and how much work a
//! chat template may do. The values are checked where they are resolved, whatever their source
//! (`--set`, MODEL.toml, a test case, a plan, a suite, the ONNX file's own declarations), so nothing
//! absurd reaches a build or a worker.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use crate::sourced::{Source, Sourced};

/// The largest build dimension (`build.dims.<name>`, `--dim`, an element of `build.shapes.<input>`,
/// `build.kv_cache_length`).
pub const MOST_DIMENSION: i64 = 1 << 20;

/// The most elements of a shape given with `build.shapes.<input>` / `--shape`.
pub const MOST_SHAPE_ELEMENTS: i64 = 1 << 31;

/// The most points a sweep may have (the product of its axes' value counts): each point is a case, so a
/// larger product is a typo, and it is refused before a single point is expanded.
pub const MOST_SWEEP_POINTS: usize = 10_000;

/// The kind of an outside file, which decides how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A document a person writes or a program exports as text: MODEL.toml and test manifests, plans,
    /// matrix suites and environments, tokenizers, chat templates, JSON exports read by `analyze`.
    Text,
    /// A JSON export another program wrote, read by `analyze` (trtexec's layer information, profile
    /// and times; ONNX Runtime's profile): larger than a document a person writes, mapped rather
    /// than copied when large.
    Export,
    /// Bulk data: models, TensorRT plans, input and output data, images and audio.
    Bulk,
}

/// The largest text file read (64 MiB: the largest tokenizer.json of a public model is about 35 MB).
pub const MOST_TEXT_FILE_BYTES: u64 = 64 << 20;
/// The largest export read (4 GiB: trtexec's layer information of a 14,400-layer engine is 12 MB).
pub const MOST_EXPORT_FILE_BYTES: u64 = 4 << 30;
/// The largest bulk file read (64 GiB: a model or engine larger than that does not fit in a
/// benchmark machine's memory anyway).
pub const MOST_BULK_FILE_BYTES: u64 = 64 << 30;

impl FileKind {
    /// The most bytes a file of this kind may hold.
    pub fn most_bytes(self) -> u64 {
        match self {
            FileKind::Text => MOST_TEXT_FILE_BYTES,
            FileKind::Export => MOST_EXPORT_FILE_BYTES,
            FileKind::Bulk => MOST_BULK_FILE_BYTES,
        }
    }

    fn described(self) -> &'static str {
        match self {
            FileKind::Text => "a manifest, plan, suite, template or tokenizer",
            FileKind::Export => "an export read by analyze",
            FileKind::Bulk => "a model, plan, data, image or audio file",
        }
    }
}

/// Checks that `path` (symlinks followed) is a regular file no larger than `kind` allows, without
/// opening it: a FIFO, a device or a socket is refused before anything could block on it or read it
/// without end. Returns its size. The error names the path, what it is or how large, the limit and
/// the fix.
pub fn check_outside_file(path: &Path, kind: FileKind) -> std::io::Result<u64> {
    let meta = std::fs::metadata(path)?;
    let not_regular = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is {what}, not a regular file (name a regular file instead)",
                path.display()
            ),
        )
    };
    let file_type = meta.file_type();
    if file_type.is_dir() {
        return Err(not_regular("a directory"));
    }
    if !file_type.is_file() {
        use std::os::unix::fs::FileTypeExt as _;
        let what = if file_type.is_fifo() {
            "a FIFO (named pipe)"
        } else if file_type.is_char_device() {
            "a character device"
        } else if file_type.is_block_device() {
            "a block device"
        } else if file_type.is_socket() {
            "a socket"
        } else {
            "a special file"
        };
        return Err(not_regular(what));
    }
    too_large(path, kind, meta.len())?;
    Ok(meta.len())
}

fn too_large(path: &Path, kind: FileKind, size: u64) -> std::io::Result<()> {
    if size <= kind.most_bytes() {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} holds more than {} bytes ({} MiB), the limit for {} (trtmc_core::limits); name a smaller file",
            path.display(),
            kind.most_bytes(),
            kind.most_bytes() >> 20,
            kind.described()
        ),
    ))
}

/// Reads an outside file that a user named: [`check_outside_file`] first, then at most the limit's
/// bytes (a file that grows while it is read is refused rather than read without end).
pub fn read_outside(path: &Path, kind: FileKind) -> std::io::Result<Vec<u8>> {
    let size = check_outside_file(path, kind)?;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(kind.most_bytes() + 1).read_to_end(&mut bytes)?;
    too_large(path, kind, bytes.len() as u64)?;
    Ok(bytes)
}

/// [`read_outside`] as UTF-8 text.
pub fn read_outside_text(path: &Path, kind: FileKind) -> std::io::Result<String> {
    String::from_utf8(read_outside(path, kind)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

/// Where a build value came from, as a person wrote it.
fn named(key: &str, source: Source) -> String {
    match source {
        Source::Manifest => match key.split_once('.') {
            Some((table, name)) => format!("MODEL.toml [build.{table}] {name}"),
            None => format!("MODEL.toml [build] {key}"),
        },
        Source::Case => format!("the test case's build.{key}"),
        Source::Plan => format!("the plan's build.{key}"),
        Source::Sweep => format!("--sweep build.{key}"),
        Source::Cli if key.starts_with("shapes.") => {
            format!("--shape {}", key.trim_start_matches("shapes."))
        }
        Source::Cli => format!("--dim {}", key.trim_start_matches("dims.")),
        Source::Set | Source::Default => format!("--set build.{key}"),
    }
}

/// Checks every resolved build dimension and shape, whatever its source: `kv_cache_length` and
/// `dims.<name>` from 1 to [`MOST_DIMENSION`], each element of `shapes.<input>` from 0 to
/// [`MOST_DIMENSION`] with at most [`MOST_SHAPE_ELEMENTS`] elements in all.
pub fn check_build_values(build: &BTreeMap<String, Sourced<Value>>) -> Result<(), String> {
    for (key, sourced) in build {
        let value = &sourced.value;
        if key == "kv_cache_length" || key.starts_with("dims.") {
            if !value
                .as_i64()
                .is_some_and(|n| (1..=MOST_DIMENSION).contains(&n))
            {
                return Err(format!(
                    "{} = {value}: give a whole number from 1 to {MOST_DIMENSION}",
                    named(key, sourced.source)
                ));
            }
        } else if let Some(input) = key.strip_prefix("shapes.") {
            let dims: Option<Vec<i64>> = value
                .as_array()
                .and_then(|a| a.iter().map(Value::as_i64).collect());
            let Some(dims) = dims else {
                return Err(format!(
                    "{} = {value}: give a list of whole numbers, e.g. [1, 3, 224, 224]",
                    named(key, sourced.source)
                ));
            };
            check_shape(&dims).map_err(|why| {
                format!(
                    "{} = {value} (input `{input}`): {why}",
                    named(key, sourced.source)
                )
            })?;
        }
    }
    Ok(())
}

/// Checks one concrete shape: each dimension from 0 to [`MOST_DIMENSION`], at most
/// [`MOST_SHAPE_ELEMENTS`] elements. `Err` says why, without naming the shape.
pub fn check_shape(dims: &[i64]) -> Result<(), String> {
    if let Some(d) = dims.iter().find(|d| !(0..=MOST_DIMENSION).contains(*d)) {
        return Err(format!(
            "dimension {d} is outside 0 to {MOST_DIMENSION}; give each dimension a whole number in that range"
        ));
    }
    if shape_elements(dims).is_none_or(|n| n > MOST_SHAPE_ELEMENTS as u64) {
        return Err(format!(
            "more than {MOST_SHAPE_ELEMENTS} elements (2³¹): one tensor of it could not be allocated; give a smaller shape"
        ));
    }
    Ok(())
}

/// The number of elements of a shape, `None` when a dimension is negative or the product overflows.
pub fn shape_elements(dims: &[i64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |n, &d| {
        u64::try_from(d).ok().and_then(|d| n.checked_mul(d))
    })
}

/// The default bound of a case's estimated tensor memory (inputs and outputs of one call): 16 GiB.
pub const DEFAULT_MOST_TENSOR_GIB: f64 = 16.0;
/// The flag that raises [`DEFAULT_MOST_TENSOR_GIB`].
pub const TENSOR_MEMORY_FLAG: &str = "--max-tensor-memory-gib";

/// One tensor of a case's memory estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorEstimate {
    /// `input x`, `output y`, `KV cache`.
    pub what: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Refuses a case whose tensors would take more than `most_gib` GiB, naming the largest ones and
/// the flag that raises the bound.
pub fn check_tensor_memory(tensors: &[TensorEstimate], most_gib: f64) -> Result<(), String> {
    let total = tensors
        .iter()
        .fold(0u64, |sum, t| sum.saturating_add(t.bytes));
    let most = most_gib * f64::from(1u32 << 30);
    if (total as f64) <= most {
        return Ok(());
    }
    let mut largest: Vec<&TensorEstimate> = tensors.iter().collect();
    largest.sort_by_key(|b| std::cmp::Reverse(b.bytes));
    let named: Vec<String> = largest
        .iter()
        .take(3)
        .map(|t| format!("{} {}", t.what, gib_text(t.bytes)))
        .collect();
    Err(format!(
        "the case's tensors would take about {} ({}), more than the {most_gib} GiB bound; give smaller shapes (--shape, build.shapes, build.dims) or raise the bound with {TENSOR_MEMORY_FLAG}",
        gib_text(total),
        named.join(", ")
    ))
}

fn gib_text(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// The budget of a chat template's rendering: the engine's fuel (about one unit per instruction it
/// executes; a real chat template spends a few thousand, ten million take about a second).
pub const TEMPLATE_FUEL: u64 = 10_000_000;
/// The largest rendered chat prompt: 4 MiB, far above any context a model takes.
pub const MOST_TEMPLATE_OUTPUT_BYTES: usize = 4 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn one(key: &str, value: Value, source: Source) -> BTreeMap<String, Sourced<Value>> {
        BTreeMap::from([(key.to_string(), Sourced::new(value, source))])
    }

    const SOURCES: [Source; 6] = [
        Source::Manifest,
        Source::Case,
        Source::Plan,
        Source::Set,
        Source::Sweep,
        Source::Cli,
    ];

    proptest! {
        /// A dimension is accepted exactly when it is within the table, whatever its source, and a
        /// refusal names where it came from.
        #[test]
        fn dimensions_are_bounded_whatever_their_source(
            n in prop_oneof![any::<i64>(), -2i64..=MOST_DIMENSION + 2],
            source in 0usize..SOURCES.len(),
            key in prop_oneof![Just("kv_cache_length"), Just("dims.batch")],
        ) {
            let source = SOURCES[source];
            let checked = check_build_values(&one(key, json!(n), source));
            prop_assert_eq!(checked.is_ok(), (1..=MOST_DIMENSION).contains(&n));
            if let Err(e) = checked {
                let trimmed = key.trim_start_matches("dims.");
                prop_assert!(e.contains(trimmed), "{}", e);
            }
        }

        /// A shape passes exactly when every dimension is in range and the product fits, and the
        /// check never overflows.
        #[test]
        fn shapes_are_bounded_whatever_their_source(
            dims in proptest::collection::vec(
                prop_oneof![any::<i64>(), -1i64..=70_000, Just(i64::MAX), Just(65_536i64)],
                0..6,
            ),
            source in 0usize..SOURCES.len(),
        ) {
            let source = SOURCES[source];
            let checked = check_build_values(&one("shapes.image", json!(dims), source));
            let in_range = dims.iter().all(|d| (0..=MOST_DIMENSION).contains(d));
            let fits = dims
                .iter()
                .try_fold(1i128, |n, &d| n.checked_mul(i128::from(d)))
                .is_some_and(|n| n <= i128::from(MOST_SHAPE_ELEMENTS));
            prop_assert_eq!(checked.is_ok(), in_range && fits);
        }
    }

    #[test]
    fn the_issue_cases_are_refused_naming_the_source() {
        let e = check_build_values(&one(
            "shapes.image",
            json!([-1, 3, 64, 64]),
            Source::Manifest,
        ))
        .expect_err("negative");
        assert!(
            e.contains("MODEL.toml [build.shapes] image") && e.contains("-1"),
            "{e}"
        );
        let e = check_build_values(&one("kv_cache_length", json!(10_000_000), Source::Manifest))
            .expect_err("kv");
        assert!(
            e.contains("kv_cache_length") && e.contains("1048576"),
            "{e}"
        );
        let e = check_build_values(&one(
            "shapes.image",
            json!([1, 3, 65536, 65536]),
            Source::Case,
        ))
        .expect_err("too many elements");
        assert!(e.contains("2³¹"), "{e}");
        assert!(check_build_values(&one("shapes.x", json!("1x3"), Source::Plan)).is_err());
        assert!(
            check_build_values(&one("shapes.x", json!([1, 3, 224, 224]), Source::Plan)).is_ok()
        );
    }

    #[test]
    fn tensor_memory_names_the_largest_and_the_flag() {
        let tensors = [
            TensorEstimate {
                what: "input x".into(),
                bytes: 16 << 30,
            },
            TensorEstimate {
                what: "output y".into(),
                bytes: 1 << 30,
            },
        ];
        let e = check_tensor_memory(&tensors, DEFAULT_MOST_TENSOR_GIB).expect_err("too much");
        assert!(
            e.contains("input x 16.0 GiB") && e.contains(TENSOR_MEMORY_FLAG),
            "{e}"
        );
        assert!(check_tensor_memory(&tensors, 32.0).is_ok());
    }

    #[test]
    fn special_and_oversized_files_are_refused_before_reading() {
        let t = tempfile::tempdir().expect("tmp");
        for (path, what) in [
            (Path::new("/dev/zero"), "character device"),
            (t.path(), "directory"),
        ] {
            let e = read_outside(path, FileKind::Text).expect_err("special");
            assert!(e.to_string().contains(what), "{e}");
        }
        let fifo = t.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let e = read_outside(&fifo, FileKind::Text).expect_err("fifo");
        assert!(e.to_string().contains("FIFO"), "{e}");
        let big = t.path().join("big.toml");
        let f = std::fs::File::create(&big).expect("create");
        f.set_len(MOST_TEXT_FILE_BYTES + 1).expect("sparse");
        let e = read_outside(&big, FileKind::Text).expect_err("big");
        assert!(e.to_string().contains("name a smaller file"), "{e}");
        assert!(check_outside_file(&big, FileKind::Bulk).is_ok());
        let link = t.path().join("link.toml");
        let real = t.path().join("real.toml");
        std::fs::write(&real, "x = 1").expect("write");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert_eq!(
            read_outside_text(&link, FileKind::Text).expect("read"),
            "x = 1"
        );
    }
}
