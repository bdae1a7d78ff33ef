//! `rocescope inspect`'s configuration.

use std::path::PathBuf;

use super::GlobalConfig;
use crate::cli;
use crate::units::DEFAULT_LINK_BPS;

/// Validated settings of `rocescope inspect`.
#[derive(Debug, Clone)]
pub struct InspectConfig {
    pub capture: PathBuf,
    /// `-i IFACE`: a live interface instead of `capture`.
    pub live: Option<super::LiveConfig>,
    /// The display filter the inspector opens with (compiled, with its errors shown, there).
    pub filter: Option<String>,
    /// `--tap A --tap B`: two capture points of the same traffic; `capture` is the one shown.
    pub taps: Vec<PathBuf>,
    pub roce_ports: Vec<u16>,
    /// `--rd-as rd`.
    pub rd_as_rd: bool,
    pub link_bps: u64,
}

impl InspectConfig {
    /// Settings for `capture` with the defaults of the command line.
    #[must_use]
    pub fn new(capture: impl Into<PathBuf>) -> Self {
        InspectConfig {
            capture: capture.into(),
            live: None,
            filter: None,
            taps: Vec::new(),
            roce_ports: Vec::new(),
            rd_as_rd: false,
            link_bps: DEFAULT_LINK_BPS,
        }
    }
}

impl TryFrom<(&GlobalConfig, cli::InspectArgs)> for InspectConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalConfig, cli::InspectArgs)) -> anyhow::Result<Self> {
        let live = super::live::live_input(global, &args.live, None)?;
        if !args.tap.is_empty() && args.tap.len() != 2 {
            anyhow::bail!(
                "--tap: two captures of the same traffic, one per capture point (got {})",
                args.tap.len()
            );
        }
        let capture = match args.tap.first() {
            Some(first) => first.clone(),
            None => args.capture.unwrap_or_default(),
        };
        if live.is_none()
            && args
                .tap
                .iter()
                .chain([&capture])
                .any(|p| p.as_os_str() == "-")
        {
            anyhow::bail!("inspect needs a capture file, not standard input");
        }
        Ok(InspectConfig {
            live,
            capture,
            filter: args.filter,
            taps: args.tap,
            roce_ports: global.roce_ports.clone(),
            rd_as_rd: global.rd_as_rd,
            link_bps: global.link_bps,
        })
    }
}
