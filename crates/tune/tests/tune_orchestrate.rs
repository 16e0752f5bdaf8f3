//! The tune orchestrator in-process, with a fake route runner in place of the build and serving
//! processes: the files a tune writes, the saved bundles and their tuned-route record, `--continue`
//! replaying the cache, the fingerprint check, and the output directory refusing foreign content.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use trtmc_core::accuracy::{ElementType, Tensor};
use trtmc_core::case::{self, Override, ResolveInput, Source};
use trtmc_tune::orchestrate::{
    self, BuiltRoutes, Model, ModelChoice, Start, TuneOutcome, TuneRequest, TuneRunError,
};
use trtmc_tune::process::{RouteBundle, Target};
use trtmc_tune::progress::{Event, Progress};
use trtmc_tune::runtime_knobs as knobs;
use trtmc_tune::summary::DecisionKind;
use trtmc_tune::{
    MeasurePlan, Route, RouteError, RouteRunner, SearchOrder, Timing, TuneConfig, TunePlan,
};

/// Builds nothing and starts no process: a route's "bundle" is a directory with one file, its outputs
/// are the same for every route, `-threads=2` takes half the time of every other route, and
/// `-precision=fp16` 600 times as long (tract's f16 transform on tiny-cnn: ~6 s per call against ~1 ms).
struct FakeRoutes {
    target: Target,
    cache_root: PathBuf,
    built: BTreeMap<String, RouteBundle>,
}

impl FakeRoutes {
    fn new(target: Target, cache_root: PathBuf) -> Self {
        Self {
            target,
            cache_root,
            built: BTreeMap::new(),
        }
    }
}

impl RouteRunner for FakeRoutes {
    type Built = String;

    fn build(&mut self, route: &Route, _timeout: Option<Duration>) -> Result<String, RouteError> {
        let rt =
            trtmc_runtime::registry::runtime(&self.target.runtime).map_err(RouteError::failed)?;
        let settings = knobs::route_settings(rt.as_ref(), route)
            .map_err(|e| RouteError::failed(e.to_string()))?;
        let input = ResolveInput {
            case: self.target.case.as_deref(),
            sets: self.target.sets.clone(),
            sweep_point: settings.overrides.clone(),
            runtime: Some(self.target.runtime.clone()),
            ..ResolveInput::default()
        };
        let resolved = case::resolve(
            &self.target.profile,
            &input,
            trtmc_runtime::registry::declared_settings(),
        )
        .map_err(|e| RouteError::failed(e.to_string()))?;
        let bundle = self
            .cache_root
            .join(format!("fake-{}.bundle", self.built.len()));
        std::fs::create_dir_all(&bundle).map_err(|e| RouteError::failed(e.to_string()))?;
        std::fs::write(bundle.join("model.bin"), route.to_string())
            .map_err(|e| RouteError::failed(e.to_string()))?;
        self.built.insert(
            route.to_string(),
            RouteBundle {
                route: route.to_string(),
                resolved,
                settings,
                bundle,
                key: format!("fake-key-{}", self.built.len()),
            },
        );
        Ok(route.to_string())
    }

    fn outputs(
        &mut self,
        _built: &mut String,
        _inputs: &[Tensor],
        _timeout: Option<Duration>,
    ) -> Result<Vec<Tensor>, RouteError> {
        let logits = Tensor::new("logits", ElementType::F32, vec![1, 3], vec![0.1, 0.7, 0.2])
            .map_err(|e| RouteError::failed(e.to_string()))?;
        Ok(vec![logits])
    }

    fn measure(&mut self, built: &mut String, plan: &MeasurePlan) -> Result<Timing, RouteError> {
        let mut base = if built.contains("-threads=2") {
            5.0
        } else {
            10.0
        };
        if built.contains("-precision=fp16") {
            base *= 600.0;
        }
        // A small deterministic ripple, so the intervals have a width.
        let ripple = |i: usize| base * (1.0 + 0.002 * (i % 5) as f64);
        Ok(Timing {
            notes: Vec::new(),
            warmup_ms: (0..plan.warmup_calls).map(ripple).collect(),
            samples_ms: (0..plan.calls).map(ripple).collect(),
        })
    }
}

