//! InfiniBand Local Route Header (capture-formats.md §1.1), 8 bytes, big-endian: what a
//! native InfiniBand packet starts with (ibdump's ERF records, `LINKTYPE_INFINIBAND`).
//!
//! VL(4) LVer(4) | SL(4) reserved(2) LNH(2) | DLID(16) | reserved(5) PktLen(11) | SLID(16).
//! PktLen counts 4-byte words from the first LRH byte through the ICRC (the VCRC after it is
//! not counted: `PktLen × 4 + 2` is the packet, checked on 170 real frames).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    /// VL (7..4) | LVer (3..0)
    pub const VL_LVER: usize = 0;
    /// SL (7..4) | reserved (3..2) | LNH (1..0)
    pub const SL_LNH: usize = 1;
    pub const DLID: Field = 2..4;
    /// reserved (15..11) | PktLen (10..0)
    pub const PKTLEN: Field = 4..6;
    pub const SLID: Field = 6..8;
}

pub const HEADER_LEN: usize = field::SLID.end;
/// Offset of the byte whose high nibble (VL) the local-route ICRC masks.
pub const VL_BYTE: usize = field::VL_LVER;
/// Bytes of the VCRC that ends every native packet.
pub const VCRC_LEN: usize = 2;

/// What follows the LRH (capture-formats.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum NextHeader {
    /// 0: a raw packet (RWH: 2 reserved bytes and an EtherType); VCRC only.
    Raw,
    /// 1: a raw IPv6 packet; VCRC only.
    Ipv6,
    /// 2: IBA local: the BTH; ICRC and VCRC.
    IbaLocal,
    /// 3: IBA global: a GRH, then the BTH when its NxtHdr is 0x1B; ICRC and VCRC.
    IbaGlobal,
}

impl NextHeader {
    #[must_use]
    pub const fn from_bits(bits: u8) -> NextHeader {
        match bits & 3 {
            0 => NextHeader::Raw,
            1 => NextHeader::Ipv6,
            2 => NextHeader::IbaLocal,
            _ => NextHeader::IbaGlobal,
        }
    }

    #[must_use]
    pub const fn bits(self) -> u8 {
        match self {
            NextHeader::Raw => 0,
            NextHeader::Ipv6 => 1,
            NextHeader::IbaLocal => 2,
            NextHeader::IbaGlobal => 3,
        }
    }

    /// Whether the packet carries an ICRC (IBA transport) besides the VCRC.
    #[must_use]
    pub const fn has_icrc(self) -> bool {
        matches!(self, NextHeader::IbaLocal | NextHeader::IbaGlobal)
    }

    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            NextHeader::Raw => "Raw",
            NextHeader::Ipv6 => "IP Non-IBA",
            NextHeader::IbaLocal => "IBA Local",
            NextHeader::IbaGlobal => "IBA Global",
        }
    }
}

/// A read/write view of an LRH.
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
        error::need(Layer::Lrh, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Virtual lane.
    #[must_use]
    pub fn vl(&self) -> u8 {
        self.b()[field::VL_LVER] >> 4
    }
    /// Link version.
    #[must_use]
    pub fn lver(&self) -> u8 {
        self.b()[field::VL_LVER] & 0x0F
    }
    /// Service level.
    #[must_use]
    pub fn sl(&self) -> u8 {
        self.b()[field::SL_LNH] >> 4
    }
    /// The two reserved bits between SL and LNH.
    #[must_use]
    pub fn reserved2(&self) -> u8 {
        (self.b()[field::SL_LNH] >> 2) & 3
    }
    #[must_use]
    pub fn lnh(&self) -> NextHeader {
        NextHeader::from_bits(self.b()[field::SL_LNH])
    }
    /// Destination local identifier.
    #[must_use]
    pub fn dlid(&self) -> u16 {
        be16(&self.b()[field::DLID])
    }
    /// The five reserved bits above PktLen.
    #[must_use]
    pub fn reserved5(&self) -> u8 {
        (be16(&self.b()[field::PKTLEN]) >> 11) as u8
    }
    /// Packet length in 4-byte words, LRH through ICRC.
    #[must_use]
    pub fn pkt_len(&self) -> u16 {
        be16(&self.b()[field::PKTLEN]) & 0x07FF
    }
    /// [`Self::pkt_len`] in bytes.
    #[must_use]
    pub fn pkt_bytes(&self) -> usize {
        usize::from(self.pkt_len()) * 4
    }
    /// Source local identifier.
    #[must_use]
    pub fn slid(&self) -> u16 {
        be16(&self.b()[field::SLID])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree (tshark's `infiniband.lrh.*`).
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let at = byte(offset, field::VL_LVER);
        v.field(
            "vl",
            "Virtual Lane",
            Value::Hex(u64::from(self.vl()), 1),
            at.clone(),
        );
        v.field(
            "lver",
            "Link Version",
            Value::Uint(u64::from(self.lver())),
            at,
        );
        let at = byte(offset, field::SL_LNH);
        v.field(
            "sl",
            "Service Level",
            Value::Uint(u64::from(self.sl())),
            at.clone(),
        );
        let lnh = self.lnh();
        v.field(
            "lnh",
            "Link Next Header",
            Value::Uint(u64::from(lnh.bits())),
            at,
        );
        let dlid = Value::Hex(u64::from(self.dlid()), 4);
        v.field(
            "dlid",
            "Destination Local ID",
            dlid,
            span(offset, field::DLID),
        );
        let len = Value::Uint(u64::from(self.pkt_len()));
        v.field("pktlen", "Packet Length", len, span(offset, field::PKTLEN));
        let slid = Value::Hex(u64::from(self.slid()), 4);
        v.field("slid", "Source Local ID", slid, span(offset, field::SLID));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Keeps the low 4 bits.
    pub fn set_vl(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::VL_LVER];
        *b = (*b & 0x0F) | (value << 4);
    }
    pub fn set_lver(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::VL_LVER];
        *b = (*b & 0xF0) | (value & 0x0F);
    }
    pub fn set_sl(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::SL_LNH];
        *b = (*b & 0x0F) | (value << 4);
    }
    pub fn set_lnh(&mut self, value: NextHeader) {
        let b = &mut self.b_mut()[field::SL_LNH];
        *b = (*b & 0xFC) | value.bits();
    }
    pub fn set_dlid(&mut self, value: u16) {
        self.b_mut()[field::DLID].copy_from_slice(&value.to_be_bytes());
    }
    /// Keeps the low 11 bits; the reserved bits above are cleared.
    pub fn set_pkt_len(&mut self, value: u16) {
        self.b_mut()[field::PKTLEN].copy_from_slice(&(value & 0x07FF).to_be_bytes());
    }
    pub fn set_slid(&mut self, value: u16) {
        self.b_mut()[field::SLID].copy_from_slice(&value.to_be_bytes());
    }
}

