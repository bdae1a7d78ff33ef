//! `tcp_bth` over TCP (interfaces.md §7, tcp_bth.md §d): per TCP connection
//! direction, the TCP-level classification of data segments (§d.1 step 4)
//! and message reassembly from MSN/MBO/MLEN (§d.1 steps 5–6).
//!
//! Classification of a data segment carrying a `tcp_bth` option, on sequence
//! numbers relative to the SYN's ISN + 1 (or the first segment seen):
//! - bytes all seen before: a retransmission when its TSval is newer than
//!   every TSval seen in the direction, else a duplicate;
//! - starting beyond the highest byte seen: it opens a gap;
//! - never seen and below the highest byte seen: a late fill, a
//!   retransmission when its TSval is newer, else a reordered original.
//!
//! Every classification is also a finding (`tcp_bth_gap`,
//! `tcp_bth_out_of_order`, `tcp_bth_retransmission`, `tcp_bth_duplicate`,
//! `tcp_bth_icrc_error`), as is every §d.2 consistency check below. Checks run
//! on segments bringing new bytes (copies and retransmissions are left to the
//! TCP-level kinds) and, but for SEG continuity, do not depend on arrival
//! order, so reordering alone never makes a sender-side finding:
//! - `tcp_bth_offset_mismatch`: `seq + prefix − MBO` differs from the
//!   message's first segment;
//! - `tcp_bth_length`: `MBO + data_len > MLEN`, a LAST/ONLY with
//!   `MBO + data_len != MLEN`, or MLEN changing within a message (v1 only);
//! - `tcp_bth_opcode_grammar`: the opcode's place does not fit the offset
//!   (FIRST/ONLY at MBO 0, MIDDLE/LAST after it), MS disagrees with the
//!   opcode (1 on FIRST/MIDDLE, 0 on LAST/ONLY), the family changes within a
//!   message, or the opcode is no data opcode (ACKNOWLEDGE, reserved);
//! - `tcp_bth_msn_gap` / `tcp_bth_msn_regression`: between a message and
//!   its neighbours in sequence order, the MSN jumps by more than 1 with no
//!   TCP hole between them, or goes down;
//! - `tcp_bth_contiguity`: MSN n + 1 does not start right where MSN n ends
//!   (v1, where MLEN gives the end);
//! - `tcp_bth_seg_continuity`: SEG is not the previous segment's SEG + 1
//!   (mod 256) within a message, in arrival order (SEG 0 expected at MBO 0);
//! - `tcp_bth_missing_first`: the first segment seen of a message is not at
//!   MBO 0 (its FIRST not captured yet: lost, reordered, or the capture
//!   started within the message).
//!
//! - `tcp_bth_immediate` (v1): IMM ≠ 0 on a LAST or ONLY opcode without
//!   immediate data or an R_Key to invalidate (FIRST and MIDDLE repeat the
//!   message's IMM), or IMM changing within a message;
//! - `tcp_bth_read_pairing`: READ RESPONSE messages pair with the opposite
//!   direction's READ REQUESTs in FIFO order (§c.4); a response whose MLEN is
//!   not the request's RETH DMALen, or a response with no request left;
//! - `tcp_bth_inconsistent_retransmit`: a copy of a segment already seen (same
//!   byte range) whose option or payload bytes differ from the first copy's;
//! - `tcp_bth_no_payload` (informational): a data-form option on a segment
//!   that carries no payload (a pure ACK, SYN, RST or FIN);
//! - `tcp_bth_coalesced` (informational): more payload than the peer's MSS, or
//!   than MLEN − MBO: a capture before TSO or after LRO, where the option
//!   describes the first wire segment only (its length check is skipped).
//!
//! At the end of the capture (§d.1 step 4): a hole the peer's cumulative ACK
//! went past was delivered and only missed by the capture (`not_captured`, one
//! event each); the other holes are `unrecovered`. A message whose FIRST was
//! never captured is partial (`partial_messages`, one `tcp_bth_missing_first`
//! verdict each, at its first captured segment).
//!
//! `anomalies` counts the sender-side checks (offset, length, grammar, MSN,
//! contiguity, immediate, READ pairing, inconsistent retransmit); SEG
//! continuity and missing FIRST follow from loss and reordering in the network,
//! and no-payload and coalesced segments from how the capture was made, and are
//! left out of it.

// Indexing cannot panic here: message maps are indexed by keys taken from the same map; byte slices
// follow a length check.
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::net::IpAddr;

use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::Dissected;
use rocescope_dissectors::tcp::TcpOption;
use rocescope_dissectors::tcp_bth::{Format, IcrcAlgorithm};

use super::finding::{Detail, Finding, Kind};

/// One row of the report's `tcp_bth` section.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TcpBthRow {
    pub src: String,
    pub dst: String,
    pub srcport: u16,
    pub dstport: u16,
    pub segments: u64,
    pub messages: u64,
    pub gaps: u64,
    pub out_of_order: u64,
    pub retransmissions: u64,
    pub duplicates: u64,
    pub icrc_errors: u64,
    /// Holes still open at the end that the peer never acknowledged.
    pub unrecovered: u64,
    /// Holes the peer's cumulative ACK went past: delivered, missed by the capture.
    pub not_captured: u64,
    /// Messages whose FIRST segment was never captured.
    pub partial_messages: u64,
    pub anomalies: u64,
}

/// Copies of segments remembered per direction for the inconsistent-retransmit check.
const COPIES_MAX: usize = 4096;
/// READ requests waiting for their responses, per direction.
const READS_MAX: usize = 4096;

/// A TCP direction: source, destination, source port, destination port.
pub type Key = (IpAddr, IpAddr, u16, u16);

/// One message of a direction (§d.1 step 5).
#[derive(Debug, Clone)]
struct Msg {
    /// Relative sequence number of the message's first data byte.
    data_start: u64,
    /// Relative sequence number of the message's first byte (prefix included).
    start: u64,
    /// MLEN (`u32::MAX` for `enf_bth`, which has none).
    mlen: u32,
    /// A segment with MS = 0 was seen.
    last: bool,
    family: Family,
    /// SEG of the previous new segment of the message, in arrival order.
    seg: u8,
    /// IMM of its first captured segment (v1).
    imm: u32,
    /// Its first captured segment.
    frame: u64,
    time_ns: u64,
}

