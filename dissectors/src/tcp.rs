//! TCP (RFC 9293) with its options: EOL, NOP, MSS, window scale,
//! SACK-permitted, SACK (RFC 2018), timestamps (RFC 7323) and the RFC 6994
//! experimental kinds 253/254 with a 16-bit ExID, which carry `tcp_bth`
//! (tcp_bth.md §c).
//!
//! The view covers the segment (header and payload); TCP has no length field,
//! so the payload is whatever follows the header in the buffer the IP length
//! gave (`stack.rs` clips it).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); the option walker indexes only after checking the option's length against
// the area.
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::IpAddr;

use crate::checksum;
use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::ipv4::IpProtocol;
use crate::tcp_bth;
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    /// Data offset (7..4) | reserved (3..1) | AE (0)
    pub const DATA_OFF: usize = 12;
    /// CWR ECE URG ACK PSH RST SYN FIN
    pub const FLAGS: usize = 13;
    /// Data offset through flags, as displayed
    pub const FLAGS_WORD: Field = 12..14;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

pub const HEADER_LEN: usize = field::URGENT.end;
/// Largest header: data offset 15.
pub const MAX_HEADER_LEN: usize = 60;
/// Largest option area.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;
/// Most SACK blocks a [`Repr`] carries (four fit in 40 bytes without timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

/// Option kinds.
pub mod kind {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
    pub const EXP_253: u8 = 253;
    pub const EXP_254: u8 = 254;
}

/// The 12 flag bits of byte 12 (low nibble) and byte 13, as Wireshark's `tcp.flags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Flags(pub u16);

impl Flags {
    pub const FIN: Flags = Flags(0x001);
    pub const SYN: Flags = Flags(0x002);
    pub const RST: Flags = Flags(0x004);
    pub const PSH: Flags = Flags(0x008);
    pub const ACK: Flags = Flags(0x010);
    pub const URG: Flags = Flags(0x020);
    pub const ECE: Flags = Flags(0x040);
    pub const CWR: Flags = Flags(0x080);
    /// Accurate ECN (formerly NS).
    pub const AE: Flags = Flags(0x100);
    pub const MASK: u16 = 0x0FFF;

    #[must_use]
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    #[must_use]
    pub const fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
    #[must_use]
    pub const fn syn(self) -> bool {
        self.contains(Flags::SYN)
    }
    #[must_use]
    pub const fn ack(self) -> bool {
        self.contains(Flags::ACK)
    }
    #[must_use]
    pub const fn fin(self) -> bool {
        self.contains(Flags::FIN)
    }
    #[must_use]
    pub const fn rst(self) -> bool {
        self.contains(Flags::RST)
    }
    #[must_use]
    pub const fn psh(self) -> bool {
        self.contains(Flags::PSH)
    }
}

impl fmt::Display for Flags {
    /// Wireshark's summary: `[SYN, ACK]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(Flags, &str); 9] = [
            (Flags::FIN, "FIN"),
            (Flags::SYN, "SYN"),
            (Flags::RST, "RST"),
            (Flags::PSH, "PSH"),
            (Flags::ACK, "ACK"),
            (Flags::URG, "URG"),
            (Flags::ECE, "ECE"),
            (Flags::CWR, "CWR"),
            (Flags::AE, "AE"),
        ];
        f.write_str("[")?;
        let mut first = true;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(", ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        f.write_str("]")
    }
}

/// SACK blocks as they lie in an option, read on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SackBlocks<'a> {
    bytes: &'a [u8],
}

