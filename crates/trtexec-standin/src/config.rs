//! The simulator's performance model and fault table: built in ([`BUILTIN`]) or read from the
//! JSON file named by `TRTMC_SIM_CONFIG` (same shape; a key it gives replaces the built-in one,
//! a key it leaves out keeps the built-in value).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::SimError;

use serde::{Deserialize, Serialize};

/// The built-in configuration (documented as a table in `docs/trtexec-standin.md`).
///
/// * `base_ms`: GPU compute time of an engine built with no tokens.
/// * `noise`: relative standard deviation of one query's compute time.
/// * `seed`: mixed into every random stream.
/// * `build_ms`: how long a build sleeps.
/// * `effects`: latency factor per token; a route's latency is `base_ms` times the factors of its
///   tokens (a token not listed: 1.0).
/// * `faults`: what a token breaks.
pub const BUILTIN: &str = r#"{
  "base_ms": 2.0,
  "noise": 0.004,
  "seed": 7,
  "build_ms": 30,
  "effects": {
    "-kgen:tiling=1": 0.90,
    "-kgen:tiling=0": 1.04,
    "-conv_lowering=off": 0.97,
    "-reshape_ppg=off": 1.03,
    "-slice_fusion=off": 1.00,
    "-copy_ppg=off": 1.02,
    "--builderOptimizationLevel=5": 0.94,
    "--builderOptimizationLevel=0": 1.25,
    "--tilingOptimizationLevel=3": 0.97,
    "--maxAuxStreams=0": 1.01,
    "--fp16": 0.6
  },
  "faults": {
    "-tactic:cublas=on": "crash_build",
    "-match_ragged_mha=on": "hang_build",
    "-kgen:codegen:cuda_tile=0": "fail_build",
    "-kgen:sigmoid_approx=off": "wrong_outputs",
    "--maxAuxStreams=7": "crash_build"
  }
}"#;

/// What a token breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The build prints a few lines, then aborts (SIGABRT).
    CrashBuild,
    /// The build never finishes.
    HangBuild,
    /// The build fails with `[E]` lines, `&&&& FAILED` and exit status 1.
    FailBuild,
    /// Build and timing are fine; exported outputs are wrong.
    WrongOutputs,
    /// The engine aborts when inference starts.
    CrashInfer,
}

impl Fault {
    /// Faults that act during the build (the first one in token order wins).
    pub fn is_build_fault(self) -> bool {
        matches!(
            self,
            Fault::CrashBuild | Fault::HangBuild | Fault::FailBuild
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    base_ms: Option<f64>,
    noise: Option<f64>,
    seed: Option<u64>,
    build_ms: Option<u64>,
    effects: Option<BTreeMap<String, f64>>,
    faults: Option<BTreeMap<String, Fault>>,
}

/// The configuration in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub base_ms: f64,
    pub noise: f64,
    pub seed: u64,
    pub build_ms: u64,
    pub effects: BTreeMap<String, f64>,
    pub faults: BTreeMap<String, Fault>,
}

impl Config {
    /// The built-in configuration.
    pub fn builtin() -> Result<Self, SimError> {
        let file: ConfigFile =
            serde_json::from_str(BUILTIN).map_err(|source| SimError::Embedded {
                what: "built-in simulator config",
                source,
            })?;
        let config = Config {
            base_ms: 2.0,
            noise: 0.0,
            seed: 0,
            build_ms: 0,
            effects: BTreeMap::new(),
            faults: BTreeMap::new(),
        };
        config.merged(file)
    }

    /// `TRTMC_SIM_CONFIG` over the built-in configuration, or the built-in one alone.
    pub fn from_env() -> Result<Self, SimError> {
        let builtin = Self::builtin()?;
        match std::env::var_os("TRTMC_SIM_CONFIG") {
            None => Ok(builtin),
            Some(path) => {
                let path = Path::new(&path);
                let named = |e: SimError| SimError::ConfigFile {
                    path: path.to_path_buf(),
                    source: Box::new(e),
                };
                let text = std::fs::read_to_string(path)
                    .map_err(|source| named(SimError::ConfigRead { source }))?;
                let file: ConfigFile = serde_json::from_str(&text)
                    .map_err(|source| named(SimError::ConfigShape { source }))?;
                builtin.merged(file).map_err(named)
            }
        }
    }

