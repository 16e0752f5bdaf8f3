//! Files that are never half-written: atomic writes, and replaceable output slots.
//!
//! An output slot (`-o DIR`) is staged in a hidden sibling directory and swapped into place only when the
//! new result is complete. On Linux the swap is one `renameat2(RENAME_EXCHANGE)`, so at every instant the
//! slot holds either the complete old result or the complete new one; elsewhere two renames are used.
//! A slot is only ever replaced when it is empty or holds a recognized trtmc result; anything else, and
//! any symlink, is refused. Results are never merged.
//!
//! Every temporary carries its owner's pid in its name (`.NAME.tmp-PID`, `.NAME.staging-PID`); a killed
//! process's are removed by the next command that meets them ([`remove_stale_temporaries`]), once the
//! pid is known to be dead or reused.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Writes `bytes` to `path` through a temporary sibling, fsync and rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_through_temporary(path, |f| f.write_all(bytes))
}

/// Like [`write_atomic`] for a document too large to hold in memory twice: `write` streams it into a
/// buffered temporary sibling (1 MiB buffer, as large analyses need).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    replace_through_temporary(path, |f| {
        let mut w = BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        w.flush()
    })
}

/// Fills a temporary sibling of `path`, syncs it and renames it over `path`, so a reader sees either the
/// old file or the whole new one; the temporary is removed when anything fails.
fn replace_through_temporary(
    path: &Path,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = File::create(&tmp).and_then(|mut f| {
        fill(&mut f)?;
        f.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Serializes `value` as pretty JSON (with a trailing newline) and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// What a directory holds, for deciding whether it may be replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotContent {
    /// Nothing exists at the path.
    Missing,
    /// An empty directory.
    Empty,
    /// A directory whose marker file carries one of the accepted schema names.
    Recognized,
    /// Something the slot must not replace; the text says what (a file, an unreadable directory, another schema).
    Unrelated(String),
    /// A symbolic link, which is never followed or replaced.
    Symlink,
}

/// Inspects `dir`: is it absent, empty, a recognized result (its `marker` JSON file has a `schema` field
/// starting with one of `schema_prefixes`), a symlink, or something else?
pub fn inspect_slot(dir: &Path, marker: &str, schema_prefixes: &[&str]) -> SlotContent {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(_) => return SlotContent::Missing,
    };
    if meta.file_type().is_symlink() {
        return SlotContent::Symlink;
    }
    if !meta.is_dir() {
        return SlotContent::Unrelated("it is a file, not a directory".into());
    }
    let mut entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => return SlotContent::Unrelated(format!("it cannot be read: {e}")),
    };
    if entries.next().is_none() {
        return SlotContent::Empty;
    }
    let marker_path = dir.join(marker);
    let schema = std::fs::read(&marker_path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
    match schema {
        Some(s) if schema_prefixes.iter().any(|p| s.starts_with(p)) => SlotContent::Recognized,
        Some(s) => SlotContent::Unrelated(format!("its {marker} has schema `{s}`")),
        None => SlotContent::Unrelated(format!("it has no trtmc {marker}")),
    }
}

/// A result directory being produced: write into [`OutputSlot::staging`], then [`OutputSlot::commit`].
/// Dropping an uncommitted slot removes the staging directory and leaves the old result untouched.
///
/// The slot holds the lock of its target ([`crate::dirlock`], `.NAME.lock` beside it) from
/// [`OutputSlot::prepare`] until it is dropped, so two commands never write one output at once.
#[derive(Debug)]
pub struct OutputSlot {
    target: PathBuf,
    staging: PathBuf,
    /// What the target was when the slot was prepared: a directory made there since (by someone else)
    /// is never replaced.
    found: SlotContent,
    marker: String,
    schema_prefixes: Vec<String>,
    committed: bool,
    _lock: crate::dirlock::DirLock,
}

/// Why an output directory cannot be prepared or the staged result cannot be moved into it. The
/// message names the directory and what to do; nothing is deleted that the slot may not replace.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// The output's parent directory cannot be created.
    #[error("cannot create the output's parent {}: {source}", parent.display())]
    Parent {
        /// The parent directory.
        parent: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Another process writes the same output.
    #[error(transparent)]
    Locked(#[from] crate::dirlock::LockError),
    /// The output path is a symbolic link.
    #[error(
        "output {} is a symlink; refusing to replace it (pass the real directory or a new path to -o)",
        target.display()
    )]
    Symlink {
        /// The output path.
        target: PathBuf,
    },
    /// The output path holds something that is not a trtmc result.
    #[error(
        "output {} is not a trtmc result ({why}); refusing to replace it (choose an empty or new directory for -o)",
        target.display()
    )]
    Unrelated {
        /// The output path.
        target: PathBuf,
        /// What it holds instead.
        why: String,
    },
    /// The output path has no final component to name the staging directory after (e.g. `/`).
    #[error("output {} has no directory name", target.display())]
    NoName {
        /// The output path.
        target: PathBuf,
    },
    /// The hidden staging directory cannot be created.
    #[error("cannot create the staging directory {}: {source}", staging.display())]
    Staging {
        /// The staging directory.
        staging: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The staged result cannot be moved into the output path.
    #[error("cannot move the result into {}: {source}", target.display())]
    Move {
        /// The output path.
        target: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The target changed and the swap could not be undone: both are kept under their names.
    #[error(
        "output {} changed while the result was moved in; what it held is now in {} (nothing was deleted)",
        target.display(),
        held.display()
    )]
    Swapped {
        /// The output path, which now holds the new result.
        target: PathBuf,
        /// Where what the output held before is now.
        held: PathBuf,
    },
    /// The target may no longer be replaced: the result was moved beside it.
    #[error(
        "output {} was not replaced: {why} (it was absent or a trtmc result when the run started), so it is left untouched; the measured result is kept in {} (move it where you want it, and choose a new or empty directory for -o next time)",
        target.display(),
        kept.display()
    )]
    KeptAside {
        /// The output path, left untouched.
        target: PathBuf,
        /// Why it may no longer be replaced.
        why: String,
        /// Where the new result was moved.
        kept: PathBuf,
    },
}

