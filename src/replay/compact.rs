//! Per-flow containers that cost one pointer while unused: lists most flows never use (NAK
//! times, held acknowledgements, open gaps, resent PSNs) and a rarely held value (the (b)-rule
//! decision) would otherwise cost their full size in every one of hundreds of thousands of
//! flows. Both keep their allocation once made, so a flow that uses them often (a lossy one)
//! does not allocate per frame.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

/// `Vec<T>` behind an optional box: 8 bytes while empty, allocated on the first push.
// The box is the point: clippy's `box_collection` assumes the 24-byte `Vec` header is free.
#[allow(clippy::box_collection)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinVec<T>(Option<Box<Vec<T>>>);

impl<T> Default for ThinVec<T> {
    fn default() -> Self {
        ThinVec(None)
    }
}

impl<T> ThinVec<T> {
    #[must_use]
    pub const fn new() -> Self {
        ThinVec(None)
    }

    pub fn push(&mut self, v: T) {
        self.0.get_or_insert_with(Box::default).push(v);
    }

    /// Empties it, keeping the allocation (a flow that needed it once is likely to again).
    pub fn clear(&mut self) {
        if let Some(v) = self.0.as_mut() {
            v.clear();
        }
    }

    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        if let Some(v) = self.0.as_mut() {
            v.retain(keep);
        }
    }

    /// Removes and returns the element at `i`; `None` past the end.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.0.as_mut()?;
        (i < v.len()).then(|| v.remove(i))
    }
}

impl<T> Deref for ThinVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl<T> DerefMut for ThinVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self.0.as_deref_mut() {
            Some(v) => v.as_mut_slice(),
            None => &mut [],
        }
    }
}

/// An optional extended PSN position in 8 bytes, not 16 (`u64::MAX` stands for none: a
/// position starts at 2^40 and moves at most 2^23 a packet, so it never gets there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptPos(u64);

impl Default for OptPos {
    fn default() -> Self {
        OptPos(u64::MAX)
    }
}

impl OptPos {
    #[must_use]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    pub fn set(&mut self, v: Option<u64>) {
        self.0 = v.unwrap_or(u64::MAX);
    }

    /// The value, leaving none.
    pub fn take(&mut self) -> Option<u64> {
        let v = self.get();
        self.0 = u64::MAX;
        v
    }
}

/// An optional `T` in a box that is kept once allocated: `set` and `take` of a value reuse it.
/// 8 bytes while never set (whether it holds a value lives in the box).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot<T: Copy> {
    boxed: Option<Box<(T, bool)>>,
}

impl<T: Copy> Default for Slot<T> {
    fn default() -> Self {
        Slot { boxed: None }
    }
}

impl<T: Copy> Slot<T> {
    pub fn set(&mut self, v: T) {
        match self.boxed.as_deref_mut() {
            Some(b) => *b = (v, true),
            None => self.boxed = Some(Box::new((v, true))),
        }
    }

    /// The value, leaving the slot empty (the allocation stays).
    pub fn take(&mut self) -> Option<T> {
        let b = self.boxed.as_deref_mut()?;
        let full = std::mem::replace(&mut b.1, false);
        full.then_some(b.0)
    }

    pub fn as_mut(&mut self) -> Option<&mut T> {
        self.boxed.as_deref_mut().filter(|b| b.1).map(|b| &mut b.0)
    }

    /// A copy of the value, if there is one.
    #[must_use]
    pub fn get(&self) -> Option<T> {
        self.boxed.as_deref().filter(|b| b.1).map(|b| b.0)
    }

    #[must_use]
    pub fn is_some(&self) -> bool {
        self.boxed.as_deref().is_some_and(|b| b.1)
    }

    /// Empties it (the allocation stays).
    pub fn clear(&mut self) {
        if let Some(b) = self.boxed.as_deref_mut() {
            b.1 = false;
        }
    }
}

/// A queue that holds its one item in place and moves to a `VecDeque` when a second comes:
/// a queue per flow that holds one item at a time, as most do, then costs no allocation
/// (over hundreds of thousands of flows, an allocation each was more than the items), and
/// takes no more room than the item where `T` leaves a niche for the variant. Once moved, it
/// stays a `VecDeque` until it is replaced.
#[derive(Debug, Clone)]
pub enum FewDeque<T> {
    One(Option<T>),
    Many(VecDeque<T>),
}

impl<T> Default for FewDeque<T> {
    fn default() -> Self {
        FewDeque::One(None)
    }
}

impl<T: Copy> FewDeque<T> {
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            FewDeque::One(one) => usize::from(one.is_some()),
            FewDeque::Many(ring) => ring.len(),
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Front to back.
    #[must_use]
    pub fn iter(&self) -> FewIter<'_, T> {
        match self {
            FewDeque::One(one) => FewIter::One(one.iter()),
            FewDeque::Many(ring) => FewIter::Many(ring.iter()),
        }
    }

    #[must_use]
    pub fn front(&self) -> Option<&T> {
        self.iter().next()
    }

    pub fn push_back(&mut self, v: T) {
        match self {
            FewDeque::One(None) => *self = FewDeque::One(Some(v)),
            FewDeque::One(Some(first)) => {
                let mut ring = VecDeque::with_capacity(4);
                ring.push_back(*first);
                ring.push_back(v);
                *self = FewDeque::Many(ring);
            }
            FewDeque::Many(ring) => ring.push_back(v),
        }
    }

    pub fn pop_front(&mut self) -> Option<T> {
        self.remove(0)
    }

    /// Removes and returns the item at `i` (from the front); `None` past the end.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        match self {
            FewDeque::One(one) if i == 0 => one.take(),
            FewDeque::One(_) => None,
            FewDeque::Many(ring) => ring.remove(i),
        }
    }
}

