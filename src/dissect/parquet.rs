//! `dissect -f parquet`: one row per frame, the JSONL keys of interfaces.md §4 flattened with
//! `_` (§10), fed straight from the field walk ([`pretty::visit`]): no JSON is written or read
//! on the way.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, UInt64Array};
use rocescope_dissectors::pretty::{self, Value, Visitor};

use crate::columnar::columns::{Cell, Key, Table};
use crate::columnar::encoder::Fill;
use crate::columnar::schema::{
    Kind::{Bool, Str, TimestampNs, U8, U16, U32, U64},
    Node, flat, leaf, list_leaf, list_of, object, present,
};
use crate::filter::{FrameMarks, Marks};
use crate::frame::FrameView;

/// The frame table's version, in each file's metadata (`rocescope.schema`): raised whenever a
/// column is added, removed or changes type.
pub const SCHEMA_VERSION: u32 = 1;

/// The frame table's columns, in the order the field walk visits them.
#[must_use]
pub fn schema() -> Vec<Node> {
    vec![
        leaf("frame", U64),
        leaf("time_ns", U64),
        leaf("time", TimestampNs),
        leaf("len", U32),
        leaf("caplen", U32),
        leaf("truncated", Bool),
        leaf("file", Str),
        flat(
            "erf",
            vec![
                leaf("type", U8),
                leaf("flags", U8),
                leaf("rlen", U16),
                leaf("lctr", U16),
                leaf("wlen", U16),
                list_leaf("ext", U8),
            ],
        ),
        flat("ipoib", vec![leaf("type", U16)]),
        flat("lrh", lrh()),
        list_of("outer", outer()),
        flat(
            "eth",
            vec![
                leaf("src", Str),
                leaf("dst", Str),
                leaf("type", U16),
                list_of("vlan", vlan()),
            ],
        ),
        flat("pause", vec![leaf("quanta", U16)]),
        flat("pfc", vec![leaf("enable", U16), list_leaf("quanta", U16)]),
        flat("macc", vec![leaf("opcode", U16)]),
        flat("ipv4", ipv4()),
        flat("ipv6", ipv6()),
        flat(
            "grh",
            vec![
                leaf("sgid", Str),
                leaf("dgid", Str),
                leaf("tclass", U8),
                leaf("flow_label", U32),
                leaf("hop_limit", U8),
                leaf("next", U8),
            ],
        ),
        flat("udp", udp()),
        flat(
            "tcp",
            vec![
                leaf("srcport", U16),
                leaf("dstport", U16),
                leaf("seq", U32),
                leaf("ack", U32),
                leaf("flags", U16),
                leaf("window", U16),
                leaf("ts_val", U32),
                leaf("ts_ecr", U32),
            ],
        ),
        flat(
            "tcp_bth",
            vec![
                leaf("format", Str),
                leaf("exid", U16),
                leaf("opcode", U8),
                leaf("opcode_name", Str),
                leaf("msn", U16),
                leaf("mbo", U32),
                leaf("seg", U8),
                leaf("more", Bool),
                leaf("imm", U32),
                leaf("mlen", U32),
                leaf("icrc", U32),
                leaf("icrc_valid", Bool),
            ],
        ),
        flat(
            "bth",
            vec![
                leaf("opcode", U8),
                leaf("opcode_name", Str),
                leaf("se", Bool),
                leaf("m", Bool),
                leaf("padcnt", U8),
                leaf("tver", U8),
                leaf("pkey", U16),
                leaf("fecn", Bool),
                leaf("becn", Bool),
                leaf("destqp", U32),
                leaf("ackreq", Bool),
                leaf("psn", U32),
            ],
        ),
        flat("rdeth", vec![leaf("eecnxt", U32)]),
        flat("deth", vec![leaf("qkey", U32), leaf("srcqp", U32)]),
        flat("xrceth", vec![leaf("srqn", U32)]),
        flat(
            "reth",
            vec![leaf("va", U64), leaf("rkey", U32), leaf("dmalen", U32)],
        ),
        flat(
            "atomiceth",
            vec![
                leaf("va", U64),
                leaf("rkey", U32),
                leaf("swap_add", U64),
                leaf("compare", U64),
            ],
        ),
        flat(
            "aeth",
            vec![
                leaf("syndrome", U8),
                leaf("kind", Str),
                leaf("credit", U8),
                leaf("timer_us", U32),
                leaf("nak_code", U8),
                leaf("msn", U32),
            ],
        ),
        flat("atomicacketh", vec![leaf("orig", U64)]),
        flat("feth", vec![leaf("plt", U8), leaf("sel", U8)]),
        leaf("immdt", U32),
        leaf("ieth", U32),
        present("cnp"),
        flat(
            "dc",
            vec![
                leaf("sid_owner", Bool),
                leaf("sid", U32),
                leaf("dci_dct", U32),
                leaf("raw", U64),
            ],
        ),
        flat(
            "dcceth",
            vec![leaf("reconnect", Bool), leaf("access_key", U64)],
        ),
        flat(
            "mad",
            vec![
                leaf("base_version", U8),
                leaf("mgmt_class", U8),
                leaf("class_name", Str),
                leaf("class_version", U8),
                leaf("method", U8),
                leaf("method_name", Str),
                leaf("status", U16),
                leaf("tid", U64),
                leaf("attribute_id", U16),
                leaf("attribute_name", Str),
                leaf("attribute_modifier", U32),
            ],
        ),
        flat(
            "cm",
            vec![
                leaf("attribute", Str),
                leaf("attribute_id", U16),
                leaf("transaction_id", U64),
                leaf("local_comm_id", U32),
                leaf("remote_comm_id", U32),
                leaf("local_qpn", U32),
                leaf("remote_qpn", U32),
                leaf("starting_psn", U32),
                leaf("path_mtu", U16),
                leaf("service_id", U64),
                leaf("pkey", U16),
                leaf("retry_count", U8),
                leaf("rnr_retry_count", U8),
                leaf("responder_resources", U8),
                leaf("reject_reason", U16),
            ],
        ),
        leaf("payload_len", U32),
        flat(
            "icrc",
            vec![
                leaf("value", U32),
                leaf("computed", U32),
                leaf("valid", Bool),
            ],
        ),
        flat(
            "vcrc",
            vec![
                leaf("value", U16),
                leaf("computed", U16),
                leaf("valid", Bool),
            ],
        ),
        list_leaf("errors", Str),
        list_leaf("marks", Str),
    ]
}