impl OutputSlot {
    /// Prepares a slot for `target`, refusing symlinks and unrelated directories.
    pub fn prepare(
        target: &Path,
        marker: &str,
        schema_prefixes: &[&str],
    ) -> Result<OutputSlot, SlotError> {
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|source| SlotError::Parent {
            parent: parent.to_path_buf(),
            source,
        })?;
        let lock = crate::dirlock::DirLock::acquire(
            &crate::dirlock::sibling_lock_path(target),
            &format!("the output {}", target.display()),
        )?;
        let found = inspect_slot(target, marker, schema_prefixes);
        match &found {
            SlotContent::Symlink => {
                return Err(SlotError::Symlink {
                    target: target.to_path_buf(),
                });
            }
            SlotContent::Unrelated(why) => {
                return Err(SlotError::Unrelated {
                    target: target.to_path_buf(),
                    why: why.clone(),
                });
            }
            SlotContent::Missing | SlotContent::Empty | SlotContent::Recognized => {}
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| SlotError::NoName {
                target: target.to_path_buf(),
            })?;
        remove_stale_staging(parent, &name);
        let staging = parent.join(format!(".{name}.staging-{}", std::process::id()));
        if staging.exists() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        std::fs::create_dir(&staging).map_err(|source| SlotError::Staging {
            staging: staging.clone(),
            source,
        })?;
        Ok(OutputSlot {
            target: target.to_path_buf(),
            staging,
            found,
            marker: marker.to_string(),
            schema_prefixes: schema_prefixes.iter().map(|p| p.to_string()).collect(),
            committed: false,
            _lock: lock,
        })
    }

    /// The hidden directory to write the new result into before [`OutputSlot::commit`].
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// The output directory the result goes to on [`OutputSlot::commit`].
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the staged result in place of the old one. Only what the slot may replace is replaced: the
    /// target as it was found (absent, empty, a trtmc result) and still is. When the target was absent
    /// and a directory appeared there since, or it no longer holds a trtmc result, nothing there is
    /// touched: the new result is moved to a visible sibling (`NAME.kept`, `NAME.kept-2`, …) named in
    /// the error, so neither is lost.
    pub fn commit(mut self) -> Result<PathBuf, SlotError> {
        let target = self.target.clone();
        let fail = move |source: std::io::Error| SlotError::Move {
            target: target.clone(),
            source,
        };
        if let Some(why) = self.changed_since_prepare() {
            return Err(self.keep_aside(&why));
        }
        if std::fs::symlink_metadata(&self.target).is_ok() {
            if exchange(&self.staging, &self.target).is_ok() {
                // The staging path now holds what the target held: check it once more, since a
                // directory could have been made between the look above and the exchange.
                if self.replaceable(&self.staging) {
                    let _ = std::fs::remove_dir_all(&self.staging);
                } else if exchange(&self.staging, &self.target).is_ok() {
                    return Err(self.keep_aside("it changed while the result was moved in"));
                } else {
                    // Cannot swap back: leave both in place under their current names.
                    self.committed = true;
                    return Err(SlotError::Swapped {
                        target: self.target.clone(),
                        held: self.staging.clone(),
                    });
                }
            } else {
                let old = self.staging.with_file_name(format!(
                    "{}.old",
                    self.staging
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ));
                std::fs::rename(&self.target, &old).map_err(&fail)?;
                if let Err(e) = std::fs::rename(&self.staging, &self.target) {
                    let _ = std::fs::rename(&old, &self.target);
                    return Err(fail(e));
                }
                let _ = std::fs::remove_dir_all(&old);
            }
        } else {
            match rename_no_replace(&self.staging, &self.target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(self.keep_aside("a directory was made there during the run"));
                }
                Err(e) => return Err(fail(e)),
            }
        }
        self.committed = true;
        Ok(self.target.clone())
    }

    /// Why the target may no longer be replaced, if it changed since [`OutputSlot::prepare`].
    fn changed_since_prepare(&self) -> Option<String> {
        let now = std::fs::symlink_metadata(&self.target).is_ok();
        if self.found == SlotContent::Missing && now {
            return Some("a directory was made there during the run".into());
        }
        (now && !self.replaceable(&self.target)).then(|| "it no longer holds a trtmc result".into())
    }

    /// Whether `dir` holds something this slot may replace (empty or a recognized result).
    fn replaceable(&self, dir: &Path) -> bool {
        let prefixes: Vec<&str> = self.schema_prefixes.iter().map(String::as_str).collect();
        matches!(
            inspect_slot(dir, &self.marker, &prefixes),
            SlotContent::Missing | SlotContent::Empty | SlotContent::Recognized
        )
    }

    /// Moves the staged result to a free visible sibling of the target (`NAME.kept`, `NAME.kept-2`, …)
    /// and says where, leaving the target untouched. When even that fails, the staging directory is
    /// kept under its own name (named in the message) instead of being removed.
    fn keep_aside(&mut self, why: &str) -> SlotError {
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parent = self.staging.parent().unwrap_or(Path::new("."));
        let mut kept = self.staging.clone();
        for n in 1..1000 {
            let candidate = if n == 1 {
                parent.join(format!("{name}.kept"))
            } else {
                parent.join(format!("{name}.kept-{n}"))
            };
            if rename_no_replace(&self.staging, &candidate).is_ok() {
                kept = candidate;
                break;
            }
        }
        // Either moved or deliberately left: never removed on drop.
        self.committed = true;
        SlotError::KeptAside {
            target: self.target.clone(),
            why: why.to_string(),
            kept,
        }
    }
}

