//! Background work of the inspector behind one [`Workers`] handle: the frame index, then the
//! replay, on one thread (a large file is indexed from its middle by a second thread at the
//! same time, so that `G` waits for half the file), and filter scans, each on its own thread.
//!
//! Each worker reads the capture itself and sends [`Update`]s; the UI thread applies them to
//! the [`super::app::App`] between key presses. The replay goes through the same driver as
//! `analyze` ([`crate::replay::run`]); the PSN chart is an observer of it. Every worker stops
//! when its stop flag is set (a new filter, or the app going away).

// Indexing cannot panic here: the eight priorities index eight-entry arrays; spans and PSN series
// are indexed by positions pushed into them.
#![allow(clippy::indexing_slicing)]

use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use rocescope_dissectors::stack::DissectOptions;

use crate::capture::frame_index::FrameIndex;
use crate::capture::index::{IndexEntry, Indexer};
use crate::capture::{CaptureReader, Resume};
use crate::filter::{Filter, FrameMarks};
use crate::frame::FrameView;
use crate::live::{self, LiveConfig};
use crate::replay::Addr;
use crate::replay::{self, Detail, EngineConfig, Finding, Kind, Observer, PacketEvent, Replay};
use crate::sink::{FrameSink, PcapNgWriter};
use crate::source::{self, Limited, Threads};

/// Index entries sent per update.
const INDEX_CHUNK: usize = 16_384;
/// Smallest capture file indexed by two threads at once (a smaller one takes well under 0.1 s).
const SPLIT_MIN: u64 = 64 << 20;
/// Filter matches sent per update.
const MATCH_CHUNK: usize = 4_096;
/// PSN points kept for the PSN chart, over all flows.
pub const MAX_PSN_POINTS: usize = 2_000_000;

/// One request packet of a flow, for the PSN chart, in 12 bytes (the chart keeps up to
/// [`MAX_PSN_POINTS`] and draws them in order; the frame tells the time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsnPoint {
    flow: u32,
    /// Frame numbers past `u32::MAX` get no point.
    frame: u32,
    /// The PSN (24 bits) and the [`PsnClass`] above it.
    psn_class: u32,
}

impl PsnPoint {
    /// The point of a request in `frame`; `None` past frame 4,294,967,295.
    #[must_use]
    pub fn new(flow: u32, frame: u64, psn: u32, class: PsnClass) -> Option<Self> {
        Some(PsnPoint {
            flow,
            frame: u32::try_from(frame).ok()?,
            psn_class: (psn & 0x00FF_FFFF) | (class as u32) << 24,
        })
    }

    #[must_use]
    pub fn frame(&self) -> u64 {
        u64::from(self.frame)
    }

    #[must_use]
    pub fn psn(&self) -> u32 {
        self.psn_class & 0x00FF_FFFF
    }

    #[must_use]
    pub fn class(&self) -> PsnClass {
        // `ALL` is in declaration order: index = discriminant
        let at = (self.psn_class >> 24) as usize;
        PsnClass::ALL.get(at).copied().unwrap_or(PsnClass::InOrder)
    }

    fn set_class(&mut self, class: PsnClass) {
        self.psn_class = (self.psn_class & 0x00FF_FFFF) | (class as u32) << 24;
    }
}

/// Every flow's PSN points in one list, by flow and then frame (a list per flow of a
/// 400,000-flow capture cost a header and growth room each).
#[derive(Debug, Default)]
pub struct PsnSeries {
    points: Vec<PsnPoint>,
    /// Per flow id: where its points start in `points` (and one past the last flow).
    starts: Vec<u32>,
}

