//! The RoCE invariant CRC (protocol.md §4): CRC-32 over a pseudo-LRH of eight
//! 0xFF bytes, the network header, UDP and BTH with their variant fields
//! masked to ones, the extension headers, payload and pad. It goes on the
//! wire least-significant byte first.
//!
//! RoCEv1 (GRH instead of IP/UDP) uses the same pseudo-LRH and masks the
//! GRH's TClass, FlowLabel and HopLmt exactly like the IPv6 header; that was
//! established on the 2468 RoCEv1 frames of `mlx-rocev1-32qp.pcap`, which all
//! verify this way and none without the pseudo-LRH.

// Indexing cannot panic here: the CRC tables are indexed by a byte (256 entries); the masked copy
// and the covered ranges lie inside the frame slices whose lengths are checked at the top of each
// function.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::ib::bth;

/// The bytes in front of the covered headers: eight 0xFF standing in for the LRH.
const PSEUDO_LRH: [u8; 8] = [0xFF; 8];
/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// CRC-32 of `covered || icrc_wire_bytes` for every valid packet.
pub const RESIDUE: u32 = 0x2144_DF1C;

const IPV6_HEADER_LEN: usize = 40;
const UDP_HEADER_LEN: usize = 8;
/// Largest masked prefix: IPv4 with 40 bytes of options + UDP + BTH.
const MAX_PREFIX: usize = 60 + UDP_HEADER_LEN + bth::HEADER_LEN;

/// What the bytes handed to [`compute`] start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encapsulation {
    /// RoCEv2 over IPv4; the IPv4 header is `header_len` bytes (IHL × 4, options
    /// included, as Scapy covers them; rxe assumes 20 — RoCE traffic has none). A byte, as
    /// IHL × 4 is at most 60: every dissected frame carries this.
    Ipv4 { header_len: u8 },
    /// RoCEv2 over IPv6 (fixed 40-byte header, no extension headers).
    Ipv6,
    /// RoCEv1: GRH then BTH.
    RoceV1,
    /// Native InfiniBand, local route (LNH 2): LRH then BTH. The covered bytes start at the
    /// LRH; VL and BTH resv8a are masked (capture-formats.md §1.3).
    IbLocal,
    /// Native InfiniBand, global route (LNH 3): LRH, GRH, BTH. The whole LRH is masked, the
    /// GRH as in RoCEv1, and BTH resv8a.
    IbGlobal,
}

impl Encapsulation {
    /// Offset of the BTH from the start of the covered bytes (the network header, or the LRH
    /// of a native packet).
    #[must_use]
    pub const fn bth_offset(self) -> usize {
        match self {
            Encapsulation::Ipv4 { header_len } => header_len as usize + UDP_HEADER_LEN,
            Encapsulation::Ipv6 => IPV6_HEADER_LEN + UDP_HEADER_LEN,
            Encapsulation::RoceV1 => IPV6_HEADER_LEN,
            Encapsulation::IbLocal => LRH_LEN,
            Encapsulation::IbGlobal => LRH_LEN + IPV6_HEADER_LEN,
        }
    }

    /// Bytes of eight 0xFF put in front of the covered bytes (RoCE's stand-in for the LRH;
    /// a native packet has its own).
    const fn pseudo_lrh_len(self) -> usize {
        match self {
            Encapsulation::IbLocal | Encapsulation::IbGlobal => 0,
            _ => PSEUDO_LRH.len(),
        }
    }

