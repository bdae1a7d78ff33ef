//! Output made in chunks on several threads and written in order: the JSON report's flows
//! (hundreds of thousands of them make most of its bytes).
//!
//! The writing thread formats chunks too, but only while the next chunk to write is not ready:
//! when the output is fast (`/dev/null`, a pipe to a fast reader) every core formats; when it
//! is slow (a file: the copy into the page cache is the bound) the writing thread only writes.
//! Measured on `analyze -f json` of 400,000 flows (685 MB) on two cores: a thread that only
//! wrote, beside a formatting thread per core, switched context about 3,000 times (this, 140)
//! and took 1.07x this one's time to `/dev/null`; a fixed share of the chunks for the
//! writing thread was as fast as this to `/dev/null` but 1.05x the old time to a file, where
//! this is 0.98x.
//!
//! Chunks are claimed in order by whichever thread is free, each into one of a fixed pool of
//! buffers (two per thread) that come back once written: at most that many chunks are
//! formatted and not yet written, so memory stays bounded whatever the number of chunks.

// Indexing cannot panic here: slots are indexed modulo their number.
#![allow(clippy::indexing_slicing)]

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

/// Write chunks `0..chunks`, in order, to `out`, each made by `format(chunk, into)` (`into`
/// is cleared first) on this thread or one of `helpers` others.
///
/// # Errors
/// The first output error (the other threads stop at their next chunk).
pub fn write_chunks(
    chunks: usize,
    helpers: usize,
    format: &(impl Fn(usize, &mut Vec<u8>) + Sync),
    out: &mut dyn Write,
) -> io::Result<()> {
    let window = (helpers + 1) * 2;
    let claims = AtomicUsize::new(0);
    let (pool_tx, pool_rx) = mpsc::channel::<Vec<u8>>();
    for _ in 0..window {
        // cannot fail: the receiver is alive
        let _ = pool_tx.send(Vec::new());
    }
    let pool = Mutex::new(pool_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Vec<u8>)>();
    let claims = &claims;
    let pool = &pool;
    std::thread::scope(|scope| {
        // dropped when this closure returns (written, or failed): a helper waiting for a
        // buffer then ends
        let pool_tx = pool_tx;
        for _ in 0..helpers {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                loop {
                    // the guard goes at the end of the match: formatting runs unlocked
                    let buffer = match pool.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(mut into) = buffer else { return };
                    let chunk = claims.fetch_add(1, Ordering::Relaxed);
                    if chunk >= chunks {
                        return;
                    }
                    into.clear();
                    format(chunk, &mut into);
                    if done_tx.send((chunk, into)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let mut slots: Vec<Option<Vec<u8>>> = (0..window).map(|_| None).collect();
        let mut written = 0;
        while written < chunks {
            if let Some(part) = slots[written % window].take() {
                out.write_all(&part)?;
                let _ = pool_tx.send(part);
                written += 1;
                continue;
            }
            if let Ok((chunk, part)) = done_rx.try_recv() {
                slots[chunk % window] = Some(part);
                continue;
            }
            // Nothing to write yet: format the next unclaimed chunk here when a buffer is
            // free (a helper holding the lock is waiting for one: none is).
            let own = pool.try_lock().ok().and_then(|rx| rx.try_recv().ok());
            if let Some(mut into) = own {
                let chunk = claims.fetch_add(1, Ordering::Relaxed);
                if chunk < chunks {
                    into.clear();
                    format(chunk, &mut into);
                    slots[chunk % window] = Some(into);
                    continue;
                }
                let _ = pool_tx.send(into);
            }
            // The next chunk is claimed by a helper (claims go in order, and a claimed chunk
            // this thread formats is in its slot already): wait for it, or any other.
            let Ok((chunk, part)) = done_rx.recv() else {
                return Err(io::Error::other("a formatting thread ended early"));
            };
            slots[chunk % window] = Some(part);
        }
        Ok(())
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use std::time::Duration;

    /// The bytes chunk `c` is made of: its number, then some filler that varies in length.
    fn make(c: usize, into: &mut Vec<u8>) {
        into.extend_from_slice(format!("<{c}>").as_bytes());
        into.extend(std::iter::repeat_n(b'.', c % 7));
    }

    fn expected(chunks: usize) -> Vec<u8> {
        let mut all = Vec::new();
        for c in 0..chunks {
            make(c, &mut all);
        }
        all
    }

    #[test]
    fn every_chunk_is_written_once_in_order() {
        for helpers in 0..4 {
            for chunks in [0, 1, 2, 5, 100, 1000] {
                let mut out = Vec::new();
                write_chunks(chunks, helpers, &make, &mut out).unwrap();
                assert_eq!(out, expected(chunks), "{helpers} helpers, {chunks} chunks");
            }
        }
    }

    /// Chunks that take long to make, some much longer than others, finish out of order.
    #[test]
    fn slow_and_uneven_chunks_still_come_in_order() {
        let slow = |c: usize, into: &mut Vec<u8>| {
            if c.is_multiple_of(5) {
                std::thread::sleep(Duration::from_millis(3));
            }
            make(c, into);
        };
        let mut out = Vec::new();
        write_chunks(60, 3, &slow, &mut out).unwrap();
        assert_eq!(out, expected(60));
    }

    /// A slow output: the helpers run ahead, but never more than two chunks per thread
    /// beyond what is written, and nothing is lost.
    #[test]
    fn a_slow_output_bounds_the_chunks_ahead_and_gets_every_chunk() {
        use std::sync::atomic::AtomicUsize;
        struct Slow<'a> {
            bytes: Vec<u8>,
            written: &'a AtomicUsize,
        }
        impl Write for Slow<'_> {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_micros(300));
                self.bytes.extend_from_slice(b);
                self.written.fetch_add(1, Ordering::SeqCst);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let helpers = 2;
        let (made, written, most_ahead) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        let counted = |c: usize, into: &mut Vec<u8>| {
            // a chunk is started: those not yet written, this one included
            let made = made.fetch_add(1, Ordering::SeqCst) + 1;
            let ahead = made.saturating_sub(written.load(Ordering::SeqCst));
            most_ahead.fetch_max(ahead, Ordering::SeqCst);
            make(c, into);
        };
        let mut out = Slow {
            bytes: Vec::new(),
            written: &written,
        };
        write_chunks(200, helpers, &counted, &mut out).unwrap();
        assert_eq!(out.bytes, expected(200));
        let most = most_ahead.load(Ordering::SeqCst);
        assert!(most >= 2, "the helpers never ran ahead ({most})");
        assert!(
            most <= 2 * (helpers + 1),
            "{most} chunks made ahead of the output"
        );
    }

    /// An output error is returned, and the threads stop formatting: a chunk each at most
    /// after the buffers they hold.
    #[test]
    fn an_output_error_stops_everything() {
        use std::sync::atomic::AtomicUsize;
        struct Failing(usize);
        impl Write for Failing {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= 1;
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for helpers in 0..3 {
            let made = AtomicUsize::new(0);
            let counted = |c: usize, into: &mut Vec<u8>| {
                made.fetch_add(1, Ordering::SeqCst);
                make(c, into);
            };
            let err = write_chunks(10_000, helpers, &counted, &mut Failing(3)).unwrap_err();
            assert_eq!(err.to_string(), "disk full");
            let made = made.load(Ordering::SeqCst);
            assert!(
                made <= 3 + 1 + 3 * (helpers + 1),
                "{made} chunks made after the output failed ({helpers} helpers)"
            );
        }
    }
}
