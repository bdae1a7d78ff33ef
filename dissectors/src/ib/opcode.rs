//! The opcode registry: the single table from an opcode to its name, its
//! operation and the extension headers that follow the BTH (protocol.md §2.3).
//!
//! Everything that needs to know what an opcode carries asks this table;
//! nowhere else matches on opcode values.

// Indexing cannot panic here: the opcode tables have 256 rows (indexed by a byte) or are indexed by
// positions the compile-time table built.
#![allow(clippy::indexing_slicing)]

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
    /// NVIDIA Dynamically Connected, on the RD opcode range (capture-formats.md §3).
    Dc,
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
            Transport::Dc => "DC",
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
    /// NVIDIA DC's 8 bytes right after the BTH.
    Dc,
    /// The DC connect header (opcode 0x55, SE 0).
    Dcceth,
}

impl ExtHeader {
    /// Size on the wire in bytes (each header module's own `HEADER_LEN`).
    #[must_use]
    pub const fn wire_len(self) -> usize {
        use crate::ib::{
            aeth, atomic_ack_eth, atomic_eth, cnp, dc, deth, feth, ieth, immdt, rdeth, reth, xrceth,
        };
        match self {
            ExtHeader::Rdeth => rdeth::HEADER_LEN,
            ExtHeader::Deth => deth::HEADER_LEN,
            ExtHeader::XrcEth => xrceth::HEADER_LEN,
            ExtHeader::Reth => reth::HEADER_LEN,
            ExtHeader::AtomicEth => atomic_eth::HEADER_LEN,
            ExtHeader::Aeth => aeth::HEADER_LEN,
            ExtHeader::AtomicAckEth => atomic_ack_eth::HEADER_LEN,
            ExtHeader::ImmDt => immdt::HEADER_LEN,
            ExtHeader::Ieth => ieth::HEADER_LEN,
            ExtHeader::Feth => feth::HEADER_LEN,
            ExtHeader::CnpPad => cnp::HEADER_LEN,
            ExtHeader::Dc => dc::HEADER_LEN,
            ExtHeader::Dcceth => dc::dcceth::HEADER_LEN,
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
            ExtHeader::Dc => Layer::Dc,
            ExtHeader::Dcceth => Layer::Dcceth,
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
    /// DC connect / disconnect (opcode 0x55 in the DC layout).
    DcConnect,
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
                | Operation::DcConnect
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
    /// The transport (the opcode's top three bits, but DC on the RD range in DC layout).
    pub transport: Transport,
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

/// Formats an opcode's name, `UNKNOWN(0xNN)` for one outside the table, without allocating.
#[derive(Debug, Default)]
pub struct OpcodeName {
    buf: [u8; 13],
}

impl OpcodeName {
    pub fn of(&mut self, opcode: Opcode) -> &str {
        if let Some(name) = opcode.name() {
            return name;
        }
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.buf = *b"UNKNOWN(0x00)";
        self.buf[10] = HEX[usize::from(opcode.0 >> 4)];
        self.buf[11] = HEX[usize::from(opcode.0 & 0xF)];
        core::str::from_utf8(&self.buf).unwrap_or("UNKNOWN")
    }
}

impl Opcode {
    /// The opcode that does `operation` at `position` of a message on `transport`, with
    /// immediate data or an invalidate R_Key as asked: the table read backwards (what a
    /// sender needs). `None` where the table has no such row.
    #[must_use]
    pub fn lookup(
        transport: Transport,
        operation: Operation,
        position: Position,
        immediate: bool,
        invalidate: bool,
    ) -> Option<Opcode> {
        let key = lookup_key(transport, operation, position, immediate, invalidate);
        match LOOKUP[key] {
            NONE => None,
            i => Some(ROWS[usize::from(i)].opcode),
        }
    }
}

/// Index of a (transport, operation, position, imm, inval) combination in [`LOOKUP`].
const fn lookup_key(
    transport: Transport,
    operation: Operation,
    position: Position,
    immediate: bool,
    invalidate: bool,
) -> usize {
    ((transport as usize) << 8)
        | ((operation as usize) << 4)
        | ((position as usize) << 2)
        | ((immediate as usize) << 1)
        | invalidate as usize
}

/// `lookup_key` -> index into `ROWS` (or `NONE`), built at compile time from the table.
static LOOKUP: [u8; 8 << 8] = {
    let mut lookup = [NONE; 8 << 8];
    let mut i = 0;
    while i < ROWS.len() {
        let r = &ROWS[i];
        let key = lookup_key(
            r.opcode.transport(),
            r.operation,
            r.position,
            r.immediate,
            r.invalidate,
        );
        #[allow(clippy::cast_possible_truncation)] // ROWS has fewer than 255 entries
        {
            lookup[key] = i as u8;
        }
        i += 1;
    }
    lookup
};

use ExtHeader::{
    Aeth, AtomicAckEth, AtomicEth, CnpPad, Deth, Feth, Ieth, ImmDt, Rdeth, Reth, XrcEth,
};
use Operation::{
    Acknowledge, AtomicAcknowledge, AtomicWrite, Cnp, CompareSwap, DcConnect, FetchAdd, Flush,
    RdmaWrite, ReadRequest, ReadResponse, Resync, Send,
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
        transport: Opcode(code).transport(),
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

/// The table, one line per opcode: value, name (also the `Opcode` constant), operation,
/// position, the extension headers after the BTH in wire order (`?` where no primary source
/// gives the layout), and `imm` / `inval` for opcodes with immediate data or an invalidate.
macro_rules! opcode_table {
    ($($code:literal $name:ident $op:ident $pos:ident $layout:tt $($flag:ident)?;)*) => {
        impl Opcode {
            $(pub const $name: Opcode = Opcode($code);)*
        }
        const ROWS: &[OpcodeInfo] = &[$(row(
            $code,
            stringify!($name),
            $op,
            $pos,
            opcode_table!(@layout $layout),
            opcode_table!(@flag imm $($flag)?),
            opcode_table!(@flag inval $($flag)?),
        )),*];
    };
    (@layout ?) => { None };
    (@layout [$($h:ident),*]) => { Some(&[$($h),*]) };
    (@flag imm imm) => { true };
    (@flag inval inval) => { true };
    (@flag $want:ident $($other:ident)?) => { false };
}

// protocol.md §2.3
opcode_table! {
    0x00 RC_SEND_FIRST                        Send              First  [];
    0x01 RC_SEND_MIDDLE                       Send              Middle [];
    0x02 RC_SEND_LAST                         Send              Last   [];
    0x03 RC_SEND_LAST_WITH_IMMEDIATE          Send              Last   [ImmDt] imm;
    0x04 RC_SEND_ONLY                         Send              Only   [];
    0x05 RC_SEND_ONLY_WITH_IMMEDIATE          Send              Only   [ImmDt] imm;
    0x06 RC_RDMA_WRITE_FIRST                  RdmaWrite         First  [Reth];
    0x07 RC_RDMA_WRITE_MIDDLE                 RdmaWrite         Middle [];
    0x08 RC_RDMA_WRITE_LAST                   RdmaWrite         Last   [];
    0x09 RC_RDMA_WRITE_LAST_WITH_IMMEDIATE    RdmaWrite         Last   [ImmDt] imm;
    0x0A RC_RDMA_WRITE_ONLY                   RdmaWrite         Only   [Reth];
    0x0B RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE    RdmaWrite         Only   [Reth, ImmDt] imm;
    0x0C RC_RDMA_READ_REQUEST                 ReadRequest       Only   [Reth];
    0x0D RC_RDMA_READ_RESPONSE_FIRST          ReadResponse      First  [Aeth];
    0x0E RC_RDMA_READ_RESPONSE_MIDDLE         ReadResponse      Middle [];
    0x0F RC_RDMA_READ_RESPONSE_LAST           ReadResponse      Last   [Aeth];
    0x10 RC_RDMA_READ_RESPONSE_ONLY           ReadResponse      Only   [Aeth];
    0x11 RC_ACKNOWLEDGE                       Acknowledge       Only   [Aeth];
    0x12 RC_ATOMIC_ACKNOWLEDGE                AtomicAcknowledge Only   [Aeth, AtomicAckEth];
    0x13 RC_COMPARE_SWAP                      CompareSwap       Only   [AtomicEth];
    0x14 RC_FETCH_ADD                         FetchAdd          Only   [AtomicEth];
    0x16 RC_SEND_LAST_WITH_INVALIDATE         Send              Last   [Ieth] inval;
    0x17 RC_SEND_ONLY_WITH_INVALIDATE         Send              Only   [Ieth] inval;
    0x1C RC_FLUSH                             Flush             Only   [Feth, Reth];
    0x1D RC_ATOMIC_WRITE                      AtomicWrite       Only   [Reth];
    0x20 UC_SEND_FIRST                        Send              First  [];
    0x21 UC_SEND_MIDDLE                       Send              Middle [];
    0x22 UC_SEND_LAST                         Send              Last   [];
    0x23 UC_SEND_LAST_WITH_IMMEDIATE          Send              Last   [ImmDt] imm;
    0x24 UC_SEND_ONLY                         Send              Only   [];
    0x25 UC_SEND_ONLY_WITH_IMMEDIATE          Send              Only   [ImmDt] imm;
    0x26 UC_RDMA_WRITE_FIRST                  RdmaWrite         First  [Reth];
    0x27 UC_RDMA_WRITE_MIDDLE                 RdmaWrite         Middle [];
    0x28 UC_RDMA_WRITE_LAST                   RdmaWrite         Last   [];
    0x29 UC_RDMA_WRITE_LAST_WITH_IMMEDIATE    RdmaWrite         Last   [ImmDt] imm;
    0x2A UC_RDMA_WRITE_ONLY                   RdmaWrite         Only   [Reth];
    0x2B UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE    RdmaWrite         Only   [Reth, ImmDt] imm;
    0x40 RD_SEND_FIRST                        Send              First  [Rdeth, Deth];
    0x41 RD_SEND_MIDDLE                       Send              Middle [Rdeth, Deth];
    0x42 RD_SEND_LAST                         Send              Last   [Rdeth, Deth];
    0x43 RD_SEND_LAST_WITH_IMMEDIATE          Send              Last   [Rdeth, Deth, ImmDt] imm;
    0x44 RD_SEND_ONLY                         Send              Only   [Rdeth, Deth];
    0x45 RD_SEND_ONLY_WITH_IMMEDIATE          Send              Only   [Rdeth, Deth, ImmDt] imm;
    0x46 RD_RDMA_WRITE_FIRST                  RdmaWrite         First  [Rdeth, Deth, Reth];
    0x47 RD_RDMA_WRITE_MIDDLE                 RdmaWrite         Middle [Rdeth, Deth];
    0x48 RD_RDMA_WRITE_LAST                   RdmaWrite         Last   [Rdeth, Deth];
    0x49 RD_RDMA_WRITE_LAST_WITH_IMMEDIATE    RdmaWrite         Last   [Rdeth, Deth, ImmDt] imm;
    0x4A RD_RDMA_WRITE_ONLY                   RdmaWrite         Only   [Rdeth, Deth, Reth];
    0x4B RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE    RdmaWrite         Only   [Rdeth, Deth, Reth, ImmDt] imm;
    0x4C RD_RDMA_READ_REQUEST                 ReadRequest       Only   [Rdeth, Deth, Reth];
    0x4D RD_RDMA_READ_RESPONSE_FIRST          ReadResponse      First  [Rdeth, Aeth];
    0x4E RD_RDMA_READ_RESPONSE_MIDDLE         ReadResponse      Middle [Rdeth];
    0x4F RD_RDMA_READ_RESPONSE_LAST           ReadResponse      Last   [Rdeth, Aeth];
    0x50 RD_RDMA_READ_RESPONSE_ONLY           ReadResponse      Only   [Rdeth, Aeth];
    0x51 RD_ACKNOWLEDGE                       Acknowledge       Only   [Rdeth, Aeth];
    0x52 RD_ATOMIC_ACKNOWLEDGE                AtomicAcknowledge Only   [Rdeth, Aeth, AtomicAckEth];
    0x53 RD_COMPARE_SWAP                      CompareSwap       Only   [Rdeth, Deth, AtomicEth];
    0x54 RD_FETCH_ADD                         FetchAdd          Only   [Rdeth, Deth, AtomicEth];
    0x55 RD_RESYNC                            Resync            Only   [Rdeth, Deth];
    0x5C RD_FLUSH                             Flush             Only   ?;
    0x5D RD_ATOMIC_WRITE                      AtomicWrite       Only   ?;
    0x64 UD_SEND_ONLY                         Send              Only   [Deth];
    0x65 UD_SEND_ONLY_WITH_IMMEDIATE          Send              Only   [Deth, ImmDt] imm;
    0x81 CNP                                  Cnp               Only   [CnpPad];
    0xA0 XRC_SEND_FIRST                       Send              First  [XrcEth];
    0xA1 XRC_SEND_MIDDLE                      Send              Middle [XrcEth];
    0xA2 XRC_SEND_LAST                        Send              Last   [XrcEth];
    0xA3 XRC_SEND_LAST_WITH_IMMEDIATE         Send              Last   [XrcEth, ImmDt] imm;
    0xA4 XRC_SEND_ONLY                        Send              Only   [XrcEth];
    0xA5 XRC_SEND_ONLY_WITH_IMMEDIATE         Send              Only   [XrcEth, ImmDt] imm;
    0xA6 XRC_RDMA_WRITE_FIRST                 RdmaWrite         First  [XrcEth, Reth];
    0xA7 XRC_RDMA_WRITE_MIDDLE                RdmaWrite         Middle [XrcEth];
    0xA8 XRC_RDMA_WRITE_LAST                  RdmaWrite         Last   [XrcEth];
    0xA9 XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE   RdmaWrite         Last   [XrcEth, ImmDt] imm;
    0xAA XRC_RDMA_WRITE_ONLY                  RdmaWrite         Only   [XrcEth, Reth];
    0xAB XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE   RdmaWrite         Only   [XrcEth, Reth, ImmDt] imm;
    0xAC XRC_RDMA_READ_REQUEST                ReadRequest       Only   [XrcEth, Reth];
    0xAD XRC_RDMA_READ_RESPONSE_FIRST         ReadResponse      First  [Aeth];
    0xAE XRC_RDMA_READ_RESPONSE_MIDDLE        ReadResponse      Middle [];
    0xAF XRC_RDMA_READ_RESPONSE_LAST          ReadResponse      Last   [Aeth];
    0xB0 XRC_RDMA_READ_RESPONSE_ONLY          ReadResponse      Only   [Aeth];
    0xB1 XRC_ACKNOWLEDGE                      Acknowledge       Only   [Aeth];
    0xB2 XRC_ATOMIC_ACKNOWLEDGE               AtomicAcknowledge Only   [Aeth, AtomicAckEth];
    0xB3 XRC_COMPARE_SWAP                     CompareSwap       Only   [XrcEth, AtomicEth];
    0xB4 XRC_FETCH_ADD                        FetchAdd          Only   [XrcEth, AtomicEth];
    0xB6 XRC_SEND_LAST_WITH_INVALIDATE        Send              Last   [XrcEth, Ieth] inval;
    0xB7 XRC_SEND_ONLY_WITH_INVALIDATE        Send              Only   [XrcEth, Ieth] inval;
}

/// A DC row: the RD layout of tshark 4.0 with the 8 DC bytes first (capture-formats.md §3.2).
const fn dc(
    code: u8,
    name: &'static str,
    operation: Operation,
    position: Position,
    headers: &'static [ExtHeader],
    immediate: bool,
) -> OpcodeInfo {
    let r = row(
        code,
        name,
        operation,
        position,
        Some(headers),
        immediate,
        false,
    );
    OpcodeInfo {
        transport: Transport::Dc,
        ..r
    }
}

use ExtHeader::{Dc, Dcceth};

/// The RD opcode range as NVIDIA DC carries it, laid out as tshark 4.0.17 decodes it.
static DC_ROWS: [OpcodeInfo; 22] = [
    dc(
        0x40,
        "DC_SEND_FIRST",
        Send,
        First,
        &[Dc, Rdeth, Deth],
        false,
    ),
    dc(
        0x41,
        "DC_SEND_MIDDLE",
        Send,
        Middle,
        &[Dc, Rdeth, Deth],
        false,
    ),
    dc(0x42, "DC_SEND_LAST", Send, Last, &[Dc, Rdeth, Deth], false),
    dc(
        0x43,
        "DC_SEND_LAST_WITH_IMMEDIATE",
        Send,
        Last,
        &[Dc, Rdeth, Deth, ImmDt],
        true,
    ),
    dc(0x44, "DC_SEND_ONLY", Send, Only, &[Dc, Rdeth, Deth], false),
    dc(
        0x45,
        "DC_SEND_ONLY_WITH_IMMEDIATE",
        Send,
        Only,
        &[Dc, Rdeth, Deth, ImmDt],
        true,
    ),
    dc(
        0x46,
        "DC_RDMA_WRITE_FIRST",
        RdmaWrite,
        First,
        &[Dc, Rdeth, Deth, Reth],
        false,
    ),
    dc(
        0x47,
        "DC_RDMA_WRITE_MIDDLE",
        RdmaWrite,
        Middle,
        &[Dc, Rdeth, Deth],
        false,
    ),
    dc(
        0x48,
        "DC_RDMA_WRITE_LAST",
        RdmaWrite,
        Last,
        &[Dc, Rdeth, Deth],
        false,
    ),
    dc(
        0x49,
        "DC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        RdmaWrite,
        Last,
        &[Dc, Rdeth, Deth, ImmDt],
        true,
    ),
    dc(
        0x4A,
        "DC_RDMA_WRITE_ONLY",
        RdmaWrite,
        Only,
        &[Dc, Rdeth, Deth, Reth],
        false,
    ),
    dc(
        0x4B,
        "DC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        RdmaWrite,
        Only,
        &[Dc, Rdeth, Deth, Reth, ImmDt],
        true,
    ),
    dc(
        0x4C,
        "DC_RDMA_READ_REQUEST",
        ReadRequest,
        Only,
        &[Dc, Rdeth, Deth, Reth],
        false,
    ),
    dc(
        0x4D,
        "DC_RDMA_READ_RESPONSE_FIRST",
        ReadResponse,
        First,
        &[Dc, Rdeth, Aeth],
        false,
    ),
    dc(
        0x4E,
        "DC_RDMA_READ_RESPONSE_MIDDLE",
        ReadResponse,
        Middle,
        &[Dc, Rdeth],
        false,
    ),
    dc(
        0x4F,
        "DC_RDMA_READ_RESPONSE_LAST",
        ReadResponse,
        Last,
        &[Dc, Rdeth, Aeth],
        false,
    ),
    dc(
        0x50,
        "DC_RDMA_READ_RESPONSE_ONLY",
        ReadResponse,
        Only,
        &[Dc, Rdeth, Aeth],
        false,
    ),
    // tshark's RDETH_AETH sequence parses only the AETH
    dc(
        0x51,
        "DC_ACKNOWLEDGE",
        Acknowledge,
        Only,
        &[Dc, Aeth],
        false,
    ),
    dc(
        0x52,
        "DC_ATOMIC_ACKNOWLEDGE",
        AtomicAcknowledge,
        Only,
        &[Dc, Rdeth, Aeth, AtomicAckEth],
        false,
    ),
    dc(
        0x53,
        "DC_COMPARE_SWAP",
        CompareSwap,
        Only,
        &[Dc, Rdeth, Deth, AtomicEth],
        false,
    ),
    dc(
        0x54,
        "DC_FETCH_ADD",
        FetchAdd,
        Only,
        &[Dc, Rdeth, Deth, AtomicEth],
        false,
    ),
    // SE 0: the connect header follows (SE 1: `DC_CONNECT_SE`)
    dc(0x55, "DC_CONNECT", DcConnect, Only, &[Dc, Dcceth], false),
];

/// 0x55 with SE 1: no connect header, payload right after the DC bytes.
static DC_CONNECT_SE: OpcodeInfo = dc(0x55, "DC_CONNECT", DcConnect, Only, &[Dc], false);

impl Opcode {
    /// The row of an RD-range opcode in the DC layout (`se`: the BTH's solicited-event bit,
    /// which chooses the connect header of 0x55); `None` outside 0x40–0x55 (0x56–0x5F are
    /// unknown in DC too).
    #[must_use]
    pub fn dc_info(self, se: bool) -> Option<&'static OpcodeInfo> {
        match self.0 {
            0x55 if se => Some(&DC_CONNECT_SE),
            c @ 0x40..=0x55 => DC_ROWS.get(usize::from(c - 0x40)),
            _ => None,
        }
    }

    /// Whether the opcode is in the RD range (0x40–0x5F), which NVIDIA DC reuses.
    #[must_use]
    pub const fn is_rd_range(self) -> bool {
        self.0 >> 5 == 2
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn dc_rows_follow_tsharks_layout() {
        for (i, r) in DC_ROWS.iter().enumerate() {
            assert_eq!(usize::from(r.opcode.0), 0x40 + i);
            assert_eq!(r.transport, Transport::Dc);
            assert!(r.name.starts_with("DC_"));
            // the name is the RD one with DC_ for RD_ (but 0x55, RD_RESYNC, is DC_CONNECT)
            let rd = r.opcode.info().unwrap();
            if r.opcode.0 != 0x55 {
                assert_eq!(&rd.name[3..], &r.name[3..]);
                assert_eq!((rd.operation, rd.position), (r.operation, r.position));
            }
            assert_eq!(r.headers.unwrap()[0], ExtHeader::Dc);
        }
        // tshark's offsets (capture-formats.md §3.2), from the BTH start: 12 + ext bytes
        let at = |c: u8, se: bool| 12 + usize::from(Opcode(c).dc_info(se).unwrap().ext_len);
        assert_eq!(at(0x40, false), 32); // payload@32
        assert_eq!(at(0x43, false), 36); // ImmDt@32, payload@36
        assert_eq!(at(0x46, false), 48); // RETH@32, payload@48
        assert_eq!(at(0x4B, false), 52);
        assert_eq!(at(0x4D, false), 28); // AETH@24, payload@28
        assert_eq!(at(0x4E, false), 24);
        assert_eq!(at(0x51, false), 24); // AETH@20 only
        assert_eq!(at(0x52, false), 36); // AtomicAckETH@28
        assert_eq!(at(0x53, false), 60); // AtomicETH@32
        assert_eq!(at(0x55, false), 36); // DCCETH@20, payload@36
        assert_eq!(at(0x55, true), 20);
        assert!(Opcode(0x56).dc_info(false).is_none());
        assert!(Opcode(0x3F).dc_info(false).is_none());
    }

    #[test]
    fn test_table_is_consistent() {
        for row in ROWS {
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
    fn test_lookup_reads_the_table_backwards() {
        for row in ROWS {
            let t = row.opcode.transport();
            let found = Opcode::lookup(
                t,
                row.operation,
                row.position,
                row.immediate,
                row.invalidate,
            );
            assert_eq!(found, Some(row.opcode), "{}", row.name);
        }
        let (rc, ud) = (Transport::Rc, Transport::Ud);
        let write_first = Opcode::lookup(rc, Operation::RdmaWrite, Position::First, false, false);
        assert_eq!(write_first, Some(Opcode::RC_RDMA_WRITE_FIRST));
        let send_last_imm =
            Opcode::lookup(Transport::Xrc, Operation::Send, Position::Last, true, false);
        assert_eq!(send_last_imm, Some(Opcode::XRC_SEND_LAST_WITH_IMMEDIATE));
        // no row: a UD WRITE, an RC READ request in the middle of a message, imm on a FIRST
        assert_eq!(
            Opcode::lookup(ud, Operation::RdmaWrite, Position::Only, false, false),
            None
        );
        assert_eq!(
            Opcode::lookup(rc, Operation::ReadRequest, Position::Middle, false, false),
            None
        );
        assert_eq!(
            Opcode::lookup(rc, Operation::Send, Position::First, true, false),
            None
        );
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
