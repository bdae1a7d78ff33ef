//! IPv4 (RFC 791), 20 bytes plus options; RoCEv2's usual network layer
//! (protocol.md §9, §11 item 2).
//!
//! Options are skipped but kept ([`Packet::options`]); [`Repr`] leaves them
//! out and always emits IHL 5. Bytes after Total Length (Ethernet padding,
//! FCS) are not part of the packet.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::Ipv4Addr;

use crate::checksum::{self, ChecksumMode};
use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::visit::{Value, Visitor, byte, span};

/// An IP protocol number (IPv4 Protocol, IPv6 Next Header). Open newtype:
/// every value is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    pub const HOP_BY_HOP: IpProtocol = IpProtocol(0);
    pub const ICMP: IpProtocol = IpProtocol(1);
    pub const IGMP: IpProtocol = IpProtocol(2);
    pub const TCP: IpProtocol = IpProtocol(6);
    pub const UDP: IpProtocol = IpProtocol(17);
    /// IPv4 in IP.
    pub const IPIP: IpProtocol = IpProtocol(4);
    /// IPv6 in IP.
    pub const IPV6: IpProtocol = IpProtocol(41);
    pub const GRE: IpProtocol = IpProtocol(47);
    pub const IPV6_ROUTE: IpProtocol = IpProtocol(43);
    pub const IPV6_FRAG: IpProtocol = IpProtocol(44);
    pub const ICMPV6: IpProtocol = IpProtocol(58);
    pub const IPV6_NO_NXT: IpProtocol = IpProtocol(59);
    pub const IPV6_OPTS: IpProtocol = IpProtocol(60);

    /// The registry name, if this is one of the constants above.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "HOPOPT",
            1 => "ICMP",
            2 => "IGMP",
            6 => "TCP",
            17 => "UDP",
            43 => "IPv6-Route",
            44 => "IPv6-Frag",
            58 => "ICMPv6",
            59 => "IPv6-NoNxt",
            60 => "IPv6-Opts",
            _ => return None,
        })
    }
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        IpProtocol(value)
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        value.0
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#04x}", self.0),
        }
    }
}

mod field {
    use crate::field::Field;
    /// Version(7..4) | IHL(3..0)
    pub const VER_IHL: usize = 0;
    /// DSCP(7..2) | ECN(1..0), masked to ones in the ICRC
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    /// Reserved(15) | DF(14) | MF(13) | Fragment Offset(12..0)
    pub const FLG_OFF: Field = 6..8;
    /// masked to ones in the ICRC
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    /// masked to ones in the ICRC
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of the fixed header (IHL 5), without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const VERSION_SHIFT: u8 = 4;
const IHL_MASK: u8 = 0x0F;
const DSCP_SHIFT: u8 = 2;
const ECN_MASK: u8 = 0x03;
const FLAG_RESERVED: u16 = 0x8000;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1FFF;

/// A read/write view of an IPv4 packet (header, options, payload).
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

