//! Endace ERF records as `LINKTYPE_ERF` (197) carries them (capture-formats.md §2.1): the
//! 16-byte record header, optional 8-byte extension headers, a type-specific subheader, then
//! the packet. ibdump writes native InfiniBand this way (type 21, no subheader).
//!
//! The record length `rlen` is not reliable (capture-formats.md §2.1: one real file has
//! `rlen = wlen + 22` with a 16 + wlen record), so the packet is bounded by `wlen` and by the
//! bytes captured, never by `rlen`.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); extension headers are read only inside the record's checked length.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    /// Little-endian: seconds in the high 32 bits, a binary fraction in the low 32
    pub const TS: Field = 0..8;
    /// bit 7: an extension header follows; bits 6..0: the record type
    pub const TYPE: usize = 8;
    pub const FLAGS: usize = 9;
    pub const RLEN: Field = 10..12;
    /// Loss counter (a colour for the COLOR types)
    pub const LCTR: Field = 12..14;
    pub const WLEN: Field = 14..16;
}

pub const HEADER_LEN: usize = field::WLEN.end;
/// Bytes of one extension header.
pub const EXT_LEN: usize = 8;
/// Extension headers followed at most (each says whether another follows).
pub const MAX_EXT: usize = 8;

/// Record types this crate starts a dissection on (erf_record.h).
pub mod types {
    pub const ETH: u8 = 2;
    pub const COLOR_ETH: u8 = 11;
    pub const DSM_COLOR_ETH: u8 = 16;
    pub const COLOR_HASH_ETH: u8 = 20;
    pub const INFINIBAND: u8 = 21;
    pub const IPV4: u8 = 22;
    pub const IPV6: u8 = 23;
    pub const INFINIBAND_LINK: u8 = 25;
}

/// What the packet after the ERF headers is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// Ethernet, after a 2-byte {offset, pad} subheader.
    Ethernet,
    /// A native InfiniBand packet starting at the LRH.
    Infiniband,
    /// An InfiniBand link packet (flow control).
    InfinibandLink,
    Ipv4,
    Ipv6,
    /// A type this crate does not decode.
    Other(u8),
}

impl Payload {
    #[must_use]
    pub const fn of_type(t: u8) -> Payload {
        match t {
            types::ETH | types::COLOR_ETH | types::DSM_COLOR_ETH | types::COLOR_HASH_ETH => {
                Payload::Ethernet
            }
            types::INFINIBAND => Payload::Infiniband,
            types::INFINIBAND_LINK => Payload::InfinibandLink,
            types::IPV4 => Payload::Ipv4,
            types::IPV6 => Payload::Ipv6,
            other => Payload::Other(other),
        }
    }

    /// Bytes of the type-specific subheader before the packet.
    #[must_use]
    pub const fn subheader_len(self) -> usize {
        match self {
            Payload::Ethernet => 2,
            _ => 0,
        }
    }
}

