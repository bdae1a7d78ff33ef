//! Background work of the inspector: the frame index, the replay and filter scans.
//!
//! Each worker reads the capture on its own thread and sends [`Update`]s; the UI thread applies
//! them to the [`super::app::App`] between key presses. Every worker stops when its `stop` flag
//! is set (a new filter, or the app going away).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread;

use rocescope_dissectors::stack::Options;

use crate::capture::CaptureReader;
use crate::capture::index::{IndexEntry, Indexer};
use crate::dissect::FrameView;
use crate::filter::{Filter, Marks};
use crate::replay::{Detail, Engine, EngineConfig, Finding, Kind, PacketEvent, Replay};

/// Index entries sent per update.
const INDEX_CHUNK: usize = 16_384;
/// Filter matches sent per update.
const MATCH_CHUNK: usize = 4_096;
/// PSN points kept for the PSN chart, over all flows.
pub const MAX_PSN_POINTS: usize = 2_000_000;

/// One request packet of a flow, for the PSN chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsnPoint {
    pub frame: u64,
    pub time_ns: u64,
    pub psn: u32,
    pub class: PsnClass,
}

/// How the replay classified a request packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsnClass {
    InOrder,
    /// The first packet after a gap.
    AfterGap,
    OutOfOrder,
    Retransmission,
    Duplicate,
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
    /// Per flow id.
    pub psn: Vec<Vec<PsnPoint>>,
    /// PSN points dropped past [`MAX_PSN_POINTS`].
    pub psn_dropped: u64,
    pub pauses: Vec<PauseSpan>,
    /// The capture ended in this error (the frames before it were replayed).
    pub error: Option<String>,
}

/// A message from a worker.
#[derive(Debug)]
pub enum Update {
    /// More index entries, in file order.
    Indexed(Vec<IndexEntry>),
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
}

/// Settings the workers share.
#[derive(Debug, Clone)]
pub struct WorkerCfg {
    pub path: PathBuf,
    pub roce_ports: Vec<u16>,
    pub link_bps: u64,
}

/// Spawns the index worker.
pub fn spawn_index(cfg: &WorkerCfg, tx: Sender<Update>, stop: Arc<AtomicBool>) {
    let path = cfg.path.clone();
    let _ = thread::Builder::new()
        .name("inspect-index".into())
        .spawn(move || {
            let mut ix = match Indexer::open(&path) {
                Ok(ix) => ix,
                Err(e) => {
                    let _ = tx.send(Update::IndexDone(Some(e.to_string())));
                    return;
                }
            };
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let mut chunk = Vec::with_capacity(INDEX_CHUNK);
                let more = ix.next_chunk(&mut chunk, INDEX_CHUNK);
                if !chunk.is_empty() && tx.send(Update::Indexed(chunk)).is_err() {
                    return;
                }
                match more {
                    Ok(true) => {}
                    Ok(false) => {
                        let _ = tx.send(Update::IndexDone(None));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Update::IndexDone(Some(e.to_string())));
                        return;
                    }
                }
            }
        });
}

/// Spawns the replay worker (the `analyze` engine over the whole file).
pub fn spawn_replay(cfg: &WorkerCfg, tx: Sender<Update>, stop: Arc<AtomicBool>) {
    let cfg = cfg.clone();
    let _ = thread::Builder::new()
        .name("inspect-replay".into())
        .spawn(move || {
            let result = replay(&cfg, &tx, &stop).map(Box::new);
            if !stop.load(Ordering::Relaxed) {
                let _ = tx.send(Update::ReplayDone(result));
            }
        });
}

fn replay(cfg: &WorkerCfg, tx: &Sender<Update>, stop: &AtomicBool) -> Result<ReplayData, String> {
    let mut reader = CaptureReader::open(&cfg.path).map_err(|e| e.to_string())?;
    let options = Options {
        roce_ports: &cfg.roce_ports,
        ..Options::default()
    };
    let mut engine = Engine::new(EngineConfig {
        link_bps: cfg.link_bps,
        roce_ports: cfg.roce_ports.clone(),
        ..EngineConfig::default()
    });
    let mut psn: Vec<Vec<PsnPoint>> = Vec::new();
    let mut kept = 0usize;
    let mut dropped = 0u64;
    let mut first = None;
    let mut error = None;
    while let Some(item) = reader.next_frame() {
        let frame = match item {
            Ok(f) => f,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        };
        let first = *first.get_or_insert(frame.time_ns);
        let view = FrameView::new(frame, &options, first);
        engine.frame(&view);
        if let Some(ev) = PacketEvent::from_view(&view) {
            if ev.operation().is_some_and(|o| o.is_request()) {
                if let Some(flow) = engine.flow(&ev.key) {
                    let id = flow.id as usize;
                    if psn.len() <= id {
                        psn.resize_with(id + 1, Vec::new);
                    }
                    if kept < MAX_PSN_POINTS {
                        kept += 1;
                        psn[id].push(PsnPoint {
                            frame: ev.frame,
                            time_ns: ev.time_ns,
                            psn: ev.psn.value(),
                            class: PsnClass::InOrder,
                        });
                    } else {
                        dropped += 1;
                    }
                }
            }
        }
        let n = view.frame.number;
        if n % 65_536 == 0 {
            if stop.load(Ordering::Relaxed) {
                return Err("stopped".into());
            }
            let _ = tx.send(Update::ReplayProgress(n));
        }
    }
    let replay = engine.finish();
    classify(&mut psn, &replay.events);
    let pauses = pauses(&replay.events);
    Ok(ReplayData {
        replay,
        psn,
        psn_dropped: dropped,
        pauses,
        error,
    })
}

