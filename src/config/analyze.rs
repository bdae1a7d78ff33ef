//! `rocescope analyze`'s configuration, with `--fail-on` resolved to event kinds.

use std::path::PathBuf;

use anyhow::bail;

use super::{Color, GlobalConfig};
use crate::cli;
use crate::replay::{IcrcMode, Kind, Replay, Split};
use crate::units::{DEFAULT_LINK_BPS, parse_duration};

/// How `analyze` writes its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnalyzeFormat {
    /// For people: header, flow table, PFC table, first events.
    Text,
    /// The whole report of interfaces.md §6.6, for scripts.
    Json,
    /// The flow table.
    Csv,
    /// The report's tables as Parquet files in the `-o` directory (interfaces.md §10).
    Parquet,
}

impl From<cli::AnalyzeFormat> for AnalyzeFormat {
    fn from(f: cli::AnalyzeFormat) -> Self {
        match f {
            cli::AnalyzeFormat::Text => AnalyzeFormat::Text,
            cli::AnalyzeFormat::Json => AnalyzeFormat::Json,
            cli::AnalyzeFormat::Csv => AnalyzeFormat::Csv,
            cli::AnalyzeFormat::Parquet => AnalyzeFormat::Parquet,
        }
    }
}

/// The `--fail-on` groups.
pub const GROUPS: [&str; 6] = ["loss", "nak", "pfc", "integrity", "capture", "conformance"];

/// What `--fail-on` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailOn {
    pub kinds: Vec<Kind>,
    /// `lost` (a counter, part of the `loss` group).
    pub lost: bool,
}

impl FailOn {
    /// Parse kinds and groups (`loss`, `nak`, `pfc`, `integrity`, `capture`, `conformance`).
    ///
    /// # Errors
    /// An unknown kind or group.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> anyhow::Result<FailOn> {
        let mut f = FailOn::default();
        for item in items {
            let name = item.as_ref().trim();
            match name {
                "" => {}
                // a capture whose gaps were all capture drops does not match `loss`
                "loss" => {
                    f.kinds
                        .extend([Kind::ReadResponseGap, Kind::DroppedBetween, Kind::TcpBthGap]);
                    f.lost = true;
                }
                "lost" => f.lost = true,
                "nak" => f.kinds.extend([
                    Kind::NakPsnSeqErr,
                    Kind::NakRnr,
                    Kind::NakInvalidRequest,
                    Kind::NakRemoteAccess,
                    Kind::NakRemoteOp,
                    Kind::NakInvalidRd,
                ]),
                "pfc" => f.kinds.extend([Kind::PfcPause, Kind::PfcStorm]),
                "integrity" => f.kinds.extend([
                    Kind::IcrcError,
                    Kind::Malformed,
                    Kind::CorruptedBetween,
                    Kind::TcpBthIcrcError,
                ]),
                "capture" => f.kinds.extend([Kind::NotCaptured, Kind::Truncated]),
                "conformance" => f.kinds.extend(Kind::CONFORMANCE),
                n => match Kind::from_name(n) {
                    Some(k) => f.kinds.push(k),
                    // §7's other tcp_bth_* names: accepted (never produced)
                    None if n.starts_with("tcp_bth_") && n.len() > 8 => {}
                    None => bail!(
                        "--fail-on: unknown kind `{n}` (groups: {}; kinds: {})",
                        GROUPS.join(", "),
                        Kind::ALL.map(Kind::name).join(", ")
                    ),
                },
            }
        }
        f.kinds.sort_unstable();
        f.kinds.dedup();
        Ok(f)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty() && !self.lost
    }

    /// True when the replay found something asked for.
    #[must_use]
    pub fn matches(&self, replay: &Replay) -> bool {
        (self.lost && replay.flows.iter().any(|f| f.psn().counters().lost > 0))
            || replay.events.iter().any(|e| self.kinds.contains(&e.kind))
    }
}

/// Flows the text report lists by default (§6.6).
pub const DEFAULT_FLOWS: usize = 50;

