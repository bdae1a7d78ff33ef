//! MAC Control frames, EtherType 0x8808: 802.3x PAUSE and 802.1Qbb PFC
//! (protocol.md §8).
//!
//! The view starts right after the EtherType (or after the last VLAN tag's
//! EtherType): a 2-byte opcode, then an opcode-specific body.
//!
//! | body offset | PAUSE (0x0001)   | PFC (0x0101)                              |
//! |-------------|------------------|-------------------------------------------|
//! | 0..2        | opcode           | opcode                                    |
//! | 2..4        | pause_time       | priority-enable vector (bit n = prio n)   |
//! | 4..20       | (zero padding)   | time\[0\] … time\[7\], priority 0 first   |
//!
//! The rest of the minimum-size frame is zero padding, which the view keeps
//! but no accessor reads. Times are in quanta of 512 bit times
//! ([`quanta_to_ns`]); 0 means XON (resume).

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern); the eight PFC priorities index eight-entry tables.
#![allow(clippy::indexing_slicing)]

use core::fmt;

use crate::error::{self, Layer, PResult, Result};
use crate::ethernet::Address;
use crate::visit::{Value, Visitor, span};

mod field {
    use crate::field::Field;
    pub const OPCODE: Field = 0..2;
    /// PAUSE: pause_time in quanta
    pub const PAUSE_TIME: Field = 2..4;
    /// PFC: priority-enable vector, high byte reserved
    pub const PFC_ENABLE: Field = 2..4;
    /// PFC: eight big-endian u16 quanta, time\[n\] at 4 + 2n
    pub const PFC_TIME: Field = 4..20;
}

/// The part every MAC Control frame has: the opcode.
pub const HEADER_LEN: usize = field::OPCODE.end;
/// Opcode + pause_time.
pub const PAUSE_LEN: usize = field::PAUSE_TIME.end;
/// Opcode + enable vector + eight times.
pub const PFC_LEN: usize = field::PFC_TIME.end;
/// Number of PFC priorities (802.1p classes).
pub const PRIORITIES: usize = 8;

/// The reserved multicast destination of PAUSE and PFC frames, 01:80:c2:00:00:01.
pub const PAUSE_DST: Address = Address([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);

/// A MAC Control opcode (open registry: unknown values are kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MacControlOpcode(pub u16);

impl MacControlOpcode {
    /// 802.3x PAUSE (Annex 31B).
    pub const PAUSE: MacControlOpcode = MacControlOpcode(0x0001);
    /// 802.1Qbb priority-based flow control ("01-01"; not 0x1001).
    pub const PFC: MacControlOpcode = MacControlOpcode(0x0101);

    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        match self.0 {
            0x0001 => Some("PAUSE"),
            0x0101 => Some("PFC"),
            _ => None,
        }
    }

    /// Bytes from the opcode to the end of the body this crate reads
    /// (`HEADER_LEN` for opcodes it does not interpret).
    #[must_use]
    pub const fn body_len(self) -> usize {
        match self.0 {
            0x0001 => PAUSE_LEN,
            0x0101 => PFC_LEN,
            _ => HEADER_LEN,
        }
    }
}

impl fmt::Display for MacControlOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#06x}", self.0),
        }
    }
}

