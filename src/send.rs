//! `rocescope send`: scenario file → generator → network interface, paced to a rate.
//!
//! The frames are the ones `rocescope generate` writes for the same scenario and seed, in the
//! same order, byte for byte (a frame the scenario truncates is sent as the bytes it keeps).
//! Sending stops at the end of the scenario, after `--count` frames or after `--duration`,
//! whichever comes first; the scenario does not loop. Without `--rate` frames go as fast as the
//! socket takes them. A bit rate counts the frame bytes handed to the NIC (no preamble, FCS or
//! inter-frame gap), and so does the achieved Gbit/s.

use std::fmt;
use std::fs;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rocescope_generator::Scenario;

use crate::sink::FrameSink;

/// A target rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Bits per second of frame bytes.
    Bits(f64),
    /// Frames per second.
    Packets(f64),
}

impl Rate {
    /// Parses `10Gbps`, `400M`, `2.5Gbit/s`, `1e9` (bit/s, with K/M/G/T = 10^3…10^12) or
    /// `2Mpps`, `500Kpps`, `100pps` (frames/s).
    ///
    /// # Errors
    /// Not a positive finite number with one of those units.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let bad = || {
            format!(
                "invalid rate {text:?}: expected bits/s like 10Gbps, 400Mbps, 1e9, or frames/s like 2Mpps, 500Kpps"
            )
        };
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        let (body, packets) = if let Some(b) = lower.strip_suffix("pps") {
            (b, true)
        } else if let Some(b) = ["bit/s", "bits/s", "b/s", "bps", "bit"]
            .iter()
            .find_map(|s| lower.strip_suffix(s))
        {
            (b, false)
        } else {
            (lower.as_str(), false)
        };
        let body = body.trim_end();
        // The same SI suffixes as --link-speed (crate::config::parse_si); a plain
        // float such as 1e9 is accepted too.
        #[allow(clippy::cast_precision_loss)] // rates far below 2^53
        let value = match crate::config::parse_si(&body.to_ascii_uppercase()) {
            Some(v) => v as f64,
            None => body.parse::<f64>().map_err(|_| bad())?,
        };
        if !value.is_finite() || value <= 0.0 {
            return Err(bad());
        }
        Ok(if packets {
            Rate::Packets(value)
        } else {
            Rate::Bits(value)
        })
    }

    /// Nanoseconds from the start at which a frame may go, given what went before it.
    fn due_ns(self, frames_before: u64, bytes_before: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)] // exact below 2^53 frames or bytes
        match self {
            Rate::Packets(pps) => frames_before as f64 * 1e9 / pps,
            Rate::Bits(bps) => bytes_before as f64 * 8.0 * 1e9 / bps,
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Bits(b) => write!(f, "{} Gbit/s", b / 1e9),
            Rate::Packets(p) => write!(f, "{p} frames/s"),
        }
    }
}

/// Parses a duration: `10s`, `500ms`, `250us`, `100ns`, `2m`, `1h`, `1.5s`; a bare number is
/// seconds.
///
/// # Errors
/// Not a non-negative finite number with one of those units.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: expected e.g. 10s, 500ms, 250us, 2m");
    let t = text.trim().to_ascii_lowercase();
    let units: [(&str, f64); 7] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    let (num, scale) = units
        .iter()
        .find_map(|(u, s)| t.strip_suffix(u).map(|n| (n, *s)))
        .unwrap_or((t.as_str(), 1.0));
    let value: f64 = num.trim().parse().map_err(|_| bad())?;
    Duration::try_from_secs_f64(value * scale).map_err(|_| bad())
}

/// When sending stops (besides the end of the scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bound {
    /// At most this many frames.
    pub count: Option<u64>,
    /// Stop once this much time has passed since the first frame.
    pub duration: Option<Duration>,
}

/// A validated `send` invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct SendConfig {
    pub scenario: PathBuf,
    pub iface: String,
    pub rate: Option<Rate>,
    pub bound: Bound,
    pub seed: u64,
}

impl TryFrom<crate::cli::SendArgs> for SendConfig {
    type Error = anyhow::Error;

    fn try_from(args: crate::cli::SendArgs) -> anyhow::Result<Self> {
        let rate = args
            .rate
            .as_deref()
            .map(Rate::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let duration = args
            .duration
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        Ok(SendConfig {
            scenario: args.scenario,
            iface: args.iface,
            rate,
            bound: Bound {
                count: args.count,
                duration,
            },
            seed: args.seed,
        })
    }
}

/// What one run sent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SendSummary {
    pub frames: u64,
    /// Frame bytes handed to the NIC.
    pub bytes: u64,
    /// From just before the first frame to just after the last.
    pub elapsed: Duration,
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
        )
    }
}

