//! `dissect -f jsonl`: one JSON object per frame, keys of interfaces.md §4.
//!
//! `frame`, `time_ns`, `len`, `caplen`, `truncated`, then the layers exactly as
//! [`pretty::visit`] names them (objects for layers, arrays for lists, scalars for `immdt`,
//! `ieth`, `payload_len`), then `errors` (always present; an array of strings). The JSON is
//! written by hand into one reused line buffer: no `serde_json::Value`, no allocation per frame.

use std::fmt;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::ops::Range;

use rocescope_dissectors::ethernet::Address;
use rocescope_dissectors::pretty::{self, Value, Visitor};

use super::FrameView;

/// Lines are gathered here and handed to the output in chunks of about this size (as large as
/// the `BufWriter`'s buffer, so they go straight through it without another copy).
const CHUNK: usize = 256 << 10;

/// Writes frames as JSON lines.
pub struct JsonWriter {
    lines: Vec<u8>,
}

impl JsonWriter {
    #[must_use]
    pub fn new() -> Self {
        JsonWriter {
            lines: Vec::with_capacity(CHUNK + (64 << 10)),
        }
    }

    /// Add one frame's line (written out in chunks; see [`JsonWriter::finish`]).
    ///
    /// # Errors
    /// Those of `out`.
    pub fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        write_frame(&mut self.lines, view);
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

impl Default for JsonWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// Append `view` as one JSON object and a newline to `buf`.
pub fn write_frame(buf: &mut Vec<u8>, view: &FrameView<'_>) {
    let f = &view.frame;
    buf.extend_from_slice(b"{\"frame\":");
    uint(buf, f.number);
    buf.extend_from_slice(b",\"time_ns\":");
    uint(buf, f.time_ns);
    buf.extend_from_slice(b",\"len\":");
    uint(buf, u64::from(f.orig_len));
    buf.extend_from_slice(b",\"caplen\":");
    uint(buf, u64::from(f.caplen));
    buf.extend_from_slice(if view.truncated {
        b",\"truncated\":true"
    } else {
        b",\"truncated\":false"
    });
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
struct Json<'b> {
    buf: &'b mut Vec<u8>,
    /// A value was written last (not an opening bracket): the next member needs a comma.
    comma: bool,
}

impl Json<'_> {
    fn member(&mut self, key: &str) {
        if self.comma {
            self.buf.push(b',');
        }
        self.comma = true;
        if !key.is_empty() {
            // Keys are the field tree's static identifiers (`src`, `opcode_name`): no escaping.
            debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
            self.buf.push(b'"');
            self.buf.extend_from_slice(key.as_bytes());
            self.buf.extend_from_slice(b"\":");
        }
    }

    fn open(&mut self, key: &str, bracket: u8) {
        self.member(key);
        self.buf.push(bracket);
        self.comma = false;
    }

    fn close(&mut self, bracket: u8) {
        self.buf.push(bracket);
        self.comma = true;
    }
}

impl Visitor for Json<'_> {
    fn begin(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.open(key, b'{');
    }
    fn end(&mut self) {
        self.close(b'}');
    }
    fn begin_list(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.open(key, b'[');
    }
    fn end_list(&mut self) {
        self.close(b']');
    }
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
        Value::Mac(a) => {
            buf.push(b'"');
            mac(buf, a);
            buf.push(b'"');
        }
        Value::Ipv4(a) => {
            buf.push(b'"');
            ipv4(buf, a);
            buf.push(b'"');
        }
        Value::Ipv6(a) => {
            buf.push(b'"');
            // Display for Ipv6Addr writes straight through (no width given): no allocation.
            let _ = write!(buf, "{a}");
            buf.push(b'"');
        }
        Value::Null => buf.extend_from_slice(b"null"),
    }
}

fn uint(buf: &mut Vec<u8>, v: u64) {
    let mut b = itoa::Buffer::new();
    buf.extend_from_slice(b.format(v).as_bytes());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `aa:bb:cc:dd:ee:ff`, lowercase.
pub fn mac(buf: &mut Vec<u8>, a: Address) {
    for (i, b) in a.as_bytes().iter().enumerate() {
        if i > 0 {
            buf.push(b':');
        }
        buf.push(HEX[usize::from(b >> 4)]);
        buf.push(HEX[usize::from(b & 0xF)]);
    }
}

fn ipv4(buf: &mut Vec<u8>, a: Ipv4Addr) {
    let mut b = itoa::Buffer::new();
    for (i, o) in a.octets().iter().enumerate() {
        if i > 0 {
            buf.push(b'.');
        }
        buf.extend_from_slice(b.format(*o).as_bytes());
    }
}

/// Append `s` as the inside of a JSON string.
pub fn escape(buf: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
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
    use super::*;

    #[test]
    fn escapes() {
        let mut b = Vec::new();
        escape(&mut b, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(b).unwrap(), "a\\\"b\\\\c\\nd\\u0001é");
    }
}
