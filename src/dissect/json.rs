//! `dissect -f jsonl`: one JSON object per frame, keys of interfaces.md §4.
//!
//! `frame`, `time_ns`, `len`, `caplen`, `truncated`, then the layers exactly as
//! [`pretty::visit`] names them (objects for layers, arrays for lists, scalars for `immdt`,
//! `ieth`, `payload_len`), then `errors` (always present; an array of strings). The JSON is
//! written by hand into one reused line buffer: no `serde_json::Value`, no allocation per frame.

// Indexing cannot panic here: numbers are formatted into fixed arrays sized for the largest value
// (20 digits, 17-byte MACs, 39-byte IPv6); the digit and hex tables are indexed by a digit pair or
// a nibble; escapes slice the string at positions found in it.
#![allow(clippy::indexing_slicing)]

use std::fmt;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::ops::Range;

use rocescope_dissectors::pretty::{self, Value, Visitor};

use crate::decimal::{pair, room, uint};
use crate::frame::FrameView;

/// Lines are gathered here and handed to the output in chunks of about this size (as large as
/// the `BufWriter`'s buffer, so they go straight through it without another copy).
const CHUNK: usize = 256 << 10;

/// Writes frames as JSON lines.
#[derive(Clone)]
pub struct JsonWriter {
    lines: Vec<u8>,
    time: TimeDigits,
}

impl JsonWriter {
    #[must_use]
    pub fn new() -> Self {
        JsonWriter {
            lines: Vec::with_capacity(CHUNK + (64 << 10)),
            time: TimeDigits::default(),
        }
    }

    /// Write the gathered lines out once they fill a chunk.
    fn spill(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.lines.len() >= CHUNK {
            out.write_all(&self.lines)?;
            self.lines.clear();
        }
        Ok(())
    }

    /// Write out the lines still gathered.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        let r = out.write_all(&self.lines);
        self.lines.clear();
        r
    }
}

impl super::Lines for JsonWriter {
    /// Add one frame's line (written out in chunks; see [`JsonWriter::finish`]).
    fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        write_frame(&mut self.lines, view, &mut self.time);
        self.spill(out)
    }

    fn append(&mut self, view: &FrameView<'_>, buf: &mut Vec<u8>) {
        write_frame(buf, view, &mut self.time);
    }

    fn line(&mut self, line: &[u8], out: &mut impl Write) -> io::Result<()> {
        self.lines.extend_from_slice(line);
        self.spill(out)
    }
}

impl Default for JsonWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// The decimal digits of the seconds part of the last `time_ns` written:
/// frames of one second share them, so only the nine nanosecond digits are
/// formatted per frame (a 19-digit number per frame was the writer's top cost).
#[derive(Debug, Default, Clone)]
pub struct TimeDigits {
    secs: Option<u64>,
    /// The digits, left-aligned (a `u64` of nanoseconds has at most 11 digits of seconds):
    /// copied whole and cut to `len`, a fixed-size copy rather than a call to `memcpy`.
    digits: [u8; SECS_DIGITS],
    len: usize,
}

/// Room for the seconds of any `u64` of nanoseconds (11 digits) in one 16-byte copy.
const SECS_DIGITS: usize = 16;

impl TimeDigits {
    /// Append `time_ns` in decimal, exactly as [`uint`] would.
    fn write(&mut self, buf: &mut Vec<u8>, time_ns: u64) {
        const NS: u64 = 1_000_000_000;
        if time_ns < NS {
            uint(buf, time_ns);
            return;
        }
        let secs = time_ns / NS;
        if self.secs != Some(secs) {
            // formatted at the end of `buf`, kept, and taken off again
            let start = buf.len();
            uint(buf, secs);
            self.len = (buf.len() - start).min(SECS_DIGITS);
            self.digits = [0; SECS_DIGITS];
            self.digits[..self.len].copy_from_slice(&buf[start..start + self.len]);
            buf.truncate(start);
            self.secs = Some(secs);
        }
        // Lossless: below 10^9.
        let ns = (time_ns % NS) as u32;
        let (at, d) = room::<{ SECS_DIGITS + 9 }>(buf);
        d[..SECS_DIGITS].copy_from_slice(&self.digits);
        let n = self.len;
        let d = &mut d[n..n + 9];
        d[0] = b'0' + (ns / 100_000_000) as u8;
        let r = ns % 100_000_000;
        d[1..3].copy_from_slice(&pair(r / 1_000_000));
        d[3..5].copy_from_slice(&pair(r / 10_000 % 100));
        d[5..7].copy_from_slice(&pair(r / 100 % 100));
        d[7..9].copy_from_slice(&pair(r % 100));
        buf.truncate(at + n + 9);
    }
}

