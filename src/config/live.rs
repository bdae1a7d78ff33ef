//! Live input (`-i IFACE`) and `rocescope capture`'s configuration.

use std::path::PathBuf;
use std::time::Duration;

use super::GlobalConfig;
use crate::cli;
pub use crate::live::{Backend, LiveConfig};
use crate::units::{parse_duration, parse_si};

/// A snapshot length below this cannot hold the headers rocescope reads.
const MIN_SNAPLEN: u32 = 64;
/// tcpdump's largest snapshot length (a TPACKET_V3 block holds several such frames).
const MAX_SNAPLEN: u32 = crate::live::DEFAULT_SNAPLEN;

fn backend(b: cli::BackendArg) -> Backend {
    match b {
        cli::BackendArg::Auto => Backend::Auto,
        cli::BackendArg::Packet => Backend::PacketSocket,
        cli::BackendArg::Libpcap => Backend::Libpcap,
    }
}

fn duration(flag: &str, text: Option<&str>) -> anyhow::Result<Option<Duration>> {
    text.map(|t| parse_duration(t).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .transpose()
}

fn buffer(text: Option<&str>) -> anyhow::Result<u64> {
    let Some(t) = text else {
        return Ok(crate::live::DEFAULT_BUFFER);
    };
    parse_si(t)
        .filter(|&b| (MIN_BUFFER..=MAX_BUFFER).contains(&b))
        .ok_or_else(|| anyhow::anyhow!("--buffer {t:?}: give a size from 8M to 2G"))
}

/// Two ring blocks of 4 MiB.
const MIN_BUFFER: u64 = 8_000_000;
/// What libpcap's `int` buffer size holds.
const MAX_BUFFER: u64 = 2_000_000_000;

fn snaplen(n: Option<u32>) -> anyhow::Result<u32> {
    match n {
        None => Ok(crate::live::DEFAULT_SNAPLEN),
        Some(n) if (MIN_SNAPLEN..=MAX_SNAPLEN).contains(&n) => Ok(n),
        Some(n) => anyhow::bail!("--snaplen {n}: give {MIN_SNAPLEN} to {MAX_SNAPLEN} bytes"),
    }
}

/// The live input of `dissect`, `analyze` or `inspect`, when `-i` was given; `count` is the
/// command's own frame bound.
///
/// # Errors
/// A malformed `--duration` or an out-of-range `--snaplen`.
pub fn live_input(
    global: &GlobalConfig,
    args: &cli::LiveArgs,
    count: Option<u64>,
) -> anyhow::Result<Option<LiveConfig>> {
    let Some(iface) = &args.iface else {
        return Ok(None);
    };
    Ok(Some(LiveConfig {
        iface: iface.clone(),
        snaplen: snaplen(args.snaplen)?,
        all: args.all,
        roce_ports: global.roce_ports.clone(),
        backend: backend(args.backend),
        count,
        duration: duration("--duration", args.duration.as_deref())?,
        buffer: buffer(args.buffer.as_deref())?,
    }))
}

/// `--ring N --ring-size SIZE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Files kept at most.
    pub files: u32,
    /// A file is closed once it holds this many bytes.
    pub bytes: u64,
}

/// A validated `rocescope capture`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureConfig {
    pub live: LiveConfig,
    pub output: PathBuf,
    pub rotation: Option<Rotation>,
    /// Counters on stderr this often (when it is a terminal).
    pub stats_every: Duration,
    pub quiet: bool,
}

impl TryFrom<(&GlobalConfig, cli::CaptureArgs)> for CaptureConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalConfig, cli::CaptureArgs)) -> anyhow::Result<Self> {
        let rotation = match (args.ring, args.ring_size.as_deref()) {
            (Some(files), Some(size)) => {
                let bytes = parse_si(size).filter(|&b| b >= 4096).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--ring-size {size:?}: give a size of at least 4K (64K, 100M, 1G)"
                    )
                })?;
                if files == 0 {
                    anyhow::bail!("--ring 0: keep at least one file");
                }
                Some(Rotation { files, bytes })
            }
            _ => None,
        };
        let stats_every =
            duration("--stats-every", Some(&args.stats_every))?.unwrap_or(Duration::from_secs(1));
        if stats_every.is_zero() {
            anyhow::bail!("--stats-every: give a time above zero");
        }
        Ok(CaptureConfig {
            live: LiveConfig {
                iface: args.iface,
                snaplen: snaplen(args.snaplen)?,
                all: args.all,
                roce_ports: global.roce_ports.clone(),
                backend: backend(args.backend),
                count: args.count,
                duration: duration("--duration", args.duration.as_deref())?,
                buffer: buffer(args.buffer.as_deref())?,
            },
            output: args.output,
            rotation,
            stats_every,
            quiet: global.quiet,
        })
    }
}
