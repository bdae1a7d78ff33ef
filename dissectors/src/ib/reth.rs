//! RDMA Extended Transport Header (IBTA vol. 1 §9.3.3; protocol.md §2.2), 16 bytes.
//!
//! Carried by RDMA WRITE First/Only, RDMA READ Request, FLUSH and ATOMIC WRITE.

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
    /// DMA Length (32)
    pub const DMA_LEN: Field = 12..16;
}

pub const HEADER_LEN: usize = field::DMA_LEN.end;

/// A read/write view of a RETH.
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
        error::need(Layer::Reth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Virtual Address of the remote buffer.
    #[must_use]
    pub fn va(&self) -> u64 {
        let b = &self.b()[field::VA];
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    /// R_Key of the remote memory region.
    #[must_use]
    pub fn rkey(&self) -> u32 {
        let b = &self.b()[field::RKEY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// DMA Length in bytes.
    #[must_use]
    pub fn dma_len(&self) -> u32 {
        let b = &self.b()[field::DMA_LEN];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
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
        let len = Value::Uint(u64::from(self.dma_len()));
        v.field("dmalen", "DMA Length", len, span(offset, field::DMA_LEN));
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
    pub fn set_dma_len(&mut self, value: u32) {
        self.b_mut()[field::DMA_LEN].copy_from_slice(&value.to_be_bytes());
    }
}

/// The RETH's meaning (it has no reserved bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl Repr {
    /// Every RETH is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            va: header.va(),
            rkey: header.rkey(),
            dma_len: header.dma_len(),
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
        header.set_dma_len(self.dma_len);
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
            "RETH va={:#x} rkey={:#010x} dmalen={}",
            self.va, self.rkey, self.dma_len
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "RETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// RETH of the RC RDMA READ request in captures/real/softroce-read-request.pcap
    /// (frame offset 0x36; tshark: VA 0x7fee260fb000, R_Key 0x2b8, DMA length 65536).
    static BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0xee, 0x26, 0x0f, 0xb0, 0x00, // VA 0x00007fee260fb000
        0x00, 0x00, 0x02, 0xb8, // R_Key 0x000002b8
        0x00, 0x01, 0x00, 0x00, // DMA Length 65536
    ];

    fn repr() -> Repr {
        Repr {
            va: 0x7fee_260f_b000,
            rkey: 0x2b8,
            dma_len: 65_536,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.va(), 0x7fee_260f_b000);
        assert_eq!(h.rkey(), 0x2b8);
        assert_eq!(h.dma_len(), 65_536);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 16];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_va(0x7fee_260f_b000);
        h.set_rkey(0x2b8);
        h.set_dma_len(65_536);
        assert_eq!(h.into_inner(), &BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 16];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 16);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..15]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated RETH at offset 0: need 16 bytes, have 15"
        );
        let err = parse(&BYTES[..3]).unwrap_err();
        assert!(matches!(err, nom::Err::Error(e) if e.remaining == 3));
        let (rest, h) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.rkey(), 0x2b8);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "RETH va=0x7fee260fb000 rkey=0x000002b8 dmalen=65536"
        );
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
        assert_eq!(
            Header::new_unchecked(&BYTES[..4]).to_string(),
            "RETH (truncated RETH at offset 0: need 16 bytes, have 4)"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_reth(repr in crate::strategy::reth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_reth_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
