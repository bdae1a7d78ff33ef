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

// Indexing cannot panic here: hosts and connections are indexed by positions the validated scenario
// gave; the packet slab by ids it handed out; pause lists by host × 8 + a 3-bit priority.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::net::IpAddr;

use core::fmt;

mod frames;
mod requester;
mod responder;
mod switch;

use crate::events::EventQueue;

use rocescope_dissectors::builder::{
    BuildError, EmitCache, ExtReprs, IcrcPolicy, L2, MacControlFrame, NetworkRepr, Policy,
    RoceFrame, VlanTag,
};
use rocescope_dissectors::ethernet::{self, EtherType};
use rocescope_dissectors::ib::aeth::{self, AethKind, NakCode, Syndrome};
use rocescope_dissectors::ib::opcode::{Operation, Position, Transport};
use rocescope_dissectors::ib::{
    atomic_ack_eth, atomic_eth, bth, deth, ieth, immdt, lrh, rdeth, reth,
};
use rocescope_dissectors::link::LinkType;
use rocescope_dissectors::mac_control::{self, PAUSE_DST};
use rocescope_dissectors::vlan::{self, VlanId};
use rocescope_dissectors::{Opcode, Psn, Qpn, erf, grh, ipv4, ipv6};

use crate::rng::Rng;
use crate::scenario::{
    CaptureIcrc, CapturePoint, Direction, Encapsulation, FaultKind, LinkKind, OpKind, Scenario,
    Selector, SizeDist, TransportKind,
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
    conn: u32,
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
    /// A resend of a PSN sent before (capture drops select first transmissions by PSN).
    retx: bool,
    /// Which packet on the wire this is: numbered as sent (a copy the switch makes gets a
    /// number of its own), the same in every run of a scenario and seed, whatever the tap.
    serial: u32,
}

/// One RoCE packet a tap captured, for the truth of what happened between two taps
/// ([`Generator::tap_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapRecord {
    /// The packet on the wire (see the same number in the other tap's log).
    pub serial: u32,
    /// The flow: connection × 2, + 1 for responses.
    pub flow: usize,
    pub opcode: u8,
    pub psn: u32,
    /// Its frame number in the tap's capture.
    pub frame: u64,
    /// When it passed the tap (the scenario's clock: no offset or jitter).
    pub time_ns: u64,
    pub ce: bool,
    /// Its ICRC is wrong in the capture (corrupted, or a garbage-writing sniffer).
    pub icrc_bad: bool,
    /// Cut short, so its ICRC cannot be checked.
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Tx(u32),
    Arrive(u32),
    RespTx(u32),
    AtRequester(u32),
    Timer(u32),
    RnrRetry(u32),
    Recover(u32),
    Pfc(u16, u32),
    /// The host's transmit side is free again: its waiting queue pairs take turns.
    HostFree(u32),
}

/// A queue pair waiting for its host's transmit side.
#[derive(Debug, Clone, Copy)]
enum Waiter {
    Requester(u32),
    Responder(u32),
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
            Ev::HostFree(_) => 8,
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
    /// A READ: its response PSNs received in order so far.
    got: u32,
    /// A READ re-issued after a missing response: later responses of the first issue are
    /// discarded until the re-issued one's first response arrives.
    reissued: bool,
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
    /// The MSN of the responder's last ACK (the msn_regression knob goes below it).
    last_ack_msn: u32,
    /// The responder sent a fatal NAK: the QP takes nothing more.
    resp_error: bool,
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
    /// Where this generator's tap is (a scenario of two taps is generated once per tap).
    point: CapturePoint,
    /// The capture side's own draws (capture drops, timestamp jitter), apart from the
    /// network's, so that both taps of one scenario see the same run.
    capture_rng: Rng,
    /// The next [`Pkt::serial`].
    next_serial: u32,
    /// The receiver-side tap of a two-tap scenario: its clock's offset and jitter apply.
    skewed: bool,
    /// The last timestamp written (jitter never makes time go back).
    last_time_ns: u64,
    /// The RoCE packets captured, when asked for ([`Generator::keep_tap_log`]).
    tap_log: Option<Vec<TapRecord>>,
    /// Each flow's `(src, dst, destqp)`, by connection × 2 + direction.
    flow_keys: Vec<(String, String, u32)>,
    now: u64,
    events: EventQueue<Ev, 9>,
    qps: Vec<Qp>,
    faults: Vec<FaultState>,
    /// Per destination host × priority: when the switch egress is free.
    egress_free: Vec<u64>,
    /// Per host: when its NIC's transmit side is free.
    host_tx_free: Vec<u64>,
    /// Per host: the queue pairs waiting for it to be free, in the order they found it busy,
    /// and whether a `HostFree` event is scheduled. One event per busy period, rather than
    /// one per waiting queue pair (which cost a pass over all of them per frame sent).
    host_waiters: Vec<VecDeque<Waiter>>,
    host_wake: Vec<bool>,
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
    /// What consecutive frames share (ICRC of unchanged headers and payloads).
    emit_cache: EmitCache,
    /// `(len, ser_ns(len, link_bps))` of the last two lengths (`usize::MAX`: none).
    ser_memo: [(usize, u64); 2],
}

