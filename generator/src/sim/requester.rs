//! The requester side of each connection: messages from the traffic mix, packets paced onto
//! the link, AckReq, the retransmission timer, go-back-N after a NAK or a timeout, RNR waits,
//! and the DCQCN-style rate cut on CNPs and its recovery.

// Indexing cannot panic here: hosts, connections, traffic and faults are indexed by positions the
// validated scenario gave (Scenario::from_toml checks every reference); QPs and messages by
// positions pushed at start.
#![allow(clippy::indexing_slicing)]

use super::*;

impl Generator<'_> {
    pub(super) fn generate_msg(&mut self, ci: usize) -> bool {
        let conn = &self.sc.connections[ci];
        let q = &mut self.qps[ci];
        if q.left == 0 {
            return false;
        }
        let mut r = self.rng.below(q.left);
        let mut pick = 0;
        for (k, m) in q.mix.iter().enumerate() {
            if r < m.1 {
                pick = k;
                break;
            }
            r -= m.1;
        }
        let (ti, _) = q.mix[pick];
        q.mix[pick].1 -= 1;
        q.left -= 1;
        let t = &self.sc.traffic[ti];
        let len = match &t.size {
            SizeDist::Fixed(s) => *s,
            SizeDist::Uniform { min, max } => {
                let span = u64::from(max - min) + 1;
                min + u32::try_from(self.rng.below(span)).unwrap_or(0)
            }
            SizeDist::Choice(v) => {
                let i = usize::try_from(self.rng.below(v.len() as u64)).unwrap_or(0);
                v.get(i).copied().unwrap_or(0)
            }
        };
        let pkts = len.div_ceil(conn.pmtu).max(1);
        let (npsn, npkts) = match t.op {
            OpKind::Send | OpKind::Write => (pkts, pkts),
            OpKind::Read => (pkts, 1),
            OpKind::CmpSwap | OpKind::FetchAdd => (1, 1),
        };
        let va = q.va_next;
        q.va_next = q
            .va_next
            .wrapping_add(u64::from(len.div_ceil(64).max(1)) * 64);
        q.msgs.push_back(Msg {
            op: t.op,
            imm: t.immediate,
            inval: t.invalidate,
            len,
            first: q.new_psn,
            npsn,
            npkts,
            va,
            got: 0,
            reissued: false,
        });
        q.new_psn = q.new_psn.wrapping_add(npsn);
        true
    }

    /// Point the requester at PSN `p` (go-back-N).
    pub(super) fn go_back(&mut self, c: u32, p: Psn) {
        let q = &mut self.qps[ix(c)];
        let found = q
            .msgs
            .iter()
            .position(|m| p.distance(m.first) >= 0 && p.distance(m.first.wrapping_add(m.npsn)) < 0);
        match found {
            Some(i) => {
                let m = q.msgs[i];
                q.cur = i;
                if m.op == OpKind::Read && p != m.first {
                    // a READ that got some responses is re-issued for the rest only
                    self.trim_read(c, i, p);
                    let q = &mut self.qps[ix(c)];
                    q.cur_pkt = 0;
                    q.next_psn = p;
                } else if m.npkts == 1 {
                    q.cur_pkt = 0;
                    q.next_psn = m.first;
                } else {
                    q.cur_pkt = u32::try_from(p.distance(m.first)).unwrap_or(0);
                    q.next_psn = p;
                }
            }
            None => {
                q.cur = q.msgs.len();
                q.cur_pkt = 0;
                q.next_psn = q.new_psn;
            }
        }
    }

    /// READ message `i` now starts at `p` (its responses before `p` arrived): the re-issued
    /// request asks for the rest, at the address and length the rest has.
    fn trim_read(&mut self, c: u32, i: usize, p: Psn) {
        let pmtu = self.sc.connections[ix(c)].pmtu;
        let m = &mut self.qps[ix(c)].msgs[i];
        let k = u32::try_from(p.distance(m.first))
            .unwrap_or(0)
            .min(m.npsn - 1);
        m.first = m.first.wrapping_add(k);
        m.npsn -= k;
        m.va = m.va.wrapping_add(u64::from(k) * u64::from(pmtu));
        m.len = m.len.saturating_sub(k.saturating_mul(pmtu));
        m.got = 0;
    }

    /// A READ response at `p`: in order it counts (and acknowledges what came before it); past
    /// a missing one the requester re-issues the READ from the first missing PSN (or, with the
    /// read_wrong_restart knob, from the READ's first PSN). True when it acknowledges.
    fn read_response(&mut self, c: u32, p: Psn) -> bool {
        let q = &mut self.qps[ix(c)];
        let Some(i) = q.msgs.iter().position(|m| {
            m.op == OpKind::Read
                && p.distance(m.first) >= 0
                && p.distance(m.first.wrapping_add(m.npsn)) < 0
        }) else {
            return true; // an older READ's replayed response: acknowledges as ever
        };
        let m = q.msgs[i];
        let want = m.first.wrapping_add(m.got);
        let d = p.distance(want);
        if d == 0 {
            q.msgs[i].got += 1;
            q.msgs[i].reissued = false;
            return true;
        }
        if d < 0 || m.reissued {
            return false; // a response already had, or one the re-issued READ asks for again
        }
        // a response went missing: re-issue the READ
        let wrong = self
            .knob(
                |k| k == FaultKind::ReadWrongRestart,
                Direction::Request,
                ix(c),
                m.first,
                false,
            )
            .is_some();
        let from = if wrong { m.first } else { want };
        if p.distance(self.qps[ix(c)].una) > 0 {
            let before = want.wrapping_sub(1);
            self.acked(c, before);
        }
        let q = &mut self.qps[ix(c)];
        if let Some(j) = q
            .msgs
            .iter()
            .position(|x| x.first == m.first && x.op == OpKind::Read)
        {
            q.msgs[j].got = 0;
            q.msgs[j].reissued = true;
            q.cur = j;
            q.cur_pkt = 0;
            if from != m.first {
                self.trim_read(c, j, from);
            }
            let q = &mut self.qps[ix(c)];
            q.next_psn = from;
        }
        self.kick(c);
        false
    }

    /// Everything up to and including `p` is acknowledged.
    pub(super) fn acked(&mut self, c: u32, p: Psn) {
        let timeout = 4096u64 << self.sc.connections[ix(c)].local_ack_timeout;
        let q = &mut self.qps[ix(c)];
        if p.distance(q.una) < 0 || p.distance(q.high_sent) >= 0 {
            return;
        }
        q.una = p.wrapping_add(1);
        q.retries = 0;
        let mut popped = 0;
        while let Some(m) = q.msgs.front() {
            if q.cur > popped && m.last().distance(p) <= 0 {
                q.msgs.pop_front();
                popped += 1;
            } else {
                break;
            }
        }
        q.cur -= popped.min(q.cur);
        if q.next_psn.distance(q.una) < 0 {
            let una = q.una;
            self.go_back(c, una);
        }
        let q = &mut self.qps[ix(c)];
        q.deadline = if q.high_sent.distance(q.una) > 0 {
            Some(self.now + timeout)
        } else {
            None
        };
        self.kick(c);
    }

    pub(super) fn arm_timer(&mut self, c: u32) {
        let timeout = 4096u64 << self.sc.connections[ix(c)].local_ack_timeout;
        let q = &mut self.qps[ix(c)];
        if q.deadline.is_none() {
            q.deadline = Some(self.now + timeout);
        }
        if !q.timer_event {
            q.timer_event = true;
            let at = q.deadline.unwrap_or(self.now);
            self.push(at, Ev::Timer(c));
        }
    }

    pub(super) fn on_timer(&mut self, c: u32) {
        let conn = &self.sc.connections[ix(c)];
        let q = &mut self.qps[ix(c)];
        q.timer_event = false;
        let Some(d) = q.deadline else { return };
        if q.failed {
            return;
        }
        if self.now < d {
            q.timer_event = true;
            self.push(d, Ev::Timer(c));
            return;
        }
        q.deadline = None;
        if q.high_sent.distance(q.una) <= 0 || q.rnr_wait.is_some() {
            return;
        }
        q.retries += 1;
        if conn.retry_cnt != 7 && q.retries > u32::from(conn.retry_cnt) {
            q.failed = true;
            return;
        }
        let una = q.una;
        self.go_back(c, una);
        self.kick(c);
        self.arm_timer(c);
    }

    pub(super) fn on_tx(&mut self, c: u32) {
        let ci = ix(c);
        let conn = &self.sc.connections[ci];
        self.qps[ci].tx_pending = false;
        {
            let q = &self.qps[ci];
            if q.failed || q.rnr_wait.is_some() || self.now < conn.start_ns {
                return;
            }
            if conn.transport == TransportKind::Rc
                && q.next_psn.distance(q.una) >= i32::try_from(conn.window).unwrap_or(i32::MAX)
            {
                return;
            }
        }
        let h = conn.requester;
        if self.host_tx_free[h] > self.now {
            self.qps[ci].tx_pending = true;
            self.wait_for_host(h, Waiter::Requester(c));
            return;
        }
        if self.qps[ci].cur >= self.qps[ci].msgs.len() && !self.generate_msg(ci) {
            return;
        }
        let q = &mut self.qps[ci];
        let m = q.msgs[q.cur];
        let k = q.cur_pkt;
        let pos = position(k, m.npkts);
        let opcode = opcode_for(conn.transport, m.op, pos, m.imm, m.inval);
        let payload = match m.op {
            OpKind::Send | OpKind::Write => {
                let off = k.saturating_mul(conn.pmtu);
                m.len.saturating_sub(off).min(conn.pmtu)
            }
            _ => 0,
        };
        let psn = q.next_psn;
        q.since_ackreq += 1;
        let ack_req = conn.transport == TransportKind::Rc
            && (pos.ends_message()
                || matches!(m.op, OpKind::Read | OpKind::CmpSwap | OpKind::FetchAdd)
                || (conn.ack_req_every > 0 && q.since_ackreq >= conn.ack_req_every));
        if ack_req {
            q.since_ackreq = 0;
        }
        let consumed = if m.op == OpKind::Read { m.npsn } else { 1 };
        q.next_psn = psn.wrapping_add(consumed);
        q.cur_pkt += 1;
        if q.cur_pkt >= m.npkts {
            q.cur += 1;
            q.cur_pkt = 0;
        }
        let retx = psn.distance(q.high_sent) < 0;
        if q.next_psn.distance(q.high_sent) > 0 {
            q.high_sent = q.next_psn;
        }
        if conn.transport != TransportKind::Rc {
            // Nothing acknowledges UC/UD: a sent message is done.
            while q.cur > 0 {
                q.msgs.pop_front();
                q.cur -= 1;
            }
            q.una = q.next_psn;
        }
        let pkt = Pkt {
            conn: c,
            dir: Dir::Req,
            opcode,
            psn,
            ack_req,
            payload,
            consumed,
            va: m.va.wrapping_add(u64::from(k) * u64::from(conn.pmtu)),
            dma_len: m.len,
            syndrome: Syndrome(0),
            msn: 0,
            ce: false,
            corrupt: false,
            snap: 0,
            retx,
            serial: 0,
        };
        let len = self.frame_len(&pkt);
        let ser = self.ser_link(len);
        self.host_tx_free[h] = self.now + ser;
        if conn.transport == TransportKind::Rc {
            self.arm_timer(c);
        }
        self.switch_request(pkt, ci, retx, ser);
        // pacing
        let q = &mut self.qps[ci];
        // (the shortcuts give the same numbers without a division)
        let by_load = if conn.load_ppm == 1_000_000 && ser <= u64::MAX / 1_000_000 {
            ser
        } else {
            ser * 1_000_000 / u64::from(conn.load_ppm)
        };
        let by_rate = if q.rate_bps == self.sc.link_bps {
            ser
        } else {
            ser_ns(len, q.rate_bps.max(1))
        };
        q.next_tx_at = self.now + by_load.max(by_rate);
        self.kick(c);
    }

    pub(super) fn on_at_requester(&mut self, p: Pkt) {
        if self.point == CapturePoint::Sender {
            self.capture(p);
        }
        let c = p.conn;
        let ci = ix(c);
        if p.opcode == Opcode::CNP {
            self.on_cnp(c);
            return;
        }
        let conn = &self.sc.connections[ci];
        match p.opcode {
            Opcode::RC_ACKNOWLEDGE => match p.syndrome.kind() {
                AethKind::Ack { .. } => self.acked(c, p.psn),
                AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR) => {
                    let q = &self.qps[ci];
                    if p.psn.distance(q.una) < 0 || p.psn.distance(q.high_sent) >= 0 {
                        return;
                    }
                    let before = p.psn.wrapping_sub(1);
                    self.acked(c, before);
                    let q = &mut self.qps[ci];
                    q.retries += 1;
                    if conn.retry_cnt != 7 && q.retries > u32::from(conn.retry_cnt) {
                        q.failed = true;
                        return;
                    }
                    // the wrong_resend knob goes back past the PSN the NAK named
                    let to = match self.knob(
                        |k| matches!(k, FaultKind::WrongResend { .. }),
                        Direction::Request,
                        ci,
                        p.psn,
                        false,
                    ) {
                        Some(FaultKind::WrongResend { offset }) => p.psn.wrapping_add(offset),
                        _ => p.psn,
                    };
                    self.go_back(c, to);
                    self.kick(c);
                }
                AethKind::Nak(_) => {
                    // fatal (invalid request, remote access, remote operation): the QP moves
                    // to the error state, unless the ignore_fatal_nak knob keeps it going
                    let ignore = self
                        .knob(
                            |k| k == FaultKind::IgnoreFatalNak,
                            Direction::Request,
                            ci,
                            p.psn,
                            false,
                        )
                        .is_some();
                    if !ignore {
                        self.qps[ci].failed = true;
                    }
                }
                AethKind::RnrNak { timer_code } => {
                    let q = &self.qps[ci];
                    if p.psn.distance(q.una) < 0 || p.psn.distance(q.high_sent) >= 0 {
                        return;
                    }
                    let before = p.psn.wrapping_sub(1);
                    self.acked(c, before);
                    let q = &mut self.qps[ci];
                    q.rnr_wait = Some(p.psn);
                    q.deadline = None;
                    let wait = u64::from(aeth::rnr_timer_us(timer_code)) * 1000;
                    self.push(self.now + wait, Ev::RnrRetry(c));
                }
                AethKind::Reserved => {}
            },
            Opcode::RC_RDMA_READ_RESPONSE_FIRST
            | Opcode::RC_RDMA_READ_RESPONSE_MIDDLE
            | Opcode::RC_RDMA_READ_RESPONSE_LAST
            | Opcode::RC_RDMA_READ_RESPONSE_ONLY => {
                if self.read_response(c, p.psn) {
                    self.acked(c, p.psn);
                }
            }
            _ => self.acked(c, p.psn),
        }
    }

    pub(super) fn on_cnp(&mut self, c: u32) {
        let ci = ix(c);
        let conn = &self.sc.connections[ci];
        if !conn.dcqcn {
            return;
        }
        let min_rate = (self.sc.link_bps / 100).max(1);
        let q = &mut self.qps[ci];
        if q.last_cut
            .is_some_and(|t| self.now.saturating_sub(t) < DCQCN_CUT_GAP_NS)
        {
            return;
        }
        q.last_cut = Some(self.now);
        q.target_bps = q.rate_bps;
        let cut = q.rate_bps / 2048 * (2048 - q.alpha.min(1024));
        q.rate_bps = cut.max(q.rate_bps / 2).max(min_rate);
        q.alpha = ((q.alpha * DCQCN_G) / 1024 + (1024 - DCQCN_G)).min(1023);
        q.recover_steps = 0;
        if !q.recover_pending {
            q.recover_pending = true;
            self.push(self.now + DCQCN_PERIOD_NS, Ev::Recover(c));
        }
    }

    pub(super) fn on_recover(&mut self, c: u32) {
        let link = self.sc.link_bps;
        let q = &mut self.qps[ix(c)];
        q.recover_pending = false;
        q.alpha = q.alpha * DCQCN_G / 1024;
        q.recover_steps += 1;
        if q.recover_steps > 5 {
            q.target_bps = (q.target_bps + link / 20).min(link);
        }
        q.rate_bps = (q.rate_bps / 2 + q.target_bps / 2).min(link);
        let busy = q.left > 0 || !q.msgs.is_empty();
        if q.rate_bps < link && busy && !q.failed {
            q.recover_pending = true;
            self.push(self.now + DCQCN_PERIOD_NS, Ev::Recover(c));
        } else if !busy {
            q.rate_bps = link;
        }
    }
}

