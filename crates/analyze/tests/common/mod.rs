//! Shared helpers for the analyze crate's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The real trtexec fixtures: `$TRTMC_FIXTURES`, else the vendored `<repo>/tests/fixtures`. Missing
/// fixtures fail the test with a message instead of skipping it.
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRTMC_FIXTURES") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "TRTMC_FIXTURES={} is not a folder",
            dir.display()
        );
        return dir;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = repo.join("tests/fixtures");
    assert!(
        dir.is_dir(),
        "fixtures not found at {}: restore tests/fixtures from the repository or set TRTMC_FIXTURES to a copy",
        dir.display()
    );
    dir
}

pub fn fixture(rel: &str) -> PathBuf {
    let p = fixtures_dir().join(rel);
    assert!(p.is_file(), "missing fixture {}", p.display());
    p
}

/// The repository root (for schemas/).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn data(layers: &Path, profile: Option<&Path>) -> trtmc_analyze::Inputs {
    trtmc_analyze::Inputs::Data(vec![trtmc_analyze::DataSpec {
        layers: layers.to_owned(),
        profile: profile.map(Path::to_owned),
        times: None,
        label: None,
    }])
}

pub fn analyze(inputs: trtmc_analyze::Inputs) -> trtmc_analyze::Analysis {
    trtmc_analyze::analyze(&trtmc_analyze::Request {
        inputs,
        model_name: None,
    })
    .expect("structured analysis")
}