impl PsnSeries {
    /// Sorts `points` (in the order the replay met them) by flow.
    fn new(mut points: Vec<PsnPoint>) -> Self {
        // (flow, frame) is one packet: an unstable sort keeps each flow's in frame order
        points.sort_unstable_by_key(|p| (p.flow, p.frame, p.psn_class));
        let flows = points.last().map_or(0, |p| p.flow as usize + 1);
        let mut starts = Vec::with_capacity(flows + 1);
        let mut at = 0;
        for flow in 0..=flows {
            while points.get(at).is_some_and(|p| (p.flow as usize) < flow) {
                at += 1;
            }
            starts.push(u32::try_from(at).unwrap_or(u32::MAX));
        }
        PsnSeries { points, starts }
    }

    fn range(&self, flow: usize) -> std::ops::Range<usize> {
        let next = flow.checked_add(1).and_then(|n| self.starts.get(n));
        match (self.starts.get(flow), next) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }

    /// The points of flow `flow`, in frame order.
    #[must_use]
    pub fn flow(&self, flow: usize) -> &[PsnPoint] {
        self.points.get(self.range(flow)).unwrap_or_default()
    }

    fn flow_mut(&mut self, flow: usize) -> &mut [PsnPoint] {
        let range = self.range(flow);
        self.points.get_mut(range).unwrap_or_default()
    }
}

/// How the replay classified a request packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PsnClass {
    InOrder,
    /// The first packet after a gap.
    AfterGap,
    OutOfOrder,
    Retransmission,
    Duplicate,
}

impl PsnClass {
    /// Every class, in the chart's legend order (their declaration order).
    pub const ALL: [PsnClass; 5] = [
        PsnClass::InOrder,
        PsnClass::AfterGap,
        PsnClass::OutOfOrder,
        PsnClass::Retransmission,
        PsnClass::Duplicate,
    ];
}

/// PSNs of a flow the responder acknowledged but the capture never showed (interfaces.md
/// §6.2 capture loss): `n` PSNs from `first`, settled at `frame`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissedRange {
    pub frame: u64,
    pub first: u32,
    pub n: u32,
}

/// A PFC pause of one priority, `[start, end)` in ns since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseSpan {
    pub priority: u8,
    pub start_ns: u64,
    pub end_ns: u64,
    pub frame: u64,
}

/// What the replay worker hands over when it is done.
#[derive(Debug)]
pub struct ReplayData {
    pub replay: Replay,
    /// The PSN chart's points, per flow.
    pub psn: PsnSeries,
    /// PSN points dropped past [`MAX_PSN_POINTS`].
    pub psn_dropped: u64,
    /// Per flow id, up to the last flow that has some: the PSNs missed by the capture only, for
    /// the PSN chart.
    pub missed: Vec<Vec<MissedRange>>,
    pub pauses: Vec<PauseSpan>,
    /// The capture ended in this error (the frames before it were replayed).
    pub error: Option<String>,
}

/// A message from a worker.
#[derive(Debug)]
pub enum Update {
    /// More index entries, in file order.
    Indexed(Vec<IndexEntry>),
    /// More of the index, after the entries sent so far.
    IndexedPart(Box<FrameIndex>),
    /// The index is complete; `Some` when the file ended in an error.
    IndexDone(Option<String>),
    /// Replay progress: frames replayed so far.
    ReplayProgress(u64),
    ReplayDone(Result<Box<ReplayData>, String>),
    /// Frame numbers matching filter generation `gen`.
    Matches {
        generation: u64,
        frames: Vec<u64>,
    },
    MatchesDone {
        generation: u64,
    },
    /// Live: frames the kernel dropped so far.
    KernelDrops(u64),
}

/// Settings the workers share.
#[derive(Debug, Clone)]
pub struct WorkerCfg {
    pub path: PathBuf,
    pub roce_ports: Vec<u16>,
    pub rd_as_rd: bool,
    pub link_bps: u64,
    /// Live: the interface captured into `path` (the spool file) as the inspector runs.
    pub live: Option<LiveConfig>,
    /// Live: frames the spool file holds whole so far (what replays and filters may read).
    pub spooled: Arc<AtomicU64>,
}

