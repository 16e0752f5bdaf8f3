//! The installed program (docs/install.md): a copy of the binary with no checkout in reach finds its
//! embedded catalog; an unwritable cache, a missing `--runtime-dir` and a missing ONNX Runtime are one
//! message and a documented exit code each; `--runtime-dir` is searched first and recorded; the shell
//! completions and man pages come from the real command definition.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// A copy of the binary in a fresh folder, run with a fresh HOME from that folder.
struct Installed {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Installed {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tmp");
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).expect("mkdir");
        let bin = bin_dir.join("trtmc-bench");
        std::fs::copy(BIN, &bin).expect("copy the binary");
        std::fs::create_dir_all(dir.path().join("home")).expect("mkdir");
        Installed { dir, bin }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.home())
            .env_remove("XDG_CACHE_HOME")
            .env_remove("TRTMC_MANIFEST_ROOT")
            .env_remove("TRTMC_RUNTIME_DIRS")
            .env_remove("ORT_DYLIB_PATH");
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Another test thread that forks while the copy is being written holds the file open for
        // writing until its child execs: exec then fails with ETXTBSY for a moment.
        for _ in 0..100 {
            match cmd.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other.expect("start the copied trtmc-bench"),
            }
        }
        panic!("the copied trtmc-bench stayed busy for 2 s")
    }

    /// `run --model tiny-cnn` with a few calls into `out`, plus `extra` arguments.
    fn run_tiny_cnn(&self, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut args = vec![
            "run",
            "--model",
            "tiny-cnn",
            "--iterations",
            "3",
            "--warmup",
            "1",
            "--quiet",
            "-o",
            p(out),
        ];
        args.extend_from_slice(extra);
        self.run(&args, env)
    }
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf8 path")
}

