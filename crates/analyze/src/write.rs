//! `analysis.json` writer: the same bytes as `serde_json::to_writer(w, &analysis)` (a test holds
//! the two together on every fixture), with the per-layer records, nearly all of the output,
//! written by hand: keys as literals and strings copied whole when they need no escaping, where
//! serde_json escapes every key and string byte by byte. On a 14,400-layer export this is about
//! half the cost of the output.

use std::io::Write;

use serde::Serialize;

use crate::analysis::{Analysis, Backend, LayerTiming, LayerView};
use crate::read::{IntOrStr, Tensor};

type Result = std::io::Result<()>;

pub(crate) fn analysis<W: Write>(w: &mut W, a: &Analysis) -> serde_json::Result<()> {
    write_analysis(w, a, &|w, layers| {
        w.write_all(b"[")?;
        layer_list(w, layers)?;
        w.write_all(b"]")
    })
    .map_err(serde_json::Error::io)
}

/// Writes the analysis with each backend's `layers` value written by `layers`: the list of records
/// (analysis.json) or the report app's packed form (data.js, see pack.rs). Everything else is
/// written the same way for both, so a field added to the analysis reaches both files.
pub(crate) fn write_analysis<W: Write, F: Fn(&mut W, &[LayerView]) -> Result>(
    w: &mut W,
    a: &Analysis,
    layers: &F,
) -> Result {
    let Analysis {
        schema,
        generator,
        input,
        model,
        validation,
        backends,
        comparisons,
    } = a;
    w.write_all(b"{")?;
    field(w, "schema", schema)?;
    more(w, "generator", generator)?;
    more(w, "input", input)?;
    more(w, "model", model)?;
    more(w, "validation", validation)?;
    w.write_all(b",\"backends\":[")?;
    for (i, b) in backends.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        backend(w, b, layers)?;
    }
    w.write_all(b"]")?;
    more(w, "comparisons", comparisons)?;
    w.write_all(b"}")?;
    Ok(())
}

fn backend<W: Write, F: Fn(&mut W, &[LayerView]) -> Result>(
    w: &mut W,
    b: &Backend,
    write_layers: &F,
) -> Result {
    // Destructured so that a new field fails to compile here instead of going missing.
    let Backend {
        label,
        runtime,
        sources,
        validation,
        export,
        layer_count,
        profile_count,
        count,
        count_source,
        timing,
        end_to_end,
        model,
        engines,
        layers,
        graph,
        breakdowns,
        memory,
        hot_layers,
        findings,
        source: _,
    } = b;
    w.write_all(b"{")?;
    field(w, "label", label)?;
    more(w, "runtime", runtime)?;
    more(w, "sources", sources)?;
    more(w, "validation", validation)?;
    more(w, "export", export)?;
    more(w, "layer_count", layer_count)?;
    more(w, "profile_count", profile_count)?;
    more(w, "count", count)?;
    more(w, "count_source", count_source)?;
    more(w, "timing", timing)?;
    more(w, "end_to_end", end_to_end)?;
    more(w, "model", model)?;
    more(w, "engines", engines)?;
    w.write_all(b",\"layers\":")?;
    write_layers(w, layers)?;
    more(w, "graph", graph)?;
    more(w, "breakdowns", breakdowns)?;
    more(w, "memory", memory)?;
    more(w, "hot_layers", hot_layers)?;
    more(w, "findings", findings)?;
    w.write_all(b"}")?;
    Ok(())
}

