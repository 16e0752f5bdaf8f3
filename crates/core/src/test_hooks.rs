//! Hooks of trtmc's own test suite: injected delays, pauses and aborts, and the test-only operations.
//!
//! Every hook is read once, in `main` ([`TestHooks::install`]), and only when `TRTMC_TEST=1`; otherwise all
//! of them are off whatever else the environment holds, so a stray variable can never change a user's
//! measurement or run a test operation. Everything else asks [`TestHooks::current`]; nothing reads a
//! `TRTMC_TEST*` variable itself. A hook meant for the worker travels in its request as one optional
//! value (the worker request's `hooks`); the matrix hands its candidate delay to the candidate's own
//! `trtmc-bench run`, which reads it here.

use std::sync::OnceLock;
use std::time::Duration;

use crate::catalog::Profile;
use crate::operations;

/// Set to `1` by the test harness; only then do the hooks below exist.
pub const TEST_ENV: &str = "TRTMC_TEST";
/// Microseconds added to every timed operation call of `run`'s worker (inside the measured time).
pub const CALL_DELAY_ENV: &str = "TRTMC_TEST_CALL_DELAY_US";
/// A fraction (e.g. `0.3`) by which every timed operation call of `run`'s worker is made slower: after
/// the real call, the worker busy-waits that fraction of the call's own duration (inside the measured
/// time), so the slowdown is exactly that fraction whatever the machine's speed at the moment.
pub const CALL_SLOWDOWN_ENV: &str = "TRTMC_TEST_CALL_SLOWDOWN";
/// Milliseconds `run` waits between staging its result and committing it (a window for a kill).
pub const PAUSE_BEFORE_COMMIT_ENV: &str = "TRTMC_TEST_PAUSE_BEFORE_COMMIT_MS";
/// Microseconds the matrix adds to every timed call of its candidates (passed to their `run` as
/// [`CALL_DELAY_ENV`]).
pub const MATRIX_CANDIDATE_DELAY_ENV: &str = "TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US";
/// The fraction by which the matrix slows every timed call of its candidates (passed to their `run` as
/// [`CALL_SLOWDOWN_ENV`]); the validity benchmark's injected slowdown (scripts/validity.py).
pub const MATRIX_CANDIDATE_SLOWDOWN_ENV: &str = "TRTMC_TEST_MATRIX_CANDIDATE_SLOWDOWN";
/// A matrix row id whose task dies before writing a result (a crashed Slurm task).
pub const MATRIX_ABORT_ROW_ENV: &str = "TRTMC_TEST_MATRIX_ABORT_ROW";
/// `NODE=MICROSECONDS`: `run`'s worker busy-waits that long after every session run, timed or profiled,
/// and adds it to every run of the profile's first layer whose name starts with NODE
/// (`trtmc_runtime::testing::SlowNode`): a candidate made slower in one known node.
pub const SLOW_NODE_ENV: &str = "TRTMC_TEST_SLOW_NODE";
/// `NODE=MICROSECONDS` the matrix passes to its candidates' `run` (timed rounds and profiling pass) as
/// [`SLOW_NODE_ENV`].
pub const MATRIX_CANDIDATE_SLOW_NODE_ENV: &str = "TRTMC_TEST_MATRIX_CANDIDATE_SLOW_NODE";
/// A matrix row id whose reference profiling pass (the explanation of a yellow or red light) fails.
pub const MATRIX_PROFILE_FAIL_ROW_ENV: &str = "TRTMC_TEST_MATRIX_PROFILE_FAIL_ROW";
/// A tune route whose Slurm task dies before writing a result (a crashed array task).
pub const TUNE_ABORT_ROUTE_ENV: &str = "TRTMC_TEST_TUNE_ABORT_ROUTE";

/// This process's hooks, read once ([`TestHooks::install`] in `main`, else on first use).
static CURRENT: OnceLock<TestHooks> = OnceLock::new();

