//! The JSON report of interfaces.md §6.6, keys exactly as written there.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use super::AnalyzeConfig;
use super::pretty::{self, At};
use crate::replay::event::Addr;
use crate::replay::hosts::Hosts;
use crate::replay::psn::Timings;
use crate::replay::sketch::Summary;
use crate::replay::{Finding, Flow, Replay};

/// The report of one capture (serialized as §6.6 has it).
#[derive(Serialize)]
pub struct Report<'a> {
    version: u32,
    capture: CaptureJson,
    flows: Flows<'a>,
    pfc: Vec<PfcJson>,
    tcp_bth: &'a [crate::replay::tcp_bth::TcpBthRow],
    events: Events<'a>,
}

/// The report's `capture` object.
#[derive(Serialize)]
pub struct CaptureJson {
    files: Vec<String>,
    frames: u64,
    roce_frames: u64,
    rocev1_frames: u64,
    ib_frames: u64,
    pfc_frames: u64,
    icrc_unreliable: bool,
    kernel_drops: Option<u64>,
    pause_frames: u64,
    tcp_bth_frames: u64,
    first_time_ns: Option<u64>,
    last_time_ns: Option<u64>,
    truncated_frames: u64,
    malformed_frames: u64,
    icrc_errors: u64,
    link_speed_bps: u64,
}

#[derive(Serialize)]
pub struct NaksJson {
    pub psn_seq_err: u64,
    pub rnr: u64,
    pub invalid_request: u64,
    pub remote_access: u64,
    pub remote_op: u64,
    pub invalid_rd: u64,
}

/// A duration summary: `{"samples": N, "p50": T, "p99": T, "max": T}`, nulls without samples.
#[derive(Serialize, PartialEq, Eq)]
pub struct LatencyJson {
    pub samples: u64,
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    pub max: Option<u64>,
}

impl LatencyJson {
    /// No samples.
    pub const EMPTY: LatencyJson = LatencyJson {
        samples: 0,
        p50: None,
        p99: None,
        max: None,
    };

    #[must_use]
    pub fn new(s: Summary) -> Self {
        let some = |v: u64| (s.samples > 0).then_some(v);
        LatencyJson {
            samples: s.samples,
            p50: some(s.p50),
            p99: some(s.p99),
            max: some(s.max),
        }
    }
}

/// §6.7's conformance findings of one flow.
#[derive(Serialize)]
pub struct ConformanceJson {
    pub gbn_wrong_start: u64,
    pub repeated_nak: u64,
    pub ack_regression: u64,
    pub msn_regression: u64,
    pub read_wrong_restart: u64,
    pub response_after_fatal_nak: u64,
}

/// An address as the reports write it (its `Display`), held without allocating: a report
/// makes two per flow, for hundreds of thousands of flows.
#[derive(Clone, Copy)]
pub struct AddrText {
    /// The longest is an IPv6 address with an IPv4 tail (45 bytes).
    buf: [u8; 48],
    len: u8,
}

impl AddrText {
    #[must_use]
    pub fn new(a: &Addr) -> Self {
        let mut t = AddrText {
            buf: [0; 48],
            len: 0,
        };
        match a {
            // the common case, written here: `Display` goes through the formatting machinery
            Addr::Ip(IpAddr::V4(v4)) => {
                // written in place: a copy of text just built would stall (text::mac_into)
                let text = t.buf.first_chunk_mut::<16>();
                let len = text.map_or(0, |text| crate::text::ipv4_into(text, v4.octets()));
                // Lossless: at most 15.
                t.len = len as u8;
            }
            _ => {
                // cannot fail: every address fits (see `buf`)
                let _ = write!(t, "{a}");
            }
        }
        t
    }

    /// The text's bytes (ASCII).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or_default()
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        // only ASCII is ever written
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl std::fmt::Write for AddrText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = usize::from(self.len) + s.len();
        let slot = self
            .buf
            .get_mut(usize::from(self.len)..end)
            .ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = u8::try_from(end).map_err(|_| std::fmt::Error)?;
        Ok(())
    }
}

impl std::ops::Deref for AddrText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Serialize for AddrText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Hosts' address texts, each made once for the flows that name it rather than twice per
/// flow: a 400,000-flow report between a few hosts spent a tenth of its JSON time making the
/// same few texts. A few recent hosts are kept, by id, so that the memory stays the same
/// whatever the number of hosts.
pub struct AddrTexts<'h> {
    hosts: &'h Hosts,
    /// `(host id, its text)` at `id % ADDR_TEXTS`; `u32::MAX` in a slot never filled.
    recent: [(u32, AddrText); ADDR_TEXTS],
}

