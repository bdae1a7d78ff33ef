//! InfiniBand Global Route Header, as carried by RoCEv1 (EtherType 0x8915;
//! protocol.md §9), 40 bytes.
//!
//! Same layout as an IPv6 header: IPVer(4) TClass(8) FlowLabel(20)
//! PayLen(16) NxtHdr(8) HopLmt(8) SGID(128) DGID(128).
//!
//! # What PayLen counts (checked on a real capture)
//! On `captures/real/mlx-rocev1-32qp.pcap` (two Mellanox NICs, 2468 RoCEv1
//! frames) every frame is exactly `14 + 40 + PayLen` bytes: PayLen covers the
//! BTH, the extension headers, the payload, the pad and the 4-byte ICRC, and
//! nothing after it (1040 = BTH 12 + 1024 data + ICRC 4; 20 = BTH 12 + AETH 4 +
//! ICRC 4). The capture has no Ethernet FCS and, since its smallest frame is
//! 74 bytes, no minimum-size padding either. A frame shorter than 60 bytes
//! would carry zero padding after the ICRC, so [`Packet::payload`] stops at
//! PayLen and never includes trailing bytes.
//!
//! # ICRC masking
//! The RoCEv1 ICRC is `crc32(8 × 0xFF ‖ GRH masked ‖ BTH with byte 4 masked ‖
//! rest up to the ICRC)`, where the GRH mask sets TClass, FlowLabel and HopLmt
//! to ones and keeps the version nibble, PayLen, NxtHdr and the GIDs (verified
//! on all 2468 frames of that capture). [`ICRC_MASK`] is that mask.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::Ipv6Addr;

use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::{Field, Rest};
    /// IPVer(31..28) | TClass(27..20) | FlowLabel(19..0)
    pub const VER_TC_FLOW: Field = 0..4;
    /// As displayed: TClass spans bytes 0-1, the flow label bytes 1-3
    pub const TCLASS: Field = 0..2;
    pub const FLOW_LABEL: Field = 1..4;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SGID: Field = 8..24;
    pub const DGID: Field = 24..40;
    pub const PAYLOAD: Rest = 40..;
}

pub const HEADER_LEN: usize = field::DGID.end;

/// Bytes holding IPVer | TClass | FlowLabel (TClass and FlowLabel are ICRC-masked).
pub const VER_TCLASS_FLOW_LABEL: core::ops::Range<usize> = field::VER_TC_FLOW;
/// The bits of the big-endian word at [`VER_TCLASS_FLOW_LABEL`] that the ICRC masks.
pub const TCLASS_FLOW_LABEL_MASK: u32 = 0x0FFF_FFFF;
/// Offset of HopLmt (ICRC-masked).
pub const HOP_LIMIT: usize = field::HOP_LIMIT;
/// OR this onto a copy of the GRH before feeding it to the ICRC: 0xFF bits are
/// masked to ones (TClass, FlowLabel, HopLmt), 0x00 bits are covered as on the wire.
pub const ICRC_MASK: [u8; HEADER_LEN] = {
    let mut m = [0u8; HEADER_LEN];
    m[0] = 0x0F;
    m[1] = 0xFF;
    m[2] = 0xFF;
    m[3] = 0xFF;
    m[HOP_LIMIT] = 0xFF;
    m
};

/// The only IPVer a GRH carries.
pub const VERSION: u8 = 6;
/// NxtHdr for IBA transport (a BTH follows), `IB_GRH_NEXT_HDR`.
pub const NEXT_HEADER_IBA: u8 = 0x1B;

const VERSION_SHIFT: u32 = 28;
const TCLASS_SHIFT: u32 = 20;
const TCLASS_MASK: u32 = 0x0FF0_0000;
const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;
const VERSION_MASK: u32 = 0xF000_0000;