/// Append `view` as one JSON object and a newline to `buf`.
pub fn write_frame(buf: &mut Vec<u8>, view: &FrameView<'_>, time: &mut TimeDigits) {
    let f = &view.frame;
    buf.extend_from_slice(b"{\"frame\":");
    uint(buf, f.number);
    buf.extend_from_slice(b",\"time_ns\":");
    time.write(buf, f.time_ns);
    buf.extend_from_slice(b",\"len\":");
    uint(buf, u64::from(view.wire_len()));
    buf.extend_from_slice(b",\"caplen\":");
    uint(buf, u64::from(view.captured_len()));
    // one constant copy per branch (a copy of either length would be a call to `memcpy`)
    if view.truncated {
        buf.extend_from_slice(b",\"truncated\":true");
    } else {
        buf.extend_from_slice(b",\"truncated\":false");
    }
    let mut v = Json { buf, comma: true };
    if let Some(d) = &view.dissected {
        pretty::visit(d, &mut v);
    }
    let buf = v.buf;
    buf.extend_from_slice(b",\"errors\":[");
    if let Some(p) = &view.problem {
        buf.push(b'"');
        // Writing into a Vec cannot fail.
        let _ = fmt::write(&mut Escaped(buf), format_args!("{p}"));
        buf.push(b'"');
    }
    buf.extend_from_slice(b"]}\n");
}

/// The visitor: objects for layers, arrays for lists, one member per field.
///
/// Every method is inlined into [`pretty::visit`]'s call sites, where the key and the kind of
/// value are constants: a member becomes a few fixed-size copies, with no call and no `match`.
struct Json<'b> {
    buf: &'b mut Vec<u8>,
    /// A value was written last (not an opening bracket): the next member needs a comma.
    comma: bool,
}

impl Json<'_> {
    #[inline(always)]
    fn member(&mut self, key: &str) {
        if key.is_empty() {
            if self.comma {
                self.buf.push(b',');
            }
        } else {
            // Keys are the field tree's static identifiers (`src`, `opcode_name`): no escaping.
            debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
            // one byte at a time: `,"` or `"` chosen at run time was a call to `memcpy`
            if self.comma {
                self.buf.push(b',');
            }
            self.buf.push(b'"');
            self.buf.extend_from_slice(key.as_bytes());
            self.buf.extend_from_slice(b"\":");
        }
        self.comma = true;
    }

    #[inline(always)]
    fn open(&mut self, key: &str, bracket: u8) {
        self.member(key);
        self.buf.push(bracket);
        self.comma = false;
    }

    #[inline(always)]
    fn close(&mut self, bracket: u8) {
        self.buf.push(bracket);
        self.comma = true;
    }
}

impl Visitor for Json<'_> {
    #[inline(always)]
    fn begin(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.open(key, b'{');
    }
    #[inline(always)]
    fn end(&mut self) {
        self.close(b'}');
    }
    #[inline(always)]
    fn begin_list(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.open(key, b'[');
    }
    #[inline(always)]
    fn end_list(&mut self) {
        self.close(b']');
    }
    #[inline(always)]
    fn field(
        &mut self,
        key: &'static str,
        _label: &'static str,
        value: Value<'_>,
        _range: Range<usize>,
    ) {
        self.member(key);
        write_value(self.buf, value);
    }
}

/// A field value as JSON: numbers for every integer, strings for addresses.
#[inline(always)]
pub fn write_value(buf: &mut Vec<u8>, value: Value<'_>) {
    match value {
        Value::Uint(v) | Value::Hex(v, _) => uint(buf, v),
        Value::Bool(true) => buf.extend_from_slice(b"true"),
        Value::Bool(false) => buf.extend_from_slice(b"false"),
        Value::Str(s) => {
            buf.push(b'"');
            escape(buf, s);
            buf.push(b'"');
        }
        Value::Mac(a) => mac_quoted(buf, a),
        Value::Ipv4(a) => ipv4_quoted(buf, a),
        Value::Ipv6(a) => {
            buf.push(b'"');
            // Display for Ipv6Addr writes straight through (no width given): no allocation.
            let _ = write!(buf, "{a}");
            buf.push(b'"');
        }
        Value::Null => buf.extend_from_slice(b"null"),
    }
}

use crate::text::HEX;

