//! One request flow's PSN stream as the truth sees it: interfaces.md §6.2 (classification,
//! capture loss), the §6.7 timings and the stream-side conformance rules, written from the
//! spec text on its own (the analyzer's `replay::psn` is the code under test; nothing here
//! is shared with it). Positions are extended PSNs, `BASE + offset`, so that everything after
//! the first packet is plain integer order.

use std::collections::{BTreeMap, BTreeSet};

use rocescope_dissectors::Psn;

use super::Conformance;

pub(super) const BASE: u64 = 1 << 40;
/// §6.2 rule (c)'s `--rto-min` default.
pub(crate) const RTO_MIN_NS: u64 = 1_000_000;
/// §6.3: a response this far before a flow's first PSN still pairs it.
pub(super) const PAIRING_WINDOW: u64 = 1024;

/// An acknowledgement of the paired reverse flow (§6.2 *Capture loss*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AckIn {
    /// ACKNOWLEDGE with an ACK syndrome.
    Ack,
    /// READ response or atomic ACK with an ACK-syndrome AETH.
    Response,
    SeqNak,
    RnrNak,
}

/// A late packet whose class waits for the flow's next request packet.
#[derive(Debug, Clone)]
struct Held {
    p: u64,
    n: u32,
    time: u64,
    prev_time: u64,
    highest_before: u64,
    in_run: bool,
    /// Reveal times of the missing PSNs it filled.
    filled: Vec<u64>,
}

/// A READ whose count the analyzer cannot know yet (no PMTU): §6.2 holds the
/// acknowledgements that arrive until it is settled.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingRead {
    pub p: u64,
    pub n: u32,
    pub dma_len: u32,
}

/// A READ request's responses (§6.7 `read_wrong_restart`).
#[derive(Debug, Clone)]
struct ReadTrack {
    psn: Psn,
    n: u32,
    /// Offsets `0..prefix` arrived.
    prefix: u32,
    rest: BTreeSet<u32>,
}

impl ReadTrack {
    fn offset(&self, psn: Psn) -> Option<u32> {
        u32::try_from(psn.distance(self.psn))
            .ok()
            .filter(|&o| o < self.n)
    }

    fn offer(&mut self, psn: Psn) {
        let Some(o) = self.offset(psn) else { return };
        if o == self.prefix {
            self.prefix += 1;
            while self.rest.remove(&self.prefix) {
                self.prefix += 1;
            }
        } else if o > self.prefix {
            self.rest.insert(o);
        }
    }

    fn complete(&self) -> bool {
        self.prefix >= self.n
    }

    fn any(&self) -> bool {
        self.prefix > 0 || !self.rest.is_empty()
    }
}

/// Samples of one §6.7 duration, kept whole.
#[derive(Debug, Clone, Default)]
pub(super) struct Samples(pub Vec<u64>);

impl Samples {
    fn add(&mut self, v: u64, n: usize) {
        self.0.extend(std::iter::repeat_n(v, n));
    }
}

/// The request stream of one RC/UC flow.
#[derive(Debug, Clone, Default)]
pub(super) struct Stream {
    pub rc: bool,
    pub started: bool,
    pub first_psn: u32,
    pub expected: u64,
    prev: u64,
    prev_time: u64,
    /// Missing positions, with the time of the packet that revealed them.
    missing: BTreeMap<u64, u64>,
    /// While a run lasts: the highest position seen before it began.
    run: Option<u64>,
    held: Option<Held>,
    /// Unanswered NAKs (position, time).
    unanswered: Vec<(u64, u64)>,
    /// Missing positions a NAK named while they were missing.
    named: BTreeSet<u64>,
    /// One past the highest acknowledged position.
    ack_end: u64,
    held_acks: Vec<(AckIn, Psn, u64)>,
    pub pending_read: Option<PendingRead>,
    pub pmtu_known: bool,
    /// A READ count the analyzer may settle differently: the keys that rest on it are left
    /// out.
    pub uncertain: bool,
    /// Gaps (start, end, reveal time) not yet NAKed.
    gaps: Vec<(u64, u64, u64)>,
    reads: Vec<ReadTrack>,
    // counters
    pub messages: u64,
    pub read_requests: u64,
    pub psn_gaps: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub retransmissions: u64,
    pub implied_timeouts: u64,
    pub not_captured: u64,
    pub recovery: Samples,
    pub nak_response: Samples,
    pub nak_generation: Samples,
    pub timeout_wait: Samples,
    // conformance
    pub conformance: Conformance,
    /// Findings about the responder, for the paired response flow.
    pub peer_conformance: Conformance,
    nak_since_go_back: Option<u64>,
    /// A go-back that did not start at the NAK's position (the NAK's position).
    wrong_start: Option<u64>,
    last_seq_nak: Option<u64>,
    resent_since_nak: bool,
    highest_ack: Option<u64>,
    repeats: Vec<u64>,
    pub fatal_nak_at: Option<u64>,
    fatal_reported: bool,
    /// §6.3, at the end: READs that got some but not all of their responses, and none.
    pub read_response_gaps: u64,
    pub unanswered_reads: u64,
}

