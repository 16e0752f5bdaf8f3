//! The simulated TensorRT release (`TRTMC_SIM_VERSION`) and what it accepts.

/// The `[TensorRT vNNNNNN]` number the simulator reports when `TRTMC_SIM_VERSION` is unset.
pub const DEFAULT_ENCODED: u64 = 110_100;

/// A simulated TensorRT release, 10.0 or newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimVersion {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl SimVersion {
    /// Decodes the banner's number (`major*10000 + minor*100 + patch`, TensorRT 10.0+).
    pub fn from_encoded(encoded: u64) -> Option<Self> {
        if !(100_000..1_000_000).contains(&encoded) {
            return None;
        }
        Some(Self {
            major: encoded / 10_000,
            minor: (encoded / 100) % 100,
            patch: encoded % 100,
        })
    }

    /// `TRTMC_SIM_VERSION`, or 11.1.0.
    pub fn from_env() -> Result<Self, crate::error::SimError> {
        match std::env::var("TRTMC_SIM_VERSION") {
            Err(std::env::VarError::NotPresent) => Ok(Self::from_encoded(DEFAULT_ENCODED)
                .unwrap_or(Self {
                    major: 11,
                    minor: 1,
                    patch: 0,
                })),
            Err(std::env::VarError::NotUnicode(_)) => Err(crate::error::SimError::VersionNotUtf8),
            Ok(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .and_then(Self::from_encoded)
                .ok_or_else(|| crate::error::SimError::Version {
                    value: text.clone(),
                }),
        }
    }

    pub fn encoded(&self) -> u64 {
        self.major * 10_000 + self.minor * 100 + self.patch
    }

    /// The build number in the banner (`[b106]`): the recorded ones for 11.1.0 and 10.16.1.
    pub fn build(&self) -> u64 {
        match self.encoded() {
            110_100 => 106,
            101_601 => 11,
            _ => 1,
        }
    }

    /// `11.1.0`
    pub fn dotted(&self) -> String {
        format!("{}.{}.{}", self.major, self.minor, self.patch)
    }

    /// `11.1.0.106`: the library version deserialization errors quote.
    pub fn library(&self) -> String {
        format!("{}.{}", self.dotted(), self.build())
    }

    fn at_least(&self, major: u64, minor: u64) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// `--setBuildRoute`, `--helpBuildRoute`: 11.1+.
    pub fn has_build_routes(&self) -> bool {
        self.at_least(11, 1)
    }

    /// 11.0+: strongly typed networks only; precision flags are unknown options.
    pub fn strongly_typed(&self) -> bool {
        self.major >= 11
    }

    /// 11.0+: CUDA graph and spin-wait on, data transfers off by default.
    pub fn inverted_inference_defaults(&self) -> bool {
        self.major >= 11
    }

    /// `--tilingOptimizationLevel`: 10.8+.
    pub fn has_tiling_optimization_level(&self) -> bool {
        self.at_least(10, 8)
    }

    /// `--int4`: 10.1 to 10.x.
    pub fn has_int4(&self) -> bool {
        self.at_least(10, 1) && !self.strongly_typed()
    }

    /// The banner's `[bNN]` build number: from 10.4 (`samples/common/logging.h` appends
    /// `NV_TENSORRT_BUILD` to the test name from `release/10.4`; 10.0 to 10.3 print the version only).
    pub fn banner_build(&self) -> Option<u64> {
        self.at_least(10, 4).then(|| self.build())
    }

    /// The coefficient of variance (%) of GPU compute time above which the summary warns it is
    /// unstable: `kUNSTABLE_PERF_REPORTING_THRESHOLD` in `samples/common/sampleReporting.cpp`, 1.0
    /// up to `release/10.13`, 2.5 from `release/10.14`.
    pub fn unstable_threshold_percent(&self) -> f64 {
        if self.at_least(10, 14) { 2.5 } else { 1.0 }
    }

    /// The advice after the unstable-time warning: 11.x dropped `--useSpinWait` from it (spin-wait
    /// is the default there; `sampleReporting.cpp` at `release/11.0`).
    pub fn unstable_advice(&self) -> &'static str {
        if self.major >= 11 {
            "  If not already in use, locking GPU clock frequency may improve the stability."
        } else {
            "  If not already in use, locking GPU clock frequency or adding --useSpinWait may \
             improve the stability."
        }
    }

    /// Whether a command line that does not parse ends with `&&&& FAILED`: up to 11.0 trtexec
    /// returns `reportFail` there; from 11.1 `trtexec.cpp` prints the help and the error and returns
    /// `EXIT_FAILURE` without a final status line.
    pub fn parse_failure_reports_failed(&self) -> bool {
        !self.at_least(11, 1)
    }

    /// From 11.1 the timed loop runs `iterations + skip + numRefPairs` queries and there is always
    /// one reference pair (`InferenceOptions::refPairs{1}` in `sampleOptions.h`,
    /// `inferenceLoop` in `sampleInference.cpp`): `--iterations=N --duration=0` times N + 1.
    pub fn reference_pair_queries(&self) -> u64 {
        u64::from(self.at_least(11, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_banner_numbers() {
        let v = SimVersion::from_encoded(101_601).expect("10.16.1");
        assert_eq!((v.major, v.minor, v.patch), (10, 16, 1));
        assert_eq!(v.dotted(), "10.16.1");
        assert_eq!(v.library(), "10.16.1.11");
        assert!(!v.has_build_routes() && !v.strongly_typed() && v.has_tiling_optimization_level());
        let v = SimVersion::from_encoded(110_100).expect("11.1.0");
        assert_eq!(v.encoded(), 110_100);
        assert_eq!(v.build(), 106);
        assert!(v.has_build_routes() && v.strongly_typed() && v.inverted_inference_defaults());
        let v = SimVersion::from_encoded(110_000).expect("11.0.0");
        assert!(!v.has_build_routes() && v.strongly_typed());
        assert!(v.parse_failure_reports_failed() && v.reference_pair_queries() == 0);
        assert!(!v.unstable_advice().contains("--useSpinWait"));
        let v = SimVersion::from_encoded(110_100).expect("11.1.0");
        assert!(!v.parse_failure_reports_failed() && v.reference_pair_queries() == 1);
        assert_eq!(v.unstable_threshold_percent(), 2.5);
        let v = SimVersion::from_encoded(101_300).expect("10.13.0");
        assert_eq!(v.unstable_threshold_percent(), 1.0);
        assert!(v.unstable_advice().contains("--useSpinWait"));
        assert_eq!(v.banner_build(), Some(1));
        assert_eq!(
            SimVersion::from_encoded(101_601).and_then(|v| v.banner_build()),
            Some(11)
        );
        assert_eq!(
            SimVersion::from_encoded(100_300).and_then(|v| v.banner_build()),
            None
        );
        assert!(SimVersion::from_encoded(8_601).is_none());
        assert!(SimVersion::from_encoded(10_000_000).is_none());
    }
}
