//! The request PSN stream of one RC/UC/XRC flow: interfaces.md §6.2, applied literally, with
//! the recovery timings and the stream-side RC conformance checks of §6.7.
//!
//! [`PsnStream`] is a pure state machine: [`step`] (or [`PsnStream::on_request`]) takes the
//! state and one request packet summary and returns the new state plus what it found; the
//! acknowledgements and NAKs of the paired reverse flow come in through
//! [`PsnStream::on_ack_into`], and the end of a READ's responses through
//! [`PsnStream::on_read_response_end_into`]. Nothing here reads a capture or allocates per
//! packet (the hole set grows only when a new hole opens, the timings when a flow first has a
//! sample).
//!
//! Positions are *extended* PSNs (see [`super::holes`]): `ext(psn) = expected + d`, with `d`
//! the serial distance of §6.2, so everything after the first packet is plain `u64` order.
//!
//! Findings about what the *responder* did wrong (a repeated NAK, an ACK going backwards) are
//! decided here, where the request stream is known, and handed out as
//! [`StepOut::peer_findings`] for the engine to put on the response flow.

// Indexing cannot panic here: the inline range and piece arrays are indexed below their `len`,
// which never exceeds their capacity (checked where they grow).
#![allow(clippy::indexing_slicing)]

use std::sync::LazyLock;

use rocescope_dissectors::Psn;

use super::compact::{OptPos, Slot, ThinVec};
use super::finding::{Detail, Finding, Findings, Kind};
use super::holes::{EXT_BASE, Hole, Holes};
use super::sketch::Sketch;

/// The valid path MTUs of rule 3.
pub const PMTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// Rule 4's PMTU.
pub const DEFAULT_PMTU: u32 = 1024;
/// How far before a flow's first PSN a response still pairs it (§6.3).
pub const PAIRING_WINDOW: u64 = 1024;

const PSN_MASK: u64 = 0x00FF_FFFF;
/// Holes more than this far behind the expected PSN cannot be told apart from the future
/// any more (serial arithmetic, §5.1): they are closed as unrecovered.
const HOLE_HORIZON: u64 = 1 << 23;
/// Unanswered NAKs remembered for `nak_response_ns` (the run answers all; older ones only
/// lose their sample).
const NAKS_MAX: usize = 16;
/// Missing PSNs a NAK named, remembered (§6.2's exception to capture loss).
const NAMED_MAX: usize = 64;
/// Gaps waiting for their NAK (`nak_generation_ns`).
const GAPS_MAX: usize = 32;
/// Duplicate or retransmitted PSNs remembered between two ACKs (`ack_regression`).
const REPEATS_MAX: usize = 64;
/// Acknowledgements held while a READ's count is open, at most (more are merged into the
/// last held one).
const HELD_ACKS_MAX: usize = 64;

/// PSNs a READ of `dmalen` bytes consumes at path MTU `pmtu`: `max(1, ceil(dmalen / pmtu))`.
#[must_use]
pub fn read_count(dmalen: u32, pmtu: u32) -> u32 {
    if pmtu == 0 {
        return 1;
    }
    dmalen.div_ceil(pmtu).max(1)
}

/// The one valid PMTU giving `n` PSNs for `dmalen`, when exactly one does.
#[must_use]
pub fn unique_pmtu(dmalen: u32, n: u32) -> Option<u32> {
    let mut found = None;
    for m in PMTUS {
        if read_count(dmalen, m) == n {
            if found.is_some() {
                return None;
            }
            found = Some(m);
        }
    }
    found
}

/// What §6.2 needs to know of one request packet (taken from a [`super::PacketEvent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqPacket {
    pub frame: u64,
    pub time_ns: u64,
    pub psn: Psn,
    /// LAST, ONLY, READ request or atomic: the packet ends a message.
    pub ends_message: bool,
    /// `Some(dmalen)` for a READ request.
    pub read_dmalen: Option<u32>,
    /// `--rto-min` on an RC or XRC flow (rule (c)); `None` on UC.
    pub rto_min_ns: Option<u64>,
}

/// What an acknowledgement of the paired reverse flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckKind {
    /// An ACKNOWLEDGE with an ACK syndrome.
    Ack,
    /// A READ response or atomic ACK whose AETH has an ACK syndrome.
    Response,
    /// A PSN-sequence-error NAK.
    SeqNak,
    /// An RNR NAK.
    RnrNak,
}

/// One acknowledgement (or NAK) of the paired reverse flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub frame: u64,
    pub time_ns: u64,
    pub psn: Psn,
    pub kind: AckKind,
}

/// Counters of §6.2 for one flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PsnCounters {
    pub messages: u64,
    pub read_requests: u64,
    pub psn_gaps: u64,
    /// Missing PSNs filled by a run, or acknowledged after a NAK named them (lost and
    /// recovered); `finish` adds the unrecovered ones.
    pub lost: u64,
    pub unrecovered: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub retransmissions: u64,
    pub implied_timeouts: u64,
    /// Missing PSNs the responder acknowledged: delivered, but not captured.
    pub not_captured: u64,
}

/// The recovery timings of §6.7, per request flow.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    pub recovery: Sketch,
    pub nak_response: Sketch,
    pub nak_generation: Sketch,
    pub timeout_wait: Sketch,
}

/// A READ request first seen at this step (one distinct READ PSN): §6.3 tracks its responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewRead {
    pub frame: u64,
    pub time_ns: u64,
    pub psn: Psn,
    /// The count when settled at once (rule 1), else `None` until a later [`StepOut::settled`].
    pub n: Option<u32>,
    pub dmalen: u32,
}

/// What one step produced besides the new state.
#[derive(Debug, Clone, Default)]
pub struct StepOut {
    pub findings: Findings,
    /// Findings about the paired reverse flow's sender (the responder).
    pub peer_findings: Findings,
    /// A PMTU that rule 2 or 3 established (exactly one `m` gave the count).
    pub learned_pmtu: Option<u32>,
    pub new_read: Option<NewRead>,
    /// A pending READ's count was settled: (its PSN, n).
    pub settled: Option<(Psn, u32)>,
}

