//! `--exportLayerInfo` reader: `{"Layers": [...], "Bindings": [...]}` with detailed objects or
//! names only, or a bare list of either.
//!
//! Both forms of trtexec are read on purpose. TensorRT 10 and older list the engine's I/O names as
//! `Bindings` and give each tensor one `Format/Datatype` string (`"Float"` for a linear FP32
//! tensor). TensorRT 11 lists `"I/O Tensors"` as objects with a `Name`, and gives each tensor a
//! `Datatype` and a `Format` apart (plus `Strides`/`StrideOrder`, not needed here); a linear
//! `Format` with its `Datatype` reads as the 10.x string for the same tensor, so formats and
//! precisions compare across the two.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::HashSet;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::loose::{IntOrStr, LCow, LDims, LIntOrStr, LList, LNum, LObj, LPresent, LStr, Slot};
use super::{
    Export, FormatError, describe_object_keys, describe_record_keys, first_byte, invalid_json,
    line_col,
};

/// How much the engine inspector wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// Layer objects with types, tensors and tactics (`--profilingVerbosity=detailed`).
    Detailed,
    /// Only layer names (trtexec's default `layer_names_only`).
    NamesOnly,
}

/// The document's top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootShape {
    /// `{"Layers": [...]}` as trtexec writes it.
    Object,
    /// A bare list of layers (what some tools extract from the object).
    List,
}

/// One tensor of a layer.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Tensor {
    /// Empty when the record had no usable `Name`.
    pub name: String,
    /// `Dimensions`, when every entry is an integer.
    pub dims: Option<Vec<i64>>,
    /// The combined `Format/Datatype` string (or `Datatype` / `Format` where a tool splits them),
    /// shared between the tensors that use it.
    pub format: Option<Arc<str>>,
    /// Whether the record has a `Location` (absent in TensorRT 8.2 and on Myelin kernels).
    #[serde(skip)]
    pub has_location: bool,
}

/// One layer, with the fields the analysis reads; everything else stays in `raw`.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    /// `Name`: the engine's layer name (fused layers join their parts with ` + `).
    pub name: String,
    /// `LayerType`: the kernel family (`CaskConvolution`, `Reformat`, Myelin's `gemm`, ...).
    pub layer_type: Option<Arc<str>>,
    /// `ParameterType`: the network layer it implements (`Convolution`, ...).
    pub parameter_type: Option<Arc<str>>,
    /// `Inputs`, in order.
    pub inputs: Vec<Tensor>,
    /// `Outputs`, in order.
    pub outputs: Vec<Tensor>,
    /// `Constants`: tensors built into the layer.
    pub constants: Vec<Tensor>,
    /// `TacticName`: the kernel the builder chose.
    pub tactic_name: Option<String>,
    /// `StreamId`: the CUDA stream the layer runs on.
    pub stream_id: Option<IntOrStr>,
    /// `_subgraph`: the Myelin subgraph the layer belongs to.
    pub subgraph: Option<IntOrStr>,
    /// `Metadata`: the ONNX nodes the layer came from (`[ONNX Layer: conv1]`, separated by U+001E).
    pub metadata: Option<String>,
    /// Reformat `Origin` (`REFORMAT`, `QDQ`, …).
    pub origin: Option<String>,
    /// Whether the record names a fused activation (`Activation`).
    pub has_activation: bool,
    /// `PluginType`: the plugin's name, for plugin layers.
    pub plugin_type: Option<String>,
    /// Byte range of the layer's JSON object in [`LayerInfo::source`] (detailed records only), for
    /// verbatim output.
    pub raw: Option<std::ops::Range<usize>>,
    /// True when the record as written already satisfies the published analysis schema's layer
    /// shape, so it can be copied verbatim.
    pub verbatim_ok: bool,
    /// True when the export held only this layer's name.
    pub names_only: bool,
    /// A convolution's `Kernel`, `Stride`, `Groups` and `OutMaps` (detailed exports).
    pub conv: Option<ConvFields>,
    /// `Weights` and `Bias` as `(Type, Count)`, where the export lists them.
    pub weights: Option<WeightCount>,
    /// See `weights`.
    pub bias: Option<WeightCount>,
    /// What was wrong with this record (missing or mistyped fields).
    pub problems: Vec<String>,
}

/// The parameters that tell one convolution from another (with the input and output shapes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ConvFields {
    /// `Kernel`: the window's extent per spatial dimension.
    pub kernel: Vec<i64>,
    /// `Stride`, per spatial dimension.
    pub stride: Vec<i64>,
    /// `Groups`: 1 for a dense convolution, the channel count for a depthwise one.
    pub groups: Option<i64>,
    /// `OutMaps`: output channels.
    pub out_maps: Option<i64>,
}

