//! Facts, ranked issues and positives for one backend.
//!
//! Facts are measurements read from the files. An issue pairs such facts (its evidence) with a
//! hypothesis about them and the next check that would confirm or refute it; the two are never
//! mixed in one string. Latency-based issues are produced only for `layer_profile` backends.

use crate::analysis::{Breakdowns, Engines, GraphView, LayerView, Mode, Timing};
pub use crate::analysis::{Findings, Issue};
use crate::classify::{Family, TensorCoreHint, contains_ci, tensor_core_hint};
use crate::identity::Confidence;
use crate::read::Times;

pub(crate) struct Input<'a> {
    pub mode: Mode,
    pub layers: &'a [LayerView],
    pub timing: Option<&'a Timing>,
    pub count: Option<u64>,
    pub end_to_end: Option<&'a Times>,
    pub breakdowns: Option<&'a Breakdowns>,
    pub engines: &'a Engines,
    pub model: &'a crate::analysis::BackendModel,
    pub graph: Option<&'a GraphView>,
    pub names_only: bool,
    /// TensorRT's engine-level findings (engines, fused residual inputs) only apply to it.
    pub runtime: crate::provenance::Runtime,
}

pub(crate) fn fmt_ms(ms: f64) -> String {
    if ms.abs() < 0.01 {
        format!("{ms:.4} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

fn name(l: &LayerView) -> String {
    let n: String = l
        .name
        .chars()
        .take(96)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if l.name.chars().count() > 96 {
        format!("`{n}…`")
    } else {
        format!("`{n}`")
    }
}

fn pct(l: &LayerView) -> f64 {
    l.timing.as_ref().map(|t| t.percentage).unwrap_or(0.0)
}

struct Builder {
    out: Findings,
}

/// One group of findings.
type Section = fn(&Input, &mut Builder);

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn issue(
        &mut self,
        id: &'static str,
        score: f64,
        title: String,
        evidence: Vec<String>,
        hypothesis: &str,
        next_check: &str,
        confidence: Confidence,
        layers: Vec<u32>,
    ) {
        self.out.issues.push(Issue {
            id,
            score,
            title,
            evidence,
            hypothesis: hypothesis.to_owned(),
            next_check: next_check.to_owned(),
            confidence,
            layers,
        });
    }
    fn fact(&mut self, s: String) {
        self.out.facts.push(s);
    }
    fn positive(&mut self, s: String) {
        self.out.positives.push(s);
    }
}

pub(crate) fn derive(input: &Input) -> Findings {
    let run = |sections: &[Section]| {
        let mut b = Builder {
            out: Findings::default(),
        };
        for section in sections {
            section(input, &mut b);
        }
        b.out
    };
    let latency: Section = |input, b| {
        if input.mode == Mode::LayerProfile {
            latency_findings(input, b);
        } else if input.timing.is_none() && !input.names_only {
            b.fact(
                "no profile: latency is not interpreted for this backend (layer_only)".to_owned(),
            );
        }
    };
    let structure: [Section; 5] = [
        structure_facts,
        tactic_findings,
        trex_checks,
        fusion_findings,
        partition_findings,
    ];
    // Large engines: the latency section (the largest) runs beside the others; the output keeps
    // the sections' order either way.
    let (mut b, later) = if input.layers.len() >= crate::PARALLEL_LAYERS {
        std::thread::scope(|s| {
            let other = s.spawn(|| run(&[latency]));
            let first = run(&structure);
            let later = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (first, later)
        })
    } else {
        (run(&structure), run(&[latency]))
    };
    b.facts.extend(later.facts);
    b.issues.extend(later.issues);
    b.positives.extend(later.positives);
    let mut b = Builder { out: b };
    if input.names_only {
        b.issue(
            "names_only",
            20.0,
            "Layer info holds names only".to_owned(),
            vec![format!("{} layer records are plain names, without types, tensors or tactics", input.layers.len())],
            "the engine was built with trtexec's default profiling verbosity, so most of the analysis is unavailable",
            "rebuild with --profilingVerbosity=detailed and export --exportLayerInfo and --exportProfile from the same run",
            Confidence::High,
            Vec::new(),
        );
    }
    b.out
        .issues
        .sort_by(|x, y| y.score.total_cmp(&x.score).then(x.id.cmp(y.id)));
    b.out
}

fn structure_facts(input: &Input, b: &mut Builder) {
    let n = input.layers.len();
    if let Some(bd) = input.breakdowns {
        let mut types: Vec<String> = bd
            .by_type
            .iter()
            .take(4)
            .map(|t| format!("{} ×{}", t.name, t.count))
            .collect();
        if bd.by_type.len() > 4 {
            types.push(format!("{} more types", bd.by_type.len() - 4));
        }
        b.fact(format!("{n} layers: {}", types.join(", ")));
    }
    if let Some(g) = input.graph {
        b.fact(format!(
            "layer graph: {} edges, {} external input tensor(s), {} output tensor(s){}",
            g.edge_count,
            g.external_inputs.len(),
            g.graph_outputs.len(),
            if g.multi_writers.is_empty() {
                String::new()
            } else {
                format!(", {} tensor(s) with several writers", g.multi_writers.len())
            }
        ));
    }
    if input.model.dynamic_dims {
        b.fact(
            "some tensor dimensions are -1: the export was made without concrete input shapes"
                .to_owned(),
        );
    }
    if input.names_only && input.timing.is_some() {
        b.fact("the profile matches the names-only layer list; per-layer times are shown as data but not interpreted".to_owned());
    }
}

fn latency_findings(input: &Input, b: &mut Builder) {
    let (Some(timing), Some(bd)) = (input.timing, input.breakdowns) else {
        return;
    };
    timing_facts(input, timing, bd, b);
    hotspot_finding(input.layers, b);
    concentration_findings(input.layers, bd, b);
    tiny_kernels_finding(input.layers, b);
    conversion_findings(input.layers, b);
    myelin_finding(input.layers, b);
}

/// The inference time, its end-to-end counterpart and the time by precision and by type.
fn timing_facts(input: &Input, timing: &Timing, bd: &Breakdowns, b: &mut Builder) {
    let layers = input.layers;
    b.fact(format!(
        "one inference is {} as the sum of {} per-layer averages{}",
        fmt_ms(timing.average_inference_ms),
        layers.len(),
        input
            .count
            .map(|c| format!(" over {c} profiled iteration(s)"))
            .unwrap_or_default()
    ));
    if let Some(e2e) = input
        .end_to_end
        .and_then(|t| t.compute_ms.as_ref().or(t.latency_ms.as_ref()))
    {
        let ratio = timing.average_inference_ms / e2e.mean;
        b.fact(format!(
            "end-to-end GPU compute from --exportTimes: mean {} over {} iterations; the per-layer sum is {ratio:.2}× that (per-layer profiling adds synchronization between layers)",
            fmt_ms(e2e.mean),
            e2e.count
        ));
    }
    let precision: Vec<String> = bd
        .by_precision
        .iter()
        .filter(|p| p.percentage.unwrap_or(0.0) > 0.05)
        .map(|p| format!("{} {:.1}%", p.name, p.percentage.unwrap_or(0.0)))
        .collect();
    if !precision.is_empty() {
        b.fact(format!("time by input precision: {}", precision.join(", ")));
    }
    let types: Vec<String> = bd
        .by_type
        .iter()
        .take(3)
        .map(|t| format!("{} {:.1}%", t.name, t.percentage.unwrap_or(0.0)))
        .collect();
    b.fact(format!("time by type: {}", types.join(", ")));
}

/// The largest layer: an issue from 5 % of the time on, a positive below.
fn hotspot_finding(layers: &[LayerView], b: &mut Builder) {
    // The largest layer (ties: the first); no need to sort them all.
    let largest = layers
        .iter()
        .filter(|l| l.timing.is_some())
        .min_by(|x, y| pct(y).total_cmp(&pct(x)).then(x.index.cmp(&y.index)));
    if let Some(top) = largest {
        let t = top.timing.as_ref().map(|t| t.avg_ms).unwrap_or(0.0);
        let p = pct(top);
        let evidence = vec![
            format!(
                "{} ({}, {}) takes {p:.1}% of profiled time, {} on average",
                name(top),
                top.report_type,
                top.precision.unwrap_or("unknown precision"),
                fmt_ms(t)
            ),
            format!("tactic: {}", top.tactic.as_deref().unwrap_or("none named")),
        ];
        b.fact(format!("largest layer: {} at {p:.1}%", name(top)));
        if p >= 10.0 {
            b.issue(
                "hotspot",
                p + 30.0,
                "Single-layer hotspot".to_owned(),
                evidence,
                "this layer's tactic, precision or shape may be suboptimal, or it may simply be the architecture's heaviest op",
                "compare its tactic and precision with layers of the same type; try a higher builder optimization level or another precision; check whether its neighbours could fuse into it",
                Confidence::High,
                vec![top.index],
            );
        } else if p >= 5.0 {
            b.issue(
                "hotspot",
                p + 12.0,
                "Moderate layer hotspot".to_owned(),
                evidence,
                "the largest layer may be expected for this architecture",
                "check whether this layer's share is expected before deeper tuning",
                Confidence::Medium,
                vec![top.index],
            );
        } else {
            b.positive(format!(
                "no single layer exceeds 5% of time (largest: {p:.1}%)"
            ));
        }
    }
}

/// One issue per flagged concentration category (kgen, shape, cast, gather, reshape, …).
fn concentration_findings(layers: &[LayerView], bd: &Breakdowns, b: &mut Builder) {
    for c in bd.concentration.iter().filter(|c| c.flagged) {
        let (hypothesis, next) = match c.category {
            "kgen" => (
                "generated (kgen) kernels doing pointwise and reduction work suggest fusion the builder did not achieve",
                "check whether norm, residual, activation and mask regions fuse as intended; compare with a build at a higher optimization level",
            ),
            "shape" | "cast" => (
                "dynamic shapes or dtype casts cost run time",
                "try static shapes or tighter optimization profiles; check where casts come from in the ONNX graph",
            ),
            "gather" => (
                "index/embedding gathers are memory-bound and may dominate small models",
                "check gather sizes and whether they can move off the hot path",
            ),
            "reshape" => (
                "layout transposes and reshapes were not folded into neighbours",
                "look for transpose chains in the ONNX graph and layout mismatches between layers",
            ),
            "pointwise" => (
                "pointwise layers run as separate kernels instead of fusing into producers",
                "check what separates them from their producers (precision changes, plugins, multiple consumers)",
            ),
            _ => (
                "normalization or reduction layers run unfused",
                "check whether LayerNorm/softmax patterns are recognised (opset, plugin availability)",
            ),
        };
        let idx: Vec<u32> = layers
            .iter()
            .filter(|l| l.in_concentration_category(c.category))
            .map(|l| l.index)
            .take(50)
            .collect();
        b.issue(
            "concentration",
            c.percentage + 8.0,
            format!("{} layers take {:.1}% of time", c.category, c.percentage),
            vec![format!(
                "{} {} layer(s) account for {:.1}% (flagged at ≥ {:.0}%)",
                c.count, c.category, c.percentage, c.threshold
            )],
            hypothesis,
            next,
            Confidence::Medium,
            idx,
        );
    }
}

/// Many tiny kernels: no single hotspot, but short kernels add up.
fn tiny_kernels_finding(layers: &[LayerView], b: &mut Builder) {
    let tiny: Vec<&LayerView> = layers
        .iter()
        .filter(|l| {
            l.timing
                .as_ref()
                .is_some_and(|t| t.avg_ms > 0.0 && t.avg_ms < 0.005)
        })
        .collect();
    let tiny_share: f64 = tiny.iter().map(|l| pct(l)).sum();
    if tiny.len() >= 20 && tiny_share >= 20.0 {
        b.issue(
            "tiny_kernels",
            tiny_share + 5.0,
            "Many tiny kernels add up".to_owned(),
            vec![format!("{} layers average under 5 µs and together take {tiny_share:.1}% of time", tiny.len())],
            "kernel launch and fusion overhead, not any single kernel, limits this engine",
            "look for fusion breakers and partitioning before tuning individual kernels; CUDA graphs reduce launch overhead",
            Confidence::Medium,
            tiny.iter().map(|l| l.index).take(50).collect(),
        );
    }
}

/// Reformat and Q/DQ overhead.
fn conversion_findings(layers: &[LayerView], b: &mut Builder) {
    for (family, what, threshold, hypothesis, next) in [
        (
            Family::Reformat,
            "Reformat",
            3.0,
            "layout or precision conversions between layers cost time (format mismatch between neighbours)",
            "check which layers force the conversions (input/output formats, precision constraints, plugins) and whether the engine I/O formats can match",
        ),
        (
            Family::QuantDequant,
            "Q/DQ",
            3.0,
            "quantize/dequantize operations run as separate kernels instead of fusing into their neighbours",
            "check Q/DQ placement in the ONNX graph (e.g. Q/DQ on residual inputs) so TensorRT can fuse them",
        ),
    ] {
        let members: Vec<&LayerView> = layers.iter().filter(|l| l.family == family).collect();
        let share: f64 = members.iter().map(|l| pct(l)).sum();
        if share >= threshold {
            b.issue(
                if family == Family::Reformat {
                    "reformat_overhead"
                } else {
                    "qdq_overhead"
                },
                share + 10.0,
                format!("{what} layers take {share:.1}% of time"),
                vec![format!(
                    "{} {what} layer(s) account for {share:.1}%",
                    members.len()
                )],
                hypothesis,
                next,
                Confidence::Medium,
                members.iter().map(|l| l.index).take(50).collect(),
            );
        } else if family == Family::Reformat && !members.is_empty() {
            b.positive(format!(
                "{} reformat layer(s) take only {share:.1}% of time",
                members.len()
            ));
        }
    }
}

/// Myelin regions whose inner kernels the profile does not show.
fn myelin_finding(layers: &[LayerView], b: &mut Builder) {
    let myelin: Vec<&LayerView> = layers
        .iter()
        .filter(|l| l.family == Family::Myelin)
        .collect();
    let myelin_share: f64 = myelin.iter().map(|l| pct(l)).sum();
    if myelin_share >= 20.0 {
        b.issue(
            "opaque_myelin",
            myelin_share / 2.0 + 10.0,
            format!("Opaque Myelin regions take {myelin_share:.1}% of time"),
            vec![format!("{} {{ForeignNode[…]}} layer(s) account for {myelin_share:.1}%; their inner kernels are not profiled one by one", myelin.len())],
            "the time inside these regions cannot be attributed to operations from this profile",
            "profile with Nsight Systems, or rebuild with TensorRT 10+, whose exports list Myelin kernels (kgen/gemm) individually",
            Confidence::Low,
            myelin.iter().map(|l| l.index).collect(),
        );
    }
}

fn tactic_findings(input: &Input, b: &mut Builder) {
    if input.names_only {
        return;
    }
    let math: Vec<&LayerView> = input
        .layers
        .iter()
        .filter(|l| l.family.is_matrix_math() && l.tactic.as_deref().is_some_and(|t| !t.is_empty()))
        .collect();
    if math.is_empty() {
        return;
    }
    let hint = |l: &LayerView| tensor_core_hint(l.tactic.as_deref().unwrap_or(""));
    let non_tc: Vec<&&LayerView> = math
        .iter()
        .filter(|l| hint(l) == TensorCoreHint::No)
        .collect();
    let tc = math
        .iter()
        .filter(|l| hint(l) == TensorCoreHint::Yes)
        .count();
    let timed = input.mode == Mode::LayerProfile;
    if non_tc.is_empty() {
        if tc > 0 {
            b.positive(format!(
                "all {} convolution/GEMM tactics with a recognisable name look tensor-core based",
                tc
            ));
        }
        return;
    }
    let share: f64 = non_tc.iter().map(|l| pct(l)).sum();
    let reduced: Vec<&&&LayerView> = non_tc
        .iter()
        .filter(|l| l.precision.is_some_and(|p| p != "FP32"))
        .collect();
    let examples: Vec<String> = non_tc
        .iter()
        .take(3)
        .map(|l| format!("{} → {}", name(l), l.tactic.as_deref().unwrap_or("")))
        .collect();
    let mut evidence = vec![if timed {
        format!(
            "{} of {} convolution/GEMM layers use tactics without tensor-core markers (hmma/imma/tensorNxMxK/tf32…), {share:.1}% of time",
            non_tc.len(),
            math.len()
        )
    } else {
        format!(
            "{} of {} convolution/GEMM layers use tactics without tensor-core markers (hmma/imma/tensorNxMxK/tf32…)",
            non_tc.len(),
            math.len()
        )
    }];
    evidence.push(format!("e.g. {}", examples.join("; ")));
    let (hypothesis, confidence, extra) = if !reduced.is_empty() {
        (
            "reduced-precision math that does not use tensor cores suggests misaligned channels or an unsupported shape",
            Confidence::Medium,
            10.0,
        )
    } else {
        (
            "these layers compute in FP32 without tensor cores; FP16/BF16/INT8 or TF32 would let them use tensor cores",
            Confidence::Low,
            5.0,
        )
    };
    if !timed || share >= 5.0 {
        b.issue(
            "non_tensor_core_tactics",
            if timed { share + extra } else { extra },
            "Convolution/GEMM tactics without tensor-core names".to_owned(),
            evidence,
            hypothesis,
            "check the layers' precisions and channel alignment (multiples of 8 for FP16, 16/32 for INT8); try --fp16/--bf16/--best or allow TF32",
            confidence,
            non_tc.iter().map(|l| l.index).take(50).collect(),
        );
    }
}

/// The channel multiple a convolution needs for tensor-core kernels at its input precision (the
/// multiples TREx's linter checks: 16 for 8-bit types, 8 for 16-bit ones; TF32 needs 4).
pub fn tensor_core_multiple(precision: &str) -> Option<i64> {
    match precision {
        "INT8" | "FP8" => Some(16),
        "FP16" | "BF16" => Some(8),
        "FP32" => Some(4),
        _ => None,
    }
}

/// A convolution's input and output channels (`C`, `K`) where the record has its parameters.
pub fn conv_channels(l: &LayerView) -> Option<(Option<i64>, Option<i64>)> {
    let conv = l.conv.as_ref()?;
    let channels = |t: &[crate::analysis::TensorView]| -> Option<i64> {
        t.first()?.dims.as_ref()?.get(1).copied().filter(|c| *c > 0)
    };
    Some((
        channels(&l.inputs),
        conv.out_maps.or_else(|| channels(&l.outputs)),
    ))
}

/// The checks of TREx's linter (`trex/lint.py`), each an issue with the layers as evidence:
/// channels off the tensor-core multiple, INT8 convolutions writing float, reformats that convert
/// the data type, and Quantize/Dequantize left as separate `Scale` layers (TensorRT 8.2 era).
fn trex_checks(input: &Input, b: &mut Builder) {
    if input.names_only || input.runtime != crate::provenance::Runtime::Tensorrt {
        return;
    }
    let timed = input.mode == Mode::LayerProfile;
    let share = |ls: &[&LayerView]| ls.iter().map(|l| pct(l)).sum::<f64>();
    let score = |ls: &[&LayerView], weight: f64| if timed { share(ls) + weight } else { weight };
    let share_note = |ls: &[&LayerView]| {
        if timed {
            format!(", {:.1}% of time", share(ls))
        } else {
            String::new()
        }
    };
    let examples = |ls: &[&LayerView], what: &dyn Fn(&LayerView) -> String| -> String {
        let mut e: Vec<String> = ls.iter().take(3).map(|l| what(l)).collect();
        if ls.len() > 3 {
            e.push(format!("{} more", ls.len() - 3));
        }
        e.join("; ")
    };
    let indexes = |ls: &[&LayerView]| ls.iter().map(|l| l.index).take(50).collect::<Vec<u32>>();

    // Channels off the tensor-core multiple of the convolution's precision.
    let unaligned: Vec<(&LayerView, i64, Option<i64>, Option<i64>)> = input
        .layers
        .iter()
        .filter(|l| l.family == Family::Convolution)
        .filter_map(|l| {
            let (c, k) = conv_channels(l)?;
            let m = tensor_core_multiple(l.precision?)?;
            let off = |x: Option<i64>| x.filter(|x| x % m != 0);
            (off(c).is_some() || off(k).is_some()).then_some((l, m, c, k))
        })
        .collect();
    if !unaligned.is_empty() {
        let ls: Vec<&LayerView> = unaligned.iter().map(|u| u.0).collect();
        let ch = |x: Option<i64>| x.map_or("?".to_owned(), |x| x.to_string());
        let all_first_inputs = unaligned
            .iter()
            .all(|u| u.2.is_some_and(|c| c <= 4) && u.3.is_some_and(|k| k % u.1 == 0));
        b.issue(
            "conv_channels_unaligned",
            score(&ls, 4.0),
            "Convolution channels not aligned to the tensor-core multiple".to_owned(),
            vec![
                format!("{} convolution(s) with input (C) or output (K) channels that are not a multiple of 16 (INT8/FP8), 8 (FP16/BF16) or 4 (TF32) at their precision{}", ls.len(), share_note(&ls)),
                format!("e.g. {}", examples(&ls, &|l| {
                    let u = unaligned.iter().find(|u| u.0.index == l.index).expect("listed");
                    format!("{} {} C={} K={} (multiple {})", name(l), l.precision.unwrap_or("?"), ch(u.2), ch(u.3), u.1)
                })),
            ],
            if all_first_inputs {
                "only layers reading a few channels (an image's RGB input) are off the multiple; TensorRT pads them and this is expected"
            } else {
                "misaligned channels make TensorRT pad the tensors or fall back to kernels without tensor cores"
            },
            "pad the channel counts in the model to the multiple (e.g. 1000 → 1008 classes) and compare the layers' tactics and times",
            if all_first_inputs { Confidence::Low } else { Confidence::Medium },
            indexes(&ls),
        );
    }

    // INT8 convolutions that write a float tensor.
    let float_out: Vec<&LayerView> = input
        .layers
        .iter()
        .filter(|l| {
            l.family == Family::Convolution
                && l.precision == Some("INT8")
                && l.output_precision.is_some_and(|p| p != "INT8")
        })
        .collect();
    if !float_out.is_empty() {
        b.issue(
            "int8_conv_float_output",
            score(&float_out, 3.0),
            "Quantized convolutions with float outputs".to_owned(),
            vec![
                format!("{} convolution(s) read INT8 and write a floating-point tensor{}", float_out.len(), share_note(&float_out)),
                format!("e.g. {}", examples(&float_out, &|l| format!("{} INT8 → {}", name(l), l.output_precision.unwrap_or("?")))),
            ],
            "no quantize follows these convolutions in the graph (a missing Q/DQ pair after them, or a consumer that must read float), so they write wider data than INT8",
            "check the ONNX graph for a QuantizeLinear after each listed convolution's output (and after residual adds); the last layer writing float is normal",
            Confidence::Medium,
            indexes(&float_out),
        );
    }

    // Reformats that change the data type, not only the layout.
    let converting: Vec<&LayerView> = input
        .layers
        .iter()
        .filter(|l| {
            (l.family == Family::Reformat || &*l.raw_type == "Slice")
                && l.precision.is_some()
                && l.output_precision.is_some()
                && l.precision != l.output_precision
        })
        .collect();
    if !converting.is_empty() {
        b.issue(
            "reformat_converts_type",
            score(&converting, 2.0),
            "Reformat layers convert data types".to_owned(),
            vec![
                format!("{} reformat layer(s) change the data type, not only the layout{}", converting.len(), share_note(&converting)),
                format!("e.g. {}", examples(&converting, &|l| format!("{} {} → {}", name(l), l.precision.unwrap_or("?"), l.output_precision.unwrap_or("?")))),
            ],
            "neighbouring layers run at different precisions, so TensorRT converts between them (at the engine's inputs and outputs this is the price of float bindings)",
            "give the inputs and outputs the engine's precision (trtexec --inputIOFormats/--outputIOFormats) or let the neighbours share one precision",
            Confidence::Medium,
            indexes(&converting),
        );
    }

    // Quantize/Dequantize left as their own Scale layers (TensorRT 8.2 era): INT8 on one side only.
    let unfused: Vec<&LayerView> = input
        .layers
        .iter()
        .filter(|l| {
            &*l.raw_type == "Scale"
                && l.precision.is_some()
                && l.output_precision.is_some()
                && (l.precision == Some("INT8")) != (l.output_precision == Some("INT8"))
        })
        .collect();
    if !unfused.is_empty() {
        b.issue(
            "unfused_quantize",
            score(&unfused, 2.0),
            "Unfused Quantize/Dequantize layers".to_owned(),
            vec![
                format!("{} Scale layer(s) with INT8 on exactly one side run as kernels of their own{}", unfused.len(), share_note(&unfused)),
                format!("e.g. {}", examples(&unfused, &|l| format!("{} {} → {}", name(l), l.precision.unwrap_or("?"), l.output_precision.unwrap_or("?")))),
            ],
            "TensorRT could not fuse these Q/DQ nodes into the neighbouring convolution or element-wise layer (a Q/DQ placement it does not support)",
            "move each Q/DQ pair to directly around the layer it quantizes (TensorRT's Q/DQ placement rules) and rebuild",
            Confidence::Medium,
            indexes(&unfused),
        );
    }
}

/// Whether a layer is a fused Q/K/V projection.
fn is_qkv_fused(l: &LayerView) -> bool {
    let text = format!("{} {}", l.name, l.origins.join(" ")).to_ascii_lowercase();
    let named = text.contains("qkv")
        || (text.contains("query") && text.contains("key") && text.contains("value"));
    let matmuls = l
        .origins
        .iter()
        .filter(|o| o.to_ascii_lowercase().contains("matmul"))
        .count();
    named || (matmuls >= 3 && l.family == Family::Gemm)
}

fn fusion_findings(input: &Input, b: &mut Builder) {
    if input.names_only {
        return;
    }
    let layers = input.layers;
    let convs: Vec<&LayerView> = layers
        .iter()
        .filter(|l| l.family == Family::Convolution)
        .collect();
    if !convs.is_empty() {
        let with_act = convs
            .iter()
            .filter(|l| l.tags.contains(&"activation") || l.origins.len() > 1)
            .count();
        // CPU runtimes list weights as inputs: only tensors another layer writes are residuals.
        let external: Vec<&str> = match (input.runtime, input.graph) {
            (crate::provenance::Runtime::Tensorrt, _) | (_, None) => Vec::new(),
            (_, Some(g)) => g.external_inputs.iter().map(String::as_str).collect(),
        };
        let residual = convs
            .iter()
            .filter(|l| {
                l.inputs
                    .iter()
                    .filter(|t| !external.contains(&t.name.as_str()))
                    .count()
                    >= 2
            })
            .count();
        b.fact(format!("{} convolution layer(s): {with_act} fuse other ops (activation, bias, Q/DQ), {residual} take a second input (fused residual add)", convs.len()));
        if with_act * 2 >= convs.len() && with_act > 0 {
            b.positive(format!(
                "{with_act} of {} convolutions carry fused neighbours",
                convs.len()
            ));
        }
    }
    let attention = layers
        .iter()
        .filter(|l| l.family == Family::Attention)
        .count();
    if attention > 0 {
        b.fact(format!(
            "{attention} fused attention layer(s) (MHA/FMHA kernels or attention plugins)"
        ));
    }
    // Norm and GELU fusion, judged on compute layers only (copies and reformats name their consumers).
    let compute = |l: &&LayerView| {
        !matches!(
            l.family,
            Family::NoOp
                | Family::Reformat
                | Family::Constant
                | Family::Myelin
                | Family::QuantDequant
        )
    };
    let mentions = |l: &LayerView, keys: &[&str]| {
        l.origins
            .iter()
            .any(|o| keys.iter().any(|k| contains_ci(o, k)))
    };
    let norm_keys = [
        "layernorm",
        "layer_norm",
        "groupnorm",
        "group_norm",
        "instancenorm",
        "instancenormalization",
        "rmsnorm",
    ];
    let norms: Vec<&LayerView> = layers
        .iter()
        .filter(compute)
        .filter(|l| mentions(l, &norm_keys) || l.family == Family::Normalization)
        .collect();
    if !norms.is_empty() {
        let fused = norms.iter().filter(|l| l.origins.len() > 2).count();
        b.fact(format!(
            "normalization: {} layer(s), {fused} fused with other ops, {} running alone",
            norms.len(),
            norms.len() - fused
        ));
    }
    let gelus: Vec<&LayerView> = layers
        .iter()
        .filter(compute)
        .filter(|l| mentions(l, &["gelu", "erf"]))
        .collect();
    if !gelus.is_empty() {
        let fused = gelus.iter().filter(|l| l.origins.len() > 1).count();
        b.fact(format!(
            "GELU/Erf: {} layer(s), {fused} fused into larger layers, {} standalone",
            gelus.len(),
            gelus.len() - fused
        ));
    }

    // Transformer block checks, only with a known block count.
    let category = input.model.category.category;
    let transformer = category.contains("ransformer") || category.contains("LLM");
    if let (true, Some(blocks)) = (transformer, input.model.num_layers.filter(|n| *n > 0)) {
        let qkv = layers.iter().filter(|l| is_qkv_fused(l)).count() as i64;
        if qkv < blocks {
            b.issue(
                "qkv_fusion",
                30.0 + 3.0 * (blocks - qkv) as f64,
                "Q/K/V projections may not be fused per block".to_owned(),
                vec![format!("{qkv} QKV-fused projection layer(s) for {blocks} transformer blocks")],
                "separate Q, K and V GEMMs cost extra launches and memory traffic",
                "check whether the ONNX export already concatenates Q/K/V weights and whether the engine shows one GEMM per block for them",
                Confidence::Medium,
                Vec::new(),
            );
        } else {
            b.positive(format!(
                "{qkv} QKV-fused projection layers for {blocks} blocks"
            ));
        }
        if (attention as i64) < blocks {
            b.issue(
                "attention_fusion",
                18.0 + 2.0 * (blocks - attention as i64) as f64,
                "Fused attention is not obvious".to_owned(),
                vec![format!("{attention} fused attention layer(s) for {blocks} transformer blocks")],
                "attention may run as separate matmul/softmax kernels, or hide behind generated kernel names",
                "search the layer list for softmax and batched matmuls inside each block; try a newer TensorRT or an attention plugin",
                Confidence::Low,
                Vec::new(),
            );
        } else {
            b.positive(format!(
                "{attention} fused attention layers for {blocks} blocks"
            ));
        }
    }
}

fn partition_findings(input: &Input, b: &mut Builder) {
    let e = input.engines;
    if e.streams.len() > 1 {
        b.fact(format!("layers run on {} CUDA streams: per-layer times may overlap, so their sum can overstate latency", e.streams.len()));
    }
    if e.myelin_regions > 0 {
        b.fact(format!("{} opaque Myelin region(s) ({{ForeignNode[…]}}): the builder handed those subgraphs to Myelin", e.myelin_regions));
    }
    if e.plugin_layers > 0 {
        b.fact(format!(
            "{} plugin layer(s): plugins are fusion boundaries",
            e.plugin_layers
        ));
    }
    match e.inferred_count {
        Some(n) if n > 1 => b.issue(
            "partitioning",
            35.0,
            "Several engines or partitions".to_owned(),
            vec![format!("{n} partitions inferred from {}", e.source)],
            "graph breaks or unsupported operations may force the model into several engines (inferred from hints, not from this export)",
            "check the framework's conversion log for unsupported operations and fallbacks",
            Confidence::Medium,
            Vec::new(),
        ),
        Some(1) if input.runtime == crate::provenance::Runtime::Tensorrt => {
            b.positive(format!("one engine ({})", e.source))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{BackendModel, LayerTiming};
    use crate::identity::CategoryGuess;

    fn layer(
        i: u32,
        name: &str,
        family: Family,
        pct: f64,
        avg: f64,
        tactic: Option<&str>,
    ) -> LayerView {
        LayerView {
            index: i,
            name: name.to_owned(),
            raw_type: "CaskConvolution".into(),
            report_type: "CaskConvolution".into(),
            family,
            family_from_name: false,
            parameter_type: None,
            precision: Some("FP16"),
            output_precision: Some("FP16"),
            tactic: tactic.map(str::to_owned),
            stream: None,
            subgraph: None,
            origins: vec![name.to_owned()],
            inputs: Vec::new(),
            outputs: Vec::new(),
            tags: Vec::new(),
            timing: Some(LayerTiming {
                time_ms: avg,
                avg_ms: avg,
                median_ms: Some(avg),
                percentage: pct,
            }),
            raw: None,
            verbatim_ok: true,
            conv: None,
            weights: None,
            bias: None,
        }
    }

    fn model() -> BackendModel {
        BackendModel {
            name: None,
            name_confidence: Confidence::Low,
            category: CategoryGuess {
                category: crate::identity::category::CNN,
                confidence: Confidence::High,
                evidence: Vec::new(),
            },
            config_path: None,
            hidden_size: None,
            intermediate_size: None,
            num_layers: None,
            num_heads: None,
            max_position_embeddings: None,
            sequence_length: None,
            dynamic_dims: false,
            input_shapes: Default::default(),
        }
    }

    fn engines() -> Engines {
        Engines {
            engine_files: Vec::new(),
            subgraphs: Vec::new(),
            streams: Vec::new(),
            myelin_regions: 0,
            plugin_layers: 0,
            inferred_count: Some(1),
            source: "test".to_owned(),
            inferred: false,
        }
    }

    fn run(layers: &[LayerView], mode: Mode) -> Findings {
        let bd = crate::backend::breakdowns(layers);
        let timing = Timing {
            total_time_ms: 1.0,
            average_inference_ms: 1.0,
            median_sum_ms: None,
            total_percentage: 100.0,
        };
        let m = model();
        let e = engines();
        derive(&Input {
            mode,
            layers,
            timing: Some(&timing),
            count: Some(1),
            end_to_end: None,
            breakdowns: Some(&bd),
            engines: &e,
            model: &m,
            graph: None,
            names_only: false,
            runtime: crate::provenance::Runtime::Tensorrt,
        })
    }

    #[test]
    fn hotspot_and_tiny_kernels_are_ranked() {
        let mut layers = vec![layer(
            0,
            "big",
            Family::Convolution,
            30.0,
            0.3,
            Some("sm80_xmma_fprop_implicit_gemm_f16f16_tensor16x8x16"),
        )];
        for i in 1..31 {
            layers.push(layer(
                i,
                &format!("small{i}"),
                Family::Pointwise,
                70.0 / 30.0,
                0.002,
                None,
            ));
        }
        let f = run(&layers, Mode::LayerProfile);
        let ids: Vec<&str> = f.issues.iter().map(|i| i.id).collect();
        // Spread-out pointwise time and tiny kernels outrank the single 30% layer.
        assert_eq!(ids, ["concentration", "tiny_kernels", "hotspot"]);
        let hot = f
            .issues
            .iter()
            .find(|i| i.id == "hotspot")
            .expect("hotspot");
        assert_eq!(hot.layers, [0]);
        assert!(hot.evidence[0].contains("30.0%"));
        assert!(f.positives.iter().any(|p| p.contains("tensor-core")));
    }

    #[test]
    fn layer_only_backends_get_no_latency_issues() {
        let layers = vec![
            layer(0, "big", Family::Convolution, 90.0, 1.0, None),
            layer(1, "b", Family::Pointwise, 10.0, 0.1, None),
        ];
        let f = run(&layers, Mode::LayerOnly);
        assert!(
            f.issues
                .iter()
                .all(|i| i.id != "hotspot" && i.id != "concentration")
        );
    }

    #[test]
    fn non_tensor_core_fp16_gemm_is_flagged() {
        let layers = vec![
            layer(
                0,
                "g",
                Family::Gemm,
                60.0,
                1.0,
                Some("sm70_xmma_gemm_as_conv1x1_f16f16_f16_f16_tn_n_simt_small_batch"),
            ),
            layer(1, "p", Family::Pointwise, 40.0, 1.0, None),
        ];
        let f = run(&layers, Mode::LayerProfile);
        let i = f
            .issues
            .iter()
            .find(|i| i.id == "non_tensor_core_tactics")
            .expect("flagged");
        assert_eq!(i.confidence, Confidence::Medium);
        assert!(i.evidence[0].contains("60.0%"));
    }
}
