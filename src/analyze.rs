//! `rocescope analyze`: replay a capture's QP/PSN state and report (interfaces.md §6).
//!
//! [`replay`] streams the captures through [`crate::replay::run`]; [`write_report`] writes the
//! JSON report of §6.6 ([`json`]), the text report ([`text`]) or the flow table as CSV
//! ([`csv`]); [`run`] does both and evaluates `--fail-on`.

pub mod csv;
pub mod each;
pub mod json;
mod ordered;
pub mod parquet;
mod pretty;
pub mod taps;
pub mod text;

use std::io::{self, BufWriter, IsTerminal, Write};
use std::ops::ControlFlow;

use anyhow::Context;

use crate::capture;
pub use crate::config::{AnalyzeConfig, AnalyzeFormat as Format, FailOn};
use crate::outfile::AtomicFile;
use crate::replay::{self, Observer, Replay, Split};
use crate::source::Threads;

/// Inputs at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// The result of a run.
#[derive(Debug)]
pub struct AnalyzeOutcome {
    pub replay: Replay,
    /// `--fail-on` matched.
    pub matched: bool,
}

/// The progress bar on stderr, fed by the replay.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(cfg: &AnalyzeConfig, total: Option<u64>) -> Self {
        let Some(total) = total.filter(|&t| t >= PROGRESS_MIN_BYTES) else {
            return Progress(None);
        };
        if cfg.quiet || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} analyze [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress(Some(bar))
    }
}

impl Observer for Progress {
    fn progress(&mut self, _frames: u64, bytes: u64) -> ControlFlow<()> {
        if let Some(bar) = &self.0 {
            bar.set_position(bytes);
        }
        ControlFlow::Continue(())
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// Stream the captures through the engine (two threads for large inputs).
///
/// # Errors
/// A capture that cannot be opened or read.
pub fn replay(cfg: &AnalyzeConfig) -> anyhow::Result<Replay> {
    replay_threads(cfg, cfg.split.map(Some))
}

/// [`replay`] on one thread (`split` `None`) or on two, split as told (tests compare them).
///
/// # Errors
/// As [`replay`].
pub fn replay_with(cfg: &AnalyzeConfig, split: Option<Split>) -> anyhow::Result<Replay> {
    replay_threads(cfg, Some(split))
}

/// [`replay`] with the flows sharded over `shards` engines (tests compare it with one), the
/// frames read as `threads` says.
///
/// # Errors
/// As [`replay`].
pub fn replay_sharded(
    cfg: &AnalyzeConfig,
    shards: usize,
    threads: Threads,
) -> anyhow::Result<Replay> {
    let mut source = capture::open_all(&cfg.captures)?;
    completed(replay::run_sharded(
        &mut source,
        &cfg.engine(),
        shards,
        threads,
        &mut (),
    ))
}

/// The replay of every frame, or the source's error.
fn completed(replayed: replay::Replayed) -> anyhow::Result<Replay> {
    match replayed.error {
        Some(e) => Err(e.into()),
        None => Ok(replayed.replay),
    }
}

/// Engines to shard a capture file's flows over: as told, else one per core beyond the two
/// that read and judge the frames (on two cores the two-thread replay is faster: the reading
/// thread is the bound, issue 13).
fn shards(cfg: &AnalyzeConfig) -> usize {
    cfg.shards.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if cores >= 4 { (cores - 2).min(8) } else { 1 }
    })
}

fn replay_threads(cfg: &AnalyzeConfig, threads: Option<Option<Split>>) -> anyhow::Result<Replay> {
    if let Some(live) = &cfg.live {
        return replay_live(cfg, live, threads);
    }
    let mut source = capture::open_all(&cfg.captures)?;
    let mut progress = Progress::new(cfg, source.size_hint());
    let engine = cfg.engine();
    let shards = shards(cfg);
    completed(match threads {
        None if shards > 1 => {
            replay::run_sharded(&mut source, &engine, shards, Threads::Auto, &mut progress)
        }
        _ => replay::run_with(&mut source, &engine, threads, &mut progress),
    })
}

/// `analyze -i`: the replay on a live interface until `--duration` or a stop signal, a line per
/// flow with new findings on stderr every `--report-every`, the kernel's drops in the report.
fn replay_live(
    cfg: &AnalyzeConfig,
    live: &crate::live::LiveConfig,
    threads: Option<Option<Split>>,
) -> anyhow::Result<Replay> {
    let mut source = crate::live::open(live)?;
    let handle = source.handle();
    crate::live::stop_on_signals(&handle)?;
    if !cfg.quiet {
        eprintln!("rocescope: {}", crate::live::listening_line(live, &source));
    }
    let mut report = LiveReport::new(cfg);
    let replayed = replay::run_with(&mut source, &cfg.engine(), threads, &mut report);
    let mut replay = replayed.replay;
    replay.capture.kernel_drops = Some(handle.kernel_drops());
    if !cfg.quiet {
        eprintln!(
            "rocescope: {}: {}",
            live.iface,
            crate::live::summary(&handle)
        );
    }
    if let Some(e) = replayed.error {
        return Err(e.into());
    }
    Ok(replay)
}

