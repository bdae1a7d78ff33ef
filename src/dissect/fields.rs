//! `dissect -T fields -e FIELD …`: tshark's field columns, printed the way tshark prints them
//! (`-E separator=…`, `header=y`, `quote=d|s|n`, `aggregator=…`, `occurrence=f|l|a`).
//!
//! A column is a Wireshark field name resolved by [`crate::filter::fields::lookup`] (the names
//! display filters take); its values are collected in one walk of the frame's field tree, in
//! tree order — the outer layers of a tunnelled frame first, as tshark lists them — and
//! printed: integers in the base the tree gives them (decimal, or hex padded to the field's
//! width: `0x000b01`), booleans as `1`/`0`, addresses as tshark writes them, times with nine
//! decimals. Several values of a column are joined by the aggregator (`,`).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::ops::Range;

use rocescope_dissectors::pretty::{Value, Visitor, visit};

pub use crate::config::{FieldsLayout, Occurrence};
use crate::filter::fields::{self, FrameField, Source};
use crate::frame::FrameView;

/// How tshark 4.0 prints an integer field in a column (`tshark -G fields`: its type and base):
/// decimal, or hex padded to the field's width whatever the tree's own base is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fmt {
    Dec,
    Hex(usize),
}

/// The integer fields `-e` takes, with tshark's printing (from `tshark -G fields`; BASE_HEX
/// and BASE_HEX_DEC print hex, BASE_DEC, BASE_DEC_HEX and the port bases decimal).
const TSHARK_FORMATS: &[(&str, Fmt)] = &[
    ("erf.flags", Fmt::Hex(2)),
    ("erf.lctr", Fmt::Dec),
    ("erf.rlen", Fmt::Dec),
    ("erf.types.type", Fmt::Dec),
    ("erf.wlen", Fmt::Dec),
    ("erspan.bso", Fmt::Dec),
    ("erspan.cos", Fmt::Dec),
    ("erspan.encap", Fmt::Dec),
    ("erspan.gra", Fmt::Dec),
    ("erspan.hw", Fmt::Dec),
    ("erspan.index", Fmt::Dec),
    ("erspan.sgt", Fmt::Dec),
    ("erspan.spanid", Fmt::Dec),
    ("erspan.timestamp", Fmt::Dec),
    ("erspan.truncated", Fmt::Dec),
    ("erspan.version", Fmt::Dec),
    ("erspan.vlan", Fmt::Dec),
    ("frame.cap_len", Fmt::Dec),
    ("frame.len", Fmt::Dec),
    ("frame.number", Fmt::Dec),
    ("geneve.option.class", Fmt::Hex(4)),
    ("geneve.option.type", Fmt::Hex(2)),
    ("geneve.proto_type", Fmt::Hex(4)),
    ("geneve.vni", Fmt::Hex(6)),
    ("gre.checksum", Fmt::Hex(4)),
    ("gre.flags_and_version", Fmt::Hex(4)),
    ("gre.key", Fmt::Hex(8)),
    ("gre.proto", Fmt::Hex(4)),
    ("gre.sequence_number", Fmt::Dec),
    ("infiniband.aeth.msn", Fmt::Dec),
    ("infiniband.aeth.syndrome", Fmt::Dec),
    ("infiniband.atomicacketh.origremdt", Fmt::Dec),
    ("infiniband.atomiceth.cmpdt", Fmt::Dec),
    ("infiniband.atomiceth.swapdt", Fmt::Dec),
    ("infiniband.bth.destqp", Fmt::Hex(6)),
    ("infiniband.bth.opcode", Fmt::Dec),
    ("infiniband.bth.p_key", Fmt::Dec),
    ("infiniband.bth.padcnt", Fmt::Dec),
    ("infiniband.bth.psn", Fmt::Dec),
    ("infiniband.bth.tver", Fmt::Dec),
    ("infiniband.deth.q_key", Fmt::Hex(16)),
    ("infiniband.deth.srcqp", Fmt::Hex(8)),
    ("infiniband.grh.flowlabel", Fmt::Dec),
    ("infiniband.grh.hoplmt", Fmt::Dec),
    ("infiniband.grh.nxthdr", Fmt::Dec),
    ("infiniband.grh.tclass", Fmt::Dec),
    ("infiniband.invariant.crc", Fmt::Hex(8)),
    ("infiniband.lrh.dlid", Fmt::Dec),
    ("infiniband.lrh.lnh", Fmt::Hex(2)),
    ("infiniband.lrh.lver", Fmt::Dec),
    ("infiniband.lrh.pktlen", Fmt::Dec),
    ("infiniband.lrh.sl", Fmt::Dec),
    ("infiniband.lrh.slid", Fmt::Dec),
    ("infiniband.lrh.vl", Fmt::Hex(2)),
    ("infiniband.mad.attributeid", Fmt::Hex(4)),
    ("infiniband.mad.attributemodifier", Fmt::Hex(8)),
    ("infiniband.mad.baseversion", Fmt::Hex(2)),
    ("infiniband.mad.classversion", Fmt::Hex(2)),
    ("infiniband.mad.method", Fmt::Hex(2)),
    ("infiniband.mad.mgmtclass", Fmt::Hex(2)),
    ("infiniband.mad.status", Fmt::Hex(4)),
    ("infiniband.mad.transactionid", Fmt::Hex(16)),
    ("infiniband.rdeth.eecnxt", Fmt::Dec),
    ("infiniband.reth.dmalen", Fmt::Dec),
    ("infiniband.reth.r_key", Fmt::Hex(8)),
    ("infiniband.reth.va", Fmt::Hex(16)),
    ("infiniband.variant.crc", Fmt::Hex(4)),
    ("ip.dsfield.dscp", Fmt::Dec),
    ("ip.dsfield.ecn", Fmt::Dec),
    ("ip.id", Fmt::Hex(4)),
    ("ip.len", Fmt::Dec),
    ("ip.proto", Fmt::Dec),
    ("ip.ttl", Fmt::Dec),
    ("ipv6.flow", Fmt::Hex(6)),
    ("ipv6.hlim", Fmt::Dec),
    ("ipv6.nxt", Fmt::Dec),
    ("ipv6.plen", Fmt::Dec),
    ("ipv6.tclass.dscp", Fmt::Dec),
    ("ipv6.tclass.ecn", Fmt::Dec),
    ("macc.cbfc.enbv", Fmt::Hex(4)),
    ("macc.cbfc.pause_time.c0", Fmt::Dec),
    ("macc.cbfc.pause_time.c1", Fmt::Dec),
    ("macc.cbfc.pause_time.c2", Fmt::Dec),
    ("macc.cbfc.pause_time.c3", Fmt::Dec),
    ("macc.cbfc.pause_time.c4", Fmt::Dec),
    ("macc.cbfc.pause_time.c5", Fmt::Dec),
    ("macc.cbfc.pause_time.c6", Fmt::Dec),
    ("macc.cbfc.pause_time.c7", Fmt::Dec),
    ("macc.opcode", Fmt::Hex(4)),
    ("macc.pause_time", Fmt::Dec),
    ("mpls.bottom", Fmt::Dec),
    ("mpls.exp", Fmt::Dec),
    ("mpls.label", Fmt::Dec),
    ("mpls.ttl", Fmt::Dec),
    ("tcp.options.timestamp.tsecr", Fmt::Dec),
    ("tcp.options.timestamp.tsval", Fmt::Dec),
    ("tcp.port", Fmt::Dec),
    ("udp.length", Fmt::Dec),
    ("udp.port", Fmt::Dec),
    ("vlan.id", Fmt::Dec),
    ("vlan.priority", Fmt::Dec),
    ("vxlan.flags", Fmt::Hex(4)),
    ("vxlan.vni", Fmt::Dec),
];

