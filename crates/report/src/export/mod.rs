//! Summary exports for spreadsheets, CI comments and scripts, one file per format behind one trait
//! (the shape of hyperfine's `export/`).
//!
//! | format | content |
//! | --- | --- |
//! | [`Format::Json`] | the whole summary model: the same document as report.json (`trtmc.collection-report/v1`) |
//! | [`Format::Csv`] | one row per case, RFC 4180 quoting, milliseconds and full precision |
//! | [`Format::Markdown`] | a GitHub-flavoured table plus the reasons of invalid cases |
//!
//! JUnit XML (`--export-junit`) is not a summary format: `run` and `matrix` map their own results into
//! [`junit::Suite`].

mod csv;
mod json;
pub mod junit;
mod markdown;

use std::path::Path;

use crate::model::CollectionReport;

pub use csv::CsvExporter;
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;

/// Renders a summary in one format.
pub trait Exporter {
    /// The format it writes.
    fn format(&self) -> Format;
    /// The whole export of `report` as text.
    fn export(&self, report: &CollectionReport) -> String;
}

/// An export format of `--export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The summary model itself ([`JsonExporter`]).
    Json,
    /// One row per case ([`CsvExporter`]).
    Csv,
    /// A CI step summary ([`MarkdownExporter`]).
    Markdown,
}

impl Format {
    /// The format's name as people write it (`json`, `csv`, `markdown`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
        }
    }

    /// The exporter that writes this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Json => Box::new(JsonExporter),
            Format::Csv => Box::new(CsvExporter),
            Format::Markdown => Box::new(MarkdownExporter),
        }
    }

    /// The format a file name asks for: `.json`, `.csv`, `.md` or `.markdown`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "md" | "markdown" => Some(Format::Markdown),
            _ => None,
        }
    }
}

/// Shorthand: `export(Format::Csv, &report)`.
pub fn export(format: Format, report: &CollectionReport) -> String {
    format.exporter().export(report)
}
