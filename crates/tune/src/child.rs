//! The child side of a route: `trtmc-bench tune-worker` builds one bundle, or serves one loaded bundle
//! (outputs for the accuracy gate, timed measurements) until told to quit. Each route gets its own
//! processes, so a runtime that crashes, aborts or hangs takes only its route down.
//!
//! Measurements reuse the worker's pieces: the operation's timed runner (`ops::prepare`) and the timed loop
//! (`worker::timed_loop`), in which nothing but the call happens between the two clock reads.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use trtmc_runtime::bundle::{BuildPlan, BundleManifest, build_bundle};
use trtmc_runtime::ops::{self, CallRecord, RunnerContext, TimedRunner};
use trtmc_runtime::outputs::{
    build_dims, from_tensor, run_session, synthesize_inputs, write_tensor_set,
};
use trtmc_runtime::registry;
use trtmc_runtime::runtime::{Runtime, RuntimeOptions, SelfTimedRequest, Session};
use trtmc_runtime::tensor::{HostTensor, TensorSpec};
use trtmc_trtexec::TrtexecError;

use crate::protocol::{CHILD_REQUEST_SCHEMA, ChildMode, ChildRequest, Command, Response};
use crate::testing;

/// Entry point of `trtmc-bench tune-worker`: reads the request from stdin, answers on stdout. Returns the
/// exit code (0 when the last answer was ok).
pub fn main() -> i32 {
    let first = std::io::stdin().lock().lines().next();
    let mut out = std::io::stdout().lock();
    let request: ChildRequest = match first {
        Some(Ok(line)) => match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                return answer(
                    &mut out,
                    &Response::failed(format!("malformed tune-worker request: {e}")),
                );
            }
        },
        _ => {
            return answer(
                &mut out,
                &Response::failed(
                    "tune-worker: no request on stdin (it is started by `trtmc-bench tune`)",
                ),
            );
        }
    };
    if request.schema != CHILD_REQUEST_SCHEMA {
        return answer(
            &mut out,
            &Response::failed(format!(
                "tune-worker request has schema `{}`, expected `{CHILD_REQUEST_SCHEMA}` (the tuner and the worker come from different builds)",
                request.schema
            )),
        );
    }
    eprintln!("tune-worker {:?}: route {}", request.mode, request.route);
    let commands = follow_the_tuner();
    match request.mode {
        ChildMode::Build => {
            let response = build(&request);
            answer(&mut out, &response)
        }
        ChildMode::Serve => serve(&request, commands.into_iter().map(Ok), &mut out),
    }
}

/// How long a worker whose tuner is gone may take to return on its own before it ends itself.
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// Reads the tuner's commands on a thread. Standard input is the liveness pipe (as for `run`'s
/// worker): its end means the tuner quit or died, even by SIGKILL. An idle worker then returns on its
/// own (the command channel closes); one that is building or measuring is ended [`ORPHAN_GRACE`] later
/// with whatever it started (it leads its own process group), so nothing measures for a dead tuner.
fn follow_the_tuner() -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("tuner-pipe".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    return;
                }
            }
            drop(tx);
            std::thread::sleep(ORPHAN_GRACE);
            eprintln!("tune-worker: the tuner is gone (its pipe closed); stopping");
            let me = rustix::process::getpid();
            if rustix::process::getpgrp() == me {
                let _ = rustix::process::kill_process_group(me, rustix::process::Signal::KILL);
            }
            std::process::exit(3);
        });
    if let Err(e) = spawned {
        eprintln!("tune-worker: cannot watch the tuner ({e})");
    }
    rx
}

fn answer(out: &mut impl Write, response: &Response) -> i32 {
    if let Some(e) = &response.error {
        eprintln!("tune-worker error: {e}");
    }
    let line = serde_json::to_string(response).unwrap_or_else(|e| {
        format!("{{\"ok\":false,\"error\":\"cannot encode the answer: {e}\"}}")
    });
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        return 1;
    }
    i32::from(!response.ok)
}

fn build(request: &ChildRequest) -> Response {
    if let Some(failed) = testing::build_fault(request.hooks.as_ref()) {
        return failed;
    }
    match build_inner(request) {
        Ok(response) => response,
        Err(e) => {
            // The build folder is gone; its logs were copied into the route's tool folder.
            let mut message = format!("{e:#}");
            if let (Some(tmp), Some(tool_dir)) = (
                build_folder(&request.bundle, &request.key, std::process::id()),
                &request.tool_dir,
            ) {
                message =
                    message.replace(&tmp.display().to_string(), &tool_dir.display().to_string());
            }
            Response {
                crashed: tool_crashed(&e),
                ..Response::failed(message)
            }
        }
    }
}