/// How long `quanta` pause quanta last on a link of `link_bps` bits per second,
/// in whole nanoseconds (rounded down): `quanta × 512 / link_bps` seconds.
/// 0 when `link_bps` is 0.
#[must_use]
pub fn quanta_to_ns(quanta: u16, link_bps: u64) -> u64 {
    if link_bps == 0 {
        return 0;
    }
    let ns = u128::from(quanta) * 512 * 1_000_000_000 / u128::from(link_bps);
    // at most 65535 × 512 × 1e9 ≈ 3.4e16, which fits
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// A read/write view of a MAC Control body (opcode onwards, padding included).
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

    /// 2 bytes for the opcode, then 4 in all for PAUSE and 20 for PFC.
    pub fn check_len(&self) -> Result<()> {
        let have = self.b().len();
        error::need(Layer::MacControl, HEADER_LEN, have)?;
        error::need(Layer::MacControl, self.opcode().body_len(), have)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The big-endian u16 at `at`, 0 when the buffer ends first (so that a
    /// checked view of an opcode without that field cannot panic).
    fn u16_at(&self, at: usize) -> u16 {
        match self.b().get(at..at + 2) {
            Some(&[hi, lo]) => u16::from_be_bytes([hi, lo]),
            _ => 0,
        }
    }

    #[must_use]
    pub fn opcode(&self) -> MacControlOpcode {
        MacControlOpcode(self.u16_at(field::OPCODE.start))
    }
    /// PAUSE pause_time in quanta. Meaningful when `opcode()` is PAUSE; reads
    /// the same two bytes as [`pfc_enable`](Self::pfc_enable), and 0 when absent.
    #[must_use]
    pub fn pause_quanta(&self) -> u16 {
        self.u16_at(field::PAUSE_TIME.start)
    }
    /// PFC priority-enable vector as on the wire (high byte reserved, 0).
    #[must_use]
    pub fn pfc_enable(&self) -> u16 {
        self.u16_at(field::PFC_ENABLE.start)
    }
    /// Bit `priority` of the enable vector's low byte; `false` for priority ≥ 8.
    #[must_use]
    pub fn priority_enabled(&self, priority: u8) -> bool {
        priority < 8 && self.pfc_enable() & (1 << priority) != 0
    }
    /// PFC time\[`priority`\] in quanta; 0 for priority ≥ 8 (or when absent).
    /// Act on it only when [`priority_enabled`](Self::priority_enabled).
    #[must_use]
    pub fn pfc_quanta(&self, priority: u8) -> u16 {
        if usize::from(priority) < PRIORITIES {
            self.u16_at(field::PFC_TIME.start + 2 * usize::from(priority))
        } else {
            0
        }
    }
    /// All eight PFC times, priority 0 first.
    #[must_use]
    pub fn pfc_quanta_all(&self) -> [u16; 8] {
        let mut out = [0u16; 8];
        for (priority, slot) in (0u8..).zip(out.iter_mut()) {
            *slot = self.pfc_quanta(priority);
        }
        out
    }
    /// The body after the interpreted fields (zero padding up to the 60-byte minimum).
    #[must_use]
    pub fn padding(&self) -> &[u8] {
        self.b().get(self.opcode().body_len()..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The frame as its own layer of the field tree: `pause`, `pfc` or, for any other
    /// opcode, `macc` (the opcode decides which, so the layer is opened here).
    pub fn visit(&self, offset: usize, v: &mut impl Visitor) {
        match self.opcode() {
            MacControlOpcode::PAUSE => {
                v.begin("pause", "MAC Control PAUSE", offset..offset + PAUSE_LEN);
                let quanta = Value::Uint(u64::from(self.pause_quanta()));
                v.field(
                    "quanta",
                    "Pause Time",
                    quanta,
                    span(offset, field::PAUSE_TIME),
                );
                v.end();
            }
            MacControlOpcode::PFC => {
                v.begin(
                    "pfc",
                    "MAC Control Priority Flow Control",
                    offset..offset + PFC_LEN,
                );
                let enable = Value::Hex(u64::from(self.pfc_enable()), 4);
                let at = span(offset, field::PFC_ENABLE);
                v.field("enable", "Priority Enable Vector", enable, at);
                v.begin_list("quanta", "Pause Quanta", span(offset, field::PFC_TIME));
                for (i, q) in self.pfc_quanta_all().iter().enumerate() {
                    let at = offset + field::PFC_TIME.start + 2 * i;
                    v.field(
                        "",
                        PRIORITY_LABELS[i],
                        Value::Uint(u64::from(*q)),
                        at..at + 2,
                    );
                }
                v.end_list();
                v.end();
            }
            other => {
                v.begin("macc", "MAC Control", span(offset, field::OPCODE));
                let opcode = Value::Hex(u64::from(other.0), 4);
                v.field("opcode", "Opcode", opcode, span(offset, field::OPCODE));
                v.end();
            }
        }
    }
}

const PRIORITY_LABELS: [&str; PRIORITIES] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub fn set_opcode(&mut self, value: MacControlOpcode) {
        self.b_mut()[field::OPCODE].copy_from_slice(&value.0.to_be_bytes());
    }
    /// # Panics
    /// When the buffer is shorter than [`PAUSE_LEN`].
    pub fn set_pause_quanta(&mut self, value: u16) {
        self.b_mut()[field::PAUSE_TIME].copy_from_slice(&value.to_be_bytes());
    }
    /// Writes the raw vector, reserved high byte included.
    /// # Panics
    /// When the buffer is shorter than 4 bytes.
    pub fn set_pfc_enable(&mut self, value: u16) {
        self.b_mut()[field::PFC_ENABLE].copy_from_slice(&value.to_be_bytes());
    }
    /// Set or clear bit `priority` of the enable vector, keeping the others;
    /// priorities ≥ 8 are ignored.
    pub fn set_priority_enabled(&mut self, priority: u8, on: bool) {
        if priority < 8 {
            let bit = 1u16 << priority;
            let pev = self.pfc_enable();
            self.set_pfc_enable(if on { pev | bit } else { pev & !bit });
        }
    }
    /// Priorities ≥ 8 are ignored.
    /// # Panics
    /// When the buffer is shorter than [`PFC_LEN`].
    pub fn set_pfc_quanta(&mut self, priority: u8, value: u16) {
        if usize::from(priority) < PRIORITIES {
            let at = field::PFC_TIME.start + 2 * usize::from(priority);
            self.b_mut()[at..at + 2].copy_from_slice(&value.to_be_bytes());
        }
    }
    /// # Panics
    /// When the buffer is shorter than [`PFC_LEN`].
    pub fn set_pfc_quanta_all(&mut self, value: [u16; 8]) {
        for (priority, quanta) in (0u8..).zip(value) {
            self.set_pfc_quanta(priority, quanta);
        }
    }
}

/// A MAC Control frame's meaning (padding left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Repr {
    /// 802.3x PAUSE: all priorities, `quanta` 0 = resume.
    Pause { quanta: u16 },
    /// 802.1Qbb PFC: `enable` as on the wire, `quanta[n]` for priority n.
    Pfc { enable: u16, quanta: [u16; 8] },
    /// Any other opcode, body not interpreted. Never PAUSE or PFC: such a
    /// Repr emits only the opcode, which does not parse back.
    Other { opcode: MacControlOpcode },
}

impl Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(match packet.opcode() {
            MacControlOpcode::PAUSE => Repr::Pause {
                quanta: packet.pause_quanta(),
            },
            MacControlOpcode::PFC => Repr::Pfc {
                enable: packet.pfc_enable(),
                quanta: packet.pfc_quanta_all(),
            },
            opcode => Repr::Other { opcode },
        })
    }

    #[must_use]
    pub const fn opcode(&self) -> MacControlOpcode {
        match *self {
            Repr::Pause { .. } => MacControlOpcode::PAUSE,
            Repr::Pfc { .. } => MacControlOpcode::PFC,
            Repr::Other { opcode } => opcode,
        }
    }

    /// The opcode's 2 bytes.
    #[must_use]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes [`emit`](Self::emit) writes: 4 (PAUSE), 20 (PFC) or 2 (other).
    /// Padding to the 60-byte minimum frame is the builder's job.
    #[must_use]
    pub const fn buffer_len(&self) -> usize {
        match *self {
            Repr::Pause { .. } => PAUSE_LEN,
            Repr::Pfc { .. } => PFC_LEN,
            Repr::Other { .. } => HEADER_LEN,
        }
    }

    /// For PFC: bit `priority` of the enable vector (`false` for ≥ 8 and for PAUSE/other).
    #[must_use]
    pub const fn priority_enabled(&self, priority: u8) -> bool {
        match *self {
            Repr::Pfc { enable, .. } => priority < 8 && enable & (1 << priority) != 0,
            _ => false,
        }
    }

    /// Write `buffer_len()` bytes. `packet` must hold at least that many.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_opcode(self.opcode());
        match *self {
            Repr::Pause { quanta } => packet.set_pause_quanta(quanta),
            Repr::Pfc { enable, quanta } => {
                packet.set_pfc_enable(enable);
                packet.set_pfc_quanta_all(quanta);
            }
            Repr::Other { .. } => {}
        }
    }
}

