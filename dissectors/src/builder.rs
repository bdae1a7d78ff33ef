//! Frame builders: emit a stack of `Repr`s into a caller's buffer.
//!
//! The order is fixed by what each check covers: payload and pad first, then
//! the headers with every length derived from the payload, the IPv4 header
//! checksum, the ICRC (which masks the IP/UDP checksums and TOS/TTL, so it only
//! needs the final lengths, addresses and transport bytes), and the UDP
//! checksum last, because it covers the ICRC bytes.

// Indexing cannot panic here: every header is written at offsets computed from the lengths the
// builder checked against the buffer first (`BuildError::BufferTooSmall`).
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::IpAddr;

use crate::checksum::ChecksumMode;
use crate::ethernet::{self, EtherType};
use crate::ib::opcode::ExtHeader;
use crate::ib::{
    aeth, atomic_ack_eth, atomic_eth, bth, deth, feth, ieth, immdt, lrh, rdeth, reth, xrceth,
};
use crate::icrc::{self, Encapsulation, ICRC_LEN};
use crate::ipv4::IpProtocol;
use crate::{grh, ipv4, ipv6, mac_control, udp, vlan};

/// Smallest Ethernet frame without FCS; shorter frames are zero-padded.
pub const MIN_FRAME_LEN: usize = 60;
/// Most VLAN tags a built frame carries.
pub const MAX_TAGS: usize = 2;

/// Why a frame could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildError {
    BufferTooSmall { need: usize, have: usize },
    InvalidRepr(&'static str),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::BufferTooSmall { need, have } => {
                write!(f, "buffer too small: need {need} bytes, have {have}")
            }
            BuildError::InvalidRepr(why) => write!(f, "invalid frame description: {why}"),
        }
    }
}

impl core::error::Error for BuildError {}

/// What to do with the ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IcrcPolicy {
    #[default]
    Correct,
    /// Emit the correct ICRC XOR this (non-zero) value: a deliberately bad one.
    Corrupt(u32),
}

/// Checksum and ICRC policy of a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// IPv4 header checksum: `Both`/`Tx` fill it, `Rx`/`None` leave it zero.
    pub ipv4_checksum: ChecksumMode,
    /// UDP checksum.
    pub udp_checksum: UdpChecksum,
    pub icrc: IcrcPolicy,
    /// Flip the IPv4 header checksum after filling it.
    pub corrupt_ipv4_checksum: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            ipv4_checksum: ChecksumMode::Both,
            udp_checksum: UdpChecksum::Auto,
            icrc: IcrcPolicy::Correct,
            corrupt_ipv4_checksum: false,
        }
    }
}

/// What to put in the UDP checksum field of a RoCEv2 frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpChecksum {
    /// Zero over IPv4 (what RoCE NICs send), computed over IPv6, where a zero
    /// UDP checksum is illegal (RFC 8200 §8.1).
    #[default]
    Auto,
    /// Always computed.
    Fill,
    /// Always zero, also over IPv6 (a deliberately illegal frame there).
    Zero,
}

/// One VLAN tag to emit: its TPID and its TCI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    pub tpid: EtherType,
    pub tag: vlan::Repr,
}

/// Ethernet header plus up to [`MAX_TAGS`] VLAN tags; the innermost EtherType
/// is set by the frame being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2 {
    pub eth: ethernet::Repr,
    pub vlans: [Option<VlanTag>; MAX_TAGS],
}

impl L2 {
    #[must_use]
    pub fn untagged(eth: ethernet::Repr) -> L2 {
        L2 {
            eth,
            vlans: [None; MAX_TAGS],
        }
    }

    fn len(&self) -> usize {
        ethernet::HEADER_LEN + self.vlans.iter().flatten().count() * vlan::HEADER_LEN
    }

