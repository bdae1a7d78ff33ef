//! `rocescope send`: scenario file → generator → network interface, paced to a rate.
//!
//! The frames are the ones `rocescope generate` writes for the same scenario and seed, in the
//! same order, byte for byte (a frame the scenario truncates is sent as the bytes it keeps).
//! Sending stops at the end of the scenario, after `--count` frames or after `--duration`,
//! whichever comes first; the scenario does not loop. Without `--rate` frames go as fast as the
//! socket takes them. A bit rate counts the frame bytes handed to the NIC (no preamble, FCS or
//! inter-frame gap), and so does the achieved Gbit/s.

// Indexing cannot panic here: a frame is generated only where the batch buffer holds
// `MAX_FRAME_LEN` bytes after its start (checked before), and it is at most that long.
#![allow(clippy::indexing_slicing)]

use std::fmt;
use std::fs;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::Context;
use rocescope_generator::scenario::LinkKind;
use rocescope_generator::{GenError, Generator, MAX_FRAME_LEN, Scenario};

use crate::ahead::{self, Filled};
pub use crate::config::{Bound, SendConfig};
use crate::sink::{FrameSink, MAX_RUN};
pub use crate::units::Rate;

/// What one run sent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SendSummary {
    pub frames: u64,
    /// Frame bytes handed to the NIC.
    pub bytes: u64,
    /// From just before the first frame to just after the last.
    pub elapsed: Duration,
    /// Frames the device refused after the kernel took them (counted in `frames`, not sent).
    pub dropped: u64,
}

impl SendSummary {
    /// Achieved frames per second.
    #[must_use]
    pub fn pps(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let frames = self.frames as f64;
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { frames / secs } else { 0.0 }
    }

    /// Achieved Gbit/s of frame bytes.
    #[must_use]
    pub fn gbps(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let bits = self.bytes as f64 * 8.0;
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { bits / secs / 1e9 } else { 0.0 }
    }
}

impl fmt::Display for SendSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} frames, {} bytes in {:.3} s: {:.0} pps, {:.3} Gbit/s",
            self.frames,
            self.bytes,
            self.elapsed.as_secs_f64(),
            self.pps(),
            self.gbps()
        )?;
        if self.dropped > 0 {
            write!(f, ", {} dropped by the device", self.dropped)?;
        }
        Ok(())
    }
}

/// Reads the scenario, opens the interface and sends; returns what was sent and how it went
/// out (the transmit path, and why not `AF_XDP` when that was tried and refused).
///
/// # Errors
/// The scenario cannot be read or is invalid, the interface does not exist or cannot be opened
/// (not root), sending fails, or this build has no `live` feature.
#[cfg(feature = "live")]
pub fn run(cfg: &SendConfig) -> anyhow::Result<(SendSummary, String)> {
    let scenario = read_scenario(cfg)?;
    let mut sink = crate::sink::LiveSink::open(&cfg.iface, cfg.tx)?;
    let mut summary = send_into(&scenario, cfg.seed, cfg.rate, cfg.bound, &mut sink)
        .with_context(|| format!("sending on {}", cfg.iface))?;
    summary.dropped = sink.dropped();
    let path = match sink.xdp_refused() {
        Some(why) => format!("{}; AF_XDP refused: {why}", sink.path()),
        None => sink.path().to_owned(),
    };
    Ok((summary, path))
}

/// Without the `live` feature there is nothing to send with.
///
/// # Errors
/// Always.
#[cfg(not(feature = "live"))]
pub fn run(cfg: &SendConfig) -> anyhow::Result<(SendSummary, String)> {
    read_scenario(cfg)?;
    anyhow::bail!("this rocescope was built without the `live` feature: it cannot send")
}

/// The scenario `send` is to transmit: one it can put on an Ethernet interface.
fn read_scenario(cfg: &SendConfig) -> anyhow::Result<Scenario> {
    let text = fs::read_to_string(&cfg.scenario)
        .with_context(|| format!("reading {}", cfg.scenario.display()))?;
    let scenario = Scenario::from_toml(&text, &cfg.scenario.display().to_string())?;
    // Its frames start with an LRH, which an Ethernet interface would send as MAC addresses;
    // an InfiniBand port takes no raw frames from a socket.
    if scenario.link_kind == LinkKind::Infiniband {
        anyhow::bail!(
            "{}: [link] kind = \"ib\" is native InfiniBand, which send cannot transmit (it sends Ethernet frames); generate writes it to a file",
            cfg.scenario.display()
        );
    }
    Ok(scenario)
}

