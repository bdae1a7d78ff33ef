//! Ethernet II frame header (IEEE 802.3; protocol.md §9), 14 bytes.
//!
//! Destination MAC, source MAC, EtherType. VLAN tags are not part of this
//! header: when [`Frame::ethertype`] is a TPID ([`EtherType::is_vlan_tpid`])
//! the payload starts with a [`crate::vlan`] tag. The FCS is never included
//! (captures normally strip it).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::{Field, Rest};
    pub const DST_ADDR: Field = 0..6;
    pub const SRC_ADDR: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

pub const HEADER_LEN: usize = field::ETHERTYPE.end;

/// A 48-bit MAC address. `Display` is lowercase `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Address(pub [u8; 6]);

impl Address {
    pub const BROADCAST: Address = Address([0xff; 6]);

    /// Copy the first 6 bytes of `data`; `None` when it is shorter.
    #[must_use]
    pub fn from_bytes(data: &[u8]) -> Option<Address> {
        data.get(..6)
            .and_then(|b| <[u8; 6]>::try_from(b).ok())
            .map(Address)
    }

    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// The I/G bit (bit 0 of the first octet) is set; includes broadcast.
    #[must_use]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    #[must_use]
    pub const fn is_broadcast(&self) -> bool {
        let b = self.0;
        b[0] == 0xff && b[1] == 0xff && b[2] == 0xff && b[3] == 0xff && b[4] == 0xff && b[5] == 0xff
    }

    #[must_use]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// The U/L bit (bit 1 of the first octet): locally administered.
    #[must_use]
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// An EtherType (open registry: unknown values are kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct EtherType(pub u16);

impl EtherType {
    pub const IPV4: EtherType = EtherType(0x0800);
    pub const ARP: EtherType = EtherType(0x0806);
    /// 802.1Q C-tag TPID.
    pub const VLAN: EtherType = EtherType(0x8100);
    /// 802.1ad S-tag TPID.
    pub const QINQ: EtherType = EtherType(0x88A8);
    /// Pre-standard outer TPID (not officially registered).
    pub const QINQ_LEGACY: EtherType = EtherType(0x9100);
    /// Other pre-standard outer TPIDs, also seen in the wild.
    pub const QINQ_LEGACY_9200: EtherType = EtherType(0x9200);
    pub const QINQ_LEGACY_9300: EtherType = EtherType(0x9300);
    pub const IPV6: EtherType = EtherType(0x86DD);
    /// 802.3 MAC Control: PAUSE and PFC ([`crate::mac_control`]).
    pub const MAC_CONTROL: EtherType = EtherType(0x8808);
    /// RoCEv1 (`ETH_P_IBOE`): a GRH follows ([`crate::grh`]).
    pub const ROCEV1: EtherType = EtherType(0x8915);
    /// MPLS unicast and multicast label stacks.
    pub const MPLS: EtherType = EtherType(0x8847);
    pub const MPLS_MULTICAST: EtherType = EtherType(0x8848);

    /// A VLAN tag protocol identifier: 0x8100, 0x88A8, 0x9100, 0x9200, 0x9300.
    #[must_use]
    pub const fn is_vlan_tpid(self) -> bool {
        matches!(self.0, 0x8100 | 0x88A8 | 0x9100 | 0x9200 | 0x9300)
    }

    /// The constant's name, `None` when unknown.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        match self.0 {
            0x0800 => Some("IPV4"),
            0x0806 => Some("ARP"),
            0x8100 => Some("VLAN"),
            0x88A8 => Some("QINQ"),
            0x9100 => Some("QINQ_LEGACY"),
            0x9200 => Some("QINQ_LEGACY_9200"),
            0x9300 => Some("QINQ_LEGACY_9300"),
            0x86DD => Some("IPV6"),
            0x8808 => Some("MAC_CONTROL"),
            0x8915 => Some("ROCEV1"),
            _ => None,
        }
    }
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        EtherType(value)
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        value.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#06x}", self.0),
        }
    }
}