/// A read/write view of an ERF record header (and, for reading, of what follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
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
        error::need(Layer::Erf, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The raw 64-bit timestamp (seconds << 32 | binary fraction).
    #[must_use]
    pub fn timestamp(&self) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.b()[field::TS]);
        u64::from_le_bytes(w)
    }
    /// The timestamp in nanoseconds since the Unix epoch.
    #[must_use]
    pub fn time_ns(&self) -> u64 {
        let ts = self.timestamp();
        let frac = (u128::from(ts & 0xFFFF_FFFF) * 1_000_000_000) >> 32;
        (ts >> 32) * 1_000_000_000 + u64::try_from(frac).unwrap_or(0)
    }
    /// The record type (bits 6..0).
    #[must_use]
    pub fn record_type(&self) -> u8 {
        self.b()[field::TYPE] & 0x7F
    }
    /// Whether an extension header follows the record header.
    #[must_use]
    pub fn has_ext(&self) -> bool {
        self.b()[field::TYPE] & 0x80 != 0
    }
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }
    /// Capture interface (flags bits 1..0).
    #[must_use]
    pub fn interface(&self) -> u8 {
        self.flags() & 0x03
    }
    /// The record length as written (unreliable: see the module docs).
    #[must_use]
    pub fn rlen(&self) -> u16 {
        be16(&self.b()[field::RLEN])
    }
    #[must_use]
    pub fn lctr(&self) -> u16 {
        be16(&self.b()[field::LCTR])
    }
    /// The packet's length on the wire.
    #[must_use]
    pub fn wlen(&self) -> u16 {
        be16(&self.b()[field::WLEN])
    }

    #[must_use]
    pub fn payload_kind(&self) -> Payload {
        Payload::of_type(self.record_type())
    }

    /// Bytes of the record header and its extension headers, when they all fit in the buffer
    /// (and there are at most [`MAX_EXT`]); `None` otherwise.
    #[must_use]
    pub fn headers_len(&self) -> Option<usize> {
        let b = self.b();
        let mut at = HEADER_LEN;
        let mut more = self.has_ext();
        let mut n = 0;
        while more {
            if n == MAX_EXT {
                return None;
            }
            let ext = b.get(at..at + EXT_LEN)?;
            more = ext[0] & 0x80 != 0;
            at += EXT_LEN;
            n += 1;
        }
        Some(at)
    }

    /// The extension headers' types, in order (at most [`MAX_EXT`]).
    pub fn ext_types(&self) -> impl Iterator<Item = u8> + '_ {
        let end = self.headers_len().unwrap_or(HEADER_LEN);
        self.b()
            .get(HEADER_LEN..end)
            .unwrap_or_default()
            .chunks_exact(EXT_LEN)
            .map(|e| e[0] & 0x7F)
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree (tshark's `erf.*`).
    /// (The timestamp is the frame's time; the flags' bits are `erf.flags`.)
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let _ = field::TS;
        let at = byte(offset, field::TYPE);
        v.field(
            "type",
            "Type",
            Value::Uint(u64::from(self.record_type())),
            at,
        );
        let at = byte(offset, field::FLAGS);
        v.field("flags", "Flags", Value::Hex(u64::from(self.flags()), 2), at);
        let rlen = Value::Uint(u64::from(self.rlen()));
        v.field("rlen", "Record length", rlen, span(offset, field::RLEN));
        let lctr = Value::Uint(u64::from(self.lctr()));
        v.field("lctr", "Loss counter", lctr, span(offset, field::LCTR));
        let wlen = Value::Uint(u64::from(self.wlen()));
        v.field("wlen", "Wire length", wlen, span(offset, field::WLEN));
        let end = self.headers_len().unwrap_or(HEADER_LEN);
        v.begin_list(
            "ext",
            "Extension headers",
            offset + HEADER_LEN..offset + end,
        );
        for (i, t) in self.ext_types().enumerate() {
            let o = offset + HEADER_LEN + i * EXT_LEN;
            v.field(
                "",
                "Extension header type",
                Value::Uint(u64::from(t)),
                o..o + EXT_LEN,
            );
        }
        v.end_list();
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_timestamp(&mut self, value: u64) {
        self.b_mut()[field::TS].copy_from_slice(&value.to_le_bytes());
    }
    /// Set from nanoseconds since the epoch (the fraction rounded down to 2^-32 s).
    pub fn set_time_ns(&mut self, ns: u64) {
        let secs = ns / 1_000_000_000;
        let frac = (u128::from(ns % 1_000_000_000) << 32).div_ceil(1_000_000_000);
        self.set_timestamp((secs << 32) | u64::try_from(frac).unwrap_or(0));
    }
    /// Type and the extension-present bit.
    pub fn set_type(&mut self, record_type: u8, ext: bool) {
        self.b_mut()[field::TYPE] = (record_type & 0x7F) | if ext { 0x80 } else { 0 };
    }
    pub fn set_flags(&mut self, value: u8) {
        self.b_mut()[field::FLAGS] = value;
    }
    pub fn set_rlen(&mut self, value: u16) {
        self.b_mut()[field::RLEN].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_lctr(&mut self, value: u16) {
        self.b_mut()[field::LCTR].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_wlen(&mut self, value: u16) {
        self.b_mut()[field::WLEN].copy_from_slice(&value.to_be_bytes());
    }
}

/// The record header's meaning (no extension headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub timestamp: u64,
    pub record_type: u8,
    pub flags: u8,
    pub rlen: u16,
    pub lctr: u16,
    pub wlen: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            timestamp: header.timestamp(),
            record_type: header.record_type(),
            flags: header.flags(),
            rlen: header.rlen(),
            lctr: header.lctr(),
            wlen: header.wlen(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field (no extension header follows).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_timestamp(self.timestamp);
        header.set_type(self.record_type, false);
        header.set_flags(self.flags);
        header.set_rlen(self.rlen);
        header.set_lctr(self.lctr);
        header.set_wlen(self.wlen);
    }
}

/// nom adapter, as for the other headers.
#[allow(dead_code, reason = "nom seam; stack.rs wraps the view directly")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERF type={} flags={:#04x} rlen={} wlen={}",
            self.record_type, self.flags, self.rlen, self.wlen
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "ERF ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// An ibdump record header: type 21, flags 4, no loss, a 30-byte packet.
    fn ibdump(wlen: u16, ext: bool) -> [u8; 16] {
        let mut b = [0u8; 16];
        let mut h = Header::new_unchecked(&mut b[..]);
        h.set_time_ns(1_700_000_000_123_456_789);
        h.set_type(types::INFINIBAND, ext);
        h.set_flags(4);
        h.set_rlen(16 + wlen);
        h.set_wlen(wlen);
        b
    }

    #[test]
    fn test_deconstruct() {
        let b = ibdump(30, false);
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.record_type(), 21);
        assert_eq!(h.payload_kind(), Payload::Infiniband);
        assert_eq!(
            (h.flags(), h.interface(), h.rlen(), h.wlen()),
            (4, 0, 46, 30)
        );
        assert_eq!(h.headers_len(), Some(16));
        // 2^-32 s resolution: within a nanosecond
        assert!(h.time_ns().abs_diff(1_700_000_000_123_456_789) <= 1);
    }

    #[test]
    fn extension_headers_chain() {
        let mut rec = ibdump(30, true).to_vec();
        rec.extend_from_slice(&[0x80 | 3, 0, 0, 0, 0, 0, 0, 0]); // classification, more
        rec.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 1]); // host ID, last
        let h = Header::new_checked(&rec[..]).unwrap();
        assert_eq!(h.headers_len(), Some(32));
        assert_eq!(h.ext_types().collect::<Vec<_>>(), [3, 17]);
        // a chain that runs past the buffer
        assert_eq!(Header::new_unchecked(&rec[..28]).headers_len(), None);
        // or never ends
        let mut endless = ibdump(30, true).to_vec();
        for _ in 0..=MAX_EXT {
            endless.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0]);
        }
        assert_eq!(Header::new_unchecked(&endless[..]).headers_len(), None);
    }
}
