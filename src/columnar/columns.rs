//! Rows gathered column by column, as the JSON of each row is walked (member by member, from a
//! [`rocescope_dissectors::pretty::Visitor`] or a `serde_json::Value`), and handed out as one
//! Arrow [`RecordBatch`] per row group.
//!
//! Columns live in one arena: compact records for finding them (members, a memo of static keys)
//! apart from their storage (an Arrow builder for a leaf, validity and offsets for a struct or a
//! list), so a lookup touches a few cache lines. A value is written at its row's slot: a column
//! that a row does not touch is padded with nulls only when a later row touches it, or when the
//! batch is finished, so a row costs what it holds, not the width of the schema (a RoCE frame
//! fills ~35 of ~230 columns). Rows repeat a few shapes, so the static-key lookups of the rows
//! before are kept in order (`trace`) and most lookups are one comparison. Nothing here
//! allocates per row once the builders have grown.

// Indexing cannot panic here: arena indices are handed out by `Table::new` for the same arena,
// and a navigation entry only ever names a column of it.
#![allow(clippy::indexing_slicing)]

use std::fmt::{self, Write as _};
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int64Builder, StringBuilder, TimestampNanosecondBuilder,
    UInt8Builder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, FieldRef, Fields, SchemaRef};

use super::schema::{self, Kind, Node, Shape};
use crate::text;