impl StepOut {
    /// Nothing found, learned or settled.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
            && self.peer_findings.is_empty()
            && self.learned_pmtu.is_none()
            && self.new_read.is_none()
            && self.settled.is_none()
    }
}

/// How a READ whose count is still open fills its consumed range once the count is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// Its first PSN was not missing: nothing to fill.
    Nothing,
    /// Part of a run: every filled PSN is lost (and recovered).
    Run,
    /// A late original: the PSNs stop being missing.
    Reorder,
    /// Its class waits for the next packet ([`Held`]).
    Held,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PendingRead {
    psn: Psn,
    p: u64,
    dmalen: u32,
    time_ns: u64,
    /// It was at or after the expected PSN: `expected` becomes `p + n`.
    forward: bool,
    fill: Fill,
}

/// The missing PSNs one packet filled, with when their gaps were revealed (a few pieces; a
/// READ's range rarely spans more than one gap, and beyond four the last piece takes the rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Filled {
    pieces: [(u32, u64); 4],
    len: u8,
}

impl Filled {
    fn add(&mut self, h: Hole) {
        let n = u32::try_from(h.end - h.start).unwrap_or(u32::MAX);
        let i = usize::from(self.len);
        if i < self.pieces.len() {
            self.pieces[i] = (n, h.time_ns);
            self.len += 1;
        } else if let Some(last) = self.pieces.last_mut() {
            last.0 = last.0.saturating_add(n);
        }
    }

    fn total(&self) -> u32 {
        self.pieces[..usize::from(self.len)]
            .iter()
            .fold(0, |t, p| t.saturating_add(p.0))
    }

    fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.pieces[..usize::from(self.len)].iter().copied()
    }
}

/// A late packet whose class (out-of-order/duplicate, or head of a timeout run) waits for the
/// flow's next request packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    frame: u64,
    time_ns: u64,
    /// Time of the request packet before it (`timeout_wait_ns` if it starts a run).
    prev_time_ns: u64,
    psn: Psn,
    p: u64,
    /// PSNs it consumes (`None` while it is a READ with an open count).
    consumed: Option<u32>,
    /// Missing PSNs it filled.
    filled: Filled,
    /// A run was going on when it arrived.
    in_run: bool,
}

/// A go-back that did not start at the NAK's PSN (§6.7 `gbn_wrong_start`), waiting for its
/// verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WrongStart {
    frame: u64,
    time_ns: u64,
    psn: Psn,
    /// The NAK's PSN (extended).
    nak: u64,
}

/// A gap waiting for the responder's NAK (`nak_generation_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpenGap {
    start: u64,
    end: u64,
    time_ns: u64,
}

/// The state of one request PSN stream.
#[derive(Debug, Clone, Default)]
pub struct PsnStream {
    started: bool,
    first_psn: Psn,
    /// Extended position of the first PSN ([`EXT_BASE`]).
    first: u64,
    /// Next expected position (one past the highest consumed).
    expected: u64,
    /// Position and time of the previous request packet.
    prev: u64,
    prev_time_ns: u64,
    in_run: bool,
    /// One past the highest acknowledged position (0: none yet).
    ack_end: u64,
    /// Messages counted (the one counter every stream moves; the others are in [`Cold`]).
    messages: u64,
    /// Highest position an ACK acknowledged (`ack_regression`).
    highest_ack: OptPos,
    finished: bool,
    /// What an in-order stream never needs (holes, NAKs, resends, open READs, gaps, the
    /// recovery timings), allocated by
    /// the first packet or acknowledgement that does ([`PsnStream::cold_mut`]).
    cold: Option<Box<Cold>>,
}

/// The part of a [`PsnStream`] that stays empty while the stream is in order and acknowledged:
/// kept out of it so that hundreds of thousands of quiet flows do not carry it (issue 13).
#[derive(Debug, Clone, Default)]
struct Cold {
    /// Every counter but `messages` (kept in the stream).
    counters: PsnCounters,
    holes: Holes,
    timings: Option<Box<Timings>>,
    held: Slot<Held>,
    /// Unanswered NAKs (PSN sequence error or RNR): the lowest position, and their times.
    nak_min: Option<u64>,
    nak_times: ThinVec<u64>,
    /// Missing positions a NAK named while they were missing.
    named: ThinVec<u64>,
    /// Acknowledgements that arrived while a READ's count was open.
    held_acks: ThinVec<Ack>,
    pending: Slot<PendingRead>,
    /// Unrecovered PSNs already closed (beyond the serial horizon).
    closed_unrecovered: u64,
    gaps: ThinVec<OpenGap>,
    // conformance
    /// The lowest NAK position since the last go-back.
    nak_since_go_back: Option<u64>,
    wrong_start: Slot<WrongStart>,
    /// The last PSN-sequence-error NAK's position, and whether a request packet at it came
    /// after it (`repeated_nak`).
    last_seq_nak: Option<u64>,
    resent_since_nak: bool,
    /// The duplicate or retransmitted positions since the last ACK (`ack_regression`).
    repeats: ThinVec<u64>,
}

/// What [`PsnStream::cold`] reads on a stream that never needed its cold part.
static NO_COLD: LazyLock<Cold> = LazyLock::new(Cold::default);

/// The pure transition: `(state, packet) -> (state, what it found)`.
#[must_use]
pub fn step(mut state: PsnStream, pkt: &ReqPacket, pmtu: Option<u32>) -> (PsnStream, StepOut) {
    let out = state.on_request(pkt, pmtu);
    (state, out)
}

fn finding(kind: Kind, frame: u64, time_ns: u64, psn: Psn, detail: Detail) -> Finding {
    Finding {
        frame,
        time_ns,
        kind,
        flow: None,
        psn: Some(psn),
        detail,
    }
}

impl PsnStream {
    /// The next position expected (read to bring the stream into cache).
    #[must_use]
    pub fn expected_position(&self) -> u64 {
        self.expected
    }

    #[must_use]
    pub fn new() -> Self {
        PsnStream::default()
    }

