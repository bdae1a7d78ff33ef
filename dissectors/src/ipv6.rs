//! IPv6 fixed header (RFC 8200 §3), 40 bytes.
//!
//! Extension headers are not walked: [`Packet::next_header`] is reported as
//! it is on the wire, and the payload starts right after the fixed header
//! (RoCEv2 expects UDP there; protocol.md §11 item 2).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::Ipv6Addr;

use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::ipv4::IpProtocol;
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    /// Version(31..28) | Traffic Class(27..20) | Flow Label(19..0);
    /// TC and flow label are masked to ones in the ICRC
    pub const VER_TC_FLOW: Field = 0..4;
    /// As displayed: the traffic class spans bytes 0-1, ECN is in byte 1
    pub const TRAFFIC_CLASS: Field = 0..2;
    pub const ECN: usize = 1;
    pub const FLOW_LABEL: Field = 1..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    /// masked to ones in the ICRC
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

pub const HEADER_LEN: usize = field::DST_ADDR.end;

const VERSION_SHIFT: u32 = 28;
const TC_SHIFT: u32 = 20;
const TC_MASK: u32 = 0x0FF0_0000;
const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;
const VERSION_MASK: u32 = 0xF000_0000;
const DSCP_SHIFT: u8 = 2;
const ECN_MASK: u8 = 0x03;

/// A read/write view of an IPv6 packet (fixed header and payload).
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

    /// Fixed header present, then the whole payload (`40 + payload_len`).
    /// The version is not checked here ([`Repr::parse`] does).
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::Ipv6, HEADER_LEN, have)?;
        error::need(
            Layer::Ipv6,
            HEADER_LEN + usize::from(self.payload_len()),
            have,
        )
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn word0(&self) -> u32 {
        let b = self.b();
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    fn addr_at(&self, at: usize) -> Ipv6Addr {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&self.b()[at..at + 16]);
        Ipv6Addr::from(octets)
    }

    #[must_use]
    pub fn version(&self) -> u8 {
        self.b()[field::VER_TC_FLOW.start] >> 4
    }
    /// The 8-bit Traffic Class (DSCP and ECN).
    #[must_use]
    pub fn traffic_class(&self) -> u8 {
        ((self.word0() & TC_MASK) >> TC_SHIFT) as u8
    }
    #[must_use]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> DSCP_SHIFT
    }
    #[must_use]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & ECN_MASK
    }
    /// The 20-bit flow label.
    #[must_use]
    pub fn flow_label(&self) -> u32 {
        self.word0() & FLOW_LABEL_MASK
    }
    /// Payload Length: bytes after the fixed header.
    #[must_use]
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([
            self.b()[field::LENGTH.start],
            self.b()[field::LENGTH.start + 1],
        ])
    }
    /// Next Header as on the wire (extension headers are not followed).
    #[must_use]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.b()[field::NXT_HDR])
    }
    #[must_use]
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    #[must_use]
    pub fn src_addr(&self) -> Ipv6Addr {
        self.addr_at(field::SRC_ADDR.start)
    }
    #[must_use]
    pub fn dst_addr(&self) -> Ipv6Addr {
        self.addr_at(field::DST_ADDR.start)
    }
    /// `40..40 + payload_len`; bytes after it (Ethernet padding, FCS) are not
    /// included. Empty if it does not fit the buffer (never after `check_len`).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        self.b().get(HEADER_LEN..end).unwrap_or_default()
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let src = Value::Ipv6(self.src_addr());
        v.field("src", "Source Address", src, span(offset, field::SRC_ADDR));
        let dst = Value::Ipv6(self.dst_addr());
        v.field(
            "dst",
            "Destination Address",
            dst,
            span(offset, field::DST_ADDR),
        );
        let dscp = Value::Uint(u64::from(self.dscp()));
        let tc = span(offset, field::TRAFFIC_CLASS);
        v.field("dscp", "Differentiated Services Codepoint", dscp, tc);
        let ecn = Value::Uint(u64::from(self.ecn()));
        v.field(
            "ecn",
            "Explicit Congestion Notification",
            ecn,
            byte(offset, field::ECN),
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
        let len = Value::Uint(u64::from(self.payload_len()));
        v.field("len", "Payload Length", len, span(offset, field::LENGTH));
        let next = Value::Uint(u64::from(self.next_header().0));
        v.field("next", "Next Header", next, byte(offset, field::NXT_HDR));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_word0(&mut self, mask: u32, value: u32) {
        let raw = (self.word0() & !mask) | (value & mask);
        self.b_mut()[field::VER_TC_FLOW].copy_from_slice(&raw.to_be_bytes());
    }

    pub fn set_version(&mut self, value: u8) {
        self.set_word0(VERSION_MASK, u32::from(value) << VERSION_SHIFT);
    }
    pub fn set_traffic_class(&mut self, value: u8) {
        self.set_word0(TC_MASK, u32::from(value) << TC_SHIFT);
    }
    pub fn set_dscp(&mut self, value: u8) {
        let tc = (self.traffic_class() & ECN_MASK) | (value << DSCP_SHIFT);
        self.set_traffic_class(tc);
    }
    pub fn set_ecn(&mut self, value: u8) {
        let tc = (self.traffic_class() & !ECN_MASK) | (value & ECN_MASK);
        self.set_traffic_class(tc);
    }
    /// Masked to 20 bits.
    pub fn set_flow_label(&mut self, value: u32) {
        self.set_word0(FLOW_LABEL_MASK, value);
    }
    pub fn set_payload_len(&mut self, value: u16) {
        self.b_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.b_mut()[field::NXT_HDR] = value.0;
    }
    pub fn set_hop_limit(&mut self, value: u8) {
        self.b_mut()[field::HOP_LIMIT] = value;
    }
    pub fn set_src_addr(&mut self, value: Ipv6Addr) {
        self.b_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }
    pub fn set_dst_addr(&mut self, value: Ipv6Addr) {
        self.b_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }
    /// Mutable payload, `40..40 + payload_len` (set the length first; empty if it does not fit).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        self.b_mut().get_mut(HEADER_LEN..end).unwrap_or_default()
    }
}