/// The inspector's background threads: they all report on one channel and stop together.
#[derive(Debug)]
pub struct Workers {
    cfg: WorkerCfg,
    tx: Sender<Update>,
    rx: Receiver<Update>,
    /// Stops the index and the replay (filters have their own flags).
    stop: Arc<AtomicBool>,
    /// Live: a replay of the spool is running.
    replaying: Arc<AtomicBool>,
    /// Live: when the last replay started, and the frames it read.
    replayed: (std::time::Instant, u64),
}

impl Workers {
    #[must_use]
    pub fn new(cfg: WorkerCfg) -> Self {
        let (tx, rx) = mpsc::channel();
        Workers {
            cfg,
            tx,
            rx,
            stop: Arc::new(AtomicBool::new(false)),
            replaying: Arc::default(),
            replayed: (std::time::Instant::now(), 0),
        }
    }

    /// Live: replays the spool again when frames came since the last replay, at most every
    /// [`LIVE_REPLAY_EVERY`] and one at a time (the same replay a file gets: the inspector
    /// shows what `analyze` of the frames so far reports).
    pub fn tick(&mut self) {
        if self.cfg.live.is_none() {
            return;
        }
        let spooled = self.cfg.spooled.load(Ordering::Acquire);
        if spooled > self.replayed.1
            && self.replayed.0.elapsed() >= LIVE_REPLAY_EVERY
            && !self.replaying.swap(true, Ordering::AcqRel)
        {
            self.replayed = (std::time::Instant::now(), spooled);
            spawn_live_replay(&self.cfg, &self.tx, &self.stop, &self.replaying);
        }
    }

    /// Starts indexing the capture and replaying it (live: capturing, indexing as frames come
    /// and replaying what came every [`LIVE_REPLAY_EVERY`]).
    pub fn start(&self) {
        self.start_with(None);
    }

    /// [`start`](Self::start), live from `source` when it is given (opened before the screen
    /// was taken, so that the capture is running when the inspector shows).
    pub fn start_with(&self, source: Option<live::LiveSource>) {
        if let Some(live) = &self.cfg.live {
            spawn_live(
                &self.cfg,
                live.clone(),
                source,
                self.tx.clone(),
                Arc::clone(&self.stop),
            );
            return;
        }
        spawn_index(&self.cfg, self.tx.clone(), Arc::clone(&self.stop));
    }

    /// Starts a filter scan (generation `generation`); setting the returned flag stops it.
    pub fn filter(
        &self,
        filter: Filter,
        marks: Option<FrameMarks>,
        generation: u64,
    ) -> Arc<AtomicBool> {
        let stop = Arc::new(AtomicBool::new(false));
        spawn_filter(
            &self.cfg,
            filter,
            marks,
            generation,
            self.tx.clone(),
            Arc::clone(&stop),
        );
        stop
    }

    /// An update that has arrived, if any.
    #[must_use]
    pub fn try_recv(&self) -> Option<Update> {
        self.rx.try_recv().ok()
    }