/// Generates `scenario` with `seed` and hands each frame to `sink` when `rate` says it is due,
/// until the scenario ends or `bound` is reached. Tests pass a memory sink.
///
/// # Errors
/// The generator reports an error or the sink fails.
pub fn send_into(
    scenario: &Scenario,
    seed: u64,
    rate: Option<Rate>,
    bound: Bound,
    sink: &mut dyn FrameSink,
) -> anyhow::Result<SendSummary> {
    // The generator runs on the other core (crate::ahead), so this thread only paces and
    // hands frames to the sink, the way tcpreplay sends from a capture it preloaded.
    let mut s = SendSummary::default();
    let start = Instant::now();
    let mut generator = Generator::new(scenario, seed);
    let pool = (0..GEN_BATCHES).map(|_| GenBatch::new()).collect();
    let fill = |batch: &mut GenBatch, _: &ahead::Ahead| batch.fill(&mut generator);
    // a break (the bound was reached) needs nothing more than the end does
    let sent = ahead::run(pool, fill, |batch: &mut GenBatch| -> anyhow::Result<_> {
        let stop = match rate {
            Some(rate) => send_paced(batch, rate, bound, start, sink, &mut s)?,
            None => send_at_top_speed(batch, bound, start, sink, &mut s)?,
        };
        if stop {
            return Ok(ControlFlow::Break(()));
        }
        match batch.error.take() {
            Some(e) => Err(e.into()),
            None => Ok(ControlFlow::Continue(())),
        }
    })
    .and_then(|_| Ok(sink.finish()?));
    s.elapsed = start.elapsed();
    // what had gone before a failure: a link that went down mid-test leaves the user
    // asking how far it got
    sent.map_err(|e| e.context(StoppedAfter(s)))?;
    Ok(s)
}

/// The context of a send that failed: what it had handed to the sink before.
struct StoppedAfter(SendSummary);

impl fmt::Display for StoppedAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.0;
        write!(
            f,
            "stopped after {} frames ({} bytes in {:.3} s)",
            s.frames,
            s.bytes,
            s.elapsed.as_secs_f64()
        )
    }
}

/// Sends `batch`'s frames each when `rate` says it is due, never before; `true` when `bound`
/// was reached. Frames already due when the one before them has gone (the rate is above what
/// one frame a system call keeps up with) go together, [`MAX_RUN`] at most: 1 KiB frames at
/// 5 Gbit/s on the veth pair went from 84 % of the rate to all of it.
fn send_paced(
    batch: &GenBatch,
    rate: Rate,
    bound: Bound,
    start: Instant,
    sink: &mut dyn FrameSink,
    s: &mut SendSummary,
) -> anyhow::Result<bool> {
    let mut run: [(u64, &[u8]); MAX_RUN] = [(0, &[]); MAX_RUN];
    let mut n = 0;
    let mut run_bytes = 0;
    let mut flush = |run: &[(u64, &[u8])], bytes: u64, s: &mut SendSummary| {
        if !run.is_empty() {
            sink.send_all(run)?;
            s.frames += run.len() as u64;
            s.bytes += bytes;
        }
        anyhow::Ok(())
    };
    for (time_ns, frame) in batch.frames() {
        let (frames, bytes) = (s.frames + n as u64, s.bytes + run_bytes);
        if bound.frames_left(frames) == 0 || bound.time_is_up(start) {
            flush(&run[..n], run_bytes, s)?;
            return Ok(true);
        }
        let due = rate.due_ns(frames, bytes);
        if bound.duration.is_some_and(|d| due >= d.as_secs_f64() * 1e9) {
            flush(&run[..n], run_bytes, s)?;
            return Ok(true); // the next frame is due after the deadline
        }
        if n == MAX_RUN || (n > 0 && start.elapsed().as_secs_f64() * 1e9 < due) {
            flush(&run[..n], run_bytes, s)?;
            (n, run_bytes) = (0, 0);
        }
        wait_until(start, due);
        if let Some(slot) = run.get_mut(n) {
            *slot = (time_ns, frame);
            n += 1;
            run_bytes += frame.len() as u64;
        }
    }
    flush(&run[..n], run_bytes, s)?;
    Ok(false)
}

