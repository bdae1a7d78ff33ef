//! Whole-frame dissection: the only place that composes the per-header parsers.
//!
//! [`dissect`] is strict (the first problem is an `Err`); [`dissect_lax`] keeps
//! every layer that parsed, continues past a cut-short length field with the
//! bytes that are there, and returns the first problem beside the result.
//! Both borrow the frame: no copies, no allocation.

// Indexing cannot panic here: every index follows a length check (`new_checked`, `get`) in the same
// function; `vlan_tags` is indexed below MAX_VLANS.
#![allow(clippy::indexing_slicing)]

use core::ops::Range;

use crate::cm::{self, CmMessage};
use crate::encap::{self, Inner, erspan, gre, mpls, vxlan};
use crate::error::{Layer, Malformed, Result, WireError};
use crate::ethernet::{self, EtherType};
use crate::ib::opcode::{ExtHeader, OpcodeInfo, Operation, Transport};
use crate::ib::{bth, lrh, mad};
use crate::icrc::{self, Encapsulation, ICRC_LEN, IcrcStatus};
use crate::ipv4::{self, IpProtocol};
use crate::{Opcode, Qpn};
use crate::{erf, grh, ipoib, ipv6, mac_control, sll, sll2, tcp, tcp_bth, udp, vlan};

/// At most this many VLAN tags are decoded (more are reported as unsupported).
pub const MAX_VLANS: usize = 4;
/// RoCEv2's UDP destination port.
pub const ROCEV2_PORT: u16 = 4791;

/// How to dissect: which UDP destination ports carry RoCEv2 besides 4791,
/// and the ExID of the `tcp_bth` TCP option (tcp_bth.md §c.1).
#[derive(Debug, Clone, Copy)]
pub struct DissectOptions<'p> {
    pub roce_ports: &'p [u16],
    /// Default [`tcp_bth::TCP_BTH_EXID_DEFAULT`] (0xEFAB).
    pub tcp_bth_exid: u16,
    /// Decode the RD opcode range (0x40–0x5F) as IBA Reliable Datagram instead of NVIDIA DC
    /// (`--rd-as rd`; no hardware implements RD, so DC is the default).
    pub rd_as_rd: bool,
}

impl DissectOptions<'static> {
    /// RoCEv2 on port 4791 only, the default tcp_bth ExID.
    pub const DEFAULT: DissectOptions<'static> = DissectOptions {
        roce_ports: &[],
        tcp_bth_exid: tcp_bth::TCP_BTH_EXID_DEFAULT,
        rd_as_rd: false,
    };
}

impl Default for DissectOptions<'_> {
    fn default() -> Self {
        DissectOptions::DEFAULT
    }
}

/// What `dissect` and `dissect_lax` use: a static, so no per-frame copy of it
/// is built on the stack and read straight back (that store-to-load stall
/// was a measurable share of an ACK's dissection).
static DEFAULT_OPTIONS: DissectOptions<'static> = DissectOptions::DEFAULT;

impl DissectOptions<'_> {
    #[inline]
    fn is_roce_port(&self, port: u16) -> bool {
        port == ROCEV2_PORT || self.roce_ports.contains(&port)
    }
}

/// Where the frame's bytes start (see [`crate::link::LinkType::start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// An Ethernet II header (pcap link type 1).
    Ethernet,
    /// A Linux cooked capture v1 header, then the network layer of its protocol (113).
    Sll,
    /// A Linux cooked capture v2 header, then the network layer of its protocol (276).
    Sll2,
    /// Directly at a network-layer header of this EtherType (Linux SLL/SLL2 payloads, and
    /// the IPv4-only / IPv6-only raw link types 228 and 229).
    EtherType(EtherType),
    /// Raw IP, IPv4 or IPv6 by the first nibble (link type 101, or 12/14).
    RawIp,
    /// A BSD loopback header: a 4-byte address family, in network order (LOOP, 108) or in
    /// the capturing host's, guessed from the value (NULL, 0).
    Null { network_order: bool },
    /// An ERF record (link type 197): its header, extension headers and subheader, then the
    /// packet its type names (InfiniBand, Ethernet, IPv4, IPv6).
    Erf,
    /// A native InfiniBand packet starting at the LRH (`LINKTYPE_INFINIBAND`, 247).
    Infiniband,
    /// IP over InfiniBand (242): a 40-byte pseudo header, the IPoIB header, then IPv4, IPv6
    /// or ARP.
    Ipoib,
}

/// BSD address families of IPv6 (NetBSD/OpenBSD, FreeBSD, Darwin); 2 is IPv4 everywhere.
const BSD_AF_INET6: [u32; 3] = [24, 28, 30];

/// The EtherType a BSD loopback header's address family stands for.
fn null_family(b: [u8; 4], network_order: bool) -> Option<EtherType> {
    let be = u32::from_be_bytes(b);
    let le = u32::from_le_bytes(b);
    // NULL is in the capturing host's order: the family is a small number either way
    let af = if network_order || be <= 0xFFFF {
        be
    } else {
        le
    };
    match af {
        2 => Some(EtherType::IPV4),
        a if BSD_AF_INET6.contains(&a) => Some(EtherType::IPV6),
        _ => None,
    }
}

/// Bytes of a BSD loopback header.
pub const NULL_HEADER_LEN: usize = 4;

/// One VLAN tag with the TPID that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag<'a> {
    pub tpid: EtherType,
    pub header: vlan::Header<&'a [u8]>,
    /// Offset of the TPID in the frame (0 when the TPID was the `Start::EtherType`).
    pub offset: usize,
}

/// The layer after Ethernet/VLAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network<'a> {
    Ipv4(ipv4::Packet<&'a [u8]>),
    Ipv6(ipv6::Packet<&'a [u8]>),
    /// RoCEv1 Global Route Header.
    Grh(grh::Packet<&'a [u8]>),
    /// 802.3x PAUSE / 802.1Qbb PFC and other MAC Control frames.
    MacControl(mac_control::Packet<&'a [u8]>),
}

/// RoCE version of a transport packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoceVersion {
    V1,
    V2,
    /// Native InfiniBand (LRH, maybe a GRH, then the BTH): no RoCE at all, but the same
    /// transport.
    Ib,
}

/// The kind of one layer an encapsulated frame is wrapped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OuterKind {
    /// An Ethernet header with its VLAN tags.
    Ethernet,
    Ipv4,
    Ipv6,
    Udp,
    Gre,
    Erspan,
    Vxlan,
    Geneve,
    Mpls,
}

/// One outer layer of an encapsulated frame: what it is, where, and its bytes (the header
/// only, as far as captured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OuterLayer<'a> {
    pub kind: OuterKind,
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// Outer layers listed at most (four encapsulations of Ethernet, IP, UDP or GRE, and the
/// tunnel's own header).
pub const MAX_OUTER: usize = 20;

/// The outer layers of a frame, outermost first (see [`Dissected::outer_layers`]).
#[derive(Debug, Clone, Copy)]
pub struct OuterLayers<'a> {
    items: [Option<OuterLayer<'a>>; MAX_OUTER],
    len: usize,
}

impl<'a> OuterLayers<'a> {
    fn push(&mut self, kind: OuterKind, frame: &'a [u8], offset: usize, len: usize) -> bool {
        let Some(bytes) = frame.get(offset..offset + len) else {
            return false;
        };
        if self.len == MAX_OUTER {
            return false;
        }
        self.items[self.len] = Some(OuterLayer {
            kind,
            offset,
            bytes,
        });
        self.len += 1;
        true
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = OuterLayer<'a>> + '_ {
        self.items[..self.len].iter().flatten().copied()
    }
}

/// An opcode's name as [`Roce::opcode_label`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpcodeLabel(Option<&'static str>, Opcode);

impl core::fmt::Display for OpcodeLabel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.1),
        }
    }
}

/// The extension headers of one packet, as laid out by the opcode table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeaders<'a> {
    /// Bytes of the extension headers present in the capture.
    bytes: &'a [u8],
    /// Offset of `bytes` in the frame.
    offset: usize,
    list: &'static [ExtHeader],
}