fn tshark_format(name: &str) -> Option<Fmt> {
    TSHARK_FORMATS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, f)| f)
}

/// One `-e` column.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    source: Source,
    /// tshark's printing, for an integer field.
    format: Option<Fmt>,
    /// Tree paths (dotted, list keys left out) whose values the column takes.
    paths: Vec<String>,
}

/// A column's values in one frame: their text back to back, and where each ends (reused from
/// frame to frame, so nothing is allocated once the buffers have grown).
#[derive(Debug, Clone, Default)]
struct Values {
    text: String,
    ends: Vec<usize>,
}

impl Values {
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Ends the value written into `text` since the last one.
    fn close(&mut self) {
        self.ends.push(self.text.len());
    }

    fn get(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(prev) => self.ends.get(prev).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or_default()
    }
}

/// Writes `-T fields` lines.
#[derive(Debug)]
pub struct FieldsWriter {
    columns: Vec<Column>,
    layout: FieldsLayout,
    /// Per column, the values of the frame being written.
    values: Vec<Values>,
    line: String,
    /// The tree walk's stacks, kept between frames.
    keys: Vec<&'static str>,
    path: String,
    item: Vec<u32>,
}

impl FieldsWriter {
    /// The columns `names` (checked by the config; unknown ones print nothing).
    #[must_use]
    pub fn new(names: &[String], layout: FieldsLayout) -> Self {
        let columns: Vec<Column> = names
            .iter()
            .map(|n| {
                let source = fields::column(n).unwrap_or(Source::Paths(&[]));
                let mut paths = Vec::new();
                let base: Vec<&str> = match source {
                    Source::Paths(p) => p.to_vec(),
                    Source::Item(p, _) | Source::Bit(p, _) | Source::Swapped(p, _) => vec![p],
                    Source::MaccOpcode => vec!["macc.opcode", "pause.quanta", "pfc.enable"],
                    Source::Frame(_) => Vec::new(),
                };
                for p in base {
                    let first = p.split('.').next().unwrap_or_default();
                    if fields::ALSO_OUTER.contains(&first) {
                        paths.push(format!("outer.{p}"));
                    }
                    paths.push((*p).to_owned());
                }
                Column {
                    name: n.clone(),
                    source,
                    format: tshark_format(n),
                    paths,
                }
            })
            .collect();
        let values = vec![Values::default(); columns.len()];
        FieldsWriter {
            columns,
            layout,
            values,
            line: String::new(),
            keys: Vec::new(),
            path: String::new(),
            item: Vec::new(),
        }
    }

