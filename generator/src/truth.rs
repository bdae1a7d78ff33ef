//! The truth: what interfaces.md §6 says the generated capture shows.
//!
//! The generator feeds every captured frame, in capture order, into
//! [`TruthEngine`], which applies §6.2–§6.5 literally to what was captured
//! (not to what happened on the wire), with the generator's knowledge of
//! things the analyzer must infer (a READ's PSN count, the flow pairing).
//! Where the analyzer's inference could differ from the real value (a READ
//! count settled by rule 3 or 4 after a loss), the keys that depend on it are
//! left out of the flow's truth.

use std::collections::BTreeSet;
use std::net::IpAddr;

use rocescope_dissectors::Psn;
use rocescope_dissectors::ib::aeth::{AethKind, NakCode, Syndrome};
use rocescope_dissectors::ib::opcode::{Operation, Position};
use rocescope_dissectors::mac_control::quanta_to_ns;
use serde::Serialize;

/// §6.4 default of `--pfc-storm-ms`.
pub const PFC_STORM_NS: u64 = 200_000_000;

const BASE: u64 = 1 << 40;
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
    pub pfc_frames: u64,
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
    pub ce: bool,
    pub corrupt: bool,
    pub truncated: bool,
    pub is_ud: bool,
    pub is_uc: bool,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    p: u64,
    n: u32,
    ends: bool,
    is_read: bool,
    highest_before: u64,
    in_run: bool,
}

#[derive(Debug, Clone, Copy)]
struct PendingRead {
    p: u64,
    n: u32,
    dma_len: u32,
}

#[derive(Debug, Default)]
struct FlowState {
    key: Option<(IpAddr, IpAddr, u32)>,
    order: u64,
    frames: u64,
    has_request: bool,
    req_transport: Option<&'static str>,
    has_response: bool,
    has_cnp: bool,
    // request stream
    started: bool,
    first_psn: u32,
    expected: u64,
    last_ext: u64,
    prev: u64,
    missing: BTreeSet<u64>,
    run: Option<u64>,
    held: Option<Held>,
    unanswered: Vec<u64>,
    pmtu_known: bool,
    pending_read: Option<PendingRead>,
    uncertain: bool,
    paired: bool,
    messages: u64,
    read_requests: u64,
    psn_gaps: u64,
    lost: u64,
    out_of_order: u64,
    duplicates: u64,
    retransmissions: u64,
    implied_timeouts: u64,
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
}

impl FlowState {
    fn ext(&self, psn: Psn) -> u64 {
        let e = Psn::new_masked(u32::try_from(self.expected & 0x00FF_FFFF).unwrap_or(0));
        self.expected
            .wrapping_add_signed(i64::from(psn.distance(e)))
    }

    fn is_seen(&self, p: u64) -> bool {
        p >= BASE + u64::from(self.first_psn) && p < self.expected && !self.missing.contains(&p)
    }

    /// Remove the missing PSNs in `p..p+n`; how many there were.
    fn fill(&mut self, p: u64, n: u32) -> u64 {
        let mut filled = 0;
        for q in p..p + u64::from(n) {
            if self.missing.remove(&q) {
                filled += 1;
            }
        }
        filled
    }

    fn run_packet(&mut self, p: u64, n: u32, ends: bool, is_read: bool) {
        self.retransmissions += 1;
        let filled = self.fill(p, n);
        if filled > 0 {
            self.lost += filled;
            self.count_message(ends, is_read);
        } else {
            self.duplicates += 1;
        }
    }

    fn late_packet(&mut self, p: u64, n: u32, ends: bool, is_read: bool) {
        if self.fill(p, n) > 0 {
            self.out_of_order += 1;
            self.count_message(ends, is_read);
        } else {
            self.duplicates += 1;
        }
    }

    fn count_message(&mut self, ends: bool, is_read: bool) {
        if ends {
            self.messages += 1;
        }
        if is_read {
            self.read_requests += 1;
        }
    }

    fn resolve_held(&mut self, next: Option<u64>) {
        let Some(h) = self.held.take() else { return };
        let starts_run = next.is_some_and(|q| q == h.p + u64::from(h.n) && self.is_seen(q));
        if h.in_run {
            if starts_run {
                self.implied_timeouts += 1;
                self.run = Some(h.highest_before);
            }
        } else if starts_run {
            self.implied_timeouts += 1;
            self.run = Some(h.highest_before);
            self.run_packet(h.p, h.n, h.ends, h.is_read);
        } else {
            self.late_packet(h.p, h.n, h.ends, h.is_read);
        }
    }

    fn settle_read_rule3(&mut self, q: u64) {
        if let Some(pr) = self.pending_read.take() {
            if q == pr.p + u64::from(pr.n) {
                if unique_pmtu(pr.dma_len, pr.n) {
                    self.pmtu_known = true;
                }
            } else {
                self.uncertain = true;
            }
        }
    }

