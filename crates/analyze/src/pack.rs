//! The report app's compact form of a backend's layer records, written into `data.js` in place of
//! the list that `analysis.json` holds (app.js `unpackLayers` turns it back into that list).
//!
//! Per-layer records are nearly all of a report's data and mostly repeat themselves: the same keys
//! on every record, a few dozen types, families, precisions, tactics and formats, and every tensor
//! name twice (as one layer's output and the next one's input). Here the records become columns
//! (one array per field, so keys are written once) and every string becomes an index into one
//! string table, the most used strings first so that their indices are one or two digits:
//!
//! ```text
//! {"packed":1, "count":N, "strings":[…],
//!  "name":[i…], "raw_type":[i…], "type":[i…], "family":[i…],
//!  "family_from_name":"0010…"            (absent when no layer has it),
//!  "parameter_type" | "precision" | "output_precision" | "tactic": [i or -1 for null…],
//!  "stream" | "subgraph": [JSON value or null…]   (absent when every layer has none),
//!  "origins":[0 (= the name split at " + ") or [i…]…],
//!  "inputs" | "outputs": [[name i, dims i or -1, format i or -1, …]…]  (dims as "1,3,224,224"),
//!  "tags":[i of the tags joined by U+001F, or -1 for none…],
//!  "timed":"0110…", "time_ms" | "avg_ms" | "median_ms" | "percentage": [one number per timed layer],
//!  "index":[…]                              (absent when every index is the layer's position)}
//! ```
//!
//! Nothing is rounded or dropped: decoding gives back exactly the records of analysis.json (a
//! browser test compares the two).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use crate::analysis::{LayerTiming, LayerView};
use crate::read::{IntOrStr, Tensor};
use crate::write::{itoa, string};

type Result = std::io::Result<()>;

/// Separates the tags of one layer inside their string-table entry.
const TAG_SEPARATOR: &str = "\u{1f}";

/// Strings with first-seen ids and use counts.
#[derive(Default)]
struct Strings<'a> {
    ids: HashMap<Cow<'a, str>, u32>,
    list: Vec<Cow<'a, str>>,
    uses: Vec<u32>,
}

impl<'a> Strings<'a> {
    fn id(&mut self, s: Cow<'a, str>) -> u32 {
        let id = match self.ids.get(&s) {
            Some(id) => *id,
            None => {
                let id = self.list.len() as u32;
                self.ids.insert(s.clone(), id);
                self.list.push(s);
                self.uses.push(0);
                id
            }
        };
        self.uses[id as usize] += 1;
        id
    }

    fn opt(&mut self, s: Option<&'a str>) -> Option<u32> {
        s.map(|s| self.id(Cow::Borrowed(s)))
    }

    /// Final ids: the most used strings first (ties in order of first use), and the table in
    /// that order.
    fn ranked(self) -> (Vec<u32>, Vec<Cow<'a, str>>) {
        let mut order: Vec<u32> = (0..self.list.len() as u32).collect();
        order.sort_by_key(|&id| (std::cmp::Reverse(self.uses[id as usize]), id));
        let mut rank = vec![0u32; order.len()];
        for (r, &id) in order.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        let mut list: Vec<Option<Cow<'a, str>>> = self.list.into_iter().map(Some).collect();
        let table = order
            .iter()
            .map(|&id| list[id as usize].take().unwrap_or_default())
            .collect();
        (rank, table)
    }
}

/// One tensor: name, dimensions (or none), format (or none).
type TensorIds = [Option<u32>; 3];

