//! Linux cooked capture v1 (`LINKTYPE_LINUX_SLL`, 113), 16 bytes, as `tcpdump -i any`
//! writes it with libpcap before 1.10 (capture-formats.md §5; tcpdump.org linktypes).
//!
//! The protocol field is an EtherType for ordinary packets, so the dissector carries on at
//! that EtherType right after this header.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::ethernet::EtherType;
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    /// 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us
    pub const PACKET_TYPE: Field = 0..2;
    /// ARPHRD_ type of the interface (1 Ethernet, 32 InfiniBand, 772 loopback)
    pub const ARPHRD: Field = 2..4;
    pub const ADDR_LEN: Field = 4..6;
    /// Link-layer source address, zero-padded to 8 bytes
    pub const ADDR: Field = 6..14;
    pub const PROTOCOL: Field = 14..16;
}

pub const HEADER_LEN: usize = field::PROTOCOL.end;

/// A read/write view of an SLL header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
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
        error::need(Layer::Sll, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[must_use]
    pub fn packet_type(&self) -> u16 {
        be16(&self.b()[field::PACKET_TYPE])
    }
    #[must_use]
    pub fn arphrd_type(&self) -> u16 {
        be16(&self.b()[field::ARPHRD])
    }
    /// Length of the address (the field holds 8 bytes whatever it says).
    #[must_use]
    pub fn addr_len(&self) -> u16 {
        be16(&self.b()[field::ADDR_LEN])
    }
    #[must_use]
    pub fn addr(&self) -> [u8; 8] {
        let mut a = [0; 8];
        a.copy_from_slice(&self.b()[field::ADDR]);
        a
    }
    /// The EtherType of the packet that follows (for ordinary packets).
    #[must_use]
    pub fn protocol(&self) -> EtherType {
        EtherType(be16(&self.b()[field::PROTOCOL]))
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let kind = Value::Uint(u64::from(self.packet_type()));
        v.field(
            "pkttype",
            "Packet Type",
            kind,
            span(offset, field::PACKET_TYPE),
        );
        let hw = Value::Uint(u64::from(self.arphrd_type()));
        v.field(
            "hatype",
            "Link-Layer Address Type",
            hw,
            span(offset, field::ARPHRD),
        );
        let len = Value::Uint(u64::from(self.addr_len()));
        v.field(
            "halen",
            "Link-Layer Address Length",
            len,
            span(offset, field::ADDR_LEN),
        );
        let proto = Value::Hex(u64::from(self.protocol().0), 4);
        v.field("etype", "Protocol", proto, span(offset, field::PROTOCOL));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_packet_type(&mut self, value: u16) {
        self.b_mut()[field::PACKET_TYPE].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_arphrd_type(&mut self, value: u16) {
        self.b_mut()[field::ARPHRD].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_addr_len(&mut self, value: u16) {
        self.b_mut()[field::ADDR_LEN].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_addr(&mut self, value: [u8; 8]) {
        self.b_mut()[field::ADDR].copy_from_slice(&value);
    }
    pub fn set_protocol(&mut self, value: EtherType) {
        self.b_mut()[field::PROTOCOL].copy_from_slice(&value.0.to_be_bytes());
    }
}

/// The SLL header's meaning (it has no reserved bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub packet_type: u16,
    pub arphrd_type: u16,
    pub addr_len: u16,
    pub addr: [u8; 8],
    pub protocol: EtherType,
}

impl Repr {
    /// Every SLL header is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            packet_type: header.packet_type(),
            arphrd_type: header.arphrd_type(),
            addr_len: header.addr_len(),
            addr: header.addr(),
            protocol: header.protocol(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_packet_type(self.packet_type);
        header.set_arphrd_type(self.arphrd_type);
        header.set_addr_len(self.addr_len);
        header.set_addr(self.addr);
        header.set_protocol(self.protocol);
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
            "SLL pkttype={} hatype={} protocol={}",
            self.packet_type, self.arphrd_type, self.protocol
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "SLL ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    static BYTES: [u8; 16] = [
        0x00, 0x00, // packet type: to us
        0x00, 0x01, // ARPHRD_ETHER
        0x00, 0x06, // address length
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, // address
        0x08, 0x00, // protocol: IPv4
    ];

    fn repr() -> Repr {
        Repr {
            packet_type: 0,
            arphrd_type: 1,
            addr_len: 6,
            addr: [2, 0, 0, 0, 0, 2, 0, 0],
            protocol: EtherType::IPV4,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.packet_type(), 0);
        assert_eq!(h.arphrd_type(), 1);
        assert_eq!(h.addr_len(), 6);
        assert_eq!(h.addr(), [2, 0, 0, 0, 0, 2, 0, 0]);
        assert_eq!(h.protocol(), EtherType::IPV4);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 16];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_packet_type(0);
        h.set_arphrd_type(1);
        h.set_addr_len(6);
        h.set_addr([2, 0, 0, 0, 0, 2, 0, 0]);
        h.set_protocol(EtherType::IPV4);
        assert_eq!(h.into_inner(), &BYTES[..]);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Header::new_unchecked(&BYTES[..])), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 16];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 16);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..15]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated SLL at offset 0: need 16 bytes, have 15"
        );
        let (rest, h) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.protocol(), EtherType::IPV4);
    }

    proptest! {
        #[test]
        fn roundtrip_sll(packet_type: u16, arphrd_type: u16, addr_len: u16, addr: [u8; 8], proto: u16) {
            let r = Repr { packet_type, arphrd_type, addr_len, addr, protocol: EtherType(proto) };
            let mut buf = [0u8; HEADER_LEN];
            r.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(r));
        }
    }
}
