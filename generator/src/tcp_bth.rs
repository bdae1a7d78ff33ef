//! `tcp_bth` connections (tcp_bth.md §c): RDMA messages over a TCP
//! connection, framed by the `tcp_bth` option.
//!
//! The model is computed whole when the generator starts (the connections are
//! independent of the RoCE model and small): the handshake with the SYN form
//! and timestamps, messages segmented per the sender invariants of §c.3 (one
//! message per segment start, RETH as the payload prefix of a WRITE's first
//! segment), the server's cumulative ACKs (every second segment, at once with
//! SACK blocks on a hole or a duplicate), and the faults of the scenario whose
//! `connection` is a `tcp_bth` connection, applied between the client and the
//! capture point (the receiver): `drop` (the segment is retransmitted, with a
//! newer TSval, one retransmission timeout later, in the sender's next free
//! transmit slot), `reorder` (captured `delay_ns` later with its own TSval),
//! `duplicate` (captured twice, identical) and `corrupt_icrc` (a wrong v1
//! ICRC; TCP accepts the segment, so it is not retransmitted). A fault's
//! `psn` selects the Nth data segment of the connection (0-based), `every`
//! every Nth.
//!
//! TSval counts 100 ns ticks of the sender's clock, so every segment the
//! sender transmits carries a larger TSval than the ones before it.

// Indexing cannot panic here: connections, traffic and faults are indexed by positions the
// validated scenario gave; segments below `next`.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;

use rocescope_dissectors::builder::{
    BuildError, IcrcPolicy, L2, Policy, TcpFrame, TcpNetwork, VlanTag,
};
use rocescope_dissectors::ethernet::{self, EtherType};
use rocescope_dissectors::ib::reth;
use rocescope_dissectors::ipv4::IpProtocol;
use rocescope_dissectors::tcp::{self, Flags};
use rocescope_dissectors::tcp_bth::{self, Core, IcrcAlgorithm, V1};
use rocescope_dissectors::vlan::{self, VlanId};
use rocescope_dissectors::{Opcode, ipv4, ipv6};
use serde::Serialize;

use crate::rng::Rng;
use crate::scenario::{FaultKind, OpKind, Scenario, SizeDist, TransportKind};

/// Retransmission timeout of the model.
const RTO_NS: u64 = 100_000;
/// Payload prefix of a WRITE's first segment (RETH).
const RETH_LEN: u32 = 16;
/// The server acknowledges this long after a segment arrives.
const ACK_DELAY_NS: u64 = 500;

/// One direction of one TCP connection in the truth (interfaces.md §6.6 `tcp_bth`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TcpBthTruth {
    pub src: String,
    pub dst: String,
    pub srcport: u16,
    pub dstport: u16,
    /// Data segments carrying a `tcp_bth` v1 option (copies included).
    pub segments: u64,
    /// Messages whose data was all captured and whose last segment was seen.
    pub messages: u64,
    /// Segments that opened a hole in the sequence space.
    pub gaps: u64,
    /// Late originals filling a hole.
    pub out_of_order: u64,
    /// Late fills that are retransmissions.
    pub retransmissions: u64,
    /// Copies of bytes already seen that are not retransmissions.
    pub duplicates: u64,
    pub icrc_errors: u64,
    /// Holes still open at the end that the server never acknowledged.
    pub unrecovered: u64,
    /// Holes the server acknowledged: delivered, missed by the capture (§d.1 step 4).
    pub not_captured: u64,
    /// Messages whose FIRST segment was never captured.
    pub partial_messages: u64,
    /// Consistency-check findings (§d.2).
    pub anomalies: u64,
}

/// What a captured data segment is, as the model knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Original,
    Retransmission,
    Duplicate,
    /// Delivered to the server, missed by the capture point (`capture_drop`).
    Missed,
}

/// One captured segment, small; the frame is built when it is emitted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seg {
    pub time: u64,
    conn: u32,
    from_client: bool,
    seq: u32,
    ack: u32,
    flags: Flags,
    tsval: u32,
    tsecr: u32,
    syn: bool,
    /// Up to 3 SACK blocks (pure ACKs only).
    sack: [Option<(u32, u32)>; 3],
    /// Data segments: the message and segment.
    data: Option<DataSeg>,
    corrupt: bool,
    tag: Tag,
}

