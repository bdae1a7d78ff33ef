//! The one read-ahead: a producer thread fills batches while the caller's thread drains them,
//! in order; drained batches go back to the producer to be filled again, so once the pool of
//! batches exists nothing is allocated per item. Frames read from a capture ([`crate::source`])
//! and frames built by the generator (`send`) both go through it.
//!
//! The producer learns how far ahead it is ([`Ahead::waiting`]): the replay uses that to decide
//! whether the reading thread also dissects (the engine thread has work queued) or only copies.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What the producer says after filling a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    /// More batches follow.
    More,
    /// The input ended (or failed) with this batch, which may be empty.
    Last,
}

/// What the producer can see of the consumer. On cache lines of its own: both threads touch
/// it, and nothing else of theirs should share its line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Ahead {
    waiting: AtomicUsize,
}

impl Ahead {
    /// Filled batches the consumer has not taken yet.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// Run `produce` on a second thread over the recycled `pool` and `consume` every filled batch
/// here, in order, until the producer says [`Filled::Last`] (that batch is consumed too), or
/// `consume` breaks or fails (the producer then stops at its next hand-over). A panic on the
/// producer's thread is resumed here.
///
/// # Errors
/// The first error `consume` returns.
pub fn run<B: Send, E>(
    pool: Vec<B>,
    produce: impl FnMut(&mut B, &Ahead) -> Filled + Send,
    mut consume: impl FnMut(&mut B) -> Result<ControlFlow<()>, E>,
) -> Result<ControlFlow<()>, E> {
    let depth = pool.len().max(1);
    let (full_tx, full_rx) = mpsc::sync_channel::<B>(depth);
    let (free_tx, free_rx) = mpsc::sync_channel::<B>(depth);
    for batch in pool {
        // cannot fail: the receiver is alive and the channel has room for all
        let _ = free_tx.send(batch);
    }
    let ahead = Ahead::default();
    std::thread::scope(|scope| {
        let ahead = &ahead;
        let producer = scope.spawn(move || {
            // The producer's state lives on its own thread's stack from here on: what it
            // writes for every item must not share a cache line with what the consumer
            // writes for every item (that cost a third of the replay's time once).
            let mut produce = produce;
            let mut waiter = Waiter { spin: true };
            while let Some(mut batch) = waiter.next(&free_rx) {
                let filled = produce(&mut batch, ahead);
                ahead.waiting.fetch_add(1, Ordering::Relaxed);
                if full_tx.send(batch).is_err() || filled == Filled::Last {
                    return;
                }
            }
        });
        let mut result = Ok(ControlFlow::Continue(()));
        let mut waiter = Waiter { spin: true };
        while let Some(mut batch) = waiter.next(&full_rx) {
            ahead.waiting.fetch_sub(1, Ordering::Relaxed);
            match consume(&mut batch) {
                Ok(ControlFlow::Continue(())) => {}
                stop => {
                    result = stop;
                    break;
                }
            }
            // Fails once the producer has ended: the batches still queued are consumed all
            // the same, so the result does not matter.
            let _ = free_tx.send(batch);
        }
        // Hanging up lets a producer waiting for a free batch, or blocked on a full queue, end.
        drop(free_tx);
        drop(full_rx);
        if let Err(panic) = producer.join() {
            std::panic::resume_unwind(panic);
        }
        result
    })
}

/// How long a thread spins for the other's next batch before it sleeps: a few batches at the
/// reading thread's pace on 1 KiB frames. When one side is the slower, the other waits a
/// moment for every batch, and being put to sleep and woken cost a context switch and a
/// wake-up call a batch: about a tenth of the wall time of a replay of 1 KiB frames, where
/// the consumer waits for the reading thread (and a few percent at 400,000 flows, where the
/// reading thread waits for the replay to hand back batches).
const SPIN: Duration = Duration::from_micros(200);

/// How a thread waits for the other's next batch: it spins first while the last batch came
/// without a long wait, and sleeps at once after a long one (a live interface's trickle of
/// frames would otherwise keep a core spinning) until a batch comes quickly again.
#[derive(Debug)]
struct Waiter {
    spin: bool,
}

impl Waiter {
    /// The next batch from `rx`, `None` once the other side has hung up and nothing is left.
    fn next<B>(&mut self, rx: &mpsc::Receiver<B>) -> Option<B> {
        let mut started = None;
        loop {
            match rx.try_recv() {
                Ok(batch) => {
                    self.spin = true;
                    return Some(batch);
                }
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => {}
            }
            let since = *started.get_or_insert_with(Instant::now);
            if !self.spin || since.elapsed() >= SPIN {
                let batch = rx.recv().ok();
                self.spin = since.elapsed() < SPIN;
                return batch;
            }
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_item_arrives_in_order_and_batches_are_reused() {
        let mut next = 0u32;
        let mut seen = Vec::new();
        let pool: Vec<Vec<u32>> = (0..3).map(|_| Vec::with_capacity(10)).collect();
        let r = run(
            pool,
            |b: &mut Vec<u32>, _| {
                b.clear();
                while b.len() < 10 && next < 95 {
                    b.push(next);
                    next += 1;
                }
                if next == 95 {
                    Filled::Last
                } else {
                    Filled::More
                }
            },
            |b| -> Result<_, ()> {
                seen.extend_from_slice(b);
                Ok(ControlFlow::Continue(()))
            },
        );
        assert_eq!(r, Ok(ControlFlow::Continue(())));
        assert_eq!(seen, (0..95).collect::<Vec<_>>());
    }

    /// A wait longer than the spin turns spinning off (a slow producer is not spun for),
    /// and a batch that is there at once turns it back on.
    #[test]
    fn a_thread_spins_only_while_batches_come_quickly() {
        let (tx, rx) = mpsc::sync_channel::<u32>(1);
        let mut waiter = Waiter { spin: true };
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(1).unwrap();
            tx
        });
        assert_eq!(waiter.next(&rx), Some(1));
        assert!(!waiter.spin, "a 20 ms wait left spinning on");
        let tx = late.join().unwrap();
        tx.send(2).unwrap();
        assert_eq!(waiter.next(&rx), Some(2));
        assert!(
            waiter.spin,
            "a batch there at once did not turn spinning back on"
        );
        drop(tx);
        assert_eq!(waiter.next(&rx), None);
    }

    #[test]
    fn the_consumer_can_stop_early_and_fail() {
        let endless = |b: &mut u64, _: &Ahead| {
            *b += 1;
            Filled::More
        };
        let mut taken = 0;
        let r = run(vec![0u64; 2], endless, |_| -> Result<_, ()> {
            taken += 1;
            Ok(if taken == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        });
        assert_eq!((r, taken), (Ok(ControlFlow::Break(())), 5));
        let r = run(vec![0u64; 2], endless, |_| {
            Err::<ControlFlow<()>, _>("full disk")
        });
        assert_eq!(r, Err("full disk"));
    }
}
