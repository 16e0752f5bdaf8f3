//! The files every `trtmc-bench` carries, so a binary copied anywhere (a wheel, `cargo install`) works
//! without the source checkout: the model catalog (MODEL.toml files, manifests, assets), the Python
//! reference runners, the JSON Schemas of every document the program writes, and the shipped
//! performance suites and environments.
//!
//! They are embedded at build time from the repository's own folders (`build.rs`), and unpacked once
//! per content digest into `<user cache>/trtmc/share/<digest>/`, because the catalog is read as files
//! and the reference runners are run by Python. Unpacking writes a temporary folder and renames it into
//! place, so concurrent first runs and an interrupted one never leave a half-written share.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest as _, Sha256};

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// Written last into an unpacked share; holds its digest.
const COMPLETE_MARKER: &str = ".trtmc-share-complete";

/// The embedded share could not be made available as files.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot unpack trtmc-bench's embedded catalog and reference runners into {dir}: {source} (make that folder writable or free space there, set XDG_CACHE_HOME to a writable folder, or point --manifest-root / TRTMC_MANIFEST_ROOT at a catalog)"
)]
pub struct UnpackError {
    /// The folder the share was being unpacked into.
    pub dir: PathBuf,
    /// The file-system failure that stopped the unpacking.
    #[source]
    pub source: std::io::Error,
}

/// Every embedded file as (path relative to the repository root, contents), sorted by path.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    FILES
}

/// The contents of one embedded file, by repository-relative path (`schemas/benchmark-run.schema.json`).
pub fn file(path: &str) -> Option<&'static [u8]> {
    FILES
        .binary_search_by(|(p, _)| (*p).cmp(path))
        .ok()
        .map(|i| FILES[i].1)
}

/// 16 hex digits of SHA-256 over every embedded path and its contents: the name of the unpacked folder,
/// so two builds with different catalogs never share one.
pub fn digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let mut hasher = Sha256::new();
        for (path, bytes) in FILES {
            hasher.update((path.len() as u64).to_le_bytes());
            hasher.update(path.as_bytes());
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        hex::encode(&hasher.finalize()[..8])
    })
}

/// The unpacked share's root (holding `catalog/`, `reference/`, `schemas/`, `benchmarks/performance/`),
/// unpacking it on first use in this process.
pub fn root() -> Result<&'static Path, &'static UnpackError> {
    static ROOT: OnceLock<Result<PathBuf, UnpackError>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let parent = default_parent();
        unpack_into(&parent)
    })
    .as_ref()
    .map(PathBuf::as_path)
}

/// The embedded catalog, as a folder.
pub fn catalog() -> Result<PathBuf, &'static UnpackError> {
    Ok(root()?.join("catalog"))
}

/// The embedded reference runners (`ort_reference.py`, …), as a folder.
pub fn reference_dir() -> Result<PathBuf, &'static UnpackError> {
    Ok(root()?.join("reference"))
}

/// Performance suites and environments shipped with the program, by the short name
/// `matrix check` accepts in place of a path.
pub const SHIPPED_SUITES: &[(&str, &str)] = &[
    ("release", "benchmarks/performance/release.yaml"),
    ("release-full", "benchmarks/performance/release-full.yaml"),
    ("gpu", "benchmarks/performance/gpu.yaml"),
];
/// Matrix environment files shipped with the program, by the short name `matrix` accepts in place
/// of a path.
pub const SHIPPED_ENVIRONMENTS: &[(&str, &str)] = &[
    ("cpu", "benchmarks/performance/environments/cpu.yaml"),
    ("gpu", "benchmarks/performance/environments/gpu.yaml"),
];

/// `<user cache>/trtmc/share`, else (no home folder) a per-user folder in the temporary directory.
fn default_parent() -> PathBuf {
    match dirs::cache_dir() {
        Some(cache) => cache.join("trtmc/share"),
        None => std::env::temp_dir().join(format!("trtmc-share-{}", user_tag())),
    }
}

fn user_tag() -> String {
    std::env::var("USER").unwrap_or_else(|_| "user".into())
}

/// Unpacks the share below `parent` (once per digest) and returns its root.
pub fn unpack_into(parent: &Path) -> Result<PathBuf, UnpackError> {
    let root = parent.join(digest());
    remove_stale_staging(parent);
    if is_complete(&root) {
        return Ok(root);
    }
    let fail = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |source| UnpackError { dir, source }
    };
    std::fs::create_dir_all(parent).map_err(fail(parent))?;
    let staging = staging_dir(parent).map_err(fail(parent))?;
    let written = write_all(&staging);
    if let Err(source) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(UnpackError { dir: root, source });
    }
    // A stale or damaged copy (a file deleted by hand) is replaced as a whole.
    if root.exists() && !is_complete(&root) {
        let _ = std::fs::remove_dir_all(&root);
    }
    match std::fs::rename(&staging, &root) {
        Ok(()) => Ok(root),
        // Another process unpacked the same digest first: theirs is as good as ours.
        Err(_) if is_complete(&root) => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(root)
        }
        Err(source) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(UnpackError { dir: root, source })
        }
    }
}

