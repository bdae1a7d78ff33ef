//! The capture reader's input: one reusable buffer over any byte stream, read in large chunks,
//! so that files larger than RAM and pipes read the same way and nothing is allocated per frame.
//!
//! The buffer is shared ([`Arc`]): the read-ahead hands frames to the other thread as ranges of
//! it instead of copying their bytes (issue 13: that copy was a sixth of the reading thread's
//! time). While a batch holds the buffer, the input reads on into a spare one, carrying over
//! only the partial record at its end; buffers come back as batches are done
//! ([`Input::recycle`]).
//!
//! Read, not memory-mapped: a prototype that mapped the file read-only (`MAP_POPULATE`) and
//! handed out ranges of the map measured 0.97x, 1.07x and 0.98x the time of these reads on
//! `analyze` of 1 KiB frames, of 1 KiB frames with their ACKs, and of small frames
//! (bench/scale.sh's frames1k, acked1k, small2k; 7 pairs each), and counted the whole file in
//! the resident size. The copy a read makes is what leaves the bytes in cache for the other
//! thread; from a map, the replay reads them cold from the page cache instead.
//!
//! A second prototype mapped windows of 2 or 8 MiB one after the other (each from the first
//! unconsumed byte, `MAP_POPULATE`, unmapped when the last batch holding it came back, resident
//! size +2 to +14 MiB) and asked for the bytes ahead of the reader into cache (every line
//! 8–32 KiB ahead, or one a page). Outputs were byte-identical; against these reads it measured
//! 0.90–0.96x the time on frames1k, acked1k and small2k (5–7 pairs each, every window and
//! distance), never the 10 % that issue 13 asks of `unsafe`: the copy is gone, but mapping and
//! unmapping the pages (a quarter of the reading thread) and waiting on memory for the record
//! headers take most of its place. A map would also end the process with SIGBUS if another
//! program truncated the file under it.
//!
//! A third mapped the whole file once (`MADV_SEQUENTIAL`), its pages populated a few MiB
//! ahead of the reader (`MADV_POPULATE_READ`, no fault per page) and dropped behind it
//! (`MADV_DONTNEED`: a private read-only map faults them back if a batch still reads one), so
//! nothing was mapped or unmapped per window: 0.984x on frames1k, 0.903x on acked1k, 0.952x
//! on small2k, 0.988x on small400k (11 to 15 pairs), 1 to 8 MiB chunks alike, with 26 MiB
//! more resident at 400,000 flows (103 MiB, over issue 13's 100). The replay's CRC and the
//! reader's record walk then read the bytes cold, which costs what the copy did: on this
//! machine one core touched every line of the mapped 1.1 GB in 0.09-0.13 s against
//! 0.16-0.20 s through reads, yet the replay did not get faster.

// Indexing cannot panic here: `pos <= end <= buf.len()` always holds (every method keeps it).
#![allow(clippy::indexing_slicing)]

use std::io::{self, Read};
use std::sync::Arc;

/// Size of the read buffer (and the unit of each `read` call on the input): small enough that
/// the buffers batches hold in flight stay few megabytes ([`crate::source`]). Half of it, so
/// that more of them stay in cache, measured 0.984x on small frames (15 pairs): noise.
const BUF_SIZE: usize = 256 << 10;
/// The read unit of a reader that only skims records ([`Input::read_in_large_units`]).
const LARGE_BUF_SIZE: usize = 1 << 20;
/// Spare buffers kept for when the current one is shared (more are dropped).
const SPARES: usize = 16;

/// Largest pcap record or pcapng block accepted. Anything larger is taken as corruption rather
/// than a reason to allocate that much.
pub const MAX_RECORD_LEN: usize = 64 << 20;

/// The frame the reader stands on: where its bytes are in the buffer.
///
/// Laid out so that no two of the fields [`CaptureReader::current`] copies into a [`Frame`]
/// sit side by side: the reader writes them one by one, and the copy read `number` and
/// `time_ns` back at once (then `caplen` and `orig_len`, then `orig_len` and `link`), a load
/// the separate stores could not be forwarded to: it waited for them to reach the cache (4 %
/// of the CPU time on 1 KiB frames).
///
/// [`Frame`]: crate::frame::Frame
/// [`CaptureReader::current`]: super::CaptureReader::current
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub(super) struct Current {
    pub(super) time_ns: u64,
    pub(super) caplen: u32,
    pub(super) start: usize,
    pub(super) orig_len: u32,
    pub(super) number: u64,
    pub(super) link: u32,
    pub(super) len: usize,
}