/// Host texts an [`AddrTexts`] keeps.
const ADDR_TEXTS: usize = 64;

impl<'h> AddrTexts<'h> {
    #[must_use]
    pub fn new(hosts: &'h Hosts) -> Self {
        let empty = AddrText {
            buf: [0; 48],
            len: 0,
        };
        AddrTexts {
            hosts,
            recent: [(u32::MAX, empty); ADDR_TEXTS],
        }
    }

    /// The text of host `id`'s address.
    pub fn get(&mut self, id: u32) -> AddrText {
        let at = id as usize % ADDR_TEXTS;
        match self.recent.get_mut(at) {
            Some((held, text)) if *held == id && id != u32::MAX => *text,
            Some(slot) => {
                *slot = (id, AddrText::new(&self.hosts.addr(id)));
                slot.1
            }
            None => AddrText::new(&self.hosts.addr(id)),
        }
    }
}

/// One flow in §6.6's keys (also the CSV row).
#[derive(Serialize)]
pub struct FlowJson {
    pub id: u32,
    pub src: AddrText,
    pub dst: AddrText,
    pub destqp: u32,
    pub transport: &'static str,
    pub peer: Option<u32>,
    pub frames: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub first_psn: Option<u32>,
    pub last_psn: Option<u32>,
    pub messages: u64,
    pub psn_gaps: u64,
    pub lost: u64,
    pub unrecovered: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub retransmissions: u64,
    pub implied_timeouts: u64,
    pub acks: u64,
    pub read_responses: u64,
    pub atomic_acks: u64,
    pub naks: NaksJson,
    pub read_requests: u64,
    pub read_response_gaps: u64,
    pub unanswered_reads: u64,
    pub ecn_ce: u64,
    pub cnps: u64,
    pub throttled_by_cnps: u64,
    pub icrc_errors: u64,
    pub not_captured: u64,
    pub ack_latency_ns: LatencyJson,
    pub recovery_ns: LatencyJson,
    pub nak_response_ns: LatencyJson,
    pub nak_generation_ns: LatencyJson,
    pub timeout_wait_ns: LatencyJson,
    pub conformance: ConformanceJson,
}

impl FlowJson {
    #[must_use]
    pub fn new(id: u32, f: &Flow, texts: &mut AddrTexts<'_>) -> Self {
        let c = f.psn().counters();
        let t = f.timings();
        let timing =
            |get: fn(&Timings) -> Summary| LatencyJson::new(t.map(get).unwrap_or_default());
        let k = &f.rare().conformance;
        FlowJson {
            id,
            src: texts.get(f.key.src),
            dst: texts.get(f.key.dst),
            destqp: f.key.dest_qp,
            transport: f.transport_name(),
            peer: f.peer(),
            frames: f.frames,
            bytes: f.bytes,
            payload_bytes: f.payload_bytes,
            first_psn: f.first_psn().map(|p| p.value()),
            last_psn: f.last_psn().map(|p| p.value()),
            messages: f.messages(),
            psn_gaps: c.psn_gaps,
            lost: c.lost,
            unrecovered: c.unrecovered,
            out_of_order: c.out_of_order,
            duplicates: c.duplicates,
            retransmissions: c.retransmissions,
            implied_timeouts: c.implied_timeouts,
            acks: f.acks,
            read_responses: f.rare().read_responses,
            atomic_acks: f.rare().atomic_acks,
            naks: NaksJson {
                psn_seq_err: f.rare().naks.psn_seq_err,
                rnr: f.rare().naks.rnr,
                invalid_request: f.rare().naks.invalid_request,
                remote_access: f.rare().naks.remote_access,
                remote_op: f.rare().naks.remote_op,
                invalid_rd: f.rare().naks.invalid_rd,
            },
            read_requests: c.read_requests,
            read_response_gaps: f.rare().read_response_gaps,
            unanswered_reads: f.rare().unanswered_reads,
            ecn_ce: f.rare().ecn_ce,
            cnps: f.rare().cnps,
            throttled_by_cnps: f.rare().throttled_by_cnps,
            icrc_errors: f.rare().icrc_errors,
            not_captured: c.not_captured,
            ack_latency_ns: LatencyJson::new(f.latency().summary()),
            recovery_ns: timing(|t| t.recovery.summary()),
            nak_response_ns: timing(|t| t.nak_response.summary()),
            nak_generation_ns: timing(|t| t.nak_generation.summary()),
            timeout_wait_ns: timing(|t| t.timeout_wait.summary()),
            conformance: ConformanceJson {
                gbn_wrong_start: k.gbn_wrong_start,
                repeated_nak: k.repeated_nak,
                ack_regression: k.ack_regression,
                msn_regression: k.msn_regression,
                read_wrong_restart: k.read_wrong_restart,
                response_after_fatal_nak: k.response_after_fatal_nak,
            },
        }
    }

