//! `telemetry.json` of a case (`run --telemetry on`): schema `trtmc.telemetry/v1`
//! (schemas/telemetry.schema.json). Sampled by the orchestrator from outside the worker process.

use serde::{Deserialize, Serialize};

pub const TELEMETRY_SCHEMA: &str = "trtmc.telemetry/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    pub schema: String,
    pub interval_ms: u64,
    /// How the samples were taken, in words.
    pub note: String,
    pub samples: Vec<TelemetrySample>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySample {
    /// Seconds since the worker started.
    pub t_s: f64,
    /// Worker CPU use since the previous sample, percent of one core.
    pub cpu_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// Current clock of CPU 0 where readable.
    pub cpu_mhz: Option<f64>,
    /// nvidia-smi's one-line report, where present.
    pub gpu: Option<String>,
}
