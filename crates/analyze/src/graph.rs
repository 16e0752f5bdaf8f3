//! The layer graph: edges from tensor writers to readers, DAG check, cycle members.
//!
//! Edges are resolved in file (execution) order with per-tensor "generations": a reader depends on
//! the writers of the tensor's current generation. Several writers before any read are partial
//! writes into one buffer (concat slices, Myelin outputs); a write after a read starts a new
//! generation (buffer reuse). Neither makes a real engine ambiguous, so both are reported as
//! evidence, not errors. Everything is linear in the number of tensor references.

use foldhash::{HashMap, HashMapExt};

use crate::read::Layer;

/// How a tensor came to have several writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WritePattern {
    /// Several layers wrote it before anyone read it (slices of one buffer).
    PartialWrites,
    /// It was written again after being read (the buffer was reused).
    Rewritten,
    /// Both of the above.
    Both,
}

/// A tensor written by more than one layer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MultiWriter {
    /// The tensor's name.
    pub tensor: String,
    /// Writer layer indices, in order.
    pub writers: Vec<u32>,
    /// Whether the writes were partial, a reuse, or both.
    pub pattern: WritePattern,
    /// How many layer inputs read it.
    pub reads: usize,
}

/// A layer that reads a tensor before any layer writes it (the file is not in execution order).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BackReference {
    /// The tensor's name.
    pub tensor: String,
    /// Index of the layer that reads it early.
    pub reader: u32,
    /// Index of its first writer, which comes later in the file (the edge `writer → reader` is kept).
    pub writer: u32,
}

/// The data-flow graph of one backend's layers, built by [`build`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Graph {
    /// `(from, to)` layer indices, sorted and without duplicates.
    pub edges: Vec<(u32, u32)>,
    /// Tensors read but never written (engine inputs, constants, Myelin internals).
    pub external_inputs: Vec<String>,
    /// Tensors written but never read.
    pub graph_outputs: Vec<String>,
    /// Tensors with several writers, ordered by first writer (evidence, not an error).
    pub multi_writers: Vec<MultiWriter>,
    /// Reads that come before the tensor's first write in the file.
    pub back_references: Vec<BackReference>,
    /// Whether the edges form no cycle; a cycle fails the backend's validation.
    pub is_dag: bool,
    /// Strongly connected groups of layers (each a cycle), when the graph is not a DAG.
    pub cycles: Vec<Vec<u32>>,
}

/// Layer indices that wrote a tensor; one writer (the usual case) needs no allocation.
#[derive(Default, Clone)]
enum Writers {
    #[default]
    None,
    One(u32),
    Many(Vec<u32>),
}

impl Writers {
    fn push(&mut self, w: u32) {
        *self = match std::mem::take(self) {
            Writers::None => Writers::One(w),
            Writers::One(a) => Writers::Many(vec![a, w]),
            Writers::Many(mut v) => {
                v.push(w);
                Writers::Many(v)
            }
        };
    }
    fn as_slice(&self) -> &[u32] {
        match self {
            Writers::None => &[],
            Writers::One(w) => std::slice::from_ref(w),
            Writers::Many(v) => v,
        }
    }
}

#[derive(Default)]
struct TensorState {
    current: Writers,
    all: Writers,
    read_since_write: bool,
    partial: bool,
    rewritten: bool,
    reads: usize,
}

