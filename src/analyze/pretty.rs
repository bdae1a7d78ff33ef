//! JSON written directly, laid out byte for byte as `serde_json`'s `to_writer_pretty` lays it
//! out (two-space indent, `"key": value`, `[]` and `{}` when empty) or, on one line, as its
//! `to_writer` does (`--each`'s lines), for the report's long lists: through serde, a
//! 400,000-flow report spent most of its time escaping the same static keys. Tests compare
//! both layouts with serde's on every demo capture.

use std::io::{self, Write as _};

use serde::Serialize;

/// `,` and a newline, then spaces: the start of any line of the report (it nests 5 deep) is a
/// slice of it.
const LEAD: &[u8; 64] = b",\n                                                              ";
/// Bytes [`new_line`] copies at once, then cuts to length.
const LEAD_COPY: usize = 48;

/// The indentation of nesting `depth`.
fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

/// A new line (after a `,` when `comma`) indented for nesting `depth`: one fixed-size copy (no
/// call to `memcpy`) cut to length, where pushing its bytes a few at a time was a fifth of
/// writing a large report (the events, one object each; the flows have constant line starts,
/// see `json::flow`).
#[inline(always)]
fn new_line(out: &mut Vec<u8>, comma: bool, depth: usize) {
    let from = usize::from(!comma);
    let len = 2 + 2 * depth - from;
    match LEAD.get(from..from + LEAD_COPY) {
        Some(lead) if len <= LEAD_COPY => {
            let at = out.len();
            out.extend_from_slice(lead);
            out.truncate(at + len);
        }
        _ => {
            out.extend_from_slice(if comma { b",\n" } else { b"\n" });
            indent(out, depth);
        }
    }
}

/// A JSON string, escaped as serde_json escapes it.
pub fn string(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // cannot fail: a str always serializes
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Where a value sits: at a nesting depth of the pretty layout, or on one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Depth(usize),
    Line,
}

/// `value` as `to_writer_pretty` writes it when it sits at nesting `depth` (its inner lines
/// indented one level more, [`AtDepth`]). On one line: as `to_writer` writes it.
pub fn serde_at(out: &mut Vec<u8>, at: At, value: &impl Serialize) {
    // cannot fail: the report's types always serialize, and a Vec takes every write
    let _ = match at {
        At::Depth(depth) => value
            .serialize(&mut serde_json::Serializer::with_formatter(
                &mut *out,
                AtDepth::new(depth),
            ))
            .map_err(io::Error::from),
        At::Line => serde_json::to_writer(&mut *out, value).map_err(io::Error::from),
    };
}

/// `value` as `to_writer_pretty` writes it when it sits at nesting `depth`, streamed to `out`
/// (a large value: the between-taps flows).
///
/// # Errors
/// Output errors.
pub fn serde_pretty(
    out: &mut dyn io::Write,
    depth: usize,
    value: &impl Serialize,
) -> io::Result<()> {
    // serde's short writes gathered first: each through `dyn Write` cost 1.16x the two-tap
    // report's time
    let mut gathered = io::BufWriter::with_capacity(1 << 16, out);
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut gathered,
            AtDepth::new(depth),
        ))
        .map_err(io::Error::from)?;
    gathered.flush()
}

/// serde_json's pretty layout (its `PrettyFormatter`, two-space indent) for a value that sits
/// at nesting `depth` of a larger document: its lines start `depth` levels deeper. Written as
/// it is serialized, where indenting serde's own output afterwards looked through every byte
/// of it again for newlines.
pub struct AtDepth {
    depth: usize,
    /// The array or object just begun has an item (`PrettyFormatter`'s `has_value`).
    has_value: bool,
}

impl AtDepth {
    #[must_use]
    pub fn new(depth: usize) -> Self {
        AtDepth {
            depth,
            has_value: false,
        }
    }

    /// A new line (after a `,` when `comma`) at the current depth.
    fn line<W: ?Sized + io::Write>(&self, w: &mut W, comma: bool) -> io::Result<()> {
        let from = usize::from(!comma);
        match LEAD.get(from..2 + 2 * self.depth) {
            Some(lead) => w.write_all(lead),
            None => {
                w.write_all(if comma { b",\n" } else { b"\n" })?;
                (0..self.depth).try_for_each(|_| w.write_all(b"  "))
            }
        }
    }

    fn begin<W: ?Sized + io::Write>(&mut self, w: &mut W, open: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + io::Write>(&mut self, w: &mut W, close: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.line(w, false)?;
        }
        w.write_all(close)
    }
}

impl serde_json::ser::Formatter for AtDepth {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"]")
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, !first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"}")
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, !first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// A separator before an item or a member at `at` (the item's own depth), or before a
/// closing bracket (`comma` false): on one line, only the comma.
#[inline(always)]
pub fn separate(out: &mut Vec<u8>, comma: bool, at: At) {
    match at {
        At::Depth(depth) => new_line(out, comma, depth),
        At::Line if comma => out.push(b','),
        At::Line => {}
    }
}

/// A member's separator (after a `,` when `comma`) and `"key": ` for a member at `at` (`"key":`
/// on one line); `key` needs no escaping (the report's keys are names).
#[inline(always)]
pub fn key(out: &mut Vec<u8>, comma: bool, at: At, key: &str) {
    separate(out, comma, at);
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(match at {
        At::Depth(_) => b"\": ",
        At::Line => b"\":",
    });
}

