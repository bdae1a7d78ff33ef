//! The responder side: request packets arriving in PSN order or not, ACK coalescing, NAKs
//! (one per sequence error), RNR NAKs, READ responses, atomic ACKs and CNPs for CE-marked
//! packets, sent back through the responder's NIC.

// Indexing cannot panic here: hosts, connections and faults are indexed by positions the validated
// scenario gave; QPs by positions pushed at start.
#![allow(clippy::indexing_slicing)]

use super::*;

impl Generator<'_> {
    pub(super) fn kick_resp(&mut self, c: u32) {
        if self.qps[ix(c)].resp_pending {
            return;
        }
        self.qps[ix(c)].resp_pending = true;
        self.push(self.now, Ev::RespTx(c));
    }

    pub(super) fn on_arrive(&mut self, p: Pkt) {
        if self.point == CapturePoint::Receiver {
            self.capture(p);
        }
        if p.corrupt {
            return; // the NIC discards it
        }
        let ci = ix(p.conn);
        if self.qps[ci].resp_error {
            return; // the QP is in the error state after a fatal NAK
        }
        let conn = &self.sc.connections[ci];
        if p.ce {
            let q = &mut self.qps[ci];
            if q.last_cnp
                .is_none_or(|t| self.now.saturating_sub(t) >= conn.cnp_interval_ns)
            {
                q.last_cnp = Some(self.now);
                q.resp_q.push_back(Resp::Cnp);
                self.kick_resp(p.conn);
            }
        }
        if conn.transport != TransportKind::Rc {
            return;
        }
        let Some(info) = p.opcode.info() else { return };
        let d = p.psn.distance(self.qps[ci].epsn);
        if d > 0 {
            let epsn = self.qps[ci].epsn;
            // one NAK per sequence error; the double_nak knob sends it again
            let again = self.qps[ci].nak_sent
                && self
                    .knob(
                        |k| k == FaultKind::DoubleNak,
                        Direction::Request,
                        ci,
                        epsn,
                        false,
                    )
                    .is_some();
            let q = &mut self.qps[ci];
            if !q.nak_sent || again {
                q.nak_sent = true;
                q.resp_q.push_back(Resp::Ack {
                    psn: q.epsn,
                    syndrome: Syndrome::nak(NakCode::PSN_SEQUENCE_ERROR),
                    msn: q.msn,
                });
                self.kick_resp(p.conn);
            }
            return;
        }
        if d < 0 {
            // duplicate (C9-105): replay READ / atomic, re-ACK the rest
            let q = &mut self.qps[ci];
            match info.operation {
                Operation::ReadRequest => {
                    // replay the saved READ's responses from this PSN (§5.2: it may be in
                    // the middle of an earlier READ)
                    let saved =
                        q.reads.iter().rev().find(|r| {
                            u32::try_from(p.psn.distance(r.0)).is_ok_and(|off| off < r.1)
                        });
                    if let Some(&(first, n, len)) = saved {
                        let seg = u32::try_from(p.psn.distance(first)).unwrap_or(0);
                        q.resp_q.push_back(Resp::Read {
                            first,
                            len,
                            seg,
                            n,
                            msn: q.msn,
                        });
                    }
                }
                Operation::CompareSwap | Operation::FetchAdd => {
                    q.resp_q.push_back(Resp::Atomic {
                        psn: p.psn,
                        msn: q.msn,
                    });
                }
                _ => q.resp_q.push_back(Resp::Ack {
                    psn: q.epsn.wrapping_sub(1),
                    syndrome: Syndrome::ack(conn.credits),
                    msn: q.msn,
                }),
            }
            self.kick_resp(p.conn);
            return;
        }
        // in sequence
        if info.operation == Operation::Send
            && info.position.starts_message()
            && self.qps[ci].rnr_done != Some(p.psn)
        {
            for fi in 0..self.sc.faults.len() {
                if self.sc.faults[fi].kind == FaultKind::Rnr && self.select(fi, ci, p.psn, false) {
                    let q = &mut self.qps[ci];
                    q.rnr_done = Some(p.psn);
                    q.nak_sent = true;
                    q.resp_q.push_back(Resp::Ack {
                        psn: p.psn,
                        syndrome: Syndrome::rnr_nak(conn.rnr_timer),
                        msn: q.msn,
                    });
                    self.kick_resp(p.conn);
                    return;
                }
            }
        }
        if self
            .knob(
                |k| k == FaultKind::FatalNak,
                Direction::Request,
                ci,
                p.psn,
                p.retx,
            )
            .is_some()
        {
            let q = &mut self.qps[ci];
            q.resp_error = true;
            q.resp_q.push_back(Resp::Ack {
                psn: p.psn,
                syndrome: Syndrome::nak(NakCode::REMOTE_ACCESS_ERROR),
                msn: q.msn,
            });
            self.kick_resp(p.conn);
            return;
        }
        let q = &mut self.qps[ci];
        q.nak_sent = false;
        match info.operation {
            Operation::ReadRequest => {
                q.epsn = p.psn.wrapping_add(p.consumed);
                q.msn = (q.msn + 1) & aeth::MSN_MAX;
                if q.reads.len() >= READ_HISTORY {
                    q.reads.pop_front();
                }
                q.reads.push_back((p.psn, p.consumed, p.dma_len));
                q.resp_q.push_back(Resp::Read {
                    first: p.psn,
                    len: p.dma_len,
                    seg: 0,
                    n: p.consumed,
                    msn: q.msn,
                });
                q.since_ack = 0;
            }
            Operation::CompareSwap | Operation::FetchAdd => {
                q.epsn = p.psn.wrapping_add(1);
                q.msn = (q.msn + 1) & aeth::MSN_MAX;
                q.resp_q.push_back(Resp::Atomic {
                    psn: p.psn,
                    msn: q.msn,
                });
                q.since_ack = 0;
            }
            _ => {
                q.epsn = p.psn.wrapping_add(1);
                if info.position.ends_message() {
                    q.msn = (q.msn + 1) & aeth::MSN_MAX;
                }
                q.since_ack += 1;
                if p.ack_req || (conn.ack_every > 0 && q.since_ack >= conn.ack_every) {
                    q.since_ack = 0;
                    self.ack(ci, p.psn);
                } else {
                    return;
                }
            }
        }
        self.kick_resp(p.conn);
    }

    /// An ACK of `psn` (and what the ACK knobs make of it).
    fn ack(&mut self, ci: usize, psn: Psn) {
        let credits = self.sc.connections[ci].credits;
        let msn_back = self
            .knob(
                |k| k == FaultKind::MsnRegression,
                Direction::Request,
                ci,
                psn,
                false,
            )
            .is_some();
        let regress = self.knob(
            |k| matches!(k, FaultKind::AckRegression { .. }),
            Direction::Request,
            ci,
            psn,
            false,
        );
        let q = &mut self.qps[ci];
        let msn = if msn_back {
            q.last_ack_msn.wrapping_sub(1) & aeth::MSN_MAX
        } else {
            q.msn
        };
        q.last_ack_msn = msn;
        q.resp_q.push_back(Resp::Ack {
            psn,
            syndrome: Syndrome::ack(credits),
            msn,
        });
        if let Some(FaultKind::AckRegression { back }) = regress {
            q.resp_q.push_back(Resp::Ack {
                psn: psn.wrapping_sub(back),
                syndrome: Syndrome::ack(credits),
                msn,
            });
        }
    }

    pub(super) fn on_resp_tx(&mut self, c: u32) {
        let ci = ix(c);
        let conn = &self.sc.connections[ci];
        let h = conn.responder;
        if self.host_tx_free[h] > self.now {
            self.wait_for_host(h, Waiter::Responder(c));
            return;
        }
        let q = &mut self.qps[ci];
        let Some(front) = q.resp_q.front_mut() else {
            q.resp_pending = false;
            return;
        };
        let base = Pkt {
            conn: c,
            dir: Dir::Resp,
            opcode: Opcode::RC_ACKNOWLEDGE,
            psn: Psn::new_masked(0),
            ack_req: false,
            payload: 0,
            consumed: 1,
            va: 0,
            dma_len: 0,
            syndrome: Syndrome::ack(conn.credits),
            msn: 0,
            ce: false,
            corrupt: false,
            snap: 0,
            retx: false,
            serial: 0,
        };
        let (pkt, done) = match front {
            Resp::Ack { psn, syndrome, msn } => (
                Pkt {
                    psn: *psn,
                    syndrome: *syndrome,
                    msn: *msn,
                    ..base
                },
                true,
            ),
            Resp::Atomic { psn, msn } => (
                Pkt {
                    opcode: Opcode::RC_ATOMIC_ACKNOWLEDGE,
                    psn: *psn,
                    msn: *msn,
                    ..base
                },
                true,
            ),
            Resp::Cnp => (
                Pkt {
                    opcode: Opcode::CNP,
                    ..base
                },
                true,
            ),
            Resp::Read {
                first,
                len,
                seg,
                n,
                msn,
            } => {
                let pos = position(*seg, *n);
                let opcode = match pos {
                    Position::First => Opcode::RC_RDMA_READ_RESPONSE_FIRST,
                    Position::Middle => Opcode::RC_RDMA_READ_RESPONSE_MIDDLE,
                    Position::Last => Opcode::RC_RDMA_READ_RESPONSE_LAST,
                    Position::Only => Opcode::RC_RDMA_READ_RESPONSE_ONLY,
                };
                let off = seg.saturating_mul(conn.pmtu);
                let payload = len.saturating_sub(off).min(conn.pmtu);
                let pkt = Pkt {
                    opcode,
                    psn: first.wrapping_add(*seg),
                    payload,
                    msn: *msn,
                    consumed: *n,
                    ..base
                };
                *seg += 1;
                (pkt, *seg >= *n)
            }
        };
        if done {
            q.resp_q.pop_front();
        }
        let len = self.frame_len(&pkt);
        let ser = self.ser_link(len);
        self.host_tx_free[h] = self.now + ser;
        let mut pkt = pkt;
        pkt.serial = self.serial();
        if self.point == CapturePoint::Receiver {
            self.capture(pkt);
        }
        let prio = if pkt.opcode == Opcode::CNP {
            6
        } else {
            self.sc.hosts[h].priority()
        };
        let at_switch = self.now + ser + self.sc.delay_ns;
        if !self.drops_response(&pkt) {
            let t = self.through_switch(conn.requester, prio, at_switch, ser);
            let i = self.park(pkt);
            self.push(t, Ev::AtRequester(i));
        }
        if self.qps[ci].resp_q.is_empty() {
            self.qps[ci].resp_pending = false;
        } else {
            self.push(self.now + ser, Ev::RespTx(c));
        }
    }
}