    /// True once a request packet was seen.
    #[must_use]
    pub fn started(&self) -> bool {
        self.started
    }

    /// The first request PSN in capture order.
    #[must_use]
    pub fn first_psn(&self) -> Option<Psn> {
        self.started.then_some(self.first_psn)
    }

    /// The highest request PSN consumed in serial order.
    #[must_use]
    pub fn last_psn(&self) -> Option<Psn> {
        self.started
            .then(|| self.psn_of(self.expected.saturating_sub(1)))
    }

    /// Open holes (ranges) right now.
    #[must_use]
    pub fn open_holes(&self) -> usize {
        self.cold().holes.ranges()
    }

    /// Missing PSNs right now.
    #[must_use]
    pub fn missing(&self) -> u64 {
        self.cold().holes.total()
    }

    /// The recovery timings, once the flow has had a sample.
    #[must_use]
    pub fn timings(&self) -> Option<&Timings> {
        self.cold().timings.as_deref()
    }

    /// The stream's counters.
    #[must_use]
    pub fn counters(&self) -> PsnCounters {
        PsnCounters {
            messages: self.messages,
            ..self.cold().counters
        }
    }

    fn cold(&self) -> &Cold {
        self.cold.as_deref().unwrap_or(&NO_COLD)
    }

    fn cold_mut(&mut self) -> &mut Cold {
        self.cold.get_or_insert_with(Box::default)
    }

    fn timings_mut(&mut self) -> &mut Timings {
        self.cold_mut().timings.get_or_insert_with(Box::default)
    }

    fn psn_of(&self, ext: u64) -> Psn {
        // EXT_BASE is a multiple of 2^24, so this is exact modulo 2^24 for any position.
        let off = ext.wrapping_sub(EXT_BASE) & PSN_MASK;
        self.first_psn.wrapping_add(u32::try_from(off).unwrap_or(0))
    }

    /// Extended position of `psn`, relative to the expected PSN.
    fn ext(&self, psn: Psn) -> u64 {
        let d = psn.distance(self.psn_of(self.expected));
        self.expected.wrapping_add_signed(i64::from(d))
    }

    /// True when a response at `psn` pairs this stream with its reverse flow (§6.3): it lies in
    /// the PSNs consumed so far, or at most [`PAIRING_WINDOW`] PSNs before the first of them.
    #[must_use]
    pub fn pairs_with(&self, psn: Psn) -> bool {
        if !self.started {
            return false;
        }
        let e = self.ext(psn);
        e >= self.first.saturating_sub(PAIRING_WINDOW) && e < self.expected
    }

    /// Already seen: consumed so far and not missing.
    fn seen(&self, e: u64) -> bool {
        e >= self.first && e < self.expected && !self.cold().holes.contains(e)
    }

    /// An acknowledgement or NAK of the paired reverse flow, in capture order (held while a
    /// READ's count is open, §6.2).
    pub fn on_ack_into(&mut self, ack: &Ack, out: &mut StepOut) {
        if self.finished || !self.started {
            return;
        }
        if self.cold().pending.is_some() {
            if self.cold().held_acks.len() < HELD_ACKS_MAX {
                self.cold_mut().held_acks.push(*ack);
            } else if let Some(last) = self.cold_mut().held_acks.last_mut() {
                *last = *ack;
            }
            return;
        }
        self.apply_ack(ack, out);
    }

    /// The acknowledgements held while a READ's count was open, now that it is settled.
    fn apply_held_acks(&mut self, out: &mut StepOut) {
        let held = std::mem::take(&mut self.cold_mut().held_acks);
        for a in held.iter() {
            self.apply_ack(a, out);
        }
        self.cold_mut().held_acks = held;
        self.cold_mut().held_acks.clear();
    }

    fn apply_ack(&mut self, a: &Ack, out: &mut StepOut) {
        let q = self.ext(a.psn);
        let nak = matches!(a.kind, AckKind::SeqNak | AckKind::RnrNak);
        if nak {
            self.nak_first(a, q, out);
        }
        // a NAK acknowledges every PSN before its own; an ACK its own too
        let end = if nak { q } else { q + 1 };
        self.acknowledge(a, end, out);
        if a.kind == AckKind::Ack {
            if self
                .highest_ack
                .get()
                .is_some_and(|h| q < h && !self.cold().repeats.contains(&q))
            {
                out.peer_findings.push(finding(
                    Kind::AckRegression,
                    a.frame,
                    a.time_ns,
                    a.psn,
                    Detail::Text(format!(
                        "ACK of PSN {} after an ACK of PSN {}",
                        a.psn,
                        self.psn_of(self.highest_ack.get().unwrap_or(q))
                    )),
                ));
            }
            self.highest_ack
                .set(Some(self.highest_ack.get().map_or(q, |h| h.max(q))));
            if let Some(cold) = self.cold.as_deref_mut() {
                cold.repeats.clear();
            }
        }
        if let Some(w) = self.cold().wrong_start.get()
            && end > w.nak
        {
            // the NAK's PSN was acknowledged: the capture missed the right resend
            self.cold_mut().wrong_start.clear();
        }
    }

