//! The simulation's event queue: pops events in `(time, seq)` order, exactly as one binary heap
//! would, but most pushes and pops are O(1).
//!
//! Events are pushed on a *lane* chosen by the caller (the event kind). Most kinds are scheduled
//! in time order (a link delivers packets in the order it sent them), so a push whose time is not
//! earlier than the lane's last entry goes at the back of that lane's FIFO; anything else goes
//! into a fallback heap. Every lane is therefore sorted, and a pop takes the smallest head among
//! the lanes and the heap. `seq` grows with every push, so `(time, seq)` is a total order and the
//! pop order is the same as a single heap's, whatever the lanes.

// Indexing cannot panic here: lanes are indexed modulo LANES or by a position found among them.
#![allow(clippy::indexing_slicing)]

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// An event with its time and push sequence number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<E> {
    pub t: u64,
    pub seq: u64,
    pub ev: E,
}

impl<E> Entry<E> {
    fn key(&self) -> (u64, u64) {
        (self.t, self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// `LANES` sorted FIFOs plus a heap for out-of-order pushes.
pub(crate) struct EventQueue<E, const LANES: usize> {
    lanes: [VecDeque<Entry<E>>; LANES],
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
}

impl<E: Copy, const LANES: usize> EventQueue<E, LANES> {
    pub fn new() -> Self {
        EventQueue {
            lanes: std::array::from_fn(|_| VecDeque::with_capacity(256)),
            heap: BinaryHeap::with_capacity(256),
            seq: 0,
        }
    }

    /// Schedules `ev` at `t` on `lane` (taken modulo `LANES`).
    pub fn push(&mut self, lane: usize, t: u64, ev: E) {
        self.seq += 1;
        let e = Entry {
            t,
            seq: self.seq,
            ev,
        };
        let q = &mut self.lanes[lane % LANES];
        match q.back() {
            Some(last) if last.t > t => self.heap.push(Reverse(e)),
            _ => q.push_back(e),
        }
    }

    /// Takes the earliest event (ties: the one pushed first).
    pub fn pop(&mut self) -> Option<Entry<E>> {
        let mut best: Option<(usize, (u64, u64))> = None;
        for (i, q) in self.lanes.iter().enumerate() {
            if let Some(f) = q.front() {
                if best.is_none_or(|(_, k)| f.key() < k) {
                    best = Some((i, f.key()));
                }
            }
        }
        match (best, self.heap.peek()) {
            (Some((_, k)), Some(Reverse(h))) if h.key() < k => self.heap.pop().map(|r| r.0),
            (Some((i, _)), _) => self.lanes[i].pop_front(),
            (None, _) => self.heap.pop().map(|r| r.0),
        }
    }

    /// Time of the event `pop` would take next.
    pub fn peek_time(&self) -> Option<u64> {
        let lanes = self.lanes.iter().filter_map(|q| q.front().map(|f| f.t));
        let heap = self.heap.peek().map(|Reverse(h)| h.t);
        lanes.chain(heap).min()
    }

    pub fn clear(&mut self) {
        for q in &mut self.lanes {
            q.clear();
        }
        self.heap.clear();
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lanes.iter().all(VecDeque::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same order as one heap of `(t, seq)`, for any lanes and times.
    #[test]
    fn pops_in_heap_order() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q: EventQueue<u64, 4> = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut popped = 0;
        for round in 0..20_000u64 {
            let pushes = next() % 3;
            for _ in 0..pushes {
                // Mostly in order per lane, sometimes earlier, often ties.
                let t = now + next() % if round % 7 == 0 { 50 } else { 5 };
                let lane = usize::try_from(next() % 5).unwrap();
                seq += 1;
                q.push(lane, t, seq);
                reference.push(Reverse((t, seq)));
            }
            if next() % 2 == 0 {
                let a = q.pop().map(|e| (e.t, e.ev));
                let b = reference.pop().map(|r| r.0);
                assert_eq!(a, b);
                if let Some((t, _)) = a {
                    now = t;
                    popped += 1;
                }
            }
        }
        while let Some(Reverse(b)) = reference.pop() {
            let a = q.pop().map(|e| (e.t, e.ev));
            assert_eq!(a, Some(b));
        }
        assert!(q.pop().is_none() && q.is_empty());
        assert!(popped > 1000);
    }
}
