//! [`PacketEvent`]: the owned summary of one RoCE frame that the engine steps on, so engine
//! state never borrows capture buffers (style.md §2.6).

use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr};

use rocescope_dissectors::ib::aeth::Syndrome;
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::{Network, RoceVersion};
use rocescope_dissectors::{Opcode, OpcodeInfo, Operation, Position, Psn};

use crate::frame::FrameView;

/// The ICRC verdict of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icrc {
    Valid,
    Invalid {
        expected: u32,
        found: u32,
    },
    /// Cut short, malformed, or not present.
    NotVerifiable,
}

/// The address of one end of a flow (interfaces.md §6.1): an IP address or a GID (RoCEv1,
/// and native InfiniBand with a GRH), or the LID of a native InfiniBand packet without one
/// (written `lid:0x0012`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    Ip(IpAddr),
    Lid(u16),
}

impl From<IpAddr> for Addr {
    fn from(a: IpAddr) -> Self {
        Addr::Ip(a)
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Ip(a) => write!(f, "{a}"),
            Addr::Lid(l) => write!(f, "lid:{l:#06x}"),
        }
    }
}

/// Directional flow key: `(src address, dst address, BTH.DestQP)`; addresses are GIDs for
/// RoCEv1, GIDs or LIDs for native InfiniBand. No UDP source port (ECMP entropy).
///
/// Laid out in its fields' order (`repr(C)`): the compiler put `dest_qp` first, and an IPv4
/// source's four bytes then straddled an 8-byte boundary, which a read of a key just copied
/// cannot take from the copy's stores (the flow lookup waited on it: 3–4 % of the CPU time on
/// small frames). Comparison and hashing go by the fields, not the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(C)]
pub struct FlowKey {
    pub src: Addr,
    pub dst: Addr,
    pub dest_qp: u32,
}

/// `src → dst QP 0x000601`, as the reports and the inspector name a flow.
impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} → {} QP {:#08x}", self.src, self.dst, self.dest_qp)
    }
}

impl FlowKey {
    /// The shard of this flow's packets among `shards` (the sharded replay,
    /// [`super::sharded`]): the same for both directions between two hosts, whose flows
    /// act on each other.
    #[must_use]
    pub fn shard(&self, shards: usize) -> usize {
        if shards <= 1 {
            return 0;
        }
        let pair = if self.src <= self.dst {
            (self.src, self.dst)
        } else {
            (self.dst, self.src)
        };
        let mut h = super::hash::FxHasher::default();
        pair.hash(&mut h);
        // the high bits mix best
        let wide = u128::from(h.finish()) * shards as u128;
        usize::try_from(wide >> 64).unwrap_or(0)
    }

    /// The same address pair the other way round, towards `dest_qp`.
    #[must_use]
    pub fn reverse(&self, dest_qp: u32) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            dest_qp,
        }
    }
}

/// Owned summary of one RoCE frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketEvent {
    pub frame: u64,
    /// The input (capture file) it came from.
    pub input: u16,
    pub time_ns: u64,
    /// Bytes on the wire (original length).
    pub len: u32,
    pub key: FlowKey,
    pub version: RoceVersion,
    pub opcode: Opcode,
    /// `None` for reserved, unknown and vendor opcodes.
    pub info: Option<&'static OpcodeInfo>,
    pub psn: Psn,
    pub ack_req: bool,
    /// AETH syndrome and MSN, when the opcode carries an AETH that was captured.
    pub aeth: Option<(Syndrome, u32)>,
    /// RETH DMA length, when captured.
    pub dmalen: Option<u32>,
    /// Payload bytes according to the length fields (whatever was captured).
    pub payload_len: u32,
    /// IP ECN bits (0 for RoCEv1).
    pub ecn: u8,
    pub icrc: Icrc,
    pub malformed: bool,
    pub truncated: bool,
}

