//! CSV: one row per case, written by the `csv` crate (RFC 4180 quoting, CRLF line ends); text that a
//! spreadsheet would take for a formula is prefixed with `'`.

use super::{Exporter, Format};
use crate::model::CollectionReport;

/// Writes one CSV row per case under a fixed header.
pub struct CsvExporter;

pub const HEADER: [&str; 29] = [
    "run",
    "number",
    "model",
    "case",
    "label",
    "operation",
    "runtime",
    "machine",
    "status",
    "samples",
    "duration_s",
    "min_ms",
    "mean_ms",
    "p50_ms",
    "p50_ci_low_ms",
    "p50_ci_high_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "std_dev_ms",
    "cv",
    "outliers",
    "request_per_s",
    "throughputs",
    "sweep_point",
    "validity",
    "validity_failures",
    "error",
];

/// Neutralizes formula triggers: text a spreadsheet would evaluate gets a leading `'` (numbers stay).
pub fn field(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().is_err() {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x}"),
        _ => String::new(),
    }
}

impl Exporter for CsvExporter {
    fn format(&self) -> Format {
        Format::Csv
    }

    fn export(&self, report: &CollectionReport) -> String {
        let mut out = ::csv::WriterBuilder::new()
            .terminator(::csv::Terminator::CRLF)
            .from_writer(Vec::new());
        // Writing to memory cannot fail, and every record has the header's field count.
        out.write_record(HEADER).expect("CSV into memory");
        for c in &report.cases {
            let l = c.latency_ms.as_ref();
            let run = report
                .runs
                .get(c.run)
                .map(|r| r.path.as_str())
                .unwrap_or("");
            let status = c.status.label();
            let throughputs = c
                .throughputs
                .iter()
                .map(|t| format!("{} {}", t.value, t.name))
                .collect::<Vec<_>>()
                .join("; ");
            let sweep = c
                .sweep_point
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let row = [
                field(run),
                c.number.to_string(),
                field(&c.model),
                field(&c.case),
                field(&c.label),
                field(&c.operation),
                field(&format!("{} {}", c.runtime.name, c.runtime.version)),
                field(&c.machine),
                status.to_string(),
                c.samples.to_string(),
                num(Some(c.duration_s)),
                num(l.map(|l| l.min)),
                num(l.map(|l| l.mean)),
                num(l.map(|l| l.p50)),
                num(c.p50_ci_ms.map(|i| i.low)),
                num(c.p50_ci_ms.map(|i| i.high)),
                num(l.map(|l| l.p90)),
                num(l.map(|l| l.p95)),
                num(l.map(|l| l.p99)),
                num(l.map(|l| l.max)),
                num(l.map(|l| l.std_dev)),
                num(l.map(|l| l.cv)),
                c.outliers.to_string(),
                num(c.throughput("request/s").map(|t| t.value)),
                field(&throughputs),
                field(&sweep),
                c.validity.verdict().to_string(),
                field(&c.validity.failures().join("; ")),
                field(c.error.as_deref().unwrap_or("")),
            ];
            out.write_record(&row).expect("CSV into memory");
        }
        let bytes = out.into_inner().expect("CSV into memory");
        // Every field is a Rust string, so the bytes are UTF-8.
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