    /// Write the L2 headers ending in `inner`; returns the offset after them.
    fn emit(&self, buf: &mut [u8], inner: EtherType) -> usize {
        let tags: [Option<VlanTag>; MAX_TAGS] = self.vlans;
        let mut tags = tags.iter().flatten().peekable();
        let mut eth = self.eth;
        eth.ethertype = tags.peek().map_or(inner, |t| t.tpid);
        eth.emit(&mut ethernet::Frame::new_unchecked(
            &mut buf[..ethernet::HEADER_LEN],
        ));
        let mut at = ethernet::HEADER_LEN;
        while let Some(tag) = tags.next() {
            let mut repr = tag.tag;
            repr.ethertype = tags.peek().map_or(inner, |t| t.tpid);
            repr.emit(&mut vlan::Header::new_unchecked(
                &mut buf[at..at + vlan::HEADER_LEN],
            ));
            at += vlan::HEADER_LEN;
        }
        at
    }
}

/// The network layer of a RoCE frame. Lengths and next-header fields in the
/// `Repr`s are ignored: the builder derives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkRepr {
    /// RoCEv2 over IPv4, with the UDP ports.
    Ipv4 {
        ip: ipv4::Repr,
        src_port: u16,
        dst_port: u16,
    },
    /// RoCEv2 over IPv6, with the UDP ports.
    Ipv6 {
        ip: ipv6::Repr,
        src_port: u16,
        dst_port: u16,
    },
    /// RoCEv1: GRH directly after Ethernet.
    RoceV1(grh::Repr),
    /// Native InfiniBand: the LRH (its LNH and PktLen set by the builder) and a GRH when the
    /// route is global; no Ethernet (`RoceFrame::l2` is not written), the VCRC after the ICRC.
    Ib {
        lrh: lrh::Repr,
        grh: Option<grh::Repr>,
    },
}

impl NetworkRepr {
    const fn header_len(&self) -> usize {
        match self {
            NetworkRepr::Ipv4 { .. } => ipv4::HEADER_LEN + udp::HEADER_LEN,
            NetworkRepr::Ipv6 { .. } => ipv6::HEADER_LEN + udp::HEADER_LEN,
            NetworkRepr::RoceV1(_) => grh::HEADER_LEN,
            NetworkRepr::Ib { grh: None, .. } => lrh::HEADER_LEN,
            NetworkRepr::Ib { grh: Some(_), .. } => lrh::HEADER_LEN + grh::HEADER_LEN,
        }
    }

    const fn is_ib(&self) -> bool {
        matches!(self, NetworkRepr::Ib { .. })
    }
}

/// The extension headers a frame may carry; the opcode decides which are emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtReprs {
    pub rdeth: Option<rdeth::Repr>,
    pub deth: Option<deth::Repr>,
    pub xrceth: Option<xrceth::Repr>,
    pub reth: Option<reth::Repr>,
    pub atomic_eth: Option<atomic_eth::Repr>,
    pub aeth: Option<aeth::Repr>,
    pub atomic_ack_eth: Option<atomic_ack_eth::Repr>,
    pub immdt: Option<immdt::Repr>,
    pub ieth: Option<ieth::Repr>,
    pub feth: Option<feth::Repr>,
    /// NVIDIA DC's 8 bytes after the BTH. Set on an RD-range opcode, it selects the DC
    /// layout (`Opcode::dc_info`); the bytes are written as given (their meaning is not
    /// settled, capture-formats.md §3.3).
    pub dc: Option<[u8; 8]>,
    /// The DC connect header of opcode 0x55 with SE 0.
    pub dcceth: Option<[u8; 16]>,
}