/// Marks PSN points with the replay's findings on their frame.
fn classify(psn: &mut [Vec<PsnPoint>], events: &[Finding]) {
    for ev in events {
        let class = match ev.kind {
            Kind::PsnGap => PsnClass::AfterGap,
            Kind::OutOfOrder => PsnClass::OutOfOrder,
            Kind::Retransmission | Kind::ImpliedTimeout => PsnClass::Retransmission,
            Kind::Duplicate => PsnClass::Duplicate,
            _ => continue,
        };
        let Some(points) = ev.flow.and_then(|f| psn.get_mut(f as usize)) else {
            continue;
        };
        let at = points.partition_point(|p| p.frame < ev.frame);
        if let Some(p) = points.get_mut(at).filter(|p| p.frame == ev.frame) {
            // A retransmission outranks the gap it may also close.
            if p.class == PsnClass::InOrder || class == PsnClass::Retransmission {
                p.class = class;
            }
        }
    }
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

/// Each frame's replay marks (`loss`, `ooo`, `dup`, `retrans`), sorted by frame.
#[must_use]
pub fn frame_marks(events: &[Finding]) -> Vec<(u64, Marks)> {
    let mut all: Vec<(u64, Marks)> = events
        .iter()
        .map(|ev| (ev.frame, Marks::of_kind(ev.kind)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    all.sort_by_key(|(f, _)| *f);
    let mut out: Vec<(u64, Marks)> = Vec::with_capacity(all.len());
    for (frame, mark) in all {
        match out.last_mut() {
            Some((f, m)) if *f == frame => m.insert(mark),
            _ => out.push((frame, mark)),
        }
    }
    out
}

/// Spawns a filter scan over the whole file (generation `generation`).
pub fn spawn_filter(
    cfg: &WorkerCfg,
    filter: Filter,
    marks: Option<Arc<Vec<(u64, Marks)>>>,
    generation: u64,
    tx: Sender<Update>,
    stop: Arc<AtomicBool>,
) {
    let cfg = cfg.clone();
    let _ = thread::Builder::new()
        .name("inspect-filter".into())
        .spawn(move || {
            let Ok(mut reader) = CaptureReader::open(&cfg.path) else {
                let _ = tx.send(Update::MatchesDone { generation });
                return;
            };
            let options = Options {
                roce_ports: &cfg.roce_ports,
                ..Options::default()
            };
            let mut first = None;
            let mut chunk = Vec::new();
            // frame numbers rise in file order: walk the sorted marks alongside
            let marks = marks.as_deref().map_or(&[][..], Vec::as_slice);
            let mut next_mark = 0;
            while let Some(Ok(frame)) = reader.next_frame() {
                let first = *first.get_or_insert(frame.time_ns);
                let view = FrameView::new(frame, &options, first);
                while marks.get(next_mark).is_some_and(|m| m.0 < frame.number) {
                    next_mark += 1;
                }
                let frame_marks = marks
                    .get(next_mark)
                    .filter(|m| m.0 == frame.number)
                    .map_or(Marks::default(), |m| m.1);
                if filter.matches_marked(&view.facts(), frame_marks, view.dissected.as_ref()) {
                    chunk.push(view.frame.number);
                    if chunk.len() >= MATCH_CHUNK {
                        let frames = std::mem::take(&mut chunk);
                        if tx.send(Update::Matches { generation, frames }).is_err() {
                            return;
                        }
                    }
                }
                if view.frame.number % 16_384 == 0 && stop.load(Ordering::Relaxed) {
                    return;
                }
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

/// The display filter selecting one flow's frames.
#[must_use]
pub fn flow_filter(src: IpAddr, dst: IpAddr, dest_qp: u32) -> String {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            format!("ip.src == {s} && ip.dst == {d} && qp == {dest_qp:#08x}")
        }
        (s, d) => format!("ipv6.src == {s} && ipv6.dst == {d} && qp == {dest_qp:#08x}"),
    }
}