    /// The counts from `read_responses` to `not_captured`, in the report's order (the NAK
    /// kinds in their place): what goes wrong, zero in most flows. The JSON writer copies a
    /// quiet run whole; the CSV row writes the same columns.
    #[must_use]
    pub fn trouble_counts(&self) -> [u64; COUNTS] {
        let n = &self.naks;
        [
            self.read_responses,
            self.atomic_acks,
            n.psn_seq_err,
            n.rnr,
            n.invalid_request,
            n.remote_access,
            n.remote_op,
            n.invalid_rd,
            self.read_requests,
            self.read_response_gaps,
            self.unanswered_reads,
            self.ecn_ce,
            self.cnps,
            self.throttled_by_cnps,
            self.icrc_errors,
            self.not_captured,
        ]
    }

    /// The recovery timings, in the report's order (after `ack_latency_ns`).
    #[must_use]
    pub fn timings(&self) -> [&LatencyJson; 4] {
        [
            &self.recovery_ns,
            &self.nak_response_ns,
            &self.nak_generation_ns,
            &self.timeout_wait_ns,
        ]
    }
}

impl ConformanceJson {
    /// The findings, in the report's order.
    #[must_use]
    pub fn counts(&self) -> [u64; CONFORMANCE] {
        [
            self.gbn_wrong_start,
            self.repeated_nak,
            self.ack_regression,
            self.msn_regression,
            self.read_wrong_restart,
            self.response_after_fatal_nak,
        ]
    }
}

/// The flows, serialized one by one (no table of rows is built).
struct Flows<'a>(&'a [Flow], &'a Hosts);

impl Serialize for Flows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut texts = AddrTexts::new(self.1);
        for (id, f) in (0..).zip(self.0) {
            seq.serialize_element(&FlowJson::new(id, f, &mut texts))?;
        }
        seq.end()
    }
}

/// A row of §6.6's `pfc` list.
#[derive(Serialize)]
pub struct PfcJson {
    src_mac: String,
    priority: u8,
    pause_frames: u64,
    resume_frames: u64,
    quanta_total: u64,
    paused_ns: u64,
    storms: u64,
}

/// One of §6.6's `events`.
#[derive(Serialize)]
pub struct EventJson<'a> {
    frame: u64,
    time_ns: u64,
    kind: &'static str,
    flow: Option<u32>,
    psn: Option<u32>,
    detail: &'a str,
}

/// The events, serialized one by one (their detail text is rendered on the fly).
struct Events<'a>(&'a [Finding]);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut detail = String::new();
        for e in self.0 {
            seq.serialize_element(&event_json(e, &mut detail))?;
        }
        seq.end()
    }
}

/// One event, its detail rendered into `detail` (reused from event to event).
fn event_json<'d>(e: &Finding, detail: &'d mut String) -> EventJson<'d> {
    use std::fmt::Write as _;
    detail.clear();
    let _ = write!(detail, "{}", e.detail);
    EventJson {
        frame: e.frame,
        time_ns: e.time_ns,
        kind: e.kind.name(),
        flow: e.flow,
        psn: e.psn.map(|p| p.value()),
        detail,
    }
}

/// `aa:bb:cc:dd:ee:ff`.
#[must_use]
pub fn mac_text(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// The capture object of the report.
/// The report of `replay` (`cfg.captures` name its files), to serialize.
#[must_use]
pub fn report<'a>(cfg: &AnalyzeConfig, replay: &'a Replay) -> Report<'a> {
    Report {
        version: VERSION,
        capture: capture_json(cfg, replay),
        flows: Flows(&replay.flows, &replay.hosts),
        pfc: replay.pfc.iter().map(pfc_json).collect(),
        tcp_bth: &replay.tcp_bth,
        events: Events(&replay.events),
    }
}

/// The report's `capture` object.
#[must_use]
pub fn capture_json(cfg: &AnalyzeConfig, replay: &Replay) -> CaptureJson {
    let c = &replay.capture;
    CaptureJson {
        files: cfg
            .captures
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        frames: c.frames,
        roce_frames: c.roce_frames,
        rocev1_frames: c.rocev1_frames,
        ib_frames: c.ib_frames,
        pfc_frames: c.pfc_frames,
        icrc_unreliable: c.icrc_unreliable,
        kernel_drops: c.kernel_drops,
        pause_frames: c.pause_frames,
        tcp_bth_frames: c.tcp_bth_frames,
        first_time_ns: c.first_time_ns,
        last_time_ns: c.last_time_ns,
        truncated_frames: c.truncated_frames,
        malformed_frames: c.malformed_frames,
        icrc_errors: c.icrc_errors,
        link_speed_bps: cfg.link_bps,
    }
}

