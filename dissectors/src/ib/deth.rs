//! Datagram Extended Transport Header (IBTA vol. 1 §9.3.2; protocol.md §2.2), 8 bytes.
//!
//! Carried by every UD packet (after the BTH) and every RD request (after the
//! RDETH). The 24-bit source QP is a [`Qpn`].

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::ib::psn::Qpn;
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// Q_Key (32)
    pub const QKEY: Field = 0..4;
    /// Reserved (8), transmitted as 0
    pub const RESERVED: usize = 4;
    /// SrcQP (24)
    pub const SRC_QP: Field = 5..8;
}

pub const HEADER_LEN: usize = field::SRC_QP.end;

/// A read/write view of a DETH.
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
        error::need(Layer::Deth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Queue Key.
    #[must_use]
    pub fn qkey(&self) -> u32 {
        let b = &self.b()[field::QKEY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// The reserved byte between Q_Key and SrcQP (transmitted as 0).
    #[must_use]
    pub fn reserved(&self) -> u8 {
        self.b()[field::RESERVED]
    }
    /// Source QP number.
    #[must_use]
    pub fn src_qp(&self) -> Qpn {
        let b = &self.b()[field::SRC_QP];
        Qpn::from_be_bytes24([b[0], b[1], b[2]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let qkey = Value::Hex(u64::from(self.qkey()), 8);
        v.field("qkey", "Queue Key", qkey, span(offset, field::QKEY));
        let src = Value::Hex(u64::from(self.src_qp().value()), 6);
        v.field(
            "srcqp",
            "Source Queue Pair",
            src,
            span(offset, field::SRC_QP),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_qkey(&mut self, value: u32) {
        self.b_mut()[field::QKEY].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_src_qp(&mut self, value: Qpn) {
        self.b_mut()[field::SRC_QP].copy_from_slice(&value.to_be_bytes24());
    }
}

/// The DETH's meaning, without the reserved byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub qkey: u32,
    pub src_qp: Qpn,
}

impl Repr {
    /// Every DETH is representable; the reserved byte is dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            qkey: header.qkey(),
            src_qp: header.src_qp(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field, reserved byte zero. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.b_mut()[field::RESERVED] = 0;
        header.set_qkey(self.qkey);
        header.set_src_qp(self.src_qp);
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
        write!(f, "DETH qkey={:#010x} srcqp={}", self.qkey, self.src_qp)
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "DETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// DETH of the UD SEND ONLY CM ConnectRequest (frame 1) in
    /// captures/real/cm-send-write.pcap (tshark: Q_Key 0x80010000, SrcQP 1).
    static BYTES: [u8; 8] = [
        0x80, 0x01, 0x00, 0x00, // Q_Key 0x80010000 (the GSI well-known Q_Key)
        0x00, // reserved
        0x00, 0x00, 0x01, // SrcQP 1 (QP1, GSI)
    ];

    fn repr() -> Repr {
        Repr {
            qkey: 0x8001_0000,
            src_qp: Qpn::GSI,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.qkey(), 0x8001_0000);
        assert_eq!(h.reserved(), 0);
        assert_eq!(h.src_qp().value(), 1);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 8];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_qkey(0x8001_0000);
        h.set_src_qp(Qpn::new_masked(1));
        assert_eq!(h.reserved(), 0xAA); // reserved byte kept
        assert_eq!(buf, [0x80, 0x01, 0x00, 0x00, 0xAA, 0x00, 0x00, 0x01]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 8];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 8);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated DETH at offset 0: need 8 bytes, have 5"
        );
        assert!(parse(&BYTES[..7]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "DETH qkey=0x80010000 srcqp=0x000001");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_deth(repr in crate::strategy::deth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_deth_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            bytes[field::RESERVED] = 0; // canonical: reserved byte zero
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
