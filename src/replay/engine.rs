//! The flow table and everything that crosses flows: pairing (CM exchange first, PSN
//! agreement second), responses acting on the paired request flow (ACK latency, capture loss,
//! NAK runs, READ matching and rule 2), CNP attribution, PFC, the conformance checks that need
//! both flows, the per-file ICRC verdict (§6.5), and the capture-wide counters.

// Indexing cannot panic here: flow ids are positions in `flows`, handed out by `index` when the
// flow was pushed (flows are never removed); `events[before..]` starts at a length taken earlier.
#![allow(clippy::indexing_slicing)]

use super::event::Addr;
use std::collections::HashMap;

use rocescope_dissectors::cm::{CmAttribute, CmMessage};
use rocescope_dissectors::ib::aeth::{AethKind, NakCode, rnr_timer_us};
use rocescope_dissectors::mac_control::{MacControlOpcode, quanta_to_ns};
use rocescope_dissectors::stack::{ROCEV2_PORT, RoceVersion};
use rocescope_dissectors::{Operation, Position, Psn, Transport};

use super::Observer;
use super::event::{FlowKey, Icrc, PacketEvent};
use super::finding::{Detail, Finding, Kind};
use super::flow::{Flow, ReadTrack};
use super::flow_index::FlowIndex;
use super::hash::FxHashMap;
use super::hosts::{HostKey, Hosts};
use super::pfc::PfcTable;
use super::psn::{Ack, AckKind, DEFAULT_PMTU, ReqPacket, StepOut, read_count};
use super::trust::{Held, IcrcMode, Trust, Verdict};
use crate::frame::{FrameView, LinkType, Problem};

/// CM requests remembered while waiting for their reply, at most.
const CM_PENDING_MAX: usize = 65_536;
/// Distinct link types remembered for the "nothing decodable" notice.
const LINK_TYPES_MAX: usize = 16;

/// Capture-wide counters (§6.6 `capture`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    pub frames: u64,
    pub roce_frames: u64,
    pub rocev1_frames: u64,
    /// Native InfiniBand packets that carry a BTH.
    pub ib_frames: u64,
    pub pfc_frames: u64,
    pub pause_frames: u64,
    pub tcp_bth_frames: u64,
    pub first_time_ns: Option<u64>,
    pub last_time_ns: Option<u64>,
    pub truncated_frames: u64,
    pub malformed_frames: u64,
    pub icrc_errors: u64,
    /// Some input's ICRCs were judged unreliable (§6.5).
    pub icrc_unreliable: bool,
    /// Frames the kernel dropped while capturing live (§11); `None` for files.
    pub kernel_drops: Option<u64>,
}

impl CaptureStats {
    /// Frames rocescope decodes as RoCE, InfiniBand, PFC/PAUSE or tcp_bth.
    #[must_use]
    pub fn decoded(&self) -> u64 {
        self.roce_frames
            + self.rocev1_frames
            + self.ib_frames
            + self.pfc_frames
            + self.pause_frames
            + self.tcp_bth_frames
    }
}

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub link_bps: u64,
    pub storm_ns: u64,
    /// Extra UDP destination ports carrying RoCEv2.
    pub roce_ports: Vec<u16>,
    /// The RD opcode range is IBA RD, not NVIDIA DC.
    pub rd_as_rd: bool,
    /// `--rto-min`: a go-back this long after the flow's previous request is a timeout
    /// (§6.2 rule (c)); also the grace after a fatal NAK (§6.7).
    pub rto_min_ns: u64,
    /// `--icrc`.
    pub icrc: IcrcMode,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            link_bps: 100_000_000_000,
            storm_ns: 200_000_000,
            roce_ports: Vec::new(),
            rd_as_rd: false,
            rto_min_ns: 1_000_000,
            icrc: IcrcMode::Auto,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct CmReq {
    src: Addr,
    dst: Addr,
    qpn: u32,
    pmtu: Option<u32>,
}

/// The replay engine: feed frames (or hand-built [`PacketEvent`]s) in capture order, then
/// [`Engine::finish`].
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    pub capture: CaptureStats,
    flows: Vec<Flow>,
    /// The flows' addresses ([`Flow::key`] holds their ids).
    hosts: Hosts,
    index: FlowIndex,
    /// Flows with requests, by (src, dst): PSN-agreement candidates (paired ones are dropped
    /// lazily, by `pair_by_psn`).
    requesters: FxHashMap<(u32, u32), Vec<u32>>,
    cm_reqs: HashMap<(Addr, Addr, u32), CmReq>,
    /// Flow key -> (peer key, PMTU) from captured CM exchanges.
    cm_pairs: HashMap<FlowKey, (FlowKey, Option<u32>)>,
    pfc: PfcTable,
    events: Vec<Finding>,
    /// Reused output of the request-stream steps.
    scratch: StepOut,
    trust: Trust,
    link_types: Vec<LinkType>,
    finished: bool,
    /// interfaces.md §7: messages over TCP with the `tcp_bth` option.
    tcp_bth: super::tcp_bth::TcpBthTracker,
    /// The sharded replay's front ([`Engine::front`]): RoCE packets are collected here, one
    /// list per shard, in the order they would be stepped, for the shards to step.
    outbox: Option<Vec<Vec<Forwarded>>>,
    /// A shard's ([`Engine::shard`]): the step number that created each flow (index = id).
    created: Option<Vec<u64>>,
    /// The number of the packet being stepped (counted by the front, told to the shards).
    step_seq: u64,
    /// The flows of the packets coming next ([`Engine::ahead`]'s, kept for its allocation).
    ahead_ids: Vec<u32>,
}