impl<'a> SackBlocks<'a> {
    /// `(left edge, right edge)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.bytes.chunks_exact(8).map(|c| {
            let (l, r) = c.split_at(4);
            (be32(l), be32(r))
        })
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn be32(b: &[u8]) -> u32 {
    match *b {
        [a, b, c, d, ..] => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// One TCP option, borrowed from the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    EndOfList,
    NoOperation,
    MaxSegmentSize(u16),
    WindowScale(u8),
    SackPermitted,
    Sack(SackBlocks<'a>),
    Timestamps {
        tsval: u32,
        tsecr: u32,
    },
    /// Kind 253/254 with a 16-bit ExID: `option` is the whole option (kind first).
    Experimental {
        kind: u8,
        exid: u16,
        option: &'a [u8],
    },
    /// Any other kind: `data` is the bytes after kind and length.
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// The option walker: yields each option, stops after EOL, and after an
/// option whose length byte is 0, 1 or points past the area (reported as
/// `Malformed { OptionLength }` at its offset in the TCP header). A known
/// kind with the wrong fixed length is reported the same way and skipped.
/// Never panics, never allocates.
#[derive(Debug, Clone)]
pub struct OptionIter<'a> {
    rest: &'a [u8],
    /// Offset of `rest` in the TCP header.
    at: usize,
}

impl<'a> OptionIter<'a> {
    /// Walk an option area (the bytes after the fixed 20-byte header).
    #[must_use]
    pub const fn new(options: &'a [u8]) -> Self {
        OptionIter {
            rest: options,
            at: HEADER_LEN,
        }
    }

    /// Bytes of the area not walked yet.
    #[must_use]
    pub const fn remaining(&self) -> usize {
        self.rest.len()
    }

    fn fail(&mut self, at: usize, kind: u8, len: u8) -> Option<Result<TcpOption<'a>>> {
        let room = self.rest.len();
        self.rest = &[];
        Some(Err(bad_length(at, kind, len, room)))
    }
}

/// An impossible option length: `room` bytes were left in the option area at `offset`.
const fn bad_length(offset: usize, kind: u8, value: u8, room: usize) -> WireError {
    WireError::Malformed {
        layer: Layer::Tcp,
        offset,
        reason: Malformed::OptionLength {
            kind,
            value,
            room: if room > 255 { 255 } else { room as u8 },
        },
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.at;
        let (&kind, after_kind) = self.rest.split_first()?;
        match kind {
            kind::EOL => {
                self.rest = &[];
                return Some(Ok(TcpOption::EndOfList));
            }
            kind::NOP => {
                self.rest = after_kind;
                self.at += 1;
                return Some(Ok(TcpOption::NoOperation));
            }
            _ => {}
        }
        let Some(&len_byte) = after_kind.first() else {
            return self.fail(at, kind, 0);
        };
        let len = usize::from(len_byte);
        if len < 2 {
            return self.fail(at, kind, len_byte);
        }
        let Some(option) = self.rest.get(..len) else {
            return self.fail(at, kind, len_byte);
        };
        let room = self.rest.len();
        self.rest = &self.rest[len..];
        self.at += len;
        let data = &option[2..];
        let fixed = |want: usize, opt: TcpOption<'a>| {
            if len == want {
                Ok(opt)
            } else {
                Err(bad_length(at, kind, len_byte, room))
            }
        };
        Some(match kind {
            kind::MSS => fixed(4, TcpOption::MaxSegmentSize(be16(data))),
            kind::WINDOW_SCALE => fixed(
                3,
                TcpOption::WindowScale(data.first().copied().unwrap_or(0)),
            ),
            kind::SACK_PERMITTED => fixed(2, TcpOption::SackPermitted),
            kind::TIMESTAMPS => fixed(
                10,
                TcpOption::Timestamps {
                    tsval: be32(data),
                    tsecr: be32(data.get(4..).unwrap_or_default()),
                },
            ),
            kind::SACK => {
                if len >= 10 && (len - 2) % 8 == 0 {
                    Ok(TcpOption::Sack(SackBlocks { bytes: data }))
                } else {
                    Err(bad_length(at, kind, len_byte, room))
                }
            }
            kind::EXP_253 | kind::EXP_254 => {
                if len >= 4 {
                    Ok(TcpOption::Experimental {
                        kind,
                        exid: be16(data),
                        option,
                    })
                } else {
                    Err(bad_length(at, kind, len_byte, room))
                }
            }
            _ => Ok(TcpOption::Unknown { kind, data }),
        })
    }
}

