//! TensorRT versions as trtexec reports them, and which flags each version understands.
//!
//! Every threshold below was read from `samples/common/sampleOptions.cpp` at the NVIDIA/TensorRT
//! release tags (8.0.1 … 11.1); the table in `docs/tensorrt.md` lists them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A TensorRT release, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TrtexecVersion {
    /// Major release (8, 10, 11, ...).
    pub major: u32,
    /// Minor release.
    pub minor: u32,
    /// Patch release.
    pub patch: u32,
}

impl fmt::Display for TrtexecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl TrtexecVersion {
    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Decodes `NV_TENSORRT_VERSION` as printed in the banner (`[TensorRT v101601]`).
    ///
    /// TensorRT 10.0 and later encode `major*10000 + minor*100 + patch` (101601 = 10.16.1,
    /// 110100 = 11.1.0); 8.x and 9.x encode `major*1000 + minor*100 + patch` (8003 = 8.0.3,
    /// 8401 = 8.4.1). Returns `None` for numbers neither scheme produces.
    pub fn from_encoded(encoded: u64) -> Option<Self> {
        let (major, minor, patch) = if encoded >= 100_000 {
            (encoded / 10_000, (encoded / 100) % 100, encoded % 100)
        } else if (1_000..10_000).contains(&encoded) {
            (encoded / 1_000, (encoded / 100) % 10, encoded % 100)
        } else {
            return None;
        };
        if !(8..=99).contains(&major) || (major >= 10 && encoded < 100_000) {
            return None;
        }
        Some(Self::new(
            u32::try_from(major).ok()?,
            u32::try_from(minor).ok()?,
            u32::try_from(patch).ok()?,
        ))
    }

