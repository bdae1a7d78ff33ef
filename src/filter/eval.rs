//! Evaluating a compiled filter on one frame: the frame facts and marks directly, the field
//! tests in one walk of the frame's field tree with a visitor that looks only at the paths the
//! filter mentions. Nothing is allocated per frame.

// Indexing cannot panic here: the walk's name and frame stacks are indexed below `depth`, which
// stops growing at their capacity (deeper levels are counted, not stored).
#![allow(clippy::indexing_slicing)]

use std::ops::Range;

use rocescope_dissectors::pretty::{Value, Visitor, visit};
use rocescope_dissectors::stack::Dissected;

use super::fields::FrameField;
use super::{Filter, Flag, FrameFacts, Lit, Marks, Node, Op, Path, Src, Test};

/// Whether `d` (with `facts` and `marks`) matches `filter`.
pub(super) fn matches(
    filter: &Filter,
    facts: &FrameFacts,
    marks: Marks,
    d: Option<&Dissected<'_>>,
) -> bool {
    let mut hits = 0u64;
    for (i, atom) in filter.atoms.iter().enumerate() {
        let hit = match (&atom.src, &atom.test) {
            (Src::Flag(Flag::Truncated), _) => facts.truncated,
            (Src::Flag(Flag::Malformed), _) => facts.malformed,
            (Src::Flag(Flag::Mark(m)), _) => marks.contains(*m),
            (Src::Frame(f), t) => {
                let v = match f {
                    FrameField::Number => facts.number,
                    FrameField::Len => facts.len,
                    FrameField::CapLen => facts.caplen,
                    FrameField::TimeNs => facts.time_ns,
                };
                test_value(t, Value::Uint(v))
            }
            _ => false,
        };
        if hit {
            hits |= 1 << i;
        }
    }
    if filter.needs_tree
        && let Some(d) = d
    {
        let mut eval = Eval {
            filter,
            hits,
            names: [""; MAX_DEPTH],
            depth: 0,
            overflow: 0,
            unframed: 0,
            frames: [FrameKind::Object; MAX_DEPTH],
            fdepth: 0,
            counter: 0,
            item: None,
        };
        visit(d, &mut eval);
        hits = eval.hits;
    }
    eval_node(&filter.root, hits)
}

fn eval_node(node: &Node, hits: u64) -> bool {
    match node {
        Node::Atom(i) => hits & (1u64 << (i & 63)) != 0,
        Node::Not(a) => !eval_node(a, hits),
        Node::And(a, b) => eval_node(a, hits) && eval_node(b, hits),
        Node::Or(a, b) => eval_node(a, hits) || eval_node(b, hits),
    }
}

fn ordered<T: PartialOrd>(op: Op, a: T, b: T) -> bool {
    match op {
        Op::Eq | Op::Ne => a == b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
    }
}

fn lit_matches(op: Op, lit: &Lit, v: Value<'_>) -> bool {
    match (lit, v) {
        (Lit::Int(n), v) => v.as_u64().is_some_and(|x| ordered(op, x, *n)),
        (Lit::Range(a, b), v) => v.as_u64().is_some_and(|x| (*a..=*b).contains(&x)),
        (Lit::Mac(m), Value::Mac(a)) => &a == m,
        (Lit::V4(net, prefix), Value::Ipv4(a)) => {
            let a = u32::from(a);
            if *prefix == 32 {
                ordered(op, a, *net)
            } else {
                let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
                a & mask == net & mask
            }
        }
        (Lit::V6(net, prefix), Value::Ipv6(a)) => {
            let a = u128::from(a);
            if *prefix == 128 {
                ordered(op, a, *net)
            } else {
                let mask = u128::MAX.checked_shl(128 - u32::from(*prefix)).unwrap_or(0);
                a & mask == net & mask
            }
        }
        (Lit::Str(s), Value::Str(x)) => x.eq_ignore_ascii_case(s),
        _ => false,
    }
}

fn test_value(test: &Test, v: Value<'_>) -> bool {
    match test {
        Test::Exists => v != Value::Null,
        Test::Cmp(op, lit) => lit_matches(*op, lit, v),
        Test::In(set) => set.iter().any(|lit| lit_matches(Op::Eq, lit, v)),
    }
}

const MAX_DEPTH: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// A named object or list (its key is on the name stack).
    Object,
    /// A list item (no name).
    Item,
    /// Past `MAX_DEPTH`: ignored.
    Overflow,
}

