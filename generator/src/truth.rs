//! The truth: what interfaces.md §6 says the generated capture shows.
//!
//! The generator feeds every captured frame, in capture order, into
//! [`TruthEngine`], which applies §6.2–§6.5 literally to what was captured
//! (not to what happened on the wire), with the generator's knowledge of
//! things the analyzer must infer (a READ's PSN count, the flow pairing).
//! Where the analyzer's inference could differ from the real value (a READ
//! count settled by rule 3 or 4 after a loss), the keys that depend on it are
//! left out of the flow's truth.

// Indexing cannot panic here: flows are indexed by ids handed out when they were pushed; PFC rows
// by host × 8 + a 3-bit priority.
#![allow(clippy::indexing_slicing)]

pub mod between;
mod stream;

use rocescope_dissectors::Psn;
use rocescope_dissectors::ib::aeth::{AethKind, NakCode, Syndrome};
use rocescope_dissectors::ib::opcode::{Operation, Position};
use rocescope_dissectors::mac_control::quanta_to_ns;
use serde::Serialize;

/// §6.4 default of `--pfc-storm-ms`.
pub const PFC_STORM_NS: u64 = 200_000_000;

use stream::{AckIn, Request, Samples, Stream};

/// §6.5: verifiable frames that judge a capture's ICRCs, and the fewest that can.
const ICRC_JUDGED_BY: u32 = 16;
const ICRC_JUDGED_AT_LEAST: u32 = 8;
const PMTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// The whole truth file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Truth {
    pub version: u32,
    pub capture: CaptureTruth,
    pub flows: Vec<FlowTruth>,
    pub pfc: Vec<PfcTruth>,
    /// interfaces.md §6.6 `tcp_bth`: per TCP connection direction (left out when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_bth: Vec<crate::tcp_bth::TcpBthTruth>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct CaptureTruth {
    pub frames: u64,
    pub roce_frames: u64,
    pub rocev1_frames: u64,
    pub ib_frames: u64,
    pub pfc_frames: u64,
    pub icrc_unreliable: bool,
    pub pause_frames: u64,
    pub tcp_bth_frames: u64,
    pub truncated_frames: u64,
    pub malformed_frames: u64,
    pub icrc_errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_time_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_time_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Naks {
    pub psn_seq_err: u64,
    pub rnr: u64,
    pub invalid_request: u64,
    pub remote_access: u64,
    pub remote_op: u64,
    pub invalid_rd: u64,
}

/// One flow's truth; `None` keys are left out (§8: left to judgement).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FlowTruth {
    pub src: String,
    pub dst: String,
    pub destqp: u32,
    pub transport: &'static str,
    pub frames: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_psn: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_psn: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn_gaps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrecovered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implied_timeouts: Option<u64>,
    pub acks: u64,
    pub read_responses: u64,
    pub atomic_acks: u64,
    pub naks: Naks,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_response_gaps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unanswered_reads: Option<u64>,
    pub ecn_ce: u64,
    pub cnps: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_by_cnps: Option<u64>,
    pub icrc_errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_captured: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_ns: Option<Timing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nak_response_ns: Option<Timing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nak_generation_ns: Option<Timing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_wait_ns: Option<Timing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conformance: Option<Conformance>,
}

/// A §6.7 duration: `samples` and `max` always; p50/p99 (nearest rank) while the samples
/// are few enough for the analyzer to keep exactly (beyond, its histogram is within 1 %).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Timing {
    pub samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<Option<u64>>,
    pub max: Option<u64>,
}

/// Samples the analyzer keeps exactly.
const EXACT_SAMPLES: usize = 1024;

impl Timing {
    fn of(s: &Samples) -> Timing {
        let mut v = s.0.clone();
        v.sort_unstable();
        let n = v.len();
        let rank = |q: usize| v.get((n * q).div_ceil(100).max(1) - 1).copied();
        let exact = n <= EXACT_SAMPLES;
        Timing {
            samples: n as u64,
            p50: exact.then(|| rank(50)),
            p99: exact.then(|| rank(99)),
            max: v.last().copied(),
        }
    }
}