/// One level deeper than `at`.
fn inner(at: At) -> At {
    match at {
        At::Depth(depth) => At::Depth(depth + 1),
        At::Line => At::Line,
    }
}

/// An object being written; `at` is the nesting of its braces.
pub struct Object<'o> {
    out: &'o mut Vec<u8>,
    at: At,
    empty: bool,
}

impl<'o> Object<'o> {
    /// `{`, at `at` (the caller has placed it).
    pub fn begin(out: &'o mut Vec<u8>, at: At) -> Self {
        out.push(b'{');
        Object {
            out,
            at,
            empty: true,
        }
    }

    /// `"key": ` on a line of its own (`"key":` on one line); `key` needs no escaping (the
    /// report's keys are names). Inlined, as are the members below: the key is a constant
    /// where they are called, and copying it takes a few moves instead of a call to `memcpy`.
    #[inline(always)]
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self::key(self.out, !self.empty, inner(self.at), key);
        self.empty = false;
        self.out
    }

    #[inline(always)]
    pub fn num(&mut self, key: &str, v: impl Into<u64>) {
        let out = self.key(key);
        crate::decimal::uint(out, v.into());
    }

    /// A number or `null`.
    #[inline(always)]
    pub fn opt(&mut self, key: &str, v: Option<impl Into<u64>>) {
        let out = self.key(key);
        match v {
            Some(v) => crate::decimal::uint(out, v.into()),
            None => out.extend_from_slice(b"null"),
        }
    }

    #[inline(always)]
    pub fn str(&mut self, key: &str, v: &str) {
        let out = self.key(key);
        string(out, v);
    }

    /// `}` (on its own line unless the object is empty).
    pub fn end(self) {
        if !self.empty {
            separate(self.out, false, self.at);
        }
        self.out.push(b'}');
    }
}

/// An array at `at` whose items are written one at a time.
pub struct Array {
    at: At,
    empty: bool,
}

impl Array {
    /// `[`, at `at`.
    pub fn begin(out: &mut Vec<u8>, at: At) -> Self {
        out.push(b'[');
        Array { at, empty: true }
    }

    /// Before an item: the separator and the item's indentation. Returns where the item sits.
    pub fn item(&mut self, out: &mut Vec<u8>) -> At {
        let at = inner(self.at);
        separate(out, !self.empty, at);
        self.empty = false;
        at
    }

    /// `]` (on its own line unless the array is empty).
    pub fn end(self, out: &mut Vec<u8>) {
        if !self.empty {
            separate(out, false, self.at);
        }
        out.push(b']');
    }
}

/// `text` onto `into` with `indent` after each of its newlines: pretty text made for one
/// nesting, moved deeper (a newline in pretty JSON is always layout: strings escape theirs).
pub fn indent_into(into: &mut Vec<u8>, mut text: &[u8], indent: &[u8]) {
    while let Some(at) = memchr::memchr(b'\n', text) {
        let (line, rest) = text.split_at(at + 1);
        into.extend_from_slice(line);
        into.extend_from_slice(indent);
        text = rest;
    }
    into.extend_from_slice(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value written pretty for nesting 0 and indented by two levels ([`indent_into`])
    /// reads as serde lays it out inside two levels of nesting.
    #[test]
    fn indented_values_read_as_nested_ones() {
        let value = serde_json::json!({"a": [1, {"b": "x\ny"}], "c": {}, "d": []});
        let nested = serde_json::json!([[value.clone()]]);
        let whole = serde_json::to_string_pretty(&nested).unwrap();
        let mut ours = b"[\n  [\n    ".to_vec();
        indent_into(
            &mut ours,
            &serde_json::to_vec_pretty(&value).unwrap(),
            b"    ",
        );
        ours.extend_from_slice(b"\n  ]\n]");
        assert_eq!(String::from_utf8(ours).unwrap(), whole);
    }

    /// A value written at depth `d` ([`AtDepth`]) inside `d` arrays reads as serde's pretty
    /// layout of the value nested in them: empty and full arrays and objects, strings with
    /// newlines, at every depth up to past what [`LEAD`] holds.
    #[test]
    fn values_at_a_depth_read_as_nested_ones() {
        let value = serde_json::json!({
            "a": [1, {"b": "x\ny", "e": []}], "c": {}, "d": [[], [{}], {"f": null}], "g": "h"
        });
        for depth in [0, 1, 2, 5, 31, 32, 40] {
            let mut nested = value.clone();
            for _ in 0..depth {
                nested = serde_json::json!([nested]);
            }
            let whole = serde_json::to_string_pretty(&nested).unwrap();
            let mut ours = Vec::new();
            for i in 0..depth {
                ours.extend_from_slice(b"[\n");
                ours.extend(std::iter::repeat_n(b' ', 2 * (i + 1)));
            }
            serde_at(&mut ours, At::Depth(depth), &value);
            for i in (0..depth).rev() {
                ours.push(b'\n');
                ours.extend(std::iter::repeat_n(b' ', 2 * i));
                ours.push(b']');
            }
            assert_eq!(String::from_utf8(ours).unwrap(), whole, "depth {depth}");
            let mut streamed = Vec::new();
            serde_pretty(&mut streamed, depth, &value).unwrap();
            let mut at = Vec::new();
            serde_at(&mut at, At::Depth(depth), &value);
            assert_eq!(streamed, at, "depth {depth}");
        }
    }
}