impl<'a> ExtHeaders<'a> {
    const EMPTY: ExtHeaders<'static> = ExtHeaders {
        bytes: &[],
        offset: 0,
        list: &[],
    };

    /// The headers the opcode calls for, in wire order (even those cut off).
    #[must_use]
    pub fn list(&self) -> &'static [ExtHeader] {
        self.list
    }

    /// Byte range of `which` in the frame, and its bytes, when fully captured.
    #[must_use]
    pub fn locate(&self, which: ExtHeader) -> Option<(Range<usize>, &'a [u8])> {
        let mut at = 0;
        for &h in self.list {
            if h == which {
                let bytes = self.bytes.get(at..at + h.wire_len())?;
                return Some((self.offset + at..self.offset + at + h.wire_len(), bytes));
            }
            at += h.wire_len();
        }
        None
    }

    fn get(&self, which: ExtHeader) -> Option<&'a [u8]> {
        self.locate(which).map(|(_, b)| b)
    }

    #[must_use]
    pub fn rdeth(&self) -> Option<crate::ib::rdeth::Header<&'a [u8]>> {
        self.get(ExtHeader::Rdeth)
            .map(crate::ib::rdeth::Header::new_unchecked)
    }
    #[must_use]
    pub fn deth(&self) -> Option<crate::ib::deth::Header<&'a [u8]>> {
        self.get(ExtHeader::Deth)
            .map(crate::ib::deth::Header::new_unchecked)
    }
    #[must_use]
    pub fn xrceth(&self) -> Option<crate::ib::xrceth::Header<&'a [u8]>> {
        self.get(ExtHeader::XrcEth)
            .map(crate::ib::xrceth::Header::new_unchecked)
    }
    #[must_use]
    pub fn reth(&self) -> Option<crate::ib::reth::Header<&'a [u8]>> {
        self.get(ExtHeader::Reth)
            .map(crate::ib::reth::Header::new_unchecked)
    }
    #[must_use]
    pub fn atomic_eth(&self) -> Option<crate::ib::atomic_eth::Header<&'a [u8]>> {
        self.get(ExtHeader::AtomicEth)
            .map(crate::ib::atomic_eth::Header::new_unchecked)
    }
    #[must_use]
    pub fn aeth(&self) -> Option<crate::ib::aeth::Header<&'a [u8]>> {
        self.get(ExtHeader::Aeth)
            .map(crate::ib::aeth::Header::new_unchecked)
    }
    #[must_use]
    pub fn atomic_ack_eth(&self) -> Option<crate::ib::atomic_ack_eth::Header<&'a [u8]>> {
        self.get(ExtHeader::AtomicAckEth)
            .map(crate::ib::atomic_ack_eth::Header::new_unchecked)
    }
    #[must_use]
    pub fn immdt(&self) -> Option<crate::ib::immdt::Header<&'a [u8]>> {
        self.get(ExtHeader::ImmDt)
            .map(crate::ib::immdt::Header::new_unchecked)
    }
    #[must_use]
    pub fn ieth(&self) -> Option<crate::ib::ieth::Header<&'a [u8]>> {
        self.get(ExtHeader::Ieth)
            .map(crate::ib::ieth::Header::new_unchecked)
    }
    #[must_use]
    pub fn dc(&self) -> Option<crate::ib::dc::Header<&'a [u8]>> {
        self.get(ExtHeader::Dc)
            .map(crate::ib::dc::Header::new_unchecked)
    }
    #[must_use]
    pub fn dcceth(&self) -> Option<crate::ib::dc::dcceth::Header<&'a [u8]>> {
        self.get(ExtHeader::Dcceth)
            .map(crate::ib::dc::dcceth::Header::new_unchecked)
    }
    #[must_use]
    pub fn feth(&self) -> Option<crate::ib::feth::Header<&'a [u8]>> {
        self.get(ExtHeader::Feth)
            .map(crate::ib::feth::Header::new_unchecked)
    }
    #[must_use]
    pub fn cnp(&self) -> Option<crate::ib::cnp::Header<&'a [u8]>> {
        self.get(ExtHeader::CnpPad)
            .map(crate::ib::cnp::Header::new_unchecked)
    }
}

/// The InfiniBand transport part of a RoCE frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roce<'a> {
    pub version: RoceVersion,
    pub bth: bth::Header<&'a [u8]>,
    /// Offset of the BTH in the frame.
    pub bth_offset: usize,
    /// The opcode's table row; `None` for reserved, unknown and vendor opcodes,
    /// whose bytes after the BTH are all kept in `payload`.
    pub info: Option<&'static OpcodeInfo>,
    pub exts: ExtHeaders<'a>,
    /// Payload bytes that were captured (fewer than `payload_len` when cut short).
    pub payload: &'a [u8],
    /// Offset of the payload in the frame.
    pub payload_offset: usize,
    /// Payload length from the IP/UDP/GRH length fields, whatever was captured.
    pub payload_len: usize,
    /// Pad bytes (PadCnt of them) when captured.
    pub pad: &'a [u8],
    /// The ICRC field as on the wire, when captured.
    pub icrc: Option<[u8; 4]>,
    /// Network header through ICRC, when the frame holds all of it and the
    /// lengths are consistent: what the ICRC check runs over.
    covered: Option<&'a [u8]>,
    encapsulation: Encapsulation,
}

impl<'a> Roce<'a> {
    #[must_use]
    pub fn opcode(&self) -> Opcode {
        self.bth.opcode()
    }

    /// Verify the ICRC (cheap to skip: it is only computed when asked).
    #[must_use]
    pub fn icrc_status(&self) -> IcrcStatus {
        match self.covered {
            Some(bytes) => icrc::verify(self.encapsulation, bytes),
            None => IcrcStatus::NotVerifiable,
        }
    }

    /// The CM message of a UD SEND to QP1 (parsed on demand: most frames
    /// are not CM, and the message is large to carry around).
    #[must_use]
    pub fn cm(&self) -> Option<CmMessage> {
        let is_send = self.info.is_some_and(|i| i.operation == Operation::Send);
        let exts_whole = self
            .exts
            .list()
            .last()
            .is_none_or(|h| self.exts.locate(*h).is_some());
        if is_send && self.bth.dest_qp() == Qpn::GSI && exts_whole {
            cm::parse_mad(self.payload).ok().flatten()
        } else {
            None
        }
    }

    /// The IPoIB header at the start of a UD SEND's payload to a QP other than QP0/QP1 (IP
    /// over InfiniBand on the wire), by tshark's heuristic.
    #[must_use]
    pub fn ipoib(&self) -> Option<ipoib::Header<'a>> {
        let ud_send = self
            .info
            .is_some_and(|i| i.operation == Operation::Send && self.exts.deth().is_some());
        let qp = self.bth.dest_qp();
        if ud_send && qp != Qpn::GSI && qp != Qpn::SMI {
            ipoib::Header::in_payload(self.payload)
        } else {
            None
        }
    }

    /// The management datagram's common header of a SEND to QP0 or QP1 (SMPs, SA, PerfMgt,
    /// CM, … on native InfiniBand and RoCE alike), when its 24 bytes were captured.
    #[must_use]
    pub fn mad(&self) -> Option<mad::Header<&'a [u8]>> {
        let is_send = self.info.is_some_and(|i| i.operation == Operation::Send);
        let exts_whole = self
            .exts
            .list()
            .last()
            .is_none_or(|h| self.exts.locate(*h).is_some());
        let qp = self.bth.dest_qp();
        if is_send && (qp == Qpn::GSI || qp == Qpn::SMI) && exts_whole {
            mad::Header::new_checked(self.payload).ok()
        } else {
            None
        }
    }

    /// The opcode's name from the table it was decoded with (`DC_…` for NVIDIA DC on the RD
    /// range), `UNKNOWN(0xNN)` outside it.
    #[must_use]
    pub fn opcode_label(&self) -> OpcodeLabel {
        OpcodeLabel(self.info.map(|i| i.name), self.bth.opcode())
    }

    /// The ICRC field read little-endian (how the CRC value is stored on the wire).
    #[must_use]
    pub fn icrc_value(&self) -> Option<u32> {
        self.icrc.map(u32::from_le_bytes)
    }
}

/// A `tcp_bth` option found in a TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpBth<'a> {
    /// The option (kind through its last byte); its length byte is 4, 24 or 28.
    pub header: tcp_bth::Header<&'a [u8]>,
    /// Offset of the option's kind byte in the frame.
    pub offset: usize,
    /// The TCP payload as captured.
    pub payload: &'a [u8],
    /// Whether the whole payload (per the IP length) was captured.
    pub payload_complete: bool,
}

impl TcpBth<'_> {
    /// The v1 ICRC verdict (§c.6); `NotVerifiable` for the SYN and enf
    /// forms and for a cut-short payload (a snaplen capture: "skipped").
    #[must_use]
    pub fn icrc_status(&self, algorithm: tcp_bth::IcrcAlgorithm) -> IcrcStatus {
        if self.payload_complete {
            self.header.verify_icrc(self.payload, algorithm)
        } else {
            IcrcStatus::NotVerifiable
        }
    }
}