    /// smoltcp's order: fixed header present; IHL ≥ 5; whole header present;
    /// Total Length ≥ header; whole packet present. The version is not
    /// checked here ([`Repr::parse`] does).
    ///
    /// A buffer shorter than Total Length is `Truncated`: the caller knows
    /// whether the capture was cut short or the length field is wrong.
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::Ipv4, HEADER_LEN, have)?;
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            return Err(WireError::Malformed {
                layer: Layer::Ipv4,
                offset: field::VER_IHL,
                reason: Malformed::HeaderLength {
                    value: header_len as u16,
                    min: HEADER_LEN as u16,
                },
            });
        }
        error::need(Layer::Ipv4, header_len, have)?;
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(WireError::Malformed {
                layer: Layer::Ipv4,
                offset: field::LENGTH.start,
                reason: Malformed::LengthTooShort {
                    value: total_len as u32,
                    need: header_len as u32,
                },
            });
        }
        error::need(Layer::Ipv4, total_len, have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[inline]
    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b()[at], self.b()[at + 1]])
    }

    fn addr_at(&self, at: usize) -> Ipv4Addr {
        let b = self.b();
        Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
    }

    #[must_use]
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> VERSION_SHIFT
    }
    /// Header length in bytes (IHL × 4), options included.
    #[must_use]
    pub fn header_len(&self) -> u8 {
        (self.b()[field::VER_IHL] & IHL_MASK) * 4
    }
    #[must_use]
    pub fn dscp(&self) -> u8 {
        self.b()[field::DSCP_ECN] >> DSCP_SHIFT
    }
    #[must_use]
    pub fn ecn(&self) -> u8 {
        self.b()[field::DSCP_ECN] & ECN_MASK
    }
    /// Total Length: header, options and payload.
    #[must_use]
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::LENGTH.start)
    }
    #[must_use]
    pub fn ident(&self) -> u16 {
        self.u16_at(field::IDENT.start)
    }
    /// The reserved ("evil") flag bit, transmitted as 0.
    #[must_use]
    pub fn reserved_flag(&self) -> bool {
        self.u16_at(field::FLG_OFF.start) & FLAG_RESERVED != 0
    }
    #[must_use]
    pub fn dont_frag(&self) -> bool {
        self.u16_at(field::FLG_OFF.start) & FLAG_DF != 0
    }
    #[must_use]
    pub fn more_frags(&self) -> bool {
        self.u16_at(field::FLG_OFF.start) & FLAG_MF != 0
    }
    /// Fragment offset in bytes (the 13-bit field × 8).
    #[must_use]
    pub fn frag_offset(&self) -> u16 {
        (self.u16_at(field::FLG_OFF.start) & FRAG_OFFSET_MASK) << 3
    }
    /// Time To Live.
    #[must_use]
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::TTL]
    }
    /// Protocol.
    #[must_use]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.b()[field::PROTOCOL])
    }
    #[must_use]
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM.start)
    }
    #[must_use]
    pub fn src_addr(&self) -> Ipv4Addr {
        self.addr_at(field::SRC_ADDR.start)
    }
    #[must_use]
    pub fn dst_addr(&self) -> Ipv4Addr {
        self.addr_at(field::DST_ADDR.start)
    }
    /// The option bytes, `20..header_len` (empty if the header does not fit the buffer).
    #[must_use]
    pub fn options(&self) -> &[u8] {
        let end = usize::from(self.header_len());
        self.b().get(HEADER_LEN..end).unwrap_or_default()
    }
    /// `header_len..total_len`: the bytes after Total Length are not included.
    /// Empty if the length fields do not fit the buffer (never after `check_len`).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        let start = usize::from(self.header_len());
        let end = usize::from(self.total_len());
        self.b().get(start..end).unwrap_or_default()
    }

    /// Whether the header (options included) sums to 0xFFFF. Always true
    /// under `cfg(fuzzing)`. A mismatch is a finding, not a parse error.
    #[must_use]
    #[allow(unexpected_cfgs)]
    pub fn verify_checksum(&self) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let end = usize::from(self.header_len());
        match self.b().get(..end) {
            Some(header) => checksum::data(header) == 0xFFFF,
            None => false,
        }
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let src = Value::Ipv4(self.src_addr());
        v.field("src", "Source Address", src, span(offset, field::SRC_ADDR));
        let dst = Value::Ipv4(self.dst_addr());
        v.field(
            "dst",
            "Destination Address",
            dst,
            span(offset, field::DST_ADDR),
        );
        let ds = byte(offset, field::DSCP_ECN);
        let dscp = Value::Uint(u64::from(self.dscp()));
        v.field(
            "dscp",
            "Differentiated Services Codepoint",
            dscp,
            ds.clone(),
        );
        let ecn = Value::Uint(u64::from(self.ecn()));
        v.field("ecn", "Explicit Congestion Notification", ecn, ds);
        let ttl = Value::Uint(u64::from(self.hop_limit()));
        v.field("ttl", "Time to Live", ttl, byte(offset, field::TTL));
        let id = Value::Hex(u64::from(self.ident()), 4);
        v.field("id", "Identification", id, span(offset, field::IDENT));
        let len = Value::Uint(u64::from(self.total_len()));
        v.field("len", "Total Length", len, span(offset, field::LENGTH));
        let proto = Value::Uint(u64::from(self.next_header().0));
        v.field("proto", "Protocol", proto, byte(offset, field::PROTOCOL));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_u16_at(&mut self, at: usize, value: u16) {
        self.b_mut()[at..at + 2].copy_from_slice(&value.to_be_bytes());
    }
    fn set_flag(&mut self, bit: u16, on: bool) {
        let raw = self.u16_at(field::FLG_OFF.start);
        let raw = if on { raw | bit } else { raw & !bit };
        self.set_u16_at(field::FLG_OFF.start, raw);
    }

    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::VER_IHL];
        *b = (*b & IHL_MASK) | (value << VERSION_SHIFT);
    }
    /// Set IHL to `value / 4` (header length in bytes, a multiple of 4 up to 60).
    pub fn set_header_len(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::VER_IHL];
        *b = (*b & !IHL_MASK) | ((value / 4) & IHL_MASK);
    }
    pub fn set_dscp(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::DSCP_ECN];
        *b = (*b & ECN_MASK) | (value << DSCP_SHIFT);
    }
    pub fn set_ecn(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::DSCP_ECN];
        *b = (*b & !ECN_MASK) | (value & ECN_MASK);
    }
    pub fn set_total_len(&mut self, value: u16) {
        self.set_u16_at(field::LENGTH.start, value);
    }
    pub fn set_ident(&mut self, value: u16) {
        self.set_u16_at(field::IDENT.start, value);
    }
    pub fn set_reserved_flag(&mut self, value: bool) {
        self.set_flag(FLAG_RESERVED, value);
    }
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flag(FLAG_DF, value);
    }
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flag(FLAG_MF, value);
    }
    /// Fragment offset in bytes; stored as `value / 8` (13 bits).
    pub fn set_frag_offset(&mut self, value: u16) {
        let raw = self.u16_at(field::FLG_OFF.start);
        let raw = (raw & !FRAG_OFFSET_MASK) | ((value >> 3) & FRAG_OFFSET_MASK);
        self.set_u16_at(field::FLG_OFF.start, raw);
    }
    pub fn set_hop_limit(&mut self, value: u8) {
        self.b_mut()[field::TTL] = value;
    }
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.b_mut()[field::PROTOCOL] = value.0;
    }
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM.start, value);
    }
    pub fn set_src_addr(&mut self, value: Ipv4Addr) {
        self.b_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }
    pub fn set_dst_addr(&mut self, value: Ipv4Addr) {
        self.b_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }
    /// Mutable option bytes (empty if the header does not fit the buffer).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.header_len());
        self.b_mut().get_mut(HEADER_LEN..end).unwrap_or_default()
    }
    /// Mutable payload, `header_len..total_len` (set both first; empty if they do not fit).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = usize::from(self.header_len());
        let end = usize::from(self.total_len());
        self.b_mut().get_mut(start..end).unwrap_or_default()
    }

    /// Compute the header checksum over `header_len` bytes and write it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let end = usize::from(self.header_len());
        let sum = self.b().get(..end).map_or(0, checksum::data);
        self.set_checksum(!sum);
    }
}

