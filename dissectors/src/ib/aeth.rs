//! ACK Extended Transport Header (IBTA vol. 1 §9.3.5; protocol.md §2.2, §3), 4 bytes.
//!
//! Byte 0 is the syndrome, an open newtype ([`Syndrome`]) decoded on demand by
//! [`Syndrome::kind`]; bytes 1..4 are the responder's 24-bit Message Sequence
//! Number. The MSN is kept as a `u32` in 0..=[`MSN_MAX`] (not a [`Psn`](crate::ib::psn::Psn):
//! it counts messages, and the analyzer compares it with plain wrapping
//! arithmetic); setters and `emit` keep its low 24 bits.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); the RNR timer and credit tables have 32 entries, indexed by a 5-bit value.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::visit::{Value, Visitor, byte, span};

mod field {
    use crate::field::Field;
    /// Syndrome (8): rsv(7) | type(6..5) | value(4..0)
    pub const SYNDROME: usize = 0;
    /// MSN (24)
    pub const MSN: Field = 1..4;
}

pub const HEADER_LEN: usize = field::MSN.end;

/// Largest 24-bit MSN.
pub const MSN_MAX: u32 = 0x00FF_FFFF;

/// rxe's `AETH_TYPE_MASK`: bit 7 takes part in the type test.
const TYPE_MASK: u8 = 0xE0;
const TYPE_ACK: u8 = 0x00;
const TYPE_RNR_NAK: u8 = 0x20;
const TYPE_NAK: u8 = 0x60;
const VALUE_MASK: u8 = 0x1F;

/// The AETH syndrome byte, kept whole (an open newtype: every value is
/// representable, including reserved ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Syndrome(pub u8);

impl Syndrome {
    /// ACK with credit code 31, "invalid" = unlimited credits (what rxe always sends).
    pub const ACK_UNLIMITED: Syndrome = Syndrome(0x1F);

    /// An ACK carrying `credit_code` (low 5 bits kept).
    #[must_use]
    pub const fn ack(credit_code: u8) -> Syndrome {
        Syndrome(TYPE_ACK | (credit_code & VALUE_MASK))
    }

    /// An RNR NAK carrying `timer_code` (low 5 bits kept).
    #[must_use]
    pub const fn rnr_nak(timer_code: u8) -> Syndrome {
        Syndrome(TYPE_RNR_NAK | (timer_code & VALUE_MASK))
    }

    /// A NAK carrying `code` (low 5 bits kept).
    #[must_use]
    pub const fn nak(code: NakCode) -> Syndrome {
        Syndrome(TYPE_NAK | (code.0 & VALUE_MASK))
    }

    /// Classify as rxe does, with `syndrome & 0xE0`: 0x00 ACK, 0x20 RNR NAK,
    /// 0x60 NAK; 0x40 and everything with bit 7 set are reserved.
    #[must_use]
    pub const fn kind(self) -> AethKind {
        let value = self.0 & VALUE_MASK;
        match self.0 & TYPE_MASK {
            TYPE_ACK => AethKind::Ack { credit_code: value },
            TYPE_RNR_NAK => AethKind::RnrNak { timer_code: value },
            TYPE_NAK => AethKind::Nak(NakCode(value)),
            _ => AethKind::Reserved,
        }
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#04x}", self.0)
    }
}

/// What a [`Syndrome`] means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AethKind {
    /// 0x00..=0x1F. See [`credits`] for the credit count.
    Ack { credit_code: u8 },
    /// 0x20..=0x3F. See [`rnr_timer_us`] for the delay.
    RnrNak { timer_code: u8 },
    /// 0x60..=0x7F.
    Nak(NakCode),
    /// 0x40..=0x5F and 0x80..=0xFF.
    Reserved,
}

impl AethKind {
    /// The JSON `kind` value of interfaces.md §4.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            AethKind::Ack { .. } => "ack",
            AethKind::RnrNak { .. } => "rnr_nak",
            AethKind::Nak(_) => "nak",
            AethKind::Reserved => "reserved",
        }
    }
}

/// A NAK code (the low 5 bits of a NAK syndrome), an open newtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NakCode(pub u8);

