//! A case's own data (`run --inputs`, `--check-outputs`): the model's declared inputs and outputs as
//! its ONNX file states them, the data-set formats trtmc reads, and the checks of data against model
//! made before any build.
//!
//! A data set is one of
//! - an `.npz` archive (`np.savez`), one tensor per member, named after it;
//! - a `.npy` file (one tensor named after the file) or a `.json` raw index
//!   (`trtmc_golden::read_raw_index`);
//! - a folder of `NAME.npy` files;
//! - a folder in the ONNX backend-test layout: `input_N.pb` (with `--inputs`) or `output_N.pb` (with
//!   `--check-outputs`), each a serialized `TensorProto`; an unnamed one takes the name of the model's
//!   N-th input or output. A folder holding `test_data_set_*` folders is one data set per such folder;
//! - trtexec's `--loadInputs` list, `name:file.bin[,name:file.bin…]` (split at `,`, each item at its
//!   last `:`, a name may be wrapped in single quotes): raw little-endian values of the type the model
//!   declares, in the shape it declares (a dynamic dimension needs `--shape`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use prost::Message as _;
use trtmc_core::accuracy::{ElementType, Tensor};
use trtmc_core::data::{DataSetRecord, DataTensor};

use crate::tensor::{DType, Dim};

/// A declared model input or output, read from the ONNX file.
#[derive(Debug, Clone)]
pub struct Declared {
    /// The tensor's name in the graph (what a data set's tensors must be named).
    pub name: String,
    /// The ONNX `TensorProto.DataType` number (0 when the file does not say).
    pub elem_type: i32,
    /// The element type trtmc's runners handle, when it is one of them.
    pub dtype: Option<DType>,
    /// Whether the file declares a shape at all (outputs often do not).
    pub has_shape: bool,
    /// The declared dimensions, fixed or symbolic (empty when `has_shape` is false).
    pub dims: Vec<Dim>,
    /// Per axis: whether the dimension is dynamic without a name (`Dim::Symbol` holds a made-up one).
    pub unnamed: Vec<bool>,
}

impl Declared {
    /// `f32[1,3,N]`, dynamic dimensions by name (an unnamed one as `?`).
    pub fn describe_type(&self) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .zip(&self.unnamed)
            .map(|(d, &unnamed)| {
                if unnamed {
                    "?".to_string()
                } else {
                    d.to_string()
                }
            })
            .collect();
        let shape = if self.has_shape {
            format!("[{}]", dims.join(","))
        } else {
            "[shape not declared]".to_string()
        };
        format!("{}{shape}", onnx_type_name(self.elem_type))
    }
}

/// The inputs (initializers excluded) and outputs the ONNX file declares.
pub fn declared_io(onnx: &Path) -> anyhow::Result<(Vec<Declared>, Vec<Declared>)> {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
    use tract_onnx::pb::type_proto::Value as TypeValue;
    use tract_onnx::prelude::Framework as _;
    let proto = tract_onnx::onnx()
        .proto_model_for_path(onnx)
        .with_context(|| format!("cannot read {}", onnx.display()))?;
    let graph = proto
        .graph
        .with_context(|| format!("{} has no graph", onnx.display()))?;
    let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let convert = |v: &tract_onnx::pb::ValueInfoProto| -> Declared {
        let mut declared = Declared {
            name: v.name.clone(),
            elem_type: 0,
            dtype: None,
            has_shape: false,
            dims: Vec::new(),
            unnamed: Vec::new(),
        };
        if let Some(TypeValue::TensorType(t)) = v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            declared.elem_type = t.elem_type;
            declared.dtype = onnx_dtype(t.elem_type);
            if let Some(shape) = &t.shape {
                declared.has_shape = true;
                for (axis, d) in shape.dim.iter().enumerate() {
                    let (dim, unnamed) = match &d.value {
                        Some(DimValue::DimValue(n)) if *n >= 0 => (Dim::Fixed(*n), false),
                        Some(DimValue::DimParam(p)) if !p.is_empty() => {
                            (Dim::Symbol(p.clone()), false)
                        }
                        _ => (Dim::Symbol(format!("{}_dim{axis}", v.name)), true),
                    };
                    declared.dims.push(dim);
                    declared.unnamed.push(unnamed);
                }
            }
        }
        declared
    };
    let inputs = graph
        .input
        .iter()
        .filter(|v| !initializers.contains(&v.name.as_str()))
        .map(convert)
        .collect();
    let outputs = graph.output.iter().map(convert).collect();
    Ok((inputs, outputs))
}

