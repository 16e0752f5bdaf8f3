//! A yellow or red row explains itself: after the timed rounds, one per-layer profiling pass per side
//! (a profiler perturbs timings, so never inside a round), the two profiles aligned by ONNX node, and
//! the layers that account for most of the gap recorded in the row, with an `analyze` report of both.
//!
//! Sides that profile: candidates `tract`, `onnxruntime` and `tensorrt` (`trtmc-bench run --profile`;
//! TensorRT's pass is trtexec's `--exportProfile` run), references `trtmc:tract` / `trtmc:onnxruntime`
//! / `trtmc:tensorrt` (the same) and `onnxruntime-python` (ONNX Runtime's profiler through the
//! request's `profile_dir`; its trace is read by `trtmc_runtime::profile::ort_trace`). Layer times are
//! compared side against side, never against the timed rounds: trtexec's profiled run carries the
//! profiler's overhead, so its layers need not add up to the timed mean.
//!
//! Alignment: each profiled layer is anchored at the ONNX node its name starts with (tract names its
//! layers `<node>_<step>` / `<node>.<step>`; ONNX Runtime keeps a node's name, or names a fused node
//! after its output tensor, `relu_3_nchwc`; TensorRT names a layer after its nodes, fused ones joined
//! by ` + `, a Myelin region `{ForeignNode[first...last]}`: such a layer counts at its last node). A fusion on one side merges nodes the other side times
//! apart, so nodes are grouped between the anchors both sides share: a group is the run of nodes in
//! graph order that ends at a common anchor, and each side's layer counts in the group of its anchor.
//! A profiling pass that fails leaves the light as it is; the explanation says why it is missing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use trtmc_core::artifacts::matrix::{Explanation, GapLayer};
use trtmc_core::artifacts::{BENCHMARK_RUN_SCHEMA, BenchmarkRun, CaseStatus};
use trtmc_runtime::profile::ort_trace::GraphNode;
use trtmc_runtime::reference::REFERENCE_RESULT_SCHEMA;

use crate::plan::{Plan, PlannedRow};
use crate::row::{Ctx, RowError};
use crate::suite::{ORT_PYTHON, TRTMC_PREFIX};

/// Profiled operation calls per side (after the row's warm-up calls).
pub const PROFILE_CALLS: u64 = 10;
/// Layers listed in a row's explanation.
pub const TOP_LAYERS: usize = 5;
/// The folder of the `analyze` report of both profiles, inside the attempt directory.
pub const REPORT_DIR: &str = "explanation-report";
/// Runtimes whose per-layer names carry their ONNX node's name.
const PROFILING_RUNTIMES: [&str; 3] = ["tract", "onnxruntime", "tensorrt"];

/// How the timed rounds ran a side, for its profiling pass.
pub(crate) struct SideRun<'a> {
    /// The runtime of `trtmc-bench run` (`None`: the Python reference).
    pub runtime: Option<&'a str>,
    pub set: &'a BTreeMap<String, Value>,
    pub trtexec: Option<&'a Path>,
    pub env: BTreeMap<String, String>,
}

/// One side's profile files, as written by its pass.
struct Profiled {
    layers: PathBuf,
    profile: PathBuf,
}