/// [`FewDeque::iter`].
#[derive(Debug, Clone)]
pub enum FewIter<'a, T> {
    One(std::option::Iter<'a, T>),
    Many(std::collections::vec_deque::Iter<'a, T>),
}

impl<'a, T> Iterator for FewIter<'a, T> {
    type Item = &'a T;
    fn next(&mut self) -> Option<&'a T> {
        match self {
            FewIter::One(it) => it.next(),
            FewIter::Many(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            FewIter::One(it) => it.size_hint(),
            FewIter::Many(it) => it.size_hint(),
        }
    }
}

impl<T> DoubleEndedIterator for FewIter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            FewIter::One(it) => it.next_back(),
            FewIter::Many(it) => it.next_back(),
        }
    }
}

impl<T> ExactSizeIterator for FewIter<'_, T> {}

#[cfg(test)]
mod test {
    use super::*;

    /// Against a `VecDeque` doing the same: every operation, in and out of place.
    #[test]
    fn few_deque_is_a_queue() {
        let mut q: FewDeque<u32> = FewDeque::default();
        let mut model: VecDeque<u32> = VecDeque::new();
        // (operation, value): push, pop, front, remove at
        let script: &[(u8, u32)] = &[
            (0, 1),
            (2, 0),
            (3, 1),
            (1, 0),
            (1, 0),
            (3, 0),
            (0, 2),
            (3, 0),
            (0, 3),
            (0, 4),
            (2, 0),
            (3, 1),
            (0, 5),
            (1, 0),
            (1, 0),
            (1, 0),
            (0, 6),
            (0, 7),
            (3, 5),
            (3, 1),
        ];
        for &(op, v) in script {
            match op {
                0 => {
                    q.push_back(v);
                    model.push_back(v);
                }
                1 => assert_eq!(q.pop_front(), model.pop_front()),
                2 => assert_eq!(q.front(), model.front()),
                _ => assert_eq!(q.remove(v as usize), model.remove(v as usize)),
            }
            assert_eq!(q.len(), model.len());
            assert!(q.iter().eq(model.iter()));
            assert!(q.iter().rev().eq(model.iter().rev()));
            assert_eq!(q.iter().len(), model.len());
        }
        assert!(
            matches!(q, FewDeque::Many(_)),
            "a second item moved it out of place"
        );
        let mut one: FewDeque<u32> = FewDeque::default();
        one.push_back(1);
        assert!(matches!(one, FewDeque::One(Some(1))));
        assert_eq!(one.remove(1), None);
        assert_eq!(one.pop_front(), Some(1));
        assert!(one.is_empty() && matches!(one, FewDeque::One(None)));
    }

    #[test]
    fn behaves_as_a_vec() {
        let mut v: ThinVec<u64> = ThinVec::new();
        assert!(v.is_empty());
        assert_eq!(std::mem::size_of_val(&v), 8);
        for i in 0..10 {
            v.push(i);
        }
        assert_eq!(v.len(), 10);
        assert_eq!(v.remove(3), Some(3));
        assert_eq!(v.remove(99), None);
        v.retain(|&x| x % 2 == 0);
        assert_eq!(&v[..], &[0, 2, 4, 6, 8]);
        if let Some(last) = v.last_mut() {
            *last = 80;
        }
        assert_eq!(v.last(), Some(&80));
        v.clear();
        assert!(v.is_empty());
    }

    #[test]
    fn a_slot_holds_one_value_and_keeps_its_box() {
        let mut s: Slot<u64> = Slot::default();
        assert_eq!(s.take(), None);
        s.set(7);
        *s.as_mut().unwrap() += 1;
        assert_eq!(s.take(), Some(8));
        assert_eq!(s.take(), None);
        assert!(s.as_mut().is_none());
        let before = s.boxed.as_deref().map(std::ptr::from_ref);
        s.set(9);
        assert_eq!(
            s.boxed.as_deref().map(std::ptr::from_ref),
            before,
            "the box was reused"
        );
        assert_eq!(s.take(), Some(9));
        s.set(10);
        assert!(s.is_some() && s.get() == Some(10));
        s.clear();
        assert!(!s.is_some() && s.get().is_none());
        assert_eq!(std::mem::size_of_val(&s), 8);
    }

    #[test]
    fn an_optional_position_is_an_option() {
        let mut p = OptPos::default();
        assert_eq!(std::mem::size_of_val(&p), 8);
        assert_eq!(p.get(), None);
        p.set(Some(0));
        assert_eq!(p.get(), Some(0));
        p.set(Some(1 << 40));
        assert_eq!(p.take(), Some(1 << 40));
        assert_eq!((p.get(), p.take()), (None, None));
        p.set(Some(5));
        p.set(None);
        assert_eq!(p.get(), None);
    }
}