/// The IPv4 header's meaning: no options, no fragmentation fields, no checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub next_header: IpProtocol,
    /// Bytes after the header: Total Length − IHL × 4. At most [`Repr::MAX_PAYLOAD_LEN`].
    pub payload_len: usize,
    /// TTL.
    pub hop_limit: u8,
    /// 0..=63
    pub dscp: u8,
    /// 0..=3
    pub ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
}

impl Repr {
    /// The largest payload an option-less IPv4 packet can carry.
    pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - HEADER_LEN;

    /// Read the header's meaning. `Malformed { Version }` unless version 4.
    ///
    /// The header checksum is not checked: call
    /// [`Packet::verify_checksum`] and report a mismatch. Options, MF, the
    /// fragment offset and the reserved flag are dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(WireError::Malformed {
                layer: Layer::Ipv4,
                offset: field::VER_IHL,
                reason: Malformed::Version {
                    found: packet.version(),
                    expected: 4,
                },
            });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.total_len())
                .saturating_sub(usize::from(packet.header_len())),
            hop_limit: packet.hop_limit(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// Always [`HEADER_LEN`]: `emit` writes no options.
    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN.saturating_add(self.payload_len)
    }

    /// Write the 20-byte header (IHL 5, MF 0, offset 0, reserved bit 0) and,
    /// if `mode.fill()`, its checksum (else 0). `packet` must hold
    /// [`HEADER_LEN`] bytes; the payload is not touched. A `payload_len`
    /// above [`Repr::MAX_PAYLOAD_LEN`] is written as Total Length 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        mode: ChecksumMode,
    ) {
        packet.b_mut()[..HEADER_LEN].fill(0);
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_dscp(self.dscp);
        packet.set_ecn(self.ecn);
        packet.set_total_len(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        packet.set_ident(self.ident);
        packet.set_dont_frag(self.dont_frag);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        if mode.fill() {
            packet.fill_checksum();
        }
    }
}