/// A weights or bias blob: its element type as written (`Int8`, `Half`, `Float`, …) and count.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WeightCount {
    /// The element type as written (`Int8`, `Half`, `Float`, ...).
    pub dtype: String,
    /// Number of elements.
    pub count: f64,
}

/// A parsed `--exportLayerInfo` document.
#[derive(Debug, Clone)]
pub struct LayerInfo {
    /// The document as read; layer records point into it.
    pub source: Arc<super::Text>,
    /// Whether the layers sat in trtexec's object or in a bare list.
    pub root: RootShape,
    /// Detailed records or names only.
    pub verbosity: Verbosity,
    /// The layers in engine order.
    pub layers: Vec<Layer>,
    /// The engine's I/O tensor names: `Bindings` (TensorRT 10 and older) or the names of the
    /// `"I/O Tensors"` objects (TensorRT 11). `None` when the document has neither (bare lists and
    /// very old TensorRT).
    pub bindings: Option<Vec<String>>,
    /// True when the I/O list was TensorRT 11's `"I/O Tensors"` objects.
    pub io_tensor_objects: bool,
    /// File-level remarks (not errors).
    pub notes: Vec<String>,
    /// Top-level `schema` and `runtime`: trtmc's own exports of other runtimes carry them
    /// (`trtmc.layer-info/v1`); trtexec writes neither.
    pub schema: Option<String>,
    /// See `schema`.
    pub runtime: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTensor<'a> {
    #[serde(rename = "Name")]
    name: LStr,
    #[serde(rename = "Dimensions")]
    dims: LDims,
    #[serde(rename = "Format/Datatype", borrow)]
    format_datatype: LCow<'a>,
    #[serde(rename = "Datatype", borrow)]
    datatype: LCow<'a>,
    #[serde(rename = "Format", borrow)]
    format: LCow<'a>,
    #[serde(rename = "Location")]
    location: LPresent,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawLayer<'a> {
    #[serde(rename = "Name")]
    name: LStr,
    #[serde(rename = "LayerType", borrow)]
    layer_type: LCow<'a>,
    #[serde(rename = "ParameterType", borrow)]
    parameter_type: LCow<'a>,
    #[serde(rename = "Inputs", borrow)]
    inputs: LList<LObj<RawTensor<'a>>>,
    #[serde(rename = "Outputs", borrow)]
    outputs: LList<LObj<RawTensor<'a>>>,
    #[serde(rename = "Constants", borrow)]
    constants: LList<LObj<RawTensor<'a>>>,
    #[serde(rename = "TacticName")]
    tactic_name: LStr,
    #[serde(rename = "StreamId")]
    stream_id: LIntOrStr,
    #[serde(rename = "_subgraph")]
    subgraph: LIntOrStr,
    #[serde(rename = "Metadata")]
    metadata: LStr,
    #[serde(rename = "Origin")]
    origin: LStr,
    #[serde(rename = "Activation")]
    activation: LPresent,
    #[serde(rename = "PluginType")]
    plugin_type: LStr,
    #[serde(rename = "_trtmc_names_only")]
    names_only_marker: LPresent,
    #[serde(rename = "Kernel")]
    kernel: LDims,
    #[serde(rename = "Stride")]
    stride: LDims,
    #[serde(rename = "Groups")]
    groups: LNum,
    #[serde(rename = "OutMaps")]
    out_maps: LNum,
    #[serde(rename = "Weights")]
    weights: LObj<RawWeights>,
    #[serde(rename = "Bias")]
    bias: LObj<RawWeights>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawWeights {
    #[serde(rename = "Type")]
    dtype: LStr,
    #[serde(rename = "Count")]
    count: LNum,
}

impl RawWeights {
    fn into_count(self) -> Option<WeightCount> {
        match (self.dtype.0, self.count.0) {
            (Slot::Value(dtype), Slot::Value(count)) if count >= 0.0 => {
                Some(WeightCount { dtype, count })
            }
            _ => None,
        }
    }
}

/// An integer-valued number field.
fn whole(n: LNum) -> Option<i64> {
    n.0.into_value()
        .filter(|v| v.fract() == 0.0 && v.abs() < 9.0e15)
        .map(|v| v as i64)
}

/// Reads an `--exportLayerInfo` document.
pub fn read_layer_info(text: String) -> Result<LayerInfo, FormatError> {
    read_layer_info_via(text.into(), true)
}

/// [`read_layer_info`] for text from [`super::read_text`] (possibly a mapped file).
pub fn read_layer_text(text: super::Text) -> Result<LayerInfo, FormatError> {
    read_layer_info_via(text, true)
}

/// `scan`: find the records with the scanner first (false only in tests, to compare the paths).
fn read_layer_info_via(text: super::Text, scan: bool) -> Result<LayerInfo, FormatError> {
    let source = Arc::new(text);
    let text: &str = &source;
    // The scanner finds the records; a record it let through with a syntax error makes the typed
    // parse give up, and serde_json then reads the whole document and names the error.
    let fast = match scan.then(|| super::scan::split(text)).flatten() {
        Some((RootShape::List, records, _, _))
            if check_list_kind(records.first().copied()).is_err() =>
        {
            None
        }
        Some((root, records, bindings, producer)) => parse_records(text, &records)
            .map(|parsed| (root, parsed, bindings, producer.map(json_string))),
        None => None,
    };
    let (root, parsed, bindings, [schema, runtime]) = match fast {
        Some(found) => found,
        None => {
            let (root, records, bindings, producer) = split_document(text)?;
            let records: Vec<&str> = records.iter().map(|r| r.get()).collect();
            let parsed = parse_records(text, &records).ok_or_else(|| {
                FormatError::Shape("a layer record could not be parsed".to_owned())
            })?;
            (root, parsed, bindings.map(RawValue::get), producer)
        }
    };
    let (layers, objects, strings) = parsed;
    if layers.is_empty() {
        return Err(FormatError::Shape(
            "the layer list is empty: the engine inspector wrote no layers (was the engine built?)"
                .to_owned(),
        ));
    }
    let mut notes = Vec::new();
    if objects > 0 && strings > 0 {
        notes.push(format!(
            "the layer list mixes {objects} detailed records with {strings} bare names"
        ));
    }
    let verbosity = if objects == 0 && strings > 0 {
        Verbosity::NamesOnly
    } else {
        Verbosity::Detailed
    };
    // TensorRT 11's `I/O Tensors` is a list of objects with a `Name`; `Bindings` a list of names.
    let io_tensor_objects = bindings.is_some_and(|raw| {
        raw.trim_start()
            .strip_prefix('[')
            .is_some_and(|rest| rest.trim_start().starts_with('{'))
    });
    let ignored = "`Bindings` / `I/O Tensors` is not a list of names or tensors; it was ignored";
    let bindings = match bindings {
        None => None,
        Some(raw) if io_tensor_objects => {
            match serde_json::from_str::<LList<LObj<RawTensor>>>(raw) {
                Ok(LList(Slot::Value(objects))) => Some(
                    objects
                        .into_iter()
                        .filter_map(|o| o.0.into_value())
                        .filter_map(|t| t.name.0.into_value())
                        .collect(),
                ),
                _ => {
                    notes.push(ignored.to_owned());
                    None
                }
            }
        }
        Some(raw) => match serde_json::from_str::<LList<LStr>>(raw) {
            Ok(LList(Slot::Value(names))) => {
                Some(names.into_iter().filter_map(|s| s.0.into_value()).collect())
            }
            _ => {
                notes.push(ignored.to_owned());
                None
            }
        },
    };
    Ok(LayerInfo {
        source: source.clone(),
        root,
        verbosity,
        layers,
        bindings,
        io_tensor_objects,
        notes,
        schema,
        runtime,
    })
}

/// A raw JSON value as a string, when it is one.
fn json_string(raw: Option<&str>) -> Option<String> {
    raw.and_then(|r| serde_json::from_str(r).ok())
}

type Records<'a> = Vec<&'a RawValue>;

/// Shares the few distinct type and format strings of an export between all layers, so 14,000
/// layers do not hold 40,000 copies of "Row major linear FP32".
#[derive(Default)]
struct Interner {
    all: HashSet<Arc<str>>,
    /// The last strings handed out: a layer's tensors mostly repeat one or two formats, and
    /// comparing a few short strings costs less than hashing one.
    recent: [Option<Arc<str>>; 4],
    next: usize,
}

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(hit) = self.recent.iter().flatten().find(|r| ***r == *s) {
            return hit.clone();
        }
        let shared = match self.all.get(s) {
            Some(shared) => shared.clone(),
            None => {
                let shared: Arc<str> = Arc::from(s);
                self.all.insert(shared.clone());
                shared
            }
        };
        self.recent[self.next] = Some(shared.clone());
        self.next = (self.next + 1) % self.recent.len();
        shared
    }
}

