//! Finding backends (layer-info / profile / times files) in a folder, or taking them from `--data`.
//!
//! Two naming schemes are recognised in the folder itself (no recursion):
//! * `layers_<label>.json`, `profile_<label>.json`, `times_<label>.json` (the label is the backend);
//! * TREx: `<label>.layers.json` or `<label>.graph.json`, `<label>.profile.json`, `<label>.timing.json`,
//!   plus `<label>.*metadata.json` kept as side information.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files of one backend.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BackendFiles {
    /// The backend's name in the analysis and the report (`fp16` of `layers_fp16.json`).
    pub label: String,
    /// The `--exportLayerInfo` file, if found.
    pub layers: Option<PathBuf>,
    /// The `--exportProfile` file, if found.
    pub profile: Option<PathBuf>,
    /// The `--exportTimes` file, if found.
    pub times: Option<PathBuf>,
    /// TREx side files (`<label>.build.metadata.json`, …): listed as sources; the build metadata
    /// also helps date a TensorRT export.
    pub metadata: Vec<PathBuf>,
}

/// What [`discover`] found in a folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    /// The folder read.
    pub folder: PathBuf,
    /// One entry per label with a layer-info, profile or times file, in label order.
    pub backends: Vec<BackendFiles>,
    /// JSON files that matched neither naming scheme.
    pub ignored: Vec<String>,
    /// Adjacent serialized engines (`.engine`, `.trt`, `.plan`): a hint about partitioning.
    pub engine_files: Vec<String>,
}

/// Why a folder yields no backends.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The path is not a folder.
    #[error("{folder}: not a folder")]
    NotAFolder {
        /// The path given.
        folder: PathBuf,
    },
    /// The folder cannot be listed.
    #[error("cannot list {folder}: {source}")]
    Io {
        /// The folder.
        folder: PathBuf,
        /// The listing error.
        source: std::io::Error,
    },
    /// The folder holds no inputs itself, but its subfolders do: one report per component.
    #[error(
        "{folder} holds no layer-info or profile JSON directly, but its component folders do: {}. Analyze or package each component separately (one report per component), e.g. `trtmc-bench analyze {}`",
        .components.join(", "), .example.display()
    )]
    ComponentParent {
        /// The folder given.
        folder: PathBuf,
        /// The names of its subfolders that hold inputs.
        components: Vec<String>,
        /// The first such subfolder, for the suggested command.
        example: PathBuf,
    },
    /// Neither the folder nor its subfolders hold any input file.
    #[error(
        "{folder} holds no layers_*.json / profile_*.json (or TREx .layers.json / .graph.json / .profile.json) files{}; pass files explicitly with --data LAYERS [PROFILE]",
        json_hint(.json_files)
    )]
    NoInputs {
        /// The folder given.
        folder: PathBuf,
        /// The JSON files it does hold (none matched a naming scheme), for the message.
        json_files: Vec<String>,
    },
}