/// Flows below which [`Engine::ahead`] does nothing: their state stays in cache. At 1,024
/// instead (so that it prefetches over small2k's 2,000 flows, where `FlowIndex::search` was 15 %
/// of the engine thread's samples on an AMD EPYC with 1 MiB of L2), small2k took 1.049x the
/// time (medians of 15 alternating pairs, which ranged from 0.70x to 1.61x): no gain.
pub const AHEAD_FLOWS: usize = 8192;

/// A RoCE packet the sharded replay's front admitted, for a shard to step: the packet, what
/// its frame also carried, and its file's ICRC verdict when it was admitted.
#[derive(Debug)]
pub struct Forwarded {
    /// Its place in the order of steps (the single-threaded engine's order).
    pub seq: u64,
    pub packet: PacketEvent,
    pub problem: Option<Problem>,
    pub cm: Option<Box<CmMessage>>,
    pub verdict: Verdict,
}

/// Everything the replay decided.
#[derive(Debug)]
pub struct Replay {
    pub capture: CaptureStats,
    /// By id (a flow's id is its place here).
    pub flows: Vec<Flow>,
    /// The flows' addresses ([`Replay::key`]).
    pub hosts: Hosts,
    pub pfc: Vec<super::pfc::PfcRow>,
    /// Sorted by frame number (stable).
    pub events: Vec<Finding>,
    /// §6.6 `tcp_bth`: per TCP connection direction.
    pub tcp_bth: Vec<super::tcp_bth::TcpBthRow>,
    /// The inputs (files, in the order given) whose ICRCs were judged unreliable.
    pub icrc_unreliable: Vec<u16>,
    /// The link types the capture held (the first few).
    pub link_types: Vec<LinkType>,
}

impl Replay {
    /// The key of `flow`, one of [`Replay::flows`].
    #[must_use]
    pub fn key(&self, flow: &Flow) -> FlowKey {
        self.hosts.key(&flow.key)
    }

    /// The id of the flow of `key`, if the replay met it (a search through every flow).
    #[must_use]
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        self.find_each(std::slice::from_ref(key)).pop().flatten()
    }

    /// [`Replay::find`] for each of `keys`, in one search through the flows (the inspector's
    /// rows on screen).
    #[must_use]
    pub fn find_each(&self, keys: &[FlowKey]) -> Vec<Option<u32>> {
        let keys: Vec<Option<HostKey>> = keys.iter().map(|k| self.hosts.lookup(k)).collect();
        let mut ids: FxHashMap<HostKey, Option<u32>> =
            keys.iter().flatten().map(|&k| (k, None)).collect();
        for (id, f) in (0u32..).zip(&self.flows) {
            if let Some(slot @ None) = ids.get_mut(&f.key) {
                *slot = Some(id);
            }
        }
        keys.iter()
            .map(|k| k.and_then(|k| ids.get(&k).copied().flatten()))
            .collect()
    }
}

impl Engine {
    #[must_use]
    pub fn new(cfg: EngineConfig) -> Self {
        let pfc = PfcTable::new(cfg.storm_ns, cfg.link_bps);
        let trust = Trust::new(cfg.icrc);
        Engine {
            cfg,
            capture: CaptureStats::default(),
            flows: Vec::new(),
            hosts: Hosts::default(),
            index: FlowIndex::default(),
            requesters: FxHashMap::default(),
            cm_reqs: HashMap::new(),
            cm_pairs: HashMap::new(),
            pfc,
            events: Vec::new(),
            scratch: StepOut::default(),
            trust,
            link_types: Vec::new(),
            finished: false,
            tcp_bth: super::tcp_bth::TcpBthTracker::default(),
            outbox: None,
            created: None,
            step_seq: 0,
            ahead_ids: Vec::new(),
        }
    }

    /// The front of a sharded replay: it counts every frame, judges ICRCs, and does PFC,
    /// tcp_bth and the frames without a flow itself, but leaves its RoCE packets in an outbox
    /// ([`Engine::forwarded`]) for the shards, in the order it would step them.
    #[must_use]
    pub fn front(cfg: EngineConfig, shards: usize) -> Self {
        let mut e = Engine::new(cfg);
        e.outbox = Some((0..shards.max(1)).map(|_| Vec::new()).collect());
        e
    }

    /// A shard of a sharded replay: it steps what a front forwarded ([`Engine::step_forwarded`])
    /// and remembers which step created each flow ([`Engine::finish_shard`]).
    #[must_use]
    pub fn shard(cfg: EngineConfig) -> Self {
        let mut e = Engine::new(cfg);
        e.created = Some(Vec::new());
        e
    }

    /// The front's packets not yet taken, one list per shard (none on other engines): take
    /// them with `std::mem::take` or `swap`.
    pub fn forwarded(&mut self) -> &mut [Vec<Forwarded>] {
        self.outbox.as_deref_mut().unwrap_or_default()
    }

    /// A shard steps a packet its front forwarded.
    pub fn step_forwarded(&mut self, f: Forwarded) {
        self.step_seq = f.seq;
        self.stepped(&f.packet, f.problem, f.cm.as_deref(), f.verdict, &mut ());
    }

