//! Resolving a parsed filter: field names to the visitor's JSON paths (once, here), literals
//! to typed values, bare words to protocol tests and analysis marks; every error with the
//! column it is about.

// Indexing cannot panic here: a MAC address has six octets: the seventh part fails before it is
// stored.
#![allow(clippy::indexing_slicing)]

use std::net::{Ipv4Addr, Ipv6Addr};

use rocescope_dissectors::Opcode;

use super::fields::{self, FieldType, Source};
use super::parse::{Ast, parse};
use super::{Atom, FilterError, Flag, Lit, MAX_TESTS, Marks, Node, Op, Path, Src, Test};

/// Parse and resolve `text`: the expression tree and its tests.
pub(super) fn compile(text: &str, allow_marks: bool) -> Result<(Node, Vec<Atom>), FilterError> {
    let mut c = Compiler {
        text,
        atoms: Vec::new(),
        allow_marks,
    };
    if text.trim().is_empty() {
        return Err(c.err(text, "empty filter"));
    }
    let ast = parse(text).map_err(|(at, message)| c.err(at, message))?;
    let root = c.node(&ast)?;
    Ok((root, c.atoms))
}

struct Compiler<'s> {
    text: &'s str,
    atoms: Vec<Atom>,
    /// The caller has replay marks (the inspector), so `loss` & co. are allowed.
    allow_marks: bool,
}