/// A connection id as an index (ids are `u32`: a fabric has more than 65,536 QPs).
#[inline]
fn ix(c: u32) -> usize {
    usize::try_from(c).unwrap_or(usize::MAX)
}

fn ser_ns(len: usize, link_bps: u64) -> u64 {
    let bits = (len as u64 + WIRE_OVERHEAD) * 8 * 1_000_000_000;
    bits.div_ceil(link_bps.max(1))
}

/// Where packet `k` of `n` sits in its message.
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
        Generator::at_tap(scenario, seed, 0)
    }

    /// A generator for one tap of `scenario`: with `point = "both"`, tap 0 is the sender
    /// side and tap 1 the receiver side (its clock offset and jitter applied); the packets
    /// on the wire are the same in both. For a scenario of one tap, `tap` is ignored.
    #[must_use]
    pub fn at_tap(scenario: &'s Scenario, seed: u64, tap: u8) -> Generator<'s> {
        let sc = scenario;
        let (point, skewed) = match sc.capture {
            CapturePoint::Both if tap == 0 => (CapturePoint::Sender, false),
            CapturePoint::Both => (CapturePoint::Receiver, true),
            p => (p, false),
        };
        let nhosts = sc.hosts.len();
        let mut qps = Vec::with_capacity(sc.connections.len());
        let mut flow_keys = Vec::with_capacity(sc.connections.len() * 2);
        // Each connection's traffic entries, in file order (one pass, not one per connection).
        let mut mixes: Vec<Vec<(usize, u64)>> = vec![Vec::new(); sc.connections.len()];
        for (i, t) in sc.traffic.iter().enumerate() {
            if let Some(m) = mixes.get_mut(t.connection).filter(|_| t.messages > 0) {
                m.push((i, t.messages));
            }
        }
        for (ci, c) in sc.connections.iter().enumerate() {
            let mut mix = std::mem::take(&mut mixes[ci]);
            if c.transport == TransportKind::TcpBth {
                mix.clear();
            }
            let left = mix.iter().map(|m| m.1).fold(0u64, u64::saturating_add);
            let start = Psn::new_masked(c.start_psn);
            // The queues grow as a connection uses them (to its window at most), rather than
            // each starting at its window: 200,000 connections of a few messages each took
            // 8 KiB apiece, 1.6 GB.
            qps.push(Qp {
                msgs: VecDeque::new(),
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
                resp_q: VecDeque::new(),
                resp_pending: false,
                reads: VecDeque::new(),
                last_ack_msn: 0,
                resp_error: false,
            });
            // the addresses the analyzer keys flows by (§6.1): IPs, or on InfiniBand GIDs
            // between hosts that have them, else LIDs
            let (ha, hb) = (&sc.hosts[c.requester], &sc.hosts[c.responder]);
            let (a, b) = match sc.link_kind {
                LinkKind::Infiniband if !(ha.ip.is_ipv6() && hb.ip.is_ipv6()) => (
                    format!("lid:{:#06x}", ha.lid),
                    format!("lid:{:#06x}", hb.lid),
                ),
                _ => (ha.ip.to_string(), hb.ip.to_string()),
            };
            flow_keys.push((a.clone(), b.clone(), c.responder_qpn));
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
            point,
            capture_rng: Rng::new(seed ^ 0x7A9C_0000_0000_0001),
            next_serial: 0,
            skewed,
            last_time_ns: 0,
            tap_log: None,
            now: 0,
            events: EventQueue::new(),
            qps,
            faults: vec![FaultState::default(); sc.faults.len()],
            egress_free: vec![0; nhosts * 8],
            host_tx_free: vec![0; nhosts],
            host_waiters: vec![VecDeque::new(); nhosts],
            host_wake: vec![false; nhosts],
            pauses,
            captured: VecDeque::with_capacity(64),
            slab: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            flow_keys: flow_keys.clone(),
            truth: TruthEngine::new(flow_keys, sc.link_bps, sc.link_kind == LinkKind::Infiniband),
            tcp: TcpModel::new(sc, seed),
            frames: 0,
            emit_cache: EmitCache::new(),
            ser_memo: [(usize::MAX, 0); 2],
        };
        for ci in 0..sc.connections.len() {
            if sc.connections[ci].transport == TransportKind::TcpBth {
                continue; // modelled by `tcp_bth::TcpModel`
            }
            let ci16 = u32::try_from(ci).unwrap_or(u32::MAX);
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
                    self.captured.clear();
                    self.events.clear();
                    return None;
                }
                self.frames += 1;
                return Some(self.build(t, &c, buf));
            }
            let e = self.events.pop()?;
            if e.t > self.sc.stop_ns {
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

    /// The link type of the frames it writes: Ethernet, or ERF for native InfiniBand.
    #[must_use]
    pub fn link_type(&self) -> LinkType {
        match self.sc.link_kind {
            LinkKind::Ethernet => LinkType::ETHERNET,
            LinkKind::Infiniband => LinkType::ERF,
        }
    }

    /// What §6 says the frames generated so far show (call after the last frame).
    #[must_use]
    pub fn truth(&self) -> Truth {
        let mut t = self.truth.finish();
        t.tcp_bth = self.tcp.truth();
        t
    }

    /// Keep a record of every RoCE packet captured from now on ([`Generator::tap_log`]).
    pub fn keep_tap_log(&mut self) {
        self.tap_log.get_or_insert_with(Vec::new);
    }

    /// The RoCE packets captured since [`Generator::keep_tap_log`].
    #[must_use]
    pub fn tap_log(&self) -> &[TapRecord] {
        self.tap_log.as_deref().unwrap_or_default()
    }

    /// Each flow's `(src, dst, destqp)` as the report writes them, by [`TapRecord::flow`].
    #[must_use]
    pub fn flow_keys(&self) -> &[(String, String, u32)] {
        &self.flow_keys
    }

    /// The flows §6.3 pairs into connections in this tap's capture (indices as
    /// [`TapRecord::flow`]).
    #[must_use]
    pub fn peers(&self) -> Vec<(usize, usize)> {
        self.truth.peers()
    }

    /// A number for a packet put on the wire.
    fn serial(&mut self) -> u32 {
        let s = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        s
    }

    /// A capture timestamp on this tap's clock: the scenario's time, and for the
    /// receiver side of two taps its offset and jitter (never going back).
    fn tap_time(&mut self, time_ns: u64) -> u64 {
        if !self.skewed {
            return time_ns;
        }
        let jitter = if self.sc.tap_jitter_ns > 0 {
            self.capture_rng.below(self.sc.tap_jitter_ns)
        } else {
            0
        };
        let t = time_ns
            .saturating_add_signed(self.sc.tap_clock_offset_ns)
            .saturating_add(jitter)
            .max(self.last_time_ns);
        self.last_time_ns = t;
        t
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
            Ev::HostFree(h) => self.on_host_free(ix(h)),
            Ev::AtRequester(i) => {
                let p = self.unpark(i);
                self.on_at_requester(p);
            }
            Ev::Timer(c) => self.on_timer(c),
            Ev::RnrRetry(c) => {
                let q = &mut self.qps[ix(c)];
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
        if self.capture_misses(&p) {
            return;
        }
        self.captured.push_back((self.now, Captured::Roce(p)));
    }

    /// Queue pair `w` found host `h` busy: it takes its turn when the host is free, after
    /// those that found it busy before (as if each had scheduled itself for then).
    fn wait_for_host(&mut self, h: usize, w: Waiter) {
        self.host_waiters[h].push_back(w);
        if !self.host_wake[h] {
            self.wake_host_when_free(h);
        }
    }

    /// Schedules host `h`'s `HostFree` for when its transmit side is free.
    fn wake_host_when_free(&mut self, h: usize) {
        self.host_wake[h] = true;
        let h32 = u32::try_from(h).unwrap_or(u32::MAX);
        self.push(self.host_tx_free[h], Ev::HostFree(h32));
    }

    /// Host `h` is free: the waiting queue pairs take their turns, in order, until one of them
    /// makes it busy again (the rest then wait for that, still in order).
    fn on_host_free(&mut self, h: usize) {
        self.host_wake[h] = false;
        while !self.host_waiters[h].is_empty() {
            if self.host_tx_free[h] > self.now {
                self.wake_host_when_free(h);
                return;
            }
            // The host is free: the waiter's own check lets it through.
            match self.host_waiters[h].pop_front() {
                Some(Waiter::Requester(c)) => self.on_tx(c),
                Some(Waiter::Responder(c)) => self.on_resp_tx(c),
                None => return,
            }
        }
    }

    fn kick(&mut self, c: u32) {
        let q = &mut self.qps[ix(c)];
        if q.tx_pending || q.failed {
            return;
        }
        q.tx_pending = true;
        let at = q.next_tx_at.max(self.now);
        self.push(at, Ev::Tx(c));
    }

    // ------------------------------------------------------------ frames
}
