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

mod compile;
mod eval;
pub mod fields;
mod parse;

use std::fmt;

use rocescope_dissectors::stack::Dissected;

use fields::FrameField;

pub use crate::frame::FrameFacts;
use crate::replay::Kind as EventKind;

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

/// The replay-engine marks of one frame (interfaces.md §5 bare words `loss`,
/// `ooo`, `dup`, `retrans`, `not_captured`, `conformance`), from the events the replay
/// reported at that frame.
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
    /// An acknowledgement (or a gap) that showed PSNs delivered but never captured.
    pub const NOT_CAPTURED: Marks = Marks(16);
    /// A frame where a NIC broke an RC rule (interfaces.md §6.7).
    pub const CONFORMANCE: Marks = Marks(32);

    /// The mark a replay event puts on its frame.
    #[must_use]
    pub fn of_kind(kind: EventKind) -> Marks {
        match kind {
            EventKind::PsnGap
            | EventKind::ReadResponseGap
            | EventKind::UnansweredRead
            | EventKind::TcpBthGap => Marks::LOSS,
            EventKind::OutOfOrder | EventKind::TcpBthOutOfOrder => Marks::OOO,
            EventKind::Duplicate | EventKind::TcpBthDuplicate => Marks::DUP,
            EventKind::Retransmission
            | EventKind::ImpliedTimeout
            | EventKind::TcpBthRetransmission => Marks::RETRANS,
            EventKind::NotCaptured => Marks::NOT_CAPTURED,
            k if k.is_conformance() => Marks::CONFORMANCE,
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

    /// Every mark with its bare word, in the order interfaces.md §5 lists them.
    pub const NAMED: [(Marks, &'static str); 6] = [
        (Marks::LOSS, "loss"),
        (Marks::OOO, "ooo"),
        (Marks::DUP, "dup"),
        (Marks::RETRANS, "retrans"),
        (Marks::NOT_CAPTURED, "not_captured"),
        (Marks::CONFORMANCE, "conformance"),
    ];

    /// The mark a bare word names.
    #[must_use]
    pub fn from_name(word: &str) -> Option<Marks> {
        Marks::NAMED
            .into_iter()
            .find(|&(_, name)| name == word)
            .map(|(m, _)| m)
    }

    /// The bare words of the marks set, in [`Marks::NAMED`]'s order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Marks::NAMED
            .into_iter()
            .filter(move |&(m, _)| self.contains(m))
            .map(|(_, name)| name)
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
        // One line whatever the filter holds: the message quotes parts of it (the inspector's
        // filter bar shows it too, not only stderr).
        write!(
            f,
            "display filter {:?}: column {}: {}",
            self.filter,
            self.column,
            crate::text::one_line(&self.message)
        )
    }
}

impl std::error::Error for FilterError {}

// ---------------------------------------------------------------------------------------------
// the compiled form, which compile.rs builds and eval.rs runs

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
    /// Compare the value with its bytes swapped, as a number of this many bytes (a field the
    /// tree reads little-endian that Wireshark reads in wire order); 0: as it is.
    swapped: u8,
}

#[derive(Debug, Clone)]
struct Atom {
    src: Src,
    test: Test,
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
        let (root, atoms) = compile::compile(text, allow_marks)?;
        let needs_tree = atoms
            .iter()
            .any(|a| matches!(a.src, Src::Paths(_) | Src::MaccOpcode));
        Ok(Filter {
            text: text.to_owned(),
            root,
            atoms,
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
        eval::matches(self, facts, marks, d)
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
