//! A row of a [`Table`] from any `Serialize` struct, its members found by their field names:
//! the `analyze -f parquet` tables are the JSON report's own rows.
//!
//! Serialized straight into the table's columns. Through a `serde_json::Value` first, each
//! row of a 400,000-flow report built a map of 75 owned keys, and looking its keys up again
//! by text took most of the rest: 4 s where the JSON report takes half a second. Field names
//! are `&'static str` here, which the table finds by address ([`Key::Static`]).

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible, SerializeSeq, SerializeStruct};

use super::columns::{Cell, Key, Table};

/// What cannot be a row: a value of a shape the report's rows never have (maps, tuples,
/// enums with data, bytes, floats).
#[derive(Debug)]
pub struct RowError(String);

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RowError {}

impl ser::Error for RowError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        RowError(msg.to_string())
    }
}

/// Start a row of `table` and write `row`'s fields into it: each field to the column of its
/// name, nested structs to struct columns, sequences to list columns, `None` as null. The row
/// stays open: members may be added to it after ([`Table::value`]).
///
/// # Errors
/// `row` is not a struct, or holds a value of a shape no column has (see [`RowError`]).
pub fn add_row(table: &mut Table, row: &impl Serialize) -> Result<(), RowError> {
    row.serialize(Member { table, key: None })
}

/// A member named `key` of the row, of a struct in it, or an item of a list (`""`); with no
/// key, the row itself (a struct, whose fields are the row's top-level members).
struct Member<'t> {
    table: &'t mut Table,
    key: Option<&'static str>,
}

/// The fields of a struct, or the items of a list; `close` ends the object or list (not the
/// row's own struct, which stays open).
struct Members<'t> {
    table: &'t mut Table,
    close: bool,
}

fn unsupported(what: &str) -> RowError {
    RowError(format!("a {what} has no column"))
}

impl Member<'_> {
    /// The member's key, or the error for a row that is not a struct.
    fn key(&self) -> Result<Key<'static>, RowError> {
        self.key
            .map(Key::Static)
            .ok_or_else(|| unsupported("row that is not a struct"))
    }

    fn cell(self, cell: Cell<'_>) -> Result<(), RowError> {
        let key = self.key()?;
        self.table.value(key, cell);
        Ok(())
    }
}

impl<'t> ser::Serializer for Member<'t> {
    type Ok = ();
    type Error = RowError;
    type SerializeSeq = Members<'t>;
    type SerializeTuple = Impossible<(), RowError>;
    type SerializeTupleStruct = Impossible<(), RowError>;
    type SerializeTupleVariant = Impossible<(), RowError>;
    type SerializeMap = Impossible<(), RowError>;
    type SerializeStruct = Members<'t>;
    type SerializeStructVariant = Impossible<(), RowError>;

