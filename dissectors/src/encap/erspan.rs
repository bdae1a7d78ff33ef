//! Cisco ERSPAN Type II and III after GRE (capture-formats.md §4.2, §4.3): Type II is 8
//! bytes, Type III 12 plus an optional 8-byte platform subheader. The mirrored frame follows
//! (Ethernet without FCS; a Type III frame type other than Ethernet is kept as data).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, Result};
use crate::visit::{Value, Visitor};

pub const TYPE2_LEN: usize = 8;
pub const TYPE3_LEN: usize = 12;
pub const PLATFORM_LEN: usize = 8;

/// A read-only view of an ERSPAN header (Type II or III, by its version field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl<T: AsRef<[u8]>> Header<T> {
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wrap after checking the header (and a Type III platform subheader) fits.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let h = Self::new_unchecked(buffer);
        error::need(Layer::Erspan, 2, h.b().len())?;
        error::need(Layer::Erspan, h.header_len(), h.b().len())?;
        Ok(h)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// 1: Type II, 2: Type III.
    #[must_use]
    pub fn version(&self) -> u8 {
        (be16(&self.b()[0..2]) >> 12) as u8
    }
    #[must_use]
    pub fn is_type3(&self) -> bool {
        self.version() == 2
    }
    #[must_use]
    pub fn vlan(&self) -> u16 {
        be16(&self.b()[0..2]) & 0x0FFF
    }
    #[must_use]
    pub fn cos(&self) -> u8 {
        (be16(&self.b()[2..4]) >> 13) as u8
    }
    /// Type II: En (the VLAN encapsulation); Type III: BSO (0 good, 1 short, 2 oversized,
    /// 3 CRC or alignment error).
    #[must_use]
    pub fn en_bso(&self) -> u8 {
        ((be16(&self.b()[2..4]) >> 11) & 3) as u8
    }
    /// The mirrored frame was truncated by the switch.
    #[must_use]
    pub fn truncated(&self) -> bool {
        be16(&self.b()[2..4]) & 0x0400 != 0
    }
    #[must_use]
    pub fn session(&self) -> u16 {
        be16(&self.b()[2..4]) & 0x03FF
    }
    /// Type II: the 20-bit index; Type III: the 32-bit timestamp.
    #[must_use]
    pub fn index_or_timestamp(&self) -> u32 {
        let w = be32(&self.b()[4..8]);
        if self.is_type3() { w } else { w & 0x000F_FFFF }
    }
    /// Type III's second word (SGT and the flags), `None` on Type II.
    fn word3(&self) -> Option<(u16, u16)> {
        self.is_type3()
            .then(|| (be16(&self.b()[8..10]), be16(&self.b()[10..12])))
    }
    /// Type III: the frame type (0 Ethernet, 2 IP).
    #[must_use]
    pub fn frame_type(&self) -> u8 {
        self.word3().map_or(0, |(_, w)| ((w >> 10) & 0x1F) as u8)
    }
    /// Type III: a platform subheader follows.
    #[must_use]
    pub fn has_platform(&self) -> bool {
        self.word3().is_some_and(|(_, w)| w & 1 != 0)
    }

    /// Bytes of the header, the platform subheader included.
    #[must_use]
    pub fn header_len(&self) -> usize {
        if !self.is_type3() {
            return TYPE2_LEN;
        }
        // the flags word is needed to know: read it only when present
        if self.b().len() < TYPE3_LEN {
            return TYPE3_LEN;
        }
        TYPE3_LEN + if self.has_platform() { PLATFORM_LEN } else { 0 }
    }

    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let at = offset..offset + 2;
        v.field(
            "version",
            "Version",
            Value::Uint(u64::from(self.version())),
            at.clone(),
        );
        v.field("vlan", "VLAN", Value::Uint(u64::from(self.vlan())), at);
        let at = offset + 2..offset + 4;
        v.field("cos", "COS", Value::Uint(u64::from(self.cos())), at.clone());
        let (key, label) = if self.is_type3() {
            ("bso", "Bad/Short/Oversized")
        } else {
            ("encap", "Encapsulation")
        };
        v.field(
            key,
            label,
            Value::Uint(u64::from(self.en_bso())),
            at.clone(),
        );
        v.field(
            "truncated",
            "Truncated",
            Value::Bool(self.truncated()),
            at.clone(),
        );
        v.field(
            "session",
            "Session ID",
            Value::Uint(u64::from(self.session())),
            at,
        );
        let at = offset + 4..offset + 8;
        if let Some((sgt, w)) = self.word3() {
            let ts = Value::Uint(u64::from(self.index_or_timestamp()));
            v.field("timestamp", "Timestamp", ts, at);
            let at = offset + 8..offset + 10;
            v.field("sgt", "Security Group Tag", Value::Uint(u64::from(sgt)), at);
            let at = offset + 10..offset + 12;
            v.field(
                "p",
                "Ethernet PDU",
                Value::Bool(w & 0x8000 != 0),
                at.clone(),
            );
            v.field(
                "ft",
                "Frame Type",
                Value::Uint(u64::from((w >> 10) & 0x1F)),
                at.clone(),
            );
            v.field(
                "hw",
                "Hardware ID",
                Value::Uint(u64::from((w >> 4) & 0x3F)),
                at.clone(),
            );
            v.field(
                "direction",
                "Direction",
                Value::Uint(u64::from((w >> 3) & 1)),
                at.clone(),
            );
            v.field(
                "gra",
                "Timestamp Granularity",
                Value::Uint(u64::from((w >> 1) & 3)),
                at,
            );
            if self.has_platform() {
                let p = &self.b()[TYPE3_LEN..TYPE3_LEN + PLATFORM_LEN];
                let id = be32(&p[0..4]) >> 26;
                let at = offset + TYPE3_LEN..offset + TYPE3_LEN + PLATFORM_LEN;
                v.field("platform", "Platform ID", Value::Uint(u64::from(id)), at);
            }
        } else {
            let idx = Value::Uint(u64::from(self.index_or_timestamp()));
            v.field("index", "Index", idx, at);
        }
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.b().len() < self.header_len() {
            return f.write_str("ERSPAN (truncated)");
        }
        let t = if self.is_type3() { "III" } else { "II" };
        write!(f, "ERSPAN {t} session={}", self.session())
    }
}