fn json_hint(files: &[String]) -> String {
    if files.is_empty() {
        String::new()
    } else {
        let shown: Vec<&str> = files.iter().take(6).map(String::as_str).collect();
        format!(
            " (JSON files seen but not recognised by name: {})",
            shown.join(", ")
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Layers,
    Profile,
    Times,
    Metadata,
}

/// Classifies a file name; returns the role and the backend label.
fn classify_name(file_name: &str) -> Option<(Role, String)> {
    let lower = file_name.to_ascii_lowercase();
    let stem = lower.strip_suffix(".json")?;
    let original_stem = &file_name[..stem.len()];
    // TREx side files first: `x.build.metadata.json`, `x.profile.metadata.json`, `x.metadata.json`.
    if let Some(base) = stem.strip_suffix(".metadata") {
        let base = base
            .strip_suffix(".build")
            .or_else(|| base.strip_suffix(".profile"))
            .or_else(|| base.strip_suffix(".device"))
            .unwrap_or(base);
        return Some((Role::Metadata, trex_label(&original_stem[..base.len()])));
    }
    for (prefix, role) in [
        ("layers", Role::Layers),
        ("layer", Role::Layers),
        ("profiles", Role::Profile),
        ("profile", Role::Profile),
        ("times", Role::Times),
        ("timing", Role::Times),
    ] {
        if let Some(rest) = stem.strip_prefix(prefix) {
            let label_start = stem.len() - rest.len();
            let label = original_stem[label_start..].trim_start_matches(['_', '-']);
            // `layerinfo.json`-style names are not this scheme (`layers` must end or be followed by _ or -).
            if rest.is_empty() || rest.starts_with(['_', '-']) {
                let label = if label.is_empty() {
                    "default".to_owned()
                } else {
                    label.to_owned()
                };
                return Some((role, label));
            }
        }
    }
    for (suffix, role) in [
        (".layers", Role::Layers),
        (".graph", Role::Layers),
        (".profile", Role::Profile),
        (".timing", Role::Times),
        (".times", Role::Times),
    ] {
        if let Some(base) = stem.strip_suffix(suffix) {
            return Some((role, trex_label(&original_stem[..base.len()])));
        }
    }
    None
}

/// `resnet.onnx.engine` → `resnet`.
fn trex_label(base: &str) -> String {
    let mut label = base;
    loop {
        let lower = label.to_ascii_lowercase();
        let cut = [".engine", ".onnx", ".plan", ".trt"]
            .iter()
            .find_map(|s| lower.strip_suffix(s).map(|b| b.len()));
        match cut {
            Some(len) if len > 0 => label = &label[..len],
            _ => break,
        }
    }
    if label.is_empty() {
        "default".to_owned()
    } else {
        label.to_owned()
    }
}

/// Finds the backends in `folder`.
pub fn discover(folder: &Path) -> Result<Discovery, DiscoverError> {
    if !folder.is_dir() {
        return Err(DiscoverError::NotAFolder {
            folder: folder.to_owned(),
        });
    }
    let io = |source| DiscoverError::Io {
        folder: folder.to_owned(),
        source,
    };
    let mut names: Vec<(String, PathBuf, bool)> = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        names.push((name, path.clone(), path.is_dir()));
    }
    names.sort();

    let mut by_label: BTreeMap<String, BackendFiles> = BTreeMap::new();
    let mut ignored = Vec::new();
    let mut engine_files = Vec::new();
    let mut subfolders = Vec::new();
    for (name, path, is_dir) in names {
        if is_dir {
            subfolders.push((name, path));
            continue;
        }
        let lower = name.to_ascii_lowercase();
        if [".engine", ".trt", ".plan"]
            .iter()
            .any(|s| lower.ends_with(s))
        {
            engine_files.push(name);
            continue;
        }
        if !lower.ends_with(".json") {
            continue;
        }
        match classify_name(&name) {
            Some((role, label)) => {
                let entry = by_label
                    .entry(label.clone())
                    .or_insert_with(|| BackendFiles {
                        label,
                        ..BackendFiles::default()
                    });
                let slot = match role {
                    Role::Layers => &mut entry.layers,
                    Role::Profile => &mut entry.profile,
                    Role::Times => &mut entry.times,
                    Role::Metadata => {
                        entry.metadata.push(path);
                        continue;
                    }
                };
                if slot.is_some() {
                    // Two files for one role (layers_x.json and x.layers.json): keep the first, say so.
                    ignored.push(name);
                } else {
                    *slot = Some(path);
                }
            }
            None => ignored.push(name),
        }
    }
    // Metadata alone does not make a backend.
    let backends: Vec<BackendFiles> = by_label
        .into_values()
        .filter(|b| b.layers.is_some() || b.profile.is_some() || b.times.is_some())
        .collect();
    if backends.is_empty() {
        let components: Vec<(String, PathBuf)> = subfolders
            .into_iter()
            .filter(|(_, p)| has_inputs(p))
            .collect();
        if let Some((_, first)) = components.first() {
            return Err(DiscoverError::ComponentParent {
                folder: folder.to_owned(),
                example: first.clone(),
                components: components.into_iter().map(|(n, _)| n).collect(),
            });
        }
        return Err(DiscoverError::NoInputs {
            folder: folder.to_owned(),
            json_files: ignored,
        });
    }
    Ok(Discovery {
        folder: folder.to_owned(),
        backends,
        ignored,
        engine_files,
    })
}

/// Whether a folder directly holds at least one recognised layer/profile file.
pub fn has_inputs(folder: &Path) -> bool {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                matches!(
                    classify_name(&name),
                    Some((Role::Layers | Role::Profile, _))
                )
            })
        })
        .unwrap_or(false)
}

/// One `--data LAYERS [PROFILE [TIMES]]` group, with the `--label` that names it, if any.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataSpec {
    /// The layer-info file (`--exportLayerInfo`, or a TREx `.layers.json` / `.graph.json`).
    pub layers: PathBuf,
    /// The profile (`--exportProfile`), if given.
    pub profile: Option<PathBuf>,
    /// The times file (`--exportTimes`), if given.
    pub times: Option<PathBuf>,
    /// The backend's label as the user gave it; `None` derives one from the file names.
    pub label: Option<String>,
}

/// Backends from explicit `--data` groups. A group's `label` is kept as given; otherwise the label
/// comes from the layer file name, and when two groups' files have the same name (TREx exports of
/// one model in `fp16/` and `qat/`) from the parent folder that tells them apart
/// (`fp16-resnet`), with a numeric suffix as the last resort.
pub fn from_data(specs: &[DataSpec]) -> Vec<BackendFiles> {
    let bases: Vec<String> = specs.iter().map(|s| file_label(&s.layers)).collect();
    let mut out: Vec<BackendFiles> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let base = match &spec.label {
            Some(label) => label.clone(),
            None if bases.iter().filter(|b| **b == bases[i]).count() > 1 => {
                match parent_name(&spec.layers) {
                    Some(parent) => format!("{parent}-{}", bases[i]),
                    None => bases[i].clone(),
                }
            }
            None => bases[i].clone(),
        };
        let mut label = base.clone();
        let mut n = 2;
        // Explicit labels are unique (the CLI refuses repeats); derived ones are made unique.
        while out.iter().any(|b| b.label == label) || (spec.label.is_none() && taken(specs, &label))
        {
            label = format!("{base}-{n}");
            n += 1;
        }
        out.push(BackendFiles {
            label,
            layers: Some(spec.layers.clone()),
            profile: spec.profile.clone(),
            times: spec.times.clone(),
            metadata: Vec::new(),
        });
    }
    out
}

