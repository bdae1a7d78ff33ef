use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Usage errors exit 2 (clap's default); --help and --version exit 0.
    let cli = rocescope::cli::Cli::parse();
    match rocescope::run(cli) {
        Ok(status) => status.exit_code(),
        Err(err) if rocescope::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, whatever a file name or a quoted value holds.
            let line: String = format!("{err:#}")
                .chars()
                .flat_map(|c| {
                    let escaped = c.is_control().then(|| c.escape_debug());
                    escaped
                        .into_iter()
                        .flatten()
                        .chain((!c.is_control()).then_some(c))
                })
                .collect();
            eprintln!("rocescope: {line}");
            ExitCode::from(2)
        }
    }
}
