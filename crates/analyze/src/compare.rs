//! Comparing several backends or builds of one model: totals, per-type deltas, and layer alignment
//! across builds whose layer names differ.
//!
//! Layers are aligned by name, by shared source ONNX nodes, by their place in the graph (the
//! aligned producers and consumers around them), and only then by a family and shapes that a
//! single layer on each side has (see [`align`]). Reformat/copy and Q/DQ layers pair only with
//! their own kind. Several equally good candidates leave a layer unmatched, with the reason; every
//! pass is linear (hash groups and one walk over the edges).

use std::collections::{BTreeMap, VecDeque};

pub use crate::analysis::{
    AlignedRow, Cell, Comparison, Method, Pair, TotalRow, TypeRow, Unmatched, UnmatchedCode,
};
use crate::analysis::{Backend, LayerView};
use crate::classify::Family;
use foldhash::{HashMap, HashMapExt};

/// Groups usable backends by model and compares each group of two or more. With a known model
/// name every backend is a build of that model; otherwise the model is read from each label
/// (`resnet18-fp16` and `resnet18-int8` form one group, `mobilenet-qat` another).
///
/// `baseline` names the backend every other one is compared with (`--baseline LABEL`); without
/// one it is the first of its group, and `default_reason` says why that one is first.
pub fn compare_all(
    backends: &[Backend],
    model_name: Option<&str>,
    baseline: Option<&str>,
    default_reason: &str,
) -> Vec<Comparison> {
    let mut usable: Vec<&Backend> = backends
        .iter()
        .filter(|b| b.passed() && !b.layers.is_empty())
        .collect();
    // The chosen baseline goes first; the others keep their order.
    if let Some(pos) = baseline.and_then(|l| usable.iter().position(|b| b.label == l)) {
        let chosen = usable.remove(pos);
        usable.insert(0, chosen);
    }
    let mut groups: Vec<(Option<String>, Vec<&Backend>)> = Vec::new();
    for b in usable {
        let key = match model_name {
            Some(n) => Some(n.to_owned()),
            None => crate::identity::clean_name(&b.label),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(b),
            None => groups.push((key, vec![b])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, m)| m.len() >= 2)
        .map(|(model, members)| {
            let reason = if baseline == Some(members[0].label.as_str()) {
                "chosen with --baseline".to_owned()
            } else {
                default_reason.to_owned()
            };
            compare(model, &members, reason)
        })
        .collect()
}

/// Compares every backend of one group with the first one.
fn compare(model: Option<String>, usable: &[&Backend], baseline_reason: String) -> Comparison {
    let base = usable[0];
    let base_time = base.timing.as_ref().map(|t| t.average_inference_ms);
    let totals = usable
        .iter()
        .map(|b| {
            let t = b.timing.as_ref().map(|t| t.average_inference_ms);
            TotalRow {
                label: b.label.clone(),
                analysis_mode: b.validation.analysis_mode,
                layer_count: b.layers.len(),
                average_inference_ms: t,
                delta_ms: t.zip(base_time).map(|(t, bt)| t - bt),
                speedup: t
                    .zip(base_time)
                    .filter(|(t, _)| *t > 0.0)
                    .map(|(t, bt)| bt / t),
                precision_mix: precision_mix(b),
            }
        })
        .collect();
    let by_type = type_rows(usable, |l| l.report_type.to_string());
    let by_family = type_rows(usable, |l| l.family.as_str().to_owned());
    // Each pair is independent: align them on threads of their own.
    let pairs = if usable.len() > 2 {
        std::thread::scope(|s| {
            let handles: Vec<_> = usable[1..]
                .iter()
                .map(|b| s.spawn(move || align(base, b)))
                .collect();
            handles
                .into_iter()
                .zip(&usable[1..])
                .map(|(h, b)| h.join().unwrap_or_else(|_| align(base, b)))
                .collect()
        })
    } else {
        usable[1..].iter().map(|b| align(base, b)).collect()
    };
    Comparison {
        model,
        baseline: base.label.clone(),
        baseline_reason,
        backends: usable.iter().map(|b| b.label.clone()).collect(),
        totals,
        by_type,
        by_family,
        pairs,
    }
}

fn precision_mix(b: &Backend) -> BTreeMap<String, f64> {
    let mut mix = BTreeMap::new();
    let timed = b.timing.is_some();
    let n = b.layers.len().max(1) as f64;
    for l in &b.layers {
        let key = l.precision.unwrap_or("unknown").to_owned();
        let share = if timed {
            l.timing.as_ref().map(|t| t.percentage).unwrap_or(0.0)
        } else {
            100.0 / n
        };
        *mix.entry(key).or_insert(0.0) += share;
    }
    mix
}

fn type_rows(usable: &[&Backend], key: impl Fn(&LayerView) -> String) -> Vec<TypeRow> {
    let mut rows: BTreeMap<String, Vec<Cell>> = BTreeMap::new();
    for (i, b) in usable.iter().enumerate() {
        for l in &b.layers {
            let cells = rows.entry(key(l)).or_insert_with(|| {
                (0..usable.len())
                    .map(|_| Cell {
                        count: 0,
                        avg_ms: None,
                    })
                    .collect()
            });
            let cell = &mut cells[i];
            cell.count += 1;
            if let Some(t) = &l.timing {
                cell.avg_ms = Some(cell.avg_ms.unwrap_or(0.0) + t.avg_ms);
            }
        }
    }
    let mut out: Vec<TypeRow> = rows
        .into_iter()
        .map(|(name, cells)| TypeRow { name, cells })
        .collect();
    let total = |r: &TypeRow| r.cells.iter().filter_map(|c| c.avg_ms).sum::<f64>();
    out.sort_by(|x, y| total(y).total_cmp(&total(x)).then(x.name.cmp(&y.name)));
    out
}

/// At most this many candidate layers are looked at per shared origin name, so very common names
/// (e.g. "Relu") cannot make alignment quadratic.
const ORIGIN_FANOUT: usize = 32;
/// Computing neighbours are looked for through at most this many reformat/copy/Q-DQ layers in a
/// row, and at most `NEIGHBOUR_CAP` of them are kept per layer, so that a tensor read by thousands
/// of layers keeps alignment linear.
const MOVEMENT_DEPTH: usize = 8;
const NEIGHBOUR_CAP: usize = 64;
/// How often a pair is looked at again after one of its neighbours was aligned (which may resolve
/// an ambiguity left there).
const REVISITS: u8 = 2;
/// Rounds of "a unique family and shapes, then positions from there".
const SIGNATURE_ROUNDS: usize = 4;

/// How alignment groups layers: reformats, copies and no-ops pair only with each other, Q/DQ
/// layers only with Q/DQ layers, computing layers only within their family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Movement,
    QuantDequant,
    Compute(Family),
}

