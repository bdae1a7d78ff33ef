//! The module structure stays as designed (issue 10): no command module (`dissect`, `analyze`,
//! `tui` = inspect, `generate`, `send`) imports another, and the file-level import graphs of
//! `src/` and `dissectors/src/` have no cycle.
//!
//! The graph is read from the code: every `use` declaration (brace groups expanded, `crate::`,
//! `super::` and `self::` paths) and every absolute `crate::` path in the code, resolved to the
//! file of the longest module prefix, following `pub use` re-exports to the file that defines
//! the name (a re-export is an alias, not an edge of its own). Test modules at the bottom of a
//! file (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (segments below the crate root) → the file that holds it.
type Modules = BTreeMap<Vec<String>, PathBuf>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under `root` (`lib.rs` is the crate root; `main.rs` is left out).
fn module_of(root: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(root).ok()?;
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = segs.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match stem {
        "lib" if segs.is_empty() => {}
        "main" if segs.is_empty() => return None,
        "mod" => {}
        s => segs.push(s.to_owned()),
    }
    Some(segs)
}

/// The code of a file without comments, strings and its test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    stripped(text)
}

/// `text` without comments and with its string literals emptied.
fn stripped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' {
            // a string literal (raw strings hold no quotes that matter here)
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3; // a char literal such as '{'
        } else {
            out.push(char::from(b[i]));
            i += 1;
        }
    }
    out
}

/// Every path a `use` tree names, with the name it is imported as:
/// `a::{b, c::{d as e, self}}` → (`a::b`, `b`), (`a::c::d`, `e`), (`a::c`, `c`).
fn expand(tree: &str) -> Vec<(String, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), Some(a.trim())),
            None => (tree, None),
        };
        let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
        let name = alias.map_or_else(
            || path.rsplit("::").next().unwrap_or_default().to_owned(),
            str::to_owned,
        );
        return vec![(path, name)];
    };
    let prefix: String = tree[..open]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let parent = prefix.trim_end_matches("::").to_owned();
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|(path, name)| {
            if path == "self" {
                let own = parent.rsplit("::").next().unwrap_or_default().to_owned();
                (parent.clone(), if name == "self" { own } else { name })
            } else {
                (format!("{prefix}{path}"), name)
            }
        })
        .collect()
}

/// `use` trees of a file's code, with whether each is a `pub use` (a re-export).
fn use_trees(code: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = &rest[..at];
        let starts_item = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || c == ';' || c == '}' || c == '{' || c == ')');
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if starts_item {
            let public = before.trim_end().ends_with("pub") || before.trim_end().ends_with(')');
            out.push((public, after[..end].to_owned()));
        }
        rest = &after[end..];
    }
    out
}

/// A path relative to module `here` made absolute (below the crate root); `None` for paths
/// into other crates.
fn absolute(here: &[String], path: &str) -> Option<Vec<String>> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segs.first().copied() {
        Some("crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some("super") => {
            let mut b = here.to_vec();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                b.pop();
            }
            b
        }
        Some("self") => {
            segs.remove(0);
            here.to_vec()
        }
        _ => return None,
    };
    base.extend(segs.into_iter().map(str::to_owned));
    Some(base)
}