/// The hooks of one command, as read from its environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestHooks {
    /// Under the test harness: test-only operations may run.
    pub enabled: bool,
    /// [`CALL_DELAY_ENV`]: the delay added to every timed call of `run`'s worker.
    pub call_delay: Option<Duration>,
    /// [`CALL_SLOWDOWN_ENV`] in parts per million (an integer keeps the hooks `Eq`).
    pub call_slowdown_ppm: Option<u64>,
    /// [`PAUSE_BEFORE_COMMIT_ENV`]: how long `run` waits between staging and committing its result.
    pub pause_before_commit: Option<Duration>,
    /// Kept as text: the matrix hands it on unchanged and records it in the candidate's command.
    pub matrix_candidate_delay_us: Option<String>,
    /// [`MATRIX_CANDIDATE_SLOWDOWN_ENV`], kept as text to hand on unchanged.
    pub matrix_candidate_slowdown: Option<String>,
    /// [`MATRIX_ABORT_ROW_ENV`]: the matrix row id whose task dies before writing a result.
    pub matrix_abort_row: Option<String>,
    /// [`SLOW_NODE_ENV`]: the node name prefix and the busy wait after it.
    pub slow_node: Option<(String, Duration)>,
    /// Kept as text: handed on unchanged to the candidates' `run` as [`SLOW_NODE_ENV`].
    pub matrix_candidate_slow_node: Option<String>,
    /// [`MATRIX_PROFILE_FAIL_ROW_ENV`]: the matrix row id whose reference profiling pass fails.
    pub matrix_profile_fail_row: Option<String>,
    /// [`TUNE_ABORT_ROUTE_ENV`]: the tune route whose task dies before writing a result.
    pub tune_abort_route: Option<String>,
}

impl TestHooks {
    /// The hooks of this process's environment (all off unless `TRTMC_TEST=1`).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The hooks as `lookup` reports the variables (all off unless `TRTMC_TEST` is `1`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        if lookup(TEST_ENV).as_deref() != Some("1") {
            return Self::default();
        }
        let number = |name: &str| lookup(name).and_then(|v| v.trim().parse::<u64>().ok());
        let text = |name: &str| lookup(name).filter(|v| !v.is_empty());
        TestHooks {
            enabled: true,
            call_delay: number(CALL_DELAY_ENV).map(Duration::from_micros),
            call_slowdown_ppm: lookup(CALL_SLOWDOWN_ENV)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| (f * 1e6).round() as u64),
            pause_before_commit: number(PAUSE_BEFORE_COMMIT_ENV).map(Duration::from_millis),
            matrix_candidate_delay_us: text(MATRIX_CANDIDATE_DELAY_ENV),
            matrix_candidate_slowdown: text(MATRIX_CANDIDATE_SLOWDOWN_ENV),
            matrix_abort_row: text(MATRIX_ABORT_ROW_ENV),
            slow_node: text(SLOW_NODE_ENV).as_deref().and_then(parse_slow_node),
            matrix_candidate_slow_node: text(MATRIX_CANDIDATE_SLOW_NODE_ENV),
            matrix_profile_fail_row: text(MATRIX_PROFILE_FAIL_ROW_ENV),
            tune_abort_route: text(TUNE_ABORT_ROUTE_ENV),
        }
    }

    /// Makes `hooks` this process's hooks ([`TestHooks::current`]); `main` calls it first, with
    /// [`TestHooks::from_env`]. A second call keeps the first value.
    pub fn install(hooks: TestHooks) -> &'static TestHooks {
        CURRENT.get_or_init(|| hooks)
    }

    /// This process's hooks: what `main` installed (read from the environment on first use where no
    /// `main` ran, as in unit tests).
    pub fn current() -> &'static TestHooks {
        CURRENT.get_or_init(Self::from_env)
    }

    /// Refuses a profile whose operation belongs to the test suite (crash, hang, no-op, …) unless the
    /// test harness runs this process.
    pub fn check_operation(&self, profile: &Profile) -> Result<(), TestOnlyOperation> {
        let Some(op) = profile.operation.as_deref().and_then(operations::operation) else {
            return Ok(());
        };
        if !op.test_only || self.enabled {
            return Ok(());
        }
        Err(TestOnlyOperation {
            model: profile.name.clone(),
            task_strategy: profile.task_strategy.clone(),
            operation: op.name,
            manifest: profile.manifest.clone(),
        })
    }
}

/// A model whose operation belongs to the test suite, outside the test harness.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "model `{model}` (task_strategy `{task_strategy}`) runs `{operation}`, a test-only operation of trtmc's own test suite; it runs only under the test harness ({TEST_ENV}=1). Pick another task_strategy in {}",
    manifest.display()
)]
pub struct TestOnlyOperation {
    /// The profile's name.
    pub model: String,
    /// The profile's task strategy, which maps to the test-only operation.
    pub task_strategy: String,
    /// The test-only operation's name.
    pub operation: &'static str,
    /// The model's MODEL.toml.
    pub manifest: std::path::PathBuf,
}

