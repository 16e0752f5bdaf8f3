//! Shared helpers for the integration tests: where the recorded fixtures are, and the stand-in.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `TRTMC_FIXTURES` if set, else the vendored `<repo>/tests/fixtures`. Panics with a clear message when
/// the folder is missing: these tests must never pass by skipping.
pub fn fixtures_dir() -> PathBuf {
    let dir = match std::env::var_os("TRTMC_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures"),
    };
    assert!(
        dir.join("trtexec-logs").is_dir(),
        "the recorded trtexec fixtures are missing: expected {}/trtexec-logs. Set TRTMC_FIXTURES to \
         a copy of the fixtures folder (it holds trtexec-logs/, trex/, trtexec-other/)",
        dir.display()
    );
    dir
}

/// A file under the fixtures folder, e.g. `trtexec-logs/x.log`; panics if absent.
pub fn fixture(relative: &str) -> PathBuf {
    let path = fixtures_dir().join(relative);
    assert!(path.is_file(), "fixture {} is missing", path.display());
    path
}

/// The text of a recorded trtexec log from `trtexec-logs/`.
pub fn log_text(name: &str) -> String {
    read(&fixture(&format!("trtexec-logs/{name}")))
}

/// A synthetic log shipped with this crate (`tests/data/`).
pub fn data(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    assert!(path.is_file(), "test data {} is missing", path.display());
    path
}

pub fn read(path: &Path) -> String {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The stand-in trtexec (crates/trtexec-standin), built into the workspace's target folder by a
/// workspace build (beside this test's binary, or in `target/<profile>` when the build folder is
/// elsewhere).
pub fn standin() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let profile = profile_dir.file_name().unwrap_or_default();
    let candidates = [
        profile_dir.join("trtexec-standin"),
        target.join(profile).join("trtexec-standin"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{} is missing: run `cargo build --workspace --tests` first",
                candidates[0].display()
            )
        })
}