/// Everything that was decoded from one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dissected<'a> {
    pub frame: &'a [u8],
    /// Bytes of a link-layer header that is not Ethernet (a cooked capture's), 0 for none.
    pub link_header_len: u8,
    pub eth: Option<ethernet::Frame<&'a [u8]>>,
    /// (TPID, offset of the tag's TCI) per VLAN tag, outermost first; kept
    /// compact because every frame carries this struct.
    vlan_tags: [(EtherType, u16); MAX_VLANS],
    vlan_count: u8,
    /// The innermost EtherType, when the Ethernet/VLAN headers were read.
    pub ethertype: Option<EtherType>,
    /// Offset of the network header.
    pub network_offset: usize,
    pub network: Option<Network<'a>>,
    pub udp: Option<udp::Packet<&'a [u8]>>,
    pub udp_offset: usize,
    pub roce: Option<Roce<'a>>,
    /// The TCP segment as captured (clipped to the IP length).
    pub tcp: Option<tcp::Packet<&'a [u8]>>,
    pub tcp_offset: usize,
    /// Segment length per the IP length fields (header + payload).
    tcp_len: u32,
    /// Offset of the `tcp_bth` option in the frame; 0 when there is none.
    tcp_bth_offset: u16,
    /// The frame starts with an ERF record header (its length is `link_header_len`).
    erf: bool,
    /// Offset of a native InfiniBand LRH.
    lrh_at: Option<u16>,
    /// The RD opcode range is IBA RD, not NVIDIA DC ([`DissectOptions::rd_as_rd`]).
    rd_as_rd: bool,
    /// Offset of the (innermost) Ethernet header.
    pub eth_at: u16,
    /// Offset of the innermost frame of an encapsulated one (0: not encapsulated); its
    /// outer layers are listed by [`Dissected::outer_layers`].
    inner_at: u16,
    encap_depth: u8,
    /// Where the walk started (to list the outer layers again).
    start: Start,
}

impl<'a> Dissected<'a> {
    /// Nothing dissected yet: what [`walk_into`] (or [`walk_unwalked`]) starts from.
    pub fn unwalked(frame: &'a [u8], start: Start, options: &DissectOptions<'_>) -> Self {
        Dissected {
            rd_as_rd: options.rd_as_rd,
            start,
            ..Dissected::empty(frame)
        }
    }

    fn empty(frame: &'a [u8]) -> Self {
        Dissected {
            frame,
            erf: false,
            lrh_at: None,
            rd_as_rd: false,
            eth_at: 0,
            inner_at: 0,
            encap_depth: 0,
            start: Start::Ethernet,
            link_header_len: 0,
            eth: None,
            vlan_tags: [(EtherType(0), 0); MAX_VLANS],
            vlan_count: 0,
            ethertype: None,
            network_offset: 0,
            network: None,
            udp: None,
            udp_offset: 0,
            roce: None,
            tcp: None,
            tcp_offset: 0,
            tcp_len: 0,
            tcp_bth_offset: 0,
        }
    }

    /// The ERF record header, when the frame is an ERF record.
    #[must_use]
    pub fn erf(&self) -> Option<erf::Header<&'a [u8]>> {
        self.erf
            .then(|| self.frame.get(..erf::HEADER_LEN))
            .flatten()
            .map(erf::Header::new_unchecked)
    }

    /// The IPoIB header of a link-type-242 frame (after its 40-byte pseudo header).
    #[must_use]
    pub fn ipoib(&self) -> Option<ipoib::Header<'a>> {
        if self.start != Start::Ipoib {
            return None;
        }
        ipoib::Header::new_checked(self.frame.get(ipoib::PSEUDO_LEN..)?).ok()
    }

    /// The LRH of a native packet, with its offset.
    #[must_use]
    pub fn lrh(&self) -> Option<(usize, lrh::Header<&'a [u8]>)> {
        let at = usize::from(self.lrh_at?);
        let bytes = self.frame.get(at..at + lrh::HEADER_LEN)?;
        Some((at, lrh::Header::new_unchecked(bytes)))
    }

    /// The VCRC of a native packet: its offset and wire bytes, when captured.
    #[must_use]
    pub fn vcrc(&self) -> Option<(usize, [u8; 2])> {
        let (at, lrh) = self.lrh()?;
        let end = at + lrh.pkt_bytes();
        let b = self.frame.get(end..end + lrh::VCRC_LEN)?;
        Some((end, [b[0], b[1]]))
    }

    /// The VCRC verdict of a native packet (`NotVerifiable` without one).
    #[must_use]
    pub fn vcrc_status(&self) -> IcrcStatus {
        match (self.lrh(), self.vcrc()) {
            (Some((at, _)), Some((end, _))) => {
                icrc::verify_vcrc(&self.frame[at..end + lrh::VCRC_LEN])
            }
            _ => IcrcStatus::NotVerifiable,
        }
    }

    /// Whether the frame was encapsulated (its top-level layers are the innermost frame's).
    #[must_use]
    pub fn is_encapsulated(&self) -> bool {
        self.inner_at != 0
    }

    /// The layers the innermost frame is wrapped in, outermost first (empty for a frame that
    /// is not encapsulated). They are found again from the bytes (the walk keeps only where
    /// the innermost frame starts), with the same decisions as the walk.
    #[must_use]
    pub fn outer_layers(&self) -> OuterLayers<'a> {
        let mut out = OuterLayers {
            items: [None; MAX_OUTER],
            len: 0,
        };
        let end = usize::from(self.inner_at);
        if end == 0 {
            return out;
        }
        let f = self.frame;
        let lh = usize::from(self.link_header_len);
        let be16 = |at: usize| f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        let by_nibble = |at: usize| match f.get(at).map(|b| b >> 4) {
            Some(4) => Inner::Network(EtherType::IPV4, at),
            Some(6) => Inner::Network(EtherType::IPV6, at),
            _ => Inner::None,
        };
        let mut next = match self.start {
            Start::Ethernet => Inner::Ethernet(0),
            Start::Erf => match self.erf().map(|e| e.payload_kind()) {
                Some(erf::Payload::Ethernet) => Inner::Ethernet(lh),
                Some(erf::Payload::Ipv4) => Inner::Network(EtherType::IPV4, lh),
                Some(erf::Payload::Ipv6) => Inner::Network(EtherType::IPV6, lh),
                _ => Inner::None,
            },
            Start::Sll => be16(14).map_or(Inner::None, |t| Inner::Network(EtherType(t), lh)),
            Start::Sll2 => be16(0).map_or(Inner::None, |t| Inner::Network(EtherType(t), lh)),
            Start::Null { network_order } => f
                .get(..NULL_HEADER_LEN)
                .and_then(|b| null_family([b[0], b[1], b[2], b[3]], network_order))
                .map_or(Inner::None, |t| Inner::Network(t, NULL_HEADER_LEN)),
            Start::RawIp => by_nibble(0),
            Start::EtherType(t) => Inner::Network(t, 0),
            Start::Infiniband => Inner::None,
            Start::Ipoib => be16(ipoib::PSEUDO_LEN).map_or(Inner::None, |t| {
                Inner::Network(EtherType(t), ipoib::PSEUDO_LEN + ipoib::HEADER_LEN)
            }),
        };
        loop {
            next = match next {
                Inner::None => break,
                Inner::Ethernet(a) | Inner::Network(_, a) if a >= end => break,
                Inner::Ethernet(a) => {
                    let mut t = be16(a + 12).map(EtherType);
                    let mut b = a + ethernet::HEADER_LEN;
                    let mut tags = 0;
                    while let Some(tt) = t.filter(|t| t.is_vlan_tpid() && tags < MAX_VLANS) {
                        let _ = tt;
                        t = be16(b + 2).map(EtherType);
                        b += vlan::HEADER_LEN;
                        tags += 1;
                    }
                    if !out.push(OuterKind::Ethernet, f, a, b - a) {
                        break;
                    }
                    t.map_or(Inner::None, |t| Inner::Network(t, b))
                }
                Inner::Network(EtherType::MPLS | EtherType::MPLS_MULTICAST, a) => {
                    let Ok(n) = mpls::stack_len(f.get(a..).unwrap_or(&[])) else {
                        break;
                    };
                    if !out.push(OuterKind::Mpls, f, a, n) {
                        break;
                    }
                    encap::after_mpls(f, a).unwrap_or(Inner::None)
                }
                Inner::Network(t @ (EtherType::IPV4 | EtherType::IPV6), a) => {
                    let (kind, len, proto) = if t == EtherType::IPV4 {
                        let ihl = f.get(a).map_or(0, |b| usize::from(b & 0x0F) * 4);
                        (OuterKind::Ipv4, ihl, f.get(a + 9).copied())
                    } else {
                        (OuterKind::Ipv6, ipv6::HEADER_LEN, f.get(a + 6).copied())
                    };
                    if len == 0 || !out.push(kind, f, a, len) {
                        break;
                    }
                    let pay = a + len;
                    match proto.map(IpProtocol) {
                        Some(IpProtocol::GRE) => {
                            let Ok(g) = gre::Header::new_checked(f.get(pay..).unwrap_or(&[]))
                            else {
                                break;
                            };
                            let after = pay + g.header_len();
                            if !out.push(OuterKind::Gre, f, pay, g.header_len()) {
                                break;
                            }
                            let erspan = matches!(g.protocol(), gre::proto::ERSPAN_22EB)
                                || (g.protocol() == gre::proto::ERSPAN_88BE
                                    && g.has(gre::FLAG_SEQUENCE));
                            if erspan {
                                let Ok(e) =
                                    erspan::Header::new_checked(f.get(after..).unwrap_or(&[]))
                                else {
                                    break;
                                };
                                if !out.push(OuterKind::Erspan, f, after, e.header_len()) {
                                    break;
                                }
                            }
                            encap::after_gre(f, pay).unwrap_or(Inner::None)
                        }
                        Some(IpProtocol::UDP) => {
                            if !out.push(OuterKind::Udp, f, pay, udp::HEADER_LEN) {
                                break;
                            }
                            let tunnel = pay + udp::HEADER_LEN;
                            match be16(pay + 2) {
                                Some(vxlan::VXLAN_PORT) => {
                                    if !out.push(OuterKind::Vxlan, f, tunnel, vxlan::HEADER_LEN) {
                                        break;
                                    }
                                    encap::after_udp_tunnel(f, tunnel, false).unwrap_or(Inner::None)
                                }
                                Some(vxlan::GENEVE_PORT) => {
                                    let Ok(g) =
                                        vxlan::Geneve::new_checked(f.get(tunnel..).unwrap_or(&[]))
                                    else {
                                        break;
                                    };
                                    if !out.push(OuterKind::Geneve, f, tunnel, g.header_len()) {
                                        break;
                                    }
                                    encap::after_udp_tunnel(f, tunnel, true).unwrap_or(Inner::None)
                                }
                                _ => Inner::None,
                            }
                        }
                        Some(IpProtocol::IPIP) => Inner::Network(EtherType::IPV4, pay),
                        Some(IpProtocol::IPV6) => Inner::Network(EtherType::IPV6, pay),
                        _ => Inner::None,
                    }
                }
                Inner::Network(..) => Inner::None,
            };
        }
        out
    }

    /// The VLAN tags, outermost first.    /// The VLAN tags, outermost first.
    pub fn vlans(&self) -> impl Iterator<Item = VlanTag<'a>> + '_ {
        let frame = self.frame;
        self.vlan_tags[..usize::from(self.vlan_count)]
            .iter()
            .map(move |&(tpid, tci)| {
                let tci = usize::from(tci);
                VlanTag {
                    tpid,
                    header: vlan::Header::new_unchecked(&frame[tci..tci + vlan::HEADER_LEN]),
                    // 0 for a tag whose TPID came from `Start::EtherType`, not the frame
                    offset: tci.saturating_sub(2),
                }
            })
    }

    #[must_use]
    pub fn ipv4(&self) -> Option<&ipv4::Packet<&'a [u8]>> {
        match &self.network {
            Some(Network::Ipv4(p)) => Some(p),
            _ => None,
        }
    }

    #[must_use]
    pub fn ipv6(&self) -> Option<&ipv6::Packet<&'a [u8]>> {
        match &self.network {
            Some(Network::Ipv6(p)) => Some(p),
            _ => None,
        }
    }

    #[must_use]
    pub fn mac_control(&self) -> Option<&mac_control::Packet<&'a [u8]>> {
        match &self.network {
            Some(Network::MacControl(p)) => Some(p),
            _ => None,
        }
    }

    /// The `tcp_bth` option of a TCP segment, if it has one with the configured ExID.
    #[must_use]
    pub fn tcp_bth(&self) -> Option<TcpBth<'a>> {
        if self.tcp_bth_offset == 0 {
            return None;
        }
        let tcp = self.tcp?;
        let offset = usize::from(self.tcp_bth_offset);
        let len = usize::from(*self.frame.get(offset + 1)?);
        let option = self.frame.get(offset..offset + len)?;
        let header_len = tcp.header_len();
        let segment: &'a [u8] = tcp.into_inner();
        let payload = segment.get(header_len..).unwrap_or_default();
        let complete = usize::try_from(self.tcp_len).is_ok_and(|l| segment.len() >= l);
        Some(TcpBth {
            header: tcp_bth::Header::new_unchecked(option),
            offset,
            payload,
            payload_complete: complete,
        })
    }

    /// TCP payload length per the IP length fields (whatever was captured).
    #[must_use]
    pub fn tcp_payload_len(&self) -> usize {
        let header = self.tcp.as_ref().map_or(0, tcp::Packet::header_len);
        usize::try_from(self.tcp_len).map_or(0, |l| l.saturating_sub(header))
    }

    /// ICRC verdict; `NotVerifiable` for frames without RoCE.
    #[must_use]
    pub fn icrc_status(&self) -> IcrcStatus {
        self.roce
            .as_ref()
            .map_or(IcrcStatus::NotVerifiable, Roce::icrc_status)
    }
}

