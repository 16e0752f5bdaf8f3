//! Packaging a report: one self-contained folder that opens from `file://` with no server and no
//! network (index.html, app.js, styles.css, data.js, analyze-data.json and, when given,
//! analyze.md). The app reads its data from data.js only; analysis.json is `analyze --output`'s
//! file and is not repeated in the folder.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::analysis::Analysis;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLES_CSS: &str = include_str!("../assets/styles.css");

/// Where and how to write a report.
#[derive(Debug, Clone, Default)]
pub struct PackageOptions {
    /// Exact folder to create; must be absent or empty.
    pub report_dir: Option<PathBuf>,
    /// Parent of an automatically named folder (`report_<model>_<timestamp>`); defaults to the
    /// system temporary directory.
    pub output_parent: Option<PathBuf>,
    /// Timestamp for the automatic name (`YYYYMMDD_HHMMSS`); defaults to now.
    pub timestamp: Option<String>,
    /// A written analysis with `## Summary` and `## Details`, copied as analyze.md and rendered.
    pub analyze_md: Option<PathBuf>,
}

/// What packaging wrote, with the final paths.
#[derive(Debug, Clone)]
pub struct Packaged {
    /// The report folder.
    pub report_dir: PathBuf,
    /// Its `index.html`, the file to open in a browser.
    pub index: PathBuf,
    /// Its `analyze-data.json` (the published analysis format).
    pub analyze_data_json: PathBuf,
    /// Its copy of the written analysis (`analyze.md`), when one was given.
    pub analyze_md: Option<PathBuf>,
    /// Things the user should know (e.g. analyze.md lacks a `## Details` section).
    pub warnings: Vec<String>,
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// `--report-dir` names a folder that already has contents.
    #[error(
        "report directory {0} is not empty; choose another --report-dir or remove its contents"
    )]
    NotEmpty(PathBuf),
    /// `--report-dir` is a symbolic link.
    #[error("report directory {0} is a symbolic link; pass a real directory")]
    Symlink(PathBuf),
    /// The given timestamp is not `YYYYMMDD_HHMMSS`.
    #[error("--timestamp must look like YYYYMMDD_HHMMSS, got {0:?}")]
    Timestamp(String),
    /// The `--analyze-md` file cannot be read.
    #[error("analyze markdown {path}: {source}")]
    Markdown {
        /// The file given.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// A file of the report cannot be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The write error.
        source: std::io::Error,
    },
    /// The analysis cannot be serialized (a bug, not a user error).
    #[error("cannot serialize the analysis: {0}")]
    Json(#[from] serde_json::Error),
    /// The report folder cannot be staged or moved into place (another writer holds it, it changed
    /// meanwhile): the staged output writer's message.
    #[error("report directory {dir}: {reason}")]
    Output {
        /// The report folder.
        dir: PathBuf,
        /// The writer's message.
        reason: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PackageError + '_ {
    move |source| PackageError::Io {
        path: path.to_owned(),
        source,
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}

/// A folder name fragment from a model name: lowercase letters, digits, `-` and `_` only.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-');
    if s.is_empty() {
        "unknown_model".to_owned()
    } else {
        s.chars().take(60).collect()
    }
}

fn valid_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 15
        && b[8] == b'_'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 8 || c.is_ascii_digit())
}

/// Chooses the report folder: the exact `--report-dir`, or a fresh `report_<model>_<ts>[_N]`.
pub fn choose_report_dir(
    analysis: &Analysis,
    opts: &PackageOptions,
) -> Result<PathBuf, PackageError> {
    if let Some(dir) = &opts.report_dir {
        if dir.is_symlink() {
            return Err(PackageError::Symlink(dir.clone()));
        }
        if dir.exists() && !is_empty_dir(dir) && !is_incomplete_report(dir) {
            return Err(PackageError::NotEmpty(dir.clone()));
        }
        return Ok(dir.clone());
    }
    let parent = opts
        .output_parent
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    let ts = match &opts.timestamp {
        Some(t) if valid_timestamp(t) => t.clone(),
        Some(t) => return Err(PackageError::Timestamp(t.clone())),
        None => jiff::ZonedDateTime::now()
            .strftime("%Y%m%d_%H%M%S")
            .to_string(),
    };
    let model = analysis
        .model
        .id
        .as_deref()
        .or(analysis.model.name.as_deref())
        .map(slug)
        .unwrap_or_else(|| "unknown_model".to_owned());
    let base = format!("report_{model}_{ts}");
    let mut candidate = parent.join(&base);
    let mut n = 2;
    while candidate.exists() && !is_empty_dir(&candidate) {
        candidate = parent.join(format!("{base}_{n}"));
        n += 1;
    }
    Ok(candidate)
}