impl Drop for OutputSlot {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

/// Renames `from` to `to` unless `to` exists (then `AlreadyExists`), in one step on Linux.
#[cfg(target_os = "linux")]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "atomic exchange is only available on Linux",
    ))
}

/// Removes staging directories of this slot left by processes that no longer run (a killed run).
fn remove_stale_staging(parent: &Path, name: &str) {
    let prefix = format!(".{name}.staging-");
    remove_stale_temporaries(parent, |file_name| {
        staging_owner(file_name.strip_prefix(&prefix).map(|_| file_name)?)
    });
}

/// The pid in the name of an output slot's staging directory (`.NAME.staging-PID`, `….old`).
pub fn staging_owner(file_name: &str) -> Option<u32> {
    let (_, pid) = file_name.strip_prefix('.')?.rsplit_once(".staging-")?;
    pid.trim_end_matches(".old").parse().ok()
}

/// The pid in the name of an atomic write's temporary (`.NAME.tmp-PID`, see [`write_atomic`]).
pub fn atomic_temporary_owner(file_name: &str) -> Option<u32> {
    let (_, pid) = file_name.strip_prefix('.')?.rsplit_once(".tmp-")?;
    pid.parse().ok()
}

/// Removes the entries of `dir` that `owner` names a pid for (files or whole directories) whose
/// owning process no longer runs ([`owner_may_be_alive`]); returns how many it removed. Temporaries of
/// a live process, and anything `owner` does not recognise, are kept.
pub fn remove_stale_temporaries(dir: &Path, owner: impl Fn(&str) -> Option<u32>) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name) else { continue };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let changed = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if owner_may_be_alive(pid, changed) {
            continue;
        }
        let gone = if meta.is_dir() {
            std::fs::remove_dir_all(entry.path())
        } else {
            std::fs::remove_file(entry.path())
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// Whether process `pid`, named as the owner of a temporary last changed at `changed`, may still be
/// writing it. `false` only when it certainly is not: no such process, a zombie, or a process that
/// started after the temporary was last changed (its pid was reused by someone else). Where processes
/// cannot be inspected (no /proc), every owner is taken as alive and nothing is removed.
pub fn owner_may_be_alive(pid: u32, changed: SystemTime) -> bool {
    pid == std::process::id() || process_alive_since(pid, changed)
}

#[cfg(target_os = "linux")]
fn process_alive_since(pid: u32, changed: SystemTime) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        // No such process, unless /proc itself is missing.
        return !Path::new("/proc/self/stat").exists();
    };
    // The fields after the command name, which may itself hold spaces and parentheses: the first is
    // field 3 (state), so field 22 (start time in clock ticks after boot) is the 20th.
    let Some((_, fields)) = stat.rsplit_once(')') else {
        return true;
    };
    let fields: Vec<&str> = fields.split_whitespace().collect();
    if matches!(fields.first(), Some(&"Z" | &"X")) {
        return false;
    }
    let (Some(ticks), Some(boot)) = (
        fields.get(19).and_then(|f| f.parse::<u64>().ok()),
        boot_time(),
    ) else {
        return true;
    };
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    let started = boot + Duration::from_secs_f64(ticks as f64 / per_second as f64);
    // The boot time is in whole seconds: a process that started within that rounding counts as the
    // owner (kept rather than removed).
    started <= changed + Duration::from_secs(2)
}

