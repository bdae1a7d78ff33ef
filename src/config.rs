//! Validated configurations built from the clap structs of `cli.rs` (ripgrep's LowArgs → HiArgs
//! step): link speeds parsed, frame ranges checked, display filters compiled. Engines take these,
//! never clap types. Every error is one line; `main` turns it into exit status 2.

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::cli::{Color, DissectArgs, DissectFormat, GlobalArgs};
use crate::filter::Filter;

/// Default link speed: 100 Gbit/s.
pub const DEFAULT_LINK_BPS: u64 = 100_000_000_000;

/// An inclusive range of 1-based frame numbers (`--frames A-B`, `A-`, `N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRange {
    pub first: u64,
    /// `None`: to the end of the capture.
    pub last: Option<u64>,
}

impl FrameRange {
    /// Every frame.
    pub const ALL: FrameRange = FrameRange {
        first: 1,
        last: None,
    };

    #[must_use]
    pub fn contains(&self, number: u64) -> bool {
        number >= self.first && self.last.is_none_or(|last| number <= last)
    }

    /// True once `number` is past the range (nothing more can match).
    #[must_use]
    pub fn is_past(&self, number: u64) -> bool {
        self.last.is_some_and(|last| number > last)
    }
}

impl std::str::FromStr for FrameRange {
    type Err = anyhow::Error;

    /// `A-B`, `A-` or `N`, 1-based and inclusive; `A` ≤ `B`.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        let num = |t: &str| -> anyhow::Result<u64> {
            let t = t.trim();
            let n: u64 = t
                .parse()
                .with_context(|| format!("--frames {s:?}: `{t}` is not a frame number"))?;
            if n == 0 {
                bail!("--frames {s:?}: frame numbers start at 1");
            }
            Ok(n)
        };
        let range = match s.split_once('-') {
            None => {
                let n = num(s)?;
                FrameRange {
                    first: n,
                    last: Some(n),
                }
            }
            Some((a, b)) if b.trim().is_empty() => FrameRange {
                first: num(a)?,
                last: None,
            },
            Some((a, b)) => FrameRange {
                first: if a.trim().is_empty() { 1 } else { num(a)? },
                last: Some(num(b)?),
            },
        };
        if range.last.is_some_and(|last| last < range.first) {
            bail!("--frames {s:?}: the range ends before it starts");
        }
        Ok(range)
    }
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
        anyhow::anyhow!(
            "--link-speed {s:?}: expected a speed like 10G, 25G, 100G, 400G, 800G or bits per second"
        )
    })
}

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

/// `100G`-style label of a speed in bits per second (for `(335.5us @100G)`).
#[must_use]
pub fn link_speed_label(bps: u64) -> String {
    for (scale, unit) in [
        (1_000_000_000_000, "T"),
        (1_000_000_000, "G"),
        (1_000_000, "M"),
        (1_000, "K"),
    ] {
        if bps >= scale && bps % scale == 0 {
            return format!("{}{unit}", bps / scale);
        }
    }
    if bps >= 1_000_000_000 && (bps * 10) % 1_000_000_000 == 0 {
        return format!("{}.{}G", bps / 1_000_000_000, (bps / 100_000_000) % 10);
    }
    format!("{bps}bps")
}

/// Everything `rocescope dissect` needs, validated.
#[derive(Debug)]
pub struct DissectConfig {
    pub captures: Vec<PathBuf>,
    pub format: DissectFormat,
    pub filter: Option<Filter>,
    /// Stop after this many frames were shown.
    pub count: Option<u64>,
    pub frames: FrameRange,
    /// Extra UDP destination ports carrying RoCEv2.
    pub roce_ports: Vec<u16>,
    pub link_bps: u64,
    pub quiet: bool,
    pub color: Color,
}

impl TryFrom<(&GlobalArgs, DissectArgs)> for DissectConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalArgs, DissectArgs)) -> anyhow::Result<Self> {
        let link_bps = parse_link_speed(&global.link_speed)?;
        let frames = match &args.frames {
            Some(s) => s.parse()?,
            None => FrameRange::ALL,
        };
        let filter = match &args.filter {
            Some(expr) => Some(Filter::compile(expr)?),
            None => None,
        };
        Ok(DissectConfig {
            captures: args.captures,
            format: args.format,
            filter,
            count: args.count,
            frames,
            roce_ports: global.roce_ports.clone(),
            link_bps,
            quiet: global.quiet,
            color: global.color,
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

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
    fn frame_ranges() {
        let r: FrameRange = "10-20".parse().unwrap();
        assert_eq!(
            r,
            FrameRange {
                first: 10,
                last: Some(20)
            }
        );
        let r: FrameRange = "7".parse().unwrap();
        assert!(r.contains(7) && !r.contains(8) && r.is_past(8));
        let r: FrameRange = "5-".parse().unwrap();
        assert!(r.contains(5) && r.contains(u64::MAX) && !r.contains(4));
        for bad in ["", "0", "a-b", "20-10", "1-2-3", "-"] {
            assert!(bad.parse::<FrameRange>().is_err(), "{bad}");
        }
    }
}
