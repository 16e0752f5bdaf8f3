//! Model sources: where a profile's ONNX file comes from, its identity for cache keys, and whether it is
//! available on this machine — without loading anything into a runtime.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use trtmc_core::catalog::{ModelSource, Profile, TokenizerSpec};
use trtmc_core::fsutil::write_atomic;
use trtmc_core::hash;

/// A source resolved to what a key and a build need.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSource {
    /// Stable description of the model bytes (hashes, repo/file/revision, generator name and version).
    pub identity: Value,
    /// The ONNX file when it is on disk already (generated and reweighted models are produced at build).
    pub path: Option<PathBuf>,
    /// For a hub model in the local cache, the commit its revision resolved to. Kept out of the
    /// identity so that a key is the same before and after the first download; a bundle records it
    /// and is rebuilt when the cached revision moves to another commit.
    pub commit: Option<String>,
}

/// The commit a hub model's cached revision resolves to (`None` for other sources, or when the file
/// is not cached); a look at the local cache, without hashing or downloading anything.
pub fn hub_commit(profile: &Profile) -> Option<String> {
    let (repo, file, revision) = hub_source(profile)?;
    hub_cached(repo, file, revision)
        .1
        .as_deref()
        .and_then(snapshot_commit)
}

/// Whether resolving a hub file may download it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// Download what the local cache lacks (unless HF_HUB_OFFLINE is set).
    Allowed,
    /// Never touch the network: planning and dry runs.
    CacheOnly,
}

/// Hugging Face hub access mode.
pub fn hf_offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| !matches!(v.trim(), "" | "0" | "false" | "False"))
        .unwrap_or(false)
}

/// Why a model's source file or tokenizer cannot be found, fetched or prepared; each message names
/// the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// `source.builtin` names no generator of `trtmc-modelgen`.
    #[error("unknown builtin model `{name}` (known: {})", known.join(", "))]
    UnknownBuiltin {
        /// The builtin name as MODEL.toml gives it.
        name: String,
        /// Every builtin model's name.
        known: Vec<String>,
    },
    /// A `source.path` file cannot be read (to hash it).
    #[error(
        "model file {} cannot be read: {source} (fix source.path in {})",
        path.display(),
        manifest.display()
    )]
    ModelFile {
        /// The model file.
        path: PathBuf,
        /// The MODEL.toml that names it.
        manifest: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A `source.python_package` file is missing from the installed package.
    #[error(
        "{} is missing from the `{package}` package: {source} (reinstall it: pip install --force-reinstall {package})",
        path.display()
    )]
    PackageFile {
        /// The file below the package's directory.
        path: PathBuf,
        /// The Python package's name.
        package: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A hub model is not cached and `HF_HUB_OFFLINE` forbids downloading it.
    #[error(
        "{repo}/{file}@{revision} is not in the Hugging Face cache at {} and HF_HUB_OFFLINE is set (download it first: huggingface-cli download {repo} {file} --revision {revision})",
        cache.display()
    )]
    HubOffline {
        /// The hub repository (`owner/name`).
        repo: String,
        /// The file in the repository.
        file: String,
        /// The revision (branch, tag or commit) the profile pins.
        revision: String,
        /// The local Hugging Face cache that was searched.
        cache: PathBuf,
    },
    /// A hub tokenizer is not cached and `HF_HUB_OFFLINE` forbids downloading it.
    #[error(
        "tokenizer {repo}/{file}@{revision} of model `{model}` is not in the Hugging Face cache at {} and HF_HUB_OFFLINE is set (download it first: huggingface-cli download {repo} {file} --revision {revision})",
        cache.display()
    )]
    TokenizerOffline {
        /// Catalog name of the model.
        model: String,
        /// The hub repository (`owner/name`).
        repo: String,
        /// The tokenizer file in the repository.
        file: String,
        /// The revision the profile pins.
        revision: String,
        /// The local Hugging Face cache that was searched.
        cache: PathBuf,
    },
    /// A file or directory of the source cache cannot be created, read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// `create`, `read`, `write`.
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The profile has no source at all (`source` kind `none`), so there is nothing to build.
    #[error("model `{model}` has no model file to build")]
    NoModelFile {
        /// Catalog name of the model.
        model: String,
    },
    /// A path or package source resolved without a file on disk.
    #[error("model `{model}` has no local file")]
    NoLocalFile {
        /// Catalog name of the model.
        model: String,
    },
    /// The generator failed; `reason` is its error chain.
    #[error("cannot generate builtin model `{name}`: {reason}")]
    Generate {
        /// The builtin model's name.
        name: String,
        /// The generator's error chain as text.
        reason: String,
    },
    /// Reweighting failed; `reason` is its error chain.
    #[error("cannot give {} seeded weights: {reason}", path.display())]
    Reweight {
        /// The model file being reweighted.
        path: PathBuf,
        /// The reweighting's error chain as text.
        reason: String,
    },
    /// The profile's `tokenizer` entry cannot be parsed.
    #[error("model `{model}`: {source}")]
    TokenizerSpec {
        /// Catalog name of the model.
        model: String,
        /// Why the tokenizer spec is invalid.
        source: trtmc_core::catalog::CatalogError,
    },
    /// A `hub:` tokenizer on a model whose source is not a Hugging Face repository.
    #[error("model `{model}`: tokenizer `{text}` needs a Hugging Face source")]
    TokenizerNotHub {
        /// Catalog name of the model.
        model: String,
        /// The tokenizer entry as MODEL.toml gives it.
        text: String,
    },
    /// The hub client cannot be set up from the environment (`HF_HOME`, `HF_ENDPOINT`, …).
    #[error("cannot start the Hugging Face hub client: {reason}")]
    HubClient {
        /// The client's error as text.
        reason: String,
    },
    /// A hub download failed.
    #[error(
        "cannot download {repo}/{file}@{revision}: {reason} (check the network, or set HF_HUB_OFFLINE=1 and pre-fill the cache)"
    )]
    Download {
        /// The hub repository (`owner/name`).
        repo: String,
        /// The file in the repository.
        file: String,
        /// The revision the profile pins.
        revision: String,
        /// The hub client's error as text.
        reason: String,
    },
    /// The Python interpreter runs, but the source's package is not installed for it.
    #[error("Python package `{package}` is not installed for {python} (pip install {package})")]
    PackageMissing {
        /// The Python package's name.
        package: String,
        /// The interpreter that was asked (`TRTMC_PYTHON` or the default).
        python: String,
    },
    /// The package's directory cannot be looked up (no Python, or it failed).
    #[error("cannot find the `{package}` package: {reason} (install Python 3 or set TRTMC_PYTHON)")]
    PackageLookup {
        /// The Python package's name.
        package: String,
        /// Why the lookup failed.
        reason: String,
    },
}