    /// The front at the end of its source: every file judged, the packets still held
    /// forwarded ([`Engine::finish`] would step them, on a front there is nowhere to).
    pub fn settle_held(&mut self) {
        self.settle(&mut ());
    }

    /// Every file judged, the packets still held stepped (or forwarded, on a front).
    fn settle(&mut self, observer: &mut impl Observer) {
        self.trust.judge_all();
        self.release(observer);
    }

    /// A shard's report, and the step that created each of its flows (index = id).
    #[must_use]
    pub fn finish_shard(mut self) -> (Replay, Vec<u64>) {
        let created = self.created.take().unwrap_or_default();
        (self.finish(), created)
    }

    /// Flows so far (index = id).
    #[must_use]
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// The flows' addresses, so far ([`Flow::key`] holds their ids).
    #[must_use]
    pub fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// The findings so far, in the order they were made (sorted by frame only at the end).
    #[must_use]
    pub fn events(&self) -> &[Finding] {
        &self.events
    }

    fn tick(&mut self, time_ns: u64) {
        self.capture.frames += 1;
        if self.capture.first_time_ns.is_none() {
            self.capture.first_time_ns = Some(time_ns);
        }
        self.capture.last_time_ns = Some(time_ns);
    }

    fn event(
        &mut self,
        frame: u64,
        time_ns: u64,
        kind: Kind,
        flow: Option<u32>,
        psn: Option<Psn>,
        detail: Detail,
    ) {
        self.events.push(Finding {
            frame,
            time_ns,
            kind,
            flow,
            psn,
            detail,
        });
    }

    fn note_link(&mut self, link: LinkType) {
        if self.link_types.last() != Some(&link)
            && !self.link_types.contains(&link)
            && self.link_types.len() < LINK_TYPES_MAX
        {
            self.link_types.push(link);
        }
    }

    /// One captured frame, dissected and classified.
    pub fn frame(&mut self, view: &FrameView<'_>) {
        self.frame_observed(view, &mut ());
    }

    /// [`Engine::frame`], telling `observer` about the packet and its flow.
    pub fn frame_observed(&mut self, view: &FrameView<'_>, observer: &mut impl Observer) {
        self.note_link(view.frame.link);
        let Some(d) = view.dissected.as_ref() else {
            self.tick(view.frame.time_ns);
            self.integrity_only(view, None);
            return;
        };
        if let Some(ev) = PacketEvent::from_view(view) {
            // a CM message on QP1 acts on pairing, in capture order with the packets
            let cm = d
                .roce
                .as_ref()
                .and_then(rocescope_dissectors::stack::Roce::cm)
                .map(Box::new);
            self.roce_observed(&ev, view.problem, cm, observer);
            return;
        }
        self.tick(view.frame.time_ns);
        if d.tcp.is_some()
            && self
                .tcp_bth
                .frame(d, view.frame.number, view.frame.time_ns, &mut self.events)
        {
            self.capture.tcp_bth_frames += 1;
        }
        // RoCE frames without a usable BTH still count (malformed ones included, §6.5).
        if let Some(udp) = d.udp.as_ref() {
            let port = udp.dst_port();
            if port == ROCEV2_PORT || self.cfg.roce_ports.contains(&port) {
                self.capture.roce_frames += 1;
            }
        } else if d.ethertype == Some(rocescope_dissectors::ethernet::EtherType::ROCEV1) {
            self.capture.rocev1_frames += 1;
        }
        if let Some(mc) = d.mac_control() {
            let mac = d.eth.as_ref().map_or([0; 6], |e| e.src_addr().0);
            let (frame, t) = (view.frame.number, view.frame.time_ns);
            let mut out = Vec::new();
            match mc.opcode() {
                MacControlOpcode::PFC => {
                    self.capture.pfc_frames += 1;
                    let quanta = mc.pfc_quanta_all();
                    self.pfc
                        .pfc(mac, frame, t, mc.pfc_enable(), quanta, &mut out);
                }
                MacControlOpcode::PAUSE => {
                    self.capture.pause_frames += 1;
                    let q = mc.pause_quanta();
                    self.pfc.pause(
                        mac,
                        frame,
                        t,
                        q,
                        quanta_to_ns(q, self.cfg.link_bps),
                        &mut out,
                    );
                }
                _ => {}
            }
            self.events.append(&mut out);
        }
        self.integrity_only(view, None);
    }

    /// A frame that [`PacketEvent::from_view`] summarised as `ev`, with its view's `problem`:
    /// what [`Engine::frame`] does with it, but the CM message (see [`Engine::cm`]). Lets
    /// the frame be dissected on another thread.
    pub fn roce_frame(&mut self, ev: &PacketEvent, problem: Option<Problem>) {
        self.roce_frame_observed(ev, problem, &mut ());
    }

    /// [`Engine::roce_frame`], telling `observer` about the packet and its flow.
    pub fn roce_frame_observed(
        &mut self,
        ev: &PacketEvent,
        problem: Option<Problem>,
        observer: &mut impl Observer,
    ) {
        self.roce_observed(ev, problem, None, observer);
    }

