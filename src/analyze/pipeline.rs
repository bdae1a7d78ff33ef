//! The replay on two threads: one reads (and mostly dissects) frames, the other runs the
//! engine, in capture order.
//!
//! The reader fills batches of [`Item`]s: a RoCE frame is dissected there and handed over as
//! its owned [`PacketEvent`] (the engine's [`Engine::roce_frame`]), anything else (PFC,
//! PAUSE, TCP, CM, frames without a BTH) as a copy of its bytes, which the engine thread
//! dissects and feeds to [`Engine::frame`] as the single-threaded replay would. Both paths
//! end in the same engine code, so the report does not depend on which one a frame took.
//!
//! The load is balanced per batch: when the engine thread has nothing queued (it waits, or
//! is about to), the reader copies the next batch's bytes without dissecting them (cheap
//! here, dissected and ICRC-checked over there); when a batch is waiting, the reader does
//! the dissecting itself. Batches are recycled: nothing is allocated per frame.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rocescope_dissectors::Qpn;
use rocescope_dissectors::stack::Options;

use crate::capture::{CaptureError, Frame, LinkType, MergedReader};
use crate::dissect::{FrameView, Problem};
use crate::replay::{Engine, PacketEvent};

/// Frames per batch at most: a hand-off costs microseconds, a batch ~100 µs of work.
const BATCH_FRAMES: usize = 1024;
/// Bytes copied into one batch at most (beyond that, the batch goes as it is).
const BATCH_BYTES: usize = 1 << 20;
/// Frames between two looks at the engine thread's queue.
const DECIDE_EVERY: usize = 64;
/// Batches in flight.
const BATCHES: usize = 6;

/// One frame, for the engine thread.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// A RoCE frame, dissected and summarised.
    Packet {
        ev: PacketEvent,
        problem: Option<Problem>,
    },
    /// A frame whose bytes are `bytes[start..end]` of the batch.
    Raw {
        number: u64,
        time_ns: u64,
        caplen: u32,
        orig_len: u32,
        link: LinkType,
        start: usize,
        end: usize,
    },
}

struct Batch {
    items: Vec<Item>,
    bytes: Vec<u8>,
}

impl Batch {
    fn raw(&mut self, frame: &Frame<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(frame.data);
        self.items.push(Item::Raw {
            number: frame.number,
            time_ns: frame.time_ns,
            caplen: frame.caplen,
            orig_len: frame.orig_len,
            link: frame.link,
            start,
            end: self.bytes.len(),
        });
    }

    fn full(&self) -> bool {
        self.items.len() >= BATCH_FRAMES || self.bytes.len() >= BATCH_BYTES
    }
}

/// How the reader decides who dissects a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// By the engine thread's queue (the default).
    Balanced,
    /// The reader dissects every frame it can (tests).
    Reader,
    /// The engine thread dissects every frame (tests).
    Engine,
}

/// Read every frame of `reader` on a second thread and feed them to `engine` on this one.
/// `progress` is called on the reader thread now and then with the bytes read so far.
///
/// # Errors
/// The reader's error (the engine has then seen the frames before it, or fewer).
pub fn run(
    reader: &mut MergedReader,
    roce_ports: &[u16],
    engine: &mut Engine,
    split: Split,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), CaptureError> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES);
    let (free_tx, free_rx) = mpsc::sync_channel::<Batch>(BATCHES);
    for _ in 0..BATCHES {
        // cannot fail: the receiver is alive and the channel has room for all
        let _ = free_tx.send(Batch {
            items: Vec::with_capacity(BATCH_FRAMES),
            bytes: Vec::with_capacity(BATCH_BYTES + (16 << 10)),
        });
    }
    let queued = AtomicUsize::new(0);
    let options = Options {
        roce_ports,
        ..Options::default()
    };
    std::thread::scope(|scope| {
        let queued = &queued;
        let producer = scope.spawn(move || -> Result<(), CaptureError> {
            let mut bytes = 0u64;
            while let Ok(mut batch) = free_rx.recv() {
                batch.items.clear();
                batch.bytes.clear();
                let mut dissect = true;
                let mut ended = false;
                while !batch.full() {
                    if batch.items.len() % DECIDE_EVERY == 0 {
                        dissect = match split {
                            Split::Balanced => queued.load(Ordering::Relaxed) > 0,
                            Split::Reader => true,
                            Split::Engine => false,
                        };
                    }
                    let Some(item) = reader.next_frame() else {
                        ended = true;
                        break;
                    };
                    let frame = item?;
                    bytes += u64::from(frame.caplen) + 16;
                    if frame.number % 65_536 == 0 {
                        progress(bytes);
                    }
                    if !dissect {
                        batch.raw(&frame);
                        continue;
                    }
                    let view = FrameView::new(frame, &options, 0);
                    match summary(&view) {
                        Some(ev) => batch.items.push(Item::Packet {
                            ev,
                            problem: view.problem,
                        }),
                        None => batch.raw(&frame),
                    }
                }
                if !batch.items.is_empty() {
                    queued.fetch_add(1, Ordering::Relaxed);
                    if full_tx.send(batch).is_err() {
                        break;
                    }
                }
                if ended {
                    break;
                }
            }
            Ok(())
        });
        for mut batch in full_rx {
            queued.fetch_sub(1, Ordering::Relaxed);
            for item in &batch.items {
                match *item {
                    Item::Packet { ref ev, problem } => engine.roce_frame(ev, problem),
                    Item::Raw {
                        number,
                        time_ns,
                        caplen,
                        orig_len,
                        link,
                        start,
                        end,
                    } => {
                        let frame = Frame {
                            number,
                            time_ns,
                            caplen,
                            orig_len,
                            link,
                            data: &batch.bytes[start..end],
                        };
                        engine.frame(&FrameView::new(frame, &options, 0));
                    }
                }
            }
            batch.items.clear();
            // the reader may have stopped (an error): then the batch is dropped
            let _ = free_tx.send(batch);
        }
        match producer.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The frame as a [`PacketEvent`] when that is all [`Engine::frame`] needs of it (not a CM
/// message: QP1 frames go as bytes).
fn summary(view: &FrameView<'_>) -> Option<PacketEvent> {
    let roce = view.dissected.as_ref()?.roce.as_ref()?;
    if roce.bth.dest_qp() == Qpn::GSI {
        return None;
    }
    PacketEvent::from_view(view)
}
