//! Fast first pass over a layer-info document: finds where each layer record starts and ends by
//! counting brackets outside strings (strings skipped eight bytes at a time), without building
//! anything.
//!
//! serde_json's own skipping (`RawValue`) costs about as much as the typed parse of the records
//! and runs before the records can be split between threads, so on a 14,000-layer export it was
//! the largest serial step. The scanner leaves the syntax of each record to the typed parse that
//! follows; it returns `None` on anything it does not expect (escaped keys, duplicate `Layers`,
//! deep nesting, records that are neither objects nor strings, stray bytes), and the caller then
//! reads the document with serde_json, which also produces the error message for invalid JSON.

use serde::de::IgnoredAny;

use super::RootShape;

/// The records' text spans, in order.
pub(super) type Spans<'a> = Vec<&'a str>;

/// Nesting beyond this goes to serde_json (whose limit is 128 for the whole document).
const MAX_DEPTH: usize = 100;

/// Top-level `schema` and `runtime` values (raw JSON), which trtmc's own exports carry.
pub(super) type Producer<'a> = [Option<&'a str>; 2];

/// The document's shape, its layer records, its `Bindings` value and its [`Producer`] values, or
/// `None` to use serde_json.
pub(super) fn split(text: &str) -> Option<(RootShape, Spans<'_>, Option<&str>, Producer<'_>)> {
    let b = text.as_bytes();
    let p = skip_ws(b, 0);
    match b.get(p)? {
        b'{' => {
            let mut layers = None;
            let mut bindings = None;
            let mut producer: Producer = [None, None];
            let mut p = skip_ws(b, p + 1);
            loop {
                if b.get(p) != Some(&b'"') {
                    return None;
                }
                let end = string_end(b, p)?;
                let key = &text[p + 1..end - 1];
                // Keys are the only text no parser sees again: escapes and control characters
                // (invalid in JSON strings) go to serde_json.
                if key.bytes().any(|c| c == b'\\' || c < 0x20) {
                    return None;
                }
                p = skip_ws(b, end);
                if b.get(p) != Some(&b':') {
                    return None;
                }
                p = skip_ws(b, p + 1);
                if key == "Layers" {
                    if layers.is_some() {
                        return None;
                    }
                    let (records, next) = list(text, p)?;
                    layers = Some(records);
                    p = next;
                } else {
                    let end = value_end(b, p)?;
                    let value = &text[p..end];
                    // Values other than the records are small; serde_json checks their syntax.
                    serde_json::from_str::<IgnoredAny>(value).ok()?;
                    // TensorRT 11 names the I/O list `I/O Tensors`.
                    if key == "Bindings" || key == "I/O Tensors" {
                        if bindings.is_some() {
                            return None;
                        }
                        bindings = Some(value);
                    }
                    match key {
                        "schema" => producer[0] = Some(value),
                        "runtime" => producer[1] = Some(value),
                        _ => {}
                    }
                    p = end;
                }
                p = skip_ws(b, p);
                match b.get(p)? {
                    b',' => p = skip_ws(b, p + 1),
                    b'}' => {
                        p += 1;
                        break;
                    }
                    _ => return None,
                }
            }
            (skip_ws(b, p) == b.len()).then_some((RootShape::Object, layers?, bindings, producer))
        }
        b'[' => {
            let (records, next) = list(text, p)?;
            (skip_ws(b, next) == b.len()).then_some((RootShape::List, records, None, [None, None]))
        }
        _ => None,
    }
}

/// The elements of the list starting at `p` (objects or strings only) and the offset after it.
fn list(text: &str, p: usize) -> Option<(Spans<'_>, usize)> {
    let b = text.as_bytes();
    if b.get(p) != Some(&b'[') {
        return None;
    }
    let mut records = Vec::with_capacity(text.len() / 512 + 16);
    let mut p = skip_ws(b, p + 1);
    if b.get(p) == Some(&b']') {
        return Some((records, p + 1));
    }
    loop {
        if !matches!(b.get(p)?, b'{' | b'"') {
            return None;
        }
        let end = value_end(b, p)?;
        records.push(&text[p..end]);
        p = skip_ws(b, end);
        match b.get(p)? {
            b',' => p = skip_ws(b, p + 1),
            b']' => return Some((records, p + 1)),
            _ => return None,
        }
    }
}