struct Graph {
    modules: Modules,
    /// Re-exports per module: name → the absolute path it stands for.
    reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    /// file → files it takes names from.
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

impl Graph {
    fn read(root: &Path) -> Graph {
        let mut files = Vec::new();
        rust_files(root, &mut files);
        let mut modules = Modules::new();
        for f in &files {
            if let Some(m) = module_of(root, f) {
                modules.insert(m, f.clone());
            }
        }
        let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut uses = Vec::new();
        for (m, f) in &modules {
            let code = code(&std::fs::read_to_string(f).unwrap());
            for (public, tree) in use_trees(&code) {
                for (p, name) in expand(&tree) {
                    let Some(abs) = absolute(m, &p) else { continue };
                    if public {
                        // an alias, not a dependency: what names it resolves to the file
                        // that defines it
                        reexports
                            .entry(m.clone())
                            .or_default()
                            .insert(name, abs.clone());
                    } else {
                        uses.push((f.clone(), m.clone(), abs));
                    }
                }
            }
            let mut rest = code.as_str();
            while let Some(at) = rest.find("crate::") {
                let tail = &rest[at..];
                let end = tail
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(tail.len());
                if let Some(abs) = absolute(m, &tail[..end]) {
                    uses.push((f.clone(), m.clone(), abs));
                }
                rest = &tail[end..];
            }
        }
        let mut g = Graph {
            modules,
            reexports,
            edges: BTreeMap::new(),
        };
        for (file, _, abs) in uses {
            if let Some(target) = g.resolve(&abs, 0)
                && target != file
            {
                g.edges.entry(file).or_default().insert(target);
            }
        }
        g
    }

    /// The file that defines what `abs` names.
    fn resolve(&self, abs: &[String], depth: usize) -> Option<PathBuf> {
        let n = (0..=abs.len())
            .rev()
            .find(|&n| self.modules.contains_key(&abs[..n]))?;
        let module = &abs[..n];
        if depth < 8
            && let Some(name) = abs.get(n)
            && let Some(to) = self.reexports.get(module).and_then(|r| r.get(name))
        {
            let mut next = to.clone();
            next.extend_from_slice(&abs[n + 1..]);
            if next != abs {
                return self.resolve(&next, depth + 1);
            }
        }
        self.modules.get(module).cloned()
    }

