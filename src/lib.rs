//! rocescope: read, write, replay and explain RoCEv2 traffic.
//!
//! The binary is a thin shell over [`run`]; every subcommand is a library function that tests
//! call without starting a process. The layers, each depending only on those below it:
//!
//! - the commands: [`dissect`], [`analyze`], [`tui`] (`inspect`), [`generate`], [`send`] — none
//!   imports another;
//! - [`replay`]: the engine, and [`replay::run`], the frame driver the commands replay through;
//! - [`filter`] (display filters), [`sink`] (capture writers, the live interface), [`outfile`]
//!   (output files that are complete or absent);
//! - [`source`] (frame sources and the one frame-reading loop) over [`capture`] (pcap/pcapng
//!   files) and [`ahead`] (the one recycled-batch read-ahead);
//! - [`frame`]: the per-frame layer every command shares (view, problem, summary line);
//! - [`cli`] (clap, flags only) → [`config`] (validated configs) and [`units`].

// Input never panics the library: no unwrap, expect or panic outside tests, and an index that
// could fail only in a module that says, at its top, why it cannot.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod ahead;
pub mod analyze;
pub mod capture;
pub mod cli;
pub mod columnar;
pub mod config;
pub mod decimal;
pub mod dissect;
pub mod filter;
pub mod frame;
pub mod generate;
pub mod huge_pages;
pub mod live;
pub mod outfile;
pub mod record;
pub mod replay;
pub mod send;
pub mod shell;
pub mod sink;
pub mod source;
pub mod text;
pub mod tui;
pub mod units;

use std::process::ExitCode;

pub use text::one_line;

/// How a successful run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit 0.
    Clean,
    /// Exit 1: `analyze --fail-on` matched a finding.
    Findings,
}

impl Status {
    #[must_use]
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Clean => ExitCode::SUCCESS,
            Status::Findings => ExitCode::from(1),
        }
    }
}

/// Run one parsed command line.
pub fn run(cli: cli::Cli) -> anyhow::Result<Status> {
    let global = config::GlobalConfig::try_from(&cli.global)?;
    match cli.cmd {
        cli::Command::Dissect(args) => {
            dissect::run(&config::DissectConfig::try_from((&global, args))?)?;
            Ok(Status::Clean)
        }
        cli::Command::Analyze(args) => {
            let cfg = config::AnalyzeConfig::try_from((&global, args))?;
            let matched = if !cfg.taps.is_empty() {
                analyze::taps::run(&cfg)?.matched
            } else if cfg.each {
                analyze::each::run(&cfg)?
            } else {
                let outcome = analyze::run(&cfg)?;
                // The process ends next: freeing hundreds of thousands of flows one by one
                // would only delay it (the system takes the memory back at once).
                std::mem::forget(outcome.replay);
                outcome.matched
            };
            Ok(if matched {
                Status::Findings
            } else {
                Status::Clean
            })
        }
        cli::Command::Generate(args) => {
            let cfg = config::GenerateConfig::try_from(args)?;
            let written = generate::run(&cfg)?;
            if !global.quiet {
                for (path, summary) in written {
                    eprintln!(
                        "rocescope: wrote {} frames ({} bytes, {} truncated) to {}",
                        summary.frames,
                        summary.bytes,
                        summary.truncated_frames,
                        path.display()
                    );
                }
            }
            Ok(Status::Clean)
        }
        cli::Command::Send(args) => {
            let cfg = config::SendConfig::try_from(args)?;
            let (summary, path) = send::run(&cfg)?;
            if !global.quiet {
                println!("{summary} on {} ({path})", cfg.iface);
            }
            Ok(Status::Clean)
        }
        cli::Command::Capture(args) => {
            record::run(&config::CaptureConfig::try_from((&global, args))?)?;
            Ok(Status::Clean)
        }
        cli::Command::Completions(args) => {
            shell::completions(args.shell, &mut std::io::stdout().lock())?;
            Ok(Status::Clean)
        }
        cli::Command::Man => {
            shell::man(&mut std::io::stdout().lock())?;
            Ok(Status::Clean)
        }
        cli::Command::Inspect(args) => {
            tui::run(config::InspectConfig::try_from((&global, args))?)?;
            Ok(Status::Clean)
        }
    }
}

/// True when the error chain ends in a broken pipe (`rocescope dissect x | head`).
#[must_use]
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
