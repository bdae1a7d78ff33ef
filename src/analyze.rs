//! `rocescope analyze`: replay a capture's QP/PSN state and report (interfaces.md §6).
//!
//! [`replay`] streams the capture through the [`crate::replay::Engine`]; [`write_report`]
//! writes the JSON report of §6.6 ([`json`]), the text report ([`text`]) or the flow table as
//! CSV ([`csv`]); [`run`] does both and evaluates `--fail-on`.

pub mod csv;
pub mod json;
pub mod pipeline;
pub mod text;

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use rocescope_dissectors::stack::Options;

use crate::capture;
use crate::cli::{AnalyzeArgs, AnalyzeFormat, Color, GlobalArgs};
use crate::config::parse_link_speed;
use crate::dissect::FrameView;
use crate::replay::{Engine, EngineConfig, Kind, Replay};

/// Inputs at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;
/// Inputs at least this large (and standard input) are replayed on two threads
/// ([`pipeline`]), when there are two cores; smaller ones are done before that pays.
const PIPELINE_MIN_BYTES: u64 = 4 << 20;

/// What `--fail-on` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailOn {
    pub kinds: Vec<Kind>,
    /// `lost` (a counter, part of the `loss` group).
    pub lost: bool,
}

impl FailOn {
    /// Parse kinds and groups (`loss`, `nak`, `pfc`, `integrity`).
    ///
    /// # Errors
    /// An unknown kind or group.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> anyhow::Result<FailOn> {
        let mut f = FailOn::default();
        for item in items {
            let name = item.as_ref().trim();
            match name {
                "" => {}
                "loss" => {
                    f.kinds.extend([Kind::PsnGap, Kind::ReadResponseGap]);
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
                "integrity" => f.kinds.extend([Kind::IcrcError, Kind::Malformed]),
                n => match Kind::from_name(n) {
                    Some(k) => f.kinds.push(k),
                    // §7's other tcp_bth_* names: accepted (never produced)
                    None if n.starts_with("tcp_bth_") && n.len() > 8 => {}
                    None => bail!(
                        "--fail-on: unknown kind `{n}` (groups: loss, nak, pfc, integrity; kinds: {})",
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
        (self.lost && replay.flows.iter().any(|f| f.psn.counters.lost > 0))
            || replay.events.iter().any(|e| self.kinds.contains(&e.kind))
    }
}

/// Everything `rocescope analyze` needs, validated.
#[derive(Debug, Clone)]
pub struct AnalyzeConfig {
    pub captures: Vec<PathBuf>,
    pub format: AnalyzeFormat,
    pub output: Option<PathBuf>,
    pub fail_on: FailOn,
    /// Events listed by the text report.
    pub events: usize,
    pub storm_ns: u64,
    pub roce_ports: Vec<u16>,
    pub link_bps: u64,
    pub quiet: bool,
    pub color: Color,
}

impl TryFrom<(&GlobalArgs, AnalyzeArgs)> for AnalyzeConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalArgs, AnalyzeArgs)) -> anyhow::Result<Self> {
        Ok(AnalyzeConfig {
            captures: args.captures,
            format: args.format,
            output: args.output,
            fail_on: FailOn::parse(&args.fail_on)?,
            events: args.events,
            storm_ns: args.pfc_storm_ms.saturating_mul(1_000_000),
            roce_ports: global.roce_ports.clone(),
            link_bps: parse_link_speed(&global.link_speed)?,
            quiet: global.quiet,
            color: global.color,
        })
    }
}

impl AnalyzeConfig {
    /// Defaults for `captures` (tests and library callers).
    #[must_use]
    pub fn new(captures: Vec<PathBuf>) -> Self {
        AnalyzeConfig {
            captures,
            format: AnalyzeFormat::Text,
            output: None,
            fail_on: FailOn::default(),
            events: 20,
            storm_ns: 200_000_000,
            roce_ports: Vec::new(),
            link_bps: crate::config::DEFAULT_LINK_BPS,
            quiet: true,
            color: Color::Never,
        }
    }
}

/// The result of a run.
#[derive(Debug)]
pub struct AnalyzeOutcome {
    pub replay: Replay,
    /// `--fail-on` matched.
    pub matched: bool,
}

fn progress_bar(cfg: &AnalyzeConfig) -> Option<indicatif::ProgressBar> {
    if cfg.quiet || !io::stderr().is_terminal() {
        return None;
    }
    let mut total = 0u64;
    for p in &cfg.captures {
        if p.as_os_str() == "-" {
            return None;
        }
        total += std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    }
    if total < PROGRESS_MIN_BYTES {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} analyze [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

/// Stream the captures through the engine.
///
/// # Errors
/// A capture that cannot be opened or read.
pub fn replay(cfg: &AnalyzeConfig) -> anyhow::Result<Replay> {
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let split =
        (two_cores && input_bytes(cfg) >= PIPELINE_MIN_BYTES).then_some(pipeline::Split::Balanced);
    replay_with(cfg, split)
}

/// Total size of the captures; `u64::MAX` when one is standard input.
fn input_bytes(cfg: &AnalyzeConfig) -> u64 {
    let mut total = 0u64;
    for p in &cfg.captures {
        if p.as_os_str() == "-" {
            return u64::MAX;
        }
        total = total.saturating_add(std::fs::metadata(p).map_or(0, |m| m.len()));
    }
    total
}

/// [`replay`] on one thread (`split` `None`) or on two, split as told (tests compare them).
///
/// # Errors
/// As [`replay`].
pub fn replay_with(cfg: &AnalyzeConfig, split: Option<pipeline::Split>) -> anyhow::Result<Replay> {
    let mut reader = capture::open_all(&cfg.captures)?;
    let mut engine = Engine::new(EngineConfig {
        link_bps: cfg.link_bps,
        storm_ns: cfg.storm_ns,
        roce_ports: cfg.roce_ports.clone(),
    });
    let bar = progress_bar(cfg);
    if let Some(split) = split {
        let progress = |bytes: u64| {
            if let Some(bar) = &bar {
                bar.set_position(bytes);
            }
        };
        pipeline::run(&mut reader, &cfg.roce_ports, &mut engine, split, &progress)?;
    } else {
        let options = Options {
            roce_ports: &cfg.roce_ports,
            ..Options::default()
        };
        let mut bytes = 0u64;
        while let Some(item) = reader.next_frame() {
            let frame = item?;
            bytes += u64::from(frame.caplen) + 16;
            let view = FrameView::new(frame, &options, 0);
            engine.frame(&view);
            if let Some(bar) = &bar {
                if frame.number % 65_536 == 0 {
                    bar.set_position(bytes);
                }
            }
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(engine.finish())
}

/// Write the report in `cfg.format`.
///
/// # Errors
/// Output errors.
pub fn write_report(
    cfg: &AnalyzeConfig,
    replay: &Replay,
    out: &mut dyn Write,
    color: bool,
) -> io::Result<()> {
    match cfg.format {
        AnalyzeFormat::Json => json::write(cfg, replay, out),
        AnalyzeFormat::Text => text::write(cfg, replay, out, color),
        AnalyzeFormat::Csv => csv::write(replay, out),
    }
}

/// The text/JSON/CSV report as a string (tests, the inspector).
///
/// # Errors
/// As [`replay`].
pub fn report_string(cfg: &AnalyzeConfig) -> anyhow::Result<String> {
    let replay = replay(cfg)?;
    let mut out = Vec::new();
    write_report(cfg, &replay, &mut out, false)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Run `rocescope analyze`: replay, write the report, evaluate `--fail-on`.
///
/// # Errors
/// Unreadable captures, output errors.
pub fn run(cfg: &AnalyzeConfig) -> anyhow::Result<AnalyzeOutcome> {
    let replay = replay(cfg)?;
    match &cfg.output {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
            let mut out = BufWriter::new(file);
            let color = cfg.color == Color::Always;
            write_report(cfg, &replay, &mut out, color)
                .and_then(|()| out.flush())
                .with_context(|| format!("{}: write error", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let color = match cfg.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => stdout.is_terminal(),
            };
            let mut out = BufWriter::with_capacity(256 << 10, stdout.lock());
            write_report(cfg, &replay, &mut out, color)?;
            out.flush()?;
        }
    }
    let matched = !cfg.fail_on.is_empty() && cfg.fail_on.matches(&replay);
    Ok(AnalyzeOutcome { replay, matched })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fail_on_groups_and_errors() {
        let f = FailOn::parse(&["loss"]).unwrap();
        assert!(f.lost && f.kinds == [Kind::PsnGap, Kind::ReadResponseGap]);
        let f = FailOn::parse(&["nak", "icrc_error", "integrity"]).unwrap();
        assert_eq!(f.kinds.len(), 6 + 2);
        assert!(FailOn::parse(&["pfc_storm", "tcp_bth_hole"]).is_ok());
        // the produced tcp_bth_* kinds are real kinds, so they match
        let f = FailOn::parse(&["tcp_bth_gap", "tcp_bth_seg_continuity"]).unwrap();
        assert_eq!(f.kinds, [Kind::TcpBthGap, Kind::TcpBthSegContinuity]);
        assert!(FailOn::parse(&["bogus"]).is_err());
        assert!(FailOn::parse(&["tcp_bth_"]).is_err());
    }
}
