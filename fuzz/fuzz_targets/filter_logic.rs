//! Generated well-formed display filters against a reference evaluator (issue 15).
//!
//! An expression tree of tests (fields of every kind, every comparison, sets, bare words)
//! joined by `and`/`&&`, `or`/`||`, `not`/`!` and parentheses is printed as text (with the
//! parentheses the tree needs, or more, and any spacing), compiled, and evaluated on frames of
//! every demo capture. The reference evaluates the same tree with the boolean rules written
//! out here, taking each test's verdict from the filter compiled from that test alone, and it
//! checks the tests' own algebra: `a != v` is `!(a == v)`, `a <= v` is `a < v || a == v`,
//! `a >= v` is `a > v || a == v`, `a in {x, y}` is `a == x || a == y`.
//!
//! So the parser's precedence and associativity, the negation, the sets and the operators'
//! spellings are checked against rules nobody wrote into the filter code.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope::filter::Filter;
use rocescope::frame::FrameView;
use rocescope_dissectors::stack::DissectOptions;
use rocescope_fuzz::demo_frames;

/// Fields with values the demo captures take (and some they never do).
const UINT_FIELDS: &[&str] = &[
    "frame.len",
    "frame.number",
    "eth.type",
    "vlan.pcp",
    "ip.dsfield.ecn",
    "ip.ttl",
    "udp.dstport",
    "udp.srcport",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.padcnt",
    "infiniband.aeth.msn",
    "infiniband.reth.dmalen",
    "infiniband.lrh.dlid",
    "qp",
    "psn",
    "bth.pkey",
    "vxlan.vni",
    "mpls.label",
    "erspan.spanid",
];
const BOOL_FIELDS: &[&str] = &[
    "bth.becn",
    "infiniband.bth.a",
    "infiniband.bth.se",
    "icrc.valid",
];
const PRESENCE: &[&str] = &[
    "roce",
    "rocev1",
    "cnp",
    "pfc",
    "pause",
    "cm",
    "icrc_bad",
    "malformed",
    "truncated",
    "ce",
    "nak",
    "rnr",
    "tcp_bth",
    "reth",
    "aeth",
    "udp",
    "ip",
    "ipv6",
    "infiniband",
    "mad",
    "outer",
];
const STR_TESTS: &[&str] = &[
    "opcode == RC_SEND_ONLY",
    "opcode == RC_RDMA_WRITE_MIDDLE",
    "opcode == RC_ACKNOWLEDGE",
    "opcode == 0x81",
    "ip.src == 10.0.11.1",
    "ip.addr == 10.0.0.0/8",
    "ipv6.addr == fe80::/10",
    "eth.src == 02:00:00:00:00:01",
    "aeth.kind == nak",
    "aeth.kind == \"ack\"",
];
/// Values near those the fields take: small ones, PSN-like ones, ports.
const VALUES: &[u64] = &[
    0, 1, 2, 3, 4, 7, 64, 100, 1000, 4791, 0x11, 0x10, 0x800, 0x86dd, 0xffff,
];

#[derive(Debug, Arbitrary, Clone, Copy)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Arbitrary)]
enum Test {
    Compare {
        field: u8,
        op: Op,
        value: u8,
        raw: Option<u32>,
        hex: bool,
    },
    Set {
        field: u8,
        a: u8,
        b: u8,
        comma: bool,
    },
    Bool {
        field: u8,
        value: Option<bool>,
    },
    Presence(u8),
    Str(u8),
}

#[derive(Debug, Arbitrary)]
enum Expr {
    Test(Test),
    Not(Box<Expr>, bool),
    And(Box<Expr>, Box<Expr>, bool),
    Or(Box<Expr>, Box<Expr>, bool),
    Paren(Box<Expr>),
}

fn pick<'a>(list: &[&'a str], i: u8) -> &'a str {
    list[usize::from(i) % list.len()]
}

fn value(i: u8, raw: Option<u32>) -> u64 {
    raw.map_or(VALUES[usize::from(i) % VALUES.len()], u64::from)
}

fn num(v: u64, hex: bool) -> String {
    if hex {
        format!("0x{v:x}")
    } else {
        v.to_string()
    }
}

impl Test {
    fn text(&self) -> String {
        match self {
            Test::Compare {
                field,
                op,
                value: v,
                raw,
                hex,
            } => {
                let op = match op {
                    Op::Eq => "==",
                    Op::Ne => "!=",
                    Op::Lt => "<",
                    Op::Le => "<=",
                    Op::Gt => ">",
                    Op::Ge => ">=",
                };
                format!(
                    "{} {op} {}",
                    pick(UINT_FIELDS, *field),
                    num(value(*v, *raw), *hex)
                )
            }
            Test::Set { field, a, b, comma } => format!(
                "{} in {{{}{} {}}}",
                pick(UINT_FIELDS, *field),
                value(*a, None),
                if *comma { "," } else { "" },
                value(*b, None)
            ),
            Test::Bool { field, value } => match value {
                None => pick(BOOL_FIELDS, *field).to_owned(),
                Some(v) => format!("{} == {}", pick(BOOL_FIELDS, *field), u8::from(*v)),
            },
            Test::Presence(i) => pick(PRESENCE, *i).to_owned(),
            Test::Str(i) => pick(STR_TESTS, *i).to_owned(),
        }
    }