impl Kind {
    fn of(l: &LayerView) -> Kind {
        if crate::classify::is_reformat_copy(&l.name) {
            return Kind::Movement;
        }
        match l.family {
            Family::Reformat | Family::NoOp | Family::Shuffle => Kind::Movement,
            Family::QuantDequant => Kind::QuantDequant,
            f => Kind::Compute(f),
        }
    }

    fn computes(self) -> bool {
        matches!(self, Kind::Compute(_))
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Movement => "reformat/copy",
            Kind::QuantDequant => "Q/DQ",
            Kind::Compute(f) => f.as_str(),
        }
    }
}

/// What tells one convolution from another whatever was fused into it: kernel, strides, groups,
/// input and output channels. (The output shape, which a fused trailing pooling changes, is part of
/// the keys instead.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ConvSig {
    kernel: Vec<i64>,
    stride: Vec<i64>,
    groups: Option<i64>,
    in_channels: Option<i64>,
    out_channels: Option<i64>,
}

impl ConvSig {
    fn of(l: &LayerView) -> Option<ConvSig> {
        if l.family != Family::Convolution {
            return None;
        }
        let c = l.conv.as_ref()?;
        let channels = |t: &[crate::analysis::TensorView]| first_dims(t)?.get(1).copied();
        Some(ConvSig {
            kernel: c.kernel.clone(),
            stride: c.stride.clone(),
            groups: c.groups,
            in_channels: channels(&l.inputs),
            out_channels: c.out_maps.or_else(|| channels(&l.outputs)),
        })
    }

    /// `3×3 /2, 64→128 channels`.
    fn describe(&self) -> String {
        let join = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("×")
        };
        let ch = |c: Option<i64>| c.map_or("?".to_owned(), |c| c.to_string());
        let mut s = format!(
            "{} /{}, {}→{} channels",
            join(&self.kernel),
            join(&self.stride),
            ch(self.in_channels),
            ch(self.out_channels)
        );
        if let Some(g) = self.groups.filter(|&g| g != 1) {
            s.push_str(&format!(", {g} groups"));
        }
        s
    }
}

/// A neighbour, and the input slot through which the edge's consumer reads it.
#[derive(Debug, Clone, Copy)]
struct Link {
    layer: u32,
    slot: u16,
}

/// One build's layers with what alignment needs to know about their places in the graph.
struct Side<'a> {
    label: &'a str,
    layers: &'a [LayerView],
    kind: Vec<Kind>,
    /// Nearest computing producers and consumers, looking through reformat/copy and Q/DQ layers
    /// (which one build inserts where another has none).
    cpreds: Vec<Vec<Link>>,
    csuccs: Vec<Vec<Link>>,
    /// For the other layers: how many of them lie in a row up to the computing producer.
    hops: Vec<u8>,
    /// Each convolution's [`ConvSig`], as an id shared by both builds.
    sig: Vec<Option<u32>>,
    has_graph: bool,
}

