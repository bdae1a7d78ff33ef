//! Atomic Extended Transport Header (IBTA vol. 1 §9.3.3; protocol.md §2.2), 28 bytes.
//!
//! Carried by COMPARE_SWAP and FETCH_ADD. The header is packed, so the 64-bit
//! fields after the R_Key are not naturally aligned. For COMPARE_SWAP the swap
//! value is in `swap_add` and the compare value in `compare`; for FETCH_ADD the
//! add value is in `swap_add` and `compare` is unused.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// Virtual Address (64)
    pub const VA: Field = 0..8;
    /// R_Key (32)
    pub const RKEY: Field = 8..12;
    /// Swap (COMPARE_SWAP) or Add (FETCH_ADD) Data (64)
    pub const SWAP_ADD: Field = 12..20;
    /// Compare Data (64)
    pub const COMPARE: Field = 20..28;
}

pub const HEADER_LEN: usize = field::COMPARE.end;

/// A read/write view of an AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
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
        error::need(Layer::AtomicEth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[must_use]
    pub fn va(&self) -> u64 {
        be64(&self.b()[field::VA])
    }
    #[must_use]
    pub fn rkey(&self) -> u32 {
        let b = &self.b()[field::RKEY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// Swap Data (COMPARE_SWAP) or Add Data (FETCH_ADD).
    #[must_use]
    pub fn swap_add(&self) -> u64 {
        be64(&self.b()[field::SWAP_ADD])
    }
    /// Compare Data (COMPARE_SWAP; unused by FETCH_ADD).
    #[must_use]
    pub fn compare(&self) -> u64 {
        be64(&self.b()[field::COMPARE])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        v.field(
            "va",
            "Virtual Address",
            Value::Hex(self.va(), 16),
            span(offset, field::VA),
        );
        let rkey = Value::Hex(u64::from(self.rkey()), 8);
        v.field("rkey", "Remote Key", rkey, span(offset, field::RKEY));
        let swap = Value::Hex(self.swap_add(), 16);
        v.field(
            "swap_add",
            "Swap (or Add) Data",
            swap,
            span(offset, field::SWAP_ADD),
        );
        let cmp = Value::Hex(self.compare(), 16);
        v.field("compare", "Compare Data", cmp, span(offset, field::COMPARE));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_va(&mut self, value: u64) {
        self.b_mut()[field::VA].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_rkey(&mut self, value: u32) {
        self.b_mut()[field::RKEY].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_swap_add(&mut self, value: u64) {
        self.b_mut()[field::SWAP_ADD].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_compare(&mut self, value: u64) {
        self.b_mut()[field::COMPARE].copy_from_slice(&value.to_be_bytes());
    }
}

/// The AtomicETH's meaning (it has no reserved bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl Repr {
    /// Every AtomicETH is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            va: header.va(),
            rkey: header.rkey(),
            swap_add: header.swap_add(),
            compare: header.compare(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_va(self.va);
        header.set_rkey(self.rkey);
        header.set_swap_add(self.swap_add);
        header.set_compare(self.compare);
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
            "AtomicETH va={:#x} rkey={:#010x} swap_add={:#x} compare={:#x}",
            self.va, self.rkey, self.swap_add, self.compare
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "AtomicETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built COMPARE_SWAP AtomicETH (layout of protocol.md §2.2).
    static BYTES: [u8; 28] = [
        0x00, 0x00, 0x7f, 0xee, 0x26, 0x0f, 0xb0, 0x08, // VA 0x7fee260fb008
        0x00, 0x00, 0x02, 0xb8, // R_Key 0x000002b8
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Swap Data
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Compare Data
    ];

    fn repr() -> Repr {
        Repr {
            va: 0x7fee_260f_b008,
            rkey: 0x2b8,
            swap_add: 0x0102_0304_0506_0708,
            compare: 0x1112_1314_1516_1718,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.va(), 0x7fee_260f_b008);
        assert_eq!(h.rkey(), 0x2b8);
        assert_eq!(h.swap_add(), 0x0102_0304_0506_0708);
        assert_eq!(h.compare(), 0x1112_1314_1516_1718);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 28];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_va(0x7fee_260f_b008);
        h.set_rkey(0x2b8);
        h.set_swap_add(0x0102_0304_0506_0708);
        h.set_compare(0x1112_1314_1516_1718);
        assert_eq!(h.into_inner(), &BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 28];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 28);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..27]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated AtomicETH at offset 0: need 28 bytes, have 27"
        );
        assert!(parse(&BYTES[..20]).is_err());
        let (rest, _) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "AtomicETH va=0x7fee260fb008 rkey=0x000002b8 swap_add=0x102030405060708 compare=0x1112131415161718"
        );
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_atomic_eth(repr in crate::strategy::atomic_eth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_atomic_eth_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
