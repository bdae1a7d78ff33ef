//! The deterministic event model: requesters, a switch with faults and PFC,
//! responders, and the capture tap.
//!
//! Topology per connection: requester NIC —(link)— switch —(link)— responder
//! NIC. Faults act in the switch on request packets. The tap sits on the
//! requester's link ([`CapturePoint::Sender`]: requests captured when sent,
//! responses when they arrive) or on the responder's link
//! ([`CapturePoint::Receiver`]: requests captured when they arrive, after
//! the faults, responses when sent). PFC frames are always captured.
//!
//! Events pop in (time, sequence number) order from an [`EventQueue`]: one
//! FIFO per event kind plus a heap for the few scheduled out of order; its
//! size is bounded by the packets in flight, not by the frames generated.
//! Captured packets wait in a small queue until [`Generator::next_frame`]
//! builds them into the caller's buffer: no allocation per frame.

use std::collections::VecDeque;
use std::net::IpAddr;

use core::fmt;

use crate::events::EventQueue;

use rocescope_dissectors::builder::{
    BuildError, EmitCache, ExtReprs, IcrcPolicy, L2, MacControlFrame, NetworkRepr, Policy,
    RoceFrame, VlanTag,
};
use rocescope_dissectors::ethernet::{self, EtherType};
use rocescope_dissectors::ib::aeth::{self, AethKind, NakCode, Syndrome};
use rocescope_dissectors::ib::opcode::{Operation, Position, Transport};
use rocescope_dissectors::ib::{atomic_ack_eth, atomic_eth, bth, deth, ieth, immdt, reth};
use rocescope_dissectors::mac_control::{self, PAUSE_DST};
use rocescope_dissectors::vlan::{self, VlanId};
use rocescope_dissectors::{Opcode, Psn, Qpn, ipv4, ipv6};

use crate::rng::Rng;
use crate::scenario::{
    CapturePoint, FaultKind, OpKind, Scenario, Selector, SizeDist, TransportKind,
};
use crate::tcp_bth::TcpModel;
use crate::truth::{Seen, Truth, TruthEngine};

/// The largest frame the generator emits (PMTU 4096 plus every header).
pub const MAX_FRAME_LEN: usize = 4096 + 256;

/// Bytes on the wire per frame besides the frame itself: preamble, SFD, FCS, IFG.
const WIRE_OVERHEAD: u64 = 8 + 4 + 12;
const DCQCN_G: u64 = 1019;
const DCQCN_PERIOD_NS: u64 = 55_000;
const DCQCN_CUT_GAP_NS: u64 = 4_000;
const READ_HISTORY: usize = 64;

/// One generated frame: `len` bytes of the buffer hold it (fewer than
/// `orig_len` when a snaplen cut it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameOut {
    pub time_ns: u64,
    pub len: usize,
    pub orig_len: usize,
}

/// Why generation stopped with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenError {
    /// The caller's buffer is smaller than [`MAX_FRAME_LEN`].
    BufferTooSmall { need: usize, have: usize },
    /// The builder refused a frame (a bug in the model).
    Build(BuildError),
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenError::BufferTooSmall { need, have } => {
                write!(f, "frame buffer too small: need {need} bytes, have {have}")
            }
            GenError::Build(e) => write!(f, "building a frame: {e}"),
        }
    }
}

impl core::error::Error for GenError {}