/// What one mirror session writes in its ERSPAN header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Type III (else II).
    pub type3: bool,
    pub vlan: u16,
    pub cos: u8,
    pub truncated: bool,
    pub session: u16,
    /// Type II: the index; Type III: the timestamp.
    pub index_or_timestamp: u32,
    /// Type III: hardware ID and direction (egress).
    pub hw: u8,
    pub egress: bool,
}

impl Repr {
    #[must_use]
    pub const fn header_len(&self) -> usize {
        if self.type3 { TYPE3_LEN } else { TYPE2_LEN }
    }

    /// Write the header (no platform subheader); returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let ver: u16 = if self.type3 { 2 } else { 1 };
        buf[0..2].copy_from_slice(&((ver << 12) | (self.vlan & 0x0FFF)).to_be_bytes());
        let w = (u16::from(self.cos & 7) << 13)
            | (u16::from(self.truncated) << 10)
            | (self.session & 0x03FF);
        buf[2..4].copy_from_slice(&w.to_be_bytes());
        let ix = if self.type3 {
            self.index_or_timestamp
        } else {
            self.index_or_timestamp & 0x000F_FFFF
        };
        buf[4..8].copy_from_slice(&ix.to_be_bytes());
        if self.type3 {
            buf[8..10].copy_from_slice(&0u16.to_be_bytes());
            // P=0, FT=0 (Ethernet), HW ID, D, Gra 1 (100 ns), O=0
            let w = (u16::from(self.hw & 0x3F) << 4) | (u16::from(self.egress) << 3) | (1 << 1);
            buf[10..12].copy_from_slice(&w.to_be_bytes());
        }
        self.header_len()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn type2_and_type3() {
        let mut b = [0u8; 20];
        let r = Repr {
            type3: false,
            vlan: 100,
            cos: 3,
            truncated: true,
            session: 7,
            index_or_timestamp: 0x12345,
            hw: 0,
            egress: false,
        };
        assert_eq!(r.emit(&mut b), 8);
        let h = Header::new_checked(&b[..8]).unwrap();
        assert_eq!(
            (h.version(), h.vlan(), h.cos(), h.truncated(), h.session()),
            (1, 100, 3, true, 7)
        );
        assert_eq!(h.index_or_timestamp(), 0x12345);
        let r3 = Repr {
            type3: true,
            truncated: false,
            hw: 5,
            egress: true,
            ..r
        };
        assert_eq!(r3.emit(&mut b), 12);
        let h = Header::new_checked(&b[..12]).unwrap();
        assert!(h.is_type3() && !h.has_platform());
        assert_eq!((h.frame_type(), h.header_len(), h.en_bso()), (0, 12, 0));
        // with a platform subheader
        b[11] |= 1;
        assert_eq!(Header::new_unchecked(&b[..]).header_len(), 20);
        assert!(Header::new_checked(&b[..19]).is_err());
    }
}
