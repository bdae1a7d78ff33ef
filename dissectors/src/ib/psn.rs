//! 24-bit packet sequence numbers and queue-pair numbers.

use core::fmt;

const MASK: u32 = 0x00FF_FFFF;
const HALF: i32 = 0x0080_0000;

/// A 24-bit packet sequence number with serial arithmetic modulo 2^24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Psn(u32);

impl Psn {
    pub const MAX: Psn = Psn(MASK);

    /// `None` when `value` does not fit in 24 bits.
    #[must_use]
    pub const fn try_new(value: u32) -> Option<Psn> {
        if value & !MASK == 0 {
            Some(Psn(value))
        } else {
            None
        }
    }

    /// Keep the low 24 bits.
    #[must_use]
    pub const fn new_masked(value: u32) -> Psn {
        Psn(value & MASK)
    }

    #[must_use]
    pub const fn value(self) -> u32 {
        self.0
    }

    /// Read 3 big-endian bytes.
    #[must_use]
    pub const fn from_be_bytes24(b: [u8; 3]) -> Psn {
        Psn(u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    #[must_use]
    pub const fn to_be_bytes24(self) -> [u8; 3] {
        let b = self.0.to_be_bytes();
        [b[1], b[2], b[3]]
    }

    /// `self + n` modulo 2^24.
    #[must_use]
    pub const fn wrapping_add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & MASK)
    }

    /// `self - n` modulo 2^24.
    #[must_use]
    pub const fn wrapping_sub(self, n: u32) -> Psn {
        Psn(self.0.wrapping_sub(n) & MASK)
    }

    /// Signed serial distance `self - other` in [-2^23, 2^23 - 1]:
    /// positive when `self` comes after `other`.
    #[must_use]
    #[allow(clippy::cast_possible_wrap)] // a 24-bit value always fits in i32
    pub const fn distance(self, other: Psn) -> i32 {
        let d = (self.0.wrapping_sub(other.0) & MASK) as i32;
        if d >= HALF { d - 2 * HALF } else { d }
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 24-bit queue-pair number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Qpn(u32);

impl Qpn {
    /// QP1, the General Services Interface QP that carries CM MADs.
    pub const GSI: Qpn = Qpn(1);
    /// QP0, the Subnet Management Interface QP (SMPs).
    pub const SMI: Qpn = Qpn(0);

    #[must_use]
    pub const fn try_new(value: u32) -> Option<Qpn> {
        if value & !MASK == 0 {
            Some(Qpn(value))
        } else {
            None
        }
    }

    #[must_use]
    pub const fn new_masked(value: u32) -> Qpn {
        Qpn(value & MASK)
    }

    #[must_use]
    pub const fn value(self) -> u32 {
        self.0
    }

    #[must_use]
    pub const fn from_be_bytes24(b: [u8; 3]) -> Qpn {
        Qpn(u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    #[must_use]
    pub const fn to_be_bytes24(self) -> [u8; 3] {
        let b = self.0.to_be_bytes();
        [b[1], b[2], b[3]]
    }
}

impl fmt::Display for Qpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#08x}", self.0)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn test_distance_wraps() {
        let a = Psn::new_masked(2);
        let b = Psn::MAX; // 2^24 - 1
        assert_eq!(a.distance(b), 3);
        assert_eq!(b.distance(a), -3);
        assert_eq!(Psn::MAX.wrapping_add(1), Psn::new_masked(0));
        assert_eq!(Psn::new_masked(0).wrapping_sub(1), Psn::MAX);
    }

    #[test]
    fn test_distance_half_range() {
        // rxe's psn_compare: exactly 2^23 apart reads as "before".
        let a = Psn::new_masked(0x80_0000);
        assert_eq!(a.distance(Psn::new_masked(0)), -0x80_0000);
        assert_eq!(
            Psn::new_masked(0x7F_FFFF).distance(Psn::new_masked(0)),
            0x7F_FFFF
        );
    }

    #[test]
    fn test_try_new() {
        assert_eq!(Psn::try_new(0x100_0000), None);
        assert_eq!(Qpn::try_new(0xFF_FFFF).map(Qpn::value), Some(0xFF_FFFF));
        assert_eq!(Qpn::new_masked(0x11).to_string(), "0x000011");
    }

    proptest! {
        #[test]
        fn roundtrip_distance(a in 0u32..=MASK, n in 0u32..0x80_0000) {
            let p = Psn::new_masked(a);
            prop_assert_eq!(p.wrapping_add(n).distance(p), i32::try_from(n).unwrap());
            prop_assert_eq!(p.wrapping_add(n).wrapping_sub(n), p);
        }

        #[test]
        fn roundtrip_bytes(a in 0u32..=MASK) {
            let p = Psn::new_masked(a);
            prop_assert_eq!(Psn::from_be_bytes24(p.to_be_bytes24()), p);
        }
    }
}
