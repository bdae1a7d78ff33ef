//! FLUSH Extended Transport Header (IBTA vol. 1 §9.3.3 as extended for FLUSH;
//! protocol.md §2.2), 4 bytes.
//!
//! One big-endian 32-bit word: placement type in bits 3..0 (`FETH_PLT_MASK`
//! 0xF), selectivity level in bits 5..4 (`FETH_SEL_MASK` 0x30), every other bit
//! reserved. Comes before the RETH in a FLUSH request.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, byte};

mod field {
    use crate::field::Field;
    /// Reserved (26) | SelectivityLevel (5..4) | PlacementType (3..0), big-endian
    pub const WORD: Field = 0..4;
    /// The low byte: SelectivityLevel and PlacementType
    pub const PLT_SEL: usize = 3;
}

pub const HEADER_LEN: usize = field::WORD.end;

const PLT_MASK: u32 = 0x0000_000F;
const SEL_SHIFT: u32 = 4;
const SEL_MASK: u32 = 0x0000_0030;
const RESERVED_MASK: u32 = !(PLT_MASK | SEL_MASK);

/// A read/write view of a FETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wrap without checking the length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len); no accessor can panic afterwards.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    pub fn check_len(&self) -> Result<()> {
        error::need(Layer::Feth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn word(&self) -> u32 {
        let b = &self.b()[field::WORD];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Placement type, 0..=15 (bits 3..0).
    #[must_use]
    pub fn placement_type(&self) -> u8 {
        // masked to 4 bits, the cast cannot truncate
        (self.word() & PLT_MASK) as u8
    }
    /// Selectivity level, 0..=3 (bits 5..4).
    #[must_use]
    pub fn selectivity_level(&self) -> u8 {
        ((self.word() & SEL_MASK) >> SEL_SHIFT) as u8
    }
    /// The 26 reserved bits in place (bits 31..6; transmitted as 0).
    #[must_use]
    pub fn reserved(&self) -> u32 {
        self.word() & RESERVED_MASK
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let low = byte(offset, field::PLT_SEL);
        let plt = Value::Uint(u64::from(self.placement_type()));
        v.field("plt", "Placement Type", plt, low.clone());
        let sel = Value::Uint(u64::from(self.selectivity_level()));
        v.field("sel", "Selectivity Level", sel, low);
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_word(&mut self, value: u32) {
        self.b_mut()[field::WORD].copy_from_slice(&value.to_be_bytes());
    }

    /// Keeps the low 4 bits of `value` and every other bit of the word.
    pub fn set_placement_type(&mut self, value: u8) {
        let w = (self.word() & !PLT_MASK) | (u32::from(value) & PLT_MASK);
        self.set_word(w);
    }
    /// Keeps the low 2 bits of `value` and every other bit of the word.
    pub fn set_selectivity_level(&mut self, value: u8) {
        let w = (self.word() & !SEL_MASK) | ((u32::from(value) << SEL_SHIFT) & SEL_MASK);
        self.set_word(w);
    }
}

/// The FETH's meaning, without reserved bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    /// 0..=15
    pub placement_type: u8,
    /// 0..=3
    pub selectivity_level: u8,
}

impl Repr {
    /// Every FETH is representable; reserved bits are dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            placement_type: header.placement_type(),
            selectivity_level: header.selectivity_level(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field, reserved bits zero. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_word(0);
        header.set_placement_type(self.placement_type);
        header.set_selectivity_level(self.selectivity_level);
    }
}

/// nom adapter for composing this header with nom (as `bth::parse` is used by
/// `stack.rs`, which currently slices extension headers via the opcode table).
#[allow(dead_code, reason = "nom seam; stack.rs slices ETHs by opcode today")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FETH plt={} sel={}",
            self.placement_type, self.selectivity_level
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "FETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built FETH: selectivity level 1, placement type 2.
    static BYTES: [u8; 4] = [
        0x00, 0x00, 0x00, // reserved
        0x12, // reserved(7..6)=0 SEL=1 (5..4) PLT=2 (3..0)
    ];

    fn repr() -> Repr {
        Repr {
            placement_type: 2,
            selectivity_level: 1,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.placement_type(), 2);
        assert_eq!(h.selectivity_level(), 1);
        assert_eq!(h.reserved(), 0);
        let all = [0xFFu8; 4];
        let h = Header::new_unchecked(&all[..]);
        assert_eq!(h.placement_type(), 15);
        assert_eq!(h.selectivity_level(), 3);
        assert_eq!(h.reserved(), 0xFFFF_FFC0);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_placement_type(0xF2); // masked to 4 bits
        h.set_selectivity_level(0xFD); // masked to 2 bits
        assert_eq!(h.placement_type(), 2);
        assert_eq!(h.selectivity_level(), 1);
        // reserved bits 0xAAAAAA80 kept
        assert_eq!(buf, [0xAA, 0xAA, 0xAA, 0x92]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 4];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 4);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..1]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated FETH at offset 0: need 4 bytes, have 1"
        );
        assert!(parse(&BYTES[..3]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "FETH plt=2 sel=1");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_feth(repr in crate::strategy::feth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_feth_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            bytes[0] = 0; // canonical: reserved bits zero
            bytes[1] = 0;
            bytes[2] = 0;
            bytes[3] &= 0x3F;
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
