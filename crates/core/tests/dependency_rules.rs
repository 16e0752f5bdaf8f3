//! The crate graph is a rule, not an accident: docs/architecture.md's table "Crates and who may depend
//! on whom" lists, for every workspace crate, the trtmc crates it may depend on. This test reads that
//! table and the real graph from `cargo metadata`, and fails on a dependency the table does not allow,
//! on a crate the table does not know, and on a table row naming no crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `crate -> allowed trtmc dependencies` from the markdown table; `None` means "any crate above".
fn allowed_from_docs() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let doc = std::fs::read_to_string(workspace_root().join("docs/architecture.md"))
        .expect("docs/architecture.md is readable");
    let start = doc
        .find("## Crates and who may depend on whom")
        .expect("docs/architecture.md has the section \"Crates and who may depend on whom\"");
    let mut rules = BTreeMap::new();
    for line in doc[start..].lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `crate` | job | may depend on |  -> ["", crate, job, deps, ""]
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let allowed = if cells[3].starts_with("any crate") {
            None
        } else {
            Some(backticked(cells[3]))
        };
        rules.insert(name, allowed);
    }
    assert!(!rules.is_empty(), "the dependency table has no rows");
    rules
}

/// Every `name` between backticks in a cell.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// `crate -> trtmc crates among its normal (not dev) dependencies`, from `cargo metadata`.
fn actual_graph() -> BTreeMap<String, BTreeSet<String>> {
    normal_dependencies()
        .into_iter()
        .map(|(name, deps)| {
            let trtmc = deps
                .into_iter()
                .filter(|d| d.starts_with("trtmc-"))
                .collect();
            (name, trtmc)
        })
        .collect()
}

/// `crate -> every normal (not dev, not build) dependency`, from `cargo metadata`.
fn normal_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata starts");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let mut graph = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages is a list") {
        let name = package["name"]
            .as_str()
            .expect("a package has a name")
            .to_string();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies is a list")
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .map(str::to_string)
            .collect();
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn every_workspace_dependency_is_allowed_by_the_architecture_table() {
    let rules = allowed_from_docs();
    let graph = actual_graph();
    let mut problems = Vec::new();
    for (krate, deps) in &graph {
        match rules.get(krate) {
            None => problems.push(format!(
                "{krate} is not in docs/architecture.md's dependency table: add its row"
            )),
            Some(None) => {}
            Some(Some(allowed)) => {
                for dep in deps.difference(allowed) {
                    problems.push(format!(
                        "{krate} depends on {dep}, which its row in docs/architecture.md does not allow"
                    ));
                }
            }
        }
    }
    for krate in rules.keys() {
        if !graph.contains_key(krate) {
            problems.push(format!(
                "docs/architecture.md's dependency table names {krate}, which is no workspace crate"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_table_reader_sees_a_forbidden_edge() {
    // The checker itself must be able to fail: core may depend on nothing, so an edge from core to
    // any trtmc crate is outside its allowed set.
    let rules = allowed_from_docs();
    let core = rules
        .get("trtmc-core")
        .and_then(|r| r.as_ref())
        .expect("trtmc-core has a row with a closed list");
    assert!(!core.contains("trtmc-runtime"));
    let binary = rules.get("trtmc-bench").expect("trtmc-bench has a row");
    assert!(binary.is_none(), "the binary may use any crate");
}

#[test]
fn the_documents_crate_needs_serde_only() {
    // A program that reads result.json or a matrix row takes trtmc-metadata alone: none of core's
    // template, TOML, YAML or system crates may creep back in.
    let deps = normal_dependencies();
    let metadata = deps
        .get("trtmc-metadata")
        .expect("trtmc-metadata is a workspace crate");
    let allowed: BTreeSet<String> = ["serde", "serde_json"].map(String::from).into();
    let extra: Vec<&String> = metadata.difference(&allowed).collect();
    assert!(
        extra.is_empty(),
        "trtmc-metadata may depend on serde and serde_json only, not {extra:?}"
    );
}
