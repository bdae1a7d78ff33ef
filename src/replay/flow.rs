//! One flow's counters and state (§6.1–§6.5), and the READ response tracker of §6.3.

// Indexing cannot panic here: the rarely used counters are indexed by positions found in them.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::LazyLock;

use rocescope_dissectors::{Psn, Transport};

use super::finding::Kind;
use super::hosts::HostKey;
use super::latency::Latency;
use super::psn::{PMTUS, PsnStream, read_count};

/// NAK counters per kind (§6.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Naks {
    pub psn_seq_err: u64,
    pub rnr: u64,
    pub invalid_request: u64,
    pub remote_access: u64,
    pub remote_op: u64,
    pub invalid_rd: u64,
}

impl Naks {
    #[must_use]
    pub fn total(&self) -> u64 {
        self.psn_seq_err
            + self.rnr
            + self.invalid_request
            + self.remote_access
            + self.remote_op
            + self.invalid_rd
    }
}

/// The RC conformance findings of one flow (§6.7), each on the flow whose sender broke the rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conformance {
    pub gbn_wrong_start: u64,
    pub repeated_nak: u64,
    pub ack_regression: u64,
    pub msn_regression: u64,
    pub read_wrong_restart: u64,
    pub response_after_fatal_nak: u64,
}

impl Conformance {
    /// Count a finding of a conformance `kind` (other kinds are ignored).
    pub fn count(&mut self, kind: Kind) {
        let slot = match kind {
            Kind::GbnWrongStart => &mut self.gbn_wrong_start,
            Kind::RepeatedNak => &mut self.repeated_nak,
            Kind::AckRegression => &mut self.ack_regression,
            Kind::MsnRegression => &mut self.msn_regression,
            Kind::ReadWrongRestart => &mut self.read_wrong_restart,
            Kind::ResponseAfterFatalNak => &mut self.response_after_fatal_nak,
            _ => return,
        };
        *slot += 1;
    }

    #[must_use]
    pub fn total(&self) -> u64 {
        self.gbn_wrong_start
            + self.repeated_nak
            + self.ack_regression
            + self.msn_regression
            + self.read_wrong_restart
            + self.response_after_fatal_nak
    }
}

/// One READ request waiting for its response PSNs `psn … psn+n-1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTrack {
    pub psn: Psn,
    /// Settled count (`None` while open).
    pub n: Option<u32>,
    pub dmalen: u32,
    pub frame: u64,
    pub time_ns: u64,
    /// Offsets `0..prefix` were received.
    prefix: u32,
    /// Further received offsets, as sorted disjoint half-open ranges (empty, and not
    /// allocated, while responses come in order).
    rest: Vec<(u32, u32)>,
}

impl ReadTrack {
    #[must_use]
    pub fn new(psn: Psn, n: Option<u32>, dmalen: u32, frame: u64, time_ns: u64) -> Self {
        ReadTrack {
            psn,
            n,
            dmalen,
            frame,
            time_ns,
            prefix: 0,
            rest: Vec::new(),
        }
    }

    /// Most response PSNs this READ can have (its count, else the count at the smallest PMTU).
    fn span(&self) -> u32 {
        self.n.unwrap_or_else(|| read_count(self.dmalen, PMTUS[0]))
    }

    /// The response at `psn` belongs to this READ: record it. False when it lies outside.
    pub fn offer(&mut self, psn: Psn) -> bool {
        let Ok(off) = u32::try_from(psn.distance(self.psn)) else {
            return false;
        };
        if off >= self.span() {
            return false;
        }
        if off < self.prefix {
            return true;
        }
        if off == self.prefix {
            self.prefix += 1;
            while let Some(&(s, e)) = self.rest.first() {
                if s > self.prefix {
                    break;
                }
                self.prefix = self.prefix.max(e);
                self.rest.remove(0);
            }
            return true;
        }
        // out of order: insert into `rest`
        let i = self.rest.partition_point(|&(_, e)| e < off);
        match self.rest.get_mut(i) {
            Some(r) if r.0 <= off && off < r.1 => {}
            Some(r) if r.0 == off + 1 => r.0 = off,
            Some(r) if r.1 == off => {
                r.1 = off + 1;
                if let Some(&(s, e)) = self.rest.get(i + 1)
                    && s == off + 1
                {
                    self.rest[i].1 = e;
                    self.rest.remove(i + 1);
                }
            }
            _ => self.rest.insert(i, (off, off + 1)),
        }
        true
    }

    #[must_use]
    pub fn any(&self) -> bool {
        self.prefix > 0 || !self.rest.is_empty()
    }