    /// What a NAK at position `q` does before it acknowledges the PSNs before it.
    fn nak_first(&mut self, a: &Ack, q: u64, out: &mut StepOut) {
        if self.cold().holes.contains(q)
            && !self.cold().named.contains(&q)
            && self.cold().named.len() < NAMED_MAX
        {
            self.cold_mut().named.push(q);
        }
        let cold = self.cold_mut();
        cold.nak_min = Some(cold.nak_min.map_or(q, |n| n.min(q)));
        if self.cold().nak_times.len() < NAKS_MAX {
            self.cold_mut().nak_times.push(a.time_ns);
        }
        if let Some(w) = self.cold().wrong_start.get().filter(|w| w.nak == q) {
            // the NAK names the PSN again: the wrong resend did not repair it
            self.cold_mut().wrong_start.clear();
            out.findings.push(finding(
                Kind::GbnWrongStart,
                w.frame,
                w.time_ns,
                w.psn,
                Detail::Text(format!(
                    "go-back after a NAK of PSN {} resent from PSN {}; the NAK came again",
                    self.psn_of(q),
                    w.psn
                )),
            ));
        }
        let cold = self.cold_mut();
        cold.nak_since_go_back = Some(cold.nak_since_go_back.map_or(q, |n| n.min(q)));
        if a.kind == AckKind::SeqNak {
            if self.cold().last_seq_nak == Some(q) && !self.cold().resent_since_nak {
                out.peer_findings.push(finding(
                    Kind::RepeatedNak,
                    a.frame,
                    a.time_ns,
                    a.psn,
                    Detail::Text(format!(
                        "second PSN sequence error NAK of PSN {} with no resend between",
                        a.psn
                    )),
                ));
            }
            self.cold_mut().last_seq_nak = Some(q);
            self.cold_mut().resent_since_nak = false;
            let open = self
                .cold()
                .gaps
                .iter()
                .position(|g| g.start <= q && q < g.end);
            if let Some(g) = open.and_then(|i| self.cold_mut().gaps.remove(i)) {
                let wait = a.time_ns.saturating_sub(g.time_ns);
                self.timings_mut().nak_generation.sample(wait);
            }
        }
    }

    /// Every missing PSN before `end` that the capture shows (below `expected`) was
    /// acknowledged: lost if a NAK named it while missing, else not captured.
    fn acknowledge(&mut self, a: &Ack, end: u64, out: &mut StepOut) {
        let from = self.ack_end;
        self.ack_end = self.ack_end.max(end);
        let upto = end.min(self.expected);
        if upto <= from.max(self.first) || self.cold().holes.ranges() == 0 {
            // nothing missing to settle: the usual ACK
            return;
        }
        let mut settled = Settled::default();
        let cold: &mut Cold = self.cold_mut();
        let named = &cold.named;
        let mut recovered: Vec<(u64, u64)> = Vec::new();
        cold.holes.take_range(from, upto, |h| {
            // the PSNs of the piece a NAK named are lost; the runs between them not captured
            let mut at = h.start;
            let mut hits: Vec<u64> = Vec::new();
            hits.extend(named.iter().copied().filter(|&p| h.start <= p && p < h.end));
            hits.sort_unstable();
            for p in hits {
                settled.add(at, p - at);
                recovered.push((1, h.time_ns));
                at = p + 1;
            }
            settled.add(at, h.end - at);
        });
        if let Some(cold) = self.cold.as_deref_mut() {
            cold.named.retain(|&p| p >= upto || p < from);
        }
        for (n, revealed) in recovered {
            self.cold_mut().counters.lost += n;
            let wait = a.time_ns.saturating_sub(revealed);
            self.timings_mut().recovery.sample_n(wait, n);
        }
        self.report_not_captured(&settled, a.frame, a.time_ns, out);
    }

    fn report_not_captured(&mut self, s: &Settled, frame: u64, time_ns: u64, out: &mut StepOut) {
        if s.count == 0 {
            return;
        }
        self.cold_mut().counters.not_captured += s.count;
        let ranges: Box<[(Psn, u32)]> = s.ranges[..usize::from(s.len)]
            .iter()
            .map(|&(start, n)| (self.psn_of(start), u32::try_from(n).unwrap_or(u32::MAX)))
            .collect();
        out.findings.push(finding(
            Kind::NotCaptured,
            frame,
            time_ns,
            self.psn_of(s.first),
            Detail::NotCaptured {
                count: s.count,
                ranges,
                more: s.more,
            },
        ));
    }

    /// The LAST or ONLY READ response at `psn` arrived on the paired reverse flow: rule 2
    /// settles the open READ count (rule 1 first when the PMTU is known by now).
    pub fn on_read_response_end_into(&mut self, psn: Psn, pmtu: Option<u32>, out: &mut StepOut) {
        let Some(pr) = self.cold().pending.get() else {
            return;
        };
        if let Some(m) = pmtu {
            self.cold_mut().pending.clear();
            self.apply_read(pr, read_count(pr.dmalen, m), out);
            self.apply_held_acks(out);
            return;
        }
        let d = psn.distance(pr.psn);
        let max_n = read_count(pr.dmalen, PMTUS[0]);
        if let Ok(d) = u32::try_from(d) {
            let n = d + 1;
            if n <= max_n {
                self.cold_mut().pending.clear();
                self.apply_read(pr, n, out);
                out.learned_pmtu = unique_pmtu(pr.dmalen, n);
                self.apply_held_acks(out);
            }
        }
    }

    /// One request packet (valid ICRC, not malformed) of this flow, in capture order.
    /// `pmtu` is the connection's PMTU when known (rule 1).
    pub fn on_request(&mut self, pkt: &ReqPacket, pmtu: Option<u32>) -> StepOut {
        let mut out = StepOut::default();
        self.on_request_into(pkt, pmtu, &mut out);
        out
    }

    /// [`Self::on_request`] writing into the caller's `out` (the engine reuses one, so the
    /// hot path moves no large values).
    pub fn on_request_into(&mut self, pkt: &ReqPacket, pmtu: Option<u32>, out: &mut StepOut) {
        if self.finished {
            return;
        }
        // The open READ count is settled at the latest by this packet (rules 1, 3, 4).
        if let Some(pr) = self.cold.as_deref_mut().and_then(|c| c.pending.take()) {
            let (n, learned) = match pmtu {
                Some(m) => (read_count(pr.dmalen, m), None),
                None => {
                    let d = pkt.psn.distance(pr.psn);
                    match u32::try_from(d) {
                        Ok(d) if d >= 1 && PMTUS.iter().any(|&m| read_count(pr.dmalen, m) == d) => {
                            (d, unique_pmtu(pr.dmalen, d))
                        }
                        _ => (read_count(pr.dmalen, DEFAULT_PMTU), None),
                    }
                }
            };
            self.apply_read(pr, n, out);
            out.learned_pmtu = learned;
            self.apply_held_acks(out);
        }
        // The held decision: is this packet the following PSN, already seen?
        if let Some(h) = self.cold.as_deref_mut().and_then(|c| c.held.take()) {
            self.resolve_held(h, Some(pkt.psn), out);
        }
        self.classify(pkt, pmtu, out);
    }

