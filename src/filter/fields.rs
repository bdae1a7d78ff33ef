//! The names a display filter may use, mapped onto the dotted JSON paths of the field tree
//! (`rocescope_dissectors::pretty::visit`). This table only names paths; what a field's value is,
//! and whether a frame has it, always comes from the visitor.

// Indexing cannot panic here: tables are indexed by positions in the tables they were built from.
#![allow(clippy::indexing_slicing)]

/// What kind of value a field holds (checked against the literal when a filter compiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
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
pub const JSON_PATHS: &[(&str, FieldType)] = &[
    ("eth", FieldType::Layer),
    ("eth.src", FieldType::Mac),
    ("eth.dst", FieldType::Mac),
    ("eth.type", FieldType::Uint),
    ("eth.vlan", FieldType::Layer),
    ("eth.vlan.tpid", FieldType::Uint),
    ("eth.vlan.pcp", FieldType::Uint),
    ("eth.vlan.dei", FieldType::Bool),
    ("eth.vlan.vid", FieldType::Uint),
    ("pause", FieldType::Layer),
    ("pause.quanta", FieldType::Uint),
    ("pfc", FieldType::Layer),
    ("pfc.enable", FieldType::Uint),
    ("pfc.quanta", FieldType::Uint),
    ("macc", FieldType::Layer),
    ("macc.opcode", FieldType::Uint),
    ("ipv4", FieldType::Layer),
    ("ipv4.src", FieldType::Ipv4),
    ("ipv4.dst", FieldType::Ipv4),
    ("ipv4.dscp", FieldType::Uint),
    ("ipv4.ecn", FieldType::Uint),
    ("ipv4.ttl", FieldType::Uint),
    ("ipv4.id", FieldType::Uint),
    ("ipv4.len", FieldType::Uint),
    ("ipv4.proto", FieldType::Uint),
    ("ipv6", FieldType::Layer),
    ("ipv6.src", FieldType::Ipv6),
    ("ipv6.dst", FieldType::Ipv6),
    ("ipv6.dscp", FieldType::Uint),
    ("ipv6.ecn", FieldType::Uint),
    ("ipv6.flow_label", FieldType::Uint),
    ("ipv6.hop_limit", FieldType::Uint),
    ("ipv6.len", FieldType::Uint),
    ("ipv6.next", FieldType::Uint),
    ("erf", FieldType::Layer),
    ("erf.type", FieldType::Uint),
    ("erf.flags", FieldType::Uint),
    ("erf.rlen", FieldType::Uint),
    ("erf.lctr", FieldType::Uint),
    ("erf.wlen", FieldType::Uint),
    ("erf.ext", FieldType::Uint),
    ("lrh", FieldType::Layer),
    ("lrh.vl", FieldType::Uint),
    ("lrh.lver", FieldType::Uint),
    ("lrh.sl", FieldType::Uint),
    ("lrh.lnh", FieldType::Uint),
    ("lrh.dlid", FieldType::Uint),
    ("lrh.pktlen", FieldType::Uint),
    ("lrh.slid", FieldType::Uint),
    ("vcrc", FieldType::Layer),
    ("vcrc.value", FieldType::Uint),
    ("vcrc.computed", FieldType::Uint),
    ("vcrc.valid", FieldType::Bool),
    ("dc", FieldType::Layer),
    ("dc.sid_owner", FieldType::Bool),
    ("dc.sid", FieldType::Uint),
    ("dc.dci_dct", FieldType::Uint),
    ("dc.raw", FieldType::Uint),
    ("dcceth", FieldType::Layer),
    ("dcceth.reconnect", FieldType::Bool),
    ("dcceth.access_key", FieldType::Uint),
    ("grh", FieldType::Layer),
    ("grh.sgid", FieldType::Ipv6),
    ("grh.dgid", FieldType::Ipv6),
    ("grh.tclass", FieldType::Uint),
    ("grh.flow_label", FieldType::Uint),
    ("grh.hop_limit", FieldType::Uint),
    ("grh.next", FieldType::Uint),
    ("udp", FieldType::Layer),
    ("udp.srcport", FieldType::Uint),
    ("udp.dstport", FieldType::Uint),
    ("udp.len", FieldType::Uint),
    ("tcp", FieldType::Layer),
    ("tcp.srcport", FieldType::Uint),
    ("tcp.dstport", FieldType::Uint),
    ("tcp.seq", FieldType::Uint),
    ("tcp.ack", FieldType::Uint),
    ("tcp.flags", FieldType::Uint),
    ("tcp.window", FieldType::Uint),
    ("tcp.ts_val", FieldType::Uint),
    ("tcp.ts_ecr", FieldType::Uint),
    ("tcp_bth", FieldType::Layer),
    ("tcp_bth.format", FieldType::Str),
    ("tcp_bth.exid", FieldType::Uint),
    ("tcp_bth.opcode", FieldType::Opcode),
    ("tcp_bth.opcode_name", FieldType::Str),
    ("tcp_bth.msn", FieldType::Uint),
    ("tcp_bth.mbo", FieldType::Uint),
    ("tcp_bth.seg", FieldType::Uint),
    ("tcp_bth.more", FieldType::Bool),
    ("tcp_bth.imm", FieldType::Uint),
    ("tcp_bth.mlen", FieldType::Uint),
    ("tcp_bth.icrc", FieldType::Uint),
    ("tcp_bth.icrc_valid", FieldType::Bool),
    ("bth", FieldType::Layer),
    ("bth.opcode", FieldType::Opcode),
    ("bth.opcode_name", FieldType::Str),
    ("bth.se", FieldType::Bool),
    ("bth.m", FieldType::Bool),
    ("bth.padcnt", FieldType::Uint),
    ("bth.tver", FieldType::Uint),
    ("bth.pkey", FieldType::Uint),
    ("bth.fecn", FieldType::Bool),
    ("bth.becn", FieldType::Bool),
    ("bth.destqp", FieldType::Uint),
    ("bth.ackreq", FieldType::Bool),
    ("bth.psn", FieldType::Uint),
    ("rdeth", FieldType::Layer),
    ("rdeth.eecnxt", FieldType::Uint),
    ("deth", FieldType::Layer),
    ("deth.qkey", FieldType::Uint),
    ("deth.srcqp", FieldType::Uint),
    ("xrceth", FieldType::Layer),
    ("xrceth.srqn", FieldType::Uint),
    ("reth", FieldType::Layer),
    ("reth.va", FieldType::Uint),
    ("reth.rkey", FieldType::Uint),
    ("reth.dmalen", FieldType::Uint),
    ("atomiceth", FieldType::Layer),
    ("atomiceth.va", FieldType::Uint),
    ("atomiceth.rkey", FieldType::Uint),
    ("atomiceth.swap_add", FieldType::Uint),
    ("atomiceth.compare", FieldType::Uint),
    ("atomicacketh", FieldType::Layer),
    ("atomicacketh.orig", FieldType::Uint),
    ("aeth", FieldType::Layer),
    ("aeth.syndrome", FieldType::Uint),
    ("aeth.kind", FieldType::Str),
    ("aeth.credit", FieldType::Uint),
    ("aeth.timer_us", FieldType::Uint),
    ("aeth.nak_code", FieldType::Uint),
    ("aeth.msn", FieldType::Uint),
    ("immdt", FieldType::Uint),
    ("ieth", FieldType::Uint),
    ("feth", FieldType::Layer),
    ("feth.plt", FieldType::Uint),
    ("feth.sel", FieldType::Uint),
    ("cnp", FieldType::Layer),
    ("cm", FieldType::Layer),
    ("cm.attribute", FieldType::Str),
    ("cm.attribute_id", FieldType::Uint),
    ("cm.transaction_id", FieldType::Uint),
    ("cm.local_comm_id", FieldType::Uint),
    ("cm.remote_comm_id", FieldType::Uint),
    ("cm.local_qpn", FieldType::Uint),
    ("cm.remote_qpn", FieldType::Uint),
    ("cm.starting_psn", FieldType::Uint),
    ("cm.path_mtu", FieldType::Uint),
    ("cm.service_id", FieldType::Uint),
    ("cm.pkey", FieldType::Uint),
    ("cm.retry_count", FieldType::Uint),
    ("cm.rnr_retry_count", FieldType::Uint),
    ("cm.responder_resources", FieldType::Uint),
    ("cm.reject_reason", FieldType::Uint),
    ("payload_len", FieldType::Uint),
    ("icrc", FieldType::Layer),
    ("icrc.value", FieldType::Uint),
    ("icrc.computed", FieldType::Uint),
    ("icrc.valid", FieldType::Bool),
    ("ipoib", FieldType::Layer),
    ("ipoib.type", FieldType::Uint),
    ("mad", FieldType::Layer),
    ("mad.base_version", FieldType::Uint),
    ("mad.mgmt_class", FieldType::Uint),
    ("mad.class_name", FieldType::Str),
    ("mad.class_version", FieldType::Uint),
    ("mad.method", FieldType::Uint),
    ("mad.method_name", FieldType::Str),
    ("mad.status", FieldType::Uint),
    ("mad.tid", FieldType::Uint),
    ("mad.attribute_id", FieldType::Uint),
    ("mad.attribute_name", FieldType::Str),
    ("mad.attribute_modifier", FieldType::Uint),
    // the layers an encapsulated frame came in, outermost first (`outer` in the JSON); the
    // inner names (`ipv4.src`, `ip.src`) match these too, `outer.*` names only these
    ("outer", FieldType::Layer),
    ("outer.eth", FieldType::Layer),
    ("outer.eth.src", FieldType::Mac),
    ("outer.eth.dst", FieldType::Mac),
    ("outer.eth.type", FieldType::Uint),
    ("outer.ipv4", FieldType::Layer),
    ("outer.ipv4.src", FieldType::Ipv4),
    ("outer.ipv4.dst", FieldType::Ipv4),
    ("outer.ipv4.dscp", FieldType::Uint),
    ("outer.ipv4.ecn", FieldType::Uint),
    ("outer.ipv4.ttl", FieldType::Uint),
    ("outer.ipv4.id", FieldType::Uint),
    ("outer.ipv4.len", FieldType::Uint),
    ("outer.ipv4.proto", FieldType::Uint),
    ("outer.ipv6", FieldType::Layer),
    ("outer.ipv6.src", FieldType::Ipv6),
    ("outer.ipv6.dst", FieldType::Ipv6),
    ("outer.ipv6.dscp", FieldType::Uint),
    ("outer.ipv6.ecn", FieldType::Uint),
    ("outer.ipv6.flow_label", FieldType::Uint),
    ("outer.ipv6.hop_limit", FieldType::Uint),
    ("outer.ipv6.len", FieldType::Uint),
    ("outer.ipv6.next", FieldType::Uint),
    ("outer.udp", FieldType::Layer),
    ("outer.udp.srcport", FieldType::Uint),
    ("outer.udp.dstport", FieldType::Uint),
    ("outer.udp.len", FieldType::Uint),
    ("outer.gre", FieldType::Layer),
    ("outer.gre.flags", FieldType::Uint),
    ("outer.gre.proto", FieldType::Uint),
    ("outer.gre.checksum", FieldType::Uint),
    ("outer.gre.key", FieldType::Uint),
    ("outer.gre.seq", FieldType::Uint),
    ("outer.erspan", FieldType::Layer),
    ("outer.erspan.version", FieldType::Uint),
    ("outer.erspan.vlan", FieldType::Uint),
    ("outer.erspan.cos", FieldType::Uint),
    ("outer.erspan.encap", FieldType::Uint),
    ("outer.erspan.bso", FieldType::Uint),
    ("outer.erspan.truncated", FieldType::Bool),
    ("outer.erspan.session", FieldType::Uint),
    ("outer.erspan.index", FieldType::Uint),
    ("outer.erspan.timestamp", FieldType::Uint),
    ("outer.erspan.sgt", FieldType::Uint),
    ("outer.erspan.p", FieldType::Bool),
    ("outer.erspan.ft", FieldType::Uint),
    ("outer.erspan.hw", FieldType::Uint),
    ("outer.erspan.direction", FieldType::Uint),
    ("outer.erspan.gra", FieldType::Uint),
    ("outer.erspan.platform", FieldType::Uint),
    ("outer.vxlan", FieldType::Layer),
    ("outer.vxlan.flags", FieldType::Uint),
    ("outer.vxlan.vni", FieldType::Uint),
    ("outer.geneve", FieldType::Layer),
    ("outer.geneve.vni", FieldType::Uint),
    ("outer.geneve.proto", FieldType::Uint),
    ("outer.geneve.options", FieldType::Layer),
    ("outer.geneve.options.class", FieldType::Uint),
    ("outer.geneve.options.type", FieldType::Uint),
    ("outer.geneve.options.length", FieldType::Uint),
    ("outer.mpls", FieldType::Layer),
    ("outer.mpls.label", FieldType::Uint),
    ("outer.mpls.tc", FieldType::Uint),
    ("outer.mpls.s", FieldType::Bool),
    ("outer.mpls.ttl", FieldType::Uint),
];