/// The IPv6 fixed header's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    pub next_header: IpProtocol,
    /// Payload Length, at most 65535.
    pub payload_len: usize,
    pub hop_limit: u8,
    /// DSCP (7..2) and ECN (1..0).
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
}

impl Repr {
    /// The largest payload without a jumbogram option.
    pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize;

    /// Read the fixed header. `Malformed { Version }` unless version 6.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(WireError::Malformed {
                layer: Layer::Ipv6,
                offset: field::VER_TC_FLOW.start,
                reason: Malformed::Version {
                    found: packet.version(),
                    expected: 6,
                },
            });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN.saturating_add(self.payload_len)
    }

    #[must_use]
    pub const fn dscp(&self) -> u8 {
        self.traffic_class >> DSCP_SHIFT
    }

    #[must_use]
    pub const fn ecn(&self) -> u8 {
        self.traffic_class & ECN_MASK
    }

    /// Write the 40-byte header; `packet` must hold [`HEADER_LEN`] bytes and
    /// the payload is not touched. The flow label is masked to 20 bits, and a
    /// `payload_len` above [`Repr::MAX_PAYLOAD_LEN`] is written as 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.b_mut()[..HEADER_LEN].fill(0);
        packet.set_version(6);
        packet.set_traffic_class(self.traffic_class);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(u16::try_from(self.payload_len).unwrap_or(u16::MAX));
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