/// The graph of `layers`, in file (execution) order; linear in the number of tensor references.
pub fn build(layers: &[Layer]) -> Graph {
    let mut state: HashMap<&str, TensorState> = HashMap::with_capacity(layers.len() * 2);
    let mut early_reads: HashMap<&str, Vec<u32>> = HashMap::new();
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(layers.len() * 2);
    let mut preds: Vec<u32> = Vec::new();

    for (j, layer) in layers.iter().enumerate() {
        let j = j as u32;
        preds.clear();
        for t in layer.inputs.iter().filter(|t| !t.name.is_empty()) {
            match state.get_mut(t.name.as_str()) {
                Some(s) if !s.current.as_slice().is_empty() => {
                    preds.extend(s.current.as_slice().iter().copied().filter(|w| *w != j));
                    s.read_since_write = true;
                    s.reads += 1;
                }
                _ => early_reads.entry(t.name.as_str()).or_default().push(j),
            }
        }
        for t in layer.outputs.iter().filter(|t| !t.name.is_empty()) {
            let s = state.entry(t.name.as_str()).or_default();
            if s.current.as_slice().is_empty() {
                s.current = Writers::One(j);
            } else if s.read_since_write {
                s.rewritten = true;
                s.current = Writers::One(j);
            } else if !s.current.as_slice().contains(&j) {
                s.partial = true;
                s.current.push(j);
            }
            s.read_since_write = false;
            if s.all.as_slice().last() != Some(&j) {
                s.all.push(j);
            }
        }
        preds.sort_unstable();
        preds.dedup();
        edges.extend(preds.iter().map(|p| (*p, j)));
    }

    let mut external_inputs = Vec::new();
    let mut back_references = Vec::new();
    for (name, readers) in early_reads {
        match state
            .get_mut(name)
            .and_then(|s| s.all.as_slice().first().copied().map(|w| (w, s)))
        {
            Some((writer, s)) => {
                let mut from_outside = false;
                for reader in readers {
                    if reader == writer {
                        // In-place update of a tensor nobody wrote before: it enters from outside.
                        from_outside = true;
                        continue;
                    }
                    s.reads += 1;
                    edges.push((writer, reader));
                    back_references.push(BackReference {
                        tensor: name.to_owned(),
                        reader,
                        writer,
                    });
                }
                if from_outside {
                    external_inputs.push(name.to_owned());
                }
            }
            None => external_inputs.push(name.to_owned()),
        }
    }
    edges.sort_unstable();
    edges.dedup();
    external_inputs.sort();
    back_references.sort_by(|a, b| (a.reader, &a.tensor).cmp(&(b.reader, &b.tensor)));

    let mut graph_outputs = Vec::new();
    let mut multi_writers = Vec::new();
    for (name, s) in &state {
        if s.reads == 0 {
            graph_outputs.push((*name).to_owned());
        }
        if s.all.as_slice().len() > 1 {
            let pattern = match (s.partial, s.rewritten) {
                (true, true) => WritePattern::Both,
                (false, true) => WritePattern::Rewritten,
                _ => WritePattern::PartialWrites,
            };
            multi_writers.push(MultiWriter {
                tensor: (*name).to_owned(),
                writers: s.all.as_slice().to_vec(),
                pattern,
                reads: s.reads,
            });
        }
    }
    graph_outputs.sort();
    multi_writers.sort_by(|a, b| (a.writers[0], &a.tensor).cmp(&(b.writers[0], &b.tensor)));

    let cycles = find_cycles(layers.len(), &edges);
    Graph {
        edges,
        external_inputs,
        graph_outputs,
        multi_writers,
        back_references,
        is_dag: cycles.is_empty(),
        cycles,
    }
}

/// Kahn's algorithm; when nodes remain, their strongly connected components of size > 1 (or with
/// a self edge) are the cycles.
fn find_cycles(n: usize, edges: &[(u32, u32)]) -> Vec<Vec<u32>> {
    let (offsets, targets) = adjacency(n, edges);
    let mut indegree = vec![0u32; n];
    for &(_, to) in edges {
        indegree[to as usize] += 1;
    }
    let mut queue: Vec<u32> = (0..n as u32)
        .filter(|v| indegree[*v as usize] == 0)
        .collect();
    let mut visited = 0usize;
    while let Some(v) = queue.pop() {
        visited += 1;
        for &w in &targets[offsets[v as usize]..offsets[v as usize + 1]] {
            indegree[w as usize] -= 1;
            if indegree[w as usize] == 0 {
                queue.push(w);
            }
        }
    }
    if visited == n {
        return Vec::new();
    }
    let remaining: Vec<bool> = indegree.iter().map(|d| *d > 0).collect();
    strongly_connected(n, &offsets, &targets, &remaining)
        .into_iter()
        .filter(|c| c.len() > 1 || edges.binary_search(&(c[0], c[0])).is_ok())
        .collect()
}