/// What the stream needs of one request packet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    pub time: u64,
    pub psn: Psn,
    pub n: u32,
    pub ends: bool,
    pub read: Option<u32>,
}

impl Stream {
    pub fn first(&self) -> u64 {
        BASE + u64::from(self.first_psn)
    }

    /// Extended position of `psn`, by its serial distance from the expected PSN.
    pub fn ext(&self, psn: Psn) -> u64 {
        let e = Psn::new_masked(u32::try_from(self.expected & 0x00FF_FFFF).unwrap_or(0));
        self.expected
            .wrapping_add_signed(i64::from(psn.distance(e)))
    }

    fn is_seen(&self, p: u64) -> bool {
        p >= self.first() && p < self.expected && !self.missing.contains_key(&p)
    }

    /// §6.3: a response at `psn` lies in the PSNs consumed so far or at most
    /// [`PAIRING_WINDOW`] before the first.
    pub fn pairs_with(&self, psn: Psn) -> bool {
        if !self.started {
            return false;
        }
        let q = self.ext(psn);
        q >= self.first().saturating_sub(PAIRING_WINDOW) && q < self.expected
    }

    pub fn unrecovered(&self) -> u64 {
        self.missing.len() as u64
    }

    fn take(&mut self, p: u64) -> Option<u64> {
        self.missing.remove(&p)
    }

    /// The missing PSNs a packet at `p` consuming `n` fills: all of its range when its
    /// first PSN was missing (a READ fills its whole consumed range), else none.
    fn fill(&mut self, p: u64, n: u32) -> Vec<u64> {
        let Some(t) = self.take(p) else {
            return Vec::new();
        };
        let mut filled = vec![t];
        for q in p + 1..p + u64::from(n) {
            if let Some(t) = self.take(q) {
                filled.push(t);
            }
        }
        filled
    }

    fn repeat(&mut self, p: u64) {
        if self.repeats.len() < 64 {
            self.repeats.push(p);
        }
    }

    fn retransmission(&mut self, p: u64, filled: &[u64], time: u64) {
        self.retransmissions += 1;
        if filled.is_empty() {
            self.duplicates += 1;
        } else {
            self.lost += filled.len() as u64;
            for &t in filled {
                self.recovery.add(time.saturating_sub(t), 1);
            }
        }
        self.repeat(p);
    }

    fn timeout_run(&mut self, highest_before: u64, time: u64, prev_time: u64) {
        self.implied_timeouts += 1;
        self.timeout_wait.add(time.saturating_sub(prev_time), 1);
        self.run = Some(highest_before);
    }

    fn resolve_held(&mut self, next: Option<u64>) {
        let Some(h) = self.held.take() else { return };
        let starts_run = next.is_some_and(|q| q == h.p + u64::from(h.n) && self.is_seen(q));
        if starts_run {
            self.timeout_run(h.highest_before, h.time, h.prev_time);
            self.retransmission(h.p, &h.filled, h.time);
        } else if h.in_run {
            self.retransmission(h.p, &h.filled, h.time);
        } else if !h.filled.is_empty() {
            self.out_of_order += 1;
        } else {
            self.duplicates += 1;
            self.repeat(h.p);
        }
    }

    /// The READ count is settled now: apply what was held with it.
    pub fn settle_read(&mut self) {
        self.pending_read = None;
        let held = std::mem::take(&mut self.held_acks);
        for (kind, psn, time) in held {
            self.apply_ack(kind, psn, time);
        }
    }

