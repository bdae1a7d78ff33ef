//! The generator on its own thread: it fills batches of frames while the
//! caller's thread sends them, one core each. Batches are recycled, so nothing
//! is allocated per frame. `send` uses it: there each frame costs a syscall,
//! and generating on the other core brought it level with tcpreplay sending
//! from memory. (`generate` does not: writing is cheap, and the hand-off cost
//! more than it saved.)

use std::ops::ControlFlow;
use std::sync::mpsc;

use rocescope_generator::{GenError, Generator, MAX_FRAME_LEN, Scenario, Truth};

/// Frames per batch and batches in flight: enough that the two threads
/// rarely wait on each other, small enough to stay in cache (~9 MiB).
const BATCH_FRAMES: usize = 256;
const BATCHES: usize = 8;

/// One generated frame as the consumer sees it.
#[derive(Debug, Clone, Copy)]
pub struct Generated<'a> {
    pub time_ns: u64,
    pub bytes: &'a [u8],
    /// Larger than `bytes.len()` when a snaplen fault cut the frame.
    pub orig_len: usize,
}

/// Frames generated ahead: one `MAX_FRAME_LEN` slot per frame, and per frame
/// its timestamp, length and original length.
struct Batch {
    bytes: Vec<u8>,
    frames: Vec<(u64, usize, usize)>,
}

/// Generate `scenario` with `seed` on a second thread and hand each frame, in
/// order, to `each` on this one, until the scenario ends or `each` says
/// `Break`. Returns the truth of what was generated when the scenario ran to
/// its end (`None` when `each` stopped it early).
///
/// # Errors
/// The generator's error, or the first error `each` returns.
pub fn for_each_generated<E: From<GenError>>(
    scenario: &Scenario,
    seed: u64,
    mut each: impl FnMut(Generated<'_>) -> Result<ControlFlow<()>, E>,
) -> Result<Option<Truth>, E> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Result<Batch, GenError>>(BATCHES);
    let (free_tx, free_rx) = mpsc::sync_channel::<Batch>(BATCHES);
    for _ in 0..BATCHES {
        // cannot fail: the receiver is alive and the channel has room for all
        let _ = free_tx.send(Batch {
            bytes: vec![0; BATCH_FRAMES * MAX_FRAME_LEN],
            frames: Vec::with_capacity(BATCH_FRAMES),
        });
    }
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            let mut g = Generator::new(scenario, seed);
            while let Ok(mut batch) = free_rx.recv() {
                batch.frames.clear();
                let mut ended = false;
                while batch.frames.len() < BATCH_FRAMES {
                    let at = batch.frames.len() * MAX_FRAME_LEN;
                    match g.next_frame(&mut batch.bytes[at..at + MAX_FRAME_LEN]) {
                        Some(Ok(out)) => batch.frames.push((out.time_ns, out.len, out.orig_len)),
                        Some(Err(e)) => {
                            let _ = full_tx.send(Err(e));
                            return None;
                        }
                        None => {
                            ended = true;
                            break;
                        }
                    }
                }
                if full_tx.send(Ok(batch)).is_err() {
                    return None; // the consumer stopped early
                }
                if ended {
                    return Some(g.truth());
                }
            }
            None
        });
        let mut stopped = false;
        'batches: for batch in full_rx.iter() {
            let batch = batch?;
            for (i, &(time_ns, len, orig_len)) in batch.frames.iter().enumerate() {
                let at = i * MAX_FRAME_LEN;
                let frame = Generated {
                    time_ns,
                    bytes: &batch.bytes[at..at + len],
                    orig_len,
                };
                if each(frame)?.is_break() {
                    stopped = true;
                    break 'batches;
                }
            }
            // Fails once the generator has finished: the batches still queued
            // must be handed over all the same, so the result does not matter.
            let _ = free_tx.send(batch);
        }
        drop(free_tx); // lets a waiting generator thread end
        drop(full_rx);
        let truth = producer.join().unwrap_or(None);
        Ok(if stopped { None } else { truth })
    })
}