/// Strict whole-frame dissection of an Ethernet frame.
#[inline]
pub fn dissect(frame: &[u8]) -> Result<Dissected<'_>> {
    // built where it is returned: `Ok(d)` after the walk copied all of `Dissected` (304 bytes)
    // whenever the caller did not inline this (a third of a bare frame's time in the bench)
    let mut out = Ok(Dissected::empty(frame));
    if let Ok(d) = &mut out {
        if let Err(e) = walk_into(d, Start::Ethernet, &DEFAULT_OPTIONS) {
            out = Err(e);
        }
    }
    out
}

/// Lax whole-frame dissection of an Ethernet frame: every layer that parsed,
/// plus the first problem met.
#[must_use]
#[inline]
pub fn dissect_lax(frame: &[u8]) -> (Dissected<'_>, Option<WireError>) {
    walk(frame, Start::Ethernet, &DEFAULT_OPTIONS)
}

/// Lax dissection with options and a start layer (the general entry point).
#[must_use]
#[inline]
pub fn dissect_with<'a>(
    frame: &'a [u8],
    start: Start,
    options: &DissectOptions<'_>,
) -> (Dissected<'a>, Option<WireError>) {
    walk(frame, start, options)
}

/// Dissect into `d`, as made by [`Dissected::unwalked`] with `start`: for a caller that keeps
/// the struct in its own place (every frame's view does: the struct is large, and built apart
/// and moved in, its copy was a store-forwarding stall). `start` is passed again rather than
/// read back from `d`, just written.
pub fn walk_unwalked<'a>(
    d: &mut Dissected<'a>,
    start: Start,
    options: &DissectOptions<'_>,
) -> Option<WireError> {
    walk_into(d, start, options).err()
}

/// Bytes `at..at+len` of `frame` as far as they were captured; an error when some are missing.
#[inline]
fn clip(frame: &[u8], at: usize, len: usize, layer: Layer) -> (&[u8], Option<WireError>) {
    let have = frame.len().saturating_sub(at);
    if have >= len {
        (&frame[at..at + len], None)
    } else {
        (
            frame.get(at..).unwrap_or(&[]),
            Some(WireError::Truncated {
                layer,
                offset: at,
                need: len,
                have,
            }),
        )
    }
}

#[inline]
fn walk<'a>(
    frame: &'a [u8],
    start: Start,
    options: &DissectOptions<'_>,
) -> (Dissected<'a>, Option<WireError>) {
    let mut d = Dissected::unwalked(frame, start, options);
    let err = walk_into(&mut d, start, options).err();
    (d, err)
}

#[inline]
fn walk_into<'a>(d: &mut Dissected<'a>, start: Start, options: &DissectOptions<'_>) -> Result<()> {
    walk_from(d, start, options, true)
}

/// The walk; `quick` lets a mirrored or overlay frame of the usual shape skip decoding its
/// outer layers ([`plain_tunnel`]); the result is the same either way.
#[inline(always)]
fn walk_from<'a>(
    d: &mut Dissected<'a>,
    start: Start,
    options: &DissectOptions<'_>,
    quick: bool,
) -> Result<()> {
    let frame = d.frame;
    let (ethertype, at) = match start {
        Start::Ethernet => {
            // the innermost Ethernet header of a plain tunnel, or the frame's own
            let base = if quick && may_be_tunnel(frame) {
                plain_tunnel(d, options)
            } else {
                0
            };
            let rest = frame.get(base..).unwrap_or(&[]);
            let eth = ethernet::Frame::new_checked(rest).map_err(|e| e.rebased(base))?;
            let ethertype = eth.ethertype();
            d.eth = Some(eth);
            // 0 (where it already is) for a bare frame
            d.eth_at = u16::try_from(base).unwrap_or(u16::MAX);
            (ethertype, base + ethernet::HEADER_LEN)
        }
        Start::Sll => {
            let sll = sll::Header::new_checked(frame)?;
            d.link_header_len = sll::HEADER_LEN as u8;
            (sll.protocol(), sll::HEADER_LEN)
        }
        Start::Sll2 => {
            let sll = sll2::Header::new_checked(frame)?;
            d.link_header_len = sll2::HEADER_LEN as u8;
            (sll.protocol(), sll2::HEADER_LEN)
        }
        Start::EtherType(t) => (t, 0),
        Start::RawIp => match frame.first().map(|b| b >> 4) {
            Some(4) => (EtherType::IPV4, 0),
            Some(6) => (EtherType::IPV6, 0),
            Some(v) => {
                return Err(WireError::Unsupported {
                    layer: Layer::Ipv4,
                    offset: 0,
                    value: u32::from(v),
                });
            }
            None => {
                return Err(WireError::Truncated {
                    layer: Layer::Ipv4,
                    offset: 0,
                    need: 1,
                    have: 0,
                });
            }
        },
        Start::Erf => return erf_layer(d, options),
        Start::Infiniband => return ib_layer(d, 0, options),
        Start::Ipoib => {
            // the pseudo header and the IPoIB header, both from the start of the record
            let at = ipoib::PSEUDO_LEN;
            crate::error::need(Layer::Ipoib, at + ipoib::HEADER_LEN, frame.len())?;
            let h = ipoib::Header::new_checked(&frame[at..])?;
            d.link_header_len = (ipoib::PSEUDO_LEN + ipoib::HEADER_LEN) as u8;
            // an InfiniBand link has no VLAN tags
            if h.ethertype().is_vlan_tpid() {
                return Err(WireError::Unsupported {
                    layer: Layer::Ipoib,
                    offset: at,
                    value: u32::from(h.ethertype().0),
                });
            }
            (h.ethertype(), at + ipoib::HEADER_LEN)
        }
        Start::Null { network_order } => {
            crate::error::need(Layer::Null, NULL_HEADER_LEN, frame.len())?;
            d.link_header_len = NULL_HEADER_LEN as u8;
            let af = [frame[0], frame[1], frame[2], frame[3]];
            match null_family(af, network_order) {
                Some(t) => (t, NULL_HEADER_LEN),
                None => {
                    return Err(WireError::Unsupported {
                        layer: Layer::Null,
                        offset: 0,
                        value: u32::from_be_bytes(af),
                    });
                }
            }
        }
    };
    vlan_and_network(d, ethertype, at, options)
}