impl ExtReprs {
    /// Emit `which` at the start of `buf`.
    fn emit(&self, which: ExtHeader, buf: &mut [u8]) -> Result<(), BuildError> {
        let missing = |name| BuildError::InvalidRepr(name);
        match which {
            ExtHeader::Rdeth => self
                .rdeth
                .ok_or(missing("opcode needs an RDETH"))?
                .emit(&mut rdeth::Header::new_unchecked(buf)),
            ExtHeader::Deth => self
                .deth
                .ok_or(missing("opcode needs a DETH"))?
                .emit(&mut deth::Header::new_unchecked(buf)),
            ExtHeader::XrcEth => self
                .xrceth
                .ok_or(missing("opcode needs an XRCETH"))?
                .emit(&mut xrceth::Header::new_unchecked(buf)),
            ExtHeader::Reth => self
                .reth
                .ok_or(missing("opcode needs a RETH"))?
                .emit(&mut reth::Header::new_unchecked(buf)),
            ExtHeader::AtomicEth => self
                .atomic_eth
                .ok_or(missing("opcode needs an AtomicETH"))?
                .emit(&mut atomic_eth::Header::new_unchecked(buf)),
            ExtHeader::Aeth => self
                .aeth
                .ok_or(missing("opcode needs an AETH"))?
                .emit(&mut aeth::Header::new_unchecked(buf)),
            ExtHeader::AtomicAckEth => self
                .atomic_ack_eth
                .ok_or(missing("opcode needs an AtomicAckETH"))?
                .emit(&mut atomic_ack_eth::Header::new_unchecked(buf)),
            ExtHeader::ImmDt => self
                .immdt
                .ok_or(missing("opcode needs an ImmDt"))?
                .emit(&mut immdt::Header::new_unchecked(buf)),
            ExtHeader::Ieth => self
                .ieth
                .ok_or(missing("opcode needs an IETH"))?
                .emit(&mut ieth::Header::new_unchecked(buf)),
            ExtHeader::Dc => {
                buf[..8].copy_from_slice(&self.dc.ok_or(missing("DC needs its 8 bytes"))?)
            }
            ExtHeader::Dcceth => {
                buf[..16]
                    .copy_from_slice(&self.dcceth.ok_or(missing("DC_CONNECT needs a DCCETH"))?);
            }
            ExtHeader::Feth => self
                .feth
                .ok_or(missing("opcode needs a FETH"))?
                .emit(&mut feth::Header::new_unchecked(buf)),
            ExtHeader::CnpPad => buf[..which.wire_len()].fill(0),
        }
        Ok(())
    }
}

/// A whole RoCE frame: L2, network, BTH, extension headers and a payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceFrame {
    pub l2: L2,
    pub network: NetworkRepr,
    /// `pad_count` is derived from `payload_len`.
    pub bth: bth::Repr,
    pub exts: ExtReprs,
    pub payload_len: usize,
}