    /// Apply a settled READ count.
    fn apply_read(&mut self, pr: PendingRead, n: u32, out: &mut StepOut) {
        let n64 = u64::from(n);
        if pr.forward && pr.p + n64 > self.expected {
            self.expected = pr.p + n64;
        }
        if pr.fill != Fill::Nothing {
            let mut filled = Filled::default();
            self.cold_mut()
                .holes
                .take_range(pr.p + 1, pr.p + n64, |h| filled.add(h));
            match pr.fill {
                Fill::Run => self.lose(&filled, pr.time_ns),
                Fill::Held => {
                    if let Some(h) = self.cold_mut().held.as_mut() {
                        for (n, t) in filled.iter() {
                            h.filled.add(Hole {
                                start: 0,
                                end: u64::from(n),
                                time_ns: t,
                            });
                        }
                    }
                }
                Fill::Reorder | Fill::Nothing => {}
            }
        }
        if let Some(h) = self.cold_mut().held.as_mut()
            && h.p == pr.p
            && h.consumed.is_none()
        {
            h.consumed = Some(n);
        }
        out.settled = Some((pr.psn, n));
    }

    /// Missing PSNs a run filled: lost (and recovered), each a `recovery_ns` sample.
    fn lose(&mut self, filled: &Filled, time_ns: u64) {
        let total = filled.total();
        if total == 0 {
            return;
        }
        self.cold_mut().counters.lost += u64::from(total);
        for (n, revealed) in filled.iter() {
            let wait = time_ns.saturating_sub(revealed);
            self.timings_mut().recovery.sample_n(wait, u64::from(n));
        }
    }

    fn resolve_held(&mut self, h: Held, next: Option<Psn>, out: &mut StepOut) {
        let consumed = u64::from(h.consumed.unwrap_or(1));
        let timeout_run = next.is_some_and(|q| {
            let qe = self.ext(q);
            qe == h.p + consumed && self.seen(qe)
        });
        let kind = if timeout_run {
            // (b): a go-back by timeout, one implied_timeout per run
            self.start_timeout_run(h.frame, h.time_ns, h.psn, h.prev_time_ns, out);
            Kind::Retransmission
        } else if h.in_run {
            Kind::Retransmission
        } else if h.filled.total() > 0 {
            Kind::OutOfOrder
        } else {
            Kind::Duplicate
        };
        self.count_class(kind, h.p, &h.filled, h.time_ns);
        out.findings.push(class_finding(
            kind,
            h.frame,
            h.time_ns,
            h.psn,
            h.filled.total(),
        ));
    }

    /// A go-back by timeout (rule (b) or (c)) starts at this packet.
    fn start_timeout_run(
        &mut self,
        frame: u64,
        time_ns: u64,
        psn: Psn,
        prev_time_ns: u64,
        out: &mut StepOut,
    ) {
        self.cold_mut().counters.implied_timeouts += 1;
        self.in_run = true;
        let wait = time_ns.saturating_sub(prev_time_ns);
        self.timings_mut().timeout_wait.sample(wait);
        out.findings.push(Finding {
            frame,
            time_ns,
            kind: Kind::ImpliedTimeout,
            flow: None,
            psn: Some(psn),
            detail: Detail::Timeout,
        });
    }

    fn count_class(&mut self, kind: Kind, p: u64, filled: &Filled, time_ns: u64) {
        let n = filled.total();
        match kind {
            Kind::Retransmission => {
                self.cold_mut().counters.retransmissions += 1;
                if n > 0 {
                    self.lose(filled, time_ns);
                } else {
                    self.cold_mut().counters.duplicates += 1;
                }
            }
            Kind::OutOfOrder => self.cold_mut().counters.out_of_order += 1,
            Kind::Duplicate => self.cold_mut().counters.duplicates += 1,
            _ => {}
        }
        if matches!(kind, Kind::Retransmission | Kind::Duplicate)
            && self.cold().repeats.len() < REPEATS_MAX
        {
            self.cold_mut().repeats.push(p);
        }
    }

    /// A PSN seen for the first time: it counts in `messages` / `read_requests`.
    fn count_new(&mut self, pkt: &ReqPacket, n: Option<u32>, out: &mut StepOut) {
        if pkt.ends_message {
            self.messages += 1;
        }
        if let Some(dmalen) = pkt.read_dmalen {
            self.cold_mut().counters.read_requests += 1;
            out.new_read = Some(NewRead {
                frame: pkt.frame,
                time_ns: pkt.time_ns,
                psn: pkt.psn,
                n,
                dmalen,
            });
        }
    }

    /// The PSNs `start..end` are missing since `pkt`: those already acknowledged are not
    /// captured at once (the acknowledgement came first); the rest become holes.
    fn gap(&mut self, start: u64, end: u64, pkt: &ReqPacket, out: &mut StepOut) {
        let acked = self.ack_end.clamp(start, end);
        if acked > start {
            let mut s = Settled::default();
            s.add(start, acked - start);
            self.report_not_captured(&s, pkt.frame, pkt.time_ns, out);
        }
        self.cold_mut().holes.push(acked, end, pkt.time_ns);
        if self.cold().gaps.len() == GAPS_MAX {
            self.cold_mut().gaps.remove(0);
        }
        self.cold_mut().gaps.push(OpenGap {
            start,
            end,
            time_ns: pkt.time_ns,
        });
    }

    /// The go-back checks of §6.7 on a request packet at position `p`.
    fn conformance_on_request(&mut self, p: u64, pkt: &ReqPacket) {
        if self.cold().last_seq_nak == Some(p) {
            self.cold_mut().resent_since_nak = true;
        }
        if self.cold().wrong_start.get().is_some_and(|w| w.nak == p) {
            // the right resend came after all
            self.cold_mut().wrong_start.clear();
        }
        if p <= self.prev
            && let Some(nak) = self
                .cold
                .as_deref_mut()
                .and_then(|c| c.nak_since_go_back.take())
            && p != nak
            && !self.cold().wrong_start.is_some()
        {
            self.cold_mut().wrong_start.set(WrongStart {
                frame: pkt.frame,
                time_ns: pkt.time_ns,
                psn: pkt.psn,
                nak,
            });
        }
    }

