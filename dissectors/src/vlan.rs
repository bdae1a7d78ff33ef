//! One 802.1Q / 802.1ad VLAN tag (protocol.md §9), 4 bytes.
//!
//! The view starts *after* the tag's TPID: the TPID (0x8100, 0x88A8, 0x9100,
//! …) is the EtherType field in front of it (the Ethernet header's or the
//! previous tag's), and the caller keeps it. What is here is the TCI
//! (PCP | DEI | VID) and the inner EtherType, like etherparse's
//! `SingleVlanHeader` without its TPID. A tagged frame is parsed in a loop:
//! while the current EtherType [`is_vlan_tpid`](EtherType::is_vlan_tpid),
//! take one more `Header`.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::ethernet::EtherType;
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    /// PCP(15..13) | DEI(12) | VID(11..0)
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
}

pub const HEADER_LEN: usize = field::ETHERTYPE.end;

const PCP_SHIFT: u16 = 13;
const PCP_MASK: u16 = 0xE000;
const DEI: u16 = 0x1000;
const VID_MASK: u16 = 0x0FFF;

/// A 12-bit VLAN identifier (0 = priority-tagged only, 0xFFF reserved; both
/// are kept as they appear on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct VlanId(u16);

impl VlanId {
    pub const MAX: VlanId = VlanId(VID_MASK);

    /// `None` when `value` does not fit in 12 bits.
    #[must_use]
    pub const fn try_new(value: u16) -> Option<VlanId> {
        if value & !VID_MASK == 0 {
            Some(VlanId(value))
        } else {
            None
        }
    }

    /// Keep the low 12 bits.
    #[must_use]
    pub const fn new_masked(value: u16) -> VlanId {
        VlanId(value & VID_MASK)
    }

    #[must_use]
    pub const fn value(self) -> u16 {
        self.0
    }
}

impl fmt::Display for VlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for VlanId {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(VlanId(u.int_in_range(0..=VID_MASK)?))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, Some(2))
    }
}

