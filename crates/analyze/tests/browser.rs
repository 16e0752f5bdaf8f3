//! The packaged report in headless Chromium (Debian package `chromium`): it renders from file://
//! with no console errors, shows every panel, draws the ~400-layer ControlNet graph, writes a
//! screenshot, and shows an XSS probe layer name as text; the packed layer data in data.js unpacks
//! to exactly the analysis (analysis.json); a large graph is drawn only once its panel is in view.
//!
//! Fails when Chromium is missing, unless TRTMC_SKIP_BROWSER=1. TRTMC_CHROMIUM names the binary.

// The project's Chromium flags, shared with the CLI's report tests.
#[path = "../../../tests/browser/report-chromium.rs"]
mod chromium;
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use trtmc_analyze::Inputs;
use trtmc_analyze::report::{PackageOptions, package};

const PROBE: &str = "<img src=x onerror=alert(1)>\"'";

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRTMC_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(trtmc_core::machine::find_program)
}

/// Runs Chromium with exactly the flags the project uses, plus `extra`; returns (stdout, stderr).
fn run_chromium(bin: &Path, profile: &Path, extra: &[&str], url: &str) -> (String, String) {
    let mut child = Command::new(bin)
        .args(chromium::FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let read_out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
    let read_err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait") {
            Some(_) => break,
            None if started.elapsed() > Duration::from_secs(90) => {
                let _ = child.kill();
                panic!("chromium did not finish within 90 s");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    (
        read_out.join().unwrap_or_default(),
        read_err.join().unwrap_or_default(),
    )
}

/// The DOM `url` leaves once rendered in a desktop-sized (1400x1000) window, with a fresh `profile`.
fn desktop_dom(bin: &Path, profile: &Path, url: &str) -> String {
    run_chromium(
        bin,
        profile,
        &["--window-size=1400,1000", "--dump-dom"],
        url,
    )
    .0
}

/// The attributes of the first start tag that contains `marker` (e.g. `<div id="graph"`).
fn tag_attributes(dom: &str, marker: &str) -> std::collections::BTreeMap<String, String> {
    let start = dom
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in the page"));
    let tag = &dom[start..start + dom[start..].find('>').expect("tag end")];
    let mut attrs = std::collections::BTreeMap::new();
    for part in tag.split("\" ") {
        if let Some((k, v)) = part.rsplit_once("=\"") {
            let key = k.rsplit(' ').next().unwrap_or(k).to_owned();
            attrs.insert(key, v.trim_end_matches('"').to_owned());
        }
    }
    attrs
}

/// family -> the fills of its graph nodes, read from the dumped DOM.
fn family_fills(
    dom: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut fills = std::collections::BTreeMap::<_, std::collections::BTreeSet<_>>::new();
    for node in dom.split("<g class=\"node").skip(1) {
        let value = |name: &str| {
            let at = node.find(name).map(|i| i + name.len())?;
            Some(node[at..at + node[at..].find('"')?].to_owned())
        };
        let family = value("data-family=\"").expect("node family");
        let fill = value("fill=\"").expect("node fill");
        fills.entry(family).or_default().insert(fill);
    }
    fills
}

/// Edges that jump ranks in every layering: a longer path joins their ends (residual connections).
fn forced_skip_edges(edges: &[[u32; 2]], layers: usize) -> usize {
    let mut succ = vec![Vec::new(); layers];
    for e in edges {
        succ[e[0] as usize].push(e[1] as usize);
    }
    edges
        .iter()
        .filter(|e| {
            let (from, to) = (e[0] as usize, e[1] as usize);
            // Longest path from `from` to each later layer, in index (topological) order.
            let mut longest = vec![None::<usize>; layers];
            longest[from] = Some(0);
            for v in from..to {
                let Some(len) = longest[v] else { continue };
                for &w in &succ[v] {
                    if w > v && w <= to {
                        longest[w] = Some(longest[w].map_or(len + 1, |l| l.max(len + 1)));
                    }
                }
            }
            longest[to].is_some_and(|l| l > 1)
        })
        .count()
}

fn package_trex(stem: &str, dir: &Path) -> (trtmc_analyze::Analysis, PathBuf) {
    let layers = common::fixture(&format!("trex/{stem}.layers.json"));
    let profile = common::fixture(&format!("trex/{stem}.profile.json"));
    let a = common::analyze(common::data(&layers, Some(&profile)));
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(dir.to_owned()),
            ..Default::default()
        },
    )
    .expect("packaged");
    (a, report.index)
}

