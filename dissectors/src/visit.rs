//! The field-tree vocabulary: a [`Visitor`] receives layers, lists and fields, each field a
//! [`Value`] with the bytes it came from. Every header module renders its own fields with it
//! (a `visit_fields` built on its `mod field`); [`crate::pretty::visit`] walks the layers of a
//! frame in wire order. `dissect -f verbose`, JSONL, display filters and the inspector's
//! detail pane are all visitors, so a field is named in exactly one place.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::Range;

/// A field's value. Integers are JSON numbers whatever their display base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Shown in decimal.
    Uint(u64),
    /// Shown in hex with at least this many digits.
    Hex(u64, u8),
    Bool(bool),
    Str(&'a str),
    /// A MAC address, shown `aa:bb:cc:dd:ee:ff`.
    Mac([u8; 6]),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    /// JSON `null` (a value that cannot be known, like an unverifiable ICRC).
    Null,
}

impl Value<'_> {
    /// The integer behind a numeric or boolean value.
    #[must_use]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Uint(v) | Value::Hex(v, _) => Some(v),
            Value::Bool(b) => Some(u64::from(b)),
            _ => None,
        }
    }
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Uint(v) => write!(f, "{v}"),
            Value::Hex(v, digits) => write!(f, "{v:#0width$x}", width = usize::from(digits) + 2),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => f.write_str(s),
            Value::Mac(b) => write!(
                f,
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                b[0], b[1], b[2], b[3], b[4], b[5]
            ),
            Value::Ipv4(a) => write!(f, "{a}"),
            Value::Ipv6(a) => write!(f, "{a}"),
            Value::Null => f.write_str("null"),
        }
    }
}

/// Receives the field tree. Layers and list items nest; a field inside a
/// list has an empty key.
pub trait Visitor {
    /// A layer (JSON object) opens: `key` is its JSON key, `title` what a person reads.
    fn begin(&mut self, key: &'static str, title: &'static str, range: Range<usize>);
    fn end(&mut self);
    /// A list (JSON array) opens; its items are layers or fields with key "".
    fn begin_list(&mut self, key: &'static str, title: &'static str, range: Range<usize>);
    fn end_list(&mut self);
    /// One field: JSON key, human label, value, bytes of the frame it lives in.
    fn field(
        &mut self,
        key: &'static str,
        label: &'static str,
        value: Value<'_>,
        range: Range<usize>,
    );
}

/// A header's field range moved to where the header starts in the frame.
#[inline]
#[must_use]
pub const fn span(offset: usize, field: Range<usize>) -> Range<usize> {
    offset + field.start..offset + field.end
}

/// The one byte at `index` of a header that starts at `offset`.
#[inline]
#[must_use]
pub const fn byte(offset: usize, index: usize) -> Range<usize> {
    offset + index..offset + index + 1
}