impl<'a> Side<'a> {
    fn new(b: &'a Backend, sigs: &mut HashMap<ConvSig, u32>) -> Side<'a> {
        let layers = b.layers.as_slice();
        let n = layers.len();
        let kind: Vec<Kind> = layers.iter().map(Kind::of).collect();
        let mut preds: Vec<Vec<Link>> = vec![Vec::new(); n];
        let mut succs: Vec<Vec<Link>> = vec![Vec::new(); n];
        let edges = b.graph.as_ref().map(|g| g.edges.as_slice()).unwrap_or(&[]);
        for &[from, to] in edges {
            let (f, t) = (from as usize, to as usize);
            if f == t || f >= n || t >= n {
                continue;
            }
            let slot = input_slot(&layers[f], &layers[t]);
            preds[t].push(Link { layer: from, slot });
            succs[f].push(Link { layer: to, slot });
        }
        let cpreds = (0..n)
            .map(|v| through_movement(&preds, v, &kind, false))
            .collect();
        let csuccs = (0..n)
            .map(|v| through_movement(&succs, v, &kind, true))
            .collect();
        let hops = (0..n)
            .map(|v| {
                let (mut h, mut w) = (0u8, v);
                while (h as usize) < MOVEMENT_DEPTH && !kind[w].computes() {
                    match preds[w].first() {
                        Some(p) => {
                            h += 1;
                            w = p.layer as usize;
                        }
                        None => break,
                    }
                }
                h
            })
            .collect();
        let sig = layers
            .iter()
            .map(|l| {
                let next = sigs.len() as u32;
                ConvSig::of(l).map(|s| *sigs.entry(s).or_insert(next))
            })
            .collect();
        Side {
            label: &b.label,
            layers,
            kind,
            cpreds,
            csuccs,
            hops,
            sig,
            has_graph: !edges.is_empty(),
        }
    }

    fn key(&self, c: Link, level: Level) -> Key<'a> {
        let i = c.layer as usize;
        let l = &self.layers[i];
        let (input, output) = (first_dims(&l.inputs), first_dims(&l.outputs));
        let kind = self.kind[i];
        // Every level compares the convolution signature: position never pairs convolutions
        // that differ in kernel, stride or channels.
        let sig = self.sig[i];
        match level {
            Level::Degree => Key {
                kind,
                sig,
                slot: Some(c.slot),
                input: Some(input),
                output: Some(output),
                degree: Some((self.cpreds[i].len(), self.csuccs[i].len())),
            },
            Level::Slot => Key {
                kind,
                sig,
                slot: Some(c.slot),
                input: Some(input),
                output: Some(output),
                degree: None,
            },
            Level::Shapes => Key {
                kind,
                sig,
                slot: None,
                input: Some(input),
                output: Some(output),
                degree: None,
            },
            // A fused trailing op (Conv + MaxPool) changes the output, not what the layer reads.
            Level::Input => Key {
                kind,
                sig,
                slot: None,
                input: Some(input),
                output: None,
                degree: None,
            },
        }
    }
}

/// Whether layer `i` of `sa` may pair with layer `j` of `sb`: the same kind, and for two
/// convolutions with parameters the same signature.
fn compatible(sa: &Side, i: usize, sb: &Side, j: usize) -> bool {
    sa.kind[i] == sb.kind[j]
        && match (sa.sig[i], sb.sig[j]) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// The first of `consumer`'s inputs that `producer` writes (`u16::MAX` when the edge came from a
/// buffer the export names differently).
fn input_slot(producer: &LayerView, consumer: &LayerView) -> u16 {
    consumer
        .inputs
        .iter()
        .position(|t| !t.name.is_empty() && producer.outputs.iter().any(|o| o.name == t.name))
        .map_or(u16::MAX, |p| p.min(u16::MAX as usize - 1) as u16)
}

fn first_dims(tensors: &[crate::analysis::TensorView]) -> Option<&[i64]> {
    tensors.first().and_then(|t| t.dims.as_deref())
}

/// `v`'s nearest computing neighbours along `adj`, passing through reformat/copy and Q/DQ layers.
/// Forward, a link keeps the final consumer's slot; backward, the slot through which `v` reads.
fn through_movement(adj: &[Vec<Link>], v: usize, kind: &[Kind], forward: bool) -> Vec<Link> {
    let mut out: Vec<Link> = Vec::new();
    let mut stack: Vec<(Link, usize)> = adj[v]
        .iter()
        .take(NEIGHBOUR_CAP)
        .rev()
        .map(|l| (*l, 1))
        .collect();
    let mut steps = 0;
    while let Some((link, depth)) = stack.pop() {
        steps += 1;
        if out.len() >= NEIGHBOUR_CAP || steps > 4 * NEIGHBOUR_CAP {
            break;
        }
        let w = link.layer as usize;
        if w == v {
            continue;
        }
        if kind[w].computes() {
            if !out.iter().any(|o| o.layer == link.layer) {
                out.push(link);
            }
        } else if depth < MOVEMENT_DEPTH {
            for next in adj[w].iter().take(NEIGHBOUR_CAP).rev() {
                let slot = if forward { next.slot } else { link.slot };
                stack.push((
                    Link {
                        layer: next.layer,
                        slot,
                    },
                    depth + 1,
                ));
            }
        }
    }
    out
}

/// How much of a layer's place a candidate key compares, finest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Family, input slot, first input and output shapes, numbers of computing producers and
    /// consumers.
    Degree,
    /// Without the numbers of neighbours (fusion differs between builds).
    Slot,
    /// Family and shapes only.
    Shapes,
    /// Family and first input shape only.
    Input,
}

impl Level {
    /// What the only candidate on each side shared, for a pair's evidence.
    fn describe(self) -> &'static str {
        match self {
            Level::Degree => "family, input slot, shapes and numbers of neighbours",
            Level::Slot => "family, input slot and shapes",
            Level::Shapes => "family and shapes",
            Level::Input => "family and input shape",
        }
    }
}

const POSITION_LEVELS: [Level; 4] = [Level::Degree, Level::Slot, Level::Shapes, Level::Input];
const SEED_LEVELS: [Level; 3] = [Level::Degree, Level::Shapes, Level::Input];