/// Whether the frame may be IPv4 carrying GRE or VXLAN (a few loads and compares: every frame
/// that starts with Ethernet pays them; a bare RoCEv2 frame fails the last one).
#[inline(always)]
fn may_be_tunnel(frame: &[u8]) -> bool {
    let Some(head) = frame.first_chunk::<{ ethernet::HEADER_LEN + ipv4::HEADER_LEN }>() else {
        return false;
    };
    if head[12..14] != EtherType::IPV4.0.to_be_bytes() {
        return false;
    }
    match IpProtocol(head[23]) {
        IpProtocol::GRE => true,
        IpProtocol::UDP => {
            let dst = ethernet::HEADER_LEN + usize::from(head[14] & 0x0F) * 4 + 2;
            frame.get(dst..dst + 2) == Some(&vxlan::VXLAN_PORT.to_be_bytes()[..])
        }
        _ => false,
    }
}

/// Where the frame a mirror session or an overlay carries starts, when the outer layers are the
/// usual ones and consistent: Ethernet without VLAN tags, a whole IPv4 datagram (not a fragment,
/// not cut short, its length fields agreeing), then GRE (ERSPAN I/II/III or TEB, as
/// [`encap::after_gre`] reads it) or UDP to VXLAN, with an Ethernet frame inside. `d` is left as
/// decoding those layers and entering the inner frame would leave it ([`enter`]), and the walk
/// goes on from the returned offset. 0 for anything else (an outer layer with something to
/// report, another encapsulation, a configured RoCE port 4789): the full walk decodes it.
#[cold]
#[inline(never)]
fn plain_tunnel(d: &mut Dissected<'_>, options: &DissectOptions<'_>) -> usize {
    const IP: usize = ethernet::HEADER_LEN;
    let frame = d.frame;
    let Some(ip) = frame.get(IP..IP + ipv4::HEADER_LEN) else {
        return 0;
    };
    let ip = ipv4::Packet::new_unchecked(ip);
    let header_len = usize::from(ip.header_len());
    let at = IP + header_len;
    let Some(l4) = usize::from(ip.total_len()).checked_sub(header_len) else {
        return 0;
    };
    let whole = ip.version() == 4
        && header_len >= ipv4::HEADER_LEN
        && frame.len() >= at + l4
        && ip.frag_offset() == 0
        && !ip.more_frags();
    let inner = match ip.next_header() {
        _ if !whole => return 0,
        IpProtocol::GRE => encap::after_gre(frame, at),
        IpProtocol::UDP if !options.is_roce_port(vxlan::VXLAN_PORT) => {
            let udp_len = frame
                .get(at + 4..at + 6)
                .map(|b| u16::from_be_bytes([b[0], b[1]]));
            if !udp_len.is_some_and(|n| (udp::HEADER_LEN..=l4).contains(&usize::from(n))) {
                return 0;
            }
            encap::after_udp_tunnel(frame, at + udp::HEADER_LEN, false)
        }
        _ => return 0,
    };
    let Ok(Inner::Ethernet(inner)) = inner else {
        return 0;
    };
    d.encap_depth = 1;
    d.inner_at = u16::try_from(inner).unwrap_or(u16::MAX);
    d.network_offset = IP; // the outer IPv4 header's, until the inner frame's network layer
    inner
}

/// VLAN tags while the EtherType says so, then the network layer.
#[inline(always)]
fn vlan_and_network<'a>(
    d: &mut Dissected<'a>,
    mut ethertype: EtherType,
    mut at: usize,
    options: &DissectOptions<'_>,
) -> Result<()> {
    let frame = d.frame;
    let mut tags = 0;
    while ethertype.is_vlan_tpid() {
        if tags == MAX_VLANS {
            return Err(WireError::Unsupported {
                layer: Layer::Vlan,
                offset: at.saturating_sub(2),
                value: u32::from(ethertype.0),
            });
        }
        let header =
            vlan::Header::new_checked(frame.get(at..).unwrap_or(&[])).map_err(|e| e.rebased(at))?;
        // MAX_VLANS tags of 4 bytes after a header of at most 96 bytes: the offset fits in u16
        d.vlan_tags[tags] = (ethertype, u16::try_from(at).unwrap_or(u16::MAX));
        d.vlan_count += 1;
        ethertype = header.ethertype();
        at += vlan::HEADER_LEN;
        tags += 1;
    }
    network_layer(d, ethertype, at, options)
}

