//! `telemetry.json` of a case (`run --telemetry on`): schema `trtmc.telemetry/v1`
//! (schemas/telemetry.schema.json). Sampled by the orchestrator from outside the worker process.

use serde::{Deserialize, Serialize};

/// Schema name of `telemetry.json`.
pub const TELEMETRY_SCHEMA: &str = "trtmc.telemetry/v1";

/// `telemetry.json`: what the machine did while a case ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Always [`TELEMETRY_SCHEMA`].
    pub schema: String,
    /// Milliseconds between samples.
    pub interval_ms: u64,
    /// How the samples were taken, in words.
    pub note: String,
    /// The samples, in time order.
    pub samples: Vec<TelemetrySample>,
}

/// One sample of the worker process and the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySample {
    /// Seconds since the worker started.
    pub t_s: f64,
    /// Worker CPU use since the previous sample, percent of one core.
    pub cpu_percent: Option<f64>,
    /// Worker resident memory, where readable.
    pub rss_bytes: Option<u64>,
    /// Current clock of CPU 0 where readable.
    pub cpu_mhz: Option<f64>,
    /// The GPU CUDA uses (the first of `CUDA_VISIBLE_DEVICES`), from nvidia-smi, where present.
    pub gpu: Option<GpuSample>,
}

/// One nvidia-smi reading of a GPU; a field the driver does not report (`[N/A]`, `[Not Supported]`)
/// is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// The GPU's product name.
    pub name: String,
    /// GPU utilization, percent.
    pub utilization_percent: Option<f64>,
    /// Device memory in use, MiB.
    pub memory_used_mib: Option<f64>,
    /// Streaming-multiprocessor clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// GPU temperature, °C.
    pub temperature_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
}

impl GpuSample {
    /// The nvidia-smi query fields, in the order [`GpuSample::parse`] reads them.
    pub const QUERY: &'static str =
        "--query-gpu=name,utilization.gpu,memory.used,clocks.sm,temperature.gpu,power.draw";
    /// The format that goes with [`GpuSample::QUERY`].
    pub const FORMAT: &'static str = "--format=csv,noheader,nounits";

    /// The first line of `nvidia-smi QUERY FORMAT`; `None` when it is not a reading of the six
    /// fields asked (an error line such as "No devices were found") or has no name.
    pub fn parse(output: &str) -> Option<Self> {
        let line = output.lines().next()?.trim();
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 6 {
            return None;
        }
        let name = fields.first().filter(|n| !n.is_empty())?.to_string();
        let number = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
        Some(Self {
            name,
            utilization_percent: number(1),
            memory_used_mib: number(2),
            sm_clock_mhz: number(3),
            temperature_c: number(4),
            power_w: number(5),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_samples_are_typed_and_unreported_fields_are_none() {
        let s = GpuSample::parse("NVIDIA H100 80GB HBM3, 97, 1234, 1980, 54, 612.31\n")
            .expect("sample");
        assert_eq!(s.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(s.utilization_percent, Some(97.0));
        assert_eq!(s.memory_used_mib, Some(1234.0));
        assert_eq!(s.sm_clock_mhz, Some(1980.0));
        assert_eq!(s.temperature_c, Some(54.0));
        assert_eq!(s.power_w, Some(612.31));
        let old = GpuSample::parse("Tesla K80, 0, 0, 562, 30, [Not Supported]").expect("sample");
        assert_eq!(old.power_w, None);
        assert_eq!(GpuSample::parse(""), None);
        // nvidia-smi's answer to an --id it does not know (an H200 machine, driver 580).
        assert_eq!(GpuSample::parse("No devices were found\n"), None);
    }
}