/// ONNX `TensorProto.DataType` numbers trtmc's runners handle.
pub fn onnx_dtype(elem_type: i32) -> Option<DType> {
    Some(match elem_type {
        1 => DType::F32,
        2 => DType::U8,
        6 => DType::I32,
        7 => DType::I64,
        8 => DType::Str,
        9 => DType::Bool,
        10 => DType::F16,
        11 => DType::F64,
        _ => return None,
    })
}

/// The element type data of ONNX type `elem_type` is stored as, when trtmc can read it.
pub fn onnx_element_type(elem_type: i32) -> Option<ElementType> {
    Some(match elem_type {
        1 => ElementType::F32,
        2 => ElementType::U8,
        3 => ElementType::I8,
        4 => ElementType::U16,
        5 => ElementType::I16,
        6 => ElementType::I32,
        7 => ElementType::I64,
        8 => ElementType::String,
        9 => ElementType::Bool,
        10 => ElementType::F16,
        11 => ElementType::F64,
        12 => ElementType::U32,
        13 => ElementType::U64,
        _ => return None,
    })
}

/// The short name of an ONNX element type (`f32`, …; others by their ONNX name).
pub fn onnx_type_name(elem_type: i32) -> String {
    match onnx_element_type(elem_type) {
        Some(t) => t.name().to_string(),
        None => match elem_type {
            0 => "undeclared".into(),
            14 => "complex64".into(),
            15 => "complex128".into(),
            16 => "bf16".into(),
            n => format!("ONNX type {n}"),
        },
    }
}

/// What a data set feeds or checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// Inputs to feed (`run --inputs`).
    Inputs,
    /// Expected outputs to check against (`run --check-outputs`).
    Outputs,
    /// Expected outputs given under another command's flag (`compare --golden`, `tune
    /// --ref-outputs`): read as `Outputs`, and messages name that flag.
    OutputsOf(&'static str),
}

impl DataKind {
    fn flag(self) -> &'static str {
        match self {
            DataKind::Inputs => "--inputs",
            DataKind::Outputs => "--check-outputs",
            DataKind::OutputsOf(flag) => flag,
        }
    }
    fn pb_prefix(self) -> &'static str {
        match self {
            DataKind::Inputs => "input_",
            DataKind::Outputs | DataKind::OutputsOf(_) => "output_",
        }
    }
    fn what(self) -> &'static str {
        match self {
            DataKind::Inputs => "input",
            DataKind::Outputs | DataKind::OutputsOf(_) => "output",
        }
    }
}

const FORMATS: &str = "an .npz, a .npy, a .json raw index, a folder of NAME.npy or input_N.pb/output_N.pb files, a folder of test_data_set_* folders, or trtexec's name:file.bin list";

