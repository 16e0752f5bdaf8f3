//! trtexec's two probes kept between processes: `--help` (its version, from the banner) and
//! `--helpBuildRoute` (the knob database; each real call creates a builder and initializes CUDA).
//! A tune starts a process per route and per timing run, so without this every one of them asked
//! again.
//!
//! An answer is stored under a key made of everything that can change it (docs/tensorrt.md, "Probes
//! are cached"): the executable (canonical path, size, modification time), the library search path
//! trtexec will run with, the `libnvinfer` files that path resolves to, and the environment
//! variables that select the stand-in's behaviour. A stored answer whose key differs in any part is
//! never used; one that cannot be read is probed again and rewritten. Failures are not stored: the
//! next process probes again and reports what it finds then.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::knobs::KnobDatabase;
use crate::runner::{Trtexec, VERSION_PROBE_TIMEOUT, detect_version, effective_library_path};
use crate::version::TrtexecVersion;

/// The schema of one stored probe answer.
pub const PROBE_SCHEMA: &str = "trtmc.trtexec-probe/v1";

/// The stand-in's environment variables that change what `--help` or `--helpBuildRoute` print
/// (the simulated version, its configuration, the replayed log and exit status). The ones that only
/// record calls (`TRTMC_SIM_CALLS`, `TRTMC_STANDIN_ARGV`) are left out on purpose.
const STANDIN_VARIABLES: &[&str] = &[
    "TRTMC_SIM_VERSION",
    "TRTMC_SIM_CONFIG",
    "TRTMC_STANDIN_LOG",
    "TRTMC_STANDIN_EXIT",
];

/// Folders the dynamic loader searches after `LD_LIBRARY_PATH` (Debian/Ubuntu multiarch, RPM, local).
const SYSTEM_LIBRARY_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

/// A file as the key sees it: replaced or rewritten files change size or modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// The canonical path (symbolic links resolved).
    pub path: String,
    /// Length in bytes.
    pub size: u64,
    /// Nanoseconds since the Unix epoch.
    pub modified_ns: u64,
}

impl FileStamp {
    /// The stamp of the file `path` resolves to (symbolic links followed), if it can be read.
    pub fn of(path: &Path) -> Option<Self> {
        let canonical = std::fs::canonicalize(path).ok()?;
        let metadata = std::fs::metadata(&canonical).ok()?;
        let modified = metadata.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(Self {
            path: canonical.display().to_string(),
            size: metadata.len(),
            modified_ns: u64::try_from(modified.as_nanos()).unwrap_or(u64::MAX),
        })
    }
}

/// Everything that can change a probe's answer without changing the question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeKey {
    /// The trtexec executable itself.
    pub executable: FileStamp,
    /// `LD_LIBRARY_PATH` as trtexec gets it (the `--runtime-dir` folders first).
    pub library_path: Option<String>,
    /// The `libnvinfer` files of the first folder that has any, in the loader's order; empty when
    /// none is found (a static build, the stand-in, or a folder the loader finds by RPATH).
    pub libnvinfer: Vec<FileStamp>,
    /// The stand-in's behaviour-selecting variables that are set, with the stamp of a file one names.
    pub standin: BTreeMap<String, Value>,
}

impl ProbeKey {
    /// The key of `executable` in this process's environment; `None` when the executable cannot
    /// be stamped (then nothing is cached).
    pub fn of(executable: &Path) -> Option<Self> {
        let library_path = effective_library_path().map(|p| p.to_string_lossy().into_owned());
        Some(Self {
            executable: FileStamp::of(executable)?,
            libnvinfer: libnvinfer_files(executable, library_path.as_deref()),
            library_path,
            standin: standin_environment(),
        })
    }

    /// The file name stem of this key's answers.
    fn stem(&self) -> String {
        let json = serde_json::to_value(self).unwrap_or(Value::Null);
        let hash = trtmc_core::hash::json_hash(&json);
        format!("trtexec-{}", &hash[..16])
    }
}

/// The `libnvinfer.so*` files of the first folder holding any: `LD_LIBRARY_PATH`, then the folder
/// beside trtexec's (`TensorRT-x/bin/../lib` of the tar package), then the system folders.
fn libnvinfer_files(executable: &Path, library_path: Option<&str>) -> Vec<FileStamp> {
    let mut dirs: Vec<PathBuf> = library_path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    if let Some(bin) = executable.parent() {
        dirs.push(bin.join("../lib"));
        dirs.push(bin.to_path_buf());
    }
    dirs.extend(SYSTEM_LIBRARY_DIRS.iter().map(PathBuf::from));
    for dir in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut found: Vec<FileStamp> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("libnvinfer.so"))
            .filter_map(|e| FileStamp::of(&e.path()))
            .collect();
        if !found.is_empty() {
            found.sort_by(|a, b| a.path.cmp(&b.path));
            found.dedup();
            return found;
        }
    }
    Vec::new()
}

fn standin_environment() -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    for name in STANDIN_VARIABLES {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let text = value.to_string_lossy().into_owned();
        // A variable naming a file (a configuration, a recorded log) changes the answer when the file does.
        let stamp = FileStamp::of(Path::new(&value));
        found.insert(
            (*name).to_string(),
            serde_json::json!({"value": text, "file": stamp}),
        );
    }
    found
}

/// One stored answer.
#[derive(Serialize, Deserialize)]
struct Stored<T> {
    schema: String,
    /// `--help` or `--helpBuildRoute`.
    probe: String,
    key: ProbeKey,
    answer: T,
}

/// The probe answers below one folder (`<bundle cache>/probes`).
#[derive(Debug, Clone)]
pub struct ProbeCache {
    dir: PathBuf,
}