impl Compiler<'_> {
    /// Byte offset of `part` (a slice of the filter text) → 1-based character column.
    fn column(&self, part: &str) -> usize {
        let base = self.text.as_ptr() as usize;
        let at = (part.as_ptr() as usize)
            .saturating_sub(base)
            .min(self.text.len());
        self.text
            .get(..at)
            .map_or(at, |prefix| prefix.chars().count())
            + 1
    }

    fn err(&self, part: &str, message: impl Into<String>) -> FilterError {
        FilterError {
            filter: self.text.to_owned(),
            column: self.column(part),
            message: message.into(),
        }
    }

    fn atom(&mut self, at: &str, src: Src, test: Test) -> Result<Node, FilterError> {
        if self.atoms.len() >= MAX_TESTS {
            return Err(self.err(at, format!("too many tests (at most {MAX_TESTS})")));
        }
        let i = u8::try_from(self.atoms.len()).unwrap_or(u8::MAX);
        self.atoms.push(Atom { src, test });
        Ok(Node::Atom(i))
    }

    fn node(&mut self, ast: &Ast<'_>) -> Result<Node, FilterError> {
        Ok(match ast {
            Ast::Or(a, b) => Node::Or(Box::new(self.node(a)?), Box::new(self.node(b)?)),
            Ast::And(a, b) => Node::And(Box::new(self.node(a)?), Box::new(self.node(b)?)),
            Ast::Not(a) => Node::Not(Box::new(self.node(a)?)),
            Ast::Field(name) => {
                if let Some(node) = self.bare_word(name)? {
                    return Ok(node);
                }
                let (src, kind) = self.resolve(name)?;
                let test = if kind == FieldType::Bool {
                    Test::Cmp(Op::Eq, Lit::Int(1))
                } else {
                    Test::Exists
                };
                self.atom(name, src, test)?
            }
            Ast::Cmp(name, op, op_text, v) => {
                let (src, kind) = self.resolve(name)?;
                let lit = self.literal(name, kind, v, false)?;
                if !matches!(op, Op::Eq | Op::Ne) {
                    let ordered = match kind {
                        FieldType::Uint | FieldType::Bool | FieldType::Opcode => true,
                        FieldType::Ipv4 | FieldType::Ipv6 => {
                            matches!(lit, Lit::V4(_, 32) | Lit::V6(_, 128))
                        }
                        _ => false,
                    };
                    if !ordered {
                        return Err(self.err(
                            op_text,
                            format!("`{op_text}` does not apply to `{name}` (use == or !=)"),
                        ));
                    }
                }
                if *op == Op::Ne {
                    let a = self.atom(name, src, Test::Cmp(Op::Eq, lit))?;
                    Node::Not(Box::new(a))
                } else {
                    self.atom(name, src, Test::Cmp(*op, lit))?
                }
            }
            Ast::In(name, items) => {
                let (src, kind) = self.resolve(name)?;
                let set = items
                    .iter()
                    .map(|v| self.literal(name, kind, v, true))
                    .collect::<Result<Vec<_>, _>>()?;
                self.atom(name, src, Test::In(set))?
            }
        })
    }

    /// Protocol names and analysis marks.
    fn bare_word(&mut self, name: &str) -> Result<Option<Node>, FilterError> {
        let path = |p: &'static str| Src::Paths(vec![split(p, None, None)]);
        let node = match name {
            "roce" | "rocev2" => {
                let a = self.atom(name, path("udp"), Test::Exists)?;
                let b = self.atom(name, path("bth"), Test::Exists)?;
                Node::And(Box::new(a), Box::new(b))
            }
            "rocev1" => {
                // a GRH and a BTH without an LRH (native InfiniBand has both too)
                let a = self.atom(name, path("grh"), Test::Exists)?;
                let b = self.atom(name, path("bth"), Test::Exists)?;
                let c = self.atom(name, path("lrh"), Test::Exists)?;
                Node::And(
                    Box::new(Node::And(Box::new(a), Box::new(b))),
                    Box::new(Node::Not(Box::new(c))),
                )
            }
            // native InfiniBand
            "ib" => self.atom(name, path("lrh"), Test::Exists)?,
            "tcp_bth" => self.atom(name, path("tcp_bth"), Test::Exists)?,
            "icrc_bad" => self.atom(name, path("icrc.valid"), Test::Cmp(Op::Eq, Lit::Int(0)))?,
            "truncated" => self.atom(name, Src::Flag(Flag::Truncated), Test::Exists)?,
            "malformed" => self.atom(name, Src::Flag(Flag::Malformed), Test::Exists)?,
            "ce" => self.atom(
                name,
                Src::Paths(vec![
                    split("ipv4.ecn", None, None),
                    split("ipv6.ecn", None, None),
                ]),
                Test::Cmp(Op::Eq, Lit::Int(3)),
            )?,
            "nak" | "rnr" => {
                let kind = if name == "nak" { "nak" } else { "rnr_nak" };
                self.atom(
                    name,
                    path("aeth.kind"),
                    Test::Cmp(Op::Eq, Lit::Str(kind.into())),
                )?
            }
            _ => match Marks::from_name(name) {
                Some(mark) if self.allow_marks => {
                    self.atom(name, Src::Flag(Flag::Mark(mark)), Test::Exists)?
                }
                Some(_) => {
                    return Err(self.err(
                        name,
                        format!(
                            "`{name}` is decided by the replay engine: it needs `rocescope analyze` (or the inspector), not `dissect`"
                        ),
                    ));
                }
                None => return Ok(None),
            },
        };
        Ok(Some(node))
    }

    fn resolve(&self, name: &str) -> Result<(Src, FieldType), FilterError> {
        if matches!(
            name,
            "roce"
                | "rocev2"
                | "rocev1"
                | "ib"
                | "tcp_bth"
                | "icrc_bad"
                | "truncated"
                | "malformed"
                | "ce"
                | "nak"
                | "rnr"
        ) || Marks::from_name(name).is_some()
        {
            return Err(self.err(
                name,
                format!("`{name}` is a frame mark: use it alone, without a comparison"),
            ));
        }
        let Some((source, kind)) = fields::lookup(name) else {
            return Err(self.err(name, format!("unknown field `{name}`")));
        };
        let src = match source {
            Source::Paths(paths) => {
                let mut v: Vec<Path> = paths.iter().map(|p| split(p, None, None)).collect();
                // an inner layer's name matches the same layer outside a tunnel too
                for p in paths {
                    let first = p.split('.').next().unwrap_or("");
                    if fields::ALSO_OUTER.contains(&first) {
                        let mut outer = split(p, None, None);
                        outer.segs.insert(0, "outer");
                        v.push(outer);
                    }
                }
                Src::Paths(v)
            }
            Source::Item(p, i) => Src::Paths(vec![split(p, Some(i), None)]),
            Source::Bit(p, b) => Src::Paths(vec![split(p, None, Some(b))]),
            Source::Swapped(p, bytes) => Src::Paths(vec![Path {
                swapped: bytes,
                ..split(p, None, None)
            }]),
            Source::MaccOpcode => Src::MaccOpcode,
            Source::Frame(f) => Src::Frame(f),
        };
        Ok((src, kind))
    }

    fn literal(
        &self,
        name: &str,
        kind: FieldType,
        v: &str,
        in_set: bool,
    ) -> Result<Lit, FilterError> {
        let bad = |what: &str| self.err(v, format!("`{name}` is {what}; `{v}` is not"));
        if let Some(s) = v.strip_prefix('"') {
            let s = s.strip_suffix('"').unwrap_or(s);
            return match kind {
                FieldType::Str => Ok(Lit::Str(s.into())),
                FieldType::Opcode => opcode_by_name(s)
                    .map(Lit::Int)
                    .ok_or_else(|| bad("an opcode")),
                _ => self
                    .literal(name, kind, s, in_set)
                    .map_err(|_| bad(kind_name(kind))),
            };
        }
        match kind {
            FieldType::Layer => Err(self.err(
                name,
                format!("`{name}` is a protocol: it can only be tested for presence"),
            )),
            FieldType::Uint | FieldType::Bool | FieldType::Opcode => {
                if in_set && let Some((a, b)) = v.split_once("..") {
                    let a = self.literal(name, kind, a, false)?;
                    let b = self.literal(name, kind, b, false)?;
                    if let (Lit::Int(a), Lit::Int(b)) = (a, b) {
                        return Ok(Lit::Range(a.min(b), a.max(b)));
                    }
                }
                if let Some(n) = parse_int(v) {
                    return Ok(Lit::Int(n));
                }
                if kind == FieldType::Bool {
                    match v {
                        "true" | "True" | "TRUE" => return Ok(Lit::Int(1)),
                        "false" | "False" | "FALSE" => return Ok(Lit::Int(0)),
                        _ => {}
                    }
                }
                if kind == FieldType::Opcode {
                    return opcode_by_name(v)
                        .map(Lit::Int)
                        .ok_or_else(|| bad("an opcode (a number or a name like RC_ACKNOWLEDGE)"));
                }
                Err(bad(kind_name(kind)))
            }
            FieldType::Mac => parse_mac(v)
                .map(Lit::Mac)
                .ok_or_else(|| bad("a MAC address")),
            FieldType::Ipv4 => {
                let (addr, prefix) = split_prefix(v, 32).ok_or_else(|| bad("an IPv4 address"))?;
                let addr: Ipv4Addr = addr.parse().map_err(|_| bad("an IPv4 address"))?;
                Ok(Lit::V4(u32::from(addr), prefix))
            }
            FieldType::Ipv6 => {
                let (addr, prefix) = split_prefix(v, 128).ok_or_else(|| bad("an IPv6 address"))?;
                let addr: Ipv6Addr = addr.parse().map_err(|_| bad("an IPv6 address"))?;
                Ok(Lit::V6(u128::from(addr), prefix))
            }
            FieldType::Str => Ok(Lit::Str(v.into())),
        }
    }
}

