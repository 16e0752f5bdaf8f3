//! Bundle resolution, in one predictable order: an explicit `--bundle`, a match below `--bundle-root`, a
//! compatible managed-cache entry, and finally an automatic build into the managed cache.
//!
//! The cache key hashes the manifest, the model source, the resolved build settings, the runtime name
//! and version, the machine architecture and the runtime's target. Request-only changes therefore reuse a
//! bundle; shape-affecting changes get a new entry. Builds take an exclusive file lock on the key and
//! build into a temporary directory that is renamed into place, so two runs building the same key at
//! once never corrupt the cache: the second waits and then reuses the first one's bundle (and records it
//! as a cache hit). A build removes the temporary directories that killed builds left behind.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use trtmc_core::artifacts::{BuildEvidence, BundleOrigin, BundleRef, RuntimeInfo};
use trtmc_core::catalog::Profile;
use trtmc_core::hash;
use trtmc_runtime::bundle::{
    BUILD_COMMAND, BUILD_LOG, BUILD_TIMING, BUNDLE_FILE, BuildPlan, BundleManifest, build_bundle,
};
use trtmc_runtime::runtime::{Runtime, RuntimeOptions};

use crate::{Error, sources};

/// The default managed cache: `<user cache dir>/trtmc/bundles`.
pub fn default_cache_root() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("trtmc")
        .join("bundles")
}

/// Options that steer resolution.
#[derive(Debug, Clone, Default)]
pub struct BundleOptions {
    /// `--bundle`: use this bundle directory as is, skipping every other place.
    pub explicit: Option<PathBuf>,
    /// `--bundle-root`: directories searched (a few levels deep) for a bundle with the case's key.
    pub roots: Vec<PathBuf>,
    /// The managed bundle cache that builds go into (`--bundle-cache`, default [`default_cache_root`]).
    pub cache_root: PathBuf,
    /// `--no-build`: fail with [`Error::NoBundle`] instead of building a missing bundle.
    pub no_build: bool,
    /// `--rebuild`: build the managed-cache entry anew even when it exists (bundle roots are not searched).
    pub rebuild: bool,
    /// How the runtimes that build and time the bundles find their tools (`--trtexec PATH`).
    pub runtimes: RuntimeOptions,
}

/// What resolution decided (for `--dry-run`) before anything is built.
#[derive(Debug, Clone, PartialEq)]
pub struct BundlePlan {
    /// The full cache key (hex digest), or the key recorded in an explicit bundle's manifest.
    pub key: Option<String>,
    /// The bundle directory: the found or explicit one, or where a build will put it.
    pub path: PathBuf,
    /// Where the bundle comes from (explicit, a bundle root, a cache hit or a build), for result.json.
    pub origin: BundleOrigin,
    /// True when the bundle does not exist yet and will be built.
    pub needs_build: bool,
}

/// The errors of bundle resolution and builds: the runner's one error type (kept under this name for
/// callers that only plan or build bundles).
pub type BundleError = crate::Error;

/// The cache key of a profile's bundle for `runtime` with `build_settings`.
pub fn cache_key(
    profile: &Profile,
    source_identity: &Value,
    build_settings: &BTreeMap<String, Value>,
    rt: &dyn Runtime,
) -> String {
    hash::json_hash(&json!({
        "schema": "trtmc.bundle-key/v1",
        "manifest": profile.manifest_hash,
        "source": source_identity,
        "build": build_settings,
        "runtime": {"name": rt.name(), "version": rt.version()},
        "arch": std::env::consts::ARCH,
        "target": rt.target(),
    }))
}