/// `"aa:bb:cc:dd:ee:ff"`: lowercase, in double quotes.
fn mac_quoted(buf: &mut Vec<u8>, a: [u8; 6]) {
    let (_, s) = room::<19>(buf);
    s[0] = b'"';
    let (text, end) = s[1..].split_at_mut(17);
    // Cannot fail: 17 bytes.
    crate::text::mac_into(text.try_into().unwrap_or_else(|_| unreachable!()), a);
    end[0] = b'"';
}

/// The dotted quad in double quotes.
fn ipv4_quoted(buf: &mut Vec<u8>, a: Ipv4Addr) {
    let (len, s) = room::<20>(buf);
    s[0] = b'"';
    // Cannot fail: 16 bytes.
    let text = (&mut s[1..17])
        .try_into()
        .unwrap_or_else(|_| unreachable!());
    let n = crate::text::ipv4_into(text, a.octets());
    s[1 + n] = b'"';
    buf.truncate(len + n + 2);
}

/// Append `s` as the inside of a JSON string.
pub fn escape(buf: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if !needs_escape(bytes) {
        buf.extend_from_slice(bytes);
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1F => b"",
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            buf.extend_from_slice(b"\\u00");
            buf.push(HEX[usize::from(b >> 4)]);
            buf.push(HEX[usize::from(b & 0xF)]);
        } else {
            buf.extend_from_slice(esc);
        }
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
}

/// Whether `bytes` holds a quote, a backslash or a control character: eight bytes at a time
/// (most strings are opcode names, 15 to 30 bytes with none of them).
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // nonzero exactly when some byte of `word` is zero
    let has_zero_byte = |word: u64| word.wrapping_sub(ONES) & !word & HIGH;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        // Cannot fail: chunks of 8.
        let word = u64::from_le_bytes(w.try_into().unwrap_or_else(|_| unreachable!()));
        // below 0x20: the top three bits clear; a quote or a backslash: zero after the XOR
        let control = has_zero_byte(word & (0xE0 * ONES));
        let quote = has_zero_byte(word ^ (u64::from(b'"') * ONES));
        let backslash = has_zero_byte(word ^ (u64::from(b'\\') * ONES));
        if control | quote | backslash != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// `fmt::Write` into a JSON string body.
struct Escaped<'b>(&'b mut Vec<u8>);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape(self.0, s);
        Ok(())
    }
}

#[cfg(test)]
mod test {

    #[test]
    fn time_digits_match_to_string() {
        let mut t = TimeDigits::default();
        let mut values = vec![
            0,
            9,
            10,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            1_700_000_000_000_001_884,
            1_700_000_000_999_999_999,
            1_700_000_001_000_000_000,
            1_700_000_000_000_000_005, // back into an earlier second
            u64::MAX,
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(1_700_000_000_000_000_000 + x % 5_000_000_000);
            values.push(x);
        }
        for v in values {
            let mut buf = b"x".to_vec();
            t.write(&mut buf, v);
            assert_eq!(&buf[1..], v.to_string().as_bytes(), "{v}");
        }
    }

    use super::*;

    #[test]
    fn addresses() {
        for a in [
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 0, 99, 100],
            [1, 22, 133, 9],
        ] {
            let a = Ipv4Addr::from(a);
            let mut b = vec![b'x'];
            ipv4_quoted(&mut b, a);
            assert_eq!(String::from_utf8(b).unwrap(), format!("x\"{a}\""));
        }
        for o in 0..=255u8 {
            let a = Ipv4Addr::new(o, 255 - o, o / 3, o.wrapping_mul(7));
            let mut b = Vec::new();
            ipv4_quoted(&mut b, a);
            assert_eq!(String::from_utf8(b).unwrap(), format!("\"{a}\""));
        }
        let a = [0x08, 0xc0, 0xeb, 0xda, 0xe2, 0xe6];
        let mut b = Vec::new();
        mac_quoted(&mut b, a);
        assert_eq!(String::from_utf8(b).unwrap(), "\"08:c0:eb:da:e2:e6\"");
    }

    #[test]
    fn needs_escape_finds_every_special_byte_at_every_place() {
        for len in 1..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    let special = b < 0x20 || b == b'"' || b == b'\\';
                    assert_eq!(needs_escape(&s), special, "{b:#x} at {at} of {len}");
                }
            }
        }
        assert!(!needs_escape("RC_RDMA_WRITE_FIRST é ! # [ ] ~".as_bytes()));
    }

    #[test]
    fn escapes() {
        let mut b = Vec::new();
        escape(&mut b, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(b).unwrap(), "a\\\"b\\\\c\\nd\\u0001é");
    }
}
