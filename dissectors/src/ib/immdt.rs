//! Immediate Data extended transport header (IBTA vol. 1 §9.3.3; protocol.md §2.2), 4 bytes.
//!
//! The immediate data is opaque to the transport (rxe copies it as a `__be32`
//! without swapping). This module reads it big-endian and keeps that as the
//! `u32` value, so `0x12 0x34 0xab 0xcd` on the wire is `0x1234abcd`, and
//! writes it back the same way; the wire bytes round-trip unchanged.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// Immediate Data (32)
    pub const IMM_DATA: Field = 0..4;
}

pub const HEADER_LEN: usize = field::IMM_DATA.end;

/// A read/write view of an ImmDt.
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
        error::need(Layer::ImmDt, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Immediate Data, read big-endian.
    #[must_use]
    pub fn imm_data(&self) -> u32 {
        let b = &self.b()[field::IMM_DATA];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header as one field of the field tree (it carries a single value).
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let imm = Value::Hex(u64::from(self.imm_data()), 8);
        v.field(
            "immdt",
            "Immediate Data",
            imm,
            span(offset, field::IMM_DATA),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Written big-endian.
    pub fn set_imm_data(&mut self, value: u32) {
        self.b_mut()[field::IMM_DATA].copy_from_slice(&value.to_be_bytes());
    }
}

/// The ImmDt's meaning (it has no reserved bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub imm_data: u32,
}

impl Repr {
    /// Every ImmDt is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            imm_data: header.imm_data(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_imm_data(self.imm_data);
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
        write!(f, "ImmDt {:#010x}", self.imm_data)
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "ImmDt ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built ImmDt header.
    static BYTES: [u8; 4] = [
        0x12, 0x34, 0xab, 0xcd, // Immediate Data 0x1234abcd
    ];

    fn repr() -> Repr {
        Repr {
            imm_data: 0x1234_abcd,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.imm_data(), 0x1234_abcd);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_imm_data(0x1234_abcd);
        assert_eq!(h.into_inner(), &BYTES[..]);
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
        let err = Header::new_checked(&BYTES[..3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated ImmDt at offset 0: need 4 bytes, have 3"
        );
        assert!(parse(&BYTES[..3]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "ImmDt 0x1234abcd");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_immdt(repr in crate::strategy::immdt()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_immdt_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