/// Layers with the counts of detailed and names-only records.
type Parsed = (Vec<Layer>, usize, usize);

/// Parses the records, large exports on two threads (each takes half, in order). `None` when a
/// record is not valid JSON.
fn parse_records(text: &str, records: &[&str]) -> Option<Parsed> {
    let half = if records.len() >= crate::PARALLEL_LAYERS {
        records.len() / 2
    } else {
        records.len()
    };
    let (first, second) = records.split_at(half);
    let (mine, theirs) = std::thread::scope(|s| {
        let other = (!second.is_empty()).then(|| s.spawn(|| read_records(text, second, half)));
        let mine = read_records(text, first, 0);
        // A worker that died (a bug) is redone here rather than losing its records.
        let theirs = other.map(|h| {
            h.join()
                .unwrap_or_else(|_| read_records(text, second, half))
        });
        (mine, theirs)
    });
    let (mut layers, mut objects, mut strings) = mine?;
    if let Some(rest) = theirs {
        let (more, o, st) = rest?;
        layers.extend(more);
        objects += o;
        strings += st;
    }
    Some((layers, objects, strings))
}

/// Reads a run of layer records; `None` when one of them is not valid JSON.
fn read_records(text: &str, records: &[&str], first_index: usize) -> Option<Parsed> {
    let mut layers = Vec::with_capacity(records.len());
    let (mut objects, mut strings) = (0, 0);
    let mut interner = Interner::default();
    for (i, raw) in records.iter().enumerate() {
        let index = first_index + i;
        let offset = offset_in(text, raw);
        let layer = match first_byte(raw) {
            Some(b'{') => {
                let layer = read_layer_object(text, raw, offset, index, &mut interner)?;
                if layer.names_only {
                    strings += 1;
                } else {
                    objects += 1;
                }
                layer
            }
            Some(b'"') => {
                strings += 1;
                let name: String = serde_json::from_str(raw).ok()?;
                Layer {
                    name,
                    names_only: true,
                    ..Layer::default()
                }
            }
            _ => {
                let (line, column) = line_col(text, offset);
                Layer {
                    problems: vec![format!(
                        "layer record {index} (line {line}, column {column}) is neither an object nor a name string"
                    )],
                    ..Layer::default()
                }
            }
        };
        layers.push(layer);
    }
    Some((layers, objects, strings))
}

