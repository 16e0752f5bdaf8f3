//! One writer per directory: an advisory lock on a lock file beside (or inside) what a command writes.
//!
//! The lock is the operating system's (`flock` on Linux, through `std::fs::File::try_lock`): it is
//! released when its holder exits however it ends, kill -9 included, so a lock file left by a dead
//! process never blocks anyone. The holder writes its pid into the file, so a second writer is refused
//! with a message naming that pid. The file is removed when the lock is released normally; a waiter that
//! opened it before the removal notices (the path no longer names its file) and tries again, so two
//! processes never both believe they hold the lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Another process holds the lock, or the lock file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process writes `what` now.
    #[error(
        "{what} is being written by another trtmc-bench process{} (lock file {}); wait for it to finish or stop it, then try again",
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default(),
        path.display()
    )]
    Held {
        /// What the lock guards, as a phrase for the message (e.g. `the output runs/a`).
        what: String,
        /// The lock file.
        path: PathBuf,
        /// The pid written into the lock file by its holder, when it could be read.
        holder: Option<u32>,
    },
    /// The lock file cannot be created or locked.
    #[error("cannot lock {what} (lock file {}): {source}", path.display())]
    Io {
        /// What the lock guards, as a phrase for the message.
        what: String,
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A held lock; dropping it removes the lock file and releases the lock.
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
}

/// The lock file that guards the directory (or file) `target` from beside it: `<parent>/.<name>.lock`.
/// Used where `target` itself may be replaced as a whole (an output slot swapped into place).
pub fn sibling_lock_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parent.join(format!(".{name}.lock"))
}

impl DirLock {
    /// Takes the lock at `path` without waiting; `what` names the guarded thing in messages ("the
    /// output directory out/run1"). Refuses with [`LockError::Held`] while another process holds it.
    pub fn acquire(path: &Path, what: &str) -> Result<DirLock, LockError> {
        let io = |source| LockError::Io {
            what: what.to_string(),
            path: path.to_path_buf(),
            source,
        };
        // A few tries: each lost race means the holder released and removed the file meanwhile.
        for _ in 0..20 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        what: what.to_string(),
                        path: path.to_path_buf(),
                        holder: read_pid(&mut file),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
            if !same_file(&file, path) {
                // The previous holder removed the file between our open and our lock: start over.
                continue;
            }
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| writeln!(file, "{}", std::process::id()))
                .and_then(|()| file.flush())
                .map_err(io)?;
            return Ok(DirLock {
                file,
                path: path.to_path_buf(),
            });
        }
        Err(io(std::io::Error::other(
            "the lock file kept changing under us",
        )))
    }

    /// The lock file this lock holds.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still locked; see the module documentation for why waiters stay correct.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The pid a holder wrote into its lock file (absent when it has not written it yet).
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Whether `path` still names the open `file` (same device and inode).
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holders_pid_and_may_lock_after_release() {
        let t = tempfile::tempdir().expect("tmp");
        let path = sibling_lock_path(&t.path().join("out"));
        assert!(path.ends_with(".out.lock"));
        let held = DirLock::acquire(&path, "the output out").expect("first");
        // A second open file description of the same process conflicts like another process.
        let e = DirLock::acquire(&path, "the output out").expect_err("second");
        let text = e.to_string();
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert!(text.contains("the output out"), "{text}");
        drop(held);
        assert!(!path.exists(), "the lock file is removed on release");
        let again = DirLock::acquire(&path, "the output out").expect("after release");
        assert_eq!(again.path(), path);
    }

    #[test]
    fn a_lock_file_left_by_a_dead_holder_does_not_block() {
        let t = tempfile::tempdir().expect("tmp");
        let path = t.path().join(".lock");
        std::fs::write(&path, "999999999\n").expect("write");
        let lock = DirLock::acquire(&path, "x").expect("stale file, no lock");
        let text = std::fs::read_to_string(lock.path()).expect("read");
        assert_eq!(text.trim(), std::process::id().to_string());
    }
}
