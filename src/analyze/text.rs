//! The text report: a capture header line, a line in words on what was lost in the network and
//! what only the capture missed, the flow table (non-zero problem counters highlighted; with
//! more than `--flows N` flows, the N with the most findings, worst first, and a line for the
//! rest), the PFC table, and the first `--events` events with frame numbers.

// Indexing cannot panic here: flow ids index the replay's flow table they came from; `shown` is at
// most the number of events.
#![allow(clippy::indexing_slicing)]

use std::io::{self, Write};

use super::AnalyzeConfig;
use super::json::mac_text;
use crate::replay::hosts::Hosts;
use crate::replay::pfc::PfcRow;
use crate::replay::{Finding, Flow, Replay};
use crate::units::{Duration, link_speed_label};

const RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// One row's cells, written one after another into a reused string (a row of `--flows all`
/// on hundreds of thousands of flows allocated a string per cell, twice).
#[derive(Default)]
struct Row {
    text: String,
    cells: Vec<Cell>,
}

/// Where a cell ends in [`Row::text`], right-aligned or not, highlighted or not.
struct Cell {
    end: usize,
    right: bool,
    hot: bool,
}

impl Row {
    fn clear(&mut self) {
        self.text.clear();
        self.cells.clear();
    }

    fn close(&mut self, right: bool, hot: bool) {
        self.cells.push(Cell {
            end: self.text.len(),
            right,
            hot,
        });
    }

    /// A left-aligned cell.
    fn cell(&mut self, text: &str) {
        self.text.push_str(text);
        self.close(false, false);
    }

    /// A cell written by `fmt`.
    fn fmt(&mut self, right: bool, args: std::fmt::Arguments<'_>) {
        use std::fmt::Write as _;
        let _ = self.text.write_fmt(args);
        self.close(right, false);
    }

    fn num(&mut self, v: u64) {
        crate::text::push_dec(&mut self.text, v);
        self.close(true, false);
    }

    /// A problem counter: highlighted when non-zero.
    fn bad(&mut self, v: u64) {
        crate::text::push_dec(&mut self.text, v);
        self.close(true, v > 0);
    }

    /// `v`, or `-` for none.
    fn opt(&mut self, v: Option<impl std::fmt::Display>) {
        match v {
            Some(v) => self.fmt(false, format_args!("{v}")),
            None => self.cell("-"),
        }
    }

    /// (text, cell) of each cell.
    fn cells(&self) -> impl Iterator<Item = (&str, &Cell)> {
        let mut start = 0;
        self.cells.iter().map(move |c| {
            let text = self.text.get(start..c.end).unwrap_or_default();
            start = c.end;
            (text, c)
        })
    }
}

/// A table of one row per item, columns as wide as their widest cell. The rows are made
/// twice (once to measure, once to write) rather than held: `--flows all` on a capture of
/// hundreds of thousands of flows would otherwise hold every cell of every row at once.
fn table<T>(
    out: &mut dyn Write,
    head: &[&str],
    items: &[T],
    mut row: impl FnMut(&T, &mut Row),
    color: bool,
) -> io::Result<()> {
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    let mut cells = Row::default();
    for item in items {
        cells.clear();
        row(item, &mut cells);
        for (w, (text, _)) in width.iter_mut().zip(cells.cells()) {
            *w = (*w).max(crate::text::width(text));
        }
    }
    let mut line = String::new();
    for (i, (h, w)) in head.iter().zip(&width).enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        crate::text::push_padded(&mut line, h, *w, false);
    }
    if color {
        writeln!(out, "{BOLD}{}{RESET}", line.trim_end())?;
    } else {
        writeln!(out, "{}", line.trim_end())?;
    }
    for item in items {
        cells.clear();
        row(item, &mut cells);
        line.clear();
        for (i, ((text, c), w)) in cells.cells().zip(&width).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let hot = color && c.hot;
            if hot {
                line.push_str(RED);
            }
            crate::text::push_padded(&mut line, text, *w, c.right);
            if hot {
                line.push_str(RESET);
            }
        }
        let end = line.trim_end().len();
        line.truncate(end);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