/// The visitor that evaluates a filter's tree tests on one frame.
struct Eval<'f> {
    filter: &'f Filter,
    hits: u64,
    /// Keys of the open named objects and lists.
    names: [&'static str; MAX_DEPTH],
    depth: usize,
    /// Open frames past `MAX_DEPTH` names (kept as `FrameKind::Overflow`).
    overflow: usize,
    /// Opens past `MAX_DEPTH` frames (not recorded at all; popped first).
    unframed: usize,
    frames: [FrameKind; MAX_DEPTH],
    fdepth: usize,
    /// Items seen so far in the innermost list.
    counter: u32,
    /// Index of the list item being visited.
    item: Option<u32>,
}

impl Eval<'_> {
    /// Does `path` name the current position with `key` appended (`key` may be empty)?
    fn at(&self, path: &Path, key: &str) -> bool {
        let names = &self.names[..self.depth];
        let want = path.segs.len();
        let have = names.len() + usize::from(!key.is_empty());
        if want != have || self.overflow > 0 || self.unframed > 0 {
            return false;
        }
        if !names.iter().zip(&path.segs).all(|(a, b)| a == b) {
            return false;
        }
        if !key.is_empty() && path.segs.last() != Some(&key) {
            return false;
        }
        path.index.is_none() || path.index == self.item
    }

    fn offer(&mut self, key: &str, value: Value<'_>, is_layer: bool) {
        for (i, atom) in self.filter.atoms.iter().enumerate() {
            let hit = match &atom.src {
                Src::Paths(paths) => paths.iter().any(|p| {
                    if !self.at(p, key) {
                        return false;
                    }
                    if is_layer {
                        return matches!(atom.test, Test::Exists);
                    }
                    let v = match (p.bit, value.as_u64()) {
                        (Some(b), Some(x)) => Value::Uint((x >> (b & 63)) & 1),
                        (Some(_), None) => Value::Null,
                        (None, Some(x)) if p.swapped == 4 => {
                            Value::Uint(u64::from((x as u32).swap_bytes()))
                        }
                        (None, Some(x)) if p.swapped == 2 => {
                            Value::Uint(u64::from((x as u16).swap_bytes()))
                        }
                        (None, _) => value,
                    };
                    test_value(&atom.test, v)
                }),
                Src::MaccOpcode => {
                    let code = match (self.depth, is_layer, key) {
                        (1, true, _) if self.names[0] == "pause" => Some(0x0001),
                        (1, true, _) if self.names[0] == "pfc" => Some(0x0101),
                        (1, false, "opcode") if self.names[0] == "macc" => value.as_u64(),
                        _ => None,
                    };
                    code.is_some_and(|c| test_value(&atom.test, Value::Uint(c)))
                }
                Src::Frame(_) | Src::Flag(_) => false,
            };
            if hit {
                self.hits |= 1 << (i & 63);
            }
        }
    }

    fn push(&mut self, key: &'static str, list: bool) {
        if self.fdepth >= MAX_DEPTH {
            self.unframed += 1;
            return;
        }
        if key.is_empty() {
            self.item = Some(self.counter);
            self.counter = self.counter.saturating_add(1);
            self.frames[self.fdepth] = FrameKind::Item;
        } else if self.depth < MAX_DEPTH {
            self.names[self.depth] = key;
            self.depth += 1;
            self.frames[self.fdepth] = FrameKind::Object;
            if list {
                self.counter = 0;
            }
        } else {
            self.frames[self.fdepth] = FrameKind::Overflow;
            self.overflow += 1;
        }
        self.fdepth += 1;
        if !key.is_empty() {
            self.offer("", Value::Null, true);
        }
    }

    fn pop(&mut self) {
        if self.unframed > 0 {
            self.unframed -= 1;
            return;
        }
        let Some(top) = self.fdepth.checked_sub(1) else {
            return;
        };
        self.fdepth = top;
        match self.frames[top] {
            FrameKind::Object => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.item = None;
                }
            }
            FrameKind::Item => self.item = None,
            FrameKind::Overflow => self.overflow = self.overflow.saturating_sub(1),
        }
    }
}

impl Visitor for Eval<'_> {
    fn begin(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.push(key, false);
    }
    fn end(&mut self) {
        self.pop();
    }
    fn begin_list(&mut self, key: &'static str, _title: &'static str, _range: Range<usize>) {
        self.push(key, true);
    }
    fn end_list(&mut self) {
        self.pop();
    }
    fn field(
        &mut self,
        key: &'static str,
        _label: &'static str,
        value: Value<'_>,
        _range: Range<usize>,
    ) {
        if key.is_empty() {
            self.item = Some(self.counter);
            self.counter = self.counter.saturating_add(1);
        }
        self.offer(key, value, false);
        if key.is_empty() {
            self.item = None;
        }
    }
}
