//! The compact terminal table (after `run`, and from `report`), in the spirit of hyperfine's summary:
//! one line per case, then the reasons of each invalid case, then each recommendation once with the
//! cases it applies to.

use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr};

use trtmc_core::artifacts::CaseStatus;
use trtmc_core::stats::Summary;

use crate::fmt::{fmt_count, fmt_human, fmt_pct, fmt_percentile};
use crate::model::{CaseEntry, CollectionReport, distinctions};

/// Replaces control characters (escape sequences from a hostile name) and shortens to `max` terminal
/// columns.
pub fn clean(s: &str, max: usize) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if width(&out) <= max {
        return out;
    }
    let mut short = String::new();
    let mut used = 0;
    for c in out.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max.saturating_sub(1) {
            break;
        }
        short.push(c);
        used += w;
    }
    short.push('…');
    short
}

/// `s` shortened to `max` terminal columns like [`clean`], but between words where it can: the first
/// words and the last ones around an ellipsis (`ch_PP-OCRv4_det_infer` → `ch_…det_infer`), so that
/// names sharing a prefix stay apart and no word is cut; a name with no such cut falls back to
/// [`clean`].
pub fn clean_name(s: &str, max: usize) -> String {
    let out = clean(s, usize::MAX);
    if width(&out) <= max {
        return out;
    }
    let is_separator = |c: char| matches!(c, '-' | '_' | '.' | ' ' | '/' | ':' | '·');
    // Byte offsets just after each separator: a head may end there, a tail may start there.
    let cuts: Vec<usize> = out
        .char_indices()
        .filter(|(_, c)| is_separator(*c))
        .map(|(i, c)| i + c.len_utf8())
        .collect();
    let heads = std::iter::once(0).chain(cuts.iter().copied());
    let mut best: Option<(usize, usize, usize)> = None;
    for head in heads {
        for &tail in cuts.iter().filter(|&&t| t >= head) {
            let kept = width(&out[..head]) + width(&out[tail..]);
            if kept < max && best.is_none_or(|(k, _, _)| kept > k) {
                best = Some((kept, head, tail));
            }
        }
    }
    match best {
        // Keep at least half of what fits, else a plain cut says more.
        Some((kept, head, tail)) if kept * 2 >= max.saturating_sub(1) => {
            format!("{}…{}", &out[..head], &out[tail..])
        }
        _ => clean(&out, max),
    }
}

/// Terminal columns `s` takes: a CJK character or an emoji takes two, a combining mark none.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` followed by spaces up to `columns` terminal columns (`format!`'s `{:<N}` counts characters,
/// which misaligns wide characters).
pub fn pad_right(s: &str, columns: usize) -> String {
    format!("{s}{}", " ".repeat(columns.saturating_sub(width(s))))
}

/// Most terminal columns the default table takes (names are shortened to fit).
pub const MAX_WIDTH: usize = 100;

/// How much the terminal table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// At most [`MAX_WIDTH`] columns: the columns that decide (calls, p50, p99, CV, the task's own
    /// throughput, validity), names shortened and reasons wrapped to fit.
    #[default]
    Compact,
    /// Every column (also the p50 interval, p95, outliers and request/s), names up to their full caps.
    Wide,
}

/// The compact table as text, lines ending in `\n`.
pub fn table(report: &CollectionReport) -> String {
    table_with(report, Layout::Compact)
}

/// Which columns the compact table may shorten to fit, in the order it does so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Numbers and the verdict: never shortened.
    Fixed,
    /// Model, case, runtime and machine names: shortened first.
    Name,
    /// The run column: shortened last, as it is what tells otherwise equal rows apart.
    Distinction,
}

/// Stages of fitting: each shortens the widest column of its kind, one terminal column at a time, down
/// to the stage's floor (never below the column title), until the line fits.
const FIT_STAGES: [(Fit, usize); 4] = [
    (Fit::Name, 12),
    (Fit::Distinction, 16),
    (Fit::Name, 6),
    (Fit::Distinction, 6),
];

