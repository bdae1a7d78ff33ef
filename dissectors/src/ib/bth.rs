//! Base Transport Header (IBTA vol. 1 §9.2; protocol.md §1), 12 bytes.
//!
//! This file is the pattern every header module follows: `mod field`,
//! the `Header<T>` view, accessors, setters, the owned `Repr`, the nom
//! adapter, `Display`, tests.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::ib::opcode::OpcodeName;
use crate::ib::opcode::{Opcode, OpcodeInfo};
use crate::ib::psn::{Psn, Qpn};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    pub const OPCODE: usize = 0;
    /// SE(7) | M(6) | PadCnt(5..4) | TVer(3..0)
    pub const FLAGS: usize = 1;
    pub const PKEY: Field = 2..4;
    /// FECN(7) | BECN(6) | Resv6(5..0), masked to ones in the ICRC
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Field = 5..8;
    /// AckReq(7) | Resv7(6..0)
    pub const ACK_REQ: usize = 8;
    pub const PSN: Field = 9..12;
}

pub const HEADER_LEN: usize = field::PSN.end;
/// Offset of the ICRC-masked byte (FECN/BECN/Resv6) within the BTH.
pub const MASKED_BYTE: usize = field::FECN_BECN;

const SE: u8 = 0x80;
const MIG_REQ: u8 = 0x40;
const PAD_SHIFT: u8 = 4;
const PAD_MASK: u8 = 0x30;
const TVER_MASK: u8 = 0x0F;
const FECN: u8 = 0x80;
const BECN: u8 = 0x40;
const ACK_REQ: u8 = 0x80;

