//! Reports people want to look at: self-contained HTML pages with SVG plots, the collection report over
//! many result directories, the terminal summary, and JSON / CSV / Markdown exports.
//!
//! # Layout
//!
//! | module | job |
//! | --- | --- |
//! | [`html`] | escaped markup ([`html::Markup`], [`html::text`]) and the page shell ([`html::Page`]) |
//! | [`theme`] | the one stylesheet (light/dark by `prefers-color-scheme`) and the one script |
//! | [`table`] | sortable, filterable tables |
//! | [`plots`] | SVG plots drawn with plotters: histogram, CDF, timeline, lines, grouped bars |
//! | [`validity`] | VALID/INVALID per case (LoadGen style), trend (warm-up drift, slowdown), outliers |
//! | [`model`] | the summary model: report.json, schema `trtmc.collection-report/v1` |
//! | [`pages`] | the run and collection pages |
//! | [`run_report`] | report.html of one run (the renderer the CLI hands `run`'s orchestrator) |
//! | [`tune_page`] | tuning-report.html of one tune (the renderer the CLI hands the tune orchestrator) |
//! | [`matrix_page`] | report.html of a matrix run, from its `results.json` |
//! | [`collection`] | discovery and the atomic report.json + report.html of `report DIR…` |
//! | [`export`] | JSON / CSV / Markdown exports behind one [`export::Exporter`] trait |
//! | [`terminal`] | the compact table printed after `run` and by `report` |
//!
//! # Building another report with the shared components (tune, matrix, …)
//!
//! Every trtmc HTML report uses the same shell, theme, script and components, so they look and behave
//! alike (dark/light, sortable and filterable tables, the same pills and banners, the same self-check
//! that the headless-browser tests read):
//!
//! ```
//! use trtmc_report::html::{Page, Section, pill, text, key_values};
//! use trtmc_report::table::{Cell, Column, Table};
//! use trtmc_report::plots::{self, Bar, BarGroup};
//!
//! let mut page = Page::new("matrix", "release matrix");          // eyebrow "trtmc-bench matrix"
//! page.status = Some(pill("2 green, 1 red", "red"));             // classes: valid/green, partial/yellow, invalid/red
//! page.subtitle.push(text("suite release.yaml · gb300"));       // every user string goes through text()
//!
//! let mut t = Table::new("rows", vec![
//!     Column::text("entry"),
//!     Column::text("light").filter(),                            // a drop-down of the column's values
//!     Column::num("ratio"),
//! ]);
//! t.push(vec![Cell::text("gpt2.generate"), Cell::markup(pill("green", "green"), "green"), Cell::num(0.98, "0.98")]);
//! page.sections.push(Section::new("rows-panel", "Rows", t.render()));
//!
//! let bars = plots::grouped_bars("p50 (ms)", &["candidate".into(), "reference".into()], &[BarGroup {
//!     label: "gpt2.generate".into(),
//!     bars: vec![Some(Bar { value: 10.0, low: Some(9.8), high: Some(10.2) }), Some(Bar { value: 10.3, low: None, high: None })],
//! }]);
//! let legend = plots::legend(&[("c0", "candidate"), ("c1", "reference")]);
//! page.sections.push(Section::new("plots-panel", "Plots", plots::figure("bars", "p50 by entry", &bars, Some(&legend))));
//! page.sections.push(Section::new("env", "Environment", key_values(&[("machine", text("gb300-01"))])));
//!
//! let html: String = page.render();                              // one self-contained file
//! assert!(html.contains("data-report-kind=\"matrix\""));
//! ```
//!
//! Rules the components keep, and a new report must keep too: build markup only from [`html::text`]
//! (escapes), [`html::el`] (escapes attributes) and the components; never put a user string into
//! [`html::Markup::trusted`]. Do not add `<script>`, `<style>` or `style="…"` of your own: the page's
//! Content-Security-Policy admits only the shared theme and script (by hash), so anything else is
//! refused by the browser (put extra CSS in [`html::Page::extra_css`], which the policy covers). For a
//! verdict, reuse [`pages::validity_block`].
//!
//! The analyze command's browser app uses the same class vocabulary (`header.top`, `.panel`, `.pill`,
//! `table.grid`, `.filters`, …); it can take [`theme::CSS`] as its stylesheet to share the dark mode.

pub mod collection;
pub mod export;
pub mod fmt;
pub mod html;
pub mod matrix_page;
pub mod model;
pub mod pages;
pub mod plots;
pub mod run_report;
pub mod table;
pub mod terminal;
pub mod theme;
pub mod tune_page;
/// The VALID/INVALID policy lives in core, beside the interval method (`trtmc_core::validity`).
pub use trtmc_core::validity;