    fn request(&mut self, s: &Seen) {
        let n = s.consumed.max(1);
        let ends = s.position.ends_message()
            || matches!(
                s.operation,
                Operation::ReadRequest | Operation::CompareSwap | Operation::FetchAdd
            );
        let is_read = s.operation == Operation::ReadRequest;
        if !self.started {
            self.started = true;
            self.first_psn = s.psn.value();
            let p = BASE + u64::from(s.psn.value());
            self.expected = p + u64::from(n);
            self.last_ext = self.expected - 1;
            self.prev = p;
            self.count_message(ends, is_read);
            self.after_new(s, p, n, is_read);
            return;
        }
        let p = self.ext(s.psn);
        self.settle_read_rule3(p);
        self.resolve_held(Some(p));
        if let Some(limit) = self.run {
            if p > limit {
                self.run = None;
            }
        }
        if p < self.expected {
            let nak_run = p <= self.prev && self.unanswered.iter().any(|&k| p >= k);
            if nak_run {
                self.unanswered.clear();
                self.run = Some(self.expected - 1);
                self.run_packet(p, n, ends, is_read);
            } else if self.run.is_some() {
                self.run_packet(p, n, ends, is_read);
                if p <= self.prev {
                    self.held = Some(Held {
                        p,
                        n,
                        ends,
                        is_read,
                        highest_before: self.expected - 1,
                        in_run: true,
                    });
                }
            } else if p <= self.prev {
                self.held = Some(Held {
                    p,
                    n,
                    ends,
                    is_read,
                    highest_before: self.expected - 1,
                    in_run: false,
                });
            } else {
                self.late_packet(p, n, ends, is_read);
            }
        } else {
            if p > self.expected {
                self.psn_gaps += 1;
                for q in self.expected..p {
                    self.missing.insert(q);
                }
            }
            self.expected = p + u64::from(n);
            self.count_message(ends, is_read);
            self.after_new(s, p, n, is_read);
        }
        self.prev = p;
        self.last_ext = self.last_ext.max(p + u64::from(n) - 1);
    }

    fn after_new(&mut self, s: &Seen, p: u64, n: u32, is_read: bool) {
        if is_read && !self.pmtu_known {
            self.pending_read = Some(PendingRead {
                p,
                n,
                dma_len: s.dma_len,
            });
        }
        if matches!(s.position, Position::First | Position::Middle) {
            self.pmtu_known = true;
        }
    }

