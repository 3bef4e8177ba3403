//! TEST ONLY: the import graph of a binary's top-level modules must have no circle. Every `crate::<module>`
//! path in `src/**/*.rs` (in `use` lines and inline, braces expanded, comments left out) is an edge from the
//! top-level module of the file to `<module>`; a circle is reported with a file of each edge. Used by both
//! operators' tests, each crate checking its own `CARGO_MANIFEST_DIR`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `from → to → files naming the edge`.
pub type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The top-level modules under `src` (files and folders, but `lib.rs` and `main.rs`).
fn top_modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("read src").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            out.insert(stem.to_string());
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without `//` comments (doc comments included) and `/* */` blocks.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |n| &tail[n..]);
        } else if tail.starts_with("/*") {
            rest = tail.find("*/").map_or("", |n| &tail[n + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The first path segment of each item of a `use` group `{a, b::c, d::{e, f}}` (`text` after the `{`).
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item = String::new();
    for c in text.chars() {
        match c {
            '{' => {
                depth += 1;
                item.push(c);
            }
            '}' if depth == 0 => break,
            '}' => {
                depth -= 1;
                item.push(c);
            }
            ',' if depth == 0 => heads.push(std::mem::take(&mut item)),
            _ => item.push(c),
        }
    }
    heads.push(item);
    heads
        .iter()
        .map(|i| {
            i.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .collect()
}

/// The modules a source text names through `crate::`, or through `super::` repeated `depth` times (the
/// file's depth below the crate root: 1 for `src/a.rs` and `src/a/mod.rs`, 2 for `src/a/b.rs`).
pub fn named_modules(text: &str, depth: usize) -> BTreeSet<String> {
    let text = without_comments(text);
    let mut out = BTreeSet::new();
    let root = "super::".repeat(depth);
    let mut starts: Vec<(usize, usize)> = text
        .match_indices("crate::")
        .map(|(i, m)| (i, m.len()))
        .collect();
    if depth > 0 {
        starts.extend(text.match_indices(root.as_str()).map(|(i, m)| (i, m.len())));
    }
    for (i, len) in starts {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue; // `$crate::`, `my_crate::`, a longer `super::` chain
        }
        let after = &text[i + len..];
        if after.starts_with("super::") {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            out.extend(group_heads(group));
        } else {
            let head: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !head.is_empty() {
                out.insert(head);
            }
        }
    }
    out
}

/// The graph of the top-level modules of the crate at `manifest_dir`.
pub fn graph(manifest_dir: &Path) -> Graph {
    let src = manifest_dir.join("src");
    let tops = top_modules(&src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .unwrap_or_default();
        let from = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        if !tops.contains(&from) {
            continue; // lib.rs, main.rs
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let parts = rel.components().count();
        let depth = if rel.file_name().is_some_and(|n| n == "mod.rs") {
            parts - 1
        } else {
            parts
        };
        for to in named_modules(&text, depth) {
            if to != from && tops.contains(&to) {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    graph
}

/// A circle of the graph, as the modules along it (the first repeated at the end), if there is one.
pub fn circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|n| n == node).unwrap_or(0);
                let mut circle = path[start..].to_vec();
                circle.push(node.to_string());
                return Some(circle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|m| m.keys()) {
            if let Some(found) = visit(next, graph, marks, path) {
                return Some(found);
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if let Some(found) = visit(node, graph, &mut marks, &mut Vec::new()) {
            return Some(found);
        }
    }
    None
}

/// The circle with a file naming each of its edges, for the failure message.
pub fn explain(graph: &Graph, circle: &[String]) -> String {
    circle
        .windows(2)
        .map(|w| {
            let files = graph
                .get(&w[0])
                .and_then(|m| m.get(&w[1]))
                .map(|f| f.iter().take(3).cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            format!("{} -> {} ({files})", w[0], w[1])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fail with the circle if the crate at `manifest_dir` has one.
pub fn assert_acyclic(manifest_dir: &Path) {
    let graph = graph(manifest_dir);
    assert!(
        !graph.is_empty(),
        "no module imports found: wrong directory?"
    );
    if let Some(circle) = circle(&graph) {
        panic!(
            "import circle between top-level modules:\n{}",
            explain(&graph, &circle)
        );
    }
}

#[test]
fn a_circle_is_found_and_braces_and_comments_are_read() {
    let text = "use crate::{a::{x, y}, b};\n// crate::c\nfn f() { crate::d::g(); $crate::e; super::f::h(); }";
    let names: Vec<String> = named_modules(text, 2).into_iter().collect();
    assert_eq!(
        names,
        ["a", "b", "d"],
        "super::f is inside the file's own top-level module"
    );
    let names: Vec<String> = named_modules("use super::super::f;\nuse super::g;", 2)
        .into_iter()
        .collect();
    assert_eq!(names, ["f"], "two supers from depth 2 reach the crate root");
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(from.to_string())
            .or_default()
            .entry(to.to_string())
            .or_default()
            .insert(format!("{from}.rs"));
    }
    assert_eq!(
        circle(&graph),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
    graph.get_mut("c").map(|m| m.remove("a"));
    assert_eq!(circle(&graph), None);
}
