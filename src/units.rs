//! Units, parsed and printed one way everywhere: SI numbers (`100G`, `2.5M`), link speeds,
//! send rates, durations (`10s`, `500ms`) and the short duration text of every report, frame
//! line and screen (`335.5us`, `1.28ms`).

use std::fmt;

use anyhow::anyhow;

/// Default link speed: 100 Gbit/s.
pub const DEFAULT_LINK_BPS: u64 = 100_000_000_000;

/// A whole number with an optional fraction (at most 9 digits) and an
/// optional SI suffix K, M, G or T (either case): `100G`, `2.5M`, `1000`.
/// Exact integer arithmetic; `None` when malformed or above `u64::MAX`.
#[must_use]
pub fn parse_si(t: &str) -> Option<u64> {
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
        _ => (t, ' '),
    };
    let scale: u64 = match unit {
        ' ' => 1,
        'K' => 1_000,
        'M' => 1_000_000,
        'G' => 1_000_000_000,
        'T' => 1_000_000_000_000,
        _ => return None,
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let mut value = whole.parse::<u64>().ok()?.checked_mul(scale)?;
    if !frac.is_empty() {
        let frac_val: u64 = frac.parse().ok()?;
        let denom = 10u64.pow(u32::try_from(frac.len()).ok()?);
        let add = u128::from(frac_val) * u128::from(scale) / u128::from(denom);
        value = value.checked_add(u64::try_from(add).ok()?)?;
    }
    Some(value)
}

/// A link speed in bits per second: `100G`, `25G`, `400G`, `800G`, `1G`, `100M`, `10g`,
/// `2.5G`, or plain bits per second (`100000000000`).
///
/// # Errors
/// Anything else, or zero.
pub fn parse_link_speed(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("bps")
        .or_else(|| t.strip_suffix("b/s"))
        .unwrap_or(t);
    parse_si(t).filter(|&bps| bps > 0).ok_or_else(|| {
        anyhow!(
            "--link-speed {s:?}: expected a speed like 10G, 25G, 100G, 400G, 800G or bits per second"
        )
    })
}

/// `100G`-style label of a speed in bits per second (for `(335.5us @100G)`).
#[must_use]
pub fn link_speed_label(bps: u64) -> String {
    for (scale, unit) in [
        (1_000_000_000_000, "T"),
        (1_000_000_000, "G"),
        (1_000_000, "M"),
        (1_000, "K"),
    ] {
        if bps >= scale && bps.is_multiple_of(scale) {
            return format!("{}{unit}", bps / scale);
        }
    }
    if bps >= 1_000_000_000 && (bps * 10).is_multiple_of(1_000_000_000) {
        return format!("{}.{}G", bps / 1_000_000_000, (bps / 100_000_000) % 10);
    }
    format!("{bps}bps")
}

/// A target rate of `send`.
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
        // The same SI suffixes as --link-speed; a plain float such as 1e9 is accepted too.
        #[allow(clippy::cast_precision_loss)] // rates far below 2^53
        let value = match parse_si(&body.to_ascii_uppercase()) {
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
    #[must_use]
    pub fn due_ns(self, frames_before: u64, bytes_before: u64) -> f64 {
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
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
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
    std::time::Duration::try_from_secs_f64(value * scale).map_err(|_| bad())
}

/// `512ns`, `335.5us`, `1.28ms`, `655.36ms`, `2.000s`: the one duration
/// format of every report, frame line and screen (rounded, short).
fn fmt_ns(f: &mut impl fmt::Write, ns: u64) -> fmt::Result {
    if ns < 1_000 {
        write!(f, "{ns}ns")
    } else if ns < 1_000_000 {
        let tenths = (ns + 50) / 100;
        write!(f, "{}.{}us", tenths / 10, tenths % 10)
    } else if ns < 1_000_000_000 {
        let hundredths = (ns + 5_000) / 10_000;
        let (whole, frac) = (hundredths / 100, hundredths % 100);
        if frac == 0 {
            write!(f, "{whole}ms")
        } else if frac % 10 == 0 {
            write!(f, "{whole}.{}ms", frac / 10)
        } else {
            write!(f, "{whole}.{frac:02}ms")
        }
    } else {
        let ms = ns / 1_000_000;
        write!(f, "{}.{:03}s", ms / 1000, ms % 1000)
    }
}

/// Duration text of a count of nanoseconds, e.g. `1.28ms` (see `fmt_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duration(pub u64);

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(f, self.0)
    }
}