fn flow_row(id: u32, f: &Flow, hosts: &Hosts, row: &mut Row) {
    let c = f.psn().counters();
    let lat = f.latency().summary();
    row.num(u64::from(id));
    row.fmt(false, format_args!("{}", hosts.addr(f.key.src)));
    row.fmt(false, format_args!("{}", hosts.addr(f.key.dst)));
    row.fmt(false, format_args!("{:#08x}", f.key.dest_qp));
    row.cell(f.transport_name());
    row.opt(f.peer());
    row.num(f.frames);
    row.num(f.messages());
    match (f.first_psn(), f.last_psn()) {
        (Some(a), Some(b)) => row.fmt(false, format_args!("{a}-{b}")),
        _ => row.cell("-"),
    }
    for v in [
        c.psn_gaps,
        c.lost,
        c.unrecovered,
        c.out_of_order,
        c.duplicates,
        c.retransmissions,
        c.implied_timeouts,
    ] {
        row.bad(v);
    }
    let rare = f.rare();
    row.num(f.acks);
    row.bad(rare.naks.total());
    row.num(c.read_requests);
    for v in [
        rare.read_response_gaps,
        rare.unanswered_reads,
        rare.ecn_ce,
        rare.cnps,
        rare.icrc_errors,
        c.not_captured,
        rare.conformance.total(),
    ] {
        row.bad(v);
    }
    if lat.samples == 0 {
        row.cell("-");
    } else {
        row.fmt(
            false,
            format_args!("{}/{}", Duration(lat.p50), Duration(lat.p99)),
        );
    }
}

/// What was lost in the network and what only the capture missed, in words.
fn loss_words(replay: &Replay) -> String {
    let (mut lost, mut unrecovered, mut missed) = (0u64, 0u64, 0u64);
    for f in &replay.flows {
        let l = f.losses();
        lost += l.lost;
        unrecovered += l.unrecovered;
        missed += l.not_captured;
    }
    if lost == 0 && missed == 0 {
        return "Loss: none (no PSN lost in the network, none missed by the capture).".into();
    }
    let psns = |n: u64| format!("{n} PSN{}", if n == 1 { "" } else { "s" });
    let mut parts = vec![format!(
        "{} lost in the network and resent",
        psns(lost - unrecovered)
    )];
    if missed > 0 {
        parts.push(format!(
            "{} missed by the capture only (the responder acknowledged them)",
            psns(missed)
        ));
    }
    if unrecovered > 0 {
        parts.push(format!(
            "{} still missing at the end with no acknowledgement after them (the network or the capture lost them: nothing in the capture tells which)",
            psns(unrecovered)
        ));
    }
    format!("Loss: {}.", parts.join("; "))
}

/// The flows the table lists: every flow in id order when there are at most `limit`, else the
/// `limit` with the most findings (loss first, then NAKs, conformance, CE/CNP, capture loss),
/// worst first, by id. Only those rows are built.
fn worst_flows(flows: &[Flow], limit: Option<usize>) -> Vec<u32> {
    let limit = limit.unwrap_or(usize::MAX);
    if flows.len() <= limit {
        return (0..).zip(flows).map(|(id, _)| id).collect();
    }
    // A flow's key reads its rare part and, unless it ended quiet, its request side: cache
    // misses over hundreds of thousands of flows. Two halves on two threads (the replay is
    // over, the cores are free), then the worst of both. Keys end in the id, so the `limit`
    // worst are the same either way.
    let mut kept = if flows.len() >= PARALLEL_RANKING && crate::source::two_cores() {
        let (a, b) = flows.split_at(flows.len() / 2);
        let b_start = u32::try_from(a.len()).unwrap_or(u32::MAX);
        std::thread::scope(|scope| {
            let first = scope.spawn(|| worst_of(0, a, limit));
            let mut kept = worst_of(b_start, b, limit);
            match first.join() {
                Ok(k) => kept.extend(k),
                Err(panic) => std::panic::resume_unwind(panic),
            }
            kept
        })
    } else {
        worst_of(0, flows, limit)
    };
    kept.sort_by(|a, b| b.cmp(a));
    kept.truncate(limit);
    kept.into_iter().map(|(_, id)| id).collect()
}