/// `--flows N` or `all`.
fn parse_flows(s: &str) -> anyhow::Result<Option<usize>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    match s.trim().parse::<usize>() {
        Ok(n) => Ok(Some(n)),
        Err(_) => bail!("--flows {s:?}: expected a number of flows or `all`"),
    }
}

/// Everything `rocescope analyze` needs, validated.
#[derive(Debug, Clone)]
pub struct AnalyzeConfig {
    pub captures: Vec<PathBuf>,
    /// `-i IFACE`: a live interface instead of `captures`.
    pub live: Option<super::LiveConfig>,
    /// Live: a line per flow with new findings on stderr this often.
    pub report_every: std::time::Duration,
    /// `--each`: every capture on its own, not merged.
    pub each: bool,
    /// `--tap A --tap B`: two capture points of the same traffic (§6.8).
    pub taps: Vec<PathBuf>,
    /// `--tap-window`.
    pub tap_window_ns: u64,
    pub format: AnalyzeFormat,
    pub output: Option<PathBuf>,
    pub fail_on: FailOn,
    /// Events listed by the text report.
    pub events: usize,
    pub storm_ns: u64,
    /// §6.2 rule (c) and the fatal-NAK grace of §6.7.
    pub rto_min_ns: u64,
    pub icrc: IcrcMode,
    /// Flows the text report lists (`None`: all).
    pub flows: Option<usize>,
    pub roce_ports: Vec<u16>,
    /// `--rd-as rd`.
    pub rd_as_rd: bool,
    pub link_bps: u64,
    pub quiet: bool,
    pub color: Color,
    /// Engines the flows of a capture file are sharded over (`None`: by the cores; 0 or 1:
    /// one engine).
    pub shards: Option<usize>,
    /// `--split`: two threads, dissecting as told (`None`: as the replay decides).
    pub split: Option<Split>,
}

impl TryFrom<(&GlobalConfig, cli::AnalyzeArgs)> for AnalyzeConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalConfig, cli::AnalyzeArgs)) -> anyhow::Result<Self> {
        let report_every = parse_duration(&args.report_every)
            .map_err(|e| anyhow::anyhow!("--report-every: {e}"))?;
        if report_every.is_zero() {
            anyhow::bail!("--report-every: give a time above zero");
        }
        let tap_window =
            parse_duration(&args.tap_window).map_err(|e| anyhow::anyhow!("--tap-window: {e}"))?;
        if tap_window.is_zero() {
            anyhow::bail!("--tap-window: give a time above zero");
        }
        if !args.tap.is_empty() && args.tap.len() != 2 {
            anyhow::bail!(
                "--tap: two captures of the same traffic, one per capture point (got {})",
                args.tap.len()
            );
        }
        if args.tap.iter().any(|p| p.as_os_str() == "-") {
            anyhow::bail!(
                "--tap: a file, not standard input (the start of each tap is read twice: once for the clock estimate)"
            );
        }
        if !args.tap.is_empty() && args.format == cli::AnalyzeFormat::Parquet {
            anyhow::bail!(
                "--tap writes text, json or csv (-f parquet is for one capture or --each)"
            );
        }
        if args.format == cli::AnalyzeFormat::Parquet && args.output.is_none() {
            anyhow::bail!("-f parquet writes a directory of tables: name it with -o DIR");
        }
        Ok(AnalyzeConfig {
            live: super::live::live_input(global, &args.live, None)?,
            report_every,
            each: args.each,
            taps: args.tap,
            tap_window_ns: u64::try_from(tap_window.as_nanos()).unwrap_or(u64::MAX),
            captures: args.captures,
            format: args.format.into(),
            output: args.output,
            fail_on: FailOn::parse(&args.fail_on)?,
            events: args.events,
            storm_ns: args.pfc_storm_ms.saturating_mul(1_000_000),
            rto_min_ns: u64::try_from(
                parse_duration(&args.rto_min)
                    .map_err(|e| anyhow::anyhow!("--rto-min: {e}"))?
                    .as_nanos(),
            )
            .unwrap_or(u64::MAX),
            icrc: match args.icrc {
                cli::IcrcArg::Auto => IcrcMode::Auto,
                cli::IcrcArg::Trust => IcrcMode::Trust,
                cli::IcrcArg::Ignore => IcrcMode::Ignore,
            },
            flows: parse_flows(&args.flows)?,
            roce_ports: global.roce_ports.clone(),
            rd_as_rd: global.rd_as_rd,
            link_bps: global.link_bps,
            quiet: global.quiet,
            color: global.color,
            shards: args.shards,
            split: args.split.map(|s| match s {
                cli::SplitArg::Balanced => Split::Balanced,
                cli::SplitArg::Reader => Split::Reader,
                cli::SplitArg::Engine => Split::Engine,
            }),
        })
    }
}

