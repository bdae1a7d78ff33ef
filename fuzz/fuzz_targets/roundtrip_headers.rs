//! One header kind per input, both directions:
//! - `Arbitrary` Repr -> normalise what the format cannot carry (as each Repr
//!   documents) -> `emit` -> `parse` == the normalised Repr;
//! - raw header bytes -> canonicalise (reserved bits zero, as each module's
//!   `*_bytes` property test does) -> `parse` -> `emit` == the same bytes.
#![no_main]

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::checksum::ChecksumMode;
use rocescope_dissectors::ib::{
    aeth, atomic_ack_eth, atomic_eth, bth, cnp, deth, feth, ieth, immdt, rdeth, reth, xrceth,
};
use rocescope_dissectors::mac_control::MacControlOpcode;
use rocescope_dissectors::{Psn, Qpn, cm, ethernet, grh, ipv4, ipv6, mac_control, udp, vlan};

const FLOW_LABEL_MASK: u32 = 0x000F_FFFF;

#[derive(Debug, Arbitrary)]
enum Input {
    Repr(AnyRepr),
    Bytes(Kind, [u8; 64]),
}

#[derive(Debug, Arbitrary)]
enum AnyRepr {
    Bth(bth::Repr),
    Reth(reth::Repr),
    Aeth(aeth::Repr),
    AtomicEth(atomic_eth::Repr),
    AtomicAckEth(atomic_ack_eth::Repr),
    ImmDt(immdt::Repr),
    Ieth(ieth::Repr),
    Deth(deth::Repr),
    Rdeth(rdeth::Repr),
    XrcEth(xrceth::Repr),
    Feth(feth::Repr),
    Cnp(cnp::Repr),
    Ethernet(ethernet::Repr),
    Vlan(vlan::Repr),
    MacControl(mac_control::Repr),
    Ipv4(ipv4::Repr, ChecksumMode),
    Ipv6(ipv6::Repr),
    Udp(udp::Repr, Addrs, ChecksumMode),
    Grh(grh::Repr),
    Mad(cm::Repr),
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Addrs {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

impl Addrs {
    fn pair(self) -> (IpAddr, IpAddr) {
        match self {
            Addrs::V4(s, d) => (Ipv4Addr::from(s).into(), Ipv4Addr::from(d).into()),
            Addrs::V6(s, d) => (Ipv6Addr::from(s).into(), Ipv6Addr::from(d).into()),
        }
    }
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Kind {
    Bth,
    Reth,
    Aeth,
    AtomicEth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Deth,
    Rdeth,
    XrcEth,
    Feth,
    Cnp,
    Ethernet,
    Vlan,
    MacControl,
    Ipv4,
    Ipv6,
    Udp,
    Grh,
    Mad,
}

fuzz_target!(|input: Input| match input {
    Input::Repr(repr) => repr_roundtrip(repr),
    Input::Bytes(kind, bytes) => bytes_roundtrip(kind, bytes),
});

/// `emit` a fixed-size header with `emit` and parse it back with `parse`.
macro_rules! fixed {
    ($module:ident, $repr:expr) => {{
        let repr = $repr;
        let mut buf = [0xA5u8; $module::HEADER_LEN];
        assert_eq!(repr.header_len(), $module::HEADER_LEN);
        repr.emit(&mut $module::Header::new_unchecked(&mut buf[..]));
        let back = $module::Repr::parse(&$module::Header::new_unchecked(&buf[..]));
        assert_eq!(back, Ok(repr));
        let _ = repr.to_string();
    }};
}

fn repr_roundtrip(repr: AnyRepr) {
    match repr {
        AnyRepr::Bth(mut r) => {
            // pad_count 0..=3, tver 0..=15, 24-bit QPN and PSN
            r.pad_count &= 0x03;
            r.tver &= 0x0F;
            r.dest_qp = Qpn::new_masked(r.dest_qp.value());
            r.psn = Psn::new_masked(r.psn.value());
            fixed!(bth, r);
        }
        AnyRepr::Reth(r) => fixed!(reth, r),
        AnyRepr::Aeth(mut r) => {
            r.msn &= aeth::MSN_MAX;
            fixed!(aeth, r);
        }
        AnyRepr::AtomicEth(r) => fixed!(atomic_eth, r),
        AnyRepr::AtomicAckEth(r) => fixed!(atomic_ack_eth, r),
        AnyRepr::ImmDt(r) => fixed!(immdt, r),
        AnyRepr::Ieth(r) => fixed!(ieth, r),
        AnyRepr::Deth(mut r) => {
            r.src_qp = Qpn::new_masked(r.src_qp.value());
            fixed!(deth, r);
        }
        AnyRepr::Rdeth(mut r) => {
            r.ee_context &= rdeth::EE_CONTEXT_MAX;
            fixed!(rdeth, r);
        }
        AnyRepr::XrcEth(mut r) => {
            r.xrc_srqn &= xrceth::XRC_SRQN_MAX;
            fixed!(xrceth, r);
        }
        AnyRepr::Feth(mut r) => {
            r.placement_type &= 0x0F;
            r.selectivity_level &= 0x03;
            fixed!(feth, r);
        }
        AnyRepr::Cnp(r) => fixed!(cnp, r),
        AnyRepr::Ethernet(r) => {
            let mut buf = [0u8; ethernet::HEADER_LEN];
            assert_eq!(r.buffer_len(), ethernet::HEADER_LEN);
            r.emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
            let back = ethernet::Repr::parse(&ethernet::Frame::new_unchecked(&buf[..]));
            assert_eq!(back, Ok(r));
            let _ = r.to_string();
        }
        AnyRepr::Vlan(mut r) => {
            r.pcp &= 0x07;
            fixed!(vlan, r);
        }
        AnyRepr::MacControl(r) => {
            // `Other` is never PAUSE or PFC (documented: it would not parse back)
            if let mac_control::Repr::Other { opcode } = r
                && (opcode == MacControlOpcode::PAUSE || opcode == MacControlOpcode::PFC)
            {
                return;
            }
            let mut buf = [0xA5u8; mac_control::PFC_LEN];
            let len = r.buffer_len();
            assert_eq!(len, r.opcode().body_len());
            r.emit(&mut mac_control::Packet::new_unchecked(&mut buf[..len]));
            let back = mac_control::Repr::parse(&mac_control::Packet::new_unchecked(&buf[..len]));
            assert_eq!(back, Ok(r));
            let _ = r.to_string();
        }
        AnyRepr::Ipv4(mut r, mode) => {
            // emit documents what happens above the limit: Total Length 65535
            let mut header = [0u8; ipv4::HEADER_LEN];
            r.emit(&mut ipv4::Packet::new_unchecked(&mut header[..]), mode);
            let total = ipv4::Packet::new_unchecked(&header[..]).total_len();
            let want = r.payload_len.saturating_add(ipv4::HEADER_LEN).min(65535);
            assert_eq!(usize::from(total), want);
            let _ = r.to_string();
            // dscp 0..=63, ecn 0..=3, payload_len at most MAX_PAYLOAD_LEN
            r.dscp &= 0x3F;
            r.ecn &= 0x03;
            r.payload_len = r.payload_len.min(ipv4::Repr::MAX_PAYLOAD_LEN);
            let mut buf = vec![0xA5u8; r.buffer_len()];
            r.emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]), mode);
            let packet = ipv4::Packet::new_checked(&buf[..]).expect("emitted IPv4 checks");
            assert!(packet.verify_checksum() || !mode.fill());
            assert_eq!(ipv4::Repr::parse(&packet), Ok(r));
        }
        AnyRepr::Ipv6(mut r) => {
            let mut header = [0u8; ipv6::HEADER_LEN];
            r.emit(&mut ipv6::Packet::new_unchecked(&mut header[..]));
            let len = ipv6::Packet::new_unchecked(&header[..]).payload_len();
            assert_eq!(usize::from(len), r.payload_len.min(65535));
            let _ = r.to_string();
            // 20-bit flow label, payload_len at most MAX_PAYLOAD_LEN
            r.flow_label &= FLOW_LABEL_MASK;
            r.payload_len = r.payload_len.min(ipv6::Repr::MAX_PAYLOAD_LEN);
            let mut buf = vec![0xA5u8; r.buffer_len()];
            r.emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
            let packet = ipv6::Packet::new_checked(&buf[..]).expect("emitted IPv6 checks");
            assert_eq!(ipv6::Repr::parse(&packet), Ok(r));
        }
        AnyRepr::Udp(mut r, addrs, mode) => {
            let (src, dst) = addrs.pair();
            // Length = 8 + payload_len, 65535 if larger (header-only buffer: no checksum)
            let mut header = [0u8; udp::HEADER_LEN];
            r.emit(
                &mut udp::Packet::new_unchecked(&mut header[..]),
                &src,
                &dst,
                ChecksumMode::Rx,
            );
            let len = udp::Packet::new_unchecked(&header[..]).len();
            let want = r.payload_len.saturating_add(udp::HEADER_LEN).min(65535);
            assert_eq!(usize::from(len), want);
            let _ = (r.is_rocev2(), r.to_string());
            r.payload_len = r.payload_len.min(udp::Repr::MAX_PAYLOAD_LEN);
            let mut buf = vec![0xA5u8; r.buffer_len()];
            r.emit(
                &mut udp::Packet::new_unchecked(&mut buf[..]),
                &src,
                &dst,
                mode,
            );
            let packet = udp::Packet::new_checked(&buf[..]).expect("emitted UDP checks");
            assert!(packet.verify_checksum(&src, &dst) || !mode.fill());
            assert_eq!(udp::Repr::parse(&packet), Ok(r));
        }
        AnyRepr::Grh(mut r) => {
            r.flow_label &= FLOW_LABEL_MASK;
            let mut buf = vec![0xA5u8; r.buffer_len()];
            r.emit(&mut grh::Packet::new_unchecked(&mut buf[..]));
            let back = grh::Repr::parse(&grh::Packet::new_unchecked(&buf[..]));
            assert_eq!(back, Ok(r));
            let _ = r.to_string();
        }
        AnyRepr::Mad(mut r) => {
            // method 0..=0x7f (the top bit is the R flag)
            r.method &= 0x7F;
            let mut buf = [0xA5u8; cm::HEADER_LEN];
            r.emit(&mut cm::Header::new_unchecked(&mut buf[..]));
            let back = cm::Repr::parse(&cm::Header::new_unchecked(&buf[..]));
            assert_eq!(back, Ok(r));
            let _ = r.to_string();
        }
    }
}