#[derive(Debug, PartialEq, Eq, Hash)]
struct Key<'a> {
    kind: Kind,
    sig: Option<u32>,
    slot: Option<u16>,
    input: Option<Option<&'a [i64]>>,
    output: Option<Option<&'a [i64]>>,
    degree: Option<(usize, usize)>,
}

/// The alignment under construction.
struct Alignment {
    a_to_b: Vec<Option<(u32, Method)>>,
    /// Per layer of a: what its pair was found by.
    evidence: Vec<Option<String>>,
    b_to_a: Vec<Option<u32>>,
    /// Why a layer may stay unmatched: it had several equally good candidates.
    ambiguous_a: Vec<Option<String>>,
    ambiguous_b: Vec<Option<String>>,
}

impl Alignment {
    fn free_a(&self, x: u32) -> bool {
        self.a_to_b[x as usize].is_none()
    }

    fn free_b(&self, y: u32) -> bool {
        self.b_to_a[y as usize].is_none()
    }

    fn link(&mut self, x: u32, y: u32, method: Method, evidence: String) -> bool {
        if !self.free_a(x) || !self.free_b(y) {
            return false;
        }
        self.a_to_b[x as usize] = Some((y, method));
        self.evidence[x as usize] = Some(evidence);
        self.b_to_a[y as usize] = Some(x);
        true
    }
}

/// Pairs the free candidates that are alone in their group on both sides, comparing each level's
/// key in turn, and appends the new pairs to `new`. Candidates that still share the coarsest group
/// with others on both sides are marked ambiguous (`place` says where). Returns whether any were.
#[allow(clippy::too_many_arguments)]
fn match_groups<'a>(
    sa: &Side<'a>,
    sb: &Side<'a>,
    al: &mut Alignment,
    ca: &[Link],
    cb: &[Link],
    levels: &[Level],
    method: Method,
    place: &dyn Fn() -> String,
    new: &mut Vec<(u32, u32)>,
) -> bool {
    let mut ca: Vec<Link> = ca.iter().filter(|c| al.free_a(c.layer)).copied().collect();
    let mut cb: Vec<Link> = cb.iter().filter(|c| al.free_b(c.layer)).copied().collect();
    // Per key: [count in a, a candidate in a, count in b, a candidate in b].
    let mut groups: HashMap<Key<'a>, [u32; 4]> = HashMap::new();
    let Some(&last) = levels.last() else {
        return false;
    };
    for &level in levels {
        if ca.is_empty() || cb.is_empty() {
            return false;
        }
        count(sa, sb, &ca, &cb, level, &mut groups);
        for c in &ca {
            if let Some(g) = groups.get(&sa.key(*c, level))
                && g[0] == 1
                && g[2] == 1
                && al.free_a(g[1])
                && al.free_b(g[3])
            {
                let mut evidence = format!("the only fit by {} {}", level.describe(), place());
                if let Some(sig) = ConvSig::of(&sa.layers[g[1] as usize]) {
                    evidence.push_str(&format!(" (convolution {})", sig.describe()));
                }
                al.link(g[1], g[3], method, evidence);
                new.push((g[1], g[3]));
            }
        }
        ca.retain(|c| al.free_a(c.layer));
        cb.retain(|c| al.free_b(c.layer));
    }
    if ca.is_empty() || cb.is_empty() {
        return false;
    }
    count(sa, sb, &ca, &cb, last, &mut groups);
    let mut any = false;
    for (side, cands, other) in [(sa, &ca, false), (sb, &cb, true)] {
        for c in cands.iter() {
            let Some(g) = groups.get(&side.key(*c, last)) else {
                continue;
            };
            if g[0] == 0 || g[2] == 0 {
                continue;
            }
            any = true;
            let slot = if other {
                &mut al.ambiguous_b[c.layer as usize]
            } else {
                &mut al.ambiguous_a[c.layer as usize]
            };
            if slot.is_none() {
                *slot = Some(format!(
                    "{} {} layer(s) in `{}` and {} in `{}` fit equally well {}",
                    g[0],
                    side.kind[c.layer as usize].describe(),
                    sa.label,
                    g[2],
                    sb.label,
                    place()
                ));
            }
        }
    }
    any
}

fn count<'a>(
    sa: &Side<'a>,
    sb: &Side<'a>,
    ca: &[Link],
    cb: &[Link],
    level: Level,
    groups: &mut HashMap<Key<'a>, [u32; 4]>,
) {
    groups.clear();
    for c in ca {
        let g = groups.entry(sa.key(*c, level)).or_insert([0; 4]);
        g[0] += 1;
        g[1] = c.layer;
    }
    for c in cb {
        let g = groups.entry(sb.key(*c, level)).or_insert([0; 4]);
        g[2] += 1;
        g[3] = c.layer;
    }
}