/// `analyze -i`'s periodic lines: for each flow with findings since the last line, their
/// kinds and counts.
struct LiveReport {
    every: Option<std::time::Duration>,
    /// When the last lines were printed (`None`: never; the first findings go out at once).
    last: Option<std::time::Instant>,
    frames: u64,
    /// Findings already reported (a position in the engine's list).
    seen: usize,
}

impl LiveReport {
    fn new(cfg: &AnalyzeConfig) -> Self {
        LiveReport {
            every: (!cfg.quiet).then_some(cfg.report_every),
            last: None,
            frames: 0,
            seen: 0,
        }
    }
}

impl Observer for LiveReport {
    fn frame_done(&mut self, engine: &replay::Engine, idle: bool) {
        let Some(every) = self.every else { return };
        self.frames += 1;
        // a clock read per 256 frames, or whenever the interface goes quiet
        if !(idle || self.frames.is_multiple_of(256)) || engine.events().len() == self.seen {
            return;
        }
        if self.last.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        self.print(engine);
    }

    fn source_done(&mut self, engine: &replay::Engine) {
        if self.every.is_some() {
            self.print(engine);
        }
    }
}

impl LiveReport {
    /// A line per flow with findings since the last lines.
    fn print(&mut self, engine: &replay::Engine) {
        let events = engine.events();
        let new = events.get(self.seen..).unwrap_or_default();
        self.seen = events.len();
        if new.is_empty() {
            return;
        }
        self.last = Some(std::time::Instant::now());
        for line in live_lines(engine, new) {
            eprintln!("rocescope: {line}");
        }
    }
}

/// One line per flow (and one for findings of no flow) of `new` findings.
fn live_lines(engine: &replay::Engine, new: &[replay::Finding]) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut by_flow: BTreeMap<Option<u32>, BTreeMap<&'static str, u64>> = BTreeMap::new();
    for f in new {
        *by_flow
            .entry(f.flow)
            .or_default()
            .entry(f.kind.name())
            .or_default() += 1;
    }
    by_flow
        .into_iter()
        .map(|(flow, kinds)| {
            let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let counts = counts.join(", ");
            match flow.and_then(|id| Some((id, engine.flows().get(id as usize)?))) {
                Some((id, f)) => format!(
                    "flow {id} {}: {counts} (lost {} so far)",
                    engine.hosts().key(&f.key),
                    f.psn().counters().lost
                ),
                None => format!("capture: {counts}"),
            }
        })
        .collect()
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
        Format::Json => json::write(cfg, replay, out),
        Format::Text => text::write(cfg, replay, out, color),
        Format::Csv => csv::write(replay, out),
        // a directory of tables, not a stream: written by `run` and `--each`
        Format::Parquet => Err(io::Error::other(
            "-f parquet writes a directory of tables (-o DIR)",
        )),
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
        Some(dir) if cfg.format == Format::Parquet => {
            parquet::write_dir(cfg, &replay, dir)?;
            if !cfg.quiet {
                eprintln!(
                    "rocescope: wrote {} flows, {} events and the capture, pfc and tcp_bth tables to {}",
                    replay.flows.len(),
                    replay.events.len(),
                    dir.display()
                );
            }
        }
        Some(path) => {
            let file = AtomicFile::create(path)
                .with_context(|| format!("{}: cannot create", path.display()))?;
            let mut out = BufWriter::new(file);
            write_report(cfg, &replay, &mut out, cfg.color.files)
                .and_then(|()| out.flush())
                .and_then(|()| out.get_mut().commit())
                .with_context(|| format!("{}: write error", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let mut out = BufWriter::with_capacity(256 << 10, stdout.lock());
            write_report(cfg, &replay, &mut out, cfg.color.stdout)?;
            out.flush()?;
        }
    }
    if !cfg.quiet {
        for line in notices(cfg, &replay) {
            eprintln!("rocescope: {line}");
        }
    }
    let matched = !cfg.fail_on.is_empty() && cfg.fail_on.matches(&replay);
    Ok(AnalyzeOutcome { replay, matched })
}

/// The one-line notices `analyze` prints on stderr: a file whose ICRCs are not the wire's
/// (§6.5), a capture with nothing rocescope decodes (§6, naming the link types it held).
#[must_use]
pub fn notices(cfg: &AnalyzeConfig, replay: &Replay) -> Vec<String> {
    let mut out = Vec::new();
    for &i in &replay.icrc_unreliable {
        let name = cfg
            .captures
            .get(usize::from(i))
            .map_or_else(|| format!("input {i}"), |p| p.display().to_string());
        out.push(format!(
            "{name}: the ICRC of every verifiable frame is wrong, so the capture point did not record the wire's ICRCs (an offload sniffer?): frames sequenced anyway, ICRC errors counted without events (--icrc trust counts them as corrupted frames)"
        ));
    }
    if replay.capture.frames > 0 && replay.capture.decoded() == 0 {
        let links: Vec<String> = replay.link_types.iter().map(ToString::to_string).collect();
        out.push(format!(
            "{}: no frame decodes as RoCE, InfiniBand, PFC or tcp_bth (link types seen: {})",
            cfg.captures
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            links.join(", ")
        ));
    }
    out
}