    /// The next update, waiting at most `timeout`.
    ///
    /// # Errors
    /// Nothing arrived in time.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Update, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Spawns the index worker; the replay follows on the same thread once the index is complete,
/// so that indexing has both cores first (`G` waits for it) and the replay has both after.
fn spawn_index(cfg: &WorkerCfg, tx: Sender<Update>, stop: Arc<AtomicBool>) {
    let cfg = cfg.clone();
    let _ = thread::Builder::new()
        .name("inspect-index".into())
        .spawn(move || {
            let Some(end) = index(&cfg.path, SPLIT_MIN, &tx, &stop) else {
                return; // stopped
            };
            if tx.send(Update::IndexDone(end)).is_err() {
                return;
            }
            if let Some(result) = replay(&cfg, &tx, &stop) {
                let _ = tx.send(Update::ReplayDone(result.map(Box::new)));
            }
        });
}

/// Indexes the whole file, sending the entries in order; the error the file ends in, `None`
/// when it was stopped. A file of `split_min` bytes or more is indexed from its middle at
/// the same time, on a second thread ([`Indexer::split_point`]); that half is sent whole once
/// this thread has reached where it began.
fn index(
    path: &Path,
    split_min: u64,
    tx: &Sender<Update>,
    stop: &Arc<AtomicBool>,
) -> Option<Option<String>> {
    let mut ix = match Indexer::open(path) {
        Ok(ix) => ix,
        Err(e) => return Some(Some(e.to_string())),
    };
    // however this returns, the second indexer stops unless its half was taken
    let drop_tail = DropTail(Arc::new(AtomicBool::new(false)));
    let mut tail = ix.split_point(split_min).and_then(|at| {
        let (path, stop) = (path.to_owned(), Arc::clone(stop));
        let drop_tail = Arc::clone(&drop_tail.0);
        let spawned = thread::Builder::new().name("inspect-index2".into()).spawn({
            let at = at.clone();
            move || index_tail(&path, &at, &stop, &drop_tail)
        });
        spawned.ok().inspect(|_| ix.stop_at(&at))
    });
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        // compacted here: the UI thread only moves it into its index while both cores index
        let mut part = FrameIndex::with_capacity(INDEX_CHUNK);
        let more = ix.next_chunk(&mut part, INDEX_CHUNK);
        if !part.is_empty() && tx.send(Update::IndexedPart(Box::new(part))).is_err() {
            return None;
        }
        if ix.passed() {
            drop_tail.0.store(true, Ordering::Relaxed); // free its core now
        }
        match more {
            Ok(true) => {}
            Ok(false) if ix.reached() => {
                let rest = tail.take().and_then(|t| t.join().ok().flatten());
                match rest {
                    Some((rest, end)) => {
                        if tx.send(Update::IndexedPart(Box::new(rest))).is_err() {
                            return None;
                        }
                        return Some(end);
                    }
                    None => ix.resume(), // the second indexer failed: read on from there
                }
            }
            Ok(false) => return Some(None),
            Err(e) => return Some(Some(e.to_string())),
        }
    }
}

/// Stops the second indexer when dropped.
struct DropTail(Arc<AtomicBool>);

impl Drop for DropTail {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The second indexer: the index from `at` to the end, and the error the file ends in; `None`
/// when it could not start or was stopped.
fn index_tail(
    path: &Path,
    at: &Resume,
    stop: &AtomicBool,
    drop_tail: &AtomicBool,
) -> Option<(FrameIndex, Option<String>)> {
    let mut ix = Indexer::open_at(path, at).ok()?;
    let mut index = FrameIndex::new();
    loop {
        if stop.load(Ordering::Relaxed) || drop_tail.load(Ordering::Relaxed) {
            return None;
        }
        match ix.next_chunk(&mut index, INDEX_CHUNK) {
            Ok(true) => {}
            Ok(false) => return Some((index, None)),
            Err(e) => return Some((index, Some(e.to_string()))),
        }
    }
}

/// The PSN chart as an observer of the replay: one point per request packet of each flow,
/// [`MAX_PSN_POINTS`] in all. It also reports progress and stops the replay when asked.
struct PsnChart<'a> {
    psn: Vec<PsnPoint>,
    kept: usize,
    dropped: u64,
    tx: &'a Sender<Update>,
    stop: &'a AtomicBool,
}

impl Observer for PsnChart<'_> {
    fn packet(&mut self, flow: u32, ev: &PacketEvent) {
        if !ev.operation().is_some_and(|o| o.is_request()) {
            return;
        }
        let point = PsnPoint::new(flow, ev.frame, ev.psn.value(), PsnClass::InOrder);
        if let Some(point) = point.filter(|_| self.kept < MAX_PSN_POINTS) {
            self.kept += 1;
            self.psn.push(point);
        } else {
            self.dropped += 1;
        }
    }

    fn progress(&mut self, frames: u64, _bytes: u64) -> ControlFlow<()> {
        if self.stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        let _ = self.tx.send(Update::ReplayProgress(frames));
        ControlFlow::Continue(())
    }
}