/// Issue 16: the whole graph of an 85-layer MobileNetV2 (ten residual blocks) fits the view with
/// labels of at least 10 px on screen, every residual skip runs in a lane of its own (never over a
/// main edge or through a layer), and a family has the same colour in two different reports. The
/// page measures itself (`?check=graph`); the screenshot is kept under Cargo's target tmp folder.
#[test]
fn graph_is_readable_at_fit() {
    let Some(bin) = chromium() else {
        if std::env::var_os("TRTMC_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("skipping: chromium not found and TRTMC_SKIP_BROWSER=1");
            return;
        }
        panic!("chromium not found (set TRTMC_CHROMIUM, or TRTMC_SKIP_BROWSER=1 to skip)");
    };
    let work = tempfile::tempdir().expect("tempdir");
    let mut fills_by_report = Vec::new();
    for (stem, min_layers) in [
        ("mobilenet-qat-titanrtx-trt82", 80),
        ("resnet18-pt-a100-fp16", 30),
    ] {
        let (a, index) = package_trex(stem, &work.path().join(stem));
        let backend = &a.backends[0];
        let graph = backend.graph.as_ref().expect("the export has tensors");
        let layers = backend.layers.len();
        assert!(layers >= min_layers, "{stem}: {layers} layers");
        let url = format!("file://{}?check=graph", index.display());
        let dom = desktop_dom(&bin, &work.path().join(format!("profile-{stem}")), &url);
        assert!(
            dom.contains("data-report-errors=\"0\""),
            "{stem}: page errors: {}",
            dom.split("self-check").nth(1).unwrap_or("")
        );
        let m = tag_attributes(&dom, "<div id=\"graph\"");
        let num = |k: &str| -> f64 {
            m.get(k)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{stem}: no {k} measured: {m:?}"))
        };
        assert_eq!(
            num("data-nodes") as usize,
            layers,
            "{stem}: every layer is drawn at fit: {m:?}"
        );
        assert_eq!(
            num("data-offscreen"),
            0.0,
            "{stem}: the whole graph is in view at fit: {m:?}"
        );
        assert!(
            num("data-label-px") >= 10.0,
            "{stem}: node labels of at least 10 px on screen at fit: {m:?}"
        );
        let forced = forced_skip_edges(&graph.edges, layers);
        assert!(
            forced >= 5,
            "{stem}: the fixture has residual skips ({forced})"
        );
        assert!(
            num("data-skip-edges") as usize >= forced,
            "{stem}: every residual skip is drawn as a skip ({forced}): {m:?}"
        );
        assert_eq!(
            num("data-skip-overlaps"),
            0.0,
            "{stem}: no skip edge runs over a main edge or through a layer: {m:?}"
        );
        let fills = family_fills(&dom);
        for (family, set) in &fills {
            assert_eq!(set.len(), 1, "{stem}: one colour for {family}: {set:?}");
        }
        fills_by_report.push(fills);

        // The screenshot, tall enough to show the graph panel (an artefact to look at, not compared).
        let top = num("data-page-top") as u32;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analyze-graph");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let shot = dir.join(format!("{stem}-graph-fit.png"));
        let _ = std::fs::remove_file(&shot);
        run_chromium(
            &bin,
            &work.path().join(format!("profile-{stem}-shot")),
            &[
                &format!("--window-size=1400,{}", top + 640),
                &format!("--screenshot={}", shot.display()),
            ],
            &url,
        );
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "screenshot of {} bytes",
            png.len()
        );
        eprintln!("{stem}: graph at fit {m:?}; screenshot {}", shot.display());
    }
    let (mobilenet, resnet) = (&fills_by_report[0], &fills_by_report[1]);
    let shared: Vec<_> = mobilenet
        .keys()
        .filter(|f| resnet.contains_key(*f))
        .collect();
    assert!(shared.len() >= 3, "families in both reports: {shared:?}");
    for family in shared {
        assert_eq!(
            mobilenet[family], resnet[family],
            "{family} has one colour in both reports"
        );
    }
    assert_eq!(
        mobilenet["convolution"].iter().next().map(String::as_str),
        Some("#6fa8dc"),
        "convolution has its fixed colour (docs/analyze.md)"
    );
    assert_ne!(mobilenet["convolution"], mobilenet["quant_dequant"]);
}