/// Flows from which [`worst_flows`] ranks on two threads.
const PARALLEL_RANKING: usize = 1 << 16;

/// How bad a flow is, for [`worst_flows`]: loss, NAKs, conformance, CE/CNP, capture loss,
/// then the lower id.
type Badness = (u64, u64, u64, u64, u64, std::cmp::Reverse<u32>);

/// The `limit` worst of `flows` (whose ids start at `start`), with their keys, in no order.
fn worst_of(start: u32, flows: &[Flow], limit: usize) -> Vec<(Badness, u32)> {
    let key = |id: u32, f: &Flow| -> Badness {
        let losses = f.losses();
        (
            losses.lost,
            f.rare().naks.total(),
            f.rare().conformance.total(),
            f.rare().ecn_ce + f.rare().cnps,
            losses.not_captured,
            std::cmp::Reverse(id),
        )
    };
    // Reverse(key): the heap's top is the least bad of those kept
    let mut heap = std::collections::BinaryHeap::with_capacity(limit.min(flows.len()) + 1);
    for (id, f) in (start..).zip(flows) {
        let item = std::cmp::Reverse((key(id, f), id));
        // most flows are no worse than the least bad kept: not pushed only to be popped
        if heap.len() == limit && heap.peek().is_some_and(|least| item >= *least) {
            continue;
        }
        heap.push(item);
        if heap.len() > limit {
            heap.pop();
        }
    }
    heap.into_iter().map(|r| r.0).collect()
}