/// Why a data set named on the command line (`--inputs`, `--check-outputs`, …) cannot be read; the
/// message names the flag and the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum DataReadError {
    /// A file that is not a data set of a format trtmc reads.
    #[error("{flag} {spec}: {source} (give {FORMATS})")]
    Unreadable {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
        /// Why it cannot be read.
        source: Box<trtmc_golden::GoldenError>,
    },
    /// Something that is neither a folder nor a regular file (a FIFO, a device).
    #[error("{flag} {spec}: {source} (give {FORMATS})")]
    NotAFile {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
        /// Why it is refused.
        source: std::io::Error,
    },
    /// Nothing of that name, and no `name:file` list either.
    #[error("{flag} {spec}: no such file or folder (give {FORMATS})")]
    Missing {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
    },
    /// A folder of several `test_data_set_*` where one set is needed.
    #[error(
        "{flag} {spec}: holds {count} data sets; one forward pass uses one, name its folder (e.g. {spec}/test_data_set_0)"
    )]
    SeveralSets {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
        /// How many sets it holds.
        count: usize,
    },
    /// A folder that cannot be listed, or a file that cannot be hashed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The folder or file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A folder with neither `.pb` nor `.npy` files.
    #[error("{flag} {}: the folder holds no {prefix}N.pb and no .npy files (give {FORMATS})", dir.display())]
    EmptyFolder {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The folder.
        dir: PathBuf,
        /// `input_` or `output_`.
        prefix: &'static str,
    },
    /// A file of the set that cannot be read as its format (a `.pb` tensor, a raw file).
    #[error("{flag} {}: {reason}", file.display())]
    File {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The file, as shown (a raw item is shown as `name:file`).
        file: PathBuf,
        /// What is wrong with it, with its causes.
        reason: String,
    },
    /// An unnamed `.pb` tensor whose number the model does not declare.
    #[error(
        "{flag} {}: the tensor has no name and the model has no {what} number {number}",
        file.display()
    )]
    UnnamedTensor {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The `.pb` file.
        file: PathBuf,
        /// `input` or `output`.
        what: &'static str,
        /// The number in its file name.
        number: u64,
    },
    /// A `.npy` file of a folder that cannot be read.
    #[error("{flag} {}: {source}", file.display())]
    ReadNpy {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The `.npy` file.
        file: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A `.npy` file of a folder that does not parse (its message names the file).
    #[error("{flag} {source}")]
    Npy {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// Why it does not parse.
        source: Box<trtmc_golden::GoldenError>,
    },
    /// An item of a `name:file` list without its `:`.
    #[error("{flag} {spec}: `{item}` is not NAME:FILE (trtexec's --loadInputs syntax)")]
    NotNameFile {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
        /// The item.
        item: String,
    },
    /// An item of a `name:file` list naming no declared input (or output).
    #[error("{flag} {spec}: the model has no {what} `{name}` ({what}s: {declared})")]
    NotDeclared {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The data set as given.
        spec: String,
        /// `input` or `output`.
        what: &'static str,
        /// The name given.
        name: String,
        /// The model's declared names, comma-separated.
        declared: String,
    },
    /// A raw file for a tensor of a type trtmc cannot read from one.
    #[error(
        "{flag}: {what} `{name}` is of type {type_name}, which trtmc cannot read from a raw file"
    )]
    RawType {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// `input` or `output`.
        what: &'static str,
        /// The tensor's name.
        name: String,
        /// The declared ONNX type.
        type_name: String,
    },
    /// A raw file for a dynamic tensor without `--shape`.
    #[error(
        "{flag} {name}:{}: a raw file has no shape and {what} `{name}` is dynamic ({wants}): give it with --shape {name}:DIMS",
        file.display()
    )]
    RawDynamic {
        /// The command-line flag that named the set.
        flag: &'static str,
        /// The tensor's name.
        name: String,
        /// The raw file, as given.
        file: PathBuf,
        /// `input` or `output`.
        what: &'static str,
        /// The declared type, as [`Declared::describe_type`] writes it.
        wants: String,
    },
}

/// The data sets `spec` names, each tensor read once to learn its type and shape. `declared` (the
/// model's inputs or outputs, by `kind`) names unnamed `.pb` tensors and types raw files.
pub fn locate(
    spec: &str,
    kind: DataKind,
    declared: &[Declared],
    shapes: &BTreeMap<String, Vec<i64>>,
) -> Result<Vec<(DataSetRecord, Vec<Tensor>)>, DataReadError> {
    let path = Path::new(spec);
    let flag = kind.flag();
    if path.is_dir() {
        let mut sets: Vec<PathBuf> = read_dir(path)?
            .into_iter()
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("test_data_set_"))
            })
            .collect();
        sets.sort_by_key(|p| numbered(p, "test_data_set_"));
        if sets.is_empty() {
            return Ok(vec![folder_set(path, kind, declared)?]);
        }
        return sets
            .iter()
            .map(|set| folder_set(set, kind, declared))
            .collect();
    }
    if path.is_file() {
        let absolute = absolute(path);
        let tensors =
            trtmc_golden::read_golden(&absolute).map_err(|e| DataReadError::Unreadable {
                flag,
                spec: spec.to_string(),
                source: Box::new(e),
            })?;
        let format = absolute
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let sha = sha256(&absolute)?;
        let record = DataSetRecord {
            source: absolute.display().to_string(),
            format,
            tensors: tensors
                .iter()
                .map(|t| describe(t, &absolute, &sha))
                .collect(),
        };
        return Ok(vec![(record, tensors)]);
    }
    // Neither a folder nor a regular file, yet there: a FIFO or a device, never opened.
    if let Err(e) = trtmc_core::limits::check_outside_file(path, trtmc_core::limits::FileKind::Bulk)
        && path.exists()
    {
        return Err(DataReadError::NotAFile {
            flag,
            spec: spec.to_string(),
            source: e,
        });
    }
    if spec.contains(':') {
        return raw_list(spec, kind, declared, shapes).map(|set| vec![set]);
    }
    Err(DataReadError::Missing {
        flag,
        spec: spec.to_string(),
    })
}

