//! Atomic Acknowledge Extended Transport Header (IBTA vol. 1 §9.3.3; protocol.md §2.2), 8 bytes.
//!
//! Follows the AETH in an ATOMIC_ACKNOWLEDGE and carries the remote value as it
//! was before the atomic operation.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// Original Remote Data (64)
    pub const ORIG_REMOTE_DATA: Field = 0..8;
}

pub const HEADER_LEN: usize = field::ORIG_REMOTE_DATA.end;

/// A read/write view of an AtomicAckETH.
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
        error::need(Layer::AtomicAckEth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The remote 64-bit value before the atomic operation.
    #[must_use]
    pub fn orig_remote_data(&self) -> u64 {
        let b = &self.b()[field::ORIG_REMOTE_DATA];
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let orig = Value::Hex(self.orig_remote_data(), 16);
        let at = span(offset, field::ORIG_REMOTE_DATA);
        v.field("orig", "Original Remote Data", orig, at);
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_orig_remote_data(&mut self, value: u64) {
        self.b_mut()[field::ORIG_REMOTE_DATA].copy_from_slice(&value.to_be_bytes());
    }
}

/// The AtomicAckETH's meaning (it has no reserved bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub orig_remote_data: u64,
}

impl Repr {
    /// Every AtomicAckETH is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            orig_remote_data: header.orig_remote_data(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_orig_remote_data(self.orig_remote_data);
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
        write!(f, "AtomicAckETH orig={:#x}", self.orig_remote_data)
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "AtomicAckETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built AtomicAckETH.
    static BYTES: [u8; 8] = [
        0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x2a, // Original Remote Data
    ];

    fn repr() -> Repr {
        Repr {
            orig_remote_data: 0xdead_beef_0000_002a,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.orig_remote_data(), 0xdead_beef_0000_002a);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 8];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_orig_remote_data(0xdead_beef_0000_002a);
        assert_eq!(h.into_inner(), &BYTES[..]);
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
        let err = Header::new_checked(&BYTES[..7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated AtomicAckETH at offset 0: need 8 bytes, have 7"
        );
        assert!(parse(&BYTES[..7]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "AtomicAckETH orig=0xdeadbeef0000002a");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_atomic_ack_eth(repr in crate::strategy::atomic_ack_eth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_atomic_ack_eth_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
