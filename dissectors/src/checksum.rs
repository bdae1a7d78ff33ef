//! The Internet checksum (RFC 1071): the IPv4 header checksum and the UDP
//! checksum with its IPv4/IPv6 pseudo-header (RFC 768, RFC 8200 §8.1).
//!
//! The functions here return the one's-complement *sum*, not its complement:
//! a header's `fill_checksum` writes `!combine(&[…])`, and a header verifies
//! when the sum over everything including the checksum field is `0xFFFF`.
//!
//! [`ChecksumMode`] is the policy (smoltcp's `Checksum`) that builders and
//! replay pass to `Repr::emit`; a bad checksum found while parsing is a
//! finding for the analyzer, never a parse failure (style.md §2.3).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Which checksums to handle: verify on receive, fill on transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ChecksumMode {
    /// Verify received checksums and fill transmitted ones.
    #[default]
    Both,
    /// Verify received checksums only; emit leaves the field zero.
    Rx,
    /// Fill transmitted checksums only; received ones are not checked.
    Tx,
    /// Neither: emit leaves the field zero, nothing is verified.
    None,
}

impl ChecksumMode {
    /// Should a received checksum be verified (and a mismatch reported)?
    #[must_use]
    pub const fn verify(self) -> bool {
        matches!(self, ChecksumMode::Both | ChecksumMode::Rx)
    }

    /// Should `emit` compute and write the checksum (instead of zero)?
    #[must_use]
    pub const fn fill(self) -> bool {
        matches!(self, ChecksumMode::Both | ChecksumMode::Tx)
    }
}

/// Fold a wide one's-complement accumulator to 16 bits.
///
/// A non-zero accumulator never folds to zero, so the result is `0` only for
/// all-zero input, as with a plain 16-bit one's-complement sum.
const fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    // loop invariant: acc <= 0xFFFF
    acc as u16
}

/// One's-complement sum (not complemented) of `bytes` read as big-endian
/// 16-bit words; an odd trailing byte is padded with a zero byte.
///
/// Hot path: sums 64-bit words with end-around carry and folds once at the
/// end, which is the same sum because 2^16 ≡ 1 (mod 0xFFFF).
#[must_use]
pub fn data(bytes: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        if let [a, b, c, d, e, f, g, h] = *word {
            let (sum, carry) = acc.overflowing_add(u64::from_be_bytes([a, b, c, d, e, f, g, h]));
            // sum < acc when it carried, so adding 1 cannot overflow again
            acc = sum + u64::from(carry);
        }
    }
    // at most 7 bytes left: plain 16-bit words into the (non-overflowing) low bits
    let mut tail: u64 = 0;
    for pair in words.remainder().chunks(2) {
        tail += match *pair {
            [hi, lo] => u64::from(u16::from_be_bytes([hi, lo])),
            [hi] => u64::from(u16::from_be_bytes([hi, 0])),
            _ => 0,
        };
    }
    let (sum, carry) = acc.overflowing_add(tail);
    fold(sum + u64::from(carry))
}

/// One's-complement sum of partial sums (each from [`data`] or a pseudo-header).
#[must_use]
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u64::from(s)).sum())
}

/// Sum of the IPv4 pseudo-header: source, destination, zero + protocol, length.
#[must_use]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u32) -> u16 {
    let acc = u64::from(src.to_bits())
        + u64::from(dst.to_bits())
        + u64::from(protocol)
        + u64::from(length);
    fold(acc)
}

/// Sum of the IPv6 pseudo-header (RFC 8200 §8.1): source, destination,
/// upper-layer packet length (32 bits), three zero bytes, next header.
#[must_use]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u16 {
    let mut acc: u64 = u64::from(next_header) + u64::from(length);
    for addr in [src.to_bits(), dst.to_bits()] {
        // each half is < 2^64; four of them fit in u64 only after folding
        acc += u64::from(fold((addr >> 64) as u64));
        acc += u64::from(fold(addr as u64));
    }
    fold(acc)
}