/// One column of the table: its cells, and how it may be fitted.
struct Column {
    title: String,
    cells: Vec<String>,
    /// The names in full, for a column shortened between words when fitted (`Fit::Name`).
    full: Vec<String>,
    right: bool,
    fit: Fit,
}

impl Column {
    fn text(title: &str, cells: Vec<String>, fit: Fit) -> Self {
        Column {
            title: title.into(),
            cells,
            full: Vec::new(),
            right: false,
            fit,
        }
    }
    /// Names at most `cap` columns wide, shortened between words ([`clean_name`]).
    fn names(title: &str, full: Vec<String>, cap: usize) -> Self {
        Column {
            title: title.into(),
            cells: full.iter().map(|n| clean_name(n, cap)).collect(),
            full,
            right: false,
            fit: Fit::Name,
        }
    }
    fn num(title: &str, cells: Vec<String>) -> Self {
        Column {
            title: title.into(),
            cells,
            full: Vec::new(),
            right: true,
            fit: Fit::Fixed,
        }
    }
    /// The cell of `row` in `columns` terminal columns.
    fn cell(&self, row: usize, columns: usize) -> String {
        match self.full.get(row) {
            Some(full) => clean_name(full, columns.min(width(&self.cells[row]))),
            None => clean(&self.cells[row], columns),
        }
    }
    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| width(c))
            .chain([width(&self.title)])
            .max()
            .unwrap_or(0)
    }
}

