//! Comparing several backends or builds of one model: totals, per-type deltas, and layer alignment
//! across builds whose layer names differ.
//!
//! Layers are aligned in three passes, each linear in the number of layers: identical names, then
//! shared source ONNX nodes (from Metadata or the fused name), then a signature of family and
//! output shape taken in order. Whatever is left is listed as unmatched.

use std::collections::{BTreeMap, VecDeque};

use foldhash::{HashMap, HashMapExt};
use serde::Serialize;

use crate::analysis::{Backend, LayerView, Mode};

#[derive(Debug, Clone, Serialize)]
pub struct TotalRow {
    pub label: String,
    pub analysis_mode: Mode,
    pub layer_count: usize,
    /// Σ averageMs, when the backend has a matching profile.
    pub average_inference_ms: Option<f64>,
    /// Against the baseline.
    pub delta_ms: Option<f64>,
    /// Baseline time divided by this backend's time (> 1: faster than the baseline).
    pub speedup: Option<f64>,
    /// Share of time (or of layers without a profile) per input precision.
    pub precision_mix: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub count: usize,
    pub avg_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    pub name: String,
    /// One cell per compared backend, in `backends` order.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Name,
    Origin,
    Signature,
    Unmatched,
}

#[derive(Debug, Clone, Serialize)]
pub struct AlignedRow {
    pub a: Option<u32>,
    pub b: Option<u32>,
    pub method: Method,
    pub precision_changed: bool,
    pub tactic_changed: bool,
    /// b's average minus a's, when both are profiled.
    pub delta_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub matched_by_name: usize,
    pub matched_by_origin: usize,
    pub matched_by_signature: usize,
    pub unmatched_a: usize,
    pub unmatched_b: usize,
    pub precision_changes: usize,
    pub tactic_changes: usize,
    /// Readable examples of what changed (first few).
    pub changes: Vec<String>,
    pub rows: Vec<AlignedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The model these backends are builds of, as far as their labels tell.
    pub model: Option<String>,
    pub baseline: String,
    pub backends: Vec<String>,
    pub totals: Vec<TotalRow>,
    pub by_type: Vec<TypeRow>,
    pub by_family: Vec<TypeRow>,
    /// The baseline aligned with each other backend.
    pub pairs: Vec<Pair>,
}

/// Groups usable backends by model and compares each group of two or more. With a known model
/// name every backend is a build of that model; otherwise the model is read from each label
/// (`resnet18-fp16` and `resnet18-int8` form one group, `mobilenet-qat` another).
pub fn compare_all(backends: &[Backend], model_name: Option<&str>) -> Vec<Comparison> {
    let usable: Vec<&Backend> = backends
        .iter()
        .filter(|b| b.passed() && !b.layers.is_empty())
        .collect();
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
        .map(|(model, members)| compare(model, &members))
        .collect()
}

/// Compares every backend of one group with the first one.
fn compare(model: Option<String>, usable: &[&Backend]) -> Comparison {
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
    let pairs = usable[1..].iter().map(|b| align(base, b)).collect();
    Comparison {
        model,
        baseline: base.label.clone(),
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

fn signature(l: &LayerView) -> (crate::classify::Family, Option<Vec<i64>>) {
    (l.family, l.outputs.first().and_then(|t| t.dims.clone()))
}

pub fn align(a: &Backend, b: &Backend) -> Pair {
    let (la, lb) = (&a.layers, &b.layers);
    let mut match_a: Vec<Option<(u32, Method)>> = vec![None; la.len()];
    let mut taken_b = vec![false; lb.len()];

    // 1. identical names, in order of occurrence
    let mut by_name: HashMap<&str, VecDeque<u32>> = HashMap::with_capacity(lb.len());
    for l in lb {
        by_name
            .entry(l.name.as_str())
            .or_default()
            .push_back(l.index);
    }
    for (i, l) in la.iter().enumerate() {
        if let Some(j) = by_name
            .get_mut(l.name.as_str())
            .and_then(VecDeque::pop_front)
        {
            match_a[i] = Some((j, Method::Name));
            taken_b[j as usize] = true;
        }
    }
    drop(by_name);

    // 2. shared source nodes
    let mut by_origin: HashMap<&str, Vec<u32>> = HashMap::new();
    for l in lb.iter().filter(|l| !taken_b[l.index as usize]) {
        for o in &l.origins {
            let v = by_origin.entry(o.as_str()).or_default();
            if v.len() < ORIGIN_FANOUT {
                v.push(l.index);
            }
        }
    }
    let mut scores: HashMap<u32, usize> = HashMap::new();
    for (i, l) in la.iter().enumerate() {
        if match_a[i].is_some() {
            continue;
        }
        scores.clear();
        for o in &l.origins {
            for j in by_origin.get(o.as_str()).into_iter().flatten() {
                if !taken_b[*j as usize] {
                    *scores.entry(*j).or_default() += 1;
                }
            }
        }
        if let Some((&j, _)) = scores.iter().max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0))) {
            match_a[i] = Some((j, Method::Origin));
            taken_b[j as usize] = true;
        }
    }
    drop(by_origin);

    // 3. same family and output shape, in order
    let mut by_sig: HashMap<_, VecDeque<u32>> = HashMap::new();
    for l in lb.iter().filter(|l| !taken_b[l.index as usize]) {
        by_sig.entry(signature(l)).or_default().push_back(l.index);
    }
    for (i, l) in la.iter().enumerate() {
        if match_a[i].is_some() {
            continue;
        }
        if let Some(j) = by_sig.get_mut(&signature(l)).and_then(VecDeque::pop_front) {
            match_a[i] = Some((j, Method::Signature));
            taken_b[j as usize] = true;
        }
    }

    let mut rows = Vec::with_capacity(la.len().max(lb.len()));
    let mut counts = [0usize; 3];
    let mut changes = Vec::new();
    let (mut precision_changes, mut tactic_changes) = (0, 0);
    for (i, m) in match_a.iter().enumerate() {
        let x = &la[i];
        match m {
            Some((j, method)) => {
                let y = &lb[*j as usize];
                counts[match method {
                    Method::Name => 0,
                    Method::Origin => 1,
                    _ => 2,
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
                });
            }
            None => rows.push(AlignedRow {
                a: Some(x.index),
                b: None,
                method: Method::Unmatched,
                precision_changed: false,
                tactic_changed: false,
                delta_ms: None,
            }),
        }
    }
    let unmatched_a = match_a.iter().filter(|m| m.is_none()).count();
    let mut unmatched_b = 0;
    for (j, taken) in taken_b.iter().enumerate() {
        if !taken {
            unmatched_b += 1;
            rows.push(AlignedRow {
                a: None,
                b: Some(j as u32),
                method: Method::Unmatched,
                precision_changed: false,
                tactic_changed: false,
                delta_ms: None,
            });
        }
    }
    Pair {
        a: a.label.clone(),
        b: b.label.clone(),
        matched_by_name: counts[0],
        matched_by_origin: counts[1],
        matched_by_signature: counts[2],
        unmatched_a,
        unmatched_b,
        precision_changes,
        tactic_changes,
        changes,
        rows,
    }
}

fn short(name: &str) -> String {
    let s: String = name
        .chars()
        .take(80)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if name.chars().count() > 80 {
        format!("`{s}…`")
    } else {
        format!("`{s}`")
    }
}
