//! Embeds the repository's shipped folders (catalog, reference runners, JSON Schemas, performance
//! suites) into the binary: one generated table of `include_bytes!`, so the repository's files stay
//! the only copy and a change to any of them rebuilds this crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Repository folders carried by every binary, relative to the repository root.
const SHIPPED: &[&str] = &["catalog", "reference", "schemas", "benchmarks/performance"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let repo = manifest.join("../..");
    let mut files = Vec::new();
    for dir in SHIPPED {
        let root = repo.join(dir);
        println!("cargo:rerun-if-changed={}", root.display());
        collect(&repo, &root, &mut files);
    }
    files.sort();
    let mut table = String::from("static FILES: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in &files {
        writeln!(
            table,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .expect("write to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("embedded.rs"), table).expect("write embedded.rs");
}

/// Every regular file below `dir` as (path relative to `repo` with `/` separators, absolute path);
/// Python's byte-code caches are build litter, not shipped files.
fn collect(repo: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read shipped folder {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("directory entry");
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "__pycache__" || name.ends_with(".pyc") || name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            collect(repo, &path, files);
        } else if kind.is_file() {
            let absolute = std::fs::canonicalize(&path).expect("canonical path");
            let relative = path
                .strip_prefix(repo)
                .expect("below the repository")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            files.push((relative, absolute));
        }
    }
}
