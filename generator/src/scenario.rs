//! Scenario files (TOML): parsing, validation and the validated [`Scenario`].
//!
//! Every problem is a [`ScenarioError`] naming the file, the line and the key
//! (`FILE:LINE: KEY: reason`); nothing here panics on any input.

// Indexing cannot panic here: while validating, hosts and connections are indexed after the name
// lookup that found them; the text is cut at a span toml reported inside it.
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::net::IpAddr;
use core::ops::Range;

use serde::Deserialize;
use toml::Spanned;

/// A scenario that could not be read, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or other origin) named by the caller.
    pub origin: String,
    /// 1-based line of the offending key or value.
    pub line: usize,
    /// `table.key` of the offending setting.
    pub key: String,
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.origin, self.line, self.key, self.reason
        )
    }
}

impl core::error::Error for ScenarioError {}

/// Where the capture tap sits relative to the faults (the switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePoint {
    /// On the requester's link: requests are captured before any fault.
    Sender,
    /// On the responder's link: requests are captured after the faults.
    Receiver,
    /// Both (interfaces.md §6.8): two captures of one run, the sender side's first
    /// ([`crate::Generator::at_tap`]).
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Rc,
    Uc,
    Ud,
    /// RDMA messages over TCP with the `tcp_bth` option (tcp_bth.md §c): no
    /// QPNs; `udp_sport` is the client's TCP port, `tcp_port` the server's.
    TcpBth,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Send,
    Write,
    Read,
    CmpSwap,
    FetchAdd,
}

/// A host: one NIC port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub mac: [u8; 6],
    /// The IP address (Ethernet), or on InfiniBand the GID when it is IPv6 (the host's
    /// packets then carry a GRH) and nothing when it is IPv4 (local routes, LIDs only).
    pub ip: IpAddr,
    /// InfiniBand local identifier.
    pub lid: u16,
    /// InfiniBand service level.
    pub sl: u8,
    /// VLAN id and PCP of the frames this host sends.
    pub vlan: Option<(u16, u8)>,
    pub dscp: u8,
    pub ecn: u8,
}

impl Host {
    /// The 802.1p priority of this host's traffic: the PCP when tagged, else DSCP >> 3.
    #[must_use]
    pub fn priority(&self) -> u8 {
        match self.vlan {
            Some((_, pcp)) => pcp,
            None => self.dscp >> 3,
        }
    }
}

/// One queue pair connection: a requester and a responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub name: String,
    pub transport: TransportKind,
    /// NVIDIA DC: RC's behaviour on the RD opcode range, with DC's 8 bytes, an RDETH and a
    /// DETH after the BTH, as tshark 4.0 lays them out (capture-formats.md §3.2).
    pub dc: bool,
    pub requester: usize,
    pub responder: usize,
    /// 0 on a `tcp_bth` connection.
    pub requester_qpn: u32,
    /// 0 on a `tcp_bth` connection.
    pub responder_qpn: u32,
    /// `tcp_bth`: the server's (responder's) TCP port.
    pub tcp_port: u16,
    pub start_psn: u32,
    pub pmtu: u32,
    pub udp_sport: u16,
    pub pkey: u16,
    pub qkey: u32,
    /// Responder ACK coalescing: ACK after this many packets (0: only on AckReq).
    pub ack_every: u32,
    /// Requester sets AckReq on the last packet of each message and after this many packets.
    pub ack_req_every: u32,
    /// AETH credit code in ACKs (31 = unlimited).
    pub credits: u8,
    /// Local ACK timeout exponent: 4.096 µs × 2^t.
    pub local_ack_timeout: u8,
    pub rnr_timer: u8,
    pub retry_cnt: u8,
    /// Most PSNs in flight beyond the oldest unacknowledged one.
    pub window: u32,
    /// Offered load, parts per million of the link speed.
    pub load_ppm: u32,
    pub start_ns: u64,
    /// Notification point: least time between two CNPs of this connection.
    pub cnp_interval_ns: u64,
    /// Whether the requester cuts its rate on CNPs.
    pub dcqcn: bool,
}

/// Message sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeDist {
    Fixed(u32),
    Uniform { min: u32, max: u32 },
    Choice(Vec<u32>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traffic {
    pub connection: usize,
    pub op: OpKind,
    pub immediate: bool,
    pub invalidate: bool,
    pub size: SizeDist,
    pub messages: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Drop,
    Duplicate,
    Reorder {
        delay_ns: u64,
    },
    CorruptIcrc,
    EcnCe,
    Truncate {
        snaplen: u32,
    },
    Rnr,
    /// The packet is delivered; the capture point misses it (§6.2 capture loss).
    CaptureDrop,
    // What a misbehaving NIC does (§6.7's conformance findings have these causes):
    /// The requester goes back `offset` PSNs past the one a NAK named.
    WrongResend {
        offset: u32,
    },
    /// The responder NAKs a sequence error again when the next packet is still out of
    /// sequence.
    DoubleNak,
    /// The responder follows an ACK with an ACK of a PSN `back` earlier.
    AckRegression {
        back: u32,
    },
    /// The responder's ACK carries an MSN one below its previous ACK's.
    MsnRegression,
    /// The requester re-issues a READ whose responses went missing from its first PSN, not
    /// from the first missing one.
    ReadWrongRestart,
    /// The responder answers the request with a remote access error NAK (fatal) and takes
    /// nothing more on the QP.
    FatalNak,
    /// The requester goes on after a fatal NAK instead of moving the QP to the error state.
    IgnoreFatalNak,
}

impl FaultKind {
    /// A NIC misbehaviour knob rather than something the network does: it acts wherever
    /// its situation arises unless placed.
    #[must_use]
    pub fn is_knob(self) -> bool {
        matches!(
            self,
            FaultKind::WrongResend { .. }
                | FaultKind::DoubleNak
                | FaultKind::AckRegression { .. }
                | FaultKind::MsnRegression
                | FaultKind::ReadWrongRestart
                | FaultKind::FatalNak
                | FaultKind::IgnoreFatalNak
        )
    }
}

/// Which packets a drop or capture drop acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Request packets (the default), selected by their PSN.
    Request,
    /// Responses: ACKs, NAKs, READ responses, atomic ACKs, selected by their PSN.
    Response,
}