/// Why a side's profiling pass gave no profile.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PassError {
    /// The pass's command, or reading or writing one of its files, failed.
    #[error(transparent)]
    Row(#[from] RowError),
    /// The benchmark run records no profile.
    #[error("{} records no profile", file.display())]
    NoProfile {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// The profiler failed.
    #[error("{error} (log: {log})")]
    Profiler {
        /// The profile's error, or `no error recorded`.
        error: String,
        /// Its log, or `none`.
        log: String,
    },
    /// The profile names no layer or profile file.
    #[error("{} names no layer or profile file", file.display())]
    NoProfileFiles {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// The prepared request of the Python reference does not parse.
    #[error("{} is not a request: {source}", file.display())]
    NotARequest {
        /// The request file, relative to the run directory.
        file: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The Python reference's own error.
    #[error("{0}")]
    Reference(String),
    /// The Python reference wrote no result.
    #[error("it wrote no readable {REFERENCE_RESULT_SCHEMA} result")]
    NoResult,
    /// The Python reference's result names no trace.
    #[error("its result names no profile_trace")]
    NoTrace,
    /// The trace cannot be read.
    #[error("cannot read its trace {}: {source}", trace.display())]
    ReadTrace {
        /// The trace file.
        trace: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The trace cannot be turned into profile files.
    #[error("{reason}")]
    Trace {
        /// The conversion's error with its causes.
        reason: String,
    },
}

/// Why a row's explanation is missing, or has no report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExplainError {
    /// A side's profiling pass failed.
    #[error("the {role}'s profiling pass failed: {source}")]
    Pass {
        /// `candidate` or `reference`.
        role: &'static str,
        /// Why.
        source: PassError,
    },
    /// The ONNX graph cannot be read.
    #[error("the ONNX graph the layers are aligned on: {reason}")]
    Graph {
        /// The reading error with its causes.
        reason: String,
    },
    /// A layer profile cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadProfile {
        /// The profile file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A layer profile does not parse.
    #[error("{} is not a layer profile: {source}", path.display())]
    NotAProfile {
        /// The profile file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The two profiles cannot be analyzed.
    #[error("the two profiles could not be packaged: {0}")]
    Analyze(#[source] trtmc_analyze::AnalyzeError),
    /// The report of the two profiles cannot be written.
    #[error("the two profiles could not be packaged: {0}")]
    Package(#[source] trtmc_analyze::report::PackageError),
}

/// The explanation of a yellow or red row whose timed rounds are done.
pub(crate) fn explain(
    plan: &Plan,
    pr: &PlannedRow,
    ctx: &mut Ctx<'_>,
    candidate: SideRun<'_>,
    reference: SideRun<'_>,
    python_request: Option<&Path>,
    fail_reference: bool,
) -> Explanation {
    let mut explanation = Explanation::default();
    let backend = pr.row.reference.backend.as_str();
    if let Some(why) = cannot_profile(&pr.row.candidate.runtime, backend) {
        explanation.missing = Some(why);
        return explanation;
    }
    let calls = if fail_reference { 0 } else { PROFILE_CALLS };
    let sides =
        profile_run_side(plan, pr, ctx, "candidate", &candidate, PROFILE_CALLS).and_then(|c| {
            let r = match python_request {
                Some(request) => profile_python(plan, pr, ctx, request, calls),
                None => profile_run_side(plan, pr, ctx, "reference", &reference, calls),
            }?;
            Ok((c, r))
        });
    let (cand, refr) = match sides {
        Ok(s) => s,
        Err(why) => {
            explanation.missing = Some(why.to_string());
            return explanation;
        }
    };
    for f in [&cand.layers, &cand.profile, &refr.layers, &refr.profile] {
        explanation.files.push(ctx.rel(f));
    }
    let model = crate::row::model_path(plan, pr);
    let aligned = (|| {
        let graph = trtmc_runtime::ort_rt::graph_nodes(Path::new(&model)).map_err(|e| {
            ExplainError::Graph {
                reason: format!("{e:#}"),
            }
        })?;
        let c = read_layer_times(&cand.profile)?;
        let r = read_layer_times(&refr.profile)?;
        Ok::<_, ExplainError>(gap_layers(&graph, &c, &r))
    })();
    match aligned {
        Ok(gap) => {
            explanation.candidate_ms = Some(gap.candidate_ms);
            explanation.reference_ms = Some(gap.reference_ms);
            explanation.layers = gap.layers;
            if explanation.layers.is_empty() {
                explanation.missing = Some(format!(
                    "the profiling passes show no gap to explain: summed layer time per call is {:.3} ms on the candidate, {:.3} ms on the reference (the timed rounds' difference lies outside the layers, or did not reproduce under the profiler)",
                    gap.candidate_ms, gap.reference_ms
                ));
            }
        }
        Err(why) => explanation.missing = Some(why.to_string()),
    }
    let report_dir = ctx.dir.join(REPORT_DIR);
    match package(&pr.row.model, &cand, &refr, &report_dir) {
        Ok(index) => explanation.report = Some(ctx.rel(&index)),
        Err(e) => explanation.report_error = Some(e.to_string()),
    }
    explanation
}

/// Why a row's sides cannot both profile, if they cannot.
fn cannot_profile(candidate: &str, backend: &str) -> Option<String> {
    if !PROFILING_RUNTIMES.contains(&candidate) {
        return Some(format!(
            "the candidate runtime `{candidate}` has no per-layer profile aligned by ONNX node (tract, onnxruntime and tensorrt have)"
        ));
    }
    let reference_profiles = backend == ORT_PYTHON
        || backend
            .strip_prefix(TRTMC_PREFIX)
            .is_some_and(|rt| PROFILING_RUNTIMES.contains(&rt));
    (!reference_profiles).then(|| {
        format!(
            "the reference `{backend}` has no per-layer profile aligned by ONNX node (onnxruntime-python, trtmc:tract, trtmc:onnxruntime and trtmc:tensorrt have)"
        )
    })
}

/// `trtmc-bench run --profile` of one side into `profile-<role>/`: its profile files.
fn profile_run_side(
    plan: &Plan,
    pr: &PlannedRow,
    ctx: &mut Ctx<'_>,
    role: &'static str,
    side: &SideRun<'_>,
    calls: u64,
) -> Result<Profiled, ExplainError> {
    let runtime = side.runtime.unwrap_or_default();
    let runtime = runtime.strip_prefix(TRTMC_PREFIX).unwrap_or(runtime);
    let out = ctx.dir.join(format!("profile-{role}"));
    let mut argv = crate::row::run_argv(plan, pr, runtime, side.set, side.trtexec, 1, &out);
    argv.extend([
        "--profile".into(),
        "--profile-iterations".into(),
        calls.to_string(),
    ]);
    let failed = |why: PassError| ExplainError::Pass { role, source: why };
    ctx.leaf(argv, side.env.clone(), &format!("profile-{role}.log"))
        .map_err(|e| failed(e.into()))?;
    let result = out.join("result.json");
    let doc: BenchmarkRun =
        crate::row::read_typed(ctx, &result, BENCHMARK_RUN_SCHEMA).map_err(|e| failed(e.into()))?;
    let profile = doc
        .cases
        .first()
        .and_then(|c| c.profile.as_ref())
        .ok_or_else(|| {
            failed(PassError::NoProfile {
                file: ctx.rel(&result).into(),
            })
        })?;
    if profile.status != CaseStatus::Completed {
        return Err(failed(PassError::Profiler {
            error: profile
                .error
                .clone()
                .unwrap_or_else(|| "no error recorded".into()),
            log: profile.log.clone().unwrap_or_else(|| "none".into()),
        }));
    }
    match (&profile.layer_info, &profile.layer_profile) {
        (Some(layers), Some(p)) => Ok(Profiled {
            layers: out.join(layers),
            profile: out.join(p),
        }),
        _ => Err(failed(PassError::NoProfileFiles {
            file: ctx.rel(&result).into(),
        })),
    }
}

/// The Python reference with ONNX Runtime's profiler on, from a copy of the row's prepared request;
/// its trace becomes the trtexec-shaped profile files in `reference-profile/`.
fn profile_python(
    plan: &Plan,
    pr: &PlannedRow,
    ctx: &mut Ctx<'_>,
    request_path: &Path,
    calls: u64,
) -> Result<Profiled, ExplainError> {
    let failed = |why: PassError| ExplainError::Pass {
        role: "reference",
        source: why,
    };
    let dir = ctx.dir.join("reference-profile");
    std::fs::create_dir_all(&dir).map_err(|source| {
        failed(
            RowError::Create {
                path: ctx.rel(&dir).into(),
                source,
            }
            .into(),
        )
    })?;
    let bytes = std::fs::read(request_path).map_err(|source| {
        failed(
            RowError::Read {
                file: ctx.rel(request_path).into(),
                source,
            }
            .into(),
        )
    })?;
    let mut request: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes).map_err(|source| {
            failed(PassError::NotARequest {
                file: ctx.rel(request_path).into(),
                source,
            })
        })?;
    // Paths of the prepared request are relative to its own folder.
    let base = request_path.parent().unwrap_or(Path::new("."));
    for key in ["model", "inputs"] {
        if let Some(p) = request.get(key).and_then(Value::as_str) {
            let absolute = base.join(p);
            request.insert(key.into(), Value::String(absolute.to_string_lossy().into()));
        }
    }
    request.insert("warmup".into(), pr.warmup.into());
    request.insert("iterations".into(), calls.into());
    request.insert("min_duration_s".into(), 0.0.into());
    request.insert("save_outputs".into(), Value::Null);
    request.insert(
        "profile_dir".into(),
        Value::String(dir.to_string_lossy().into()),
    );
    let profile_request = dir.join("profile-request.json");
    trtmc_core::fsutil::write_json_atomic(&profile_request, &request).map_err(|source| {
        failed(
            RowError::Write {
                file: ctx.rel(&profile_request).into(),
                source,
            }
            .into(),
        )
    })?;
    let result_path = dir.join("profile-result.json");
    let (ran, result) = crate::row::run_ort_reference(
        plan,
        ctx,
        &profile_request,
        &result_path,
        "profile-reference.log",
    );
    let result = match (ran, result) {
        (Ok(()), Some(r)) if r.schema == REFERENCE_RESULT_SCHEMA => r,
        (_, Some(r)) if r.error.is_some() => {
            return Err(failed(PassError::Reference(r.error.unwrap_or_default())));
        }
        (Err(e), _) => return Err(failed(e.into())),
        (Ok(()), _) => return Err(failed(PassError::NoResult)),
    };
    let trace = result
        .notes
        .get("profile_trace")
        .and_then(Value::as_str)
        .ok_or_else(|| failed(PassError::NoTrace))?;
    let skip = result
        .notes
        .get("profile_warmup_runs")
        .and_then(Value::as_u64)
        .unwrap_or(pr.warmup);
    let text = std::fs::read_to_string(trace).map_err(|source| {
        failed(PassError::ReadTrace {
            trace: trace.into(),
            source,
        })
    })?;
    let model = request.get("model").and_then(Value::as_str).unwrap_or("");
    // Tensor names for the layer file; a graph that cannot be read only loses those names.
    let graph = trtmc_runtime::ort_rt::graph_nodes(Path::new(model)).unwrap_or_default();
    let profile = trtmc_runtime::profile::ort_trace::layers_from_trace(
        "onnxruntime",
        &text,
        skip,
        &graph,
        Vec::new(),
    )
    .map_err(|e| {
        failed(PassError::Trace {
            reason: format!("{e:#}"),
        })
    })?;
    let files = trtmc_runtime::profile::write_exports(&profile, &dir).map_err(|e| {
        failed(PassError::Trace {
            reason: format!("{e:#}"),
        })
    })?;
    Ok(Profiled {
        layers: files.layer_info,
        profile: files.profile,
    })
}

/// `(name, averageMs)` of each record of a `profile_<runtime>.json` (trtexec's `--exportProfile`
/// shape: a `{"count": N}` header, then one record per layer).
fn read_layer_times(path: &Path) -> Result<Vec<(String, f64)>, ExplainError> {
    let text = std::fs::read_to_string(path).map_err(|source| ExplainError::ReadProfile {
        path: path.to_path_buf(),
        source,
    })?;
    let records: Vec<Value> =
        serde_json::from_str(&text).map_err(|source| ExplainError::NotAProfile {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(records
        .iter()
        .filter_map(|r| {
            Some((
                r.get("name")?.as_str()?.to_string(),
                r.get("averageMs")?.as_f64()?,
            ))
        })
        .collect())
}

/// The gap between two profiles, by group of ONNX nodes.
#[derive(Debug)]
pub(crate) struct Gap {
    pub candidate_ms: f64,
    pub reference_ms: f64,
    pub layers: Vec<GapLayer>,
}

/// Characters that end an ONNX node's name inside a runtime's layer name.
fn is_separator(c: char) -> bool {
    matches!(c, '_' | '.' | '/' | ':' | ' ' | '-' | '#')
}

/// Node names and output tensor names of `graph`, to the node's index (a node's own name wins).
fn anchors_of(graph: &[GraphNode]) -> HashMap<&str, usize> {
    let mut by_name = HashMap::new();
    for (i, n) in graph.iter().enumerate() {
        for out in n.outputs.iter().filter(|o| !o.is_empty()) {
            by_name.entry(out.as_str()).or_insert(i);
        }
    }
    for (i, n) in graph.iter().enumerate().filter(|(_, n)| !n.name.is_empty()) {
        by_name.insert(n.name.as_str(), i);
    }
    by_name
}

/// The part of a layer name that names the node ending it: TensorRT's fused layers `a + b` and Myelin
/// regions `{ForeignNode[a...b]}` end at `b`; other names are kept whole.
fn last_fused_node(layer: &str) -> &str {
    let region = layer
        .strip_prefix("{ForeignNode[")
        .and_then(|inner| inner.strip_suffix("]}"))
        .map(|inner| inner.rsplit("...").next().unwrap_or(inner))
        .unwrap_or(layer);
    region.rsplit(" + ").next().unwrap_or(region)
}

/// The node a layer name starts with: the longest node (or output tensor) name that is the whole
/// layer name or is followed by a separator in it.
fn anchor(layer: &str, anchors: &HashMap<&str, usize>) -> Option<usize> {
    let layer = last_fused_node(layer);
    let ends = layer
        .char_indices()
        .filter(|(_, c)| is_separator(*c))
        .map(|(i, _)| i)
        .chain([layer.len()]);
    let mut found = None;
    for end in ends {
        if let Some(&i) = anchors.get(&layer[..end]) {
            found = Some(i);
        }
    }
    found
}

/// Each layer of a profile with its anchor node.
fn anchored<'a>(
    side: &'a [(String, f64)],
    anchors: &HashMap<&str, usize>,
) -> Vec<(Option<usize>, &'a str, f64)> {
    side.iter()
        .map(|(name, ms)| (anchor(name, anchors), name.as_str(), *ms))
        .collect()
}

/// Aligns two profiles (`(layer name, ms per call)`) on `graph` and ranks the groups of nodes by their
/// share of the gap (candidate total − reference total); the top [`TOP_LAYERS`] slower on the
/// candidate side are kept, none when the candidate's total is not above the reference's.
pub(crate) fn gap_layers(
    graph: &[GraphNode],
    candidate: &[(String, f64)],
    reference: &[(String, f64)],
) -> Gap {
    let anchors = anchors_of(graph);
    let (c, r) = (anchored(candidate, &anchors), anchored(reference, &anchors));
    let set = |side: &[(Option<usize>, &str, f64)]| -> BTreeSet<usize> {
        side.iter().filter_map(|(a, _, _)| *a).collect()
    };
    // Cuts: nodes both sides have a layer at; the last node closes the final group.
    let mut cuts: Vec<usize> = set(&c).intersection(&set(&r)).copied().collect();
    if let Some(last) = graph.len().checked_sub(1)
        && cuts.last() != Some(&last)
    {
        cuts.push(last);
    }
    // Group k holds nodes (cuts[k-1], cuts[k]]; one more group holds the layers of no node.
    let unattributed = cuts.len();
    let mut times = vec![(0.0f64, 0.0f64); cuts.len() + 1];
    let mut loose: BTreeSet<&str> = BTreeSet::new();
    for (side, is_candidate) in [(&c, true), (&r, false)] {
        for &(a, name, ms) in side.iter() {
            let group = match a {
                Some(node) => cuts.partition_point(|&cut| cut < node),
                None => {
                    loose.insert(name);
                    unattributed
                }
            };
            if is_candidate {
                times[group].0 += ms;
            } else {
                times[group].1 += ms;
            }
        }
    }
    let candidate_ms: f64 = times.iter().map(|t| t.0).sum();
    let reference_ms: f64 = times.iter().map(|t| t.1).sum();
    let gap = candidate_ms - reference_ms;
    // A candidate no slower under the profiler leaves no gap to share out.
    if gap <= 0.0 {
        return Gap {
            candidate_ms,
            reference_ms,
            layers: Vec::new(),
        };
    }
    // Shares are of the summed slowdowns, not of the net gap: where some groups run faster on the
    // candidate the slower ones add up to more than the gap, and a share above 100 % explains nothing.
    let slowdowns: f64 = times.iter().map(|(cm, rm)| (cm - rm).max(0.0)).sum();
    let mut layers: Vec<GapLayer> = times
        .iter()
        .enumerate()
        .filter(|(_, (cm, rm))| cm - rm > 0.0)
        .map(|(k, &(cm, rm))| {
            let nodes: Vec<String> = if k == unattributed {
                Vec::new()
            } else {
                let first = if k == 0 { 0 } else { cuts[k - 1] + 1 };
                graph[first..=cuts[k]]
                    .iter()
                    .enumerate()
                    .map(|(j, n)| node_label(n, first + j))
                    .collect()
            };
            let layer = match nodes.as_slice() {
                [] => format!(
                    "(layers of no ONNX node: {})",
                    loose.iter().copied().collect::<Vec<_>>().join(", ")
                ),
                [one] => one.clone(),
                [first, .., last] => format!("{first} … {last}"),
            };
            GapLayer {
                layer,
                nodes,
                candidate_ms: cm,
                reference_ms: rm,
                delta_ms: cm - rm,
                share: (cm - rm) / slowdowns,
            }
        })
        .collect();
    layers.sort_by(|a, b| b.delta_ms.total_cmp(&a.delta_ms));
    layers.truncate(TOP_LAYERS);
    Gap {
        candidate_ms,
        reference_ms,
        layers,
    }
}

/// A node's name, or `<op>#<index>` for an unnamed one.
fn node_label(n: &GraphNode, index: usize) -> String {
    if n.name.is_empty() {
        format!("{}#{index}", n.op_type)
    } else {
        n.name.clone()
    }
}

/// The `analyze` report of both profiles (the reference first: its deltas read candidate minus
/// reference); returns its `index.html`.
fn package(
    model: &str,
    candidate: &Profiled,
    reference: &Profiled,
    dir: &Path,
) -> Result<PathBuf, ExplainError> {
    let spec = |p: &Profiled, label: &str| trtmc_analyze::DataSpec {
        layers: p.layers.clone(),
        profile: Some(p.profile.clone()),
        times: None,
        label: Some(label.into()),
    };
    let request = trtmc_analyze::Request {
        inputs: trtmc_analyze::Inputs::Data(vec![
            spec(reference, "reference"),
            spec(candidate, "candidate"),
        ]),
        model_name: Some(model.to_owned()),
    };
    let options = trtmc_analyze::report::PackageOptions {
        report_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let analysis = trtmc_analyze::analyze(&request).map_err(ExplainError::Analyze)?;
    trtmc_analyze::report::package(&analysis, &options)
        .map(|p| p.index)
        .map_err(ExplainError::Package)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, op: &str, output: &str) -> GraphNode {
        GraphNode {
            name: name.into(),
            op_type: op.into(),
            inputs: Vec::new(),
            outputs: vec![output.into()],
        }
    }

    /// The head of tiny-cnn: conv, batch norm, relu, max pool, gemm.
    fn graph() -> Vec<GraphNode> {
        vec![
            node("n0_conv_1", "Conv", "conv_1"),
            node("n1_batchnormalization_2", "BatchNormalization", "bn_2"),
            node("n2_relu_3", "Relu", "relu_3"),
            node("n3_maxpool_4", "MaxPool", "maxpool_4"),
            node("n4_gemm_5", "Gemm", "logits"),
        ]
    }

    fn times(list: &[(&str, f64)]) -> Vec<(String, f64)> {
        list.iter().map(|(n, t)| (n.to_string(), *t)).collect()
    }

    #[test]
    fn layer_names_anchor_at_the_longest_node_or_output_they_start_with() {
        let g = graph();
        let a = anchors_of(&g);
        assert_eq!(anchor("n0_conv_1_conv.matmatmul", &a), Some(0));
        assert_eq!(anchor("n3_maxpool_4", &a), Some(3));
        assert_eq!(
            anchor("relu_3_nchwc", &a),
            Some(2),
            "an output tensor's name"
        );
        assert_eq!(
            anchor("n2_relu_33", &a),
            None,
            "no separator after the name"
        );
        assert_eq!(anchor("ReorderOutput", &a), None);
    }

    /// TensorRT's layer names: fused nodes joined by ` + ` and Myelin regions count at their last node,
    /// reformatting layers at none.
    #[test]
    fn tensorrt_fused_layers_anchor_at_their_last_node() {
        let g = graph();
        let a = anchors_of(&g);
        assert_eq!(
            anchor("n0_conv_1 + n1_batchnormalization_2 + n2_relu_3", &a),
            Some(2)
        );
        assert_eq!(
            anchor("{ForeignNode[n3_maxpool_4...n4_gemm_5]}", &a),
            Some(4)
        );
        assert_eq!(anchor("n4_gemm_5", &a), Some(4));
        assert_eq!(
            anchor("Reformatting CopyNode for Input Tensor 0 to n4_gemm_5", &a),
            None
        );
        // Against tract's separate layers the fused conv-bn-relu is one group.
        let trt = times(&[
            ("n0_conv_1 + n1_batchnormalization_2 + n2_relu_3", 0.25),
            ("n3_maxpool_4", 2.0),
            ("n4_gemm_5", 0.1),
        ]);
        let tract = times(&[
            ("n0_conv_1_conv.matmatmul", 0.2),
            ("n1_batchnormalization_2_0", 0.05),
            ("n2_relu_3_low_0", 0.05),
            ("n3_maxpool_4_max_pool_output", 0.5),
            ("n4_gemm_5_0", 0.1),
        ]);
        let gap = gap_layers(&g, &trt, &tract);
        assert_eq!(gap.layers.len(), 1, "{:?}", gap.layers);
        assert_eq!(gap.layers[0].layer, "n3_maxpool_4");
        assert!((gap.layers[0].delta_ms - 1.5).abs() < 1e-9);
    }

    /// tract times conv and relu apart, ONNX Runtime fuses them into one layer named after the relu's
    /// output: they are compared as one group, and the max pool made slower on the candidate leads.
    #[test]
    fn a_fusion_on_one_side_groups_nodes_and_the_slowed_node_leads() {
        let tract = times(&[
            ("n0_conv_1_conv.pad", 0.1),
            ("n0_conv_1_conv.matmatmul", 0.9),
            ("n2_relu_3_low_0", 0.1),
            ("n3_maxpool_4_max_pool_output", 5.0),
            ("n4_gemm_5_0", 0.2),
        ]);
        let ort = times(&[
            ("relu_3_nchwc", 0.5),
            ("maxpool_4_nchwc", 0.1),
            ("ReorderOutput", 0.05),
            ("n4_gemm_5", 0.1),
        ]);
        let gap = gap_layers(&graph(), &tract, &ort);
        assert!((gap.candidate_ms - 6.3).abs() < 1e-9);
        assert!((gap.reference_ms - 0.75).abs() < 1e-9);
        let first = &gap.layers[0];
        assert_eq!(first.layer, "n3_maxpool_4");
        assert_eq!(first.nodes, vec!["n3_maxpool_4"]);
        assert!((first.delta_ms - 4.9).abs() < 1e-9);
        assert!(
            (first.share - 4.9 / 5.6).abs() < 1e-9,
            "of the slowdowns (4.9 + 0.6 + 0.1), not of the net gap"
        );
        let fused = &gap.layers[1];
        assert_eq!(fused.layer, "n0_conv_1 … n2_relu_3");
        assert_eq!(fused.nodes.len(), 3);
        assert!((fused.candidate_ms - 1.1).abs() < 1e-9);
        assert!((fused.reference_ms - 0.5).abs() < 1e-9);
        assert_eq!(
            gap.layers.len(),
            3,
            "the gemm; not the reorder, faster on the candidate"
        );
        let shares: f64 = gap.layers.iter().map(|l| l.share).sum();
        assert!(shares > 0.99 && shares < 1.01, "{shares}");
    }

    #[test]
    fn layers_of_no_node_are_one_group_and_a_faster_candidate_lists_nothing() {
        let gap = gap_layers(
            &graph(),
            &times(&[("Reformat", 2.0), ("n3_maxpool_4", 1.0)]),
            &times(&[("n3_maxpool_4", 1.0)]),
        );
        assert_eq!(gap.layers.len(), 1);
        assert_eq!(gap.layers[0].layer, "(layers of no ONNX node: Reformat)");
        assert!(gap.layers[0].nodes.is_empty());
        let none = gap_layers(
            &graph(),
            &times(&[("n3_maxpool_4", 1.0)]),
            &times(&[("n3_maxpool_4", 2.0)]),
        );
        assert!(none.layers.is_empty());
        // One layer slower, the whole faster: no gap to share out.
        let faster = gap_layers(
            &graph(),
            &times(&[("n3_maxpool_4", 1.5), ("n4_gemm_5", 0.1)]),
            &times(&[("n3_maxpool_4", 1.0), ("n4_gemm_5", 2.0)]),
        );
        assert!(faster.layers.is_empty());
        assert!((faster.candidate_ms - 1.6).abs() < 1e-9);
    }

    /// A group much faster on the candidate leaves a small net gap; the slower groups' shares are of
    /// the slowdowns, never above 100 % (issue 31 saw 579 %).
    #[test]
    fn no_share_is_above_the_whole() {
        let gap = gap_layers(
            &graph(),
            &times(&[("n0_conv_1", 1.0), ("n3_maxpool_4", 5.0)]),
            &times(&[("n0_conv_1", 4.5), ("n3_maxpool_4", 1.0)]),
        );
        assert!((gap.candidate_ms - gap.reference_ms - 0.5).abs() < 1e-9);
        assert_eq!(gap.layers.len(), 1);
        assert!((gap.layers[0].share - 1.0).abs() < 1e-9, "{:?}", gap.layers);
        assert!((gap.layers[0].delta_ms - 4.0).abs() < 1e-9);
    }

    #[test]
    fn only_profiling_sides_are_explained() {
        assert_eq!(cannot_profile("tract", "onnxruntime-python"), None);
        assert_eq!(cannot_profile("onnxruntime", "trtmc:tract"), None);
        // TensorRT profiles through trtexec's --exportProfile, on either side.
        assert_eq!(cannot_profile("tensorrt", "trtmc:tensorrt"), None);
        assert_eq!(cannot_profile("tensorrt", "onnxruntime-python"), None);
        assert!(
            cannot_profile("tensorrt", "torch-python")
                .expect("torch")
                .contains("reference `torch-python`")
        );
        assert!(
            cannot_profile("tract", "torch-python")
                .expect("torch")
                .contains("reference `torch-python`")
        );
    }
}
