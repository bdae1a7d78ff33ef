//! VXLAN (RFC 7348, UDP 4789) and Geneve (RFC 8926, UDP 6081) (capture-formats.md §4.4,
//! §4.5): an 8-byte header with a 24-bit VNI; Geneve adds options and names its payload by
//! EtherType.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use crate::error::{self, Layer, Result};
use crate::visit::{Value, Visitor};

pub const VXLAN_PORT: u16 = 4789;
pub const GENEVE_PORT: u16 = 6081;
pub const HEADER_LEN: usize = 8;

fn vni(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[4], b[5], b[6]])
}

/// A VXLAN header (the payload is always Ethernet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vxlan<'a>(&'a [u8]);

impl<'a> Vxlan<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Vxlan<'a>> {
        error::need(Layer::Vxlan, HEADER_LEN, b.len())?;
        Ok(Vxlan(&b[..HEADER_LEN]))
    }
    #[must_use]
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes([self.0[0], self.0[1]])
    }
    #[must_use]
    pub fn vni(&self) -> u32 {
        vni(self.0)
    }
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        v.field(
            "flags",
            "Flags",
            Value::Hex(u64::from(self.flags()), 4),
            offset..offset + 2,
        );
        v.field(
            "vni",
            "VXLAN Network Identifier",
            Value::Uint(u64::from(self.vni())),
            offset + 4..offset + 7,
        );
    }
}

/// Write a VXLAN header (I flag set).
pub fn emit_vxlan(buf: &mut [u8], vni: u32) -> usize {
    buf[..HEADER_LEN].fill(0);
    buf[0] = 0x08;
    buf[4..7].copy_from_slice(&vni.to_be_bytes()[1..4]);
    HEADER_LEN
}

/// A Geneve header and its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geneve<'a>(&'a [u8]);

impl<'a> Geneve<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Geneve<'a>> {
        error::need(Layer::Geneve, HEADER_LEN, b.len())?;
        let len = HEADER_LEN + usize::from(b[0] & 0x3F) * 4;
        error::need(Layer::Geneve, len, b.len())?;
        Ok(Geneve(&b[..len]))
    }
    /// Bytes of the header with its options.
    #[must_use]
    pub fn header_len(&self) -> usize {
        self.0.len()
    }
    #[must_use]
    pub fn version(&self) -> u8 {
        self.0[0] >> 6
    }
    /// The EtherType of the payload (0x6558: Ethernet).
    #[must_use]
    pub fn protocol(&self) -> u16 {
        u16::from_be_bytes([self.0[2], self.0[3]])
    }
    #[must_use]
    pub fn vni(&self) -> u32 {
        vni(self.0)
    }
    /// The options as (class, type, data), as far as they are well-formed.
    pub fn options(&self) -> impl Iterator<Item = (u16, u8, &'a [u8])> + '_ {
        let mut at = HEADER_LEN;
        let b = self.0;
        core::iter::from_fn(move || {
            let h = b.get(at..at + 4)?;
            let n = 4 + usize::from(h[3] & 0x1F) * 4;
            let data = b.get(at + 4..at + n)?;
            at += n;
            Some((u16::from_be_bytes([h[0], h[1]]), h[2], data))
        })
    }
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        v.field(
            "vni",
            "Virtual Network Identifier",
            Value::Uint(u64::from(self.vni())),
            offset + 4..offset + 7,
        );
        v.field(
            "proto",
            "Protocol Type",
            Value::Hex(u64::from(self.protocol()), 4),
            offset + 2..offset + 4,
        );
        v.begin_list(
            "options",
            "Options",
            offset + HEADER_LEN..offset + self.header_len(),
        );
        let mut at = offset + HEADER_LEN;
        for (class, kind, data) in self.options() {
            let len = data.len() + 4;
            v.begin("", "Option", at..at + len);
            v.field(
                "class",
                "Class",
                Value::Hex(u64::from(class), 4),
                at..at + 2,
            );
            v.field(
                "type",
                "Type",
                Value::Hex(u64::from(kind), 2),
                at + 2..at + 3,
            );
            v.field("length", "Length", Value::Uint(len as u64), at + 3..at + 4);
            v.end();
            at += len;
        }
        v.end_list();
    }
}

/// Write a Geneve header with one 4-byte-data option (class 0x0103, type 0x01) before an
/// Ethernet payload; returns its length.
pub fn emit_geneve(buf: &mut [u8], vni: u32) -> usize {
    buf[..16].fill(0);
    buf[0] = 2; // version 0, 8 bytes of options
    buf[2..4].copy_from_slice(&0x6558u16.to_be_bytes());
    buf[4..7].copy_from_slice(&vni.to_be_bytes()[1..4]);
    buf[8..10].copy_from_slice(&0x0103u16.to_be_bytes());
    buf[10] = 0x01;
    buf[11] = 1; // one 4-byte word of data
    buf[12..16].copy_from_slice(&0x0000_00AAu32.to_be_bytes());
    16
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn vxlan_and_geneve() {
        let mut b = [0u8; 16];
        emit_vxlan(&mut b, 0x12_3456);
        let x = Vxlan::new_checked(&b).unwrap();
        assert_eq!((x.flags(), x.vni()), (0x0800, 0x12_3456));
        let n = emit_geneve(&mut b, 77);
        let g = Geneve::new_checked(&b[..n]).unwrap();
        assert_eq!(
            (g.header_len(), g.vni(), g.protocol(), g.version()),
            (16, 77, 0x6558, 0)
        );
        let opts: Vec<_> = g.options().collect();
        assert_eq!(opts, [(0x0103, 1, &[0, 0, 0, 0xAA][..])]);
        assert!(Geneve::new_checked(&b[..15]).is_err());
    }
}