impl PacketEvent {
    /// A hand-built packet (tests): valid ICRC, no AETH/RETH, 100 bytes, IPv4 `10.0.0.1 → .2`
    /// unless changed.
    #[must_use]
    pub fn new(frame: u64, opcode: Opcode, dest_qp: u32, psn: u32) -> PacketEvent {
        PacketEvent {
            frame,
            input: 0,
            time_ns: frame * 1000,
            len: 100,
            key: FlowKey {
                src: Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
                dst: Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))),
                dest_qp,
            },
            version: RoceVersion::V2,
            opcode,
            info: opcode.info(),
            psn: Psn::new_masked(psn),
            ack_req: false,
            aeth: None,
            dmalen: None,
            payload_len: 0,
            ecn: 0,
            icrc: Icrc::Valid,
            malformed: false,
            truncated: false,
        }
    }

    /// The same packet travelling the other way (responses, CNPs in tests).
    #[must_use]
    pub fn reversed(mut self) -> PacketEvent {
        std::mem::swap(&mut self.key.src, &mut self.key.dst);
        self
    }

    /// The transport: the table row's (DC on the RD range in DC layout), else the opcode's
    /// top three bits.
    #[must_use]
    pub fn transport(&self) -> rocescope_dissectors::Transport {
        self.info.map_or(self.opcode.transport(), |i| i.transport)
    }

    #[must_use]
    pub fn operation(&self) -> Option<Operation> {
        self.info.map(|i| i.operation)
    }

    #[must_use]
    pub fn position(&self) -> Option<Position> {
        self.info.map(|i| i.position)
    }

    /// Summarise a dissected frame; `None` when it carries no BTH or no addresses.
    #[must_use]
    pub fn from_view(view: &FrameView<'_>) -> Option<PacketEvent> {
        Self::from_view_as(view, |ev| ev)
    }

    /// [`PacketEvent::from_view`], the summary handed to `wrap`: what `wrap` makes of it is
    /// built where the caller puts the answer (the replay's reading thread, in the frame
    /// driver's batch) instead of being copied there.
    #[must_use]
    pub fn from_view_as<T>(view: &FrameView<'_>, wrap: impl FnOnce(PacketEvent) -> T) -> Option<T> {
        let d = view.dissected.as_ref()?;
        let roce = d.roce.as_ref()?;
        let ip = |a: IpAddr| Addr::Ip(a);
        let (src, dst, ecn) = match (d.network.as_ref(), d.lrh()) {
            (Some(Network::Ipv4(p)), _) => (
                ip(IpAddr::V4(p.src_addr())),
                ip(IpAddr::V4(p.dst_addr())),
                p.ecn(),
            ),
            (Some(Network::Ipv6(p)), _) => (
                ip(IpAddr::V6(p.src_addr())),
                ip(IpAddr::V6(p.dst_addr())),
                p.ecn(),
            ),
            (Some(Network::Grh(g)), _) => (ip(IpAddr::V6(g.sgid())), ip(IpAddr::V6(g.dgid())), 0),
            // a native packet without a GRH: its LIDs (§6.1)
            (None, Some((_, lrh))) => (Addr::Lid(lrh.slid()), Addr::Lid(lrh.dlid()), 0),
            (Some(Network::MacControl(_)), _) | (None, None) => return None,
        };
        let opcode = roce.opcode();
        let info = roce.info;
        // §6.5: an unknown opcode on a known transport is malformed.
        let unknown_on_known = info.is_none()
            && matches!(
                opcode.transport(),
                rocescope_dissectors::Transport::Rc
                    | rocescope_dissectors::Transport::Uc
                    | rocescope_dissectors::Transport::Rd
                    | rocescope_dissectors::Transport::Ud
                    | rocescope_dissectors::Transport::Xrc
            );
        let malformed = view.malformed || unknown_on_known;
        let icrc = if view.truncated || malformed {
            Icrc::NotVerifiable
        } else {
            // a native packet's VCRC is checked too: a bad one is a corrupted packet as
            // well (its values stand in when the ICRC itself is fine)
            let vcrc = if roce.version == RoceVersion::Ib {
                d.vcrc_status()
            } else {
                IcrcStatus::Valid
            };
            match (roce.icrc_status(), vcrc) {
                (IcrcStatus::Invalid { expected, found }, _)
                | (IcrcStatus::Valid, IcrcStatus::Invalid { expected, found }) => {
                    Icrc::Invalid { expected, found }
                }
                (IcrcStatus::Valid, _) => Icrc::Valid,
                (IcrcStatus::NotVerifiable, _) => Icrc::NotVerifiable,
            }
        };
        Some(wrap(PacketEvent {
            frame: view.frame.number,
            input: view.frame.input,
            time_ns: view.frame.time_ns,
            len: view.frame.orig_len,
            key: FlowKey {
                src,
                dst,
                dest_qp: roce.bth.dest_qp().value(),
            },
            version: roce.version,
            opcode,
            info,
            psn: roce.bth.psn(),
            ack_req: roce.bth.ack_req(),
            aeth: roce.exts.aeth().map(|a| (a.syndrome(), a.msn())),
            dmalen: roce.exts.reth().map(|r| r.dma_len()),
            payload_len: u32::try_from(roce.payload_len).unwrap_or(u32::MAX),
            ecn,
            icrc,
            malformed,
            truncated: view.truncated,
        }))
    }
}