    /// Packets coming next: ask for what stepping them will read to be brought into cache
    /// now, for all of them at once. Once the flows outgrow the caches, waiting on memory is
    /// much of a packet's time; asked for here, the misses of many packets overlap. Each pass
    /// reads what the one before it asked for (index slots, then flows, then their requests
    /// and peers), and asks for the next with prefetches, which do not hold the thread up
    /// until the data comes as loads did. Changes nothing the replay decides.
    ///
    /// Measured and not kept, at 400,000 flows: staging the passes a window apart (the slots
    /// three windows before their packets, the flows two, the request sides and peers one),
    /// 1.033x the time; stepping a packet on the flow guessed here when its key matches,
    /// instead of searching the index again, no gain (0.97x to 1.01x over three runs of 9 to
    /// 11 pairs: the wait moves to the flow's first read); the frames the reading thread left
    /// undissected (a sixth of them here) dissected on this thread when shown ahead, so that
    /// their flows are fetched too, no gain either (0.999x over 15 pairs, 0.990x over 21:
    /// `FlowIndex::search`'s samples halved, and the wait moved on again).
    pub fn ahead<'e>(&mut self, coming: impl Iterator<Item = &'e PacketEvent> + Clone) {
        if self.flows.len() < AHEAD_FLOWS || self.outbox.is_some() {
            return;
        }
        for ev in coming.clone() {
            self.index.prefetch(&ev.key);
        }
        self.ahead_ids.clear();
        for ev in coming {
            if let Some(id) = self.index.guess(&ev.key) {
                self.ahead_ids.push(id);
                if let Some(f) = self.flows.get(id as usize) {
                    f.prefetch();
                }
            }
        }
        // an acknowledgement's flow steps its peer's requests: the peers, then theirs
        let flows = || {
            self.ahead_ids
                .iter()
                .filter_map(|&id| self.flows.get(id as usize))
        };
        let peer = |f: &Flow| f.peer().and_then(|p| self.flows.get(p as usize));
        for f in flows() {
            f.prefetch_requests();
            if let Some(p) = peer(f) {
                p.prefetch();
            }
        }
        for p in flows().filter_map(peer) {
            p.prefetch_requests();
        }
    }

    /// One RoCE packet (from a frame, or hand-built in tests).
    pub fn packet(&mut self, ev: &PacketEvent) {
        self.roce_observed(ev, None, None, &mut ());
    }

    /// A RoCE packet arrives: it counts at once; it is stepped now, or held until its file's
    /// ICRCs are judged (and then stepped with everything held, in capture order).
    fn roce_observed(
        &mut self,
        ev: &PacketEvent,
        problem: Option<Problem>,
        cm: Option<Box<CmMessage>>,
        observer: &mut impl Observer,
    ) {
        self.tick(ev.time_ns);
        match ev.version {
            RoceVersion::V1 => self.capture.rocev1_frames += 1,
            RoceVersion::V2 => self.capture.roce_frames += 1,
            RoceVersion::Ib => self.capture.ib_frames += 1,
        }
        if self.trust.admit(ev) {
            self.step_packet(ev, problem, cm, observer);
            return;
        }
        self.trust.hold(Held {
            packet: *ev,
            problem,
            cm,
        });
        self.release(observer);
    }

    /// Step the held packets whose files are judged now.
    fn release(&mut self, observer: &mut impl Observer) {
        while let Some(h) = self.trust.release() {
            self.step_packet(&h.packet, h.problem, h.cm, observer);
        }
    }

    fn step_packet(
        &mut self,
        ev: &PacketEvent,
        problem: Option<Problem>,
        cm: Option<Box<CmMessage>>,
        observer: &mut impl Observer,
    ) {
        let verdict = self.trust.verdict(ev);
        if let Some(out) = self.outbox.as_mut() {
            let shard = ev.key.shard(out.len());
            out[shard].push(Forwarded {
                seq: self.step_seq,
                packet: *ev,
                problem,
                cm,
                verdict,
            });
            self.step_seq += 1;
            return;
        }
        self.stepped(ev, problem, cm.as_deref(), verdict, observer);
    }

    /// One packet stepped, its file's ICRCs judged `verdict`.
    fn stepped(
        &mut self,
        ev: &PacketEvent,
        problem: Option<Problem>,
        cm: Option<&CmMessage>,
        verdict: Verdict,
        observer: &mut impl Observer,
    ) {
        let before = self.events.len();
        let take_part = self.packet_stepped(ev, verdict, observer);
        if let Some(problem) = problem.filter(|_| ev.truncated || ev.malformed) {
            for e in &mut self.events[before..] {
                if matches!(e.kind, Kind::Truncated | Kind::Malformed) && e.detail == Detail::None {
                    e.detail = Detail::Text(problem.to_string());
                }
            }
        }
        if let Some(msg) = cm.filter(|_| take_part) {
            self.cm(ev.key.src, ev.key.dst, msg);
        }
    }

    /// Truncated / malformed counting for a frame that has no flow.
    fn integrity_only(&mut self, view: &FrameView<'_>, flow: Option<u32>) {
        let (frame, t) = (view.frame.number, view.frame.time_ns);
        let text = || {
            view.problem
                .map_or(Detail::None, |p| Detail::Text(p.to_string()))
        };
        if view.truncated {
            self.capture.truncated_frames += 1;
            self.event(frame, t, Kind::Truncated, flow, None, text());
        }
        if view.malformed {
            self.capture.malformed_frames += 1;
            self.event(frame, t, Kind::Malformed, flow, None, text());
        }
    }

    fn flow_id(&mut self, key: &FlowKey) -> u32 {
        if let Some(i) = self.index.get(key, &self.flows, &self.hosts) {
            return i;
        }
        let id = u32::try_from(self.flows.len()).unwrap_or(u32::MAX);
        self.flows.push(Flow::new(self.hosts.intern_key(key)));
        if let Some(created) = self.created.as_mut() {
            created.push(self.step_seq);
        }
        self.index.insert(id, key);
        if let Some(&(peer_key, pmtu)) = self.cm_pairs.get(key) {
            self.flows[id as usize].cm_paired = true;
            self.flows[id as usize].rare_mut().pmtu_cm = pmtu;
            if let Some(peer) = self.index.get(&peer_key, &self.flows, &self.hosts) {
                self.pair(id, peer);
            }
        }
        id
    }

    fn pair(&mut self, a: u32, b: u32) {
        if a == b
            || self.flows[a as usize].peer().is_some()
            || self.flows[b as usize].peer().is_some()
        {
            return;
        }
        self.flows[a as usize].set_peer(Some(b));
        self.flows[b as usize].set_peer(Some(a));
        // They leave the PSN-agreement candidates in `pair_by_psn`, lazily: removing them
        // here would scan the list once per pairing, quadratic in the QPs between two hosts.
    }

    /// The connection's PMTU as rule 1 knows it: CM, else the largest seen on either flow.
    fn conn_pmtu(&self, x: u32) -> Option<u32> {
        let f = &self.flows[x as usize];
        let peer = f.peer().map(|p| &self.flows[p as usize]);
        if let Some(m) = f
            .rare()
            .pmtu_cm
            .or_else(|| peer.and_then(|p| p.rare().pmtu_cm))
        {
            return Some(m);
        }
        let seen = f.pmtu_seen.max(peer.map_or(0, |p| p.pmtu_seen));
        (seen > 0).then_some(seen)
    }

    /// One packet stepped through its flow; false when it takes part in nothing but its flow's
    /// counters (malformed, or a wrong ICRC taken as the wire's).
    fn packet_stepped(
        &mut self,
        ev: &PacketEvent,
        verdict: Verdict,
        observer: &mut impl Observer,
    ) -> bool {
        let id = self.flow_id(&ev.key);
        observer.packet(id, ev);
        {
            let f = &mut self.flows[id as usize];
            f.frames += 1;
            f.bytes += u64::from(ev.len);
            if f.any_transport.is_none() {
                f.any_transport = Some(ev.transport());
            }
        }
        if ev.truncated {
            self.capture.truncated_frames += 1;
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::Truncated,
                Some(id),
                Some(ev.psn),
                Detail::None,
            );
        }
        if ev.malformed {
            self.capture.malformed_frames += 1;
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::Malformed,
                Some(id),
                Some(ev.psn),
                Detail::None,
            );
            return false;
        }
        if let Icrc::Invalid { expected, found } = ev.icrc {
            match verdict {
                Verdict::AsCaptured => {
                    self.capture.icrc_errors += 1;
                    self.flows[id as usize].rare_mut().icrc_errors += 1;
                    let detail =
                        Detail::Text(format!("ICRC {found:#010x}, computed {expected:#010x}"));
                    self.event(
                        ev.frame,
                        ev.time_ns,
                        Kind::IcrcError,
                        Some(id),
                        Some(ev.psn),
                        detail,
                    );
                    return false;
                }
                // counted, without an event, and the frame takes part (§6.5)
                Verdict::Unreliable => {
                    self.capture.icrc_errors += 1;
                    self.flows[id as usize].rare_mut().icrc_errors += 1;
                }
                Verdict::Ignored => {}
            }
        }
        let Some(info) = ev.info else { return true };
        let op = info.operation;
        {
            let f = &mut self.flows[id as usize];
            f.payload_bytes += u64::from(ev.payload_len);
            if (op.is_request() || op.is_response()) && f.transport.is_none() {
                f.transport = Some(ev.transport());
            }
        }
        if (op.is_request() || op.is_response()) && ev.ecn == 0b11 {
            self.flows[id as usize].rare_mut().ecn_ce += 1;
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::EcnCe,
                Some(id),
                Some(ev.psn),
                Detail::None,
            );
        }
        if op == Operation::Cnp {
            let f = &mut self.flows[id as usize];
            f.rare_mut().cnps += 1;
            f.has_cnp = true;
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::Cnp,
                Some(id),
                None,
                Detail::None,
            );
        } else if op.is_request() {
            self.request(id, ev, info.position);
        } else if op.is_response() {
            self.response(id, ev, op, info.position);
        }
        true
    }

    fn request(&mut self, id: u32, ev: &PacketEvent, position: Position) {
        let op = ev.operation().unwrap_or(Operation::Send);
        let ends = position.ends_message() || op == Operation::ReadRequest || op.is_atomic();
        let transport = ev.transport();
        match transport {
            Transport::Rc | Transport::Uc | Transport::Xrc => {}
            _ => {
                self.flows[id as usize].unsequenced(ev.psn, ends);
                return;
            }
        }
        self.fatal_nak_check(id, ev);
        let was_started = self.flows[id as usize].psn().started();
        let pmtu = self.conn_pmtu(id);
        let read_dmalen = (op == Operation::ReadRequest).then(|| ev.dmalen.unwrap_or(0));
        let pkt = ReqPacket {
            frame: ev.frame,
            time_ns: ev.time_ns,
            psn: ev.psn,
            ends_message: ends,
            read_dmalen,
            rto_min_ns: (transport != Transport::Uc).then_some(self.cfg.rto_min_ns),
        };
        self.flows[id as usize]
            .psn_mut()
            .on_request_into(&pkt, pmtu, &mut self.scratch);
        // a READ seen before is checked once the step settled the open counts (rule 3)
        let reissued = op == Operation::ReadRequest && self.scratch.new_read.is_none();
        Self::apply_out(&mut self.flows, &mut self.events, id, &mut self.scratch);
        if reissued {
            self.read_restart_check(id, ev);
        }
        let f = &mut self.flows[id as usize];
        if matches!(position, Position::First | Position::Middle)
            && matches!(op, Operation::Send | Operation::RdmaWrite)
        {
            f.pmtu_seen = f.pmtu_seen.max(ev.payload_len);
        }
        if ev.ack_req {
            f.latency_mut().request(ev.psn, ev.time_ns);
        }
        if !was_started && f.peer().is_none() && !f.cm_paired {
            let k = f.key;
            self.requesters.entry((k.src, k.dst)).or_default().push(id);
        }
    }

    /// §6.7 `response_after_fatal_nak`: a request more than `--rto-min` after a fatal NAK.
    fn fatal_nak_check(&mut self, id: u32, ev: &PacketEvent) {
        let rto = self.cfg.rto_min_ns;
        let f = self.flows[id as usize].rare();
        let Some(at) = f.fatal_nak_at.filter(|_| !f.fatal_reported) else {
            return;
        };
        if ev.time_ns.saturating_sub(at) > rto {
            let f = self.flows[id as usize].rare_mut();
            f.fatal_reported = true;
            f.conformance.count(Kind::ResponseAfterFatalNak);
            let wait = crate::units::Duration(ev.time_ns - at);
            let detail = Detail::Text(format!(
                "request {wait} after a fatal NAK: the QP should be in the error state"
            ));
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::ResponseAfterFatalNak,
                Some(id),
                Some(ev.psn),
                detail,
            );
        }
    }

    /// §6.7 `read_wrong_restart`: a READ re-issued for a READ that got some of its responses
    /// must start at the first PSN it still lacks.
    fn read_restart_check(&mut self, id: u32, ev: &PacketEvent) {
        let f = &self.flows[id as usize];
        let Some(t) = f
            .rare()
            .reads
            .iter()
            .rev()
            .find(|t| t.covers(ev.psn) && t.any() && !t.complete())
        else {
            return;
        };
        let want = t.first_missing();
        if ev.psn == want {
            return;
        }
        let detail = Detail::Text(format!(
            "READ at PSN {} re-issued from PSN {}, not from PSN {want} (its first missing response)",
            t.psn, ev.psn
        ));
        self.flows[id as usize]
            .rare_mut()
            .conformance
            .count(Kind::ReadWrongRestart);
        self.event(
            ev.frame,
            ev.time_ns,
            Kind::ReadWrongRestart,
            Some(id),
            Some(ev.psn),
            detail,
        );
    }

    /// Findings, learned PMTU, new and settled READs of a request stream step; the stream's
    /// findings about the responder go to the paired flow.
    fn apply_out(flows: &mut [Flow], events: &mut Vec<Finding>, id: u32, out: &mut StepOut) {
        if out.is_empty() && flows[id as usize].rare().reads.is_empty() {
            // most steps (an in-order packet, an ACK that settles nothing) find nothing
            return;
        }
        let peer = flows[id as usize].peer();
        let f = &mut flows[id as usize];
        if let Some(m) = out.learned_pmtu.take() {
            f.pmtu_seen = f.pmtu_seen.max(m);
        }
        if let Some((psn, n)) = out.settled.take()
            && let Some(t) = f
                .rare_mut()
                .reads
                .iter_mut()
                .rev()
                .find(|t| t.psn == psn && t.n.is_none())
        {
            t.n = Some(n);
        }
        if let Some(r) = out.new_read.take() {
            f.rare_mut()
                .reads
                .push_back(ReadTrack::new(r.psn, r.n, r.dmalen, r.frame, r.time_ns));
        }
        // drop READs that got every response
        while f.rare().reads.front().is_some_and(ReadTrack::complete) {
            f.rare_mut().reads.pop_front();
        }
        for mut finding in out.findings.drain() {
            finding.flow = Some(id);
            f.rare_mut().conformance.count(finding.kind);
            events.push(finding);
        }
        for mut finding in out.peer_findings.drain() {
            let Some(p) = peer else { continue };
            finding.flow = Some(p);
            flows[p as usize].rare_mut().conformance.count(finding.kind);
            events.push(finding);
        }
    }

    /// PSN agreement (§6.3): the unique unpaired request flow on the reverse address pair
    /// that a response at `psn` pairs.
    fn pair_by_psn(&mut self, y: u32, psn: Psn) {
        let f = &self.flows[y as usize];
        if f.peer().is_some() || f.cm_paired {
            return;
        }
        let Some(cands) = self.requesters.get_mut(&(f.key.dst, f.key.src)) else {
            return;
        };
        // Paired flows are dropped from the candidates as they are met (each once).
        let flows = &self.flows;
        cands.retain(|&x| flows[x as usize].peer().is_none() && !flows[x as usize].cm_paired);
        let mut found = None;
        for &x in cands.iter() {
            let c = &flows[x as usize];
            if x != y && c.psn().pairs_with(psn) {
                if found.is_some() {
                    return; // ambiguous: never a guess
                }
                found = Some(x);
            }
        }
        if let Some(x) = found {
            self.pair(x, y);
        }
    }

    fn response(&mut self, id: u32, ev: &PacketEvent, op: Operation, position: Position) {
        let aeth_kind = ev.aeth.map(|(s, _)| s.kind());
        let msn = ev.aeth.map_or(0, |(_, m)| m);
        {
            let f = &mut self.flows[id as usize];
            match op {
                Operation::ReadResponse => f.rare_mut().read_responses += 1,
                Operation::AtomicAcknowledge => f.rare_mut().atomic_acks += 1,
                _ => {}
            }
        }
        let mut stream_ack = None;
        let mut fatal = false;
        if op == Operation::Acknowledge {
            let (kind, detail) = match aeth_kind {
                Some(AethKind::Ack { .. }) => {
                    self.flows[id as usize].acks += 1;
                    self.msn_check(id, ev, msn);
                    stream_ack = Some(AckKind::Ack);
                    (None, Detail::None)
                }
                Some(AethKind::RnrNak { timer_code }) => {
                    self.flows[id as usize].rare_mut().naks.rnr += 1;
                    stream_ack = Some(AckKind::RnrNak);
                    (
                        Some(Kind::NakRnr),
                        Detail::Nak {
                            msn,
                            rnr_us: Some(rnr_timer_us(timer_code)),
                        },
                    )
                }
                Some(AethKind::Nak(code)) => {
                    let naks = &mut self.flows[id as usize].rare_mut().naks;
                    let kind = match code {
                        NakCode::PSN_SEQUENCE_ERROR => {
                            naks.psn_seq_err += 1;
                            stream_ack = Some(AckKind::SeqNak);
                            Some(Kind::NakPsnSeqErr)
                        }
                        NakCode::INVALID_REQUEST => {
                            naks.invalid_request += 1;
                            fatal = true;
                            Some(Kind::NakInvalidRequest)
                        }
                        NakCode::REMOTE_ACCESS_ERROR => {
                            naks.remote_access += 1;
                            fatal = true;
                            Some(Kind::NakRemoteAccess)
                        }
                        NakCode::REMOTE_OPERATIONAL_ERROR => {
                            naks.remote_op += 1;
                            fatal = true;
                            Some(Kind::NakRemoteOp)
                        }
                        NakCode::INVALID_RD_REQUEST => {
                            naks.invalid_rd += 1;
                            Some(Kind::NakInvalidRd)
                        }
                        _ => None,
                    };
                    (kind, Detail::Nak { msn, rnr_us: None })
                }
                Some(AethKind::Reserved) | None => (None, Detail::None),
            };
            if let Some(kind) = kind {
                self.event(ev.frame, ev.time_ns, kind, Some(id), Some(ev.psn), detail);
            }
        } else if matches!(aeth_kind, Some(AethKind::Ack { .. })) {
            // a READ response or atomic ACK whose AETH acknowledges
            stream_ack = Some(AckKind::Response);
        }
        // Pairing by PSN agreement takes effect from this response.
        self.pair_by_psn(id, ev.psn);
        let Some(x) = self.flows[id as usize].peer() else {
            return;
        };
        let acknowledges = matches!(aeth_kind, Some(AethKind::Ack { .. }));
        let pmtu = self.conn_pmtu(x);
        let req = &mut self.flows[x as usize];
        if acknowledges {
            req.latency_mut().ack(ev.psn, ev.time_ns);
        }
        if fatal && req.rare().fatal_nak_at.is_none() {
            req.rare_mut().fatal_nak_at = Some(ev.time_ns);
        }
        if op == Operation::ReadResponse {
            for t in &mut req.rare_mut().reads {
                t.offer(ev.psn);
            }
            if position.ends_message() {
                // rule 2 settles the READ's count before its acknowledgement takes effect
                req.psn_mut()
                    .on_read_response_end_into(ev.psn, pmtu, &mut self.scratch);
                Self::apply_out(&mut self.flows, &mut self.events, x, &mut self.scratch);
            }
        }
        if let Some(kind) = stream_ack {
            let ack = Ack {
                frame: ev.frame,
                time_ns: ev.time_ns,
                psn: ev.psn,
                kind,
            };
            self.flows[x as usize]
                .psn_mut()
                .on_ack_into(&ack, &mut self.scratch);
            Self::apply_out(&mut self.flows, &mut self.events, x, &mut self.scratch);
        }
        let req = &mut self.flows[x as usize];
        while req.rare().reads.front().is_some_and(ReadTrack::complete) {
            req.rare_mut().reads.pop_front();
        }
    }

    /// §6.7 `msn_regression`: an ACK whose MSN is below the previous ACK's (24-bit serial).
    fn msn_check(&mut self, id: u32, ev: &PacketEvent, msn: u32) {
        let f = &mut self.flows[id as usize];
        let Some(prev) = f.replace_ack_msn(msn) else {
            return;
        };
        let back = Psn::new_masked(msn).distance(Psn::new_masked(prev)) < 0;
        if back {
            f.rare_mut().conformance.count(Kind::MsnRegression);
            let detail = Detail::Text(format!("ACK MSN {msn} after MSN {prev}"));
            self.event(
                ev.frame,
                ev.time_ns,
                Kind::MsnRegression,
                Some(id),
                Some(ev.psn),
                detail,
            );
        }
    }

    /// A CM message on QP1 from `src` to `dst`.
    pub fn cm(&mut self, src: Addr, dst: Addr, msg: &CmMessage) {
        match msg.attribute {
            CmAttribute::CONNECT_REQUEST => {
                let Some(qpn) = msg.local_qpn else { return };
                if self.cm_reqs.len() >= CM_PENDING_MAX {
                    return;
                }
                let pmtu = msg.path_mtu.map(u32::from);
                self.cm_reqs.insert(
                    (src, dst, msg.local_comm_id),
                    CmReq {
                        src,
                        dst,
                        qpn: qpn.value(),
                        pmtu,
                    },
                );
            }
            CmAttribute::CONNECT_REPLY => {
                let Some(qp_b) = msg.local_qpn else { return };
                let Some(req) = self.cm_reqs.get(&(dst, src, msg.remote_comm_id)).copied() else {
                    return;
                };
                // A = requester (req.src), B = replier (src)
                let ab = FlowKey {
                    src: req.src,
                    dst: req.dst,
                    dest_qp: qp_b.value(),
                };
                let ba = FlowKey {
                    src: req.dst,
                    dst: req.src,
                    dest_qp: req.qpn,
                };
                self.cm_pairs.insert(ab, (ba, req.pmtu));
                self.cm_pairs.insert(ba, (ab, req.pmtu));
                let a = self.index.get(&ab, &self.flows, &self.hosts);
                let b = self.index.get(&ba, &self.flows, &self.hosts);
                for id in [a, b].into_iter().flatten() {
                    let f = &mut self.flows[id as usize];
                    if f.peer().is_none() {
                        f.cm_paired = true;
                        f.rare_mut().pmtu_cm = req.pmtu;
                    }
                }
                if let (Some(a), Some(b)) = (a, b) {
                    self.pair(a, b);
                }
            }
            _ => {}
        }
    }

    /// End of the capture: settle what is open, close holes and READs, PFC periods.
    pub fn finish(self) -> Replay {
        self.finish_observed(&mut ())
    }

    /// [`Engine::finish`], telling `observer` about the packets still held for an ICRC
    /// verdict.
    pub fn finish_observed(mut self, observer: &mut impl Observer) -> Replay {
        if !self.finished {
            self.finished = true;
            self.settle(observer);
            self.capture.icrc_unreliable = !self.trust.unreliable().is_empty();
            for id in 0..self.flows.len() {
                // most flows: nothing to settle, and no need to read the peer's PMTU
                if self.flows[id].finish_quiet() {
                    continue;
                }
                let id32 = u32::try_from(id).unwrap_or(u32::MAX);
                let pmtu = self.conn_pmtu(id32);
                let mut out = self.flows[id].finish_requests(pmtu);
                Self::apply_out(&mut self.flows, &mut self.events, id32, &mut out);
                self.close_reads(id, id32, pmtu);
            }
            // A flow is throttled by its peer's CNPs. Peers are mutual (`Engine::pair` sets
            // both), so the flows that saw CNPs, few, set their peers' count: reading every
            // flow's peer instead was a cache miss each over hundreds of thousands of flows.
            // (A flow's rare part is not allocated to hold a zero.)
            for id in 0..self.flows.len() {
                let cnps = self.flows[id].rare().cnps;
                if cnps > 0
                    && let Some(p) = self.flows[id].peer()
                {
                    self.flows[p as usize].rare_mut().throttled_by_cnps = cnps;
                }
            }
            let mut out = Vec::new();
            self.pfc
                .finish(self.capture.last_time_ns.unwrap_or(0), &mut out);
            self.tcp_bth.finish(&mut out);
            self.events.append(&mut out);
        }
        self.events.sort_by_key(|e| e.frame);
        let pfc = self.pfc.rows().into_iter().cloned().collect();
        Replay {
            capture: self.capture,
            flows: self.flows,
            hosts: self.hosts,
            pfc,
            events: self.events,
            tcp_bth: self.tcp_bth.rows(),
            icrc_unreliable: self.trust.unreliable(),
            link_types: self.link_types,
        }
    }

    /// The READs still waiting at the end: a response gap or an unanswered READ each.
    fn close_reads(&mut self, id: usize, id32: u32, pmtu: Option<u32>) {
        if self.flows[id].rare().reads.is_empty() {
            return;
        }
        let reads = std::mem::take(&mut self.flows[id].rare_mut().reads);
        for mut t in reads {
            if t.n.is_none() {
                t.n = Some(read_count(t.dmalen, pmtu.unwrap_or(DEFAULT_PMTU)));
            }
            if t.complete() {
                continue;
            }
            let n = t.n.unwrap_or(1);
            let f = &mut self.flows[id];
            if t.any() {
                f.rare_mut().read_response_gaps += 1;
                let detail = Detail::ReadGap {
                    n,
                    missing: t.missing_text(),
                };
                self.events.push(Finding {
                    frame: t.frame,
                    time_ns: t.time_ns,
                    kind: Kind::ReadResponseGap,
                    flow: Some(id32),
                    psn: Some(t.psn),
                    detail,
                });
            } else {
                f.rare_mut().unanswered_reads += 1;
                self.events.push(Finding {
                    frame: t.frame,
                    time_ns: t.time_ns,
                    kind: Kind::UnansweredRead,
                    flow: Some(id32),
                    psn: Some(t.psn),
                    detail: Detail::Unanswered { n },
                });
            }
        }
    }
}
