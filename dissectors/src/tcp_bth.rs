//! `tcp_bth`: RDMA message framing in an RFC 6994 experimental TCP option
//! (tcp_bth.md §c). Three layouts share the first four bytes (kind, length,
//! 16-bit ExID): the SYN capability form (length 4, §c.5), the legacy
//! `enf_bth` (length 24, §c.8) and v1 (length 28, §c.3). Every other length
//! is unknown and left to the TCP option walker.
//!
//! The ICRC of v1 (§c.6) is CRC-32/ISO-HDLC over the 28 option bytes with the
//! ICRC field replaced by ones, then the TCP payload, written big-endian.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); the CRC32C table is indexed by a byte.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, Malformed, PResult, Result, WireError};
use crate::ib::opcode::Opcode;
use crate::ib::opcode::OpcodeName;
use crate::icrc::IcrcStatus;
use crate::visit::{Value, Visitor, byte, span};

pub const KIND_EXP_253: u8 = 253;
pub const KIND_EXP_254: u8 = 254;
pub const TCP_BTH_EXID_DEFAULT: u16 = 0xEFAB;
pub const LEN_SYN: u8 = 4;
pub const LEN_ENF: u8 = 24;
pub const LEN_V1: u8 = 28;

/// Masks of the flags byte (option offset 4); explicit masks, not a C bitfield.
pub mod flags {
    pub const VER: u8 = 0x03;
    pub const TSP: u8 = 0x04;
    pub const MS: u8 = 0x08;
    pub const RTR: u8 = 0x10;
    pub const RTA: u8 = 0x20;
    pub const RSV: u8 = 0xC0;
}

mod field {
    use crate::field::Field;
    pub const KIND: usize = 0;
    pub const LENGTH: usize = 1;
    pub const EXID: Field = 2..4;
    pub const FLAGS: usize = 4;
    pub const OPCODE: usize = 5;
    pub const MSN: Field = 6..8;
    /// MBO[23:0]
    pub const MBO_LO: Field = 8..11;
    pub const SEG: usize = 11;
    pub const ICRC: Field = 12..16;
    /// v1: IMM; enf_bth: timestamp
    pub const IMM: Field = 16..20;
    /// v1: MLEN; enf_bth: timestamp echo
    pub const MLEN: Field = 20..24;
    /// v1 only: MBO[31:24]
    pub const MBO_HI: usize = 24;
    pub const RSVD8: usize = 25;
    pub const RSVD16: Field = 26..28;
}

/// Bytes of the shared prefix (kind, length, ExID): the SYN form.
pub const HEADER_LEN: usize = field::EXID.end;
/// Length of the v1 data-segment option.
pub const V1_LEN: usize = field::RSVD16.end;
/// Length of the `enf_bth` option.
pub const ENF_LEN: usize = field::MLEN.end;

/// Which layout an option has, from its length byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Length 4: SYN/SYN-ACK capability form.
    Syn,
    /// Length 24: the legacy `enf_bth` layout.
    Enf,
    /// Length 28: v1.
    V1,
}

impl Format {
    /// The layout of an option with this length byte, if it is one of the three.
    #[must_use]
    pub const fn from_len(len: u8) -> Option<Format> {
        match len {
            LEN_SYN => Some(Format::Syn),
            LEN_ENF => Some(Format::Enf),
            LEN_V1 => Some(Format::V1),
            _ => None,
        }
    }

    /// The JSON name (interfaces.md §4).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Format::Syn => "syn",
            Format::Enf => "enf",
            Format::V1 => "v1",
        }
    }

    /// Bytes of an option of this layout.
    #[must_use]
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(self) -> usize {
        match self {
            Format::Syn => HEADER_LEN,
            Format::Enf => ENF_LEN,
            Format::V1 => V1_LEN,
        }
    }
}

/// The CRC used for the v1 ICRC (§c.6 toolkit options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IcrcAlgorithm {
    /// CRC-32/ISO-HDLC (the IB ICRC polynomial): the default.
    #[default]
    Crc32Ieee,
    /// CRC-32C (Castagnoli), as MPA/iSCSI.
    Crc32c,
    /// Do not verify.
    None,
}