    fn finish(&mut self) {
        self.resolve_held(None);
        if let Some(pr) = self.pending_read.take() {
            let n4 = pr.dma_len.div_ceil(1024).max(1);
            if n4 != pr.n {
                self.uncertain = true;
            }
        }
    }
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
#[derive(Debug)]
pub(crate) struct TruthEngine {
    flows: Vec<FlowState>,
    pfc: Vec<PfcState>,
    capture: CaptureTruth,
    order: u64,
    link_bps: u64,
}

impl TruthEngine {
    pub(crate) fn new(flow_keys: Vec<(IpAddr, IpAddr, u32)>, link_bps: u64) -> TruthEngine {
        let flows = flow_keys
            .into_iter()
            .map(|k| FlowState {
                key: Some(k),
                unanswered: Vec::with_capacity(8),
                ..FlowState::default()
            })
            .collect();
        TruthEngine {
            flows,
            pfc: Vec::with_capacity(8),
            capture: CaptureTruth::default(),
            order: 0,
            link_bps,
        }
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

    pub(crate) fn roce(&mut self, s: &Seen) {
        self.frame(s.time, s.truncated);
        self.capture.roce_frames += 1;
        let order = self.order;
        let Some(f) = self.flows.get_mut(s.flow) else {
            return;
        };
        if f.frames == 0 {
            f.order = order;
        }
        f.frames += 1;
        // An invalid ICRC can only be seen on a frame captured whole.
        if s.corrupt && !s.truncated {
            f.icrc_errors += 1;
            self.capture.icrc_errors += 1;
            return;
        }
        if s.ce && (s.operation.is_request() || s.operation.is_response()) {
            f.ecn_ce += 1;
        }
        if s.operation.is_request() {
            f.has_request = true;
            f.req_transport = Some(if s.is_ud {
                "UD"
            } else if s.is_uc {
                "UC"
            } else {
                "RC"
            });
            if !s.is_ud {
                f.request(s);
            } else if s.position.ends_message() {
                f.messages += 1;
            }
            return;
        }
        let req_flow = s.flow & !1;
        if s.operation == Operation::Cnp {
            f.cnps += 1;
            f.has_cnp = true;
            let paired = self.flows.get(req_flow).is_some_and(|r| r.paired);
            if let Some(r) = self.flows.get_mut(req_flow) {
                if paired {
                    r.throttled += 1;
                } else {
                    r.throttled_unknown = true;
                }
            }
            return;
        }
        if !s.operation.is_response() {
            return;
        }
        f.has_response = true;
        match s.operation {
            Operation::Acknowledge => match s.syndrome.kind() {
                AethKind::Ack { .. } => f.acks += 1,
                AethKind::RnrNak { .. } => f.naks.rnr += 1,
                AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR) => f.naks.psn_seq_err += 1,
                AethKind::Nak(NakCode::INVALID_REQUEST) => f.naks.invalid_request += 1,
                AethKind::Nak(NakCode::REMOTE_ACCESS_ERROR) => f.naks.remote_access += 1,
                AethKind::Nak(NakCode::REMOTE_OPERATIONAL_ERROR) => f.naks.remote_op += 1,
                AethKind::Nak(NakCode::INVALID_RD_REQUEST) => f.naks.invalid_rd += 1,
                _ => {}
            },
            Operation::ReadResponse => f.read_responses += 1,
            Operation::AtomicAcknowledge => f.atomic_acks += 1,
            _ => {}
        }
        // Pairing (§6.3) and NAK bookkeeping on the request flow.
        let Some(r) = self.flows.get_mut(req_flow) else {
            return;
        };
        if !r.started {
            return;
        }
        let q = r.ext(s.psn);
        if !r.paired && q >= BASE + u64::from(r.first_psn) && q < r.expected {
            r.paired = true;
        }
        if !r.paired {
            return;
        }
        if s.operation == Operation::Acknowledge
            && matches!(
                s.syndrome.kind(),
                AethKind::RnrNak { .. } | AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR)
            )
        {
            r.unanswered.push(q);
        }
        if s.operation == Operation::ReadResponse && s.position.ends_message() {
            if let Some(pr) = r.pending_read.filter(|pr| q == pr.p + u64::from(pr.n) - 1) {
                r.pending_read = None;
                if unique_pmtu(pr.dma_len, pr.n) {
                    r.pmtu_known = true;
                }
            }
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

    /// The truth once every frame was fed; `drained` says whether the
    /// simulation ran to completion (every READ answered, nothing in flight).
    pub(crate) fn finish(&self, drained: bool) -> Truth {
        let last = self.capture.last_time_ns.unwrap_or(0);
        let mut flows: Vec<(u64, FlowTruth)> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            if f.frames == 0 {
                continue;
            }
            let mut f = clone_state(f);
            f.finish();
            let Some((src, dst, qp)) = f.key else {
                continue;
            };
            let transport = if let Some(t) = f.req_transport {
                t
            } else if f.has_response {
                "RC"
            } else if f.has_cnp {
                "CNP"
            } else {
                // Only frames with a bad ICRC: their opcodes still name the transport.
                if i % 2 == 0 { "RC" } else { "CNP" }
            };
            let sequenced = f.has_request && f.req_transport != Some("UD");
            let certain = sequenced && !f.uncertain;
            let seq = |v: u64| if certain { Some(v) } else { None };
            let unrecovered = f.missing.len() as u64;
            let (first_psn, last_psn) = if !f.has_request {
                (Some(None), Some(None))
            } else if f.req_transport == Some("UD") || !f.started {
                (None, None)
            } else if f.uncertain {
                (Some(Some(f.first_psn)), None)
            } else {
                (
                    Some(Some(f.first_psn)),
                    Some(Some(
                        u32::try_from(f.last_ext & 0x00FF_FFFF).unwrap_or_default(),
                    )),
                )
            };
            let reads_known = sequenced && drained && f.req_transport == Some("RC");
            flows.push((
                f.order,
                FlowTruth {
                    src: src.to_string(),
                    dst: dst.to_string(),
                    destqp: qp,
                    transport,
                    frames: f.frames,
                    first_psn,
                    last_psn,
                    messages: if f.has_request {
                        if sequenced {
                            seq(f.messages)
                        } else {
                            Some(f.messages)
                        }
                    } else {
                        Some(0)
                    },
                    read_requests: if f.has_request {
                        if sequenced {
                            seq(f.read_requests)
                        } else {
                            Some(0)
                        }
                    } else {
                        Some(0)
                    },
                    psn_gaps: seq(f.psn_gaps),
                    lost: seq(f.lost + unrecovered),
                    unrecovered: seq(unrecovered),
                    out_of_order: seq(f.out_of_order),
                    duplicates: seq(f.duplicates),
                    retransmissions: seq(f.retransmissions),
                    implied_timeouts: seq(f.implied_timeouts),
                    acks: f.acks,
                    read_responses: f.read_responses,
                    atomic_acks: f.atomic_acks,
                    naks: f.naks.clone(),
                    read_response_gaps: if reads_known { Some(0) } else { None },
                    unanswered_reads: if reads_known { Some(0) } else { None },
                    ecn_ce: f.ecn_ce,
                    cnps: f.cnps,
                    throttled_by_cnps: if f.throttled_unknown {
                        None
                    } else {
                        Some(f.throttled)
                    },
                    icrc_errors: f.icrc_errors,
                },
            ));
        }
        flows.sort_by_key(|(o, _)| *o);
        let mut pfc: Vec<(u64, PfcTruth)> = self
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
            capture: self.capture.clone(),
            flows: flows.into_iter().map(|(_, f)| f).collect(),
            pfc: pfc.into_iter().map(|(_, p)| p).collect(),
            tcp_bth: Vec::new(),
        }
    }
}

fn clone_state(f: &FlowState) -> FlowState {
    FlowState {
        key: f.key,
        missing: f.missing.clone(),
        unanswered: f.unanswered.clone(),
        naks: f.naks.clone(),
        ..*f
    }
}

fn fmt_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}
