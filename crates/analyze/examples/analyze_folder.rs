//! The library without the CLI, for scripts/bench-analyze.sh when `trtmc-bench` cannot be built:
//! `analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR [--analysis-only | --package]`
//! writes analysis.json and analyze-data.json (on two threads, as the CLI does), or only
//! analysis.json, or a report folder OUT_DIR/report; phase times go to standard error.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use trtmc_analyze::{Analysis, DataSpec, Inputs, Request};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn write(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<std::fs::File>) -> serde_json::Result<()>,
) -> Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    f(&mut w)?;
    w.flush()?;
    Ok(())
}

// The allocator of `trtmc-bench`, so that both time the same work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.last().map(String::as_str) {
        Some("--package" | "--analysis-only") => args.pop(),
        _ => None,
    };
    let spec = |layers: &str, profile: Option<&str>| DataSpec {
        layers: layers.into(),
        profile: profile.map(Into::into),
        times: None,
        label: None,
    };
    let (inputs, out) = match args.as_slice() {
        [flag, layers, out] if flag == "--data" => (Inputs::Data(vec![spec(layers, None)]), out),
        [flag, layers, profile, out] if flag == "--data" => (Inputs::Data(vec![spec(layers, Some(profile))]), out),
        [folder, out] => (Inputs::Folder(folder.into()), out),
        _ => return Err("usage: analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR [--analysis-only | --package]".into()),
    };
    let started = std::time::Instant::now();
    let analysis: Analysis = trtmc_analyze::analyze(&Request {
        inputs,
        model_name: None,
    })?;
    let analyzed = started.elapsed();
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    if mode.as_deref() == Some("--package") {
        let opts = trtmc_analyze::report::PackageOptions {
            report_dir: Some(out.join("report")),
            ..Default::default()
        };
        let p = trtmc_analyze::report::package(&analysis, &opts)?;
        eprintln!("report: {}", p.index.display());
    } else {
        let both = mode.is_none();
        std::thread::scope(|s| -> Result<()> {
            let theirs = both.then(|| {
                s.spawn(|| {
                    write(&out.join("analyze-data.json"), |w| {
                        analysis.write_analyze_data(w)
                    })
                })
            });
            write(&out.join("analysis.json"), |w| analysis.write_json(w))?;
            if let Some(h) = theirs {
                h.join().map_err(|_| "writer thread failed")??;
            }
            Ok(())
        })?;
    }
    eprintln!(
        "timing: analyze {analyzed:?}, outputs {:?}",
        started.elapsed() - analyzed
    );
    for line in analysis.summary_lines() {
        eprintln!("{line}");
    }
    // As in the CLI: the process ends here, so skip freeing every record one by one.
    std::mem::forget(analysis);
    Ok(())
}