    /// Parses the `TensorRT version: ...` log line value: dotted (`10.16.1`, `8.4.1`) or the
    /// encoded integer that TensorRT 8.0 printed there (`8003`).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if !text.contains('.') {
            return Self::from_encoded(text.parse().ok()?);
        }
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        Some(Self::new(major, minor, patch))
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// Oldest release this crate drives: the banner carries the version from 8.0 on.
    pub fn is_drivable(&self) -> bool {
        self.major >= 8
    }

    /// 11.0+: networks are strongly typed; `--fp16 --bf16 --fp8 --int4 --best` are rejected as
    /// unknown options, and `--stronglyTyped` is a no-op.
    pub fn strongly_typed_by_default(&self) -> bool {
        self.major >= 11
    }

    /// 9.1–10.x accept `--stronglyTyped` as an opt-in.
    pub fn has_strongly_typed_flag(&self) -> bool {
        self.at_least(9, 1) && !self.strongly_typed_by_default()
    }

    /// 11.0+: CUDA graph and spin-wait are on and data transfers off unless `--noCudaGraph`,
    /// `--noSpinWait`, `--includeDataTransfers` say otherwise. Before 11.0 the defaults were the
    /// opposite and `--useCudaGraph`, `--useSpinWait`, `--noDataTransfers` opted in.
    pub fn has_inverted_inference_defaults(&self) -> bool {
        self.major >= 11
    }

    /// 11.0+: per-layer profiling always happens in a run separate from the timed one;
    /// before that it needs `--separateProfileRun`.
    pub fn always_separates_profile_run(&self) -> bool {
        self.major >= 11
    }

    /// `--fp16`, `--int8`, `--best`: every drivable release before 11.0.
    pub fn has_fp16_int8_best_flags(&self) -> bool {
        !self.strongly_typed_by_default()
    }

    /// `--fp8`: 8.6 to 10.x.
    pub fn has_fp8_flag(&self) -> bool {
        self.at_least(8, 6) && !self.strongly_typed_by_default()
    }

    /// `--bf16`: 9.1 to 10.x.
    pub fn has_bf16_flag(&self) -> bool {
        self.at_least(9, 1) && !self.strongly_typed_by_default()
    }

    /// `--int4`: 10.1 to 10.x.
    pub fn has_int4_flag(&self) -> bool {
        self.at_least(10, 1) && !self.strongly_typed_by_default()
    }

    /// `--timingCacheFile`: 8.0+.
    pub fn has_timing_cache_file(&self) -> bool {
        self.at_least(8, 0)
    }

    /// `--profilingVerbosity` and `--exportLayerInfo`: 8.2+.
    pub fn has_layer_info_export(&self) -> bool {
        self.at_least(8, 2)
    }

    /// `--memPoolSize`: 8.4+ (before that only `--workspace`).
    pub fn has_mem_pool_size(&self) -> bool {
        self.at_least(8, 4)
    }

    /// `--workspace=N` (MiB): up to 9.x; removed in 10.0.
    pub fn has_workspace_flag(&self) -> bool {
        self.major < 10
    }

    /// `--builderOptimizationLevel`, `--maxAuxStreams`, `--skipInference`: 8.6+.
    pub fn has_builder_optimization_level(&self) -> bool {
        self.at_least(8, 6)
    }

    /// `--maxAuxStreams`: 8.6+.
    pub fn has_max_aux_streams(&self) -> bool {
        self.at_least(8, 6)
    }

    /// `--skipInference`: 8.6+ (older releases call it `--buildOnly`).
    pub fn has_skip_inference(&self) -> bool {
        self.at_least(8, 6)
    }

    /// `--tilingOptimizationLevel`: 10.8+.
    pub fn has_tiling_optimization_level(&self) -> bool {
        self.at_least(10, 8)
    }

    /// `--setBuildRoute` and `--helpBuildRoute`: 11.1+ (the Global Performance Tuner).
    pub fn has_build_routes(&self) -> bool {
        self.at_least(11, 1)
    }

    /// The performance summary lists several `percentile(P%)` values (8.6+); older ones print one.
    pub fn prints_multiple_percentiles(&self) -> bool {
        self.at_least(8, 6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_both_encodings_seen_in_banners() {
        assert_eq!(
            TrtexecVersion::from_encoded(101601),
            Some(TrtexecVersion::new(10, 16, 1))
        );
        assert_eq!(
            TrtexecVersion::from_encoded(110100),
            Some(TrtexecVersion::new(11, 1, 0))
        );
        assert_eq!(
            TrtexecVersion::from_encoded(100000),
            Some(TrtexecVersion::new(10, 0, 0))
        );
        assert_eq!(
            TrtexecVersion::from_encoded(8003),
            Some(TrtexecVersion::new(8, 0, 3))
        );
        assert_eq!(
            TrtexecVersion::from_encoded(8401),
            Some(TrtexecVersion::new(8, 4, 1))
        );
        assert_eq!(
            TrtexecVersion::from_encoded(9300),
            Some(TrtexecVersion::new(9, 3, 0))
        );
        assert_eq!(TrtexecVersion::from_encoded(7000), None);
        assert_eq!(TrtexecVersion::from_encoded(42), None);
        assert_eq!(TrtexecVersion::from_encoded(u64::MAX), None);
    }

    #[test]
    fn parses_version_line_values() {
        assert_eq!(
            TrtexecVersion::parse("10.16.1"),
            Some(TrtexecVersion::new(10, 16, 1))
        );
        assert_eq!(
            TrtexecVersion::parse("8003"),
            Some(TrtexecVersion::new(8, 0, 3))
        );
        assert_eq!(TrtexecVersion::parse("10.x"), None);
        assert_eq!(TrtexecVersion::parse(""), None);
    }

    #[test]
    fn flipped_defaults_and_precision_flags_follow_the_major_version() {
        let v10 = TrtexecVersion::new(10, 16, 1);
        let v11 = TrtexecVersion::new(11, 0, 0);
        assert!(!v10.has_inverted_inference_defaults());
        assert!(v11.has_inverted_inference_defaults());
        assert!(v10.has_fp16_int8_best_flags() && v10.has_bf16_flag() && v10.has_fp8_flag());
        assert!(!v11.has_fp16_int8_best_flags() && !v11.has_bf16_flag() && !v11.has_fp8_flag());
        assert!(v10.has_strongly_typed_flag() && !v11.has_strongly_typed_flag());
        assert!(!v11.has_build_routes());
        assert!(TrtexecVersion::new(11, 1, 0).has_build_routes());
        assert!(!TrtexecVersion::new(10, 7, 0).has_tiling_optimization_level());
        assert!(TrtexecVersion::new(10, 8, 0).has_tiling_optimization_level());
        assert!(TrtexecVersion::new(8, 4, 1).has_workspace_flag());
        assert!(!TrtexecVersion::new(10, 0, 0).has_workspace_flag());
    }

    #[test]
    fn orders_by_major_minor_patch() {
        assert!(TrtexecVersion::new(10, 16, 1) < TrtexecVersion::new(11, 0, 0));
        assert!(TrtexecVersion::new(8, 6, 1) > TrtexecVersion::new(8, 4, 3));
        assert_eq!(TrtexecVersion::new(10, 16, 1).to_string(), "10.16.1");
    }
}