    fn settle_read_rule3(&mut self, q: u64) {
        if let Some(pr) = self.pending_read {
            if q == pr.p + u64::from(pr.n) {
                if super::unique_pmtu(pr.dma_len, pr.n) {
                    self.pmtu_known = true;
                }
            } else {
                self.uncertain = true;
            }
            self.settle_read();
        }
    }

    /// One request packet that takes part (valid or unreliable ICRC), in capture order.
    pub fn request(&mut self, r: &Request) {
        if self
            .fatal_nak_at
            .is_some_and(|at| r.time.saturating_sub(at) > RTO_MIN_NS)
            && !self.fatal_reported
        {
            self.fatal_reported = true;
            self.conformance.response_after_fatal_nak += 1;
        }
        if r.read.is_some() {
            self.read_restart_check(r.psn);
        }
        let n = r.n.max(1);
        if !self.started {
            self.started = true;
            self.first_psn = r.psn.value();
            let p = self.first();
            self.expected = p + u64::from(n);
            self.prev = p;
            self.prev_time = r.time;
            self.count_new(r, n);
            self.open_read(r, p, n);
            return;
        }
        let p = self.ext(r.psn);
        self.settle_read_rule3(p);
        self.resolve_held(Some(p));
        self.conformance_on_request(p);
        if self.run.is_some_and(|limit| p > limit) {
            self.run = None;
        }
        if p >= self.expected {
            if p > self.expected {
                self.psn_gaps += 1;
                self.gap(self.expected, p, r.time);
            }
            self.expected = p + u64::from(n);
            self.count_new(r, n);
        } else {
            let filled = self.fill(p, n);
            if !filled.is_empty() {
                self.count_new(r, n);
            }
            let below_prev = p <= self.prev;
            if below_prev && self.unanswered.iter().any(|&(k, _)| p >= k) {
                // (a): the run answers every unanswered NAK
                for (_, t) in std::mem::take(&mut self.unanswered) {
                    self.nak_response.add(r.time.saturating_sub(t), 1);
                }
                self.run = Some(self.expected - 1);
                self.retransmission(p, &filled, r.time);
            } else if below_prev && self.rc && r.time.saturating_sub(self.prev_time) >= RTO_MIN_NS {
                // (c): a go-back after a silence of at least --rto-min
                self.timeout_run(self.expected - 1, r.time, self.prev_time);
                self.retransmission(p, &filled, r.time);
            } else if below_prev {
                // (b) is decided by the next request packet
                if filled.is_empty() {
                    self.repeat(p);
                }
                self.held = Some(Held {
                    p,
                    n,
                    time: r.time,
                    prev_time: self.prev_time,
                    highest_before: self.expected - 1,
                    in_run: self.run.is_some(),
                    filled,
                });
            } else if self.run.is_some() {
                self.retransmission(p, &filled, r.time);
            } else if !filled.is_empty() {
                self.out_of_order += 1;
            } else {
                self.duplicates += 1;
                self.repeat(p);
            }
        }
        self.open_read(r, p, n);
        self.prev = p;
        self.prev_time = r.time;
    }

    /// A PSN seen for the first time.
    fn count_new(&mut self, r: &Request, n: u32) {
        if r.ends {
            self.messages += 1;
        }
        if r.read.is_some() {
            self.read_requests += 1;
            self.reads.push(ReadTrack {
                psn: r.psn,
                n,
                prefix: 0,
                rest: BTreeSet::new(),
            });
        }
    }

    /// Every READ request packet's count (a new one or not) is open until settled when the
    /// PMTU is not known.
    fn open_read(&mut self, r: &Request, p: u64, n: u32) {
        if let Some(dma_len) = r.read.filter(|_| !self.pmtu_known) {
            self.pending_read = Some(PendingRead { p, n, dma_len });
        }
    }

    /// PSNs `start..end` went missing at `time`; those already acknowledged were delivered.
    fn gap(&mut self, start: u64, end: u64, time: u64) {
        let acked = self.ack_end.clamp(start, end);
        self.not_captured += acked - start;
        for q in acked..end {
            self.missing.insert(q, time);
        }
        self.gaps.push((start, end, time));
    }