#[derive(Debug, Clone, Copy)]
struct DataSeg {
    msn: u16,
    seg: u8,
    opcode: Opcode,
    more: bool,
    /// Offset of the segment's first data byte in the message.
    mbo: u32,
    /// Data bytes (prefix excluded).
    data_len: u32,
    prefix: u32,
    mlen: u32,
    imm: u32,
    va: u64,
}

impl DataSeg {
    fn payload_len(&self) -> u32 {
        self.prefix + self.data_len
    }
}

/// Per captured direction: the truth as it accumulates.
#[derive(Debug, Default, Clone)]
struct DirTruth {
    key: Option<(String, String, u16, u16)>,
    /// Byte ranges seen, relative sequence numbers (start -> end).
    seen: BTreeMap<u64, u64>,
    max_end: u64,
    row: Option<TcpBthTruth>,
    isn: u32,
    /// The server's highest cumulative ACK (relative).
    acked: u64,
}

impl DirTruth {
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
            if at >= end {
                return true;
            }
        }
        at >= end
    }

    fn any_seen(&self, start: u64, end: u64) -> bool {
        self.seen.range(..end).any(|(_, &e)| e > start)
    }

    fn insert(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        let overl: Vec<(u64, u64)> = self
            .seen
            .range(..=end)
            .filter(|&(_, &x)| x >= start)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in overl {
            self.seen.remove(&a);
            s = s.min(a);
            e = e.max(b);
        }
        self.seen.insert(s, e);
    }
}

/// All `tcp_bth` segments of a scenario, in capture order.
pub(crate) struct TcpModel {
    segs: Vec<Seg>,
    next: usize,
    dirs: Vec<DirTruth>,
}

struct Msg {
    op: OpKind,
    imm: bool,
    inval: bool,
    size: u32,
}

fn draw_size(rng: &mut Rng, d: &SizeDist) -> u32 {
    match d {
        SizeDist::Fixed(n) => *n,
        SizeDist::Uniform { min, max } => {
            let span = u64::from(max.saturating_sub(*min)) + 1;
            min + u32::try_from(rng.below(span)).unwrap_or(0)
        }
        SizeDist::Choice(v) => {
            let i = usize::try_from(rng.below(v.len() as u64)).unwrap_or(0);
            v.get(i).copied().unwrap_or(0)
        }
    }
}

fn opcode(op: OpKind, k: u32, n: u32, imm: bool, inval: bool) -> Opcode {
    let pos = if n <= 1 {
        3
    } else if k == 0 {
        0
    } else if k + 1 == n {
        2
    } else {
        1
    };
    Opcode(match (op, pos) {
        (OpKind::Write, 0) => 0x06,
        (OpKind::Write, 1) => 0x07,
        (OpKind::Write, 2) if imm => 0x09,
        (OpKind::Write, 2) => 0x08,
        (OpKind::Write, _) if imm => 0x0B,
        (OpKind::Write, _) => 0x0A,
        (_, 0) => 0x00,
        (_, 1) => 0x01,
        (_, 2) if inval => 0x16,
        (_, 2) if imm => 0x03,
        (_, 2) => 0x02,
        (_, _) if inval => 0x17,
        (_, _) if imm => 0x05,
        _ => 0x04,
    })
}

fn ser_ns(len: u64, link_bps: u64) -> u64 {
    ((len + 24) * 8 * 1_000_000_000).div_ceil(link_bps.max(1))
}

fn ts(t: u64) -> u32 {
    // 100 ns ticks; wraps like a real TS clock
    (t / 100) as u32
}