/// A backend folder whose first layer is named like an XSS probe.
fn probe_inputs(dir: &Path) {
    let fixtures = common::fixtures_dir().join("trex");
    let mut layers: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("resnet18-pt-a100-fp16.layers.json"))
            .expect("layers"),
    )
    .expect("json");
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("resnet18-pt-a100-fp16.profile.json"))
            .expect("profile"),
    )
    .expect("json");
    let old = layers["Layers"][1]["Name"]
        .as_str()
        .expect("name")
        .to_owned();
    layers["Layers"][1]["Name"] = PROBE.into();
    for rec in profile.as_array_mut().expect("list") {
        if rec["name"] == old.as_str() {
            rec["name"] = PROBE.into();
        }
    }
    std::fs::write(dir.join("layers_probe.json"), layers.to_string()).expect("write");
    std::fs::write(dir.join("profile_probe.json"), profile.to_string()).expect("write");
}

/// Chromium, or None when it is missing and TRTMC_SKIP_BROWSER=1 (else the test fails).
fn chromium_or_skip() -> Option<PathBuf> {
    let Some(bin) = chromium() else {
        if std::env::var_os("TRTMC_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("skipping: chromium not found and TRTMC_SKIP_BROWSER=1");
            return None;
        }
        panic!(
            "chromium not found: install Debian's `chromium` package (or set TRTMC_CHROMIUM, or TRTMC_SKIP_BROWSER=1 to skip)"
        );
    };
    Some(bin)
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");

    // 1. XSS probe: the layer name must appear as text, never as an element.
    let inputs = work.path().join("probe");
    std::fs::create_dir(&inputs).expect("mkdir");
    probe_inputs(&inputs);
    let a = common::analyze(Inputs::Folder(inputs));
    assert!(
        a.backends[0].passed(),
        "{:?}",
        a.backends[0].validation.messages
    );
    let md = work.path().join("analysis.md");
    std::fs::write(
        &md,
        format!("## Summary\nProbe {PROBE}\n\n## Details\nnone\n"),
    )
    .expect("md");
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(work.path().join("probe-report")),
            analyze_md: Some(md),
            ..Default::default()
        },
    )
    .expect("packaged");
    let url = format!("file://{}", report.index.display());
    let (dom, _) = run_chromium(&bin, &work.path().join("profile-a"), &["--dump-dom"], &url);
    assert!(
        dom.contains("data-report-ready=\"true\""),
        "the app did not finish rendering: {}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt;\"'"),
        "the probe name is shown as text"
    );
    assert!(
        dom.contains("ready errors=0 imgs=0"),
        "the probe must not become an element: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    for panel in [
        "summary-panel",
        "analysis-panel",
        "findings-panel",
        "validation-panel",
        "charts-panel",
        "layers-panel",
        "details-panel",
        "graph-panel",
        "comparison-panel",
    ] {
        assert!(dom.contains(&format!("id=\"{panel}\"")), "{panel} missing");
    }
    assert!(
        !dom.contains("id=\"analysis-panel\" hidden"),
        "the written analysis is shown"
    );
    // The title follows the runtime; the Summary dates the export and says from what.
    assert!(
        dom.contains("TensorRT analysis report</h1>"),
        "runtime title"
    );
    assert!(
        dom.contains(": TensorRT 8.4–8.x — from: profile records carry medianMs")
            && dom.contains("Export era of "),
        "era of the selected build, named, with its evidence in the Summary"
    );
    // Every build's era in its own row of the summary table (issue 36).
    assert!(dom.contains(">export era</th>"), "era column");
    assert!(
        dom.contains(">TensorRT 8.4–8.x</td>"),
        "the era in the backend's row"
    );

    // 2. Console: no errors or CSP refusals while loading, and a screenshot.
    let shot = work.path().join("report.png");
    let (_, log) = run_chromium(
        &bin,
        &work.path().join("profile-b"),
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,3200",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    let console: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
        })
        .collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot of {} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("TRTMC_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep screenshot");
    }

    // 3. The ~400-layer ControlNet graph is drawn whole, with the comparison of the MNIST builds.
    let a = common::analyze(Inputs::Folder(common::fixtures_dir().join("trtexec-other")));
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(work.path().join("other-report")),
            ..Default::default()
        },
    )
    .expect("packaged");
    let url = format!(
        "file://{}?backend=controlnet-sd15-trt86",
        report.index.display()
    );
    let (dom, _) = run_chromium(&bin, &work.path().join("profile-c"), &["--dump-dom"], &url);
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    let nodes = dom.matches("class=\"node").count();
    assert_eq!(nodes, 389, "every ControlNet layer is a graph node");
    assert!(
        dom.contains("mnist-cnn: 2 backends"),
        "comparison panel lists the MNIST builds"
    );
}

