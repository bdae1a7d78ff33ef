//! The one error type of the dissectors: small, `Copy`, no lifetime.
//!
//! Offsets count from the start of the buffer that was handed to the failing
//! call: a header's own `new_checked` reports offsets within the header, and
//! [`crate::dissect`] re-bases them onto the whole frame.

use core::fmt;

/// The protocol layer an error or a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Sll,
    Sll2,
    /// The BSD loopback header of link types NULL and LOOP.
    Null,
    /// An ERF record header (link type 197).
    Erf,
    /// The InfiniBand Local Route Header.
    Lrh,
    /// NVIDIA DC's 8 bytes after the BTH.
    Dc,
    /// The DC connect extended transport header.
    Dcceth,
    Gre,
    Erspan,
    Vxlan,
    Geneve,
    Mpls,
    /// Encapsulations nested deeper than the dissector follows.
    Encap,
    /// IP over InfiniBand's header (and link type 242's pseudo header).
    Ipoib,
    Ethernet,
    Vlan,
    MacControl,
    Ipv4,
    Ipv6,
    Grh,
    Udp,
    Tcp,
    TcpBth,
    Bth,
    Rdeth,
    Deth,
    XrcEth,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Feth,
    Cnp,
    Mad,
    Payload,
    Icrc,
}

impl Layer {
    /// The name used in error messages (`truncated BTH at offset 42 …`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Sll => "SLL",
            Layer::Sll2 => "SLL2",
            Layer::Null => "NULL",
            Layer::Ipoib => "IPoIB",
            Layer::Erf => "ERF",
            Layer::Lrh => "LRH",
            Layer::Dc => "DC",
            Layer::Dcceth => "DCCETH",
            Layer::Gre => "GRE",
            Layer::Erspan => "ERSPAN",
            Layer::Vxlan => "VXLAN",
            Layer::Geneve => "Geneve",
            Layer::Mpls => "MPLS",
            Layer::Encap => "encapsulation",
            Layer::Ethernet => "Ethernet",
            Layer::Vlan => "VLAN",
            Layer::MacControl => "MAC Control",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Grh => "GRH",
            Layer::Udp => "UDP",
            Layer::Tcp => "TCP",
            Layer::TcpBth => "tcp_bth",
            Layer::Bth => "BTH",
            Layer::Rdeth => "RDETH",
            Layer::Deth => "DETH",
            Layer::XrcEth => "XRCETH",
            Layer::Reth => "RETH",
            Layer::AtomicEth => "AtomicETH",
            Layer::Aeth => "AETH",
            Layer::AtomicAckEth => "AtomicAckETH",
            Layer::ImmDt => "ImmDt",
            Layer::Ieth => "IETH",
            Layer::Feth => "FETH",
            Layer::Cnp => "CNP",
            Layer::Mad => "CM MAD",
            Layer::Payload => "payload",
            Layer::Icrc => "ICRC",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a header that was fully present is still not acceptable. Each carries the numbers
/// that disagree, so the message says exactly what is inconsistent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// The IP (or GRH) version nibble is not the one the EtherType or next header announced.
    Version { found: u8, expected: u8 },
    /// A header-length field (bytes) is smaller than the fixed header (IPv4 IHL < 5, TCP
    /// data offset < 5).
    HeaderLength { value: u16, min: u16 },
    /// A length field (bytes) is smaller than the headers it must contain (UDP length < 8 +
    /// BTH + ICRC, IPv4 total length < its header, an LRH PktLen shorter than its headers).
    LengthTooShort { value: u32, need: u32 },
    /// A length field (bytes) points past the IP payload that carries it (a UDP length or a
    /// TCP header length larger than the IP payload).
    LengthPastPayload { value: u32, room: u32 },
    /// PadCnt is larger than the bytes between the headers and the ICRC.
    PadCount { pad: u8, room: u32 },
    /// A TCP option's length byte is impossible (0, 1, or past the option area).
    OptionLength { kind: u8, value: u8, room: u8 },
    /// An opcode its transport does not define (RC 0x1F, UD 0x7F, …): no header layout to
    /// read, and no way to know what the ICRC covers.
    UnknownOpcode { opcode: u8, transport: &'static str },
    /// A field holds a value that this layer cannot carry.
    Value,
    /// The mirror session marked the frame bad: ERSPAN III's BSO says short, oversized or a
    /// CRC/alignment error on the mirrored port.
    MirroredBad,
    /// Tunnels nested deeper than `max` (`encap::MAX_DEPTH`; a loop of GRE in GRE).
    TooDeep { max: u8 },
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Malformed::Version { found, expected } => {
                write!(f, "version {found} where {expected} was expected")
            }
            Malformed::HeaderLength { value, min } => write!(
                f,
                "header length field says {value} bytes, less than the {min}-byte fixed header"
            ),
            Malformed::LengthTooShort { value, need } => write!(
                f,
                "length field says {value} bytes, less than the {need} bytes of the headers it carries"
            ),
            Malformed::LengthPastPayload { value, room } => write!(
                f,
                "length field says {value} bytes, more than the {room} bytes of the IP payload"
            ),
            Malformed::PadCount { pad, room } => write!(
                f,
                "pad count {pad} larger than the {room} bytes between the headers and the ICRC"
            ),
            Malformed::OptionLength { kind, value, room } => write!(
                f,
                "option kind {kind} with length {value}, impossible with {room} bytes left in the option area"
            ),
            Malformed::UnknownOpcode { opcode, transport } => {
                write!(f, "opcode {opcode:#04x} is not defined for {transport}")
            }
            Malformed::Value => f.write_str("invalid field value"),
            Malformed::MirroredBad => f.write_str(
                "the mirror marked the frame bad (ERSPAN BSO: short, oversized or a CRC error)",
            ),
            Malformed::TooDeep { max } => {
                write!(
                    f,
                    "more than {max} encapsulations nested: not unwrapped further"
                )
            }
        }
    }
}

