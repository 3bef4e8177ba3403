//! TEST ONLY: the modules of a crate import each other without circles, at every level. Sibling modules (the
//! children of one module, e.g. `csv::effects` and `csv::served`) are the nodes; an edge `a -> b` is a file under
//! `a` naming a path under `b` (`crate::…`, `self::…`, `super::…` chains, `use` braces expanded, comments left
//! out). A parent and its children are not siblings, so `super::Item` in a child and `child::Item` in its parent
//! never make a circle. Test code is left out: files named `tests.rs` and everything after a file's first
//! `#[cfg(test)]`. Used by the workspace's crate-graph test on every crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `from → to → files naming the edge`, nodes named by their module path (`csv::effects`; a top-level module
/// is its name).
pub type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

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

/// The module path of a file under `src` (`a/b.rs` and `a/b/mod.rs` are `["a", "b"]`; `lib.rs` and `main.rs`
/// are the crate root).
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
        let root = parts.is_empty() && (stem == "lib" || stem == "main");
        if stem != "mod" && !root {
            parts.push(stem);
        }
    }
    parts
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifiers of `a::b::c` at the start of `text`, and what follows them.
fn segments(text: &str) -> (Vec<String>, &str) {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            return (out, rest);
        }
        rest = &rest[ident.len()..];
        out.push(ident);
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| is_ident(c)) => rest = r,
            Some(r) => return (out, r),
            None => return (out, rest),
        }
    }
}

/// The items of a `use` group `{a, b::c, d::{e, f}}` (`text` after the `{`), each as its segments, nested groups
/// expanded.
fn group_items(text: &str) -> Vec<Vec<String>> {
    let mut items = Vec::new();
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
            ',' if depth == 0 => items.push(std::mem::take(&mut item)),
            _ => item.push(c),
        }
    }
    items.push(item);
    let mut out = Vec::new();
    for item in &items {
        let (segs, rest) = segments(item.trim());
        match rest.strip_prefix('{') {
            Some(inner) => {
                for tail in group_items(inner) {
                    out.push([segs.clone(), tail].concat());
                }
            }
            None if !segs.is_empty() => out.push(segs),
            None => {}
        }
    }
    out
}

/// The module paths (from the crate root, items included) a source text of module `module` names.
pub fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let text = without_comments(text);
    let mut out = Vec::new();
    for keyword in ["crate::", "self::", "super::"] {
        for (i, _) in text.match_indices(keyword) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
                continue; // `$crate::`, `my_crate::`, the inner links of a `super::super::` chain
            }
            let mut rest = &text[i + keyword.len()..];
            let base: Vec<String> = match keyword {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => {
                    let mut up = 1;
                    while let Some(r) = rest.strip_prefix("super::") {
                        up += 1;
                        rest = r;
                    }
                    match module.len().checked_sub(up) {
                        Some(keep) => module[..keep].to_vec(),
                        None => continue,
                    }
                }
            };
            let (segs, after) = segments(rest);
            match after.strip_prefix('{') {
                Some(group) if !after.is_empty() => {
                    for item in group_items(group) {
                        out.push([base.clone(), segs.clone(), item].concat());
                    }
                }
                _ if !segs.is_empty() => out.push([base, segs].concat()),
                _ => {}
            }
        }
    }
    out
}

/// The sibling graph of the crate at `manifest_dir`.
pub fn graph(manifest_dir: &Path) -> Graph {
    let src = manifest_dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for file in &files {
        let module = module_of(file.strip_prefix(&src).expect("under src"));
        for n in 0..=module.len() {
            modules.insert(module[..n].to_vec());
        }
    }
    let mut graph = Graph::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel.file_name().is_some_and(|n| n == "tests.rs")
            || rel.components().any(|c| c.as_os_str() == "tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let module = module_of(rel);
        for path in named_paths(code, &module) {
            let common = module.iter().zip(&path).take_while(|(a, b)| a == b).count();
            if common >= module.len() || common >= path.len() {
                continue; // the file's own module, an ancestor's items, or its own children
            }
            let parent = &module[..common];
            let target = [parent, &path[common..=common]].concat();
            if !modules.contains(&target) {
                continue; // an item of the common parent, not a sibling module
            }
            let from = [parent, &module[common..=common]].concat().join("::");
            graph
                .entry(from)
                .or_default()
                .entry(target.join("::"))
                .or_default()
                .insert(rel.display().to_string());
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
    if let Some(circle) = circle(&graph) {
        panic!(
            "import circle between sibling modules of {}:\n{}",
            manifest_dir.display(),
            explain(&graph, &circle)
        );
    }
}

#[cfg(test)]
mod tests;
