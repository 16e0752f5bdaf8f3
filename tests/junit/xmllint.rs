//! Validates JUnit XML against tests/junit/junit.xsd with libxml2's `xmllint` (Debian package
//! `libxml2-utils`, installed by scripts/test). Included by the tests that check `--export-junit`
//! with `#[path]`.
//!
//! A missing xmllint fails the test with the install command; `TRTMC_SKIP_XMLLINT=1` skips the schema
//! check on a developer machine, never under CI (`CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// tests/junit/junit.xsd.
pub fn junit_xsd() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/junit/junit.xsd")
}

/// Panics with xmllint's messages unless `xml` is well-formed and valid against junit.xsd.
pub fn assert_valid_junit(xml: &Path) {
    let xsd = junit_xsd();
    let program = std::env::var_os("TRTMC_XMLLINT").unwrap_or_else(|| "xmllint".into());
    let out = match Command::new(&program)
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(xml)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
            if !in_ci && std::env::var("TRTMC_SKIP_XMLLINT").is_ok_and(|v| v == "1") {
                eprintln!(
                    "skipping the JUnit schema check of {}: xmllint not found and TRTMC_SKIP_XMLLINT=1",
                    xml.display()
                );
                return;
            }
            panic!(
                "xmllint not found: install Debian's libxml2-utils (apt-get install -y libxml2-utils; \
                 scripts/test does) or set TRTMC_XMLLINT=/path/to/xmllint{}",
                if in_ci {
                    ""
                } else {
                    ", or TRTMC_SKIP_XMLLINT=1 to skip the schema check"
                }
            );
        }
        Err(e) => panic!("cannot start {}: {e}", Path::new(&program).display()),
    };
    assert!(
        out.status.success(),
        "{} does not validate against {}:\n{}",
        xml.display(),
        xsd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