fn lrh() -> Vec<Node> {
    vec![
        leaf("vl", U8),
        leaf("lver", U8),
        leaf("sl", U8),
        leaf("lnh", U8),
        leaf("dlid", U16),
        leaf("pktlen", U16),
        leaf("slid", U16),
    ]
}

fn vlan() -> Vec<Node> {
    vec![
        leaf("tpid", U16),
        leaf("pcp", U8),
        leaf("dei", Bool),
        leaf("vid", U16),
    ]
}

fn ipv4() -> Vec<Node> {
    vec![
        leaf("src", Str),
        leaf("dst", Str),
        leaf("dscp", U8),
        leaf("ecn", U8),
        leaf("ttl", U8),
        leaf("id", U16),
        leaf("len", U16),
        leaf("proto", U8),
    ]
}

fn ipv6() -> Vec<Node> {
    vec![
        leaf("src", Str),
        leaf("dst", Str),
        leaf("dscp", U8),
        leaf("ecn", U8),
        leaf("flow_label", U32),
        leaf("hop_limit", U8),
        leaf("len", U16),
        leaf("next", U8),
    ]
}

fn udp() -> Vec<Node> {
    vec![leaf("srcport", U16), leaf("dstport", U16), leaf("len", U16)]
}

/// One encapsulating layer: a struct with one member per kind, only one of them set.
fn outer() -> Vec<Node> {
    vec![
        object(
            "eth",
            vec![leaf("src", Str), leaf("dst", Str), leaf("type", U16)],
        ),
        object("ipv4", ipv4()),
        object("ipv6", ipv6()),
        object("udp", udp()),
        object(
            "gre",
            vec![
                leaf("flags", U16),
                leaf("proto", U16),
                leaf("checksum", U32),
                leaf("key", U32),
                leaf("seq", U32),
            ],
        ),
        object(
            "erspan",
            vec![
                leaf("version", U8),
                leaf("vlan", U16),
                leaf("cos", U8),
                leaf("encap", U8),
                leaf("bso", U8),
                leaf("truncated", Bool),
                leaf("session", U16),
                leaf("index", U32),
                leaf("timestamp", U32),
                leaf("sgt", U16),
                leaf("p", Bool),
                leaf("ft", U8),
                leaf("hw", U8),
                leaf("direction", U8),
                leaf("gra", U8),
                leaf("platform", U8),
            ],
        ),
        object("vxlan", vec![leaf("flags", U16), leaf("vni", U32)]),
        object(
            "geneve",
            vec![
                leaf("vni", U32),
                leaf("proto", U16),
                list_of(
                    "options",
                    vec![leaf("class", U16), leaf("type", U8), leaf("length", U8)],
                ),
            ],
        ),
        list_of(
            "mpls",
            vec![
                leaf("label", U32),
                leaf("tc", U8),
                leaf("s", Bool),
                leaf("ttl", U8),
            ],
        ),
    ]
}