impl BuiltRoutes for FakeRoutes {
    fn route_bundle(&self, route: &str) -> Option<RouteBundle> {
        self.built.get(route).cloned()
    }
}

/// Remembers what the orchestrator reported.
#[derive(Default)]
struct Recorder {
    started: RefCell<Vec<String>>,
    iterations: RefCell<Vec<(usize, bool)>>,
}

impl Progress for Recorder {
    fn report(&self, event: Event<'_>) {
        match event {
            Event::TuneStarted { model, runtime, .. } => self
                .started
                .borrow_mut()
                .push(format!("{model} on {runtime}")),
            Event::Iteration {
                record, replayed, ..
            } => self.iterations.borrow_mut().push((record.iter, replayed)),
            _ => {}
        }
    }
}

fn write_model(path: &Path, seed: u64) {
    std::fs::write(
        path,
        trtmc_modelgen::generate("tiny-cnn", seed).expect("model"),
    )
    .expect("write the model");
}

/// A tune of tiny-cnn (as an ONNX file) on tract over `-threads=[1|2]`, every route evaluated.
fn setup(tmp: &Path) -> (TuneRequest, TunePlan) {
    let onnx = tmp.join("cnn.onnx");
    write_model(&onnx, 5);
    let model = Model::load(
        &ModelChoice::OnnxFile(onnx),
        &trtmc_core::test_hooks::TestHooks::default(),
    )
    .expect("model");
    let sets = vec![Override {
        key: "build.dims.batch".into(),
        value: "1".into(),
        source: Source::Cli,
    }];
    let base = model.resolve_base(None, &sets, "tract").expect("base case");
    let tract = trtmc_runtime::registry::runtime("tract").expect("tract");
    let knobs = orchestrate::knob_database(tract.as_ref(), Some(&base)).expect("knobs");
    let expression = trtmc_tune::expr::parse("-threads=[1|2]", &knobs).expect("expression");
    let plan = TunePlan {
        knobs,
        expression,
        config: TuneConfig {
            search: SearchOrder::Full,
            calls: 20,
            ..TuneConfig::default()
        },
    };
    let output_dir = orchestrate::prepare_output(Some(&tmp.join("out"))).expect("output");
    let request = TuneRequest {
        model,
        base,
        runtime: "tract".into(),
        trtexec: None,
        case: None,
        sets,
        cache: output_dir.join(orchestrate::CACHE_FILE),
        output_dir,
        inputs: None,
        ref_outputs: None,
        save_bundle: Some(tmp.join("best.bundle")),
        save_all: true,
        bundle_cache: tmp.join("bundles"),
        live_workers: 2,
        command_line: vec!["trtmc-bench".into(), "tune".into()],
        worker_exe: PathBuf::from("/nonexistent/trtmc-bench"),
        slurm: None,
        page: trtmc_report::tune_page::render,
    };
    (request, plan)
}

