//! `tcp_bth` over TCP (interfaces.md §7, tcp_bth.md §d): per TCP connection
//! direction, the TCP-level classification of data segments (§d.1 step 4)
//! and message reassembly from MSN/MBO/MLEN (§d.1 steps 5–6).
//!
//! Classification of a data segment carrying a `tcp_bth` option, on sequence
//! numbers relative to the SYN's ISN + 1 (or the first segment seen):
//! - bytes all seen before: a retransmission when its TSval is newer than
//!   every TSval seen in the direction, else a duplicate;
//! - starting beyond the highest byte seen: it opens a gap;
//! - never seen and below the highest byte seen: a late fill, a
//!   retransmission when its TSval is newer, else a reordered original.
//!
//! Consistency checks counted in `anomalies`: a segment whose
//! `seq + prefix − MBO` disagrees with the message's first one (offset/seq
//! mismatch) and `MBO + data_len > MLEN` (length).

use std::collections::BTreeMap;
use std::net::IpAddr;

use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::Dissected;
use rocescope_dissectors::tcp_bth::{Format, IcrcAlgorithm};

/// One row of the report's `tcp_bth` section.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TcpBthRow {
    pub src: String,
    pub dst: String,
    pub srcport: u16,
    pub dstport: u16,
    pub segments: u64,
    pub messages: u64,
    pub gaps: u64,
    pub out_of_order: u64,
    pub retransmissions: u64,
    pub duplicates: u64,
    pub icrc_errors: u64,
    pub unrecovered: u64,
    pub anomalies: u64,
}

type Key = (IpAddr, IpAddr, u16, u16);

#[derive(Debug, Default)]
struct Dir {
    /// Raw sequence number that is relative 0.
    base: Option<u32>,
    last_raw: u32,
    last_rel: u64,
    /// Seen byte ranges (start -> end), relative.
    seen: BTreeMap<u64, u64>,
    max_end: u64,
    max_tsval: Option<u32>,
    /// MSN -> (data start, MLEN, last segment seen)
    msgs: BTreeMap<u16, (u64, u32, bool)>,
    row: Option<TcpBthRow>,
}

impl Dir {
    fn rel(&mut self, seq: u32) -> u64 {
        let base = *self.base.get_or_insert(seq);
        if self.last_rel == 0 && self.last_raw == 0 {
            self.last_raw = base;
        }
        #[allow(clippy::cast_possible_wrap)]
        let d = i64::from(seq.wrapping_sub(self.last_raw) as i32);
        let rel = self.last_rel.saturating_add_signed(d);
        if d > 0 {
            self.last_raw = seq;
            self.last_rel = rel;
        }
        rel
    }

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
        }
        at >= end
    }

    fn any_seen(&self, start: u64, end: u64) -> bool {
        self.seen.range(..end).any(|(_, &e)| e > start)
    }

    fn insert(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        let overlapping: Vec<(u64, u64)> = self
            .seen
            .range(..=end)
            .filter(|&(_, &x)| x >= start)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in overlapping {
            self.seen.remove(&a);
            s = s.min(a);
            e = e.max(b);
        }
        self.seen.insert(s, e);
    }
}

/// Bytes of extended headers before the data in a message's first segment (§c.4).
fn prefix_len(opcode: u8) -> u64 {
    match opcode {
        0x06 | 0x0A | 0x0B | 0x0C => 16,
        0x13 | 0x14 => 28,
        0x12 => 8,
        _ => 0,
    }
}

/// Per-direction `tcp_bth` state; fed every TCP frame.
#[derive(Debug, Default)]
pub struct TcpBthTracker {
    dirs: BTreeMap<Key, Dir>,
}