/// How a switch's mirror session wraps each frame before the collector captures it
/// (`[capture] encapsulation`, capture-formats.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encapsulation {
    /// GRE (with a sequence number) and ERSPAN Type II.
    Erspan2,
    /// GRE and ERSPAN Type III.
    Erspan3,
    /// GRE with a key, transparent Ethernet bridging.
    Gre,
    /// VXLAN over UDP 4789.
    Vxlan,
    /// Geneve over UDP 6081, with one option.
    Geneve,
    /// Two MPLS labels before the IP packet (the frame's own Ethernet header is not kept;
    /// frames without IP, PFC and PAUSE, stay unwrapped).
    Mpls,
}

impl Encapsulation {
    /// A mirror session (the copy may be cut, with ERSPAN's truncated bit set).
    pub fn is_erspan(self) -> bool {
        matches!(self, Self::Erspan2 | Self::Erspan3)
    }
}

/// What the capture point writes into the ICRC field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureIcrc {
    /// The wire's ICRC.
    Wire,
    /// A wrong one in every frame, as an offload sniffer that copies the packet before the
    /// NIC computes its ICRC does (§6.5).
    Garbage,
}

/// Which request packets a fault hits: every given condition must hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Selector {
    pub connection: Option<usize>,
    /// The first transmission of this PSN.
    pub psn: Option<u32>,
    /// Every Nth packet that passes the other conditions.
    pub every: Option<u64>,
    pub probability: Option<f64>,
    pub from_ns: u64,
    pub until_ns: u64,
    /// At most this many hits.
    pub count: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    pub select: Selector,
    pub direction: Direction,
}

/// A train of PFC frames from one host for one priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcSpec {
    pub host: usize,
    pub priority: u8,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub quanta: u16,
    pub refresh_ns: u64,
    pub resume: bool,
}

/// A validated scenario.
/// What the link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// Ethernet with RoCE (the default).
    Ethernet,
    /// Native InfiniBand, written as ibdump writes it: ERF records (link type 197).
    Infiniband,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub origin: String,
    pub link_kind: LinkKind,
    pub link_bps: u64,
    pub delay_ns: u64,
    pub start_ns: u64,
    pub stop_ns: u64,
    pub max_frames: u64,
    pub capture: CapturePoint,
    /// With `point = "both"`: the receiver side's clock minus the sender side's, and the
    /// jitter of its timestamps (each late by up to this much).
    pub tap_clock_offset_ns: i64,
    pub tap_jitter_ns: u64,
    /// Cut every captured frame to this many bytes (0: keep whole).
    pub snaplen: u32,
    pub capture_icrc: CaptureIcrc,
    pub encapsulation: Option<Encapsulation>,
    pub hosts: Vec<Host>,
    pub connections: Vec<Connection>,
    pub traffic: Vec<Traffic>,
    pub faults: Vec<Fault>,
    pub pfc: Vec<PfcSpec>,
}

// ---------------------------------------------------------------- raw TOML

type S<T> = Spanned<T>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    link: Option<S<RawLink>>,
    capture: Option<S<RawCapture>>,
    #[serde(default)]
    host: Vec<S<RawHost>>,
    #[serde(default)]
    connection: Vec<S<RawConnection>>,
    #[serde(default)]
    traffic: Vec<S<RawTraffic>>,
    #[serde(default)]
    fault: Vec<S<RawFault>>,
    #[serde(default)]
    pfc: Vec<S<RawPfc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    kind: Option<S<String>>,
    speed_gbps: Option<S<u64>>,
    delay_ns: Option<S<u64>>,
    start_ns: Option<S<u64>>,
    stop_ns: Option<S<u64>>,
    max_frames: Option<S<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapture {
    point: Option<S<String>>,
    clock_offset_ns: Option<S<i64>>,
    jitter_ns: Option<S<u64>>,
    snaplen: Option<S<u32>>,
    icrc: Option<S<String>>,
    encapsulation: Option<S<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: S<String>,
    mac: Option<S<String>>,
    ip: Option<S<String>>,
    gid: Option<S<String>>,
    lid: Option<S<u16>>,
    sl: Option<S<u8>>,
    vlan: Option<S<u16>>,
    pcp: Option<S<u8>>,
    dscp: Option<S<u8>>,
    ecn: Option<S<u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConnection {
    name: S<String>,
    transport: S<String>,
    requester: S<String>,
    responder: S<String>,
    requester_qpn: Option<S<u32>>,
    responder_qpn: Option<S<u32>>,
    tcp_port: Option<S<u16>>,
    start_psn: Option<S<u64>>,
    pmtu: Option<S<u32>>,
    udp_sport: Option<S<u16>>,
    pkey: Option<S<u16>>,
    qkey: Option<S<u32>>,
    ack_every: Option<S<u32>>,
    ack_req_every: Option<S<u32>>,
    credits: Option<S<u8>>,
    local_ack_timeout: Option<S<u8>>,
    rnr_timer: Option<S<u8>>,
    retry_cnt: Option<S<u8>>,
    window: Option<S<u32>>,
    load: Option<S<f64>>,
    start_ns: Option<S<u64>>,
    cnp_interval_ns: Option<S<u64>>,
    dcqcn: Option<S<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    connection: S<String>,
    op: S<String>,
    immediate: Option<S<bool>>,
    invalidate: Option<S<bool>>,
    size: Option<S<u32>>,
    size_min: Option<S<u32>>,
    size_max: Option<S<u32>>,
    sizes: Option<S<Vec<u32>>>,
    messages: S<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: S<String>,
    connection: Option<S<String>>,
    psn: Option<S<u64>>,
    every: Option<S<u64>>,
    probability: Option<S<f64>>,
    from_ns: Option<S<u64>>,
    until_ns: Option<S<u64>>,
    count: Option<S<u64>>,
    delay_ns: Option<S<u64>>,
    snaplen: Option<S<u32>>,
    direction: Option<S<String>>,
    offset: Option<S<u32>>,
    back: Option<S<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPfc {
    host: S<String>,
    priority: S<u8>,
    start_ns: S<u64>,
    duration_ns: S<u64>,
    quanta: Option<S<u16>>,
    refresh_ns: Option<S<u64>>,
    resume: Option<S<bool>>,
}

// ---------------------------------------------------------------- errors

struct Ctx<'t> {
    text: &'t str,
    origin: &'t str,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn err(&self, span: Range<usize>, key: &str, reason: impl Into<String>) -> ScenarioError {
        ScenarioError {
            origin: self.origin.to_owned(),
            line: self.line_of(span.start),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }

    /// The table header (`[x]` / `[[x]]`) in force at `offset`.
    fn table_at(&self, offset: usize) -> Option<&str> {
        let end = offset.min(self.text.len());
        let before = self.text.get(..end)?;
        before.lines().rev().find_map(|l| {
            let l = l.trim();
            if l.starts_with('[') {
                Some(l.trim_matches(|c| c == '[' || c == ']').trim())
            } else {
                None
            }
        })
    }

    /// The `key` of a `key = value` line that holds `offset`.
    fn key_at(&self, offset: usize) -> Option<&str> {
        let end = offset.min(self.text.len());
        let start = self.text.get(..end)?.rfind('\n').map_or(0, |i| i + 1);
        let line = self.text.get(start..)?.lines().next()?;
        let (key, _) = line.split_once('=')?;
        let key = key.trim();
        (!key.is_empty() && !key.starts_with('[') && !key.starts_with('#')).then_some(key)
    }

    fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_owned();
        let quoted = |prefix: &str| {
            let rest = message.split(prefix).nth(1)?;
            let rest = rest.strip_prefix('`')?;
            Some(rest.split('`').next()?.to_owned())
        };
        let field = quoted("unknown field ")
            .or_else(|| quoted("missing field "))
            .or_else(|| self.key_at(span.start).map(str::to_owned))
            .filter(|f| !f.is_empty());
        let table = self.table_at(span.start).filter(|t| !t.is_empty());
        let key = match (table, field) {
            (Some(t), Some(f)) if !f.starts_with(t) => format!("{t}.{f}"),
            (_, Some(f)) => f,
            (Some(t), None) => t.to_owned(),
            (None, None) => "(top level)".to_owned(),
        };
        let mut err = self.err(span, &key, message.replace('\n', " "));
        if err.line == 0 {
            err.line = 1;
        }
        err
    }
}

