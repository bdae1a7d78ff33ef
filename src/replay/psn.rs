//! The request PSN stream of one RC/UC/XRC flow: interfaces.md §6.2, applied literally.
//!
//! [`PsnStream`] is a pure state machine: [`step`] (or [`PsnStream::on_request`]) takes the
//! state and one request packet summary and returns the new state plus what it found; NAKs
//! and READ responses of the paired reverse flow come in through [`PsnStream::on_nak`] and
//! [`PsnStream::on_read_response_end`]. Nothing here reads a capture or allocates per packet
//! (the hole set grows only when a new hole opens).
//!
//! Positions are *extended* PSNs (see [`super::holes`]): `ext(psn) = expected + d`, with `d`
//! the serial distance of §6.2, so everything after the first packet is plain `u64` order.

use rocescope_dissectors::Psn;

use super::finding::{Detail, Finding, Findings, Kind};
use super::holes::{EXT_BASE, Holes};

/// The valid path MTUs of rule 3.
pub const PMTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// Rule 4's PMTU.
pub const DEFAULT_PMTU: u32 = 1024;

const PSN_MASK: u64 = 0x00FF_FFFF;
/// Holes more than this far behind the expected PSN cannot be told apart from the future
/// any more (serial arithmetic, §5.1): they are closed as unrecovered.
const HOLE_HORIZON: u64 = 1 << 23;

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
}

/// Counters of §6.2 for one flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PsnCounters {
    pub messages: u64,
    pub read_requests: u64,
    pub psn_gaps: u64,
    /// Missing PSNs filled by a run (lost and recovered); `finish` adds the unrecovered ones.
    pub lost: u64,
    pub unrecovered: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub retransmissions: u64,
    pub implied_timeouts: u64,
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
    /// A PMTU that rule 2 or 3 established (exactly one `m` gave the count).
    pub learned_pmtu: Option<u32>,
    pub new_read: Option<NewRead>,
    /// A pending READ's count was settled: (its PSN, n).
    pub settled: Option<(Psn, u32)>,
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
    /// It was at or after the expected PSN: `expected` becomes `p + n`.
    forward: bool,
    fill: Fill,
}

/// A late packet whose class (out-of-order/duplicate, or head of a timeout run) waits for the
/// flow's next request packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    frame: u64,
    time_ns: u64,
    psn: Psn,
    p: u64,
    /// PSNs it consumes (`None` while it is a READ with an open count).
    consumed: Option<u32>,
    /// Missing PSNs it filled.
    filled: u32,
    /// A run was going on when it arrived.
    in_run: bool,
}

/// The state of one request PSN stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PsnStream {
    started: bool,
    first_psn: Psn,
    /// Extended position of the first PSN ([`EXT_BASE`]).
    first: u64,
    /// Next expected position (one past the highest consumed).
    expected: u64,
    /// Position of the previous request packet.
    prev: u64,
    holes: Holes,
    in_run: bool,
    held: Option<Held>,
    /// Lowest unanswered NAK position (PSN sequence error or RNR).
    nak: Option<u64>,
    pending: Option<PendingRead>,
    pub counters: PsnCounters,
    /// Unrecovered PSNs already closed (beyond the serial horizon).
    closed_unrecovered: u64,
    finished: bool,
}

/// The pure transition: `(state, packet) -> (state, what it found)`.
#[must_use]
pub fn step(mut state: PsnStream, pkt: &ReqPacket, pmtu: Option<u32>) -> (PsnStream, StepOut) {
    let out = state.on_request(pkt, pmtu);
    (state, out)
}