impl From<BuildError> for GenError {
    fn from(e: BuildError) -> Self {
        GenError::Build(e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Req,
    Resp,
}

/// A packet in flight, small and `Copy`; the frame is built only when captured.
#[derive(Debug, Clone, Copy)]
struct Pkt {
    conn: u16,
    dir: Dir,
    opcode: Opcode,
    psn: Psn,
    ack_req: bool,
    payload: u32,
    /// PSNs consumed (READ request) or total response count.
    consumed: u32,
    va: u64,
    dma_len: u32,
    syndrome: Syndrome,
    msn: u32,
    ce: bool,
    corrupt: bool,
    snap: u32,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Tx(u16),
    Arrive(u32),
    RespTx(u16),
    AtRequester(u32),
    Timer(u16),
    RnrRetry(u16),
    Recover(u16),
    Pfc(u16, u32),
}

impl Ev {
    /// The event queue lane: one per kind, as each kind is mostly scheduled in time order.
    fn lane(self) -> usize {
        match self {
            Ev::Tx(_) => 0,
            Ev::Arrive(_) => 1,
            Ev::RespTx(_) => 2,
            Ev::AtRequester(_) => 3,
            Ev::Timer(_) => 4,
            Ev::RnrRetry(_) => 5,
            Ev::Recover(_) => 6,
            Ev::Pfc(..) => 7,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    op: OpKind,
    imm: bool,
    inval: bool,
    len: u32,
    first: Psn,
    npsn: u32,
    npkts: u32,
    va: u64,
}

impl Msg {
    fn last(&self) -> Psn {
        self.first.wrapping_add(self.npsn - 1)
    }
}

#[derive(Debug, Clone, Copy)]
enum Resp {
    Ack {
        psn: Psn,
        syndrome: Syndrome,
        msn: u32,
    },
    Read {
        first: Psn,
        len: u32,
        seg: u32,
        n: u32,
        msn: u32,
    },
    Atomic {
        psn: Psn,
        msn: u32,
    },
    Cnp,
}

#[derive(Debug)]
struct Qp {
    // requester
    msgs: VecDeque<Msg>,
    cur: usize,
    cur_pkt: u32,
    next_psn: Psn,
    new_psn: Psn,
    una: Psn,
    high_sent: Psn,
    mix: Vec<(usize, u64)>,
    left: u64,
    tx_pending: bool,
    next_tx_at: u64,
    since_ackreq: u32,
    deadline: Option<u64>,
    timer_event: bool,
    rnr_wait: Option<Psn>,
    retries: u32,
    failed: bool,
    rate_bps: u64,
    target_bps: u64,
    alpha: u64,
    last_cut: Option<u64>,
    recover_pending: bool,
    recover_steps: u32,
    va_next: u64,
    // responder
    epsn: Psn,
    msn: u32,
    since_ack: u32,
    nak_sent: bool,
    last_cnp: Option<u64>,
    rnr_done: Option<Psn>,
    resp_q: VecDeque<Resp>,
    resp_pending: bool,
    reads: VecDeque<(Psn, u32, u32)>,
}

#[derive(Debug, Clone, Copy, Default)]
struct FaultState {
    seen: u64,
    hits: u64,
}

enum Captured {
    Roce(Pkt),
    Pfc { spec: u16, quanta: u16 },
}

/// Generates a scenario's frames, deterministically from a seed.
pub struct Generator<'s> {
    sc: &'s Scenario,
    rng: Rng,
    now: u64,
    events: EventQueue<Ev, 8>,
    qps: Vec<Qp>,
    faults: Vec<FaultState>,
    /// Per destination host × priority: when the switch egress is free.
    egress_free: Vec<u64>,
    /// Per host: when its NIC's transmit side is free.
    host_tx_free: Vec<u64>,
    /// Per destination host × priority: merged PFC pause intervals.
    pauses: Vec<Vec<(u64, u64)>>,
    captured: VecDeque<(u64, Captured)>,
    /// Packets in flight, referenced by index from the events (keeps heap entries small).
    slab: Vec<Pkt>,
    free: Vec<u32>,
    truth: TruthEngine,
    /// The `tcp_bth` connections, merged into the capture by time.
    tcp: TcpModel,
    frames: u64,
    stopped: bool,
    /// What consecutive frames share (ICRC of unchanged headers and payloads).
    emit_cache: EmitCache,
    /// `(len, ser_ns(len, link_bps))` of the last two lengths (`usize::MAX`: none).
    ser_memo: [(usize, u64); 2],
}

fn ser_ns(len: usize, link_bps: u64) -> u64 {
    let bits = (len as u64 + WIRE_OVERHEAD) * 8 * 1_000_000_000;
    bits.div_ceil(link_bps.max(1))
}

/// The opcode of a packet at `pos` of a message: the dissectors' table read backwards.
/// READs and atomics are single packets and a UD message is always a SEND ONLY; an
/// invalidate wins over immediate data, and either is dropped where no opcode carries it
/// (a WRITE with an invalidate, a FIRST with immediate data).
fn opcode_for(t: TransportKind, op: OpKind, pos: Position, imm: bool, inval: bool) -> Opcode {
    let (transport, operation, pos) = match (t, op) {
        (TransportKind::Ud, _) => (Transport::Ud, Operation::Send, Position::Only),
        (TransportKind::Rc | TransportKind::TcpBth, op) => (Transport::Rc, operation(op), pos),
        (TransportKind::Uc, op) => (Transport::Uc, operation(op), pos),
    };
    let pos = if operation == Operation::Send || operation == Operation::RdmaWrite {
        pos
    } else {
        Position::Only
    };
    // in order of preference; scenario validation keeps every combination in the table
    let tries = [
        (false, true, inval),
        (true, false, imm),
        (false, false, true),
    ];
    tries
        .into_iter()
        .filter(|&(_, _, wanted)| wanted)
        .find_map(|(i, v, _)| Opcode::lookup(transport, operation, pos, i, v))
        .unwrap_or(Opcode::RC_SEND_ONLY)
}

fn operation(op: OpKind) -> Operation {
    match op {
        OpKind::Send => Operation::Send,
        OpKind::Write => Operation::RdmaWrite,
        OpKind::Read => Operation::ReadRequest,
        OpKind::CmpSwap => Operation::CompareSwap,
        OpKind::FetchAdd => Operation::FetchAdd,
    }
}

fn position(k: u32, n: u32) -> Position {
    if n <= 1 {
        Position::Only
    } else if k == 0 {
        Position::First
    } else if k + 1 == n {
        Position::Last
    } else {
        Position::Middle
    }
}

impl<'s> Generator<'s> {
    /// A generator for `scenario`; the same seed always gives the same bytes.
    #[must_use]
    pub fn new(scenario: &'s Scenario, seed: u64) -> Generator<'s> {
        let sc = scenario;
        let nhosts = sc.hosts.len();
        let mut qps = Vec::with_capacity(sc.connections.len());
        let mut flow_keys = Vec::with_capacity(sc.connections.len() * 2);
        for (ci, c) in sc.connections.iter().enumerate() {
            let mix: Vec<(usize, u64)> = sc
                .traffic
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    t.connection == ci && t.messages > 0 && c.transport != TransportKind::TcpBth
                })
                .map(|(i, t)| (i, t.messages))
                .collect();
            let left = mix.iter().map(|m| m.1).fold(0u64, u64::saturating_add);
            let start = Psn::new_masked(c.start_psn);
            let window = usize::try_from(c.window.min(4096)).unwrap_or(4096);
            qps.push(Qp {
                msgs: VecDeque::with_capacity(window + 4),
                cur: 0,
                cur_pkt: 0,
                next_psn: start,
                new_psn: start,
                una: start,
                high_sent: start,
                mix,
                left,
                tx_pending: false,
                next_tx_at: c.start_ns,
                since_ackreq: 0,
                deadline: None,
                timer_event: false,
                rnr_wait: None,
                retries: 0,
                failed: false,
                rate_bps: sc.link_bps,
                target_bps: sc.link_bps,
                alpha: 1023,
                last_cut: None,
                recover_pending: false,
                recover_steps: 0,
                va_next: 0x7f00_0000_0000 + (ci as u64) * 0x1_0000_0000,
                epsn: start,
                msn: 0,
                since_ack: 0,
                nak_sent: false,
                last_cnp: None,
                rnr_done: None,
                resp_q: VecDeque::with_capacity(window + 4),
                resp_pending: false,
                reads: VecDeque::with_capacity(READ_HISTORY),
            });
            let a = sc.hosts[c.requester].ip;
            let b = sc.hosts[c.responder].ip;
            flow_keys.push((a, b, c.responder_qpn));
            flow_keys.push((b, a, c.requester_qpn));
        }
        let mut pauses = vec![Vec::new(); nhosts * 8];
        for p in &sc.pfc {
            let list = &mut pauses[p.host * 8 + usize::from(p.priority)];
            let dur = mac_control::quanta_to_ns(p.quanta, sc.link_bps);
            let end = p.start_ns.saturating_add(p.duration_ns);
            let mut t = p.start_ns;
            while t < end {
                let until = if p.resume {
                    (t + dur).min(end)
                } else {
                    t + dur
                };
                list.push((t, until));
                t += p.refresh_ns;
            }
        }
        for list in &mut pauses {
            list.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(list.len());
            for &(s, e) in list.iter() {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            *list = merged;
        }
        let mut g = Generator {
            sc,
            rng: Rng::new(seed),
            now: 0,
            events: EventQueue::new(),
            qps,
            faults: vec![FaultState::default(); sc.faults.len()],
            egress_free: vec![0; nhosts * 8],
            host_tx_free: vec![0; nhosts],
            pauses,
            captured: VecDeque::with_capacity(64),
            slab: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            truth: TruthEngine::new(flow_keys, sc.link_bps),
            tcp: TcpModel::new(sc, seed),
            frames: 0,
            stopped: false,
            emit_cache: EmitCache::new(),
            ser_memo: [(usize::MAX, 0); 2],
        };
        for ci in 0..sc.connections.len() {
            if sc.connections[ci].transport == TransportKind::TcpBth {
                continue; // modelled by `tcp_bth::TcpModel`
            }
            let ci16 = u16::try_from(ci).unwrap_or(u16::MAX);
            let at = sc.connections[ci].start_ns;
            g.qps[ci].tx_pending = true;
            g.push(at, Ev::Tx(ci16));
        }
        for (pi, p) in sc.pfc.iter().enumerate() {
            g.push(
                p.start_ns,
                Ev::Pfc(u16::try_from(pi).unwrap_or(u16::MAX), 0),
            );
        }
        g
    }

    /// `ser_ns(len, link_bps)`, remembering the last two lengths (a division saved).
    fn ser_link(&mut self, len: usize) -> u64 {
        if let Some(&(_, ser)) = self.ser_memo.iter().find(|m| m.0 == len) {
            return ser;
        }
        let ser = ser_ns(len, self.sc.link_bps);
        self.ser_memo = [(len, ser), self.ser_memo[0]];
        ser
    }

    fn park(&mut self, p: Pkt) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = p;
            i
        } else {
            self.slab.push(p);
            u32::try_from(self.slab.len() - 1).unwrap_or(u32::MAX)
        }
    }

    fn unpark(&mut self, i: u32) -> Pkt {
        self.free.push(i);
        self.slab[i as usize]
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.events.push(ev.lane(), t, ev);
    }

    /// Build the next frame into `buf` (at least [`MAX_FRAME_LEN`] bytes);
    /// `None` when the scenario is over.
    pub fn next_frame(&mut self, buf: &mut [u8]) -> Option<Result<FrameOut, GenError>> {
        if buf.len() < MAX_FRAME_LEN {
            return Some(Err(GenError::BufferTooSmall {
                need: MAX_FRAME_LEN,
                have: buf.len(),
            }));
        }
        loop {
            // a tcp_bth segment goes first when nothing of the RoCE model comes before it
            if let Some(tt) = self.tcp.peek() {
                let roce_next = self
                    .captured
                    .front()
                    .map(|c| c.0)
                    .or_else(|| self.events.peek_time());
                if roce_next.is_none_or(|r| tt < r) {
                    if tt > self.sc.stop_ns || self.frames >= self.sc.max_frames {
                        self.stopped = true;
                        self.captured.clear();
                        self.events.clear();
                        return None;
                    }
                    self.frames += 1;
                    return Some(self.build_tcp(buf));
                }
            }
            if let Some((t, c)) = self.captured.pop_front() {
                if self.frames >= self.sc.max_frames {
                    self.stopped = true;
                    self.captured.clear();
                    self.events.clear();
                    return None;
                }
                self.frames += 1;
                return Some(self.build(t, &c, buf));
            }
            let e = self.events.pop()?;
            if e.t > self.sc.stop_ns {
                self.stopped = true;
                self.events.clear();
                return None;
            }
            self.now = e.t;
            self.handle(e.ev);
        }
    }

    /// Run to the end, handing each frame to `f(time_ns, bytes, orig_len)`.
    ///
    /// # Errors
    /// The first error of `f` or of the generator.
    pub fn for_each<E: From<GenError>>(
        &mut self,
        mut f: impl FnMut(u64, &[u8], usize) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut buf = vec![0u8; MAX_FRAME_LEN];
        let mut n = 0;
        while let Some(r) = self.next_frame(&mut buf) {
            let out = r?;
            f(out.time_ns, &buf[..out.len], out.orig_len)?;
            n += 1;
        }
        Ok(n)
    }

    /// What §6 says the frames generated so far show (call after the last frame).
    #[must_use]
    pub fn truth(&self) -> Truth {
        let mut t = self.truth.finish(!self.stopped && self.events.is_empty());
        t.tcp_bth = self.tcp.truth();
        t
    }

    fn build_tcp(&mut self, buf: &mut [u8]) -> Result<FrameOut, GenError> {
        let Some(r) = self.tcp.build_next(self.sc, buf) else {
            return Err(GenError::Build(BuildError::InvalidRepr(
                "no tcp_bth segment",
            )));
        };
        let (t, len, has_bth) = r?;
        let time_ns = self.sc.start_ns.saturating_add(t);
        self.truth.tcp(time_ns, has_bth);
        Ok(FrameOut {
            time_ns,
            len,
            orig_len: len,
        })
    }

    /// Frames generated so far.
    #[must_use]
    pub fn frames(&self) -> u64 {
        self.frames
    }

    // ------------------------------------------------------------ events

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Tx(c) => self.on_tx(c),
            Ev::Arrive(i) => {
                let p = self.unpark(i);
                self.on_arrive(p);
            }
            Ev::RespTx(c) => self.on_resp_tx(c),
            Ev::AtRequester(i) => {
                let p = self.unpark(i);
                self.on_at_requester(p);
            }
            Ev::Timer(c) => self.on_timer(c),
            Ev::RnrRetry(c) => {
                let q = &mut self.qps[usize::from(c)];
                if let Some(p) = q.rnr_wait.take() {
                    self.go_back(c, p);
                    self.kick(c);
                }
            }
            Ev::Recover(c) => self.on_recover(c),
            Ev::Pfc(i, k) => self.on_pfc(i, k),
        }
    }

    fn capture(&mut self, p: Pkt) {
        self.captured.push_back((self.now, Captured::Roce(p)));
    }

    fn kick(&mut self, c: u16) {
        let q = &mut self.qps[usize::from(c)];
        if q.tx_pending || q.failed {
            return;
        }
        q.tx_pending = true;
        let at = q.next_tx_at.max(self.now);
        self.push(at, Ev::Tx(c));
    }

    fn kick_resp(&mut self, c: u16) {
        if self.qps[usize::from(c)].resp_pending {
            return;
        }
        self.qps[usize::from(c)].resp_pending = true;
        self.push(self.now, Ev::RespTx(c));
    }

    /// Switch egress toward `dst` at priority `prio`: FIFO behind earlier
    /// packets, held while PFC pauses it. Returns when the packet has arrived.
    fn through_switch(&mut self, dst: usize, prio: u8, ready: u64, ser: u64) -> u64 {
        let slot = dst * 8 + usize::from(prio & 7);
        let mut t = ready.max(self.egress_free[slot]);
        for &(s, e) in &self.pauses[slot] {
            if s > t {
                break;
            }
            if t < e {
                t = e;
            }
        }
        let done = t + ser;
        self.egress_free[slot] = done;
        done + self.sc.delay_ns
    }

    fn generate_msg(&mut self, ci: usize) -> bool {
        let conn = &self.sc.connections[ci];
        let q = &mut self.qps[ci];
        if q.left == 0 {
            return false;
        }
        let mut r = self.rng.below(q.left);
        let mut pick = 0;
        for (k, m) in q.mix.iter().enumerate() {
            if r < m.1 {
                pick = k;
                break;
            }
            r -= m.1;
        }
        let (ti, _) = q.mix[pick];
        q.mix[pick].1 -= 1;
        q.left -= 1;
        let t = &self.sc.traffic[ti];
        let len = match &t.size {
            SizeDist::Fixed(s) => *s,
            SizeDist::Uniform { min, max } => {
                let span = u64::from(max - min) + 1;
                min + u32::try_from(self.rng.below(span)).unwrap_or(0)
            }
            SizeDist::Choice(v) => {
                let i = usize::try_from(self.rng.below(v.len() as u64)).unwrap_or(0);
                v.get(i).copied().unwrap_or(0)
            }
        };
        let pkts = len.div_ceil(conn.pmtu).max(1);
        let (npsn, npkts) = match t.op {
            OpKind::Send | OpKind::Write => (pkts, pkts),
            OpKind::Read => (pkts, 1),
            OpKind::CmpSwap | OpKind::FetchAdd => (1, 1),
        };
        let va = q.va_next;
        q.va_next = q
            .va_next
            .wrapping_add(u64::from(len.div_ceil(64).max(1)) * 64);
        q.msgs.push_back(Msg {
            op: t.op,
            imm: t.immediate,
            inval: t.invalidate,
            len,
            first: q.new_psn,
            npsn,
            npkts,
            va,
        });
        q.new_psn = q.new_psn.wrapping_add(npsn);
        true
    }

    /// Point the requester at PSN `p` (go-back-N).
    fn go_back(&mut self, c: u16, p: Psn) {
        let q = &mut self.qps[usize::from(c)];
        let found = q
            .msgs
            .iter()
            .position(|m| p.distance(m.first) >= 0 && p.distance(m.first.wrapping_add(m.npsn)) < 0);
        match found {
            Some(i) => {
                let m = q.msgs[i];
                q.cur = i;
                if m.npkts == 1 {
                    q.cur_pkt = 0;
                    q.next_psn = m.first;
                } else {
                    q.cur_pkt = u32::try_from(p.distance(m.first)).unwrap_or(0);
                    q.next_psn = p;
                }
            }
            None => {
                q.cur = q.msgs.len();
                q.cur_pkt = 0;
                q.next_psn = q.new_psn;
            }
        }
    }

    /// Everything up to and including `p` is acknowledged.
    fn acked(&mut self, c: u16, p: Psn) {
        let timeout = 4096u64 << self.sc.connections[usize::from(c)].local_ack_timeout;
        let q = &mut self.qps[usize::from(c)];
        if p.distance(q.una) < 0 || p.distance(q.high_sent) >= 0 {
            return;
        }
        q.una = p.wrapping_add(1);
        q.retries = 0;
        let mut popped = 0;
        while let Some(m) = q.msgs.front() {
            if q.cur > popped && m.last().distance(p) <= 0 {
                q.msgs.pop_front();
                popped += 1;
            } else {
                break;
            }
        }
        q.cur -= popped.min(q.cur);
        if q.next_psn.distance(q.una) < 0 {
            let una = q.una;
            self.go_back(c, una);
        }
        let q = &mut self.qps[usize::from(c)];
        q.deadline = if q.high_sent.distance(q.una) > 0 {
            Some(self.now + timeout)
        } else {
            None
        };
        self.kick(c);
    }

    fn arm_timer(&mut self, c: u16) {
        let timeout = 4096u64 << self.sc.connections[usize::from(c)].local_ack_timeout;
        let q = &mut self.qps[usize::from(c)];
        if q.deadline.is_none() {
            q.deadline = Some(self.now + timeout);
        }
        if !q.timer_event {
            q.timer_event = true;
            let at = q.deadline.unwrap_or(self.now);
            self.push(at, Ev::Timer(c));
        }
    }

    fn on_timer(&mut self, c: u16) {
        let conn = &self.sc.connections[usize::from(c)];
        let q = &mut self.qps[usize::from(c)];
        q.timer_event = false;
        let Some(d) = q.deadline else { return };
        if q.failed {
            return;
        }
        if self.now < d {
            q.timer_event = true;
            self.push(d, Ev::Timer(c));
            return;
        }
        q.deadline = None;
        if q.high_sent.distance(q.una) <= 0 || q.rnr_wait.is_some() {
            return;
        }
        q.retries += 1;
        if conn.retry_cnt != 7 && q.retries > u32::from(conn.retry_cnt) {
            q.failed = true;
            return;
        }
        let una = q.una;
        self.go_back(c, una);
        self.kick(c);
        self.arm_timer(c);
    }

    fn select(&mut self, fi: usize, conn: usize, psn: Psn, retx: bool) -> bool {
        let sel: Selector = self.sc.faults[fi].select;
        let st = &mut self.faults[fi];
        if st.hits >= sel.count {
            return false;
        }
        if sel.connection.is_some_and(|c| c != conn) {
            return false;
        }
        if self.now < sel.from_ns || self.now >= sel.until_ns {
            return false;
        }
        if let Some(p) = sel.psn {
            if p != psn.value() || retx {
                return false;
            }
        }
        if let Some(e) = sel.every {
            st.seen += 1;
            if st.seen % e != 0 {
                return false;
            }
        }
        if let Some(pr) = sel.probability {
            if self.rng.unit() >= pr {
                return false;
            }
        }
        self.faults[fi].hits += 1;
        true
    }

    /// `roce_frame(p).buffer_len()` without building the frame.
    fn frame_len(&self, p: &Pkt) -> usize {
        let conn = &self.sc.connections[usize::from(p.conn)];
        let src = match p.dir {
            Dir::Req => conn.requester,
            Dir::Resp => conn.responder,
        };
        let h = &self.sc.hosts[src];
        let l2 = ethernet::HEADER_LEN
            + if h.vlan.is_some() {
                vlan::HEADER_LEN
            } else {
                0
            };
        let net = if h.ip.is_ipv4() { 20 + 8 } else { 40 + 8 };
        let headers = p
            .opcode
            .info()
            .and_then(|i| i.header_bytes())
            .unwrap_or(bth::HEADER_LEN);
        let payload = p.payload as usize;
        (l2 + net + headers + payload + (payload.wrapping_neg() & 3) + 4).max(60)
    }

    fn on_tx(&mut self, c: u16) {
        let ci = usize::from(c);
        let conn = &self.sc.connections[ci];
        self.qps[ci].tx_pending = false;
        {
            let q = &self.qps[ci];
            if q.failed || q.rnr_wait.is_some() || self.now < conn.start_ns {
                return;
            }
            if conn.transport == TransportKind::Rc
                && q.next_psn.distance(q.una) >= i32::try_from(conn.window).unwrap_or(i32::MAX)
            {
                return;
            }
        }
        let h = conn.requester;
        if self.host_tx_free[h] > self.now {
            self.qps[ci].tx_pending = true;
            let at = self.host_tx_free[h];
            self.push(at, Ev::Tx(c));
            return;
        }
        if self.qps[ci].cur >= self.qps[ci].msgs.len() && !self.generate_msg(ci) {
            return;
        }
        let q = &mut self.qps[ci];
        let m = q.msgs[q.cur];
        let k = q.cur_pkt;
        let pos = position(k, m.npkts);
        let opcode = opcode_for(conn.transport, m.op, pos, m.imm, m.inval);
        let payload = match m.op {
            OpKind::Send | OpKind::Write => {
                let off = k.saturating_mul(conn.pmtu);
                m.len.saturating_sub(off).min(conn.pmtu)
            }
            _ => 0,
        };
        let psn = q.next_psn;
        q.since_ackreq += 1;
        let ack_req = conn.transport == TransportKind::Rc
            && (pos.ends_message()
                || matches!(m.op, OpKind::Read | OpKind::CmpSwap | OpKind::FetchAdd)
                || (conn.ack_req_every > 0 && q.since_ackreq >= conn.ack_req_every));
        if ack_req {
            q.since_ackreq = 0;
        }
        let consumed = if m.op == OpKind::Read { m.npsn } else { 1 };
        q.next_psn = psn.wrapping_add(consumed);
        q.cur_pkt += 1;
        if q.cur_pkt >= m.npkts {
            q.cur += 1;
            q.cur_pkt = 0;
        }
        let retx = psn.distance(q.high_sent) < 0;
        if q.next_psn.distance(q.high_sent) > 0 {
            q.high_sent = q.next_psn;
        }
        if conn.transport != TransportKind::Rc {
            // Nothing acknowledges UC/UD: a sent message is done.
            while q.cur > 0 {
                q.msgs.pop_front();
                q.cur -= 1;
            }
            q.una = q.next_psn;
        }
        let pkt = Pkt {
            conn: c,
            dir: Dir::Req,
            opcode,
            psn,
            ack_req,
            payload,
            consumed,
            va: m.va.wrapping_add(u64::from(k) * u64::from(conn.pmtu)),
            dma_len: m.len,
            syndrome: Syndrome(0),
            msn: 0,
            ce: false,
            corrupt: false,
            snap: 0,
        };
        let len = self.frame_len(&pkt);
        let ser = self.ser_link(len);
        self.host_tx_free[h] = self.now + ser;
        if conn.transport == TransportKind::Rc {
            self.arm_timer(c);
        }
        self.switch_request(pkt, ci, retx, ser);
        // pacing
        let q = &mut self.qps[ci];
        // (the shortcuts give the same numbers without a division)
        let by_load = if conn.load_ppm == 1_000_000 && ser <= u64::MAX / 1_000_000 {
            ser
        } else {
            ser * 1_000_000 / u64::from(conn.load_ppm)
        };
        let by_rate = if q.rate_bps == self.sc.link_bps {
            ser
        } else {
            ser_ns(len, q.rate_bps.max(1))
        };
        q.next_tx_at = self.now + by_load.max(by_rate);
        self.kick(c);
    }

    /// The switch: apply the faults to a request and deliver it.
    fn switch_request(&mut self, pkt: Pkt, ci: usize, retx: bool, ser: u64) {
        let conn = &self.sc.connections[ci];
        let mut out = pkt;
        let mut drop = false;
        let mut dup = false;
        let mut delay = 0;
        for fi in 0..self.sc.faults.len() {
            let kind = self.sc.faults[fi].kind;
            if kind == FaultKind::Rnr {
                continue;
            }
            if kind == FaultKind::EcnCe && self.sc.hosts[conn.requester].ecn == 0 {
                continue;
            }
            if !self.select(fi, ci, pkt.psn, retx) {
                continue;
            }
            match kind {
                FaultKind::Drop => drop = true,
                FaultKind::Duplicate => dup = true,
                FaultKind::Reorder { delay_ns } => delay = delay_ns,
                FaultKind::CorruptIcrc => out.corrupt = true,
                FaultKind::EcnCe => out.ce = true,
                FaultKind::Truncate { snaplen } => out.snap = snaplen,
                FaultKind::Rnr => {}
            }
        }
        if self.sc.capture == CapturePoint::Sender {
            let mut seen = pkt;
            seen.snap = out.snap;
            self.capture(seen);
        }
        if drop {
            return;
        }
        let prio = self.sc.hosts[conn.requester].priority();
        let at_switch = self.now + ser + self.sc.delay_ns;
        if delay > 0 {
            // held back inside the switch, overtaken by later packets
            let t = at_switch + delay + ser + self.sc.delay_ns;
            let i = self.park(out);
            self.push(t, Ev::Arrive(i));
        } else {
            let t = self.through_switch(conn.responder, prio, at_switch, ser);
            let i = self.park(out);
            self.push(t, Ev::Arrive(i));
        }
        if dup {
            let t = self.through_switch(conn.responder, prio, at_switch, ser);
            let i = self.park(out);
            self.push(t, Ev::Arrive(i));
        }
    }

    fn on_arrive(&mut self, p: Pkt) {
        if self.sc.capture == CapturePoint::Receiver {
            self.capture(p);
        }
        if p.corrupt {
            return; // the NIC discards it
        }
        let ci = usize::from(p.conn);
        let conn = &self.sc.connections[ci];
        if p.ce {
            let q = &mut self.qps[ci];
            if q.last_cnp
                .is_none_or(|t| self.now.saturating_sub(t) >= conn.cnp_interval_ns)
            {
                q.last_cnp = Some(self.now);
                q.resp_q.push_back(Resp::Cnp);
                self.kick_resp(p.conn);
            }
        }
        if conn.transport != TransportKind::Rc {
            return;
        }
        let Some(info) = p.opcode.info() else { return };
        let d = p.psn.distance(self.qps[ci].epsn);
        if d > 0 {
            let q = &mut self.qps[ci];
            if !q.nak_sent {
                q.nak_sent = true;
                q.resp_q.push_back(Resp::Ack {
                    psn: q.epsn,
                    syndrome: Syndrome::nak(NakCode::PSN_SEQUENCE_ERROR),
                    msn: q.msn,
                });
                self.kick_resp(p.conn);
            }
            return;
        }
        if d < 0 {
            // duplicate (C9-105): replay READ / atomic, re-ACK the rest
            let q = &mut self.qps[ci];
            match info.operation {
                Operation::ReadRequest => {
                    if let Some(&(first, n, len)) = q.reads.iter().find(|r| r.0 == p.psn) {
                        q.resp_q.push_back(Resp::Read {
                            first,
                            len,
                            seg: 0,
                            n,
                            msn: q.msn,
                        });
                    }
                }
                Operation::CompareSwap | Operation::FetchAdd => {
                    q.resp_q.push_back(Resp::Atomic {
                        psn: p.psn,
                        msn: q.msn,
                    });
                }
                _ => q.resp_q.push_back(Resp::Ack {
                    psn: q.epsn.wrapping_sub(1),
                    syndrome: Syndrome::ack(conn.credits),
                    msn: q.msn,
                }),
            }
            self.kick_resp(p.conn);
            return;
        }
        // in sequence
        if info.operation == Operation::Send
            && info.position.starts_message()
            && self.qps[ci].rnr_done != Some(p.psn)
        {
            for fi in 0..self.sc.faults.len() {
                if self.sc.faults[fi].kind == FaultKind::Rnr && self.select(fi, ci, p.psn, false) {
                    let q = &mut self.qps[ci];
                    q.rnr_done = Some(p.psn);
                    q.nak_sent = true;
                    q.resp_q.push_back(Resp::Ack {
                        psn: p.psn,
                        syndrome: Syndrome::rnr_nak(conn.rnr_timer),
                        msn: q.msn,
                    });
                    self.kick_resp(p.conn);
                    return;
                }
            }
        }
        let q = &mut self.qps[ci];
        q.nak_sent = false;
        match info.operation {
            Operation::ReadRequest => {
                q.epsn = p.psn.wrapping_add(p.consumed);
                q.msn = (q.msn + 1) & aeth::MSN_MAX;
                if q.reads.len() >= READ_HISTORY {
                    q.reads.pop_front();
                }
                q.reads.push_back((p.psn, p.consumed, p.dma_len));
                q.resp_q.push_back(Resp::Read {
                    first: p.psn,
                    len: p.dma_len,
                    seg: 0,
                    n: p.consumed,
                    msn: q.msn,
                });
                q.since_ack = 0;
            }
            Operation::CompareSwap | Operation::FetchAdd => {
                q.epsn = p.psn.wrapping_add(1);
                q.msn = (q.msn + 1) & aeth::MSN_MAX;
                q.resp_q.push_back(Resp::Atomic {
                    psn: p.psn,
                    msn: q.msn,
                });
                q.since_ack = 0;
            }
            _ => {
                q.epsn = p.psn.wrapping_add(1);
                if info.position.ends_message() {
                    q.msn = (q.msn + 1) & aeth::MSN_MAX;
                }
                q.since_ack += 1;
                if p.ack_req || (conn.ack_every > 0 && q.since_ack >= conn.ack_every) {
                    q.since_ack = 0;
                    q.resp_q.push_back(Resp::Ack {
                        psn: p.psn,
                        syndrome: Syndrome::ack(conn.credits),
                        msn: q.msn,
                    });
                } else {
                    return;
                }
            }
        }
        self.kick_resp(p.conn);
    }

    fn on_resp_tx(&mut self, c: u16) {
        let ci = usize::from(c);
        let conn = &self.sc.connections[ci];
        let h = conn.responder;
        if self.host_tx_free[h] > self.now {
            let at = self.host_tx_free[h];
            self.push(at, Ev::RespTx(c));
            return;
        }
        let q = &mut self.qps[ci];
        let Some(front) = q.resp_q.front_mut() else {
            q.resp_pending = false;
            return;
        };
        let base = Pkt {
            conn: c,
            dir: Dir::Resp,
            opcode: Opcode::RC_ACKNOWLEDGE,
            psn: Psn::new_masked(0),
            ack_req: false,
            payload: 0,
            consumed: 1,
            va: 0,
            dma_len: 0,
            syndrome: Syndrome::ack(conn.credits),
            msn: 0,
            ce: false,
            corrupt: false,
            snap: 0,
        };
        let (pkt, done) = match front {
            Resp::Ack { psn, syndrome, msn } => (
                Pkt {
                    psn: *psn,
                    syndrome: *syndrome,
                    msn: *msn,
                    ..base
                },
                true,
            ),
            Resp::Atomic { psn, msn } => (
                Pkt {
                    opcode: Opcode::RC_ATOMIC_ACKNOWLEDGE,
                    psn: *psn,
                    msn: *msn,
                    ..base
                },
                true,
            ),
            Resp::Cnp => (
                Pkt {
                    opcode: Opcode::CNP,
                    ..base
                },
                true,
            ),
            Resp::Read {
                first,
                len,
                seg,
                n,
                msn,
            } => {
                let pos = position(*seg, *n);
                let opcode = match pos {
                    Position::First => Opcode::RC_RDMA_READ_RESPONSE_FIRST,
                    Position::Middle => Opcode::RC_RDMA_READ_RESPONSE_MIDDLE,
                    Position::Last => Opcode::RC_RDMA_READ_RESPONSE_LAST,
                    Position::Only => Opcode::RC_RDMA_READ_RESPONSE_ONLY,
                };
                let off = seg.saturating_mul(conn.pmtu);
                let payload = len.saturating_sub(off).min(conn.pmtu);
                let pkt = Pkt {
                    opcode,
                    psn: first.wrapping_add(*seg),
                    payload,
                    msn: *msn,
                    consumed: *n,
                    ..base
                };
                *seg += 1;
                (pkt, *seg >= *n)
            }
        };
        if done {
            q.resp_q.pop_front();
        }
        let len = self.frame_len(&pkt);
        let ser = self.ser_link(len);
        self.host_tx_free[h] = self.now + ser;
        if self.sc.capture == CapturePoint::Receiver {
            self.capture(pkt);
        }
        let prio = if pkt.opcode == Opcode::CNP {
            6
        } else {
            self.sc.hosts[h].priority()
        };
        let at_switch = self.now + ser + self.sc.delay_ns;
        let t = self.through_switch(conn.requester, prio, at_switch, ser);
        let i = self.park(pkt);
        self.push(t, Ev::AtRequester(i));
        if self.qps[ci].resp_q.is_empty() {
            self.qps[ci].resp_pending = false;
        } else {
            self.push(self.now + ser, Ev::RespTx(c));
        }
    }

    fn on_at_requester(&mut self, p: Pkt) {
        if self.sc.capture == CapturePoint::Sender {
            self.capture(p);
        }
        let c = p.conn;
        let ci = usize::from(c);
        if p.opcode == Opcode::CNP {
            self.on_cnp(c);
            return;
        }
        let conn = &self.sc.connections[ci];
        match p.opcode {
            Opcode::RC_ACKNOWLEDGE => match p.syndrome.kind() {
                AethKind::Ack { .. } => self.acked(c, p.psn),
                AethKind::Nak(_) => {
                    let q = &self.qps[ci];
                    if p.psn.distance(q.una) < 0 || p.psn.distance(q.high_sent) >= 0 {
                        return;
                    }
                    let before = p.psn.wrapping_sub(1);
                    self.acked(c, before);
                    let q = &mut self.qps[ci];
                    q.retries += 1;
                    if conn.retry_cnt != 7 && q.retries > u32::from(conn.retry_cnt) {
                        q.failed = true;
                        return;
                    }
                    self.go_back(c, p.psn);
                    self.kick(c);
                }
                AethKind::RnrNak { timer_code } => {
                    let q = &self.qps[ci];
                    if p.psn.distance(q.una) < 0 || p.psn.distance(q.high_sent) >= 0 {
                        return;
                    }
                    let before = p.psn.wrapping_sub(1);
                    self.acked(c, before);
                    let q = &mut self.qps[ci];
                    q.rnr_wait = Some(p.psn);
                    q.deadline = None;
                    let wait = u64::from(aeth::rnr_timer_us(timer_code)) * 1000;
                    self.push(self.now + wait, Ev::RnrRetry(c));
                }
                AethKind::Reserved => {}
            },
            _ => self.acked(c, p.psn),
        }
    }

    fn on_cnp(&mut self, c: u16) {
        let ci = usize::from(c);
        let conn = &self.sc.connections[ci];
        if !conn.dcqcn {
            return;
        }
        let min_rate = (self.sc.link_bps / 100).max(1);
        let q = &mut self.qps[ci];
        if q.last_cut
            .is_some_and(|t| self.now.saturating_sub(t) < DCQCN_CUT_GAP_NS)
        {
            return;
        }
        q.last_cut = Some(self.now);
        q.target_bps = q.rate_bps;
        let cut = q.rate_bps / 2048 * (2048 - q.alpha.min(1024));
        q.rate_bps = cut.max(q.rate_bps / 2).max(min_rate);
        q.alpha = ((q.alpha * DCQCN_G) / 1024 + (1024 - DCQCN_G)).min(1023);
        q.recover_steps = 0;
        if !q.recover_pending {
            q.recover_pending = true;
            self.push(self.now + DCQCN_PERIOD_NS, Ev::Recover(c));
        }
    }

    fn on_recover(&mut self, c: u16) {
        let link = self.sc.link_bps;
        let q = &mut self.qps[usize::from(c)];
        q.recover_pending = false;
        q.alpha = q.alpha * DCQCN_G / 1024;
        q.recover_steps += 1;
        if q.recover_steps > 5 {
            q.target_bps = (q.target_bps + link / 20).min(link);
        }
        q.rate_bps = (q.rate_bps / 2 + q.target_bps / 2).min(link);
        let busy = q.left > 0 || !q.msgs.is_empty();
        if q.rate_bps < link && busy && !q.failed {
            q.recover_pending = true;
            self.push(self.now + DCQCN_PERIOD_NS, Ev::Recover(c));
        } else if !busy {
            q.rate_bps = link;
        }
    }

    fn on_pfc(&mut self, i: u16, k: u32) {
        let p = self.sc.pfc[usize::from(i)];
        let end = p.start_ns.saturating_add(p.duration_ns);
        if self.now < end {
            self.captured.push_back((
                self.now,
                Captured::Pfc {
                    spec: i,
                    quanta: p.quanta,
                },
            ));
            let next = self.now + p.refresh_ns;
            if next < end {
                self.push(next, Ev::Pfc(i, k + 1));
            } else if p.resume {
                self.push(end, Ev::Pfc(i, k + 1));
            }
        } else if p.resume {
            self.captured
                .push_back((self.now, Captured::Pfc { spec: i, quanta: 0 }));
        }
    }

    // ------------------------------------------------------------ frames

    fn roce_frame(&self, p: &Pkt) -> RoceFrame {
        let conn = &self.sc.connections[usize::from(p.conn)];
        let (src, dst, dest_qp) = match p.dir {
            Dir::Req => (conn.requester, conn.responder, conn.responder_qpn),
            Dir::Resp => (conn.responder, conn.requester, conn.requester_qpn),
        };
        let (sh, dh) = (&self.sc.hosts[src], &self.sc.hosts[dst]);
        let cnp = p.opcode == Opcode::CNP;
        let mut l2 = L2::untagged(ethernet::Repr {
            dst_addr: ethernet::Address(dh.mac),
            src_addr: ethernet::Address(sh.mac),
            ethertype: EtherType::IPV4,
        });
        if let Some((vid, pcp)) = sh.vlan {
            l2.vlans[0] = Some(VlanTag {
                tpid: EtherType::VLAN,
                tag: vlan::Repr {
                    pcp: if cnp { 6 } else { pcp },
                    dei: false,
                    vid: VlanId::new_masked(vid),
                    ethertype: EtherType::IPV4,
                },
            });
        }
        let (dscp, ecn) = if cnp {
            (48, 2)
        } else if p.ce {
            (sh.dscp, 3)
        } else {
            (sh.dscp, sh.ecn)
        };
        let src_port = if cnp { 0 } else { conn.udp_sport };
        let network = match (sh.ip, dh.ip) {
            (IpAddr::V4(s), IpAddr::V4(d)) => NetworkRepr::Ipv4 {
                ip: ipv4::Repr {
                    src_addr: s,
                    dst_addr: d,
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: 0,
                    hop_limit: 64,
                    dscp,
                    ecn,
                    ident: 0,
                    dont_frag: true,
                },
                src_port,
                dst_port: 4791,
            },
            (s, d) => NetworkRepr::Ipv6 {
                ip: ipv6::Repr {
                    src_addr: to_v6(s),
                    dst_addr: to_v6(d),
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: 0,
                    hop_limit: 64,
                    traffic_class: (dscp << 2) | ecn,
                    flow_label: u32::from(src_port) & 0xF_FFFF,
                },
                src_port,
                dst_port: 4791,
            },
        };
        let bth = bth::Repr {
            opcode: p.opcode,
            solicited_event: false,
            mig_req: !cnp,
            pad_count: 0,
            tver: 0,
            pkey: if cnp { 0xFFFF } else { conn.pkey },
            fecn: false,
            becn: cnp,
            dest_qp: Qpn::new_masked(dest_qp),
            ack_req: p.ack_req,
            psn: p.psn,
        };
        let exts = ExtReprs {
            deth: Some(deth::Repr {
                qkey: conn.qkey,
                src_qp: Qpn::new_masked(conn.requester_qpn),
            }),
            reth: Some(reth::Repr {
                va: p.va,
                rkey: 0x1234 + u32::from(p.conn),
                dma_len: p.dma_len,
            }),
            atomic_eth: Some(atomic_eth::Repr {
                va: p.va,
                rkey: 0x1234 + u32::from(p.conn),
                swap_add: 1,
                compare: 0,
            }),
            aeth: Some(aeth::Repr {
                syndrome: p.syndrome,
                msn: p.msn,
            }),
            atomic_ack_eth: Some(atomic_ack_eth::Repr {
                orig_remote_data: u64::from(p.psn.value()),
            }),
            immdt: Some(immdt::Repr {
                imm_data: p.psn.value(),
            }),
            ieth: Some(ieth::Repr {
                rkey: 0x1234 + u32::from(p.conn),
            }),
            ..ExtReprs::default()
        };
        RoceFrame {
            l2,
            network,
            bth,
            exts,
            payload_len: p.payload as usize,
        }
    }

    fn build(&mut self, t: u64, c: &Captured, buf: &mut [u8]) -> Result<FrameOut, GenError> {
        let time_ns = self.sc.start_ns.saturating_add(t);
        match *c {
            Captured::Roce(p) => {
                let frame = self.roce_frame(&p);
                let policy = Policy {
                    icrc: if p.corrupt {
                        IcrcPolicy::Corrupt(0xDEAD_BEEF)
                    } else {
                        IcrcPolicy::Correct
                    },
                    ..Policy::default()
                };
                let fill = (p.psn.value() & 0xFF) as u8;
                let len = frame.emit_filled(buf, &policy, fill, &mut self.emit_cache)?;
                let snap = match (p.snap, self.sc.snaplen) {
                    (0, 0) => len,
                    (0, s) | (s, 0) => s as usize,
                    (a, b) => a.min(b) as usize,
                };
                let cut = len.min(snap);
                let info = p.opcode.info();
                let conn = &self.sc.connections[usize::from(p.conn)];
                self.truth.roce(&Seen {
                    time: time_ns,
                    flow: usize::from(p.conn) * 2 + usize::from(p.dir == Dir::Resp),
                    operation: info.map_or(Operation::Cnp, |i| i.operation),
                    position: info.map_or(Position::Only, |i| i.position),
                    psn: p.psn,
                    consumed: p.consumed,
                    dma_len: p.dma_len,
                    syndrome: p.syndrome,
                    ce: p.ce,
                    corrupt: p.corrupt,
                    truncated: cut < len,
                    is_ud: conn.transport == TransportKind::Ud,
                    is_uc: conn.transport == TransportKind::Uc,
                });
                Ok(FrameOut {
                    time_ns,
                    len: cut,
                    orig_len: len,
                })
            }
            Captured::Pfc { spec, quanta } => {
                let p = self.sc.pfc[usize::from(spec)];
                let mac = self.sc.hosts[p.host].mac;
                let mut q = [0u16; 8];
                q[usize::from(p.priority & 7)] = quanta;
                let frame = MacControlFrame {
                    l2: L2::untagged(ethernet::Repr {
                        dst_addr: PAUSE_DST,
                        src_addr: ethernet::Address(mac),
                        ethertype: EtherType::MAC_CONTROL,
                    }),
                    body: mac_control::Repr::Pfc {
                        enable: 1 << (p.priority & 7),
                        quanta: q,
                    },
                };
                let len = frame.emit(buf)?;
                self.truth.pfc(time_ns, mac, p.priority, quanta);
                Ok(FrameOut {
                    time_ns,
                    len,
                    orig_len: len,
                })
            }
        }
    }
}

fn to_v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        IpAddr::V4(a) => a.to_ipv6_mapped(),
    }
}
