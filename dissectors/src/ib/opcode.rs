//! The opcode registry: the single table from an opcode to its name, its
//! operation and the extension headers that follow the BTH (protocol.md §2.3).
//!
//! Everything that needs to know what an opcode carries asks this table;
//! nowhere else matches on opcode values.

use core::fmt;

/// An 8-bit BTH opcode. Open newtype: vendor and reserved values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Opcode(pub u8);

/// The transport named by the top three opcode bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    /// 0x80..0x9F: congestion notification (RoCEv2 CNP is 0x81).
    Cnp,
    Xrc,
    /// 0xC0..0xDF.
    Reserved,
    /// 0xE0..0xFF: manufacturer specific.
    Vendor,
}

impl Transport {
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Xrc => "XRC",
            Transport::Reserved => "RESERVED",
            Transport::Vendor => "VENDOR",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An extension header that can follow the BTH, in wire order per opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtHeader {
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
    /// The 16 reserved bytes of a RoCEv2 CNP.
    CnpPad,
}

impl ExtHeader {
    /// Size on the wire in bytes.
    #[must_use]
    pub const fn wire_len(self) -> usize {
        match self {
            ExtHeader::Rdeth
            | ExtHeader::XrcEth
            | ExtHeader::Aeth
            | ExtHeader::ImmDt
            | ExtHeader::Ieth
            | ExtHeader::Feth => 4,
            ExtHeader::Deth | ExtHeader::AtomicAckEth => 8,
            ExtHeader::Reth | ExtHeader::CnpPad => 16,
            ExtHeader::AtomicEth => 28,
        }
    }

    #[must_use]
    pub const fn layer(self) -> crate::Layer {
        use crate::Layer;
        match self {
            ExtHeader::Rdeth => Layer::Rdeth,
            ExtHeader::Deth => Layer::Deth,
            ExtHeader::XrcEth => Layer::XrcEth,
            ExtHeader::Reth => Layer::Reth,
            ExtHeader::AtomicEth => Layer::AtomicEth,
            ExtHeader::Aeth => Layer::Aeth,
            ExtHeader::AtomicAckEth => Layer::AtomicAckEth,
            ExtHeader::ImmDt => Layer::ImmDt,
            ExtHeader::Ieth => Layer::Ieth,
            ExtHeader::Feth => Layer::Feth,
            ExtHeader::CnpPad => Layer::Cnp,
        }
    }
}

/// What a packet of this opcode does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Send,
    RdmaWrite,
    ReadRequest,
    ReadResponse,
    Acknowledge,
    AtomicAcknowledge,
    CompareSwap,
    FetchAdd,
    Resync,
    Flush,
    AtomicWrite,
    Cnp,
}

impl Operation {
    /// Requester → responder packets (they carry the request PSN stream).
    #[must_use]
    pub const fn is_request(self) -> bool {
        matches!(
            self,
            Operation::Send
                | Operation::RdmaWrite
                | Operation::ReadRequest
                | Operation::CompareSwap
                | Operation::FetchAdd
                | Operation::Resync
                | Operation::Flush
                | Operation::AtomicWrite
        )
    }

    /// Responder → requester packets (their PSN lives in the requester's space).
    #[must_use]
    pub const fn is_response(self) -> bool {
        matches!(
            self,
            Operation::ReadResponse | Operation::Acknowledge | Operation::AtomicAcknowledge
        )
    }

    #[must_use]
    pub const fn is_atomic(self) -> bool {
        matches!(self, Operation::CompareSwap | Operation::FetchAdd)
    }
}

/// Place of a packet inside its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    First,
    Middle,
    Last,
    Only,
}

impl Position {
    /// LAST or ONLY: the packet completes a message.
    #[must_use]
    pub const fn ends_message(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }

    /// FIRST or ONLY: the packet starts a message.
    #[must_use]
    pub const fn starts_message(self) -> bool {
        matches!(self, Position::First | Position::Only)
    }
}

/// One row of the opcode table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpcodeInfo {
    pub opcode: Opcode,
    pub name: &'static str,
    pub operation: Operation,
    pub position: Position,
    /// Extension headers after the BTH in wire order; `None` where no primary
    /// source gives the layout (RD_FLUSH, RD_ATOMIC_WRITE): the bytes are kept raw.
    pub headers: Option<&'static [ExtHeader]>,
    pub immediate: bool,
    pub invalidate: bool,
    /// Total bytes of `headers` (0 when the layout is unknown), precomputed
    /// for the hot path.
    pub ext_len: u8,
}

