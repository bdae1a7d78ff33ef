//! Linux cooked capture v2 (`LINKTYPE_LINUX_SLL2`, 276), 20 bytes, as `tcpdump -i any`
//! writes it with libpcap 1.10 and later (capture-formats.md §5; tcpdump.org linktypes).
//!
//! The protocol field comes first and is an EtherType for ordinary packets, so the
//! dissector carries on at that EtherType right after this header.

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
    pub const PROTOCOL: Field = 0..2;
    /// transmitted as 0
    pub const RESERVED: Field = 2..4;
    pub const IFINDEX: Field = 4..8;
    /// ARPHRD_ type of the interface (1 Ethernet, 32 InfiniBand, 772 loopback)
    pub const ARPHRD: Field = 8..10;
    /// 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us
    pub const PACKET_TYPE: usize = 10;
    pub const ADDR_LEN: usize = 11;
    /// Link-layer source address, zero-padded to 8 bytes
    pub const ADDR: Field = 12..20;
}

pub const HEADER_LEN: usize = field::ADDR.end;

/// A read/write view of an SLL2 header.
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
        error::need(Layer::Sll2, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The EtherType of the packet that follows (for ordinary packets).
    #[must_use]
    pub fn protocol(&self) -> EtherType {
        let b = &self.b()[field::PROTOCOL];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }
    #[must_use]
    pub fn ifindex(&self) -> u32 {
        let b = &self.b()[field::IFINDEX];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    #[must_use]
    pub fn arphrd_type(&self) -> u16 {
        let b = &self.b()[field::ARPHRD];
        u16::from_be_bytes([b[0], b[1]])
    }
    #[must_use]
    pub fn packet_type(&self) -> u8 {
        self.b()[field::PACKET_TYPE]
    }
    #[must_use]
    pub fn addr_len(&self) -> u8 {
        self.b()[field::ADDR_LEN]
    }
    #[must_use]
    pub fn addr(&self) -> [u8; 8] {
        let mut a = [0; 8];
        a.copy_from_slice(&self.b()[field::ADDR]);
        a
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let proto = Value::Hex(u64::from(self.protocol().0), 4);
        v.field("etype", "Protocol", proto, span(offset, field::PROTOCOL));
        let ifindex = Value::Uint(u64::from(self.ifindex()));
        v.field(
            "ifindex",
            "Interface Index",
            ifindex,
            span(offset, field::IFINDEX),
        );
        let hw = Value::Uint(u64::from(self.arphrd_type()));
        v.field(
            "hatype",
            "Link-Layer Address Type",
            hw,
            span(offset, field::ARPHRD),
        );
        let kind = Value::Uint(u64::from(self.packet_type()));
        v.field(
            "pkttype",
            "Packet Type",
            kind,
            byte(offset, field::PACKET_TYPE),
        );
        let len = Value::Uint(u64::from(self.addr_len()));
        v.field(
            "halen",
            "Link-Layer Address Length",
            len,
            byte(offset, field::ADDR_LEN),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Also clears the reserved bytes (transmitted as 0).
    pub fn set_protocol(&mut self, value: EtherType) {
        self.b_mut()[field::PROTOCOL].copy_from_slice(&value.0.to_be_bytes());
        self.b_mut()[field::RESERVED].fill(0);
    }
    pub fn set_ifindex(&mut self, value: u32) {
        self.b_mut()[field::IFINDEX].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_arphrd_type(&mut self, value: u16) {
        self.b_mut()[field::ARPHRD].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_packet_type(&mut self, value: u8) {
        self.b_mut()[field::PACKET_TYPE] = value;
    }
    pub fn set_addr_len(&mut self, value: u8) {
        self.b_mut()[field::ADDR_LEN] = value;
    }
    pub fn set_addr(&mut self, value: [u8; 8]) {
        self.b_mut()[field::ADDR].copy_from_slice(&value);
    }
}

/// The SLL2 header's meaning, reserved bytes left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub protocol: EtherType,
    pub ifindex: u32,
    pub arphrd_type: u16,
    pub packet_type: u8,
    pub addr_len: u8,
    pub addr: [u8; 8],
}

impl Repr {
    /// Every SLL2 header is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            protocol: header.protocol(),
            ifindex: header.ifindex(),
            arphrd_type: header.arphrd_type(),
            packet_type: header.packet_type(),
            addr_len: header.addr_len(),
            addr: header.addr(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_protocol(self.protocol);
        header.set_ifindex(self.ifindex);
        header.set_arphrd_type(self.arphrd_type);
        header.set_packet_type(self.packet_type);
        header.set_addr_len(self.addr_len);
        header.set_addr(self.addr);
    }
}

/// nom adapter, as for the other headers.
#[allow(dead_code, reason = "nom seam; stack.rs wraps the view directly")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SLL2 protocol={} ifindex={} hatype={} pkttype={}",
            self.protocol, self.ifindex, self.arphrd_type, self.packet_type
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "SLL2 ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    static BYTES: [u8; 20] = [
        0x86, 0xDD, // protocol: IPv6
        0x00, 0x00, // reserved
        0x00, 0x00, 0x00, 0x03, // interface index
        0x00, 0x01, // ARPHRD_ETHER
        0x04, // packet type: outgoing
        0x06, // address length
        0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, // address
    ];

    fn repr() -> Repr {
        Repr {
            protocol: EtherType::IPV6,
            ifindex: 3,
            arphrd_type: 1,
            packet_type: 4,
            addr_len: 6,
            addr: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0],
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.protocol(), EtherType::IPV6);
        assert_eq!(h.ifindex(), 3);
        assert_eq!(h.arphrd_type(), 1);
        assert_eq!(h.packet_type(), 4);
        assert_eq!(h.addr_len(), 6);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 20];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_protocol(EtherType::IPV6);
        h.set_ifindex(3);
        h.set_arphrd_type(1);
        h.set_packet_type(4);
        h.set_addr_len(6);
        h.set_addr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0]);
        assert_eq!(h.into_inner(), &BYTES[..]);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Header::new_unchecked(&BYTES[..])), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 20];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 20);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..19]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated SLL2 at offset 0: need 20 bytes, have 19"
        );
        let (rest, h) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.ifindex(), 3);
    }

    proptest! {
        #[test]
        fn roundtrip_sll2(proto: u16, ifindex: u32, arphrd_type: u16, packet_type: u8, addr_len: u8, addr: [u8; 8]) {
            let r = Repr { protocol: EtherType(proto), ifindex, arphrd_type, packet_type, addr_len, addr };
            let mut buf = [0xFFu8; HEADER_LEN];
            r.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(r));
            prop_assert_eq!(&buf[2..4], &[0, 0]);
        }
    }
}
