//! ACK latency samples of one request flow (§6.3): the time from a request packet with AckReq
//! to the first acknowledgement that covers it, summarised in a [`Sketch`].

// Indexing cannot panic here: pending entries are indexed by positions found in them.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;

use rocescope_dissectors::Psn;

use super::sketch::{Sketch, Summary};

/// AckReq request packets waiting for their ACK, at most.
const PENDING_MAX: usize = 4096;

#[derive(Debug, Clone, Default)]
pub struct Latency {
    samples: Sketch,
    /// (PSN, time) of AckReq request packets not yet covered by an ACK.
    pending: VecDeque<(Psn, u64)>,
}

impl Latency {
    /// A request packet with AckReq at `psn` was seen at `time_ns`.
    pub fn request(&mut self, psn: Psn, time_ns: u64) {
        if self.pending.iter().any(|&(p, _)| p == psn) {
            return;
        }
        if self.pending.len() == PENDING_MAX {
            self.pending.pop_front();
        }
        self.pending.push_back((psn, time_ns));
    }

    /// An ACK (or READ response / atomic ACK with an ACK syndrome) at `psn`: every pending
    /// request at or before it gives one sample.
    pub fn ack(&mut self, psn: Psn, time_ns: u64) {
        let mut i = 0;
        while i < self.pending.len() {
            let (p, t) = self.pending[i];
            if p.distance(psn) <= 0 {
                self.pending.remove(i);
                self.samples.sample(time_ns.saturating_sub(t));
            } else {
                i += 1;
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