    fn merged(mut self, file: ConfigFile) -> Result<Self, SimError> {
        if let Some(base_ms) = file.base_ms {
            self.base_ms = base_ms;
        }
        if let Some(noise) = file.noise {
            self.noise = noise;
        }
        if let Some(seed) = file.seed {
            self.seed = seed;
        }
        if let Some(build_ms) = file.build_ms {
            self.build_ms = build_ms;
        }
        if let Some(effects) = file.effects {
            self.effects = effects;
        }
        if let Some(faults) = file.faults {
            self.faults = faults;
        }
        if !self.base_ms.is_finite() || self.base_ms <= 0.0 {
            return Err(SimError::ConfigValue {
                field: "base_ms",
                value: self.base_ms,
                must: "positive",
            });
        }
        if !self.noise.is_finite() || self.noise < 0.0 {
            return Err(SimError::ConfigValue {
                field: "noise",
                value: self.noise,
                must: "non-negative",
            });
        }
        if let Some((token, factor)) = self
            .effects
            .iter()
            .find(|(_, f)| !f.is_finite() || **f <= 0.0)
        {
            return Err(SimError::Effect {
                token: token.clone(),
                factor: *factor,
            });
        }
        Ok(self)
    }

    /// `base_ms` times the factors of `tokens` (a token not in `effects` counts 1.0).
    pub fn latency_ms(&self, tokens: &[String]) -> f64 {
        tokens
            .iter()
            .filter_map(|t| self.effects.get(t))
            .fold(self.base_ms, |latency, factor| latency * factor)
    }

    /// The faults of `tokens`, in token order.
    pub fn faults_of<'a>(&self, tokens: &'a [String]) -> Vec<(&'a str, Fault)> {
        tokens
            .iter()
            .filter_map(|t| self.faults.get(t).map(|f| (t.as_str(), *f)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn builtin_parses_and_has_the_documented_structure() {
        let c = Config::builtin().expect("built-in config");
        assert_eq!(c.base_ms, 2.0);
        assert_eq!(c.noise, 0.004);
        assert_eq!(c.seed, 7);
        assert_eq!(c.build_ms, 30);
        let lat = |list: &[&str]| c.latency_ms(&tokens(list));
        assert_eq!(lat(&[]), 2.0);
        // -kgen:tiling=1 is the best single knob change; slice_fusion=off ties the default.
        let singles = [
            "-kgen:tiling=1",
            "-kgen:tiling=0",
            "-conv_lowering=off",
            "-reshape_ppg=off",
            "-slice_fusion=off",
            "-copy_ppg=off",
        ];
        let best = singles
            .iter()
            .min_by(|a, b| lat(&[a]).total_cmp(&lat(&[b])))
            .copied();
        assert_eq!(best, Some("-kgen:tiling=1"));
        assert_eq!(lat(&["-slice_fusion=off"]), lat(&[]));
        assert!((lat(&["-kgen:tiling=1", "-conv_lowering=off"]) - 2.0 * 0.9 * 0.97).abs() < 1e-12);
        assert!(lat(&["--fp16"]) < lat(&["--builderOptimizationLevel=5"]));
        assert_eq!(
            c.faults_of(&tokens(&["-kgen:tiling=1", "-tactic:cublas=on"])),
            vec![("-tactic:cublas=on", Fault::CrashBuild)]
        );
        assert_eq!(c.faults.len(), 5);
    }

    #[test]
    fn a_file_replaces_only_the_keys_it_gives() {
        let builtin = Config::builtin().expect("built-in");
        let file: ConfigFile =
            serde_json::from_str(r#"{"noise": 0.05, "faults": {"-x=1": "crash_infer"}}"#)
                .expect("parses");
        let merged = builtin.clone().merged(file).expect("valid");
        assert_eq!(merged.noise, 0.05);
        assert_eq!(merged.effects, builtin.effects);
        assert_eq!(merged.faults.len(), 1);
        for bad in [
            r#"{"base_ms": 0}"#,
            r#"{"noise": -1}"#,
            r#"{"effects": {"-a=1": 0}}"#,
        ] {
            let file: ConfigFile = serde_json::from_str(bad).expect("parses");
            assert!(builtin.clone().merged(file).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<ConfigFile>(r#"{"faults": {"-a=1": "explode"}}"#).is_err());
        assert!(serde_json::from_str::<ConfigFile>(r#"{"base": 1}"#).is_err());
    }
}