/// Write the text report.
///
/// # Errors
/// Output errors.
pub fn write(
    cfg: &AnalyzeConfig,
    replay: &Replay,
    out: &mut dyn Write,
    color: bool,
) -> io::Result<()> {
    let c = &replay.capture;
    let files: Vec<String> = match &cfg.live {
        Some(live) => vec![format!("live on {}", live.iface)],
        None => cfg
            .captures
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    let span = match (c.first_time_ns, c.last_time_ns) {
        (Some(a), Some(b)) => Duration(b.saturating_sub(a)).to_string(),
        _ => "0s".to_string(),
    };
    // native InfiniBand is named only when the capture has some (most are RoCE)
    let ib = if c.ib_frames > 0 {
        format!("{} InfiniBand, ", c.ib_frames)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{}: {} frames in {span} ({ib}{} RoCEv2, {} RoCEv1, {} PFC, {} PAUSE); {} truncated, {} malformed, {} ICRC errors; link {}",
        files.join(", "),
        c.frames,
        c.roce_frames,
        c.rocev1_frames,
        c.pfc_frames,
        c.pause_frames,
        c.truncated_frames,
        c.malformed_frames,
        c.icrc_errors,
        link_speed_label(cfg.link_bps),
    )?;
    if let Some(drops) = c.kernel_drops {
        writeln!(
            out,
            "capture: {drops} frames dropped by the kernel while capturing{}",
            if drops > 0 {
                " (capture drops, not network loss: a PSN gap they leave shows as not_captured where the receiver's acknowledgements were captured)"
            } else {
                ""
            }
        )?;
    }
    writeln!(out, "{}", loss_words(replay))?;
    if !replay.icrc_unreliable.is_empty() {
        let names: Vec<&str> = replay
            .icrc_unreliable
            .iter()
            .filter_map(|&i| files.get(usize::from(i)).map(String::as_str))
            .collect();
        writeln!(
            out,
            "ICRCs not the wire's in {}: every verifiable frame failed (a sniffer that copies frames before the NIC adds the ICRC); counted, and the frames sequenced anyway",
            names.join(", ")
        )?;
    }
    writeln!(out)?;
    let listed = worst_flows(&replay.flows, cfg.flows);
    writeln!(out, "Flows: {}", replay.flows.len())?;
    if !listed.is_empty() {
        let head = [
            "id",
            "src",
            "dst",
            "qp",
            "tr",
            "peer",
            "frames",
            "msgs",
            "psns",
            "gaps",
            "lost",
            "unrec",
            "ooo",
            "dup",
            "retx",
            "tmo",
            "acks",
            "naks",
            "reads",
            "rdgap",
            "unans",
            "ce",
            "cnp",
            "icrc",
            "nocap",
            "conf",
            "ack p50/p99",
        ];
        let row = |&id: &u32, row: &mut Row| {
            if let Some(f) = replay.flows.get(id as usize) {
                flow_row(id, f, &replay.hosts, row);
            }
        };
        table(out, &head, &listed, row, color)?;
        let left = replay.flows.len() - listed.len();
        if left > 0 {
            writeln!(
                out,
                "… and {left} more flow{} with fewer findings (--flows all lists every flow)",
                if left == 1 { "" } else { "s" }
            )?;
        }
    }
    if !replay.pfc.is_empty() {
        writeln!(out)?;
        writeln!(out, "PFC (source MAC, priority):")?;
        let head = [
            "src_mac", "prio", "pause", "resume", "quanta", "paused", "storms",
        ];
        let row = |r: &PfcRow, row: &mut Row| {
            row.cell(&mac_text(r.src_mac));
            row.num(u64::from(r.priority));
            row.num(r.pause_frames);
            row.num(r.resume_frames);
            row.num(r.quanta_total);
            row.fmt(true, format_args!("{}", Duration(r.paused_ns)));
            row.bad(r.storms);
        };
        table(out, &head, &replay.pfc, row, color)?;
    }
    writeln!(out)?;
    let shown = replay.events.len().min(cfg.events);
    writeln!(out, "Events: {} (first {shown} shown)", replay.events.len())?;
    if shown > 0 {
        let first = c.first_time_ns.unwrap_or(0);
        let head = ["frame", "time", "kind", "flow", "psn", "detail"];
        let row = |e: &Finding, row: &mut Row| {
            let rel = i128::from(e.time_ns) - i128::from(first);
            let sign = if rel < 0 { "-" } else { "" };
            let abs = rel.unsigned_abs();
            row.num(e.frame);
            row.fmt(
                true,
                format_args!("{sign}{}.{:09}", abs / 1_000_000_000, abs % 1_000_000_000),
            );
            row.cell(e.kind.name());
            row.opt(e.flow);
            row.opt(e.psn);
            row.fmt(false, format_args!("{}", e.detail));
        };
        table(out, &head, &replay.events[..shown], row, color)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::hosts::HostKey;

    /// Enough flows to rank on two threads, with CE marks spread over both halves (and ties):
    /// the listed flows are those a plain sort by marks (then by id) puts first.
    #[test]
    fn the_worst_flows_are_the_same_on_two_threads() {
        let n = PARALLEL_RANKING as u32 + 4_321;
        let flows: Vec<Flow> = (0..n)
            .map(|id| {
                let mut f = Flow::new(HostKey {
                    src: 0,
                    dst: 1,
                    dest_qp: id,
                });
                // a few values, many ties, the worst ones in both halves
                let marks = u64::from(id.wrapping_mul(2_654_435_761) >> 29);
                if marks > 0 {
                    f.rare_mut().ecn_ce = marks;
                }
                f
            })
            .collect();
        let mut by_sort: Vec<u32> = (0..n).collect();
        by_sort.sort_by_key(|&id| (std::cmp::Reverse(flows[id as usize].rare().ecn_ce), id));
        for limit in [1, 50, 1_000] {
            assert_eq!(
                worst_flows(&flows, Some(limit)),
                by_sort[..limit],
                "--flows {limit}"
            );
        }
        assert_eq!(worst_flows(&flows, None).len(), flows.len());
    }
}