/// Aligns the computing neighbours of every aligned pair in `queue`, and of every pair that
/// creates, until nothing changes. Each pair is looked at once, and again (at most `REVISITS`
/// times) when a neighbour of it was aligned after it left an ambiguity.
fn propagate(sa: &Side, sb: &Side, al: &mut Alignment, mut queue: VecDeque<(u32, u32)>) {
    let n = sa.layers.len();
    let mut pending = vec![false; n];
    let mut visits = vec![0u8; n];
    let mut new = Vec::new();
    while let Some((x, y)) = queue.pop_front() {
        let (xi, yi) = (x as usize, y as usize);
        visits[xi] = visits[xi].saturating_add(1);
        new.clear();
        let place = || format!("next to `{}`", short_plain(&sa.layers[xi].name));
        let mut left = false;
        for (na, nb) in [
            (&sa.cpreds[xi], &sb.cpreds[yi]),
            (&sa.csuccs[xi], &sb.csuccs[yi]),
        ] {
            left |= match_groups(
                sa,
                sb,
                al,
                na,
                nb,
                &POSITION_LEVELS,
                Method::Position,
                &place,
                &mut new,
            );
        }
        pending[xi] = left;
        for &(u, v) in &new {
            queue.push_back((u, v));
            for link in sa.cpreds[u as usize].iter().chain(&sa.csuccs[u as usize]) {
                let w = link.layer as usize;
                if pending[w]
                    && visits[w] <= REVISITS
                    && let Some((t, _)) = al.a_to_b[w]
                {
                    pending[w] = false;
                    queue.push_back((w as u32, t));
                }
            }
        }
    }
}

/// Pass 2: a convolution whose signature (kernel, strides, groups, channels, input and output
/// shapes) only one unaligned convolution of each build has. It comes before the source nodes: a
/// residual add fused into the shortcut convolution in one build and into the main-path one in
/// the other puts the add's node on two different convolutions.
fn by_signature(sa: &Side, sb: &Side, al: &mut Alignment) {
    let is_conv = |s: &Side, i: u32| s.sig[i as usize].is_some();
    if pair_unique_shapes(sa, sb, al, &is_conv, "among the unaligned convolutions").is_some() {
        // Convolutions that share a signature are left to the later passes, not marked ambiguous
        // yet.
        al.ambiguous_a.fill(None);
        al.ambiguous_b.fill(None);
    }
}

/// Pairs the unaligned layers that `keep` selects on each side where their shapes are unique on
/// both (`Method::Signature`; `place` names the candidates in an ambiguity note). The new pairs,
/// or `None` when one side has no candidate.
fn pair_unique_shapes(
    sa: &Side,
    sb: &Side,
    al: &mut Alignment,
    keep: &dyn Fn(&Side, u32) -> bool,
    place: &'static str,
) -> Option<Vec<(u32, u32)>> {
    let candidates = |s: &Side, free: &dyn Fn(u32) -> bool| -> Vec<Link> {
        (0..s.layers.len() as u32)
            .filter(|&i| free(i) && keep(s, i))
            .map(|i| Link { layer: i, slot: 0 })
            .collect()
    };
    let (ca, cb) = (
        candidates(sa, &|i| al.free_a(i)),
        candidates(sb, &|j| al.free_b(j)),
    );
    if ca.is_empty() || cb.is_empty() {
        return None;
    }
    let mut new = Vec::new();
    match_groups(
        sa,
        sb,
        al,
        &ca,
        &cb,
        &[Level::Shapes],
        Method::Signature,
        &|| place.to_owned(),
        &mut new,
    );
    Some(new)
}

/// Pass 1: identical names of the same kind. A name used k times in both builds pairs its
/// occurrences in order; one used a different number of times is left to the later passes.
fn by_name(sa: &Side, sb: &Side, al: &mut Alignment) {
    let mut in_b: HashMap<&str, (usize, VecDeque<u32>)> = HashMap::with_capacity(sb.layers.len());
    for l in sb.layers {
        let e = in_b.entry(l.name.as_str()).or_default();
        e.0 += 1;
        e.1.push_back(l.index);
    }
    let mut in_a: HashMap<&str, usize> = HashMap::with_capacity(sa.layers.len());
    for l in sa.layers {
        *in_a.entry(l.name.as_str()).or_default() += 1;
    }
    for (i, l) in sa.layers.iter().enumerate() {
        let Some((total, queue)) = in_b.get_mut(l.name.as_str()) else {
            continue;
        };
        if in_a.get(l.name.as_str()) != Some(total) {
            continue;
        }
        if let Some(j) = queue.pop_front()
            && compatible(sa, i, sb, j as usize)
        {
            al.link(i as u32, j, Method::Name, "the same name".to_owned());
        }
    }
}