#[derive(Debug, Default)]
struct Dir {
    /// Raw sequence number that is relative 0.
    base: Option<u32>,
    last_raw: u32,
    last_rel: u64,
    /// Seen byte ranges (start -> end), relative.
    seen: BTreeMap<u64, u64>,
    max_end: u64,
    max_tsval: Option<u32>,
    msgs: BTreeMap<u16, Msg>,
    /// Message start (relative sequence number) -> MSN.
    by_start: BTreeMap<u64, u16>,
    row: Option<TcpBthRow>,
    /// MSS this direction's SYN announced (what the other direction may send).
    mss: Option<u16>,
    /// The other direction's highest cumulative ACK of this direction's bytes (relative),
    /// with its frame and time.
    peer_ack: Option<(u64, u64, u64)>,
    /// First copies of segments: start -> (end, hash of option and payload).
    copies: BTreeMap<u64, (u64, u32)>,
    /// READ requests sent in this direction, not yet answered: (MSN, DMALen).
    reads: VecDeque<(u16, u32)>,
}

impl Dir {
    /// `seq` relative to the direction's base, unwrapped against the highest seen.
    fn peek_rel(&self, seq: u32) -> Option<u64> {
        let base = self.base?;
        let (raw, rel) = if self.last_rel == 0 && self.last_raw == 0 {
            (base, 0)
        } else {
            (self.last_raw, self.last_rel)
        };
        #[allow(clippy::cast_possible_wrap)]
        let d = i64::from(seq.wrapping_sub(raw) as i32);
        Some(rel.saturating_add_signed(d))
    }

    fn rel(&mut self, seq: u32) -> u64 {
        let base = *self.base.get_or_insert(seq);
        if self.last_rel == 0 && self.last_raw == 0 {
            self.last_raw = base;
        }
        #[allow(clippy::cast_possible_wrap)]
        let d = i64::from(seq.wrapping_sub(self.last_raw) as i32);
        let rel = self.last_rel.saturating_add_signed(d);
        if d > 0 {
            self.last_raw = seq;
            self.last_rel = rel;
        }
        rel
    }

    /// The other direction acknowledged this direction's bytes up to `ack` (raw).
    fn peer_acked(&mut self, ack: u32, frame: u64, time_ns: u64) {
        let Some(rel) = self.peek_rel(ack) else {
            return;
        };
        if self.peer_ack.is_none_or(|(a, _, _)| rel > a) {
            self.peer_ack = Some((rel, frame, time_ns));
        }
    }

    /// Holes below the highest byte seen, `[start, end)`.
    fn holes(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut prev = 0;
        for (&s, &e) in &self.seen {
            if s > prev {
                out.push((prev, s));
            }
            prev = prev.max(e);
        }
        out
    }

    fn covered(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        for (&s, &e) in self.seen.range(..end) {
            if e <= at {
                continue;
            }
            if s > at {
                return false;
            }
            at = at.max(e);
        }
        at >= end
    }

    fn any_seen(&self, start: u64, end: u64) -> bool {
        self.seen.range(..end).any(|(_, &e)| e > start)
    }

    fn insert(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        let overlapping: Vec<(u64, u64)> = self
            .seen
            .range(..=end)
            .filter(|&(_, &x)| x >= start)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in overlapping {
            self.seen.remove(&a);
            s = s.min(a);
            e = e.max(b);
        }
        self.seen.insert(s, e);
    }
}

/// Opcode family (§c.4): the operation a message's opcodes share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    AtomicAck,
    Atomic,
}

/// Place of a segment in its message, per its opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    First,
    Middle,
    Last,
    Only,
}

impl Place {
    const fn name(self) -> &'static str {
        match self {
            Place::First => "FIRST",
            Place::Middle => "MIDDLE",
            Place::Last => "LAST",
            Place::Only => "ONLY",
        }
    }
}

/// Family and place of a data opcode (§c.4); `None` for ACKNOWLEDGE and reserved ones.
fn classify(opcode: u8) -> Option<(Family, Place)> {
    use Family::{Atomic, AtomicAck, ReadRequest, ReadResponse, Send, Write};
    use Place::{First, Last, Middle, Only};
    Some(match opcode {
        0x00 => (Send, First),
        0x01 => (Send, Middle),
        0x02 | 0x03 | 0x16 => (Send, Last),
        0x04 | 0x05 | 0x17 => (Send, Only),
        0x06 => (Write, First),
        0x07 => (Write, Middle),
        0x08 | 0x09 => (Write, Last),
        0x0A | 0x0B => (Write, Only),
        0x0C => (ReadRequest, Only),
        0x0D => (ReadResponse, First),
        0x0E => (ReadResponse, Middle),
        0x0F => (ReadResponse, Last),
        0x10 => (ReadResponse, Only),
        0x12 => (AtomicAck, Only),
        0x13 | 0x14 => (Atomic, Only),
        _ => return None,
    })
}

/// FNV-1a over the parts: enough to tell two copies of a segment apart.
fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811C_9DC5;
    for p in parts {
        for &b in *p {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// Opcodes whose IMM field carries immediate data or an R_Key to invalidate (§c.4).
const fn carries_imm(opcode: u8) -> bool {
    matches!(opcode, 0x03 | 0x05 | 0x09 | 0x0B | 0x16 | 0x17)
}

/// Bytes of extended headers before a message's data, in its first segment (§c.4).
const fn family_prefix(family: Family) -> u64 {
    match family {
        Family::Write | Family::ReadRequest => 16,
        Family::Atomic => 28,
        Family::AtomicAck => 8,
        Family::Send | Family::ReadResponse => 0,
    }
}

/// RFC 1982 difference `a − b` of 16-bit MSNs.
#[allow(clippy::cast_possible_wrap)]
const fn msn_diff(a: u16, b: u16) -> i16 {
    a.wrapping_sub(b) as i16
}

/// Whether a finding is a sender-side §d.2 check (counted in `anomalies`).
const fn sender_side(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::TcpBthOffsetMismatch
            | Kind::TcpBthContiguity
            | Kind::TcpBthMsnGap
            | Kind::TcpBthMsnRegression
            | Kind::TcpBthOpcodeGrammar
            | Kind::TcpBthLength
            | Kind::TcpBthImmediate
            | Kind::TcpBthReadPairing
            | Kind::TcpBthInconsistentRetransmit
    )
}

/// The fields of one data segment the tracker uses (from a frame, or built by hand in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub seq: u32,
    pub payload_len: u64,
    pub tsval: Option<u32>,
    pub icrc_bad: bool,
    /// v1 (has MLEN), else `enf_bth`.
    pub v1: bool,
    pub opcode: u8,
    pub more: bool,
    pub msn: u16,
    pub mbo: u32,
    pub seg: u8,
    pub mlen: u32,
    /// IMM (v1; 0 for `enf_bth`).
    pub imm: u32,
    /// A hash of the option and payload bytes, when the payload was captured whole.
    pub content: Option<u32>,
    /// A READ REQUEST's RETH DMALen (its payload prefix), when captured.
    pub read_len: Option<u32>,
}