/// A declared input or output of a built bundle (its manifest's spec), for reading data sets
/// against it.
pub fn declared_from_spec(spec: &crate::tensor::TensorSpec) -> Declared {
    let elem_type = match spec.dtype {
        DType::F32 => 1,
        DType::U8 => 2,
        DType::I32 => 6,
        DType::I64 => 7,
        DType::Str => 8,
        DType::Bool => 9,
        DType::F16 => 10,
        DType::F64 => 11,
    };
    Declared {
        name: spec.name.clone(),
        elem_type,
        dtype: Some(spec.dtype),
        has_shape: true,
        dims: spec.shape.clone(),
        unnamed: vec![false; spec.shape.len()],
    }
}

/// The tensors of the one data set `spec` names, in any format `run --inputs` reads (`compare`
/// makes one forward pass, so a folder of several `test_data_set_*` is refused: name one of them).
pub fn read_one_set(
    spec: &str,
    kind: DataKind,
    declared: &[Declared],
) -> Result<Vec<Tensor>, DataReadError> {
    let sets = locate(spec, kind, declared, &BTreeMap::new())?;
    let count = sets.len();
    let mut sets = sets.into_iter();
    match (sets.next(), count) {
        (Some((_, tensors)), 1) => Ok(tensors),
        _ => Err(DataReadError::SeveralSets {
            flag: kind.flag(),
            spec: spec.to_string(),
            count,
        }),
    }
}

/// Reads a data set's tensors again from its record (the worker's side of [`locate`]); each file's
/// hash must still be the one recorded at planning.
pub fn read_set(record: &DataSetRecord) -> anyhow::Result<Vec<Tensor>> {
    let mut tensors = Vec::with_capacity(record.tensors.len());
    for t in &record.tensors {
        let file = Path::new(&t.file);
        // The message only: its cause is in it already, and `{:#}` would repeat it.
        let sha = sha256(file).map_err(|e| anyhow::Error::msg(e.to_string()))?;
        if sha != t.sha256 {
            bail!(
                "{} changed after the run was planned (its SHA-256 was {}, now {sha}); run again",
                file.display(),
                t.sha256
            );
        }
        let dtype: ElementType = t.dtype.parse().map_err(anyhow::Error::msg)?;
        let tensor = match record.format.as_str() {
            "onnx-pb" => {
                let mut read = read_pb(file)?;
                read.name = t.name.clone();
                read
            }
            "raw" => raw_tensor(&t.name, file, dtype, &t.shape)?,
            "npy-folder" => {
                let bytes =
                    trtmc_core::limits::read_outside(file, trtmc_core::limits::FileKind::Bulk)
                        .with_context(|| format!("cannot read {}", file.display()))?;
                trtmc_golden::read_npy(&bytes, &t.name, &file.display().to_string())?
            }
            _ => trtmc_golden::read_golden(file)?
                .into_iter()
                .find(|read| read.name == t.name)
                .with_context(|| format!("{} no longer holds `{}`", file.display(), t.name))?,
        };
        tensors.push(tensor);
    }
    Ok(tensors)
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, DataReadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| DataReadError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(entries.flatten().map(|e| e.path()).collect())
}

/// The number after `prefix` in a file or folder name (for numeric order: 2 before 10).
fn numbered(path: &Path, prefix: &str) -> (u64, String) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let n = name
        .strip_prefix(prefix)
        .map(|rest| rest.split('.').next().unwrap_or_default())
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    (n, name)
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

