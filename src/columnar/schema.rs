//! A table's fixed schema as a tree of named nodes, declared in code per table (never inferred
//! from the data) and turned into an Arrow schema for the Parquet writer.
//!
//! The tree follows the JSON the same rows have elsewhere (`dissect -f jsonl`, `analyze -f
//! json`): a [`Shape::Flat`] node is a JSON object whose members become columns of their own,
//! named with `_` (`eth` → `eth_src`, `eth_dst`, …), a [`Shape::Struct`] one stays an Arrow
//! struct, a [`Shape::List`] one an Arrow list of its one item node.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, TimeUnit};

/// The type of one leaf column. Unsigned wire fields take the narrowest type that holds them
/// (interfaces.md §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    U8,
    U16,
    U32,
    U64,
    /// A signed count (none of the wire's fields; report values that can be negative).
    I64,
    Bool,
    Str,
    /// Nanoseconds since the epoch, UTC.
    TimestampNs,
}

/// What a node holds.
#[derive(Debug, Clone)]
pub enum Shape {
    Leaf(Kind),
    /// A JSON object flattened into columns named `NAME_MEMBER` (at the top level only).
    Flat(Vec<Node>),
    /// A JSON object kept as one struct column.
    Struct(Vec<Node>),
    /// A JSON array: a list column of its item (whose name is `""`).
    List(Box<Node>),
    /// An empty JSON object (`"cnp": {}`): a boolean column, true where the object is present
    /// (Parquet has no empty group).
    Present,
}

/// One named node of a schema.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: &'static str,
    pub shape: Shape,
}

/// A leaf column.
#[must_use]
pub fn leaf(name: &'static str, kind: Kind) -> Node {
    Node {
        name,
        shape: Shape::Leaf(kind),
    }
}

/// A flattened object.
#[must_use]
pub fn flat(name: &'static str, members: Vec<Node>) -> Node {
    Node {
        name,
        shape: Shape::Flat(members),
    }
}

/// A struct column.
#[must_use]
pub fn object(name: &'static str, members: Vec<Node>) -> Node {
    Node {
        name,
        shape: Shape::Struct(members),
    }
}

/// A list column of `item` (named `""`, as the JSON array's items are).
#[must_use]
pub fn list(name: &'static str, item: Node) -> Node {
    Node {
        name,
        shape: Shape::List(Box::new(item)),
    }
}

/// A list of structs.
#[must_use]
pub fn list_of(name: &'static str, members: Vec<Node>) -> Node {
    list(name, object("", members))
}

/// A list of leaves.
#[must_use]
pub fn list_leaf(name: &'static str, kind: Kind) -> Node {
    list(name, leaf("", kind))
}

/// An empty object's presence.
#[must_use]
pub fn present(name: &'static str) -> Node {
    Node {
        name,
        shape: Shape::Present,
    }
}

/// The Arrow schema of the top-level `nodes`, flattened objects expanded.
#[must_use]
pub fn arrow_schema(nodes: &[Node]) -> Schema {
    let mut fields = Vec::new();
    for n in nodes {
        top_fields(n, String::new(), &mut fields);
    }
    Schema::new(fields)
}

fn top_fields(node: &Node, prefix: String, out: &mut Vec<Field>) {
    let name = format!("{prefix}{}", node.name);
    match &node.shape {
        Shape::Flat(members) => {
            for m in members {
                top_fields(m, format!("{name}_"), out);
            }
        }
        _ => out.push(Field::new(name, data_type(node), true)),
    }
}

/// The Arrow type of a node (a flattened object inside a struct or list is kept as a struct).
#[must_use]
pub fn data_type(node: &Node) -> DataType {
    match &node.shape {
        Shape::Leaf(k) => match k {
            Kind::U8 => DataType::UInt8,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::I64 => DataType::Int64,
            Kind::Bool => DataType::Boolean,
            Kind::Str => DataType::Utf8,
            Kind::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        },
        Shape::Present => DataType::Boolean,
        Shape::Flat(members) | Shape::Struct(members) => DataType::Struct(struct_fields(members)),
        Shape::List(item) => DataType::List(item_field(item)),
    }
}

/// A list's item field (named `item`, as Arrow's builders name it).
#[must_use]
pub fn item_field(item: &Node) -> FieldRef {
    Arc::new(Field::new("item", data_type(item), true))
}

/// The fields of a struct's members.
#[must_use]
pub fn struct_fields(members: &[Node]) -> Fields {
    members
        .iter()
        .map(|m| Field::new(m.name, data_type(m), true))
        .collect()
}