impl RoceFrame {
    fn ext_list(&self) -> &'static [ExtHeader] {
        let op = self.bth.opcode;
        // an RD-range opcode with DC bytes is laid out as DC
        let info = if op.is_rd_range() && self.exts.dc.is_some() {
            op.dc_info(self.bth.solicited_event)
        } else {
            op.info()
        };
        info.and_then(|i| i.headers).unwrap_or(&[])
    }

    fn pad_count(&self) -> usize {
        self.payload_len.wrapping_neg() & 3
    }

    /// BTH through ICRC.
    fn transport_len(&self) -> usize {
        let ext: usize = self.ext_list().iter().map(|h| h.wire_len()).sum();
        bth::HEADER_LEN + ext + self.payload_len + self.pad_count() + ICRC_LEN
    }

    /// Bytes `emit` writes (Ethernet padding to 60 bytes included; a native packet has no
    /// Ethernet and ends in its VCRC).
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        if self.network.is_ib() {
            return self.network.header_len() + self.transport_len() + lrh::VCRC_LEN;
        }
        (self.l2.len() + self.network.header_len() + self.transport_len()).max(MIN_FRAME_LEN)
    }

    /// Build the frame into `buf`; `payload` fills the payload bytes. Returns
    /// the frame length.
    pub fn emit(
        &self,
        buf: &mut [u8],
        policy: &Policy,
        payload: impl FnOnce(&mut [u8]),
    ) -> Result<usize, BuildError> {
        self.emit_inner(buf, policy, payload, false, icrc::compute)
    }

    /// As [`RoceFrame::emit`] with every payload byte `fill`, and the same
    /// bytes: `cache` keeps what the next frames can reuse (the ICRC of the
    /// unchanged headers and payload), so a stream of similar frames builds faster.
    pub fn emit_filled(
        &self,
        buf: &mut [u8],
        policy: &Policy,
        fill: u8,
        cache: &mut EmitCache,
    ) -> Result<usize, BuildError> {
        let (fill_len, zero_len) = (self.payload_len, self.pad_count());
        let key = self.prefix_key();
        let same_prefix = cache.prefix_key.is_some_and(|k| k.same(&key));
        self.emit_inner(
            buf,
            policy,
            |b| b.fill(fill),
            true,
            |enc, covered| {
                let crc = cache.icrc.compute_filled_with(
                    enc,
                    covered,
                    fill,
                    fill_len,
                    zero_len,
                    same_prefix,
                );
                // the ICRC cache holds these headers exactly when it answered
                cache.prefix_key = crc.map(|_| key);
                crc
            },
        )
    }

    /// What the ICRC's masked headers up to the PSN are made of, packed in integers (fast
    /// to build and compare): the network header's fields the builder does not derive and
    /// the ICRC does not mask, the transport length and the BTH before the PSN. Equal keys
    /// mean equal masked bytes.
    fn prefix_key(&self) -> PrefixKey {
        let mut k = [0u64; 7];
        let addrs = |k: &mut [u64; 7], src: u128, dst: u128| {
            #[allow(clippy::cast_possible_truncation)] // the halves of each address
            {
                *k = [
                    (src >> 64) as u64,
                    src as u64,
                    (dst >> 64) as u64,
                    dst as u64,
                    0,
                    0,
                    0,
                ];
            }
        };
        match self.network {
            NetworkRepr::Ipv4 {
                ip,
                src_port,
                dst_port,
            } => {
                k[0] = (u64::from(ip.src_addr.to_bits()) << 32) | u64::from(ip.dst_addr.to_bits());
                k[4] = 1 | (u64::from(ip.ident) << 8) | (u64::from(ip.dont_frag) << 24);
                k[5] = u64::from(src_port) | (u64::from(dst_port) << 16);
            }
            NetworkRepr::Ipv6 {
                ip,
                src_port,
                dst_port,
            } => {
                addrs(&mut k, ip.src_addr.to_bits(), ip.dst_addr.to_bits());
                k[4] = 2;
                k[5] = u64::from(src_port) | (u64::from(dst_port) << 16);
            }
            NetworkRepr::RoceV1(grh) => {
                addrs(&mut k, grh.sgid.to_bits(), grh.dgid.to_bits());
                k[4] = 3 | (u64::from(grh.next_header) << 8);
            }
            NetworkRepr::Ib { lrh, grh } => {
                if let Some(g) = grh {
                    addrs(&mut k, g.sgid.to_bits(), g.dgid.to_bits());
                }
                // VL is masked (local) or the whole LRH (global); the rest is covered
                k[4] = 4
                    | (u64::from(grh.is_some()) << 3)
                    | (u64::from(lrh.lver) << 8)
                    | (u64::from(lrh.sl) << 12)
                    | (u64::from(lrh.dlid) << 16)
                    | (u64::from(lrh.slid) << 40);
            }
        }
        k[4] |= u64::from(self.bth.tver) << 32;
        k[5] |= (self.transport_len() as u64) << 32;
        let b = &self.bth;
        k[6] = u64::from(b.opcode.0)
            | (u64::from(b.solicited_event) << 8)
            | (u64::from(b.mig_req) << 9)
            | ((self.pad_count() as u64) << 10)
            | (u64::from(b.pkey) << 16)
            | (u64::from(b.dest_qp.value()) << 32);
        PrefixKey(k)
    }

    fn emit_inner(
        &self,
        buf: &mut [u8],
        policy: &Policy,
        payload: impl FnOnce(&mut [u8]),
        fast_ipv4_checksum: bool,
        icrc_of: impl FnOnce(Encapsulation, &[u8]) -> Option<u32>,
    ) -> Result<usize, BuildError> {
        let total = self.buffer_len();
        let have = buf.len();
        let buf = buf
            .get_mut(..total)
            .ok_or(BuildError::BufferTooSmall { need: total, have })?;
        let transport_len = self.transport_len();
        if transport_len > usize::from(u16::MAX) - ipv4::HEADER_LEN - udp::HEADER_LEN {
            return Err(BuildError::InvalidRepr("payload too large for one packet"));
        }
        let inner = match self.network {
            NetworkRepr::Ipv4 { .. } => EtherType::IPV4,
            NetworkRepr::Ipv6 { .. } => EtherType::IPV6,
            NetworkRepr::RoceV1(_) => EtherType::ROCEV1,
            NetworkRepr::Ib { .. } => EtherType(0),
        };
        let net_at = if self.network.is_ib() {
            0
        } else {
            self.l2.emit(buf, inner)
        };
        let bth_at = net_at + self.network.header_len();
        let end = bth_at + transport_len;
        buf[end..].fill(0); // Ethernet padding (a native packet's VCRC goes there)

        // Payload and pad.
        let list = self.ext_list();
        let mut at = bth_at + bth::HEADER_LEN;
        for &h in list {
            self.exts.emit(h, &mut buf[at..at + h.wire_len()])?;
            at += h.wire_len();
        }
        payload(&mut buf[at..at + self.payload_len]);
        at += self.payload_len;
        buf[at..end - ICRC_LEN].fill(0);

        let mut b = self.bth;
        #[allow(clippy::cast_possible_truncation)] // pad_count is 0..=3
        {
            b.pad_count = self.pad_count() as u8;
        }
        b.emit(&mut bth::Header::new_unchecked(
            &mut buf[bth_at..bth_at + bth::HEADER_LEN],
        ));

        let udp_len = udp::HEADER_LEN + transport_len;
        let (encapsulation, udp_at) = match self.network {
            NetworkRepr::Ipv4 {
                ip,
                src_port,
                dst_port,
            } => {
                let mut ip = ip;
                ip.next_header = IpProtocol::UDP;
                ip.payload_len = udp_len;
                if fast_ipv4_checksum && policy.ipv4_checksum.fill() {
                    // one copy of a header worked out in registers: setting the fields
                    // one by one and reading them back for the checksum stalls
                    let header = ipv4_header(&ip);
                    debug_assert_eq!(header, {
                        let mut h = [0u8; ipv4::HEADER_LEN];
                        ip.emit(&mut ipv4::Packet::new_unchecked(&mut h), ChecksumMode::Both);
                        h
                    });
                    buf[net_at..net_at + ipv4::HEADER_LEN].copy_from_slice(&header);
                } else {
                    let mut packet = ipv4::Packet::new_unchecked(&mut buf[net_at..end]);
                    ip.emit(&mut packet, policy.ipv4_checksum);
                }
                let mut packet = ipv4::Packet::new_unchecked(&mut buf[net_at..end]);
                if policy.corrupt_ipv4_checksum {
                    let c = packet.checksum();
                    packet.set_checksum(!c);
                }
                let udp_at = net_at + ipv4::HEADER_LEN;
                emit_udp_header(&mut buf[udp_at..end], src_port, dst_port, transport_len);
                (
                    Encapsulation::Ipv4 {
                        header_len: ipv4::HEADER_LEN as u8,
                    },
                    Some((udp_at, IpAddr::V4(ip.src_addr), IpAddr::V4(ip.dst_addr))),
                )
            }
            NetworkRepr::Ipv6 {
                ip,
                src_port,
                dst_port,
            } => {
                let mut ip = ip;
                ip.next_header = IpProtocol::UDP;
                ip.payload_len = udp_len;
                ip.emit(&mut ipv6::Packet::new_unchecked(&mut buf[net_at..end]));
                let udp_at = net_at + ipv6::HEADER_LEN;
                emit_udp_header(&mut buf[udp_at..end], src_port, dst_port, transport_len);
                (
                    Encapsulation::Ipv6,
                    Some((udp_at, IpAddr::V6(ip.src_addr), IpAddr::V6(ip.dst_addr))),
                )
            }
            NetworkRepr::RoceV1(grh) => {
                let mut grh = grh;
                #[allow(clippy::cast_possible_truncation)] // checked against u16::MAX above
                {
                    grh.payload_len = transport_len as u16;
                }
                grh.emit(&mut grh::Packet::new_unchecked(&mut buf[net_at..end]));
                (Encapsulation::RoceV1, None)
            }
            NetworkRepr::Ib { lrh, grh } => {
                let mut lrh = lrh;
                let words = (self.network.header_len() + transport_len) / 4;
                lrh.pkt_len = u16::try_from(words).ok().filter(|&w| w <= 0x07FF).ok_or(
                    BuildError::InvalidRepr("packet too large for the LRH's PktLen"),
                )?;
                lrh.lnh = if grh.is_some() {
                    lrh::NextHeader::IbaGlobal
                } else {
                    lrh::NextHeader::IbaLocal
                };
                lrh.emit(&mut lrh::Header::new_unchecked(&mut buf[..lrh::HEADER_LEN]));
                match grh {
                    Some(mut g) => {
                        #[allow(clippy::cast_possible_truncation)] // ≤ PktLen's 8 KiB
                        {
                            g.payload_len = transport_len as u16;
                        }
                        g.emit(&mut grh::Packet::new_unchecked(
                            &mut buf[lrh::HEADER_LEN..end],
                        ));
                        (Encapsulation::IbGlobal, None)
                    }
                    None => (Encapsulation::IbLocal, None),
                }
            }
        };

        let crc = icrc_of(encapsulation, &buf[net_at..end - ICRC_LEN])
            .ok_or(BuildError::InvalidRepr("headers too short for the ICRC"))?;
        debug_assert_eq!(
            Some(crc),
            icrc::compute(encapsulation, &buf[net_at..end - ICRC_LEN])
        );
        let crc = match policy.icrc {
            IcrcPolicy::Correct => crc,
            IcrcPolicy::Corrupt(x) => crc ^ x.max(1),
        };
        buf[end - ICRC_LEN..end].copy_from_slice(&crc.to_le_bytes());
        if self.network.is_ib() {
            let v = icrc::vcrc(&buf[..end]);
            buf[end..end + lrh::VCRC_LEN].copy_from_slice(&v.to_le_bytes());
        }

        if let Some((udp_at, src, dst)) = udp_at {
            let fill = match policy.udp_checksum {
                UdpChecksum::Fill => true,
                UdpChecksum::Zero => false,
                UdpChecksum::Auto => src.is_ipv6(),
            };
            if fill {
                udp::Packet::new_unchecked(&mut buf[udp_at..end]).fill_checksum(&src, &dst);
            }
        }
        Ok(total)
    }
}