/// Pass 3: shared source nodes, where each layer is the other's only best candidate of its kind
/// (and signature). A node that several layers of one build carry (an add fused into one
/// convolution here and another there, a shared quantizer) is evidence for none of them alone.
/// Reformat/copy layers are left to their places in the graph (their sources are the tensors they
/// copy, which one build may copy in a different place).
fn by_origin(sa: &Side, sb: &Side, al: &mut Alignment) {
    let (uses_a, uses_b) = (origin_uses(sa), origin_uses(sb));
    let telling = |o: &str| uses_a.get(o) == Some(&1) && uses_b.get(o) == Some(&1);
    let in_b = origin_index(sb, &|j| al.free_b(j));
    let in_a = origin_index(sa, &|i| al.free_a(i));
    let mut scores: HashMap<u32, usize> = HashMap::new();
    // The only best candidate of layer `i` of `me` in `other`, if any.
    let mut best =
        |me: &Side, i: usize, index: &HashMap<&str, Vec<u32>>, other: &Side, a_side: bool| {
            scores.clear();
            for o in me.layers[i].origins.iter().filter(|o| telling(o)) {
                for &j in index.get(o.as_str()).into_iter().flatten() {
                    let fits = if a_side {
                        compatible(me, i, other, j as usize)
                    } else {
                        compatible(other, j as usize, me, i)
                    };
                    if fits {
                        *scores.entry(j).or_default() += 1;
                    }
                }
            }
            let (mut top, mut top_score, mut tie) = (None, 0, false);
            for (&j, &s) in &scores {
                if s > top_score {
                    (top, top_score, tie) = (Some(j), s, false);
                } else if s == top_score {
                    tie = true;
                }
            }
            if tie { None } else { top }
        };
    // Each free, computing layer of `me`'s best candidate in `other`.
    let mut best_of_each = |me: &Side,
                            free: &dyn Fn(u32) -> bool,
                            index: &HashMap<&str, Vec<u32>>,
                            other: &Side,
                            a_side: bool|
     -> Vec<Option<u32>> {
        (0..me.layers.len())
            .map(|i| {
                (free(i as u32) && me.kind[i] != Kind::Movement)
                    .then(|| best(me, i, index, other, a_side))
                    .flatten()
            })
            .collect()
    };
    let best_b = best_of_each(sa, &|i| al.free_a(i), &in_b, sb, true);
    let best_a = best_of_each(sb, &|j| al.free_b(j), &in_a, sa, false);
    for (i, j) in best_b.iter().enumerate() {
        if let Some(j) = *j
            && best_a[j as usize] == Some(i as u32)
        {
            let theirs = &sb.layers[j as usize].origins;
            let shared: Vec<&str> = sa.layers[i]
                .origins
                .iter()
                .filter(|o| telling(o) && theirs.contains(o))
                .map(|o| o.as_str())
                .take(4)
                .collect();
            let evidence = format!("shared source nodes: {}", short_plain(&shared.join(", ")));
            al.link(i as u32, j, Method::Origin, evidence);
        }
    }
}

/// How many computing and Q/DQ layers carry each source node.
fn origin_uses<'a>(s: &Side<'a>) -> HashMap<&'a str, u32> {
    let mut uses: HashMap<&'a str, u32> = HashMap::new();
    for (i, l) in s.layers.iter().enumerate() {
        if s.kind[i] == Kind::Movement {
            continue;
        }
        for o in &l.origins {
            *uses.entry(o.as_str()).or_default() += 1;
        }
    }
    uses
}

/// Free layers (not reformat/copy) by source node, at most `ORIGIN_FANOUT` per node.
fn origin_index<'a>(s: &Side<'a>, free: &dyn Fn(u32) -> bool) -> HashMap<&'a str, Vec<u32>> {
    let mut by: HashMap<&'a str, Vec<u32>> = HashMap::new();
    for l in s.layers {
        if !free(l.index) || s.kind[l.index as usize] == Kind::Movement {
            continue;
        }
        for o in &l.origins {
            let v = by.entry(o.as_str()).or_default();
            if v.len() < ORIGIN_FANOUT && v.last() != Some(&l.index) {
                v.push(l.index);
            }
        }
    }
    by
}

/// Where a reformat/copy or Q/DQ layer sits: between which (aligned) computing layers, through
/// which slots. `None` while a neighbour is unaligned, or for a layer with no computing neighbour.
type PlaceKey = (Kind, Vec<(u32, u16)>, Vec<(u32, u16)>);

fn place_key(s: &Side, i: usize, to_a: &dyn Fn(u32) -> Option<u32>) -> Option<PlaceKey> {
    let ends = |links: &[Link]| -> Option<Vec<(u32, u16)>> {
        let mut v = links
            .iter()
            .map(|l| to_a(l.layer).map(|a| (a, l.slot)))
            .collect::<Option<Vec<_>>>()?;
        v.sort_unstable();
        Some(v)
    };
    let (p, c) = (ends(&s.cpreds[i])?, ends(&s.csuccs[i])?);
    (!p.is_empty() || !c.is_empty()).then_some((s.kind[i], p, c))
}