impl OpcodeInfo {
    /// BTH plus extension headers, in bytes; `None` for an unknown layout.
    #[must_use]
    pub const fn header_bytes(&self) -> Option<usize> {
        match self.headers {
            None => None,
            Some(list) => {
                let mut n = crate::ib::bth::HEADER_LEN;
                let mut i = 0;
                while i < list.len() {
                    n += list[i].wire_len();
                    i += 1;
                }
                Some(n)
            }
        }
    }
}

impl Opcode {
    /// The transport of the top three bits.
    #[must_use]
    pub const fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            6 => Transport::Reserved,
            _ => Transport::Vendor,
        }
    }

    /// The table row, or `None` for a reserved, unknown or vendor opcode.
    #[must_use]
    pub fn info(self) -> Option<&'static OpcodeInfo> {
        match INDEX[usize::from(self.0)] {
            NONE => None,
            i => Some(&ROWS[usize::from(i)]),
        }
    }

    /// The protocol.md name (`RC_RDMA_WRITE_FIRST`), or `None` when unknown.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        self.info().map(|i| i.name)
    }

    #[must_use]
    pub fn is_request(self) -> bool {
        self.info().is_some_and(|i| i.operation.is_request())
    }

    #[must_use]
    pub fn is_response(self) -> bool {
        self.info().is_some_and(|i| i.operation.is_response())
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN({:#04x})", self.0),
        }
    }
}

use ExtHeader::{
    Aeth, AtomicAckEth, AtomicEth, CnpPad, Deth, Feth, Ieth, ImmDt, Rdeth, Reth, XrcEth,
};
use Operation::{
    Acknowledge, AtomicAcknowledge, AtomicWrite, Cnp, CompareSwap, FetchAdd, Flush, RdmaWrite,
    ReadRequest, ReadResponse, Resync, Send,
};
use Position::{First, Last, Middle, Only};

const fn row(
    code: u8,
    name: &'static str,
    operation: Operation,
    position: Position,
    headers: Option<&'static [ExtHeader]>,
    immediate: bool,
    invalidate: bool,
) -> OpcodeInfo {
    let mut ext_len = 0;
    if let Some(list) = headers {
        let mut i = 0;
        while i < list.len() {
            ext_len += list[i].wire_len();
            i += 1;
        }
    }
    #[allow(clippy::cast_possible_truncation)] // at most 40 bytes
    let ext_len = ext_len as u8;
    OpcodeInfo {
        opcode: Opcode(code),
        name,
        operation,
        position,
        headers,
        immediate,
        invalidate,
        ext_len,
    }
}

const NONE: u8 = u8::MAX;

/// opcode value -> index into `ROWS` (or `NONE`), built at compile time.
static INDEX: [u8; 256] = {
    let mut index = [NONE; 256];
    let mut i = 0;
    while i < ROWS.len() {
        #[allow(clippy::cast_possible_truncation)] // ROWS has fewer than 255 entries
        {
            index[ROWS[i].opcode.0 as usize] = i as u8;
        }
        i += 1;
    }
    index
};