/// The table in `layout`, then the reasons of each invalid case and each recommendation once.
pub fn table_with(report: &CollectionReport, layout: Layout) -> String {
    let wide = layout == Layout::Wide;
    let cases = &report.cases;
    let machines: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c.machine.as_str()).collect();
    let distinctions = distinctions(report);
    // Caps for names before fitting: the wide table's are the historic ones.
    let cap = |wide_cap: usize| if wide { wide_cap } else { wide_cap.min(40) };
    let names = |f: &dyn Fn(&CaseEntry) -> String| -> Vec<String> { cases.iter().map(f).collect() };
    let mut columns = vec![
        Column::num("#", (1..=cases.len()).map(|i| i.to_string()).collect()),
        Column::names("model", names(&|c| c.model.clone()), cap(32)),
        Column::names("case", names(&|c| c.label.clone()), cap(40)),
        Column::names(
            "runtime",
            names(&|c| format!("{} {}", c.runtime.name, c.runtime.version)),
            cap(20),
        ),
    ];
    if machines.len() > 1 {
        columns.push(Column::names(
            "machine",
            names(&|c| c.machine.clone()),
            cap(20),
        ));
    }
    if distinctions.iter().any(|d| !d.is_empty()) {
        columns.push(Column::text(
            "run",
            distinctions.iter().map(|d| clean(d, cap(60))).collect(),
            Fit::Distinction,
        ));
    }
    let latency = |f: &dyn Fn(&Summary) -> f64| -> Vec<String> {
        cases
            .iter()
            .map(|c| {
                c.latency_ms
                    .as_ref()
                    .map_or("–".into(), |l| fmt_human(f(l)))
            })
            .collect()
    };
    // A tail percentile that too few calls reach is marked `~` (docs/reports.md).
    let tail = |p: f64, f: &dyn Fn(&Summary) -> f64| -> Vec<String> {
        cases
            .iter()
            .map(|c| {
                c.latency_ms
                    .as_ref()
                    .map_or("–".into(), |l| fmt_percentile(f(l), p, l.count))
            })
            .collect()
    };
    columns.push(Column::num(
        "calls",
        cases.iter().map(|c| fmt_count(c.samples)).collect(),
    ));
    columns.push(Column::num("p50 ms", latency(&|l| l.p50)));
    if wide {
        columns.push(Column::num(
            "p50 95% CI",
            cases
                .iter()
                .map(|c| {
                    c.p50_ci_ms
                        .map(|i| format!("{}–{}", fmt_human(i.low), fmt_human(i.high)))
                        .unwrap_or_default()
                })
                .collect(),
        ));
        columns.push(Column::num("p95 ms", tail(95.0, &|l| l.p95)));
    }
    columns.push(Column::num("p99 ms", tail(99.0, &|l| l.p99)));
    columns.push(Column::num(
        "CV %",
        cases
            .iter()
            .map(|c| c.latency_ms.as_ref().map_or("–".into(), |l| fmt_pct(l.cv)))
            .collect(),
    ));
    if wide {
        columns.push(Column::num(
            "outl",
            cases.iter().map(|c| fmt_count(c.outliers as u64)).collect(),
        ));
    }
    let (title, headline) = headline_column(cases, !wide);
    if wide && title != "request/s" {
        // The wide table keeps request/s beside the task's own throughput.
        columns.push(Column::num(
            "request/s",
            throughput_cells(cases, "request/s"),
        ));
    }
    columns.push(Column::num(&title, headline));
    columns.push(Column::text(
        "validity",
        cases.iter().map(status_text).collect(),
        Fit::Fixed,
    ));

    let mut widths: Vec<usize> = columns.iter().map(Column::width).collect();
    if !wide {
        fit(&columns, &mut widths, MAX_WIDTH);
    }
    // `None`: the titles; `Some(row)`: that row's cells.
    let line = |row: Option<usize>| -> String {
        let mut s = String::new();
        let last = columns.len().saturating_sub(1);
        for (i, (col, &w)) in columns.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let cell = match row {
                Some(row) => col.cell(row, w),
                None => clean(&col.title, w),
            };
            let pad = " ".repeat(w.saturating_sub(width(&cell)));
            if col.right {
                s.push_str(&pad);
                s.push_str(&cell);
            } else {
                s.push_str(&cell);
                if i < last {
                    s.push_str(&pad);
                }
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(None);
    for row in 0..cases.len() {
        out.push_str(&line(Some(row)));
    }
    let wrap_at = if wide { usize::MAX } else { MAX_WIDTH };
    for (i, c) in cases.iter().enumerate() {
        if c.validity.valid {
            continue;
        }
        let mut what = format!("{} · {}", clean(&c.model, 60), clean(&c.label, 80));
        if !distinctions[i].is_empty() {
            what.push_str(&format!(" · {}", clean(&distinctions[i], 80)));
        }
        out.push_str(&wrap(
            &format!("{:>3}  INVALID  {what}", i + 1),
            "       ",
            wrap_at,
        ));
        for f in c.validity.failures() {
            out.push_str(&wrap(
                &format!("       ✗ {}", clean(&f, 200)),
                "         ",
                wrap_at,
            ));
        }
    }
    // What an `infer` case fed and, with --check-outputs, how its outputs compared.
    for (i, c) in cases.iter().enumerate() {
        if c.input_shapes.is_empty() && c.output_check.is_empty() {
            continue;
        }
        let mut what = format!("inputs {}", c.input_shapes_text());
        if let Some(check) = c.output_check_text() {
            what.push_str(&format!(" · {check}"));
        }
        out.push_str(&wrap(
            &format!("{:>3}  {}", i + 1, clean(&what, 400)),
            "     ",
            wrap_at,
        ));
    }
    // Each recommendation once, with the cases it applies to: a sweep of 50 short cases gets one line
    // saying "add --duration", not fifty.
    let mut advice: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        for r in &c.validity.recommendations {
            match advice.iter_mut().find(|(a, _)| *a == r.as_str()) {
                Some((_, cases)) => cases.push(i + 1),
                None => advice.push((r, vec![i + 1])),
            }
        }
    }
    for (r, numbers) in advice {
        let which = if numbers.len() == 1 { "case" } else { "cases" };
        out.push_str(&wrap(
            &format!("  → {} ({which} {})", clean(r, 200), ranges(&numbers)),
            "    ",
            wrap_at,
        ));
    }
    // `run`'s verdicts between cases, last, as hyperfine ends with its relative summary.
    for r in &report.runs {
        for c in &r.comparisons {
            let prefix = if report.runs.len() > 1 {
                format!("{}: ", r.path)
            } else {
                String::new()
            };
            out.push_str(&wrap(
                &clean(&format!("{prefix}{}", c.verdict), 400),
                "  ",
                wrap_at,
            ));
        }
    }
    out
}

