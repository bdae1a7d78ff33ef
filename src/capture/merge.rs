//! Several captures merged by timestamp, as mergecap does.

// Indexing cannot panic here: `readers[0]` only when there is exactly one reader.
#![allow(clippy::indexing_slicing)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use super::{CaptureError, CaptureReader, SharedFrame};
use crate::frame::Frame;

/// Several captures merged by timestamp, as mergecap does: at each step the earliest pending
/// frame, ties going to the file given first; frames are numbered in merged order. With one file
/// it is a thin wrapper around that file's [`CaptureReader`].
// Aligned to its own cache lines: the reading thread of `source::drive` writes it for every
// frame, and it must not share a line with what the consuming thread writes (false sharing
// cost the two-thread replay a third of its time).
#[derive(Debug)]
#[repr(align(128))]
pub struct MergedReader {
    readers: Vec<CaptureReader>,
    /// `(time, reader index)` of every reader that has a pending frame.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The reader whose frame was returned last; it is advanced at the next call.
    last: Option<usize>,
    number: u64,
    errors: VecDeque<CaptureError>,
    first_time_ns: Option<u64>,
}

impl MergedReader {
    /// Merges readers that were opened already (in the order given: that order breaks ties).
    #[must_use]
    pub fn new(readers: Vec<CaptureReader>) -> Self {
        let mut merged = MergedReader {
            heap: BinaryHeap::with_capacity(readers.len()),
            readers,
            last: None,
            number: 0,
            errors: VecDeque::new(),
            first_time_ns: None,
        };
        if merged.readers.len() > 1 {
            for i in 0..merged.readers.len() {
                merged.refill(i);
            }
        }
        merged
    }

    fn refill(&mut self, i: usize) {
        let Some(reader) = self.readers.get_mut(i) else {
            return;
        };
        match reader.advance() {
            Some(Ok(())) => self.heap.push(Reverse((reader.cur.time_ns, i))),
            Some(Err(e)) => self.errors.push_back(e),
            None => {}
        }
    }

    /// The next frame in merged order, `None` when every input is exhausted. An error of one
    /// input is returned once; the other inputs go on.
    pub fn next_frame(&mut self) -> Option<Result<Frame<'_>, CaptureError>> {
        match self.advance()? {
            Ok(()) => Some(Ok(self.current())),
            Err(e) => Some(Err(e)),
        }
    }

    /// Moves to the next frame in merged order without borrowing it.
    pub fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        if self.readers.len() == 1 {
            // one file: its own numbers and first time (nothing written here per frame)
            if self.last.is_none() {
                self.last = Some(0);
            }
            return self.readers[0].advance();
        }
        if let Some(i) = self.last.take() {
            self.refill(i);
        }
        if let Some(e) = self.errors.pop_front() {
            return Some(Err(e));
        }
        let Reverse((time_ns, i)) = self.heap.pop()?;
        self.last = Some(i);
        self.number += 1;
        self.first_time_ns.get_or_insert(time_ns);
        Some(Ok(()))
    }

    /// The frame [`advance`](Self::advance) moved to, numbered in merged order.
    #[must_use]
    #[inline]
    pub fn current(&self) -> Frame<'_> {
        if self.readers.len() == 1 {
            return self.readers[0].current();
        }
        match self.last.and_then(|i| self.readers.get(i)) {
            Some(reader) => Frame {
                number: self.number,
                input: self
                    .last
                    .and_then(|i| u16::try_from(i).ok())
                    .unwrap_or(u16::MAX),
                ..reader.current()
            },
            None => Frame {
                number: 0,
                time_ns: 0,
                caplen: 0,
                orig_len: 0,
                link: crate::frame::LinkType::ETHERNET,
                input: 0,
                data: &[],
            },
        }
    }

    /// The current frame as a range of its reader's buffer (see
    /// [`CaptureReader::current_shared`]); `None` before the first frame.
    #[must_use]
    pub fn current_shared(&self) -> Option<SharedFrame<'_>> {
        let i = if self.readers.len() == 1 {
            0
        } else {
            self.last?
        };
        self.readers.get(i).map(CaptureReader::current_shared)
    }

    /// Gives back a buffer lent by [`current_shared`](Self::current_shared), to the reader
    /// with the fewest spare buffers.
    pub fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        if let Some(reader) = self.readers.iter_mut().min_by_key(|r| r.spare_buffers()) {
            reader.recycle(buf);
        }
    }

    /// Total bytes of the inputs; `None` when one of them has no known size (a pipe).
    #[must_use]
    pub fn size_hint(&self) -> Option<u64> {
        self.readers
            .iter()
            .map(CaptureReader::size_hint)
            .try_fold(0u64, |sum, n| Some(sum.saturating_add(n?)))
    }

    /// Time of the first frame in merged order, once read.
    #[must_use]
    pub fn first_time_ns(&self) -> Option<u64> {
        match self.readers.as_slice() {
            [one] => one.first_time_ns(),
            _ => self.first_time_ns,
        }
    }

    /// Index (in the order opened) of the input the last returned frame came from.
    #[must_use]
    pub fn last_source(&self) -> Option<usize> {
        self.last
    }

    /// The inputs, in the order opened.
    #[must_use]
    pub fn readers(&self) -> &[CaptureReader] {
        &self.readers
    }
}