fn sha256(path: &Path) -> Result<String, DataReadError> {
    trtmc_core::hash::file_sha256(path).map_err(|source| DataReadError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn describe(t: &Tensor, file: &Path, sha: &str) -> DataTensor {
    DataTensor {
        name: t.name.clone(),
        dtype: t.dtype.name().to_string(),
        shape: t.shape.clone(),
        file: file.display().to_string(),
        sha256: sha.to_string(),
    }
}

/// One folder: `input_N.pb` / `output_N.pb` files, else `NAME.npy` files.
fn folder_set(
    dir: &Path,
    kind: DataKind,
    declared: &[Declared],
) -> Result<(DataSetRecord, Vec<Tensor>), DataReadError> {
    let dir = absolute(dir);
    let files = read_dir(&dir)?;
    let with = |prefix: &str, ext: &str| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = files
            .iter()
            .filter(|p| {
                p.is_file()
                    && p.extension().and_then(|e| e.to_str()) == Some(ext)
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
            })
            .cloned()
            .collect();
        found.sort_by_key(|p| numbered(p, prefix));
        found
    };
    let pb = with(kind.pb_prefix(), "pb");
    let (format, chosen) = if !pb.is_empty() {
        ("onnx-pb", pb)
    } else {
        ("npy-folder", with("", "npy"))
    };
    if chosen.is_empty() {
        return Err(DataReadError::EmptyFolder {
            flag: kind.flag(),
            dir,
            prefix: kind.pb_prefix(),
        });
    }
    let mut tensors = Vec::with_capacity(chosen.len());
    let mut records = Vec::with_capacity(chosen.len());
    for file in &chosen {
        let mut tensor = if format == "onnx-pb" {
            let mut t = read_pb(file).map_err(|e| DataReadError::File {
                flag: kind.flag(),
                file: file.clone(),
                reason: format!("{e:#}"),
            })?;
            if t.name.is_empty() {
                let (n, _) = numbered(file, kind.pb_prefix());
                let d = usize::try_from(n)
                    .ok()
                    .and_then(|n| declared.get(n))
                    .ok_or_else(|| DataReadError::UnnamedTensor {
                        flag: kind.flag(),
                        file: file.clone(),
                        what: kind.what(),
                        number: n,
                    })?;
                t.name = d.name.clone();
            }
            t
        } else {
            let bytes = trtmc_core::limits::read_outside(file, trtmc_core::limits::FileKind::Bulk)
                .map_err(|source| DataReadError::ReadNpy {
                    flag: kind.flag(),
                    file: file.clone(),
                    source,
                })?;
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            trtmc_golden::read_npy(&bytes, &stem, &file.display().to_string()).map_err(|e| {
                DataReadError::Npy {
                    flag: kind.flag(),
                    source: Box::new(e),
                }
            })?
        };
        if tensor.name.is_empty() {
            tensor.name = "?".into();
        }
        records.push(describe(&tensor, file, &sha256(file)?));
        tensors.push(tensor);
    }
    Ok((
        DataSetRecord {
            source: dir.display().to_string(),
            format: format.to_string(),
            tensors: records,
        },
        tensors,
    ))
}

/// One serialized ONNX `TensorProto`.
pub fn read_pb(file: &Path) -> anyhow::Result<Tensor> {
    let bytes = trtmc_core::limits::read_outside(file, trtmc_core::limits::FileKind::Bulk)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let proto = tract_onnx::pb::TensorProto::decode(bytes.as_slice())
        .with_context(|| format!("{} is not a serialized ONNX TensorProto", file.display()))?;
    tensor_from_proto(&proto).with_context(|| format!("{}", file.display()))
}

/// A `TensorProto`'s values (from `raw_data` or its typed fields) as a tensor.
pub fn tensor_from_proto(proto: &tract_onnx::pb::TensorProto) -> anyhow::Result<Tensor> {
    let dtype = onnx_element_type(proto.data_type).with_context(|| {
        format!(
            "tensor `{}` is of type {}, which trtmc does not read",
            proto.name,
            onnx_type_name(proto.data_type)
        )
    })?;
    if proto.data_location == Some(1) {
        bail!(
            "tensor `{}` keeps its values in an external file, which trtmc does not read in a data set",
            proto.name
        );
    }
    let shape = proto
        .dims
        .iter()
        .map(|&d| usize::try_from(d).with_context(|| format!("negative dimension {d}")))
        .collect::<anyhow::Result<Vec<usize>>>()?;
    let count = trtmc_core::accuracy::element_count(&shape)
        .with_context(|| format!("shape {shape:?} is too large"))?;
    if dtype == ElementType::String {
        let strings = proto
            .string_data
            .iter()
            .map(|bytes| String::from_utf8(bytes.clone()))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("tensor `{}` holds a string that is not UTF-8", proto.name))?;
        return Ok(Tensor::new_strings(proto.name.clone(), shape, strings)?);
    }
    let values: Vec<f64> = if !proto.raw_data.is_empty() {
        if Some(proto.raw_data.len()) != count.checked_mul(dtype.size()) {
            bail!(
                "tensor `{}` holds {} bytes of raw data, shape {shape:?} of {dtype} needs {}",
                proto.name,
                proto.raw_data.len(),
                count * dtype.size()
            );
        }
        trtmc_golden::decode(&proto.raw_data, dtype, false)
    } else {
        match dtype {
            ElementType::F32 => proto.float_data.iter().map(|&v| f64::from(v)).collect(),
            ElementType::F64 => proto.double_data.clone(),
            ElementType::I64 => proto.int64_data.iter().map(|&v| v as f64).collect(),
            ElementType::U32 | ElementType::U64 => {
                proto.uint64_data.iter().map(|&v| v as f64).collect()
            }
            ElementType::F16 => proto
                .int32_data
                .iter()
                .map(|&v| trtmc_golden::f16_to_f64(v as u16))
                .collect(),
            _ => proto.int32_data.iter().map(|&v| f64::from(v)).collect(),
        }
    };
    Ok(Tensor::new(proto.name.clone(), dtype, shape, values)?)
}