/// The top-level object, read in one pass: the `Layers` records are kept as raw JSON slices.
struct TopLevel<'a> {
    layers: Option<Slot<Records<'a>>>,
    bindings: Option<&'a RawValue>,
    /// `schema` and `runtime`, when strings.
    producer: [Option<String>; 2],
    keys: Vec<String>,
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut top = TopLevel {
                    layers: None,
                    bindings: None,
                    producer: [None, None],
                    keys: Vec::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "Layers" => top.layers = Some(map.next_value::<RecordList>()?.0),
                        // TensorRT 11 names the I/O list `I/O Tensors` (objects, not names).
                        "Bindings" | "I/O Tensors" if top.bindings.is_none() => {
                            top.bindings = Some(map.next_value()?)
                        }
                        "schema" => top.producer[0] = map.next_value::<LStr>()?.0.into_value(),
                        "runtime" => top.producer[1] = map.next_value::<LStr>()?.0.into_value(),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    top.keys.push(key);
                }
                Ok(top)
            }
        }
        d.deserialize_map(Top)
    }
}

/// A list of raw records, or a note that the value was not a list.
struct RecordList<'a>(Slot<Records<'a>>);

impl<'de> Deserialize<'de> for RecordList<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = RecordList<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of layer records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(256));
                while let Some(r) = seq.next_element::<&'de RawValue>()? {
                    records.push(r);
                }
                Ok(RecordList(Slot::Value(records)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(RecordList(Slot::Wrong))
            }
        }
        d.deserialize_any(List)
    }
}

/// What [`split_document`] finds: the shape, the records, the bindings, `schema` and `runtime`.
type Document<'a> = (
    RootShape,
    Records<'a>,
    Option<&'a RawValue>,
    [Option<String>; 2],
);

/// Finds the layer records, the bindings and the producer keys in either top-level shape.
fn split_document(text: &str) -> Result<Document<'_>, FormatError> {
    match first_byte(text) {
        Some(b'{') => {
            let top: TopLevel = serde_json::from_str(text).map_err(|e| invalid_json(text, &e, Export::LayerInfo))?;
            match top.layers {
                Some(Slot::Value(records)) => Ok((
                    RootShape::Object,
                    records,
                    top.bindings,
                    top.producer,
                )),
                Some(_) => Err(FormatError::Shape("`Layers` is not a list".to_owned())),
                None => Err(FormatError::WrongKind {
                    expected: "a layer-info export (no `Layers` key)",
                    found: describe_object_keys(&top.keys),
                }),
            }
        }
        Some(b'[') => {
            let records: Records = serde_json::from_str(text).map_err(|e| invalid_json(text, &e, Export::LayerInfo))?;
            check_list_kind(records.first().map(|r| r.get()))?;
            Ok((RootShape::List, records, None, [None, None]))
        }
        Some(_) => match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Err(e) => Err(invalid_json(text, &e, Export::LayerInfo)),
            Ok(_) => Err(FormatError::Shape(
                "the document is a single JSON value, not an object with `Layers` or a list of layers".to_owned(),
            )),
        },
        None => Err(FormatError::Shape("the file is empty".to_owned())),
    }
}