/// Sum of the pseudo-header of either IP version for `length` bytes of
/// `protocol` (UDP, TCP). A mixed pair of address families uses the IPv6
/// pseudo-header with the IPv4 address mapped (`::ffff:a.b.c.d`).
#[must_use]
pub fn pseudo_header(src: &IpAddr, dst: &IpAddr, protocol: u8, length: u32) -> u16 {
    match (*src, *dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_header_v4(s, d, protocol, length),
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header_v6(s, d, protocol, length),
        (IpAddr::V4(s), IpAddr::V6(d)) => pseudo_header_v6(s.to_ipv6_mapped(), d, protocol, length),
        (IpAddr::V6(s), IpAddr::V4(d)) => pseudo_header_v6(s, d.to_ipv6_mapped(), protocol, length),
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// The plain RFC 1071 loop, 16 bits at a time, as the reference for [`data`].
    fn reference(bytes: &[u8]) -> u16 {
        let mut acc: u32 = 0;
        for pair in bytes.chunks(2) {
            let word = match *pair {
                [hi, lo] => u16::from_be_bytes([hi, lo]),
                [hi] => u16::from_be_bytes([hi, 0]),
                _ => 0,
            };
            acc += u32::from(word);
            acc = (acc & 0xFFFF) + (acc >> 16);
        }
        acc as u16
    }

    #[test]
    fn test_rfc1071_example() {
        // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2
        assert_eq!(
            data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
        assert_eq!(data(&[]), 0);
        assert_eq!(data(&[0xff]), 0xff00);
        assert_eq!(data(&[0xff; 64]), 0xffff);
    }

    #[test]
    fn test_ipv4_header_vector_b() {
        // protocol.md §4.3 vector B IPv4 header: checksum 0xB4D5, so the whole header sums to 0xFFFF
        let header = [
            0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8,
            0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07,
        ];
        assert_eq!(data(&header), 0xffff);
        let mut zeroed = header;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(!data(&zeroed), 0xb4d5);
    }

    #[test]
    fn test_combine() {
        assert_eq!(combine(&[]), 0);
        assert_eq!(combine(&[0xffff, 0x0001]), 0x0001);
        assert_eq!(combine(&[0x8000, 0x8000]), 0x0001);
    }

    #[test]
    fn test_pseudo_header_v4() {
        let a = Ipv4Addr::new(192, 168, 0, 7);
        // c0a8 + 0007 + c0a8 + 0007 + 0011 + 002c
        let expected = reference(&[
            0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07, 0x00, 0x11, 0x00, 0x2c,
        ]);
        assert_eq!(pseudo_header_v4(a, a, 17, 44), expected);
    }

    #[test]
    fn test_mode() {
        assert!(ChecksumMode::Both.verify() && ChecksumMode::Both.fill());
        assert!(ChecksumMode::Rx.verify() && !ChecksumMode::Rx.fill());
        assert!(!ChecksumMode::Tx.verify() && ChecksumMode::Tx.fill());
        assert!(!ChecksumMode::None.verify() && !ChecksumMode::None.fill());
        assert_eq!(ChecksumMode::default(), ChecksumMode::Both);
    }

    proptest! {
        #[test]
        fn roundtrip_checksum_data(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert_eq!(data(&bytes), reference(&bytes));
        }

        #[test]
        fn roundtrip_checksum_split(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            cut in 0usize..150,
        ) {
            // summing two halves split at an even offset and combining gives the same sum
            let cut = (cut * 2).min(bytes.len() & !1);
            let (a, b) = bytes.split_at(cut);
            prop_assert_eq!(combine(&[data(a), data(b)]), reference(&bytes));
        }

        #[test]
        fn roundtrip_checksum_pseudo_v6(src in any::<u128>(), dst in any::<u128>(), nh in any::<u8>(), len in any::<u32>()) {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&src.to_be_bytes());
            bytes.extend_from_slice(&dst.to_be_bytes());
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.extend_from_slice(&[0, 0, 0, nh]);
            prop_assert_eq!(
                pseudo_header_v6(Ipv6Addr::from_bits(src), Ipv6Addr::from_bits(dst), nh, len),
                reference(&bytes)
            );
        }

        #[test]
        fn roundtrip_checksum_pseudo_v4(src in any::<u32>(), dst in any::<u32>(), proto in any::<u8>(), len in any::<u32>()) {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&src.to_be_bytes());
            bytes.extend_from_slice(&dst.to_be_bytes());
            bytes.extend_from_slice(&[0, proto]);
            bytes.extend_from_slice(&len.to_be_bytes());
            prop_assert_eq!(
                pseudo_header_v4(Ipv4Addr::from_bits(src), Ipv4Addr::from_bits(dst), proto, len),
                reference(&bytes)
            );
        }
    }
}