/// The runtime of the request, driving the request's trtexec.
fn open_runtime(request: &ChildRequest) -> anyhow::Result<Box<dyn Runtime>> {
    let options = RuntimeOptions {
        trtexec: request.trtexec.clone(),
        probe_cache: request.probe_cache.clone(),
    };
    registry::runtime_with(&request.runtime, &options).map_err(anyhow::Error::msg)
}

/// The runtime's tool died by a signal (trtexec's tuner counts that as a crash).
fn tool_crashed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<TrtexecError>()
            .is_some_and(TrtexecError::is_crash)
    })
}

/// The folder where the build child `pid` builds a bundle before moving it into place; a child
/// killed mid-build leaves it behind with the tool's log.
pub(super) fn build_folder(bundle: &Path, key: &str, pid: u32) -> Option<PathBuf> {
    let short = key.get(..16).unwrap_or(key);
    Some(bundle.parent()?.join(format!(".tmp-tune-{short}-{pid}")))
}

/// Copies the `*.log` files of a failed build's folder into the route's tool folder, which outlives it.
pub(super) fn keep_logs(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    if std::fs::create_dir_all(to).is_err() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().ends_with(".log") {
            let _ = std::fs::copy(entry.path(), to.join(&name));
        }
    }
}

fn build_inner(request: &ChildRequest) -> anyhow::Result<Response> {
    if matches!(BundleManifest::read(&request.bundle), Ok(m) if m.key == request.key) {
        return Ok(Response {
            ok: true,
            cached: Some(true),
            ..Response::default()
        });
    }
    let rt = open_runtime(request)?;
    rt.availability().map_err(anyhow::Error::msg)?;
    let tmp = build_folder(&request.bundle, &request.key, std::process::id())
        .context("the bundle path has no parent directory")?;
    if let Some(parent) = tmp.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        trtmc_runner::bundles::remove_stale_build_folders(parent);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let created = jiff::Timestamp::now().to_string();
    let plan = BuildPlan {
        key: &request.key,
        model: &request.model,
        onnx: &request.onnx,
        settings: &request.build_settings,
        command_line: &request.command_line,
        created: &created,
        source_commit: None,
    };
    let started = Instant::now();
    if let Err(e) = build_bundle(rt.as_ref(), &plan, &tmp) {
        if let Some(tool_dir) = &request.tool_dir {
            keep_logs(&tmp, tool_dir);
        }
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e.context(format!(
            "runtime `{}` could not build the route's bundle",
            rt.name()
        )));
    }
    let seconds = started.elapsed().as_secs_f64();
    if std::fs::rename(&tmp, &request.bundle).is_err() {
        // Another tune built the same key meanwhile: keep its bundle when it is complete.
        let _ = std::fs::remove_dir_all(&tmp);
        match BundleManifest::read(&request.bundle) {
            Ok(m) if m.key == request.key => {}
            _ => anyhow::bail!(
                "cannot move the built bundle into {} (remove that directory, or use another --bundle-cache)",
                request.bundle.display()
            ),
        }
    }
    Ok(Response {
        ok: true,
        cached: Some(false),
        build_seconds: Some(seconds),
        ..Response::default()
    })
}

struct Served<'a> {
    request: &'a ChildRequest,
    rt: Box<dyn Runtime>,
    manifest: BundleManifest,
    runner: Option<Box<dyn TimedRunner>>,
}

fn serve(
    request: &ChildRequest,
    lines: impl Iterator<Item = std::io::Result<String>>,
    out: &mut impl Write,
) -> i32 {
    let opened = open_runtime(request).and_then(|rt| {
        let manifest = BundleManifest::read(&request.bundle).map_err(anyhow::Error::msg)?;
        Ok((rt, manifest))
    });
    let (rt, manifest) = match opened {
        Ok(v) => v,
        Err(e) => {
            // Answer every command with the error so the tuner reports it where it asked.
            let message = format!("{e:#}");
            let mut code = 1;
            for line in lines {
                if line.is_err() {
                    break;
                }
                code = answer(out, &Response::failed(message.clone()));
            }
            return code;
        }
    };
    let mut served = Served {
        request,
        rt,
        manifest,
        runner: None,
    };
    let mut code = 0;
    for line in lines {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let command: Command = match serde_json::from_str(&line) {
            Ok(c) => c,
            Err(e) => {
                code = answer(
                    out,
                    &Response::failed(format!("malformed tune-worker command: {e}")),
                );
                continue;
            }
        };
        let response = match command {
            Command::Quit => break,
            Command::Outputs { inputs, out_dir } => served.outputs(inputs.as_deref(), &out_dir),
            Command::Measure { warmup, calls } => served.measure(warmup, calls),
        };
        code = answer(
            out,
            &response.unwrap_or_else(|e| Response::failed(format!("{e:#}"))),
        );
    }
    code
}

