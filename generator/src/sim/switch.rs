//! The switch between the two NICs: egress queues per destination and priority, the PFC pause
//! storms of the scenario, and the faults it applies to request packets (drop, duplicate,
//! reorder, corrupt, ECN CE, truncate) as the scenario's selectors pick them.

// Indexing cannot panic here: hosts, connections, faults and PFC settings are indexed by positions
// the validated scenario gave; egress slots by a 3-bit priority.
#![allow(clippy::indexing_slicing)]

use super::*;

impl Generator<'_> {
    /// Switch egress toward `dst` at priority `prio`: FIFO behind earlier
    /// packets, held while PFC pauses it. Returns when the packet has arrived.
    pub(super) fn through_switch(&mut self, dst: usize, prio: u8, ready: u64, ser: u64) -> u64 {
        let slot = dst * 8 + usize::from(prio & 7);
        let mut t = ready.max(self.egress_free[slot]);
        for &(s, e) in &self.pauses[slot] {
            if s > t {
                break;
            }
            if t < e {
                t = e;
            }
        }
        let done = t + ser;
        self.egress_free[slot] = done;
        done + self.sc.delay_ns
    }

    /// The switch: apply the faults to a request and deliver it.
    pub(super) fn switch_request(&mut self, pkt: Pkt, ci: usize, retx: bool, ser: u64) {
        let mut pkt = pkt;
        pkt.serial = self.serial();
        let conn = &self.sc.connections[ci];
        let mut out = pkt;
        let mut drop = false;
        let mut dup = false;
        let mut delay = 0;
        for fi in 0..self.sc.faults.len() {
            let f = self.sc.faults[fi];
            let kind = f.kind;
            // only what the network does to request packets acts here
            let in_switch = match kind {
                FaultKind::Drop => f.direction == Direction::Request,
                FaultKind::Duplicate
                | FaultKind::Reorder { .. }
                | FaultKind::CorruptIcrc
                | FaultKind::EcnCe
                | FaultKind::Truncate { .. } => true,
                _ => false,
            };
            if !in_switch {
                continue;
            }
            if kind == FaultKind::EcnCe && self.sc.hosts[conn.requester].ecn == 0 {
                continue;
            }
            if !self.select(fi, ci, pkt.psn, retx) {
                continue;
            }
            match kind {
                FaultKind::Drop => drop = true,
                FaultKind::Duplicate => dup = true,
                FaultKind::Reorder { delay_ns } => delay = delay_ns,
                FaultKind::CorruptIcrc => out.corrupt = true,
                FaultKind::EcnCe => out.ce = true,
                FaultKind::Truncate { snaplen } => out.snap = snaplen,
                _ => {}
            }
        }
        if self.point == CapturePoint::Sender {
            let mut seen = pkt;
            seen.snap = out.snap;
            self.capture(seen);
        }
        if drop {
            return;
        }
        let prio = self.sc.hosts[conn.requester].priority();
        let at_switch = self.now + ser + self.sc.delay_ns;
        if delay > 0 {
            // held back inside the switch, overtaken by later packets
            let t = at_switch + delay + ser + self.sc.delay_ns;
            let i = self.park(out);
            self.push(t, Ev::Arrive(i));
        } else {
            let t = self.through_switch(conn.responder, prio, at_switch, ser);
            let i = self.park(out);
            self.push(t, Ev::Arrive(i));
        }
        if dup {
            let t = self.through_switch(conn.responder, prio, at_switch, ser);
            let mut copy = out;
            copy.serial = self.serial();
            let i = self.park(copy);
            self.push(t, Ev::Arrive(i));
        }
    }

    /// The first fault or knob of `kind`'s variant (and `direction`) that selects this packet.
    pub(super) fn knob(
        &mut self,
        kind: impl Fn(FaultKind) -> bool,
        direction: Direction,
        conn: usize,
        psn: Psn,
        retx: bool,
    ) -> Option<FaultKind> {
        for fi in 0..self.sc.faults.len() {
            let f = self.sc.faults[fi];
            if kind(f.kind) && f.direction == direction && self.select(fi, conn, psn, retx) {
                return Some(f.kind);
            }
        }
        None
    }

    /// A response packet dropped in the switch (a `drop` fault with `direction = "response"`).
    pub(super) fn drops_response(&mut self, p: &Pkt) -> bool {
        self.knob(
            |k| k == FaultKind::Drop,
            Direction::Response,
            ix(p.conn),
            p.psn,
            false,
        )
        .is_some()
    }

    /// The capture point misses this packet (a `capture_drop` fault).
    pub(super) fn capture_misses(&mut self, p: &Pkt) -> bool {
        let direction = match p.dir {
            Dir::Req => Direction::Request,
            Dir::Resp => Direction::Response,
        };
        self.knob(
            |k| k == FaultKind::CaptureDrop,
            direction,
            ix(p.conn),
            p.psn,
            p.retx,
        )
        .is_some()
    }

    pub(super) fn select(&mut self, fi: usize, conn: usize, psn: Psn, retx: bool) -> bool {
        let sel: Selector = self.sc.faults[fi].select;
        let st = &mut self.faults[fi];
        if st.hits >= sel.count {
            return false;
        }
        if sel.connection.is_some_and(|c| c != conn) {
            return false;
        }
        if self.now < sel.from_ns || self.now >= sel.until_ns {
            return false;
        }
        if let Some(p) = sel.psn {
            if p != psn.value() || retx {
                return false;
            }
        }
        if let Some(e) = sel.every {
            st.seen += 1;
            if st.seen % e != 0 {
                return false;
            }
        }
        if let Some(pr) = sel.probability {
            // the capture side draws from its own stream: both taps of a scenario see one run
            let draw = if self.sc.faults[fi].kind == FaultKind::CaptureDrop {
                self.capture_rng.unit()
            } else {
                self.rng.unit()
            };
            if draw >= pr {
                return false;
            }
        }
        self.faults[fi].hits += 1;
        true
    }

    pub(super) fn on_pfc(&mut self, i: u16, k: u32) {
        let p = self.sc.pfc[usize::from(i)];
        let end = p.start_ns.saturating_add(p.duration_ns);
        if self.now < end {
            self.captured.push_back((
                self.now,
                Captured::Pfc {
                    spec: i,
                    quanta: p.quanta,
                },
            ));
            let next = self.now + p.refresh_ns;
            if next < end {
                self.push(next, Ev::Pfc(i, k + 1));
            } else if p.resume {
                self.push(end, Ev::Pfc(i, k + 1));
            }
        } else if p.resume {
            self.captured
                .push_back((self.now, Captured::Pfc { spec: i, quanta: 0 }));
        }
    }
}
