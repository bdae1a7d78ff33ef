//! rocescope: read, write, replay and explain RoCEv2 traffic.
//!
//! The binary is a thin shell over [`run`]; every subcommand is a library
//! function that tests call without starting a process.

pub mod analyze;
pub mod capture;
pub mod cli;
pub mod config;
pub mod dissect;
pub mod filter;
pub mod generate;
pub mod pipeline;
pub mod replay;
pub mod send;
pub mod sink;
pub mod tui;

use std::process::ExitCode;

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
    match cli.cmd {
        cli::Command::Dissect(args) => {
            let cfg = config::DissectConfig::try_from((&cli.global, args))?;
            dissect::run(&cfg)?;
            Ok(Status::Clean)
        }
        cli::Command::Analyze(args) => {
            let cfg = analyze::AnalyzeConfig::try_from((&cli.global, args))?;
            let outcome = analyze::run(&cfg)?;
            Ok(if outcome.matched {
                Status::Findings
            } else {
                Status::Clean
            })
        }
        cli::Command::Generate(args) => {
            let cfg = generate::GenerateConfig {
                scenario: args.scenario,
                output: args.output,
                seed: args.seed,
                truth: args.truth,
            };
            let summary = generate::run(&cfg)?;
            if !cli.global.quiet {
                eprintln!(
                    "rocescope: wrote {} frames ({} bytes, {} truncated) to {}",
                    summary.frames,
                    summary.bytes,
                    summary.truncated_frames,
                    cfg.output.display()
                );
            }
            Ok(Status::Clean)
        }
        cli::Command::Send(args) => {
            let cfg = send::SendConfig::try_from(args)?;
            let summary = send::run(&cfg)?;
            if !cli.global.quiet {
                println!("{summary} on {}", cfg.iface);
            }
            Ok(Status::Clean)
        }
        cli::Command::Inspect(args) => {
            let cfg = tui::InspectConfig::try_from((&cli.global, args))?;
            tui::run(cfg)?;
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