    /// The identities the test must satisfy, as (test, equivalent) texts.
    fn identities(&self) -> Vec<(String, String)> {
        match self {
            Test::Compare {
                field,
                op,
                value: v,
                raw,
                hex,
            } => {
                let f = pick(UINT_FIELDS, *field);
                let n = num(value(*v, *raw), *hex);
                let t = self.text();
                match op {
                    Op::Ne => vec![(t, format!("!({f} == {n})"))],
                    Op::Le => vec![(t, format!("{f} < {n} || {f} == {n}"))],
                    Op::Ge => vec![(t, format!("{f} > {n} || {f} == {n}"))],
                    _ => Vec::new(),
                }
            }
            Test::Set { field, a, b, .. } => {
                let f = pick(UINT_FIELDS, *field);
                vec![(
                    self.text(),
                    format!("{f} == {} or {f} == {}", value(*a, None), value(*b, None)),
                )]
            }
            _ => Vec::new(),
        }
    }
}

/// Printed with the parentheses precedence needs (`not` > `and` > `or`), plus the tree's own.
fn print(e: &Expr, out: &mut String, tests: &mut Vec<String>, depth: usize) {
    if depth > 24 {
        out.push_str("roce");
        tests.push("roce".into());
        return;
    }
    match e {
        Expr::Test(t) => {
            let text = t.text();
            out.push_str(&text);
            tests.push(text);
        }
        Expr::Not(inner, bang) => {
            out.push_str(if *bang { "!" } else { "not " });
            out.push('(');
            print(inner, out, tests, depth + 1);
            out.push(')');
        }
        Expr::And(a, b, sym) => {
            paren_if(a, |e| matches!(e, Expr::Or(..)), out, tests, depth);
            out.push_str(if *sym { " && " } else { " and " });
            paren_if(
                b,
                |e| matches!(e, Expr::Or(..) | Expr::And(..)),
                out,
                tests,
                depth,
            );
        }
        Expr::Or(a, b, sym) => {
            paren_if(a, |_| false, out, tests, depth);
            out.push_str(if *sym { " || " } else { " or " });
            paren_if(b, |e| matches!(e, Expr::Or(..)), out, tests, depth);
        }
        Expr::Paren(inner) => {
            out.push_str("( ");
            print(inner, out, tests, depth + 1);
            out.push_str(" )");
        }
    }
}

fn paren_if(
    e: &Expr,
    need: impl Fn(&Expr) -> bool,
    out: &mut String,
    tests: &mut Vec<String>,
    depth: usize,
) {
    if need(e) {
        out.push('(');
        print(e, out, tests, depth + 1);
        out.push(')');
    } else {
        print(e, out, tests, depth + 1);
    }
}

/// The reference: the tree's boolean value, with each test's verdict from `verdicts` in
/// printing order.
fn reference(e: &Expr, verdicts: &mut impl Iterator<Item = bool>, depth: usize) -> bool {
    if depth > 24 {
        return verdicts.next().expect("one verdict per test");
    }
    match e {
        Expr::Test(_) => verdicts.next().expect("one verdict per test"),
        Expr::Not(inner, _) => !reference(inner, verdicts, depth + 1),
        Expr::And(a, b, _) => {
            // Both sides are evaluated: verdicts are consumed in printing order.
            let x = reference(a, verdicts, depth + 1);
            let y = reference(b, verdicts, depth + 1);
            x && y
        }
        Expr::Or(a, b, _) => {
            let x = reference(a, verdicts, depth + 1);
            let y = reference(b, verdicts, depth + 1);
            x || y
        }
        Expr::Paren(inner) => reference(inner, verdicts, depth + 1),
    }
}

fn collect<'e>(e: &'e Expr, out: &mut Vec<&'e Test>, depth: usize) {
    if depth > 24 {
        return;
    }
    match e {
        Expr::Test(t) => out.push(t),
        Expr::Not(i, _) | Expr::Paren(i) => collect(i, out, depth + 1),
        Expr::And(a, b, _) | Expr::Or(a, b, _) => {
            collect(a, out, depth + 1);
            collect(b, out, depth + 1);
        }
    }
}

fuzz_target!(|expr: Expr| {
    let mut text = String::new();
    let mut tests = Vec::new();
    print(&expr, &mut text, &mut tests, 0);
    if tests.len() > rocescope::filter::MAX_TESTS {
        return;
    }
    let whole = match Filter::compile(&text) {
        Ok(f) => f,
        Err(e) => panic!("a well-formed filter does not compile: {e}"),
    };
    let singles: Vec<Filter> = tests
        .iter()
        .map(|t| {
            Filter::compile(t).unwrap_or_else(|e| panic!("a test alone does not compile: {e}"))
        })
        .collect();
    let mut leaves = Vec::new();
    collect(&expr, &mut leaves, 0);
    let identities: Vec<(Filter, Filter, String)> = leaves
        .iter()
        .flat_map(|t| t.identities())
        .map(|(a, b)| {
            let fa = Filter::compile(&a).expect("a test compiles");
            let fb =
                Filter::compile(&b).unwrap_or_else(|e| panic!("an identity does not compile: {e}"));
            (fa, fb, format!("{a}  vs  {b}"))
        })
        .collect();
    let options = DissectOptions::default();
    for (i, owned) in demo_frames().iter().enumerate() {
        let frame = owned.frame();
        let view = FrameView::new(&frame, &options, 0);
        let facts = view.facts();
        let d = view.dissected.as_ref();
        let mut verdicts = singles.iter().map(|f| f.matches(&facts, d));
        let want = reference(&expr, &mut verdicts, 0);
        assert_eq!(whole.matches(&facts, d), want, "{text:?} on demo frame {i}");
        for (a, b, what) in &identities {
            assert_eq!(
                a.matches(&facts, d),
                b.matches(&facts, d),
                "{what} on demo frame {i}"
            );
        }
    }
});
