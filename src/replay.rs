//! The streaming replay engine behind `rocescope analyze` (interfaces.md §6), and [`run`], the
//! frame driver every command replays through: frame source → view → engine → observers.
//!
//! Frames go in one at a time, in capture order ([`Engine::frame`], or [`Engine::packet`] for
//! hand-built [`PacketEvent`]s); each is summarised into an owned [`PacketEvent`] and stepped
//! through its flow's state machines. Per-flow request sequencing (§6.2) is the pure state
//! machine of [`psn`]; everything that crosses flows (pairing, responses acting on the
//! request flow, CNP attribution, PFC) is in [`engine`]. Memory grows with flows, open holes
//! and outstanding READs, never with the frame count (findings aside).
//!
//! - [`holes`]: missing PSN ranges;
//! - [`psn`]: §6.2 classification, READ consumption rules 1–4, go-back runs, held decisions;
//! - [`flow`]: per-flow counters, the READ response tracker (§6.3);
//! - [`latency`]: ACK latency samples; [`sketch`]: bounded summaries of durations;
//! - [`pfc`]: PFC/PAUSE intervals and storms (§6.4);
//! - [`finding`]: event kinds and details (§6.6);
//! - [`trust`]: whether a capture file's ICRCs are the wire's (§6.5);
//! - [`sharded`]: the flows stepped on several threads, the report unchanged;
//! - [`tcp_bth`]: messages over TCP with the `tcp_bth` option (§7).

pub mod between;
pub mod compact;
pub mod engine;
pub mod event;
pub mod finding;
pub mod flow;
pub mod flow_index;
pub mod hash;
pub mod holes;
pub mod hosts;
pub mod latency;
pub mod pfc;
pub mod psn;
pub mod sharded;
pub mod sketch;
pub mod taps;
pub mod tcp_bth;
pub mod trust;

use std::ops::ControlFlow;

use rocescope_dissectors::Qpn;
use rocescope_dissectors::stack::DissectOptions;

pub use engine::{CaptureStats, Engine, EngineConfig, Replay};
pub use event::{Addr, FlowKey, Icrc, PacketEvent};
pub use finding::{Detail, Finding, Kind};
pub use flow::Flow;
pub use psn::{PsnStream, ReqPacket, step};
pub use sharded::run_sharded;
pub use trust::IcrcMode;

use crate::capture::CaptureError;
use crate::frame::{Frame, FrameView, Problem};
use crate::source::{self, FrameSource, Side, Slot, Threads};

/// Frames between two calls of [`Observer::progress`].
pub const PROGRESS_EVERY: u64 = 65_536;

/// Something that watches a replay as it goes (the inspector's PSN chart, a progress bar, a
/// stop flag). Every method has a default that does nothing; `()` observes nothing.
pub trait Observer {
    /// The engine took `packet` on flow `flow` (called before the flow's state machines step).
    fn packet(&mut self, _flow: u32, _packet: &PacketEvent) {}

    /// Every [`PROGRESS_EVERY`] frames: frames and bytes read so far. `Break` stops the
    /// replay; what was replayed until then is still reported.
    fn progress(&mut self, _frames: u64, _bytes: u64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// After every frame, with the engine (its flows and findings so far) and whether the
    /// source had nothing more ready (a live capture's summaries use it).
    fn frame_done(&mut self, _engine: &Engine, _idle: bool) {}

    /// The source ended (or the replay was stopped): the engine before it settles what is
    /// still open.
    fn source_done(&mut self, _engine: &Engine) {}
}

impl Observer for () {}

/// Who dissects the frames when the replay runs on two threads.
///
/// Neither fixed split is close to the balanced one (`-f json`, dist builds, alternating
/// pairs): on small frames over 2,000 flows the reading thread dissecting every frame took
/// 1.298x the time (11 pairs) and the engine thread dissecting every frame 1.425x (11 pairs);
/// over 400,000 flows, where the engine thread is the busier, the reading thread dissecting
/// every frame took 1.087x (15 pairs). Only in the machine's slow phase (`bench/cross_core.rs`)
/// did the engine's split edge ahead on small frames, 0.96x (the reader's 1.31x; medians of
/// 21 runs), far from undoing that phase's 2x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The reading thread dissects while the engine thread has work queued, else it only
    /// copies (the default: both cores stay busy).
    Balanced,
    /// The reading thread dissects every frame it can (tests).
    Reader,
    /// The engine thread dissects every frame (tests).
    Engine,
}