/// Reads the scenario, opens the interface and sends.
///
/// # Errors
/// The scenario cannot be read or is invalid, the interface does not exist or cannot be opened
/// (not root), sending fails, or this build has no `live` feature.
pub fn run(cfg: &SendConfig) -> anyhow::Result<SendSummary> {
    let text = fs::read_to_string(&cfg.scenario)
        .with_context(|| format!("reading {}", cfg.scenario.display()))?;
    let scenario = Scenario::from_toml(&text, &cfg.scenario.display().to_string())?;
    let mut sink = open_live(&cfg.iface)?;
    send_into(&scenario, cfg.seed, cfg.rate, cfg.bound, &mut sink)
        .with_context(|| format!("sending on {}", cfg.iface))
}

#[cfg(feature = "live")]
fn open_live(iface: &str) -> anyhow::Result<crate::sink::LiveSink> {
    Ok(crate::sink::LiveSink::open(iface)?)
}

#[cfg(not(feature = "live"))]
fn open_live(_iface: &str) -> anyhow::Result<crate::sink::MemorySink> {
    anyhow::bail!("this rocescope was built without the `live` feature: it cannot send")
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
    // The generator runs on the other core (crate::pipeline), so this thread
    // only paces and hands frames to the sink, the way tcpreplay sends from a
    // capture it preloaded.
    let mut s = SendSummary::default();
    let start = Instant::now();
    crate::pipeline::for_each_generated(scenario, seed, |frame| -> anyhow::Result<_> {
        if bound.count.is_some_and(|n| s.frames >= n)
            || bound.duration.is_some_and(|d| start.elapsed() >= d)
        {
            return Ok(ControlFlow::Break(()));
        }
        if let Some(rate) = rate {
            let due = rate.due_ns(s.frames, s.bytes);
            if bound.duration.is_some_and(|d| due >= d.as_secs_f64() * 1e9) {
                return Ok(ControlFlow::Break(())); // the next frame is due after the deadline
            }
            wait_until(start, due);
        }
        sink.send(frame.time_ns, frame.bytes)?;
        s.frames += 1;
        s.bytes += frame.bytes.len() as u64;
        Ok(ControlFlow::Continue(()))
    })?;
    sink.finish()?;
    s.elapsed = start.elapsed();
    Ok(s)
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

    #[test]
    fn rates_parse() {
        assert_eq!(Rate::parse("10Gbps"), Ok(Rate::Bits(10e9)));
        assert_eq!(Rate::parse("400M"), Ok(Rate::Bits(400e6)));
        assert_eq!(Rate::parse("2.5Gbit/s"), Ok(Rate::Bits(2.5e9)));
        assert_eq!(Rate::parse("1000"), Ok(Rate::Bits(1000.0)));
        assert_eq!(Rate::parse("2Mpps"), Ok(Rate::Packets(2e6)));
        assert_eq!(Rate::parse("500Kpps"), Ok(Rate::Packets(500e3)));
        assert_eq!(Rate::parse("100pps"), Ok(Rate::Packets(100.0)));
        for bad in ["", "fast", "0pps", "-1G", "Gbps", "infMbps", "NaN", "1Xpps"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "s", "-1s", "1y", "infs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
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

    /// A sink slower than the generator, as a real interface is: the generator
    /// thread finishes while batches are still queued, and all must be sent
    /// (the last partial batch was once dropped that way).
    #[test]
    fn a_slow_sink_still_gets_every_frame() {
        struct Slow(MemorySink);
        impl FrameSink for Slow {
            fn send(&mut self, time_ns: u64, frame: &[u8]) -> std::io::Result<()> {
                std::thread::sleep(Duration::from_micros(20));
                self.0.send(time_ns, frame)
            }
            fn finish(&mut self) -> std::io::Result<()> {
                self.0.finish()
            }
        }
        let sc = scenario();
        let mut gen_sink = MemorySink::new();
        crate::generate::generate_into(&sc, 3, &mut gen_sink).unwrap();
        let mut slow = Slow(MemorySink::new());
        let s = send_into(&sc, 3, None, Bound::default(), &mut slow).unwrap();
        assert_eq!(s.frames as usize, gen_sink.frames.len());
        assert!(
            gen_sink.frames.len() % 64 != 0,
            "the scenario should end mid-batch"
        );
        let got: Vec<&Vec<u8>> = slow.0.frames.iter().map(|f| &f.1).collect();
        let want: Vec<&Vec<u8>> = gen_sink.frames.iter().map(|f| &f.1).collect();
        assert_eq!(got, want);
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
