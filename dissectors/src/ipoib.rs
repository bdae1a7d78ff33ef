//! IP over InfiniBand (RFC 4391): the 4-byte IPoIB header (an EtherType and 16 reserved
//! bits) before the IPv4, IPv6 or ARP packet. Link type 242 puts a 40-byte pseudo header in
//! front (a GRH, or, when its first 16 bits are zero, the destination QPN and GID at bytes
//! 20–39; capture-formats.md §5); on the wire it is the payload of a UD SEND.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::ops::Range;

use crate::error::{self, Layer, Result};
use crate::ethernet::EtherType;
use crate::visit::{Value, Visitor};

/// The IPoIB header.
pub const HEADER_LEN: usize = 4;
/// Link type 242's pseudo header before it.
pub const PSEUDO_LEN: usize = 40;

/// A view of the IPoIB header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a>(&'a [u8]);

impl<'a> Header<'a> {
    /// # Errors
    /// `Truncated` when fewer than [`HEADER_LEN`] bytes are there.
    pub fn new_checked(b: &'a [u8]) -> Result<Header<'a>> {
        error::need(Layer::Ipoib, HEADER_LEN, b.len())?;
        Ok(Header(&b[..HEADER_LEN]))
    }

    /// The IPoIB header at the start of a UD SEND's payload, when it looks like one: IPv4,
    /// IPv6 or ARP, reserved bits zero (the heuristic tshark applies to UD payloads).
    #[must_use]
    pub fn in_payload(payload: &'a [u8]) -> Option<Header<'a>> {
        let h = Self::new_checked(payload).ok()?;
        let known = matches!(
            h.ethertype(),
            EtherType::IPV4 | EtherType::IPV6 | EtherType::ARP
        );
        (known && h.reserved() == 0).then_some(h)
    }

    #[must_use]
    pub fn ethertype(&self) -> EtherType {
        EtherType(u16::from_be_bytes([self.0[0], self.0[1]]))
    }

    #[must_use]
    pub fn reserved(&self) -> u16 {
        u16::from_be_bytes([self.0[2], self.0[3]])
    }

    /// The `ipoib` layer of the field tree; `range` is where the header sits in the frame.
    pub fn visit(&self, range: Range<usize>, v: &mut impl Visitor) {
        let o = range.start;
        v.begin("ipoib", "IP over InfiniBand", range);
        let t = Value::Hex(u64::from(self.ethertype().0), 4);
        v.field("type", "Type", t, o..o + 2);
        v.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header() {
        let h = Header::new_checked(&[0x08, 0x06, 0, 0, 1]).unwrap();
        assert_eq!(h.ethertype(), EtherType::ARP);
        assert!(Header::in_payload(&[0x08, 0x00, 0, 0]).is_some());
        assert!(Header::in_payload(&[0x08, 0x00, 0, 1]).is_none());
        assert!(Header::in_payload(&[0x12, 0x34, 0, 0]).is_none());
        assert!(Header::new_checked(&[8, 0, 0]).is_err());
    }
}
