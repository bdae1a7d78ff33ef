//! A bounded summary of a stream of durations: exact while there are few samples, then a
//! log-linear histogram (relative error below 1 %), so memory does not grow with the frame
//! count. ACK latency and the recovery timings of interfaces.md §6.7 all use it.

// Indexing cannot panic here: the exact samples are non-empty when `count > 0` and the histogram is
// unused; the rank is clamped to their length.
#![allow(clippy::indexing_slicing)]

use smallvec::SmallVec;

/// Samples kept exactly before switching to the histogram.
const EXACT: usize = 1024;
/// Exact samples kept in place, before the first allocation: as many as fit in the space the
/// allocation's pointer and length take anyway and 24 bytes more (a [`Sketch`] of 56 bytes).
const INLINE: usize = 10;
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
    /// The samples below 2^32 ns (4.3 s) while there are at most [`EXACT`] in all, in 4 bytes
    /// each and the first [`INLINE`] in place: most flows of a fabric-wide capture have a few,
    /// and then cost no allocation (nor a cache miss per acknowledgement).
    exact: SmallVec<[u32; INLINE]>,
    /// The longer samples while exact, and the histogram once there are more than [`EXACT`].
    /// While exact, the count and the maximum are the samples' own: kept only in the
    /// histogram (a sketch per flow with requests: issue 13's bytes per flow).
    rare: Option<Box<Rare>>,
}

#[derive(Debug, Clone, Default)]
struct Rare {
    /// Exact samples of 2^32 ns or more.
    wide: Vec<u64>,
    hist: Option<Histogram>,
}

/// Dense counts of buckets `base ..`.
#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: Vec<u32>,
    base: u32,
    samples: u64,
    max: u64,
}

impl Histogram {
    /// `n` samples of `ns`.
    fn add(&mut self, ns: u64, n: u64) {
        self.samples = self.samples.saturating_add(n);
        self.max = self.max.max(ns);
        self.count(bucket(ns), n);
    }

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
        if let (None, Ok(narrow)) = (&self.rare, u32::try_from(ns))
            && self.exact.len() < EXACT
        {
            // the common case, kept cheap: every ACK of a flow lands here at first
            self.exact.push(narrow);
            return;
        }
        self.sample_n(ns, 1);
    }

    /// `n` samples of the same value (a range of PSNs recovered together), in one step.
    pub fn sample_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let wide = self.rare.as_ref().map_or(0, |r| r.wide.len());
        let room = EXACT - self.exact.len() - wide;
        let histogram = self.rare.as_ref().is_some_and(|r| r.hist.is_some());
        if let (false, Ok(n)) = (histogram, usize::try_from(n))
            && n <= room
        {
            match u32::try_from(ns) {
                Ok(narrow) => self.exact.extend(std::iter::repeat_n(narrow, n)),
                Err(_) => {
                    let rare = self.rare.get_or_insert_default();
                    rare.wide.extend(std::iter::repeat_n(ns, n));
                }
            }
            return;
        }
        let rare = self.rare.get_or_insert_default();
        let hist = match &mut rare.hist {
            Some(h) => h,
            None => {
                let exact = std::mem::take(&mut self.exact);
                let wide = std::mem::take(&mut rare.wide);
                let h = rare.hist.insert(Histogram::default());
                for v in exact.into_iter().map(u64::from).chain(wide) {
                    h.add(v, 1);
                }
                h
            }
        };
        hist.add(ns, n);
    }

    /// The histogram, once there is one.
    fn histogram(&self) -> Option<&Histogram> {
        self.rare.as_ref().and_then(|r| r.hist.as_ref())
    }

    /// The exact samples of 2^32 ns or more (none once there is a histogram).
    fn wide(&self) -> &[u64] {
        self.rare
            .as_ref()
            .map(|r| r.wide.as_slice())
            .unwrap_or_default()
    }

    /// Samples so far.
    #[must_use]
    pub fn samples(&self) -> u64 {
        match self.histogram() {
            Some(h) => h.samples,
            None => (self.exact.len() + self.wide().len()) as u64,
        }
    }

    /// The longest sample (0 with none).
    #[must_use]
    pub fn max(&self) -> u64 {
        match self.histogram() {
            Some(h) => h.max,
            None => {
                let exact = self.exact.iter().map(|&n| u64::from(n)).max();
                exact.max(self.wide().iter().copied().max()).unwrap_or(0)
            }
        }
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
        let count = self.samples();
        if count == 0 {
            return [0; N];
        }
        let ranks = ranks.map(|r| r.clamp(1, count));
        let Some(hist) = self.histogram() else {
            let mut v: Vec<u64> = self.exact.iter().map(|&n| u64::from(n)).collect();
            v.extend_from_slice(self.wide());
            v.sort_unstable();
            return ranks.map(|r| v[usize::try_from(r - 1).unwrap_or(0).min(v.len() - 1)]);
        };
        ranks.map(|r| {
            let mut seen = 0u64;
            for (i, &c) in hist.counts.iter().enumerate() {
                seen += u64::from(c);
                if seen >= r {
                    let b = hist.base + u32::try_from(i).unwrap_or(0);
                    return bucket_value(b).min(hist.max);
                }
            }
            hist.max
        })
    }

    #[must_use]
    pub fn summary(&self) -> Summary {
        let samples = self.samples();
        if samples == 0 {
            return Summary::default();
        }
        let rank = |q: u64| -> u64 { samples.saturating_mul(q).div_ceil(100).max(1) };
        let [p50, p99] = self.at_ranks([rank(50), rank(99)]);
        Summary {
            samples,
            p50,
            p99,
            max: self.max(),
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

    /// Samples of 4.3 s or more are kept exactly beside the 4-byte ones: every rank is the
    /// one of the samples sorted, one at a time or several at once; past [`EXACT`] they are
    /// counted in the histogram with the others.
    #[test]
    fn long_samples_stay_exact() {
        let mut s = Sketch::default();
        let mut all = Vec::new();
        for i in 0..200u64 {
            let v = match i % 40 {
                7 => (5 << 32) + i,
                13 => u64::from(u32::MAX) + 1,
                _ => i * 1_000_003 % 4_000_000_007,
            };
            if i % 50 == 0 {
                s.sample_n(v, 3);
                all.extend([v; 3]);
            } else {
                s.sample(v);
                all.push(v);
            }
        }
        all.sort_unstable();
        assert_eq!(s.samples(), all.len() as u64);
        for r in 1..=all.len() {
            assert_eq!(s.at_rank(r as u64), all[r - 1], "rank {r}");
        }
        assert_eq!(s.summary().max, all[all.len() - 1]);
        s.sample_n(1000, EXACT as u64);
        let t = s.summary();
        assert_eq!(t.samples, all.len() as u64 + EXACT as u64);
        assert_eq!(t.max, (5 << 32) + 207 - 40);
        assert!(t.p50.abs_diff(1000) <= 10, "{}", t.p50);
        // the ten long ones are still the top ten
        assert!(s.at_rank(t.samples - 9) >= 1 << 32);
        assert!(s.at_rank(t.samples - 10) < 1 << 32);
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