/// The opcode of a packet at `pos` of a message: the dissectors' table read backwards.
/// READs and atomics are single packets and a UD message is always a SEND ONLY; an
/// invalidate wins over immediate data, and either is dropped where no opcode carries it
/// (a WRITE with an invalidate, a FIRST with immediate data).
pub(super) fn opcode_for(
    t: TransportKind,
    op: OpKind,
    pos: Position,
    imm: bool,
    inval: bool,
) -> Opcode {
    let (transport, operation, pos) = match (t, op) {
        (TransportKind::Ud, _) => (Transport::Ud, Operation::Send, Position::Only),
        (TransportKind::Rc | TransportKind::TcpBth, op) => (Transport::Rc, operation(op), pos),
        (TransportKind::Uc, op) => (Transport::Uc, operation(op), pos),
    };
    let pos = if operation == Operation::Send || operation == Operation::RdmaWrite {
        pos
    } else {
        Position::Only
    };
    // in order of preference; scenario validation keeps every combination in the table
    let tries = [
        (false, true, inval),
        (true, false, imm),
        (false, false, true),
    ];
    tries
        .into_iter()
        .filter(|&(_, _, wanted)| wanted)
        .find_map(|(i, v, _)| Opcode::lookup(transport, operation, pos, i, v))
        .unwrap_or(Opcode::RC_SEND_ONLY)
}

pub(super) fn operation(op: OpKind) -> Operation {
    match op {
        OpKind::Send => Operation::Send,
        OpKind::Write => Operation::RdmaWrite,
        OpKind::Read => Operation::ReadRequest,
        OpKind::CmpSwap => Operation::CompareSwap,
        OpKind::FetchAdd => Operation::FetchAdd,
    }
}
