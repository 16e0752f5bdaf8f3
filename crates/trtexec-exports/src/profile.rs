//! `--exportProfile` reader: `[{"count": N}, {"name", "timeMs", "averageMs", "medianMs", "percentage"}, …]`.
//!
//! trtexec writes each record on its own line and copies the layer name without escaping it, so a
//! name with a quote breaks the JSON. When strict parsing fails, the reader retries on trtexec's
//! fixed line layout and says so; if that fails too, the JSON error with its line and column is
//! returned.

use serde::Deserialize;

use super::loose::{LNum, LObj, LStr, Slot};
use super::{
    Export, FormatError, describe_object_keys, describe_record_keys, first_byte, invalid_json,
};

/// One per-layer timing record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileRecord {
    /// The layer's name, as the engine calls it.
    pub name: String,
    /// `timeMs`: the layer's total time over all profiled runs, milliseconds.
    pub time_ms: Option<f64>,
    /// `averageMs`: its mean time per run, milliseconds.
    pub average_ms: Option<f64>,
    /// Absent in TensorRT 8.2-era profiles.
    pub median_ms: Option<f64>,
    /// `percentage`: its share of the summed layer times, in percent.
    pub percentage: Option<f64>,
}

/// The profile's leading `{"count": N}` record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HeaderCount {
    /// The number of profiled runs.
    Valid(u64),
    /// Present but not a positive integer.
    Invalid,
}

/// A parsed `--exportProfile` document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    /// The leading `{"count": N}` record; `None` when the file has none.
    pub header: Option<HeaderCount>,
    /// The per-layer records that could be read, in file order.
    pub records: Vec<ProfileRecord>,
    /// Problems with individual records (missing names, non-numeric times).
    pub problems: Vec<String>,
    /// Set when the strict JSON parse failed and trtexec's line layout was used instead.
    pub recovered_from: Option<String>,
    /// `schema` and `runtime` of the header record: trtmc's own profiles of other runtimes carry
    /// them (`trtmc.layer-profile/v1`, `tract`); trtexec writes neither.
    pub schema: Option<String>,
    /// See `schema`.
    pub runtime: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawRecord {
    name: LStr,
    #[serde(rename = "timeMs")]
    time_ms: LNum,
    #[serde(rename = "averageMs")]
    average_ms: LNum,
    #[serde(rename = "medianMs")]
    median_ms: LNum,
    percentage: LNum,
    count: LNum,
    schema: LStr,
    runtime: LStr,
    // Keys that tell other documents apart.
    #[serde(rename = "latencyMs")]
    latency_ms: LNum,
    #[serde(rename = "LayerType")]
    layer_type: LStr,
}

/// Reads an `--exportProfile` document.
pub fn read_profile(text: &str) -> Result<Profile, FormatError> {
    match first_byte(text) {
        Some(b'[') => {}
        Some(b'{') => {
            let keys = super::layers::object_keys(text);
            let found = if keys.iter().any(|k| k == "Layers") {
                "it looks like a layer-info export (--exportLayerInfo)".to_owned()
            } else if keys.is_empty() {
                return Err(strict_error(text));
            } else {
                describe_object_keys(&keys)
            };
            return Err(FormatError::WrongKind {
                expected: "a profile export (--exportProfile writes a list)",
                found,
            });
        }
        Some(_) => return Err(strict_error(text)),
        None => return Err(FormatError::Shape("the file is empty".to_owned())),
    }
    let records: Vec<LObj<RawRecord>> = match serde_json::from_str(text) {
        Ok(records) => records,
        Err(err) => {
            let error = invalid_json(text, &err, Export::Profile);
            // A cut-off file is reported as such, not read as far as it goes.
            if matches!(error, FormatError::Truncated { .. }) {
                return Err(error);
            }
            return match recover_trtexec_layout(text) {
                Some(mut profile) => {
                    profile.recovered_from = Some(error.to_string());
                    Ok(profile)
                }
                None => Err(error),
            };
        }
    };
    convert(records)
}