impl TcpModel {
    /// The model of every `tcp_bth` connection of `sc`.
    pub(crate) fn new(sc: &Scenario, seed: u64) -> TcpModel {
        let mut rng = Rng::new(seed ^ 0x7C9B_7C9B_7C9B_7C9B);
        let mut segs = Vec::new();
        let mut dirs = vec![DirTruth::default(); sc.connections.len()];
        let mut fault_seen = vec![0u64; sc.faults.len()];
        let mut fault_hits = vec![0u64; sc.faults.len()];
        for (ci, c) in sc.connections.iter().enumerate() {
            if c.transport != TransportKind::TcpBth {
                continue;
            }
            let conn = u32::try_from(ci).unwrap_or(u32::MAX);
            let (a, b) = (&sc.hosts[c.requester], &sc.hosts[c.responder]);
            let v6 = a.ip.is_ipv6();
            let mss: u32 = if v6 { 1400 } else { 1420 };
            let isn_c: u32 = 0x1000_0000u32.wrapping_add(u32::try_from(ci).unwrap_or(0) << 20);
            let isn_s: u32 = 0x5000_0000u32.wrapping_add(u32::try_from(ci).unwrap_or(0) << 20);
            let hop = sc.delay_ns + ser_ns(80, sc.link_bps);
            let mut t = c.start_ns;
            let base = Seg {
                time: t,
                conn,
                from_client: true,
                seq: isn_c,
                ack: 0,
                flags: Flags::SYN,
                tsval: ts(t),
                tsecr: 0,
                syn: true,
                sack: [None; 3],
                data: None,
                corrupt: false,
                tag: Tag::Original,
            };
            segs.push(base);
            let syn_ack_ts = ts(t + hop);
            segs.push(Seg {
                time: t + hop,
                from_client: false,
                seq: isn_s,
                ack: isn_c.wrapping_add(1),
                flags: Flags::SYN.union(Flags::ACK),
                tsval: syn_ack_ts,
                tsecr: ts(t),
                ..base
            });
            t += 2 * hop;
            segs.push(Seg {
                time: t,
                seq: isn_c.wrapping_add(1),
                ack: isn_s.wrapping_add(1),
                flags: Flags::ACK,
                tsval: ts(t),
                tsecr: syn_ack_ts,
                syn: false,
                ..base
            });
            t += ser_ns(80, sc.link_bps);

            // messages, in traffic order, interleaved round-robin
            let mut pending: Vec<(usize, u64)> = sc
                .traffic
                .iter()
                .enumerate()
                .filter(|(_, tr)| tr.connection == ci)
                .map(|(i, tr)| (i, tr.messages))
                .collect();
            let mut msgs = Vec::new();
            while pending.iter().any(|p| p.1 > 0) {
                for p in &mut pending {
                    if p.1 == 0 {
                        continue;
                    }
                    p.1 -= 1;
                    let tr = &sc.traffic[p.0];
                    msgs.push(Msg {
                        op: tr.op,
                        imm: tr.immediate,
                        inval: tr.invalidate,
                        size: draw_size(&mut rng, &tr.size).max(1),
                    });
                }
            }

            // the client's transmissions: (send time, segment) with the faults applied
            let gap_ns = if c.load_ppm == 0 {
                0
            } else {
                // spread to the offered load
                ser_ns(u64::from(mss) + 94, sc.link_bps)
                    * (1_000_000 - u64::from(c.load_ppm).min(1_000_000))
                    / u64::from(c.load_ppm).max(1)
            };
            let mut seq = isn_c.wrapping_add(1);
            let mut cursor = t;
            let mut retx: Vec<(u64, Seg)> = Vec::new();
            let mut captured: Vec<Seg> = Vec::new();
            let mut seg_index: u64 = 0;
            let mut va = 0x7f00_0000_0000u64 + (ci as u64) * 0x1_0000_0000;
            for (mi, m) in msgs.iter().enumerate() {
                let msn = u16::try_from((mi + 1) & 0xFFFF).unwrap_or(0);
                let prefix0 = if m.op == OpKind::Write { RETH_LEN } else { 0 };
                // segment split: the first segment carries the prefix
                let mut cuts = Vec::new();
                let mut off = 0u32;
                loop {
                    let room = if off == 0 { mss - prefix0 } else { mss };
                    let len = (m.size - off).min(room);
                    cuts.push((off, len));
                    off += len;
                    if off >= m.size {
                        break;
                    }
                }
                let n = u32::try_from(cuts.len()).unwrap_or(u32::MAX);
                for (k, &(off, len)) in cuts.iter().enumerate() {
                    let k32 = u32::try_from(k).unwrap_or(0);
                    let d = DataSeg {
                        msn,
                        seg: (k & 0xFF) as u8,
                        opcode: opcode(m.op, k32, n, m.imm, m.inval),
                        more: k32 + 1 < n,
                        mbo: off,
                        data_len: len,
                        prefix: if k == 0 { prefix0 } else { 0 },
                        mlen: m.size,
                        imm: if (m.imm || m.inval) && m.op != OpKind::Read {
                            0x1000_0000 | u32::from(msn)
                        } else {
                            0
                        },
                        va,
                    };
                    // retransmissions due before this slot go first
                    retx.sort_by_key(|r| r.0);
                    while let Some(&(due, r)) = retx.first() {
                        if due > cursor {
                            break;
                        }
                        retx.remove(0);
                        let s = Seg {
                            time: cursor + sc.delay_ns,
                            tsval: ts(cursor),
                            tag: Tag::Retransmission,
                            ..r
                        };
                        captured.push(s);
                        cursor += ser_ns(
                            u64::from(s.data.map_or(0, |d| d.payload_len())) + 94,
                            sc.link_bps,
                        ) + gap_ns;
                    }
                    let seg = Seg {
                        time: cursor + sc.delay_ns,
                        conn,
                        from_client: true,
                        seq,
                        ack: isn_s.wrapping_add(1),
                        flags: if d.more {
                            Flags::ACK
                        } else {
                            Flags::ACK.union(Flags::PSH)
                        },
                        tsval: ts(cursor),
                        tsecr: syn_ack_ts,
                        syn: false,
                        sack: [None; 3],
                        data: Some(d),
                        corrupt: false,
                        tag: Tag::Original,
                    };
                    seq = seq.wrapping_add(d.payload_len());
                    // faults of this connection
                    let mut fate = None;
                    for (fi, f) in sc.faults.iter().enumerate() {
                        let sel = f.select;
                        if sel.connection != Some(ci) || fault_hits[fi] >= sel.count {
                            continue;
                        }
                        if cursor < sel.from_ns || cursor >= sel.until_ns {
                            continue;
                        }
                        if sel.psn.is_some_and(|p| u64::from(p) != seg_index) {
                            continue;
                        }
                        if let Some(e) = sel.every {
                            fault_seen[fi] += 1;
                            if fault_seen[fi] % e != 0 {
                                continue;
                            }
                        }
                        if sel.probability.is_some_and(|p| rng.unit() >= p) {
                            continue;
                        }
                        fault_hits[fi] += 1;
                        fate = Some(f.kind);
                        break;
                    }
                    match fate {
                        Some(FaultKind::Drop) => retx.push((cursor + RTO_NS, seg)),
                        Some(FaultKind::Reorder { delay_ns }) => captured.push(Seg {
                            time: seg.time + delay_ns,
                            ..seg
                        }),
                        Some(FaultKind::Duplicate) => {
                            captured.push(seg);
                            captured.push(Seg {
                                time: seg.time + 50,
                                tag: Tag::Duplicate,
                                ..seg
                            });
                        }
                        Some(FaultKind::CorruptIcrc) => captured.push(Seg {
                            corrupt: true,
                            ..seg
                        }),
                        Some(FaultKind::CaptureDrop) => captured.push(Seg {
                            tag: Tag::Missed,
                            ..seg
                        }),
                        _ => captured.push(seg),
                    }
                    seg_index += 1;
                    cursor += ser_ns(u64::from(d.payload_len()) + 94, sc.link_bps) + gap_ns;
                }
                va += u64::from(m.size);
            }
            retx.sort_by_key(|r| r.0);
            for (due, r) in retx {
                cursor = cursor.max(due);
                let s = Seg {
                    time: cursor + sc.delay_ns,
                    tsval: ts(cursor),
                    tag: Tag::Retransmission,
                    ..r
                };
                captured.push(s);
                cursor += ser_ns(
                    u64::from(s.data.map_or(0, |d| d.payload_len())) + 94,
                    sc.link_bps,
                );
            }
            captured.sort_by_key(|s| s.time);

            // the server: cumulative ACKs, every second in-order segment, at once with SACK
            let mut rcv = DirTruth::default();
            let start = u64::from(isn_c.wrapping_add(1));
            let rel = |s: u32| u64::from(s.wrapping_sub(isn_c.wrapping_add(1)));
            let mut unacked = 0;
            let mut last_ack_t = 0;
            let mut acks = Vec::new();
            let mut max_cum = 0;
            let _ = start;
            for s in &captured {
                let len = u64::from(s.data.map_or(0, |d| d.payload_len()));
                let (a0, a1) = (rel(s.seq), rel(s.seq) + len);
                let before = rcv
                    .seen
                    .first_key_value()
                    .map_or(0, |(&k, &e)| if k == 0 { e } else { 0 });
                let dup = rcv.covered(a0, a1);
                rcv.insert(a0, a1);
                let cum = rcv
                    .seen
                    .first_key_value()
                    .map_or(0, |(&k, &e)| if k == 0 { e } else { 0 });
                let hole = rcv.seen.len() > 1;
                unacked += 1;
                let now_ack = dup || hole || a0 != before || unacked >= 2;
                if now_ack {
                    unacked = 0;
                    let at = (s.time + ACK_DELAY_NS).max(last_ack_t + 100);
                    last_ack_t = at;
                    let mut sack = [None; 3];
                    for (slot, (&l, &r)) in sack
                        .iter_mut()
                        .zip(rcv.seen.iter().filter(|(k, _)| **k != 0))
                    {
                        let l32 = u32::try_from(l & 0xFFFF_FFFF).unwrap_or(0);
                        let r32 = u32::try_from(r & 0xFFFF_FFFF).unwrap_or(0);
                        *slot = Some((
                            isn_c.wrapping_add(1).wrapping_add(l32),
                            isn_c.wrapping_add(1).wrapping_add(r32),
                        ));
                    }
                    max_cum = max_cum.max(cum);
                    let cum32 = u32::try_from(cum & 0xFFFF_FFFF).unwrap_or(0);
                    acks.push(Seg {
                        time: at,
                        conn,
                        from_client: false,
                        seq: isn_s.wrapping_add(1),
                        ack: isn_c.wrapping_add(1).wrapping_add(cum32),
                        flags: Flags::ACK,
                        tsval: ts(at),
                        tsecr: s.tsval,
                        syn: false,
                        sack,
                        data: None,
                        corrupt: false,
                        tag: Tag::Original,
                    });
                }
            }
            segs.extend(captured.into_iter().filter(|s| s.tag != Tag::Missed));
            segs.extend(acks);
            dirs[ci] = DirTruth {
                key: Some((a.ip.to_string(), b.ip.to_string(), c.udp_sport, c.tcp_port)),
                isn: isn_c.wrapping_add(1),
                acked: max_cum,
                ..DirTruth::default()
            };
        }
        segs.sort_by_key(|s| s.time);
        TcpModel {
            segs,
            next: 0,
            dirs,
        }
    }

