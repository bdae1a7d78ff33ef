//! Display filters (`-Y`, interfaces.md §5): Wireshark's syntax for the fields rocescope decodes.
//!
//! ```text
//! expr    := or
//! or      := and (("||" | "or") and)*
//! and     := unary (("&&" | "and") unary)*
//! unary   := ("!" | "not") unary | "(" expr ")" | test
//! test    := FIELD [ OP VALUE | "in" "{" VALUE ([","] VALUE)* "}" ]     OP: == != < <= > >=
//! VALUE   := 42 | 0x2a | aa:bb:cc:dd:ee:ff | 10.0.0.1 | 10.0.0.0/24 | fe80::1 | fe80::/64
//!          | NAME (an opcode name for opcode fields, else a string) | "string" | 1..5 (in sets)
//! ```
//!
//! Field names: Wireshark's where Wireshark has the field (`ip.src`, `infiniband.bth.psn`,
//! `macc.cbfc.pause_time.c3`, see [`fields::WIRESHARK`]), the dotted JSON path of `dissect -f jsonl`
//! everywhere (`bth.becn`, `icrc.valid`, `aeth.kind`, see [`fields::JSON_PATHS`]), the aliases
//! `qp`, `psn`, `opcode`, and `frame.number`, `frame.len`, `frame.cap_len`, `frame.time_ns`.
//!
//! Semantics, as Wireshark ≥ 3.6:
//! - a field that occurs several times (VLAN tags, PFC quanta, `ip.addr`) matches a test when
//!   any occurrence does; `a != b` is `!(a == b)`, so it also matches frames without the field;
//! - a field alone tests presence (`reth`, `udp`, `cm.starting_psn`); a boolean field alone tests
//!   that it is present and true (`bth.becn`, `infiniband.bth.a`, `icrc.valid`);
//! - a comparison against a field the frame does not have (or whose value is `null`, like the
//!   ICRC of a truncated frame) is false.
//!
//! Bare words: `roce`/`rocev2` (BTH over UDP), `rocev1` (BTH after a GRH), `cnp`, `pfc`, `pause`,
//! `cm`, `icrc_bad` (`icrc.valid == false`), `malformed`, `truncated`, `ce` (IP ECN = 3),
//! `nak` (`aeth.kind == nak`), `rnr` (`aeth.kind == rnr_nak`). `tcp_bth` (a TCP segment with the
//! `tcp_bth` option, tcp_bth.md §c). The replay-engine marks `loss`, `ooo`, `dup` and `retrans`
//! need the replay: the inspector compiles with [`Filter::compile_with_marks`] and passes each
//! frame's [`Marks`]; `dissect` rejects them with an error saying so (exit 2).
//!
//! Compiling turns every field name into the visitor's JSON path once; evaluating a frame walks
//! its field tree ([`rocescope_dissectors::pretty::visit`]) with a visitor that only looks at the
//! paths the filter mentions. Nothing is allocated per frame.

pub mod fields;

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::{all_consuming, cut, not, opt, recognize};
use nom::error::{ErrorKind, ParseError};
use nom::multi::{many0, many1};
use nom::sequence::{delimited, pair, preceded, terminated};
use nom::{IResult, Parser};
use rocescope_dissectors::Opcode;
use rocescope_dissectors::pretty::{Value, Visitor, visit};
use rocescope_dissectors::stack::Dissected;

use fields::{FrameField, Kind, Source};

/// At most this many tests per filter (they are tracked in one `u64` per frame).
pub const MAX_TESTS: usize = 64;

/// A compiled display filter.
#[derive(Debug, Clone)]
pub struct Filter {
    text: String,
    root: Node,
    atoms: Vec<Atom>,
    /// Some atom reads the field tree (else the walk is skipped).
    needs_tree: bool,
}

pub use crate::frame::FrameFacts;

/// The replay-engine marks of one frame (interfaces.md §5 bare words `loss`,
/// `ooo`, `dup`, `retrans`), from the events the replay reported at that frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Marks(u8);

impl Marks {
    /// A PSN gap, or a READ whose responses went missing, was seen at this frame.
    pub const LOSS: Marks = Marks(1);
    /// A late original that filled a hole.
    pub const OOO: Marks = Marks(2);
    pub const DUP: Marks = Marks(4);
    /// Part of a go-back run (after a NAK or a timeout).
    pub const RETRANS: Marks = Marks(8);