    fn conformance_on_request(&mut self, p: u64) {
        if self.last_seq_nak == Some(p) {
            self.resent_since_nak = true;
        }
        if self.wrong_start == Some(p) {
            self.wrong_start = None;
        }
        if p <= self.prev {
            if let Some(nak) = self.nak_since_go_back.take() {
                if p != nak && self.wrong_start.is_none() {
                    self.wrong_start = Some(nak);
                }
            }
        }
    }

    /// An acknowledgement or NAK of the paired reverse flow, in capture order; held while a
    /// READ's count is open.
    pub fn ack(&mut self, kind: AckIn, psn: Psn, time: u64) {
        if !self.started {
            return;
        }
        if self.pending_read.is_some() {
            self.held_acks.push((kind, psn, time));
            return;
        }
        self.apply_ack(kind, psn, time);
    }

    fn apply_ack(&mut self, kind: AckIn, psn: Psn, time: u64) {
        let q = self.ext(psn);
        let nak = matches!(kind, AckIn::SeqNak | AckIn::RnrNak);
        if nak {
            if self.missing.contains_key(&q) {
                self.named.insert(q);
            }
            self.unanswered.push((q, time));
            if self.wrong_start == Some(q) {
                // named again: the wrong resend did not repair it
                self.wrong_start = None;
                self.conformance.gbn_wrong_start += 1;
            }
            self.nak_since_go_back = Some(self.nak_since_go_back.map_or(q, |n| n.min(q)));
            if kind == AckIn::SeqNak {
                if self.last_seq_nak == Some(q) && !self.resent_since_nak {
                    self.peer_conformance.repeated_nak += 1;
                }
                self.last_seq_nak = Some(q);
                self.resent_since_nak = false;
                if let Some(i) = self.gaps.iter().position(|&(s, e, _)| s <= q && q < e) {
                    let (_, _, t) = self.gaps.remove(i);
                    self.nak_generation.add(time.saturating_sub(t), 1);
                }
            }
        }
        // a NAK acknowledges the PSNs before its own; an ACK its own too
        let end = if nak { q } else { q + 1 };
        self.ack_end = self.ack_end.max(end);
        let upto = end.min(self.expected);
        let settled: Vec<(u64, u64)> = self.missing.range(..upto).map(|(&p, &t)| (p, t)).collect();
        for (p, t) in settled {
            self.missing.remove(&p);
            if self.named.remove(&p) {
                self.lost += 1;
                self.recovery.add(time.saturating_sub(t), 1);
            } else {
                self.not_captured += 1;
            }
        }
        if kind == AckIn::Ack {
            if self
                .highest_ack
                .is_some_and(|h| q < h && !self.repeats.contains(&q))
            {
                self.peer_conformance.ack_regression += 1;
            }
            self.highest_ack = Some(self.highest_ack.map_or(q, |h| h.max(q)));
            self.repeats.clear();
        }
        if self.wrong_start.is_some_and(|w| end > w) {
            // the NAK's PSN was acknowledged: the capture missed the right resend
            self.wrong_start = None;
        }
    }

    /// A READ response of the paired flow (every position).
    pub fn read_response(&mut self, psn: Psn) {
        for t in &mut self.reads {
            t.offer(psn);
        }
        self.reads.retain(|t| !t.complete());
    }

    fn read_restart_check(&mut self, psn: Psn) {
        let Some(t) = self
            .reads
            .iter()
            .rev()
            .find(|t| t.offset(psn).is_some() && t.any() && !t.complete())
        else {
            return;
        };
        if psn != t.psn.wrapping_add(t.prefix) {
            self.conformance.read_wrong_restart += 1;
        }
    }

    /// End of the capture.
    pub fn finish(&mut self) {
        if let Some(pr) = self.pending_read {
            let n4 = pr.dma_len.div_ceil(1024).max(1);
            if n4 != pr.n {
                self.uncertain = true;
            }
            self.settle_read();
        }
        self.resolve_held(None);
        if let Some(w) = self.wrong_start.take() {
            if self.ack_end <= w {
                self.conformance.gbn_wrong_start += 1;
            }
        }
        for t in &self.reads {
            if t.any() {
                self.read_response_gaps += 1;
            } else {
                self.unanswered_reads += 1;
            }
        }
    }
}