impl NakCode {
    pub const PSN_SEQUENCE_ERROR: NakCode = NakCode(0);
    pub const INVALID_REQUEST: NakCode = NakCode(1);
    pub const REMOTE_ACCESS_ERROR: NakCode = NakCode(2);
    pub const REMOTE_OPERATIONAL_ERROR: NakCode = NakCode(3);
    pub const INVALID_RD_REQUEST: NakCode = NakCode(4);

    /// Short name of a known code (`PSN_SEQ_ERR`, `INVALID_REQUEST`,
    /// `REMOTE_ACCESS`, `REMOTE_OP`, `INVALID_RD`); `None` for reserved codes,
    /// which `Display` prints as `NAK(0xNN)`.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        match self {
            NakCode::PSN_SEQUENCE_ERROR => Some("PSN_SEQ_ERR"),
            NakCode::INVALID_REQUEST => Some("INVALID_REQUEST"),
            NakCode::REMOTE_ACCESS_ERROR => Some("REMOTE_ACCESS"),
            NakCode::REMOTE_OPERATIONAL_ERROR => Some("REMOTE_OP"),
            NakCode::INVALID_RD_REQUEST => Some("INVALID_RD"),
            _ => None,
        }
    }
}

impl fmt::Display for NakCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "NAK({:#04x})", self.0),
        }
    }
}

/// Credit count per ACK credit code (protocol.md §3, rdmavt `credit_table`);
/// the last entry is a placeholder for code 31.
const CREDITS: [u32; 32] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 0,
];

/// Receive credits announced by an ACK credit code (low 5 bits of `code`).
/// `None` for code 31, "invalid": unlimited credits, no end-to-end flow control.
#[must_use]
pub const fn credits(code: u8) -> Option<u32> {
    let code = code & VALUE_MASK;
    if code == VALUE_MASK {
        None
    } else {
        Some(CREDITS[code as usize])
    }
}

/// RNR NAK delay in µs per timer code (protocol.md §3; rxe `rnrnak_usec[]`
/// except code 25, which is 61 440 µs, not rxe's 61410 typo).
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The minimum RNR NAK delay in µs for an RNR timer code (low 5 bits of `code`).
#[must_use]
pub const fn rnr_timer_us(code: u8) -> u32 {
    RNR_TIMER_US[(code & VALUE_MASK) as usize]
}

/// Write `us` as milliseconds without trailing zeros: 1280 -> `1.28ms`.
fn write_ms(f: &mut fmt::Formatter<'_>, us: u32) -> fmt::Result {
    let (whole, frac) = (us / 1000, us % 1000);
    if frac == 0 {
        write!(f, "{whole}ms")
    } else if frac % 100 == 0 {
        write!(f, "{whole}.{}ms", frac / 100)
    } else if frac % 10 == 0 {
        write!(f, "{whole}.{:02}ms", frac / 10)
    } else {
        write!(f, "{whole}.{frac:03}ms")
    }
}

/// A read/write view of an AETH.
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
        error::need(Layer::Aeth, HEADER_LEN, self.buffer.as_ref().len())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[must_use]
    pub fn syndrome(&self) -> Syndrome {
        Syndrome(self.b()[field::SYNDROME])
    }
    /// Message Sequence Number, 0..=`MSN_MAX`.
    #[must_use]
    pub fn msn(&self) -> u32 {
        let b = &self.b()[field::MSN];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The header's fields for the field tree: the syndrome, what it means, and the MSN.
    pub fn visit_fields(&self, offset: usize, v: &mut impl Visitor) {
        let syn = byte(offset, field::SYNDROME);
        let syndrome = self.syndrome();
        let raw = Value::Hex(u64::from(syndrome.0), 2);
        v.field("syndrome", "Syndrome", raw, syn.clone());
        let kind = syndrome.kind();
        v.field("kind", "Kind", Value::Str(kind.name()), syn.clone());
        match kind {
            AethKind::Ack { credit_code } => {
                let credit = Value::Uint(u64::from(credit_code));
                v.field("credit", "Credit Code", credit, syn);
            }
            AethKind::RnrNak { timer_code } => {
                let us = Value::Uint(u64::from(rnr_timer_us(timer_code)));
                v.field("timer_us", "RNR Timer (us)", us, syn);
            }
            AethKind::Nak(code) => {
                v.field("nak_code", "NAK Code", Value::Uint(u64::from(code.0)), syn);
            }
            AethKind::Reserved => {}
        }
        let msn = Value::Uint(u64::from(self.msn()));
        v.field(
            "msn",
            "Message Sequence Number",
            msn,
            span(offset, field::MSN),
        );
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_syndrome(&mut self, value: Syndrome) {
        self.b_mut()[field::SYNDROME] = value.0;
    }
    /// Keeps the low 24 bits of `value`.
    pub fn set_msn(&mut self, value: u32) {
        let b = (value & MSN_MAX).to_be_bytes();
        self.b_mut()[field::MSN].copy_from_slice(&b[1..]);
    }
}

/// The AETH's meaning. The syndrome byte is kept whole (bit 7 included), so
/// every AETH round-trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Repr {
    pub syndrome: Syndrome,
    /// 0..=`MSN_MAX`; `emit` keeps the low 24 bits.
    pub msn: u32,
}

