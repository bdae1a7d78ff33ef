//! `rocescope completions SHELL` and `rocescope man`: clap's completion and man page generators
//! over the command line as `cli.rs` defines it, so neither can drift from the flags.

use std::io::{self, Write};

use clap::CommandFactory;

use crate::cli::{Cli, ShellArg};

/// The completion script for `shell`.
///
/// # Errors
/// Writing fails.
pub fn completions(shell: ShellArg, out: &mut dyn Write) -> io::Result<()> {
    let shell = match shell {
        ShellArg::Bash => clap_complete::Shell::Bash,
        ShellArg::Zsh => clap_complete::Shell::Zsh,
        ShellArg::Fish => clap_complete::Shell::Fish,
    };
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "rocescope", out);
    out.flush()
}

/// The man page: `rocescope(1)`, then a section per subcommand with its options.
///
/// # Errors
/// Writing fails.
pub fn man(out: &mut dyn Write) -> io::Result<()> {
    let cmd = Cli::command();
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    for sub in cmd.get_subcommands() {
        if matches!(sub.get_name(), "help" | "man" | "completions") {
            continue;
        }
        let page = clap_mangen::Man::new(sub.clone());
        // one page: the subcommands' options follow as sections of it
        writeln!(out, ".SH \"{}\"", sub.get_name().to_uppercase())?;
        page.render_synopsis_section(out)?;
        page.render_options_section(out)?;
    }
    out.flush()
}
