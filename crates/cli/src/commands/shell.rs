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

/// The program's name on the command line.
const BIN: &str = "trtmc-bench";
/// The name bash's script is generated for: clap_complete's bash generator spells a hyphenated name
/// two different ways inside the script (the subcommand arms never match, so nothing completes after
/// the subcommand), so it gets one without a hyphen and the `complete` lines are pointed at [`BIN`].
const BASH_NAME: &str = "trtmc_bench";

pub fn completions(args: CompletionsArgs) -> CliResult {
    let mut cmd = completed_commands();
    let mut script = Vec::new();
    let text = if args.shell == Shell::Bash {
        clap_complete::generate(args.shell, &mut cmd, BASH_NAME, &mut script);
        String::from_utf8_lossy(&script)
            .lines()
            .map(|line| {
                let registration = line.trim_start().starts_with("complete -F ");
                match line.strip_suffix(&format!(" {BASH_NAME}")) {
                    Some(rest) if registration => format!("{rest} {BIN}"),
                    _ => line.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    } else {
        clap_complete::generate(args.shell, &mut cmd, BIN, &mut script);
        String::from_utf8_lossy(&script).into_owned()
    };
    crate::out::text(&text)?;
    Ok(())
}

/// The commands completions offer: every command but the hidden internal ones (`worker`,
/// `tune-worker`, `tune-task`), which clap_complete would list.
fn completed_commands() -> clap::Command {
    let full = crate::Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new(BIN)
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible)
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
