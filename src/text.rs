//! Text the commands print: error messages kept to one line, and addresses written with byte
//! tables (per frame, in the JSONL and Parquet writers: no `fmt` machinery).

// Indexing cannot panic here: the tables are indexed by a nibble or a byte, the fixed arrays at
// positions below their size (17 for a MAC, 16 for four octets and their dots).
#![allow(clippy::indexing_slicing)]

/// `text` on one line: control characters (a newline in a file name or a quoted filter value)
/// escaped as Rust writes them (`\n`), everything else kept.
#[must_use]
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Lowercase hex digits.
pub const HEX: &[u8; 16] = b"0123456789abcdef";

/// `aa:bb:cc:dd:ee:ff`.
#[inline]
#[must_use]
pub fn mac(a: [u8; 6]) -> [u8; 17] {
    let mut s = [b':'; 17];
    mac_into(&mut s, a);
    s
}

/// [`mac`] written in place, into the output itself: a whole array built a byte at a time
/// and then copied is read back before its bytes have left the store buffer, which stalls.
#[inline(always)]
pub fn mac_into(s: &mut [u8; 17], a: [u8; 6]) {
    for (i, b) in a.iter().enumerate() {
        s[3 * i] = HEX[usize::from(b >> 4)];
        s[1 + 3 * i] = HEX[usize::from(b & 0xF)];
        if i < 5 {
            s[2 + 3 * i] = b':';
        }
    }
}

/// Each octet's digits followed by a dot, left-aligned, and how many bytes that is.
const OCTETS: [([u8; 4], u8); 256] = {
    let mut t = [([0u8; 4], 0u8); 256];
    let mut o = 0;
    while o < 256 {
        // Lossless: o < 256.
        let b = o as u8;
        t[o] = if b >= 100 {
            ([b'0' + b / 100, b'0' + b / 10 % 10, b'0' + b % 10, b'.'], 4)
        } else if b >= 10 {
            ([b'0' + b / 10, b'0' + b % 10, b'.', 0], 3)
        } else {
            ([b'0' + b, b'.', 0, 0], 2)
        };
        o += 1;
    }
    t
};

/// The dotted quad, and how many of the bytes it is (at most 15; one spare byte after it).
#[inline]
#[must_use]
pub fn ipv4(octets: [u8; 4]) -> ([u8; 16], usize) {
    let mut s = [0u8; 16];
    let n = ipv4_into(&mut s, octets);
    (s, n)
}

/// [`ipv4`] written in place (see [`mac_into`]); returns its length. The bytes of `s` after
/// the text may be overwritten too.
#[inline(always)]
pub fn ipv4_into(s: &mut [u8; 16], octets: [u8; 4]) -> usize {
    let mut n = 0;
    for o in octets {
        let (text, len) = OCTETS[usize::from(o)];
        s[n..n + 4].copy_from_slice(&text);
        n += usize::from(len);
    }
    // without the last octet's dot
    n - 1
}

/// `v`'s decimal digits appended to `out` (itoa: a frame's numbers without the `fmt`
/// machinery, which was the larger part of `dissect`'s text output).
#[inline]
pub fn push_dec(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// `0x` and `v` in lowercase hex with at least `digits` digits, as `{:#0w$x}` writes it with
/// `w = digits + 2`.
#[inline]
pub fn push_hex(out: &mut String, v: u64, digits: usize) {
    let used = (64 - v.leading_zeros() as usize)
        .div_ceil(4)
        .max(digits)
        .clamp(1, 16);
    out.push_str("0x");
    for i in (0..used).rev() {
        out.push(char::from(HEX[((v >> (4 * i)) & 0xF) as usize]));
    }
}

/// Characters in `s`, as `fmt` counts them for padding (its length when ASCII).
#[inline]
#[must_use]
pub fn width(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// `s` in a column of `width` characters: after the padding (`right`, as `{:>w}`) or before
/// it (as `{:<w}`).
#[inline]
pub fn push_padded(out: &mut String, s: &str, width: usize, right: bool) {
    let pad = width.saturating_sub(self::width(s));
    if right {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(s);
    } else {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', pad));
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    #[test]
    fn numbers_read_as_fmt_writes_them() {
        let mut s = String::new();
        for v in [
            0u64,
            1,
            9,
            10,
            0xFF_FFFF,
            0x100_0000,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            s.clear();
            super::push_dec(&mut s, v);
            assert_eq!(s, v.to_string());
            for digits in [1, 2, 6, 8] {
                s.clear();
                super::push_hex(&mut s, v, digits);
                assert_eq!(s, format!("{v:#0w$x}", w = digits + 2), "{v} {digits}");
            }
        }
        for (text, width) in [("10.0.0.1", 17), ("", 3), ("too long for it", 5), ("→é", 4)] {
            s.clear();
            super::push_padded(&mut s, text, width, true);
            assert_eq!(s, format!("{text:>width$}"));
            s.clear();
            super::push_padded(&mut s, text, width, false);
            assert_eq!(s, format!("{text:<width$}"));
        }
    }

    #[test]
    fn addresses_read_as_std_writes_them() {
        for a in [
            [0, 0, 0, 0],
            [10, 0, 11, 2],
            [255, 255, 255, 255],
            [192, 168, 100, 9],
        ] {
            let (s, n) = super::ipv4(a);
            assert_eq!(&s[..n], Ipv4Addr::from(a).to_string().as_bytes());
        }
        let m = super::mac([0x02, 0, 0xab, 0xcd, 0xef, 0x10]);
        assert_eq!(&m, b"02:00:ab:cd:ef:10");
    }
}