fn pfc_json(r: &crate::replay::pfc::PfcRow) -> PfcJson {
    PfcJson {
        src_mac: mac_text(r.src_mac),
        priority: r.priority,
        pause_frames: r.pause_frames,
        resume_frames: r.resume_frames,
        quanta_total: r.quanta_total,
        paused_ns: r.paused_ns,
        storms: r.storms,
    }
}

/// Write the report (pretty-printed, one trailing newline): the same bytes as
/// `serde_json::to_writer_pretty` of [`report`], with the flows and the events written
/// directly ([`super::pretty`]) and handed to `out` in blocks as they are made.
///
/// # Errors
/// Output errors.
pub fn write(cfg: &AnalyzeConfig, replay: &Replay, out: &mut dyn Write) -> io::Result<()> {
    write_as::<false>(cfg, replay, out, 0)
}

/// Write the report as the value at nesting `depth` of a larger pretty document (`analyze
/// --tap`'s report of each tap): the bytes `serde_json::to_writer_pretty` writes for it
/// there, without a newline after it.
///
/// # Errors
/// Output errors.
pub fn write_nested(
    cfg: &AnalyzeConfig,
    replay: &Replay,
    out: &mut dyn Write,
    depth: usize,
) -> io::Result<()> {
    write_as::<false>(cfg, replay, out, depth)
}

/// Write the report on one line, then a newline (`--each`'s line per capture): the same bytes
/// as `serde_json::to_writer` of [`report`] and `\n`, written as [`write`] writes its own
/// (through serde, a 400,000-flow line took 0.9 s on the writing thread, twice the replay).
///
/// # Errors
/// Output errors.
pub fn write_line(cfg: &AnalyzeConfig, replay: &Replay, out: &mut dyn Write) -> io::Result<()> {
    write_as::<true>(cfg, replay, out, 0)
}

/// [`write`] (`LINE` false) or [`write_line`], or [`write_nested`] at `depth` (pretty only).
fn write_as<const LINE: bool>(
    cfg: &AnalyzeConfig,
    replay: &Replay,
    out: &mut dyn Write,
    depth: usize,
) -> io::Result<()> {
    // where the report's braces sit, and its members
    let (report, members) = if LINE {
        (At::Line, At::Line)
    } else {
        (At::Depth(depth), At::Depth(depth + 1))
    };
    let mut buf = Vec::with_capacity(BLOCK + (4 << 10));
    buf.push(b'{');
    pretty::key(&mut buf, false, members, "version");
    crate::decimal::uint(&mut buf, VERSION.into());
    pretty::key(&mut buf, true, members, "capture");
    pretty::serde_at(&mut buf, members, &capture_json(cfg, replay));
    flows::<LINE>(&mut buf, out, members, &replay.flows, &replay.hosts)?;
    let pfc = replay.pfc.iter().map(pfc_json);
    list(&mut buf, out, members, "pfc", pfc, |buf, at, r| {
        pretty::serde_at(buf, at, &r);
    })?;
    list(
        &mut buf,
        out,
        members,
        "tcp_bth",
        &replay.tcp_bth,
        |buf, at, r| {
            pretty::serde_at(buf, at, r);
        },
    )?;
    let mut detail = String::new();
    list(
        &mut buf,
        out,
        members,
        "events",
        &replay.events,
        |buf, at, e| {
            event(buf, at, &event_json(e, &mut detail));
        },
    )?;
    pretty::separate(&mut buf, false, report);
    buf.push(b'}');
    // a document of its own ends its line; a nested report is followed by its parent's text
    if depth == 0 {
        buf.push(b'\n');
    }
    out.write_all(&buf)?;
    out.flush()
}

/// What [`write`] holds before handing it to its output.
const BLOCK: usize = 64 << 10;
/// Flows formatted at a time by one of [`flows`]' threads (about 1.7 KiB each): a chunk
/// (over 300 KiB) is larger than the standard output's buffer (256 KiB), so that it goes to
/// the output as it is rather than copied into that buffer first on the writing thread.
const FLOW_CHUNK: usize = 256;