/// Sends `batch`'s frames as fast as the sink takes them, [`MAX_RUN`] at a time (one
/// system call each on a NIC); `true` when `bound` was reached.
fn send_at_top_speed(
    batch: &GenBatch,
    bound: Bound,
    start: Instant,
    sink: &mut dyn FrameSink,
    s: &mut SendSummary,
) -> anyhow::Result<bool> {
    let mut run: [(u64, &[u8]); MAX_RUN] = [(0, &[]); MAX_RUN];
    let mut frames = batch.frames();
    loop {
        let room = usize::try_from(bound.frames_left(s.frames)).map_or(MAX_RUN, |l| l.min(MAX_RUN));
        // the duration is checked once a run: a run of 1 KiB frames lasts ~40 µs at 1.6 M pps
        if room == 0 || bound.time_is_up(start) {
            return Ok(true);
        }
        let mut n = 0;
        for (slot, frame) in run.iter_mut().zip(frames.by_ref().take(room)) {
            *slot = frame;
            n += 1;
        }
        if n == 0 {
            return Ok(false); // the batch is sent
        }
        let run = &run[..n];
        sink.send_all(run)?;
        s.frames += n as u64;
        s.bytes += run.iter().map(|(_, f)| f.len() as u64).sum::<u64>();
    }
}

/// Frames per generated batch at most, bytes it holds and batches in flight: enough that the
/// two threads rarely wait on each other, small enough that the sender reads the frames from
/// cache (2 MiB in all).
const GEN_FRAMES: usize = 256;
const GEN_BYTES: usize = 256 << 10;
const GEN_BATCHES: usize = 8;

/// Frames generated ahead, one after the other in `bytes` (each starts on a cache line: the
/// sender's copies read whole lines), and per frame its timestamp, start and length (a frame a
/// snaplen fault cut is sent as the bytes it keeps). Packed rather than one `MAX_FRAME_LEN` slot
/// each, so that the frames the sender reads after the other core wrote them fill a quarter of
/// the lines: 1 KiB frames went from 1.23 M to 1.35 M pps on a veth pair (cf7740a).
struct GenBatch {
    bytes: Vec<u8>,
    frames: Vec<(u64, usize, usize)>,
    error: Option<GenError>,
}

impl GenBatch {
    fn new() -> Self {
        GenBatch {
            bytes: vec![0; GEN_BYTES],
            frames: Vec::with_capacity(GEN_FRAMES),
            error: None,
        }
    }

    /// The frames generated, with their timestamps.
    fn frames(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.frames
            .iter()
            .map(|&(time_ns, at, len)| (time_ns, &self.bytes[at..at + len]))
    }

    fn fill(&mut self, g: &mut Generator<'_>) -> Filled {
        self.frames.clear();
        let mut at = 0;
        while self.frames.len() < GEN_FRAMES && at + MAX_FRAME_LEN <= self.bytes.len() {
            match g.next_frame(&mut self.bytes[at..at + MAX_FRAME_LEN]) {
                Some(Ok(out)) => {
                    self.frames.push((out.time_ns, at, out.len));
                    at = (at + out.len).next_multiple_of(64);
                }
                Some(Err(e)) => {
                    self.error = Some(e);
                    return Filled::Last;
                }
                None => return Filled::Last,
            }
        }
        Filled::More
    }
}