impl Split {
    /// Whether the reading thread dissects the frame it has just read, told whether the
    /// consumer has batches waiting ([`source::Prepare::busy`]).
    #[must_use]
    pub fn reader_dissects(self, busy: bool) -> bool {
        match self {
            Split::Balanced => busy,
            Split::Reader => true,
            Split::Engine => false,
        }
    }
}

/// What a replay produced.
#[derive(Debug)]
pub struct Replayed {
    pub replay: Replay,
    /// The source's error; the frames before it were replayed.
    pub error: Option<CaptureError>,
    /// An observer stopped the replay before the source ended.
    pub stopped: bool,
}

/// Replay every frame of `source`: on two threads ([`Split::Balanced`]) when the source is
/// large or unbounded and there are two cores, else on this one.
pub fn run<S: FrameSource + ?Sized>(
    source: &mut S,
    cfg: &EngineConfig,
    observer: &mut impl Observer,
) -> Replayed {
    run_with(source, cfg, None, observer)
}

/// [`run`] with the threads chosen: `None` decides as [`run`] does, `Some(None)` one thread,
/// `Some(Some(split))` two threads sharing the work as told (tests compare them).
pub fn run_with<S: FrameSource + ?Sized>(
    source: &mut S,
    cfg: &EngineConfig,
    threads: Option<Option<Split>>,
    observer: &mut impl Observer,
) -> Replayed {
    let (threads, split) = match threads {
        None => (Threads::Auto, Split::Balanced),
        Some(None) => (Threads::One, Split::Balanced),
        Some(Some(split)) => (Threads::Two, split),
    };
    run_as(source, cfg, threads, split, observer)
}

/// [`run`] on this thread, a batch of frames dissected at a time before they are stepped, so
/// that the engine reads their flows ahead ([`Engine::ahead`]) as it does beside a reading
/// thread: for replays that run beside other busy threads (`analyze --tap`'s two).
pub fn run_batched<S: FrameSource + ?Sized>(
    source: &mut S,
    cfg: &EngineConfig,
    observer: &mut impl Observer,
) -> Replayed {
    run_as(source, cfg, Threads::Batched, Split::Reader, observer)
}

fn run_as<S: FrameSource + ?Sized>(
    source: &mut S,
    cfg: &EngineConfig,
    threads: Threads,
    split: Split,
    observer: &mut impl Observer,
) -> Replayed {
    let options = dissect_options(cfg);
    let mut engine = Engine::new(cfg.clone());
    let mut frames = 0u64;
    let mut stopped = false;
    // `move`: the reading thread gets its own copy of what it reads for every frame, so
    // that no cache line is shared with the counters the engine thread writes.
    let prepare = move |frame: &Frame<'_>, told: source::Prepare<'_>, place: &mut _| {
        if split.reader_dissects(told.busy) {
            prepare_in(place, frame, &options, told.out);
        }
    };
    let result = source::drive(
        source,
        threads,
        prepare,
        |slot, at| -> Result<ControlFlow<()>, CaptureError> {
            if !step_slot(&mut engine, slot, &options, observer) {
                return Ok(ControlFlow::Continue(()));
            }
            frames += 1;
            observer.frame_done(&engine, at.idle);
            if stops(observer, frames, at.bytes) {
                stopped = true;
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        },
    );
    observer.source_done(&engine);
    Replayed {
        replay: engine.finish_observed(observer),
        error: result.err(),
        stopped,
    }
}

/// How the replay dissects frames.
fn dissect_options(cfg: &EngineConfig) -> DissectOptions<'_> {
    DissectOptions {
        roce_ports: &cfg.roce_ports,
        rd_as_rd: cfg.rd_as_rd,
        ..DissectOptions::default()
    }
}

