use super::*;

fn v(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

#[test]
fn a_file_is_the_module_it_declares() {
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_of(Path::new("csv.rs")), v(&["csv"]));
    assert_eq!(module_of(Path::new("csv/mod.rs")), v(&["csv"]));
    assert_eq!(
        module_of(Path::new("csv/served/install.rs")),
        v(&["csv", "served", "install"])
    );
}

#[test]
fn paths_are_read_from_the_crate_root_through_braces_super_and_self() {
    let module = v(&["csv", "effects"]);
    let text = "use crate::{a::{x, y}, b};\n// crate::c\nfn f() { crate::d::g(); $crate::e; super::served::h(); self::inner::k(); }\nuse super::super::top::T;";
    let mut paths = named_paths(text, &module);
    paths.sort();
    assert_eq!(
        paths,
        vec![
            v(&["a", "x"]),
            v(&["a", "y"]),
            v(&["b"]),
            v(&["csv", "effects", "inner", "k"]),
            v(&["csv", "served", "h"]),
            v(&["d", "g"]),
            v(&["top", "T"]),
        ]
    );
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join("src").join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn a_circle_between_siblings_is_found_at_any_level_and_test_code_does_not_count() {
    let root = std::env::temp_dir().join(format!("olm-rs-import-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write(&root, "lib.rs", "pub mod csv;\npub mod other;\n");
    write(&root, "other.rs", "pub fn f() {}\n");
    write(
        &root,
        "csv/mod.rs",
        "pub mod a;\npub mod b;\npub fn shared() {}\nuse a::A;\n",
    );
    write(
        &root,
        "csv/a.rs",
        "use super::b::B;\nuse super::shared;\npub struct A;\n",
    );
    write(
        &root,
        "csv/b.rs",
        "pub struct B;\nuse crate::other::f;\n#[cfg(test)]\nmod tests { use crate::csv::a::A; }\n",
    );
    let graph = graph(&root);
    assert_eq!(
        circle(&graph),
        None,
        "a test's import and a parent's items make no circle: {graph:?}"
    );
    assert!(graph["csv::a"].contains_key("csv::b"));
    assert!(graph["csv"].contains_key("other"));
    write(
        &root,
        "csv/b.rs",
        "pub struct B;\nfn g() { crate::csv::a::helper(); }\n",
    );
    let graph = graph_of(&root);
    let found = circle(&graph).expect("a circle");
    assert_eq!(found.first(), found.last());
    assert!(found.contains(&"csv::a".to_string()) && found.contains(&"csv::b".to_string()));
    assert!(explain(&graph, &found).contains("csv/b.rs"));
    let _ = std::fs::remove_dir_all(&root);
}

fn graph_of(root: &Path) -> Graph {
    graph(root)
}