/// trtexec's `--loadInputs` list: `name:file` items split at `,`, each at its last `:`.
fn raw_list(
    spec: &str,
    kind: DataKind,
    declared: &[Declared],
    shapes: &BTreeMap<String, Vec<i64>>,
) -> Result<(DataSetRecord, Vec<Tensor>), DataReadError> {
    let flag = kind.flag();
    let mut records = Vec::new();
    let mut tensors = Vec::new();
    for item in spec.split(',') {
        let (name, file) = item
            .rsplit_once(':')
            .ok_or_else(|| DataReadError::NotNameFile {
                flag,
                spec: spec.to_string(),
                item: item.to_string(),
            })?;
        let name = name.trim().trim_matches('\'');
        let d =
            declared
                .iter()
                .find(|d| d.name == name)
                .ok_or_else(|| DataReadError::NotDeclared {
                    flag,
                    spec: spec.to_string(),
                    what: kind.what(),
                    name: name.to_string(),
                    declared: names(declared),
                })?;
        let dtype = onnx_element_type(d.elem_type)
            .filter(|t| *t != ElementType::String)
            .ok_or_else(|| DataReadError::RawType {
                flag,
                what: kind.what(),
                name: name.to_string(),
                type_name: onnx_type_name(d.elem_type),
            })?;
        let shape: Vec<usize> = match shapes.get(name) {
            Some(s) => s.iter().map(|&v| v.max(0) as usize).collect(),
            None => d
                .dims
                .iter()
                .map(|dim| match dim {
                    Dim::Fixed(n) => Ok((*n).max(0) as usize),
                    Dim::Symbol(_) => Err(DataReadError::RawDynamic {
                        flag,
                        name: name.to_string(),
                        file: file.into(),
                        what: kind.what(),
                        wants: d.describe_type(),
                    }),
                })
                .collect::<Result<_, _>>()?,
        };
        let path = absolute(Path::new(file));
        let tensor = raw_tensor(name, &path, dtype, &shape).map_err(|e| DataReadError::File {
            flag,
            file: format!("{name}:{file}").into(),
            reason: format!("{e:#}"),
        })?;
        records.push(describe(&tensor, &path, &sha256(&path)?));
        tensors.push(tensor);
    }
    Ok((
        DataSetRecord {
            source: spec.to_string(),
            format: "raw".into(),
            tensors: records,
        },
        tensors,
    ))
}

/// A raw little-endian file of `dtype` values in `shape`.
fn raw_tensor(
    name: &str,
    file: &Path,
    dtype: ElementType,
    shape: &[usize],
) -> anyhow::Result<Tensor> {
    let bytes = trtmc_core::limits::read_outside(file, trtmc_core::limits::FileKind::Bulk)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let count = trtmc_core::accuracy::element_count(shape)
        .with_context(|| format!("shape {shape:?} is too large"))?;
    if Some(bytes.len()) != count.checked_mul(dtype.size()) {
        bail!(
            "{} holds {} bytes; `{name}` as {dtype}{shape:?} needs {}",
            file.display(),
            bytes.len(),
            count * dtype.size()
        );
    }
    Ok(Tensor::new(
        name,
        dtype,
        shape.to_vec(),
        trtmc_golden::decode(&bytes, dtype, false),
    )?)
}

fn names(declared: &[Declared]) -> String {
    let names: Vec<&str> = declared.iter().map(|d| d.name.as_str()).collect();
    names.join(", ")
}

fn given(t: &DataTensor) -> String {
    let dims: Vec<String> = t.shape.iter().map(usize::to_string).collect();
    format!("{}[{}]", t.dtype, dims.join(","))
}