    /// Set the variant fields of `masked` (a copy of the covered bytes through at least the
    /// BTH's byte 4) to ones.
    fn mask(self, masked: &mut [u8]) {
        match self {
            Encapsulation::Ipv4 { header_len } => {
                let header_len = usize::from(header_len);
                masked[1] = 0xFF; // TOS: DSCP + ECN
                masked[8] = 0xFF; // TTL
                masked[10..12].fill(0xFF); // header checksum
                masked[header_len + 6..header_len + 8].fill(0xFF); // UDP checksum
            }
            Encapsulation::Ipv6 => {
                mask_traffic_class_flow_label_hop_limit(masked);
                masked[IPV6_HEADER_LEN + 6..IPV6_HEADER_LEN + 8].fill(0xFF); // UDP checksum
            }
            Encapsulation::RoceV1 => mask_traffic_class_flow_label_hop_limit(masked),
            Encapsulation::IbLocal => masked[0] |= 0xF0, // VL
            Encapsulation::IbGlobal => {
                masked[..LRH_LEN].fill(0xFF);
                mask_traffic_class_flow_label_hop_limit(&mut masked[LRH_LEN..]);
            }
        }
        masked[self.bth_offset() + bth::MASKED_BYTE] = 0xFF; // FECN, BECN, resv6
    }
}

/// Bytes of a native InfiniBand LRH.
const LRH_LEN: usize = 8;

/// Result of checking a packet's ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IcrcStatus {
    Valid,
    /// `found` is the ICRC field read little-endian, `expected` the computed value.
    Invalid {
        expected: u32,
        found: u32,
    },
    /// The ICRC or some covered byte is not in the capture (a cut-short frame),
    /// or the frame is malformed: never reported as invalid.
    NotVerifiable,
}

/// Compute the ICRC over `covered`: the bytes from the start of the IP header
/// (or GRH) up to, not including, the ICRC. `None` when `covered` is too short
/// to hold the headers the masks apply to.
#[must_use]
pub fn compute(encapsulation: Encapsulation, covered: &[u8]) -> Option<u32> {
    let prefix_len = encapsulation.bth_offset() + bth::HEADER_LEN;
    if covered.len() < prefix_len || prefix_len > MAX_PREFIX {
        return None;
    }
    // The pseudo-LRH and the masked headers go to the CRC in one update (fewer short calls).
    // The masked copy always starts after the 8 pseudo-LRH bytes (fixed-size copies); a
    // native packet, which has its own LRH, just starts the update there. Copying a short rest
    // (an ACK's AETH) in as well, for a single update, measured no faster (1.004x, 1.003x on
    // bench/scale.sh's acked1k and small2k, 9 pairs each).
    const LRH: usize = PSEUDO_LRH.len();
    let mut prefix = [0u8; LRH + MAX_PREFIX];
    prefix[..LRH].copy_from_slice(&PSEUDO_LRH);
    let masked = &mut prefix[LRH..LRH + prefix_len];
    masked.copy_from_slice(&covered[..prefix_len]);
    encapsulation.mask(masked);
    let from = LRH - encapsulation.pseudo_lrh_len();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&prefix[from..LRH + prefix_len]);
    hasher.update(&covered[prefix_len..]);
    Some(hasher.finalize())
}

/// The CRC-32 polynomial, bit-reflected (the register shifts right).
const POLY_REFLECTED: u32 = 0xEDB8_8320;

/// Zeros fed to the CRC when working out a shift (see [`IcrcCache`]).
static ZEROS: [u8; 512] = [0; 512];

/// Byte-at-a-time table of the reflected CRC-32.
static BYTE_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut v = i as u32;
        let mut bit = 0;
        while bit < 8 {
            v = mul_x(v);
            bit += 1;
        }
        table[i] = v;
        i += 1;
    }
    table
};

/// Below this many bytes a table lookup per byte beats setting up crc32fast.
///
/// crc32fast itself is the fastest crate measured for frames this short: crc-fast 1.10 (also
/// SIMD) took 1.7 to 5.6 times as long per frame's CRC on 52, 320 and 1,100 bytes, in one call
/// or in two as here (a microbenchmark of 2 M frames each).
const SHORT: usize = 24;

/// The CRC register (not the finalized value) after `data`, starting from `register`.
fn advance(register: u32, data: &[u8]) -> u32 {
    if data.len() < SHORT {
        return data.iter().fold(register, |r, &b| {
            (r >> 8) ^ BYTE_TABLE[usize::from((r as u8) ^ b)]
        });
    }
    // crc32fast keeps the finalized (inverted) value as its state
    let mut h = crc32fast::Hasher::new_with_initial(!register);
    h.update(data);
    !h.finalize()
}