/// What [`RoceFrame::emit_filled`] remembers between frames (no allocation per frame).
#[derive(Debug, Clone, Default)]
pub struct EmitCache {
    icrc: icrc::IcrcCache,
    /// The headers whose ICRC prefix `icrc` holds.
    prefix_key: Option<PrefixKey>,
}

/// See [`RoceFrame::prefix_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PrefixKey([u64; 7]);

impl PrefixKey {
    /// `==`, inline (the derived one calls `memcmp`).
    fn same(&self, other: &PrefixKey) -> bool {
        self.0
            .iter()
            .zip(&other.0)
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl EmitCache {
    #[must_use]
    pub fn new() -> EmitCache {
        EmitCache::default()
    }
}

/// The 20-byte header `ipv4::Repr::emit` writes for `ip`, checksum filled, worked out
/// from the fields (no option, no fragment, reserved bit 0).
fn ipv4_header(ip: &ipv4::Repr) -> [u8; ipv4::HEADER_LEN] {
    let tos = (ip.dscp << 2) | (ip.ecn & 0x03);
    let total_len = u16::try_from(ip.buffer_len()).unwrap_or(u16::MAX);
    let flags: u16 = if ip.dont_frag { 0x4000 } else { 0 };
    let words: [u16; 10] = {
        let src = ip.src_addr.to_bits();
        let dst = ip.dst_addr.to_bits();
        #[allow(clippy::cast_possible_truncation)] // the halves of each address
        [
            0x4500 | u16::from(tos),
            total_len,
            ip.ident,
            flags,
            (u16::from(ip.hop_limit) << 8) | u16::from(ip.next_header.0),
            0, // checksum
            (src >> 16) as u16,
            src as u16,
            (dst >> 16) as u16,
            dst as u16,
        ]
    };
    let mut acc: u32 = words.iter().map(|&w| u32::from(w)).sum();
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    #[allow(clippy::cast_possible_truncation)] // folded to 16 bits
    let checksum = !(acc as u16);
    let mut out = [0u8; ipv4::HEADER_LEN];
    for (i, w) in words.iter().enumerate() {
        let w = if i == 5 { checksum } else { *w };
        out[2 * i..2 * i + 2].copy_from_slice(&w.to_be_bytes());
    }
    out
}

fn emit_udp_header(buf: &mut [u8], src_port: u16, dst_port: u16, transport_len: usize) {
    let repr = udp::Repr {
        src_port,
        dst_port,
        payload_len: transport_len,
    };
    // The checksum is filled after the ICRC; the placeholder addresses are unused.
    let none = IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED);
    repr.emit(
        &mut udp::Packet::new_unchecked(buf),
        &none,
        &none,
        ChecksumMode::None,
    );
}

/// An 802.3x PAUSE or 802.1Qbb PFC frame (or another MAC Control opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacControlFrame {
    pub l2: L2,
    pub body: mac_control::Repr,
}