/// A read/write view of an Ethernet II frame (header plus everything after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wrap without checking the length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len); no accessor can panic afterwards.
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    pub fn check_len(&self) -> Result<()> {
        error::need(Layer::Ethernet, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn address(&self, at: usize) -> Address {
        let b = self.b();
        Address([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5]])
    }

    #[must_use]
    pub fn dst_addr(&self) -> Address {
        self.address(field::DST_ADDR.start)
    }
    #[must_use]
    pub fn src_addr(&self) -> Address {
        self.address(field::SRC_ADDR.start)
    }
    #[must_use]
    pub fn ethertype(&self) -> EtherType {
        let b = self.b();
        EtherType(u16::from_be_bytes([
            b[field::ETHERTYPE.start],
            b[field::ETHERTYPE.start + 1],
        ]))
    }
    /// Everything after the 14-byte header (VLAN tags, L3, padding), as captured.
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        &self.b()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Source and destination for the field tree; the walk adds the innermost EtherType,
    /// which follows any VLAN tags.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let src = Value::Mac(self.src_addr().0);
        v.field("src", "Source", src, span(offset, field::SRC_ADDR));
        let dst = Value::Mac(self.dst_addr().0);
        v.field("dst", "Destination", dst, span(offset, field::DST_ADDR));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_dst_addr(&mut self, value: Address) {
        self.b_mut()[field::DST_ADDR].copy_from_slice(&value.0);
    }
    pub fn set_src_addr(&mut self, value: Address) {
        self.b_mut()[field::SRC_ADDR].copy_from_slice(&value.0);
    }
    pub fn set_ethertype(&mut self, value: EtherType) {
        self.b_mut()[field::ETHERTYPE].copy_from_slice(&value.0.to_be_bytes());
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.b_mut()[field::PAYLOAD]
    }
}

/// The Ethernet header's meaning (no payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub dst_addr: Address,
    pub src_addr: Address,
    pub ethertype: EtherType,
}

