//! Validated configurations, built from the clap structs of `cli.rs` before any engine runs
//! (ripgrep's LowArgs → HiArgs step): link speeds and durations parsed, frame ranges checked,
//! display filters compiled, `--fail-on` names resolved, colour decided. Engines take these,
//! never clap types. Every error is one line; `main` turns it into exit status 2.
//!
//! [`GlobalConfig`] holds what every subcommand shares; each subcommand has its own config
//! and, where it has several output formats, its own small `Format` enum:
//! [`dissect`], [`analyze`], [`inspect`], [`generate`], [`send`], [`live`] (`-i` and
//! `capture`).

pub mod analyze;
pub mod dissect;
pub mod generate;
pub mod inspect;
pub mod live;
pub mod send;

use std::io::IsTerminal;

pub use self::analyze::{AnalyzeConfig, AnalyzeFormat, FailOn};
pub use self::dissect::{DissectConfig, DissectFormat, FieldsLayout, Occurrence};
pub use self::generate::GenerateConfig;
pub use self::inspect::InspectConfig;
pub use self::live::{CaptureConfig, LiveConfig, Rotation};
pub use self::send::{Bound, SendConfig};
use crate::cli;
use crate::units::parse_link_speed;

/// Whether output is coloured, decided once from `--color` (`auto`: only a terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Color {
    /// Colour what goes to standard output.
    pub stdout: bool,
    /// Colour what goes to a file (`-o`): only with `--color always`.
    pub files: bool,
}

impl Color {
    /// No colour anywhere.
    pub const NEVER: Color = Color {
        stdout: false,
        files: false,
    };

    fn resolve(choice: cli::Color) -> Color {
        match choice {
            cli::Color::Always => Color {
                stdout: true,
                files: true,
            },
            cli::Color::Never => Color::NEVER,
            cli::Color::Auto => Color {
                stdout: std::io::stdout().is_terminal(),
                files: false,
            },
        }
    }
}

/// What every subcommand shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalConfig {
    /// Extra UDP destination ports carrying RoCEv2 (4791 always does).
    pub roce_ports: Vec<u16>,
    /// The RD opcode range is IBA RD, not NVIDIA DC (`--rd-as rd`).
    pub rd_as_rd: bool,
    /// Converts PFC quanta to time.
    pub link_bps: u64,
    pub quiet: bool,
    pub color: Color,
}

impl TryFrom<&cli::GlobalArgs> for GlobalConfig {
    type Error = anyhow::Error;

    fn try_from(args: &cli::GlobalArgs) -> anyhow::Result<Self> {
        Ok(GlobalConfig {
            roce_ports: args.roce_ports.clone(),
            rd_as_rd: args.rd_as == cli::RdAs::Rd,
            link_bps: parse_link_speed(&args.link_speed)?,
            quiet: args.quiet,
            color: Color::resolve(args.color),
        })
    }
}