/// Numbers as f64, so that `3` (JavaScript) and `3.0` (serde_json) compare equal.
fn numbers_as_f64(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
        Value::Array(list) => Value::Array(list.into_iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_f64(v)))
                .collect(),
        ),
        other => other,
    }
}

/// What app.js made of data.js: the report folder gets a copy of index.html that also loads a
/// script writing `window.TRTMC_REPORT.analysis` (unpacked by app.js) into the page as JSON.
fn unpacked_in_chromium(bin: &Path, report: &Path, profile: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(report.join("index.html")).expect("index");
    let html = html.replace(
        "<script src=\"app.js\"></script>",
        "<script src=\"app.js\"></script>\n<script src=\"dump.js\"></script>",
    );
    std::fs::write(report.join("dump.html"), html).expect("dump.html");
    std::fs::write(
        report.join("dump.js"),
        "var pre = document.createElement('pre'); pre.id = 'unpacked';\n\
         pre.textContent = JSON.stringify(window.TRTMC_REPORT.analysis);\n\
         document.body.appendChild(pre);\n",
    )
    .expect("dump.js");
    let url = format!("file://{}", report.join("dump.html").display());
    let (dom, _) = run_chromium(bin, profile, &["--dump-dom"], &url);
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    assert!(
        dom.contains("data-report-ms=\""),
        "the page marks when it is usable"
    );
    let text = dom
        .split("<pre id=\"unpacked\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .expect("the unpacked analysis in the page");
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&text).expect("unpacked analysis as JSON")
}

#[test]
fn packed_data_unpacks_to_the_analysis() {
    let Some(bin) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let probe = work.path().join("probe");
    std::fs::create_dir(&probe).expect("mkdir");
    probe_inputs(&probe);
    let fixtures = common::fixtures_dir();
    for (i, folder) in [probe, fixtures.join("trex"), fixtures.join("trtexec-other")]
        .into_iter()
        .enumerate()
    {
        let a = common::analyze(Inputs::Folder(folder.clone()));
        let report = package(
            &a,
            &PackageOptions {
                report_dir: Some(work.path().join(format!("report-{i}"))),
                ..Default::default()
            },
        )
        .expect("packaged");
        let unpacked = unpacked_in_chromium(
            &bin,
            &report.report_dir,
            &work.path().join(format!("profile-{i}")),
        );
        let mut expected = Vec::new();
        a.write_json(&mut expected).expect("analysis.json");
        let expected: serde_json::Value = serde_json::from_slice(&expected).expect("json");
        // Spot checks first, for a readable failure: layer counts, names, timings.
        for (b, (x, y)) in a.backends.iter().zip(
            expected["backends"]
                .as_array()
                .expect("backends")
                .iter()
                .zip(unpacked["backends"].as_array().expect("backends")),
        ) {
            assert_eq!(
                y["layers"].as_array().map(Vec::len),
                Some(b.layers.len()),
                "{}",
                b.label
            );
            assert_eq!(
                x["layers"][0]["name"], y["layers"][0]["name"],
                "{}",
                b.label
            );
            assert_eq!(
                numbers_as_f64(x["layers"][0]["timing"].clone()),
                numbers_as_f64(y["layers"][0]["timing"].clone()),
                "{}",
                b.label
            );
        }
        if i == 0 {
            assert_eq!(unpacked["backends"][0]["layers"][1]["name"], PROBE);
        }
        assert!(
            numbers_as_f64(unpacked) == numbers_as_f64(expected),
            "{}: the unpacked analysis differs from analysis.json",
            folder.display()
        );
    }
}

/// A chain of `copies` ResNet18 fp16 builds as `layers_x.json` / `profile_x.json` in `dir`.
fn large_inputs(dir: &Path, copies: usize) {
    let (doc, records) = common::chained_resnets(copies);
    std::fs::write(dir.join("layers_x.json"), doc.to_string()).expect("write");
    std::fs::write(dir.join("profile_x.json"), records.to_string()).expect("write");
}