    /// True when `psn` lies in the PSNs this READ consumes.
    #[must_use]
    pub fn covers(&self, psn: Psn) -> bool {
        u32::try_from(psn.distance(self.psn)).is_ok_and(|off| off < self.span())
    }

    /// The first response PSN still missing (where a re-issued READ must start).
    #[must_use]
    pub fn first_missing(&self) -> Psn {
        self.psn.wrapping_add(self.prefix)
    }

    #[must_use]
    pub fn complete(&self) -> bool {
        self.n.is_some_and(|n| self.prefix >= n)
    }

    /// The missing response PSNs, as `a-b, c` text.
    #[must_use]
    pub fn missing_text(&self) -> String {
        let n = self.span();
        let mut out = String::new();
        let mut add = |a: u32, b: u32| {
            if a >= b {
                return;
            }
            if !out.is_empty() {
                out.push_str(", ");
            }
            let first = self.psn.wrapping_add(a);
            let last = self.psn.wrapping_add(b - 1);
            if a + 1 == b {
                let _ = write!(out, "{first}");
            } else {
                let _ = write!(out, "{first}-{last}");
            }
        };
        let mut at = self.prefix;
        for &(s, e) in &self.rest {
            add(at, s.min(n));
            at = e;
        }
        add(at, n);
        out
    }
}

/// What [`Flow::losses`] tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    pub lost: u64,
    pub unrecovered: u64,
    pub not_captured: u64,
}

/// One directional flow. Its id is its place in the replay's list of flows.
///
/// At most 80 bytes (`per_flow_state_stays_in_its_budget`), so each flow of the list spans
/// two cache lines. Not worth one: a 64-byte flow aligned to a line (counters narrowed to
/// `u32`) took 1.037x the time on 400,000 flows (`-f json`, 15 pairs), as the replay waits on
/// the flow index's slot rather than on a flow's second line.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Its key, the addresses as ids into the replay's [`Hosts`](super::hosts::Hosts)
    /// (`Replay::key` gives the [`FlowKey`](super::event::FlowKey)).
    pub key: HostKey,
    /// Transport of the first request/response opcode.
    pub transport: Option<Transport>,
    /// Transport bits of the first opcode of any kind (for flows of unknown opcodes only).
    pub any_transport: Option<Transport>,
    pub has_cnp: bool,
    /// The paired flow's id, or [`NO_PEER`] ([`Flow::peer`]).
    peer: u32,
    /// Its key was paired by a captured CM exchange (PSN agreement leaves it alone).
    pub cm_paired: bool,
    /// The capture's end found nothing to settle on it ([`Flow::finish_quiet`]): its
    /// request side counted no trouble, so [`Flow::losses`] need not read it.
    ended_quiet: bool,
    pub frames: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub acks: u64,
    /// The MSN of the flow's previous ACK (a response flow's, `msn_regression`).
    last_ack_msn: u32,
    /// Largest FIRST/MIDDLE request payload and PMTUs settled by rules 2–3 (0: none).
    pub pmtu_seen: u32,
    /// What most flows never need, allocated by the first that does ([`Flow::rare_mut`]).
    rare: Option<Box<Rare>>,
    /// The request side, allocated by a flow's first request (or acknowledgement of one): a
    /// flow of responses (ACKs, READ responses) never needs it ([`Flow::psn_mut`]).
    requests: Option<Box<Requests>>,
}

/// The state of a flow that carries requests.
#[derive(Debug, Clone, Default)]
struct Requests {
    /// RC/UC/XRC request sequencing.
    psn: PsnStream,
    latency: Latency,
}

/// What [`Flow::psn`] and [`Flow::latency`] read on a flow without requests.
static NO_REQUESTS: LazyLock<Requests> = LazyLock::new(Requests::default);

/// The part of a flow's state that stays empty on most flows: NAKs, READs, findings, UD/RD
/// counts, the CM's PMTU. Kept out of [`Flow`] so that a table of hundreds of thousands of
/// quiet flows does not carry it (issue 13: memory by flows, and small per flow).
#[derive(Debug, Clone, Default)]
pub struct Rare {
    /// READ responses and atomic ACKs (response flows of READs and atomics).
    pub read_responses: u64,
    pub atomic_acks: u64,
    /// CE-marked requests and responses, and CNPs (flows of a congested path).
    pub ecn_ce: u64,
    pub cnps: u64,
    /// UD/RD requests: counted, not sequenced.
    pub unseq_messages: u64,
    pub unseq_first: Option<Psn>,
    pub unseq_last: Option<Psn>,
    pub naks: Naks,
    pub read_response_gaps: u64,
    pub unanswered_reads: u64,
    pub throttled_by_cnps: u64,
    pub icrc_errors: u64,
    pub conformance: Conformance,
    /// When the first fatal NAK (invalid request, remote access, remote operation) for this
    /// flow's requests arrived, and whether a request after it was reported (§6.7).
    pub fatal_nak_at: Option<u64>,
    pub fatal_reported: bool,
    pub reads: VecDeque<ReadTrack>,
    /// PMTU from the CM exchange.
    pub pmtu_cm: Option<u32>,
}

