//! A vector that costs one pointer while empty: per-flow lists that most flows never use
//! (NAK times, held acknowledgements, open gaps, resent PSNs) would otherwise cost 24 bytes each
//! in every one of hundreds of thousands of flows.

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
}
