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
/// it is serialized, where indenting serde's own output afterwards ([`Indented`]) looked
/// through every byte of it again for newlines.
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
fn separate(out: &mut Vec<u8>, comma: bool, at: At) {
    match at {
        At::Depth(depth) => new_line(out, comma, depth),
        At::Line if comma => out.push(b','),
        At::Line => {}
    }
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
        separate(self.out, !self.empty, inner(self.at));
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(match self.at {
            At::Depth(_) => b"\": ",
            At::Line => b"\":",
        });
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

/// A writer that indents what goes through it by nesting `depth` after every newline, so that
/// a pretty JSON value written for nesting 0 sits deeper in a larger document (a newline in
/// pretty JSON is always layout: strings escape theirs). The last newline is held back and
/// dropped unless more follows: the value's trailing newline is not its parent's.
///
/// Lines are gathered in a block of its own (a report's 24 million lines are not each a call
/// through `dyn Write`), handed on when full and by `flush`, which the writer of the value
/// must call at its end.
pub struct Indented<'w> {
    out: &'w mut dyn io::Write,
    indent: &'static [u8],
    block: Vec<u8>,
    held_newline: bool,
}

/// What [`Indented`] gathers before handing it on.
const INDENTED_BLOCK: usize = 64 << 10;

impl<'w> Indented<'w> {
    /// Indenting by nesting `depth` (at most 31).
    pub fn new(out: &'w mut dyn io::Write, depth: usize) -> Self {
        Indented {
            out,
            indent: LEAD.get(2..2 + 2 * depth).unwrap_or_default(),
            // grown as it fills: a small value (a PFC row) costs no 64 KiB
            block: Vec::new(),
            held_newline: false,
        }
    }

    fn newline(&mut self) {
        self.block.push(b'\n');
        self.block.extend_from_slice(self.indent);
    }

    /// What follows each newline.
    #[must_use]
    pub fn indent(&self) -> &'static [u8] {
        self.indent
    }

    /// A writer for text already indented (by [`indent_into`] with [`Indented::indent`]), and
    /// not ending in a newline: handed on as it is, after what came before it, so that text
    /// indented on other threads is not looked through again here.
    pub fn already_indented(&mut self) -> AlreadyIndented<'_, 'w> {
        AlreadyIndented(self)
    }
}

/// See [`Indented::already_indented`].
pub struct AlreadyIndented<'a, 'w>(&'a mut Indented<'w>);

impl io::Write for AlreadyIndented<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let it = &mut *self.0;
        if bytes.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut it.held_newline) {
            it.newline();
        }
        if !it.block.is_empty() {
            it.out.write_all(&it.block)?;
            it.block.clear();
        }
        it.out.write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `text` onto `into` with `indent` after each of its newlines, as [`Indented`] writes it
/// (except that a trailing newline is indented too).
pub fn indent_into(into: &mut Vec<u8>, mut text: &[u8], indent: &[u8]) {
    while let Some(at) = memchr::memchr(b'\n', text) {
        let (line, rest) = text.split_at(at + 1);
        into.extend_from_slice(line);
        into.extend_from_slice(indent);
        text = rest;
    }
    into.extend_from_slice(text);
}

impl io::Write for Indented<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.held_newline) {
            self.newline();
        }
        while let Some(at) = memchr::memchr(b'\n', bytes) {
            let (line, rest) = bytes.split_at(at);
            self.block.extend_from_slice(line);
            bytes = rest.get(1..).unwrap_or_default();
            if bytes.is_empty() {
                self.held_newline = true;
                break;
            }
            self.newline();
            if self.block.len() >= INDENTED_BLOCK {
                self.out.write_all(&self.block)?;
                self.block.clear();
            }
        }
        self.block.extend_from_slice(bytes);
        if self.block.len() >= INDENTED_BLOCK {
            self.out.write_all(&self.block)?;
            self.block.clear();
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.block)?;
        self.block.clear();
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value written pretty for nesting 0 and indented by two levels reads as serde lays it
    /// out inside two levels of nesting, however its bytes are split across writes (a newline
    /// at the end of one write, at the start of the next), its trailing newline dropped.
    #[test]
    fn indented_values_read_as_nested_ones() {
        let value = serde_json::json!({"a": [1, {"b": "x\ny"}], "c": {}, "d": []});
        let nested = serde_json::json!([[value.clone()]]);
        let whole = serde_json::to_string_pretty(&nested).unwrap();
        let mut alone = serde_json::to_vec_pretty(&value).unwrap();
        alone.push(b'\n');
        for split in 1..alone.len() {
            let mut out = Vec::new();
            let mut indented = Indented::new(&mut out, 2);
            for piece in alone.chunks(split) {
                indented.write_all(piece).unwrap();
            }
            indented.flush().unwrap();
            let got = format!("[\n  [\n    {}\n  ]\n]", String::from_utf8(out).unwrap());
            assert_eq!(got, whole, "written {split} bytes at a time");
        }
    }

    /// Text indented apart ([`indent_into`]) and handed through [`Indented::already_indented`]
    /// between text written through the [`Indented`] itself reads as all of it written
    /// through the [`Indented`]: also when what came before ends in a newline (held back)
    /// and the indented part starts with one.
    #[test]
    fn text_indented_apart_reads_as_text_indented_through() {
        let parts: [&[u8]; 4] = [b"{\n  \"a\": [\n", b"    1,\n    2", b"\n  ]", b"\n}\n"];
        for apart in 0..parts.len() {
            let mut through = Vec::new();
            let mut indented = Indented::new(&mut through, 2);
            for p in parts {
                indented.write_all(p).unwrap();
            }
            indented.flush().unwrap();
            let mut mixed = Vec::new();
            let mut indented = Indented::new(&mut mixed, 2);
            for (i, p) in parts.iter().enumerate() {
                if i == apart && !p.ends_with(b"\n") {
                    let mut done = Vec::new();
                    indent_into(&mut done, p, indented.indent());
                    indented.already_indented().write_all(&done).unwrap();
                } else {
                    indented.write_all(p).unwrap();
                }
            }
            indented.flush().unwrap();
            assert_eq!(
                String::from_utf8(mixed).unwrap(),
                String::from_utf8(through).unwrap(),
                "part {apart} indented apart"
            );
        }
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