/// Seconds with six decimals, rounded to the microsecond; negative when time went backwards
/// (the relative time column of `dissect` and the inspector).
///
/// # Errors
/// Those of `out`.
pub fn rel_time(out: &mut impl fmt::Write, ns: i128) -> fmt::Result {
    // the digits with itoa, not `write!`: `dissect` writes this on every line
    let us = (ns.unsigned_abs() + 500) / 1000;
    let (mut secs, mut frac) = (itoa::Buffer::new(), itoa::Buffer::new());
    let frac = frac.format(us % 1_000_000);
    if ns < 0 {
        out.write_char('-')?;
    }
    out.write_str(secs.format(us / 1_000_000))?;
    out.write_char('.')?;
    out.write_str("000000".get(frac.len()..).unwrap_or_default())?;
    out.write_str(frac)
}

#[cfg(test)]
mod test {
    use super::*;
    use std::time::Duration as StdDuration;

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("100G").unwrap(), 100_000_000_000);
        assert_eq!(parse_link_speed("10G").unwrap(), 10_000_000_000);
        assert_eq!(parse_link_speed("25g").unwrap(), 25_000_000_000);
        assert_eq!(parse_link_speed("800G").unwrap(), 800_000_000_000);
        assert_eq!(parse_link_speed("1G").unwrap(), 1_000_000_000);
        assert_eq!(parse_link_speed("2.5G").unwrap(), 2_500_000_000);
        assert_eq!(parse_link_speed("100M").unwrap(), 100_000_000);
        assert_eq!(parse_link_speed("40000000000").unwrap(), 40_000_000_000);
        for bad in [
            "",
            "G",
            "fast",
            "0",
            "0G",
            "10X",
            "-1G",
            "1.2.3G",
            "99999999999999999999G",
        ] {
            assert!(parse_link_speed(bad).is_err(), "{bad}");
        }
        assert_eq!(link_speed_label(100_000_000_000), "100G");
        assert_eq!(link_speed_label(2_500_000_000), "2500M");
    }

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
        assert_eq!(parse_duration("10s"), Ok(StdDuration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(StdDuration::from_millis(500)));
        assert_eq!(parse_duration("250us"), Ok(StdDuration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(StdDuration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(StdDuration::from_millis(1500)));
        for bad in ["", "s", "-1s", "1y", "infs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn duration_text() {
        let text = |ns| Duration(ns).to_string();
        assert_eq!(text(512), "512ns");
        assert_eq!(text(335_544), "335.5us");
        assert_eq!(text(1_280_000), "1.28ms");
        assert_eq!(text(655_360_000), "655.36ms");
        assert_eq!(text(2_000_000_000), "2.000s");
        let mut s = String::new();
        rel_time(&mut s, -1_500).unwrap();
        assert_eq!(s, "-0.000002");
        // as `format!` writes it (what rel_time was before it used itoa)
        for ns in [
            0i128,
            499,
            500,
            1_234_567_891,
            -1_500_000_000,
            -1,
            86_400_000_000_000_000,
            i128::from(u64::MAX) * 1_000_000_000,
            i128::MIN + 1,
        ] {
            s.clear();
            rel_time(&mut s, ns).unwrap();
            let us = (ns.unsigned_abs() + 500) / 1000;
            let sign = if ns < 0 { "-" } else { "" };
            assert_eq!(
                s,
                format!("{sign}{}.{:06}", us / 1_000_000, us % 1_000_000),
                "{ns}"
            );
        }
    }
}