// generated from protocol.md §2.3 by a one-off script; edit by hand from now on
impl Opcode {
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x03);
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x05);
    pub const RC_RDMA_WRITE_FIRST: Opcode = Opcode(0x06);
    pub const RC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x07);
    pub const RC_RDMA_WRITE_LAST: Opcode = Opcode(0x08);
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x09);
    pub const RC_RDMA_WRITE_ONLY: Opcode = Opcode(0x0A);
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x0B);
    pub const RC_RDMA_READ_REQUEST: Opcode = Opcode(0x0C);
    pub const RC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x0D);
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0E);
    pub const RC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x0F);
    pub const RC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    pub const RC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0x16);
    pub const RC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0x17);
    pub const RC_FLUSH: Opcode = Opcode(0x1C);
    pub const RC_ATOMIC_WRITE: Opcode = Opcode(0x1D);
    pub const UC_SEND_FIRST: Opcode = Opcode(0x20);
    pub const UC_SEND_MIDDLE: Opcode = Opcode(0x21);
    pub const UC_SEND_LAST: Opcode = Opcode(0x22);
    pub const UC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x23);
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    pub const UC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x25);
    pub const UC_RDMA_WRITE_FIRST: Opcode = Opcode(0x26);
    pub const UC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x27);
    pub const UC_RDMA_WRITE_LAST: Opcode = Opcode(0x28);
    pub const UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x29);
    pub const UC_RDMA_WRITE_ONLY: Opcode = Opcode(0x2A);
    pub const UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x2B);
    pub const RD_SEND_FIRST: Opcode = Opcode(0x40);
    pub const RD_SEND_MIDDLE: Opcode = Opcode(0x41);
    pub const RD_SEND_LAST: Opcode = Opcode(0x42);
    pub const RD_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x43);
    pub const RD_SEND_ONLY: Opcode = Opcode(0x44);
    pub const RD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x45);
    pub const RD_RDMA_WRITE_FIRST: Opcode = Opcode(0x46);
    pub const RD_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x47);
    pub const RD_RDMA_WRITE_LAST: Opcode = Opcode(0x48);
    pub const RD_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x49);
    pub const RD_RDMA_WRITE_ONLY: Opcode = Opcode(0x4A);
    pub const RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x4B);
    pub const RD_RDMA_READ_REQUEST: Opcode = Opcode(0x4C);
    pub const RD_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x4D);
    pub const RD_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x4E);
    pub const RD_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x4F);
    pub const RD_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x50);
    pub const RD_ACKNOWLEDGE: Opcode = Opcode(0x51);
    pub const RD_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x52);
    pub const RD_COMPARE_SWAP: Opcode = Opcode(0x53);
    pub const RD_FETCH_ADD: Opcode = Opcode(0x54);
    pub const RD_RESYNC: Opcode = Opcode(0x55);
    pub const RD_FLUSH: Opcode = Opcode(0x5C);
    pub const RD_ATOMIC_WRITE: Opcode = Opcode(0x5D);
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x65);
    pub const CNP: Opcode = Opcode(0x81);
    pub const XRC_SEND_FIRST: Opcode = Opcode(0xA0);
    pub const XRC_SEND_MIDDLE: Opcode = Opcode(0xA1);
    pub const XRC_SEND_LAST: Opcode = Opcode(0xA2);
    pub const XRC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0xA3);
    pub const XRC_SEND_ONLY: Opcode = Opcode(0xA4);
    pub const XRC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0xA5);
    pub const XRC_RDMA_WRITE_FIRST: Opcode = Opcode(0xA6);
    pub const XRC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0xA7);
    pub const XRC_RDMA_WRITE_LAST: Opcode = Opcode(0xA8);
    pub const XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0xA9);
    pub const XRC_RDMA_WRITE_ONLY: Opcode = Opcode(0xAA);
    pub const XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0xAB);
    pub const XRC_RDMA_READ_REQUEST: Opcode = Opcode(0xAC);
    pub const XRC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0xAD);
    pub const XRC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0xAE);
    pub const XRC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0xAF);
    pub const XRC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0xB0);
    pub const XRC_ACKNOWLEDGE: Opcode = Opcode(0xB1);
    pub const XRC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0xB2);
    pub const XRC_COMPARE_SWAP: Opcode = Opcode(0xB3);
    pub const XRC_FETCH_ADD: Opcode = Opcode(0xB4);
    pub const XRC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0xB6);
    pub const XRC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0xB7);
}
const ROWS: [OpcodeInfo; 87] = [
    row(0x00, "RC_SEND_FIRST", Send, First, Some(&[]), false, false),
    row(
        0x01,
        "RC_SEND_MIDDLE",
        Send,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(0x02, "RC_SEND_LAST", Send, Last, Some(&[]), false, false),
    row(
        0x03,
        "RC_SEND_LAST_WITH_IMMEDIATE",
        Send,
        Last,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(0x04, "RC_SEND_ONLY", Send, Only, Some(&[]), false, false),
    row(
        0x05,
        "RC_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(
        0x06,
        "RC_RDMA_WRITE_FIRST",
        RdmaWrite,
        First,
        Some(&[Reth]),
        false,
        false,
    ),
    row(
        0x07,
        "RC_RDMA_WRITE_MIDDLE",
        RdmaWrite,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(
        0x08,
        "RC_RDMA_WRITE_LAST",
        RdmaWrite,
        Last,
        Some(&[]),
        false,
        false,
    ),
    row(
        0x09,
        "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        RdmaWrite,
        Last,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(
        0x0A,
        "RC_RDMA_WRITE_ONLY",
        RdmaWrite,
        Only,
        Some(&[Reth]),
        false,
        false,
    ),
    row(
        0x0B,
        "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        RdmaWrite,
        Only,
        Some(&[Reth, ImmDt]),
        true,
        false,
    ),
    row(
        0x0C,
        "RC_RDMA_READ_REQUEST",
        ReadRequest,
        Only,
        Some(&[Reth]),
        false,
        false,
    ),
    row(
        0x0D,
        "RC_RDMA_READ_RESPONSE_FIRST",
        ReadResponse,
        First,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0x0E,
        "RC_RDMA_READ_RESPONSE_MIDDLE",
        ReadResponse,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(
        0x0F,
        "RC_RDMA_READ_RESPONSE_LAST",
        ReadResponse,
        Last,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0x10,
        "RC_RDMA_READ_RESPONSE_ONLY",
        ReadResponse,
        Only,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0x11,
        "RC_ACKNOWLEDGE",
        Acknowledge,
        Only,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0x12,
        "RC_ATOMIC_ACKNOWLEDGE",
        AtomicAcknowledge,
        Only,
        Some(&[Aeth, AtomicAckEth]),
        false,
        false,
    ),
    row(
        0x13,
        "RC_COMPARE_SWAP",
        CompareSwap,
        Only,
        Some(&[AtomicEth]),
        false,
        false,
    ),
    row(
        0x14,
        "RC_FETCH_ADD",
        FetchAdd,
        Only,
        Some(&[AtomicEth]),
        false,
        false,
    ),
    row(
        0x16,
        "RC_SEND_LAST_WITH_INVALIDATE",
        Send,
        Last,
        Some(&[Ieth]),
        false,
        true,
    ),
    row(
        0x17,
        "RC_SEND_ONLY_WITH_INVALIDATE",
        Send,
        Only,
        Some(&[Ieth]),
        false,
        true,
    ),
    row(
        0x1C,
        "RC_FLUSH",
        Flush,
        Only,
        Some(&[Feth, Reth]),
        false,
        false,
    ),
    row(
        0x1D,
        "RC_ATOMIC_WRITE",
        AtomicWrite,
        Only,
        Some(&[Reth]),
        false,
        false,
    ),
    row(0x20, "UC_SEND_FIRST", Send, First, Some(&[]), false, false),
    row(
        0x21,
        "UC_SEND_MIDDLE",
        Send,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(0x22, "UC_SEND_LAST", Send, Last, Some(&[]), false, false),
    row(
        0x23,
        "UC_SEND_LAST_WITH_IMMEDIATE",
        Send,
        Last,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(0x24, "UC_SEND_ONLY", Send, Only, Some(&[]), false, false),
    row(
        0x25,
        "UC_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(
        0x26,
        "UC_RDMA_WRITE_FIRST",
        RdmaWrite,
        First,
        Some(&[Reth]),
        false,
        false,
    ),
    row(
        0x27,
        "UC_RDMA_WRITE_MIDDLE",
        RdmaWrite,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(
        0x28,
        "UC_RDMA_WRITE_LAST",
        RdmaWrite,
        Last,
        Some(&[]),
        false,
        false,
    ),
    row(
        0x29,
        "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        RdmaWrite,
        Last,
        Some(&[ImmDt]),
        true,
        false,
    ),
    row(
        0x2A,
        "UC_RDMA_WRITE_ONLY",
        RdmaWrite,
        Only,
        Some(&[Reth]),
        false,
        false,
    ),
    row(
        0x2B,
        "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        RdmaWrite,
        Only,
        Some(&[Reth, ImmDt]),
        true,
        false,
    ),
    row(
        0x40,
        "RD_SEND_FIRST",
        Send,
        First,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x41,
        "RD_SEND_MIDDLE",
        Send,
        Middle,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x42,
        "RD_SEND_LAST",
        Send,
        Last,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x43,
        "RD_SEND_LAST_WITH_IMMEDIATE",
        Send,
        Last,
        Some(&[Rdeth, Deth, ImmDt]),
        true,
        false,
    ),
    row(
        0x44,
        "RD_SEND_ONLY",
        Send,
        Only,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x45,
        "RD_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        Some(&[Rdeth, Deth, ImmDt]),
        true,
        false,
    ),
    row(
        0x46,
        "RD_RDMA_WRITE_FIRST",
        RdmaWrite,
        First,
        Some(&[Rdeth, Deth, Reth]),
        false,
        false,
    ),
    row(
        0x47,
        "RD_RDMA_WRITE_MIDDLE",
        RdmaWrite,
        Middle,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x48,
        "RD_RDMA_WRITE_LAST",
        RdmaWrite,
        Last,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(
        0x49,
        "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        RdmaWrite,
        Last,
        Some(&[Rdeth, Deth, ImmDt]),
        true,
        false,
    ),
    row(
        0x4A,
        "RD_RDMA_WRITE_ONLY",
        RdmaWrite,
        Only,
        Some(&[Rdeth, Deth, Reth]),
        false,
        false,
    ),
    row(
        0x4B,
        "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        RdmaWrite,
        Only,
        Some(&[Rdeth, Deth, Reth, ImmDt]),
        true,
        false,
    ),
    row(
        0x4C,
        "RD_RDMA_READ_REQUEST",
        ReadRequest,
        Only,
        Some(&[Rdeth, Deth, Reth]),
        false,
        false,
    ),
    row(
        0x4D,
        "RD_RDMA_READ_RESPONSE_FIRST",
        ReadResponse,
        First,
        Some(&[Rdeth, Aeth]),
        false,
        false,
    ),
    row(
        0x4E,
        "RD_RDMA_READ_RESPONSE_MIDDLE",
        ReadResponse,
        Middle,
        Some(&[Rdeth]),
        false,
        false,
    ),
    row(
        0x4F,
        "RD_RDMA_READ_RESPONSE_LAST",
        ReadResponse,
        Last,
        Some(&[Rdeth, Aeth]),
        false,
        false,
    ),
    row(
        0x50,
        "RD_RDMA_READ_RESPONSE_ONLY",
        ReadResponse,
        Only,
        Some(&[Rdeth, Aeth]),
        false,
        false,
    ),
    row(
        0x51,
        "RD_ACKNOWLEDGE",
        Acknowledge,
        Only,
        Some(&[Rdeth, Aeth]),
        false,
        false,
    ),
    row(
        0x52,
        "RD_ATOMIC_ACKNOWLEDGE",
        AtomicAcknowledge,
        Only,
        Some(&[Rdeth, Aeth, AtomicAckEth]),
        false,
        false,
    ),
    row(
        0x53,
        "RD_COMPARE_SWAP",
        CompareSwap,
        Only,
        Some(&[Rdeth, Deth, AtomicEth]),
        false,
        false,
    ),
    row(
        0x54,
        "RD_FETCH_ADD",
        FetchAdd,
        Only,
        Some(&[Rdeth, Deth, AtomicEth]),
        false,
        false,
    ),
    row(
        0x55,
        "RD_RESYNC",
        Resync,
        Only,
        Some(&[Rdeth, Deth]),
        false,
        false,
    ),
    row(0x5C, "RD_FLUSH", Flush, Only, None, false, false),
    row(
        0x5D,
        "RD_ATOMIC_WRITE",
        AtomicWrite,
        Only,
        None,
        false,
        false,
    ),
    row(
        0x64,
        "UD_SEND_ONLY",
        Send,
        Only,
        Some(&[Deth]),
        false,
        false,
    ),
    row(
        0x65,
        "UD_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        Some(&[Deth, ImmDt]),
        true,
        false,
    ),
    row(0x81, "CNP", Cnp, Only, Some(&[CnpPad]), false, false),
    row(
        0xA0,
        "XRC_SEND_FIRST",
        Send,
        First,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA1,
        "XRC_SEND_MIDDLE",
        Send,
        Middle,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA2,
        "XRC_SEND_LAST",
        Send,
        Last,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA3,
        "XRC_SEND_LAST_WITH_IMMEDIATE",
        Send,
        Last,
        Some(&[XrcEth, ImmDt]),
        true,
        false,
    ),
    row(
        0xA4,
        "XRC_SEND_ONLY",
        Send,
        Only,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA5,
        "XRC_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        Some(&[XrcEth, ImmDt]),
        true,
        false,
    ),
    row(
        0xA6,
        "XRC_RDMA_WRITE_FIRST",
        RdmaWrite,
        First,
        Some(&[XrcEth, Reth]),
        false,
        false,
    ),
    row(
        0xA7,
        "XRC_RDMA_WRITE_MIDDLE",
        RdmaWrite,
        Middle,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA8,
        "XRC_RDMA_WRITE_LAST",
        RdmaWrite,
        Last,
        Some(&[XrcEth]),
        false,
        false,
    ),
    row(
        0xA9,
        "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        RdmaWrite,
        Last,
        Some(&[XrcEth, ImmDt]),
        true,
        false,
    ),
    row(
        0xAA,
        "XRC_RDMA_WRITE_ONLY",
        RdmaWrite,
        Only,
        Some(&[XrcEth, Reth]),
        false,
        false,
    ),
    row(
        0xAB,
        "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        RdmaWrite,
        Only,
        Some(&[XrcEth, Reth, ImmDt]),
        true,
        false,
    ),
    row(
        0xAC,
        "XRC_RDMA_READ_REQUEST",
        ReadRequest,
        Only,
        Some(&[XrcEth, Reth]),
        false,
        false,
    ),
    row(
        0xAD,
        "XRC_RDMA_READ_RESPONSE_FIRST",
        ReadResponse,
        First,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0xAE,
        "XRC_RDMA_READ_RESPONSE_MIDDLE",
        ReadResponse,
        Middle,
        Some(&[]),
        false,
        false,
    ),
    row(
        0xAF,
        "XRC_RDMA_READ_RESPONSE_LAST",
        ReadResponse,
        Last,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0xB0,
        "XRC_RDMA_READ_RESPONSE_ONLY",
        ReadResponse,
        Only,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0xB1,
        "XRC_ACKNOWLEDGE",
        Acknowledge,
        Only,
        Some(&[Aeth]),
        false,
        false,
    ),
    row(
        0xB2,
        "XRC_ATOMIC_ACKNOWLEDGE",
        AtomicAcknowledge,
        Only,
        Some(&[Aeth, AtomicAckEth]),
        false,
        false,
    ),
    row(
        0xB3,
        "XRC_COMPARE_SWAP",
        CompareSwap,
        Only,
        Some(&[XrcEth, AtomicEth]),
        false,
        false,
    ),
    row(
        0xB4,
        "XRC_FETCH_ADD",
        FetchAdd,
        Only,
        Some(&[XrcEth, AtomicEth]),
        false,
        false,
    ),
    row(
        0xB6,
        "XRC_SEND_LAST_WITH_INVALIDATE",
        Send,
        Last,
        Some(&[XrcEth, Ieth]),
        false,
        true,
    ),
    row(
        0xB7,
        "XRC_SEND_ONLY_WITH_INVALIDATE",
        Send,
        Only,
        Some(&[XrcEth, Ieth]),
        false,
        true,
    ),
];

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn test_table_is_consistent() {
        for row in &ROWS {
            assert_eq!(Opcode(row.opcode.0).info(), Some(row));
            assert!(
                row.name.starts_with(row.opcode.transport().name()),
                "{}",
                row.name
            );
        }
        assert_eq!(ROWS.len(), 87);
    }

    #[test]
    fn test_header_bytes_match_protocol_md() {
        // "Hdr bytes incl. BTH" column of protocol.md §2.3, spot-checked per shape.
        let cases = [
            (0x00, 12),
            (0x0B, 32),
            (0x12, 24),
            (0x13, 40),
            (0x1C, 32),
            (0x4B, 44),
            (0x53, 52),
            (0x52, 28),
            (0x65, 24),
            (0x81, 28),
            (0xAB, 36),
            (0xB3, 44),
            (0xAE, 12),
        ];
        for (code, bytes) in cases {
            assert_eq!(
                Opcode(code).info().and_then(OpcodeInfo::header_bytes),
                Some(bytes),
                "{code:#x}"
            );
        }
    }

    #[test]
    fn test_unknown_opcodes() {
        for code in [
            0x15u8, 0x18, 0x1F, 0x2C, 0x60, 0x80, 0x82, 0xB5, 0xC0, 0xE0, 0xFF,
        ] {
            assert_eq!(Opcode(code).info(), None, "{code:#x}");
        }
        assert_eq!(Opcode(0x1F).to_string(), "UNKNOWN(0x1f)");
        assert_eq!(Opcode(0x81).to_string(), "CNP");
        assert_eq!(Opcode(0x5C).info().map(|i| i.headers), Some(None));
    }

    #[test]
    fn test_direction() {
        assert!(Opcode::RC_RDMA_READ_REQUEST.is_request());
        assert!(Opcode::RC_RDMA_READ_RESPONSE_MIDDLE.is_response());
        assert!(Opcode::XRC_ACKNOWLEDGE.is_response());
        assert!(!Opcode::CNP.is_request() && !Opcode::CNP.is_response());
        assert_eq!(Opcode(0x64).transport(), Transport::Ud);
    }
}