    /// The header line (`-E header=y`).
    ///
    /// # Errors
    /// Those of `out`.
    pub fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        if !self.layout.header {
            return Ok(());
        }
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        writeln!(out, "{}", names.join(&self.layout.separator))
    }

    /// One frame's line.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        for v in &mut self.values {
            v.clear();
        }
        for (c, vals) in self.columns.iter().zip(self.values.iter_mut()) {
            if matches!(c.source, Source::Frame(_)) {
                frame_value(c, view, &mut vals.text);
                vals.close();
            }
        }
        if let Some(d) = view.dissected.as_ref() {
            self.keys.clear();
            self.path.clear();
            self.item.clear();
            let mut walk = Collect {
                columns: &self.columns,
                values: &mut self.values,
                keys: &mut self.keys,
                path: &mut self.path,
                item: &mut self.item,
            };
            visit(d, &mut walk);
        }
        self.line.clear();
        for (i, vals) in self.values.iter().enumerate() {
            if i > 0 {
                self.line.push_str(&self.layout.separator);
            }
            let n = vals.ends.len();
            let chosen = match self.layout.occurrence {
                Occurrence::All => 0..n,
                Occurrence::First => 0..n.min(1),
                Occurrence::Last => n.saturating_sub(1)..n,
            };
            if chosen.is_empty() {
                continue;
            }
            if let Some(q) = self.layout.quote {
                self.line.push(q);
            }
            for (k, v) in chosen.enumerate() {
                if k > 0 {
                    self.line.push_str(&self.layout.aggregator);
                }
                self.line.push_str(vals.get(v));
            }
            if let Some(q) = self.layout.quote {
                self.line.push(q);
            }
        }
        self.line.push('\n');
        out.write_all(self.line.as_bytes())
    }
}

/// A frame-metadata column's value, into `out`.
fn frame_value(c: &Column, view: &FrameView<'_>, out: &mut String) {
    let Source::Frame(f) = c.source else {
        return;
    };
    let _ = match (f, c.name.as_str()) {
        (_, "frame.time_epoch") => seconds(i128::from(view.frame.time_ns), out),
        (_, "frame.time_relative") => seconds(view.rel_ns, out),
        (FrameField::Number, _) => write!(out, "{}", view.frame.number),
        (FrameField::Len, _) => write!(out, "{}", view.wire_len()),
        (FrameField::CapLen, _) => write!(out, "{}", view.captured_len()),
        (FrameField::TimeNs, _) => write!(out, "{}", view.frame.time_ns),
    };
}