#[test]
fn a_copied_binary_lists_and_runs_its_embedded_catalog() {
    let installed = Installed::new();
    let o = installed.run(&["list", "models"], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.starts_with("tiny-gpt ")), "{out}");
    let share = installed.home().join(".cache/trtmc/share");
    let root_line = out
        .lines()
        .find(|l| l.contains(" profile(s) in "))
        .expect("the catalog line");
    assert!(root_line.contains(p(&share)), "{root_line}");
    let repo = std::fs::canonicalize(repo_root()).expect("repo");
    assert!(!out.contains(p(&repo)), "a checkout path leaked: {out}");
    assert!(!out.contains("/../"), "paths are normalised: {out}");

    // A real run of an embedded model from the copy.
    let result = installed.dir.path().join("result");
    let o = installed.run_tiny_cnn(&result, &[], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(result.join("result.json")).expect("result.json");
    assert!(!text.contains(p(&repo)), "the result names the checkout");

    // The schemas and suites it carries, as files the user can open.
    let o = installed.run(&["list", "schemas"], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schemas: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    let on_disk = std::fs::read_dir(repo_root().join("schemas"))
        .expect("schemas/")
        .count();
    assert_eq!(schemas.len(), on_disk, "{schemas:?}");
    for schema in &schemas {
        assert!(schema.starts_with(p(&share)), "{schema}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(schema).expect("schema file"))
                .expect("JSON");
        assert!(doc.is_object(), "{schema}");
    }
    let o = installed.run(&["list", "suites"], &[]);
    let suites = stdout(&o);
    assert!(
        suites
            .lines()
            .any(|l| l.starts_with("release ") && l.ends_with("release.yaml")),
        "{suites}"
    );
}

#[test]
fn an_embedded_catalog_that_cannot_be_unpacked_is_exit_7_naming_the_fix() {
    let installed = Installed::new();
    let blocker = installed.dir.path().join("cache-is-a-file");
    std::fs::write(&blocker, "not a folder").expect("write");
    let o = installed.run(&["list", "models"], &[("XDG_CACHE_HOME", p(&blocker))]);
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cache-is-a-file"), "{err}");
    assert!(
        err.contains("XDG_CACHE_HOME") && err.contains("--manifest-root"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one message: {err}");
    // --manifest-root still works without the embedded copy.
    let o = installed.run(
        &[
            "list",
            "models",
            "--manifest-root",
            p(&repo_root().join("catalog")),
        ],
        &[("XDG_CACHE_HOME", p(&blocker))],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_missing_runtime_dir_is_exit_3_naming_it() {
    let installed = Installed::new();
    let missing = installed.dir.path().join("no-such-runtime-dir");
    let o = installed.run(
        &[
            "run",
            "--model",
            "tiny-cnn",
            "--dry-run",
            "--runtime-dir",
            p(&missing),
        ],
        &[],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no-such-runtime-dir") && err.contains("--runtime-dir"),
        "{err}"
    );
}

/// The onnxruntime wheel's library, as scripts/test installs it.
fn wheel_library() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util,glob,os;s=importlib.util.find_spec('onnxruntime');print(sorted(glob.glob(os.path.join(list(s.submodule_search_locations)[0],'capi','libonnxruntime.so*')),key=len)[-1])",
        ])
        .output()
        .expect("python3");
    assert!(out.status.success(), "the onnxruntime wheel is installed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn libonnxruntime_is_found_in_a_runtime_dir_and_the_folder_is_recorded() {
    let installed = Installed::new();
    let runtime_dir = installed.dir.path().join("ort-libs");
    std::fs::create_dir_all(&runtime_dir).expect("mkdir");
    let library = wheel_library();
    std::os::unix::fs::symlink(
        &library,
        runtime_dir.join(library.file_name().expect("file name")),
    )
    .expect("link");
    // No Python to find the wheel with: only the runtime dir can supply the library.
    let no_python = [("TRTMC_PYTHON", "/nonexistent/python3")];
    let without = installed.dir.path().join("without");
    let o = installed.run_tiny_cnn(&without, &["--runtime", "onnxruntime"], &no_python);
    assert_eq!(code(&o), 7, "without the folder: {}", stderr(&o));
    assert!(
        stderr(&o).contains("pip install 'trtmc[onnxruntime]'"),
        "{}",
        stderr(&o)
    );

    let with = installed.dir.path().join("with");
    let o = installed.run_tiny_cnn(
        &with,
        &["--runtime", "onnxruntime", "--runtime-dir", p(&runtime_dir)],
        &no_python,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run = read_json(&with.join("result.json"));
    assert_valid("benchmark-run.schema.json", &run);
    let canonical = std::fs::canonicalize(&runtime_dir).expect("canonical");
    assert_eq!(
        run["provenance"]["runtime_dirs"],
        serde_json::json!([p(&canonical)])
    );
}

#[test]
fn completions_and_man_pages_come_from_the_command_definition() {
    let bash = run(&["completions", "bash"]);
    assert_eq!(code(&bash), 0, "{}", stderr(&bash));
    let script = stdout(&bash);
    assert!(
        script
            .lines()
            .any(|l| l.trim_start().starts_with("complete -F") && l.ends_with(" trtmc-bench")),
        "registers a bash completion function for trtmc-bench"
    );
    for word in ["matrix", "--runtime-dir", "--manifest-root", "completions"] {
        assert!(script.contains(word), "bash completion lacks {word}");
    }
    let zsh = stdout(&run(&["completions", "zsh"]));
    assert!(zsh.starts_with("#compdef trtmc-bench"), "{}", &zsh[..40]);
    let fish = stdout(&run(&["completions", "fish"]));
    assert!(fish.contains("complete -c trtmc-bench"));
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(code(&bad), 2);

    let page = stdout(&run(&["man"]));
    assert!(page.contains(".TH trtmc-bench 1"), "{}", &page[..200]);
    let dir = tempfile::tempdir().expect("tmp");
    let o = run(&["man", "--dir", p(dir.path())]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run_page = std::fs::read_to_string(dir.path().join("trtmc-bench-run.1")).expect("run page");
    assert!(run_page.contains("runtime\\-dir"), "run's options");
    assert!(
        !dir.path().join("trtmc-bench-worker.1").exists(),
        "internal subcommands get no page"
    );
}