/// The layers that can be outer ones too: a name on one of them also matches the copy under
/// `outer` (Wireshark's `ip.src` is any IPv4 header's source, the mirror's included).
pub const ALSO_OUTER: &[&str] = &["eth", "ipv4", "ipv6", "udp"];

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
    /// A 2- or 4-byte field with its bytes swapped (`infiniband.invariant.crc`: the tree's
    /// `icrc.value` is the CRC value, read little-endian; tshark reads the wire bytes
    /// big-endian).
    Swapped(&'static str, u8),
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
pub const WIRESHARK: &[(&str, Source, FieldType)] = &[
    (
        "frame.number",
        Source::Frame(FrameField::Number),
        FieldType::Uint,
    ),
    ("frame.len", Source::Frame(FrameField::Len), FieldType::Uint),
    (
        "frame.cap_len",
        Source::Frame(FrameField::CapLen),
        FieldType::Uint,
    ),
    (
        "frame.time_ns",
        Source::Frame(FrameField::TimeNs),
        FieldType::Uint,
    ),
    (
        "eth.addr",
        Source::Paths(&["eth.src", "eth.dst"]),
        FieldType::Mac,
    ),
    ("vlan", Source::Paths(&["eth.vlan"]), FieldType::Layer),
    (
        "vlan.pcp",
        Source::Paths(&["eth.vlan.pcp"]),
        FieldType::Uint,
    ),
    (
        "vlan.priority",
        Source::Paths(&["eth.vlan.pcp"]),
        FieldType::Uint,
    ),
    (
        "vlan.dei",
        Source::Paths(&["eth.vlan.dei"]),
        FieldType::Bool,
    ),
    (
        "vlan.cfi",
        Source::Paths(&["eth.vlan.dei"]),
        FieldType::Bool,
    ),
    ("vlan.id", Source::Paths(&["eth.vlan.vid"]), FieldType::Uint),
    (
        "vlan.vid",
        Source::Paths(&["eth.vlan.vid"]),
        FieldType::Uint,
    ),
    (
        "vlan.tpid",
        Source::Paths(&["eth.vlan.tpid"]),
        FieldType::Uint,
    ),
    ("macc.opcode", Source::MaccOpcode, FieldType::Uint),
    (
        "macc.pause_time",
        Source::Paths(&["pause.quanta"]),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.enbv",
        Source::Paths(&["pfc.enable"]),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.enbv.c0",
        Source::Bit("pfc.enable", 0),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c1",
        Source::Bit("pfc.enable", 1),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c2",
        Source::Bit("pfc.enable", 2),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c3",
        Source::Bit("pfc.enable", 3),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c4",
        Source::Bit("pfc.enable", 4),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c5",
        Source::Bit("pfc.enable", 5),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c6",
        Source::Bit("pfc.enable", 6),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.enbv.c7",
        Source::Bit("pfc.enable", 7),
        FieldType::Bool,
    ),
    (
        "macc.cbfc.pause_time.c0",
        Source::Item("pfc.quanta", 0),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c1",
        Source::Item("pfc.quanta", 1),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c2",
        Source::Item("pfc.quanta", 2),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c3",
        Source::Item("pfc.quanta", 3),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c4",
        Source::Item("pfc.quanta", 4),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c5",
        Source::Item("pfc.quanta", 5),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c6",
        Source::Item("pfc.quanta", 6),
        FieldType::Uint,
    ),
    (
        "macc.cbfc.pause_time.c7",
        Source::Item("pfc.quanta", 7),
        FieldType::Uint,
    ),
    ("ip", Source::Paths(&["ipv4"]), FieldType::Layer),
    ("ip.src", Source::Paths(&["ipv4.src"]), FieldType::Ipv4),
    ("ip.dst", Source::Paths(&["ipv4.dst"]), FieldType::Ipv4),
    (
        "ip.addr",
        Source::Paths(&["ipv4.src", "ipv4.dst"]),
        FieldType::Ipv4,
    ),
    (
        "ip.dsfield.dscp",
        Source::Paths(&["ipv4.dscp"]),
        FieldType::Uint,
    ),
    (
        "ip.dsfield.ecn",
        Source::Paths(&["ipv4.ecn"]),
        FieldType::Uint,
    ),
    ("ip.ttl", Source::Paths(&["ipv4.ttl"]), FieldType::Uint),
    ("ip.id", Source::Paths(&["ipv4.id"]), FieldType::Uint),
    ("ip.len", Source::Paths(&["ipv4.len"]), FieldType::Uint),
    ("ip.proto", Source::Paths(&["ipv4.proto"]), FieldType::Uint),
    (
        "ipv6.addr",
        Source::Paths(&["ipv6.src", "ipv6.dst"]),
        FieldType::Ipv6,
    ),
    (
        "ipv6.tclass.dscp",
        Source::Paths(&["ipv6.dscp"]),
        FieldType::Uint,
    ),
    (
        "ipv6.tclass.ecn",
        Source::Paths(&["ipv6.ecn"]),
        FieldType::Uint,
    ),
    (
        "ipv6.flow",
        Source::Paths(&["ipv6.flow_label"]),
        FieldType::Uint,
    ),
    (
        "ipv6.hlim",
        Source::Paths(&["ipv6.hop_limit"]),
        FieldType::Uint,
    ),
    ("ipv6.plen", Source::Paths(&["ipv6.len"]), FieldType::Uint),
    ("ipv6.nxt", Source::Paths(&["ipv6.next"]), FieldType::Uint),
    (
        "udp.port",
        Source::Paths(&["udp.srcport", "udp.dstport"]),
        FieldType::Uint,
    ),
    ("udp.length", Source::Paths(&["udp.len"]), FieldType::Uint),
    (
        "tcp.port",
        Source::Paths(&["tcp.srcport", "tcp.dstport"]),
        FieldType::Uint,
    ),
    (
        "tcp.options.timestamp.tsval",
        Source::Paths(&["tcp.ts_val"]),
        FieldType::Uint,
    ),
    (
        "tcp.options.timestamp.tsecr",
        Source::Paths(&["tcp.ts_ecr"]),
        FieldType::Uint,
    ),
    ("infiniband", Source::Paths(&["bth"]), FieldType::Layer),
    ("infiniband.bth", Source::Paths(&["bth"]), FieldType::Layer),
    (
        "infiniband.bth.opcode",
        Source::Paths(&["bth.opcode"]),
        FieldType::Opcode,
    ),
    (
        "infiniband.bth.se",
        Source::Paths(&["bth.se"]),
        FieldType::Bool,
    ),
    (
        "infiniband.bth.m",
        Source::Paths(&["bth.m"]),
        FieldType::Bool,
    ),
    (
        "infiniband.bth.padcnt",
        Source::Paths(&["bth.padcnt"]),
        FieldType::Uint,
    ),
    (
        "infiniband.bth.tver",
        Source::Paths(&["bth.tver"]),
        FieldType::Uint,
    ),
    (
        "infiniband.bth.p_key",
        Source::Paths(&["bth.pkey"]),
        FieldType::Uint,
    ),
    (
        "infiniband.bth.fecn",
        Source::Paths(&["bth.fecn"]),
        FieldType::Bool,
    ),
    (
        "infiniband.bth.becn",
        Source::Paths(&["bth.becn"]),
        FieldType::Bool,
    ),
    (
        "infiniband.bth.destqp",
        Source::Paths(&["bth.destqp"]),
        FieldType::Uint,
    ),
    (
        "infiniband.bth.a",
        Source::Paths(&["bth.ackreq"]),
        FieldType::Bool,
    ),
    (
        "infiniband.bth.psn",
        Source::Paths(&["bth.psn"]),
        FieldType::Uint,
    ),
    ("infiniband.grh", Source::Paths(&["grh"]), FieldType::Layer),
    (
        "infiniband.grh.sgid",
        Source::Paths(&["grh.sgid"]),
        FieldType::Ipv6,
    ),
    (
        "infiniband.grh.dgid",
        Source::Paths(&["grh.dgid"]),
        FieldType::Ipv6,
    ),
    (
        "infiniband.grh.tclass",
        Source::Paths(&["grh.tclass"]),
        FieldType::Uint,
    ),
    (
        "infiniband.grh.flowlabel",
        Source::Paths(&["grh.flow_label"]),
        FieldType::Uint,
    ),
    (
        "infiniband.grh.hoplmt",
        Source::Paths(&["grh.hop_limit"]),
        FieldType::Uint,
    ),
    (
        "infiniband.grh.nxthdr",
        Source::Paths(&["grh.next"]),
        FieldType::Uint,
    ),
    (
        "infiniband.rdeth",
        Source::Paths(&["rdeth"]),
        FieldType::Layer,
    ),
    (
        "infiniband.rdeth.eecnxt",
        Source::Paths(&["rdeth.eecnxt"]),
        FieldType::Uint,
    ),
    (
        "infiniband.deth",
        Source::Paths(&["deth"]),
        FieldType::Layer,
    ),
    (
        "infiniband.deth.q_key",
        Source::Paths(&["deth.qkey"]),
        FieldType::Uint,
    ),
    (
        "infiniband.deth.srcqp",
        Source::Paths(&["deth.srcqp"]),
        FieldType::Uint,
    ),
    (
        "infiniband.reth",
        Source::Paths(&["reth"]),
        FieldType::Layer,
    ),
    // Wireshark shows the AtomicETH's VA and R_Key under the RETH's field names.
    (
        "infiniband.reth.va",
        Source::Paths(&["reth.va", "atomiceth.va"]),
        FieldType::Uint,
    ),
    (
        "infiniband.reth.r_key",
        Source::Paths(&["reth.rkey", "atomiceth.rkey"]),
        FieldType::Uint,
    ),
    (
        "infiniband.reth.dmalen",
        Source::Paths(&["reth.dmalen"]),
        FieldType::Uint,
    ),
    (
        "infiniband.atomiceth",
        Source::Paths(&["atomiceth"]),
        FieldType::Layer,
    ),
    (
        "infiniband.atomiceth.swapdt",
        Source::Paths(&["atomiceth.swap_add"]),
        FieldType::Uint,
    ),
    (
        "infiniband.atomiceth.cmpdt",
        Source::Paths(&["atomiceth.compare"]),
        FieldType::Uint,
    ),
    (
        "infiniband.atomicacketh",
        Source::Paths(&["atomicacketh"]),
        FieldType::Layer,
    ),
    (
        "infiniband.atomicacketh.origremdt",
        Source::Paths(&["atomicacketh.orig"]),
        FieldType::Uint,
    ),
    (
        "infiniband.aeth",
        Source::Paths(&["aeth"]),
        FieldType::Layer,
    ),
    (
        "infiniband.aeth.syndrome",
        Source::Paths(&["aeth.syndrome"]),
        FieldType::Uint,
    ),
    (
        "infiniband.aeth.msn",
        Source::Paths(&["aeth.msn"]),
        FieldType::Uint,
    ),
    (
        "infiniband.immdt",
        Source::Paths(&["immdt"]),
        FieldType::Uint,
    ),
    ("infiniband.ieth", Source::Paths(&["ieth"]), FieldType::Uint),
    (
        "infiniband.invariant.crc",
        Source::Swapped("icrc.value", 4),
        FieldType::Uint,
    ),
    (
        "infiniband.variant.crc",
        Source::Swapped("vcrc.value", 2),
        FieldType::Uint,
    ),
    ("infiniband.lrh", Source::Paths(&["lrh"]), FieldType::Layer),
    (
        "infiniband.lrh.vl",
        Source::Paths(&["lrh.vl"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.lver",
        Source::Paths(&["lrh.lver"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.sl",
        Source::Paths(&["lrh.sl"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.lnh",
        Source::Paths(&["lrh.lnh"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.dlid",
        Source::Paths(&["lrh.dlid"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.pktlen",
        Source::Paths(&["lrh.pktlen"]),
        FieldType::Uint,
    ),
    (
        "infiniband.lrh.slid",
        Source::Paths(&["lrh.slid"]),
        FieldType::Uint,
    ),
    ("erf", Source::Paths(&["erf"]), FieldType::Layer),
    (
        "erf.types.type",
        Source::Paths(&["erf.type"]),
        FieldType::Uint,
    ),
    ("erf.flags", Source::Paths(&["erf.flags"]), FieldType::Uint),
    ("erf.rlen", Source::Paths(&["erf.rlen"]), FieldType::Uint),
    ("erf.lctr", Source::Paths(&["erf.lctr"]), FieldType::Uint),
    ("erf.wlen", Source::Paths(&["erf.wlen"]), FieldType::Uint),
    // management datagrams (tshark's infiniband.mad.*)
    ("infiniband.mad", Source::Paths(&["mad"]), FieldType::Layer),
    (
        "infiniband.mad.baseversion",
        Source::Paths(&["mad.base_version"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.mgmtclass",
        Source::Paths(&["mad.mgmt_class"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.classversion",
        Source::Paths(&["mad.class_version"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.method",
        Source::Paths(&["mad.method"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.status",
        Source::Paths(&["mad.status"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.transactionid",
        Source::Paths(&["mad.tid"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.attributeid",
        Source::Paths(&["mad.attribute_id"]),
        FieldType::Uint,
    ),
    (
        "infiniband.mad.attributemodifier",
        Source::Paths(&["mad.attribute_modifier"]),
        FieldType::Uint,
    ),
    // mirrored and tunnelled frames: Wireshark's names for the outer layers
    ("erspan", Source::Paths(&["outer.erspan"]), FieldType::Layer),
    (
        "erspan.version",
        Source::Paths(&["outer.erspan.version"]),
        FieldType::Uint,
    ),
    (
        "erspan.vlan",
        Source::Paths(&["outer.erspan.vlan"]),
        FieldType::Uint,
    ),
    (
        "erspan.cos",
        Source::Paths(&["outer.erspan.cos"]),
        FieldType::Uint,
    ),
    (
        "erspan.encap",
        Source::Paths(&["outer.erspan.encap"]),
        FieldType::Uint,
    ),
    (
        "erspan.bso",
        Source::Paths(&["outer.erspan.bso"]),
        FieldType::Uint,
    ),
    (
        "erspan.truncated",
        Source::Paths(&["outer.erspan.truncated"]),
        FieldType::Bool,
    ),
    (
        "erspan.spanid",
        Source::Paths(&["outer.erspan.session"]),
        FieldType::Uint,
    ),
    (
        "erspan.index",
        Source::Paths(&["outer.erspan.index"]),
        FieldType::Uint,
    ),
    (
        "erspan.timestamp",
        Source::Paths(&["outer.erspan.timestamp"]),
        FieldType::Uint,
    ),
    (
        "erspan.sgt",
        Source::Paths(&["outer.erspan.sgt"]),
        FieldType::Uint,
    ),
    (
        "erspan.hw",
        Source::Paths(&["outer.erspan.hw"]),
        FieldType::Uint,
    ),
    (
        "erspan.direction",
        Source::Paths(&["outer.erspan.direction"]),
        FieldType::Uint,
    ),
    (
        "erspan.gra",
        Source::Paths(&["outer.erspan.gra"]),
        FieldType::Uint,
    ),
    ("gre", Source::Paths(&["outer.gre"]), FieldType::Layer),
    (
        "gre.flags_and_version",
        Source::Paths(&["outer.gre.flags"]),
        FieldType::Uint,
    ),
    (
        "gre.proto",
        Source::Paths(&["outer.gre.proto"]),
        FieldType::Uint,
    ),
    (
        "gre.checksum",
        Source::Paths(&["outer.gre.checksum"]),
        FieldType::Uint,
    ),
    (
        "gre.key",
        Source::Paths(&["outer.gre.key"]),
        FieldType::Uint,
    ),
    (
        "gre.sequence_number",
        Source::Paths(&["outer.gre.seq"]),
        FieldType::Uint,
    ),
    ("vxlan", Source::Paths(&["outer.vxlan"]), FieldType::Layer),
    (
        "vxlan.flags",
        Source::Paths(&["outer.vxlan.flags"]),
        FieldType::Uint,
    ),
    (
        "vxlan.vni",
        Source::Paths(&["outer.vxlan.vni"]),
        FieldType::Uint,
    ),
    ("geneve", Source::Paths(&["outer.geneve"]), FieldType::Layer),
    (
        "geneve.vni",
        Source::Paths(&["outer.geneve.vni"]),
        FieldType::Uint,
    ),
    (
        "geneve.proto_type",
        Source::Paths(&["outer.geneve.proto"]),
        FieldType::Uint,
    ),
    (
        "geneve.option.class",
        Source::Paths(&["outer.geneve.options.class"]),
        FieldType::Uint,
    ),
    (
        "geneve.option.type",
        Source::Paths(&["outer.geneve.options.type"]),
        FieldType::Uint,
    ),
    ("mpls", Source::Paths(&["outer.mpls"]), FieldType::Layer),
    (
        "mpls.label",
        Source::Paths(&["outer.mpls.label"]),
        FieldType::Uint,
    ),
    (
        "mpls.exp",
        Source::Paths(&["outer.mpls.tc"]),
        FieldType::Uint,
    ),
    (
        "mpls.bottom",
        Source::Paths(&["outer.mpls.s"]),
        FieldType::Bool,
    ),
    (
        "mpls.ttl",
        Source::Paths(&["outer.mpls.ttl"]),
        FieldType::Uint,
    ),
    ("qp", Source::Paths(&["bth.destqp"]), FieldType::Uint),
    ("psn", Source::Paths(&["bth.psn"]), FieldType::Uint),
    ("opcode", Source::Paths(&["bth.opcode"]), FieldType::Opcode),
];

/// Frame columns of `-T fields` that display filters do not take (their value is a time).
const TIME_COLUMNS: [&str; 2] = ["frame.time_epoch", "frame.time_relative"];

/// A `-T fields` column: a field name [`lookup`] takes, or one of tshark's frame times.
#[must_use]
pub fn column(name: &str) -> Option<Source> {
    if TIME_COLUMNS.contains(&name) {
        return Some(Source::Frame(FrameField::TimeNs));
    }
    lookup(name).map(|(s, _)| s)
}

/// Resolve a field name: Wireshark names and aliases first, then the JSON paths themselves.
#[must_use]
pub fn lookup(name: &str) -> Option<(Source, FieldType)> {
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
