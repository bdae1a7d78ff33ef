//! XRC Extended Transport Header (IBTA vol. 1 Annex A14; protocol.md §2.2), 4 bytes.
//!
//! Straight after the BTH in XRC requests. The 24-bit XRC SRQ number is kept as
//! a `u32` in 0..=0x00FF_FFFF rather than a [`Qpn`](crate::ib::psn::Qpn): it names
//! a shared receive queue, not a queue pair.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// Reserved (8), transmitted as 0
    pub const RESERVED: usize = 0;
    /// XRC SRQ number (24)
    pub const XRC_SRQN: Field = 1..4;
}

pub const HEADER_LEN: usize = field::XRC_SRQN.end;

/// Largest value of the 24-bit XRC SRQ number.
pub const XRC_SRQN_MAX: u32 = 0x00FF_FFFF;

/// A read/write view of an XRCETH.
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
        error::need(Layer::XrcEth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The reserved first byte (transmitted as 0).
    #[must_use]
    pub fn reserved(&self) -> u8 {
        self.b()[field::RESERVED]
    }
    /// XRC SRQ number, xrceth.rs1.
    #[must_use]
    pub fn xrc_srqn(&self) -> u32 {
        let b = &self.b()[field::XRC_SRQN];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let srqn = Value::Hex(u64::from(self.xrc_srqn()), 6);
        v.field(
            "srqn",
            "XRC SRQ Number",
            srqn,
            span(offset, field::XRC_SRQN),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Keeps the low 24 bits of `value`; the reserved byte is left as it was.
    pub fn set_xrc_srqn(&mut self, value: u32) {
        let b = (value & XRC_SRQN_MAX).to_be_bytes();
        self.b_mut()[field::XRC_SRQN].copy_from_slice(&b[1..]);
    }
}

/// The XRCETH's meaning, without the reserved byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    /// XRC SRQ number, xrceth.rs1 (0..=`XRC_SRQN_MAX`; `emit` keeps the low 24 bits).
    pub xrc_srqn: u32,
}

impl Repr {
    /// Every XRCETH is representable; the reserved byte is dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            xrc_srqn: header.xrc_srqn(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field, reserved byte zero. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.b_mut()[field::RESERVED] = 0;
        header.set_xrc_srqn(self.xrc_srqn);
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
        write!(f, "XRCETH srqn={:#08x}", self.xrc_srqn)
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "XRCETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built XRCETH (layout of protocol.md §2.2).
    static BYTES: [u8; 4] = [
        0x00, // reserved
        0x12, 0x34, 0x56, // XRC SRQ number 0x123456
    ];

    fn repr() -> Repr {
        Repr {
            xrc_srqn: 0x12_3456,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.reserved(), 0);
        assert_eq!(h.xrc_srqn(), 0x12_3456);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_xrc_srqn(0xFF12_3456); // masked to 24 bits
        assert_eq!(h.reserved(), 0xAA); // reserved byte kept
        assert_eq!(h.xrc_srqn(), 0x12_3456);
        assert_eq!(buf, [0xAA, 0x12, 0x34, 0x56]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
        // the reserved byte is not part of the Repr
        let odd = [0xFFu8, 0x12, 0x34, 0x56];
        assert_eq!(Repr::parse(&Header::new_unchecked(&odd[..])), Ok(repr()));
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
        let err = Header::new_checked(&BYTES[..2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated XRCETH at offset 0: need 4 bytes, have 2"
        );
        assert!(parse(&BYTES[..3]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "XRCETH srqn=0x123456");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_xrceth(repr in crate::strategy::xrceth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_xrceth_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            bytes[field::RESERVED] = 0; // canonical: reserved byte zero
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