/// TCP-level class of a data segment (§d.1 step 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    InOrder,
    Gap,
    OutOfOrder,
    Retransmission,
    Duplicate,
    /// Partly new, partly seen (overlap): counted as nothing.
    Overlap,
}

/// Per-direction `tcp_bth` state; fed every TCP frame.
#[derive(Debug, Default)]
pub struct TcpBthTracker {
    dirs: BTreeMap<Key, Dir>,
}

impl TcpBthTracker {
    /// One TCP frame (`frame` number, capture time); returns whether it carries a
    /// `tcp_bth` option. Findings of the frame are appended to `out`.
    pub fn frame(
        &mut self,
        d: &Dissected<'_>,
        frame: u64,
        time_ns: u64,
        out: &mut Vec<Finding>,
    ) -> bool {
        let Some(tcp) = d.tcp.as_ref() else {
            return false;
        };
        let (src, dst): (IpAddr, IpAddr) = if let Some(ip) = d.ipv4() {
            (ip.src_addr().into(), ip.dst_addr().into())
        } else if let Some(ip) = d.ipv6() {
            (ip.src_addr().into(), ip.dst_addr().into())
        } else {
            return false;
        };
        let bth = d.tcp_bth();
        let key = (src, dst, tcp.src_port(), tcp.dst_port());
        let flags = tcp.flags();
        // an ACK of this direction acknowledges the other direction's bytes
        if flags.ack() {
            let reverse = (dst, src, tcp.dst_port(), tcp.src_port());
            if let Some(r) = self.dirs.get_mut(&reverse) {
                r.peer_acked(tcp.ack_number(), frame, time_ns);
            }
        }
        if flags.syn() {
            let dir = self.dirs.entry(key).or_default();
            if dir.base.is_none() {
                dir.base = Some(tcp.seq_number().wrapping_add(1));
            }
            dir.mss = tcp.options().find_map(|o| match o {
                Ok(TcpOption::MaxSegmentSize(m)) => Some(m),
                _ => None,
            });
        }
        let Some(bth) = bth else {
            return false;
        };
        let h = bth.header;
        let payload_len = d.tcp_payload_len() as u64;
        let format = h.format();
        if !matches!(format, Some(Format::V1 | Format::Enf)) {
            return true;
        }
        if payload_len == 0 || flags.syn() {
            // a data-form option with no data to describe
            out.push(Finding {
                frame,
                time_ns,
                kind: Kind::TcpBthNoPayload,
                flow: None,
                psn: None,
                detail: Detail::Text(format!(
                    "tcp_bth data option (MSN {}) on a segment without payload{}",
                    h.msn(),
                    if flags.syn() { " (SYN)" } else { "" }
                )),
            });
            return true;
        }
        let v1 = format == Some(Format::V1);
        let content = bth
            .payload_complete
            .then(|| fnv1a(&[h.into_inner(), bth.payload]));
        let opcode = h.opcode().0;
        let read_len = (opcode == 0x0C)
            .then(|| bth.payload.get(12..16))
            .flatten()
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let seg = Segment {
            seq: tcp.seq_number(),
            payload_len,
            tsval: tcp.timestamps().map(|t| t.0),
            icrc_bad: matches!(
                bth.icrc_status(IcrcAlgorithm::Crc32Ieee),
                IcrcStatus::Invalid { .. }
            ),
            v1,
            opcode,
            more: h.more(),
            msn: h.msn(),
            mbo: h.mbo(),
            seg: h.seg(),
            mlen: h.mlen(),
            imm: if v1 { h.imm() } else { 0 },
            content,
            read_len,
        };
        self.segment(key, &seg, frame, time_ns, out);
        true
    }

