//! The field tree of the selected frame, as the detail pane shows it: a header with the frame's
//! lengths, times, link type, problem and the replay's findings on it, then every layer and
//! field of [`visit`] with the bytes it came from (the hex pane highlights them).

use std::fmt::Write as _;
use std::ops::Range;

use rocescope_dissectors::pretty::{Value, Visitor, visit};

use crate::frame::FrameView;
use crate::replay::Finding;
use crate::units::rel_time;

/// One line of the field tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    pub depth: u16,
    pub text: String,
    /// Bytes of the frame (offsets into the captured data).
    pub range: Range<usize>,
    pub group: bool,
    /// Stable name across frames, for the collapsed set.
    pub path: String,
}

/// The selected frame, decoded.
#[derive(Debug, Clone)]
pub struct FrameDetail {
    pub number: u64,
    pub bytes: Vec<u8>,
    pub nodes: Vec<TreeNode>,
}

/// The detail of frame `number` (`view`), with the replay's `findings` on it.
#[must_use]
pub fn detail(number: u64, view: &FrameView<'_>, findings: &[Finding]) -> FrameDetail {
    let mut b = TreeBuilder {
        nodes: Vec::new(),
        depth: 1,
        paths: vec!["frame".to_owned()],
    };
    let f = &view.frame;
    b.nodes.push(TreeNode {
        depth: 0,
        text: format!(
            "Frame {}: {} bytes on wire, {} bytes captured",
            f.number, f.orig_len, f.caplen
        ),
        range: 0..f.data.len(),
        group: true,
        path: "frame".into(),
    });
    let mut t = String::new();
    let _ = rel_time(&mut t, view.rel_ns);
    b.leaf(
        format!("Arrival time: {} ns since the epoch", f.time_ns),
        0..0,
    );
    b.leaf(format!("Time since first frame: {t} s"), 0..0);
    b.leaf(format!("Link type: {}", f.link), 0..0);
    if let Some(p) = view.problem {
        let tag = if view.truncated {
            "[TRUNCATED] "
        } else if view.malformed {
            "[MALFORMED] "
        } else {
            ""
        };
        b.leaf(format!("Problem: {tag}{p}"), 0..0);
    }
    for finding in findings {
        let mut s = format!("Analysis: {}", finding.kind);
        let d = finding.detail.to_string();
        if !d.is_empty() {
            let _ = write!(s, ": {d}");
        }
        b.leaf(s, 0..0);
    }
    b.depth = 0;
    b.paths.clear();
    if let Some(d) = &view.dissected {
        visit(d, &mut b);
    }
    FrameDetail {
        number,
        bytes: f.data.to_vec(),
        nodes: b.nodes,
    }
}

/// Collects the field tree of [`visit`] as lines.
struct TreeBuilder {
    nodes: Vec<TreeNode>,
    depth: u16,
    paths: Vec<String>,
}

impl TreeBuilder {
    fn leaf(&mut self, text: String, range: Range<usize>) {
        self.nodes.push(TreeNode {
            depth: self.depth,
            text,
            range,
            group: false,
            path: String::new(),
        });
    }

    fn open(&mut self, key: &str, title: &str, range: Range<usize>) {
        let parent = self.paths.last().map_or("", String::as_str);
        let name = if key.is_empty() {
            // List items: numbered by position among their siblings.
            let n = self
                .nodes
                .iter()
                .rev()
                .take_while(|n| n.depth >= self.depth)
                .filter(|n| n.depth == self.depth && n.group)
                .count();
            n.to_string()
        } else {
            key.to_owned()
        };
        let path = format!("{parent}/{name}");
        let text = if key.is_empty() {
            title.to_owned()
        } else {
            format!("{title} ({key})")
        };
        self.nodes.push(TreeNode {
            depth: self.depth,
            text,
            range,
            group: true,
            path: path.clone(),
        });
        self.paths.push(path);
        self.depth += 1;
    }

    fn close(&mut self) {
        self.paths.pop();
        self.depth = self.depth.saturating_sub(1);
    }
}

impl Visitor for TreeBuilder {
    fn begin(&mut self, key: &'static str, title: &'static str, range: Range<usize>) {
        self.open(key, title, range);
    }
    fn end(&mut self) {
        self.close();
    }
    fn begin_list(&mut self, key: &'static str, title: &'static str, range: Range<usize>) {
        self.open(key, title, range);
    }
    fn end_list(&mut self) {
        self.close();
    }
    fn field(
        &mut self,
        key: &'static str,
        label: &'static str,
        value: Value<'_>,
        range: Range<usize>,
    ) {
        let _ = key;
        self.leaf(format!("{label}: {value}"), range);
    }
}