/// `,` and the `flows` list. Hundreds of thousands of flows make most of a report's bytes
/// (1.7 KiB each): they are formatted a chunk at a time on up to four threads, this one
/// included while the output keeps up, and written in order ([`super::ordered`]; the replay
/// is over: the cores are free, or under `--each` shared with the next captures' replays).
fn flows<const LINE: bool>(
    buf: &mut Vec<u8>,
    out: &mut dyn Write,
    at: At,
    flows: &[Flow],
    hosts: &Hosts,
) -> io::Result<()> {
    pretty::key(buf, true, at, "flows");
    if flows.is_empty() {
        buf.extend_from_slice(b"[]");
        return Ok(());
    }
    buf.push(b'[');
    out.write_all(buf)?;
    buf.clear();
    // a flow's line starts are constants for a report at nesting 0 (`flow`): in a report
    // nested deeper, each formatting thread indents its chunks further
    let deeper = match at {
        At::Depth(depth) if depth > 1 => vec![b' '; 2 * (depth - 1)],
        _ => Vec::new(),
    };
    let format = |chunk: usize, into: &mut Vec<u8>| {
        if deeper.is_empty() {
            format_flows::<LINE>(chunk, into, flows, hosts);
        } else {
            UNINDENTED.with_borrow_mut(|plain| {
                plain.clear();
                format_flows::<LINE>(chunk, plain, flows, hosts);
                pretty::indent_into(into, plain, &deeper);
            });
        }
    };
    let chunks = flows.len().div_ceil(FLOW_CHUNK);
    // a few chunks are not worth a thread
    let helpers = if chunks < 8 {
        0
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get().min(4))
            .saturating_sub(1)
    };
    super::ordered::write_chunks(chunks, helpers, &format, out)?;
    pretty::separate(buf, false, at);
    buf.push(b']');
    Ok(())
}

std::thread_local! {
    /// A formatting thread's chunk of flows before it is indented further ([`write_nested`]).
    static UNINDENTED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Chunk `chunk` of the flows onto `into`, as [`pretty::Array`] lays out items at depth 1.
fn format_flows<const LINE: bool>(chunk: usize, into: &mut Vec<u8>, flows: &[Flow], hosts: &Hosts) {
    let Some(part) = flows.chunks(FLOW_CHUNK).nth(chunk) else {
        return;
    };
    let start = chunk * FLOW_CHUNK;
    let mut texts = AddrTexts::new(hosts);
    for (i, f) in part.iter().enumerate() {
        into.extend_from_slice(match (LINE, start + i == 0) {
            (true, true) => b"",
            (true, false) => b",",
            (false, true) => b"\n    ",
            (false, false) => b",\n    ",
        });
        let id = u32::try_from(start + i).unwrap_or(u32::MAX);
        flow::<LINE>(into, &FlowJson::new(id, f, &mut texts));
    }
}

/// `,` and one of the report's lists (a member at `at`), each item written by `each` where it
/// sits; `buf` goes to `out` whenever it holds a block.
fn list<T>(
    buf: &mut Vec<u8>,
    out: &mut dyn Write,
    at: At,
    name: &str,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut Vec<u8>, At, T),
) -> io::Result<()> {
    pretty::key(buf, true, at, name);
    let mut array = pretty::Array::begin(buf, at);
    for item in items {
        let at = array.item(buf);
        each(buf, at, item);
        if buf.len() >= BLOCK {
            out.write_all(buf)?;
            buf.clear();
        }
    }
    array.end(buf);
    Ok(())
}

/// The start of a flow's member line: `,`, a newline, the indentation of a flow's members
/// (a flow is an item of the report's `flows` list, at depth 2), the key. `{ key` starts the
/// object with its first member instead. On one line (`LINE`, a constant where it is used):
/// `,"key":`.
macro_rules! member {
    (LINE, $key:literal) => {
        line_start!(LINE, ",", "      ", $key)
    };
    (LINE, { $key:literal }) => {
        line_start!(LINE, "{", "      ", $key)
    };
}

/// [`member!`] for the members of an object inside a flow (`naks`, the latency summaries).
macro_rules! inner {
    (LINE, $key:literal) => {
        line_start!(LINE, ",", "        ", $key)
    };
    (LINE, { $key:literal }) => {
        line_start!(LINE, "{", "        ", $key)
    };
}

/// `open` (`,` or `{`), then a newline, `indent` and `"key": `; on one line `open"key":`.
macro_rules! line_start {
    (LINE, $open:literal, $indent:literal, $key:literal) => {
        if LINE {
            concat!($open, "\"", $key, "\":").as_bytes()
        } else {
            concat!($open, "\n", $indent, "\"", $key, "\": ").as_bytes()
        }
    };
}

/// The end of an object inside a flow, and of the flow.
fn inner_end<const LINE: bool>() -> &'static [u8] {
    if LINE { b"}" } else { b"\n      }" }
}

