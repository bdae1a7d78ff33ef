//! PFC / 802.3x PAUSE accounting per (source MAC, priority), interfaces.md §6.4.
//!
//! Each row keeps one open pause period: a pause at `t` for `d` ns (re)sets the end to
//! `t + d` (a later frame replaces the remaining time), quanta 0 ends it at `t`. A period
//! that is still running when the next pause comes continues (no break); otherwise the old
//! period is closed into `paused_ns` and a new one starts. `paused_ns` is the union of the
//! intervals, clipped at the capture's last frame; a period longer than the storm threshold
//! is one storm.

// Indexing cannot panic here: the eight priorities index eight-entry arrays (a 3-bit value); rows
// are indexed by positions found in them.
#![allow(clippy::indexing_slicing)]

use std::collections::HashMap;

use rocescope_dissectors::mac_control::quanta_to_ns;

use super::finding::{Detail, Finding, Kind};

/// One `(source MAC, priority)` row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PfcRow {
    pub src_mac: [u8; 6],
    pub priority: u8,
    pub pause_frames: u64,
    pub resume_frames: u64,
    pub quanta_total: u64,
    pub paused_ns: u64,
    pub storms: u64,
    /// The open period: (start, end, frame that started it).
    open: Option<(u64, u64, u64)>,
}

#[derive(Debug, Clone, Default)]
pub struct PfcTable {
    rows: Vec<PfcRow>,
    index: HashMap<([u8; 6], u8), usize>,
    storm_ns: u64,
    link_bps: u64,
}

impl PfcTable {
    #[must_use]
    pub fn new(storm_ns: u64, link_bps: u64) -> Self {
        PfcTable {
            storm_ns,
            link_bps,
            ..PfcTable::default()
        }
    }

    fn row(&mut self, mac: [u8; 6], priority: u8) -> usize {
        *self.index.entry((mac, priority)).or_insert_with(|| {
            self.rows.push(PfcRow {
                src_mac: mac,
                priority,
                ..PfcRow::default()
            });
            self.rows.len() - 1
        })
    }

    /// Close row `i`'s open period at `end` (already clipped), firing a storm when long.
    fn close(&mut self, i: usize, end: u64, out: &mut Vec<Finding>) {
        let storm_ns = self.storm_ns;
        let row = &mut self.rows[i];
        if let Some((start, _, frame)) = row.open.take() {
            let len = end.saturating_sub(start);
            row.paused_ns += len;
            if len > storm_ns {
                row.storms += 1;
                out.push(Finding {
                    frame,
                    time_ns: start,
                    kind: Kind::PfcStorm,
                    flow: None,
                    psn: None,
                    detail: Detail::Storm {
                        src_mac: row.src_mac,
                        priority: row.priority,
                        ns: len,
                        threshold_ns: storm_ns,
                    },
                });
            }
        }
    }

    /// Pause (`ns > 0`) or resume (`ns == 0`) one row at `t`.
    fn act(&mut self, i: usize, frame: u64, t: u64, ns: u64, out: &mut Vec<Finding>) {
        match self.rows[i].open {
            Some((start, end, f)) if t <= end => {
                // still paused: the new frame replaces the remaining time (no break)
                let t = t.max(start);
                if ns == 0 {
                    self.rows[i].open = Some((start, t, f));
                    self.close(i, t, out);
                } else {
                    self.rows[i].open = Some((start, t + ns, f));
                }
            }
            Some((_, end, _)) => {
                self.close(i, end, out);
                if ns > 0 {
                    self.rows[i].open = Some((t, t + ns, frame));
                }
            }
            None => {
                if ns > 0 {
                    self.rows[i].open = Some((t, t + ns, frame));
                }
            }
        }
    }

