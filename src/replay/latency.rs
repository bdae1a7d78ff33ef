//! ACK latency samples of one request flow (§6.3): the time from a request packet with AckReq
//! to the first acknowledgement that covers it, summarised in a [`Sketch`].

// Indexing cannot panic here: pending entries are indexed by positions found in them.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;

use rocescope_dissectors::Psn;

use super::sketch::{Sketch, Summary};

/// AckReq request packets waiting for their ACK, at most.
const PENDING_MAX: usize = 4096;
/// Waiting requests kept in place, before the first allocation (a flow that asks for an ACK
/// on every packet has one waiting at a time).
const PENDING_INLINE: usize = 2;

#[derive(Debug, Clone, Default)]
pub struct Latency {
    samples: Sketch,
    /// (PSN, time) of AckReq request packets not yet covered by an ACK, oldest first.
    pending: Pending,
}

/// The waiting requests: in place while few, else in a ring (kept once allocated).
#[derive(Debug, Clone)]
enum Pending {
    Few {
        n: u8,
        items: [(Psn, u64); PENDING_INLINE],
    },
    Many(VecDeque<(Psn, u64)>),
}

impl Default for Pending {
    fn default() -> Self {
        Pending::Few {
            n: 0,
            items: [(Psn::default(), 0); PENDING_INLINE],
        }
    }
}

impl Latency {
    /// A request packet with AckReq at `psn` was seen at `time_ns`.
    pub fn request(&mut self, psn: Psn, time_ns: u64) {
        match &mut self.pending {
            Pending::Few { n, items } => {
                let len = usize::from(*n);
                if items[..len].iter().any(|&(p, _)| p == psn) {
                    return;
                }
                if len < PENDING_INLINE {
                    items[len] = (psn, time_ns);
                    *n += 1;
                } else {
                    let mut ring = VecDeque::with_capacity(2 * PENDING_INLINE);
                    ring.extend(items.iter().copied());
                    ring.push_back((psn, time_ns));
                    self.pending = Pending::Many(ring);
                }
            }
            Pending::Many(ring) => {
                if ring.iter().any(|&(p, _)| p == psn) {
                    return;
                }
                if ring.len() == PENDING_MAX {
                    ring.pop_front();
                }
                ring.push_back((psn, time_ns));
            }
        }
    }

    /// An ACK (or READ response / atomic ACK with an ACK syndrome) at `psn`: every pending
    /// request at or before it gives one sample.
    pub fn ack(&mut self, psn: Psn, time_ns: u64) {
        match &mut self.pending {
            Pending::Few { n, items } => {
                let mut kept = 0;
                for i in 0..usize::from(*n) {
                    let (p, t) = items[i];
                    if p.distance(psn) <= 0 {
                        self.samples.sample(time_ns.saturating_sub(t));
                    } else {
                        items[kept] = (p, t);
                        kept += 1;
                    }
                }
                // Lossless: at most PENDING_INLINE.
                *n = kept as u8;
            }
            Pending::Many(ring) => {
                let mut i = 0;
                while i < ring.len() {
                    let (p, t) = ring[i];
                    if p.distance(psn) <= 0 {
                        ring.remove(i);
                        self.samples.sample(time_ns.saturating_sub(t));
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }

    #[must_use]
    pub fn summary(&self) -> Summary {
        self.samples.summary()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn one_waiting_at_a_time_then_many_then_the_cap() {
        let mut l = Latency::default();
        for i in 0..10u32 {
            l.request(Psn::new_masked(i), u64::from(i) * 100);
            l.request(Psn::new_masked(i), u64::from(i) * 100 + 7); // the same PSN again: ignored
            l.ack(Psn::new_masked(i), u64::from(i) * 100 + 40);
        }
        let s = l.summary();
        assert_eq!((s.samples, s.p50, s.max), (10, 40, 40));
        // more waiting than fit in place, and more than are kept: the oldest are dropped
        for i in 0..5000u32 {
            l.request(Psn::new_masked(100 + i), 10_000);
        }
        l.ack(Psn::new_masked(100 + 4999), 10_500);
        assert_eq!(l.summary().samples, 10 + PENDING_MAX as u64);
        assert_eq!(l.summary().max, 500);
    }

    #[test]
    fn exact_percentiles_and_coalescing() {
        let mut l = Latency::default();
        l.request(Psn::new_masked(1), 100);
        l.request(Psn::new_masked(2), 200);
        l.request(Psn::new_masked(5), 300);
        l.ack(Psn::new_masked(2), 1000); // covers 1 and 2: 900, 800
        l.ack(Psn::new_masked(4), 1100); // covers nothing
        l.ack(Psn::new_masked(5), 1300); // 1000
        let s = l.summary();
        assert_eq!((s.samples, s.p50, s.p99, s.max), (3, 900, 1000, 1000));
    }
}