fn tune(
    request: &TuneRequest,
    start: Start,
    progress: &Recorder,
) -> Result<TuneOutcome, TuneRunError> {
    orchestrate::run_with(request, start, progress, |target, options| {
        assert_eq!(options.exe, request.worker_exe);
        Ok(FakeRoutes::new(target, options.cache_root))
    })
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn cache_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("cache")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_tune_writes_its_files_saves_the_winner_and_continues_from_its_cache() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (request, plan) = setup(tmp.path());
    let progress = Recorder::default();
    let outcome = tune(&request, Start::New(plan), &progress).expect("tune");

    let decision = &outcome.summary.decision;
    assert_eq!(decision.kind, DecisionKind::Winner, "{decision:?}");
    assert_eq!(decision.route.as_deref(), Some("-threads=2"));
    assert_eq!(*progress.started.borrow(), vec!["cnn on tract"]);
    let lines = cache_lines(&request.cache);
    let reported = progress.iterations.borrow().clone();
    assert_eq!(reported.len(), lines.len() - 1, "one report per cache line");
    assert!(reported.iter().all(|(_, replayed)| !replayed));

    // The summary and the report, with the chosen route as the settings `run` takes.
    assert_eq!(
        outcome.summary_file,
        request.output_dir.join("tuning-summary.json")
    );
    assert!(outcome.report_file.is_file());
    let summary = read_json(&outcome.summary_file);
    let context = &summary["context"];
    assert_eq!(context["model"], "cnn");
    assert_eq!(context["runtime"], "tract");
    assert_eq!(
        context["chosen"]["run_sets"],
        serde_json::json!(["runtime.threads=2"])
    );
    assert_eq!(
        context["cache"].as_str(),
        request.cache.to_str(),
        "{context}"
    );

    // The chosen bundle, copied with its tuned-route record; --save-all keeps both eligible routes.
    let saved = tmp.path().join("best.bundle");
    let record = read_json(&saved.join(orchestrate::TUNED_ROUTE_FILE));
    assert_eq!(record["schema"], orchestrate::TUNED_ROUTE_SCHEMA);
    assert_eq!(record["route"], "-threads=2");
    assert_eq!(record["chosen"], true);
    assert_eq!(record["run_sets"], serde_json::json!(["runtime.threads=2"]));
    assert_eq!(
        std::fs::read_to_string(saved.join("model.bin")).expect("copied bundle"),
        "-threads=2"
    );
    let all = std::fs::read_dir(request.output_dir.join(orchestrate::ALL_BUNDLES_DIR))
        .expect("all bundles")
        .count();
    assert_eq!(all, 2);
    assert!(!request.output_dir.join(orchestrate::WORK_DIR).exists());

    // --continue replays every recorded iteration and reaches the same decision; what the cache held
    // is kept as it was.
    let header = orchestrate::read_cache_header(&request.cache).expect("header");
    let again = Recorder::default();
    let resumed = tune(&request, Start::Continue(header), &again).expect("continue");
    assert_eq!(
        resumed.summary.decision.route.as_deref(),
        Some("-threads=2")
    );
    let replayed = again
        .iterations
        .borrow()
        .iter()
        .filter(|(_, replayed)| *replayed)
        .count();
    assert_eq!(replayed, lines.len() - 1);
    assert_eq!(cache_lines(&request.cache)[..lines.len()], lines[..]);
}

#[test]
fn continue_refuses_a_changed_model_and_leaves_the_cache_alone() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (request, plan) = setup(tmp.path());
    tune(&request, Start::New(plan), &Recorder::default()).expect("tune");
    let before = std::fs::read(&request.cache).expect("cache");
    write_model(&tmp.path().join("cnn.onnx"), 6);
    let header = orchestrate::read_cache_header(&request.cache).expect("header");
    let refused =
        tune(&request, Start::Continue(header), &Recorder::default()).expect_err("a changed model");
    match refused {
        e @ TuneRunError::Cache { .. } => {
            assert!(e.to_string().contains("model_sha256"), "{e}")
        }
        other => panic!("not a cache mismatch: {other:?}"),
    }
    assert_eq!(std::fs::read(&request.cache).expect("cache"), before);
}