/// The replay of the whole capture; `None` when it was stopped.
fn replay(
    cfg: &WorkerCfg,
    tx: &Sender<Update>,
    stop: &AtomicBool,
) -> Option<Result<ReplayData, String>> {
    let mut reader = match CaptureReader::open(&cfg.path) {
        Ok(r) => Limited::new(r, cfg.frames_readable()),
        Err(e) => return Some(Err(e.to_string())),
    };
    let engine = EngineConfig {
        link_bps: cfg.link_bps,
        roce_ports: cfg.roce_ports.clone(),
        rd_as_rd: cfg.rd_as_rd,
        ..EngineConfig::default()
    };
    let mut chart = PsnChart {
        psn: Vec::new(),
        kept: 0,
        dropped: 0,
        tx,
        stop,
    };
    // Two threads when there are two cores: the index is complete by now.
    let replayed = replay::run_with(&mut reader, &engine, None, &mut chart);
    if replayed.stopped || stop.load(Ordering::Relaxed) {
        return None;
    }
    let replay = replayed.replay;
    let mut psn = PsnSeries::new(chart.psn);
    classify(&mut psn, &replay.events);
    let pauses = pauses(&replay.events);
    let missed = missed(replay.flows.len(), &replay.events);
    Some(Ok(ReplayData {
        replay,
        psn,
        psn_dropped: chart.dropped,
        missed,
        pauses,
        error: replayed.error.map(|e| e.to_string()),
    }))
}

/// Marks PSN points with the replay's findings on their frame.
fn classify(psn: &mut PsnSeries, events: &[Finding]) {
    for ev in events {
        let class = match ev.kind {
            Kind::PsnGap => PsnClass::AfterGap,
            Kind::OutOfOrder => PsnClass::OutOfOrder,
            Kind::Retransmission | Kind::ImpliedTimeout => PsnClass::Retransmission,
            Kind::Duplicate => PsnClass::Duplicate,
            _ => continue,
        };
        let Some(flow) = ev.flow else {
            continue;
        };
        let points = psn.flow_mut(flow as usize);
        let at = points.partition_point(|p| p.frame() < ev.frame);
        if let Some(p) = points.get_mut(at).filter(|p| p.frame() == ev.frame) {
            // A retransmission outranks the gap it may also close.
            if p.class() == PsnClass::InOrder || class == PsnClass::Retransmission {
                p.set_class(class);
            }
        }
    }
}

/// The `not_captured` ranges per flow, from the findings.
fn missed(flows: usize, events: &[Finding]) -> Vec<Vec<MissedRange>> {
    // up to the last flow that has some (a list per flow of 400,000 would be 9 MiB of empty ones)
    let mut out: Vec<Vec<MissedRange>> = Vec::new();
    for ev in events {
        let (Kind::NotCaptured, Detail::NotCaptured { ranges, .. }) = (ev.kind, &ev.detail) else {
            continue;
        };
        let Some(flow) = ev.flow.map(|f| f as usize).filter(|&f| f < flows) else {
            continue;
        };
        if out.len() <= flow {
            out.resize_with(flow + 1, Vec::new);
        }
        out[flow].extend(ranges.iter().map(|&(first, n)| MissedRange {
            frame: ev.frame,
            first: first.value(),
            n,
        }));
    }
    out
}

/// PFC pause spans per priority from the pause/resume findings.
fn pauses(events: &[Finding]) -> Vec<PauseSpan> {
    let mut open: [Option<usize>; 8] = [None; 8];
    let mut spans: Vec<PauseSpan> = Vec::new();
    for ev in events {
        let Detail::Pfc {
            priority,
            quanta,
            ns,
        } = ev.detail
        else {
            continue;
        };
        let p = usize::from(priority & 7);
        if let Some(i) = open[p].take() {
            let s = &mut spans[i];
            s.end_ns = s.end_ns.min(ev.time_ns).max(s.start_ns);
        }
        if matches!(ev.kind, Kind::PfcPause) && quanta > 0 {
            open[p] = Some(spans.len());
            spans.push(PauseSpan {
                priority: priority & 7,
                start_ns: ev.time_ns,
                end_ns: ev.time_ns.saturating_add(ns),
                frame: ev.frame,
            });
        }
    }
    spans
}