impl TcpBthTracker {
    /// One TCP frame; returns whether it carries a `tcp_bth` option.
    pub fn frame(&mut self, d: &Dissected<'_>) -> bool {
        let Some(tcp) = d.tcp.as_ref() else {
            return false;
        };
        let (src, dst): (IpAddr, IpAddr) = if let Some(ip) = d.ipv4() {
            (ip.src_addr().into(), ip.dst_addr().into())
        } else if let Some(ip) = d.ipv6() {
            (ip.src_addr().into(), ip.dst_addr().into())
        } else {
            return false;
        };
        let bth = d.tcp_bth();
        let key = (src, dst, tcp.src_port(), tcp.dst_port());
        let flags = tcp.flags();
        if flags.syn() {
            let dir = self.dirs.entry(key).or_default();
            if dir.base.is_none() {
                dir.base = Some(tcp.seq_number().wrapping_add(1));
            }
            return bth.is_some();
        }
        let Some(bth) = bth else {
            return false;
        };
        let h = bth.header;
        let payload_len = d.tcp_payload_len() as u64;
        if payload_len == 0 || !matches!(h.format(), Some(Format::V1 | Format::Enf)) {
            return true;
        }
        let dir = self.dirs.entry(key).or_default();
        let row = dir.row.get_or_insert_with(|| TcpBthRow {
            src: src.to_string(),
            dst: dst.to_string(),
            srcport: key.2,
            dstport: key.3,
            segments: 0,
            messages: 0,
            gaps: 0,
            out_of_order: 0,
            retransmissions: 0,
            duplicates: 0,
            icrc_errors: 0,
            unrecovered: 0,
            anomalies: 0,
        });
        row.segments += 1;
        if matches!(
            bth.icrc_status(IcrcAlgorithm::Crc32Ieee),
            IcrcStatus::Invalid { .. }
        ) {
            row.icrc_errors += 1;
        }
        let tsval = tcp.timestamps().map(|t| t.0);
        let a0 = dir.rel(tcp.seq_number());
        let a1 = a0 + payload_len;
        let newer = match (tsval, dir.max_tsval) {
            (Some(t), Some(m)) => {
                #[allow(clippy::cast_possible_wrap)]
                let d = t.wrapping_sub(m) as i32;
                d > 0
            }
            (Some(_), None) => true,
            _ => false,
        };
        let covered = dir.covered(a0, a1);
        let gap = a0 > dir.max_end;
        let late = a0 < dir.max_end && !dir.any_seen(a0, a1);
        if let Some(row) = dir.row.as_mut() {
            if covered {
                if newer {
                    row.retransmissions += 1;
                } else {
                    row.duplicates += 1;
                }
            } else if gap {
                row.gaps += 1;
            } else if late {
                if newer {
                    row.retransmissions += 1;
                } else {
                    row.out_of_order += 1;
                }
            }
        }
        if let Some(t) = tsval {
            if newer || dir.max_tsval.is_none() {
                dir.max_tsval = Some(t);
            }
        }
        dir.insert(a0, a1);
        dir.max_end = dir.max_end.max(a1);

        // message attachment (§d.1 step 5)
        let opcode = h.opcode().0;
        let first = h.mbo() == 0;
        let prefix = if first { prefix_len(opcode) } else { 0 };
        let data_len = payload_len.saturating_sub(prefix);
        let data_start = (a0 + prefix).saturating_sub(u64::from(h.mbo()));
        let mlen = if h.format() == Some(Format::V1) {
            h.mlen()
        } else {
            u32::MAX
        };
        let mut anomalies = 0;
        if h.format() == Some(Format::V1) && u64::from(h.mbo()) + data_len > u64::from(mlen) {
            anomalies += 1;
        }
        let entry = dir.msgs.entry(h.msn()).or_insert((data_start, mlen, false));
        if entry.0 != data_start {
            anomalies += 1;
        }
        entry.2 |= !h.more();
        if let Some(row) = dir.row.as_mut() {
            row.anomalies += anomalies;
        }
        true
    }

    /// The report rows, in key order.
    #[must_use]
    pub fn rows(&self) -> Vec<TcpBthRow> {
        let mut out = Vec::new();
        for dir in self.dirs.values() {
            let Some(row) = &dir.row else {
                continue;
            };
            let mut row = row.clone();
            let mut prev = 0;
            let mut holes = 0;
            for (&s, &e) in &dir.seen {
                if s > prev {
                    holes += 1;
                }
                prev = e;
            }
            row.unrecovered = holes;
            row.messages = dir
                .msgs
                .values()
                .filter(|&&(start, mlen, last)| {
                    last && mlen != u32::MAX && dir.covered(start, start + u64::from(mlen))
                })
                .count() as u64;
            out.push(row);
        }
        out
    }
}
