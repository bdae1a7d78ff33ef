//! Validated configurations, built from the clap structs of `cli.rs` before any engine runs
//! (ripgrep's LowArgs → HiArgs step): link speeds and durations parsed, frame ranges checked,
//! display filters compiled, `--fail-on` names resolved, colour decided. Engines take these,
//! never clap types. Every error is one line; `main` turns it into exit status 2.
//!
//! [`GlobalConfig`] holds what every subcommand shares; each subcommand has its own config
//! and, where it has several output formats, its own small `Format` enum:
//! [`dissect`], [`analyze`], [`inspect`], [`generate`], [`send`].

pub mod analyze;
pub mod dissect;
pub mod generate;
pub mod inspect;
pub mod send;

use std::io::IsTerminal;

use anyhow::{Context, bail};

pub use self::analyze::{AnalyzeConfig, AnalyzeFormat, FailOn};
pub use self::dissect::{DissectConfig, DissectFormat};
pub use self::generate::GenerateConfig;
pub use self::inspect::InspectConfig;
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

/// An inclusive range of 1-based frame numbers (`--frames A-B`, `A-`, `N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRange {
    pub first: u64,
    /// `None`: to the end of the capture.
    pub last: Option<u64>,
}

impl FrameRange {
    /// Every frame.
    pub const ALL: FrameRange = FrameRange {
        first: 1,
        last: None,
    };

    #[must_use]
    pub fn contains(&self, number: u64) -> bool {
        number >= self.first && self.last.is_none_or(|last| number <= last)
    }

    /// True once `number` is past the range (nothing more can match).
    #[must_use]
    pub fn is_past(&self, number: u64) -> bool {
        self.last.is_some_and(|last| number > last)
    }
}

impl std::str::FromStr for FrameRange {
    type Err = anyhow::Error;

    /// `A-B`, `A-` or `N`, 1-based and inclusive; `A` ≤ `B`.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        let num = |t: &str| -> anyhow::Result<u64> {
            let t = t.trim();
            let n: u64 = t
                .parse()
                .with_context(|| format!("--frames {s:?}: `{t}` is not a frame number"))?;
            if n == 0 {
                bail!("--frames {s:?}: frame numbers start at 1");
            }
            Ok(n)
        };
        let range = match s.split_once('-') {
            None => {
                let n = num(s)?;
                FrameRange {
                    first: n,
                    last: Some(n),
                }
            }
            Some((a, b)) if b.trim().is_empty() => FrameRange {
                first: num(a)?,
                last: None,
            },
            Some((a, b)) => FrameRange {
                first: if a.trim().is_empty() { 1 } else { num(a)? },
                last: Some(num(b)?),
            },
        };
        if range.last.is_some_and(|last| last < range.first) {
            bail!("--frames {s:?}: the range ends before it starts");
        }
        Ok(range)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn frame_ranges() {
        let r: FrameRange = "10-20".parse().unwrap();
        assert_eq!(
            r,
            FrameRange {
                first: 10,
                last: Some(20)
            }
        );
        let r: FrameRange = "7".parse().unwrap();
        assert!(r.contains(7) && !r.contains(8) && r.is_past(8));
        let r: FrameRange = "5-".parse().unwrap();
        assert!(r.contains(5) && r.contains(u64::MAX) && !r.contains(4));
        for bad in ["", "0", "a-b", "20-10", "1-2-3", "-"] {
            assert!(bad.parse::<FrameRange>().is_err(), "{bad}");
        }
    }
}