impl MacControlFrame {
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        (self.l2.len() + self.body.buffer_len()).max(MIN_FRAME_LEN)
    }

    /// Build the frame, zero-padded to 60 bytes; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        let total = self.buffer_len();
        let have = buf.len();
        let buf = buf
            .get_mut(..total)
            .ok_or(BuildError::BufferTooSmall { need: total, have })?;
        let at = self.l2.emit(buf, EtherType::MAC_CONTROL);
        buf[at..].fill(0);
        let len = self.body.buffer_len();
        self.body.emit(&mut mac_control::Packet::new_unchecked(
            &mut buf[at..at + len],
        ));
        Ok(total)
    }
}

/// The network layer of a TCP frame; `next_header` and lengths are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpNetwork {
    Ipv4(ipv4::Repr),
    Ipv6(ipv6::Repr),
}

/// A TCP segment: L2, IPv4/IPv6, TCP with its options (timestamps, SACK,
/// the `tcp_bth` option …) and `tcp.payload_len` payload bytes. The `tcp_bth`
/// v1 ICRC (tcp_bth.md §c.6) and the TCP checksum are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFrame {
    pub l2: L2,
    pub network: TcpNetwork,
    pub tcp: crate::tcp::Repr,
    /// CRC used for the `tcp_bth` v1 ICRC.
    pub icrc_algorithm: crate::tcp_bth::IcrcAlgorithm,
}

