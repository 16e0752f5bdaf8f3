//! One line of `observations.jsonl`: one raw timed call (schemas/observation.schema.json). The lines
//! carry no schema field of their own; `result.json` names the file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One raw timed call as written to observations.jsonl.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// 0-based index among the timed calls (warm-ups are not observations).
    pub iteration: u64,
    /// Start of this call, nanoseconds after the start of the first timed call.
    pub start_ns: u64,
    /// Wall time of the call in nanoseconds.
    pub wall_ns: u64,
    /// Items processed by the call (images, vectors, sequences); absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    /// Output elements per item (e.g. the embedding width), for element/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements_per_item: Option<u64>,
    /// Tokens the call read (text operations), for token/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Tokens the call generated (text generation), for token/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Stage durations reported by the runner inside the call, by the operation's stage names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages_ns: BTreeMap<String, u64>,
    /// Operation-specific counters (audio microseconds, masks, frames), by the operation's counter names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
}