impl Served<'_> {
    /// Where a self-timed runtime's tool writes this route's logs and exports.
    fn tool_dir(&self) -> anyhow::Result<&Path> {
        let dir = self
            .request
            .tool_dir
            .as_deref()
            .context("the tune-worker request names no folder for the tool's logs")?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    fn self_timed_request(
        &self,
        warmup: u64,
        iterations: u64,
    ) -> anyhow::Result<SelfTimedRequest<'_>> {
        Ok(SelfTimedRequest {
            bundle_dir: &self.request.bundle,
            manifest: &self.manifest,
            operation: &self.request.operation,
            settings: &self.request.runtime_settings,
            warmup,
            iterations,
            min_duration_s: 0.0,
            // The tuner enforces the route timeout by killing this worker's process group.
            timeout: Duration::from_secs(24 * 3600),
            case_dir: self.tool_dir()?,
            inputs: None,
        })
    }

    /// The inputs of the accuracy check: the given ones, else seeded ones (the same for every route).
    fn inputs(
        &self,
        specs: &[TensorSpec],
        given: Option<&Path>,
    ) -> anyhow::Result<Vec<(String, HostTensor)>> {
        let Some(index) = given else {
            let dims = build_dims(&self.request.build_settings);
            let tensors = synthesize_inputs(specs, self.request.input_seed, &dims)?;
            return Ok(specs.iter().map(|s| s.name.clone()).zip(tensors).collect());
        };
        let given = crate::golden::read_golden(index)?;
        let mut named = Vec::with_capacity(given.len());
        for spec in specs {
            let t = given
                .iter()
                .find(|t| t.name == spec.name)
                .with_context(|| {
                    let names: Vec<&str> = given.iter().map(|t| t.name.as_str()).collect();
                    format!(
                        "the model needs input `{}`, which --inputs does not have (it has: {})",
                        spec.name,
                        names.join(", ")
                    )
                })?;
            named.push((spec.name.clone(), from_tensor(t, spec.dtype)?));
        }
        Ok(named)
    }

    fn load(&self) -> anyhow::Result<Box<dyn Session>> {
        self.rt
            .load(
                &self.request.bundle,
                &self.manifest,
                &self.request.runtime_settings,
            )
            .with_context(|| format!("cannot load bundle {}", self.request.bundle.display()))
    }

    fn outputs(&mut self, inputs: Option<&Path>, out_dir: &Path) -> anyhow::Result<Response> {
        let outputs = match self.rt.self_timed() {
            Some(tool) => {
                let named = self.inputs(&self.manifest.inputs, inputs)?;
                tool.outputs(&self.self_timed_request(0, 1)?, &named)?
            }
            None => {
                let mut session = self.load()?;
                let named = self.inputs(session.inputs(), inputs)?;
                run_session(session.as_mut(), &named)?
            }
        };
        let index = write_tensor_set(out_dir, "outputs", &outputs)?;
        Ok(Response {
            ok: true,
            index: Some(index),
            ..Response::default()
        })
    }

    fn measure(&mut self, warmup: u64, calls: u64) -> anyhow::Result<Response> {
        testing::measure_fault(self.request.hooks.as_ref());
        if let Some(tool) = self.rt.self_timed() {
            // The tool owns the timed loop: one run of it per measurement, warm-up by its own rule.
            let run = tool.time(&self.self_timed_request(warmup, calls.max(1))?)?;
            return Ok(Response {
                ok: true,
                samples_ms: run
                    .observations
                    .iter()
                    .map(|o| o.wall_ns as f64 / 1e6)
                    .collect(),
                notes: run.warnings,
                ..Response::default()
            });
        }
        if self.runner.is_none() {
            let session = self.load()?;
            let ctx = RunnerContext {
                request: &self.request.request,
                session: Some(session),
                bundle: Some(&self.manifest),
                manifest_dir: self.request.manifest_dir.as_deref(),
                tokenizer: self.request.tokenizer.as_deref(),
                first_call: 0,
                data: None,
            };
            let runner = ops::prepare(ops::requested(&self.request.operation)?, ctx)?;
            self.runner = Some(testing::timed_runner(runner, self.request.hooks.as_ref()));
        }
        let runner = self
            .runner
            .as_mut()
            .context("the operation's runner was not prepared")?;
        let mut warmup_ms = Vec::with_capacity(warmup as usize);
        for _ in 0..warmup {
            let mut record = CallRecord::default();
            runner.prepare_call()?;
            let t0 = Instant::now();
            runner.call(&mut record).context("warm-up call failed")?;
            warmup_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            runner.verify()?;
        }
        let samples_ms = if calls == 0 {
            Vec::new()
        } else {
            trtmc_runtime::worker::timed_loop(runner.as_mut(), calls, Duration::ZERO)?
                .iter()
                .map(|c| c.wall.as_secs_f64() * 1e3)
                .collect()
        };
        Ok(Response {
            ok: true,
            warmup_ms,
            samples_ms,
            ..Response::default()
        })
    }
}