fn req<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<S<T>>,
    table: &S<impl Sized>,
    key: &str,
) -> Result<&'a S<T>, ScenarioError> {
    v.as_ref()
        .ok_or_else(|| ctx.err(table.span(), key, "missing, and there is no default"))
}

/// An optional number that must be at least 1.
fn positive(
    ctx: &Ctx<'_>,
    v: Option<&S<u32>>,
    default: u32,
    key: &str,
) -> Result<u32, ScenarioError> {
    match v {
        None => Ok(default),
        Some(n) if *n.get_ref() == 0 => Err(ctx.err(n.span(), key, "must be at least 1")),
        Some(n) => Ok(*n.get_ref()),
    }
}

fn opt<T: Copy>(v: Option<&S<T>>, default: T) -> T {
    v.map_or(default, |s| *s.get_ref())
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split([':', '-']);
    for b in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

const PSN_MAX: u64 = 0x00FF_FFFF;

/// Connections one scenario may hold (the model's connection ids are 32 bits).
pub const MAX_CONNECTIONS: u32 = u32::MAX;

impl Scenario {
    /// Parse and validate a scenario; `origin` names the file in errors.
    ///
    /// # Errors
    /// A [`ScenarioError`] naming `origin`, the line and the key of the first problem.
    #[allow(clippy::too_many_lines)]
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { text, origin };
        let raw: RawScenario = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;

        // link
        let link_kind = match raw.link.as_ref().and_then(|l| l.get_ref().kind.as_ref()) {
            None => LinkKind::Ethernet,
            Some(k) => match k.get_ref().as_str() {
                "ethernet" => LinkKind::Ethernet,
                "ib" | "infiniband" => LinkKind::Infiniband,
                other => {
                    return Err(ctx.err(
                        k.span(),
                        "link.kind",
                        format!("unknown link kind {other:?} (ethernet, ib)"),
                    ));
                }
            },
        };
        let ib = link_kind == LinkKind::Infiniband;
        let (link_bps, delay_ns, start_ns, stop_ns, max_frames) = match &raw.link {
            None => (
                100_000_000_000,
                500,
                1_700_000_000_000_000_000,
                1_000_000_000,
                1_000_000,
            ),
            Some(l) => {
                let l = l.get_ref();
                let speed = opt(l.speed_gbps.as_ref(), 100);
                if let Some(s) = l
                    .speed_gbps
                    .as_ref()
                    .filter(|s| !(1..=1600).contains(s.get_ref()))
                {
                    return Err(ctx.err(s.span(), "link.speed_gbps", "must be 1..=1600"));
                }
                let stop = opt(l.stop_ns.as_ref(), 1_000_000_000);
                if let Some(s) = l
                    .stop_ns
                    .as_ref()
                    .filter(|s| *s.get_ref() == 0 || *s.get_ref() > 3_600_000_000_000)
                {
                    return Err(ctx.err(s.span(), "link.stop_ns", "must be 1..=3600 s"));
                }
                let maxf = opt(l.max_frames.as_ref(), 1_000_000);
                if let Some(s) = l.max_frames.as_ref().filter(|s| *s.get_ref() == 0) {
                    return Err(ctx.err(s.span(), "link.max_frames", "must be at least 1"));
                }
                let delay = opt(l.delay_ns.as_ref(), 500);
                if let Some(s) = l.delay_ns.as_ref().filter(|s| *s.get_ref() > 1_000_000_000) {
                    return Err(ctx.err(s.span(), "link.delay_ns", "must be at most 1 s"));
                }
                let start = opt(l.start_ns.as_ref(), 1_700_000_000_000_000_000);
                if let Some(s) = l.start_ns.as_ref().filter(|s| *s.get_ref() > u64::MAX / 2) {
                    return Err(ctx.err(s.span(), "link.start_ns", "too large"));
                }
                (speed * 1_000_000_000, delay, start, stop, maxf)
            }
        };

        let encapsulation = match raw
            .capture
            .as_ref()
            .and_then(|c| c.get_ref().encapsulation.as_ref())
        {
            None => None,
            Some(e) => Some(match e.get_ref().as_str() {
                "erspan2" => Encapsulation::Erspan2,
                "erspan3" => Encapsulation::Erspan3,
                "gre" => Encapsulation::Gre,
                "vxlan" => Encapsulation::Vxlan,
                "geneve" => Encapsulation::Geneve,
                "mpls" => Encapsulation::Mpls,
                other => {
                    return Err(ctx.err(
                        e.span(),
                        "capture.encapsulation",
                        format!("unknown encapsulation {other:?} (erspan2, erspan3, gre, vxlan, geneve, mpls)"),
                    ));
                }
            }),
        };
        if let Some(e) = raw
            .capture
            .as_ref()
            .and_then(|c| c.get_ref().encapsulation.as_ref())
            .filter(|_| ib)
        {
            return Err(ctx.err(
                e.span(),
                "capture.encapsulation",
                "mirror encapsulations are Ethernet's: not on an InfiniBand link",
            ));
        }
        let (tap_clock_offset_ns, tap_jitter_ns) = match &raw.capture {
            None => (0, 0),
            Some(c) => {
                let c = c.get_ref();
                let both = c.point.as_ref().is_some_and(|p| p.get_ref() == "both");
                for (set, key) in [
                    (
                        c.clock_offset_ns.as_ref().map(Spanned::span),
                        "capture.clock_offset_ns",
                    ),
                    (c.jitter_ns.as_ref().map(Spanned::span), "capture.jitter_ns"),
                ] {
                    if let Some(span) = set.filter(|_| !both) {
                        return Err(ctx.err(
                            span,
                            key,
                            "only with point = \"both\" (the second capture's clock against the first's)",
                        ));
                    }
                }
                let offset = opt(c.clock_offset_ns.as_ref(), 0);
                if let Some(o) = c
                    .clock_offset_ns
                    .as_ref()
                    .filter(|_| offset.unsigned_abs() > 86_400_000_000_000)
                {
                    return Err(ctx.err(
                        o.span(),
                        "capture.clock_offset_ns",
                        "at most a day either way",
                    ));
                }
                let jitter = opt(c.jitter_ns.as_ref(), 0);
                if let Some(j) = c.jitter_ns.as_ref().filter(|_| jitter > 1_000_000_000) {
                    return Err(ctx.err(j.span(), "capture.jitter_ns", "at most 1 s"));
                }
                (offset, jitter)
            }
        };
        let (capture, snaplen, capture_icrc) = match &raw.capture {
            None => (CapturePoint::Receiver, 0, CaptureIcrc::Wire),
            Some(c) => {
                let c = c.get_ref();
                let point = match &c.point {
                    None => CapturePoint::Receiver,
                    Some(p) => match p.get_ref().as_str() {
                        "sender" => CapturePoint::Sender,
                        "receiver" => CapturePoint::Receiver,
                        "both" => CapturePoint::Both,
                        other => {
                            return Err(ctx.err(
                                p.span(),
                                "capture.point",
                                format!("unknown capture point {other:?} (sender, receiver, both)"),
                            ));
                        }
                    },
                };
                let snap = opt(c.snaplen.as_ref(), 0);
                if let Some(s) = c.snaplen.as_ref().filter(|_| snap != 0 && snap < 128) {
                    return Err(ctx.err(
                        s.span(),
                        "capture.snaplen",
                        "must be 0 (whole frames) or at least 128 so that every header stays captured",
                    ));
                }
                let icrc = match &c.icrc {
                    None => CaptureIcrc::Wire,
                    Some(i) => match i.get_ref().as_str() {
                        "wire" => CaptureIcrc::Wire,
                        "garbage" => CaptureIcrc::Garbage,
                        other => {
                            return Err(ctx.err(
                                i.span(),
                                "capture.icrc",
                                format!("unknown ICRC mode {other:?} (wire, garbage)"),
                            ));
                        }
                    },
                };
                (point, snap, icrc)
            }
        };

        // hosts
        let mut hosts: Vec<Host> = Vec::with_capacity(raw.host.len());
        for h in &raw.host {
            let h = h.get_ref();
            let name = h.name.get_ref().clone();
            if hosts.iter().any(|o| o.name == name) {
                return Err(ctx.err(
                    h.name.span(),
                    "host.name",
                    format!("duplicate host {name:?}"),
                ));
            }
            let hi = hosts.len();
            let mac = match (&h.mac, ib) {
                (Some(m), _) => {
                    let mac = parse_mac(m.get_ref()).ok_or_else(|| {
                        ctx.err(
                            m.span(),
                            "host.mac",
                            format!("{:?} is not a MAC address", m.get_ref()),
                        )
                    })?;
                    if mac[0] & 1 != 0 {
                        return Err(ctx.err(m.span(), "host.mac", "must be a unicast address"));
                    }
                    mac
                }
                // InfiniBand has no MACs
                (None, true) => [2, 0, 0, 0, 0, u8::try_from(hi & 0xFF).unwrap_or(0)],
                (None, false) => {
                    return Err(ctx.err(
                        h.name.span(),
                        "host.mac",
                        "missing, and there is no default",
                    ));
                }
            };
            let lid = match &h.lid {
                None => u16::try_from(hi + 1).unwrap_or(1),
                Some(l) if !ib => {
                    return Err(ctx.err(l.span(), "host.lid", "needs [link] kind = \"ib\""));
                }
                // unicast LIDs are 0x0001..=0xBFFF
                Some(l) if !(1..=0xBFFF).contains(l.get_ref()) => {
                    return Err(ctx.err(l.span(), "host.lid", "must be a unicast LID, 1..=0xBFFF"));
                }
                Some(l) => *l.get_ref(),
            };
            let sl = match &h.sl {
                None => 0,
                Some(v) if !ib => {
                    return Err(ctx.err(v.span(), "host.sl", "needs [link] kind = \"ib\""));
                }
                Some(v) if *v.get_ref() > 15 => {
                    return Err(ctx.err(v.span(), "host.sl", "must be 0..=15"));
                }
                Some(v) => *v.get_ref(),
            };
            let ip: IpAddr = match (&h.ip, &h.gid, ib) {
                (Some(ip), None, false) => ip.get_ref().parse().map_err(|_| {
                    ctx.err(
                        ip.span(),
                        "host.ip",
                        format!("{:?} is not an IPv4 or IPv6 address", ip.get_ref()),
                    )
                })?,
                (None, _, false) => {
                    return Err(ctx.err(
                        h.name.span(),
                        "host.ip",
                        "missing, and there is no default",
                    ));
                }
                (_, Some(g), false) => {
                    return Err(ctx.err(
                        g.span(),
                        "host.gid",
                        "needs [link] kind = \"ib\" (RoCE hosts have an ip)",
                    ));
                }
                (Some(ip), _, true) => {
                    return Err(ctx.err(
                        ip.span(),
                        "host.ip",
                        "an InfiniBand host has a lid (and a gid for global routes), not an ip",
                    ));
                }
                // InfiniBand: the GID routes globally (a GRH on every packet); without one
                // the host is reached by its LID only (the address is not on the wire)
                (None, Some(g), true) => {
                    let gid: std::net::Ipv6Addr = g.get_ref().parse().map_err(|_| {
                        ctx.err(
                            g.span(),
                            "host.gid",
                            format!("{:?} is not a GID (IPv6 notation)", g.get_ref()),
                        )
                    })?;
                    IpAddr::V6(gid)
                }
                (None, None, true) => IpAddr::V4(std::net::Ipv4Addr::new(
                    0,
                    0,
                    0,
                    u8::try_from(hi & 0xFF).unwrap_or(0),
                )),
            };
            if let Some(v) = h.vlan.as_ref().filter(|_| ib) {
                return Err(ctx.err(v.span(), "host.vlan", "InfiniBand has no VLANs (use sl)"));
            }
            let vlan = match &h.vlan {
                None => {
                    if let Some(p) = &h.pcp {
                        return Err(ctx.err(p.span(), "host.pcp", "needs a vlan"));
                    }
                    None
                }
                Some(v) => {
                    if !(1..=4094).contains(v.get_ref()) {
                        return Err(ctx.err(v.span(), "host.vlan", "must be 1..=4094"));
                    }
                    let pcp = opt(h.pcp.as_ref(), 0);
                    if let Some(p) = h.pcp.as_ref().filter(|_| pcp > 7) {
                        return Err(ctx.err(p.span(), "host.pcp", "must be 0..=7"));
                    }
                    Some((*v.get_ref(), pcp))
                }
            };
            let dscp = opt(h.dscp.as_ref(), 26);
            if let Some(d) = h.dscp.as_ref().filter(|_| dscp > 63) {
                return Err(ctx.err(d.span(), "host.dscp", "must be 0..=63"));
            }
            let ecn = opt(h.ecn.as_ref(), 2);
            if let Some(e) = h.ecn.as_ref().filter(|_| ecn > 2) {
                return Err(ctx.err(
                    e.span(),
                    "host.ecn",
                    "must be 0 (Not-ECT), 1 or 2 (ECT); CE is set by an ecn_ce fault",
                ));
            }
            hosts.push(Host {
                name,
                mac,
                ip,
                lid,
                sl,
                vlan,
                dscp,
                ecn,
            });
        }
        let host_idx = |s: &S<String>, key: &str| -> Result<usize, ScenarioError> {
            hosts
                .iter()
                .position(|h| h.name == *s.get_ref())
                .ok_or_else(|| {
                    ctx.err(
                        s.span(),
                        key,
                        format!("unknown host {:?} (no [[host]] has that name)", s.get_ref()),
                    )
                })
        };

        // connections
        let mut conns: Vec<Connection> = Vec::with_capacity(raw.connection.len());
        // Sets, not scans: a fabric-scale scenario has tens of thousands of connections.
        let mut used_qps: std::collections::HashSet<(usize, u32)> =
            std::collections::HashSet::new();
        let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
        for (ci, c) in raw.connection.iter().enumerate() {
            let c = c.get_ref();
            let name = c.name.get_ref().clone();
            // The model numbers connections with 32 bits.
            if u32::try_from(ci).is_err() {
                return Err(ctx.err(
                    c.name.span(),
                    "connection",
                    format!("at most {MAX_CONNECTIONS} connections in one scenario"),
                ));
            }
            if !names.insert(name.clone()) {
                return Err(ctx.err(
                    c.name.span(),
                    "connection.name",
                    format!("duplicate connection {name:?}"),
                ));
            }
            let dc = c.transport.get_ref().eq_ignore_ascii_case("dc");
            let transport = match c.transport.get_ref().to_ascii_lowercase().as_str() {
                "rc" | "dc" => TransportKind::Rc,
                "uc" => TransportKind::Uc,
                "ud" => TransportKind::Ud,
                "tcp_bth" => TransportKind::TcpBth,
                other => {
                    return Err(ctx.err(
                        c.transport.span(),
                        "connection.transport",
                        format!("unknown transport {other:?} (rc, uc, ud, dc, tcp_bth)"),
                    ));
                }
            };
            let requester = host_idx(&c.requester, "connection.requester")?;
            let responder = host_idx(&c.responder, "connection.responder")?;
            if requester == responder {
                return Err(ctx.err(
                    c.responder.span(),
                    "connection.responder",
                    "requester and responder must be different hosts",
                ));
            }
            if hosts[requester].ip.is_ipv4() != hosts[responder].ip.is_ipv4() {
                return Err(ctx.err(
                    c.responder.span(),
                    "connection.responder",
                    "requester and responder must use the same IP version",
                ));
            }
            let is_tcp = transport == TransportKind::TcpBth;
            for (qpn, host, key) in [
                (&c.requester_qpn, requester, "connection.requester_qpn"),
                (&c.responder_qpn, responder, "connection.responder_qpn"),
            ] {
                if is_tcp {
                    if let Some(q) = qpn {
                        return Err(ctx.err(q.span(), key, "a tcp_bth connection has no QPs"));
                    }
                    continue;
                }
                let qpn = req(&ctx, qpn, &c.name, key)?;
                let q = *qpn.get_ref();
                if !(2..=0x00FF_FFFF).contains(&q) {
                    return Err(ctx.err(
                        qpn.span(),
                        key,
                        format!("QPN {q} out of range 2..=16777215"),
                    ));
                }
                if !used_qps.insert((host, q)) {
                    return Err(ctx.err(
                        qpn.span(),
                        key,
                        format!("QPN {q} of host {:?} is used twice", hosts[host].name),
                    ));
                }
            }
            let start_psn = opt(c.start_psn.as_ref(), 0);
            if let Some(p) = c.start_psn.as_ref().filter(|_| start_psn > PSN_MAX) {
                return Err(ctx.err(
                    p.span(),
                    "connection.start_psn",
                    format!("PSN {start_psn} out of range 0..=16777215 (24 bits)"),
                ));
            }
            let pmtu = opt(c.pmtu.as_ref(), 1024);
            if let Some(p) = c
                .pmtu
                .as_ref()
                .filter(|_| !(pmtu.is_power_of_two() && (256..=4096).contains(&pmtu)))
            {
                return Err(ctx.err(
                    p.span(),
                    "connection.pmtu",
                    format!("PMTU {pmtu} is not one of 256, 512, 1024, 2048, 4096"),
                ));
            }
            let check_range = |v: &Option<S<u8>>, key: &str, max: u8| {
                if let Some(s) = v.as_ref().filter(|s| *s.get_ref() > max) {
                    return Err(ctx.err(s.span(), key, format!("must be 0..={max}")));
                }
                Ok(())
            };
            check_range(&c.credits, "connection.credits", 31)?;
            check_range(&c.local_ack_timeout, "connection.local_ack_timeout", 31)?;
            check_range(&c.rnr_timer, "connection.rnr_timer", 31)?;
            check_range(&c.retry_cnt, "connection.retry_cnt", 7)?;
            let local_ack_timeout = opt(c.local_ack_timeout.as_ref(), 14);
            if let Some(s) = c
                .local_ack_timeout
                .as_ref()
                .filter(|_| local_ack_timeout == 0)
            {
                return Err(ctx.err(
                    s.span(),
                    "connection.local_ack_timeout",
                    "0 (no timer) is not modelled: a lost tail would never recover; use 1..=31",
                ));
            }
            let window = opt(c.window.as_ref(), 128);
            if let Some(w) = c
                .window
                .as_ref()
                .filter(|_| !(1..=0x0040_0000).contains(&window))
            {
                return Err(ctx.err(w.span(), "connection.window", "must be 1..=4194304"));
            }
            let ack_req_every = opt(c.ack_req_every.as_ref(), 64.min(window));
            if let Some(a) = c.ack_req_every.as_ref() {
                if transport == TransportKind::Rc && !(1..=window).contains(&ack_req_every) {
                    return Err(ctx.err(
                        a.span(),
                        "connection.ack_req_every",
                        format!("must be 1..={window} (the window), or a long message stalls until the timeout"),
                    ));
                }
            }
            let load = opt(c.load.as_ref(), 1.0);
            if let Some(l) = c.load.as_ref().filter(|_| !(load > 0.0 && load <= 1.0)) {
                return Err(ctx.err(l.span(), "connection.load", "must be in (0, 1]"));
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let load_ppm = ((load * 1e6).round() as u32).max(1);
            let cnp_interval_ns = opt(c.cnp_interval_ns.as_ref(), 50_000);
            if let Some(s) = c.qkey.as_ref().filter(|_| transport != TransportKind::Ud) {
                return Err(ctx.err(
                    s.span(),
                    "connection.qkey",
                    "only UD connections have a Q_Key",
                ));
            }
            #[allow(clippy::cast_possible_truncation)]
            let default_sport = 49152 + (ci as u16 & 0x3FFF);
            conns.push(Connection {
                name,
                transport,
                dc,
                requester,
                responder,
                requester_qpn: c.requester_qpn.as_ref().map_or(0, |q| *q.get_ref()),
                responder_qpn: c.responder_qpn.as_ref().map_or(0, |q| *q.get_ref()),
                tcp_port: opt(c.tcp_port.as_ref(), 7471),
                #[allow(clippy::cast_possible_truncation)] // checked ≤ 2^24 - 1
                start_psn: start_psn as u32,
                pmtu,
                udp_sport: opt(c.udp_sport.as_ref(), default_sport),
                pkey: opt(c.pkey.as_ref(), 0xFFFF),
                qkey: opt(c.qkey.as_ref(), 0x1111_1111),
                ack_every: opt(c.ack_every.as_ref(), 0),
                ack_req_every,
                credits: opt(c.credits.as_ref(), 31),
                local_ack_timeout,
                rnr_timer: opt(c.rnr_timer.as_ref(), 1),
                retry_cnt: opt(c.retry_cnt.as_ref(), 7),
                window,
                load_ppm,
                start_ns: opt(c.start_ns.as_ref(), 0),
                cnp_interval_ns,
                dcqcn: opt(c.dcqcn.as_ref(), true),
            });
        }
        let conn_by_name: std::collections::HashMap<&str, usize> = conns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_str(), i))
            .collect();
        let conn_idx = |s: &S<String>, key: &str| -> Result<usize, ScenarioError> {
            conn_by_name
                .get(s.get_ref().as_str())
                .copied()
                .ok_or_else(|| {
                    ctx.err(
                        s.span(),
                        key,
                        format!("unknown connection {:?}", s.get_ref()),
                    )
                })
        };

        // traffic
        let mut traffic = Vec::with_capacity(raw.traffic.len());
        for t in &raw.traffic {
            let span = t.span();
            let t = t.get_ref();
            let connection = conn_idx(&t.connection, "traffic.connection")?;
            let conn = &conns[connection];
            let op = match t.op.get_ref().to_ascii_lowercase().as_str() {
                "send" => OpKind::Send,
                "write" => OpKind::Write,
                "read" => OpKind::Read,
                "cmp_swap" | "compare_swap" => OpKind::CmpSwap,
                "fetch_add" => OpKind::FetchAdd,
                other => {
                    return Err(ctx.err(
                        t.op.span(),
                        "traffic.op",
                        format!(
                            "unknown operation {other:?} (send, write, read, cmp_swap, fetch_add)"
                        ),
                    ));
                }
            };
            let allowed = match conn.transport {
                TransportKind::Rc => true,
                TransportKind::Uc => matches!(op, OpKind::Send | OpKind::Write),
                TransportKind::Ud => op == OpKind::Send,
                TransportKind::TcpBth => matches!(op, OpKind::Send | OpKind::Write),
            };
            if !allowed {
                return Err(ctx.err(
                    t.op.span(),
                    "traffic.op",
                    format!(
                        "{:?} is not available on a {:?} connection",
                        op, conn.transport
                    ),
                ));
            }
            let immediate = opt(t.immediate.as_ref(), false);
            let invalidate = opt(t.invalidate.as_ref(), false);
            if let Some(i) = t.invalidate.as_ref().filter(|_| {
                invalidate
                    && (op != OpKind::Send
                        || conn.transport != TransportKind::Rc
                        || conn.dc
                        || immediate)
            }) {
                return Err(ctx.err(
                    i.span(),
                    "traffic.invalidate",
                    "only RC SENDs without immediate can carry an invalidate",
                ));
            }
            if let Some(i) = t
                .immediate
                .as_ref()
                .filter(|_| immediate && !matches!(op, OpKind::Send | OpKind::Write))
            {
                return Err(ctx.err(
                    i.span(),
                    "traffic.immediate",
                    "only SEND and WRITE carry immediate data",
                ));
            }
            let size = match (&t.size, &t.size_min, &t.size_max, &t.sizes) {
                (Some(s), None, None, None) => SizeDist::Fixed(*s.get_ref()),
                (None, Some(a), Some(b), None) => {
                    if a.get_ref() > b.get_ref() {
                        return Err(ctx.err(b.span(), "traffic.size_max", "smaller than size_min"));
                    }
                    SizeDist::Uniform {
                        min: *a.get_ref(),
                        max: *b.get_ref(),
                    }
                }
                (None, None, None, Some(v)) => {
                    if v.get_ref().is_empty() {
                        return Err(ctx.err(v.span(), "traffic.sizes", "empty list"));
                    }
                    SizeDist::Choice(v.get_ref().clone())
                }
                (None, None, None, None) if matches!(op, OpKind::CmpSwap | OpKind::FetchAdd) => {
                    SizeDist::Fixed(8)
                }
                _ => {
                    return Err(ctx.err(
                        span,
                        "traffic.size",
                        "give exactly one of size, size_min + size_max, or sizes",
                    ));
                }
            };
            let max_size = match &size {
                SizeDist::Fixed(s) => *s,
                SizeDist::Uniform { max, .. } => *max,
                SizeDist::Choice(v) => v.iter().copied().max().unwrap_or(0),
            };
            let size_span = t
                .size
                .as_ref()
                .map(Spanned::span)
                .or_else(|| t.size_max.as_ref().map(Spanned::span))
                .or_else(|| t.sizes.as_ref().map(Spanned::span))
                .unwrap_or(span.clone());
            let limit = match (conn.transport, op) {
                (TransportKind::Ud, _) => conn.pmtu,
                (_, OpKind::CmpSwap | OpKind::FetchAdd) => 8,
                _ => 1 << 30,
            };
            if max_size > limit {
                return Err(ctx.err(
                    size_span,
                    "traffic.size",
                    format!(
                        "message size {max_size} exceeds {limit} for this connection and operation"
                    ),
                ));
            }
            if matches!(op, OpKind::CmpSwap | OpKind::FetchAdd) && max_size != 8 {
                return Err(ctx.err(size_span, "traffic.size", "atomics are 8 bytes"));
            }
            traffic.push(Traffic {
                connection,
                op,
                immediate,
                invalidate,
                size,
                messages: *t.messages.get_ref(),
            });
        }

        // faults
        let mut faults = Vec::with_capacity(raw.fault.len());
        for f in &raw.fault {
            let span = f.span();
            let f = f.get_ref();
            let kind = match f.kind.get_ref().as_str() {
                "drop" => FaultKind::Drop,
                "duplicate" => FaultKind::Duplicate,
                "reorder" => FaultKind::Reorder {
                    delay_ns: *req(&ctx, &f.delay_ns, &f.kind, "fault.delay_ns")?.get_ref(),
                },
                "corrupt_icrc" => FaultKind::CorruptIcrc,
                "ecn_ce" => FaultKind::EcnCe,
                "truncate" => {
                    let s = req(&ctx, &f.snaplen, &f.kind, "fault.snaplen")?;
                    if *s.get_ref() < 128 {
                        return Err(ctx.err(
                            s.span(),
                            "fault.snaplen",
                            "must be at least 128 so that every header stays captured",
                        ));
                    }
                    FaultKind::Truncate {
                        snaplen: *s.get_ref(),
                    }
                }
                "rnr" => FaultKind::Rnr,
                "capture_drop" => FaultKind::CaptureDrop,
                "wrong_resend" => FaultKind::WrongResend {
                    offset: positive(&ctx, f.offset.as_ref(), 1, "fault.offset")?,
                },
                "double_nak" => FaultKind::DoubleNak,
                "ack_regression" => FaultKind::AckRegression {
                    back: positive(&ctx, f.back.as_ref(), 1, "fault.back")?,
                },
                "msn_regression" => FaultKind::MsnRegression,
                "read_wrong_restart" => FaultKind::ReadWrongRestart,
                "fatal_nak" => FaultKind::FatalNak,
                "ignore_fatal_nak" => FaultKind::IgnoreFatalNak,
                other => {
                    return Err(ctx.err(
                        f.kind.span(),
                        "fault.kind",
                        format!(
                            "unknown fault {other:?} (drop, duplicate, reorder, corrupt_icrc, ecn_ce, truncate, rnr, capture_drop; NIC knobs: wrong_resend, double_nak, ack_regression, msn_regression, read_wrong_restart, fatal_nak, ignore_fatal_nak)"
                        ),
                    ));
                }
            };
            if let Some(o) = f
                .offset
                .as_ref()
                .filter(|_| !matches!(kind, FaultKind::WrongResend { .. }))
            {
                return Err(ctx.err(
                    o.span(),
                    "fault.offset",
                    "only a wrong_resend knob has an offset",
                ));
            }
            if let Some(b) = f
                .back
                .as_ref()
                .filter(|_| !matches!(kind, FaultKind::AckRegression { .. }))
            {
                return Err(ctx.err(
                    b.span(),
                    "fault.back",
                    "only an ack_regression knob goes back",
                ));
            }
            let direction = match &f.direction {
                None => Direction::Request,
                Some(d) => {
                    if !matches!(kind, FaultKind::Drop | FaultKind::CaptureDrop) {
                        return Err(ctx.err(
                            d.span(),
                            "fault.direction",
                            "only drop and capture_drop faults have a direction",
                        ));
                    }
                    match d.get_ref().as_str() {
                        "request" => Direction::Request,
                        "response" => Direction::Response,
                        other => {
                            return Err(ctx.err(
                                d.span(),
                                "fault.direction",
                                format!("unknown direction {other:?} (request, response)"),
                            ));
                        }
                    }
                }
            };
            if let Some(d) = f
                .delay_ns
                .as_ref()
                .filter(|_| !matches!(kind, FaultKind::Reorder { .. }))
            {
                return Err(ctx.err(
                    d.span(),
                    "fault.delay_ns",
                    "only a reorder fault has a delay",
                ));
            }
            if let Some(d) = f
                .snaplen
                .as_ref()
                .filter(|_| !matches!(kind, FaultKind::Truncate { .. }))
            {
                return Err(ctx.err(
                    d.span(),
                    "fault.snaplen",
                    "only a truncate fault has a snaplen",
                ));
            }
            let connection = match &f.connection {
                None => None,
                Some(c) => Some(conn_idx(c, "fault.connection")?),
            };
            let psn = match &f.psn {
                None => None,
                Some(p) => {
                    if *p.get_ref() > PSN_MAX {
                        return Err(ctx.err(
                            p.span(),
                            "fault.psn",
                            format!("PSN {} out of range 0..=16777215 (24 bits)", p.get_ref()),
                        ));
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    Some(*p.get_ref() as u32)
                }
            };
            let every = match &f.every {
                None => None,
                Some(e) if *e.get_ref() == 0 => {
                    return Err(ctx.err(e.span(), "fault.every", "must be at least 1"));
                }
                Some(e) => Some(*e.get_ref()),
            };
            let probability = match &f.probability {
                None => None,
                Some(p) if !(0.0..=1.0).contains(p.get_ref()) => {
                    return Err(ctx.err(p.span(), "fault.probability", "must be in [0, 1]"));
                }
                Some(p) => Some(*p.get_ref()),
            };
            let from_ns = opt(f.from_ns.as_ref(), 0);
            let until_ns = opt(f.until_ns.as_ref(), u64::MAX);
            if !kind.is_knob()
                && psn.is_none()
                && every.is_none()
                && probability.is_none()
                && f.from_ns.is_none()
            {
                return Err(ctx.err(
                    span,
                    "fault",
                    "place the fault with at least one of psn, every, probability, from_ns",
                ));
            }
            if let Some(u) = f.until_ns.as_ref().filter(|_| until_ns <= from_ns) {
                return Err(ctx.err(u.span(), "fault.until_ns", "must be after from_ns"));
            }
            faults.push(Fault {
                kind,
                select: Selector {
                    connection,
                    psn,
                    every,
                    probability,
                    from_ns,
                    until_ns,
                    count: opt(f.count.as_ref(), u64::MAX),
                },
                direction,
            });
        }

        // pfc
        let mut pfc = Vec::with_capacity(raw.pfc.len());
        for p in &raw.pfc {
            let p = p.get_ref();
            let host = host_idx(&p.host, "pfc.host")?;
            if *p.priority.get_ref() > 7 {
                return Err(ctx.err(p.priority.span(), "pfc.priority", "must be 0..=7"));
            }
            let quanta = opt(p.quanta.as_ref(), 65535);
            if let Some(q) = p.quanta.as_ref().filter(|_| quanta == 0) {
                return Err(ctx.err(q.span(), "pfc.quanta", "must be at least 1 (0 is a resume)"));
            }
            let pause_ns = rocescope_dissectors::mac_control::quanta_to_ns(quanta, link_bps);
            let refresh_ns = opt(p.refresh_ns.as_ref(), (pause_ns / 2).max(1));
            if let Some(r) = p.refresh_ns.as_ref().filter(|_| refresh_ns == 0) {
                return Err(ctx.err(r.span(), "pfc.refresh_ns", "must be at least 1"));
            }
            let duration_ns = *p.duration_ns.get_ref();
            if duration_ns / refresh_ns > 1_000_000 {
                return Err(ctx.err(
                    p.duration_ns.span(),
                    "pfc.duration_ns",
                    "more than a million PFC frames: raise refresh_ns",
                ));
            }
            pfc.push(PfcSpec {
                host,
                priority: *p.priority.get_ref(),
                start_ns: *p.start_ns.get_ref(),
                duration_ns,
                quanta,
                refresh_ns,
                resume: opt(p.resume.as_ref(), true),
            });
        }

        if ib {
            if let Some(f) = faults.iter().find(|f| f.kind == FaultKind::EcnCe) {
                let _ = f;
                return Err(ctx.err(
                    raw.link.as_ref().map_or(0..0, Spanned::span),
                    "fault.kind",
                    "ecn_ce needs IP (ECN bits): not on an InfiniBand link",
                ));
            }
            if let Some(p) = raw.pfc.first() {
                return Err(ctx.err(
                    p.span(),
                    "pfc",
                    "PFC is Ethernet's: not on an InfiniBand link",
                ));
            }
            if let Some(c) = conns.iter().find(|c| c.transport == TransportKind::TcpBth) {
                return Err(ctx.err(
                    raw.link.as_ref().map_or(0..0, Spanned::span),
                    "connection.transport",
                    format!(
                        "connection {:?}: tcp_bth runs over TCP/IP, not on an InfiniBand link",
                        c.name
                    ),
                ));
            }
        }
        if let Some(c) = conns
            .iter()
            .find(|c| c.transport == TransportKind::TcpBth)
            .filter(|_| encapsulation.is_some())
        {
            return Err(ctx.err(
                raw.capture.as_ref().map_or(0..0, Spanned::span),
                "capture.encapsulation",
                format!("connection {:?}: tcp_bth traffic is not mirrored (encapsulation is for RoCE and PFC frames)", c.name),
            ));
        }
        Ok(Scenario {
            origin: origin.to_owned(),
            link_kind,
            encapsulation,
            link_bps,
            delay_ns,
            start_ns,
            stop_ns,
            max_frames,
            capture,
            tap_clock_offset_ns,
            tap_jitter_ns,
            snaplen,
            capture_icrc,
            hosts,
            connections: conns,
            traffic,
            faults,
            pfc,
        })
    }
}