fn flow_end<const LINE: bool>() -> &'static [u8] {
    if LINE { b"}" } else { b"\n    }" }
}

/// A member's line start, then its number.
#[inline(always)]
fn num(buf: &mut Vec<u8>, start: &[u8], v: impl Into<u64>) {
    buf.extend_from_slice(start);
    crate::decimal::uint(buf, v.into());
}

/// A member's line start, then `text` in quotes: text that needs no escapes (an address, a
/// transport's name), so unlike [`pretty::string`] it is not looked through first.
#[inline(always)]
fn quoted(buf: &mut Vec<u8>, start: &[u8], text: &[u8]) {
    debug_assert!(text.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\'));
    buf.extend_from_slice(start);
    buf.push(b'"');
    buf.extend_from_slice(text);
    buf.push(b'"');
}

/// A member's line start, then its number or `null`.
#[inline(always)]
fn opt(buf: &mut Vec<u8>, start: &[u8], v: Option<impl Into<u64>>) {
    buf.extend_from_slice(start);
    match v {
        Some(v) => crate::decimal::uint(buf, v.into()),
        None => buf.extend_from_slice(b"null"),
    }
}

/// One flow, as serde lays out [`FlowJson`] at depth 2 (where the `flows` list puts it).
///
/// Every line's start is one constant: a 400,000-flow report writes 24 million lines, and
/// building each start from its parts (comma, indentation, quotes, key) took more time than
/// its number. Two runs of members are zero (or empty) in most flows of a large capture,
/// the counts of things that go wrong and the recovery timings: a quiet run is copied whole,
/// as its writer made it once ([`Quiet`]).
fn flow<const LINE: bool>(buf: &mut Vec<u8>, j: &FlowJson) {
    num(buf, member!(LINE, { "id" }), j.id);
    quoted(buf, member!(LINE, "src"), j.src.as_bytes());
    quoted(buf, member!(LINE, "dst"), j.dst.as_bytes());
    num(buf, member!(LINE, "destqp"), j.destqp);
    quoted(buf, member!(LINE, "transport"), j.transport.as_bytes());
    opt(buf, member!(LINE, "peer"), j.peer);
    num(buf, member!(LINE, "frames"), j.frames);
    num(buf, member!(LINE, "bytes"), j.bytes);
    num(buf, member!(LINE, "payload_bytes"), j.payload_bytes);
    opt(buf, member!(LINE, "first_psn"), j.first_psn);
    opt(buf, member!(LINE, "last_psn"), j.last_psn);
    num(buf, member!(LINE, "messages"), j.messages);
    num(buf, member!(LINE, "psn_gaps"), j.psn_gaps);
    num(buf, member!(LINE, "lost"), j.lost);
    num(buf, member!(LINE, "unrecovered"), j.unrecovered);
    num(buf, member!(LINE, "out_of_order"), j.out_of_order);
    num(buf, member!(LINE, "duplicates"), j.duplicates);
    num(buf, member!(LINE, "retransmissions"), j.retransmissions);
    num(buf, member!(LINE, "implied_timeouts"), j.implied_timeouts);
    num(buf, member!(LINE, "acks"), j.acks);
    let counts = j.trouble_counts();
    let quiet = Quiet::get(LINE);
    if all_zero(&counts) {
        buf.extend_from_slice(&quiet.counts);
    } else {
        flow_counts::<LINE>(buf, &counts);
    }
    latency::<LINE>(buf, member!(LINE, "ack_latency_ns"), &j.ack_latency_ns);
    let timings = j.timings();
    let conformance = j.conformance.counts();
    if timings.iter().all(|t| **t == LatencyJson::EMPTY) && all_zero(&conformance) {
        buf.extend_from_slice(&quiet.timings);
    } else {
        flow_timings::<LINE>(buf, timings, &conformance);
    }
}

/// Whether every count is 0: or-ed together, where `== [0; N]` called `memcmp` (a tenth of
/// a 400,000-flow report's JSON time).
#[inline]
fn all_zero(counts: &[u64]) -> bool {
    counts.iter().fold(0, |any, &c| any | c) == 0
}

/// The members [`flow_counts`] writes ([`FlowJson::trouble_counts`]).
const COUNTS: usize = 16;
/// The members of a flow's `conformance`.
const CONFORMANCE: usize = 6;

/// The two runs of a flow's members that are most often quiet, as their writers make them
/// when they are: made once, on first use.
struct Quiet {
    counts: Vec<u8>,
    timings: Vec<u8>,
}

impl Quiet {
    /// In the pretty layout, or on one line (`line`).
    fn get(line: bool) -> &'static Quiet {
        static QUIET: std::sync::OnceLock<(Quiet, Quiet)> = std::sync::OnceLock::new();
        let (pretty, line_of) = QUIET.get_or_init(|| (Quiet::new::<false>(), Quiet::new::<true>()));
        if line { line_of } else { pretty }
    }

    fn new<const LINE: bool>() -> Quiet {
        let mut counts = Vec::new();
        flow_counts::<LINE>(&mut counts, &[0; COUNTS]);
        let mut timings = Vec::new();
        let empty = &LatencyJson::EMPTY;
        flow_timings::<LINE>(&mut timings, [empty; 4], &[0; CONFORMANCE]);
        Quiet { counts, timings }
    }
}