    /// One data segment with a v1 or `enf_bth` option, of direction `key`.
    pub fn segment(
        &mut self,
        key: Key,
        s: &Segment,
        frame: u64,
        time_ns: u64,
        out: &mut Vec<Finding>,
    ) {
        let before = out.len();
        let reverse = (key.1, key.0, key.3, key.2);
        let mss = self.dirs.get(&reverse).and_then(|d| d.mss);
        let mut new_response: Option<u32> = None;
        let mut emit = |kind: Kind, text: String| {
            out.push(Finding {
                frame,
                time_ns,
                kind,
                flow: None,
                psn: None,
                detail: Detail::Text(text),
            });
        };
        let dir = self.dirs.entry(key).or_default();
        let row = dir.row.get_or_insert_with(|| TcpBthRow {
            src: key.0.to_string(),
            dst: key.1.to_string(),
            srcport: key.2,
            dstport: key.3,
            segments: 0,
            messages: 0,
            gaps: 0,
            out_of_order: 0,
            retransmissions: 0,
            duplicates: 0,
            icrc_errors: 0,
            unrecovered: 0,
            not_captured: 0,
            partial_messages: 0,
            anomalies: 0,
        });
        row.segments += 1;
        let a0 = dir.rel(s.seq);
        let a1 = a0 + s.payload_len;
        let newer = match (s.tsval, dir.max_tsval) {
            (Some(t), Some(m)) => {
                #[allow(clippy::cast_possible_wrap)]
                let d = t.wrapping_sub(m) as i32;
                d > 0
            }
            (Some(_), None) => true,
            _ => false,
        };
        let class = if dir.covered(a0, a1) {
            if newer {
                Class::Retransmission
            } else {
                Class::Duplicate
            }
        } else if a0 > dir.max_end {
            Class::Gap
        } else if a0 < dir.max_end && !dir.any_seen(a0, a1) {
            if newer {
                Class::Retransmission
            } else {
                Class::OutOfOrder
            }
        } else if a0 == dir.max_end {
            Class::InOrder
        } else {
            Class::Overlap
        };
        let fresh = !dir.covered(a0, a1);
        let hole = (dir.max_end, a0);
        if let Some(row) = dir.row.as_mut() {
            match class {
                Class::Gap => row.gaps += 1,
                Class::OutOfOrder => row.out_of_order += 1,
                Class::Retransmission => row.retransmissions += 1,
                Class::Duplicate => row.duplicates += 1,
                Class::InOrder | Class::Overlap => {}
            }
            if s.icrc_bad {
                row.icrc_errors += 1;
            }
        }
        // Formatted only when an event is emitted: most segments emit none.
        let range = SegRange {
            a0,
            a1,
            msn: s.msn,
            seg: s.seg,
        };
        match class {
            Class::Gap => emit(
                Kind::TcpBthGap,
                format!("{} bytes missing before {range}", hole.1 - hole.0),
            ),
            Class::OutOfOrder => emit(
                Kind::TcpBthOutOfOrder,
                format!("late original (older TSval), {range}"),
            ),
            Class::Retransmission if fresh => emit(
                Kind::TcpBthRetransmission,
                format!("resent with a newer TSval, fills a hole (lost), {range}"),
            ),
            Class::Retransmission => emit(
                Kind::TcpBthRetransmission,
                format!("resent with a newer TSval, already seen, {range}"),
            ),
            Class::Duplicate => emit(
                Kind::TcpBthDuplicate,
                format!("already seen, same or older TSval (network or capture copy), {range}"),
            ),
            Class::InOrder | Class::Overlap => {}
        }
        if s.icrc_bad {
            emit(Kind::TcpBthIcrcError, format!("ICRC mismatch, {range}"));
        }
        // a copy of a segment seen before must carry the same option and payload (§c.3
        // invariant 5); a different split of the bytes is a resegmentation, not checked
        if let Some(h) = s.content {
            match dir.copies.get(&a0) {
                Some(&(end, first)) if end == a1 && first != h => emit(
                    Kind::TcpBthInconsistentRetransmit,
                    format!("copy differs from the first copy's option or payload, {range}"),
                ),
                Some(_) => {}
                None if fresh => {
                    if dir.copies.len() >= COPIES_MAX {
                        dir.copies.pop_first();
                    }
                    dir.copies.insert(a0, (a1, h));
                }
                None => {}
            }
        }
        if let Some(t) = s.tsval
            && (newer || dir.max_tsval.is_none())
        {
            dir.max_tsval = Some(t);
        }
        dir.insert(a0, a1);
        dir.max_end = dir.max_end.max(a1);

        // message attachment (§d.1 step 5) and the §d.2 checks
        let retransmitted = matches!(class, Class::Retransmission | Class::Duplicate);
        let msn = s.msn;
        let Some((family, place)) = classify(s.opcode) else {
            emit(
                Kind::TcpBthOpcodeGrammar,
                format!("opcode 0x{:02x} carries no message data, {range}", s.opcode),
            );
            if let Some(row) = dir.row.as_mut() {
                row.anomalies += 1;
            }
            return;
        };
        let mbo = u64::from(s.mbo);
        let first = s.mbo == 0 && matches!(place, Place::First | Place::Only);
        let prefix = if first { family_prefix(family) } else { 0 };
        let data_len = s.payload_len.saturating_sub(prefix);
        let data_start = (a0 + prefix).saturating_sub(mbo);
        let start = data_start.saturating_sub(family_prefix(family));
        let mlen = if s.v1 { s.mlen } else { u32::MAX };
        let end = mbo + data_len;
        let known = dir.msgs.get(&msn).cloned();
        // more payload than the peer's MSS lets one wire segment carry
        let coalesced = mss.is_some_and(|m| s.payload_len > u64::from(m));
        if !retransmitted {
            // opcode grammar: place against offset, MS against place
            match place {
                Place::First | Place::Only if s.mbo != 0 => emit(
                    Kind::TcpBthOpcodeGrammar,
                    format!(
                        "{} at MBO {} (must start the message), {range}",
                        place.name(),
                        s.mbo
                    ),
                ),
                Place::Middle | Place::Last if s.mbo == 0 => emit(
                    Kind::TcpBthOpcodeGrammar,
                    format!(
                        "{} at MBO 0 (FIRST or ONLY expected), {range}",
                        place.name()
                    ),
                ),
                _ => {}
            }
            let ms = matches!(place, Place::First | Place::Middle);
            if s.more != ms {
                emit(
                    Kind::TcpBthOpcodeGrammar,
                    format!("MS={} on a {}, {range}", u8::from(s.more), place.name()),
                );
            }
            if let Some(m) = &known
                && m.family != family
            {
                emit(
                    Kind::TcpBthOpcodeGrammar,
                    format!("opcode family changes within the message, {range}"),
                );
            }
            // immediate data: only on the opcodes that carry it, the same in every segment
            if s.v1 {
                // (FIRST and MIDDLE repeat the message's IMM; only its LAST or ONLY opcode
                // says whether it has one)
                if s.imm != 0 && !s.more && !carries_imm(s.opcode) {
                    emit(
                        Kind::TcpBthImmediate,
                        format!(
                            "IMM 0x{:08x} on opcode 0x{:02x}, which carries none, {range}",
                            s.imm, s.opcode
                        ),
                    );
                }
                if let Some(m) = known.as_ref().filter(|m| m.imm != s.imm) {
                    emit(
                        Kind::TcpBthImmediate,
                        format!(
                            "IMM 0x{:08x} changes from 0x{:08x} within the message, {range}",
                            s.imm, m.imm
                        ),
                    );
                }
            }
            // length, unless the segment is several wire segments captured as one
            if coalesced {
                emit(
                    Kind::TcpBthCoalesced,
                    format!(
                        "{} payload bytes{}: a capture before TSO or after LRO, the option \
                         describes the first wire segment only, {range}",
                        s.payload_len,
                        mss.map_or(String::new(), |m| format!(" > MSS {m}"))
                    ),
                );
            } else if s.v1 {
                if end > u64::from(mlen) {
                    let why = if mss.is_none() {
                        " (or a coalesced capture: no MSS seen to tell)"
                    } else {
                        ""
                    };
                    emit(
                        Kind::TcpBthLength,
                        format!("MBO + data length {end} > MLEN {mlen}{why}, {range}"),
                    );
                } else if !s.more && end != u64::from(mlen) {
                    emit(
                        Kind::TcpBthLength,
                        format!("last segment ends at {end}, MLEN {mlen}, {range}"),
                    );
                }
                if let Some(m) = known.as_ref().filter(|m| m.mlen != mlen) {
                    emit(
                        Kind::TcpBthLength,
                        format!(
                            "MLEN {mlen} changes from {} within the message, {range}",
                            m.mlen
                        ),
                    );
                }
            }
        }
        match known {
            Some(m) => {
                if m.data_start != data_start {
                    emit(
                        Kind::TcpBthOffsetMismatch,
                        format!(
                            "message data starts at seq {data_start}, first segment said {}, {range}",
                            m.data_start
                        ),
                    );
                }
                if !retransmitted && s.seg != m.seg.wrapping_add(1) {
                    emit(
                        Kind::TcpBthSegContinuity,
                        format!(
                            "SEG {} after SEG {} (lost or reordered), {range}",
                            s.seg, m.seg
                        ),
                    );
                }
            }
            None => {
                if s.mbo != 0 {
                    emit(
                        Kind::TcpBthMissingFirst,
                        format!("{} seen, FIRST not captured, {range}", place.name()),
                    );
                } else if !retransmitted && s.seg != 0 {
                    emit(
                        Kind::TcpBthSegContinuity,
                        format!("SEG {} on the first segment (0 expected), {range}", s.seg),
                    );
                }
                // neighbours in sequence order: MSN continuity and contiguity
                let msg = Msg {
                    data_start,
                    start,
                    mlen,
                    last: false,
                    family,
                    seg: s.seg,
                    imm: s.imm,
                    frame,
                    time_ns,
                };
                if family == Family::ReadRequest && !retransmitted {
                    if dir.reads.len() >= READS_MAX {
                        dir.reads.pop_front();
                    }
                    dir.reads.push_back((msn, s.read_len.unwrap_or(u32::MAX)));
                }
                if family == Family::ReadResponse && !retransmitted {
                    new_response = Some(mlen);
                }
                let before = dir.by_start.range(..start).next_back().map(|(_, &n)| n);
                let after = dir.by_start.range(start + 1..).next().map(|(_, &n)| n);
                for (lo, hi) in [before.map(|n| (n, msn)), after.map(|n| (msn, n))]
                    .into_iter()
                    .flatten()
                {
                    let a = if lo == msn { &msg } else { &dir.msgs[&lo] };
                    let b = if hi == msn { &msg } else { &dir.msgs[&hi] };
                    let step = msn_diff(hi, lo);
                    let a_end = (a.mlen != u32::MAX).then(|| a.data_start + u64::from(a.mlen));
                    if step <= 0 {
                        emit(
                            Kind::TcpBthMsnRegression,
                            format!(
                                "MSN {hi} at seq {} after MSN {lo} at seq {}, {range}",
                                b.start, a.start
                            ),
                        );
                    } else if step > 1 && dir.covered(a_end.unwrap_or(a.start), b.start) {
                        emit(
                            Kind::TcpBthMsnGap,
                            format!("MSN {lo} then MSN {hi} with no TCP hole between, {range}"),
                        );
                    } else if step == 1
                        && let Some(e) = a_end.filter(|&e| e != b.start)
                    {
                        emit(
                            Kind::TcpBthContiguity,
                            format!(
                                "MSN {hi} starts at seq {}, MSN {lo} ends at seq {e}, {range}",
                                b.start
                            ),
                        );
                    }
                }
                dir.by_start.entry(start).or_insert(msn);
                dir.msgs.insert(msn, msg);
            }
        }
        if let Some(m) = dir.msgs.get_mut(&msn) {
            m.last |= !s.more;
            if !retransmitted {
                m.seg = s.seg;
            }
        }
        // READ pairing (§c.4): responses answer the other direction's requests in order
        if let Some(mlen) = new_response {
            let request = self
                .dirs
                .get_mut(&reverse)
                .and_then(|r| r.reads.pop_front());
            let text = match request {
                None => Some(format!(
                    "READ RESPONSE MSN {msn} with no READ REQUEST left to answer"
                )),
                Some((req, len)) if s.v1 && len != u32::MAX && len != mlen => Some(format!(
                    "READ RESPONSE MSN {msn} of {mlen} bytes answers READ REQUEST MSN {req} \
                     of DMALen {len}"
                )),
                Some(_) => None,
            };
            if let Some(text) = text {
                out.push(Finding {
                    frame,
                    time_ns,
                    kind: Kind::TcpBthReadPairing,
                    flow: None,
                    psn: None,
                    detail: Detail::Text(text),
                });
            }
        }
        let anomalies = out[before..].iter().filter(|f| sender_side(f.kind)).count();
        if let Some(row) = self.dirs.get_mut(&key).and_then(|d| d.row.as_mut()) {
            row.anomalies += anomalies as u64;
        }
    }