/// The headline throughput column: its title (the throughput's name when every case shares it, else
/// `throughput` with the name in each cell) and cells. `short` drops the qualifier of a name
/// (`output token/s` → `token/s`) for the narrow table.
pub(crate) fn headline_column(cases: &[CaseEntry], short: bool) -> (String, Vec<String>) {
    let shown = |name: &str| -> String {
        let unqualified = ["output ", "consumed "]
            .iter()
            .find_map(|q| name.strip_prefix(q))
            .unwrap_or(name);
        if short { unqualified } else { name }.to_string()
    };
    let names: std::collections::BTreeSet<&str> = cases
        .iter()
        .filter_map(|c| c.headline_throughput().map(|t| t.name.as_str()))
        .collect();
    if names.len() <= 1 {
        let name = names.into_iter().next().unwrap_or("request/s");
        return (shown(name), throughput_cells(cases, name));
    }
    let cells = cases
        .iter()
        .map(|c| {
            c.headline_throughput()
                .map(|t| format!("{} {}", fmt_human(t.value), shown(&t.name)))
                .unwrap_or_else(|| "–".into())
        })
        .collect();
    ("throughput".into(), cells)
}

fn throughput_cells(cases: &[CaseEntry], name: &str) -> Vec<String> {
    cases
        .iter()
        .map(|c| {
            c.throughput(name)
                .map_or("–".into(), |t| fmt_human(t.value))
        })
        .collect()
}

/// The validity column: the verdict of a completed case, else its status as recorded (`failed`, …).
pub(crate) fn status_text(c: &CaseEntry) -> String {
    if c.status == CaseStatus::Completed {
        return c.validity.verdict().into();
    }
    serde_json::to_value(c.status)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| c.validity.verdict().into())
}

/// Narrows the name columns, then the run column ([`FIT_STAGES`]), until the line fits `max` terminal
/// columns or nothing more may be shortened.
fn fit(columns: &[Column], widths: &mut [usize], max: usize) {
    let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    for (kind, floor) in FIT_STAGES {
        while total(widths) > max {
            let widest = columns
                .iter()
                .zip(widths.iter())
                .enumerate()
                .filter(|(_, (c, w))| c.fit == kind && **w > floor.max(width(&c.title)))
                .map(|(i, (_, &w))| (w, i))
                .max();
            match widest {
                Some((_, i)) => widths[i] -= 1,
                None => break,
            }
        }
    }
}