/// Streams a file of the report through `trtmc_core::fsutil::write_atomic_with`, so a reader never
/// sees half a file.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
) -> Result<(), PackageError> {
    trtmc_core::fsutil::write_atomic_with(path, write).map_err(io_err(path))
}

/// Writes the browser app and `data.js` into `dir` (which must exist). `data.js` is the report
/// app's only copy of the analysis: `window.TRTMC_REPORT = {"analysis": …, "analyze_md_html": …}`
/// with every backend's layer records in the packed form of pack.rs.
fn write_app(dir: &Path, analysis: &Analysis, md_html: Option<&str>) -> Result<(), PackageError> {
    for (name, text) in [
        ("index.html", INDEX_HTML),
        ("app.js", APP_JS),
        ("styles.css", STYLES_CSS),
    ] {
        let path = dir.join(name);
        write_file(&path, |w| w.write_all(text.as_bytes()))?;
    }
    let path = dir.join("data.js");
    write_file(&path, |w| {
        w.write_all(b"window.TRTMC_REPORT = {\"analysis\":")?;
        crate::write::write_analysis(&mut *w, analysis, &crate::pack::packed_layers)?;
        w.write_all(b",\"analyze_md_html\":")?;
        serde_json::to_writer(&mut *w, &md_html)?;
        w.write_all(b"};\n")
    })
}

fn read_markdown(path: &Path) -> Result<(String, Vec<String>), PackageError> {
    let text = std::fs::read_to_string(path).map_err(|source| PackageError::Markdown {
        path: path.to_owned(),
        source,
    })?;
    let (html, warnings) = render_markdown(&text);
    Ok((
        html,
        warnings
            .into_iter()
            .map(|w| format!("{}: {w}", path.display()))
            .collect(),
    ))
}

/// The files a packaged report folder holds; `index.html`, `data.js` and `analyze-data.json` make it
/// complete.
const REPORT_FILES: &[&str] = &[
    "index.html",
    "app.js",
    "styles.css",
    "data.js",
    "analyze-data.json",
    "analyze.md",
    "analysis.json",
];

/// A folder that only a packaging killed mid-write (by an earlier version, which wrote in place) can
/// have left: nothing but report files and atomic-write temporaries, and not all of the essential
/// ones. A rerun with the same `--report-dir` replaces it.
fn is_incomplete_report(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let temporary = trtmc_core::fsutil::atomic_temporary_owner(&name).is_some();
        if !temporary && !REPORT_FILES.contains(&name.as_str()) {
            return false;
        }
        names.push(name);
    }
    !["index.html", "data.js", "analyze-data.json"]
        .iter()
        .all(|n| names.iter().any(|m| m == n))
}