/// Last pass: a reformat/copy or Q/DQ layer pairs with one of its kind that sits between the same
/// aligned computing layers; never by type and shape alone. Where both builds have a row of such
/// layers of one length there, they pair in row order; rows of different lengths stay unmatched as
/// ambiguous.
fn by_place(sa: &Side, sb: &Side, al: &mut Alignment) {
    // Per place: the layers of a, the layers of b, each with its distance down the row.
    type Row = Vec<(u8, u32)>;
    let mut groups: HashMap<PlaceKey, (Row, Row)> = HashMap::new();
    let mut order: Vec<PlaceKey> = Vec::new();
    for i in 0..sa.layers.len() {
        if al.free_a(i as u32)
            && !sa.kind[i].computes()
            && let Some(k) = place_key(sa, i, &|x| (!al.free_a(x)).then_some(x))
        {
            let g = groups.entry(k.clone()).or_default();
            if g.0.is_empty() {
                order.push(k);
            }
            g.0.push((sa.hops[i], i as u32));
        }
    }
    for j in 0..sb.layers.len() {
        if al.free_b(j as u32)
            && !sb.kind[j].computes()
            && let Some(k) = place_key(sb, j, &|y| al.b_to_a[y as usize])
            && let Some(g) = groups.get_mut(&k)
        {
            g.1.push((sb.hops[j], j as u32));
        }
    }
    for k in &order {
        let Some((xs, ys)) = groups.get_mut(k) else {
            continue;
        };
        if ys.is_empty() {
            continue;
        }
        xs.sort_unstable();
        ys.sort_unstable();
        let rows_agree = xs.len() == ys.len()
            && xs.iter().zip(ys.iter()).all(|(x, y)| x.0 == y.0)
            && xs.windows(2).all(|w| w[0].0 < w[1].0);
        if xs.len() == 1 && ys.len() == 1 || rows_agree {
            let place = |x: u32| {
                let ends: Vec<String> = sa.cpreds[x as usize]
                    .iter()
                    .chain(&sa.csuccs[x as usize])
                    .take(2)
                    .map(|l| format!("`{}`", short_plain(&sa.layers[l.layer as usize].name)))
                    .collect();
                ends.join(" and ")
            };
            for (n, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
                let evidence = if xs.len() == 1 {
                    format!(
                        "the only {} layer between aligned {}",
                        k.0.describe(),
                        place(x.1)
                    )
                } else {
                    format!(
                        "number {} of a row of {} {} layers between aligned {}",
                        n + 1,
                        xs.len(),
                        k.0.describe(),
                        place(x.1)
                    )
                };
                al.link(x.1, y.1, Method::Position, evidence);
            }
            continue;
        }
        let detail = format!(
            "{} {} layer(s) in `{}` and {} in `{}` sit between the same aligned layers",
            xs.len(),
            k.0.describe(),
            sa.label,
            ys.len(),
            sb.label
        );
        for x in xs.iter() {
            al.ambiguous_a[x.1 as usize].get_or_insert_with(|| detail.clone());
        }
        for y in ys.iter() {
            al.ambiguous_b[y.1 as usize].get_or_insert_with(|| detail.clone());
        }
    }
}

/// Aligns the layers of two builds of one model. Passes, in order:
/// 1. identical names (same kind and convolution signature);
/// 2. a convolution signature with shapes that one unaligned convolution on each side has;
/// 3. shared source nodes carried by one layer per build, where each is the other's only best
///    candidate of the same signature;
/// 4. graph position: from the pairs so far and from the graph's first and last computing
///    layers, the computing neighbours of each aligned pair (seen through reformat/copy and Q/DQ
///    layers) pair up when exactly one on each side fits (same family, input slot, shapes);
/// 5. a family and shapes that only one unaligned layer on each side has, then 4 again from there;
/// 6. reformat/copy and Q/DQ layers by the aligned computing layers around them.
///
/// Several equally good candidates leave a layer unmatched, with the reason.
pub fn align(a: &Backend, b: &Backend) -> Pair {
    let mut sigs = HashMap::new();
    let (mut sa, mut sb) = (Side::new(a, &mut sigs), Side::new(b, &mut sigs));
    // Signatures tell convolutions apart only when both exports have them (trtexec's detailed
    // records do; ONNX Runtime and tract profiles do not).
    if sa.sig.iter().all(Option::is_none) || sb.sig.iter().all(Option::is_none) {
        sa.sig.fill(None);
        sb.sig.fill(None);
    }
    let (la, lb) = (&a.layers, &b.layers);
    let mut al = Alignment {
        a_to_b: vec![None; la.len()],
        evidence: vec![None; la.len()],
        b_to_a: vec![None; lb.len()],
        ambiguous_a: vec![None; la.len()],
        ambiguous_b: vec![None; lb.len()],
    };
    by_name(&sa, &sb, &mut al);
    by_signature(&sa, &sb, &mut al);
    by_origin(&sa, &sb, &mut al);

    if sa.has_graph && sb.has_graph {
        by_graph_ends(&sa, &sb, &mut al);
    }
    by_unique_shapes(&sa, &sb, &mut al);
    by_place(&sa, &sb, &mut al);
    pair_rows(a, b, &sa, &sb, al)
}

/// Step 4 from the graph's first and last computing layers and from every pair so far.
fn by_graph_ends(sa: &Side, sb: &Side, al: &mut Alignment) {
    let mut new = Vec::new();
    let ends = |s: &Side, adj: &[Vec<Link>]| -> Vec<Link> {
        (0..s.layers.len())
            .filter(|&i| s.kind[i].computes() && adj[i].is_empty())
            .map(|i| Link {
                layer: i as u32,
                slot: 0,
            })
            .collect()
    };
    for (ea, eb, what) in [
        (
            ends(sa, &sa.cpreds),
            ends(sb, &sb.cpreds),
            "among the first layers",
        ),
        (
            ends(sa, &sa.csuccs),
            ends(sb, &sb.csuccs),
            "among the last layers",
        ),
    ] {
        match_groups(
            sa,
            sb,
            al,
            &ea,
            &eb,
            &SEED_LEVELS,
            Method::Position,
            &|| what.to_owned(),
            &mut new,
        );
    }
    // Every pair so far (names, sources, the graph's ends) is a starting point.
    let queue: VecDeque<(u32, u32)> = al
        .a_to_b
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.map(|(j, _)| (i as u32, j)))
        .collect();
    propagate(sa, sb, al, queue);
}

/// Step 5: a family and shapes that only one unaligned layer on each side has, then step 4 again
/// from the new pairs, for at most `SIGNATURE_ROUNDS` rounds.
fn by_unique_shapes(sa: &Side, sb: &Side, al: &mut Alignment) {
    for _ in 0..SIGNATURE_ROUNDS {
        let computes = |s: &Side, i: u32| s.kind[i as usize].computes();
        let new = pair_unique_shapes(sa, sb, al, &computes, "among the unaligned layers")
            .unwrap_or_default();
        if new.is_empty() || !(sa.has_graph && sb.has_graph) {
            break;
        }
        propagate(sa, sb, al, new.into_iter().collect());
    }
}

