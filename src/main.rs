use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Usage errors exit 2 (clap's default); --help and --version exit 0.
    let cli = rocescope::cli::Cli::parse();
    // a large replay may start again here, once, asking glibc for huge pages
    rocescope::huge_pages::reexec_if_worth_it(&cli);
    match rocescope::run(cli) {
        Ok(status) => status.exit_code(),
        Err(err) if rocescope::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, whatever a file name or a quoted value holds.
            let line = rocescope::one_line(&format!("{err:#}"));
            eprintln!("rocescope: {line}");
            ExitCode::from(2)
        }
    }
}