/// A flow's members from `read_responses` to `not_captured`, in [`flow`]'s order.
fn flow_counts<const LINE: bool>(buf: &mut Vec<u8>, c: &[u64; COUNTS]) {
    let [
        read_responses,
        atomic_acks,
        psn_seq_err,
        rnr,
        invalid_request,
        remote_access,
        remote_op,
        invalid_rd,
        read_requests,
        read_response_gaps,
        unanswered_reads,
        ecn_ce,
        cnps,
        throttled_by_cnps,
        icrc_errors,
        not_captured,
    ] = *c;
    num(buf, member!(LINE, "read_responses"), read_responses);
    num(buf, member!(LINE, "atomic_acks"), atomic_acks);
    buf.extend_from_slice(member!(LINE, "naks"));
    num(buf, inner!(LINE, { "psn_seq_err" }), psn_seq_err);
    num(buf, inner!(LINE, "rnr"), rnr);
    num(buf, inner!(LINE, "invalid_request"), invalid_request);
    num(buf, inner!(LINE, "remote_access"), remote_access);
    num(buf, inner!(LINE, "remote_op"), remote_op);
    num(buf, inner!(LINE, "invalid_rd"), invalid_rd);
    buf.extend_from_slice(inner_end::<LINE>());
    num(buf, member!(LINE, "read_requests"), read_requests);
    num(buf, member!(LINE, "read_response_gaps"), read_response_gaps);
    num(buf, member!(LINE, "unanswered_reads"), unanswered_reads);
    num(buf, member!(LINE, "ecn_ce"), ecn_ce);
    num(buf, member!(LINE, "cnps"), cnps);
    num(buf, member!(LINE, "throttled_by_cnps"), throttled_by_cnps);
    num(buf, member!(LINE, "icrc_errors"), icrc_errors);
    num(buf, member!(LINE, "not_captured"), not_captured);
}

/// A flow's recovery timings and conformance findings, and the flow's end.
fn flow_timings<const LINE: bool>(buf: &mut Vec<u8>, t: [&LatencyJson; 4], k: &[u64; CONFORMANCE]) {
    let [recovery, nak_response, nak_generation, timeout_wait] = t;
    latency::<LINE>(buf, member!(LINE, "recovery_ns"), recovery);
    latency::<LINE>(buf, member!(LINE, "nak_response_ns"), nak_response);
    latency::<LINE>(buf, member!(LINE, "nak_generation_ns"), nak_generation);
    latency::<LINE>(buf, member!(LINE, "timeout_wait_ns"), timeout_wait);
    let [
        gbn_wrong_start,
        repeated_nak,
        ack_regression,
        msn_regression,
        read_wrong_restart,
        response_after_fatal_nak,
    ] = *k;
    buf.extend_from_slice(member!(LINE, "conformance"));
    num(buf, inner!(LINE, { "gbn_wrong_start" }), gbn_wrong_start);
    num(buf, inner!(LINE, "repeated_nak"), repeated_nak);
    num(buf, inner!(LINE, "ack_regression"), ack_regression);
    num(buf, inner!(LINE, "msn_regression"), msn_regression);
    num(buf, inner!(LINE, "read_wrong_restart"), read_wrong_restart);
    num(
        buf,
        inner!(LINE, "response_after_fatal_nak"),
        response_after_fatal_nak,
    );
    buf.extend_from_slice(inner_end::<LINE>());
    buf.extend_from_slice(flow_end::<LINE>());
}

/// A duration summary inside a flow, `start` its member's line start.
fn latency<const LINE: bool>(buf: &mut Vec<u8>, start: &[u8], l: &LatencyJson) {
    buf.extend_from_slice(start);
    num(buf, inner!(LINE, { "samples" }), l.samples);
    opt(buf, inner!(LINE, "p50"), l.p50);
    opt(buf, inner!(LINE, "p99"), l.p99);
    opt(buf, inner!(LINE, "max"), l.max);
    buf.extend_from_slice(inner_end::<LINE>());
}