/// nom adapter used by `stack.rs`: takes `40 + payload_len` bytes (trailing
/// Ethernet padding stays in the rest) and fails when fewer remain.
#[allow(
    dead_code,
    reason = "nom seam for stack.rs, which checks lengths itself for now"
)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, fixed) = error::take_complete(i, HEADER_LEN)?;
    let len = HEADER_LEN + usize::from(Packet::new_unchecked(fixed).payload_len());
    let (rest, bytes) = error::take_complete(i, len)?;
    Ok((rest, Packet::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv6 src={} dst={} dscp={} ecn={} flow_label={:#07x} hop_limit={} len={} next={}",
            self.src_addr,
            self.dst_addr,
            self.dscp(),
            self.ecn(),
            self.flow_label,
            self.hop_limit,
            self.payload_len,
            self.next_header
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Packet::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "IPv6 ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// IPv6 packet of protocol.md §4.3 vector D (after the 14-byte Ethernet header).
    static BYTES: [u8; 72] = [
        0x66, 0x81, 0x23, 0x45, // version 6, TC 0x68 (DSCP 26, ECN 0), flow label 0x12345
        0x00, 0x20, // payload length 32
        0x11, // next header 17 (UDP)
        0x40, // hop limit 64
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // source fe80::1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // destination fe80::2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
        0xc1, 0x23, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00, // UDP 49443 -> 4791, len 32, csum 0
        0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0xab, 0xcd, 0xef, // BTH
        0x01, 0x02, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, // payload 5 bytes + 3 pad
        0x4c, 0x40, 0x6c, 0x64, // ICRC
    ];

    fn repr() -> Repr {
        Repr {
            src_addr: Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1),
            dst_addr: Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2),
            next_header: IpProtocol::UDP,
            payload_len: 32,
            hop_limit: 64,
            traffic_class: 0x68,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0x68);
        assert_eq!(p.dscp(), 26);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 32);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2));
        assert_eq!(p.payload(), &BYTES[40..]);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 72];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version(6);
        p.set_dscp(26);
        p.set_ecn(0);
        p.set_flow_label(0x12345);
        p.set_payload_len(32);
        p.set_next_header(IpProtocol::UDP);
        p.set_hop_limit(64);
        p.set_src_addr(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
        p.set_dst_addr(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2));
        p.payload_mut().copy_from_slice(&BYTES[40..]);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_setters_keep_other_bits() {
        let mut buf = BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_flow_label(0xFFFF_FFFF); // masked to 20 bits
        assert_eq!(
            (p.version(), p.traffic_class(), p.flow_label()),
            (6, 0x68, 0xFFFFF)
        );
        p.set_ecn(0xFF);
        assert_eq!((p.dscp(), p.ecn(), p.flow_label()), (26, 3, 0xFFFFF));
        p.set_dscp(0xFF);
        assert_eq!((p.dscp(), p.ecn(), p.version()), (0x3F, 3, 6));
        p.set_version(0xF4); // masked to 4 bits
        assert_eq!((p.version(), p.traffic_class()), (4, 0xFF));
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Packet::new_unchecked(&BYTES[..])), Ok(repr()));
        let mut bad = BYTES;
        bad[0] = 0x46;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bad[..])),
            Err(WireError::Malformed {
                layer: Layer::Ipv6,
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
        let mut buf = [0xAAu8; 72];
        buf[40..].copy_from_slice(&BYTES[40..]);
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().buffer_len(), 72);
    }

    #[test]
    fn test_truncated() {
        let err = Packet::new_checked(&BYTES[..7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated IPv6 at offset 0: need 40 bytes, have 7"
        );
        let err = Packet::new_checked(&BYTES[..50]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated IPv6 at offset 0: need 72 bytes, have 50"
        );
    }

    #[test]
    fn test_padding_ignored() {
        let mut buf = [0u8; 80];
        buf[..72].copy_from_slice(&BYTES);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload(), &BYTES[40..]);
        let (rest, q) = parse(&buf).unwrap();
        assert_eq!((rest.len(), q.into_inner().len()), (8, 72));
        assert!(parse(&BYTES[..71]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "IPv6 src=fe80::1 dst=fe80::2 dscp=26 ecn=0 flow_label=0x12345 hop_limit=64 len=32 next=UDP"
        );
        assert_eq!(
            Packet::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
    }

    proptest! {
        #[test]
        fn roundtrip_ipv6(repr in crate::strategy::ipv6()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()), Ok(repr));
        }

        #[test]
        fn roundtrip_ipv6_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            // canonical: version 6, no payload
            bytes[0] = 0x60 | (bytes[0] & 0x0F);
            bytes[field::LENGTH].fill(0);
            let repr = Repr::parse(&Packet::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn roundtrip_ipv6_any_bytes_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            if let Ok(p) = Packet::new_checked(&bytes[..]) {
                let _ = (p.payload(), p.to_string());
                let _ = Repr::parse(&p);
            }
            let _ = parse(&bytes);
        }
    }
}
