//! UDP (RFC 768), 8 bytes; RoCEv2 runs on destination port 4791
//! (protocol.md §9). The source port is ECMP entropy.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::IpAddr;

use crate::checksum::{self, ChecksumMode};
use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::ipv4::IpProtocol;
use crate::visit::{Value, Visitor, span};

/// The IANA-assigned RoCEv2 destination port.
pub const ROCEV2_PORT: u16 = 4791;

mod field {
    use crate::field::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    /// masked to ones in the ICRC
    pub const CHECKSUM: Field = 6..8;
}

pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A read/write view of a UDP datagram (header and payload).
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

    /// Header present; Length ≥ 8 (else `Malformed { LengthTooShort }`);
    /// the whole datagram present (else `Truncated`). Bytes after Length are ignored.
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::Udp, HEADER_LEN, have)?;
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(WireError::Malformed {
                layer: Layer::Udp,
                offset: field::LENGTH.start,
                reason: Malformed::LengthTooShort {
                    value: u32::from(self.len()),
                    need: HEADER_LEN as u32,
                },
            });
        }
        error::need(Layer::Udp, len, have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b()[at], self.b()[at + 1]])
    }

    #[must_use]
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT.start)
    }
    #[must_use]
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT.start)
    }
    /// Length: header plus payload.
    #[must_use]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        self.u16_at(field::LENGTH.start)
    }
    #[must_use]
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM.start)
    }
    /// `8..len`; bytes after Length are not included. Empty if Length does
    /// not fit the buffer (never after `check_len`).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        let end = usize::from(self.len());
        self.b().get(HEADER_LEN..end).unwrap_or_default()
    }

    /// Whether the checksum over the pseudo-header and `len` bytes is right.
    ///
    /// A zero checksum over IPv4 means "not computed" and verifies; over IPv6
    /// it does not (RFC 8200 §8.1). False if Length does not fit the buffer.
    /// Always true under `cfg(fuzzing)`. A mismatch is a finding, not a parse error.
    #[must_use]
    #[allow(unexpected_cfgs)]
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        if self.checksum() == 0 && src.is_ipv4() && dst.is_ipv4() {
            return true;
        }
        let len = self.len();
        match self.b().get(..usize::from(len)) {
            Some(datagram) => {
                checksum::combine(&[
                    checksum::pseudo_header(src, dst, IpProtocol::UDP.0, u32::from(len)),
                    checksum::data(datagram),
                ]) == 0xFFFF
            }
            None => false,
        }
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let src = Value::Uint(u64::from(self.src_port()));
        v.field("srcport", "Source Port", src, span(offset, field::SRC_PORT));
        let dst = Value::Uint(u64::from(self.dst_port()));
        v.field(
            "dstport",
            "Destination Port",
            dst,
            span(offset, field::DST_PORT),
        );
        let len = Value::Uint(u64::from(self.len()));
        v.field("len", "Length", len, span(offset, field::LENGTH));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_u16_at(&mut self, at: usize, value: u16) {
        self.b_mut()[at..at + 2].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_src_port(&mut self, value: u16) {
        self.set_u16_at(field::SRC_PORT.start, value);
    }
    pub fn set_dst_port(&mut self, value: u16) {
        self.set_u16_at(field::DST_PORT.start, value);
    }
    pub fn set_len(&mut self, value: u16) {
        self.set_u16_at(field::LENGTH.start, value);
    }
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM.start, value);
    }
    /// Mutable payload, `8..len` (set Length first; empty if it does not fit).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        self.b_mut().get_mut(HEADER_LEN..end).unwrap_or_default()
    }

    /// Compute the checksum over the pseudo-header and the first `len` bytes
    /// (header and payload, which must already be in place) and write it; a
    /// computed 0 is sent as 0xFFFF. Writes 0 if Length does not fit the buffer.
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        let len = self.len();
        let value = match self.b().get(..usize::from(len)) {
            Some(datagram) => {
                match !checksum::combine(&[
                    checksum::pseudo_header(src, dst, IpProtocol::UDP.0, u32::from(len)),
                    checksum::data(datagram),
                ]) {
                    0 => 0xFFFF,
                    sum => sum,
                }
            }
            None => 0,
        };
        self.set_checksum(value);
    }
}

/// The UDP header's meaning, without the checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Length − 8. At most [`Repr::MAX_PAYLOAD_LEN`].
    pub payload_len: usize,
}

impl Repr {
    pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - HEADER_LEN;

    /// Read the header. The checksum is not checked: call
    /// [`Packet::verify_checksum`] and report a mismatch.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()).saturating_sub(HEADER_LEN),
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

    /// Whether the datagram goes to the RoCEv2 port.
    #[must_use]
    pub const fn is_rocev2(&self) -> bool {
        self.dst_port == ROCEV2_PORT
    }

