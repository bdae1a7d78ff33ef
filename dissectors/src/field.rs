//! Byte ranges of header fields, as in smoltcp's `wire::field`.

/// A fixed byte range inside a header.
pub type Field = core::ops::Range<usize>;
/// Everything from an offset to the end of the buffer.
pub type Rest = core::ops::RangeFrom<usize>;
