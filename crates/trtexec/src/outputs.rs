//! The `--exportOutput` file: the output tensors of trtexec's last query, as trtexec writes them:
//!
//! ```text
//! [
//!   { "name" : "y"
//!   , "dimensions" : "1x10"
//!   , "values" : [ 0.1, 0.2, -nan, inf ]
//!   }
//! , { "name" : "z" ... }
//! ]
//! ```
//!
//! trtexec prints values with C++ streams, so non-finite values come out as the bare words `nan`,
//! `-nan`, `inf`, `-inf` (not JSON), and names are not escaped. Real JSON is tried first; the
//! line-oriented fallback reads trtexec's own layout.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrtexecError};

/// One output tensor of `--exportOutput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputTensor {
    /// The output's name in the engine (the ONNX graph's output name).
    pub name: String,
    /// The `dimensions` string read as numbers (`1x10` → `[1, 10]`; `""` or `scalar` → `[]`).
    pub dims: Vec<u64>,
    /// Row-major values; non-finite ones kept as NaN or ±infinity.
    pub values: Vec<f64>,
}

#[derive(Deserialize)]
struct JsonRecord {
    name: String,
    dimensions: String,
    values: Vec<f64>,
}

/// Parses the text of an `--exportOutput` file; `what` names it in errors.
pub fn parse_outputs(text: &str, what: &str) -> Result<Vec<OutputTensor>> {
    let unparsable = |detail: String| TrtexecError::Unparsable {
        what: what.to_string(),
        detail,
    };
    let tensors = match serde_json::from_str::<Vec<JsonRecord>>(text) {
        Ok(records) => records
            .into_iter()
            .map(|r| {
                Ok(OutputTensor {
                    dims: parse_dims(&r.dimensions)
                        .ok_or_else(|| bad_dims(&r.name, &r.dimensions))?,
                    name: r.name,
                    values: r.values,
                })
            })
            .collect::<std::result::Result<Vec<_>, String>>(),
        Err(_) => parse_layout(text),
    }
    .map_err(|e| {
        unparsable(format!(
            "{e}. Expected trtexec's --exportOutput: [ {{ \"name\" : …, \"dimensions\" : \"AxB\", \"values\" : [ … ] }}, … ]"
        ))
    })?;
    if tensors.is_empty() {
        return Err(unparsable("it lists no output tensor".into()));
    }
    for t in &tensors {
        let expected = t.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        if expected != Some(t.values.len() as u64) {
            let expected = expected.map_or("too many".to_string(), |n| n.to_string());
            return Err(unparsable(format!(
                "tensor `{}` has dimensions {:?} ({expected} values) but lists {} values",
                t.name,
                t.dims,
                t.values.len()
            )));
        }
    }
    Ok(tensors)
}