#[cfg(not(target_os = "linux"))]
fn process_alive_since(_pid: u32, _changed: SystemTime) -> bool {
    true
}

/// When the machine booted (`btime` of /proc/stat).
#[cfg(target_os = "linux")]
fn boot_time() -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let secs = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// A fresh directory `<parent>/<stem>` (with `-2`, `-3`, … when taken), created exclusively.
pub fn create_unique_dir(parent: &Path, stem: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(parent)?;
    for n in 1..10_000 {
        let candidate = if n == 1 {
            parent.join(stem)
        } else {
            parent.join(format!("{stem}-{n}"))
        };
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "no free directory name for {stem} in {}",
        parent.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIXES: &[&str] = &["trtmc.benchmark-run/"];

    fn result_dir(dir: &Path, tag: &str) {
        std::fs::create_dir_all(dir).expect("mkdir");
        std::fs::write(
            dir.join("result.json"),
            format!("{{\"schema\":\"trtmc.benchmark-run/v1\",\"tag\":\"{tag}\"}}"),
        )
        .expect("write");
    }

    #[test]
    fn replaces_a_recognized_result_completely() {
        let t = tempfile::tempdir().expect("tmp");
        let out = t.path().join("out");
        result_dir(&out, "old");
        std::fs::write(out.join("stale.txt"), "old artifact").expect("write");
        let slot = OutputSlot::prepare(&out, "result.json", PREFIXES).expect("prepare");
        result_dir(slot.staging(), "new");
        slot.commit().expect("commit");
        let text = std::fs::read_to_string(out.join("result.json")).expect("read");
        assert!(text.contains("new"));
        assert!(!out.join("stale.txt").exists(), "results are never merged");
        let leftovers: Vec<_> = std::fs::read_dir(t.path()).expect("ls").flatten().collect();
        assert_eq!(leftovers.len(), 1, "staging and old copies are removed");
    }

    #[test]
    fn an_abandoned_slot_leaves_the_old_result() {
        let t = tempfile::tempdir().expect("tmp");
        let out = t.path().join("out");
        result_dir(&out, "old");
        {
            let slot = OutputSlot::prepare(&out, "result.json", PREFIXES).expect("prepare");
            result_dir(slot.staging(), "half");
        }
        assert!(
            std::fs::read_to_string(out.join("result.json"))
                .expect("read")
                .contains("old")
        );
        assert_eq!(std::fs::read_dir(t.path()).expect("ls").count(), 1);
    }

    #[test]
    fn refuses_unrelated_directories_files_and_symlinks() {
        let t = tempfile::tempdir().expect("tmp");
        let unrelated = t.path().join("photos");
        std::fs::create_dir(&unrelated).expect("mkdir");
        std::fs::write(unrelated.join("cat.jpg"), "x").expect("write");
        let e = OutputSlot::prepare(&unrelated, "result.json", PREFIXES)
            .expect_err("unrelated")
            .to_string();
        assert!(e.contains("not a trtmc result"), "{e}");
        let real = t.path().join("real");
        result_dir(&real, "old");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let e = OutputSlot::prepare(&link, "result.json", PREFIXES)
            .expect_err("symlink")
            .to_string();
        assert!(e.contains("symlink"), "{e}");
        let empty = t.path().join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        assert!(OutputSlot::prepare(&empty, "result.json", PREFIXES).is_ok());
    }

    #[test]
    fn a_directory_made_at_the_target_during_the_run_is_never_replaced() {
        let t = tempfile::tempdir().expect("tmp");
        let out = t.path().join("out");
        let slot = OutputSlot::prepare(&out, "result.json", PREFIXES).expect("prepare");
        result_dir(slot.staging(), "new");
        // Someone else makes the directory while the run measures.
        std::fs::create_dir(&out).expect("mkdir");
        std::fs::write(out.join("precious.txt"), "x").expect("write");
        let e = slot.commit().expect_err("refused").to_string();
        assert!(e.contains("made there during the run"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("precious.txt")).expect("kept"),
            "x"
        );
        let kept = t.path().join("out.kept");
        assert!(e.contains(&kept.display().to_string()), "{e}");
        assert!(
            std::fs::read_to_string(kept.join("result.json"))
                .expect("result kept")
                .contains("new")
        );
        assert!(!t.path().join(".out.lock").exists(), "the lock is released");
    }

    #[test]
    fn a_second_slot_on_one_target_is_refused_while_the_first_is_open() {
        let t = tempfile::tempdir().expect("tmp");
        let out = t.path().join("out");
        let first = OutputSlot::prepare(&out, "result.json", PREFIXES).expect("first");
        let e = OutputSlot::prepare(&out, "result.json", PREFIXES)
            .expect_err("second")
            .to_string();
        assert!(e.contains("another trtmc-bench process"), "{e}");
        drop(first);
        assert!(OutputSlot::prepare(&out, "result.json", PREFIXES).is_ok());
    }

    /// The pid of a process that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        child.wait().expect("reap");
        pid
    }

    #[test]
    fn temporaries_of_dead_owners_are_removed_and_live_ones_kept() {
        let t = tempfile::tempdir().expect("tmp");
        let dead = dead_pid();
        let own = std::process::id();
        let dead_file = t.path().join(format!(".results.json.tmp-{dead}"));
        let live_file = t.path().join(format!(".results.json.tmp-{own}"));
        let dead_dir = t.path().join(format!(".out.staging-{dead}"));
        let live_dir = t.path().join(format!(".out.staging-{own}"));
        for f in [&dead_file, &live_file] {
            std::fs::write(f, "half").expect("write");
        }
        for d in [&dead_dir, &live_dir] {
            std::fs::create_dir(d).expect("mkdir");
            std::fs::write(d.join("result.json"), "{}").expect("write");
        }
        std::fs::write(t.path().join("results.json"), "{}").expect("write");
        let removed = remove_stale_temporaries(t.path(), |n| {
            atomic_temporary_owner(n).or_else(|| staging_owner(n))
        });
        assert_eq!(removed, 2);
        assert!(
            !dead_file.exists() && !dead_dir.exists(),
            "dead owner's temporaries stay"
        );
        assert!(
            live_file.exists() && live_dir.exists(),
            "a live owner's temporaries went"
        );
        assert!(t.path().join("results.json").exists(), "a real file went");
    }

    #[test]
    fn a_live_process_that_started_after_the_temporary_does_not_own_it() {
        let t = tempfile::tempdir().expect("tmp");
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = sleeper.id();
        let file = t.path().join(format!(".report.html.tmp-{pid}"));
        std::fs::write(&file, "half").expect("write");
        // Written by the (running) sleeper as far as times tell: it is kept.
        assert!(owner_may_be_alive(pid, SystemTime::now()));
        assert_eq!(
            remove_stale_temporaries(t.path(), atomic_temporary_owner),
            0
        );
        // Last changed a minute before the sleeper started: its pid was reused, the owner is gone.
        let old = SystemTime::now() - Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(old))
            .expect("set mtime");
        let removed = remove_stale_temporaries(t.path(), atomic_temporary_owner);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert_eq!(removed, 1);
        assert!(!file.exists());
    }

    #[test]
    fn atomic_write_and_unique_dirs() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("a.json");
        write_json_atomic(&p, &serde_json::json!({"x": 1})).expect("write");
        assert_eq!(
            std::fs::read_to_string(&p).expect("read"),
            "{\n  \"x\": 1\n}\n"
        );
        let a = create_unique_dir(t.path(), "run").expect("a");
        let b = create_unique_dir(t.path(), "run").expect("b");
        assert_ne!(a, b);
        assert!(b.ends_with("run-2"));
    }

    #[test]
    fn a_failed_streamed_write_keeps_the_old_file_and_no_temporary() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("big.json");
        write_atomic_with(&p, |w| w.write_all(b"old")).expect("write");
        let failed = write_atomic_with(&p, |w| {
            w.write_all(b"half of the new")?;
            Err(std::io::Error::other("serializer failed"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&p).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(t.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["big.json"], "no temporary is left behind");
    }
}
