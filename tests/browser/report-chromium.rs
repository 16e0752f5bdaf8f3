//! Headless Chromium helpers for report tests (Debian package `chromium`).
//!
//! Include from an integration test with
//! `#[path = "../../../tests/browser/report-chromium.rs"] mod chromium;` (the path is relative to the
//! test file). Every launch uses exactly the project's flags and a fresh temporary profile:
//! `--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
//! --no-first-run --user-data-dir=<fresh temp dir>`, plus the action's own flags (`--dump-dom`,
//! `--screenshot=…`, `--window-size=…`, `--enable-logging=stderr`).
//!
//! [`require`] fails the test when Chromium is missing, unless `TRTMC_SKIP_BROWSER=1` (then it returns
//! `None` and the test returns early). `TRTMC_CHROMIUM` names another binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const FLAGS: [&str; 6] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
];

/// Longest a single Chromium launch may take before the test fails.
const LIMIT: Duration = Duration::from_secs(120);

pub struct Chromium {
    pub bin: PathBuf,
}

/// What one launch printed, and how long it took.
pub struct Launch {
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
}

/// The Chromium binary, or `None` when it is missing and `TRTMC_SKIP_BROWSER=1`; panics otherwise.
pub fn require() -> Option<Chromium> {
    if let Some(bin) = find() {
        return Some(Chromium { bin });
    }
    if std::env::var_os("TRTMC_SKIP_BROWSER").is_some_and(|v| v == "1") {
        eprintln!("skipping the browser checks: chromium not found and TRTMC_SKIP_BROWSER=1");
        return None;
    }
    panic!(
        "chromium not found: install Debian's `chromium` package (apt-get install -y chromium), set TRTMC_CHROMIUM=/path/to/chromium, or set TRTMC_SKIP_BROWSER=1 to skip the browser checks"
    );
}

fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRTMC_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser", "google-chrome"].map(|n| dir.join(n)))
        .find(|p| p.is_file())
}

/// A file:// URL for a path (made absolute), with an optional fragment.
pub fn file_url(path: &Path, fragment: &str) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut url = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    if !fragment.is_empty() {
        url.push('#');
        url.push_str(fragment);
    }
    url
}

impl Chromium {
    /// Runs Chromium once with the project's flags, a fresh profile and `extra`.
    pub fn launch(&self, extra: &[&str], url: &str) -> Launch {
        let profile = tempfile::tempdir().expect("profile dir");
        let started = Instant::now();
        let mut child = Command::new(&self.bin)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        let read_out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
        let read_err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
        loop {
            match child.try_wait().expect("wait for chromium") {
                Some(_) => break,
                None if started.elapsed() > LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("chromium did not finish within {LIMIT:?} on {url}");
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        Launch {
            stdout: read_out.join().unwrap_or_default(),
            stderr: read_err.join().unwrap_or_default(),
            wall: started.elapsed(),
        }
    }

    /// The DOM after the page's scripts ran.
    pub fn dump_dom(&self, url: &str, extra: &[&str]) -> Launch {
        let mut flags = vec!["--dump-dom"];
        flags.extend_from_slice(extra);
        self.launch(&flags, url)
    }

    /// A screenshot to `png`, with console logging on stderr for [`console_problems`].
    pub fn screenshot(&self, url: &str, png: &Path, size: (u32, u32), extra: &[&str]) -> Launch {
        let shot = format!("--screenshot={}", png.display());
        let window = format!("--window-size={},{}", size.0, size.1);
        let mut flags = vec![
            "--enable-logging=stderr",
            "--v=0",
            shot.as_str(),
            window.as_str(),
        ];
        flags.extend_from_slice(extra);
        let launch = self.launch(&flags, url);
        let bytes = std::fs::read(png).unwrap_or_else(|e| {
            panic!("no screenshot at {}: {e}\n{}", png.display(), launch.stderr)
        });
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
            "screenshot {} is {} bytes",
            png.display(),
            bytes.len()
        );
        if let Some(keep) = std::env::var_os("TRTMC_KEEP_SCREENSHOTS") {
            let dir = PathBuf::from(keep);
            let _ = std::fs::create_dir_all(&dir);
            if let Some(name) = png.file_name() {
                let _ = std::fs::copy(png, dir.join(name));
            }
        }
        launch
    }
}

/// Console messages, uncaught exceptions and policy refusals in a `--enable-logging=stderr` log.
pub fn console_problems(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
                || l.contains("Failed to load resource")
        })
        .map(str::to_string)
        .collect()
}

/// The text of `#self-check` in a dumped DOM.
pub fn self_check(dom: &str) -> String {
    dom.split("id=\"self-check\"")
        .nth(1)
        .and_then(|rest| rest.split_once('>'))
        .and_then(|(_, rest)| rest.split('<').next())
        .unwrap_or("")
        .to_string()
}