fn be16(b: &[u8]) -> u16 {
    match *b {
        [a, b, ..] => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

/// Where a `tcp_bth` option sits in an option area, if any: the first
/// kind-253/254 option with `exid` and a length of 4, 24 or 28. Returns its
/// offset within the TCP header and its bytes.
#[must_use]
pub fn find_tcp_bth(options: &[u8], exid: u16) -> Option<(usize, &[u8])> {
    let mut it = OptionIter::new(options);
    loop {
        let at = it.at;
        match it.next()? {
            Ok(TcpOption::Experimental {
                exid: e, option, ..
            }) if e == exid
                && option
                    .get(1)
                    .is_some_and(|&l| tcp_bth::Format::from_len(l).is_some()) =>
            {
                return Some((at, option));
            }
            _ => {}
        }
    }
}

/// A read/write view of a TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking the length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len); no accessor can panic afterwards.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Fixed header present; data offset ≥ 5 (else `Malformed { HeaderLength }`);
    /// the whole header with its options present (else `Truncated`).
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::Tcp, HEADER_LEN, have)?;
        let len = self.header_len();
        if len < HEADER_LEN {
            return Err(WireError::Malformed {
                layer: Layer::Tcp,
                offset: field::DATA_OFF,
                reason: Malformed::HeaderLength {
                    value: len as u16,
                    min: HEADER_LEN as u16,
                },
            });
        }
        error::need(Layer::Tcp, len, have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b()[at], self.b()[at + 1]])
    }

    fn u32_at(&self, at: usize) -> u32 {
        be32(&self.b()[at..at + 4])
    }

    #[must_use]
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT.start)
    }
    #[must_use]
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT.start)
    }
    #[must_use]
    pub fn seq_number(&self) -> u32 {
        self.u32_at(field::SEQ_NUM.start)
    }
    #[must_use]
    pub fn ack_number(&self) -> u32 {
        self.u32_at(field::ACK_NUM.start)
    }
    /// Data offset in 32-bit words.
    #[must_use]
    pub fn data_offset(&self) -> u8 {
        self.b()[field::DATA_OFF] >> 4
    }
    /// Header length in bytes (data offset × 4).
    #[must_use]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }
    /// The 12 flag bits (3 reserved, AE, CWR … FIN).
    #[must_use]
    pub fn flags(&self) -> Flags {
        Flags(u16::from_be_bytes([self.b()[field::DATA_OFF], self.b()[field::FLAGS]]) & Flags::MASK)
    }
    #[must_use]
    pub fn window_len(&self) -> u16 {
        self.u16_at(field::WINDOW.start)
    }
    #[must_use]
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM.start)
    }
    #[must_use]
    pub fn urgent_at(&self) -> u16 {
        self.u16_at(field::URGENT.start)
    }
    /// The option area, `20..header_len` (empty if it does not fit the buffer).
    #[must_use]
    pub fn options_bytes(&self) -> &[u8] {
        self.b()
            .get(HEADER_LEN..self.header_len())
            .unwrap_or_default()
    }
    /// Walk the options.
    pub fn options(&self) -> OptionIter<'_> {
        OptionIter::new(self.options_bytes())
    }
    /// `(TSval, TSecr)` of the first well-formed timestamps option.
    #[must_use]
    pub fn timestamps(&self) -> Option<(u32, u32)> {
        self.options().find_map(|o| match o {
            Ok(TcpOption::Timestamps { tsval, tsecr }) => Some((tsval, tsecr)),
            _ => None,
        })
    }
    /// The `tcp_bth` option with this ExID, if any.
    #[must_use]
    pub fn tcp_bth(&self, exid: u16) -> Option<tcp_bth::Header<&[u8]>> {
        find_tcp_bth(self.options_bytes(), exid).map(|(_, b)| tcp_bth::Header::new_unchecked(b))
    }
    /// Everything after the header (empty if the header does not fit).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        self.b().get(self.header_len()..).unwrap_or_default()
    }

    /// Whether the checksum over the pseudo-header and the whole buffer is
    /// right. Always true under `cfg(fuzzing)`.
    #[must_use]
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let Ok(len) = u32::try_from(self.b().len()) else {
            return false;
        };
        checksum::combine(&[
            checksum::pseudo_header(src, dst, IpProtocol::TCP.0, len),
            checksum::data(self.b()),
        ]) == 0xFFFF
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The header's fields for the field tree, with the Timestamps option's values when the
    /// segment carries one (the walk adds the `tcp_bth` option and the payload length).
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let src = Value::Uint(u64::from(self.src_port()));
        v.field("srcport", "Source Port", src, span(offset, field::SRC_PORT));
        let dst = Value::Uint(u64::from(self.dst_port()));
        v.field(
            "dstport",
            "Destination Port",
            dst,
            span(offset, field::DST_PORT),
        );
        let seq = Value::Uint(u64::from(self.seq_number()));
        v.field("seq", "Sequence Number", seq, span(offset, field::SEQ_NUM));
        let ack = Value::Uint(u64::from(self.ack_number()));
        v.field(
            "ack",
            "Acknowledgment Number",
            ack,
            span(offset, field::ACK_NUM),
        );
        let flags = Value::Hex(u64::from(self.flags().0), 3);
        v.field("flags", "Flags", flags, span(offset, field::FLAGS_WORD));
        let window = Value::Uint(u64::from(self.window_len()));
        v.field("window", "Window", window, span(offset, field::WINDOW));
        let mut opt_at = HEADER_LEN;
        let mut it = self.options();
        while let Some(opt) = it.next() {
            if let Ok(TcpOption::Timestamps { tsval, tsecr }) = opt {
                let o = offset + opt_at;
                let val = Value::Uint(u64::from(tsval));
                v.field("ts_val", "Timestamp Value", val, o + 2..o + 6);
                let ecr = Value::Uint(u64::from(tsecr));
                v.field("ts_ecr", "Timestamp Echo Reply", ecr, o + 6..o + 10);
                break;
            }
            opt_at = HEADER_LEN + self.options_bytes().len() - it.remaining();
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_u16_at(&mut self, at: usize, value: u16) {
        self.b_mut()[at..at + 2].copy_from_slice(&value.to_be_bytes());
    }
    fn set_u32_at(&mut self, at: usize, value: u32) {
        self.b_mut()[at..at + 4].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_src_port(&mut self, value: u16) {
        self.set_u16_at(field::SRC_PORT.start, value);
    }
    pub fn set_dst_port(&mut self, value: u16) {
        self.set_u16_at(field::DST_PORT.start, value);
    }
    pub fn set_seq_number(&mut self, value: u32) {
        self.set_u32_at(field::SEQ_NUM.start, value);
    }
    pub fn set_ack_number(&mut self, value: u32) {
        self.set_u32_at(field::ACK_NUM.start, value);
    }
    /// Data offset in words (masked to 4 bits), keeping the flag bits.
    pub fn set_data_offset(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::DATA_OFF];
        *b = (*b & 0x0F) | ((value & 0x0F) << 4);
    }
    /// The 12 flag bits, keeping the data offset.
    pub fn set_flags(&mut self, value: Flags) {
        let [hi, lo] = (value.0 & Flags::MASK).to_be_bytes();
        let b = &mut self.b_mut()[field::DATA_OFF];
        *b = (*b & 0xF0) | hi;
        self.b_mut()[field::FLAGS] = lo;
    }
    pub fn set_window_len(&mut self, value: u16) {
        self.set_u16_at(field::WINDOW.start, value);
    }
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM.start, value);
    }
    pub fn set_urgent_at(&mut self, value: u16) {
        self.set_u16_at(field::URGENT.start, value);
    }
    /// Mutable option area (set the data offset first).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        self.b_mut().get_mut(HEADER_LEN..end).unwrap_or_default()
    }
    /// Mutable payload (set the data offset first).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        self.b_mut().get_mut(start..).unwrap_or_default()
    }

    /// Compute the checksum over the pseudo-header and the whole buffer
    /// (header, options and payload already in place) and write it.
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        let len = u32::try_from(self.b().len()).unwrap_or(u32::MAX);
        let sum = checksum::combine(&[
            checksum::pseudo_header(src, dst, IpProtocol::TCP.0, len),
            checksum::data(self.b()),
        ]);
        self.set_checksum(!sum);
    }
}

