//! The names a display filter may use, mapped onto the dotted JSON paths of the field tree
//! (`rocescope_dissectors::pretty::visit`). This table only names paths; what a field's value is,
//! and whether a frame has it, always comes from the visitor.

/// What kind of value a field holds (checked against the literal when a filter compiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Uint,
    Bool,
    Mac,
    Ipv4,
    Ipv6,
    Str,
    /// An opcode: a number or a name from protocol.md §2.3.
    Opcode,
    /// A layer (JSON object) with no value of its own: only presence can be tested.
    Layer,
}

/// The JSON paths of the field tree, with their kinds. A path names an object (a layer) or a
/// field inside one; list items are reached through the list's key (`eth.vlan.pcp` is the PCP of
/// any tag, `pfc.quanta` any of the eight quanta).
pub const JSON_PATHS: &[(&str, Kind)] = &[
    ("eth", Kind::Layer),
    ("eth.src", Kind::Mac),
    ("eth.dst", Kind::Mac),
    ("eth.type", Kind::Uint),
    ("eth.vlan", Kind::Layer),
    ("eth.vlan.tpid", Kind::Uint),
    ("eth.vlan.pcp", Kind::Uint),
    ("eth.vlan.dei", Kind::Bool),
    ("eth.vlan.vid", Kind::Uint),
    ("pause", Kind::Layer),
    ("pause.quanta", Kind::Uint),
    ("pfc", Kind::Layer),
    ("pfc.enable", Kind::Uint),
    ("pfc.quanta", Kind::Uint),
    ("macc", Kind::Layer),
    ("macc.opcode", Kind::Uint),
    ("ipv4", Kind::Layer),
    ("ipv4.src", Kind::Ipv4),
    ("ipv4.dst", Kind::Ipv4),
    ("ipv4.dscp", Kind::Uint),
    ("ipv4.ecn", Kind::Uint),
    ("ipv4.ttl", Kind::Uint),
    ("ipv4.id", Kind::Uint),
    ("ipv4.len", Kind::Uint),
    ("ipv4.proto", Kind::Uint),
    ("ipv6", Kind::Layer),
    ("ipv6.src", Kind::Ipv6),
    ("ipv6.dst", Kind::Ipv6),
    ("ipv6.dscp", Kind::Uint),
    ("ipv6.ecn", Kind::Uint),
    ("ipv6.flow_label", Kind::Uint),
    ("ipv6.hop_limit", Kind::Uint),
    ("ipv6.len", Kind::Uint),
    ("ipv6.next", Kind::Uint),
    ("grh", Kind::Layer),
    ("grh.sgid", Kind::Ipv6),
    ("grh.dgid", Kind::Ipv6),
    ("grh.tclass", Kind::Uint),
    ("grh.flow_label", Kind::Uint),
    ("grh.hop_limit", Kind::Uint),
    ("grh.next", Kind::Uint),
    ("udp", Kind::Layer),
    ("udp.srcport", Kind::Uint),
    ("udp.dstport", Kind::Uint),
    ("udp.len", Kind::Uint),
    ("tcp", Kind::Layer),
    ("tcp.srcport", Kind::Uint),
    ("tcp.dstport", Kind::Uint),
    ("tcp.seq", Kind::Uint),
    ("tcp.ack", Kind::Uint),
    ("tcp.flags", Kind::Uint),
    ("tcp.window", Kind::Uint),
    ("tcp.ts_val", Kind::Uint),
    ("tcp.ts_ecr", Kind::Uint),
    ("tcp_bth", Kind::Layer),
    ("tcp_bth.format", Kind::Str),
    ("tcp_bth.exid", Kind::Uint),
    ("tcp_bth.opcode", Kind::Opcode),
    ("tcp_bth.opcode_name", Kind::Str),
    ("tcp_bth.msn", Kind::Uint),
    ("tcp_bth.mbo", Kind::Uint),
    ("tcp_bth.seg", Kind::Uint),
    ("tcp_bth.more", Kind::Bool),
    ("tcp_bth.imm", Kind::Uint),
    ("tcp_bth.mlen", Kind::Uint),
    ("tcp_bth.icrc", Kind::Uint),
    ("tcp_bth.icrc_valid", Kind::Bool),
    ("bth", Kind::Layer),
    ("bth.opcode", Kind::Opcode),
    ("bth.opcode_name", Kind::Str),
    ("bth.se", Kind::Bool),
    ("bth.m", Kind::Bool),
    ("bth.padcnt", Kind::Uint),
    ("bth.tver", Kind::Uint),
    ("bth.pkey", Kind::Uint),
    ("bth.fecn", Kind::Bool),
    ("bth.becn", Kind::Bool),
    ("bth.destqp", Kind::Uint),
    ("bth.ackreq", Kind::Bool),
    ("bth.psn", Kind::Uint),
    ("rdeth", Kind::Layer),
    ("rdeth.eecnxt", Kind::Uint),
    ("deth", Kind::Layer),
    ("deth.qkey", Kind::Uint),
    ("deth.srcqp", Kind::Uint),
    ("xrceth", Kind::Layer),
    ("xrceth.srqn", Kind::Uint),
    ("reth", Kind::Layer),
    ("reth.va", Kind::Uint),
    ("reth.rkey", Kind::Uint),
    ("reth.dmalen", Kind::Uint),
    ("atomiceth", Kind::Layer),
    ("atomiceth.va", Kind::Uint),
    ("atomiceth.rkey", Kind::Uint),
    ("atomiceth.swap_add", Kind::Uint),
    ("atomiceth.compare", Kind::Uint),
    ("atomicacketh", Kind::Layer),
    ("atomicacketh.orig", Kind::Uint),
    ("aeth", Kind::Layer),
    ("aeth.syndrome", Kind::Uint),
    ("aeth.kind", Kind::Str),
    ("aeth.credit", Kind::Uint),
    ("aeth.timer_us", Kind::Uint),
    ("aeth.nak_code", Kind::Uint),
    ("aeth.msn", Kind::Uint),
    ("immdt", Kind::Uint),
    ("ieth", Kind::Uint),
    ("feth", Kind::Layer),
    ("feth.plt", Kind::Uint),
    ("feth.sel", Kind::Uint),
    ("cnp", Kind::Layer),
    ("cm", Kind::Layer),
    ("cm.attribute", Kind::Str),
    ("cm.attribute_id", Kind::Uint),
    ("cm.transaction_id", Kind::Uint),
    ("cm.local_comm_id", Kind::Uint),
    ("cm.remote_comm_id", Kind::Uint),
    ("cm.local_qpn", Kind::Uint),
    ("cm.remote_qpn", Kind::Uint),
    ("cm.starting_psn", Kind::Uint),
    ("cm.path_mtu", Kind::Uint),
    ("cm.service_id", Kind::Uint),
    ("cm.pkey", Kind::Uint),
    ("cm.retry_count", Kind::Uint),
    ("cm.rnr_retry_count", Kind::Uint),
    ("cm.responder_resources", Kind::Uint),
    ("cm.reject_reason", Kind::Uint),
    ("payload_len", Kind::Uint),
    ("icrc", Kind::Layer),
    ("icrc.value", Kind::Uint),
    ("icrc.computed", Kind::Uint),
    ("icrc.valid", Kind::Bool),
];