/// Waits until `due_ns` after `start`: sleeps while far ahead, spins for the last stretch.
fn wait_until(start: Instant, due_ns: f64) {
    const SPIN_NS: f64 = 200_000.0;
    loop {
        let now = start.elapsed().as_secs_f64() * 1e9;
        let ahead = due_ns - now;
        if ahead <= 0.0 {
            return;
        }
        if ahead > SPIN_NS {
            std::thread::sleep(Duration::from_secs_f64((ahead - SPIN_NS / 2.0) / 1e9));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::MemorySink;

    /// A sink slower than the generator, as a real interface is: each frame takes `per_frame`.
    struct Slow {
        sink: MemorySink,
        per_frame: Duration,
    }

    impl Slow {
        fn new(per_frame: Duration) -> Self {
            Slow {
                sink: MemorySink::new(),
                per_frame,
            }
        }
    }

    impl FrameSink for Slow {
        fn send(&mut self, time_ns: u64, frame: &[u8]) -> std::io::Result<()> {
            std::thread::sleep(self.per_frame);
            self.sink.send(time_ns, frame)
        }
        fn finish(&mut self) -> std::io::Result<()> {
            self.sink.finish()
        }
    }

    /// A sink that keeps each hand-over's time (ns after `start`), its frames and how many,
    /// and takes `delay` for each.
    struct Runs {
        start: Instant,
        delay: Duration,
        runs: Vec<(f64, usize)>,
        frames: Vec<Vec<u8>>,
    }

    impl Runs {
        fn new(delay: Duration) -> Self {
            Runs {
                start: Instant::now(),
                delay,
                runs: Vec::new(),
                frames: Vec::new(),
            }
        }

        fn lengths(&self) -> Vec<usize> {
            self.runs.iter().map(|&(_, n)| n).collect()
        }
    }

    impl FrameSink for Runs {
        fn send(&mut self, _: u64, frame: &[u8]) -> std::io::Result<()> {
            self.send_all(&[(0, frame)])
        }
        fn send_all(&mut self, frames: &[(u64, &[u8])]) -> std::io::Result<()> {
            let at = self.start.elapsed().as_secs_f64() * 1e9;
            self.runs.push((at, frames.len()));
            self.frames.extend(frames.iter().map(|(_, f)| f.to_vec()));
            std::thread::sleep(self.delay);
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn scenario() -> Scenario {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/generator/scenarios/clean_write.toml"
        );
        let text = fs::read_to_string(path).unwrap();
        Scenario::from_toml(&text, path).unwrap()
    }

    #[test]
    fn sends_what_generate_writes_up_to_the_count() {
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 7, &mut gen_sink).unwrap();
        let mut sent = MemorySink::new();
        let bound = Bound {
            count: Some(25),
            duration: None,
        };
        let s = send_into(&sc, 7, None, bound, &mut sent).unwrap();
        assert_eq!(s.frames, 25);
        assert!(sent.finished);
        let got: Vec<&Vec<u8>> = sent.frames.iter().map(|f| &f.1).collect();
        let want: Vec<&Vec<u8>> = gen_sink.frames.iter().take(25).map(|f| &f.1).collect();
        assert_eq!(got, want);
        assert_eq!(s.bytes, want.iter().map(|f| f.len() as u64).sum::<u64>());
        // No bound: the whole scenario, once.
        let mut all = MemorySink::new();
        let s = send_into(&sc, 7, None, Bound::default(), &mut all).unwrap();
        assert_eq!(s.frames as usize, gen_sink.frames.len());
    }

    /// At top speed frames go in runs of at most `MAX_RUN` (one `sendmmsg` each on a
    /// NIC), and a count that ends mid-run and mid-batch is kept to the frame.
    #[test]
    fn top_speed_sends_runs_and_stops_at_the_count() {
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 5, &mut gen_sink).unwrap();
        // past the first batch (at most 256 frames), not on a run's edge
        let count = 300;
        assert!(gen_sink.frames.len() > count);
        let mut sink = Runs::new(Duration::ZERO);
        let bound = Bound {
            count: Some(count as u64),
            duration: None,
        };
        let s = send_into(&sc, 5, None, bound, &mut sink).unwrap();
        assert_eq!(s.frames as usize, count);
        let lengths = sink.lengths();
        assert_eq!(lengths.iter().sum::<usize>(), count);
        assert!(lengths.iter().all(|&n| (1..=MAX_RUN).contains(&n)));
        // full runs but where a batch or the count ends (300 frames span two batches)
        assert!(lengths.len() <= count.div_ceil(MAX_RUN) + 1, "{lengths:?}");
        let want: Vec<Vec<u8>> = gen_sink
            .frames
            .iter()
            .take(count)
            .map(|f| f.1.clone())
            .collect();
        assert_eq!(sink.frames, want);
    }

    /// A sink slower than the generator, as a real interface is: the generator
    /// thread finishes while batches are still queued, and all must be sent
    /// (the last partial batch was once dropped that way).
    #[test]
    fn a_slow_sink_still_gets_every_frame() {
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 3, &mut gen_sink).unwrap();
        let mut slow = Slow::new(Duration::from_micros(20));
        let s = send_into(&sc, 3, None, Bound::default(), &mut slow).unwrap();
        assert_eq!(s.frames as usize, gen_sink.frames.len());
        assert!(
            !gen_sink.frames.len().is_multiple_of(64),
            "the scenario should end mid-batch"
        );
        let got: Vec<&Vec<u8>> = slow.sink.frames.iter().map(|f| &f.1).collect();
        let want: Vec<&Vec<u8>> = gen_sink.frames.iter().map(|f| &f.1).collect();
        assert_eq!(got, want);
    }

    /// At top speed the duration is checked before each run: a run that outlasts the
    /// duration is the last one. Only what load cannot break is asserted: at most one run.
    #[test]
    fn top_speed_stops_once_the_duration_is_up() {
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 9, &mut gen_sink).unwrap();
        assert!(gen_sink.frames.len() > MAX_RUN);
        // a run of MAX_RUN frames takes at least 128 ms here
        let bound = Bound {
            count: None,
            duration: Some(Duration::from_millis(100)),
        };
        let mut slow = Slow::new(Duration::from_millis(2));
        let s = send_into(&sc, 9, None, bound, &mut slow).unwrap();
        assert!(s.frames as usize <= MAX_RUN, "{}", s.frames);
        assert_eq!(s.frames as usize, slow.sink.frames.len());
    }

    /// Paced frames go no earlier than they are due, and those already due when the sink
    /// takes its turn go together: each hand-over here takes 1 ms, ten frames' time at
    /// 10,000 pps.
    #[test]
    fn paced_frames_already_due_go_together() {
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 4, &mut gen_sink).unwrap();
        let count = 200;
        let rate = Rate::Packets(10_000.0);
        let mut sink = Runs::new(Duration::from_millis(1));
        let bound = Bound {
            count: Some(count),
            duration: None,
        };
        let s = send_into(&sc, 4, Some(rate), bound, &mut sink).unwrap();
        assert_eq!(s.frames, count);
        let want: Vec<Vec<u8>> = gen_sink
            .frames
            .iter()
            .take(200)
            .map(|f| f.1.clone())
            .collect();
        assert_eq!(sink.frames, want);
        // send_into's clock starts after the sink's: a frame due at d went at d or later
        let mut first = 0u64;
        for &(at, len) in &sink.runs {
            assert!((1..=MAX_RUN).contains(&len), "{:?}", sink.runs);
            let last_due = rate.due_ns(first + len as u64 - 1, 0);
            assert!(
                at >= last_due,
                "frame {} went at {at} ns, due at {last_due}",
                first + len as u64
            );
            first += len as u64;
        }
        // at least 1 ms between hand-overs: ten frames fall due in each
        assert!(sink.runs.len() < 100, "{:?}", sink.runs);
    }

    /// A sink that fails (a link gone down) says so with what had gone before: the frames
    /// of the hand-overs it took, not those of the one that failed.
    #[test]
    fn a_failed_send_says_how_far_it_got() {
        struct FailsAt(usize, Runs);
        impl FrameSink for FailsAt {
            fn send(&mut self, _: u64, frame: &[u8]) -> std::io::Result<()> {
                self.send_all(&[(0, frame)])
            }
            fn send_all(&mut self, frames: &[(u64, &[u8])]) -> std::io::Result<()> {
                if self.1.frames.len() + frames.len() > self.0 {
                    return Err(std::io::Error::other("the link went down"));
                }
                self.1.send_all(frames)
            }
            fn finish(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sc = scenario();
        // at top speed frames go MAX_RUN at a time: the third run fails
        let mut sink = FailsAt(2 * MAX_RUN + 5, Runs::new(Duration::ZERO));
        let err = send_into(&sc, 2, None, Bound::default(), &mut sink).unwrap_err();
        let bytes: usize = sink.1.frames.iter().map(Vec::len).sum();
        assert_eq!(sink.1.frames.len(), 2 * MAX_RUN);
        let line = format!("{err:#}");
        let want = format!("stopped after {} frames ({bytes} bytes in ", 2 * MAX_RUN);
        assert!(line.starts_with(&want), "{line}");
        assert!(line.ends_with(" s): the link went down"), "{line}");
    }

    #[test]
    fn pacing_holds_the_rate() {
        let sc = scenario();
        let mut sent = MemorySink::new();
        let bound = Bound {
            count: Some(51),
            duration: None,
        };
        // 51 frames at 1000 pps: the last is due at 50 ms.
        let s = send_into(&sc, 1, Some(Rate::Packets(1000.0)), bound, &mut sent).unwrap();
        assert_eq!(s.frames, 51);
        assert!(s.elapsed >= Duration::from_millis(50), "{:?}", s.elapsed);
        // Duration bound with a rate: at 1000 pps for 20 ms, at most 20 frames
        // (frames due at 0..19 ms). Fewer when the machine is busy, so only the
        // bound that load cannot break is asserted: no timing in tests.
        let bound = Bound {
            count: None,
            duration: Some(Duration::from_millis(20)),
        };
        let s = send_into(&sc, 1, Some(Rate::Packets(1000.0)), bound, &mut sent).unwrap();
        assert!(s.frames <= 20, "{}", s.frames);
    }
}