/// Packages a new report for `analysis`. The folder is staged beside its place and moved there
/// complete, through the staged output writer `run` uses (`trtmc_core::fsutil::OutputSlot`: one
/// writer at a time, symlinks refused), so a killed packaging never leaves a half-written report.
pub fn package(analysis: &Analysis, opts: &PackageOptions) -> Result<Packaged, PackageError> {
    let dir = choose_report_dir(analysis, opts)?;
    let md = opts.analyze_md.as_deref().map(read_markdown).transpose()?;
    let refused = |e: trtmc_core::fsutil::SlotError| PackageError::Output {
        dir: dir.clone(),
        reason: e.to_string(),
    };
    if is_incomplete_report(&dir) {
        std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    // The slot accepts only an absent or empty folder (no file there carries a result schema).
    let slot =
        trtmc_core::fsutil::OutputSlot::prepare(&dir, "analyze-data.json", &[]).map_err(refused)?;
    let staging = slot.staging().to_path_buf();
    let analyze_data_json = staging.join("analyze-data.json");
    write_file(&analyze_data_json, |w| Ok(analysis.write_analyze_data(w)?))?;
    let staged = finish(
        staging.clone(),
        analysis,
        opts.analyze_md.as_deref(),
        md,
        analyze_data_json,
    )?;
    let placed = slot.commit().map_err(refused)?;
    let moved = |p: PathBuf| placed.join(p.strip_prefix(&staging).unwrap_or(&p));
    Ok(Packaged {
        index: moved(staged.index),
        analyze_data_json: moved(staged.analyze_data_json),
        analyze_md: staged.analyze_md.map(moved),
        report_dir: placed.clone(),
        warnings: staged.warnings,
    })
}

/// Re-packages the report folder that holds `analyze_data` (an analyze-data.json, ours or another
/// tool's): the analysis is derived again from it, the app and data are rewritten, and the
/// analyze-data.json itself is left as it is. An analysis.json that an earlier version put in the
/// folder is rewritten too, so that it never contradicts the report.
pub fn repackage(
    analysis: &Analysis,
    analyze_data: &Path,
    analyze_md: Option<&Path>,
) -> Result<Packaged, PackageError> {
    let dir = analyze_data
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let md = analyze_md.map(read_markdown).transpose()?;
    let old_analysis_json = dir.join("analysis.json");
    if old_analysis_json.is_file() {
        write_file(&old_analysis_json, |w| Ok(analysis.write_json(w)?))?;
    }
    // Keep an analyze.md that is already in the folder unless a new one is given.
    let existing = dir.join("analyze.md");
    let (md_path, md) = match (analyze_md, md) {
        (Some(p), md) => (Some(p), md),
        (None, _) if existing.is_file() => {
            (Some(existing.as_path()), Some(read_markdown(&existing)?))
        }
        _ => (None, None),
    };
    finish(dir.clone(), analysis, md_path, md, analyze_data.to_owned())
}

fn finish(
    dir: PathBuf,
    analysis: &Analysis,
    md_source: Option<&Path>,
    md: Option<(String, Vec<String>)>,
    analyze_data_json: PathBuf,
) -> Result<Packaged, PackageError> {
    let mut warnings = Vec::new();
    let mut md_out = None;
    let md_html = match (md_source, md) {
        (Some(src), Some((html, w))) => {
            warnings.extend(w);
            let dest = dir.join("analyze.md");
            let same = src
                .canonicalize()
                .ok()
                .zip(dest.canonicalize().ok())
                .is_some_and(|(a, b)| a == b);
            if !same {
                std::fs::copy(src, &dest).map_err(io_err(&dest))?;
            }
            md_out = Some(dest);
            Some(html)
        }
        _ => None,
    };
    write_app(&dir, analysis, md_html.as_deref())?;
    Ok(Packaged {
        index: dir.join("index.html"),
        report_dir: dir,
        analyze_data_json,
        analyze_md: md_out,
        warnings,
    })
}

/// Links that may stay links: web, mail, in-page anchors and relative paths.
fn safe_url(url: &str) -> bool {
    let u = url.trim().to_ascii_lowercase();
    if u.starts_with("http://")
        || u.starts_with("https://")
        || u.starts_with("mailto:")
        || u.starts_with('#')
    {
        return true;
    }
    // Relative: no scheme before the first '/', '?' or '#'.
    let head = u.split(['/', '?', '#']).next().unwrap_or("");
    !head.contains(':') && !u.starts_with("//")
}

/// Renders analyze.md to HTML for the report: raw HTML is shown as text, images become links
/// (nothing is fetched), unsafe link schemes are dropped. Returns the HTML and warnings about the
/// expected `## Summary` / `## Details` sections.
pub fn render_markdown(text: &str) -> (String, Vec<String>) {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let mut headings: Vec<String> = Vec::new();
    let mut in_h2 = false;
    let mut events = Vec::new();
    for event in Parser::new_ext(text, opts) {
        let event = match event {
            Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => {
                in_h2 = level == HeadingLevel::H2;
                if in_h2 {
                    headings.push(String::new());
                }
                Event::Start(Tag::Heading {
                    level,
                    id,
                    classes,
                    attrs,
                })
            }
            Event::End(TagEnd::Heading(level)) => {
                in_h2 = false;
                Event::End(TagEnd::Heading(level))
            }
            Event::Text(s) => {
                if in_h2 && let Some(h) = headings.last_mut() {
                    h.push_str(&s);
                }
                Event::Text(s)
            }
            // An image becomes a link to it; either keeps its URL only when it is safe.
            Event::Start(
                Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }
                | Tag::Image {
                    link_type,
                    dest_url,
                    title,
                    id,
                },
            ) => {
                let dest_url = if safe_url(&dest_url) {
                    dest_url
                } else {
                    CowStr::Borrowed("#")
                };
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
            other => other,
        };
        events.push(event);
    }
    let mut html = String::with_capacity(text.len() * 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    let mut warnings = Vec::new();
    for wanted in ["Summary", "Details"] {
        if !headings
            .iter()
            .any(|h| h.trim().eq_ignore_ascii_case(wanted))
        {
            warnings.push(format!("has no `## {wanted}` section (a written analysis keeps `## Summary` and `## Details`)"));
        }
    }
    (html, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_html_and_neutralises_links_and_images() {
        let md = "## Summary\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) ![p](http://example.invalid/p.png) [ok](https://example.org)\n\n## Details\n|a|b|\n|-|-|\n|1|2|\n";
        let (html, warnings) = render_markdown(md);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("href=\"https://example.org\""));
        assert!(html.contains("<table>"));
    }

    #[test]
    fn missing_sections_are_reported() {
        let (_, warnings) = render_markdown("# Title\ntext");
        assert_eq!(warnings.len(), 2);
    }

    #[test]
    fn slugs_and_timestamps() {
        assert_eq!(slug("BERT base/uncased"), "bert-base-uncased");
        assert_eq!(slug("///"), "unknown_model");
        assert!(valid_timestamp("20260101_120000"));
        assert!(!valid_timestamp("2026-01-01"));
    }
}