/// nom adapter used by `stack.rs`: takes `max(20, IHL × 4, Total Length)`
/// bytes (trailing Ethernet padding stays in the rest) and fails when fewer
/// remain. Call `check_len` on the result for the `Malformed` reasons.
#[allow(
    dead_code,
    reason = "nom seam for stack.rs, which checks lengths itself for now"
)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, fixed) = error::take_complete(i, HEADER_LEN)?;
    let fixed = Packet::new_unchecked(fixed);
    let len = HEADER_LEN
        .max(usize::from(fixed.header_len()))
        .max(usize::from(fixed.total_len()));
    let (rest, bytes) = error::take_complete(i, len)?;
    Ok((rest, Packet::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv4 src={} dst={} dscp={} ecn={} ttl={} id={:#06x} len={} proto={} df={}",
            self.src_addr,
            self.dst_addr,
            self.dscp,
            self.ecn,
            self.hop_limit,
            self.ident,
            self.buffer_len(),
            self.next_header,
            u8::from(self.dont_frag)
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Err(err) = self.check_len() {
            return write!(f, "IPv4 ({err})");
        }
        write!(
            f,
            "IPv4 src={} dst={} dscp={} ecn={} ttl={} id={:#06x} len={} proto={} df={}",
            self.src_addr(),
            self.dst_addr(),
            self.dscp(),
            self.ecn(),
            self.hop_limit(),
            self.ident(),
            self.total_len(),
            self.next_header(),
            u8::from(self.dont_frag())
        )?;
        if self.more_frags() || self.frag_offset() != 0 {
            write!(
                f,
                " mf={} frag_offset={}",
                u8::from(self.more_frags()),
                self.frag_offset()
            )?;
        }
        if !self.options().is_empty() {
            write!(f, " options={}", self.options().len())?;
        }
        write!(f, " checksum={:#06x}", self.checksum())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// IPv4 header of protocol.md §4.3 vector B.
    static BYTES: [u8; 20] = [
        0x45, // version 4, IHL 5
        0x01, // DSCP 0, ECN 1 (ECT(1))
        0x00, 0x40, // total length 64
        0x04, 0x78, // identification 1144
        0x40, 0x00, // reserved 0, DF 1, MF 0, fragment offset 0
        0x40, // TTL 64
        0x11, // protocol 17 (UDP)
        0xb4, 0xd5, // header checksum 0xB4D5
        0xc0, 0xa8, 0x00, 0x07, // source 192.168.0.7
        0xc0, 0xa8, 0x00, 0x07, // destination 192.168.0.7
    ];

    /// The rest of vector B after the IPv4 header: UDP, BTH, payload + pad, ICRC (44 bytes).
    static VECTOR_B_L4: [u8; 44] = [
        0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac,
        0xa2, // UDP 49152 -> 4791, len 44, csum 0xACA2
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, // BTH
        0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50, 0x54, 0x01, 0xbe,
        0x88, 0x5e, 0x50, 0x00, 0x00, // 18 payload bytes + 2 pad
        0x78, 0xf3, 0x53, 0xf3, // ICRC
    ];

    fn vector_b() -> [u8; 64] {
        let mut frame = [0u8; 64];
        frame[..20].copy_from_slice(&BYTES);
        frame[20..].copy_from_slice(&VECTOR_B_L4);
        frame
    }

    fn repr() -> Repr {
        Repr {
            src_addr: Ipv4Addr::new(192, 168, 0, 7),
            dst_addr: Ipv4Addr::new(192, 168, 0, 7),
            next_header: IpProtocol::UDP,
            payload_len: 44,
            hop_limit: 64,
            dscp: 0,
            ecn: 1,
            ident: 1144,
            dont_frag: true,
        }
    }

    #[test]
    fn test_deconstruct() {
        let frame = vector_b();
        let p = Packet::new_checked(&frame[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.dscp(), 0);
        assert_eq!(p.ecn(), 1);
        assert_eq!(p.total_len(), 64);
        assert_eq!(p.ident(), 1144);
        assert!(!p.reserved_flag());
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.checksum(), 0xb4d5);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 7));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 7));
        assert!(p.options().is_empty());
        assert_eq!(p.payload(), &VECTOR_B_L4[..]);
        assert!(p.verify_checksum());
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 64];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version(4);
        p.set_header_len(20);
        p.set_dscp(0);
        p.set_ecn(1);
        p.set_total_len(64);
        p.set_ident(1144);
        p.set_reserved_flag(false);
        p.set_dont_frag(true);
        p.set_more_frags(false);
        p.set_frag_offset(0);
        p.set_hop_limit(64);
        p.set_next_header(IpProtocol::UDP);
        p.set_src_addr(Ipv4Addr::new(192, 168, 0, 7));
        p.set_dst_addr(Ipv4Addr::new(192, 168, 0, 7));
        p.fill_checksum();
        p.payload_mut().copy_from_slice(&VECTOR_B_L4);
        assert_eq!(buf, vector_b());
    }

    #[test]
    fn test_setters_keep_other_bits() {
        let mut buf = BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_dscp(0xFF); // masked to 6 bits
        assert_eq!((p.dscp(), p.ecn()), (0x3F, 1));
        p.set_ecn(0xFE); // masked to 2 bits
        assert_eq!((p.dscp(), p.ecn()), (0x3F, 2));
        p.set_frag_offset(0xFFFF);
        assert!(p.dont_frag() && !p.more_frags() && !p.reserved_flag());
        assert_eq!(p.frag_offset(), 0xFFF8);
        p.set_more_frags(true);
        assert_eq!(p.frag_offset(), 0xFFF8);
        p.set_header_len(24);
        assert_eq!((p.version(), p.header_len()), (4, 24));
    }

    #[test]
    fn test_parse() {
        let frame = vector_b();
        let p = Packet::new_unchecked(&frame[..]);
        assert_eq!(Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_parse_bad_checksum_is_not_an_error() {
        let mut frame = vector_b();
        frame[11] ^= 0x01;
        let p = Packet::new_checked(&frame[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_parse_version() {
        let mut frame = vector_b();
        frame[0] = 0x65;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&frame[..])),
            Err(WireError::Malformed {
                layer: Layer::Ipv4,
                offset: 0,
                reason: Malformed::Version {
                    found: 6,
                    expected: 4
                }
            })
        );
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 64];
        buf[20..].copy_from_slice(&VECTOR_B_L4);
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]), ChecksumMode::Both);
        assert_eq!(buf, vector_b());
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]), ChecksumMode::Rx);
        assert_eq!(Packet::new_unchecked(&buf[..]).checksum(), 0);
        assert_eq!(repr().buffer_len(), 64);
    }

    #[test]
    fn test_fill_checksum() {
        let mut buf = BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_checksum(0x1234);
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xb4d5);
        assert!(p.verify_checksum());
    }

    #[test]
    fn test_truncated() {
        let frame = vector_b();
        let err = Packet::new_checked(&frame[..7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated IPv4 at offset 0: need 20 bytes, have 7"
        );
        // header present, packet cut short
        let err = Packet::new_checked(&frame[..40]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated IPv4 at offset 0: need 64 bytes, have 40"
        );
    }

    #[test]
    fn test_check_len_order() {
        let mut frame = vector_b();
        frame[0] = 0x44; // IHL 4
        assert_eq!(
            Packet::new_checked(&frame[..]).unwrap_err(),
            WireError::Malformed {
                layer: Layer::Ipv4,
                offset: 0,
                reason: Malformed::HeaderLength { value: 16, min: 20 }
            }
        );
        frame[0] = 0x4F; // IHL 15 = 60 bytes, total length 64: fits
        assert!(Packet::new_checked(&frame[..]).is_ok());
        assert_eq!(
            Packet::new_checked(&frame[..40]).unwrap_err().to_string(),
            "truncated IPv4 at offset 0: need 60 bytes, have 40"
        );
        frame[0] = 0x45;
        frame[2..4].copy_from_slice(&19u16.to_be_bytes()); // total length < header
        assert_eq!(
            Packet::new_checked(&frame[..]).unwrap_err(),
            WireError::Malformed {
                layer: Layer::Ipv4,
                offset: 2,
                reason: Malformed::LengthTooShort {
                    value: 19,
                    need: 20
                }
            }
        );
    }

    #[test]
    fn test_padding_ignored() {
        // an Ethernet minimum-size frame carries padding after Total Length
        let mut buf = [0u8; 46];
        buf[..20].copy_from_slice(&BYTES);
        buf[2..4].copy_from_slice(&28u16.to_be_bytes());
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload().len(), 8);
        let (rest, q) = parse(&buf).unwrap();
        assert_eq!(rest.len(), 18);
        assert_eq!(q.into_inner().len(), 28);
    }

    #[test]
    fn test_options() {
        let mut buf = [0u8; 28];
        buf[..20].copy_from_slice(&BYTES);
        buf[0] = 0x46; // IHL 6
        buf[2..4].copy_from_slice(&28u16.to_be_bytes());
        buf[20..24].copy_from_slice(&[0x01, 0x01, 0x01, 0x00]); // NOP NOP NOP EOL
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.fill_checksum();
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.options(), &[0x01, 0x01, 0x01, 0x00]);
        assert_eq!(p.payload().len(), 4);
        assert_eq!(Repr::parse(&p).unwrap().payload_len, 4);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "IPv4 src=192.168.0.7 dst=192.168.0.7 dscp=0 ecn=1 ttl=64 id=0x0478 len=64 proto=UDP df=1"
        );
        let frame = vector_b();
        assert_eq!(
            Packet::new_unchecked(&frame[..]).to_string(),
            "IPv4 src=192.168.0.7 dst=192.168.0.7 dscp=0 ecn=1 ttl=64 id=0x0478 len=64 proto=UDP df=1 checksum=0xb4d5"
        );
        assert_eq!(
            Packet::new_unchecked(&frame[..3]).to_string(),
            "IPv4 (truncated IPv4 at offset 0: need 20 bytes, have 3)"
        );
        assert_eq!(IpProtocol(200).to_string(), "0xc8");
    }

    proptest! {
        #[test]
        fn roundtrip_ipv4(repr in crate::strategy::ipv4()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]), ChecksumMode::Both);
            let packet = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(packet.verify_checksum());
            prop_assert_eq!(Repr::parse(&packet), Ok(repr));
        }

        #[test]
        fn roundtrip_ipv4_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            // canonical: version 4, IHL 5, no payload, MF/offset/reserved zero, checksum filled
            bytes[field::VER_IHL] = 0x45;
            bytes[field::LENGTH].copy_from_slice(&20u16.to_be_bytes());
            bytes[field::FLG_OFF.start] &= 0x40;
            bytes[field::FLG_OFF.end - 1] = 0;
            Packet::new_unchecked(&mut bytes[..]).fill_checksum();
            let repr = Repr::parse(&Packet::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut out[..]), ChecksumMode::Both);
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn roundtrip_ipv4_any_bytes_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Packet::new_checked(&bytes[..]) {
                let _ = (p.options(), p.payload(), p.verify_checksum(), p.to_string());
                let _ = Repr::parse(&p);
            }
            let _ = parse(&bytes);
        }
    }
}