impl ProbeCache {
    /// The cache kept in `bundle_cache` (the `--bundle-cache` folder).
    pub fn in_bundle_cache(bundle_cache: &Path) -> Self {
        Self {
            dir: bundle_cache.join("probes"),
        }
    }

    /// The folder holding the answers.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The trtexec `explicit` names (or the one found on `PATH`) with its version: the stored answer
    /// of `--help` when its key still holds, else the banner of a new `--help`, then stored.
    pub fn locate(&self, explicit: Option<&Path>) -> Result<Trtexec> {
        let path = crate::runner::find_executable(explicit)?;
        let key = ProbeKey::of(&path);
        if let Some(version) = key
            .as_ref()
            .and_then(|k| self.read::<TrtexecVersion>(k, "--help"))
        {
            return Ok(Trtexec::with_version(path, version));
        }
        let version = detect_version(&path, VERSION_PROBE_TIMEOUT)?;
        if let Some(key) = key {
            self.write(key, "--help", version);
        }
        Ok(Trtexec::with_version(path, version))
    }

    /// `trtexec --helpBuildRoute`'s knob database: the stored one when its key still holds, else
    /// read anew (its log in `log_path`) and stored.
    pub fn knob_database(
        &self,
        trtexec: &Trtexec,
        log_path: &Path,
        timeout: Duration,
    ) -> Result<KnobDatabase> {
        let key = ProbeKey::of(trtexec.path());
        if let Some(database) = key
            .as_ref()
            .and_then(|k| self.read::<KnobDatabase>(k, "--helpBuildRoute"))
        {
            return Ok(database);
        }
        let database = trtexec.knob_database(log_path, timeout)?;
        if let Some(key) = key {
            self.write(key, "--helpBuildRoute", database.clone());
        }
        Ok(database)
    }

    fn file(&self, key: &ProbeKey, probe: &str) -> PathBuf {
        let what = probe.trim_start_matches('-');
        self.dir.join(format!("{}.{what}.json", key.stem()))
    }

    /// The stored answer of `probe` under exactly `key`; anything else (no file, another schema, a
    /// key that differs, a file cut off) is a miss.
    fn read<T: DeserializeOwned>(&self, key: &ProbeKey, probe: &str) -> Option<T> {
        let text = std::fs::read_to_string(self.file(key, probe)).ok()?;
        let stored: Stored<T> = serde_json::from_str(&text).ok()?;
        (stored.schema == PROBE_SCHEMA && stored.probe == probe && stored.key == *key)
            .then_some(stored.answer)
    }

    /// Stores an answer. A cache that cannot be written costs only a later probe, so the error is
    /// dropped.
    fn write<T: Serialize>(&self, key: ProbeKey, probe: &str, answer: T) {
        let path = self.file(&key, probe);
        let stored = Stored {
            schema: PROBE_SCHEMA.to_string(),
            probe: probe.to_string(),
            key,
            answer,
        };
        if std::fs::create_dir_all(&self.dir).is_ok() {
            let _ = trtmc_core::fsutil::write_json_atomic(&path, &stored);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_file_changes_its_stamp() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("trtexec");
        std::fs::write(&file, "one").expect("write");
        let first = FileStamp::of(&file).expect("stamp");
        std::fs::write(&file, "three").expect("rewrite");
        let second = FileStamp::of(&file).expect("stamp");
        assert_ne!(first, second);
        assert_eq!(first.path, second.path);
        assert!(FileStamp::of(&dir.path().join("missing")).is_none());
    }

    #[test]
    fn an_answer_is_used_only_under_its_own_key() {
        let dir = tempfile::tempdir().expect("tmp");
        let exe = dir.path().join("trtexec");
        std::fs::write(&exe, "#!/bin/sh\n").expect("write");
        let cache = ProbeCache::in_bundle_cache(dir.path());
        let key = ProbeKey::of(&exe).expect("key");
        let version = TrtexecVersion::new(10, 16, 1);
        cache.write(key.clone(), "--help", version);
        assert_eq!(cache.read::<TrtexecVersion>(&key, "--help"), Some(version));
        // Another probe's answer is not this one's.
        assert_eq!(cache.read::<TrtexecVersion>(&key, "--helpBuildRoute"), None);
        // A key differing only in the library path misses, even if its file name collided.
        let other = ProbeKey {
            library_path: Some("/opt/TensorRT-11.1/lib".into()),
            ..key.clone()
        };
        let collided = cache.file(&key, "--help");
        std::fs::copy(&collided, cache.file(&other, "--help")).expect("copy");
        assert_eq!(cache.read::<TrtexecVersion>(&other, "--help"), None);
        // A file cut off mid-write is a miss, not an error.
        std::fs::write(&collided, "{\"schema\": \"trtmc.trtexec-pro").expect("truncate");
        assert_eq!(cache.read::<TrtexecVersion>(&key, "--help"), None);
    }

    #[test]
    fn libnvinfer_is_stamped_from_the_first_library_folder_that_has_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let (empty, lib) = (dir.path().join("empty"), dir.path().join("lib"));
        std::fs::create_dir_all(&empty).expect("dir");
        std::fs::create_dir_all(&lib).expect("dir");
        std::fs::write(lib.join("libnvinfer.so.10.16.1"), "x").expect("lib");
        std::fs::write(lib.join("libother.so"), "y").expect("lib");
        let search = std::env::join_paths([&empty, &lib]).expect("join");
        let found = libnvinfer_files(&dir.path().join("bin/trtexec"), search.to_str());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].path.ends_with("libnvinfer.so.10.16.1"),
            "{found:?}"
        );
    }
}