impl AnalyzeConfig {
    /// Defaults for `captures` (tests and library callers).
    #[must_use]
    pub fn new(captures: Vec<PathBuf>) -> Self {
        AnalyzeConfig {
            captures,
            live: None,
            report_every: std::time::Duration::from_secs(1),
            each: false,
            taps: Vec::new(),
            tap_window_ns: 1_000_000_000,
            format: AnalyzeFormat::Text,
            output: None,
            fail_on: FailOn::default(),
            events: 20,
            storm_ns: 200_000_000,
            rto_min_ns: 1_000_000,
            icrc: IcrcMode::Auto,
            flows: Some(DEFAULT_FLOWS),
            roce_ports: Vec::new(),
            rd_as_rd: false,
            link_bps: DEFAULT_LINK_BPS,
            quiet: true,
            color: Color::NEVER,
            shards: None,
            split: None,
        }
    }

    /// The engine's part of it.
    #[must_use]
    pub fn engine(&self) -> crate::replay::EngineConfig {
        crate::replay::EngineConfig {
            link_bps: self.link_bps,
            storm_ns: self.storm_ns,
            roce_ports: self.roce_ports.clone(),
            rd_as_rd: self.rd_as_rd,
            rto_min_ns: self.rto_min_ns,
            icrc: self.icrc,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn split_flag_names_the_thread_that_dissects() {
        for (flag, split) in [
            (None, None),
            (Some("reader"), Some(Split::Reader)),
            (Some("engine"), Some(Split::Engine)),
            (Some("balanced"), Some(Split::Balanced)),
        ] {
            let mut argv = vec!["rocescope", "analyze", "x.pcap"];
            argv.extend(flag.map(|f| ["--split", f]).into_iter().flatten());
            let cli = <cli::Cli as clap::Parser>::parse_from(argv);
            let global = GlobalConfig::try_from(&cli.global).unwrap();
            let cli::Command::Analyze(args) = cli.cmd else {
                panic!("parsed as analyze")
            };
            let cfg = AnalyzeConfig::try_from((&global, args)).unwrap();
            assert_eq!(cfg.split, split, "{flag:?}");
        }
    }

    #[test]
    fn fail_on_groups_and_errors() {
        let f = FailOn::parse(&["loss"]).unwrap();
        // no psn_gap: a gap may be only the capture's
        let loss = [Kind::ReadResponseGap, Kind::DroppedBetween, Kind::TcpBthGap];
        assert!(f.lost && f.kinds == loss);
        let f = FailOn::parse(&["nak", "icrc_error", "integrity"]).unwrap();
        assert_eq!(f.kinds.len(), 6 + 4);
        let f = FailOn::parse(&["capture", "conformance"]).unwrap();
        assert_eq!(f.kinds.len(), 2 + 6);
        assert!(FailOn::parse(&["pfc_storm", "tcp_bth_hole"]).is_ok());
        // the produced tcp_bth_* kinds are real kinds, so they match
        let f = FailOn::parse(&["tcp_bth_gap", "tcp_bth_seg_continuity"]).unwrap();
        assert_eq!(f.kinds, [Kind::TcpBthGap, Kind::TcpBthSegContinuity]);
        assert!(FailOn::parse(&["bogus"]).is_err());
        assert!(FailOn::parse(&["tcp_bth_"]).is_err());
    }
}
