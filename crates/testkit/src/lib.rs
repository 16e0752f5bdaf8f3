//! Helpers that trtmc's tests share. A dev-dependency only: nothing in a shipped binary uses it.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `text` to `path` as an executable (0755) script that a test can run at once.
///
/// A test binary runs many threads. Had this thread written the file itself, another thread's
/// fork could inherit the open, writable descriptor and hold it until that child's `exec`; running
/// the script inside that window fails with "Text file busy" (ETXTBSY), and the program under test
/// reports a tool that does not start. Here a short-lived `sh` child opens, writes and closes the
/// file, so no thread of the test ever holds it open for writing.
///
/// Panics (it is for tests) when the script cannot be written.
#[cfg(unix)]
pub fn write_script(path: &Path, text: &str) {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "write_script"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("/bin/sh starts");
    let written = child
        .stdin
        .take()
        .expect("the child's stdin is piped")
        .write_all(text.as_bytes());
    // Dropping stdin above closed the pipe: `cat` sees the end and exits.
    let status = child.wait().expect("/bin/sh ends");
    written.expect("the script text reaches /bin/sh");
    assert!(
        status.success(),
        "writing the script {} failed: {status}",
        path.display()
    );
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_script_is_written_executable_and_runs_while_other_threads_spawn() {
        let tmp = tempfile::tempdir().expect("temporary folder");
        let dir = tmp.path();
        // Other threads forking all the time is what made direct writes fail with ETXTBSY.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spawners: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = Command::new("/bin/true").status();
                    }
                })
            })
            .collect();
        for i in 0..50 {
            let path = dir.join(format!("script-{i}"));
            write_script(&path, &format!("#!/bin/sh\necho 'it runs {i}'\n"));
            let mode = std::fs::metadata(&path)
                .expect("written")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o755, "{}", path.display());
            let out = Command::new(&path).output().expect("the script starts");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                format!("it runs {i}\n")
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for spawner in spawners {
            spawner.join().expect("spawner ends");
        }
    }
}