/// Checks every data set against the model: each tensor names a declared input (or output), of its
/// element type, rank and fixed dimensions (and `--shape` where one is given); with `Inputs`, every
/// declared input is given and one symbolic dimension takes one value within a set. The message names
/// the tensor, what the model wants and what the data gives.
pub fn check_sets(
    sets: &[DataSetRecord],
    kind: DataKind,
    declared: &[Declared],
    shapes: &BTreeMap<String, Vec<i64>>,
) -> Result<(), Box<DataSetError>> {
    let flag = kind.flag();
    let what = kind.what();
    for set in sets {
        let mut symbols: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        for t in &set.tensors {
            let d = declared.iter().find(|d| d.name == t.name).ok_or_else(|| {
                Box::new(DataSetError::NotDeclared {
                    flag,
                    set: set.source.to_string(),
                    name: t.name.clone(),
                    what,
                    closest: trtmc_core::text::closest(
                        &t.name,
                        declared.iter().map(|d| d.name.as_str()),
                    )
                    .map(str::to_string),
                    declared: names(declared),
                })
            })?;
            let wrong = |why: String| {
                Box::new(DataSetError::Mismatch {
                    flag,
                    set: set.source.to_string(),
                    what,
                    name: t.name.clone(),
                    wants: d.describe_type(),
                    gives: given(t),
                    why,
                })
            };
            if onnx_element_type(d.elem_type).map(|e| e.name()) != Some(t.dtype.as_str()) {
                return Err(wrong(
                    "the element type differs: convert the data, e.g. with numpy's .astype".into(),
                ));
            }
            if !d.has_shape {
                continue;
            }
            if d.dims.len() != t.shape.len() {
                return Err(wrong(format!(
                    "{} dimensions, not {}",
                    d.dims.len(),
                    t.shape.len()
                )));
            }
            if kind == DataKind::Inputs
                && let Some(s) = shapes.get(&t.name)
                && s.iter()
                    .map(|&v| v.max(0) as usize)
                    .ne(t.shape.iter().copied())
            {
                return Err(wrong(format!(
                    "--shape {}:{} was given",
                    t.name,
                    shape_text(s)
                )));
            }
            for (axis, (dim, &n)) in d.dims.iter().zip(&t.shape).enumerate() {
                match dim {
                    Dim::Fixed(want) if *want as usize != n => {
                        return Err(wrong(format!("axis {axis} is fixed at {want}")));
                    }
                    Dim::Symbol(s) if !d.unnamed[axis] && kind == DataKind::Inputs => {
                        match symbols.get(s.as_str()) {
                            Some(&(v, other)) if v != n => {
                                return Err(wrong(format!(
                                    "dimension `{s}` is {v} in input `{other}`"
                                )));
                            }
                            _ => {
                                symbols.insert(s, (n, &t.name));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        if kind == DataKind::Inputs
            && let Some(missing) = declared
                .iter()
                .find(|d| !set.tensors.iter().any(|t| t.name == d.name))
        {
            return Err(Box::new(DataSetError::MissingInput {
                flag,
                set: set.source.to_string(),
                name: missing.name.clone(),
                wants: missing.describe_type(),
                given: set.tensors.iter().map(|t| t.name.clone()).collect(),
            }));
        }
    }
    Ok(())
}

/// A data set that does not fit the model; the message names the set, the tensor, what the model
/// wants and what the data gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataSetError {
    /// A tensor of the set names no declared input (or output).
    #[error(
        "{flag} {set}: `{name}` is not an {what} of the model.{} Its {what}s: {declared}",
        closest.as_ref().map(|c| format!(" Did you mean `{c}`?")).unwrap_or_default()
    )]
    NotDeclared {
        /// The command-line flag that named the set (`--inputs`, `--check-outputs`, …).
        flag: &'static str,
        /// The data set's source, as resolved.
        set: String,
        /// The tensor's name.
        name: String,
        /// `input` or `output`.
        what: &'static str,
        /// The declared name closest to `name`, when one is close.
        closest: Option<String>,
        /// The model's declared names, comma-separated.
        declared: String,
    },
    #[error(
        "{flag} {set}: {what} `{name}`: the model wants {wants}, the data gives {gives} ({why})"
    )]
    /// A tensor whose element type or shape differs from the declaration.
    Mismatch {
        /// The command-line flag that named the set (`--inputs`, `--check-outputs`, …).
        flag: &'static str,
        /// The data set's source, as resolved.
        set: String,
        /// `input` or `output`.
        what: &'static str,
        /// The tensor's name.
        name: String,
        /// The declared type, as [`Declared::describe_type`] writes it.
        wants: String,
        /// The tensor's type and shape in the data (`f32[1,3,224,224]`).
        gives: String,
        /// What differs, and how to fix it.
        why: String,
    },
    #[error(
        "{flag} {set}: the model's input `{name}` ({wants}) is not given (given: {})",
        given.join(", ")
    )]
    /// A declared input the set does not give (with `Inputs` only).
    MissingInput {
        /// The command-line flag that named the set (`--inputs`, `--check-outputs`, …).
        flag: &'static str,
        /// The data set's source, as resolved.
        set: String,
        /// The missing input's name.
        name: String,
        /// The declared type, as [`Declared::describe_type`] writes it.
        wants: String,
        /// The tensor names the set does give.
        given: Vec<String>,
    },
}