/// `v · x` modulo the polynomial: one bit of zeros through the register.
const fn mul_x(v: u32) -> u32 {
    (v >> 1) ^ (POLY_REFLECTED & 0u32.wrapping_sub(v & 1))
}

/// The linear map "feed `n` zero bytes" on the CRC register, as nibble tables.
#[derive(Clone)]
struct Shift {
    n: usize,
    tables: [[u32; 16]; 8],
}

impl Shift {
    fn new(n: usize) -> Shift {
        // the image of x^0 (bit 31 of the reflected register), then x^j = x^0 · x^j
        let mut v = 1u32 << 31;
        let mut left = n;
        while left > 0 {
            let k = left.min(ZEROS.len());
            v = advance(v, &ZEROS[..k]);
            left -= k;
        }
        let mut basis = [0u32; 32];
        for bit in (0..32).rev() {
            basis[bit] = v;
            v = mul_x(v);
        }
        let mut tables = [[0u32; 16]; 8];
        for (i, table) in tables.iter_mut().enumerate() {
            for nib in 1..16usize {
                let low = nib.trailing_zeros() as usize;
                table[nib] = table[nib & (nib - 1)] ^ basis[i * 4 + low];
            }
        }
        Shift { n, tables }
    }

    fn apply(&self, register: u32) -> u32 {
        let mut out = 0;
        for (i, table) in self.tables.iter().enumerate() {
            out ^= table[((register >> (i * 4)) & 0xF) as usize];
        }
        out
    }
}

/// The register contribution of one payload tail: `fill_len` bytes of `fill`
/// followed by `zero_len` zeros.
#[derive(Debug, Clone, Copy, Default)]
struct TailCrc {
    valid: bool,
    fill_len: usize,
    zero_len: usize,
    contribution: u32,
}

/// Memory for [`IcrcCache::compute_filled`]: many frames of a stream share
/// their masked headers up to the PSN and their payload, so the CRC of those
/// is worked out once and combined with the few bytes that change (the CRC is
/// linear: feeding `n` bytes is a fixed linear map of the register, XOR the
/// bytes' own contribution). The results are bit-for-bit those of [`compute`].
#[derive(Clone)]
pub struct IcrcCache {
    /// Pseudo-LRH and masked headers up to (not including) BTH byte 8.
    prefix: [u8; PSEUDO_LRH.len() + MAX_PREFIX],
    prefix_len: usize,
    /// CRC register after `prefix[..prefix_len]`.
    prefix_register: u32,
    /// Per fill byte.
    tails: [TailCrc; 256],
    shifts: [Option<Shift>; 2],
    next_shift: usize,
    /// A tail length that missed once: it gets a shift table when it misses again.
    last_miss: usize,
}

impl Default for IcrcCache {
    fn default() -> Self {
        IcrcCache::new()
    }
}

impl fmt::Debug for IcrcCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IcrcCache")
            .field("prefix_len", &self.prefix_len)
            .finish_non_exhaustive()
    }
}