impl Repr {
    /// Every Ethernet header is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr {
            dst_addr: frame.dst_addr(),
            src_addr: frame.src_addr(),
            ethertype: frame.ethertype(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes [`emit`](Self::emit) writes: the header only, the payload is the caller's.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the 14 header bytes. `frame` must hold at least `HEADER_LEN` bytes;
    /// the payload bytes are left untouched.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, frame: &mut Frame<&mut T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

/// nom adapter used by `stack.rs`: the view spans the whole input (so
/// [`Frame::payload`] works) and the rest is everything after the header.
// `stack.rs` composes with `new_checked` today; kept for nom composition.
#[allow(dead_code)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Frame<&[u8]>> {
    let (rest, _header) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Frame::new_unchecked(i)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Ethernet dst={} src={} type={}",
            self.dst_addr, self.src_addr, self.ethertype
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Frame<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Frame::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "Ethernet ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// Frame 1 of `mlx-rocev1-32qp.pcap` (RoCEv1), header plus the first GRH bytes.
    static BYTES: [u8; 18] = [
        0x08, 0xc0, 0xeb, 0x3b, 0x34, 0x94, // dst_addr 08:c0:eb:3b:34:94
        0x08, 0xc0, 0xeb, 0x3b, 0x35, 0x3c, // src_addr 08:c0:eb:3b:35:3c
        0x89, 0x15, // ethertype ROCEV1
        0x60, 0x20, 0x00, 0x00, // payload: first GRH word
    ];

    fn repr() -> Repr {
        Repr {
            dst_addr: Address([0x08, 0xc0, 0xeb, 0x3b, 0x34, 0x94]),
            src_addr: Address([0x08, 0xc0, 0xeb, 0x3b, 0x35, 0x3c]),
            ethertype: EtherType::ROCEV1,
        }
    }

    #[test]
    fn test_deconstruct() {
        let f = Frame::new_checked(&BYTES[..]).unwrap();
        assert_eq!(f.dst_addr(), Address([0x08, 0xc0, 0xeb, 0x3b, 0x34, 0x94]));
        assert_eq!(f.src_addr(), Address([0x08, 0xc0, 0xeb, 0x3b, 0x35, 0x3c]));
        assert_eq!(f.ethertype(), EtherType(0x8915));
        assert_eq!(f.payload(), &[0x60, 0x20, 0x00, 0x00]);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 18];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_dst_addr(Address([0x08, 0xc0, 0xeb, 0x3b, 0x34, 0x94]));
        f.set_src_addr(Address([0x08, 0xc0, 0xeb, 0x3b, 0x35, 0x3c]));
        f.set_ethertype(EtherType::ROCEV1);
        f.payload_mut().copy_from_slice(&[0x60, 0x20, 0x00, 0x00]);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_parse() {
        let f = Frame::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&f), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 18];
        repr().emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(buf[..HEADER_LEN], BYTES[..HEADER_LEN]);
        assert_eq!(buf[HEADER_LEN..], [0xAA; 4], "payload untouched");
        assert_eq!(repr().buffer_len(), 14);
    }

    #[test]
    fn test_truncated() {
        let err = Frame::new_checked(&BYTES[..13]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated Ethernet at offset 0: need 14 bytes, have 13"
        );
        assert!(Repr::parse(&Frame::new_unchecked(&BYTES[..5])).is_err());
        // exactly the header: empty payload, no panic
        assert!(
            Frame::new_checked(&BYTES[..14])
                .unwrap()
                .payload()
                .is_empty()
        );
    }

    #[test]
    fn test_nom_parse() {
        let (rest, f) = parse(&BYTES[..]).unwrap();
        assert_eq!(rest, &BYTES[14..]);
        assert_eq!(f.ethertype(), EtherType::ROCEV1);
        assert_eq!(f.payload(), rest);
        assert!(parse(&BYTES[..10]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "Ethernet dst=08:c0:eb:3b:34:94 src=08:c0:eb:3b:35:3c type=ROCEV1"
        );
        assert_eq!(
            Frame::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
        assert_eq!(
            Frame::new_unchecked(&BYTES[..3]).to_string(),
            "Ethernet (truncated Ethernet at offset 0: need 14 bytes, have 3)"
        );
        assert_eq!(EtherType(0x1234).to_string(), "0x1234");
        assert_eq!(EtherType(0x0042).to_string(), "0x0042");
        assert_eq!(EtherType::IPV6.to_string(), "IPV6");
        assert_eq!(
            Address([0xAA, 0xBB, 0xCC, 0x0D, 0xEE, 0xFF]).to_string(),
            "aa:bb:cc:0d:ee:ff"
        );
    }

    #[test]
    fn test_address() {
        assert!(Address::BROADCAST.is_broadcast());
        assert!(Address::BROADCAST.is_multicast());
        assert!(Address([0x01, 0x80, 0xc2, 0, 0, 1]).is_multicast());
        assert!(!repr().dst_addr.is_multicast());
        assert!(repr().dst_addr.is_unicast());
        assert!(!repr().dst_addr.is_broadcast());
        assert!(Address([0x02, 0, 0, 0, 0, 1]).is_local());
        assert_eq!(Address::from_bytes(&BYTES[..5]), None);
        assert_eq!(Address::from_bytes(&BYTES[..]), Some(repr().dst_addr));
    }

    #[test]
    fn test_vlan_tpid() {
        for tpid in [0x8100, 0x88A8, 0x9100, 0x9200, 0x9300] {
            assert!(EtherType(tpid).is_vlan_tpid(), "{tpid:#x}");
        }
        for other in [0x0800, 0x86DD, 0x8808, 0x8915, 0x8101, 0x0000] {
            assert!(!EtherType(other).is_vlan_tpid(), "{other:#x}");
        }
    }

    proptest! {
        #[test]
        fn roundtrip_ethernet(repr in crate::strategy::ethernet()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Frame::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_ethernet_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Frame::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Frame::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn parse_any_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Ok(f) = Frame::new_checked(&bytes[..]) {
                let _ = (f.dst_addr(), f.src_addr(), f.ethertype(), f.payload(), f.to_string());
            }
        }
    }
}