/// Nanoseconds as tshark prints a time: seconds with nine decimals.
fn seconds(ns: i128, out: &mut String) -> std::fmt::Result {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    write!(
        out,
        "{sign}{}.{:09}",
        ns / 1_000_000_000,
        ns % 1_000_000_000
    )
}

/// A value as tshark prints it in a field column.
fn tshark_text(v: Value<'_>, format: Option<Fmt>, out: &mut String) {
    match (v, format) {
        (Value::Uint(n) | Value::Hex(n, _), Some(Fmt::Dec)) => {
            let _ = write!(out, "{n}");
            return;
        }
        (Value::Uint(n) | Value::Hex(n, _), Some(Fmt::Hex(digits))) => {
            let _ = write!(out, "{n:#0width$x}", width = digits + 2);
            return;
        }
        _ => {}
    }
    match v {
        Value::Bool(b) => out.push(if b { '1' } else { '0' }),
        Value::Null => {}
        v => {
            let _ = write!(out, "{v}");
        }
    }
}

/// The visitor: the dotted path of every field, its value kept by the columns that take it.
struct Collect<'a> {
    columns: &'a [Column],
    values: &'a mut [Values],
    keys: &'a mut Vec<&'static str>,
    path: &'a mut String,
    /// Per open list: the index of its next item.
    item: &'a mut Vec<u32>,
}

impl Collect<'_> {
    fn rebuild(&mut self) {
        self.path.clear();
        for k in self.keys.iter() {
            if k.is_empty() {
                continue;
            }
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(k);
        }
    }
}

impl Visitor for Collect<'_> {
    fn begin(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        if key.is_empty()
            && let Some(n) = self.item.last_mut()
        {
            *n += 1;
        }
        self.keys.push(key);
        self.rebuild();
    }

    fn end(&mut self) {
        self.keys.pop();
        self.rebuild();
    }

    fn begin_list(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.keys.push(key);
        self.item.push(0);
        self.rebuild();
    }

    fn end_list(&mut self) {
        self.keys.pop();
        self.item.pop();
        self.rebuild();
    }

    fn field(
        &mut self,
        key: &'static str,
        _label: &'static str,
        value: Value<'_>,
        _range: Range<usize>,
    ) {
        let item = if key.is_empty() {
            self.item.last_mut().map(|n| {
                *n += 1;
                *n - 1
            })
        } else {
            None
        };
        let full_len = self.path.len();
        if !key.is_empty() {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
        }
        for (c, vals) in self.columns.iter().zip(self.values.iter_mut()) {
            if !c.paths.contains(self.path) {
                continue;
            }
            let text = &mut vals.text;
            match c.source {
                Source::Item(_, want) => {
                    if item != Some(want) {
                        continue;
                    }
                    tshark_text(value, c.format, text);
                }
                Source::Bit(_, bit) => {
                    let set = value.as_u64().is_some_and(|v| v >> bit & 1 == 1);
                    text.push(if set { '1' } else { '0' });
                }
                Source::Swapped(_, bytes) => {
                    let Some(v) = value.as_u64() else { continue };
                    let (v, digits) = if bytes == 2 {
                        (u64::from((v as u16).swap_bytes()), 4)
                    } else {
                        (u64::from((v as u32).swap_bytes()), 8)
                    };
                    let _ = write!(text, "{v:#0width$x}", width = digits + 2);
                }
                Source::MaccOpcode => {
                    let code = match self.path.as_str() {
                        p if p.starts_with("pause") => 0x0001,
                        p if p.starts_with("pfc") => 0x0101,
                        _ => value.as_u64().unwrap_or(0),
                    };
                    if !vals.ends.is_empty() {
                        continue; // one opcode per frame
                    }
                    let _ = write!(text, "{code:#06x}");
                }
                _ => tshark_text(value, c.format, text),
            }
            vals.close();
        }
        self.path.truncate(full_len);
    }
}