/// The layer records, comma-separated. Large lists are written on two threads in alternating
/// segments: a helper renders every second segment into a buffer while this thread writes the
/// others straight to `w`, then copies the helper's buffer in order. A bounded channel keeps at
/// most two buffers alive, so memory stays small however large the list.
fn layer_list<W: Write>(w: &mut W, layers: &[LayerView]) -> Result {
    fn run<W: Write>(w: &mut W, layers: &[LayerView], first: bool) -> Result {
        for (i, l) in layers.iter().enumerate() {
            if i > 0 || !first {
                w.write_all(b",")?;
            }
            layer(w, l)?;
        }
        Ok(())
    }
    if layers.len() < crate::PARALLEL_LAYERS {
        return run(w, layers, true);
    }
    let segments: Vec<&[LayerView]> = layers.chunks(SEGMENT_LAYERS).collect();
    std::thread::scope(|s| {
        let (send, receive) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let odd = &segments;
        s.spawn(move || {
            for segment in odd.iter().skip(1).step_by(2) {
                let mut buf = Vec::with_capacity(segment.len() * 1024);
                // Writing into a Vec cannot fail; a closed channel means the writer gave up.
                if run(&mut buf, segment, false).is_err() || send.send(buf).is_err() {
                    return;
                }
            }
        });
        for (i, segment) in segments.iter().enumerate() {
            if i % 2 == 0 {
                run(w, segment, i == 0)?;
            } else {
                let buf = receive
                    .recv()
                    .map_err(|_| std::io::Error::other("the layer writer thread stopped"))?;
                w.write_all(&buf)?;
            }
        }
        Ok(())
    })
}

/// Layers per segment of [`layer_list`] (about 0.4 MB of JSON).
const SEGMENT_LAYERS: usize = 512;

fn layer<W: Write>(w: &mut W, l: &LayerView) -> Result {
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
    w.write_all(b"{\"index\":")?;
    w.write_all(itoa(u64::from(*index), &mut [0; 20]))?;
    w.write_all(b",\"name\":")?;
    string(w, name)?;
    w.write_all(b",\"raw_type\":")?;
    string(w, raw_type)?;
    w.write_all(b",\"type\":")?;
    string(w, report_type)?;
    w.write_all(b",\"family\":")?;
    string(w, family.as_str())?;
    w.write_all(if *family_from_name {
        b",\"family_from_name\":true,\"parameter_type\":"
    } else {
        b",\"family_from_name\":false,\"parameter_type\":"
    })?;
    opt_string(w, parameter_type.as_deref())?;
    w.write_all(b",\"precision\":")?;
    opt_string(w, *precision)?;
    w.write_all(b",\"output_precision\":")?;
    opt_string(w, *output_precision)?;
    w.write_all(b",\"tactic\":")?;
    opt_string(w, tactic.as_deref())?;
    w.write_all(b",\"stream\":")?;
    match stream {
        None => w.write_all(b"null")?,
        Some(IntOrStr::Int(v)) => serde_json::to_writer(&mut *w, v)?,
        Some(IntOrStr::Str(v)) => string(w, v)?,
    }
    if subgraph.is_some() {
        more(w, "subgraph", subgraph)?;
    }
    w.write_all(b",\"origins\":")?;
    strings(w, origins.iter().map(String::as_str))?;
    w.write_all(b",\"inputs\":")?;
    tensors(w, inputs)?;
    w.write_all(b",\"outputs\":")?;
    tensors(w, outputs)?;
    w.write_all(b",\"tags\":")?;
    strings(w, tags.iter().copied())?;
    w.write_all(b",\"timing\":")?;
    match timing {
        None => w.write_all(b"null")?,
        Some(LayerTiming {
            time_ms,
            avg_ms,
            median_ms,
            percentage,
        }) => {
            // Numbers through serde_json: its float format (and null for NaN or infinity).
            w.write_all(b"{\"time_ms\":")?;
            serde_json::to_writer(&mut *w, time_ms)?;
            w.write_all(b",\"avg_ms\":")?;
            serde_json::to_writer(&mut *w, avg_ms)?;
            w.write_all(b",\"median_ms\":")?;
            serde_json::to_writer(&mut *w, median_ms)?;
            w.write_all(b",\"percentage\":")?;
            serde_json::to_writer(&mut *w, percentage)?;
            w.write_all(b"}")?;
        }
    }
    w.write_all(b"}")?;
    Ok(())
}

fn tensors<W: Write>(w: &mut W, list: &[Tensor]) -> Result {
    w.write_all(b"[")?;
    for (i, t) in list.iter().enumerate() {
        let Tensor {
            name,
            dims,
            format,
            has_location: _,
        } = t;
        w.write_all(if i > 0 { b",{\"name\":" } else { b"{\"name\":" })?;
        string(w, name)?;
        w.write_all(b",\"dims\":")?;
        match dims {
            None => w.write_all(b"null")?,
            Some(dims) => {
                w.write_all(b"[")?;
                for (j, d) in dims.iter().enumerate() {
                    if j > 0 {
                        w.write_all(b",")?;
                    }
                    if *d < 0 {
                        w.write_all(b"-")?;
                    }
                    w.write_all(itoa(d.unsigned_abs(), &mut [0; 20]))?;
                }
                w.write_all(b"]")?;
            }
        }
        w.write_all(b",\"format\":")?;
        opt_string(w, format.as_deref())?;
        w.write_all(b"}")?;
    }
    w.write_all(b"]")?;
    Ok(())
}