/// §6.7's conformance counters of one flow.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Default)]
pub struct Conformance {
    pub gbn_wrong_start: u64,
    pub repeated_nak: u64,
    pub ack_regression: u64,
    pub msn_regression: u64,
    pub read_wrong_restart: u64,
    pub response_after_fatal_nak: u64,
}

impl Conformance {
    fn add(&mut self, o: &Conformance) {
        self.gbn_wrong_start += o.gbn_wrong_start;
        self.repeated_nak += o.repeated_nak;
        self.ack_regression += o.ack_regression;
        self.msn_regression += o.msn_regression;
        self.read_wrong_restart += o.read_wrong_restart;
        self.response_after_fatal_nak += o.response_after_fatal_nak;
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PfcTruth {
    pub src_mac: String,
    pub priority: u8,
    pub pause_frames: u64,
    pub resume_frames: u64,
    pub quanta_total: u64,
    pub paused_ns: u64,
    pub storms: u64,
}

/// What the engine needs to know about one captured RoCE frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    pub time: u64,
    /// `conn * 2` (requests) or `conn * 2 + 1` (responses and CNPs).
    pub flow: usize,
    pub operation: Operation,
    pub position: Position,
    pub psn: Psn,
    /// PSNs the packet consumes (a READ: its response count).
    pub consumed: u32,
    pub dma_len: u32,
    pub syndrome: Syndrome,
    pub msn: u32,
    pub ce: bool,
    /// The captured frame's ICRC is wrong (a corrupted packet, or a sniffer's garbage).
    pub icrc_bad: bool,
    pub truncated: bool,
    pub is_ud: bool,
    pub is_uc: bool,
    /// NVIDIA DC (counted, not sequenced, §6.1).
    pub is_dc: bool,
}

#[derive(Debug, Clone, Default)]
struct FlowState {
    key: Option<(String, String, u32)>,
    order: u64,
    frames: u64,
    has_request: bool,
    req_transport: Option<&'static str>,
    has_response: bool,
    has_cnp: bool,
    /// The flow it is paired with (§6.3).
    peer: Option<usize>,
    stream: Stream,
    // UD/unsequenced messages
    ud_messages: u64,
    // responses
    acks: u64,
    read_responses: u64,
    atomic_acks: u64,
    naks: Naks,
    ecn_ce: u64,
    cnps: u64,
    throttled: u64,
    throttled_unknown: bool,
    icrc_errors: u64,
    /// `msn_regression`, on the response flow.
    last_ack_msn: Option<u32>,
    msn_regressions: u64,
    /// Its responses are NVIDIA DC's.
    dc_responses: bool,
}

impl FlowState {
    fn request(&mut self, s: &Seen) {
        let ends = s.position.ends_message()
            || matches!(
                s.operation,
                Operation::ReadRequest | Operation::CompareSwap | Operation::FetchAdd
            );
        let read = (s.operation == Operation::ReadRequest).then_some(s.dma_len);
        self.stream.request(&Request {
            time: s.time,
            psn: s.psn,
            n: if read.is_some() { s.consumed.max(1) } else { 1 },
            ends,
            read,
        });
        if matches!(s.position, Position::First | Position::Middle) {
            self.stream.pmtu_known = true;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IcrcJudging {
    /// Verifiable frames seen so far, all with a wrong ICRC.
    Open(u32),
    Reliable,
    Unreliable,
}
fn unique_pmtu(dma_len: u32, n: u32) -> bool {
    PMTUS
        .iter()
        .filter(|&&m| dma_len.div_ceil(m).max(1) == n)
        .count()
        == 1
}

#[derive(Debug, Clone, Copy, Default)]
struct PfcState {
    order: u64,
    mac: [u8; 6],
    priority: u8,
    pause_frames: u64,
    resume_frames: u64,
    quanta_total: u64,
    paused_ns: u64,
    storms: u64,
    cur: Option<(u64, u64)>,
}

impl PfcState {
    fn close(&mut self, start: u64, end: u64) {
        let len = end.saturating_sub(start);
        self.paused_ns += len;
        if len > PFC_STORM_NS {
            self.storms += 1;
        }
    }
}

/// Applies §6 to the captured frames as they are generated.
#[derive(Debug, Clone)]
pub(crate) struct TruthEngine {
    flows: Vec<FlowState>,
    pfc: Vec<PfcState>,
    capture: CaptureTruth,
    order: u64,
    link_bps: u64,
    icrc: IcrcJudging,
    /// RoCE frames (with their capture order) waiting for the §6.5 verdict.
    judged_later: Vec<(u64, Seen)>,
    /// The frames are native InfiniBand (`ib_frames`, not `roce_frames`).
    native: bool,
    /// Flows whose request stream started unpaired: the PSN-agreement candidates (paired ones
    /// are dropped as `pair_by_psn` meets them, so that many QPs cost no quadratic scan).
    requesters: Vec<usize>,
}

impl TruthEngine {
    pub(crate) fn new(
        flow_keys: Vec<(String, String, u32)>,
        link_bps: u64,
        native: bool,
    ) -> TruthEngine {
        let flows = flow_keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| FlowState {
                key: Some(k),
                stream: Stream::default(),
                // a flow's own connection partner, for flows that never pair
                peer: None,
                order: u64::try_from(i).unwrap_or(u64::MAX),
                ..FlowState::default()
            })
            .collect();
        TruthEngine {
            flows,
            pfc: Vec::with_capacity(8),
            capture: CaptureTruth::default(),
            order: 0,
            link_bps,
            icrc: IcrcJudging::Open(0),
            judged_later: Vec::new(),
            native,
            requesters: Vec::new(),
        }
    }

    /// The flows §6.3 paired into connections (by index, the smaller first).
    pub(crate) fn peers(&self) -> Vec<(usize, usize)> {
        self.flows
            .iter()
            .enumerate()
            .filter_map(|(x, f)| f.peer.filter(|&y| x < y).map(|y| (x, y)))
            .collect()
    }

    fn frame(&mut self, time: u64, truncated: bool) {
        self.capture.frames += 1;
        self.capture.first_time_ns.get_or_insert(time);
        self.capture.last_time_ns = Some(time);
        if truncated {
            self.capture.truncated_frames += 1;
        }
        self.order += 1;
    }

    /// A captured TCP segment of a `tcp_bth` connection.
    pub(crate) fn tcp(&mut self, time: u64, has_tcp_bth: bool) {
        self.frame(time, false);
        if has_tcp_bth {
            self.capture.tcp_bth_frames += 1;
        }
    }

    /// One captured RoCE frame: §6.5 judges the capture's ICRCs on the first verifiable
    /// frames before any of them takes part.
    pub(crate) fn roce(&mut self, s: &Seen) {
        self.frame(s.time, s.truncated);
        if self.native {
            self.capture.ib_frames += 1;
        } else {
            self.capture.roce_frames += 1;
        }
        let order = self.order;
        if let IcrcJudging::Open(bad) = self.icrc {
            if !s.truncated {
                self.icrc = if !s.icrc_bad {
                    IcrcJudging::Reliable
                } else if bad + 1 >= ICRC_JUDGED_BY {
                    IcrcJudging::Unreliable
                } else {
                    IcrcJudging::Open(bad + 1)
                };
            }
            self.judged_later.push((order, *s));
            if !matches!(self.icrc, IcrcJudging::Open(_)) {
                self.release();
            }
            return;
        }
        self.flow_frame(order, s);
    }

    fn release(&mut self) {
        for (order, s) in std::mem::take(&mut self.judged_later) {
            self.flow_frame(order, &s);
        }
    }

    fn flow_frame(&mut self, order: u64, s: &Seen) {
        let unreliable = self.icrc == IcrcJudging::Unreliable;
        let Some(f) = self.flows.get_mut(s.flow) else {
            return;
        };
        if f.frames == 0 {
            f.order = order;
        }
        f.frames += 1;
        // An invalid ICRC can only be seen on a frame captured whole.
        if s.icrc_bad && !s.truncated {
            f.icrc_errors += 1;
            self.capture.icrc_errors += 1;
            if !unreliable {
                return;
            }
        }
        if s.ce && (s.operation.is_request() || s.operation.is_response()) {
            f.ecn_ce += 1;
        }
        if s.operation.is_request() {
            f.has_request = true;
            f.req_transport = Some(if s.is_ud {
                "UD"
            } else if s.is_dc {
                "DC"
            } else if s.is_uc {
                "UC"
            } else {
                "RC"
            });
            f.stream.rc = !s.is_uc && !s.is_ud && !s.is_dc;
            if !s.is_ud && !s.is_dc {
                let was_started = f.stream.started;
                f.request(s);
                if !was_started && f.stream.started && f.peer.is_none() {
                    self.requesters.push(s.flow);
                }
            } else if s.position.ends_message()
                || matches!(
                    s.operation,
                    Operation::ReadRequest | Operation::CompareSwap | Operation::FetchAdd
                )
            {
                f.ud_messages += 1;
            }
            return;
        }
        if s.operation == Operation::Cnp {
            f.cnps += 1;
            f.has_cnp = true;
            let peer = f.peer;
            match peer {
                Some(r) => self.flows[r].throttled += 1,
                None => {
                    if let Some(r) = self.flows.get_mut(s.flow & !1) {
                        r.throttled_unknown = true;
                    }
                }
            }
            return;
        }
        if !s.operation.is_response() {
            return;
        }
        self.response(s);
    }

    fn response(&mut self, s: &Seen) {
        let y = s.flow;
        let f = &mut self.flows[y];
        f.has_response = true;
        f.dc_responses |= s.is_dc;
        let has_aeth = !(s.operation == Operation::ReadResponse && s.position == Position::Middle);
        let ack_syndrome = has_aeth && matches!(s.syndrome.kind(), AethKind::Ack { .. });
        let mut ack = None;
        let mut fatal = false;
        match s.operation {
            Operation::Acknowledge => match s.syndrome.kind() {
                AethKind::Ack { .. } => {
                    f.acks += 1;
                    if let Some(prev) = f.last_ack_msn.replace(s.msn) {
                        if Psn::new_masked(s.msn).distance(Psn::new_masked(prev)) < 0 {
                            f.msn_regressions += 1;
                        }
                    }
                    ack = Some(AckIn::Ack);
                }
                AethKind::RnrNak { .. } => {
                    f.naks.rnr += 1;
                    ack = Some(AckIn::RnrNak);
                }
                AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR) => {
                    f.naks.psn_seq_err += 1;
                    ack = Some(AckIn::SeqNak);
                }
                AethKind::Nak(NakCode::INVALID_REQUEST) => {
                    f.naks.invalid_request += 1;
                    fatal = true;
                }
                AethKind::Nak(NakCode::REMOTE_ACCESS_ERROR) => {
                    f.naks.remote_access += 1;
                    fatal = true;
                }
                AethKind::Nak(NakCode::REMOTE_OPERATIONAL_ERROR) => {
                    f.naks.remote_op += 1;
                    fatal = true;
                }
                AethKind::Nak(NakCode::INVALID_RD_REQUEST) => f.naks.invalid_rd += 1,
                _ => {}
            },
            Operation::ReadResponse => {
                f.read_responses += 1;
                if ack_syndrome {
                    ack = Some(AckIn::Response);
                }
            }
            Operation::AtomicAcknowledge => {
                f.atomic_acks += 1;
                if ack_syndrome {
                    ack = Some(AckIn::Response);
                }
            }
            _ => {}
        }
        self.pair_by_psn(y, s.psn);
        let Some(x) = self.flows[y].peer else {
            return;
        };
        let r = &mut self.flows[x].stream;
        if fatal && r.fatal_nak_at.is_none() {
            r.fatal_nak_at = Some(s.time);
        }
        if s.operation == Operation::ReadResponse {
            r.read_response(s.psn);
            if s.position.ends_message() {
                // rule 2 settles the READ's count before this response acknowledges
                if let Some(pr) = r.pending_read {
                    let d = s.psn.distance(Psn::new_masked(
                        u32::try_from(pr.p & 0x00FF_FFFF).unwrap_or(0),
                    ));
                    let max_n = pr.dma_len.div_ceil(PMTUS[0]).max(1);
                    if u32::try_from(d).is_ok_and(|d| d + 1 == pr.n) {
                        if unique_pmtu(pr.dma_len, pr.n) {
                            r.pmtu_known = true;
                        }
                        r.settle_read();
                    } else if u32::try_from(d).is_ok_and(|d| d < max_n) {
                        // the analyzer settles the count on another READ's response
                        r.uncertain = true;
                    }
                }
            }
        }
        if let Some(kind) = ack {
            r.ack(kind, s.psn, s.time);
        }
    }

    /// §6.3 PSN agreement: the one unpaired request flow on the reverse address pair whose
    /// PSNs the response at `psn` lies in (or just before).
    fn pair_by_psn(&mut self, y: usize, psn: Psn) {
        if self.flows[y].peer.is_some() {
            return;
        }
        let Some((ys, yd, _)) = self.flows[y].key.clone() else {
            return;
        };
        let mut found = None;
        let flows = &self.flows;
        self.requesters.retain(|&x| flows[x].peer.is_none());
        for &x in &self.requesters {
            let c = &flows[x];
            let Some((xs, xd, _)) = &c.key else { continue };
            if x == y || *xs != yd || *xd != ys {
                continue;
            }
            if c.stream.pairs_with(psn) {
                if found.is_some() {
                    return; // ambiguous: never a guess
                }
                found = Some(x);
            }
        }
        if let Some(x) = found {
            self.flows[x].peer = Some(y);
            self.flows[y].peer = Some(x);
        }
    }

    pub(crate) fn pfc(&mut self, time: u64, mac: [u8; 6], priority: u8, quanta: u16) {
        self.frame(time, false);
        self.capture.pfc_frames += 1;
        let order = self.order;
        let idx = match self
            .pfc
            .iter()
            .position(|p| p.mac == mac && p.priority == priority)
        {
            Some(i) => i,
            None => {
                self.pfc.push(PfcState {
                    order,
                    mac,
                    priority,
                    ..PfcState::default()
                });
                self.pfc.len() - 1
            }
        };
        let st = &mut self.pfc[idx];
        st.quanta_total += u64::from(quanta);
        if quanta == 0 {
            st.resume_frames += 1;
            if let Some((s, e)) = st.cur.take() {
                st.close(s, e.min(time));
            }
        } else {
            st.pause_frames += 1;
            let end = time + quanta_to_ns(quanta, self.link_bps);
            st.cur = match st.cur {
                Some((s, e)) if e > time => Some((s, end)),
                Some((s, e)) => {
                    st.close(s, e);
                    Some((time, end))
                }
                None => Some((time, end)),
            };
        }
    }

    /// The truth once every frame was fed.
    pub(crate) fn finish(&self) -> Truth {
        let mut e = self.clone();
        if let IcrcJudging::Open(bad) = e.icrc {
            e.icrc = if bad >= ICRC_JUDGED_AT_LEAST {
                IcrcJudging::Unreliable
            } else {
                IcrcJudging::Reliable
            };
            e.release();
        }
        e.capture.icrc_unreliable = e.icrc == IcrcJudging::Unreliable;
        for f in &mut e.flows {
            if f.has_request {
                f.stream.finish();
            }
        }
        let last = e.capture.last_time_ns.unwrap_or(0);
        let flows = e.flow_truths();
        let mut pfc: Vec<(u64, PfcTruth)> = e
            .pfc
            .iter()
            .map(|p| {
                let mut p = *p;
                if let Some((s, e)) = p.cur.take() {
                    p.close(s, e.min(last));
                }
                (
                    p.order,
                    PfcTruth {
                        src_mac: fmt_mac(p.mac),
                        priority: p.priority,
                        pause_frames: p.pause_frames,
                        resume_frames: p.resume_frames,
                        quanta_total: p.quanta_total,
                        paused_ns: p.paused_ns,
                        storms: p.storms,
                    },
                )
            })
            .collect();
        pfc.sort_by_key(|(o, _)| *o);
        Truth {
            version: 1,
            capture: e.capture.clone(),
            flows,
            pfc: pfc.into_iter().map(|(_, p)| p).collect(),
            tcp_bth: Vec::new(),
        }
    }

    /// Whether the flow's §6.2 keys are certain (sequenced, no READ count the analyzer may
    /// settle differently).
    fn certain(&self, i: usize) -> bool {
        let f = &self.flows[i];
        f.has_request && !matches!(f.req_transport, Some("UD" | "DC")) && !f.stream.uncertain
    }

    fn flow_truths(&self) -> Vec<FlowTruth> {
        let mut rows: Vec<(u64, FlowTruth)> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            if f.frames == 0 {
                continue;
            }
            let Some((src, dst, qp)) = f.key.clone() else {
                continue;
            };
            let st = &f.stream;
            let transport = if let Some(t) = f.req_transport {
                t
            } else if f.has_response {
                if f.dc_responses { "DC" } else { "RC" }
            } else if f.has_cnp {
                "CNP"
            } else {
                // Only frames with a bad ICRC: their opcodes still name the transport.
                if i % 2 == 0 { "RC" } else { "CNP" }
            };
            let sequenced = f.has_request && !matches!(f.req_transport, Some("UD" | "DC"));
            let certain = self.certain(i);
            let seq = |v: u64| if certain { Some(v) } else { None };
            let unrecovered = st.unrecovered();
            let (first_psn, last_psn) = if !f.has_request {
                (Some(None), Some(None))
            } else if matches!(f.req_transport, Some("UD" | "DC")) || !st.started {
                (None, None)
            } else if st.uncertain {
                (Some(Some(st.first_psn)), None)
            } else {
                (
                    Some(Some(st.first_psn)),
                    Some(Some(
                        u32::try_from((st.expected - 1) & 0x00FF_FFFF).unwrap_or_default(),
                    )),
                )
            };
            // what the capture shows of each READ's responses, once the flows are paired
            // (unpaired, §6.3 has no reverse flow to expect them in)
            let reads_known = certain && f.req_transport == Some("RC") && f.peer.is_some();
            // timings: on RC request flows when certain; none elsewhere
            let rc_request = f.req_transport == Some("RC");
            let timing = |s: &Samples| {
                if rc_request {
                    certain.then(|| Timing::of(s))
                } else {
                    Some(Timing::of(&Samples::default()))
                }
            };
            // conformance: this flow's own findings plus what its paired request flow
            // found about it (as the responder); certain only when both streams are
            let mut conf = Conformance {
                msn_regression: f.msn_regressions,
                ..Conformance::default()
            };
            let mut conf_known = true;
            if f.has_request {
                conf.add(&st.conformance);
                conf_known &= matches!(f.req_transport, Some("UD" | "DC")) || certain;
            }
            if let Some(x) = f.peer.filter(|_| f.has_response) {
                conf.add(&self.flows[x].stream.peer_conformance);
                conf_known &= self.certain(x);
            }
            let messages = if !f.has_request {
                Some(0)
            } else if sequenced {
                seq(st.messages)
            } else {
                Some(f.ud_messages)
            };
            rows.push((
                f.order,
                FlowTruth {
                    src,
                    dst,
                    destqp: qp,
                    transport,
                    frames: f.frames,
                    first_psn,
                    last_psn,
                    messages,
                    read_requests: if f.has_request && sequenced {
                        seq(st.read_requests)
                    } else {
                        Some(0)
                    },
                    psn_gaps: seq(st.psn_gaps),
                    lost: seq(st.lost + unrecovered),
                    unrecovered: seq(unrecovered),
                    out_of_order: seq(st.out_of_order),
                    duplicates: seq(st.duplicates),
                    retransmissions: seq(st.retransmissions),
                    implied_timeouts: seq(st.implied_timeouts),
                    acks: f.acks,
                    read_responses: f.read_responses,
                    atomic_acks: f.atomic_acks,
                    naks: f.naks.clone(),
                    read_response_gaps: reads_known.then_some(st.read_response_gaps),
                    unanswered_reads: reads_known.then_some(st.unanswered_reads),
                    ecn_ce: f.ecn_ce,
                    cnps: f.cnps,
                    throttled_by_cnps: if f.throttled_unknown {
                        None
                    } else {
                        Some(f.throttled)
                    },
                    icrc_errors: f.icrc_errors,
                    not_captured: if sequenced {
                        seq(st.not_captured)
                    } else {
                        Some(0)
                    },
                    recovery_ns: timing(&st.recovery),
                    nak_response_ns: timing(&st.nak_response),
                    nak_generation_ns: timing(&st.nak_generation),
                    timeout_wait_ns: timing(&st.timeout_wait),
                    conformance: conf_known.then_some(conf),
                },
            ));
        }
        rows.sort_by_key(|(o, _)| *o);
        rows.into_iter().map(|(_, f)| f).collect()
    }
}

fn fmt_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}
