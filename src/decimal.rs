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

/// `10^i`.
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// How many decimal digits `v` has.
#[inline(always)]
fn digit_count(v: u64) -> usize {
    // floor(log10(v)) is floor(log2(v)) * log10(2) (1233 / 4096) or one less: at most 19.
    let t = (((64 - (v | 1).leading_zeros()) * 1233) >> 12) as usize;
    t + 1 - usize::from(v < POW10[t])
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

/// [`uint`] for `v >= 10`.
fn uint_long(buf: &mut Vec<u8>, v: u64) {
    let n = digit_count(v);
    let (len, digits) = room::<20>(buf);
    let mut i = n;
    let mut rest = v;
    // Four digits at a time while they do not fit 32 bits, then in 32-bit arithmetic.
    while rest > u64::from(u32::MAX) {
        // Lossless: below 10_000.
        let r = (rest % 10_000) as u32;
        rest /= 10_000;
        digits[i - 4..i - 2].copy_from_slice(&pair(r / 100));
        digits[i - 2..i].copy_from_slice(&pair(r % 100));
        i -= 4;
    }
    // Lossless: checked just above.
    let mut rest = rest as u32;
    while rest >= 10_000 {
        let r = rest % 10_000;
        rest /= 10_000;
        digits[i - 4..i - 2].copy_from_slice(&pair(r / 100));
        digits[i - 2..i].copy_from_slice(&pair(r % 100));
        i -= 4;
    }
    if rest >= 100 {
        digits[i - 2..i].copy_from_slice(&pair(rest % 100));
        rest /= 100;
        i -= 2;
    }
    if rest >= 10 {
        digits[i - 2..i].copy_from_slice(&pair(rest));
    } else {
        // Lossless: below 10.
        digits[i - 1] = b'0' + rest as u8;
    }
    buf.truncate(len + n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let mut edges = vec![0, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 99_999, 100_000];
        edges.extend(POW10.iter().flat_map(|&p| [p - 1, p, p + 1]));
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