/// The layer an EtherType names, at `at`.
#[inline(always)]
fn network_layer<'a>(
    d: &mut Dissected<'a>,
    ethertype: EtherType,
    at: usize,
    options: &DissectOptions<'_>,
) -> Result<()> {
    let frame = d.frame;
    d.ethertype = Some(ethertype);
    d.network_offset = at;
    let rest = frame.get(at..).unwrap_or(&[]);
    match ethertype {
        EtherType::IPV4 => ipv4_layer(d, at, options),
        EtherType::IPV6 => ipv6_layer(d, at, options),
        EtherType::ROCEV1 => grh_layer(d, at),
        EtherType::MPLS | EtherType::MPLS_MULTICAST => {
            let inner = encap::after_mpls(frame, at)?;
            enter(d, inner, options, None)
        }
        EtherType::MAC_CONTROL => {
            let p = mac_control::Packet::new_checked(rest).map_err(|e| e.rebased(at))?;
            d.network = Some(Network::MacControl(p));
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An ERF record (capture-formats.md §2.1): the headers, then the packet of its type. The
/// packet's own length fields bound it (never `rlen`).
fn erf_layer<'a>(d: &mut Dissected<'a>, options: &DissectOptions<'_>) -> Result<()> {
    let frame = d.frame;
    let h = erf::Header::new_checked(frame)?;
    d.erf = true;
    d.link_header_len = erf::HEADER_LEN as u8;
    let Some(headers) = h.headers_len() else {
        // the extension headers run past the captured bytes (or never end)
        return Err(WireError::Truncated {
            layer: Layer::Erf,
            offset: erf::HEADER_LEN,
            need: erf::EXT_LEN,
            have: frame.len().saturating_sub(erf::HEADER_LEN),
        });
    };
    let kind = h.payload_kind();
    let at = headers + kind.subheader_len();
    crate::error::need(Layer::Erf, at, frame.len())?;
    // at most 16 + 8 × 8 + 2 bytes
    d.link_header_len = u8::try_from(at).unwrap_or(u8::MAX);
    match kind {
        erf::Payload::Infiniband => ib_layer(d, at, options),
        erf::Payload::Ethernet => {
            let eth = ethernet::Frame::new_checked(&frame[at..]).map_err(|e| e.rebased(at))?;
            let ethertype = eth.ethertype();
            d.eth = Some(eth);
            d.eth_at = u16::try_from(at).unwrap_or(u16::MAX);
            vlan_and_network(d, ethertype, at + ethernet::HEADER_LEN, options)
        }
        erf::Payload::Ipv4 => network_layer(d, EtherType::IPV4, at, options),
        erf::Payload::Ipv6 => network_layer(d, EtherType::IPV6, at, options),
        erf::Payload::InfinibandLink => Ok(()),
        erf::Payload::Other(t) => Err(WireError::Unsupported {
            layer: Layer::Erf,
            offset: 8,
            value: u32::from(t),
        }),
    }
}

/// A native InfiniBand packet at `at` (capture-formats.md §1): the LRH, then by LNH the BTH
/// (local), a GRH and the BTH (global), a raw EtherType packet or a raw IPv6 one. PktLen
/// bounds the packet; the VCRC follows it.
fn ib_layer<'a>(d: &mut Dissected<'a>, at: usize, options: &DissectOptions<'_>) -> Result<()> {
    let frame = d.frame;
    let rest = frame.get(at..).unwrap_or(&[]);
    let lrh = lrh::Header::new_checked(rest).map_err(|e| e.rebased(at))?;
    d.lrh_at = u16::try_from(at).ok();
    let pkt = lrh.pkt_bytes();
    let (_, cut) = clip(frame, at, pkt + lrh::VCRC_LEN, Layer::Lrh);
    let after = at + lrh::HEADER_LEN;
    match lrh.lnh() {
        lrh::NextHeader::IbaLocal => {
            let Some(transport) = pkt.checked_sub(lrh::HEADER_LEN) else {
                return Err(too_short(Layer::Lrh, at, pkt, lrh::HEADER_LEN));
            };
            d.network_offset = after;
            roce_layer(
                d,
                RoceVersion::Ib,
                at,
                after,
                transport,
                Encapsulation::IbLocal,
                cut,
            )
        }
        lrh::NextHeader::IbaGlobal => {
            let Some(transport) = pkt.checked_sub(lrh::HEADER_LEN + grh::HEADER_LEN) else {
                return Err(too_short(
                    Layer::Lrh,
                    at,
                    pkt,
                    lrh::HEADER_LEN + grh::HEADER_LEN,
                ));
            };
            let g = frame.get(after..).unwrap_or(&[]);
            crate::error::need(Layer::Grh, grh::HEADER_LEN, g.len())
                .map_err(|e| e.rebased(after))?;
            let grh = grh::Packet::new_unchecked(&g[..grh::HEADER_LEN]);
            d.network = Some(Network::Grh(grh));
            d.network_offset = after;
            if grh.next_header() != grh::NEXT_HEADER_IBA {
                // tshark stops after the GRH too
                return cut.map_or(Ok(()), Err);
            }
            let bth_at = after + grh::HEADER_LEN;
            roce_layer(
                d,
                RoceVersion::Ib,
                at,
                bth_at,
                transport,
                Encapsulation::IbGlobal,
                cut,
            )
        }
        lrh::NextHeader::Raw => {
            // RWH: 2 reserved bytes, then the EtherType of what follows
            let rwh = frame.get(after..after + 4).ok_or(WireError::Truncated {
                layer: Layer::Lrh,
                offset: after,
                need: 4,
                have: frame.len().saturating_sub(after),
            })?;
            let ethertype = EtherType(u16::from_be_bytes([rwh[2], rwh[3]]));
            network_layer(d, ethertype, after + 4, options)?;
            cut.map_or(Ok(()), Err)
        }
        lrh::NextHeader::Ipv6 => {
            network_layer(d, EtherType::IPV6, after, options)?;
            cut.map_or(Ok(()), Err)
        }
    }
}

#[inline]
fn ipv4_layer<'a>(d: &mut Dissected<'a>, at: usize, options: &DissectOptions<'_>) -> Result<()> {
    let frame = d.frame;
    let rest = &frame[at..];
    let ip = ipv4::Packet::new_unchecked(rest);
    // The fixed header and the options must be there; the payload may be cut short.
    crate::error::need(Layer::Ipv4, ipv4::HEADER_LEN, rest.len()).map_err(|e| e.rebased(at))?;
    let header_len = usize::from(ip.header_len());
    if header_len < ipv4::HEADER_LEN {
        let reason = Malformed::HeaderLength {
            value: header_len as u16,
            min: ipv4::HEADER_LEN as u16,
        };
        return Err(malformed(Layer::Ipv4, at, reason));
    }
    crate::error::need(Layer::Ipv4, header_len, rest.len()).map_err(|e| e.rebased(at))?;
    let total_len = usize::from(ip.total_len());
    if total_len < header_len {
        return Err(too_short(Layer::Ipv4, at, total_len, header_len));
    }
    if ip.version() != 4 {
        let reason = Malformed::Version {
            found: ip.version(),
            expected: 4,
        };
        return Err(malformed(Layer::Ipv4, at, reason));
    }
    let (datagram, cut) = clip(frame, at, total_len, Layer::Ipv4);
    d.network = Some(Network::Ipv4(ipv4::Packet::new_unchecked(datagram)));
    let whole = ip.frag_offset() == 0 && !ip.more_frags();
    let proto = ip.next_header();
    if proto != IpProtocol::UDP || !whole {
        if !whole {
            return cut.map_or(Ok(()), Err);
        }
        if proto == IpProtocol::TCP {
            return tcp_layer(d, at + header_len, total_len - header_len, options, cut);
        }
        if let Some(inner) = ip_tunnel(frame, proto, at + header_len)? {
            return enter(d, inner, options, cut);
        }
        return cut.map_or(Ok(()), Err);
    }
    // IHL × 4: at most 60
    let encapsulation = Encapsulation::Ipv4 {
        header_len: u8::try_from(header_len).unwrap_or(u8::MAX),
    };
    udp_layer(
        d,
        at,
        at + header_len,
        total_len - header_len,
        encapsulation,
        options,
        cut,
    )
}

fn ipv6_layer<'a>(d: &mut Dissected<'a>, at: usize, options: &DissectOptions<'_>) -> Result<()> {
    let frame = d.frame;
    let rest = &frame[at..];
    crate::error::need(Layer::Ipv6, ipv6::HEADER_LEN, rest.len()).map_err(|e| e.rebased(at))?;
    let ip = ipv6::Packet::new_unchecked(rest);
    if ip.version() != 6 {
        let reason = Malformed::Version {
            found: ip.version(),
            expected: 6,
        };
        return Err(malformed(Layer::Ipv6, at, reason));
    }
    let payload_len = usize::from(ip.payload_len());
    let (datagram, cut) = clip(frame, at, ipv6::HEADER_LEN + payload_len, Layer::Ipv6);
    d.network = Some(Network::Ipv6(ipv6::Packet::new_unchecked(datagram)));
    let proto = ip.next_header();
    if proto != IpProtocol::UDP {
        if proto == IpProtocol::TCP {
            return tcp_layer(d, at + ipv6::HEADER_LEN, payload_len, options, cut);
        }
        if let Some(inner) = ip_tunnel(frame, proto, at + ipv6::HEADER_LEN)? {
            return enter(d, inner, options, cut);
        }
        return cut.map_or(Ok(()), Err);
    }
    udp_layer(
        d,
        at,
        at + ipv6::HEADER_LEN,
        payload_len,
        Encapsulation::Ipv6,
        options,
        cut,
    )
}

/// UDP inside an IP datagram whose length fields give `l4_len` bytes from `at`.
#[inline]
fn udp_layer<'a>(
    d: &mut Dissected<'a>,
    network_at: usize,
    at: usize,
    l4_len: usize,
    encapsulation: Encapsulation,
    options: &DissectOptions<'_>,
    ip_cut: Option<WireError>,
) -> Result<()> {
    let frame = d.frame;
    let rest = frame.get(at..).unwrap_or(&[]);
    if l4_len < udp::HEADER_LEN {
        return Err(too_short(Layer::Udp, at, l4_len, udp::HEADER_LEN));
    }
    crate::error::need(Layer::Udp, udp::HEADER_LEN, rest.len()).map_err(|e| e.rebased(at))?;
    let header = udp::Packet::new_unchecked(rest);
    let udp_len = usize::from(header.len());
    if udp_len < udp::HEADER_LEN {
        return Err(too_short(Layer::Udp, at, udp_len, udp::HEADER_LEN));
    }
    // A length past the IP payload is still a UDP header (the lax view keeps it and what
    // follows, read as far as the IP payload goes); the frame is malformed.
    let past = udp_len > l4_len;
    let (datagram, cut) = clip(frame, at, udp_len.min(l4_len), Layer::Udp);
    d.udp = Some(udp::Packet::new_unchecked(datagram));
    d.udp_offset = at;
    let cut = if past {
        Some(past_payload(Layer::Udp, at, udp_len, l4_len))
    } else {
        ip_cut.or(cut)
    };
    let udp_len = udp_len.min(l4_len);
    if !options.is_roce_port(header.dst_port()) {
        let port = header.dst_port();
        if port == vxlan::VXLAN_PORT || port == vxlan::GENEVE_PORT {
            let geneve = port == vxlan::GENEVE_PORT;
            let inner = encap::after_udp_tunnel(frame, at + udp::HEADER_LEN, geneve)?;
            return enter(d, inner, options, cut);
        }
        return cut.map_or(Ok(()), Err);
    }
    let bth_at = at + udp::HEADER_LEN;
    let transport_len = udp_len - udp::HEADER_LEN;
    roce_layer(
        d,
        RoceVersion::V2,
        network_at,
        bth_at,
        transport_len,
        encapsulation,
        cut,
    )
}

/// What an IP datagram's payload at `at` tunnels: GRE (and what it carries), IPv4 or IPv6 in
/// IP; `None` for other protocols.
fn ip_tunnel(frame: &[u8], proto: IpProtocol, at: usize) -> Result<Option<Inner>> {
    Ok(match proto {
        IpProtocol::GRE => Some(encap::after_gre(frame, at)?),
        IpProtocol::IPIP => Some(Inner::Network(EtherType::IPV4, at)),
        IpProtocol::IPV6 => Some(Inner::Network(EtherType::IPV6, at)),
        _ => None,
    })
}