impl SourceError {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        move |source| SourceError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Identity and local path of a profile's source. `Err` names what is missing and how to get it.
pub fn resolve(profile: &Profile, work_dir: &Path) -> Result<ResolvedSource, SourceError> {
    let base = resolve_base(profile, work_dir)?;
    Ok(match profile.reweight_seed {
        None => base,
        Some(seed) => ResolvedSource {
            identity: json!({"reweighted": base.identity, "seed": seed}),
            path: None,
            commit: base.commit,
        },
    })
}

/// The source before any reweighting.
fn resolve_base(profile: &Profile, work_dir: &Path) -> Result<ResolvedSource, SourceError> {
    Ok(match &profile.source {
        ModelSource::None => ResolvedSource {
            identity: json!({"kind": "none"}),
            path: None,
            commit: None,
        },
        ModelSource::Builtin { name, seed } => {
            if !trtmc_modelgen::is_builtin(name) {
                return Err(SourceError::UnknownBuiltin {
                    name: name.clone(),
                    known: trtmc_modelgen::builtin_names(),
                });
            }
            ResolvedSource {
                identity: builtin_identity(name, *seed),
                path: None,
                commit: None,
            }
        }
        ModelSource::Path { path } => {
            let full = profile.dir().join(path);
            let digest =
                hash_file_cached(&full, work_dir).map_err(|source| SourceError::ModelFile {
                    path: full.clone(),
                    manifest: profile.manifest.clone(),
                    source,
                })?;
            ResolvedSource {
                identity: json!({"kind": "path", "sha256": digest}),
                path: Some(full),
                commit: None,
            }
        }
        ModelSource::PythonPackage { package, path } => {
            let dir = python_package_dir(package)?;
            let full = dir.join(path);
            let digest =
                hash_file_cached(&full, work_dir).map_err(|source| SourceError::PackageFile {
                    path: full.clone(),
                    package: package.clone(),
                    source,
                })?;
            ResolvedSource {
                identity: json!({"kind": "python_package", "package": package, "path": path, "sha256": digest}),
                path: Some(full),
                commit: None,
            }
        }
        ModelSource::HuggingFace {
            repo,
            file,
            revision,
        } => {
            let (cache, cached) = hub_cached(repo, file, revision);
            if cached.is_none() && hf_offline() {
                return Err(SourceError::HubOffline {
                    repo: repo.clone(),
                    file: file.clone(),
                    revision: revision.clone(),
                    cache: cache.path().to_path_buf(),
                });
            }
            // The snapshot directory names the commit the revision resolved to (checked against the
            // bundle's record, see `commit`).
            let commit = cached.as_deref().and_then(snapshot_commit);
            ResolvedSource {
                identity: json!({"kind": "hf", "repo": repo, "file": file, "revision": revision}),
                path: cached,
                commit,
            }
        }
    })
}

/// The identity of a generated model: name, seed, crate version and, for a family, its configuration
/// and generator version (so a changed configuration is a new file in the cache).
fn builtin_identity(name: &str, seed: u64) -> Value {
    let mut identity = json!({"kind": "builtin", "name": name, "seed": seed, "generator": env!("CARGO_PKG_VERSION")});
    let config = trtmc_modelgen::builtin_config(name);
    if !config.is_null() {
        identity["family"] = config;
    }
    identity
}

/// Produces the ONNX file of a profile for a build: downloads from the hub when allowed, generates
/// builtin models, applies `reweight_seed`. Files are written atomically under `work_dir/sources`.
pub fn materialize(profile: &Profile, work_dir: &Path) -> Result<PathBuf, SourceError> {
    let resolved = resolve(profile, work_dir)?;
    let base = resolve_base(profile, work_dir)?;
    let dir = work_dir.join("sources");
    std::fs::create_dir_all(&dir).map_err(SourceError::io("create", &dir))?;
    let base_path = match &profile.source {
        ModelSource::None => {
            return Err(SourceError::NoModelFile {
                model: profile.name.clone(),
            });
        }
        ModelSource::Builtin { name, seed } => {
            let file = dir.join(format!(
                "builtin-{name}-seed{seed}-{}.onnx",
                &hash::json_hash(&resolved.identity)[..12]
            ));
            if !file.exists() {
                let bytes =
                    trtmc_modelgen::generate(name, *seed).map_err(|e| SourceError::Generate {
                        name: name.clone(),
                        reason: format!("{e:#}"),
                    })?;
                write_atomic(&file, &bytes).map_err(SourceError::io("write", &file))?;
            }
            file
        }
        ModelSource::HuggingFace {
            repo,
            file,
            revision,
        } => match base.path {
            Some(p) => p,
            None => download_hf(repo, file, revision)?,
        },
        ModelSource::Path { .. } | ModelSource::PythonPackage { .. } => {
            base.path.ok_or_else(|| SourceError::NoLocalFile {
                model: profile.name.clone(),
            })?
        }
    };
    match profile.reweight_seed {
        None => Ok(base_path),
        Some(seed) => {
            let file = reweighted_file(profile, &resolved, &dir);
            if !file.exists() {
                let bytes = trtmc_core::limits::read_outside(
                    &base_path,
                    trtmc_core::limits::FileKind::Bulk,
                )
                .map_err(SourceError::io("read", &base_path))?;
                let out =
                    trtmc_modelgen::reweight(&bytes, seed).map_err(|e| SourceError::Reweight {
                        path: base_path.clone(),
                        reason: format!("{e:#}"),
                    })?;
                write_atomic(&file, &out).map_err(SourceError::io("write", &file))?;
            }
            Ok(file)
        }
    }
}

/// Where [`materialize`] writes a reweighted model.
fn reweighted_file(profile: &Profile, resolved: &ResolvedSource, dir: &Path) -> PathBuf {
    dir.join(format!(
        "reweighted-{}-{}.onnx",
        profile.name,
        &hash::json_hash(&resolved.identity)[..12]
    ))
}

/// The ONNX file a build of `profile` will read, for a plan (`run --dry-run`): the file
/// [`materialize`] returns. A generated model is generated now (deterministic and quick, into the
/// same cache file the build reads); a download or a reweighting is never started, so their file is
/// `None` until a build has produced it.
pub fn planned_model_file(
    profile: &Profile,
    work_dir: &Path,
) -> Result<Option<PathBuf>, SourceError> {
    let resolved = resolve(profile, work_dir)?;
    match (&profile.source, profile.reweight_seed) {
        (ModelSource::Builtin { .. }, None) => materialize(profile, work_dir).map(Some),
        (_, None) => Ok(resolved.path),
        (_, Some(_)) => {
            let file = reweighted_file(profile, &resolved, &work_dir.join("sources"));
            Ok(file.is_file().then_some(file))
        }
    }
}

/// The worker's form of a profile's tokenizer: `bytes`, or `file:PATH` (relative to MODEL.toml, or
/// the absolute path of a cached hub file). A `hub:` tokenizer missing from the cache is downloaded
/// when `fetch` allows it, else left as its `hub:` spec for a later [`Fetch::Allowed`] call; with
/// HF_HUB_OFFLINE set, `Err` says how to fill the cache.
pub fn resolve_tokenizer(profile: &Profile, fetch: Fetch) -> Result<Option<String>, SourceError> {
    let Some(text) = profile.tokenizer.as_deref() else {
        return Ok(None);
    };
    let spec = TokenizerSpec::parse(text).map_err(|source| SourceError::TokenizerSpec {
        model: profile.name.clone(),
        source,
    })?;
    let TokenizerSpec::Hub(file) = spec else {
        return Ok(Some(text.to_owned()));
    };
    let ModelSource::HuggingFace { repo, revision, .. } = &profile.source else {
        return Err(SourceError::TokenizerNotHub {
            model: profile.name.clone(),
            text: text.to_string(),
        });
    };
    let (cache, cached) = hub_cached(repo, &file, revision);
    let path = match cached {
        Some(p) => p,
        None if hf_offline() => {
            return Err(SourceError::TokenizerOffline {
                model: profile.name.clone(),
                repo: repo.clone(),
                file: file.clone(),
                revision: revision.clone(),
                cache: cache.path().to_path_buf(),
            });
        }
        None if fetch == Fetch::CacheOnly => return Ok(Some(text.to_owned())),
        None => download_hf(repo, &file, revision)?,
    };
    Ok(Some(format!("file:{}", path.display())))
}

/// A file beside a profile's hub tokenizer in its repository (`tokenizer_config.json`,
/// `chat_template.jinja`): its path in the cache, downloaded first when `fetch` allows and the hub is
/// not offline. `None` when the profile's tokenizer is not a hub file, or the file is neither cached
/// nor downloadable (many repositories have no `chat_template.jinja`).
pub fn hub_tokenizer_sibling(profile: &Profile, name: &str, fetch: Fetch) -> Option<PathBuf> {
    let Some(Ok(TokenizerSpec::Hub(tokenizer))) =
        profile.tokenizer.as_deref().map(TokenizerSpec::parse)
    else {
        return None;
    };
    let ModelSource::HuggingFace { repo, revision, .. } = &profile.source else {
        return None;
    };
    let file = match tokenizer.rsplit_once('/') {
        Some((folder, _)) => format!("{folder}/{name}"),
        None => name.to_owned(),
    };
    match hub_cached(repo, &file, revision).1 {
        Some(path) => Some(path),
        None if fetch == Fetch::CacheOnly || hf_offline() => None,
        None => download_hf(repo, &file, revision).ok(),
    }
}

/// Does this worker-form tokenizer still wait for a download (a `hub:` spec)?
pub fn tokenizer_pending(tokenizer: Option<&str>) -> bool {
    tokenizer.is_some_and(|t| matches!(TokenizerSpec::parse(t), Ok(TokenizerSpec::Hub(_))))
}

/// What this machine lacks to produce a profile's model file, with the command that installs it
/// (`None` when nothing is missing): the Python package a `python_package` source ships in, or the
/// package file itself. Hub downloads are [`needs_download`]'s, not prerequisites.
pub fn missing_prerequisite(profile: &Profile) -> Option<String> {
    let ModelSource::PythonPackage { package, path } = &profile.source else {
        return None;
    };
    match python_package_dir(package) {
        Err(e) => Some(e.to_string()),
        Ok(dir) if !dir.join(path).is_file() => Some(format!(
            "{} is missing from the `{package}` package (reinstall it: pip install --force-reinstall {package})",
            dir.join(path).display()
        )),
        Ok(_) => None,
    }
}

/// The hub files (`repo/file@revision`) a profile needs that the local cache lacks; looked up
/// without the network.
pub fn needs_download(profile: &Profile) -> Vec<String> {
    let Some((repo, file, revision)) = hub_source(profile) else {
        return Vec::new();
    };
    let mut files = vec![file.clone()];
    if let Some(Ok(TokenizerSpec::Hub(t))) = profile.tokenizer.as_deref().map(TokenizerSpec::parse)
    {
        files.push(t);
    }
    files
        .into_iter()
        .filter(|f| hub_cached(repo, f, revision).1.is_none())
        .map(|f| format!("{repo}/{f}@{revision}"))
        .collect()
}

/// A hub model's repository, file and revision (`None` for other sources).
fn hub_source(profile: &Profile) -> Option<(&String, &String, &String)> {
    match &profile.source {
        ModelSource::HuggingFace {
            repo,
            file,
            revision,
        } => Some((repo, file, revision)),
        _ => None,
    }
}

/// The hub cache (from HF_HOME and friends) and `file`'s path in it, when cached.
fn hub_cached(repo: &str, file: &str, revision: &str) -> (hf_hub::Cache, Option<PathBuf>) {
    let cache = hf_hub::Cache::from_env();
    let cached = cache
        .repo(hf_hub::Repo::with_revision(
            repo.to_owned(),
            hf_hub::RepoType::Model,
            revision.to_owned(),
        ))
        .get(file);
    (cache, cached)
}

/// The commit hash in a hub cache path `…/snapshots/<commit>/<file>`.
fn snapshot_commit(path: &Path) -> Option<String> {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let at = parts.iter().rposition(|p| p == "snapshots")?;
    parts.get(at + 1).cloned()
}

fn download_hf(repo: &str, file: &str, revision: &str) -> Result<PathBuf, SourceError> {
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .build()
        .map_err(|e| SourceError::HubClient {
            reason: e.to_string(),
        })?;
    api.repo(hf_hub::Repo::with_revision(
        repo.into(),
        hf_hub::RepoType::Model,
        revision.into(),
    ))
    .get(file)
    .map_err(|e| SourceError::Download {
        repo: repo.to_string(),
        file: file.to_string(),
        revision: revision.to_string(),
        reason: e.to_string(),
    })
}

/// The directory of an installed Python package, found without importing it.
pub fn python_package_dir(package: &str) -> Result<PathBuf, SourceError> {
    let python = trtmc_core::python::interpreter();
    match trtmc_core::python::package_dir(package) {
        Ok(Some(dir)) => Ok(dir),
        Ok(None) => Err(SourceError::PackageMissing {
            package: package.to_string(),
            python: python.to_string(),
        }),
        Err(e) => Err(SourceError::PackageLookup {
            package: package.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// SHA-256 of a file, memoized in `work_dir/hashes/` by path, size and modification time, so that keys
/// of large models cost one `stat` after the first time.
pub fn hash_file_cached(path: &Path, work_dir: &Path) -> std::io::Result<String> {
    trtmc_core::limits::check_outside_file(path, trtmc_core::limits::FileKind::Bulk)?;
    let meta = std::fs::metadata(path)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let canonical = std::fs::canonicalize(path)?;
    let memo_key =
        hash::sha256_hex(format!("{}|{}|{mtime}", canonical.display(), meta.len()).as_bytes());
    let memo = work_dir.join("hashes").join(&memo_key[..32]);
    if let Ok(text) = std::fs::read_to_string(&memo)
        && text.len() == 64
    {
        return Ok(text);
    }
    let digest = hash::file_sha256(path)?;
    if std::fs::create_dir_all(work_dir.join("hashes")).is_ok() {
        let _ = write_atomic(&memo, digest.as_bytes());
    }
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_error_reads_once_through_the_runner_error() {
        let missing = crate::Error::Source {
            model: "m".into(),
            source: Box::new(SourceError::NoModelFile { model: "m".into() }),
        };
        assert_eq!(missing.message(), "model `m` has no model file to build");
        // The I/O error is the source and part of the message: printed once.
        let unreadable = crate::Error::Source {
            model: "m".into(),
            source: Box::new(SourceError::Io {
                action: "read",
                path: "/models/m.onnx".into(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
            }),
        };
        assert_eq!(unreadable.message(), "cannot read /models/m.onnx: gone");
        assert!(std::error::Error::source(&unreadable).is_some());
    }

    #[test]
    fn file_hash_memo_tracks_content_changes() {
        let t = tempfile::tempdir().expect("tmp");
        let f = t.path().join("m.onnx");
        std::fs::write(&f, b"abc").expect("write");
        let a = hash_file_cached(&f, t.path()).expect("hash");
        assert_eq!(a, hash::sha256_hex(b"abc"));
        assert_eq!(hash_file_cached(&f, t.path()).expect("memo"), a);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, b"abcd").expect("write");
        assert_ne!(hash_file_cached(&f, t.path()).expect("rehash"), a);
    }

    #[test]
    fn missing_python_packages_say_how_to_install() {
        let err = python_package_dir("surely_not_a_real_package_xyz")
            .expect_err("missing")
            .to_string();
        assert!(
            err.contains("pip install surely_not_a_real_package_xyz")
                || err.contains("install Python"),
            "{err}"
        );
    }
}