    /// Time of the next segment to capture.
    pub(crate) fn peek(&self) -> Option<u64> {
        self.segs.get(self.next).map(|s| s.time)
    }

    /// Build the next segment into `buf`; returns (time, frame length).
    pub(crate) fn build_next(
        &mut self,
        sc: &Scenario,
        buf: &mut [u8],
    ) -> Option<Result<(u64, usize, bool), BuildError>> {
        let s = *self.segs.get(self.next)?;
        self.next += 1;
        let c = &sc.connections[conn_index(s.conn)];
        let (src, dst) = if s.from_client {
            (c.requester, c.responder)
        } else {
            (c.responder, c.requester)
        };
        let (sh, dh) = (&sc.hosts[src], &sc.hosts[dst]);
        let mut l2 = L2::untagged(ethernet::Repr {
            dst_addr: ethernet::Address(dh.mac),
            src_addr: ethernet::Address(sh.mac),
            ethertype: EtherType::IPV4,
        });
        if let Some((vid, pcp)) = sh.vlan {
            l2.vlans[0] = Some(VlanTag {
                tpid: EtherType::VLAN,
                tag: vlan::Repr {
                    pcp,
                    dei: false,
                    vid: VlanId::new_masked(vid),
                    ethertype: EtherType::IPV4,
                },
            });
        }
        let network = match (sh.ip, dh.ip) {
            (core::net::IpAddr::V4(a), core::net::IpAddr::V4(b)) => TcpNetwork::Ipv4(ipv4::Repr {
                src_addr: a,
                dst_addr: b,
                next_header: IpProtocol::TCP,
                payload_len: 0,
                hop_limit: 64,
                dscp: sh.dscp,
                ecn: sh.ecn,
                ident: (s.tsval & 0xFFFF) as u16,
                dont_frag: true,
            }),
            (a, b) => TcpNetwork::Ipv6(ipv6::Repr {
                src_addr: match a {
                    core::net::IpAddr::V6(x) => x,
                    core::net::IpAddr::V4(x) => x.to_ipv6_mapped(),
                },
                dst_addr: match b {
                    core::net::IpAddr::V6(x) => x,
                    core::net::IpAddr::V4(x) => x.to_ipv6_mapped(),
                },
                next_header: IpProtocol::TCP,
                payload_len: 0,
                hop_limit: 64,
                traffic_class: (sh.dscp << 2) | (sh.ecn & 3),
                flow_label: 0,
            }),
        };
        let (sport, dport) = if s.from_client {
            (c.udp_sport, c.tcp_port)
        } else {
            (c.tcp_port, c.udp_sport)
        };
        let mut options = tcp::Options {
            timestamps: Some((s.tsval, s.tsecr)),
            ..tcp::Options::default()
        };
        if s.syn {
            options.mss = Some(if network_is_v6(&network) { 1400 } else { 1420 } + 40);
            options.sack_permitted = true;
            options.window_scale = Some(7);
            options.tcp_bth = Some(tcp_bth::Repr::Syn {
                kind: tcp_bth::KIND_EXP_254,
                exid: tcp_bth::TCP_BTH_EXID_DEFAULT,
            });
        }
        options.sack = [s.sack[0], s.sack[1], s.sack[2], None];
        let mut payload_len = 0;
        if let Some(d) = s.data {
            payload_len = d.payload_len() as usize;
            options.tcp_bth = Some(tcp_bth::Repr::V1(V1 {
                kind: tcp_bth::KIND_EXP_254,
                exid: tcp_bth::TCP_BTH_EXID_DEFAULT,
                core: Core {
                    flags: 0x01 | if d.more { tcp_bth::flags::MS } else { 0 },
                    opcode: d.opcode,
                    msn: d.msn,
                    mbo_lo: d.mbo & 0x00FF_FFFF,
                    seg: d.seg,
                    icrc: 0,
                },
                imm: d.imm,
                mlen: d.mlen,
                mbo_hi: (d.mbo >> 24) as u8,
                rsvd8: 0,
                rsvd16: 0,
            }));
        }
        let frame = TcpFrame {
            l2,
            network,
            tcp: tcp::Repr {
                src_port: sport,
                dst_port: dport,
                seq_number: s.seq,
                ack_number: s.ack,
                flags: s.flags,
                window_len: 0xFFFF,
                urgent_at: 0,
                options,
                payload_len,
            },
            icrc_algorithm: IcrcAlgorithm::Crc32Ieee,
        };
        let policy = Policy {
            icrc: if s.corrupt {
                IcrcPolicy::Corrupt(0xDEAD_BEEF)
            } else {
                IcrcPolicy::Correct
            },
            ..Policy::default()
        };
        let r = frame.emit(buf, &policy, |p| {
            if let Some(d) = s.data {
                let (pre, data) = p.split_at_mut(d.prefix as usize);
                if d.prefix as usize == reth::HEADER_LEN {
                    reth::Repr {
                        va: d.va,
                        rkey: 0x0000_1234,
                        dma_len: d.mlen,
                    }
                    .emit(&mut reth::Header::new_unchecked(pre));
                }
                for (i, b) in data.iter_mut().enumerate() {
                    let x = u64::from(d.mbo) + i as u64;
                    *b = (x.wrapping_mul(7) ^ u64::from(d.msn)) as u8;
                }
            }
        });
        let has_bth = s.syn || s.data.is_some();
        if s.data.is_some() && s.from_client {
            self.account(conn_index(s.conn), &s);
        }
        Some(r.map(|len| (s.time, len, has_bth)))
    }