/// One value on its way into a leaf column.
#[derive(Clone, Copy)]
pub enum Cell<'a> {
    Uint(u64),
    Int(i64),
    Bool(bool),
    Str(&'a str),
    /// `aa:bb:cc:dd:ee:ff`.
    Mac([u8; 6]),
    /// Dotted decimal.
    Ipv4([u8; 4]),
    /// Written as its `Display` shows it (IPv6 addresses, error texts).
    Text(&'a dyn fmt::Display),
    Null,
}

/// A member's name: `Static` when it is a `&'static str` (the field walk's keys), whose
/// address then identifies it; `Borrowed` otherwise (keys of a parsed JSON row).
#[derive(Clone, Copy)]
pub enum Key<'a> {
    Static(&'static str),
    Borrowed(&'a str),
}

impl<'a> Key<'a> {
    fn name(self) -> &'a str {
        match self {
            Key::Static(k) => k,
            Key::Borrowed(k) => k,
        }
    }
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(k: &'a str) -> Self {
        Key::Borrowed(k)
    }
}

/// The rows of one table being gathered.
pub struct Table {
    /// What the walk needs to find a column, compact (a lookup touches a few cache lines);
    /// indexed like `stores`.
    cols: Vec<Col>,
    /// Every column's members (or item), each column's contiguous: `kids[first..first + count]`.
    kids: Vec<(&'static str, usize)>,
    /// Every column's memo of members found by a static key, contiguous per column: `(key
    /// address, key length, column)`; the field walk's keys are `&'static str`, so after the
    /// first row a lookup is one comparison.
    memo: Vec<(usize, usize, usize)>,
    /// The columns' builders, validity and offsets.
    stores: Vec<Store>,
    /// The static-key lookups of the rows before, by their position in the row: two ways per
    /// position (one cache line), `(key address, key length, parent, column)`. Rows mostly repeat one of a few shapes (a
    /// WRITE, its ACK), so the walk reads this in order and finds its column in one compare.
    trace: Vec<[(usize, usize, usize, usize); 2]>,
    /// The next position in `trace` for the current row.
    trace_pos: usize,
    /// Where the walk of the current row is: the innermost open object or list last.
    stack: Vec<Nav>,
    /// Rows begun in this batch.
    rows: usize,
    schema: SchemaRef,
    /// Top-level columns in schema order (flattened objects expanded), for `finish`.
    top: Vec<usize>,
    /// The first member that had no column (or the wrong type), kept for one warning.
    unmapped: Option<String>,
}

#[derive(Clone, Copy)]
struct Col {
    name: &'static str,
    first: usize,
    count: usize,
    /// Where the last member lookup matched: members come in schema order, so the next
    /// lookup starts after it.
    cursor: usize,
    memo_at: usize,
    /// Memo slots (a power of two; 0 for a leaf).
    memo_len: usize,
}

enum Store {
    /// A flattened object: no storage of its own.
    Flat,
    Struct {
        valid: Vec<bool>,
        fields: Fields,
    },
    List {
        offsets: Vec<i32>,
        valid: Vec<bool>,
        field: FieldRef,
    },
    Present(BooleanBuilder),
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    I64(Int64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Time(TimestampNanosecondBuilder),
}

#[derive(Clone, Copy)]
struct Nav {
    /// `None` while a member without a column is skipped with everything under it.
    col: Option<usize>,
    slot: usize,
    /// In a list: the item's column (kept here so that finding it reads no column record).
    item: Option<usize>,
    /// In a list: the item slot the next item takes.
    next_item: usize,
}

impl Nav {
    /// A member without a column (or one written already in this row): skipped whole.
    const SKIP: Nav = Nav {
        col: None,
        slot: 0,
        item: None,
        next_item: 0,
    };
}

impl Table {
    /// An empty table of the top-level `nodes`.
    #[must_use]
    pub fn new(nodes: &[Node]) -> Table {
        let schema = Arc::new(schema::arrow_schema(nodes));
        let mut t = Table {
            cols: Vec::new(),
            kids: Vec::new(),
            memo: Vec::new(),
            stores: Vec::new(),
            trace: Vec::new(),
            trace_pos: 0,
            stack: Vec::new(),
            rows: 0,
            schema,
            top: Vec::new(),
            unmapped: None,
        };
        let root = t.add(&schema::flat("", nodes.to_vec()));
        t.top = t.expand_top(root);
        t
    }

    fn add(&mut self, node: &Node) -> usize {
        let store = match &node.shape {
            Shape::Leaf(k) => match k {
                Kind::U8 => Store::U8(UInt8Builder::new()),
                Kind::U16 => Store::U16(UInt16Builder::new()),
                Kind::U32 => Store::U32(UInt32Builder::new()),
                Kind::U64 => Store::U64(UInt64Builder::new()),
                Kind::I64 => Store::I64(Int64Builder::new()),
                Kind::Bool => Store::Bool(BooleanBuilder::new()),
                Kind::Str => Store::Str(StringBuilder::new()),
                Kind::TimestampNs => {
                    Store::Time(TimestampNanosecondBuilder::new().with_timezone("UTC"))
                }
            },
            Shape::Present => Store::Present(BooleanBuilder::new()),
            Shape::Flat(_) => Store::Flat,
            Shape::Struct(m) => Store::Struct {
                valid: Vec::new(),
                fields: schema::struct_fields(m),
            },
            Shape::List(item) => Store::List {
                offsets: vec![0],
                valid: Vec::new(),
                field: schema::item_field(item),
            },
        };
        let c = self.cols.len();
        self.cols.push(Col {
            name: node.name,
            first: 0,
            count: 0,
            cursor: 0,
            memo_at: 0,
            memo_len: 0,
        });
        self.stores.push(store);
        let members: &[Node] = match &node.shape {
            Shape::Flat(m) | Shape::Struct(m) => m,
            Shape::List(item) => std::slice::from_ref(&**item),
            _ => &[],
        };
        let kids: Vec<(&'static str, usize)> =
            members.iter().map(|m| (m.name, self.add(m))).collect();
        let col = &mut self.cols[c];
        col.first = self.kids.len();
        col.count = kids.len();
        self.kids.extend(kids);
        if !members.is_empty() {
            col.memo_at = self.memo.len();
            col.memo_len = (members.len() * 4).next_power_of_two().max(2);
            self.memo
                .resize(col.memo_at + col.memo_len, (0, 0, usize::MAX));
        }
        c
    }

    fn children(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        let col = self.cols[c];
        self.kids[col.first..col.first + col.count]
            .iter()
            .map(|&(_, k)| k)
    }

    /// The top-level columns under `c`, flattened objects expanded, in schema order.
    fn expand_top(&self, c: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for child in self.children(c) {
            if matches!(self.stores[child], Store::Flat) {
                out.extend(self.expand_top(child));
            } else {
                out.push(child);
            }
        }
        out
    }

    /// The Arrow schema of the batches.
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows begun since the last [`Table::finish`].
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The first member that had no column of its type, if any (the schema is behind the data:
    /// a bug, reported once as a warning rather than lost silently).
    #[must_use]
    pub fn unmapped(&self) -> Option<&str> {
        self.unmapped.as_deref()
    }

    /// Start a row: the members that follow are its top-level ones.
    pub fn begin_row(&mut self) {
        self.trace_pos = 0;
        self.stack.clear();
        self.stack.push(Nav {
            col: Some(0),
            slot: self.rows,
            item: None,
            next_item: 0,
        });
        self.rows += 1;
    }

    fn note_unmapped(&mut self, key: &str) {
        if self.unmapped.is_none() {
            let mut path = String::new();
            for nav in &self.stack {
                if let Some(c) = nav.col {
                    let name = self.cols[c].name;
                    if !name.is_empty() {
                        path.push_str(name);
                        path.push('.');
                    }
                }
            }
            path.push_str(if key.is_empty() { "[]" } else { key });
            self.unmapped = Some(path);
        }
    }

    /// The column a member (or, in a list, the item) goes to, and its slot. A `Key::Static`
    /// is found in the trace (one compare for a row shaped like one before), else in the memo.
    #[inline(always)]
    fn locate(&mut self, key: Key<'_>) -> Option<(usize, usize)> {
        let top = self.stack.last_mut()?;
        let parent = top.col?;
        if let Some(item) = top.item {
            let slot = top.next_item;
            top.next_item += 1;
            return Some((item, slot));
        }
        let slot = top.slot;
        let Key::Static(k) = key else {
            return self.lookup(parent, slot, key);
        };
        let addr = k.as_ptr() as usize;
        let pos = self.trace_pos;
        self.trace_pos += 1;
        if let Some(ways) = self.trace.get(pos) {
            for &(a, len, par, child) in ways {
                if a == addr && len == k.len() && par == parent {
                    return Some((child, slot));
                }
            }
        }
        self.trace_miss(pos, parent, slot, k)
    }

    /// [`Table::locate`] of a static key the trace does not have at `pos`: the lookup, kept
    /// in the trace for the rows after.
    #[cold]
    #[inline(never)]
    fn trace_miss(
        &mut self,
        pos: usize,
        parent: usize,
        slot: usize,
        k: &'static str,
    ) -> Option<(usize, usize)> {
        let found = self.lookup(parent, slot, Key::Static(k))?;
        if pos >= self.trace.len() {
            self.trace.resize(pos + 1, [(0, 0, usize::MAX, 0); 2]);
        }
        // the newest shape first, the one before it second
        let ways = &mut self.trace[pos];
        ways[1] = ways[0];
        ways[0] = (k.as_ptr() as usize, k.len(), parent, found.0);
        Some(found)
    }

    /// [`Table::locate`] without the trace: the memo, then a scan of the members.
    fn lookup(&mut self, parent: usize, slot: usize, key: Key<'_>) -> Option<(usize, usize)> {
        let p = self.cols[parent];
        let name = key.name();
        let memo_at = match key {
            Key::Static(k) if p.memo_len > 0 => {
                let addr = k.as_ptr() as usize;
                // Fibonacci hashing: literals sit next to each other in memory, and the
                // product's high bits spread neighbouring addresses over the table.
                let bits = p.memo_len.trailing_zeros();
                let h = (addr as u64 ^ k.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                // Lossless: `bits` is below 64, so the shifted value is below the table size.
                let first = (h >> (64 - bits)) as usize;
                let mask = p.memo_len - 1;
                let mut free = first;
                for probe in 0..MEMO_PROBES {
                    let i = (first + probe) & mask;
                    let (a, len, child) = self.memo[p.memo_at + i];
                    if a == addr && len == k.len() {
                        return Some((child, slot));
                    }
                    if a == 0 && free == first {
                        free = i;
                    }
                }
                Some((p.memo_at + free, addr))
            }
            _ => None,
        };
        let kids = &self.kids[p.first..p.first + p.count];
        let start = p.cursor.min(p.count);
        let found = (start..p.count)
            .chain(0..start)
            .find(|&i| kids[i].0 == name);
        match found {
            Some(i) => {
                self.cols[parent].cursor = i + 1;
                let child = kids[i].1;
                if let Some((m, addr)) = memo_at {
                    self.memo[m] = (addr, name.len(), child);
                }
                Some((child, slot))
            }
            None => {
                self.note_unmapped(name);
                None
            }
        }
    }

    /// An object member (or list item) opens.
    pub fn begin_object<'k>(&mut self, key: impl Into<Key<'k>>) {
        let key = key.into();
        let mut nav = Nav::SKIP;
        if let Some((c, slot)) = self.locate(key) {
            nav.slot = slot;
            match &mut self.stores[c] {
                Store::Flat => nav.col = Some(c),
                Store::Struct { valid, .. } => {
                    if valid.len() <= slot {
                        valid.resize(slot, false);
                        valid.push(true);
                        nav.col = Some(c);
                    }
                }
                Store::Present(_) => {
                    write_cell(&mut self.stores[c], slot, Cell::Bool(true));
                }
                _ => self.note_unmapped(key.name()),
            }
        }
        self.stack.push(nav);
    }

    /// A list member opens.
    pub fn begin_list<'k>(&mut self, key: impl Into<Key<'k>>) {
        let key = key.into();
        let mut nav = Nav::SKIP;
        if let Some((c, slot)) = self.locate(key) {
            if let Store::List { offsets, valid, .. } = &mut self.stores[c] {
                if valid.len() <= slot {
                    let last = offsets.last().copied().unwrap_or(0);
                    offsets.resize(slot + 1, last);
                    valid.resize(slot, false);
                    nav = Nav {
                        col: Some(c),
                        slot,
                        item: self.children(c).next(),
                        // Lossless: offsets are item counts of one batch.
                        next_item: usize::try_from(last).unwrap_or(0),
                    };
                }
            } else {
                self.note_unmapped(key.name());
            }
        }
        self.stack.push(nav);
    }

    /// The innermost object or list closes.
    pub fn end(&mut self) {
        let Some(nav) = self.stack.pop() else { return };
        let Some(c) = nav.col else { return };
        if let Store::List { offsets, valid, .. } = &mut self.stores[c] {
            offsets.push(i32::try_from(nav.next_item).unwrap_or(i32::MAX));
            valid.push(true);
        }
    }

    /// A scalar member (or list item).
    #[inline(always)]
    pub fn value<'k>(&mut self, key: impl Into<Key<'k>>, cell: Cell<'_>) {
        let key = key.into();
        let Some((c, slot)) = self.locate(key) else {
            return;
        };
        if !write_cell(&mut self.stores[c], slot, cell) {
            self.note_unmapped(key.name());
        }
    }

    /// The rows gathered so far as one batch; the table is empty again afterwards.
    ///
    /// # Errors
    /// An Arrow error would be a bug here (lengths and types are kept consistent).
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let rows = self.rows;
        let top = self.top.clone();
        let mut columns = Vec::with_capacity(top.len());
        for c in top {
            columns.push(self.build(c, rows)?);
        }
        self.rows = 0;
        self.stack.clear();
        for col in &mut self.cols {
            col.cursor = 0;
        }
        RecordBatch::try_new(self.schema.clone(), columns)
    }

    fn build(&mut self, c: usize, len: usize) -> Result<ArrayRef, ArrowError> {
        let children: Vec<usize> = self.children(c).collect();
        match &mut self.stores[c] {
            Store::Struct { valid, fields } => {
                valid.resize(len, false);
                let nulls = NullBuffer::from(std::mem::take(valid));
                let fields = fields.clone();
                let mut arrays = Vec::with_capacity(children.len());
                for child in children {
                    arrays.push(self.build(child, len)?);
                }
                Ok(Arc::new(StructArray::try_new(fields, arrays, Some(nulls))?))
            }
            Store::List {
                offsets,
                valid,
                field,
            } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.resize(len + 1, last);
                valid.resize(len, false);
                let nulls = NullBuffer::from(std::mem::take(valid));
                let offs = std::mem::replace(offsets, vec![0]);
                let field = field.clone();
                let items = usize::try_from(last).unwrap_or(0);
                let values = match children.first() {
                    Some(&item) => self.build(item, items)?,
                    None => return Err(ArrowError::SchemaError("list without item".into())),
                };
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offs));
                Ok(Arc::new(ListArray::try_new(
                    field,
                    offsets,
                    values,
                    Some(nulls),
                )?))
            }
            Store::Flat => Err(ArrowError::SchemaError(
                "a flattened object inside a list or struct".into(),
            )),
            store => Ok(finish_leaf(store, len)),
        }
    }
}