/// The options a [`Repr`] carries. Unknown options are dropped on parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Options {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// `(TSval, TSecr)`.
    pub timestamps: Option<(u32, u32)>,
    pub sack: [Option<(u32, u32)>; MAX_SACK_BLOCKS],
    pub tcp_bth: Option<tcp_bth::Repr>,
}

impl Options {
    fn sack_count(&self) -> usize {
        self.sack.iter().flatten().count()
    }

    /// Bytes [`emit`](Self::emit) writes: always a multiple of 4.
    #[must_use]
    pub fn len(&self) -> usize {
        let mut n = 0;
        n += if self.mss.is_some() { 4 } else { 0 };
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (_, true) => 12,
            (true, false) => 4,
            (false, false) => 0,
        };
        n += if self.window_scale.is_some() { 4 } else { 0 };
        n += match self.sack_count() {
            0 => 0,
            k => 4 + 8 * k,
        };
        n + self.tcp_bth.map_or(0, |b| b.buffer_len())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Write the options in Linux's order: MSS; SACK-permitted + TS
    /// (`04 02 08 0a …`) or NOP NOP TS or NOP NOP SACK-permitted; NOP WS;
    /// NOP NOP SACK; then `tcp_bth` (§c.2). `buf` must hold [`len`](Self::len) bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            at += bytes.len();
        };
        if let Some(mss) = self.mss {
            let [a, b] = mss.to_be_bytes();
            put(&[kind::MSS, 4, a, b]);
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                put(&if sp {
                    [kind::SACK_PERMITTED, 2]
                } else {
                    [kind::NOP, kind::NOP]
                });
                put(&[kind::TIMESTAMPS, 10]);
                put(&val.to_be_bytes());
                put(&ecr.to_be_bytes());
            }
            (true, None) => put(&[kind::NOP, kind::NOP, kind::SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            put(&[kind::NOP, kind::WINDOW_SCALE, 3, ws]);
        }
        let blocks = self.sack_count();
        if blocks > 0 {
            #[allow(clippy::cast_possible_truncation)] // at most 34
            put(&[kind::NOP, kind::NOP, kind::SACK, (2 + 8 * blocks) as u8]);
            for (l, r) in self.sack.iter().flatten() {
                put(&l.to_be_bytes());
                put(&r.to_be_bytes());
            }
        }
        if let Some(bth) = self.tcp_bth {
            let len = bth.buffer_len();
            if let Some(dst) = buf.get_mut(at..at + len) {
                bth.emit(&mut tcp_bth::Header::new_unchecked(dst));
            }
        }
    }

    /// Collect the options of an option area: the first of each kind, SACK
    /// blocks up to [`MAX_SACK_BLOCKS`], `tcp_bth` with `exid`. Errors of the
    /// walk are reported as the first error.
    pub fn parse(options: &[u8], exid: u16) -> Result<Options> {
        let mut out = Options::default();
        for opt in OptionIter::new(options) {
            match opt? {
                TcpOption::MaxSegmentSize(v) => {
                    out.mss.get_or_insert(v);
                }
                TcpOption::WindowScale(v) => {
                    out.window_scale.get_or_insert(v);
                }
                TcpOption::SackPermitted => out.sack_permitted = true,
                TcpOption::Timestamps { tsval, tsecr } => {
                    out.timestamps.get_or_insert((tsval, tsecr));
                }
                TcpOption::Sack(blocks) if out.sack_count() == 0 => {
                    for (slot, b) in out.sack.iter_mut().zip(blocks.iter()) {
                        *slot = Some(b);
                    }
                }
                TcpOption::Experimental {
                    exid: e, option, ..
                } if e == exid => {
                    let h = tcp_bth::Header::new_unchecked(option);
                    if out.tcp_bth.is_none() && h.format().is_some() {
                        out.tcp_bth = Some(tcp_bth::Repr::parse(&h)?);
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// The TCP header's meaning: no checksum, no reserved bits, no unknown options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq_number: u32,
    pub ack_number: u32,
    /// CWR … FIN and AE; the three reserved bits are dropped.
    pub flags: Flags,
    pub window_len: u16,
    pub urgent_at: u16,
    pub options: Options,
    pub payload_len: usize,
}

impl Repr {
    /// Read the header with the default `tcp_bth` ExID.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        Self::parse_with(packet, tcp_bth::TCP_BTH_EXID_DEFAULT)
    }

    /// Read the header; `tcp_bth` options are those with `exid`. A bad
    /// option length is `Malformed { OptionLength }`. The checksum is not
    /// checked: call [`Packet::verify_checksum`].
    pub fn parse_with<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>, exid: u16) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: Flags(packet.flags().0 & 0x01FF),
            window_len: packet.window_len(),
            urgent_at: packet.urgent_at(),
            options: Options::parse(packet.options_bytes(), exid)?,
            payload_len: packet.payload().len(),
        })
    }

    /// Header with options; [`MAX_HEADER_LEN`] at most when valid.
    #[must_use]
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Header, options and payload.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        self.header_len().saturating_add(self.payload_len)
    }

    /// Whether the options fit the 40-byte area.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.options.len() <= MAX_OPTIONS_LEN
    }

    /// Write the header and options (not the payload) and, if `fill`, the
    /// checksum, which needs the payload in place. `packet` must hold
    /// [`buffer_len`](Self::buffer_len) bytes and the options must fit
    /// ([`is_valid`](Self::is_valid)); otherwise the data offset is capped at 15.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        src: &IpAddr,
        dst: &IpAddr,
        fill: bool,
    ) {
        let header_len = self.header_len().min(MAX_HEADER_LEN);
        if let Some(h) = packet.b_mut().get_mut(..header_len) {
            h.fill(0);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        #[allow(clippy::cast_possible_truncation)] // at most 15
        packet.set_data_offset((header_len / 4) as u8);
        packet.set_flags(Flags(self.flags.0 & 0x01FF));
        packet.set_window_len(self.window_len);
        packet.set_urgent_at(self.urgent_at);
        self.options.emit(packet.options_mut());
        if fill {
            packet.fill_checksum(src, dst);
        }
    }
}