/// The columns, with first-seen string ids.
#[derive(Default)]
struct Columns<'a> {
    name: Vec<u32>,
    raw_type: Vec<u32>,
    report_type: Vec<u32>,
    family: Vec<u32>,
    family_from_name: Vec<bool>,
    parameter_type: Vec<Option<u32>>,
    precision: Vec<Option<u32>>,
    output_precision: Vec<Option<u32>>,
    tactic: Vec<Option<u32>>,
    stream: Vec<Option<&'a IntOrStr>>,
    subgraph: Vec<Option<&'a IntOrStr>>,
    /// None: the name split at " + ".
    origins: Vec<Option<Vec<u32>>>,
    inputs: Vec<Vec<TensorIds>>,
    outputs: Vec<Vec<TensorIds>>,
    tags: Vec<Option<u32>>,
    timing: Vec<Option<&'a LayerTiming>>,
    index: Vec<u32>,
}

fn tensors<'a>(strings: &mut Strings<'a>, list: &'a [Tensor]) -> Vec<TensorIds> {
    list.iter()
        .map(|t| {
            let Tensor {
                name,
                dims,
                format,
                has_location: _,
            } = t;
            let dims = dims.as_ref().map(|d| {
                let text = d.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
                strings.id(Cow::Owned(text))
            });
            [
                Some(strings.id(Cow::Borrowed(name))),
                dims,
                strings.opt(format.as_deref()),
            ]
        })
        .collect()
}

fn columns<'a>(strings: &mut Strings<'a>, layers: &'a [LayerView]) -> Columns<'a> {
    let mut c = Columns::default();
    for l in layers {
        // Destructured so that a new field fails to compile here instead of going missing from
        // the report.
        let LayerView {
            index,
            name,
            raw_type,
            report_type,
            family,
            family_from_name,
            parameter_type,
            precision,
            output_precision,
            tactic,
            stream,
            subgraph,
            origins,
            inputs,
            outputs,
            tags,
            timing,
            raw: _,
            verbatim_ok: _,
            conv: _,
            weights: _,
            bias: _,
        } = l;
        c.index.push(*index);
        c.name.push(strings.id(Cow::Borrowed(name)));
        c.raw_type.push(strings.id(Cow::Borrowed(raw_type)));
        c.report_type.push(strings.id(Cow::Borrowed(report_type)));
        c.family.push(strings.id(Cow::Borrowed(family.as_str())));
        c.family_from_name.push(*family_from_name);
        c.parameter_type
            .push(strings.opt(parameter_type.as_deref()));
        c.precision.push(strings.opt(*precision));
        c.output_precision.push(strings.opt(*output_precision));
        c.tactic.push(strings.opt(tactic.as_deref()));
        c.stream.push(stream.as_ref());
        c.subgraph.push(subgraph.as_ref());
        let from_name = origins.iter().map(String::as_str).eq(name.split(" + "));
        c.origins.push((!from_name).then(|| {
            origins
                .iter()
                .map(|o| strings.id(Cow::Borrowed(o)))
                .collect()
        }));
        c.inputs.push(tensors(strings, inputs));
        c.outputs.push(tensors(strings, outputs));
        c.tags
            .push((!tags.is_empty()).then(|| strings.id(Cow::Owned(tags.join(TAG_SEPARATOR)))));
        c.timing.push(timing.as_ref());
    }
    c
}