/// Memo slots tried per lookup (linear probing; the table has 4 slots per member).
const MEMO_PROBES: usize = 4;

/// Append `cell` at `slot` of a leaf; false when the leaf cannot hold it (the wrong type, or a
/// number too wide: a null is written then).
#[inline]
fn write_cell(store: &mut Store, slot: usize, cell: Cell<'_>) -> bool {
    // A member repeated in one object keeps its first value; a gap before `slot` (rows that
    // did not have the member) becomes nulls, only when there is one: any `append_nulls` call
    // makes the builder keep a validity bitmap.
    macro_rules! at_slot {
        ($b:expr) => {{
            let b = $b;
            if b.len() > slot {
                return true;
            }
            if b.len() < slot {
                b.append_nulls(slot - b.len());
            }
            b
        }};
    }
    macro_rules! int {
        ($b:expr, $t:ty) => {{
            let b = at_slot!($b);
            let v = match cell {
                Cell::Uint(x) => <$t>::try_from(x).ok(),
                Cell::Int(x) => <$t>::try_from(x).ok(),
                Cell::Bool(x) => Some(<$t>::from(x)),
                Cell::Null => {
                    b.append_null();
                    return true;
                }
                Cell::Str(_) | Cell::Text(_) | Cell::Mac(_) | Cell::Ipv4(_) => None,
            };
            b.append_option(v);
            v.is_some()
        }};
    }
    match store {
        Store::U8(b) => int!(b, u8),
        Store::U16(b) => int!(b, u16),
        Store::U32(b) => int!(b, u32),
        Store::U64(b) => int!(b, u64),
        Store::I64(b) => int!(b, i64),
        // nanoseconds since the epoch, as i64 (to 2262)
        Store::Time(b) => int!(b, i64),
        Store::Bool(b) | Store::Present(b) => {
            let b = at_slot!(b);
            let v = match cell {
                Cell::Bool(x) => Some(x),
                Cell::Null => None,
                _ => {
                    b.append_null();
                    return false;
                }
            };
            b.append_option(v);
            true
        }
        Store::Str(b) => {
            let b = at_slot!(b);
            match cell {
                Cell::Str(s) => b.append_value(s),
                Cell::Mac(m) => b.append_value(std::str::from_utf8(&text::mac(m)).unwrap_or("")),
                Cell::Ipv4(a) => {
                    let (s, n) = text::ipv4(a);
                    b.append_value(std::str::from_utf8(&s[..n]).unwrap_or(""));
                }
                Cell::Text(d) => {
                    // Writing into the builder's value buffer cannot fail.
                    let _ = write!(b, "{d}");
                    b.append_value("");
                }
                Cell::Null => b.append_null(),
                Cell::Uint(_) | Cell::Int(_) | Cell::Bool(_) => {
                    b.append_null();
                    return false;
                }
            }
            true
        }
        Store::Flat | Store::Struct { .. } | Store::List { .. } => false,
    }
}

