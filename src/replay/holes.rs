//! Missing PSN ranges of one request stream, as half-open ranges of *extended* PSNs.
//!
//! An extended PSN is a 64-bit position that keeps counting past 2^24 (the flow's first PSN
//! starts at [`EXT_BASE`]); the request stream turns wire PSNs into extended ones relative to
//! its expected PSN, so the ranges here sort naturally and never wrap. Memory grows with the
//! number of open holes, never with the number of PSNs in them.

use std::collections::VecDeque;

/// Extended position of a flow's first PSN (far from 0 so that PSNs before it stay positive).
pub const EXT_BASE: u64 = 1 << 40;

/// Sorted, disjoint, non-adjacent half-open ranges `[start, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holes {
    ranges: VecDeque<(u64, u64)>,
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
        self.ranges.iter().map(|&(s, e)| e - s).sum()
    }

    /// Iterate over the ranges, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }

    /// Add `[start, end)`, which lies after every range already held.
    pub fn push(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        match self.ranges.back_mut() {
            Some(last) if last.1 >= start => last.1 = last.1.max(end),
            _ => self.ranges.push_back((start, end)),
        }
    }

    /// Index of the range containing `p`.
    fn find(&self, p: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|&(_, e)| e <= p);
        match self.ranges.get(i) {
            Some(&(s, _)) if s <= p => Some(i),
            _ => None,
        }
    }

    #[must_use]
    pub fn contains(&self, p: u64) -> bool {
        self.find(p).is_some()
    }

    /// Remove `[start, end)`; returns how many of those PSNs were missing.
    pub fn remove_range(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut removed = 0;
        let mut i = self.ranges.partition_point(|&(_, e)| e <= start);
        while let Some(&(s, e)) = self.ranges.get(i) {
            if s >= end {
                break;
            }
            let lo = s.max(start);
            let hi = e.min(end);
            removed += hi - lo;
            match (s < lo, hi < e) {
                (false, false) => {
                    self.ranges.remove(i);
                    continue;
                }
                (true, false) => self.ranges[i].1 = lo,
                (false, true) => self.ranges[i].0 = hi,
                (true, true) => {
                    self.ranges[i].1 = lo;
                    self.ranges.insert(i + 1, (hi, e));
                    i += 1;
                }
            }
            i += 1;
        }
        removed
    }

    /// Remove one PSN; true when it was missing.
    pub fn remove(&mut self, p: u64) -> bool {
        self.remove_range(p, p + 1) == 1
    }

    /// Drop every range that ends at or before `limit`, returning how many PSNs were dropped
    /// (holes so old that serial arithmetic can no longer reach them).
    pub fn drop_before(&mut self, limit: u64) -> u64 {
        let mut dropped = 0;
        while let Some(&(s, e)) = self.ranges.front() {
            if e > limit {
                break;
            }
            dropped += e - s;
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
        h.push(10, 13); // 10 11 12
        h.push(13, 14); // adjacent: merged into 10..14
        h.push(20, 22); // 20 21
        assert_eq!(h.ranges(), 2);
        assert_eq!(h.total(), 6);
        assert!(h.remove(11)); // split 10 | 12 13
        assert_eq!(h.iter().collect::<Vec<_>>(), [(10, 11), (12, 14), (20, 22)]);
        assert!(!h.remove(11));
        assert_eq!(h.remove_range(9, 21), 4); // 10 12 13 20
        assert_eq!(h.iter().collect::<Vec<_>>(), [(21, 22)]);
        assert!(h.contains(21) && !h.contains(20) && !h.contains(22));
        assert_eq!(h.drop_before(22), 1);
        assert_eq!(h.total(), 0);
    }
}