/// JSON whitespace only (not form feed, which `is_ascii_whitespace` accepts).
fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(p) {
        p += 1;
    }
    p
}

/// The offset after the string starting at `p` (a quote).
fn string_end(b: &[u8], p: usize) -> Option<usize> {
    let mut i = p + 1;
    loop {
        i = quote_or_backslash(b, i)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        // A backslash escapes the next byte; `\uXXXX` needs no special case here.
        i += 2;
    }
}

/// The first quote or backslash at or after `i`, eight bytes at a time: most strings in an export are
/// short keys and names, where a memchr call costs more than it saves.
fn quote_or_backslash(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `zero(x)` is set where `x` has a zero byte (exact up to
    // the first one, which is all that is used).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let hit = zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\')));
        if hit != 0 {
            return Some(i + hit.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    let at = b.get(i..)?.iter().position(|c| matches!(c, b'"' | b'\\'))?;
    Some(i + at)
}

/// The offset after the value starting at `p`. Scalars end at the next delimiter; their syntax
/// is checked by whoever parses the span.
fn value_end(b: &[u8], p: usize) -> Option<usize> {
    match b.get(p)? {
        b'"' => string_end(b, p),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = p;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return None;
                        }
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let rest = &b[p..];
            let len = rest
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            (len > 0).then_some(p + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_records_in_both_shapes() {
        let (root, spans, bindings, producer) = split(
            r#" {"Layers": [{"a": "}]\"x"}, "n" ,{"b":[1,{"c":2}]}], "Bindings": ["x"], "runtime": "tract"} "#,
        )
        .expect("scans");
        assert_eq!(producer, [None, Some(r#""tract""#)]);
        assert_eq!(root, RootShape::Object);
        assert_eq!(
            spans,
            [r#"{"a": "}]\"x"}"#, r#""n""#, r#"{"b":[1,{"c":2}]}"#]
        );
        assert_eq!(bindings, Some(r#"["x"]"#));
        let (root, spans, _, _) = split("[]").expect("scans");
        assert_eq!((root, spans.len()), (RootShape::List, 0));
    }

    #[test]
    fn finds_quotes_and_backslashes_like_a_plain_search() {
        let text = "abcdefgh\\ijklmnopqrstuvw\"xyz0123456789\"";
        let b = text.as_bytes();
        for start in 0..b.len() {
            let plain = b[start..]
                .iter()
                .position(|c| *c == b'"' || *c == b'\\')
                .map(|at| start + at);
            assert_eq!(quote_or_backslash(b, start), plain, "from {start}");
        }
        // Bytes just above and below the targets are not matches.
        let near = [b'"' - 1, b'"' + 1, b'\\' - 1, b'\\' + 1, 0x80, 0xff, 0, 1];
        assert_eq!(quote_or_backslash(&near, 0), None);
        assert_eq!(
            quote_or_backslash(&[near.as_slice(), b"\""].concat(), 0),
            Some(8)
        );
    }

    #[test]
    fn leaves_anything_unusual_to_serde() {
        for text in [
            "",
            "42",
            "{}",
            r#"{"Layers": [1]}"#,
            r#"{"Layers": [{}] "x": 1}"#,
            r#"{"Layers": [{}],}"#,
            r#"{"Layers": [{}], "Layers": []}"#,
            r#"{"La\u0079ers": [{}]}"#,
            r#"{"Layers": [{}], "Other": tru}"#,
            r#"{"Layers": [{}]} x"#,
            r#"[{}, ]"#,
            r#"[{"a": "unterminated}]"#,
            "\u{c}[{}]",
        ] {
            assert!(split(text).is_none(), "{text:?}");
        }
        let deep = format!("[{}{}]", "[".repeat(120), "]".repeat(120));
        assert!(split(&format!("[{{\"a\": {deep}}}]")).is_none());
    }
}