/// How a Wireshark field name (or an alias) reads the tree.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// Any of these JSON paths (`ip.addr` = `ipv4.src` or `ipv4.dst`).
    Paths(&'static [&'static str]),
    /// One item of a list (`macc.cbfc.pause_time.c3` = `pfc.quanta` item 3).
    Item(&'static str, u32),
    /// One bit of a field (`macc.cbfc.enbv.c3` = bit 3 of `pfc.enable`).
    Bit(&'static str, u8),
    /// The MAC Control opcode: 0x0001 for PAUSE, 0x0101 for PFC, else `macc.opcode`.
    MaccOpcode,
    /// Frame metadata, not from the tree.
    Frame(FrameField),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameField {
    Number,
    Len,
    CapLen,
    TimeNs,
}

/// Wireshark's names (and rocescope's short aliases) → where they live in the tree.
pub const WIRESHARK: &[(&str, Source, Kind)] = &[
    (
        "frame.number",
        Source::Frame(FrameField::Number),
        Kind::Uint,
    ),
    ("frame.len", Source::Frame(FrameField::Len), Kind::Uint),
    (
        "frame.cap_len",
        Source::Frame(FrameField::CapLen),
        Kind::Uint,
    ),
    (
        "frame.time_ns",
        Source::Frame(FrameField::TimeNs),
        Kind::Uint,
    ),
    (
        "eth.addr",
        Source::Paths(&["eth.src", "eth.dst"]),
        Kind::Mac,
    ),
    ("vlan", Source::Paths(&["eth.vlan"]), Kind::Layer),
    ("vlan.pcp", Source::Paths(&["eth.vlan.pcp"]), Kind::Uint),
    (
        "vlan.priority",
        Source::Paths(&["eth.vlan.pcp"]),
        Kind::Uint,
    ),
    ("vlan.dei", Source::Paths(&["eth.vlan.dei"]), Kind::Bool),
    ("vlan.cfi", Source::Paths(&["eth.vlan.dei"]), Kind::Bool),
    ("vlan.id", Source::Paths(&["eth.vlan.vid"]), Kind::Uint),
    ("vlan.vid", Source::Paths(&["eth.vlan.vid"]), Kind::Uint),
    ("vlan.tpid", Source::Paths(&["eth.vlan.tpid"]), Kind::Uint),
    ("macc.opcode", Source::MaccOpcode, Kind::Uint),
    (
        "macc.pause_time",
        Source::Paths(&["pause.quanta"]),
        Kind::Uint,
    ),
    ("macc.cbfc.enbv", Source::Paths(&["pfc.enable"]), Kind::Uint),
    (
        "macc.cbfc.enbv.c0",
        Source::Bit("pfc.enable", 0),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c1",
        Source::Bit("pfc.enable", 1),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c2",
        Source::Bit("pfc.enable", 2),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c3",
        Source::Bit("pfc.enable", 3),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c4",
        Source::Bit("pfc.enable", 4),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c5",
        Source::Bit("pfc.enable", 5),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c6",
        Source::Bit("pfc.enable", 6),
        Kind::Bool,
    ),
    (
        "macc.cbfc.enbv.c7",
        Source::Bit("pfc.enable", 7),
        Kind::Bool,
    ),
    (
        "macc.cbfc.pause_time.c0",
        Source::Item("pfc.quanta", 0),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c1",
        Source::Item("pfc.quanta", 1),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c2",
        Source::Item("pfc.quanta", 2),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c3",
        Source::Item("pfc.quanta", 3),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c4",
        Source::Item("pfc.quanta", 4),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c5",
        Source::Item("pfc.quanta", 5),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c6",
        Source::Item("pfc.quanta", 6),
        Kind::Uint,
    ),
    (
        "macc.cbfc.pause_time.c7",
        Source::Item("pfc.quanta", 7),
        Kind::Uint,
    ),
    ("ip", Source::Paths(&["ipv4"]), Kind::Layer),
    ("ip.src", Source::Paths(&["ipv4.src"]), Kind::Ipv4),
    ("ip.dst", Source::Paths(&["ipv4.dst"]), Kind::Ipv4),
    (
        "ip.addr",
        Source::Paths(&["ipv4.src", "ipv4.dst"]),
        Kind::Ipv4,
    ),
    ("ip.dsfield.dscp", Source::Paths(&["ipv4.dscp"]), Kind::Uint),
    ("ip.dsfield.ecn", Source::Paths(&["ipv4.ecn"]), Kind::Uint),
    ("ip.ttl", Source::Paths(&["ipv4.ttl"]), Kind::Uint),
    ("ip.id", Source::Paths(&["ipv4.id"]), Kind::Uint),
    ("ip.len", Source::Paths(&["ipv4.len"]), Kind::Uint),
    ("ip.proto", Source::Paths(&["ipv4.proto"]), Kind::Uint),
    (
        "ipv6.addr",
        Source::Paths(&["ipv6.src", "ipv6.dst"]),
        Kind::Ipv6,
    ),
    (
        "ipv6.tclass.dscp",
        Source::Paths(&["ipv6.dscp"]),
        Kind::Uint,
    ),
    ("ipv6.tclass.ecn", Source::Paths(&["ipv6.ecn"]), Kind::Uint),
    ("ipv6.flow", Source::Paths(&["ipv6.flow_label"]), Kind::Uint),
    ("ipv6.hlim", Source::Paths(&["ipv6.hop_limit"]), Kind::Uint),
    ("ipv6.plen", Source::Paths(&["ipv6.len"]), Kind::Uint),
    ("ipv6.nxt", Source::Paths(&["ipv6.next"]), Kind::Uint),
    (
        "udp.port",
        Source::Paths(&["udp.srcport", "udp.dstport"]),
        Kind::Uint,
    ),
    ("udp.length", Source::Paths(&["udp.len"]), Kind::Uint),
    (
        "tcp.port",
        Source::Paths(&["tcp.srcport", "tcp.dstport"]),
        Kind::Uint,
    ),
    (
        "tcp.options.timestamp.tsval",
        Source::Paths(&["tcp.ts_val"]),
        Kind::Uint,
    ),
    (
        "tcp.options.timestamp.tsecr",
        Source::Paths(&["tcp.ts_ecr"]),
        Kind::Uint,
    ),
    ("infiniband", Source::Paths(&["bth"]), Kind::Layer),
    ("infiniband.bth", Source::Paths(&["bth"]), Kind::Layer),
    (
        "infiniband.bth.opcode",
        Source::Paths(&["bth.opcode"]),
        Kind::Opcode,
    ),
    ("infiniband.bth.se", Source::Paths(&["bth.se"]), Kind::Bool),
    ("infiniband.bth.m", Source::Paths(&["bth.m"]), Kind::Bool),
    (
        "infiniband.bth.padcnt",
        Source::Paths(&["bth.padcnt"]),
        Kind::Uint,
    ),
    (
        "infiniband.bth.tver",
        Source::Paths(&["bth.tver"]),
        Kind::Uint,
    ),
    (
        "infiniband.bth.p_key",
        Source::Paths(&["bth.pkey"]),
        Kind::Uint,
    ),
    (
        "infiniband.bth.fecn",
        Source::Paths(&["bth.fecn"]),
        Kind::Bool,
    ),
    (
        "infiniband.bth.becn",
        Source::Paths(&["bth.becn"]),
        Kind::Bool,
    ),
    (
        "infiniband.bth.destqp",
        Source::Paths(&["bth.destqp"]),
        Kind::Uint,
    ),
    (
        "infiniband.bth.a",
        Source::Paths(&["bth.ackreq"]),
        Kind::Bool,
    ),
    (
        "infiniband.bth.psn",
        Source::Paths(&["bth.psn"]),
        Kind::Uint,
    ),
    ("infiniband.grh", Source::Paths(&["grh"]), Kind::Layer),
    (
        "infiniband.grh.sgid",
        Source::Paths(&["grh.sgid"]),
        Kind::Ipv6,
    ),
    (
        "infiniband.grh.dgid",
        Source::Paths(&["grh.dgid"]),
        Kind::Ipv6,
    ),
    (
        "infiniband.grh.tclass",
        Source::Paths(&["grh.tclass"]),
        Kind::Uint,
    ),
    (
        "infiniband.grh.flowlabel",
        Source::Paths(&["grh.flow_label"]),
        Kind::Uint,
    ),
    (
        "infiniband.grh.hoplmt",
        Source::Paths(&["grh.hop_limit"]),
        Kind::Uint,
    ),
    (
        "infiniband.grh.nxthdr",
        Source::Paths(&["grh.next"]),
        Kind::Uint,
    ),
    ("infiniband.rdeth", Source::Paths(&["rdeth"]), Kind::Layer),
    (
        "infiniband.rdeth.eecnxt",
        Source::Paths(&["rdeth.eecnxt"]),
        Kind::Uint,
    ),
    ("infiniband.deth", Source::Paths(&["deth"]), Kind::Layer),
    (
        "infiniband.deth.q_key",
        Source::Paths(&["deth.qkey"]),
        Kind::Uint,
    ),
    (
        "infiniband.deth.srcqp",
        Source::Paths(&["deth.srcqp"]),
        Kind::Uint,
    ),
    ("infiniband.reth", Source::Paths(&["reth"]), Kind::Layer),
    // Wireshark shows the AtomicETH's VA and R_Key under the RETH's field names.
    (
        "infiniband.reth.va",
        Source::Paths(&["reth.va", "atomiceth.va"]),
        Kind::Uint,
    ),
    (
        "infiniband.reth.r_key",
        Source::Paths(&["reth.rkey", "atomiceth.rkey"]),
        Kind::Uint,
    ),
    (
        "infiniband.reth.dmalen",
        Source::Paths(&["reth.dmalen"]),
        Kind::Uint,
    ),
    (
        "infiniband.atomiceth",
        Source::Paths(&["atomiceth"]),
        Kind::Layer,
    ),
    (
        "infiniband.atomiceth.swapdt",
        Source::Paths(&["atomiceth.swap_add"]),
        Kind::Uint,
    ),
    (
        "infiniband.atomiceth.cmpdt",
        Source::Paths(&["atomiceth.compare"]),
        Kind::Uint,
    ),
    (
        "infiniband.atomicacketh",
        Source::Paths(&["atomicacketh"]),
        Kind::Layer,
    ),
    (
        "infiniband.atomicacketh.origremdt",
        Source::Paths(&["atomicacketh.orig"]),
        Kind::Uint,
    ),
    ("infiniband.aeth", Source::Paths(&["aeth"]), Kind::Layer),
    (
        "infiniband.aeth.syndrome",
        Source::Paths(&["aeth.syndrome"]),
        Kind::Uint,
    ),
    (
        "infiniband.aeth.msn",
        Source::Paths(&["aeth.msn"]),
        Kind::Uint,
    ),
    ("infiniband.immdt", Source::Paths(&["immdt"]), Kind::Uint),
    ("infiniband.ieth", Source::Paths(&["ieth"]), Kind::Uint),
    (
        "infiniband.invariant.crc",
        Source::Paths(&["icrc.value"]),
        Kind::Uint,
    ),
    ("qp", Source::Paths(&["bth.destqp"]), Kind::Uint),
    ("psn", Source::Paths(&["bth.psn"]), Kind::Uint),
    ("opcode", Source::Paths(&["bth.opcode"]), Kind::Opcode),
];

/// Resolve a field name: Wireshark names and aliases first, then the JSON paths themselves.
#[must_use]
pub fn lookup(name: &str) -> Option<(Source, Kind)> {
    if let Some(&(_, source, kind)) = WIRESHARK.iter().find(|(n, _, _)| *n == name) {
        return Some((source, kind));
    }
    JSON_PATHS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(n, kind)| (Source::Paths(path_slice(n)), kind))
}

/// The `JSON_PATHS` entry as a one-element `'static` slice.
fn path_slice(name: &str) -> &'static [&'static str] {
    // JSON_PATHS is a static table of (name, kind); a one-element slice of its name lives in
    // PATH_NAMES, built from the same table at compile time by index.
    let i = JSON_PATHS.iter().position(|(n, _)| *n == name).unwrap_or(0);
    core::slice::from_ref(&PATH_NAMES[i])
}

/// `JSON_PATHS`' names alone, so a `Source::Paths` can borrow one of them.
static PATH_NAMES: [&str; JSON_PATHS.len()] = {
    let mut names = [""; JSON_PATHS.len()];
    let mut i = 0;
    while i < JSON_PATHS.len() {
        names[i] = JSON_PATHS[i].0;
        i += 1;
    }
    names
};
