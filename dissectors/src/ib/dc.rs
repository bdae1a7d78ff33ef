//! The 8 bytes NVIDIA's Dynamically Connected transport puts after the 12-byte BTH on the
//! RD opcode range 0x40–0x5F (capture-formats.md §3), and the 16-byte DC connect header
//! (DCCETH) of opcode 0x55 with SE 0.
//!
//! tshark 4.0 skips the 8 bytes without names (its BTH item is 20 bytes long). Mellanox's
//! internal dissector names them `sid_owner` (byte 0 bit 0), `sid` (bytes 1–3) and `dci_dct`
//! (bytes 5–7); the one public DC capture fits another reading (bytes 1–3 the sender's QPN,
//! 5–7 a per-session constant), and which is right is unconfirmed, so the raw 8 bytes are
//! always kept and shown too (`dc.raw`).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, Result};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    pub const SID_OWNER: usize = 0;
    pub const SID: Field = 1..4;
    pub const RESERVED: usize = 4;
    pub const DCI_DCT: Field = 5..8;
    pub const ALL: Field = 0..8;
}

pub const HEADER_LEN: usize = field::ALL.end;

/// A read-only view of the DC header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

impl<T: AsRef<[u8]>> Header<T> {
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let h = Self::new_unchecked(buffer);
        error::need(Layer::Dc, HEADER_LEN, h.buffer.as_ref().len())?;
        Ok(h)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Byte 0 bit 0 (Mellanox: the session-ID owner; set requester → responder in the one
    /// real capture).
    #[must_use]
    pub fn sid_owner(&self) -> bool {
        self.b()[field::SID_OWNER] & 1 != 0
    }
    /// Bytes 1–3 (Mellanox: session ID; the real capture: the sender's QPN).
    #[must_use]
    pub fn sid(&self) -> u32 {
        be24(&self.b()[field::SID])
    }
    /// Bytes 5–7 (Mellanox: the DCI of a request, the DCT of a response).
    #[must_use]
    pub fn dci_dct(&self) -> u32 {
        be24(&self.b()[field::DCI_DCT])
    }
    /// The 8 bytes as one big-endian number.
    #[must_use]
    pub fn raw(&self) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.b()[field::ALL]);
        u64::from_be_bytes(w)
    }

    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let owner = Value::Bool(self.sid_owner());
        v.field(
            "sid_owner",
            "SID owner",
            owner,
            byte(offset, field::SID_OWNER),
        );
        let sid = Value::Hex(u64::from(self.sid()), 6);
        v.field("sid", "Session ID", sid, span(offset, field::SID));
        let _ = field::RESERVED;
        let d = Value::Hex(u64::from(self.dci_dct()), 6);
        v.field("dci_dct", "DCI / DCT", d, span(offset, field::DCI_DCT));
        let raw = Value::Hex(self.raw(), 16);
        v.field("raw", "Raw bytes", raw, span(offset, field::ALL));
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.b().len() < HEADER_LEN {
            return f.write_str("DC (truncated)");
        }
        write!(f, "DC raw={:#018x}", self.raw())
    }
}

/// The DC connect header of opcode 0x55 with SE 0 (16 bytes).
pub mod dcceth {
    use super::{Layer, Result, Value, Visitor, error, fmt, span};

    pub const HEADER_LEN: usize = 16;
    const KEY: core::ops::Range<usize> = 8..16;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Header<T: AsRef<[u8]>> {
        buffer: T,
    }

    impl<T: AsRef<[u8]>> Header<T> {
        pub const fn new_unchecked(buffer: T) -> Header<T> {
            Header { buffer }
        }

        pub fn new_checked(buffer: T) -> Result<Header<T>> {
            let h = Self::new_unchecked(buffer);
            error::need(Layer::Dcceth, HEADER_LEN, h.buffer.as_ref().len())?;
            Ok(h)
        }

        fn b(&self) -> &[u8] {
            self.buffer.as_ref()
        }

        /// Byte 0 bit 0x10 (Mellanox: reconnect).
        #[must_use]
        pub fn reconnect(&self) -> bool {
            self.b()[0] & 0x10 != 0
        }
        /// Bytes 8–15 (Mellanox: the DCT access key).
        #[must_use]
        pub fn access_key(&self) -> u64 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.b()[KEY]);
            u64::from_be_bytes(w)
        }

        pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
            let r = Value::Bool(self.reconnect());
            v.field("reconnect", "Reconnect", r, offset..offset + 1);
            let k = Value::Hex(self.access_key(), 16);
            v.field("access_key", "DCT Access Key", k, span(offset, KEY));
        }
    }

    impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.b().len() < HEADER_LEN {
                return f.write_str("DCCETH (truncated)");
            }
            write!(f, "DCCETH key={:#018x}", self.access_key())
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The 8 bytes of the real DC capture's requests (capture-formats.md §3.5).
    static REQUEST: [u8; 8] = [0x11, 0x00, 0x90, 0x35, 0x00, 0x71, 0x50, 0x04];

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&REQUEST[..]).unwrap();
        assert!(h.sid_owner());
        assert_eq!(h.sid(), 0x009035);
        assert_eq!(h.dci_dct(), 0x715004);
        assert_eq!(h.raw(), 0x1100_9035_0071_5004);
        assert!(Header::new_checked(&REQUEST[..7]).is_err());
        let mut c = [0u8; 16];
        c[0] = 0x10;
        c[12..].copy_from_slice(&[0xff, 0xee, 0xdd, 0xcc]);
        let d = dcceth::Header::new_checked(&c[..]).unwrap();
        assert!(d.reconnect());
        assert_eq!(d.access_key(), 0xffee_ddcc);
    }
}
