//! The evidence a case directory keeps beside `observations.jsonl`: `call-notes.json` (what the last
//! worker call produced: a transcript, generated text, a ranking; schema `trtmc.call-notes/v1`,
//! schemas/call-notes.schema.json) and `timing-notes.json` (what a self-timed runtime's own tool
//! reported; schema `trtmc.timing-notes/v1`, schemas/timing-notes.schema.json). Neither feeds a metric.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::benchmark_run::RuntimeInfo;

/// Schema name of `call-notes.json`.
pub const CALL_NOTES_SCHEMA: &str = "trtmc.call-notes/v1";
/// Schema name of `timing-notes.json`.
pub const TIMING_NOTES_SCHEMA: &str = "trtmc.timing-notes/v1";

/// `call-notes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallNotes {
    /// Always [`CALL_NOTES_SCHEMA`].
    pub schema: String,
    /// The operation's notes by name (their values are operation-specific).
    pub notes: BTreeMap<String, serde_json::Value>,
}

/// `timing-notes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingNotes {
    /// Always [`TIMING_NOTES_SCHEMA`].
    pub schema: String,
    /// The runtime whose tool reported the figures.
    pub runtime: RuntimeInfo,
    /// Files the tool wrote into the case directory (names relative to it).
    pub files: Vec<String>,
    /// The tool's own summary and version, by name.
    pub notes: BTreeMap<String, serde_json::Value>,
}