    fn classify(&mut self, pkt: &ReqPacket, pmtu: Option<u32>, out: &mut StepOut) {
        // PSNs this packet consumes, when already known (rule 1, or not a READ).
        let n_now = match (pkt.read_dmalen, pmtu) {
            (None, _) => Some(1),
            (Some(l), Some(m)) => Some(read_count(l, m)),
            (Some(_), None) => None,
        };
        if !self.started {
            // The first request packet sets `expected` and is in order.
            self.started = true;
            self.first_psn = pkt.psn;
            self.first = EXT_BASE;
            self.expected = EXT_BASE;
            self.prev = EXT_BASE;
            self.prev_time_ns = pkt.time_ns;
        }
        let p = self.ext(pkt.psn);
        self.conformance_on_request(p, pkt);
        if p >= self.expected {
            // d >= 0: passes the highest PSN seen, so any run ends here.
            self.in_run = false;
            let d = p - self.expected;
            if d > 0 {
                self.cold_mut().counters.psn_gaps += 1;
                out.findings.push(Finding {
                    frame: pkt.frame,
                    time_ns: pkt.time_ns,
                    kind: Kind::PsnGap,
                    flow: None,
                    psn: Some(pkt.psn),
                    detail: Detail::Gap {
                        expected: self.psn_of(self.expected),
                        missing: u32::try_from(d).unwrap_or(u32::MAX),
                    },
                });
                self.gap(self.expected, p, pkt, out);
            }
            self.count_new(pkt, n_now, out);
            match (n_now, pkt.read_dmalen) {
                (Some(n), _) => self.expected = p + u64::from(n),
                (None, Some(dmalen)) => {
                    // Held open: the READ's own PSN is consumed; the rest when settled.
                    self.expected = p + 1;
                    self.cold_mut().pending.set(PendingRead {
                        psn: pkt.psn,
                        p,
                        dmalen,
                        time_ns: pkt.time_ns,
                        forward: true,
                        fill: Fill::Nothing,
                    });
                }
                (None, None) => self.expected = p + 1,
            }
            let horizon = self.expected.saturating_sub(HOLE_HORIZON);
            if let Some(cold) = self.cold.as_deref_mut() {
                cold.closed_unrecovered += cold.holes.drop_before(horizon);
            }
        } else {
            // d < 0
            let mut filled = Filled::default();
            let first_filled = self
                .cold_mut()
                .holes
                .take_range(p, p + 1, |h| filled.add(h))
                == 1;
            if first_filled {
                if let (Some(_), Some(n)) = (pkt.read_dmalen, n_now) {
                    // a READ filling a missing PSN fills its whole consumed range
                    self.cold_mut()
                        .holes
                        .take_range(p + 1, p + u64::from(n), |h| filled.add(h));
                }
                self.cold_mut().named.retain(|&q| q != p);
                self.count_new(pkt, n_now, out);
            }
            let at_or_below_prev = p <= self.prev;
            let nak_run = at_or_below_prev && self.cold().nak_min.is_some_and(|n| p >= n);
            let silence = at_or_below_prev
                && pkt
                    .rto_min_ns
                    .is_some_and(|rto| pkt.time_ns.saturating_sub(self.prev_time_ns) >= rto);
            let (kind, fill) = if nak_run {
                // (a): answers every unanswered NAK
                self.cold_mut().nak_min = None;
                let times = std::mem::take(&mut self.cold_mut().nak_times);
                for t in times.iter() {
                    let wait = pkt.time_ns.saturating_sub(*t);
                    self.timings_mut().nak_response.sample(wait);
                }
                self.cold_mut().nak_times = times;
                self.cold_mut().nak_times.clear();
                self.in_run = true;
                (Some(Kind::Retransmission), Fill::Run)
            } else if silence {
                // (c): a go-back by timeout after a silence of at least --rto-min
                let prev_time = self.prev_time_ns;
                self.start_timeout_run(pkt.frame, pkt.time_ns, pkt.psn, prev_time, out);
                (Some(Kind::Retransmission), Fill::Run)
            } else if at_or_below_prev {
                // (b) waits for the next packet
                let held = Held {
                    frame: pkt.frame,
                    time_ns: pkt.time_ns,
                    prev_time_ns: self.prev_time_ns,
                    psn: pkt.psn,
                    p,
                    consumed: n_now,
                    filled,
                    in_run: self.in_run,
                };
                self.cold_mut().held.set(held);
                if filled.total() == 0 && self.cold().repeats.len() < REPEATS_MAX {
                    // whatever it turns out to be, it is a resend of a seen PSN
                    self.cold_mut().repeats.push(p);
                }
                (None, Fill::Held)
            } else if self.in_run {
                (Some(Kind::Retransmission), Fill::Run)
            } else if first_filled {
                (Some(Kind::OutOfOrder), Fill::Reorder)
            } else {
                (Some(Kind::Duplicate), Fill::Nothing)
            };
            if let Some(kind) = kind {
                self.count_class(kind, p, &filled, pkt.time_ns);
                out.findings.push(class_finding(
                    kind,
                    pkt.frame,
                    pkt.time_ns,
                    pkt.psn,
                    filled.total(),
                ));
            }
            if let (Some(dmalen), None) = (pkt.read_dmalen, n_now) {
                self.cold_mut().pending.set(PendingRead {
                    psn: pkt.psn,
                    p,
                    dmalen,
                    time_ns: pkt.time_ns,
                    forward: false,
                    fill: if first_filled { fill } else { Fill::Nothing },
                });
            }
        }
        self.prev = p;
        self.prev_time_ns = pkt.time_ns;
    }

    /// [`PsnStream::finish`] for a stream with nothing open, one that never needed its cold
    /// part: marks it finished and returns true, with no [`StepOut`] built (the end of a
    /// capture finishes every flow, hundreds of thousands of them, and a `StepOut` is over a
    /// kilobyte). Returns false, changing nothing, for any other stream.
    pub fn finish_quiet(&mut self) -> bool {
        if self.cold.is_some() {
            return false;
        }
        self.finished = true;
        true
    }