/// A leaf's values, padded with nulls to `len` (the builder is empty and reusable afterwards).
fn finish_leaf(store: &mut Store, len: usize) -> ArrayRef {
    macro_rules! done {
        ($b:expr) => {{
            let b = $b;
            if b.len() < len {
                b.append_nulls(len - b.len());
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    match store {
        Store::U8(b) => done!(b),
        Store::U16(b) => done!(b),
        Store::U32(b) => done!(b),
        Store::U64(b) => done!(b),
        Store::I64(b) => done!(b),
        Store::Bool(b) | Store::Present(b) => done!(b),
        Store::Str(b) => done!(b),
        Store::Time(b) => done!(b),
        Store::Flat | Store::Struct { .. } | Store::List { .. } => {
            Arc::new(arrow_array::NullArray::new(len)) as ArrayRef
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{UInt8Type, UInt16Type};
    use arrow_array::{Array, BooleanArray};

    use super::*;
    use crate::columnar::schema::{Kind::*, flat, leaf, list_leaf, list_of, present};

    fn table() -> Table {
        Table::new(&[
            leaf("n", U16),
            flat(
                "eth",
                vec![leaf("src", Str), list_of("vlan", vec![leaf("vid", U16)])],
            ),
            present("cnp"),
            list_leaf("errors", Str),
        ])
    }

    #[test]
    fn absent_members_are_nulls_and_lists_keep_their_items() {
        let mut t = table();
        t.begin_row();
        t.value("n", Cell::Uint(1));
        t.begin_row();
        t.begin_object(Key::Static("eth"));
        t.value(Key::Static("src"), Cell::Mac([2, 0, 0, 0, 0, 0xab]));
        t.begin_list(Key::Static("vlan"));
        for vid in [10, 20] {
            t.begin_object("");
            t.value("vid", Cell::Uint(vid));
            t.end();
        }
        t.end();
        t.end();
        t.begin_object("cnp");
        t.end();
        t.begin_list("errors");
        t.value("", Cell::Str("cut"));
        t.end();
        let b = t.finish().unwrap();
        assert_eq!(b.num_rows(), 2);
        let n = b.column(0).as_primitive::<UInt16Type>();
        assert_eq!((n.value(0), n.is_null(1)), (1, true));
        let src = b.column(1).as_string::<i32>();
        assert!(src.is_null(0));
        assert_eq!(src.value(1), "02:00:00:00:00:ab");
        let vlan = b.column(2).as_list::<i32>();
        assert!(vlan.is_null(0));
        let tags = vlan.value(1);
        let vids = tags.as_struct().column(0).as_primitive::<UInt16Type>();
        assert_eq!(vids.values().to_vec(), vec![10, 20]);
        let cnp = b.column(3).as_any().downcast_ref::<BooleanArray>().unwrap();
        assert!(cnp.is_null(0) && cnp.value(1));
        let errors = b.column(4).as_list::<i32>();
        assert_eq!(errors.value(1).as_string::<i32>().value(0), "cut");
        assert_eq!(t.unmapped(), None);
        // the table is empty and reusable afterwards
        t.begin_row();
        assert_eq!(t.finish().unwrap().num_rows(), 1);
    }

    #[test]
    fn a_repeated_member_keeps_the_first_and_unknown_ones_are_named() {
        let mut t = Table::new(&[leaf("a", U8), flat("l", vec![leaf("x", U8)])]);
        t.begin_row();
        t.value("a", Cell::Uint(7));
        t.value("a", Cell::Uint(9));
        t.begin_object("l");
        t.value("nope", Cell::Uint(1));
        t.end();
        t.value("a", Cell::Uint(300)); // repeated: ignored, not a type error
        let b = t.finish().unwrap();
        assert_eq!(b.column(0).as_primitive::<UInt8Type>().value(0), 7);
        assert_eq!(t.unmapped(), Some("l.nope"));
    }

    #[test]
    fn a_value_too_wide_for_its_column_is_a_null_and_named() {
        let mut t = Table::new(&[leaf("a", U8)]);
        t.begin_row();
        t.value("a", Cell::Uint(256));
        let b = t.finish().unwrap();
        assert!(b.column(0).is_null(0));
        assert_eq!(t.unmapped(), Some("a"));
    }

    #[test]
    fn the_trace_tells_apart_two_row_shapes_and_a_third() {
        // rows alternate shapes; every value must land in its own column whatever the trace holds
        let mut t = Table::new(&[
            flat("p", vec![leaf("x", U8)]),
            flat("q", vec![leaf("y", U8)]),
            flat("r", vec![leaf("z", U8)]),
        ]);
        for i in 0..30u64 {
            t.begin_row();
            let (layer, field) = [("p", "x"), ("q", "y"), ("r", "z")][(i % 3) as usize];
            t.begin_object(Key::Static(layer));
            t.value(Key::Static(field), Cell::Uint(i));
            t.end();
        }
        let b = t.finish().unwrap();
        for i in 0..30usize {
            for c in 0..3 {
                let col = b.column(c).as_primitive::<UInt8Type>();
                if c == i % 3 {
                    assert_eq!(usize::from(col.value(i)), i);
                } else {
                    assert!(col.is_null(i));
                }
            }
        }
    }
}
