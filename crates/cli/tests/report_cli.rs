//! `trtmc-bench report` and the summaries of `run`, through the real binary on the test-only catalog:
//! discovery, atomic in-place rebuilds, refusal rules, malformed inputs, exports and the terminal table.

use std::path::{Path, PathBuf};

use crate::common::*;

/// A catalog with one test_sleep profile whose model and case names are an XSS probe.
pub const PROBE_MODEL: &str = "m<script>alert(1)</script>\"'";

pub(crate) fn probe_catalog(dir: &Path) -> PathBuf {
    let root = dir.join("probe-catalog");
    std::fs::create_dir_all(root.join("probe")).expect("mkdir");
    std::fs::write(
        root.join("probe/MODEL.toml"),
        "name = \"m<script>alert(1)</script>\\\"'\"\nsummary = \"XSS probe\"\ntask_strategy = \"test_sleep\"\ntest_manifests = [\"cases.toml\"]\n[source]\nnone = true\n",
    )
    .expect("write");
    std::fs::write(
        root.join("probe/cases.toml"),
        "[[case]]\nname = \"c<script>alert(2)</script>\\\"'\"\n[case.request]\nsleep_us = 100\n",
    )
    .expect("write");
    root
}

fn noop(out: &Path, iterations: &str) {
    let o = run_test_model(
        "test-noop",
        &[
            "--warmup",
            "3",
            "--iterations",
            iterations,
            "-o",
            out.to_str().expect("utf8"),
            "--quiet",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// `run` of the probe catalog's model with a sweep of three sleeps, into `out`; it must succeed.
pub(crate) fn probe_sweep(catalog: &Path, out: &Path) -> std::process::Output {
    let o = run(&[
        "run",
        "--manifest-root",
        catalog.to_str().expect("utf8"),
        "--model",
        PROBE_MODEL,
        "--warmup",
        "2",
        "--iterations",
        "40",
        "--sweep",
        "request.sleep_us=50,150,300",
        "-o",
        out.to_str().expect("utf8"),
        "--quiet",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    o
}

/// The `path` of every run a collection report lists, in its order.
fn run_paths(doc: &serde_json::Value) -> Vec<&str> {
    doc["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["path"].as_str().expect("path"))
        .collect()
}

/// The records of a CSV document (RFC 4180, read by the `csv` crate).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.expect("CSV record").iter().map(String::from).collect())
        .collect()
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

#[test]
fn report_builds_in_place_and_rebuilds_when_a_run_is_added() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("result-20260721");
    noop(&root.join("noop-a"), "120");
    let catalog = probe_catalog(tmp.path());
    probe_sweep(&catalog, &root.join("nested/probe"));
    let evidence: Vec<(PathBuf, Vec<u8>)> = ["noop-a", "nested/probe"]
        .iter()
        .flat_map(|d| ["result.json", "report.html"].map(|f| root.join(d).join(f)))
        .map(|p| {
            let b = bytes(&p);
            (p, b)
        })
        .collect();

    let out = run(&["report", root.to_str().expect("utf8")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&root.join("report.json"));
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["schema"], "trtmc.collection-report/v1");
    assert_eq!(doc["totals"]["runs"], 2);
    assert_eq!(doc["totals"]["cases"], 4);
    let paths = run_paths(&doc);
    assert_eq!(
        paths,
        vec!["nested/probe", "noop-a"],
        "sorted, relative to the report"
    );
    assert_eq!(
        doc["sweeps"].as_array().expect("sweeps").len(),
        1,
        "the three sleep_us points form one sweep"
    );
    assert_eq!(doc["sweeps"][0]["parameter"], "request.sleep_us");
    assert_eq!(doc["sweeps"][0]["numeric"], true);
    // Validity follows the policy: 40 calls cannot carry a p99, 120 no-op calls are far below 1 s.
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(case["validity"]["valid"], false, "{case}");
        let unmet: Vec<&str> = case["validity"]["constraints"]
            .as_array()
            .expect("constraints")
            .iter()
            .filter(|c| c["met"] == false)
            .map(|c| c["name"].as_str().expect("name"))
            .collect();
        assert!(unmet.contains(&"min duration"), "{unmet:?}");
        assert_eq!(
            unmet.contains(&"samples"),
            case["samples"].as_u64() < Some(10),
            "{case}"
        );
    }
    let html = std::fs::read_to_string(root.join("report.html")).expect("html");
    assert!(html.contains("data-report-kind=\"report\""));
    assert!(
        html.contains("href=\"nested/probe/report.html#case-2\""),
        "cases link to their run report"
    );
    assert!(
        stdout(&out).contains("report: ") && stdout(&out).contains("validity"),
        "{}",
        stdout(&out)
    );
    for (p, b) in &evidence {
        assert_eq!(&bytes(p), b, "{} must not be rewritten", p.display());
    }

    // Add a model directory and run the same command: the summary is rebuilt, nothing else changes.
    noop(&root.join("noop-b"), "30");
    let out = run(&["report", root.to_str().expect("utf8"), "--quiet"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "--quiet: {}", stdout(&out));
    let doc = read_json(&root.join("report.json"));
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["totals"]["runs"], 3);
    assert_eq!(doc["totals"]["cases"], 5);
    assert!(
        leftovers(&root).is_empty(),
        "temporary files left: {:?}",
        leftovers(&root)
    );
    for (p, b) in &evidence {
        assert_eq!(&bytes(p), b, "{} must not be rewritten", p.display());
    }
    let files: Vec<String> = std::fs::read_dir(&root)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !files.iter().any(|f| f == "result.json"),
        "no per-model file is copied up: {files:?}"
    );
}

#[test]
fn several_roots_need_an_output_and_links_walk_up_to_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    noop(&tmp.path().join("gb300/noop"), "20");
    noop(&tmp.path().join("h100/noop"), "20");
    let (a, b) = (tmp.path().join("gb300"), tmp.path().join("h100"));
    let out = run(&[
        "report",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
    ]);
    assert_refused(&out, 2, "-o OUT");
    let combined = tmp.path().join("reports/combined");
    let out = run(&[
        "report",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
        "-o",
        combined.to_str().expect("utf8"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&combined.join("report.json"));
    assert_valid("collection-report.schema.json", &doc);
    let paths = run_paths(&doc);
    assert_eq!(paths, vec!["../../gb300/noop", "../../h100/noop"]);
    assert!(
        !a.join("report.json").exists() && !b.join("report.json").exists(),
        "roots are not written with -o"
    );
}

#[test]
fn empty_missing_and_run_directories_are_clear_errors() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = run(&["report", tmp.path().to_str().expect("utf8")]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("no trtmc.benchmark-run/v1 result.json found below"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("trtmc-bench run --model"),
        "{}",
        stderr(&out)
    );
    assert!(!tmp.path().join("report.json").exists());

    let missing = tmp.path().join("nope");
    let out = run(&["report", missing.to_str().expect("utf8")]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));

    let single = tmp.path().join("single");
    noop(&single, "10");
    let before = bytes(&single.join("report.html"));
    let out = run(&["report", single.to_str().expect("utf8")]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a run directory") && stderr(&out).contains("-o OUT"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        bytes(&single.join("report.html")),
        before,
        "the run's own report is untouched"
    );
    // A single run can still be summarized elsewhere.
    let out = run(&[
        "report",
        single.to_str().expect("utf8"),
        "-o",
        tmp.path().join("single-report").to_str().expect("utf8"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // With --format, a run directory prints its summary and nothing is written into it.
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .expect("read dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let files_before = listing(&single);
    let out = run(&["report", single.to_str().expect("utf8"), "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON on stdout");
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["cases"][0]["model"], "test-noop");
    assert_eq!(doc["cases"][0]["samples"], 10);
    assert_eq!(
        listing(&single),
        files_before,
        "nothing new in the run directory"
    );
    assert_eq!(bytes(&single.join("report.html")), before);
}

#[test]
fn malformed_results_are_skipped_with_their_path_unless_strict() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("results");
    noop(&root.join("good"), "20");
    std::fs::create_dir_all(root.join("broken")).expect("mkdir");
    std::fs::write(
        root.join("broken/result.json"),
        "{\"schema\": \"trtmc.benchmark-run/v1\", \"cases\": 7}",
    )
    .expect("write");
    std::fs::create_dir_all(root.join("garbage")).expect("mkdir");
    std::fs::write(root.join("garbage/result.json"), "\u{0}\u{1}not json").expect("write");
    // A case whose observations are damaged keeps its numbers and loses only its plots.
    noop(&root.join("damaged"), "20");
    let damaged = read_json(&root.join("damaged/result.json"));
    let obs = root.join("damaged").join(
        damaged["cases"][0]["files"]["observations"]
            .as_str()
            .expect("path"),
    );
    std::fs::write(&obs, "{\"iteration\": \"x\"}\n").expect("write");

    let out = run(&["report", root.to_str().expect("utf8")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("broken/result.json") && err.contains("does not match trtmc.benchmark-run/v1"),
        "{err}"
    );
    assert!(
        err.contains("garbage/result.json") && err.contains("not valid JSON"),
        "{err}"
    );
    let doc = read_json(&root.join("report.json"));
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["totals"]["skipped"], 2);
    assert_eq!(doc["totals"]["cases"], 2);
    let damaged_case = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["observations_note"].is_string())
        .expect("noted");
    assert!(
        damaged_case["observations_note"]
            .as_str()
            .expect("note")
            .contains("line 1"),
        "{damaged_case}"
    );
    assert!(
        damaged_case["latency_ms"]["p50"].is_number(),
        "result.json numbers stay"
    );
    let html = std::fs::read_to_string(root.join("report.html")).expect("html");
    assert!(html.contains("skipped") && html.contains("garbage/result.json"));

    let before = bytes(&root.join("report.json"));
    let out = run(&["report", root.to_str().expect("utf8"), "--strict"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--strict") && stderr(&out).contains("garbage/result.json"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        bytes(&root.join("report.json")),
        before,
        "a failed build leaves the previous report"
    );
}

#[test]
fn report_exports_json_csv_and_markdown_with_hostile_names_escaped() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("r");
    let catalog = probe_catalog(tmp.path());
    probe_sweep(&catalog, &root.join("probe"));
    noop(&root.join("noop"), "150");

    let json = run(&["report", root.to_str().expect("utf8"), "--format", "json"]);
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let doc: serde_json::Value =
        serde_json::from_str(&stdout(&json)).expect("stdout is the JSON document");
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["cases"].as_array().expect("cases").len(), 4);
    assert!(
        doc["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["model"] == PROBE_MODEL)
            .count()
            == 3,
        "JSON keeps the name exactly"
    );

    let csv = run(&["report", root.to_str().expect("utf8"), "--format", "csv"]);
    assert_eq!(code(&csv), 0, "{}", stderr(&csv));
    let text = stdout(&csv);
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 5, "header + 4 cases: {text}");
    assert!(
        lines[0]
            .starts_with("run,number,model,case,label,operation,runtime,machine,status,samples")
    );
    // The probe contains a quote: the field is quoted and the quote doubled.
    let probe_line = lines
        .iter()
        .find(|l| l.contains("m<script>"))
        .expect("probe row");
    assert!(
        probe_line.contains("\"m<script>alert(1)</script>\"\"'\""),
        "{probe_line}"
    );
    let rows = parse_csv(&text);
    let header = &rows[0];
    assert!(rows.iter().all(|r| r.len() == header.len()), "{rows:?}");
    assert_eq!(
        rows.iter().filter(|r| r[2] == PROBE_MODEL).count(),
        3,
        "quoting round-trips"
    );
    let noop_row = rows.iter().find(|r| r[2] == "test-noop").expect("noop row");
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    assert_eq!(noop_row[col("samples")], "150");
    let p50: f64 = noop_row[col("p50_ms")].parse().expect("p50 is a number");
    let p99: f64 = noop_row[col("p99_ms")].parse().expect("p99 is a number");
    assert!(p50 > 0.0 && p99 >= p50);
    assert!(["VALID", "INVALID"].contains(&noop_row[col("validity")].as_str()));

    let md = run(&[
        "report",
        root.to_str().expect("utf8"),
        "--format",
        "markdown",
    ]);
    assert_eq!(code(&md), 0, "{}", stderr(&md));
    let text = stdout(&md);
    assert!(
        text.starts_with("### trtmc-bench summary\n\n**INVALID**: "),
        "{text}"
    );
    assert!(
        text.contains(" of 4 cases in 2 runs valid, "),
        "40-call cases are invalid: {text}"
    );
    assert!(text.contains("\n| # | model | case | runtime |"), "{text}");
    assert!(
        !text.contains("<script>"),
        "markdown must not carry raw HTML: {text}"
    );
    assert!(
        text.contains("m&lt;script&gt;alert(1)&lt;/script&gt;\"'"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
            .count(),
        4
    );
    assert!(
        text.contains("Invalid results:"),
        "40-call cases are invalid: {text}"
    );
}

#[test]
fn run_prints_a_compact_table_and_writes_its_exports() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let (csv, md, json) = (
        tmp.path().join("s.csv"),
        tmp.path().join("s.md"),
        tmp.path().join("s.json"),
    );
    let o = run_test_model(
        "test-noop",
        &[
            "--warmup",
            "2",
            "--iterations",
            "25",
            "-o",
            out_dir.to_str().expect("utf8"),
            "--quiet",
            "--export",
            csv.to_str().expect("utf8"),
            "--export",
            md.to_str().expect("utf8"),
            "--export",
            json.to_str().expect("utf8"),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("result: "), "{text}");
    for h in [
        "#",
        "model",
        "case",
        "calls",
        "p50 ms",
        "p99 ms",
        "CV %",
        "request/s",
        "validity",
    ] {
        assert!(lines[1].contains(h), "header lacks {h}: {}", lines[1]);
    }
    assert!(
        !lines[1].contains("p50 95% CI"),
        "the interval is in --format wide: {text}"
    );
    assert!(
        lines[2].contains("test-noop")
            && lines[2].contains(" 25 ")
            && lines[2].ends_with("INVALID"),
        "{text}"
    );
    assert!(text.contains("✗ min duration: timed loop ran"), "{text}");
    assert!(
        text.contains("→ add --duration 1 so timing covers at least 1.00 s"),
        "{text}"
    );
    assert!(
        lines[2].contains(" ~"),
        "p99 from 25 calls is marked: {text}"
    );
    let doc = read_json(&json);
    assert_valid("collection-report.schema.json", &doc);
    assert_eq!(doc["cases"][0]["samples"], 25);
    assert_eq!(
        std::fs::read_to_string(&csv)
            .expect("csv")
            .split("\r\n")
            .filter(|l| !l.is_empty())
            .count(),
        2
    );
    assert!(
        std::fs::read_to_string(&md)
            .expect("md")
            .contains("| 1 | test-noop | default |")
    );
    assert_result_dir_valid(&out_dir);

    // An unknown export format is refused before anything runs.
    let nothing = tmp.path().join("nothing");
    let o = run_test_model(
        "test-noop",
        &[
            "-o",
            nothing.to_str().expect("utf8"),
            "--export",
            tmp.path().join("s.txt").to_str().expect("utf8"),
        ],
    );
    assert_refused(&o, 3, ".json, .csv or .md");
    assert!(!nothing.exists(), "nothing ran");

    // --format prints the summary instead of the table: CSV on stdout, nothing else.
    let o = run_test_model(
        "test-noop",
        &[
            "--warmup",
            "2",
            "--iterations",
            "12",
            "-o",
            tmp.path().join("csv-run").to_str().expect("utf8"),
            "--format",
            "csv",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let rows = parse_csv(&text);
    assert_eq!(rows.len(), 2, "header + one case: {text}");
    let col = |name: &str| rows[0].iter().position(|h| h == name).expect(name);
    assert_eq!(rows[1][col("model")], "test-noop");
    assert_eq!(rows[1][col("samples")], "12");
    assert_eq!(rows[1][col("validity")], "INVALID");
    assert!(!text.contains("result: ") && !text.contains('✗'), "{text}");
}

/// Runs trtmc-bench in `dir` (short relative paths in its output) with its own bundle cache.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("start trtmc-bench")
}

/// Terminal columns of a line (CJK and emoji take two).
fn columns(line: &str) -> usize {
    trtmc_report::terminal::width(line)
}

#[test]
fn runs_differing_only_by_a_setting_show_apart_in_a_table_that_fits() {
    let tmp = tempfile::tempdir().expect("tmp");
    for threads in ["1", "2"] {
        let o = run_in(
            tmp.path(),
            &[
                "run",
                "--model",
                "tiny-cnn",
                "--warmup",
                "2",
                "--iterations",
                "20",
                "--set",
                &format!("runtime.threads={threads}"),
                "-o",
                &format!("results/t{threads}"),
                "--quiet",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = stdout(&o);
        // The classifier's own throughput, not request/s, in a table that fits 100 columns.
        let header = text.lines().nth(1).expect("header");
        assert!(
            header.contains("image/s") && !header.contains("request/s"),
            "{text}"
        );
        for l in text.lines() {
            assert!(columns(l) <= 100, "{} columns: {l}", columns(l));
        }
    }
    let o = run_in(tmp.path(), &["report", "results"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    for l in text.lines() {
        assert!(columns(l) <= 100, "{} columns: {l}\n{text}", columns(l));
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(" run ") && lines[0].contains("image/s"),
        "{text}"
    );
    let row = |n: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("row {n}: {text}"))
    };
    assert!(row("1").contains("threads=1"), "{text}");
    assert!(row("2").contains("threads=2"), "{text}");
    // The names (model, case, runtime, run) differ, not only the measured numbers.
    let names = |l: &str| {
        l.split_whitespace()
            .skip(1)
            .take(5)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_ne!(names(row("1")), names(row("2")), "{text}");

    // The wide table has every column; the Markdown summary the default one's plus a verdict line.
    let o = run_in(tmp.path(), &["report", "results", "--format", "wide"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let wide = stdout(&o);
    let header = wide.lines().next().expect("header");
    for h in [
        "p50 95% CI",
        "p95 ms",
        "outl",
        "request/s",
        "image/s",
        "run",
    ] {
        assert!(header.contains(h), "wide lacks {h}: {wide}");
    }
    let o = run_in(tmp.path(), &["report", "results", "--format", "markdown"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.starts_with("### trtmc-bench summary"), "{md}");
    assert!(md.contains("2 cases in 2 runs"), "{md}");
    assert!(
        md.contains("| run | calls | p50 ms | p99 ms | CV % | image/s | validity |"),
        "{md}"
    );
    assert!(
        md.contains("| threads=1 |") && md.contains("| threads=2 |"),
        "{md}"
    );
}