/// `,"key":value` through serde_json.
fn more<W: Write, T: Serialize + ?Sized>(w: &mut W, key: &str, value: &T) -> Result {
    w.write_all(b",")?;
    field(w, key, value)
}

/// `"key":value` through serde_json.
fn field<W: Write, T: Serialize + ?Sized>(w: &mut W, key: &str, value: &T) -> Result {
    string(w, key)?;
    w.write_all(b":")?;
    Ok(serde_json::to_writer(&mut *w, value)?)
}

fn strings<'a, W: Write>(w: &mut W, list: impl Iterator<Item = &'a str>) -> Result {
    w.write_all(b"[")?;
    for (i, s) in list.enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        string(w, s)?;
    }
    w.write_all(b"]")?;
    Ok(())
}

fn opt_string<W: Write>(w: &mut W, s: Option<&str>) -> Result {
    match s {
        Some(s) => string(w, s),
        None => w.write_all(b"null"),
    }
}

/// A JSON string: copied whole when nothing in it needs escaping, else escaped by serde_json.
pub(crate) fn string<W: Write>(w: &mut W, s: &str) -> Result {
    if needs_escape(s.as_bytes()) {
        return Ok(serde_json::to_writer(&mut *w, s)?);
    }
    w.write_all(b"\"")?;
    w.write_all(s.as_bytes())?;
    w.write_all(b"\"")?;
    Ok(())
}

/// Whether `s` holds a quote, a backslash or a control character (below 0x20), eight bytes at a
/// time. Each test below is exact as a yes/no answer (bytes above a real match may be flagged
/// falsely, which does not change the answer).
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let test = |word: [u8; 8]| {
        let x = u64::from_le_bytes(word);
        below(x, 0x20)
            | below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1)
            != 0
    };
    let mut chunks = s.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if test(word) {
            return true;
        }
    }
    // The tail, padded with a byte that needs no escaping.
    let tail = chunks.remainder();
    let mut word = [b'a'; 8];
    word[..tail.len()].copy_from_slice(tail);
    test(word)
}

/// Decimal digits of `v` in `buf`.
pub(crate) fn itoa(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

impl Analysis {
    /// Writes the analysis as JSON (`trtmc.analysis/v1`).
    pub fn write_json<W: std::io::Write>(&self, mut w: W) -> serde_json::Result<()> {
        // Byte for byte what `serde_json::to_writer(w, self)` writes, faster (see write.rs).
        crate::write::analysis(&mut w, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_escape_matches_a_plain_test() {
        let plain = |s: &[u8]| s.iter().any(|c| *c < 0x20 || *c == b'"' || *c == b'\\');
        for c in 0u8..=255 {
            for at in 0..19 {
                let mut s = vec![b'a'; 19];
                s[at] = c;
                assert_eq!(needs_escape(&s), plain(&s), "byte {c:#x} at {at}");
                // The byte next to a match must not hide or fake one.
                s[(at + 1) % 19] = b'"';
                assert_eq!(
                    needs_escape(&s),
                    plain(&s),
                    "byte {c:#x} at {at} near a quote"
                );
            }
        }
    }

    #[test]
    fn numbers_and_strings_match_serde_json() {
        for v in [0u64, 7, 10, 99, 1234567890, u64::MAX] {
            assert_eq!(itoa(v, &mut [0; 20]), v.to_string().as_bytes());
        }
        for s in [
            "",
            "plain",
            "quote \" inside",
            "back\\slash",
            "ctl \u{1}\u{1f}",
            "é ∑ 😀",
        ] {
            let mut ours = Vec::new();
            string(&mut ours, s).expect("writes");
            assert_eq!(ours, serde_json::to_vec(s).expect("serializes"), "{s:?}");
        }
    }
}
