//! `rocescope send`'s configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli;
pub use crate::sink::TxPath;
use crate::units::{Rate, parse_duration};

/// When sending stops (besides the end of the scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bound {
    /// At most this many frames.
    pub count: Option<u64>,
    /// Stop once this much time has passed since the first frame.
    pub duration: Option<Duration>,
}

impl Bound {
    /// Frames that may still go after `sent` have (`u64::MAX` without a count).
    #[must_use]
    pub fn frames_left(&self, sent: u64) -> u64 {
        self.count.map_or(u64::MAX, |n| n.saturating_sub(sent))
    }

    /// Whether the duration has passed since `start`.
    #[must_use]
    pub fn time_is_up(&self, start: std::time::Instant) -> bool {
        self.duration.is_some_and(|d| start.elapsed() >= d)
    }
}

/// A validated `send` invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct SendConfig {
    pub scenario: PathBuf,
    pub iface: String,
    pub rate: Option<Rate>,
    pub bound: Bound,
    pub seed: u64,
    /// How frames reach the interface.
    pub tx: TxPath,
}

impl TryFrom<cli::SendArgs> for SendConfig {
    type Error = anyhow::Error;

    fn try_from(args: cli::SendArgs) -> anyhow::Result<Self> {
        let rate = args
            .rate
            .as_deref()
            .map(Rate::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let duration = args
            .duration
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        Ok(SendConfig {
            scenario: args.scenario,
            iface: args.iface,
            rate,
            bound: Bound {
                count: args.count,
                duration,
            },
            seed: args.seed,
            tx: match args.tx {
                cli::TxArg::Auto => TxPath::Auto,
                cli::TxArg::Xdp => TxPath::Xdp,
                cli::TxArg::Packet => TxPath::Packet,
            },
        })
    }
}