    /// End of the capture: settle what is open (rules 1/4, the held decision with no next
    /// packet, a go-back verdict still waiting) and count the PSNs still missing as unrecovered
    /// (and lost).
    pub fn finish(&mut self, pmtu: Option<u32>) -> StepOut {
        let mut out = StepOut::default();
        if self.finished {
            return out;
        }
        if let Some(pr) = self.cold.as_deref_mut().and_then(|c| c.pending.take()) {
            let n = read_count(pr.dmalen, pmtu.unwrap_or(DEFAULT_PMTU));
            self.apply_read(pr, n, &mut out);
            self.apply_held_acks(&mut out);
        }
        if let Some(h) = self.cold.as_deref_mut().and_then(|c| c.held.take()) {
            self.resolve_held(h, None, &mut out);
        }
        if let Some(w) = self.cold.as_deref_mut().and_then(|c| c.wrong_start.take())
            && self.ack_end <= w.nak
        {
            out.findings.push(finding(
                Kind::GbnWrongStart,
                w.frame,
                w.time_ns,
                w.psn,
                Detail::Text(format!(
                    "go-back after a NAK of PSN {} resent from PSN {}, and PSN {} was never \
                         acknowledged (a resend lost before the capture point looks the same)",
                    self.psn_of(w.nak),
                    w.psn,
                    self.psn_of(w.nak)
                )),
            ));
        }
        let unrecovered = self.cold().holes.total() + self.cold().closed_unrecovered;
        if unrecovered > 0 {
            let c = &mut self.cold_mut().counters;
            c.unrecovered = unrecovered;
            c.lost += unrecovered;
        }
        self.finished = true;
        out
    }
}

/// PSN ranges settled as not captured by one acknowledgement, for its event (the first few).
#[derive(Debug, Default)]
struct Settled {
    first: u64,
    count: u64,
    ranges: [(u64, u64); 4],
    len: u8,
    more: bool,
}

impl Settled {
    fn add(&mut self, start: u64, n: u64) {
        if n == 0 {
            return;
        }
        if self.count == 0 {
            self.first = start;
        }
        self.count += n;
        let len = usize::from(self.len);
        if let Some(last) = self.ranges[..len].last_mut().filter(|l| l.0 + l.1 == start) {
            last.1 += n;
        } else if len < self.ranges.len() {
            self.ranges[len] = (start, n);
            self.len += 1;
        } else {
            self.more = true;
        }
    }
}

