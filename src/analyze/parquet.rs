//! `analyze -f parquet -o DIR`: the report's tables as `DIR/capture.parquet`, `flows.parquet`,
//! `pfc.parquet`, `events.parquet` and `tcp_bth.parquet`, with the JSON report's keys as
//! columns (interfaces.md §6.6, §10) and nested objects as structs.
//!
//! Rows come from [`super::json::each_row`], the JSON report's own rows, one at a time,
//! serialized straight into the columns ([`crate::columnar::row`]); a row group is written
//! every [`REPORT_ROW_GROUP`] rows.
//!
//! Counts, times and ids are `Int64` (every engine's integer; Spark reads unsigned 64-bit
//! Parquet as a decimal), wire fields keep their narrow unsigned types (`destqp`, PSNs,
//! ports, the PFC priority).

use std::path::Path;

use anyhow::Context as _;

use super::AnalyzeConfig;
use super::json::{Section, VERSION, each_row};
use crate::columnar::ParquetFile;
use crate::columnar::columns::{Cell, Key, Table};
use crate::columnar::row::add_row;
use crate::columnar::schema::{
    Kind::{Bool, I64, Str, U8, U16, U32, U64},
    Node, leaf, list_leaf, object,
};
use crate::replay::Replay;

/// The report tables' version, in each file's metadata (`rocescope.schema`).
pub const SCHEMA_VERSION: u32 = 1;

/// Rows per row group of the report's tables. A flow row has 62 columns: 4,096 rows gather
/// about 2 MiB, and the three groups in flight (gathered, queued, encoded) stay small
/// beside the replay's own state at 400,000 flows (issue 13: 100 MiB in all). Fewer rows per
/// group would cost more in the footer, which keeps every group's column statistics.
pub const REPORT_ROW_GROUP: usize = 4096;

fn counts(names: &[&'static str]) -> Vec<Node> {
    names.iter().map(|&n| leaf(n, I64)).collect()
}

fn capture() -> Vec<Node> {
    let mut c = vec![leaf("version", U32), list_leaf("files", Str)];
    c.extend(counts(&[
        "frames",
        "roce_frames",
        "rocev1_frames",
        "ib_frames",
        "pfc_frames",
    ]));
    c.push(leaf("icrc_unreliable", Bool));
    c.extend(counts(&[
        "kernel_drops",
        "pause_frames",
        "tcp_bth_frames",
        "first_time_ns",
        "last_time_ns",
        "truncated_frames",
        "malformed_frames",
        "icrc_errors",
    ]));
    c.push(leaf("link_speed_bps", U64));
    c
}

fn timing(name: &'static str) -> Node {
    object(name, counts(&["samples", "p50", "p99", "max"]))
}

fn flows() -> Vec<Node> {
    let mut f = vec![
        leaf("id", I64),
        leaf("src", Str),
        leaf("dst", Str),
        leaf("destqp", U32),
        leaf("transport", Str),
        leaf("peer", I64),
    ];
    f.extend(counts(&["frames", "bytes", "payload_bytes"]));
    f.push(leaf("first_psn", U32));
    f.push(leaf("last_psn", U32));
    f.extend(counts(&[
        "messages",
        "psn_gaps",
        "lost",
        "unrecovered",
        "out_of_order",
        "duplicates",
        "retransmissions",
        "implied_timeouts",
        "acks",
        "read_responses",
        "atomic_acks",
    ]));
    f.push(object(
        "naks",
        counts(&[
            "psn_seq_err",
            "rnr",
            "invalid_request",
            "remote_access",
            "remote_op",
            "invalid_rd",
        ]),
    ));
    f.extend(counts(&[
        "read_requests",
        "read_response_gaps",
        "unanswered_reads",
        "ecn_ce",
        "cnps",
        "throttled_by_cnps",
        "icrc_errors",
        "not_captured",
    ]));
    for t in [
        "ack_latency_ns",
        "recovery_ns",
        "nak_response_ns",
        "nak_generation_ns",
        "timeout_wait_ns",
    ] {
        f.push(timing(t));
    }
    f.push(object(
        "conformance",
        counts(&[
            "gbn_wrong_start",
            "repeated_nak",
            "ack_regression",
            "msn_regression",
            "read_wrong_restart",
            "response_after_fatal_nak",
        ]),
    ));
    f
}

fn pfc() -> Vec<Node> {
    let mut p = vec![leaf("src_mac", Str), leaf("priority", U8)];
    p.extend(counts(&[
        "pause_frames",
        "resume_frames",
        "quanta_total",
        "paused_ns",
        "storms",
    ]));
    p
}

fn tcp_bth() -> Vec<Node> {
    let mut t = vec![
        leaf("src", Str),
        leaf("dst", Str),
        leaf("srcport", U16),
        leaf("dstport", U16),
    ];
    t.extend(counts(&[
        "segments",
        "messages",
        "gaps",
        "out_of_order",
        "retransmissions",
        "duplicates",
        "icrc_errors",
        "unrecovered",
        "not_captured",
        "partial_messages",
        "anomalies",
    ]));
    t
}

fn events() -> Vec<Node> {
    vec![
        leaf("frame", I64),
        leaf("time_ns", I64),
        leaf("kind", Str),
        leaf("flow", I64),
        leaf("psn", U32),
        leaf("detail", Str),
    ]
}

/// The report's tables: the section whose rows they hold, file name (without `.parquet`) and
/// columns, in the order written.
#[must_use]
pub fn tables() -> [(Section, &'static str, Vec<Node>); 5] {
    [
        (Section::Capture, "capture", capture()),
        (Section::Flows, "flows", flows()),
        (Section::Pfc, "pfc", pfc()),
        (Section::TcpBth, "tcp_bth", tcp_bth()),
        (Section::Events, "events", events()),
    ]
}

/// Write `replay`'s report into `dir` (created if missing), one Parquet file per table.
///
/// # Errors
/// The directory or a file cannot be created or written; files already complete stay.
pub fn write_dir(cfg: &AnalyzeConfig, replay: &Replay, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut open = Vec::new();
    for (section, name, nodes) in tables() {
        let table = Table::new(&nodes);
        let path = dir.join(format!("{name}.parquet"));
        let unique: &[&str] = if name == "events" {
            &["frame", "time_ns"]
        } else {
            &[]
        };
        let schema_name = format!("{name}/{SCHEMA_VERSION}");
        let file = ParquetFile::create(&path, &table, &schema_name, unique, None)?
            .row_group(REPORT_ROW_GROUP);
        open.push((section, table, file));
    }
    each_row(cfg, replay, |row| -> anyhow::Result<()> {
        let section = row.section();
        if let Some((_, table, file)) = open.iter_mut().find(|(s, _, _)| *s == section) {
            add_row(table, &row)?;
            if section == Section::Capture {
                table.value(Key::Static("version"), Cell::Uint(VERSION.into()));
            }
            file.write_when_full(table)?;
        }
        Ok(())
    })?;
    for (_, mut table, file) in open {
        file.close(&mut table)?;
    }
    Ok(())
}
