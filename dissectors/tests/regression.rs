//! Crashes found by the fuzz targets in `fuzz/` (der-parser `fuzz01.rs` style):
//! one test per crash, named `fuzz_<date>_<n>`, with the crashing input inline.
//!
//! The inputs of `roundtrip_headers` are `arbitrary`-encoded; the bytes are
//! kept as found (reproduce with `cargo fuzz run roundtrip_headers <file>`
//! after writing them to a file) and the test builds the Repr they decode to.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rocescope_dissectors::checksum::ChecksumMode;
use rocescope_dissectors::ipv4::{self, IpProtocol};
use rocescope_dissectors::udp;

/// `roundtrip_headers` crash-5cc970d58b7e194515d0e34d5f4074a12cb5079b: a UDP
/// Repr with `payload_len = usize::MAX` overflowed `HEADER_LEN + payload_len`
/// in `buffer_len()`, so `emit` (and `Display`) panicked, although `emit`
/// documents "Length = 8 + `payload_len` (65535 if larger)".
#[test]
fn fuzz_20261129_1() {
    #[rustfmt::skip]
    static INPUT: [u8; 26] = [
        0x00, 0xf6, 0x3d, 0x00, 0x80, 0xd7, 0xf5, 0xde, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xd7, 0xff, 0xff, 0xff,
    ];
    assert_eq!(INPUT.len(), 26);
    // what INPUT decodes to: Repr(Udp(repr, V6([0xff, 0xff, 0, …], [0; 16]), Both))
    let repr = udp::Repr {
        src_port: 65535,
        dst_port: 65535,
        payload_len: usize::MAX,
    };
    let mut src = [0u8; 16];
    src[..2].fill(0xff);
    let src = IpAddr::V6(Ipv6Addr::from(src));
    let dst = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let mut header = [0u8; udp::HEADER_LEN];
    repr.emit(
        &mut udp::Packet::new_unchecked(&mut header[..]),
        &src,
        &dst,
        ChecksumMode::Rx,
    );
    assert_eq!(udp::Packet::new_unchecked(&header[..]).len(), 65535);
    let _ = repr.to_string();
}

/// `roundtrip_headers` crash-f76b5f4a5cd4f14cdaa6195937b7ad591bb69ffe: the same
/// overflow in the IPv4 Repr's `buffer_len()` (`emit` documents "a
/// `payload_len` above `MAX_PAYLOAD_LEN` is written as Total Length 65535").
#[test]
fn fuzz_20261129_2() {
    #[rustfmt::skip]
    static INPUT: [u8; 31] = [
        0xff, 0xfa, 0x08, 0x00, 0x0a, 0xff, 0xff, 0xc6, 0xff, 0x6d, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x4d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0x2c,
    ];
    assert_eq!(INPUT.len(), 31);
    // what INPUT decodes to: Repr(Ipv4(repr, Both))
    let repr = ipv4::Repr {
        src_addr: Ipv4Addr::new(255, 255, 109, 255),
        dst_addr: Ipv4Addr::new(77, 255, 255, 255),
        next_header: IpProtocol(255),
        payload_len: usize::MAX,
        hop_limit: 255,
        dscp: 255,
        ecn: 255,
        ident: 65535,
        dont_frag: false,
    };
    let mut header = [0u8; ipv4::HEADER_LEN];
    repr.emit(
        &mut ipv4::Packet::new_unchecked(&mut header[..]),
        ChecksumMode::Both,
    );
    assert_eq!(ipv4::Packet::new_unchecked(&header[..]).total_len(), 65535);
    let _ = repr.to_string();
}

/// Not a fuzzer find: the overflow of `fuzz_20261129_1`/`_2` had a third copy
/// in the IPv6 Repr's `buffer_len()` (its `emit` and `Display` do not call it,
/// so the fuzzer could not reach it).
#[test]
fn ipv6_buffer_len_does_not_overflow() {
    let repr = rocescope_dissectors::ipv6::Repr {
        src_addr: Ipv6Addr::UNSPECIFIED,
        dst_addr: Ipv6Addr::UNSPECIFIED,
        next_header: IpProtocol::UDP,
        payload_len: usize::MAX,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    };
    assert_eq!(repr.buffer_len(), usize::MAX);
}