/// The aligned rows of both builds, with what changed between each pair and why a layer stayed
/// unmatched, and the counts per method.
fn pair_rows(a: &Backend, b: &Backend, sa: &Side, sb: &Side, mut al: Alignment) -> Pair {
    let (la, lb) = (&a.layers, &b.layers);

    let match_a = &al.a_to_b;
    let mut rows = Vec::with_capacity(la.len().max(lb.len()));
    let mut counts = [0usize; 4];
    let mut changes = Vec::new();
    let (mut precision_changes, mut tactic_changes) = (0, 0);
    let (mut ambiguous_a, mut ambiguous_b) = (0, 0);
    for (i, m) in match_a.iter().enumerate() {
        let x = &la[i];
        match m {
            Some((j, method)) => {
                let y = &lb[*j as usize];
                counts[match method {
                    Method::Name => 0,
                    Method::Origin => 1,
                    Method::Position => 2,
                    _ => 3,
                }] += 1;
                let precision_changed =
                    x.precision.is_some() && y.precision.is_some() && x.precision != y.precision;
                let tactic_changed =
                    x.tactic.is_some() && y.tactic.is_some() && x.tactic != y.tactic;
                precision_changes += usize::from(precision_changed);
                tactic_changes += usize::from(tactic_changed);
                if (precision_changed || tactic_changed) && changes.len() < 12 {
                    let mut what = Vec::new();
                    if precision_changed {
                        what.push(format!(
                            "precision {} → {}",
                            x.precision.unwrap_or("?"),
                            y.precision.unwrap_or("?")
                        ));
                    }
                    if tactic_changed {
                        what.push(format!(
                            "tactic {} → {}",
                            x.tactic.as_deref().unwrap_or(""),
                            y.tactic.as_deref().unwrap_or("")
                        ));
                    }
                    changes.push(format!("{}: {}", short(&x.name), what.join("; ")));
                }
                let delta_ms = x
                    .timing
                    .as_ref()
                    .zip(y.timing.as_ref())
                    .map(|(p, q)| q.avg_ms - p.avg_ms);
                rows.push(AlignedRow {
                    a: Some(x.index),
                    b: Some(y.index),
                    method: *method,
                    precision_changed,
                    tactic_changed,
                    delta_ms,
                    evidence: al.evidence[i].take(),
                    reason: None,
                });
            }
            None => {
                let reason = unmatched_reason(sa, i, al.ambiguous_a[i].take(), sb.label);
                ambiguous_a += usize::from(reason.code == UnmatchedCode::Ambiguous);
                rows.push(unmatched_row(Some(x.index), None, reason));
            }
        }
    }
    let unmatched_a = match_a.iter().filter(|m| m.is_none()).count();
    let mut unmatched_b = 0;
    for j in 0..lb.len() {
        if al.b_to_a[j].is_none() {
            unmatched_b += 1;
            let reason = unmatched_reason(sb, j, al.ambiguous_b[j].take(), sa.label);
            ambiguous_b += usize::from(reason.code == UnmatchedCode::Ambiguous);
            rows.push(unmatched_row(None, Some(j as u32), reason));
        }
    }
    Pair {
        a: a.label.clone(),
        b: b.label.clone(),
        matched_by_name: counts[0],
        matched_by_origin: counts[1],
        matched_by_position: counts[2],
        matched_by_signature: counts[3],
        unmatched_a,
        unmatched_b,
        ambiguous_a,
        ambiguous_b,
        precision_changes,
        tactic_changes,
        changes,
        rows,
    }
}

/// The row of a layer of one build (`a` or `b`) that stayed unmatched.
fn unmatched_row(a: Option<u32>, b: Option<u32>, reason: Unmatched) -> AlignedRow {
    AlignedRow {
        a,
        b,
        method: Method::Unmatched,
        precision_changed: false,
        tactic_changed: false,
        delta_ms: None,
        evidence: None,
        reason: Some(reason),
    }
}

fn unmatched_reason(s: &Side, i: usize, ambiguous: Option<String>, other: &str) -> Unmatched {
    match ambiguous {
        Some(detail) => Unmatched {
            code: UnmatchedCode::Ambiguous,
            detail,
        },
        None => Unmatched {
            code: UnmatchedCode::NoCounterpart,
            detail: match s.kind[i] {
                Kind::Compute(f) => format!(
                    "no {} layer in `{other}` with this name, source nodes or place in the graph",
                    f.as_str()
                ),
                k => format!(
                    "no {} layer in `{other}` with this name or between the same aligned layers",
                    k.describe()
                ),
            },
        },
    }
}

/// A name for a sentence: at most 60 characters, control characters replaced.
fn short_plain(name: &str) -> String {
    clipped(name, 60)
}

/// A name in backticks: at most 80 characters, control characters replaced.
fn short(name: &str) -> String {
    format!("`{}`", clipped(name, 80))
}

/// The first `most` characters of `name` (with `…` when it had more), control characters replaced.
fn clipped(name: &str, most: usize) -> String {
    let mut s: String = name
        .chars()
        .take(most)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if name.chars().count() > most {
        s.push('…');
    }
    s
}