    /// A cycle of files, if there is one.
    fn cycle(&self) -> Option<Vec<PathBuf>> {
        fn dfs(
            g: &Graph,
            at: &PathBuf,
            state: &mut BTreeMap<PathBuf, u8>,
            stack: &mut Vec<PathBuf>,
        ) -> Option<Vec<PathBuf>> {
            state.insert(at.clone(), 1);
            stack.push(at.clone());
            for next in g.edges.get(at).into_iter().flatten() {
                match state.get(next).copied().unwrap_or(0) {
                    1 => {
                        let from = stack.iter().position(|p| p == next).unwrap_or(0);
                        let mut c = stack[from..].to_vec();
                        c.push(next.clone());
                        return Some(c);
                    }
                    0 => {
                        if let Some(c) = dfs(g, next, state, stack) {
                            return Some(c);
                        }
                    }
                    _ => {}
                }
            }
            stack.pop();
            state.insert(at.clone(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for f in self.modules.values() {
            if state.get(f).copied().unwrap_or(0) == 0
                && let Some(c) = dfs(self, f, &mut state, &mut Vec::new())
            {
                return Some(c);
            }
        }
        None
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn show(files: &[PathBuf]) -> String {
    let r = root();
    files
        .iter()
        .map(|f| f.strip_prefix(&r).unwrap_or(f).display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn src_has_no_import_cycle() {
    let g = Graph::read(&root().join("src"));
    assert!(g.edges.len() > 20, "the graph was not read: {:?}", g.edges);
    if let Some(c) = g.cycle() {
        panic!("import cycle in src/: {}", show(&c));
    }
}

#[test]
fn dissectors_have_no_import_cycle() {
    let g = Graph::read(&root().join("dissectors/src"));
    assert!(g.edges.len() > 20, "the graph was not read");
    if let Some(c) = g.cycle() {
        panic!("import cycle in dissectors/src/: {}", show(&c));
    }
}

#[test]
fn no_command_imports_another() {
    const COMMANDS: [&str; 7] = [
        "dissect", "analyze", "tui", "generate", "send", "record", "shell",
    ];
    let src = root().join("src");
    let g = Graph::read(&src);
    let command_of = |f: &Path| -> Option<&'static str> {
        let m = module_of(&src, f)?;
        COMMANDS
            .into_iter()
            .find(|c| m.first().is_some_and(|s| s == c))
    };
    let mut wrong = Vec::new();
    for (from, tos) in &g.edges {
        // the dispatch in lib.rs calls every command
        if from.ends_with("src/lib.rs") {
            continue;
        }
        for to in tos {
            if let Some(c) = command_of(to)
                && command_of(from) != Some(c)
            {
                wrong.push(show(&[from.clone(), to.clone()]));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a command's module imported from outside it: {wrong:#?}"
    );
}

/// The reader of this test finds what it must: a known edge, a re-export followed, a cycle
/// in a made-up graph.
#[test]
fn the_reader_sees_real_edges() {
    let pairs = |v: Vec<(String, String)>| -> Vec<String> {
        v.into_iter().map(|(p, n)| format!("{p} as {n}")).collect()
    };
    assert_eq!(
        pairs(expand("super::{layout::{self, Areas}, worker as w}")),
        [
            "super::layout as layout",
            "super::layout::Areas as Areas",
            "super::worker as w"
        ]
    );
    let src = root().join("src");
    let g = Graph::read(&src);
    let edge = |a: &str, b: &str| {
        g.edges
            .get(&src.join(a))
            .is_some_and(|t| t.contains(&src.join(b)))
    };
    assert!(edge("analyze.rs", "replay.rs"));
    // `tui::InspectConfig` is config's, re-exported by tui.rs
    assert!(edge("tui/app.rs", "config/inspect.rs"));
    assert!(!edge("tui/app.rs", "tui.rs"));
    assert!(edge("tui/ui.rs", "tui/app.rs") && !edge("tui/app.rs", "tui/ui.rs"));
    let mut cyclic = Graph {
        modules: Modules::new(),
        reexports: BTreeMap::new(),
        edges: BTreeMap::new(),
    };
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a")] {
        cyclic.modules.insert(vec![a.into()], PathBuf::from(a));
        cyclic
            .edges
            .entry(PathBuf::from(a))
            .or_default()
            .insert(PathBuf::from(b));
    }
    assert_eq!(cyclic.cycle().map(|c| c.len()), Some(4));
}

/// `unsafe` code lives in one module: the transmit socket of `send` (issue 13 allows one, where
/// it is measured to gain). Every other Rust file of the workspace, tests and fuzz targets
/// included, has none (the workspace lint is `deny` rather than `forbid` so that one module can
/// allow it; the library crates keep `forbid`).
#[test]
fn unsafe_code_only_in_the_transmit_socket() {
    let r = root();
    let allowed = r.join("src/live/tx_socket.rs");
    let mut files = Vec::new();
    for dir in [
        "src",
        "dissectors",
        "generator",
        "tests",
        "fuzz",
        "examples",
        "bench",
    ] {
        if r.join(dir).is_dir() {
            rust_files(&r.join(dir), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "the files were not read: {}",
        files.len()
    );
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // test modules too: the whole file without comments and strings
        let code = stripped(&text);
        let b = code.as_bytes();
        let found = code.match_indices("unsafe").any(|(at, w)| {
            let before = at.checked_sub(1).map(|i| b[i]);
            let after = b.get(at + w.len()).copied();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        });
        if found && *f != allowed {
            offenders.push(f.strip_prefix(&r).unwrap_or(f).display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe code outside src/live/tx_socket.rs: {offenders:?}"
    );
    let socket = code(&std::fs::read_to_string(&allowed).unwrap());
    assert!(
        socket.contains("unsafe {"),
        "the check no longer sees the transmit socket's unsafe blocks"
    );
    for lib in ["dissectors/src/lib.rs", "generator/src/lib.rs"] {
        let text = std::fs::read_to_string(r.join(lib)).unwrap();
        assert!(
            text.contains("#![forbid(unsafe_code)]"),
            "{lib} no longer forbids unsafe code"
        );
    }
}