    /// End of the capture (§d.1 step 4): holes the peer acknowledged are capture loss
    /// (`not_captured`, an event each), the rest `unrecovered`; a message whose FIRST was
    /// never captured is partial (a `tcp_bth_missing_first` verdict each).
    pub fn finish(&mut self, out: &mut Vec<Finding>) {
        for dir in self.dirs.values_mut() {
            let Some(mut row) = dir.row.take() else {
                continue;
            };
            let acked = dir.peer_ack;
            let (mut nocap, mut open) = (0, 0);
            for (start, end) in dir.holes() {
                match acked.filter(|&(a, _, _)| a >= end) {
                    Some((_, frame, time_ns)) => {
                        nocap += 1;
                        out.push(Finding {
                            frame,
                            time_ns,
                            kind: Kind::NotCaptured,
                            flow: None,
                            psn: None,
                            detail: Detail::Text(format!(
                                "TCP {} > {} seq {start}-{end} ({} bytes) acknowledged by the \
                                 peer, never captured",
                                row.src,
                                row.dst,
                                end - start
                            )),
                        });
                    }
                    None => open += 1,
                }
            }
            row.not_captured = nocap;
            row.unrecovered = open;
            let mut partial = 0;
            for (&msn, m) in &dir.msgs {
                if !dir.covered(m.start, m.start + 1) {
                    partial += 1;
                    out.push(Finding {
                        frame: m.frame,
                        time_ns: m.time_ns,
                        kind: Kind::TcpBthMissingFirst,
                        flow: None,
                        psn: None,
                        detail: Detail::Text(format!(
                            "MSN {msn}: its FIRST was never captured (lost, or the capture \
                             started within the message): the message is partial"
                        )),
                    });
                }
            }
            row.partial_messages = partial;
            dir.row = Some(row);
        }
    }