    fn serialize_bool(self, v: bool) -> Result<(), RowError> {
        self.cell(Cell::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), RowError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), RowError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), RowError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), RowError> {
        // as serde_json reads a number: unsigned whenever it is not negative
        match u64::try_from(v) {
            Ok(u) => self.cell(Cell::Uint(u)),
            Err(_) => self.cell(Cell::Int(v)),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), RowError> {
        self.cell(Cell::Uint(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), RowError> {
        self.cell(Cell::Uint(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), RowError> {
        self.cell(Cell::Uint(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), RowError> {
        self.cell(Cell::Uint(v))
    }
    fn serialize_f32(self, _: f32) -> Result<(), RowError> {
        Err(unsupported("fractional number"))
    }
    fn serialize_f64(self, _: f64) -> Result<(), RowError> {
        Err(unsupported("fractional number"))
    }
    fn serialize_char(self, v: char) -> Result<(), RowError> {
        let mut b = [0; 4];
        self.cell(Cell::Str(v.encode_utf8(&mut b)))
    }
    fn serialize_str(self, v: &str) -> Result<(), RowError> {
        self.cell(Cell::Str(v))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), RowError> {
        Err(unsupported("byte string"))
    }
    fn serialize_none(self) -> Result<(), RowError> {
        self.cell(Cell::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), RowError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), RowError> {
        self.cell(Cell::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), RowError> {
        self.cell(Cell::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), RowError> {
        self.cell(Cell::Str(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), RowError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), RowError> {
        Err(unsupported("enum with data"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Members<'t>, RowError> {
        let key = self.key()?;
        self.table.begin_list(key);
        Ok(Members {
            table: self.table,
            close: true,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, RowError> {
        Err(unsupported("tuple"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, RowError> {
        Err(unsupported("tuple"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, RowError> {
        Err(unsupported("enum with data"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, RowError> {
        Err(unsupported("map"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Members<'t>, RowError> {
        match self.key {
            Some(key) => self.table.begin_object(Key::Static(key)),
            None => self.table.begin_row(),
        }
        Ok(Members {
            table: self.table,
            close: self.key.is_some(),
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, RowError> {
        Err(unsupported("enum with data"))
    }
}

impl SerializeStruct for Members<'_> {
    type Ok = ();
    type Error = RowError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), RowError> {
        v.serialize(Member {
            table: self.table,
            key: Some(key),
        })
    }

    fn end(self) -> Result<(), RowError> {
        if self.close {
            self.table.end();
        }
        Ok(())
    }
}

impl SerializeSeq for Members<'_> {
    type Ok = ();
    type Error = RowError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), RowError> {
        v.serialize(Member {
            table: self.table,
            key: Some(""),
        })
    }

    fn end(self) -> Result<(), RowError> {
        if self.close {
            self.table.end();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columnar::schema::{
        Kind::{Bool, I64, Str, U8, U32},
        leaf, list_leaf, object,
    };

    #[derive(Serialize)]
    struct Inner {
        a: u8,
        b: Option<u32>,
    }

    #[derive(Serialize)]
    struct Row {
        id: u32,
        name: &'static str,
        neg: i64,
        files: Vec<&'static str>,
        inner: Inner,
        none: Option<u64>,
        flag: bool,
    }

    fn table() -> Table {
        Table::new(&[
            leaf("id", I64),
            leaf("name", Str),
            leaf("neg", I64),
            list_leaf("files", Str),
            object("inner", vec![leaf("a", U8), leaf("b", U32)]),
            leaf("none", I64),
            leaf("flag", Bool),
            leaf("version", U32),
        ])
    }

    /// The same rows as the table's own calls make them, member by member.
    #[test]
    fn a_struct_fills_the_columns_of_its_field_names() {
        let rows = [
            Row {
                id: 7,
                name: "10.0.0.1",
                neg: -3,
                files: vec!["a.pcap", "b.pcap"],
                inner: Inner { a: 5, b: Some(9) },
                none: None,
                flag: true,
            },
            Row {
                id: 8,
                name: "fe80::1",
                neg: 4,
                files: vec![],
                inner: Inner { a: 6, b: None },
                none: Some(2),
                flag: false,
            },
        ];
        let mut got = table();
        for r in &rows {
            add_row(&mut got, r).unwrap();
        }
        // members added after the struct go to the same row
        got.value(Key::Static("version"), Cell::Uint(1));
        let mut want = table();
        for r in &rows {
            want.begin_row();
            want.value("id", Cell::Uint(r.id.into()));
            want.value("name", Cell::Str(r.name));
            want.value(
                "neg",
                u64::try_from(r.neg).map_or(Cell::Int(r.neg), Cell::Uint),
            );
            want.begin_list("files");
            for f in &r.files {
                want.value("", Cell::Str(f));
            }
            want.end();
            want.begin_object("inner");
            want.value("a", Cell::Uint(r.inner.a.into()));
            want.value("b", r.inner.b.map_or(Cell::Null, |b| Cell::Uint(b.into())));
            want.end();
            want.value("none", r.none.map_or(Cell::Null, Cell::Uint));
            want.value("flag", Cell::Bool(r.flag));
        }
        want.value("version", Cell::Uint(1));
        let (got, want) = (got.finish().unwrap(), want.finish().unwrap());
        assert_eq!(got.num_rows(), 2);
        assert_eq!(got, want);
        assert_eq!(
            got.column(7).null_count(),
            1,
            "version on the last row only"
        );
    }

    #[test]
    fn what_is_not_a_row_is_an_error() {
        let mut t = table();
        assert!(add_row(&mut t, &5u32).is_err());
        let mut map = std::collections::BTreeMap::new();
        map.insert("id", 1u32);
        assert!(add_row(&mut t, &map).is_err());
        #[derive(Serialize)]
        struct Fractional {
            id: f64,
        }
        assert!(add_row(&mut t, &Fractional { id: 0.5 }).is_err());
    }
}
