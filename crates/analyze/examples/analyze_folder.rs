//! Minimal driver used by scripts/bench-analyze.sh when the CLI cannot be built:
//! `analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR [--package]` writes analysis.json and
//! analyze-data.json (and a report folder OUT_DIR/report with --package).

use std::io::BufWriter;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let package = args.last().is_some_and(|a| a == "--package");
    if package {
        args.pop();
    }
    let (inputs, out) = match args.as_slice() {
        [flag, layers, out] if flag == "--data" => (
            trtmc_analyze::Inputs::Data(vec![trtmc_analyze::DataSpec {
                layers: layers.into(),
                profile: None,
                times: None,
            }]),
            out,
        ),
        [flag, layers, profile, out] if flag == "--data" => (
            trtmc_analyze::Inputs::Data(vec![trtmc_analyze::DataSpec {
                layers: layers.into(),
                profile: Some(profile.into()),
                times: None,
            }]),
            out,
        ),
        [folder, out] => (trtmc_analyze::Inputs::Folder(folder.into()), out),
        _ => return Err("usage: analyze_folder (FOLDER | --data LAYERS [PROFILE]) OUT_DIR".into()),
    };
    let analysis = trtmc_analyze::analyze(&trtmc_analyze::Request {
        inputs,
        model_name: None,
    })?;
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    analysis.write_json(BufWriter::new(std::fs::File::create(
        out.join("analysis.json"),
    )?))?;
    analysis.write_analyze_data(BufWriter::new(std::fs::File::create(
        out.join("analyze-data.json"),
    )?))?;
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
