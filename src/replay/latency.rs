//! ACK latency samples of one request flow (§6.3): exact while few, then a log-linear
//! histogram (relative error below 1 %), so memory does not grow with the frame count.

use std::collections::VecDeque;

use rocescope_dissectors::Psn;

/// Samples kept exactly before switching to the histogram.
const EXACT: usize = 1024;
/// Sub-buckets per power of two in the histogram.
const SUB_BITS: u32 = 7;
/// AckReq request packets waiting for their ACK, at most.
const PENDING_MAX: usize = 4096;

/// p50 / p99 / max of the samples (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub samples: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Latency {
    exact: Vec<u64>,
    /// Dense counts of buckets `hist_base ..`, allocated once the exact list is full.
    hist: Vec<u32>,
    hist_base: u32,
    count: u64,
    max: u64,
    /// (PSN, time) of AckReq request packets not yet covered by an ACK.
    pending: VecDeque<(Psn, u64)>,
}

fn bucket(v: u64) -> u32 {
    if v < (1 << SUB_BITS) {
        return u32::try_from(v).unwrap_or(0);
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = exp - SUB_BITS;
    let mantissa = u32::try_from((v >> shift) & ((1 << SUB_BITS) - 1)).unwrap_or(0);
    ((shift + 1) << SUB_BITS) | mantissa
}

fn bucket_value(b: u32) -> u64 {
    let shift = b >> SUB_BITS;
    if shift == 0 {
        return u64::from(b);
    }
    let mantissa = u64::from(b & ((1 << SUB_BITS) - 1)) | (1 << SUB_BITS);
    mantissa << (shift - 1)
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
                self.sample(time_ns.saturating_sub(t));
            } else {
                i += 1;
            }
        }
    }

    pub fn sample(&mut self, ns: u64) {
        self.count += 1;
        self.max = self.max.max(ns);
        if self.hist.is_empty() && self.exact.len() < EXACT {
            self.exact.push(ns);
            return;
        }
        if self.hist.is_empty() {
            let exact = std::mem::take(&mut self.exact);
            for v in exact {
                self.count_bucket(bucket(v));
            }
        }
        self.count_bucket(bucket(ns));
    }

    fn count_bucket(&mut self, b: u32) {
        if self.hist.is_empty() {
            self.hist_base = b;
        }
        if b < self.hist_base {
            let grow = (self.hist_base - b) as usize;
            self.hist.splice(0..0, std::iter::repeat_n(0, grow));
            self.hist_base = b;
        }
        let i = (b - self.hist_base) as usize;
        if i >= self.hist.len() {
            self.hist.resize(i + 1, 0);
        }
        self.hist[i] = self.hist[i].saturating_add(1);
    }

    #[must_use]
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        let rank = |q: u64| -> u64 { (self.count * q).div_ceil(100).max(1) };
        let (p50, p99) = if self.hist.is_empty() {
            let mut v = self.exact.clone();
            v.sort_unstable();
            let at = |r: u64| v[usize::try_from(r - 1).unwrap_or(0).min(v.len() - 1)];
            (at(rank(50)), at(rank(99)))
        } else {
            let at = |r: u64| {
                let mut seen = 0u64;
                for (i, &c) in self.hist.iter().enumerate() {
                    seen += u64::from(c);
                    if seen >= r {
                        let b = self.hist_base + u32::try_from(i).unwrap_or(0);
                        return bucket_value(b).min(self.max);
                    }
                }
                self.max
            };
            (at(rank(50)), at(rank(99)))
        };
        Summary {
            samples: self.count,
            p50,
            p99,
            max: self.max,
        }
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

    #[test]
    fn histogram_is_close() {
        let mut l = Latency::default();
        for i in 1..=10_000u64 {
            l.sample(i * 1000);
        }
        let s = l.summary();
        assert_eq!(s.samples, 10_000);
        assert_eq!(s.max, 10_000_000);
        assert!(s.p50.abs_diff(5_000_000) < 50_000, "{}", s.p50);
        assert!(s.p99.abs_diff(9_900_000) < 100_000, "{}", s.p99);
        for v in [0, 1, 127, 128, 129, 1000, 123_456_789] {
            let b = bucket_value(bucket(v));
            assert!(b <= v && v - b <= v / 100 + 1, "{v} {b}");
        }
    }
}
