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
use crate::replay::pfc::PfcRow;
use crate::replay::{Finding, Flow, Replay};
use crate::units::{Duration, link_speed_label};

const RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// One table cell: text, right-aligned or not, highlighted or not.
struct Cell {
    text: String,
    right: bool,
    hot: bool,
}

fn cell(text: impl Into<String>) -> Cell {
    Cell {
        text: text.into(),
        right: false,
        hot: false,
    }
}

fn num(v: u64) -> Cell {
    Cell {
        text: v.to_string(),
        right: true,
        hot: false,
    }
}

/// A problem counter: highlighted when non-zero.
fn bad(v: u64) -> Cell {
    Cell {
        text: v.to_string(),
        right: true,
        hot: v > 0,
    }
}

/// A table of one row per item, columns as wide as their widest cell. The rows are made
/// twice (once to measure, once to write) rather than held: `--flows all` on a capture of
/// hundreds of thousands of flows would otherwise hold every cell of every row at once.
fn table<T>(
    out: &mut dyn Write,
    head: &[&str],
    items: &[T],
    row: impl Fn(&T) -> Vec<Cell>,
    color: bool,
) -> io::Result<()> {
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for item in items {
        for (w, c) in width.iter_mut().zip(&row(item)) {
            *w = (*w).max(c.text.chars().count());
        }
    }
    let mut line = String::new();
    for (i, (h, w)) in head.iter().zip(&width).enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        line.push_str(&format!("{h:<w$}"));
    }
    if color {
        writeln!(out, "{BOLD}{}{RESET}", line.trim_end())?;
    } else {
        writeln!(out, "{}", line.trim_end())?;
    }
    for item in items {
        line.clear();
        for (i, (c, w)) in row(item).iter().zip(&width).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let text = if c.right {
                format!("{:>w$}", c.text)
            } else {
                format!("{:<w$}", c.text)
            };
            if color && c.hot {
                line.push_str(RED);
                line.push_str(&text);
                line.push_str(RESET);
            } else {
                line.push_str(&text);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn flow_row(f: &Flow) -> Vec<Cell> {
    let c = &f.psn().counters;
    let lat = f.latency().summary();
    let psns = match (f.first_psn(), f.last_psn()) {
        (Some(a), Some(b)) => format!("{a}-{b}"),
        _ => "-".to_string(),
    };
    vec![
        num(u64::from(f.id)),
        cell(f.key.src.to_string()),
        cell(f.key.dst.to_string()),
        cell(format!("{:#08x}", f.key.dest_qp)),
        cell(f.transport_name()),
        cell(f.peer.map_or_else(|| "-".to_string(), |p| p.to_string())),
        num(f.frames),
        num(f.messages()),
        cell(psns),
        bad(c.psn_gaps),
        bad(c.lost),
        bad(c.unrecovered),
        bad(c.out_of_order),
        bad(c.duplicates),
        bad(c.retransmissions),
        bad(c.implied_timeouts),
        num(f.acks),
        bad(f.rare().naks.total()),
        num(c.read_requests),
        bad(f.rare().read_response_gaps),
        bad(f.rare().unanswered_reads),
        bad(f.ecn_ce),
        bad(f.cnps),
        bad(f.rare().icrc_errors),
        bad(c.not_captured),
        bad(f.rare().conformance.total()),
        cell(if lat.samples == 0 {
            "-".to_string()
        } else {
            format!("{}/{}", Duration(lat.p50), Duration(lat.p99))
        }),
    ]
}

/// What was lost in the network and what only the capture missed, in words.
fn loss_words(replay: &Replay) -> String {
    let (mut lost, mut unrecovered, mut missed) = (0u64, 0u64, 0u64);
    for f in &replay.flows {
        let c = &f.psn().counters;
        lost += c.lost;
        unrecovered += c.unrecovered;
        missed += c.not_captured;
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
/// worst first. Only those rows are built.
fn worst_flows(flows: &[Flow], limit: Option<usize>) -> Vec<&Flow> {
    let limit = limit.unwrap_or(usize::MAX);
    if flows.len() <= limit {
        return flows.iter().collect();
    }
    // Reverse(key): the heap's top is the least bad of those kept
    let key = |f: &Flow| {
        (
            f.psn().counters.lost,
            f.rare().naks.total(),
            f.rare().conformance.total(),
            f.ecn_ce + f.cnps,
            f.psn().counters.not_captured,
            std::cmp::Reverse(f.id),
        )
    };
    let mut heap = std::collections::BinaryHeap::with_capacity(limit + 1);
    for f in flows {
        heap.push(std::cmp::Reverse((key(f), f.id)));
        if heap.len() > limit {
            heap.pop();
        }
    }
    let mut kept: Vec<_> = heap.into_iter().map(|r| r.0).collect();
    kept.sort_by(|a, b| b.cmp(a));
    kept.into_iter()
        .map(|(_, id)| &flows[id as usize])
        .collect()
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
        table(out, &head, &listed, |f| flow_row(f), color)?;
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
        let row = |r: &PfcRow| {
            vec![
                cell(mac_text(r.src_mac)),
                num(u64::from(r.priority)),
                num(r.pause_frames),
                num(r.resume_frames),
                num(r.quanta_total),
                Cell {
                    text: Duration(r.paused_ns).to_string(),
                    right: true,
                    hot: false,
                },
                bad(r.storms),
            ]
        };
        table(out, &head, &replay.pfc, row, color)?;
    }
    writeln!(out)?;
    let shown = replay.events.len().min(cfg.events);
    writeln!(out, "Events: {} (first {shown} shown)", replay.events.len())?;
    if shown > 0 {
        let first = c.first_time_ns.unwrap_or(0);
        let head = ["frame", "time", "kind", "flow", "psn", "detail"];
        let row = |e: &Finding| {
            let rel = i128::from(e.time_ns) - i128::from(first);
            let sign = if rel < 0 { "-" } else { "" };
            let abs = rel.unsigned_abs();
            vec![
                num(e.frame),
                Cell {
                    text: format!("{sign}{}.{:09}", abs / 1_000_000_000, abs % 1_000_000_000),
                    right: true,
                    hot: false,
                },
                cell(e.kind.name()),
                cell(e.flow.map_or_else(|| "-".to_string(), |f| f.to_string())),
                cell(e.psn.map_or_else(|| "-".to_string(), |p| p.to_string())),
                cell(e.detail.to_string()),
            ]
        };
        table(out, &head, &replay.events[..shown], row, color)?;
    }
    Ok(())
}
