//! JSON: the summary model itself, so scripts read exports and report.json the same way.

use super::{Exporter, Format};
use crate::model::CollectionReport;

/// Writes the summary model as pretty-printed JSON.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn format(&self) -> Format {
        Format::Json
    }

    fn export(&self, report: &CollectionReport) -> String {
        // The model holds only strings, numbers, maps and lists: serialization cannot fail.
        let mut s = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
            format!(
                "{{\"error\": {}}}",
                serde_json::Value::String(e.to_string())
            )
        });
        s.push('\n');
        s
    }
}