impl IcrcCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> IcrcCache {
        IcrcCache {
            prefix: [0; PSEUDO_LRH.len() + MAX_PREFIX],
            prefix_len: 0,
            prefix_register: 0,
            tails: [TailCrc::default(); 256],
            shifts: [None, None],
            next_shift: 0,
            last_miss: usize::MAX,
        }
    }

    /// The register after the pseudo-LRH and the masked headers up to the PSN, from the
    /// cache when they are the bytes it holds (`covered` holds at least the BTH).
    fn prefix_register_of(&mut self, encapsulation: Encapsulation, covered: &[u8]) -> u32 {
        let lrh = encapsulation.pseudo_lrh_len();
        let fixed = encapsulation.bth_offset() + 8;
        // every masked byte is before `fixed`; the rest of the array stays zero, so the
        // whole fixed-size arrays compare (inline)
        let mut prefix = [0u8; PSEUDO_LRH.len() + MAX_PREFIX];
        prefix[..lrh].copy_from_slice(&PSEUDO_LRH[..lrh]);
        let masked = &mut prefix[lrh..lrh + fixed];
        masked.copy_from_slice(&covered[..fixed]);
        encapsulation.mask(masked);
        if self.prefix_len != lrh + fixed || self.prefix != prefix {
            self.prefix = prefix;
            self.prefix_len = lrh + fixed;
            self.prefix_register = advance(!0, &prefix[..lrh + fixed]);
        }
        self.prefix_register
    }

    /// [`compute`] for `covered` that ends in `fill_len` bytes equal to `fill`
    /// and then `zero_len` zeros (a filled payload and its pad), after the headers.
    /// `None` as [`compute`] (also when `covered` is shorter than that tail).
    pub fn compute_filled(
        &mut self,
        encapsulation: Encapsulation,
        covered: &[u8],
        fill: u8,
        fill_len: usize,
        zero_len: usize,
    ) -> Option<u32> {
        self.compute_filled_with(encapsulation, covered, fill, fill_len, zero_len, false)
    }

    /// As [`IcrcCache::compute_filled`]; `same_prefix` promises that the headers up to the
    /// PSN are those of the last call that returned `Some` (the builder knows it from the
    /// `Repr`s, without reading the bytes back).
    pub(crate) fn compute_filled_with(
        &mut self,
        encapsulation: Encapsulation,
        covered: &[u8],
        fill: u8,
        fill_len: usize,
        zero_len: usize,
        same_prefix: bool,
    ) -> Option<u32> {
        let bth_offset = encapsulation.bth_offset();
        let prefix_len = bth_offset + bth::HEADER_LEN;
        let tail_len = fill_len + zero_len;
        if covered.len() < prefix_len + tail_len || prefix_len > MAX_PREFIX {
            return None;
        }
        let headers_end = covered.len() - tail_len;
        debug_assert!(
            covered[headers_end..headers_end + fill_len]
                .iter()
                .all(|&b| b == fill)
        );
        debug_assert!(covered[headers_end + fill_len..].iter().all(|&b| b == 0));

        // headers up to the PSN: from the cache when they are the same bytes
        let lrh = encapsulation.pseudo_lrh_len();
        let fixed = bth_offset + 8; // BTH byte 8 holds AckReq and is followed by the PSN
        let register = if same_prefix && self.prefix_len == lrh + fixed {
            self.prefix_register
        } else {
            self.prefix_register_of(encapsulation, covered)
        };
        debug_assert_eq!(register, {
            let mut c = self.clone();
            c.prefix_len = 0;
            c.prefix_register_of(encapsulation, covered)
        });
        let register = advance(register, &covered[fixed..headers_end]);
        // the payload and pad
        let tail = &covered[headers_end..];
        let found = self
            .shifts
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.n == tail_len));
        let i = match found {
            Some(i) => i,
            None if self.last_miss == tail_len => {
                let i = self.next_shift;
                self.next_shift = (i + 1) % self.shifts.len();
                self.shifts[i] = Some(Shift::new(tail_len));
                i
            }
            None => {
                self.last_miss = tail_len;
                return Some(!advance(register, tail));
            }
        };
        let Some(shift) = &self.shifts[i] else {
            return Some(!advance(register, tail));
        };
        let slot = &mut self.tails[usize::from(fill)];
        if !(slot.valid && slot.fill_len == fill_len && slot.zero_len == zero_len) {
            *slot = TailCrc {
                valid: true,
                fill_len,
                zero_len,
                contribution: advance(0, tail),
            };
        }
        Some(!(shift.apply(register) ^ slot.contribution))
    }
}

/// IPv6 and GRH share the layout of their first eight bytes.
fn mask_traffic_class_flow_label_hop_limit(header: &mut [u8]) {
    header[0] |= 0x0F; // low nibble of byte 0 = traffic class high nibble
    header[1..4].fill(0xFF); // traffic class low nibble + flow label
    header[7] = 0xFF; // hop limit
}