/// Refuses a bare list whose first record is another export's (a profile or times file).
fn check_list_kind(first: Option<&str>) -> Result<(), FormatError> {
    if let Some(first) = first
        && first_byte(first) == Some(b'{')
    {
        let keys = object_keys(first);
        if let Some(found) = describe_record_keys(&keys)
            && !keys
                .iter()
                .any(|k| k == "LayerType" || k == "Inputs" || k == "Outputs")
        {
            return Err(FormatError::WrongKind {
                expected: "a layer-info export",
                found: found.to_owned(),
            });
        }
    }
    Ok(())
}

/// The key names of a JSON object (used only to describe misplaced files).
pub(super) fn object_keys(raw: &str) -> Vec<String> {
    serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(raw)
        .map(|m| m.into_keys().collect())
        .unwrap_or_default()
}

fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

fn read_layer_object(
    text: &str,
    raw: &str,
    offset: usize,
    index: usize,
    interner: &mut Interner,
) -> Option<Layer> {
    let rec: RawLayer = match serde_json::from_str(raw) {
        Ok(rec) => rec,
        Err(err) => {
            // A record that is not JSON at all makes the whole document invalid (the caller
            // reports it); one that is JSON but not a layer (a duplicate key) is a problem.
            if err.is_syntax() || err.is_eof() || serde_json::from_str::<IgnoredAny>(raw).is_err() {
                return None;
            }
            let (line, column) = line_col(text, offset);
            return Some(Layer {
                raw: Some(offset..offset + raw.len()),
                problems: vec![format!(
                    "layer record {index} (starting line {line}, column {column}) could not be read: {err}"
                )],
                ..Layer::default()
            });
        }
    };
    if !rec.names_only_marker.0.is_missing() {
        // A names-only record normalized by an earlier analysis (analyze-data.json).
        return Some(Layer {
            name: rec.name.0.into_value().unwrap_or_default(),
            names_only: true,
            ..Layer::default()
        });
    }
    let mut problems = Vec::new();
    let mut verbatim_ok = true;
    let name = match rec.name.0 {
        Slot::Value(n) if !n.is_empty() => n,
        other => {
            verbatim_ok &= matches!(other, Slot::Value(_));
            problems.push(format!(
                "layer record {index} has no non-empty string `Name`"
            ));
            String::new()
        }
    };
    let label = Label { name: &name, index };
    let layer_type = match rec.layer_type.0 {
        Slot::Value(t) => Some(interner.get(&t)),
        _ => {
            verbatim_ok = false;
            problems.push(format!("layer {label} has no string `LayerType`"));
            None
        }
    };
    let mut tensors = |slot: LList<LObj<RawTensor>>, field: &str, required: bool| -> Vec<Tensor> {
        match slot.0 {
            Slot::Value(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    convert_tensor(
                        t,
                        &label,
                        field,
                        i,
                        &mut problems,
                        &mut verbatim_ok,
                        interner,
                    )
                })
                .collect(),
            Slot::Missing => {
                if required {
                    verbatim_ok = false;
                    problems.push(format!(
                        "layer {label} has no `{field}` list; treated as empty"
                    ));
                }
                Vec::new()
            }
            Slot::Wrong => {
                verbatim_ok = false;
                problems.push(format!(
                    "layer {label}: `{field}` is not a list; treated as empty"
                ));
                Vec::new()
            }
        }
    };
    // TensorRT 11 writes its Myelin kernels as `custom_layer` records without `Outputs`.
    let outputs_listed = layer_type.as_deref() != Some("custom_layer");
    let inputs = tensors(rec.inputs, "Inputs", true);
    let outputs = tensors(rec.outputs, "Outputs", outputs_listed);
    let constants = tensors(rec.constants, "Constants", false);
    // Such a record is read as it is, but is not the published schema's layer shape.
    verbatim_ok &= outputs_listed || !outputs.is_empty();
    if rec.tactic_name.0.is_wrong() || rec.stream_id.0.is_wrong() {
        verbatim_ok = false;
    }
    let conv = rec.kernel.0.into_value().map(|kernel| ConvFields {
        kernel,
        stride: rec.stride.0.into_value().unwrap_or_default(),
        groups: whole(rec.groups),
        out_maps: whole(rec.out_maps),
    });
    Some(Layer {
        conv,
        weights: rec.weights.0.into_value().and_then(RawWeights::into_count),
        bias: rec.bias.0.into_value().and_then(RawWeights::into_count),
        name,
        layer_type,
        parameter_type: rec.parameter_type.0.value().map(|p| interner.get(p)),
        inputs,
        outputs,
        constants,
        tactic_name: rec.tactic_name.0.into_value(),
        stream_id: rec.stream_id.0.into_value(),
        subgraph: rec.subgraph.0.into_value(),
        metadata: rec.metadata.0.into_value(),
        origin: rec.origin.0.into_value(),
        has_activation: !rec.activation.0.is_missing(),
        plugin_type: rec.plugin_type.0.into_value(),
        raw: Some(offset..offset + raw.len()),
        verbatim_ok,
        names_only: false,
        problems,
    })
}