/// Canonical bytes of a fixed-size header parse and emit back unchanged.
macro_rules! canonical {
    ($module:ident, $bytes:expr, |$b:ident| $canon:block) => {{
        let mut $b = [0u8; $module::HEADER_LEN];
        $b.copy_from_slice(&$bytes[..$module::HEADER_LEN]);
        $canon
        let repr = $module::Repr::parse(&$module::Header::new_unchecked(&$b[..]))
            .expect("a whole header parses");
        let mut out = [0xA5u8; $module::HEADER_LEN];
        repr.emit(&mut $module::Header::new_unchecked(&mut out[..]));
        assert_eq!(out, $b);
        let _ = $module::Header::new_unchecked(&$b[..]).to_string();
    }};
}

fn bytes_roundtrip(kind: Kind, bytes: [u8; 64]) {
    match kind {
        Kind::Bth => canonical!(bth, bytes, |b| {
            b[4] &= 0xC0; // FECN | BECN, resv6 zero
            b[8] &= 0x80; // AckReq, resv7 zero
        }),
        Kind::Reth => canonical!(reth, bytes, |b| {}),
        Kind::Aeth => canonical!(aeth, bytes, |b| {}),
        Kind::AtomicEth => canonical!(atomic_eth, bytes, |b| {}),
        Kind::AtomicAckEth => canonical!(atomic_ack_eth, bytes, |b| {}),
        Kind::ImmDt => canonical!(immdt, bytes, |b| {}),
        Kind::Ieth => canonical!(ieth, bytes, |b| {}),
        Kind::Deth => canonical!(deth, bytes, |b| {
            b[4] = 0; // reserved byte
        }),
        Kind::Rdeth => canonical!(rdeth, bytes, |b| {
            b[0] = 0; // reserved byte
        }),
        Kind::XrcEth => canonical!(xrceth, bytes, |b| {
            b[0] = 0; // reserved byte
        }),
        Kind::Feth => canonical!(feth, bytes, |b| {
            b[..3].fill(0); // 26 reserved bits
            b[3] &= 0x3F;
        }),
        Kind::Cnp => canonical!(cnp, bytes, |b| {
            b.fill(0); // 16 reserved bytes
        }),
        Kind::Vlan => canonical!(vlan, bytes, |b| {}),
        Kind::Mad => canonical!(cm, bytes, |b| {
            b[18..20].fill(0); // reserved
        }),
        Kind::Ethernet => {
            let b = &bytes[..ethernet::HEADER_LEN];
            let repr = ethernet::Repr::parse(&ethernet::Frame::new_unchecked(b)).expect("parses");
            let mut out = [0xA5u8; ethernet::HEADER_LEN];
            repr.emit(&mut ethernet::Frame::new_unchecked(&mut out[..]));
            assert_eq!(out[..], *b);
        }
        Kind::MacControl => {
            let len = mac_control::Packet::new_unchecked(&bytes[..])
                .opcode()
                .body_len();
            let b = &bytes[..len];
            let repr = mac_control::Repr::parse(&mac_control::Packet::new_unchecked(b))
                .expect("a whole MAC Control body parses");
            assert_eq!(repr.buffer_len(), len);
            let mut out = [0xA5u8; mac_control::PFC_LEN];
            repr.emit(&mut mac_control::Packet::new_unchecked(&mut out[..len]));
            assert_eq!(out[..len], *b);
        }
        Kind::Ipv4 => {
            // version 4, IHL 5, reserved flag / MF / offset zero, checksum filled;
            // Total Length kept (at least 20) and the payload there
            let mut b = [0u8; ipv4::HEADER_LEN];
            b.copy_from_slice(&bytes[..ipv4::HEADER_LEN]);
            b[0] = 0x45;
            b[6] &= 0x40;
            b[7] = 0;
            let total = u16::from_be_bytes([b[2], b[3]]).max(ipv4::HEADER_LEN as u16);
            b[2..4].copy_from_slice(&total.to_be_bytes());
            ipv4::Packet::new_unchecked(&mut b[..]).fill_checksum();
            let mut buf = b.to_vec();
            buf.resize(usize::from(total), 0);
            let repr = ipv4::Repr::parse(&ipv4::Packet::new_unchecked(&buf[..])).expect("parses");
            let mut out = [0xA5u8; ipv4::HEADER_LEN];
            repr.emit(
                &mut ipv4::Packet::new_unchecked(&mut out[..]),
                ChecksumMode::Both,
            );
            assert_eq!(out, b);
        }
        Kind::Ipv6 => {
            let mut b = [0u8; ipv6::HEADER_LEN];
            b.copy_from_slice(&bytes[..ipv6::HEADER_LEN]);
            b[0] = 0x60 | (b[0] & 0x0F); // version 6
            let mut buf = b.to_vec();
            buf.resize(
                ipv6::HEADER_LEN + usize::from(u16::from_be_bytes([b[4], b[5]])),
                0,
            );
            let repr = ipv6::Repr::parse(&ipv6::Packet::new_unchecked(&buf[..])).expect("parses");
            let mut out = [0xA5u8; ipv6::HEADER_LEN];
            repr.emit(&mut ipv6::Packet::new_unchecked(&mut out[..]));
            assert_eq!(out, b);
        }
        Kind::Udp => {
            // Length at least 8 with the payload there, checksum not filled (0)
            let mut b = [0u8; udp::HEADER_LEN];
            b.copy_from_slice(&bytes[..udp::HEADER_LEN]);
            let len = u16::from_be_bytes([b[4], b[5]]).max(udp::HEADER_LEN as u16);
            b[4..6].copy_from_slice(&len.to_be_bytes());
            b[6..8].fill(0);
            let mut buf = b.to_vec();
            buf.resize(usize::from(len), 0);
            let repr = udp::Repr::parse(&udp::Packet::new_unchecked(&buf[..])).expect("parses");
            let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
            let mut out = [0xA5u8; udp::HEADER_LEN];
            let mut packet = udp::Packet::new_unchecked(&mut out[..]);
            repr.emit(&mut packet, &any, &any, ChecksumMode::Rx);
            assert_eq!(out, b);
        }
        Kind::Grh => {
            let mut b = [0u8; grh::HEADER_LEN];
            b.copy_from_slice(&bytes[..grh::HEADER_LEN]);
            b[0] = 0x60 | (b[0] & 0x0F); // IPVer 6
            let mut buf = b.to_vec();
            buf.resize(
                grh::HEADER_LEN + usize::from(u16::from_be_bytes([b[4], b[5]])),
                0,
            );
            let repr = grh::Repr::parse(&grh::Packet::new_unchecked(&buf[..])).expect("parses");
            let mut out = [0xA5u8; grh::HEADER_LEN];
            repr.emit(&mut grh::Packet::new_unchecked(&mut out[..]));
            assert_eq!(out, b);
        }
    }
}
