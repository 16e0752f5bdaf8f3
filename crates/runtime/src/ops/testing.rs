//! Test-only operations: they let the test suite measure the harness and provoke failures.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::Value;

use super::{CallRecord, RunnerContext, TimedRunner};
use crate::testing::busy_wait;

/// Does nothing: the timed region holds only the dispatch.
pub struct Noop;

impl TimedRunner for Noop {
    #[inline(never)]
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        record.items = 1;
        Ok(())
    }
}

/// A test hook around a real runner: every call first waits for `delay`, then makes the real call, so
/// the delay is part of the measured time while the timed loop itself keeps nothing but the call
/// between its two clock reads (the matrix's injected slowdown, `tune`'s `-test:sleep_us`). The last
/// millisecond is a busy wait, not a sleep: a sleep overshoots by the timer slack (~50 µs on Linux),
/// which would turn a 10 % slowdown of a 0.3 ms call into 30 %, and it idles the core, which changes
/// what the real call costs.
///
/// `slowdown` (a fraction) then busy-waits that fraction of the real call's own duration after it: a
/// runtime exactly that much slower, whatever the machine's speed at the moment.
pub struct Delayed<R> {
    /// The real runner.
    pub inner: R,
    /// The wait before each call.
    pub delay: Duration,
    /// The extra busy wait after each call, as a fraction of that call's own duration.
    pub slowdown: f64,
}

impl<R: TimedRunner> TimedRunner for Delayed<R> {
    fn call(&mut self, record: &mut CallRecord) -> anyhow::Result<()> {
        let started = Instant::now();
        // Long delays (tune's sleepy test routes) sleep most of the way, so tests do not burn a core.
        if let Some(coarse) = self.delay.checked_sub(Duration::from_millis(1)) {
            std::thread::sleep(coarse);
        }
        busy_wait(self.delay.saturating_sub(started.elapsed()));
        if self.slowdown <= 0.0 {
            return self.inner.call(record);
        }
        let call_started = Instant::now();
        let result = self.inner.call(record);
        busy_wait(call_started.elapsed().mul_f64(self.slowdown));
        result
    }
    fn reference_inputs(&self) -> super::ReferenceInputs {
        self.inner.reference_inputs()
    }
    fn prepare_call(&mut self) -> anyhow::Result<()> {
        self.inner.prepare_call()
    }
    fn prepare_all(&mut self) -> anyhow::Result<()> {
        self.inner.prepare_all()
    }
    fn verify(&mut self) -> anyhow::Result<()> {
        self.inner.verify()
    }
    fn notes(&self) -> BTreeMap<String, Value> {
        self.inner.notes()
    }
}

pub struct Sleep(Duration);

impl Sleep {
    /// `sleep_us`, swung by `swing_pct` percent: up in a worker whose first call has an odd number,
    /// down in one whose first is even. With one call per round its rounds alternate, so a comparison
    /// with a steady case never decides (the test of a run that stops at its budget).
    pub fn prepare(ctx: &RunnerContext<'_>) -> anyhow::Result<Self> {
        let sleep_us = ctx.int("sleep_us")?.max(0) as f64;
        // Optional: a worker request written by hand may leave it out.
        let swing = match ctx.request.get("swing_pct") {
            Some(_) => ctx.int("swing_pct")?.clamp(0, 100) as f64 / 100.0,
            None => 0.0,
        };
        let factor = if ctx.first_call % 2 == 1 {
            1.0 + swing
        } else {
            1.0 - swing
        };
        Ok(Self(Duration::from_micros((sleep_us * factor) as u64)))
    }
}

impl TimedRunner for Sleep {
    fn call(&mut self, _: &mut CallRecord) -> anyhow::Result<()> {
        std::thread::sleep(self.0);
        Ok(())
    }
}

/// Aborts the process (SIGABRT) on call number `after_calls + 1`, warm-ups included.
pub struct Crash {
    remaining: i64,
}

impl Crash {
    pub fn prepare(ctx: &RunnerContext<'_>) -> anyhow::Result<Self> {
        Ok(Self {
            remaining: ctx.int("after_calls")?,
        })
    }
}

impl TimedRunner for Crash {
    fn call(&mut self, _: &mut CallRecord) -> anyhow::Result<()> {
        if self.remaining <= 0 {
            eprintln!("test_crash: aborting the worker on purpose");
            std::process::abort();
        }
        self.remaining -= 1;
        Ok(())
    }
}

/// Blocks forever on call number `after_calls + 1`.
pub struct Hang {
    remaining: i64,
}

impl Hang {
    pub fn prepare(ctx: &RunnerContext<'_>) -> anyhow::Result<Self> {
        Ok(Self {
            remaining: ctx.int("after_calls")?,
        })
    }
}

impl TimedRunner for Hang {
    fn call(&mut self, _: &mut CallRecord) -> anyhow::Result<()> {
        if self.remaining <= 0 {
            eprintln!("test_hang: blocking forever on purpose");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        self.remaining -= 1;
        Ok(())
    }
}

/// Produces a NaN output on every call.
pub struct Nan;

impl TimedRunner for Nan {
    fn call(&mut self, _: &mut CallRecord) -> anyhow::Result<()> {
        Ok(())
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        let output = [f32::NAN];
        if output.iter().any(|x| !x.is_finite()) {
            bail!(
                "output `test` holds non-finite values (NaN or infinity): the run is a failure, not a result"
            );
        }
        Ok(())
    }
}
