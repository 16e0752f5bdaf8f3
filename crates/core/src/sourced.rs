//! Where a resolved value came from: the provenance every setting of a case carries. A leaf, so the
//! modules that check and explain values (limits, errors, plans) need nothing from case resolution.

use serde::{Deserialize, Serialize};

/// Where a resolved value came from, lowest precedence first (the order is the precedence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The operation's default, or trtmc's own.
    Default,
    /// The profile's MODEL.toml.
    Manifest,
    /// The test case of the profile's test manifest.
    Case,
    /// The entry of a plan file.
    Plan,
    /// A `--set KEY=VALUE` on the command line.
    Set,
    /// A point of a `--sweep`.
    Sweep,
    /// A dedicated command-line flag (`--warmup`, `--iterations`, `--duration`, `--runtime`, `--shape`, `--dim`).
    Cli,
}

/// A value together with where it came from, so documents and messages can say which setting won.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sourced<T> {
    /// The value in effect.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Sourced<T> {
    /// A value from `source`.
    pub fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}
