//! The flow table as CSV: one header row, one row per flow, the JSON keys of §6.6 flattened
//! (`naks_psn_seq_err`, `ack_latency_p50`, `recovery_max`, `conformance_repeated_nak` …;
//! empty cells for nulls), written row by row.

use std::io::{self, Write};

use super::json::{AddrTexts, FlowJson};
use crate::replay::Replay;

const HEADER: &str = "id,src,dst,destqp,transport,peer,frames,bytes,payload_bytes,first_psn,last_psn,messages,\
psn_gaps,lost,unrecovered,out_of_order,duplicates,retransmissions,implied_timeouts,acks,read_responses,\
atomic_acks,naks_psn_seq_err,naks_rnr,naks_invalid_request,naks_remote_access,naks_remote_op,naks_invalid_rd,\
read_requests,read_response_gaps,unanswered_reads,ecn_ce,cnps,throttled_by_cnps,icrc_errors,\
ack_latency_samples,ack_latency_p50,ack_latency_p99,ack_latency_max,not_captured,\
recovery_samples,recovery_p50,recovery_p99,recovery_max,\
nak_response_samples,nak_response_p50,nak_response_p99,nak_response_max,\
nak_generation_samples,nak_generation_p50,nak_generation_p99,nak_generation_max,\
timeout_wait_samples,timeout_wait_p50,timeout_wait_p99,timeout_wait_max,\
conformance_gbn_wrong_start,conformance_repeated_nak,conformance_ack_regression,\
conformance_msn_regression,conformance_read_wrong_restart,conformance_response_after_fatal_nak";

/// One row at a time, in a reused line: numbers through itoa (`write!` spent a fifth of a
/// 400,000-flow report in `fmt`).
#[derive(Default)]
struct Row {
    line: String,
}

impl Row {
    fn num(&mut self, v: impl itoa::Integer) {
        self.line.push(',');
        crate::text::push_dec(&mut self.line, v);
    }

    /// An empty cell for a null.
    fn opt(&mut self, v: Option<impl itoa::Integer>) {
        self.line.push(',');
        if let Some(v) = v {
            crate::text::push_dec(&mut self.line, v);
        }
    }

    fn text(&mut self, v: &str) {
        self.line.push(',');
        self.line.push_str(v);
    }

    fn latency(&mut self, l: &super::json::LatencyJson) {
        self.num(l.samples);
        self.opt(l.p50);
        self.opt(l.p99);
        self.opt(l.max);
    }
}

/// Write the flow table.
///
/// # Errors
/// Output errors.
pub fn write(replay: &Replay, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{HEADER}")?;
    let mut row = Row::default();
    let mut texts = AddrTexts::new(&replay.hosts);
    for (id, f) in (0..).zip(&replay.flows) {
        let j = FlowJson::new(id, f, &mut texts);
        row.line.clear();
        crate::text::push_dec(&mut row.line, j.id);
        row.text(&j.src);
        row.text(&j.dst);
        row.num(j.destqp);
        row.text(j.transport);
        row.opt(j.peer);
        for v in [j.frames, j.bytes, j.payload_bytes] {
            row.num(v);
        }
        row.opt(j.first_psn);
        row.opt(j.last_psn);
        for v in [
            j.messages,
            j.psn_gaps,
            j.lost,
            j.unrecovered,
            j.out_of_order,
            j.duplicates,
            j.retransmissions,
            j.implied_timeouts,
            j.acks,
        ] {
            row.num(v);
        }
        // the ACK latency sits between the trouble counts and `not_captured` (§6.6's order)
        let [counts @ .., not_captured] = j.trouble_counts();
        for v in counts {
            row.num(v);
        }
        row.latency(&j.ack_latency_ns);
        row.num(not_captured);
        for t in j.timings() {
            row.latency(t);
        }
        for v in j.conformance.counts() {
            row.num(v);
        }
        row.line.push('\n');
        out.write_all(row.line.as_bytes())?;
    }
    Ok(())
}
