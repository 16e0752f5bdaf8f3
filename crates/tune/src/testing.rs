//! The test-only knobs of `tune` (`-test:*`, trtmc's own test suite) and what they do in a route's
//! child. They exist only under the test harness (`TRTMC_TEST=1`, read once by `main` into
//! `trtmc_core::test_hooks`): [`with_test_knobs`] adds them to the knob set then, and nowhere else.
//!
//! A route's test knobs travel to its child as one optional value, [`ChildHooks`], absent from every
//! request (and so from every Slurm task list) outside the test harness; the child decides once, as it
//! builds or prepares its runner, whether a hook acts.

use std::time::Duration;

use trtmc_runtime::ops::{self, TimedRunner};

use crate::KnobSet;
use crate::knobs::{KnobDatabase, KnobDbError, KnobOption};
use crate::protocol::{ChildHooks, Response};
use crate::runtime_knobs::RouteSettingError;

/// Set to `1` by the test harness; only then do the `-test:*` knobs exist and act.
pub use trtmc_core::test_hooks::TEST_ENV;

/// True when this process runs under the test harness: the hooks `main` read say so
/// (`trtmc_core::test_hooks`; nothing here reads the environment).
pub fn test_mode() -> bool {
    trtmc_core::test_hooks::TestHooks::current().enabled
}

/// Knob name prefix of the test-only knobs.
pub const TEST_PREFIX: &str = "-test:";

/// Faults a `-test:fault` knob injects into a route's child process (tests only).
pub const FAULTS: &[&str] = &[
    "none",
    "crash_build",
    "hang_build",
    "fail_build",
    "crash_measure",
];

fn option(name: &str, allowed: &str, default: &str, help: &str) -> KnobOption {
    KnobOption {
        option: name.to_string(),
        allowed_values: format!("{name}={allowed}"),
        default_value: default.to_string(),
        help: help.to_string(),
    }
}

/// The test-only knobs (present when `TRTMC_TEST=1`).
pub fn test_knob_db() -> KnobDatabase {
    KnobDatabase {
        tuner_version: "trtmc-test 1".into(),
        tuner_options: vec![
            option(
                "-test:fault",
                &format!("[{}]", FAULTS.join("|")),
                "none",
                "tests only: make this route's child process crash, hang or fail while building, or crash while measuring",
            ),
            option(
                "-test:sleep_us",
                "[0|500|...]",
                "0",
                "tests only: sleep this many microseconds inside every timed call",
            ),
        ],
    }
}

/// Adds the test knobs to `set` when running under the test harness.
pub fn with_test_knobs(set: KnobSet) -> Result<KnobSet, KnobDbError> {
    if !test_mode() {
        return Ok(set);
    }
    let test = KnobSet::from_db(&test_knob_db(), "test")?;
    KnobSet::merge([set, test])
}

/// Records the route's test knob `knob=value` (`knob` starts with [`TEST_PREFIX`]) in `hooks`; refused
/// outside the test harness.
pub fn route_hook(
    knob: &str,
    value: &str,
    hooks: &mut ChildHooks,
) -> Result<(), RouteSettingError> {
    if !test_mode() {
        return Err(RouteSettingError::TestOnly {
            knob: knob.to_string(),
        });
    }
    match knob.strip_prefix(TEST_PREFIX) {
        Some("fault") if FAULTS.contains(&value) => {
            hooks.fault = (value != "none").then(|| value.to_string());
        }
        Some("sleep_us") => {
            hooks.sleep_us = value
                .parse()
                .map_err(|_| RouteSettingError::NotMicroseconds {
                    knob: knob.to_string(),
                    value: value.to_string(),
                })?;
        }
        _ => {
            return Err(RouteSettingError::UnknownTestKnob {
                knob: knob.to_string(),
                value: value.to_string(),
            });
        }
    }
    Ok(())
}

/// The hooks the child acts on: the request's, under the test harness only.
fn acting(hooks: Option<&ChildHooks>) -> Option<&ChildHooks> {
    hooks.filter(|_| test_mode())
}

/// A build fault the request asks for: `crash_build` aborts the child, `hang_build` blocks it until it
/// is killed, `fail_build` is the answer to give instead of building.
pub fn build_fault(hooks: Option<&ChildHooks>) -> Option<Response> {
    match acting(hooks)?.fault.as_deref()? {
        "crash_build" => {
            eprintln!("tune-worker: injected fault crash_build: aborting");
            std::process::abort();
        }
        "hang_build" => {
            eprintln!("tune-worker: injected fault hang_build: sleeping until killed");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        "fail_build" => Some(Response::failed("injected fault fail_build")),
        _ => None,
    }
}

/// Aborts the child when the request asks for `crash_measure`.
pub fn measure_fault(hooks: Option<&ChildHooks>) {
    if acting(hooks).and_then(|h| h.fault.as_deref()) == Some("crash_measure") {
        eprintln!("tune-worker: injected fault crash_measure: aborting");
        std::process::abort();
    }
}

/// `runner`, each of its calls made `sleep_us` longer (`ops::Delayed`) when the request asks for it.
pub fn timed_runner(
    runner: Box<dyn TimedRunner>,
    hooks: Option<&ChildHooks>,
) -> Box<dyn TimedRunner> {
    match acting(hooks).map(|h| h.sleep_us) {
        Some(us) if us > 0 => Box::new(ops::Delayed {
            inner: runner,
            delay: Duration::from_micros(us),
            slowdown: 0.0,
        }),
        _ => runner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_route_without_test_knobs_sends_no_hooks() {
        let value = |hooks: &ChildHooks| serde_json::to_value(hooks).expect("encode");
        assert_eq!(value(&ChildHooks::default()), json!({}));
        let fail = ChildHooks {
            fault: Some("fail_build".to_string()),
            sleep_us: 0,
        };
        assert_eq!(value(&fail), json!({"fault": "fail_build"}));
        let mut hooks = ChildHooks::default();
        let sleep = route_hook("-test:sleep_us", "200", &mut hooks);
        if test_mode() {
            sleep.expect("under the test harness");
            assert_eq!(hooks.sleep_us, 200);
            route_hook("-test:fault", "none", &mut hooks).expect("none");
            assert_eq!(hooks.fault, None, "`none` is no fault");
        } else {
            assert!(
                matches!(sleep, Err(RouteSettingError::TestOnly { .. })),
                "{sleep:?}"
            );
            assert_eq!(hooks, ChildHooks::default());
        }
    }
}