/// The InfiniBand VCRC (capture-formats.md §1.4): CRC-16, polynomial 0x100B reflected
/// (0xD008), initial 0xFFFF, final complement, over every byte from the LRH through the ICRC
/// (or the payload) unmasked; on the wire least-significant byte first.
#[must_use]
pub fn vcrc(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &b in bytes {
        crc = (crc >> 8) ^ VCRC_TABLE[usize::from((crc ^ u16::from(b)) as u8)];
    }
    !crc
}

static VCRC_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut v = i as u16;
        let mut bit = 0;
        while bit < 8 {
            v = if v & 1 != 0 {
                (v >> 1) ^ 0xD008
            } else {
                v >> 1
            };
            bit += 1;
        }
        table[i] = v;
        i += 1;
    }
    table
};

/// Check the VCRC at the end of `packet` (LRH through VCRC). `found` and `expected` as the
/// u16 values (the wire bytes read little-endian).
#[must_use]
pub fn verify_vcrc(packet: &[u8]) -> IcrcStatus {
    if cfg!(fuzzing) {
        return IcrcStatus::Valid;
    }
    let Some(split) = packet.len().checked_sub(2) else {
        return IcrcStatus::NotVerifiable;
    };
    let expected = vcrc(&packet[..split]);
    let found = u16::from_le_bytes([packet[split], packet[split + 1]]);
    if found == expected {
        IcrcStatus::Valid
    } else {
        IcrcStatus::Invalid {
            expected: u32::from(expected),
            found: u32::from(found),
        }
    }
}