/// [`Flow`]'s `peer` while it has none (flow ids are below `u32::MAX`: 4 bytes, not 8).
const NO_PEER: u32 = u32::MAX;

/// [`Flow`]'s `last_ack_msn` before its first ACK (an MSN has 24 bits: 4 bytes, not 8).
const NO_MSN: u32 = u32::MAX;

/// What [`Flow::rare`] reads on a flow that never needed its rare part.
static NO_RARE: LazyLock<Rare> = LazyLock::new(Rare::default);

impl Flow {
    /// Records the MSN of the flow's ACK; returns the previous ACK's (`msn_regression`).
    pub fn replace_ack_msn(&mut self, msn: u32) -> Option<u32> {
        let prev = std::mem::replace(&mut self.last_ack_msn, msn & 0x00FF_FFFF);
        (prev != NO_MSN).then_some(prev)
    }

    #[must_use]
    pub fn new(key: HostKey) -> Self {
        Flow {
            key,
            transport: None,
            any_transport: None,
            has_cnp: false,
            peer: NO_PEER,
            cm_paired: false,
            ended_quiet: false,
            frames: 0,
            bytes: 0,
            payload_bytes: 0,
            acks: 0,
            last_ack_msn: NO_MSN,
            pmtu_seen: 0,
            rare: None,
            requests: None,
        }
    }

    /// The id of the flow of the other direction, once paired (§6.3).
    #[inline]
    #[must_use]
    pub fn peer(&self) -> Option<u32> {
        (self.peer != NO_PEER).then_some(self.peer)
    }

    /// Pair this flow with the flow `peer` (or unpair it).
    pub fn set_peer(&mut self, peer: Option<u32>) {
        self.peer = peer.unwrap_or(NO_PEER);
    }

    /// Asks for the flow to be brought into cache: the fields a packet reads first, which
    /// lie on either of the two cache lines its 80 bytes may span (reads nothing).
    #[inline]
    pub fn prefetch(&self) {
        prefetch_index::prefetch_index(std::slice::from_ref(&self.frames), 0);
        prefetch_index::prefetch_index(std::slice::from_ref(&self.requests), 0);
        prefetch_index::prefetch_index(std::slice::from_ref(&self.peer), 0);
    }

    /// Asks for what a packet of this flow will read behind the flow itself (its request
    /// side) to be brought into cache.
    #[inline]
    pub fn prefetch_requests(&self) {
        if let Some(r) = self.requests.as_deref() {
            prefetch_index::prefetch_index(std::slice::from_ref(&r.psn), 0);
            prefetch_index::prefetch_index(std::slice::from_ref(&r.latency), 0);
        }
    }

    /// The request side (an empty one, shared, on a flow without requests).
    #[inline]
    fn requests(&self) -> &Requests {
        self.requests.as_deref().unwrap_or(&NO_REQUESTS)
    }

    /// The request side, to change: allocated the first time.
    #[inline]
    fn requests_mut(&mut self) -> &mut Requests {
        self.requests.get_or_insert_with(Box::default)
    }

    /// Request sequencing (a stream that saw nothing on a flow without requests).
    #[inline]
    #[must_use]
    pub fn psn(&self) -> &PsnStream {
        &self.requests().psn
    }

    #[inline]
    pub fn psn_mut(&mut self) -> &mut PsnStream {
        &mut self.requests_mut().psn
    }

    /// At the capture's end, finish a flow with nothing to settle (no READ open, and no
    /// request side or one with nothing open: [`PsnStream::finish_quiet`]); true if it was
    /// one, else [`Flow::finish_requests`] and the READs are still to do.
    pub fn finish_quiet(&mut self) -> bool {
        self.ended_quiet = self.rare().reads.is_empty()
            && self
                .requests
                .as_deref_mut()
                .is_none_or(|r| r.psn.finish_quiet());
        self.ended_quiet
    }