/// What the reading thread makes of a frame for the engine: its [`summary`], and where the
/// problem its view found is kept beside the batch ([`Side::problems`]): most frames have
/// none, and the problem inline (40 bytes) made the frame driver's item three lines rather
/// than two (aligned: 128 bytes, held by a test). The engine reads it in place.
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct Prepared {
    ev: PacketEvent,
    /// 1 + the problem's place in [`Side::problems`]; 0 for none.
    problem: u32,
}

impl Prepared {
    /// The frame's problem; `side` is the one it was kept in.
    fn problem(&self, side: &Side) -> Option<Problem> {
        let at = self.problem.checked_sub(1)?;
        side.problems.get(at as usize).copied()
    }
}

/// A frame dissected on the reading thread, into the frame driver's `place`, when its
/// [`summary`] is all the engine needs (else `place` stays empty).
fn prepare_in(
    place: &mut Option<Prepared>,
    frame: &Frame<'_>,
    options: &DissectOptions<'_>,
    side: &mut Side,
) {
    let mut view_place = None;
    let view = FrameView::new_in(&mut view_place, frame, options, 0);
    *place = summary(view, |ev| {
        let problem = match view.problem {
            None => 0,
            Some(problem) => {
                side.problems.push(problem);
                // a batch holds at most `BATCH_FRAMES` frames
                u32::try_from(side.problems.len()).unwrap_or(u32::MAX)
            }
        };
        Prepared { ev, problem }
    });
}

/// One slot as the frame driver hands it over, into `engine`: whether it was a frame (the
/// frames shown ahead, [`Slot::Ahead`], are only fetched, and come again in their turn).
fn step_slot(
    engine: &mut Engine,
    slot: Slot<'_, Prepared>,
    options: &DissectOptions<'_>,
    observer: &mut impl Observer,
) -> bool {
    match slot {
        Slot::Frame(frame) => {
            let mut place = None;
            engine.frame_observed(FrameView::new_in(&mut place, &frame, options, 0), observer);
        }
        Slot::Prepared(prepared, side) => {
            engine.roce_frame_observed(&prepared.ev, prepared.problem(side), observer);
        }
        Slot::Ahead(coming) => {
            engine.ahead(coming.map(|prepared| &prepared.ev));
            return false;
        }
    }
    true
}

/// Every [`PROGRESS_EVERY`] frames, whether `observer` stops the replay.
fn stops(observer: &mut impl Observer, frames: u64, bytes: u64) -> bool {
    frames.is_multiple_of(PROGRESS_EVERY) && observer.progress(frames, bytes).is_break()
}

/// The frame as a [`PacketEvent`], handed to `wrap`, when that is all [`Engine::frame`] needs
/// of it (not a CM message: QP1 frames go to the engine whole). What `wrap` makes of it is
/// built where the caller puts the answer ([`PacketEvent::from_view_as`]).
fn summary<T>(view: &FrameView<'_>, wrap: impl FnOnce(PacketEvent) -> T) -> Option<T> {
    let roce = view.dissected.as_ref()?.roce.as_ref()?;
    if roce.bth.dest_qp() == Qpn::GSI {
        return None;
    }
    PacketEvent::from_view_as(view, wrap)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame driver's item of a frame prepared for the replay is two cache lines, aligned
    /// to them: the lines the engine thread reads of every frame the reading thread wrote.
    #[test]
    fn a_prepared_frame_is_two_lines() {
        assert_eq!(source::item_size::<Prepared>(), 128);
        assert_eq!(std::mem::align_of::<Prepared>(), 64);
    }

    #[test]
    fn a_problem_is_found_where_it_was_kept() {
        let ev = PacketEvent::new(1, rocescope_dissectors::Opcode(0x0a), 2, 3);
        let mut side = Side::default();
        let link = |n| Problem::UnsupportedLink(crate::frame::LinkType(n));
        side.problems.extend([link(1), link(2)]);
        let at = |problem| Prepared { ev, problem };
        assert_eq!(at(0).problem(&side), None);
        assert_eq!(at(1).problem(&side), Some(link(1)));
        assert_eq!(at(2).problem(&side), Some(link(2)));
        // past the list (it cannot be made so): no problem rather than another frame's
        assert_eq!(at(3).problem(&side), None);
    }
}