/// A read/write view of one `tcp_bth` option (kind through its last byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wrap without checking; accessors read missing bytes as zero.
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wrap after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// The prefix is present, the length byte is 4, 24 or 28 (else
    /// `Malformed { OptionLength }`), and that many bytes are present.
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::TcpBth, HEADER_LEN, have)?;
        let Some(format) = Format::from_len(self.length()) else {
            return Err(WireError::Malformed {
                layer: Layer::TcpBth,
                offset: field::LENGTH,
                reason: Malformed::OptionLength {
                    kind: self.kind(),
                    value: self.length(),
                    room: u8::try_from(have).unwrap_or(u8::MAX),
                },
            });
        };
        error::need(Layer::TcpBth, format.len(), have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Byte `at`, zero when absent: no accessor panics, whatever the buffer.
    fn byte(&self, at: usize) -> u8 {
        self.b().get(at).copied().unwrap_or(0)
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.byte(at), self.byte(at + 1)])
    }

    fn u24_at(&self, at: usize) -> u32 {
        u32::from_be_bytes([0, self.byte(at), self.byte(at + 1), self.byte(at + 2)])
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes([
            self.byte(at),
            self.byte(at + 1),
            self.byte(at + 2),
            self.byte(at + 3),
        ])
    }

    #[must_use]
    pub fn kind(&self) -> u8 {
        self.byte(field::KIND)
    }
    /// The option's length byte.
    #[must_use]
    pub fn length(&self) -> u8 {
        self.byte(field::LENGTH)
    }
    /// The layout given by the length byte.
    #[must_use]
    pub fn format(&self) -> Option<Format> {
        Format::from_len(self.length())
    }
    #[must_use]
    pub fn exid(&self) -> u16 {
        self.u16_at(field::EXID.start)
    }
    /// The whole flags byte (reserved bits included).
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.byte(field::FLAGS)
    }
    #[must_use]
    pub fn ver(&self) -> u8 {
        self.flags() & flags::VER
    }
    /// Timestamp present (enf_bth); must be 0 in v1.
    #[must_use]
    pub fn tsp(&self) -> bool {
        self.flags() & flags::TSP != 0
    }
    /// More segments follow in this message.
    #[must_use]
    pub fn more(&self) -> bool {
        self.flags() & flags::MS != 0
    }
    #[must_use]
    pub fn rtr(&self) -> bool {
        self.flags() & flags::RTR != 0
    }
    #[must_use]
    pub fn rta(&self) -> bool {
        self.flags() & flags::RTA != 0
    }
    #[must_use]
    pub fn opcode(&self) -> Opcode {
        Opcode(self.byte(field::OPCODE))
    }
    #[must_use]
    pub fn msn(&self) -> u16 {
        self.u16_at(field::MSN.start)
    }
    /// MBO[23:0].
    #[must_use]
    pub fn mbo_lo(&self) -> u32 {
        self.u24_at(field::MBO_LO.start)
    }
    #[must_use]
    pub fn seg(&self) -> u8 {
        self.byte(field::SEG)
    }
    /// The ICRC field, read big-endian (§c.6).
    #[must_use]
    pub fn icrc(&self) -> u32 {
        self.u32_at(field::ICRC.start)
    }
    /// v1: immediate data or R_Key to invalidate.
    #[must_use]
    pub fn imm(&self) -> u32 {
        self.u32_at(field::IMM.start)
    }
    /// v1: total message data length.
    #[must_use]
    pub fn mlen(&self) -> u32 {
        self.u32_at(field::MLEN.start)
    }
    /// v1: MBO[31:24].
    #[must_use]
    pub fn mbo_hi(&self) -> u8 {
        self.byte(field::MBO_HI)
    }
    #[must_use]
    pub fn rsvd8(&self) -> u8 {
        self.byte(field::RSVD8)
    }
    #[must_use]
    pub fn rsvd16(&self) -> u16 {
        self.u16_at(field::RSVD16.start)
    }
    /// enf_bth: the embedded timestamp (same bytes as v1's IMM).
    #[must_use]
    pub fn timestamp(&self) -> u32 {
        self.imm()
    }
    /// enf_bth: the embedded timestamp echo (same bytes as v1's MLEN).
    #[must_use]
    pub fn timestamp_echo(&self) -> u32 {
        self.mlen()
    }
    /// The full message byte offset: `MBO_HI << 24 | MBO_LO` for v1, MBO_LO otherwise.
    #[must_use]
    pub fn mbo(&self) -> u32 {
        match self.format() {
            Some(Format::V1) => (u32::from(self.mbo_hi()) << 24) | self.mbo_lo(),
            _ => self.mbo_lo(),
        }
    }

    /// Check a v1 option's ICRC against `payload` (the whole TCP payload).
    /// `NotVerifiable` for the other layouts, for a short buffer and for
    /// [`IcrcAlgorithm::None`]; always `Valid` under `cfg(fuzzing)`.
    #[must_use]
    pub fn verify_icrc(&self, payload: &[u8], algorithm: IcrcAlgorithm) -> IcrcStatus {
        let Some(option) = self.b().first_chunk::<V1_LEN>() else {
            return IcrcStatus::NotVerifiable;
        };
        if self.format() != Some(Format::V1) {
            return IcrcStatus::NotVerifiable;
        }
        let Some(expected) = compute_icrc(option, payload, algorithm) else {
            return IcrcStatus::NotVerifiable;
        };
        if cfg!(fuzzing) {
            return IcrcStatus::Valid;
        }
        let found = self.icrc();
        if found == expected {
            IcrcStatus::Valid
        } else {
            IcrcStatus::Invalid { expected, found }
        }
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The option as its own layer of the field tree (the fields depend on its format);
    /// `icrc` is the verdict on the segment it came with.
    pub fn visit(&self, offset: usize, icrc: IcrcStatus, v: &mut impl Visitor) {
        let Some(format) = self.format() else {
            return;
        };
        v.begin(
            "tcp_bth",
            "tcp_bth RDMA Framing Option",
            offset..offset + format.len(),
        );
        let len = byte(offset, field::LENGTH);
        v.field("format", "Format", Value::Str(format.name()), len);
        let exid = Value::Hex(u64::from(self.exid()), 4);
        v.field("exid", "Experiment ID", exid, span(offset, field::EXID));
        if format != Format::Syn {
            let op = byte(offset, field::OPCODE);
            let code = Value::Uint(u64::from(self.opcode().0));
            v.field("opcode", "Opcode", code, op.clone());
            let mut name = OpcodeName::default();
            v.field(
                "opcode_name",
                "Opcode Name",
                Value::Str(name.of(self.opcode())),
                op,
            );
            let msn = Value::Uint(u64::from(self.msn()));
            v.field(
                "msn",
                "Message Sequence Number",
                msn,
                span(offset, field::MSN),
            );
            let mbo = Value::Uint(u64::from(self.mbo()));
            v.field(
                "mbo",
                "Message Byte Offset",
                mbo,
                span(offset, field::MBO_LO),
            );
            let seg = Value::Uint(u64::from(self.seg()));
            v.field("seg", "Segment", seg, byte(offset, field::SEG));
            let more = Value::Bool(self.more());
            v.field("more", "More Segments", more, byte(offset, field::FLAGS));
            if format == Format::V1 {
                let imm = Value::Hex(u64::from(self.imm()), 8);
                v.field("imm", "Immediate Data", imm, span(offset, field::IMM));
                let mlen = Value::Uint(u64::from(self.mlen()));
                v.field("mlen", "Message Length", mlen, span(offset, field::MLEN));
            }
            let at = span(offset, field::ICRC);
            let value = Value::Hex(u64::from(self.icrc()), 8);
            v.field("icrc", "ICRC", value, at.clone());
            let valid = match icrc {
                IcrcStatus::Valid => Value::Bool(true),
                IcrcStatus::Invalid { .. } => Value::Bool(false),
                IcrcStatus::NotVerifiable => Value::Null,
            };
            v.field("icrc_valid", "ICRC Valid", valid, at);
        }
        v.end();
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Write `bytes` at `at` as far as the buffer reaches (never panics).
    fn put(&mut self, at: usize, bytes: &[u8]) {
        let b = self.b_mut();
        let end = (at + bytes.len()).min(b.len());
        if let Some(dst) = b.get_mut(at..end) {
            dst.copy_from_slice(&bytes[..end - at]);
        }
    }

    pub fn set_kind(&mut self, value: u8) {
        self.put(field::KIND, &[value]);
    }
    pub fn set_length(&mut self, value: u8) {
        self.put(field::LENGTH, &[value]);
    }
    pub fn set_exid(&mut self, value: u16) {
        self.put(field::EXID.start, &value.to_be_bytes());
    }
    pub fn set_flags(&mut self, value: u8) {
        self.put(field::FLAGS, &[value]);
    }
    /// Set MS, keeping the other flag bits.
    pub fn set_more(&mut self, value: bool) {
        let f = self.flags();
        self.set_flags(if value { f | flags::MS } else { f & !flags::MS });
    }
    pub fn set_opcode(&mut self, value: Opcode) {
        self.put(field::OPCODE, &[value.0]);
    }
    pub fn set_msn(&mut self, value: u16) {
        self.put(field::MSN.start, &value.to_be_bytes());
    }
    /// MBO[23:0]; higher bits are dropped.
    pub fn set_mbo_lo(&mut self, value: u32) {
        let [_, a, b, c] = value.to_be_bytes();
        self.put(field::MBO_LO.start, &[a, b, c]);
    }
    pub fn set_seg(&mut self, value: u8) {
        self.put(field::SEG, &[value]);
    }
    pub fn set_icrc(&mut self, value: u32) {
        self.put(field::ICRC.start, &value.to_be_bytes());
    }
    pub fn set_imm(&mut self, value: u32) {
        self.put(field::IMM.start, &value.to_be_bytes());
    }
    pub fn set_mlen(&mut self, value: u32) {
        self.put(field::MLEN.start, &value.to_be_bytes());
    }
    pub fn set_mbo_hi(&mut self, value: u8) {
        self.put(field::MBO_HI, &[value]);
    }
    pub fn set_rsvd8(&mut self, value: u8) {
        self.put(field::RSVD8, &[value]);
    }
    pub fn set_rsvd16(&mut self, value: u16) {
        self.put(field::RSVD16.start, &value.to_be_bytes());
    }

    /// Compute the v1 ICRC over this option and `payload` and write it.
    /// Does nothing for the other layouts, for a short buffer and for
    /// [`IcrcAlgorithm::None`].
    pub fn fill_icrc(&mut self, payload: &[u8], algorithm: IcrcAlgorithm) {
        if self.format() != Some(Format::V1) {
            return;
        }
        let crc = self
            .b()
            .first_chunk::<V1_LEN>()
            .and_then(|o| compute_icrc(o, payload, algorithm));
        if let Some(crc) = crc {
            self.set_icrc(crc);
        }
    }
}

/// CRC-32C (Castagnoli, reflected 0x82F63B78) lookup table.
const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

fn crc32c_update(mut state: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        state = CRC32C_TABLE[usize::from((state as u8) ^ b)] ^ (state >> 8);
    }
    state
}

