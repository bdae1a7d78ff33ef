//! Per-flow containers that cost one pointer while unused: lists most flows never use (NAK
//! times, held acknowledgements, open gaps, resent PSNs) and a rarely held value (the (b)-rule
//! decision) would otherwise cost their full size in every one of hundreds of thousands of
//! flows. Both keep their allocation once made, so a flow that uses them often (a lossy one)
//! does not allocate per frame.

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

#[cfg(test)]
mod test {
    use super::*;

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
