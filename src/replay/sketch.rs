//! A bounded summary of a stream of durations: exact while there are few samples, then a
//! log-linear histogram (relative error below 1 %), so memory does not grow with the frame
//! count. ACK latency and the recovery timings of interfaces.md §6.7 all use it.

// Indexing cannot panic here: the exact samples are non-empty when `count > 0` and the histogram is
// unused; the rank is clamped to their length.
#![allow(clippy::indexing_slicing)]

use smallvec::SmallVec;

/// Samples kept exactly before switching to the histogram.
const EXACT: usize = 1024;
/// Exact samples kept in place, before the first allocation.
const INLINE: usize = 8;
/// Sub-buckets per power of two in the histogram.
const SUB_BITS: u32 = 7;

/// p50 / p99 / max of the samples (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub samples: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// Samples of one duration.
#[derive(Debug, Clone, Default)]
pub struct Sketch {
    /// The samples while there are at most [`EXACT`], the first [`INLINE`] in place: most
    /// flows of a fabric-wide capture have a few, and then cost no allocation (nor a cache
    /// miss per acknowledgement).
    exact: SmallVec<[u64; INLINE]>,
    /// Allocated once the exact list is full.
    hist: Option<Box<Histogram>>,
    count: u64,
    max: u64,
}

/// Dense counts of buckets `base ..`.
#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: Vec<u32>,
    base: u32,
}

impl Histogram {
    fn count(&mut self, b: u32, n: u64) {
        if self.counts.is_empty() {
            self.base = b;
        }
        if b < self.base {
            let grow = (self.base - b) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = b;
        }
        let i = (b - self.base) as usize;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = self.counts[i].saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
    }
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

impl Sketch {
    /// One sample.
    #[inline]
    pub fn sample(&mut self, ns: u64) {
        if self.hist.is_none() && self.exact.len() < EXACT {
            // the common case, kept cheap: every ACK of a flow lands here at first
            self.count += 1;
            self.max = self.max.max(ns);
            self.exact.push(ns);
            return;
        }
        self.sample_n(ns, 1);
    }

    /// `n` samples of the same value (a range of PSNs recovered together), in one step.
    pub fn sample_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.count = self.count.saturating_add(n);
        self.max = self.max.max(ns);
        let room = EXACT - self.exact.len();
        if self.hist.is_none() && u64::try_from(room).is_ok_and(|r| n <= r) {
            self.exact
                .extend(std::iter::repeat_n(ns, usize::try_from(n).unwrap_or(room)));
            return;
        }
        let hist = match self.hist.as_deref_mut() {
            Some(h) => h,
            None => {
                let exact = std::mem::take(&mut self.exact);
                let h = self.hist.insert(Box::default());
                for v in exact {
                    h.count(bucket(v), 1);
                }
                h
            }
        };
        hist.count(bucket(ns), n);
    }

    /// Samples so far.
    #[must_use]
    pub fn samples(&self) -> u64 {
        self.count
    }

    /// The sample of rank `r` (1 for the smallest; nearest rank, clamped to the samples);
    /// 0 without samples.
    #[must_use]
    pub fn at_rank(&self, r: u64) -> u64 {
        let [v] = self.at_ranks([r]);
        v
    }

    /// [`Sketch::at_rank`] of several ranks (the exact samples sorted once).
    fn at_ranks<const N: usize>(&self, ranks: [u64; N]) -> [u64; N] {
        if self.count == 0 {
            return [0; N];
        }
        let ranks = ranks.map(|r| r.clamp(1, self.count));
        let Some(hist) = self.hist.as_deref() else {
            let mut v = self.exact.clone();
            v.sort_unstable();
            return ranks.map(|r| v[usize::try_from(r - 1).unwrap_or(0).min(v.len() - 1)]);
        };
        ranks.map(|r| {
            let mut seen = 0u64;
            for (i, &c) in hist.counts.iter().enumerate() {
                seen += u64::from(c);
                if seen >= r {
                    let b = hist.base + u32::try_from(i).unwrap_or(0);
                    return bucket_value(b).min(self.max);
                }
            }
            self.max
        })
    }

    #[must_use]
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        let rank = |q: u64| -> u64 { (self.count * q).div_ceil(100).max(1) };
        let [p50, p99] = self.at_ranks([rank(50), rank(99)]);
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
    fn many_equal_samples_at_once() {
        let mut s = Sketch::default();
        s.sample_n(5, 3);
        s.sample(100);
        let t = s.summary();
        assert_eq!((t.samples, t.p50, t.p99, t.max), (4, 5, 100, 100));
        // past the exact list: one bucket takes a million samples in one step
        s.sample_n(2000, 1_000_000);
        let t = s.summary();
        assert_eq!(t.samples, 1_000_004);
        assert!(t.p50.abs_diff(2000) <= 20, "{}", t.p50);
    }

    #[test]
    fn histogram_is_close() {
        let mut l = Sketch::default();
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