/// Dissect the frame an encapsulation carries as if it had been captured directly: its
/// layers replace the outer ones (which stay in the bytes, listed by
/// [`Dissected::outer_layers`]). `outer_cut` is the outer length fields' complaint.
// Not inlined: the walk recurses through here, and keeping the recursion in one cold
// function lets the compiler inline the layers of the usual, unencapsulated frame.
#[cold]
#[inline(never)]
fn enter<'a>(
    d: &mut Dissected<'a>,
    inner: Inner,
    options: &DissectOptions<'_>,
    outer_cut: Option<WireError>,
) -> Result<()> {
    let at = match inner {
        Inner::None => return outer_cut.map_or(Ok(()), Err),
        Inner::Ethernet(a) | Inner::Network(_, a) => a,
    };
    if d.encap_depth >= encap::MAX_DEPTH {
        return Err(encap::too_deep(at));
    }
    d.encap_depth += 1;
    d.inner_at = u16::try_from(at).unwrap_or(u16::MAX);
    d.eth = None;
    d.vlan_count = 0;
    d.ethertype = None;
    d.network = None;
    d.udp = None;
    d.udp_offset = 0;
    d.tcp = None;
    d.tcp_offset = 0;
    d.tcp_len = 0;
    d.tcp_bth_offset = 0;
    let frame = d.frame;
    match inner {
        Inner::Ethernet(a) => {
            let rest = frame.get(a..).unwrap_or(&[]);
            let eth = ethernet::Frame::new_checked(rest).map_err(|e| e.rebased(a))?;
            let ethertype = eth.ethertype();
            d.eth = Some(eth);
            d.eth_at = u16::try_from(a).unwrap_or(u16::MAX);
            vlan_and_network(d, ethertype, a + ethernet::HEADER_LEN, options)?;
        }
        Inner::Network(t, a) => network_layer(d, t, a, options)?,
        Inner::None => {}
    }
    // inconsistent outer length fields make the whole frame malformed: no ICRC verdict
    if let (Some(WireError::Malformed { .. }), Some(roce)) = (outer_cut, d.roce.as_mut()) {
        roce.icrc = None;
        roce.covered = None;
    }
    outer_cut.map_or(Ok(()), Err)
}

