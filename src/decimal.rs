//! Unsigned integers in decimal, written in place at the end of a byte buffer: the JSON
//! writers (`dissect -f jsonl`, the analyze report) write tens of millions of numbers, and
//! `itoa`'s digits, copied over with a call to `memcpy` each, were a tenth of their time.

// Indexing cannot panic here: digits go into fixed arrays sized for the largest value (20
// digits), and the table is indexed by a digit pair.
#![allow(clippy::indexing_slicing)]

/// `"00".."99"`: two digits at a time.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` in decimal. Digits are put left-aligned in a fixed array that is appended whole and
/// then cut to length: one fixed-size copy instead of a call to `memcpy`.
#[inline(always)]
pub fn uint(buf: &mut Vec<u8>, v: u64) {
    if v < 10 {
        // Lossless: v < 10.
        buf.push(b'0' + v as u8);
    } else {
        uint_long(buf, v);
    }
}

/// Two digits of `PAIRS` for `x < 100`.
#[inline(always)]
pub fn pair(x: u32) -> [u8; 2] {
    let i = 2 * x as usize;
    [PAIRS[i], PAIRS[i + 1]]
}

/// Append `N` zero bytes to `buf` and return them, to be written in place.
///
/// Text is built in the output buffer itself, never in a small array copied over afterwards:
/// a wide load of bytes just stored one or two at a time stalls (no store-to-load forwarding).
#[inline(always)]
pub fn room<const N: usize>(buf: &mut Vec<u8>) -> (usize, &mut [u8; N]) {
    let len = buf.len();
    buf.extend_from_slice(&[0; N]);
    let tail = buf.split_at_mut(len).1;
    // Cannot fail: exactly N bytes were just appended.
    let tail: &mut [u8; N] = tail.try_into().unwrap_or_else(|_| unreachable!());
    (len, tail)
}

/// [`uint`] for `v >= 10`, left to right: a leading group of one to four digits, then whole
/// groups of four. Each digit is stored once, where it belongs, and the group sizes are
/// settled by a few comparisons instead of a digit count and a loop per group.
#[inline(always)]
fn uint_long(buf: &mut Vec<u8>, v: u64) {
    let (len, d) = room::<20>(buf);
    let n = match u32::try_from(v) {
        Ok(v) if v < 100_000_000 => up_to_eight(d, v),
        Ok(v) => {
            // Up to 42, then eight digits.
            let n = lead(d, v / 100_000_000);
            eight(d, n, v % 100_000_000);
            n + 8
        }
        Err(_) => {
            // Lossless: below 10^8.
            let low = (v % 100_000_000) as u32;
            let high = v / 100_000_000;
            let n = match u32::try_from(high) {
                Ok(high) if high < 100_000_000 => up_to_eight(d, high),
                _ => {
                    // Lossless: u64::MAX / 10^16 is 1844.
                    let n = lead(d, (high / 100_000_000) as u32);
                    // Lossless: below 10^8.
                    eight(d, n, (high % 100_000_000) as u32);
                    n + 8
                }
            };
            eight(d, n, low);
            n + 8
        }
    };
    buf.truncate(len + n);
}

/// `x < 10^8` at the start of `d`, without leading zeros; returns how many digits.
#[inline(always)]
fn up_to_eight(d: &mut [u8; 20], x: u32) -> usize {
    if x < 10_000 {
        lead(d, x)
    } else {
        let n = lead(d, x / 10_000);
        four(d, n, x % 10_000);
        n + 4
    }
}

/// `x < 10^4` at the start of `d`, without leading zeros; returns how many digits.
#[inline(always)]
fn lead(d: &mut [u8; 20], x: u32) -> usize {
    if x < 10 {
        // Lossless: below 10.
        d[0] = b'0' + x as u8;
        1
    } else if x < 100 {
        d[..2].copy_from_slice(&pair(x));
        2
    } else if x < 1000 {
        // Lossless: below 10.
        d[0] = b'0' + (x / 100) as u8;
        d[1..3].copy_from_slice(&pair(x % 100));
        3
    } else {
        d[..2].copy_from_slice(&pair(x / 100));
        d[2..4].copy_from_slice(&pair(x % 100));
        4
    }
}

/// `x < 10^4` as exactly four digits at `d[at..]`.
#[inline(always)]
fn four(d: &mut [u8; 20], at: usize, x: u32) {
    d[at..at + 2].copy_from_slice(&pair(x / 100));
    d[at + 2..at + 4].copy_from_slice(&pair(x % 100));
}

/// `x < 10^8` as exactly eight digits at `d[at..]`.
#[inline(always)]
fn eight(d: &mut [u8; 20], at: usize, x: u32) {
    four(d, at, x / 10_000);
    four(d, at + 4, x % 10_000);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let mut edges = vec![0, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 99_999, 100_000];
        let mut p = 1u64;
        for _ in 0..20 {
            edges.extend([p - 1, p, p + 1]);
            p = p.wrapping_mul(10);
        }
        p = 1;
        for _ in 0..19 {
            // Inside every digit count: 2·10^k and 10^(k+1) - 1 (besides 10^k ± 1 above).
            edges.extend([2 * p, p * 9 + (p - 1)]);
            p *= 10;
        }
        edges.extend([
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            1_695_280_510_874_489_000,
            u64::MAX - 1,
            u64::MAX,
        ]);
        for v in edges {
            let mut b = vec![b'x'];
            uint(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), format!("x{v}"));
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 64);
            let mut b = Vec::new();
            uint(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
    }
}
