//! Link-layer header types (the tcpdump.org `LINKTYPE_` registry, capture-formats.md §5) and
//! the layer the dissector starts at for each of them.

use core::fmt;

use crate::ethernet::EtherType;
use crate::stack::Start;

/// Link-layer header type of a captured frame: an open newtype (every value is kept, the
/// ones the dissector cannot start on are reported per frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// `LINKTYPE_ETHERNET`: Ethernet II / 802.3.
    pub const ETHERNET: LinkType = LinkType(1);
    /// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1 (`tcpdump -i any`, older libpcap).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2 (`tcpdump -i any`, libpcap ≥ 1.10).
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// `LINKTYPE_NULL`: BSD loopback, a 4-byte address family in the capturing host's order.
    pub const NULL: LinkType = LinkType(0);
    /// `LINKTYPE_LOOP`: OpenBSD loopback, the 4-byte address family in network order.
    pub const LOOP: LinkType = LinkType(108);
    /// `LINKTYPE_RAW`: raw IPv4 or IPv6, by the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// The platform DLT numbers some files carry for raw IP instead of 101.
    pub const RAW_DLT12: LinkType = LinkType(12);
    pub const RAW_DLT14: LinkType = LinkType(14);
    /// `LINKTYPE_IPV4`: raw IPv4 only.
    pub const IPV4: LinkType = LinkType(228);
    /// `LINKTYPE_IPV6`: raw IPv6 only.
    pub const IPV6: LinkType = LinkType(229);
    /// `LINKTYPE_ERF`: Endace ERF records (ibdump's native InfiniBand captures).
    pub const ERF: LinkType = LinkType(197);
    /// `LINKTYPE_INFINIBAND`: raw InfiniBand packets starting at the LRH.
    pub const INFINIBAND: LinkType = LinkType(247);
    /// IP over InfiniBand with a 40-byte pseudo header (`LINKTYPE_IPOIB`).
    pub const IPOIB: LinkType = LinkType(242);

    /// Where the dissector starts on frames of this link type; `None` when it cannot.
    #[must_use]
    pub const fn start(self) -> Option<Start> {
        match self {
            Self::ETHERNET => Some(Start::Ethernet),
            Self::LINUX_SLL => Some(Start::Sll),
            Self::LINUX_SLL2 => Some(Start::Sll2),
            Self::NULL => Some(Start::Null {
                network_order: false,
            }),
            Self::LOOP => Some(Start::Null {
                network_order: true,
            }),
            Self::RAW | Self::RAW_DLT12 | Self::RAW_DLT14 => Some(Start::RawIp),
            Self::IPV4 => Some(Start::EtherType(EtherType::IPV4)),
            Self::IPV6 => Some(Start::EtherType(EtherType::IPV6)),
            Self::ERF => Some(Start::Erf),
            Self::INFINIBAND => Some(Start::Infiniband),
            Self::IPOIB => Some(Start::Ipoib),
            _ => None,
        }
    }

    /// Whether the dissector can start on frames of this link type.
    #[must_use]
    pub const fn is_supported(self) -> bool {
        self.start().is_some()
    }

    /// The registry name (`ETHERNET`, `LINUX_SLL`, `LINUX_SLL2`), `None` for other values.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        match self {
            Self::ETHERNET => Some("ETHERNET"),
            Self::LINUX_SLL => Some("LINUX_SLL"),
            Self::LINUX_SLL2 => Some("LINUX_SLL2"),
            Self::NULL => Some("NULL"),
            Self::LOOP => Some("LOOP"),
            Self::RAW | Self::RAW_DLT12 | Self::RAW_DLT14 => Some("RAW"),
            Self::IPV4 => Some("IPV4"),
            Self::IPV6 => Some("IPV6"),
            Self::ERF => Some("ERF"),
            Self::INFINIBAND => Some("INFINIBAND"),
            Self::IPOIB => Some("IPOIB"),
            _ => None,
        }
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "LINKTYPE({})", self.0),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn test_names_and_starts() {
        assert_eq!(LinkType::ETHERNET.start(), Some(Start::Ethernet));
        assert_eq!(LinkType::LINUX_SLL2.start(), Some(Start::Sll2));
        assert_eq!(LinkType(147).start(), None);
        assert!(!LinkType(147).is_supported());
        assert_eq!(LinkType(147).to_string(), "LINKTYPE(147)");
        assert_eq!(LinkType::LINUX_SLL.to_string(), "LINUX_SLL");
    }
}
