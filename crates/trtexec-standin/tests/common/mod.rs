//! Helpers for the tests that run the built `trtexec-standin` in simulate mode.
#![allow(dead_code)] // each test binary uses a different subset

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use trtmc_trtexec::{ParsedLog, parse_log};

/// The simulator binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_trtexec-standin"))
}

/// How a run ended.
#[derive(Debug)]
pub struct Run {
    /// `None` when it timed out and was killed.
    pub status: Option<ExitStatus>,
    /// stdout and stderr, interleaved as written (one file, like trtmc's runner).
    pub log: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    pub fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.status.and_then(|s| s.signal())
    }

    pub fn parsed(&self) -> ParsedLog {
        parse_log(&self.log)
    }

    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code(), Some(code), "log:\n{}", self.log);
        self
    }

    #[track_caller]
    pub fn assert_passed(&self) -> &Self {
        self.assert_code(0);
        assert_eq!(
            self.parsed().outcome(),
            Some(trtmc_trtexec::RunStatus::Passed),
            "log:\n{}",
            self.log
        );
        self
    }
}

/// A simulator invocation in a scratch folder, with a clean simulator environment.
pub struct Sim {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
}

impl Sim {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            env: Vec::new(),
        }
    }

    /// A simulator for TensorRT `encoded` (`TRTMC_SIM_VERSION`).
    pub fn version(encoded: u64) -> Self {
        let mut sim = Self::new();
        sim.set("TRTMC_SIM_VERSION", encoded);
        sim
    }

    pub fn set(&mut self, key: &str, value: impl ToString) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Writes a `TRTMC_SIM_CONFIG` file with this JSON and uses it.
    pub fn config(&mut self, json: &str) -> &mut Self {
        let path = self.path("sim-config.json");
        std::fs::write(&path, json).expect("write config");
        self.set("TRTMC_SIM_CONFIG", path.display())
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `--flag=<scratch>/name`
    pub fn arg(&self, flag: &str, name: &str) -> String {
        format!("{flag}={}", self.path(name).display())
    }

    fn command(&self, args: &[String], log: &Path) -> Child {
        let out = File::create(log).expect("log file");
        let err = out.try_clone().expect("share log");
        let mut command = Command::new(bin());
        command
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        for key in [
            "TRTMC_STANDIN_LOG",
            "TRTMC_STANDIN_ARGV",
            "TRTMC_SIM_VERSION",
            "TRTMC_SIM_CONFIG",
            "TRTMC_SIM_CALLS",
        ] {
            command.env_remove(key);
        }
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command.spawn().expect("start the simulator")
    }

    /// Runs to completion (or kills it after `timeout`).
    pub fn run_with_timeout(&self, args: &[String], timeout: Duration) -> Run {
        let log = self.dir.path().join(format!(
            "run-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let started = Instant::now();
        let mut child = self.command(args, &log);
        let status = loop {
            match child.try_wait().expect("wait") {
                Some(status) => break Some(status),
                None if started.elapsed() > timeout => {
                    child.kill().expect("kill");
                    let _ = child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let elapsed = started.elapsed();
        let bytes = std::fs::read(&log).expect("read log");
        Run {
            status,
            log: String::from_utf8_lossy(&bytes).into_owned(),
            elapsed,
        }
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.run_with_timeout(&args, Duration::from_secs(120))
    }

    pub fn run_owned(&self, args: &[String]) -> Run {
        self.run_with_timeout(args, Duration::from_secs(120))
    }

    /// Writes a built-in trtmc model (`tiny-cnn`, `tiny-encoder`, ...) as `<name>.onnx`.
    pub fn model(&self, name: &str) -> PathBuf {
        let bytes = trtmc_modelgen::generate(name, trtmc_modelgen::DEFAULT_SEED).expect("model");
        let path = self.path(&format!("{name}.onnx"));
        std::fs::write(&path, bytes).expect("write model");
        path
    }

    /// Builds `engine` from `model` with extra arguments; asserts it passed.
    pub fn build(&self, model: &Path, engine: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            format!("--onnx={}", model.display()),
            self.arg("--saveEngine", engine),
            "--skipInference".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let run = self.run_owned(&args);
        run.assert_passed();
        run
    }

    /// A timing run of `engine`, `iterations` queries, no duration, times exported to
    /// `<engine>.times.json`.
    pub fn time(&self, engine: &str, iterations: u64, extra: &[&str]) -> Run {
        let mut args = vec![
            self.arg("--loadEngine", engine),
            format!("--iterations={iterations}"),
            "--duration=0".to_string(),
            self.arg("--exportTimes", &format!("{engine}.times.json")),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        self.run_owned(&args)
    }

    /// The engine document.
    pub fn engine(&self, name: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.path(name)).expect("engine file");
        serde_json::from_str(&text).expect("engine JSON")
    }

    /// An executable script that runs the simulator with this simulator's environment, for
    /// drivers that only take a program path.
    pub fn wrapper(&self) -> PathBuf {
        let mut script = String::from("#!/bin/sh\nunset TRTMC_STANDIN_LOG\n");
        for (k, v) in &self.env {
            script.push_str(&format!("{k}='{v}'\nexport {k}\n"));
        }
        script.push_str(&format!("exec '{}' \"$@\"\n", bin().display()));
        let path = self.path("trtexec");
        trtmc_testkit::write_script(&path, &script);
        path
    }
}

/// Mean of the `computeMs` of an `--exportTimes` file.
pub fn mean_compute(path: &Path) -> f64 {
    let times = trtmc_trtexec::read_times(path).expect("exportTimes parses");
    times.iter().map(|q| q.compute_ms).sum::<f64>() / times.len() as f64
}

/// The fixtures folder of the repository.
pub fn fixture(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(relative);
    assert!(path.is_file(), "fixture {} is missing", path.display());
    path
}