/// The managed-cache directory of a key.
pub fn cache_dir_for(cache_root: &Path, runtime: &str, model: &str, key: &str) -> PathBuf {
    cache_root
        .join(runtime)
        .join(format!("{}-{}.bundle", sanitize(model), &key[..16]))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Decides where the bundle comes from, without building or loading anything.
pub fn plan(
    profile: &Profile,
    build_settings: &BTreeMap<String, Value>,
    rt: &dyn Runtime,
    options: &BundleOptions,
) -> Result<BundlePlan, BundleError> {
    if let Some(explicit) = &options.explicit {
        let manifest = read_manifest(explicit)?;
        if manifest.runtime.name != rt.name() {
            return Err(Error::BundleRuntimeMismatch {
                bundle: explicit.clone(),
                built_for: manifest.runtime.name,
                requested: rt.name().to_string(),
            });
        }
        // The artifact (a TensorRT engine, an NNEF archive) is opened by the worker or by trtexec's
        // --loadEngine: a FIFO or device there would block them, so it must be a bounded regular file.
        let artifact = explicit.join(&manifest.artifact);
        trtmc_core::limits::check_outside_file(&artifact, trtmc_core::limits::FileKind::Bulk)
            .map_err(|e| Error::BundleManifest {
                bundle: explicit.clone(),
                reason: format!(
                    "bundle {}: its artifact {}: {e}",
                    explicit.display(),
                    artifact.display()
                ),
            })?;
        rt.check_bundle(explicit, &manifest)
            .map_err(|e| Error::BundleManifest {
                bundle: explicit.clone(),
                reason: e.to_string(),
            })?;
        return Ok(BundlePlan {
            key: Some(manifest.key),
            path: explicit.clone(),
            origin: BundleOrigin::Explicit,
            needs_build: false,
        });
    }
    let source =
        sources::resolve(profile, &options.cache_root).map_err(|source| Error::Source {
            model: profile.name.clone(),
            source: Box::new(source),
        })?;
    let key = cache_key(profile, &source.identity, build_settings, rt);
    // `--rebuild` builds the managed-cache entry anew; a matching bundle below a root is left alone.
    let roots: &[PathBuf] = if options.rebuild { &[] } else { &options.roots };
    for root in roots {
        if let Some(found) = find_below(root, &key) {
            return Ok(BundlePlan {
                key: Some(key),
                path: found,
                origin: BundleOrigin::BundleRoot,
                needs_build: false,
            });
        }
    }
    let path = cache_dir_for(&options.cache_root, rt.name(), &profile.name, &key);
    let present = is_current(&path, &key, source.commit.as_deref());
    if present && !options.rebuild {
        return Ok(BundlePlan {
            key: Some(key),
            path,
            origin: BundleOrigin::CacheHit,
            needs_build: false,
        });
    }
    if options.no_build {
        return Err(Error::NoBundle {
            model: profile.name.clone(),
            runtime: rt.name().to_string(),
            key: key[..16].to_string(),
            cache_root: options.cache_root.clone(),
        });
    }
    Ok(BundlePlan {
        key: Some(key),
        path,
        origin: BundleOrigin::Built,
        needs_build: true,
    })
}

/// Does `dir` hold the bundle of `key`, built from the hub commit the cache now holds (when known)?
fn is_current(dir: &Path, key: &str, commit: Option<&str>) -> bool {
    match BundleManifest::read(dir) {
        Ok(m) if m.key == key => match (commit, m.source_commit.as_deref()) {
            (Some(now), Some(built)) => now == built,
            _ => true,
        },
        _ => false,
    }
}

/// Searches `root` (a few levels deep) for a bundle whose key is `key`.
fn find_below(root: &Path, key: &str) -> Option<PathBuf> {
    fn walk(dir: &Path, key: &str, depth: usize) -> Option<PathBuf> {
        if dir.join(BUNDLE_FILE).is_file() {
            return matches!(BundleManifest::read(dir), Ok(m) if m.key == key)
                .then(|| dir.to_path_buf());
        }
        if depth == 0 {
            return None;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        entries.sort();
        entries.into_iter().find_map(|p| walk(&p, key, depth - 1))
    }
    walk(root, key, 4)
}

/// Builds the planned bundle (under the key's lock) unless another process finished it meanwhile:
/// `Built` when this process built it, `CacheHit` when it waited for another one's build and reuses it.
pub fn build(
    profile: &Profile,
    build_settings: &BTreeMap<String, Value>,
    rt: &dyn Runtime,
    plan: &BundlePlan,
    options: &BundleOptions,
    command_line: &[String],
) -> Result<BundleOrigin, BundleError> {
    let unbuildable = |what| Error::UnbuildablePlan {
        bundle: plan.path.clone(),
        what,
    };
    let key = plan
        .key
        .as_deref()
        .ok_or_else(|| unbuildable("it has no cache key"))?;
    let parent = plan
        .path
        .parent()
        .ok_or_else(|| unbuildable("its path has no parent directory"))?;
    let cache_io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::BundleCache {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(parent).map_err(cache_io("create", parent))?;
    let locks = options.cache_root.join(".locks");
    std::fs::create_dir_all(&locks).map_err(cache_io("create", &locks))?;
    let lock_path = locks.join(format!("{key}.lock"));
    let lock = File::create(&lock_path).map_err(cache_io("create", &lock_path))?;
    lock.lock().map_err(cache_io("lock", &lock_path))?;

    remove_stale_build_folders(parent);
    if is_current(&plan.path, key, sources::hub_commit(profile).as_deref()) && !options.rebuild {
        // Another run built this key while we waited for the lock.
        return Ok(BundleOrigin::CacheHit);
    }
    let onnx =
        sources::materialize(profile, &options.cache_root).map_err(|source| Error::Source {
            model: profile.name.clone(),
            source: Box::new(source),
        })?;
    // For a hub model downloaded by `materialize` the commit is known only now.
    let commit = sources::hub_commit(profile);
    let tmp = parent.join(format!(".tmp-{}-{}", &key[..16], std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(cache_io("create", &tmp))?;
    let created = jiff::Timestamp::now().to_string();
    let build_plan = BuildPlan {
        key,
        model: &profile.name,
        onnx: &onnx,
        settings: build_settings,
        command_line,
        created: &created,
        source_commit: commit.as_deref(),
    };
    if let Err(e) = build_bundle(rt, &build_plan, &tmp) {
        let stem = format!("failed-{}-{}", sanitize(&profile.name), &key[..16]);
        let kept = parent.join(format!("{stem}.build.log"));
        let moved = keep_failed_build_logs(&tmp, parent, &stem);
        let _ = std::fs::remove_dir_all(&tmp);
        // The messages named the logs in the build folder, which is gone: name the kept copies.
        let renamed = |text: &str| {
            moved.iter().fold(text.to_string(), |t, (from, to)| {
                t.replace(&from.display().to_string(), &to.display().to_string())
            })
        };
        if let Ok(text) = std::fs::read_to_string(&kept) {
            let _ = trtmc_core::fsutil::write_atomic(&kept, renamed(&text).as_bytes());
        }
        return Err(Error::BuildFailed {
            model: profile.name.clone(),
            runtime: rt.name().to_string(),
            log: kept,
            source: anyhow::anyhow!(renamed(&format!("{e:#}"))),
        });
    }
    if plan.path.exists() {
        let old = parent.join(format!(".old-{}-{}", &key[..16], std::process::id()));
        std::fs::rename(&plan.path, &old)
            .map_err(cache_io("move aside the old bundle", &plan.path))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    std::fs::rename(&tmp, &plan.path).map_err(cache_io("move the new bundle into", &plan.path))?;
    Ok(BundleOrigin::Built)
}

/// Moves the logs of a failed build out of its folder `tmp` into `parent`: the bundle's build log to
/// `STEM.build.log`, every other `*.log` (the runtime tool's own, e.g. trtexec's) to `STEM.NAME`.
/// Returns (old path, kept path) of each.
fn keep_failed_build_logs(tmp: &Path, parent: &Path, stem: &str) -> Vec<(PathBuf, PathBuf)> {
    let mut moved = Vec::new();
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return moved;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".log") {
            continue;
        }
        let kept = if name == BUILD_LOG {
            parent.join(format!("{stem}.build.log"))
        } else {
            parent.join(format!("{stem}.{name}"))
        };
        if std::fs::rename(entry.path(), &kept).is_ok() {
            moved.push((entry.path(), kept));
        }
    }
    moved
}

/// Removes the build folders (`.tmp-KEY-PID`, a tune's `.tmp-tune-KEY-PID`) and set-aside old bundles
/// (`.old-KEY-PID`) that killed builds left in a runtime's cache directory; a live builder's are kept.
pub fn remove_stale_build_folders(runtime_dir: &Path) {
    trtmc_core::fsutil::remove_stale_temporaries(runtime_dir, |name| {
        let rest = name
            .strip_prefix(".tmp-")
            .or_else(|| name.strip_prefix(".old-"))?;
        rest.rsplit_once('-')?.1.parse().ok()
    });
}

/// The manifest of the bundle in `dir`.
pub(crate) fn read_manifest(dir: &Path) -> Result<BundleManifest, Error> {
    BundleManifest::read(dir).map_err(|e| Error::BundleManifest {
        bundle: dir.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The reference written into result.json for a resolved bundle.
pub fn bundle_ref(plan: &BundlePlan) -> Result<BundleRef, BundleError> {
    let manifest = read_manifest(&plan.path)?;
    let evidence = |f: &str| plan.path.join(f).display().to_string();
    Ok(BundleRef {
        path: plan.path.display().to_string(),
        key: plan.key.clone(),
        origin: plan.origin,
        compatibility_verified: plan.origin != BundleOrigin::Explicit,
        runtime: RuntimeInfo {
            name: manifest.runtime.name,
            version: manifest.runtime.version,
        },
        build_evidence: Some(BuildEvidence {
            log: evidence(BUILD_LOG),
            timing: evidence(BUILD_TIMING),
            command: evidence(BUILD_COMMAND),
            excluded_from_metrics: true,
        }),
        // Filled in from the timed run's notes (`run`), which read the runtime's own build record.
        route_used: None,
    })
}