/// nom adapter used by `stack.rs`: the view holds exactly the interpreted
/// body (2, 4 or 20 bytes); the rest is padding.
// `stack.rs` composes with `new_checked` today; kept for nom composition.
#[allow(dead_code)]
pub(crate) fn parse(i: &[u8]) -> PResult<'_, Packet<&[u8]>> {
    let (_, opcode) = error::take_complete(i, HEADER_LEN)?;
    let len = Packet::new_unchecked(opcode).opcode().body_len();
    let (rest, body) = error::take_complete(i, len)?;
    Ok((rest, Packet::new_unchecked(body)))
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Repr::Pause { quanta } => write!(f, "PAUSE quanta={quanta}"),
            Repr::Pfc { enable, quanta } => {
                write!(f, "PFC enable={enable:#06x}")?;
                for (priority, q) in (0u8..).zip(quanta) {
                    if self.priority_enabled(priority) {
                        write!(f, " p{priority}={q}")?;
                    }
                }
                Ok(())
            }
            Repr::Other { opcode } => write!(f, "MAC Control opcode={opcode}"),
        }
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Repr::parse(&Packet::new_unchecked(self.b())) {
            Ok(repr) => write!(f, "{repr}"),
            Err(err) => write!(f, "MAC Control ({err})"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// PFC XOFF for priority 3 (RoCE's usual lossless class), max quanta,
    /// followed by the first padding bytes; body offsets (frame offset − 14).
    static BYTES: [u8; 24] = [
        0x01, 0x01, // opcode PFC
        0x00, 0x08, // enable vector: priority 3
        0x00, 0x00, // time[0]
        0x00, 0x00, // time[1]
        0x00, 0x00, // time[2]
        0xff, 0xff, // time[3] = 65535 quanta
        0x00, 0x00, // time[4]
        0x00, 0x00, // time[5]
        0x00, 0x00, // time[6]
        0x00, 0x00, // time[7]
        0x00, 0x00, 0x00, 0x00, // padding (to the 60-byte minimum)
    ];

    /// 802.3x PAUSE, max quanta.
    static PAUSE_BYTES: [u8; 4] = [
        0x00, 0x01, // opcode PAUSE
        0xff, 0xff, // pause_time 65535
    ];

    fn repr() -> Repr {
        Repr::Pfc {
            enable: 0x0008,
            quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.opcode(), MacControlOpcode::PFC);
        assert_eq!(p.pfc_enable(), 0x0008);
        assert!(p.priority_enabled(3));
        assert!(!p.priority_enabled(0) && !p.priority_enabled(4));
        assert!(!p.priority_enabled(11));
        assert_eq!(p.pfc_quanta(3), 65535);
        assert_eq!(p.pfc_quanta(2), 0);
        assert_eq!(p.pfc_quanta(8), 0);
        assert_eq!(p.pfc_quanta_all(), [0, 0, 0, 65535, 0, 0, 0, 0]);
        assert_eq!(p.padding(), &[0u8; 4]);

        let p = Packet::new_checked(&PAUSE_BYTES[..]).unwrap();
        assert_eq!(p.opcode(), MacControlOpcode::PAUSE);
        assert_eq!(p.pause_quanta(), 65535);
        // a short but valid other-opcode view: accessors do not panic
        let p = Packet::new_checked(&[0x00, 0x02][..]).unwrap();
        assert_eq!(
            (p.pause_quanta(), p.pfc_enable(), p.pfc_quanta_all()),
            (0, 0, [0; 8])
        );
        assert!(p.padding().is_empty());
    }

    #[test]
    fn test_construct() {
        let mut buf = [0u8; 24];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_opcode(MacControlOpcode::PFC);
        p.set_priority_enabled(3, true);
        p.set_priority_enabled(9, true); // ignored
        p.set_pfc_quanta(3, 65535);
        p.set_pfc_quanta(8, 1); // ignored
        assert_eq!(buf, BYTES);

        let mut buf = [0u8; 4];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_opcode(MacControlOpcode::PAUSE);
        p.set_pause_quanta(65535);
        assert_eq!(buf, PAUSE_BYTES);

        // set_priority_enabled keeps the other bits, reserved ones included
        let mut buf = [0x01, 0x01, 0xA5, 0xFF];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_priority_enabled(0, false);
        assert_eq!(p.pfc_enable(), 0xA5FE);
    }

    #[test]
    fn test_parse() {
        assert_eq!(Repr::parse(&Packet::new_unchecked(&BYTES[..])), Ok(repr()));
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&PAUSE_BYTES[..])),
            Ok(Repr::Pause { quanta: 65535 })
        );
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&[0x00, 0x02, 0x12][..])),
            Ok(Repr::Other {
                opcode: MacControlOpcode(2)
            })
        );
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xAAu8; 24];
        let r = repr();
        assert_eq!(r.buffer_len(), 20);
        r.emit(&mut Packet::new_unchecked(&mut buf[..r.buffer_len()]));
        assert_eq!(buf[..20], BYTES[..20]);
        assert_eq!(buf[20..], [0xAA; 4], "padding is the builder's");

        let mut buf = [0xAAu8; 4];
        Repr::Pause { quanta: 65535 }.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PAUSE_BYTES);

        let other = Repr::Other {
            opcode: MacControlOpcode(0x0002),
        };
        let mut buf = [0xAAu8; 2];
        other.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!((buf, other.buffer_len()), ([0x00, 0x02], 2));
    }

    #[test]
    fn test_truncated() {
        let err = Packet::new_checked(&BYTES[..1]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated MAC Control at offset 0: need 2 bytes, have 1"
        );
        let err = Packet::new_checked(&BYTES[..19]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated MAC Control at offset 0: need 20 bytes, have 19"
        );
        let err = Packet::new_checked(&PAUSE_BYTES[..3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "truncated MAC Control at offset 0: need 4 bytes, have 3"
        );
        assert!(Repr::parse(&Packet::new_unchecked(&BYTES[..5])).is_err());
    }

    #[test]
    fn test_nom_parse() {
        let (rest, p) = parse(&BYTES[..]).unwrap();
        assert_eq!((rest.len(), p.into_inner().len()), (4, 20));
        let (rest, p) = parse(&[0x00, 0x01, 0x00, 0x10, 0x00][..]).unwrap();
        assert_eq!((rest, p.pause_quanta()), (&[0x00][..], 16));
        assert!(parse(&BYTES[..19]).is_err());
        assert!(parse(&BYTES[..1]).is_err());
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "PFC enable=0x0008 p3=65535");
        assert_eq!(
            Repr::Pfc {
                enable: 0x0081,
                quanta: [1, 2, 3, 4, 5, 6, 7, 0]
            }
            .to_string(),
            "PFC enable=0x0081 p0=1 p7=0"
        );
        assert_eq!(
            Repr::Pause { quanta: 65535 }.to_string(),
            "PAUSE quanta=65535"
        );
        assert_eq!(
            Repr::Other {
                opcode: MacControlOpcode(0x0002)
            }
            .to_string(),
            "MAC Control opcode=0x0002"
        );
        assert_eq!(
            Packet::new_unchecked(&BYTES[..]).to_string(),
            repr().to_string()
        );
        assert_eq!(
            Packet::new_unchecked(&BYTES[..3]).to_string(),
            "MAC Control (truncated MAC Control at offset 0: need 20 bytes, have 3)"
        );
    }

    #[test]
    fn test_quanta_to_ns() {
        assert_eq!(quanta_to_ns(65535, 100_000_000_000), 335_539);
        assert_eq!(quanta_to_ns(65535, 10_000_000_000), 3_355_392);
        assert_eq!(quanta_to_ns(1, 10_000_000_000), 51);
        assert_eq!(quanta_to_ns(65535, 0), 0);
        assert_eq!(quanta_to_ns(0, 100_000_000_000), 0);
        assert_eq!(quanta_to_ns(65535, 1), 33_553_920_000_000_000);
        assert_eq!(quanta_to_ns(65535, u64::MAX), 0);
    }

    #[test]
    fn test_pause_dst() {
        assert_eq!(PAUSE_DST.to_string(), "01:80:c2:00:00:01");
        assert!(PAUSE_DST.is_multicast());
    }

    proptest! {
        #[test]
        fn roundtrip_mac_control(repr in crate::strategy::mac_control()) {
            let mut buf = [0u8; PFC_LEN];
            let len = repr.buffer_len();
            repr.emit(&mut Packet::new_unchecked(&mut buf[..len]));
            prop_assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..len])), Ok(repr));
        }

        #[test]
        fn roundtrip_mac_control_bytes(
            opcode in prop_oneof![Just(0x0001u16), Just(0x0101u16), any::<u16>()],
            body in any::<[u8; PFC_LEN]>(),
        ) {
            let mut bytes = body;
            bytes[field::OPCODE].copy_from_slice(&opcode.to_be_bytes());
            let len = MacControlOpcode(opcode).body_len();
            let repr = Repr::parse(&Packet::new_unchecked(&bytes[..len])).unwrap();
            let mut out = [0u8; PFC_LEN];
            prop_assert_eq!(repr.buffer_len(), len);
            repr.emit(&mut Packet::new_unchecked(&mut out[..len]));
            prop_assert_eq!(&out[..len], &bytes[..len]);
        }

        #[test]
        fn parse_any_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            if let Ok(p) = Packet::new_checked(&bytes[..]) {
                let _ = (p.pause_quanta(), p.pfc_quanta_all(), p.padding(), p.to_string());
                let _ = Repr::parse(&p);
            }
        }
    }
}