impl PsnStream {
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
        self.holes.ranges()
    }

    /// Missing PSNs right now.
    #[must_use]
    pub fn missing(&self) -> u64 {
        self.holes.total()
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

    /// True when `psn` lies in the PSNs this stream has consumed so far (§6.3 pairing).
    #[must_use]
    pub fn has_consumed(&self, psn: Psn) -> bool {
        if !self.started {
            return false;
        }
        let e = self.ext(psn);
        e >= self.first && e < self.expected
    }

    /// Already seen: consumed so far and not missing.
    fn seen(&self, e: u64) -> bool {
        e >= self.first && e < self.expected && !self.holes.contains(e)
    }

    /// A NAK (PSN sequence error or RNR) at `psn` arrived on the paired reverse flow.
    pub fn on_nak(&mut self, psn: Psn) {
        if !self.started {
            return;
        }
        let e = self.ext(psn);
        self.nak = Some(self.nak.map_or(e, |n| n.min(e)));
    }

    /// The LAST or ONLY READ response at `psn` arrived on the paired reverse flow: rule 2
    /// settles the open READ count (rule 1 first when the PMTU is known by now).
    pub fn on_read_response_end(&mut self, psn: Psn, pmtu: Option<u32>) -> StepOut {
        let mut out = StepOut::default();
        self.on_read_response_end_into(psn, pmtu, &mut out);
        out
    }

    /// [`Self::on_read_response_end`] writing into the caller's `out`.
    pub fn on_read_response_end_into(&mut self, psn: Psn, pmtu: Option<u32>, out: &mut StepOut) {
        let Some(pr) = self.pending else {
            return;
        };
        if let Some(m) = pmtu {
            self.pending = None;
            self.apply_read(pr, read_count(pr.dmalen, m), out);
            return;
        }
        let d = psn.distance(pr.psn);
        let max_n = read_count(pr.dmalen, PMTUS[0]);
        if let Ok(d) = u32::try_from(d) {
            let n = d + 1;
            if n <= max_n {
                self.pending = None;
                self.apply_read(pr, n, out);
                out.learned_pmtu = unique_pmtu(pr.dmalen, n);
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
        if let Some(pr) = self.pending.take() {
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
        }
        // The held decision: is this packet the following PSN, already seen?
        if let Some(h) = self.held.take() {
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
            let more = self.holes.remove_range(pr.p + 1, pr.p + n64);
            let more32 = u32::try_from(more).unwrap_or(u32::MAX);
            match pr.fill {
                Fill::Run => self.counters.lost += more,
                Fill::Held => {
                    if let Some(h) = self.held.as_mut() {
                        h.filled = h.filled.saturating_add(more32);
                    }
                }
                Fill::Reorder | Fill::Nothing => {}
            }
        }
        if let Some(h) = self.held.as_mut() {
            if h.p == pr.p && h.consumed.is_none() {
                h.consumed = Some(n);
            }
        }
        out.settled = Some((pr.psn, n));
    }

    fn resolve_held(&mut self, h: Held, next: Option<Psn>, out: &mut StepOut) {
        let consumed = u64::from(h.consumed.unwrap_or(1));
        let timeout_run = next.is_some_and(|q| {
            let qe = self.ext(q);
            qe == h.p + consumed && self.seen(qe)
        });
        let kind = if timeout_run {
            // (b): a go-back by timeout, one implied_timeout per run
            self.counters.implied_timeouts += 1;
            self.in_run = true;
            out.findings.push(Finding {
                frame: h.frame,
                time_ns: h.time_ns,
                kind: Kind::ImpliedTimeout,
                flow: None,
                psn: Some(h.psn),
                detail: Detail::Timeout,
            });
            Kind::Retransmission
        } else if h.in_run {
            Kind::Retransmission
        } else if h.filled > 0 {
            Kind::OutOfOrder
        } else {
            Kind::Duplicate
        };
        self.count_class(kind, h.filled);
        out.findings
            .push(class_finding(kind, h.frame, h.time_ns, h.psn, h.filled));
    }

    fn count_class(&mut self, kind: Kind, filled: u32) {
        match kind {
            Kind::Retransmission => {
                self.counters.retransmissions += 1;
                if filled > 0 {
                    self.counters.lost += u64::from(filled);
                } else {
                    self.counters.duplicates += 1;
                }
            }
            Kind::OutOfOrder => self.counters.out_of_order += 1,
            Kind::Duplicate => self.counters.duplicates += 1,
            _ => {}
        }
    }

    /// A PSN seen for the first time: it counts in `messages` / `read_requests`.
    fn count_new(&mut self, pkt: &ReqPacket, n: Option<u32>, out: &mut StepOut) {
        if pkt.ends_message {
            self.counters.messages += 1;
        }
        if let Some(dmalen) = pkt.read_dmalen {
            self.counters.read_requests += 1;
            out.new_read = Some(NewRead {
                frame: pkt.frame,
                time_ns: pkt.time_ns,
                psn: pkt.psn,
                n,
                dmalen,
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
        }
        let p = self.ext(pkt.psn);
        if p >= self.expected {
            // d >= 0: passes the highest PSN seen, so any run ends here.
            self.in_run = false;
            let d = p - self.expected;
            if d > 0 {
                self.counters.psn_gaps += 1;
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
                self.holes.push(self.expected, p);
            }
            self.count_new(pkt, n_now, out);
            match (n_now, pkt.read_dmalen) {
                (Some(n), _) => self.expected = p + u64::from(n),
                (None, Some(dmalen)) => {
                    // Held open: the READ's own PSN is consumed; the rest when settled.
                    self.expected = p + 1;
                    self.pending = Some(PendingRead {
                        psn: pkt.psn,
                        p,
                        dmalen,
                        forward: true,
                        fill: Fill::Nothing,
                    });
                }
                (None, None) => self.expected = p + 1,
            }
            let horizon = self.expected.saturating_sub(HOLE_HORIZON);
            self.closed_unrecovered += self.holes.drop_before(horizon);
        } else {
            // d < 0
            let first_filled = self.holes.remove(p);
            let mut filled = u32::from(first_filled);
            if first_filled {
                if let (Some(_), Some(n)) = (pkt.read_dmalen, n_now) {
                    // a READ filling a missing PSN fills its whole consumed range
                    let more = self.holes.remove_range(p + 1, p + u64::from(n));
                    filled = filled.saturating_add(u32::try_from(more).unwrap_or(u32::MAX));
                }
                self.count_new(pkt, n_now, out);
            }
            let at_or_below_prev = p <= self.prev;
            let nak_run = at_or_below_prev && self.nak.is_some_and(|n| p >= n);
            let (kind, fill) = if nak_run {
                // (a): answers every unanswered NAK
                self.nak = None;
                self.in_run = true;
                (Some(Kind::Retransmission), Fill::Run)
            } else if at_or_below_prev {
                self.held = Some(Held {
                    frame: pkt.frame,
                    time_ns: pkt.time_ns,
                    psn: pkt.psn,
                    p,
                    consumed: n_now,
                    filled,
                    in_run: self.in_run,
                });
                (None, Fill::Held)
            } else if self.in_run {
                (Some(Kind::Retransmission), Fill::Run)
            } else if first_filled {
                (Some(Kind::OutOfOrder), Fill::Reorder)
            } else {
                (Some(Kind::Duplicate), Fill::Nothing)
            };
            if let Some(kind) = kind {
                self.count_class(kind, filled);
                out.findings
                    .push(class_finding(kind, pkt.frame, pkt.time_ns, pkt.psn, filled));
            }
            if let (Some(dmalen), None) = (pkt.read_dmalen, n_now) {
                self.pending = Some(PendingRead {
                    psn: pkt.psn,
                    p,
                    dmalen,
                    forward: false,
                    fill: if first_filled { fill } else { Fill::Nothing },
                });
            }
        }
        self.prev = p;
    }

    /// End of the capture: settle what is open (rules 1/4, the held decision with no next
    /// packet) and count the PSNs still missing as unrecovered (and lost).
    pub fn finish(&mut self, pmtu: Option<u32>) -> StepOut {
        let mut out = StepOut::default();
        if self.finished {
            return out;
        }
        if let Some(pr) = self.pending.take() {
            let n = read_count(pr.dmalen, pmtu.unwrap_or(DEFAULT_PMTU));
            self.apply_read(pr, n, &mut out);
        }
        if let Some(h) = self.held.take() {
            self.resolve_held(h, None, &mut out);
        }
        let unrecovered = self.holes.total() + self.closed_unrecovered;
        self.counters.unrecovered = unrecovered;
        self.counters.lost += unrecovered;
        self.finished = true;
        out
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
        }
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
        assert_eq!(s1.counters.psn_gaps, 0);
        assert_eq!(
            (s2.counters.psn_gaps, s2.missing(), s2.open_holes()),
            (1, 1, 1)
        );
        // the late 11 is held: nothing is reported until the next packet
        let (s3, out) = step(s2, &pkt(3, 11), None);
        assert!(out.findings.is_empty());
        let (mut s4, out) = step(s3, &pkt(4, 13), None);
        let kinds: Vec<_> = out.findings.iter().map(|f| (f.frame, f.kind)).collect();
        assert_eq!(kinds, [(3, Kind::OutOfOrder)]);
        s4.finish(None);
        assert_eq!((s4.counters.out_of_order, s4.counters.lost), (1, 0));
        assert_eq!(s4.last_psn(), Some(Psn::new_masked(13)));
    }

    #[test]
    fn has_consumed_tracks_the_range() {
        let mut s = PsnStream::new();
        assert!(!s.has_consumed(Psn::new_masked(0)));
        s.on_request(&pkt(1, 0xFF_FFFF), None);
        s.on_request(&pkt(2, 0), None);
        assert!(s.has_consumed(Psn::new_masked(0xFF_FFFF)) && s.has_consumed(Psn::new_masked(0)));
        assert!(!s.has_consumed(Psn::new_masked(1)) && !s.has_consumed(Psn::new_masked(0xFF_FFFE)));
    }
}