#[test]
fn a_large_graph_is_drawn_when_its_panel_is_in_view() {
    let Some(bin) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let inputs = work.path().join("large");
    std::fs::create_dir(&inputs).expect("mkdir");
    large_inputs(&inputs, 40);
    let a = common::analyze(Inputs::Folder(inputs));
    assert_eq!(a.backends[0].layers.len(), 1440);
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(work.path().join("report")),
            ..Default::default()
        },
    )
    .expect("packaged");
    let url = format!("file://{}", report.index.display());
    // A small window: the graph panel is far below, so the first render leaves it for later.
    let (dom, _) = run_chromium(
        &bin,
        &work.path().join("profile-a"),
        &["--window-size=800,600", "--dump-dom"],
        &url,
    );
    assert!(dom.contains("data-report-errors=\"0\""), "page errors");
    assert!(
        dom.contains("showing 300 of 1440 matching"),
        "the layer table is drawn"
    );
    assert_eq!(dom.matches("class=\"node").count(), 0, "no graph yet");
    assert!(dom.contains("drawn when this panel is scrolled into view"));
    // A window tall enough to show the graph panel: it is drawn.
    let (dom, _) = run_chromium(
        &bin,
        &work.path().join("profile-b"),
        &["--window-size=1400,20000", "--dump-dom"],
        &url,
    );
    assert!(dom.contains("data-report-errors=\"0\""), "page errors");
    assert!(
        dom.matches("class=\"node").count() > 0,
        "the graph is drawn once its panel is in view"
    );
}