fn strict_error(text: &str) -> FormatError {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) => invalid_json(text, &e, Export::Profile),
        Ok(_) => FormatError::Shape("the document is not a list of profile records".to_owned()),
    }
}

fn convert(records: Vec<LObj<RawRecord>>) -> Result<Profile, FormatError> {
    let mut profile = Profile::default();
    let mut iter = records.into_iter().enumerate().peekable();
    // The header is the first record when it has `count` and no `name`.
    if let Some((_, LObj(Slot::Value(first)))) = iter.peek_mut()
        && first.name.0.is_missing()
        && !first.count.0.is_missing()
    {
        profile.schema = std::mem::take(&mut first.schema).0.into_value();
        profile.runtime = std::mem::take(&mut first.runtime).0.into_value();
        profile.header = Some(match first.count.0 {
            Slot::Value(c) if c >= 1.0 && c.fract() == 0.0 && c < 9.0e15 => {
                HeaderCount::Valid(c as u64)
            }
            _ => HeaderCount::Invalid,
        });
        iter.next();
    }
    for (index, rec) in iter {
        let Slot::Value(rec) = rec.0 else {
            profile
                .problems
                .push(format!("profile record {index} is not an object"));
            continue;
        };
        if rec.name.0.is_missing() && !rec.latency_ms.0.is_missing() {
            return Err(FormatError::WrongKind {
                expected: "a profile export",
                found: describe_record_keys(&["latencyMs".to_owned()])
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        if rec.name.0.is_missing() && !rec.layer_type.0.is_missing() {
            return Err(FormatError::WrongKind {
                expected: "a profile export",
                found: "it looks like a layer-info export given as a bare list (--exportLayerInfo)"
                    .to_owned(),
            });
        }
        let name = match rec.name.0 {
            Slot::Value(n) => n,
            _ => {
                profile
                    .problems
                    .push(format!("profile record {index} has no string `name`"));
                String::new()
            }
        };
        let mut number = |slot: LNum, key: &str, required: bool| -> Option<f64> {
            match slot.0 {
                Slot::Value(v) => Some(v),
                Slot::Missing if !required => None,
                _ => {
                    profile
                        .problems
                        .push(format!("profile record `{name}` has no finite numeric `{key}` (a number such as 0.0123; not a string, null, NaN or infinity)"));
                    None
                }
            }
        };
        let time_ms = number(rec.time_ms, "timeMs", true);
        let average_ms = number(rec.average_ms, "averageMs", true);
        let median_ms = number(rec.median_ms, "medianMs", false);
        let percentage = number(rec.percentage, "percentage", true);
        profile.records.push(ProfileRecord {
            name,
            time_ms,
            average_ms,
            median_ms,
            percentage,
        });
    }
    if profile.records.is_empty() {
        return Err(FormatError::Shape(
            "the profile holds no layer records".to_owned(),
        ));
    }
    Ok(profile)
}

/// Re-reads a profile whose names broke the JSON, using trtexec's one-record-per-line layout:
/// `, { "name" : "<raw name>", "timeMs" : 1, "averageMs" : 1, "medianMs" : 1, "percentage" : 1 }`.
fn recover_trtexec_layout(text: &str) -> Option<Profile> {
    let mut profile = Profile::default();
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix(',').unwrap_or(line).trim();
        let line = line.strip_prefix('[').unwrap_or(line).trim();
        if line.is_empty() || line == "]" {
            continue;
        }
        let body = line.strip_prefix('{')?.strip_suffix('}')?.trim();
        if let Some(count) = body.strip_prefix("\"count\" :") {
            if profile.header.is_some() || !profile.records.is_empty() {
                return None;
            }
            profile.header = Some(match count.trim().parse::<u64>() {
                Ok(c) if c > 0 => HeaderCount::Valid(c),
                _ => HeaderCount::Invalid,
            });
            continue;
        }
        let rest = body.strip_prefix("\"name\" : \"")?;
        // The name ends at the last `", "timeMs" :`, so quotes inside the name are kept.
        let split = rest.rfind("\", \"timeMs\" :")?;
        let name = rest[..split].to_owned();
        let mut rec = ProfileRecord {
            name,
            ..ProfileRecord::default()
        };
        let mut not_finite = false;
        for field in rest[split + 3..].split(", ") {
            let (key, value) = field.split_once(" : ")?;
            // C++ streams print `nan` and `inf`, which Rust parses too.
            let value: f64 = value.trim().parse().ok()?;
            let slot = match key.trim() {
                "\"timeMs\"" => &mut rec.time_ms,
                "\"averageMs\"" => &mut rec.average_ms,
                "\"medianMs\"" => &mut rec.median_ms,
                "\"percentage\"" => &mut rec.percentage,
                _ => return None,
            };
            if value.is_finite() {
                *slot = Some(value);
            } else {
                not_finite = true;
                profile.problems.push(format!(
                    "profile record `{}` has `{}` = {value}, not a finite number",
                    rec.name,
                    key.trim().trim_matches('"')
                ));
            }
        }
        if !not_finite
            && (rec.time_ms.is_none() || rec.average_ms.is_none() || rec.percentage.is_none())
        {
            return None;
        }
        profile.records.push(rec);
    }
    (!profile.records.is_empty()).then_some(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_header_and_records() {
        let text = "[\n  { \"count\" : 20 }\n, { \"name\" : \"a\", \"timeMs\" : 2, \"averageMs\" : 0.1, \"medianMs\" : 0.1, \"percentage\" : 100 }\n]";
        let p = read_profile(text).expect("reads");
        assert_eq!(p.header, Some(HeaderCount::Valid(20)));
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.records[0].median_ms, Some(0.1));
        assert!(p.recovered_from.is_none());
    }

    #[test]
    fn trt82_records_without_median_are_fine() {
        let p = read_profile(
            r#"[{"count": 3}, {"name": "a", "timeMs": 3, "averageMs": 1, "percentage": 100}]"#,
        )
        .expect("reads");
        assert_eq!(p.records[0].median_ms, None);
        assert!(p.problems.is_empty());
    }

    #[test]
    fn unescaped_quote_in_a_name_is_recovered_from_the_line_layout() {
        let text = "[\n  { \"count\" : 2 }\n, { \"name\" : \"odd \"x\" name\", \"timeMs\" : 2, \"averageMs\" : 1, \"medianMs\" : 1, \"percentage\" : 100 }\n]\n";
        let p = read_profile(text).expect("recovers");
        assert_eq!(p.records[0].name, "odd \"x\" name");
        assert_eq!(p.header, Some(HeaderCount::Valid(2)));
        let why = p.recovered_from.expect("says it recovered");
        assert!(why.contains("line 3"), "{why}");
    }

    #[test]
    fn unrecoverable_json_reports_line_and_column() {
        let err = read_profile("[\n{\"name\": \"a\", \"timeMs\": }\n]").expect_err("broken");
        match err {
            FormatError::InvalidJson { line, .. } => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wrong_documents_are_named() {
        let err = read_profile(r#"{"Layers": []}"#).expect_err("layers");
        assert!(err.to_string().contains("layer-info"), "{err}");
        let err = read_profile(r#"[{"startEnqMs": 1, "latencyMs": 2}]"#).expect_err("times");
        assert!(err.to_string().contains("--exportTimes"), "{err}");
        assert!(read_profile(r#"[{"count": 1}]"#).is_err());
        assert_eq!(
            read_profile(r#"[{"count": 0}, {"name":"a","timeMs":0,"averageMs":0,"percentage":0}]"#)
                .expect("reads")
                .header,
            Some(HeaderCount::Invalid)
        );
    }

    #[test]
    fn mistyped_numbers_are_problems() {
        let p =
            read_profile(r#"[{"name": "a", "timeMs": "1", "averageMs": 1, "percentage": 100}]"#)
                .expect("reads");
        assert_eq!(p.records[0].time_ms, None);
        assert_eq!(p.problems.len(), 1);
    }
}