fn class_finding(kind: Kind, frame: u64, time_ns: u64, psn: Psn, filled: u32) -> Finding {
    let detail = match kind {
        Kind::Retransmission => Detail::Retransmission { filled },
        Kind::OutOfOrder => Detail::Reorder { filled },
        _ => Detail::None,
    };
    Finding {
        frame,
        time_ns,
        kind,
        flow: None,
        psn: Some(psn),
        detail,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn pkt(frame: u64, psn: u32) -> ReqPacket {
        ReqPacket {
            frame,
            time_ns: frame,
            psn: Psn::new_masked(psn),
            ends_message: true,
            read_dmalen: None,
            rto_min_ns: Some(1_000_000),
        }
    }

    fn ack(frame: u64, psn: u32, kind: AckKind) -> Ack {
        Ack {
            frame,
            time_ns: frame,
            psn: Psn::new_masked(psn),
            kind,
        }
    }

    #[test]
    fn an_in_order_stream_never_allocates_its_cold_part() {
        let mut s = PsnStream::new();
        let mut out = StepOut::default();
        for i in 0..100u32 {
            let frame = 2 * u64::from(i) + 1;
            s.on_request_into(&pkt(frame, 16_777_180 + i), None, &mut out);
            s.on_ack_into(
                &ack(frame + 1, (16_777_180 + i) & 0xFF_FFFF, AckKind::Ack),
                &mut out,
            );
        }
        let _ = s.finish(Some(1024));
        assert_eq!(s.counters().messages, 100);
        assert!(s.cold.is_none(), "a quiet stream allocated its cold part");
        // a gap needs it
        let mut s = PsnStream::new();
        s.on_request_into(&pkt(1, 10), None, &mut out);
        s.on_request_into(&pkt(2, 12), None, &mut out);
        assert!(s.cold.is_some());
    }

    /// The quiet finish is the full one where it applies: it finishes the stream (packets
    /// after it are not counted) and leaves a stream with a hole to the full finish, which
    /// counts the hole as lost.
    #[test]
    fn a_quiet_finish_is_for_streams_with_nothing_open() {
        let mut out = StepOut::default();
        let mut quiet = PsnStream::new();
        quiet.on_request_into(&pkt(1, 10), None, &mut out);
        assert!(quiet.finish_quiet());
        quiet.on_request_into(&pkt(2, 11), None, &mut out);
        assert_eq!(
            quiet.counters().messages,
            1,
            "a finished stream took a packet"
        );
        let mut holed = PsnStream::new();
        holed.on_request_into(&pkt(1, 10), None, &mut out);
        holed.on_request_into(&pkt(2, 12), None, &mut out);
        assert!(!holed.finish_quiet());
        assert_eq!(holed.counters().lost, 0);
        let _ = holed.finish(None);
        assert_eq!(holed.counters().lost, 1);
    }

    #[test]
    fn counts_and_unique_pmtu() {
        assert_eq!(read_count(0, 1024), 1);
        assert_eq!(read_count(10_000, 4096), 3);
        assert_eq!(read_count(4096, 4096), 1);
        assert_eq!(read_count(4097, 4096), 2);
        assert_eq!(unique_pmtu(5000, 3), Some(2048));
        assert_eq!(unique_pmtu(100, 1), None); // every PMTU gives 1
        assert_eq!(unique_pmtu(4096, 3), None); // none gives 3
    }

    #[test]
    fn step_is_a_pure_transition() {
        // (state, 10) -> in order; (state, 12) -> a gap; the state before is untouched.
        let (s1, out) = step(PsnStream::new(), &pkt(1, 10), None);
        assert!(out.findings.is_empty());
        let (s2, out) = step(s1.clone(), &pkt(2, 12), None);
        assert_eq!(
            out.findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
            [Kind::PsnGap]
        );
        assert_eq!(s1.counters().psn_gaps, 0);
        assert_eq!(
            (s2.counters().psn_gaps, s2.missing(), s2.open_holes()),
            (1, 1, 1)
        );
        // the late 11 is held: nothing is reported until the next packet
        let (s3, out) = step(s2, &pkt(3, 11), None);
        assert!(out.findings.is_empty());
        let (mut s4, out) = step(s3, &pkt(4, 13), None);
        let kinds: Vec<_> = out.findings.iter().map(|f| (f.frame, f.kind)).collect();
        assert_eq!(kinds, [(3, Kind::OutOfOrder)]);
        s4.finish(None);
        assert_eq!((s4.counters().out_of_order, s4.counters().lost), (1, 0));
        assert_eq!(s4.last_psn(), Some(Psn::new_masked(13)));
    }

    #[test]
    fn pairing_window_reaches_before_the_first_psn() {
        let mut s = PsnStream::new();
        assert!(!s.pairs_with(Psn::new_masked(0)));
        s.on_request(&pkt(1, 0xFF_FFFF), None);
        s.on_request(&pkt(2, 0), None);
        assert!(s.pairs_with(Psn::new_masked(0xFF_FFFF)) && s.pairs_with(Psn::new_masked(0)));
        assert!(!s.pairs_with(Psn::new_masked(1)));
        // up to 1024 PSNs before the first one pair it, not 1025
        assert!(s.pairs_with(Psn::new_masked(0xFF_FFFF - 1024)));
        assert!(!s.pairs_with(Psn::new_masked(0xFF_FFFF - 1025)));
    }

    #[test]
    fn acknowledged_holes_are_not_captured_unless_a_nak_named_them() {
        let mut s = PsnStream::new();
        let mut out = StepOut::default();
        s.on_request_into(&pkt(1, 10), None, &mut out);
        s.on_request_into(&pkt(2, 14), None, &mut out); // 11 12 13 missing
        s.on_ack_into(&ack(3, 11, AckKind::SeqNak), &mut out); // names 11
        let mut out = StepOut::default();
        s.on_ack_into(&ack(4, 14, AckKind::Ack), &mut out); // 11 12 13 acknowledged
        let kinds: Vec<_> = out.findings.iter().map(|f| (f.frame, f.kind)).collect();
        assert_eq!(kinds, [(4, Kind::NotCaptured)]);
        let f = out.findings.iter().next().unwrap();
        assert_eq!(f.psn, Some(Psn::new_masked(12)));
        assert!(f.detail.to_string().starts_with("12-13 "), "{}", f.detail);
        s.finish(None);
        assert_eq!(
            (
                s.counters().not_captured,
                s.counters().lost,
                s.counters().unrecovered
            ),
            (2, 1, 0)
        );
        let t = s.timings().unwrap();
        // 11: revealed at frame 2, acknowledged at 4
        assert_eq!(t.recovery.summary().max, 2);
        assert_eq!(t.nak_generation.summary().max, 1);
    }

    #[test]
    fn an_acknowledgement_before_the_gap_settles_it_at_once() {
        let mut s = PsnStream::new();
        let mut out = StepOut::default();
        s.on_request_into(&pkt(1, 10), None, &mut out);
        // the ACK of 12 arrives before request 13 shows 11 and 12 missing
        s.on_ack_into(&ack(2, 12, AckKind::Ack), &mut out);
        assert_eq!(s.counters().not_captured, 0);
        let mut out = StepOut::default();
        s.on_request_into(&pkt(3, 13), None, &mut out);
        let kinds: Vec<_> = out.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [Kind::PsnGap, Kind::NotCaptured]);
        s.finish(None);
        assert_eq!((s.counters().not_captured, s.counters().lost), (2, 0));
    }

    #[test]
    fn a_late_resend_after_a_silence_is_a_timeout_run() {
        let mut s = PsnStream::new();
        let t = |frame, psn, time| ReqPacket {
            time_ns: time,
            ..pkt(frame, psn)
        };
        s.on_request(&t(1, 10, 0), None);
        s.on_request(&t(2, 12, 10), None); // 11 missing
        // 11 resent 2 ms later: rule (c), no need to wait for the next packet
        let out = s.on_request(&t(3, 11, 2_000_010), None);
        let kinds: Vec<_> = out.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [Kind::ImpliedTimeout, Kind::Retransmission]);
        s.finish(None);
        assert_eq!((s.counters().lost, s.counters().implied_timeouts), (1, 1));
        let tm = s.timings().unwrap();
        assert_eq!(tm.timeout_wait.summary().max, 2_000_000);
        assert_eq!(tm.recovery.summary().max, 2_000_000);
    }

    #[test]
    fn go_back_from_the_wrong_psn() {
        let mut s = PsnStream::new();
        let mut out = StepOut::default();
        for (f, p) in [(1, 10), (2, 11), (3, 13)] {
            s.on_request_into(&pkt(f, p), None, &mut out);
        }
        s.on_ack_into(&ack(4, 12, AckKind::SeqNak), &mut out);
        // resends from 13, not 12; then the NAK of 12 comes again
        s.on_request_into(&pkt(5, 13), None, &mut out);
        let mut out = StepOut::default();
        s.on_ack_into(&ack(6, 12, AckKind::SeqNak), &mut out);
        let got: Vec<_> = out
            .findings
            .iter()
            .map(|f| (f.frame, f.kind, f.psn))
            .collect();
        assert_eq!(got, [(5, Kind::GbnWrongStart, Some(Psn::new_masked(13)))]);
        // the second NAK came with no resend of 12 between: the responder's finding
        let peer: Vec<_> = out.peer_findings.iter().map(|f| f.kind).collect();
        assert_eq!(peer, [Kind::RepeatedNak]);
    }
}