impl Repr {
    /// Every AETH is representable.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Header<&T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            syndrome: header.syndrome(),
            msn: header.msn(),
        })
    }

    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write every field. `header` must hold `HEADER_LEN` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, header: &mut Header<&mut T>) {
        header.set_syndrome(self.syndrome);
        header.set_msn(self.msn);
    }
}

/// nom adapter for composing this header with nom (as `bth::parse` is used by
/// `stack.rs`, which currently slices extension headers via the opcode table).
#[allow(dead_code, reason = "nom seam; stack.rs slices ETHs by opcode today")]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Header<&[u8]>> {
    let (rest, bytes) = error::take_complete(i, HEADER_LEN)?;
    Ok((rest, Header::new_unchecked(bytes)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.syndrome.kind() {
            AethKind::Ack { credit_code } => write!(f, "AETH ACK credit={credit_code}")?,
            AethKind::RnrNak { timer_code } => {
                f.write_str("AETH RNR NAK timer=")?;
                write_ms(f, rnr_timer_us(timer_code))?;
            }
            AethKind::Nak(code) => write!(f, "AETH NAK {code}")?,
            AethKind::Reserved => write!(f, "AETH reserved syndrome={}", self.syndrome)?,
        }
        write!(f, " msn={}", self.msn)
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Header<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Header::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "AETH ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// AETH of the RC ACKNOWLEDGE in frame 9 of captures/real/nvmeof-discover.pcap
    /// (tshark: "Syndrome: 9, Ack", OpCode Ack (0), Credit Count 9, MSN 1).
    static BYTES: [u8; 4] = [
        0x09, // syndrome: rsv=0 type=00 (ACK) credit code 9
        0x00, 0x00, 0x01, // MSN 1
    ];

    /// AETH of the first RC ACKNOWLEDGE in captures/real/mlx-rocev2-32qp.pcap
    /// (tshark: syndrome 31, MSN 0).
    static BYTES_MLX: [u8; 4] = [
        0x1f, // syndrome: ACK, credit code 31 (unlimited)
        0x00, 0x00, 0x00, // MSN 0
    ];

    fn repr() -> Repr {
        Repr {
            syndrome: Syndrome::ack(9),
            msn: 1,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.syndrome(), Syndrome(9));
        assert_eq!(h.syndrome().kind(), AethKind::Ack { credit_code: 9 });
        assert_eq!(credits(9), Some(24));
        assert_eq!(h.msn(), 1);

        let h = Header::new_checked(&BYTES_MLX[..]).unwrap();
        assert_eq!(h.syndrome(), Syndrome::ACK_UNLIMITED);
        assert_eq!(h.syndrome().kind(), AethKind::Ack { credit_code: 31 });
        assert_eq!(credits(31), None);
        assert_eq!(h.msn(), 0);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xAAu8; 4];
        let mut h = Header::new_unchecked(&mut buf[..]);
        h.set_syndrome(Syndrome(0x09));
        h.set_msn(0xFF00_0001); // masked to 24 bits
        assert_eq!(h.msn(), 1);
        assert_eq!(buf, BYTES);
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
        assert_eq!(repr().header_len(), 4);
    }

    #[test]
    fn test_truncated() {
        let err = Header::new_checked(&BYTES[..3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated AETH at offset 0: need 4 bytes, have 3"
        );
        assert!(parse(&BYTES[..0]).is_err());
        let (rest, h) = parse(&BYTES[..]).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.msn(), 1);
    }

    #[test]
    fn test_kinds() {
        // boundaries of every range in the syndrome table of protocol.md §3
        let cases = [
            (0x00, AethKind::Ack { credit_code: 0 }),
            (0x1E, AethKind::Ack { credit_code: 30 }),
            (0x1F, AethKind::Ack { credit_code: 31 }),
            (0x20, AethKind::RnrNak { timer_code: 0 }),
            (0x2E, AethKind::RnrNak { timer_code: 14 }),
            (0x3F, AethKind::RnrNak { timer_code: 31 }),
            (0x40, AethKind::Reserved),
            (0x5F, AethKind::Reserved),
            (0x60, AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR)),
            (0x61, AethKind::Nak(NakCode::INVALID_REQUEST)),
            (0x62, AethKind::Nak(NakCode::REMOTE_ACCESS_ERROR)),
            (0x63, AethKind::Nak(NakCode::REMOTE_OPERATIONAL_ERROR)),
            (0x64, AethKind::Nak(NakCode::INVALID_RD_REQUEST)),
            (0x65, AethKind::Nak(NakCode(5))),
            (0x7F, AethKind::Nak(NakCode(31))),
            (0x80, AethKind::Reserved),
            (0x9F, AethKind::Reserved),
            (0xA0, AethKind::Reserved),
            (0xE0, AethKind::Reserved),
            (0xFF, AethKind::Reserved),
        ];
        for (syn, kind) in cases {
            assert_eq!(Syndrome(syn).kind(), kind, "syndrome {syn:#04x}");
        }
        // every syndrome with bit 7 set is reserved
        for syn in 0x80..=0xFFu8 {
            assert_eq!(Syndrome(syn).kind(), AethKind::Reserved);
        }
        assert_eq!(Syndrome::ack(0x3F), Syndrome(0x1F));
        assert_eq!(Syndrome::rnr_nak(14), Syndrome(0x2E));
        assert_eq!(Syndrome::nak(NakCode::INVALID_RD_REQUEST), Syndrome(0x64));
        assert_eq!(AethKind::Ack { credit_code: 0 }.name(), "ack");
        assert_eq!(AethKind::RnrNak { timer_code: 0 }.name(), "rnr_nak");
        assert_eq!(AethKind::Nak(NakCode(0)).name(), "nak");
        assert_eq!(AethKind::Reserved.name(), "reserved");
    }

    #[test]
    fn test_nak_names() {
        assert_eq!(NakCode(0).to_string(), "PSN_SEQ_ERR");
        assert_eq!(NakCode(1).to_string(), "INVALID_REQUEST");
        assert_eq!(NakCode(2).to_string(), "REMOTE_ACCESS");
        assert_eq!(NakCode(3).to_string(), "REMOTE_OP");
        assert_eq!(NakCode(4).to_string(), "INVALID_RD");
        assert_eq!(NakCode(5).name(), None);
        assert_eq!(NakCode(5).to_string(), "NAK(0x05)");
        assert_eq!(NakCode(0x1F).to_string(), "NAK(0x1f)");
    }

    #[test]
    fn test_credit_table() {
        // protocol.md §3 "ACK credit codes", typed from the spec text
        let spec: [(u8, Option<u32>); 32] = [
            (0x00, Some(0)),
            (0x01, Some(1)),
            (0x02, Some(2)),
            (0x03, Some(3)),
            (0x04, Some(4)),
            (0x05, Some(6)),
            (0x06, Some(8)),
            (0x07, Some(12)),
            (0x08, Some(16)),
            (0x09, Some(24)),
            (0x0A, Some(32)),
            (0x0B, Some(48)),
            (0x0C, Some(64)),
            (0x0D, Some(96)),
            (0x0E, Some(128)),
            (0x0F, Some(192)),
            (0x10, Some(256)),
            (0x11, Some(384)),
            (0x12, Some(512)),
            (0x13, Some(768)),
            (0x14, Some(1024)),
            (0x15, Some(1536)),
            (0x16, Some(2048)),
            (0x17, Some(3072)),
            (0x18, Some(4096)),
            (0x19, Some(6144)),
            (0x1A, Some(8192)),
            (0x1B, Some(12288)),
            (0x1C, Some(16384)),
            (0x1D, Some(24576)),
            (0x1E, Some(32768)),
            (0x1F, None), // invalid/unlimited
        ];
        for (code, want) in spec {
            assert_eq!(credits(code), want, "credit code {code:#04x}");
        }
    }

    #[test]
    fn test_rnr_table() {
        // protocol.md §3 "RNR NAK timer codes" (ms), typed from the spec text
        let spec: [(u8, &str); 32] = [
            (0, "655.36"),
            (1, "0.01"),
            (2, "0.02"),
            (3, "0.03"),
            (4, "0.04"),
            (5, "0.06"),
            (6, "0.08"),
            (7, "0.12"),
            (8, "0.16"),
            (9, "0.24"),
            (10, "0.32"),
            (11, "0.48"),
            (12, "0.64"),
            (13, "0.96"),
            (14, "1.28"),
            (15, "1.92"),
            (16, "2.56"),
            (17, "3.84"),
            (18, "5.12"),
            (19, "7.68"),
            (20, "10.24"),
            (21, "15.36"),
            (22, "20.48"),
            (23, "30.72"),
            (24, "40.96"),
            (25, "61.44"),
            (26, "81.92"),
            (27, "122.88"),
            (28, "163.84"),
            (29, "245.76"),
            (30, "327.68"),
            (31, "491.52"),
        ];
        for (code, ms) in spec {
            // every entry has two decimals: drop the dot to get units of 10 µs
            let us = ms.replace('.', "").parse::<u32>().unwrap() * 10;
            assert_eq!(rnr_timer_us(code), us, "timer code {code}");
            let repr = Repr {
                syndrome: Syndrome::rnr_nak(code),
                msn: 0,
            };
            assert_eq!(repr.to_string(), format!("AETH RNR NAK timer={ms}ms msn=0"));
        }
        assert_eq!(rnr_timer_us(0), 655_360);
        assert_eq!(rnr_timer_us(14), 1_280);
        assert_eq!(rnr_timer_us(25), 61_440); // not rxe's 61410
    }

    #[test]
    fn test_display() {
        let ack = Repr {
            syndrome: Syndrome(0x1F),
            msn: 9,
        };
        assert_eq!(ack.to_string(), "AETH ACK credit=31 msn=9");
        let nak = Repr {
            syndrome: Syndrome(0x60),
            msn: 3,
        };
        assert_eq!(nak.to_string(), "AETH NAK PSN_SEQ_ERR msn=3");
        let rnr = Repr {
            syndrome: Syndrome(0x2E),
            msn: 2,
        };
        assert_eq!(rnr.to_string(), "AETH RNR NAK timer=1.28ms msn=2");
        let odd = Repr {
            syndrome: Syndrome(0x65),
            msn: 4,
        };
        assert_eq!(odd.to_string(), "AETH NAK NAK(0x05) msn=4");
        let rsv = Repr {
            syndrome: Syndrome(0x9F),
            msn: 5,
        };
        assert_eq!(rsv.to_string(), "AETH reserved syndrome=0x9f msn=5");
        assert_eq!(
            Header::new_unchecked(&BYTES[..]).to_string(),
            "AETH ACK credit=9 msn=1"
        );
        assert_eq!(
            Header::new_unchecked(&BYTES[..2]).to_string(),
            "AETH (truncated AETH at offset 0: need 4 bytes, have 2)"
        );
    }

    proptest! {
        #[test]
        fn roundtrip_aeth(repr in crate::strategy::aeth()) {
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Header::new_unchecked(&buf[..])), Ok(repr));
        }

        #[test]
        fn roundtrip_aeth_bytes(bytes in any::<[u8; HEADER_LEN]>()) {
            // the AETH has no reserved bits outside the kept syndrome byte
            let repr = Repr::parse(&Header::new_unchecked(&bytes[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Header::new_unchecked(&mut out[..]));
            prop_assert_eq!(out, bytes);
        }

        #[test]
        fn roundtrip_syndrome_constructors(value in 0u8..32) {
            prop_assert_eq!(Syndrome::ack(value).kind(), AethKind::Ack { credit_code: value });
            prop_assert_eq!(Syndrome::rnr_nak(value).kind(), AethKind::RnrNak { timer_code: value });
            prop_assert_eq!(Syndrome::nak(NakCode(value)).kind(), AethKind::Nak(NakCode(value)));
        }
    }
}
