//! Where an installed Python package lives (the onnx wheel's models, the onnxruntime wheel's library),
//! found without importing it — and remembered, because starting Python costs ~200 ms and `list models`
//! or `run --dry-run` would otherwise pay it on every call.

use std::path::PathBuf;

use crate::fsutil::write_atomic;
use crate::hash::sha256_hex;

/// The interpreter: `$TRTMC_PYTHON`, else the `python3` beside this program when it was installed into
/// a Python environment (a wheel in a virtual environment that is not activated), else `python3`.
pub fn interpreter() -> String {
    if let Ok(python) = std::env::var("TRTMC_PYTHON") {
        return python;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("python3")))
        .filter(|sibling| sibling.is_file())
        .map_or_else(|| "python3".into(), |p| p.display().to_string())
}

/// The directory of `package` for [`interpreter`]: `Ok(None)` when it is not installed, `Err` (the
/// reason) when the interpreter cannot be started. A remembered answer is used only while its directory
/// still exists and the interpreter binary and its environment variables are unchanged.
pub fn package_dir(package: &str) -> Result<Option<PathBuf>, String> {
    let python = interpreter();
    let memo = memo_path(&python, package);
    if let Some(memo) = &memo
        && let Ok(text) = std::fs::read_to_string(memo)
    {
        let dir = PathBuf::from(text);
        if dir.is_dir() {
            return Ok(Some(dir));
        }
    }
    let script = "import importlib.util,sys\ns=importlib.util.find_spec(sys.argv[1])\nprint(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')";
    let out = std::process::Command::new(&python)
        .args(["-c", script, package])
        .output()
        .map_err(|e| format!("cannot start {python}: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || dir.is_empty() {
        return Ok(None);
    }
    if let Some(memo) = &memo
        && let Some(parent) = memo.parent()
        && std::fs::create_dir_all(parent).is_ok()
    {
        // Best effort: a lost memo only costs the next call a Python start-up.
        let _ = write_atomic(memo, dir.as_bytes());
    }
    Ok(Some(PathBuf::from(dir)))
}

/// `<user cache>/trtmc/python-packages/<key>`, keyed by the interpreter's resolved binary (path, size,
/// modification time), the variables that change what it imports, and the package; `None` when the
/// interpreter cannot be resolved on PATH (then nothing is remembered).
fn memo_path(python: &str, package: &str) -> Option<PathBuf> {
    let exe = crate::machine::find_program(python)?;
    let canonical = std::fs::canonicalize(&exe).ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let env: Vec<String> = [
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONUSERBASE",
    ]
    .iter()
    .map(|k| format!("{k}={}", std::env::var(k).unwrap_or_default()))
    .collect();
    let key = sha256_hex(
        format!(
            "{}|{}|{mtime}|{}|{}|{package}",
            exe.display(),
            canonical.display(),
            meta.len(),
            env.join("|")
        )
        .as_bytes(),
    );
    Some(
        dirs::cache_dir()?
            .join("trtmc/python-packages")
            .join(&key[..32]),
    )
}