/// A read/write view of a GRH and the PayLen bytes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking the length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len); no accessor can panic afterwards.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Truncated` when the buffer is shorter than the 40-byte header, or
    /// shorter than the header plus PayLen.
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::Grh, HEADER_LEN, have)?;
        error::need(Layer::Grh, self.total_len(), have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn word0(&self) -> u32 {
        let b = &self.b()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    fn gid(&self, range: core::ops::Range<usize>) -> Ipv6Addr {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&self.b()[range]);
        Ipv6Addr::from(octets)
    }

    /// Header plus PayLen.
    fn total_len(&self) -> usize {
        HEADER_LEN + usize::from(self.payload_len())
    }

    /// IPVer; 6 in a well-formed GRH.
    #[must_use]
    pub fn ip_version(&self) -> u8 {
        self.b()[field::VER_TC_FLOW.start] >> 4
    }
    /// Traffic class (ICRC-masked).
    #[must_use]
    pub fn tclass(&self) -> u8 {
        let b = &self.b()[field::VER_TC_FLOW];
        // low nibble of byte 0, high nibble of byte 1 (the shift drops IPVer)
        (b[0] << 4) | (b[1] >> 4)
    }
    /// 20-bit flow label (ICRC-masked).
    #[must_use]
    pub fn flow_label(&self) -> u32 {
        self.word0() & FLOW_LABEL_MASK
    }
    /// PayLen: bytes after the GRH up to and including the ICRC.
    #[must_use]
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([
            self.b()[field::PAYLOAD_LEN.start],
            self.b()[field::PAYLOAD_LEN.start + 1],
        ])
    }
    /// NxtHdr; [`NEXT_HEADER_IBA`] (0x1B) when a BTH follows.
    #[must_use]
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }
    /// HopLmt (ICRC-masked).
    #[must_use]
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    #[must_use]
    pub fn sgid(&self) -> Ipv6Addr {
        self.gid(field::SGID)
    }
    #[must_use]
    pub fn dgid(&self) -> Ipv6Addr {
        self.gid(field::DGID)
    }
    /// The PayLen bytes after the header (BTH … ICRC); trailing Ethernet
    /// padding is not included. On a view of a cut-short capture (made with
    /// `new_unchecked` over at least the header) it is the bytes that are there.
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        let b = self.b();
        let end = self.total_len().min(b.len());
        b.get(field::PAYLOAD.start..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        v.field(
            "sgid",
            "Source GID",
            Value::Ipv6(self.sgid()),
            span(offset, field::SGID),
        );
        let dgid = Value::Ipv6(self.dgid());
        v.field("dgid", "Destination GID", dgid, span(offset, field::DGID));
        let tclass = Value::Uint(u64::from(self.tclass()));
        v.field(
            "tclass",
            "Traffic Class",
            tclass,
            span(offset, field::TCLASS),
        );
        let flow = Value::Hex(u64::from(self.flow_label()), 5);
        v.field(
            "flow_label",
            "Flow Label",
            flow,
            span(offset, field::FLOW_LABEL),
        );
        let hops = Value::Uint(u64::from(self.hop_limit()));
        v.field(
            "hop_limit",
            "Hop Limit",
            hops,
            byte(offset, field::HOP_LIMIT),
        );
        let next = Value::Hex(u64::from(self.next_header()), 2);
        v.field(
            "next",
            "Next Header",
            next,
            byte(offset, field::NEXT_HEADER),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_word0(&mut self, mask: u32, bits: u32) {
        let word = (self.word0() & !mask) | (bits & mask);
        self.b_mut()[field::VER_TC_FLOW].copy_from_slice(&word.to_be_bytes());
    }

    /// Keeps the low 4 bits.
    pub fn set_ip_version(&mut self, value: u8) {
        self.set_word0(VERSION_MASK, u32::from(value) << VERSION_SHIFT);
    }
    pub fn set_tclass(&mut self, value: u8) {
        self.set_word0(TCLASS_MASK, u32::from(value) << TCLASS_SHIFT);
    }
    /// Keeps the low 20 bits.
    pub fn set_flow_label(&mut self, value: u32) {
        self.set_word0(FLOW_LABEL_MASK, value);
    }
    pub fn set_payload_len(&mut self, value: u16) {
        self.b_mut()[field::PAYLOAD_LEN].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_next_header(&mut self, value: u8) {
        self.b_mut()[field::NEXT_HEADER] = value;
    }
    pub fn set_hop_limit(&mut self, value: u8) {
        self.b_mut()[field::HOP_LIMIT] = value;
    }
    pub fn set_sgid(&mut self, value: Ipv6Addr) {
        self.b_mut()[field::SGID].copy_from_slice(&value.octets());
    }
    pub fn set_dgid(&mut self, value: Ipv6Addr) {
        self.b_mut()[field::DGID].copy_from_slice(&value.octets());
    }
    /// The PayLen bytes after the header (clamped to the buffer like [`payload`](Self::payload)).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len().min(self.b().len());
        self.b_mut()
            .get_mut(field::PAYLOAD.start..end)
            .unwrap_or(&mut [])
    }
}

/// The GRH's meaning (IPVer is always 6 and left out; no payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub tclass: u8,
    /// 0..=0xF_FFFF
    pub flow_label: u32,
    /// PayLen: BTH through ICRC.
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub sgid: Ipv6Addr,
    pub dgid: Ipv6Addr,
}