    /// PSNs lost (in the network or not: `lost`, of them `unrecovered`) and not captured, of
    /// the request side. Zero without reading it on a flow that ended quiet: a report that
    /// ranks or sums hundreds of thousands of flows would take a cache miss on each.
    #[must_use]
    pub fn losses(&self) -> Losses {
        if self.ended_quiet {
            return Losses::default();
        }
        let c = self.psn().counters();
        Losses {
            lost: c.lost,
            unrecovered: c.unrecovered,
            not_captured: c.not_captured,
        }
    }

    /// The end of the capture for the request stream (`PsnStream::finish`), without
    /// allocating a request side for a flow that never had one.
    pub fn finish_requests(&mut self, pmtu: Option<u32>) -> super::psn::StepOut {
        match self.requests.as_deref_mut() {
            Some(r) => r.psn.finish(pmtu),
            None => PsnStream::new().finish(pmtu),
        }
    }

    /// ACK latency of the flow's requests.
    #[inline]
    #[must_use]
    pub fn latency(&self) -> &Latency {
        &self.requests().latency
    }

    #[inline]
    pub fn latency_mut(&mut self) -> &mut Latency {
        &mut self.requests_mut().latency
    }

    /// The rarely used part (all zero and empty on a flow that never needed it).
    #[inline]
    #[must_use]
    pub fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The rarely used part, to change: allocated the first time.
    #[inline]
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// `RC`, `UC`, `RD`, `UD`, `XRC`; `CNP` for a flow of CNPs only.
    #[must_use]
    pub fn transport_name(&self) -> &'static str {
        match (self.transport, self.has_cnp, self.any_transport) {
            (Some(t), _, _) => t.name(),
            (None, true, _) => "CNP",
            (None, false, Some(t)) => t.name(),
            (None, false, None) => "UNKNOWN",
        }
    }

    /// §6.7's recovery timings: on RC and XRC request flows only (UC has no
    /// acknowledgements to time against).
    #[must_use]
    pub fn timings(&self) -> Option<&super::psn::Timings> {
        self.psn()
            .timings()
            .filter(|_| matches!(self.transport, Some(Transport::Rc | Transport::Xrc)))
    }

    #[must_use]
    pub fn messages(&self) -> u64 {
        self.psn().counters().messages + self.rare().unseq_messages
    }

    #[must_use]
    pub fn first_psn(&self) -> Option<Psn> {
        self.psn().first_psn().or(self.rare().unseq_first)
    }

    #[must_use]
    pub fn last_psn(&self) -> Option<Psn> {
        self.psn().last_psn().or(self.rare().unseq_last)
    }

    /// A UD/RD request packet: counted, not sequenced.
    pub fn unsequenced(&mut self, psn: Psn, ends_message: bool) {
        let r = self.rare_mut();
        if ends_message {
            r.unseq_messages += 1;
        }
        if r.unseq_first.is_none() {
            r.unseq_first = Some(psn);
        }
        r.unseq_last = Some(match r.unseq_last {
            Some(last) if last.distance(psn) >= 0 => last,
            _ => psn,
        });
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Issue 13's budget: 400,000 flows (half of them with requests, a few ACK latencies
    /// each) in 100 MiB. These sizes are what it rests on; growing one is a decision.
    #[test]
    fn per_flow_state_stays_in_its_budget() {
        let flow = std::mem::size_of::<Flow>();
        let requests = std::mem::size_of::<Requests>();
        assert!(flow <= 80, "Flow is {flow} bytes");
        assert!(requests <= 168, "a flow's request side is {requests} bytes");
        let key = HostKey {
            src: 0,
            dst: 1,
            dest_qp: 3,
        };
        let ack_flow = Flow::new(key);
        assert!(ack_flow.rare.is_none() && ack_flow.requests.is_none());
    }

    #[test]
    fn read_track_ranges() {
        let mut t = ReadTrack::new(Psn::new_masked(100), Some(6), 6000, 1, 0);
        assert!(!t.any());
        assert!(t.offer(Psn::new_masked(100)));
        assert!(t.offer(Psn::new_masked(103)));
        assert!(t.offer(Psn::new_masked(102)));
        assert!(!t.offer(Psn::new_masked(106)));
        assert!(!t.offer(Psn::new_masked(99)));
        assert_eq!(t.missing_text(), "101, 104-105");
        assert!(t.offer(Psn::new_masked(101)));
        assert_eq!(t.missing_text(), "104-105");
        assert!(t.offer(Psn::new_masked(105)) && t.offer(Psn::new_masked(104)));
        assert!(t.complete());
        assert_eq!(t.missing_text(), "");
    }
}
