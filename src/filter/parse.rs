//! The display-filter syntax (the grammar in [`super`]'s documentation), parsed with nom into
//! an unresolved [`Ast`] whose string slices point into the filter text.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::{all_consuming, cut, not, opt, recognize};
use nom::error::{ErrorKind, ParseError};
use nom::multi::{many0, many1};
use nom::sequence::{delimited, pair, preceded, terminated};
use nom::{IResult, Parser};

use super::Op;

/// Parse the whole of `text`; on a syntax error, the slice of `text` where it is (its column is
/// the one to report) and what is wrong.
pub(super) fn parse(text: &str) -> Result<Ast<'_>, (&str, String)> {
    match all_consuming(ws(or_expr)).parse(text) {
        Ok((_, ast)) => Ok(ast),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
            let message = match e.at.chars().next() {
                None => "unexpected end of filter".to_owned(),
                Some(c) => format!("syntax error at `{c}`"),
            };
            Err((e.at, message))
        }
        Err(nom::Err::Incomplete(_)) => {
            Err((&text[text.len()..], "unexpected end of filter".into()))
        }
    }
}

/// A parsed, unresolved filter; string slices point into the filter text.
#[derive(Debug)]
pub(super) enum Ast<'a> {
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