    /// The report rows, in key order.
    #[must_use]
    pub fn rows(&self) -> Vec<TcpBthRow> {
        let mut out = Vec::new();
        for dir in self.dirs.values() {
            let Some(row) = &dir.row else {
                continue;
            };
            let mut row = row.clone();
            row.messages = dir
                .msgs
                .values()
                .filter(|m| {
                    m.last
                        && m.mlen != u32::MAX
                        && dir.covered(m.data_start, m.data_start + u64::from(m.mlen))
                })
                .count() as u64;
            out.push(row);
        }
        out
    }
}

/// Where a segment sits, for event details: `seq A-B, MSN M SEG S`.
#[derive(Debug, Clone, Copy)]
struct SegRange {
    a0: u64,
    a1: u64,
    msn: u16,
    seg: u8,
}

impl fmt::Display for SegRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seq {}-{}, MSN {} SEG {}",
            self.a0, self.a1, self.msn, self.seg
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::net::Ipv4Addr;

    const ISN: u32 = 1000;

    /// A v1 data segment at relative sequence `rel` (SEND opcodes unless `op` says otherwise).
    #[allow(clippy::too_many_arguments)]
    fn seg(
        rel: u32,
        len: u64,
        ts: u32,
        op: u8,
        more: bool,
        msn: u16,
        mbo: u32,
        n: u8,
        mlen: u32,
    ) -> Segment {
        Segment {
            seq: ISN.wrapping_add(rel),
            payload_len: len,
            tsval: Some(ts),
            icrc_bad: false,
            v1: true,
            opcode: op,
            more,
            msn,
            mbo,
            seg: n,
            mlen,
            imm: 0,
            content: None,
            read_len: None,
        }
    }

    /// A 3000-byte SEND (FIRST 1420, MIDDLE 1420, LAST 160) of MSN `msn` at `rel`, TSvals from `ts`.
    fn send3(rel: u32, msn: u16, ts: u32) -> [Segment; 3] {
        [
            seg(rel, 1420, ts, 0x00, true, msn, 0, 0, 3000),
            seg(rel + 1420, 1420, ts + 1, 0x01, true, msn, 1420, 1, 3000),
            seg(rel + 2840, 160, ts + 2, 0x02, false, msn, 2840, 2, 3000),
        ]
    }

    /// The findings' kinds and the direction's row after `segs`, in that order.
    fn run(segs: &[Segment]) -> (Vec<Kind>, TcpBthRow) {
        let key = (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            40000,
            7471,
        );
        let mut t = TcpBthTracker::default();
        let mut out = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            t.segment(key, s, i as u64 + 1, 0, &mut out);
        }
        t.finish(&mut out);
        for f in &out {
            assert_eq!((f.flow, f.psn), (None, None));
        }
        let row = t.rows().remove(0);
        (out.into_iter().map(|f| f.kind).collect(), row)
    }

    #[test]
    fn clean_messages_make_no_findings() {
        // c.3 invariants 1–4 hold: nothing to report, both messages complete
        let mut segs = send3(0, 1, 10).to_vec();
        segs.extend(send3(3000, 2, 20));
        segs.push(seg(6000, 100, 30, 0x04, false, 3, 0, 0, 100));
        let (kinds, row) = run(&segs);
        assert_eq!(kinds, []);
        assert_eq!((row.messages, row.anomalies, row.segments), (3, 0, 7));
    }

    #[test]
    fn dropped_first() {
        // §d.2: "Dropped FIRST of message 2: a TCP hole, then a retransmission with a
        // newer TSval; 'Missing FIRST' until the retransmission repairs it."
        let [f1, m1, l1] = send3(0, 1, 10);
        let [f2, m2, l2] = send3(3000, 2, 20);
        let mut resent = f2;
        resent.tsval = Some(100);
        let (kinds, row) = run(&[f1, m1, l1, m2, l2, resent]);
        assert_eq!(
            kinds,
            [
                Kind::TcpBthGap,
                Kind::TcpBthMissingFirst,
                Kind::TcpBthRetransmission
            ]
        );
        assert_eq!((row.gaps, row.retransmissions, row.unrecovered), (1, 1, 0));
        // repaired: both messages complete, no sender-side anomaly
        assert_eq!((row.messages, row.anomalies), (2, 0));
        // never repaired: the hole stays, message 2 is not complete, and the end of the
        // capture gives the verdict: partial
        let (kinds, row) = run(&[f1, m1, l1, m2, l2]);
        assert_eq!(
            kinds,
            [
                Kind::TcpBthGap,
                Kind::TcpBthMissingFirst,
                Kind::TcpBthMissingFirst
            ]
        );
        assert_eq!(
            (row.messages, row.unrecovered, row.partial_messages),
            (1, 1, 1)
        );
        assert_eq!(row.not_captured, 0);
    }

    fn key() -> Key {
        (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            40000,
            7471,
        )
    }

    /// Segments of `key()`, then an ACK from the peer up to relative `acked` (if any), then
    /// the end of the capture.
    fn run_acked(segs: &[Segment], acked: Option<u32>) -> (Vec<Finding>, TcpBthRow) {
        let mut t = TcpBthTracker::default();
        let mut out = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            t.segment(key(), s, i as u64 + 1, 0, &mut out);
        }
        if let Some(a) = acked {
            let dir = t.dirs.get_mut(&key()).unwrap();
            dir.peer_acked(ISN.wrapping_add(a), 99, 0);
        }
        t.finish(&mut out);
        let row = t.rows().remove(0);
        (out, row)
    }

    #[test]
    fn acknowledged_hole_is_capture_loss() {
        // §d.1 step 4: the MIDDLE of message 1 never captured, but the peer ACKed past it
        let [f1, _, l1] = send3(0, 1, 10);
        let (out, row) = run_acked(&[f1, l1], Some(3000));
        assert_eq!((row.gaps, row.not_captured, row.unrecovered), (1, 1, 0));
        let nocap: Vec<&Finding> = out.iter().filter(|f| f.kind == Kind::NotCaptured).collect();
        assert_eq!(nocap.len(), 1);
        assert_eq!(nocap[0].frame, 99);
        assert!(
            nocap[0].detail.to_string().contains("seq 1420-2840"),
            "{}",
            nocap[0].detail
        );
        // the ACK stops short of the hole's end: network loss, not repaired
        let (_, row) = run_acked(&[f1, l1], Some(2000));
        assert_eq!((row.not_captured, row.unrecovered), (0, 1));
        let (_, row) = run_acked(&[f1, l1], None);
        assert_eq!((row.not_captured, row.unrecovered), (0, 1));
    }

    #[test]
    fn immediate_data_checks() {
        // IMM on a SEND_LAST without immediate: a finding; on SEND_LAST_WITH_IMM none,
        // unless it changes within the message
        let [f, m, mut l] = send3(0, 1, 10);
        l.imm = 7;
        let (kinds, row) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthImmediate, Kind::TcpBthImmediate]);
        assert_eq!(row.anomalies, 2);
        // FIRST and MIDDLE carry the message's IMM too (repeated in every segment, §c.3)
        let [mut f, mut m, mut l] = send3(0, 1, 10);
        (f.imm, m.imm, l.imm, l.opcode) = (7, 7, 7, 0x03);
        let (kinds, row) = run(&[f, m, l]);
        assert_eq!(kinds, []);
        assert_eq!(row.messages, 1);
        let [f, m, mut l] = send3(0, 1, 10);
        (l.imm, l.opcode) = (9, 0x03);
        let (kinds, _) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthImmediate], "IMM changes at the LAST");
    }

    #[test]
    fn inconsistent_retransmission() {
        let [mut f, mut m, mut l] = send3(0, 1, 10);
        (f.content, m.content, l.content) = (Some(1), Some(2), Some(3));
        let mut same = m;
        same.tsval = Some(50);
        let (kinds, row) = run(&[f, m, l, same]);
        assert_eq!(kinds, [Kind::TcpBthRetransmission]);
        assert_eq!(row.anomalies, 0);
        let mut other = same;
        other.content = Some(22);
        let (kinds, row) = run(&[f, m, l, other]);
        assert_eq!(
            kinds,
            [
                Kind::TcpBthRetransmission,
                Kind::TcpBthInconsistentRetransmit
            ]
        );
        assert_eq!(row.anomalies, 1);
    }

    #[test]
    fn read_pairing_in_fifo_order() {
        let client = key();
        let server = (client.1, client.0, client.3, client.2);
        let mut t = TcpBthTracker::default();
        let mut out = Vec::new();
        // two READ REQUESTs (RETH prefix only, MLEN 0) of 2000 and 500 bytes
        let mut r1 = seg(0, 16, 1, 0x0C, false, 1, 0, 0, 0);
        r1.read_len = Some(2000);
        let mut r2 = seg(16, 16, 2, 0x0C, false, 2, 0, 0, 0);
        r2.read_len = Some(500);
        t.segment(client, &r1, 1, 0, &mut out);
        t.segment(client, &r2, 2, 0, &mut out);
        // answered in order: 2000 bytes ONLY, then 400 bytes (wrong), then one too many
        let a = seg(0, 2000, 1, 0x10, false, 7, 0, 0, 2000);
        let b = seg(2000, 400, 2, 0x10, false, 8, 0, 0, 400);
        let c = seg(2400, 100, 3, 0x10, false, 9, 0, 0, 100);
        t.segment(server, &a, 3, 0, &mut out);
        t.segment(server, &b, 4, 0, &mut out);
        t.segment(server, &c, 5, 0, &mut out);
        let kinds: Vec<(u64, Kind)> = out.iter().map(|f| (f.frame, f.kind)).collect();
        assert_eq!(
            kinds,
            [(4, Kind::TcpBthReadPairing), (5, Kind::TcpBthReadPairing)]
        );
        assert!(out[0].detail.to_string().contains("DMALen 500"));
    }

    #[test]
    fn middle_last_swap() {
        // §d.2: "MIDDLE/LAST swap: SEG goes k+1 then k; a late fill with an older
        // TSval is a reordered original." LAST (SEG 2) after FIRST (SEG 0) opens a
        // hole and breaks SEG continuity; the MIDDLE (SEG 1, sent before, so older
        // TSval) is out of order and breaks it again. Nothing sender-side.
        let [f, m, l] = send3(0, 4, 10);
        let (kinds, row) = run(&[f, l, m]);
        assert_eq!(
            kinds,
            [
                Kind::TcpBthGap,
                Kind::TcpBthSegContinuity,
                Kind::TcpBthOutOfOrder,
                Kind::TcpBthSegContinuity,
            ]
        );
        assert_eq!((row.out_of_order, row.retransmissions), (1, 0));
        assert_eq!((row.messages, row.anomalies, row.unrecovered), (1, 0, 0));
    }

    #[test]
    fn duplicated_middle() {
        // §d.2: "a duplicate range with an identical option and the same TSval is a
        // network or capture duplicate" — and nothing else (SEG is not re-checked).
        let [f, m, l] = send3(0, 5, 10);
        let (kinds, row) = run(&[f, m, m, l]);
        assert_eq!(kinds, [Kind::TcpBthDuplicate]);
        assert_eq!(
            (row.duplicates, row.retransmissions, row.segments),
            (1, 0, 4)
        );
        // the same copy with a newer TSval is a retransmission
        let mut again = m;
        again.tsval = Some(50);
        let (kinds, _) = run(&[f, m, again, l]);
        assert_eq!(kinds, [Kind::TcpBthRetransmission]);
    }

    #[test]
    fn icrc_error() {
        let mut s = seg(0, 100, 10, 0x04, false, 1, 0, 0, 100);
        s.icrc_bad = true;
        let (kinds, row) = run(&[s]);
        assert_eq!(kinds, [Kind::TcpBthIcrcError]);
        assert_eq!((row.icrc_errors, row.anomalies), (1, 0));
    }

    #[test]
    fn msn_gap_and_regression() {
        // "MSN jumps by more than 1 between adjacent messages in sequence order":
        // MSN 1 then MSN 3 with no byte between them is a gap ...
        let a = seg(0, 100, 10, 0x04, false, 1, 0, 0, 100);
        let b = seg(100, 100, 11, 0x04, false, 3, 0, 0, 100);
        let (kinds, row) = run(&[a, b]);
        assert_eq!(kinds, [Kind::TcpBthMsnGap]);
        assert_eq!(row.anomalies, 1);
        // ... unless a TCP hole covers it (MSN 2 may be in the hole: explained)
        let c = seg(300, 100, 11, 0x04, false, 3, 0, 0, 100);
        let (kinds, _) = run(&[a, c]);
        assert_eq!(kinds, [Kind::TcpBthGap]);
        // the same holds whichever of the two arrives first (MSN 0 anchors the
        // sequence space; MSN 3 then leaves a hole that MSN 1 fills late)
        let z = seg(0, 100, 5, 0x04, false, 0, 0, 0, 100);
        let a1 = seg(100, 100, 10, 0x04, false, 1, 0, 0, 100);
        let b1 = seg(200, 100, 11, 0x04, false, 3, 0, 0, 100);
        let (kinds, _) = run(&[z, b1, a1]);
        assert_eq!(
            kinds,
            [Kind::TcpBthGap, Kind::TcpBthOutOfOrder, Kind::TcpBthMsnGap]
        );
        // "a lower MSN at a higher sequence number": regression
        let d = seg(100, 100, 11, 0x04, false, 0, 0, 0, 100);
        let (kinds, row) = run(&[a, d]);
        assert_eq!(kinds, [Kind::TcpBthMsnRegression]);
        assert_eq!(row.anomalies, 1);
    }

    #[test]
    fn message_contiguity() {
        // "msg_start_seq(MSN+1) != msg_end_seq(MSN)": MSN 2 starts 10 bytes after
        // the end of MSN 1 (bytes of no message between them).
        let a = seg(0, 100, 10, 0x04, false, 1, 0, 0, 100);
        let b = seg(110, 100, 11, 0x04, false, 2, 0, 0, 100);
        let (kinds, row) = run(&[a, b]);
        assert_eq!(kinds, [Kind::TcpBthGap, Kind::TcpBthContiguity]);
        assert_eq!(row.anomalies, 1);
        // a WRITE's 16-byte RETH counts: MSN 2 (WRITE_ONLY, 16 + 100 bytes) right
        // after MSN 1 is contiguous
        let w = seg(100, 116, 11, 0x0A, false, 2, 0, 0, 100);
        let (kinds, row) = run(&[a, w]);
        assert_eq!(kinds, []);
        assert_eq!(row.messages, 2);
    }

    #[test]
    fn opcode_grammar() {
        // FIRST→MIDDLE*→LAST or ONLY: a MIDDLE at offset 0 ...
        let (kinds, _) = run(&[seg(0, 100, 10, 0x01, true, 1, 0, 0, 200)]);
        assert_eq!(kinds, [Kind::TcpBthOpcodeGrammar]);
        // ... an ONLY past offset 0 (its FIRST bytes never seen, too)
        let (kinds, _) = run(&[seg(0, 100, 10, 0x04, false, 1, 100, 1, 200)]);
        assert_eq!(kinds, [Kind::TcpBthOpcodeGrammar, Kind::TcpBthMissingFirst]);
        // MS inconsistent with the opcode: a FIRST with MS = 0 (also a short "last")
        let (kinds, _) = run(&[seg(0, 100, 10, 0x00, false, 1, 0, 0, 200)]);
        assert_eq!(kinds, [Kind::TcpBthOpcodeGrammar, Kind::TcpBthLength]);
        // family change inside a message: SEND_FIRST then RDMA_WRITE_LAST
        let (kinds, row) = run(&[
            seg(0, 100, 10, 0x00, true, 1, 0, 0, 200),
            seg(100, 100, 11, 0x08, false, 1, 100, 1, 200),
        ]);
        assert_eq!(kinds, [Kind::TcpBthOpcodeGrammar]);
        assert_eq!(row.anomalies, 1);
        // ACKNOWLEDGE carries no message: flagged
        let (kinds, row) = run(&[seg(0, 100, 10, 0x11, false, 1, 0, 0, 100)]);
        assert_eq!(kinds, [Kind::TcpBthOpcodeGrammar]);
        assert_eq!(row.anomalies, 1);
    }

    #[test]
    fn seg_continuity() {
        // "SEG not equal to previous SEG + 1 (mod 256) within a message", with the
        // bytes themselves contiguous: only SEG is wrong
        let [f, m, mut l] = send3(0, 1, 10);
        l.seg = 3;
        let (kinds, row) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthSegContinuity]);
        // network-side: not a sender anomaly
        assert_eq!((row.anomalies, row.messages), (0, 1));
        // SEG wraps mod 256
        let [mut f, mut m, mut l] = send3(0, 1, 10);
        (f.seg, m.seg, l.seg) = (0, 1, 2);
        let (kinds, _) = run(&[f, m, l]);
        assert_eq!(kinds, []);
        // the first segment (offset 0) must have SEG 0
        let (kinds, _) = run(&[seg(0, 100, 10, 0x04, false, 1, 0, 7, 100)]);
        assert_eq!(kinds, [Kind::TcpBthSegContinuity]);
    }

    #[test]
    fn length_and_offset() {
        // "offset + data_len > MLEN"
        let (kinds, _) = run(&[seg(0, 300, 10, 0x04, false, 1, 0, 0, 200)]);
        assert_eq!(kinds, [Kind::TcpBthLength]);
        // "LAST with offset + data_len != MLEN"
        let [f, m, mut l] = send3(0, 1, 10);
        l.payload_len = 100;
        let (kinds, row) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthLength]);
        assert_eq!((row.anomalies, row.messages), (1, 0));
        // "MLEN changes within a message"
        let [f, mut m, l] = send3(0, 1, 10);
        m.mlen = 4000;
        let (kinds, _) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthLength]);
        // offset/seq mismatch: the MIDDLE's MBO says the message starts 20 bytes later
        let [f, mut m, l] = send3(0, 1, 10);
        m.mbo = 1400;
        let (kinds, row) = run(&[f, m, l]);
        assert_eq!(kinds, [Kind::TcpBthOffsetMismatch]);
        assert_eq!(row.anomalies, 1);
    }
}