impl Repr {
    /// `Truncated` as [`Packet::check_len`]; `Malformed(Version)` when IPVer is not 6.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.ip_version() != VERSION {
            return Err(WireError::Malformed {
                layer: Layer::Grh,
                offset: field::VER_TC_FLOW.start,
                reason: Malformed::Version {
                    found: packet.ip_version(),
                    expected: VERSION,
                },
            });
        }
        Ok(Repr {
            tclass: packet.tclass(),
            flow_label: packet.flow_label(),
            payload_len: packet.payload_len(),
            next_header: packet.next_header(),
            hop_limit: packet.hop_limit(),
            sgid: packet.sgid(),
            dgid: packet.dgid(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus `payload_len`.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len as usize
    }

    /// Write the 40 header bytes (IPVer 6, flow label masked to 20 bits).
    /// `packet` must hold at least `HEADER_LEN` bytes; the payload is the caller's.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_ip_version(VERSION);
        packet.set_tclass(self.tclass);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(self.payload_len);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_sgid(self.sgid);
        packet.set_dgid(self.dgid);
    }
}

/// nom adapter used by `stack.rs`: the view spans the header and its PayLen
/// bytes; the rest is whatever follows (Ethernet padding).
// `stack.rs` composes with `new_checked` today; kept for nom composition.
#[allow(dead_code)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, header) = error::take_complete(i, HEADER_LEN)?;
    let len = Packet::new_unchecked(header).total_len();
    let (rest, bytes) = error::take_complete(i, len)?;
    Ok((rest, Packet::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GRH sgid={} dgid={} tclass={} flow_label={:#07x} payload_len={} next_header={:#04x} hop_limit={}",
            self.sgid,
            self.dgid,
            self.tclass,
            self.flow_label,
            self.payload_len,
            self.next_header,
            self.hop_limit
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Packet::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "GRH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Frame 17 of `mlx-rocev1-32qp.pcap` after the Ethernet header: GRH,
    /// then an RC ACKNOWLEDGE (BTH + AETH) and its ICRC, PayLen = 20.
    static BYTES: [u8; 60] = [
        0x60, 0x20, 0x00, 0x00, // IPVer=6 TClass=0x02 FlowLabel=0
        0x00, 0x14, // PayLen 20
        0x1b, // NxtHdr 0x1B (IBA transport)
        0x40, // HopLmt 64
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // SGID ::ffff:192.168.242.57
        0x00, 0x00, 0xff, 0xff, 0xc0, 0xa8, 0xf2, 0x39, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // DGID ::ffff:192.168.242.56
        0x00, 0x00, 0xff, 0xff, 0xc0, 0xa8, 0xf2, 0x38, //
        0x11, 0x40, 0xff, 0xff, 0x00, 0x00, 0x13, 0x12, // payload: BTH RC_ACKNOWLEDGE
        0x00, 0x7d, 0x4a, 0x1a, //
        0x1f, 0x00, 0x00, 0x00, // AETH
        0x46, 0x0e, 0xb2, 0xdd, // ICRC
    ];

    fn repr() -> Repr {
        Repr {
            tclass: 2,
            flow_label: 0,
            payload_len: 20,
            next_header: NEXT_HEADER_IBA,
            hop_limit: 64,
            sgid: Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0xf239),
            dgid: Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0xf238),
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.ip_version(), 6);
        assert_eq!(p.tclass(), 2);
        assert_eq!(p.flow_label(), 0);
        assert_eq!(p.payload_len(), 20);
        assert_eq!(p.next_header(), 0x1b);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.sgid().to_string(), "::ffff:192.168.242.57");
        assert_eq!(p.dgid().to_string(), "::ffff:192.168.242.56");
        assert_eq!(p.payload(), &BYTES[40..]);
        assert_eq!(p.payload()[0], 0x11); // BTH opcode RC_ACKNOWLEDGE
    }

    #[test]
    fn test_deconstruct_fields_in_word0() {
        let mut bytes = BYTES;
        bytes[..4].copy_from_slice(&[0x6A, 0xBC, 0xDE, 0xF1]);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (p.ip_version(), p.tclass(), p.flow_label()),
            (6, 0xAB, 0xCDEF1)
        );
    }

    #[test]
    fn test_construct() {
        let mut buf = [0u8; 60];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_ip_version(6);
        p.set_tclass(2);
        p.set_flow_label(0);
        p.set_payload_len(20);
        p.set_next_header(0x1b);
        p.set_hop_limit(64);
        p.set_sgid(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0xf239));
        p.set_dgid(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0xf238));
        p.payload_mut().copy_from_slice(&BYTES[40..]);
        assert_eq!(buf, BYTES);

        // setters mask to width and keep the neighbouring bits
        let mut buf = [0xFFu8; 40];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_payload_len(0);
        p.set_ip_version(0x16);
        p.set_flow_label(0xFFF0_0000);
        assert_eq!((p.ip_version(), p.tclass(), p.flow_label()), (6, 0xFF, 0));
        p.set_tclass(0);
        assert_eq!(buf[..4], [0x60, 0x00, 0x00, 0x00]);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Packet::new_unchecked(&BYTES[..])), Ok(repr()));
        // trailing Ethernet padding is allowed and not part of the payload
        let mut padded = [0u8; 64];
        padded[..60].copy_from_slice(&BYTES);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload().len(), 20);
        assert_eq!(Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_parse_version() {
        let mut bytes = BYTES;
        bytes[0] = 0x40 | (bytes[0] & 0x0F);
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(WireError::Malformed {
                layer: Layer::Grh,
                offset: 0,
                reason: Malformed::Version {
                    found: 4,
                    expected: 6
                }
            })
        );
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 60];
        let r = repr();
        assert_eq!(r.buffer_len(), 60);
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[..40], BYTES[..40]);
        assert_eq!(buf[40..], [0xAA; 20], "payload untouched");
    }

    #[test]
    fn test_truncated() {
        let err = Packet::new_checked(&BYTES[..39]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated GRH at offset 0: need 40 bytes, have 39"
        );
        let err = Packet::new_checked(&BYTES[..59]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated GRH at offset 0: need 60 bytes, have 59"
        );
        assert!(
            Repr::parse(&Packet::new_unchecked(&BYTES[..45]))
                .unwrap_err()
                .is_truncated()
        );
        // an unchecked view of a cut-short capture: the payload is what is there
        assert_eq!(
            Packet::new_unchecked(&BYTES[..45]).payload(),
            &BYTES[40..45]
        );
        assert!(Packet::new_unchecked(&BYTES[..40]).payload().is_empty());
    }

    #[test]
    fn test_nom_parse() {
        let mut padded = [0u8; 64];
        padded[..60].copy_from_slice(&BYTES);
        let (rest, p) = parse(&padded[..]).unwrap();
        assert_eq!(rest, &[0, 0, 0, 0]);
        assert_eq!(p.into_inner(), &BYTES[..]);
        assert!(parse(&BYTES[..59]).is_err());
        assert!(parse(&BYTES[..20]).is_err());
    }

    #[test]
    fn test_icrc_mask() {
        let mut masked = [0u8; HEADER_LEN];
        for (m, (b, k)) in masked.iter_mut().zip(BYTES.iter().zip(ICRC_MASK)) {
            *m = b | k;
        }
        assert_eq!(
            masked[..8],
            [0x6F, 0xFF, 0xFF, 0xFF, 0x00, 0x14, 0x1b, 0xFF]
        );
        assert_eq!(masked[8..], BYTES[8..40]);
        assert_eq!(
            u32::from_be_bytes([ICRC_MASK[0], ICRC_MASK[1], ICRC_MASK[2], ICRC_MASK[3]]),
            TCLASS_FLOW_LABEL_MASK
        );
        assert_eq!(VER_TCLASS_FLOW_LABEL, 0..4);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "GRH sgid=::ffff:192.168.242.57 dgid=::ffff:192.168.242.56 tclass=2 flow_label=0x00000 payload_len=20 next_header=0x1b hop_limit=64"
        );
        assert_eq!(
            Packet::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
        assert_eq!(
            Packet::new_unchecked(&BYTES[..41]).to_string(),
            "GRH (truncated GRH at offset 0: need 60 bytes, have 41)"
        );
    }

    /// PayLen on real hardware: every frame of the RoCEv1 capture is exactly
    /// Ethernet 14 + GRH 40 + PayLen bytes (no padding, no FCS).
    #[test]
    fn test_real_capture_payload_len() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/captures/real/mlx-rocev1-32qp.pcap"
        );
        let Ok(data) = std::fs::read(path) else {
            eprintln!("skipping: ../shared/captures/real/ not found");
            return;
        };
        // classic little-endian pcap: 24-byte file header, 16-byte record headers
        let mut at = 24;
        let mut frames = 0;
        while at + 16 <= data.len() {
            let incl = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
            let frame = &data[at + 16..at + 16 + incl];
            at += 16 + incl;
            frames += 1;
            let eth = crate::ethernet::Frame::new_checked(frame).unwrap();
            assert_eq!(eth.ethertype(), crate::ethernet::EtherType::ROCEV1);
            let grh = Packet::new_checked(eth.payload()).unwrap();
            let repr = Repr::parse(&grh).unwrap();
            assert_eq!(repr.next_header, NEXT_HEADER_IBA);
            assert_eq!(repr.buffer_len(), eth.payload().len(), "frame {frames}");
            assert_eq!(grh.payload().len(), usize::from(repr.payload_len));
        }
        assert_eq!(frames, 2468);
    }

    proptest! {
        #[test]
        fn roundtrip_grh(repr in crate::strategy::grh()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_grh_bytes(mut bytes in any::<[u8; HEADER_LEN]>(), payload_len in 0u16..64) {
            bytes[0] = 0x60 | (bytes[0] & 0x0F); // canonical: IPVer 6
            bytes[field::PAYLOAD_LEN].copy_from_slice(&payload_len.to_be_bytes());
            let mut buf = bytes.to_vec();
            buf.resize(HEADER_LEN + usize::from(payload_len), 0);
            let repr = Repr::parse(&Packet::new_unchecked(&buf[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn parse_any_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Packet::new_checked(&bytes[..]) {
                let _ = (p.tclass(), p.flow_label(), p.sgid(), p.dgid(), p.payload(), p.to_string());
            }
            let _ = parse(&bytes[..]);
        }
    }
}