/// Is `label` one the user gave to some group?
fn taken(specs: &[DataSpec], label: &str) -> bool {
    specs.iter().any(|s| s.label.as_deref() == Some(label))
}

/// The label a layer file's name implies (`layers_fp16.json` → `fp16`, `resnet.onnx.engine.graph.json`
/// → `resnet`).
fn file_label(layers: &Path) -> String {
    let file = layers
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = match classify_name(&file) {
        Some((_, label)) => label,
        None => file.strip_suffix(".json").unwrap_or(&file).to_owned(),
    };
    if base.is_empty() {
        "default".to_owned()
    } else {
        base
    }
}

/// The name of the folder that holds `path`, when it has one worth showing.
fn parent_name(path: &Path) -> Option<String> {
    let parent = path.parent()?.file_name()?.to_string_lossy().into_owned();
    (!parent.is_empty() && parent != "." && parent != "..").then_some(parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_roles_and_labels() {
        assert_eq!(
            classify_name("layers_onnx-tensorrt.json"),
            Some((Role::Layers, "onnx-tensorrt".to_owned()))
        );
        assert_eq!(
            classify_name("profile_onnx-tensorrt.json"),
            Some((Role::Profile, "onnx-tensorrt".to_owned()))
        );
        assert_eq!(
            classify_name("layers.json"),
            Some((Role::Layers, "default".to_owned()))
        );
        assert_eq!(
            classify_name("resnet.onnx.engine.graph.json"),
            Some((Role::Layers, "resnet".to_owned()))
        );
        assert_eq!(
            classify_name("resnet18-pt-a100-fp16.timing.json"),
            Some((Role::Times, "resnet18-pt-a100-fp16".to_owned()))
        );
        assert_eq!(
            classify_name("resnet18-pt-a100-fp16.build.metadata.json"),
            Some((Role::Metadata, "resnet18-pt-a100-fp16".to_owned()))
        );
        assert_eq!(classify_name("layerinfo.json"), None);
        assert_eq!(classify_name("notes.txt"), None);
    }

    #[test]
    fn component_parents_are_refused_with_their_components() {
        let dir = tempfile::tempdir().expect("tempdir");
        for c in ["unet", "vae"] {
            std::fs::create_dir(dir.path().join(c)).expect("mkdir");
            std::fs::write(dir.path().join(c).join("layers_trt.json"), "[]").expect("write");
        }
        match discover(dir.path()) {
            Err(e @ DiscoverError::ComponentParent { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("unet, vae") && msg.contains("one report per component"),
                    "{msg}"
                );
            }
            other => panic!("expected refusal, got {other:?}"),
        }
    }

    #[test]
    fn pairs_and_unrecognised_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in [
            "layers_a.json",
            "profile_a.json",
            "profile_b.json",
            "misc.json",
            "x.engine",
        ] {
            std::fs::write(dir.path().join(f), "[]").expect("write");
        }
        let d = discover(dir.path()).expect("found");
        assert_eq!(d.backends.len(), 2);
        assert!(d.backends[0].layers.is_some() && d.backends[0].profile.is_some());
        assert!(d.backends[1].layers.is_none());
        assert_eq!(d.ignored, ["misc.json"]);
        assert_eq!(d.engine_files, ["x.engine"]);
    }

    #[test]
    fn data_labels_are_unique_and_tell_same_named_files_apart() {
        let spec = |p: &str| DataSpec {
            layers: PathBuf::from(p),
            ..DataSpec::default()
        };
        let b = from_data(&[
            spec("fp16/resnet.onnx.engine.graph.json"),
            spec("qat/resnet.onnx.engine.graph.json"),
            spec("x/layers_y.json"),
            spec("x/layers_y.json"),
            spec("c/trt10.16_exportLayerInfo_detailed.json"),
        ]);
        let labels: Vec<&str> = b.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "fp16-resnet",
                "qat-resnet",
                "x-y",
                "x-y-2",
                "trt10.16_exportLayerInfo_detailed"
            ]
        );
    }

    #[test]
    fn given_labels_are_kept_verbatim_and_win_over_derived_ones() {
        let b = from_data(&[
            DataSpec {
                layers: PathBuf::from("a/layers_fp16.json"),
                ..DataSpec::default()
            },
            DataSpec {
                layers: PathBuf::from("b/layers_x.json"),
                label: Some("fp16".to_owned()),
                ..DataSpec::default()
            },
            DataSpec {
                layers: PathBuf::from("c/layers_x.json"),
                label: Some("QAT int8 (v2)".to_owned()),
                ..DataSpec::default()
            },
        ]);
        let labels: Vec<&str> = b.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["fp16-2", "fp16", "QAT int8 (v2)"]);
    }
}
