//! Readers for golden data (inputs and reference outputs): NumPy `.npy` and `.npz`, and raw little-endian
//! binaries described by a JSON index.
//!
//! `.npy` is read here rather than through `npyz`: that crate multiplies shape dimensions unchecked (a
//! hostile header panics in debug builds) and leaves Fortran order to the caller. This reader supports
//! format versions 1.0, 2.0 and 3.0, the element types f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8 and b1 in either
//! byte order, C and Fortran order (Fortran data is reordered to C order), checks the data length against
//! the shape, and refuses structured, string, object (pickled) and complex arrays with a message.
//!
//! `.npz` is a zip of `.npy` members (`np.savez` stores, `np.savez_compressed` deflates); each member
//! becomes a tensor named after the member without `.npy`.
//!
//! The raw index (`*.json`) is `{"outputs": [{"name", "dtype", "shape", "file"}]}` (`"inputs"` is accepted
//! for input sets); `dtype` is one of f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool; `file` is
//! relative to the index's folder and holds exactly `product(shape) * size(dtype)` little-endian bytes.

use serde::Deserialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use trtmc_core::accuracy::{ElementType, Tensor, element_count};

/// The largest `.npy` header accepted (NumPy writes a few hundred bytes).
const MAX_HEADER_LEN: usize = 1 << 20;

/// A golden-data file that cannot be read. Every message names the file (or member) and the problem.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file, as shown to the user.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A `.npy` file (or `.npz` member) whose header or data is not NumPy's format.
    #[error("{path}: not a .npy file: {message}")]
    Npy {
        /// The file or archive member.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A `.npz` file that is not a readable zip archive of `.npy` members.
    #[error("{path}: not a readable .npz archive: {message}")]
    Npz {
        /// The archive.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A JSON index of raw files that is malformed or names files that do not match it.
    #[error("{path}: raw data index: {message}")]
    Index {
        /// The index file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A file whose extension names no golden-data format.
    #[error(
        "{path}: unknown golden data format; use .npy, .npz, or a .json index of raw little-endian files"
    )]
    UnknownFormat {
        /// The file.
        path: String,
    },
}

/// Why a `.npy` header dict cannot be read; each message says where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// A punctuation mark of the dict is missing.
    #[error("expected '{expected}' at byte {at}")]
    Expected {
        /// The mark wanted.
        expected: char,
        /// Its byte offset in the header.
        at: usize,
    },
    /// A key or a `descr` value is not a quoted string.
    #[error("expected a quoted string at byte {at}")]
    ExpectedString {
        /// The byte offset in the header.
        at: usize,
    },
    /// A quoted string holds bytes that are not UTF-8.
    #[error("string is not UTF-8")]
    StringNotUtf8,
    /// A quoted string runs to the end of the header.
    #[error("unterminated string")]
    Unterminated,
    /// `fortran_order` is neither `True` nor `False`.
    #[error("expected True or False at byte {at}")]
    ExpectedBoolean {
        /// The byte offset in the header.
        at: usize,
    },
    /// A dimension of `shape` is not a whole number.
    #[error("bad dimension at byte {at}")]
    BadDimension {
        /// The byte offset of the dimension.
        at: usize,
    },
    /// A key NumPy does not write.
    #[error("unexpected key '{key}'")]
    UnexpectedKey {
        /// The key found.
        key: String,
    },
    /// One of `descr`, `fortran_order`, `shape` is missing.
    #[error("missing '{key}'")]
    Missing {
        /// The missing key.
        key: &'static str,
    },
    /// `descr` is empty.
    #[error("empty 'descr'")]
    EmptyDescr,
    /// `descr` is a structured type.
    #[error("'descr' {descr:?} is not a plain numeric type (structured arrays are not supported)")]
    NotPlain {
        /// The `descr` value.
        descr: String,
    },
    /// Python objects, which NumPy pickles.
    #[error(
        "element type 'O' (Python objects) is pickled and cannot be read; save strings as fixed-width text, e.g. np.save(f, a.astype(str))"
    )]
    Pickled,
    /// A numeric type this reader does not decode.
    #[error(
        "element type '{code}' is not supported; save the array as float16/32/64, an integer type or bool"
    )]
    UnsupportedType {
        /// The type code after the byte-order mark.
        code: String,
    },
    /// A string type without a readable width.
    #[error("'descr' {descr:?} has no string width")]
    NoStringWidth {
        /// The `descr` value.
        descr: String,
    },
    /// A string type wider than memory can address.
    #[error("'descr' {descr:?} is too wide")]
    TooWide {
        /// The `descr` value.
        descr: String,
    },
}