/// The v1 ICRC (§c.6) of a 28-byte option (its ICRC field is ignored:
/// taken as `FF FF FF FF`) followed by `payload`. `None` for [`IcrcAlgorithm::None`].
#[must_use]
pub fn compute_icrc(
    option: &[u8; V1_LEN],
    payload: &[u8],
    algorithm: IcrcAlgorithm,
) -> Option<u32> {
    let mut masked = *option;
    masked[field::ICRC].fill(0xFF);
    match algorithm {
        IcrcAlgorithm::Crc32Ieee => {
            let mut h = crc32fast::Hasher::new();
            h.update(&masked);
            h.update(payload);
            Some(h.finalize())
        }
        IcrcAlgorithm::Crc32c => {
            let state = crc32c_update(0xFFFF_FFFF, &masked);
            Some(!crc32c_update(state, payload))
        }
        IcrcAlgorithm::None => None,
    }
}

/// The `enf_bth`/v1 common core (option bytes 4–15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Core {
    /// The whole flags byte; reserved bits are kept so that bytes round-trip.
    pub flags: u8,
    pub opcode: Opcode,
    pub msn: u16,
    /// 24 bits.
    pub mbo_lo: u32,
    pub seg: u8,
    pub icrc: u32,
}

impl Core {
    #[must_use]
    pub const fn ver(&self) -> u8 {
        self.flags & flags::VER
    }
    #[must_use]
    pub const fn more(&self) -> bool {
        self.flags & flags::MS != 0
    }
    #[must_use]
    pub const fn tsp(&self) -> bool {
        self.flags & flags::TSP != 0
    }
}