    /// The mark a replay event puts on its frame.
    #[must_use]
    pub fn of_kind(kind: crate::replay::Kind) -> Marks {
        use crate::replay::Kind;
        match kind {
            Kind::PsnGap | Kind::ReadResponseGap | Kind::UnansweredRead | Kind::TcpBthGap => {
                Marks::LOSS
            }
            Kind::OutOfOrder | Kind::TcpBthOutOfOrder => Marks::OOO,
            Kind::Duplicate | Kind::TcpBthDuplicate => Marks::DUP,
            Kind::Retransmission | Kind::ImpliedTimeout | Kind::TcpBthRetransmission => {
                Marks::RETRANS
            }
            _ => Marks(0),
        }
    }

    #[must_use]
    pub const fn contains(self, other: Marks) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    pub fn insert(&mut self, other: Marks) {
        self.0 |= other.0;
    }

    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// Every frame's replay marks, from a replay's events, for frames read in order (a capture
/// streams by frame number): what `dissect` and the inspector pass to
/// [`Filter::matches_marked`].
#[derive(Debug, Clone, Default)]
pub struct FrameMarks {
    /// `(frame, marks)`, sorted by frame, one entry per marked frame.
    marks: Vec<(u64, Marks)>,
    /// Where the last lookup stopped.
    next: usize,
}

impl FrameMarks {
    #[must_use]
    pub fn from_events(events: &[crate::replay::Finding]) -> Self {
        let mut all: Vec<(u64, Marks)> = events
            .iter()
            .map(|ev| (ev.frame, Marks::of_kind(ev.kind)))
            .filter(|(_, m)| !m.is_empty())
            .collect();
        all.sort_by_key(|(f, _)| *f);
        let mut marks: Vec<(u64, Marks)> = Vec::with_capacity(all.len());
        for (frame, mark) in all {
            match marks.last_mut() {
                Some((f, m)) if *f == frame => m.insert(mark),
                _ => marks.push((frame, mark)),
            }
        }
        FrameMarks { marks, next: 0 }
    }

    /// The marks of `frame`; frames must be asked for in rising order (use
    /// [`FrameMarks::rewind`] to start over).
    pub fn next_frame(&mut self, frame: u64) -> Marks {
        while self.marks.get(self.next).is_some_and(|m| m.0 < frame) {
            self.next += 1;
        }
        self.marks
            .get(self.next)
            .filter(|m| m.0 == frame)
            .map_or(Marks::default(), |m| m.1)
    }

    /// Back to the first frame.
    pub fn rewind(&mut self) {
        self.next = 0;
    }

    /// Marked frames.
    #[must_use]
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}

/// Why a filter did not compile: the message and the 1-based column (in characters) it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    pub filter: String,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "display filter {:?}: column {}: {}",
            self.filter, self.column, self.message
        )
    }
}

impl std::error::Error for FilterError {}

#[derive(Debug, Clone)]
enum Node {
    Atom(u8),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Int(u64),
    Range(u64, u64),
    Mac([u8; 6]),
    V4(u32, u8),
    V6(u128, u8),
    Str(Box<str>),
}

#[derive(Debug, Clone)]
enum Test {
    Exists,
    /// `Op` is never `Ne` (compiled to `!(==)`).
    Cmp(Op, Lit),
    In(Vec<Lit>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    Truncated,
    Malformed,
    /// A replay-engine mark; only callers that ran the replay supply them.
    Mark(Marks),
}

#[derive(Debug, Clone)]
enum Src {
    /// JSON paths split at dots; `index` selects one list item, `bit` one bit of the value.
    Paths(Vec<Path>),
    MaccOpcode,
    Frame(FrameField),
    Flag(Flag),
}

#[derive(Debug, Clone)]
struct Path {
    segs: Vec<&'static str>,
    index: Option<u32>,
    bit: Option<u8>,
}

#[derive(Debug, Clone)]
struct Atom {
    src: Src,
    test: Test,
}

// ---------------------------------------------------------------------------------------------
// syntax

/// A parsed, unresolved filter; string slices point into the filter text.
#[derive(Debug)]
enum Ast<'a> {
    Or(Box<Ast<'a>>, Box<Ast<'a>>),
    And(Box<Ast<'a>>, Box<Ast<'a>>),
    Not(Box<Ast<'a>>),
    Field(&'a str),
    Cmp(&'a str, Op, &'a str, &'a str),
    In(&'a str, Vec<&'a str>),
}

/// nom error that keeps the farthest position reached (the most useful column to report).
#[derive(Debug)]
struct PErr<'a> {
    at: &'a str,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(input: &'a str, _kind: ErrorKind) -> Self {
        PErr { at: input }
    }
    fn append(_input: &'a str, _kind: ErrorKind, other: Self) -> Self {
        other
    }
    fn or(self, other: Self) -> Self {
        if other.at.len() < self.at.len() {
            other
        } else {
            self
        }
    }
}

type PResult<'a, T> = IResult<&'a str, T, PErr<'a>>;

/// Optional whitespace. (nom 8.0.0's `multispace0` on `&str` does not consume whitespace that
/// runs to the end of the input, which would put end-of-filter errors one column early.)
fn sp(i: &str) -> PResult<'_, &str> {
    let n = i.len() - i.trim_start().len();
    Ok((&i[n..], &i[..n]))
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ws<'a, O>(
    p: impl Parser<&'a str, Output = O, Error = PErr<'a>>,
) -> impl Parser<&'a str, Output = O, Error = PErr<'a>> {
    delimited(sp, p, sp)
}