/// Columns with a value of their own in (almost) every row: no dictionary for them.
pub const UNIQUE: [&str; 20] = [
    "frame",
    "time_ns",
    "time",
    "ipv4_id",
    "tcp_seq",
    "tcp_ack",
    "tcp_ts_val",
    "tcp_ts_ecr",
    "tcp_bth_icrc",
    "bth_psn",
    "reth_va",
    "atomiceth_va",
    "atomiceth_swap_add",
    "atomiceth_compare",
    "atomicacketh_orig",
    "aeth_msn",
    "icrc_value",
    "icrc_computed",
    "vcrc_value",
    "vcrc_computed",
];

/// The `marks` column of a group of frames, from their numbers (rising, as a capture streams).
#[must_use]
pub fn marks_fill(mut marks: FrameMarks) -> Fill {
    Box::new(move |frames: &UInt64Array| -> ArrayRef {
        let mut list = ListBuilder::new(StringBuilder::new());
        for frame in frames.values() {
            for name in marks.next_frame(*frame).names() {
                list.values().append_value(name);
            }
            list.append(true);
        }
        Arc::new(list.finish())
    })
}

/// Frames gathered into the table, one row each.
pub struct FrameRows {
    table: Table,
    /// The capture each input index came from, as given on the command line.
    files: Vec<String>,
}

impl FrameRows {
    #[must_use]
    pub fn new(files: Vec<String>) -> FrameRows {
        FrameRows {
            table: Table::new(&schema()),
            files,
        }
    }

    /// Where the `marks` and `frame` columns are among the top-level fields (for the encoder,
    /// which fills `marks` in from `frame` when the replay is done).
    ///
    /// # Errors
    /// Never for this schema (both columns are in it).
    pub fn marks_and_frame_fields(&self) -> anyhow::Result<(usize, usize)> {
        let schema = self.table.schema();
        Ok((schema.index_of("marks")?, schema.index_of("frame")?))
    }

    /// The table the rows go to (for its schema, row count and batches).
    pub fn table(&mut self) -> &mut Table {
        &mut self.table
    }

    /// Add one frame with its analysis marks (`None`: not known, a null `marks`).
    pub fn frame(&mut self, view: &FrameView<'_>, marks: Option<Marks>) {
        let t = &mut self.table;
        let f = &view.frame;
        t.begin_row();
        t.value(Key::Static("frame"), Cell::Uint(f.number));
        t.value(Key::Static("time_ns"), Cell::Uint(f.time_ns));
        t.value(Key::Static("time"), Cell::Uint(f.time_ns));
        t.value(Key::Static("len"), Cell::Uint(u64::from(view.wire_len())));
        t.value(
            Key::Static("caplen"),
            Cell::Uint(u64::from(view.captured_len())),
        );
        t.value(Key::Static("truncated"), Cell::Bool(view.truncated));
        let file = self
            .files
            .get(usize::from(f.input))
            .map_or("", String::as_str);
        t.value(Key::Static("file"), Cell::Str(file));
        if let Some(d) = &view.dissected {
            pretty::visit(d, &mut Walk(t));
        }
        t.begin_list(Key::Static("errors"));
        if let Some(p) = &view.problem {
            t.value("", Cell::Text(p));
        }
        t.end();
        if let Some(marks) = marks {
            t.begin_list(Key::Static("marks"));
            for name in marks.names() {
                t.value("", Cell::Str(name));
            }
            t.end();
        }
    }
}

/// The field walk into the table: objects, lists and fields as the JSONL has them.
struct Walk<'t>(&'t mut Table);

impl Visitor for Walk<'_> {
    fn begin(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.0.begin_object(Key::Static(key));
    }
    fn end(&mut self) {
        self.0.end();
    }
    fn begin_list(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.0.begin_list(Key::Static(key));
    }
    fn end_list(&mut self) {
        self.0.end();
    }
    fn field(
        &mut self,
        key: &'static str,
        _label: &'static str,
        value: Value<'_>,
        _range: Range<usize>,
    ) {
        let key = Key::Static(key);
        let cell = match value {
            Value::Uint(x) | Value::Hex(x, _) => Cell::Uint(x),
            Value::Bool(b) => Cell::Bool(b),
            Value::Str(s) => Cell::Str(s),
            Value::Null => Cell::Null,
            // As the JSONL writes them: addresses in their usual text form.
            Value::Mac(m) => Cell::Mac(m),
            Value::Ipv4(a) => Cell::Ipv4(a.octets()),
            Value::Ipv6(_) => {
                self.0.value(key, Cell::Text(&value));
                return;
            }
        };
        self.0.value(key, cell);
    }
}