/// How a layer is named in messages: `name`, or "record N" when it has none (no allocation until used).
struct Label<'a> {
    name: &'a str,
    index: usize,
}

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.name.is_empty() {
            write!(f, "record {}", self.index)
        } else {
            write!(f, "`{}`", self.name)
        }
    }
}

fn convert_tensor(
    slot: LObj<RawTensor>,
    layer: &Label,
    field: &str,
    i: usize,
    problems: &mut Vec<String>,
    verbatim_ok: &mut bool,
    interner: &mut Interner,
) -> Tensor {
    let Slot::Value(t) = slot.0 else {
        *verbatim_ok = false;
        problems.push(format!("layer {layer}: {field}[{i}] is not an object"));
        return Tensor::default();
    };
    let name = match t.name.0 {
        Slot::Value(n) => n,
        _ => {
            *verbatim_ok = false;
            problems.push(format!("layer {layer}: {field}[{i}] has no string `Name`"));
            String::new()
        }
    };
    if t.dims.0.is_wrong() || t.format.0.is_wrong() || t.datatype.0.is_wrong() {
        *verbatim_ok = false;
    }
    if t.dims.0.is_wrong() {
        problems.push(format!(
            "layer {layer}: tensor `{name}` has non-integer `Dimensions`"
        ));
    }
    let format = match (
        t.format_datatype.0.value(),
        t.format.0.value(),
        t.datatype.0.value(),
    ) {
        (Some(fd), _, _) => Some(interner.get(fd)),
        // TensorRT 11: a linear tensor reads as 10.x wrote it, by its data type alone.
        (None, Some(f), Some(d)) if is_linear_format(f) => Some(interner.get(d)),
        (None, Some(f), Some(d)) => Some(interner.get(&format!("{f} {d}"))),
        (None, f, d) => f.or(d).map(|x| interner.get(x)),
    };
    Tensor {
        name,
        dims: t.dims.0.into_value(),
        format,
        has_location: !t.location.0.is_missing(),
    }
}