fn kind_name(kind: FieldType) -> &'static str {
    match kind {
        FieldType::Uint | FieldType::Opcode => "a number",
        FieldType::Bool => "a boolean (1, 0, true, false)",
        FieldType::Mac => "a MAC address",
        FieldType::Ipv4 => "an IPv4 address",
        FieldType::Ipv6 => "an IPv6 address",
        FieldType::Str => "a string",
        FieldType::Layer => "a protocol",
    }
}

fn split(path: &'static str, index: Option<u32>, bit: Option<u8>) -> Path {
    Path {
        segs: path.split('.').collect(),
        index,
        bit,
        swapped: 0,
    }
}

fn parse_int(v: &str) -> Option<u64> {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse().ok()
    } else {
        None
    }
}

fn parse_mac(v: &str) -> Option<[u8; 6]> {
    let sep = if v.contains(':') { ':' } else { '-' };
    let mut out = [0u8; 6];
    let mut n = 0;
    for part in v.split(sep) {
        if part.len() != 2 || n == 6 {
            return None;
        }
        out[n] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

fn split_prefix(v: &str, max: u8) -> Option<(&str, u8)> {
    match v.split_once('/') {
        None => Some((v, max)),
        Some((a, p)) => {
            let p: u8 = p.parse().ok()?;
            (p <= max).then_some((a, p))
        }
    }
}

fn opcode_by_name(name: &str) -> Option<u64> {
    // the table's names, then NVIDIA DC's on the RD range (`DC_RDMA_WRITE_FIRST`)
    (0..=255u8)
        .map(Opcode)
        .find(|o| o.name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        .or_else(|| {
            (0x40..=0x55u8).map(Opcode).find(|o| {
                o.dc_info(false)
                    .is_some_and(|i| i.name.eq_ignore_ascii_case(name))
            })
        })
        .map(|o| u64::from(o.0))
}