/// `(layer index, label)` of every drawn graph node, read from the dumped DOM.
fn node_labels(dom: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for part in dom.split("<g class=\"node").skip(1) {
        let Some(layer) = part
            .split("data-layer=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
        else {
            continue;
        };
        let label = part
            .split("class=\"layer-name\"")
            .nth(1)
            .and_then(|r| r.split_once('>'))
            .and_then(|(_, r)| r.split("</text>").next())
            .unwrap_or("")
            .to_owned();
        out.push((layer, label));
    }
    out
}

/// The ResNet18 fp16 build with TensorFlow-style path names, as in the ResNet-50 export of
/// issue 36 where most names end in `/Relu` or `/Conv2D` (reformat copies renamed to match).
fn path_named_resnet(dir: &Path) -> PathBuf {
    let path = common::fixture("trex/resnet18-pt-a100-fp16.layers.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let layers = doc["Layers"].as_array_mut().expect("layers");
    let copy = "Reformatting CopyNode for ";
    let mut renamed = std::collections::HashMap::new();
    for (i, l) in layers.iter().enumerate() {
        let name = l["Name"].as_str().expect("name");
        if name.starts_with(copy) {
            continue;
        }
        let last = if name.contains("Relu") {
            "Relu"
        } else if name.starts_with("Conv") {
            "Conv2D"
        } else {
            "BiasAdd"
        };
        renamed.insert(name.to_owned(), format!("resnet18/block_{}/{last}", i / 4));
    }
    for l in layers.iter_mut() {
        let name = l["Name"].as_str().expect("name").to_owned();
        let new = match name.strip_prefix(copy) {
            Some(rest) => {
                let (head, consumer) = rest.split_once(" to ").expect("a copy names its consumer");
                let consumer = renamed
                    .get(consumer)
                    .cloned()
                    .unwrap_or(consumer.to_owned());
                format!("{copy}{head} to {consumer}")
            }
            None => renamed[&name].clone(),
        };
        l["Name"] = serde_json::json!(new);
    }
    let out = dir.join("resnet-paths.layers.json");
    std::fs::write(&out, doc.to_string()).expect("write");
    out
}

/// Issue 36: on every fixture engine with a graph (and on path-named layers where most names end
/// alike), no two drawn node labels at Fit are equal, and every reformat copy keeps its
/// `reformat→` / `reformat←` prefix.
#[test]
fn no_two_graph_labels_are_equal_at_fit() {
    let Some(bin) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let fixture = |rel: &str| common::fixture(rel);
    let mut engines: Vec<(String, PathBuf, Option<PathBuf>)> = [
        "mobilenet-qat-titanrtx",
        "mobilenet-qat-titanrtx-trt82",
        "resnet18-pt-a100-fp16",
        "resnet18-pt-a100-fp32",
        "resnet18-pt-a100-qat",
        "resnet18-pt-a100-qat-residual",
        "resnet18-pt-a100-qat-residual-qgap",
    ]
    .into_iter()
    .map(|stem| {
        (
            stem.to_owned(),
            fixture(&format!("trex/{stem}.layers.json")),
            Some(fixture(&format!("trex/{stem}.profile.json"))),
        )
    })
    .collect();
    for (stem, layers, profile) in [
        (
            "controlnet",
            "trtexec-other/controlnet-sd15-trt86.layers.json",
            Some("trtexec-other/controlnet-sd15-trt86.profile.json"),
        ),
        (
            "mnist-10.14",
            "trtexec-other/mnist-cnn-trt10.14-rtx6000ada.layers.json",
            None,
        ),
        (
            "mnist-10.16",
            "trtexec-other/mnist-cnn-trt10.16-h100.layers.json",
            None,
        ),
        (
            "trt10.16-detailed",
            "trtexec-logs/trt10.16_exportLayerInfo_detailed.json",
            None,
        ),
    ] {
        engines.push((stem.to_owned(), fixture(layers), profile.map(fixture)));
    }
    engines.push((
        "resnet-paths".to_owned(),
        path_named_resnet(work.path()),
        None,
    ));
    for (stem, layers, profile) in engines {
        let a = common::analyze(common::data(&layers, profile.as_deref()));
        let backend = &a.backends[0];
        let index = package(
            &a,
            &PackageOptions {
                report_dir: Some(work.path().join(&stem)),
                ..Default::default()
            },
        )
        .expect("packaged")
        .index;
        let url = format!("file://{}?check=graph", index.display());
        let dom = desktop_dom(&bin, &work.path().join(format!("profile-{stem}")), &url);
        let m = tag_attributes(&dom, "<div id=\"graph\"");
        assert_eq!(
            m.get("data-duplicate-labels").map(String::as_str),
            Some("0"),
            "{stem}: equal labels at fit: {m:?}"
        );
        let labels = node_labels(&dom);
        assert!(labels.len() >= 5, "{stem}: {} nodes drawn", labels.len());
        let mut seen = std::collections::HashSet::new();
        for (layer, label) in &labels {
            assert!(!label.is_empty(), "{stem}: layer {layer} has no label");
            assert!(seen.insert(label.clone()), "{stem}: `{label}` twice");
            let name = &backend.layers[*layer].name;
            if name.starts_with("Reformatting CopyNode for ") {
                let shown = label
                    .split_once(' ')
                    .filter(|(t, _)| t.starts_with('#'))
                    .map_or(label.as_str(), |(_, r)| r);
                assert!(
                    shown.starts_with("reformat"),
                    "{stem}: {name} shown as `{label}`"
                );
            }
        }
        if stem == "resnet-paths" {
            // The names alone end alike; the labels do not.
            let relu = labels.iter().filter(|(_, l)| l.ends_with("/Relu")).count();
            assert!(relu >= 5, "labels: {labels:?}");
        }
    }
}

/// Issue 36: folding NoOps (as TREx does) hides their rows and keeps the table's sums: the
/// MobileNet QAT engine shows 72 layers folded (TREx's count) against 73, with the same Σ average
/// and Σ share; the memory columns are there because the export lists weights and tensors.
#[test]
fn folding_noops_keeps_the_sums_and_memory_columns_show() {
    let Some(bin) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let (a, index) = package_trex("mobilenet-qat-titanrtx", &work.path().join("report"));
    let noops = a.backends[0]
        .layers
        .iter()
        .filter(|l| &*l.raw_type == "NoOp")
        .count();
    assert_eq!(noops, 1);
    let mut sums = Vec::new();
    for (i, query) in ["", "?fold=noops"].into_iter().enumerate() {
        let url = format!("file://{}{query}", index.display());
        let dom = desktop_dom(&bin, &work.path().join(format!("profile-{i}")), &url);
        assert!(
            dom.contains("data-report-errors=\"0\""),
            "{query}: page errors"
        );
        let m = tag_attributes(&dom, "<p id=\"layer-sum\"");
        let num = |k: &str| -> f64 {
            m.get(k)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{query}: no {k}: {m:?}"))
        };
        sums.push((num("data-rows"), num("data-sum-avg"), num("data-sum-pct")));
        assert!(
            dom.contains(">weights</th>") && dom.contains(">activations</th>"),
            "{query}: memory columns"
        );
    }
    let (plain, folded) = (sums[0], sums[1]);
    assert_eq!((plain.0, folded.0), (73.0, 72.0));
    assert!(
        (plain.1 - folded.1).abs() < 1e-9,
        "Σ avg {plain:?} vs {folded:?}"
    );
    assert!(
        (plain.2 - folded.2).abs() < 1e-9,
        "Σ share {plain:?} vs {folded:?}"
    );
}