/// TCP inside an IP datagram whose length fields give `l4_len` bytes from `at`.
/// The header and its options must be captured; the payload may be cut short.
fn tcp_layer(
    d: &mut Dissected<'_>,
    at: usize,
    l4_len: usize,
    options: &DissectOptions<'_>,
    ip_cut: Option<WireError>,
) -> Result<()> {
    let frame = d.frame;
    let rest = frame.get(at..).unwrap_or(&[]);
    if l4_len < tcp::HEADER_LEN {
        return Err(too_short(Layer::Tcp, at, l4_len, tcp::HEADER_LEN));
    }
    crate::error::need(Layer::Tcp, tcp::HEADER_LEN, rest.len()).map_err(|e| e.rebased(at))?;
    let header_len = tcp::Packet::new_unchecked(rest).header_len();
    if header_len < tcp::HEADER_LEN {
        let reason = Malformed::HeaderLength {
            value: header_len as u16,
            min: tcp::HEADER_LEN as u16,
        };
        return Err(malformed(Layer::Tcp, at + 12, reason));
    }
    if header_len > l4_len {
        return Err(past_payload(Layer::Tcp, at + 12, header_len, l4_len));
    }
    crate::error::need(Layer::Tcp, header_len, rest.len()).map_err(|e| e.rebased(at))?;
    let (segment, cut) = clip(frame, at, l4_len, Layer::Tcp);
    let packet = tcp::Packet::new_unchecked(segment);
    d.tcp = Some(packet);
    d.tcp_offset = at;
    d.tcp_len = u32::try_from(l4_len).unwrap_or(u32::MAX);
    let mut walk_err = None;
    let mut it = tcp::OptionIter::new(packet.options_bytes());
    let mut opt_at = tcp::HEADER_LEN;
    while let Some(opt) = it.next() {
        match opt {
            Ok(tcp::TcpOption::Experimental { exid, option, .. })
                if exid == options.tcp_bth_exid =>
            {
                let found = option
                    .get(1)
                    .is_some_and(|&l| tcp_bth::Format::from_len(l).is_some());
                if found && d.tcp_bth_offset == 0 {
                    d.tcp_bth_offset = u16::try_from(at + opt_at).unwrap_or(0);
                }
            }
            Err(e) if walk_err.is_none() => walk_err = Some(e.rebased(at)),
            _ => {}
        }
        opt_at = tcp::HEADER_LEN + packet.options_bytes().len() - it.remaining();
    }
    match walk_err.or(ip_cut).or(cut) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

fn grh_layer(d: &mut Dissected<'_>, at: usize) -> Result<()> {
    let frame = d.frame;
    let rest = &frame[at..];
    crate::error::need(Layer::Grh, grh::HEADER_LEN, rest.len()).map_err(|e| e.rebased(at))?;
    let g = grh::Packet::new_unchecked(rest);
    if g.ip_version() != 6 {
        let reason = Malformed::Version {
            found: g.ip_version(),
            expected: 6,
        };
        return Err(malformed(Layer::Grh, at, reason));
    }
    let payload_len = usize::from(g.payload_len());
    let (datagram, cut) = clip(frame, at, grh::HEADER_LEN + payload_len, Layer::Grh);
    d.network = Some(Network::Grh(grh::Packet::new_unchecked(datagram)));
    roce_layer(
        d,
        RoceVersion::V1,
        at,
        at + grh::HEADER_LEN,
        payload_len,
        Encapsulation::RoceV1,
        cut,
    )
}

/// BTH through ICRC: `transport_len` bytes from `at` according to the length fields.
#[inline]
fn roce_layer(
    d: &mut Dissected<'_>,
    version: RoceVersion,
    network_at: usize,
    at: usize,
    transport_len: usize,
    encapsulation: Encapsulation,
    cut: Option<WireError>,
) -> Result<()> {
    let frame = d.frame;
    let available = frame.len().saturating_sub(at).min(transport_len);
    let rest = frame.get(at..at + available).unwrap_or(&[]);
    let (rest, bth) = match bth::parse(rest) {
        Ok(ok) => ok,
        Err(_) => {
            let layer = Layer::Bth;
            return Err(if transport_len < bth::HEADER_LEN + ICRC_LEN {
                too_short(layer, at, transport_len, bth::HEADER_LEN + ICRC_LEN)
            } else {
                WireError::Truncated {
                    layer,
                    offset: at,
                    need: bth::HEADER_LEN,
                    have: available,
                }
            });
        }
    };
    let opcode = bth.opcode();
    // the RD opcode range carries NVIDIA DC unless told otherwise (capture-formats.md §3)
    let info = if opcode.is_rd_range() && !d.rd_as_rd {
        opcode.dc_info(bth.solicited_event())
    } else {
        opcode.info()
    };
    // an opcode its transport does not define: no layout to read, no known ICRC coverage
    // (vendor and reserved ranges are shown as UNKNOWN without a finding)
    let unknown = info.is_none()
        && matches!(
            opcode.transport(),
            Transport::Rc | Transport::Uc | Transport::Rd | Transport::Ud | Transport::Xrc
        );
    let list = info.and_then(|i| i.headers).unwrap_or(&[]);
    let ext_len = info.map_or(0, |i| usize::from(i.ext_len));
    let ext_at = at + bth::HEADER_LEN;
    let ext_bytes = &rest[..ext_len.min(rest.len())];
    let pad_count = usize::from(bth.pad_count());
    // Built in place: `Dissected` is returned by value, so every move of it costs.
    let roce = d.roce.insert(Roce {
        version,
        bth,
        bth_offset: at,
        info,
        exts: ExtHeaders {
            bytes: ext_bytes,
            offset: ext_at,
            list,
        },
        payload: &[],
        payload_offset: ext_at + ext_len,
        payload_len: 0,
        pad: &[],
        icrc: None,
        covered: None,
        encapsulation,
    });
    // Payload and pad come from the length fields, never from the captured length.
    let Some(payload_len) =
        transport_len.checked_sub(bth::HEADER_LEN + ext_len + pad_count + ICRC_LEN)
    else {
        let headers = bth::HEADER_LEN + ext_len + ICRC_LEN;
        if transport_len < headers {
            // the length fields do not even cover the extension headers
            roce.exts = ExtHeaders::EMPTY;
            return Err(too_short(Layer::Bth, at, transport_len, headers));
        }
        // the headers are all there (the lax view keeps them); only the pad does not fit
        let reason = Malformed::PadCount {
            pad: bth.pad_count(),
            room: n32(transport_len - headers),
        };
        return Err(malformed(Layer::Bth, at, reason));
    };
    roce.payload_len = payload_len;
    let after_ext = &rest[ext_bytes.len()..];
    roce.payload = &after_ext[..payload_len.min(after_ext.len())];
    let after_payload = &after_ext[roce.payload.len()..];
    roce.pad = &after_payload[..pad_count.min(after_payload.len())];
    let icrc_bytes = &after_payload[roce.pad.len()..];
    // a malformed frame's ICRC is not verifiable: its length fields disagree on what it covers
    let malformed_frame = unknown || matches!(cut, Some(WireError::Malformed { .. }));
    if let Some(icrc) = icrc_bytes.first_chunk::<4>().filter(|_| !malformed_frame) {
        roce.icrc = Some(*icrc);
        roce.covered = frame.get(network_at..at + transport_len);
    }
    let ext_cut = (ext_bytes.len() < ext_len).then(|| WireError::Truncated {
        layer: list
            .iter()
            .scan(0, |end, h| {
                *end += h.wire_len();
                Some((*end, *h))
            })
            .find(|(end, _)| *end > ext_bytes.len())
            .map_or(Layer::Bth, |(_, h)| h.layer()),
        offset: ext_at,
        need: ext_len,
        have: ext_bytes.len(),
    });
    // A cut-short extension header is reported as itself, like a cut-short BTH,
    // rather than as the IP/UDP length field that points past the end.
    match ext_cut.or(cut) {
        Some(err) => Err(err),
        None if unknown => Err(unknown_opcode(at, opcode)),
        None => Ok(()),
    }
}

/// A length field of `value` bytes pointing past the `room` bytes of the IP payload.
#[cold]
fn past_payload(layer: Layer, offset: usize, value: usize, room: usize) -> WireError {
    let reason = Malformed::LengthPastPayload {
        value: n32(value),
        room: n32(room),
    };
    malformed(layer, offset, reason)
}

#[cold]
fn unknown_opcode(at: usize, opcode: Opcode) -> WireError {
    let reason = Malformed::UnknownOpcode {
        opcode: opcode.0,
        transport: opcode.transport().name(),
    };
    malformed(Layer::Bth, at, reason)
}

/// A length field of `value` bytes that cannot hold the `need` bytes of headers it carries.
fn too_short(layer: Layer, offset: usize, value: usize, need: usize) -> WireError {
    let reason = Malformed::LengthTooShort {
        value: n32(value),
        need: n32(need),
    };
    malformed(layer, offset, reason)
}

fn n32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

const fn malformed(layer: Layer, offset: usize, reason: Malformed) -> WireError {
    WireError::Malformed {
        layer,
        offset,
        reason,
    }
}

/// The bench's frames (a 1 KiB RC WRITE FIRST with a valid ICRC), for the tests below.
#[cfg(test)]
#[path = "../benches/frames/mod.rs"]
mod frames;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encap::{erspan, gre};
    use proptest::prelude::*;

    /// The walk with or without [`plain_tunnel`]'s shortcut.
    fn walked<'a>(
        frame: &'a [u8],
        options: &DissectOptions<'_>,
        quick: bool,
    ) -> (Dissected<'a>, Option<WireError>) {
        let mut d = Dissected::empty(frame);
        d.rd_as_rd = options.rd_as_rd;
        d.start = Start::Ethernet;
        let err = walk_from(&mut d, Start::Ethernet, options, quick).err();
        (d, err)
    }

    /// `inner` behind Ethernet and IPv4 (protocol `proto`) and `tunnel`'s bytes.
    fn wrapped(proto: u8, tunnel: &[u8], inner: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0xFE, 2, 2, 0, 0, 0, 0xFE, 1, 0x08, 0x00];
        let total = u16::try_from(20 + tunnel.len() + inner.len()).unwrap();
        f.extend_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0]);
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
        f.extend_from_slice(tunnel);
        f.extend_from_slice(inner);
        f
    }

    /// Frames of every shape the shortcut takes, and some it leaves to the full walk.
    fn seeds() -> Vec<Vec<u8>> {
        let inner = frames::write_1k();
        let mut out = vec![inner.clone()];
        for (type3, platform) in [(false, false), (true, false), (true, true)] {
            let mut t = [0u8; 64];
            let g = gre::emit(&mut t, gre::proto::ERSPAN_88BE, None, Some(9));
            let mut n = g + erspan::Repr {
                type3,
                vlan: 5,
                cos: 3,
                truncated: false,
                session: 42,
                index_or_timestamp: 123_456,
                hw: 1,
                egress: false,
            }
            .emit(&mut t[g..]);
            if platform {
                t[n - 1] |= 1; // the O bit: a platform subheader follows
                n += 8;
            }
            out.push(wrapped(47, &t[..n], &inner));
        }
        for (proto, key) in [(gre::proto::TEB, Some(5)), (gre::proto::ERSPAN_88BE, None)] {
            let mut t = [0u8; 16];
            let n = gre::emit(&mut t, proto, key, None);
            out.push(wrapped(47, &t[..n], &inner));
        }
        // GRE carrying IPv4 (not taken: the inner frame has no Ethernet header)
        let mut t = [0u8; 8];
        let n = gre::emit(&mut t, EtherType::IPV4.0, None, None);
        out.push(wrapped(47, &t[..n], &inner[14..]));
        // VXLAN: UDP to 4789, then the VXLAN header
        let mut t = vec![0xC0, 0x01, 0x12, 0xB5, 0, 0, 0, 0];
        let udp_len = u16::try_from(8 + vxlan::HEADER_LEN + inner.len()).unwrap();
        t[4..6].copy_from_slice(&udp_len.to_be_bytes());
        let mut v = [0u8; 8];
        let n = vxlan::emit_vxlan(&mut v, 5001);
        t.extend_from_slice(&v[..n]);
        out.push(wrapped(17, &t, &inner));
        // ERSPAN in ERSPAN: the shortcut takes the first layer, the full walk the second
        let twice = out[2].clone();
        out.push(wrapped(47, &out[2][14 + 20..14 + 20 + 20], &twice));
        out
    }

    #[test]
    fn the_shortcut_takes_the_usual_tunnels() {
        let seeds = seeds();
        for (i, f) in seeds.iter().enumerate() {
            let (q, qe) = walked(f, &DissectOptions::DEFAULT, true);
            let (s, se) = walked(f, &DissectOptions::DEFAULT, false);
            assert_eq!((q, qe), (s, se), "seed {i}");
            if i > 0 {
                assert!(q.is_encapsulated() && q.roce.is_some(), "seed {i}: {qe:?}");
                assert_eq!(q.icrc_status(), IcrcStatus::Valid, "seed {i}");
            }
        }
        // taken: the ERSPAN, TEB and VXLAN frames
        let mut probe = Dissected::empty(&seeds[2]);
        assert_eq!(
            plain_tunnel(&mut probe, &DissectOptions::DEFAULT),
            14 + 20 + 8 + 12
        );
        let mut probe = Dissected::empty(&seeds[7]);
        assert_eq!(
            plain_tunnel(&mut probe, &DissectOptions::DEFAULT),
            14 + 20 + 8 + 8
        );
        // left: GRE carrying IP, and VXLAN's port configured as a RoCE port
        let mut probe = Dissected::empty(&seeds[6]);
        assert_eq!(plain_tunnel(&mut probe, &DissectOptions::DEFAULT), 0);
        let vxlan_is_roce = DissectOptions {
            roce_ports: &[vxlan::VXLAN_PORT],
            ..DissectOptions::DEFAULT
        };
        let mut probe = Dissected::empty(&seeds[7]);
        assert_eq!(plain_tunnel(&mut probe, &vxlan_is_roce), 0);
        assert_eq!(
            walked(&seeds[7], &vxlan_is_roce, true),
            walked(&seeds[7], &vxlan_is_roce, false)
        );
        // the outer datagram ending at every length, with the frame: the inner frame is cut at
        // every length, its Ethernet header too (the outer layers are still consistent)
        for (i, seed) in seeds.iter().enumerate().skip(1) {
            for total in 20..seed.len() - 14 {
                let mut f = seed.clone();
                f[16..18].copy_from_slice(&u16::try_from(total).unwrap().to_be_bytes());
                f.truncate(14 + total);
                let (q, qe) = walked(&f, &DissectOptions::DEFAULT, true);
                assert_eq!(
                    (q, qe),
                    walked(&f, &DissectOptions::DEFAULT, false),
                    "{i} {total}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Whatever the bytes, the shortcut leaves exactly what the full walk leaves: the
        /// layers, the offsets and the first problem.
        #[test]
        fn the_shortcut_equals_the_full_walk(
            seed in 0usize..9,
            edits in proptest::collection::vec((0usize..160, any::<u8>()), 0..4),
            cut in proptest::option::of(0usize..400),
            vxlan_is_roce in any::<bool>(),
        ) {
            let mut f = seeds()[seed].clone();
            for (at, byte) in edits {
                if let Some(b) = f.get_mut(at) {
                    *b = byte;
                }
            }
            if let Some(n) = cut {
                f.truncate(n);
            }
            let ports = [vxlan::VXLAN_PORT];
            let options = DissectOptions {
                roce_ports: if vxlan_is_roce { &ports } else { &[] },
                ..DissectOptions::DEFAULT
            };
            prop_assert_eq!(walked(&f, &options, true), walked(&f, &options, false));
        }
    }
}
