//! `completions` and `man`: shell completion scripts and roff man pages, generated from the same clap
//! definition that parses the command line (the wheel ships both).

use std::path::PathBuf;

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

use crate::exit::{CliError, CliResult, ExitCode};

#[derive(Debug, Args)]
#[command(after_help = "\
Install, e.g.:
  trtmc-bench completions bash > ~/.local/share/bash-completion/completions/trtmc-bench
  trtmc-bench completions zsh  > ~/.zfunc/_trtmc-bench      (with fpath+=~/.zfunc before compinit)
  trtmc-bench completions fish > ~/.config/fish/completions/trtmc-bench.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write trtmc-bench.1 and one page per subcommand (trtmc-bench-run.1, …) into DIR instead of
    /// printing the main page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs) -> CliResult {
    let mut cmd = crate::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "trtmc-bench", &mut script);
    crate::out::text(&String::from_utf8_lossy(&script))?;
    Ok(())
}

pub fn man(args: ManArgs) -> CliResult {
    let cmd = crate::Cli::command();
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        render(&cmd, "trtmc-bench", &mut page)?;
        crate::out::text(&String::from_utf8_lossy(&page))?;
        return Ok(());
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let mut pages = vec![(String::from("trtmc-bench"), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("trtmc-bench-{}", sub.get_name());
        let page = sub
            .clone()
            .display_name(name.clone())
            .bin_name(format!("trtmc-bench {}", sub.get_name()));
        pages.push((name, page));
    }
    for (name, page_cmd) in pages {
        let mut page = Vec::new();
        render(&page_cmd, &name, &mut page)?;
        let path = dir.join(format!("{name}.1"));
        trtmc_core::fsutil::write_atomic(&path, &page).map_err(|e| {
            CliError::new(
                ExitCode::Output,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        outln!("{}", path.display())?;
    }
    Ok(())
}

fn render(cmd: &clap::Command, title: &str, page: &mut Vec<u8>) -> CliResult {
    clap_mangen::Man::new(cmd.clone())
        .title(title)
        .render(page)
        .map_err(CliError::internal)
}
