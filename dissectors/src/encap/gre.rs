//! GRE (RFC 2784, RFC 2890), as mirror sessions use it (capture-formats.md §4.1): the flags
//! and version word, the protocol type, then the optional checksum/offset, key and sequence
//! words in that order.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); the optional words are read only when the flags and the checked length
// include them.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, Result};
use crate::visit::{Value, Visitor};

pub const BASE_LEN: usize = 4;
pub const FLAG_CHECKSUM: u16 = 0x8000;
pub const FLAG_ROUTING: u16 = 0x4000;
pub const FLAG_KEY: u16 = 0x2000;
pub const FLAG_SEQUENCE: u16 = 0x1000;

/// Protocol types after GRE.
pub mod proto {
    /// ERSPAN Type I (no S bit) and II.
    pub const ERSPAN_88BE: u16 = 0x88BE;
    /// ERSPAN Type III.
    pub const ERSPAN_22EB: u16 = 0x22EB;
    /// Transparent Ethernet bridging: an Ethernet frame without FCS.
    pub const TEB: u16 = 0x6558;
}

/// A read-only view of a GRE header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wrap after checking that the base header and every optional word it announces fit.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let h = Self::new_unchecked(buffer);
        error::need(Layer::Gre, BASE_LEN, h.b().len())?;
        error::need(Layer::Gre, h.header_len(), h.b().len())?;
        Ok(h)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn word(&self, at: usize) -> u32 {
        let b = &self.b()[at..at + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    #[must_use]
    pub fn flags_and_version(&self) -> u16 {
        u16::from_be_bytes([self.b()[0], self.b()[1]])
    }
    #[must_use]
    pub fn protocol(&self) -> u16 {
        u16::from_be_bytes([self.b()[2], self.b()[3]])
    }
    #[must_use]
    pub fn version(&self) -> u8 {
        (self.flags_and_version() & 7) as u8
    }
    #[must_use]
    pub fn has(&self, flag: u16) -> bool {
        self.flags_and_version() & flag != 0
    }

    /// Bytes of the header: 4, plus 4 for the checksum (or routing) word, the key and the
    /// sequence number each.
    #[must_use]
    pub fn header_len(&self) -> usize {
        let f = self.flags_and_version();
        BASE_LEN
            + 4 * usize::from(f & (FLAG_CHECKSUM | FLAG_ROUTING) != 0)
            + 4 * usize::from(f & FLAG_KEY != 0)
            + 4 * usize::from(f & FLAG_SEQUENCE != 0)
    }

    fn checksum_at(&self) -> Option<usize> {
        self.has(FLAG_CHECKSUM | FLAG_ROUTING)
            .then_some(BASE_LEN)
            .filter(|_| self.flags_and_version() & (FLAG_CHECKSUM | FLAG_ROUTING) != 0)
    }

    #[must_use]
    pub fn checksum(&self) -> Option<u16> {
        let at = self.checksum_at()?;
        Some(u16::from_be_bytes([self.b()[at], self.b()[at + 1]]))
    }
    #[must_use]
    pub fn key(&self) -> Option<u32> {
        self.has(FLAG_KEY)
            .then(|| self.word(BASE_LEN + 4 * usize::from(self.checksum_at().is_some())))
    }
    #[must_use]
    pub fn sequence(&self) -> Option<u32> {
        self.has(FLAG_SEQUENCE).then(|| {
            self.word(
                BASE_LEN
                    + 4 * usize::from(self.checksum_at().is_some())
                    + 4 * usize::from(self.has(FLAG_KEY)),
            )
        })
    }

    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let at = offset..offset + 2;
        v.field(
            "flags",
            "Flags and Version",
            Value::Hex(u64::from(self.flags_and_version()), 4),
            at,
        );
        v.field(
            "proto",
            "Protocol Type",
            Value::Hex(u64::from(self.protocol()), 4),
            offset + 2..offset + 4,
        );
        let opt = |v: &mut dyn FnMut(&'static str, &'static str, Option<u64>)| {
            v("checksum", "Checksum", self.checksum().map(u64::from));
            v("key", "Key", self.key().map(u64::from));
            v("seq", "Sequence Number", self.sequence().map(u64::from));
        };
        let mut at = offset + BASE_LEN;
        opt(&mut |key, label, value| {
            if let Some(x) = value {
                v.field(key, label, Value::Hex(x, 8), at..at + 4);
                at += 4;
            }
        });
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.b().len() < BASE_LEN {
            return f.write_str("GRE (truncated)");
        }
        write!(f, "GRE proto={:#06x}", self.protocol())?;
        if let Some(k) = self.key().filter(|_| self.b().len() >= self.header_len()) {
            write!(f, " key={k:#x}")?;
        }
        Ok(())
    }
}

/// Write a GRE header with the given optional words into `buf` (which holds at least the
/// header's length); returns that length.
pub fn emit(buf: &mut [u8], protocol: u16, key: Option<u32>, sequence: Option<u32>) -> usize {
    let mut flags = 0u16;
    if key.is_some() {
        flags |= FLAG_KEY;
    }
    if sequence.is_some() {
        flags |= FLAG_SEQUENCE;
    }
    buf[0..2].copy_from_slice(&flags.to_be_bytes());
    buf[2..4].copy_from_slice(&protocol.to_be_bytes());
    let mut at = BASE_LEN;
    for w in [key, sequence].into_iter().flatten() {
        buf[at..at + 4].copy_from_slice(&w.to_be_bytes());
        at += 4;
    }
    at
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn optional_words() {
        let mut b = [0u8; 16];
        let n = emit(&mut b, proto::ERSPAN_88BE, Some(7), Some(9));
        assert_eq!(n, 12);
        let h = Header::new_checked(&b[..n]).unwrap();
        assert_eq!(
            (h.protocol(), h.key(), h.sequence(), h.checksum()),
            (0x88BE, Some(7), Some(9), None)
        );
        // checksum + key + sequence: 16 bytes, key after the checksum word
        b[0] = 0xB0;
        b[4..8].copy_from_slice(&[0xAB, 0xCD, 0, 0]);
        b[8..12].copy_from_slice(&7u32.to_be_bytes());
        b[12..16].copy_from_slice(&9u32.to_be_bytes());
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.header_len(), 16);
        assert_eq!(
            (h.checksum(), h.key(), h.sequence()),
            (Some(0xABCD), Some(7), Some(9))
        );
        assert!(Header::new_checked(&b[..15]).is_err());
    }
}
