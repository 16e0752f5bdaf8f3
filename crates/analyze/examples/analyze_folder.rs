//! Minimal driver used by scripts/bench-analyze.sh to time the library without the CLI:
//! `analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR [--package]` writes analysis.json and
//! analyze-data.json (and a report folder OUT_DIR/report with --package), and prints phase times.

use std::io::BufWriter;
use std::path::PathBuf;

use trtmc_analyze::{DataSpec, Inputs, Request};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let package = args.last().is_some_and(|a| a == "--package");
    if package {
        args.pop();
    }
    let spec = |layers: &str, profile: Option<&str>| DataSpec {
        layers: layers.into(),
        profile: profile.map(Into::into),
        times: None,
    };
    let (inputs, out) = match args.as_slice() {
        [flag, layers, out] if flag == "--data" => (Inputs::Data(vec![spec(layers, None)]), out),
        [flag, layers, profile, out] if flag == "--data" => {
            (Inputs::Data(vec![spec(layers, Some(profile))]), out)
        }
        [folder, out] => (Inputs::Folder(folder.into()), out),
        _ => {
            return Err(
                "usage: analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR [--package]"
                    .into(),
            );
        }
    };
    let started = std::time::Instant::now();
    let analysis = trtmc_analyze::analyze(&Request {
        inputs,
        model_name: None,
    })?;
    let analyzed = started.elapsed();
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    let file = |name: &str| std::fs::File::create(out.join(name)).map(BufWriter::new);
    analysis.write_json(file("analysis.json")?)?;
    let ours = started.elapsed();
    analysis.write_analyze_data(file("analyze-data.json")?)?;
    let theirs = started.elapsed();
    eprintln!(
        "timing: analyze {analyzed:?}, analysis.json {:?}, analyze-data.json {:?}",
        ours - analyzed,
        theirs - ours
    );
    if package {
        let opts = trtmc_analyze::report::PackageOptions {
            report_dir: Some(out.join("report")),
            ..Default::default()
        };
        let p = trtmc_analyze::report::package(&analysis, &opts)?;
        eprintln!("report: {}", p.index.display());
    }
    for line in analysis.summary_lines() {
        eprintln!("{line}");
    }
    Ok(())
}
