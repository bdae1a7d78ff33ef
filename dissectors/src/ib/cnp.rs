//! The body of a RoCEv2 Congestion Notification Packet (protocol.md §7.1), 16 bytes.
//!
//! A RoCEv2 CNP is a BTH with opcode 0x81 followed by 16 reserved bytes,
//! transmitted as zero (Scapy's `CNPPadding`), then the ICRC. This view exposes
//! those bytes so the analyzer can flag non-zero padding; the `Repr` carries no
//! fields and emits zeros.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};

mod field {
    use crate::field::Field;
    /// Reserved (128), transmitted as 0
    pub const RESERVED: Field = 0..16;
}

pub const HEADER_LEN: usize = field::RESERVED.end;

/// A read/write view of the 16 reserved bytes after a CNP's BTH.
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
        error::need(Layer::Cnp, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The 16 reserved bytes.
    #[must_use]
    pub fn reserved(&self) -> &[u8] {
        &self.b()[field::RESERVED]
    }

    /// `true` when every reserved byte is zero, as transmitted by a conforming sender.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.reserved().iter().all(|&b| b == 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Mutable access to the 16 reserved bytes (to build deliberately odd CNPs).
    pub fn reserved_mut(&mut self) -> &mut [u8] {
        &mut self.b_mut()[field::RESERVED]
    }
}

/// A CNP body's meaning: nothing but its presence. The reserved bytes are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr;

impl Repr {
    /// Every 16-byte CNP body is representable; non-zero reserved bytes are
    /// not an error here (see [`Header::is_zero`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr)
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write 16 zero bytes. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.reserved_mut().fill(0);
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
        f.write_str("CNP")
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) if self.is_zero() => write!(f, "{repr}"),
            Ok(repr) => write!(f, "{repr} (reserved bytes not zero)"),
            Err(err) => write!(f, "CNP ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// CNP body of protocol.md §7.1 (ConnectX-4 Lx capture, Scapy `CNPPadding`).
    static BYTES: [u8; 16] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved (first 64 bits)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved (second 64 bits)
    ];

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.reserved(), &[0u8; 16][..]);
        assert!(h.is_zero());
        let mut odd = BYTES;
        odd[15] = 1;
        assert!(!Header::new_unchecked(&odd[..]).is_zero());
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 16];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.reserved_mut()[0] = 0x55;
        assert_eq!(h.reserved()[0], 0x55);
        assert_eq!(h.reserved()[1], 0xAA);
        assert!(!h.is_zero());
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(Repr));
        let odd = [0xFFu8; 16];
        assert_eq!(Repr::parse(&Header::new_unchecked(&odd[..])), Ok(Repr));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 16];
        Repr.emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(Repr.header_len(), 16);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..12]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated CNP at offset 0: need 16 bytes, have 12"
        );
        assert!(parse(&BYTES[..15]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(Repr.to_string(), "CNP");
        assert_eq!(Header::new_unchecked(&BYTES[..]).to_string(), "CNP");
        let odd = [0x01u8; 16];
        assert_eq!(
            Header::new_unchecked(&odd[..]).to_string(),
            "CNP (reserved bytes not zero)"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_cnp(bytes in any::<[u8; HEADER_LEN]>()) {
            // any body parses to the one Repr, which emits the canonical zero body
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = bytes;
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, BYTES);
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&out[..])), Ok(Repr));
        }
    }
}