/// Reads an `--exportOutput` file.
pub fn read_outputs(path: &Path) -> Result<Vec<OutputTensor>> {
    let bytes = std::fs::read(path).map_err(|source| TrtexecError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    parse_outputs(
        &String::from_utf8_lossy(&bytes),
        &format!("the --exportOutput file {}", path.display()),
    )
}

fn bad_dims(name: &str, dims: &str) -> String {
    format!("tensor `{name}` has dimensions {dims:?}, expected numbers joined by 'x'")
}

fn parse_dims(text: &str) -> Option<Vec<u64>> {
    let text = text.trim();
    if text.is_empty() || text == "scalar" {
        return Some(Vec::new());
    }
    text.split('x').map(|d| d.trim().parse().ok()).collect()
}

/// A value as C++ streams print it.
fn parse_value(token: &str) -> Option<f64> {
    let t = token.trim();
    match t
        .trim_start_matches(['-', '+'])
        .to_ascii_lowercase()
        .as_str()
    {
        "nan" | "nan(ind)" => return Some(f64::NAN),
        "inf" | "infinity" => {
            return Some(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        _ => {}
    }
    t.parse().ok()
}

/// The text after `"key" : "` up to the last `"` of the line (names are not escaped).
fn quoted_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\""))?;
    let rest = &line[start + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.rfind('"')?;
    Some(&rest[..end])
}

/// trtexec's own layout: one field per line, values on one line between `[` and `]`.
fn parse_layout(text: &str) -> std::result::Result<Vec<OutputTensor>, String> {
    let mut tensors = Vec::new();
    let mut name: Option<String> = None;
    let mut dims: Option<Vec<u64>> = None;
    for (number, line) in text.lines().enumerate() {
        let at = || format!("line {}", number + 1);
        if let Some(n) = quoted_field(line, "name") {
            if name.is_some() {
                return Err(format!("{}: a new tensor starts before `values`", at()));
            }
            name = Some(n.to_string());
            dims = None;
        } else if let Some(d) = quoted_field(line, "dimensions") {
            let n = name
                .as_deref()
                .ok_or_else(|| format!("{}: dimensions before a name", at()))?;
            dims = Some(parse_dims(d).ok_or_else(|| format!("{}: {}", at(), bad_dims(n, d)))?);
        } else if let Some(start) = line.find("\"values\"") {
            let n = name
                .take()
                .ok_or_else(|| format!("{}: values before a name", at()))?;
            let d = dims
                .take()
                .ok_or_else(|| format!("{}: tensor `{n}` has no dimensions", at()))?;
            let rest = &line[start..];
            let open = rest
                .find('[')
                .ok_or_else(|| format!("{}: values have no '['", at()))?;
            let close = rest
                .rfind(']')
                .filter(|c| *c > open)
                .ok_or_else(|| format!("{}: values have no closing ']' on their line", at()))?;
            let inner = rest[open + 1..close].trim();
            let values = if inner.is_empty() {
                Vec::new()
            } else {
                inner
                    .split(',')
                    .map(|v| {
                        parse_value(v).ok_or_else(|| {
                            format!("{}: `{}` in tensor `{n}` is not a number", at(), v.trim())
                        })
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?
            };
            tensors.push(OutputTensor {
                name: n,
                dims: d,
                values,
            });
        }
    }
    if let Some(n) = name {
        return Err(format!("tensor `{n}` has no values"));
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRTEXEC_LAYOUT: &str = "[\n  { \"name\" : \"y\"\n  , \"dimensions\" : \"1x4\"\n  , \"values\" : [ 0.5, -1e-05, nan, -inf ]\n  }\n, { \"name\" : \"odd \"name\"\"\n  , \"dimensions\" : \"2\"\n  , \"values\" : [ 1, 2 ]\n  }\n]\n";

    #[test]
    fn reads_trtexecs_layout_with_bare_non_finite_values() {
        let t = parse_outputs(TRTEXEC_LAYOUT, "o.json").expect("parses");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].name, "y");
        assert_eq!(t[0].dims, vec![1, 4]);
        assert_eq!(t[0].values[..2], [0.5, -1e-5]);
        assert!(t[0].values[2].is_nan());
        assert_eq!(t[0].values[3], f64::NEG_INFINITY);
        assert_eq!(t[1].name, "odd \"name\"");
        assert_eq!(t[1].values, vec![1.0, 2.0]);
    }

    #[test]
    fn reads_real_json_too() {
        let text = r#"[{"name": "y", "dimensions": "2x1", "values": [1.5, 2.5]}]"#;
        let t = parse_outputs(text, "o.json").expect("json");
        assert_eq!(t[0].dims, vec![2, 1]);
        assert_eq!(t[0].values, vec![1.5, 2.5]);
    }

    #[test]
    fn refuses_counts_that_do_not_match_and_names_the_tensor() {
        let text = r#"[{"name": "y", "dimensions": "1x3", "values": [1, 2]}]"#;
        let err = parse_outputs(text, "o.json").expect_err("count");
        let message = err.to_string();
        assert!(
            message.contains("`y`") && message.contains("3 values") && message.contains("o.json"),
            "{message}"
        );
        for bad in [
            "",
            "[]",
            "{\"name\" : \"y\"",
            "[ { \"name\" : \"y\"\n , \"dimensions\" : \"1xq\"\n , \"values\" : [ 1 ]\n } ]",
            "[ { \"name\" : \"y\"\n , \"dimensions\" : \"1\"\n , \"values\" : [ one ]\n } ]",
        ] {
            assert!(parse_outputs(bad, "o.json").is_err(), "{bad:?}");
        }
    }
}