/// A TensorRT 11 `Format` naming the plain row-major layout (10.x left it out of the short form).
fn is_linear_format(format: &str) -> bool {
    ["Row major linear", "Row major", "Linear", "kLINEAR"]
        .iter()
        .any(|linear| format.trim().eq_ignore_ascii_case(linear))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<LayerInfo, FormatError> {
        read_layer_info(text.to_owned())
    }

    /// Both paths, as comparable text (the source is shared, so compare everything else).
    fn both_paths(text: &str) -> (String, String) {
        let show = |r: Result<LayerInfo, FormatError>| match r {
            Ok(info) => format!(
                "{:?} {:?} {:?} {:?} {:?}",
                info.root, info.verbosity, info.layers, info.bindings, info.notes
            ),
            Err(e) => format!("error: {e:?}"),
        };
        (
            show(read_layer_info_via(text.to_owned().into(), true)),
            show(read_layer_info_via(text.to_owned().into(), false)),
        )
    }

    /// A hand-written engine of two layers (a fused convolution, a Myelin gemm) in TensorRT 10's form
    /// and in TensorRT 11's: the same layers, tensors, formats and I/O names, on both read paths.
    #[test]
    fn the_11x_form_reads_like_the_10x_form() {
        let ten = r#"{"Layers": [
  {"Name": "conv1 + relu1", "LayerType": "CaskConvolution",
   "Inputs": [{"Name": "input", "Location": "Device", "Dimensions": [1,3,8,8], "Format/Datatype": "Float"}],
   "Outputs": [{"Name": "relu1_out", "Location": "Device", "Dimensions": [1,4,8,8], "Format/Datatype": "Float"}],
   "ParameterType": "Convolution", "TacticName": "sm90_conv", "TacticValue": "0x1", "StreamId": 0,
   "Metadata": "[ONNX Layer: conv1]\u001e[ONNX Layer: relu1]"},
  {"Name": "__myl_Gemm_fc", "LayerType": "gemm",
   "Inputs": [{"Name": "relu1_out", "Dimensions": [1,256], "Format/Datatype": "Half"}],
   "Outputs": [{"Name": "logits", "Dimensions": [1,10], "Format/Datatype": "Half"}],
   "TacticName": "__myl_Gemm_0x2", "StreamId": 0, "Metadata": "[ONNX Layer: fc]"}
], "Bindings": ["input", "logits"]}"#;
        let eleven = r#"{"Layers": [
  {"Name": "conv1 + relu1", "LayerType": "CaskConvolution",
   "Inputs": [{"Name": "input", "Location": "Device", "Dimensions": [1,3,8,8], "Datatype": "Float", "Format": "Row major linear", "Strides": [192,64,8,1], "StrideOrder": [0,1,2,3]}],
   "Outputs": [{"Name": "relu1_out", "Location": "Device", "Dimensions": [1,4,8,8], "Datatype": "Float", "Format": "Row major linear", "Strides": [256,64,8,1], "StrideOrder": [0,1,2,3]}],
   "Constants": [{"Name": "conv1.weight", "Dimensions": [4,3,3,3], "Datatype": "Float", "Format": "Row major linear", "Strides": [27,9,3,1], "StrideOrder": [0,1,2,3]}],
   "ParameterType": "Convolution", "TacticName": "sm90_conv", "TacticValue": "0x1", "StreamId": 0,
   "Metadata": "[ONNX Layer: conv1]\u001e[ONNX Layer: relu1]"},
  {"Name": "__myl_Gemm_fc", "LayerType": "custom_layer",
   "Inputs": [{"Name": "relu1_out", "Dimensions": [1,256], "Datatype": "Half", "Format": "Row major linear", "Strides": [256,1], "StrideOrder": [0,1]}],
   "TacticName": "__myl_Gemm_0x2", "StreamId": 0, "Metadata": "[ONNX Layer: fc]"}
], "I/O Tensors": [
  {"Name": "input", "IOMode": "Input", "Location": "Device", "Dimensions": [1,3,8,8], "Datatype": "Float", "Format": "Row major linear"},
  {"Name": "logits", "IOMode": "Output", "Location": "Device", "Dimensions": [1,10], "Datatype": "Half", "Format": "Row major linear"}
]}"#;
        for scan in [true, false] {
            let a = read_layer_info_via(ten.to_owned().into(), scan).expect("10.x");
            let b = read_layer_info_via(eleven.to_owned().into(), scan).expect("11.x");
            assert!(!a.io_tensor_objects && b.io_tensor_objects);
            assert_eq!(a.bindings, b.bindings);
            assert_eq!(
                b.bindings,
                Some(vec!["input".to_owned(), "logits".to_owned()])
            );
            assert_eq!(a.layers.len(), b.layers.len());
            for (x, y) in a.layers.iter().zip(&b.layers) {
                assert_eq!(x.name, y.name);
                assert_eq!(x.inputs, y.inputs, "{}", x.name);
                assert_eq!(x.metadata, y.metadata);
                assert!(y.problems.is_empty(), "{:?}", y.problems);
            }
            assert_eq!(a.layers[0].outputs, b.layers[0].outputs);
            assert!(
                b.layers[1].outputs.is_empty(),
                "11.x Myelin records list no outputs"
            );
            assert_eq!(b.layers[0].constants.len(), 1);
            assert_eq!(b.layers[0].constants[0].format.as_deref(), Some("Float"));
            assert_eq!(b.layers[1].inputs[0].format.as_deref(), Some("Half"));
        }
        // A format other than linear keeps both parts.
        let vectorized = eleven.replacen(
            r#""Datatype": "Half", "Format": "Row major linear", "Strides": [256,1]"#,
            r#""Datatype": "Int8", "Format": "Thirty-two wide channel vectorized row major", "Strides": [256,1]"#,
            1,
        );
        let info = read(&vectorized).expect("11.x");
        assert_eq!(
            info.layers[1].inputs[0].format.as_deref(),
            Some("Thirty-two wide channel vectorized row major Int8")
        );
    }

    #[test]
    fn the_scanner_path_agrees_with_serde_on_damaged_documents() {
        let good = r#"{"Layers": [{"Name": "a \"q\" b", "LayerType": "CaskConvolution", "Inputs": [{"Name": "x", "Dimensions": [1,3], "Format/Datatype": "Half"}], "Outputs": [{"Name": "y", "Location": "Device", "Dimensions": [1,8], "Format/Datatype": "Half"}], "Weights": {"Type": "Half", "Count": 9}, "TacticName": "t"}, "names only", {"Name": "b", "LayerType": "kgen", "Inputs": [], "Outputs": [], "Name": "dup"}], "Bindings": ["x", "y"], "Extra": {"k": [true, null, 1.5e3]}}"#;
        let bare = r#"[{"Name": "a", "LayerType": "Reformat", "Inputs": [], "Outputs": []}, {"count": 3}]"#;
        for doc in [good, bare] {
            let (fast, slow) = both_paths(doc);
            assert_eq!(fast, slow, "{doc}");
            // Every single-byte damage: a deletion, or one of the bytes that matter to a scanner.
            for at in 0..doc.len() {
                let mut variants = vec![format!("{}{}", &doc[..at], &doc[at + 1..])];
                for c in ['"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\u{c}', 'x'] {
                    variants.push(format!("{}{c}{}", &doc[..at], &doc[at..]));
                }
                for text in variants {
                    let (fast, slow) = both_paths(&text);
                    assert_eq!(fast, slow, "{text}");
                }
            }
        }
    }

    #[test]
    fn reads_the_trtexec_object_shape_and_keeps_raw_spans() {
        let text = r#"{"Layers": [{"Name": "a", "LayerType": "CaskConvolution", "Inputs": [{"Name": "x", "Dimensions": [1,3], "Format/Datatype": "Half"}], "Outputs": [{"Name": "y", "Dimensions": [1,8], "Format/Datatype": "Half"}], "StreamId": 0, "Metadata": "[ONNX Layer: a]\u001e[ONNX Layer: b]"}], "Bindings": ["x", "y"]}"#;
        let info = read(text).expect("reads");
        assert_eq!(info.root, RootShape::Object);
        assert_eq!(info.verbosity, Verbosity::Detailed);
        assert_eq!(
            info.bindings.as_deref(),
            Some(&["x".to_owned(), "y".to_owned()][..])
        );
        let l = &info.layers[0];
        assert_eq!(l.name, "a");
        assert_eq!(l.inputs[0].dims.as_deref(), Some(&[1, 3][..]));
        assert_eq!(
            l.metadata.as_deref(),
            Some("[ONNX Layer: a]\u{1e}[ONNX Layer: b]")
        );
        let raw = &info.source[l.raw.clone().expect("raw span")];
        assert!(raw.starts_with("{\"Name\": \"a\"") && raw.ends_with('}'));
        assert!(l.verbatim_ok);
    }

    #[test]
    fn names_only_lists_are_recognised() {
        let info = read(r#"{"Layers": ["[trainStation1]", "conv + relu"], "Bindings": []}"#)
            .expect("reads");
        assert_eq!(info.verbosity, Verbosity::NamesOnly);
        assert_eq!(info.layers[1].name, "conv + relu");
        assert!(info.layers[1].names_only);
    }

    #[test]
    fn bare_lists_are_accepted() {
        let info = read(r#"[{"Name": "a", "LayerType": "kgen", "Inputs": [], "Outputs": []}]"#)
            .expect("reads");
        assert_eq!(info.root, RootShape::List);
        assert!(info.bindings.is_none());
        assert_eq!(info.layers[0].layer_type.as_deref(), Some("kgen"));
    }

    #[test]
    fn unescaped_names_give_line_and_column() {
        let text = "{\"Layers\": [\n{\"Name\": \"bad \"quote\" name\", \"LayerType\": \"x\"}\n]}";
        match read(text) {
            Err(FormatError::InvalidJson {
                line, column, hint, ..
            }) => {
                assert_eq!(line, 2);
                assert!(column > 10, "column {column}");
                assert!(hint.expect("hint").contains("without JSON escaping"));
            }
            other => panic!("expected invalid JSON, got {other:?}"),
        }
    }

    #[test]
    fn mistyped_fields_become_problems() {
        let info = read(r#"[{"Name": 5, "LayerType": "x", "Inputs": {}, "Outputs": [{"Name": "y", "Dimensions": ["a"]}], "TacticName": 3}]"#)
            .expect("reads");
        let l = &info.layers[0];
        assert!(!l.verbatim_ok);
        assert_eq!(l.problems.len(), 3, "{:?}", l.problems);
        assert!(l.outputs[0].dims.is_none());
    }

    #[test]
    fn files_in_the_wrong_slot_are_named() {
        let err = read(r#"[{"count": 3}, {"name": "a", "timeMs": 1}]"#)
            .expect_err("profile is not layers");
        assert!(err.to_string().contains("--exportProfile"), "{err}");
        let err = read(r#"{"tuner_version": "2", "tuner_options": []}"#).expect_err("knob db");
        assert!(err.to_string().contains("helpBuildRoute"), "{err}");
        let err = read("[I] [TRT] hello\n&&&& RUNNING").expect_err("log");
        assert!(err.to_string().contains("text log"), "{err}");
        assert!(read("{\"Layers\": []}").is_err());
        assert!(read("   ").is_err());
        assert!(read("42").is_err());
    }
}
