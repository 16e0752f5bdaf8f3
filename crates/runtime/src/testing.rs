//! The test suite's hooks on a loaded session (docs/architecture.md, *Test hooks*).
//!
//! A hook is chosen once, where the worker loads the bundle ([`with_hooks`]): without one the session
//! is the runtime's own, untouched, so no runtime carries test code in its run and a timed call of a
//! user's measurement holds nothing but the runtime's call.

use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::profile::LayerProfile;
use crate::protocol::WorkerHooks;
use crate::runtime::Session;
use crate::tensor::{HostTensor, TensorSpec};

/// `session`, decorated with the hooks of a worker request ([`SlowNode`] for `hooks.slow_node`);
/// `session` itself when the request has none.
pub fn with_hooks(session: Box<dyn Session>, hooks: Option<&WorkerHooks>) -> Box<dyn Session> {
    match hooks.and_then(|h| h.slow_node.as_ref()) {
        Some(slow) => Box::new(SlowNode {
            inner: session,
            node: slow.node.clone(),
            wait: Duration::from_micros(slow.micros),
        }),
        None => session,
    }
}

/// A session made slower in one known node (`TRTMC_TEST_SLOW_NODE`, the matrix's candidate whose
/// explanation must name that node). Every run busy-waits `wait` after the inner run, so a timed call
/// is slower by `wait` per run; a profile adds `wait` to every run of its first layer whose name starts
/// with `node`, so the profile puts the slowdown in that node. The wait itself is not inside the node:
/// what the hook simulates is the node being that much slower, and both views say so.
pub struct SlowNode {
    /// The session that does the work.
    pub inner: Box<dyn Session>,
    /// A prefix of the layer's name as the session's profile reports it.
    pub node: String,
    /// The extra time per run.
    pub wait: Duration,
}

impl Session for SlowNode {
    fn inputs(&self) -> &[TensorSpec] {
        self.inner.inputs()
    }

    fn outputs(&self) -> &[TensorSpec] {
        self.inner.outputs()
    }

    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>> {
        let outputs = self.inner.run(inputs)?;
        busy_wait(self.wait);
        Ok(outputs)
    }

    fn profile_start(&mut self) -> anyhow::Result<()> {
        self.inner.profile_start()
    }

    fn profile_finish(&mut self) -> anyhow::Result<LayerProfile> {
        let mut profile = self.inner.profile_finish()?;
        slow_layer(&mut profile, &self.node, self.wait)?;
        Ok(profile)
    }
}

/// Adds `wait` to every run of the first layer of `profile` whose name starts with `node`.
fn slow_layer(profile: &mut LayerProfile, node: &str, wait: Duration) -> anyhow::Result<()> {
    let layer = profile
        .layers
        .iter_mut()
        .find(|l| l.name.starts_with(node))
        .with_context(|| {
            format!(
                "the slow-node test hook names `{node}…`, and {}'s profile has no such layer",
                profile.runtime
            )
        })?;
    let ms = wait.as_secs_f64() * 1e3;
    for run in &mut layer.run_ms {
        *run += ms;
    }
    Ok(())
}

/// Spins for `wait`: a sleep would idle the core, which changes what the next call costs, and add the
/// scheduler's wake-up time.
pub fn busy_wait(wait: Duration) {
    let started = Instant::now();
    while started.elapsed() < wait {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfiledLayer;
    use crate::protocol::SlowNode as SlowNodeHook;

    /// A session that returns its inputs and profiles two layers at 1 ms per run.
    #[derive(Default)]
    struct Echo {
        runs: u64,
        started: bool,
    }

    impl Session for Echo {
        fn inputs(&self) -> &[TensorSpec] {
            &[]
        }
        fn outputs(&self) -> &[TensorSpec] {
            &[]
        }
        fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>> {
            self.runs += u64::from(self.started);
            Ok(inputs)
        }
        fn profile_start(&mut self) -> anyhow::Result<()> {
            self.started = true;
            Ok(())
        }
        fn profile_finish(&mut self) -> anyhow::Result<LayerProfile> {
            let layer = |name: &str| ProfiledLayer {
                name: name.to_string(),
                layer_type: "Op".to_string(),
                inputs: Vec::new(),
                outputs: Vec::new(),
                run_ms: vec![1.0; self.runs as usize],
                extra: serde_json::Map::new(),
            };
            Ok(LayerProfile {
                runtime: "echo".to_string(),
                runs: self.runs,
                layers: vec![layer("conv_1"), layer("pool_2.step"), layer("pool_2b")],
                bindings: Vec::new(),
            })
        }
    }

    fn hooks(node: &str, micros: u64) -> WorkerHooks {
        WorkerHooks {
            slow_node: Some(SlowNodeHook {
                node: node.to_string(),
                micros,
            }),
            ..WorkerHooks::default()
        }
    }

    #[test]
    fn a_session_without_the_hook_is_left_as_it_is() {
        let session: Box<dyn Session> = Box::new(Echo::default());
        let address = |s: &dyn Session| s as *const dyn Session as *const ();
        let before = address(session.as_ref());
        let kept = with_hooks(session, None);
        assert_eq!(address(kept.as_ref()), before);
        let other = WorkerHooks {
            call_delay_us: Some(5),
            ..WorkerHooks::default()
        };
        let kept = with_hooks(kept, Some(&other));
        assert_eq!(
            address(kept.as_ref()),
            before,
            "the call delay is the runner's"
        );
    }

    #[test]
    fn every_run_waits_and_the_named_layer_carries_the_wait() {
        let mut session = with_hooks(Box::new(Echo::default()), Some(&hooks("pool_2", 3000)));
        let started = Instant::now();
        session.run(Vec::new()).expect("warm-up");
        assert!(started.elapsed() >= Duration::from_millis(3));
        session.profile_start().expect("start");
        for _ in 0..2 {
            session.run(Vec::new()).expect("run");
        }
        let profile = session.profile_finish().expect("finish");
        assert_eq!(profile.runs, 2);
        let ms: Vec<(&str, &[f64])> = profile
            .layers
            .iter()
            .map(|l| (l.name.as_str(), l.run_ms.as_slice()))
            .collect();
        assert_eq!(
            ms,
            [
                ("conv_1", &[1.0, 1.0][..]),
                ("pool_2.step", &[4.0, 4.0][..]),
                ("pool_2b", &[1.0, 1.0][..]),
            ],
            "the first layer named so, in every run"
        );
    }

    #[test]
    fn a_profile_without_the_named_layer_is_an_error() {
        let mut session = with_hooks(Box::new(Echo::default()), Some(&hooks("relu", 1)));
        session.profile_start().expect("start");
        session.run(Vec::new()).expect("run");
        let e = session.profile_finish().expect_err("no such layer");
        assert_eq!(
            e.to_string(),
            "the slow-node test hook names `relu…`, and echo's profile has no such layer"
        );
    }
}
