//! Text the commands print: error messages kept to one line.

/// `text` on one line: control characters (a newline in a file name or a quoted filter value)
/// escaped as Rust writes them (`\n`), everything else kept.
#[must_use]
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}