/// One event, as serde lays out [`EventJson`].
fn event(buf: &mut Vec<u8>, at: At, e: &EventJson<'_>) {
    let mut o = pretty::Object::begin(buf, at);
    o.num("frame", e.frame);
    o.num("time_ns", e.time_ns);
    o.str("kind", e.kind);
    o.opt("flow", e.flow);
    o.opt("psn", e.psn);
    o.str("detail", e.detail);
    o.end();
}

/// The report's tables, for writers that take them a row at a time (Parquet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// One row: the `capture` object, with the report's `version` ([`VERSION`]).
    Capture,
    Flows,
    Pfc,
    TcpBth,
    Events,
}

/// The report's `version`.
pub const VERSION: u32 = 1;

/// One row of the report, as the JSON report has it (it serializes as that row's object).
pub enum Row<'a> {
    /// The `capture` object (without `version`).
    Capture(&'a CaptureJson),
    Flow(&'a FlowJson),
    Pfc(&'a PfcJson),
    TcpBth(&'a crate::replay::tcp_bth::TcpBthRow),
    Event(&'a EventJson<'a>),
}

impl Row<'_> {
    /// The table the row belongs to.
    #[must_use]
    pub fn section(&self) -> Section {
        match self {
            Row::Capture(_) => Section::Capture,
            Row::Flow(_) => Section::Flows,
            Row::Pfc(_) => Section::Pfc,
            Row::TcpBth(_) => Section::TcpBth,
            Row::Event(_) => Section::Events,
        }
    }
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Row::Capture(c) => c.serialize(s),
            Row::Flow(f) => f.serialize(s),
            Row::Pfc(p) => p.serialize(s),
            Row::TcpBth(t) => t.serialize(s),
            Row::Event(e) => e.serialize(s),
        }
    }
}

/// Every row of the report, section by section, one at a time (no table of rows is built).
///
/// # Errors
/// The first error `row` returns.
pub fn each_row<E>(
    cfg: &AnalyzeConfig,
    replay: &Replay,
    mut row: impl FnMut(Row<'_>) -> Result<(), E>,
) -> Result<(), E> {
    row(Row::Capture(&capture_json(cfg, replay)))?;
    let mut texts = AddrTexts::new(&replay.hosts);
    for (id, f) in (0..).zip(&replay.flows) {
        row(Row::Flow(&FlowJson::new(id, f, &mut texts)))?;
    }
    for r in &replay.pfc {
        row(Row::Pfc(&pfc_json(r)))?;
    }
    for t in &replay.tcp_bth {
        row(Row::TcpBth(t))?;
    }
    let mut detail = String::new();
    for e in &replay.events {
        row(Row::Event(&event_json(e, &mut detail)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// The same text as `Display`, which the reports wrote before, for every octet width and
    /// every kind of address.
    #[test]
    fn addresses_read_as_display_writes_them() {
        let mut addrs: Vec<Addr> = [0u32, 0x0a00_0001, 0x0a64_0963, 0xc0a8_000a, u32::MAX]
            .into_iter()
            .map(|v| Addr::Ip(Ipv4Addr::from(v).into()))
            .collect();
        addrs.extend((0..=255u8).map(|o| Addr::Ip(Ipv4Addr::new(o, 9, 10, 99).into())));
        for v6 in [
            Ipv6Addr::UNSPECIFIED,
            "fe80::202:c9ff:fe00:1".parse().unwrap(),
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap(),
            "::ffff:255.255.255.255".parse().unwrap(),
        ] {
            addrs.push(Addr::Ip(v6.into()));
        }
        addrs.extend([Addr::Lid(0x12), Addr::Lid(u16::MAX)]);
        for a in addrs {
            assert_eq!(AddrText::new(&a).as_str(), a.to_string());
        }
    }

    /// Each host's own text, whatever the order hosts are asked for in: ids that share a
    /// kept slot (64 apart) in turn, one again after others took its slot, and over and over.
    #[test]
    fn address_texts_are_each_hosts_own() {
        let mut hosts = Hosts::default();
        let ids: Vec<u32> = (0..300u32)
            .map(|i| hosts.intern(Addr::Ip(Ipv4Addr::from(0x0a00_0000 + i * 7).into())))
            .collect();
        let mut texts = AddrTexts::new(&hosts);
        let order = ids
            .iter()
            .chain(ids.iter().rev())
            .chain(ids.iter().step_by(64))
            .chain([&0, &64, &0, &128, &64, &299, &0]);
        for &id in order {
            assert_eq!(
                texts.get(id).as_str(),
                hosts.addr(id).to_string(),
                "host {id}"
            );
        }
    }
}