    /// Write the header with Length = 8 + `payload_len` (65535 if larger),
    /// and the checksum if `mode.fill()`, else 0.
    ///
    /// `packet` must hold [`HEADER_LEN`] bytes, or [`buffer_len`](Self::buffer_len)
    /// bytes when filling the checksum: the checksum covers the payload, so
    /// the payload must already be written (the builder writes it first).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        src: &IpAddr,
        dst: &IpAddr,
        mode: ChecksumMode,
    ) {
        packet.b_mut()[..HEADER_LEN].fill(0);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        if mode.fill() {
            packet.fill_checksum(src, dst);
        }
    }
}

/// nom adapter used by `stack.rs`: takes `max(8, len)` bytes and fails when
/// fewer remain. Call `check_len` on the result for `LengthTooShort`.
#[allow(
    dead_code,
    reason = "nom seam for stack.rs, which checks lengths itself for now"
)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, fixed) = error::take_complete(i, HEADER_LEN)?;
    let len = HEADER_LEN.max(usize::from(Packet::new_unchecked(fixed).len()));
    let (rest, bytes) = error::take_complete(i, len)?;
    Ok((rest, Packet::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UDP srcport={} dstport={} len={}",
            self.src_port,
            self.dst_port,
            self.buffer_len()
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Err(err) = self.check_len() {
            return write!(f, "UDP ({err})");
        }
        write!(
            f,
            "UDP srcport={} dstport={} len={} checksum={:#06x}",
            self.src_port(),
            self.dst_port(),
            self.len(),
            self.checksum()
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};
    use proptest::prelude::*;

    /// UDP datagram of protocol.md §4.3 vector B (IPv4 192.168.0.7 -> 192.168.0.7).
    static BYTES: [u8; 44] = [
        0xc0, 0x00, // source port 49152
        0x12, 0xb7, // destination port 4791
        0x00, 0x2c, // length 44
        0xac, 0xa2, // checksum 0xACA2
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, // BTH
        0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50, 0x54, 0x01, 0xbe,
        0x88, 0x5e, 0x50, 0x00, 0x00, // 18 payload bytes + 2 pad
        0x78, 0xf3, 0x53, 0xf3, // ICRC
    ];

    /// Full vector B IP packet: IPv4 header (protocol.md §4.3) + [`BYTES`].
    const VECTOR_B_IPV4: &str = "45010040047840004011b4d5c0a80007c0a80007\
        c00012b7002caca22460ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3";

    /// Vector D (IPv6) after the Ethernet header.
    const VECTOR_D_IPV6: &str = "6681234500201140fe800000000000000000000000000001\
        fe800000000000000000000000000002c12312b7002000000430ffff0000012380abcdef01020304050000004c406c64";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn b_addr() -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(192, 168, 0, 7))
    }

    fn repr() -> Repr {
        Repr {
            src_port: 49152,
            dst_port: ROCEV2_PORT,
            payload_len: 36,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 49152);
        assert_eq!(p.dst_port(), 4791);
        assert_eq!(p.len(), 44);
        assert_eq!(p.checksum(), 0xaca2);
        assert_eq!(p.payload(), &BYTES[8..]);
        assert!(p.verify_checksum(&b_addr(), &b_addr()));
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 44];
        buf[8..].copy_from_slice(&BYTES[8..]);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(49152);
        p.set_dst_port(4791);
        p.set_len(44);
        p.fill_checksum(&b_addr(), &b_addr());
        assert_eq!(p.payload_mut().len(), 36);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&p), Ok(repr()));
        assert!(repr().is_rocev2());
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 44];
        buf[8..].copy_from_slice(&BYTES[8..]);
        repr().emit(
            &mut Packet::new_unchecked(&mut buf[..]),
            &b_addr(),
            &b_addr(),
            ChecksumMode::Both,
        );
        assert_eq!(buf, BYTES);
        repr().emit(
            &mut Packet::new_unchecked(&mut buf[..]),
            &b_addr(),
            &b_addr(),
            ChecksumMode::None,
        );
        assert_eq!(Packet::new_unchecked(&buf[..]).checksum(), 0);
        assert_eq!(repr().buffer_len(), 44);
    }

    #[test]
    fn test_vector_b_ipv4() {
        let packet = hex(VECTOR_B_IPV4);
        assert_eq!(packet.len(), 64);
        let ip = crate::ipv4::Packet::new_checked(&packet[..]).unwrap();
        assert!(ip.verify_checksum());
        let (src, dst) = (IpAddr::V4(ip.src_addr()), IpAddr::V4(ip.dst_addr()));
        let udp = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(udp.checksum(), 0xaca2);
        assert!(udp.verify_checksum(&src, &dst));
        // one flipped payload bit breaks it
        let mut bad = packet.clone();
        bad[40] ^= 0x01;
        let ip = crate::ipv4::Packet::new_checked(&bad[..]).unwrap();
        assert!(
            !Packet::new_checked(ip.payload())
                .unwrap()
                .verify_checksum(&src, &dst)
        );
    }

    #[test]
    fn test_vector_d_ipv6() {
        let packet = hex(VECTOR_D_IPV6);
        let ip = crate::ipv6::Packet::new_checked(&packet[..]).unwrap();
        let (src, dst) = (IpAddr::V6(ip.src_addr()), IpAddr::V6(ip.dst_addr()));
        let udp = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            Repr::parse(&udp),
            Ok(Repr {
                src_port: 0xc123,
                dst_port: ROCEV2_PORT,
                payload_len: 24
            })
        );
        // the vector carries checksum 0, which over IPv6 does not verify
        assert_eq!(udp.checksum(), 0);
        assert!(!udp.verify_checksum(&src, &dst));
        let mut datagram = ip.payload().to_vec();
        let mut udp = Packet::new_unchecked(&mut datagram[..]);
        udp.fill_checksum(&src, &dst);
        assert_eq!(udp.checksum(), 0x1936); // computed independently (Python)
        assert!(udp.verify_checksum(&src, &dst));
    }

    #[test]
    fn test_zero_checksum() {
        let mut buf = BYTES;
        Packet::new_unchecked(&mut buf[..]).set_checksum(0);
        let p = Packet::new_unchecked(&buf[..]);
        assert!(p.verify_checksum(&b_addr(), &b_addr()));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert!(!p.verify_checksum(&v6, &v6));
    }

    #[test]
    fn test_fill_never_zero() {
        // a datagram whose checksum computes to 0 is sent as 0xFFFF
        let zero = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let mut buf = [0u8; 10];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_len(10);
        // pseudo-header sum 0x0011 + 0x000a; make the payload cancel the total to 0xFFFF
        let sum = checksum::combine(&[
            checksum::pseudo_header_v4(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 17, 10),
            checksum::data(&[0, 0, 0, 0, 0, 10, 0, 0]),
        ]);
        p.payload_mut().copy_from_slice(&(!sum).to_be_bytes());
        p.fill_checksum(&zero, &zero);
        assert_eq!(p.checksum(), 0xFFFF);
        assert!(p.verify_checksum(&zero, &zero));
    }

    #[test]
    fn test_truncated() {
        let err = Packet::new_checked(&BYTES[..7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated UDP at offset 0: need 8 bytes, have 7"
        );
        let err = Packet::new_checked(&BYTES[..20]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated UDP at offset 0: need 44 bytes, have 20"
        );
        let mut short = BYTES;
        short[5] = 7;
        assert_eq!(
            Packet::new_checked(&short[..]).unwrap_err(),
            WireError::Malformed {
                layer: Layer::Udp,
                offset: 4,
                reason: Malformed::LengthTooShort { value: 7, need: 8 }
            }
        );
    }

    #[test]
    fn test_nom_parse() {
        let mut buf = BYTES.to_vec();
        buf.extend_from_slice(&[0xEE; 6]);
        let (rest, p) = parse(&buf).unwrap();
        assert_eq!((rest.len(), p.into_inner().len()), (6, 44));
        assert!(parse(&BYTES[..43]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "UDP srcport=49152 dstport=4791 len=44");
        assert_eq!(
            Packet::new_unchecked(&BYTES[..]).to_string(),
            "UDP srcport=49152 dstport=4791 len=44 checksum=0xaca2"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_udp(
            repr in crate::strategy::udp(),
            v6 in any::<bool>(),
            src in any::<u128>(),
            dst in any::<u128>(),
            fill in any::<u8>(),
        ) {
            let (src, dst) = if v6 {
                (IpAddr::V6(Ipv6Addr::from_bits(src)), IpAddr::V6(Ipv6Addr::from_bits(dst)))
            } else {
                (IpAddr::V4(Ipv4Addr::from_bits(src as u32)), IpAddr::V4(Ipv4Addr::from_bits(dst as u32)))
            };
            let mut buf = vec![fill; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]), &src, &dst, ChecksumMode::Both);
            let packet = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(packet.checksum() != 0);
            prop_assert!(packet.verify_checksum(&src, &dst));
            prop_assert_eq!(Repr::parse(&packet), Ok(repr));
        }

        #[test]
        fn roundtrip_udp_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            // canonical: no payload, checksum not filled (mode Rx writes 0)
            bytes[field::LENGTH].copy_from_slice(&8u16.to_be_bytes());
            bytes[field::CHECKSUM].fill(0);
            let repr = Repr::parse(&Packet::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0xAAu8; HEADER_LEN];
            let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
            repr.emit(&mut Packet::new_unchecked(&mut out[..]), &any, &any, ChecksumMode::Rx);
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn roundtrip_udp_any_bytes_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
            if let Ok(p) = Packet::new_checked(&bytes[..]) {
                let _ = (p.payload(), p.to_string(), p.verify_checksum(&any, &any));
                let _ = Repr::parse(&p);
            }
            let _ = parse(&bytes);
        }
    }
}