/// `text` broken at spaces into lines of at most `max` terminal columns, continuation lines starting
/// with `indent`; a word longer than a line is cut across lines.
fn wrap(text: &str, indent: &str, max: usize) -> String {
    if width(text) <= max {
        return format!("{text}\n");
    }
    let mut out = String::new();
    let mut line = String::new();
    // Leading spaces of the first line belong to it, not to a word.
    let body = text.trim_start_matches(' ');
    line.push_str(&text[..text.len() - body.len()]);
    for (i, word) in body.split(' ').enumerate() {
        if i > 0 {
            if width(&line) + 1 + width(word) > max {
                out.push_str(line.trim_end());
                out.push('\n');
                line = indent.to_string();
            } else {
                line.push(' ');
            }
        }
        for c in word.chars() {
            if width(&line) + c.width().unwrap_or(0) > max && width(&line) > width(indent) {
                out.push_str(&line);
                out.push('\n');
                line = indent.to_string();
            }
            line.push(c);
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// Ascending case numbers as ranges: `1–3, 5, 7–8`.
fn ranges(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            numbers[i].to_string()
        } else {
            format!("{}–{}", numbers[i], numbers[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use trtmc_core::artifacts::{CaseResult, Observation};
    use trtmc_core::operations::operation;
    use trtmc_core::result::reduce;

    use crate::model::tests::{case, observations, run};
    use crate::model::{CollectionReport, LoadedRun, build};
    use crate::validity::Policy;

    fn one_run(cases: Vec<CaseResult>, obs: &[Observation]) -> LoadedRun {
        let n = cases.len();
        LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(cases, "h"),
            observations: vec![Ok(obs.to_vec()); n],
            settings: Vec::new(),
        }
    }

    fn report_of(runs: Vec<LoadedRun>) -> CollectionReport {
        build(vec![".".into()], runs, vec![], &Policy::default()).0
    }

    /// A case of operation `op` whose calls each count one item, 32 output tokens and 0.5 s of audio.
    fn case_of(op: &str, model: &str) -> (CaseResult, Vec<Observation>) {
        let obs: Vec<Observation> = observations(150, 2.0)
            .into_iter()
            .map(|mut o| {
                o.items = Some(1);
                o.output_tokens = Some(32);
                o.counts = BTreeMap::from([("audio_us".to_string(), 500_000)]);
                o
            })
            .collect();
        let mut c = case(model, "default", &[], &obs);
        c.operation = op.into();
        c.metrics = reduce(operation(op).expect(op), &obs);
        (c, obs)
    }

    fn assert_fits(text: &str) {
        for l in text.lines() {
            assert!(width(l) <= MAX_WIDTH, "{} columns: {l}\n{text}", width(l));
        }
    }

    #[test]
    fn columns_line_up_and_hostile_names_cannot_drive_the_terminal() {
        let o = observations(150, 10.0);
        let short = observations(5, 1.0);
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(
                vec![
                    case("tiny\u{1b}[31m", "default", &[], &o),
                    case("m", "a-much-longer-case-label", &[], &short),
                ],
                "h",
            ),
            observations: vec![Ok(o.clone()), Ok(short.clone())],
            settings: Vec::new(),
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table_with(&report, Layout::Wide);
        assert!(!text.contains('\u{1b}'), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str, h: &str| width(&l[..l.find(h).expect(h)]);
        // The validity column starts at the same place on every row.
        let col = at(lines[0], "validity");
        assert_eq!(at(lines[1], "VALID"), col, "{text}");
        assert_eq!(at(lines[2], "INVALID"), col, "{text}");
        assert!(
            text.contains("  2  INVALID  m · a-much-longer-case-label"),
            "{text}"
        );
        assert!(
            text.contains("  → raise --iterations to at least 10 (or drop it: a default run sizes itself) (case 2)"),
            "{text}"
        );
    }

    #[test]
    fn wide_model_names_keep_the_columns_aligned() {
        let o = observations(150, 10.0);
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(
                vec![
                    case("画像分類モデル", "default", &[], &o),
                    case("tiny-cnn", "default", &[], &o),
                ],
                "h",
            ),
            observations: vec![Ok(o.clone()), Ok(o.clone())],
            settings: Vec::new(),
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table(&report);
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str, h: &str| width(&l[..l.find(h).expect(h)]);
        // Seven CJK characters take fourteen columns: the next column starts at the same place.
        let col = at(lines[0], "case");
        assert_eq!(at(lines[1], "default"), col, "{text}");
        assert_eq!(at(lines[2], "default"), col, "{text}");
        assert_eq!(at(lines[1], "VALID"), at(lines[0], "validity"), "{text}");
        assert_eq!(at(lines[2], "VALID"), at(lines[0], "validity"), "{text}");
    }

    #[test]
    fn names_are_shortened_between_words() {
        assert_eq!(clean_name("ch_PP-OCRv4_det_infer", 14), "ch_…det_infer");
        assert_eq!(clean_name("ch_PP-OCRv4_rec_infer", 14), "ch_…rec_infer");
        assert_eq!(clean_name("tiny-cnn", 14), "tiny-cnn");
        assert_eq!(
            clean_name("tiny-encoder-multilingual-base", 12),
            "tiny-…base"
        );
        // One long word: no cut between words fits, so the plain cut.
        assert_eq!(clean_name("abcdefghijklmnop", 6), "abcde…");
        for max in 1..30 {
            assert!(width(&clean_name("ch_PP-OCRv4_det_infer", max)) <= max.max(1));
        }
    }

    #[test]
    fn long_wide_names_are_shortened_by_columns() {
        assert_eq!(clean("画像分類モデル", 14), "画像分類モデル");
        let short = clean("画像分類モデル", 8);
        assert_eq!(short, "画像分…");
        assert!(width(&short) <= 8);
        assert_eq!(pad_right("画像", 6), "画像  ");
        assert_eq!(width("画像"), 4);
    }

    #[test]
    fn each_recommendation_is_printed_once_with_its_cases() {
        let short = observations(5, 1.0);
        let cases: Vec<_> = (0..5)
            .map(|i| case("m", &format!("c{i}"), &[], &short))
            .collect();
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(cases, "h"),
            observations: vec![Ok(short.clone()); 5],
            settings: Vec::new(),
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table(&report);
        assert_eq!(
            text.matches("raise --iterations to at least 10 ").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains("(or drop it: a default run sizes itself) (cases 1–5)"),
            "{text}"
        );
        assert_eq!(text.matches("✗ samples:").count(), 5, "{text}");
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1–3, 5, 7–8");
    }

    #[test]
    fn the_default_table_fits_100_columns_with_long_and_wide_names() {
        let o = observations(30, 1.0);
        let long = "a-model-with-a-very-long-name-from-some-hub-org/and-its-variant-v2.1-fp16";
        let cases = vec![
            case(
                "画像分類モデル・とても長い名前のバリアント",
                "default",
                &[],
                &o,
            ),
            case(
                long,
                "a-case-label[request.batch_size=16,request.seed=7]",
                &[],
                &o,
            ),
        ];
        let mut a = one_run(cases.clone(), &o);
        a.path = "results/nightly/a".into();
        let mut b = one_run(cases.clone(), &o);
        b.path = "results/nightly/b".into();
        let mut c = one_run(cases, &o);
        c.path = "results/nightly/c".into();
        c.run.provenance.machine.hostname = "a-build-machine-with-a-long-hostname".into();
        let report = report_of(vec![a, b, c]);
        let text = table(&report);
        assert_fits(&text);
        let lines: Vec<&str> = text.lines().collect();
        for h in [
            "model", "machine", "run", "p50 ms", "p99 ms", "CV %", "validity",
        ] {
            assert!(lines[0].contains(h), "header lacks {h}: {text}");
        }
        for h in ["p95", "outl", "95% CI"] {
            assert!(
                !lines[0].contains(h),
                "{h} belongs to the wide table: {text}"
            );
        }
        // Shortened names keep the columns aligned.
        let at = |l: &str, h: &str| width(&l[..l.find(h).expect(h)]);
        for row in &lines[1..7] {
            assert_eq!(at(row, "INVALID"), at(lines[0], "validity"), "{text}");
        }
        // The wide table has everything, names up to their caps.
        let wide = table_with(&report, Layout::Wide);
        for h in ["p50 95% CI", "p95 ms", "outl"] {
            assert!(wide.contains(h), "wide lacks {h}: {wide}");
        }
        assert!(wide.lines().any(|l| width(l) > MAX_WIDTH), "{wide}");
    }

    #[test]
    fn each_operation_shows_its_own_throughput() {
        let expect = [
            ("generate", "token/s", "16000"),
            ("classify", "image/s", "500.0"),
            ("transcribe", "audio s/s", "250.0"),
            ("rerank", "document/s", "500.0"),
            ("infer", "request/s", "500.0"),
        ];
        for (op, title, value) in expect {
            let (c, obs) = case_of(op, "m");
            let report = report_of(vec![one_run(vec![c], &obs)]);
            let text = table(&report);
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[0].contains(title), "{op}: {text}");
            // 2 ms calls: 500 calls/s, each one item, 32 tokens or half a second of audio.
            // The throughput is the cell before the verdict.
            let cells: Vec<&str> = lines[1].split_whitespace().collect();
            let cell = cells[cells.len() - 2];
            let near = |v: &str| {
                let x: f64 = v.replace(',', "").parse().expect(v);
                let y: f64 = value.parse().expect(value);
                (x - y).abs() / y < 0.05
            };
            assert!(near(cell), "{op}: {cell} vs {value}: {text}");
            if title != "request/s" {
                assert!(!lines[0].contains("request/s"), "{op}: {text}");
                assert!(table_with(&report, Layout::Wide).contains("request/s"));
            }
        }
        // Mixed operations: one column, the unit in each cell.
        let (gpt, obs) = case_of("generate", "gpt");
        let (cnn, _) = case_of("classify", "cnn");
        let text = table(&report_of(vec![one_run(vec![gpt, cnn], &obs)]));
        assert!(
            text.lines().next().expect("header").contains("throughput"),
            "{text}"
        );
        assert!(
            text.contains(" token/s") && text.contains(" image/s"),
            "{text}"
        );
        // Thousands are grouped: no `4347.2`-style numbers.
        assert!(!text.contains("500.00000"), "{text}");
    }

    #[test]
    fn runs_that_differ_only_by_a_setting_are_told_apart() {
        let o = observations(150, 1.0);
        let runs: Vec<LoadedRun> = [("a", "1"), ("b", "2")]
            .into_iter()
            .map(|(dir, threads)| {
                let mut r = one_run(vec![case("tiny-cnn", "single", &[], &o)], &o);
                r.path = format!("results/{dir}");
                r.settings = vec![BTreeMap::from([
                    ("runtime.threads".to_string(), threads.to_string()),
                    ("build.precision".to_string(), "fp32".to_string()),
                ])];
                r
            })
            .collect();
        let report = report_of(runs.clone());
        assert_eq!(distinctions(&report), ["threads=1", "threads=2"]);
        let text = table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("run"), "{text}");
        assert!(
            lines[1].contains("threads=1") && lines[2].contains("threads=2"),
            "{text}"
        );

        // The same settings twice: the run directories tell them apart.
        let mut same = runs.clone();
        same[1].settings = same[0].settings.clone();
        assert_eq!(distinctions(&report_of(same)), ["a", "b"]);
        // One case alone needs no run column.
        let alone = table(&report_of(vec![runs[0].clone()]));
        assert!(
            !alone.lines().next().expect("header").contains(" run "),
            "{alone}"
        );
    }

    #[test]
    fn long_reasons_wrap_under_their_indent() {
        let text = wrap(
            &format!("       ✗ {}", "word ".repeat(40).trim_end()),
            "         ",
            40,
        );
        assert!(text.lines().count() > 1, "{text}");
        for l in text.lines() {
            assert!(width(l) <= 40, "{l}");
        }
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("         word")),
            "{text}"
        );
        assert_eq!(wrap("short", "  ", 40), "short\n");
        let long_word = wrap(&"x".repeat(90), "  ", 40);
        assert!(long_word.lines().all(|l| width(l) <= 40), "{long_word}");
    }
}