/// The LRH's meaning (reserved bits zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub vl: u8,
    pub lver: u8,
    pub sl: u8,
    pub lnh: NextHeader,
    pub dlid: u16,
    /// In 4-byte words (11 bits).
    pub pkt_len: u16,
    pub slid: u16,
}

impl Repr {
    /// Every LRH is representable; the reserved bits are dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            vl: header.vl(),
            lver: header.lver(),
            sl: header.sl(),
            lnh: header.lnh(),
            dlid: header.dlid(),
            pkt_len: header.pkt_len(),
            slid: header.slid(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field, reserved bits zero. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.b_mut()[..HEADER_LEN].fill(0);
        header.set_vl(self.vl & 0x0F);
        header.set_lver(self.lver);
        header.set_sl(self.sl & 0x0F);
        header.set_lnh(self.lnh);
        header.set_dlid(self.dlid);
        header.set_pkt_len(self.pkt_len);
        header.set_slid(self.slid);
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
            "LRH vl={} sl={} lnh={} dlid={:#06x} slid={:#06x} pktlen={}",
            self.vl,
            self.sl,
            self.lnh.name(),
            self.dlid,
            self.slid,
            self.pkt_len
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "LRH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// The LRH of capture-formats.md §1.5 vector A (an RC ACKNOWLEDGE, LNH 2).
    static LOCAL: [u8; 8] = [0x00, 0x02, 0x00, 0x12, 0x00, 0x07, 0x00, 0x0c];
    /// Vector B's (LNH 3, SL 12).
    static GLOBAL: [u8; 8] = [0x00, 0x03, 0xc0, 0x00, 0x00, 0x21, 0x00, 0x06];

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&LOCAL[..]).unwrap();
        assert_eq!(
            (h.vl(), h.lver(), h.sl(), h.lnh()),
            (0, 0, 0, NextHeader::IbaLocal)
        );
        assert_eq!((h.dlid(), h.pkt_len(), h.slid()), (0x0012, 7, 0x000c));
        assert_eq!(h.pkt_bytes(), 28);
        let g = Header::new_checked(&GLOBAL[..]).unwrap();
        assert_eq!(
            (g.lnh(), g.dlid(), g.pkt_len(), g.slid()),
            (NextHeader::IbaGlobal, 0xc000, 0x21, 6)
        );
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 8];
        let repr = Repr::parse(&Header::new_unchecked(&GLOBAL[..])).unwrap();
        repr.emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, GLOBAL);
    }

    #[test]
    fn test_short() {
        assert!(Header::new_checked(&LOCAL[..7]).is_err());
    }

    proptest! {
        #[test]
        fn repr_roundtrip(vl in 0u8..16, lver in 0u8..16, sl in 0u8..16, lnh in 0u8..4,
                          dlid: u16, pkt_len in 0u16..2048, slid: u16) {
            let repr = Repr { vl, lver, sl, lnh: NextHeader::from_bits(lnh), dlid, pkt_len, slid };
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }
    }
}