/// A dissection or validation failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the layer needs: a cut-short capture, or (when the
    /// frame was captured whole) a length field pointing past the end.
    Truncated {
        layer: Layer,
        offset: usize,
        need: usize,
        have: usize,
    },
    /// All bytes present, but the header contradicts itself.
    Malformed {
        layer: Layer,
        offset: usize,
        reason: Malformed,
    },
    /// A value this dissector does not know how to continue from (strict mode only).
    Unsupported {
        layer: Layer,
        offset: usize,
        value: u32,
    },
}

impl WireError {
    #[must_use]
    pub const fn layer(&self) -> Layer {
        match *self {
            WireError::Truncated { layer, .. }
            | WireError::Malformed { layer, .. }
            | WireError::Unsupported { layer, .. } => layer,
        }
    }

    #[must_use]
    pub const fn offset(&self) -> usize {
        match *self {
            WireError::Truncated { offset, .. }
            | WireError::Malformed { offset, .. }
            | WireError::Unsupported { offset, .. } => offset,
        }
    }

    /// The same error with its offset moved `base` bytes further into the frame.
    #[must_use]
    pub const fn rebased(self, base: usize) -> Self {
        match self {
            WireError::Truncated {
                layer,
                offset,
                need,
                have,
            } => WireError::Truncated {
                layer,
                offset: offset + base,
                need,
                have,
            },
            WireError::Malformed {
                layer,
                offset,
                reason,
            } => WireError::Malformed {
                layer,
                offset: offset + base,
                reason,
            },
            WireError::Unsupported {
                layer,
                offset,
                value,
            } => WireError::Unsupported {
                layer,
                offset: offset + base,
                value,
            },
        }
    }

    #[must_use]
    pub const fn is_truncated(&self) -> bool {
        matches!(self, WireError::Truncated { .. })
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated {
                layer,
                offset,
                need,
                have,
            } => write!(
                f,
                "truncated {layer} at offset {offset}: need {need} bytes, have {have}"
            ),
            WireError::Malformed {
                layer,
                offset,
                reason,
            } => write!(f, "malformed {layer} at offset {offset}: {reason}"),
            WireError::Unsupported {
                layer,
                offset,
                value,
            } => write!(
                f,
                "unsupported {layer} at offset {offset}: value {value:#x}"
            ),
        }
    }
}

impl core::error::Error for WireError {}

/// Result of the public dissector API.
pub type Result<T> = core::result::Result<T, WireError>;

/// Length check shared by every `check_len`: `Truncated` when `have < need`.
pub(crate) const fn need(layer: Layer, need: usize, have: usize) -> Result<()> {
    if have < need {
        Err(WireError::Truncated {
            layer,
            offset: 0,
            need,
            have,
        })
    } else {
        Ok(())
    }
}

/// Error type of the internal nom parsers: it keeps how much input was left
/// (never the input itself), so `stack.rs` can turn it into a frame offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackError {
    pub remaining: usize,
}

impl<'a> nom::error::ParseError<&'a [u8]> for StackError {
    fn from_error_kind(input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        StackError {
            remaining: input.len(),
        }
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

/// Result of the internal nom parsers.
pub(crate) type PResult<'a, T> = nom::IResult<&'a [u8], T, StackError>;

/// `take(n)` in complete mode: the seam every header's `parse` adapter uses.
#[inline]
pub(crate) fn take_complete(i: &[u8], n: usize) -> PResult<'_, &[u8]> {
    // the split directly (nom's generic `take` cost a BTH ~30 instructions a frame); nom
    // builds its error for the short input
    match i.split_at_checked(n) {
        Some((taken, rest)) => Ok((rest, taken)),
        None => take_short(i, n),
    }
}

#[cold]
fn take_short(i: &[u8], n: usize) -> PResult<'_, &[u8]> {
    use nom::Parser;
    nom::bytes::complete::take(n).parse_complete(i)
}