impl TcpFrame {
    fn ip_header_len(&self) -> usize {
        match self.network {
            TcpNetwork::Ipv4(_) => ipv4::HEADER_LEN,
            TcpNetwork::Ipv6(_) => ipv6::HEADER_LEN,
        }
    }

    /// Bytes `emit` writes (Ethernet padding to 60 bytes included).
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        (self.l2.len() + self.ip_header_len() + self.tcp.buffer_len()).max(MIN_FRAME_LEN)
    }

    /// Build the frame into `buf`; `payload` fills the TCP payload. `policy`
    /// gives the IPv4 checksum and the `tcp_bth` ICRC (`Corrupt` flips it);
    /// its UDP setting is unused. Returns the frame length.
    pub fn emit(
        &self,
        buf: &mut [u8],
        policy: &Policy,
        payload: impl FnOnce(&mut [u8]),
    ) -> Result<usize, BuildError> {
        use crate::tcp;
        let total = self.buffer_len();
        let have = buf.len();
        let buf = buf
            .get_mut(..total)
            .ok_or(BuildError::BufferTooSmall { need: total, have })?;
        if !self.tcp.is_valid() {
            return Err(BuildError::InvalidRepr("TCP options longer than 40 bytes"));
        }
        let seg_len = self.tcp.buffer_len();
        if seg_len > usize::from(u16::MAX) - ipv4::HEADER_LEN {
            return Err(BuildError::InvalidRepr("payload too large for one packet"));
        }
        let inner = match self.network {
            TcpNetwork::Ipv4(_) => EtherType::IPV4,
            TcpNetwork::Ipv6(_) => EtherType::IPV6,
        };
        let net_at = self.l2.emit(buf, inner);
        let tcp_at = net_at + self.ip_header_len();
        let end = tcp_at + seg_len;
        buf[end..].fill(0); // Ethernet padding
        let header_len = self.tcp.header_len();
        payload(&mut buf[tcp_at + header_len..end]);

        let (src, dst) = match self.network {
            TcpNetwork::Ipv4(ip) => {
                let mut ip = ip;
                ip.next_header = IpProtocol::TCP;
                ip.payload_len = seg_len;
                let mut packet = ipv4::Packet::new_unchecked(&mut buf[net_at..end]);
                ip.emit(&mut packet, policy.ipv4_checksum);
                if policy.corrupt_ipv4_checksum {
                    let c = packet.checksum();
                    packet.set_checksum(!c);
                }
                (IpAddr::V4(ip.src_addr), IpAddr::V4(ip.dst_addr))
            }
            TcpNetwork::Ipv6(ip) => {
                let mut ip = ip;
                ip.next_header = IpProtocol::TCP;
                ip.payload_len = seg_len;
                ip.emit(&mut ipv6::Packet::new_unchecked(&mut buf[net_at..end]));
                (IpAddr::V6(ip.src_addr), IpAddr::V6(ip.dst_addr))
            }
        };
        let segment = &mut buf[tcp_at..end];
        self.tcp.emit(
            &mut tcp::Packet::new_unchecked(&mut *segment),
            &src,
            &dst,
            false,
        );
        // The tcp_bth ICRC covers the option and the payload, then the TCP
        // checksum covers the ICRC.
        let exid = self.tcp.options.tcp_bth.map(|b| b.exid());
        if let Some(exid) = exid {
            let (head, data) = segment.split_at_mut(header_len);
            if let Some((at, _)) = tcp::find_tcp_bth(&head[tcp::HEADER_LEN..], exid) {
                let mut option = crate::tcp_bth::Header::new_unchecked(&mut head[at..]);
                option.fill_icrc(data, self.icrc_algorithm);
                if let IcrcPolicy::Corrupt(x) = policy.icrc {
                    if option.format() == Some(crate::tcp_bth::Format::V1) {
                        let crc = option.icrc() ^ x.max(1);
                        option.set_icrc(crc);
                    }
                }
            }
        }
        tcp::Packet::new_unchecked(segment).fill_checksum(&src, &dst);
        Ok(total)
    }
}