/// Writes `layers` in the packed form described at the top of this module.
pub(crate) fn packed_layers<W: Write>(w: &mut W, layers: &[LayerView]) -> Result {
    let mut strings = Strings::default();
    let c = columns(&mut strings, layers);
    let (rank, table) = strings.ranked();
    let id = |w: &mut W, v: Option<u32>| -> Result {
        match v {
            Some(v) => w.write_all(itoa(u64::from(rank[v as usize]), &mut [0; 20])),
            None => w.write_all(b"-1"),
        }
    };

    w.write_all(b"{\"packed\":1,\"count\":")?;
    w.write_all(itoa(layers.len() as u64, &mut [0; 20]))?;
    w.write_all(b",\"strings\":[")?;
    for (i, s) in table.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        string(w, s)?;
    }
    w.write_all(b"]")?;
    for (key, column) in [
        ("name", &c.name),
        ("raw_type", &c.raw_type),
        ("type", &c.report_type),
        ("family", &c.family),
    ] {
        list(w, key, column, |w, v| id(w, Some(*v)))?;
    }
    if c.family_from_name.iter().any(|f| *f) {
        flags(w, "family_from_name", &c.family_from_name)?;
    }
    for (key, column) in [
        ("parameter_type", &c.parameter_type),
        ("precision", &c.precision),
        ("output_precision", &c.output_precision),
        ("tactic", &c.tactic),
    ] {
        list(w, key, column, |w, v| id(w, *v))?;
    }
    for (key, column) in [("stream", &c.stream), ("subgraph", &c.subgraph)] {
        if column.iter().any(Option::is_some) {
            list(w, key, column, |w, v| {
                Ok(serde_json::to_writer(&mut *w, v)?)
            })?;
        }
    }
    list(w, "origins", &c.origins, |w, v| match v {
        None => w.write_all(b"0"),
        Some(ids) => {
            w.write_all(b"[")?;
            for (i, v) in ids.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                id(w, Some(*v))?;
            }
            w.write_all(b"]")
        }
    })?;
    for (key, column) in [("inputs", &c.inputs), ("outputs", &c.outputs)] {
        list(w, key, column, |w, ts| {
            w.write_all(b"[")?;
            for (i, v) in ts.iter().flatten().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                id(w, *v)?;
            }
            w.write_all(b"]")
        })?;
    }
    list(w, "tags", &c.tags, |w, v| id(w, *v))?;
    let timed: Vec<bool> = c.timing.iter().map(Option::is_some).collect();
    flags(w, "timed", &timed)?;
    let timings: Vec<&LayerTiming> = c.timing.iter().flatten().copied().collect();
    // Numbers through serde_json, as in analysis.json (null for NaN or infinity).
    list(w, "time_ms", &timings, |w, t| {
        Ok(serde_json::to_writer(&mut *w, &t.time_ms)?)
    })?;
    list(w, "avg_ms", &timings, |w, t| {
        Ok(serde_json::to_writer(&mut *w, &t.avg_ms)?)
    })?;
    list(w, "median_ms", &timings, |w, t| {
        Ok(serde_json::to_writer(&mut *w, &t.median_ms)?)
    })?;
    list(w, "percentage", &timings, |w, t| {
        Ok(serde_json::to_writer(&mut *w, &t.percentage)?)
    })?;
    if c.index
        .iter()
        .enumerate()
        .any(|(i, v)| i as u64 != u64::from(*v))
    {
        list(w, "index", &c.index, |w, v| {
            w.write_all(itoa(u64::from(*v), &mut [0; 20]))
        })?;
    }
    w.write_all(b"}")
}

/// `,"key":[item,item,…]`.
fn list<W: Write, T>(
    w: &mut W,
    key: &str,
    items: &[T],
    mut item: impl FnMut(&mut W, &T) -> Result,
) -> Result {
    w.write_all(b",")?;
    string(w, key)?;
    w.write_all(b":[")?;
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        item(w, v)?;
    }
    w.write_all(b"]")
}

/// `,"key":"0110…"`: one character per layer.
fn flags<W: Write>(w: &mut W, key: &str, set: &[bool]) -> Result {
    w.write_all(b",")?;
    string(w, key)?;
    w.write_all(b":\"")?;
    let text: Vec<u8> = set.iter().map(|f| if *f { b'1' } else { b'0' }).collect();
    w.write_all(&text)?;
    w.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_ranked_by_use_then_first_use() {
        let mut s = Strings::default();
        let a = s.id(Cow::Borrowed("rare"));
        let b = s.id(Cow::Borrowed("common"));
        s.id(Cow::Borrowed("common"));
        let c = s.id(Cow::Borrowed("also rare"));
        let (rank, table) = s.ranked();
        assert_eq!(table, ["common", "rare", "also rare"]);
        assert_eq!(
            [rank[a as usize], rank[b as usize], rank[c as usize]],
            [1, 0, 2]
        );
    }
}
