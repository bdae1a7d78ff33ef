//! Missing PSN ranges of one request stream, as half-open ranges of *extended* PSNs, each with
//! the time its gap was revealed (for `recovery_ns`, interfaces.md §6.7).
//!
//! An extended PSN is a 64-bit position that keeps counting past 2^24 (the flow's first PSN
//! starts at [`EXT_BASE`]); the request stream turns wire PSNs into extended ones relative to
//! its expected PSN, so the ranges here sort naturally and never wrap. Memory grows with the
//! number of open holes, never with the number of PSNs in them.

// Indexing cannot panic here: ranges are indexed by positions found by a search of the same vector.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;

/// Extended position of a flow's first PSN (far from 0 so that PSNs before it stay positive).
pub const EXT_BASE: u64 = 1 << 40;

/// One missing range `[start, end)`, revealed at `time_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hole {
    pub start: u64,
    pub end: u64,
    pub time_ns: u64,
}

/// Sorted, disjoint half-open ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holes {
    ranges: VecDeque<Hole>,
}

impl Holes {
    #[must_use]
    pub fn new() -> Self {
        Holes::default()
    }

    /// Number of open ranges.
    #[must_use]
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }

    /// Total number of missing PSNs.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|h| h.end - h.start).sum()
    }

    /// Iterate over the ranges, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Hole> + '_ {
        self.ranges.iter().copied()
    }

    /// Add `[start, end)`, revealed at `time_ns`, after every range already held.
    pub fn push(&mut self, start: u64, end: u64, time_ns: u64) {
        if start >= end {
            return;
        }
        match self.ranges.back_mut() {
            // a range that touches the last one and was revealed together extends it
            Some(last) if last.end >= start && last.time_ns == time_ns => {
                last.end = last.end.max(end);
            }
            _ => self.ranges.push_back(Hole {
                start,
                end,
                time_ns,
            }),
        }
    }

    #[must_use]
    pub fn contains(&self, p: u64) -> bool {
        let i = self.ranges.partition_point(|h| h.end <= p);
        self.ranges.get(i).is_some_and(|h| h.start <= p)
    }

    /// Remove `[start, end)`; `removed` is told every removed piece (its range and reveal
    /// time). Returns how many PSNs were missing.
    pub fn take_range(&mut self, start: u64, end: u64, mut removed: impl FnMut(Hole)) -> u64 {
        if start >= end {
            return 0;
        }
        let mut total = 0;
        let mut i = self.ranges.partition_point(|h| h.end <= start);
        while let Some(&h) = self.ranges.get(i) {
            if h.start >= end {
                break;
            }
            let lo = h.start.max(start);
            let hi = h.end.min(end);
            total += hi - lo;
            removed(Hole {
                start: lo,
                end: hi,
                time_ns: h.time_ns,
            });
            match (h.start < lo, hi < h.end) {
                (false, false) => {
                    self.ranges.remove(i);
                    continue;
                }
                (true, false) => self.ranges[i].end = lo,
                (false, true) => self.ranges[i].start = hi,
                (true, true) => {
                    self.ranges[i].end = lo;
                    self.ranges.insert(
                        i + 1,
                        Hole {
                            start: hi,
                            end: h.end,
                            time_ns: h.time_ns,
                        },
                    );
                    i += 1;
                }
            }
            i += 1;
        }
        total
    }

    /// Remove `[start, end)`; returns how many of those PSNs were missing.
    pub fn remove_range(&mut self, start: u64, end: u64) -> u64 {
        self.take_range(start, end, |_| {})
    }

    /// Remove one PSN; true when it was missing.
    pub fn remove(&mut self, p: u64) -> bool {
        self.remove_range(p, p + 1) == 1
    }

    /// Drop every range that ends at or before `limit`, returning how many PSNs were dropped
    /// (holes so old that serial arithmetic can no longer reach them).
    pub fn drop_before(&mut self, limit: u64) -> u64 {
        let mut dropped = 0;
        while let Some(&h) = self.ranges.front() {
            if h.end > limit {
                break;
            }
            dropped += h.end - h.start;
            self.ranges.pop_front();
        }
        dropped
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn push_merge_and_remove() {
        let mut h = Holes::new();
        h.push(10, 13, 5); // 10 11 12
        h.push(13, 14, 5); // adjacent, same gap time: merged into 10..14
        h.push(20, 22, 9); // 20 21
        assert_eq!(h.ranges(), 2);
        assert_eq!(h.total(), 6);
        assert!(h.remove(11)); // split 10 | 12 13
        let spans: Vec<_> = h.iter().map(|h| (h.start, h.end, h.time_ns)).collect();
        assert_eq!(spans, [(10, 11, 5), (12, 14, 5), (20, 22, 9)]);
        assert!(!h.remove(11));
        let mut pieces = Vec::new();
        assert_eq!(h.take_range(9, 21, |p| pieces.push(p)), 4); // 10 12 13 20
        let got: Vec<_> = pieces.iter().map(|p| (p.start, p.end, p.time_ns)).collect();
        assert_eq!(got, [(10, 11, 5), (12, 14, 5), (20, 21, 9)]);
        assert!(h.contains(21) && !h.contains(20) && !h.contains(22));
        assert_eq!(h.drop_before(22), 1);
        assert_eq!(h.total(), 0);
    }
}