/// A read/write view of one VLAN tag (TCI + inner EtherType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wrap without checking the length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len); no accessor can panic afterwards.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    pub fn check_len(&self) -> Result<()> {
        error::need(Layer::Vlan, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn tci(&self) -> u16 {
        u16::from_be_bytes([self.b()[field::TCI.start], self.b()[field::TCI.start + 1]])
    }

    /// Priority code point (802.1p class), 0..=7.
    #[must_use]
    pub fn pcp(&self) -> u8 {
        // the top three bits of the TCI's first byte
        self.b()[field::TCI.start] >> (PCP_SHIFT - 8)
    }
    /// Drop eligible indicator (formerly CFI).
    #[must_use]
    pub fn dei(&self) -> bool {
        self.tci() & DEI != 0
    }
    #[must_use]
    pub fn vid(&self) -> VlanId {
        VlanId(self.tci() & VID_MASK)
    }
    /// The EtherType after this tag (another TPID for QinQ).
    #[must_use]
    pub fn ethertype(&self) -> EtherType {
        EtherType(u16::from_be_bytes([
            self.b()[field::ETHERTYPE.start],
            self.b()[field::ETHERTYPE.start + 1],
        ]))
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Priority, DEI and VLAN ID for the field tree (the TPID before the tag belongs to the
    /// header that introduced it).
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let tci = field::TCI.start;
        v.field(
            "pcp",
            "Priority",
            Value::Uint(u64::from(self.pcp())),
            byte(offset, tci),
        );
        v.field("dei", "DEI", Value::Bool(self.dei()), byte(offset, tci));
        let vid = Value::Uint(u64::from(self.vid().value()));
        v.field("vid", "ID", vid, span(offset, field::TCI));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_tci(&mut self, mask: u16, bits: u16) {
        let tci = (self.tci() & !mask) | (bits & mask);
        self.b_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }

    /// Keeps the low 3 bits of `value`.
    pub fn set_pcp(&mut self, value: u8) {
        self.set_tci(PCP_MASK, u16::from(value) << PCP_SHIFT);
    }
    pub fn set_dei(&mut self, value: bool) {
        self.set_tci(DEI, if value { DEI } else { 0 });
    }
    pub fn set_vid(&mut self, value: VlanId) {
        self.set_tci(VID_MASK, value.0);
    }
    pub fn set_ethertype(&mut self, value: EtherType) {
        self.b_mut()[field::ETHERTYPE].copy_from_slice(&value.0.to_be_bytes());
    }
}

/// One VLAN tag's meaning (the TPID is the preceding EtherType, not here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    /// 0..=7
    pub pcp: u8,
    pub dei: bool,
    pub vid: VlanId,
    pub ethertype: EtherType,
}

impl Repr {
    /// Every tag is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            pcp: header.pcp(),
            dei: header.dei(),
            vid: header.vid(),
            ethertype: header.ethertype(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the TCI and EtherType. `header` must hold `HEADER_LEN` bytes.
    /// `pcp` is masked to 3 bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_pcp(self.pcp);
        header.set_dei(self.dei);
        header.set_vid(self.vid);
        header.set_ethertype(self.ethertype);
    }
}

/// nom adapter used by `stack.rs`.
// `stack.rs` composes with `new_checked` today; kept for nom composition.
#[allow(dead_code)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "VLAN pcp={} dei={} vid={} type={}",
            self.pcp,
            u8::from(self.dei),
            self.vid,
            self.ethertype
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "VLAN ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// A C-tag for RoCE on lossless priority 3, VLAN 100, carrying IPv4
    /// (the TPID 0x8100 came before it).
    static BYTES: [u8; 4] = [
        0x70, 0x64, // TCI: PCP=3 (011) DEI=1 VID=0x064 (100)
        0x08, 0x00, // ethertype IPV4
    ];

    fn repr() -> Repr {
        Repr {
            pcp: 3,
            dei: true,
            vid: VlanId::try_new(100).unwrap(),
            ethertype: EtherType::IPV4,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.pcp(), 3);
        assert!(h.dei());
        assert_eq!(h.vid().value(), 100);
        assert_eq!(h.ethertype(), EtherType(0x0800));
    }

    #[test]
    fn test_construct() {
        let mut buf = [0u8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_pcp(3);
        h.set_dei(true);
        h.set_vid(VlanId::new_masked(100));
        h.set_ethertype(EtherType::IPV4);
        assert_eq!(buf, BYTES);

        // setters mask to width and leave the neighbouring bits alone
        let mut buf = [0xFFu8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_pcp(0xF8); // low 3 bits are 0
        assert_eq!(h.pcp(), 0);
        assert!(h.dei());
        assert_eq!(h.vid(), VlanId::MAX);
        h.set_dei(false);
        assert_eq!(h.pcp(), 0);
        assert_eq!(h.vid(), VlanId::MAX);
        h.set_vid(VlanId::new_masked(0));
        assert_eq!(buf, [0x00, 0x00, 0xFF, 0xFF]);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 4];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated VLAN at offset 0: need 4 bytes, have 3"
        );
        assert!(parse(&BYTES[..2]).is_err());
        let (rest, h) = parse(&[0x70, 0x64, 0x81, 0x00, 0xEE][..]).unwrap();
        assert_eq!(rest, &[0xEE]);
        assert!(h.ethertype().is_vlan_tpid());
    }

    #[test]
    fn test_vlan_id() {
        assert_eq!(VlanId::try_new(0x1000), None);
        assert_eq!(VlanId::try_new(0xFFF), Some(VlanId::MAX));
        assert_eq!(VlanId::new_masked(0xF064).value(), 100);
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "VLAN pcp=3 dei=1 vid=100 type=IPV4");
        assert_eq!(
            Header::new_unchecked(&BYTES[..1]).to_string(),
            "VLAN (truncated VLAN at offset 0: need 4 bytes, have 1)"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_vlan(repr in crate::strategy::vlan()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_vlan_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