/// A keyword, not followed by a word character (`or` but not `order`).
fn kw<'a>(word: &'static str) -> impl Parser<&'a str, Output = &'a str, Error = PErr<'a>> {
    terminated(tag(word), not(satisfy(is_word_char)))
}

fn field_name(i: &str) -> PResult<'_, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| is_word_char(c) || c == '.'),
    ))
    .parse(i)
}

fn value(i: &str) -> PResult<'_, &str> {
    alt((
        recognize(delimited(char('"'), take_while(|c| c != '"'), char('"'))),
        take_while1(|c: char| is_word_char(c) || matches!(c, ':' | '.' | '/' | '-')),
    ))
    .parse(i)
}

fn cmp_op(i: &str) -> PResult<'_, (Op, &str)> {
    let (rest, t) = alt((
        tag("=="),
        tag("!="),
        tag("<="),
        tag(">="),
        tag("<"),
        tag(">"),
        kw("eq"),
        kw("ne"),
        kw("le"),
        kw("ge"),
        kw("lt"),
        kw("gt"),
    ))
    .parse(i)?;
    let op = match t {
        "==" | "eq" => Op::Eq,
        "!=" | "ne" => Op::Ne,
        "<=" | "le" => Op::Le,
        ">=" | "ge" => Op::Ge,
        "<" | "lt" => Op::Lt,
        _ => Op::Gt,
    };
    Ok((rest, (op, t)))
}

fn test(i: &str) -> PResult<'_, Ast<'_>> {
    let (i, name) = field_name(i)?;
    let (i, _) = sp(i)?;
    if let Ok((i, (op, op_text))) = cmp_op(i) {
        let (i, _) = sp(i)?;
        let (i, v) = value(i)?;
        return Ok((i, Ast::Cmp(name, op, op_text, v)));
    }
    if let Ok((i, _)) = kw("in").parse(i) {
        let (i, items) = delimited(
            ws(char('{')),
            many1(terminated(ws(value), opt(ws(char(','))))),
            char('}'),
        )
        .parse(i)?;
        return Ok((i, Ast::In(name, items)));
    }
    Ok((i, Ast::Field(name)))
}

fn unary(i: &str) -> PResult<'_, Ast<'_>> {
    let (i, _) = sp(i)?;
    if let Ok((i, _)) = alt((kw("not"), terminated(tag("!"), not(char('='))))).parse(i) {
        let (i, inner) = cut(unary).parse(i)?;
        return Ok((i, Ast::Not(Box::new(inner))));
    }
    let (i, node) = alt((
        preceded(char('('), cut(terminated(or_expr, ws(char(')'))))),
        test,
    ))
    .parse(i)?;
    let (i, _) = sp(i)?;
    Ok((i, node))
}

fn and_expr(i: &str) -> PResult<'_, Ast<'_>> {
    let (i, first) = unary(i)?;
    let (i, rest) = many0(preceded(ws(alt((tag("&&"), kw("and")))), cut(unary))).parse(i)?;
    Ok((
        i,
        rest.into_iter()
            .fold(first, |a, b| Ast::And(Box::new(a), Box::new(b))),
    ))
}

fn or_expr(i: &str) -> PResult<'_, Ast<'_>> {
    let (i, first) = and_expr(i)?;
    let (i, rest) = many0(preceded(ws(alt((tag("||"), kw("or")))), cut(and_expr))).parse(i)?;
    Ok((
        i,
        rest.into_iter()
            .fold(first, |a, b| Ast::Or(Box::new(a), Box::new(b))),
    ))
}