/// `NODE=MICROSECONDS` (the node name prefix must not be empty).
fn parse_slow_node(text: &str) -> Option<(String, Duration)> {
    let (node, us) = text.rsplit_once('=')?;
    let us: u64 = us.trim().parse().ok()?;
    (!node.is_empty()).then(|| (node.to_string(), Duration::from_micros(us)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn hooks(vars: &[(&str, &str)]) -> TestHooks {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TestHooks::from_lookup(|k| vars.get(k).cloned())
    }

    #[test]
    fn hooks_are_off_without_the_test_harness() {
        let set = [
            (CALL_DELAY_ENV, "20000"),
            (PAUSE_BEFORE_COMMIT_ENV, "5"),
            (MATRIX_CANDIDATE_DELAY_ENV, "7"),
            (CALL_SLOWDOWN_ENV, "0.3"),
            (MATRIX_CANDIDATE_SLOWDOWN_ENV, "0.3"),
            (MATRIX_ABORT_ROW_ENV, "row"),
            (TUNE_ABORT_ROUTE_ENV, "route"),
        ];
        assert_eq!(hooks(&set), TestHooks::default());
        let mut other = set.to_vec();
        other.push((TEST_ENV, "yes"));
        assert_eq!(hooks(&other), TestHooks::default(), "only `1` enables");
    }

    #[test]
    fn hooks_are_read_under_the_test_harness() {
        let h = hooks(&[
            (TEST_ENV, "1"),
            (CALL_DELAY_ENV, "20000"),
            (PAUSE_BEFORE_COMMIT_ENV, "5"),
            (MATRIX_CANDIDATE_DELAY_ENV, "7"),
            (CALL_SLOWDOWN_ENV, "0.3"),
            (MATRIX_CANDIDATE_SLOWDOWN_ENV, "0.1"),
            (MATRIX_ABORT_ROW_ENV, ""),
        ]);
        assert_eq!(h.call_slowdown_ppm, Some(300_000));
        assert_eq!(h.matrix_candidate_slowdown.as_deref(), Some("0.1"));
        assert!(h.enabled);
        assert_eq!(h.call_delay, Some(Duration::from_millis(20)));
        assert_eq!(h.pause_before_commit, Some(Duration::from_millis(5)));
        assert_eq!(h.matrix_candidate_delay_us.as_deref(), Some("7"));
        assert_eq!(h.matrix_abort_row, None, "an empty value is no hook");
        assert_eq!(
            hooks(&[(TEST_ENV, "1"), (TUNE_ABORT_ROUTE_ENV, "-threads=2")]).tune_abort_route,
            Some("-threads=2".to_string())
        );
        assert_eq!(
            hooks(&[(TUNE_ABORT_ROUTE_ENV, "-threads=2")]).tune_abort_route,
            None
        );
        let slow = hooks(&[(TEST_ENV, "1"), (SLOW_NODE_ENV, "n3_maxpool_4=2500")]);
        assert_eq!(
            slow.slow_node,
            Some(("n3_maxpool_4".to_string(), Duration::from_micros(2500)))
        );
        assert_eq!(
            hooks(&[(TEST_ENV, "1"), (SLOW_NODE_ENV, "=5")]).slow_node,
            None,
            "a node is named"
        );
        assert_eq!(hooks(&[(SLOW_NODE_ENV, "a=5")]).slow_node, None);
        assert_eq!(
            hooks(&[(TEST_ENV, "1"), (CALL_DELAY_ENV, "soon")]).call_delay,
            None
        );
    }

    fn profile(task_strategy: &str) -> Profile {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("MODEL.toml"),
            format!(
                "name = \"p\"\nsummary = \"s\"\ntask_strategy = \"{task_strategy}\"\ntest_manifests = [\"cases.toml\"]\n[source]\nnone = true\n"
            ),
        )
        .expect("write");
        std::fs::write(
            dir.path().join("cases.toml"),
            "[[case]]\nname = \"default\"\n",
        )
        .expect("write");
        crate::catalog::load_profile(&dir.path().join("MODEL.toml"))
    }

    #[test]
    fn test_operations_are_refused_outside_the_test_harness() {
        let crash = profile("test_crash");
        assert!(crash.status.is_ready(), "{:?}", crash.status);
        let message = TestHooks::default()
            .check_operation(&crash)
            .expect_err("refused")
            .to_string();
        assert!(
            message.contains("model `p`")
                && message.contains("`test_crash`, a test-only operation")
                && message.contains("TRTMC_TEST=1"),
            "{message}"
        );
        let harness = hooks(&[(TEST_ENV, "1")]);
        assert_eq!(harness.check_operation(&crash), Ok(()));
        assert_eq!(
            TestHooks::default().check_operation(&profile("onnx_inference")),
            Ok(())
        );
    }
}