/// Check the ICRC at the end of `covered_and_icrc` (network header through ICRC).
#[must_use]
pub fn verify(encapsulation: Encapsulation, covered_and_icrc: &[u8]) -> IcrcStatus {
    if cfg!(fuzzing) {
        return IcrcStatus::Valid;
    }
    let Some(split) = covered_and_icrc.len().checked_sub(ICRC_LEN) else {
        return IcrcStatus::NotVerifiable;
    };
    let (covered, wire) = covered_and_icrc.split_at(split);
    let Some(expected) = compute(encapsulation, covered) else {
        return IcrcStatus::NotVerifiable;
    };
    let found = u32::from_le_bytes([wire[0], wire[1], wire[2], wire[3]]);
    if found == expected {
        IcrcStatus::Valid
    } else {
        IcrcStatus::Invalid { expected, found }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// protocol.md §4.3 vector A: RoCEv2 CNP captured on a ConnectX-4 Lx (Scapy's test suite).
    const VECTOR_A: &str = "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7002800008100ffff40000118000000000000000000000000000000000000000082fd002a";
    /// Vector B: UC SEND_ONLY, PadCnt 2, MigReq 1 (Scapy's "RoCE layer" test).
    const VECTOR_B: &str = "248a07a8fa22248a07a8fa220800 45010040047840004011b4d5c0a80007c0a80007 c00012b7002caca2 2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3";
    /// Vector C (regression only): IPv4 RC ACK.
    const VECTOR_C: &str = "0200000000010200000000020800456a0030123440004011141d0a0000020a000001c45612b7001c00001100ffff00000456000000101f00000530c7cb30";
    /// Vector D (regression only): IPv6 RC_SEND_ONLY, PadCnt 3.
    const VECTOR_D: &str = "02000000000202000000000186dd6681234500201140fe800000000000000000000000000001fe800000000000000000000000000002c12312b7002000000430ffff0000012380abcdef01020304050000004c406c64";

    const V4: Encapsulation = Encapsulation::Ipv4 { header_len: 20 };

    /// capture-formats.md §1.5 vector A: LNH 2, an RC ACKNOWLEDGE (ERF capture A frame 7).
    const IB_VECTOR_A: &str = "00020012 0007000c 1140ffff 00000029 005e0c45 00000001 fc272caf 8fa5";
    /// Vector B: LNH 3, a UD SEND ONLY carrying an IPoIB ARP (frame 1), 134 bytes.
    const IB_VECTOR_B: &str = "
        00 03 c0 00 00 21 00 06 60 00 00 00 00 54 1b 00
        fe 80 00 00 00 00 00 00 08 c0 eb 03 00 ea 51 2e
        ff 12 40 1b ff ff 00 00 00 00 00 00 ff ff ff ff
        64 40 ff ff 00 ff ff ff 00 07 61 28 00 00 0b 1b
        00 00 01 ce 08 06 00 00 00 20 08 00 14 04 00 01
        20 00 01 ce fe 80 00 00 00 00 00 00 08 c0 eb 03
        00 ea 51 2e ac 10 f2 33 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 ac 10 f2 4b
        55 67 46 f7 e6 b7";

    #[test]
    fn native_ib_vectors() {
        let a = hex(IB_VECTOR_A);
        assert_eq!(a.len(), 30);
        let (covered, rest) = a.split_at(24);
        assert_eq!(compute(Encapsulation::IbLocal, covered), Some(0xAF2C_27FC));
        assert_eq!(&rest[..4], &0xAF2C_27FCu32.to_le_bytes());
        assert_eq!(vcrc(&a[..28]), 0xA58F);
        assert_eq!(verify(Encapsulation::IbLocal, &a[..28]), IcrcStatus::Valid);
        assert_eq!(verify_vcrc(&a), IcrcStatus::Valid);
        let b = hex(IB_VECTOR_B);
        assert_eq!(b.len(), 134);
        assert_eq!(
            compute(Encapsulation::IbGlobal, &b[..128]),
            Some(0xF746_6755)
        );
        assert_eq!(vcrc(&b[..132]), 0xB7E6);
        assert_eq!(
            verify(Encapsulation::IbGlobal, &b[..132]),
            IcrcStatus::Valid
        );
        // the masks matter: VL (local) and the whole LRH (global) are not covered, SL is
        let mut a2 = a.clone();
        a2[0] |= 0x70; // VL 7
        assert_eq!(
            compute(Encapsulation::IbLocal, &a2[..24]),
            Some(0xAF2C_27FC)
        );
        a2[1] |= 0x50; // SL 5: covered
        assert_ne!(
            compute(Encapsulation::IbLocal, &a2[..24]),
            Some(0xAF2C_27FC)
        );
        let mut b2 = b.clone();
        b2[1] = 0x53; // SL in the LRH of a global packet: masked
        b2[15] = 0x40; // GRH HopLmt: masked
        assert_eq!(
            compute(Encapsulation::IbGlobal, &b2[..128]),
            Some(0xF746_6755)
        );
        // but the VCRC covers everything
        assert_ne!(vcrc(&b2[..132]), 0xB7E6);
        // a wrong VCRC is reported with both values
        let mut a3 = a;
        a3[29] ^= 1;
        assert_eq!(
            verify_vcrc(&a3),
            IcrcStatus::Invalid {
                expected: 0xA58F,
                found: 0xA48F
            }
        );
    }

    #[test]
    fn vcrc_check_value() {
        assert_eq!(vcrc(b"123456789"), 0x0A3D);
    }

    #[test]
    fn test_vector_a_cnp() {
        let frame = hex(VECTOR_A);
        let l3 = &frame[14..];
        assert_eq!(compute(V4, &l3[..l3.len() - 4]), Some(0x2A00_FD82));
        assert_eq!(verify(V4, l3), IcrcStatus::Valid);
        assert_eq!(
            crc32fast::hash(&[&PSEUDO_LRH[..], &masked_copy(V4, l3)].concat()),
            RESIDUE
        );
    }

    /// The masked input plus the wire ICRC, built independently of `compute`.
    fn masked_copy(e: Encapsulation, l3: &[u8]) -> Vec<u8> {
        let mut m = l3.to_vec();
        let Encapsulation::Ipv4 { header_len } = e else {
            unreachable!()
        };
        let header_len = usize::from(header_len);
        m[1] = 0xFF;
        m[8] = 0xFF;
        m[10] = 0xFF;
        m[11] = 0xFF;
        m[header_len + 6] = 0xFF;
        m[header_len + 7] = 0xFF;
        m[header_len + 12] = 0xFF;
        m
    }

    #[test]
    fn test_vector_b_uc_send_pad() {
        let frame = hex(VECTOR_B);
        assert_eq!(compute(V4, &frame[14..frame.len() - 4]), Some(0xF353_F378));
        assert_eq!(verify(V4, &frame[14..]), IcrcStatus::Valid);
    }

    #[test]
    fn test_vector_c_ack() {
        let frame = hex(VECTOR_C);
        assert_eq!(compute(V4, &frame[14..frame.len() - 4]), Some(0x30CB_C730));
    }

    #[test]
    fn test_vector_d_ipv6() {
        let mut frame = hex(VECTOR_D);
        assert_eq!(
            compute(Encapsulation::Ipv6, &frame[14..frame.len() - 4]),
            Some(0x646C_404C)
        );
        // traffic class, flow label and hop limit are masked: changing them keeps the ICRC valid
        frame[14] = 0x6F;
        frame[15] = 0x00;
        frame[17] = 0x77;
        frame[21] = 1;
        assert_eq!(verify(Encapsulation::Ipv6, &frame[14..]), IcrcStatus::Valid);
    }

    #[test]
    fn test_masked_fields_do_not_matter() {
        let mut frame = hex(VECTOR_A);
        frame[15] = 0x03; // TOS: CE
        frame[22] = 1; // TTL
        frame[24] = 0; // IP checksum
        frame[40] = 0xAB; // UDP checksum
        frame[46] = 0x80; // BTH byte 4: FECN
        assert_eq!(verify(V4, &frame[14..]), IcrcStatus::Valid);
    }

    #[test]
    fn test_covered_fields_matter() {
        let frame = hex(VECTOR_A);
        for i in [16, 26, 34, 38, 42, 43, 47, 50, 53, 60] {
            let mut f = frame.clone();
            f[i] ^= 0x01;
            assert!(
                matches!(verify(V4, &f[14..]), IcrcStatus::Invalid { .. }),
                "flipping byte {i} went unnoticed"
            );
        }
    }

    /// The cached path gives `compute`'s answer for every kind of frame, however the
    /// frames alternate (cache hits and misses).
    #[test]
    fn test_compute_filled_matches_compute() {
        let mut cache = IcrcCache::new();
        let vectors = [
            (VECTOR_A, V4),
            (VECTOR_B, V4),
            (VECTOR_C, V4),
            (VECTOR_D, Encapsulation::Ipv6),
        ];
        let mut x: u32 = 12345;
        for round in 0..400usize {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let (v, enc) = vectors[(x >> 8) as usize % vectors.len()];
            let frame = hex(v);
            let headers = &frame[14..14 + enc.bth_offset() + bth::HEADER_LEN];
            let fill = (x >> 16) as u8 % 3;
            let fill_len: usize = [0, 1, 5, 64, 1024][(x >> 20) as usize % 5];
            let zero_len = fill_len.wrapping_neg() & 3;
            let mut covered = headers.to_vec();
            covered[headers.len() - 1] = round as u8; // the PSN changes
            covered.extend(std::iter::repeat_n(fill, fill_len));
            covered.extend(std::iter::repeat_n(0, zero_len));
            assert_eq!(
                cache.compute_filled(enc, &covered, fill, fill_len, zero_len),
                compute(enc, &covered),
                "round {round}"
            );
        }
    }

    #[test]
    fn test_not_verifiable() {
        let frame = hex(VECTOR_A);
        assert_eq!(verify(V4, &frame[14..40]), IcrcStatus::NotVerifiable);
        assert_eq!(verify(V4, &[]), IcrcStatus::NotVerifiable);
        assert_eq!(
            compute(Encapsulation::Ipv4 { header_len: 64 }, &[0; 200]),
            None
        );
    }
}