impl Current {
    /// Takes the frame of `record` (all but its number, which the reader counts), field by
    /// field: a whole `Current` copied over this one was loaded 16 bytes at a time just after
    /// being stored 4 and 8 at a time, a stall (no store-to-load forwarding) that was half of
    /// the reader's per-record time.
    #[inline]
    pub(super) fn set_frame(&mut self, record: &Current) {
        self.time_ns = record.time_ns;
        self.caplen = record.caplen;
        self.orig_len = record.orig_len;
        self.link = record.link;
        self.start = record.start;
        self.len = record.len;
    }
}

/// A reusable input buffer over any byte stream.
pub(super) struct Input {
    src: Box<dyn Read + Send>,
    pub(super) buf: Arc<Vec<u8>>,
    /// Buffers to read into when `buf` is shared.
    spare: Vec<Vec<u8>>,
    /// Size of a buffer (the unit of each `read`).
    unit: usize,
    /// Start of the unconsumed bytes.
    pub(super) pos: usize,
    /// End of the valid bytes.
    end: usize,
    /// Stream offset of `buf[0]`.
    pub(super) base: u64,
    eof: bool,
}

impl Input {
    pub(super) fn new(src: Box<dyn Read + Send>) -> Self {
        Input {
            src,
            buf: Arc::new(vec![0; BUF_SIZE]),
            spare: Vec::new(),
            unit: BUF_SIZE,
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Reads `src` from now on, whose first byte is at stream offset `base` (it was opened
    /// there); the read unit stays.
    pub(super) fn restart(&mut self, src: Box<dyn Read + Send>, base: u64) {
        self.src = src;
        self.pos = 0;
        self.end = 0;
        self.base = base;
        self.eof = false;
    }

    /// Tries to have at least `need` unconsumed bytes in the buffer; returns how many there are
    /// (fewer only at the end of the input). `need` must be at most [`MAX_RECORD_LEN`].
    #[inline]
    pub(super) fn ensure(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.pos >= need || self.eof {
            return Ok(self.end - self.pos);
        }
        self.refill(need)
    }

    /// [`Input::ensure`] when the buffer holds too little: out of line, so that the check
    /// every record makes twice costs no call (the call was 7 % of a small-frame replay).
    #[inline(never)]
    fn refill(&mut self, need: usize) -> io::Result<usize> {
        if self.pos + need > self.buf.len() || Arc::get_mut(&mut self.buf).is_none() {
            self.move_rest_to_front();
        }
        while self.end - self.pos < need {
            // never clones: the buffer is not shared after `move_rest_to_front`, and nothing
            // takes a share while this runs
            let buf = Arc::make_mut(&mut self.buf);
            if self.end == buf.len() {
                // Grown only as bytes arrive (doubling): a record that claims more than the
                // input holds costs at most twice what the input holds, never what it claims.
                let grown = (buf.len() * 2).min(self.pos + need);
                buf.resize(grown, 0);
            }
            match self.src.read(&mut buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.pos)
    }

    /// Moves the unconsumed bytes to the front of the buffer, or of a spare one when the
    /// buffer is shared (its frames stay where they are for whoever holds it).
    fn move_rest_to_front(&mut self) {
        match Arc::get_mut(&mut self.buf) {
            Some(buf) => buf.copy_within(self.pos..self.end, 0),
            None => {
                let mut fresh = self.spare.pop().unwrap_or_default();
                let rest = &self.buf[self.pos..self.end];
                fresh.resize(self.unit.max(rest.len()), 0);
                fresh[..rest.len()].copy_from_slice(rest);
                self.buf = Arc::new(fresh);
            }
        }
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
    }

    /// Reads 1 MiB at a time from now on: fewer calls for a reader that only skims the
    /// records (the inspector's indexers read 2 GB in half a second).
    pub(super) fn read_in_large_units(&mut self) {
        self.unit = LARGE_BUF_SIZE;
        self.spare.clear();
        if let Some(buf) = Arc::get_mut(&mut self.buf)
            && buf.len() < LARGE_BUF_SIZE
        {
            buf.resize(LARGE_BUF_SIZE, 0);
        }
    }

    /// Takes back a buffer [`Input::shared`] lent, once nothing else holds it.
    pub(super) fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        if self.spare.len() < SPARES
            && let Ok(buf) = Arc::try_unwrap(buf)
            && buf.len() == self.unit
        {
            self.spare.push(buf);
        }
    }

    pub(super) fn spare_buffers(&self) -> usize {
        self.spare.len()
    }

    /// The buffer, to be held past the next read (its bytes do not change while it is held).
    pub(super) fn shared(&self) -> &Arc<Vec<u8>> {
        &self.buf
    }

    pub(super) fn avail(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Stream offset of the first unconsumed byte.
    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

pub(super) fn read_u16(b: &[u8], at: usize, big: bool) -> Option<u16> {
    let bytes: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if big {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    })
}

pub(super) fn read_u32(b: &[u8], at: usize, big: bool) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}