    /// A PFC frame: `enable` vector and per-priority quanta (durations at the link speed).
    pub fn pfc(
        &mut self,
        mac: [u8; 6],
        frame: u64,
        t: u64,
        enable: u16,
        quanta: [u16; 8],
        out: &mut Vec<Finding>,
    ) {
        for prio in 0..8u8 {
            if enable & (1 << prio) == 0 {
                continue;
            }
            let q = quanta[usize::from(prio)];
            let d = quanta_to_ns(q, self.link_bps);
            let i = self.row(mac, prio);
            let row = &mut self.rows[i];
            row.quanta_total += u64::from(q);
            if q == 0 {
                row.resume_frames += 1;
            } else {
                row.pause_frames += 1;
            }
            out.push(Finding {
                frame,
                time_ns: t,
                kind: if q == 0 {
                    Kind::PfcResume
                } else {
                    Kind::PfcPause
                },
                flow: None,
                psn: None,
                detail: Detail::Pfc {
                    priority: prio,
                    quanta: q,
                    ns: d,
                },
            });
            self.act(i, frame, t, if q == 0 { 0 } else { d.max(1) }, out);
        }
    }

    /// An 802.3x PAUSE frame: all eight priorities of the source, for `paused_ns`/`storms` only.
    pub fn pause(
        &mut self,
        mac: [u8; 6],
        frame: u64,
        t: u64,
        quanta: u16,
        ns: u64,
        out: &mut Vec<Finding>,
    ) {
        for prio in 0..8u8 {
            let i = self.row(mac, prio);
            self.act(i, frame, t, if quanta == 0 { 0 } else { ns.max(1) }, out);
        }
    }

    /// End of the capture at `last_ns`: close the open periods, clipped there.
    pub fn finish(&mut self, last_ns: u64, out: &mut Vec<Finding>) {
        for i in 0..self.rows.len() {
            if let Some((start, end, _)) = self.rows[i].open {
                self.close(i, end.min(last_ns).max(start), out);
            }
        }
    }

    /// Rows sorted by source MAC, then priority.
    #[must_use]
    pub fn rows(&self) -> Vec<&PfcRow> {
        let mut v: Vec<&PfcRow> = self.rows.iter().collect();
        v.sort_by_key(|r| (r.src_mac, r.priority));
        v
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn q(p: usize, v: u16) -> [u16; 8] {
        let mut a = [0; 8];
        a[p] = v;
        a
    }

    #[test]
    fn union_refresh_resume_and_storm() {
        // at 512 Gbit/s one quantum is 1 ns
        let mut t = PfcTable::new(1_000, 512_000_000_000);
        let mut out = Vec::new();
        // pause p3 at 0 for 500, refreshed at 400 for 500 (no break: ends 900)
        t.pfc(MAC, 1, 0, 1 << 3, q(3, 500), &mut out);
        t.pfc(MAC, 2, 400, 1 << 3, q(3, 500), &mut out);
        // resume at 700: period 0..700
        t.pfc(MAC, 3, 700, 1 << 3, q(3, 0), &mut out);
        // pause at 2000 for 800, refreshed at 2700 and 3400: 2000..4200 > 1000: a storm
        t.pfc(MAC, 4, 2000, 1 << 3, q(3, 800), &mut out);
        t.pfc(MAC, 5, 2700, 1 << 3, q(3, 800), &mut out);
        t.pfc(MAC, 6, 3400, 1 << 3, q(3, 800), &mut out);
        // clipped at the last frame, 4000
        t.finish(4000, &mut out);
        let rows = t.rows();
        assert_eq!(rows.len(), 1);
        let r = rows[0];
        assert_eq!(
            (r.pause_frames, r.resume_frames, r.quanta_total),
            (5, 1, 3400)
        );
        assert_eq!(r.paused_ns, 700 + 2000);
        assert_eq!(r.storms, 1);
        assert_eq!(out.iter().filter(|f| f.kind == Kind::PfcStorm).count(), 1);
    }

    #[test]
    fn pause_frame_pauses_all_priorities() {
        let mut t = PfcTable::new(u64::MAX, 512_000_000_000);
        let mut out = Vec::new();
        t.pause(MAC, 1, 100, 5, 50, &mut out);
        t.finish(120, &mut out);
        let rows = t.rows();
        assert_eq!(rows.len(), 8);
        assert!(
            rows.iter()
                .all(|r| r.paused_ns == 20 && r.pause_frames == 0)
        );
    }
}