#[test]
fn the_output_directory_holds_only_what_a_tune_writes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("out");
    assert_eq!(
        orchestrate::prepare_output(Some(&dir)).expect("created"),
        dir
    );
    std::fs::write(dir.join(orchestrate::SUMMARY_FILE), "{}").expect("write");
    orchestrate::prepare_output(Some(&dir)).expect("a tune's own files are fine");
    std::fs::write(dir.join("notes.txt"), "mine").expect("write");
    match orchestrate::prepare_output(Some(&dir)) {
        Err(TuneRunError::OutputDir { reason, .. }) => {
            assert!(reason.contains("notes.txt"), "{reason}")
        }
        other => panic!("not refused: {other:?}"),
    }
    match orchestrate::prepare_output(Some(&dir.join("notes.txt"))) {
        Err(e @ TuneRunError::OutputDir { .. }) => {
            assert!(e.to_string().contains("it is a file"), "{e}")
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// The route space of issue 15 (`-threads=[1|2] -precision=[fp32|fp16]`, fast search): the fp16 route
/// is stopped after its probe, recorded with its calls and reason, and the winner is the one a full
/// measurement finds; `--continue` replays the eliminated route.
#[test]
fn a_clearly_slower_route_is_eliminated_after_its_probe_and_the_winner_stands() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (request, mut plan) = setup(tmp.path());
    plan.expression = trtmc_tune::expr::parse("-threads=[1|2] -precision=[fp32|fp16]", &plan.knobs)
        .expect("expression");
    plan.config.search = SearchOrder::Fast;
    let outcome = tune(&request, Start::New(plan), &Recorder::default()).expect("tune");
    let s = &outcome.summary;
    assert_eq!(s.decision.kind, DecisionKind::Winner, "{:?}", s.decision);
    assert_eq!(
        s.decision.route.as_deref(),
        Some("-threads=2 -precision=fp32")
    );
    let slow = s
        .route("-threads=1 -precision=fp16")
        .expect("the fp16 route was tried");
    assert_eq!(slow.status.name(), "eliminated");
    assert!(!slow.eligible && !slow.finalist);
    assert_eq!(slow.search_samples.as_ref().map(|x| x.count), Some(3));
    let reason = slow.error_message.as_deref().unwrap_or_default();
    assert!(
        reason.contains("stopped early after 3 probe call(s)"),
        "{reason}"
    );
    assert!(reason.contains("the fastest took 6000 ms"), "{reason}");
    assert_eq!(s.counts.eliminated, 1);
    // Its warm-up and three probe calls, not 5 + 20: the calls at 6 s each were what made the tune
    // of the issue take ten minutes.
    let line = cache_lines(&request.cache)
        .into_iter()
        .find(|l| l.contains("\"status\":\"eliminated\""))
        .expect("an eliminated cache line");
    let line: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(line["warmup_calls"], 1);
    assert_eq!(line["samples_ms"].as_array().map(Vec::len), Some(3));
    let report = std::fs::read_to_string(&outcome.report_file).expect("report");
    assert!(report.contains("(eliminated)") && report.contains("log scale"));

    let header = orchestrate::read_cache_header(&request.cache).expect("header");
    let resumed = tune(&request, Start::Continue(header), &Recorder::default()).expect("continue");
    assert_eq!(resumed.summary.decision.route, s.decision.route);
    assert_eq!(
        resumed
            .summary
            .route("-threads=1 -precision=fp16")
            .map(|r| r.status.name()),
        Some("eliminated")
    );
}

#[test]
fn the_route_budget_stops_measuring_and_keeps_the_calls_made() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (request, mut plan) = setup(tmp.path());
    // 10 ms and 5 ms calls, 20 asked for, 0.1 s each: the probe's 1 + 3 calls, then what fits after the
    // one remaining warm-up (60 ms left: 1 + 4 calls; 80 ms left: 1 + 14).
    plan.config.route_budget_s = Some(0.1);
    let outcome = tune(&request, Start::New(plan), &Recorder::default()).expect("tune");
    let s = &outcome.summary;
    assert_eq!(s.counts.budget_capped, 2);
    for (route, calls) in [("-threads=1", 4), ("-threads=2", 14)] {
        let r = s.route(route).expect("measured");
        assert_eq!(r.status.name(), "ok");
        assert_eq!(
            r.search_samples.as_ref().map(|x| x.count),
            Some(calls),
            "{route}"
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains(&format!("measured {calls} of 20 calls"))),
            "{:?}",
            r.notes
        );
    }
    assert_eq!(s.decision.route.as_deref(), Some("-threads=2"));
}