fn adjacency(n: usize, edges: &[(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
    let mut offsets = vec![0usize; n + 1];
    for &(from, _) in edges {
        offsets[from as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0u32; edges.len()];
    for &(from, to) in edges {
        targets[fill[from as usize]] = to;
        fill[from as usize] += 1;
    }
    (offsets, targets)
}

/// Iterative Tarjan over the nodes marked in `only`.
fn strongly_connected(
    n: usize,
    offsets: &[usize],
    targets: &[u32],
    only: &[bool],
) -> Vec<Vec<u32>> {
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut next = 0u32;
    let mut out = Vec::new();
    for root in 0..n as u32 {
        if !only[root as usize] || index[root as usize] != UNSEEN {
            continue;
        }
        // (node, position in its edge list)
        let mut call: Vec<(u32, usize)> = vec![(root, offsets[root as usize])];
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(top) = call.last_mut() {
            let v = top.0;
            if top.1 < offsets[v as usize + 1] {
                let w = targets[top.1];
                top.1 += 1;
                if !only[w as usize] {
                    continue;
                }
                if index[w as usize] == UNSEEN {
                    index[w as usize] = next;
                    low[w as usize] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    call.push((w, offsets[w as usize]));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent as usize] = low[parent as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w as usize] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    component.sort_unstable();
                    out.push(component);
                }
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Tensor;

    fn t(name: &str) -> Tensor {
        Tensor {
            name: name.to_owned(),
            ..Tensor::default()
        }
    }

    fn l(name: &str, ins: &[&str], outs: &[&str]) -> Layer {
        Layer {
            name: name.to_owned(),
            inputs: ins.iter().map(|n| t(n)).collect(),
            outputs: outs.iter().map(|n| t(n)).collect(),
            ..Layer::default()
        }
    }

    #[test]
    fn chain_with_inputs_and_outputs() {
        let g = build(&[l("a", &["x"], &["y"]), l("b", &["y", "w"], &["z"])]);
        assert_eq!(g.edges, vec![(0, 1)]);
        assert_eq!(g.external_inputs, ["w", "x"]);
        assert_eq!(g.graph_outputs, ["z"]);
        assert!(g.is_dag && g.multi_writers.is_empty());
    }

    #[test]
    fn partial_writes_feed_every_writer_into_the_reader() {
        // ControlNet: PWN(/Sin) and PWN(/Cos) both write /Concat_output_0.
        let g = build(&[
            l("sin", &["t"], &["c"]),
            l("cos", &["t"], &["c"]),
            l("use", &["c"], &["o"]),
        ]);
        assert_eq!(g.edges, vec![(0, 2), (1, 2)]);
        assert_eq!(g.multi_writers[0].pattern, WritePattern::PartialWrites);
        assert_eq!(g.multi_writers[0].writers, [0, 1]);
        assert!(g.is_dag);
    }

    #[test]
    fn rewritten_buffers_start_a_new_generation() {
        let g = build(&[
            l("a", &["x"], &["buf"]),
            l("b", &["buf"], &["y"]),
            l("c", &["y"], &["buf"]),
            l("d", &["buf"], &["z"]),
        ]);
        assert!(g.edges.contains(&(2, 3)) && !g.edges.contains(&(0, 3)));
        assert_eq!(g.multi_writers[0].pattern, WritePattern::Rewritten);
    }

    #[test]
    fn out_of_order_files_can_form_cycles_and_are_named() {
        // b reads q (written later by c); c reads p (written by b): b -> c -> b.
        let g = build(&[
            l("a", &["x"], &["p0"]),
            l("b", &["q"], &["p"]),
            l("c", &["p"], &["q"]),
        ]);
        assert!(!g.is_dag);
        assert_eq!(g.cycles, vec![vec![1, 2]]);
        assert_eq!(g.back_references.len(), 1);
    }

    #[test]
    fn in_place_on_an_input_is_not_a_self_loop() {
        let g = build(&[l("a", &["x"], &["x"]), l("b", &["x"], &["y"])]);
        assert!(g.is_dag);
        assert_eq!(g.edges, vec![(0, 1)]);
        assert_eq!(g.external_inputs, ["x"]);
    }

    #[test]
    fn large_chains_are_linear() {
        let names: Vec<String> = (0..20_001).map(|i| format!("t{i}")).collect();
        let layers: Vec<Layer> = (0..20_000)
            .map(|i| l("x", &[&names[i]], &[&names[i + 1]]))
            .collect();
        let g = build(&layers);
        assert_eq!(g.edges.len(), 19_999);
        assert!(g.is_dag);
    }
}