    /// The truth of one captured data segment.
    fn account(&mut self, conn: usize, s: &Seg) {
        let Some(dir) = self.dirs.get_mut(conn) else {
            return;
        };
        let Some(d) = s.data else {
            return;
        };
        let Some((src, dst, sp, dp)) = dir.key.clone() else {
            return;
        };
        let a0 = u64::from(s.seq.wrapping_sub(dir.isn));
        let a1 = a0 + u64::from(d.payload_len());
        let dup_seen = dir.covered(a0, a1);
        let gap = a0 > dir.max_end;
        let late = a0 < dir.max_end && !dir.any_seen(a0, a1);
        let row = dir.row.get_or_insert(TcpBthTruth {
            src,
            dst,
            srcport: sp,
            dstport: dp,
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
        if s.corrupt {
            row.icrc_errors += 1;
        }
        if dup_seen {
            // bytes already seen: a network copy (the model retransmits only lost segments)
            if s.tag == Tag::Retransmission {
                row.retransmissions += 1;
            } else {
                row.duplicates += 1;
            }
        } else if gap {
            row.gaps += 1;
        } else if late {
            match s.tag {
                Tag::Retransmission => row.retransmissions += 1,
                _ => row.out_of_order += 1,
            }
        }
        // a corrupted segment still delivers its bytes at TCP level
        dir.insert(a0, a1);
        dir.max_end = dir.max_end.max(a1);
    }

    /// The `tcp_bth` section of the truth.
    pub(crate) fn truth(&self) -> Vec<TcpBthTruth> {
        let mut out = Vec::new();
        for (ci, dir) in self.dirs.iter().enumerate() {
            let Some(row) = &dir.row else {
                continue;
            };
            let mut row = row.clone();
            // holes below the highest byte seen: the ones the server ACKed past were
            // delivered and only missed by the capture
            let mut prev = 0;
            for (&s, &e) in &dir.seen {
                if s > prev {
                    if dir.acked >= s {
                        row.not_captured += 1;
                    } else {
                        row.unrecovered += 1;
                    }
                }
                prev = e;
            }
            let (complete, partial) = self.complete_messages(ci, dir);
            row.messages = complete;
            row.partial_messages = partial;
            out.push(row);
        }
        out
    }

    /// Messages complete (all their bytes captured, their last segment seen) and partial
    /// (their FIRST never captured).
    fn complete_messages(&self, ci: usize, dir: &DirTruth) -> (u64, u64) {
        // a message is complete when all its segments' bytes were captured:
        // walk the captured data segments of this direction
        let mut done = 0;
        let mut by_msn: BTreeMap<u16, (u64, u32, bool)> = BTreeMap::new();
        let mut with_first: std::collections::BTreeSet<u16> = std::collections::BTreeSet::new();
        for s in &self.segs[..self.next] {
            let Some(d) = s.data else { continue };
            if !s.from_client || conn_index(s.conn) != ci {
                continue;
            }
            let a0 = u64::from(s.seq.wrapping_sub(dir.isn));
            // msg_data_start_seq = seq + prefix - offset (§d.1 step 5)
            let start = (a0 + u64::from(d.prefix)).saturating_sub(u64::from(d.mbo));
            let e = by_msn.entry(d.msn).or_insert((start, d.mlen, false));
            e.2 |= !d.more;
            if d.mbo == 0 {
                with_first.insert(d.msn);
            }
        }
        let partial = by_msn.keys().filter(|m| !with_first.contains(m)).count() as u64;
        for (_, (data_start, mlen, last)) in by_msn {
            if last && dir.covered(data_start, data_start + u64::from(mlen)) {
                done += 1;
            }
        }
        (done, partial)
    }
}

fn network_is_v6(n: &TcpNetwork) -> bool {
    matches!(n, TcpNetwork::Ipv6(_))
}

/// A connection id as an index.
#[inline]
fn conn_index(c: u32) -> usize {
    usize::try_from(c).unwrap_or(usize::MAX)
}