/// nom adapter: the fixed header and options; the rest is payload.
#[allow(dead_code, reason = "nom seam; stack.rs checks lengths itself")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, fixed) = error::take_complete(i, HEADER_LEN)?;
    let len = HEADER_LEN.max(Packet::new_unchecked(fixed).header_len());
    error::take_complete(i, len)?;
    Ok((&i[i.len()..], Packet::new_unchecked(i)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TCP srcport={} dstport={} seq={} ack={} flags={} win={} len={}",
            self.src_port,
            self.dst_port,
            self.seq_number,
            self.ack_number,
            self.flags,
            self.window_len,
            self.payload_len
        )?;
        if let Some((val, ecr)) = self.options.timestamps {
            write!(f, " tsval={val} tsecr={ecr}")?;
        }
        Ok(())
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Err(err) = self.check_len() {
            return write!(f, "TCP ({err})");
        }
        write!(
            f,
            "TCP srcport={} dstport={} seq={} ack={} flags={} win={} checksum={:#06x} len={}",
            self.src_port(),
            self.dst_port(),
            self.seq_number(),
            self.ack_number(),
            self.flags(),
            self.window_len(),
            self.checksum(),
            self.payload().len()
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ib::opcode::Opcode;
    use core::net::{Ipv4Addr, Ipv6Addr};
    use proptest::prelude::*;

    /// A data segment carrying §c.10 vector 1: 20-byte header, the 40-byte
    /// option block of the vector, payload "hello world".
    /// 10.0.0.1:40000 -> 10.0.0.2:7471.
    static BYTES: [u8; 71] = [
        0x9c, 0x40, // source port 40000
        0x1d, 0x2f, // destination port 7471
        0x00, 0x00, 0x03, 0xe8, // sequence number 1000
        0x00, 0x00, 0x07, 0xd0, // acknowledgment number 2000
        0xf0, // data offset 15, reserved 0, AE 0
        0x18, // PSH, ACK
        0x01, 0xf5, // window 501
        0x40, 0x58, // checksum 0x4058 (recomputed by hand in test_checksum_by_hand)
        0x00, 0x00, // urgent pointer
        // §c.10 vector 1 option block
        0x01, 0x01, 0x08, 0x0a, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x0d, // NOP NOP TS
        0xfe, 0x1c, 0xef, 0xab, 0x01, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // tcp_bth
        0x51, 0x59, 0x61, 0x59, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x0b, //
        0x00, 0x00, 0x00, 0x00, //
        b'h', b'e', b'l', b'l', b'o', b' ', b'w', b'o', b'r', b'l', b'd',
    ];

    fn addrs() -> (IpAddr, IpAddr) {
        (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        )
    }

    fn repr() -> Repr {
        Repr {
            src_port: 40000,
            dst_port: 7471,
            seq_number: 1000,
            ack_number: 2000,
            flags: Flags::PSH.union(Flags::ACK),
            window_len: 501,
            urgent_at: 0,
            options: Options {
                timestamps: Some((0x0102_0304, 0x0a0b_0c0d)),
                tcp_bth: Some(tcp_bth::Repr::V1(tcp_bth::V1 {
                    kind: 254,
                    exid: 0xEFAB,
                    core: tcp_bth::Core {
                        flags: 1,
                        opcode: Opcode(5),
                        msn: 1,
                        mbo_lo: 0,
                        seg: 0,
                        icrc: 0x5159_6159,
                    },
                    imm: 0xDEAD_BEEF,
                    mlen: 11,
                    mbo_hi: 0,
                    rsvd8: 0,
                    rsvd16: 0,
                })),
                ..Options::default()
            },
            payload_len: 11,
        }
    }

    #[test]
    fn test_checksum_by_hand() {
        // RFC 1071 by a plain 16-bit loop: pseudo-header (0a00 0001 0a00 0002 0006 0047)
        // plus the segment with the checksum zeroed; the complement is 0x4058.
        let mut seg = BYTES;
        seg[16] = 0;
        seg[17] = 0;
        let mut words: Vec<u8> = vec![10, 0, 0, 1, 10, 0, 0, 2, 0, 6, 0, 71];
        words.extend_from_slice(&seg);
        words.push(0);
        let mut acc: u32 = 0;
        for w in words.chunks(2) {
            acc += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        assert_eq!(!(acc as u16), 0x4058);
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (40000, 7471));
        assert_eq!((p.seq_number(), p.ack_number()), (1000, 2000));
        assert_eq!((p.data_offset(), p.header_len()), (15, 60));
        assert_eq!(p.flags(), Flags(0x18));
        assert!(p.flags().ack() && p.flags().psh() && !p.flags().syn());
        assert_eq!(
            (p.window_len(), p.checksum(), p.urgent_at()),
            (501, 0x4058, 0)
        );
        assert_eq!(p.options_bytes(), &BYTES[20..60]);
        assert_eq!(p.payload(), b"hello world");
        assert_eq!(p.timestamps(), Some((0x0102_0304, 0x0a0b_0c0d)));
        let (src, dst) = addrs();
        assert!(p.verify_checksum(&src, &dst));
        let opts: Vec<_> = p.options().collect();
        assert_eq!(opts.len(), 4);
        assert_eq!(opts[0], Ok(TcpOption::NoOperation));
        assert_eq!(
            opts[2],
            Ok(TcpOption::Timestamps {
                tsval: 0x0102_0304,
                tsecr: 0x0a0b_0c0d
            })
        );
        assert_eq!(
            opts[3],
            Ok(TcpOption::Experimental {
                kind: 254,
                exid: 0xEFAB,
                option: &BYTES[32..60]
            })
        );
        let bth = p.tcp_bth(0xEFAB).unwrap();
        assert_eq!(
            bth.verify_icrc(p.payload(), tcp_bth::IcrcAlgorithm::Crc32Ieee),
            crate::icrc::IcrcStatus::Valid
        );
        assert!(p.tcp_bth(0xEB9F).is_none());
        assert_eq!(
            find_tcp_bth(p.options_bytes(), 0xEFAB).map(|(at, _)| at),
            Some(32)
        );
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 71];
        buf[60..].copy_from_slice(b"hello world");
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(40000);
        p.set_dst_port(7471);
        p.set_seq_number(1000);
        p.set_ack_number(2000);
        p.set_data_offset(15);
        p.set_flags(Flags(0x18));
        p.set_window_len(501);
        p.set_urgent_at(0);
        p.options_mut().copy_from_slice(&BYTES[20..60]);
        let (src, dst) = addrs();
        p.fill_checksum(&src, &dst);
        assert_eq!(p.payload_mut().len(), 11);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Packet::new_unchecked(&BYTES[..])), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 71];
        buf[60..].copy_from_slice(b"hello world");
        let (src, dst) = addrs();
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]), &src, &dst, true);
        assert_eq!(buf, BYTES);
        assert_eq!(repr().header_len(), 60);
        assert!(repr().is_valid());
    }

    #[test]
    fn test_syn_options() {
        // Linux SYN: MSS 1460, SACK-permitted + TS, NOP WS 7, then the tcp_bth SYN form
        let opts = Options {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamps: Some((1, 0)),
            tcp_bth: Some(tcp_bth::Repr::Syn {
                kind: 254,
                exid: 0xEFAB,
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 24];
        assert_eq!(opts.len(), 24);
        opts.emit(&mut buf);
        assert_eq!(
            buf,
            [
                2, 4, 0x05, 0xb4, // MSS 1460
                4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, // SACK-permitted, TS 1/0
                1, 3, 3, 7, // NOP, WS 7
                0xfe, 4, 0xef, 0xab, // tcp_bth SYN form
            ]
        );
        assert_eq!(Options::parse(&buf, 0xEFAB), Ok(opts));
    }

    #[test]
    fn test_sack_options() {
        let opts = Options {
            timestamps: Some((5, 6)),
            sack: [Some((100, 200)), Some((300, 400)), None, None],
            ..Options::default()
        };
        let mut buf = [0u8; 32];
        assert_eq!(opts.len(), 32);
        opts.emit(&mut buf);
        assert_eq!(&buf[12..16], &[1, 1, 5, 18]);
        assert_eq!(Options::parse(&buf, 0xEFAB), Ok(opts));
        let blocks: Vec<_> = OptionIter::new(&buf)
            .filter_map(|o| match o {
                Ok(TcpOption::Sack(b)) => Some(b.iter().collect::<Vec<_>>()),
                _ => None,
            })
            .collect();
        assert_eq!(blocks, vec![vec![(100, 200), (300, 400)]]);
    }

    #[test]
    fn test_option_walker_errors() {
        // length 0 stops the walk with an error at its offset in the header
        let bad = [1, 2, 0, 0];
        let got: Vec<_> = OptionIter::new(&bad).collect();
        assert_eq!(
            got,
            vec![Ok(TcpOption::NoOperation), Err(bad_length(21, 2, 0, 3))]
        );
        // length past the area
        let bad = [8, 10, 0, 0];
        assert_eq!(
            OptionIter::new(&bad).collect::<Vec<_>>(),
            vec![Err(bad_length(20, 8, 10, 4))]
        );
        // kind with no length byte
        assert_eq!(
            OptionIter::new(&[1, 1, 1, 2]).last(),
            Some(Err(bad_length(23, 2, 0, 1)))
        );
        // wrong fixed length: reported, then the walk continues
        let odd = [2, 3, 0, 1, 4, 2, 0, 0];
        assert_eq!(
            OptionIter::new(&odd).collect::<Vec<_>>(),
            vec![
                Err(bad_length(20, 2, 3, 8)),
                Ok(TcpOption::NoOperation),
                Ok(TcpOption::SackPermitted),
                Ok(TcpOption::EndOfList)
            ]
        );
        // EOL ends the walk; what follows is padding
        assert_eq!(
            OptionIter::new(&[0, 2, 0, 0]).collect::<Vec<_>>(),
            vec![Ok(TcpOption::EndOfList)]
        );
        // unknown kinds are kept
        assert_eq!(
            OptionIter::new(&[30, 4, 9, 9]).collect::<Vec<_>>(),
            vec![Ok(TcpOption::Unknown {
                kind: 30,
                data: &[9, 9]
            })]
        );
        assert_eq!(
            Options::parse(&[2, 0, 0, 0], 0xEFAB),
            Err(WireError::Malformed {
                layer: Layer::Tcp,
                offset: 20,
                reason: Malformed::OptionLength {
                    kind: 2,
                    value: 0,
                    room: 4
                }
            })
        );
    }

    #[test]
    fn test_truncated() {
        let err = Packet::new_checked(&BYTES[..19]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated TCP at offset 0: need 20 bytes, have 19"
        );
        let err = Packet::new_checked(&BYTES[..40]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated TCP at offset 0: need 60 bytes, have 40"
        );
        let mut short = BYTES;
        short[12] = 0x40;
        assert_eq!(
            Packet::new_checked(&short[..]).unwrap_err(),
            WireError::Malformed {
                layer: Layer::Tcp,
                offset: 12,
                reason: Malformed::HeaderLength { value: 16, min: 20 }
            }
        );
    }

    #[test]
    fn test_ipv6_checksum() {
        let src = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
        let dst = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2));
        let mut buf = BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.fill_checksum(&src, &dst);
        let p = Packet::new_unchecked(&buf[..]);
        assert!(p.verify_checksum(&src, &dst));
        assert!(!p.verify_checksum(&addrs().0, &addrs().1));
    }

    #[test]
    fn test_nom_parse() {
        let (rest, p) = parse(&BYTES).unwrap();
        assert_eq!((rest.len(), p.payload().len()), (0, 11));
        assert!(parse(&BYTES[..59]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "TCP srcport=40000 dstport=7471 seq=1000 ack=2000 flags=[PSH, ACK] win=501 len=11 tsval=16909060 tsecr=168496141"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_tcp(repr in crate::strategy::tcp(), fill in any::<u8>()) {
            let (src, dst) = addrs();
            let mut buf = vec![fill; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]), &src, &dst, true);
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(p.verify_checksum(&src, &dst));
            prop_assert_eq!(Repr::parse(&p), Ok(repr));
        }

        #[test]
        fn roundtrip_tcp_options_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
            let mut n = 0;
            for opt in OptionIter::new(&bytes) {
                n += 1;
                if let Err(e) = opt {
                    let is_length = matches!(e, WireError::Malformed { reason: Malformed::OptionLength { .. }, .. });
                    prop_assert!(is_length);
                    prop_assert!(e.offset() >= HEADER_LEN && e.offset() < HEADER_LEN + bytes.len());
                }
            }
            // every step consumes at least one byte
            prop_assert!(n <= bytes.len());
            let _ = Options::parse(&bytes, 0xEFAB);
            let _ = find_tcp_bth(&bytes, 0xEFAB);
        }

        #[test]
        fn roundtrip_tcp_any_bytes_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
            let p = Packet::new_unchecked(&bytes[..]);
            if p.check_len().is_ok() {
                let _ = (p.payload(), p.to_string(), p.verify_checksum(&any, &any), p.timestamps(), p.tcp_bth(0xEFAB));
                let _ = Repr::parse(&p);
            }
            let _ = parse(&bytes);
        }
    }
}