/// `1x3x224x224` (a scalar as `scalar`).
pub fn shape_text(shape: &[i64]) -> String {
    if shape.is_empty() {
        return "scalar".into();
    }
    shape
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(name: &str, elem_type: i32, dims: Vec<Dim>) -> Declared {
        let unnamed = dims
            .iter()
            .map(|d| matches!(d, Dim::Symbol(s) if s.contains("_dim")))
            .collect();
        Declared {
            name: name.into(),
            elem_type,
            dtype: onnx_dtype(elem_type),
            has_shape: true,
            dims,
            unnamed,
        }
    }

    fn set(tensors: &[(&str, &str, Vec<usize>)]) -> DataSetRecord {
        DataSetRecord {
            source: "data.npz".into(),
            format: "npz".into(),
            tensors: tensors
                .iter()
                .map(|(name, dtype, shape)| DataTensor {
                    name: name.to_string(),
                    dtype: dtype.to_string(),
                    shape: shape.clone(),
                    file: "data.npz".into(),
                    sha256: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn data_is_checked_against_the_declared_inputs() {
        let model = vec![
            declared("x", 1, vec![Dim::Symbol("x_dim0".into()), Dim::Fixed(3)]),
            declared("sr", 7, vec![]),
        ];
        let none = BTreeMap::new();
        let ok = set(&[("x", "f32", vec![2, 3]), ("sr", "i64", vec![])]);
        check_sets(std::slice::from_ref(&ok), DataKind::Inputs, &model, &none).expect("fits");
        let e = check_sets(
            &[set(&[("x", "f64", vec![2, 3]), ("sr", "i64", vec![])])],
            DataKind::Inputs,
            &model,
            &none,
        )
        .expect_err("type")
        .to_string();
        assert!(
            e.contains("input `x`: the model wants f32[?,3], the data gives f64[2,3]"),
            "{e}"
        );
        let e = check_sets(
            &[set(&[("x", "f32", vec![2, 4]), ("sr", "i64", vec![])])],
            DataKind::Inputs,
            &model,
            &none,
        )
        .expect_err("fixed dim")
        .to_string();
        assert!(e.contains("axis 1 is fixed at 3"), "{e}");
        let e = check_sets(
            &[set(&[("x", "f32", vec![2, 3])])],
            DataKind::Inputs,
            &model,
            &none,
        )
        .expect_err("missing")
        .to_string();
        assert!(e.contains("input `sr` (i64[]) is not given"), "{e}");
        let e = check_sets(
            &[set(&[("y", "f32", vec![2, 3])])],
            DataKind::Inputs,
            &model,
            &none,
        )
        .expect_err("unknown")
        .to_string();
        assert!(e.contains("`y` is not an input of the model"), "{e}");
        let shapes = BTreeMap::from([("x".to_string(), vec![1, 3])]);
        let e = check_sets(&[ok], DataKind::Inputs, &model, &shapes)
            .expect_err("--shape")
            .to_string();
        assert!(e.contains("--shape x:1x3 was given"), "{e}");
    }

    #[test]
    fn tensor_protos_decode_from_raw_and_typed_fields() {
        let mut proto = tract_onnx::pb::TensorProto {
            name: "x".into(),
            dims: vec![2],
            data_type: 1,
            float_data: vec![1.5, -2.0],
            ..Default::default()
        };
        let t = tensor_from_proto(&proto).expect("typed");
        assert_eq!(t.values, vec![1.5, -2.0]);
        proto.float_data.clear();
        proto.raw_data = [3.0f32, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            tensor_from_proto(&proto).expect("raw").values,
            vec![3.0, 4.0]
        );
        proto.raw_data.pop();
        assert!(tensor_from_proto(&proto).is_err());
        proto.data_type = 16;
        let e = tensor_from_proto(&proto).expect_err("bf16").to_string();
        assert!(format!("{e:#}").contains("bf16"), "{e:#}");
        let strings = tract_onnx::pb::TensorProto {
            name: "s".into(),
            dims: vec![1, 2],
            data_type: 8,
            string_data: vec![b"caf\xc3\xa9".to_vec(), b"".to_vec()],
            ..Default::default()
        };
        let t = tensor_from_proto(&strings).expect("strings");
        assert_eq!(t.dtype, ElementType::String);
        assert_eq!(t.strings, vec!["café".to_string(), String::new()]);
    }
}