/// The v1 data-segment option (§c.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct V1 {
    /// 253 or 254.
    pub kind: u8,
    pub exid: u16,
    pub core: Core,
    pub imm: u32,
    pub mlen: u32,
    pub mbo_hi: u8,
    pub rsvd8: u8,
    pub rsvd16: u16,
}

impl V1 {
    /// The full offset `MBO_HI << 24 | MBO_LO`.
    #[must_use]
    pub const fn mbo(&self) -> u32 {
        ((self.mbo_hi as u32) << 24) | (self.core.mbo_lo & 0x00FF_FFFF)
    }
}

/// The legacy `enf_bth` option (§c.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Enf {
    pub kind: u8,
    pub exid: u16,
    pub core: Core,
    pub ts: u32,
    pub ts_echo: u32,
}

/// A `tcp_bth` option's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Repr {
    Syn { kind: u8, exid: u16 },
    Enf(Enf),
    V1(V1),
}

impl Repr {
    /// Read an option. A v1 option with TSP set is `Malformed { Value }` (§c.3).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        let core = Core {
            flags: header.flags(),
            opcode: header.opcode(),
            msn: header.msn(),
            mbo_lo: header.mbo_lo(),
            seg: header.seg(),
            icrc: header.icrc(),
        };
        let (kind, exid) = (header.kind(), header.exid());
        Ok(match header.format() {
            Some(Format::V1) => {
                if header.tsp() {
                    return Err(WireError::Malformed {
                        layer: Layer::TcpBth,
                        offset: field::FLAGS,
                        reason: Malformed::Value,
                    });
                }
                Repr::V1(V1 {
                    kind,
                    exid,
                    core,
                    imm: header.imm(),
                    mlen: header.mlen(),
                    mbo_hi: header.mbo_hi(),
                    rsvd8: header.rsvd8(),
                    rsvd16: header.rsvd16(),
                })
            }
            Some(Format::Enf) => Repr::Enf(Enf {
                kind,
                exid,
                core,
                ts: header.timestamp(),
                ts_echo: header.timestamp_echo(),
            }),
            // check_len admits only the three lengths
            Some(Format::Syn) | None => Repr::Syn { kind, exid },
        })
    }

    #[must_use]
    pub const fn format(&self) -> Format {
        match self {
            Repr::Syn { .. } => Format::Syn,
            Repr::Enf(_) => Format::Enf,
            Repr::V1(_) => Format::V1,
        }
    }

    /// Bytes of the option.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        self.format().len()
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        self.buffer_len()
    }

    #[must_use]
    pub const fn exid(&self) -> u16 {
        match self {
            Repr::Syn { exid, .. } => *exid,
            Repr::Enf(e) => e.exid,
            Repr::V1(v) => v.exid,
        }
    }

    #[must_use]
    pub const fn core(&self) -> Option<&Core> {
        match self {
            Repr::Syn { .. } => None,
            Repr::Enf(e) => Some(&e.core),
            Repr::V1(v) => Some(&v.core),
        }
    }

    /// Write the option as is (ICRC field included; see [`Header::fill_icrc`]).
    /// `header` must hold [`buffer_len`](Self::buffer_len) bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        let len = self.buffer_len();
        if let Some(b) = header.b_mut().get_mut(..len) {
            b.fill(0);
        }
        #[allow(clippy::cast_possible_truncation)] // 4, 24 or 28
        header.set_length(len as u8);
        let core = match self {
            Repr::Syn { kind, exid } => {
                header.set_kind(*kind);
                header.set_exid(*exid);
                return;
            }
            Repr::Enf(e) => {
                header.set_kind(e.kind);
                header.set_exid(e.exid);
                header.set_imm(e.ts);
                header.set_mlen(e.ts_echo);
                &e.core
            }
            Repr::V1(v) => {
                header.set_kind(v.kind);
                header.set_exid(v.exid);
                header.set_imm(v.imm);
                header.set_mlen(v.mlen);
                header.set_mbo_hi(v.mbo_hi);
                header.set_rsvd8(v.rsvd8);
                header.set_rsvd16(v.rsvd16);
                &v.core
            }
        };
        header.set_flags(core.flags);
        header.set_opcode(core.opcode);
        header.set_msn(core.msn);
        header.set_mbo_lo(core.mbo_lo);
        header.set_seg(core.seg);
        header.set_icrc(core.icrc);
    }
}