/// Read golden tensors from a path, by extension: `.npy` (one tensor named after the file stem), `.npz`, or
/// a `.json` raw index.
pub fn read_golden(path: &Path) -> Result<Vec<Tensor>, GoldenError> {
    let shown = path.display().to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => {
            let bytes = read_file(path)?;
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("output")
                .to_string();
            Ok(vec![read_npy(&bytes, &name, &shown)?])
        }
        Some("npz") => read_npz(&read_file(path)?, &shown),
        Some("json") => read_raw_index(path),
        _ => Err(GoldenError::UnknownFormat { path: shown }),
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, GoldenError> {
    trtmc_core::limits::read_outside(path, trtmc_core::limits::FileKind::Bulk).map_err(|source| {
        GoldenError::Io {
            path: path.display().to_string(),
            source,
        }
    })
}

/// Parse `.npy` bytes into a tensor called `name`; `shown` names the source in errors.
pub fn read_npy(bytes: &[u8], name: &str, shown: &str) -> Result<Tensor, GoldenError> {
    let err = |message: String| GoldenError::Npy {
        path: shown.to_string(),
        message,
    };
    let rest = bytes
        .strip_prefix(b"\x93NUMPY")
        .ok_or_else(|| err("missing the \\x93NUMPY magic".into()))?;
    let (&major, rest) = rest
        .split_first()
        .ok_or_else(|| err("truncated before the version".into()))?;
    let (_minor, rest) = rest
        .split_first()
        .ok_or_else(|| err("truncated before the version".into()))?;
    let (header_len, rest) = match major {
        1 => {
            let (len, rest) =
                split_at_checked(rest, 2).ok_or_else(|| err("truncated header length".into()))?;
            (u16::from_le_bytes([len[0], len[1]]) as usize, rest)
        }
        2 | 3 => {
            let (len, rest) =
                split_at_checked(rest, 4).ok_or_else(|| err("truncated header length".into()))?;
            (
                u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize,
                rest,
            )
        }
        v => {
            return Err(err(format!(
                "format version {v} is not supported (1, 2 and 3 are)"
            )));
        }
    };
    if header_len > MAX_HEADER_LEN {
        return Err(err(format!(
            "header of {header_len} bytes is implausibly large"
        )));
    }
    let (header, data) = split_at_checked(rest, header_len)
        .ok_or_else(|| err("file ends inside the header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| err("header is not UTF-8 text".into()))?;
    let header = parse_header(header).map_err(|m| err(format!("header: {m}")))?;
    let count = element_count(&header.shape).ok_or_else(|| {
        err(format!(
            "shape {:?} has more elements than this machine can address",
            header.shape
        ))
    })?;
    let needed = count
        .checked_mul(header.width)
        .ok_or_else(|| err("data size overflows".into()))?;
    if data.len() != needed {
        return Err(err(format!(
            "shape {:?} of {} needs {needed} data bytes, the file has {}",
            header.shape,
            header.dtype,
            data.len()
        )));
    }
    if header.dtype == ElementType::String {
        let mut strings =
            decode_strings(data, header.width, header.unicode, header.big_endian).map_err(err)?;
        if header.fortran_order && header.shape.len() > 1 {
            strings = fortran_to_c(&strings, &header.shape);
        }
        return Tensor::new_strings(name, header.shape, strings).map_err(|e| err(e.to_string()));
    }
    let mut values = decode(data, header.dtype, header.big_endian);
    if header.fortran_order && header.shape.len() > 1 {
        values = fortran_to_c(&values, &header.shape);
    }
    Tensor::new(name, header.dtype, header.shape, values).map_err(|e| err(e.to_string()))
}

/// NumPy's fixed-width strings: `U<n>` (n UTF-32 code units of 4 bytes each) or `S<n>` (n bytes,
/// read as UTF-8); shorter strings are padded with NULs, which are dropped.
fn decode_strings(
    data: &[u8],
    width: usize,
    unicode: bool,
    big_endian: bool,
) -> Result<Vec<String>, String> {
    if width == 0 {
        // `U0`/`S0`: every element is the empty string (no bytes to chunk).
        return Ok(Vec::new());
    }
    data.chunks_exact(width)
        .map(|element| {
            if unicode {
                element
                    .chunks_exact(4)
                    .map(|c| {
                        let unit = [c[0], c[1], c[2], c[3]];
                        if big_endian {
                            u32::from_be_bytes(unit)
                        } else {
                            u32::from_le_bytes(unit)
                        }
                    })
                    .take_while(|&u| u != 0)
                    .map(|u| {
                        char::from_u32(u)
                            .ok_or_else(|| format!("U+{u:X} is not a Unicode character"))
                    })
                    .collect()
            } else {
                let end = element.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                String::from_utf8(element[..end].to_vec())
                    .map_err(|_| "a bytes string (dtype S) is not UTF-8 text".to_string())
            }
        })
        .collect()
}

fn split_at_checked(bytes: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    if bytes.len() >= n {
        Some(bytes.split_at(n))
    } else {
        None
    }
}

struct NpyHeader {
    dtype: ElementType,
    /// Bytes per element (a string's fixed width).
    width: usize,
    /// Strings stored as UTF-32 (`U<n>`) rather than bytes (`S<n>`).
    unicode: bool,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parse the header dict NumPy writes: `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
/// Keys may come in any order; single or double quotes are accepted.
fn parse_header(text: &str) -> Result<NpyHeader, HeaderError> {
    let mut p = Cursor {
        s: text.as_bytes(),
        i: 0,
    };
    p.skip_ws();
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.skip_ws();
        p.expect(b':')?;
        p.skip_ws();
        match key.as_str() {
            "descr" => descr = Some(p.string()?),
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => {
                return Err(HeaderError::UnexpectedKey {
                    key: other.to_string(),
                });
            }
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.skip_ws();
            p.expect(b'}')?;
            break;
        }
    }
    let descr = descr.ok_or(HeaderError::Missing { key: "descr" })?;
    let (dtype, big_endian) = parse_descr(&descr)?;
    let (width, unicode) = match string_width(&descr)? {
        Some(layout) => layout,
        None => (dtype.size(), false),
    };
    Ok(NpyHeader {
        dtype,
        width,
        unicode,
        big_endian,
        fortran_order: fortran.ok_or(HeaderError::Missing {
            key: "fortran_order",
        })?,
        shape: shape.ok_or(HeaderError::Missing { key: "shape" })?,
    })
}

fn parse_descr(descr: &str) -> Result<(ElementType, bool), HeaderError> {
    let mut chars = descr.chars();
    let order = chars.next().ok_or(HeaderError::EmptyDescr)?;
    let big_endian = match order {
        '<' | '|' | '=' => cfg!(target_endian = "big") && order == '=',
        '>' => true,
        _ => {
            return Err(HeaderError::NotPlain {
                descr: descr.to_string(),
            });
        }
    };
    let dtype = match chars.as_str() {
        "f2" => ElementType::F16,
        "f4" => ElementType::F32,
        "f8" => ElementType::F64,
        "i1" => ElementType::I8,
        "i2" => ElementType::I16,
        "i4" => ElementType::I32,
        "i8" => ElementType::I64,
        "u1" => ElementType::U8,
        "u2" => ElementType::U16,
        "u4" => ElementType::U32,
        "u8" => ElementType::U64,
        "b1" => ElementType::Bool,
        _ if string_width(descr)?.is_some() => ElementType::String,
        "O" => {
            return Err(HeaderError::Pickled);
        }
        other => {
            return Err(HeaderError::UnsupportedType {
                code: other.to_string(),
            });
        }
    };
    Ok((dtype, big_endian))
}

/// The byte width and kind of a NumPy string `descr` (`<U5`: 5 UTF-32 units, 20 bytes; `|S5`: 5
/// bytes), `None` for any other type.
fn string_width(descr: &str) -> Result<Option<(usize, bool)>, HeaderError> {
    let body = descr.trim_start_matches(['<', '>', '|', '=']);
    let (unicode, count) = match body.split_at_checked(1) {
        Some(("U", n)) => (true, n),
        Some(("S", n)) => (false, n),
        _ => return Ok(None),
    };
    let count: usize = count.parse().map_err(|_| HeaderError::NoStringWidth {
        descr: descr.to_string(),
    })?;
    let width = if unicode {
        count.checked_mul(4)
    } else {
        Some(count)
    }
    .ok_or_else(|| HeaderError::TooWide {
        descr: descr.to_string(),
    })?;
    Ok(Some((width, unicode)))
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), HeaderError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(HeaderError::Expected {
                expected: c as char,
                at: self.i,
            })
        }
    }

    fn string(&mut self) -> Result<String, HeaderError> {
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(HeaderError::ExpectedString { at: self.i }),
        };
        self.i += 1;
        let start = self.i;
        while let Some(&c) = self.s.get(self.i) {
            if c == quote {
                let text = std::str::from_utf8(&self.s[start..self.i])
                    .map_err(|_| HeaderError::StringNotUtf8)?;
                self.i += 1;
                return Ok(text.to_string());
            }
            self.i += 1;
        }
        Err(HeaderError::Unterminated)
    }

    fn boolean(&mut self) -> Result<bool, HeaderError> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(value);
            }
        }
        Err(HeaderError::ExpectedBoolean { at: self.i })
    }

    fn tuple(&mut self) -> Result<Vec<usize>, HeaderError> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            // Python 2 era files may write `3L`.
            // The loop above took ASCII digits only, so the slice is UTF-8.
            let digits = String::from_utf8_lossy(&self.s[start..self.i]);
            let dim = digits
                .parse::<usize>()
                .map_err(|_| HeaderError::BadDimension { at: start })?;
            self.eat(b'L');
            dims.push(dim);
            self.skip_ws();
            if !self.eat(b',') {
                self.skip_ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// Values of `dtype` packed in `data` (little-endian unless `big_endian`), widened to f64; a trailing
/// partial element is ignored (callers check the length).
pub fn decode(data: &[u8], dtype: ElementType, big_endian: bool) -> Vec<f64> {
    let size = dtype.size();
    if size == 0 {
        // Strings have no fixed width and are never packed raw.
        return Vec::new();
    }
    data.chunks_exact(size)
        .map(|chunk| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(chunk);
            if big_endian {
                b[..size].reverse();
            }
            match dtype {
                ElementType::F16 => f16_to_f64(u16::from_le_bytes([b[0], b[1]])),
                ElementType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                ElementType::F64 => f64::from_le_bytes(b),
                ElementType::I8 => b[0] as i8 as f64,
                ElementType::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
                ElementType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                ElementType::I64 => i64::from_le_bytes(b) as f64,
                ElementType::U8 => b[0] as f64,
                ElementType::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
                ElementType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                ElementType::U64 => u64::from_le_bytes(b) as f64,
                ElementType::Bool => f64::from(u8::from(b[0] != 0)),
                ElementType::String => f64::NAN,
            }
        })
        .collect()
}

/// IEEE 754 half precision to f64 (subnormals, infinities and NaN included).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * mantissa * 2f64.powi(-24),
        0x1f if mantissa == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => sign * (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Reorder column-major values to row-major.
fn fortran_to_c<T: Clone + Default>(values: &[T], shape: &[usize]) -> Vec<T> {
    let mut out = vec![T::default(); values.len()];
    let mut index = vec![0usize; shape.len()];
    for value in values {
        // `index` walks the array in Fortran order (first axis fastest); place it at its C offset.
        let mut c_offset = 0usize;
        for (axis, &i) in index.iter().enumerate() {
            c_offset = c_offset * shape[axis] + i;
        }
        if let Some(slot) = out.get_mut(c_offset) {
            *slot = value.clone();
        }
        for (axis, i) in index.iter_mut().enumerate() {
            *i += 1;
            if *i < shape[axis] {
                break;
            }
            *i = 0;
        }
    }
    out
}

/// Read every `.npy` member of an `.npz` archive, in archive order.
pub fn read_npz(bytes: &[u8], shown: &str) -> Result<Vec<Tensor>, GoldenError> {
    let err = |message: String| GoldenError::Npz {
        path: shown.to_string(),
        message,
    };
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| err(e.to_string()))?;
    let mut tensors = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).map_err(|e| err(e.to_string()))?;
        if member.is_dir() {
            continue;
        }
        let member_name = member.name().map_err(|e| err(e.to_string()))?.to_string();
        let name = member_name
            .strip_suffix(".npy")
            .unwrap_or(&member_name)
            .to_string();
        let mut data = Vec::new();
        // The declared size is untrusted: read with a cap instead of preallocating it.
        member
            .by_ref()
            .take(1 << 34)
            .read_to_end(&mut data)
            .map_err(|e| err(format!("member '{member_name}': {e}")))?;
        tensors.push(read_npy(&data, &name, &format!("{shown}:{member_name}"))?);
    }
    if tensors.is_empty() {
        return Err(err("the archive has no arrays".into()));
    }
    Ok(tensors)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIndex {
    #[serde(default)]
    outputs: Vec<RawEntry>,
    #[serde(default)]
    inputs: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    dtype: String,
    shape: Vec<usize>,
    file: PathBuf,
}

/// Read a raw-binary index (see the module documentation).
pub fn read_raw_index(path: &Path) -> Result<Vec<Tensor>, GoldenError> {
    let shown = path.display().to_string();
    let err = |message: String| GoldenError::Index {
        path: shown.clone(),
        message,
    };
    let text = trtmc_core::limits::read_outside_text(path, trtmc_core::limits::FileKind::Text)
        .map_err(|source| GoldenError::Io {
            path: shown.clone(),
            source,
        })?;
    let index: RawIndex = serde_json::from_str(&text).map_err(|e| {
        err(format!(
            "{e}; expected {{\"outputs\": [{{\"name\", \"dtype\", \"shape\", \"file\"}}]}}"
        ))
    })?;
    let entries = if index.outputs.is_empty() {
        index.inputs
    } else {
        index.outputs
    };
    if entries.is_empty() {
        return Err(err(
            "lists no tensors under \"outputs\" (or \"inputs\")".into()
        ));
    }
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut tensors = Vec::with_capacity(entries.len());
    for entry in entries {
        let dtype: ElementType = entry
            .dtype
            .parse()
            .map_err(|m| err(format!("tensor '{}': {m}", entry.name)))?;
        if dtype == ElementType::String {
            return Err(err(format!(
                "tensor '{}': strings have no raw binary form; give them as an .npy/.npz of numpy strings",
                entry.name
            )));
        }
        let file = folder.join(&entry.file);
        let bytes = read_file(&file)?;
        let count = element_count(&entry.shape).ok_or_else(|| {
            err(format!(
                "tensor '{}': shape {:?} is too large",
                entry.name, entry.shape
            ))
        })?;
        let needed = count.checked_mul(dtype.size());
        if needed != Some(bytes.len()) {
            return Err(err(format!(
                "tensor '{}': {} holds {} bytes, shape {:?} of {dtype} needs {}",
                entry.name,
                file.display(),
                bytes.len(),
                entry.shape,
                needed.map_or_else(|| "more than addressable".to_string(), |n| n.to_string())
            )));
        }
        let values = decode(&bytes, dtype, false);
        tensors.push(
            Tensor::new(entry.name, dtype, entry.shape, values).map_err(|e| err(e.to_string()))?,
        );
    }
    Ok(tensors)
}

/// Encode values as `.npy` (little-endian, C order) — for tests and for writing golden data.
pub fn write_npy(dtype: ElementType, shape: &[usize], raw_le: &[u8]) -> Vec<u8> {
    let descr = match dtype {
        ElementType::F16 => "<f2",
        ElementType::F32 => "<f4",
        ElementType::F64 => "<f8",
        ElementType::I8 => "|i1",
        ElementType::I16 => "<i2",
        ElementType::I32 => "<i4",
        ElementType::I64 => "<i8",
        ElementType::U8 => "|u1",
        ElementType::U16 => "<u2",
        ElementType::U32 => "<u4",
        ElementType::U64 => "<u8",
        ElementType::Bool => "|b1",
        // One byte per string: single-character strings, enough for tests.
        ElementType::String => "|S1",
    };
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let shape_text = if shape.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Pad so that the data starts on a 64-byte boundary, ending the header with a newline.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(raw_le);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A version 1.0 file with a hand-written header dict.
    fn raw_npy(header: &str, data: &[u8]) -> Vec<u8> {
        let header = format!("{header}\n");
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        npy.extend_from_slice(data);
        npy
    }

    #[test]
    fn reads_f32_f16_and_i64_npy() {
        let npy = write_npy(
            ElementType::F32,
            &[2, 2],
            &f32_bytes(&[1.0, -2.5, 3.0, 4.0]),
        );
        let t = read_npy(&npy, "y", "y.npy").expect("f32");
        assert_eq!(
            (t.shape.clone(), t.values.clone(), t.dtype),
            (vec![2, 2], vec![1.0, -2.5, 3.0, 4.0], ElementType::F32)
        );
        // 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal), +inf
        let halves: Vec<u8> = [0x3c00u16, 0xc000, 0x7bff, 0x0001, 0x7c00]
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect();
        let t = read_npy(&write_npy(ElementType::F16, &[5], &halves), "h", "h.npy").expect("f16");
        assert_eq!(
            t.values,
            vec![1.0, -2.0, 65504.0, 2f64.powi(-24), f64::INFINITY]
        );
        assert!(f16_to_f64(0x7e00).is_nan());
        let ints: Vec<u8> = [-3i64, 1 << 40]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let t = read_npy(&write_npy(ElementType::I64, &[2], &ints), "i", "i.npy").expect("i64");
        assert_eq!(t.values, vec![-3.0, 1_099_511_627_776.0]);
    }

    #[test]
    fn reads_unicode_and_bytes_strings_and_refuses_objects() {
        // np.array([["ab", "é"]]) is <U2: each string 2 UTF-32 units, NUL-padded.
        let units: Vec<u8> = ['a', 'b', 'é', '\0']
            .iter()
            .flat_map(|&c| (c as u32).to_le_bytes())
            .collect();
        let npy = raw_npy(
            "{'descr': '<U2', 'fortran_order': False, 'shape': (1, 2), }",
            &units,
        );
        let t = read_npy(&npy, "u", "u.npy").expect("unicode");
        assert_eq!(t.dtype, ElementType::String);
        assert_eq!(
            (t.shape.clone(), t.strings.clone()),
            (vec![1, 2], vec!["ab".to_string(), "é".to_string()])
        );
        let npy = raw_npy(
            "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }",
            b"hi\0yes",
        );
        let t = read_npy(&npy, "s", "s.npy").expect("bytes");
        assert_eq!(t.strings, vec!["hi".to_string(), "yes".to_string()]);
        let npy = raw_npy(
            "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
            b"\x80\x04",
        );
        let e = read_npy(&npy, "o", "o.npy").expect_err("objects");
        assert!(e.to_string().contains("astype(str)"), "{e}");
    }

    #[test]
    fn reads_big_endian_fortran_order_and_scalars() {
        // A 2x3 array [[1,2,3],[4,5,6]] stored column-major as big-endian i32.
        let column_major: Vec<u8> = [1i32, 4, 2, 5, 3, 6]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let npy = raw_npy(
            "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }",
            &column_major,
        );
        let t = read_npy(&npy, "m", "m.npy").expect("fortran");
        // Keys in another order, double quotes, Python 2 long dimensions.
        let npy = raw_npy(
            r#"{"shape": (2L, 3L), "fortran_order": False, "descr": "<f4"}"#,
            &f32_bytes(&[0.0; 6]),
        );
        assert_eq!(
            read_npy(&npy, "k", "k.npy").expect("variant header").shape,
            vec![2, 3]
        );
        assert_eq!(t.values, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let scalar = read_npy(
            &write_npy(ElementType::F64, &[], &2.5f64.to_le_bytes()),
            "s",
            "s.npy",
        )
        .expect("0-d");
        assert_eq!((scalar.shape.len(), scalar.values.clone()), (0, vec![2.5]));
    }

    #[test]
    fn refuses_bad_files_with_a_reason() {
        let good = write_npy(ElementType::F32, &[3], &f32_bytes(&[1.0, 2.0, 3.0]));
        let short = &good[..good.len() - 1];
        let e = read_npy(short, "y", "y.npy").expect_err("short");
        assert!(
            e.to_string()
                .contains("needs 12 data bytes, the file has 11"),
            "{e}"
        );
        assert!(
            read_npy(b"PK\x03\x04", "y", "y.npy")
                .expect_err("magic")
                .to_string()
                .contains("magic")
        );
        let complex = raw_npy(
            "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
            &[0; 8],
        );
        assert!(
            read_npy(&complex, "y", "y.npy")
                .expect_err("complex")
                .to_string()
                .contains("'c8'")
        );
        let structured = raw_npy(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            &[0; 4],
        );
        assert!(read_npy(&structured, "y", "y.npy").is_err());
        let huge = raw_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
            &[0; 4],
        );
        let e = read_npy(&huge, "y", "y.npy").expect_err("overflow");
        assert!(
            e.to_string()
                .contains("more elements than this machine can address"),
            "{e}"
        );
    }

    #[test]
    fn reads_npz_stored_and_deflated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ref.npz");
        let file = std::fs::File::create(&path).expect("create");
        let mut zip = zip::ZipWriter::new(file);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("logits.npy", stored).expect("member");
        zip.write_all(&write_npy(ElementType::F32, &[2], &f32_bytes(&[0.5, 1.5])))
            .expect("write");
        zip.finish().expect("finish");
        let tensors = read_golden(&path).expect("npz");
        assert_eq!(tensors.len(), 1);
        assert_eq!(
            (tensors[0].name.as_str(), tensors[0].values.clone()),
            ("logits", vec![0.5, 1.5])
        );
        std::fs::write(&path, b"not a zip").expect("write");
        assert!(
            read_golden(&path)
                .expect_err("bad zip")
                .to_string()
                .contains("not a readable .npz")
        );
    }

    #[test]
    fn reads_a_raw_index_and_checks_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("y.bin"), f32_bytes(&[1.0, 2.0, 3.0, 4.0])).expect("bin");
        let index = dir.path().join("ref.json");
        // The index of one output `y` of `dtype` and `shape` in y.bin.
        let write_index = |dtype: &str, shape: &str| {
            let text = format!(
                r#"{{"outputs":[{{"name":"y","dtype":"{dtype}","shape":{shape},"file":"y.bin"}}]}}"#
            );
            std::fs::write(&index, text).expect("index");
        };
        write_index("f32", "[2,2]");
        let t = read_golden(&index).expect("raw");
        assert_eq!(
            (t[0].shape.clone(), t[0].values.clone()),
            (vec![2, 2], vec![1.0, 2.0, 3.0, 4.0])
        );
        write_index("f32", "[3]");
        let e = read_golden(&index).expect_err("size");
        assert!(
            e.to_string()
                .contains("holds 16 bytes, shape [3] of f32 needs 12"),
            "{e}"
        );
        write_index("float", "[4]");
        assert!(
            read_golden(&index)
                .expect_err("dtype")
                .to_string()
                .contains("unknown element type 'float'")
        );
        assert!(read_golden(Path::new("x.txt")).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let good = write_npy(ElementType::F32, &[2, 3], &f32_bytes(&[1.0; 6]));
        for _ in 0..3000 {
            let mut bytes = good.clone();
            let edits = rng.random_range(1..6);
            for _ in 0..edits {
                let i = rng.random_range(0..bytes.len());
                match rng.random_range(0..3) {
                    0 => bytes[i] = rng.random(),
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i, rng.random()),
                }
                if bytes.is_empty() {
                    break;
                }
            }
            let _ = read_npy(&bytes, "f", "fuzz");
            let _ = read_npz(&bytes, "fuzz");
        }
    }
}