/// A fresh staging folder, `.<digest>-unpacking.tmp-<pid>`: the pid lets the next process remove
/// the folder of one that was killed mid-unpack ([`remove_stale_staging`]).
fn staging_dir(parent: &Path) -> std::io::Result<PathBuf> {
    let staging = parent.join(format!(
        ".{}-unpacking.tmp-{}",
        digest(),
        std::process::id()
    ));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    std::fs::create_dir(&staging)?;
    Ok(staging)
}

/// Removes the staging folders of unpacks whose process no longer runs (of any digest), and those of
/// older versions, which carry no pid, once they are an hour old.
fn remove_stale_staging(parent: &Path) {
    use trtmc_core::fsutil::{atomic_temporary_owner, remove_stale_temporaries};
    remove_stale_temporaries(parent, |name| {
        name.contains("-unpacking.tmp-")
            .then(|| atomic_temporary_owner(name))
            .flatten()
    });
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let unversioned = name.starts_with('.') && !name.contains(".tmp-") && {
            let tail = name.rsplit_once("-unpacking").map(|(_, t)| t);
            tail.is_some_and(|t| t.is_empty() || t.trim_start_matches('-').parse::<u32>().is_ok())
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if unversioned && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn write_all(staging: &Path) -> std::io::Result<()> {
    for (path, bytes) in FILES {
        let target = staging.join(path);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&target, bytes)?;
    }
    std::fs::write(staging.join(COMPLETE_MARKER), digest())
}

/// The marker names this digest and every embedded file is present with its size.
fn is_complete(root: &Path) -> bool {
    let marked = std::fs::read_to_string(root.join(COMPLETE_MARKER))
        .is_ok_and(|text| text.trim() == digest());
    marked
        && FILES.iter().all(|(path, bytes)| {
            std::fs::metadata(root.join(path)).is_ok_and(|m| m.len() == bytes.len() as u64)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_the_catalog_runners_schemas_and_suites() {
        for path in [
            "catalog/tiny-gpt/MODEL.toml",
            "catalog/assets/speech.wav",
            "reference/ort_reference.py",
            "schemas/benchmark-run.schema.json",
            "benchmarks/performance/release.yaml",
        ] {
            assert!(file(path).is_some_and(|b| !b.is_empty()), "{path} missing");
        }
        for (_, path) in SHIPPED_SUITES.iter().chain(SHIPPED_ENVIRONMENTS) {
            assert!(file(path).is_some(), "shipped {path} missing");
        }
        assert!(files().iter().all(|(p, _)| !p.contains("__pycache__")));
    }

    /// The embedded bytes are the repository's files, byte for byte (no second copy to drift).
    #[test]
    fn embedded_files_are_the_repositorys() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (path, bytes) in files() {
            let on_disk = std::fs::read(repo.join(path)).expect("repository file");
            assert_eq!(&on_disk[..], *bytes, "{path} differs");
        }
    }

    #[test]
    fn unpacks_once_and_repairs_a_damaged_copy() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = unpack_into(tmp.path()).expect("unpack");
        assert!(root.join("catalog/tiny-cnn/MODEL.toml").is_file());
        assert_eq!(root.file_name().and_then(|n| n.to_str()), Some(digest()));
        // Nothing but the finished folder is left behind.
        let entries: Vec<_> = std::fs::read_dir(tmp.path()).expect("list").collect();
        assert_eq!(entries.len(), 1);
        // A second call reuses it: a file written into it survives.
        std::fs::write(root.join("note"), "kept").expect("write");
        assert_eq!(unpack_into(tmp.path()).expect("again"), root);
        assert!(root.join("note").is_file());
        // A deleted file makes the copy incomplete: it is unpacked afresh.
        std::fs::remove_file(root.join("reference/ort_reference.py")).expect("rm");
        let repaired = unpack_into(tmp.path()).expect("repair");
        assert!(repaired.join("reference/ort_reference.py").is_file());
        assert!(!repaired.join("note").exists());
    }

    #[test]
    fn a_killed_unpacks_folder_is_removed_by_the_next() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut reaped = std::process::Command::new("true").spawn().expect("true");
        let dead = reaped.id();
        reaped.wait().expect("reap");
        let killed = tmp
            .path()
            .join(format!(".{}-unpacking.tmp-{dead}", digest()));
        let legacy = tmp.path().join(format!(".{}-unpacking", digest()));
        let recent_legacy = tmp.path().join(format!(".{}-unpacking-2", digest()));
        for dir in [&killed, &legacy, &recent_legacy] {
            std::fs::create_dir_all(dir.join("catalog")).expect("mkdir");
        }
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::open(&legacy)
            .and_then(|f| f.set_modified(two_hours_ago))
            .expect("age");
        let root = unpack_into(tmp.path()).expect("unpack");
        assert!(root.is_dir());
        assert!(!killed.exists(), "a dead unpack's folder stays");
        assert!(!legacy.exists(), "an hour-old unversioned folder stays");
        assert!(
            recent_legacy.exists(),
            "a recent unversioned folder may be in use"
        );
    }

    #[test]
    fn an_unwritable_parent_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().expect("tmp");
        let blocker = tmp.path().join("not-a-dir");
        std::fs::write(&blocker, "file").expect("write");
        let err = unpack_into(&blocker.join("share")).expect_err("cannot create below a file");
        let message = err.to_string();
        assert!(message.contains("not-a-dir"), "{message}");
        assert!(message.contains("XDG_CACHE_HOME"), "{message}");
    }
}