/// nom adapter: one whole option (kind, length byte, then `length` bytes in all).
#[allow(dead_code, reason = "nom seam; the TCP option walker locates options")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (_, prefix) = error::take_complete(i, HEADER_LEN)?;
    let len = HEADER_LEN.max(usize::from(prefix[field::LENGTH]));
    let (rest, bytes) = error::take_complete(i, len)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repr::Syn { kind, exid } => write!(f, "tcp_bth syn kind={kind} exid={exid:#06x}"),
            Repr::Enf(e) => write!(
                f,
                "tcp_bth enf exid={:#06x} opcode={} msn={} mbo={} seg={} ms={} tsp={} icrc={:#010x} ts={} ts_echo={}",
                e.exid,
                e.core.opcode,
                e.core.msn,
                e.core.mbo_lo,
                e.core.seg,
                u8::from(e.core.more()),
                u8::from(e.core.tsp()),
                e.core.icrc,
                e.ts,
                e.ts_echo
            ),
            Repr::V1(v) => write!(
                f,
                "tcp_bth v1 exid={:#06x} opcode={} msn={} mbo={} seg={} ms={} imm={:#010x} mlen={} icrc={:#010x}",
                v.exid,
                v.core.opcode,
                v.core.msn,
                v.mbo(),
                v.core.seg,
                u8::from(v.core.more()),
                v.imm,
                v.mlen,
                v.core.icrc
            ),
        }
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "tcp_bth ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// §c.10 vector 1: the v1 option of SEND_ONLY_WITH_IMMEDIATE, payload "hello world".
    static BYTES: [u8; 28] = [
        0xfe, 0x1c, 0xef, 0xab, // kind 254, length 28, ExID 0xEFAB
        0x01, 0x05, 0x00, 0x01, // flags VER=1, opcode 0x05, MSN 1
        0x00, 0x00, 0x00, 0x00, // MBO_LO 0, SEG 0
        0x51, 0x59, 0x61, 0x59, // ICRC 0x51596159
        0xde, 0xad, 0xbe, 0xef, // IMM
        0x00, 0x00, 0x00, 0x0b, // MLEN 11
        0x00, 0x00, 0x00, 0x00, // MBO_HI, rsvd8, rsvd16
    ];
    const PAYLOAD_1: &[u8] = b"hello world";

    fn repr() -> Repr {
        Repr::V1(V1 {
            kind: KIND_EXP_254,
            exid: TCP_BTH_EXID_DEFAULT,
            core: Core {
                flags: 0x01,
                opcode: Opcode(0x05),
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
        })
    }

    #[test]
    fn test_crc_check_value() {
        // CRC-32/ISO-HDLC check value (§c.6) and CRC-32C check value
        let mut h = crc32fast::Hasher::new();
        h.update(b"123456789");
        assert_eq!(h.finalize(), 0xCBF4_3926);
        assert_eq!(!crc32c_update(0xFFFF_FFFF, b"123456789"), 0xE306_9283);
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.kind(), 254);
        assert_eq!(h.length(), 28);
        assert_eq!(h.format(), Some(Format::V1));
        assert_eq!(h.exid(), 0xEFAB);
        assert_eq!(
            (h.ver(), h.tsp(), h.more(), h.rtr(), h.rta()),
            (1, false, false, false, false)
        );
        assert_eq!(h.opcode(), Opcode::RC_SEND_ONLY_WITH_IMMEDIATE);
        assert_eq!((h.msn(), h.mbo(), h.seg()), (1, 0, 0));
        assert_eq!(h.icrc(), 0x5159_6159);
        assert_eq!((h.imm(), h.mlen()), (0xDEAD_BEEF, 11));
        assert_eq!(
            h.verify_icrc(PAYLOAD_1, IcrcAlgorithm::Crc32Ieee),
            IcrcStatus::Valid
        );
        assert_eq!(
            h.verify_icrc(b"hello worle", IcrcAlgorithm::Crc32Ieee),
            IcrcStatus::Invalid {
                expected: compute_icrc(&BYTES, b"hello worle", IcrcAlgorithm::Crc32Ieee).unwrap(),
                found: 0x5159_6159
            }
        );
        assert_eq!(
            h.verify_icrc(PAYLOAD_1, IcrcAlgorithm::None),
            IcrcStatus::NotVerifiable
        );
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 28];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_kind(254);
        h.set_length(28);
        h.set_exid(0xEFAB);
        h.set_flags(0x01);
        h.set_opcode(Opcode(0x05));
        h.set_msn(1);
        h.set_mbo_lo(0);
        h.set_seg(0);
        h.set_imm(0xDEAD_BEEF);
        h.set_mlen(11);
        h.set_mbo_hi(0);
        h.set_rsvd8(0);
        h.set_rsvd16(0);
        h.fill_icrc(PAYLOAD_1, IcrcAlgorithm::Crc32Ieee);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Header::new_unchecked(&BYTES[..])), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 28];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        // emit with a stale ICRC, then fill: the same bytes
        let Repr::V1(mut v) = repr() else {
            unreachable!()
        };
        v.core.icrc = 0;
        Repr::V1(v).emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[12..16], &[0, 0, 0, 0]);
        Header::new_unchecked(&mut buf[..]).fill_icrc(PAYLOAD_1, IcrcAlgorithm::Crc32Ieee);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_vector_2() {
        // §c.10 vector 2: 3000-byte SEND, MSN 2, split at 1420; payload byte i = 7*i & 0xff
        let data: Vec<u8> = (0..3000u32).map(|i| (7 * i) as u8).collect();
        let rows = [
            (
                0x00,
                0x09,
                0u32,
                1420usize,
                "fe1cefab0900000200000000226621be0000000000000bb800000000",
            ),
            (
                0x01,
                0x09,
                1420,
                1420,
                "fe1cefab0901000200058c01cba9ee370000000000000bb800000000",
            ),
            (
                0x02,
                0x01,
                2840,
                160,
                "fe1cefab01020002000b1802a54409770000000000000bb800000000",
            ),
        ];
        for (seg, (opcode, fl, mbo, len, wire)) in rows.into_iter().enumerate() {
            let repr = Repr::V1(V1 {
                kind: 254,
                exid: 0xEFAB,
                core: Core {
                    flags: fl,
                    opcode: Opcode(opcode),
                    msn: 2,
                    mbo_lo: mbo,
                    seg: seg as u8,
                    icrc: 0,
                },
                imm: 0,
                mlen: 3000,
                mbo_hi: 0,
                rsvd8: 0,
                rsvd16: 0,
            });
            let payload = &data[mbo as usize..mbo as usize + len];
            let mut buf = [0u8; 28];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            Header::new_unchecked(&mut buf[..]).fill_icrc(payload, IcrcAlgorithm::Crc32Ieee);
            assert_eq!(buf.to_vec(), hex(wire), "segment {seg}");
            let h = Header::new_checked(&buf[..]).unwrap();
            assert_eq!(
                h.verify_icrc(payload, IcrcAlgorithm::Crc32Ieee),
                IcrcStatus::Valid
            );
            assert_eq!(h.more(), seg < 2);
        }
    }

    #[test]
    fn test_vector_3_enf() {
        let bytes = hex("fe18efab0c010005 00058c01 12345678 00000064 00000032");
        let h = Header::new_checked(&bytes[..]).unwrap();
        assert_eq!((h.kind(), h.length(), h.exid()), (254, 24, 0xEFAB));
        assert_eq!(h.format(), Some(Format::Enf));
        assert_eq!(
            (h.ver(), h.tsp(), h.more(), h.rtr(), h.rta()),
            (0, true, true, false, false)
        );
        assert_eq!(
            (h.opcode(), h.msn(), h.mbo(), h.seg()),
            (Opcode(1), 5, 1420, 1)
        );
        assert_eq!(h.icrc(), 0x1234_5678);
        assert_eq!((h.timestamp(), h.timestamp_echo()), (100, 50));
        assert_eq!(
            h.verify_icrc(&[], IcrcAlgorithm::Crc32Ieee),
            IcrcStatus::NotVerifiable
        );
        let repr = Repr::parse(&h).unwrap();
        assert_eq!(
            repr,
            Repr::Enf(Enf {
                kind: 254,
                exid: 0xEFAB,
                core: Core {
                    flags: 0x0c,
                    opcode: Opcode(1),
                    msn: 5,
                    mbo_lo: 1420,
                    seg: 1,
                    icrc: 0x1234_5678
                },
                ts: 100,
                ts_echo: 50
            })
        );
        let mut out = [0u8; 24];
        repr.emit(&mut Header::new_unchecked(&mut out[..]));
        assert_eq!(out.to_vec(), bytes);
    }

    #[test]
    fn test_syn() {
        let bytes = [0xfe, 0x04, 0xef, 0xab];
        let h = Header::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Repr::parse(&h),
            Ok(Repr::Syn {
                kind: 254,
                exid: 0xEFAB
            })
        );
        // accessors past the end read zero, never panic
        assert_eq!((h.msn(), h.icrc(), h.mlen()), (0, 0, 0));
        assert_eq!(h.to_string(), "tcp_bth syn kind=254 exid=0xefab");
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..20]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated tcp_bth at offset 0: need 28 bytes, have 20"
        );
        let err = Header::new_checked(&BYTES[..3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated tcp_bth at offset 0: need 4 bytes, have 3"
        );
        let mut odd = BYTES;
        odd[1] = 27;
        assert_eq!(
            Header::new_checked(&odd[..]).unwrap_err(),
            WireError::Malformed {
                layer: Layer::TcpBth,
                offset: 1,
                reason: Malformed::OptionLength {
                    kind: BYTES[0],
                    value: 27,
                    room: 28
                }
            }
        );
        let mut tsp = BYTES;
        tsp[4] |= flags::TSP;
        assert_eq!(
            Repr::parse(&Header::new_unchecked(&tsp[..])).unwrap_err(),
            WireError::Malformed {
                layer: Layer::TcpBth,
                offset: 4,
                reason: Malformed::Value
            }
        );
    }

    #[test]
    fn test_nom_parse() {
        let mut buf = BYTES.to_vec();
        buf.extend_from_slice(&[1, 1]);
        let (rest, h) = parse(&buf).unwrap();
        assert_eq!((rest.len(), h.into_inner().len()), (2, 28));
        assert!(parse(&BYTES[..27]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "tcp_bth v1 exid=0xefab opcode=RC_SEND_ONLY_WITH_IMMEDIATE msn=1 mbo=0 seg=0 ms=0 imm=0xdeadbeef mlen=11 icrc=0x51596159"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_tcp_bth(repr in crate::strategy::tcp_bth()) {
            let mut buf = [0x55u8; V1_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            let len = repr.buffer_len();
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..len])), Ok(repr));
        }

        #[test]
        fn roundtrip_tcp_bth_bytes(mut bytes in any::<[u8; V1_LEN]>(), which in 0usize..3) {
            // canonical: a known length; v1 without TSP
            let len = [LEN_SYN, LEN_ENF, LEN_V1][which];
            bytes[field::LENGTH] = len;
            if len == LEN_V1 {
                bytes[field::FLAGS] &= !flags::TSP;
            }
            let bytes = &bytes[..usize::from(len)];
            let repr = Repr::parse(&Header::new_unchecked(bytes)).unwrap();
            let mut out = vec![0xAAu8; bytes.len()];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(&out[..], bytes);
        }

        #[test]
        fn roundtrip_tcp_bth_icrc(repr in crate::strategy::tcp_bth(), payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut buf = [0u8; V1_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            let len = repr.buffer_len();
            let mut h = Header::new_unchecked(&mut buf[..len]);
            h.fill_icrc(&payload, IcrcAlgorithm::Crc32c);
            let h = Header::new_unchecked(&buf[..len]);
            let expect = if repr.format() == Format::V1 { IcrcStatus::Valid } else { IcrcStatus::NotVerifiable };
            prop_assert_eq!(h.verify_icrc(&payload, IcrcAlgorithm::Crc32c), expect);
        }

        #[test]
        fn roundtrip_tcp_bth_any_bytes_no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let h = Header::new_unchecked(&bytes[..]);
            let _ = (h.to_string(), h.mbo(), h.mlen(), h.verify_icrc(&bytes, IcrcAlgorithm::Crc32Ieee));
            let _ = Repr::parse(&h);
            let _ = parse(&bytes);
        }
    }
}