// ---------------------------------------------------------------------------------------------
// compile

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
                let test = if kind == Kind::Bool {
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
                        Kind::Uint | Kind::Bool | Kind::Opcode => true,
                        Kind::Ipv4 | Kind::Ipv6 => {
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
                let a = self.atom(name, path("grh"), Test::Exists)?;
                let b = self.atom(name, path("bth"), Test::Exists)?;
                Node::And(Box::new(a), Box::new(b))
            }
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
            "loss" | "ooo" | "dup" | "retrans" if self.allow_marks => {
                let mark = match name {
                    "loss" => Marks::LOSS,
                    "ooo" => Marks::OOO,
                    "dup" => Marks::DUP,
                    _ => Marks::RETRANS,
                };
                self.atom(name, Src::Flag(Flag::Mark(mark)), Test::Exists)?
            }
            "loss" | "ooo" | "dup" | "retrans" => {
                return Err(self.err(
                    name,
                    format!(
                        "`{name}` is decided by the replay engine: it needs `rocescope analyze` (or the inspector), not `dissect`"
                    ),
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some(node))
    }

    fn resolve(&self, name: &str) -> Result<(Src, Kind), FilterError> {
        if matches!(
            name,
            "roce"
                | "rocev2"
                | "rocev1"
                | "tcp_bth"
                | "icrc_bad"
                | "truncated"
                | "malformed"
                | "ce"
                | "nak"
                | "rnr"
                | "loss"
                | "ooo"
                | "dup"
                | "retrans"
        ) {
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
                Src::Paths(paths.iter().map(|p| split(p, None, None)).collect())
            }
            Source::Item(p, i) => Src::Paths(vec![split(p, Some(i), None)]),
            Source::Bit(p, b) => Src::Paths(vec![split(p, None, Some(b))]),
            Source::MaccOpcode => Src::MaccOpcode,
            Source::Frame(f) => Src::Frame(f),
        };
        Ok((src, kind))
    }

    fn literal(&self, name: &str, kind: Kind, v: &str, in_set: bool) -> Result<Lit, FilterError> {
        let bad = |what: &str| self.err(v, format!("`{name}` is {what}; `{v}` is not"));
        if let Some(s) = v.strip_prefix('"') {
            let s = s.strip_suffix('"').unwrap_or(s);
            return match kind {
                Kind::Str => Ok(Lit::Str(s.into())),
                Kind::Opcode => opcode_by_name(s)
                    .map(Lit::Int)
                    .ok_or_else(|| bad("an opcode")),
                _ => self
                    .literal(name, kind, s, in_set)
                    .map_err(|_| bad(kind_name(kind))),
            };
        }
        match kind {
            Kind::Layer => Err(self.err(
                name,
                format!("`{name}` is a protocol: it can only be tested for presence"),
            )),
            Kind::Uint | Kind::Bool | Kind::Opcode => {
                if in_set {
                    if let Some((a, b)) = v.split_once("..") {
                        let a = self.literal(name, kind, a, false)?;
                        let b = self.literal(name, kind, b, false)?;
                        if let (Lit::Int(a), Lit::Int(b)) = (a, b) {
                            return Ok(Lit::Range(a.min(b), a.max(b)));
                        }
                    }
                }
                if let Some(n) = parse_int(v) {
                    return Ok(Lit::Int(n));
                }
                if kind == Kind::Bool {
                    match v {
                        "true" | "True" | "TRUE" => return Ok(Lit::Int(1)),
                        "false" | "False" | "FALSE" => return Ok(Lit::Int(0)),
                        _ => {}
                    }
                }
                if kind == Kind::Opcode {
                    return opcode_by_name(v)
                        .map(Lit::Int)
                        .ok_or_else(|| bad("an opcode (a number or a name like RC_ACKNOWLEDGE)"));
                }
                Err(bad(kind_name(kind)))
            }
            Kind::Mac => parse_mac(v)
                .map(Lit::Mac)
                .ok_or_else(|| bad("a MAC address")),
            Kind::Ipv4 => {
                let (addr, prefix) = split_prefix(v, 32).ok_or_else(|| bad("an IPv4 address"))?;
                let addr: Ipv4Addr = addr.parse().map_err(|_| bad("an IPv4 address"))?;
                Ok(Lit::V4(u32::from(addr), prefix))
            }
            Kind::Ipv6 => {
                let (addr, prefix) = split_prefix(v, 128).ok_or_else(|| bad("an IPv6 address"))?;
                let addr: Ipv6Addr = addr.parse().map_err(|_| bad("an IPv6 address"))?;
                Ok(Lit::V6(u128::from(addr), prefix))
            }
            Kind::Str => Ok(Lit::Str(v.into())),
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint | Kind::Opcode => "a number",
        Kind::Bool => "a boolean (1, 0, true, false)",
        Kind::Mac => "a MAC address",
        Kind::Ipv4 => "an IPv4 address",
        Kind::Ipv6 => "an IPv6 address",
        Kind::Str => "a string",
        Kind::Layer => "a protocol",
    }
}

fn split(path: &'static str, index: Option<u32>, bit: Option<u8>) -> Path {
    Path {
        segs: path.split('.').collect(),
        index,
        bit,
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
    (0..=255u8)
        .map(Opcode)
        .find(|o| o.name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        .map(|o| u64::from(o.0))
}

impl Filter {
    /// Parse and compile a filter.
    ///
    /// # Errors
    /// A [`FilterError`] naming the column of the problem.
    pub fn compile(text: &str) -> Result<Filter, FilterError> {
        Self::compile_inner(text, false)
    }

    /// Like [`compile`](Self::compile), also accepting the replay-engine marks
    /// `loss`, `ooo`, `dup` and `retrans`, for callers that pass each frame's
    /// [`Marks`] to [`matches_marked`](Self::matches_marked).
    ///
    /// # Errors
    /// A [`FilterError`] naming the column of the problem.
    pub fn compile_with_marks(text: &str) -> Result<Filter, FilterError> {
        Self::compile_inner(text, true)
    }

    fn compile_inner(text: &str, allow_marks: bool) -> Result<Filter, FilterError> {
        let mut c = Compiler {
            text,
            atoms: Vec::new(),
            allow_marks,
        };
        if text.trim().is_empty() {
            return Err(c.err(text, "empty filter"));
        }
        let ast = match all_consuming(ws(or_expr)).parse(text) {
            Ok((_, ast)) => ast,
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                let message = match e.at.chars().next() {
                    None => "unexpected end of filter".to_owned(),
                    Some(c) => format!("syntax error at `{c}`"),
                };
                return Err(c.err(e.at, message));
            }
            Err(nom::Err::Incomplete(_)) => {
                return Err(c.err(&text[text.len()..], "unexpected end of filter"));
            }
        };
        let root = c.node(&ast)?;
        let needs_tree = c
            .atoms
            .iter()
            .any(|a| matches!(a.src, Src::Paths(_) | Src::MaccOpcode));
        Ok(Filter {
            text: text.to_owned(),
            root,
            atoms: c.atoms,
            needs_tree,
        })
    }

    /// The filter as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the filter asks for replay marks.
    #[must_use]
    pub fn uses_marks(&self) -> bool {
        self.atoms
            .iter()
            .any(|a| matches!(a.src, Src::Flag(Flag::Mark(_))))
    }

    /// Whether a frame matches; `d` is `None` when nothing could be dissected.
    #[must_use]
    pub fn matches(&self, facts: &FrameFacts, d: Option<&Dissected<'_>>) -> bool {
        self.matches_marked(facts, Marks::default(), d)
    }

    /// [`matches`](Self::matches) for a frame with these replay marks.
    #[must_use]
    pub fn matches_marked(
        &self,
        facts: &FrameFacts,
        marks: Marks,
        d: Option<&Dissected<'_>>,
    ) -> bool {
        let mut hits = 0u64;
        for (i, atom) in self.atoms.iter().enumerate() {
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
        if self.needs_tree {
            if let Some(d) = d {
                let mut eval = Eval {
                    filter: self,
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
        }
        eval_node(&self.root, hits)
    }
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
        (Lit::Mac(m), Value::Mac(a)) => a.as_bytes() == m,
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

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn columns() {
        let e = Filter::compile("ip.src == ").unwrap_err();
        assert_eq!(e.column, 11, "{e}");
        let e = Filter::compile("psn == 1 )").unwrap_err();
        assert_eq!(e.column, 10, "{e}");
        let e = Filter::compile("bogus.field").unwrap_err();
        assert_eq!(e.column, 1, "{e}");
    }
}