/// Spawns a filter scan over the whole file (generation `generation`).
fn spawn_filter(
    cfg: &WorkerCfg,
    filter: Filter,
    marks: Option<FrameMarks>,
    generation: u64,
    tx: Sender<Update>,
    stop: Arc<AtomicBool>,
) {
    let cfg = cfg.clone();
    let _ = thread::Builder::new()
        .name("inspect-filter".into())
        .spawn(move || {
            let Ok(reader) = CaptureReader::open(&cfg.path) else {
                let _ = tx.send(Update::MatchesDone { generation });
                return;
            };
            let mut reader = Limited::new(reader, cfg.frames_readable());
            let options = DissectOptions {
                roce_ports: &cfg.roce_ports,
                rd_as_rd: cfg.rd_as_rd,
                ..DissectOptions::default()
            };
            let mut marks = marks.unwrap_or_default();
            let mut chunk = Vec::new();
            let scanned = source::for_each(&mut reader, Threads::One, |frame, at| {
                let mut place = None;
                let view = FrameView::new_in(&mut place, &frame, &options, at.first_time_ns);
                let m = marks.next_frame(frame.number);
                if filter.matches_marked(&view.facts(), m, view.dissected.as_ref()) {
                    chunk.push(frame.number);
                    if chunk.len() >= MATCH_CHUNK {
                        let frames = std::mem::take(&mut chunk);
                        if tx.send(Update::Matches { generation, frames }).is_err() {
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                }
                if frame.number % 16_384 == 0 && stop.load(Ordering::Relaxed) {
                    return Ok(ControlFlow::Break(()));
                }
                Ok::<_, crate::capture::CaptureError>(ControlFlow::Continue(()))
            });
            // A scan that stopped early (a newer filter) reports nothing more; one that ended in
            // a capture error reports what it found before it.
            if stop.load(Ordering::Relaxed) && scanned.is_ok() {
                return;
            }
            if !chunk.is_empty() {
                let _ = tx.send(Update::Matches {
                    generation,
                    frames: chunk,
                });
            }
            let _ = tx.send(Update::MatchesDone { generation });
        });
}

impl WorkerCfg {
    /// Frames a reader of `path` may read: all of a file, what was spooled whole of a live
    /// capture.
    fn frames_readable(&self) -> u64 {
        if self.live.is_some() {
            self.spooled.load(Ordering::Acquire)
        } else {
            u64::MAX
        }
    }
}

/// Live: the spool is replayed again this often while frames come.
pub const LIVE_REPLAY_EVERY: Duration = Duration::from_secs(1);
/// Live: new frames are handed to the UI at least this often.
const LIVE_INDEX_EVERY: Duration = Duration::from_millis(100);

/// The live worker: the interface into the spool file (pcapng) and an index entry per frame as
/// it is written ([`Workers::tick`] replays the spool).
fn spawn_live(
    cfg: &WorkerCfg,
    live: LiveConfig,
    source: Option<live::LiveSource>,
    tx: Sender<Update>,
    stop: Arc<AtomicBool>,
) {
    let cfg = cfg.clone();
    let _ = thread::Builder::new()
        .name("inspect-live".into())
        .spawn(move || {
            let opened = match source {
                Some(s) => Ok(s),
                None => live::open(&live),
            };
            let done = match opened.and_then(|s| capture_live(&cfg, &live, s, &tx, &stop)) {
                Ok(()) => None,
                Err(e) => Some(crate::text::one_line(&format!("{e:#}"))),
            };
            let _ = tx.send(Update::IndexDone(done));
        });
}

/// Counts the bytes written through it: where the next pcapng block starts.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: std::io::Write> std::io::Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn capture_live(
    cfg: &WorkerCfg,
    live: &LiveConfig,
    mut source: live::LiveSource,
    tx: &Sender<Update>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let handle = source.handle();
    let file = std::fs::OpenOptions::new().append(true).open(&cfg.path)?;
    let mut out = PcapNgWriter::for_interface(
        Counting {
            inner: file,
            written: 0,
        },
        live.snaplen,
        source.link(),
        &live.iface,
    )?;
    out.finish()?;
    // the header blocks are out: every frame's block starts `next` bytes in
    let mut next = out.get_ref().map_or(0, |c| c.written);
    let link = source.link();
    let mut entries = Vec::new();
    let mut sent = std::time::Instant::now();
    let mut frames = 0u64;
    let mut watched = 0u64;
    let result = source::for_each(&mut source, Threads::One, |frame, at| {
        out.send_truncated(frame.time_ns, frame.data, frame.orig_len)?;
        entries.push(IndexEntry {
            offset: next + 28,
            time_ns: frame.time_ns,
            len: frame.caplen,
            caplen: frame.caplen,
            orig_len: frame.orig_len,
            link,
        });
        next += 32 + u64::from(frame.caplen.div_ceil(4) * 4);
        frames += 1;
        if at.idle || entries.len() >= INDEX_CHUNK || sent.elapsed() >= LIVE_INDEX_EVERY {
            out.finish()?;
            cfg.spooled.store(frames, Ordering::Release);
            sent = std::time::Instant::now();
            let _ = tx.send(Update::KernelDrops(handle.kernel_drops()));
            if tx
                .send(Update::Indexed(std::mem::take(&mut entries)))
                .is_err()
            {
                handle.stop();
            }
        }
        // the app went away: end the capture (checked now and then, a load is cheap)
        watched += 1;
        if watched.is_multiple_of(64) && stop.load(Ordering::Relaxed) {
            handle.stop();
        }
        Ok::<_, anyhow::Error>(ControlFlow::Continue(()))
    });
    out.finish()?;
    cfg.spooled.store(frames, Ordering::Release);
    let _ = tx.send(Update::KernelDrops(handle.kernel_drops()));
    if !entries.is_empty() {
        let _ = tx.send(Update::Indexed(entries));
    }
    result
}

/// One replay of what was spooled so far, on its own thread; `busy` is cleared when it ends.
fn spawn_live_replay(
    cfg: &WorkerCfg,
    tx: &Sender<Update>,
    stop: &Arc<AtomicBool>,
    busy: &Arc<AtomicBool>,
) {
    let (cfg, tx, stop) = (cfg.clone(), tx.clone(), Arc::clone(stop));
    let done = Arc::clone(busy);
    let spawned = thread::Builder::new()
        .name("inspect-replay".into())
        .spawn(move || {
            if let Some(result) = replay(&cfg, &tx, &stop) {
                let _ = tx.send(Update::ReplayDone(result.map(Box::new)));
            }
            done.store(false, Ordering::Release);
        });
    if spawned.is_err() {
        busy.store(false, Ordering::Release);
    }
}

/// The display filter selecting one flow's frames.
#[must_use]
pub fn flow_filter(src: Addr, dst: Addr, dest_qp: u32) -> String {
    match (src, dst) {
        (Addr::Ip(IpAddr::V4(s)), Addr::Ip(IpAddr::V4(d))) => {
            format!("ip.src == {s} && ip.dst == {d} && qp == {dest_qp:#08x}")
        }
        (Addr::Lid(s), Addr::Lid(d)) => format!(
            "infiniband.lrh.slid == {s:#06x} && infiniband.lrh.dlid == {d:#06x} && qp == {dest_qp:#08x}"
        ),
        (s, d) => format!("ipv6.src == {s} && ipv6.dst == {d} && qp == {dest_qp:#08x}"),
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::capture::index::test::{fake_records, write_pcap, write_pcapng};
    use std::io::{Seek, SeekFrom, Write};

    /// The chart's points, met interleaved, come back per flow in frame order; flows without
    /// points and past the last have none; PSN and class survive being packed together.
    #[test]
    fn psn_points_come_back_per_flow() {
        let classes = PsnClass::ALL;
        let mut met = Vec::new();
        let mut want: Vec<Vec<(u64, u32, PsnClass)>> = vec![Vec::new(); 6];
        for frame in 1..=300u64 {
            let flow = [5u32, 0, 2, 5][frame as usize % 4];
            let psn = (0x00FF_FFF0 + frame as u32 * 7) & 0x00FF_FFFF;
            let class = classes[frame as usize % 5];
            met.push(PsnPoint::new(flow, frame, psn, class).unwrap());
            want[flow as usize].push((frame, psn, class));
        }
        let series = PsnSeries::new(met);
        for (flow, want) in want.iter().enumerate() {
            let got: Vec<_> = series
                .flow(flow)
                .iter()
                .map(|p| (p.frame(), p.psn(), p.class()))
                .collect();
            assert_eq!(&got, want, "flow {flow}");
        }
        assert!(series.flow(6).is_empty() && series.flow(usize::MAX).is_empty());
        assert_eq!(PsnPoint::new(0, 1 << 32, 1, PsnClass::InOrder), None);
    }

    /// What `index` sends, put together: the index and the error the file ends in.
    fn indexed(path: &Path, split_min: u64) -> (FrameIndex, Option<String>) {
        let (tx, rx) = mpsc::channel();
        let end = index(path, split_min, &tx, &Arc::new(AtomicBool::new(false)));
        drop(tx);
        let mut whole = FrameIndex::new();
        for u in rx {
            match u {
                Update::IndexedPart(part) => whole.append(*part),
                other => panic!("unexpected {other:?}"),
            }
        }
        (whole, end.expect("not stopped"))
    }

    /// With the file split for two indexers (every size qualifies), the index and the error it
    /// ends in are one indexer's, whether the split point was a record's start or not and
    /// wherever the file goes wrong.
    #[test]
    fn the_two_indexers_give_one_indexers_index() {
        let sizes = |i: usize| 60 + (i * 37) % 1400;
        let plain = write_pcap(3000, sizes, |i, d| d.fill(i as u8), 0);
        let cut = write_pcap(3000, sizes, |i, d| d.fill(i as u8), 10);
        let fakes = write_pcap(333, |_| 4000, fake_records, 0);
        // record 10 claims more than any record may hold: the file ends there
        let early = write_pcap(3000, |_| 100, |i, d| d.fill(i as u8), 0);
        let mut f = early.as_file();
        f.seek(SeekFrom::Start(24 + 10 * 116 + 8)).unwrap();
        f.write_all(&0x7FFF_FFFFu32.to_le_bytes()).unwrap();
        // pcapng, and pcapng with a second interface described on the way
        let ng = write_pcapng(3000, sizes, |i, d| d.fill(i as u8), None);
        let ng_idb = write_pcapng(3000, sizes, |i, d| d.fill(i as u8), Some(1000));
        for (file, frames, error) in [
            (&plain, 3000, false),
            (&cut, 2999, true),
            (&fakes, 333, false),
            (&early, 10, true),
            (&ng, 3000, false),
            (&ng_idb, 3000, false),
        ] {
            let path = file.path();
            let (one, one_end) = indexed(path, u64::MAX);
            let (two, two_end) = indexed(path, 0);
            assert_eq!(one.len(), frames, "{}", path.display());
            assert_eq!(one_end.is_some(), error, "{one_end:?}");
            assert_eq!(two.len(), one.len());
            for i in 0..one.len() {
                assert_eq!(two.get(i), one.get(i), "frame {i}");
            }
            assert_eq!(two_end, one_end);
        }
    }
}