/// A read/write view of a BTH.
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
        error::need(Layer::Bth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[must_use]
    pub fn opcode(&self) -> Opcode {
        Opcode(self.b()[field::OPCODE])
    }
    #[must_use]
    pub fn solicited_event(&self) -> bool {
        self.b()[field::FLAGS] & SE != 0
    }
    #[must_use]
    pub fn mig_req(&self) -> bool {
        self.b()[field::FLAGS] & MIG_REQ != 0
    }
    #[must_use]
    pub fn pad_count(&self) -> u8 {
        (self.b()[field::FLAGS] & PAD_MASK) >> PAD_SHIFT
    }
    #[must_use]
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & TVER_MASK
    }
    #[must_use]
    pub fn pkey(&self) -> u16 {
        u16::from_be_bytes([self.b()[field::PKEY.start], self.b()[field::PKEY.start + 1]])
    }
    #[must_use]
    pub fn fecn(&self) -> bool {
        self.b()[field::FECN_BECN] & FECN != 0
    }
    #[must_use]
    pub fn becn(&self) -> bool {
        self.b()[field::FECN_BECN] & BECN != 0
    }
    /// The six reserved bits after FECN/BECN (transmitted as 0).
    #[must_use]
    pub fn resv6(&self) -> u8 {
        self.b()[field::FECN_BECN] & 0x3F
    }
    #[must_use]
    pub fn dest_qp(&self) -> Qpn {
        let b = &self.b()[field::DEST_QP];
        Qpn::from_be_bytes24([b[0], b[1], b[2]])
    }
    #[must_use]
    pub fn ack_req(&self) -> bool {
        self.b()[field::ACK_REQ] & ACK_REQ != 0
    }
    /// The seven reserved bits after AckReq (transmitted as 0).
    #[must_use]
    pub fn resv7(&self) -> u8 {
        self.b()[field::ACK_REQ] & 0x7F
    }
    #[must_use]
    pub fn psn(&self) -> Psn {
        let b = &self.b()[field::PSN];
        Psn::from_be_bytes24([b[0], b[1], b[2]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        self.visit_fields_named(offset, None, v);
    }

    /// [`Self::visit_fields`] with the opcode's name from another table (NVIDIA DC's names
    /// on the RD range) when given.
    pub fn visit_fields_named(&self, offset: usize, name: Option<&str>, v: &mut impl Visitor) {
        let op = byte(offset, field::OPCODE);
        v.field(
            "opcode",
            "Opcode",
            Value::Uint(u64::from(self.opcode().0)),
            op.clone(),
        );
        let mut table = OpcodeName::default();
        let name = match name {
            Some(n) => n,
            None => table.of(self.opcode()),
        };
        v.field("opcode_name", "Opcode Name", Value::Str(name), op);
        let flags = byte(offset, field::FLAGS);
        let se = Value::Bool(self.solicited_event());
        v.field("se", "Solicited Event", se, flags.clone());
        v.field("m", "MigReq", Value::Bool(self.mig_req()), flags.clone());
        let pad = Value::Uint(u64::from(self.pad_count()));
        v.field("padcnt", "Pad Count", pad, flags.clone());
        let tver = Value::Uint(u64::from(self.tver()));
        v.field("tver", "Transport Header Version", tver, flags);
        let pkey = Value::Hex(u64::from(self.pkey()), 4);
        v.field("pkey", "Partition Key", pkey, span(offset, field::PKEY));
        let fb = byte(offset, field::FECN_BECN);
        v.field("fecn", "FECN", Value::Bool(self.fecn()), fb.clone());
        v.field("becn", "BECN", Value::Bool(self.becn()), fb);
        let qp = Value::Hex(u64::from(self.dest_qp().value()), 6);
        v.field(
            "destqp",
            "Destination Queue Pair",
            qp,
            span(offset, field::DEST_QP),
        );
        let a = Value::Bool(self.ack_req());
        v.field(
            "ackreq",
            "Acknowledge Request",
            a,
            byte(offset, field::ACK_REQ),
        );
        let psn = Value::Uint(u64::from(self.psn().value()));
        v.field(
            "psn",
            "Packet Sequence Number",
            psn,
            span(offset, field::PSN),
        );
    }
}

impl OpcodeInfo {
    /// BTH plus extension headers, in bytes; `None` for an unknown layout. (Here rather
    /// than with the table, so that the table does not depend on the BTH.)
    #[must_use]
    pub const fn header_bytes(&self) -> Option<usize> {
        match self.headers {
            None => None,
            Some(_) => Some(HEADER_LEN + self.ext_len as usize),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn set_bit(&mut self, at: usize, bit: u8, on: bool) {
        let b = &mut self.b_mut()[at];
        *b = if on { *b | bit } else { *b & !bit };
    }

    pub fn set_opcode(&mut self, value: Opcode) {
        self.b_mut()[field::OPCODE] = value.0;
    }
    pub fn set_solicited_event(&mut self, value: bool) {
        self.set_bit(field::FLAGS, SE, value);
    }
    pub fn set_mig_req(&mut self, value: bool) {
        self.set_bit(field::FLAGS, MIG_REQ, value);
    }
    pub fn set_pad_count(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::FLAGS];
        *b = (*b & !PAD_MASK) | ((value << PAD_SHIFT) & PAD_MASK);
    }
    pub fn set_tver(&mut self, value: u8) {
        let b = &mut self.b_mut()[field::FLAGS];
        *b = (*b & !TVER_MASK) | (value & TVER_MASK);
    }
    pub fn set_pkey(&mut self, value: u16) {
        self.b_mut()[field::PKEY].copy_from_slice(&value.to_be_bytes());
    }
    pub fn set_fecn(&mut self, value: bool) {
        self.set_bit(field::FECN_BECN, FECN, value);
    }
    pub fn set_becn(&mut self, value: bool) {
        self.set_bit(field::FECN_BECN, BECN, value);
    }
    pub fn set_dest_qp(&mut self, value: Qpn) {
        self.b_mut()[field::DEST_QP].copy_from_slice(&value.to_be_bytes24());
    }
    pub fn set_ack_req(&mut self, value: bool) {
        self.set_bit(field::ACK_REQ, ACK_REQ, value);
    }
    pub fn set_psn(&mut self, value: Psn) {
        self.b_mut()[field::PSN].copy_from_slice(&value.to_be_bytes24());
    }
}

/// The BTH's meaning, without reserved bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub opcode: Opcode,
    pub solicited_event: bool,
    pub mig_req: bool,
    /// 0..=3
    pub pad_count: u8,
    /// 0..=15
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    pub dest_qp: Qpn,
    pub ack_req: bool,
    pub psn: Psn,
}

impl Repr {
    /// Every BTH is representable; reserved bits are dropped.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            opcode: header.opcode(),
            solicited_event: header.solicited_event(),
            mig_req: header.mig_req(),
            pad_count: header.pad_count(),
            tver: header.tver(),
            pkey: header.pkey(),
            fecn: header.fecn(),
            becn: header.becn(),
            dest_qp: header.dest_qp(),
            ack_req: header.ack_req(),
            psn: header.psn(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field, reserved bits zero. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.b_mut()[..HEADER_LEN].fill(0);
        header.set_opcode(self.opcode);
        header.set_solicited_event(self.solicited_event);
        header.set_mig_req(self.mig_req);
        header.set_pad_count(self.pad_count);
        header.set_tver(self.tver);
        header.set_pkey(self.pkey);
        header.set_fecn(self.fecn);
        header.set_becn(self.becn);
        header.set_dest_qp(self.dest_qp);
        header.set_ack_req(self.ack_req);
        header.set_psn(self.psn);
    }
}

/// nom adapter used by `stack.rs`.
#[inline]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BTH opcode={} se={} m={} padcnt={} tver={} pkey={:#06x} fecn={} becn={} dqpn={} a={} psn={}",
            self.opcode,
            u8::from(self.solicited_event),
            u8::from(self.mig_req),
            self.pad_count,
            self.tver,
            self.pkey,
            u8::from(self.fecn),
            u8::from(self.becn),
            self.dest_qp,
            u8::from(self.ack_req),
            self.psn
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "BTH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// BTH of protocol.md §4.3 vector B: UC_SEND_ONLY, M=1, PadCnt=2.
    static BYTES: [u8; 12] = [
        0x24, // opcode UC_SEND_ONLY
        0x60, // SE=0 M=1 PadCnt=2 TVer=0
        0xff, 0xff, // P_Key
        0x00, // FECN=0 BECN=0 resv6
        0x00, 0x00, 0xd3, // DestQP 211
        0x00, // AckReq=0 resv7
        0xcf, 0x17, 0x10, // PSN 13571856
    ];

    fn repr() -> Repr {
        Repr {
            opcode: Opcode::UC_SEND_ONLY,
            solicited_event: false,
            mig_req: true,
            pad_count: 2,
            tver: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: Qpn::new_masked(211),
            ack_req: false,
            psn: Psn::new_masked(13_571_856),
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.opcode(), Opcode(0x24));
        assert!(!h.solicited_event());
        assert!(h.mig_req());
        assert_eq!(h.pad_count(), 2);
        assert_eq!(h.tver(), 0);
        assert_eq!(h.pkey(), 0xffff);
        assert!(!h.fecn() && !h.becn());
        assert_eq!(h.dest_qp().value(), 211);
        assert!(!h.ack_req());
        assert_eq!(h.psn().value(), 13_571_856);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 12];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_opcode(Opcode(0x24));
        h.set_solicited_event(false);
        h.set_mig_req(true);
        h.set_pad_count(2);
        h.set_tver(0);
        h.set_pkey(0xffff);
        h.set_fecn(false);
        h.set_becn(false);
        h.set_dest_qp(Qpn::new_masked(211));
        h.set_ack_req(false);
        h.set_psn(Psn::new_masked(13_571_856));
        // setters keep reserved bits: fix them up to compare with canonical bytes
        assert_eq!(h.resv6(), 0x2A);
        assert_eq!(h.resv7(), 0x2A);
    }

    #[test]
    fn test_parse() {
        let h = Header::new_unchecked(&BYTES[..]);
        assert_eq!(Repr::parse(&h), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 12];
        repr().emit(&mut Header::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated BTH at offset 0: need 12 bytes, have 7"
        );
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "BTH opcode=UC_SEND_ONLY se=0 m=1 padcnt=2 tver=0 pkey=0xffff fecn=0 becn=0 dqpn=0x0000d3 a=0 psn=13571856"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_bth(repr in crate::strategy::bth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_bth_bytes(mut bytes in any::<[u8; HEADER_LEN]>()) {
            bytes[field::FECN_BECN] &= 0xC0; // canonical: reserved bits zero
            bytes[field::ACK_REQ] &= 0x80;
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }
    }
}
